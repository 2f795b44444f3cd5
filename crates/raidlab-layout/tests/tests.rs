//! The layout's integration tests as one test binary (as ripgrep's `tests/tests.rs`):
//! one module per behaviour, the generators, fixtures and reference engine in
//! [`common`], linked once instead of once per file.

mod common;

mod chunks;
mod layout_errors;
mod mapping;
mod md_parity_placement;
mod parity_math;
mod planner_costs;
mod planner_on_bytes;
mod raid0;
mod trim;
