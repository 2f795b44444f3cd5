//! Physical invariants, checked over many random scenarios: whatever the level, drives,
//! controller and workload, no member moves data faster than its link and media allow,
//! the array never beats what its members could do for the commands they received, and
//! no I/O completes faster than its path physically can.
//!
//! Scenarios come from `raidlab_sim::rng::Rng` seeded by the case number, so a failure
//! names the seed that reproduces it (`case(seed)` rebuilds the scenario). Every drawn
//! field lies inside the declared limits table (`scenario/limits.rs`, checked as it is
//! drawn) and inside a physically plausible range, which is much narrower.
//!
//! Measurement starts at time 0 with idle drives (`warmup_ios = 0`), so every counted
//! member command was issued, served and completed within the measured interval `T`
//! (`sim_time_ns`). The bounds read the per-member counters of `explain.members`.

use crate::common::{busy_ns, hba, hdd, s3500_ftl, scenario, ssd, w};
use raidlab_sim::resource::ps_per_byte;
use raidlab_sim::results::PERCENTILES;
use raidlab_sim::rng::Rng;
use raidlab_sim::scenario::limits::{self, Num, Scope};
use raidlab_sim::scenario::{
    DriveSpec, Level, MemberCommands, MemberDispatch, Precondition, RebuildSpec, Rw, Scenario,
};
use raidlab_sim::Results;
use std::sync::OnceLock;

/// Random scenarios per run: about 8 s in profile `ci` on one core.
const CASES: u64 = 3000;

/// Relative slack for whole-byte tracks and whole-ns revolutions: the modelled media
/// rate may sit up to ~1e-6 above the nominal one.
const MEDIA_ROUNDING: f64 = 1e-5;

// --- scenario generation ---------------------------------------------------------------

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.below(n)
}

/// Uniform in `lo..=hi`.
fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// Log-uniform in `lo..=hi` (rates and times span decades).
fn log_between(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    let u = rng.below(1 << 53) as f64 / (1u64 << 53) as f64;
    (lo.ln() + u * (hi.ln() - lo.ln())).exp()
}

/// `2^k` for `k` uniform in `lo_exp..=hi_exp`.
fn power_of_two(rng: &mut Rng, lo_exp: u32, hi_exp: u32) -> u64 {
    1 << between(rng, u64::from(lo_exp), u64::from(hi_exp))
}

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[below(rng, items.len() as u64) as usize]
}

/// `value` for the field at `path`, after checking it lies within the declared table.
fn declared<T: Into<f64> + Copy>(path: &str, scope: Scope, value: T) -> T {
    let limit = limits::find(path, scope).unwrap_or_else(|| panic!("{path} is declared"));
    let v: f64 = value.into();
    let as_f64 = |n: Num| match n {
        Num::Int(i) => i as f64,
        Num::Real(r) => r,
    };
    if let Some(min) = limit.min {
        assert!(v >= as_f64(min), "{path} = {v} below its declared minimum");
    }
    if let Some(max) = limit.max {
        assert!(v <= as_f64(max), "{path} = {v} above its declared maximum");
    }
    value
}

/// `value` (a u64 field) after checking it against the declared table.
fn declared_u64(path: &str, scope: Scope, value: u64) -> u64 {
    declared(path, scope, value as f64);
    value
}

fn random_hdd(rng: &mut Rng) -> DriveSpec {
    let DriveSpec::Hdd(mut d) = hdd() else {
        unreachable!("the testkit's hdd() is a hard disk")
    };
    let s = Scope::Hdd;
    d.rpm = declared(
        "array.drive.rpm",
        s,
        pick(rng, &[5400u32, 7200, 10_000, 15_000]),
    );
    let t2t = between(rng, 200_000, 2_000_000);
    let avg = t2t + between(rng, 2_000_000, 10_000_000);
    d.seek_ns_track_to_track = declared_u64("array.drive.seek_ns_track_to_track", s, t2t);
    d.seek_ns_avg = declared_u64("array.drive.seek_ns_avg", s, avg);
    let full = avg + between(rng, 1_000_000, 10_000_000);
    d.seek_ns_full_stroke = declared_u64("array.drive.seek_ns_full_stroke", s, full);
    let outer = log_between(rng, 50e6, 300e6);
    d.media_rate_bytes_per_s_outer = declared("array.drive.media_rate_bytes_per_s_outer", s, outer);
    let inner = outer * log_between(rng, 0.4, 1.0);
    d.media_rate_bytes_per_s_inner = declared("array.drive.media_rate_bytes_per_s_inner", s, inner);
    let overhead = log_between(rng, 1e3, 500e3) as u64;
    d.command_overhead_ns = declared_u64("array.drive.command_overhead_ns", s, overhead);
    let link = pick(rng, &[150e6, 300e6, 600e6]);
    d.link_rate_bytes_per_s = declared("array.drive.link_rate_bytes_per_s", s, link);
    d.cache_bytes = declared_u64("array.drive.cache_bytes", s, power_of_two(rng, 21, 23));
    let read_ahead = [0, 256 << 10, 1 << 20][below(rng, 3) as usize].min(d.cache_bytes);
    d.read_ahead_bytes = declared_u64("array.drive.read_ahead_bytes", s, read_ahead);
    d.write_cache = below(rng, 2) == 1;
    d.ncq_depth = declared("array.drive.ncq_depth", s, pick(rng, &[1u32, 4, 32]));
    DriveSpec::Hdd(d)
}

fn random_ssd(rng: &mut Rng) -> DriveSpec {
    let DriveSpec::Ssd(mut d) = ssd() else {
        unreachable!("the testkit's ssd() is a flash drive")
    };
    let s = Scope::Ssd;
    let link = log_between(rng, 100e6, 2_000e6);
    d.link_rate_bytes_per_s = declared("array.drive.link_rate_bytes_per_s", s, link);
    let overhead = log_between(rng, 500.0, 50e3) as u64;
    d.command_overhead_ns = declared_u64("array.drive.command_overhead_ns", s, overhead);
    let protocol = between(rng, 0, 10_000);
    d.link_command_overhead_ns = declared_u64("array.drive.link_command_overhead_ns", s, protocol);
    d.channels = declared("array.drive.channels", s, pick(rng, &[1u32, 2, 4, 8]));
    d.dies_per_channel = declared("array.drive.dies_per_channel", s, pick(rng, &[1u32, 2, 4]));
    d.page_bytes = declared_u64("array.drive.page_bytes", s, power_of_two(rng, 12, 15));
    let read_page = log_between(rng, 20e3, 150e3) as u64;
    d.read_page_ns = declared_u64("array.drive.read_page_ns", s, read_page);
    let program = log_between(rng, 200e3, 3e6) as u64;
    d.program_page_ns = declared_u64("array.drive.program_page_ns", s, program);
    let channel = log_between(rng, 50e6, 800e6);
    d.channel_rate_bytes_per_s = declared("array.drive.channel_rate_bytes_per_s", s, channel);
    let buffer = d.page_bytes << between(rng, 0, 10);
    d.write_buffer_bytes = declared_u64("array.drive.write_buffer_bytes", s, buffer);
    d.read_buffer = below(rng, 2) == 1;
    d.program_suspend = below(rng, 2) == 1;
    let merge = pick(rng, &[0u64, 4096]);
    d.write_merge_unit_bytes = declared_u64("array.drive.write_merge_unit_bytes", s, merge);
    d.ncq_depth = declared("array.drive.ncq_depth", s, pick(rng, &[1u32, 4, 32]));
    // A quarter of the drives run an FTL (garbage collection only adds flash work).
    d.ftl = (below(rng, 4) == 0).then(|| {
        let precondition = pick(rng, &[Precondition::Fob, Precondition::Steady]);
        let mut ftl = s3500_ftl(
            declared("array.drive.ftl.spare_percent", s, 7.0),
            0.0,
            precondition,
        );
        ftl.units = declared(
            "array.drive.ftl.units",
            s,
            pick(rng, &[1u32 << 12, 1 << 14]),
        );
        let burst = pick(rng, &[0u64, 0, 64, 700]);
        ftl.gc_burst_units = declared_u64("array.drive.ftl.gc_burst_units", s, burst) as _;
        ftl
    });
    // Half the drives retry some reads (read retry only adds senses and transfers).
    let retry = pick(rng, &[0.0, 0.0, 2.0, 20.0]);
    d.read_retry_percent = declared("array.drive.read_retry_percent", s, retry);
    DriveSpec::Ssd(d)
}

/// The random scenario of case `seed`.
fn case(seed: u64) -> Scenario {
    let mut rng = Rng::new(seed);
    let drive = if below(&mut rng, 2) == 0 {
        random_hdd(&mut rng)
    } else {
        random_ssd(&mut rng)
    };
    let level = pick(&mut rng, &[0u32, 1, 5, 10]);
    let drives = match level {
        0 => between(&mut rng, 1, 6),
        1 => 2,
        5 => between(&mut rng, 3, 6),
        _ => 2 * between(&mut rng, 2, 3),
    } as u32;
    let rw = pick(
        &mut rng,
        &[Rw::Read, Rw::Write, Rw::Randread, Rw::Randwrite],
    );
    let bs = declared_u64("workload.bs", Scope::Jobs, power_of_two(&mut rng, 9, 21));
    let iodepth = declared(
        "workload.iodepth",
        Scope::Jobs,
        pick(&mut rng, &[1u32, 2, 4, 16, 32]),
    );
    let mut s = scenario(drive, drives, rw, bs, iodepth);
    s.seed = seed;
    s.array.level = Level::Number(level);
    s.array.drive_count = declared("array.drive_count", Scope::Always, drives);
    // A quarter of the redundant arrays run degraded, half of those rebuilding: the
    // reconstruction and rebuild traffic is member traffic like any other.
    if level != 0 && below(&mut rng, 4) == 0 {
        let member = below(&mut rng, u64::from(drives)) as u32;
        s.array.failed = vec![member];
        if below(&mut rng, 2) == 0 {
            let rate = log_between(&mut rng, 20e6, 500e6);
            s.array.rebuild = Some(RebuildSpec {
                member,
                rate_bytes_per_s: declared("array.rebuild.rate_bytes_per_s", Scope::Always, rate),
                failed_at_ns: None,
                // Half of them with a minimum (a quarter of the limit), so the window
                // of units in flight below it is exercised too; no further draw.
                rate_min_bytes_per_s: member.is_multiple_of(2).then(|| {
                    declared(
                        "array.rebuild.rate_min_bytes_per_s",
                        Scope::Always,
                        rate / 4.0,
                    )
                }),
            });
        }
    }
    let su = power_of_two(&mut rng, 12, 20);
    s.array.stripe_unit_bytes = declared_u64("array.stripe_unit_bytes", Scope::Always, su);
    let host_overhead = between(&mut rng, 0, 20_000);
    s.array.host.request_overhead_ns = host_overhead;
    let c = &mut s.array.controller;
    *c = hba();
    let a = Scope::Always;
    let request = between(&mut rng, 0, 30_000);
    c.request_overhead_ns = declared_u64("array.controller.request_overhead_ns", a, request);
    let member_op = between(&mut rng, 0, 5_000);
    c.member_op_overhead_ns = declared_u64("array.controller.member_op_overhead_ns", a, member_op);
    let transfer = power_of_two(&mut rng, 16, 25);
    c.max_member_transfer_bytes =
        declared_u64("array.controller.max_member_transfer_bytes", a, transfer);
    if below(&mut rng, 2) == 0 {
        c.member_commands = MemberCommands::PerStrip;
    }
    // Every other case posts its member commands serially; decided by the seed, not
    // drawn, so the rest of each case stays as it was.
    if seed.is_multiple_of(2) {
        c.member_dispatch = MemberDispatch::Serial;
    }
    if below(&mut rng, 3) == 0 {
        let depth = pick(&mut rng, &[1u64, 2, 4, 8]);
        c.member_queue_depth =
            Some(declared_u64("array.controller.member_queue_depth", a, depth) as u32);
    }
    let port = pick(&mut rng, &[300e6, 600e6, 1_200e6]);
    c.port_rate_bytes_per_s = declared("array.controller.port_rate_bytes_per_s", a, port);
    // Shared paths and data-path caps only slow the array down; drawn so the bounds
    // are checked with them in the way too.
    let path = |rng: &mut Rng, name: &str| {
        (below(rng, 3) == 0).then(|| declared(name, a, log_between(rng, 300e6, 4_000e6)))
    };
    c.bus_rate_bytes_per_s = path(&mut rng, "array.controller.bus_rate_bytes_per_s");
    c.read_rate_bytes_per_s_max = path(&mut rng, "array.controller.read_rate_bytes_per_s_max");
    c.write_rate_bytes_per_s_max = path(&mut rng, "array.controller.write_rate_bytes_per_s_max");
    let ios = between(&mut rng, 200, 600);
    let wl = w(&mut s);
    wl.ios = declared_u64("workload.ios", Scope::Jobs, ios);
    wl.warmup_ios = 0;
    wl.size_bytes = 16 << 30;
    s
}

/// Every case simulated once, shared by the properties below.
fn runs() -> &'static [(u64, Scenario, Results)] {
    static RUNS: OnceLock<Vec<(u64, Scenario, Results)>> = OnceLock::new();
    RUNS.get_or_init(|| {
        (0..CASES)
            .map(|seed| {
                let s = case(seed);
                let r = raidlab_sim::run(&s)
                    .unwrap_or_else(|e| panic!("seed {seed}: scenario refused: {e:?}"));
                (seed, s, r)
            })
            .collect()
    })
}

// --- what the physics allows ----------------------------------------------------------

/// A rate as the simulator's clock can realise it: transfers are timed in whole
/// picoseconds per byte (`resource::ps_per_byte`), so the realised rate may sit up to
/// half a picosecond per byte above the nominal one.
fn realised(rate_bytes_per_s: f64) -> f64 {
    1e12 / ps_per_byte(rate_bytes_per_s) as f64
}

/// The member's link: the drive's interface, capped by the controller port it is on.
fn link_rate(s: &Scenario) -> f64 {
    let drive = match &s.array.drive {
        DriveSpec::Hdd(d) => d.link_rate_bytes_per_s,
        DriveSpec::Ssd(d) => d.link_rate_bytes_per_s,
        DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
    };
    realised(drive.min(s.array.controller.port_rate_bytes_per_s))
}

/// Link time every command costs besides its data, serial with the data on the link
/// (an SSD's SATA protocol exchange; the HDD model has none).
fn link_command_ns(s: &Scenario) -> u64 {
    match &s.array.drive {
        DriveSpec::Hdd(_) => 0,
        DriveSpec::Ssd(d) => d.link_command_overhead_ns,
        DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
    }
}

fn command_overhead_ns(s: &Scenario) -> u64 {
    match &s.array.drive {
        DriveSpec::Hdd(d) => d.command_overhead_ns,
        DriveSpec::Ssd(d) => d.command_overhead_ns,
        DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
    }
}

fn ns(bytes: u64, rate_bytes_per_s: f64) -> f64 {
    bytes as f64 * 1e9 / rate_bytes_per_s
}

fn describe(seed: u64, s: &Scenario) -> String {
    let wl = s.workload.as_ref().expect("one workload");
    let kind = match &s.array.drive {
        DriveSpec::Hdd(d) => format!("hdd (write cache {})", d.write_cache),
        DriveSpec::Ssd(_) => "ssd".to_string(),
        DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
    };
    format!(
        "seed {seed}: RAID {:?} of {} {kind}, stripe unit {}, {:?} bs {} iodepth {}",
        s.array.level,
        s.array.drive_count,
        s.array.stripe_unit_bytes,
        wl.rw,
        wl.bs[0].0,
        wl.iodepth
    )
}

/// One bound applied to one run: what the run needed over what the physics allows.
/// Above 1 the simulator broke the bound; the tightness test wants some run near 1.
struct Use {
    bound: &'static str,
    ratio: f64,
    detail: String,
}

fn use_of(bound: &'static str, needed: f64, allowed: f64, detail: String) -> Use {
    Use {
        bound,
        ratio: needed / allowed,
        detail,
    }
}

/// (1) Bytes a member moved over the run, per second of it, stay within its link (and
/// port) rate and what its media can deliver:
/// - HDD: its mechanism (one command at a time) is busy no longer than the interval
///   plus what it may have booked past the interval's end: the firmware backlog of a
///   full queue, one full-stroke seek and revolution, and the media time of one
///   command, a buffer's worth of cached writes and a read-ahead;
/// - HDD, healthy arrays: reads and writes share one mechanism, at most the outer-zone
///   media rate, plus one buffer (`cache_bytes`) of slack: writes the cache
///   acknowledged before the platter, or a repeated read served again from the
///   buffer. Degraded arrays are left out: a degraded read re-reads the survivors'
///   chunks for every request that touches the stripe (no stripe cache in front of
///   the drives), and the drive serves the repeats from its buffer, so its bytes
///   may exceed what its media read;
/// - SSD reads cross a flash channel (serial per channel): at most `channels x
///   channel rate`;
/// - SSD writes: pages go round-robin to the dies and each program takes a die
///   `program_page_ns`, so the busiest die programmed `ceil(pages / dies)` of them;
///   the write buffer acknowledges up to its size ahead of the flash, and one program
///   may end past the interval.
fn member_rates(s: &Scenario, r: &Results) -> Vec<Use> {
    let t = r.sim_time_ns as f64 + 1.0;
    let link = link_rate(s);
    let mut uses = Vec::new();
    for (m, c) in r.explain.members.iter().enumerate() {
        let bytes = c.read_bytes + c.write_bytes;
        let detail = || format!("member {m} {c:?} in {t} ns");
        uses.push(use_of("link", ns(bytes, link), t, detail()));
        match &s.array.drive {
            DriveSpec::Hdd(d) => {
                let busy = busy_ns(r, |name| name == format!("drive{m}.mechanism")) as f64;
                let busy_detail = format!("member {m} mechanism busy {busy} ns in {t} ns");
                uses.push(use_of(
                    "hdd mechanism",
                    busy,
                    t + hdd_tail_ns(s),
                    busy_detail,
                ));
                if s.array.failed.is_empty() {
                    let media = d.media_rate_bytes_per_s_outer * (1.0 + MEDIA_ROUNDING);
                    let from_media = bytes.saturating_sub(d.cache_bytes);
                    uses.push(use_of("hdd media", ns(from_media, media), t, detail()));
                }
            }
            DriveSpec::Ssd(d) => {
                let channels = f64::from(d.channels) * realised(d.channel_rate_bytes_per_s);
                uses.push(use_of(
                    "ssd channels",
                    ns(c.read_bytes, channels),
                    t,
                    detail(),
                ));
                let dies = u64::from(d.channels * d.dies_per_channel);
                let programmed = c.write_bytes.saturating_sub(d.write_buffer_bytes);
                let busiest_die_ns = programmed.div_ceil(d.page_bytes).div_ceil(dies) as f64
                    * d.program_page_ns as f64;
                let allowed = t + d.program_page_ns as f64;
                uses.push(use_of("ssd flash", busiest_die_ns, allowed, detail()));
            }
            DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
        }
    }
    uses
}

/// What an HDD's mechanism may have booked past the end of the interval (see (1)).
fn hdd_tail_ns(s: &Scenario) -> f64 {
    let DriveSpec::Hdd(d) = &s.array.drive else {
        unreachable!("only for hard disks")
    };
    let command_bytes = s.workload.as_ref().expect("one workload").bs[0]
        .0
        .max(s.array.stripe_unit_bytes);
    let revolution_ns = 60e9 / f64::from(d.rpm);
    let backlog_ns = f64::from(d.ncq_depth) * d.command_overhead_ns as f64;
    let media_bytes = command_bytes + d.cache_bytes + d.read_ahead_bytes;
    backlog_ns
        + d.seek_ns_full_stroke as f64
        + revolution_ns
        + ns(media_bytes, d.media_rate_bytes_per_s_inner)
}

/// (2) The array never beats the sum of its members' limits for the commands they
/// actually received. Over the interval `T`, member `m` completed `ops_m` commands
/// moving `bytes_m`; each was served by its firmware (serial, `command_overhead_ns`
/// each) and crossed its link (serial: `link_command_ns` + its bytes at the link
/// rate), all within `T`, so
///
///   L_m = max(ops_m x link_command_ns + bytes_m / link rate, ops_m x command_overhead)
///
/// is at most `T`. A host I/O completes only once its member commands have, and every
/// host byte was moved by at least one member command (no controller cache or
/// read-ahead here), so host bytes <= sum of bytes_m, and
///
///   host bytes / T <= sum over m of bytes_m / T <= sum over m of bytes_m / L_m.
///
/// The controller's own serial CPU bounds it as well: host I/Os x request_overhead_ns
/// + member commands x member_op_overhead_ns <= T.
fn array_limits(s: &Scenario, r: &Results) -> Vec<Use> {
    let t = r.sim_time_ns as f64 + 1.0;
    let link = link_rate(s);
    let mut uses = Vec::new();
    let (mut member_rate_bound, mut member_bytes, mut member_ops) = (0.0, 0, 0);
    for (m, c) in r.explain.members.iter().enumerate() {
        let ops = c.read_ops + c.write_ops + c.trim_ops;
        let bytes = c.read_bytes + c.write_bytes;
        let link_ns = (ops * link_command_ns(s)) as f64 + ns(bytes, link);
        let firmware_ns = (ops * command_overhead_ns(s)) as f64;
        let detail = || format!("member {m} {c:?} in {t} ns");
        uses.push(use_of("member link for its commands", link_ns, t, detail()));
        uses.push(use_of("member firmware", firmware_ns, t, detail()));
        if bytes > 0 {
            member_rate_bound += bytes as f64 / link_ns.max(firmware_ns);
        }
        member_bytes += bytes;
        member_ops += ops;
    }
    let host_ios: u64 = r.ops.values().map(|o| o.ios).sum();
    let host_bytes: u64 = r.ops.values().map(|o| o.bytes).sum();
    let detail = format!("host {host_bytes} bytes, members {member_bytes}");
    uses.push(use_of(
        "host bytes over member bytes",
        host_bytes as f64,
        member_bytes as f64,
        detail.clone(),
    ));
    let host_rate = host_bytes as f64 / r.sim_time_ns as f64;
    uses.push(use_of(
        "host rate over the members' bound",
        host_rate,
        member_rate_bound * (1.0 + 1e-9),
        detail,
    ));
    let c = &s.array.controller;
    let cpu_ns = host_ios * c.request_overhead_ns + member_ops * c.member_op_overhead_ns;
    let detail = format!("{host_ios} host I/Os, {member_ops} member commands in {t} ns");
    uses.push(use_of("controller cpu", cpu_ns as f64, t, detail));
    uses
}

/// (3) No I/O completes faster than its path: the host stack's overhead, the
/// controller's per-request and per-member-command cost, the drive's command overhead,
/// and the largest piece of the block crossing the link. A block of `bs` becomes at
/// most `ceil(bs / min(stripe unit, max member transfer)) + 1` member commands (one
/// more for a block that straddles a boundary), so its largest piece is at least `bs`
/// over that count, and the I/O waits for it. HDD writes with the write cache off also
/// wait for the piece on the platter (at the outer, fastest, zone's rate); SSD writes
/// wait `write_commit_ns` before their data is taken.
fn latency_floors(s: &Scenario, r: &Results) -> Vec<Use> {
    let wl = s.workload.as_ref().expect("one workload");
    let bs = wl.bs[0].0;
    let c = &s.array.controller;
    let pieces = bs.div_ceil(s.array.stripe_unit_bytes.min(c.max_member_transfer_bytes)) + 1;
    let piece = bs.div_ceil(pieces);
    // Serial dispatch sends a request's first command before paying for it.
    let first_op_ns = match c.member_dispatch {
        MemberDispatch::Batch => c.member_op_overhead_ns,
        MemberDispatch::Serial => 0,
    };
    let fixed_ns = s.array.host.request_overhead_ns
        + c.request_overhead_ns
        + first_op_ns
        + command_overhead_ns(s)
        + link_command_ns(s);
    let link_ns = ns(piece, link_rate(s));
    let mut uses = Vec::new();
    for (op, stats) in &r.ops {
        let write = op == "write";
        let drive_ns = match &s.array.drive {
            DriveSpec::Hdd(d) if write && !d.write_cache => {
                let media = d.media_rate_bytes_per_s_outer * (1.0 + MEDIA_ROUNDING);
                link_ns.max(ns(piece, media))
            }
            DriveSpec::Ssd(d) if write => link_ns + d.write_commit_ns as f64,
            _ => link_ns,
        };
        let floor_ns = (fixed_ns as f64 + drive_ns).floor();
        let detail = format!("{op} lat_min {} ns, path {floor_ns} ns", stats.lat_min_ns);
        uses.push(use_of(
            "latency floor",
            floor_ns,
            stats.lat_min_ns as f64,
            detail,
        ));
    }
    uses
}

fn assert_within(bounds: fn(&Scenario, &Results) -> Vec<Use>) {
    for (seed, s, r) in runs() {
        for u in bounds(s, r) {
            assert!(
                u.ratio <= 1.0,
                "{}: {} broken ({:.6} of the bound): {}",
                describe(*seed, s),
                u.bound,
                u.ratio,
                u.detail
            );
        }
    }
}

// --- the properties ---------------------------------------------------------------------

#[test]
fn no_member_moves_data_faster_than_its_link_and_media() {
    assert_within(member_rates);
}

#[test]
fn an_array_never_beats_what_its_members_can_do_for_their_commands() {
    assert_within(array_limits);
}

#[test]
fn no_latency_is_below_the_physical_minimum_of_its_path() {
    assert_within(latency_floors);
}

/// The bounds bite: each is nearly reached by some case (a bound no run comes near
/// would pass whatever the simulator did).
#[test]
fn every_bound_is_nearly_reached_by_some_case() {
    let mut most = std::collections::BTreeMap::<&str, f64>::new();
    for (_, s, r) in runs() {
        for u in [member_rates(s, r), array_limits(s, r), latency_floors(s, r)]
            .into_iter()
            .flatten()
        {
            let entry = most.entry(u.bound).or_insert(0.0);
            *entry = entry.max(u.ratio);
        }
    }
    assert_eq!(most.len(), 11, "{most:?}");
    assert!(most.values().all(|&ratio| ratio > 0.9), "{most:?}");
}

/// The generator is replayable: a seed names one scenario and one result.
#[test]
fn a_seed_reproduces_its_scenario_and_results() {
    let (seed, s, r) = &runs()[7];
    let json = |s: &Scenario| serde_json::to_string(s).expect("a scenario serialises");
    assert_eq!(json(&case(*seed)), json(s));
    assert_eq!(&raidlab_sim::run(s).expect("valid"), r);
    // The cases differ: the generator is not stuck on one scenario.
    assert_ne!(json(&case(1)), json(&case(2)));
}

/// The generated cases cover what the properties are about: every level, both drive
/// kinds, reads and writes, HDDs with and without write cache, degraded arrays and
/// rebuilds; every member reported.
#[test]
fn the_cases_cover_levels_drives_and_directions() {
    let mut levels = std::collections::BTreeSet::new();
    let (mut hdd_cached, mut hdd_through, mut ssds, mut reads, mut writes) = (0, 0, 0, 0, 0);
    let (mut degraded, mut rebuilding) = (0, 0);
    for (_, s, r) in runs() {
        degraded += usize::from(!s.array.failed.is_empty());
        rebuilding += usize::from(r.rebuild.is_some());
        levels.insert(format!("{:?}", s.array.level));
        match &s.array.drive {
            DriveSpec::Hdd(d) if d.write_cache => hdd_cached += 1,
            DriveSpec::Hdd(_) => hdd_through += 1,
            DriveSpec::Ssd(_) => ssds += 1,
            DriveSpec::Nvme(_) => unreachable!("the generator makes no NVMe drives"),
        }
        reads += usize::from(r.ops.contains_key("read"));
        writes += usize::from(r.ops.contains_key("write"));
        assert_eq!(r.explain.members.len(), s.array.drive_count as usize);
    }
    assert_eq!(levels.len(), 4, "{levels:?}");
    assert!(hdd_cached > 20 && hdd_through > 20 && ssds > 40 && reads > 40 && writes > 40);
    assert!(
        degraded > 40 && rebuilding > 20,
        "{degraded} degraded, {rebuilding} rebuilding"
    );
}

/// Every reported percentile lies within the run's smallest and largest latency, and
/// they rise with the percentile (fio's keys, ordered as numbers): for every generated
/// scenario and direction, the whole-run and each job's figures.
#[test]
fn percentiles_lie_within_min_and_max_and_rise() {
    let mut checked = 0;
    for (seed, s, r) in runs() {
        let jobs = r.jobs.iter().flat_map(|j| j.ops.iter());
        for (op, stats) in r.ops.iter().chain(jobs) {
            let mut points: Vec<(f64, u64)> = stats
                .percentiles_ns
                .iter()
                .map(|(key, &ns)| (key.parse().expect("a numeric key"), ns))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(points.len(), PERCENTILES.len());
            let mut last = stats.lat_min_ns;
            for (pct, ns) in points {
                assert!(
                    ns >= last && ns <= stats.lat_max_ns,
                    "{} {op}: p{pct} = {ns} ns outside [{last}, {}]",
                    describe(*seed, s),
                    stats.lat_max_ns
                );
                last = ns;
            }
            assert!(stats.lat_mean_ns >= stats.lat_min_ns as f64);
            assert!(stats.lat_mean_ns <= stats.lat_max_ns as f64);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} directions checked");
}
