//! The free pages, and the list of them a checkpoint persists on SSD.
//!
//! In memory the free pages are in two sets: `ready`, the pages that may be handed out
//! (a stack: the page freed last is reused first), and `list`, the pages that hold the
//! free-page list the superblock names. A checkpoint writes the id of every free page
//! into free-list pages (`docs/format.md`, "Free-page list"), syncs them, and names the
//! first one and the count in the superblock; an open reads them back.
//!
//! Invariant: a page of the list the superblock names is not handed out, and so never
//! written, until a later superblock names another list. A crash before then reopens
//! from that superblock, and its list must read back as written. The list therefore
//! lives in pages of its own, taken off `ready` while the checkpoint writes them (never
//! from the current list's pages), and the current list's pages become `ready` only
//! once the superblock names the new one. Every other free page may be handed out at
//! once: its bytes do not matter to the list, and if the crash comes before the next
//! checkpoint, recovery's redo of the structure change that took it (logged after the
//! checkpoint's redo point) counts it as allocated again. A list of *n* free pages
//! holds back about *n* / ((page size − 64) / 8) of them until the next checkpoint.
//!
//! The format before (version 2) chained the free pages themselves, a link in each;
//! a free page reused after the checkpoint and written out (an eviction) lost its link,
//! and the reopen failed on it ("not marked free"; issue 5, found by `tierdb
//! crashtest`; `tests/free_page_reused_after_checkpoint.rs` reproduces it).
//!
//! Recovery may replay records older than the checkpoint (its redo point goes back to
//! the oldest active transaction), among them records of a page that was freed later
//! and became a list page: [`BufferManager::recover_allocated`] tells the caller to
//! skip them, as the page stayed free from then to the crash.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use super::BufferManager;
use crate::Result;
use crate::buffer::BufferError;
use crate::device::{AlignedBuf, SsdFile};
use crate::ids::PageId;
use crate::limits::{DOUBLE_WRITE_SLOTS, FREE_LIST_IDS_OFFSET_BYTES, FREE_LIST_MAGIC};

/// Header fields of a free-list page (the magic is at 0..8).
const OFF_NEXT: usize = 8;
const OFF_COUNT: usize = 16;

/// The free pages; see the module doc.
#[derive(Debug, Default)]
pub(super) struct FreePages {
    /// Free pages that may be handed out; the last one first.
    pub(super) ready: Vec<PageId>,
    /// The pages holding the free-page list the superblock names (SSD only): free, but
    /// neither handed out nor written until a later superblock names another list.
    pub(super) list: Vec<PageId>,
}

impl FreePages {
    pub(super) fn len(&self) -> usize {
        self.ready.len() + self.list.len()
    }

    pub(super) fn contains(&self, pid: &PageId) -> bool {
        self.ready.contains(pid) || self.list.contains(pid)
    }

    /// Every free page, the list's pages last.
    pub(super) fn all(&self) -> impl Iterator<Item = PageId> + '_ {
        self.ready.iter().chain(&self.list).copied()
    }
}

/// Page ids one free-list page holds.
fn ids_per_page(page_size: usize) -> usize {
    (page_size - FREE_LIST_IDS_OFFSET_BYTES) / 8
}

/// Free-list pages needed to list `total` free pages when up to `ready` of them can
/// hold the list (those are not listed; any more pages are fresh ids, not free).
fn list_pages_for(total: usize, ready: usize, per_page: usize) -> usize {
    let mut k = 0;
    while k * per_page < total - k.min(ready) {
        k += 1;
    }
    debug_assert!(k <= total.div_ceil(per_page), "{k} list pages for {total} ids");
    k
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl BufferManager {
    /// Reads the free-page list the superblock names (opening a database).
    ///
    /// # Errors
    /// `Corrupted`, naming the page and the file, for a list that is not as a
    /// checkpoint wrote it: a page that is not a free-list page, an id out of range or
    /// named twice, a count unlike the superblock's. Device errors.
    pub(super) fn read_free_list(&self) -> Result<(), BufferError> {
        let Some(ssd) = &self.ssd else { return Ok(()) };
        let sb = ssd.superblock();
        let limit = self.next_pid.load(Ordering::Relaxed);
        let per_page = ids_per_page(self.page_size);
        let corrupted = |pid: PageId, detail: String| -> BufferError {
            BufferError::Corrupted { pid, location: format!("free-page list of {}", ssd.info().path.display()), detail }
        };
        let data_page = |p: u64| p > PageId::CATALOG.0 && p < limit;
        let mut seen = HashSet::new();
        let mut free = FreePages { ready: Vec::with_capacity(sb.free_pages.min(limit) as usize), list: Vec::new() };
        let mut buf = AlignedBuf::new(self.page_size);
        let mut pid = PageId(sb.free_list_head);
        // Each step adds a page to `seen`, whose ids are below `limit`: the walk ends.
        while pid.0 != 0 {
            if !data_page(pid.0) {
                let detail = format!("list page {} is no data page below the allocation mark {limit}", free.list.len());
                return Err(corrupted(pid, detail));
            }
            if !seen.insert(pid) {
                return Err(corrupted(pid, "the list reaches this page twice".into()));
            }
            self.ssd_read(ssd, pid, &mut buf)?;
            if &buf[0..8] != FREE_LIST_MAGIC {
                return Err(corrupted(pid, "page is not a free-list page".into()));
            }
            let count = u64_at(&buf, OFF_COUNT);
            if count > per_page as u64 {
                return Err(corrupted(pid, format!("holds {count} ids, a page holds at most {per_page}")));
            }
            for i in 0..count as usize {
                let id = u64_at(&buf, FREE_LIST_IDS_OFFSET_BYTES + 8 * i);
                if !data_page(id) {
                    return Err(corrupted(pid, format!("entry {i} is {id}, no data page below {limit}")));
                }
                if !seen.insert(PageId(id)) {
                    return Err(corrupted(pid, format!("entry {i} names page {id} a second time")));
                }
                free.ready.push(PageId(id));
            }
            free.list.push(pid);
            pid = PageId(u64_at(&buf, OFF_NEXT));
        }
        if free.ready.len() as u64 != sb.free_pages {
            let detail = format!("the list names {} free pages, the superblock {}", free.ready.len(), sb.free_pages);
            return Err(corrupted(PageId(sb.free_list_head), detail));
        }
        for pid in free.all() {
            self.table.set_free(pid);
        }
        *self.freed.lock() = free;
        Ok(())
    }

    /// The last step of a checkpoint: writes the free-page list into pages outside the
    /// current list, syncs the page file, and records the list, the catalog and the
    /// allocation mark in the superblock; then the current list's pages may be handed
    /// out. Concurrent allocations and frees are fine: a page handed out after the list
    /// was taken is listed as free, and recovery's redo of the change that took it
    /// (logged after the redo point) counts it as allocated again.
    ///
    /// # Errors
    /// `Full` when a fresh page id is needed and the page table has none; device
    /// errors. Either way the superblock still names the previous list, intact.
    pub(super) fn write_free_list(&self, ssd: &SsdFile) -> Result<(), BufferError> {
        let _one_at_a_time = self.free_list_write.lock();
        let per_page = ids_per_page(self.page_size);
        // 1. The new list's pages, off `ready` so that nothing hands them out while they
        //    are written; the ids to list: every other free page, the current list's
        //    pages included (free once the superblock names the new list).
        let (mut pages, ids, needed) = {
            let mut free = self.freed.lock();
            let needed = list_pages_for(free.len(), free.ready.len(), per_page);
            let taken = needed.min(free.ready.len());
            let pages: Vec<PageId> = free.ready.drain(..taken).collect();
            let ids: Vec<PageId> = free.all().collect();
            (pages, ids, needed)
        };
        // 2. Too few free pages (the current list's cannot be used): fresh page ids,
        //    which no log record names.
        let written = (|| {
            while pages.len() < needed {
                pages.push(self.take_fresh_page_id()?);
            }
            debug_assert!(ids.len() <= pages.len() * per_page, "{} ids in {} pages", ids.len(), pages.len());
            // 3. The pages, each linking to the next, in double-write batches; synced.
            let mut chunks = ids.chunks(per_page);
            let images: Vec<(PageId, AlignedBuf)> = pages
                .iter()
                .enumerate()
                .map(|(j, pid)| {
                    let chunk = chunks.next().unwrap_or(&[]);
                    let mut buf = AlignedBuf::new(self.page_size);
                    buf[0..8].copy_from_slice(FREE_LIST_MAGIC);
                    let next = pages.get(j + 1).map_or(0, |p| p.0);
                    buf[OFF_NEXT..OFF_NEXT + 8].copy_from_slice(&next.to_le_bytes());
                    buf[OFF_COUNT..OFF_COUNT + 8].copy_from_slice(&(chunk.len() as u64).to_le_bytes());
                    for (i, id) in chunk.iter().enumerate() {
                        let at = FREE_LIST_IDS_OFFSET_BYTES + 8 * i;
                        buf[at..at + 8].copy_from_slice(&id.0.to_le_bytes());
                    }
                    (*pid, buf)
                })
                .collect();
            for batch in images.chunks(DOUBLE_WRITE_SLOTS) {
                let last = batch.iter().map(|(p, _)| *p).max().expect("chunks are not empty");
                self.ssd_reserve(ssd, last)?;
                let refs: Vec<(PageId, &[u8])> = batch.iter().map(|(p, b)| (*p, &b[..])).collect();
                ssd.write_pages(&refs)?;
            }
            ssd.sync()?;
            // 4. The superblock names the new list.
            let allocated = self.next_pid.load(Ordering::Acquire);
            if allocated > ssd.page_count() {
                ssd.grow(allocated - ssd.page_count())?;
            }
            ssd.set_roots(PageId::CATALOG, pages.first().copied().unwrap_or(PageId(0)), allocated, ids.len() as u64)?;
            Ok(())
        })();
        // 5. The list the superblock names now holds its pages back; the other list's
        //    pages go back to `ready` (after a failure, the new list's do).
        let mut free = self.freed.lock();
        match &written {
            Ok(()) => {
                // (Fresh ids among the list's pages, which no reference names, are
                // marked FREE as every other free page is.)
                for &pid in &pages {
                    self.table.set_free(pid);
                }
                let old = std::mem::replace(&mut free.list, pages);
                free.ready.extend(old);
            }
            Err(_) => {
                // (Fresh ids among them, which no reference names, become FREE too.)
                for &pid in &pages {
                    self.table.set_free(pid);
                }
                free.ready.extend(pages);
            }
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_takes_the_fewest_pages_that_hold_it() {
        // 4 ids per page: 9 free pages need 2 list pages (7 ids listed).
        assert_eq!(list_pages_for(0, 0, 4), 0);
        assert_eq!(list_pages_for(1, 1, 4), 1);
        assert_eq!(list_pages_for(5, 5, 4), 1);
        assert_eq!(list_pages_for(6, 6, 4), 2);
        assert_eq!(list_pages_for(9, 9, 4), 2);
        assert_eq!(list_pages_for(10, 10, 4), 2);
        assert_eq!(list_pages_for(11, 11, 4), 3);
        // None ready (all free pages hold the current list): fresh pages hold all ids.
        assert_eq!(list_pages_for(1, 0, 4), 1);
        assert_eq!(list_pages_for(5, 0, 4), 2);
        assert_eq!(list_pages_for(5, 1, 4), 1);
        for total in 0..200 {
            for ready in 0..=total {
                let k = list_pages_for(total, ready, 7);
                assert!(k * 7 >= total - k.min(ready), "{total} {ready}: {k}");
                assert!(k == 0 || (k - 1) * 7 < total - (k - 1).min(ready), "{total} {ready}: {k} is not the fewest");
            }
        }
    }
}
