//! The buffer layer: page sources that hand out latched page guards.
//!
//! - [`source`]: the [`PageSource`] trait the access methods are generic over;
//! - [`memory`]: `main-memory`, all pages in DRAM behind direct indexes;
//! - [`manager`]: the buffer manager over DRAM, NVM and SSD with a combined page table
//!   and a [`policy`] that answers every question of the page life cycle;
//! - [`frame`], [`latch`], [`table`], [`nvm_pool`]: its parts.

pub mod counters;
pub mod direct;
pub mod frame;
pub mod latch;
pub mod manager;
pub mod memory;
pub mod nvm_pool;
pub mod page_crc;
pub mod policy;
pub mod recorder;
pub mod source;
pub mod table;
pub mod techniques;

pub use counters::BufferStats;
pub use direct::{DirectConfig, DirectRestart, NvmDirect};
pub use frame::{FrameId, FrameOptimistic, FramePool, FrameRead, FrameWrite};
pub use manager::{BufferConfig, BufferInfo, BufferManager, Residency, RestartInfo, TierStats};
pub use memory::MemorySource;
pub use page_crc::NvmVerify;
pub use policy::Policy;
pub use source::{ExclusivePage, LinePage, OptimisticPage, PageSource, SharedPage};
pub use table::Entry;
pub use techniques::Techniques;

use crate::device::DeviceError;
use crate::ids::PageId;

/// Errors of the buffer layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BufferError {
    /// A tier (or the whole architecture) holds no more pages.
    #[error("{tier} is full: {what}")]
    Full { tier: &'static str, what: String },
    /// A page id that does not name a page.
    #[error("{pid} does not exist ({why})")]
    NoSuchPage { pid: PageId, why: &'static str },
    /// Every frame of a pool is fixed, so no victim can be found.
    #[error("{pool} pool exhausted: all {frames} frames are fixed or being moved after {rounds} clock rounds")]
    Exhausted { pool: &'static str, frames: usize, rounds: usize },
    /// A page whose checksum or header does not match.
    #[error("corrupted {pid} in {location}: {detail}")]
    Corrupted { pid: PageId, location: String, detail: String },
    #[error(transparent)]
    Device(Box<DeviceError>),
    /// A cache-line-grained access under a shared latch needs lines that are not
    /// resident, and others hold the page too: fix it again exclusive.
    #[error("{pid} needs an exclusive fix to load cache lines (others hold it shared)")]
    NeedsExclusive { pid: PageId },
    /// A line-grained access outside the page.
    #[error("access to bytes {off}..{end} of {pid}, a page of {page_size} bytes")]
    OutOfPage { pid: PageId, off: usize, end: usize, page_size: usize },
    /// The page source refuses further work after a failure it cannot undo.
    #[error("nvm-direct stopped: {what}")]
    Stopped { what: String },
    /// A buffer configuration that cannot work.
    #[error("buffer configuration: {what}")]
    Config { what: String },
}
