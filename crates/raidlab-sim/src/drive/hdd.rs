//! Hard disk: zoned platters spinning at a fixed rate, a head that seeks along a
//! datasheet seek curve, a per-command firmware overhead, a buffer that reads ahead of
//! sequential streams, an optional write cache, and NCQ (shortest positioning time
//! first among queued commands).
//!
//! The platter's angle is tracked through time: the angle at time t is
//! `t mod revolution`, and a sector's angle is its position on its track. So the
//! rotational wait of every access follows from where the platter really is, and a
//! write that arrives just after its sector passed waits almost a whole revolution,
//! which is what a drive with its write cache off does on back-to-back small writes.

use super::hdd_mechanics::{self as mech, Layout, Overheads};
use crate::resource::{ps_per_byte, transfer_ns, Server};
use crate::scenario::{HddSpec, ReadAheadScheme};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hint::select_unpredictable;
use std::rc::Rc;

/// A queued command.
#[derive(Debug, Clone, Copy)]
struct Command {
    op: u32,
    offset_bytes: u64,
    len_bytes: u64,
    write: bool,
    ready_ns: u64,
    /// A write whose data the buffer cannot take yet (write cache off): not ready
    /// until a write ahead of it reaches the platter and frees room.
    awaiting_buffer: bool,
    /// Where its first sector is (`Hdd::locate`), worked out once at submission: NCQ
    /// weighs every queued command at every dispatch, and the zone lookup and the
    /// divisions by the track length would otherwise be redone each time.
    track: u64,
    angle_ns: u64,
    /// The length of the tracks of its zone (`Hdd::locate`): its media time without a
    /// zone lookup (a division).
    track_bytes: u64,
    /// Where the bytes from `offset_bytes` on under the same head position end
    /// (`Layout::locate_span`): the head ends on `track` after a command that ends
    /// before, without locating its end.
    track_end: u64,
    /// `ready_ns`, or `u64::MAX` for a command the mechanism does not position for
    /// now (a write the cache takes, or one awaiting buffer room): NCQ's scan weighs a
    /// command on its fast path (`Hdd::shortest_positioning_first`) when this is at or
    /// before the time the mechanism frees, one comparison instead of three tests.
    gate_ns: u64,
}

/// A write the drive's cache holds and the platter does not have yet.
#[derive(Debug, Clone, Copy)]
struct DirtyWrite {
    offset_bytes: u64,
    len_bytes: u64,
    /// When its data was in the buffer: it cannot reach the platter before.
    ready_ns: u64,
    track: u64,
    angle_ns: u64,
}

/// Seek distances whose times a drive remembers (16 MiB of table at most; a 250 GB
/// drive has about 300,000 tracks).
const SEEK_MEMO_DISTANCES_MAX: u64 = 1 << 22;

/// A seek curve, `seek(d) = t2t + b*sqrt(d-1) + c*(d-1)` across d tracks, and the time
/// of each distance once worked out.
#[derive(Debug, Clone)]
struct SeekCurve {
    t2t_ns: f64,
    sqrt_coef: f64,
    linear_coef: f64,
    /// A measured curve (distances in cylinders, times), used instead of the formula
    /// when the drive has one (`hdd_mechanics::seek_table_ns`).
    table: Option<Rc<(Vec<u64>, Vec<u64>)>>,
    /// `seek_ns + 1` by distance, 0 until computed. NCQ weighs every queued command at
    /// every dispatch, and a square root with its float conversions per command was
    /// most of an HDD simulation's time. A value depends on the distance alone, so a
    /// remembered one is the computed one bit for bit, and drives of one model share
    /// the table (a cloned drive shares it): an array fills one. It starts zeroed, so
    /// the pages of distances never reached are never touched.
    memo: Rc<RefCell<Vec<u32>>>,
}

impl SeekCurve {
    fn compute_ns(&self, distance: u64) -> u64 {
        if distance == 0 {
            return 0;
        }
        if let Some(table) = &self.table {
            return mech::seek_table_ns(&table.0, &table.1, distance);
        }
        let x = (distance - 1) as f64;
        let t = self.t2t_ns + self.sqrt_coef * x.sqrt() + self.linear_coef * x;
        t.max(self.t2t_ns) as u64
    }

    /// Seek time across `distance` tracks, from `memo` (this curve's table, borrowed
    /// once by the caller for all the commands it weighs).
    #[inline]
    fn ns(&self, memo: &mut [u32], distance: u64) -> u64 {
        let Some(slot) = memo.get_mut(distance as usize) else {
            return self.compute_ns(distance);
        };
        if *slot != 0 {
            return u64::from(*slot - 1);
        }
        let ns = self.compute_ns(distance);
        // A seek of 4 s or more (none on any drive) is recomputed each time.
        if let Ok(stored) = u32::try_from(ns + 1) {
            *slot = stored;
        }
        ns
    }
}

/// One hard disk: its zones and seek curve (from its spec), where the head and the
/// platter are, the commands it has queued (NCQ picks the shortest positioning time),
/// its read-ahead buffer and write cache, and its busy time. Times are simulated ns.
///
/// A clone is a second drive of the same model in the same state; the two share their
/// table of seek times (`SeekCurve`), which is how an array's drives are built.
#[derive(Debug, Clone)]
pub struct Hdd {
    /// Zones, surfaces and skews (`hdd_mechanics`).
    layout: Layout,
    /// Cylinders.
    tracks: u64,
    revolution_ns: u64,
    seek: SeekCurve,
    /// Firmware time per command, by command, buffer hit and the command before.
    overheads: Overheads,
    /// The last command submitted was a write (DiskSim's "after write" overheads).
    last_write: bool,
    /// Switching surfaces within a cylinder; settling before a write.
    head_switch_ns: u64,
    write_settle_ns: u64,
    link_ps: u64,
    read_ahead_bytes: u64,
    cache_bytes: u64,
    /// What one read stream keeps of its data: a segment of a segmented buffer, else
    /// the whole buffer.
    stream_bytes: u64,
    /// Data earlier streams and writes left in the other segments (oldest first), as
    /// (first byte, end): reads they hold are served from the buffer.
    segments: VecDeque<(u64, u64)>,
    /// Segments besides the current stream's (0: the buffer holds one stream).
    segments_max: usize,
    /// DiskSim's prefetch ("Buffer continuous read"; None: `read_ahead_bytes` past every
    /// read), whether the request's own data stays in its segment ("Read-ahead over
    /// requested" = 0), and the drive's end.
    read_ahead_scheme: Option<ReadAheadScheme>,
    read_ahead_keeps_request: bool,
    /// Written data stays readable in a segment (DiskSim's "Allow read hits on
    /// write data"): a segmented buffer keeps each write's data, cached ones too.
    read_hits_on_write_data: bool,
    capacity_bytes: u64,
    write_cache: bool,
    /// Write data (write cache off) the buffer holds until it is on the platter.
    write_buffer_bytes: u64,
    /// Data of accepted writes not yet on the platter.
    buffered_write_bytes: u64,
    /// Writes waiting for buffer room.
    awaiting_buffer: u32,
    /// The write being served: its bytes, freed when its media write ends.
    writing: Option<(u64, u64)>,
    /// Write cache on: acknowledged writes not yet on the platter (contiguous ones
    /// joined into one segment), oldest first, their bytes, and how many segments the
    /// drive keeps at most (its reordering window).
    dirty: Vec<DirtyWrite>,
    dirty_bytes: u64,
    dirty_writes_max: usize,
    /// Cached writes on their way to the platter: (when written, bytes), in the order
    /// the mechanism writes them. Their room in the cache frees when they are written.
    destaging: VecDeque<(u64, u64)>,
    destaging_bytes: u64,
    queue: Vec<Command>,
    busy: bool,
    /// When the mechanism finishes what it has been given.
    mechanism: Server,
    /// The firmware processor: decodes commands serially.
    firmware: Server,
    /// The host link: one transfer at a time, in either direction.
    link: Server,
    head_track: u64,
    /// Read-ahead stream: the media passes `base_offset` at `base_ns` and keeps
    /// reading up to `limit_offset` (exclusive) unless another command interrupts.
    ra_active: bool,
    ra_base_offset: u64,
    /// The track length of `ra_base_offset`'s zone, found when the stream starts.
    ra_track_bytes: u64,
    /// Where the bytes from `ra_base_offset` on under one head position end, and that
    /// position (`Command::track_end`): the head follows the stream, and while the
    /// stream is on that track its position needs no zone lookup and divisions
    /// (`head_at`).
    ra_track_end: u64,
    ra_track: u64,
    ra_base_ns: u64,
    ra_limit_offset: u64,
    ra_hits: u64,
    /// Where this drive's platter is when the run starts, as ns past the index mark:
    /// members of an array whose spindles are not synchronised each have their own.
    spindle_phase_ns: u64,
}

/// The outcome of starting a command: which member op completes when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Member operation id.
    pub op: u32,
    /// When its data transfer on the link began (reads: when the host path may start).
    pub link_start_ns: u64,
    /// When it completes.
    pub done_ns: u64,
}

/// What every command weighed at one dispatch starts from: the mechanism frees at
/// `mech_t0` with the head at `head_t0` and the platter at `angle_t0`; `ra` is the
/// read-ahead window (`Hdd::ra_window`).
struct Scan {
    mech_t0: u64,
    head_t0: u64,
    angle_t0: u64,
    ra: (u64, u64),
}

/// Bits of the queue index in the NCQ scan's key (`Hdd::shortest_positioning_first`),
/// and the positioning times the rest of the key holds.
const KEY_INDEX_BITS: u32 = 16;
const KEY_POSITIONING_LIMIT: u64 = 1 << (64 - KEY_INDEX_BITS);

/// Rotational accesses arriving this late after their sector count as on time: the
/// firmware starts a transfer at any sector boundary it reaches.
const ON_TIME_SLACK_NS: u64 = 2_000;

impl SeekCurve {
    /// seek(d) = t2t + b*sqrt(d-1) + c*(d-1), through average at a third of the stroke
    /// and full stroke at all of it, over `tracks`.
    fn new(spec: &HddSpec, tracks: u64) -> Self {
        let t2t = spec.seek_ns_track_to_track as f64;
        let x1 = (tracks as f64 / 3.0 - 1.0).max(1.0);
        let x2 = (tracks as f64 - 1.0).max(2.0);
        let y1 = spec.seek_ns_avg as f64 - t2t;
        let y2 = spec.seek_ns_full_stroke as f64 - t2t;
        let det = x1.sqrt() * x2 - x2.sqrt() * x1;
        let (b, c) = if det.abs() > f64::EPSILON {
            (
                (y1 * x2 - y2 * x1) / det,
                (x1.sqrt() * y2 - x2.sqrt() * y1) / det,
            )
        } else {
            (0.0, y2 / x2)
        };
        SeekCurve {
            t2t_ns: t2t,
            sqrt_coef: b,
            linear_coef: c,
            table: (!spec.mechanics.seek_table_cylinders.is_empty()).then(|| {
                Rc::new((
                    spec.mechanics.seek_table_cylinders.clone(),
                    spec.mechanics.seek_table_ns.clone(),
                ))
            }),
            memo: Rc::new(RefCell::new(vec![
                0;
                tracks.min(SEEK_MEMO_DISTANCES_MAX)
                    as usize
            ])),
        }
    }
}

impl Hdd {
    /// A drive at rest, head on track 0.
    pub fn new(spec: &HddSpec, port_rate_bytes_per_s: f64) -> Self {
        let revolution_ns = (60e9 / f64::from(spec.rpm)).round() as u64;
        let layout = mech::layout_of(spec, revolution_ns);
        let tracks = layout.cylinders;
        let outer_track_bytes = layout.zones[0].track_bytes;
        Self {
            layout,
            tracks,
            revolution_ns,
            seek: SeekCurve::new(spec, tracks),
            overheads: Overheads::of(spec),
            last_write: false,
            head_switch_ns: spec.mechanics.head_switch_ns.unwrap_or(0),
            write_settle_ns: spec.mechanics.write_settle_ns.unwrap_or(0),
            link_ps: ps_per_byte(spec.link_rate_bytes_per_s.min(port_rate_bytes_per_s)),
            read_ahead_bytes: spec.read_ahead_bytes,
            cache_bytes: spec.cache_bytes,
            stream_bytes: mech::segment_bytes(spec),
            segments: VecDeque::new(),
            segments_max: spec.mechanics.cache_segments.map_or(0, |n| n as usize - 1),
            read_ahead_scheme: spec.mechanics.read_ahead_scheme,
            read_ahead_keeps_request: spec.mechanics.read_ahead_keeps_request.unwrap_or(false),
            read_hits_on_write_data: spec.mechanics.read_hits_on_write_data.unwrap_or(true),
            capacity_bytes: spec.capacity_bytes,
            write_cache: spec.write_cache,
            write_buffer_bytes: spec.write_buffer_bytes.unwrap_or(spec.cache_bytes),
            buffered_write_bytes: 0,
            awaiting_buffer: 0,
            writing: None,
            dirty: Vec::with_capacity(spec.ncq_depth as usize),
            dirty_bytes: 0,
            // Not published for any drive: the firmware is taken to reorder its cached
            // writes over as many as it reorders queued commands (NCQ's depth).
            dirty_writes_max: (spec.ncq_depth as usize).max(1),
            destaging: VecDeque::new(),
            destaging_bytes: 0,
            queue: Vec::with_capacity(spec.ncq_depth as usize),
            busy: false,
            mechanism: Server::default(),
            firmware: Server::default(),
            link: Server::default(),
            head_track: 0,
            ra_active: false,
            ra_base_offset: 0,
            ra_track_bytes: outer_track_bytes,
            ra_track_end: 0,
            ra_track: 0,
            ra_base_ns: 0,
            ra_limit_offset: 0,
            ra_hits: 0,
            spindle_phase_ns: 0,
        }
    }

    /// This drive with its platter `phase_ns` (modulo a revolution) ahead of a drive
    /// built by `new` at every instant: a member whose spindle is not synchronised
    /// with the others'.
    pub fn with_spindle_phase(mut self, phase_ns: u64) -> Self {
        self.spindle_phase_ns = phase_ns % self.revolution_ns;
        self
    }

    /// (head position (`hdd_mechanics::position`), angle as nanoseconds past the index
    /// mark, the zone's track bytes).
    #[inline]
    fn locate(&self, offset_bytes: u64) -> (u64, u64, u64) {
        self.angle_of(self.layout.locate(offset_bytes))
    }

    /// `locate`, and the bytes around `offset_bytes` under the same head position
    /// (`Layout::locate_span`).
    #[inline]
    fn locate_span(&self, offset_bytes: u64) -> ((u64, u64, u64), (u64, u64)) {
        let (located, span) = self.layout.locate_span(offset_bytes);
        (self.angle_of(located), span)
    }

    /// (head position, byte of its track, track bytes) as `locate` answers: the byte
    /// as an angle in ns past the index mark, this drive's spindle phase applied.
    #[inline]
    fn angle_of(&self, (track, byte, track_bytes): (u64, u64, u64)) -> (u64, u64, u64) {
        let angle_ns = byte * self.revolution_ns / track_bytes;
        // A platter `phase` ahead brings each sector under the head `phase` earlier.
        // Both are below a revolution: one conditional subtraction is the remainder.
        let angle_ns = angle_ns + self.revolution_ns - self.spindle_phase_ns;
        let angle_ns = if angle_ns >= self.revolution_ns {
            angle_ns - self.revolution_ns
        } else {
            angle_ns
        };
        (track, angle_ns, track_bytes)
    }

    /// Media time of `len_bytes` starting at `offset_bytes`, the skews of the track
    /// boundaries it crosses included.
    fn media_ns(&self, offset_bytes: u64, len_bytes: u64) -> u64 {
        let track_bytes = self.layout.zone(offset_bytes).track_bytes;
        self.media_ns_on(track_bytes, len_bytes)
            + self.skew_ns(offset_bytes, len_bytes, track_bytes)
    }

    /// Rotation spent on the skews of the track boundaries a transfer crosses (0
    /// without a zone table's skews).
    #[inline]
    fn skew_ns(&self, offset_bytes: u64, len_bytes: u64, track_bytes: u64) -> u64 {
        if self.layout.zone_bytes != 0 {
            return 0; // linear zones have no skews
        }
        let skew = self.layout.crossing_skew_bytes(offset_bytes, len_bytes);
        (skew * self.revolution_ns).div_ceil(track_bytes)
    }

    /// Settling before a write (DiskSim's "Add. write settling delay"; 0 by default).
    #[inline]
    fn settle_ns(&self, write: bool) -> u64 {
        // A drive either settles or not: the test is the same for every command, so
        // its branch is predicted and the NCQ scan pays nothing for drives without.
        if self.write_settle_ns == 0 {
            return 0;
        }
        select_unpredictable(write, self.write_settle_ns, 0)
    }

    /// Seek time from head position `from` to `to`: across cylinders, the seek curve;
    /// to another surface of the same cylinder, a head switch.
    #[inline]
    fn seek_between(&self, memo: &mut [u32], from: u64, to: u64) -> u64 {
        let distance = mech::cylinder_of(to).abs_diff(mech::cylinder_of(from));
        let seek = self.seek.ns(memo, distance);
        // As for settling: one predicted branch for a drive without head switches.
        if self.head_switch_ns == 0 {
            return seek;
        }
        let switch = (distance == 0) & (to != from);
        seek + select_unpredictable(switch, self.head_switch_ns, 0)
    }

    /// Media time of `len_bytes` on tracks of `track_bytes`.
    #[inline]
    fn media_ns_on(&self, track_bytes: u64, len_bytes: u64) -> u64 {
        (len_bytes * self.revolution_ns).div_ceil(track_bytes)
    }

    /// Seek time across `distance` cylinders.
    pub fn seek_ns(&self, distance: u64) -> u64 {
        self.seek.ns(&mut self.seek.memo.borrow_mut(), distance)
    }

    /// Cylinders on the drive (tracks, for a drive of one surface).
    pub fn tracks(&self) -> u64 {
        self.tracks
    }

    /// Time one revolution takes.
    pub fn revolution_ns(&self) -> u64 {
        self.revolution_ns
    }

    /// Where the read-ahead has got to by `t_ns`.
    #[inline]
    fn ra_position(&self, t_ns: u64) -> u64 {
        let elapsed = t_ns.saturating_sub(self.ra_base_ns);
        let read = elapsed * self.ra_track_bytes / self.revolution_ns;
        (self.ra_base_offset + read).min(self.ra_limit_offset)
    }

    /// When the read-ahead stream passes `offset_bytes`.
    #[inline]
    fn ra_time(&self, offset_bytes: u64) -> u64 {
        self.ra_base_ns + self.media_ns_on(self.ra_track_bytes, offset_bytes - self.ra_base_offset)
    }

    #[inline]
    fn is_ra_hit(&self, c: &Command) -> bool {
        // The buffer keeps only the most recent `stream_bytes` of the stream.
        !c.write
            && self.ra_active
            && c.offset_bytes >= self.ra_base_offset
            && c.offset_bytes + self.stream_bytes >= self.ra_limit_offset
            && c.offset_bytes + c.len_bytes <= self.ra_limit_offset
    }

    /// Head position at `t_ns`: follows the read-ahead if one runs.
    #[inline]
    fn head_at(&self, t_ns: u64) -> u64 {
        if !self.ra_active {
            return self.head_track;
        }
        let at = self.ra_position(t_ns).saturating_sub(1);
        if self.ra_base_offset <= at && at < self.ra_track_end {
            self.ra_track
        } else {
            self.locate(at).0
        }
    }

    /// Seek plus rotational wait to reach command `c`'s first sector when starting at
    /// `t_ns`.
    fn positioning_ns(&self, t_ns: u64, c: &Command) -> u64 {
        let from = (self.head_at(t_ns), t_ns % self.revolution_ns);
        let memo = &mut self.seek.memo.borrow_mut();
        let settle = self.settle_ns(c.write);
        self.positioning_from(memo, from, (c.track, settle), c.angle_ns)
    }

    /// Seek plus rotational wait to reach the sector at `angle_ns` on `track` for a head
    /// on `head_track` that starts when the platter is at `start_angle_ns` (the start
    /// time modulo a revolution): the caller reduces its start time once for every
    /// command it weighs.
    #[inline]
    fn positioning_from(
        &self,
        seek_memo: &mut [u32],
        (head_track, start_angle_ns): (u64, u64),
        (track, settle_ns): (u64, u64),
        angle_ns: u64,
    ) -> u64 {
        // A write settles after a seek or head switch, before it waits for its
        // sector; a head that stays on its track has nothing to settle from (DiskSim
        // 4, diskmodel/mech_g1.c, dm_seek_time_g1: `if((result != 0) && (rw == 0))`).
        // `settle_ns` is 0 for reads and for drives without a settle, so they pay one
        // select and keep their times.
        let moved = self.seek_between(seek_memo, head_track, track);
        let seek = moved + select_unpredictable(moved != 0, settle_ns, 0);
        self.seek_and_wait_ns(start_angle_ns, seek, angle_ns)
    }

    /// `seek_ns` plus the rotational wait, after a seek begun at platter angle
    /// `start_angle_ns`, for the sector at `angle_ns` to come under the head. The
    /// platter's angle at arrival is `(t + seek) mod revolution` of the start time `t`,
    /// which is `(start angle + seek) mod revolution`.
    #[inline]
    fn seek_and_wait_ns(&self, start_angle_ns: u64, seek_ns: u64, angle_ns: u64) -> u64 {
        let rev = self.revolution_ns;
        debug_assert!(start_angle_ns < rev && angle_ns < rev);
        // A seek is a few revolutions at most on any real drive: subtracting is the
        // remainder without a division, and the `%` stays for a curve slower than that.
        // Whether each subtraction applies is data (NCQ weighs commands all round the
        // platter): selects, which the compiler would otherwise turn into branches
        // that the CPU mispredicts about half the time.
        let mut head_angle = start_angle_ns + seek_ns;
        for _ in 0..2 {
            head_angle =
                select_unpredictable(head_angle >= rev, head_angle.wrapping_sub(rev), head_angle);
        }
        if head_angle >= rev {
            head_angle %= rev;
        }
        // Both angles are below a revolution, so the sum lies in (0, 2 rev): one
        // subtraction is the `% rev`.
        let mut wait = angle_ns + rev - head_angle;
        wait = select_unpredictable(wait >= rev, wait.wrapping_sub(rev), wait);
        wait = select_unpredictable(wait > rev - ON_TIME_SLACK_NS, 0, wait);
        seek_ns + wait
    }

    /// Queue a member operation arriving at `now_ns`; starts it if the drive is idle.
    pub fn submit(
        &mut self,
        now_ns: u64,
        op: u32,
        offset_bytes: u64,
        len_bytes: u64,
        write: bool,
    ) -> Option<Started> {
        // The firmware decodes commands one at a time while the mechanism works on
        // another: a command's overhead is serial with the mechanism only when the
        // drive was idle, and a queued one's overlaps the media work ahead of it. The
        // datasheet's command overhead is one figure per command, the time from the
        // host's command FIS to the drive's DMA Setup FIS (NCQ) or its seek start,
        // "drive in quiescent state" (Hitachi Deskstar 7K3000 specification, 4.5.1
        // Command overhead); the Deskstar 7K250 specification (publication 2860,
        // 4.4.5.1) times 128 sequential read commands as T = A + B + C + 16 MiB/D +
        // 512/E, one command overhead A for all of them, and Hitachi's "seek overlap"
        // (Travelstar 5K160 specification, 12.11) puts one pre- and one post-overhead
        // on a run of overlapped commands. The A of this model's drives is the whole
        // per-command time (derived from 4096 random reads, T = 4096 (A + B + C + ...),
        // status included), which the firmware still spends on every command, one at
        // a time: it bounds the command rate, not each queued command's latency. A
        // write with the write cache off reports its status once the platter has it
        // (WCE = 0: "SCSI WRITE commands may not return status ... until all data has
        // been written to the media", Seagate SCSI Commands Reference Manual, caching
        // mode page); that status is the completion sent when the media write ends
        // (`serve`), not a second command overhead. Booking one here, ahead of the
        // commands that arrive next, held every queued write back by a second 0.22 ms
        // on the Deskstar, so sequential 64 KiB writes at queue depth 2 lost a
        // revolution each while 128 KiB ones streamed (28 vs 284 MB/s on the 2-disk
        // PERC 6/i array at QD 4).
        let overhead_ns = self.command_overhead_ns(now_ns, offset_bytes, len_bytes, write);
        let (_, mut ready_ns) = self.firmware.reserve(now_ns, overhead_ns);
        // Writes take buffer room in arrival order; their data then crosses the link.
        let awaiting_buffer = write
            && !self.write_cache
            && (self.awaiting_buffer > 0 || !self.buffer_takes(len_bytes));
        if awaiting_buffer {
            self.awaiting_buffer += 1;
        } else if write && !self.write_cache {
            self.buffered_write_bytes += len_bytes;
            let (_, data_in) = self
                .link
                .reserve(now_ns, transfer_ns(len_bytes, self.link_ps));
            ready_ns = ready_ns.max(data_in);
        }
        let ((track, angle_ns, track_bytes), (_, track_end)) = self.locate_span(offset_bytes);
        let gate_ns = if awaiting_buffer || (write && self.write_cache) {
            u64::MAX
        } else {
            ready_ns
        };
        self.queue.push(Command {
            op,
            offset_bytes,
            len_bytes,
            write,
            ready_ns,
            awaiting_buffer,
            track,
            angle_ns,
            track_bytes,
            track_end,
            gate_ns,
        });
        if self.busy {
            None
        } else {
            self.start_next(now_ns)
        }
    }

    /// The drive finished its command at `now_ns`: start the next queued one.
    pub fn complete(&mut self, now_ns: u64) -> Option<Started> {
        self.busy = false;
        if let Some((bytes, media_end_ns)) = self.writing.take() {
            self.buffered_write_bytes -= bytes;
            if self.awaiting_buffer > 0 {
                self.admit_writes(media_end_ns);
            }
        }
        self.start_next(now_ns)
    }

    /// Whether the buffer can take `len_bytes` more write data now (a write larger
    /// than the whole buffer goes in once the buffer is empty).
    #[inline]
    fn buffer_takes(&self, len_bytes: u64) -> bool {
        self.buffered_write_bytes == 0
            || self.buffered_write_bytes.saturating_add(len_bytes) <= self.write_buffer_bytes
    }

    /// Room freed at `freed_ns`: writes waiting for it take it in arrival order, their
    /// data arriving over the link from then.
    fn admit_writes(&mut self, freed_ns: u64) {
        for i in 0..self.queue.len() {
            let c = self.queue[i];
            if !c.awaiting_buffer {
                continue;
            }
            if !self.buffer_takes(c.len_bytes) {
                break;
            }
            self.buffered_write_bytes += c.len_bytes;
            self.awaiting_buffer -= 1;
            let (_, data_in) = self
                .link
                .reserve(freed_ns, transfer_ns(c.len_bytes, self.link_ps));
            let c = &mut self.queue[i];
            c.awaiting_buffer = false;
            c.ready_ns = c.ready_ns.max(data_in);
            // Awaiting room means the write cache is off: the mechanism writes it.
            c.gate_ns = c.ready_ns;
        }
    }

    fn start_next(&mut self, now_ns: u64) -> Option<Started> {
        // Cached writes go to the platter whenever the mechanism is free before the
        // next command: the drive destages while the host waits or is idle.
        self.destage_until(now_ns);
        if self.queue.is_empty() {
            return None;
        }
        // The mechanism takes its next command the moment it frees, not when the last
        // command's completion reaches the controller: a decoded command queued behind
        // a media transfer follows it on the platter without a gap. A read-ahead hit
        // waits for the link, which is busy until `now_ns`.
        let mech_t0 = self.mechanism.free_at_ns();
        let t0 = now_ns.max(mech_t0);
        let (best, positioning) = self.shortest_positioning_first(mech_t0, t0);
        let c = self.queue.remove(best);
        self.busy = true;
        if self.is_cached_write(&c) {
            return Some(self.accept_cached_write(now_ns.max(c.ready_ns), c));
        }
        let start = if self.is_ra_hit(&c) {
            t0.max(c.ready_ns)
        } else {
            mech_t0.max(c.ready_ns)
        };
        let mut started = self.serve(start, c, positioning);
        // The mechanism may have taken this command before `now_ns` (it freed while the
        // link still carried the last command's data), but its status crosses that
        // link, which is busy until `now_ns`: a write with the write cache off can end
        // on the platter earlier, never complete earlier. Reporting it in the past put
        // an event behind the clock (tests/suite/invariants.rs, debug build: a 1 MiB write
        // after a read queued behind buffered write data on the link).
        started.done_ns = started.done_ns.max(now_ns);
        Some(started)
    }

    /// The queued command NCQ serves next when the mechanism frees at `mech_t0` (and
    /// the link at `t0`): the one whose data can start earliest. Read-ahead hits cost
    /// no positioning, and a write the cache takes needs no mechanism at all. Ties go
    /// to the oldest command.
    ///
    /// Two passes: `fast_scan` weighs the commands that start when the mechanism
    /// frees (all of them, at a queue of random reads), `slow_scan` the others, only
    /// when there are any. The earlier start wins, and at equal starts the lower index.
    fn shortest_positioning_first(&self, mech_t0: u64, t0: u64) -> (usize, Option<u64>) {
        // One command (a drive at queue depth 1, a stream): nothing to weigh.
        if self.queue.len() == 1 {
            return (0, None);
        }
        // Every command decoded by the time the mechanism frees starts from the same
        // head position at the same platter angle: both are worked out once here, not
        // once per queued command (the head position follows the read-ahead stream,
        // which costs a zone lookup and divisions).
        let scan = Scan {
            mech_t0,
            head_t0: self.head_at(mech_t0),
            angle_t0: mech_t0 % self.revolution_ns,
            ra: self.ra_window(),
        };
        let mut memo_table = self.seek.memo.borrow_mut();
        let memo: &mut [u32] = &mut memo_table;
        // Only drives that settle before writes or switch heads pay for either in the
        // scan: one copy of the loop per combination, chosen once per dispatch.
        let (fast_key, any_slow) = if self.queue.len() > 1 << KEY_INDEX_BITS {
            (u64::MAX, true)
        } else {
            match (self.write_settle_ns != 0, self.head_switch_ns != 0) {
                (false, false) => self.fast_scan::<false, false>(memo, &scan),
                (true, false) => self.fast_scan::<true, false>(memo, &scan),
                (false, true) => self.fast_scan::<false, true>(memo, &scan),
                (true, true) => self.fast_scan::<true, true>(memo, &scan),
            }
        };
        let (slow_at, slow_best) = if any_slow {
            self.slow_scan(memo, &scan, t0)
        } else {
            (u64::MAX, 0)
        };
        if fast_key != u64::MAX {
            let positioning = fast_key >> KEY_INDEX_BITS;
            let fast_at = mech_t0 + positioning;
            let fast_best = (fast_key & ((1 << KEY_INDEX_BITS) - 1)) as usize;
            if (fast_at, fast_best) < (slow_at, slow_best) {
                return (fast_best, Some(positioning));
            }
        }
        // Room in the buffer always frees for the oldest waiting write: with none
        // admitted the buffer is empty and takes it (with none that can start the
        // answer was index 0, as here).
        debug_assert!(slow_at < u64::MAX, "a queued command can start");
        (slow_best, None)
    }

    /// Commands that may be read-ahead hits: every hit starts in `lo..lo + span` (a
    /// superset of `is_ra_hit`, which `slow_scan` asks), one unsigned comparison of
    /// `offset - lo` with the span; no stream, no span, no hit.
    #[inline]
    fn ra_window(&self) -> (u64, u64) {
        if !self.ra_active {
            return (0, 0);
        }
        let lo = self
            .ra_base_offset
            .max(self.ra_limit_offset.saturating_sub(self.stream_bytes));
        (lo, self.ra_limit_offset.saturating_sub(lo))
    }

    /// Whether `c` is weighed on the fast path: decoded by the time the mechanism
    /// frees, positioned by the mechanism, no read-ahead hit. It starts when the
    /// mechanism frees, from `(head_t0, angle_t0)`.
    #[inline]
    fn is_fast(scan: &Scan, c: &Command) -> bool {
        // `&`, not `&&`: one well-predicted branch instead of a data-dependent one.
        (c.gate_ns <= scan.mech_t0) & (c.offset_bytes.wrapping_sub(scan.ra.0) >= scan.ra.1)
    }

    /// The fast path: the best of the commands `is_fast` takes as one key,
    /// `(positioning << 16) | index`, the smallest positioning first and then the oldest
    /// (the lowest index), as comparing start times in queue order does, and whether
    /// any command is left for `slow_scan`. A `u64` select of one key stays a
    /// conditional move; selecting a start time and an index apart compiled to a
    /// branch that the CPU mispredicted about five times a dispatch. Positionings too
    /// long for the key (none on a real drive) are left to `slow_scan`. `SETTLE` and
    /// `SWITCH`: whether the drive settles before writes and switches heads, constant
    /// for a drive, so the loop of a drive without either tests neither. Not inlined:
    /// the loop gets its registers to itself instead of sharing them with all of
    /// `start_next` (fewer reloads from the stack per command).
    #[inline(never)]
    fn fast_scan<const SETTLE: bool, const SWITCH: bool>(
        &self,
        memo: &mut [u32],
        scan: &Scan,
    ) -> (u64, bool) {
        let mut fast_key = u64::MAX;
        let mut any_slow = false;
        let head_cylinder = mech::cylinder_of(scan.head_t0);
        for (i, c) in self.queue.iter().enumerate() {
            if !Self::is_fast(scan, c) {
                any_slow = true;
                continue;
            }
            let distance = mech::cylinder_of(c.track).abs_diff(head_cylinder);
            let mut seek = self.seek.ns(memo, distance);
            if SWITCH {
                let switch = (distance == 0) & (c.track != scan.head_t0);
                seek += select_unpredictable(switch, self.head_switch_ns, 0);
            }
            if SETTLE {
                // Only after a seek or head switch (`positioning_from`).
                let settles = c.write & (seek != 0);
                seek += select_unpredictable(settles, self.write_settle_ns, 0);
            }
            let positioning = self.seek_and_wait_ns(scan.angle_t0, seek, c.angle_ns);
            if positioning < KEY_POSITIONING_LIMIT {
                let key = (positioning << KEY_INDEX_BITS) | i as u64;
                fast_key = select_unpredictable(key < fast_key, key, fast_key);
            } else {
                any_slow = true;
            }
        }
        (fast_key, any_slow)
    }

    /// The slow path: the earliest start time and its index among the commands
    /// `fast_scan` left, as (start, index); ties go to the lower index. `fast_scan`
    /// weighs the fast commands whose positioning fits its key when the queue's
    /// indices fit it too: those are skipped here.
    fn slow_scan(&self, memo: &mut [u32], scan: &Scan, t0: u64) -> (u64, usize) {
        let packed = self.queue.len() <= 1 << KEY_INDEX_BITS;
        let mech_t0 = scan.mech_t0;
        let mut slow_at = u64::MAX;
        let mut slow_best = 0;
        for (i, c) in self.queue.iter().enumerate() {
            let at = if Self::is_fast(scan, c) {
                let from = (scan.head_t0, scan.angle_t0);
                let to = (c.track, self.settle_ns(c.write));
                let positioning = self.positioning_from(memo, from, to, c.angle_ns);
                if packed && positioning < KEY_POSITIONING_LIMIT {
                    continue;
                }
                mech_t0 + positioning
            } else if c.awaiting_buffer {
                continue;
            } else if self.is_cached_write(c) {
                0
            } else if self.is_ra_hit(c) {
                t0.max(c.ready_ns)
            } else if c.ready_ns <= mech_t0 {
                let from = (scan.head_t0, scan.angle_t0);
                let to = (c.track, self.settle_ns(c.write));
                mech_t0 + self.positioning_from(memo, from, to, c.angle_ns)
            } else {
                let start = c.ready_ns;
                let from = (self.head_at(start), start % self.revolution_ns);
                let to = (c.track, self.settle_ns(c.write));
                start + self.positioning_from(memo, from, to, c.angle_ns)
            };
            if at < slow_at {
                slow_at = at;
                slow_best = i;
            }
        }
        (slow_at, slow_best)
    }

    #[inline]
    fn is_cached_write(&self, c: &Command) -> bool {
        c.write && self.write_cache
    }

    /// A write into the drive's cache: acknowledged once its data is in the buffer. The
    /// platter gets it later, in the order that positions the head fastest (as NCQ
    /// serves queued commands): a drive's write cache "reduces delays caused by seek
    /// time and rotational latency" (HGST Ultrastar 7K2 technical reference manual,
    /// CacheFlow, write cache), so random writes with the cache on are at least as fast
    /// as queued ones without it. A write waits only while the cache is full (its bytes
    /// or its reordering window), until a destage frees room.
    fn accept_cached_write(&mut self, start_ns: u64, c: Command) -> Started {
        if self.segments_max > 0 {
            self.keep_written(&c);
        }
        // Data that continues a cached write joins it: the buffer holds a stream's
        // writes as one segment, written to the platter in one pass.
        let end = |w: &DirtyWrite| w.offset_bytes + w.len_bytes;
        if let Some(w) = self
            .dirty
            .iter_mut()
            .rev()
            .find(|w| end(w) == c.offset_bytes)
        {
            if self.dirty_bytes + self.destaging_bytes + c.len_bytes <= self.cache_bytes {
                let link_ns = transfer_ns(c.len_bytes, self.link_ps);
                let (link_start, data_in) = self.link.reserve(start_ns, link_ns);
                w.len_bytes += c.len_bytes;
                w.ready_ns = w.ready_ns.max(data_in);
                self.dirty_bytes += c.len_bytes;
                return Started {
                    op: c.op,
                    link_start_ns: link_start,
                    done_ns: data_in,
                };
            }
        }
        let room_ns = self.cache_room_at(start_ns, c.len_bytes);
        let link_ns = transfer_ns(c.len_bytes, self.link_ps);
        let (link_start, data_in) = self.link.reserve(room_ns, link_ns);
        self.dirty.push(DirtyWrite {
            offset_bytes: c.offset_bytes,
            len_bytes: c.len_bytes,
            ready_ns: data_in,
            track: c.track,
            angle_ns: c.angle_ns,
        });
        self.dirty_bytes += c.len_bytes;
        Started {
            op: c.op,
            link_start_ns: link_start,
            done_ns: data_in,
        }
    }

    /// When the cache can take `len_bytes` more, from `from_ns` on: a segment frees its
    /// place in the reordering window when the mechanism starts writing it, and its
    /// bytes when it is written. A write larger than the whole cache goes in once the
    /// cache is empty.
    fn cache_room_at(&mut self, from_ns: u64, len_bytes: u64) -> u64 {
        let mut room_ns = from_ns;
        loop {
            while let Some(&(end_ns, bytes)) = self.destaging.front() {
                if end_ns > room_ns {
                    break;
                }
                self.destaging.pop_front();
                self.destaging_bytes -= bytes;
            }
            let window_full = self.dirty.len() >= self.dirty_writes_max;
            let used = self.dirty_bytes + self.destaging_bytes;
            let bytes_fit = used + len_bytes <= self.cache_bytes || used == 0;
            if !window_full && bytes_fit {
                return room_ns;
            }
            if window_full || (self.destaging.is_empty() && !self.dirty.is_empty()) {
                let (start_ns, _) = self.destage_one();
                if window_full {
                    room_ns = room_ns.max(start_ns);
                }
                continue;
            }
            let (end_ns, _) = *self.destaging.front().expect("bytes in flight");
            room_ns = room_ns.max(end_ns);
        }
    }

    /// Destage every cached write the mechanism can start before `now_ns` (a command
    /// the drive takes at `now_ns` goes first).
    fn destage_until(&mut self, now_ns: u64) {
        while let Some(ready_ns) = self.dirty.iter().map(|w| w.ready_ns).min() {
            if self.mechanism.free_at_ns().max(ready_ns) >= now_ns {
                return;
            }
            self.destage_one();
        }
    }

    /// Write one cached write to the platter, the one the head reaches first of those
    /// whose data is in by the time the mechanism frees (ties: the oldest). Returns
    /// when the mechanism starts on it and when it is on the platter.
    fn destage_one(&mut self) -> (u64, u64) {
        debug_assert!(!self.dirty.is_empty(), "a destage needs a cached write");
        let first_ready = self.dirty.iter().map(|w| w.ready_ns).min().unwrap_or(0);
        let t0 = self.mechanism.free_at_ns().max(first_ready);
        let from = (self.head_at(t0), t0 % self.revolution_ns);
        let (best, positioning) = {
            let mut memo = self.seek.memo.borrow_mut();
            let mut best = (0, u64::MAX);
            for (i, w) in self.dirty.iter().enumerate() {
                if w.ready_ns > t0 {
                    continue;
                }
                let to = (w.track, self.write_settle_ns);
                let ns = self.positioning_from(&mut memo, from, to, w.angle_ns);
                if ns < best.1 {
                    best = (i, ns);
                }
            }
            best
        };
        debug_assert!(positioning < u64::MAX, "the earliest cached write is ready");
        let w = self.dirty.remove(best);
        let media_end = t0 + positioning + self.media_ns(w.offset_bytes, w.len_bytes);
        self.mechanism.occupy(t0, media_end);
        self.ra_active = false;
        self.head_track = self.locate(w.offset_bytes + w.len_bytes - 1).0;
        self.dirty_bytes -= w.len_bytes;
        self.destaging.push_back((media_end, w.len_bytes));
        self.destaging_bytes += w.len_bytes;
        (t0, media_end)
    }

    /// Serve `c`, a read within the read-ahead stream, from `start_ns`: its data leaves
    /// over the link once the stream has read it, and the stream's limit moves on.
    fn serve_ra_hit(&mut self, start_ns: u64, c: Command) -> Started {
        let link_ns = transfer_ns(c.len_bytes, self.link_ps);
        let last_sector_ns = transfer_ns(512, self.link_ps);
        let end_offset = c.offset_bytes + c.len_bytes;
        self.ra_hits += 1;
        let data_ready = self.ra_time(end_offset);
        let from = start_ns.max((data_ready + last_sector_ns).saturating_sub(link_ns));
        let (link_start, done) = self.link.reserve(from, link_ns);
        let extended = match self.read_ahead_scheme {
            None => (end_offset + self.read_ahead_bytes)
                .min(c.offset_bytes + self.stream_bytes.max(c.len_bytes)),
            Some(scheme) => {
                self.scheme_limit(scheme, self.ra_base_offset, c.offset_bytes, end_offset)
            }
        };
        self.ra_limit_offset = self.ra_limit_offset.max(extended);
        // The mechanism streams; it is busy for the media time it spent on this,
        // and none for data it had already read (the buffer serves it again): only
        // the stretch of the stream past what is already booked is new work.
        // Booking `data_ready..media_from` instead counted busy time twice and put
        // a mechanism's busy time above the measured interval (found by
        // tests/suite/invariants.rs, seed 6441: degraded RAID 5 re-reading its chunks).
        let media_from = self
            .ra_time(c.offset_bytes)
            .max(self.mechanism.free_at_ns());
        if data_ready > media_from {
            self.mechanism.occupy(media_from, data_ready);
        }
        Started {
            op: c.op,
            link_start_ns: link_start,
            done_ns: done,
        }
    }

    /// Serve `c` from `start_ns`; `positioning`, when known, is its positioning time
    /// from there (NCQ's scan worked it out).
    fn serve(&mut self, start_ns: u64, c: Command, positioning: Option<u64>) -> Started {
        if self.is_ra_hit(&c) {
            return self.serve_ra_hit(start_ns, c);
        }
        let link_ns = transfer_ns(c.len_bytes, self.link_ps);
        let last_sector_ns = transfer_ns(512, self.link_ps);
        let end_offset = c.offset_bytes + c.len_bytes;
        if !self.segments.is_empty() && !c.write && self.segment_holds(&c) {
            return self.serve_from_segment(start_ns, c);
        }
        let positioning = positioning.unwrap_or_else(|| self.positioning_ns(start_ns, &c));
        let media_start = start_ns + positioning;
        let media_end = media_start
            + self.media_ns_on(c.track_bytes, c.len_bytes)
            + self.skew_ns(c.offset_bytes, c.len_bytes, c.track_bytes);
        if self.segments_max > 0 {
            self.keep_segment(start_ns, &c);
        }
        self.mechanism.occupy(start_ns, media_end);
        // Most commands end on the track they start on: no need to locate their end.
        self.head_track = if end_offset - 1 < c.track_end {
            c.track
        } else {
            self.locate(end_offset - 1).0
        };
        self.ra_active = false;
        if c.write {
            if !self.write_cache {
                self.writing = Some((c.len_bytes, media_end));
            }
            let done = if self.write_cache {
                // Acknowledged once buffered, unless the buffer's backlog is full.
                let drain_ns = self.media_ns_on(c.track_bytes, self.cache_bytes);
                (start_ns + link_ns).max(media_end.saturating_sub(drain_ns))
            } else {
                media_end.max(start_ns + link_ns) + last_sector_ns
            };
            return Started {
                op: c.op,
                link_start_ns: start_ns,
                done_ns: done,
            };
        }
        // The data streams out over the link as it comes off the platter.
        let (_, sent) = self.link.reserve(media_start, link_ns);
        let done = media_end.max(sent) + last_sector_ns;
        if self.read_ahead_bytes > 0 {
            self.ra_active = true;
            self.ra_base_offset = c.offset_bytes;
            self.ra_track_bytes = c.track_bytes;
            self.ra_track_end = c.track_end;
            self.ra_track = c.track;
            self.ra_base_ns = media_start;
            self.ra_limit_offset = match self.read_ahead_scheme {
                None => end_offset + self.read_ahead_bytes,
                Some(scheme) => {
                    self.scheme_limit(scheme, c.offset_bytes, c.offset_bytes, end_offset)
                }
            };
        }
        Started {
            op: c.op,
            link_start_ns: done - link_ns,
            done_ns: done,
        }
    }

    /// The firmware time of a command arriving at `now_ns`: the drive's one figure, or
    /// DiskSim's by command, buffer hit and the command before (`Overheads`).
    fn command_overhead_ns(
        &mut self,
        now_ns: u64,
        offset_bytes: u64,
        len_bytes: u64,
        write: bool,
    ) -> u64 {
        let after_write = std::mem::replace(&mut self.last_write, write);
        if self.overheads.uniform() {
            return self.overheads.ns(write, false, after_write);
        }
        let hit = if write {
            self.write_cache
        } else {
            let end = offset_bytes + len_bytes;
            let streamed = self.ra_active
                && offset_bytes >= self.ra_base_offset
                && end <= self.ra_position(now_ns);
            streamed
                || self
                    .segments
                    .iter()
                    .any(|&(a, b)| a <= offset_bytes && end <= b)
        };
        self.overheads.ns(write, hit, after_write)
    }

    /// How far a read-ahead under DiskSim's `scheme` reads past a read of
    /// `offset_bytes..end_offset` whose segment starts at `segment_start`, as DiskSim's
    /// `disk_buffer_get_max_readahead` (disksim_diskcache.c) and its clipping to the
    /// track or cylinder (disksim_diskctlr.c) decide.
    fn scheme_limit(
        &self,
        scheme: ReadAheadScheme,
        segment_start: u64,
        offset_bytes: u64,
        end_offset: u64,
    ) -> u64 {
        let layout = &self.layout;
        let ahead = end_offset + self.read_ahead_bytes;
        let limit = match scheme {
            ReadAheadScheme::Track => ahead.min(layout.track_end(end_offset - 1)),
            ReadAheadScheme::Cylinder => ahead.min(layout.cylinder_end(end_offset - 1)),
            ReadAheadScheme::Segment if self.read_ahead_bytes > 0 => ahead,
            ReadAheadScheme::Segment if self.read_ahead_keeps_request => {
                offset_bytes + self.stream_bytes.max(end_offset - offset_bytes)
            }
            ReadAheadScheme::Segment => end_offset + self.stream_bytes,
            ReadAheadScheme::Sequential => {
                // To the end of the track holding the next sector, and one track more
                // when the segment reaches back past that track's start (a stream).
                let end = end_offset.min(self.capacity_bytes - 1);
                let track_end = layout.track_end(end);
                if segment_start < layout.track_start(end) {
                    track_end + layout.zone(end).track_bytes
                } else {
                    track_end
                }
            }
        };
        limit.clamp(end_offset, self.capacity_bytes)
    }

    /// Whether an older segment holds all of read `c`.
    fn segment_holds(&self, c: &Command) -> bool {
        let end = c.offset_bytes + c.len_bytes;
        self.segments
            .iter()
            .any(|&(a, b)| a <= c.offset_bytes && end <= b)
    }

    /// A read an older segment holds: its data crosses the link, the mechanism is not
    /// involved (and its read-ahead stream runs on).
    fn serve_from_segment(&mut self, start_ns: u64, c: Command) -> Started {
        self.ra_hits += 1;
        let link_ns = transfer_ns(c.len_bytes, self.link_ps);
        let (link_start, done) = self.link.reserve(start_ns, link_ns);
        Started {
            op: c.op,
            link_start_ns: link_start,
            done_ns: done + transfer_ns(512, self.link_ps),
        }
    }

    /// A segmented buffer keeps what the stream `c` interrupts had read (up to a
    /// segment of it), and a write's data (DiskSim's "Allow read hits on write data"),
    /// in the least recently filled segment.
    fn keep_segment(&mut self, start_ns: u64, c: &Command) {
        if self.ra_active {
            let end = self.ra_position(start_ns);
            let first = self
                .ra_base_offset
                .max(end.saturating_sub(self.stream_bytes));
            if end > first {
                self.segments.push_back((first, end));
            }
        }
        if c.write && self.read_hits_on_write_data {
            self.segments.push_back(self.written_span(c));
        }
        self.drop_oldest_segments();
    }

    /// The bytes of write `c` a segment keeps: its last segment's worth.
    fn written_span(&self, c: &Command) -> (u64, u64) {
        let end = c.offset_bytes + c.len_bytes;
        (
            end.saturating_sub(self.stream_bytes).max(c.offset_bytes),
            end,
        )
    }

    /// Down to the buffer's segments, the least recently filled going first.
    fn drop_oldest_segments(&mut self) {
        while self.segments.len() > self.segments_max {
            self.segments.pop_front();
        }
    }

    /// A write the cache takes keeps its data in a segment as a platter write does
    /// (`keep_segment`), and a write that continues the newest segment joins it, as
    /// DiskSim appends a sequential write to its segment (`BUFFER_APPEND`,
    /// disksim_diskcache.c): DiskSim serves a later read of that data from the
    /// buffer when "Allow read hits on write data" is 1 (`readhitsonwritedata` in
    /// `disk_buffer_select_read_segment`), whether or not it has reached the platter
    /// yet.
    ///
    /// The read-ahead stream runs on: a cached write does not take the mechanism.
    fn keep_written(&mut self, c: &Command) {
        if !self.read_hits_on_write_data {
            return;
        }
        let end = c.offset_bytes + c.len_bytes;
        if let Some(last) = self.segments.back_mut() {
            if last.1 == c.offset_bytes {
                *last = (last.0.max(end.saturating_sub(self.stream_bytes)), end);
                return;
            }
        }
        self.segments.push_back(self.written_span(c));
        self.drop_oldest_segments();
    }

    /// Busy time of the mechanism (positioning and media transfer).
    pub fn busy_ns(&self) -> u64 {
        self.mechanism.busy_ns()
    }

    /// Reads served from the read-ahead buffer.
    pub fn read_ahead_hits(&self) -> u64 {
        self.ra_hits
    }

    /// Time `bytes` take on the drive's link (its rate, capped by the port's).
    pub fn link_transfer_ns(&self, bytes: u64) -> u64 {
        transfer_ns(bytes, self.link_ps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// NCQ's choice as a plain scan in queue order: every command's start time by the
    /// general rules, the earliest winning, ties to the first. The fast path must
    /// choose exactly this.
    fn reference_choice(d: &Hdd, mech_t0: u64, t0: u64) -> usize {
        let head_t0 = d.head_at(mech_t0);
        let angle_t0 = mech_t0 % d.revolution_ns;
        let mut memo = d.seek.memo.borrow_mut();
        let mut best = 0;
        let mut best_at = u64::MAX;
        for (i, c) in d.queue.iter().enumerate() {
            if c.awaiting_buffer {
                continue;
            }
            let at = if d.is_cached_write(c) {
                0
            } else if d.is_ra_hit(c) {
                t0.max(c.ready_ns)
            } else if c.ready_ns <= mech_t0 {
                let to = (c.track, d.settle_ns(c.write));
                mech_t0 + d.positioning_from(&mut memo, (head_t0, angle_t0), to, c.angle_ns)
            } else {
                let start = c.ready_ns;
                let from = (d.head_at(start), start % d.revolution_ns);
                start
                    + d.positioning_from(
                        &mut memo,
                        from,
                        (c.track, d.settle_ns(c.write)),
                        c.angle_ns,
                    )
            };
            if at < best_at {
                best_at = at;
                best = i;
            }
        }
        best
    }

    /// Compares the scan with `reference_choice` at the drive's next dispatch and at
    /// times around it (commands not yet decoded, the platter elsewhere).
    fn check_choice(d: &Hdd, now: u64, rng: &mut Rng) {
        // A drive dispatches only when a command can start (a write waiting for
        // buffer room gets it once the write being served reaches the platter).
        if d.queue.iter().all(|c| c.awaiting_buffer) {
            return;
        }
        let free = d.mechanism.free_at_ns();
        for mech_t0 in [
            free,
            free + rng.below(20_000_000),
            free.saturating_sub(rng.below(300_000)),
        ] {
            let t0 = now.max(mech_t0);
            let (best, positioning) = d.shortest_positioning_first(mech_t0, t0);
            assert_eq!(best, reference_choice(d, mech_t0, t0), "at {mech_t0}");
            if let Some(p) = positioning {
                assert_eq!(p, d.positioning_ns(mech_t0, &d.queue[best]));
            }
        }
    }

    #[test]
    fn the_ncq_scan_chooses_as_a_plain_scan_does() {
        let mut rng = Rng::new(7);
        for round in 0..96u64 {
            let mut s = spec(round % 2 == 1);
            if round >= 48 {
                // A zone table of 4 surfaces with skews, a head switch and a write
                // settle: the scan's copies for drives that switch heads and settle.
                zone_table(&mut s, round);
            }
            // The seek curve: the datasheet's, a measured table, or one that falls
            // somewhere (a longer seek can be faster: no scan may assume otherwise).
            let curve = round % 3;
            let table = &mut s.mechanics;
            if curve == 1 {
                table.seek_table_cylinders = vec![1, 100, 1000, 10_000, 40_000];
                table.seek_table_ns = vec![900_000, 2_000_000, 4_000_000, 8_000_000, 12_000_000];
            } else if curve == 2 && round < 48 {
                s.seek_ns_avg = 14_000_000;
            } else if curve == 2 {
                table.seek_table_cylinders = vec![1, 100, 1000, 10_000, 40_000];
                table.seek_table_ns = vec![900_000, 2_000_000, 5_000_000, 4_000_000, 12_000_000];
            }
            s.read_ahead_bytes = [0, 1 << 20][(round / 2 % 2) as usize];
            s.write_buffer_bytes = Some([64 << 10, 8 << 20][(round / 4 % 2) as usize]);
            let write_share = [0, 30, 100][(round / 8 % 3) as usize];
            // 48: deeper than NCQ's 32 tags, as a host queue may be.
            let depth = [4, 32, 48][(round / 24 % 3) as usize];
            let mut d = Hdd::new(&s, 300e6);
            let (mut now, mut next_arrival) = (0, 0);
            let (mut running, mut outstanding, mut op) = (None::<Started>, 0, 0u32);
            let mut last_end = 0;
            for _ in 0..3000 {
                let arrive = outstanding < depth
                    && running.is_none_or(|r: Started| next_arrival <= r.done_ns);
                if arrive {
                    now = now.max(next_arrival);
                    let len = [512, 4096, 65536, 1 << 20][rng.below(4) as usize];
                    let offset = match rng.below(4) {
                        // Sequential, the same place again (equal positioning times:
                        // the older must win), random in a small region (short seeks),
                        // or anywhere.
                        0 => last_end,
                        3 => last_end - len.min(last_end),
                        1 => rng.below(64 << 20) / 512 * 512,
                        _ => rng.below(s.capacity_bytes - (2 << 20)) / 512 * 512,
                    };
                    last_end = offset + len;
                    let write = rng.below(100) < write_share;
                    check_choice(&d, now, &mut rng);
                    if let Some(started) = d.submit(now, op, offset, len, write) {
                        running = Some(started);
                    }
                    op += 1;
                    outstanding += 1;
                    next_arrival = now + rng.below(3) * rng.below(2_000_000);
                } else if let Some(r) = running {
                    now = now.max(r.done_ns);
                    check_choice(&d, now, &mut rng);
                    running = d.complete(now);
                    outstanding -= 1;
                } else {
                    next_arrival = next_arrival.max(now);
                    now = next_arrival;
                }
            }
        }
    }

    /// `s` with DiskSim's mechanics: two zones over 4 surfaces, track and cylinder
    /// skews, and (by `round`) a head switch, a write settle, both or neither.
    fn zone_table(s: &mut HddSpec, round: u64) {
        let m = &mut s.mechanics;
        m.surfaces = Some(4);
        m.zone_first_cylinder = vec![0, 20_000];
        m.zone_last_cylinder = vec![19_999, 39_999];
        m.zone_sectors_per_track = vec![1000, 700];
        m.zone_track_skew_sectors = vec![30, 20];
        m.zone_cylinder_skew_sectors = vec![50, 40];
        m.head_switch_ns = [None, Some(800_000)][(round % 4 / 2) as usize];
        m.write_settle_ns = [None, Some(300_000)][(round / 4 % 2) as usize];
        s.capacity_bytes = (20_000 * 4 * 1000 + 20_000 * 4 * 700) * 512;
    }

    fn spec(write_cache: bool) -> HddSpec {
        HddSpec {
            model: String::new(),
            capacity_bytes: 250_000_000_000,
            rpm: 7200,
            seek_ns_track_to_track: 1_000_000,
            seek_ns_avg: 8_500_000,
            seek_ns_full_stroke: 15_000_000,
            media_rate_bytes_per_s_outer: 140e6,
            media_rate_bytes_per_s_inner: 70e6,
            zones: 16,
            command_overhead_ns: 100_000,
            link_rate_bytes_per_s: 280e6,
            cache_bytes: 8 << 20,
            read_ahead_bytes: 1 << 20,
            write_cache,
            write_buffer_bytes: None,
            ncq_depth: 32,
            mechanics: Default::default(),
        }
    }

    #[test]
    fn seek_curve_passes_through_the_datasheet_points() {
        let d = Hdd::new(&spec(false), 300e6);
        assert_eq!(d.seek_ns(0), 0);
        assert_eq!(d.seek_ns(1), 1_000_000);
        let third = d.seek_ns(d.tracks() / 3) as f64;
        assert!((third - 8.5e6).abs() < 1e4, "{third}");
        let full = d.seek_ns(d.tracks()) as f64;
        assert!((full - 15e6).abs() < 1e4, "{full}");
        assert!(d.seek_ns(100) < d.seek_ns(10_000));
    }

    #[test]
    fn a_read_served_again_from_the_buffer_adds_no_mechanism_time() {
        let mut d = Hdd::new(&spec(false), 300e6);
        let first = d.submit(0, 0, 0, 65536, false).unwrap();
        // The next 64 KiB come from the read-ahead stream: mechanism time up to them.
        d.complete(first.done_ns);
        let next = d.submit(first.done_ns, 1, 65536, 65536, false).unwrap();
        assert_eq!(d.read_ahead_hits(), 1);
        d.complete(next.done_ns);
        let busy = d.busy_ns();
        assert!(busy <= next.done_ns, "{busy} busy by {}", next.done_ns);
        // The first 64 KiB again: already in the buffer, the media does nothing more.
        let again = d.submit(next.done_ns, 2, 0, 65536, false).unwrap();
        assert_eq!(d.read_ahead_hits(), 2);
        assert_eq!(d.busy_ns(), busy, "repeat served by {}", again.done_ns);
    }

    #[test]
    fn back_to_back_small_writes_without_write_cache_cost_about_a_revolution() {
        let mut d = Hdd::new(&spec(false), 300e6);
        let mut t = d.submit(0, 0, 0, 4096, true).unwrap().done_ns;
        let mut offset = 4096;
        let mut gaps = Vec::new();
        for op in 1..50 {
            // The host turns around 50 us after each completion.
            let issue = t + 50_000;
            d.complete(t);
            let s = d.submit(issue, op, offset, 4096, true).unwrap();
            gaps.push(s.done_ns - t);
            t = s.done_ns;
            offset += 4096;
        }
        let mean = gaps.iter().sum::<u64>() / gaps.len() as u64;
        let rev = d.revolution_ns();
        assert!(
            mean > rev * 9 / 10 && mean < rev * 11 / 10,
            "{mean} vs {rev}"
        );
    }

    #[test]
    fn sequential_reads_hit_the_read_ahead() {
        let mut d = Hdd::new(&spec(false), 300e6);
        let mut t = d.submit(0, 0, 0, 65536, false).unwrap().done_ns;
        for op in 1..100u32 {
            d.complete(t);
            t = d
                .submit(t + 10_000, op, u64::from(op) * 65536, 65536, false)
                .unwrap()
                .done_ns;
        }
        assert_eq!(d.read_ahead_hits(), 99);
        // Streaming at the outer media rate, 140 MB/s: 100 x 64 KiB in about 47 ms.
        let mbps = 100.0 * 65536.0 / (t as f64 / 1e9) / 1e6;
        assert!(mbps > 110.0 && mbps < 141.0, "{mbps}");
    }

    #[test]
    fn data_read_long_ago_is_no_longer_in_the_buffer() {
        let mut d = Hdd::new(&spec(false), 300e6);
        let mut t = 0;
        for op in 0..64u32 {
            t = d
                .submit(t, op, u64::from(op) << 20, 1 << 20, false)
                .unwrap()
                .done_ns;
            d.complete(t);
        }
        let hits = d.read_ahead_hits();
        // 64 MiB later, the first MiB is long gone from an 8 MiB buffer.
        let s = d.submit(t, 99, 0, 1 << 20, false).unwrap();
        assert_eq!(d.read_ahead_hits(), hits);
        assert!(s.done_ns - t > 7_000_000, "{}", s.done_ns - t);
    }

    #[test]
    fn write_cache_acknowledges_before_the_platter() {
        let mut d = Hdd::new(&spec(true), 300e6);
        let s = d.submit(0, 0, 1 << 30, 4096, true).unwrap();
        assert!(s.done_ns < 200_000, "{}", s.done_ns);
    }

    #[test]
    fn cached_sequential_writes_stream_at_the_host_rate_until_the_cache_fills() {
        let mut d = Hdd::new(&spec(true), 300e6);
        let mut t = 0;
        for op in 0..1000u32 {
            t = d
                .submit(t + 20_000, op, u64::from(op) * 4096, 4096, true)
                .unwrap()
                .done_ns;
            d.complete(t);
        }
        // 1000 writes of 4 KiB at ~135 us each (20 us host, 100 us firmware, link):
        // far faster than one revolution per write.
        let per_write_us = t as f64 / 1000.0 / 1000.0;
        assert!(per_write_us < 200.0, "{per_write_us} us");
    }

    /// Mean service time of `count` 4 KiB writes at scattered addresses, one at a time.
    fn random_writes_one_at_a_time(d: &mut Hdd, count: u32) -> f64 {
        let mut t = 0;
        let mut x: u64 = 12_345;
        for op in 0..count {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let offset = (x >> 24) % (200_000_000_000 / 4096) * 4096;
            t = d.submit(t, op, offset, 4096, true).unwrap().done_ns;
            d.complete(t);
        }
        t as f64 / f64::from(count)
    }

    #[test]
    fn the_write_cache_makes_random_writes_faster_not_slower() {
        // With the cache off each write is a random access (seek and half a turn); with
        // it on the drive writes its cached writes in the order the head reaches them.
        let off = random_writes_one_at_a_time(&mut Hdd::new(&spec(false), 300e6), 2_000);
        let on = random_writes_one_at_a_time(&mut Hdd::new(&spec(true), 300e6), 2_000);
        assert!(off > 10e6, "{off} ns");
        assert!(on < 0.6 * off, "{on} vs {off} ns");
    }

    /// Feeds `count` contiguous writes of `len` bytes, keeping `depth` outstanding as a
    /// controller would; returns when the last completes.
    fn queued_writes(d: &mut Hdd, count: u32, len: u64, depth: u32) -> u64 {
        let mut next = 0;
        let mut started = Vec::new();
        while next < depth.min(count) {
            if let Some(s) = d.submit(0, next, u64::from(next) * len, len, true) {
                started.push(s);
            }
            next += 1;
        }
        let mut s = started.pop().expect("an idle drive starts a command");
        loop {
            let now = s.done_ns;
            let mut following = d.complete(now);
            if next < count {
                if let Some(x) = d.submit(now, next, u64::from(next) * len, len, true) {
                    following = Some(x);
                }
                next += 1;
            }
            match following {
                Some(x) => s = x,
                None => return now,
            }
        }
    }

    #[test]
    fn decoded_writes_follow_each_other_on_the_platter_without_write_cache() {
        // 16 contiguous 64 KiB writes queued at once: decoded long before the platter
        // comes round, so after the first rotational wait they stream, one media time
        // each, not a revolution each (the next starts when the mechanism frees, not
        // when the previous completion reaches the controller).
        let mut s = spec(false);
        // 1 MiB of write buffer holds all 16 at once.
        s.write_buffer_bytes = Some(1 << 20);
        let mut d = Hdd::new(&s, 300e6);
        let end = queued_writes(&mut d, 16, 65536, 32);
        let media = d.media_ns(0, 16 * 65536);
        assert!(
            end < d.revolution_ns() + media + 2 * 200_000,
            "{end} vs {} + {media}",
            d.revolution_ns()
        );
    }

    #[test]
    fn queued_small_writes_without_write_cache_are_bound_by_the_firmware() {
        // 8 KiB writes take 59 us of media, less than the firmware's 100 us decode of
        // each: a deep queue of them cannot keep the platter streaming, so they go in
        // bursts, and never faster than one command overhead per write.
        let mut d = Hdd::new(&spec(false), 300e6);
        let n = 400;
        let end = queued_writes(&mut d, n, 8192, 32);
        let per_write = end / u64::from(n);
        assert!(
            per_write > 100_000 && per_write < 300_000,
            "{per_write} ns per write"
        );
        // A read-ahead hit is decoded once.
        let mut r = Hdd::new(&spec(false), 300e6);
        let mut t = 0;
        for op in 0..n {
            t = r
                .submit(t, op, u64::from(op) * 8192, 8192, false)
                .unwrap()
                .done_ns;
            r.complete(t);
        }
        assert!(t / u64::from(n) < 190_000, "{}", t / u64::from(n));
    }

    #[test]
    fn a_write_that_does_not_fit_beside_the_one_being_written_misses_a_revolution() {
        // Two 1 MiB writes queued at once. With 8 MiB of write buffer the second's
        // data is in before the first ends and it follows on the platter; with 1 MiB
        // it comes over the link only once the first is written, and the sector has
        // gone by.
        let run = |buffer: u64| {
            let mut s = spec(false);
            s.write_buffer_bytes = Some(buffer);
            let mut d = Hdd::new(&s, 300e6);
            queued_writes(&mut d, 2, 1 << 20, 32)
        };
        let (roomy, tight) = (run(8 << 20), run(1 << 20));
        let rev = Hdd::new(&spec(false), 300e6).revolution_ns();
        assert!(
            tight > roomy + rev * 9 / 10 && tight < roomy + rev * 11 / 10,
            "{tight} vs {roomy}"
        );
    }
    /// The study's drive (hitachi-deskstar-250g): 0.22 ms command overhead, 142 MB/s
    /// on the outer tracks, 1 MiB of write buffer, write cache off.
    fn deskstar() -> HddSpec {
        HddSpec {
            command_overhead_ns: 220_000,
            media_rate_bytes_per_s_outer: 142e6,
            media_rate_bytes_per_s_inner: 75e6,
            write_buffer_bytes: Some(1 << 20),
            ..spec(false)
        }
    }

    /// MB/s of `count` sequential writes of `len` bytes with `depth` outstanding, as
    /// ATTO keeps its queue: each completion is followed by the next write
    /// `turnaround_ns` later (controller and host), events taken in time order.
    fn sequential_writes_at_depth(
        d: &mut Hdd,
        len: u64,
        depth: u32,
        turnaround_ns: u64,
        count: u32,
    ) -> f64 {
        let mut arrivals: VecDeque<u64> = (0..depth.min(count)).map(|_| 0).collect();
        let mut scheduled = depth.min(count);
        let (mut submitted, mut end) = (0u32, 0u64);
        let mut running: Option<Started> = None;
        loop {
            let done = running.map(|s| s.done_ns);
            let arrival = arrivals.front().copied();
            if let Some(t) = done.filter(|&t| arrival.is_none_or(|a| t <= a)) {
                running = d.complete(t);
                end = t;
                if scheduled < count {
                    arrivals.push_back(t + turnaround_ns);
                    scheduled += 1;
                }
            } else if let Some(a) = arrival {
                arrivals.pop_front();
                let offset = u64::from(submitted) * len;
                if let Some(s) = d.submit(a, submitted, offset, len, true) {
                    running = Some(s);
                }
                submitted += 1;
            } else {
                break;
            }
        }
        f64::from(count) * len as f64 / end as f64 * 1e3
    }

    #[test]
    fn queued_sequential_writes_without_write_cache_stream_once_a_write_outlasts_the_turnaround() {
        // Two writes outstanding, 60 us of controller and host between a completion
        // and the next command: the next write is decoded (0.22 ms) and its data in
        // while the one ahead of it is on the platter, so from 64 KiB (0.46 ms of
        // media) on they follow each other at the media rate. Booking a second command
        // overhead per write (its status) held 64 KiB writes to two per revolution,
        // 14 MB/s, while 128 KiB ones streamed at 142.
        let media_mbps = 142.0;
        for kib in [64, 128, 256, 512] {
            let mbps = sequential_writes_at_depth(
                &mut Hdd::new(&deskstar(), 300e6),
                kib << 10,
                2,
                60_000,
                200,
            );
            assert!(mbps > 0.9 * media_mbps, "{kib} KiB at QD 2: {mbps} MB/s");
        }
        // 32 KiB take 0.23 ms of media, less than the 0.28 ms from a completion to the
        // next command's decode: the next write's first sector has gone by, and each
        // pair of writes costs a revolution. This is the drive's own limit at QD 2 (a
        // sector passed is a revolution away), not the firmware's.
        let mbps =
            sequential_writes_at_depth(&mut Hdd::new(&deskstar(), 300e6), 32 << 10, 2, 60_000, 200);
        assert!(mbps < 0.2 * media_mbps, "32 KiB at QD 2: {mbps} MB/s");
    }

    #[test]
    fn deeper_queues_stream_writes_whose_media_time_exceeds_a_command_overhead() {
        // At QD 4 three writes are ahead of each new command, so only the firmware's
        // decode rate (one command per 0.22 ms) limits streaming: 32 KiB writes (0.23 ms
        // of media) stream, 16 KiB ones (0.12 ms) cannot and go in bursts.
        let run = |kib: u64| {
            sequential_writes_at_depth(&mut Hdd::new(&deskstar(), 300e6), kib << 10, 4, 60_000, 400)
        };
        let (small, streaming) = (run(16), run(32));
        assert!(streaming > 0.9 * 142.0, "32 KiB at QD 4: {streaming} MB/s");
        assert!(small < 0.5 * 142.0, "16 KiB at QD 4: {small} MB/s");
    }
}
