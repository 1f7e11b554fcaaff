//! Changing nodes: [`NodeMut`] changes a node in place (insert, remove, replace a value,
//! compact); [`Builder`] writes a fresh node into a page, header and fences first, then
//! entries in key order (splits, merges, compaction, bulk load and new roots use it).
//!
//! Callers hold the page latched exclusive. Writing marks the page dirty, so callers
//! decide with a [`NodeRef`] first and take a `NodeMut` only to change something.

use std::cmp::Ordering;

use crate::btree::error::BTreeError;
use crate::ids::{Lsn, PageId};
use crate::limits::{BTREE_HEIGHT_MAX, BTREE_KEY_BYTES_MAX, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES};

use super::format::{
    CHILD_BYTES, ENTRY_HEADER_BYTES, HEADER_BYTES, Kind, NODE_MAGIC, NodeResult, SLOT_BYTES, common_prefix_len,
    corrupt, head_of, head_of2, rd_u16, wr_u16, wr_u32,
};
use super::header::{
    FLAG_UPPER_INFINITE, OFF_COUNT, OFF_FLAGS, OFF_GARBAGE, OFF_HEAP_START, OFF_KIND, OFF_LEVEL, OFF_LINK,
    OFF_LOWER_LEN, OFF_LOWER_OFF, OFF_PAGE_LSN, OFF_PREFIX_LEN, OFF_UPPER_LEN, OFF_UPPER_OFF,
};
use super::view::NodeRef;

/// A node being changed. Writing marks the page dirty, so callers decide with a
/// [`NodeRef`] first and take a `NodeMut` only to change something.
pub struct NodeMut<'a> {
    b: &'a mut [u8],
    pid: PageId,
}

impl<'a> NodeMut<'a> {
    /// Checks the header of page `b` like [`NodeRef::parse`] and returns a writable view.
    ///
    /// # Errors
    /// As [`NodeRef::parse`].
    pub fn new(b: &'a mut [u8], pid: PageId) -> NodeResult<NodeMut<'a>> {
        NodeRef::parse(b, pid)?;
        Ok(NodeMut { b, pid })
    }

    /// A page the caller parsed while holding it exclusive.
    pub fn trusted(b: &'a mut [u8], pid: PageId) -> NodeMut<'a> {
        NodeMut { b, pid }
    }

    /// A read-only view of the node as it is now (not checked again).
    pub fn view(&self) -> NodeRef<'_> {
        NodeRef::trusted(self.b, self.pid)
    }

    fn set_count(&mut self, n: usize) {
        wr_u16(self.b, OFF_COUNT, n);
    }

    fn set_heap_start(&mut self, v: usize) {
        wr_u32(self.b, OFF_HEAP_START, v);
    }

    fn set_garbage(&mut self, v: usize) {
        wr_u32(self.b, OFF_GARBAGE, v);
    }

    /// Sets the header's link: a leaf's right sibling (0: none) or an inner node's
    /// rightmost child, as a raw page id.
    pub fn set_link(&mut self, link: u64) {
        self.b[OFF_LINK..OFF_LINK + 8].copy_from_slice(&link.to_le_bytes());
    }

    /// Records the LSN of the log record that describes the node's latest change.
    pub fn set_page_lsn(&mut self, lsn: Lsn) {
        self.b[OFF_PAGE_LSN..OFF_PAGE_LSN + 8].copy_from_slice(&lsn.to_le_bytes());
    }

    /// Inserts `key -> value` at slot `pos` (the caller found `pos` by `lower_bound`).
    /// Returns false, changing nothing, if the node has no room even after compaction.
    ///
    /// # Errors
    /// `Corrupted` if `key` does not start with the node's prefix (a misrouted key).
    pub fn insert(&mut self, pos: usize, key: &[u8], value: &[u8]) -> NodeResult<bool> {
        let v = self.view();
        let plen = v.prefix_len;
        if key.len() < plen || key[..plen] != *v.prefix() {
            return Err(corrupt(self.pid, format!("key {key:02x?} does not start with the node's prefix")));
        }
        self.insert_suffix(pos, &key[plen..], value)
    }

    fn insert_suffix(&mut self, pos: usize, suffix: &[u8], value: &[u8]) -> NodeResult<bool> {
        let v = self.view();
        let count = v.count;
        assert!(pos <= count, "{}: insert at slot {pos} of {count}", self.pid);
        let heap = ENTRY_HEADER_BYTES + suffix.len() + value.len();
        if SLOT_BYTES + heap > v.free_total() {
            return Ok(false);
        }
        self.check_between(pos, suffix)?;
        if SLOT_BYTES + heap > v.free_contiguous() {
            self.compact()?;
            if SLOT_BYTES + heap > self.view().free_contiguous() {
                return Err(corrupt(self.pid, "the header counts more garbage than compaction freed".into()));
            }
        }
        let off = self.view().heap_start() - heap;
        // The slot array grows by one slot and must end at or before the new entry.
        assert!(
            HEADER_BYTES + (count + 1) * SLOT_BYTES <= off,
            "{}: {} slots end past the new entry at byte {off}",
            self.pid,
            count + 1
        );
        self.write_entry(off, suffix, value);
        self.set_heap_start(off);
        let s = HEADER_BYTES + pos * SLOT_BYTES;
        self.b.copy_within(s..HEADER_BYTES + count * SLOT_BYTES, s + SLOT_BYTES);
        self.write_slot(pos, head_of(suffix), off, suffix.len());
        self.set_count(count + 1);
        Ok(true)
    }

    /// Checks that the key `suffix` (after the node's prefix) sorts strictly between the
    /// keys of slots `pos - 1` and `pos`, where an insert at `pos` puts it.
    ///
    /// # Errors
    /// `Corrupted`, naming both keys, if it does not: the node's keys are out of order
    /// (bad bytes), and inserting would hide keys from every later search.
    fn check_between(&self, pos: usize, suffix: &[u8]) -> NodeResult<()> {
        let v = self.view();
        if pos > 0 {
            let left = v.suffix(pos - 1)?;
            if left >= suffix {
                return Err(corrupt(
                    self.pid,
                    format!("key suffix {suffix:02x?} inserted after slot {} holding {left:02x?}", pos - 1),
                ));
            }
        }
        if pos < v.count {
            let right = v.suffix(pos)?;
            if suffix >= right {
                return Err(corrupt(
                    self.pid,
                    format!("key suffix {suffix:02x?} inserted before slot {pos} holding {right:02x?}"),
                ));
            }
        }
        Ok(())
    }

    fn write_entry(&mut self, off: usize, suffix: &[u8], value: &[u8]) {
        wr_u16(self.b, off, value.len());
        let k = off + ENTRY_HEADER_BYTES;
        self.b[k..k + suffix.len()].copy_from_slice(suffix);
        self.b[k + suffix.len()..k + suffix.len() + value.len()].copy_from_slice(value);
    }

    fn write_slot(&mut self, i: usize, head: u32, off: usize, klen: usize) {
        let o = HEADER_BYTES + i * SLOT_BYTES;
        self.b[o..o + 4].copy_from_slice(&head.to_le_bytes());
        wr_u16(self.b, o + 4, off);
        wr_u16(self.b, o + 6, klen);
    }

    /// Removes slot `pos`; its heap bytes become garbage (or are returned to the free
    /// space at once if the entry is the lowest in the heap).
    ///
    /// # Errors
    /// `Corrupted` if the entry runs past the page.
    pub fn remove(&mut self, pos: usize) -> NodeResult<()> {
        let v = self.view();
        let count = v.count;
        assert!(pos < count, "{}: remove slot {pos} of {count}", self.pid);
        let (_, off, klen) = v.slot(pos);
        let bytes = ENTRY_HEADER_BYTES + klen + v.value_at(off, klen)?.len();
        let (heap_start, garbage) = (v.heap_start(), v.garbage());
        if off == heap_start {
            // `value_at` kept the entry inside the page, so the heap still ends there.
            assert!(
                heap_start + bytes <= self.b.len(),
                "{}: heap start {heap_start} + {bytes} past the page of {}",
                self.pid,
                self.b.len()
            );
            self.set_heap_start(heap_start + bytes);
        } else {
            self.set_garbage(garbage + bytes);
        }
        let s = HEADER_BYTES + pos * SLOT_BYTES;
        self.b.copy_within(s + SLOT_BYTES..HEADER_BYTES + count * SLOT_BYTES, s);
        self.set_count(count - 1);
        Ok(())
    }

    /// Replaces the value of slot `pos` (any length). Returns false, changing nothing,
    /// if a longer value does not fit even after compaction.
    ///
    /// # Errors
    /// `Corrupted` if the entry runs past the page.
    pub fn set_value(&mut self, pos: usize, value: &[u8]) -> NodeResult<bool> {
        let v = self.view();
        let (head, off, klen) = v.slot(pos);
        let old = v.value_at(off, klen)?.len();
        let (heap_start, garbage, free_contiguous, free_total) =
            (v.heap_start(), v.garbage(), v.free_contiguous(), v.free_total());
        let new = value.len();
        if new <= old {
            let s = off + ENTRY_HEADER_BYTES + klen;
            self.b[s..s + new].copy_from_slice(value);
            wr_u16(self.b, off, new);
            self.set_garbage(garbage + (old - new));
            return Ok(true);
        }
        if free_total < new - old {
            return Ok(false);
        }
        let heap = ENTRY_HEADER_BYTES + klen + new;
        if heap <= free_contiguous {
            // Write a new copy below the heap; the old entry becomes garbage.
            let noff = heap_start - heap;
            assert!(
                HEADER_BYTES + v.count * SLOT_BYTES <= noff,
                "{}: {} slots end past the moved entry at byte {noff}",
                self.pid,
                v.count
            );
            let ks = off + ENTRY_HEADER_BYTES;
            self.b.copy_within(ks..ks + klen, noff + ENTRY_HEADER_BYTES);
            wr_u16(self.b, noff, new);
            let vs = noff + ENTRY_HEADER_BYTES + klen;
            self.b[vs..vs + new].copy_from_slice(value);
            self.write_slot(pos, head, noff, klen);
            self.set_heap_start(noff);
            self.set_garbage(garbage + ENTRY_HEADER_BYTES + klen + old);
            return Ok(true);
        }
        // Not enough contiguous room: remove, compact and insert again.
        let mut suffix = [0u8; BTREE_KEY_BYTES_MAX];
        let sk = v.suffix_at(off, klen)?;
        if klen > BTREE_KEY_BYTES_MAX {
            return Err(corrupt(self.pid, format!("key of {klen} bytes")));
        }
        suffix[..klen].copy_from_slice(sk);
        self.remove(pos)?;
        let done = self.insert_suffix(pos, &suffix[..klen], value)?;
        assert!(done, "{}: a value that fits after removal did not", self.pid);
        Ok(true)
    }

    /// Overwrites `bytes.len()` bytes of slot `pos`'s value at `offset`.
    ///
    /// # Errors
    /// `OffsetOutOfRange` if the range is not inside the value; `Corrupted`.
    pub fn write_value(&mut self, pos: usize, offset: usize, bytes: &[u8]) -> NodeResult<()> {
        let v = self.view();
        let (_, off, klen) = v.slot(pos);
        let value_len = v.value_at(off, klen)?.len();
        if offset.checked_add(bytes.len()).is_none_or(|end| end > value_len) {
            return Err(BTreeError::OffsetOutOfRange { offset, len: bytes.len(), value_len });
        }
        let s = off + ENTRY_HEADER_BYTES + klen + offset;
        self.b[s..s + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Points position `i` of an inner node (`count` = rightmost) at `child`.
    ///
    /// # Errors
    /// `Corrupted` if the entry is not a page id.
    pub fn set_child(&mut self, i: usize, child: PageId) -> NodeResult<()> {
        let v = self.view();
        assert_eq!(v.kind, Kind::Inner, "{}: set_child({i}) on a leaf", self.pid);
        assert!(i <= v.count, "{}: child {i} of a node with {} entries", self.pid, v.count);
        if i == v.count {
            self.set_link(child.0);
            return Ok(());
        }
        let (_, off, klen) = v.slot(i);
        if v.value_at(off, klen)?.len() != CHILD_BYTES {
            return Err(corrupt(self.pid, format!("inner entry {i} is not a page id")));
        }
        let s = off + ENTRY_HEADER_BYTES + klen;
        self.b[s..s + CHILD_BYTES].copy_from_slice(&child.0.to_le_bytes());
        Ok(())
    }

    /// Rewrites the heap without garbage, keeping slots, fences and header.
    ///
    /// # Errors
    /// `Corrupted` if the entries do not fit the page (the header lied).
    pub fn compact(&mut self) -> NodeResult<()> {
        let copy = self.b.to_vec();
        let old = NodeRef::trusted(&copy, self.pid);
        let lsn = old.page_lsn();
        let mut b =
            Builder::new(self.b, self.pid, old.kind, old.level, old.lower_fence(), old.upper_fence(), old.link())?;
        let prefix = old.prefix();
        for i in 0..old.count {
            let (s, v) = old.entry(i)?;
            b.push([prefix, s], v)?;
        }
        // Compaction is part of the change that needed it: the page keeps its LSN.
        self.set_page_lsn(lsn);
        Ok(())
    }
}

/// Writes a fresh node into a page: header and fences first, then entries in key order.
pub struct Builder<'a> {
    b: &'a mut [u8],
    pid: PageId,
    prefix_len: usize,
    count: usize,
    heap_start: usize,
}

impl<'a> Builder<'a> {
    /// Starts a node with the given fences (`upper = None`: +infinity) and link.
    ///
    /// # Errors
    /// `Corrupted` if a fence is longer than a key may be (bytes from a bad page).
    pub fn new(
        b: &'a mut [u8],
        pid: PageId,
        kind: Kind,
        level: u8,
        lower: &[u8],
        upper: Option<&[u8]>,
        link: u64,
    ) -> NodeResult<Builder<'a>> {
        let len = b.len();
        assert!((PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&len), "node page of {len} bytes");
        assert!((kind == Kind::Leaf) == (level == 0), "{kind:?} node at level {level}");
        assert!((level as usize) < BTREE_HEIGHT_MAX, "level {level}");
        if lower.len() > BTREE_KEY_BYTES_MAX || upper.is_some_and(|u| u.len() > BTREE_KEY_BYTES_MAX) {
            return Err(corrupt(pid, "a fence longer than the key limit".into()));
        }
        b[..HEADER_BYTES].fill(0);
        b[..4].copy_from_slice(&NODE_MAGIC);
        b[OFF_KIND] = kind as u8;
        b[OFF_LEVEL] = level;
        let mut heap = len;
        match upper {
            Some(u) => {
                heap -= u.len();
                b[heap..heap + u.len()].copy_from_slice(u);
                wr_u16(b, OFF_UPPER_OFF, if u.is_empty() { 0 } else { heap });
                wr_u16(b, OFF_UPPER_LEN, u.len());
            }
            None => b[OFF_FLAGS] = FLAG_UPPER_INFINITE,
        }
        heap -= lower.len();
        b[heap..heap + lower.len()].copy_from_slice(lower);
        wr_u16(b, OFF_LOWER_OFF, if lower.is_empty() { 0 } else { heap });
        wr_u16(b, OFF_LOWER_LEN, lower.len());
        // Two fences of at most a key each leave the header's line alone.
        assert!(
            heap >= HEADER_BYTES,
            "{pid}: fences of {} and {:?} bytes reach the header",
            lower.len(),
            upper.map(<[u8]>::len)
        );
        let prefix_len = upper.map_or(0, |u| common_prefix_len(lower, u));
        wr_u16(b, OFF_PREFIX_LEN, prefix_len);
        wr_u32(b, OFF_HEAP_START, heap);
        b[OFF_LINK..OFF_LINK + 8].copy_from_slice(&link.to_le_bytes());
        Ok(Builder { b, pid, prefix_len, count: 0, heap_start: heap })
    }

    /// Appends the entry whose full key is `key[0] ++ key[1]` (it must sort after the
    /// previous one and start with the node's prefix, which is cut off here).
    ///
    /// # Errors
    /// `Corrupted` if the key is shorter than the prefix or the node overflows: the
    /// source page's header lied about its sizes.
    pub fn push(&mut self, key: [&[u8]; 2], value: &[u8]) -> NodeResult<()> {
        let plen = self.prefix_len;
        let (a, c) = if plen <= key[0].len() {
            (&key[0][plen..], key[1])
        } else {
            match key[1].get(plen - key[0].len()..) {
                Some(c) => (&[][..], c),
                None => return Err(corrupt(self.pid, "a key shorter than the node's prefix".into())),
            }
        };
        let klen = a.len() + c.len();
        if self.count > 0 {
            // Entries come in strictly increasing key order; the previous one is the
            // lowest in the heap. Both are compared after the node's prefix.
            let prev_klen = rd_u16(self.b, HEADER_BYTES + (self.count - 1) * SLOT_BYTES + 6);
            let ps = self.heap_start + ENTRY_HEADER_BYTES;
            let prev = &self.b[ps..ps + prev_klen];
            let order = match (a.is_empty(), c.is_empty()) {
                (true, _) => prev.cmp(c),
                (false, true) => prev.cmp(a),
                (false, false) => prev.iter().cmp(a.iter().chain(c)),
            };
            if order != Ordering::Less {
                return Err(corrupt(
                    self.pid,
                    format!("entry {} out of order: {prev:02x?} then {a:02x?} {c:02x?}", self.count),
                ));
            }
        }
        let heap = ENTRY_HEADER_BYTES + klen + value.len();
        let slots_end = HEADER_BYTES + (self.count + 1) * SLOT_BYTES;
        if klen > BTREE_KEY_BYTES_MAX || value.len() > u16::MAX as usize || slots_end + heap > self.heap_start {
            return Err(corrupt(self.pid, format!("rebuilt node overflows at entry {}", self.count)));
        }
        let off = self.heap_start - heap;
        wr_u16(self.b, off, value.len());
        let k = off + ENTRY_HEADER_BYTES;
        self.b[k..k + a.len()].copy_from_slice(a);
        self.b[k + a.len()..k + klen].copy_from_slice(c);
        self.b[k + klen..k + klen + value.len()].copy_from_slice(value);
        let o = HEADER_BYTES + self.count * SLOT_BYTES;
        self.b[o..o + 4].copy_from_slice(&head_of2(a, c).to_le_bytes());
        wr_u16(self.b, o + 4, off);
        wr_u16(self.b, o + 6, klen);
        self.count += 1;
        self.heap_start = off;
        wr_u16(self.b, OFF_COUNT, self.count);
        wr_u32(self.b, OFF_HEAP_START, off);
        Ok(())
    }
}
