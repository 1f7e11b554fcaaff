//! The node header: the first cache line of every node page, and its checks.
//!
//! Every lookup parses the header of each node it passes, so [`Header::parse`] (and
//! `NodeRef::parse`) compute all checks together on the line read once, without early
//! exits; only a header that fails goes through them again one by one to name the first
//! that fails. Any bytes give `NotATree` or `Corrupted`, never a panic.

use crate::btree::error::BTreeError;
use crate::ids::PageId;
use crate::limits::{
    BTREE_HEIGHT_MAX, BTREE_KEY_BYTES_MAX, PAGE_SEAL_BYTES, PAGE_SEAL_OFFSET, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES,
};

use super::format::{
    HEADER_BYTES, Kind, NODE_MAGIC, NodeResult, SLOT_BYTES, corrupt, not_a_tree, rd_u16, rd_u32, rd_u64, touch,
};

// Byte offsets of the header fields, as drawn above [`Header`].
pub(super) const OFF_KIND: usize = 4;
pub(super) const OFF_LEVEL: usize = 5;
pub(super) const OFF_FLAGS: usize = 6;
pub(in crate::btree) const OFF_COUNT: usize = 8;
pub(super) const OFF_PREFIX_LEN: usize = 10;
pub(in crate::btree) const OFF_HEAP_START: usize = 12;
pub(in crate::btree) const OFF_GARBAGE: usize = 16;
pub(super) const OFF_LOWER_OFF: usize = 20;
pub(super) const OFF_LOWER_LEN: usize = 22;
pub(super) const OFF_UPPER_OFF: usize = 24;
pub(super) const OFF_UPPER_LEN: usize = 26;
pub(super) const OFF_LINK: usize = 32;
/// Where a node keeps its page LSN.
pub const OFF_PAGE_LSN: usize = 40;

pub(super) const FLAG_UPPER_INFINITE: u8 = 1;

const _: () = assert!(OFF_LINK + 8 <= HEADER_BYTES);
// The page seal takes the header's last 16 bytes, which the node never writes.
const _: () = assert!(OFF_PAGE_LSN + 8 <= PAGE_SEAL_OFFSET && PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES <= HEADER_BYTES);

/// Whether a node's header line passes every check of [`Header::parse`] against a page
/// of `len` bytes, computed together without early exits (a lookup checks each node it
/// passes); [`Header::check_one_by_one`] makes the same checks in order.
#[inline(always)]
pub(super) fn header_ok(line: &[u8; HEADER_BYTES], len: usize) -> bool {
    let u16_at = |o: usize| u16::from_le_bytes([line[o], line[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes([line[o], line[o + 1], line[o + 2], line[o + 3]]) as usize;
    let (kind_byte, level, flags) = (line[OFF_KIND], line[OFF_LEVEL], line[OFF_FLAGS]);
    let count = u16_at(OFF_COUNT);
    let prefix_len = u16_at(OFF_PREFIX_LEN);
    let heap_start = u32_at(OFF_HEAP_START);
    let garbage = u32_at(OFF_GARBAGE);
    let (lo, ll) = (u16_at(OFF_LOWER_OFF), u16_at(OFF_LOWER_LEN));
    let (uo, ul) = (u16_at(OFF_UPPER_OFF), u16_at(OFF_UPPER_LEN));
    let link = u64::from_le_bytes(line[OFF_LINK..OFF_LINK + 8].try_into().expect("8 bytes"));
    let upper_infinite = flags & FLAG_UPPER_INFINITE != 0;
    let is_leaf = kind_byte == Kind::Leaf as u8;
    let is_inner = kind_byte == Kind::Inner as u8;
    let fence_ok = |o: usize, l: usize| (o + l <= len) & ((l == 0) | (o >= heap_start));
    (PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&len)
        & (line[..4] == NODE_MAGIC)
        & ((is_leaf & (level == 0)) | (is_inner & (level >= 1) & ((level as usize) < BTREE_HEIGHT_MAX)))
        & (flags & !FLAG_UPPER_INFINITE == 0)
        & (HEADER_BYTES + count * SLOT_BYTES <= heap_start)
        & (heap_start <= len)
        & (ll <= BTREE_KEY_BYTES_MAX)
        & (ul <= BTREE_KEY_BYTES_MAX)
        & fence_ok(lo, ll)
        & fence_ok(uo, ul)
        & (!upper_infinite | (ul == 0))
        & (if upper_infinite { prefix_len == 0 } else { prefix_len <= ll.min(ul) })
        & (garbage + ll + ul <= len.saturating_sub(heap_start))
        & (is_leaf | (link != 0))
}

/// A node's header line, checked: what a cache-line-grained access reads first.
///
/// The header is line 0 of the page; integers are little endian (`docs/btree.md` has
/// the same table):
///
/// ```text
/// offset size field
///      0    4 magic "TDBN"
///      4    1 kind: 1 = leaf, 2 = inner
///      5    1 level: 0 for leaves, height above the leaves for inner nodes
///      6    1 flags: bit 0 = the upper fence is +infinity
///      7    1 reserved, zero
///      8    2 count: slots in use
///     10    2 prefix length: bytes every key of the node starts with (not stored per key)
///     12    4 heap start: lowest byte of the heap (page size when the heap is empty)
///     16    4 garbage: heap bytes of removed or shrunk entries, reclaimed by compaction
///     20    2 lower fence offset     22  2 lower fence length
///     24    2 upper fence offset     26  2 upper fence length
///     28    4 reserved, zero
///     32    8 link: leaf = right sibling page id (0 = none); inner = rightmost child
///     40    8 page LSN: the log record of the node's last logged change (0: none)
///     48   16 page seal: zero here (the SSD page file's page id and checksum, added to
///             the copy it writes and cleared when it reads; see `device::page_seal`)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Leaf or inner node.
    pub kind: Kind,
    /// 0 for a leaf; the height above the leaves for an inner node.
    pub level: u8,
    /// Slots in use (entries in the node).
    pub count: usize,
    /// Bytes every key of the node starts with, not stored per key.
    pub prefix_len: usize,
    /// Byte offset of the lowest heap byte; the page size when the heap is empty.
    pub heap_start: usize,
    /// Heap bytes of removed or shrunk entries, reclaimed by compaction.
    pub garbage: usize,
    /// Offset and length of the lower fence.
    pub lower: (usize, usize),
    /// Offset and length of the upper fence; `None` = +infinity.
    pub upper: Option<(usize, usize)>,
    /// Leaf: the right sibling's page id (0: none). Inner: the rightmost child's.
    pub link: u64,
    /// Bytes in the page the header was checked against.
    pub page_size: usize,
}

impl Header {
    /// Checks a node's header (`b`: its first [`HEADER_BYTES`]) against a page of
    /// `len` bytes.
    ///
    /// # Errors
    /// `NotATree` for a wrong size, magic or kind; `Corrupted` for inconsistent fields.
    #[inline]
    pub fn parse(b: &[u8], len: usize, pid: PageId) -> NodeResult<Header> {
        touch(0, HEADER_BYTES);
        // Every lookup parses each node it passes, so the checks are computed together
        // without early exits on the line read once; only a header that fails one of
        // them goes through the checks again one by one to say which (`diagnose`).
        let Some(line) = b.first_chunk::<HEADER_BYTES>() else { return Err(Self::diagnose(b, len, pid)) };
        if !header_ok(line, len) {
            return Err(Self::diagnose(b, len, pid));
        }
        let u16_at = |o: usize| u16::from_le_bytes([line[o], line[o + 1]]) as usize;
        let u32_at = |o: usize| u32::from_le_bytes([line[o], line[o + 1], line[o + 2], line[o + 3]]) as usize;
        let upper_infinite = line[OFF_FLAGS] & FLAG_UPPER_INFINITE != 0;
        Ok(Header {
            kind: if line[OFF_KIND] == Kind::Leaf as u8 { Kind::Leaf } else { Kind::Inner },
            level: line[OFF_LEVEL],
            count: u16_at(OFF_COUNT),
            prefix_len: u16_at(OFF_PREFIX_LEN),
            heap_start: u32_at(OFF_HEAP_START),
            garbage: u32_at(OFF_GARBAGE),
            lower: (u16_at(OFF_LOWER_OFF), u16_at(OFF_LOWER_LEN)),
            upper: (!upper_infinite).then_some((u16_at(OFF_UPPER_OFF), u16_at(OFF_UPPER_LEN))),
            link: u64::from_le_bytes(line[OFF_LINK..OFF_LINK + 8].try_into().expect("8 bytes")),
            page_size: len,
        })
    }

    /// The first check a header fails, as its error ([`parse`](Self::parse) found that
    /// one fails). A header read optimistically may have changed in between and pass
    /// every check here; that read does not validate, so its error is never reported.
    #[cold]
    #[inline(never)]
    pub(super) fn diagnose(b: &[u8], len: usize, pid: PageId) -> BTreeError {
        match Self::check_one_by_one(b, len, pid) {
            Err(e) => e,
            Ok(()) => corrupt(pid, "the header changed while it was checked".into()),
        }
    }

    /// [`parse`](Self::parse)'s checks one at a time, in order, stopping at the first
    /// that fails.
    pub(super) fn check_one_by_one(b: &[u8], len: usize, pid: PageId) -> NodeResult<()> {
        if !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&len) || b.len() < HEADER_BYTES {
            return Err(not_a_tree(pid, format!("a page of {len} bytes")));
        }
        if b[..4] != NODE_MAGIC {
            return Err(not_a_tree(pid, format!("magic {:02x?}, expected {:02x?}", &b[..4], NODE_MAGIC)));
        }
        let kind = match b[OFF_KIND] {
            1 => Kind::Leaf,
            2 => Kind::Inner,
            k => return Err(not_a_tree(pid, format!("node kind {k}"))),
        };
        let level = b[OFF_LEVEL];
        let level_ok = match kind {
            Kind::Leaf => level == 0,
            Kind::Inner => level >= 1 && (level as usize) < BTREE_HEIGHT_MAX,
        };
        if !level_ok {
            return Err(corrupt(pid, format!("{kind:?} node at level {level}")));
        }
        let flags = b[OFF_FLAGS];
        if flags & !FLAG_UPPER_INFINITE != 0 {
            return Err(corrupt(pid, format!("unknown flags {flags:#04x}")));
        }
        let upper_infinite = flags & FLAG_UPPER_INFINITE != 0;
        let count = rd_u16(b, OFF_COUNT);
        let prefix_len = rd_u16(b, OFF_PREFIX_LEN);
        let heap_start = rd_u32(b, OFF_HEAP_START);
        let garbage = rd_u32(b, OFF_GARBAGE);
        let slots_end = HEADER_BYTES + count * SLOT_BYTES;
        if slots_end > heap_start || heap_start > len {
            return Err(corrupt(
                pid,
                format!("{count} slots end at byte {slots_end}, heap starts at {heap_start}, page has {len}"),
            ));
        }
        let (lo, ll) = (rd_u16(b, OFF_LOWER_OFF), rd_u16(b, OFF_LOWER_LEN));
        let (uo, ul) = (rd_u16(b, OFF_UPPER_OFF), rd_u16(b, OFF_UPPER_LEN));
        let fence_ok = |o: usize, l: usize| o + l <= len && (l == 0 || o >= heap_start);
        if ll > BTREE_KEY_BYTES_MAX || ul > BTREE_KEY_BYTES_MAX || !fence_ok(lo, ll) || !fence_ok(uo, ul) {
            return Err(corrupt(
                pid,
                format!("fences at {lo}+{ll} and {uo}+{ul} outside the heap {heap_start}..{len}"),
            ));
        }
        if upper_infinite && ul != 0 {
            return Err(corrupt(pid, format!("infinite upper fence of {ul} bytes")));
        }
        let prefix_ok = if upper_infinite { prefix_len == 0 } else { prefix_len <= ll.min(ul) };
        if !prefix_ok {
            return Err(corrupt(pid, format!("prefix of {prefix_len} bytes, fences of {ll} and {ul}")));
        }
        if garbage + ll + ul > len - heap_start {
            return Err(corrupt(
                pid,
                format!("{garbage} garbage and {} fence bytes in a heap of {}", ll + ul, len - heap_start),
            ));
        }
        if kind == Kind::Inner && rd_u64(b, OFF_LINK) == 0 {
            return Err(corrupt(pid, "inner node without a rightmost child".into()));
        }
        Ok(())
    }

    /// Bytes of slots and live entries (as `NodeRef::payload_bytes`).
    pub fn payload_bytes(&self) -> usize {
        let fences = self.lower.1 + self.upper.map_or(0, |u| u.1);
        self.count * SLOT_BYTES + (self.page_size - self.heap_start) - self.garbage - fences
    }

    /// Free bytes between the slot array and the heap.
    pub fn free_contiguous(&self) -> usize {
        self.heap_start - (HEADER_BYTES + self.count * SLOT_BYTES)
    }
}
