//! Loading a page into a frame: from NVM (copy, or line-grained), from SSD (read, seal
//! check, the policy's `ssd_miss`, NVM admission), and publishing it in the page table.
//! Also the SSD reads and page-id allocation these need.
//!
//! The loader owns the page's table entry (BUSY) and the frame (exclusive) until it
//! publishes the frame; a failure returns both.

use crate::ByteSize;
use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::device::DeviceError;
use crate::device::SsdFile;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::SSD_GROW_PAGES_MIN;
use crate::page::frame::FrameId;
use crate::page::frame::FrameWrite;
use crate::policy::Event;
use crate::policy::MissTarget;
use crate::policy::PageInfo;
use std::sync::atomic::Ordering;

use super::BufferManager;

impl BufferManager {
    /// The bytes of frame `f`'s page as they are stored: with its swizzled children's
    /// references turned back into page ids. The caller holds the frame's latch.
    pub(super) fn stored_image<'b>(&self, f: FrameId, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
        if self.frames.meta(f).swizzled_children.load(Ordering::Relaxed) == 0 {
            return std::borrow::Cow::Borrowed(bytes);
        }
        let mut copy = bytes.to_vec();
        for c in self.swizzled.lock().get(&f.get()).into_iter().flatten() {
            let cm = self.frames.meta(FrameId::new(*c));
            let off = cm.parent_offset.load(Ordering::Relaxed) as usize;
            copy[off..off + 8].copy_from_slice(&cm.pid().to_le_bytes());
        }
        std::borrow::Cow::Owned(copy)
    }

    /// Moves `pid` into a DRAM frame from where `observed` says it is. `None` if another
    /// thread changed the entry first.
    pub(super) fn load(&self, pid: PageId, observed: Entry) -> Result<Option<FrameWrite<'_>>, BufferError> {
        self.load_to(pid, observed, None)
    }

    /// [`load`](Self::load) with the policy's answer for an SSD miss given (`None`: ask).
    pub(super) fn load_to(
        &self,
        pid: PageId,
        observed: Entry,
        miss: Option<MissTarget>,
    ) -> Result<Option<FrameWrite<'_>>, BufferError> {
        if !self.claim(pid, observed)? {
            return Ok(None);
        }
        let mut g = match self.free_frame() {
            Ok(g) => g,
            Err(e) => {
                self.table.set(pid, observed);
                return Err(e);
            }
        };
        match self.fill(pid, observed, &mut g, miss) {
            Ok(()) => self.install(pid, observed, g).map(Some),
            Err(e) => {
                // A corrupt clean frame `fill` dropped is gone: the page is on SSD.
                let back = match observed {
                    Entry::Nvm(n) if self.nvm.as_ref().is_some_and(|nvm| nvm.pid(n) != Some(pid)) => Entry::Empty,
                    other => other,
                };
                self.table.set(pid, back);
                self.return_frame(g);
                Err(e)
            }
        }
    }

    /// Frame `g` (held, filled with page `pid`, whose entry was `observed` and is
    /// claimed) becomes the page's DRAM frame: set up, and published in the page table.
    /// On an error the entry is `observed` again and the frame free.
    pub(super) fn install<'a>(
        &'a self,
        pid: PageId,
        observed: Entry,
        g: FrameWrite<'a>,
    ) -> Result<FrameWrite<'a>, BufferError> {
        let n = g.meta().nvm_slot();
        // What the SSD copy's seal said survives the reset.
        let flushed = g.meta().flush_lsn.load_lsn(Ordering::Relaxed);
        self.reset_frame(g.frame(), pid, n, true);
        g.meta().flush_lsn.store_lsn(flushed, Ordering::Relaxed);
        if let Some(n) = n
            && self.shape.nvm_disjoint
            && let Err(e) = self.leave_nvm(&g, pid, n)
        {
            self.table.set(pid, observed);
            self.return_frame(g);
            return Err(e);
        }
        self.table.set(pid, Entry::Dram(g.frame()));
        Ok(g)
    }

    /// Disjoint tiers (`nvsql`): page `pid`, just copied from NVM frame `n` into DRAM
    /// frame `g` (held, its entry claimed), gives up the NVM frame. If the NVM copy is
    /// newer than SSD it is written to SSD first: the frame may hold changes older than
    /// the last checkpoint's redo point, which a restart would not redo for a page that
    /// is in no NVM frame (the log before that point is scanned only to rebuild a frame
    /// caught mid-write). Its log records were forced before they reached NVM. Then the
    /// header is cleared durably; the DRAM copy is clean.
    pub(super) fn leave_nvm(&self, g: &FrameWrite<'_>, pid: PageId, n: NvmSlot) -> Result<(), BufferError> {
        let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
        if nvm.is_dirty(n) {
            self.ssd_write(pid, &self.stored_image(g.frame(), g))?;
            self.counters.bump(Count::NvmToSsd);
        }
        nvm.release(n)?;
        self.policy.observe(Event::NvmLeft(pid));
        g.meta().set_nvm_slot(None);
        Ok(())
    }

    /// Copies the page into frame `g` from NVM or SSD. Whole-page loads always migrate
    /// (an in-place answer of the policy applies to line-grained fixes only), and a page
    /// the policy sends from SSD to NVM goes to DRAM as well. `miss` is the policy's
    /// answer for an SSD miss if the caller asked already.
    pub(super) fn fill(
        &self,
        pid: PageId,
        from: Entry,
        g: &mut FrameWrite<'_>,
        miss: Option<MissTarget>,
    ) -> Result<(), BufferError> {
        // Known only for a copy read from SSD (below).
        g.meta().flush_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
        let info = PageInfo::fixing(pid, matches!(from, Entry::Nvm(_)));
        match from {
            Entry::Nvm(n) => {
                let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
                match nvm.read_page(n, pid, g.bytes_for_load()) {
                    Ok(()) => {}
                    // A clean frame's page is on SSD as it was: drop the frame (owned:
                    // the entry is claimed) and read SSD. A dirty frame's error stands.
                    Err(BufferError::Corrupted { .. }) if self.ssd.is_some() && !nvm.is_dirty(n) => {
                        nvm.release(n)?;
                        self.policy.observe(Event::NvmLeft(pid));
                        self.counters.bump(Count::NvmCorruptDropped);
                        return self.fill(pid, Entry::Empty, g, miss);
                    }
                    Err(e) => return Err(e),
                }
                nvm.touch(n);
                g.meta().set_nvm_slot(Some(n));
                self.counters.bump(Count::NvmHits);
                self.counters.bump(Count::NvmToDram);
                self.counters.add(Count::NvmLinesLoaded, self.lines_per_page());
            }
            Entry::Empty => {
                let ssd = self.ssd.as_ref().expect("check_allocated refuses EMPTY pages without SSD");
                if pid.0 >= ssd.page_count() {
                    // Allocated but never written back: its bytes are the zeros it was
                    // allocated with. (Only reachable after a failed write-back.)
                    g.bytes_for_load().fill(0);
                } else {
                    let flushed = self.ssd_read(ssd, pid, g.bytes_for_load())?;
                    g.meta().flush_lsn.store_lsn(flushed, Ordering::Relaxed);
                }
                self.counters.bump(Count::SsdReads);
                self.after_ssd_read(&info, g, miss)?;
            }
            Entry::Dram(_) | Entry::Mini(_) | Entry::Busy => unreachable!("fill from {from:?}"),
        }
        Ok(())
    }

    /// The rest of a miss once page `info.pid` is read from SSD into `g`: the policy's
    /// answer (`miss`, if the caller asked already) may admit it to NVM as well.
    pub(super) fn after_ssd_read(
        &self,
        info: &PageInfo,
        g: &mut FrameWrite<'_>,
        miss: Option<MissTarget>,
    ) -> Result<(), BufferError> {
        let pid = info.pid;
        g.meta().set_nvm_slot(None);
        let miss = miss.unwrap_or_else(|| self.policy.ssd_miss(info, &self.tiers));
        if matches!(miss, MissTarget::DramAndNvm | MissTarget::Nvm)
            && let Some(nvm) = &self.nvm
            && let Some(n) = self.nvm_frame()?
        {
            if let Err(e) = nvm.write_page(n, pid, g, false, g.meta().page_lsn.load_lsn(Ordering::Relaxed)) {
                nvm.detach(n);
                return Err(e);
            }
            g.meta().set_nvm_slot(Some(n));
            self.count_page_to_nvm();
            self.counters.bump(Count::NvmAdmissions);
            self.policy.observe(Event::NvmAdmitted { pid, on_eviction: false });
        }
        Ok(())
    }

    /// Grows the page file, in chunks, until it holds page `pid`.
    pub(super) fn ssd_reserve(&self, ssd: &SsdFile, pid: PageId) -> Result<(), BufferError> {
        if pid.0 >= ssd.page_count() {
            let _grow = self.ssd_grow.lock();
            let count = ssd.page_count();
            if pid.0 >= count {
                let chunk = (count / 8).max(SSD_GROW_PAGES_MIN);
                ssd.grow((pid.0 + 1 - count).max(chunk))?;
            }
        }
        Ok(())
    }

    /// Reads page `pid` from SSD and returns its last-flush LSN (`Lsn::NONE`: unknown); a page
    /// that fails its seal is `Corrupted`, naming it and the file.
    pub(super) fn ssd_read(&self, ssd: &SsdFile, pid: PageId, buf: &mut [u8]) -> Result<Lsn, BufferError> {
        ssd.read_page_flushed(pid, buf).map_err(|e| match e {
            DeviceError::Corrupted { what: "page", detail, .. } => {
                BufferError::Corrupted { pid, location: ssd.info().path.display().to_string(), detail }
            }
            e => e.into(),
        })
    }

    pub(super) fn take_page_id(&self) -> Result<PageId, BufferError> {
        if let Some(pid) = self.freed.lock().ready.pop() {
            return Ok(pid);
        }
        self.take_fresh_page_id()
    }

    /// True for a page id past the last one allocation can hand out
    /// ([`take_fresh_page_id`](Self::take_fresh_page_id) hands out ids up to
    /// `capacity_pages` inclusive). Recovery uses it for the ids the log names.
    pub(super) fn beyond_capacity(&self, pid: PageId) -> bool {
        pid.0 > self.capacity_pages
    }

    /// A page id never handed out: raises the allocation mark.
    pub(super) fn take_fresh_page_id(&self) -> Result<PageId, BufferError> {
        let cap = self.capacity_pages;
        let n = self
            .next_pid
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n <= cap).then_some(n + 1))
            .map_err(|_| self.full_error())?;
        self.policy.observe(Event::DatabaseSize(n));
        Ok(PageId(n))
    }

    pub(super) fn full_error(&self) -> BufferError {
        let cap = self.capacity_pages;
        let ps = self.page_size;
        match (&self.ssd, &self.nvm) {
            (None, Some(n)) => BufferError::Full {
                tier: "nvm",
                what: format!(
                    "without SSD every page lives in NVM, which holds {cap} pages of {ps} bytes ({}); the data does not fit",
                    ByteSize(n.region().size_bytes())
                ),
            },
            (None, None) => BufferError::Full {
                tier: "dram",
                what: format!("without NVM or SSD every page lives in DRAM, which holds {cap} pages of {ps} bytes"),
            },
            (Some(_), _) => BufferError::Full {
                tier: "page table",
                what: format!("the page table maps {cap} pages; raise max_pages"),
            },
        }
    }
}
