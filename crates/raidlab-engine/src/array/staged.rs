//! Member extents with their bytes: what the read phase of a plan fetched, or what its
//! write phase will store. Looked up by (member, offset, length); a lookup must fall
//! inside one extent, which holds because the planner merges contiguous extents.

use raidlab_layout::MemberExtent;

/// Extents sorted by (member, offset), each with a buffer of its length.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    extents: Vec<MemberExtent>,
    bufs: Vec<Vec<u8>>,
}

impl Staged {
    /// Zero-filled buffers for `extents` (any order; sorted here).
    pub(crate) fn zeroed(extents: &[MemberExtent]) -> Self {
        let mut extents = extents.to_vec();
        extents.sort_unstable_by_key(|e| (e.member, e.offset_bytes));
        debug_assert!(extents.windows(2).all(|w| w[0].member < w[1].member
            || w[0].offset_bytes + w[0].len_bytes <= w[1].offset_bytes));
        let bufs = extents
            .iter()
            .map(|e| vec![0u8; e.len_bytes as usize])
            .collect();
        Self { extents, bufs }
    }

    /// The extents and their buffers, for the I/O itself.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&MemberExtent, &mut Vec<u8>)> {
        self.extents.iter().zip(self.bufs.iter_mut())
    }

    /// The extents and their buffers.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&MemberExtent, &Vec<u8>)> {
        self.extents.iter().zip(self.bufs.iter())
    }

    fn find(&self, member: u32, offset_bytes: u64, len_bytes: u64) -> Option<(usize, usize)> {
        let i = self
            .extents
            .partition_point(|e| (e.member, e.offset_bytes) <= (member, offset_bytes));
        let e = self.extents.get(i.checked_sub(1)?)?;
        (e.member == member && offset_bytes + len_bytes <= e.offset_bytes + e.len_bytes)
            .then(|| (i - 1, (offset_bytes - e.offset_bytes) as usize))
    }

    /// The bytes at `[offset_bytes, +len_bytes)` of `member`, if staged.
    pub(crate) fn get(&self, member: u32, offset_bytes: u64, len_bytes: u64) -> Option<&[u8]> {
        let (i, at) = self.find(member, offset_bytes, len_bytes)?;
        Some(&self.bufs[i][at..at + len_bytes as usize])
    }

    /// Like [`Staged::get`]; panics when the plan did not stage the range (a planner
    /// invariant: the reference engine of raidlab-layout checks the same).
    pub(crate) fn must(&self, member: u32, offset_bytes: u64, len_bytes: u64) -> &[u8] {
        self.get(member, offset_bytes, len_bytes)
            .unwrap_or_else(|| {
                panic!("plan did not stage member {member} [{offset_bytes}, +{len_bytes})")
            })
    }

    /// Stores `src` at `offset_bytes` of `member`; panics when not staged.
    pub(crate) fn put(&mut self, member: u32, offset_bytes: u64, src: &[u8]) {
        let (i, at) = self
            .find(member, offset_bytes, src.len() as u64)
            .unwrap_or_else(|| {
                panic!(
                    "plan does not write member {member} [{offset_bytes}, +{})",
                    src.len()
                )
            });
        self.bufs[i][at..at + src.len()].copy_from_slice(src);
    }
}
