//! A logical request cut at chunk (stripe unit) borders: the one place that splits a
//! request into pieces whose every copy is one contiguous run on one member.
//!
//! ```text
//! request   [offset ─────────────────────────── offset + len)
//! chunks  ──┼── su ──┼── su ──┼── su ──┼── su ──┼──
//! pieces    [ 0 )    [   1    ]        [ 2 )            (1 spans a whole chunk)
//!           each: logical start, length, position in the request, copies on members
//! ```
//!
//! Allocation-free: the engine walks a request this way on its I/O path.

use crate::geometry::{Geometry, Location};
use std::ops::Range;

/// One piece of a request that stays inside one chunk.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    geo: &'a Geometry,
    /// Logical byte where the piece starts.
    pub logical_bytes: u64,
    /// Bytes of the piece: at least 1, at most the stripe unit.
    pub len_bytes: u64,
    /// Where the piece starts in the request (bytes after the request's first).
    pub request_offset_bytes: u64,
}

impl Chunk<'_> {
    /// Every copy of the piece, primary first (one for levels without mirroring): each
    /// is `len_bytes` contiguous bytes from its `offset_bytes` on its member.
    pub fn copies(&self) -> impl Iterator<Item = Location> + '_ {
        self.geo.copies_of(self.logical_bytes)
    }

    /// The logical byte just past the piece.
    pub fn end_bytes(&self) -> u64 {
        self.logical_bytes + self.len_bytes
    }

    /// The piece's place in the request's buffer.
    pub fn request_range(&self) -> Range<usize> {
        let start = self.request_offset_bytes as usize;
        start..start + self.len_bytes as usize
    }
}

/// The pieces of a request in logical order; see [`Geometry::chunks`].
#[derive(Debug, Clone)]
pub struct Chunks<'a> {
    geo: &'a Geometry,
    offset_bytes: u64,
    at_bytes: u64,
    end_bytes: u64,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;

    fn next(&mut self) -> Option<Chunk<'a>> {
        if self.at_bytes >= self.end_bytes {
            return None;
        }
        let su = self.geo.stripe_unit_bytes();
        let piece_end = self.end_bytes.min((self.at_bytes / su + 1) * su);
        let piece = Chunk {
            geo: self.geo,
            logical_bytes: self.at_bytes,
            len_bytes: piece_end - self.at_bytes,
            request_offset_bytes: self.at_bytes - self.offset_bytes,
        };
        debug_assert!(piece.len_bytes > 0 && piece.len_bytes <= su);
        self.at_bytes = piece_end;
        Some(piece)
    }
}

impl Geometry {
    /// The request of `len_bytes` at logical `offset_bytes` cut at chunk borders, in
    /// order: the pieces cover the request exactly, each inside one chunk. Empty for
    /// `len_bytes` 0.
    pub fn chunks(&self, offset_bytes: u64, len_bytes: u64) -> Chunks<'_> {
        Chunks {
            geo: self,
            offset_bytes,
            at_bytes: offset_bytes,
            end_bytes: offset_bytes + len_bytes,
        }
    }
}
