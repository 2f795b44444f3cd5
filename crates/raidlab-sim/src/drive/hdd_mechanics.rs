//! A hard disk's mechanics at DiskSim 4's level of detail (Ganger, Worthington and
//! Patt, "The DiskSim Simulation Environment", its disk module `disksim_disk*.c` and
//! layout `disksim_diskmap.c`): a zone table of cylinders with their sectors per track
//! and track/cylinder skews, heads on several surfaces (a head switch within a
//! cylinder, a seek across cylinders), a measured seek curve, and command overheads
//! that depend on the command, whether the buffer serves it, and the command before.
//!
//! A leaf: `hdd` builds on it; it knows nothing of the drive's queue or buffer. Every
//! mechanism is off when its key is absent, and then the drive is the datasheet model
//! (`HddSpec`'s linear zones, three-point seek curve and one command overhead).

use crate::scenario::HddSpec;

/// Bits of a head position holding the surface: a position is `cylinder << HEAD_BITS |
/// surface`, so the seek distance is a shift and a difference, no division (the NCQ
/// scan weighs every queued command at every dispatch).
pub(crate) const HEAD_BITS: u32 = 8;

/// The head position of `surface` on `cylinder`.
#[inline]
pub(crate) fn position(cylinder: u64, surface: u64) -> u64 {
    debug_assert!(surface < 1 << HEAD_BITS);
    (cylinder << HEAD_BITS) | surface
}

/// The cylinder of a head position.
#[inline]
pub(crate) fn cylinder_of(position: u64) -> u64 {
    position >> HEAD_BITS
}

/// A zone: tracks of equal length over a range of cylinders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Zone {
    /// The zone's first byte on the drive.
    pub first_byte: u64,
    /// The zone's first cylinder.
    pub first_cylinder: u64,
    /// Bytes of each of its tracks.
    pub track_bytes: u64,
    /// How far (bytes of a track) a track's first sector sits past the previous
    /// track's after a head switch, and after a move to the next cylinder: the firmware
    /// lays tracks out so that a transfer crossing a track boundary finds its next
    /// sector just arriving once the head has switched (DiskSim "Skew for track
    /// switch", "Skew for cylinder switch").
    pub track_skew_bytes: u64,
    pub cylinder_skew_bytes: u64,
}

/// The layout: zones in LBA order and the drive's surfaces.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub zones: Vec<Zone>,
    /// Bytes of every zone when they are all equal (the datasheet model's linear
    /// zones: the zone of an offset is a division); 0 for a zone table (a search).
    pub zone_bytes: u64,
    pub surfaces: u64,
    /// Cylinders the head moves across.
    pub cylinders: u64,
}

impl Layout {
    /// The zone holding `offset_bytes`.
    #[inline]
    pub fn zone(&self, offset_bytes: u64) -> &Zone {
        &self.zones[self.zone_index(offset_bytes)]
    }

    /// Index in `zones` of the zone holding `offset_bytes`: zone i holds the bytes from
    /// its first byte to the next zone's, the last zone every byte from its first on.
    #[inline]
    fn zone_index(&self, offset_bytes: u64) -> usize {
        let z = match offset_bytes.checked_div(self.zone_bytes) {
            Some(z) => z as usize,
            None => self
                .zones
                .partition_point(|z| z.first_byte <= offset_bytes)
                .saturating_sub(1),
        };
        z.min(self.zones.len() - 1)
    }

    /// `locate`, and the bytes `lo..hi` around `offset_bytes` that `locate` puts under
    /// the same head position (its track, within its zone): a caller that keeps them
    /// knows the head position of a later offset in that span without a zone lookup
    /// and divisions.
    #[inline]
    pub fn locate_span(&self, offset_bytes: u64) -> ((u64, u64, u64), (u64, u64)) {
        let z = self.zone_index(offset_bytes);
        let zone = &self.zones[z];
        let within = offset_bytes - zone.first_byte;
        let tb = zone.track_bytes;
        let k = within / tb;
        let lo = zone.first_byte + k * tb;
        let zone_end = self
            .zones
            .get(z + 1)
            .map_or(u64::MAX, |next| next.first_byte);
        let hi = lo.saturating_add(tb).min(zone_end);
        (self.locate_in(zone, offset_bytes), (lo, hi))
    }

    /// (head position, byte of the track under the head where `offset_bytes` starts
    /// counting from the index mark, the zone's track bytes).
    #[inline]
    pub fn locate(&self, offset_bytes: u64) -> (u64, u64, u64) {
        self.locate_in(self.zone(offset_bytes), offset_bytes)
    }

    /// `locate` in `zone`, the zone holding `offset_bytes`.
    #[inline]
    fn locate_in(&self, zone: &Zone, offset_bytes: u64) -> (u64, u64, u64) {
        let within = offset_bytes - zone.first_byte;
        let tb = zone.track_bytes;
        let k = within / tb;
        let (cyl, surface) = if self.surfaces == 1 {
            (k, 0)
        } else {
            (k / self.surfaces, k % self.surfaces)
        };
        let mut byte = within % tb;
        if zone.track_skew_bytes | zone.cylinder_skew_bytes != 0 {
            // Every head switch before this track shifted it by a track skew and every
            // cylinder move by a cylinder skew (DiskSim's g1 layout).
            let skew = (k - cyl) * zone.track_skew_bytes + cyl * zone.cylinder_skew_bytes;
            byte = (byte + skew % tb) % tb;
        }
        (position(zone.first_cylinder + cyl, surface), byte, tb)
    }

    /// Where the track holding `offset_bytes` starts.
    pub fn track_start(&self, offset_bytes: u64) -> u64 {
        let zone = self.zone(offset_bytes);
        let within = offset_bytes - zone.first_byte;
        zone.first_byte + within - within % zone.track_bytes
    }

    /// Where the track holding `offset_bytes` ends (exclusive).
    pub fn track_end(&self, offset_bytes: u64) -> u64 {
        self.track_start(offset_bytes) + self.zone(offset_bytes).track_bytes
    }

    /// Where the cylinder holding `offset_bytes` ends (exclusive).
    pub fn cylinder_end(&self, offset_bytes: u64) -> u64 {
        let zone = self.zone(offset_bytes);
        let cylinder_bytes = zone.track_bytes * self.surfaces;
        let within = offset_bytes - zone.first_byte;
        zone.first_byte + within - within % cylinder_bytes + cylinder_bytes
    }

    /// Bytes of skew a transfer of `len_bytes` from `offset_bytes` passes over as it
    /// crosses track boundaries (the platter turns under the head while it switches):
    /// 0 without skews.
    pub fn crossing_skew_bytes(&self, offset_bytes: u64, len_bytes: u64) -> u64 {
        let zone = self.zone(offset_bytes);
        if zone.track_skew_bytes | zone.cylinder_skew_bytes == 0 || len_bytes == 0 {
            return 0;
        }
        let within = offset_bytes - zone.first_byte;
        let first = within / zone.track_bytes;
        let last = (within + len_bytes - 1) / zone.track_bytes;
        // Crossing from track k to k+1 moves to the next cylinder when k+1 starts one.
        let cylinder_moves = (last / self.surfaces).saturating_sub(first / self.surfaces);
        let switches = last - first;
        (switches - cylinder_moves) * zone.track_skew_bytes
            + cylinder_moves * zone.cylinder_skew_bytes
    }
}

/// The datasheet model's zones over its capacity (the media rate falling linearly from
/// the outer to the inner zone), one surface.
fn linear_layout(spec: &HddSpec, revolution_ns: u64) -> Layout {
    let zone_count = u64::from(spec.zones);
    let zone_bytes = spec.capacity_bytes.div_ceil(zone_count);
    let mut zones = Vec::with_capacity(spec.zones as usize);
    let mut track = 0;
    for z in 0..zone_count {
        let frac = if zone_count > 1 {
            z as f64 / (zone_count - 1) as f64
        } else {
            0.0
        };
        let rate = spec.media_rate_bytes_per_s_outer
            + frac * (spec.media_rate_bytes_per_s_inner - spec.media_rate_bytes_per_s_outer);
        let track_bytes = ((rate * revolution_ns as f64 / 1e9).round() as u64).max(512);
        zones.push(Zone {
            first_byte: z * zone_bytes,
            first_cylinder: track,
            track_bytes,
            track_skew_bytes: 0,
            cylinder_skew_bytes: 0,
        });
        track += zone_bytes.div_ceil(track_bytes);
    }
    Layout {
        zones,
        zone_bytes,
        surfaces: 1,
        cylinders: track.max(2),
    }
}

/// The zone table of `spec` (validated: the five lists have one entry per zone,
/// cylinders ascending), LBAs filling each zone's cylinders in turn.
fn table_layout(spec: &HddSpec) -> Layout {
    let m = &spec.mechanics;
    let surfaces = u64::from(m.surfaces.unwrap_or(1));
    let mut zones = Vec::with_capacity(m.zone_first_cylinder.len());
    let mut first_byte = 0;
    for (i, &first_cylinder) in m.zone_first_cylinder.iter().enumerate() {
        let cylinders = m.zone_last_cylinder[i] + 1 - first_cylinder;
        let track_bytes = m.zone_sectors_per_track[i] * 512;
        zones.push(Zone {
            first_byte,
            first_cylinder,
            track_bytes,
            track_skew_bytes: m.zone_track_skew_sectors[i] * 512,
            cylinder_skew_bytes: m.zone_cylinder_skew_sectors[i] * 512,
        });
        first_byte += cylinders * surfaces * track_bytes;
    }
    let cylinders = m.zone_last_cylinder.last().map_or(2, |&c| (c + 1).max(2));
    Layout {
        zones,
        zone_bytes: 0,
        surfaces,
        cylinders,
    }
}

/// The drive's layout: its zone table when it has one, else linear zones.
pub(crate) fn layout_of(spec: &HddSpec, revolution_ns: u64) -> Layout {
    if spec.mechanics.zone_first_cylinder.is_empty() {
        linear_layout(spec, revolution_ns)
    } else {
        table_layout(spec)
    }
}

/// What one read stream keeps in the buffer: a segment (its size, or the buffer over
/// its segments) when the buffer is segmented, else the whole buffer.
pub(crate) fn segment_bytes(spec: &HddSpec) -> u64 {
    let m = &spec.mechanics;
    match (m.cache_segment_bytes, m.cache_segments) {
        (Some(bytes), _) => bytes,
        (None, Some(n)) => spec.cache_bytes / u64::from(n.max(1)),
        (None, None) => spec.cache_bytes,
    }
}

/// A measured seek curve (DiskSim's `.seek` file: distance in cylinders -> time),
/// linear between its points, flat past its last (DiskSim's "extracted" seek type).
pub(crate) fn seek_table_ns(cylinders: &[u64], ns: &[u64], distance: u64) -> u64 {
    debug_assert!(!cylinders.is_empty() && cylinders.len() == ns.len());
    if distance == 0 {
        return 0;
    }
    let i = cylinders.partition_point(|&d| d < distance);
    if i == 0 {
        return ns[0];
    }
    if i == cylinders.len() {
        return ns[ns.len() - 1];
    }
    let (d0, d1) = (cylinders[i - 1], cylinders[i]);
    let (t0, t1) = (ns[i - 1] as f64, ns[i] as f64);
    let frac = (distance - d0) as f64 / (d1 - d0) as f64;
    (t0 + frac * (t1 - t0)).round() as u64
}

/// The command overheads (DiskSim's "Read hit over. after read" ... "Write miss over.
/// after write"), indexed by [`Overheads::index`]; all the datasheet's one figure when
/// the drive gives none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Overheads {
    ns: [u64; 8],
    /// All eight equal (the datasheet model): worked out once, asked per command.
    uniform: bool,
}

impl Overheads {
    pub fn of(spec: &HddSpec) -> Self {
        let m = &spec.mechanics;
        let one = spec.command_overhead_ns;
        let given = [
            m.overhead_ns_read_hit_after_read,
            m.overhead_ns_read_hit_after_write,
            m.overhead_ns_read_miss_after_read,
            m.overhead_ns_read_miss_after_write,
            m.overhead_ns_write_hit_after_read,
            m.overhead_ns_write_hit_after_write,
            m.overhead_ns_write_miss_after_read,
            m.overhead_ns_write_miss_after_write,
        ];
        let ns = given.map(|g| g.unwrap_or(one));
        Self {
            ns,
            uniform: ns.iter().all(|&n| n == ns[0]),
        }
    }

    /// The overhead of a command: a write or a read, served by the buffer (a read hit;
    /// a write the write cache takes) or by the platter, after a write or a read.
    #[inline]
    pub fn ns(&self, write: bool, hit: bool, after_write: bool) -> u64 {
        let index = (usize::from(write) << 2) | (usize::from(!hit) << 1) | usize::from(after_write);
        self.ns[index]
    }

    /// Whether every case costs the same (the datasheet model).
    #[inline]
    pub fn uniform(&self) -> bool {
        self.uniform
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seek_table_interpolates_between_its_points_and_is_flat_past_them() {
        let d = [1, 10, 100];
        let t = [1_000_000, 2_000_000, 11_000_000];
        assert_eq!(seek_table_ns(&d, &t, 0), 0);
        assert_eq!(seek_table_ns(&d, &t, 1), 1_000_000);
        assert_eq!(seek_table_ns(&d, &t, 10), 2_000_000);
        assert_eq!(seek_table_ns(&d, &t, 55), 6_500_000);
        assert_eq!(seek_table_ns(&d, &t, 5000), 11_000_000);
    }

    fn skewed() -> Layout {
        Layout {
            zones: vec![Zone {
                first_byte: 0,
                first_cylinder: 0,
                track_bytes: 100 * 512,
                track_skew_bytes: 10 * 512,
                cylinder_skew_bytes: 30 * 512,
            }],
            zone_bytes: 0,
            surfaces: 2,
            cylinders: 100,
        }
    }

    #[test]
    fn skews_shift_each_track_by_its_switches_and_moves() {
        let l = skewed();
        let t = 100 * 512;
        // Track 0: cylinder 0 surface 0, no shift; track 1: one head switch (10);
        // track 2: cylinder 1 after one switch and one move (10 + 30); track 3: 50.
        assert_eq!(l.locate(0), (position(0, 0), 0, t));
        assert_eq!(l.locate(t), (position(0, 1), 10 * 512, t));
        assert_eq!(l.locate(2 * t + 512), (position(1, 0), 41 * 512, t));
        assert_eq!(l.locate(3 * t).0, position(1, 1));
        assert_eq!(l.locate(3 * t).1, 50 * 512);
    }

    /// Every byte of a span `locate_span` gives has the head position of the byte it
    /// was asked for, and the bytes just outside it another: for the datasheet model's
    /// linear zones (whose zones need not end on a track boundary) and a zone table.
    #[test]
    fn a_span_holds_exactly_the_bytes_of_one_head_position() {
        let mut spec = crate::scenario::HddSpec::example();
        spec.capacity_bytes = 1_000_000_007 * 512;
        let mut two_zones = skewed();
        two_zones.zones.push(Zone {
            first_byte: 7 * 100 * 512,
            first_cylinder: 4,
            track_bytes: 77 * 512,
            track_skew_bytes: 0,
            cylinder_skew_bytes: 0,
        });
        let mut rng = crate::rng::Rng::new(3);
        for l in [layout_of(&spec, 8_333_333), skewed(), two_zones] {
            let zone_starts: Vec<u64> = l.zones.iter().map(|z| z.first_byte).collect();
            let end = (zone_starts[zone_starts.len() - 1] * 2).max(1 << 30);
            let mut offsets: Vec<u64> = (0..2000).map(|_| rng.below(end)).collect();
            offsets.extend(
                zone_starts
                    .iter()
                    .flat_map(|&b| [b, b.saturating_sub(1), b + 1]),
            );
            for offset in offsets {
                let (located, (lo, hi)) = l.locate_span(offset);
                assert_eq!(located, l.locate(offset), "at {offset}");
                assert!(lo <= offset && offset < hi, "{lo} <= {offset} < {hi}");
                let position = located.0;
                for b in [lo, hi - 1, lo + (hi - lo) / 2] {
                    assert_eq!(l.locate(b).0, position, "{b} in {lo}..{hi}");
                }
                if lo > 0 {
                    assert_ne!(l.locate(lo - 1).0, position, "{lo} starts a span");
                }
                if hi < u64::MAX {
                    assert_ne!(l.locate(hi).0, position, "{hi} ends a span");
                }
            }
        }
    }

    #[test]
    fn a_transfer_pays_the_skew_of_each_boundary_it_crosses() {
        let l = skewed();
        let t = 100 * 512;
        assert_eq!(l.crossing_skew_bytes(0, t), 0);
        assert_eq!(l.crossing_skew_bytes(t - 512, 1024), 10 * 512);
        assert_eq!(l.crossing_skew_bytes(2 * t - 512, 1024), 30 * 512);
        // Three tracks: a head switch (0 to 1), then a cylinder move (1 to 2).
        assert_eq!(l.crossing_skew_bytes(0, 3 * t), 10 * 512 + 30 * 512);
    }

    #[test]
    fn overheads_pick_the_command_its_hit_and_what_came_before() {
        let mut spec = crate::scenario::HddSpec::example();
        spec.command_overhead_ns = 7;
        spec.mechanics.overhead_ns_read_hit_after_write = Some(1);
        spec.mechanics.overhead_ns_write_miss_after_read = Some(2);
        let o = Overheads::of(&spec);
        assert_eq!(o.ns(false, true, true), 1);
        assert_eq!(o.ns(true, false, false), 2);
        assert_eq!(o.ns(false, false, false), 7);
        assert!(!o.uniform());
    }
}
