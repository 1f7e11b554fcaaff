//! A page in memory: what every page source hands out and what the access methods
//! are written against.
//!
//! - `source`: the [`PageSource`] trait and its guard traits (shared, exclusive,
//!   optimistic, line-grained), the B+-tree's only view of a page source;
//! - `latch`: the frame [`Latch`], one word;
//! - `frame`: the DRAM frame pool with its frame guards, line guards and mini pages
//!   (the module that owns frame memory; frames are named by [`FrameId`]);
//! - `swip`: a [`Swip`], a child reference that holds a page id or, swizzled, a DRAM
//!   frame;
//! - `crc`: the checksums of pages kept in NVM ([`NvmVerify`]).
//!
//! Users of the crate cannot name the submodules; this module re-exports what they need.

pub(crate) mod crc;
pub(crate) mod frame;
pub(crate) mod latch;
pub(crate) mod source;
pub(crate) mod swip;

pub use crc::NvmVerify;
pub use frame::FrameId;
pub use frame::cpu_cache::{
    CPU_CACHE_MODEL_DEFAULT, CPU_CACHE_MODEL_MAX_BYTES, CPU_CACHE_MODEL_MIN_BYTES, CPU_CACHE_MODEL_SHARE_DEFAULT_PPM,
    CpuCacheSize, CpuCacheSizeError, describe_model,
};
pub use latch::Latch;
pub use source::{ExclusivePage, LinePage, OptimisticPage, PageSource, Peek, SharedPage};
pub use swip::Swip;
