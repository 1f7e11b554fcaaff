//! Cache-line-grained access (paper §3.1-3.3): fixes that load only the lines they touch,
//! mini pages that hold a few lines of a page, reads and writes served in place on NVM
//! when the policy says so, and the promotion of a mini page to a full frame.
//!
//! A line guard owns its page's frame (or NVM frame) for the fix; loading lines under a
//! shared latch needs the page to be fixed by no one else, else `NeedsExclusive`.

use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::nvm_pool::NvmPool;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::device::AlignedBuf;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::limits::PAGE_BUSY_WAIT_MS_MAX;
use crate::page::crc::NvmVerify;
use crate::page::frame::FrameId;
use crate::page::frame::FramePool;
use crate::page::frame::FrameWrite;
use crate::page::frame::MINI_BLOCK;
use crate::page::frame::Mask;
use crate::page::frame::NO_PAGE;
use crate::page::frame::in_place;
use crate::page::frame::in_place::BmLines;
use crate::page::frame::in_place::NvmLines;
use crate::page::frame::in_place::NvmOptimistic;
use crate::page::frame::in_place::NvmRead;
use crate::page::frame::lines::Place;
use crate::page::frame::lines::{LineGuard, LineHost};
use crate::page::latch::backoff;
use crate::policy;
use crate::policy::Event;
use crate::policy::MissTarget;
use crate::policy::PageInfo;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use super::BufferManager;

impl BufferManager {
    /// The line-grained fix: the page table, then the latch of the full frame or mini
    /// page, or a load.
    pub(super) fn fix_lines_impl(&self, pid: PageId, exclusive: bool) -> Result<BmLines<'_>, BufferError> {
        self.check_stopped()?;
        let slot = self.table.slot(pid)?;
        let mut spins = 0u32;
        let mut waited_since: Option<Instant> = None;
        // The policy's answer for this fix, asked once however often the loop turns.
        let mut access: Option<policy::NvmAccess> = None;
        loop {
            let entry = Entry::decode(slot.load(Ordering::Acquire));
            let latched = match entry {
                Entry::Dram(f) => Some((&self.frames.meta(f).latch, Place::Full(f))),
                Entry::Mini(i) => Some((&self.frames.minis().meta(i).latch, Place::Mini(i))),
                Entry::Busy => None,
                Entry::Nvm(n) => {
                    let info = PageInfo::fixing(pid, true);
                    match *access.get_or_insert_with(|| self.policy.nvm_access(&info, exclusive, &self.tiers)) {
                        policy::NvmAccess::InPlace => {
                            if let Some(g) = self.fix_in_place(pid, n, exclusive)? {
                                return Ok(BmLines::Nvm(g));
                            }
                        }
                        policy::NvmAccess::Migrate => {
                            if let Some(g) = self.load_lines_page(pid, entry)? {
                                return Ok(BmLines::Dram(g));
                            }
                        }
                    }
                    None
                }
                Entry::Empty => {
                    self.check_allocated(pid)?;
                    let info = PageInfo::fixing(pid, false);
                    let miss = self.policy.ssd_miss(&info, &self.tiers);
                    // `Nvm`: into NVM only, and the next turn asks whether it goes on
                    // to DRAM; if NVM has no frame to give, into DRAM.
                    let to = match miss {
                        MissTarget::Nvm if self.nvm.is_some() && self.load_into_nvm(pid)? => None,
                        MissTarget::Nvm => Some(MissTarget::Dram),
                        other => Some(other),
                    };
                    if let Some(to) = to
                        && let Some(g) = self.load_to(pid, entry, Some(to))?
                    {
                        return Ok(BmLines::Dram(LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
                    }
                    None
                }
            };
            if let Some((latch, place)) = latched {
                let ok = if exclusive { latch.try_exclusive() } else { latch.try_shared() };
                if ok {
                    let held = match place {
                        Place::Full(f) => self.frames.meta(f).pid(),
                        Place::Mini(i) => self.frames.minis().meta(i).pid(),
                    };
                    if held == pid.0 {
                        match place {
                            Place::Full(f) => self.frames.meta(f).touch(),
                            Place::Mini(i) => self.frames.minis().meta(i).touch(),
                        }
                        self.counters.bump(Count::DramHits);
                        return Ok(BmLines::Dram(LineGuard::new(self, pid, place, exclusive)));
                    }
                    if exclusive {
                        latch.unlock_exclusive_unchanged();
                    } else {
                        latch.unlock_shared();
                    }
                }
            }
            backoff(&mut spins);
            if spins.is_multiple_of(1024) {
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(PAGE_BUSY_WAIT_MS_MAX) {
                    return Err(BufferError::Exhausted { pool: "page latch", frames: 1, rounds: spins as usize });
                }
            }
        }
    }

    /// A shared fix of `pid` in place in NVM, if the page is in NVM only, the policy
    /// says to read it in place and its frame's latch is free. Out of line: the hit path
    /// of `fix_shared` stays small.
    #[cold]
    #[inline(never)]
    pub(super) fn shared_in_place(&self, pid: PageId) -> Result<Option<NvmRead<'_>>, BufferError> {
        let Some((nvm, n)) = self.read_in_place(pid)? else { return Ok(None) };
        let latch = nvm.latch(n);
        if !latch.try_shared() {
            return Ok(None);
        }
        // With the latch held the entry is stable (movers claim under it).
        if self.table.get(pid)? == Entry::Nvm(n) && nvm.pid(n) == Some(pid) {
            if let Err(e) = nvm.check_before_read(n, pid) {
                latch.unlock_shared();
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
            nvm.touch(n);
            in_place::count_fix(self, false);
            return Ok(Some(NvmRead::new(nvm, n, pid, self.page_size)));
        }
        latch.unlock_shared();
        Ok(None)
    }

    /// An optimistic read of `pid` in place in NVM (see [`shared_in_place`](Self::shared_in_place)).
    #[cold]
    #[inline(never)]
    pub(super) fn optimistic_in_place(&self, pid: PageId) -> Result<Option<NvmOptimistic<'_>>, BufferError> {
        let Some((nvm, n)) = self.read_in_place(pid)? else { return Ok(None) };
        if nvm.verify() == NvmVerify::Every || !nvm.is_checked(n) {
            // The check reads the page under the shared latch, as a shared fix would.
            let latch = nvm.latch(n);
            if !latch.try_shared() {
                return Ok(None);
            }
            let checked = if self.table.get(pid).ok() == Some(Entry::Nvm(n)) && nvm.pid(n) == Some(pid) {
                nvm.check_before_read(n, pid)
            } else {
                Ok(())
            };
            latch.unlock_shared();
            if let Err(e) = checked {
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
        }
        let g = NvmOptimistic::try_new(nvm, n, self.page_size);
        if g.is_some() {
            in_place::count_fix(self, false);
        }
        Ok(g)
    }

    /// For a whole-page read: the NVM frame to read `pid` in, if the page is in NVM only
    /// and the policy says to read it in place.
    #[inline]
    pub(super) fn read_in_place(&self, pid: PageId) -> Result<Option<(&NvmPool, NvmSlot)>, BufferError> {
        self.check_stopped()?;
        let Entry::Nvm(n) = self.table.get(pid)? else { return Ok(None) };
        let info = PageInfo::fixing(pid, true);
        if self.policy.nvm_access(&info, false, &self.tiers) == policy::NvmAccess::Migrate {
            return Ok(None);
        }
        Ok(self.nvm.as_ref().map(|nvm| (nvm, n)))
    }

    /// Latches NVM frame `n` for in-place access to `pid` (shared, or exclusive to
    /// write) and checks the page if due (`NvmPool::check_before_read`); `None` if the
    /// latch is taken, the page left the frame meanwhile, or its clean frame failed the
    /// check and was dropped (look again: the page is on SSD).
    ///
    /// # Errors
    /// `Corrupted` for a dirty frame that fails the check.
    pub(super) fn fix_in_place(
        &self,
        pid: PageId,
        n: NvmSlot,
        exclusive: bool,
    ) -> Result<Option<NvmLines<'_>>, BufferError> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let latch = nvm.latch(n);
        if !(if exclusive { latch.try_exclusive() } else { latch.try_shared() }) {
            return Ok(None);
        }
        let unlock = || {
            if exclusive {
                latch.unlock_exclusive_unchanged();
            } else {
                latch.unlock_shared();
            }
        };
        // Movers claim the entry only while holding the latch, so with it held the entry
        // is stable: check it still names this frame.
        if self.table.get(pid).ok() == Some(Entry::Nvm(n)) && nvm.pid(n) == Some(pid) {
            if let Err(e) = nvm.check_before_read(n, pid) {
                unlock();
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
            nvm.touch(n);
            in_place::count_fix(self, exclusive);
            return Ok(Some(NvmLines::new(self, nvm, n, pid, exclusive)));
        }
        unlock();
        Ok(None)
    }

    /// NVM frame `n` of `pid` failed its check before a read (`e`); the caller holds no
    /// latch of it. A clean frame's page is on SSD as it was: the frame is dropped, and
    /// the caller looks again (`Ok`). A dirty frame holds the only copy of its changes,
    /// and a pool without SSD the only copy of its pages: the error stands.
    ///
    /// # Errors
    /// `e`, for a dirty frame or without SSD; device errors clearing the frame.
    #[cold]
    pub(super) fn drop_corrupt_frame(&self, pid: PageId, n: NvmSlot, e: BufferError) -> Result<(), BufferError> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        if self.ssd.is_none() || nvm.is_dirty(n) {
            return Err(e);
        }
        if !self.claim(pid, Entry::Nvm(n))? {
            return Ok(()); // moved or held meanwhile: look again
        }
        // Owned now. Rewritten between the check and the claim? Then it may be good, or
        // dirty with changes only it holds.
        let recheck = if nvm.pid(n) == Some(pid) { nvm.check_page(n, pid) } else { Ok(()) };
        if recheck.is_ok() || nvm.is_dirty(n) {
            self.table.set(pid, Entry::Nvm(n));
            return recheck;
        }
        if let Err(err) = nvm.release(n) {
            self.table.set(pid, Entry::Nvm(n));
            return Err(err);
        }
        self.policy.observe(Event::NvmLeft(pid));
        self.counters.bump(Count::NvmCorruptDropped);
        self.table.set(pid, Entry::Empty);
        Ok(())
    }

    /// Reads page `pid` from SSD into an NVM frame only (`MissTarget::Nvm`): the
    /// table then says `Nvm(n)`. True if the caller should look again (installed, or
    /// another thread changed the entry first); false if NVM has no frame to give (all
    /// its pages are in DRAM too, or held), so the page must go to DRAM.
    pub(super) fn load_into_nvm(&self, pid: PageId) -> Result<bool, BufferError> {
        let (nvm, ssd) = (self.nvm.as_ref().expect("checked"), self.ssd.as_ref().expect("an EMPTY page is on SSD"));
        if !self.table.claim(pid, Entry::Empty)? {
            return Ok(true);
        }
        let installed = (|| {
            let Some(n) = self.nvm_frame()? else { return Ok(None) };
            let mut buf = AlignedBuf::new(self.page_size);
            let read = if pid.0 >= ssd.page_count() {
                buf.fill(0); // allocated but never written back, as in `fill`
                Ok(())
            } else {
                self.ssd_read(ssd, pid, &mut buf).map(|_| ())
            };
            if let Err(e) = read.and_then(|()| nvm.write_page(n, pid, &buf, false, Lsn::NONE)) {
                nvm.detach(n);
                return Err(e);
            }
            Ok(Some(n))
        })();
        match installed {
            Ok(Some(n)) => {
                self.counters.bump(Count::SsdReads);
                self.count_page_to_nvm();
                self.counters.bump(Count::NvmAdmissions);
                self.table.set(pid, Entry::Nvm(n));
                Ok(true)
            }
            Ok(None) => {
                self.table.set(pid, Entry::Empty);
                Ok(false)
            }
            Err(e) => {
                self.table.set(pid, Entry::Empty);
                Err(e)
            }
        }
    }

    /// Loads a page for line-grained access: an NVM page with cache-line-grained pages
    /// on gets a mini page (or an empty full frame) and no bytes yet; anything else is
    /// loaded whole. `None` if another thread changed the entry first.
    pub(super) fn load_lines_page(&self, pid: PageId, observed: Entry) -> Result<Option<LineGuard<'_>>, BufferError> {
        let Entry::Nvm(n) = observed else {
            return Ok(self.load(pid, observed)?.map(|g| LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
        };
        if !self.techniques.cl_grained {
            return Ok(self.load(pid, observed)?.map(|g| LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
        }
        if !self.claim(pid, observed)? {
            return Ok(None);
        }
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let place = if self.techniques.mini_pages {
            match self.mini_page() {
                Ok(i) => {
                    let m = self.frames.minis().meta(i);
                    m.clear();
                    m.pid.store(pid.0, Ordering::Relaxed);
                    m.set_nvm_slot(Some(n));
                    m.referenced.store(true, Ordering::Relaxed);
                    self.table.set(pid, Entry::Mini(i));
                    Place::Mini(i)
                }
                Err(e) => {
                    self.table.set(pid, observed);
                    return Err(e);
                }
            }
        } else {
            match self.free_frame() {
                Ok(g) => {
                    let f = g.frame();
                    self.reset_frame(f, pid, Some(n), false);
                    self.table.set(pid, Entry::Dram(f));
                    Place::Full(g.into_held())
                }
                Err(e) => {
                    self.table.set(pid, observed);
                    return Err(e);
                }
            }
        };
        nvm.touch(n);
        self.counters.bump(Count::NvmHits);
        Ok(Some(LineGuard::new(self, pid, place, true)))
    }

    /// Sets up frame `f` (held exclusive) for page `pid` with NVM copy `n`.
    pub(super) fn reset_frame(&self, f: FrameId, pid: PageId, n: Option<NvmSlot>, resident_all: bool) {
        let meta = self.frames.meta(f);
        meta.pid.store(pid.0, Ordering::Relaxed);
        meta.set_nvm_slot(n);
        meta.dirty.store(false, Ordering::Relaxed);
        meta.referenced.store(true, Ordering::Relaxed);
        meta.resident_all.store(resident_all, Ordering::Relaxed);
        meta.page_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
        meta.first_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
        meta.flush_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
        self.frames.clear_mask(Mask::Resident, f);
        self.frames.clear_mask(Mask::Dirty, f);
    }

    /// A free mini page, latched exclusive: from a block with room, else from a new
    /// block (a full frame lent out).
    pub(super) fn mini_page(&self) -> Result<u32, BufferError> {
        let minis = self.frames.minis();
        let i = match minis.pop() {
            Some(i) => i,
            None => {
                let g = self.free_frame()?;
                // A block is no page's frame: nothing of its last page may linger.
                self.reset_frame(g.frame(), PageId(MINI_BLOCK), None, true);
                g.meta().dirty.store(false, Ordering::Relaxed);
                minis.add_block(g.frame())
            }
        };
        // Free, but a stale fixer may be looking at it for a moment.
        minis.meta(i).latch.exclusive();
        self.counters.bump(Count::MiniAllocations);
        Ok(i)
    }
}

impl LineHost for BufferManager {
    fn frames(&self) -> &FramePool {
        &self.frames
    }

    fn cl_grained(&self) -> bool {
        self.techniques.cl_grained
    }

    fn debug_lines(&self) -> bool {
        self.debug_lines
    }

    fn count(&self, c: Count, n: u64) {
        self.counters.add(c, n);
    }

    fn page_size_bytes(&self) -> usize {
        self.page_size
    }

    fn stop(&self, why: String) {
        BufferManager::stop(self, why);
    }

    fn write_in_place(
        &self,
        n: NvmSlot,
        pid: PageId,
        runs: &[(usize, &[u8])],
        old: &[u8],
        page_lsn: Lsn,
        lines: u64,
    ) -> Result<(), BufferError> {
        let nvm = self.nvm.as_ref().expect("an in-place guard implies an NVM pool");
        self.force_log(page_lsn)?;
        nvm.write_lines(n, pid, runs, Some(old), page_lsn)?;
        self.counters.add(Count::NvmLinesWritten, lines);
        Ok(())
    }

    fn load_lines(&self, n: NvmSlot, pid: PageId, off: usize, dst: &mut [u8]) -> Result<(), BufferError> {
        let nvm = self.nvm.as_ref().expect("a partly resident page has an NVM copy");
        nvm.read_lines(n, pid, off, dst)?;
        self.counters.add(Count::NvmLinesLoaded, (dst.len() / CACHE_LINE_BYTES) as u64);
        Ok(())
    }

    fn promotion_frame(&self) -> Result<FrameWrite<'_>, BufferError> {
        self.free_frame()
    }

    fn publish_promotion(&self, pid: PageId, f: FrameId) {
        self.table.set(pid, Entry::Dram(f));
        self.counters.bump(Count::MiniPromotions);
    }

    fn release_mini(&self, i: u32) {
        if let Some(block) = self.frames.minis().push(i) {
            self.frames.meta(block).pid.store(NO_PAGE, Ordering::Relaxed);
            self.free_frames.lock().push(block);
        }
    }
}
