//! The engine's test harness, shared by every integration test (TigerBeetle's
//! `src/testing/`): one copy of each fixture, driver and waiting loop.
//!
//! - [`binary`]: the `raidlab-engine` binary run in a test's own directory;
//! - [`server`]: `serve` started on a free port and stopped cleanly;
//! - [`clients`]: real NBD clients (qemu-io, fio) driven against a served array;
//! - [`tools`]: whether an external tool is installed, and the skip or failure when not;
//! - [`members`]: member file paths for arrays built through the library;
//! - [`tmpfs`]: a small tmpfs mounted for one test (root), for full filesystems.
#![allow(dead_code, unused_imports)]

pub mod binary;
pub mod clients;
pub mod members;
pub mod server;
pub mod tmpfs;
pub mod tools;

pub use binary::*;
pub use clients::*;
pub use members::*;
pub use server::*;
pub use tmpfs::*;
pub use tools::*;
