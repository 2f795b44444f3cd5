//! md's partial parity log (PPL): closes the RAID 5 write hole without a journal device
//! (`--consistency-policy ppl`).
//!
//! As md implements it (Linux `Documentation/driver-api/md/raid5-ppl.rst` and
//! `drivers/md/raid5-ppl.c`): the *partial parity* of a write is the XOR of the stripe's
//! data chunks the write does *not* modify. md computes it from what the write reads
//! anyway: in a reconstruct-write the unmodified chunks are read, so it XORs them; in a
//! read-modify-write it takes old parity XOR the old data of the modified chunks, which is
//! the same thing. Before the new data and parity go to the members, the partial parity
//! is written (FUA) to the PPL area of the stripe's *parity* member, under a 4 KiB header
//! holding a signature, a generation (sequence number), one entry per logged stripe range
//! (first sector, data and partial parity sizes, a CRC32C of the partial parity) and the
//! header's own CRC32C. A full-stripe write logs an entry with no partial parity: it only
//! marks the stripe for a parity recompute. The log is distributed: every member holds
//! one (parity rotates), in md's metadata area, so no journal device is needed.
//!
//! After an unclean stop, recovery XORs each logged partial parity with the *current*
//! data of the chunks that write modified and writes the result as the stripe's parity:
//! consistent with the data on disk whichever of the write's chunk writes completed. So
//! an unmodified chunk whose member is lost afterwards is rebuilt right. That is all PPL
//! promises:
//! - RAID 5 only (one parity: md refuses it elsewhere), and one member failure: the
//!   member lost after the crash. With a second failure nothing rebuilds anything.
//! - Not a journal: a write in flight at the crash is not completed or undone. If the
//!   member of a chunk that write modified is lost, its stripe is not recovered (md skips
//!   it too) and that chunk reads arbitrary data, as in plain RAID 5; data flushed before
//!   the crash in the *other* chunks stays intact.
//! - The parity member's log is lost with it: then its stripes need no parity to read.
//! - A torn log header is not a record: its write had not started on the members.
//!
//! With all members present recovery also replaces the resync, so PPL keeps no
//! write-intent bitmap (md does not support both).
//!
//! This implementation: the log of a member is the 1020 KiB between its superblock and
//! its data (where the bitmap lives under the other policies), cut into fixed slots of
//! one 4 KiB header plus room for the partial parity of one request (at most two partial
//! stripes, so two chunks). One request writes one record per parity member it touches,
//! durable before its member writes start (an `RWF_DSYNC` write, md's FUA; where the
//! filesystem refuses the flag, a member sync shared by the writers waiting together);
//! md instead gathers the stripes of concurrent writes into one log write (not done
//! here). Slots are used in sequence order as a ring, and
//! a record may go into a slot only once every record a whole ring older has finished, so
//! records of requests in flight are never overwritten. Each record names the oldest
//! record still in flight when it was written; recovery replays, in sequence order, the
//! valid records at or after the newest such mark: every write that could have been in
//! flight, and only records whose rows no later overwritten record changed.
//!
//! ```text
//! record: header (4 KiB) │ partial parity of its entries, in entry order
//! header: magic b"RLPPL001" │ array uuid u128 │ seq u64 │ oldest in flight u64 │
//!         entries u32 │ partial parity crc32c u32 │ entries × (first stripe u64,
//!         last stripe u64, column u64, len u64, modified members u64, pp len u64) │
//!         ... │ crc32c of the header u32
//! ```
//! An entry with no partial parity (full-stripe writes) asks for the parity of every
//! stripe `first..=last` whose parity member is the log's member to be recomputed from
//! its data. Modified members are a bit mask, so PPL arrays have at most 64 members, as
//! md's.

use crate::format::superblock::{BITMAP_OFFSET_BYTES, DATA_OFFSET_BYTES};
use crc32c::crc32c;
use raidlab_layout::{FailedSet, Geometry, Level, StripeId};
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex};

/// Where every member's log starts: right after its superblock.
pub const PPL_OFFSET_BYTES: u64 = BITMAP_OFFSET_BYTES;
/// Bytes of every member's log: the metadata area up to the data.
pub const PPL_BYTES: u64 = DATA_OFFSET_BYTES - PPL_OFFSET_BYTES;
/// Bytes of a record header.
pub const HEADER_BYTES: u64 = 4096;
/// The most members a PPL array may have (modified members are a 64-bit mask; md's limit
/// is the same).
pub const MEMBERS_MAX: u32 = 64;
const MAGIC: [u8; 8] = *b"RLPPL001";
const FIXED_BYTES: usize = 48;
const ENTRY_BYTES: usize = 48;
/// Entries one header holds.
pub const ENTRIES_MAX: usize = (HEADER_BYTES as usize - FIXED_BYTES - 4) / ENTRY_BYTES;

/// Bytes of one slot for chunk `stripe_unit_bytes`: a header and two chunks of partial
/// parity (a request leaves at most its first and last stripe partly written).
pub fn slot_bytes(stripe_unit_bytes: u64) -> u64 {
    HEADER_BYTES + 2 * stripe_unit_bytes
}

/// Why an array cannot have a PPL, as the `--consistency-policy` error says it.
pub fn unsupported(geo: &Geometry) -> Option<String> {
    if geo.level() != Level::Raid5 {
        return Some(format!(
            "ppl is for RAID 5 only (md's partial parity log covers one parity), not {}",
            geo.level()
        ));
    }
    if geo.members() > MEMBERS_MAX {
        return Some(format!(
            "ppl takes at most {MEMBERS_MAX} members (as md), got {}",
            geo.members()
        ));
    }
    if slot_bytes(geo.stripe_unit_bytes()) > PPL_BYTES {
        return Some(format!(
            "ppl needs a chunk of at most 256K (its log holds two chunks of partial parity \
             in the {} KiB metadata area), got {} B",
            PPL_BYTES >> 10,
            geo.stripe_unit_bytes()
        ));
    }
    None
}

/// One logged stripe range of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// First stripe.
    pub first_stripe: u64,
    /// Last stripe (equal to the first when the entry has partial parity).
    pub last_stripe: u64,
    /// Byte offset of the rows within each chunk.
    pub column_offset_bytes: u64,
    /// Bytes of the rows.
    pub len_bytes: u64,
    /// The members whose chunks the write modifies, one bit per role.
    pub modified: u64,
    /// The XOR of the unmodified data chunks over the rows; empty for a full-stripe
    /// entry (parity is recomputed from all the data).
    pub partial_parity: Vec<u8>,
}

/// What one request logs on one parity member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The parity member whose log gets it.
    pub member: u32,
    /// Its entries.
    pub entries: Vec<Entry>,
}

impl Record {
    fn pp_bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.partial_parity.len() as u64)
            .sum()
    }

    fn encode(&self, uuid: u128, seq: u64, oldest: u64) -> Vec<u8> {
        let mut out = vec![0u8; HEADER_BYTES as usize];
        out[..8].copy_from_slice(&MAGIC);
        out[8..24].copy_from_slice(&uuid.to_le_bytes());
        out[24..32].copy_from_slice(&seq.to_le_bytes());
        out[32..40].copy_from_slice(&oldest.to_le_bytes());
        out[40..44].copy_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (i, e) in self.entries.iter().enumerate() {
            let at = FIXED_BYTES + i * ENTRY_BYTES;
            for (j, v) in [
                e.first_stripe,
                e.last_stripe,
                e.column_offset_bytes,
                e.len_bytes,
                e.modified,
                e.partial_parity.len() as u64,
            ]
            .into_iter()
            .enumerate()
            {
                out[at + 8 * j..at + 8 * j + 8].copy_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&e.partial_parity);
        }
        let pp_crc = crc32c(&out[HEADER_BYTES as usize..]);
        out[44..48].copy_from_slice(&pp_crc.to_le_bytes());
        let n = HEADER_BYTES as usize;
        let crc = crc32c(&out[..n - 4]);
        out[n - 4..n].copy_from_slice(&crc.to_le_bytes());
        out
    }
}

/// Writes `bytes` at `at` with `RWF_DSYNC` (durable on return, like a FUA write).
/// `Ok(false)` when the kernel or filesystem does not take the flag (nothing written).
fn write_dsync(file: &File, bytes: &[u8], at: u64) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut done = 0usize;
    while done < bytes.len() {
        let iov = libc::iovec {
            iov_base: bytes[done..].as_ptr() as *mut libc::c_void,
            iov_len: bytes.len() - done,
        };
        // SAFETY: one iovec over a live slice, a valid fd, no aliasing writes.
        let n = unsafe {
            libc::pwritev2(
                file.as_raw_fd(),
                &iov,
                1,
                (at + done as u64) as libc::off_t,
                libc::RWF_DSYNC,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) if done == 0 => {
                    return Ok(false)
                }
                _ => return Err(e),
            }
        }
        done += n as usize;
    }
    Ok(true)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A record read back: its sequence number, the oldest record in flight when it was
/// written, and what it logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRecord {
    /// Sequence number (per member log, from 1).
    pub seq: u64,
    /// The oldest record of this log in flight when it was written.
    pub oldest_in_flight: u64,
    /// The entries.
    pub entries: Vec<Entry>,
}

/// Decodes the record in `slot` (header and room for its partial parity); `None` when it
/// holds no valid record of array `uuid`.
fn decode(slot: &[u8], uuid: u128) -> Option<LoggedRecord> {
    let n = HEADER_BYTES as usize;
    let h = slot.get(..n)?;
    if h[..8] != MAGIC
        || u32_at(h, n - 4) != crc32c(&h[..n - 4])
        || u128::from_le_bytes(h[8..24].try_into().expect("16 bytes")) != uuid
    {
        return None;
    }
    let count = u32_at(h, 40) as usize;
    if count > ENTRIES_MAX {
        return None;
    }
    let mut at = n;
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let e = FIXED_BYTES + i * ENTRY_BYTES;
        let pp_len = u64_at(h, e + 40);
        let end = at.checked_add(usize::try_from(pp_len).ok()?)?;
        entries.push(Entry {
            first_stripe: u64_at(h, e),
            last_stripe: u64_at(h, e + 8),
            column_offset_bytes: u64_at(h, e + 16),
            len_bytes: u64_at(h, e + 24),
            modified: u64_at(h, e + 32),
            partial_parity: slot.get(at..end)?.to_vec(),
        });
        at = end;
    }
    if crc32c(&slot[n..at]) != u32_at(h, 44) {
        return None;
    }
    Some(LoggedRecord {
        seq: u64_at(h, 24),
        oldest_in_flight: u64_at(h, 32),
        entries,
    })
}

/// The records of one member's log that recovery must replay, in sequence order: the
/// valid ones at or after the newest "oldest in flight" mark.
pub fn records_to_replay(log: &[u8], uuid: u128, stripe_unit_bytes: u64) -> Vec<LoggedRecord> {
    let slot = slot_bytes(stripe_unit_bytes) as usize;
    let mut records: Vec<LoggedRecord> = log
        .chunks_exact(slot)
        .filter_map(|s| decode(s, uuid))
        .collect();
    let mark = records
        .iter()
        .map(|r| r.oldest_in_flight)
        .max()
        .unwrap_or(0);
    records.retain(|r| r.seq >= mark);
    records.sort_by_key(|r| r.seq);
    records
}

/// A stripe parity recovery writes: member data offset and bytes.
pub type StripeParity = (u64, Vec<u8>);

/// The parity recovery writes for one logged stripe range: `(stripe, member offset,
/// parity)` per stripe whose parity member is `member`, computed from the partial parity
/// and `read(member, offset, len)` of the modified chunks. `None` when a modified
/// chunk's member is in `failed` (md does not recover such a stripe either).
pub fn parity_of_entry(
    geo: &Geometry,
    member: u32,
    e: &Entry,
    failed: &FailedSet,
    mut read: impl FnMut(u32, u64, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Option<Vec<StripeParity>>> {
    let su = geo.stripe_unit_bytes();
    let full = e.partial_parity.is_empty();
    let (col, len) = if full {
        (0, su)
    } else {
        (e.column_offset_bytes, e.len_bytes)
    };
    if col.checked_add(len).is_none_or(|end| end > su) || len == 0 {
        return Ok(None);
    }
    let mut out = Vec::new();
    let last = e.last_stripe.min(geo.stripes_per_span().saturating_sub(1));
    for stripe in e.first_stripe..=last {
        let id = StripeId { span: 0, stripe };
        if geo.p_member(id) != Some(member) {
            continue;
        }
        let data: Vec<u32> = geo
            .slot_order(id)
            .iter()
            .map(|&k| geo.data_member(id, k))
            .collect();
        let modified: Vec<u32> = data
            .iter()
            .copied()
            .filter(|&m| full || (m < 64 && e.modified & (1 << m) != 0))
            .collect();
        if modified.iter().any(|&m| failed.contains(m)) {
            return Ok(None);
        }
        let off = geo.stripe_offset_bytes(id) + col;
        let mut p = if full {
            vec![0u8; len as usize]
        } else {
            e.partial_parity.clone()
        };
        let mut buf = vec![0u8; len as usize];
        for m in modified {
            read(m, off, &mut buf)?;
            p.iter_mut().zip(&buf).for_each(|(a, b)| *a ^= b);
        }
        out.push((off, p));
    }
    Ok(Some(out))
}

/// One member's log while the array runs.
#[derive(Default)]
struct MemberLog {
    next_seq: u64,
    in_flight: BTreeSet<u64>,
    /// The file whose log area was cleared this session (a replacement gets a new one).
    cleared: Option<Arc<File>>,
}

/// The logs of a running PPL array: slot allocation and the records in flight.
pub struct Ppl {
    uuid: u128,
    stripe_unit_bytes: u64,
    slots: u64,
    logs: Mutex<Vec<MemberLog>>,
    /// Signalled when a record finishes.
    finished: Condvar,
    /// Per member: the group commit of its log writes.
    syncs: Mutex<Vec<GroupSync>>,
    /// Signalled when a log sync finishes.
    synced: Condvar,
}

/// One member log's group commit, as md gathers stripes into one PPL write: a record
/// written takes a ticket; one sync, started after the write, covers every ticket
/// taken before it started, so writers in flight together share it.
#[derive(Default)]
struct GroupSync {
    written: u64,
    synced: u64,
    /// The file the last finished sync covered (a replacement is another file).
    synced_file: usize,
    syncing: bool,
    /// The last sync failed: it covered tickets up to this, with this error.
    failed: Option<(u64, std::io::ErrorKind, String)>,
}

/// The records of one request, in flight until dropped (after its member writes).
pub struct InFlight<'a> {
    ppl: &'a Ppl,
    seqs: Vec<(u32, u64)>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut logs = self.ppl.logs.lock().unwrap_or_else(|p| p.into_inner());
        for &(m, seq) in &self.seqs {
            logs[m as usize].in_flight.remove(&seq);
        }
        drop(logs);
        self.ppl.finished.notify_all();
    }
}

/// Zeroes a member's log area and syncs it: no record of an earlier session survives.
pub fn clear(file: &File) -> std::io::Result<()> {
    file.write_all_at(&vec![0u8; PPL_BYTES as usize], PPL_OFFSET_BYTES)?;
    file.sync_data()
}

/// Reads a member's whole log area.
pub fn read_log(file: &File) -> std::io::Result<Vec<u8>> {
    let mut log = vec![0u8; PPL_BYTES as usize];
    file.read_exact_at(&mut log, PPL_OFFSET_BYTES)?;
    Ok(log)
}

impl Ppl {
    /// The logs of array `uuid` with `members` members and chunk `stripe_unit_bytes`
    /// (checked by [`unsupported`]).
    pub fn new(uuid: u128, members: u32, stripe_unit_bytes: u64) -> Self {
        Self {
            uuid,
            stripe_unit_bytes,
            slots: (PPL_BYTES / slot_bytes(stripe_unit_bytes)).max(1),
            logs: Mutex::new((0..members).map(|_| MemberLog::default()).collect()),
            finished: Condvar::new(),
            syncs: Mutex::new((0..members).map(|_| GroupSync::default()).collect()),
            synced: Condvar::new(),
        }
    }

    /// Logs `records` (one per parity member, ascending members) on their members and
    /// syncs them; the request's member writes may start once this returns. Waits for a
    /// free slot when a whole ring of older records is still in flight. Returns the
    /// records in flight and the members whose log could not be written (the caller
    /// fails them: their parity is not written either).
    pub fn log(
        &self,
        records: &[Record],
        files: &[Option<Arc<File>>],
    ) -> (InFlight<'_>, Vec<(u32, std::io::Error)>) {
        let mut errors = Vec::new();
        let mut logs = self.logs.lock().expect("ppl lock");
        let seqs: Vec<(u32, u64)> = records
            .iter()
            .map(|r| {
                let log = &mut logs[r.member as usize];
                log.next_seq += 1;
                log.in_flight.insert(log.next_seq);
                (r.member, log.next_seq)
            })
            .collect();
        let guard = InFlight {
            ppl: self,
            seqs: seqs.clone(),
        };
        // A slot is reused once every record a ring older has finished, so the oldest
        // record in flight is never overwritten and marks stay true.
        let free = |logs: &Vec<MemberLog>| {
            seqs.iter().all(|&(m, seq)| {
                seq <= self.slots
                    || logs[m as usize]
                        .in_flight
                        .first()
                        .is_none_or(|&o| o > seq - self.slots)
            })
        };
        while !free(&logs) {
            logs = self.finished.wait(logs).expect("ppl lock");
        }
        let mut writes = Vec::new();
        for (r, &(m, seq)) in records.iter().zip(&seqs) {
            let log = &mut logs[m as usize];
            let oldest = *log.in_flight.first().expect("this record");
            let Some(file) = files[m as usize].clone() else {
                continue;
            };
            // First record on this file this session: clear what earlier sessions left
            // (under the lock, so no record of this session is cleared with it).
            if log.cleared.as_ref().is_none_or(|f| !Arc::ptr_eq(f, &file)) {
                if let Err(e) = clear(&file) {
                    errors.push((m, e));
                    continue;
                }
                log.cleared = Some(file.clone());
            }
            writes.push((m, file, r.encode(self.uuid, seq, oldest), seq));
        }
        drop(logs);
        for (m, file, bytes, seq) in writes {
            if let Err(e) = self.write_record(m, &file, &bytes, seq) {
                errors.push((m, e));
            }
        }
        (guard, errors)
    }

    /// Writes record number `seq` of member `m`'s log into its slot of the ring,
    /// durable on return. md writes the log with FUA: here a write that is durable on
    /// return and syncs only its own range (a member sync would also write back every
    /// data write the page cache holds for the member).
    fn write_record(
        &self,
        m: u32,
        file: &Arc<File>,
        bytes: &[u8],
        seq: u64,
    ) -> std::io::Result<()> {
        let slot = slot_bytes(self.stripe_unit_bytes);
        debug_assert!(bytes.len() as u64 <= slot);
        let at = PPL_OFFSET_BYTES + ((seq - 1) % self.slots) * slot;
        match write_dsync(file, bytes, at) {
            Ok(true) => Ok(()),
            Ok(false) => file
                .write_all_at(bytes, at)
                .and_then(|()| self.sync(m, file)),
            Err(e) => Err(e),
        }
    }

    /// Makes every record written to member `m`'s log so far durable, sharing the
    /// sync with the writers that wait at the same time (group commit).
    fn sync(&self, m: u32, file: &Arc<File>) -> std::io::Result<()> {
        let me = Arc::as_ptr(file) as usize;
        let mut syncs = self.syncs.lock().expect("ppl sync lock");
        syncs[m as usize].written += 1;
        let ticket = syncs[m as usize].written;
        loop {
            let g = &mut syncs[m as usize];
            if let Some((through, kind, msg)) = &g.failed {
                if *through >= ticket {
                    return Err(std::io::Error::new(*kind, msg.clone()));
                }
            }
            if g.synced >= ticket && g.synced_file == me {
                return Ok(());
            }
            if !g.syncing {
                g.syncing = true;
                let target = g.written;
                drop(syncs);
                let r = file.sync_data();
                syncs = self.syncs.lock().expect("ppl sync lock");
                let g = &mut syncs[m as usize];
                g.syncing = false;
                match &r {
                    Ok(()) => {
                        g.synced = target;
                        g.synced_file = me;
                    }
                    Err(e) => g.failed = Some((target, e.kind(), e.to_string())),
                }
                self.synced.notify_all();
                r?;
                continue;
            }
            syncs = self.synced.wait(syncs).expect("ppl sync lock");
        }
    }

    /// Whether `records` fit one slot each.
    pub fn fits(&self, records: &[Record]) -> bool {
        records.iter().all(|r| {
            r.entries.len() <= ENTRIES_MAX
                && HEADER_BYTES + r.pp_bytes() <= slot_bytes(self.stripe_unit_bytes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pp: u8) -> Record {
        Record {
            member: 2,
            entries: vec![
                Entry {
                    first_stripe: 5,
                    last_stripe: 5,
                    column_offset_bytes: 4096,
                    len_bytes: 4096,
                    modified: 0b1,
                    partial_parity: vec![pp; 4096],
                },
                Entry {
                    first_stripe: 6,
                    last_stripe: 9,
                    column_offset_bytes: 0,
                    len_bytes: 16384,
                    modified: 0b11,
                    partial_parity: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn records_round_trip_and_a_flipped_bit_is_no_record() {
        let su = 16384;
        let mut slot = record(7).encode(9, 3, 2);
        slot.resize(slot_bytes(su) as usize, 0);
        let back = decode(&slot, 9).unwrap();
        assert_eq!((back.seq, back.oldest_in_flight), (3, 2));
        assert_eq!(back.entries, record(7).entries);
        assert!(decode(&slot, 8).is_none(), "another array's record");
        slot[HEADER_BYTES as usize + 100] ^= 1;
        assert!(decode(&slot, 9).is_none(), "torn partial parity");
    }

    #[test]
    fn writers_share_group_syncs_and_every_one_returns() {
        let ppl = Arc::new(Ppl::new(1, 3, 16384));
        let f = Arc::new(tempfile_in_target());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (ppl, f) = (ppl.clone(), f.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        ppl.sync(1, &f).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = ppl.syncs.lock().unwrap();
        assert_eq!(s[1].written, 200);
        assert_eq!(s[1].synced, 200, "the last ticket is covered");
        assert!(!s[1].syncing);
    }

    fn tempfile_in_target() -> File {
        let p = std::env::temp_dir().join(format!("raidlab-ppl-sync-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    #[test]
    fn replay_starts_at_the_newest_mark_in_sequence_order() {
        let su = 16384;
        let slot = slot_bytes(su) as usize;
        let mut log = vec![0u8; slot * 4];
        // Slot 0 holds seq 5 (a ring later than seq 1), written while 3 was in flight;
        // slot 1 holds seq 2 (finished long ago), slot 2 seq 3, slot 3 seq 4 (oldest 3).
        for (i, (seq, oldest)) in [(5, 3), (2, 1), (3, 3), (4, 3)].into_iter().enumerate() {
            let b = record(seq as u8).encode(1, seq, oldest);
            log[i * slot..i * slot + b.len()].copy_from_slice(&b);
        }
        let seqs: Vec<u64> = records_to_replay(&log, 1, su)
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, [3, 4, 5]);
    }
}
