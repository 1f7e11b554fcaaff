//! tierdb: a storage engine for machines with DRAM, byte-addressable memory behind it
//! (persistent memory or CXL-attached memory, "NVM") and SSD.
//!
//! This crate holds the engine. Its layers, bottom up (see `docs/` and DESIGN.md):
//! the [`device`] layer (DRAM arena, NVM region, SSD page file, with accounting and
//! latency emulation from [`device::profile`]s); the buffer manager, access methods
//! and recovery come on top.
//!
//! Unsafe code is confined to the modules that own mapped memory, direct I/O buffers
//! and CPU instructions, all under [`device`]; each block carries a `// SAFETY:` note.

#![deny(unsafe_code)]

pub mod device;
pub mod error;
pub mod ids;
pub mod limits;
pub mod size;

pub use error::{Error, Result};
pub use ids::PageId;
pub use size::ByteSize;
