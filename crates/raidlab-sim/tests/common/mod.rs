//! Scenarios the simulator's integration tests share.
#![allow(dead_code)]

use raidlab_sim::scenario::{
    ArraySpec, ControllerSpec, Distribution, DriveSpec, HddSpec, HostSpec, Rw, Scenario, SsdSpec,
    WorkloadSpec, SCHEMA,
};

pub fn ssd() -> DriveSpec {
    DriveSpec::Ssd(SsdSpec {
        model: "test-ssd".into(),
        capacity_bytes: 100_000_000_000,
        link_rate_bytes_per_s: 530e6,
        command_overhead_ns: 5_000,
        channels: 8,
        dies_per_channel: 4,
        page_bytes: 16384,
        read_page_ns: 50_000,
        program_page_ns: 800_000,
        channel_rate_bytes_per_s: 400e6,
        write_buffer_bytes: 8 << 20,
        write_commit_ns: 0,
        queued_command_latency_ns: 0,
        read_buffer: true,
        program_suspend: false,
        ftl: None,
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
        ncq_depth: 32,
    })
}

pub fn hba() -> ControllerSpec {
    ControllerSpec {
        name: "hba".into(),
        request_overhead_ns: 0,
        member_op_overhead_ns: 0,
        max_member_transfer_bytes: 32 << 20,
        port_rate_bytes_per_s: 600e6,
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
