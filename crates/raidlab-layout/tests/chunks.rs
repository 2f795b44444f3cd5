//! A request cut at chunk borders (`Geometry::chunks`): the pieces cover the request
//! exactly, in order, each inside one chunk, at its place in the request, with the
//! copies `copies_of` gives for its first byte.

use crate::common::*;
use proptest::prelude::*;
use raidlab_layout::{ArraySpec, Geometry, Level};

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn pieces_cover_the_request_in_order_each_inside_one_chunk(
        spec in arb_spec(),
        start in 0u64..1 << 20,
        len in 0u64..1 << 20,
    ) {
        let geo = Geometry::new(&spec).unwrap();
        let su = geo.stripe_unit_bytes();
        let cap = geo.capacity_bytes();
        let offset = (start * 512) % cap;
        let len = (len * 512).min(cap - offset);
        let mut at = offset;
        for piece in geo.chunks(offset, len) {
            prop_assert_eq!(piece.logical_bytes, at);
            prop_assert_eq!(piece.request_offset_bytes, at - offset);
            prop_assert!(piece.len_bytes > 0);
            prop_assert_eq!(piece.logical_bytes / su, (piece.end_bytes() - 1) / su);
            let r = piece.request_range();
            prop_assert_eq!((r.start as u64, r.end as u64), (at - offset, piece.end_bytes() - offset));
            prop_assert!(piece.copies().eq(geo.copies_of(piece.logical_bytes)));
            at = piece.end_bytes();
        }
        prop_assert_eq!(at, offset + len);
    }
}

#[test]
fn a_request_across_three_chunks_is_three_pieces() {
    let geo = Geometry::new(&ArraySpec::new(Level::Raid0, 2, 64 << 10, 1 << 20)).unwrap();
    let pieces: Vec<(u64, u64, u64)> = geo
        .chunks((64 << 10) - 4096, (64 << 10) + 8192)
        .map(|p| (p.logical_bytes, p.len_bytes, p.request_offset_bytes))
        .collect();
    assert_eq!(
        pieces,
        vec![
            ((64 << 10) - 4096, 4096, 0),
            (64 << 10, 64 << 10, 4096),
            (128 << 10, 4096, (64 << 10) + 4096),
        ]
    );
}

#[test]
fn an_empty_request_has_no_pieces() {
    let geo = Geometry::new(&ArraySpec::new(Level::Raid5, 3, 64 << 10, 1 << 20)).unwrap();
    assert_eq!(geo.chunks(4096, 0).count(), 0);
}

#[test]
fn a_mirrored_piece_has_every_copy() {
    let geo = Geometry::new(&ArraySpec::new(Level::Raid1, 2, 64 << 10, 1 << 20)).unwrap();
    let piece = geo.chunks(0, 512).next().unwrap();
    let members: Vec<u32> = piece.copies().map(|c| c.member).collect();
    assert_eq!(members, vec![0, 1]);
}
