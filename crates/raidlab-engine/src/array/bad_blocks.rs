//! md's bad-block list: per member, the ranges of its data it could not read and the
//! array could not rewrite yet. A read error fails only the sectors it hits: they are
//! found by reading the failed extent again a 4 KiB block, then a sector, at a time,
//! listed, and rewritten from the other members when those hold what is needed (md's
//! read-error correction; a disk remaps a sector on write). What cannot be rewritten
//! stays listed: reads are served around it from the other members, and only a block
//! that no member combination can give fails (EIO). A later write that lands on a
//! listed range clears it. The list of each member is kept in its superblock (see
//! [`crate::format::superblock`]), so it survives a stop; a member whose list is full
//! ([`BAD_BLOCKS_MAX`] ranges) or that needed more than
//! [`MAX_READ_ERRORS`](super::MAX_READ_ERRORS) corrections lately is failed instead.

use super::Array;
use crate::error::{io_err, member_err, Result};
use crate::format::superblock::{
    decode_bad_blocks, encode_bad_blocks, BAD_BLOCKS_MAX, SUPERBLOCK_BYTES,
};
use raidlab_layout::{FailedSet, MemberExtent, Plan, SECTOR_BYTES};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bytes read at a time when looking for the unreadable sectors of a failed extent,
/// before one sector at a time inside a block that fails.
const PROBE_BYTES: u64 = 4096;

/// One member's unreadable ranges: start to end, member data bytes, whole sectors,
/// disjoint and not touching.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct BadBlocks {
    ranges: BTreeMap<u64, u64>,
}

impl BadBlocks {
    /// From the superblock's `(first sector, sectors)` entries.
    fn from_sectors(list: &[(u64, u64)]) -> Self {
        let ranges = list
            .iter()
            .map(|&(first, n)| (first * SECTOR_BYTES, (first + n) * SECTOR_BYTES))
            .collect();
        Self { ranges }
    }

    /// The superblock's `(first sector, sectors)` entries.
    fn sectors(&self) -> Vec<(u64, u64)> {
        self.ranges
            .iter()
            .map(|(&s, &e)| (s / SECTOR_BYTES, (e - s) / SECTOR_BYTES))
            .collect()
    }

    /// `(offset, length)` in bytes per range, for `status`.
    pub(super) fn bytes(&self) -> Vec<(u64, u64)> {
        self.ranges.iter().map(|(&s, &e)| (s, e - s)).collect()
    }

    /// The parts of `[start, end)` listed.
    pub(super) fn within(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let first = self
            .ranges
            .range(..=start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        self.ranges
            .range(first..end)
            .map(|(&s, &e)| (s.max(start), e.min(end)))
            .filter(|(s, e)| s < e)
            .collect()
    }

    /// Lists `[start, end)`, merged with the ranges it overlaps or touches. False, and
    /// nothing listed, when that would make more than [`BAD_BLOCKS_MAX`] ranges.
    fn add(&mut self, start: u64, end: u64) -> bool {
        let first = self
            .ranges
            .range(..=start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        let merged: Vec<u64> = self
            .ranges
            .range(first..=end)
            .filter(|(_, &e)| e >= start)
            .map(|(&s, _)| s)
            .collect();
        if merged.is_empty() && self.ranges.len() >= BAD_BLOCKS_MAX {
            return false;
        }
        let (mut s, mut e) = (start, end);
        for k in merged {
            let ke = self.ranges.remove(&k).expect("listed");
            s = s.min(k);
            e = e.max(ke);
        }
        self.ranges.insert(s, e);
        true
    }

    /// Forgets `[start, end)`; whether anything changed. A range it would split in two
    /// when the list is full stays whole (listed too much is served from the others).
    fn clear(&mut self, start: u64, end: u64) -> bool {
        let mut changed = false;
        for (s, e) in self.within(start, end) {
            let key = self
                .ranges
                .range(..=s)
                .next_back()
                .map(|(&k, _)| k)
                .expect("within a range");
            let ke = self.ranges[&key];
            let (left, right) = (key < s, ke > e);
            if left && right && self.ranges.len() >= BAD_BLOCKS_MAX {
                continue;
            }
            self.ranges.remove(&key);
            if left {
                self.ranges.insert(key, s);
            }
            if right {
                self.ranges.insert(e, ke);
            }
            changed = true;
        }
        changed
    }
}

impl Array {
    /// Loads every working member's list from its superblock (at assembly).
    pub(super) fn load_bad_blocks(&self) -> Result<()> {
        let files = self.files.read().expect("files lock").clone();
        let failed = self.failed();
        for (role, file) in files.iter().enumerate() {
            let Some(file) = file.as_ref().filter(|_| !failed.contains(role as u32)) else {
                continue;
            };
            let path = self.member_path(role as u32);
            let mut b = [0u8; SUPERBLOCK_BYTES];
            file.read_exact_at(&mut b, 0)
                .map_err(io_err(&path, "read superblock"))?;
            let list = decode_bad_blocks(&b).map_err(|e| member_err(&path, e.to_string()))?;
            *self.bad_blocks[role].lock().expect("bad blocks lock") =
                BadBlocks::from_sectors(&list);
        }
        self.refresh_any_bad();
        Ok(())
    }

    /// Puts member `role`'s list into its encoded superblock (every superblock write).
    pub(super) fn put_bad_blocks(&self, role: u32, image: &mut [u8; SUPERBLOCK_BYTES]) {
        let list = self.bad_blocks[role as usize]
            .lock()
            .expect("bad blocks lock")
            .sectors();
        if !list.is_empty() {
            encode_bad_blocks(image, &list);
        }
    }

    /// Per role, its listed ranges as `(offset, length)` bytes of its data.
    pub(super) fn bad_block_ranges(&self) -> Vec<Vec<(u64, u64)>> {
        self.bad_blocks
            .iter()
            .map(|b| b.lock().expect("bad blocks lock").bytes())
            .collect()
    }

    /// A new disk takes role `role`: nothing of it is known unreadable.
    pub(super) fn forget_bad_blocks(&self, role: u32) {
        *self.bad_blocks[role as usize]
            .lock()
            .expect("bad blocks lock") = BadBlocks::default();
        self.refresh_any_bad();
    }

    fn refresh_any_bad(&self) {
        let any = self
            .bad_blocks
            .iter()
            .any(|b| !b.lock().expect("bad blocks lock").ranges.is_empty());
        self.any_bad.store(any, Ordering::Relaxed);
    }

    /// Whether any member has a listed range.
    pub(super) fn has_bad_blocks(&self) -> bool {
        self.any_bad.load(Ordering::Relaxed)
    }

    /// Whether member `m`'s list has a range in `[off, +len)` (the fast read path then
    /// steps aside for the planned one, which reads around it).
    pub(super) fn is_listed(&self, m: u32, off: u64, len: u64) -> bool {
        self.has_bad_blocks()
            && !self.bad_blocks[m as usize]
                .lock()
                .expect("bad blocks lock")
                .within(off, off + len)
                .is_empty()
    }

    /// Writes every member's superblock with its list when one changed (a state
    /// change, as md writes the superblock when a bad-block list changes).
    pub(super) fn persist_bad_blocks(&self) {
        if !self.bad_blocks_changed.swap(false, Ordering::AcqRel) {
            return;
        }
        self.refresh_any_bad();
        if let Err(e) = self.commit_state(|_| {}) {
            eprintln!("raidlab-engine: recording the bad-block lists: {e}");
        }
    }

    /// The first member whose listed ranges `reads` hit, with the parts they hit.
    pub(super) fn listed_in(&self, reads: &[MemberExtent]) -> Option<(u32, Vec<(u64, u64)>)> {
        if !self.has_bad_blocks() {
            return None;
        }
        for e in reads {
            let hit = self.bad_blocks[e.member as usize]
                .lock()
                .expect("bad blocks lock")
                .within(e.offset_bytes, e.offset_bytes + e.len_bytes);
            if !hit.is_empty() {
                let mut all: Vec<(u64, u64)> = Vec::new();
                for r in reads.iter().filter(|r| r.member == e.member) {
                    all.extend(
                        self.bad_blocks[e.member as usize]
                            .lock()
                            .expect("bad blocks lock")
                            .within(r.offset_bytes, r.offset_bytes + r.len_bytes),
                    );
                }
                return Some((e.member, all));
            }
        }
        None
    }

    /// Writes that landed clear the listed ranges they cover (md: a successful write
    /// to a bad block clears it), on disk too.
    pub(super) fn clear_written(&self, written: impl Iterator<Item = (u32, u64, u64)>) {
        if !self.has_bad_blocks() {
            return;
        }
        for (m, off, len) in written {
            if self.bad_blocks[m as usize]
                .lock()
                .expect("bad blocks lock")
                .clear(off, off + len)
            {
                self.bad_blocks_changed.store(true, Ordering::Release);
            }
        }
        self.persist_bad_blocks();
    }

    /// The sectors of member `m`'s `[off, +len)` that do not read: each
    /// [`PROBE_BYTES`] block read again, each sector of a block that fails. Errors on a
    /// short read (the member shrank or went away: not a bad sector).
    fn unreadable_sectors(
        &self,
        file: &File,
        m: u32,
        off: u64,
        len: u64,
    ) -> std::io::Result<Vec<(u64, u64)>> {
        let mut buf = vec![0u8; PROBE_BYTES as usize];
        let mut readable = |at: u64, n: u64| -> std::io::Result<bool> {
            if self.injected(m, at, n, false).is_some() {
                return Ok(false);
            }
            match self.read_member_uncounted(file, m, &mut buf[..n as usize], at) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(e),
                Err(_) => Ok(false),
            }
        };
        let mut bad: Vec<(u64, u64)> = Vec::new();
        let end = off + len;
        let mut at = off;
        while at < end {
            let next = ((at / PROBE_BYTES + 1) * PROBE_BYTES).min(end);
            if !readable(at, next - at)? {
                for s in (at..next).step_by(SECTOR_BYTES as usize) {
                    if readable(s, SECTOR_BYTES)? {
                        continue;
                    }
                    match bad.last_mut() {
                        Some((_, e)) if *e == s => *e = s + SECTOR_BYTES,
                        _ => bad.push((s, s + SECTOR_BYTES)),
                    }
                }
            }
            at = next;
        }
        Ok(bad)
    }

    /// Finds and lists the unreadable sectors of member `m` in its extents of `reads`
    /// after `err`. None when the member must be failed instead: a short read, an
    /// error no sector reproduces, or a full list.
    fn list_unreadable(
        &self,
        m: u32,
        err: &std::io::Error,
        reads: &[MemberExtent],
        files: &[Option<Arc<File>>],
    ) -> Option<Vec<(u64, u64)>> {
        if err.kind() == std::io::ErrorKind::UnexpectedEof {
            return None;
        }
        let file = files[m as usize].clone()?;
        let mut found = Vec::new();
        for e in reads.iter().filter(|e| e.member == m) {
            found.extend(
                self.unreadable_sectors(&file, m, e.offset_bytes, e.len_bytes)
                    .ok()?,
            );
        }
        if found.is_empty() {
            return None;
        }
        let mut list = self.bad_blocks[m as usize].lock().expect("bad blocks lock");
        let before = list.clone();
        if !found.iter().all(|&(s, e)| list.add(s, e)) {
            *list = before;
            drop(list);
            eprintln!(
                "raidlab-engine: member {m} ({}): bad-block list full ({BAD_BLOCKS_MAX} ranges)",
                self.member_path(m).display()
            );
            return None;
        }
        drop(list);
        self.any_bad.store(true, Ordering::Relaxed);
        self.bad_blocks_changed.store(true, Ordering::Release);
        Some(found)
    }

    /// md's read-error handling for member `m`'s read of `reads` that failed with
    /// `err`: its unreadable sectors listed, then rewritten from the other members where
    /// they can be. Returns false when `m` must be failed instead (see
    /// [`Array::list_unreadable`], and more than [`super::MAX_READ_ERRORS`]
    /// corrections lately, or a rewrite that fails). The caller holds the stripe locks
    /// of `reads`.
    pub(super) fn absorb_read_error(
        &self,
        m: u32,
        err: &std::io::Error,
        reads: &[MemberExtent],
        files: &[Option<Arc<File>>],
    ) -> bool {
        if self.read_error_limit_reached(m) {
            return false;
        }
        let Some(found) = self.list_unreadable(m, err, reads, files) else {
            return false;
        };
        let ok = self.rewrite_listed(m, &found, files).is_some();
        self.persist_bad_blocks();
        ok
    }

    /// Rewrites listed ranges of member `m` from the other members, a chunk row at a
    /// time, sector by sector where the whole cannot be computed; each rewrite is read
    /// back and then forgotten. Returns the bytes rewritten; None when a rewrite or its
    /// read back fails (md fails the member then). The caller holds the stripe locks
    /// and persists the lists ([`Array::persist_bad_blocks`]).
    pub(super) fn rewrite_listed(
        &self,
        m: u32,
        ranges: &[(u64, u64)],
        files: &[Option<Arc<File>>],
    ) -> Option<u64> {
        let file = files[m as usize].clone()?;
        let su = self.geo.stripe_unit_bytes();
        let mut rewritten = 0u64;
        for &(start, end) in ranges {
            let mut at = start;
            while at < end {
                let next = ((at / su + 1) * su).min(end);
                for (off, bytes) in self.reconstruct(m, at, next - at, files) {
                    if let Err(e) = self.rewrite(&file, m, off, &bytes) {
                        eprintln!(
                            "raidlab-engine: member {m} ({}): rewriting unreadable sectors: {e}",
                            self.member_path(m).display()
                        );
                        return None;
                    }
                    rewritten += bytes.len() as u64;
                }
                at = next;
            }
        }
        if rewritten > 0 {
            let count = self.count_corrected(m);
            eprintln!(
                "raidlab-engine: member {m} ({}): read error corrected: {rewritten} B \
                 rewritten from the other members ({count} of {} allowed)",
                self.member_path(m).display(),
                super::MAX_READ_ERRORS
            );
        }
        Some(rewritten)
    }

    /// Writes `bytes` at `off` of member `m`, reads them back, and forgets the range.
    fn rewrite(&self, file: &File, m: u32, off: u64, bytes: &[u8]) -> std::io::Result<()> {
        let len = bytes.len() as u64;
        if let Some(err) = self.injected(m, off, len, true) {
            return Err(err);
        }
        self.write_member(file, bytes, off)?;
        if let Some(err) = self.injected(m, off, len, false) {
            return Err(err);
        }
        let mut back = vec![0u8; bytes.len()];
        self.read_member_uncounted(file, m, &mut back, off)?;
        if back != bytes {
            return Err(std::io::Error::other(
                "read back differs from what was written",
            ));
        }
        self.bad_blocks[m as usize]
            .lock()
            .expect("bad blocks lock")
            .clear(off, off + len);
        self.bad_blocks_changed.store(true, Ordering::Release);
        Ok(())
    }

    /// Member `role`'s `[off, +len)` (inside one chunk row) computed or copied from the
    /// other members, as runs `(offset, bytes)`: whole, else sector by sector, leaving
    /// out the sectors no combination of readable members gives.
    fn reconstruct(
        &self,
        role: u32,
        off: u64,
        len: u64,
        files: &[Option<Arc<File>>],
    ) -> Vec<(u64, Vec<u8>)> {
        if let Some(b) = self.reconstruct_exact(role, off, len, files) {
            return vec![(off, b)];
        }
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        if len == SECTOR_BYTES {
            return runs;
        }
        for s in (off..off + len).step_by(SECTOR_BYTES as usize) {
            let Some(b) = self.reconstruct_exact(role, s, SECTOR_BYTES, files) else {
                continue;
            };
            match runs.last_mut() {
                Some((o, r)) if *o + r.len() as u64 == s => r.extend_from_slice(&b),
                _ => runs.push((s, b)),
            }
        }
        runs
    }

    /// [`Array::reconstruct`] of the whole range, or None. Members whose listed ranges
    /// the plan would read, or whose reads fail (their sectors are listed then, not
    /// rewritten: that waits until they are read themselves), are left out and it is
    /// planned again, until the level no longer tolerates what is left out.
    fn reconstruct_exact(
        &self,
        role: u32,
        off: u64,
        len: u64,
        files: &[Option<Arc<File>>],
    ) -> Option<Vec<u8>> {
        let mut avoided = FailedSet::from_members(&[role]);
        let mut plan = Plan::new();
        for _ in 0..=self.geo.members() {
            let mut lost = self.failed();
            avoided.iter().for_each(|a| {
                lost.insert(a);
            });
            self.geo
                .rebuild_plan(role, off, len, &lost, &mut self.chooser(), &mut plan)
                .ok()?;
            if let Some((m, _)) = self.listed_in(&plan.reads) {
                avoided.insert(m);
                continue;
            }
            match self.read_phase(files, &plan) {
                Ok(reads) => {
                    let w = self.rebuilt(role, &plan, &reads);
                    let bytes: Vec<u8> = w.iter().flat_map(|(_, b)| b.iter().copied()).collect();
                    return (bytes.len() as u64 == len).then_some(bytes);
                }
                Err((m, err)) => {
                    if self.list_unreadable(m, &err, &plan.reads, files).is_none() {
                        self.member_io_failed(m, &err);
                    }
                    avoided.insert(m);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_when_they_touch_and_split_when_written_in_the_middle() {
        let mut b = BadBlocks::default();
        assert!(b.add(4096, 8192));
        assert!(b.add(8192, 8704));
        assert!(b.add(0, 512));
        assert_eq!(b.bytes(), vec![(0, 512), (4096, 4608)]);
        assert_eq!(b.within(4000, 5000), vec![(4096, 5000)]);
        assert_eq!(b.within(512, 4096), vec![]);
        assert!(b.clear(5120, 5632));
        assert_eq!(b.bytes(), vec![(0, 512), (4096, 1024), (5632, 3072)]);
        assert!(!b.clear(512, 4096));
        assert!(b.clear(0, 1 << 20));
        assert_eq!(b.bytes(), vec![]);
    }

    #[test]
    fn a_full_list_takes_no_new_range_and_round_trips_through_sectors() {
        let mut b = BadBlocks::default();
        assert!(b.add(0, 4096));
        for i in 1..BAD_BLOCKS_MAX as u64 {
            assert!(b.add(i * 8192, i * 8192 + 512));
        }
        assert!(!b.add(1 << 30, (1 << 30) + 512), "full");
        assert!(
            b.add(8192 + 512, 8192 + 1024),
            "touching one merges with it"
        );
        // Clearing the middle of one would make two: it stays whole.
        assert!(!b.clear(1024, 1536));
        assert_eq!(b.within(1024, 1536), vec![(1024, 1536)]);
        assert!(b.clear(0, 1024), "its head goes");
        assert_eq!(BadBlocks::from_sectors(&b.sectors()), b);
    }
}
