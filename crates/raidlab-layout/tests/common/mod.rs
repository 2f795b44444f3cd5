//! The layout's test harness, shared by the integration tests (TigerBeetle's
//! `src/testing/`): one copy of each generator, fixture and reference model.
//!
//! - [`generators`]: random valid geometries, failure sets, requests and bytes;
//! - [`reference`]: an in-memory engine executing plans on real bytes, the reference
//!   a real-data engine must agree with;
//! - [`arrays`]: the fixed arrays of the example-based tests and how to read them.
#![allow(dead_code, unused_imports)]

pub mod arrays;
pub mod generators;
pub mod reference;

pub use arrays::*;
pub use generators::*;
pub use reference::*;
