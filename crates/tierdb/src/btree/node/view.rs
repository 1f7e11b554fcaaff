//! [`NodeRef`]: the checked, read-only view of a node page, and its accessors.
//!
//! A view caches the header fields a search needs (kind, level, count, prefix length);
//! every other read goes to the page's bytes and is bounds checked. The binary search
//! over a view is in `search.rs`.
//!
//! A view only reads. Its caller holds the page latched, or reads it optimistically and
//! trusts nothing it read until the page validates.

use crate::btree::error::BTreeError;
use crate::ids::{Lsn, PageId};
use crate::limits::BTREE_UNDERFULL_DIVISOR;

use super::format::{
    ENTRY_HEADER_BYTES, HEADER_BYTES, Kind, NodeResult, SLOT_BYTES, corrupt, rd_u16, rd_u32, rd_u64, touch,
};
use super::header::{
    FLAG_UPPER_INFINITE, Header, OFF_COUNT, OFF_FLAGS, OFF_GARBAGE, OFF_HEAP_START, OFF_KIND, OFF_LEVEL, OFF_LINK,
    OFF_LOWER_LEN, OFF_LOWER_OFF, OFF_PAGE_LSN, OFF_PREFIX_LEN, OFF_UPPER_LEN, OFF_UPPER_OFF, header_ok,
};

/// A validated, read-only view of a node.
///
/// ```text
///  0      64                                                         heap_start     page end
///  | header | slot 0 | slot 1 | ... | slot n-1 |   free   | garbage and entries | fences |
///           '-- grows up, 8 B per slot ------->            <------ grows down -----'
/// ```
///
/// The header is drawn above `Header`. Slot (8 bytes, 8 per cache line): key head
/// `u32` (the first four bytes of the key after the prefix, zero padded, read big endian
/// so that integer order is byte order), entry offset `u16`, key length after the prefix
/// `u16`. Entry, in the heap at its offset: value length `u16`, the key after the prefix,
/// the value (an inner node's value is the child's page id, 8 bytes). The lower and upper
/// fences are full keys in the heap.
///
/// ```text
/// slot:   | head u32 | entry offset u16 | key length u16 |
/// entry:  | value length u16 | key suffix | value |
/// ```
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    pub(super) b: &'a [u8],
    pub(super) pid: PageId,
    pub(super) kind: Kind,
    pub(super) level: u8,
    pub(super) count: usize,
    pub(super) prefix_len: usize,
}

impl<'a> NodeRef<'a> {
    /// Checks the header of the page `b` (every field against the page bounds) and
    /// returns a view of it. Reads only the header's cache line.
    ///
    /// # Errors
    /// `NotATree` for a wrong size, magic or kind; `Corrupted` for inconsistent fields.
    #[inline]
    pub fn parse(b: &'a [u8], pid: PageId) -> NodeResult<NodeRef<'a>> {
        touch(0, HEADER_BYTES);
        let len = b.len();
        match b.first_chunk::<HEADER_BYTES>() {
            Some(line) if header_ok(line, len) => Ok(NodeRef {
                b,
                pid,
                kind: if line[OFF_KIND] == Kind::Leaf as u8 { Kind::Leaf } else { Kind::Inner },
                level: line[OFF_LEVEL],
                count: u16::from_le_bytes([line[OFF_COUNT], line[OFF_COUNT + 1]]) as usize,
                prefix_len: u16::from_le_bytes([line[OFF_PREFIX_LEN], line[OFF_PREFIX_LEN + 1]]) as usize,
            }),
            _ => Err(Header::diagnose(b.get(..HEADER_BYTES).unwrap_or(b), len, pid)),
        }
    }

    /// A view of a page this thread parsed and has since changed only through this
    /// module, while holding it exclusive.
    pub(super) fn trusted(b: &'a [u8], pid: PageId) -> NodeRef<'a> {
        debug_assert!(NodeRef::parse(b, pid).is_ok(), "{pid}: {:?}", NodeRef::parse(b, pid).err());
        let kind = if b[OFF_KIND] == Kind::Leaf as u8 { Kind::Leaf } else { Kind::Inner };
        NodeRef {
            b,
            pid,
            kind,
            level: b[OFF_LEVEL],
            count: rd_u16(b, OFF_COUNT),
            prefix_len: rd_u16(b, OFF_PREFIX_LEN),
        }
    }

    /// The page this view was parsed from (named in errors).
    pub fn pid(&self) -> PageId {
        self.pid
    }

    /// Leaf or inner node.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// True for a leaf (level 0).
    pub fn is_leaf(&self) -> bool {
        self.kind == Kind::Leaf
    }

    /// 0 for a leaf; the height above the leaves for an inner node.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// Entries (slots in use). An inner node has `count + 1` children.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes in the page.
    pub fn page_size(&self) -> usize {
        self.b.len()
    }

    /// Length in bytes of [`prefix`](Self::prefix), which stored keys omit.
    pub fn prefix_len(&self) -> usize {
        self.prefix_len
    }

    /// The right sibling (leaf; 0 = none) or the rightmost child (inner).
    #[inline]
    pub fn link(&self) -> u64 {
        rd_u64(self.b, OFF_LINK)
    }

    /// The LSN of the node's last logged change ([`Lsn::NONE`]: none).
    pub fn page_lsn(&self) -> Lsn {
        Lsn::new(rd_u64(self.b, OFF_PAGE_LSN))
    }

    pub(super) fn heap_start(&self) -> usize {
        rd_u32(self.b, OFF_HEAP_START)
    }

    pub(super) fn garbage(&self) -> usize {
        rd_u32(self.b, OFF_GARBAGE)
    }

    /// The lower fence: keys are `>=` it. Empty for the leftmost node of a level.
    pub fn lower_fence(&self) -> &'a [u8] {
        let (o, l) = (rd_u16(self.b, OFF_LOWER_OFF), rd_u16(self.b, OFF_LOWER_LEN));
        touch(o, l);
        &self.b[o..o + l]
    }

    /// The upper fence: keys are `<` it. `None` means +infinity (rightmost node).
    pub fn upper_fence(&self) -> Option<&'a [u8]> {
        if self.b[OFF_FLAGS] & FLAG_UPPER_INFINITE != 0 {
            return None;
        }
        let (o, l) = (rd_u16(self.b, OFF_UPPER_OFF), rd_u16(self.b, OFF_UPPER_LEN));
        touch(o, l);
        Some(&self.b[o..o + l])
    }

    /// The bytes every key of the node starts with.
    pub fn prefix(&self) -> &'a [u8] {
        &self.lower_fence()[..self.prefix_len]
    }

    /// Heap bytes taken by the two fences (0 for an empty lower and infinite upper).
    pub fn fence_bytes(&self) -> usize {
        rd_u16(self.b, OFF_LOWER_LEN) + rd_u16(self.b, OFF_UPPER_LEN)
    }

    /// Free bytes between the slot array and the heap.
    pub fn free_contiguous(&self) -> usize {
        self.heap_start() - (HEADER_BYTES + self.count * SLOT_BYTES)
    }

    /// Free bytes after a compaction.
    pub fn free_total(&self) -> usize {
        self.free_contiguous() + self.garbage()
    }

    /// Bytes of slots and live entries (header and fences excluded).
    pub fn payload_bytes(&self) -> usize {
        self.count * SLOT_BYTES + (self.b.len() - self.heap_start()) - self.garbage() - self.fence_bytes()
    }

    /// Fewer payload bytes than a quarter of the page: a delete should try to merge it.
    pub fn is_underfull(&self) -> bool {
        self.payload_bytes() < self.b.len() / BTREE_UNDERFULL_DIVISOR
    }

    /// Head, entry offset and key length (after the prefix) of slot `i < count`.
    #[inline(always)]
    pub(super) fn slot(&self, i: usize) -> (u32, usize, usize) {
        debug_assert!(i < self.count, "slot {i} of {}", self.count);
        let o = HEADER_BYTES + i * SLOT_BYTES;
        touch(o, SLOT_BYTES);
        let s = &self.b[o..o + SLOT_BYTES];
        (
            u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
            u16::from_le_bytes([s[4], s[5]]) as usize,
            u16::from_le_bytes([s[6], s[7]]) as usize,
        )
    }

    #[cold]
    pub(super) fn entry_outside(&self, off: usize) -> BTreeError {
        corrupt(self.pid, format!("entry at offset {off} runs past the page of {} bytes", self.b.len()))
    }

    #[inline]
    pub(super) fn suffix_at(&self, off: usize, klen: usize) -> NodeResult<&'a [u8]> {
        let s = off + ENTRY_HEADER_BYTES;
        touch(s, klen);
        self.b.get(s..s + klen).ok_or_else(|| self.entry_outside(off))
    }

    #[inline]
    pub(super) fn value_at(&self, off: usize, klen: usize) -> NodeResult<&'a [u8]> {
        let vl = self.b.get(off..off + ENTRY_HEADER_BYTES).ok_or_else(|| self.entry_outside(off))?;
        touch(off, ENTRY_HEADER_BYTES);
        let vlen = u16::from_le_bytes([vl[0], vl[1]]) as usize;
        let s = off + ENTRY_HEADER_BYTES + klen;
        // The value's bytes are read by the caller, not here: the line accounting of a
        // lookup counts them separately.
        self.b.get(s..s + vlen).ok_or_else(|| self.entry_outside(off))
    }

    /// The key of slot `i` without the node's prefix.
    pub fn suffix(&self, i: usize) -> NodeResult<&'a [u8]> {
        let (_, off, klen) = self.slot(i);
        self.suffix_at(off, klen)
    }

    /// The value of slot `i` (an inner node's is the child's page id).
    #[inline]
    pub fn value(&self, i: usize) -> NodeResult<&'a [u8]> {
        let (_, off, klen) = self.slot(i);
        self.value_at(off, klen)
    }

    /// Key suffix and value of slot `i`.
    pub fn entry(&self, i: usize) -> NodeResult<(&'a [u8], &'a [u8])> {
        let (_, off, klen) = self.slot(i);
        Ok((self.suffix_at(off, klen)?, self.value_at(off, klen)?))
    }

    /// The full key of slot `i` (allocates: for splits, merges and checks).
    pub fn full_key(&self, i: usize) -> NodeResult<Vec<u8>> {
        let mut k = self.prefix().to_vec();
        k.extend_from_slice(self.suffix(i)?);
        Ok(k)
    }

    /// Slot plus heap bytes of slot `i`'s entry.
    pub fn entry_bytes(&self, i: usize) -> NodeResult<usize> {
        let (_, off, klen) = self.slot(i);
        Ok(SLOT_BYTES + ENTRY_HEADER_BYTES + klen + self.value_at(off, klen)?.len())
    }

    /// The head stored in slot `i` (for checks).
    pub fn head(&self, i: usize) -> u32 {
        self.slot(i).0
    }

    /// Checks that this node is at the level its parent implies.
    pub fn expect_level(&self, level: u8) -> NodeResult<()> {
        if self.level != level {
            return Err(corrupt(
                self.pid,
                format!("{:?} node at level {}, its parent implies {level}", self.kind, self.level),
            ));
        }
        Ok(())
    }

    /// Bytes of an entry for `key` (full key) and a value of `value_len` bytes here.
    pub fn entry_bytes_for(&self, key: &[u8], value_len: usize) -> usize {
        SLOT_BYTES + ENTRY_HEADER_BYTES + key.len().saturating_sub(self.prefix_len) + value_len
    }
}
