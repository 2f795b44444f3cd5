//! A hash map with a fixed hasher: deterministic across runs (std's `RandomState` is
//! seeded per process) and cheap for integer keys.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// splitmix64's finaliser over the written integers.
#[derive(Default, Clone, Copy)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u64(&mut self, i: u64) {
        let mut z = (self.0 ^ i).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type Map<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;
