//! Search inside a node: the binary search over key heads and the lookup of the child
//! that holds a key.
//!
//! This is the lookup's hot path: every level of every descent runs it, optimistic
//! reads included (nothing it reads counts until the page validates). Its checks are
//! `debug_assert!`s, so release builds do no work here beyond the search itself.

use std::cmp::Ordering;

use crate::ids::PageId;

use super::format::{
    CHILD_BYTES, ENTRY_HEADER_BYTES, HEAD_BYTES, HEADER_BYTES, Kind, NodeResult, SLOT_BYTES, corrupt, head_of, rd_u64,
    touch,
};
use super::header::OFF_LINK;
use super::view::NodeRef;

/// `a.cmp(b)` for the short keys a node compares: eight bytes at a time as big-endian
/// words, without a call into the C library's `memcmp`, which costs more than the
/// comparison itself for keys of a few dozen bytes.
#[inline]
fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let word = |s: &[u8], at: usize| u64::from_be_bytes(s[at..at + 8].try_into().expect("eight bytes"));
    if n < 8 {
        for i in 0..n {
            if a[i] != b[i] {
                return a[i].cmp(&b[i]);
            }
        }
        return a.len().cmp(&b.len());
    }
    let mut i = 0;
    while i + 8 < n {
        let (x, y) = (word(a, i), word(b, i));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    // The last word ends at `n` and may overlap bytes found equal, which do not change
    // the order.
    word(a, n - 8).cmp(&word(b, n - 8)).then(a.len().cmp(&b.len()))
}

impl<'a> NodeRef<'a> {
    /// Binary search: the first slot whose key is `>= key` and whether it is equal; with
    /// `past_equal`, an equal key's successor (the first slot whose key is `> key`).
    /// Compares key heads and reads a key's bytes only when heads tie.
    ///
    /// The comparisons branch: on nodes that are not in the CPU caches (the common case
    /// for a storage engine) speculation along the predicted path overlaps the next
    /// probe's load, which measured ~1.4x faster than a branch-free (`cmov`) search over
    /// heads; the branch-free one wins only on cache-resident nodes.
    #[inline]
    pub fn search(&self, key: &[u8], past_equal: bool) -> NodeResult<(usize, bool)> {
        // A key routed here lies within the fences, so it starts with the prefix; the
        // prefix bytes are not compared, which keeps the fences' line out of the lookup.
        let sk = key.get(self.prefix_len..).unwrap_or(&[]);
        let head = head_of(sk);
        let slots = self.slots();
        let (mut lo, mut hi) = (0usize, slots.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let h = Self::head_at(slots, mid);
            // Heads decide most probes; a tie (in a node with a short prefix, the keys'
            // common start: every head of the root is `user` under YCSB) reads the key.
            let ord = if h != head { h.cmp(&head) } else { self.cmp_tied(slots, mid, sk)? };
            match ord {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok((if past_equal { mid + 1 } else { mid }, true)),
            }
        }
        debug_assert!(lo <= self.count, "{}: search ended at slot {lo} of {}", self.pid, self.count);
        Ok((lo, false))
    }

    /// The node's slots, whole (the header check keeps them within the page).
    #[inline]
    fn slots(&self) -> &'a [[u8; SLOT_BYTES]] {
        self.b[HEADER_BYTES..HEADER_BYTES + self.count * SLOT_BYTES].as_chunks::<SLOT_BYTES>().0
    }

    /// The head of slot `i` of `slots` (its first bytes, little endian).
    #[inline(always)]
    fn head_at(slots: &[[u8; SLOT_BYTES]], i: usize) -> u32 {
        touch(HEADER_BYTES + i * SLOT_BYTES, HEAD_BYTES);
        let s = &slots[i];
        u32::from_le_bytes([s[0], s[1], s[2], s[3]])
    }

    /// How the key of slot `i`, whose head equals that of the suffix `sk`, compares to
    /// `sk`. Equal heads of keys at least a head long hold the same first bytes, so the
    /// comparison starts after them.
    #[inline]
    fn cmp_tied(&self, slots: &[[u8; SLOT_BYTES]], i: usize, sk: &[u8]) -> NodeResult<Ordering> {
        touch(HEADER_BYTES + i * SLOT_BYTES, SLOT_BYTES);
        let slot = &slots[i];
        let off = u16::from_le_bytes([slot[4], slot[5]]) as usize;
        let klen = u16::from_le_bytes([slot[6], slot[7]]) as usize;
        if klen <= HEAD_BYTES && sk.len() <= HEAD_BYTES {
            // Equal heads of keys that fit in a head: one is a prefix of the other.
            return Ok(klen.cmp(&sk.len()));
        }
        let k = self.suffix_at(off, klen)?;
        let from = HEAD_BYTES.min(klen).min(sk.len());
        Ok(cmp_bytes(&k[from..], &sk[from..]))
    }

    /// The first slot whose key is `>= key`, and whether it equals `key`.
    #[inline]
    pub fn lower_bound(&self, key: &[u8]) -> NodeResult<(usize, bool)> {
        self.search(key, false)
    }

    /// The position (`0..=count`) of the child whose range holds `key`.
    #[inline]
    pub fn child_index(&self, key: &[u8]) -> NodeResult<usize> {
        Ok(self.search(key, true)?.0)
    }

    /// The child at position `i` (`count` is the rightmost child), as stored: a page
    /// id, or a swizzled reference (see [`child_ref`](Self::child_ref)) from a source
    /// that swizzles, which only holders of the node's exclusive latch never see.
    #[inline]
    pub fn child(&self, i: usize) -> NodeResult<PageId> {
        Ok(PageId(self.child_ref(i)?.1))
    }

    /// Where child reference `i` is in the page and what it holds: a page id, or with
    /// bit 63 set a frame reference put there by a source that swizzles pointers.
    #[inline]
    pub fn child_ref(&self, i: usize) -> NodeResult<(usize, u64)> {
        debug_assert_eq!(self.kind, Kind::Inner, "{}: child {i} of a leaf", self.pid);
        debug_assert!(i <= self.count, "{}: child {i} of a node with {} entries", self.pid, self.count);
        if i == self.count {
            return Ok((OFF_LINK, self.link()));
        }
        let (_, off, klen) = self.slot(i);
        let v = self.value_at(off, klen)?;
        if v.len() != CHILD_BYTES {
            return Err(corrupt(self.pid, format!("inner entry {i} holds {} bytes, not a page id", v.len())));
        }
        let raw = rd_u64(v, 0);
        if raw == 0 {
            return Err(corrupt(self.pid, format!("inner entry {i} points to page 0")));
        }
        Ok((off + ENTRY_HEADER_BYTES + klen, raw))
    }

    /// The child whose range holds `key`.
    #[inline]
    pub fn child_for(&self, key: &[u8]) -> NodeResult<PageId> {
        self.child(self.child_index(key)?)
    }
}
