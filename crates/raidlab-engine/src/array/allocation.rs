//! Which logical bytes are holes: member data never written on a sparse member file,
//! found with `SEEK_DATA`/`SEEK_HOLE` on the members the layout maps the bytes to (for
//! NBD's `base:allocation` block status).
//!
//! A logical byte is a hole when every copy of it on a working member is a hole on that
//! member: it then reads as zeros, whatever the level (the data chunk of a parity level,
//! either copy of RAID 1/10, the one chunk of RAID 0 and concat). Bytes whose member has
//! failed are reconstructed from parity or another copy and are reported as data, as
//! are the bytes of a member that cannot say (a block device: the kernel reports it as
//! data throughout). Holes are never invented: any doubt says data.

use super::Array;
use crate::error::{Error, Result};
use crate::format::superblock::DATA_OFFSET_BYTES;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// `lseek(fd, from, whence)` for SEEK_DATA/SEEK_HOLE: `Some(offset)`, or `None` when
/// there is no data at or after `from` (ENXIO). Other errors: `Err`.
fn seek(file: &File, from: u64, whence: libc::c_int) -> std::io::Result<Option<u64>> {
    let Ok(from) = libc::off_t::try_from(from) else {
        return Ok(None);
    };
    // SAFETY: lseek on an open descriptor we hold; the engine reads and writes members
    // with pread/pwrite only, so moving the file position disturbs nobody.
    let r = unsafe { libc::lseek(file.as_raw_fd(), from, whence) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENXIO) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(r as u64))
}

/// One copy of a piece: its member file and where the piece starts on it (absolute).
struct Copy {
    file: Arc<File>,
    start: u64,
}

/// Adds a run, merging it with the last one when of the same kind.
fn push(runs: &mut Vec<(u64, bool)>, len: u64, hole: bool) {
    if len == 0 {
        return;
    }
    match runs.last_mut() {
        Some((n, h)) if *h == hole => *n += len,
        _ => runs.push((len, hole)),
    }
}

impl Array {
    /// Allocation of `len_bytes` at `offset_bytes`: runs of `(bytes, hole)` in order,
    /// covering the range from its start, at most `max_runs` of them (then they cover a
    /// prefix of the range). `hole`: the bytes are unallocated on every working member
    /// holding them and read as zeros.
    pub fn allocation(
        &self,
        offset_bytes: u64,
        len_bytes: u64,
        max_runs: usize,
    ) -> Result<Vec<(u64, bool)>> {
        let end = offset_bytes
            .checked_add(len_bytes)
            .filter(|&e| e <= self.capacity_bytes())
            .ok_or_else(|| {
                Error::Input(format!(
                    "allocation of {len_bytes} B at {offset_bytes} is past the end"
                ))
            })?;
        let files = self.files.read().expect("files lock").clone();
        let failed = self.failed();
        let max_runs = max_runs.max(1);
        let mut runs: Vec<(u64, bool)> = Vec::new();
        for chunk in self.geo.chunks(offset_bytes, end - offset_bytes) {
            // Within one chunk every copy is one contiguous run on its member.
            let (at, piece_end) = (chunk.logical_bytes, chunk.end_bytes());
            let copies: Vec<Copy> = chunk
                .copies()
                .filter(|c| !failed.contains(c.member))
                .filter_map(|c| {
                    files[c.member as usize].as_ref().map(|f| Copy {
                        file: f.clone(),
                        start: DATA_OFFSET_BYTES + c.offset_bytes,
                    })
                })
                .collect();
            if copies.is_empty() {
                push(&mut runs, piece_end - at, false);
            } else {
                piece_runs(&copies, at, piece_end, &mut runs);
            }
            if runs.len() > max_runs {
                // The last run may still grow; keep whole runs only.
                runs.truncate(max_runs);
                break;
            }
        }
        Ok(runs)
    }
}

/// The runs of `[at, piece_end)`, whose copies start at `copies[i].start` on their
/// members. A seek error counts as data to the piece's end.
fn piece_runs(copies: &[Copy], at: u64, piece_end: u64, runs: &mut Vec<(u64, bool)>) {
    let mut p = at;
    while p < piece_end {
        let on_member = |c: &Copy| c.start + (p - at);
        let to_logical = |c: &Copy, m: u64| at + (m - c.start);
        // Where the next data of any copy begins.
        let mut next_data = piece_end;
        let mut data_here: Vec<&Copy> = Vec::new();
        for c in copies {
            match seek(&c.file, on_member(c), libc::SEEK_DATA) {
                Ok(Some(d)) => {
                    let d = to_logical(c, d.max(on_member(c))).min(piece_end);
                    if d == p {
                        data_here.push(c);
                    }
                    next_data = next_data.min(d);
                }
                Ok(None) => {}
                Err(_) => {
                    push(runs, piece_end - p, false);
                    return;
                }
            }
        }
        if next_data > p {
            push(runs, next_data - p, true);
            p = next_data;
            continue;
        }
        // Data on some copy at p: up to where the longest of those runs ends.
        let mut data_end = p;
        for c in data_here {
            let h = match seek(&c.file, on_member(c), libc::SEEK_HOLE) {
                Ok(Some(h)) => to_logical(c, h.max(on_member(c))),
                Ok(None) | Err(_) => piece_end,
            };
            data_end = data_end.max(h);
        }
        let data_end = data_end.clamp(p + 1, piece_end);
        push(runs, data_end - p, false);
        p = data_end;
    }
}

#[cfg(test)]
mod tests {
    use crate::format::superblock::DATA_OFFSET_BYTES;
    use crate::{Array, CreateOptions};
    use raidlab_layout::Level;

    const K64: u64 = 64 << 10;

    fn array(dir: &std::path::Path, level: Level, n: usize) -> Array {
        let paths: Vec<_> = (0..n).map(|i| dir.join(format!("m{i}"))).collect();
        let mut o = CreateOptions::new(level, K64, Some(DATA_OFFSET_BYTES + (1 << 20)));
        o.sparse = true; // holes are what these tests look at: no preallocation
        Array::create(&paths, &o).unwrap()
    }

    #[test]
    fn raid1_holes_survive_a_failed_copy() {
        let dir = tempfile::tempdir().unwrap();
        let a = array(dir.path(), Level::Raid1, 2);
        a.write(K64, &[7u8; 4096], false).unwrap();
        let want = vec![(K64, true), (4096, false), (K64 - 4096, true)];
        assert_eq!(a.allocation(0, 2 * K64, 16).unwrap(), want);
        a.fail_member(0).unwrap();
        assert_eq!(a.allocation(0, 2 * K64, 16).unwrap(), want);
        // At most `max_runs`, covering a prefix.
        assert_eq!(a.allocation(0, 2 * K64, 2).unwrap(), want[..2].to_vec());
        assert!(a.allocation(K64, a.capacity_bytes(), 16).is_err());
    }

    #[test]
    fn raid5_chunks_of_a_failed_member_are_data() {
        let dir = tempfile::tempdir().unwrap();
        let a = array(dir.path(), Level::Raid5, 3);
        a.write(0, &[1u8; 4096], false).unwrap();
        let four = 4 * K64;
        assert_eq!(
            a.allocation(0, four, 16).unwrap(),
            vec![(4096, false), (four - 4096, true)]
        );
        // Fail the member holding logical chunk 1: it is reconstructed, so data.
        let lost = a.geometry().locate(K64).member;
        let first = a.geometry().locate(0).member;
        assert_ne!(lost, first);
        a.fail_member(lost).unwrap();
        let runs = a.allocation(0, four, 16).unwrap();
        assert_eq!(runs[0], (4096, false));
        assert_eq!(runs[1], (K64 - 4096, true));
        assert!(!runs[2].1, "{runs:?}");
        assert_eq!(runs.iter().map(|r| r.0).sum::<u64>(), four);
    }
}
