//! RAID 5/6 parity placement equals md's. The reference below is written from the
//! switch statement of `raid5_compute_sector` (drivers/md/raid5.c), independently of the
//! crate's code, plus literal tables for 4 and 5 drives.

use proptest::prelude::*;
use raidlab_layout::{ArraySpec, Geometry, Layout, Level, StripeId};

/// md: (dd_idx, pd_idx, qd_idx) for chunk `chunk_number` of a level 5/6 array.
fn md_compute(
    level: u32,
    algorithm: Layout,
    raid_disks: i64,
    chunk_number: i64,
) -> (i64, i64, i64) {
    let max_degraded = if level == 6 { 2 } else { 1 };
    let data_disks = raid_disks - max_degraded;
    let stripe = chunk_number / data_disks;
    let mut dd_idx = chunk_number % data_disks;
    let stripe2 = stripe;
    let pd_idx;
    let mut qd_idx = -1;
    match level {
        5 => match algorithm {
            Layout::LeftAsymmetric => {
                pd_idx = data_disks - stripe2 % raid_disks;
                if dd_idx >= pd_idx {
                    dd_idx += 1;
                }
            }
            Layout::RightAsymmetric => {
                pd_idx = stripe2 % raid_disks;
                if dd_idx >= pd_idx {
                    dd_idx += 1;
                }
            }
            Layout::LeftSymmetric => {
                pd_idx = data_disks - stripe2 % raid_disks;
                dd_idx = (pd_idx + 1 + dd_idx) % raid_disks;
            }
            Layout::RightSymmetric => {
                pd_idx = stripe2 % raid_disks;
                dd_idx = (pd_idx + 1 + dd_idx) % raid_disks;
            }
            _ => unreachable!(),
        },
        6 => match algorithm {
            Layout::LeftAsymmetric | Layout::RightAsymmetric => {
                pd_idx = if algorithm == Layout::LeftAsymmetric {
                    raid_disks - 1 - stripe2 % raid_disks
                } else {
                    stripe2 % raid_disks
                };
                qd_idx = pd_idx + 1;
                if pd_idx == raid_disks - 1 {
                    dd_idx += 1; // Q D D D P
                    qd_idx = 0;
                } else if dd_idx >= pd_idx {
                    dd_idx += 2; // D D P Q D
                }
            }
            Layout::LeftSymmetric | Layout::RightSymmetric => {
                pd_idx = if algorithm == Layout::LeftSymmetric {
                    raid_disks - 1 - stripe2 % raid_disks
                } else {
                    stripe2 % raid_disks
                };
                qd_idx = (pd_idx + 1) % raid_disks;
                dd_idx = (pd_idx + 2 + dd_idx) % raid_disks;
            }
            _ => unreachable!(),
        },
        _ => unreachable!(),
    }
    (dd_idx, pd_idx, qd_idx)
}

/// md's syndrome slot: data disks counted cyclically from raid6_d0 (0 when Q is the
/// last disk, else qd_idx + 1), skipping P and Q.
fn md_slot(raid_disks: i64, pd: i64, qd: i64, disk: i64) -> i64 {
    let d0 = if qd == raid_disks - 1 { 0 } else { qd + 1 };
    let mut i = d0;
    let mut count = 0;
    loop {
        if i != pd && i != qd {
            if i == disk {
                return count;
            }
            count += 1;
        }
        i = (i + 1) % raid_disks;
        assert!(i != d0, "disk {disk} is not a data disk");
    }
}

fn geometry(level: Level, n: u32, layout: Layout) -> Geometry {
    Geometry::new(&ArraySpec::new(level, n, 4096, 64 * 4096).with_layout(layout)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn raid5_and_raid6_placement_equals_md(
        six in any::<bool>(), l in 0usize..4, n in 3u32..=16, chunk in 0u64..4096
    ) {
        let level = if six { 6 } else { 5 };
        let n = if six { n.max(4) } else { n };
        let layout = Layout::PARITY[l];
        let geo = geometry(if six { Level::Raid6 } else { Level::Raid5 }, n, layout);
        let chunk = chunk % (geo.capacity_bytes() / 4096);
        let (dd, pd, qd) = md_compute(level, layout, i64::from(n), chunk as i64);
        let l = chunk * 4096;
        prop_assert_eq!(i64::from(geo.locate(l).member), dd);
        let par = geo.parity_of(l);
        prop_assert_eq!(i64::from(par.p.unwrap().member), pd);
        prop_assert_eq!(par.q.map_or(-1, |q| i64::from(q.member)), qd);
        let data_disks = u64::from(n) - if six { 2 } else { 1 };
        prop_assert_eq!(par.p.unwrap().offset_bytes, chunk / data_disks * 4096);
        if six {
            let addr = geo.stripe_address(l).unwrap();
            prop_assert_eq!(i64::from(geo.syndrome_slot(addr.id, addr.data_index)), md_slot(i64::from(n), pd, qd, dd));
        }
    }

    #[test]
    fn raid50_and_raid60_spans_use_md_placement_inside_each_span(
        six in any::<bool>(), l in 0usize..4, w in 0u32..3, spans in 1u32..=3, chunk in 0u64..4096
    ) {
        let width = w + if six { 4 } else { 3 };
        let layout = Layout::PARITY[l];
        let level = if six { Level::Raid60 } else { Level::Raid50 };
        let geo = Geometry::new(&ArraySpec::new(level, width * spans, 4096, 64 * 4096).with_layout(layout).with_spans(spans)).unwrap();
        let chunk = chunk % (geo.capacity_bytes() / 4096);
        let span = (chunk % u64::from(spans)) as u32;
        let (dd, pd, _) = md_compute(if six { 6 } else { 5 }, layout, i64::from(width), (chunk / u64::from(spans)) as i64);
        prop_assert_eq!(i64::from(geo.locate(chunk * 4096).member), i64::from(span * width) + dd);
        prop_assert_eq!(i64::from(geo.parity_of(chunk * 4096).p.unwrap().member), i64::from(span * width) + pd);
    }
}

/// One row per stripe: the member of D0, D1, ... then P (and Q).
fn table(geo: &Geometry, stripes: u64) -> Vec<Vec<u32>> {
    let d = geo.members() - geo.parity_per_stripe();
    (0..stripes)
        .map(|stripe| {
            let id = StripeId { span: 0, stripe };
            let mut row: Vec<u32> = (0..d).map(|k| geo.data_member(id, k)).collect();
            row.push(geo.p_member(id).unwrap());
            row.extend(geo.q_member(id));
            row
        })
        .collect()
}

#[test]
fn raid5_left_symmetric_on_4_drives_rotates_parity_down_with_data_after_it() {
    let geo = geometry(Level::Raid5, 4, Layout::LeftSymmetric);
    // [D0, D1, D2, P] members per stripe.
    assert_eq!(
        table(&geo, 5),
        vec![
            vec![0, 1, 2, 3],
            vec![3, 0, 1, 2],
            vec![2, 3, 0, 1],
            vec![1, 2, 3, 0],
            vec![0, 1, 2, 3],
        ]
    );
}

#[test]
fn raid5_left_asymmetric_on_4_drives_keeps_data_in_member_order() {
    let geo = geometry(Level::Raid5, 4, Layout::LeftAsymmetric);
    assert_eq!(
        table(&geo, 4),
        vec![
            vec![0, 1, 2, 3],
            vec![0, 1, 3, 2],
            vec![0, 2, 3, 1],
            vec![1, 2, 3, 0]
        ]
    );
}

#[test]
fn raid5_right_layouts_on_4_drives_rotate_parity_up() {
    let sym = geometry(Level::Raid5, 4, Layout::RightSymmetric);
    assert_eq!(
        table(&sym, 4),
        vec![
            vec![1, 2, 3, 0],
            vec![2, 3, 0, 1],
            vec![3, 0, 1, 2],
            vec![0, 1, 2, 3]
        ]
    );
    let asym = geometry(Level::Raid5, 4, Layout::RightAsymmetric);
    assert_eq!(
        table(&asym, 4),
        vec![
            vec![1, 2, 3, 0],
            vec![0, 2, 3, 1],
            vec![0, 1, 3, 2],
            vec![0, 1, 2, 3]
        ]
    );
}

#[test]
fn raid5_left_symmetric_on_5_drives() {
    let geo = geometry(Level::Raid5, 5, Layout::LeftSymmetric);
    assert_eq!(
        table(&geo, 5),
        vec![
            vec![0, 1, 2, 3, 4],
            vec![4, 0, 1, 2, 3],
            vec![3, 4, 0, 1, 2],
            vec![2, 3, 4, 0, 1],
            vec![1, 2, 3, 4, 0],
        ]
    );
}

#[test]
fn raid6_left_symmetric_on_5_drives_puts_q_after_p() {
    let geo = geometry(Level::Raid6, 5, Layout::LeftSymmetric);
    // [D0, D1, D2, P, Q]: P on 4, Q wraps to 0, data from 1.
    assert_eq!(
        table(&geo, 5),
        vec![
            vec![1, 2, 3, 4, 0],
            vec![0, 1, 2, 3, 4],
            vec![4, 0, 1, 2, 3],
            vec![3, 4, 0, 1, 2],
            vec![2, 3, 4, 0, 1],
        ]
    );
}

#[test]
fn raid6_left_asymmetric_on_5_drives_and_its_syndrome_slots() {
    let geo = geometry(Level::Raid6, 5, Layout::LeftAsymmetric);
    // Q D D D P, then D D D P Q, D D P Q D, D P Q D D, P Q D D D.
    assert_eq!(
        table(&geo, 5),
        vec![
            vec![1, 2, 3, 4, 0],
            vec![0, 1, 2, 3, 4],
            vec![0, 1, 4, 2, 3],
            vec![0, 3, 4, 1, 2],
            vec![2, 3, 4, 0, 1],
        ]
    );
    // Stripe 2 (D D P Q D): md's slots start after Q, at member 4 (D2), then 0, 1.
    let id = StripeId { span: 0, stripe: 2 };
    assert_eq!(
        (0..3).map(|k| geo.syndrome_slot(id, k)).collect::<Vec<_>>(),
        vec![1, 2, 0]
    );
}

#[test]
fn raid4_keeps_parity_on_the_last_member() {
    let geo = Geometry::new(&ArraySpec::new(Level::Raid4, 4, 4096, 64 * 4096)).unwrap();
    assert!(table(&geo, 6).iter().all(|row| row == &vec![0, 1, 2, 3]));
}
