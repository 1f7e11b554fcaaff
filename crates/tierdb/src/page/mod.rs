//! A page in memory: what every page source hands out and what the access methods
//! are written against.
//!
//! - [`source`]: the [`PageSource`] trait and its guard traits (shared, exclusive,
//!   optimistic, line-grained), the B+-tree's only view of a page source;
//! - [`latch`]: the frame latch, one word;
//! - [`frame`]: the DRAM frame pool with its frame guards, line guards and mini pages
//!   (the module that owns frame memory);
//! - [`swip`]: a child reference that holds a page id or, swizzled, a DRAM frame;
//! - [`crc`]: the checksums of pages kept in NVM.

pub mod crc;
pub mod frame;
pub mod latch;
pub mod source;
pub mod swip;

pub use crc::NvmVerify;
pub use source::{ExclusivePage, LinePage, OptimisticPage, PageSource, Peek, SharedPage};
pub use swip::Swip;
