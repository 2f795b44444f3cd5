//! TRIM through the array: whether the controller passes discards to its members, and
//! what that does to sustained random writes after the host deleted data.

use crate::common::{busy_ns, s3500_80g, scenario, w};
use raidlab_sim::scenario::{Level, Rw, Scenario};
use raidlab_sim::{simulate, Results};

/// RAID 0 of 2 full drives; the host deleted the second half of the array, then works
/// on the half it kept.
fn after_deleting_half(rw: Rw, passthrough: bool) -> Results {
    let mut s: Scenario = scenario(s3500_80g(), 2, rw, 4096, 32);
    s.array.controller.trim_passthrough = passthrough;
    s.array.deleted_percent = 50.0;
    let capacity = s.array.geometry().unwrap().capacity_bytes();
    w(&mut s).size_bytes = capacity / 2 / 4096 * 4096;
    w(&mut s).ios = 60_000;
    w(&mut s).warmup_ios = 40_000;
    simulate(&s)
}

#[test]
fn random_writes_after_deleting_half_are_faster_when_the_controller_passes_trim() {
    let kept = after_deleting_half(Rw::Randwrite, false);
    let trimmed = after_deleting_half(Rw::Randwrite, true);
    let (iops_kept, iops_trimmed) = (kept.ops["write"].iops, trimmed.ops["write"].iops);
    let wa_kept = kept.explain.ssd_write_amplification.unwrap();
    let wa_trimmed = trimmed.explain.ssd_write_amplification.unwrap();
    println!(
        "no passthrough: {iops_kept:.0} IOPS, WA {wa_kept:.2}; \
         passthrough: {iops_trimmed:.0} IOPS, WA {wa_trimmed:.2}"
    );
    assert!(wa_trimmed < wa_kept - 0.3, "{wa_kept} {wa_trimmed}");
    assert!(iops_trimmed > 1.3 * iops_kept, "{iops_kept} {iops_trimmed}");
}

#[test]
fn reads_do_not_care_whether_the_deleted_data_was_trimmed() {
    let kept = after_deleting_half(Rw::Randread, false);
    let trimmed = after_deleting_half(Rw::Randread, true);
    assert_eq!(kept.ops["read"].iops, trimmed.ops["read"].iops);
}

#[test]
fn a_trim_workload_reports_trims_and_unmaps_what_later_writes_would_copy() {
    let mut s: Scenario = scenario(s3500_80g(), 2, Rw::Randtrim, 4096, 8);
    s.array.controller.trim_passthrough = true;
    w(&mut s).ios = 5_000;
    let r = simulate(&s);
    assert!(r.ops.contains_key("trim") && !r.ops.contains_key("write"));
    assert_eq!(r.ops["trim"].ios, 5_000);
    assert!(r.jobs[0].samples.trim_ios.iter().sum::<u64>() > 0);
}

#[test]
fn without_passthrough_a_trim_never_reaches_the_drives() {
    let run = |passthrough: bool| {
        let mut s: Scenario = scenario(s3500_80g(), 2, Rw::Randtrim, 4096, 8);
        s.array.controller.trim_passthrough = passthrough;
        s.array.controller.request_overhead_ns = 2_000;
        w(&mut s).ios = 2_000;
        simulate(&s)
    };
    let (off, on) = (run(false), run(true));
    let firmware = |r: &Results| {
        r.explain
            .resources
            .iter()
            .find(|x| x.name == "drive0.firmware")
            .unwrap()
            .busy_ns
    };
    assert_eq!(firmware(&off), 0);
    assert!(firmware(&on) > 0);
}

#[test]
fn trimwrite_discards_each_block_then_writes_it() {
    let mut s: Scenario = scenario(s3500_80g(), 2, Rw::Trimwrite, 4096, 4);
    s.array.controller.trim_passthrough = true;
    w(&mut s).ios = 4_000;
    let r = simulate(&s);
    let (t, wr) = (r.ops["trim"].ios, r.ops["write"].ios);
    assert!(t.abs_diff(wr) <= 4, "{t} {wr}");
}

#[test]
fn raid5_passes_only_whole_stripes_so_a_4k_trim_reaches_no_drive() {
    let mut s: Scenario = scenario(s3500_80g(), 4, Rw::Randtrim, 4096, 8);
    s.array.level = Level::Number(5);
    s.array.controller.trim_passthrough = true;
    w(&mut s).ios = 2_000;
    let r = simulate(&s);
    assert_eq!(busy_ns(&r, |name| name.ends_with(".firmware")), 0);
}

/// A write-back controller in front of 2 SSDs that destages once more than 16 MiB are
/// dirty; one job writes and one trims the same 64 MiB at random. Member bytes written
/// per host byte written.
fn destaged_per_written(passthrough: bool) -> f64 {
    let mut s: Scenario = scenario(s3500_80g(), 2, Rw::Randwrite, 4096, 4);
    let c = &mut s.array.controller;
    c.trim_passthrough = passthrough;
    c.cache_bytes = 32 << 20;
    c.dirty_low_percent = 50.0;
    c.write_back = true;
    c.destage_concurrency = 1;
    let writer = s.workload.take().expect("one workload");
    let mut trimmer = writer.clone();
    trimmer.rw = Rw::Randtrim;
    for job in [writer, trimmer] {
        s.workloads.push(raidlab_sim::scenario::WorkloadSpec {
            size_bytes: 64 << 20,
            ios: 40_000,
            warmup_ios: 0,
            ..job
        });
    }
    simulate(&s).explain.member_bytes_per_host_byte["write"]
}

#[test]
fn a_trim_drops_dirty_cached_data_so_it_is_never_destaged() {
    let kept = destaged_per_written(false);
    let dropped = destaged_per_written(true);
    println!("member bytes per host byte written: {kept:.3} kept, {dropped:.3} trimmed");
    assert!(dropped < 0.7 * kept, "{kept} {dropped}");
}
