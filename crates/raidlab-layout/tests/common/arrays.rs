//! Fixed arrays for the example-based tests: md's default 64 KiB chunk on members of
//! 1 GiB, and the copies of a chunk as member chunks.

use raidlab_layout::{ArraySpec, Geometry, Level};

/// One KiB.
pub const KIB: u64 = 1024;

/// The chunk of [`spec`] and [`geo`]: md's default 64 KiB.
pub const SU: u64 = 64 * KIB;

/// `n` members of `level` with [`SU`] chunks on 1 GiB members, md's default layout.
pub fn spec(level: Level, n: u32) -> ArraySpec {
    ArraySpec::new(level, n, SU, 1 << 30)
}

/// The geometry of [`spec`]; panics if md refuses it.
pub fn geo(level: Level, n: u32) -> Geometry {
    Geometry::new(&spec(level, n)).unwrap()
}

/// Every copy of logical chunk `chunk`, primary first, as (member, chunk row on the
/// member).
pub fn copy_chunks(geo: &Geometry, chunk: u64) -> Vec<(u32, u64)> {
    let su = geo.stripe_unit_bytes();
    geo.copies_of(chunk * su)
        .map(|l| (l.member, l.offset_bytes / su))
        .collect()
}
