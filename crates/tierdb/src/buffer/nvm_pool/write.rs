//! Writing frames: a whole page (data, then header, each persisted), runs of lines with
//! the data CRC updated from the lines' old and new bytes, the IN_UPDATE mark that makes
//! a torn in-place write visible at restart, and the header changes that move a frame
//! between owners (clean, released, detached, cleared).
//!
//! Order: data is persisted before the header that names it, and an overwrite of a
//! frame's own page is preceded by a durable IN_UPDATE header, so a restart never
//! trusts torn bytes. Only the frame's owner writes it (the pool's module doc).

#![allow(unsafe_code)]

use std::sync::atomic::Ordering;

use super::header::{
    FLAG_DIRTY, FLAG_IN_UPDATE, FLAG_NO_CRC, FLAG_VALID, FrameHeader, HEADER_BYTES, HEADERS_OFFSET, NO_PAGE,
};
use super::{NvmPool, dev};
use crate::buffer::error::BufferError;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::page::crc::crc_after_runs;

impl NvmPool {
    /// Writes the given runs of lines of page `pid` into frame `n` durably, then marks
    /// the header dirty (newer than SSD) with the data CRC updated for the change.
    /// `runs` are `(page offset, bytes)`; `old`, if given, is a page-sized buffer
    /// holding what the runs' lines hold in the frame now (an in-place writer's staged
    /// copy), else they are read from the frame first. The caller owns the frame.
    ///
    /// # Errors
    /// Device errors.
    pub fn write_lines(
        &self,
        n: NvmSlot,
        pid: PageId,
        runs: &[(usize, &[u8])],
        old: Option<&[u8]>,
        page_lsn: Lsn,
    ) -> Result<(), BufferError> {
        debug_assert_eq!(self.pid(n), Some(pid));
        debug_assert!(old.is_none_or(|o| o.len() == self.page_size));
        let base = self.data_offset(n);
        let m = &self.metas[n.index()];
        // 1. The lines' bytes before the change, for the CRC (not needed for a frame
        //    that has none: its CRC is computed from the whole page below).
        let mut read_old = Vec::new();
        if old.is_none() && !m.no_crc.load(Ordering::Relaxed) {
            read_old.resize(runs.iter().map(|(_, b)| b.len()).sum(), 0);
            let mut at = 0;
            for (off, b) in runs {
                self.region.read_lines(base + *off as u64, &mut read_old[at..at + b.len()]).map_err(dev)?;
                at += b.len();
            }
        }
        let before = self.begin_update(n, pid)?;
        // A clean frame becomes newer than SSD with this change, whose LSN is past the
        // page LSN SSD holds and past the log's end when the frame was last written
        // clean (every change since was logged after that: under the latch the
        // writer held, which the write that made the frame clean waited for); a dirty
        // one keeps its older bound. The bound is the later of the two itself: recovery
        // may start its scan there, so it must be a record's start (the page LSN names
        // a record on SSD already, skipped by page LSN; the log's end was the next
        // record's start). The page LSN alone could be long gone from the log: a page
        // last changed before a checkpoint that deleted those segments, and changed in
        // place after it, then caught mid-write by a crash, made recovery ask for a log
        // no longer there (found by the crash campaign on `nvsql`).
        let rec_lsn = match before {
            Some(h) if h.flags & FLAG_DIRTY != 0 => h.rec_lsn,
            Some(h) => h.page_lsn.max(h.written_lsn),
            None => Lsn::NONE,
        };
        // 2. The new CRC: updated by the runs' change, or (a frame without one) computed
        //    over the whole page once written.
        let updated = match before {
            Some(h) if h.flags & FLAG_NO_CRC == 0 && (old.is_some() || !read_old.is_empty()) => {
                let mut at = 0;
                let olds = runs.iter().map(|(off, b)| match old {
                    Some(o) => &o[*off..*off + b.len()],
                    None => {
                        at += b.len();
                        &read_old[at - b.len()..at]
                    }
                });
                Some(crc_after_runs(
                    h.data_crc,
                    self.page_size,
                    runs.iter().zip(olds).map(|((off, new), old)| (*off, old, *new)),
                ))
            }
            _ => None,
        };
        for (off, bytes) in runs {
            debug_assert!(off + bytes.len() <= self.page_size);
            // SAFETY: frame `n`'s data is written only by its owner, the caller.
            unsafe { self.region.write_lines_shared(base + *off as u64, bytes) }.map_err(dev)?;
            self.region.persist(base + *off as u64, bytes.len() as u64).map_err(dev)?;
        }
        let data_crc = match updated {
            Some(c) => c,
            None => {
                let mut page = vec![0u8; self.page_size];
                self.region.copy_out(base, &mut page).map_err(dev)?;
                crc32c::crc32c(&page)
            }
        };
        let flags = FLAG_VALID | FLAG_DIRTY;
        let h = FrameHeader { pid, page_lsn, flags, data_crc, rec_lsn, written_lsn: self.lsn_now() };
        self.write_header(n, &h)?;
        m.rec_lsn.store_lsn(rec_lsn, Ordering::Relaxed);
        m.dirty.store(true, Ordering::Relaxed);
        m.crc.store(data_crc, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Crash tests: what a power loss in the middle of [`write_lines`](Self::write_lines)
    /// leaves — the header marked IN_UPDATE (durably, by the same step `write_lines`
    /// takes first) and `bytes` at page offset `off` persisted, the rest of the change
    /// and the header's completion never made. The frame must not be used afterwards
    /// (the caller abandons the process, as a crash would); its owner must not be
    /// accessing it.
    ///
    /// # Errors
    /// Device errors.
    #[doc(hidden)]
    pub fn crash_inside_write_lines(
        &self,
        n: NvmSlot,
        pid: PageId,
        off: usize,
        bytes: &[u8],
    ) -> Result<(), BufferError> {
        debug_assert!(off + bytes.len() <= self.page_size && bytes.len().is_multiple_of(CACHE_LINE_BYTES));
        self.begin_update(n, pid)?;
        let at = self.data_offset(n) + off as u64;
        // SAFETY: the caller owns frame `n` and stops using the pool after this call.
        unsafe { self.region.write_lines_shared(at, bytes) }.map_err(dev)?;
        self.region.persist(at, bytes.len() as u64).map_err(dev)
    }

    /// Before frame `n`'s data is overwritten in place for the page it holds: marks the
    /// header IN_UPDATE (durably), so that a crash in the middle leaves a frame that a
    /// restart discards instead of a valid header over torn bytes. A frame being
    /// filled for a new page has an empty header already.
    /// Returns the header as it was before (`None` for a frame filled for a new page).
    pub(super) fn begin_update(&self, n: NvmSlot, pid: PageId) -> Result<Option<FrameHeader>, BufferError> {
        if self.metas[n.index()].pid.load(Ordering::Relaxed) != pid.0 {
            return Ok(None);
        }
        let Some(before) = self.header(n)? else { return Ok(None) };
        // Header states: a frame in use is VALID and not mid-write (IN_UPDATE is only
        // left by a crash, and reopen clears it).
        debug_assert!(
            before.pid == pid && before.flags & FLAG_VALID != 0 && before.flags & FLAG_IN_UPDATE == 0,
            "NVM frame {n} of {pid}: header names {} with flags {:#x}",
            before.pid,
            before.flags
        );
        let mut h = before;
        h.flags |= FLAG_IN_UPDATE;
        self.write_header(n, &h)?;
        Ok(Some(before))
    }

    /// Writes page `pid` into frame `n` durably: data, then header.
    ///
    /// The caller owns frame `n` (see the module's concurrency rules).
    ///
    /// # Errors
    /// Device errors.
    pub fn write_page(
        &self,
        n: NvmSlot,
        pid: PageId,
        src: &[u8],
        dirty: bool,
        page_lsn: Lsn,
    ) -> Result<(), BufferError> {
        self.write_page_rec(n, pid, src, dirty, page_lsn, Lsn::NONE)
    }

    /// [`write_page`](Self::write_page) with the recovery LSN of a dirty page: a lower
    /// bound of its oldest change not on SSD ([`Lsn::NONE`]: unknown). A frame that held the page
    /// dirty already keeps the older of its bound and this one.
    ///
    /// # Errors
    /// Device errors.
    pub fn write_page_rec(
        &self,
        n: NvmSlot,
        pid: PageId,
        src: &[u8],
        dirty: bool,
        page_lsn: Lsn,
        rec_lsn: Lsn,
    ) -> Result<(), BufferError> {
        debug_assert_eq!(src.len(), self.page_size);
        // The caller owns the frame: empty, or holding this very page.
        debug_assert!(self.pid(n).is_none_or(|p| p == pid), "NVM frame {n} holds {:?}, written as {pid}", self.pid(n));
        let off = self.data_offset(n);
        let before = if self.volatile { None } else { self.begin_update(n, pid)? };
        debug_assert!(!(self.volatile && dirty), "{pid}: a dirty page in volatile NVM frame {n}");
        let rec_lsn = match before {
            _ if !dirty => Lsn::NONE,
            Some(h) if h.flags & FLAG_DIRTY != 0 && (h.rec_lsn.is_none() || rec_lsn.is_none()) => Lsn::NONE,
            Some(h) if h.flags & FLAG_DIRTY != 0 => h.rec_lsn.min(rec_lsn),
            _ => rec_lsn,
        };
        if self.file_io.load(Ordering::Relaxed) {
            // SAFETY: as below.
            unsafe { self.region.pwrite_in_shared(off, src) }.map_err(dev)?;
        } else {
            // SAFETY: frame `n`'s data range is written only by its owner, which the
            // caller is; no reader copies it out while the owner holds it.
            unsafe { self.region.copy_in_shared(off, src) }.map_err(dev)?;
        }
        self.region.persist(off, src.len() as u64).map_err(dev)?;
        let flags = FLAG_VALID | if dirty { FLAG_DIRTY } else { 0 };
        let data_crc = crc32c::crc32c(src);
        let h = FrameHeader { pid, page_lsn, flags, data_crc, rec_lsn, written_lsn: self.lsn_now() };
        self.write_header(n, &h)?;
        let m = &self.metas[n.index()];
        m.crc.store(data_crc, Ordering::Relaxed);
        m.checked.store(true, Ordering::Relaxed);
        m.rec_lsn.store_lsn(rec_lsn, Ordering::Relaxed);
        m.pid.store(pid.0, Ordering::Relaxed);
        m.dirty.store(dirty, Ordering::Relaxed);
        m.referenced.store(true, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Clears frame `n`'s dirty flag, durably (its page was written to SSD). The caller
    /// owns the frame.
    ///
    /// # Errors
    /// Device errors; `Corrupted` if the header does not decode.
    pub fn mark_clean(&self, n: NvmSlot) -> Result<(), BufferError> {
        let Some(mut h) = self.header(n)? else {
            return Err(BufferError::Corrupted {
                pid: PageId(self.metas[n.index()].pid.load(Ordering::Relaxed)),
                location: format!("NVM frame header {n} of {}", self.region.info().path.display()),
                detail: "the header of a frame in use is empty".into(),
            });
        };
        debug_assert!(
            h.flags & FLAG_VALID != 0 && self.pid(n) == Some(h.pid),
            "marking NVM frame {n} clean: header names {} with flags {:#x}, the frame holds {:?}",
            h.pid,
            h.flags,
            self.pid(n)
        );
        h.flags &= !FLAG_DIRTY;
        h.rec_lsn = Lsn::NONE;
        // After the page's SSD write, at or past its flush LSN: the frame stays trusted.
        h.written_lsn = self.lsn_now();
        self.write_header(n, &h)?;
        self.metas[n.index()].dirty.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Marks frame `n` empty, durably (in a volatile pool, in DRAM metadata only), and
    /// returns it to the free list.
    ///
    /// # Errors
    /// Device errors (the frame then stays owned by the caller's page).
    pub fn release(&self, n: NvmSlot) -> Result<(), BufferError> {
        if !self.volatile {
            self.write_header_bytes(n, &[0u8; HEADER_BYTES])?;
        }
        self.detach(n);
        Ok(())
    }

    /// Forgets frame `n`'s page in DRAM metadata and frees it without touching its
    /// persistent header: for a frame whose header is empty already (popped from the
    /// free list, or cleared) after a write into it failed or was not needed.
    pub fn detach(&self, n: NvmSlot) {
        debug_assert!(n.index() < self.metas.len(), "NVM frame {n} of {}", self.metas.len());
        let m = &self.metas[n.index()];
        m.pid.store(NO_PAGE, Ordering::Relaxed);
        m.dirty.store(false, Ordering::Relaxed);
        m.referenced.store(false, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        self.free.lock().push(n);
    }

    /// Takes frame `n` out of use by its page without freeing it (the caller reuses it
    /// at once for another page). The header is cleared durably first: a restart must
    /// never take the frame's old bytes for its old page, whose copy on SSD may later
    /// become newer. (A volatile pool has no restart: nothing is written.)
    ///
    /// # Errors
    /// Device errors (the frame then still holds its page).
    pub fn clear_owner(&self, n: NvmSlot) -> Result<(), BufferError> {
        if !self.volatile {
            self.write_header_bytes(n, &[0u8; HEADER_BYTES])?;
        }
        let m = &self.metas[n.index()];
        m.pid.store(NO_PAGE, Ordering::Relaxed);
        m.dirty.store(false, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn write_header(&self, n: NvmSlot, h: &FrameHeader) -> Result<(), BufferError> {
        self.write_header_bytes(n, &h.encode())
    }

    pub(super) fn write_header_bytes(&self, n: NvmSlot, b: &[u8; HEADER_BYTES]) -> Result<(), BufferError> {
        let off = self.header_offset(n);
        // Slot bounds: a frame header never reaches into the frames (or the pool header).
        assert!(
            off >= HEADERS_OFFSET && off + HEADER_BYTES as u64 <= self.data_offset,
            "NVM frame header {n} at {off} outside the header area {HEADERS_OFFSET}..{}",
            self.data_offset
        );
        // SAFETY: frame `n`'s header line is written only by the frame's owner.
        unsafe { self.region.write_lines_shared(off, b) }.map_err(dev)?;
        self.region.persist(off, HEADER_BYTES as u64).map_err(dev)
    }
}
