//! The `main-memory` architecture's page source: every page in a DRAM frame, reached
//! by direct index, no page table and no eviction.
//!
//! Page `n` lives in frame `n - 1` (page 0 is the superblock's id in every other
//! architecture and is never handed out here either). A fix is one bounds check and one
//! latch acquisition. Allocation beyond the arena's frames is refused with
//! [`BufferError::Full`]: this architecture does not hold data larger than its DRAM.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::Result;
use crate::buffer::error::BufferError;
use crate::device::{DramArena, DramConfig};
use crate::ids::PageId;
use crate::page::frame::lines::WholeLines;
use crate::page::frame::{FrameId, FrameOptimistic, FramePool, FrameRead, FrameWrite};
use crate::page::source::PageSource;

/// All pages in DRAM.
pub struct MemorySource {
    pool: FramePool,
    /// The next never-used page id.
    next: AtomicU64,
    freed: Mutex<Vec<PageId>>,
}

impl MemorySource {
    /// Builds the source over a fresh arena and allocates its catalog page.
    ///
    /// # Errors
    /// The arena's configuration errors.
    pub fn new(cfg: &DramConfig) -> Result<MemorySource, BufferError> {
        let pool = FramePool::new(DramArena::new(cfg)?);
        let src = MemorySource { pool, next: AtomicU64::new(1), freed: Mutex::new(Vec::new()) };
        let catalog = src.allocate()?.page_id();
        assert_eq!(catalog, PageId::CATALOG);
        Ok(src)
    }

    /// The DRAM frames the pages live in (page `n` in frame `n - 1`).
    pub fn pool(&self) -> &FramePool {
        &self.pool
    }

    /// Pages in use (allocated and not freed).
    pub fn pages_used(&self) -> u64 {
        self.next.load(Ordering::Relaxed) - 1 - self.freed.lock().len() as u64
    }

    /// Pages this source can hold.
    pub fn capacity_pages(&self) -> u64 {
        self.pool.len() as u64
    }

    /// The allocation state: the next never-used page id and the freed pages (for a
    /// snapshot of the database, `db::snapshot`).
    pub fn allocation(&self) -> (PageId, Vec<PageId>) {
        // The free list first: a page freed meanwhile is below `next` either way.
        let freed = self.freed.lock().clone();
        (PageId(self.next.load(Ordering::Acquire)), freed)
    }

    /// Restores the allocation state of a snapshot: pages `1..next` exist (their frames
    /// keep the bytes the caller writes into them), `freed` are free.
    ///
    /// # Errors
    /// `Full` if the pages do not fit in DRAM; `Config` for a free page outside them.
    pub fn restore_allocation(&self, next: PageId, freed: Vec<PageId>) -> Result<(), BufferError> {
        let cap = self.pool.len() as u64;
        if next.0 == 0 || next.0 - 1 > cap {
            return Err(self.full(next.0.saturating_sub(1)));
        }
        if let Some(p) = freed.iter().find(|p| p.0 <= PageId::CATALOG.0 || p.0 >= next.0) {
            return Err(BufferError::Config { what: format!("free page {p} outside pages 2..{}", next.0) });
        }
        self.cover(next.0);
        *self.freed.lock() = freed;
        Ok(())
    }

    /// Recovery: page `pid` counts as allocated (a page the log created after the
    /// snapshot): the pages up to it exist, and it is off the free list.
    ///
    /// # Errors
    /// `Full` past DRAM.
    pub fn recover_allocated(&self, pid: PageId) -> Result<(), BufferError> {
        if pid.0 == 0 || pid.0 > self.pool.len() as u64 {
            return Err(self.full(pid.0));
        }
        let mut freed = self.freed.lock();
        if pid.0 >= self.next.load(Ordering::Acquire) {
            // The ids skipped on the way were free at this point of the log.
            let old = self.next.load(Ordering::Acquire);
            freed.extend((old..pid.0).map(PageId));
            self.cover(pid.0 + 1);
        }
        freed.retain(|p| *p != pid);
        Ok(())
    }

    /// Recovery: page `pid` is free here (on the free list or never allocated).
    pub fn is_free(&self, pid: PageId) -> bool {
        pid.0 >= self.next.load(Ordering::Acquire) || self.freed.lock().contains(&pid)
    }

    /// Raises the allocation mark to `next`, naming the frames it covers.
    fn cover(&self, next: u64) {
        let old = self.next.load(Ordering::Acquire);
        for n in old.max(1)..next {
            self.pool.meta(FrameId::new((n - 1) as u32)).pid.store(n, Ordering::Relaxed);
        }
        self.next.fetch_max(next, Ordering::AcqRel);
    }

    fn full(&self, pages: u64) -> BufferError {
        let cap = self.pool.len() as u64;
        BufferError::Full {
            tier: "dram",
            what: format!(
                "main-memory holds at most {cap} pages of {} bytes ({}), not {pages}; the data does not fit in DRAM",
                self.pool.frame_bytes(),
                crate::ByteSize(self.pool.arena().size_bytes())
            ),
        }
    }

    #[inline]
    fn frame_of(&self, pid: PageId) -> Result<FrameId, BufferError> {
        let n = pid.0;
        if n == 0 || n >= self.next.load(Ordering::Acquire) {
            return Err(BufferError::NoSuchPage { pid, why: "never allocated" });
        }
        Ok(FrameId::new((n - 1) as u32))
    }
}

use crate::page::source::ExclusivePage as _;

impl PageSource for MemorySource {
    type Shared<'a> = FrameRead<'a>;
    type Exclusive<'a> = FrameWrite<'a>;
    type Optimistic<'a> = FrameOptimistic<'a>;
    type Lines<'a> = WholeLines<'a>;

    #[inline]
    fn page_size(&self) -> usize {
        self.pool.frame_bytes()
    }

    #[inline]
    fn fix_optimistic(&self, pid: PageId) -> Result<FrameOptimistic<'_>, BufferError> {
        let f = self.frame_of(pid)?;
        self.pool.prefetch(f);
        let mut spins = 0u32;
        loop {
            if let Some(g) = self.pool.try_optimistic(f) {
                return Ok(g);
            }
            crate::page::latch::backoff(&mut spins);
        }
    }

    /// Every page is resident whole: always read optimistically.
    #[inline]
    fn fix_child_resident<'a>(
        &'a self,
        parent: &FrameOptimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<Option<FrameOptimistic<'a>>, BufferError> {
        self.fix_child_optimistic(parent, offset, raw).map(Some)
    }

    #[inline]
    fn fix_lines(&self, pid: PageId, exclusive: bool) -> Result<WholeLines<'_>, BufferError> {
        Ok(if exclusive {
            WholeLines::Exclusive(self.fix_exclusive(pid)?)
        } else {
            WholeLines::Shared(self.fix_shared(pid)?)
        })
    }

    #[inline]
    fn fix_shared(&self, pid: PageId) -> Result<FrameRead<'_>, BufferError> {
        let f = self.frame_of(pid)?;
        Ok(self.pool.read(f))
    }

    #[inline]
    fn fix_exclusive(&self, pid: PageId) -> Result<FrameWrite<'_>, BufferError> {
        let f = self.frame_of(pid)?;
        Ok(self.pool.write(f))
    }

    fn allocate(&self) -> Result<FrameWrite<'_>, BufferError> {
        let reused = self.freed.lock().pop();
        let pid = match reused {
            Some(pid) => pid,
            None => {
                let cap = self.pool.len() as u64;
                let n = self
                    .next
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n <= cap).then_some(n + 1))
                    .map_err(|_| BufferError::Full {
                        tier: "dram",
                        what: format!(
                            "main-memory holds at most {cap} pages of {} bytes ({}); the data does not fit in DRAM",
                            self.pool.frame_bytes(),
                            crate::ByteSize(self.pool.arena().size_bytes())
                        ),
                    })?;
                PageId(n)
            }
        };
        let f = FrameId::new((pid.0 - 1) as u32);
        let mut g = self.pool.write(f);
        g.meta().pid.store(pid.0, Ordering::Relaxed);
        g.fill(0);
        Ok(g)
    }

    fn free(&self, page: FrameWrite<'_>) -> Result<(), BufferError> {
        let pid = page.page_id();
        assert!(pid != PageId::CATALOG, "the catalog page is never freed");
        drop(page);
        self.freed.lock().push(pid);
        Ok(())
    }

    fn catalog_page(&self) -> PageId {
        PageId::CATALOG
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ByteSize;
    use crate::page::source::SharedPage;

    fn source(frames: u64) -> MemorySource {
        let mut cfg = DramConfig::new(ByteSize(frames * 4096));
        cfg.frame_bytes = 4096;
        MemorySource::new(&cfg).unwrap()
    }

    #[test]
    fn allocate_write_read_free_reuse() {
        let s = source(3);
        let mut a = s.allocate().unwrap();
        let pa = a.page_id();
        assert_eq!(pa, PageId(2));
        a[10] = 42;
        drop(a);
        assert_eq!(s.fix_shared(pa).unwrap()[10], 42);
        assert_eq!(s.fix_shared(pa).unwrap().page_id(), pa);
        let b = s.allocate().unwrap();
        let pb = b.page_id();
        drop(b);
        let full = s.allocate().err().expect("three frames: catalog + two pages");
        assert!(full.to_string().contains("does not fit in DRAM"), "{full}");
        s.free(s.fix_exclusive(pa).unwrap()).unwrap();
        assert_eq!(s.pages_used(), 2);
        let again = s.allocate().unwrap();
        assert_eq!(again.page_id(), pa);
        assert!(again.iter().all(|&b| b == 0), "a reused page is zeroed");
        drop(again);
        assert!(s.fix_shared(PageId(0)).is_err());
        assert!(s.fix_shared(PageId(99)).is_err());
        let _ = pb;
    }
}
