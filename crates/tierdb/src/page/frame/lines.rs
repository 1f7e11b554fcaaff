//! Cache-line-grained page guards (three-tier paper §3.1–3.2 and A.6).
//!
//! A [`LineGuard`] holds a page's latch, shared or exclusive, on a full frame or a
//! mini page, and reaches the bytes only through [`LinePage::read`] and
//! [`LinePage::write`] (the paper's `MakeResident`):
//!
//! - on a **full frame** whose page is not fully resident, missing lines of the range
//!   are copied from the page's NVM frame (one device read per run of consecutive
//!   lines) and marked in the resident mask; a write marks its lines in the dirty mask,
//!   so write-back copies only them;
//! - on a **mini page**, the slot map is searched for the lines; missing ones are
//!   loaded into their sorted position (later slots move up), so a range is always one
//!   slice; when the lines needed do not fit the 16 slots, the page is *promoted*: a
//!   full frame is taken, the resident lines and dirty bits are copied to their places,
//!   the page table is pointed at it and the mini page is freed. Promotion needs the
//!   mini page exclusive, so no other guard refers to it, and this guard simply moves
//!   on to the full frame: holders never see the difference (the paper's "partially
//!   promoted" state is not needed).
//!
//! Loading lines changes the page, so a shared guard that misses upgrades its latch
//! when it is the only holder and otherwise fails with `NeedsExclusive` (paper A.1:
//! a cache-line fault takes the latch exclusive). Hot pages are fully resident, or
//! hold their hot lines, and are read shared without faults.
//!
//! **Debug mode** (paper A.6): when the buffer manager's `debug_lines` is on, a guard
//! poisons every line that is not resident when it is fixed (and the free slots of a
//! mini page), so a read of a line that was not made resident sees `0xDB` bytes, not
//! stale data; and it records a checksum of every resident line, which it checks on
//! unfix for each line not marked dirty: a write to a line that was not marked dirty
//! panics, naming the page and line.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, fence};

use super::mini::{MINI_BYTES, MINI_SLOTS};
use super::{FrameId, FramePool, FrameRead, FrameWrite, Mask};
use crate::Result;
use crate::buffer::error::BufferError;
use crate::counters::Count;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;
use crate::page::latch::Latch;
use crate::page::source::LinePage;

const LINE: usize = CACHE_LINE_BYTES;

/// The byte debug mode fills lines that are not resident with.
pub const POISON: u8 = 0xDB;

/// Where a line guard's page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A full DRAM frame.
    Full(FrameId),
    /// Mini page number `i` of the frame pool's mini pages (16 line slots).
    Mini(u32),
}

/// What the line guards need of the page source that handed them out. The buffer
/// manager implements it; the guards never name the manager, so the frame layer does
/// not depend on the layer above it.
pub trait LineHost: Sync {
    /// The DRAM frame pool (full frames and mini pages).
    fn frames(&self) -> &FramePool;
    /// Cache-line-grained loading is on: a full frame's writes mark lines dirty when the
    /// page has an NVM copy to write them back to.
    fn cl_grained(&self) -> bool;
    /// Debug mode (paper A.6): guards check that only dirty-marked lines changed.
    fn debug_lines(&self) -> bool;
    /// Adds `n` to counter `c`.
    fn count(&self, c: Count, n: u64);
    /// Loads bytes `off..off + dst.len()` of `pid` from its NVM frame `n` into `dst`.
    ///
    /// # Errors
    /// A device error or a corrupted line.
    fn load_lines(&self, n: NvmSlot, pid: PageId, off: usize, dst: &mut [u8]) -> Result<(), BufferError>;
    /// A free full frame, held exclusive, to promote a mini page into.
    ///
    /// # Errors
    /// No frame can be freed.
    fn promotion_frame(&self) -> Result<FrameWrite<'_>, BufferError>;
    /// Publishes `pid` in full frame `f` after a promotion.
    fn publish_promotion(&self, pid: PageId, f: FrameId);
    /// Returns mini page `i` after its page was promoted.
    fn release_mini(&self, i: u32);
    /// The page size in bytes.
    fn page_size_bytes(&self) -> usize;
    /// Writes changed `runs` of `pid` (old bytes `old`, `lines` lines) back in place to
    /// NVM frame `n`, after forcing the log to `page_lsn`.
    ///
    /// # Errors
    /// The log force or the NVM write failed.
    fn write_in_place(
        &self,
        n: NvmSlot,
        pid: PageId,
        runs: &[(usize, &[u8])],
        old: &[u8],
        page_lsn: Lsn,
        lines: u64,
    ) -> Result<(), BufferError>;
    /// Stops the page source after a failure a guard's drop cannot report.
    fn stop(&self, why: String);
}

/// A page fixed for line-grained access in a buffer manager.
pub struct LineGuard<'a> {
    bm: &'a dyn LineHost,
    pool: &'a FramePool,
    pid: PageId,
    place: Place,
    exclusive: bool,
    wrote_whole: bool,
    /// Writes mark lines dirty (else the page as a whole).
    line_write_back: bool,
    /// Debug mode: checksums of the resident lines not yet marked dirty.
    debug: Option<Vec<(usize, u32)>>,
    _not_send: PhantomData<*const u8>,
}

impl<'a> LineGuard<'a> {
    /// Wraps a latch the caller holds (exclusive if `exclusive`) on `place`, which
    /// holds `pid`.
    pub(crate) fn new(bm: &'a dyn LineHost, pid: PageId, place: Place, exclusive: bool) -> LineGuard<'a> {
        if exclusive {
            // As for a frame guard: the exclusive mark is visible before our stores.
            fence(Ordering::Release);
        }
        let mut g = LineGuard {
            bm,
            pool: bm.frames(),
            pid,
            place,
            exclusive,
            wrote_whole: false,
            line_write_back: match place {
                Place::Full(f) => bm.cl_grained() && bm.frames().meta(f).nvm_slot().is_some(),
                Place::Mini(_) => true,
            },
            debug: None,
            _not_send: PhantomData,
        };
        if bm.debug_lines() {
            g.debug_start();
        }
        g
    }

    /// Where the page is now: a mini page may have been promoted to a full frame by an
    /// earlier access through this guard.
    pub fn place(&self) -> Place {
        self.place
    }

    /// True if the guard holds the latch exclusive: fixed so, or upgraded by a line
    /// fault when it was the only holder.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    fn latch(&self) -> &'a Latch {
        match self.place {
            Place::Full(f) => &self.pool.meta(f).latch,
            Place::Mini(i) => &self.pool.minis().meta(i).latch,
        }
    }

    fn page_bytes(&self) -> usize {
        self.pool.frame_bytes()
    }

    /// Makes the guard exclusive for a change of the page.
    fn fault(&mut self) -> Result<(), BufferError> {
        if self.exclusive {
            return Ok(());
        }
        if self.latch().try_upgrade() {
            fence(Ordering::Release);
            self.exclusive = true;
            if self.debug.is_some() {
                self.poison();
            }
            return Ok(());
        }
        Err(BufferError::NeedsExclusive { pid: self.pid })
    }

    /// Lines `first..=last` of `off..off + len`, checked against the page.
    #[inline]
    fn span(&self, off: usize, len: usize) -> Result<(usize, usize), BufferError> {
        let end = off.checked_add(len).filter(|&e| e <= self.page_bytes() && len > 0);
        match end {
            Some(end) => Ok((off / LINE, (end - 1) / LINE)),
            None => Err(BufferError::OutOfPage {
                pid: self.pid,
                off,
                end: off.saturating_add(len),
                page_size: self.page_bytes(),
            }),
        }
    }

    /// Makes lines `first..=last` resident and returns where line `first` is in DRAM.
    #[inline]
    fn ensure(&mut self, first: usize, last: usize) -> Result<NonNull<u8>, BufferError> {
        match self.place {
            Place::Full(f) => {
                let meta = self.pool.meta(f);
                if !meta.resident_all.load(Ordering::Relaxed) && !self.pool.all_set(Mask::Resident, f, first, last) {
                    self.fault()?;
                    self.load_full(f, first, last)?;
                }
                // SAFETY: line `first` lies inside frame `f` (`span` checked the range).
                Ok(unsafe { self.pool.data(f).add(first * LINE) })
            }
            Place::Mini(i) => {
                let m = self.pool.minis().meta(i);
                if let Some(k) = m.slot_of(first) {
                    let k_last = k + (last - first);
                    if k_last < m.count() && m.slots[k_last].load(Ordering::Relaxed) as usize == last {
                        // SAFETY: slot `k` lies inside mini page `i`'s data area.
                        return Ok(unsafe { self.pool.mini_data(i).add(k * LINE) });
                    }
                }
                self.fault()?;
                self.load_mini(i, first, last)
            }
        }
    }

    /// Copies the missing lines of `first..=last` from NVM into full frame `f`.
    fn load_full(&mut self, f: FrameId, first: usize, last: usize) -> Result<(), BufferError> {
        debug_assert!(self.exclusive);
        let meta = self.pool.meta(f);
        let n = meta.nvm_slot().expect("a partly resident page has an NVM copy");
        for (s, k) in self.pool.runs(Mask::Resident, f, first, last, false) {
            // SAFETY: the lines are inside frame `f`, which this guard holds exclusive.
            let dst = unsafe { std::slice::from_raw_parts_mut(self.pool.data(f).add(s * LINE).as_ptr(), k * LINE) };
            self.bm.load_lines(n, self.pid, s * LINE, dst)?;
            self.pool.set_lines(Mask::Resident, f, s, s + k - 1);
            if let Some(d) = &mut self.debug {
                d.extend((s..s + k).map(|l| (l, crc32c::crc32c(&dst[(l - s) * LINE..(l - s + 1) * LINE]))));
            }
        }
        if self.pool.count_set(Mask::Resident, f) == self.pool.lines() {
            meta.resident_all.store(true, Ordering::Relaxed);
        }
        self.bm.count(Count::LineFaults, 1);
        Ok(())
    }

    /// Loads the missing lines of `first..=last` into mini page `i` (promoting it if
    /// they do not fit) and returns where line `first` is.
    fn load_mini(&mut self, i: u32, first: usize, last: usize) -> Result<NonNull<u8>, BufferError> {
        debug_assert!(self.exclusive);
        let m = self.pool.minis().meta(i);
        let old = m.lines();
        let mut want = old.clone();
        for l in first..=last {
            if let Err(p) = want.binary_search(&l) {
                want.insert(p, l);
            }
        }
        if want.len() > MINI_SLOTS {
            self.promote(i)?;
            return self.ensure(first, last);
        }
        let base = self.pool.mini_data(i);
        let old_dirty = m.dirty.load(Ordering::Relaxed);
        let mut dirty = 0u16;
        let mut to_load = Vec::new();
        let mut j = old.len();
        for k in (0..want.len()).rev() {
            if j > 0 && old[j - 1] == want[k] {
                j -= 1;
                if j != k {
                    // SAFETY: slots `j < k` are inside the mini page's data area, held
                    // exclusive; `copy` allows the overlap of neighbouring slots.
                    unsafe { std::ptr::copy(base.add(j * LINE).as_ptr(), base.add(k * LINE).as_ptr(), LINE) };
                }
                if old_dirty & (1 << j) != 0 {
                    dirty |= 1 << k;
                }
            } else {
                to_load.push(k);
            }
        }
        let n = m.nvm_slot();
        to_load.reverse();
        let mut at = 0;
        while at < to_load.len() {
            // A run of slots holding consecutive lines: one NVM read.
            let mut run = 1;
            while at + run < to_load.len()
                && to_load[at + run] == to_load[at] + run
                && want[to_load[at + run]] == want[to_load[at]] + run
            {
                run += 1;
            }
            let (k, l) = (to_load[at], want[to_load[at]]);
            // SAFETY: slots `k..k + run` are inside the mini page, held exclusive.
            let dst = unsafe { std::slice::from_raw_parts_mut(base.add(k * LINE).as_ptr(), run * LINE) };
            let n = n.expect("lines missing from a mini page without an NVM copy");
            self.bm.load_lines(n, self.pid, l * LINE, dst)?;
            if let Some(d) = &mut self.debug {
                d.extend((0..run).map(|r| (l + r, crc32c::crc32c(&dst[r * LINE..(r + 1) * LINE]))));
            }
            at += run;
        }
        for (k, l) in want.iter().enumerate() {
            m.slots[k].store(*l as u16, Ordering::Relaxed);
        }
        m.count.store(want.len() as u8, Ordering::Relaxed);
        m.dirty.store(dirty, Ordering::Relaxed);
        self.bm.count(Count::LineFaults, 1);
        let k = want.binary_search(&first).expect("the line was just made resident");
        // SAFETY: slot `k` is inside the mini page.
        Ok(unsafe { base.add(k * LINE) })
    }

    /// Moves the page from mini page `i` (held exclusive) to a full frame.
    fn promote(&mut self, i: u32) -> Result<(), BufferError> {
        debug_assert!(self.exclusive);
        let m = self.pool.minis().meta(i);
        let g = self.bm.promotion_frame()?;
        let f = g.frame();
        let fm = g.meta();
        self.pool.clear_mask(Mask::Resident, f);
        self.pool.clear_mask(Mask::Dirty, f);
        let (src, dst) = (self.pool.mini_data(i), self.pool.data(f));
        let dirty = m.dirty.load(Ordering::Relaxed);
        for (k, l) in m.lines().into_iter().enumerate() {
            // SAFETY: slot `k` of the mini page and line `l` of the frame are inside
            // their areas; both are held exclusive, and they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.add(k * LINE).as_ptr(), dst.add(l * LINE).as_ptr(), LINE) };
            self.pool.set_lines(Mask::Resident, f, l, l);
            if dirty & (1 << k) != 0 {
                self.pool.set_lines(Mask::Dirty, f, l, l);
            }
        }
        if let Some(d) = &self.debug
            && let Some(l) = (0..self.pool.lines())
                .find(|&l| !self.pool.all_set(Mask::Resident, f, l, l) && d.iter().any(|(dl, _)| *dl == l))
        {
            panic!("debug-lines: {} line {l} was resident in its mini page but not copied on promotion", self.pid);
        }
        fm.pid.store(self.pid.0, Ordering::Relaxed);
        fm.set_nvm_slot(m.nvm_slot());
        fm.dirty.store(false, Ordering::Relaxed);
        fm.referenced.store(true, Ordering::Relaxed);
        fm.resident_all.store(self.pool.count_set(Mask::Resident, f) == self.pool.lines(), Ordering::Relaxed);
        let f = g.into_held();
        self.bm.publish_promotion(self.pid, f);
        fm.page_lsn.store(m.page_lsn.load(Ordering::Relaxed), Ordering::Relaxed);
        m.clear();
        m.latch.unlock_exclusive_unchanged();
        self.bm.release_mini(i);
        self.place = Place::Full(f);
        if self.debug.is_some() {
            self.poison();
        }
        Ok(())
    }

    /// Makes every line resident in a full frame (promoting a mini page).
    fn complete(&mut self) -> Result<FrameId, BufferError> {
        if let Place::Mini(i) = self.place {
            self.fault()?;
            self.promote(i)?;
        }
        let Place::Full(f) = self.place else { unreachable!("promoted") };
        if !self.pool.meta(f).resident_all.load(Ordering::Relaxed) {
            self.fault()?;
            self.load_full(f, 0, self.pool.lines() - 1)?;
        }
        Ok(f)
    }

    // ----- debug mode ---------------------------------------------------------------

    fn debug_start(&mut self) {
        if self.exclusive {
            self.poison();
        }
        let mut sums = Vec::new();
        self.for_each_resident(|l, bytes| sums.push((l, crc32c::crc32c(bytes))));
        self.debug = Some(sums);
    }

    /// Fills the lines that are not resident (and free mini-page slots) with [`POISON`].
    fn poison(&mut self) {
        match self.place {
            Place::Full(f) => {
                if self.pool.meta(f).resident_all.load(Ordering::Relaxed) {
                    return;
                }
                for (s, k) in self.pool.runs(Mask::Resident, f, 0, self.pool.lines() - 1, false) {
                    // SAFETY: the lines are inside frame `f`, held exclusive; they are
                    // not resident, so no slice handed out covers them.
                    unsafe { std::ptr::write_bytes(self.pool.data(f).add(s * LINE).as_ptr(), POISON, k * LINE) };
                }
            }
            Place::Mini(i) => {
                let c = self.pool.minis().meta(i).count();
                // SAFETY: the free slots are inside the mini page, held exclusive.
                unsafe {
                    std::ptr::write_bytes(self.pool.mini_data(i).add(c * LINE).as_ptr(), POISON, MINI_BYTES - c * LINE);
                }
            }
        }
    }

    /// Calls `f(line, bytes)` for every resident line not marked dirty.
    fn for_each_resident(&self, mut f: impl FnMut(usize, &[u8])) {
        match self.place {
            Place::Full(fr) => {
                let meta = self.pool.meta(fr);
                if meta.dirty.load(Ordering::Relaxed) {
                    return; // dirty as a whole: any write is allowed
                }
                let all = meta.resident_all.load(Ordering::Relaxed);
                for l in 0..self.pool.lines() {
                    if (all || self.pool.all_set(Mask::Resident, fr, l, l)) && !self.pool.all_set(Mask::Dirty, fr, l, l)
                    {
                        // SAFETY: a resident line of the frame this guard holds.
                        let b = unsafe { std::slice::from_raw_parts(self.pool.data(fr).add(l * LINE).as_ptr(), LINE) };
                        f(l, b);
                    }
                }
            }
            Place::Mini(i) => {
                let m = self.pool.minis().meta(i);
                let dirty = m.dirty.load(Ordering::Relaxed);
                for (k, l) in m.lines().into_iter().enumerate() {
                    if dirty & (1 << k) == 0 {
                        // SAFETY: an occupied slot of the mini page this guard holds.
                        let b =
                            unsafe { std::slice::from_raw_parts(self.pool.mini_data(i).add(k * LINE).as_ptr(), LINE) };
                        f(l, b);
                    }
                }
            }
        }
    }

    fn debug_check(&self, sums: &[(usize, u32)]) {
        if self.wrote_whole {
            return;
        }
        let mut now = std::collections::HashMap::new();
        self.for_each_resident(|l, b| {
            now.insert(l, crc32c::crc32c(b));
        });
        for (l, sum) in sums {
            if let Some(s) = now.get(l)
                && s != sum
            {
                panic!("debug-lines: {} line {l} changed without being marked dirty", self.pid);
            }
        }
    }

    /// Test hook: writes `bytes` at `off` without marking the lines dirty (what debug
    /// mode exists to catch).
    #[cfg(test)]
    pub(crate) fn write_unmarked(&mut self, off: usize, bytes: &[u8]) -> Result<(), BufferError> {
        let (first, last) = self.span(off, bytes.len())?;
        self.fault()?;
        let p = self.ensure(first, last)?;
        // SAFETY: the range is resident and inside the page, held exclusive.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(off - first * LINE).as_ptr(), bytes.len());
        }
        Ok(())
    }
}

impl LinePage for LineGuard<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        self.pid
    }

    #[inline]
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        if len == 0 {
            return Ok(&[]);
        }
        let (first, last) = self.span(off, len)?;
        let p = self.ensure(first, last)?;
        // SAFETY: the lines are resident and held (shared at least) by this guard; the
        // slice borrows the guard, so no call can move them while it lives.
        Ok(unsafe { std::slice::from_raw_parts(p.add(off - first * LINE).as_ptr(), len) })
    }

    #[inline]
    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        if len == 0 {
            return Ok(&mut []);
        }
        let (first, last) = self.span(off, len)?;
        self.fault()?;
        let p = self.ensure(first, last)?;
        match self.place {
            Place::Full(f) => {
                // Line-grained write-back needs an NVM copy to write the lines into and
                // cache-line-grained pages on; otherwise the page is dirty as a whole.
                if self.line_write_back {
                    self.pool.set_lines(Mask::Dirty, f, first, last);
                } else {
                    self.wrote_whole = true;
                }
            }
            Place::Mini(i) => {
                let m = self.pool.minis().meta(i);
                let k = m.slot_of(first).expect("resident");
                let bits = ((1u32 << (last - first + 1)) - 1) << k;
                m.dirty.fetch_or(bits as u16, Ordering::Relaxed);
            }
        }
        // SAFETY: resident lines of a page held exclusive; the slice borrows the guard.
        Ok(unsafe { std::slice::from_raw_parts_mut(p.add(off - first * LINE).as_ptr(), len) })
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        let f = self.complete()?;
        // SAFETY: the whole frame is resident and held by this guard.
        Ok(unsafe { std::slice::from_raw_parts(self.pool.data(f).as_ptr(), self.page_bytes()) })
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        match self.place {
            Place::Full(f) => self.pool.meta(f).note_lsn(lsn),
            Place::Mini(i) => {
                self.pool.minis().meta(i).page_lsn.fetch_max_lsn(lsn, Ordering::Relaxed);
            }
        }
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        self.fault()?;
        let f = self.complete()?;
        self.wrote_whole = true;
        // SAFETY: the whole frame is resident and held exclusive by this guard.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.pool.data(f).as_ptr(), self.page_bytes()) })
    }
}

impl Drop for LineGuard<'_> {
    fn drop(&mut self) {
        if let Some(sums) = self.debug.take()
            && !std::thread::panicking()
        {
            self.debug_check(&sums);
        }
        match self.place {
            Place::Full(f) => {
                let meta = self.pool.meta(f);
                if self.wrote_whole {
                    meta.dirty.store(true, Ordering::Relaxed);
                }
                if self.exclusive {
                    meta.latch.unlock_exclusive();
                } else {
                    meta.latch.unlock_shared();
                }
            }
            Place::Mini(i) => {
                let m = self.pool.minis().meta(i);
                if self.exclusive {
                    m.latch.unlock_exclusive_unchanged();
                } else {
                    m.latch.unlock_shared();
                }
            }
        }
    }
}

/// Line-grained access to a page that is always whole in DRAM (`main-memory`, or a
/// buffer manager's frame without cache-line-grained loading): a frame guard behind the
/// [`LinePage`] interface.
pub enum WholeLines<'a> {
    /// Fixed shared: writes fail with `NeedsExclusive`.
    Shared(FrameRead<'a>),
    /// Fixed exclusive: writes mark the frame dirty as a whole.
    Exclusive(FrameWrite<'a>),
}

impl<'a> WholeLines<'a> {
    fn range(&self, off: usize, len: usize) -> Result<std::ops::Range<usize>, BufferError> {
        let (page_size, pid) = match self {
            WholeLines::Shared(g) => (g.len(), crate::page::source::SharedPage::page_id(g)),
            WholeLines::Exclusive(g) => (g.len(), crate::page::source::ExclusivePage::page_id(g)),
        };
        match off.checked_add(len).filter(|&e| e <= page_size) {
            Some(end) => Ok(off..end),
            None => Err(BufferError::OutOfPage { pid, off, end: off.saturating_add(len), page_size }),
        }
    }

    fn exclusive(&mut self) -> Result<&mut FrameWrite<'a>, BufferError> {
        match self {
            WholeLines::Exclusive(g) => Ok(g),
            WholeLines::Shared(g) => {
                Err(BufferError::NeedsExclusive { pid: crate::page::source::SharedPage::page_id(g) })
            }
        }
    }
}

impl LinePage for WholeLines<'_> {
    fn page_id(&self) -> PageId {
        match self {
            WholeLines::Shared(g) => crate::page::source::SharedPage::page_id(g),
            WholeLines::Exclusive(g) => crate::page::source::ExclusivePage::page_id(g),
        }
    }

    #[inline]
    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        let r = self.range(off, len)?;
        Ok(match self {
            WholeLines::Shared(g) => &g[r],
            WholeLines::Exclusive(g) => &g[r],
        })
    }

    #[inline]
    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        let r = self.range(off, len)?;
        Ok(&mut self.exclusive()?[r])
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        Ok(match self {
            WholeLines::Shared(g) => g,
            WholeLines::Exclusive(g) => g,
        })
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        Ok(&mut **self.exclusive()?)
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        if let WholeLines::Exclusive(g) = self {
            crate::page::source::ExclusivePage::set_page_lsn(g, lsn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ByteSize;
    use crate::buffer::BufferManager;
    use crate::buffer::{BufferConfig, Techniques};
    use crate::device::NvmConfig;
    use crate::page::PageSource;

    const PS: usize = 4096;

    /// A manager of 8 DRAM frames over 64 NVM frames (no SSD), with `tech` and debug
    /// mode, holding `pages` pages each filled with its page id, all in NVM.
    fn manager(dir: &tempfile::TempDir, tech: Techniques, pages: u64) -> (BufferManager, Vec<PageId>) {
        let mut c = BufferConfig::new(ByteSize(8 * PS as u64));
        c.page_size = PS;
        c.techniques = tech;
        c.debug_lines = true;
        c.nvm = Some(NvmConfig::new(dir.path().join("t.nvm"), ByteSize(8192 + 64 * (PS as u64 + 64) + 4096)));
        let bm = BufferManager::open(&c).unwrap();
        let mut pids = Vec::new();
        for _ in 0..pages {
            let mut g = bm.allocate().unwrap();
            let pid = crate::page::source::ExclusivePage::page_id(&g);
            g.fill(pid.0 as u8);
            pids.push(pid);
        }
        // Push every page out of DRAM by touching others.
        for _ in 0..3 {
            for p in &pids {
                drop(bm.fix_shared(*p).unwrap());
            }
        }
        (bm, pids)
    }

    #[test]
    #[should_panic(expected = "changed without being marked dirty")]
    fn debug_mode_catches_a_write_to_a_line_not_marked_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let (bm, pids) = manager(&dir, Techniques { cl_grained: true, mini_pages: false, swizzling: false }, 24);
        let crate::page::frame::in_place::BmLines::Dram(mut g) = bm.fix_lines(pids[0], true).unwrap() else {
            unreachable!("eager migrates")
        };
        assert_eq!(g.read(130, 4).unwrap(), &[pids[0].0 as u8; 4]);
        g.write_unmarked(130, &[9]).unwrap();
        drop(g);
    }

    #[test]
    fn debug_mode_allows_writes_to_lines_marked_dirty_and_poisons_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        for tech in [Techniques { cl_grained: true, mini_pages: false, swizzling: false }, Techniques::ALL] {
            let (bm, pids) = manager(&dir, tech, 24);
            let pid = pids[3];
            let mut g = bm.fix_lines(pid, true).unwrap();
            g.write(200, 70).unwrap().fill(7);
            assert_eq!(g.read(190, 10).unwrap(), &[pid.0 as u8; 10]);
            match g.place().expect("eager migrates") {
                Place::Full(f) => {
                    // Line 10 was never made resident: poisoned in debug mode.
                    let mut b = [0u8; 64];
                    bm.frames().copy_lines_out(f, 640, &mut b);
                    assert_eq!(b, [POISON; 64]);
                }
                Place::Mini(i) => assert_eq!(bm.frames().minis().meta(i).lines(), vec![2, 3, 4]),
            }
            drop(g);
            let mut g = bm.fix_lines(pid, false).unwrap();
            assert_eq!(g.read(199, 72).unwrap()[1..71], [7; 70]);
            assert_eq!(g.whole().unwrap()[4000], pid.0 as u8, "{tech}");
            drop(g);
            bm.check_invariants();
        }
    }
}
