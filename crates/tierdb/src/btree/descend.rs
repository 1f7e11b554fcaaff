//! Descents from the root to the leaf holding a key.
//!
//! Optimistic descents read inner nodes without latches: a step counts only after its
//! page validates, and a page that changed restarts the descent from the root; after
//! `BTREE_OPTIMISTIC_RESTARTS_MAX` restarts a descent couples shared latches instead.
//! The pessimistic descent couples exclusive latches and keeps the chain of ancestors
//! that are not safe. Latches are only waited for top-down, so descents cannot deadlock.

use crate::Result;
use crate::ids::PageId;
use crate::limits::{BTREE_OPTIMISTIC_RESTARTS_MAX, BTREE_RESTARTS_MAX};
use crate::page::OptimisticPage;
use crate::page::PageSource;

use super::error::BTreeError;
use super::lines;
use super::node::{Kind, NodeRef};
use super::{BTree, Chain, Lines, Optimistic, Shared, corrupted};

/// One step of an optimistic descent through node `pid` (bytes `page`, expected at
/// `level` if its parent said so): `None` if it is a leaf, else where the reference to
/// the child holding `key` lies, the reference, and the child's level. Nothing in it
/// counts until the page validates.
#[inline]
pub(super) fn inner_step(
    page: &[u8],
    pid: PageId,
    level: Option<u8>,
    key: &[u8],
) -> Result<Option<(usize, u64, u8)>, BTreeError> {
    let node = NodeRef::parse(page, pid)?;
    if let Some(l) = level {
        node.expect_level(l)?;
    }
    if node.is_leaf() {
        return Ok(None);
    }
    // The header check keeps an inner node at level 1 or above.
    debug_assert!(node.level() >= 1, "{pid}: an inner node at level 0");
    let (offset, raw) = node.child_ref(node.child_index(key)?)?;
    Ok(Some((offset, raw, node.level() - 1)))
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Descends to the leaf for `key` and returns it latched shared (whole page: for
    /// scans).
    #[inline]
    pub(super) fn descend_shared(&self, key: &[u8]) -> Result<(PageId, Shared<'s, S>), BTreeError> {
        self.descend_with(
            key,
            |_, raw| Ok(self.source.fix_shared(self.source.child_pid(raw))?),
            |leaf, pid| Ok(NodeRef::parse(leaf, pid)?.is_leaf()),
        )
    }

    /// Descends to the leaf for `key` and returns it fixed for cache-line-grained
    /// access, shared or exclusive.
    #[inline]
    pub(super) fn descend_lines(&self, key: &[u8], exclusive: bool) -> Result<(PageId, Lines<'s, S>), BTreeError> {
        let page_size = self.source.page_size();
        self.descend_with(
            key,
            |parent, raw| match parent {
                Some((parent, offset)) => Ok(self.source.fix_child_lines(parent, offset, raw, exclusive)?),
                None => Ok(self.source.fix_lines(PageId(raw), exclusive)?),
            },
            |leaf, _| Ok(lines::header(leaf, page_size)?.kind == Kind::Leaf),
        )
    }

    /// Descends to the leaf for `key` and fixes it with `fix_leaf(parent, reference)`
    /// (the parent read optimistically and where the reference lies in it, if there is
    /// a parent; the reference is then as stored, perhaps swizzled, else a page id);
    /// `is_leaf` checks the fixed page is a leaf. Inner nodes are read optimistically (no latch, so
    /// readers on the same upper levels do not contend for cache lines): each step is
    /// trusted only after the node validates, and a node that changed meanwhile
    /// restarts the descent from the root. After `BTREE_OPTIMISTIC_RESTARTS_MAX`
    /// restarts it falls back to latch coupling.
    #[inline]
    fn descend_with<L>(
        &self,
        key: &[u8],
        fix_leaf: impl Fn(Option<(&Optimistic<'s, S>, usize)>, u64) -> Result<L, BTreeError>,
        is_leaf: impl Fn(&mut L, PageId) -> Result<bool, BTreeError>,
    ) -> Result<(PageId, L), BTreeError> {
        'restart: for _ in 0..BTREE_OPTIMISTIC_RESTARTS_MAX {
            let mut pid = self.root;
            let mut page = self.source.fix_optimistic(pid)?;
            let mut level = None;
            loop {
                // Read the step; nothing in it counts until the page validates.
                let step = inner_step(&page, pid, level, key);
                if !page.validate() {
                    continue 'restart;
                }
                let (via, raw, next_level) = match step? {
                    // Only the root can be a leaf here (levels are checked on the way).
                    None => (None, pid.0, 0),
                    Some((offset, raw, l)) => (Some((&page, offset)), raw, l),
                };
                if next_level == 0 {
                    let mut leaf = match fix_leaf(via, raw) {
                        Ok(leaf) => leaf,
                        // A page freed under a stale parent is a restart, not an error.
                        Err(_) if !page.validate() => continue 'restart,
                        Err(e) => return Err(e),
                    };
                    if !page.validate() {
                        continue 'restart;
                    }
                    // Under the latch the leaf is stable: check it is what the parent said.
                    let next = self.source.child_pid(raw);
                    if !is_leaf(&mut leaf, next)? {
                        continue 'restart; // the root split between the two reads
                    }
                    return Ok((next, leaf));
                }
                let Some((_, offset)) = via else { unreachable!("an inner step has a parent") };
                let child = match self.source.fix_child_optimistic(&page, offset, raw) {
                    Ok(child) => child,
                    Err(_) if !page.validate() => continue 'restart,
                    Err(e) => return Err(e.into()),
                };
                // (A swizzled reference names the child's frame: its page id is read
                // from there, and counts only if the parent still validates.)
                pid = self.source.child_pid(raw);
                if !page.validate() {
                    continue 'restart;
                }
                page = child;
                level = Some(next_level);
            }
        }
        // Writers or evictions kept invalidating the path: take the latched way down,
        // which cannot be invalidated.
        self.descend_coupled(key, fix_leaf, is_leaf)
    }

    /// Descends to the leaf for `key` with shared latch coupling (the child is latched
    /// before the parent is released) and fixes the leaf with `fix_leaf`: slower under
    /// contention, restarts only if the root splits while it is fixed as a leaf.
    fn descend_coupled<L>(
        &self,
        key: &[u8],
        fix_leaf: impl Fn(Option<(&Optimistic<'s, S>, usize)>, u64) -> Result<L, BTreeError>,
        is_leaf: impl Fn(&mut L, PageId) -> Result<bool, BTreeError>,
    ) -> Result<(PageId, L), BTreeError> {
        for _ in 0..BTREE_RESTARTS_MAX {
            let mut pid = self.root;
            let mut page = self.source.fix_shared(pid)?;
            let mut level = None;
            loop {
                let node = NodeRef::parse(&page, pid)?;
                if let Some(l) = level {
                    node.expect_level(l)?;
                }
                if node.is_leaf() {
                    // The root is a leaf: fix it the leaf's way.
                    drop(page);
                    let mut leaf = fix_leaf(None, pid.0)?;
                    if is_leaf(&mut leaf, pid)? {
                        return Ok((pid, leaf));
                    }
                    break; // the root split meanwhile
                }
                let child = self.source.child_pid(node.child_for(key)?.0);
                let child_level = node.level() - 1;
                if child_level == 0 {
                    let mut leaf = fix_leaf(None, child.0)?;
                    if !is_leaf(&mut leaf, child)? {
                        return Err(corrupted(child, "a level-1 node's child is not a leaf"));
                    }
                    return Ok((child, leaf));
                }
                level = Some(child_level);
                page = self.source.fix_shared(child)?;
                pid = child;
            }
        }
        Err(BTreeError::RestartLimit { op: "descent", restarts: BTREE_RESTARTS_MAX })
    }

    /// The pessimistic descent: exclusive coupling from the root; ancestors are released
    /// as soon as the current node is `safe(node, is_root)`. Returns the held chain, the
    /// leaf last.
    pub(super) fn descend_exclusive(
        &self,
        key: &[u8],
        safe: impl Fn(&NodeRef<'_>, bool) -> bool,
    ) -> Result<Chain<'s, S>, BTreeError> {
        let mut chain: Chain<'s, S> = Vec::new();
        let mut pid = self.root;
        let mut level = None;
        loop {
            let page = self.source.fix_exclusive(pid)?;
            let node = NodeRef::parse(&page, pid)?;
            if let Some(l) = level {
                node.expect_level(l)?;
            }
            let next = if node.is_leaf() { None } else { Some((node.child_for(key)?, node.level() - 1)) };
            if safe(&node, pid == self.root) {
                chain.clear(); // Releases the ancestors top-down.
            }
            chain.push((pid, page));
            match next {
                None => return Ok(chain),
                Some((child, l)) => (pid, level) = (child, Some(l)),
            }
        }
    }
}
