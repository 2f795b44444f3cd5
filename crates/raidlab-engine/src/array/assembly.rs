//! Creating an array on member files or devices and assembling one from their
//! superblocks, as mdadm --create and --assemble do: parse and validate first, then
//! open, size and write.

use super::bitmap::bitmap_bytes;
use super::integrity::{data_bytes_with, Checksums};
use super::members::{
    device_bytes, open_member_once, preallocate, random_uuid, read_superblock_of, MemberState,
};
use super::rebuild::Checkpoint;
use super::spares::{check_spare_bytes, Spare, SPARES_MAX};
use super::{Array, State, REQUEST_BYTES_MAX};
use crate::error::{io_err, member_err};
use crate::error::{Error, Result};
use crate::format::journal::Journal;
use crate::format::ppl;
use crate::format::superblock::{
    ConsistencyPolicy, Integrity, Superblock, BITMAP_OFFSET_BYTES, BITMAP_REGION_BYTES,
    DATA_OFFSET_BYTES, INTEGRITY_BLOCK_BYTES,
};
use raidlab_layout::{ArraySpec, FailedSet, Geometry, Layout, Level, MEMBERS_MAX};
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Events a member's superblock may lag the newest and still be current: one, the
/// superblock write a crash interrupted (see `assemble`).
const EVENT_MARGIN: u64 = 1;

/// How to create an array: the geometry without member capacity, plus creation options.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// RAID level (mdadm's `--level`).
    pub level: Level,
    /// Chunk size on one member in bytes (mdadm's `--chunk`): a power of two of at
    /// least 512 B.
    pub stripe_unit_bytes: u64,
    /// Layout; `None` takes md's default.
    pub layout: Option<Layout>,
    /// RAID 10 copies of every chunk, 2..=members; `None` takes md's default, 2.
    pub copies: Option<u32>,
    /// RAID 50/60 sub-arrays the members are split into; required there, refused
    /// elsewhere.
    pub spans: Option<u32>,
    /// Size of every member file, superblock area included; files are created or
    /// extended to it. `None` uses the members as they are (block devices, existing files).
    pub member_size_bytes: Option<u64>,
    /// The array UUID; `None` draws one from /dev/urandom.
    pub uuid: Option<u128>,
    /// Which members, spares and journal that carry raidlab metadata may be
    /// overwritten all the same (`--force-overwrite FILE`); by default none.
    pub force: crate::format::probe::Overwrite,
    /// Skip the initial resync even when a member held data before (its parity and
    /// copies would be inconsistent with that data until a `repair`).
    pub assume_clean: bool,
    /// A write journal (file or device) every write goes through first; closes the
    /// write hole (see [`crate::format::journal`]). Redundant levels only.
    pub journal: Option<PathBuf>,
    /// Size of a journal file; `None` takes [`journal_bytes_default`].
    pub journal_bytes: Option<u64>,
    /// Leave member files sparse: no preallocation (`fallocate`) of their blocks. A
    /// write that then finds their filesystem full fails `ENOSPC` (no member fails).
    pub sparse: bool,
    /// What makes parity agree again after an unclean stop (mdadm's
    /// `--consistency-policy`); `None`: `journal` with a journal, else
    /// [`default_policy`]. `journal` needs a journal; `ppl` is for the parity levels.
    pub policy: Option<ConsistencyPolicy>,
    /// Hot spares (mdadm's `--spare-devices`): files or devices with no role that
    /// take a failed member's place (see `spares`); created or extended to
    /// `member_size_bytes` like the members, else at least a member's size.
    pub spares: Vec<PathBuf>,
    /// Per-block checksums of the data (dm-integrity's `--integrity`): kept after the
    /// data on every member, which shrinks the data by about 1/1024 (see
    /// `integrity`). Needs the bitmap or resync policy.
    pub integrity: Integrity,
}

/// A stale or failed member that `assemble --force` put back in: its data may miss
/// writes made after its event counter stopped, so `check` should follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forced {
    /// Its role.
    pub role: u32,
    /// Its file or device.
    pub path: PathBuf,
    /// Its event counter (the array's was [`Forced::array_events`]).
    pub events: u64,
    /// The array's event counter when it was forced in.
    pub array_events: u64,
}

/// Undoes a failed `create`: removes the files it created and gives the files it
/// extended their size back. Disarmed once the array is created.
struct Undo {
    created: Vec<PathBuf>,
    extended: Vec<(PathBuf, u64)>,
    armed: bool,
}

impl Drop for Undo {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for p in &self.created {
            let _ = std::fs::remove_file(p);
        }
        for (p, len) in &self.extended {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .and_then(|f| f.set_len(*len));
        }
    }
}

/// The default journal size for `members` members: room for four of the largest
/// records, at least 256 MiB.
pub fn journal_bytes_default(members: u32) -> u64 {
    (4 * Journal::record_bytes_max(REQUEST_BYTES_MAX, members)).max(256 << 20)
}

impl CreateOptions {
    /// Options for `level` with chunk `stripe_unit_bytes`, members of `member_size_bytes`,
    /// everything else default.
    pub fn new(level: Level, stripe_unit_bytes: u64, member_size_bytes: Option<u64>) -> Self {
        Self {
            level,
            stripe_unit_bytes,
            layout: None,
            copies: None,
            spans: None,
            member_size_bytes,
            uuid: None,
            force: crate::format::probe::Overwrite::Nothing,
            assume_clean: false,
            journal: None,
            journal_bytes: None,
            sparse: false,
            policy: None,
            spares: Vec::new(),
            integrity: Integrity::None,
        }
    }
}

/// The geometry `create` lays out: `members` members of `data_bytes` each.
fn create_spec(members: usize, opts: &CreateOptions, data_bytes: u64) -> ArraySpec {
    ArraySpec {
        level: opts.level,
        drive_count: members as u32,
        stripe_unit_bytes: opts.stripe_unit_bytes,
        member_capacity_bytes: data_bytes,
        layout: opts.layout,
        copies: opts.copies,
        spans: opts.spans,
    }
}

impl Array {
    /// Creates an array on `paths` (member i gets role i) and returns it assembled.
    /// Refuses members that already carry a raidlab superblock unless `force`.
    pub fn create(paths: &[PathBuf], opts: &CreateOptions) -> Result<Self> {
        check_create_geometry(paths, opts)?;
        check_integrity(opts)?;
        let mut ids = Vec::new();
        let mut undo = Undo {
            created: Vec::new(),
            extended: Vec::new(),
            armed: true,
        };
        let NewMembers {
            files,
            fresh,
            data_bytes_min,
            regular,
        } = open_new_members(paths, opts, &mut ids, &mut undo)?;
        warn_copy_on_write(paths, &files, &regular);
        let all_paths: Vec<PathBuf> = paths.iter().chain(&opts.spares).cloned().collect();
        let spares = open_spares(
            opts,
            &all_paths,
            &mut ids,
            &mut undo,
            DATA_OFFSET_BYTES + data_bytes_min,
        )?;
        if !opts.sparse {
            preallocate_files(paths, &files, &regular, &spares)?;
        }
        let data_bytes = data_bytes_with(opts.integrity, DATA_OFFSET_BYTES + data_bytes_min);
        let spec = create_spec(paths.len(), opts, data_bytes);
        let geo = Geometry::new(&spec)?;
        let uuid = match opts.uuid {
            Some(u) => u,
            None => random_uuid()?,
        };
        let policy = integrity_policy(opts, consistency_policy(opts, &geo)?)?;
        let journal = match &opts.journal {
            None => None,
            Some(path) => Some(create_journal(
                path, paths, opts, &geo, uuid, &ids, &mut undo,
            )?),
        };
        let mut array = Self::with_state(
            spec,
            uuid,
            files.into_iter().map(|f| Some(Arc::new(f))).collect(),
            State {
                events: 0,
                dirty: false,
                failed: FailedSet::new(),
                members: paths
                    .iter()
                    .map(|p| (Some(p.clone()), MemberState::Active))
                    .collect(),
                cache_uuid: None,
            },
            vec![0; bitmap_bytes(&geo)],
            journal,
            policy,
        )?;
        *array.spares.get_mut().expect("spares lock") =
            spares.into_iter().map(|(s, _)| s).collect();
        array.checksums = (opts.integrity == Integrity::Crc32c)
            .then(|| Checksums::new(data_bytes, paths.len() as u32));
        array.init_checksums(fresh)?;
        array.start_consistent(fresh || opts.assume_clean)?;
        undo.armed = false;
        Ok(array)
    }

    /// A new array's first state on disk: a clean bitmap and, under PPL, an empty log
    /// (a reused member may hold old ones), parity made consistent unless the members
    /// are known to be (`consistent`: zero-filled, or `--assume-clean`), then the
    /// superblocks.
    fn start_consistent(&self, consistent: bool) -> Result<()> {
        self.write_bitmap(&[0u8].repeat(bitmap_bytes(&self.geo)))?;
        if self.policy == ConsistencyPolicy::Ppl {
            self.clear_ppl()?;
        }
        // Zero-filled members are already consistent (zero data, zero P and Q); any
        // other content needs md's initial resync.
        if !consistent && self.geo.tolerated_failures() > 0 {
            self.scrub_where(true, |_| true)?;
        }
        self.commit_state(|_| {})
    }

    /// Assembles the array from its member files: refuses foreign, duplicate, corrupt or
    /// too-small members and more members than the array has; leaves out stale members
    /// (event counter behind the newest) and assembles degraded when the level tolerates
    /// the missing, stale and failed members.
    pub fn assemble(paths: &[PathBuf]) -> Result<Self> {
        Self::assemble_with(paths, None)
    }

    /// [`Array::assemble`] with the array's write journal: refused without it when the
    /// array has one (and with one when it has none). The journal's records are
    /// replayed onto the members present, then retired.
    pub fn assemble_with(paths: &[PathBuf], journal: Option<&Path>) -> Result<Self> {
        Self::assemble_forced(paths, journal, false)
    }

    /// [`Array::assemble_with`], and with `force` (mdadm's `--assemble --force`): when
    /// the failed, missing and stale members are more than the level tolerates, the
    /// freshest stale (or failed) members present are put back in, highest event
    /// counter first, until it tolerates the rest; their superblocks are brought to the
    /// array's event counter. What they missed is not known: [`Array::forced`] lists
    /// them for the user, who should run `check`. Refused when even every member
    /// present cannot make up the array (too many missing).
    pub fn assemble_forced(paths: &[PathBuf], journal: Option<&Path>, force: bool) -> Result<Self> {
        let (found, spares_found) = read_members(paths)?;
        let newest = newest_superblock(&found)?;
        let by_role = roles_of(&found, &newest)?;
        let geo = Geometry::new(&newest.spec)?;
        let mut slots = member_slots(&found, &by_role, &newest, &geo)?;
        let forced = if force && !geo.tolerates(&slots.failed) {
            force_back(&mut slots, &found, &by_role, &newest, &geo)?
        } else {
            Vec::new()
        };
        refuse_untolerated(&slots, &geo, force)?;
        let bitmap = assembled_bitmap(&slots, &newest, &geo)?;
        let journal = open_journal(journal, &newest, force)?;
        // A journaled array assembled without its journal (--force): from now on it is
        // an array of the bitmap policy, which the journal policy kept all along.
        let journal_dropped = newest.journaled && journal.is_none();
        let policy = if journal_dropped {
            ConsistencyPolicy::Bitmap
        } else {
            newest.policy
        };
        let Slots {
            failed,
            members,
            files,
            resume,
        } = slots;
        let state = State {
            events: newest.events,
            dirty: newest.dirty,
            failed,
            members,
            cache_uuid: newest.cache_uuid,
        };
        let mut array = Self::with_state(
            newest.spec,
            newest.array_uuid,
            files,
            state,
            bitmap,
            journal,
            policy,
        )?;
        array.checksums = (newest.integrity == Integrity::Crc32c)
            .then(|| Checksums::new(newest.spec.member_capacity_bytes, geo.members()));
        array.load_bad_blocks()?;
        array.journal_replayed = array.replay_journal()?;
        if newest.dirty {
            array.ppl_recovered = array.recover_ppl()?;
        }
        *array.checkpoint.lock().expect("checkpoint lock") = resume;
        *array.spares.get_mut().expect("spares lock") = assembled_spares(spares_found, &newest)?;
        if journal_dropped {
            warn_journal_dropped(&newest);
        }
        if !forced.is_empty() || journal_dropped {
            // The forced members join at the array's event counter (and out of the
            // failed set), and a dropped journal leaves the superblocks, so that the
            // next assembly takes them without --force.
            array.forced = forced;
            array.commit_state(|_| {})?;
        }
        Ok(array)
    }

    /// Zeroes the partial parity log of every active member.
    pub(super) fn clear_ppl(&self) -> Result<()> {
        let files = self.files.read().expect("files lock").clone();
        for (role, f) in files.iter().enumerate() {
            if let Some(f) = f {
                let path = self.member_path(role as u32);
                ppl::clear(f).map_err(io_err(&path, "clear ppl"))?;
                if let Some(p) = &self.ppl {
                    p.cleared(role as u32, f);
                }
            }
        }
        Ok(())
    }

    /// After an unclean stop under the `ppl` policy: recomputes, from each active
    /// member's partial parity log, the parity of every stripe a write may have left
    /// half done (see [`crate::format::ppl`]), rebuilding lost chunks from the logged
    /// partial parity first, and syncs it. Returns the stripes recomputed.
    fn recover_ppl(&self) -> Result<u64> {
        if self.ppl.is_none() {
            return Ok(0);
        }
        let files = self.files.read().expect("files lock").clone();
        let failed = self.failed();
        let slot = ppl::slot_bytes(self.geo.stripe_unit_bytes(), self.geo.parity_per_stripe());
        // Every stripe from its newest entry, across the logs (a RAID 6 stripe is
        // logged on its P and Q members alike; one of them may have missed writes while
        // failed): highest generation first, then, for records of the first format
        // (generation 0), log by log, newest first.
        let mut logged = Vec::new();
        for m in 0..self.geo.members() {
            let Some(f) = files[m as usize].as_ref().filter(|_| !failed.contains(m)) else {
                continue;
            };
            let log = ppl::read_log(f).map_err(io_err(&self.member_path(m), "read ppl"))?;
            logged.extend(
                ppl::records_to_replay(&log, self.uuid, slot)
                    .into_iter()
                    .map(|r| (m, r)),
            );
        }
        logged.sort_by(|(ma, a), (mb, b)| {
            (b.generation.cmp(&a.generation))
                .then(ma.cmp(mb))
                .then(b.seq.cmp(&a.seq))
        });
        let mut done = std::collections::BTreeSet::new();
        let mut recovered = 0;
        for (m, record) in &logged {
            for e in &record.entries {
                let writes =
                    ppl::recover_entry(&self.geo, *m, e, &failed, &mut done, |d, off, buf| {
                        files[d as usize]
                            .as_ref()
                            .expect("active members have a file")
                            .read_exact_at(buf, DATA_OFFSET_BYTES + off)
                    })
                    .map_err(io_err(&self.member_path(*m), "read data for ppl recovery"))?;
                recovered += writes.len() as u64;
                for (pm, off, p) in writes.into_iter().flatten() {
                    let file = files[pm as usize]
                        .as_ref()
                        .expect("active members have a file");
                    file.write_all_at(&p, DATA_OFFSET_BYTES + off)
                        .map_err(io_err(&self.member_path(pm), "ppl recovery"))?;
                }
            }
        }
        if recovered > 0 {
            self.flush()?;
        }
        Ok(recovered)
    }

    /// Writes every journal record onto the members present (in log order, so the last
    /// write of a block wins), syncs them and retires the records.
    fn replay_journal(&self) -> Result<u64> {
        let Some(j) = &self.journal else {
            return Ok(0);
        };
        let records = j.records()?;
        if records.is_empty() {
            return Ok(0);
        }
        let files = self.files.read().expect("files lock").clone();
        let failed = self.failed();
        for record in &records {
            for e in record {
                if e.member >= self.geo.members() || failed.contains(e.member) {
                    continue;
                }
                if let Some(f) = &files[e.member as usize] {
                    let path = self.member_path(e.member);
                    f.write_all_at(&e.data, DATA_OFFSET_BYTES + e.offset_bytes)
                        .map_err(io_err(&path, "replay journal"))?;
                }
            }
        }
        self.flush()?;
        j.retire()?;
        Ok(records.len() as u64)
    }
}

/// A member file given to assembly, open, with its superblock.
type Found = (PathBuf, File, Superblock);

/// The members as assembly finds them, by role: what [`Array::assemble_forced`]
/// builds the array's state from.
struct Slots {
    /// Roles failed, missing or stale.
    failed: FailedSet,
    /// Per role: its file's path (none when missing) and state.
    members: Vec<(Option<PathBuf>, MemberState)>,
    /// Per role: the open file the array reads and writes, if it serves data.
    files: Vec<Option<Arc<File>>>,
    /// The rebuild a member's superblock says was stopped, to resume.
    resume: Option<Checkpoint>,
}

/// Opens every path once and reads its superblock: the members with a role, then
/// the hot spares.
fn read_members(paths: &[PathBuf]) -> Result<(Vec<Found>, Vec<Found>)> {
    if paths.is_empty() {
        return Err(Error::Input(
            "members: at least one member file or device needed".into(),
        ));
    }
    let mut found: Vec<Found> = Vec::new();
    let mut spares_found: Vec<Found> = Vec::new();
    let mut ids = Vec::new();
    for path in paths {
        let file = open_member_once(path, false, paths, &mut ids)?;
        let sb = read_superblock_of(&file, path)?;
        if sb.is_spare() {
            spares_found.push((path.clone(), file, sb));
        } else {
            found.push((path.clone(), file, sb));
        }
    }
    Ok((found, spares_found))
}

/// The newest superblock of a member with a role: it speaks for the array (a spare
/// holds no data: its event counter says nothing about what it missed).
fn newest_superblock(found: &[Found]) -> Result<Superblock> {
    found
        .iter()
        .max_by_key(|(_, _, sb)| sb.events)
        .map(|(_, _, sb)| *sb)
        .ok_or_else(|| {
            Error::Input(
                "members: only hot spares given; the array's members are needed too".into(),
            )
        })
}

/// Which of `found` holds each role of the newest superblock's array; refused when a
/// member belongs to another array or geometry, two claim one role, or there are
/// more members than roles.
fn roles_of(found: &[Found], newest: &Superblock) -> Result<Vec<Option<usize>>> {
    let n = newest.spec.drive_count;
    let mut by_role: Vec<Option<usize>> = vec![None; n as usize];
    for (i, (path, _, sb)) in found.iter().enumerate() {
        if sb.array_uuid != newest.array_uuid {
            return Err(member_err(
                path,
                format!(
                    "belongs to array {:032x}, not {:032x} (the array of the other members)",
                    sb.array_uuid, newest.array_uuid
                ),
            ));
        }
        if sb.spec != newest.spec {
            let describe = |s: &ArraySpec| {
                format!(
                    "{} members, {}, chunk {} B, {} B per member",
                    s.drive_count, s.level, s.stripe_unit_bytes, s.member_capacity_bytes
                )
            };
            return Err(member_err(
                path,
                format!(
                    "its superblock says {}, the newest member's says {}",
                    describe(&sb.spec),
                    describe(&newest.spec)
                ),
            ));
        }
        if let Some(j) = by_role[sb.role as usize] {
            return Err(member_err(
                path,
                format!(
                    "claims role {} like {}: duplicate member",
                    sb.role,
                    found[j].0.display()
                ),
            ));
        }
        by_role[sb.role as usize] = Some(i);
    }
    if found.len() > n as usize {
        return Err(Error::Input(format!(
            "members: {} given, the array has {n}",
            found.len()
        )));
    }
    Ok(by_role)
}

/// Each role's state from its member's superblock against the newest one: active,
/// failed, stale, missing, or recovering (a stopped rebuild, to resume).
fn member_slots(
    found: &[Found],
    by_role: &[Option<usize>],
    newest: &Superblock,
    geo: &Geometry,
) -> Result<Slots> {
    let n = by_role.len();
    let mut slots = Slots {
        failed: newest.failed,
        members: vec![(None, MemberState::Missing); n],
        files: vec![None; n],
        resume: None,
    };
    for (role, slot) in by_role.iter().enumerate() {
        let role = role as u32;
        let Some(i) = *slot else {
            slots.failed.insert(role);
            continue;
        };
        let (path, file, sb) = &found[i];
        // A state change writes the superblocks one member after another, so a crash
        // in between leaves members one event behind that missed nothing but that
        // superblock: they are current unless the newest superblock failed them.
        // mdadm's assembly allows the same ("int event_margin = 1; /* always allow a
        // difference of '1' like the kernel does */", Assemble.c), and the kernel
        // accepts ev1 + 1 while assembling (md.c, super_*_validate).
        let missed_the_last_write =
            sb.events + EVENT_MARGIN >= newest.events && !newest.failed.contains(role);
        let state = if sb.events < newest.events && !missed_the_last_write {
            slots.failed.insert(role);
            MemberState::Stale { events: sb.events }
        } else if let (Some(offset_bytes), true) =
            (sb.recovery_offset_bytes, slots.failed.contains(role))
        {
            // A rebuild stopped: its work below the checkpoint is current, except
            // after an unclean stop in the regions the bitmap marks (a write then in
            // flight may not have reached the replacement), which the resumed
            // rebuild does again first.
            let file = Arc::new(file.try_clone().map_err(io_err(path, "dup"))?);
            slots.resume = Some(Checkpoint {
                role,
                path: path.clone(),
                file: file.clone(),
                offset_bytes,
                rate_bytes_per_s: sb.recovery_rate_bytes_per_s,
            });
            slots.files[role as usize] = Some(file);
            MemberState::Recovering { offset_bytes }
        } else if slots.failed.contains(role) {
            MemberState::Failed
        } else {
            slots.files[role as usize] = Some(data_member(file, path, geo)?);
            MemberState::Active
        };
        slots.members[role as usize] = (Some(path.clone()), state);
    }
    Ok(slots)
}

/// `--force`: puts the freshest stale or failed members present back in (mdadm's
/// order), as few as the level needs to tolerate the rest; none when even all of
/// them would not do.
fn force_back(
    slots: &mut Slots,
    found: &[Found],
    by_role: &[Option<usize>],
    newest: &Superblock,
    geo: &Geometry,
) -> Result<Vec<Forced>> {
    let mut candidates: Vec<(u64, u32)> = slots
        .members
        .iter()
        .enumerate()
        .filter_map(|(r, (_, s))| match s {
            MemberState::Stale { events } => Some((*events, r as u32)),
            MemberState::Failed => Some((newest.events, r as u32)),
            _ => None,
        })
        .collect();
    candidates.sort_by_key(|&(events, role)| (std::cmp::Reverse(events), role));
    let mut trial = slots.failed;
    let needed: Vec<(u64, u32)> = candidates
        .into_iter()
        .take_while(|&(_, role)| {
            let go_on = !geo.tolerates(&trial);
            if go_on {
                trial.remove(role);
            }
            go_on
        })
        .collect();
    let mut forced = Vec::new();
    if !geo.tolerates(&trial) {
        return Ok(forced);
    }
    for (events, role) in needed {
        let (path, file, _) = &found[by_role[role as usize].expect("present")];
        slots.files[role as usize] = Some(data_member(file, path, geo)?);
        slots.members[role as usize].1 = MemberState::Active;
        slots.failed.remove(role);
        forced.push(Forced {
            role,
            path: path.clone(),
            events,
            array_events: newest.events,
        });
    }
    Ok(forced)
}

/// Refuses an array with more failed, missing or stale members than its level
/// tolerates, naming them, and says whether `--force` would help.
fn refuse_untolerated(slots: &Slots, geo: &Geometry, force: bool) -> Result<()> {
    let failed = slots.failed;
    if geo.tolerates(&failed) {
        return Ok(());
    }
    let detail: Vec<String> = slots
        .members
        .iter()
        .enumerate()
        .filter(|(r, _)| failed.contains(*r as u32))
        .map(|(r, (p, s))| match p {
            Some(p) => format!("{r} ({}: {s})", p.display()),
            None => format!("{r} (missing)"),
        })
        .collect();
    // Would putting back every stale or failed member present do?
    let mut all_back = failed;
    for (r, (_, s)) in slots.members.iter().enumerate() {
        if matches!(s, MemberState::Stale { .. } | MemberState::Failed) {
            all_back.remove(r as u32);
        }
    }
    let hint = if force {
        " even with --force (members missing entirely cannot be forced in)"
    } else if geo.tolerates(&all_back) {
        " (--force puts the freshest stale members back in)"
    } else {
        ""
    };
    Err(Error::Input(format!(
        "cannot assemble{hint}: members {} are failed, missing or stale; {} survives {} failure(s)",
        detail.join(", "),
        geo.level(),
        geo.tolerated_failures()
    )))
}

/// The write-intent bitmap to resync from: the union of the members' bitmaps after
/// an unclean stop, nothing after a clean one, every region when the policy keeps no
/// bitmap but must resync (or a resumed rebuild must redo its rows).
fn assembled_bitmap(slots: &Slots, newest: &Superblock, geo: &Geometry) -> Result<Vec<u8>> {
    let mut bitmap = vec![0u8; bitmap_bytes(geo)];
    for (role, f) in slots.files.iter().enumerate() {
        let Some(f) = f else { continue };
        let mut mine = vec![0u8; bitmap.len()];
        f.read_exact_at(&mut mine, BITMAP_OFFSET_BYTES)
            .map_err(|e| Error::Io {
                path: slots.members[role].0.clone().unwrap_or_default(),
                op: "read bitmap",
                source: e,
            })?;
        bitmap.iter_mut().zip(&mine).for_each(|(b, m)| *b |= m);
    }
    if !newest.dirty {
        // A clean stop leaves nothing in flight, whatever a member's bitmap says.
        bitmap.fill(0);
    } else if !newest.policy.keeps_bitmap() {
        // No bitmap on disk: after an unclean stop the `resync` policy resyncs every
        // region; `ppl` recovers from its logs instead, but a rebuild resumed after
        // the crash redoes its rows (the log of the replacement is not replayed).
        bitmap.fill(0);
        if newest.policy == ConsistencyPolicy::Resync || slots.resume.is_some() {
            let regions = geo.member_used_bytes().div_ceil(BITMAP_REGION_BYTES);
            for r in 0..regions {
                bitmap[(r / 8) as usize] |= 1 << (r % 8);
            }
        }
    }
    Ok(bitmap)
}

/// The array's write journal at `journal`: required when the array has one (but
/// with `force`, md's way to start an array whose journal is lost), refused when it
/// has none.
fn open_journal(
    journal: Option<&Path>,
    newest: &Superblock,
    force: bool,
) -> Result<Option<Journal>> {
    match (journal, newest.journaled) {
        (None, false) => Ok(None),
        (Some(j), true) => {
            let journal = Journal::open(j, newest.array_uuid)?;
            journal.claim()?;
            Ok(Some(journal))
        }
        (None, true) if force => Ok(None),
        (None, true) => Err(Error::Input(format!(
            "--journal: array {:032x} writes through a journal; give its path (journal \
             lost: `status --force` without --journal assembles the array without it)",
            newest.array_uuid
        ))),
        (Some(_), false) => Err(Error::Input(format!(
            "--journal: array {:032x} has no write journal",
            newest.array_uuid
        ))),
    }
}

/// Says on stderr what assembling without the journal (`--force`) gives up: after a
/// clean stop nothing; after an unclean one, the stripes being written then may hold
/// data and parity that disagree (the write hole the journal closed), which the
/// bitmap's resync at the next `serve` repairs only while every member is present.
fn warn_journal_dropped(newest: &Superblock) {
    let uuid = newest.array_uuid;
    if newest.dirty {
        eprintln!(
            "raidlab-engine: assemble --force: array {uuid:032x} assembled without its write \
             journal after an unclean stop, and uses none from now on (consistency policy \
             bitmap): writes the journal held that had not reached the members are lost, and \
             stripes being written at the stop may have parity that disagrees with their data \
             (the write hole); the next serve resyncs the dirty bitmap regions, which repairs \
             them only if no member is missing; run `raidlab-engine check` after it"
        );
    } else {
        eprintln!(
            "raidlab-engine: assemble --force: array {uuid:032x} assembled without its write \
             journal after a clean stop (nothing lost), and uses none from now on \
             (consistency policy bitmap)"
        );
    }
}

/// Refuses a member count or geometry that cannot make an array before any file is
/// created (parse, then build).
fn check_create_geometry(paths: &[PathBuf], opts: &CreateOptions) -> Result<()> {
    if paths.is_empty() || paths.len() > MEMBERS_MAX as usize {
        return Err(Error::Input(format!(
            "members: 1..={MEMBERS_MAX} member files or devices needed, got {}",
            paths.len()
        )));
    }
    // Without a size, any size the devices may have: 1 PiB per member, whose array
    // (256 members at most) still counts in 64 bits.
    let probe_bytes = opts
        .member_size_bytes
        .map_or(1 << 50, |s| s.saturating_sub(DATA_OFFSET_BYTES));
    Geometry::new(&ArraySpec {
        level: opts.level,
        drive_count: paths.len() as u32,
        stripe_unit_bytes: opts.stripe_unit_bytes,
        member_capacity_bytes: probe_bytes,
        layout: opts.layout,
        copies: opts.copies,
        spans: opts.spans,
    })?;
    Ok(())
}

/// Fills the regular member files (`regular`: index in `paths` and `files`, bytes)
/// and spare files `create` sized, so that a full filesystem shows now, not on a
/// later write.
fn preallocate_files(
    paths: &[PathBuf],
    files: &[File],
    regular: &[(usize, u64)],
    spares: &[(Spare, u64)],
) -> Result<()> {
    let mut members: Vec<(&Path, &File, u64)> = regular
        .iter()
        .map(|&(i, bytes)| (paths[i].as_path(), &files[i], bytes))
        .collect();
    members.extend(
        spares
            .iter()
            .filter(|(s, _)| s.file.metadata().is_ok_and(|m| m.file_type().is_file()))
            .map(|(s, bytes)| (s.path.as_path(), &s.file, *bytes)),
    );
    preallocate(&members)
}

/// The copy-on-write filesystem `f_type` (statfs) names: btrfs, ZFS and bcachefs.
pub(crate) fn copy_on_write_fs(f_type: i64) -> Option<&'static str> {
    match f_type {
        0x9123_683E => Some("btrfs"),
        0x2FC1_2FC1 => Some("zfs"),
        0xCA45_1A4E => Some("bcachefs"),
        _ => None,
    }
}

/// One line on stderr for the first member file on a copy-on-write filesystem: there an
/// overwrite allocates new blocks, so preallocation reserves nothing for it and a full
/// filesystem can refuse a write half done (on a degraded RAID 5, losing a flushed
/// block of the stripe's missing member). Warned, not refused: with room to spare, or
/// `chattr +C` (btrfs nodatacow), such members work.
fn warn_copy_on_write(paths: &[PathBuf], files: &[File], regular: &[(usize, u64)]) {
    for &(i, _) in regular {
        let Ok(st) = rustix::fs::fstatfs(&files[i]) else {
            continue;
        };
        #[allow(clippy::unnecessary_cast)] // f_type is i64 or u32 by platform
        if let Some(fs) = copy_on_write_fs(st.f_type as i64) {
            eprintln!(
                "raidlab-engine: create: warning: {} is on a copy-on-write filesystem ({fs}): \
                 preallocation reserves no room for overwrites there, so a full filesystem \
                 can tear a stripe (on a degraded array, losing flushed data); use ext4, \
                 xfs or a block device, or a nodatacow directory (chattr +C)",
                paths[i].display()
            );
            return;
        }
    }
}

/// The members `create` opened, in role order.
struct NewMembers {
    files: Vec<File>,
    /// Whether every member is all zeros for sure.
    fresh: bool,
    /// Bytes of the smallest member past the metadata area.
    data_bytes_min: u64,
    /// (index in `files`, bytes) of the regular files, which preallocation fills.
    regular: Vec<(usize, u64)>,
}

/// Opens and sizes every member for `create` ([`open_new_member`]).
fn open_new_members(
    paths: &[PathBuf],
    opts: &CreateOptions,
    ids: &mut Vec<(u64, u64)>,
    undo: &mut Undo,
) -> Result<NewMembers> {
    let mut new = NewMembers {
        files: Vec::new(),
        fresh: true,
        data_bytes_min: u64::MAX,
        regular: Vec::new(),
    };
    for path in paths {
        let member = open_new_member(path, paths, opts, ids, undo)?;
        new.fresh &= member.fresh;
        new.data_bytes_min = new.data_bytes_min.min(member.bytes - DATA_OFFSET_BYTES);
        if !member.block_device {
            new.regular.push((new.files.len(), member.bytes));
        }
        new.files.push(member.file);
    }
    Ok(new)
}

/// A member file or device opened for `create`, sized.
struct NewMember {
    file: File,
    /// Bytes of the file or device after sizing.
    bytes: u64,
    /// Whether it is all zeros for sure (a file created or grown from empty here).
    fresh: bool,
    block_device: bool,
}

/// Opens (creating when `--size` is given) one member for `create`, refusing one that
/// already belongs to an array unless forced, and grows a regular file to `--size`;
/// what it created or grew goes into `undo`.
fn open_new_member(
    path: &Path,
    paths: &[PathBuf],
    opts: &CreateOptions,
    ids: &mut Vec<(u64, u64)>,
    undo: &mut Undo,
) -> Result<NewMember> {
    let existed = path.exists();
    if !existed && opts.member_size_bytes.is_none() {
        return Err(member_err(
            path,
            "does not exist; give --size to create member files",
        ));
    }
    let file = open_member_once(path, true, paths, ids)?;
    if !existed {
        undo.created.push(path.to_path_buf());
    }
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    crate::format::probe::refuse_foreign(&file, path, "a member", &opts.force)?;
    let block_device = meta.file_type().is_block_device();
    let mut bytes = device_bytes(&file, path)?;
    let mut fresh = true;
    if let Some(want) = opts.member_size_bytes {
        if block_device {
            if bytes < want {
                return Err(member_err(
                    path,
                    format!("device holds {bytes} B, --size asks {want}"),
                ));
            }
        } else if bytes < want {
            fresh = bytes == 0;
            if existed {
                undo.extended.push((path.to_path_buf(), bytes));
            }
            file.set_len(want).map_err(io_err(path, "extend"))?;
            bytes = want;
        } else {
            fresh = false;
        }
    } else {
        fresh = false;
    }
    if bytes <= DATA_OFFSET_BYTES {
        return Err(member_err(
            path,
            format!("holds {bytes} B, not more than the {DATA_OFFSET_BYTES} B metadata area"),
        ));
    }
    Ok(NewMember {
        file,
        bytes,
        fresh,
        block_device,
    })
}

/// The consistency policy `create` was asked for: the journal's when a journal is
/// given, else [`default_policy`] unless told; refused where the two disagree or PPL
/// cannot serve the geometry.
fn consistency_policy(opts: &CreateOptions, geo: &Geometry) -> Result<ConsistencyPolicy> {
    let policy = match (opts.policy, &opts.journal) {
        (None, None) => default_policy(geo),
        (None | Some(ConsistencyPolicy::Journal), Some(_)) => ConsistencyPolicy::Journal,
        (Some(ConsistencyPolicy::Journal), None) => {
            return Err(Error::Input(
                "--consistency-policy: journal needs --journal PATH".into(),
            ))
        }
        (Some(p), Some(_)) => {
            return Err(Error::Input(format!(
                "--consistency-policy: {p} does not take --journal (that is the journal policy)"
            )))
        }
        (Some(p), None) => p,
    };
    if policy == ConsistencyPolicy::Ppl {
        if let Some(why) = ppl::unsupported(geo) {
            return Err(Error::Input(format!("--consistency-policy: {why}")));
        }
    }
    Ok(policy)
}

/// Refuses `--integrity` with what it cannot serve, before anything is opened: a
/// stripe unit below the checksummed block (stripes would share a block, and writes
/// of two stripes, which do not hold each other's lock, would race on its checksum),
/// and the `ppl` and `journal` policies (see [`integrity_policy`]).
fn check_integrity(opts: &CreateOptions) -> Result<()> {
    if opts.integrity == Integrity::None {
        return Ok(());
    }
    if opts.stripe_unit_bytes < INTEGRITY_BLOCK_BYTES {
        return Err(Error::Input(format!(
            "--integrity: {} needs a stripe unit of {INTEGRITY_BLOCK_BYTES} B or more, got {} B",
            opts.integrity, opts.stripe_unit_bytes
        )));
    }
    let asked = match (opts.policy, &opts.journal) {
        (Some(p @ (ConsistencyPolicy::Ppl | ConsistencyPolicy::Journal)), _) => Some(p),
        (_, Some(_)) => Some(ConsistencyPolicy::Journal),
        _ => None,
    };
    match asked {
        Some(p) => Err(Error::Input(format!(
            "--integrity: {} needs the bitmap or resync consistency policy, not {p} (its \
             recovery rewrites stripes that no resync sums again)",
            opts.integrity
        ))),
        None => Ok(()),
    }
}

/// The consistency policy of an array with checksums: the bitmap or resync, whose
/// resync after an unclean stop sums the blocks of the regions it covers again (the
/// `ppl` and `journal` recoveries rewrite stripes the bitmap does not mark). Without
/// a policy asked for, the parity levels' default `ppl` gives way to the bitmap.
fn integrity_policy(opts: &CreateOptions, policy: ConsistencyPolicy) -> Result<ConsistencyPolicy> {
    check_integrity(opts)?;
    match (opts.integrity, opts.policy, policy) {
        (Integrity::None, _, p) => Ok(p),
        // The parity levels' default gives way; one asked for was refused by `check_integrity`.
        (_, _, ConsistencyPolicy::Ppl) => Ok(ConsistencyPolicy::Bitmap),
        (_, _, p) => Ok(p),
    }
}

/// The policy of an array created without `--consistency-policy` or `--journal`: one
/// that loses no flushed block to a crash followed by a member loss where one exists
/// without a journal file. The parity levels (RAID 4, 5, 6, 50, 60) take the partial
/// parity log (md's for RAID 5, extended to Q here: the write hole closed on the
/// members themselves, no bitmap); where PPL cannot serve (more than 64 members, chunks
/// over 256 KiB, 128 KiB with two parities) the bitmap, with a note on stderr that
/// `--journal` closes the hole. Mirrors and RAID 0 have no parity write hole: the
/// bitmap.
pub(crate) fn default_policy(geo: &Geometry) -> ConsistencyPolicy {
    if geo.parity_per_stripe() == 0 {
        return ConsistencyPolicy::Bitmap;
    }
    match ppl::unsupported(geo) {
        None => ConsistencyPolicy::Ppl,
        Some(why) => {
            eprintln!(
                "raidlab-engine: create: consistency policy bitmap ({why}): a crash followed \
                 by a member loss can corrupt flushed blocks (the write hole); give \
                 --journal PATH to close it"
            );
            ConsistencyPolicy::Bitmap
        }
    }
}

/// Creates the write journal at `path` for `create` (`--journal`), sized by
/// `--journal-size` or the default, preallocated unless sparse.
fn create_journal(
    path: &Path,
    paths: &[PathBuf],
    opts: &CreateOptions,
    geo: &Geometry,
    uuid: u128,
    ids: &[(u64, u64)],
    undo: &mut Undo,
) -> Result<Journal> {
    // As mdadm's --write-journal: only parity has a write hole to close (a
    // mirror torn by a crash holds the old or the new data on each copy,
    // and the bitmap resync makes them agree).
    if geo.parity_per_stripe() == 0 {
        return Err(Error::Input(format!(
            "--journal: only for parity levels (4, 5, 6, 50, 60); {} has no \
             parity write hole to close",
            geo.level()
        )));
    }
    let need = crate::format::journal::HEADER_BYTES
        + Journal::record_bytes_max(REQUEST_BYTES_MAX, geo.members());
    let bytes = opts
        .journal_bytes
        .unwrap_or_else(|| journal_bytes_default(geo.members()));
    if bytes < need {
        return Err(Error::Input(format!(
            "--journal-size: at least {need} B for {} members (one {REQUEST_BYTES_MAX} B write), got {bytes}",
            geo.members()
        )));
    }
    if paths.iter().any(|p| p == path) {
        return Err(member_err(
            path,
            "is a member; the journal needs its own file",
        ));
    }
    super::members::check_new_journal(path, ids, &opts.force)?;
    if !path.exists() {
        undo.created.push(path.to_path_buf());
    }
    let j = Journal::create(path, uuid, bytes)?;
    // Allocated even with --sparse (which is about members): a journal that cannot
    // append refuses every write, rewrites of allocated member blocks included.
    {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err(path, "open journal"))?;
        if file.metadata().is_ok_and(|m| m.file_type().is_file()) {
            preallocate(&[(path, &file, bytes)])?;
        }
    }
    Ok(j)
}

/// A member's file for data I/O, once it is checked to hold the array's data area.
fn data_member(file: &File, path: &Path, geo: &Geometry) -> Result<Arc<File>> {
    let bytes = device_bytes(file, path)?;
    if bytes < DATA_OFFSET_BYTES + geo.member_used_bytes() {
        return Err(member_err(
            path,
            format!(
                "holds {bytes} B, the array needs {} B per member",
                DATA_OFFSET_BYTES + geo.member_used_bytes()
            ),
        ));
    }
    Ok(Arc::new(file.try_clone().map_err(io_err(path, "dup"))?))
}

/// The spares of `create`: opened once each (`all_paths` are the members then the
/// spares, `ids` the members' files), claimed, refused when they carry a superblock
/// (without `force`), created or extended to `--size` when files, and at least
/// `need_bytes` (a member's size). Returns each with its size.
fn open_spares(
    opts: &CreateOptions,
    all_paths: &[PathBuf],
    ids: &mut Vec<(u64, u64)>,
    undo: &mut Undo,
    need_bytes: u64,
) -> Result<Vec<(Spare, u64)>> {
    if opts.spares.len() > SPARES_MAX {
        return Err(Error::Input(format!(
            "--spares: at most {SPARES_MAX} spares, got {}",
            opts.spares.len()
        )));
    }
    let mut out = Vec::new();
    for path in &opts.spares {
        let existed = path.exists();
        if !existed && opts.member_size_bytes.is_none() {
            return Err(member_err(
                path,
                "does not exist; give --size to create spare files",
            ));
        }
        let file = open_member_once(path, true, all_paths, ids)?;
        if !existed {
            undo.created.push(path.clone());
        }
        crate::format::probe::refuse_foreign(&file, path, "a spare", &opts.force)?;
        let mut bytes = device_bytes(&file, path)?;
        let is_file = file.metadata().is_ok_and(|m| m.file_type().is_file());
        if let Some(want) = opts.member_size_bytes.filter(|&w| is_file && bytes < w) {
            if existed {
                undo.extended.push((path.clone(), bytes));
            }
            file.set_len(want).map_err(io_err(path, "extend"))?;
            bytes = want;
        }
        check_spare_bytes(path, bytes, need_bytes)?;
        out.push((
            Spare {
                path: path.clone(),
                file,
            },
            bytes,
        ));
    }
    Ok(out)
}

/// The spares found among the paths given to assemble: of this array (its UUID and
/// geometry), large enough to take a member's role.
fn assembled_spares(
    found: Vec<(PathBuf, File, Superblock)>,
    newest: &Superblock,
) -> Result<Vec<Spare>> {
    let need = DATA_OFFSET_BYTES + newest.spec.member_capacity_bytes;
    let mut spares = Vec::new();
    for (path, file, sb) in found {
        if sb.array_uuid != newest.array_uuid || sb.spec != newest.spec {
            return Err(member_err(
                &path,
                format!(
                    "a hot spare of array {:032x}, not of {:032x} (the array of the other members)",
                    sb.array_uuid, newest.array_uuid
                ),
            ));
        }
        check_spare_bytes(&path, device_bytes(&file, &path)?, need)?;
        spares.push(Spare { path, file });
    }
    if spares.len() > SPARES_MAX {
        return Err(Error::Input(format!(
            "members: at most {SPARES_MAX} hot spares, got {}",
            spares.len()
        )));
    }
    Ok(spares)
}

#[cfg(test)]
mod tests {
    use super::copy_on_write_fs;

    #[test]
    fn copy_on_write_filesystems_are_known_by_their_statfs_magic() {
        assert_eq!(copy_on_write_fs(0x9123_683E), Some("btrfs"));
        assert_eq!(copy_on_write_fs(0x2FC1_2FC1), Some("zfs"));
        assert_eq!(copy_on_write_fs(0xCA45_1A4E), Some("bcachefs"));
        // ext4, xfs, tmpfs overwrite in place.
        for f_type in [0xEF53, 0x5846_5342, 0x0102_1994] {
            assert_eq!(copy_on_write_fs(f_type), None, "{f_type:#x}");
        }
    }
}
