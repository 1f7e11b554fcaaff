//! The node format's sizes and primitives: the sizes of the header, a slot and an
//! entry's parts; the value limit that lets every split succeed, checked against the page
//! sizes at compile time; the node kinds; little-endian field access; key heads and
//! separators. Everything here is a function of bytes and takes no latch.
//!
//! Why a value limit: a split must always make room for the entry that did not fit. With
//! `C = page - header - 2 * key max` bytes guaranteed to entries and every leaf entry at
//! most `C / 4`, a split at the middle by bytes leaves each half at most `C/2 + C/4`, and
//! the new entry (at most `C/4`) fits in either half. [`value_bytes_max`] follows.

use crate::btree::error::BTreeError;
use crate::ids::PageId;
use crate::limits::{
    BTREE_HEIGHT_MAX, BTREE_KEY_BYTES_MAX, CACHE_LINE_BYTES, PAGE_SIZE_DEFAULT_BYTES, PAGE_SIZE_MAX_BYTES,
    PAGE_SIZE_MIN_BYTES,
};

/// The result of node-level operations: they fail only with a [`BTreeError`]
/// (`NotATree`, `Corrupted`, `OffsetOutOfRange`), never with device errors.
pub type NodeResult<T> = std::result::Result<T, BTreeError>;

/// The first four bytes of every node page: `"TDBN"`.
pub const NODE_MAGIC: [u8; 4] = *b"TDBN";
/// Size of the node header: exactly one cache line, at the start of the page.
pub const HEADER_BYTES: usize = 64;
/// Size of one slot (key head, entry offset, key length); eight fit in a cache line.
pub const SLOT_BYTES: usize = 8;
/// The value length in front of each entry's key.
pub const ENTRY_HEADER_BYTES: usize = 2;
/// Bytes of a key suffix kept in its slot as the key head (zero padded if shorter).
pub const HEAD_BYTES: usize = 4;
/// An inner node's value: the child's page id.
pub const CHILD_BYTES: usize = 8;

/// A split divides a node's entries so that each half plus one maximal entry fits: every
/// leaf entry is at most `1 / SPLIT_ENTRY_DIVISOR` of what a node can hold.
const SPLIT_ENTRY_DIVISOR: usize = 4;

/// Bytes every node can give to slots and entries, whatever its fences.
pub const fn entry_capacity_bytes(page_size: usize) -> usize {
    page_size - HEADER_BYTES - 2 * BTREE_KEY_BYTES_MAX
}

/// The largest leaf entry (slot, value length, key, value) for a page size.
pub const fn leaf_entry_bytes_max(page_size: usize) -> usize {
    entry_capacity_bytes(page_size) / SPLIT_ENTRY_DIVISOR
}

/// The largest value a tree of `page_size`-byte pages stores:
/// `(page - 64 - 2 * 256) / 4 - (8 + 2 + 256)`, i.e. 614 bytes at 4 KiB, 3686 at 16 KiB,
/// 15974 at 64 KiB.
pub const fn value_bytes_max(page_size: usize) -> usize {
    leaf_entry_bytes_max(page_size) - SLOT_BYTES - ENTRY_HEADER_BYTES - BTREE_KEY_BYTES_MAX
}

/// The largest inner entry: a maximal separator and a child page id.
pub const INNER_ENTRY_BYTES_MAX: usize = SLOT_BYTES + ENTRY_HEADER_BYTES + BTREE_KEY_BYTES_MAX + CHILD_BYTES;

const _: () = assert!(HEADER_BYTES == CACHE_LINE_BYTES);
const _: () = assert!(CACHE_LINE_BYTES.is_multiple_of(SLOT_BYTES));
// Entry offsets are u16: every byte of the largest page must be addressable.
const _: () = assert!(PAGE_SIZE_MAX_BYTES - 1 <= u16::MAX as usize);
const _: () = assert!(value_bytes_max(PAGE_SIZE_MAX_BYTES) <= u16::MAX as usize);
const _: () = assert!(value_bytes_max(PAGE_SIZE_MIN_BYTES) >= 512);
const _: () = assert!(value_bytes_max(PAGE_SIZE_DEFAULT_BYTES) >= 2048);
const _: () = assert!(INNER_ENTRY_BYTES_MAX <= leaf_entry_bytes_max(PAGE_SIZE_MIN_BYTES));
const _: () = assert!(BTREE_HEIGHT_MAX <= u8::MAX as usize);

/// Leaf or inner node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A leaf (level 0): entries map keys to values; stored as kind byte 1.
    Leaf = 1,
    /// An inner node (level >= 1): entries map separators to child page ids; stored
    /// as kind byte 2.
    Inner = 2,
}

#[inline(always)]
pub(super) fn touch(offset: usize, len: usize) {
    #[cfg(test)]
    lines::touch(offset, len);
    #[cfg(not(test))]
    let _ = (offset, len);
}

#[inline]
pub(super) fn rd_u16(b: &[u8], o: usize) -> usize {
    u16::from_le_bytes([b[o], b[o + 1]]) as usize
}

#[inline]
pub(super) fn rd_u32(b: &[u8], o: usize) -> usize {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as usize
}

#[inline]
pub(super) fn rd_u64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

#[inline]
pub(super) fn wr_u16(b: &mut [u8], o: usize, v: usize) {
    assert!(v <= u16::MAX as usize, "{v} does not fit a 16-bit node field");
    b[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes());
}

#[inline]
pub(super) fn wr_u32(b: &mut [u8], o: usize, v: usize) {
    assert!(v <= u32::MAX as usize, "{v} does not fit a 32-bit node field");
    b[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes());
}

/// The key head of a key suffix: its first four bytes, zero padded, big endian.
#[inline]
pub fn head_of(suffix: &[u8]) -> u32 {
    let mut h = [0u8; HEAD_BYTES];
    let n = suffix.len().min(HEAD_BYTES);
    h[..n].copy_from_slice(&suffix[..n]);
    u32::from_be_bytes(h)
}

/// The head of the key `a ++ b`.
pub(super) fn head_of2(a: &[u8], b: &[u8]) -> u32 {
    let mut h = [0u8; HEAD_BYTES];
    let n = a.len().min(HEAD_BYTES);
    h[..n].copy_from_slice(&a[..n]);
    let m = (HEAD_BYTES - n).min(b.len());
    h[n..n + m].copy_from_slice(&b[..m]);
    u32::from_be_bytes(h)
}

/// Length of the longest common prefix.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The shortest key `s` with `left < s <= right`: `right` cut one byte after its common
/// prefix with `left`.
///
/// # Errors
/// `Corrupted` if `left >= right` (keys out of order in a page).
pub fn shortest_separator(left: &[u8], right: &[u8], pid: PageId) -> NodeResult<Vec<u8>> {
    let cp = common_prefix_len(left, right);
    if left >= right || cp >= right.len() {
        return Err(corrupt(pid, format!("keys out of order: {left:02x?} >= {right:02x?}")));
    }
    let sep = right[..=cp].to_vec();
    assert!(
        left < sep.as_slice() && sep.as_slice() <= right,
        "{pid}: separator {sep:02x?} not in ({left:02x?}, {right:02x?}]"
    );
    Ok(sep)
}

pub(super) fn corrupt(pid: PageId, detail: String) -> BTreeError {
    BTreeError::Corrupted { pid, detail }
}

pub(super) fn not_a_tree(pid: PageId, detail: String) -> BTreeError {
    BTreeError::NotATree { pid, detail }
}

/// Cache-line accounting of node reads, compiled into unit tests only: release code
/// calls an empty inline function.
#[cfg(test)]
pub(crate) mod lines {
    use std::cell::RefCell;

    use crate::limits::CACHE_LINE_BYTES;

    thread_local! {
        static TOUCHED: RefCell<Option<Vec<usize>>> = const { RefCell::new(None) };
    }

    /// Starts recording the lines this thread's node accessors read.
    pub fn start() {
        TOUCHED.with(|t| *t.borrow_mut() = Some(Vec::new()));
    }

    /// Stops recording; the distinct line indexes (relative to the page) read.
    pub fn stop() -> Vec<usize> {
        let mut v = TOUCHED.with(|t| t.borrow_mut().take()).unwrap_or_default();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn touch(offset: usize, len: usize) {
        if len == 0 {
            return;
        }
        TOUCHED.with(|t| {
            if let Some(v) = t.borrow_mut().as_mut() {
                v.extend(offset / CACHE_LINE_BYTES..=(offset + len - 1) / CACHE_LINE_BYTES);
            }
        });
    }
}
