//! Access to a page *in place* in its NVM frame: the DRAM bypass of the Spitfire
//! policy (`NvmAccess::InPlace`, data-flow paths ➐ and ➑) and of the memory-mapped
//! engines' SE2.
//!
//! Guards: [`NvmLines`] (cache-line-grained, shared or exclusive), [`NvmRead`] (the
//! whole page shared: scans) and [`NvmOptimistic`] (the whole page read optimistically:
//! inner nodes). The first two hold the NVM frame's in-place latch (`NvmPool::latch`):
//! shared to read, exclusive to write. Whoever moves the page out of the frame (a
//! migration to DRAM, an NVM eviction, a checkpoint write-out) claims the page's table
//! entry away from `Nvm(n)` only while holding that latch exclusive, and bumps the
//! frame's version before releasing it, so no latched guard can outlive the page's stay
//! in the frame (a guard re-checks the entry after latching) and an optimistic reader
//! sees a changed version. In-place writers bump the version too.
//!
//! Reads in place are charged to the NVM device as `nvm-direct` charges them, through
//! the same model of the CPU cache (`cpu_cache`): a line guard's read as the lines it
//! covers, a shared fix as a read of the whole page (a scan reads it all), an
//! optimistic fix as the dependent line reads of a binary search.
//!
//! - **Reads** of a shared guard return the NVM bytes themselves; each read is charged
//!   as it is handed out (loads from the mapping cannot be intercepted).
//! - **Writes** are staged, as `nvm-direct`'s are: an exclusive guard copies the lines
//!   it touches into a DRAM *shadow* and hands those out; at unfix it forces the log up
//!   to the page LSN (the write-ahead rule), then writes the changed lines into the
//!   frame and persists them, bracketed by the frame header's in-update flag
//!   (`NvmPool::write_lines`). A crash in the middle leaves a frame that restart
//!   discards, never torn bytes under a valid header. A failed write-back cannot be
//!   reported from `Drop`, so it stops the buffer manager: every later fix fails until
//!   the database is reopened and recovered.

#![allow(unsafe_code)]

use std::marker::PhantomData;

use crate::Result;
use crate::buffer::error::BufferError;
use crate::buffer::nvm_pool::NvmPool;
use crate::counters::Count;
use crate::page::frame::lines::{LineGuard, LineHost, Place};
use crate::page::source::LinePage;

use crate::ids::{Lsn, NvmSlot, PageId};
use crate::limits::{CACHE_LINE_BYTES, PAGE_SIZE_MAX_BYTES};

const LINE: usize = CACHE_LINE_BYTES;
/// Words of a line mask: one bit per line of the largest page.
const MASK_WORDS: usize = PAGE_SIZE_MAX_BYTES / LINE / 64;

/// An exclusive guard's staged lines, in page-sized buffers reused from earlier
/// writers (`NvmPool::take_shadow`): only the lines `loaded` marks are this page's.
struct Shadow {
    bytes: Box<[u8]>,
    /// The staged lines as NVM held them, for the frame's data CRC at write-back.
    old: Box<[u8]>,
    loaded: [u64; MASK_WORDS],
    dirty: [u64; MASK_WORDS],
}

impl Shadow {
    fn all_set(mask: &[u64; MASK_WORDS], first: usize, last: usize) -> bool {
        (first..=last).all(|l| mask[l / 64] & (1 << (l % 64)) != 0)
    }

    fn set(mask: &mut [u64; MASK_WORDS], first: usize, last: usize) {
        for l in first..=last {
            mask[l / 64] |= 1 << (l % 64);
        }
    }

    /// Runs `(first line, count)` of set bits in `mask` over `lines` lines.
    fn runs(mask: &[u64; MASK_WORDS], lines: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut l = 0;
        while l < lines {
            if mask[l / 64] & (1 << (l % 64)) == 0 {
                l += 1;
                continue;
            }
            let start = l;
            while l < lines && mask[l / 64] & (1 << (l % 64)) != 0 {
                l += 1;
            }
            out.push((start, l - start));
        }
        out
    }
}

/// Software prefetch of bytes `from..until` of frame `n`'s page, one hint per line.
#[inline]
fn prefetch(nvm: &NvmPool, n: NvmSlot, from: usize, until: usize) {
    debug_assert!(from <= until && until <= nvm.page_size(), "{from}..{until}");
    let base = nvm.page_ptr(n).as_ptr();
    for at in (from..until).step_by(LINE) {
        // SAFETY: `at` is inside frame `n`'s page (checked above: `until` is at most the
        // page size), which lies inside the mapping, so the pointer is in bounds. A
        // prefetch is a hint: it reads nothing the program sees and never faults.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(base.add(at).cast::<i8>());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (base, at);
    }
}

/// A page fixed in place in NVM frame `n` (see the module documentation).
pub struct NvmLines<'a> {
    bm: &'a dyn LineHost,
    nvm: &'a NvmPool,
    n: NvmSlot,
    pid: PageId,
    exclusive: bool,
    page_size: usize,
    shadow: Option<Box<Shadow>>,
    page_lsn: Lsn,
    _not_send: PhantomData<*const u8>,
}

impl<'a> NvmLines<'a> {
    /// Wraps the in-place latch of frame `n`, which the caller holds (exclusive if
    /// `exclusive`) and under which it checked that the frame holds `pid`.
    pub(crate) fn new(
        bm: &'a dyn LineHost,
        nvm: &'a NvmPool,
        n: NvmSlot,
        pid: PageId,
        exclusive: bool,
    ) -> NvmLines<'a> {
        debug_assert_eq!(nvm.pid(n), Some(pid));
        debug_assert!(if exclusive { nvm.latch(n).is_exclusive() } else { nvm.latch(n).is_held() });
        NvmLines {
            bm,
            nvm,
            n,
            pid,
            exclusive,
            page_size: bm.page_size_bytes(),
            shadow: None,
            page_lsn: Lsn::NONE,
            _not_send: PhantomData,
        }
    }

    /// The NVM frame the guard holds.
    pub fn nvm_frame(&self) -> NvmSlot {
        self.n
    }

    /// True if the guard holds the in-place latch exclusive (it may write, through its
    /// shadow); false for a shared guard, whose writes fail with `NeedsExclusive`.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// Lines `first..=last` of `off..off + len`, checked against the page.
    #[inline]
    fn span(&self, off: usize, len: usize) -> Result<(usize, usize), BufferError> {
        match off.checked_add(len).filter(|&e| e <= self.page_size && len > 0) {
            Some(end) => Ok((off / LINE, (end - 1) / LINE)),
            None => Err(BufferError::OutOfPage {
                pid: self.pid,
                off,
                end: off.saturating_add(len),
                page_size: self.page_size,
            }),
        }
    }

    /// The NVM bytes `off..off + len`, charged as a read of their lines. With software
    /// prefetch on (`NvmPool::prefetch_lines`), the next lines of the page are
    /// prefetched too; the CPU-cache model counts them as brought in with the read
    /// when it goes to NVM, so a later read of them hits.
    fn in_place(&self, off: usize, len: usize) -> &[u8] {
        let ahead = self.nvm.prefetch_lines() as usize;
        if ahead == 0 {
            self.nvm.charge_in_place(self.n, off, len);
        } else {
            let end = (off + len).next_multiple_of(LINE).min(self.page_size);
            let until = (end + ahead * LINE).min(self.page_size);
            prefetch(self.nvm, self.n, end, until);
            self.nvm.charge_in_place_prefetched(self.n, off, len, until - (off + len).min(until));
        }
        // SAFETY: `off + len` is inside frame `n`'s page (`span` checked it); the
        // in-place latch held by this guard keeps every writer of the frame out (in-place
        // writers hold it exclusive; movers claim the page only while holding it), and
        // the slice borrows the guard.
        unsafe { std::slice::from_raw_parts(self.nvm.page_ptr(self.n).add(off).as_ptr(), len) }
    }

    /// The exclusive guard's shadow with lines `first..=last` loaded from NVM.
    fn staged(&mut self, first: usize, last: usize) -> Result<&mut Shadow, BufferError> {
        if !self.exclusive {
            return Err(BufferError::NeedsExclusive { pid: self.pid });
        }
        let nvm = self.nvm;
        let shadow = self.shadow.get_or_insert_with(|| {
            Box::new(Shadow {
                bytes: nvm.take_shadow(),
                old: nvm.take_shadow(),
                loaded: [0; MASK_WORDS],
                dirty: [0; MASK_WORDS],
            })
        });
        if !Shadow::all_set(&shadow.loaded, first, last) {
            // One device read per run of missing lines.
            let mut l = first;
            while l <= last {
                if Shadow::all_set(&shadow.loaded, l, l) {
                    l += 1;
                    continue;
                }
                let start = l;
                while l <= last && !Shadow::all_set(&shadow.loaded, l, l) {
                    l += 1;
                }
                let run = start * LINE..l * LINE;
                self.nvm.read_lines(self.n, self.pid, run.start, &mut shadow.bytes[run.clone()])?;
                shadow.old[run.clone()].copy_from_slice(&shadow.bytes[run]);
                Shadow::set(&mut shadow.loaded, start, l - 1);
            }
        }
        Ok(shadow)
    }

    /// Writes the changed lines back into the frame, durably (step 2 of the module
    /// documentation).
    fn write_back(&mut self) -> Result<(), BufferError> {
        let Some(shadow) = self.shadow.as_ref() else { return Ok(()) };
        let lines = self.page_size / LINE;
        let runs: Vec<(usize, &[u8])> = Shadow::runs(&shadow.dirty, lines)
            .into_iter()
            .map(|(s, k)| (s * LINE, &shadow.bytes[s * LINE..(s + k) * LINE]))
            .collect();
        if runs.is_empty() {
            return Ok(());
        }
        let count: usize = runs.iter().map(|(_, b)| b.len() / LINE).sum();
        self.bm.write_in_place(self.n, self.pid, &runs, &shadow.old, self.page_lsn, count as u64)
    }
}

impl LinePage for NvmLines<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        self.pid
    }

    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        if len == 0 {
            return Ok(&[]);
        }
        let (first, last) = self.span(off, len)?;
        if !self.exclusive {
            return Ok(self.in_place(off, len));
        }
        let shadow = self.staged(first, last)?;
        Ok(&shadow.bytes[off..off + len])
    }

    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        if len == 0 {
            return Ok(&mut []);
        }
        let (first, last) = self.span(off, len)?;
        let shadow = self.staged(first, last)?;
        Shadow::set(&mut shadow.dirty, first, last);
        Ok(&mut shadow.bytes[off..off + len])
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        if !self.exclusive {
            return Ok(self.in_place(0, self.page_size));
        }
        let last = self.page_size / LINE - 1;
        Ok(&self.staged(0, last)?.bytes[..])
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        let last = self.page_size / LINE - 1;
        let shadow = self.staged(0, last)?;
        Shadow::set(&mut shadow.dirty, 0, last);
        Ok(&mut shadow.bytes[..])
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        self.page_lsn = self.page_lsn.max(lsn);
    }
}

impl Drop for NvmLines<'_> {
    fn drop(&mut self) {
        let latch = self.nvm.latch(self.n);
        if !self.exclusive {
            latch.unlock_shared();
            return;
        }
        if let Err(e) = self.write_back() {
            self.bm.stop(format!("writing {} back in place to NVM frame {} failed: {e}", self.pid, self.n));
        }
        if let Some(s) = self.shadow.take() {
            self.nvm.give_shadow(s.bytes);
            self.nvm.give_shadow(s.old);
        }
        latch.unlock_exclusive();
    }
}

/// What the buffer manager hands out for a cache-line-grained fix: the page in DRAM
/// (a full frame or a mini page), or in place in NVM.
pub enum BmLines<'a> {
    /// The page in DRAM, a full frame or a mini page, loaded line by line.
    Dram(LineGuard<'a>),
    /// The page in place in its NVM frame (the policy chose to bypass DRAM).
    Nvm(NvmLines<'a>),
}

impl BmLines<'_> {
    /// Where the page is in DRAM; `None` for a page accessed in place in NVM.
    pub fn place(&self) -> Option<Place> {
        match self {
            BmLines::Dram(g) => Some(g.place()),
            BmLines::Nvm(_) => None,
        }
    }

    /// True if the guard holds the page in place in NVM.
    pub fn in_place(&self) -> bool {
        matches!(self, BmLines::Nvm(_))
    }
}

impl LinePage for BmLines<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        match self {
            BmLines::Dram(g) => g.page_id(),
            BmLines::Nvm(g) => g.page_id(),
        }
    }

    #[inline]
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        match self {
            BmLines::Dram(g) => g.read(off, len),
            BmLines::Nvm(g) => g.read(off, len),
        }
    }

    #[inline]
    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        match self {
            BmLines::Dram(g) => g.write(off, len),
            BmLines::Nvm(g) => g.write(off, len),
        }
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        match self {
            BmLines::Dram(g) => g.whole(),
            BmLines::Nvm(g) => g.whole(),
        }
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        match self {
            BmLines::Dram(g) => g.whole_mut(),
            BmLines::Nvm(g) => g.whole_mut(),
        }
    }

    #[inline]
    fn set_page_lsn(&mut self, lsn: Lsn) {
        match self {
            BmLines::Dram(g) => g.set_page_lsn(lsn),
            BmLines::Nvm(g) => g.set_page_lsn(lsn),
        }
    }
}

/// A page fixed shared in place in NVM frame `n`: its bytes are the NVM bytes.
pub struct NvmRead<'a> {
    nvm: &'a NvmPool,
    n: NvmSlot,
    pid: PageId,
    page_size: usize,
    _not_send: PhantomData<*const u8>,
}

impl<'a> NvmRead<'a> {
    /// Wraps the in-place latch of frame `n`, held shared by the caller, which checked
    /// that the frame holds `pid`. Charges the read of the page.
    pub(crate) fn new(nvm: &'a NvmPool, n: NvmSlot, pid: PageId, page_size: usize) -> NvmRead<'a> {
        debug_assert_eq!(nvm.pid(n), Some(pid));
        nvm.charge_in_place(n, 0, page_size);
        // The whole page is charged already; the prefetch only starts the loads of its
        // first lines ahead of the reader.
        let ahead = nvm.prefetch_lines() as usize;
        if ahead > 0 {
            prefetch(nvm, n, 0, (ahead * LINE).min(page_size));
        }
        NvmRead { nvm, n, pid, page_size, _not_send: PhantomData }
    }
}

impl std::ops::Deref for NvmRead<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the page lies inside the mapping; the shared in-place latch keeps
        // writers and movers out while the guard lives.
        unsafe { std::slice::from_raw_parts(self.nvm.page_ptr(self.n).as_ptr(), self.page_size) }
    }
}

impl crate::page::source::SharedPage for NvmRead<'_> {
    fn page_id(&self) -> PageId {
        self.pid
    }
}

impl Drop for NvmRead<'_> {
    fn drop(&mut self) {
        self.nvm.latch(self.n).unlock_shared();
    }
}

/// A page read optimistically in place in NVM frame `n`: no latch is held; the bytes
/// may change underneath and count only if
/// [`validate`](crate::page::source::OptimisticPage::validate) finds the frame's version
/// unchanged and no in-place writer in it.
pub struct NvmOptimistic<'a> {
    nvm: &'a NvmPool,
    n: NvmSlot,
    version: u64,
    page_size: usize,
    _not_send: PhantomData<*const u8>,
}

impl<'a> NvmOptimistic<'a> {
    /// Starts an optimistic read of frame `n`, or `None` if a writer is in it.
    pub(crate) fn try_new(nvm: &'a NvmPool, n: NvmSlot, page_size: usize) -> Option<NvmOptimistic<'a>> {
        let version = nvm.latch(n).optimistic()?;
        nvm.charge_search_in_place(n);
        Some(NvmOptimistic { nvm, n, version, page_size, _not_send: PhantomData })
    }
}

impl std::ops::Deref for NvmOptimistic<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the page lies inside the mapping, which lives as long as the pool.
        // The bytes may be changed concurrently (an in-place writer, a new page in the
        // frame): this is the optimistic read's documented data race (docs/unsafe.md),
        // and nothing read counts before `validate`.
        unsafe { std::slice::from_raw_parts(self.nvm.page_ptr(self.n).as_ptr(), self.page_size) }
    }
}

impl crate::page::source::OptimisticPage for NvmOptimistic<'_> {
    #[inline]
    fn validate(&self) -> bool {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        self.nvm.latch(self.n).validate(self.version)
    }
}

/// What the buffer manager hands out for a shared fix.
pub enum BmShared<'a> {
    /// The page's DRAM frame, latched shared.
    Dram(crate::page::frame::FrameRead<'a>),
    /// The page read in place in its NVM frame, whose in-place latch is held shared.
    Nvm(NvmRead<'a>),
}

impl std::ops::Deref for BmShared<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            BmShared::Dram(g) => g,
            BmShared::Nvm(g) => g,
        }
    }
}

impl crate::page::source::SharedPage for BmShared<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        match self {
            BmShared::Dram(g) => g.page_id(),
            BmShared::Nvm(g) => g.page_id(),
        }
    }
}

/// What the buffer manager hands out for an optimistic fix.
pub enum BmOptimistic<'a> {
    /// The page's DRAM frame, read optimistically.
    Dram(crate::page::frame::FrameOptimistic<'a>),
    /// The page read optimistically in place in its NVM frame.
    Nvm(NvmOptimistic<'a>),
}

impl<'a> BmOptimistic<'a> {
    /// The DRAM guard, if the page is read in DRAM (swizzling works on those only).
    #[inline]
    pub fn dram(&self) -> Option<&crate::page::frame::FrameOptimistic<'a>> {
        match self {
            BmOptimistic::Dram(g) => Some(g),
            BmOptimistic::Nvm(_) => None,
        }
    }
}

impl std::ops::Deref for BmOptimistic<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            BmOptimistic::Dram(g) => g,
            BmOptimistic::Nvm(g) => g,
        }
    }
}

impl crate::page::source::OptimisticPage for BmOptimistic<'_> {
    #[inline]
    fn validate(&self) -> bool {
        match self {
            BmOptimistic::Dram(g) => g.validate(),
            BmOptimistic::Nvm(g) => g.validate(),
        }
    }
}

/// Counts an in-place fix (for the manager).
pub(crate) fn count_fix(bm: &dyn LineHost, exclusive: bool) {
    bm.count(if exclusive { Count::NvmWritesInPlace } else { Count::NvmReadsInPlace }, 1);
    bm.count(Count::NvmHits, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_a_mask() {
        let mut m = [0u64; MASK_WORDS];
        Shadow::set(&mut m, 0, 1);
        Shadow::set(&mut m, 63, 65);
        Shadow::set(&mut m, 255, 255);
        assert_eq!(Shadow::runs(&m, 256), vec![(0, 2), (63, 3), (255, 1)]);
        assert!(Shadow::all_set(&m, 63, 65) && !Shadow::all_set(&m, 62, 63));
    }
}
