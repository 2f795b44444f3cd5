//! The write-intent bitmap, as md's: one bit per [`BITMAP_REGION_BYTES`] of every
//! member, set on disk before data moves there, cleared by a cleaning pass once the
//! region is quiet; after an unclean stop only the set regions are resynced.

use super::scrub::ScrubReport;
use super::Array;
use crate::array::staged::Writes;
use crate::error::io_err;
use crate::error::Result;
use crate::format::superblock::{BITMAP_BYTES_MAX, BITMAP_OFFSET_BYTES, BITMAP_REGION_BYTES};
use raidlab_layout::Geometry;
use std::os::unix::fs::FileExt;

/// Bytes of the write-intent bitmap for `geo`: one bit per region of member data.
pub(super) fn bitmap_bytes(geo: &Geometry) -> usize {
    let regions = geo.member_used_bytes().div_ceil(BITMAP_REGION_BYTES);
    let bytes = regions.div_ceil(8);
    assert!(
        bytes <= BITMAP_BYTES_MAX,
        "bitmap of {bytes} B exceeds its area"
    );
    bytes as usize
}

/// What [`Array::clean_bitmap`] needs to know to clear a region's bit safely.
#[derive(Debug, Default)]
pub(super) struct BitmapActivity {
    /// Regions written since the last cleaning pass, one bit each as in the bitmap.
    pub(super) touched: Vec<u8>,
    /// Writes in progress per region.
    pub(super) writing: std::collections::HashMap<u64, u32>,
}

/// The regions of a write in progress: dropping it ends the write for the bitmap.
pub(super) struct RegionWrites<'a> {
    array: &'a Array,
    regions: Vec<u64>,
}

impl Drop for RegionWrites<'_> {
    fn drop(&mut self) {
        let mut act = self
            .array
            .bitmap_activity
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for r in &self.regions {
            if let std::collections::hash_map::Entry::Occupied(mut e) = act.writing.entry(*r) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
    }
}

pub(super) fn bit_is_set(bits: &[u8], region: u64) -> bool {
    bits[(region / 8) as usize] & (1 << (region % 8)) != 0
}

fn region_is_set(bitmap: &[u8], member_offset_bytes: u64) -> bool {
    bit_is_set(bitmap, member_offset_bytes / BITMAP_REGION_BYTES)
}

impl Array {
    /// Regions set in the write-intent bitmap.
    pub fn dirty_regions(&self) -> u64 {
        let bm = self.bitmap.lock().expect("bitmap lock");
        bm.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    /// Writes `bitmap` to every active member and syncs it; nothing under a policy
    /// that keeps no bitmap on disk (`resync`, `ppl`: the area is the PPL's there).
    pub(super) fn write_bitmap(&self, bitmap: &[u8]) -> Result<()> {
        if !self.policy.keeps_bitmap() {
            return Ok(());
        }
        let files = self.files.read().expect("files lock").clone();
        for (role, f) in files.iter().enumerate() {
            let Some(f) = f else { continue };
            let path = self.member_path(role as u32);
            f.write_all_at(bitmap, BITMAP_OFFSET_BYTES)
                .and_then(|()| f.sync_data())
                .map_err(io_err(&path, "write bitmap"))?;
        }
        Ok(())
    }

    /// Sets (on disk, synced, before any data moves) the bitmap bits of every region
    /// `writes` touches. Later writes to a set region cost nothing. The regions count
    /// as being written until the returned guard is dropped.
    pub(super) fn mark_regions(&self, writes: &Writes) -> Result<RegionWrites<'_>> {
        let mut bm = self.bitmap.lock().expect("bitmap lock");
        let mut regions: Vec<u64> = writes
            .iter()
            .flat_map(|(e, _)| {
                e.offset_bytes / BITMAP_REGION_BYTES
                    ..=(e.offset_bytes + e.len_bytes - 1) / BITMAP_REGION_BYTES
            })
            .collect();
        regions.sort_unstable();
        regions.dedup();
        let mut changed = false;
        {
            let mut act = self.bitmap_activity.lock().expect("bitmap activity lock");
            for &r in &regions {
                let (byte, bit) = ((r / 8) as usize, 1u8 << (r % 8));
                changed |= bm[byte] & bit == 0;
                bm[byte] |= bit;
                act.touched[byte] |= bit;
                *act.writing.entry(r).or_default() += 1;
            }
        }
        let guard = RegionWrites {
            array: self,
            regions,
        };
        if changed {
            self.write_bitmap(&bm)?;
        }
        Ok(guard)
    }

    /// Clears the bitmap bits of regions with no write in progress and none since the
    /// last pass, after syncing the members, as md's bitmap daemon does every few
    /// seconds; a running server calls it, so an unclean stop resyncs only the regions
    /// written lately. Nothing is cleared while the array is degraded (md keeps them
    /// too). Returns the regions cleared.
    pub fn clean_bitmap(&self) -> Result<u64> {
        if !self.failed().is_empty() {
            return Ok(0);
        }
        // Regions a write left half done for lack of space: resynced once there is
        // space again (until then they keep their bits; no error for each pass).
        let _ = self.resync_unsynced();
        let candidates: Vec<u64> = {
            let bm = self.bitmap.lock().expect("bitmap lock");
            let mut act = self.bitmap_activity.lock().expect("bitmap activity lock");
            let recent = std::mem::replace(&mut act.touched, vec![0; bm.len()]);
            let unsynced = self.unsynced.lock().expect("unsynced lock");
            (0..bm.len() as u64 * 8)
                .filter(|&r| {
                    bit_is_set(&bm, r)
                        && !bit_is_set(&recent, r)
                        && !act.writing.contains_key(&r)
                        && !unsynced.contains_key(&r)
                })
                .collect()
        };
        if candidates.is_empty() {
            return Ok(0);
        }
        // Every write to a candidate ended before the pass began: the sync makes it
        // durable, parity and copies included.
        self.flush()?;
        let mut bm = self.bitmap.lock().expect("bitmap lock");
        if !self.failed().is_empty() {
            return Ok(0);
        }
        let mut cleared = 0;
        {
            let act = self.bitmap_activity.lock().expect("bitmap activity lock");
            for r in candidates {
                // A write that began since the pass began (in progress or not) marked
                // the region touched: it keeps its bit.
                if !bit_is_set(&act.touched, r) {
                    bm[(r / 8) as usize] &= !(1 << (r % 8));
                    cleared += 1;
                }
            }
        }
        if cleared > 0 {
            self.write_bitmap(&bm)?;
        }
        Ok(cleared)
    }

    /// After an unclean stop: recomputes parity (copies) of the stripes in dirty bitmap
    /// regions only, then clears the bitmap. Returns the regions resynced and what the
    /// scrub of them found; `None` when the array is clean or cannot be resynced
    /// (degraded or without redundancy: the bits stay set).
    pub fn resync_dirty_regions(&self) -> Result<Option<(u64, ScrubReport)>> {
        let regions = self.dirty_regions();
        if regions == 0 || !self.failed().is_empty() || self.geo.tolerated_failures() == 0 {
            return Ok(None);
        }
        let bm = self.bitmap.lock().expect("bitmap lock").clone();
        let report = self.scrub_where(true, |off| region_is_set(&bm, off))?;
        // Whatever a write left half done for lack of space is consistent now.
        self.unsynced.lock().expect("unsynced lock").clear();
        let clear = vec![0u8; bm.len()];
        self.write_bitmap(&clear)?;
        *self.bitmap.lock().expect("bitmap lock") = clear;
        Ok(Some((regions, report)))
    }
}
