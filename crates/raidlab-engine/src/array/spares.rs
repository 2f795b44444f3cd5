//! Hot spares, as md keeps them: a spare is a member of the array with no role (its
//! superblock says role [`ROLE_SPARE`]), owned and locked like every other member,
//! holding no data. When a member fails, md's recovery (`md_check_recovery` ->
//! `remove_and_add_spares`) gives a spare the failed member's role and rebuilds onto it
//! online, without waiting for anyone; here the server's control thread asks
//! [`Array::take_spare`] at every tick and runs the rebuild it returns
//! (see `crate::net::control`), so a failure by I/O error, injected fault or `fail` is
//! followed by a rebuild within a tick.
//!
//! ```text
//!  create --spares s1,s2 / add-spare s3 ─► superblock role ROLE_SPARE, events kept
//!                                          current by every state change
//!  member fails ─► take_spare: lowest failed role, first spare ─► rebuild_onto(role)
//!                 (the spare's superblock becomes the role's, recovering, then active)
//! ```

use super::members::{device_bytes, MemberState};
use super::{Array, State};
use crate::error::{io_err, member_err};
use crate::error::{Error, Result};
use crate::format::superblock::{Superblock, ROLE_SPARE};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The most hot spares one array keeps (md has no fixed bound; this one keeps every
/// state change's superblock writes bounded).
pub const SPARES_MAX: usize = 16;

/// A hot spare: its path and its open, claimed file.
pub(super) struct Spare {
    pub(super) path: PathBuf,
    pub(super) file: File,
}

/// Refuses a spare of `have` bytes for members that need `need` (superblock area
/// included): a spare must be able to hold any member's data, or it could not take
/// that member's role.
pub(super) fn check_spare_bytes(path: &Path, have: u64, need: u64) -> Result<()> {
    if have < need {
        return Err(member_err(
            path,
            format!(
                "spare holds {have} B, smaller than the {need} B every member of the array needs"
            ),
        ));
    }
    Ok(())
}

impl Array {
    /// Bytes a spare must hold: what a replacement needs (see [`Array::rebuild_onto`]).
    pub(super) fn spare_bytes_needed(&self) -> u64 {
        self.member_bytes_needed()
    }

    /// The hot spares' paths, in the order they would take over.
    pub fn spares(&self) -> Vec<PathBuf> {
        self.spares
            .lock()
            .expect("spares lock")
            .iter()
            .map(|s| s.path.clone())
            .collect()
    }

    /// Adds `file` (opened from `path` by [`open_member_file`](super::open_member_file)
    /// or passed by a client) as a hot spare, as `mdadm --add` adds a device to an array
    /// that has all its members: claims it, checks its size, and records it in its own
    /// superblock (role spare) and the event counter of every member. Refused when it is
    /// a member or spare of this array already, carries another raidlab superblock, or
    /// is smaller than a member. A degraded array served takes it at once.
    pub fn add_spare(&self, file: File, path: &Path) -> Result<()> {
        let meta = file.metadata().map_err(io_err(path, "stat"))?;
        let id = (meta.dev(), meta.ino());
        let same = |f: &File| f.metadata().is_ok_and(|m| (m.dev(), m.ino()) == id);
        if let Some(r) = self
            .files
            .read()
            .expect("files lock")
            .iter()
            .position(|f| f.as_deref().is_some_and(same))
        {
            return Err(member_err(path, format!("is member {r} of this array")));
        }
        if self
            .spares
            .lock()
            .expect("spares lock")
            .iter()
            .any(|s| same(&s.file))
        {
            return Err(member_err(path, "is a spare of this array already"));
        }
        crate::owner::claim(&file, path)?;
        if let Some(found) = crate::format::probe::probe(&file) {
            return Err(member_err(
                path,
                format!(
                    "carries {found}; refusing to overwrite it as a spare (wipe its first \
                     4 KiB to use it as one)"
                ),
            ));
        }
        check_spare_bytes(path, device_bytes(&file, path)?, self.spare_bytes_needed())?;
        {
            let mut spares = self.spares.lock().expect("spares lock");
            if spares.len() >= SPARES_MAX {
                return Err(Error::Input(format!(
                    "add-spare: at most {SPARES_MAX} spares per array"
                )));
            }
            spares.push(Spare {
                path: path.to_path_buf(),
                file,
            });
        }
        self.commit_state(|_| {})
    }

    /// Writes every spare's superblock: the array as `st` has it, role spare. A spare
    /// that cannot be written is dropped (md marks a spare faulty on a write error).
    pub(super) fn write_spare_superblocks(&self, st: &State) {
        let sb = Superblock {
            array_uuid: self.uuid,
            spec: self.spec,
            role: ROLE_SPARE,
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
        let image = sb.encode();
        self.spares.lock().expect("spares lock").retain(|s| {
            let r = s
                .file
                .write_all_at(&image, 0)
                .and_then(|()| s.file.sync_data());
            if let Err(e) = &r {
                eprintln!(
                    "raidlab-engine: hot spare {} dropped: writing its superblock: {e}",
                    s.path.display()
                );
            }
            r.is_ok()
        });
    }

    /// md's spare recovery: when a member is failed (or missing, or stale), the level
    /// still holds the data, no rebuild is running or waiting to resume, and a spare is
    /// there, takes the first spare out of the list for the lowest such role and returns
    /// `(role, spare path, spare file)` for [`Array::rebuild_onto`]; the caller runs the
    /// rebuild. Faults injected into that role are removed: they were the failed
    /// disk's. `None` when there is nothing to do.
    pub fn take_spare(&self) -> Option<(u32, PathBuf, File)> {
        if self.geo.tolerated_failures() == 0
            || self.rebuild_progress().is_some()
            || self.resumable_rebuild().is_some()
        {
            return None;
        }
        let role = {
            let st = self.state.lock().expect("state lock");
            if st.failed.is_empty() || !self.geo.tolerates(&st.failed) {
                return None;
            }
            (0..self.geo.members()).find(|&r| {
                st.failed.contains(r)
                    && !matches!(st.members[r as usize].1, MemberState::Recovering { .. })
            })?
        };
        let mut spares = self.spares.lock().expect("spares lock");
        if spares.is_empty() {
            return None;
        }
        let s = spares.remove(0);
        drop(spares);
        // The faults injected into the role were the failed disk's: it leaves the array,
        // the spare in its slot does not inherit them.
        let mut faults = self.faults.write().expect("faults lock");
        faults.retain(|f| f.member() != role);
        self.any_fault
            .store(!faults.is_empty(), std::sync::atomic::Ordering::Relaxed);
        Some((role, s.path, s.file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::CreateOptions;
    use crate::format::superblock::DATA_OFFSET_BYTES;
    use raidlab_layout::Level;

    const MEMBER_BYTES: u64 = DATA_OFFSET_BYTES + (1 << 20);

    /// A RAID 5 (or `level`) of three members with `spares` spares, in `dir`.
    fn array(dir: &Path, level: Level, spares: usize) -> (Vec<PathBuf>, Array) {
        let members: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("m{i}"))).collect();
        let mut opts = CreateOptions::new(level, 16 << 10, Some(MEMBER_BYTES));
        opts.spares = (0..spares).map(|i| dir.join(format!("s{i}"))).collect();
        let a = Array::create(&members, &opts).unwrap();
        (members, a)
    }

    #[test]
    fn the_first_spare_takes_the_lowest_failed_role_and_its_faults_go() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = array(dir.path(), Level::Raid5, 2);
        assert!(a.take_spare().is_none(), "nothing failed");
        a.inject_fault(crate::array::Fault::WriteError {
            member: 2,
            offset_bytes: 0,
            len_bytes: 4096,
        })
        .unwrap();
        a.fail_member(2).unwrap();
        let (role, path, _file) = a.take_spare().unwrap();
        assert_eq!((role, path), (2, dir.path().join("s0")));
        assert!(a.status().faults.is_empty());
        assert_eq!(a.spares(), [dir.path().join("s1")]);
    }

    #[test]
    fn no_spare_is_taken_without_redundancy_or_past_the_level_tolerance() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = array(dir.path(), Level::Raid0, 1);
        assert!(
            a.take_spare().is_none(),
            "RAID 0 has nothing to rebuild from"
        );
        assert_eq!(a.spares().len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = array(dir.path(), Level::Raid5, 1);
        a.fail_member(0).unwrap();
        // An I/O error fails a member even past the tolerance: then nothing rebuilds.
        a.member_io_failed(1, &std::io::Error::other("test"));
        assert!(a.take_spare().is_none());
        assert_eq!(a.spares().len(), 1);
    }

    #[test]
    fn a_spare_superblock_follows_the_event_counter() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a) = array(dir.path(), Level::Raid5, 1);
        a.fail_member(1).unwrap();
        let sb = super::super::read_superblock(&dir.path().join("s0")).unwrap();
        assert!(sb.is_spare());
        assert_eq!(sb.events, a.status().events);
        assert!(sb.failed.contains(1));
    }

    #[test]
    fn add_spare_refuses_members_spares_and_small_files() {
        let dir = tempfile::tempdir().unwrap();
        let (members, a) = array(dir.path(), Level::Raid5, 1);
        let open = |p: &Path| crate::array::open_member_file(p, true).unwrap();
        let e = a.add_spare(open(&members[0]), &members[0]).unwrap_err();
        assert!(e.to_string().contains("is member 0"), "{e}");
        let s0 = dir.path().join("s0");
        let e = a.add_spare(open(&s0), &s0).unwrap_err();
        assert!(e.to_string().contains("spare of this array already"), "{e}");
        let small = dir.path().join("small");
        let f = open(&small);
        f.set_len(MEMBER_BYTES - 4096).unwrap();
        let e = a.add_spare(f, &small).unwrap_err();
        assert!(e.to_string().contains("smaller than"), "{e}");
        let big = dir.path().join("big");
        let f = open(&big);
        f.set_len(MEMBER_BYTES).unwrap();
        a.add_spare(f, &big).unwrap();
        assert_eq!(a.spares(), [s0, big]);
    }
}
