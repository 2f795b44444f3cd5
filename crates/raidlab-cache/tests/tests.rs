//! raidlab-cache's integration tests: one binary, one module per behaviour under
//! `suite/`, the harness they share in `common`.

mod common;

mod suite {
    mod policy_rules;
}
