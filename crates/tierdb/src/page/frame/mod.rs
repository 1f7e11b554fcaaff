//! DRAM frames: the frame memory, each frame's metadata, and the page guards.
//!
//! A [`FramePool`] carves a [`DramArena`] into equal frames. Each frame has a
//! [`FrameMeta`]: its latch, the page it holds, a dirty bit, a reference bit for clock
//! replacement and the NVM frame that backs it (if any). Guards are created only by
//! taking the frame's latch here, so holding a guard proves the latch is held:
//!
//! - [`FrameRead`] holds the latch shared and derefs to the frame's bytes;
//! - [`FrameWrite`] holds it exclusive, derefs mutably and marks the frame dirty when
//!   written through; dropping it publishes the dirty bit, bumps the frame's version and
//!   releases the latch;
//! - [`FrameOptimistic`] holds nothing: it records the frame's version, and its bytes may
//!   change under it. Whatever is read through it counts only once
//!   [`validate`](FrameOptimistic::validate) confirms that no writer held or took the
//!   frame meanwhile (a seqlock: the version changes with every exclusive hold, and a
//!   writer marks the latch exclusive before its first store). Readers of inner B+-tree
//!   nodes use it so that threads walking the same upper levels do not bounce the
//!   latches' cache lines between cores.
//!
//! Metadata other than the latch (`pid`, `nvm`) changes only under the exclusive latch;
//! it is kept in atomics so that racy readers (the clock hand, a fixer validating a
//! page-table hit) can look at it without undefined behaviour, and must re-check it
//! after taking the latch.

#![allow(unsafe_code)]

pub(crate) mod cpu_cache;
pub(crate) mod in_place;
pub(crate) mod lines;
mod mini;

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering, fence};

use super::latch::Latch;
use super::source::{ExclusivePage, OptimisticPage, SharedPage};
use crate::device::DramArena;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::CACHE_LINE_BYTES;

/// Index of a DRAM frame in its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(u32);

impl FrameId {
    /// Frame `i` of a pool. `u32::MAX` is never a frame: the metadata uses it for "none"
    /// (`NO_PARENT`, and a swip's frame bits).
    #[inline]
    pub const fn new(i: u32) -> FrameId {
        debug_assert!(i != u32::MAX, "u32::MAX is no frame index");
        FrameId(i)
    }

    /// Frame `i` of a pool, from an index into it.
    #[inline]
    pub fn from_index(i: usize) -> FrameId {
        debug_assert!(i < u32::MAX as usize, "frame index {i} does not fit a frame id");
        FrameId(i as u32)
    }

    /// The frame's number.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The frame's index into its pool.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// `FrameMeta::pid` of a frame that holds no page.
pub const NO_PAGE: u64 = u64::MAX;
/// `FrameMeta::nvm` of a frame whose page has no NVM copy.
pub const NO_NVM_FRAME: u32 = NvmSlot::NONE_RAW;
/// `FrameMeta::pid` of a frame lent to mini pages (a block of them; see [`mini`]).
pub const MINI_BLOCK: u64 = u64::MAX - 1;
/// `FrameMeta::parent` of a frame whose page no inner node references by frame.
pub const NO_PARENT: u32 = u32::MAX;

/// What the buffer manager knows of one DRAM frame. One cache line each, so that a
/// latch taken on one frame does not invalidate its neighbours' lines on other cores
/// (a parent and its children are often allocated side by side).
#[derive(Debug)]
#[repr(align(64))]
pub struct FrameMeta {
    /// The frame's latch: guards are made only by taking it.
    pub latch: Latch,
    /// The page held, or [`NO_PAGE`] (free), or [`MINI_BLOCK`] (lent to mini pages).
    pub pid: AtomicU64,
    /// The bytes differ from every lower tier's copy.
    pub dirty: AtomicBool,
    /// Set on every fix; cleared by the clock hand (second chance).
    pub referenced: AtomicBool,
    /// The NVM frame holding this page's older copy, as a raw [`NvmSlot`], or
    /// [`NO_NVM_FRAME`]; read and set through [`nvm_slot`](Self::nvm_slot) and
    /// [`set_nvm_slot`](Self::set_nvm_slot).
    pub nvm: AtomicU32,
    /// Every line of the page is in the frame (the paper's `r` bit). Always true for
    /// pages that came from SSD or were allocated; an NVM-backed page loaded
    /// cache-line-grained starts false and the resident mask says which lines are here.
    pub resident_all: AtomicBool,
    /// Pointer swizzling: the frame of the inner node that references this page by
    /// frame, or [`NO_PARENT`]; changed only under the parent's exclusive latch.
    pub parent: AtomicU32,
    /// Where in the parent's page the 8-byte reference lies.
    pub parent_offset: AtomicU16,
    /// Children this page references by frame; a page with any is not evicted.
    pub swizzled_children: AtomicU16,
    /// LSN of the last logged change to the page: the WAL is forced up to it before the
    /// page is written to NVM or SSD (the write-ahead rule).
    pub page_lsn: AtomicU64,
    /// LSN of the first logged change since the page was last clean in this frame (0:
    /// none): `nvsql`'s first-update LSN, from which its re-update interval runs.
    pub first_lsn: AtomicU64,
    /// The last-flush LSN in the seal of the SSD copy the page was read from (0:
    /// unknown, or not read from SSD): `nvsql`'s interval after a restart.
    pub flush_lsn: AtomicU64,
}

// One cache line a frame: a lookup that fixes a node not in the CPU caches misses on
// its metadata once, and the metadata of every frame in use takes half the cache it
// took at two lines.
const _: () = assert!(std::mem::size_of::<FrameMeta>() == CACHE_LINE_BYTES);
// Offsets into a page and counts of 8-byte references in one fit 16 bits.
const _: () = assert!(crate::limits::PAGE_SIZE_MAX_BYTES <= u16::MAX as usize + 1);

impl FrameMeta {
    fn new() -> FrameMeta {
        FrameMeta {
            latch: Latch::new(),
            pid: AtomicU64::new(NO_PAGE),
            dirty: AtomicBool::new(false),
            referenced: AtomicBool::new(false),
            nvm: AtomicU32::new(NO_NVM_FRAME),
            resident_all: AtomicBool::new(true),
            parent: AtomicU32::new(NO_PARENT),
            parent_offset: AtomicU16::new(0),
            swizzled_children: AtomicU16::new(0),
            page_lsn: AtomicU64::new(0),
            first_lsn: AtomicU64::new(0),
            flush_lsn: AtomicU64::new(0),
        }
    }

    /// A change logged at `lsn` was made to the page: raises the page LSN, and sets the
    /// first-update LSN if the page had none since it was last clean.
    #[inline]
    pub fn note_lsn(&self, lsn: Lsn) {
        self.page_lsn.fetch_max_lsn(lsn, Ordering::Relaxed);
        if !lsn.is_none() && self.first_lsn.load_lsn(Ordering::Relaxed).is_none() {
            let none = Lsn::NONE.get();
            let _ = self.first_lsn.compare_exchange(none, lsn.get(), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The NVM frame holding this page's older copy ([`nvm`](Self::nvm)), if any.
    #[inline]
    pub fn nvm_slot(&self) -> Option<NvmSlot> {
        NvmSlot::from_raw(self.nvm.load(Ordering::Relaxed))
    }

    /// Sets [`nvm`](Self::nvm): the NVM frame holding this page's older copy, or none.
    #[inline]
    pub fn set_nvm_slot(&self, slot: Option<NvmSlot>) {
        self.nvm.store(NvmSlot::raw(slot), Ordering::Relaxed);
    }

    /// The raw page id held, or [`NO_PAGE`] or [`MINI_BLOCK`]; racy unless the latch
    /// is held (re-check after taking it).
    #[inline]
    pub fn pid(&self) -> u64 {
        self.pid.load(Ordering::Relaxed)
    }

    /// True if the frame holds a page (not free, not a block of mini pages).
    #[inline]
    pub fn holds_page(&self) -> bool {
        let p = self.pid();
        p != NO_PAGE && p != MINI_BLOCK
    }

    /// Sets the reference bit, writing only when it is clear so that hot frames do not
    /// bounce their cache line between cores.
    #[inline]
    pub fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }
}

/// The DRAM frames of one buffer pool.
pub struct FramePool {
    arena: DramArena,
    base: NonNull<u8>,
    frame_bytes: usize,
    metas: Box<[FrameMeta]>,
    /// 64-bit words of one frame's line mask.
    mask_words: usize,
    /// Per frame: which lines are in DRAM (meaningful while `resident_all` is false).
    resident: Box<[AtomicU64]>,
    /// Per frame: lines written since the page came from NVM (cache-line-grained
    /// write-back); whole-page writes set `FrameMeta::dirty` instead.
    dirty_lines: Box<[AtomicU64]>,
    /// Mini pages carved out of frames (empty unless enabled).
    minis: mini::MiniPool,
}

/// Which of a frame's line masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Lines present in DRAM (meaningful while `FrameMeta::resident_all` is false).
    Resident,
    /// Lines written since the page came from NVM, to be written back line by line.
    Dirty,
}

// SAFETY: the frame memory behind `base` is owned by `arena` for the pool's lifetime;
// every access to it goes through a guard that holds the frame's latch, which makes
// concurrent access from several threads data-race free.
unsafe impl Send for FramePool {}
// SAFETY: as above.
unsafe impl Sync for FramePool {}

impl FramePool {
    /// Carves `arena` into frames of its frame size, all free; no mini pages.
    ///
    /// # Panics
    /// If the arena has `u32::MAX` frames or more.
    pub fn new(arena: DramArena) -> FramePool {
        FramePool::with_minis(arena, false)
    }

    /// A pool whose frames can also be lent to mini pages (`minis`).
    ///
    /// # Panics
    /// If the arena has `u32::MAX` frames or more.
    pub fn with_minis(arena: DramArena, minis: bool) -> FramePool {
        let frame_bytes = arena.frame_bytes();
        let count = arena.frame_count();
        assert!(count < NO_PARENT as usize, "{count} frames do not fit a frame id");
        let base = NonNull::new(arena.base_ptr()).expect("a mapped arena has a non-null base");
        let metas = (0..count).map(|_| FrameMeta::new()).collect();
        let mask_words = (frame_bytes / CACHE_LINE_BYTES).div_ceil(64);
        let masks = || (0..count * mask_words).map(|_| AtomicU64::new(0)).collect();
        let minis = mini::MiniPool::new(if minis { count } else { 0 }, frame_bytes);
        FramePool { arena, base, frame_bytes, metas, mask_words, resident: masks(), dirty_lines: masks(), minis }
    }

    /// Lines per page.
    #[inline]
    pub fn lines(&self) -> usize {
        self.frame_bytes / CACHE_LINE_BYTES
    }

    /// The mini pages carved out of this pool's frames (none unless built
    /// [`with_minis`](Self::with_minis)).
    pub fn minis(&self) -> &mini::MiniPool {
        &self.minis
    }

    #[inline]
    fn mask(&self, which: Mask, f: FrameId) -> &[AtomicU64] {
        let a = match which {
            Mask::Resident => &self.resident,
            Mask::Dirty => &self.dirty_lines,
        };
        let s = f.0 as usize * self.mask_words;
        &a[s..s + self.mask_words]
    }

    /// True if every line `first..=last` is set in frame `f`'s mask.
    #[inline]
    pub fn all_set(&self, which: Mask, f: FrameId, first: usize, last: usize) -> bool {
        let m = self.mask(which, f);
        (first..=last).all(|l| m[l / 64].load(Ordering::Relaxed) & (1 << (l % 64)) != 0)
    }

    /// Sets lines `first..=last` in frame `f`'s mask (under its exclusive latch).
    pub fn set_lines(&self, which: Mask, f: FrameId, first: usize, last: usize) {
        let m = self.mask(which, f);
        for l in first..=last {
            m[l / 64].fetch_or(1 << (l % 64), Ordering::Relaxed);
        }
    }

    /// Clears frame `f`'s mask.
    pub fn clear_mask(&self, which: Mask, f: FrameId) {
        for w in self.mask(which, f) {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// Lines set in frame `f`'s mask.
    pub fn count_set(&self, which: Mask, f: FrameId) -> usize {
        self.mask(which, f).iter().map(|w| w.load(Ordering::Relaxed).count_ones() as usize).sum()
    }

    /// Runs of consecutive lines in `first..=last` whose bit in frame `f`'s mask is
    /// `set`, as `(first line, lines)`.
    pub fn runs(&self, which: Mask, f: FrameId, first: usize, last: usize, set: bool) -> Vec<(usize, usize)> {
        let m = self.mask(which, f);
        let mut out: Vec<(usize, usize)> = Vec::new();
        for l in first..=last {
            if (m[l / 64].load(Ordering::Relaxed) & (1 << (l % 64)) != 0) == set {
                match out.last_mut() {
                    Some((s, n)) if *s + *n == l => *n += 1,
                    _ => out.push((l, 1)),
                }
            }
        }
        out
    }

    /// Number of frames (the arena's size over the frame size).
    #[inline]
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    /// True if the arena holds no whole frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Bytes per frame (the page size).
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// The DRAM arena the frames are carved from.
    pub fn arena(&self) -> &DramArena {
        &self.arena
    }

    /// Frame `f`'s metadata.
    ///
    /// # Panics
    /// If `f` is not a frame of this pool.
    #[inline]
    pub fn meta(&self, f: FrameId) -> &FrameMeta {
        &self.metas[f.0 as usize]
    }

    /// Starts loading frame `f`'s first cache line (a B+-tree node's header) into the
    /// CPU caches, so that its miss overlaps the miss on the frame's metadata, which an
    /// optimistic fix checks first: a descent would otherwise wait for the two one after
    /// the other at every level. A hint: it reads nothing and changes nothing.
    #[inline(always)]
    pub fn prefetch(&self, f: FrameId) {
        if (f.0 as usize) < self.metas.len() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint that neither faults nor reads architecturally;
            // the address is inside the arena (`f` checked just above).
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(self.data(f).as_ptr().cast());
            }
        }
    }

    #[inline]
    fn data(&self, f: FrameId) -> NonNull<u8> {
        debug_assert!((f.0 as usize) < self.metas.len());
        // SAFETY: `f` indexes a frame of the arena (bounds checked by `metas[f]` at
        // every caller), so the offset stays inside the mapping.
        unsafe { self.base.add(f.0 as usize * self.frame_bytes) }
    }

    /// The data area of mini page `i` (inside its block's frame).
    #[inline]
    fn mini_data(&self, i: u32) -> NonNull<u8> {
        let per = self.minis.per_block();
        let f = self.minis.block_of(i);
        // SAFETY: mini page `i` lies inside frame `f` (`per_block` of them fill it).
        unsafe { self.data(f).add((i as usize % per) * mini::MINI_BYTES) }
    }

    /// Copies frame `f`'s line range `off..off + dst.len()` out (for writing dirty
    /// lines back). The caller holds the frame's latch and the lines are resident.
    pub fn copy_lines_out(&self, f: FrameId, off: usize, dst: &mut [u8]) {
        assert!(off + dst.len() <= self.frame_bytes);
        // SAFETY: inside frame `f`; the caller's latch excludes writers.
        unsafe { std::ptr::copy_nonoverlapping(self.data(f).add(off).as_ptr(), dst.as_mut_ptr(), dst.len()) };
    }

    /// Copies mini page `i`'s slot `k` (one line) out. The caller holds its latch.
    pub fn copy_mini_line_out(&self, i: u32, k: usize, dst: &mut [u8]) {
        assert!(k < mini::MINI_SLOTS && dst.len() == CACHE_LINE_BYTES);
        // SAFETY: slot `k` of mini page `i`; the caller's latch excludes writers.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.mini_data(i).add(k * CACHE_LINE_BYTES).as_ptr(),
                dst.as_mut_ptr(),
                CACHE_LINE_BYTES,
            );
        }
    }

    /// Reads 8 bytes (little endian) at `off` of frame `f`: a child reference, for
    /// pointer swizzling. The caller holds the frame's latch.
    pub fn read_ref(&self, f: FrameId, off: usize) -> u64 {
        let mut b = [0u8; 8];
        self.copy_lines_out(f, off, &mut b);
        u64::from_le_bytes(b)
    }

    /// Writes 8 bytes (little endian) at `off` of frame `f`: a child reference being
    /// swizzled or unswizzled. The caller holds the frame's exclusive latch (raw, not
    /// through a guard: the page's contents do not change meaning, so it is not dirty).
    pub fn write_ref(&self, f: FrameId, off: usize, v: u64) {
        debug_assert!(self.meta(f).latch.is_exclusive(), "write_ref to frame {f:?} not held exclusive");
        assert!(off + 8 <= self.frame_bytes);
        // SAFETY: inside frame `f`, whose exclusive latch the caller holds.
        unsafe { std::ptr::copy_nonoverlapping(v.to_le_bytes().as_ptr(), self.data(f).add(off).as_ptr(), 8) };
    }

    /// Takes mini page `i` exclusive if no one holds it.
    pub fn try_write_mini(&self, i: u32) -> bool {
        self.minis.meta(i).latch.try_exclusive()
    }

    /// Releases mini page `i` taken with [`try_write_mini`](Self::try_write_mini).
    pub fn unlock_mini(&self, i: u32) {
        self.minis.meta(i).latch.unlock_exclusive_unchanged();
    }

    /// Takes frame `f` shared if no writer holds it.
    #[inline]
    pub fn try_read(&self, f: FrameId) -> Option<FrameRead<'_>> {
        let meta = self.meta(f);
        meta.latch.try_shared().then(|| FrameRead::new(self, f))
    }

    /// Takes frame `f` shared, waiting for a writer to leave.
    #[inline]
    pub fn read(&self, f: FrameId) -> FrameRead<'_> {
        self.meta(f).latch.shared();
        FrameRead::new(self, f)
    }

    /// Reads frame `f` optimistically, if no writer holds it now.
    #[inline]
    pub fn try_optimistic(&self, f: FrameId) -> Option<FrameOptimistic<'_>> {
        let meta = self.meta(f);
        meta.latch.optimistic().map(|version| FrameOptimistic { at: At::new(self, f), version })
    }

    /// Takes frame `f` exclusive if no one holds it.
    #[inline]
    pub fn try_write(&self, f: FrameId) -> Option<FrameWrite<'_>> {
        let meta = self.meta(f);
        meta.latch.try_exclusive().then(|| FrameWrite::new(self, f))
    }

    /// Takes frame `f` exclusive, waiting for every holder to leave.
    #[inline]
    pub fn write(&self, f: FrameId) -> FrameWrite<'_> {
        self.meta(f).latch.exclusive();
        FrameWrite::new(self, f)
    }
}

/// Where a guard points: a frame of a pool. Every guard holds one.
#[derive(Clone, Copy)]
struct At<'a> {
    pool: &'a FramePool,
    frame: FrameId,
    data: NonNull<u8>,
    _not_send: PhantomData<*const u8>,
}

impl<'a> At<'a> {
    #[inline]
    fn new(pool: &'a FramePool, frame: FrameId) -> At<'a> {
        At { pool, frame, data: pool.data(frame), _not_send: PhantomData }
    }

    #[inline]
    fn meta(&self) -> &'a FrameMeta {
        self.pool.meta(self.frame)
    }

    /// # Safety
    /// No one writes the frame while the slice lives, or the caller tolerates torn
    /// bytes and never writes through it (optimistic reads).
    #[inline]
    unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: one frame of the arena, mapped for the pool's lifetime; the caller
        // upholds the aliasing rule above.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.pool.frame_bytes) }
    }

    /// # Safety
    /// The caller holds the frame's exclusive latch for the slice's life.
    #[inline]
    unsafe fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: one frame of the arena; exclusive per the caller's latch.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.pool.frame_bytes) }
    }
}

/// A frame held shared.
pub struct FrameRead<'a> {
    at: At<'a>,
}

impl<'a> FrameRead<'a> {
    #[inline]
    fn new(pool: &'a FramePool, frame: FrameId) -> FrameRead<'a> {
        FrameRead { at: At::new(pool, frame) }
    }

    /// The frame this guard points at.
    #[inline]
    pub fn frame(&self) -> FrameId {
        self.at.frame
    }

    /// The frame's metadata (its page id, dirty bit, LSNs).
    #[inline]
    pub fn meta(&self) -> &'a FrameMeta {
        self.at.meta()
    }
}

impl Deref for FrameRead<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the shared latch is held for the guard's life, so no writer exists.
        unsafe { self.at.bytes() }
    }
}

impl Drop for FrameRead<'_> {
    #[inline]
    fn drop(&mut self) {
        self.meta().latch.unlock_shared();
    }
}

impl SharedPage for FrameRead<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        PageId(self.meta().pid())
    }
}

/// A frame held exclusive.
pub struct FrameWrite<'a> {
    at: At<'a>,
    dirty: bool,
}

impl<'a> FrameWrite<'a> {
    #[inline]
    fn new(pool: &'a FramePool, frame: FrameId) -> FrameWrite<'a> {
        // The exclusive mark (taken by the caller) must be visible before any of this
        // guard's stores to an optimistic reader who sees one of those stores.
        fence(Ordering::Release);
        FrameWrite { at: At::new(pool, frame), dirty: false }
    }

    /// Ends the exclusive hold and keeps reading optimistically.
    #[inline]
    pub fn into_optimistic(self) -> FrameOptimistic<'a> {
        let this = std::mem::ManuallyDrop::new(self);
        let meta = this.meta();
        if this.dirty {
            meta.dirty.store(true, Ordering::Relaxed);
        }
        let version = meta.latch.unlock_exclusive_versioned();
        FrameOptimistic { at: this.at, version }
    }

    /// The frame this guard points at.
    #[inline]
    pub fn frame(&self) -> FrameId {
        self.at.frame
    }

    /// The frame's metadata (its page id, dirty bit, LSNs).
    #[inline]
    pub fn meta(&self) -> &'a FrameMeta {
        self.at.meta()
    }

    /// The frame's bytes for filling from a lower tier: does not mark the page dirty.
    #[inline]
    pub fn bytes_for_load(&mut self) -> &mut [u8] {
        // SAFETY: the exclusive latch is held for the guard's life.
        unsafe { self.at.bytes_mut() }
    }

    /// Gives up the guard but keeps the exclusive latch held: the caller (a line guard
    /// taking over a promoted mini page's new frame) releases it.
    pub(crate) fn into_held(self) -> FrameId {
        let this = std::mem::ManuallyDrop::new(self);
        debug_assert!(!this.dirty, "a guard handed over after writing");
        this.at.frame
    }

    /// True if this guard wrote to the frame.
    pub fn wrote(&self) -> bool {
        self.dirty
    }

    /// Forgets that this guard wrote (after the bytes were written back).
    pub fn clear_wrote(&mut self) {
        self.dirty = false;
    }

    /// Keeps the latch but turns it shared.
    #[inline]
    pub fn downgrade(self) -> FrameRead<'a> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.dirty {
            this.meta().dirty.store(true, Ordering::Relaxed);
        }
        this.meta().latch.downgrade();
        FrameRead { at: this.at }
    }
}

impl Deref for FrameWrite<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the exclusive latch is held for the guard's life.
        unsafe { self.at.bytes() }
    }
}

impl DerefMut for FrameWrite<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.dirty = true;
        self.bytes_for_load()
    }
}

impl Drop for FrameWrite<'_> {
    #[inline]
    fn drop(&mut self) {
        let meta = self.meta();
        if self.dirty {
            meta.dirty.store(true, Ordering::Relaxed);
        }
        meta.latch.unlock_exclusive();
    }
}

/// A frame read optimistically: no latch held; see the module doc.
pub struct FrameOptimistic<'a> {
    at: At<'a>,
    version: u64,
}

impl<'a> FrameOptimistic<'a> {
    /// The frame this guard points at.
    #[inline]
    pub fn frame(&self) -> FrameId {
        self.at.frame
    }

    /// The frame's version when this read began.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The frame's metadata; like the bytes, it may change under an optimistic read.
    #[inline]
    pub fn meta(&self) -> &'a FrameMeta {
        self.at.meta()
    }
}

impl Deref for FrameOptimistic<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: a writer may change these bytes while they are read (the seqlock
        // pattern): the reader may see a mix of old and new bytes, never acts on them
        // before `validate`, and never writes through this view. The memory stays
        // mapped and initialised, and any value is a valid `u8`.
        unsafe { self.at.bytes() }
    }
}

impl OptimisticPage for FrameOptimistic<'_> {
    #[inline]
    fn validate(&self) -> bool {
        // Order the reads of the bytes before the re-reads of latch and version.
        fence(Ordering::Acquire);
        let meta = self.meta();
        meta.latch.validate(self.version)
    }
}

impl ExclusivePage for FrameWrite<'_> {
    #[inline]
    fn page_id(&self) -> PageId {
        PageId(self.meta().pid())
    }

    #[inline]
    fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    #[inline]
    fn wrote(&self) -> bool {
        self.dirty
    }

    #[inline]
    fn set_page_lsn(&mut self, lsn: Lsn) {
        self.meta().note_lsn(lsn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DramConfig;
    use crate::size::ByteSize;

    fn pool(frames: u64) -> FramePool {
        let mut cfg = DramConfig::new(ByteSize(frames * 4096));
        cfg.frame_bytes = 4096;
        FramePool::new(DramArena::new(&cfg).unwrap())
    }

    #[test]
    fn guards_exclude_and_publish_dirty() {
        let p = pool(4);
        let f = FrameId(2);
        {
            let mut w = p.try_write(f).unwrap();
            assert!(p.try_read(f).is_none());
            w.bytes_for_load()[0] = 1;
            assert!(!w.wrote());
        }
        assert!(!p.meta(f).dirty.load(Ordering::Relaxed));
        {
            let mut w = p.write(f);
            w[1] = 7;
            let r = w.downgrade();
            assert_eq!(&r[..2], &[1, 7]);
            assert!(p.try_write(f).is_none());
            let r2 = p.try_read(f).unwrap();
            assert_eq!(r2.len(), 4096);
        }
        assert!(p.meta(f).dirty.load(Ordering::Relaxed));
        assert!(!p.meta(f).latch.is_held());
    }
}
