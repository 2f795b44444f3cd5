//! The SSD cache tier in front of an array: a mirror of cache members holding blocks
//! of the array, chosen by a policy of `raidlab-cache` (RAIDIX's RRC/RWC, LRU, smq- or
//! bcache-like) — the same code, fed the same requests, as the simulator's cache tier,
//! so the engine and the simulator decide identically for the same trace.
//!
//! ```text
//!  NBD client ─► CachedArray (Export) ─► raidlab_cache::Cache::access ─► actions, in order:
//!      CacheRead (hit) ─► slot      ArrayRead (miss, bypass) ─► array
//!      CacheWrite (host data: dirty; admission: clean) ─► slot + log record
//!      ArrayWrite (bypass) ─► array, then the overwritten lines leave the cache
//!      Fill (refill) ─► array ─► slot      Destage (LBA order) ─► slot ─► array
//!                    ▼
//!   cache mirror (RAID 1 / RAID 10 Array): header │ metadata log │ slots     backing Array
//! ```
//!
//! Durability: every slot write is followed by a log record naming the line it holds
//! and the CRC32C of its bytes (see [`meta`]); FLUSH syncs the mirror (slots and log)
//! and then the backing array, so everything acknowledged before it survives a crash,
//! dirty lines included. A dirty line's slot is reused only after its destage to the
//! array has been synced (a dirty line the policy would drop without a destage is
//! destaged here first: a dirty line never leaves the cache before the array has it).
//! A cache member failing degrades the mirror, which keeps every dirty line on its
//! other copy.
//!
//! A slot is rewritten in place when the policy keeps a line where it is (lru, smq and
//! bcache on a write hit). A torn write there would leave bytes matching neither the
//! old record's CRC nor the new one's, and the line would be lost. So when the bytes
//! being overwritten are dirty and durable (written before the mirror's last sync,
//! which every FLUSH does: a client may count on them), the rewrite goes to a free
//! slot, its shadow, with a log record (reads of the line read the shadow). The next
//! FLUSH (or 1 MiB of waiting rewrites, or the policy destaging the line or taking the
//! shadow for a line of its own) syncs the shadows and their records, copies them
//! home, and syncs again before a shadow is reused: a torn shadow falls back on the home bytes, a torn home write on the
//! shadow. The policy never sees a shadow (its slots stay where it put them); replay
//! takes the newest copy whose CRC matches, which may be a shadow. No free slot among
//! the next 256: the home bytes are destaged to the array (synced) first instead.
//!
//! The array's superblocks record that a cache fronts it and which one (the UUID of
//! the cache mirror, see [`crate::format::superblock`]): [`CachedArray::create`] writes it once
//! the cache is whole, [`CachedArray::open`] and [`check_members`] refuse the wrong
//! cache or none, and [`CachedArray::detach`] clears it once every dirty line is on
//! the array.
//!
//! Requests are served one at a time under the tier's lock (the policy is one
//! sequential machine, as in the simulator); the uncached path is untouched.

pub mod meta;
pub mod store;

use crate::error::{Error, Result};
use crate::net::nbd::export::Export;
use crate::Array;
use crc32c::crc32c;
use meta::{Entry, Kind, Record};
use raidlab_cache::{Action, Area, Cache, CacheConfig, Op, Policy, Request, WriteReason};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use store::Store;

/// Bytes of a cache line (slot): the unit the policy admits, evicts and destages.
pub const LINE_BYTES: u64 = 4096;
pub use raidlab_cache::REGION_BYTES_MAX;

/// The policy's code in the cache header.
fn policy_code(p: Policy) -> u8 {
    Policy::ALL.iter().position(|&q| q == p).expect("listed") as u8 + 1
}

fn policy_of_code(c: u8) -> Option<Policy> {
    Policy::ALL.get((c as usize).checked_sub(1)?).copied()
}

fn area_code(a: Area) -> u8 {
    match a {
        Area::Main => 0,
        Area::Rrc => 1,
        Area::Rwc => 2,
    }
}

fn area_of_code(c: u8) -> Area {
    match c {
        1 => Area::Rrc,
        2 => Area::Rwc,
        _ => Area::Main,
    }
}

/// The region size a cache of `cache_bytes` gets by default: the one rule of
/// [`raidlab_cache::region_bytes_default`], in this tier's lines.
pub fn region_bytes_default(cache_bytes: u64) -> u64 {
    raidlab_cache::region_bytes_default(cache_bytes, LINE_BYTES)
}

/// What the engine did, by line.
#[derive(Debug, Default, Clone, Copy)]
pub struct EngineCounters {
    /// Host lines read from slots (hits).
    pub read_hit_lines: u64,
    /// Host bytes read from the array.
    pub array_read_bytes: u64,
    /// Lines written into slots (host data, admissions, refills).
    pub slot_write_lines: u64,
    /// Bytes written from slots to the array.
    pub destaged_bytes: u64,
    /// Syncs of the array that destages needed before their slots were reused.
    pub destage_syncs: u64,
    /// Dirty lines the policy let go without a destage that the engine destaged.
    pub guarded_destages: u64,
    /// Durable dirty lines (written before the mirror's last sync) a write hit rewrote
    /// in place with no free slot to shadow the rewrite: destaged first, so a torn slot
    /// write cannot lose them.
    pub rewrite_destages: u64,
    /// Rewrites copied home from their shadow slots (see `apply_rewrites`).
    pub rewrites_home: u64,
}

struct Inner {
    cache: Cache,
    store: Store,
    /// slot -> the line it holds, as the log says.
    slots: BTreeMap<u64, Entry>,
    /// line -> its slot.
    lines: BTreeMap<u64, u64>,
    counters: EngineCounters,
    actions: Vec<Action>,
    /// Records of the request being served, appended to the log at its end.
    records: Vec<Record>,
    /// Destaged lines whose array writes no sync covers yet.
    unsynced_destages: Vec<Record>,
    /// Slots written since the mirror was last synced (by [`CachedArray::sync_mirror`]:
    /// every FLUSH does): none of them overwrote a durable copy of its own line in
    /// place, whose last durable copy is still where it was (the old slot is kept, see
    /// `freed_since_sync`), so rewriting them in place risks nothing a client counts on.
    written_since_sync: std::collections::BTreeSet<u64>,
    /// home slot -> the rewrite waiting in its shadow for the next FLUSH (see
    /// [`CachedArray::apply_rewrites`]); reads of the home slot read the shadow.
    rewrites: BTreeMap<u64, Rewrite>,
    /// shadow slot -> its home slot.
    shadows: BTreeMap<u64, u64>,
    /// Slots a line moved out of since the mirror was last synced: they hold its last
    /// durable copy until its new one is synced, so nothing is written there before.
    freed_since_sync: std::collections::BTreeSet<u64>,
    /// Where the search for a free slot goes on, counted down from the last slot.
    shadow_cursor: u64,
    /// Where every request goes, when `--cache-trace` asks.
    trace: Option<TraceLog>,
}

/// `--cache-trace`: the requests the policy sees, as MSR Cambridge CSV.
struct TraceLog {
    out: std::io::BufWriter<std::fs::File>,
    start: std::time::Instant,
}

impl TraceLog {
    /// One request's line; a trace that cannot be written does not fail the request.
    fn record(&mut self, op: Op, offset_bytes: u64, len_bytes: u64) {
        let ticks = self.start.elapsed().as_nanos() / 100;
        let kind = if op == Op::Read { "Read" } else { "Write" };
        let _ = writeln!(
            self.out,
            "{ticks},raidlab,0,{kind},{offset_bytes},{len_bytes},0"
        );
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Rewrites that may wait in shadow slots for the next FLUSH (1 MiB of lines); more
/// are copied home at once.
const REWRITES_WAITING_MAX: usize = 256;
/// Slots looked at for a free one to shadow a rewrite; none free among them: the old
/// bytes are destaged to the array (synced) before the rewrite goes in place.
const SHADOW_PROBES_MAX: u64 = 256;

/// A host write to a line's own slot, held in a free slot (its shadow) until the next
/// FLUSH copies it home (see [`CachedArray::apply_rewrites`]).
struct Rewrite {
    block: u64,
    shadow: u64,
    data_crc: u32,
    dirty: bool,
    area: u8,
}

/// An array with a cache tier in front: what `serve` exports when given cache members.
pub struct CachedArray {
    backing: Arc<Array>,
    inner: Mutex<Inner>,
    policy: Policy,
    paths: Vec<PathBuf>,
}

/// The policy's configuration for a cache of `slots` lines.
fn config(policy: Policy, slots: u64, region_bytes: u64) -> CacheConfig {
    let mut c = CacheConfig::new(policy, slots * LINE_BYTES);
    c.line_bytes = LINE_BYTES;
    c.region_bytes = region_bytes;
    c
}

fn config_error(e: raidlab_cache::ConfigError) -> Error {
    Error::Input(format!("cache-policy: {e}"))
}

impl CachedArray {
    /// Creates an empty cache on `paths` (files created or extended to `member_bytes`
    /// when given, and preallocated) in front of `backing`; `region_bytes` `None` takes
    /// [`region_bytes_default`].
    pub fn create(
        backing: Arc<Array>,
        paths: &[PathBuf],
        member_bytes: Option<u64>,
        policy: Policy,
        region_bytes: Option<u64>,
        force: impl Into<crate::format::probe::Overwrite>,
    ) -> Result<Self> {
        Self::create_files(
            backing,
            paths,
            member_bytes,
            policy,
            region_bytes,
            force.into(),
            false,
        )
    }

    /// [`CachedArray::create`], the cache member files left sparse when `sparse` (as
    /// `create --sparse` leaves the array's).
    pub fn create_files(
        backing: Arc<Array>,
        paths: &[PathBuf],
        member_bytes: Option<u64>,
        policy: Policy,
        region_bytes: Option<u64>,
        force: crate::format::probe::Overwrite,
        sparse: bool,
    ) -> Result<Self> {
        let uuid = backing.status().uuid;
        if let Some(c) = backing.cache_uuid() {
            return Err(Error::Input(format!(
                "--cache-members: array {uuid:032x} already has a cache ({c:032x}); \
                 detach-cache it first"
            )));
        }
        // The region size depends on the mirror's size: check it on a probe config
        // before anything is written to the members is not possible (the mirror's
        // capacity is known once created), so an error leaves a created, empty cache.
        let region = region_bytes.unwrap_or(0);
        let mut store = Store::create(
            paths,
            member_bytes,
            uuid,
            policy_code(policy),
            LINE_BYTES,
            region,
            force,
            sparse,
        )?;
        let slots = store.header().slots;
        let region = region_bytes.unwrap_or_else(|| region_bytes_default(slots * LINE_BYTES));
        store.set_region_bytes(region)?;
        let cache = Cache::new(config(policy, slots, region)).map_err(config_error)?;
        // The cache is whole and synced: only now do the superblocks say the array has
        // it (a crash before leaves the array uncached and the new cache unused).
        let cache_uuid = store.mirror().status().uuid;
        backing.set_cache_uuid(Some(cache_uuid))?;
        Ok(Self::with(backing, store, cache, Vec::new(), policy, paths))
    }

    /// Opens the cache on `paths` in front of `backing`: assembles its mirror,
    /// replays its log and gives the policy back the lines it held.
    /// Refused, before anything is written, unless the array's superblocks record this
    /// cache (see [`check_members`]).
    pub fn open(backing: Arc<Array>, paths: &[PathBuf]) -> Result<Self> {
        check_members(&backing, Some(paths))?;
        let (store, entries) = Store::open(paths, backing.status().uuid)?;
        let mirror = store.mirror().status().uuid;
        if backing.cache_uuid() != Some(mirror) {
            // The members' superblocks disagree among themselves: the assembled
            // mirror, not the first readable member, is the cache.
            return Err(mismatch(&backing, mirror));
        }
        let h = *store.header();
        let policy = policy_of_code(h.policy).ok_or_else(|| {
            Error::Input(format!(
                "--cache-members: policy code {} in the cache header is not known to this build",
                h.policy
            ))
        })?;
        let cfg = config(policy, h.slots, h.region_bytes);
        let restored = restore_entries(policy, &entries, h.region_bytes);
        match Cache::restore(cfg.clone(), restored) {
            Ok(cache) => Ok(Self::with(backing, store, cache, entries, policy, paths)),
            Err(e) => {
                // The policy cannot take the lines back as they are: hand every dirty
                // line to the array and start empty (nothing is lost, only hits).
                eprintln!("raidlab-engine: cache: the policy refused the replayed map ({e}); destaging it and starting empty");
                let tier = Self::with(
                    backing,
                    store,
                    Cache::new(cfg).map_err(config_error)?,
                    entries,
                    policy,
                    paths,
                );
                tier.forget_all()?;
                Ok(tier)
            }
        }
    }

    /// For an array whose superblocks record no cache: the cache on `paths` whose
    /// header names the array (one made by a build before the superblocks recorded
    /// caches) is recorded in them, then opened. Only right when the array was not
    /// written without that cache since (its dirty lines would then be older than the
    /// array's blocks): `detach-cache --adopt` asks for it by name.
    pub fn adopt(backing: Arc<Array>, paths: &[PathBuf]) -> Result<Self> {
        if let Some(c) = backing.cache_uuid() {
            return Err(Error::Input(format!(
                "--adopt: array {:032x} records its cache ({c:032x}) already; leave --adopt out",
                backing.status().uuid
            )));
        }
        // Assembles the mirror and checks that its header names this array.
        let (store, _) = Store::open(paths, backing.status().uuid)?;
        let mirror = store.mirror().status().uuid;
        store.mirror().close()?;
        drop(store);
        backing.set_cache_uuid(Some(mirror))?;
        Self::open(backing, paths)
    }

    fn with(
        backing: Arc<Array>,
        store: Store,
        cache: Cache,
        entries: Vec<Entry>,
        policy: Policy,
        paths: &[PathBuf],
    ) -> Self {
        let slots: BTreeMap<u64, Entry> = entries.iter().map(|e| (e.slot, *e)).collect();
        let lines = entries.iter().map(|e| (e.block, e.slot)).collect();
        Self {
            backing,
            inner: Mutex::new(Inner {
                cache,
                store,
                slots,
                lines,
                counters: EngineCounters::default(),
                actions: Vec::new(),
                records: Vec::new(),
                unsynced_destages: Vec::new(),
                written_since_sync: Default::default(),
                rewrites: BTreeMap::new(),
                shadows: BTreeMap::new(),
                freed_since_sync: Default::default(),
                shadow_cursor: 0,
                trace: None,
            }),
            policy,
            paths: paths.to_vec(),
        }
    }

    /// The array behind the cache.
    pub fn backing(&self) -> &Arc<Array> {
        &self.backing
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Runs `f` on the cache mirror (status, failing a member).
    pub fn with_mirror<T>(&self, f: impl FnOnce(&Arc<Array>) -> T) -> T {
        let inner = self.inner.lock().expect("cache lock");
        f(inner.store.mirror())
    }

    /// The policy's counters now.
    pub fn policy_counters(&self) -> raidlab_cache::Counters {
        self.inner
            .lock()
            .expect("cache lock")
            .cache
            .counters()
            .clone()
    }

    /// The engine's counters now.
    pub fn counters(&self) -> EngineCounters {
        self.inner.lock().expect("cache lock").counters
    }

    /// Lines cached now (as the log says), and how many of them are dirty.
    pub fn occupancy(&self) -> (u64, u64) {
        let inner = self.inner.lock().expect("cache lock");
        let dirty = inner.slots.values().filter(|e| e.dirty).count() as u64;
        (inner.slots.len() as u64, dirty)
    }

    /// Appends every request from now on to `path` as an MSR Cambridge CSV line
    /// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` (the order the
    /// policy saw them; timestamps in 100 ns ticks since the trace began, never
    /// decreasing; host `raidlab`, disk 0, response time 0), for replaying the same
    /// trace elsewhere: `raidlab replay --format msr` reads it as it is.
    pub fn record_trace(&self, path: &std::path::Path) -> Result<()> {
        let f = std::fs::File::create(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            op: "create trace",
            source,
        })?;
        self.inner.lock().expect("cache lock").trace = Some(TraceLog {
            out: std::io::BufWriter::new(f),
            start: std::time::Instant::now(),
        });
        Ok(())
    }

    /// The cache's report: policy, sizes, hit ratios per area, admissions, evictions,
    /// destage traffic (the policy's counters and the engine's), the mirror's state.
    pub fn stats_json(&self) -> Value {
        let inner = self.inner.lock().expect("cache lock");
        let p = inner.cache.counters();
        let c = inner.counters;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let mirror = inner.store.mirror().status();
        let dirty = inner.slots.values().filter(|e| e.dirty).count();
        json!({
            "policy": self.policy.name(),
            "line_bytes": LINE_BYTES,
            "region_bytes": inner.store.header().region_bytes,
            "slots": inner.store.header().slots,
            "cached_lines": inner.slots.len(),
            "dirty_lines": dirty,
            "members": self.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "mirror_level": mirror.geometry.level().to_string(),
            "mirror_failed": (0..mirror.geometry.members()).filter(|&m| mirror.failed.contains(m)).collect::<Vec<_>>(),
            "requests": p.requests,
            "read_lines": p.read_lines,
            "read_hit_lines": p.read_hit_lines(),
            "read_hit_ratio": ratio(p.read_hit_lines(), p.read_lines),
            "read_hit_lines_rrc": p.read_hit_lines_rrc,
            "read_hit_lines_rwc": p.read_hit_lines_rwc,
            "read_hit_lines_main": p.read_hit_lines_main,
            "write_lines": p.write_lines,
            "write_hit_lines": p.write_hit_lines,
            "write_cached_lines": p.write_cached_lines,
            "write_hit_ratio": ratio(p.write_hit_lines, p.write_lines),
            "read_admitted_lines": p.read_admitted_lines,
            "refill_lines": p.refill_lines,
            "evicted_clean_lines": p.evicted_clean_lines,
            "evicted_dirty_lines": p.evicted_dirty_lines,
            "evicted_regions_rrc": p.evicted_regions_rrc,
            "evicted_regions_rwc": p.evicted_regions_rwc,
            "invalidated_lines": p.invalidated_lines,
            "destaged_bytes": c.destaged_bytes,
            "destage_syncs": c.destage_syncs,
            "engine_read_hit_lines": c.read_hit_lines,
            "engine_guarded_destages": c.guarded_destages,
            "engine_rewrite_destages": c.rewrite_destages,
            "engine_rewrites_home": c.rewrites_home,
            "log_generation": inner.store.generation(),
        })
    }

    /// Reads `buf.len()` bytes at `offset_bytes` through the cache.
    pub fn read(&self, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        let mut inner = self.inner.lock().expect("cache lock");
        self.access(&mut inner, Op::Read, offset_bytes, Host::Read(buf))
    }

    /// Writes `data` at `offset_bytes` through the cache; `fua`: durable on return.
    pub fn write(&self, offset_bytes: u64, data: &[u8], fua: bool) -> Result<()> {
        let mut inner = self.inner.lock().expect("cache lock");
        self.access(&mut inner, Op::Write, offset_bytes, Host::Write(data))?;
        if fua {
            self.flush_locked(&mut inner)?;
        }
        Ok(())
    }

    /// Makes every write acknowledged so far durable: the mirror (slots and log)
    /// first, then the array.
    pub fn flush(&self) -> Result<()> {
        let mut inner = self.inner.lock().expect("cache lock");
        self.flush_locked(&mut inner)
    }

    fn flush_locked(&self, inner: &mut Inner) -> Result<()> {
        if let Some(t) = inner.trace.as_mut() {
            let _ = t.flush();
        }
        // Sending rewrites home ends with a sync of the mirror: the one a FLUSH needs.
        if !self.apply_rewrites(inner)? {
            self.sync_mirror(inner)?;
        }
        self.backing.flush()
    }

    /// `detach-cache`: hands every dirty line to the array, empties the cache and
    /// takes it out of the array's superblocks; returns the bytes destaged. The array
    /// is then used alone (close it after). Crash-safe by its order: the destages are
    /// synced (and the log says so) before any superblock changes, so a crash leaves
    /// either the array still cached with its cache intact, or the array detached with
    /// every line.
    pub fn detach(self) -> Result<u64> {
        self.open_for_writes()?;
        self.backing.open_for_writes()?;
        let mut bytes = self.destage_all()?;
        // Any dirty line the log has and the policy did not list goes too.
        bytes += self.forget_all()?;
        assert_eq!(
            self.occupancy(),
            (0, 0),
            "every line destaged and forgotten"
        );
        self.close()?;
        self.backing.set_cache_uuid(None)?;
        Ok(bytes)
    }

    /// Destages every dirty line to the array (the policy's flush: LBA order) and
    /// syncs both; returns the bytes destaged.
    pub fn destage_all(&self) -> Result<u64> {
        let mut inner = self.inner.lock().expect("cache lock");
        let before = inner.counters.destaged_bytes;
        let mut actions = std::mem::take(&mut inner.actions);
        actions.clear();
        inner.cache.flush(&mut actions);
        let r = self.execute(&mut inner, &actions, 0, Host::None);
        inner.actions = actions;
        r?;
        self.finish(&mut inner)?;
        self.flush_locked(&mut inner)?;
        Ok(inner.counters.destaged_bytes - before)
    }

    /// Syncs the mirror and marks it clean (dirty lines stay in the cache and are
    /// found again at the next open).
    pub fn close(&self) -> Result<()> {
        let mut inner = self.inner.lock().expect("cache lock");
        self.flush_locked(&mut inner)?;
        inner.store.mirror().close()
    }

    /// `replace-cache`: rebuilds the lowest missing or failed member of the cache
    /// mirror onto `file` (opened from `new_path`), copying every slot and the log
    /// from the surviving copy; returns the mirror role rebuilt. Refused, before
    /// `file` is written, when the mirror lacks no member, or `file` carries a raidlab
    /// superblock or write journal (another array's member, journal or cache member).
    pub fn replace_member(
        &self,
        file: std::fs::File,
        new_path: &std::path::Path,
        mut progress: impl FnMut(u32, u64, u64),
    ) -> Result<u32> {
        refuse_carrying_raidlab_data(&file, new_path)?;
        self.with_mirror(|m| {
            let Some(role) = m.failed().iter().next() else {
                return Err(Error::Input(format!(
                    "NEW: cache {:032x} lacks no member (every one of its {} is active); \
                     nothing to replace",
                    m.status().uuid,
                    m.geometry().members()
                )));
            };
            m.rebuild_onto(role, file, new_path, None, |done, total| {
                progress(role, done, total)
            })?;
            Ok(role)
        })
    }

    /// Marks the mirror open for writes (see [`Array::open_for_writes`]).
    pub fn open_for_writes(&self) -> Result<()> {
        self.with_mirror(|m| m.open_for_writes())
    }

    /// Destages every dirty line the log knows (LBA order), syncs the array, and
    /// empties the log (for a policy that cannot restore the replayed map, and
    /// `detach`); returns the bytes destaged.
    fn forget_all(&self) -> Result<u64> {
        let mut inner = self.inner.lock().expect("cache lock");
        self.apply_rewrites(&mut inner)?;
        let mut dirty: Vec<(u64, u64)> = inner
            .slots
            .values()
            .filter(|e| e.dirty)
            .map(|e| (e.block, e.slot))
            .collect();
        dirty.sort_unstable();
        let bytes = dirty.len() as u64 * LINE_BYTES;
        for (block, slot) in dirty {
            self.destage_line(&mut inner, block, slot)?;
        }
        self.backing.flush()?;
        inner.unsynced_destages.clear();
        inner.slots.clear();
        inner.lines.clear();
        inner.store.snapshot(&[])?;
        Ok(bytes)
    }

    /// One request: the policy decides, the actions run in order, the log gets the
    /// request's records.
    fn access(&self, inner: &mut Inner, op: Op, offset_bytes: u64, mut host: Host) -> Result<()> {
        let len_bytes = host.len() as u64;
        if let Some(t) = inner.trace.as_mut() {
            t.record(op, offset_bytes, len_bytes);
        }
        let request = Request {
            stream: 0,
            op,
            offset_bytes,
            len_bytes,
        };
        let mut actions = std::mem::take(&mut inner.actions);
        actions.clear();
        inner.cache.access(&request, &mut actions);
        let r = self.execute(inner, &actions, offset_bytes, host.reborrow());
        inner.actions = actions;
        r?;
        self.finish(inner)
    }

    /// Syncs the destages still unsynced and appends the request's records.
    fn finish(&self, inner: &mut Inner) -> Result<()> {
        self.sync_destages(inner)?;
        let records = std::mem::take(&mut inner.records);
        let r = {
            let Inner {
                store,
                slots,
                cache,
                rewrites,
                ..
            } = &mut *inner;
            store.append(&records, || snapshot_entries(cache, slots, rewrites))
        };
        inner.records = records;
        inner.records.clear();
        r
    }

    fn execute(
        &self,
        inner: &mut Inner,
        actions: &[Action],
        base: u64,
        mut host: Host,
    ) -> Result<()> {
        for a in actions {
            match *a {
                Action::CacheRead {
                    lba_bytes,
                    len_bytes,
                    cache_offset_bytes,
                } => {
                    let buf = host.read_range(base, lba_bytes, len_bytes);
                    self.read_slots(inner, cache_offset_bytes, buf)?;
                    inner.counters.read_hit_lines += len_bytes / LINE_BYTES;
                }
                Action::ArrayRead {
                    lba_bytes,
                    len_bytes,
                } => {
                    let buf = host.read_range(base, lba_bytes, len_bytes);
                    store::read_big(&self.backing, lba_bytes, buf)?;
                    inner.counters.array_read_bytes += len_bytes;
                }
                Action::CacheWrite {
                    lba_bytes,
                    len_bytes,
                    cache_offset_bytes,
                    reason,
                } => {
                    let data = host.data_range(base, lba_bytes, len_bytes);
                    let dirty = reason == WriteReason::Host;
                    let area = self.area_for(dirty);
                    self.put_lines(inner, lba_bytes, cache_offset_bytes, data, dirty, area)?;
                }
                Action::ArrayWrite {
                    lba_bytes,
                    len_bytes,
                } => {
                    let data = host.data_range(base, lba_bytes, len_bytes);
                    store::write_big(&self.backing, lba_bytes, data)?;
                    self.drop_lines(inner, lba_bytes, len_bytes);
                }
                Action::Fill {
                    lba_bytes,
                    len_bytes,
                    cache_offset_bytes,
                } => {
                    let mut data = vec![0u8; len_bytes as usize];
                    store::read_big(&self.backing, lba_bytes, &mut data)?;
                    let area = self.area_for(false);
                    self.put_lines(inner, lba_bytes, cache_offset_bytes, &data, false, area)?;
                }
                Action::Destage {
                    lba_bytes,
                    len_bytes,
                    cache_offset_bytes,
                } => self.destage(inner, lba_bytes, len_bytes, cache_offset_bytes)?,
            }
        }
        Ok(())
    }

    /// The policy's destage of `len_bytes` of lines from `cache_offset_bytes` to the
    /// array at `lba_bytes` (rewrites waiting in those slots go home first).
    fn destage(
        &self,
        inner: &mut Inner,
        lba_bytes: u64,
        len_bytes: u64,
        cache_offset_bytes: u64,
    ) -> Result<()> {
        let slots =
            cache_offset_bytes / LINE_BYTES..(cache_offset_bytes + len_bytes).div_ceil(LINE_BYTES);
        if inner.rewrites.range(slots).next().is_some() {
            self.apply_rewrites(inner)?;
        }
        let mut data = vec![0u8; len_bytes as usize];
        inner.store.read_at(cache_offset_bytes, &mut data)?;
        store::write_big(&self.backing, lba_bytes, &data)?;
        inner.counters.destaged_bytes += len_bytes;
        for i in 0..len_bytes / LINE_BYTES {
            let block = lba_bytes / LINE_BYTES + i;
            let slot = cache_offset_bytes / LINE_BYTES + i;
            self.mark_destaged(inner, block, slot);
        }
        Ok(())
    }

    fn area_for(&self, dirty: bool) -> u8 {
        match (self.policy, dirty) {
            (Policy::Raidix, true) => area_code(Area::Rwc),
            (Policy::Raidix, false) => area_code(Area::Rrc),
            _ => area_code(Area::Main),
        }
    }

    /// Writes `data` (whole lines of `lba_bytes`) into the slots from
    /// `cache_offset_bytes`, after making sure no dirty line of another block is lost
    /// there, and records the new mappings. A line rewriting in place bytes a FLUSH may
    /// have acknowledged goes to a shadow slot instead (see [`Self::apply_rewrites`]).
    fn put_lines(
        &self,
        inner: &mut Inner,
        lba_bytes: u64,
        cache_offset_bytes: u64,
        data: &[u8],
        dirty: bool,
        area: u8,
    ) -> Result<()> {
        assert!(
            lba_bytes.is_multiple_of(LINE_BYTES) && cache_offset_bytes.is_multiple_of(LINE_BYTES)
        );
        assert!((data.len() as u64).is_multiple_of(LINE_BYTES));
        let n = data.len() as u64 / LINE_BYTES;
        let (first_block, first_slot) = (lba_bytes / LINE_BYTES, cache_offset_bytes / LINE_BYTES);
        let line = |i: u64| &data[(i * LINE_BYTES) as usize..((i + 1) * LINE_BYTES) as usize];
        // A slot about to hold another block, or one a rewrite borrowed as its shadow:
        // the waiting rewrites go home first.
        if (0..n).any(|i| {
            let slot = first_slot + i;
            inner.shadows.contains_key(&slot)
                || inner
                    .rewrites
                    .get(&slot)
                    .is_some_and(|r| r.block != first_block + i)
        }) {
            self.apply_rewrites(inner)?;
        }
        let mut direct = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (block, slot) = (first_block + i, first_slot + i);
            if self.goes_direct(inner, block, slot, line(i), dirty, area)? {
                direct.push(i);
            }
        }
        // A slot is reused only once the array holds what it had.
        self.sync_destages(inner)?;
        // ... or, when a line just moved out of it, once its new copy is synced.
        if direct
            .iter()
            .any(|&i| inner.freed_since_sync.contains(&(first_slot + i)))
        {
            self.sync_mirror(inner)?;
        }
        for run in direct.chunk_by(|a, b| a + 1 == *b) {
            let (i, k) = (run[0], run.len() as u64);
            let bytes = &data[(i * LINE_BYTES) as usize..((i + k) * LINE_BYTES) as usize];
            inner.store.write_at((first_slot + i) * LINE_BYTES, bytes)?;
        }
        for &i in &direct {
            self.map_line(inner, first_block + i, first_slot + i, line(i), dirty, area);
        }
        if inner.rewrites.len() > REWRITES_WAITING_MAX {
            self.apply_rewrites(inner)?;
        }
        Ok(())
    }

    /// Whether line `block` goes straight into its `slot` (false: it went to a shadow
    /// slot, see [`Self::shadow_rewrite`]). Before it does, what the slot must not lose
    /// is destaged: the old bytes of a rewrite with no shadow free, or another block's
    /// dirty line.
    fn goes_direct(
        &self,
        inner: &mut Inner,
        block: u64,
        slot: u64,
        line: &[u8],
        dirty: bool,
        area: u8,
    ) -> Result<bool> {
        let flushed_dirty = inner
            .slots
            .get(&slot)
            .is_some_and(|o| o.dirty && o.block == block)
            && !inner.written_since_sync.contains(&slot);
        if inner.rewrites.contains_key(&slot) || flushed_dirty {
            if self.shadow_rewrite(inner, block, slot, line, dirty, area)? {
                return Ok(false);
            }
            // No free slot: the array keeps the old bytes (synced below) instead.
            self.destage_line(inner, block, slot)?;
            inner.counters.rewrite_destages += 1;
        }
        if let Some(old) = inner.slots.get(&slot).copied() {
            if old.dirty && old.block != block {
                self.destage_line(inner, old.block, slot)?;
                inner.counters.guarded_destages += 1;
            }
        }
        Ok(true)
    }

    /// Writes a rewrite of line `block` (home `slot`) to its shadow, a free slot (the
    /// one it has if it waits already), with a log record: a crash before it goes home
    /// finds the line there, or, the shadow torn, its home bytes. False when no free
    /// slot was found.
    fn shadow_rewrite(
        &self,
        inner: &mut Inner,
        block: u64,
        slot: u64,
        data: &[u8],
        dirty: bool,
        area: u8,
    ) -> Result<bool> {
        let shadow = match inner.rewrites.get(&slot) {
            Some(r) => r.shadow,
            None => match self.free_slot(inner) {
                Some(s) => s,
                None => return Ok(false),
            },
        };
        inner.store.write_at(shadow * LINE_BYTES, data)?;
        inner.counters.slot_write_lines += 1;
        let data_crc = crc32c(data);
        inner
            .records
            .push(Record::map(block, shadow, dirty, data_crc, area));
        inner.shadows.insert(shadow, slot);
        inner.rewrites.insert(
            slot,
            Rewrite {
                block,
                shadow,
                data_crc,
                dirty,
                area,
            },
        );
        Ok(true)
    }

    /// A slot no line and no shadow holds, looked for downwards from where the last
    /// search stopped (from the top: the policies fill slots from the bottom, and a
    /// shadow the policy takes for a line sends every rewrite home early), at most
    /// [`SHADOW_PROBES_MAX`] of them.
    fn free_slot(&self, inner: &mut Inner) -> Option<u64> {
        let slots = inner.store.header().slots;
        for _ in 0..SHADOW_PROBES_MAX.min(slots) {
            let s = (slots - 1) - inner.shadow_cursor % slots;
            inner.shadow_cursor = (inner.shadow_cursor + 1) % slots;
            if !inner.slots.contains_key(&s)
                && !inner.shadows.contains_key(&s)
                && !inner.freed_since_sync.contains(&s)
            {
                return Some(s);
            }
        }
        None
    }

    /// Records that `slot` now holds `data`, line `block`: the maps and a log record.
    fn map_line(
        &self,
        inner: &mut Inner,
        block: u64,
        slot: u64,
        data: &[u8],
        dirty: bool,
        area: u8,
    ) {
        inner.written_since_sync.insert(slot);
        inner.counters.slot_write_lines += 1;
        if let Some(old) = inner.slots.remove(&slot) {
            if inner.lines.get(&old.block) == Some(&slot) {
                inner.lines.remove(&old.block);
            }
        }
        if let Some(prev) = inner.lines.insert(block, slot) {
            if prev != slot {
                inner.slots.remove(&prev);
                inner.freed_since_sync.insert(prev);
                // The line moved: a rewrite waiting for its old slot is older than this.
                self.forget_rewrite(inner, prev);
            }
        }
        let data_crc = crc32c(data);
        let seq = inner.records.len() as u64;
        inner.slots.insert(
            slot,
            Entry {
                block,
                slot,
                dirty,
                data_crc,
                area,
                seq,
            },
        );
        inner
            .records
            .push(Record::map(block, slot, dirty, data_crc, area));
    }

    /// Drops the rewrite waiting for home `slot`, if any, and frees its shadow.
    fn forget_rewrite(&self, inner: &mut Inner, slot: u64) {
        if let Some(r) = inner.rewrites.remove(&slot) {
            inner.shadows.remove(&r.shadow);
        }
    }

    /// Copies the rewrites waiting in shadow slots home. Their shadows and records are
    /// synced first, so a torn home write falls back on the shadow; the home writes
    /// are synced before the shadows are free again (a new line may take one). False
    /// when none waited (nothing done).
    fn apply_rewrites(&self, inner: &mut Inner) -> Result<bool> {
        if inner.rewrites.is_empty() {
            return Ok(false);
        }
        self.sync_mirror(inner)?;
        let rewrites = std::mem::take(&mut inner.rewrites);
        let mut line = vec![0u8; LINE_BYTES as usize];
        for (slot, r) in rewrites {
            // A rewrite waits only while its line stays in its home slot (a line
            // leaving the cache or moving takes its rewrite along: `drop_lines`,
            // `map_line`); nothing else is written over.
            if inner.slots.get(&slot).is_none_or(|e| e.block != r.block) {
                continue;
            }
            inner.store.read_at(r.shadow * LINE_BYTES, &mut line)?;
            debug_assert_eq!(crc32c(&line), r.data_crc);
            inner.store.write_at(slot * LINE_BYTES, &line)?;
            self.map_line(inner, r.block, slot, &line, r.dirty, r.area);
            inner.counters.rewrites_home += 1;
        }
        self.sync_mirror(inner)?;
        inner.shadows.clear();
        Ok(true)
    }

    /// Appends the records so far and syncs the mirror: every slot and record written
    /// is durable (a FLUSH acknowledges nothing by it).
    fn sync_mirror(&self, inner: &mut Inner) -> Result<()> {
        self.finish(inner)?;
        inner.store.flush()?;
        inner.freed_since_sync.clear();
        inner.written_since_sync.clear();
        Ok(())
    }

    /// Reads `buf.len()` bytes of slots from `offset_bytes`, a home slot whose
    /// rewrite waits read from its shadow.
    fn read_slots(&self, inner: &Inner, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        inner.store.read_at(offset_bytes, buf)?;
        let end_bytes = offset_bytes + buf.len() as u64;
        for (&slot, r) in inner
            .rewrites
            .range(offset_bytes / LINE_BYTES..end_bytes.div_ceil(LINE_BYTES))
        {
            // The part of the slot's line inside [offset, end).
            let lo = (slot * LINE_BYTES).max(offset_bytes);
            let hi = ((slot + 1) * LINE_BYTES).min(end_bytes);
            let to = (lo - offset_bytes) as usize;
            let from = lo - slot * LINE_BYTES;
            inner.store.read_at(
                r.shadow * LINE_BYTES + from,
                &mut buf[to..to + (hi - lo) as usize],
            )?;
        }
        Ok(())
    }

    /// Writes line `block` from `slot` to the array (synced before the slot is
    /// reused, by [`Self::sync_destages`]).
    fn destage_line(&self, inner: &mut Inner, block: u64, slot: u64) -> Result<()> {
        let mut data = vec![0u8; LINE_BYTES as usize];
        inner.store.read_at(slot * LINE_BYTES, &mut data)?;
        self.backing.write(block * LINE_BYTES, &data, false)?;
        inner.counters.destaged_bytes += LINE_BYTES;
        self.mark_destaged(inner, block, slot);
        Ok(())
    }

    fn mark_destaged(&self, inner: &mut Inner, block: u64, slot: u64) {
        if let Some(e) = inner.slots.get_mut(&slot).filter(|e| e.block == block) {
            e.dirty = false;
        }
        inner.unsynced_destages.push(Record {
            kind: Kind::Clean,
            block,
            slot,
            data_crc: 0,
            count: 0,
            area: 0,
        });
    }

    /// Syncs the array when destages have written to it since the last sync, then
    /// records those lines clean.
    fn sync_destages(&self, inner: &mut Inner) -> Result<()> {
        if inner.unsynced_destages.is_empty() {
            return Ok(());
        }
        self.backing.flush()?;
        inner.counters.destage_syncs += 1;
        let done = std::mem::take(&mut inner.unsynced_destages);
        inner.records.extend(done);
        Ok(())
    }

    /// The lines `[lba, lba + len)` overlaps leave the cache: the array got newer bytes
    /// (a dirty one among them was destaged before, by the policy's pass-through or by
    /// [`Self::put_lines`]' guard, or is overwritten whole by these).
    fn drop_lines(&self, inner: &mut Inner, lba_bytes: u64, len_bytes: u64) {
        let (lo, hi) = (
            lba_bytes / LINE_BYTES,
            (lba_bytes + len_bytes).div_ceil(LINE_BYTES),
        );
        let gone: Vec<(u64, u64)> = inner.lines.range(lo..hi).map(|(&b, &s)| (b, s)).collect();
        for (block, slot) in gone {
            inner.lines.remove(&block);
            inner.slots.remove(&slot);
            self.forget_rewrite(inner, slot);
            inner.records.push(Record {
                kind: Kind::Drop,
                block,
                slot,
                data_crc: 0,
                count: 0,
                area: 0,
            });
        }
    }
}

/// Checks the cache members given (`None`: none) against what the array's superblocks
/// record: a cached array needs its own cache's members, an uncached one none. One
/// clear error naming `--cache-members` otherwise (exit code 2 at the command line).
/// The cache is known by its members' superblocks (the UUID of the mirror they form);
/// nothing is written.
pub fn check_members(backing: &Array, given: Option<&[PathBuf]>) -> Result<()> {
    let array = backing.status().uuid;
    match (backing.cache_uuid(), given) {
        (None, None) => Ok(()),
        (Some(cache), None) => Err(Error::Input(format!(
            "--cache-members: array {array:032x} has an SSD cache in front ({cache:032x}) \
             that may hold its newest data; give its --cache-members (detach-cache with \
             them hands every line back to the array and leaves it alone)"
        ))),
        (None, Some(_)) => Err(Error::Input(format!(
            "--cache-members: array {array:032x} has no cache in front (attach-cache puts \
             one there; a cache made by a build before superblocks recorded caches: \
             detach-cache --adopt)"
        ))),
        (Some(cache), Some(paths)) => {
            match paths
                .iter()
                .find_map(|p| crate::array::read_superblock(p).ok())
            {
                Some(sb) if sb.array_uuid == cache => Ok(()),
                Some(sb) => Err(mismatch(backing, sb.array_uuid)),
                None => Err(Error::Input(format!(
                    "--cache-members: none of them carries a raidlab superblock; array \
                     {array:032x}'s cache is {cache:032x}"
                ))),
            }
        }
    }
}

/// Refuses `file` when its first bytes are a raidlab superblock or write journal
/// header: a rebuild would overwrite what another array (or this one) still needs.
pub fn refuse_carrying_raidlab_data(file: &std::fs::File, path: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; crate::format::superblock::SUPERBLOCK_BYTES];
    // A short or unreadable file reads as zeros: no header.
    let _ = file.read_at(&mut head, 0);
    let superblock = crate::format::superblock::Superblock::decode(&head).is_ok();
    if superblock || crate::format::journal::is_journal_header(&head) {
        return Err(Error::Input(format!(
            "NEW: {} carries a raidlab {}; give a blank file or device (nothing was written)",
            path.display(),
            if superblock {
                "superblock"
            } else {
                "write journal"
            }
        )));
    }
    Ok(())
}

/// The error for cache members of `found`, not of the array's cache.
fn mismatch(backing: &Array, found: u128) -> Error {
    let array = backing.status().uuid;
    let cache = backing.cache_uuid().unwrap_or(0);
    Error::Input(format!(
        "--cache-members: these are the members of cache {found:032x}, not of array \
         {array:032x}'s cache ({cache:032x})"
    ))
}

/// The host side of a request: the buffer a read fills or the data a write brings.
enum Host<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
    None,
}

impl Host<'_> {
    fn len(&self) -> usize {
        match self {
            Host::Read(b) => b.len(),
            Host::Write(d) => d.len(),
            Host::None => 0,
        }
    }

    fn reborrow(&mut self) -> Host<'_> {
        match self {
            Host::Read(b) => Host::Read(b),
            Host::Write(d) => Host::Write(d),
            Host::None => Host::None,
        }
    }

    /// The part of a read's buffer for `[lba, +len)`.
    fn read_range(&mut self, base: u64, lba: u64, len: u64) -> &mut [u8] {
        let Host::Read(b) = self else {
            panic!("a read action for a request without a read buffer");
        };
        let at = (lba - base) as usize;
        &mut b[at..at + len as usize]
    }

    /// The bytes of `[lba, +len)`: a write's data, or what a read just got.
    fn data_range(&self, base: u64, lba: u64, len: u64) -> &[u8] {
        let at = (lba.checked_sub(base).expect("action inside the request")) as usize;
        match self {
            Host::Read(b) => &b[at..at + len as usize],
            Host::Write(d) => &d[at..at + len as usize],
            Host::None => panic!("host data asked of a request without any"),
        }
    }
}

/// The entries of a snapshot, in the policy's order (LRU first, regions oldest first)
/// with the log's CRCs: what a restore gives back. A line whose rewrite waits in a
/// shadow slot is listed at home and then, newer, in its shadow (replay takes the
/// shadow while it holds the rewrite's bytes).
fn snapshot_entries(
    cache: &Cache,
    slots: &BTreeMap<u64, Entry>,
    rewrites: &BTreeMap<u64, Rewrite>,
) -> Vec<Entry> {
    let mut out: Vec<Entry> = cache
        .entries()
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let slot = e.cache_offset_bytes / LINE_BYTES;
            let block = e.lba_bytes / LINE_BYTES;
            let mine = slots.get(&slot).filter(|m| m.block == block)?;
            Some(Entry {
                block,
                slot,
                // The log's view wins: a line it still calls dirty is destaged before
                // its slot is reused, whatever the policy thinks.
                dirty: mine.dirty || e.dirty,
                data_crc: mine.data_crc,
                area: area_code(e.area),
                seq: i as u64,
            })
        })
        .collect();
    // A dirty line the policy no longer lists (it should not happen: the policy
    // destages before it lets one go) stays in the log: its bytes are nowhere else.
    let listed: std::collections::BTreeSet<u64> = out.iter().map(|e| e.slot).collect();
    let n = out.len() as u64;
    out.extend(
        slots
            .values()
            .filter(|e| e.dirty && !listed.contains(&e.slot))
            .enumerate()
            .map(|(i, e)| Entry {
                seq: n + i as u64,
                ..*e
            }),
    );
    let shadowed: Vec<Entry> = out
        .iter()
        .filter_map(|e| {
            let r = rewrites.get(&e.slot).filter(|r| r.block == e.block)?;
            Some(Entry {
                block: e.block,
                slot: r.shadow,
                dirty: r.dirty,
                data_crc: r.data_crc,
                area: r.area,
                seq: 0,
            })
        })
        .collect();
    let n = out.len() as u64;
    out.extend(shadowed.into_iter().enumerate().map(|(i, e)| Entry {
        seq: n + i as u64,
        ..e
    }));
    out
}

/// The policy's entries for replayed lines: areas as recorded; raidix regions get
/// their fill order back (epochs from 1) from the order their lines were recorded in.
/// Clean lines of raidix's write area are left out: the array has them, and that
/// area holds dirty lines only (its regions are freed once destaged).
fn restore_entries(
    policy: Policy,
    entries: &[Entry],
    region_bytes: u64,
) -> Vec<raidlab_cache::Entry> {
    let mut epochs: BTreeMap<u64, u64> = BTreeMap::new();
    entries
        .iter()
        .filter(|e| !(policy == Policy::Raidix && area_of_code(e.area) == Area::Rwc && !e.dirty))
        .map(|e| {
            let offset = e.slot * LINE_BYTES;
            let region_epoch = if policy == Policy::Raidix && region_bytes > 0 {
                let n = epochs.len() as u64 + 1;
                *epochs.entry(offset / region_bytes).or_insert(n)
            } else {
                0
            };
            raidlab_cache::Entry {
                lba_bytes: e.block * LINE_BYTES,
                cache_offset_bytes: offset,
                area: area_of_code(e.area),
                dirty: e.dirty,
                region_epoch,
            }
        })
        .collect()
}

fn to_io(e: Error) -> io::Error {
    if e.is_no_space() {
        return io::Error::from_raw_os_error(libc::ENOSPC);
    }
    io::Error::other(e.to_string())
}

impl Export for CachedArray {
    fn size_bytes(&self) -> u64 {
        self.backing.capacity_bytes()
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read(offset_bytes, buf).map_err(to_io)
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.write(offset_bytes, data, fua).map_err(to_io)
    }
    fn flush(&self) -> io::Result<()> {
        CachedArray::flush(self).map_err(to_io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(block: u64, slot: u64, dirty: bool, area: Area, seq: u64) -> Entry {
        Entry {
            block,
            slot,
            dirty,
            data_crc: 0,
            area: area_code(area),
            seq,
        }
    }

    #[test]
    fn restored_raidix_regions_get_epochs_from_1_in_the_order_they_were_filled() {
        // Regions of 4 lines: slots 8.. (region 2) were recorded before slots 0.. (region 0).
        let region = 4 * LINE_BYTES;
        let e = [
            entry(100, 8, true, Area::Rwc, 0),
            entry(101, 9, true, Area::Rwc, 1),
            entry(7, 0, false, Area::Rrc, 2),
        ];
        let r = restore_entries(Policy::Raidix, &e, region);
        let epochs: Vec<u64> = r.iter().map(|x| x.region_epoch).collect();
        assert_eq!(epochs, [1, 1, 2]);
        assert_eq!(r[2].area, Area::Rrc);
        assert_eq!(r[0].lba_bytes, 100 * LINE_BYTES);
        assert_eq!(r[0].cache_offset_bytes, 8 * LINE_BYTES);
    }

    #[test]
    fn clean_lines_of_the_write_cache_are_not_restored() {
        let e = [
            entry(1, 0, false, Area::Rwc, 0),
            entry(2, 1, true, Area::Rwc, 1),
        ];
        let r = restore_entries(Policy::Raidix, &e, 4 * LINE_BYTES);
        assert_eq!(r.len(), 1);
        assert!(r[0].dirty && r[0].lba_bytes == 2 * LINE_BYTES);
        // Other policies keep every line, epoch 0, in recorded (LRU) order.
        let r = restore_entries(Policy::Lru, &[entry(3, 5, false, Area::Main, 0)], 0);
        assert_eq!((r[0].region_epoch, r[0].area), (0, Area::Main));
    }

    #[test]
    fn policy_codes_round_trip_and_unknown_ones_are_none() {
        for p in Policy::ALL {
            assert_eq!(policy_of_code(policy_code(p)), Some(p));
        }
        assert_eq!(policy_of_code(0), None);
        assert_eq!(policy_of_code(99), None);
    }
}
