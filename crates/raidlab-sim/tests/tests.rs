//! raidlab-sim's integration tests: one binary (built and linked once), one module per
//! behaviour under `suite/`, the scenarios they share in `common`.

mod common;

mod suite {
    mod cache_tier;
    mod ftl;
    mod invariants;
    mod levels;
    mod limits;
    mod member_commands;
    mod rebuild_min;
    mod replay;
    mod scheduler;
    mod simulation;
    mod spindles;
    mod trim;
}
