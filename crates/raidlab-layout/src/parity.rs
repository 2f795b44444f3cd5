//! Parity math: XOR parity (RAID 4/5, the P of RAID 6) and the Reed-Solomon Q syndrome of
//! RAID 6, with reconstruction of any one (P) or any two (P+Q) missing blocks.
//!
//! The field is GF(2^8) with polynomial x^8+x^4+x^3+x^2+1 (0x11d) and generator g = 2,
//! as in the Linux `raid6` library used by md (H. Peter Anvin, "The mathematics of
//! RAID-6"). For data blocks D_0..D_{k-1} in *syndrome order*:
//!
//! ```text
//! P = D_0 + D_1 + ... + D_{k-1}                 (+ is XOR)
//! Q = g^0 D_0 + g^1 D_1 + ... + g^{k-1} D_{k-1}
//! ```
//!
//! Syndrome order is md's slot order (see [`crate::Geometry::syndrome_slot`]); for the
//! symmetric layouts it is the logical data order of the stripe.
//!
//! Block lists passed to [`reconstruct`] are `[D_0, .., D_{k-1}, P]` (RAID 5) or
//! `[D_0, .., D_{k-1}, P, Q]` (RAID 6), all of one length. Nothing here allocates.
//!
//! ```
//! use raidlab_layout::parity;
//! let (d0, d1) = ([1u8, 2, 3], [7u8, 8, 9]);
//! let (mut p, mut q) = ([0u8; 3], [0u8; 3]);
//! parity::compute_pq(&[&d0, &d1], &mut p, &mut q);
//! // Lose D0 and Q, get them back.
//! let (mut l0, mut d1c, mut lq) = ([0u8; 3], d1, [0u8; 3]);
//! let mut blocks: [&mut [u8]; 4] = [&mut l0, &mut d1c, &mut p, &mut lq];
//! parity::reconstruct(&mut blocks, 2, &[0, 3]).unwrap();
//! assert_eq!(l0, d0);
//! assert_eq!(lq, q);
//! ```

/// The generator polynomial of md's RAID 6 field (lib/raid6: 0x11d).
pub const GF_POLYNOMIAL: u16 = 0x11d;

const fn build_tables() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        // Doubled so exp[log a + log b] needs no modulo.
        exp[i + 255] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= GF_POLYNOMIAL;
        }
        i += 1;
    }
    exp[510] = exp[0];
    exp[511] = exp[1];
    (exp, log)
}

const TABLES: ([u8; 512], [u8; 256]) = build_tables();
static GF_EXP: [u8; 512] = TABLES.0;
static GF_LOG: [u8; 256] = TABLES.1;

/// Product in GF(2^8).
#[inline]
pub fn gf_mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        GF_EXP[GF_LOG[a as usize] as usize + GF_LOG[b as usize] as usize]
    }
}

/// g^exponent in GF(2^8) (g = 2; the group has order 255).
#[inline]
pub fn gf_pow2(exponent: u32) -> u8 {
    GF_EXP[(exponent % 255) as usize]
}

/// Multiplicative inverse in GF(2^8). Panics on zero, which has none.
#[inline]
pub fn gf_inv(a: u8) -> u8 {
    assert!(a != 0, "zero has no inverse in GF(2^8)");
    GF_EXP[255 - GF_LOG[a as usize] as usize]
}

/// Multiplication by g = 2: a shift, reduced by the polynomial when the top bit falls off.
#[inline]
fn gf_mul2(a: u8) -> u8 {
    (a << 1) ^ if a & 0x80 != 0 { 0x1d } else { 0 }
}

/// The 256-entry product table of `c`, so a buffer multiply is one lookup per byte.
fn mul_table(c: u8) -> [u8; 256] {
    let mut t = [0u8; 256];
    for (x, v) in t.iter_mut().enumerate() {
        *v = gf_mul(c, x as u8);
    }
    t
}

/// `dst ^= src`.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "blocks differ in length");
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// `dst ^= c * src` in GF(2^8).
pub fn mul_xor_into(dst: &mut [u8], c: u8, src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "blocks differ in length");
    let t = mul_table(c);
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= t[*s as usize];
    }
}

/// P = XOR of all data blocks.
pub fn compute_p(data: &[&[u8]], p: &mut [u8]) {
    p.fill(0);
    for d in data {
        xor_into(p, d);
    }
}

/// Q = sum of g^i D_i over data blocks in syndrome order. Horner's rule from the highest
/// index, as lib/raid6's int code: `q = q*g + D_i`.
pub fn compute_q(data: &[&[u8]], q: &mut [u8]) {
    q.fill(0);
    for d in data.iter().rev() {
        assert_eq!(d.len(), q.len(), "blocks differ in length");
        for (qb, db) in q.iter_mut().zip(d.iter()) {
            *qb = gf_mul2(*qb) ^ db;
        }
    }
}

/// P and Q of a RAID 6 stripe.
pub fn compute_pq(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) {
    compute_p(data, p);
    compute_q(data, q);
}

/// Read-modify-write of P: `P ^= old ^ new` for one changed data block.
pub fn update_p(p: &mut [u8], old: &[u8], new: &[u8]) {
    assert!(
        p.len() == old.len() && p.len() == new.len(),
        "blocks differ in length"
    );
    for ((pb, o), n) in p.iter_mut().zip(old).zip(new) {
        *pb ^= o ^ n;
    }
}

/// Read-modify-write of Q: `Q ^= g^slot (old ^ new)` for the data block at syndrome `slot`.
pub fn update_q(q: &mut [u8], slot: u32, old: &[u8], new: &[u8]) {
    assert!(
        q.len() == old.len() && q.len() == new.len(),
        "blocks differ in length"
    );
    let t = mul_table(gf_pow2(slot));
    for ((qb, o), n) in q.iter_mut().zip(old).zip(new) {
        *qb ^= t[(o ^ n) as usize];
    }
}

/// Why a reconstruction was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParityError {
    /// More blocks are missing than the stripe has parity blocks.
    TooManyMissing {
        /// Number of missing blocks given.
        missing: usize,
        /// Parity blocks of the stripe (1 or 2).
        parity_count: usize,
    },
    /// A missing index is not a block of the stripe.
    NoSuchBlock {
        /// The offending index.
        index: usize,
        /// Blocks in the stripe.
        blocks: usize,
    },
    /// `parity_count` is not 1 or 2, or the stripe has no data block.
    BadShape {
        /// Blocks given.
        blocks: usize,
        /// Parity count given.
        parity_count: usize,
    },
}

impl std::fmt::Display for ParityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooManyMissing {
                missing,
                parity_count,
            } => write!(
                f,
                "{missing} blocks missing but the stripe has {parity_count} parity blocks"
            ),
            Self::NoSuchBlock { index, blocks } => {
                write!(f, "block {index} is not one of the stripe's {blocks} blocks")
            }
            Self::BadShape {
                blocks,
                parity_count,
            } => write!(
                f,
                "a stripe of {blocks} blocks with {parity_count} parity blocks (1 or 2 allowed, and at least one data block)"
            ),
        }
    }
}

impl std::error::Error for ParityError {}

/// `(&mut blocks[a], &blocks[b])` for a != b.
fn pair<'a>(blocks: &'a mut [&mut [u8]], a: usize, b: usize) -> (&'a mut [u8], &'a [u8]) {
    debug_assert_ne!(a, b);
    if a < b {
        let (lo, hi) = blocks.split_at_mut(b);
        (&mut *lo[a], &*hi[0])
    } else {
        let (lo, hi) = blocks.split_at_mut(a);
        (&mut *hi[0], &*lo[b])
    }
}

/// `blocks[dst] = XOR of blocks[i]` for every `i` in `0..upto` except `skip`s and `dst`.
fn xor_sum_into(blocks: &mut [&mut [u8]], dst: usize, upto: usize, skip: &[usize]) {
    blocks[dst].fill(0);
    for i in 0..upto {
        if i != dst && !skip.contains(&i) {
            let (d, s) = pair(blocks, dst, i);
            xor_into(d, s);
        }
    }
}

/// `blocks[dst] = sum of g^i blocks[i]` over data `i` in `0..data_count` except `skip`s
/// and `dst` (Horner, in place in `dst`, so no scratch buffer).
fn q_sum_into(blocks: &mut [&mut [u8]], dst: usize, data_count: usize, skip: &[usize]) {
    blocks[dst].fill(0);
    for i in (0..data_count).rev() {
        for b in blocks[dst].iter_mut() {
            *b = gf_mul2(*b);
        }
        if i != dst && !skip.contains(&i) {
            let (d, s) = pair(blocks, dst, i);
            xor_into(d, s);
        }
    }
}

/// Rebuilds the `missing` blocks of one stripe in place from the others.
///
/// `blocks` is `[D_0, .., D_{k-1}, P]` when `parity_count` is 1 and
/// `[D_0, .., D_{k-1}, P, Q]` when it is 2, data in syndrome order, all one length. The
/// content of missing blocks on entry is ignored. Any one block (RAID 5) or any two
/// (RAID 6: two data, data+P, data+Q, P+Q) can be rebuilt.
pub fn reconstruct(
    blocks: &mut [&mut [u8]],
    parity_count: usize,
    missing: &[usize],
) -> Result<(), ParityError> {
    let n = blocks.len();
    if !(1..=2).contains(&parity_count) || n <= parity_count {
        return Err(ParityError::BadShape {
            blocks: n,
            parity_count,
        });
    }
    let len = blocks[0].len();
    assert!(
        blocks.iter().all(|b| b.len() == len),
        "blocks differ in length"
    );
    let (mut lost, lost_count) = lost_blocks(missing, n, parity_count)?;
    let lost = &mut lost[..lost_count];
    lost.sort_unstable();
    let k = n - parity_count;
    let p = k;
    let q = k + 1;
    let lost_data: &[usize] = {
        let c = lost.iter().filter(|&&i| i < k).count();
        &lost[..c]
    };
    let p_lost = lost.contains(&p);
    let q_lost = parity_count == 2 && lost.contains(&q);
    match *lost_data {
        [] => {}
        [x] if !p_lost => {
            // D_x = P + sum of the other data.
            xor_sum_into(blocks, x, k + 1, &[]);
        }
        [x] => data_from_q(blocks, x, k),
        [x, y] => two_data_from_p_and_q(blocks, x, y, k),
        _ => unreachable!("at most two blocks are missing"),
    }
    if p_lost {
        xor_sum_into(blocks, p, k, &[]);
    }
    if q_lost {
        q_sum_into(blocks, q, k, &[]);
    }
    Ok(())
}

/// The distinct blocks of `missing`, in a fixed array (at most two matter) with their
/// count; refused past the block count or past what `parity_count` can rebuild.
fn lost_blocks(
    missing: &[usize],
    n: usize,
    parity_count: usize,
) -> Result<([usize; 2], usize), ParityError> {
    if let Some(&index) = missing.iter().find(|&&i| i >= n) {
        return Err(ParityError::NoSuchBlock { index, blocks: n });
    }
    let mut lost = [usize::MAX; 2];
    let mut lost_count = 0;
    for &i in missing {
        if lost[..lost_count].contains(&i) {
            continue;
        }
        if lost_count == parity_count {
            return Err(ParityError::TooManyMissing {
                missing: missing.len(),
                parity_count,
            });
        }
        lost[lost_count] = i;
        lost_count += 1;
    }
    Ok((lost, lost_count))
}

/// Data block `x` when P is gone too, of `k` data blocks (Q at `k + 1`): solve Q for
/// D_x: g^x D_x = Q + sum_{i != x} g^i D_i.
fn data_from_q(blocks: &mut [&mut [u8]], x: usize, k: usize) {
    let q = k + 1;
    q_sum_into(blocks, x, k, &[]);
    let (d, s) = pair(blocks, x, q);
    xor_into(d, s);
    let t = mul_table(gf_pow2(255 - x as u32 % 255));
    for b in blocks[x].iter_mut() {
        *b = t[*b as usize];
    }
}

/// Data blocks `x < y` of `k` (P at `k`, Q at `k + 1`). Anvin, "The mathematics of
/// RAID-6", section 4: with Pxy and Qxy the syndromes computed without D_x and D_y,
///   D_x = A (P + Pxy) + B (Q + Qxy),  D_y = (P + Pxy) + D_x,
///   A = g^(y-x) / (g^(y-x) + 1),  B = g^(-x) / (g^(y-x) + 1).
fn two_data_from_p_and_q(blocks: &mut [&mut [u8]], x: usize, y: usize, k: usize) {
    let q = k + 1;
    xor_sum_into(blocks, x, k + 1, &[y]); // P + Pxy
    q_sum_into(blocks, y, k, &[x]); // Qxy
    let (d, s) = pair(blocks, y, q);
    xor_into(d, s); // Q + Qxy
    let gyx = gf_pow2((y - x) as u32);
    let denom_inv = gf_inv(gyx ^ 1);
    let a = mul_table(gf_mul(gyx, denom_inv));
    let b = mul_table(gf_mul(gf_pow2(255 - x as u32 % 255), denom_inv));
    let (dx, dy) = {
        let (lo, hi) = blocks.split_at_mut(y);
        (&mut *lo[x], &mut *hi[0])
    };
    for (px, qy) in dx.iter_mut().zip(dy.iter_mut()) {
        let pxy = *px;
        let d_x = a[pxy as usize] ^ b[*qy as usize];
        *px = d_x;
        *qy = pxy ^ d_x;
    }
}

/// Which one block of a RAID 6 stripe disagrees with the others, from the differences
/// between the stored and recomputed syndromes (md's raid6check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyndromeFault {
    /// Both syndromes agree with the data.
    None,
    /// Only P differs: P is the bad block.
    P,
    /// Only Q differs: Q is the bad block.
    Q,
    /// Data block of this syndrome slot: it is wrong by exactly `p_delta`.
    Data(usize),
    /// No single block explains the differences: two or more blocks are bad.
    Several,
}

/// Locates the one bad block of a RAID 6 stripe of `data_count` data blocks, given
/// `p_delta` = stored P ^ P of the data and `q_delta` = stored Q ^ Q of the data. A
/// data block `z` off by `e` makes `p_delta = e` and `q_delta = g^z * e` at every byte,
/// so `z = log(q_delta) - log(p_delta)`, which must be the same slot at every byte
/// where they differ (raid6check's test).
pub fn locate_syndrome_fault(p_delta: &[u8], q_delta: &[u8], data_count: usize) -> SyndromeFault {
    assert_eq!(p_delta.len(), q_delta.len(), "syndromes differ in length");
    let p_bad = p_delta.iter().any(|&b| b != 0);
    let q_bad = q_delta.iter().any(|&b| b != 0);
    match (p_bad, q_bad) {
        (false, false) => return SyndromeFault::None,
        (true, false) => return SyndromeFault::P,
        (false, true) => return SyndromeFault::Q,
        (true, true) => {}
    }
    let mut slot = None;
    for (&dp, &dq) in p_delta.iter().zip(q_delta) {
        if (dp == 0) != (dq == 0) {
            return SyndromeFault::Several;
        }
        if dp == 0 {
            continue;
        }
        let z = (255 + GF_LOG[dq as usize] as usize - GF_LOG[dp as usize] as usize) % 255;
        if z >= data_count || slot.is_some_and(|s| s != z) {
            return SyndromeFault::Several;
        }
        slot = Some(z);
    }
    slot.map_or(SyndromeFault::Several, SyndromeFault::Data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_tables_match_the_polynomial() {
        // g^8 = x^4+x^3+x^2+1 = 0x1d under 0x11d.
        assert_eq!(gf_pow2(8), 0x1d);
        assert_eq!(gf_pow2(255), 1);
        for a in 1..=255u8 {
            assert_eq!(gf_mul(a, gf_inv(a)), 1);
            assert_eq!(gf_mul2(a), gf_mul(a, 2));
        }
    }

    #[test]
    fn multiplication_is_distributive_and_commutative() {
        for a in 0..=255u8 {
            for b in [0u8, 1, 2, 3, 0x53, 0x8e, 0xff] {
                assert_eq!(gf_mul(a, b), gf_mul(b, a));
                assert_eq!(gf_mul(a, b ^ 0x1d), gf_mul(a, b) ^ gf_mul(a, 0x1d));
            }
        }
    }

    #[test]
    fn one_bad_block_of_a_raid6_stripe_is_located_and_two_are_not() {
        let data: Vec<Vec<u8>> = (0..5u8)
            .map(|k| {
                (0..64u8)
                    .map(|i| i.wrapping_mul(31) ^ k.wrapping_mul(77))
                    .collect()
            })
            .collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let (mut p, mut q) = (vec![0u8; 64], vec![0u8; 64]);
        compute_pq(&refs, &mut p, &mut q);
        let deltas = |bad: &[Vec<u8>], sp: &[u8], sq: &[u8]| {
            let r: Vec<&[u8]> = bad.iter().map(|d| d.as_slice()).collect();
            let (mut p2, mut q2) = (vec![0u8; 64], vec![0u8; 64]);
            compute_pq(&r, &mut p2, &mut q2);
            let dp: Vec<u8> = sp.iter().zip(&p2).map(|(a, b)| a ^ b).collect();
            let dq: Vec<u8> = sq.iter().zip(&q2).map(|(a, b)| a ^ b).collect();
            locate_syndrome_fault(&dp, &dq, 5)
        };
        assert_eq!(deltas(&data, &p, &q), SyndromeFault::None);
        for z in 0..5 {
            let mut bad = data.clone();
            bad[z][7] ^= 0x40;
            bad[z][50] ^= 0x01;
            assert_eq!(deltas(&bad, &p, &q), SyndromeFault::Data(z), "slot {z}");
        }
        let mut p_bad = p.clone();
        p_bad[3] ^= 9;
        assert_eq!(deltas(&data, &p_bad, &q), SyndromeFault::P);
        let mut q_bad = q.clone();
        q_bad[3] ^= 9;
        assert_eq!(deltas(&data, &p, &q_bad), SyndromeFault::Q);
        let mut two = data.clone();
        two[1][7] ^= 0x40;
        two[3][9] ^= 0x02;
        assert_eq!(deltas(&two, &p, &q), SyndromeFault::Several);
        let mut same_byte = data.clone();
        same_byte[1][7] ^= 0x40;
        same_byte[3][7] ^= 0x02;
        assert_eq!(deltas(&same_byte, &p, &q), SyndromeFault::Several);
    }
}
