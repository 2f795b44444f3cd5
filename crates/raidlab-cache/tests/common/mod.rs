//! The scripted traces and small caches the cache policy tests share.

use raidlab_cache::{Action, Cache, CacheConfig, Op, Policy, Request};

pub const KIB: u64 = 1024;
pub const LINE: u64 = 4 * KIB;

/// A raidix cache of 4 regions of 4 lines (2 RRC, 2 RWC).
pub fn raidix_tiny() -> CacheConfig {
    let mut c = CacheConfig::new(Policy::Raidix, 16 * LINE);
    c.region_bytes = 4 * LINE;
    c
}

/// A request of `lines` lines from line `line`.
pub fn req(op: Op, line: u64, lines: u64) -> Request {
    Request {
        stream: 0,
        op,
        offset_bytes: line * LINE,
        len_bytes: lines * LINE,
    }
}

/// The actions the cache answers `r` with.
pub fn run(cache: &mut Cache, r: Request) -> Vec<Action> {
    let mut out = Vec::new();
    cache.access(&r, &mut out);
    out
}

/// Where in the cache the actions write.
pub fn cache_offsets_written(actions: &[Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::CacheWrite {
                cache_offset_bytes, ..
            } => Some(*cache_offset_bytes),
            _ => None,
        })
        .collect()
}
