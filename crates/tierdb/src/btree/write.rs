//! Writes: insert, update, upsert, in-place update and delete.
//!
//! A write first tries the leaf alone, fixed exclusive for line-grained access after an
//! optimistic descent. A leaf without room (or a delete that makes it underflow) makes
//! the write start again with a pessimistic descent that holds the unsafe ancestors, so
//! that the split or merge can go up the held chain ([`super::structure`]). A split is
//! logged as a structure change before the entry goes in.

use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_UNDERFULL_DIVISOR;
use crate::page::ExclusivePage;
use crate::page::LinePage;
use crate::page::PageSource;

use super::error::BTreeError;
use super::lines;
use super::log::{LeafChange, Smo};
use super::lookup::Found;
use super::node::{self, INNER_ENTRY_BYTES_MAX, NodeMut, NodeRef, SLOT_BYTES};
use super::{BTree, Lines, corrupted};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WriteMode {
    Insert,
    Update,
    Upsert,
}

/// The outcome of a write attempted on a leaf held exclusive.
enum LeafWrite {
    /// Done, with the operation's result.
    Done(bool),
    /// The leaf must split first.
    NoRoom,
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Inserts `key -> value` if `key` is absent. Returns false, changing nothing, if it
    /// is present.
    ///
    /// # Errors
    /// `KeyTooLarge`, `ValueTooLarge`; bad pages; the source's errors (a split needs a
    /// page).
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool, BTreeError> {
        self.write(key, value, WriteMode::Insert)
    }

    /// Inserts `key -> value` or replaces the value of `key`.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<(), BTreeError> {
        self.write(key, value, WriteMode::Upsert).map(|_| ())
    }

    /// Replaces the value of `key` (with a value of any length). Returns false if `key`
    /// is absent.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn update(&self, key: &[u8], value: &[u8]) -> Result<bool, BTreeError> {
        self.write(key, value, WriteMode::Update)
    }

    /// Overwrites `bytes.len()` bytes of `key`'s value at `offset`, in place: the leaf is
    /// latched exclusive, nothing is re-laid out. Returns false if `key` is absent.
    ///
    /// # Errors
    /// `OffsetOutOfRange` if the range is not inside the value; as [`get`](Self::get).
    pub fn update_in_place(&self, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool, BTreeError> {
        self.check_key(key)?;
        let Some(Found { pid, mut leaf, h, pos }) = self.find(key, true)? else { return Ok(false) };
        let (_, _, vs, value_len) = lines::entry(&mut leaf, &h, pos)?;
        if offset.checked_add(bytes.len()).is_none_or(|end| end > value_len) {
            return Err(BTreeError::OffsetOutOfRange { offset, len: bytes.len(), value_len });
        }
        // Only the bytes written are logged (and, on cache-line-grained pages, loaded).
        let old = self.old_for_log(&mut leaf, vs + offset, bytes.len())?;
        leaf.write(vs + offset, bytes.len())?.copy_from_slice(bytes);
        if let Some(old) = old {
            self.log_leaf_lines(pid, &mut leaf, LeafChange::Patch { key, offset, value: bytes, old: &old })?;
        }
        Ok(true)
    }

    /// Removes `key`. Returns false if it is absent. May merge underfull nodes.
    ///
    /// # Errors
    /// `KeyTooLarge`; bad pages; the source's errors (freeing a page).
    pub fn delete(&self, key: &[u8]) -> Result<bool, BTreeError> {
        self.check_key(key)?;
        {
            let Some(Found { pid, mut leaf, h, pos }) = self.find(key, true)? else { return Ok(false) };
            let (_, klen, _, vlen) = lines::entry(&mut leaf, &h, pos)?;
            let entry_bytes = SLOT_BYTES + node::ENTRY_HEADER_BYTES + klen + vlen;
            let left = h.payload_bytes().saturating_sub(entry_bytes);
            if pid == self.root || left >= h.page_size / BTREE_UNDERFULL_DIVISOR {
                let (_, _, vs, vlen) = lines::entry(&mut leaf, &h, pos)?;
                let old = self.old_for_log(&mut leaf, vs, vlen)?;
                lines::remove(&mut leaf, &h, pos)?;
                if let Some(old) = old {
                    self.log_leaf_lines(pid, &mut leaf, LeafChange::Delete { key, old: &old })?;
                }
                return Ok(true);
            }
        }
        // The leaf underflows: delete under a pessimistic chain, then merge bottom-up.
        let mut chain = self.descend_exclusive(key, delete_safe)?;
        let (pid, leaf) = chain.last_mut().expect("a descent holds at least the leaf");
        let pid = *pid;
        let node = NodeRef::parse(leaf, pid)?;
        let (pos, found) = node.lower_bound(key)?;
        if !found {
            return Ok(false);
        }
        let old = node.value(pos)?.to_vec();
        NodeMut::trusted(leaf, pid).remove(pos)?;
        let lsn = self.log_leaf_whole(pid, leaf, LeafChange::Delete { key, old: &old })?;
        leaf.set_page_lsn(lsn);
        let mut smo = Smo::new();
        self.rebalance(&mut chain, &mut smo, key)?;
        self.finish_smo(&mut chain, smo)?;
        Ok(true)
    }

    /// Insert, update or upsert: optimistic first, pessimistic with splits if the leaf
    /// has no room.
    fn write(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<bool, BTreeError> {
        self.check_key(key)?;
        self.check_value(value)?;
        {
            let (pid, mut leaf) = self.descend_lines(key, true)?;
            if let LeafWrite::Done(r) = self.write_leaf_lines(pid, &mut leaf, key, value, mode)? {
                return Ok(r);
            }
        }
        // An entry of this size fits a node with any prefix.
        let need = SLOT_BYTES + node::ENTRY_HEADER_BYTES + key.len() + value.len();
        let mut chain = self
            .descend_exclusive(key, |n, _| n.free_total() >= if n.is_leaf() { need } else { INNER_ENTRY_BYTES_MAX })?;
        // A split is a structure change of its own, logged (images and end) before the
        // entry goes in: no image holds the entry, so an entry whose record did not
        // reach the log is in no page either, and its record redoes it on the page the
        // split left.
        let idx = chain.len() - 1;
        let (pid, leaf) = &mut chain[idx];
        if let LeafWrite::Done(r) = self.write_leaf(*pid, leaf, key, value, mode)? {
            let lsn = NodeRef::parse(leaf, *pid)?.page_lsn();
            leaf.set_page_lsn(lsn);
            return Ok(r);
        }
        let mut smo = Smo::new();
        let idx = self.make_room(&mut chain, &mut smo, idx, key, need)?;
        self.finish_smo(&mut chain, smo)?;
        let (pid, leaf) = &mut chain[idx];
        match self.write_leaf(*pid, leaf, key, value, mode)? {
            LeafWrite::Done(r) => {
                let lsn = NodeRef::parse(leaf, *pid)?.page_lsn();
                leaf.set_page_lsn(lsn);
                Ok(r)
            }
            LeafWrite::NoRoom => panic!("{pid}: no room for a {need}-byte entry after a split"),
        }
    }

    /// Applies a write to a leaf held exclusive for line-grained access: in place when
    /// the value keeps its length or the new entry fits the contiguous free space, else
    /// on the whole page.
    fn write_leaf_lines(
        &self,
        pid: PageId,
        leaf: &mut Lines<'s, S>,
        key: &[u8],
        value: &[u8],
        mode: WriteMode,
    ) -> Result<LeafWrite, BTreeError> {
        let h = lines::leaf_header(leaf, self.source.page_size())?;
        let (pos, found) = lines::lower_bound(leaf, &h, key)?;
        match (mode, found) {
            (WriteMode::Insert, true) | (WriteMode::Update, false) => return Ok(LeafWrite::Done(false)),
            (_, false) => {
                if lines::try_insert(leaf, &h, pos, key, value)? {
                    self.log_leaf_lines(pid, leaf, LeafChange::Put { key, value, old: None })?;
                    return Ok(LeafWrite::Done(true));
                }
            }
            (_, true) => {
                let (_, _, vs, vlen) = lines::entry(leaf, &h, pos)?;
                if vlen == value.len() {
                    let old = self.old_for_log(leaf, vs, vlen)?;
                    leaf.write(vs, vlen)?.copy_from_slice(value);
                    if let Some(old) = old {
                        self.log_leaf_lines(pid, leaf, LeafChange::Put { key, value, old: Some(&old) })?;
                    }
                    return Ok(LeafWrite::Done(true));
                }
            }
        }
        // Compaction or a value of another length: the whole page.
        let page = leaf.whole()?;
        let node = NodeRef::parse(page, pid)?;
        let fits = match found {
            false => node.free_total() >= node.entry_bytes_for(key, value.len()),
            true => {
                let old = node.value(pos)?.len();
                value.len() <= old || node.free_total() >= value.len() - old
            }
        };
        if !fits {
            return Ok(LeafWrite::NoRoom);
        }
        let mut page = leaf.whole_mut()?;
        let r = self.write_leaf(pid, &mut page, key, value, mode)?;
        let lsn = NodeRef::parse(page, pid)?.page_lsn();
        leaf.set_page_lsn(lsn);
        Ok(r)
    }

    /// Applies a write to a leaf held exclusive, if it has room.
    fn write_leaf<B: std::ops::DerefMut<Target = [u8]>>(
        &self,
        pid: PageId,
        leaf: &mut B,
        key: &[u8],
        value: &[u8],
        mode: WriteMode,
    ) -> Result<LeafWrite, BTreeError> {
        let node = NodeRef::parse(leaf, pid)?;
        if !node.is_leaf() {
            return Err(corrupted(pid, "a write descended to an inner node"));
        }
        let (pos, found) = node.lower_bound(key)?;
        match (mode, found) {
            (WriteMode::Insert, true) | (WriteMode::Update, false) => Ok(LeafWrite::Done(false)),
            (_, false) => {
                if node.free_total() < node.entry_bytes_for(key, value.len()) {
                    return Ok(LeafWrite::NoRoom);
                }
                let done = NodeMut::trusted(leaf, pid).insert(pos, key, value)?;
                assert!(done, "{pid}: an entry that fits was refused");
                self.log_leaf_whole(pid, leaf, LeafChange::Put { key, value, old: None })?;
                Ok(LeafWrite::Done(true))
            }
            (_, true) => {
                let old = node.value(pos)?;
                if value.len() > old.len() && node.free_total() < value.len() - old.len() {
                    return Ok(LeafWrite::NoRoom);
                }
                let old = self.log.map(|_| old.to_vec());
                let done = NodeMut::trusted(leaf, pid).set_value(pos, value)?;
                assert!(done, "{pid}: a value that fits was refused");
                if let Some(old) = old {
                    self.log_leaf_whole(pid, leaf, LeafChange::Put { key, value, old: Some(&old) })?;
                }
                Ok(LeafWrite::Done(true))
            }
        }
    }
}

/// A node is safe for a delete below it if losing one maximal entry keeps it from
/// underflowing; the root if it keeps at least one separator (or is a leaf).
fn delete_safe(node: &NodeRef<'_>, is_root: bool) -> bool {
    if is_root {
        return node.is_leaf() || node.count() >= 2;
    }
    let page = node.page_size();
    let entry_max = if node.is_leaf() { node::leaf_entry_bytes_max(page) } else { INNER_ENTRY_BYTES_MAX };
    node.payload_bytes() >= page / BTREE_UNDERFULL_DIVISOR + entry_max
}
