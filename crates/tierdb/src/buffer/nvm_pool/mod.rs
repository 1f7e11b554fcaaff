//! The NVM pool: page frames with persistent headers in the NVM region.
//!
//! Region layout (all offsets in bytes, little-endian; see `docs/format.md`):
//!
//! ```text
//!   0                 pool header, one cache line: magic "TIERDBNV", version u32,
//!                     page size u32, frame count u64, db id u64, .. CRC-32C at 60
//!   4096              frame headers, 64 bytes each, frame_count of them
//!   data_offset       frames, page_size bytes each (4 KiB aligned)
//!
//!   frame header:  0 page id u64 | 8 page LSN u64 (of the page's last logged change) | 16 flags u32 | 20 data CRC-32C u32
//!                  24 recovery LSN u64 (of the oldest change not on SSD, while DIRTY; 0: unknown)
//!                  32 written LSN u64 (the log's end when the frame's bytes or flags were last set; 0: unknown)
//!                  40..60 reserved (zero) | 60 header CRC-32C u32 over bytes 0..60
//!   flags:         VALID 1, DIRTY 2 (newer than the SSD copy), IN_UPDATE 4,
//!                  NO_CRC 8 (the data CRC is not kept; set by earlier builds on line write-backs)
//! ```
//!
//! A frame is written data first, then its header, each persisted (`clwb` + `sfence`),
//! so a header never names data that is not durable; a torn frame shows as a CRC
//! mismatch, which is reported and never used.
//!
//! The data CRC is kept current on every write: a whole page's is computed, and a
//! line write-back updates it from the lines' old and new bytes (`page_crc`), so every
//! frame has one. What is checked against it is the pool's [`NvmVerify`]: every whole
//! page copied out ([`read_page`](NvmPool::read_page)); each frame once, before it is
//! first read after a restart ([`check_before_read`](NvmPool::check_before_read): line
//! loads, in-place fixes), dirty frames at [`reopen`](NvmPool::reopen) already, so that
//! a bad one is cleared and rebuilt as a torn one is; in `Every` mode every read and,
//! at reopen, every frame.
//!
//! The *written LSN* orders a frame against the page's SSD copy at restart. A page is
//! written to SSD at a log LSN F (its last-flush LSN, noted in a flush record), and its
//! copies change one at a time under the page's hold, each change logged first. So a
//! frame whose written LSN is below F was last set before the SSD copy was taken, from
//! bytes that copy includes: SSD is at least as new, and the frame is not to be trusted
//! (a kill between an SSD write and the refresh of the page's NVM copy leaves such a
//! frame; `BufferManager::recover_drop_stale_nvm`). A frame written at or after F is at
//! least as new as SSD. The LSN comes from the attached log ([`NvmPool::set_lsn_clock`];
//! 0 without one, which counts as older than every flush).
//!
//! Concurrency: a frame is used by one thread at a time, which owns it by having popped
//! it from the free list, by having claimed its page's table entry (NVM → BUSY), or by
//! holding the exclusive latch of the DRAM frame whose page it backs. The DRAM-side
//! metadata here (page id, dirty, reference bit) is atomic so the clock hand can read
//! it racily; it re-checks ownership through the page table before using a frame.

//!
//! The pool is split by activity: `header` holds the on-media layout and the frame
//! header's codec, `open` formats a region or finds a pool again at restart, `read`
//! copies and checks frames, `write` writes them (data first, then header) and moves
//! them between owners; this file holds the pool, its DRAM-side metadata and the free
//! list.

#![allow(unsafe_code)]

mod header;
mod open;
mod read;
#[cfg(test)]
mod tests;
mod write;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

pub use header::{FLAG_IN_UPDATE, FrameHeader};
use header::{HEADER_BYTES, HEADERS_OFFSET, NO_PAGE};

use super::BufferError;
use crate::device::{DeviceError, NvmRegion};
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::page::crc::NvmVerify;
use crate::page::frame::cpu_cache::CpuCacheModel;
use crate::page::latch::Latch;

/// Shadow buffers kept for reuse ([`NvmPool::take_shadow`]): two per in-place writer.
const SHADOWS_KEPT_MAX: usize = 64;

/// DRAM-side metadata of one NVM frame.
#[derive(Debug)]
pub struct NvmFrameMeta {
    /// The page held, or `u64::MAX`.
    pid: AtomicU64,
    dirty: AtomicBool,
    referenced: AtomicBool,
    /// The header says FLAG_NO_CRC.
    no_crc: AtomicBool,
    /// The header's data CRC (meaningless while `no_crc`).
    crc: AtomicU32,
    /// The data was checked against `crc`, or written, since the pool was opened: a
    /// frame found at a restart is checked before it is first read.
    checked: AtomicBool,
    /// Held by guards that access the page in place (shared to read, exclusive to
    /// write; `frame::in_place`) and, exclusive for an instant, by whoever claims the
    /// page's table entry away from `Nvm(n)`, so that no in-place guard outlives the
    /// page's stay in this frame. Its version is bumped by every in-place writer and
    /// every claim as it releases the latch: optimistic in-place readers validate
    /// against it (seqlock).
    latch: Latch,
    /// The header's recovery LSN, while dirty.
    rec_lsn: AtomicU64,
}

/// A pool found again at restart ([`NvmPool::reopen`]).
pub struct Reopened {
    /// The pool, its frames' metadata rebuilt from their headers.
    pub pool: NvmPool,
    /// Frames holding a page: frame and header.
    pub pages: Vec<(NvmSlot, FrameHeader)>,
    /// Frames cleared, and why.
    pub cleared: Vec<(NvmSlot, String)>,
    /// The oldest change a cleared frame held that SSD does not (`Some(Lsn::NONE)`: unknown, as
    /// far back as the log goes; `None`: no cleared frame needs the log before the
    /// last checkpoint's redo point).
    pub log_needed_from: Option<Lsn>,
    /// Time to read and check the headers.
    pub scan_secs: f64,
}

/// Page frames in an NVM region.
pub struct NvmPool {
    region: NvmRegion,
    page_size: usize,
    data_offset: u64,
    metas: Box<[NvmFrameMeta]>,
    free: Mutex<Vec<NvmSlot>>,
    hand: AtomicUsize,
    verify: NvmVerify,
    /// Whole pages move with `pread`/`pwrite` on the file instead of `memcpy` on the
    /// mapping (the `mmap-read` architecture's file I/O).
    file_io: AtomicBool,
    /// Charges reads made in place (set when the policy may read in place).
    cpu_cache: std::sync::OnceLock<CpuCacheModel>,
    /// Lines after an in-place read that are prefetched (0: none); set before use.
    prefetch_lines: std::sync::atomic::AtomicU32,
    /// The pool is a volatile cache, formatted on every open ([`set_volatile`](Self::set_volatile)):
    /// no header is ever read after a restart, so freeing a frame writes nothing and
    /// rewriting a frame sets no in-update flag.
    volatile: bool,
    /// The log whose end LSN stamps every header written (`written_lsn`); unset: 0.
    lsn_clock: std::sync::OnceLock<std::sync::Arc<dyn crate::wal::LogForce>>,
    /// Page-sized buffers of in-place writers (`frame::in_place`), kept for reuse.
    shadows: Mutex<Vec<Box<[u8]>>>,
}

impl NvmPool {
    /// Number of frames, fixed when the pool was formatted.
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    /// Every frame of the pool, in order.
    pub fn slots(&self) -> impl Iterator<Item = NvmSlot> + use<> {
        (0..self.metas.len()).map(NvmSlot::from_index)
    }

    /// True if the pool has no frame (never: `format` and `reopen` refuse zero frames).
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Where the frames start in the region: below are the pool and frame headers.
    pub fn frames_offset(&self) -> u64 {
        self.data_offset
    }

    /// The NVM region the pool lives in (its device counters, its file).
    pub fn region(&self) -> &NvmRegion {
        &self.region
    }

    /// Frames on the free list now (racy while others run).
    pub fn free_frames(&self) -> usize {
        self.free.lock().len()
    }

    fn header_offset(&self, n: NvmSlot) -> u64 {
        debug_assert!(n.index() < self.metas.len(), "NVM frame {n} of {}", self.metas.len());
        HEADERS_OFFSET + n.get() as u64 * HEADER_BYTES as u64
    }

    fn data_offset(&self, n: NvmSlot) -> u64 {
        debug_assert!(n.index() < self.metas.len(), "NVM frame {n} of {}", self.metas.len());
        self.data_offset + n.get() as u64 * self.page_size as u64
    }

    /// The page frame `n` holds, if any (racy unless the caller owns the frame).
    #[inline]
    pub fn pid(&self, n: NvmSlot) -> Option<PageId> {
        let p = self.metas[n.index()].pid.load(Ordering::Relaxed);
        (p != NO_PAGE).then_some(PageId(p))
    }

    /// Frame `n`'s recovery LSN while dirty ([`Lsn::NONE`]: unknown; racy unless the
    /// caller owns the frame).
    pub fn rec_lsn(&self, n: NvmSlot) -> Lsn {
        self.metas[n.index()].rec_lsn.load_lsn(Ordering::Relaxed)
    }

    /// Frame `n` was checked against its data CRC, or written, since the pool was opened.
    #[inline]
    pub fn is_checked(&self, n: NvmSlot) -> bool {
        self.metas[n.index()].checked.load(Ordering::Relaxed)
    }

    /// Frame `n` holds a copy newer than SSD's (its header's DIRTY flag; racy unless the
    /// caller owns the frame).
    pub fn is_dirty(&self, n: NvmSlot) -> bool {
        self.metas[n.index()].dirty.load(Ordering::Relaxed)
    }

    /// Frame `n`'s reference bit, for the NVM clock's second chance (racy).
    pub fn is_referenced(&self, n: NvmSlot) -> bool {
        self.metas[n.index()].referenced.load(Ordering::Relaxed)
    }

    /// Sets frame `n`'s reference bit, writing only when it is clear.
    #[inline]
    pub fn touch(&self, n: NvmSlot) {
        let r = &self.metas[n.index()].referenced;
        if !r.load(Ordering::Relaxed) {
            r.store(true, Ordering::Relaxed);
        }
    }

    /// Clears frame `n`'s reference bit (the clock hand passing it).
    pub fn clear_referenced(&self, n: NvmSlot) {
        self.metas[n.index()].referenced.store(false, Ordering::Relaxed);
    }

    /// Runs the pool as a volatile cache (the `nvcache` policy's clean copies): the
    /// caller formats it on every open, so its frame headers matter only while it runs.
    /// [`release`](Self::release) and [`clear_owner`](Self::clear_owner) then forget the
    /// frame's page in DRAM metadata without writing its header, and
    /// [`write_page`](Self::write_page) over a frame's own page sets no in-update flag
    /// first: both exist for a restart that reuses the pool, and none does.
    pub fn set_volatile(&mut self) {
        self.volatile = true;
    }

    /// Moves whole pages with `pread`/`pwrite` on the file (true) or `memcpy` on the
    /// mapping (false, the default).
    pub fn set_file_io(&self, on: bool) {
        self.file_io.store(on, Ordering::Relaxed);
    }

    /// The in-place latch of frame `n` (see [`NvmFrameMeta`]).
    #[inline]
    pub fn latch(&self, n: NvmSlot) -> &Latch {
        &self.metas[n.index()].latch
    }

    /// Where frame `n`'s page starts in the mapping, for in-place access by a guard
    /// that holds [`latch`](Self::latch)`(n)`.
    #[inline]
    pub fn page_ptr(&self, n: NvmSlot) -> std::ptr::NonNull<u8> {
        debug_assert!(n.index() < self.metas.len());
        // SAFETY: `data_offset(n) + page_size` lies inside the mapping (checked when the
        // pool was formatted or reopened), so the pointer is in bounds and not null.
        unsafe { std::ptr::NonNull::new_unchecked(self.region.base_ptr().add(self.data_offset(n) as usize)) }
    }

    /// Reads made in place are charged through a model of a CPU cache of `bytes`
    /// (`frame::cpu_cache`); without one, every such read is charged. Set once.
    pub fn set_cpu_cache_model(&self, bytes: u64) {
        let _ = self.cpu_cache.set(CpuCacheModel::new(bytes));
    }

    /// Line-grained reads made in place also bring in the next `lines` lines of the
    /// page (`frame::in_place`'s software prefetch; 0: off). Set at start-up.
    pub fn set_prefetch_lines(&self, lines: u32) {
        debug_assert!(lines <= crate::limits::PREFETCH_LINES_MAX);
        self.prefetch_lines.store(lines, Ordering::Relaxed);
    }

    /// Bytes of a frame's page.
    #[inline]
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Lines prefetched after a line-grained in-place read.
    #[inline]
    pub fn prefetch_lines(&self) -> u32 {
        self.prefetch_lines.load(Ordering::Relaxed)
    }

    /// Charges a read made in place of bytes `off..off + len` of frame `n`.
    #[inline]
    pub fn charge_in_place(&self, n: NvmSlot, off: usize, len: usize) {
        let at = self.data_offset(n) + off as u64;
        match self.cpu_cache.get() {
            Some(m) => m.charge(&self.region, at, len as u64),
            None => self.region.charge_read(at, len as u64),
        }
    }

    /// Charges a read made in place of bytes `off..off + len` of frame `n` followed by a
    /// software prefetch of the `ahead` bytes after it (`CpuCacheModel::charge_with_prefetch`;
    /// without a model, only the read is charged).
    #[inline]
    pub fn charge_in_place_prefetched(&self, n: NvmSlot, off: usize, len: usize, ahead: usize) {
        let at = self.data_offset(n) + off as u64;
        match self.cpu_cache.get() {
            Some(m) => m.charge_with_prefetch(&self.region, at, len as u64, ahead as u64),
            None => self.region.charge_read(at, len as u64),
        }
    }

    /// Charges the loads of a binary search made in place in frame `n`'s node.
    pub fn charge_search_in_place(&self, n: NvmSlot) {
        let at = self.data_offset(n);
        match self.cpu_cache.get() {
            Some(m) => m.charge_search(&self.region, at, self.page_size),
            None => {
                let lines = crate::page::frame::cpu_cache::search_lines(self.page_size) as u64;
                self.region.charge_read(at, lines * CACHE_LINE_BYTES as u64);
            }
        }
    }

    /// A page-sized buffer for an in-place writer's staged lines: reused, so its bytes
    /// are a former writer's (the writer tracks which lines it loaded).
    pub fn take_shadow(&self) -> Box<[u8]> {
        self.shadows.lock().pop().unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice())
    }

    /// Checks the pool's invariants (tests; takes the free list's lock and walks every
    /// frame): every frame on the free list is in range, listed once, and holds no page.
    ///
    /// # Panics
    /// If one does not hold.
    pub fn check_invariants(&self) {
        let free = self.free.lock();
        assert!(free.len() <= self.metas.len(), "{} free frames of {}", free.len(), self.metas.len());
        let mut seen = vec![false; self.metas.len()];
        for &n in free.iter() {
            assert!(n.index() < self.metas.len(), "free frame {n} of {}", self.metas.len());
            assert!(!seen[n.index()], "NVM frame {n} is on the free list twice");
            seen[n.index()] = true;
            assert!(self.pid(n).is_none(), "free NVM frame {n} holds {:?}", self.pid(n));
        }
    }

    /// Gives a buffer of [`take_shadow`](Self::take_shadow) back.
    pub fn give_shadow(&self, b: Box<[u8]>) {
        debug_assert_eq!(b.len(), self.page_size);
        let mut s = self.shadows.lock();
        if s.len() < SHADOWS_KEPT_MAX {
            s.push(b);
        }
    }

    /// Takes a free frame, if any.
    pub fn pop_free(&self) -> Option<NvmSlot> {
        let n = self.free.lock().pop()?;
        // Free-list membership: a free frame holds no page (two pages in one frame
        // would overwrite each other).
        assert!(self.pid(n).is_none(), "free NVM frame {n} holds {:?}", self.pid(n));
        Some(n)
    }

    /// The next frame under the clock hand.
    pub fn advance_hand(&self) -> NvmSlot {
        debug_assert!(!self.metas.is_empty(), "a clock hand over no frame");
        NvmSlot::from_index(self.hand.fetch_add(1, Ordering::Relaxed) % self.metas.len())
    }

    /// Stamps every header written from now on with `log`'s end LSN (see the module
    /// doc). Set once, before the pool's frames are written for the database's log:
    /// at open, before redo.
    pub fn set_lsn_clock(&self, log: std::sync::Arc<dyn crate::wal::LogForce>) {
        // A second call (a log attached again) keeps the first clock: both are the log's.
        let _ = self.lsn_clock.set(log);
    }

    /// The log's end LSN now ([`Lsn::NONE`] without a log).
    fn lsn_now(&self) -> Lsn {
        self.lsn_clock.get().map_or(Lsn::NONE, |l| l.end_lsn())
    }
}

fn dev(e: DeviceError) -> BufferError {
    BufferError::Device(Box::new(e))
}
