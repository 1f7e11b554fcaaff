//! The buffer manager: DRAM frames over an NVM pool over an SSD page file, with one
//! page table for both pools and a [`Policy`](crate::policy::Policy) that answers every
//! question of the page life cycle.
//!
//! - `manager`: [`BufferManager`], a folder of its activities (open, fix, load, evict,
//!   NVM replacement, swizzling, checkpoint, free list, page provider, invariants);
//! - `table`: the [`PageTable`] (one word per page: DRAM frame, NVM frame, busy, empty);
//! - `nvm_pool`: the NVM frames with their durable headers;
//! - `techniques`: the paper's switchable [`Techniques`] (line-grained loading, mini
//!   pages, swizzling);
//! - `error`: [`BufferError`], which every page source returns.
//!
//! Users of the crate cannot name the submodules; this module re-exports what they need.
//!
//! The page-source trait, latches, frames and guards are in [`crate::page`]; the other
//! page sources (`main-memory`, `nvm-direct`) in [`crate::sources`].

pub(crate) mod error;
mod manager;
pub(crate) mod nvm_pool;
mod table;
mod techniques;

pub use error::BufferError;
pub use manager::{
    BufferConfig, BufferInfo, BufferManager, MIN_DRAM_FRAMES, ProviderReport, Residency, RestartInfo, TierStats,
};
pub use table::{Entry, PageTable};
pub use techniques::Techniques;
