//! NVM replacement: finding a free NVM frame, evicting the NVM clock's (or the policy's)
//! victim to SSD, writing back mini pages and dirty lines, and telling the log which
//! pages reached SSD (their last-flush LSNs).
//!
//! A page leaves NVM only with its table entry claimed or its DRAM frame held exclusive.

use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::table::Entry;
use crate::counters::Count;
use crate::device::AlignedBuf;
use crate::device::SsdFile;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::limits::CLOCK_ROUNDS_MAX;
use crate::limits::FLUSH_NOTES_PER_RECORD;
use crate::policy::Event;
use crate::policy::PageInfo;
use crate::policy::Pool;
use crate::policy::Victim;
use std::sync::atomic::Ordering;

use super::BufferManager;

impl BufferManager {
    /// Without SSD an NVM frame holds its page's only durable copy, and a write over it
    /// that a crash cuts short leaves neither version: each page's image is appended to
    /// the log and forced before any of `pages` is written into NVM (the log keeps
    /// images only when it is a database's, [`LogForce::append_image`]).
    pub(super) fn log_nvm_images(&self, pages: &[(PageId, &[u8])]) -> Result<(), BufferError> {
        if self.ssd.is_some() {
            return Ok(());
        }
        let Some(log) = self.log.get() else { return Ok(()) };
        let mut last = Lsn::NONE;
        for &(pid, bytes) in pages {
            debug_assert_eq!(bytes.len(), self.page_size, "{pid}: an image of a part of the page");
            if let Some(lsn) = log.append_image(pid, bytes)? {
                last = last.max(lsn);
            }
        }
        if !last.is_none() {
            log.force(last)?;
        }
        Ok(())
    }

    /// Writes mini page `i`'s dirty lines back to its NVM frame; with `drop_page`, also
    /// moves the page out (to NVM only) and clears the mini page. Held exclusive.
    pub(super) fn flush_mini(&self, i: u32, pid: PageId, drop_page: bool) -> Result<(), BufferError> {
        let m = self.frames.minis().meta(i);
        let n = m.nvm_slot().expect("a mini page has an NVM frame");
        let dirty = m.dirty.load(Ordering::Relaxed);
        if drop_page {
            self.table.set(pid, Entry::Busy);
        }
        let mut written = Ok(());
        if dirty != 0 {
            let lines = m.lines();
            let mut bufs: Vec<(usize, Vec<u8>)> = Vec::new();
            for (k, l) in lines.iter().enumerate() {
                if dirty & (1 << k) == 0 {
                    continue;
                }
                let mut line = [0u8; CACHE_LINE_BYTES];
                self.frames.copy_mini_line_out(i, k, &mut line);
                match bufs.last_mut() {
                    Some((off, b)) if *off + b.len() == l * CACHE_LINE_BYTES => b.extend_from_slice(&line),
                    _ => bufs.push((l * CACHE_LINE_BYTES, line.to_vec())),
                }
            }
            let runs: Vec<(usize, &[u8])> = bufs.iter().map(|(o, b)| (*o, b.as_slice())).collect();
            let nvm = self.nvm.as_ref().expect("a mini page has an NVM copy");
            written = self
                .force_log(m.page_lsn.load_lsn(Ordering::Relaxed))
                .and_then(|()| nvm.write_lines(n, pid, &runs, None, m.page_lsn.load_lsn(Ordering::Relaxed)));
            if written.is_ok() {
                m.dirty.store(0, Ordering::Relaxed);
                self.counters.add(Count::NvmLinesWritten, dirty.count_ones() as u64);
            }
        }
        if drop_page {
            if let Err(e) = written {
                self.table.set(pid, Entry::Mini(i));
                return Err(e);
            }
            self.table.set(pid, Entry::Nvm(n));
            m.clear();
            self.counters.bump(Count::DramEvictions);
            if dirty == 0 {
                self.counters.bump(Count::CleanDrops);
            }
        }
        written
    }

    pub(super) fn evict_mini(&self, i: u32, pid: PageId) -> Result<(), BufferError> {
        self.flush_mini(i, pid, true)
    }

    /// An NVM frame owned by the caller: free, or taken from the clock's victim (written
    /// to SSD if dirty). `None` if no frame can be freed now.
    pub(super) fn nvm_frame(&self) -> Result<Option<NvmSlot>, BufferError> {
        let nvm = self.nvm.as_ref().expect("nvm_frame needs NVM");
        if let Some(n) = nvm.pop_free() {
            if self.provider_on.load(Ordering::Relaxed) && nvm.free_frames() < self.provider_nvm_target / 2 {
                self.wake_provider();
            }
            return Ok(Some(n));
        }
        if self.provider_on.load(Ordering::Relaxed) {
            self.wake_provider();
        }
        match self.nvm_evict_one(nvm.len() * CLOCK_ROUNDS_MAX)? {
            Some(n) => Ok(Some(n)),
            None => Ok(nvm.pop_free()),
        }
    }

    /// An NVM frame taken from the clock's victim (written to SSD if dirty; the hand
    /// visits at most `visits` frames), or from the policy's sweep, for the caller;
    /// `None` if nothing was evicted.
    pub(super) fn nvm_evict_one(&self, visits: usize) -> Result<Option<NvmSlot>, BufferError> {
        let nvm = self.nvm.as_ref().expect("nvm_evict_one needs NVM");
        let Some(ssd) = &self.ssd else {
            // Without SSD nothing leaves NVM; capacity checks keep a frame free.
            return Ok(None);
        };
        let mut sweep = Vec::new();
        if self.policy.nvm_victims(&self.tiers, &mut sweep) {
            if sweep.is_empty() {
                return Ok(None);
            }
            self.evict_from_nvm(ssd, &sweep)?;
            return Ok(nvm.pop_free());
        }
        for _ in 0..visits {
            let n = nvm.advance_hand();
            let Some(pid) = nvm.pid(n) else { continue };
            if self.table.get(pid)? != Entry::Nvm(n) {
                continue; // in DRAM too (its DRAM frame owns it) or moving
            }
            let info = PageInfo {
                pid,
                dirty: nvm.is_dirty(n),
                nvm_copy: true,
                referenced: nvm.is_referenced(n),
                first_update_lsn: Lsn::NONE,
                page_lsn: Lsn::NONE,
                last_flush_lsn: Lsn::NONE,
            };
            match self.policy.victim(Pool::Nvm, &info, &self.tiers) {
                Victim::SecondChance => {
                    nvm.clear_referenced(n);
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            if !self.claim(pid, Entry::Nvm(n))? {
                continue;
            }
            if self.nvm_clean_batch > 1 && nvm.is_dirty(n) {
                // The next dirty pages go out with it, in one batch (write-behind).
                if let Err(e) = self.clean_nvm_ahead(nvm, ssd, n, self.nvm_clean_batch - 1) {
                    self.table.set(pid, Entry::Nvm(n));
                    return Err(e);
                }
            }
            self.evict_claimed_nvm(ssd, pid, n, true)?;
            return Ok(Some(n));
        }
        Ok(None)
    }

    /// Evicts page `pid` from NVM frame `n` after the caller claimed its entry: writes it
    /// to SSD if dirty, clears the frame's header — so that a restart never takes its
    /// old bytes for the page — and keeps the frame for the caller (`keep_frame`) or
    /// frees it. On error the page stays in the frame, as it was.
    pub(super) fn evict_claimed_nvm(
        &self,
        ssd: &SsdFile,
        pid: PageId,
        n: NvmSlot,
        keep_frame: bool,
    ) -> Result<(), BufferError> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        debug_assert_eq!(nvm.pid(n), Some(pid));
        debug_assert_eq!(self.table.get(pid)?, Entry::Busy, "{pid} is not claimed");
        let evicted = (|| {
            if nvm.is_dirty(n) {
                let mut buf = AlignedBuf::new(self.page_size);
                nvm.read_page(n, pid, &mut buf)?;
                self.ssd_write_with(ssd, pid, &buf)?;
                self.counters.bump(Count::NvmToSsd);
            }
            if keep_frame { nvm.clear_owner(n) } else { nvm.release(n) }
        })();
        if let Err(e) = evicted {
            self.table.set(pid, Entry::Nvm(n));
            return Err(e);
        }
        self.policy.observe(Event::NvmLeft(pid));
        self.counters.bump(Count::NvmEvictions);
        self.table.set(pid, Entry::Empty);
        Ok(())
    }

    /// Evicts the pages `pids` from NVM (a policy's sweep), each if it is in NVM only and
    /// not moving: written to SSD if dirty, its frame freed.
    pub(super) fn evict_from_nvm(&self, ssd: &SsdFile, pids: &[PageId]) -> Result<(), BufferError> {
        for &pid in pids {
            let Entry::Nvm(n) = self.table.get(pid)? else { continue };
            if self.claim(pid, Entry::Nvm(n))? {
                self.evict_claimed_nvm(ssd, pid, n, false)?;
            }
        }
        Ok(())
    }

    pub(super) fn ssd_write(&self, pid: PageId, bytes: &[u8]) -> Result<(), BufferError> {
        let ssd = self.ssd.as_ref().expect("ssd_write needs SSD");
        self.ssd_write_with(ssd, pid, bytes)
    }

    /// Writes a page (protected by the double-write area if it is on), growing the file
    /// first if the page lies past its end. The page's seal records the log's LSN now
    /// as its last-flush LSN, and the policy hears of the flush.
    pub(super) fn ssd_write_with(&self, ssd: &SsdFile, pid: PageId, bytes: &[u8]) -> Result<(), BufferError> {
        self.ssd_reserve(ssd, pid)?;
        let lsn = self.log_end_lsn();
        ssd.write_pages_flushed(&[(pid, bytes)], lsn)?;
        self.note_flushed([pid], lsn)
    }

    /// The log's LSN now ([`Lsn::NONE`] without a log): the last-flush LSN of a page
    /// written now. Taken after the write-ahead force, so it is past every change the
    /// page holds.
    pub(crate) fn log_end_lsn(&self) -> Lsn {
        self.log.get().map_or(Lsn::NONE, |l| l.end_lsn())
    }

    /// `pids` were written to SSD at log LSN `lsn` (taken while they could not change,
    /// after the write-ahead force): the policy hears of it, and with a double-write
    /// area (the writes survive a crash once they return) the log learns it, in flush
    /// records of [`FLUSH_NOTES_PER_RECORD`] pages, so that redo skips the changes those
    /// copies hold without reading them. Without the area an unsynced write may be lost
    /// and nothing is noted.
    ///
    /// # Errors
    /// The log's, appending a flush record.
    pub(crate) fn note_flushed(&self, pids: impl IntoIterator<Item = PageId>, lsn: Lsn) -> Result<(), BufferError> {
        let log = self
            .log
            .get()
            .filter(|_| !lsn.is_none() && self.ssd.as_ref().is_some_and(|s| s.double_write_core().is_some()));
        let mut full = None;
        {
            let mut notes = log.map(|_| self.flush_notes.lock());
            for pid in pids {
                self.policy.observe(Event::Flushed { pid, flush_lsn: lsn });
                if let Some(notes) = notes.as_mut() {
                    notes.push((pid, lsn));
                    if notes.len() >= FLUSH_NOTES_PER_RECORD {
                        full.get_or_insert_with(Vec::new).append(notes);
                    }
                }
            }
        }
        match (log, full) {
            (Some(log), Some(batch)) => {
                for chunk in batch.chunks(FLUSH_NOTES_PER_RECORD) {
                    log.note_flushed(chunk)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The last-flush LSN that page `pid`'s SSD copy carried when it was read into its
    /// DRAM frame (`Lsn::NONE`: unknown); `None` if the page is not in DRAM. For reports and tests.
    ///
    /// # Errors
    /// `NoSuchPage` for a page id past the page table.
    pub fn loaded_flush_lsn(&self, pid: PageId) -> Result<Option<Lsn>, BufferError> {
        Ok(match self.table.get(pid)? {
            Entry::Dram(f) => Some(self.frames.meta(f).flush_lsn.load_lsn(Ordering::Relaxed)),
            _ => None,
        })
    }
}
