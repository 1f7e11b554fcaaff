//! The page sources other than the buffer manager: the baselines the buffer manager is
//! compared with.
//!
//! - [`memory`]: `main-memory`, every page in a DRAM frame behind a direct index;
//! - [`nvm_direct`]: `nvm-direct`, every page in NVM, read and written in place.

pub mod memory;
pub mod nvm_direct;

pub use memory::MemorySource;
pub use nvm_direct::{DirectConfig, DirectRestart, NvmDirect};
