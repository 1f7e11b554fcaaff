//! The fix path: a page-table lookup, a latch, and a re-check of the frame's page id; a
//! miss claims the page's entry (EMPTY/NVM -> BUSY) and loads it. The [`PageSource`]
//! implementation, with the swizzled child fixes of the B+-tree, is here too.
//!
//! Concurrency: the hit path takes no lock; a fix that finds a page BUSY backs off for at
//! most `PAGE_BUSY_WAIT_MS_MAX` and then fails with `Exhausted`.

use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::ids::PageId;
use crate::limits::PAGE_BUSY_WAIT_MS_MAX;
use crate::page::frame::FrameId;
use crate::page::frame::FramePool;
use crate::page::frame::FrameWrite;
use crate::page::frame::NO_PAGE;
use crate::page::frame::NO_PARENT;
use crate::page::frame::in_place::BmLines;
use crate::page::frame::in_place::BmOptimistic;
use crate::page::frame::in_place::BmShared;
use crate::page::frame::lines::LineGuard;
use crate::page::frame::lines::Place;
use crate::page::latch::backoff;
use crate::page::source::PageSource;
use crate::policy::Event;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use super::{BufferManager, SWIZZLED_SPINS_MAX};
use crate::page::Swip;

impl BufferManager {
    /// The fix loop shared by both latch modes: `try_latch` tries the frame in the
    /// caller's mode, `from_load` turns a freshly loaded (exclusive) frame into that mode.
    #[inline]
    pub(super) fn fix_with<'a, G>(
        &'a self,
        pid: PageId,
        try_latch: impl Fn(&'a FramePool, FrameId) -> Option<G>,
        frame_pid: impl Fn(&G) -> u64,
        from_load: impl Fn(FrameWrite<'a>) -> G,
    ) -> Result<G, BufferError> {
        self.check_stopped()?;
        let slot = self.table.slot(pid)?;
        let mut spins = 0u32;
        let mut waited_since: Option<Instant> = None;
        loop {
            match Entry::decode(slot.load(Ordering::Acquire)) {
                Entry::Dram(f) => {
                    self.frames.prefetch(f);
                    // A mismatched page id: the frame was reused between lookup and latch.
                    if let Some(g) = try_latch(&self.frames, f)
                        && frame_pid(&g) == pid.0
                    {
                        let meta = self.frames.meta(f);
                        if meta.resident_all.load(Ordering::Relaxed) {
                            meta.touch();
                            self.counters.bump(Count::DramHits);
                            return Ok(g);
                        }
                        // Partly resident (cache-line-grained): whole-page access loads
                        // the rest first, under an exclusive fix.
                        drop(g);
                        self.complete(pid)?;
                        continue;
                    }
                }
                Entry::Mini(_) => {
                    // Whole-page access to a mini page promotes it.
                    self.complete(pid)?;
                    continue;
                }
                Entry::Busy => {}
                observed @ (Entry::Empty | Entry::Nvm(_)) => {
                    if observed == Entry::Empty {
                        self.check_allocated(pid)?;
                    }
                    if let Some(g) = self.load(pid, observed)? {
                        return Ok(from_load(g));
                    }
                }
            }
            // Someone holds or moves the page: wait, bounded in time.
            backoff(&mut spins);
            if spins.is_multiple_of(1024) {
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(PAGE_BUSY_WAIT_MS_MAX) {
                    return Err(BufferError::Exhausted { pool: "page latch", frames: 1, rounds: spins as usize });
                }
            }
        }
    }

    /// Makes page `pid` fully resident in a full frame (loading its missing lines,
    /// promoting a mini page).
    pub(super) fn complete(&self, pid: PageId) -> Result<(), BufferError> {
        let mut g = self.fix_lines(pid, true)?;
        crate::page::LinePage::whole(&mut g)?;
        Ok(())
    }

    pub(super) fn check_allocated(&self, pid: PageId) -> Result<(), BufferError> {
        if pid.0 == 0 || pid.0 >= self.next_pid.load(Ordering::Acquire) {
            return Err(BufferError::NoSuchPage { pid, why: "never allocated" });
        }
        if self.table.is_free(pid)? {
            return Err(BufferError::NoSuchPage { pid, why: "freed" });
        }
        if self.ssd.is_none() {
            return Err(BufferError::NoSuchPage { pid, why: "freed (no tier holds it)" });
        }
        Ok(())
    }
}

impl PageSource for BufferManager {
    type Shared<'a> = BmShared<'a>;
    type Exclusive<'a> = FrameWrite<'a>;
    type Optimistic<'a> = BmOptimistic<'a>;
    type Lines<'a> = BmLines<'a>;

    #[inline]
    fn page_size(&self) -> usize {
        self.page_size
    }

    #[inline]
    fn fix_lines(&self, pid: PageId, exclusive: bool) -> Result<BmLines<'_>, BufferError> {
        use crate::recorder::AccessKind;
        self.record(if exclusive { AccessKind::WriteLines } else { AccessKind::ReadLines }, pid);
        self.fix_lines_impl(pid, exclusive)
    }

    #[inline]
    fn fix_optimistic(&self, pid: PageId) -> Result<BmOptimistic<'_>, BufferError> {
        self.record(crate::recorder::AccessKind::Read, pid);
        if self.in_place_reads
            && let Some(g) = self.optimistic_in_place(pid)?
        {
            return Ok(BmOptimistic::Nvm(g));
        }
        self.fix_with(pid, FramePool::try_optimistic, |g| g.meta().pid(), FrameWrite::into_optimistic)
            .map(BmOptimistic::Dram)
    }

    #[inline]
    fn fix_shared(&self, pid: PageId) -> Result<BmShared<'_>, BufferError> {
        self.record(crate::recorder::AccessKind::Read, pid);
        if self.in_place_reads
            && let Some(g) = self.shared_in_place(pid)?
        {
            return Ok(BmShared::Nvm(g));
        }
        self.fix_with(pid, FramePool::try_read, |g| g.meta().pid(), FrameWrite::downgrade).map(BmShared::Dram)
    }

    #[inline]
    fn fix_exclusive(&self, pid: PageId) -> Result<FrameWrite<'_>, BufferError> {
        self.record(crate::recorder::AccessKind::Write, pid);
        let g = self.fix_with(pid, FramePool::try_write, |g| g.meta().pid(), |g| g)?;
        if g.meta().swizzled_children.load(Ordering::Relaxed) > 0 {
            self.unswizzle_children(&g);
        }
        Ok(g)
    }

    #[inline]
    fn child_pid(&self, raw: u64) -> PageId {
        if !Swip::from_raw(raw).is_swizzled() {
            return PageId(raw);
        }
        let f = Swip::from_raw(raw).frame_index();
        // A frame out of range can only come from torn bytes of an optimistic read,
        // which the caller's validation discards.
        PageId(if f < self.frames.len() { self.frames.meta(FrameId::from_index(f)).pid() } else { NO_PAGE })
    }

    #[inline]
    fn fix_child_optimistic<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<BmOptimistic<'a>, BufferError> {
        let Some(parent) = parent.dram() else {
            // A parent read in place in NVM holds page ids only.
            return self.fix_optimistic(PageId(raw));
        };
        if Swip::from_raw(raw).is_swizzled() {
            let f = Swip::from_raw(raw).frame_index();
            if f < self.frames.len() {
                let f = FrameId::from_index(f);
                let mut spins = 0u32;
                // The child cannot leave its frame before the parent's reference is
                // unswizzled, which the caller's validation of the parent notices.
                while spins < SWIZZLED_SPINS_MAX {
                    if let Some(g) = self.frames.try_optimistic(f)
                        && g.meta().resident_all.load(Ordering::Relaxed)
                        && g.meta().parent.load(Ordering::Relaxed) == parent.frame().get()
                    {
                        g.meta().touch();
                        self.counters.bump(Count::DramHits);
                        self.counters.bump(Count::ChildFixesSwizzled);
                        return Ok(BmOptimistic::Dram(g));
                    }
                    backoff(&mut spins);
                }
            }
            return self.fix_optimistic(self.child_pid(raw));
        }
        let g = self.fix_optimistic(PageId(raw))?;
        if let BmOptimistic::Dram(child) = &g {
            self.counters.bump(Count::ChildFixesTableFull);
            if self.techniques.swizzling {
                self.try_swizzle(parent, offset, child.frame(), Some(child.version()));
            }
        }
        Ok(g)
    }

    /// A leaf resident whole in a DRAM frame, read optimistically: found through a
    /// swizzled reference or the page table, with no latch taken and nothing loaded.
    /// Counted and recorded as the line-grained shared fix it replaces (a DRAM hit);
    /// swizzles the parent's reference as that fix would.
    #[inline]
    fn fix_child_resident<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<Option<BmOptimistic<'a>>, BufferError> {
        let Some(dram_parent) = parent.dram() else { return Ok(None) };
        let swizzled = Swip::from_raw(raw).is_swizzled();
        let (frame, pid) = if swizzled {
            let f = Swip::from_raw(raw).frame_index();
            if f >= self.frames.len() {
                return Ok(None);
            }
            (FrameId::from_index(f), None)
        } else {
            match Entry::decode(self.table.slot(PageId(raw))?.load(Ordering::Acquire)) {
                Entry::Dram(f) => (f, Some(PageId(raw))),
                _ => return Ok(None),
            }
        };
        self.frames.prefetch(frame);
        let Some(g) = self.frames.try_optimistic(frame) else { return Ok(None) };
        let meta = g.meta();
        // The frame may have been given to another page meanwhile: then its version has
        // changed too, so the checks below count only if the guard validates later.
        let ours = match pid {
            Some(pid) => meta.pid() == pid.0,
            None => meta.parent.load(Ordering::Relaxed) == dram_parent.frame().get(),
        };
        if !ours || !meta.resident_all.load(Ordering::Relaxed) {
            return Ok(None);
        }
        meta.touch();
        self.counters.bump(Count::DramHits);
        self.counters.bump(if swizzled { Count::ChildFixesSwizzled } else { Count::ChildFixesTableFull });
        self.record(crate::recorder::AccessKind::ReadLines, PageId(meta.pid()));
        if !swizzled && self.techniques.swizzling {
            self.try_swizzle(dram_parent, offset, frame, Some(g.version()));
        }
        Ok(Some(BmOptimistic::Dram(g)))
    }

    #[inline]
    fn fix_child_lines<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
        exclusive: bool,
    ) -> Result<BmLines<'a>, BufferError> {
        let Some(parent) = parent.dram() else {
            return self.fix_lines(PageId(raw), exclusive);
        };
        if Swip::from_raw(raw).is_swizzled() {
            let f = Swip::from_raw(raw).frame_index();
            if f < self.frames.len() {
                let f = FrameId::from_index(f);
                let latch = &self.frames.meta(f).latch;
                let mut spins = 0u32;
                while spins < SWIZZLED_SPINS_MAX {
                    if if exclusive { latch.try_exclusive() } else { latch.try_shared() } {
                        let meta = self.frames.meta(f);
                        // Still the parent's child (else the reference is stale: the
                        // parent's validation will fail; take the table's way).
                        if meta.holds_page() && meta.parent.load(Ordering::Relaxed) == parent.frame().get() {
                            meta.touch();
                            self.counters.bump(Count::DramHits);
                            self.counters.bump(Count::ChildFixesSwizzled);
                            return Ok(BmLines::Dram(LineGuard::new(
                                self,
                                PageId(meta.pid()),
                                Place::Full(f),
                                exclusive,
                            )));
                        }
                        if exclusive {
                            latch.unlock_exclusive_unchanged();
                        } else {
                            latch.unlock_shared();
                        }
                        break;
                    }
                    backoff(&mut spins);
                }
            }
            return self.fix_lines(self.child_pid(raw), exclusive);
        }
        let g = self.fix_lines(PageId(raw), exclusive)?;
        match g.place() {
            Some(Place::Full(f)) => {
                self.counters.bump(Count::ChildFixesTableFull);
                if self.techniques.swizzling {
                    self.try_swizzle(parent, offset, f, None);
                }
            }
            // Mini pages are not swizzled (docs/buffer.md, "Pointer swizzling").
            Some(Place::Mini(_)) => self.counters.bump(Count::ChildFixesTableMini),
            None => {}
        }
        Ok(g)
    }

    #[inline]
    fn prefetches(&self) -> bool {
        self.ssd.is_some()
    }

    #[inline]
    fn peek_child<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        raw: u64,
    ) -> Result<crate::page::Peek<BmOptimistic<'a>>, BufferError> {
        self.peek_child_of(parent, raw)
    }

    #[inline]
    fn peek_page(&self, pid: PageId) -> Result<crate::page::Peek<BmOptimistic<'_>>, BufferError> {
        BufferManager::peek_page(self, pid)
    }

    fn prefetch_children<'a>(&'a self, children: &[(&BmOptimistic<'a>, u64)]) -> Result<usize, BufferError> {
        self.prefetch(children)
    }

    fn allocate(&self) -> Result<FrameWrite<'_>, BufferError> {
        let pid = self.take_page_id()?;
        let mut g = match self.free_frame() {
            Ok(g) => g,
            Err(e) => {
                self.freed.lock().ready.push(pid);
                return Err(e);
            }
        };
        debug_assert_eq!(self.table.get(pid)?, Entry::Empty, "allocating {pid} that is resident");
        self.record(crate::recorder::AccessKind::Alloc, pid);
        self.reset_frame(g.frame(), pid, None, true);
        g.fill(0); // marks the frame dirty: a new page must reach a lower tier
        self.table.set(pid, Entry::Dram(g.frame()));
        self.counters.bump(Count::Allocations);
        Ok(g)
    }

    fn free(&self, mut page: FrameWrite<'_>) -> Result<(), BufferError> {
        let meta = page.meta();
        let pid = PageId(meta.pid());
        assert!(pid != PageId::CATALOG, "the catalog page is never freed");
        self.record(crate::recorder::AccessKind::Free, pid);
        // A page is freed after its parent dropped it, under the parent's exclusive
        // latch, whose fix unswizzled it; a swizzled reference here would dangle.
        debug_assert_eq!(meta.parent.load(Ordering::Relaxed), NO_PARENT, "{pid} freed while swizzled");
        debug_assert_eq!(meta.swizzled_children.load(Ordering::Relaxed), 0, "{pid} freed with swizzled children");
        self.table.set(pid, Entry::Busy);
        if let Some(n) = meta.nvm_slot() {
            let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
            if let Err(e) = nvm.release(n) {
                self.table.set(pid, Entry::Dram(page.frame()));
                return Err(e);
            }
        }
        self.policy.observe(Event::Freed(pid));
        meta.pid.store(NO_PAGE, Ordering::Relaxed);
        meta.set_nvm_slot(None);
        meta.dirty.store(false, Ordering::Relaxed);
        page.clear_wrote();
        let f = page.frame();
        drop(page);
        // FREE, not EMPTY: a reader that followed a stale reference cannot load it.
        self.table.set_free(pid);
        self.free_frames.lock().push(f);
        self.freed.lock().ready.push(pid);
        self.counters.bump(Count::Frees);
        Ok(())
    }

    fn catalog_page(&self) -> PageId {
        PageId::CATALOG
    }
}
