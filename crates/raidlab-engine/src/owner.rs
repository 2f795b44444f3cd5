//! One owner per member: every process that assembles members holds an exclusive claim
//! on each for as long as it has them open, as md does.
//!
//! ```text
//!  regular file  open O_RDWR, then flock(LOCK_EX | LOCK_NB)   held by the open file
//!                refused: the holder's pid from /proc/locks    (by device and inode)
//!  block device  open O_RDWR | O_EXCL (the kernel's claim, as md and mkfs take it)
//!                refused (EBUSY): the pids holding it open, from /proc/*/fd
//! ```
//!
//! The claim goes with the open file description: a descriptor passed to a server
//! (`SCM_RIGHTS`) carries it, and it ends when the last descriptor closes, a killed
//! process included. `inject MEMBER OFFSET` (bit flips, a test tool that corrupts a
//! member on purpose, served or not) takes none.

use crate::error::io_err;
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::path::PathBuf;

/// Opens `path` for reading and writing as a member: a block device with `O_EXCL` (its
/// claim), a file created if `create`, mode 0600 whatever the umask (the array's data
/// is its owner's alone). Files are not locked yet: see [`claim`].
pub fn open_member_file(path: &Path, create: bool) -> Result<File> {
    let block = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if block {
        o.custom_flags(libc::O_EXCL);
    } else if create {
        // O_EXCL first, so that only a file made here is chmodded: an existing file
        // keeps the mode its owner gave it.
        let mut new = OpenOptions::new();
        new.read(true).write(true).create_new(true).mode(0o600);
        match new.open(path) {
            Ok(file) => return private(file, path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(path, "create")(e)),
        }
    }
    match o.open(path) {
        Err(e) if block && e.raw_os_error() == Some(libc::EBUSY) => Err(Error::Member {
            path: path.to_path_buf(),
            message: busy_device(path),
        }),
        r => r.map_err(io_err(path, "open")),
    }
}

/// `file`, just created, set to mode 0600: the mode given to `open` is masked by the
/// umask (0000 would not matter, 0277 would leave it unwritable), `fchmod` is not.
fn private(file: File, path: &Path) -> Result<File> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io_err(path, "chmod"))?;
    Ok(file)
}

/// Takes the exclusive lock of member file `file` (opened from `path`); refused with the
/// holder's pid when another open file holds it. Block devices are claimed when opened
/// ([`open_member_file`]); nothing to do here.
///
/// A loop device over a member file would reach its data past the lock (the kernel
/// opens the backing file itself and takes no `flock`), so a file backing a loop
/// device is refused too, naming the device; a loop device whose backing file is
/// locked is refused as that file would be. A loop device set up after the claim is
/// beyond what a lock can stop.
pub fn claim(file: &File, path: &Path) -> Result<()> {
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if meta.file_type().is_block_device() {
        return claim_loop_backing(&meta, path);
    }
    if let Some(dev) = loop_over(meta.dev(), meta.ino()) {
        return Err(Error::Member {
            path: path.to_path_buf(),
            message: format!(
                "backs loop device {dev}, which reaches its data past the lock; detach it \
                 (losetup -d {dev}) first"
            ),
        });
    }
    use rustix::fs::{flock, FlockOperation};
    loop {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = lock_holder(meta.dev(), meta.ino())
                    .map_or("another process".to_string(), describe);
                return Err(Error::Member {
                    path: path.to_path_buf(),
                    message: format!("in use by {holder}; one process owns a member at a time"),
                });
            }
            Err(e) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    op: "lock",
                    source: e.into(),
                })
            }
        }
    }
}

/// The loop devices and their backing files (`/sys/block/loopN/loop/backing_file`).
fn loop_devices() -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter_map(|e| {
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            // A backing file removed since reads "PATH (deleted)": no file has that
            // name, so it matches no member (its data is no member's any more).
            let backing = backing.trim_end_matches('\n');
            Some((
                Path::new("/dev").join(e.file_name()),
                PathBuf::from(backing),
            ))
        })
        .collect()
}

/// The loop device backed by the file of device `dev` and inode `ino`, if any.
fn loop_over(dev: u64, ino: u64) -> Option<String> {
    loop_devices().into_iter().find_map(|(device, backing)| {
        std::fs::metadata(&backing)
            .is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino))
            .then(|| device.display().to_string())
    })
}

/// A loop device member (`meta` its metadata) whose backing file another process
/// holds as a member: refused, naming the holder. Probed with a lock taken and
/// dropped at once, so it says who holds the file now, not later.
fn claim_loop_backing(meta: &std::fs::Metadata, path: &Path) -> Result<()> {
    use rustix::fs::{flock, FlockOperation};
    let rdev = meta.rdev();
    let name = format!("loop{}", libc::minor(rdev));
    if libc::major(rdev) != 7 {
        return Ok(());
    }
    let Some((_, backing)) = loop_devices()
        .into_iter()
        .find(|(d, _)| d.file_name().is_some_and(|n| n.to_string_lossy() == name))
    else {
        return Ok(());
    };
    let Ok(probe) = File::open(&backing) else {
        return Ok(());
    };
    if flock(&probe, FlockOperation::NonBlockingLockShared) == Err(rustix::io::Errno::WOULDBLOCK) {
        let holder = probe
            .metadata()
            .ok()
            .and_then(|m| lock_holder(m.dev(), m.ino()))
            .map_or("another process".to_string(), describe);
        return Err(Error::Member {
            path: path.to_path_buf(),
            message: format!(
                "a loop device over {}, which is in use by {holder}; one process owns a \
                 member at a time",
                backing.display()
            ),
        });
    }
    Ok(())
}

/// `pid N (its command line)`, or just `pid N` when it cannot be read.
fn describe(pid: u32) -> String {
    let me = if pid == std::process::id() {
        ", this process"
    } else {
        ""
    };
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|b| {
            let words: Vec<String> = b
                .split(|&c| c == 0)
                .filter(|w| !w.is_empty())
                .take(2)
                .map(|w| {
                    let w = String::from_utf8_lossy(w);
                    w.rsplit('/').next().unwrap_or(&w).to_string()
                })
                .collect();
            words.join(" ")
        })
        .filter(|c| !c.is_empty());
    match cmd {
        Some(c) => format!("pid {pid} ({c}{me})"),
        None => format!("pid {pid}"),
    }
}

/// The pid holding a `flock` on the file of device `dev` and inode `ino`, from
/// /proc/locks (`1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF`; device numbers in
/// hex). Matched by inode alone when no line has the same device (overlay filesystems
/// report another device than the one the lock is on).
fn lock_holder(dev: u64, ino: u64) -> Option<u32> {
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    let want_dev = (libc::major(dev) as u64, libc::minor(dev) as u64);
    let mut by_inode = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Waiters are listed with "->" before their fields; non-blocking locks have none.
        if f.len() < 6 || f[1] != "FLOCK" || f[3] != "WRITE" {
            continue;
        }
        let Ok(pid) = f[4].parse::<u32>() else {
            continue;
        };
        let id: Vec<&str> = f[5].split(':').collect();
        let [maj, min, i] = id[..] else { continue };
        if i.parse::<u64>().ok() != Some(ino) {
            continue;
        }
        let d = (u64::from_str_radix(maj, 16), u64::from_str_radix(min, 16));
        if matches!(d, (Ok(a), Ok(b)) if (a, b) == want_dev) {
            return Some(pid);
        }
        by_inode.push(pid);
    }
    (by_inode.len() == 1).then(|| by_inode[0])
}

/// Why block device `path` is busy: the processes holding it open (other than this
/// one's probes), or what else claims devices.
fn busy_device(path: &Path) -> String {
    let rdev = std::fs::metadata(path).map(|m| m.rdev()).unwrap_or(0);
    let mut pids = Vec::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
                continue;
            };
            let holds = fds.flatten().any(|fd| {
                std::fs::metadata(fd.path())
                    .is_ok_and(|m| m.file_type().is_block_device() && m.rdev() == rdev)
            });
            if holds {
                pids.push(pid);
            }
        }
    }
    match pids.len() {
        0 => "in use (mounted, or claimed by md, device-mapper or another exclusive opener); \
              one process owns a member at a time"
            .into(),
        _ => format!(
            "in use by {}; one process owns a member at a time",
            pids.iter()
                .take(3)
                .map(|&p| describe(p))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_file_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        let first = open_member_file(&path, true).unwrap();
        claim(&first, &path).unwrap();
        // Claiming again through the same open file is no conflict.
        claim(&first, &path).unwrap();
        let second = open_member_file(&path, false).unwrap();
        let e = claim(&second, &path).unwrap_err().to_string();
        let me = format!("in use by pid {} (", std::process::id());
        assert!(e.contains(&me) && e.contains("this process"), "{e}");
        drop(first);
        // The claim ends with the open file that held it.
        claim(&second, &path).unwrap();
    }
}
