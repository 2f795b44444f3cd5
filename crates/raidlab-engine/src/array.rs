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

use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::staged::Staged;
use crate::superblock::{
    Superblock, BITMAP_BYTES_MAX, BITMAP_OFFSET_BYTES, BITMAP_REGION_BYTES, DATA_OFFSET_BYTES,
    SUPERBLOCK_BYTES,
};
use raidlab_layout::parity;
use raidlab_layout::{
    ArraySpec, CopyChooser, FailedSet, Geometry, Layout, Level, Plan, PlanError, Request, StripeId,
    StripeKind, MEMBERS_MAX, SECTOR_BYTES,
};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

/// Stripe lock table size: stripes hash onto these (collisions only serialize more).
pub const STRIPE_LOCKS: usize = 1024;
/// Largest host request the engine takes in one piece (the NBD maximum block size).
pub const REQUEST_BYTES_MAX: u64 = 32 << 20;
/// Read errors corrected on one member before it is failed instead (md's default
/// `max_read_errors`), counted as md's RAID 10 counts them: halved for every hour
/// without one, so a disk is failed for a burst of errors, not for a few a day.
pub const MAX_READ_ERRORS: u64 = 20;

/// One member's corrected read errors.
#[derive(Debug, Default)]
struct ReadErrors {
    /// All of them since assembly (what `status` reports).
    total: u64,
    /// The count [`MAX_READ_ERRORS`] limits, as it stood at `last`.
    recent: u64,
    /// When the last one was corrected.
    last: Option<Instant>,
}

impl ReadErrors {
    /// The limited count at `now`: halved for every whole hour since the last error
    /// (md's `check_decay_read_errors`).
    fn recent_at(&self, now: Instant) -> u64 {
        let hours = self
            .last
            .map_or(0, |t| now.saturating_duration_since(t).as_secs() / 3600);
        self.recent
            .checked_shr(u32::try_from(hours).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }

    /// Counts an error corrected at `now`; returns the limited count with it.
    fn record(&mut self, now: Instant) -> u64 {
        self.recent = self.recent_at(now) + 1;
        self.last = Some(now);
        self.total += 1;
        self.recent
    }
}

/// How to create an array: the geometry without member capacity, plus creation options.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// Level.
    pub level: Level,
    /// Chunk size on one member.
    pub stripe_unit_bytes: u64,
    /// Layout; `None` takes md's default.
    pub layout: Option<Layout>,
    /// RAID 10 copies.
    pub copies: Option<u32>,
    /// RAID 50/60 spans.
    pub spans: Option<u32>,
    /// Size of every member file, superblock area included; files are created or
    /// extended to it. `None` uses the members as they are (block devices, existing files).
    pub member_size_bytes: Option<u64>,
    /// The array UUID; `None` draws one from /dev/urandom.
    pub uuid: Option<u128>,
    /// Overwrite members that carry a raidlab superblock.
    pub force: bool,
    /// Skip the initial resync even when a member held data before (its parity and
    /// copies would be inconsistent with that data until a `repair`).
    pub assume_clean: bool,
    /// A write journal (file or device) every write goes through first; closes the
    /// write hole (see [`crate::journal`]). Redundant levels only.
    pub journal: Option<PathBuf>,
    /// Size of a journal file; `None` takes [`journal_bytes_default`].
    pub journal_bytes: Option<u64>,
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
            force: false,
            assume_clean: false,
            journal: None,
            journal_bytes: None,
        }
    }
}

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

/// A snapshot of an array's state, for `status`.
#[derive(Debug, Clone)]
pub struct Status {
    /// Array UUID.
    pub uuid: u128,
    /// The geometry.
    pub geometry: Geometry,
    /// Event counter.
    pub events: u64,
    /// Whether the array was left dirty (may need `repair`).
    pub dirty: bool,
    /// Failed members (includes missing and stale ones).
    pub failed: FailedSet,
    /// Write-intent bitmap regions marked dirty (each [`BITMAP_REGION_BYTES`] of every
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
    /// The write journal, if the array has one.
    pub journal: Option<PathBuf>,
    /// Journal records replayed onto the members when the array was assembled (writes
    /// an unclean stop had left half done).
    pub journal_replayed: u64,
}

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

/// A fault injected into a member of a running array (`inject` on a served array):
/// what a failing disk does, without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Reads of member bytes `[offset, +len)` fail with EIO: the member is marked
    /// failed and the request planned again degraded.
    ReadError {
        /// Member role.
        member: u32,
        /// Member data offset.
        offset_bytes: u64,
        /// Bytes.
        len_bytes: u64,
    },
    /// Reads of member bytes `[offset, +len)` fail with EIO until they are written: a
    /// pending sector that the disk remaps on its next write. The array rewrites it from
    /// the other members, as md does, and the member stays in.
    BadSector {
        /// Member role.
        member: u32,
        /// Member data offset.
        offset_bytes: u64,
        /// Bytes.
        len_bytes: u64,
    },
    /// Writes to member bytes `[offset, +len)` fail with EIO: the member is marked failed,
    /// the write completes on the others.
    WriteError {
        /// Member role.
        member: u32,
        /// Member data offset.
        offset_bytes: u64,
        /// Bytes.
        len_bytes: u64,
    },
    /// Every I/O of the member waits this long first (a slow or retrying disk).
    Latency {
        /// Member role.
        member: u32,
        /// The delay.
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

/// A rebuild in progress: rows `[0, rows_done)` of `role` on `file` are current, and
/// every write that changes one of them rebuilds it again (see [`Array::rebuild`]).
struct Rebuilding {
    role: u32,
    path: PathBuf,
    file: Arc<File>,
    rows_done: u64,
}

/// Where a rebuild stands on disk: the replacement's superblock says that its data
/// below `offset_bytes` is rebuilt, so a clean stop loses none of the work.
#[derive(Clone)]
struct Checkpoint {
    role: u32,
    path: PathBuf,
    file: Arc<File>,
    offset_bytes: u64,
    /// The rebuild's rate limit, kept for its resumption.
    rate_bytes_per_s: Option<u64>,
}

/// Seconds between rebuild checkpoints (each syncs the replacement, then its superblock).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

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

struct State {
    events: u64,
    dirty: bool,
    failed: FailedSet,
    members: Vec<(Option<PathBuf>, MemberState)>,
}

/// Cycles through mirror copies from a shared counter, so concurrent readers spread.
struct Rotating(u64);

impl CopyChooser for Rotating {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        let i = (self.0 % candidates.len() as u64) as usize;
        self.0 = self.0.wrapping_add(1);
        i
    }
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
    /// Records replayed at assembly.
    journal_replayed: u64,
}

/// Fault injection for crash tests: with `RAIDLAB_ENGINE_CRASH_AFTER_WRITES=N` in the
/// environment the process aborts just before its member data write number N + 1, so a
/// test can stop it between a stripe's data and parity writes.
fn crash_point() {
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

/// Bytes of the write-intent bitmap for `geo`: one bit per region of member data.
fn bitmap_bytes(geo: &Geometry) -> usize {
    let regions = geo.member_used_bytes().div_ceil(BITMAP_REGION_BYTES);
    let bytes = regions.div_ceil(8);
    assert!(
        bytes <= BITMAP_BYTES_MAX,
        "bitmap of {bytes} B exceeds its area"
    );
    bytes as usize
}

/// What [`Array::clean_bitmap`] needs to know to clear a region's bit safely.
#[derive(Debug, Default)]
struct BitmapActivity {
    /// Regions written since the last cleaning pass, one bit each as in the bitmap.
    touched: Vec<u8>,
    /// Writes in progress per region.
    writing: std::collections::HashMap<u64, u32>,
}

/// The regions of a write in progress: dropping it ends the write for the bitmap.
struct RegionWrites<'a> {
    array: &'a Array,
    regions: Vec<u64>,
}

impl Drop for RegionWrites<'_> {
    fn drop(&mut self) {
        let mut act = self
            .array
            .bitmap_activity
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for r in &self.regions {
            if let std::collections::hash_map::Entry::Occupied(mut e) = act.writing.entry(*r) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
    }
}

fn bit_is_set(bits: &[u8], region: u64) -> bool {
    bits[(region / 8) as usize] & (1 << (region % 8)) != 0
}

fn region_is_set(bitmap: &[u8], member_offset_bytes: u64) -> bool {
    bit_is_set(bitmap, member_offset_bytes / BITMAP_REGION_BYTES)
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

fn member_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Member {
        path: path.to_path_buf(),
        message: message.into(),
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
fn device_bytes(file: &File, path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if meta.file_type().is_block_device() {
        let mut f = file;
        f.seek(SeekFrom::End(0)).map_err(io_err(path, "seek"))
    } else {
        Ok(meta.len())
    }
}

fn open_rw(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(io_err(path, "open"))
}

/// Opens member `path` (created if `create`), refusing a file already opened under
/// another of `paths` (same device and inode, recorded in `seen`).
fn open_member_once(
    path: &Path,
    create: bool,
    paths: &[PathBuf],
    seen: &mut Vec<(u64, u64)>,
) -> Result<File> {
    let file = open_rw(path, create)?;
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    let id = (meta.dev(), meta.ino());
    if let Some(i) = seen.iter().position(|&x| x == id) {
        return Err(member_err(
            path,
            format!("given twice (same file as {})", paths[i].display()),
        ));
    }
    seen.push(id);
    Ok(file)
}

/// Reads and decodes the superblock of `path`.
pub fn read_superblock(path: &Path) -> Result<Superblock> {
    let file = File::open(path).map_err(io_err(path, "open"))?;
    read_superblock_of(&file, path)
}

fn read_superblock_of(file: &File, path: &Path) -> Result<Superblock> {
    let mut b = [0u8; SUPERBLOCK_BYTES];
    file.read_exact_at(&mut b, 0)
        .map_err(|e| member_err(path, format!("cannot read superblock: {e}")))?;
    Superblock::decode(&b).map_err(|e| member_err(path, e.to_string()))
}

/// Flips bits of the byte at data offset `offset_bytes` of member `path` (XOR with
/// `mask`): fault injection for tests of scrub and degraded reads.
pub fn inject(path: &Path, offset_bytes: u64, mask: u8) -> Result<()> {
    let file = open_rw(path, false)?;
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

/// Members of a parity stripe in reconstruct order: data in syndrome slot order, then
/// P, then Q; plus the data index of each slot.
fn stripe_members(geo: &Geometry, id: StripeId) -> (Vec<u32>, Vec<u32>) {
    let order = geo.slot_order(id);
    let mut members: Vec<u32> = order.iter().map(|&k| geo.data_member(id, k)).collect();
    members.extend(geo.p_member(id));
    members.extend(geo.q_member(id));
    (members, order)
}

/// The blocks of stripe `id` over columns `[col, +len)` from staged reads, `lost`
/// members rebuilt. Order as [`stripe_members`].
fn stripe_blocks(
    geo: &Geometry,
    id: StripeId,
    col: u64,
    len: u64,
    reads: &Staged,
    lost: &FailedSet,
) -> (Vec<u32>, Vec<u32>, Vec<Vec<u8>>) {
    let (members, order) = stripe_members(geo, id);
    let off = geo.stripe_offset_bytes(id) + col;
    let mut blocks: Vec<Vec<u8>> = members
        .iter()
        .map(|&m| {
            if lost.contains(m) {
                vec![0u8; len as usize]
            } else {
                reads.must(m, off, len).to_vec()
            }
        })
        .collect();
    let missing: Vec<usize> = (0..members.len())
        .filter(|&i| lost.contains(members[i]))
        .collect();
    if !missing.is_empty() {
        let mut refs: Vec<&mut [u8]> = blocks.iter_mut().map(|b| b.as_mut_slice()).collect();
        parity::reconstruct(&mut refs, geo.parity_per_stripe() as usize, &missing)
            .expect("the planner only plans stripes the parity can rebuild");
    }
    (members, order, blocks)
}

/// P (and Q) of data blocks in syndrome order.
fn parity_of(data: &[&[u8]], parity_count: u32) -> (Vec<u8>, Vec<u8>) {
    let len = data.first().map_or(0, |d| d.len());
    let mut p = vec![0u8; len];
    let mut q = Vec::new();
    if parity_count == 2 {
        q = vec![0u8; len];
        parity::compute_pq(data, &mut p, &mut q);
    } else {
        parity::compute_p(data, &mut p);
    }
    (p, q)
}

impl Array {
    /// Creates an array on `paths` (member i gets role i) and returns it assembled.
    /// Refuses members that already carry a raidlab superblock unless `force`.
    pub fn create(paths: &[PathBuf], opts: &CreateOptions) -> Result<Self> {
        if paths.is_empty() || paths.len() > MEMBERS_MAX as usize {
            return Err(Error::Input(format!(
                "members: 1..={MEMBERS_MAX} member files or devices needed, got {}",
                paths.len()
            )));
        }
        // Parse, then build: refuse a bad geometry before any file is created.
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
        let mut files = Vec::new();
        let mut ids = Vec::new();
        let mut fresh = true;
        let mut data_bytes_min = u64::MAX;
        for path in paths {
            let existed = path.exists();
            if !existed && opts.member_size_bytes.is_none() {
                return Err(member_err(
                    path,
                    "does not exist; give --size to create member files",
                ));
            }
            let file = open_member_once(path, true, paths, &mut ids)?;
            let meta = file.metadata().map_err(io_err(path, "stat"))?;
            if !opts.force {
                if let Ok(sb) = read_superblock_of(&file, path) {
                    return Err(member_err(
                        path,
                        format!(
                            "already a member (role {}) of array {:032x}; use --force to overwrite",
                            sb.role, sb.array_uuid
                        ),
                    ));
                }
            }
            let mut bytes = device_bytes(&file, path)?;
            if let Some(want) = opts.member_size_bytes {
                if meta.file_type().is_block_device() {
                    if bytes < want {
                        return Err(member_err(
                            path,
                            format!("device holds {bytes} B, --size asks {want}"),
                        ));
                    }
                } else if bytes < want {
                    fresh &= bytes == 0;
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
                    format!(
                        "holds {bytes} B, not more than the {DATA_OFFSET_BYTES} B metadata area"
                    ),
                ));
            }
            data_bytes_min = data_bytes_min.min(bytes - DATA_OFFSET_BYTES);
            files.push(file);
        }
        let spec = ArraySpec {
            level: opts.level,
            drive_count: paths.len() as u32,
            stripe_unit_bytes: opts.stripe_unit_bytes,
            member_capacity_bytes: data_bytes_min,
            layout: opts.layout,
            copies: opts.copies,
            spans: opts.spans,
        };
        let geo = Geometry::new(&spec)?;
        let uuid = match opts.uuid {
            Some(u) => u,
            None => random_uuid()?,
        };
        let journal = match &opts.journal {
            None => None,
            Some(path) => {
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
                let need = crate::journal::HEADER_BYTES
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
                Some(Journal::create(path, uuid, bytes)?)
            }
        };
        let array = Self::with_state(
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
            },
            vec![0; bitmap_bytes(&geo)],
            journal,
        )?;
        // A reused member may hold an old bitmap: start with every region clean.
        array.write_bitmap(&[0u8].repeat(bitmap_bytes(&geo)))?;
        // Zero-filled members are already consistent (zero data, zero P and Q); any
        // other content needs md's initial resync.
        if !fresh && !opts.assume_clean && geo.tolerated_failures() > 0 {
            array.scrub(true)?;
        }
        array.commit_state(|_| {})?;
        Ok(array)
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
        if paths.is_empty() {
            return Err(Error::Input(
                "members: at least one member file or device needed".into(),
            ));
        }
        let mut found: Vec<(PathBuf, File, Superblock)> = Vec::new();
        let mut ids = Vec::new();
        for path in paths {
            let file = open_member_once(path, false, paths, &mut ids)?;
            let sb = read_superblock_of(&file, path)?;
            found.push((path.clone(), file, sb));
        }
        // The newest superblock speaks for the array.
        let newest = found
            .iter()
            .max_by_key(|(_, _, sb)| sb.events)
            .map(|(_, _, sb)| *sb)
            .expect("nonempty");
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
        let geo = Geometry::new(&newest.spec)?;
        let mut failed = newest.failed;
        let mut members = vec![(None, MemberState::Missing); n as usize];
        let mut files: Vec<Option<Arc<File>>> = vec![None; n as usize];
        let mut resume = None;
        for (role, slot) in by_role.iter().enumerate() {
            let role = role as u32;
            let Some(i) = *slot else {
                failed.insert(role);
                continue;
            };
            let (path, file, sb) = &found[i];
            let state = if sb.events < newest.events {
                failed.insert(role);
                MemberState::Stale { events: sb.events }
            } else if let (Some(offset_bytes), true) =
                (sb.recovery_offset_bytes, failed.contains(role))
            {
                // A rebuild stopped: its work below the checkpoint is current, except
                // after an unclean stop in the regions the bitmap marks (a write then in
                // flight may not have reached the replacement), which the resumed
                // rebuild does again first.
                let file = Arc::new(file.try_clone().map_err(io_err(path, "dup"))?);
                resume = Some(Checkpoint {
                    role,
                    path: path.clone(),
                    file: file.clone(),
                    offset_bytes,
                    rate_bytes_per_s: sb.recovery_rate_bytes_per_s,
                });
                files[role as usize] = Some(file);
                MemberState::Recovering { offset_bytes }
            } else if failed.contains(role) {
                MemberState::Failed
            } else {
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
                files[role as usize] =
                    Some(Arc::new(file.try_clone().map_err(io_err(path, "dup"))?));
                MemberState::Active
            };
            members[role as usize] = (Some(path.clone()), state);
        }
        if !geo.tolerates(&failed) {
            let detail: Vec<String> = members
                .iter()
                .enumerate()
                .filter(|(r, _)| failed.contains(*r as u32))
                .map(|(r, (p, s))| match p {
                    Some(p) => format!("{r} ({}: {s})", p.display()),
                    None => format!("{r} (missing)"),
                })
                .collect();
            return Err(Error::Input(format!(
                "cannot assemble: members {} are failed, missing or stale; {} survives {} failure(s)",
                detail.join(", "),
                geo.level(),
                geo.tolerated_failures()
            )));
        }
        let mut bitmap = vec![0u8; bitmap_bytes(&geo)];
        for (role, f) in files.iter().enumerate() {
            let Some(f) = f else { continue };
            let mut mine = vec![0u8; bitmap.len()];
            f.read_exact_at(&mut mine, BITMAP_OFFSET_BYTES)
                .map_err(|e| Error::Io {
                    path: members[role].0.clone().unwrap_or_default(),
                    op: "read bitmap",
                    source: e,
                })?;
            bitmap.iter_mut().zip(&mine).for_each(|(b, m)| *b |= m);
        }
        if !newest.dirty {
            // A clean stop leaves nothing in flight, whatever a member's bitmap says.
            bitmap.fill(0);
        }
        let journal = match (journal, newest.journaled) {
            (None, false) => None,
            (Some(j), true) => Some(Journal::open(j, newest.array_uuid)?),
            (None, true) => {
                return Err(Error::Input(format!(
                    "--journal: array {:032x} writes through a journal; give its path",
                    newest.array_uuid
                )))
            }
            (Some(_), false) => {
                return Err(Error::Input(format!(
                    "--journal: array {:032x} has no write journal",
                    newest.array_uuid
                )))
            }
        };
        let state = State {
            events: newest.events,
            dirty: newest.dirty,
            failed,
            members,
        };
        let mut array = Self::with_state(
            newest.spec,
            newest.array_uuid,
            files,
            state,
            bitmap,
            journal,
        )?;
        array.journal_replayed = array.replay_journal()?;
        *array.checkpoint.lock().expect("checkpoint lock") = resume;
        Ok(array)
    }

    /// An array in `state`, nothing running, no faults.
    fn with_state(
        spec: ArraySpec,
        uuid: u128,
        files: Vec<Option<Arc<File>>>,
        state: State,
        bitmap: Vec<u8>,
        journal: Option<Journal>,
    ) -> Result<Self> {
        let geo = Geometry::new(&spec)?;
        Ok(Self {
            read_errors: (0..geo.members())
                .map(|_| Mutex::new(ReadErrors::default()))
                .collect(),
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
            faults: RwLock::new(Vec::new()),
            any_fault: AtomicBool::new(false),
        })
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
                    let path = self.state.lock().expect("state lock").members[e.member as usize]
                        .0
                        .clone()
                        .unwrap_or_default();
                    f.write_all_at(&e.data, DATA_OFFSET_BYTES + e.offset_bytes)
                        .map_err(io_err(&path, "replay journal"))?;
                }
            }
        }
        self.flush()?;
        j.retire()?;
        Ok(records.len() as u64)
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Usable bytes of the array.
    pub fn capacity_bytes(&self) -> u64 {
        self.geo.capacity_bytes()
    }

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
            "{target}: not a member of this array (give one of the member paths or a role 0..{})",
            self.geo.members()
        )))
    }

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
    fn injected(&self, member: u32, offset: u64, len: u64, write: bool) -> Option<std::io::Error> {
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

    /// The failed members now.
    pub fn failed(&self) -> FailedSet {
        self.state.lock().expect("state lock").failed
    }

    /// A snapshot for `status`.
    pub fn status(&self) -> Status {
        // Lock order is bitmap, files, state (see `mark_regions`): never bitmap under state.
        let dirty_regions = self.dirty_regions();
        let rebuild = self.rebuild_progress();
        let st = self.state.lock().expect("state lock");
        Status {
            rebuild,
            faults: self.faults.read().expect("faults lock").clone(),
            journal: self.journal.as_ref().map(|j| j.path().to_path_buf()),
            journal_replayed: self.journal_replayed,
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
        }
    }

    /// Regions set in the write-intent bitmap.
    pub fn dirty_regions(&self) -> u64 {
        let bm = self.bitmap.lock().expect("bitmap lock");
        bm.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    /// Writes `bitmap` to every active member and syncs it.
    fn write_bitmap(&self, bitmap: &[u8]) -> Result<()> {
        let files = self.files.read().expect("files lock").clone();
        for (role, f) in files.iter().enumerate() {
            let Some(f) = f else { continue };
            let path = self.state.lock().expect("state lock").members[role]
                .0
                .clone()
                .unwrap_or_default();
            f.write_all_at(bitmap, BITMAP_OFFSET_BYTES)
                .and_then(|()| f.sync_data())
                .map_err(io_err(&path, "write bitmap"))?;
        }
        Ok(())
    }

    /// Sets (on disk, synced, before any data moves) the bitmap bits of every region
    /// `writes` touches. Later writes to a set region cost nothing. The regions count
    /// as being written until the returned guard is dropped.
    fn mark_regions(&self, writes: &Staged) -> Result<RegionWrites<'_>> {
        let mut bm = self.bitmap.lock().expect("bitmap lock");
        let mut regions: Vec<u64> = writes
            .iter()
            .flat_map(|(e, buf)| {
                e.offset_bytes / BITMAP_REGION_BYTES
                    ..=(e.offset_bytes + buf.len() as u64 - 1) / BITMAP_REGION_BYTES
            })
            .collect();
        regions.sort_unstable();
        regions.dedup();
        let mut changed = false;
        {
            let mut act = self.bitmap_activity.lock().expect("bitmap activity lock");
            for &r in &regions {
                let (byte, bit) = ((r / 8) as usize, 1u8 << (r % 8));
                changed |= bm[byte] & bit == 0;
                bm[byte] |= bit;
                act.touched[byte] |= bit;
                *act.writing.entry(r).or_default() += 1;
            }
        }
        let guard = RegionWrites {
            array: self,
            regions,
        };
        if changed {
            self.write_bitmap(&bm)?;
        }
        Ok(guard)
    }

    /// Clears the bitmap bits of regions with no write in progress and none since the
    /// last pass, after syncing the members, as md's bitmap daemon does every few
    /// seconds; a running server calls it, so an unclean stop resyncs only the regions
    /// written lately. Nothing is cleared while the array is degraded (md keeps them
    /// too). Returns the regions cleared.
    pub fn clean_bitmap(&self) -> Result<u64> {
        if !self.failed().is_empty() {
            return Ok(0);
        }
        let candidates: Vec<u64> = {
            let bm = self.bitmap.lock().expect("bitmap lock");
            let mut act = self.bitmap_activity.lock().expect("bitmap activity lock");
            let recent = std::mem::replace(&mut act.touched, vec![0; bm.len()]);
            (0..bm.len() as u64 * 8)
                .filter(|&r| {
                    bit_is_set(&bm, r) && !bit_is_set(&recent, r) && !act.writing.contains_key(&r)
                })
                .collect()
        };
        if candidates.is_empty() {
            return Ok(0);
        }
        // Every write to a candidate ended before the pass began: the sync makes it
        // durable, parity and copies included.
        self.flush()?;
        let mut bm = self.bitmap.lock().expect("bitmap lock");
        if !self.failed().is_empty() {
            return Ok(0);
        }
        let mut cleared = 0;
        {
            let act = self.bitmap_activity.lock().expect("bitmap activity lock");
            for r in candidates {
                // A write that began since the pass began (in progress or not) marked
                // the region touched: it keeps its bit.
                if !bit_is_set(&act.touched, r) {
                    bm[(r / 8) as usize] &= !(1 << (r % 8));
                    cleared += 1;
                }
            }
        }
        if cleared > 0 {
            self.write_bitmap(&bm)?;
        }
        Ok(cleared)
    }

    /// After an unclean stop: recomputes parity (copies) of the stripes in dirty bitmap
    /// regions only, then clears the bitmap. Returns the regions resynced and what the
    /// scrub of them found; `None` when the array is clean or cannot be resynced
    /// (degraded or without redundancy: the bits stay set).
    pub fn resync_dirty_regions(&self) -> Result<Option<(u64, ScrubReport)>> {
        let regions = self.dirty_regions();
        if regions == 0 || !self.failed().is_empty() || self.geo.tolerated_failures() == 0 {
            return Ok(None);
        }
        let bm = self.bitmap.lock().expect("bitmap lock").clone();
        let report = self.scrub_where(true, |off| region_is_set(&bm, off))?;
        let clear = vec![0u8; bm.len()];
        self.write_bitmap(&clear)?;
        *self.bitmap.lock().expect("bitmap lock") = clear;
        Ok(Some((regions, report)))
    }

    /// Applies `change` to the state, bumps the event counter and writes the superblock
    /// of every active member.
    fn commit_state(&self, change: impl FnOnce(&mut State)) -> Result<()> {
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
                recovery_offset_bytes: None,
                recovery_rate_bytes_per_s: None,
            };
            let path = st.members[role as usize].0.clone().unwrap_or_default();
            let r = file
                .write_all_at(&sb.encode(), 0)
                .and_then(|()| file.sync_data())
                .map_err(io_err(&path, "write superblock"));
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
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

    /// Writes the superblock of a rebuild's replacement: the array as `st` has it, with
    /// its data below the checkpoint rebuilt.
    fn write_checkpoint(&self, st: &State, cp: &Checkpoint) -> Result<()> {
        let sb = Superblock {
            array_uuid: self.uuid,
            spec: self.spec,
            role: cp.role,
            events: st.events,
            dirty: st.dirty,
            failed: st.failed,
            journaled: self.journal.is_some(),
            recovery_offset_bytes: Some(cp.offset_bytes),
            recovery_rate_bytes_per_s: cp.rate_bytes_per_s,
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

    /// Marks the array dirty (writes may be in flight until [`Array::close`]).
    pub fn open_for_writes(&self) -> Result<()> {
        self.commit_state(|st| st.dirty = true)
    }

    /// Flushes every member and marks the array clean.
    pub fn close(&self) -> Result<()> {
        self.flush()?;
        if let Some(j) = &self.journal {
            j.retire()?;
        }
        // Everything is on disk: no region has writes in flight any more.
        let clear = vec![0u8; bitmap_bytes(&self.geo)];
        self.write_bitmap(&clear)?;
        *self.bitmap.lock().expect("bitmap lock") = clear;
        self.commit_state(|st| st.dirty = false)
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
    fn member_io_failed(&self, role: u32, err: &std::io::Error) {
        let path = self.state.lock().expect("state lock").members[role as usize]
            .0
            .clone()
            .unwrap_or_default();
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

    fn check_request(&self, offset_bytes: u64, len_bytes: u64) -> Result<()> {
        if len_bytes > REQUEST_BYTES_MAX {
            return Err(Error::Input(format!(
                "request of {len_bytes} B exceeds {REQUEST_BYTES_MAX} B"
            )));
        }
        // Bounds and alignment, as the planner checks them, before taking locks.
        if len_bytes == 0 {
            return Err(PlanError::EmptyRequest.into());
        }
        if !offset_bytes.is_multiple_of(SECTOR_BYTES) || !len_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(PlanError::Unaligned {
                offset_bytes,
                len_bytes,
            }
            .into());
        }
        let end = offset_bytes.saturating_add(len_bytes);
        if end > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.capacity_bytes(),
            }
            .into());
        }
        Ok(())
    }

    fn lock_index(span: u32, stripe: u64) -> usize {
        let h = stripe
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(u64::from(span).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
        (h >> 32) as usize % STRIPE_LOCKS
    }

    /// Locks every stripe (logical chunk, for non-striped levels) of the range, in
    /// ascending lock order.
    fn lock_range(&self, offset_bytes: u64, len_bytes: u64) -> Vec<MutexGuard<'_, ()>> {
        let su = self.geo.stripe_unit_bytes();
        let mut idx: Vec<usize> = (offset_bytes / su..=(offset_bytes + len_bytes - 1) / su)
            .map(|chunk| match self.geo.stripe_address(chunk * su) {
                Some(a) => Self::lock_index(a.id.span, a.id.stripe),
                None => Self::lock_index(0, chunk),
            })
            .collect();
        self.lock_indices(&mut idx)
    }

    fn lock_indices(&self, idx: &mut Vec<usize>) -> Vec<MutexGuard<'_, ()>> {
        idx.sort_unstable();
        idx.dedup();
        idx.iter()
            .map(|&i| self.locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    fn chooser(&self) -> Rotating {
        Rotating(self.reads_started.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs the read phase; on a member error returns the member.
    fn read_phase(
        &self,
        files: &[Option<Arc<File>>],
        plan: &Plan,
    ) -> std::result::Result<Staged, (u32, std::io::Error)> {
        let mut staged = Staged::zeroed(&plan.reads);
        for (e, buf) in staged.iter_mut() {
            let file = files[e.member as usize]
                .as_ref()
                .expect("plans read only members with a file");
            if let Some(err) = self.injected(e.member, e.offset_bytes, e.len_bytes, false) {
                return Err((e.member, err));
            }
            file.read_exact_at(buf, DATA_OFFSET_BYTES + e.offset_bytes)
                .map_err(|err| (e.member, err))?;
        }
        Ok(staged)
    }

    /// Runs the write phase: every extent is attempted; failing members are marked
    /// failed. Errors only when the array no longer tolerates its failed set.
    fn write_phase(&self, files: &[Option<Arc<File>>], writes: &Staged, fua: bool) -> Result<()> {
        let mut failed_now = Vec::new();
        for (e, buf) in writes.iter() {
            if failed_now.iter().any(|(m, _)| *m == e.member) {
                continue;
            }
            let file = files[e.member as usize]
                .as_ref()
                .expect("plans write only members with a file");
            crash_point();
            let r = match self.injected(e.member, e.offset_bytes, e.len_bytes, true) {
                Some(err) => Err(err),
                None => file.write_all_at(buf, DATA_OFFSET_BYTES + e.offset_bytes),
            };
            if let Err(err) = r {
                failed_now.push((e.member, err));
            }
        }
        if fua {
            let mut synced = FailedSet::new();
            for (e, _) in writes.iter() {
                if synced.insert(e.member) && !failed_now.iter().any(|(m, _)| *m == e.member) {
                    if let Err(err) = files[e.member as usize].as_ref().expect("file").sync_data() {
                        failed_now.push((e.member, err));
                    }
                }
            }
        }
        for (m, err) in &failed_now {
            self.member_io_failed(*m, err);
        }
        let failed = self.failed();
        if !self.geo.tolerates(&failed) {
            return Err(PlanError::TooManyFailures {
                level: self.geo.level(),
                failed,
                tolerated_failures: self.geo.tolerated_failures(),
            }
            .into());
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset_bytes` (both multiples of 512 B, at most
    /// [`REQUEST_BYTES_MAX`]), reconstructing lost members' data.
    pub fn read(&self, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        self.check_request(offset_bytes, len)?;
        let req = Request {
            offset_bytes,
            len_bytes: len,
            write: false,
        };
        let _locks = self.lock_range(offset_bytes, len);
        let read = self.plan_and_read(req)?;
        self.assemble_read(req, &read.failed, &read.reads, buf);
        Ok(())
    }

    /// Plans `req` against the current failures and runs its read phase. A member
    /// whose read fails has the rows it failed on rewritten from the other members (md's
    /// read-error correction) and the read is tried again; if that cannot be done, or
    /// the member fails again, it is marked failed and the request planned without it.
    fn plan_and_read(&self, req: Request) -> Result<PlannedRead> {
        let files = self.files.read().expect("files lock").clone();
        let mut plan = Plan::new();
        let mut corrected = FailedSet::new();
        loop {
            let failed = self.failed();
            self.geo
                .plan(req, &failed, &mut self.chooser(), &mut plan)?;
            match self.read_phase(&files, &plan) {
                Ok(reads) => {
                    return Ok(PlannedRead {
                        files,
                        failed,
                        plan,
                        reads,
                    })
                }
                Err((m, err)) => {
                    if corrected.contains(m) || !self.correct_read_error(m, &err, &plan, &files) {
                        self.member_io_failed(m, &err);
                    } else {
                        corrected.insert(m);
                    }
                }
            }
        }
    }

    /// md's read-error correction for a request: the chunk rows of `role` that `plan`
    /// failed to read are rewritten from the other members ([`Array::correct_rows`]).
    fn correct_read_error(
        &self,
        role: u32,
        err: &std::io::Error,
        plan: &Plan,
        files: &[Option<Arc<File>>],
    ) -> bool {
        let su = self.geo.stripe_unit_bytes();
        let mut rows: Vec<u64> = plan
            .reads
            .iter()
            .filter(|e| e.member == role)
            .flat_map(|e| e.offset_bytes / su..=(e.offset_bytes + e.len_bytes - 1) / su)
            .collect();
        rows.sort_unstable();
        rows.dedup();
        self.correct_rows(role, &rows, err, files)
    }

    /// md's read-error correction: chunk rows of `role` it could not read are computed
    /// from the other members and written back, which makes a disk remap an unreadable
    /// sector. Returns whether it was done; not when the array could not lose `role`,
    /// after [`MAX_READ_ERRORS`] corrections of the member, or when the rewrite fails.
    /// The caller holds the stripe locks of the rows.
    fn correct_rows(
        &self,
        role: u32,
        rows: &[u64],
        err: &std::io::Error,
        files: &[Option<Arc<File>>],
    ) -> bool {
        // A short read means the member shrank or went away, not that a sector is bad.
        if err.kind() == std::io::ErrorKind::UnexpectedEof {
            return false;
        }
        let mut lost = self.failed();
        lost.insert(role);
        let Some(file) = files[role as usize].clone() else {
            return false;
        };
        if !self.geo.tolerates(&lost) {
            return false;
        }
        let path = self.state.lock().expect("state lock").members[role as usize]
            .0
            .clone()
            .unwrap_or_default();
        let recent = self.read_errors[role as usize]
            .lock()
            .expect("read errors lock")
            .recent_at(Instant::now());
        if recent >= MAX_READ_ERRORS {
            eprintln!(
                "raidlab-engine: member {role} ({}): another read error after {recent} \
                 corrected lately, the most allowed",
                path.display()
            );
            return false;
        }
        for &row in rows {
            if let Err(e) = self.rebuild_row(role, row, &file, &path) {
                eprintln!(
                    "raidlab-engine: member {role} ({}): rewriting after a read error: {e}",
                    path.display()
                );
                return false;
            }
        }
        let count = self.read_errors[role as usize]
            .lock()
            .expect("read errors lock")
            .record(Instant::now());
        eprintln!(
            "raidlab-engine: member {role} ({}): read error ({err}) corrected: {} chunk row(s) \
             rewritten from the other members ({count} of {MAX_READ_ERRORS} allowed)",
            path.display(),
            rows.len()
        );
        true
    }

    /// Copies the request's bytes out of the staged reads, rebuilding lost chunks.
    fn assemble_read(&self, req: Request, failed: &FailedSet, reads: &Staged, buf: &mut [u8]) {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let end = req.offset_bytes + req.len_bytes;
        let mut at = req.offset_bytes;
        while at < end {
            let piece_end = end.min((at / su + 1) * su);
            let len = piece_end - at;
            let dst =
                &mut buf[(at - req.offset_bytes) as usize..(piece_end - req.offset_bytes) as usize];
            let copy = geo
                .copies_of(at)
                .filter(|c| !failed.contains(c.member))
                .find_map(|c| reads.get(c.member, c.offset_bytes, len));
            if let Some(src) = copy {
                dst.copy_from_slice(src);
            } else {
                let a = geo
                    .stripe_address(at)
                    .expect("only parity levels lose a chunk the plan still reads");
                let lost = failed.intersection(&FailedSet::from_members(
                    &geo.span_members(a.id.span).collect::<Vec<_>>(),
                ));
                let (_, order, blocks) =
                    stripe_blocks(geo, a.id, a.column_bytes, len, reads, &lost);
                let slot = order.iter().position(|&k| k == a.data_index).expect("slot");
                dst.copy_from_slice(&blocks[slot]);
            }
            at = piece_end;
        }
    }

    /// Writes `data` at `offset_bytes` (multiples of 512 B, at most
    /// [`REQUEST_BYTES_MAX`]), keeping parity and copies consistent. `fua`: the written
    /// members are synced before returning.
    pub fn write(&self, offset_bytes: u64, data: &[u8], fua: bool) -> Result<()> {
        let len = data.len() as u64;
        self.check_request(offset_bytes, len)?;
        let req = Request {
            offset_bytes,
            len_bytes: len,
            write: true,
        };
        let _locks = self.lock_range(offset_bytes, len);
        let read = self.plan_and_read(req)?;
        let writes = self.stage_writes(req, data, &read.failed, &read.plan, &read.reads);
        let _journaled = match &self.journal {
            Some(j) => {
                let extents: Vec<(u32, u64, &[u8])> = writes
                    .iter()
                    .map(|(e, b)| (e.member, e.offset_bytes, b.as_slice()))
                    .collect();
                Some(j.append(&extents, || self.flush())?)
            }
            None => None,
        };
        let _writing = self.mark_regions(&writes)?;
        self.write_phase(&read.files, &writes, fua)?;
        self.refresh_rebuilt_rows(req, &read.failed)
    }

    /// The write phase's bytes: new data on every surviving copy, new parity per stripe
    /// segment (RMW, RCW, full stripe, degraded).
    fn stage_writes(
        &self,
        req: Request,
        data: &[u8],
        failed: &FailedSet,
        plan: &Plan,
        reads: &Staged,
    ) -> Staged {
        let geo = &self.geo;
        let su = geo.stripe_unit_bytes();
        let mut w = Staged::zeroed(&plan.writes);
        let end = req.offset_bytes + req.len_bytes;
        let new_of = |l: u64, len: u64| -> Option<&[u8]> {
            (l >= req.offset_bytes && l + len <= end).then(|| {
                let o = (l - req.offset_bytes) as usize;
                &data[o..o + len as usize]
            })
        };
        let mut at = req.offset_bytes;
        while at < end {
            let piece_end = end.min((at / su + 1) * su);
            let src = new_of(at, piece_end - at).expect("inside the request");
            for c in geo.copies_of(at) {
                if !failed.contains(c.member) {
                    w.put(c.member, c.offset_bytes, src);
                }
            }
            at = piece_end;
        }
        for sp in &plan.stripes {
            if !matches!(
                sp.kind,
                StripeKind::Rmw
                    | StripeKind::Rcw
                    | StripeKind::FullStripe
                    | StripeKind::DegradedWrite
            ) {
                continue;
            }
            let id = StripeId {
                span: sp.span,
                stripe: sp.stripe,
            };
            let (col, len) = (sp.column_offset_bytes, sp.column_len_bytes);
            let off = geo.stripe_offset_bytes(id) + col;
            let (members, order) = stripe_members(geo, id);
            let d = order.len();
            let ppx = geo.parity_per_stripe();
            let (p, q) = match sp.kind {
                StripeKind::Rmw => {
                    let mut p = reads.must(members[d], off, len).to_vec();
                    let mut q = if ppx == 2 {
                        reads.must(members[d + 1], off, len).to_vec()
                    } else {
                        Vec::new()
                    };
                    for (slot, &k) in order.iter().enumerate() {
                        if let Some(new) = new_of(geo.logical_of(id, k, col), len) {
                            let old = reads.must(members[slot], off, len);
                            parity::update_p(&mut p, old, new);
                            if ppx == 2 {
                                parity::update_q(&mut q, slot as u32, old, new);
                            }
                        }
                    }
                    (p, q)
                }
                _ => {
                    let old = (sp.kind == StripeKind::DegradedWrite)
                        .then(|| stripe_blocks(geo, id, col, len, reads, &sp.lost).2);
                    let blocks: Vec<&[u8]> = order
                        .iter()
                        .enumerate()
                        .map(|(slot, &k)| match new_of(geo.logical_of(id, k, col), len) {
                            Some(new) => new,
                            None => match &old {
                                Some(o) => o[slot].as_slice(),
                                None => reads.must(members[slot], off, len),
                            },
                        })
                        .collect();
                    parity_of(&blocks, ppx)
                }
            };
            if !failed.contains(members[d]) {
                w.put(members[d], off, &p);
            }
            if ppx == 2 && !failed.contains(members[d + 1]) {
                w.put(members[d + 1], off, &q);
            }
        }
        w
    }

    /// Syncs every active member (NBD FLUSH: with CAN_MULTI_CONN it covers writes of all
    /// connections, which share these files).
    pub fn flush(&self) -> Result<()> {
        let files = self.files.read().expect("files lock");
        let failed = self.failed();
        for (role, f) in files.iter().enumerate() {
            if let Some(f) = f.as_ref().filter(|_| !failed.contains(role as u32)) {
                if let Err(e) = f.sync_data() {
                    self.member_io_failed(role as u32, &e);
                }
            }
        }
        let failed = self.failed();
        if self.geo.tolerates(&failed) {
            Ok(())
        } else {
            Err(PlanError::TooManyFailures {
                level: self.geo.level(),
                failed,
                tolerated_failures: self.geo.tolerated_failures(),
            }
            .into())
        }
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
        let file = open_rw(new_path, true)?;
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
        let outcome = outcome.and_then(|()| {
            file.sync_all().map_err(io_err(new_path, "sync"))?;
            let mut all: Vec<usize> = (0..STRIPE_LOCKS).collect();
            let _every_stripe = self.lock_indices(&mut all);
            *self.rebuilding.lock().expect("rebuild lock") = None;
            *self.checkpoint.lock().expect("checkpoint lock") = None;
            self.commit_state(|st| {
                st.failed.remove(role);
                st.members[role as usize].1 = MemberState::Active;
            })
        });
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
    fn rebuild_row(&self, role: u32, row: u64, file: &File, path: &Path) -> Result<()> {
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
                    stripe_blocks(geo, id, sp.column_offset_bytes, len, &reads, &sp.lost);
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

    /// During a rebuild: rebuilds again the rows of the rebuilding member that `req`
    /// (just written, degraded, under its stripe locks) changed and that the rebuild
    /// had already passed. Rows not yet passed get the new data when the rebuild
    /// reaches them.
    fn refresh_rebuilt_rows(&self, req: Request, failed: &FailedSet) -> Result<()> {
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

    /// md's `check` (`repair == false`) or `repair`: compares every stripe's parity with
    /// its data (every copy with the first, for mirrors), counts mismatches, and with
    /// `repair` rewrites parity from data (copies from the first copy). Needs every
    /// member; refused on levels without redundancy.
    pub fn scrub(&self, repair: bool) -> Result<ScrubReport> {
        self.scrub_where(repair, |_| true)
    }

    /// [`Array::scrub`] of the stripes (chunks, for mirrors) with some block at a
    /// member offset for which `wanted` holds.
    fn scrub_where(&self, repair: bool, wanted: impl Fn(u64) -> bool) -> Result<ScrubReport> {
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
        let su = geo.stripe_unit_bytes();
        let mut report = ScrubReport::default();
        let files = self.files.read().expect("files lock").clone();
        let file = |m: u32| {
            files[m as usize]
                .as_ref()
                .expect("active member has a file")
        };
        let path = |m: u32| {
            self.state.lock().expect("state lock").members[m as usize]
                .0
                .clone()
                .unwrap_or_default()
        };
        let read_once =
            |m: u32, off: u64, buf: &mut [u8]| match self.injected(m, off, buf.len() as u64, false)
            {
                Some(err) => Err(err),
                None => file(m).read_exact_at(buf, DATA_OFFSET_BYTES + off),
            };
        // A read error is corrected from the other members (the caller holds the
        // stripe's lock) and read again, as md's check does; if it cannot be, the
        // member fails and the scrub stops.
        let corrected = std::cell::Cell::new(0u64);
        let read = |m: u32, off: u64, buf: &mut [u8]| -> Result<()> {
            let Err(err) = read_once(m, off, buf) else {
                return Ok(());
            };
            let row = off / su;
            if self.correct_rows(m, &[row], &err, &files) {
                if let Ok(()) = read_once(m, off, buf) {
                    corrected.set(corrected.get() + 1);
                    return Ok(());
                }
            }
            self.member_io_failed(m, &err);
            Err(io_err(&path(m), "read")(err))
        };
        let write = |m: u32, off: u64, buf: &[u8]| {
            file(m)
                .write_all_at(buf, DATA_OFFSET_BYTES + off)
                .map_err(io_err(&path(m), "write"))
        };
        if geo.parity_per_stripe() > 0 {
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
                        read(*m, off, b)?;
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
                            write(members[d], off, &p)?;
                            if geo.parity_per_stripe() == 2 {
                                write(members[d + 1], off, &q)?;
                            }
                            report.repaired_stripes += 1;
                        }
                    }
                }
            }
        } else {
            let mut first = vec![0u8; su as usize];
            let mut other = vec![0u8; su as usize];
            for chunk in 0..geo.capacity_bytes() / su {
                let l = chunk * su;
                if !geo.copies_of(l).any(|c| wanted(c.offset_bytes)) {
                    continue;
                }
                let _lock = self.lock_indices(&mut vec![Self::lock_index(0, chunk)]);
                let primary = geo.locate(l);
                read(primary.member, primary.offset_bytes, &mut first)?;
                let mut bad = false;
                for c in geo.copies_of(l).skip(1) {
                    read(c.member, c.offset_bytes, &mut other)?;
                    if other != first {
                        bad = true;
                        if repair {
                            write(c.member, c.offset_bytes, &first)?;
                        }
                    }
                }
                report.stripes_checked += 1;
                if bad {
                    report.mismatched_stripes += 1;
                    report.repaired_stripes += u64::from(repair);
                }
            }
        }
        if repair {
            for m in 0..geo.members() {
                file(m).sync_data().map_err(io_err(&path(m), "sync"))?;
            }
        }
        report.read_errors_corrected = corrected.get();
        Ok(report)
    }
}

/// A request planned against the failures of the moment, with its read phase done.
struct PlannedRead {
    /// The member files, a snapshot: marking a member failed (which takes the files
    /// lock again) never waits on the request itself.
    files: Vec<Option<Arc<File>>>,
    /// The failures the plan was made with.
    failed: FailedSet,
    plan: Plan,
    reads: Staged,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_error_count_halves_for_every_hour_without_one() {
        let t0 = Instant::now();
        let hour = Duration::from_secs(3600);
        let mut e = ReadErrors::default();
        for _ in 0..12 {
            e.record(t0);
        }
        assert_eq!(e.recent_at(t0 + hour - Duration::from_secs(1)), 12);
        assert_eq!(e.recent_at(t0 + hour), 6);
        assert_eq!(e.recent_at(t0 + 3 * hour), 1);
        assert_eq!(e.recent_at(t0 + 100_000 * hour), 0);
        // An error two hours on counts on top of what is left (12 / 4), and restarts
        // the clock; the total never decays.
        assert_eq!(e.record(t0 + 2 * hour), 4);
        assert_eq!(e.recent_at(t0 + 3 * hour - Duration::from_secs(1)), 4);
        assert_eq!(e.recent_at(t0 + 3 * hour), 2);
        assert_eq!(e.total, 13);
    }

    #[test]
    fn twenty_errors_in_a_burst_reach_the_limit_twenty_a_day_do_not() {
        let t0 = Instant::now();
        let mut burst = ReadErrors::default();
        for _ in 0..MAX_READ_ERRORS {
            burst.record(t0);
        }
        assert!(burst.recent_at(t0) >= MAX_READ_ERRORS);
        let mut spread = ReadErrors::default();
        let mut at = t0;
        for _ in 0..MAX_READ_ERRORS {
            spread.record(at);
            at += Duration::from_secs(72 * 60); // 20 a day
        }
        assert!(spread.recent_at(at) < 3, "{}", spread.recent_at(at));
    }
}
