//! A swip: the child reference an inner node stores, which names the child by its page
//! id or, once swizzled, by the DRAM frame that holds it (paper §3.3).
//!
//! ```text
//!   bit 63 = 0   bits 62..0: the child's page id (on any tier)
//!   bit 63 = 1   bits 31..0: the DRAM frame holding the child (swizzled)
//! ```
//!
//! A swizzled child's frame is not evicted while the reference stays swizzled: the
//! buffer manager rewrites the reference back to the page id first. The word is read
//! and written whole (an 8-byte store), so an optimistic reader sees one or the other.

use crate::ids::PageId;
use crate::page::frame::FrameId;

/// The tag bit of a swizzled reference.
pub const SWIZZLED: u64 = 1 << 63;

/// A child reference as stored in an inner node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swip(u64);

impl Swip {
    /// The word as read from a node.
    #[inline]
    pub const fn from_raw(raw: u64) -> Swip {
        Swip(raw)
    }

    /// A reference by page id.
    #[inline]
    pub fn page(pid: PageId) -> Swip {
        debug_assert!(pid.0 & SWIZZLED == 0, "{pid} has the swizzled bit set");
        Swip(pid.0)
    }

    /// A swizzled reference to DRAM frame `f`.
    #[inline]
    pub fn frame(f: FrameId) -> Swip {
        Swip(SWIZZLED | u64::from(f.get()))
    }

    /// The word to store in a node.
    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// True if the reference names a DRAM frame.
    #[inline]
    pub const fn is_swizzled(self) -> bool {
        self.0 & SWIZZLED != 0
    }

    /// The DRAM frame of a swizzled reference, as an index into the frame pool.
    #[inline]
    pub fn frame_index(self) -> usize {
        debug_assert!(self.is_swizzled(), "swip {:#x} is not swizzled", self.0);
        (self.0 & !SWIZZLED) as usize
    }

    /// The page id of an unswizzled reference.
    #[inline]
    pub fn page_id(self) -> PageId {
        debug_assert!(!self.is_swizzled(), "swip {:#x} is swizzled", self.0);
        PageId(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swip_names_a_page_or_a_frame() {
        let p = Swip::page(PageId(77));
        assert!(!p.is_swizzled());
        assert_eq!(p.page_id(), PageId(77));
        assert_eq!(Swip::from_raw(p.raw()), p);
        let f = Swip::frame(FrameId::new(5));
        assert!(f.is_swizzled());
        assert_eq!(f.frame_index(), 5);
        assert_eq!(f.raw(), SWIZZLED | 5);
    }
}
