//! Member files and their superblocks: opening them (once each), sizing block devices,
//! reading superblocks, recording state changes on every active member (the event
//! counter md bumps on each), and marking members failed.

use super::{Array, State};
use crate::error::{io_err, member_err, Error, Result};
use crate::format::superblock::{Superblock, SUPERBLOCK_BYTES};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The state of one member slot (role) of an assembled array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberState {
    /// In use.
    Active,
    /// Marked failed (by `fail`, an I/O error, or the array's failed set).
    Failed,
    /// No file given for this role.
    Missing,
    /// Given, but its event counter is behind the array's: it missed writes. Not used.
    Stale {
        /// Its event counter.
        events: u64,
    },
    /// A replacement whose rebuild stopped cleanly with its data below `offset_bytes`
    /// rebuilt: `serve` resumes the rebuild there. Failed until it completes.
    Recovering {
        /// Member data bytes rebuilt.
        offset_bytes: u64,
    },
}

impl std::fmt::Display for MemberState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Active => f.write_str("active"),
            Self::Failed => f.write_str("failed"),
            Self::Missing => f.write_str("missing"),
            Self::Stale { events } => write!(f, "stale (events {events}), not used"),
            Self::Recovering { offset_bytes } => write!(
                f,
                "recovering ({offset_bytes} B rebuilt; serve resumes the rebuild)"
            ),
        }
    }
}

/// A random u128 from /dev/urandom.
pub fn random_uuid() -> Result<u128> {
    let mut b = [0u8; 16];
    let path = Path::new("/dev/urandom");
    File::open(path)
        .and_then(|f| {
            f.read_exact_at(&mut b, 0).or_else(|_| {
                use std::io::Read;
                (&f).read_exact(&mut b)
            })
        })
        .map_err(io_err(path, "read"))?;
    Ok(u128::from_le_bytes(b))
}

/// Bytes of a file or block device (block devices report 0 in metadata; seek instead).
pub(super) fn device_bytes(file: &File, path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if meta.file_type().is_block_device() {
        let mut f = file;
        f.seek(SeekFrom::End(0)).map_err(io_err(path, "seek"))
    } else {
        Ok(meta.len())
    }
}

pub(super) fn open_rw(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(io_err(path, "open"))
}

/// Opens member `path` (created if `create`) and takes its exclusive claim (see
/// [`super::owner`]: refused, naming the holder's pid, while another process has it),
/// refusing a file already opened under another of `paths` (same device and inode,
/// recorded in `seen`).
pub(super) fn open_member_once(
    path: &Path,
    create: bool,
    paths: &[PathBuf],
    seen: &mut Vec<(u64, u64)>,
) -> Result<File> {
    let given_twice = |id: (u64, u64), seen: &[(u64, u64)]| {
        seen.iter().position(|&x| x == id).map(|i| {
            member_err(
                path,
                format!("given twice (same file as {})", paths[i].display()),
            )
        })
    };
    // Before opening: a device opened twice would be refused as busy by its own claim.
    if let Ok(m) = std::fs::metadata(path) {
        if let Some(e) = given_twice((m.dev(), m.ino()), seen) {
            return Err(e);
        }
    }
    let file = crate::owner::open_member_file(path, create)?;
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    let id = (meta.dev(), meta.ino());
    if let Some(e) = given_twice(id, seen) {
        return Err(e);
    }
    crate::owner::claim(&file, path)?;
    seen.push(id);
    Ok(file)
}

/// Refuses `path` as `create`'s new write journal when it is one of the members or
/// spares just opened (`ids`: their devices and inodes, so another path to the same
/// file is caught), or carries raidlab metadata (another array's journal, member,
/// cache member) unless `force` names it. A file that does not exist yet is fine.
pub(super) fn check_new_journal(
    path: &Path,
    ids: &[(u64, u64)],
    force: &crate::format::probe::Overwrite,
) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if ids.contains(&(meta.dev(), meta.ino())) {
        return Err(member_err(
            path,
            "is a member or spare of this array; the journal needs its own file",
        ));
    }
    let file = File::open(path).map_err(io_err(path, "open"))?;
    crate::format::probe::refuse_foreign(&file, path, "the journal", force)
}

/// Makes `file` (opened from `path`, not yet written) ready to take a member's place
/// of `need` bytes before anything about the array changes: a block device must hold
/// them; a file gets its blocks allocated (`fallocate(FALLOC_FL_KEEP_SIZE)`: its size
/// is set by the rebuild), so a full filesystem refuses `replace` while the member it
/// would replace still works. A filesystem without `fallocate` is checked for free
/// space instead.
pub fn prepare_replacement(file: &File, path: &Path, need: u64) -> Result<()> {
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    let have = device_bytes(file, path)?;
    if meta.file_type().is_block_device() {
        return match have >= need {
            true => Ok(()),
            false => Err(member_err(
                path,
                format!("holds {have} B, the array needs {need} B per member; nothing was changed"),
            )),
        };
    }
    if meta.blocks().saturating_mul(512) >= need {
        return Ok(()); // every block there already: nothing to allocate, or to change
    }
    let full = |free: Option<u64>| {
        let free = free.map_or(String::new(), |f| format!(", it has {f} B free"));
        member_err(
            path,
            format!(
                "not enough space for the replacement: it needs {need} B{free}; nothing was \
                 changed (free space, or give another NEW)"
            ),
        )
    };
    match allocate_range(file, 0, need) {
        Ok(()) => Ok(()),
        Err(e) if crate::error::is_no_space(&e) => Err(full(free_bytes(file, path).ok())),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            let missing = need.saturating_sub(meta.blocks().saturating_mul(512));
            let free = free_bytes(file, path)?;
            match missing > free {
                true => Err(full(Some(free))),
                false => Ok(()),
            }
        }
        Err(e) => Err(io_err(path, "allocate")(e)),
    }
}

/// Free bytes of the filesystem holding `file` (what its user may allocate; root may
/// also take the blocks reserved for it).
fn free_bytes(file: &File, path: &Path) -> Result<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatvfs writes one `statvfs` through the pointer, on an open descriptor.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 {
        return Err(io_err(path, "statvfs")(std::io::Error::last_os_error()));
    }
    // SAFETY: geteuid cannot fail.
    let blocks = if unsafe { libc::geteuid() } == 0 {
        st.f_bfree
    } else {
        st.f_bavail
    };
    Ok(blocks.saturating_mul(st.f_frsize))
}

/// Preallocates member files (`fallocate`: they hold every block a whole device would),
/// so that a full filesystem refuses `create` rather than a write of the array later. `files`
/// are the members' regular files (block devices left out) with their paths and
/// sizes. First the space every filesystem must supply is checked (nothing is
/// allocated when it does not suffice), then each file is allocated. A filesystem
/// without `fallocate` leaves its members sparse, with a warning. Errors name the
/// member and the bytes needed, in one line.
pub(super) fn preallocate(files: &[(&Path, &File, u64)]) -> Result<()> {
    use std::os::fd::AsRawFd;
    // Per filesystem: bytes still to allocate, in member order.
    let mut need: Vec<(u64, u64, u64)> = Vec::new(); // (dev, bytes needed, members)
    for &(path, file, len) in files {
        let meta = file.metadata().map_err(io_err(path, "stat"))?;
        let missing = len.saturating_sub(meta.blocks().saturating_mul(512));
        let (total, members) = match need.iter_mut().find(|(d, _, _)| *d == meta.dev()) {
            Some((_, n, m)) => {
                *n += missing;
                *m += 1;
                (*n, *m)
            }
            None => {
                need.push((meta.dev(), missing, 1));
                (missing, 1)
            }
        };
        let free = free_bytes(file, path)?;
        if total > free {
            return Err(member_err(
                path,
                format!(
                    "not enough space to preallocate: {members} file(s) of the array on this \
                     filesystem need {total} B more, it has {free} B free; free space, or give --sparse"
                ),
            ));
        }
    }
    for &(path, file, len) in files {
        let Ok(len_off) = libc::off_t::try_from(len) else {
            return Err(member_err(
                path,
                format!("{len} B is too large to preallocate"),
            ));
        };
        // SAFETY: fallocate on an open descriptor; no memory is passed.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len_off) } == 0 {
            continue;
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => eprintln!(
                "raidlab-engine: {}: the filesystem cannot preallocate; member left sparse \
                 (a full filesystem then answers writes ENOSPC)",
                path.display()
            ),
            _ => {
                return Err(member_err(
                    path,
                    format!("preallocating {len} B: {err}; free space, or give --sparse"),
                ))
            }
        }
    }
    Ok(())
}

/// Allocates `len` bytes at `offset` of `file` without changing its size
/// (`fallocate(FALLOC_FL_KEEP_SIZE)`): the blocks a write is about to fill, so that a
/// full filesystem refuses the write before any member is written.
pub(super) fn allocate_range(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(o), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
    };
    // SAFETY: fallocate on an open descriptor; no memory is passed.
    if unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, o, l) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads and decodes the superblock of `path`.
pub fn read_superblock(path: &Path) -> Result<Superblock> {
    let file = File::open(path).map_err(io_err(path, "open"))?;
    read_superblock_of(&file, path)
}

pub(super) fn read_superblock_of(file: &File, path: &Path) -> Result<Superblock> {
    let mut b = [0u8; SUPERBLOCK_BYTES];
    file.read_exact_at(&mut b, 0)
        .map_err(|e| member_err(path, format!("cannot read superblock: {e}")))?;
    Superblock::decode(&b).map_err(|e| member_err(path, e.to_string()))
}

impl Array {
    /// The role of `target`: a member path (as assembled), a role index, or a file whose
    /// superblock names a role of this array.
    pub fn role_of(&self, target: &str) -> Result<u32> {
        let st = self.status();
        let given = Path::new(target);
        let absolute = std::path::absolute(given).ok();
        if let Some(r) = st.members.iter().position(|(p, _)| {
            p.as_deref() == Some(given)
                || (absolute.is_some() && p.as_deref() == absolute.as_deref())
        }) {
            return Ok(r as u32);
        }
        if let Ok(r) = target.parse::<u32>() {
            if r < self.geo.members() {
                return Ok(r);
            }
        }
        if let Ok(sb) = read_superblock(given) {
            if sb.array_uuid == st.uuid {
                return Ok(sb.role);
            }
        }
        Err(Error::Input(format!(
            "{target}: not a member of this array (give one of the member paths or a role 0..={})",
            self.geo.members() - 1
        )))
    }

    /// Applies `change` to the state, bumps the event counter and writes the superblock
    /// of every active member.
    pub(super) fn commit_state(&self, change: impl FnOnce(&mut State)) -> Result<()> {
        let mut st = self.state.lock().expect("state lock");
        change(&mut st);
        st.events += 1;
        let files = self.files.read().expect("files lock");
        let mut first_err = None;
        for role in 0..self.geo.members() {
            if st.failed.contains(role) {
                continue;
            }
            let Some(file) = &files[role as usize] else {
                continue;
            };
            let sb = Superblock {
                array_uuid: self.uuid,
                spec: self.spec,
                role,
                events: st.events,
                dirty: st.dirty,
                failed: st.failed,
                journaled: self.journal.is_some(),
                policy: self.policy,
                recovery_offset_bytes: None,
                recovery_rate_bytes_per_s: None,
                cache_uuid: st.cache_uuid,
                integrity: self.integrity(),
            };
            let path = st.members[role as usize].0.clone().unwrap_or_default();
            let mut image = sb.encode();
            self.put_bad_blocks(role, &mut image);
            let r = file
                .write_all_at(&image, 0)
                .and_then(|()| file.sync_data())
                .map_err(io_err(&path, "write superblock"));
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        // Spares follow every state change too, as md writes the superblock of every
        // device, spares included.
        self.write_spare_superblocks(&st);
        // The replacement being rebuilt follows every state change, so its events stay
        // current and a clean stop leaves it resumable.
        if let Some(cp) = self.checkpoint.lock().expect("checkpoint lock").as_ref() {
            if st.failed.contains(cp.role) {
                if let Err(e) = self.write_checkpoint(&st, cp) {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Marks `role` failed (refused when the level would lose data) and records it in
    /// the superblocks of the survivors, so the member is stale when it comes back.
    pub fn fail_member(&self, role: u32) -> Result<()> {
        if role >= self.geo.members() {
            return Err(Error::Input(format!(
                "member {role} does not exist ({} members)",
                self.geo.members()
            )));
        }
        let mut failed = self.failed();
        failed.insert(role);
        if !self.geo.tolerates(&failed) {
            return Err(Error::Input(format!(
                "refusing to fail member {role}: {} with members {failed} failed loses data",
                self.geo.level()
            )));
        }
        self.commit_state(|st| {
            st.failed.insert(role);
            if st.members[role as usize].1 == MemberState::Active {
                st.members[role as usize].1 = MemberState::Failed;
            }
        })
    }

    /// A member I/O error: mark it failed (even past tolerance, so no further I/O goes
    /// to it) and tell the survivors.
    pub(super) fn member_io_failed(&self, role: u32, err: &std::io::Error) {
        let path = self.member_path(role);
        eprintln!(
            "raidlab-engine: member {role} ({}) failed: {err}; array degraded",
            path.display()
        );
        if let Err(e) = self.commit_state(|st| {
            st.failed.insert(role);
            st.members[role as usize].1 = MemberState::Failed;
        }) {
            eprintln!("raidlab-engine: recording the failure: {e}");
        }
    }
}
