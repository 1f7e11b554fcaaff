//! tierdb: a storage engine for machines with DRAM, byte-addressable memory behind it
//! (persistent memory or CXL-attached memory, "NVM") and SSD.
//!
//! This crate holds the engine. Its layers, bottom up (`docs/architecture.md` describes
//! them): the [`device`] layer (DRAM arena, NVM region, SSD page file, log files, with
//! accounting and latency emulation from a [`device::DeviceProfile`]); [`page`], what
//! every page source hands out (the [`PageSource`] trait, latches, frames and guards); the
//! page sources: the buffer manager of [`buffer`] ([`buffer::BufferManager`], with the
//! placement [`policy`] it asks) and, in [`sources`], [`sources::MemorySource`] and
//! [`sources::NvmDirect`]; the [`btree`] and the [`catalog`] of named trees over any
//! [`PageSource`]; the write-ahead log ([`wal`]) and the
//! transactional database with its recovery ([`db`]). [`arch`] names the architectures
//! built from these parts, and [`tune`] holds Spitfire's online tuners.
//!
//! Each layer's module is its façade: users of the crate cannot name the files inside a
//! layer, and the layer's `mod.rs` re-exports what they need
//! ([`device::SsdFile`], [`wal::decode_record`], [`buffer::PageTable`]). Three
//! namespaces of free functions stay public below their layer: [`device::clock`],
//! [`device::page_seal`] and [`tune::landscape`] (`docs/architecture.md`, "Public
//! surface").
//!
//! ```
//! use tierdb::ByteSize;
//! use tierdb::device::{EmulationMode, NvmConfig, NvmRegion, clock};
//!
//! # fn main() -> Result<(), tierdb::Error> {
//! let path = std::env::temp_dir().join(format!("tierdb-doc-{}.nvm", std::process::id()));
//! let mut cfg = NvmConfig::new(&path, ByteSize(1 << 20));
//! cfg.mode = EmulationMode::Model; // charge the Optane profile to a virtual clock
//! let mut nvm = NvmRegion::open(&cfg)?;
//! clock::virtual_reset();
//! nvm.write_lines(0, &[1u8; 64])?;
//! nvm.persist(0, 64)?;
//! let s = nvm.core().stats().snapshot();
//! assert_eq!((s.writes, s.persists), (1, 1));
//! assert_eq!(clock::virtual_now_ps(), s.modelled_ps);
//! # drop(nvm); std::fs::remove_file(&path).ok();
//! # Ok(())
//! # }
//! ```
//!
//! Unsafe code is confined to the modules that own mapped memory, direct I/O buffers
//! and CPU instructions — in [`device`] (the mapping, persists, the clock, aligned
//! buffers, NUMA binding, the double-write area and the NVM log ring), in the frame
//! memory and guards of [`page`] (`page/frame/`), in the buffer manager's NVM pool
//! (`buffer/nvm_pool/`) and in the frames of `nvm-direct` (`sources/nvm_direct/`); each
//! block carries a `// SAFETY:` note, and `docs/unsafe.md` lists the modules and why
//! each is sound.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod arch;
pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod counters;
pub mod db;
pub mod device;
pub mod error;
pub mod ids;
pub mod limits;
pub mod page;
pub mod policy;
pub mod recorder;
pub mod size;
pub mod sources;
pub mod tune;
pub mod wal;

pub use btree::{BTree, BTreeError, Cursor, TreeStats};
pub use catalog::Catalog;
pub use error::{Error, Result};
pub use ids::PageId;
pub use page::{ExclusivePage, PageSource, SharedPage};
pub use size::ByteSize;

// The crate README is what crates.io shows; its examples are compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
