//! Scenarios the simulator's integration tests share.
#![allow(dead_code)]

use raidlab_sim::scenario::{
    ArraySpec, ControllerSpec, Distribution, DriveSpec, FtlGc, FtlSpec, HddSpec, HostSpec,
    MemberCommands, MemberDispatch, Precondition, RebuildSpec, Rw, Scenario, SsdSpec, WorkloadSpec,
    SCHEMA,
};
use raidlab_sim::Results;

pub fn ssd() -> DriveSpec {
    DriveSpec::Ssd(SsdSpec {
        model: "test-ssd".into(),
        capacity_bytes: 100_000_000_000,
        link_rate_bytes_per_s: 530e6,
        command_overhead_ns: 5_000,
        link_command_overhead_ns: 0,
        write_link_rate_bytes_per_s: None,
        write_link_command_overhead_ns: None,
        channels: 8,
        dies_per_channel: 4,
        page_bytes: 16384,
        read_page_ns: 50_000,
        program_page_ns: 800_000,
        channel_rate_bytes_per_s: 400e6,
        write_buffer_bytes: 8 << 20,
        write_commit_ns: 0,
        queued_command_latency_ns: 0,
        write_merge_unit_bytes: 0,
        read_buffer: true,
        program_suspend: false,
        read_retry_percent: 0.0,
        ftl: None,
        ncq_depth: 32,
    })
}

/// The FTL of the Intel DC S3500 fixtures: 256 pages a block, 3 ms erases, greedy
/// garbage collection, tracked in 2^17 units of 4 KiB mappings.
pub fn s3500_ftl(spare_percent: f64, op_percent: f64, precondition: Precondition) -> FtlSpec {
    FtlSpec {
        spare_percent,
        op_percent,
        pages_per_block: 256,
        erase_ns: 3_000_000,
        gc_unit_firmware_ns: 0,
        gc_burst_units: 0,
        idle_gc_free_percent: 0.0,
        map_unit_bytes: 4096,
        gc: FtlGc::Greedy,
        units: 1 << 17,
        precondition,
    }
}

/// A drive shaped like the Intel DC S3500 800 GB: 32 dies, 16 KiB pages.
pub fn s3500_800g(spare_percent: f64, op_percent: f64, precondition: Precondition) -> DriveSpec {
    DriveSpec::Ssd(SsdSpec {
        model: "test-enterprise".into(),
        capacity_bytes: 800_000_000_000,
        link_rate_bytes_per_s: 550e6,
        command_overhead_ns: 13_000,
        link_command_overhead_ns: 0,
        write_link_rate_bytes_per_s: None,
        write_link_command_overhead_ns: None,
        channels: 8,
        dies_per_channel: 4,
        page_bytes: 16384,
        read_page_ns: 70_000,
        program_page_ns: 1_165_000,
        channel_rate_bytes_per_s: 200e6,
        write_buffer_bytes: 16 << 20,
        write_commit_ns: 0,
        queued_command_latency_ns: 0,
        write_merge_unit_bytes: 0,
        ftl: Some(s3500_ftl(spare_percent, op_percent, precondition)),
        read_buffer: true,
        program_suspend: false,
        read_retry_percent: 0.0,
        ncq_depth: 32,
    })
}

/// A drive shaped like the Intel DC S3500 80 GB: 6 dies, 20 % factory spare.
pub fn s3500_80g() -> DriveSpec {
    DriveSpec::Ssd(SsdSpec {
        model: "test-s3500-80g".into(),
        capacity_bytes: 80_000_000_000,
        link_rate_bytes_per_s: 340e6,
        command_overhead_ns: 10_000,
        link_command_overhead_ns: 0,
        write_link_rate_bytes_per_s: None,
        write_link_command_overhead_ns: None,
        channels: 6,
        dies_per_channel: 1,
        page_bytes: 16384,
        read_page_ns: 70_000,
        program_page_ns: 983_000,
        channel_rate_bytes_per_s: 200e6,
        write_buffer_bytes: 16 << 20,
        write_commit_ns: 0,
        queued_command_latency_ns: 0,
        write_merge_unit_bytes: 0,
        ftl: Some(s3500_ftl(20.0, 0.0, Precondition::Steady)),
        read_buffer: true,
        program_suspend: false,
        read_retry_percent: 0.0,
        ncq_depth: 32,
    })
}

pub fn hdd() -> DriveSpec {
    DriveSpec::Hdd(HddSpec {
        model: "test-hdd".into(),
        capacity_bytes: 250_000_000_000,
        rpm: 7200,
        seek_ns_track_to_track: 1_000_000,
        seek_ns_avg: 8_500_000,
        seek_ns_full_stroke: 15_000_000,
        media_rate_bytes_per_s_outer: 140e6,
        media_rate_bytes_per_s_inner: 70e6,
        zones: 16,
        command_overhead_ns: 100_000,
        link_rate_bytes_per_s: 280e6,
        cache_bytes: 8 << 20,
        read_ahead_bytes: 1 << 20,
        write_cache: false,
        write_buffer_bytes: None,
        ncq_depth: 32,
        mechanics: Default::default(),
    })
}

pub fn hba() -> ControllerSpec {
    ControllerSpec {
        name: "hba".into(),
        request_overhead_ns: 0,
        member_op_overhead_ns: 0,
        max_member_transfer_bytes: 32 << 20,
        member_commands: MemberCommands::Merged,
        member_dispatch: MemberDispatch::Batch,
        member_queue_depth: None,
        spindle_phase: Default::default(),
        port_rate_bytes_per_s: 600e6,
        full_rate_ports: None,
        slow_port_rate_bytes_per_s: None,
        bus_rate_bytes_per_s: None,
        read_rate_bytes_per_s_max: None,
        write_rate_bytes_per_s_max: None,
        read_ahead_bytes: 0,
        read_ahead_segments: 1,
        read_hit_overhead_ns: 0,
        read_ahead_always: false,
        parity_rate_bytes_per_s: None,
        read_balance: Default::default(),
        cache_bytes: 0,
        write_back: false,
        cache_overhead_ns: 0,
        destage_concurrency: 4,
        dirty_low_percent: 0.0,
        dirty_high_percent: 0.0,
        trim_passthrough: false,
        fastpath_overhead_ns: None,
        fastpath: false,
        read_ahead_within_stripe_unit: false,
        rebuild_rate_min_bytes_per_s: None,
        rebuild_share_percent: None,
        rebuild_depth: 32,
        uplink: None,
    }
}

pub fn scenario(drive: DriveSpec, drives: u32, rw: Rw, bs: u64, iodepth: u32) -> Scenario {
    Scenario {
        schema: SCHEMA,
        seed: 1,
        array: ArraySpec {
            level: raidlab_sim::scenario::Level::Number(0),
            layout: None,
            copies: None,
            spans: None,
            failed: vec![],
            rebuild: None,
            stripe_unit_bytes: 65536,
            drive_count: drives,
            drive,
            controller: hba(),
            host: HostSpec {
                request_overhead_ns: 5_000,
                ..HostSpec::default()
            },
            deleted_percent: 0.0,
            spares: 0,
            cache: None,
        },
        workloads: vec![],
        trace: None,
        workload: Some(WorkloadSpec {
            rw,
            bs: vec![(bs, 1)],
            rwmixread: 50,
            iodepth,
            numjobs: 1,
            offset_bytes: 0,
            size_bytes: 8 << 30,
            ios: 5_000,
            warmup_ios: 500,
            runtime_ns: None,
            distribution: Distribution::Uniform,
            name: None,
            bs_write: None,
            warmup_ns: 0,
            sample_interval_ns: 500_000_000,
        }),
    }
}

/// The single workload of a test scenario.
pub fn w(s: &mut Scenario) -> &mut WorkloadSpec {
    s.workload
        .as_mut()
        .expect("test scenarios have one workload")
}

/// Host IOPS of one direction (`read`, `write` or `trim`).
pub fn iops(r: &Results, op: &str) -> f64 {
    r.ops[op].iops
}

/// Host MB/s of one direction (`read`, `write` or `trim`).
pub fn mbps(r: &Results, op: &str) -> f64 {
    r.ops[op].mbps
}

/// Busy time over the measured interval, summed over the resources whose name
/// `selects` (e.g. every drive's, or one drive's firmware).
pub fn busy_ns(r: &Results, selects: impl Fn(&str) -> bool) -> u64 {
    r.explain
        .resources
        .iter()
        .filter(|x| selects(&x.name))
        .map(|x| x.busy_ns)
        .sum()
}

/// A rebuild of `member` at `rate_bytes_per_s` at most, the member failed before the
/// run and no minimum of the scenario's own.
pub fn rebuild_of(member: u32, rate_bytes_per_s: f64) -> RebuildSpec {
    RebuildSpec {
        member,
        rate_bytes_per_s,
        failed_at_ns: None,
        rate_min_bytes_per_s: None,
    }
}
