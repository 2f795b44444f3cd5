//! How a controller turns the strips a request puts on a member into drive commands,
//! how many it keeps outstanding per member, and what each command costs on an SSD's
//! link.

use crate::common::{hdd, mbps, scenario, ssd, w};
use raidlab_sim::scenario::{DriveSpec, MemberCommands, MemberDispatch, Rw};
use raidlab_sim::simulate;

#[test]
fn merged_strips_make_one_command_per_member() {
    let mut s = scenario(ssd(), 2, Rw::Read, 1 << 20, 1);
    s.array.stripe_unit_bytes = 8192;
    let r = simulate(&s);
    assert_eq!(r.explain.member_ios_per_host_io["read"], 2.0);
}

#[test]
fn a_per_strip_controller_sends_one_command_per_strip() {
    let mut s = scenario(ssd(), 2, Rw::Read, 1 << 20, 1);
    s.array.stripe_unit_bytes = 8192;
    s.array.controller.member_commands = MemberCommands::PerStrip;
    let r = simulate(&s);
    assert_eq!(r.explain.member_ios_per_host_io["read"], 128.0);
    assert_eq!(r.explain.member_bytes_per_host_byte["read"], 1.0);
    // A request within one strip is one command either way.
    w(&mut s).bs = vec![(4096, 1)];
    let r = simulate(&s);
    assert_eq!(r.explain.member_ios_per_host_io["read"], 1.0);
}

#[test]
fn per_strip_commands_on_small_strips_cost_large_hdd_reads_dearly() {
    // Each 8 KiB command pays the drive's per-command cost: two disks read large
    // transfers slower than the merged array, and not above what the member disks
    // deliver for 8 KiB commands.
    let mut merged = scenario(hdd(), 2, Rw::Read, 1 << 20, 1);
    merged.array.stripe_unit_bytes = 8192;
    w(&mut merged).size_bytes = 512 << 20;
    w(&mut merged).ios = 300;
    w(&mut merged).warmup_ios = 20;
    let mut per_strip = merged.clone();
    per_strip.array.controller.member_commands = MemberCommands::PerStrip;
    let (m, p) = (
        mbps(&simulate(&merged), "read"),
        mbps(&simulate(&per_strip), "read"),
    );
    let DriveSpec::Hdd(h) = hdd() else {
        unreachable!()
    };
    // Two drives, each at most one 8 KiB command per command overhead.
    let bound = 2.0 * 8192.0 / (h.command_overhead_ns as f64 / 1e9) / 1e6;
    assert!(p < 0.6 * m, "per-strip {p:.1} MB/s vs merged {m:.1} MB/s");
    assert!(
        p <= bound * 1.001,
        "per-strip {p:.1} MB/s above the drives' {bound:.1} MB/s"
    );
}

#[test]
fn the_controller_keeps_at_most_its_member_queue_depth_outstanding() {
    // Random reads at QD 32 on one HDD: NCQ reorders what is queued, so a controller
    // that keeps one command per member loses the reordering gain.
    let mut deep = scenario(hdd(), 1, Rw::Randread, 4096, 32);
    w(&mut deep).ios = 2000;
    let mut shallow = deep.clone();
    shallow.array.controller.member_queue_depth = Some(1);
    let (d, s) = (
        crate::common::iops(&simulate(&deep), "read"),
        crate::common::iops(&simulate(&shallow), "read"),
    );
    assert!(s < 0.7 * d, "queue depth 1: {s:.0} IOPS, 32: {d:.0} IOPS");
}

#[test]
fn an_ssd_link_carries_each_commands_protocol_time_with_its_data() {
    // Queued 16 KiB reads are link-bound: each command holds the link for its FIS
    // exchange plus its data, so the throughput is 16 KiB per (overhead + transfer).
    let run = |overhead_ns: u64| {
        let mut drive = ssd();
        if let DriveSpec::Ssd(s) = &mut drive {
            s.link_command_overhead_ns = overhead_ns;
            s.command_overhead_ns = 1_000;
        }
        let mut s = scenario(drive, 1, Rw::Randread, 16384, 32);
        w(&mut s).ios = 5000;
        mbps(&simulate(&s), "read")
    };
    let (free, taxed) = (run(0), run(8_000));
    let transfer_s = 16384.0 / 530e6;
    let expected = free * transfer_s / (transfer_s + 8e-6);
    assert!(
        (taxed - expected).abs() < 0.03 * expected,
        "{taxed:.1} MB/s, expected {expected:.1} (from {free:.1} without the overhead)"
    );
}

#[test]
fn the_strips_of_one_request_reach_a_drive_as_one_burst_not_as_queued_commands() {
    // The queued-command path (an SSD's NCQ latency) is paid behind commands sent
    // earlier, not by the strips of one request sent together.
    let run = |queued_ns: u64, bs: u64, iodepth: u32| {
        let mut drive = ssd();
        if let DriveSpec::Ssd(s) = &mut drive {
            s.queued_command_latency_ns = queued_ns;
        }
        let mut s = scenario(drive, 1, Rw::Read, bs, iodepth);
        s.array.stripe_unit_bytes = 16384;
        s.array.controller.member_commands = MemberCommands::PerStrip;
        w(&mut s).ios = 2000;
        simulate(&s).ops["read"].lat_mean_ns
    };
    // One request of two strips at QD 1: no queued latency.
    assert_eq!(run(0, 32768, 1), run(200_000, 32768, 1));
    // Two requests outstanding: the second is queued behind the first.
    assert!(run(200_000, 16384, 2) > run(0, 16384, 2) + 100_000.0);
}

/// A 2-SSD per-strip array whose controller costs `request_ns` per request and
/// `per_op_ns` per member command, dispatching them as `dispatch` says.
fn dispatching(
    dispatch: MemberDispatch,
    request_ns: u64,
    per_op_ns: u64,
    bs: u64,
    iodepth: u32,
) -> raidlab_sim::scenario::Scenario {
    let mut s = scenario(ssd(), 2, Rw::Read, bs, iodepth);
    s.array.stripe_unit_bytes = 8192;
    let c = &mut s.array.controller;
    c.member_commands = MemberCommands::PerStrip;
    c.member_dispatch = dispatch;
    c.request_overhead_ns = request_ns;
    c.member_op_overhead_ns = per_op_ns;
    w(&mut s).ios = 500;
    w(&mut s).warmup_ios = 50;
    s
}

#[test]
fn serial_dispatch_sends_a_one_member_request_after_the_request_overhead_only() {
    // Batch dispatch waits for the command's overhead too; the CPU's time is the same.
    let lat = |d| simulate(&dispatching(d, 20_000, 20_000, 4096, 1)).ops["read"].lat_mean_ns;
    let (batch, serial) = (lat(MemberDispatch::Batch), lat(MemberDispatch::Serial));
    assert!(
        (batch - serial - 20_000.0).abs() < 1.0,
        "batch {batch:.0} ns, serial {serial:.0} ns"
    );
}

#[test]
fn serial_dispatch_posts_a_requests_commands_one_member_op_apart() {
    // Flash reads far slower than the gap, on dies enough for every strip at once: a
    // request of 16 strips ends 15 gaps after one of a single strip; with batch
    // dispatch, which sends all 16 after 16 gaps (and their transfers meet on the
    // links), at least one gap later.
    let gap = 100_000;
    let lat = |d, bs| {
        let mut s = dispatching(d, 0, gap, bs, 1);
        // A strip a flash page, so no strip is read with another's page.
        s.array.stripe_unit_bytes = 16384;
        if let DriveSpec::Ssd(ssd) = &mut s.array.drive {
            ssd.read_page_ns = 5_000_000;
        }
        simulate(&s).ops["read"].lat_mean_ns
    };
    let g = gap as f64;
    let one = lat(MemberDispatch::Serial, 16384);
    let serial = lat(MemberDispatch::Serial, 16 * 16384);
    let batch = lat(MemberDispatch::Batch, 16 * 16384);
    assert!(
        (serial - one - 15.0 * g).abs() < 0.05 * g,
        "serial: {serial:.0} ns for 16 strips, {one:.0} ns for one"
    );
    assert!(
        batch - serial > 0.95 * g,
        "batch {batch:.0} ns, serial {serial:.0} ns"
    );
}

#[test]
fn serial_dispatch_keeps_the_controller_cpu_busy_as_long_as_batch() {
    // Deep queue, CPU-bound: each request holds the CPU for its overhead and its
    // commands' either way, so the request rate is the same.
    let iops = |d| {
        crate::common::iops(
            &simulate(&dispatching(d, 10_000, 50_000, 4 * 8192, 32)),
            "read",
        )
    };
    let (batch, serial) = (iops(MemberDispatch::Batch), iops(MemberDispatch::Serial));
    let bound = 1e9 / (10_000.0 + 4.0 * 50_000.0);
    for (name, x) in [("batch", batch), ("serial", serial)] {
        assert!(
            (x - bound).abs() < 0.01 * bound,
            "{name}: {x:.0} IOPS, the CPU allows {bound:.0}"
        );
    }
}

#[test]
fn members_past_the_full_rate_ports_run_at_the_slow_ports_rate() {
    // A chipset's SATA ports in two generations (two at 6 Gb/s, the rest at 3 Gb/s): a
    // striped sequential read waits for its slowest members, so a 4-drive array reads
    // at four times the slow port's rate, not the drives'.
    let mut s = scenario(crate::common::s3500_80g(), 4, Rw::Read, 1 << 20, 8);
    w(&mut s).ios = 1_000;
    w(&mut s).warmup_ios = 100;
    let fast = mbps(&simulate(&s), "read");
    s.array.controller.full_rate_ports = Some(2);
    s.array.controller.slow_port_rate_bytes_per_s = Some(275e6);
    let mixed = mbps(&simulate(&s), "read");
    assert!(
        mixed <= 4.0 * 275.0 * 1.01,
        "{mixed} MB/s above four slow ports"
    );
    assert!(
        mixed >= 4.0 * 275.0 * 0.9,
        "{mixed} MB/s far below four slow ports"
    );
    assert!(
        fast > 1.15 * mixed,
        "all ports fast {fast}, two slow {mixed}"
    );
    // As many full-rate ports as members: the slow rate applies to none.
    s.array.controller.full_rate_ports = Some(4);
    assert_eq!(mbps(&simulate(&s), "read"), fast);
}
