//! Mini pages (three-tier paper §3.2): DRAM frames of [`MINI_SLOTS`] cache lines for
//! NVM-backed pages of which only a few lines are hot.
//!
//! A mini page holds up to 16 of its page's lines in a 1 KiB data area. Its slot map
//! names the line held in each slot and is kept sorted by line, so lines that are
//! consecutive in the page are consecutive in the mini page and a range of them is
//! one contiguous slice. When an access needs more lines than fit, the page is
//! promoted to a full frame ([`super::lines`]).
//!
//! DRAM is accounted in bytes: mini pages live in *blocks*, full frames lent out and
//! cut into `frame bytes / 1 KiB` mini pages (16 for 16 KiB pages), so a block costs
//! exactly one frame of the pool and sixteen mini pages fit where one page would. A
//! block whose last mini page leaves is given back as a full frame. The metadata of
//! each mini page (latch, page id, page LSN, NVM frame, slot map, dirty mask — one cache
//! line) lives in an array beside the frames' metadata, like theirs.
//!
//! Concurrency: a mini page's latch protects its data and slot map as a frame latch
//! does; the slot map and count change only under the exclusive latch. Allocation and
//! block bookkeeping take one mutex (a page load, not the hit path).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{FrameId, NO_NVM_FRAME, NO_PAGE};
use crate::ids::NvmSlot;
use crate::limits::CACHE_LINE_BYTES;
use crate::page::latch::Latch;

/// Lines a mini page holds.
pub const MINI_SLOTS: usize = 16;
/// Bytes of a mini page's data area.
pub const MINI_BYTES: usize = MINI_SLOTS * CACHE_LINE_BYTES;

/// One mini page's metadata: one cache line.
#[derive(Debug)]
#[repr(align(64))]
pub struct MiniMeta {
    /// The mini page's latch: protects its data area and slot map.
    pub latch: Latch,
    /// The page held, or [`NO_PAGE`].
    pub pid: AtomicU64,
    /// LSN of the last logged change to the page (the WAL is forced up to it before
    /// the page's lines are written back).
    pub page_lsn: AtomicU64,
    /// The NVM frame of the page (a mini page always has one), as a raw [`NvmSlot`];
    /// read and set through [`nvm_slot`](Self::nvm_slot) and
    /// [`set_nvm_slot`](Self::set_nvm_slot).
    pub nvm: AtomicU32,
    /// Set on every fix; cleared by the clock hand when it visits the mini page's block
    /// (second chance).
    pub referenced: AtomicBool,
    /// Slots in use: slots `0..count` hold lines `slots[0] < slots[1] < ...`.
    pub count: AtomicU8,
    /// Slots written since the page came from NVM.
    pub dirty: AtomicU16,
    /// The page line held in each slot.
    pub slots: [AtomicU16; MINI_SLOTS],
}

const _: () = assert!(std::mem::size_of::<MiniMeta>() == CACHE_LINE_BYTES);

impl MiniMeta {
    /// The NVM frame of the page ([`nvm`](Self::nvm)), if any.
    #[inline]
    pub fn nvm_slot(&self) -> Option<NvmSlot> {
        NvmSlot::from_raw(self.nvm.load(Ordering::Relaxed))
    }

    /// Sets [`nvm`](Self::nvm): the NVM frame of the page, or none.
    #[inline]
    pub fn set_nvm_slot(&self, slot: Option<NvmSlot>) {
        self.nvm.store(NvmSlot::raw(slot), Ordering::Relaxed);
    }

    fn new() -> MiniMeta {
        MiniMeta {
            latch: Latch::new(),
            pid: AtomicU64::new(NO_PAGE),
            page_lsn: AtomicU64::new(0),
            nvm: AtomicU32::new(NO_NVM_FRAME),
            referenced: AtomicBool::new(false),
            count: AtomicU8::new(0),
            dirty: AtomicU16::new(0),
            slots: std::array::from_fn(|_| AtomicU16::new(0)),
        }
    }

    /// The raw page id held, or [`NO_PAGE`]; racy unless the latch is held.
    #[inline]
    pub fn pid(&self) -> u64 {
        self.pid.load(Ordering::Relaxed)
    }

    /// Slots in use, 0 to [`MINI_SLOTS`].
    #[inline]
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed) as usize
    }

    /// The page lines held, ascending (the slot map's first [`count`](Self::count)
    /// entries).
    pub fn lines(&self) -> Vec<usize> {
        (0..self.count()).map(|k| self.slots[k].load(Ordering::Relaxed) as usize).collect()
    }

    /// The slot holding line `line`, if any (the map is sorted; at most 16 entries).
    #[inline]
    pub fn slot_of(&self, line: usize) -> Option<usize> {
        (0..self.count()).find(|&k| self.slots[k].load(Ordering::Relaxed) as usize == line)
    }

    /// Sets the reference bit, writing only when it is clear (as
    /// [`FrameMeta::touch`](super::FrameMeta::touch) does).
    #[inline]
    pub fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }

    /// Forgets the page (under the exclusive latch, before the slot is freed).
    pub fn clear(&self) {
        self.pid.store(NO_PAGE, Ordering::Relaxed);
        self.set_nvm_slot(None);
        self.count.store(0, Ordering::Relaxed);
        self.dirty.store(0, Ordering::Relaxed);
        self.referenced.store(false, Ordering::Relaxed);
        self.page_lsn.store(0, Ordering::Relaxed);
    }
}

/// Free mini pages and the blocks they are cut from.
#[derive(Debug, Default)]
struct Blocks {
    /// Mini pages in use per frame (0 for frames that are not blocks).
    used: Vec<u16>,
    /// Free mini pages of blocks, as indices.
    free: Vec<u32>,
}

/// The mini pages of a frame pool.
#[derive(Debug)]
pub struct MiniPool {
    metas: Box<[MiniMeta]>,
    per_block: usize,
    blocks: Mutex<Blocks>,
}

impl MiniPool {
    /// Room for mini pages in any of `frames` frames of `frame_bytes` (0: disabled).
    pub fn new(frames: usize, frame_bytes: usize) -> MiniPool {
        let per_block = frame_bytes / MINI_BYTES;
        MiniPool {
            metas: (0..frames * per_block).map(|_| MiniMeta::new()).collect(),
            per_block,
            blocks: Mutex::new(Blocks { used: vec![0; frames], free: Vec::new() }),
        }
    }

    /// True if the pool was built with mini pages on.
    pub fn enabled(&self) -> bool {
        !self.metas.is_empty()
    }

    /// Mini pages there is metadata for: every frame's worth, carved into blocks or not
    /// (0 when disabled).
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    /// True when disabled (no mini page can exist).
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Mini pages cut from one frame: frame bytes / [`MINI_BYTES`] (16 for 16 KiB pages).
    pub fn per_block(&self) -> usize {
        self.per_block
    }

    /// Mini page `i`'s metadata.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline]
    pub fn meta(&self, i: u32) -> &MiniMeta {
        &self.metas[i as usize]
    }

    /// The block (frame) mini page `i` is cut from.
    #[inline]
    pub fn block_of(&self, i: u32) -> FrameId {
        FrameId((i as usize / self.per_block) as u32)
    }

    /// The mini pages of block `f`.
    pub fn of_block(&self, f: FrameId) -> std::ops::Range<u32> {
        let s = f.0 * self.per_block as u32;
        s..s + self.per_block as u32
    }

    /// Takes a free mini page, if any block has one. The caller latches it.
    pub fn pop(&self) -> Option<u32> {
        let mut b = self.blocks.lock();
        let i = b.free.pop()?;
        let f = self.block_of(i).0 as usize;
        b.used[f] += 1;
        Some(i)
    }

    /// Makes frame `f` (free, held exclusive by the caller, to be marked a block) a
    /// block of mini pages and returns one of them, taken.
    pub fn add_block(&self, f: FrameId) -> u32 {
        let mut b = self.blocks.lock();
        debug_assert_eq!(b.used[f.0 as usize], 0);
        let r = self.of_block(f);
        let first = r.start;
        b.free.extend(r.skip(1).rev());
        b.used[f.0 as usize] = 1;
        first
    }

    /// Gives mini page `i` back (cleared, unlatched). Returns its block if that was the
    /// block's last mini page in use: the caller gives the frame back to the pool.
    pub fn push(&self, i: u32) -> Option<FrameId> {
        let mut b = self.blocks.lock();
        let f = self.block_of(i);
        debug_assert!(b.used[f.0 as usize] > 0, "mini page {i} freed twice");
        b.used[f.0 as usize] -= 1;
        if b.used[f.0 as usize] > 0 {
            b.free.push(i);
            return None;
        }
        let r = self.of_block(f);
        b.free.retain(|j| !r.contains(j));
        Some(f)
    }

    /// Mini pages in use in block `f`.
    pub fn used_in(&self, f: FrameId) -> usize {
        self.blocks.lock().used[f.0 as usize] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_lent_and_given_back_whole() {
        let p = MiniPool::new(4, 16 * 1024);
        assert_eq!(p.per_block(), 16);
        assert_eq!(p.pop(), None);
        let a = p.add_block(FrameId(2));
        assert_eq!(p.block_of(a), FrameId(2));
        let taken: Vec<u32> = (0..15).map(|_| p.pop().unwrap()).collect();
        assert_eq!(p.pop(), None, "a block holds 16");
        assert_eq!(p.used_in(FrameId(2)), 16);
        for i in &taken {
            assert_eq!(p.push(*i), None);
        }
        assert_eq!(p.push(a), Some(FrameId(2)), "the last one frees the block");
        assert_eq!(p.pop(), None, "a freed block's mini pages are gone");
    }
}
