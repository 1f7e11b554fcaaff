//! The expensive whole-tree check and its statistics.
//!
//! A depth-first walk holding shared latches from the root down the current path; it
//! expects no concurrent writer (a split between two visited leaves would look like a
//! broken sibling chain).

use std::collections::HashSet;

use super::BTreeError;
use super::node::{self, HEADER_BYTES, NodeRef, SLOT_BYTES};
use super::{BTree, corrupted};
use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_KEY_BYTES_MAX;
use crate::page::PageSource;

/// What [`BTree::check_invariants`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeStats {
    /// Levels, the leaves included (1 for a root leaf).
    pub height: usize,
    /// Inner (non-leaf) nodes, the root included when it is not a leaf.
    pub inner_nodes: u64,
    /// Leaf nodes (at least 1: an empty tree is a root leaf).
    pub leaves: u64,
    /// Key-value pairs in the leaves.
    pub entries: u64,
    /// Bytes of the full keys of all entries (the node prefix counted in each key).
    pub key_bytes: u64,
    /// Bytes of the values of all entries.
    pub value_bytes: u64,
    /// Fill of the emptiest leaf, in `0.0..=1.0`: (page - header - free bytes) /
    /// (page - header), with free bytes counting garbage as free.
    pub leaf_fill_min: f64,
    /// Mean fill of the leaves, measured as `leaf_fill_min`.
    pub leaf_fill_avg: f64,
    /// Non-root leaves with less than a quarter of a page in slots and entries (valid,
    /// but a delete there tries to merge).
    pub underfull_leaves: u64,
    /// Non-root inner nodes underfull by the same measure.
    pub underfull_inner: u64,
}

impl TreeStats {
    /// Pages the tree occupies.
    pub fn pages(&self) -> u64 {
        self.inner_nodes + self.leaves
    }
}

struct Walk {
    stats: TreeStats,
    fill_sum: f64,
    seen: HashSet<PageId>,
    /// Leaves in key order: page id and its right-sibling link.
    leaves: Vec<(PageId, u64)>,
}

pub(super) fn check<S: PageSource>(tree: &BTree<'_, S>) -> Result<TreeStats, BTreeError> {
    let mut w = Walk {
        stats: TreeStats { leaf_fill_min: 1.0, ..TreeStats::default() },
        fill_sum: 0.0,
        seen: HashSet::new(),
        leaves: Vec::new(),
    };
    let root = tree.source.fix_shared(tree.root)?;
    let level = NodeRef::parse(&root, tree.root)?.level();
    w.stats.height = level as usize + 1;
    check_node(tree, tree.root, &root, level, b"", None, &mut w)?;
    for pair in w.leaves.windows(2) {
        if pair[0].1 != pair[1].0.0 {
            return Err(corrupted(
                pair[0].0,
                format!("right sibling {} but the next leaf is {}", pair[0].1, pair[1].0),
            ));
        }
    }
    let (last, link) = *w.leaves.last().expect("a tree has a leaf");
    if link != 0 {
        return Err(corrupted(last, format!("the rightmost leaf links to {link}")));
    }
    w.stats.leaf_fill_avg = w.fill_sum / w.stats.leaves as f64;
    Ok(w.stats)
}

fn check_node<S: PageSource>(
    tree: &BTree<'_, S>,
    pid: PageId,
    page: &[u8],
    level: u8,
    lower: &[u8],
    upper: Option<&[u8]>,
    w: &mut Walk,
) -> Result<(), BTreeError> {
    let fail = |what: String| Err(corrupted(pid, what));
    if !w.seen.insert(pid) {
        return fail("reached twice".into());
    }
    let n = NodeRef::parse(page, pid)?;
    n.expect_level(level)?;
    // 1. Fences are the separators around the node in its parent; the prefix is theirs.
    if n.lower_fence() != lower || n.upper_fence() != upper {
        return fail(format!(
            "fences {:02x?}..{:02x?}, its parent implies {lower:02x?}..{upper:02x?}",
            n.lower_fence(),
            n.upper_fence()
        ));
    }
    if upper.is_some_and(|u| u <= lower) {
        return fail("empty fence interval".into());
    }
    let plen = upper.map_or(0, |u| node::common_prefix_len(lower, u));
    if n.prefix_len() != plen {
        return fail(format!("prefix of {} bytes, fences share {plen}", n.prefix_len()));
    }
    // 2. Keys: heads, order, within the fences, length limit.
    let mut keys = Vec::with_capacity(n.count());
    let mut heap = n.fence_bytes();
    for i in 0..n.count() {
        let suffix = n.suffix(i)?;
        if n.head(i) != node::head_of(suffix) {
            return fail(format!("slot {i}: head {:#010x} of key suffix {suffix:02x?}", n.head(i)));
        }
        let key = n.full_key(i)?;
        if key.len() > BTREE_KEY_BYTES_MAX {
            return fail(format!("slot {i}: key of {} bytes", key.len()));
        }
        if key.as_slice() < lower || upper.is_some_and(|u| key.as_slice() >= u) {
            return fail(format!("slot {i}: key {key:02x?} outside the fences"));
        }
        if keys.last().is_some_and(|p: &Vec<u8>| *p >= key) {
            return fail(format!("slot {i}: key {key:02x?} not above its predecessor"));
        }
        heap += n.entry_bytes(i)? - SLOT_BYTES;
        keys.push(key);
    }
    // 3. Space: the heap holds exactly the entries, fences and garbage.
    let page_size = page.len();
    let used = HEADER_BYTES + n.count() * SLOT_BYTES + heap;
    if used + n.free_total() != page_size {
        return fail(format!("{used} bytes used and {} free in a page of {page_size}", n.free_total()));
    }
    let is_root = pid == tree.root;
    if n.is_leaf() {
        let s = &mut w.stats;
        s.leaves += 1;
        s.entries += n.count() as u64;
        for (i, k) in keys.iter().enumerate() {
            s.key_bytes += k.len() as u64;
            s.value_bytes += n.value(i)?.len() as u64;
        }
        let fill = (page_size - HEADER_BYTES - n.free_total()) as f64 / (page_size - HEADER_BYTES) as f64;
        s.leaf_fill_min = s.leaf_fill_min.min(fill);
        w.fill_sum += fill;
        if !is_root && n.is_underfull() {
            s.underfull_leaves += 1;
        }
        w.leaves.push((pid, n.link()));
        return Ok(());
    }
    // 4. Inner: separators are page ids; recurse with each child's fences, holding this
    //    node's latch (top-down).
    w.stats.inner_nodes += 1;
    if !is_root && n.is_underfull() {
        w.stats.underfull_inner += 1;
    }
    for i in 0..=n.count() {
        if i < n.count() && n.value(i)?.len() != node::CHILD_BYTES {
            return fail(format!("slot {i}: a value of {} bytes", n.value(i)?.len()));
        }
        let child = tree.source().child_pid(n.child(i)?.0);
        let child_lower = if i == 0 { lower } else { &keys[i - 1][..] };
        let child_upper = if i == n.count() { upper } else { Some(&keys[i][..]) };
        let guard = tree.source.fix_shared(child)?;
        check_node(tree, child, &guard, level - 1, child_lower, child_upper, w)?;
    }
    Ok(())
}
