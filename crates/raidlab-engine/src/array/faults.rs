//! Faults of failing disks without one: faults injected into a running array (read and
//! write errors, bad sectors the next write remaps, latency), bits flipped on a member
//! file at rest, and the crash point the write-hole tests abort at.

use super::members::{device_bytes, open_rw, read_superblock_of};
use super::Array;
use crate::error::{io_err, member_err};
use crate::error::{Error, Result};
use crate::format::superblock::DATA_OFFSET_BYTES;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A fault injected into a member of a running array (`inject` on a served array):
/// what a failing disk does, without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Reads of member bytes `[offset, +len)` fail with EIO: the member is marked
    /// failed and the request planned again degraded.
    ReadError {
        /// Member role.
        member: u32,
        /// Offset in bytes into the member's data (after its metadata area).
        offset_bytes: u64,
        /// Length in bytes.
        len_bytes: u64,
    },
    /// Reads of member bytes `[offset, +len)` fail with EIO until they are written: a
    /// pending sector that the disk remaps on its next write. The array rewrites it from
    /// the other members, as md does, and the member stays in.
    BadSector {
        /// Member role.
        member: u32,
        /// Offset in bytes into the member's data (after its metadata area).
        offset_bytes: u64,
        /// Length in bytes.
        len_bytes: u64,
    },
    /// Writes to member bytes `[offset, +len)` fail with EIO: the member is marked failed,
    /// the write completes on the others.
    WriteError {
        /// Member role.
        member: u32,
        /// Offset in bytes into the member's data (after its metadata area).
        offset_bytes: u64,
        /// Length in bytes.
        len_bytes: u64,
    },
    /// Every I/O of the member waits this long first (a slow or retrying disk).
    Latency {
        /// Member role.
        member: u32,
        /// The delay added before each of its I/Os.
        delay: Duration,
    },
}

impl Fault {
    /// The member it hits.
    pub fn member(&self) -> u32 {
        match *self {
            Self::ReadError { member, .. }
            | Self::BadSector { member, .. }
            | Self::WriteError { member, .. }
            | Self::Latency { member, .. } => member,
        }
    }
}

/// Fault injection for crash tests: with `RAIDLAB_ENGINE_CRASH_AFTER_WRITES=N` in the
/// environment the process aborts just before its member data write number N + 1, so a
/// test can stop it between a stripe's data and parity writes.
pub(super) fn crash_point() {
    static AFTER: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let after = AFTER.get_or_init(|| {
        std::env::var("RAIDLAB_ENGINE_CRASH_AFTER_WRITES")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if let Some(n) = *after {
        if WRITES.fetch_add(1, Ordering::SeqCst) >= n {
            eprintln!("raidlab-engine: crash injected after {n} member writes");
            std::process::abort();
        }
    }
}

/// Flips bits of the byte at data offset `offset_bytes` of member `path` (XOR with
/// `mask`): fault injection for tests of scrub and degraded reads. Only a file that
/// carries a raidlab superblock is touched, as `status` and `check` refuse any other:
/// a mistyped path must not corrupt a file that belongs to nobody's array.
pub fn inject(path: &Path, offset_bytes: u64, mask: u8) -> Result<()> {
    let file = open_rw(path, false)?;
    read_superblock_of(&file, path)?;
    let at = DATA_OFFSET_BYTES
        .checked_add(offset_bytes)
        .ok_or_else(|| Error::Input(format!("offset {offset_bytes} too large")))?;
    if at >= device_bytes(&file, path)? {
        return Err(member_err(
            path,
            format!("offset {offset_bytes} beyond the member's data"),
        ));
    }
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, at)
        .map_err(io_err(path, "read"))?;
    b[0] ^= mask;
    file.write_all_at(&b, at).map_err(io_err(path, "write"))?;
    file.sync_data().map_err(io_err(path, "sync"))
}

impl Array {
    /// Injects `fault` (until [`Array::clear_faults`]).
    pub fn inject_fault(&self, fault: Fault) -> Result<()> {
        if fault.member() >= self.geo.members() {
            return Err(Error::Input(format!(
                "member {} does not exist ({} members)",
                fault.member(),
                self.geo.members()
            )));
        }
        self.faults.write().expect("faults lock").push(fault);
        self.any_fault.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.faults.write().expect("faults lock").clear();
        self.any_fault.store(false, Ordering::Relaxed);
    }

    /// Applies the injected faults to one member I/O: waits out latency, and returns the
    /// error an injected read or write error makes it fail with.
    pub(super) fn injected(
        &self,
        member: u32,
        offset: u64,
        len: u64,
        write: bool,
    ) -> Option<std::io::Error> {
        if !self.any_fault.load(Ordering::Relaxed) {
            return None;
        }
        let overlaps = |o: u64, l: u64| offset < o + l && o < offset + len;
        let mut delay = Duration::ZERO;
        let mut err = None;
        let mut heals = false;
        // Read under the lock, sleep after it: `clear_faults` never waits on a delay.
        for f in self.faults.read().expect("faults lock").iter() {
            if f.member() != member {
                continue;
            }
            match *f {
                Fault::Latency { delay: d, .. } => delay += d,
                Fault::ReadError {
                    offset_bytes,
                    len_bytes,
                    ..
                } if !write && overlaps(offset_bytes, len_bytes) => {
                    err = Some(std::io::Error::other("injected read error"));
                }
                Fault::BadSector {
                    offset_bytes,
                    len_bytes,
                    ..
                } if overlaps(offset_bytes, len_bytes) => {
                    if write {
                        heals = true;
                    } else {
                        err = Some(std::io::Error::other("injected bad sector"));
                    }
                }
                Fault::WriteError {
                    offset_bytes,
                    len_bytes,
                    ..
                } if write && overlaps(offset_bytes, len_bytes) => {
                    err = Some(std::io::Error::other("injected write error"));
                }
                _ => {}
            }
        }
        if heals {
            self.heal_bad_sectors(member, offset, offset + len);
        }
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        err
    }

    /// A write of member bytes `[start, end)`: the bad sectors it covers are remapped
    /// (what is left of each outside the range stays bad).
    fn heal_bad_sectors(&self, member: u32, start: u64, end: u64) {
        let mut faults = self.faults.write().expect("faults lock");
        let mut kept = Vec::with_capacity(faults.len());
        for f in faults.drain(..) {
            match f {
                Fault::BadSector {
                    member: m,
                    offset_bytes,
                    len_bytes,
                } if m == member && start < offset_bytes + len_bytes && offset_bytes < end => {
                    let fault_end = offset_bytes + len_bytes;
                    if offset_bytes < start {
                        kept.push(Fault::BadSector {
                            member,
                            offset_bytes,
                            len_bytes: start - offset_bytes,
                        });
                    }
                    if fault_end > end {
                        kept.push(Fault::BadSector {
                            member,
                            offset_bytes: end,
                            len_bytes: fault_end - end,
                        });
                    }
                }
                other => kept.push(other),
            }
        }
        *faults = kept;
        self.any_fault.store(!faults.is_empty(), Ordering::Relaxed);
    }
}
