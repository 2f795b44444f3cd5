//! The host's I/O schedulers: what merging, sorting, deadlines and idling do to HDD
//! and SSD arrays. Every figure asserted is measured from a run; the bounds say how
//! large an effect is expected, not what a constant was set to.

use crate::common::{hdd, iops, mbps, scenario, ssd, w};
use raidlab_sim::scenario::{
    BfqSpec, DeadlineSpec, DriveSpec, Rw, Scenario, SchedulerKind, WorkloadSpec,
};
use raidlab_sim::{simulate, simulate_json, Results};

fn with(mut s: Scenario, kind: SchedulerKind) -> Scenario {
    s.array.host.scheduler = kind;
    s
}

/// One job of small sequential I/O at host QD 64 on two HDDs whose volume takes 32
/// requests: half the host's I/Os wait in the scheduler.
fn small_sequential(rw: Rw) -> Scenario {
    let mut s = scenario(hdd(), 2, rw, 4096, 64);
    w(&mut s).ios = 20_000;
    s.array.host.queue_depth = Some(32);
    s
}

#[test]
fn deadline_merges_small_sequential_reads_into_fewer_larger_member_reads() {
    let s = small_sequential(Rw::Read);
    let fifo = simulate(&with(s.clone(), SchedulerKind::None));
    let deadline = simulate(&with(s, SchedulerKind::MqDeadline));
    let merged = deadline.explain.scheduler.as_ref().unwrap();
    assert_eq!(fifo.explain.scheduler.as_ref().unwrap().host_ios_merged, 0);
    assert!(merged.host_ios_merged > 5_000, "{merged:?}");
    assert!(merged.host_ios_per_request > 1.5, "{merged:?}");
    let member = deadline.explain.member_ios_per_host_io["read"];
    assert!(member < 0.7, "member reads per host read {member}");
    // Fewer commands, each paying the drive's per-command overhead once.
    let (a, b) = (mbps(&fifo, "read"), mbps(&deadline, "read"));
    assert!(
        b > 1.4 * a && b < 2.5 * a,
        "fifo {a:.1} MB/s, mq-deadline {b:.1} MB/s"
    );
}

#[test]
fn deadline_merges_small_sequential_writes_on_drives_without_write_cache() {
    let s = small_sequential(Rw::Write);
    let fifo = simulate(&with(s.clone(), SchedulerKind::None));
    let deadline = simulate(&with(s, SchedulerKind::MqDeadline));
    assert!(deadline.explain.member_ios_per_host_io["write"] < 0.7);
    // Each write command waits for its sector to come round; merged, it waits once.
    let (a, b) = (mbps(&fifo, "write"), mbps(&deadline, "write"));
    assert!(
        b > 1.5 * a && b < 3.5 * a,
        "fifo {a:.1} MB/s, mq-deadline {b:.1} MB/s"
    );
}

#[test]
fn merges_never_exceed_max_sectors_kb() {
    let mut s = with(small_sequential(Rw::Read), SchedulerKind::MqDeadline);
    s.array.host.max_sectors_kb = Some(8);
    let r = simulate(&s);
    let sched = r.explain.scheduler.as_ref().unwrap();
    assert_eq!(sched.max_request_bytes, 8192);
    assert!(sched.host_ios_per_request <= 2.0, "{sched:?}");
    assert!(sched.host_ios_per_request > 1.2, "{sched:?}");
}

/// Random reads over most of one HDD at host QD 64, the volume taking `depth`.
fn random_reads_on_one_hdd(depth: u32) -> Scenario {
    let mut drive = hdd();
    if let DriveSpec::Hdd(h) = &mut drive {
        h.ncq_depth = depth;
    }
    let mut s = scenario(drive, 1, Rw::Randread, 4096, 64);
    w(&mut s).size_bytes = 200_000_000_000;
    w(&mut s).ios = 3_000;
    w(&mut s).warmup_ios = 300;
    s
}

#[test]
fn deadline_sorting_shortens_seeks_of_a_drive_without_command_queueing() {
    // A device that takes one command at a time, with the single-queue block layer's
    // 128 requests: the elevator's LBA order is the only reordering there is.
    let mut s = random_reads_on_one_hdd(1);
    s.array.host.nr_requests = Some(128);
    let fifo = iops(&simulate(&with(s.clone(), SchedulerKind::None)), "read");
    let sorted = iops(&simulate(&with(s, SchedulerKind::MqDeadline)), "read");
    assert!(
        sorted > 1.4 * fifo && sorted < 2.5 * fifo,
        "fifo {fifo:.0} IOPS, mq-deadline {sorted:.0} IOPS"
    );
}

#[test]
fn deadline_sorting_adds_little_to_a_drive_that_reorders_32_commands_itself() {
    let s = random_reads_on_one_hdd(32);
    let none = iops(&simulate(&s), "read");
    let sorted = iops(&simulate(&with(s, SchedulerKind::MqDeadline)), "read");
    assert!(
        sorted > 1.02 * none && sorted < 1.25 * none,
        "none {none:.0} IOPS, mq-deadline {sorted:.0} IOPS"
    );
}

/// Four random readers at QD 1 each on four SSDs.
fn four_random_readers_on_ssds() -> Scenario {
    let mut s = scenario(ssd(), 4, Rw::Randread, 4096, 1);
    w(&mut s).numjobs = 4;
    w(&mut s).ios = 20_000;
    s
}

#[test]
fn bfq_idling_serialises_random_readers_on_an_ssd_array() {
    let s = four_random_readers_on_ssds();
    let none = simulate(&s);
    let deadline = simulate(&with(s.clone(), SchedulerKind::MqDeadline));
    let bfq = simulate(&with(s, SchedulerKind::Bfq));
    let (n, d, b) = (
        iops(&none, "read"),
        iops(&deadline, "read"),
        iops(&bfq, "read"),
    );
    // mq-deadline never holds work back from a device with room: nothing changes.
    assert!(
        (d / n - 1.0).abs() < 0.01,
        "none {n:.0}, mq-deadline {d:.0}"
    );
    // bfq gives the array to one reader at a time and waits for its next request:
    // four readers run like one.
    assert!(
        b < 0.4 * n && b > 0.15 * n,
        "none {n:.0} IOPS, bfq {b:.0} IOPS"
    );
    assert_eq!(bfq.explain.bottleneck, "host.scheduler");
    assert!(bfq.explain.bottleneck_utilisation > 0.9);
    assert_ne!(none.explain.bottleneck, "host.scheduler");
}

#[test]
fn bfq_without_idling_costs_ssd_readers_nothing() {
    let s = four_random_readers_on_ssds();
    let none = iops(&simulate(&s), "read");
    let mut s = with(s, SchedulerKind::Bfq);
    s.array.host.bfq = Some(BfqSpec {
        slice_idle_ns: 0,
        ..BfqSpec::default()
    });
    let r = simulate(&s);
    let no_idle = iops(&r, "read");
    assert!(
        (no_idle / none - 1.0).abs() < 0.02,
        "{none:.0} vs {no_idle:.0}"
    );
    assert_eq!(r.explain.scheduler.unwrap().idle_expiries, 0);
}

/// Four sequential readers, 64 KiB at QD 1 each, in separate quarters of the array.
fn four_sequential_readers_on_hdds(drives: u32) -> Scenario {
    let mut s = scenario(hdd(), drives, Rw::Read, 65536, 1);
    w(&mut s).numjobs = 4;
    w(&mut s).size_bytes = 100_000_000_000;
    w(&mut s).ios = 4_000;
    s
}

#[test]
fn bfq_keeps_each_sequential_stream_together_on_an_hdd() {
    let s = four_sequential_readers_on_hdds(1);
    let none = simulate(&s);
    let bfq = simulate(&with(s, SchedulerKind::Bfq));
    let (n, b) = (mbps(&none, "read"), mbps(&bfq, "read"));
    // Interleaved, every request seeks to another stream; served a slice at a time,
    // each stream streams from the drive's read-ahead at close to the media rate.
    assert!(b > 5.0 * n, "none {n:.1} MB/s, bfq {b:.1} MB/s");
    assert!(b < 140.0, "bfq {b:.1} MB/s cannot beat the media rate");
    // The single drive is busy all the time: it, not the scheduler, is the limit.
    assert_eq!(bfq.explain.bottleneck, "drive0.mechanism");
}

#[test]
fn bfq_idles_once_per_turn_on_an_hdd_stream() {
    let s = with(four_sequential_readers_on_hdds(1), SchedulerKind::Bfq);
    let r = simulate(&s);
    let sched = r.explain.scheduler.unwrap();
    // The readers never pause, so turns end on budget or time, not on idle timeouts.
    assert_eq!(sched.idle_expiries, 0, "{sched:?}");
}

/// A deep sequential stream of 512 KiB in the upper half of one HDD and a random
/// 4 KiB reader at QD 1 in the lower half, the device taking one command at a time.
fn reader_behind_a_stream(stream: Rw, stream_depth: u32, reader_ios: u64) -> Scenario {
    let mut s = scenario(hdd(), 1, stream, 512 << 10, stream_depth);
    let base = s.workload.take().unwrap();
    let stream = WorkloadSpec {
        name: Some("stream".into()),
        offset_bytes: 100_000_000_000,
        size_bytes: 100_000_000_000,
        ios: 1_000_000,
        ..base.clone()
    };
    let reader = WorkloadSpec {
        name: Some("reader".into()),
        rw: Rw::Randread,
        bs: vec![(4096, 1)],
        iodepth: 1,
        size_bytes: 90_000_000_000,
        ios: reader_ios,
        warmup_ios: 0,
        ..base
    };
    s.workloads = vec![stream, reader];
    s.array.host.queue_depth = Some(1);
    s.array.host.nr_requests = Some(128);
    s
}

fn reader_latency_ms(r: &Results) -> (f64, f64) {
    let ops = &r.jobs[1].ops["read"];
    (ops.lat_mean_ns / 1e6, ops.lat_max_ns as f64 / 1e6)
}

#[test]
fn a_read_behind_the_elevator_waits_about_read_expire() {
    // The stream always has a request ahead of the elevator; the reader's reads lie
    // behind it, so only their deadline gets them served.
    for expire_ms in [500u64, 250] {
        let mut s = with(
            reader_behind_a_stream(Rw::Read, 16, 20),
            SchedulerKind::MqDeadline,
        );
        s.array.host.deadline = Some(DeadlineSpec {
            read_expire_ns: expire_ms * 1_000_000,
            ..DeadlineSpec::default()
        });
        let r = simulate(&s);
        let (mean, max) = reader_latency_ms(&r);
        let expire = expire_ms as f64;
        // Expired, it still waits for the batch in progress (up to 16 requests).
        assert!(
            mean > expire && max < expire + 120.0,
            "read_expire {expire_ms} ms: reader mean {mean:.1} ms, max {max:.1} ms"
        );
        assert!(r.explain.scheduler.unwrap().expired >= 20);
    }
}

#[test]
fn deadline_lets_reads_pass_a_queue_of_writes() {
    let s = reader_behind_a_stream(Rw::Write, 64, 100);
    let (fifo, _) = reader_latency_ms(&simulate(&with(s.clone(), SchedulerKind::None)));
    let (deadline, _) = reader_latency_ms(&simulate(&with(s.clone(), SchedulerKind::MqDeadline)));
    // FIFO: behind all 63 queued writes. mq-deadline: behind the write batch in
    // progress (fifo_batch = 16), as reads are preferred between batches.
    assert!(
        deadline < 0.4 * fifo,
        "fifo {fifo:.1} ms, mq-deadline {deadline:.1} ms"
    );
    let mut s = with(s, SchedulerKind::MqDeadline);
    s.array.host.deadline = Some(DeadlineSpec {
        fifo_batch: 1,
        ..DeadlineSpec::default()
    });
    let (one, _) = reader_latency_ms(&simulate(&s));
    assert!(
        one < 0.25 * deadline,
        "fifo_batch 1: {one:.1} ms vs 16: {deadline:.1} ms"
    );
}

#[test]
fn a_fifo_stage_deeper_than_the_host_changes_no_figure() {
    // The stage is plumbing only: with room for every request, none and mq-deadline
    // send each host I/O as the fast path does, at the same instant.
    let s = four_random_readers_on_ssds();
    let fast = simulate(&s);
    for kind in [SchedulerKind::None, SchedulerKind::MqDeadline] {
        let mut staged = with(s.clone(), kind);
        staged.array.host.queue_depth = Some(64);
        let r = simulate(&staged);
        assert_eq!(r.ops, fast.ops, "{kind:?}");
        assert_eq!(r.jobs, fast.jobs, "{kind:?}");
    }
}

#[test]
fn host_ios_beyond_nr_requests_wait_for_a_request() {
    // 64 outstanding, 8 requests: the reads that wait for one are not merged or
    // sorted yet, but their latency counts from submission.
    let mut s = with(random_reads_on_one_hdd(4), SchedulerKind::MqDeadline);
    s.array.host.nr_requests = Some(8);
    let few = simulate(&s);
    s.array.host.nr_requests = Some(128);
    let many = simulate(&s);
    assert!(iops(&many, "read") > 1.2 * iops(&few, "read"));
    assert_eq!(few.ops["read"].ios, 3_000);
}

#[test]
fn same_seed_gives_identical_results_with_each_scheduler() {
    for kind in [
        SchedulerKind::None,
        SchedulerKind::MqDeadline,
        SchedulerKind::Bfq,
    ] {
        let mut s = with(four_random_readers_on_ssds(), kind);
        w(&mut s).rw = Rw::Randrw;
        w(&mut s).iodepth = 8;
        s.array.host.queue_depth = Some(8);
        let text = serde_json::to_string(&s).unwrap();
        let a = simulate_json(&text).unwrap();
        assert_eq!(a, simulate_json(&text).unwrap(), "{kind:?}");
        assert!(
            a.contains(&format!("\"name\":\"{}\"", kind.name())),
            "{kind:?}"
        );
    }
}

#[test]
fn without_a_scheduler_the_results_carry_no_scheduler_report() {
    let r = simulate_json(&serde_json::to_string(&four_random_readers_on_ssds()).unwrap());
    let r = r.unwrap();
    assert!(!r.contains("scheduler"), "{r}");
}

#[test]
fn scheduler_settings_are_refused_with_the_field_named() {
    let refused = |edit: &dyn Fn(&mut Scenario), field: &str| {
        let mut s = four_random_readers_on_ssds();
        edit(&mut s);
        let e = s.validate().unwrap_err();
        assert_eq!(e.field, field, "{e}");
    };
    refused(
        &|s| s.array.host.queue_depth = Some(0),
        "array.host.queue_depth",
    );
    refused(
        &|s| s.array.host.nr_requests = Some(0),
        "array.host.nr_requests",
    );
    refused(
        &|s| s.array.host.max_sectors_kb = Some(2),
        "array.host.max_sectors_kb",
    );
    refused(
        &|s| s.array.host.deadline = Some(DeadlineSpec::default()),
        "array.host.deadline",
    );
    refused(
        &|s| {
            s.array.host.scheduler = SchedulerKind::Bfq;
            s.array.host.bfq = Some(BfqSpec {
                timeout_sync_ns: 0,
                ..BfqSpec::default()
            });
        },
        "array.host.bfq.timeout_sync_ns",
    );
    let text = serde_json::to_string(&four_random_readers_on_ssds())
        .unwrap()
        .replace("\"host\":{", "\"host\":{\"scheduler\":\"cfq\",");
    let e = raidlab_sim::Scenario::from_json(&text).unwrap_err();
    assert!(e.message.contains("mq-deadline"), "{e}");
}
