//! The guards of `nvm-direct`'s page slots: shared and optimistic reads in place, the
//! exclusive guard that stages its changes in a DRAM shadow and writes them back at
//! drop (log first, then the lines, then the persist), and the line guard the B+-tree
//! reads leaves through. The write-back protocol is described in the parent module.

#![allow(unsafe_code)]

use super::*;
use crate::ids::{AtomicLsn, Lsn};

/// The first and last line of `off..off + len` in a page of `ps` bytes; `None` for an
/// empty range inside the page.
fn lines_of(pid: PageId, ps: usize, off: usize, len: usize) -> Result<Option<(usize, usize)>, BufferError> {
    if off.checked_add(len).is_none_or(|e| e > ps) {
        return Err(BufferError::OutOfPage { pid, off, end: off.saturating_add(len), page_size: ps });
    }
    Ok((len > 0).then(|| (off / LINE, (off + len - 1) / LINE)))
}

/// A slot held shared: derefs to the page in NVM.
pub struct DirectRead<'a> {
    pub(super) pages: &'a DirectPages,
    pub(super) slot: u32,
    pub(super) pid: PageId,
}

impl Deref for DirectRead<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the shared latch is held for the guard's life.
        unsafe { self.pages.bytes(self.slot) }
    }
}

impl Drop for DirectRead<'_> {
    #[inline]
    fn drop(&mut self) {
        self.pages.meta(self.slot).latch.unlock_shared();
    }
}

impl SharedPage for DirectRead<'_> {
    fn page_id(&self) -> PageId {
        self.pid
    }
}

/// A slot read optimistically: see the frame module's seqlock.
pub struct DirectOptimistic<'a> {
    pub(super) pages: &'a DirectPages,
    pub(super) slot: u32,
    pub(super) version: u64,
}

impl Deref for DirectOptimistic<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: a writer may change these bytes while they are read (the seqlock
        // pattern, as `FrameOptimistic`): the reader never acts on them before
        // `validate`; the mapping stays valid and any byte is a valid `u8`.
        unsafe { self.pages.bytes(self.slot) }
    }
}

impl OptimisticPage for DirectOptimistic<'_> {
    #[inline]
    fn validate(&self) -> bool {
        fence(Ordering::Acquire);
        let meta = self.pages.meta(self.slot);
        meta.latch.validate(self.version)
    }
}

/// A slot held exclusive, writing through a DRAM shadow (see the module doc).
pub struct DirectWrite<'a> {
    pub(super) pages: &'a DirectPages,
    pub(super) slot: u32,
    pub(super) pid: PageId,
    pub(super) shadow: Option<Box<[u8]>>,
    /// Lines copied into the shadow.
    pub(super) resident: [u64; MASK_WORDS],
    /// Lines written in the shadow (compared with NVM at write-back).
    pub(super) dirty: [u64; MASK_WORDS],
    pub(super) wrote: bool,
    pub(super) lines: usize,
    /// Where this guard's registration in [`DirectPages::oldest_pending`] is.
    pub(super) pending_since: Option<Lsn>,
    /// A full image of the page was logged during this hold: the write-back logs every
    /// dirty line (recovery installs the image first, so lines that changed back to
    /// what NVM holds must be logged too).
    pub(super) image_logged: bool,
}

impl DirectWrite<'_> {
    /// Marks the guard as changing the page (first time: registers the pending bound).
    #[inline]
    pub(super) fn begin_changes(&mut self) {
        if !self.wrote {
            self.wrote = true;
            self.pending_since = self.pages.pending_begin();
        }
    }

    /// The page held (inherent, so callers need not pick between the guard traits).
    #[inline]
    pub fn page_id(&self) -> PageId {
        self.pid
    }

    pub(super) fn set_all(&mut self, dirty: bool) {
        let words = self.lines.div_ceil(64);
        for w in 0..words {
            let bits = if (w + 1) * 64 <= self.lines { u64::MAX } else { (1u64 << (self.lines - w * 64)) - 1 };
            self.resident[w] = bits;
            if dirty {
                self.dirty[w] = bits;
            }
        }
    }

    #[inline]
    fn is_set(mask: &[u64; MASK_WORDS], l: usize) -> bool {
        mask[l / 64] & (1 << (l % 64)) != 0
    }

    fn any_resident(&self, first: usize, last: usize) -> bool {
        self.shadow.is_some() && (first..=last).any(|l| Self::is_set(&self.resident, l))
    }

    /// Copies the missing lines of `first..=last` from NVM into the shadow (one charged
    /// device read per run of missing lines).
    fn load(&mut self, first: usize, last: usize) {
        if self.shadow.is_none() {
            self.shadow = Some(self.pages.take_shadow());
        }
        let mut l = first;
        while l <= last {
            if Self::is_set(&self.resident, l) {
                l += 1;
                continue;
            }
            let start = l;
            while l <= last && !Self::is_set(&self.resident, l) {
                self.resident[l / 64] |= 1 << (l % 64);
                l += 1;
            }
            let (off, len) = (start * LINE, (l - start) * LINE);
            self.pages.charge(self.slot, off, len);
            self.pages.counters.lines_staged.fetch_add((l - start) as u64, Ordering::Relaxed);
            // SAFETY: the exclusive latch is held, so nobody writes the slot.
            let src = unsafe { &self.pages.bytes(self.slot)[off..off + len] };
            self.shadow.as_mut().expect("created above")[off..off + len].copy_from_slice(src);
        }
    }

    /// The first and last line of `off..off + len` (`None` for an empty range inside
    /// the page).
    fn lines_of(&self, off: usize, len: usize) -> Result<Option<(usize, usize)>, BufferError> {
        lines_of(self.pid, self.pages.page_size, off, len)
    }

    fn load_all(&mut self) {
        self.load(0, self.lines - 1);
    }

    /// Drops the guard without writing anything back (a page being freed).
    pub fn discard(mut self) {
        self.dirty = [0; MASK_WORDS];
    }

    /// Runs of lines `keep` selects, as `(first line, bytes)` slices of `shadow`.
    fn runs<'s>(&self, shadow: &'s [u8], keep: impl Fn(usize) -> bool) -> Vec<(usize, &'s [u8])> {
        let mut runs = Vec::new();
        let mut l = 0;
        while l < self.lines {
            if !keep(l) {
                l += 1;
                continue;
            }
            let start = l;
            while l < self.lines && keep(l) {
                l += 1;
            }
            runs.push((start, &shadow[start * LINE..l * LINE]));
        }
        runs
    }

    /// Logs and writes back the changed lines, after the slot's CRC entry; called by
    /// drop.
    fn write_back(&mut self) {
        let Some(shadow) = self.shadow.take() else { return };
        if self.dirty.iter().any(|&w| w != 0) && !self.pages.poisoned.load(Ordering::Relaxed) {
            // SAFETY: the exclusive latch is held.
            let nvm = unsafe { self.pages.bytes(self.slot) };
            let dirty = |l: usize| Self::is_set(&self.dirty, l);
            let changed = |l: usize| dirty(l) && shadow[l * LINE..(l + 1) * LINE] != nvm[l * LINE..(l + 1) * LINE];
            let write = self.runs(&shadow, changed);
            let log = if self.image_logged { self.runs(&shadow, dirty) } else { write.clone() };
            match self.update_crc(&shadow, nvm, &write) {
                Ok(()) if !log.is_empty() => self.flush_runs(&log, &write),
                Ok(()) => {}
                Err(e) => self.pages.poison(format!("writing the CRC entry of {}: {e}", self.pid)),
            }
        }
        self.pages.give_shadow(shadow);
    }

    /// Step 0 of a write-back (see the module doc): the page's CRC once `write` (runs of
    /// `(first line, new bytes)`) is in place, written with the CRC of the page as it is
    /// now into the slot's entry and persisted, unless unchanged. During redo a slot
    /// whose check was deferred keeps its entry (unless it has none: a page redo
    /// allocated).
    fn update_crc(&self, shadow: &[u8], nvm: &[u8], write: &[(usize, &[u8])]) -> Result<(), BufferError> {
        let pages = self.pages;
        let m = pages.meta(self.slot);
        let state = m.crc_state.load(Ordering::Relaxed);
        if state == CRC_DEFERRED && !matches!(pages.read_entry(self.slot), Ok(None)) {
            return Ok(());
        }
        let ps = pages.page_size;
        // The CRC now: known, or (a slot not checked: being allocated, a page redo
        // allocated, verification off) of the bytes in the slot — not the entry's, which
        // is another incarnation's or none, so that a crash before this write-back's
        // record leaves the page matching the entry's older CRC.
        let now = if state == CRC_KNOWN {
            m.crc.load(Ordering::Relaxed)
        } else {
            pages.charge(self.slot, 0, ps);
            crc32c::crc32c(nvm)
        };
        let new = if self.all_resident() {
            crc32c::crc32c(shadow)
        } else {
            let runs =
                write.iter().map(|&(first, new)| (first * LINE, &nvm[first * LINE..first * LINE + new.len()], new));
            crc_after_runs(now, ps, runs)
        };
        if state == CRC_KNOWN && new == now {
            return Ok(());
        }
        pages.write_entry(self.slot, CrcEntry { crc: new, prev: now })?;
        m.crc.store(new, Ordering::Relaxed);
        m.crc_state.store(CRC_KNOWN, Ordering::Relaxed);
        Ok(())
    }

    /// Every line of the page is in the shadow.
    fn all_resident(&self) -> bool {
        (0..self.lines.div_ceil(64)).all(|w| {
            let bits = if (w + 1) * 64 <= self.lines { u64::MAX } else { (1u64 << (self.lines - w * 64)) - 1 };
            self.resident[w] & bits == bits
        })
    }

    /// Logs `log` (when a log is attached), then writes `write` in place and persists it.
    fn flush_runs(&self, log_runs: &[(usize, &[u8])], runs: &[(usize, &[u8])]) {
        let pages = self.pages;
        let log = pages.log.read().clone();
        if let Some(log) = log {
            match log.log_lines(self.pid, log_runs) {
                Ok(lsn) => {
                    self.pages.meta(self.slot).page_lsn.fetch_max_lsn(lsn, Ordering::Relaxed);
                    pages.counters.images_logged.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    pages.poison(format!("logging lines of {}: {e}", self.pid));
                    return;
                }
            }
        }
        let base = pages.slot_offset(self.slot);
        let mut lines = 0u64;
        for &(first, bytes) in runs {
            let at = base + (first * LINE) as u64;
            // SAFETY: the slot's exclusive latch is held; the run lies inside the slot.
            let r = unsafe { pages.nvm.write_lines_shared(at, bytes) }
                .and_then(|()| pages.nvm.persist(at, bytes.len() as u64));
            if let Err(e) = r {
                pages.poison(format!("writing {} in place: {e}", self.pid));
                return;
            }
            lines += (bytes.len() / LINE) as u64;
        }
        pages.counters.write_backs.fetch_add(1, Ordering::Relaxed);
        pages.counters.lines_written.fetch_add(lines, Ordering::Relaxed);
    }
}

impl Drop for DirectWrite<'_> {
    fn drop(&mut self) {
        self.write_back();
        if let Some(lsn) = self.pending_since.take() {
            self.pages.pending_end(lsn);
        }
        let meta = self.pages.meta(self.slot);
        meta.latch.unlock_exclusive();
    }
}

impl Deref for DirectWrite<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.shadow {
            Some(s) => {
                debug_assert!(self.resident.iter().any(|&w| w != 0), "a whole-page view of a partial shadow");
                s
            }
            // SAFETY: the exclusive latch is held.
            None => unsafe { self.pages.bytes(self.slot) },
        }
    }
}

impl DerefMut for DirectWrite<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.load_all();
        self.set_all(true);
        self.begin_changes();
        self.shadow.as_mut().expect("loaded")
    }
}

impl ExclusivePage for DirectWrite<'_> {
    fn page_id(&self) -> PageId {
        self.pid
    }

    fn mark_dirty(&mut self) {
        self.begin_changes();
    }

    fn wrote(&self) -> bool {
        self.wrote
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        self.pages.meta(self.slot).page_lsn.fetch_max_lsn(lsn, Ordering::Relaxed);
    }

    fn image_logged(&mut self) {
        self.image_logged = true;
    }
}

impl LinePage for DirectWrite<'_> {
    fn page_id(&self) -> PageId {
        self.pid
    }

    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        let Some((first, last)) = self.lines_of(off, len)? else { return Ok(&[]) };
        if !self.any_resident(first, last) {
            self.pages.charge(self.slot, first * LINE, (last + 1 - first) * LINE);
            // SAFETY: the exclusive latch is held.
            return Ok(unsafe { &self.pages.bytes(self.slot)[off..off + len] });
        }
        self.load(first, last);
        Ok(&self.shadow.as_ref().expect("loaded")[off..off + len])
    }

    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        let Some((first, last)) = self.lines_of(off, len)? else { return Ok(&mut []) };
        self.load(first, last);
        for l in first..=last {
            self.dirty[l / 64] |= 1 << (l % 64);
        }
        self.begin_changes();
        Ok(&mut self.shadow.as_mut().expect("loaded")[off..off + len])
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        if self.shadow.is_none() {
            self.pages.charge(self.slot, 0, self.pages.page_size);
            // SAFETY: the exclusive latch is held.
            return Ok(unsafe { self.pages.bytes(self.slot) });
        }
        self.load_all();
        Ok(self.shadow.as_ref().expect("loaded"))
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        Ok(self.deref_mut())
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        ExclusivePage::set_page_lsn(self, lsn);
    }
}

/// A line guard of `nvm-direct`: shared reads in place, or an exclusive shadowed write.
// The exclusive guard's line masks make it large; guards live on the stack for one
// access, and boxing would allocate on every fix.
#[allow(clippy::large_enum_variant)]
pub enum DirectLines<'a> {
    /// Fixed shared: reads come from NVM in place, writes fail with `NeedsExclusive`.
    Shared(DirectRead<'a>),
    /// Fixed exclusive: reads and writes go through the guard's shadow.
    Exclusive(DirectWrite<'a>),
}

impl LinePage for DirectLines<'_> {
    fn page_id(&self) -> PageId {
        match self {
            DirectLines::Shared(r) => r.pid,
            DirectLines::Exclusive(w) => w.pid,
        }
    }

    fn read(&mut self, off: usize, len: usize) -> Result<&[u8], BufferError> {
        match self {
            DirectLines::Shared(r) => {
                let Some((first, last)) = lines_of(r.pid, r.pages.page_size, off, len)? else { return Ok(&[]) };
                r.pages.charge(r.slot, first * LINE, (last + 1 - first) * LINE);
                // SAFETY: the shared latch is held.
                Ok(unsafe { &r.pages.bytes(r.slot)[off..off + len] })
            }
            DirectLines::Exclusive(w) => w.read(off, len),
        }
    }

    fn write(&mut self, off: usize, len: usize) -> Result<&mut [u8], BufferError> {
        match self {
            DirectLines::Shared(r) => Err(BufferError::NeedsExclusive { pid: r.pid }),
            DirectLines::Exclusive(w) => w.write(off, len),
        }
    }

    fn whole(&mut self) -> Result<&[u8], BufferError> {
        match self {
            DirectLines::Shared(r) => Ok(&**r),
            DirectLines::Exclusive(w) => w.whole(),
        }
    }

    fn whole_mut(&mut self) -> Result<&mut [u8], BufferError> {
        match self {
            DirectLines::Shared(r) => Err(BufferError::NeedsExclusive { pid: r.pid }),
            DirectLines::Exclusive(w) => w.whole_mut(),
        }
    }

    fn set_page_lsn(&mut self, lsn: Lsn) {
        if let DirectLines::Exclusive(w) = self {
            ExclusivePage::set_page_lsn(w, lsn);
        }
    }
}
