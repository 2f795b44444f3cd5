//! md's `check` and `repair`: every stripe's parity (every copy, for mirrors) compared
//! with its data, mismatches counted and, with `repair`, rewritten.

use super::stripe::{parity_of, stripe_members};
use super::Array;
use crate::error::io_err;
use crate::error::{Error, Result};
use crate::format::superblock::DATA_OFFSET_BYTES;
use raidlab_layout::StripeId;
use std::cell::Cell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// What a scrub found (and fixed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScrubReport {
    /// Stripes (chunk rows of a span; logical chunks for mirrors) compared.
    pub stripes_checked: u64,
    /// Stripes whose parity or copies disagreed with their data (md's mismatch count,
    /// in stripes rather than sectors).
    pub mismatched_stripes: u64,
    /// Stripes rewritten (by `repair`).
    pub repaired_stripes: u64,
    /// Member reads that failed and were corrected by rewriting the chunk from the
    /// other members (latent sector errors found by the scrub).
    pub read_errors_corrected: u64,
}

impl Array {
    /// md's `check` (`repair == false`) or `repair`: compares every stripe's parity with
    /// its data (every copy with the first, for mirrors), counts mismatches, and with
    /// `repair` rewrites parity from data (copies from the first copy). Needs every
    /// member; refused on levels without redundancy.
    pub fn scrub(&self, repair: bool) -> Result<ScrubReport> {
        self.scrub_where(repair, |_| true)
    }

    /// [`Array::scrub`] of the stripes (chunks, for mirrors) with some block at a
    /// member offset for which `wanted` holds.
    pub(super) fn scrub_where(
        &self,
        repair: bool,
        wanted: impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
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
        };
        let mut report = if geo.parity_per_stripe() > 0 {
            self.scrub_parity(&io, repair, &wanted)?
        } else {
            self.scrub_copies(&io, repair, &wanted)?
        };
        if repair {
            for m in 0..geo.members() {
                io.file(m)
                    .sync_data()
                    .map_err(io_err(&io.path(m), "sync"))?;
            }
        }
        report.read_errors_corrected = io.corrected.get();
        Ok(report)
    }

    /// Every wanted stripe's parity against its data; `repair` rewrites it.
    fn scrub_parity(
        &self,
        io: &MemberIo,
        repair: bool,
        wanted: &impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut report = ScrubReport::default();
        for span in 0..geo.spans() {
            for stripe in 0..geo.stripes_per_span() {
                let id = StripeId { span, stripe };
                if !wanted(geo.stripe_offset_bytes(id)) {
                    continue;
                }
                let _lock = self.lock_indices(&mut vec![Self::lock_index(span, stripe)]);
                let (members, order) = stripe_members(geo, id);
                let off = geo.stripe_offset_bytes(id);
                let mut blocks = vec![vec![0u8; su as usize]; members.len()];
                for (m, b) in members.iter().zip(blocks.iter_mut()) {
                    io.read(*m, off, b)?;
                }
                let d = order.len();
                let data: Vec<&[u8]> = blocks[..d].iter().map(|b| b.as_slice()).collect();
                let (p, q) = parity_of(&data, geo.parity_per_stripe());
                let p_bad = blocks[d] != p;
                let q_bad = geo.parity_per_stripe() == 2 && blocks[d + 1] != q;
                report.stripes_checked += 1;
                if p_bad || q_bad {
                    report.mismatched_stripes += 1;
                    if repair {
                        io.write(members[d], off, &p)?;
                        if geo.parity_per_stripe() == 2 {
                            io.write(members[d + 1], off, &q)?;
                        }
                        report.repaired_stripes += 1;
                    }
                }
            }
        }
        Ok(report)
    }

    /// Every wanted chunk's copies against its first; `repair` rewrites them from it.
    fn scrub_copies(
        &self,
        io: &MemberIo,
        repair: bool,
        wanted: &impl Fn(u64) -> bool,
    ) -> Result<ScrubReport> {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut report = ScrubReport::default();
        let mut first = vec![0u8; su as usize];
        let mut other = vec![0u8; su as usize];
        for chunk in 0..geo.capacity_bytes() / su {
            let l = chunk * su;
            if !geo.copies_of(l).any(|c| wanted(c.offset_bytes)) {
                continue;
            }
            let _lock = self.lock_indices(&mut vec![Self::lock_index(0, chunk)]);
            let primary = geo.locate(l);
            io.read(primary.member, primary.offset_bytes, &mut first)?;
            let mut bad = false;
            for c in geo.copies_of(l).skip(1) {
                io.read(c.member, c.offset_bytes, &mut other)?;
                if other != first {
                    bad = true;
                    if repair {
                        io.write(c.member, c.offset_bytes, &first)?;
                    }
                }
            }
            report.stripes_checked += 1;
            if bad {
                report.mismatched_stripes += 1;
                report.repaired_stripes += u64::from(repair);
            }
        }
        Ok(report)
    }
}

/// A scrub's reads and writes of the members, and the read errors it corrected.
struct MemberIo<'a> {
    array: &'a Array,
    files: Vec<Option<Arc<File>>>,
    corrected: Cell<u64>,
}

impl MemberIo<'_> {
    fn file(&self, m: u32) -> &File {
        self.files[m as usize]
            .as_ref()
            .expect("active member has a file")
    }

    fn path(&self, m: u32) -> PathBuf {
        self.array.state.lock().expect("state lock").members[m as usize]
            .0
            .clone()
            .unwrap_or_default()
    }

    fn read_once(&self, m: u32, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match self.array.injected(m, off, buf.len() as u64, false) {
            Some(err) => Err(err),
            None => self.file(m).read_exact_at(buf, DATA_OFFSET_BYTES + off),
        }
    }

    /// A read error is corrected from the other members (the caller holds the
    /// stripe's lock) and read again, as md's check does; if it cannot be, the
    /// member fails and the scrub stops.
    fn read(&self, m: u32, off: u64, buf: &mut [u8]) -> Result<()> {
        let Err(err) = self.read_once(m, off, buf) else {
            return Ok(());
        };
        let row = off / self.array.geo.stripe_unit_bytes();
        if self.array.correct_rows(m, &[row], &err, &self.files) {
            if let Ok(()) = self.read_once(m, off, buf) {
                self.corrected.set(self.corrected.get() + 1);
                return Ok(());
            }
        }
        self.array.member_io_failed(m, &err);
        Err(io_err(&self.path(m), "read")(err))
    }

    fn write(&self, m: u32, off: u64, buf: &[u8]) -> Result<()> {
        self.file(m)
            .write_all_at(buf, DATA_OFFSET_BYTES + off)
            .map_err(io_err(&self.path(m), "write"))
    }
}
