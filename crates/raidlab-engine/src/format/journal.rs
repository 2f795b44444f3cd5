//! The write journal: closes the RAID write hole (md's `--write-journal`).
//!
//! Without it, a crash between a stripe's data write and its parity write leaves parity
//! that disagrees with the data; the write-intent bitmap repairs that at the next start,
//! but only while every member is present. If a member fails before the resync, its
//! blocks are rebuilt from the stale parity: data written and flushed long before the
//! crash comes back wrong. With a journal every write's member extents (new data, new
//! parity or copies) are first appended to the journal as one checksummed record and
//! synced; only then do the members get them. Assembling replays the records in order
//! onto the members present, so each stripe holds either all of a write or none of it,
//! whichever members fail afterwards.
//!
//! ```text
//! journal file: header (4 KiB) │ record │ record │ ... │ (free)
//! header:  magic b"RLJRNL01" │ array uuid u128 │ generation u64 │ capacity u64 │ ... │ crc32c
//! record:  magic u32 "JREC" │ extents u32 │ generation u64 │ seq u64 │ payload u64 │ crc32c u32 │ 0 u32
//!          extents × (member u32, 0 u32, offset u64, len u64) │ the extents' bytes
//! ```
//!
//! A record counts only when its magic, generation, sequence number and CRC32C (of
//! header and payload) all match: a torn tail ends the log. A checkpoint (journal full,
//! or a clean stop) syncs the members and bumps the generation, which retires every
//! record at once. Concurrent writers share syncs (group commit): one sync covers every
//! record written, gap-free, before it started.

use crate::error::{io_err, Error, Result};
use crc32c::crc32c;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard};

/// Bytes of the journal header.
pub const HEADER_BYTES: u64 = 4096;
const MAGIC: [u8; 8] = *b"RLJRNL01";
/// Allocates every block of a journal file left sparse (made by `create --sparse`
/// before journals were always allocated): appending to a hole needs free space, so on
/// a full filesystem every write would be refused, rewrites of allocated member blocks
/// too. Without the space (or `fallocate`) it says so in one line and goes on: writes
/// may then answer ENOSPC until there is room. Block devices have no holes.
fn allocate_whole(file: &File, path: &Path, capacity: u64) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else { return };
    if !meta.file_type().is_file() || meta.blocks().saturating_mul(512) >= capacity {
        return;
    }
    let flags = rustix::fs::FallocateFlags::KEEP_SIZE;
    if let Err(e) = rustix::fs::fallocate(file, flags, 0, capacity) {
        eprintln!(
            "raidlab-engine: {}: the write journal is sparse and cannot be allocated ({e}); \
             writes may be refused for lack of space until {capacity} B fit",
            path.display()
        );
    }
}

/// Whether `head` (a file's first bytes) starts with a write journal's header.
pub fn is_journal_header(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}
const RECORD_MAGIC: u32 = 0x4345_524A; // "JREC"
const RECORD_HEADER_BYTES: usize = 40;
const EXTENT_BYTES: usize = 24;

/// One member extent of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    /// Member role the bytes belong to.
    pub member: u32,
    /// Offset in bytes into the member's data area (after its metadata area).
    pub offset_bytes: u64,
    /// The bytes to write there, as the write phase would.
    pub data: Vec<u8>,
}

/// Where the log stands. Records are placed in order at `offset` but written by their
/// writers concurrently; `written_end` is the end of the gap-free prefix written so far
/// and `durable_end` the end of the prefix a finished sync covers. A writer proceeds
/// to the members only once `durable_end` passes its record, so every record a replay
/// could miss (after a gap) belongs to a write no member has seen.
struct Tail {
    generation: u64,
    next_seq: u64,
    offset: u64,
    written_end: u64,
    /// Records written beyond a gap: start -> end.
    written_later: BTreeMap<u64, u64>,
    durable_end: u64,
    syncing: bool,
    /// A journal write or sync failed: nothing more is acknowledged.
    broken: bool,
}

impl Tail {
    fn new(generation: u64) -> Self {
        Self {
            generation,
            next_seq: 0,
            offset: HEADER_BYTES,
            written_end: HEADER_BYTES,
            written_later: BTreeMap::new(),
            durable_end: HEADER_BYTES,
            syncing: false,
            broken: false,
        }
    }

    fn written(&mut self, start: u64, end: u64) {
        if start != self.written_end {
            self.written_later.insert(start, end);
            return;
        }
        self.written_end = end;
        while let Some(e) = self.written_later.remove(&self.written_end) {
            self.written_end = e;
        }
    }
}

/// An open journal (file or block device).
pub struct Journal {
    file: File,
    path: PathBuf,
    uuid: u128,
    capacity: u64,
    tail: Mutex<Tail>,
    /// Signalled when a sync finishes (group commit: one sync covers every record
    /// written before it started).
    synced: Condvar,
    /// Held shared from a record's append until its member writes are done; a
    /// checkpoint takes it exclusively so it never retires a record still in flight.
    gate: RwLock<()>,
}

/// A record of `extents` with its header left blank: the extent table, then the
/// bytes of each extent (`payload` bytes in all, table included).
fn record_body(extents: &[(u32, u64, &[u8])], payload: usize) -> Vec<u8> {
    let table = extents.len() * EXTENT_BYTES;
    let mut rec = vec![0u8; RECORD_HEADER_BYTES + payload];
    let mut data_at = RECORD_HEADER_BYTES + table;
    for (i, (member, offset, data)) in extents.iter().enumerate() {
        let e = RECORD_HEADER_BYTES + i * EXTENT_BYTES;
        rec[e..e + 4].copy_from_slice(&member.to_le_bytes());
        rec[e + 8..e + 16].copy_from_slice(&offset.to_le_bytes());
        rec[e + 16..e + 24].copy_from_slice(&(data.len() as u64).to_le_bytes());
        rec[data_at..data_at + data.len()].copy_from_slice(data);
        data_at += data.len();
    }
    rec
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Journal {
    /// Creates (or overwrites) a journal of `capacity_bytes` for array `uuid`.
    /// The file is created mode 0600 and claimed as a member is (see
    /// [`crate::owner::claim`]) before anything is written to it.
    pub fn create(path: &Path, uuid: u128, capacity_bytes: u64) -> Result<Self> {
        let file = crate::owner::open_member_file(path, true)?;
        crate::owner::claim(&file, path)?;
        let is_device = file
            .metadata()
            .map(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()))
            .unwrap_or(false);
        if !is_device {
            file.set_len(capacity_bytes)
                .map_err(io_err(path, "size journal"))?;
        }
        let j = Self {
            file,
            path: path.to_path_buf(),
            uuid,
            capacity: capacity_bytes,
            tail: Mutex::new(Tail::new(0)),
            synced: Condvar::new(),
            gate: RwLock::new(()),
        };
        j.write_header(1)?;
        Ok(j)
    }

    /// Opens the journal of array `uuid`; refuses another array's journal or a file that
    /// is not a journal. A journal on a block device is opened `O_EXCL`, as members are
    /// ([`crate::owner::open_member_file`]): the kernel's exclusive claim keeps another
    /// `create --journal` (or mkfs) from opening the live journal to overwrite it.
    pub fn open(path: &Path, uuid: u128) -> Result<Self> {
        let file = crate::owner::open_member_file(path, false)?;
        let mut h = [0u8; HEADER_BYTES as usize];
        file.read_exact_at(&mut h, 0).map_err(|e| Error::Member {
            path: path.to_path_buf(),
            message: format!("cannot read the journal header: {e}"),
        })?;
        let bad = |m: &str| Error::Member {
            path: path.to_path_buf(),
            message: m.to_string(),
        };
        if h[..8] != MAGIC {
            return Err(bad("not a raidlab write journal (magic missing)"));
        }
        let n = HEADER_BYTES as usize;
        if u32_at(&h, n - 4) != crc32c(&h[..n - 4]) {
            return Err(bad("journal header checksum mismatch"));
        }
        let owner = u128::from_le_bytes(h[8..24].try_into().expect("16 bytes"));
        if owner != uuid {
            return Err(bad(&format!(
                "the write journal of array {owner:032x}, not {uuid:032x}"
            )));
        }
        let capacity = u64_at(&h, 32);
        allocate_whole(&file, path, capacity);
        Ok(Self {
            file,
            path: path.to_path_buf(),
            uuid,
            capacity,
            tail: Mutex::new(Tail::new(u64_at(&h, 24))),
            synced: Condvar::new(),
            gate: RwLock::new(()),
        })
    }

    /// Takes the exclusive claim on the journal file for as long as this journal is
    /// open, as every member has (see [`crate::owner::claim`]): a second server, or a
    /// `create` or `replace` naming it, is refused.
    pub fn claim(&self) -> Result<()> {
        crate::owner::claim(&self.file, &self.path)
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the journal.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    /// The largest record: what one write of `request_bytes` on `members` members can
    /// put in it (every member written, plus headers).
    pub fn record_bytes_max(request_bytes: u64, members: u32) -> u64 {
        let extents = u64::from(members) * (request_bytes.div_ceil(512) + 1);
        RECORD_HEADER_BYTES as u64
            + request_bytes * u64::from(members)
            + extents * EXTENT_BYTES as u64
    }

    fn write_header(&self, generation: u64) -> Result<()> {
        let mut h = [0u8; HEADER_BYTES as usize];
        h[..8].copy_from_slice(&MAGIC);
        h[8..24].copy_from_slice(&self.uuid.to_le_bytes());
        h[24..32].copy_from_slice(&generation.to_le_bytes());
        h[32..40].copy_from_slice(&self.capacity.to_le_bytes());
        let n = HEADER_BYTES as usize;
        let crc = crc32c(&h[..n - 4]);
        h[n - 4..].copy_from_slice(&crc.to_le_bytes());
        self.file
            .write_all_at(&h, 0)
            .and_then(|()| self.file.sync_data())
            .map_err(io_err(&self.path, "write journal header"))?;
        *self.tail.lock().expect("journal tail") = Tail::new(generation);
        Ok(())
    }

    /// The valid records of the current generation, in order (a torn or stale record
    /// ends the log).
    pub fn records(&self) -> Result<Vec<Vec<Extent>>> {
        let generation = self.tail.lock().expect("journal tail").generation;
        let mut out = Vec::new();
        let mut at = HEADER_BYTES;
        let mut seq = 0u64;
        let mut h = [0u8; RECORD_HEADER_BYTES];
        while at + RECORD_HEADER_BYTES as u64 <= self.capacity {
            if self.file.read_exact_at(&mut h, at).is_err() {
                break;
            }
            let payload = u64_at(&h, 24);
            let extents = u32_at(&h, 4) as usize;
            if u32_at(&h, 0) != RECORD_MAGIC
                || u64_at(&h, 8) != generation
                || u64_at(&h, 16) != seq
                || at + RECORD_HEADER_BYTES as u64 + payload > self.capacity
                || (extents * EXTENT_BYTES) as u64 > payload
            {
                break;
            }
            let mut body = vec![0u8; payload as usize];
            if self
                .file
                .read_exact_at(&mut body, at + RECORD_HEADER_BYTES as u64)
                .is_err()
            {
                break;
            }
            let stored = u32_at(&h, 32);
            let mut zeroed = h;
            zeroed[32..36].fill(0);
            let mut all = zeroed.to_vec();
            all.extend_from_slice(&body);
            if crc32c(&all) != stored {
                break;
            }
            let mut record = Vec::with_capacity(extents);
            let mut data_at = extents * EXTENT_BYTES;
            let mut ok = true;
            for i in 0..extents {
                let e = &body[i * EXTENT_BYTES..(i + 1) * EXTENT_BYTES];
                let len = u64_at(e, 16) as usize;
                if data_at + len > body.len() {
                    ok = false;
                    break;
                }
                record.push(Extent {
                    member: u32_at(e, 0),
                    offset_bytes: u64_at(e, 8),
                    data: body[data_at..data_at + len].to_vec(),
                });
                data_at += len;
            }
            if !ok {
                break;
            }
            out.push(record);
            seq += 1;
            at += RECORD_HEADER_BYTES as u64 + payload;
        }
        Ok(out)
    }

    /// Appends one record of `extents` and syncs it. `checkpoint` is called (with no
    /// record in flight) when the journal is full: it must make the members durable,
    /// after which the journal starts a new generation. The returned guard must live
    /// until the record's member writes are done.
    pub fn append<'a>(
        &'a self,
        extents: &[(u32, u64, &[u8])],
        checkpoint: impl Fn() -> Result<()>,
    ) -> Result<RwLockReadGuard<'a, ()>> {
        let table = extents.len() * EXTENT_BYTES;
        let payload = table + extents.iter().map(|e| e.2.len()).sum::<usize>();
        let bytes = (RECORD_HEADER_BYTES + payload) as u64;
        if HEADER_BYTES + bytes > self.capacity {
            return Err(Error::Input(format!(
                "write of {bytes} B does not fit the {} B journal {}",
                self.capacity,
                self.path.display()
            )));
        }
        let mut rec = record_body(extents, payload);
        loop {
            let guard = self.gate.read().expect("journal gate");
            let mut tail = self.tail.lock().expect("journal tail");
            if tail.offset + bytes <= self.capacity {
                rec[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
                rec[4..8].copy_from_slice(&(extents.len() as u32).to_le_bytes());
                rec[8..16].copy_from_slice(&tail.generation.to_le_bytes());
                rec[16..24].copy_from_slice(&tail.next_seq.to_le_bytes());
                rec[24..32].copy_from_slice(&(payload as u64).to_le_bytes());
                rec[32..36].fill(0);
                let crc = crc32c(&rec);
                rec[32..36].copy_from_slice(&crc.to_le_bytes());
                let start = tail.offset;
                let end = start + bytes;
                tail.offset = end;
                tail.next_seq += 1;
                drop(tail);
                let wrote = self.file.write_all_at(&rec, start);
                let mut tail = self.tail.lock().expect("journal tail");
                if let Err(e) = wrote {
                    tail.broken = true;
                    self.synced.notify_all();
                    return Err(io_err(&self.path, "append to journal")(e));
                }
                tail.written(start, end);
                self.wait_durable(tail, end)?;
                return Ok(guard);
            }
            drop(tail);
            drop(guard);
            let _exclusive = self.gate.write().expect("journal gate");
            // Another writer may have checkpointed while this one waited.
            if self.tail.lock().expect("journal tail").offset + bytes > self.capacity {
                checkpoint()?;
                self.retire()?;
            }
        }
    }

    /// Returns once the journal is durable up to `end` (synced by this writer, or by
    /// another whose sync covers it: one `fdatasync` serves every record written
    /// before it started); refused once a write or sync has failed.
    fn wait_durable<'t>(&'t self, mut tail: MutexGuard<'t, Tail>, end: u64) -> Result<()> {
        loop {
            if tail.broken {
                return Err(Error::Input(format!(
                    "journal {}: an earlier write or sync failed",
                    self.path.display()
                )));
            }
            if tail.durable_end >= end {
                return Ok(());
            }
            if tail.syncing {
                tail = self.synced.wait(tail).expect("journal tail");
                continue;
            }
            tail.syncing = true;
            let target = tail.written_end;
            drop(tail);
            let r = self.file.sync_data();
            tail = self.tail.lock().expect("journal tail");
            tail.syncing = false;
            match r {
                Ok(()) => tail.durable_end = tail.durable_end.max(target),
                Err(_) => tail.broken = true,
            }
            self.synced.notify_all();
        }
    }

    /// Starts a new generation: every record so far is retired. Call only when the
    /// members hold everything the records say (synced).
    pub fn retire(&self) -> Result<()> {
        let generation = self.tail.lock().expect("journal tail").generation;
        self.write_header(generation + 1)
    }
}
