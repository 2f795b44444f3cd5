//! The real-data engine of raidlab: arrays whose bytes live on member files or block
//! devices, laid out and planned by `raidlab-layout` exactly as the simulator charges
//! them, exported over NBD.
//!
//! ```text
//!  NBD client ──TCP──► net::nbd::server::serve ──► Array::read / write / flush
//!                                        │ stripe locks, Geometry::plan(failed)
//!                                        ▼
//!                 read phase ─► parity (raidlab_layout::parity) ─► write phase
//!                                        │ pread / pwrite at DATA_OFFSET_BYTES + x
//!                                        ▼
//!                 member 0 │ member 1 │ ... (superblock in the first 4 KiB of each)
//! ```
//!
//! ```
//! use raidlab_engine::{Array, CreateOptions};
//! use raidlab_layout::Level;
//! let dir = std::env::temp_dir().join(format!("raidlab-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let members: Vec<_> = (0..3).map(|i| dir.join(format!("m{i}.img"))).collect();
//! let mut opts = CreateOptions::new(Level::Raid5, 64 << 10, Some(2 << 20));
//! opts.uuid = Some(7);
//! let array = Array::create(&members, &opts).unwrap();
//! array.write(4096, &[0xab; 512], false).unwrap();
//! array.fail_member(1).unwrap();                 // pull a member out
//! let mut back = [0u8; 512];
//! array.read(4096, &mut back).unwrap();          // reconstructed from the others
//! assert_eq!(back, [0xab; 512]);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(missing_docs)]

pub mod array;
pub mod cache;
pub mod cli;
pub mod error;
pub mod format;
pub mod net;
/// The exclusive claim on every file an array uses (members, journal, spares): a
/// leaf, so the on-disk formats can take it without reaching into `array`.
pub mod owner;

pub use array::{Array, CreateOptions, MemberState, RebuildProgress, ScrubReport, Status};
pub use error::{Error, Result};
