//! Rebuilding a failed member onto a replacement, online, one chunk row at a time: writes
//! to rows already rebuilt refresh them, a checkpoint in the replacement's superblock
//! lets a stopped rebuild resume where it stood, as md resumes a recovery.

use super::bitmap::bit_is_set;
use super::members::{device_bytes, MemberState};
use super::stripe::stripe_blocks;
use super::{Array, State, STRIPE_LOCKS};
use crate::array::staged::Staged;
use crate::error::{io_err, member_err};
use crate::error::{Error, Result};
use crate::format::superblock::{
    Superblock, BITMAP_REGION_BYTES, DATA_OFFSET_BYTES, SUPERBLOCK_BYTES,
};
use raidlab_layout::{FailedSet, Plan, PlanError, Request, StripeId, StripeKind};
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How far a running rebuild has come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuildProgress {
    /// The role being rebuilt.
    pub role: u32,
    /// The new member's path.
    pub path: PathBuf,
    /// Member bytes rebuilt so far.
    pub done_bytes: u64,
    /// Member bytes to rebuild.
    pub total_bytes: u64,
}

/// A rebuild in progress: rows `[0, rows_done)` of `role` on `file` are current, and
/// every write that changes one of them rebuilds it again (see [`Array::rebuild`]).
pub(super) struct Rebuilding {
    role: u32,
    path: PathBuf,
    file: Arc<File>,
    rows_done: u64,
}

/// Where a rebuild stands on disk: the replacement's superblock says that its data
/// below `offset_bytes` is rebuilt, so a clean stop loses none of the work.
#[derive(Clone)]
pub(super) struct Checkpoint {
    pub(super) role: u32,
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) offset_bytes: u64,
    /// The rebuild's rate limit, kept for its resumption.
    pub(super) rate_bytes_per_s: Option<u64>,
}

/// Seconds between rebuild checkpoints (each syncs the replacement, then its superblock).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

impl Array {
    /// Writes the superblock of a rebuild's replacement: the array as `st` has it, with
    /// its data below the checkpoint rebuilt.
    pub(super) fn write_checkpoint(&self, st: &State, cp: &Checkpoint) -> Result<()> {
        let sb = Superblock {
            array_uuid: self.uuid,
            spec: self.spec,
            role: cp.role,
            events: st.events,
            dirty: st.dirty,
            failed: st.failed,
            journaled: self.journal.is_some(),
            policy: self.policy,
            recovery_offset_bytes: Some(cp.offset_bytes),
            recovery_rate_bytes_per_s: cp.rate_bytes_per_s,
            cache_uuid: st.cache_uuid,
        };
        cp.file
            .write_all_at(&sb.encode(), 0)
            .and_then(|()| cp.file.sync_data())
            .map_err(io_err(&cp.path, "write superblock"))
    }

    /// Records that the rebuild's replacement holds current data below `offset_bytes`:
    /// syncs its data, then its superblock.
    fn save_checkpoint(&self, offset_bytes: u64) -> Result<()> {
        let Some(cp) = self.checkpoint.lock().expect("checkpoint lock").clone() else {
            return Ok(());
        };
        cp.file.sync_data().map_err(io_err(&cp.path, "sync"))?;
        let st = self.state.lock().expect("state lock");
        let mut slot = self.checkpoint.lock().expect("checkpoint lock");
        let Some(cp) = slot.as_mut() else {
            return Ok(());
        };
        cp.offset_bytes = offset_bytes;
        self.write_checkpoint(&st, cp)
    }

    /// The running rebuild's progress, if any.
    pub fn rebuild_progress(&self) -> Option<RebuildProgress> {
        let su = self.geo.stripe_unit_bytes();
        let total = self.geo.member_used_bytes();
        self.rebuilding
            .lock()
            .expect("rebuild lock")
            .as_ref()
            .map(|r| RebuildProgress {
                role: r.role,
                path: r.path.clone(),
                done_bytes: (r.rows_done * su).min(total),
                total_bytes: total,
            })
    }

    /// Asks a running rebuild to stop at its next row (it returns an error; the member
    /// stays failed). For a server shutting down.
    pub fn cancel_rebuild(&self) {
        self.cancel_rebuild.store(true, Ordering::Relaxed);
    }

    /// Rebuilds failed member `role` onto `new_path` (created or extended as needed,
    /// refused if it is another active member), one chunk row at a time, at most
    /// `rate_bytes_per_s` written per second if given; `progress(done, total)` is called
    /// after every row. On success the member is active again, superblocks on all.
    ///
    /// Online: reads and writes may run concurrently from other threads. The member
    /// stays in the failed set until the end, so requests plan around it; a write that
    /// changes a row already rebuilt rebuilds that row again under its stripe locks
    /// (see [`Array::write`]), and the rebuild marks a row done under the row's locks.
    /// At the end it takes every stripe lock, so no request is between its plan and that
    /// check when the member becomes active.
    pub fn rebuild(
        &self,
        role: u32,
        new_path: &Path,
        rate_bytes_per_s: Option<u64>,
        progress: impl FnMut(u64, u64),
    ) -> Result<()> {
        let file = crate::owner::open_member_file(new_path, true)?;
        self.rebuild_onto(role, file, new_path, rate_bytes_per_s, progress)
    }

    /// [`Array::rebuild`] onto `file`, the new member already open (by
    /// [`open_member_file`](super::open_member_file), or passed by a client over the
    /// control socket); `new_path` names it. The exclusive claim on it is taken here.
    pub fn rebuild_onto(
        &self,
        role: u32,
        file: File,
        new_path: &Path,
        rate_bytes_per_s: Option<u64>,
        progress: impl FnMut(u64, u64),
    ) -> Result<()> {
        if !self.failed().contains(role) {
            return Err(Error::Input(format!(
                "member {role} is not failed; fail it first"
            )));
        }
        if self.geo.tolerated_failures() == 0 {
            return Err(PlanError::NoRedundancy {
                level: self.geo.level(),
            }
            .into());
        }
        if let Some(r) = self.rebuild_progress() {
            return Err(Error::Input(format!(
                "a rebuild of member {} is running ({} of {} B); wait for it",
                r.role, r.done_bytes, r.total_bytes
            )));
        }
        let meta = file.metadata().map_err(io_err(new_path, "stat"))?;
        {
            let files = self.files.read().expect("files lock");
            let failed = self.failed();
            for (r, f) in files.iter().enumerate() {
                if let Some(f) = f.as_ref().filter(|_| !failed.contains(r as u32)) {
                    let m = f.metadata().map_err(io_err(new_path, "stat"))?;
                    if (m.dev(), m.ino()) == (meta.dev(), meta.ino()) {
                        return Err(member_err(
                            new_path,
                            format!("is active member {r} of this array"),
                        ));
                    }
                }
            }
        }
        crate::owner::claim(&file, new_path)?;
        let need = DATA_OFFSET_BYTES + self.spec.member_capacity_bytes;
        let have = device_bytes(&file, new_path)?;
        if have < need {
            if meta.file_type().is_block_device() {
                return Err(member_err(
                    new_path,
                    format!("holds {have} B, the array needs {need} B"),
                ));
            }
            file.set_len(need).map_err(io_err(new_path, "extend"))?;
        }
        // No stale superblock on the new member: it says it is recovering from 0.
        file.write_all_at(&[0u8; SUPERBLOCK_BYTES], 0)
            .map_err(io_err(new_path, "write"))?;
        self.run_rebuild(
            role,
            Arc::new(file),
            new_path,
            0,
            rate_bytes_per_s,
            progress,
        )
    }

    /// The member a clean stop left in the middle of its rebuild: its role and path,
    /// how far it got and its rate limit, what [`Array::resume_rebuild`] continues.
    pub fn resumable_rebuild(&self) -> Option<(u32, PathBuf, u64, Option<u64>)> {
        if self.rebuild_progress().is_some() {
            return None;
        }
        let cp = self.checkpoint.lock().expect("checkpoint lock").clone()?;
        self.failed().contains(cp.role).then(|| {
            (
                cp.role,
                cp.path.clone(),
                cp.offset_bytes,
                cp.rate_bytes_per_s,
            )
        })
    }

    /// Continues the rebuild a clean stop interrupted (see
    /// [`Array::resumable_rebuild`]) from its checkpoint, as md resumes a recovery, at
    /// the rate limit it had.
    pub fn resume_rebuild(&self, progress: impl FnMut(u64, u64)) -> Result<()> {
        let Some(cp) = self.checkpoint.lock().expect("checkpoint lock").clone() else {
            return Err(Error::Input("no stopped rebuild to resume".into()));
        };
        let start_row = cp.offset_bytes / self.geo.stripe_unit_bytes();
        self.run_rebuild(
            cp.role,
            cp.file,
            &cp.path,
            start_row,
            cp.rate_bytes_per_s,
            progress,
        )
    }

    /// Rebuilds `role` onto `file` from chunk row `start_row` on, online; on success the
    /// member becomes active. A cancelled rebuild leaves a checkpoint to resume from.
    fn run_rebuild(
        &self,
        role: u32,
        file: Arc<File>,
        new_path: &Path,
        start_row: u64,
        rate_bytes_per_s: Option<u64>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<()> {
        let su = self.geo.stripe_unit_bytes();
        let total = self.geo.member_used_bytes();
        let rows = total.div_ceil(su);
        self.start_rebuilding(role, &file, new_path, start_row, rate_bytes_per_s)?;
        // Rows below the checkpoint that writes may have changed without reaching the
        // replacement (an unclean stop) are done again first; rows_done stays at the
        // checkpoint meanwhile, so writes below it keep refreshing the replacement.
        let redo = self.dirty_rows_below(start_row);
        let outcome = self
            .save_checkpoint(start_row * su)
            .and_then(|()| self.rebuild_rows(role, &file, new_path, redo, rate_bytes_per_s, None))
            .and_then(|()| {
                self.rebuild_rows(
                    role,
                    &file,
                    new_path,
                    start_row..rows,
                    rate_bytes_per_s,
                    Some(&mut progress),
                )
            });
        let outcome = outcome.and_then(|()| self.finish_rebuild(role, &file, new_path));
        let rows_done = self
            .rebuilding
            .lock()
            .expect("rebuild lock")
            .take()
            .map(|r| r.rows_done);
        if outcome.is_err() {
            match rows_done {
                // Stopped on purpose: keep what is rebuilt for the next `serve`.
                Some(done) if self.cancel_rebuild.load(Ordering::Relaxed) => {
                    if let Err(e) = self.save_checkpoint((done * su).min(total)) {
                        eprintln!("raidlab-engine: saving the rebuild checkpoint: {e}");
                    }
                }
                _ => *self.checkpoint.lock().expect("checkpoint lock") = None,
            }
        }
        outcome
    }

    /// Registers the rebuild of `role` onto `file` from `start_row`: refused while
    /// another runs; the replacement takes the role's slot (still failed) and the
    /// checkpoint says where the rebuild stands.
    fn start_rebuilding(
        &self,
        role: u32,
        file: &Arc<File>,
        new_path: &Path,
        start_row: u64,
        rate_bytes_per_s: Option<u64>,
    ) -> Result<()> {
        let su = self.geo.stripe_unit_bytes();
        {
            let mut rb = self.rebuilding.lock().expect("rebuild lock");
            if rb.is_some() {
                return Err(Error::Input("a rebuild is running; wait for it".into()));
            }
            self.cancel_rebuild.store(false, Ordering::Relaxed);
            *rb = Some(Rebuilding {
                role,
                path: new_path.to_path_buf(),
                file: file.clone(),
                rows_done: start_row,
            });
        }
        self.files.write().expect("files lock")[role as usize] = Some(file.clone());
        // A new disk in the role: the old one's unreadable sectors are not its own.
        self.forget_bad_blocks(role);
        {
            let mut st = self.state.lock().expect("state lock");
            st.members[role as usize] = (Some(new_path.to_path_buf()), MemberState::Failed);
        }
        *self.checkpoint.lock().expect("checkpoint lock") = Some(Checkpoint {
            role,
            path: new_path.to_path_buf(),
            file: file.clone(),
            offset_bytes: start_row * su,
            rate_bytes_per_s,
        });
        Ok(())
    }

    /// A rebuild done: the replacement synced, then, with every stripe locked, the
    /// role active again and the checkpoint gone.
    fn finish_rebuild(&self, role: u32, file: &File, new_path: &Path) -> Result<()> {
        file.sync_all().map_err(io_err(new_path, "sync"))?;
        let mut all: Vec<usize> = (0..STRIPE_LOCKS).collect();
        let _every_stripe = self.lock_indices(&mut all);
        *self.rebuilding.lock().expect("rebuild lock") = None;
        *self.checkpoint.lock().expect("checkpoint lock") = None;
        self.commit_state(|st| {
            st.failed.remove(role);
            st.members[role as usize].1 = MemberState::Active;
        })
    }

    fn rebuild_rows(
        &self,
        role: u32,
        file: &File,
        path: &Path,
        rows: impl IntoIterator<Item = u64>,
        rate_bytes_per_s: Option<u64>,
        mut progress: Option<&mut dyn FnMut(u64, u64)>,
    ) -> Result<()> {
        // Without progress to report, rows are done again behind the rebuild's position,
        // which stays where it is.
        let advance = progress.is_some();
        let su = self.geo.stripe_unit_bytes();
        let total = self.geo.member_used_bytes();
        let started = Instant::now();
        let mut rebuilt_bytes = 0;
        let mut checkpointed = Instant::now();
        let mut plan = Plan::new();
        for row in rows {
            if self.cancel_rebuild.load(Ordering::Relaxed) {
                return Err(Error::Input(format!(
                    "rebuild of member {role} cancelled at {} of {total} B",
                    row * su
                )));
            }
            self.geo.rebuild_plan(
                role,
                row * su,
                su,
                &self.failed(),
                &mut self.chooser(),
                &mut plan,
            )?;
            let mut idx: Vec<usize> = plan
                .stripes
                .iter()
                .map(|sp| Self::lock_index(sp.span, sp.stripe))
                .collect();
            let locks = self.lock_indices(&mut idx);
            self.rebuild_row(role, row, file, path)?;
            if advance {
                if let Some(rb) = self.rebuilding.lock().expect("rebuild lock").as_mut() {
                    rb.rows_done = row + 1;
                }
            }
            drop(locks);
            let done = ((row + 1) * su).min(total);
            rebuilt_bytes += done - row * su;
            if let Some(progress) = progress.as_mut() {
                progress(done, total);
                if checkpointed.elapsed() >= CHECKPOINT_INTERVAL {
                    self.save_checkpoint(done)?;
                    checkpointed = Instant::now();
                }
            }
            if let Some(rate) = rate_bytes_per_s.filter(|&r| r > 0) {
                let due = Duration::from_secs_f64(rebuilt_bytes as f64 / rate as f64);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        }
        Ok(())
    }

    /// Chunk rows below `end_row` in regions the write-intent bitmap marks dirty.
    fn dirty_rows_below(&self, end_row: u64) -> Vec<u64> {
        let su = self.geo.stripe_unit_bytes();
        let bm = self.bitmap.lock().expect("bitmap lock");
        let mut rows = Vec::new();
        for r in (0..bm.len() as u64 * 8).filter(|&r| bit_is_set(&bm, r)) {
            let first = r * BITMAP_REGION_BYTES / su;
            let last = ((r + 1) * BITMAP_REGION_BYTES).div_ceil(su).min(end_row);
            rows.extend(first.max(rows.last().map_or(0, |&l| l + 1))..last);
        }
        rows
    }

    /// Recomputes chunk row `row` of `role` from the survivors and writes it to `file`.
    /// The caller holds the stripe locks of the row. A survivor's read error marks it
    /// failed and the row is planned again.
    pub(super) fn rebuild_row(&self, role: u32, row: u64, file: &File, path: &Path) -> Result<()> {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut plan = Plan::new();
        let reads = loop {
            let files = self.files.read().expect("files lock").clone();
            let mut failed = self.failed();
            failed.insert(role); // a rebuild's member is failed; a corrected one is not
            geo.rebuild_plan(role, row * su, su, &failed, &mut self.chooser(), &mut plan)?;
            match self.read_phase(&files, &plan) {
                Ok(r) => break r,
                Err((m, err)) => self.member_io_failed(m, &err),
            }
        };
        let w = self.rebuilt(role, &plan, &reads);
        for (e, buf) in w.iter() {
            debug_assert_eq!(e.member, role);
            if let Some(err) = self.injected(role, e.offset_bytes, e.len_bytes, true) {
                return Err(io_err(path, "write")(err));
            }
            file.write_all_at(buf, DATA_OFFSET_BYTES + e.offset_bytes)
                .map_err(io_err(path, "write"))?;
        }
        Ok(())
    }

    /// The bytes of `role` a rebuild plan computes (parity levels) or copies (mirrors)
    /// from its reads: its write phase.
    pub(super) fn rebuilt(&self, role: u32, plan: &Plan, reads: &Staged) -> Staged {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut w = Staged::zeroed(&plan.writes);
        for sp in &plan.stripes {
            debug_assert_eq!(sp.kind, StripeKind::Rebuild);
            let len = sp.column_len_bytes;
            if geo.parity_per_stripe() > 0 {
                let id = StripeId {
                    span: sp.span,
                    stripe: sp.stripe,
                };
                let (members, _, blocks) =
                    stripe_blocks(geo, id, sp.column_offset_bytes, len, reads, &sp.lost);
                let i = members
                    .iter()
                    .position(|&m| m == role)
                    .expect("role in stripe");
                w.put(
                    role,
                    geo.stripe_offset_bytes(id) + sp.column_offset_bytes,
                    &blocks[i],
                );
            } else {
                let l = sp.stripe * su + sp.column_offset_bytes;
                let src = geo
                    .copies_of(l)
                    .find_map(|c| {
                        sp.read
                            .contains(c.member)
                            .then(|| reads.get(c.member, c.offset_bytes, len))
                            .flatten()
                    })
                    .expect("the plan read a copy");
                let dst = geo
                    .copies_of(l)
                    .find(|c| c.member == role)
                    .expect("role holds a copy");
                w.put(role, dst.offset_bytes, src);
            }
        }
        w
    }

    /// During a rebuild: rebuilds again the rows of the rebuilding member that `req`
    /// (just written, degraded, under its stripe locks) changed and that the rebuild
    /// had already passed. Rows not yet passed get the new data when the rebuild
    /// reaches them.
    pub(super) fn refresh_rebuilt_rows(&self, req: Request, failed: &FailedSet) -> Result<()> {
        let (role, file, path, rows_done) = {
            let rb = self.rebuilding.lock().expect("rebuild lock");
            match rb.as_ref() {
                Some(r) if r.rows_done > 0 && failed.contains(r.role) => {
                    (r.role, r.file.clone(), r.path.clone(), r.rows_done)
                }
                _ => return Ok(()),
            }
        };
        let mut healthy = *failed;
        healthy.remove(role);
        let mut plan = Plan::new();
        self.geo
            .plan(req, &healthy, &mut self.chooser(), &mut plan)?;
        let su = self.geo.stripe_unit_bytes();
        let mut rows: Vec<u64> = plan
            .writes
            .iter()
            .filter(|e| e.member == role)
            .flat_map(|e| e.offset_bytes / su..=(e.offset_bytes + e.len_bytes - 1) / su)
            .filter(|&r| r < rows_done)
            .collect();
        rows.sort_unstable();
        rows.dedup();
        for row in rows {
            self.rebuild_row(role, row, &file, &path)?;
        }
        Ok(())
    }
}
