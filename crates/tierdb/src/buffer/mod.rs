//! The buffer manager: DRAM frames over an NVM pool over an SSD page file, with one
//! page table for both pools and a [`Policy`](crate::policy::Policy) that answers every
//! question of the page life cycle.
//!
//! - [`manager`]: the manager, a folder of its activities (open, fix, load, evict, NVM
//!   replacement, swizzling, checkpoint, free list, page provider, invariants);
//! - [`table`]: the page table (one word per page: DRAM frame, NVM frame, busy, empty);
//! - [`nvm_pool`]: the NVM frames with their durable headers;
//! - [`techniques`]: the paper's switchable techniques (line-grained loading, mini
//!   pages, swizzling);
//! - [`error`]: [`BufferError`], which every page source returns.
//!
//! The page-source trait, latches, frames and guards are in [`crate::page`]; the other
//! page sources (`main-memory`, `nvm-direct`) in [`crate::sources`].

pub mod error;
pub mod manager;
pub mod nvm_pool;
pub mod table;
pub mod techniques;

pub use error::BufferError;
pub use manager::{BufferConfig, BufferInfo, BufferManager, ProviderReport, Residency, RestartInfo, TierStats};
pub use table::Entry;
pub use techniques::Techniques;
