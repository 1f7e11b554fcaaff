//! The combined page table: where each page is, DRAM or NVM, in one word.
//!
//! The paper (§4.3) keeps one hash table for DRAM- and NVM-resident pages so that a
//! page found in neither costs one lookup, not two. We keep the same single mapping but
//! index it directly by page id: a two-level array of `AtomicU64` entries (a directory
//! of lazily created chunks), so a lookup is two dependent loads and no hashing, no
//! probing and no lock. It costs 8 bytes per page of the database (0.05% of a 16 KiB
//! page) for the chunks that hold allocated pages.
//!
//! Entry layout:
//!
//! ```text
//!   63 62 | 61 ..................... 0
//!   0  0  | 0                           EMPTY: on SSD only (or not allocated)
//!   0  0  | 1                           FREE: freed (on the free list); reads as EMPTY
//!   0  1  | DRAM frame index            in DRAM (its NVM copy, if any, is in the frame's metadata)
//!   1  0  | NVM frame index             in NVM only
//!   1  1  | 0                           BUSY: a thread is moving the page; wait and look again
//!   1  1  | mini page index + 1         in a DRAM mini page (its NVM frame is in the mini page's metadata)
//! ```
//!
//! Transitions out of EMPTY and NVM are made by compare-and-swap to BUSY (whoever wins
//! moves the page); transitions out of DRAM are made by the thread holding that frame's
//! exclusive latch. A BUSY entry is always ended by its owner, on success or error.
//!
//! FREE decodes as [`Entry::Empty`] (no tier holds the page), but no claim takes it: a
//! reader that followed a stale reference to a page freed since cannot load the page's
//! old bytes from SSD into a frame (the fix sees [`PageTable::is_free`] and fails; an
//! optimistic reader then restarts). Only allocation, which hands the page out again,
//! and recovery, which finds it allocated after all, end it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::BufferError;
use crate::ids::{NvmSlot, PageId};
use crate::limits::PAGE_TABLE_CHUNK_ENTRIES;
use crate::page::frame::FrameId;

const TAG_SHIFT: u32 = 62;
const TAG_DRAM: u64 = 1 << TAG_SHIFT;
const TAG_NVM: u64 = 2 << TAG_SHIFT;
const BUSY: u64 = 3 << TAG_SHIFT;
const INDEX_MASK: u64 = (1 << TAG_SHIFT) - 1;
/// A freed page (see the module doc).
const FREE: u64 = 1;

/// A decoded page-table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// In neither DRAM nor NVM: on SSD only, or not allocated.
    Empty,
    /// In this DRAM frame (its NVM copy, if any, is named in the frame's metadata).
    Dram(FrameId),
    /// In this NVM frame only.
    Nvm(NvmSlot),
    /// Claimed by a thread that is moving the page: wait and look again.
    Busy,
    /// In a mini page (a 16-line DRAM frame; see `frame::mini`).
    Mini(u32),
}

impl Entry {
    /// The entry as the table stores it (layout in the module doc).
    #[inline]
    pub fn encode(self) -> u64 {
        match self {
            Entry::Empty => 0,
            Entry::Dram(f) => TAG_DRAM | f.get() as u64,
            Entry::Nvm(n) => TAG_NVM | n.get() as u64,
            Entry::Busy => BUSY,
            Entry::Mini(i) => BUSY | (i as u64 + 1),
        }
    }

    /// The entry a stored word means: the inverse of [`encode`](Self::encode).
    #[inline]
    pub fn decode(w: u64) -> Entry {
        match w & !INDEX_MASK {
            0 => Entry::Empty,
            TAG_DRAM => Entry::Dram(FrameId::new((w & INDEX_MASK) as u32)),
            TAG_NVM => Entry::Nvm(NvmSlot::new((w & INDEX_MASK) as u32)),
            _ if w == BUSY => Entry::Busy,
            _ => Entry::Mini(((w & INDEX_MASK) - 1) as u32),
        }
    }
}

type Chunk = Box<[AtomicU64]>;

/// Page id → location, for up to `capacity` pages.
pub struct PageTable {
    chunks: Box<[OnceLock<Chunk>]>,
    capacity: u64,
}

impl PageTable {
    /// A table for page ids `0..capacity_pages`, all `Empty`; chunks are allocated on
    /// first use.
    pub fn new(capacity_pages: u64) -> PageTable {
        let n = capacity_pages.div_ceil(PAGE_TABLE_CHUNK_ENTRIES as u64) as usize;
        PageTable { chunks: (0..n).map(|_| OnceLock::new()).collect(), capacity: capacity_pages }
    }

    /// One past the largest page id the table maps.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The entry cell of `pid`, creating its chunk on first use.
    ///
    /// # Errors
    /// `NoSuchPage` past the capacity.
    #[inline]
    pub fn slot(&self, pid: PageId) -> Result<&AtomicU64, BufferError> {
        if pid.0 >= self.capacity {
            return Err(BufferError::NoSuchPage { pid, why: "beyond the page table's capacity" });
        }
        let (c, i) = ((pid.0 / PAGE_TABLE_CHUNK_ENTRIES as u64) as usize, (pid.0 % PAGE_TABLE_CHUNK_ENTRIES as u64));
        let chunk = self.chunks[c].get_or_init(|| (0..PAGE_TABLE_CHUNK_ENTRIES).map(|_| AtomicU64::new(0)).collect());
        Ok(&chunk[i as usize])
    }

    /// Where `pid` is now (racy: the entry may change right after).
    ///
    /// # Errors
    /// `NoSuchPage` past the capacity.
    #[inline]
    pub fn get(&self, pid: PageId) -> Result<Entry, BufferError> {
        Ok(Entry::decode(self.slot(pid)?.load(Ordering::Acquire)))
    }

    /// Claims a page for a move: `from` → BUSY. False if the entry changed.
    #[inline]
    pub fn claim(&self, pid: PageId, from: Entry) -> Result<bool, BufferError> {
        debug_assert!(!matches!(from, Entry::Busy));
        Ok(self.slot(pid)?.compare_exchange(from.encode(), BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok())
    }

    /// Marks page `pid`, which no tier holds, freed (FREE: it reads as EMPTY, but no
    /// claim takes it until [`set`](Self::set) gives it a place again or
    /// [`clear_free`](Self::clear_free) ends it).
    #[inline]
    pub fn set_free(&self, pid: PageId) {
        let slot = self.slot(pid).expect("set_free is only called for pages that have a slot");
        debug_assert!(
            matches!(Entry::decode(slot.load(Ordering::Relaxed)), Entry::Empty | Entry::Busy),
            "{pid} is freed while a tier holds it"
        );
        slot.store(FREE, Ordering::Release);
    }

    /// Whether page `pid` is marked freed.
    ///
    /// # Errors
    /// `NoSuchPage` past the capacity.
    #[inline]
    pub fn is_free(&self, pid: PageId) -> Result<bool, BufferError> {
        Ok(self.slot(pid)?.load(Ordering::Acquire) == FREE)
    }

    /// Page `pid`, marked freed, is allocated after all (recovery): EMPTY again.
    ///
    /// # Errors
    /// `NoSuchPage` past the capacity.
    pub fn clear_free(&self, pid: PageId) -> Result<(), BufferError> {
        let _ = self.slot(pid)?.compare_exchange(FREE, 0, Ordering::AcqRel, Ordering::Relaxed);
        Ok(())
    }

    /// Publishes a page's new location (ends a claim, or moves a page out of a DRAM
    /// frame whose exclusive latch the caller holds).
    #[inline]
    pub fn set(&self, pid: PageId, to: Entry) {
        let slot = self.slot(pid).expect("set is only called for pages that have a slot");
        slot.store(to.encode(), Ordering::Release);
    }

    /// Entries that are not EMPTY (for tests and invariant checks; walks every chunk).
    pub fn resident(&self) -> Vec<(PageId, Entry)> {
        let mut out = Vec::new();
        for (c, chunk) in self.chunks.iter().enumerate() {
            if let Some(chunk) = chunk.get() {
                for (i, e) in chunk.iter().enumerate() {
                    let e = Entry::decode(e.load(Ordering::Acquire));
                    if e != Entry::Empty {
                        out.push((PageId((c * PAGE_TABLE_CHUNK_ENTRIES + i) as u64), e));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        for e in [
            Entry::Empty,
            Entry::Dram(FrameId::new(0)),
            Entry::Dram(FrameId::new(u32::MAX - 1)),
            Entry::Nvm(NvmSlot::new(7)),
            Entry::Busy,
            Entry::Mini(0),
            Entry::Mini(u32::MAX),
        ] {
            assert_eq!(Entry::decode(e.encode()), e);
        }
    }

    #[test]
    fn claim_set_and_capacity() {
        let t = PageTable::new(PAGE_TABLE_CHUNK_ENTRIES as u64 * 2 + 5);
        let far = PageId(PAGE_TABLE_CHUNK_ENTRIES as u64 * 2 + 4);
        assert_eq!(t.get(far).unwrap(), Entry::Empty);
        assert!(t.claim(far, Entry::Empty).unwrap());
        assert!(!t.claim(far, Entry::Empty).unwrap(), "a busy entry cannot be claimed again");
        assert_eq!(t.get(far).unwrap(), Entry::Busy);
        t.set(far, Entry::Nvm(NvmSlot::new(3)));
        assert_eq!(t.resident(), vec![(far, Entry::Nvm(NvmSlot::new(3)))]);
        assert!(t.get(PageId(far.0 + 1)).is_err());
    }
}
