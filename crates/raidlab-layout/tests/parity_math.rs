//! Parity math: P is XOR, Q is md's Reed-Solomon syndrome, read-modify-write updates
//! agree with recomputation, and any one (P) or two (P+Q) missing blocks come back.

use proptest::prelude::*;
use raidlab_layout::parity::{self, gf_mul, gf_pow2, ParityError};

fn blocks(k: usize, len: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut x = seed | 1;
    (0..k)
        .map(|_| {
            (0..len)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 56) as u8
                })
                .collect()
        })
        .collect()
}

fn stripe(data: &[Vec<u8>], parity_count: usize) -> Vec<Vec<u8>> {
    let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let len = data[0].len();
    let (mut p, mut q) = (vec![0; len], vec![0; len]);
    parity::compute_pq(&refs, &mut p, &mut q);
    let mut all = data.to_vec();
    all.push(p);
    if parity_count == 2 {
        all.push(q);
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn q_is_the_sum_of_g_to_the_index_times_data(k in 1usize..20, len in 1usize..64, seed in any::<u64>()) {
        let data = blocks(k, len, seed);
        let s = stripe(&data, 2);
        for j in 0..len {
            let (mut p, mut q) = (0u8, 0u8);
            for (i, d) in data.iter().enumerate() {
                p ^= d[j];
                q ^= gf_mul(gf_pow2(i as u32), d[j]);
            }
            prop_assert_eq!(s[k][j], p);
            prop_assert_eq!(s[k + 1][j], q);
        }
    }

    #[test]
    fn any_tolerated_missing_blocks_are_rebuilt(
        six in any::<bool>(), k in 1usize..16, len in 1usize..48, seed in any::<u64>(),
        a in any::<usize>(), b in any::<usize>(), two in any::<bool>()
    ) {
        let parity_count = if six { 2 } else { 1 };
        let s = stripe(&blocks(k, len, seed), parity_count);
        let n = s.len();
        let mut missing = vec![a % n];
        if six && two {
            missing.push(b % n);
        }
        let mut work = s.clone();
        for &m in &missing {
            work[m].fill(0xA5);
        }
        let mut refs: Vec<&mut [u8]> = work.iter_mut().map(|b| b.as_mut_slice()).collect();
        parity::reconstruct(&mut refs, parity_count, &missing).unwrap();
        prop_assert_eq!(work, s);
    }

    #[test]
    fn read_modify_write_equals_recomputation(k in 1usize..16, len in 1usize..48, seed in any::<u64>(), i in any::<usize>()) {
        let data = blocks(k, len, seed);
        let i = i % k;
        let mut changed = data.clone();
        changed[i] = blocks(1, len, seed ^ 0x55)[0].clone();
        let before = stripe(&data, 2);
        let after = stripe(&changed, 2);
        let (mut p, mut q) = (before[k].clone(), before[k + 1].clone());
        parity::update_p(&mut p, &data[i], &changed[i]);
        parity::update_q(&mut q, i as u32, &data[i], &changed[i]);
        prop_assert_eq!(&p, &after[k]);
        prop_assert_eq!(&q, &after[k + 1]);
    }
}

#[test]
fn three_missing_blocks_of_a_raid6_stripe_are_refused() {
    let mut s = stripe(&blocks(4, 8, 7), 2);
    let mut refs: Vec<&mut [u8]> = s.iter_mut().map(|b| b.as_mut_slice()).collect();
    assert_eq!(
        parity::reconstruct(&mut refs, 2, &[0, 1, 2]),
        Err(ParityError::TooManyMissing {
            missing: 3,
            parity_count: 2
        })
    );
    assert!(matches!(
        parity::reconstruct(&mut refs, 2, &[9]),
        Err(ParityError::NoSuchBlock { index: 9, .. })
    ));
}

#[test]
fn q_of_known_bytes_matches_a_hand_computation() {
    // Q = 1*0x01 + 2*0x02 + 4*0x80 = 0x01 ^ 0x04 ^ (0x80*4 = 0x200 mod 0x11d -> 0x3a) = 0x3f.
    let d: [&[u8]; 3] = [&[0x01], &[0x02], &[0x80]];
    let mut q = [0u8];
    parity::compute_q(&d, &mut q);
    assert_eq!(q[0], 0x01 ^ 0x04 ^ 0x3a);
}
