//! DRAM eviction, in steps: the clock hand offers frames to the policy, a victim is
//! latched exclusive and unswizzled, then written where the policy says (NVM, SSD, or SSD
//! with a clean copy in NVM). A dirty victim that goes to SSD alone (whole in DRAM, no
//! NVM copy) takes the clock's next victims that go to SSD alone too, and their pages
//! are written in one batch; each is evicted and counted once, and no page is written
//! that stays in DRAM.
//!
//! Housekeeping only *tries* latches: it never waits for a fixer, so it adds no wait to
//! the callers' top-down latch order.

use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::limits::CLOCK_ROUNDS_MAX;
use crate::limits::EVICT_BATCH_VISITS_PER_PAGE;
use crate::page::frame::FrameId;
use crate::page::frame::FrameWrite;
use crate::page::frame::MINI_BLOCK;
use crate::page::frame::Mask;
use crate::page::frame::NO_PAGE;
use crate::policy::Event;
use crate::policy::EvictTo;
use crate::policy::PageInfo;
use crate::policy::Pool;
use crate::policy::Victim;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{BufferManager, ClockStep, provider};

/// The clock step that ended a batch of victims bound for SSD, taken after the batch.
enum AfterBatch<'a> {
    /// A victim the policy sends elsewhere, and where.
    Victim(FrameWrite<'a>, EvictTo),
    /// A block of mini pages, to sweep.
    Block(FrameId),
}

impl BufferManager {
    /// Counts the time since `started` spent writing victims down: a miss's, or the
    /// page provider's.
    pub(super) fn count_write_time(&self, started: Instant) {
        let c = if provider::on_provider_thread() { Count::ProviderWriteNanos } else { Count::EvictWriteNanos };
        self.counters.add(c, started.elapsed().as_nanos() as u64);
    }

    /// Gives an empty frame (not in the page table) back to the free list.
    pub(super) fn return_frame(&self, mut g: FrameWrite<'_>) {
        let meta = g.meta();
        meta.pid.store(NO_PAGE, Ordering::Relaxed);
        meta.set_nvm_slot(None);
        meta.dirty.store(false, Ordering::Relaxed);
        g.clear_wrote();
        let f = g.frame();
        drop(g);
        self.free_frames.lock().push(f);
    }

    /// An empty DRAM frame, held exclusive: from the free list, else by evicting the
    /// clock's victim — together with the next victims, up to
    /// [`evict_batch`](BufferConfig::evict_batch), when it must be written to SSD.
    pub(super) fn free_frame(&self) -> Result<FrameWrite<'_>, BufferError> {
        let (f, left) = {
            let mut free = self.free_frames.lock();
            (free.pop(), free.len())
        };
        if self.provider_on.load(Ordering::Relaxed) && left < self.provider_target / 2 {
            self.wake_provider();
        }
        if let Some(f) = f {
            // Free frames are unlatched but for a stale fixer checking its page id.
            return Ok(self.frames.write(f));
        }
        let n = self.frames.len();
        if let Some((g, _)) = self.evict_next(n * CLOCK_ROUNDS_MAX)? {
            return Ok(g);
        }
        if let Some(f) = self.free_frames.lock().pop() {
            return Ok(self.frames.write(f));
        }
        Err(BufferError::Exhausted { pool: "DRAM", frames: n, rounds: CLOCK_ROUNDS_MAX })
    }

    /// Moves the DRAM clock's hand over at most `visits` frames until an eviction frees
    /// one (for a miss, [`free_frame`](Self::free_frame), or the page provider): that
    /// frame, empty and held exclusive, and how many more the eviction put on the free
    /// list (the rest of a batch of dirty victims); `None` if every frame passed was
    /// free, fixed or given a second chance.
    pub(super) fn evict_next(&self, visits: usize) -> Result<Option<(FrameWrite<'_>, usize)>, BufferError> {
        let n = self.frames.len();
        for _ in 0..visits {
            match self.clock_step(n) {
                ClockStep::Pass => {}
                ClockStep::Block(f) => {
                    if let Some(g) = self.sweep_block(f)? {
                        return Ok(Some((g, 0)));
                    }
                }
                ClockStep::Victim(mut g) => {
                    let to = self.policy.dram_eviction(&self.victim_info(&g), &self.tiers);
                    let dirty = g.meta().dirty.load(Ordering::Relaxed) || g.wrote();
                    if self.evict_batch > 1 && dirty && self.joins_ssd_batch(&g, to) {
                        return self.evict_batch_from(g).map(Some);
                    }
                    self.evict_with(&mut g, Some(to))?;
                    return Ok(Some((g, 0)));
                }
            }
        }
        Ok(None)
    }

    /// One step of the DRAM clock's hand over a pool of `n` frames: the frame under it,
    /// held exclusive and unswizzled from its parent, if the policy gives its page up
    /// now; a block of mini pages to sweep; or nothing (free, fixed, a parent, or a
    /// second chance).
    pub(super) fn clock_step(&self, n: usize) -> ClockStep<'_> {
        let f = FrameId::new((self.hand.fetch_add(1, Ordering::Relaxed) % n) as u32);
        let meta = self.frames.meta(f);
        let pid = meta.pid();
        if pid == NO_PAGE || meta.latch.is_held() || meta.swizzled_children.load(Ordering::Relaxed) > 0 {
            return ClockStep::Pass;
        }
        if pid == MINI_BLOCK {
            return ClockStep::Block(f);
        }
        let info = PageInfo {
            pid: PageId(pid),
            dirty: meta.dirty.load(Ordering::Relaxed),
            nvm_copy: meta.nvm_slot().is_some(),
            referenced: meta.referenced.load(Ordering::Relaxed),
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        };
        match self.policy.victim(Pool::Dram, &info, &self.tiers) {
            Victim::SecondChance => {
                meta.referenced.store(false, Ordering::Relaxed);
                return ClockStep::Pass;
            }
            Victim::Skip => return ClockStep::Pass,
            Victim::Evict => {}
        }
        let Some(g) = self.frames.try_write(f) else { return ClockStep::Pass };
        if !g.meta().holds_page() || g.meta().swizzled_children.load(Ordering::Relaxed) > 0 {
            return ClockStep::Pass; // freed or lent to mini pages in the meantime, or now a parent
        }
        if !self.unswizzle_victim(&g) {
            return ClockStep::Pass;
        }
        ClockStep::Victim(g)
    }

    /// Evicts the dirty victim `first`, which goes to SSD alone
    /// ([`joins_ssd_batch`](Self::joins_ssd_batch)), together with the clock's next
    /// victims that do too (at most [`evict_batch`](BufferConfig::evict_batch) in all,
    /// within [`EVICT_BATCH_VISITS_PER_PAGE`] frames visited per page), in one batch of
    /// SSD writes; returns `first`'s frame, empty, and puts the others on the free list
    /// (their number returned too). The policy is asked once per victim, as one at a
    /// time. A victim the policy sends elsewhere (to NVM, or through to a clean NVM
    /// copy), or a block of mini pages, ends the batch and is taken after it, alone.
    ///
    /// # Errors
    /// The batch's write (every page of it stays in its frame), or the eviction or sweep
    /// that ended the batch (the batch's frames are on the free list then).
    pub(super) fn evict_batch_from<'a>(
        &'a self,
        first: FrameWrite<'a>,
    ) -> Result<(FrameWrite<'a>, usize), BufferError> {
        debug_assert!(self.ssd.is_some(), "a batched eviction writes to SSD");
        let n = self.frames.len();
        let mut batch = Vec::with_capacity(self.evict_batch);
        batch.push(first);
        let mut after = None;
        for _ in 0..self.evict_batch * EVICT_BATCH_VISITS_PER_PAGE {
            if batch.len() >= self.evict_batch {
                break;
            }
            match self.clock_step(n) {
                ClockStep::Pass => {}
                ClockStep::Victim(g) => {
                    let to = self.policy.dram_eviction(&self.victim_info(&g), &self.tiers);
                    if self.joins_ssd_batch(&g, to) {
                        batch.push(g);
                    } else {
                        after = Some(AfterBatch::Victim(g, to));
                        break;
                    }
                }
                ClockStep::Block(f) => {
                    after = Some(AfterBatch::Block(f));
                    break;
                }
            }
        }
        self.evict_to_ssd_batch(&mut batch)?;
        let mut batch = batch.into_iter();
        let first = batch.next().expect("the batch holds its first victim");
        let mut others = batch.len();
        for g in batch {
            self.return_frame(g);
        }
        // The clock step that ended the batch, taken as a miss would take it.
        let freed = match after {
            None => Ok(None),
            Some(AfterBatch::Victim(mut g, to)) => self.evict_with(&mut g, Some(to)).map(|()| Some(g)),
            Some(AfterBatch::Block(f)) => self.sweep_block(f),
        };
        match freed {
            Ok(Some(g)) => {
                self.return_frame(g);
                others += 1;
            }
            Ok(None) => {}
            Err(e) => {
                self.return_frame(first);
                return Err(e);
            }
        }
        Ok((first, others))
    }

    /// Whether the victim `g`, which the policy sends `to`, lands on SSD alone and may
    /// therefore be written in a batch with others: a pool with SSD, the page whole in
    /// DRAM and without an NVM copy, and SSD where [`evict_with`](Self::evict_with)
    /// would send it. Not a durable NVM cache's page (`nvsql` evicts one at a time).
    pub(super) fn joins_ssd_batch(&self, g: &FrameWrite<'_>, to: EvictTo) -> bool {
        let meta = g.meta();
        self.ssd.is_some()
            && meta.nvm_slot().is_none()
            && meta.resident_all.load(Ordering::Relaxed)
            && (self.nvm.is_none()
                || (to == EvictTo::Ssd && !self.shape.nvm_durable_cache && !self.bulk_to_free_nvm(to)))
    }

    /// A bulk load sends to a free NVM frame what the policy sends to SSD (not into a
    /// clean-only NVM).
    fn bulk_to_free_nvm(&self, to: EvictTo) -> bool {
        to == EvictTo::Ssd
            && !self.shape.nvm_clean_only
            && self.bulk_load.load(Ordering::Relaxed)
            && self.nvm.as_ref().is_some_and(|n| n.free_frames() > 0)
    }

    /// What the policy is told of the victim `g` (held exclusive) when asked where it goes.
    pub(super) fn victim_info(&self, g: &FrameWrite<'_>) -> PageInfo {
        let meta = g.meta();
        let nvm_frame = meta.nvm_slot();
        let dirty = meta.dirty.load(Ordering::Relaxed)
            || g.wrote()
            || (nvm_frame.is_some() && self.frames.count_set(Mask::Dirty, g.frame()) > 0);
        PageInfo {
            pid: PageId(meta.pid()),
            dirty,
            nvm_copy: nvm_frame.is_some(),
            referenced: false,
            // `nvsql`'s admission rule measures the re-update interval from these.
            first_update_lsn: meta.first_lsn.load_lsn(Ordering::Relaxed),
            page_lsn: meta.page_lsn.load_lsn(Ordering::Relaxed),
            last_flush_lsn: meta.flush_lsn.load_lsn(Ordering::Relaxed),
        }
    }

    /// Moves the pages of the frames `batch` (held exclusive, whole, without NVM copies;
    /// the policy has sent each to SSD) to SSD: one write-ahead force up to the newest
    /// page LSN among the dirty ones, then their writes in one batch
    /// ([`SsdFile::write_pages_flushed`]: one double-write sync for the batch,
    /// consecutive pages in one write). On error every page stays in its frame, as it
    /// was.
    pub(super) fn evict_to_ssd_batch(&self, batch: &mut [FrameWrite<'_>]) -> Result<(), BufferError> {
        let ssd = self.ssd.as_ref().expect("a batched eviction writes to SSD");
        let mut dirty = Vec::with_capacity(batch.len());
        let mut force_to = None;
        for g in batch.iter() {
            let meta = g.meta();
            let pid = PageId(meta.pid());
            debug_assert_eq!(self.table.get(pid)?, Entry::Dram(g.frame()), "frame {:?} holds {pid}", g.frame());
            debug_assert_eq!(meta.nvm_slot(), None, "{pid} has an NVM copy");
            debug_assert!(meta.resident_all.load(Ordering::Relaxed), "{pid} is partly resident in a batch");
            let d = meta.dirty.load(Ordering::Relaxed) || g.wrote();
            if d {
                force_to = force_to.max(Some(meta.page_lsn.load_lsn(Ordering::Relaxed)));
            }
            dirty.push(d);
        }
        let started = std::time::Instant::now();
        if let Some(lsn) = force_to {
            self.force_log(lsn)?;
        }
        // Fixers see BUSY (and fail on the latch anyway) until the pages have landed.
        for g in batch.iter() {
            self.table.set(PageId(g.meta().pid()), Entry::Busy);
        }
        let written = (|| {
            let pages: Vec<(PageId, &[u8])> =
                batch.iter().zip(&dirty).filter(|(_, d)| **d).map(|(g, _)| (PageId(g.meta().pid()), &g[..])).collect();
            let Some(last) = pages.iter().map(|(pid, _)| *pid).max() else { return Ok(()) };
            self.ssd_reserve(ssd, last)?;
            let lsn = self.log_end_lsn();
            ssd.write_pages_flushed(&pages, lsn)?;
            self.note_flushed(pages.iter().map(|(pid, _)| *pid), lsn)
        })();
        self.count_write_time(started);
        if let Err(e) = written {
            for g in batch.iter() {
                self.table.set(PageId(g.meta().pid()), Entry::Dram(g.frame()));
            }
            return Err(e);
        }
        for (g, d) in batch.iter_mut().zip(dirty) {
            let meta = g.meta();
            self.table.set(PageId(meta.pid()), Entry::Empty);
            meta.pid.store(NO_PAGE, Ordering::Relaxed);
            meta.dirty.store(false, Ordering::Relaxed);
            meta.first_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
            g.clear_wrote();
            self.counters.bump(if d { Count::DramToSsd } else { Count::CleanDrops });
            self.counters.bump(Count::DramEvictions);
        }
        Ok(())
    }

    /// The clock's visit to a block of mini pages (frame `f`): evicts the mini pages
    /// the policy gives up (second chance by their own reference bits). Returns the
    /// frame, empty and held exclusive, if that emptied the block.
    pub(super) fn sweep_block(&self, f: FrameId) -> Result<Option<FrameWrite<'_>>, BufferError> {
        let Some(g) = self.frames.try_write(f) else { return Ok(None) };
        if g.meta().pid() != MINI_BLOCK {
            return Ok(None);
        }
        let minis = self.frames.minis();
        for i in minis.of_block(f) {
            let m = minis.meta(i);
            let pid = m.pid();
            if pid == NO_PAGE || m.latch.is_held() {
                continue;
            }
            let info = PageInfo {
                pid: PageId(pid),
                dirty: m.dirty.load(Ordering::Relaxed) != 0,
                nvm_copy: true,
                referenced: m.referenced.load(Ordering::Relaxed),
                first_update_lsn: Lsn::NONE,
                page_lsn: Lsn::NONE,
                last_flush_lsn: Lsn::NONE,
            };
            match self.policy.victim(Pool::Dram, &info, &self.tiers) {
                Victim::SecondChance => {
                    m.referenced.store(false, Ordering::Relaxed);
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            if !self.frames.try_write_mini(i) {
                continue;
            }
            if m.pid() != pid {
                self.frames.unlock_mini(i);
                continue;
            }
            let done = self.evict_mini(i, PageId(pid));
            self.frames.unlock_mini(i);
            done?;
            if let Some(block) = minis.push(i) {
                debug_assert_eq!(block, f);
                g.meta().pid.store(NO_PAGE, Ordering::Relaxed);
                return Ok(Some(g));
            }
        }
        Ok(None)
    }

    /// Writes the dirty lines of frame `g` (exclusive; its page has NVM frame `n`)
    /// back to NVM and clears its dirty mask.
    pub(super) fn write_back_lines(&self, g: &FrameWrite<'_>, pid: PageId, n: NvmSlot) -> Result<(), BufferError> {
        let f = g.frame();
        let last = self.frames.lines() - 1;
        let runs: Vec<(usize, &[u8])> = self
            .frames
            .runs(Mask::Dirty, f, 0, last, true)
            .into_iter()
            .map(|(s, k)| (s * CACHE_LINE_BYTES, &g[s * CACHE_LINE_BYTES..(s + k) * CACHE_LINE_BYTES]))
            .collect();
        if runs.is_empty() {
            return Ok(());
        }
        let nvm = self.nvm.as_ref().expect("dirty lines imply an NVM copy");
        let lsn = g.meta().page_lsn.load_lsn(Ordering::Relaxed);
        self.force_log(lsn)?;
        nvm.write_lines(n, pid, &runs, None, lsn)?;
        self.counters.add(Count::NvmLinesWritten, self.frames.count_set(Mask::Dirty, f) as u64);
        self.frames.clear_mask(Mask::Dirty, f);
        Ok(())
    }

    /// Moves the page out of frame `g` (held exclusive) to `to` if given (the policy's
    /// answer, asked already, or a target of the caller's own), else to where the
    /// policy says. On error the page stays in the frame, as it was.
    pub(super) fn evict_with(&self, g: &mut FrameWrite<'_>, to: Option<EvictTo>) -> Result<(), BufferError> {
        let meta = g.meta();
        let pid = PageId(meta.pid());
        debug_assert_eq!(self.table.get(pid)?, Entry::Dram(g.frame()), "frame {:?} holds {pid}", g.frame());
        let nvm_frame = meta.nvm_slot();
        let partial = !meta.resident_all.load(Ordering::Relaxed);
        debug_assert!(!partial || nvm_frame.is_some(), "{pid} is partly resident without an NVM copy");
        let info = self.victim_info(g);
        let dirty = info.dirty;
        let mut to = match to {
            Some(to) => to,
            None => self.policy.dram_eviction(&info, &self.tiers),
        };
        let clean_only = self.shape.nvm_clean_only;
        debug_assert!(!(clean_only && dirty && to == EvictTo::Nvm), "{pid}: a dirty page sent to a clean-only NVM");
        let bulk_to_free_nvm = self.bulk_to_free_nvm(to);
        if self.nvm.is_none() || (to == EvictTo::SsdAndNvm && self.ssd.is_none()) {
            to = EvictTo::Ssd;
        } else if self.ssd.is_none() || bulk_to_free_nvm || partial {
            // A partly resident page is whole only together with its NVM copy.
            to = EvictTo::Nvm;
        }
        let started = dirty.then(std::time::Instant::now);
        if dirty {
            self.force_log(meta.page_lsn.load_lsn(Ordering::Relaxed))?;
        }
        // Fixers see BUSY (and fail on the latch anyway) until the page has landed.
        self.table.set(pid, Entry::Busy);
        let landed = match to {
            EvictTo::Nvm => self.evict_to_nvm(g, pid, dirty, nvm_frame),
            EvictTo::Ssd => self.evict_to_ssd(g, pid, dirty, nvm_frame),
            EvictTo::SsdAndNvm => self.evict_through(g, pid, dirty, nvm_frame),
        };
        if let Some(t) = started {
            self.count_write_time(t);
        }
        match landed {
            Ok(entry) => {
                self.table.set(pid, entry);
                meta.pid.store(NO_PAGE, Ordering::Relaxed);
                meta.set_nvm_slot(None);
                meta.dirty.store(false, Ordering::Relaxed);
                meta.first_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
                g.clear_wrote();
                self.counters.bump(Count::DramEvictions);
                Ok(())
            }
            Err(e) => {
                self.table.set(pid, Entry::Dram(g.frame()));
                Err(e)
            }
        }
    }

    pub(super) fn evict_to_nvm(
        &self,
        g: &FrameWrite<'_>,
        pid: PageId,
        dirty: bool,
        nvm_frame: Option<NvmSlot>,
    ) -> Result<Entry, BufferError> {
        let nvm = self.nvm.as_ref().expect("evict_to_nvm needs NVM");
        if let Some(nvm_frame) = nvm_frame {
            // Back to its own frame: write only if DRAM holds newer bytes (only the
            // dirty lines, unless the page was written as a whole); the NVM copy stays
            // dirty (newer than SSD) if it was.
            if g.meta().dirty.load(Ordering::Relaxed) || g.wrote() {
                debug_assert!(g.meta().resident_all.load(Ordering::Relaxed));
                self.log_nvm_images(&[(pid, &g[..])])?;
                nvm.write_page(nvm_frame, pid, g, true, g.meta().page_lsn.load_lsn(Ordering::Relaxed))?;
                self.count_page_to_nvm();
            } else if dirty {
                self.write_back_lines(g, pid, nvm_frame)?;
            } else {
                self.counters.bump(Count::CleanDrops);
            }
            return Ok(Entry::Nvm(nvm_frame));
        }
        let Some(n) = self.nvm_frame()? else {
            // NVM has no victim to give (all its pages are in DRAM or moving).
            return self.evict_to_ssd(g, pid, dirty, None);
        };
        // The first-update LSN bounds the oldest change not on SSD (`nvsql` keeps the
        // log back to it while the page is dirty in NVM).
        let (lsn, rec) =
            (g.meta().page_lsn.load_lsn(Ordering::Relaxed), g.meta().first_lsn.load_lsn(Ordering::Relaxed));
        if let Err(e) = self.log_nvm_images(&[(pid, &g[..])]) {
            nvm.detach(n);
            return Err(e);
        }
        if let Err(e) = nvm.write_page_rec(n, pid, g, dirty, lsn, rec) {
            nvm.detach(n);
            return Err(e);
        }
        self.count_page_to_nvm();
        self.counters.bump(Count::NvmAdmissions);
        self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
        Ok(Entry::Nvm(n))
    }

    /// [`EvictTo::SsdAndNvm`]: writes a dirty page to SSD, then keeps a clean copy in
    /// NVM — its own frame, rewritten if the page changed, else a new frame if
    /// [`nvm_frame`](Self::nvm_frame) can give one (else the page lives on SSD only).
    pub(super) fn evict_through(
        &self,
        g: &FrameWrite<'_>,
        pid: PageId,
        dirty: bool,
        nvm_frame: Option<NvmSlot>,
    ) -> Result<Entry, BufferError> {
        let nvm = self.nvm.as_ref().expect("evict_through needs NVM");
        debug_assert!(g.meta().resident_all.load(Ordering::Relaxed), "{pid}: write-through of a partial page");
        debug_assert!(nvm_frame.is_none_or(|n| !nvm.is_dirty(n)), "{pid}: a dirty copy in a clean cache");
        if !dirty {
            self.counters.bump(Count::CleanDrops);
            return Ok(nvm_frame.map_or(Entry::Empty, Entry::Nvm));
        }
        // 1. SSD first: the NVM copy is clean only once SSD holds the same bytes.
        self.ssd_write(pid, g)?;
        self.counters.bump(Count::DramToSsd);
        let lsn = g.meta().page_lsn.load_lsn(Ordering::Relaxed);
        // 2. The page's own frame holds a stale copy: overwrite it.
        if let Some(nvm_frame) = nvm_frame {
            nvm.write_page(nvm_frame, pid, &self.stored_image(g.frame(), g), false, lsn)?;
            self.count_page_to_nvm();
            self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
            return Ok(Entry::Nvm(nvm_frame));
        }
        // 3. Else a new frame, if there is one to have.
        let Some(n) = self.nvm_frame()? else { return Ok(Entry::Empty) };
        if let Err(e) = nvm.write_page(n, pid, &self.stored_image(g.frame(), g), false, lsn) {
            nvm.detach(n);
            return Err(e);
        }
        self.count_page_to_nvm();
        self.counters.bump(Count::NvmAdmissions);
        self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
        Ok(Entry::Nvm(n))
    }

    pub(super) fn evict_to_ssd(
        &self,
        g: &FrameWrite<'_>,
        pid: PageId,
        dirty: bool,
        nvm_frame: Option<NvmSlot>,
    ) -> Result<Entry, BufferError> {
        if dirty {
            self.ssd_write(pid, g)?;
            self.counters.bump(Count::DramToSsd);
        } else {
            self.counters.bump(Count::CleanDrops);
        }
        if let Some(nvm_frame) = nvm_frame {
            let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
            // The SSD copy is current now; the NVM copy must not come back after a
            // restart, so its header is cleared (not in a volatile pool, which no
            // restart reuses: a removal there writes nothing to NVM).
            nvm.release(nvm_frame)?;
            self.policy.observe(Event::NvmLeft(pid));
        }
        Ok(Entry::Empty)
    }
}
