//! Member extents with their bytes: what the read phase of a plan fetched, or what its
//! write phase will store. Looked up by (member, offset, length); a lookup must fall
//! inside one extent, which holds because the planner merges contiguous extents.

use raidlab_layout::MemberExtent;
use std::borrow::Cow;

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

/// The write phase of a plan: each extent as the pieces that fill it, in member order.
/// New data stays where the request brought it (borrowed, never copied or zeroed) and
/// computed bytes (parity) are moved in; the I/O writes an extent's pieces with one
/// vectored write. Before, every extent got a zeroed buffer the data was copied into:
/// a memset and a memcpy per byte written, a fifth of the server's CPU on writes.
#[derive(Debug, Default)]
pub(crate) struct Writes<'d> {
    extents: Vec<MemberExtent>,
    /// Per extent its pieces, sorted by offset by `finish`.
    pieces: Vec<Vec<Piece<'d>>>,
    puts: usize,
}

/// Bytes put at `offset_bytes` of an extent's member, the `order`-th put.
#[derive(Debug)]
struct Piece<'d> {
    offset_bytes: u64,
    order: usize,
    bytes: Cow<'d, [u8]>,
}

impl<'d> Writes<'d> {
    /// No bytes yet for `extents` (any order; sorted here).
    pub(crate) fn new(extents: &[MemberExtent]) -> Self {
        let mut extents = extents.to_vec();
        extents.sort_unstable_by_key(|e| (e.member, e.offset_bytes));
        let pieces = extents.iter().map(|_| Vec::new()).collect();
        Self {
            extents,
            pieces,
            puts: 0,
        }
    }

    /// Stores `src` at `offset_bytes` of `member`; panics when the plan does not write
    /// the range (as [`Staged::put`]).
    pub(crate) fn put(&mut self, member: u32, offset_bytes: u64, src: Cow<'d, [u8]>) {
        let len = src.len() as u64;
        let i = self
            .extents
            .partition_point(|e| (e.member, e.offset_bytes) <= (member, offset_bytes));
        let e = i.checked_sub(1).map(|i| &self.extents[i]);
        if !e.is_some_and(|e| {
            e.member == member && offset_bytes + len <= e.offset_bytes + e.len_bytes
        }) {
            panic!("plan does not write member {member} [{offset_bytes}, +{len})");
        }
        self.pieces[i - 1].push(Piece {
            offset_bytes,
            order: self.puts,
            bytes: src,
        });
        self.puts += 1;
    }

    /// Orders each extent's pieces. Pieces that do not tile their extent exactly (a
    /// gap, or a range put twice: the planner gives neither) are laid, in the order
    /// they were put, into one buffer zeroed first, which is what staging them did.
    pub(crate) fn finish(mut self) -> Self {
        for (e, pieces) in self.extents.iter().zip(self.pieces.iter_mut()) {
            pieces.sort_by_key(|p| p.offset_bytes);
            let mut at = e.offset_bytes;
            let tiles = pieces.iter().all(|p| {
                let ok = p.offset_bytes == at;
                at += p.bytes.len() as u64;
                ok
            }) && at == e.offset_bytes + e.len_bytes;
            if !tiles {
                pieces.sort_by_key(|p| p.order);
                let mut buf = vec![0u8; e.len_bytes as usize];
                for p in pieces.iter() {
                    let o = (p.offset_bytes - e.offset_bytes) as usize;
                    buf[o..o + p.bytes.len()].copy_from_slice(&p.bytes);
                }
                *pieces = vec![Piece {
                    offset_bytes: e.offset_bytes,
                    order: 0,
                    bytes: Cow::Owned(buf),
                }];
            }
        }
        self
    }

    /// The extents, each with its pieces in member order (after [`Writes::finish`]).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&MemberExtent, Pieces<'_, 'd>)> {
        self.extents
            .iter()
            .zip(self.pieces.iter().map(|p| Pieces(p)))
    }
}

/// An extent's bytes, as consecutive pieces.
#[derive(Clone, Copy)]
pub(crate) struct Pieces<'a, 'd>(&'a [Piece<'d>]);

impl<'a> Pieces<'a, '_> {
    /// How many pieces.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The pieces' bytes in order.
    pub(crate) fn slices(&self) -> impl Iterator<Item = &'a [u8]> {
        self.0.iter().map(|p| &*p.bytes)
    }

    /// The extent's bytes in one slice: borrowed when it is one piece (the common
    /// case: a write within a chunk), else copied together.
    pub(crate) fn contiguous(&self) -> Cow<'a, [u8]> {
        match self.0 {
            [one] => Cow::Borrowed(&*one.bytes),
            many => {
                let mut all = Vec::with_capacity(many.iter().map(|p| p.bytes.len()).sum());
                many.iter().for_each(|p| all.extend_from_slice(&p.bytes));
                Cow::Owned(all)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(member: u32, offset_bytes: u64, len_bytes: u64) -> MemberExtent {
        MemberExtent {
            member,
            offset_bytes,
            len_bytes,
        }
    }

    fn bytes(w: &Writes) -> Vec<(u32, u64, Vec<u8>)> {
        w.iter()
            .map(|(e, p)| (e.member, e.offset_bytes, p.contiguous().into_owned()))
            .collect()
    }

    #[test]
    fn pieces_are_put_in_member_order_whatever_order_they_come_in() {
        let data = [1u8, 2, 3, 4, 5, 6];
        let mut w = Writes::new(&[extent(1, 0, 2), extent(0, 8, 4)]);
        w.put(0, 10, Cow::Borrowed(&data[..2]));
        w.put(1, 0, Cow::Owned(vec![9, 9]));
        w.put(0, 8, Cow::Borrowed(&data[4..]));
        let w = w.finish();
        assert_eq!(bytes(&w), [(0, 8, vec![5, 6, 1, 2]), (1, 0, vec![9, 9])]);
        let (_, pieces) = w.iter().next().unwrap();
        assert_eq!(pieces.len(), 2, "borrowed pieces stay apart, not copied");
    }

    #[test]
    fn pieces_that_do_not_tile_their_extent_are_laid_as_staging_laid_them() {
        // A gap stays zero; a range put twice holds the later bytes.
        let mut w = Writes::new(&[extent(0, 0, 6)]);
        w.put(0, 2, Cow::Owned(vec![1, 1, 1]));
        w.put(0, 3, Cow::Owned(vec![2]));
        assert_eq!(bytes(&w.finish()), [(0, 0, vec![0, 0, 1, 2, 1, 0])]);
    }

    #[test]
    #[should_panic(expected = "plan does not write member 2")]
    fn a_put_outside_the_plan_panics() {
        let mut w = Writes::new(&[extent(0, 0, 6)]);
        w.put(2, 0, Cow::Owned(vec![1]));
    }
}
