//! The I/O path on real bytes: a request takes its stripe locks, is planned against the
//! failures of the moment, runs its read phase, computes parity per stripe segment and
//! runs its write phase; member errors fail the member and the request is planned again.

use super::faults::crash_point;
use super::members::allocate_range;
use super::stripe::{parity_of, stripe_blocks};
use super::{Array, REQUEST_BYTES_MAX};
use crate::array::staged::{Pieces, Staged, Writes};
use crate::error::{is_no_space, Error, Result};
use crate::format::superblock::{BITMAP_REGION_BYTES, DATA_OFFSET_BYTES};
use raidlab_layout::parity;
use raidlab_layout::{
    CopyChooser, FailedSet, Geometry, Plan, PlanError, Request, StripeId, StripeKind, StripePlan,
    SECTOR_BYTES,
};
use std::borrow::Cow;
use std::fs::File;
use std::io::IoSlice;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Whether a member file is sparse, so that writes allocate their blocks first
/// ([`Array::reserve_space`]); cached per file (a rebuild puts a new file in a role).
#[derive(Default)]
pub(super) struct Sparseness {
    /// The `Arc<File>` the state is about (its address), 0 for none yet.
    file: AtomicUsize,
    /// [`SPARSE`], [`ALLOCATED`] or [`NO_FALLOCATE`]; meaningful for `file` only.
    state: AtomicU8,
}

const ALLOCATED: u8 = 1;
const SPARSE: u8 = 2;
const NO_FALLOCATE: u8 = 3;

impl Sparseness {
    /// Whether `file` has holes (blocks not allocated below its size) and a filesystem
    /// that can allocate them.
    fn is_sparse(&self, file: &Arc<File>) -> bool {
        let id = Arc::as_ptr(file) as usize;
        if self.file.load(Ordering::Acquire) != id {
            let state = match file.metadata() {
                Ok(m) if m.file_type().is_file() && m.blocks() * 512 < m.len() => SPARSE,
                _ => ALLOCATED,
            };
            self.state.store(state, Ordering::Release);
            self.file.store(id, Ordering::Release);
            return state == SPARSE;
        }
        self.state.load(Ordering::Acquire) == SPARSE
    }

    /// Its filesystem has no `fallocate`: writes go without it.
    fn unsupported(&self) {
        self.state.store(NO_FALLOCATE, Ordering::Release);
    }
}

/// Whether writes to sparse members allocate their blocks first: always, but for tests
/// of what the engine does when a write lands in part (`RAIDLAB_ENGINE_NO_RESERVE=1`,
/// as a filesystem without `fallocate` or one that runs out of space on an overwrite
/// behaves).
fn reserve_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RAIDLAB_ENGINE_NO_RESERVE").is_none())
}

/// Cycles through mirror copies from a shared counter, so concurrent readers spread.
pub(super) struct Rotating(u64);

impl CopyChooser for Rotating {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        let i = (self.0 % candidates.len() as u64) as usize;
        self.0 = self.0.wrapping_add(1);
        i
    }
}

/// A request planned against the failures of the moment, with its read phase done.
struct PlannedRead {
    /// The member files, a snapshot: marking a member failed (which takes the files
    /// lock again) never waits on the request itself.
    files: Vec<Option<Arc<File>>>,
    /// The failures the plan was made with, with `avoided`.
    failed: FailedSet,
    /// Working members left out of the plan for sectors on their bad-block lists that
    /// it would have read.
    avoided: FailedSet,
    plan: Plan,
    reads: Staged,
}

/// A planned read, or none: the request needs sectors no member combination gives.
enum Planned {
    Read(PlannedRead),
    /// The members whose listed sectors, together, are more than the level tolerates.
    Unreadable(FailedSet),
}

impl Array {
    fn check_request(&self, offset_bytes: u64, len_bytes: u64) -> Result<()> {
        if len_bytes > REQUEST_BYTES_MAX {
            return Err(Error::Input(format!(
                "request of {len_bytes} B exceeds {REQUEST_BYTES_MAX} B"
            )));
        }
        // Bounds and alignment, as the planner checks them, before taking locks.
        if len_bytes == 0 {
            return Err(PlanError::EmptyRequest.into());
        }
        if !offset_bytes.is_multiple_of(SECTOR_BYTES) || !len_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(PlanError::Unaligned {
                offset_bytes,
                len_bytes,
            }
            .into());
        }
        let end = offset_bytes.saturating_add(len_bytes);
        if end > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.capacity_bytes(),
            }
            .into());
        }
        Ok(())
    }

    pub(super) fn chooser(&self) -> Rotating {
        Rotating(self.reads_started.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs the read phase; on a member error returns the member.
    pub(super) fn read_phase(
        &self,
        files: &[Option<Arc<File>>],
        plan: &Plan,
    ) -> std::result::Result<Staged, (u32, std::io::Error)> {
        let mut staged = Staged::zeroed(&plan.reads);
        for (e, buf) in staged.iter_mut() {
            let file = files[e.member as usize]
                .as_ref()
                .expect("plans read only members with a file");
            if let Some(err) = self.injected(e.member, e.offset_bytes, e.len_bytes, false) {
                return Err((e.member, err));
            }
            self.read_member(file, e.member, buf, e.offset_bytes)
                .map_err(|err| (e.member, err))?;
        }
        Ok(staged)
    }

    /// Runs the write phase: every extent is attempted; failing members are marked
    /// failed. Errors when the array no longer tolerates its failed set, or when a
    /// member's filesystem is full (`ENOSPC`, `EDQUOT`): that member is not failed (a
    /// full filesystem is not a dead disk), the regions of `writes` stay dirty in the
    /// bitmap until resynced (parts of the write may have landed: data without its
    /// parity), and the error names the member.
    fn write_phase(&self, files: &[Option<Arc<File>>], writes: &Writes, fua: bool) -> Result<()> {
        if let Some((m, err)) = self.reserve_space(files, writes) {
            // Nothing written: the stripes are as they were.
            return Err(self.no_space_error(m, err));
        }
        let mut failed_now = Vec::new();
        let mut no_space: Option<(u32, std::io::Error)> = None;
        for (e, buf) in writes.iter() {
            if failed_now.iter().any(|(m, _)| *m == e.member) {
                continue;
            }
            let file = files[e.member as usize]
                .as_ref()
                .expect("plans write only members with a file");
            crash_point();
            let r = match self.injected(e.member, e.offset_bytes, e.len_bytes, true) {
                Some(err) => Err(err),
                None => self.write_extent(file, buf, e.offset_bytes),
            };
            match r {
                Err(err) if is_no_space(&err) => {
                    no_space.get_or_insert((e.member, err));
                }
                Err(err) => failed_now.push((e.member, err)),
                Ok(()) => {}
            }
        }
        if fua && no_space.is_none() {
            let mut synced = FailedSet::new();
            for (e, _) in writes.iter() {
                if synced.insert(e.member) && !failed_now.iter().any(|(m, _)| *m == e.member) {
                    match files[e.member as usize].as_ref().expect("file").sync_data() {
                        Err(err) if is_no_space(&err) => {
                            no_space.get_or_insert((e.member, err));
                        }
                        Err(err) => failed_now.push((e.member, err)),
                        Ok(()) => {}
                    }
                }
            }
        }
        for (m, err) in &failed_now {
            self.member_io_failed(*m, err);
        }
        // md: a write that lands on a listed bad block clears it.
        let landed = |m: u32| {
            !failed_now.iter().any(|(f, _)| *f == m)
                && no_space.as_ref().is_none_or(|(f, _)| *f != m)
        };
        self.clear_written(
            writes
                .iter()
                .filter(|(e, _)| landed(e.member))
                .map(|(e, _)| (e.member, e.offset_bytes, e.len_bytes)),
        );
        if let Some((m, err)) = no_space {
            self.pin_regions(writes);
            return Err(self.no_space_error(m, err));
        }
        let failed = self.failed();
        if !self.geo.tolerates(&failed) {
            return Err(PlanError::TooManyFailures {
                level: self.geo.level(),
                failed,
                tolerated_failures: self.geo.tolerated_failures(),
            }
            .into());
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset_bytes` (both multiples of 512 B, at most
    /// [`REQUEST_BYTES_MAX`]), reconstructing lost members' data.
    pub fn read(&self, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        self.check_request(offset_bytes, len)?;
        let req = Request {
            offset_bytes,
            len_bytes: len,
            write: false,
        };
        let _locks = self.lock_range(offset_bytes, len);
        if self.read_direct(offset_bytes, buf) {
            return Ok(());
        }
        match self.plan_and_read(req)? {
            Planned::Read(read) => {
                self.assemble_read(req, &read.failed, &read.reads, buf);
                Ok(())
            }
            Planned::Unreadable(_) => self.read_in_pieces(offset_bytes, buf),
        }
    }

    /// A read that needs sectors listed bad on more members than the level tolerates,
    /// again a 4 KiB block and then a sector at a time: every block that can be read or
    /// rebuilt is, and the error names the logical byte ranges that cannot (md returns
    /// EIO for those blocks only). The caller holds the stripe locks.
    fn read_in_pieces(&self, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        const PIECE: u64 = 4096;
        let end = offset_bytes + buf.len() as u64;
        let mut unreadable: Vec<(u64, u64)> = Vec::new();
        let mut members = FailedSet::new();
        let mut read_piece = |at: u64, len: u64, buf: &mut [u8]| -> Result<bool> {
            let req = Request {
                offset_bytes: at,
                len_bytes: len,
                write: false,
            };
            let dst = &mut buf[(at - offset_bytes) as usize..(at - offset_bytes + len) as usize];
            match self.plan_and_read(req)? {
                Planned::Read(r) => self.assemble_read(req, &r.failed, &r.reads, dst),
                Planned::Unreadable(m) => {
                    m.iter().for_each(|m| {
                        members.insert(m);
                    });
                    dst.fill(0);
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let mut at = offset_bytes;
        while at < end {
            let next = ((at / PIECE + 1) * PIECE).min(end);
            if !read_piece(at, next - at, buf)? {
                for s in (at..next).step_by(SECTOR_BYTES as usize) {
                    if read_piece(s, SECTOR_BYTES, buf)? {
                        continue;
                    }
                    match unreadable.last_mut() {
                        Some((_, e)) if *e == s => *e += SECTOR_BYTES,
                        _ => unreadable.push((s, s + SECTOR_BYTES)),
                    }
                }
            }
            at = next;
        }
        if unreadable.is_empty() {
            return Ok(());
        }
        let ranges: Vec<String> = unreadable
            .iter()
            .map(|(s, e)| format!("{s}+{}", e - s))
            .collect();
        Err(self.unreadable_error(
            &members,
            format!("logical bytes {} unreadable", ranges.join(" ")),
        ))
    }

    /// The error of a request that needs sectors listed bad on `members` (one line:
    /// the first member's path, what failed, and why the others could not make up).
    fn unreadable_error(&self, members: &FailedSet, what: String) -> Error {
        let first = members.iter().next().unwrap_or(0);
        Error::Io {
            path: self.member_path(first),
            op: "read",
            source: std::io::Error::other(format!(
                "{what}: bad blocks on members {members} at the same place, more than {} \
                 tolerates (status lists them; writing the blocks clears them)",
                self.geo.level()
            )),
        }
    }

    /// A healthy read straight into the caller's buffer: each member's run of
    /// consecutive chunks is one vectored read (`preadv`) scattered to where those
    /// chunks go in `buf`, so nothing is staged, zeroed or copied a second time (the
    /// planned path costs an allocation, a memset and a memcpy per byte, which made
    /// 1 MiB sequential reads slower than a plain file server). Only when every chunk
    /// has one copy on a working member; returns false, having read nothing the caller
    /// relies on, for anything else (a failed member, a mirror whose copies the planned
    /// path spreads over, a listed bad block, an injected fault, a read error or a
    /// short read), which the
    /// planned path then serves with reconstruction and read-error correction.
    fn read_direct(&self, offset_bytes: u64, buf: &mut [u8]) -> bool {
        // Checksums are checked on the planned path (see `integrity`).
        if !self.failed().is_empty() || self.checksums.is_some() {
            return false;
        }
        let geo = &self.geo;
        // (member, member offset, piece index): pieces are buf cut at chunk borders.
        let mut pieces: Vec<(u32, u64, usize)> = Vec::new();
        let mut slices: Vec<Option<&mut [u8]>> = Vec::new();
        let mut rest: &mut [u8] = buf;
        let len_bytes = rest.len() as u64;
        for chunk in geo.chunks(offset_bytes, len_bytes) {
            let mut copies = chunk.copies();
            let (Some(copy), None) = (copies.next(), copies.next()) else {
                return false;
            };
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(chunk.len_bytes as usize);
            rest = tail;
            pieces.push((copy.member, copy.offset_bytes, slices.len()));
            slices.push(Some(piece));
        }
        pieces.sort_by_key(|&(member, offset, _)| (member, offset));
        let files = self.files.read().expect("files lock").clone();
        let mut i = 0;
        while i < pieces.len() {
            let (member, first_offset, _) = pieces[i];
            // A run: this member's pieces while its offsets follow on (IOV_MAX bounds it).
            let mut iov = Vec::new();
            let mut next = first_offset;
            while i < pieces.len()
                && pieces[i].0 == member
                && pieces[i].1 == next
                && iov.len() < IOV_MAX
            {
                let slice = slices[pieces[i].2].take().expect("each piece once");
                next += slice.len() as u64;
                iov.push(std::io::IoSliceMut::new(slice));
                i += 1;
            }
            let Some(file) = files[member as usize].as_ref() else {
                return false;
            };
            let run_bytes = next - first_offset;
            if self.is_listed(member, first_offset, run_bytes)
                || self
                    .injected(member, first_offset, run_bytes, false)
                    .is_some()
            {
                return false;
            }
            match rustix::io::preadv(file.as_ref(), &mut iov, DATA_OFFSET_BYTES + first_offset) {
                Ok(n) if n as u64 == run_bytes => {}
                _ => return false,
            }
        }
        true
    }

    /// Plans `req` against the current failures and runs its read phase. A member
    /// whose read fails has the sectors it cannot read listed and rewritten from the
    /// other members (md's read-error correction, see `bad_blocks`), and the read is
    /// planned again; when that cannot be done it is marked failed. Listed sectors the
    /// plan would read are rewritten once, else their member is left out of the plan
    /// (`avoided`), which reconstructs around them; `Unreadable` when that leaves out
    /// more than the level tolerates.
    fn plan_and_read(&self, req: Request) -> Result<Planned> {
        let files = self.files.read().expect("files lock").clone();
        let mut plan = Plan::new();
        let mut avoided = FailedSet::new();
        let mut rewritten = FailedSet::new();
        // Each round fails, leaves out or rewrites a member: bounded.
        for _ in 0..=3 * self.geo.members() {
            let failed = self.failed();
            let mut lost = failed;
            avoided.iter().for_each(|m| {
                lost.insert(m);
            });
            match self.geo.plan(req, &lost, &mut self.chooser(), &mut plan) {
                Err(PlanError::TooManyFailures { .. })
                    if !avoided.is_empty() && self.geo.tolerates(&failed) =>
                {
                    return Ok(Planned::Unreadable(avoided))
                }
                r => r?,
            }
            if let Some((m, listed)) = self.listed_in(&plan.reads) {
                // Rewritten once per request; still listed then, it is left out.
                if !rewritten.insert(m) {
                    avoided.insert(m);
                } else if self.rewrite_listed(m, &listed, &files).is_none() {
                    self.member_io_failed(m, &std::io::Error::other("rewrite failed"));
                }
                self.persist_bad_blocks();
                continue;
            }
            match self.read_phase(&files, &plan) {
                Ok(reads) => {
                    return Ok(Planned::Read(PlannedRead {
                        files,
                        failed: lost,
                        avoided,
                        plan,
                        reads,
                    }))
                }
                Err((m, err)) => {
                    if !self.absorb_read_error(m, &err, &plan.reads, &files) {
                        self.member_io_failed(m, &err);
                    }
                }
            }
        }
        Err(Error::Input(format!(
            "read of {} B at {} B: member reads kept failing",
            req.len_bytes, req.offset_bytes
        )))
    }

    /// Copies the request's bytes out of the staged reads, rebuilding lost chunks.
    fn assemble_read(&self, req: Request, failed: &FailedSet, reads: &Staged, buf: &mut [u8]) {
        let geo = &self.geo;
        for chunk in geo.chunks(req.offset_bytes, req.len_bytes) {
            let (at, len) = (chunk.logical_bytes, chunk.len_bytes);
            let dst = &mut buf[chunk.request_range()];
            let copy = chunk
                .copies()
                .filter(|c| !failed.contains(c.member))
                .find_map(|c| reads.get(c.member, c.offset_bytes, len));
            if let Some(src) = copy {
                dst.copy_from_slice(src);
            } else {
                let a = geo
                    .stripe_address(at)
                    .expect("only parity levels lose a chunk the plan still reads");
                let lost = failed.intersection(&FailedSet::from_members(
                    &geo.span_members(a.id.span).collect::<Vec<_>>(),
                ));
                let (_, order, blocks) =
                    stripe_blocks(geo, a.id, a.column_bytes, len, reads, &lost);
                let slot = order.iter().position(|&k| k == a.data_index).expect("slot");
                dst.copy_from_slice(&blocks[slot]);
            }
        }
    }

    /// Writes `data` at `offset_bytes` (multiples of 512 B, at most
    /// [`REQUEST_BYTES_MAX`]), keeping parity and copies consistent. `fua`: the written
    /// members are synced before returning.
    pub fn write(&self, offset_bytes: u64, data: &[u8], fua: bool) -> Result<()> {
        let len = data.len() as u64;
        self.check_request(offset_bytes, len)?;
        let req = Request {
            offset_bytes,
            len_bytes: len,
            write: true,
        };
        let _locks = self.lock_range(offset_bytes, len);
        // A write must reach every working member it writes to: a plan that leaves one
        // out for its bad blocks would leave it stale where they are not.
        let read = match self.plan_and_read(req)? {
            Planned::Read(r) if r.avoided.is_empty() || self.writes_as_planned(req, &r) => r,
            Planned::Read(PlannedRead { avoided: m, .. }) | Planned::Unreadable(m) => {
                return Err(self.unreadable_error(
                    &m,
                    format!(
                        "write of {len} B at {offset_bytes} B: the stripes it must read are \
                         unreadable"
                    ),
                ))
            }
        };
        let writes = self.stage_writes(req, data, &read.failed, &read.plan, &read.reads);
        // md's PPL: the partial parity on each parity member, synced, before any member
        // write of the request.
        let _ppl = self.log_partial_parity(req, &read)?;
        let _journaled = match &self.journal {
            Some(j) => {
                // The record holds each extent whole: pieces are joined for it.
                let joined: Vec<(u32, u64, Cow<[u8]>)> = writes
                    .iter()
                    .map(|(e, p)| (e.member, e.offset_bytes, p.contiguous()))
                    .collect();
                let extents: Vec<(u32, u64, &[u8])> =
                    joined.iter().map(|(m, o, b)| (*m, *o, &**b)).collect();
                Some(j.append(&extents, || self.flush())?)
            }
            None => None,
        };
        let _writing = self.mark_regions(&writes)?;
        self.write_phase(&read.files, &writes, fua)?;
        self.refresh_rebuilt_rows(req, &read.failed)
    }

    /// Whether `read`, planned around members with bad blocks (`avoided`: e.g. an RMW
    /// instead of an RCW that would read them), writes what the plan without them
    /// writes: then the members left out hold nothing the write changes.
    fn writes_as_planned(&self, req: Request, read: &PlannedRead) -> bool {
        let mut full = Plan::new();
        if self
            .geo
            .plan(req, &self.failed(), &mut self.chooser(), &mut full)
            .is_err()
        {
            return false;
        }
        let key = |e: &raidlab_layout::MemberExtent| (e.member, e.offset_bytes, e.len_bytes);
        let mut a: Vec<_> = full.writes.iter().map(key).collect();
        let mut b: Vec<_> = read.plan.writes.iter().map(key).collect();
        a.sort_unstable();
        b.sort_unstable();
        a == b
    }

    /// Writes the request's partial parity log records (see [`crate::format::ppl`]) when the
    /// array has a PPL; they stay in flight until the returned guard is dropped.
    fn log_partial_parity(
        &self,
        req: Request,
        read: &PlannedRead,
    ) -> Result<Option<crate::format::ppl::InFlight<'_>>> {
        let Some(ppl) = &self.ppl else {
            return Ok(None);
        };
        let records = self.ppl_records(req, &read.failed, &read.plan, &read.reads);
        if records.is_empty() {
            return Ok(None);
        }
        if !ppl.fits(&records) {
            // The planner leaves at most the first and last stripe partly written, so
            // this does not happen; refuse rather than write an unlogged stripe.
            return Err(Error::Input(format!(
                "ppl: the write of {} B at {} B does not fit one log slot",
                req.len_bytes, req.offset_bytes
            )));
        }
        let (guard, errors) = ppl.log(&records, &read.files).map_err(|s| {
            // A log that stays busy is no fault of the member: the write fails, unwritten.
            Error::Io {
                path: self.member_path(s.member),
                op: "ppl",
                source: std::io::Error::new(std::io::ErrorKind::TimedOut, s.message),
            }
        })?;
        for (m, err) in &errors {
            self.member_io_failed(*m, err);
        }
        Ok(Some(guard))
    }

    /// The partial parity log records of a write, one per parity member: per stripe
    /// segment the XOR of the data chunks the write does not modify (RCW: the chunks
    /// read; RMW: old parity XOR old data of the modified chunks; degraded: the chunks
    /// rebuilt), and one entry spanning the stripes written whole, which carry none.
    fn ppl_records(
        &self,
        req: Request,
        failed: &FailedSet,
        plan: &Plan,
        reads: &Staged,
    ) -> Vec<crate::format::ppl::Record> {
        use crate::format::ppl::{Entry, Record};
        let geo = &self.geo;
        let end = req.offset_bytes + req.len_bytes;
        let inside = |l: u64, len: u64| l >= req.offset_bytes && l + len <= end;
        let mut records: Vec<Record> = Vec::new();
        for sp in &plan.stripes {
            if !writes_parity(sp.kind) {
                continue;
            }
            let id = StripeId {
                span: sp.span,
                stripe: sp.stripe,
            };
            let (col, len) = (sp.column_offset_bytes, sp.column_len_bytes);
            let (members, order) = geo.stripe_members(id);
            let d = order.len();
            // Every parity member of the stripe logs it (RAID 6: P and Q), so a copy
            // survives any loss the stripe survives.
            let loggers: Vec<u32> = members[d..]
                .iter()
                .copied()
                .filter(|&m| !failed.contains(m))
                .collect();
            if loggers.is_empty() {
                // No parity is written: nothing to make consistent (md logs nothing).
                continue;
            }
            let modified: Vec<bool> = order
                .iter()
                .map(|&k| inside(geo.logical_of(id, k, col), len))
                .collect();
            let mask = members[..d]
                .iter()
                .zip(&modified)
                .filter(|(_, &m)| m)
                .fold(0u64, |acc, (&m, _)| acc | 1 << m);
            let whole = modified.iter().all(|&m| m);
            let (pp, pq) = if whole {
                (Vec::new(), Vec::new())
            } else {
                partial_parity(geo, sp, &members, &modified, reads)
            };
            let (mut pp, mut pq) = (Some(pp), Some(pq));
            for (i, &pm) in loggers.iter().enumerate() {
                let entries = record_of(&mut records, pm);
                if whole {
                    whole_stripe_entry(entries, sp.stripe, geo.stripe_unit_bytes(), mask);
                    continue;
                }
                // The last logger takes the partial parity, the others a copy.
                let last = i + 1 == loggers.len();
                let take = |v: &mut Option<Vec<u8>>| match last {
                    true => v.take().expect("taken once"),
                    false => v.clone().expect("not taken yet"),
                };
                entries.push(Entry {
                    first_stripe: sp.stripe,
                    last_stripe: sp.stripe,
                    column_offset_bytes: col,
                    len_bytes: len,
                    modified: mask,
                    partial_parity: take(&mut pp),
                    partial_q: take(&mut pq),
                });
            }
        }
        records.sort_by_key(|r| r.member);
        records
    }

    /// The write phase's bytes: new data on every surviving copy (slices of `data`,
    /// not copies), new parity per stripe segment (RMW, RCW, full stripe, degraded).
    fn stage_writes<'d>(
        &self,
        req: Request,
        data: &'d [u8],
        failed: &FailedSet,
        plan: &Plan,
        reads: &Staged,
    ) -> Writes<'d> {
        let geo = &self.geo;
        let mut w = Writes::new(&plan.writes);
        let end = req.offset_bytes + req.len_bytes;
        let new_of = |l: u64, len: u64| -> Option<&[u8]> {
            (l >= req.offset_bytes && l + len <= end).then(|| {
                let o = (l - req.offset_bytes) as usize;
                &data[o..o + len as usize]
            })
        };
        for chunk in geo.chunks(req.offset_bytes, req.len_bytes) {
            let src = &data[chunk.request_range()];
            for c in chunk.copies() {
                if !failed.contains(c.member) {
                    w.put(c.member, c.offset_bytes, Cow::Borrowed(src));
                }
            }
        }
        for sp in &plan.stripes {
            if !writes_parity(sp.kind) {
                continue;
            }
            let id = StripeId {
                span: sp.span,
                stripe: sp.stripe,
            };
            let off = geo.stripe_offset_bytes(id) + sp.column_offset_bytes;
            let (members, order) = geo.stripe_members(id);
            let d = order.len();
            let ppx = geo.parity_per_stripe();
            let (p, q) = new_parity(geo, sp, (&members, &order), &new_of, reads);
            if !failed.contains(members[d]) {
                w.put(members[d], off, Cow::Owned(p));
            }
            if ppx == 2 && !failed.contains(members[d + 1]) {
                w.put(members[d + 1], off, Cow::Owned(q));
            }
        }
        w.finish()
    }

    /// Writes an extent's `pieces` at member data byte `off`: one piece as it is,
    /// several with vectored writes straight from where they are, unless checksums
    /// are kept (their sums are taken over the extent in one slice).
    fn write_extent(&self, file: &File, pieces: Pieces, off: u64) -> std::io::Result<()> {
        if self.checksums.is_some() || pieces.len() == 1 {
            return self.write_member(file, &pieces.contiguous(), off);
        }
        pwrite_all(file, pieces.slices(), DATA_OFFSET_BYTES + off)
    }

    /// Syncs every active member (NBD FLUSH: with CAN_MULTI_CONN it covers writes of all
    /// connections, which share these files).
    pub fn flush(&self) -> Result<()> {
        let files = self.files.read().expect("files lock");
        let failed = self.failed();
        let mut no_space = None;
        for (role, f) in files.iter().enumerate() {
            if let Some(f) = f.as_ref().filter(|_| !failed.contains(role as u32)) {
                match f.sync_data() {
                    // Delayed allocation (NFS, some FUSE filesystems): full, not dead.
                    Err(e) if is_no_space(&e) => {
                        no_space.get_or_insert((role as u32, e));
                    }
                    Err(e) => self.member_io_failed(role as u32, &e),
                    Ok(()) => {}
                }
            }
        }
        if let Some((m, e)) = no_space {
            return Err(self.no_space_error(m, e));
        }
        let failed = self.failed();
        if self.geo.tolerates(&failed) {
            Ok(())
        } else {
            Err(PlanError::TooManyFailures {
                level: self.geo.level(),
                failed,
                tolerated_failures: self.geo.tolerated_failures(),
            }
            .into())
        }
    }

    /// Allocates, on sparse members, the blocks `writes` is about to fill, before any
    /// is written: a full filesystem then refuses the write with every stripe as it
    /// was (no parity to resync, and on a degraded array no lost chunk computed from
    /// torn parity). Returns the member whose filesystem is full. Members allocated in
    /// full (created without `--sparse`) cost nothing here; a filesystem without
    /// `fallocate` is not asked again, and its writes rely on [`Array::pin_regions`].
    fn reserve_space(
        &self,
        files: &[Option<Arc<File>>],
        writes: &Writes,
    ) -> Option<(u32, std::io::Error)> {
        if !reserve_enabled() {
            return None;
        }
        for (e, _) in writes.iter() {
            let Some(file) = files[e.member as usize].as_ref() else {
                continue;
            };
            let slot = &self.sparse[e.member as usize];
            if !slot.is_sparse(file) {
                continue;
            }
            match allocate_range(file, DATA_OFFSET_BYTES + e.offset_bytes, e.len_bytes) {
                Ok(()) => {}
                Err(err) if is_no_space(&err) => return Some((e.member, err)),
                Err(err) if err.raw_os_error() == Some(libc::EOPNOTSUPP) => slot.unsupported(),
                // The write itself meets and reports any other error.
                Err(_) => {}
            }
        }
        None
    }

    /// Keeps the bitmap regions of `writes` set until a resync of them succeeds: a
    /// write that stopped for lack of space may have left data without its parity.
    fn pin_regions(&self, writes: &Writes) {
        if self.geo.tolerated_failures() == 0 {
            // No parity or copies to disagree.
            return;
        }
        let mut unsynced = self.unsynced.lock().expect("unsynced lock");
        for (e, _) in writes.iter() {
            let first = e.offset_bytes / BITMAP_REGION_BYTES;
            let last = (e.offset_bytes + e.len_bytes - 1) / BITMAP_REGION_BYTES;
            for r in first..=last {
                *unsynced.entry(r).or_default() += 1;
            }
        }
    }

    /// The error of a member whose filesystem is full (one line, naming it).
    fn no_space_error(&self, role: u32, source: std::io::Error) -> Error {
        Error::Io {
            path: self.member_path(role),
            op: "write (filesystem full; the member is not failed)",
            source,
        }
    }
}

/// Slices one `preadv`/`pwritev` takes at most (Linux's UIO_MAXIOV; the libc crate
/// does not export it for Linux).
const IOV_MAX: usize = 1024;

/// Writes `slices` one after another at byte `pos` of `file` with `pwritev`, as many
/// at a time as one call takes (IOV_MAX), until all are written.
fn pwrite_all<'a>(
    file: &File,
    slices: impl Iterator<Item = &'a [u8]>,
    mut pos: u64,
) -> std::io::Result<()> {
    let mut iov: Vec<IoSlice> = slices.map(IoSlice::new).collect();
    let mut rest = &mut iov[..];
    while !rest.is_empty() {
        let n = rest.len().min(IOV_MAX);
        match rustix::io::pwritev(file, &rest[..n], pos) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(k) => {
                pos += k as u64;
                IoSlice::advance_slices(&mut rest, k);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The new P and Q (empty without Q) of stripe segment `sp` of a write, whose
/// `(members, order)` are [`Geometry::stripe_members`]'s: updated from the old parity and data
/// (RMW), or computed from the segment's data, new where the write brings it
/// (`new_of`), read or rebuilt elsewhere.
fn new_parity<'d>(
    geo: &Geometry,
    sp: &StripePlan,
    (members, order): (&[u32], &[u32]),
    new_of: &impl Fn(u64, u64) -> Option<&'d [u8]>,
    reads: &Staged,
) -> (Vec<u8>, Vec<u8>) {
    let id = StripeId {
        span: sp.span,
        stripe: sp.stripe,
    };
    let (col, len) = (sp.column_offset_bytes, sp.column_len_bytes);
    let off = geo.stripe_offset_bytes(id) + col;
    let d = order.len();
    let ppx = geo.parity_per_stripe();
    match sp.kind {
        StripeKind::Rmw => {
            let mut p = reads.must(members[d], off, len).to_vec();
            let mut q = if ppx == 2 {
                reads.must(members[d + 1], off, len).to_vec()
            } else {
                Vec::new()
            };
            for (slot, &k) in order.iter().enumerate() {
                if let Some(new) = new_of(geo.logical_of(id, k, col), len) {
                    let old = reads.must(members[slot], off, len);
                    parity::update_p(&mut p, old, new);
                    if ppx == 2 {
                        parity::update_q(&mut q, slot as u32, old, new);
                    }
                }
            }
            (p, q)
        }
        _ => {
            let old = (sp.kind == StripeKind::DegradedWrite)
                .then(|| stripe_blocks(geo, id, col, len, reads, &sp.lost).2);
            let blocks: Vec<&[u8]> = order
                .iter()
                .enumerate()
                .map(|(slot, &k)| match new_of(geo.logical_of(id, k, col), len) {
                    Some(new) => new,
                    None => match &old {
                        Some(o) => o[slot].as_slice(),
                        None => reads.must(members[slot], off, len),
                    },
                })
                .collect();
            parity_of(&blocks, ppx)
        }
    }
}

/// The entries of member `pm`'s record among `records`, a new record if it has none.
fn record_of(
    records: &mut Vec<crate::format::ppl::Record>,
    pm: u32,
) -> &mut Vec<crate::format::ppl::Entry> {
    let at = match records.iter().position(|r| r.member == pm) {
        Some(i) => i,
        None => {
            records.push(crate::format::ppl::Record {
                member: pm,
                entries: Vec::new(),
            });
            records.len() - 1
        }
    };
    &mut records[at].entries
}

/// Notes a stripe the write covers whole: recovery recomputes its parity from the
/// data, so one entry without partial parity spans every such stripe of the request
/// on this parity member.
fn whole_stripe_entry(
    entries: &mut Vec<crate::format::ppl::Entry>,
    stripe: u64,
    stripe_unit_bytes: u64,
    mask: u64,
) {
    match entries.iter_mut().find(|e| e.partial_parity.is_empty()) {
        Some(e) => {
            e.first_stripe = e.first_stripe.min(stripe);
            e.last_stripe = e.last_stripe.max(stripe);
        }
        None => entries.push(crate::format::ppl::Entry {
            first_stripe: stripe,
            last_stripe: stripe,
            column_offset_bytes: 0,
            len_bytes: stripe_unit_bytes,
            modified: mask,
            partial_parity: Vec::new(),
            partial_q: Vec::new(),
        }),
    }
}

/// The partial parity of stripe segment `sp` of a write: the XOR of the data chunks
/// it does not modify (`modified`, by syndrome slot), and on RAID 6 their Q syndrome
/// (empty otherwise), from the reads (RCW: those chunks; RMW: old parity with the old
/// data of the modified ones taken out; degraded: those rebuilt).
fn partial_parity(
    geo: &Geometry,
    sp: &StripePlan,
    members: &[u32],
    modified: &[bool],
    reads: &Staged,
) -> (Vec<u8>, Vec<u8>) {
    let id = StripeId {
        span: sp.span,
        stripe: sp.stripe,
    };
    let (col, len) = (sp.column_offset_bytes, sp.column_len_bytes);
    let off = geo.stripe_offset_bytes(id) + col;
    let d = modified.len();
    let q_too = geo.parity_per_stripe() == 2;
    let rmw = sp.kind == StripeKind::Rmw;
    let old = (sp.kind == StripeKind::DegradedWrite)
        .then(|| stripe_blocks(geo, id, col, len, reads, &sp.lost).2);
    let chunk = |slot: usize| match &old {
        Some(o) => o[slot].as_slice(),
        None => reads.must(members[slot], off, len),
    };
    // RMW takes the modified chunks' old data out of the old parity; the other kinds
    // sum the chunks the write leaves alone. Either way each chunk enters once, with
    // its Q coefficient.
    let (mut pp, mut pq) = if rmw {
        let q = if q_too {
            chunk(d + 1).to_vec()
        } else {
            Vec::new()
        };
        (chunk(d).to_vec(), q)
    } else {
        let q = if q_too {
            vec![0u8; len as usize]
        } else {
            Vec::new()
        };
        (vec![0u8; len as usize], q)
    };
    for slot in (0..d).filter(|&slot| modified[slot] == rmw) {
        let data = chunk(slot);
        parity::xor_into(&mut pp, data);
        if q_too {
            parity::mul_xor_into(&mut pq, parity::gf_pow2(slot as u32), data);
        }
    }
    (pp, pq)
}

/// Whether a stripe of this kind writes its parity (and so needs it made consistent):
/// the write kinds, not reads or a degraded read.
fn writes_parity(kind: StripeKind) -> bool {
    matches!(
        kind,
        StripeKind::Rmw | StripeKind::Rcw | StripeKind::FullStripe | StripeKind::DegradedWrite
    )
}
