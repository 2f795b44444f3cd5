//! md's `check` and `repair`: every stripe's parity (every copy, for mirrors) compared
//! with its data, mismatches counted and, with `repair`, fixed where the array can tell
//! which block is wrong: RAID 6 and 60 locate the one bad block of a stripe from its P
//! and Q syndromes (md's raid6check) and rewrite that block, data or parity; mirrors of
//! three or more copies rewrite the copies the majority outvotes. Where nothing tells
//! which block is wrong (RAID 4, 5, 50 parity against data, two copies against each
//! other, two or more bad blocks of a RAID 6 stripe) `repair` changes nothing and
//! reports the stripe unresolved with its logical bytes, instead of md's silent choice
//! of the data (or the first copy). With per-block checksums (`--integrity`, see
//! `integrity`) a flipped block fails its checksum when read, and is rebuilt from the
//! other members as an unreadable sector is, before the stripe is compared: then
//! every level tells the bad block. The resyncs after an unclean stop (bitmap regions,
//! initial sync) still make parity and copies agree with the data: there the data is
//! what was written last. Stripes with sectors on the bad-block lists of more members
//! than the level tolerates are not compared (`unreadable_stripes`). A resync reads
//! without checking checksums and sums the blocks it covers again.

use super::stripe::parity_of;
use super::Array;
use crate::error::io_err;
use crate::error::{Error, Result};
use crate::format::superblock::DATA_OFFSET_BYTES;
use raidlab_layout::parity::{locate_syndrome_fault, SyndromeFault};
use raidlab_layout::{MemberExtent, StripeId};
use std::cell::Cell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Most unresolved stripes a report lists (all are counted).
pub const UNRESOLVED_LISTED_MAX: usize = 64;

/// What a scrub found (and fixed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScrubReport {
    /// Stripes (chunk rows of a span; logical chunks for mirrors) compared.
    pub stripes_checked: u64,
    /// Stripes whose parity or copies disagreed with their data (md's mismatch count,
    /// in stripes rather than sectors).
    pub mismatched_stripes: u64,
    /// Stripes rewritten (by `repair`, or a resync).
    pub repaired_stripes: u64,
    /// Mismatched stripes `repair` left as they are because nothing tells which block
    /// is wrong (see the module documentation).
    pub unresolved_stripes: u64,
    /// The logical bytes `(offset, length)` of the first [`UNRESOLVED_LISTED_MAX`]
    /// unresolved stripes' data.
    pub unresolved: Vec<(u64, u64)>,
    /// Stripes not compared: sectors on the bad-block lists of more members than the
    /// level tolerates (see `status`).
    pub unreadable_stripes: u64,
    /// Member reads that failed and were corrected by rewriting the chunk from the
    /// other members (latent sector errors found by the scrub).
    pub read_errors_corrected: u64,
    /// Per role: blocks whose checksum did not match (`--integrity`), each rebuilt
    /// from the other members as a read error is (counted in
    /// `read_errors_corrected` too). Empty without checksums.
    pub checksum_mismatches: Vec<u64>,
}

/// What a scrub does with a mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Count it.
    Check,
    /// Fix it where the bad block can be told, else report it.
    Repair,
    /// Make parity and copies agree with the data (the first copy).
    Resync,
}

impl ScrubReport {
    fn unresolved_at(&mut self, ranges: impl IntoIterator<Item = (u64, u64)>) {
        self.unresolved_stripes += 1;
        for r in ranges {
            if self.unresolved.len() < UNRESOLVED_LISTED_MAX {
                self.unresolved.push(r);
            }
        }
    }
}

impl Array {
    /// md's `check` (`repair == false`) or `repair` (see the module documentation):
    /// compares every stripe's parity with its data (every copy with the others, for
    /// mirrors), counts mismatches, and with `repair` rewrites the block found bad.
    /// Needs every member; refused on levels without redundancy.
    pub fn scrub(&self, repair: bool) -> Result<ScrubReport> {
        self.scrub_mode(if repair { Mode::Repair } else { Mode::Check }, |_| true)
    }

    /// A resync (`resync`: parity and copies made to agree with the data and first
    /// copy) or a check of the stripes (chunks, for mirrors) with some block at a member
    /// offset for which `wanted` holds.
    pub(super) fn scrub_where(
        &self,
        resync: bool,
        wanted: impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
        self.scrub_mode(if resync { Mode::Resync } else { Mode::Check }, wanted)
    }

    fn scrub_mode(&self, mode: Mode, wanted: impl Fn(u64) -> bool) -> Result<ScrubReport> {
        let geo = &self.geo;
        if geo.tolerated_failures() == 0 {
            return Err(Error::Input(format!(
                "{} has no redundancy to check",
                geo.level()
            )));
        }
        let failed = self.failed();
        if !failed.is_empty() {
            return Err(Error::Input(format!(
                "array is degraded (members {failed} failed): check needs every member; replace first"
            )));
        }
        let io = MemberIo {
            array: self,
            files: self.files.read().expect("files lock").clone(),
            corrected: Cell::new(0),
            // A resync makes the stripe agree with its data and sums it again: a block
            // and its checksum torn by a crash are not a bad block.
            verify: mode != Mode::Resync,
        };
        let mismatches_before = self.checksum_mismatches();
        let r = if geo.parity_per_stripe() > 0 {
            self.scrub_parity(&io, mode, &wanted)
        } else {
            self.scrub_copies(&io, mode, &wanted)
        };
        self.persist_bad_blocks();
        let mut report = r?;
        if mode != Mode::Check {
            for m in 0..geo.members() {
                io.file(m)
                    .sync_data()
                    .map_err(io_err(&io.path(m), "sync"))?;
            }
        }
        report.read_errors_corrected = io.corrected.get();
        if self.checksums.is_some() {
            report.checksum_mismatches = (self.checksum_mismatches().iter())
                .zip(&mismatches_before)
                .map(|(now, before)| now - before)
                .collect();
        }
        Ok(report)
    }

    /// Every wanted stripe's parity against its data.
    fn scrub_parity(
        &self,
        io: &MemberIo,
        mode: Mode,
        wanted: &impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut report = ScrubReport::default();
        for span in 0..geo.spans() {
            for stripe in 0..geo.stripes_per_span() {
                let id = StripeId { span, stripe };
                let off = geo.stripe_offset_bytes(id);
                if !wanted(off) {
                    continue;
                }
                let _lock = self.lock_indices(&mut vec![Self::lock_index(span, stripe)]);
                let (members, _) = geo.stripe_members(id);
                let at: Vec<(u32, u64)> = members.iter().map(|&m| (m, off)).collect();
                let Some(blocks) = io.read_blocks(&at, su)? else {
                    report.unreadable_stripes += 1;
                    continue;
                };
                report.stripes_checked += 1;
                if mode == Mode::Resync {
                    // The blocks as they are; what the resync rewrites is summed as
                    // it is written.
                    io.sum_again(&at, &blocks)?;
                }
                self.compare_stripe(io, mode, id, &members, &blocks, &mut report)?;
            }
        }
        Ok(report)
    }

    /// One stripe's parity against its data, `blocks` in [`Geometry::stripe_members`] order.
    fn compare_stripe(
        &self,
        io: &MemberIo,
        mode: Mode,
        id: StripeId,
        members: &[u32],
        blocks: &[Vec<u8>],
        report: &mut ScrubReport,
    ) -> Result<()> {
        let geo = &self.geo;
        let ppx = geo.parity_per_stripe();
        let d = members.len() - ppx as usize;
        let data: Vec<&[u8]> = blocks[..d].iter().map(Vec::as_slice).collect();
        let (p, q) = parity_of(&data, ppx);
        if blocks[d] == p && (ppx < 2 || blocks[d + 1] == q) {
            return Ok(());
        }
        report.mismatched_stripes += 1;
        let off = geo.stripe_offset_bytes(id);
        let fixes: Vec<(u32, Vec<u8>)> = match mode {
            Mode::Check => return Ok(()),
            Mode::Resync if ppx == 2 => vec![(members[d], p), (members[d + 1], q)],
            Mode::Resync => vec![(members[d], p)],
            // RAID 4, 5, 50: data or parity, nothing tells which.
            Mode::Repair if ppx < 2 => Vec::new(),
            Mode::Repair => {
                let dp = xor(&blocks[d], &p);
                let dq = xor(&blocks[d + 1], &q);
                match locate_syndrome_fault(&dp, &dq, d) {
                    SyndromeFault::P => vec![(members[d], p)],
                    SyndromeFault::Q => vec![(members[d + 1], q)],
                    SyndromeFault::Data(z) => vec![(members[z], xor(&blocks[z], &dp))],
                    SyndromeFault::None | SyndromeFault::Several => Vec::new(),
                }
            }
        };
        if fixes.is_empty() {
            report.unresolved_at(self.stripe_logical(id, d));
            return Ok(());
        }
        for (m, bytes) in &fixes {
            io.write(*m, off, bytes)?;
        }
        if mode == Mode::Repair {
            eprintln!(
                "raidlab-engine: repair: stripe {} of span {}: member {} held the bad block, \
                 rewritten",
                id.stripe, id.span, fixes[0].0
            );
        }
        report.repaired_stripes += 1;
        Ok(())
    }

    /// The logical bytes of stripe `id`'s `d` data chunks, adjacent ones merged.
    fn stripe_logical(&self, id: StripeId, d: usize) -> Vec<(u64, u64)> {
        let su = self.geo.stripe_unit_bytes();
        let mut starts: Vec<u64> = (0..d as u32)
            .map(|k| self.geo.logical_of(id, k, 0))
            .collect();
        starts.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for s in starts {
            match out.last_mut() {
                Some((o, len)) if *o + *len == s => *len += su,
                _ => out.push((s, su)),
            }
        }
        out
    }

    /// Every wanted chunk's copies against each other.
    fn scrub_copies(
        &self,
        io: &MemberIo,
        mode: Mode,
        wanted: &impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut report = ScrubReport::default();
        for chunk in 0..geo.capacity_bytes() / su {
            let l = chunk * su;
            if !geo.copies_of(l).any(|c| wanted(c.offset_bytes)) {
                continue;
            }
            let _lock = self.lock_indices(&mut vec![Self::lock_index(0, chunk)]);
            let at: Vec<(u32, u64)> = geo
                .copies_of(l)
                .map(|c| (c.member, c.offset_bytes))
                .collect();
            let Some(blocks) = io.read_blocks(&at, su)? else {
                report.unreadable_stripes += 1;
                continue;
            };
            report.stripes_checked += 1;
            if mode == Mode::Resync {
                // The copies as they are; those rewritten below are summed as written.
                io.sum_again(&at, &blocks)?;
            }
            if blocks.iter().all(|b| *b == blocks[0]) {
                continue;
            }
            report.mismatched_stripes += 1;
            let good = match mode {
                Mode::Check => continue,
                Mode::Resync => Some(0),
                // Two copies that differ: nothing tells which is right.
                Mode::Repair => majority(&blocks),
            };
            let Some(g) = good else {
                report.unresolved_at([(l, su)]);
                continue;
            };
            for (&(m, off), b) in at.iter().zip(&blocks) {
                if *b != blocks[g] {
                    io.write(m, off, &blocks[g])?;
                }
            }
            report.repaired_stripes += 1;
        }
        Ok(report)
    }
}

/// The index of a block more than half of `blocks` hold.
fn majority(blocks: &[Vec<u8>]) -> Option<usize> {
    (0..blocks.len())
        .find(|&i| 2 * blocks.iter().filter(|b| **b == blocks[i]).count() > blocks.len())
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// A scrub's reads and writes of the members, and the read errors it corrected.
struct MemberIo<'a> {
    array: &'a Array,
    files: Vec<Option<Arc<File>>>,
    corrected: Cell<u64>,
    /// Whether reads check the blocks' checksums (all but a resync's).
    verify: bool,
}

impl MemberIo<'_> {
    fn file(&self, m: u32) -> &File {
        self.files[m as usize]
            .as_ref()
            .expect("active member has a file")
    }

    fn path(&self, m: u32) -> PathBuf {
        self.array.member_path(m)
    }

    fn read_once(&self, m: u32, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match self.array.injected(m, off, buf.len() as u64, false) {
            Some(err) => Err(err),
            None if self.verify => self.array.read_member(self.file(m), m, buf, off),
            None => self.file(m).read_exact_at(buf, DATA_OFFSET_BYTES + off),
        }
    }

    /// Stores the checksums of `blocks`, read at `at` (a resync: see `integrity`).
    fn sum_again(&self, at: &[(u32, u64)], blocks: &[Vec<u8>]) -> Result<()> {
        for (&(m, off), b) in at.iter().zip(blocks) {
            self.array
                .write_checksums(self.file(m), b, off)
                .map_err(io_err(&self.path(m), "write checksums"))?;
        }
        Ok(())
    }

    /// `len` bytes at each `(member, offset)`, or None when one holds sectors that
    /// stay unreadable (see [`MemberIo::read`]).
    fn read_blocks(&self, at: &[(u32, u64)], len: u64) -> Result<Option<Vec<Vec<u8>>>> {
        let mut blocks = Vec::with_capacity(at.len());
        for &(m, off) in at {
            let mut b = vec![0u8; len as usize];
            if !self.read(m, off, &mut b)? {
                return Ok(None);
            }
            blocks.push(b);
        }
        Ok(Some(blocks))
    }

    /// Reads `buf` at `off` of member `m`. Listed bad sectors there are rewritten from
    /// the other members first; a read error has its sectors listed and rewritten (see
    /// `bad_blocks`) and the read is tried again, as md's check does (the caller holds
    /// the stripe's lock). False when sectors stay unreadable; the member fails, and
    /// the scrub stops, when they cannot be listed or rewritten.
    fn read(&self, m: u32, off: u64, buf: &mut [u8]) -> Result<bool> {
        let ext = [MemberExtent {
            member: m,
            offset_bytes: off,
            len_bytes: buf.len() as u64,
        }];
        if let Some((_, listed)) = self.array.listed_in(&ext) {
            match self.array.rewrite_listed(m, &listed, &self.files) {
                Some(0) => {}
                Some(_) => self.corrected.set(self.corrected.get() + 1),
                None => return Err(self.failed(m, std::io::Error::other("rewrite failed"))),
            }
            if self.array.listed_in(&ext).is_some() {
                return Ok(false);
            }
        }
        let Err(err) = self.read_once(m, off, buf) else {
            return Ok(true);
        };
        if !self.array.absorb_read_error(m, &err, &ext, &self.files) {
            return Err(self.failed(m, err));
        }
        if self.array.listed_in(&ext).is_some() {
            return Ok(false);
        }
        match self.read_once(m, off, buf) {
            Ok(()) => {
                self.corrected.set(self.corrected.get() + 1);
                Ok(true)
            }
            Err(err) => Err(self.failed(m, err)),
        }
    }

    /// Member `m` failed with `err`: marked failed, and the scrub's error.
    fn failed(&self, m: u32, err: std::io::Error) -> Error {
        self.array.member_io_failed(m, &err);
        io_err(&self.path(m), "read")(err)
    }

    fn write(&self, m: u32, off: u64, buf: &[u8]) -> Result<()> {
        self.array
            .write_member(self.file(m), buf, off)
            .map_err(io_err(&self.path(m), "write"))?;
        self.array
            .clear_written(std::iter::once((m, off, buf.len() as u64)));
        Ok(())
    }
}
