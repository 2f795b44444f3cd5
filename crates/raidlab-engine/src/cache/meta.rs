//! The cache tier's metadata on the cache mirror: a header and a log of which backing
//! block every cache slot holds, with CRC32C records like the write journal's
//! ([`crate::format::journal`]), replayed when the tier is opened.
//!
//! ```text
//! cache mirror: header (4 KiB) │ log area 0 │ log area 1 │ (to 1 MiB) │ slot 0 │ slot 1 │ ...
//! header:  magic b"RLCACHE1" │ version u32 │ policy u8 │ backing uuid u128 │ block_bytes u64
//!          │ slots u64 │ area_bytes u64 │ data_offset u64 │ region_bytes u64 │ ... │ crc32c
//! record (64 B): magic "CREC" │ kind u8 │ area u8 │ generation u64 │ seq u64 │ block u64 │ slot u64
//!          │ data_crc u32 │ count u32 │ 0 │ crc32c of bytes 0..60
//! ```
//!
//! An area starts with a snapshot: a `Snap` record giving its generation and the count
//! of `Map` records that follow it (every slot in use when it was written); then come
//! the changes since, in order. Only the area with the highest generation whose
//! snapshot is whole counts, and in it only the gap-free run of records with its
//! generation and consecutive sequence numbers (a torn tail ends it). When an area is
//! full the other one gets a new snapshot with the next generation; the old area is
//! left as it is until then, so a torn snapshot falls back to it.
//!
//! A `Map` record carries the CRC32C of the slot's data: replay keeps, for every block,
//! the newest mapping whose slot still holds those bytes, so a slot whose new data
//! never reached the mirror (a crash between the data and the record) does not hand
//! out bytes of another block. A slot is only ever reused once its old block is clean
//! on the backing array (destaged and synced), so losing an old claim loses nothing.

use crate::error::{Error, Result};
use crc32c::crc32c;
use std::collections::BTreeMap;

/// Bytes of the header.
pub const HEADER_BYTES: u64 = 4096;
/// Bytes of one log record.
pub const RECORD_BYTES: u64 = 64;
const MAGIC: [u8; 8] = *b"RLCACHE1";
const VERSION: u32 = 1;
const RECORD_MAGIC: u32 = 0x4345_5243; // "CREC"

/// What a record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An area's first record: `count` `Map` records of the snapshot follow.
    Snap,
    /// `slot` holds `block`, dirty (newer than the backing array).
    MapDirty,
    /// `slot` holds `block`, the same bytes as the backing array.
    MapClean,
    /// `block` at `slot` was destaged: now clean.
    Clean,
    /// `block` is no longer cached (evicted, or overwritten on the backing array).
    Drop,
}

impl Kind {
    const ALL: [Self; 5] = [
        Self::Snap,
        Self::MapDirty,
        Self::MapClean,
        Self::Clean,
        Self::Drop,
    ];
    fn code(self) -> u8 {
        Self::ALL.iter().position(|&k| k == self).expect("code") as u8 + 1
    }
}

/// One log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// What it says.
    pub kind: Kind,
    /// Backing block index (offset / block_bytes).
    pub block: u64,
    /// Cache slot.
    pub slot: u64,
    /// CRC32C of the slot's bytes (`Map*` records).
    pub data_crc: u32,
    /// Records of the snapshot (`Snap`).
    pub count: u32,
    /// Which area of the policy the slot belongs to (`Map*`): 0 main, 1 RRC, 2 RWC.
    pub area: u8,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Record {
    /// A `MapDirty` / `MapClean` record: `slot` holds line `block`, whose bytes have CRC32C
    /// `data_crc`, in `area`.
    pub fn map(block: u64, slot: u64, dirty: bool, data_crc: u32, area: u8) -> Self {
        Self {
            kind: if dirty {
                Kind::MapDirty
            } else {
                Kind::MapClean
            },
            block,
            slot,
            data_crc,
            count: 0,
            area,
        }
    }

    /// The 64-byte image with `generation` and `seq`.
    pub fn encode(&self, generation: u64, seq: u64) -> [u8; RECORD_BYTES as usize] {
        let mut b = [0u8; RECORD_BYTES as usize];
        b[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
        b[4] = self.kind.code();
        b[5] = self.area;
        b[8..16].copy_from_slice(&generation.to_le_bytes());
        b[16..24].copy_from_slice(&seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.block.to_le_bytes());
        b[32..40].copy_from_slice(&self.slot.to_le_bytes());
        b[40..44].copy_from_slice(&self.data_crc.to_le_bytes());
        b[44..48].copy_from_slice(&self.count.to_le_bytes());
        let crc = crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The record, its generation and sequence number, when `b` is a whole one.
    pub fn decode(b: &[u8]) -> Option<(Self, u64, u64)> {
        if b.len() < RECORD_BYTES as usize
            || u32_at(b, 0) != RECORD_MAGIC
            || u32_at(b, 60) != crc32c(&b[..60])
        {
            return None;
        }
        let kind = *Kind::ALL.get((b[4] as usize).checked_sub(1)?)?;
        Some((
            Self {
                kind,
                block: u64_at(b, 24),
                slot: u64_at(b, 32),
                data_crc: u32_at(b, 40),
                count: u32_at(b, 44),
                area: b[5],
            },
            u64_at(b, 8),
            u64_at(b, 16),
        ))
    }
}

/// The header: what the cache mirror holds and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Policy code (see `super::PolicyKind`).
    pub policy: u8,
    /// UUID of the array this cache fronts.
    pub backing_uuid: u128,
    /// Bytes of a cache block (a slot).
    pub block_bytes: u64,
    /// Slots in the data area.
    pub slots: u64,
    /// Bytes of each of the two log areas.
    pub area_bytes: u64,
    /// Where slot 0 starts on the cache mirror.
    pub data_offset_bytes: u64,
    /// The policy's log-structured region size (raidix).
    pub region_bytes: u64,
}

impl Header {
    /// The layout for `slots` slots of `block_bytes`: two areas, each room for a full
    /// snapshot and as many changes again (at least 1 MiB), data from the next MiB.
    pub fn layout(
        policy: u8,
        backing_uuid: u128,
        block_bytes: u64,
        cache_bytes: u64,
        region_bytes: u64,
    ) -> Self {
        let area_for = |slots: u64| {
            ((2 * slots + 1) * RECORD_BYTES)
                .max(1 << 20)
                .next_multiple_of(4096)
        };
        let mib = 1u64 << 20;
        // Slots fill what the header and log areas leave; the areas grow with the
        // slots, so solve by shrinking from the upper bound.
        let mut slots = cache_bytes / block_bytes;
        loop {
            let area = area_for(slots);
            let data = (HEADER_BYTES + 2 * area).next_multiple_of(mib);
            let fit = cache_bytes.saturating_sub(data) / block_bytes;
            if fit >= slots {
                return Self {
                    policy,
                    backing_uuid,
                    block_bytes,
                    slots,
                    area_bytes: area,
                    data_offset_bytes: data,
                    region_bytes,
                };
            }
            slots = fit;
        }
    }

    /// Where log area `k` starts on the cache mirror.
    pub fn area_offset_bytes(&self, k: usize) -> u64 {
        HEADER_BYTES + k as u64 * self.area_bytes
    }

    /// The 4 KiB image.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_BYTES as usize];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12] = self.policy;
        b[16..32].copy_from_slice(&self.backing_uuid.to_le_bytes());
        b[32..40].copy_from_slice(&self.block_bytes.to_le_bytes());
        b[40..48].copy_from_slice(&self.slots.to_le_bytes());
        b[48..56].copy_from_slice(&self.area_bytes.to_le_bytes());
        b[56..64].copy_from_slice(&self.data_offset_bytes.to_le_bytes());
        b[64..72].copy_from_slice(&self.region_bytes.to_le_bytes());
        let n = b.len();
        let crc = crc32c(&b[..n - 4]);
        b[n - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header image.
    pub fn decode(b: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::Input(format!("cache-members: {what}"));
        if b.len() < HEADER_BYTES as usize || b[0..8] != MAGIC {
            return Err(bad(
                "no raidlab cache header on the cache mirror (not a cache, or wiped)",
            ));
        }
        let n = HEADER_BYTES as usize;
        if u32_at(b, n - 4) != crc32c(&b[..n - 4]) {
            return Err(bad("cache header checksum mismatch"));
        }
        if u32_at(b, 8) != VERSION {
            return Err(bad(&format!(
                "cache header version {}, this build reads {VERSION}",
                u32_at(b, 8)
            )));
        }
        let h = Self {
            policy: b[12],
            backing_uuid: u128::from_le_bytes(b[16..32].try_into().expect("16 bytes")),
            block_bytes: u64_at(b, 32),
            slots: u64_at(b, 40),
            area_bytes: u64_at(b, 48),
            data_offset_bytes: u64_at(b, 56),
            region_bytes: u64_at(b, 64),
        };
        if h.block_bytes == 0
            || !h.block_bytes.is_multiple_of(512)
            || !h.area_bytes.is_multiple_of(4096)
        {
            return Err(bad("cache header fields out of range"));
        }
        Ok(h)
    }
}

/// What replaying one area found: its generation and records in order.
#[derive(Debug, Default)]
pub struct AreaLog {
    /// The area's generation.
    pub generation: u64,
    /// Next sequence number.
    pub next_seq: u64,
    /// Bytes used (the next record goes here).
    pub used_bytes: u64,
    /// The records after the `Snap`, in order.
    pub records: Vec<Record>,
}

/// Reads an area image: `None` unless it begins with a whole snapshot.
pub fn read_area(area: &[u8]) -> Option<AreaLog> {
    let (snap, generation, seq0) = Record::decode(area)?;
    if snap.kind != Kind::Snap {
        return None;
    }
    let mut log = AreaLog {
        generation,
        next_seq: seq0 + 1,
        used_bytes: RECORD_BYTES,
        records: Vec::new(),
    };
    let mut at = RECORD_BYTES as usize;
    while at + RECORD_BYTES as usize <= area.len() {
        match Record::decode(&area[at..]) {
            Some((r, g, s)) if g == generation && s == log.next_seq && r.kind != Kind::Snap => {
                log.records.push(r);
                log.next_seq += 1;
                at += RECORD_BYTES as usize;
                log.used_bytes = at as u64;
            }
            _ => break,
        }
    }
    (log.records.len() >= snap.count as usize).then_some(log)
}

/// One cached block as replay leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Backing block index.
    pub block: u64,
    /// Cache slot.
    pub slot: u64,
    /// Newer than the backing array.
    pub dirty: bool,
    /// CRC32C of the slot's bytes.
    pub data_crc: u32,
    /// The policy area (as in [`Record::area`]).
    pub area: u8,
    /// Position of the record that mapped it (replay order: a snapshot lists entries
    /// in the policy's order, LRU first or regions oldest first).
    pub seq: u64,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    seq: u64,
    slot: u64,
    dirty: bool,
    data_crc: u32,
    area: u8,
}

/// The cached blocks the records describe: for every block the newest mapping whose
/// slot still holds its bytes (`slot_crc(slot)`: CRC32C of the slot's bytes now); a
/// slot two blocks claim goes to the newer claim. In replay order (`seq`).
pub fn resolve(
    records: &[Record],
    mut slot_crc: impl FnMut(u64) -> Result<u32>,
) -> Result<Vec<Entry>> {
    let mut cands: BTreeMap<u64, Vec<Candidate>> = BTreeMap::new();
    for (seq, r) in records.iter().enumerate() {
        let seq = seq as u64;
        match r.kind {
            Kind::MapDirty | Kind::MapClean => cands.entry(r.block).or_default().push(Candidate {
                seq,
                slot: r.slot,
                dirty: r.kind == Kind::MapDirty,
                data_crc: r.data_crc,
                area: r.area,
            }),
            Kind::Clean => {
                if let Some(c) = cands
                    .get_mut(&r.block)
                    .and_then(|v| v.iter_mut().rev().find(|c| c.slot == r.slot))
                {
                    c.dirty = false;
                }
            }
            Kind::Drop => {
                cands.remove(&r.block);
            }
            Kind::Snap => {}
        }
    }
    let mut crcs: BTreeMap<u64, u32> = BTreeMap::new();
    // slot -> (seq, block, entry) of the newest claim whose bytes match.
    let mut owner: BTreeMap<u64, (u64, Entry)> = BTreeMap::new();
    for (&block, list) in &cands {
        for c in list.iter().rev() {
            let crc = match crcs.get(&c.slot) {
                Some(&v) => v,
                None => {
                    let v = slot_crc(c.slot)?;
                    crcs.insert(c.slot, v);
                    v
                }
            };
            if crc != c.data_crc {
                continue;
            }
            let e = Entry {
                block,
                slot: c.slot,
                dirty: c.dirty,
                data_crc: c.data_crc,
                area: c.area,
                seq: c.seq,
            };
            match owner.get(&c.slot) {
                Some((seq, _)) if *seq > c.seq => {}
                _ => {
                    owner.insert(c.slot, (c.seq, e));
                }
            }
            break;
        }
    }
    let mut out: Vec<Entry> = owner.into_values().map(|(_, e)| e).collect();
    out.sort_by_key(|e| e.seq);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(block: u64, slot: u64, dirty: bool, crc: u32) -> Record {
        Record::map(block, slot, dirty, crc, 0)
    }

    fn area(records: &[Record], generation: u64, snap_count: u32) -> Vec<u8> {
        let mut b = vec![0u8; 64 * 64];
        let snap = Record {
            kind: Kind::Snap,
            block: 0,
            slot: 0,
            data_crc: 0,
            count: snap_count,
            area: 0,
        };
        b[..64].copy_from_slice(&snap.encode(generation, 10));
        for (i, r) in records.iter().enumerate() {
            let at = 64 * (i + 1);
            b[at..at + 64].copy_from_slice(&r.encode(generation, 11 + i as u64));
        }
        b
    }

    #[test]
    fn a_record_round_trips_and_a_flipped_bit_voids_it() {
        let r = map(7, 3, true, 0xdead_beef);
        let mut b = r.encode(4, 9);
        assert_eq!(Record::decode(&b), Some((r, 4, 9)));
        b[30] ^= 1;
        assert_eq!(Record::decode(&b), None);
    }

    #[test]
    fn replay_stops_at_a_torn_record_and_at_an_old_generation() {
        let recs = [map(1, 0, true, 1), map(2, 1, true, 2), map(3, 2, true, 3)];
        let mut b = area(&recs, 5, 0);
        b[64 * 2 + 5] ^= 0xff; // the second record torn: the third, whole, is past the gap
        assert_eq!(read_area(&b).unwrap().records.len(), 1);
        let old = area(&recs, 4, 0);
        let mut mixed = area(&recs[..1], 5, 0);
        mixed[128..192].copy_from_slice(&old[128..192]); // a record of generation 4
        assert_eq!(read_area(&mixed).unwrap().records.len(), 1);
    }

    #[test]
    fn a_torn_snapshot_voids_the_area() {
        let recs = [map(1, 0, true, 1), map(2, 1, true, 2)];
        let mut b = area(&recs, 5, 2);
        assert!(read_area(&b).is_some());
        b[64 * 2 + 1] ^= 1;
        assert!(read_area(&b).is_none());
    }

    #[test]
    fn the_newest_mapping_whose_bytes_match_wins() {
        // Block 1 written to slot 0, then rewritten to slot 1 whose bytes never landed:
        // the older mapping still holds its bytes and is the one kept.
        let recs = [map(1, 0, true, 10), map(1, 1, true, 11)];
        let e = resolve(&recs, |s| Ok([10, 99][s as usize])).unwrap();
        assert_eq!(
            e,
            vec![Entry {
                block: 1,
                slot: 0,
                dirty: true,
                data_crc: 10,
                area: 0,
                seq: 0
            }]
        );
        let e = resolve(&recs, |s| Ok([10, 11][s as usize])).unwrap();
        assert_eq!(e[0].slot, 1);
    }

    #[test]
    fn clean_and_drop_records_apply_to_their_block() {
        let recs = [
            map(1, 0, true, 10),
            Record {
                kind: Kind::Clean,
                ..map(1, 0, false, 0)
            },
            map(2, 1, true, 11),
            Record {
                kind: Kind::Drop,
                ..map(2, 1, false, 0)
            },
        ];
        let e = resolve(&recs, |s| Ok([10, 11][s as usize])).unwrap();
        assert_eq!(
            e,
            vec![Entry {
                block: 1,
                slot: 0,
                dirty: false,
                data_crc: 10,
                area: 0,
                seq: 0
            }]
        );
    }

    #[test]
    fn a_reused_slot_goes_to_the_newer_claim() {
        // Zero blocks: both claims match the bytes; the newer one owns the slot.
        let recs = [map(1, 0, false, 5), map(2, 0, true, 5)];
        let e = resolve(&recs, |_| Ok(5)).unwrap();
        assert_eq!(
            e,
            vec![Entry {
                block: 2,
                slot: 0,
                dirty: true,
                data_crc: 5,
                area: 0,
                seq: 1
            }]
        );
    }

    #[test]
    fn the_header_round_trips_and_its_slots_fit() {
        let h = Header::layout(1, 42, 4096, 64 << 20, 4 << 20);
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
        assert!(h.data_offset_bytes + h.slots * 4096 <= 64 << 20);
        assert!(h.area_bytes >= (2 * h.slots + 1) * RECORD_BYTES);
    }
}
