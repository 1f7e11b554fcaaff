//! What recovery asks of the buffer manager: claiming a page's table entry, which pages
//! are allocated, free or held in NVM, which NVM copies are stale after a crash, and what
//! the restart found (torn pages, a lost double-write area, the NVM scan).
//!
//! Every function here runs before the database is open to callers, or holds the page's
//! table entry BUSY while it acts.

use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::nvm_pool::NvmPool;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::device::TornPageRecovery;
use crate::ids::{Lsn, PageId};
use crate::page::source::PageSource;
use crate::wal::LogForce;
use std::sync::atomic::Ordering;

use super::{BufferManager, RestartInfo};

impl BufferManager {
    /// Claims `pid`'s table entry, which was `observed`, for a move (`PageTable::claim`).
    /// An entry `Nvm(n)` is claimed only while holding frame `n`'s in-place latch
    /// exclusive, so that no in-place guard ([`NvmLines`]) is left on the page; false
    /// if one is, or if the entry changed.
    pub(super) fn claim(&self, pid: PageId, observed: Entry) -> Result<bool, BufferError> {
        let Entry::Nvm(n) = observed else { return self.table.claim(pid, observed) };
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let latch = nvm.latch(n);
        if !latch.try_exclusive() {
            return Ok(false);
        }
        let claimed = self.table.claim(pid, observed);
        if matches!(claimed, Ok(true)) {
            latch.unlock_exclusive();
        } else {
            latch.unlock_exclusive_unchanged();
        }
        claimed
    }

    /// Recovery: makes sure page `pid` counts as allocated (a page a logged structure
    /// change created after the last checkpoint): raises the allocation mark past it and
    /// takes it off the free list. Returns false, changing nothing, for a page that
    /// holds the free-page list the superblock names: such a page was free from before
    /// that checkpoint wrote the list until the crash (it is not handed out before a
    /// later checkpoint names another list), so the record naming it is older and its
    /// effect on the page moot; the caller skips the record, and the page's bytes, which
    /// a second crash during recovery reads again, stay as they are.
    ///
    /// # Errors
    /// `Full` past the page table.
    pub fn recover_allocated(&self, pid: PageId) -> Result<bool, BufferError> {
        if self.beyond_capacity(pid) {
            return Err(self.full_error());
        }
        let mut free = self.freed.lock();
        if free.list.contains(&pid) {
            return Ok(false);
        }
        self.next_pid.fetch_max(pid.0 + 1, Ordering::AcqRel);
        free.ready.retain(|p| *p != pid);
        self.table.clear_free(pid)?;
        drop(free);
        if self.ssd.is_none() && self.table.get(pid)? == Entry::Empty {
            // Without SSD no tier holds a page allocated after the last checkpoint
            // that never left DRAM, or one whose NVM frame a crash tore: it starts
            // zeroed, as on an SSD past its end, and the log's images rebuild it.
            let mut g = self.free_frame()?;
            self.reset_frame(g.frame(), pid, None, true);
            g.fill(0);
            self.table.set(pid, Entry::Dram(g.frame()));
            self.counters.bump(Count::Allocations);
        }
        Ok(true)
    }

    /// Recovery: whether page `pid` lives in an NVM frame (found again at restart, or
    /// put there since) that holds the change logged at `lsn`: the frame's header names
    /// the page, is not IN_UPDATE, and its page LSN is at or past `lsn` (every change to
    /// a page is made under its latch, in LSN order, so the frame holds all of the
    /// page's changes up to its page LSN). Redo skips such a change without fixing the
    /// page, which for `nvsql` would move it out of NVM (an exclusive whole-page fix),
    /// writing it to SSD on the way. False without NVM, for a page elsewhere, or a
    /// header of page LSN 0 (unknown).
    ///
    /// # Errors
    /// `NoSuchPage` past the page table; an unreadable header.
    pub fn recover_nvm_holds(&self, pid: PageId, lsn: Lsn) -> Result<bool, BufferError> {
        let Some(nvm) = &self.nvm else { return Ok(false) };
        let Entry::Nvm(n) = self.table.get(pid)? else { return Ok(false) };
        let Some(h) = nvm.header(n)? else { return Ok(false) };
        Ok(h.pid == pid
            && h.flags & crate::buffer::nvm_pool::FLAG_IN_UPDATE == 0
            && h.page_lsn >= lsn
            && !h.page_lsn.is_none())
    }

    /// Stamps the NVM frames written from now on with `log`'s end LSN (their written
    /// LSN, `nvm_pool`'s module doc): at open, before redo writes any frame.
    pub fn set_lsn_clock(&self, log: std::sync::Arc<dyn LogForce>) {
        if let Some(nvm) = &self.nvm {
            nvm.set_lsn_clock(log);
        }
    }

    /// Recovery, before redo: every page of `flushed` (page, latest last-flush LSN of
    /// the scanned log's flush records) whose NVM frame found at open was last written
    /// below that LSN loses the frame: the SSD copy was taken after it and holds all it
    /// held, and redo skips the changes below the LSN without reading the page, so only
    /// the SSD copy may be used. Returns how many frames went.
    ///
    /// # Errors
    /// `NoSuchPage` past the page table; device errors reading or clearing a header.
    pub fn recover_drop_stale_nvm(
        &self,
        flushed: impl IntoIterator<Item = (PageId, Lsn)>,
    ) -> Result<usize, BufferError> {
        let Some(nvm) = &self.nvm else { return Ok(0) };
        let mut dropped = 0;
        for (pid, flush_lsn) in flushed {
            if self.beyond_capacity(pid) {
                continue; // a page the log names past the table: redo reports it
            }
            let Entry::Nvm(n) = self.table.get(pid)? else { continue };
            let Some(h) = nvm.header(n)? else { continue };
            assert_eq!(h.pid, pid, "frame {n} holds {} but the table maps {pid} to it", h.pid);
            if h.written_lsn >= flush_lsn {
                continue;
            }
            nvm.discard(n)?;
            self.table.set(pid, Entry::Empty);
            if let Some(info) = self.restart.lock().as_mut() {
                info.pages_reused = info.pages_reused.saturating_sub(1);
            }
            dropped += 1;
        }
        Ok(dropped)
    }

    /// Recovery: page `pid` is free (on the free list, the list's own pages included, or
    /// at or above the allocation mark).
    pub fn recover_is_free(&self, pid: PageId) -> bool {
        pid.0 >= self.next_pid.load(Ordering::Acquire) || self.freed.lock().contains(&pid)
    }

    /// Recovery: page `pid` was freed after the last checkpoint (the caller replays the
    /// log that freed it). Any copy of it in DRAM or NVM is dropped (a stale NVM copy
    /// must not come back at the next restart) and it goes on the free list.
    ///
    /// # Errors
    /// Device errors while dropping its copies.
    pub fn recover_freed(&self, pid: PageId) -> Result<(), BufferError> {
        if pid == PageId::CATALOG || pid.0 >= self.next_pid.load(Ordering::Acquire) || self.freed.lock().contains(&pid)
        {
            return Ok(());
        }
        let page = self.fix_exclusive(pid)?;
        self.free(page)
    }

    /// For a durable NVM cache ([`Shape::nvm_durable_cache`](crate::policy::Shape::nvm_durable_cache), `nvsql`): the LSN of the
    /// oldest change that only NVM holds (dirty frames are not written to SSD by a
    /// checkpoint), which the log must keep for recovery to rebuild a frame a crash
    /// caught mid-write; `None` for other policies or with no dirty frame. Call it
    /// after a [`checkpoint`](Self::checkpoint) that followed the redo point.
    pub fn oldest_unflushed_lsn(&self) -> Option<Lsn> {
        if !self.shape.nvm_durable_cache {
            return None;
        }
        self.nvm.as_ref().and_then(NvmPool::oldest_dirty_rec_lsn)
    }

    /// Opening the SSD page file found no double-write area it could use where one was
    /// expected ([`crate::device::ssd::SsdInfo::double_write_lost`]), and why.
    pub fn double_write_lost(&self) -> Option<&str> {
        self.ssd.as_ref().and_then(|s| s.info().double_write_lost.as_deref())
    }

    /// What opening the SSD page file did with the double-write file it found: the
    /// pages it restored (`None`: no SSD, or no double-write file was there).
    pub fn torn_pages(&self) -> Option<&TornPageRecovery> {
        self.ssd.as_ref().and_then(|s| s.info().torn_pages.as_ref())
    }

    /// What reopening found in the NVM pool (`None` for a new database, or without
    /// NVM, or with `reuse_nvm` off).
    pub fn restart_info(&self) -> Option<RestartInfo> {
        self.restart.lock().clone()
    }
}
