//! md's partial parity log (PPL): closes the RAID 5 write hole without a journal device
//! (`--consistency-policy ppl`), and, extended with a partial Q, RAID 6's.
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
//! an unmodified chunk whose member is lost afterwards is rebuilt right. What md's PPL
//! promises:
//! - RAID 5 only (one parity: md refuses it elsewhere), and one member failure: the
//!   member lost after the crash.
//! - Not a journal: a write in flight at the crash is not completed or undone. If the
//!   member of a chunk that write modified is lost, that chunk reads arbitrary data, as
//!   in plain RAID 5; data flushed before the crash in the *other* chunks stays intact.
//! - The parity member's log is lost with it: then its stripes need no parity to read.
//! - A torn log header is not a record: its write had not started on the members.
//!
//! **RAID 6 (and 4, 50, 60): an extension md does not have.** md offers only the
//! journal there. Here a RAID 6 entry also carries the *partial Q*: the Q syndrome of
//! the unmodified chunks, `sum g^slot * D_slot` over them with each chunk's syndrome
//! slot (its coefficient, given by the geometry, which the superblock fixes); and the
//! record goes to the logs of *both* the P and the Q member. Why this is sound: P and Q
//! are linear in the data, so with U the unmodified and M the modified chunks,
//! `P = ppP ^ XOR(M)` and `Q = ppQ ^ sum g^slot * M`: the same argument as md's, once
//! per parity block, and any current content of M gives parity agreeing with it. Two
//! copies of the record: any two member losses leave one (when both P and Q members are
//! lost, the stripe has no parity left to be wrong and all its data is present). And
//! the partial P and Q are two equations in the unmodified chunks alone: up to two lost
//! unmodified chunks are solved from them exactly (what they held, flushed), then a
//! lost *modified* chunk from the parity on disk (its new data if the write had
//! finished; arbitrary if it was in flight, as above), then P and Q are recomputed from
//! the whole stripe. RAID 4 is RAID 5 with parity fixed on one member (whose log holds
//! every record), RAID 50/60 are spans of RAID 5/6: each span's parity members log the
//! stripes of their span, so the same records and recovery serve them. Recovery takes,
//! per stripe, the newest logged entry only: writes to a stripe hold its stripe lock in
//! turn, so every older write to it had finished before the newest read its partial
//! parity.
//!
//! With all members present recovery also replaces the resync, so PPL keeps no
//! write-intent bitmap (md does not support both).
//!
//! This implementation: the log of a member is the 1020 KiB between its superblock and
//! its data (where the bitmap lives under the other policies), cut into fixed slots of
//! one 4 KiB header plus room for the partial parity of one request (at most two partial
//! stripes, so two chunks; four with Q). One request writes one record per parity
//! member it touches,
//! durable before its member writes start (an `RWF_DSYNC` write, md's FUA; where the
//! filesystem refuses the flag, a member sync shared by the writers waiting together);
//! md instead gathers the stripes of concurrent writes into one log write; a group
//! commit of the records that come while a write of the log is under way measured
//! slower here (the kernel merges the flushes of writes in flight, a group waits for
//! the write before it; docs/engine.md). A request waits at most [`WAIT_MAX`] for a
//! free slot. Slots are used in sequence order as a ring, and
//! a record may go into a slot only once every record a whole ring older has finished, so
//! records of requests in flight are never overwritten. Each record names the oldest
//! record still in flight when it was written; recovery replays the valid records at or
//! after the newest such mark (every write that could have been in flight), newest
//! first, each stripe from its newest entry.
//!
//! ```text
//! record: header (512 B) │ partial parity of its entries, in entry order
//! header: magic b"RLPPL002" │ array uuid u128 │ seq u64 │ oldest in flight u64 │
//!         entries u32 │ partial parity crc32c u32 │ entries × (first stripe u64,
//!         last stripe u64, column u64, len u64, modified members u64, pp len u64) │
//!         ... │ crc32c of the header u32
//! ```
//! Earlier versions wrote the same header over 4 KiB under magic b"RLPPL001"; such
//! records are still read (a log left by a crash before an upgrade). A slot keeps 4 KiB
//! of room for the header either way.
//! An entry with no partial parity (full-stripe writes) asks for the parity of every
//! stripe `first..=last` whose P or Q member is the log's member to be recomputed from
//! its data. On RAID 6 an entry's partial parity is twice its rows: partial P, then
//! partial Q (a RAID 5 record reads as before). Modified members are a bit mask, so
//! PPL arrays have at most 64 members, as md's.

use crate::format::superblock::{BITMAP_OFFSET_BYTES, DATA_OFFSET_BYTES};
use crc32c::crc32c;
use raidlab_layout::parity::{compute_p, compute_pq, reconstruct};
use raidlab_layout::{FailedSet, Geometry, StripeId};
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Where every member's log starts: right after its superblock.
pub const PPL_OFFSET_BYTES: u64 = BITMAP_OFFSET_BYTES;
/// Bytes of every member's log: the metadata area up to the data.
pub const PPL_BYTES: u64 = DATA_OFFSET_BYTES - PPL_OFFSET_BYTES;
/// Room for a record header at the start of a slot (the first format's header size).
pub const HEADER_BYTES: u64 = 4096;
/// Bytes of the header records are written with: only what its fields need (at most
/// three entries per record), so a 4 KiB write logs about 4.5 KiB, not 8.
const COMPACT_HEADER_BYTES: usize = 512;
/// The most members a PPL array may have (modified members are a 64-bit mask; md's limit
/// is the same).
pub const MEMBERS_MAX: u32 = 64;
/// The first format: a 4 KiB header (still read back, from logs of earlier versions).
const MAGIC: [u8; 8] = *b"RLPPL001";
/// The format written: a [`COMPACT_HEADER_BYTES`] header, the same fields.
const MAGIC_COMPACT: [u8; 8] = *b"RLPPL002";
/// Bytes of the fixed fields of a first-format header.
const FIXED_BYTES: usize = 48;
/// The same in the compact header, which adds the record's generation.
const FIXED_BYTES_COMPACT: usize = 56;
const ENTRY_BYTES: usize = 48;
/// Entries one header holds.
pub const ENTRIES_MAX: usize = (COMPACT_HEADER_BYTES - FIXED_BYTES_COMPACT - 4) / ENTRY_BYTES;

/// Bytes of one slot for chunk `stripe_unit_bytes` and `parity` blocks per stripe: a
/// header and two chunks of partial parity per parity block (a request leaves at most
/// its first and last stripe partly written; RAID 6 logs a partial P and a partial Q).
pub fn slot_bytes(stripe_unit_bytes: u64, parity: u32) -> u64 {
    HEADER_BYTES + 2 * u64::from(parity.max(1)) * stripe_unit_bytes
}

/// Why an array cannot have a PPL, as the `--consistency-policy` error says it.
pub fn unsupported(geo: &Geometry) -> Option<String> {
    let parity = geo.parity_per_stripe();
    if parity == 0 {
        return Some(format!(
            "ppl is for the parity levels (RAID 4, 5, 6, 50, 60), not {}",
            geo.level()
        ));
    }
    if geo.members() > MEMBERS_MAX {
        return Some(format!(
            "ppl takes at most {MEMBERS_MAX} members (as md), got {}",
            geo.members()
        ));
    }
    if slot_bytes(geo.stripe_unit_bytes(), parity) > PPL_BYTES {
        return Some(format!(
            "ppl needs a chunk of at most {}K on {} (its log holds {} chunks of partial \
             parity in the {} KiB metadata area), got {} B",
            256 / parity,
            geo.level(),
            2 * parity,
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
    /// RAID 6/60: the Q syndrome of the unmodified data chunks over the rows (each
    /// weighed by g^slot, its syndrome slot, which the geometry gives); empty on one
    /// parity and for a full-stripe entry. On disk it follows the partial parity and
    /// the entry's partial parity length counts both.
    pub partial_q: Vec<u8>,
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
            .map(|e| (e.partial_parity.len() + e.partial_q.len()) as u64)
            .sum()
    }

    fn encode(&self, uuid: u128, seq: u64, oldest: u64, generation: u64) -> Vec<u8> {
        self.encode_as(MAGIC_COMPACT, uuid, [seq, oldest, generation])
    }

    /// The record under header `magic` (its size and fields: [`header_layout`]).
    fn encode_as(
        &self,
        magic: [u8; 8],
        uuid: u128,
        [seq, oldest, generation]: [u64; 3],
    ) -> Vec<u8> {
        let (n, fixed) = header_layout(&magic).expect("a known magic");
        debug_assert!(fixed + self.entries.len() * ENTRY_BYTES + 4 <= n);
        let mut out = Vec::with_capacity(n + self.pp_bytes() as usize);
        out.resize(n, 0);
        out[..8].copy_from_slice(&magic);
        if fixed == FIXED_BYTES_COMPACT {
            out[48..56].copy_from_slice(&generation.to_le_bytes());
        }
        out[8..24].copy_from_slice(&uuid.to_le_bytes());
        out[24..32].copy_from_slice(&seq.to_le_bytes());
        out[32..40].copy_from_slice(&oldest.to_le_bytes());
        out[40..44].copy_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (i, e) in self.entries.iter().enumerate() {
            let at = fixed + i * ENTRY_BYTES;
            for (j, v) in [
                e.first_stripe,
                e.last_stripe,
                e.column_offset_bytes,
                e.len_bytes,
                e.modified,
                (e.partial_parity.len() + e.partial_q.len()) as u64,
            ]
            .into_iter()
            .enumerate()
            {
                out[at + 8 * j..at + 8 * j + 8].copy_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&e.partial_parity);
            out.extend_from_slice(&e.partial_q);
        }
        let pp_crc = crc32c(&out[n..]);
        out[44..48].copy_from_slice(&pp_crc.to_le_bytes());
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

/// Whether `head` (the first bytes of a member's log) starts with a record header of
/// either format.
pub fn is_record_header(head: &[u8]) -> bool {
    head.get(..8).and_then(header_layout).is_some()
}

/// Header bytes and fixed-field bytes of the format `magic` names.
fn header_layout(magic: &[u8]) -> Option<(usize, usize)> {
    match magic {
        m if m == MAGIC => Some((HEADER_BYTES as usize, FIXED_BYTES)),
        m if m == MAGIC_COMPACT => Some((COMPACT_HEADER_BYTES, FIXED_BYTES_COMPACT)),
        _ => None,
    }
}

/// A record read back: its sequence number, the oldest record in flight when it was
/// written, and what it logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRecord {
    /// Sequence number (per member log, from 1).
    pub seq: u64,
    /// Its request's place in the order of the array's requests this session (the same
    /// on every log the request wrote; 0 in the first format, which had none): the
    /// newest entry of a stripe, across logs, is the one of the highest generation.
    pub generation: u64,
    /// The oldest record of this log in flight when it was written.
    pub oldest_in_flight: u64,
    /// The entries.
    pub entries: Vec<Entry>,
}

/// Decodes the record in `slot` (header and room for its partial parity); `None` when it
/// holds no valid record of array `uuid`.
fn decode(slot: &[u8], uuid: u128) -> Option<LoggedRecord> {
    let (n, fixed) = header_layout(slot.get(..8)?)?;
    let h = slot.get(..n)?;
    if u32_at(h, n - 4) != crc32c(&h[..n - 4])
        || u128::from_le_bytes(h[8..24].try_into().expect("16 bytes")) != uuid
    {
        return None;
    }
    let count = u32_at(h, 40) as usize;
    if fixed + count.checked_mul(ENTRY_BYTES)? + 4 > n {
        return None;
    }
    let mut at = n;
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let e = fixed + i * ENTRY_BYTES;
        let pp_len = u64_at(h, e + 40);
        let end = at.checked_add(usize::try_from(pp_len).ok()?)?;
        let len_bytes = u64_at(h, e + 24);
        let mut partial_parity = slot.get(at..end)?.to_vec();
        // Twice the rows: a partial P then a partial Q (RAID 6/60).
        let partial_q = if len_bytes > 0 && pp_len == 2 * len_bytes {
            partial_parity.split_off(len_bytes as usize)
        } else {
            Vec::new()
        };
        entries.push(Entry {
            first_stripe: u64_at(h, e),
            last_stripe: u64_at(h, e + 8),
            column_offset_bytes: u64_at(h, e + 16),
            len_bytes,
            modified: u64_at(h, e + 32),
            partial_parity,
            partial_q,
        });
        at = end;
    }
    if crc32c(&slot[n..at]) != u32_at(h, 44) {
        return None;
    }
    Some(LoggedRecord {
        seq: u64_at(h, 24),
        generation: if fixed == FIXED_BYTES_COMPACT {
            u64_at(h, 48)
        } else {
            0
        },
        oldest_in_flight: u64_at(h, 32),
        entries,
    })
}

/// The records of one member's log that recovery must replay, in sequence order: the
/// valid ones at or after the newest "oldest in flight" mark.
pub fn records_to_replay(log: &[u8], uuid: u128, slot_bytes: u64) -> Vec<LoggedRecord> {
    let slot = slot_bytes as usize;
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

/// A parity block recovery writes: member, member data offset and bytes.
pub type ParityWrite = (u32, u64, Vec<u8>);

/// The parity writes that make the stripes of logged entry `e` of member `member`'s log
/// agree with their data, for the stripes whose P or Q member is `member` and that are
/// not in `done` (recovery walks each log newest record first, so the first entry met
/// for a stripe is the last write to it: every older write to it had finished, as
/// they hold its stripe lock in turn). Adds them to `done`. `read(member, offset,
/// buf)` reads member data. Stripes with more lost members than parity blocks are
/// left alone (nothing rebuilds them). One list of writes per stripe recomputed.
pub fn recover_entry(
    geo: &Geometry,
    member: u32,
    e: &Entry,
    failed: &FailedSet,
    done: &mut BTreeSet<(u32, u64)>,
    mut read: impl FnMut(u32, u64, &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Vec<Vec<ParityWrite>>> {
    let su = geo.stripe_unit_bytes();
    let full = e.partial_parity.is_empty();
    let (col, len) = if full {
        (0, su)
    } else {
        (e.column_offset_bytes, e.len_bytes)
    };
    let ppx = geo.parity_per_stripe();
    let well_formed = full
        || (e.partial_parity.len() as u64 == len
            && e.partial_q.len() as u64 == if ppx == 2 { len } else { 0 });
    if col.checked_add(len).is_none_or(|end| end > su) || len == 0 || !well_formed {
        return Ok(Vec::new());
    }
    let span = member / geo.span_width().max(1);
    let mut out = Vec::new();
    let last = e.last_stripe.min(geo.stripes_per_span().saturating_sub(1));
    for stripe in e.first_stripe..=last {
        let id = StripeId { span, stripe };
        let logs_here = geo.p_member(id) == Some(member) || geo.q_member(id) == Some(member);
        if !logs_here || !done.insert((span, stripe)) {
            continue;
        }
        let writes = StripeRows { id, col, len }.recover(geo, e, failed, &mut read)?;
        if !writes.is_empty() {
            out.push(writes);
        }
    }
    Ok(out)
}

/// The rows `[col, col + len)` of stripe `id` that recovery makes consistent.
struct StripeRows {
    id: StripeId,
    col: u64,
    len: u64,
}

impl StripeRows {
    /// Rebuilds the stripe's lost data chunks, then computes its P (and Q) from all
    /// of them. A lost chunk the write did *not* modify holds what it held before the
    /// write: the partial parity (P and Q: up to two lost) gives it back exactly. A
    /// lost chunk it modified is in flight or done: it is solved from the parity on
    /// disk, which gives the new data when the write had finished (a flushed write
    /// logged after the oldest one in flight) and leaves it arbitrary otherwise (as md
    /// does). The result is parity that agrees with every present chunk and with the
    /// flushed content of every lost one.
    fn recover(
        &self,
        geo: &Geometry,
        e: &Entry,
        failed: &FailedSet,
        read: &mut impl FnMut(u32, u64, &mut [u8]) -> std::io::Result<()>,
    ) -> std::io::Result<Vec<ParityWrite>> {
        let (id, len) = (self.id, self.len as usize);
        let ppx = geo.parity_per_stripe() as usize;
        let (members, order) = geo.stripe_members(id);
        let d = order.len();
        let full = e.partial_parity.is_empty();
        let modified = |m: u32| full || (m < 64 && e.modified & (1 << m) != 0);
        let lost: Vec<usize> = (0..members.len())
            .filter(|&i| failed.contains(members[i]))
            .collect();
        if lost.len() > ppx {
            return Ok(Vec::new());
        }
        let off = geo.stripe_offset_bytes(id) + self.col;
        let mut blocks = vec![vec![0u8; len]; members.len()];
        for i in (0..d).filter(|i| !lost.contains(i)) {
            read(members[i], off, &mut blocks[i])?;
        }
        let kept = |i: usize| i < d && !modified(members[i]);
        let lost_kept: Vec<usize> = lost.iter().copied().filter(|&i| kept(i)).collect();
        if !lost_kept.is_empty() && !rebuild_kept(e, ppx, &mut blocks[..d], &lost_kept, kept) {
            return Ok(Vec::new());
        }
        if lost.iter().any(|&i| i < d && !kept(i)) {
            for i in (d..members.len()).filter(|i| !lost.contains(i)) {
                read(members[i], off, &mut blocks[i])?;
            }
            let mut refs: Vec<&mut [u8]> = blocks.iter_mut().map(Vec::as_mut_slice).collect();
            let lost_new: Vec<usize> = lost.iter().copied().filter(|&i| !kept(i)).collect();
            if reconstruct(&mut refs, ppx, &lost_new).is_err() {
                return Ok(Vec::new());
            }
        }
        let data: Vec<&[u8]> = blocks[..d].iter().map(Vec::as_slice).collect();
        let mut p = vec![0u8; len];
        let mut q = vec![0u8; len];
        if ppx == 2 {
            compute_pq(&data, &mut p, &mut q);
        } else {
            compute_p(&data, &mut p);
        }
        let mut out = Vec::new();
        for (i, parity) in [p, q].into_iter().enumerate().take(ppx) {
            if !lost.contains(&(d + i)) {
                out.push((members[d + i], off, parity));
            }
        }
        Ok(out)
    }
}

/// Solves the lost unmodified data chunks `lost` of `data` (syndrome order; the present
/// ones read, `kept(slot)` tells the unmodified) from the entry's partial parity: the
/// unmodified chunks alone, the modified taken as zero, have it as their P (and Q).
/// False when they cannot be (more lost than parity blocks logged).
fn rebuild_kept(
    e: &Entry,
    ppx: usize,
    data: &mut [Vec<u8>],
    lost: &[usize],
    kept: impl Fn(usize) -> bool,
) -> bool {
    let len = e.partial_parity.len();
    let mut aux: Vec<Vec<u8>> = (0..data.len())
        .map(|i| {
            if kept(i) {
                data[i].clone()
            } else {
                vec![0u8; len]
            }
        })
        .collect();
    aux.push(e.partial_parity.clone());
    if ppx == 2 {
        aux.push(e.partial_q.clone());
    }
    let mut refs: Vec<&mut [u8]> = aux.iter_mut().map(Vec::as_mut_slice).collect();
    if reconstruct(&mut refs, ppx, lost).is_err() {
        return false;
    }
    for &i in lost {
        data[i] = std::mem::take(&mut aux[i]);
    }
    true
}

/// How long a request waits for a free log slot (older requests' member writes to
/// finish). Past it the write fails (nothing of it reached the members) instead of
/// hanging its connection.
pub const WAIT_MAX: Duration = Duration::from_secs(60);

/// Why a request's records could not be logged in time: the member whose log, and why.
#[derive(Debug)]
pub struct Stalled {
    /// The member whose log stayed full.
    pub member: u32,
    /// What it waited for.
    pub message: String,
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
    slot_bytes: u64,
    slots: u64,
    wait_max: Duration,
    logs: Mutex<(Vec<MemberLog>, usize, u64)>,
    /// Signalled when a record finishes and a writer waits for a slot (the count
    /// beside the logs: no wake-up system call for every request otherwise).
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
            logs.0[m as usize].in_flight.remove(&seq);
        }
        let waiting = logs.1 > 0;
        drop(logs);
        if waiting {
            self.ppl.finished.notify_all();
        }
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
    /// The logs of array `uuid` with `members` members, chunk `stripe_unit_bytes` and
    /// `parity` blocks per stripe (checked by [`unsupported`]).
    pub fn new(uuid: u128, members: u32, stripe_unit_bytes: u64, parity: u32) -> Self {
        let slot = slot_bytes(stripe_unit_bytes, parity);
        Self {
            uuid,
            slot_bytes: slot,
            slots: (PPL_BYTES / slot).max(1),
            wait_max: WAIT_MAX,
            logs: Mutex::new(((0..members).map(|_| MemberLog::default()).collect(), 0, 0)),
            finished: Condvar::new(),
            syncs: Mutex::new((0..members).map(|_| GroupSync::default()).collect()),
            synced: Condvar::new(),
        }
    }

    /// Logs `records` (one per parity member, ascending members) on their members and
    /// syncs them; the request's member writes may start once this returns. Waits for a
    /// free slot when a whole ring of older records is still in flight, at most
    /// [`WAIT_MAX`] ([`Stalled`] then: nothing of the request may be written). Returns
    /// the records in flight and the members whose log could not be written (the caller
    /// fails them: their parity is not written either).
    pub fn log(
        &self,
        records: &[Record],
        files: &[Option<Arc<File>>],
    ) -> Result<(InFlight<'_>, Vec<(u32, std::io::Error)>), Stalled> {
        let deadline = Instant::now() + self.wait_max;
        let mut errors = Vec::new();
        let mut guard_logs = self.logs.lock().expect("ppl lock");
        let seqs: Vec<(u32, u64)> = records
            .iter()
            .map(|r| {
                let log = &mut guard_logs.0[r.member as usize];
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
        // The first member whose slot is still taken, if any.
        let full = |logs: &Vec<MemberLog>| {
            seqs.iter().find_map(|&(m, seq)| {
                let taken = seq > self.slots
                    && logs[m as usize]
                        .in_flight
                        .first()
                        .is_some_and(|&o| o <= seq - self.slots);
                taken.then_some(m)
            })
        };
        while let Some(m) = full(&guard_logs.0) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Unlocked before `guard` drops: it takes the lock to end its records.
                drop(guard_logs);
                return Err(Stalled {
                    member: m,
                    message: format!(
                        "ppl: waited for a free log slot for more than {} s (older writes \
                         have not finished)",
                        self.wait_max.as_secs_f64()
                    ),
                });
            }
            guard_logs.1 += 1;
            guard_logs = self
                .finished
                .wait_timeout(guard_logs, left)
                .expect("ppl lock")
                .0;
            guard_logs.1 -= 1;
        }
        // The request holds its stripes' locks: every earlier write to them has
        // finished, so its generation is higher than theirs.
        guard_logs.2 += 1;
        let generation = guard_logs.2;
        let mut writes = Vec::new();
        for (r, &(m, seq)) in records.iter().zip(&seqs) {
            let log = &mut guard_logs.0[m as usize];
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
            writes.push((m, file, r.encode(self.uuid, seq, oldest, generation), seq));
        }
        drop(guard_logs);
        for (m, file, bytes, seq) in writes {
            if let Err(e) = self.write_record(m, &file, &bytes, seq) {
                errors.push((m, e));
            }
        }
        Ok((guard, errors))
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
        let slot = self.slot_bytes;
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

    /// Notes that member `m`'s log on `file` was just cleared: its first record of this
    /// session need not clear it again.
    pub fn cleared(&self, m: u32, file: &Arc<File>) {
        let mut logs = self.logs.lock().expect("ppl lock");
        logs.0[m as usize].cleared = Some(file.clone());
    }

    /// Whether `records` fit one slot each.
    pub fn fits(&self, records: &[Record]) -> bool {
        records.iter().all(|r| {
            r.entries.len() <= ENTRIES_MAX
                && (COMPACT_HEADER_BYTES as u64) + r.pp_bytes() <= self.slot_bytes
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
                    partial_q: vec![pp ^ 1; 4096],
                },
                Entry {
                    first_stripe: 6,
                    last_stripe: 9,
                    column_offset_bytes: 0,
                    len_bytes: 16384,
                    modified: 0b11,
                    partial_parity: Vec::new(),
                    partial_q: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn records_round_trip_and_a_flipped_bit_is_no_record() {
        let su = 16384;
        let mut slot = record(7).encode(9, 3, 2, 11);
        slot.resize(slot_bytes(su, 2) as usize, 0);
        let back = decode(&slot, 9).unwrap();
        assert_eq!(
            (back.seq, back.oldest_in_flight, back.generation),
            (3, 2, 11)
        );
        assert_eq!(back.entries, record(7).entries);
        assert!(decode(&slot, 8).is_none(), "another array's record");
        slot[COMPACT_HEADER_BYTES + 100] ^= 1;
        assert!(decode(&slot, 9).is_none(), "torn partial parity");
        // A record of the first format (4 KiB header), as earlier versions left it.
        let mut old = record(7).encode_as(MAGIC, 9, [3, 2, 11]);
        old.resize(slot_bytes(su, 2) as usize, 0);
        let back = decode(&old, 9).unwrap();
        assert_eq!((back.entries, back.generation), (record(7).entries, 0));
        old[HEADER_BYTES as usize + 100] ^= 1;
        assert!(decode(&old, 9).is_none(), "torn partial parity");
    }

    #[test]
    fn writers_share_group_syncs_and_every_one_returns() {
        let ppl = Arc::new(Ppl::new(1, 3, 16384, 1));
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

    /// A record of one 4 KiB entry on member 2 for stripe `stripe`.
    fn one_entry(stripe: u64) -> Record {
        Record {
            member: 2,
            entries: vec![Entry {
                first_stripe: stripe,
                last_stripe: stripe,
                column_offset_bytes: 0,
                len_bytes: 4096,
                modified: 0b1,
                partial_parity: vec![stripe as u8 + 1; 4096],
                partial_q: Vec::new(),
            }],
        }
    }

    #[test]
    fn a_writer_waiting_for_a_slot_gives_up_at_the_deadline() {
        // A 256 KiB chunk: one slot per log, so a record in flight blocks the next.
        let mut ppl = Ppl::new(7, 3, 256 << 10, 1);
        assert_eq!(ppl.slots, 1);
        ppl.wait_max = Duration::from_millis(300);
        let ppl = Arc::new(ppl);
        let f = Arc::new(tempfile_in_target());
        f.set_len(PPL_OFFSET_BYTES + PPL_BYTES).unwrap();
        let files = [None, None, Some(f.clone())];
        let (first, errors) = ppl.log(&[one_entry(0)], &files).unwrap();
        assert!(errors.is_empty());
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = Instant::now();
        let waiter = {
            let (ppl, files) = (ppl.clone(), files.clone());
            std::thread::spawn(move || {
                let r = ppl.log(&[one_entry(1)], &files).map(|_| ()).err();
                tx.send(r).unwrap();
            })
        };
        let stalled = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the waiting writer returns")
            .expect("and fails: its slot is the one in flight");
        assert!(t0.elapsed() >= Duration::from_millis(300));
        assert_eq!(stalled.member, 2);
        assert!(
            stalled.message.contains("free log slot"),
            "{}",
            stalled.message
        );
        waiter.join().unwrap();
        // The log serves again once the record in flight finishes.
        drop(first);
        let (held, errors) = ppl.log(&[one_entry(2)], &files).unwrap();
        assert!(errors.is_empty());
        assert_eq!(held.seqs, [(2, 3)]);
        let log = read_log(&f).unwrap();
        let replay = records_to_replay(&log, 7, slot_bytes(256 << 10, 1));
        assert_eq!(replay.len(), 1);
        assert_eq!(replay[0].entries, one_entry(2).entries);
    }

    fn tempfile_in_target() -> File {
        // One name per call: tests run in parallel threads of one process.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("raidlab-ppl-{}-{n}", std::process::id()));
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
        let slot = slot_bytes(su, 2) as usize;
        let mut log = vec![0u8; slot * 4];
        // Slot 0 holds seq 5 (a ring later than seq 1), written while 3 was in flight;
        // slot 1 holds seq 2 (finished long ago), slot 2 seq 3, slot 3 seq 4 (oldest 3).
        for (i, (seq, oldest)) in [(5, 3), (2, 1), (3, 3), (4, 3)].into_iter().enumerate() {
            let b = record(seq as u8).encode(1, seq, oldest, seq);
            log[i * slot..i * slot + b.len()].copy_from_slice(&b);
        }
        let seqs: Vec<u64> = records_to_replay(&log, 1, slot as u64)
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, [3, 4, 5]);
    }

    /// A tiny xorshift: the property test below wants no seed crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    /// The partial P and Q algebra: a stripe's write modifies a random set of its data
    /// chunks and is torn anywhere (any subset of its chunk and parity writes done);
    /// then up to as many members as parity blocks are lost. Recovery from the logged
    /// entry must leave P and Q equal to the parity of the data on disk (nothing
    /// lost), and every lost chunk the write left alone rebuilt to what it held (the
    /// flushed block), a lost modified chunk to its new data when the write finished.
    #[test]
    fn recovered_p_and_q_agree_with_the_data_for_random_torn_writes_and_losses() {
        use raidlab_layout::{ArraySpec, Level};
        let su = 4096u64;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (level, n, spans) in [
            (Level::Raid5, 4, None),
            (Level::Raid6, 6, None),
            (Level::Raid60, 8, Some(2)),
        ] {
            let mut spec = ArraySpec::new(level, n, su, 8 * su);
            spec.spans = spans;
            let geo = Geometry::new(&spec).unwrap();
            for _ in 0..300 {
                torn_write_then_recover(&geo, &mut rng);
            }
        }
    }

    /// A stripe's write torn anywhere, as the log and the members hold it.
    struct Torn {
        members: Vec<u32>,
        modified: Vec<bool>,
        old: Vec<Vec<u8>>,
        new: Vec<Vec<u8>>,
        finished: bool,
        /// Data then parity blocks on the members: any subset of the write done.
        disk: Vec<Vec<u8>>,
        entry: Entry,
        off: u64,
    }

    fn pq(data: &[Vec<u8>]) -> [Vec<u8>; 2] {
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let (mut p, mut q) = (vec![0u8; data[0].len()], vec![0u8; data[0].len()]);
        compute_pq(&refs, &mut p, &mut q);
        [p, q]
    }

    fn torn_write(geo: &Geometry, rng: &mut Rng) -> Torn {
        let su = geo.stripe_unit_bytes();
        let ppx = geo.parity_per_stripe() as usize;
        let id = StripeId {
            span: rng.below(u64::from(geo.spans())) as u32,
            stripe: rng.below(geo.stripes_per_span()),
        };
        let (members, order) = geo.stripe_members(id);
        let d = order.len();
        let full = rng.below(5) == 0;
        let col = if full { 0 } else { rng.below(6) * 512 };
        let len = if full {
            su
        } else {
            512 * (1 + rng.below((su - col) / 512))
        } as usize;
        let modified: Vec<bool> = (0..d).map(|_| full || rng.below(2) == 0).collect();
        let old: Vec<Vec<u8>> = (0..d).map(|_| rng.bytes(len)).collect();
        let pick = |i: usize, a: Vec<u8>, b: &[u8]| if modified[i] { a } else { b.to_vec() };
        let new: Vec<Vec<u8>> = (0..d).map(|i| pick(i, rng.bytes(len), &old[i])).collect();
        let kept: Vec<Vec<u8>> = (0..d).map(|i| pick(i, vec![0; len], &old[i])).collect();
        let [pp, pq_] = pq(&kept);
        let entry = Entry {
            first_stripe: id.stripe,
            last_stripe: id.stripe,
            column_offset_bytes: col,
            len_bytes: len as u64,
            modified: (0..d)
                .filter(|&i| modified[i])
                .fold(0, |a, i| a | 1 << members[i]),
            partial_parity: if full { Vec::new() } else { pp },
            partial_q: if full || ppx == 1 { Vec::new() } else { pq_ },
        };
        let finished = rng.below(3) == 0;
        let (o, n) = (pq(&old), pq(&new));
        let mut disk: Vec<Vec<u8>> = old.iter().cloned().chain(o).collect();
        let newer: Vec<&Vec<u8>> = new.iter().chain(&n).collect();
        for (i, b) in disk.iter_mut().enumerate() {
            if finished || rng.below(2) == 0 {
                b.clone_from(newer[i]);
            }
        }
        disk.truncate(d + ppx);
        let off = geo.stripe_offset_bytes(id) + col;
        Torn {
            members,
            modified,
            old,
            new,
            finished,
            disk,
            entry,
            off,
        }
    }

    fn torn_write_then_recover(geo: &Geometry, rng: &mut Rng) {
        let ppx = geo.parity_per_stripe() as usize;
        let Torn {
            members,
            modified,
            old,
            new,
            finished,
            mut disk,
            entry,
            off,
        } = torn_write(geo, rng);
        let d = modified.len();
        let mut failed = FailedSet::new();
        for _ in 0..rng.below(ppx as u64 + 1) {
            failed.insert(members[rng.below(members.len() as u64) as usize]);
        }
        let at = |m: u32| members.iter().position(|&x| x == m).unwrap();
        let logger = members[d + rng.below(ppx as u64) as usize];
        let writes = recover_entry(
            geo,
            logger,
            &entry,
            &failed,
            &mut BTreeSet::new(),
            |m, o, buf| {
                assert!(o == off && !failed.contains(m), "read a lost member");
                buf.copy_from_slice(&disk[at(m)]);
                Ok(())
            },
        )
        .unwrap();
        for (m, o, b) in writes.into_iter().flatten() {
            assert!(!failed.contains(m) && at(m) >= d && o == off);
            disk[at(m)] = b;
        }
        let lost: Vec<usize> = (0..d + ppx)
            .filter(|&i| failed.contains(members[i]))
            .collect();
        let mut refs: Vec<&mut [u8]> = disk.iter_mut().map(Vec::as_mut_slice).collect();
        reconstruct(&mut refs, ppx, &lost).unwrap();
        let want = pq(&disk[..d]);
        assert_eq!(disk[d..], want[..ppx], "P (and Q) agree with the data");
        for &i in lost.iter().filter(|&&i| i < d) {
            if !modified[i] {
                assert!(disk[i] == old[i], "a lost unmodified chunk comes back");
            } else if finished {
                assert!(
                    disk[i] == new[i],
                    "a lost chunk of a finished write comes back"
                );
            }
        }
    }
}
