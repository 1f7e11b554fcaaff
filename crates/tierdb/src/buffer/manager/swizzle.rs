//! Pointer swizzling (paper §3.3): a parent's child reference may hold a DRAM frame index
//! with bit 63 set instead of a page id. A swizzled child is never evicted before it is
//! unswizzled: each parent frame's swizzled children are listed, and the eviction of a
//! child rewrites its reference in the parent back to the page id.

use crate::counters::Count;
use crate::page::frame::FrameId;
use crate::page::frame::FrameOptimistic;
use crate::page::frame::FrameWrite;
use crate::page::frame::NO_PARENT;
use std::sync::atomic::Ordering;

use super::BufferManager;
use crate::page::Swip;

impl BufferManager {
    /// Replaces the page id at byte `offset` of `parent` (read optimistically at its
    /// version) with a reference to frame `child`, if nothing changed meanwhile and the
    /// child is not referenced by frame yet. `child_version`: the child's version when
    /// it was read optimistically, or `None` if the caller holds the child's latch.
    /// Everything is only *tried*: a busy latch means no swizzle this time.
    pub(super) fn try_swizzle(
        &self,
        parent: &FrameOptimistic<'_>,
        offset: usize,
        child: FrameId,
        child_version: Option<u64>,
    ) {
        let (p, pm, cm) = (parent.frame(), parent.meta(), self.frames.meta(child));
        if p == child || !pm.latch.try_exclusive() {
            return;
        }
        let mut done = false;
        if pm.latch.version() == parent.version() && pm.holds_page() {
            let child_latched = child_version.is_none() || cm.latch.try_shared();
            if child_latched {
                let pid = cm.pid();
                let same = child_version.is_none_or(|v| cm.latch.version() == v);
                if same
                    && cm.holds_page()
                    && cm.parent.load(Ordering::Relaxed) == NO_PARENT
                    && self.frames.read_ref(p, offset) == pid
                {
                    std::sync::atomic::fence(Ordering::Release);
                    self.frames.write_ref(p, offset, Swip::frame(child).raw());
                    cm.parent.store(p.get(), Ordering::Relaxed);
                    cm.parent_offset.store(
                        u16::try_from(offset).expect("a reference lies in a page of at most 64 KiB"),
                        Ordering::Relaxed,
                    );
                    pm.swizzled_children.fetch_add(1, Ordering::Relaxed);
                    self.swizzled.lock().entry(p.get()).or_default().push(child.get());
                    self.counters.bump(Count::Swizzles);
                    done = true;
                }
                if child_version.is_some() {
                    cm.latch.unlock_shared();
                }
            }
        }
        if done {
            pm.latch.unlock_exclusive();
        } else {
            pm.latch.unlock_exclusive_unchanged();
        }
    }

    /// Turns frame `child`'s reference in its parent (whose exclusive latch the caller
    /// holds) back into its page id.
    pub(super) fn unswizzle_held(&self, parent: FrameId, child: FrameId) {
        let cm = self.frames.meta(child);
        debug_assert_eq!(cm.parent.load(Ordering::Relaxed), parent.get());
        let off = cm.parent_offset.load(Ordering::Relaxed) as usize;
        debug_assert_eq!(self.frames.read_ref(parent, off), Swip::frame(child).raw());
        self.frames.write_ref(parent, off, cm.pid());
        cm.parent.store(NO_PARENT, Ordering::Relaxed);
        self.frames.meta(parent).swizzled_children.fetch_sub(1, Ordering::Relaxed);
        self.counters.bump(Count::Unswizzles);
    }

    /// Before frame `g`'s page leaves it: unswizzles its reference in its parent, if
    /// any. False if the parent's latch is busy (pick another victim).
    pub(super) fn unswizzle_victim(&self, g: &FrameWrite<'_>) -> bool {
        let cm = g.meta();
        let p = cm.parent.load(Ordering::Relaxed);
        if p == NO_PARENT {
            return true;
        }
        let pm = self.frames.meta(FrameId::new(p));
        if !pm.latch.try_exclusive() {
            return false;
        }
        // The parent may have unswizzled us before we got its latch.
        if cm.parent.load(Ordering::Relaxed) == p {
            self.unswizzle_held(FrameId::new(p), g.frame());
            let mut map = self.swizzled.lock();
            if let Some(v) = map.get_mut(&p) {
                v.retain(|c| *c != g.frame().get());
                if v.is_empty() {
                    map.remove(&p);
                }
            }
            pm.latch.unlock_exclusive();
        } else {
            pm.latch.unlock_exclusive_unchanged();
        }
        true
    }

    /// Unswizzles every child of frame `g` (held exclusive): an exclusive holder may
    /// move or copy its entries, so it must see page ids only.
    pub(super) fn unswizzle_children(&self, g: &FrameWrite<'_>) {
        let p = g.frame();
        let children = self.swizzled.lock().remove(&p.get()).unwrap_or_default();
        for c in children {
            self.unswizzle_held(p, FrameId::new(c));
        }
        debug_assert_eq!(g.meta().swizzled_children.load(Ordering::Relaxed), 0);
    }
}
