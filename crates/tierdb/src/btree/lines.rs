//! Leaf operations at cache-line grain (three-tier paper §3.1): point lookups,
//! inserts, updates and deletes read and write a leaf through a [`LinePage`], touching
//! only the lines they need — the header, the slots the binary search probes, the
//! probed keys' bytes, and the entry itself. On an NVM-backed page that is not in DRAM
//! only those lines are loaded. Operations that re-lay the node out (compaction,
//! splits, merges, values that change length) take the whole page instead.
//!
//! The byte layout is [`node`](super::node)'s; these functions mirror `NodeRef::search`,
//! `NodeMut::insert` and `NodeMut::remove` offset for offset, and every offset read from
//! the page is bounds-checked before it is used.

use std::cmp::Ordering;

use super::error::BTreeError;
use super::node::{
    ENTRY_HEADER_BYTES, HEAD_BYTES, HEADER_BYTES, Header, Kind, OFF_COUNT, OFF_GARBAGE, OFF_HEAP_START, SLOT_BYTES,
    head_of,
};
use crate::Result;
use crate::ids::PageId;
use crate::page::LinePage;

fn corrupt(pid: PageId, detail: String) -> BTreeError {
    BTreeError::Corrupted { pid, detail }
}

/// The node's header, checked.
#[inline]
pub fn header<P: LinePage>(p: &mut P, page_size: usize) -> Result<Header, BTreeError> {
    let pid = p.page_id();
    let b = p.read(0, HEADER_BYTES)?;
    Header::parse(b, page_size, pid)
}

/// Head, entry offset and key length of slot `i < count`.
#[inline]
fn slot<P: LinePage>(p: &mut P, i: usize) -> Result<(u32, usize, usize), BTreeError> {
    let s = p.read(HEADER_BYTES + i * SLOT_BYTES, SLOT_BYTES)?;
    Ok((
        u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        u16::from_le_bytes([s[4], s[5]]) as usize,
        u16::from_le_bytes([s[6], s[7]]) as usize,
    ))
}

/// Checks that `off..off + len` lies in the page.
#[inline]
fn inside(h: &Header, pid: PageId, off: usize, len: usize) -> Result<(), BTreeError> {
    if off + len > h.page_size {
        return Err(corrupt(pid, format!("entry bytes {off}..{} run past the page of {}", off + len, h.page_size)));
    }
    Ok(())
}

/// The first slot whose key is `>= key`, and whether it is equal (`NodeRef::search`).
#[inline]
pub fn lower_bound<P: LinePage>(p: &mut P, h: &Header, key: &[u8]) -> Result<(usize, bool), BTreeError> {
    let pid = p.page_id();
    let sk = key.get(h.prefix_len..).unwrap_or(&[]);
    let head = head_of(sk);
    let (mut lo, mut hi) = (0usize, h.count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (hd, off, klen) = slot(p, mid)?;
        let ord = if hd != head {
            hd.cmp(&head)
        } else if klen <= HEAD_BYTES && sk.len() <= HEAD_BYTES {
            klen.cmp(&sk.len())
        } else {
            inside(h, pid, off + ENTRY_HEADER_BYTES, klen)?;
            p.read(off + ENTRY_HEADER_BYTES, klen)?.cmp(sk)
        };
        match ord {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok((mid, true)),
        }
    }
    Ok((lo, false))
}

/// Where slot `pos`'s entry is: `(entry offset, key length, value offset, value length)`.
#[inline]
pub fn entry<P: LinePage>(p: &mut P, h: &Header, pos: usize) -> Result<(usize, usize, usize, usize), BTreeError> {
    let pid = p.page_id();
    let (_, off, klen) = slot(p, pos)?;
    inside(h, pid, off, ENTRY_HEADER_BYTES + klen)?;
    let vl = p.read(off, ENTRY_HEADER_BYTES)?;
    let vlen = u16::from_le_bytes([vl[0], vl[1]]) as usize;
    let vs = off + ENTRY_HEADER_BYTES + klen;
    inside(h, pid, vs, vlen)?;
    Ok((off, klen, vs, vlen))
}

/// Reads the header and checks the page is a leaf.
#[inline]
pub fn leaf_header<P: LinePage>(p: &mut P, page_size: usize) -> Result<Header, BTreeError> {
    let h = header(p, page_size)?;
    if h.kind != Kind::Leaf {
        return Err(corrupt(p.page_id(), "a leaf access reached an inner node".into()));
    }
    Ok(h)
}

/// Inserts at `pos` if the entry fits the contiguous free space (no compaction).
/// Returns false, changing nothing, if it does not: the caller takes the whole page.
pub fn try_insert<P: LinePage>(
    p: &mut P,
    h: &Header,
    pos: usize,
    key: &[u8],
    value: &[u8],
) -> Result<bool, BTreeError> {
    let pid = p.page_id();
    let plen = h.prefix_len;
    if key.len() < plen {
        return Err(corrupt(pid, format!("key {key:02x?} is shorter than the node's prefix")));
    }
    if plen > 0 && p.read(h.lower.0, plen)? != &key[..plen] {
        return Err(corrupt(pid, format!("key {key:02x?} does not start with the node's prefix")));
    }
    let suffix = &key[plen..];
    let heap = ENTRY_HEADER_BYTES + suffix.len() + value.len();
    if SLOT_BYTES + heap > h.free_contiguous() {
        return Ok(false);
    }
    assert!(pos <= h.count, "{pid}: insert at slot {pos} of {}", h.count);
    let off = h.heap_start - heap;
    assert!(
        HEADER_BYTES + (h.count + 1) * SLOT_BYTES <= off,
        "{pid}: {} slots end past the new entry at byte {off}",
        h.count + 1
    );
    let e = p.write(off, heap)?;
    e[..ENTRY_HEADER_BYTES].copy_from_slice(&(value.len() as u16).to_le_bytes());
    e[ENTRY_HEADER_BYTES..ENTRY_HEADER_BYTES + suffix.len()].copy_from_slice(suffix);
    e[ENTRY_HEADER_BYTES + suffix.len()..].copy_from_slice(value);
    let s = p.write(HEADER_BYTES + pos * SLOT_BYTES, (h.count - pos + 1) * SLOT_BYTES)?;
    s.copy_within(..(h.count - pos) * SLOT_BYTES, SLOT_BYTES);
    s[..4].copy_from_slice(&head_of(suffix).to_le_bytes());
    s[4..6].copy_from_slice(&(off as u16).to_le_bytes());
    s[6..8].copy_from_slice(&(suffix.len() as u16).to_le_bytes());
    let hb = p.write(OFF_COUNT, OFF_HEAP_START + 4 - OFF_COUNT)?;
    hb[..2].copy_from_slice(&((h.count + 1) as u16).to_le_bytes());
    let hs = OFF_HEAP_START - OFF_COUNT;
    hb[hs..hs + 4].copy_from_slice(&(off as u32).to_le_bytes());
    Ok(true)
}

/// Removes slot `pos` (`NodeMut::remove`): its entry becomes garbage, or free space if
/// it is the lowest in the heap.
pub fn remove<P: LinePage>(p: &mut P, h: &Header, pos: usize) -> Result<(), BTreeError> {
    assert!(pos < h.count, "{}: remove slot {pos} of {}", p.page_id(), h.count);
    let (off, klen, _, vlen) = entry(p, h, pos)?;
    let bytes = ENTRY_HEADER_BYTES + klen + vlen;
    let s = p.write(HEADER_BYTES + pos * SLOT_BYTES, (h.count - pos) * SLOT_BYTES)?;
    s.copy_within(SLOT_BYTES.., 0);
    let hb = p.write(OFF_COUNT, OFF_GARBAGE + 4 - OFF_COUNT)?;
    hb[..2].copy_from_slice(&((h.count - 1) as u16).to_le_bytes());
    if off == h.heap_start {
        let at = OFF_HEAP_START - OFF_COUNT;
        hb[at..at + 4].copy_from_slice(&((h.heap_start + bytes) as u32).to_le_bytes());
    } else {
        let at = OFF_GARBAGE - OFF_COUNT;
        hb[at..at + 4].copy_from_slice(&((h.garbage + bytes) as u32).to_le_bytes());
    }
    Ok(())
}
