//! The page sources other than the buffer manager: the baselines the buffer manager is
//! compared with.
//!
//! - [`MemorySource`]: `main-memory`, every page in a DRAM frame behind a direct index;
//! - [`NvmDirect`]: `nvm-direct`, every page in NVM, read and written in place.

mod memory;
pub(crate) mod nvm_direct;

pub use memory::MemorySource;
pub use nvm_direct::{DirectConfig, DirectRestart, NvmDirect, WriteBackLog};
