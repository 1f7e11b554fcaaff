//! A concurrent B+-tree over any [`PageSource`].
//!
//! The tree knows pages only as latched guards from its source: it never learns which
//! tier a page is on. Nodes are slotted pages with prefix truncation and key heads
//! (`node/`, read through [`NodeRef`]); the format, the limits and the protocol below
//! are also in `docs/btree.md`.
//!
//! Files: `node/` (the node format), `descend.rs` (root to leaf), `lookup.rs` (point
//! lookups), `write.rs` (inserts, updates, deletes), `structure.rs` (splits and merges up
//! a held chain), `log.rs` (what a logged tree reports), `lines.rs` (leaf access at
//! cache-line grain), `batch.rs` (lookups in batches), `bulk.rs` (bulk load),
//! `cursor.rs` (scans), `bounded.rs` (bounded reads in batches, forward and reverse; a
//! tree's pages), `check.rs` (invariants); this file holds the handle.
//!
//! Invariants (checked by [`BTree::check_invariants`]): every node's keys are strictly
//! increasing and lie within its fences, `lower <= key < upper`; a child's fences are the
//! separators around it in its parent; all leaves are at level 0 and every inner node is
//! one level above its children; the leaves, left to right, form a chain of right-sibling
//! links ending in 0. The root's page id never changes: a root split moves the root's
//! contents into two new children, and a root with a single child absorbs that child.
//!
//! Concurrency. Many threads share one `&BTree`. Latches are only ever *waited for*
//! top-down (parent before child) or left to right (a leaf before its right sibling;
//! a left node before its right neighbour under the same parent), so there is no cycle:
//!
//! - lookups and scans read inner nodes optimistically (validated, restarted when a
//!   writer interfered; shared latch coupling after too many restarts) and latch the leaf;
//!   scans move right along sibling links with shared coupling; reverse reads move left
//!   by descending again from the root, coupling shared latches;
//! - writes descend like lookups (inner nodes read optimistically) to the leaf, fixed
//!   exclusive. If the leaf must split (or underflows on a delete), the operation releases
//!   everything and descends again pessimistically, coupling exclusive latches from the
//!   root and releasing all ancestors as soon as the current node is *safe* (has room for
//!   one maximal separator; or, for deletes, stays above the underflow bound after losing
//!   one). The held chain is then modified bottom-up.
//!
//! Leaves are reached at cache-line grain for point operations (`btree/lines.rs`): only the
//! lines a lookup, insert, update or delete needs are made resident. Inner nodes, scans
//! and restructuring use whole pages.
//!
//! Underflow: a delete that leaves a non-root node with less than a quarter of the page
//! in entries merges it with its right sibling under the same parent if the merged node
//! fits in a page, else with its left sibling if that fits; the emptied (right) page is
//! freed. Parents that underflow in turn are merged the same way, and a root left with a
//! single child absorbs it. A node that cannot merge stays underfull (still valid), and
//! updates that shrink values never merge.
//!
//! Splits are at the middle by bytes, except an insert past the last key of the
//! rightmost node (a sequential load), which keeps the left node nearly full.
//!
//! An empty tree can instead be loaded from sorted input bottom-up ([`BTree::bulk_load`],
//! `btree/bulk.rs`): nodes filled left to right to a fill factor, unlogged.

mod batch;
mod bounded;
mod bulk;
mod check;
mod cursor;
mod descend;
mod error;
mod lines;
mod log;
mod lookup;
pub(crate) mod node;
mod structure;
mod write;

pub use bounded::RangeRead;
pub use check::TreeStats;
pub use cursor::Cursor;
pub use error::BTreeError;
pub use log::{LeafChange, TreeLog};
pub use node::{Builder as NodeBuilder, Kind as NodeKind, NODE_MAGIC, NodeMut, NodeRef, value_bytes_max};

use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_KEY_BYTES_MAX;
use crate::page::ExclusivePage;
use crate::page::PageSource;
use log::Smo;
use node::{Builder, Kind};

type Shared<'s, S> = <S as PageSource>::Shared<'s>;
type Exclusive<'s, S> = <S as PageSource>::Exclusive<'s>;
type Lines<'s, S> = <S as PageSource>::Lines<'s>;
type Optimistic<'s, S> = <S as PageSource>::Optimistic<'s>;
/// Exclusive guards from the highest held ancestor down to the current node.
type Chain<'s, S> = Vec<(PageId, Exclusive<'s, S>)>;

/// A B+-tree of byte-string keys and values, rooted at a fixed page of `source`.
///
/// A handle is two words and `Copy`; it is `Sync` when the source is, so threads share
/// one `&BTree` (or copies of it).
pub struct BTree<'s, S: PageSource> {
    source: &'s S,
    root: PageId,
    /// Where changes are logged (a transaction), if anywhere.
    log: Option<&'s dyn TreeLog>,
}

impl<S: PageSource> Clone for BTree<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: PageSource> Copy for BTree<'_, S> {}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Creates an empty tree: allocates its root, an empty leaf.
    ///
    /// # Errors
    /// The source's allocation errors.
    pub fn create(source: &'s S) -> Result<Self, BTreeError> {
        let mut page = source.allocate()?;
        let pid = page.page_id();
        Builder::new(&mut page, pid, Kind::Leaf, 0, &[], None, 0)?;
        Ok(BTree { source, root: pid, log: None })
    }

    /// Opens the tree rooted at `root`, checking that the page holds a root node.
    ///
    /// # Errors
    /// `NotATree` if the page is not a node or not a root (it has fences);
    /// `Corrupted` for an inconsistent header; the source's fix errors.
    pub fn open(source: &'s S, root: PageId) -> Result<Self, BTreeError> {
        let page = source.fix_shared(root)?;
        let node = NodeRef::parse(&page, root)?;
        if !node.lower_fence().is_empty() || node.upper_fence().is_some() {
            return Err(BTreeError::NotATree { pid: root, detail: "a node with fences, not a root".into() });
        }
        Ok(BTree { source, root, log: None })
    }

    /// This tree, with every change logged to `log` (shorter-lived than the source).
    pub fn logged<'l>(self, log: &'l dyn TreeLog) -> BTree<'l, S>
    where
        's: 'l,
    {
        BTree { source: self.source, root: self.root, log: Some(log) }
    }

    /// The root's page id, fixed for the tree's life.
    pub fn root(&self) -> PageId {
        self.root
    }

    /// The page source the tree's nodes are fixed from (the same for the tree's life).
    pub fn source(&self) -> &'s S {
        self.source
    }

    /// The longest value this tree stores (it depends on the page size).
    pub fn value_bytes_max(&self) -> usize {
        value_bytes_max(self.source.page_size())
    }

    fn check_key(&self, key: &[u8]) -> Result<(), BTreeError> {
        if key.len() > BTREE_KEY_BYTES_MAX {
            return Err(BTreeError::KeyTooLarge { len: key.len(), max: BTREE_KEY_BYTES_MAX });
        }
        Ok(())
    }

    fn check_value(&self, value: &[u8]) -> Result<(), BTreeError> {
        let page_size = self.source.page_size();
        let max = value_bytes_max(page_size);
        if value.len() > max {
            return Err(BTreeError::ValueTooLarge { len: value.len(), max, page_size });
        }
        Ok(())
    }

    /// Calls `f(key, value)` for the keys `>= start` in order until `f` returns false.
    /// Holds one or two shared leaf latches while `f` runs: `f` must not use the tree.
    ///
    /// # Errors
    /// `KeyTooLarge` for `start`; bad pages; the source's fix errors.
    pub fn scan(&self, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<(), BTreeError> {
        self.check_key(start)?;
        self.scan_from(start, true, f)
    }

    /// A forward cursor over the keys `>= start`. It copies a leaf's worth of entries
    /// at a time and holds no latch between calls, so the caller may use the tree (even
    /// write to it) while iterating; each batch is a consistent snapshot of one leaf.
    pub fn range(&self, start: &[u8]) -> Cursor<'_, 's, S> {
        Cursor::new(self, start)
    }

    /// Walks the whole tree and checks every invariant (order, fences, prefixes, heads,
    /// separators, levels, sibling links, space accounting). Expensive; for tests, on a
    /// tree no thread is changing.
    ///
    /// # Errors
    /// `Corrupted` naming the first violation; the source's fix errors.
    pub fn check_invariants(&self) -> Result<TreeStats, BTreeError> {
        check::check(self)
    }

    /// Frees every page of the tree, the root included. The caller guarantees that no
    /// other handle of this tree is used again.
    ///
    /// # Errors
    /// Bad pages; the source's errors.
    pub fn destroy(self) -> Result<(), BTreeError> {
        let mut stack = vec![self.root];
        let mut seen = std::collections::HashSet::new();
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                return Err(corrupted(pid, "reached twice: the tree is not a tree"));
            }
            let page = self.source.fix_exclusive(pid)?;
            let node = NodeRef::parse(&page, pid)?;
            if !node.is_leaf() {
                for i in 0..=node.count() {
                    stack.push(node.child(i)?);
                }
            }
            let mut smo = Smo::new();
            smo.to_free.push((pid, page));
            self.finish_smo(&mut Vec::new(), smo)?;
        }
        Ok(())
    }
}

impl<S: PageSource> std::fmt::Debug for BTree<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTree").field("root", &self.root).finish_non_exhaustive()
    }
}

/// A `Corrupted` error of page `pid`.
fn corrupted(pid: PageId, detail: impl Into<String>) -> BTreeError {
    BTreeError::Corrupted { pid, detail: detail.into() }
}

#[cfg(test)]
mod tests;
