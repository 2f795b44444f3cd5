//! The cache mirror: an array of its own (RAID 1 of 2 members, RAID 10 of 4 or more)
//! holding the header, the metadata log and the slots (see [`super::meta`]). Being an
//! [`Array`], it survives a member failure as any mirror does, dirty slots included.

use super::meta::{self, AreaLog, Entry, Header, Kind, Record, RECORD_BYTES};
use crate::error::{Error, Result};
use crate::{Array, CreateOptions};
use raidlab_layout::Level;
use std::path::PathBuf;
use std::sync::Arc;

/// Chunk of the cache mirror (RAID 10 stripes its slots over the pairs).
const MIRROR_CHUNK_BYTES: u64 = 64 << 10;

/// The level of a cache mirror of `members` members.
pub fn mirror_level(members: usize) -> Result<Level> {
    match members {
        2 => Ok(Level::Raid1),
        n if n >= 4 && n % 2 == 0 => Ok(Level::Raid10),
        n => Err(Error::Input(format!(
            "--cache-members: 2 (RAID 1) or an even number of 4 or more (RAID 10), got {n}"
        ))),
    }
}

/// Where the log is written next.
struct LogTail {
    area: usize,
    generation: u64,
    next_seq: u64,
    used_bytes: u64,
    /// The current area's image from its start to `used_bytes` (sector-aligned writes
    /// are cut from it).
    image: Vec<u8>,
}

/// The cache mirror with its header and log.
pub struct Store {
    mirror: Arc<Array>,
    header: Header,
    tail: LogTail,
    /// Records appended since the last sync of the mirror (what a FLUSH must sync).
    unsynced: bool,
}

impl Store {
    /// Creates a cache mirror on `paths` (files created or extended to `member_bytes`
    /// when given, preallocated unless `sparse`) for the array `backing_uuid`, with an
    /// empty log.
    // The cache's geometry and how its files are made, each needed once, here.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        paths: &[PathBuf],
        member_bytes: Option<u64>,
        backing_uuid: u128,
        policy: u8,
        block_bytes: u64,
        region_bytes: u64,
        force: crate::format::probe::Overwrite,
        sparse: bool,
    ) -> Result<Self> {
        let mut opts =
            CreateOptions::new(mirror_level(paths.len())?, MIRROR_CHUNK_BYTES, member_bytes);
        opts.force = force;
        opts.sparse = sparse;
        let mirror = Arc::new(Array::create(paths, &opts)?);
        let header = Header::layout(
            policy,
            backing_uuid,
            block_bytes,
            mirror.capacity_bytes(),
            region_bytes,
        );
        if header.slots < 16 {
            return Err(Error::Input(format!(
                "cache-size: the cache mirror holds {} B, too small for its log and 16 slots of {block_bytes} B",
                mirror.capacity_bytes()
            )));
        }
        mirror.write(0, &header.encode(), false)?;
        // Members reused (--force-overwrite) may hold an older cache's log: neither area counts
        // until this one's first snapshot.
        for k in 0..2 {
            mirror.write(header.area_offset_bytes(k), &[0u8; 512], false)?;
        }
        let mut store = Self {
            mirror,
            header,
            tail: LogTail {
                area: 1,
                generation: 0,
                next_seq: 0,
                used_bytes: 0,
                image: Vec::new(),
            },
            unsynced: false,
        };
        store.snapshot(&[])?;
        store.mirror.flush()?;
        Ok(store)
    }

    /// Assembles the cache mirror on `paths`, checks it belongs to `backing_uuid`, and
    /// replays its log: the cached blocks, sorted by block. A new snapshot of them
    /// starts the next generation in the other area.
    ///
    /// `paths` may be the surviving members of a degraded mirror (a lost cache SSD left
    /// out): the mirror's superblocks know how many it has, and any one copy of a pair
    /// holds every slot and the log, dirty lines included. It is then served degraded
    /// (said on stderr) until `replace-cache` rebuilds the lost member onto a new one.
    pub fn open(paths: &[PathBuf], backing_uuid: u128) -> Result<(Self, Vec<Entry>)> {
        refuse_blank_members(paths)?;
        let mirror = Arc::new(Array::assemble(paths)?);
        mirror_level(mirror.geometry().members() as usize)?;
        let lost = mirror.failed();
        if !lost.is_empty() {
            eprintln!(
                "raidlab-engine: cache mirror degraded: member(s) {lost} missing or failed; \
                 every line is served from the others; `replace-cache NEW` rebuilds one onto \
                 a new cache member"
            );
        }
        // An unclean stop may have left the copies of a slot or log sector apart: make
        // them agree before reading anything (either copy is a state the log allows).
        if let Some((regions, _)) = mirror.resync_dirty_regions()? {
            eprintln!("raidlab-engine: cache mirror: resynced {regions} dirty bitmap regions");
        }
        let mut hb = vec![0u8; meta::HEADER_BYTES as usize];
        mirror.read(0, &mut hb)?;
        let header = Header::decode(&hb)?;
        if header.backing_uuid != backing_uuid {
            return Err(Error::Input(format!(
                "--cache-members: the cache of array {:032x}, not of this one ({backing_uuid:032x})",
                header.backing_uuid
            )));
        }
        let mut best: Option<(usize, AreaLog)> = None;
        for k in 0..2 {
            let mut image = vec![0u8; header.area_bytes as usize];
            read_big(&mirror, header.area_offset_bytes(k), &mut image)?;
            if let Some(log) = meta::read_area(&image) {
                if best
                    .as_ref()
                    .is_none_or(|(_, b)| log.generation > b.generation)
                {
                    best = Some((k, log));
                }
            }
        }
        let (area, log) = best.ok_or_else(|| {
            Error::Input(
                "--cache-members: neither log area of the cache holds a whole snapshot".into(),
            )
        })?;
        let mut store = Self {
            mirror,
            header,
            tail: LogTail {
                area,
                generation: log.generation,
                next_seq: log.next_seq,
                used_bytes: log.used_bytes,
                image: Vec::new(),
            },
            unsynced: false,
        };
        let mut buf = vec![0u8; header.block_bytes as usize];
        let entries = meta::resolve(&log.records, |slot| {
            if slot >= header.slots {
                return Ok(!0);
            }
            store.read_slot(slot, &mut buf)?;
            Ok(crc32c::crc32c(&buf))
        })?;
        store.snapshot(&entries)?;
        store.mirror.flush()?;
        Ok((store, entries))
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The mirror array (for status, failing a member, closing, its control socket).
    pub fn mirror(&self) -> &Arc<Array> {
        &self.mirror
    }

    /// Reads slot `slot` into `buf` (one block).
    pub fn read_slot(&self, slot: u64, buf: &mut [u8]) -> Result<()> {
        debug_assert!(slot < self.header.slots && buf.len() as u64 == self.header.block_bytes);
        self.mirror.read(self.slot_offset(slot), buf)
    }

    /// Reads `buf.len()` bytes of the data area from `offset_bytes` (the policy's
    /// cache-device offset: slot `s` is at `s * block_bytes`).
    pub fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        assert!(offset_bytes + buf.len() as u64 <= self.header.slots * self.header.block_bytes);
        read_big(
            &self.mirror,
            self.header.data_offset_bytes + offset_bytes,
            buf,
        )
    }

    /// Writes `data` into the data area at `offset_bytes` (as [`Store::read_at`]).
    pub fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> Result<()> {
        assert!(offset_bytes + data.len() as u64 <= self.header.slots * self.header.block_bytes);
        self.unsynced = true;
        write_big(
            &self.mirror,
            self.header.data_offset_bytes + offset_bytes,
            data,
        )
    }

    /// Records the policy's region size in the header (once, at creation: it depends
    /// on the slots the mirror has room for).
    pub fn set_region_bytes(&mut self, region_bytes: u64) -> Result<()> {
        self.header.region_bytes = region_bytes;
        self.mirror.write(0, &self.header.encode(), false)?;
        self.mirror.flush()
    }

    fn slot_offset(&self, slot: u64) -> u64 {
        self.header.data_offset_bytes + slot * self.header.block_bytes
    }

    /// Appends `records` to the log; when the area has no room for them, writes a
    /// snapshot of `entries()` (the state with them applied, in the policy's order) to
    /// the other area instead and syncs it.
    pub fn append(
        &mut self,
        records: &[Record],
        entries: impl FnOnce() -> Vec<Entry>,
    ) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let need = records.len() as u64 * RECORD_BYTES;
        if self.tail.used_bytes + need > self.header.area_bytes {
            return self.snapshot(&entries());
        }
        let start = self.tail.used_bytes;
        for r in records {
            let b = r.encode(self.tail.generation, self.tail.next_seq);
            self.tail.next_seq += 1;
            self.tail.image.extend_from_slice(&b);
        }
        self.tail.used_bytes += need;
        self.unsynced = true;
        self.write_log_range(start, self.tail.used_bytes)
    }

    /// Writes a snapshot of `entries` as the first records of the other area, with
    /// the next generation, and syncs the mirror: from then on the log continues there.
    pub fn snapshot(&mut self, entries: &[Entry]) -> Result<()> {
        let count = entries.len() as u64;
        if (count + 1) * RECORD_BYTES > self.header.area_bytes {
            return Err(Error::Input(
                "cache: snapshot larger than a log area".into(),
            ));
        }
        // What was written before must be on the mirror before the old area may be
        // outdated (its records may describe slots the snapshot no longer lists).
        self.mirror.flush()?;
        let generation = self.tail.generation + 1;
        let mut seq = 0;
        let mut image = Vec::with_capacity(((count + 1) * RECORD_BYTES) as usize);
        let snap = Record {
            kind: Kind::Snap,
            block: 0,
            slot: 0,
            data_crc: 0,
            count: count as u32,
            area: 0,
        };
        image.extend_from_slice(&snap.encode(generation, seq));
        for e in entries {
            seq += 1;
            let r = Record {
                kind: if e.dirty {
                    Kind::MapDirty
                } else {
                    Kind::MapClean
                },
                block: e.block,
                slot: e.slot,
                data_crc: e.data_crc,
                count: 0,
                area: e.area,
            };
            image.extend_from_slice(&r.encode(generation, seq));
        }
        self.tail = LogTail {
            area: 1 - self.tail.area,
            generation,
            next_seq: seq + 1,
            used_bytes: image.len() as u64,
            image,
        };
        self.write_log_range(0, self.tail.used_bytes)?;
        self.mirror.flush()?;
        self.unsynced = false;
        Ok(())
    }

    /// Writes the sectors of the current area covering `[start, end)`.
    fn write_log_range(&mut self, start: u64, end: u64) -> Result<()> {
        let lo = start / 512 * 512;
        let hi = end.next_multiple_of(512);
        let mut sectors = vec![0u8; (hi - lo) as usize];
        let have = (self.tail.image.len() as u64).min(hi);
        sectors[..(have - lo) as usize]
            .copy_from_slice(&self.tail.image[lo as usize..have as usize]);
        let at = self.header.area_offset_bytes(self.tail.area) + lo;
        write_big(&self.mirror, at, &sectors)
    }

    /// Makes every slot and record written so far durable.
    pub fn flush(&mut self) -> Result<()> {
        self.mirror.flush()?;
        self.unsynced = false;
        Ok(())
    }

    /// The log's generation: one more for every snapshot written (at creation, at
    /// every open, and each time an area fills).
    pub fn generation(&self) -> u64 {
        self.tail.generation
    }

    /// Whether records or slots were written since the last sync.
    pub fn unsynced(&self) -> bool {
        self.unsynced
    }
}

/// Reads a range of any length from `array` in pieces it takes.
pub(super) fn read_big(array: &Array, offset: u64, buf: &mut [u8]) -> Result<()> {
    for (i, piece) in buf
        .chunks_mut(crate::array::REQUEST_BYTES_MAX as usize)
        .enumerate()
    {
        array.read(offset + i as u64 * crate::array::REQUEST_BYTES_MAX, piece)?;
    }
    Ok(())
}

/// Writes a range of any length to `array` in pieces it takes.
pub(super) fn write_big(array: &Array, offset: u64, data: &[u8]) -> Result<()> {
    for (i, piece) in data
        .chunks(crate::array::REQUEST_BYTES_MAX as usize)
        .enumerate()
    {
        array.write(
            offset + i as u64 * crate::array::REQUEST_BYTES_MAX,
            piece,
            false,
        )?;
    }
    Ok(())
}

/// A cache member that is missing, or has no raidlab superblock (a blank replacement
/// for a lost SSD), is refused with what to do instead, before anything is opened for writing: assembling
/// it would not make it a copy, and a file that is not the cache's is not written.
fn refuse_blank_members(paths: &[PathBuf]) -> Result<()> {
    for p in paths {
        if !p.exists() {
            return Err(Error::Input(format!(
                "--cache-members: {} does not exist; a lost cache member is left out of \
                 --cache-members (the mirror runs degraded on the others), then \
                 `replace-cache NEW` rebuilds it onto a new one",
                p.display()
            )));
        }
        if crate::array::read_superblock(p).is_err() {
            return Err(Error::Input(format!(
                "--cache-members: {} carries no raidlab superblock; to use the cache without a \
                 lost member leave that member out (the mirror runs degraded), then \
                 `replace-cache {}` rebuilds the lost member onto it",
                p.display(),
                p.display()
            )));
        }
    }
    Ok(())
}
