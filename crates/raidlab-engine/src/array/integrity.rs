//! Per-block checksums of the data (`create --integrity crc32c`, as dm-integrity and
//! ZFS keep them): one CRC32C per 4 KiB block of every member's data area, parity and
//! copies included, in the checksum area after the data (see
//! [`crate::format::superblock::checksum_area_bytes`]).
//!
//! Every member write stores the checksums of the blocks it wrote, after the data (a
//! block written in part is summed as it stands on disk then). Every member read
//! checks them; a block whose checksum does not match fails the read with
//! `InvalidData`, which the array treats exactly as an unreadable sector (see
//! `bad_blocks`): the block is listed, rebuilt from the other members, rewritten with
//! its checksum and read back, and counted. So a served read returns the right data,
//! and `check` and `repair` know which copy or which chunk is bad instead of guessing.
//!
//! Crash consistency: data and checksum are two writes. The write-intent bitmap marks
//! the region first, so after an unclean stop the resync of the dirty regions sums
//! their blocks again from the data (a torn pair there is not corruption); the resync
//! reads without checking. Hence the `ppl` and `journal` policies, whose recovery
//! rewrites stripes without the bitmap, are not offered with checksums.

use super::Array;
use crate::format::superblock::{
    checksum_area_bytes, Integrity, CHECKSUM_BYTES, DATA_OFFSET_BYTES, INTEGRITY_BLOCK_BYTES,
};
use crc32c::crc32c;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

const BLOCK: u64 = INTEGRITY_BLOCK_BYTES;
/// Data bytes summed per step when checksums are computed from what is on disk.
const RECOMPUTE_STEP: u64 = 1 << 20;

/// Where an array's checksums are and how many mismatches each member had.
pub(super) struct Checksums {
    /// Member byte where the checksum area starts (right after the data area).
    area_at: u64,
    /// Data bytes of every member the area covers.
    data_bytes: u64,
    /// Per role: blocks whose checksum did not match when read since assembly.
    mismatches: Box<[AtomicU64]>,
}

impl Checksums {
    /// The checksums of members of `data_bytes` (the superblock's
    /// `member_capacity_bytes`), `members` of them.
    pub(super) fn new(data_bytes: u64, members: u32) -> Self {
        Self {
            area_at: DATA_OFFSET_BYTES + data_bytes,
            data_bytes,
            mismatches: (0..members).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// The data bytes a member of `member_bytes` holds when `integrity` keeps checksums
/// after them: what is left after the metadata and the checksum area, whole 4 KiB.
pub(super) fn data_bytes_with(integrity: Integrity, member_bytes: u64) -> u64 {
    let avail = member_bytes.saturating_sub(DATA_OFFSET_BYTES);
    match integrity {
        Integrity::None => avail,
        Integrity::Crc32c => {
            let data = avail - checksum_area_bytes(avail);
            data - data % BLOCK
        }
    }
}

/// The CRC32C of the member data block at `at`: from `buf` (member data at `off`)
/// where it holds the block whole, else from the block as it is on disk, read into
/// `whole` (reused across the blocks of one request).
fn block_sum(file: &File, buf: &[u8], off: u64, at: u64, whole: &mut Vec<u8>) -> io::Result<u32> {
    if at >= off && at + BLOCK <= off + buf.len() as u64 {
        return Ok(crc32c(
            &buf[(at - off) as usize..(at - off + BLOCK) as usize],
        ));
    }
    whole.resize(BLOCK as usize, 0);
    file.read_exact_at(whole, DATA_OFFSET_BYTES + at)?;
    Ok(crc32c(whole))
}

/// A block whose checksum does not match: the error a read of it fails with.
fn mismatch(m: u32, block_at: u64, stored: u32, computed: u32) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "member {m}: checksum mismatch in the 4 KiB block at data byte {block_at} \
             (stored {stored:#010x}, computed {computed:#010x})"
        ),
    )
}

/// Whether `err` is a checksum mismatch (rather than a failed read).
pub(super) fn is_mismatch(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::InvalidData
}

impl Array {
    /// The array's per-block checksums.
    pub(super) fn integrity(&self) -> Integrity {
        match self.checksums {
            Some(_) => Integrity::Crc32c,
            None => Integrity::None,
        }
    }

    /// Bytes a member (or replacement, or spare) must hold: metadata, data and the
    /// checksum area.
    pub(super) fn member_bytes_needed(&self) -> u64 {
        let data = self.spec.member_capacity_bytes;
        match self.checksums {
            Some(_) => DATA_OFFSET_BYTES + data + checksum_area_bytes(data),
            None => DATA_OFFSET_BYTES + data,
        }
    }

    /// Per role: checksum mismatches found by reads since assembly.
    pub(super) fn checksum_mismatches(&self) -> Vec<u64> {
        match &self.checksums {
            Some(c) => c
                .mismatches
                .iter()
                .map(|n| n.load(Ordering::Relaxed))
                .collect(),
            None => vec![0; self.geo.members() as usize],
        }
    }

    /// Reads member `m`'s data at `off` into `buf` and checks its checksums; a
    /// mismatch is counted for `m` and fails the read (`InvalidData`).
    pub(super) fn read_member(
        &self,
        file: &File,
        m: u32,
        buf: &mut [u8],
        off: u64,
    ) -> io::Result<()> {
        self.read_checked(file, m, buf, off).map_err(|(e, blocks)| {
            if let (true, Some(c)) = (is_mismatch(&e), &self.checksums) {
                c.mismatches[m as usize].fetch_add(blocks, Ordering::Relaxed);
                eprintln!("raidlab-engine: {e}");
            }
            e
        })
    }

    /// [`Array::read_member`] without counting a mismatch: the probes and read-backs
    /// of a block already counted.
    pub(super) fn read_member_uncounted(
        &self,
        file: &File,
        m: u32,
        buf: &mut [u8],
        off: u64,
    ) -> io::Result<()> {
        self.read_checked(file, m, buf, off).map_err(|(e, _)| e)
    }

    /// Reads member `m`'s data at `off` into `buf`, then [`Array::verify`]s it.
    fn read_checked(
        &self,
        file: &File,
        m: u32,
        buf: &mut [u8],
        off: u64,
    ) -> Result<(), (io::Error, u64)> {
        file.read_exact_at(buf, DATA_OFFSET_BYTES + off)
            .map_err(|e| (e, 0))?;
        self.verify(file, m, buf, off)
    }

    /// Checks `buf`, member `m`'s data at `off`, against the stored checksums; the
    /// blocks it holds in part are read whole from the member. A mismatch fails with
    /// the first block's error and the number of blocks that fail.
    fn verify(&self, file: &File, m: u32, buf: &[u8], off: u64) -> Result<(), (io::Error, u64)> {
        let Some(c) = &self.checksums else {
            return Ok(());
        };
        let end = off + buf.len() as u64;
        let (first, last) = (off / BLOCK, end.div_ceil(BLOCK));
        let mut stored = vec![0u8; ((last - first) * CHECKSUM_BYTES) as usize];
        file.read_exact_at(&mut stored, c.area_at + first * CHECKSUM_BYTES)
            .map_err(|e| (e, 0))?;
        let mut whole = Vec::new();
        let mut failed: Option<(io::Error, u64)> = None;
        for (i, s) in (first..last).zip(stored.chunks_exact(CHECKSUM_BYTES as usize)) {
            let at = i * BLOCK;
            let sum = block_sum(file, buf, off, at, &mut whole).map_err(|e| (e, 0))?;
            let s = u32::from_le_bytes(s.try_into().expect("4 bytes"));
            if s != sum {
                match &mut failed {
                    Some((_, n)) => *n += 1,
                    None => failed = Some((mismatch(m, at, s, sum), 1)),
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Writes `buf` at member data byte `off`, then the checksums of the blocks it
    /// wrote.
    pub(super) fn write_member(&self, file: &File, buf: &[u8], off: u64) -> io::Result<()> {
        file.write_all_at(buf, DATA_OFFSET_BYTES + off)?;
        if self.checksums.is_some() {
            // Crash tests stop here too: data written, its checksum not.
            super::faults::crash_point();
        }
        self.write_checksums(file, buf, off)
    }

    /// Stores the checksums of the blocks `buf` (just written at `off`) touches: from
    /// `buf` where it holds a block whole, else from the block as it is on disk.
    pub(super) fn write_checksums(&self, file: &File, buf: &[u8], off: u64) -> io::Result<()> {
        let Some(c) = &self.checksums else {
            return Ok(());
        };
        let end = off + buf.len() as u64;
        let (first, last) = (off / BLOCK, end.div_ceil(BLOCK));
        let mut sums = Vec::with_capacity(((last - first) * CHECKSUM_BYTES) as usize);
        let mut whole = Vec::new();
        for i in first..last {
            let sum = block_sum(file, buf, off, i * BLOCK, &mut whole)?;
            sums.extend_from_slice(&sum.to_le_bytes());
        }
        file.write_all_at(&sums, c.area_at + first * CHECKSUM_BYTES)
    }

    /// Sums member data `[off, off + len)` again from what is on disk (a resync, or
    /// members created with data on them).
    pub(super) fn recompute_checksums(&self, file: &File, off: u64, len: u64) -> io::Result<()> {
        if self.checksums.is_none() {
            return Ok(());
        }
        let end = off + len;
        let mut at = off;
        let mut buf = Vec::new();
        while at < end {
            let n = (end - at).min(RECOMPUTE_STEP);
            buf.resize(n as usize, 0);
            file.read_exact_at(&mut buf, DATA_OFFSET_BYTES + at)?;
            self.write_checksums(file, &buf, at)?;
            at += n;
        }
        Ok(())
    }

    /// The checksums of a new array: of zero blocks on members known all zeros
    /// (`zeroed`), else of the data on them.
    pub(super) fn init_checksums(&self, zeroed: bool) -> crate::error::Result<()> {
        let Some(c) = &self.checksums else {
            return Ok(());
        };
        let files = self.files.read().expect("files lock").clone();
        let zero_sum = crc32c(&[0u8; BLOCK as usize]).to_le_bytes();
        let blocks = c.data_bytes / BLOCK;
        for (role, f) in files.iter().enumerate() {
            let Some(f) = f else { continue };
            let path = self.member_path(role as u32);
            let r = if zeroed {
                let step = (RECOMPUTE_STEP / BLOCK).min(blocks.max(1));
                let sums = zero_sum.repeat(step as usize);
                (0..blocks).step_by(step as usize).try_for_each(|b| {
                    let n = step.min(blocks - b) as usize * CHECKSUM_BYTES as usize;
                    f.write_all_at(&sums[..n], c.area_at + b * CHECKSUM_BYTES)
                })
            } else {
                self.recompute_checksums(f, 0, c.data_bytes)
            };
            r.map_err(crate::error::io_err(&path, "write checksums"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_and_its_checksum_area_fit_the_member() {
        for member in [
            DATA_OFFSET_BYTES + 4096 * 1025,
            65 << 20,
            1 << 30,
            (1 << 30) + 511,
        ] {
            let data = data_bytes_with(Integrity::Crc32c, member);
            assert_eq!(data % BLOCK, 0);
            assert!(DATA_OFFSET_BYTES + data + checksum_area_bytes(data) <= member);
            // Not much is lost: at most a block and the area's rounding.
            assert!(member - DATA_OFFSET_BYTES - data <= checksum_area_bytes(data) + 2 * BLOCK);
        }
        assert_eq!(data_bytes_with(Integrity::None, 3 << 20), 2 << 20);
    }
}
