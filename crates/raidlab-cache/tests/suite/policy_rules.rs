//! Each policy rule on a tiny scripted trace.

use crate::common::{cache_offsets_written, raidix_tiny, req, run, KIB, LINE};
use raidlab_cache::{Action, Area, Cache, CacheConfig, Entry, Op, Policy, Request, WriteReason};

#[test]
fn raidix_admits_a_random_read_on_its_third_touch() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    for touch in 1..=2 {
        let a = run(&mut cache, req(Op::Read, 100, 1));
        assert_eq!(
            a,
            vec![Action::ArrayRead {
                lba_bytes: 100 * LINE,
                len_bytes: LINE
            }],
            "touch {touch}"
        );
    }
    let a = run(&mut cache, req(Op::Read, 100, 1));
    assert_eq!(a.len(), 2);
    assert!(
        matches!(a[1], Action::CacheWrite { lba_bytes, reason: WriteReason::Admit, .. } if lba_bytes == 100 * LINE)
    );
    let a = run(&mut cache, req(Op::Read, 100, 1));
    assert!(matches!(a[..], [Action::CacheRead { lba_bytes, .. }] if lba_bytes == 100 * LINE));
    assert_eq!(cache.counters().read_admitted_lines, 1);
    assert_eq!(cache.counters().read_hit_lines_rrc, 1);
}

#[test]
fn raidix_never_admits_sequential_reads() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    for _ in 0..4 {
        let a = run(&mut cache, req(Op::Read, 0, 32)); // 128 KiB: sequential by size
        assert!(a.iter().all(|a| matches!(a, Action::ArrayRead { .. })));
    }
    assert_eq!(cache.counters().read_admitted_lines, 0);
}

#[test]
fn raidix_write_cache_takes_writes_shorter_than_32_kib_only() {
    let mut cfg = CacheConfig::new(Policy::Raidix, 64 * LINE);
    cfg.region_bytes = 16 * LINE;
    cfg.sequential_run_bytes = 1 << 20; // keep the size rule apart from the detector
    let mut cache = Cache::new(cfg).unwrap();
    let a = run(&mut cache, req(Op::Write, 0, 7)); // 28 KiB
    assert!(a.iter().all(|a| matches!(
        a,
        Action::CacheWrite {
            reason: WriteReason::Host,
            ..
        }
    )));
    let a = run(&mut cache, req(Op::Write, 100, 8)); // 32 KiB: not smaller than the threshold
    assert_eq!(
        a,
        vec![Action::ArrayWrite {
            lba_bytes: 100 * LINE,
            len_bytes: 32 * KIB
        }]
    );
    assert_eq!(cache.counters().write_cached_lines, 7);
    assert_eq!(cache.counters().write_bypass_lines, 8);
}

#[test]
fn raidix_records_writes_log_structured_regardless_of_lba() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    let mut offsets = Vec::new();
    for line in [900, 5, 333, 77] {
        offsets.extend(cache_offsets_written(&run(
            &mut cache,
            req(Op::Write, line, 1),
        )));
    }
    // Consecutive cache offsets inside the first RWC region (regions 0-1 are RRC).
    let base = 2 * 4 * LINE;
    assert_eq!(
        offsets,
        vec![base, base + LINE, base + 2 * LINE, base + 3 * LINE]
    );
}

#[test]
fn raidix_rewrite_appends_and_invalidates_the_old_copy() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    run(&mut cache, req(Op::Write, 9, 1));
    let a = run(&mut cache, req(Op::Write, 9, 1));
    assert_eq!(cache_offsets_written(&a), vec![(8 + 1) * LINE]);
    assert_eq!(cache.counters().write_hit_lines, 1);
    assert_eq!(cache.entries().len(), 1);
}

#[test]
fn raidix_write_regions_leave_in_fifo_order_destaged_sorted_by_lba() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    // Fill both RWC regions: region A gets lines 40,10,30,20; region B 8,6,7,5.
    for line in [40, 10, 30, 20, 8, 6, 7, 5] {
        run(&mut cache, req(Op::Write, line, 1));
    }
    // The next write needs a region: A (the oldest) leaves, sorted by LBA.
    let a = run(&mut cache, req(Op::Write, 1000, 1));
    let destaged: Vec<u64> = a
        .iter()
        .filter_map(|a| match a {
            Action::Destage { lba_bytes, .. } => Some(lba_bytes / LINE),
            _ => None,
        })
        .collect();
    assert_eq!(destaged, vec![10, 20, 30, 40]);
    assert!(
        matches!(a.last(), Some(Action::CacheWrite { .. })),
        "destage before the slot is reused"
    );
    assert_eq!(cache.counters().evicted_regions_rwc, 1);
    // Then B.
    let mut destaged = Vec::new();
    for line in [2000, 2001, 2002, 2003] {
        for a in run(&mut cache, req(Op::Write, line, 1)) {
            if let Action::Destage {
                lba_bytes,
                len_bytes,
                ..
            } = a
            {
                destaged.extend(
                    (lba_bytes..lba_bytes + len_bytes)
                        .step_by(LINE as usize)
                        .map(|b| b / LINE),
                );
            }
        }
    }
    // 6 and 7 were written one after the other: one merged destage of two lines.
    assert_eq!(destaged, vec![5, 6, 7, 8]);
}

#[test]
fn raidix_reads_dirty_lines_from_the_write_cache() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    run(&mut cache, req(Op::Write, 3, 1));
    let a = run(&mut cache, req(Op::Read, 3, 1));
    assert!(matches!(a[..], [Action::CacheRead { .. }]));
    assert_eq!(cache.counters().read_hit_lines_rwc, 1);
}

#[test]
fn raidix_large_write_invalidates_cached_lines() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    run(&mut cache, req(Op::Write, 3, 1));
    let a = run(&mut cache, req(Op::Write, 0, 16));
    assert_eq!(
        a,
        vec![Action::ArrayWrite {
            lba_bytes: 0,
            len_bytes: 16 * LINE
        }]
    );
    assert!(cache.entries().is_empty());
    assert_eq!(cache.dirty_bytes(), 0);
}

#[test]
fn raidix_evicts_the_coldest_read_region_and_refills_it_from_the_ghost_queue() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    let admit = |cache: &mut Cache, line: u64| {
        for _ in 0..3 {
            run(cache, req(Op::Read, line, 1));
        }
    };
    // Two RRC regions of 4 lines: fill them with lines 0..8.
    for line in 0..8 {
        admit(&mut cache, line);
    }
    // Heat region 0 (lines 0..4).
    for line in 0..4 {
        run(&mut cache, req(Op::Read, line, 1));
    }
    // Lines 50 and 60 become hot in the ghost queue (two touches each).
    for line in [60, 50, 60, 50] {
        run(&mut cache, req(Op::Read, line, 1));
    }
    // Admitting line 70 evicts region 1 (cold), refills it with 50 and 60 in LBA order.
    admit(&mut cache, 70);
    let c = cache.counters();
    assert_eq!(c.evicted_regions_rrc, 1);
    assert_eq!(c.evicted_clean_lines, 4);
    assert_eq!(c.refill_lines, 2);
    let lines: Vec<u64> = cache.entries().iter().map(|e| e.lba_bytes / LINE).collect();
    assert_eq!(lines, vec![0, 1, 2, 3, 50, 60, 70]);
}

#[test]
fn raidix_flush_destages_everything_and_restore_round_trips() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    for line in [7, 3, 9] {
        run(&mut cache, req(Op::Write, line, 1));
    }
    for _ in 0..3 {
        run(&mut cache, req(Op::Read, 42, 1));
    }
    let entries = cache.entries();
    assert_eq!(entries.iter().filter(|e| e.dirty).count(), 3);
    let mut copy = Cache::restore(raidix_tiny(), entries.clone()).unwrap();
    assert_eq!(copy.entries(), entries);
    let mut out = Vec::new();
    copy.flush(&mut out);
    let lbas: Vec<u64> = out
        .iter()
        .map(|a| match a {
            Action::Destage { lba_bytes, .. } => lba_bytes / LINE,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(lbas, vec![3, 7, 9]);
    assert_eq!(copy.dirty_bytes(), 0);
    assert!(copy.entries().iter().all(|e| e.area == Area::Rrc));
}

#[test]
fn restore_rejects_overlapping_entries() {
    let e = Entry {
        lba_bytes: 0,
        cache_offset_bytes: 0,
        area: Area::Rrc,
        dirty: false,
        region_epoch: 1,
    };
    let err = Cache::restore(
        raidix_tiny(),
        [
            e,
            Entry {
                lba_bytes: LINE,
                ..e
            },
        ],
    )
    .err()
    .unwrap();
    assert_eq!(err.field, "entries");
}

#[test]
fn lru_admits_on_first_touch_and_writes_in_place() {
    let mut cache = Cache::new(CacheConfig::new(Policy::Lru, 4 * LINE)).unwrap();
    let a = run(&mut cache, req(Op::Read, 5, 1));
    assert!(matches!(
        a[1],
        Action::CacheWrite {
            reason: WriteReason::Admit,
            cache_offset_bytes: 0,
            ..
        }
    ));
    let a = run(&mut cache, req(Op::Write, 5, 1));
    assert_eq!(
        a,
        vec![Action::CacheWrite {
            lba_bytes: 5 * LINE,
            len_bytes: LINE,
            cache_offset_bytes: 0,
            reason: WriteReason::Host
        }]
    );
    assert_eq!(cache.counters().write_hit_lines, 1);
}

#[test]
fn lru_evicts_least_recently_used_and_destages_it_when_dirty() {
    let mut cache = Cache::new(CacheConfig::new(Policy::Lru, 2 * LINE)).unwrap();
    run(&mut cache, req(Op::Write, 1, 1));
    run(&mut cache, req(Op::Read, 2, 1));
    run(&mut cache, req(Op::Read, 2, 1));
    let a = run(&mut cache, req(Op::Read, 3, 1));
    assert_eq!(
        a[1],
        Action::Destage {
            lba_bytes: LINE,
            len_bytes: LINE,
            cache_offset_bytes: 0
        }
    );
    assert!(matches!(
        a[2],
        Action::CacheWrite {
            cache_offset_bytes: 0,
            ..
        }
    ));
}

#[test]
fn bcache_bypasses_a_stream_once_its_run_passes_the_sequential_cutoff() {
    let mut cache = Cache::new(CacheConfig::new(Policy::Bcache, 4096 * LINE)).unwrap();
    let mb = 1 << 20;
    let mut bypassed = Vec::new();
    for i in 0..6 {
        let r = Request {
            stream: 1,
            op: Op::Write,
            offset_bytes: i * mb,
            len_bytes: mb,
        };
        let a = run(&mut cache, r);
        bypassed.push(a.iter().all(|a| matches!(a, Action::ArrayWrite { .. })));
    }
    // Runs of 1..4 MiB are cached; 5 MiB passes the 4 MiB cutoff.
    assert_eq!(bypassed, vec![false, false, false, false, true, true]);
}

#[test]
fn smq_promotes_after_repeated_hotspot_hits() {
    let mut cache = Cache::new(CacheConfig::new(Policy::Smq, 64 * LINE)).unwrap();
    let a = run(&mut cache, req(Op::Read, 16, 1));
    assert_eq!(a.len(), 1, "first touch of the hotspot only counts");
    let a = run(&mut cache, req(Op::Read, 17, 1)); // same 16-line hotspot
    assert!(matches!(
        a[1],
        Action::CacheWrite {
            reason: WriteReason::Admit,
            ..
        }
    ));
    let a = run(&mut cache, req(Op::Write, 100, 1));
    assert_eq!(
        a,
        vec![Action::ArrayWrite {
            lba_bytes: 100 * LINE,
            len_bytes: LINE
        }]
    );
}

#[test]
fn unaligned_requests_pass_through_after_destaging_what_they_overlap() {
    let mut cache = Cache::new(raidix_tiny()).unwrap();
    run(&mut cache, req(Op::Write, 2, 1));
    let r = Request {
        stream: 0,
        op: Op::Write,
        offset_bytes: 2 * LINE + 512,
        len_bytes: 512,
    };
    let a = run(&mut cache, r);
    assert!(matches!(a[0], Action::Destage { lba_bytes, .. } if lba_bytes == 2 * LINE));
    assert_eq!(
        a[1],
        Action::ArrayWrite {
            lba_bytes: 2 * LINE + 512,
            len_bytes: 512
        }
    );
    assert_eq!(cache.dirty_bytes(), 0);
}

#[test]
fn bad_config_names_the_field() {
    let mut c = raidix_tiny();
    c.region_bytes = 16 * LINE;
    assert_eq!(Cache::new(c).err().unwrap().field, "region_bytes");
    let c = CacheConfig::new(Policy::Lru, 100);
    assert_eq!(
        Cache::new(c).err().unwrap().to_string(),
        "capacity_bytes: between one line (4096 bytes) and 4294967294 lines"
    );
}

#[test]
fn same_trace_gives_same_actions() {
    let trace: Vec<Request> = (0..2000u64)
        .map(|i| {
            let line = (i * 7919) % 97;
            Request {
                stream: (i % 3) as u32,
                op: if i % 3 == 0 { Op::Write } else { Op::Read },
                offset_bytes: line * LINE,
                len_bytes: LINE,
            }
        })
        .collect();
    for policy in Policy::ALL {
        let mut cfg = CacheConfig::new(policy, 32 * LINE);
        cfg.region_bytes = 4 * LINE;
        let go = || {
            let mut cache = Cache::new(cfg.clone()).unwrap();
            let mut out = Vec::new();
            for r in &trace {
                cache.access(r, &mut out);
            }
            (out, cache.counters().clone(), cache.entries())
        };
        assert_eq!(go(), go(), "{}", policy.name());
    }
}
