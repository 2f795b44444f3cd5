//! Random valid inputs from proptest words: geometries of every level, tolerated
//! failure sets, whole-sector requests and bytes. Small arrays, so a test can touch
//! every byte.

use proptest::prelude::*;
use raidlab_layout::{ArraySpec, FailedSet, Geometry, Layout, Level, Request, SECTOR_BYTES};

pub const S: u64 = SECTOR_BYTES;

/// A valid spec of `level` from random words: small arrays, so tests can touch every byte.
pub fn make_spec(level: Level, r: [u32; 6]) -> ArraySpec {
    let su = S << (r[0] % 4);
    // RAID 10 far copies need a chunk per copy on every member.
    let chunks = 1 + u64::from(r[1] % 6) + if level == Level::Raid10 { 3 } else { 0 };
    // Sometimes a tail that is not a whole chunk, which capacity must ignore.
    let cap = chunks * su + u64::from(r[2] % 3) * S;
    let pick = |lo: u32, hi: u32| lo + r[4] % (hi - lo + 1);
    let spec = |n| ArraySpec::new(level, n, su, cap);
    let layout = Layout::PARITY[(r[3] % 4) as usize];
    match level {
        Level::Raid0 | Level::Concat => spec(pick(1, 8)),
        Level::Raid1 => spec(pick(2, 5)),
        Level::Raid4 => spec(pick(3, 8)),
        Level::Raid5 => spec(pick(3, 9)).with_layout(layout),
        Level::Raid6 => spec(pick(4, 10)).with_layout(layout),
        Level::Raid10 => {
            let n = pick(2, 9);
            let copies = 2 + r[5] % (n - 1).min(3);
            let l10 = Layout::RAID10[(r[3] % 3) as usize];
            spec(n).with_layout(l10).with_copies(copies)
        }
        Level::Raid50 | Level::Raid60 => {
            let spans = 1 + r[5] % 3;
            let base = if level == Level::Raid50 { 3 } else { 4 };
            let width = base + r[4] % 3;
            spec(spans * width).with_layout(layout).with_spans(spans)
        }
    }
}

/// Any level with a random valid geometry.
pub fn arb_spec() -> impl Strategy<Value = ArraySpec> {
    (0usize..9, any::<[u32; 6]>()).prop_map(|(l, r)| make_spec(Level::ALL[l], r))
}

/// Levels with redundancy only.
pub fn arb_redundant_spec() -> impl Strategy<Value = ArraySpec> {
    (2usize..9, any::<[u32; 6]>()).prop_map(|(l, r)| make_spec(Level::ALL[l], r))
}

/// A random failure set the geometry tolerates, built from random bits.
pub fn tolerated_failures(geo: &Geometry, bits: u64) -> FailedSet {
    let mut f = FailedSet::new();
    let n = geo.members();
    let want = (bits % 4) as u32;
    let mut x = bits >> 2;
    for _ in 0..want {
        let m = (x % u64::from(n)) as u32;
        x = x / u64::from(n) + 0x9e37;
        let mut g = f;
        g.insert(m);
        if geo.tolerates(&g) {
            f = g;
        }
    }
    f
}

/// A random request of whole sectors inside the array.
pub fn request(geo: &Geometry, a: u64, b: u64, write: bool) -> Request {
    let sectors = geo.capacity_bytes() / S;
    let start = a % sectors;
    let len = 1 + b % (sectors - start);
    Request {
        offset_bytes: start * S,
        len_bytes: len * S,
        write,
    }
}

/// Deterministic pseudo-random bytes.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
