//! The stripe lock table: every stripe (a logical chunk, for levels without stripes)
//! hashes to one of [`STRIPE_LOCKS`] mutexes, taken in ascending index order so two
//! requests never deadlock.

use super::{Array, STRIPE_LOCKS};
use std::sync::MutexGuard;

impl Array {
    pub(super) fn lock_index(span: u32, stripe: u64) -> usize {
        let h = stripe
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(u64::from(span).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
        (h >> 32) as usize % STRIPE_LOCKS
    }

    /// Locks every stripe (logical chunk, for non-striped levels) of the range, in
    /// ascending lock order.
    pub(super) fn lock_range(&self, offset_bytes: u64, len_bytes: u64) -> Vec<MutexGuard<'_, ()>> {
        let su = self.geo.stripe_unit_bytes();
        let mut idx: Vec<usize> = (offset_bytes / su..=(offset_bytes + len_bytes - 1) / su)
            .map(|chunk| match self.geo.stripe_address(chunk * su) {
                Some(a) => Self::lock_index(a.id.span, a.id.stripe),
                None => Self::lock_index(0, chunk),
            })
            .collect();
        self.lock_indices(&mut idx)
    }

    pub(super) fn lock_indices(&self, idx: &mut Vec<usize>) -> Vec<MutexGuard<'_, ()>> {
        idx.sort_unstable();
        idx.dedup();
        idx.iter()
            .map(|&i| self.locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }
}
