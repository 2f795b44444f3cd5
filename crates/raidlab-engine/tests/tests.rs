//! The engine's integration tests as one test binary (as ripgrep's `tests/tests.rs`):
//! one module per behaviour, the shared harness in [`common`], linked once instead of
//! once per file. A test that needs an external tool (fio, qemu-io, qemu-img, nbdinfo,
//! nbdcopy) asks [`common::tool`]: skipped when it is missing, failed when
//! `RAIDLAB_REQUIRE_TOOLS=1`.

mod common;
mod nbd_wire;

mod assemble;
mod bad_blocks;
mod bitmap_clean;
mod block_devices;
mod cache_tier;
mod cli;
mod concurrency;
mod control_security;
mod degraded_tier;
mod engine_vs_model;
mod faults;
mod full_filesystem;
mod hostile_clients;
mod hot_spares;
mod integrity;
mod journal;
mod nbd_server;
mod nbd_structured;
mod nbd_tls;
mod nbd_tls_psk;
mod nbd_unix;
mod online_rebuild;
mod online_story;
mod ownership;
mod ppl;
mod real_clients;
mod rebuild_resume;
mod repair;
mod write_hole;
mod write_path;
