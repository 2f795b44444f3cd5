//! An array on member files or block devices: create, assemble, read, write, flush,
//! fail, rebuild, scrub.
//!
//! Every request runs the same three steps as the planner's reference engine in
//! raidlab-layout's tests, on real bytes:
//!
//! ```text
//!  lock stripes ─► Geometry::plan(req, failed) ─► read phase (read_exact_at)
//!     ─► per stripe segment: RMW (P ^= old ^ new, Q via update_q) | RCW / full stripe
//!        (compute_p / compute_pq) | degraded (reconstruct, then compute) ─► write phase
//! ```
//!
//! Concurrency: a fixed table of [`STRIPE_LOCKS`] mutexes, a stripe (or, for concat,
//! RAID 1 and RAID 10, a logical chunk) hashed to one of them. A request takes the locks
//! of every stripe it touches in ascending index order (so no deadlock), then snapshots
//! the failed set and plans: two requests on one stripe never interleave their
//! read-compute-write, so parity and copies stay consistent.
//!
//! Member failure while running: a read error marks the member failed (superblocks of
//! the survivors get the new failed set and event counter) and the request is planned
//! again degraded. A write error marks the member failed and the other writes of the
//! plan still complete: the new stripe they hold is consistent, and the failed member's
//! block is recomputable from it. A request fails (EIO) only when the level no longer
//! tolerates the failed set.
//!
//! A full filesystem (`ENOSPC`, `EDQUOT` on a member write) is not a dead disk: no
//! member is failed for it. The request fails with that error (NBD answers `ENOSPC`),
//! and the regions it touched, whose stripes may now hold part of the write (data
//! without its parity, one copy without the other), stay set in the write-intent
//! bitmap until a resync of them succeeds: tried by every bitmap cleaning pass and by
//! [`Array::close`], else by `serve` at the next start (the array is left dirty).
//!
//! The seams, one module each: [`CreateOptions`] and assembly from superblocks
//! (`assembly`), member files and the superblock writes of every state change
//! (`members`), the request path on real bytes (`io`, over `stripe` and `stripe_locks`),
//! the write-intent bitmap (`bitmap`), md's read-error correction and bad-block list
//! (`read_errors`, `bad_blocks`), per-block checksums (`integrity`),
//! injected faults (`faults`), rebuild (`rebuild`) and check/repair (`scrub`).

mod allocation;
mod assembly;
mod bad_blocks;
mod bitmap;
mod faults;
mod integrity;
mod io;
mod members;
mod read_errors;
mod rebuild;
mod scrub;
mod spares;
mod staged;
mod stripe;
mod stripe_locks;

pub use crate::owner::{claim, open_member_file};
pub use assembly::{journal_bytes_default, CreateOptions, Forced};
pub use faults::{inject, Fault};
pub use members::{prepare_replacement, random_uuid, read_superblock, MemberState};
pub use read_errors::MAX_READ_ERRORS;
pub use rebuild::RebuildProgress;
pub use scrub::ScrubReport;
pub use spares::SPARES_MAX;

use crate::error::Result;
use crate::format::journal::Journal;
use crate::format::ppl::Ppl;
use crate::format::superblock::{ConsistencyPolicy, Integrity};
use bitmap::{bitmap_bytes, BitmapActivity};
use raidlab_layout::{ArraySpec, FailedSet, Geometry};
use read_errors::ReadErrors;
use rebuild::{Checkpoint, Rebuilding};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};

/// Stripe lock table size: stripes hash onto these (collisions only serialize more).
pub const STRIPE_LOCKS: usize = 1024;
/// Largest host request the engine takes in one piece (the NBD maximum block size).
pub const REQUEST_BYTES_MAX: u64 = 32 << 20;

/// A snapshot of an array's state, for `status`.
#[derive(Debug, Clone)]
pub struct Status {
    /// Array UUID, the same in every member's superblock.
    pub uuid: u128,
    /// The geometry the superblocks record.
    pub geometry: Geometry,
    /// Event counter: bumped by every state change written to the superblocks (md's
    /// `events`); a member whose counter is behind it missed writes and is stale.
    pub events: u64,
    /// Whether the array was left dirty (may need `repair`).
    pub dirty: bool,
    /// Failed members (includes missing and stale ones).
    pub failed: FailedSet,
    /// Write-intent bitmap regions marked dirty (each [`BITMAP_REGION_BYTES`](crate::format::superblock::BITMAP_REGION_BYTES) of every
    /// member): what `serve` resyncs after an unclean stop.
    pub dirty_regions: u64,
    /// Per role: the path given for it, if any, and its state.
    pub members: Vec<(Option<PathBuf>, MemberState)>,
    /// The rebuild running now, if any.
    pub rebuild: Option<RebuildProgress>,
    /// Faults injected now.
    pub faults: Vec<Fault>,
    /// Per role: read errors corrected by rewriting the data from the other members
    /// since the array was assembled.
    pub read_errors_corrected: Vec<u64>,
    /// Per role: its bad-block list, `(offset, length)` in bytes of its data: sectors it
    /// could not read and the array could not rewrite yet (see `bad_blocks`).
    pub bad_blocks: Vec<Vec<(u64, u64)>>,
    /// The write journal, if the array has one.
    pub journal: Option<PathBuf>,
    /// Journal records replayed onto the members when the array was assembled (writes
    /// an unclean stop had left half done).
    pub journal_replayed: u64,
    /// The consistency policy (`--consistency-policy`).
    pub policy: ConsistencyPolicy,
    /// Stripe parities the partial parity log recomputed when the array was assembled
    /// (writes an unclean stop had left half done; see [`crate::format::ppl`]).
    pub ppl_recovered: u64,
    /// The report of the cache tier in front of the array, when one is attached (see
    /// [`crate::cache`]).
    pub cache: Option<serde_json::Value>,
    /// The hot spares: members with no role yet, first to take over first.
    pub spares: Vec<PathBuf>,
    /// The UUID of the cache the superblocks say fronts the array (see
    /// [`Array::cache_uuid`]).
    pub cache_uuid: Option<u128>,
    /// Per-block checksums of the data (`create --integrity`).
    pub integrity: Integrity,
    /// Per role: blocks whose checksum did not match when read since the array was
    /// assembled (each rebuilt from the other members, as a read error is).
    pub checksum_mismatches: Vec<u64>,
}

struct State {
    events: u64,
    dirty: bool,
    failed: FailedSet,
    members: Vec<(Option<PathBuf>, MemberState)>,
    /// The cache in front of the array, recorded in every superblock (see
    /// [`Array::cache_uuid`]).
    cache_uuid: Option<u128>,
}

/// An assembled array. Share it between threads behind an `Arc`: every method takes
/// `&self`.
pub struct Array {
    geo: Geometry,
    uuid: u128,
    spec: ArraySpec,
    files: RwLock<Vec<Option<Arc<File>>>>,
    state: Mutex<State>,
    locks: Box<[Mutex<()>]>,
    reads_started: AtomicU64,
    /// The write-intent bitmap as on disk (the OR of the active members' copies).
    /// Lock order: stripe locks, this, then `bitmap_activity`.
    bitmap: Mutex<Vec<u8>>,
    /// Which regions are being written and were written lately, for
    /// [`Array::clean_bitmap`].
    bitmap_activity: Mutex<BitmapActivity>,
    /// The rebuild running now. Lock order: stripe locks, then this.
    rebuilding: Mutex<Option<Rebuilding>>,
    /// Set by [`Array::cancel_rebuild`]; the rebuild stops at its next row.
    cancel_rebuild: AtomicBool,
    /// The replacement of a running or stopped rebuild and how far it is on disk. Lock
    /// order: state, files, then this.
    checkpoint: Mutex<Option<Checkpoint>>,
    /// The write journal, if any.
    journal: Option<Journal>,
    /// Injected faults; `any_fault` spares the lock when there are none.
    faults: RwLock<Vec<Fault>>,
    any_fault: AtomicBool,
    /// Per role: read errors corrected (see [`MAX_READ_ERRORS`]).
    read_errors: Box<[Mutex<ReadErrors>]>,
    /// Per role: its bad-block list; `any_bad` spares the locks when all are empty.
    /// Lock order: state, files, then these.
    bad_blocks: Box<[Mutex<bad_blocks::BadBlocks>]>,
    any_bad: AtomicBool,
    /// A list changed since the superblocks were last written.
    bad_blocks_changed: AtomicBool,
    /// Records replayed at assembly.
    journal_replayed: u64,
    /// Bitmap regions a write left half done (a member's filesystem was full), each
    /// with a count of such writes: their bits stay set until a resync that began
    /// after the last of them succeeds ([`Array::resync_unsynced`]). Lock order: stripe
    /// locks, bitmap, then this.
    unsynced: Mutex<BTreeMap<u64, u64>>,
    /// Stale or failed members `assemble --force` put back in (see [`Forced`]).
    forced: Vec<Forced>,
    /// Per role: whether its file is sparse (writes allocate their blocks first).
    sparse: Box<[io::Sparseness]>,
    /// What makes parity agree again after an unclean stop.
    policy: ConsistencyPolicy,
    /// The partial parity logs, under the `ppl` policy.
    ppl: Option<Ppl>,
    /// Stripe parities the PPL recomputed at assembly.
    ppl_recovered: u64,
    /// The cache tier's report, when one is in front (set once by `serve`).
    cache_report: std::sync::OnceLock<CacheReport>,
    /// The hot spares (see `spares`). Lock order: state, then this.
    spares: Mutex<Vec<spares::Spare>>,
    /// The per-block checksums (see `integrity`), when the array keeps them.
    checksums: Option<integrity::Checksums>,
}

/// What gives the cache tier's report for [`Status::cache`].
pub type CacheReport = Box<dyn Fn() -> Option<serde_json::Value> + Send + Sync>;

impl Array {
    /// The file or device of member `role` (empty for a member without one), for
    /// messages and errors.
    pub(super) fn member_path(&self, role: u32) -> PathBuf {
        self.state.lock().expect("state lock").members[role as usize]
            .0
            .clone()
            .unwrap_or_default()
    }

    /// An array in `state`, nothing running, no faults.
    fn with_state(
        spec: ArraySpec,
        uuid: u128,
        files: Vec<Option<Arc<File>>>,
        state: State,
        bitmap: Vec<u8>,
        journal: Option<Journal>,
        policy: ConsistencyPolicy,
    ) -> Result<Self> {
        let geo = Geometry::new(&spec)?;
        Ok(Self {
            ppl: (policy == ConsistencyPolicy::Ppl).then(|| {
                Ppl::new(
                    uuid,
                    geo.members(),
                    geo.stripe_unit_bytes(),
                    geo.parity_per_stripe(),
                )
            }),
            policy,
            ppl_recovered: 0,
            cache_report: std::sync::OnceLock::new(),
            read_errors: (0..geo.members())
                .map(|_| Mutex::new(ReadErrors::default()))
                .collect(),
            bad_blocks: (0..geo.members()).map(|_| Default::default()).collect(),
            any_bad: AtomicBool::new(false),
            bad_blocks_changed: AtomicBool::new(false),
            geo,
            uuid,
            spec,
            files: RwLock::new(files),
            state: Mutex::new(state),
            locks: (0..STRIPE_LOCKS).map(|_| Mutex::new(())).collect(),
            reads_started: AtomicU64::new(0),
            bitmap_activity: Mutex::new(BitmapActivity {
                touched: vec![0; bitmap.len()],
                writing: Default::default(),
            }),
            bitmap: Mutex::new(bitmap),
            rebuilding: Mutex::new(None),
            cancel_rebuild: AtomicBool::new(false),
            checkpoint: Mutex::new(None),
            journal,
            journal_replayed: 0,
            unsynced: Mutex::new(BTreeMap::new()),
            forced: Vec::new(),
            sparse: (0..geo.members()).map(|_| Default::default()).collect(),
            faults: RwLock::new(Vec::new()),
            any_fault: AtomicBool::new(false),
            spares: Mutex::new(Vec::new()),
            checksums: None,
        })
    }

    /// The geometry: where every logical byte lives and what each request costs.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Usable bytes of the array.
    pub fn capacity_bytes(&self) -> u64 {
        self.geo.capacity_bytes()
    }

    /// The failed members now.
    pub fn failed(&self) -> FailedSet {
        self.state.lock().expect("state lock").failed
    }

    /// A snapshot for `status`.
    pub fn status(&self) -> Status {
        // Lock order is bitmap, files, state (see `mark_regions`): never bitmap under state.
        let dirty_regions = self.dirty_regions();
        let rebuild = self.rebuild_progress();
        let cache = self.cache_report.get().and_then(|f| f());
        let spares = self.spares();
        let bad_blocks = self.bad_block_ranges();
        let st = self.state.lock().expect("state lock");
        Status {
            bad_blocks,
            cache,
            spares,
            rebuild,
            faults: self.faults.read().expect("faults lock").clone(),
            journal: self.journal.as_ref().map(|j| j.path().to_path_buf()),
            journal_replayed: self.journal_replayed,
            policy: self.policy,
            ppl_recovered: self.ppl_recovered,
            read_errors_corrected: self
                .read_errors
                .iter()
                .map(|n| n.lock().expect("read errors lock").total)
                .collect(),
            uuid: self.uuid,
            geometry: self.geo,
            events: st.events,
            dirty: st.dirty,
            failed: st.failed,
            dirty_regions,
            members: st.members.clone(),
            cache_uuid: st.cache_uuid,
            integrity: self.integrity(),
            checksum_mismatches: self.checksum_mismatches(),
        }
    }

    /// Has [`Array::status`] include the report of the cache tier in front of the
    /// array (once; later calls are ignored).
    pub fn set_cache_report(&self, report: CacheReport) {
        let _ = self.cache_report.set(report);
    }

    /// The UUID of the SSD cache the superblocks record in front of the array (the
    /// array its cache members form), if any: while one is recorded its dirty lines
    /// may be newer than the members, so the array is used only through that cache
    /// (see [`crate::cache`]).
    pub fn cache_uuid(&self) -> Option<u128> {
        self.state.lock().expect("state lock").cache_uuid
    }

    /// Records `cache_uuid` (attach) or no cache (detach) in the superblock of every
    /// member and spare, synced before it returns.
    pub fn set_cache_uuid(&self, cache_uuid: Option<u128>) -> Result<()> {
        assert_ne!(cache_uuid, Some(0), "a cache UUID is never 0");
        self.commit_state(|st| st.cache_uuid = cache_uuid)
    }

    /// Marks the array dirty (writes may be in flight until [`Array::close`]). Under
    /// PPL the logs are emptied first: what they hold is of a session that ended
    /// cleanly or was recovered at assembly, and a later recovery must not redo it.
    pub fn open_for_writes(&self) -> Result<()> {
        if self.ppl.is_some() {
            self.clear_ppl()?;
        }
        self.commit_state(|st| st.dirty = true)
    }

    /// The stale or failed members `assemble --force` put back in, freshest first.
    pub fn forced(&self) -> &[Forced] {
        &self.forced
    }

    /// Bitmap regions a write left half done for lack of space and no resync has
    /// repaired yet.
    pub fn unsynced_regions(&self) -> u64 {
        self.unsynced.lock().expect("unsynced lock").len() as u64
    }

    /// Flushes every member and marks the array clean, after resyncing the regions a
    /// write left half done for lack of space; those it cannot resync (still no space,
    /// or degraded) keep their bitmap bits and leave the array dirty, so the next
    /// `serve` resyncs them.
    pub fn close(&self) -> Result<()> {
        self.flush()?;
        if let Some(j) = &self.journal {
            j.retire()?;
        }
        if let Err(e) = self.resync_unsynced() {
            eprintln!("raidlab-engine: resyncing the regions a write left half done: {e}");
        }
        // Everything is on disk: no region has writes in flight any more. (Under the PPL
        // policy the log is cleared by the next session's first record per member.)
        let mut keep = vec![0u8; bitmap_bytes(&self.geo)];
        let unsynced = self.unsynced.lock().expect("unsynced lock").clone();
        for r in unsynced.keys() {
            keep[(r / 8) as usize] |= 1 << (r % 8);
        }
        self.write_bitmap(&keep)?;
        *self.bitmap.lock().expect("bitmap lock") = keep;
        self.commit_state(|st| st.dirty = !unsynced.is_empty())
    }

    /// Resyncs (recomputes parity and copies of) the regions a write left half done
    /// for lack of space, and forgets them when that succeeds. Nothing to do when there
    /// are none; an error (still no space, degraded) leaves them as they are.
    pub fn resync_unsynced(&self) -> Result<()> {
        let regions = self.unsynced.lock().expect("unsynced lock").clone();
        if regions.is_empty() || self.geo.tolerated_failures() == 0 {
            return Ok(());
        }
        let r = self.scrub_where(true, |off| {
            regions.contains_key(&(off / crate::format::superblock::BITMAP_REGION_BYTES))
        })?;
        eprintln!(
            "raidlab-engine: resynced {} region(s) a write left half done for lack of space \
             ({} stripes checked, {} rewritten)",
            regions.len(),
            r.stripes_checked,
            r.repaired_stripes
        );
        // A write that failed again meanwhile counted its region once more: it stays.
        let mut unsynced = self.unsynced.lock().expect("unsynced lock");
        for (r, n) in &regions {
            if unsynced.get(r) == Some(n) {
                unsynced.remove(r);
            }
        }
        Ok(())
    }
}
