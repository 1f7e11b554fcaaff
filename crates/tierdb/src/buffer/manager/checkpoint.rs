//! Checkpoints: every dirty page to SSD (or to NVM without SSD), then the free-page
//! list and the superblock (`free_list.rs`). A durable NVM cache (`nvsql`) keeps its
//! dirty NVM pages there but for those older than its bound, and may move dirty DRAM
//! pages to NVM instead of SSD (checkpoint-based admission; docs/nvsql.md).
//!
//! Pages go to SSD in batches ([`SsdBatch`]): the page file writes a batch to its
//! double-write area with one write and one sync before it writes the pages in place
//! (`device::double_write`), so a checkpoint pays one double-write sync per batch, not
//! per page.
//!
//! A page stays *held* from the moment its bytes are taken until its batch is written
//! and the page marked clean: its DRAM frame or mini page latched, or its page-table
//! entry claimed (BUSY). No newer version of it can therefore be written out in between
//! and then be overwritten by this older one, and no change made meanwhile is marked
//! clean unwritten. While a batch holds latches, further latches are only *tried*: when
//! one is busy the batch is written first, so the checkpoint never waits for a latch
//! while it holds one, and adds no cycle to the callers' latch order. A batch that
//! holds DRAM frames holds at most a quarter of them, so concurrent fixes still find
//! victims.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use super::{BufferManager, NO_PAGE};
use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::nvm_pool::NvmPool;
use crate::buffer::table::Entry;
use crate::device::{AlignedBuf, SsdFile};
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::{DOUBLE_WRITE_SLOTS, EVICT_BATCH_VISITS_PER_PAGE};
use crate::page::frame::{FrameId, FrameRead, FrameWrite, Mask};

/// What keeps a page of a batch from changing or moving until the batch is written.
enum Hold<'a> {
    /// A DRAM page dirty as a whole, its frame latched shared; its bytes are the frame's.
    Shared(FrameRead<'a>),
    /// A cache-line-grained DRAM page latched exclusive, whose NVM copy is dirty.
    Exclusive(FrameWrite<'a>),
    /// A mini page latched exclusive, whose NVM copy is dirty.
    Mini(u32),
    /// A page in NVM only, its page-table entry claimed.
    Table,
}

/// One page of a batch.
struct Pending<'a> {
    pid: PageId,
    /// The page's NVM frame, whose copy is clean once the page is on SSD.
    nvm: Option<NvmSlot>,
    /// The bytes to write; `None` for [`Hold::Shared`], whose frame holds them.
    bytes: Option<AlignedBuf>,
    /// `bytes` are the whole page as DRAM holds it: its NVM copy is rewritten from them
    /// (which refreshes the copy's CRC), not only marked clean.
    refresh_nvm: bool,
    /// The page's LSN: the log is forced up to it before the batch is written.
    lsn: Lsn,
    hold: Hold<'a>,
}

impl Pending<'_> {
    /// A page that lives in NVM only, claimed in the page table, its bytes copied out of
    /// NVM frame `n`: the log holds its changes already (it was forced when the page
    /// went to NVM), and its NVM copy is marked clean once the page is on SSD.
    fn nvm_only(pid: PageId, n: NvmSlot, bytes: AlignedBuf) -> Self {
        Pending { pid, nvm: Some(n), bytes: Some(bytes), refresh_nvm: false, lsn: Lsn::NONE, hold: Hold::Table }
    }
}

/// Pages on their way to SSD together; see the module doc. Dropping a batch releases
/// what it holds without writing it.
struct SsdBatch<'a> {
    bm: &'a BufferManager,
    ssd: &'a SsdFile,
    /// Pages at which the batch is written.
    cap: usize,
    entries: Vec<Pending<'a>>,
}

impl<'a> SsdBatch<'a> {
    fn new(bm: &'a BufferManager, ssd: &'a SsdFile, cap: usize) -> SsdBatch<'a> {
        debug_assert!((1..=DOUBLE_WRITE_SLOTS).contains(&cap), "batch of {cap} pages");
        SsdBatch { bm, ssd, cap, entries: Vec::with_capacity(cap) }
    }

    /// Adds a page; writes the batch once it is full.
    fn push(&mut self, p: Pending<'a>) -> Result<(), BufferError> {
        debug_assert!(self.entries.iter().all(|e| e.pid != p.pid), "{} twice in one batch", p.pid);
        self.entries.push(p);
        if self.entries.len() >= self.cap { self.flush() } else { Ok(()) }
    }

    /// Writes the batch and marks its pages clean; releases them either way.
    ///
    /// # Errors
    /// The log's force, the page file's write, or NVM's rewrite: the pages not marked
    /// clean stay dirty.
    fn flush(&mut self) -> Result<(), BufferError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.entries);
        let mut error = self.write(&entries).err();
        for p in entries {
            if error.is_none() {
                error = self.finish(p).err();
            } else {
                self.release(p);
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Forces the log, grows the file if needed, and writes the pages: one
    /// double-write batch.
    fn write(&self, entries: &[Pending<'a>]) -> Result<(), BufferError> {
        let bm = self.bm;
        bm.force_log(entries.iter().map(|p| p.lsn).max().unwrap_or(Lsn::NONE))?;
        let last = entries.iter().map(|p| p.pid).max().expect("a batch is not empty");
        bm.ssd_reserve(self.ssd, last)?;
        let images: Vec<Cow<'_, [u8]>> = entries
            .iter()
            .map(|p| match (&p.bytes, &p.hold) {
                (Some(b), _) => Cow::Borrowed(&b[..]),
                (None, Hold::Shared(g)) => bm.stored_image(g.frame(), g),
                (None, _) => unreachable!("{}: only a shared frame's page has no copy", p.pid),
            })
            .collect();
        let pages: Vec<(PageId, &[u8])> = entries.iter().zip(&images).map(|(p, b)| (p.pid, &**b)).collect();
        // The log's LSN after the force: every page's last-flush LSN.
        let lsn = bm.log_end_lsn();
        self.ssd.write_pages_flushed(&pages, lsn)?;
        bm.note_flushed(entries.iter().map(|p| p.pid), lsn)
    }

    /// After the write: the page is clean in DRAM and NVM; releases it.
    fn finish(&self, p: Pending<'a>) -> Result<(), BufferError> {
        let bm = self.bm;
        let nvm = || bm.nvm.as_ref().expect("an NVM frame implies an NVM pool");
        match p.hold {
            Hold::Shared(g) => {
                if let Some(n) = p.nvm {
                    nvm().write_page(n, p.pid, &bm.stored_image(g.frame(), &g), false, p.lsn)?;
                }
                g.meta().dirty.store(false, Ordering::Relaxed);
                // On SSD now: the next change starts a new re-update interval (`nvsql`).
                g.meta().first_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
                bm.frames.clear_mask(Mask::Dirty, g.frame());
                Ok(())
            }
            Hold::Exclusive(g) => {
                let n = p.nvm.expect("a line-grained page has an NVM copy");
                let done = match &p.bytes {
                    Some(b) if p.refresh_nvm => nvm().write_page(n, p.pid, b, false, p.lsn),
                    _ => nvm().mark_clean(n),
                };
                drop(g);
                Ok(done?)
            }
            Hold::Mini(i) => {
                let done = nvm().mark_clean(p.nvm.expect("a mini page has an NVM frame"));
                bm.frames.unlock_mini(i);
                Ok(done?)
            }
            Hold::Table => {
                let n = p.nvm.expect("a page in NVM only has an NVM frame");
                let done = nvm().mark_clean(n);
                bm.table.set(p.pid, Entry::Nvm(n));
                Ok(done?)
            }
        }
    }

    /// Lets the page go unwritten (it stays dirty).
    fn release(&self, p: Pending<'a>) {
        match p.hold {
            Hold::Shared(_) | Hold::Exclusive(_) => {} // the guard unlatches
            Hold::Mini(i) => self.bm.frames.unlock_mini(i),
            Hold::Table => self.bm.table.set(p.pid, Entry::Nvm(p.nvm.expect("a page in NVM only has an NVM frame"))),
        }
    }
}

impl Drop for SsdBatch<'_> {
    fn drop(&mut self) {
        for p in std::mem::take(&mut self.entries) {
            self.release(p);
        }
    }
}

impl BufferManager {
    /// Writes every dirty page to the lowest durable tier (SSD if there is one, else
    /// NVM), syncs, and records the catalog, free-page list and allocation mark in the
    /// superblock. Pages go to SSD in batches: one double-write sync per batch (see
    /// the module doc). Call with no guards held; concurrent fixes are allowed but
    /// their changes may miss this checkpoint.
    ///
    /// # Errors
    /// Device errors (the pages not written stay dirty).
    pub fn checkpoint(&self) -> Result<(), BufferError> {
        let nvm_bound = self.nvm_flush_bound();
        // Holding DRAM frames, a batch keeps three quarters of them for other threads.
        let frames_cap = (self.frames.len() / 4).clamp(1, DOUBLE_WRITE_SLOTS);
        // 1. Mini pages: their dirty lines go to their NVM frames, and from there to SSD.
        let mut batch = self.ssd.as_ref().map(|ssd| SsdBatch::new(self, ssd, frames_cap));
        let minis = self.frames.minis();
        for i in 0..minis.len() as u32 {
            let m = minis.meta(i);
            if m.pid() == NO_PAGE {
                continue;
            }
            if !self.frames.try_write_mini(i) {
                if let Some(b) = &mut batch {
                    b.flush()?;
                }
                m.latch.exclusive();
            }
            let pid = m.pid();
            let n = m.nvm_slot();
            let pending = if pid == NO_PAGE {
                Ok(None)
            } else {
                let n = n.expect("a mini page has an NVM frame");
                self.flush_mini(i, PageId(pid), false).and_then(|()| self.nvm_copy(PageId(pid), n, &batch))
            };
            match (pending, &mut batch) {
                (Ok(Some(bytes)), Some(b)) => b.push(Pending {
                    pid: PageId(pid),
                    nvm: n,
                    bytes: Some(bytes),
                    refresh_nvm: false,
                    lsn: Lsn::NONE,
                    hold: Hold::Mini(i),
                })?,
                (pending, _) => {
                    self.frames.unlock_mini(i);
                    pending?;
                }
            }
        }
        if let Some(b) = &mut batch {
            b.flush()?;
        }
        // 2. Cache-line-grained frames: dirty lines to NVM, the NVM copy to SSD.
        for i in 0..self.frames.len() {
            let f = FrameId::from_index(i);
            let meta = self.frames.meta(f);
            if !meta.holds_page()
                || meta.nvm_slot().is_none()
                || (meta.resident_all.load(Ordering::Relaxed) && self.frames.count_set(Mask::Dirty, f) == 0)
            {
                continue;
            }
            let g = match self.frames.try_write(f) {
                Some(g) => g,
                None => {
                    if let Some(b) = &mut batch {
                        b.flush()?;
                    }
                    self.frames.write(f)
                }
            };
            if !g.meta().holds_page() || g.meta().dirty.load(Ordering::Relaxed) {
                continue; // gone, or dirty as a whole (and fully resident): step 3
            }
            let pid = PageId(g.meta().pid());
            let n = g.meta().nvm_slot().expect("a line-grained page has an NVM copy");
            self.write_back_lines(&g, pid, n)?;
            if batch.is_none() {
                continue;
            }
            let whole = g.meta().resident_all.load(Ordering::Relaxed);
            let bytes = if whole {
                self.nvm.as_ref().is_some_and(|nvm| nvm.is_dirty(n)).then(|| {
                    let mut copy = AlignedBuf::new(self.page_size);
                    copy.copy_from_slice(&self.stored_image(f, &g));
                    copy
                })
            } else {
                self.nvm_copy(pid, n, &batch)?
            };
            let Some(bytes) = bytes else { continue };
            let lsn = g.meta().page_lsn.load_lsn(Ordering::Relaxed);
            let b = batch.as_mut().expect("checked above");
            let nvm = Some(n);
            b.push(Pending { pid, nvm, bytes: Some(bytes), refresh_nvm: whole, lsn, hold: Hold::Exclusive(g) })?;
        }
        if let Some(b) = &mut batch {
            b.flush()?;
        }
        // 3. Pages dirty as a whole in DRAM (and clean ones whose NVM copy is newer than
        //    SSD: the NVM pass below cannot claim them, as they are in DRAM). Without SSD
        //    they go to their NVM frames, in batches whose images are logged with one
        //    force first (`log_nvm_images`). Those the policy picks for checkpoint-based
        //    admission (`nvsql`, NV-SQL §4.3; only with an SSD) move to NVM instead, where
        //    they are durable.
        let mut to_nvm: Vec<(FrameRead<'_>, PageId, Option<NvmSlot>, Lsn)> = Vec::new();
        let admit = self.checkpoint_admissions();
        for i in 0..self.frames.len() {
            let f = FrameId::from_index(i);
            if !self.frames.meta(f).holds_page() {
                continue;
            }
            if admit.contains(&self.frames.meta(f).pid()) {
                if let Some(b) = &mut batch {
                    b.flush()?; // the admission waits for the frame's latch
                }
                if self.admit_at_checkpoint(f)? {
                    continue;
                }
            }
            let g = match self.frames.try_read(f) {
                Some(g) => g,
                None => {
                    if let Some(b) = &mut batch {
                        b.flush()?;
                    }
                    self.flush_to_nvm(&mut to_nvm)?;
                    self.frames.read(f)
                }
            };
            let meta = g.meta();
            let pid = meta.pid();
            if !meta.holds_page() || !meta.resident_all.load(Ordering::Relaxed) {
                continue; // a partly resident page was handled above
            }
            let nvm_frame = meta.nvm_slot();
            let nvm_dirty = nvm_frame.is_some_and(|f| self.nvm.as_ref().is_some_and(|n| n.is_dirty(f)));
            if pid == NO_PAGE || !(meta.dirty.load(Ordering::Relaxed) || (nvm_dirty && self.ssd.is_some())) {
                continue;
            }
            let pid = PageId(pid);
            let lsn = meta.page_lsn.load_lsn(Ordering::Relaxed);
            if let Some(b) = &mut batch {
                b.push(Pending { pid, nvm: nvm_frame, bytes: None, refresh_nvm: true, lsn, hold: Hold::Shared(g) })?;
            } else if self.nvm.is_some() {
                to_nvm.push((g, pid, nvm_frame, lsn));
                if to_nvm.len() >= frames_cap {
                    self.flush_to_nvm(&mut to_nvm)?;
                }
            }
            // Main memory only: nothing to write to.
        }
        self.flush_to_nvm(&mut to_nvm)?;
        if let Some(b) = &mut batch {
            b.flush()?;
        }
        drop(batch);
        let Some(ssd) = &self.ssd else { return Ok(()) };
        // 4. Pages in NVM only whose copy is newer than SSD. They hold no DRAM frame.
        //    A durable NVM cache (`nvsql`) keeps them there: the log is kept back to
        //    their oldest change instead (`oldest_unflushed_lsn`). Waiting once for each
        //    frame's in-place latch makes sure that a change logged before the caller's
        //    redo point and still staged in an in-place guard has reached its frame (and
        //    its recovery LSN) before the caller asks. Those whose recovery LSN is older
        //    than the policy's bound are written to SSD and stay in NVM, clean: the log
        //    they keep is bounded (`Policy::nvm_keep_checkpoints`).
        if let Some(nvm) = &self.nvm
            && self.shape.nvm_durable_cache
        {
            for n in nvm.slots() {
                let latch = nvm.latch(n);
                latch.shared();
                latch.unlock_shared();
            }
            if let Some(bound) = nvm_bound {
                self.write_nvm_pages(nvm, ssd, bound, true)?;
            }
        } else if let Some(nvm) = &self.nvm {
            // Every dirty page in NVM: a recovery LSN is always below the largest one.
            self.write_nvm_pages(nvm, ssd, Lsn::MAX, false)?;
        }
        // 5. The free-page list, the sync, and the superblock that names them.
        self.write_free_list(ssd)
    }

    /// Step 4 of a checkpoint: writes to SSD the dirty pages in NVM only whose recovery
    /// LSN is below `bound` ([`Lsn::NONE`], unknown, counts as the oldest); they stay in
    /// NVM, clean. `count`: a durable cache's bound moves them out of its care
    /// ([`Count::NvmToSsd`](super::Count::NvmToSsd)).
    fn write_nvm_pages(&self, nvm: &NvmPool, ssd: &SsdFile, bound: Lsn, count: bool) -> Result<(), BufferError> {
        let mut batch = SsdBatch::new(self, ssd, DOUBLE_WRITE_SLOTS);
        let due = |n: NvmSlot| nvm.is_dirty(n) && nvm.rec_lsn(n) < bound;
        for n in nvm.slots() {
            // Clean or new enough, or in DRAM / moving (written by whoever has it): passed by.
            let Some((pid, bytes)) = self.claim_nvm_page(nvm, n, due)? else { continue };
            if count {
                self.counters.bump(super::Count::NvmToSsd);
            }
            batch.push(Pending::nvm_only(pid, n, bytes))?;
        }
        batch.flush()
    }

    /// Write-behind for the NVM clock (its victim, frame `victim`, is dirty): writes to
    /// SSD in one batch the dirty pages in NVM only among the frames the hand reaches
    /// next, at most `pages` of them within [`EVICT_BATCH_VISITS_PER_PAGE`] frames per
    /// page; they stay in NVM, clean, so their turn as victims writes nothing. Which
    /// pages are evicted, and when, does not change. Pages another thread holds are
    /// passed by.
    ///
    /// # Errors
    /// As a checkpoint's batch (the pages not written stay dirty).
    pub(super) fn clean_nvm_ahead(
        &self,
        nvm: &NvmPool,
        ssd: &SsdFile,
        victim: NvmSlot,
        pages: usize,
    ) -> Result<(), BufferError> {
        let mut batch = SsdBatch::new(self, ssd, pages.min(DOUBLE_WRITE_SLOTS));
        let len = nvm.len() as u32;
        let mut taken = 0;
        for k in 1..=(pages * EVICT_BATCH_VISITS_PER_PAGE).min(nvm.len() - 1) as u32 {
            if taken >= pages {
                break;
            }
            let n = NvmSlot::new((victim.get() + k) % len);
            // Clean, or in DRAM / moving: passed by.
            let Some((pid, bytes)) = self.claim_nvm_page(nvm, n, |n| nvm.is_dirty(n))? else { continue };
            self.counters.bump(super::Count::NvmToSsd);
            taken += 1;
            batch.push(Pending::nvm_only(pid, n, bytes))?;
        }
        batch.flush()
    }

    /// The page in NVM frame `n`, in NVM only, claimed (its entry BUSY) and read, if
    /// `due(n)` holds before and after the claim; `None` (nothing held) if the frame is
    /// empty, not due, or its page is in DRAM or moving. On an error the claim is undone.
    fn claim_nvm_page(
        &self,
        nvm: &NvmPool,
        n: NvmSlot,
        due: impl Fn(NvmSlot) -> bool,
    ) -> Result<Option<(PageId, AlignedBuf)>, BufferError> {
        let Some(pid) = nvm.pid(n) else { return Ok(None) };
        if !due(n) || !self.claim(pid, Entry::Nvm(n))? {
            return Ok(None);
        }
        if !due(n) || nvm.pid(n) != Some(pid) {
            self.table.set(pid, Entry::Nvm(n));
            return Ok(None);
        }
        let mut bytes = AlignedBuf::new(self.page_size);
        if let Err(e) = nvm.read_page(n, pid, &mut bytes) {
            self.table.set(pid, Entry::Nvm(n));
            return Err(e);
        }
        Ok(Some((pid, bytes)))
    }

    /// Without SSD (NVM is the durable tier): writes the DRAM pages of `pages`, latched
    /// shared (no writer can hold them, so the latch owns their NVM frames), into their
    /// NVM frames, after the log is forced up to their LSNs and their images are logged;
    /// empties `pages`.
    fn flush_to_nvm(&self, pages: &mut Vec<(FrameRead<'_>, PageId, Option<NvmSlot>, Lsn)>) -> Result<(), BufferError> {
        if pages.is_empty() {
            return Ok(());
        }
        let nvm = self.nvm.as_ref().expect("pages to NVM imply an NVM pool");
        self.force_log(pages.iter().map(|p| p.3).max().unwrap_or(Lsn::NONE))?;
        let images: Vec<(PageId, Cow<'_, [u8]>)> =
            pages.iter().map(|(g, pid, ..)| (*pid, self.stored_image(g.frame(), g))).collect();
        let refs: Vec<(PageId, &[u8])> = images.iter().map(|(pid, b)| (*pid, &b[..])).collect();
        self.log_nvm_images(&refs)?;
        for ((g, pid, nvm_frame, lsn), (_, bytes)) in pages.iter().zip(&images) {
            let meta = g.meta();
            let n = match *nvm_frame {
                Some(n) => n,
                None => self.nvm_frame()?.ok_or_else(|| self.full_error())?,
            };
            nvm.write_page(n, *pid, bytes, true, *lsn)?;
            meta.set_nvm_slot(Some(n));
            meta.dirty.store(false, Ordering::Relaxed);
            self.frames.clear_mask(Mask::Dirty, g.frame());
        }
        drop(images);
        pages.clear();
        Ok(())
    }

    /// A durable NVM cache's bound for this checkpoint: its dirty NVM pages whose
    /// recovery LSN is below it are written to SSD (`Policy::nvm_keep_checkpoints`):
    /// the log's end at the start of the checkpoint `keep` before this one. `None`: no
    /// bound (another policy, an unbounded one, no log, or too few checkpoints yet).
    fn nvm_flush_bound(&self) -> Option<Lsn> {
        if self.nvm.is_none() || !self.shape.nvm_durable_cache {
            return None;
        }
        let keep = self.shape.nvm_keep_checkpoints? as usize;
        let end = self.log.get().map_or(Lsn::NONE, |l| l.end_lsn());
        if end.is_none() {
            return None;
        }
        let mut starts = self.checkpoint_starts.lock();
        starts.push_back(end);
        while starts.len() > keep + 1 {
            starts.pop_front();
        }
        (starts.len() == keep + 1).then(|| starts[0])
    }

    /// The pages of DRAM the policy moves to NVM at this checkpoint instead of writing
    /// them to SSD (checkpoint-based admission): asked with every page dirty as a whole
    /// that has no NVM copy, and its first-update LSN. Racy: each is checked again under
    /// its latch ([`admit_at_checkpoint`](Self::admit_at_checkpoint)).
    fn checkpoint_admissions(&self) -> std::collections::HashSet<u64> {
        if self.nvm.is_none() || self.ssd.is_none() {
            return Default::default();
        }
        let dirty: Vec<(PageId, Lsn)> = (0..self.frames.len())
            .map(|i| self.frames.meta(FrameId::from_index(i)))
            .filter(|m| {
                m.holds_page()
                    && m.dirty.load(Ordering::Relaxed)
                    && m.resident_all.load(Ordering::Relaxed)
                    && m.nvm_slot().is_none()
            })
            .map(|m| (PageId(m.pid()), m.first_lsn.load_lsn(Ordering::Relaxed)))
            .collect();
        if dirty.is_empty() {
            return Default::default();
        }
        self.policy.checkpoint_to_nvm(&dirty).into_iter().map(|p| p.0).collect()
    }

    /// Checkpoint-based admission of the page in DRAM frame `f`: evicted to NVM (dirty
    /// there, durable, with its first-update LSN as recovery LSN) instead of being
    /// written to SSD, and the frame freed. False, changing nothing, if the frame no
    /// longer holds a page dirty as a whole without NVM copy that can leave DRAM now
    /// (the caller then writes it as any other). Call with no batch holding latches.
    ///
    /// # Errors
    /// As an eviction (the page then stays in its frame, dirty).
    fn admit_at_checkpoint(&self, f: FrameId) -> Result<bool, BufferError> {
        let mut g = self.frames.write(f);
        let m = g.meta();
        if !m.holds_page()
            || !m.dirty.load(Ordering::Relaxed)
            || !m.resident_all.load(Ordering::Relaxed)
            || m.nvm_slot().is_some()
            || m.swizzled_children.load(Ordering::Relaxed) > 0
            || !self.unswizzle_victim(&g)
        {
            return Ok(false);
        }
        self.evict_with(&mut g, Some(super::EvictTo::Nvm))?;
        self.return_frame(g);
        Ok(true)
    }

    /// The bytes of page `pid`'s NVM copy (frame `n`, owned by the caller through the
    /// DRAM latch it holds) if it is newer than SSD and there is an SSD batch to take
    /// them; `None` otherwise.
    fn nvm_copy(
        &self,
        pid: PageId,
        n: NvmSlot,
        batch: &Option<SsdBatch<'_>>,
    ) -> Result<Option<AlignedBuf>, BufferError> {
        let Some(nvm) = &self.nvm else { return Ok(None) };
        if batch.is_none() || !nvm.is_dirty(n) {
            return Ok(None);
        }
        let mut buf = AlignedBuf::new(self.page_size);
        nvm.read_page(n, pid, &mut buf)?;
        Ok(Some(buf))
    }
}
