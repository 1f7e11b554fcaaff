//! Splits and merges of node contents: where a full node splits ([`plan_split`]), the
//! two halves written from a copy of the node ([`split_into`]), and the merge of two
//! neighbours and their separator ([`merge_into`]).
//!
//! The tree calls these with every page involved latched exclusive; the pages written
//! are rebuilt whole with [`Builder`], so their format is exactly what an insert-built
//! node has.

use crate::ids::PageId;

use super::edit::Builder;
use super::format::{
    CHILD_BYTES, ENTRY_HEADER_BYTES, HEADER_BYTES, Kind, NodeResult, SLOT_BYTES, common_prefix_len, corrupt,
    leaf_entry_bytes_max, shortest_separator,
};
use super::view::NodeRef;

/// Where a node splits: entries `0..at` stay left; the separator goes to the parent.
/// An inner node's entry `at` moves up as the separator (its child becomes the left
/// node's rightmost child).
#[derive(Debug)]
pub struct SplitPlan {
    /// Entries `0..at` stay in the left node. A leaf's entries from `at` go right; an
    /// inner node's from `at + 1`.
    pub at: usize,
    /// The full separator key: the left node's new upper fence, the right node's lower
    /// fence, and the key inserted in the parent.
    pub sep: Vec<u8>,
}

/// Chooses the split of a full `node` that must take `key`.
///
/// At the middle by bytes, except for an insert past the last key of a leaf (an append:
/// a sequential load, or TPC-C's new orders at the end of a district's range) or of the
/// rightmost inner node: then everything that still fits next to the new upper fence
/// stays left, and the new right node starts almost empty. Splitting an append in the
/// middle leaves every left half half-empty: a load of two TPC-C warehouses at once
/// (each appending in its own key range of the same trees) grew the database by a
/// quarter, and a run's orders filled their pages by half.
///
/// # Errors
/// `Corrupted` for entries out of order or a node too small to split.
pub fn plan_split(node: &NodeRef<'_>, key: &[u8]) -> NodeResult<SplitPlan> {
    let plan = choose_split(node, key)?;
    // Both halves keep an entry (a leaf's right half may start empty on an append; an
    // inner node's right half keeps at least its rightmost child).
    let n = node.count;
    let at_ok = match node.kind {
        Kind::Leaf => (1..=n).contains(&plan.at),
        Kind::Inner => (1..n).contains(&plan.at),
    };
    assert!(at_ok, "{}: split of a {:?} node of {n} entries at {}", node.pid, node.kind, plan.at);
    Ok(plan)
}

/// [`plan_split`]'s choice, before its checks.
fn choose_split(node: &NodeRef<'_>, key: &[u8]) -> NodeResult<SplitPlan> {
    let n = node.count;
    let pid = node.pid;
    let rightmost = node.upper_fence().is_none();
    if n >= 2 && (rightmost || node.kind == Kind::Leaf) {
        let (pos, found) = node.search(key, node.kind == Kind::Inner)?;
        if pos == n && !found {
            if node.kind == Kind::Inner {
                // The last separator moves up; the right node keeps only the rightmost
                // child. Fits: the prefix is empty (infinite upper fence), so the new
                // upper fence is no longer than the entry that leaves.
                return Ok(SplitPlan { at: n - 1, sep: node.full_key(n - 1)? });
            }
            let lower = node.lower_fence();
            let mut left_bytes = HEADER_BYTES + lower.len();
            let mut sizes = Vec::with_capacity(n);
            for i in 0..n {
                sizes.push(node.entry_bytes(i)?);
                left_bytes += sizes[i];
            }
            let mut right_min = key.to_vec();
            for at in (1..=n).rev() {
                let last = node.full_key(at - 1)?;
                let sep = shortest_separator(&last, &right_min, pid)?;
                // The prefix grows from the node's (empty for the rightmost) to the
                // new fences' common prefix, which is at least as long: lower <= sep
                // < the old upper fence.
                let shrink = at * common_prefix_len(lower, &sep).saturating_sub(node.prefix_len());
                if left_bytes + sep.len() <= node.page_size() + shrink {
                    return Ok(SplitPlan { at, sep });
                }
                left_bytes -= sizes[at - 1];
                right_min = last;
            }
        }
    }
    if node.kind == Kind::Leaf
        && n >= 2
        && let Some(plan) = plan_boundary_split(node, key)?
    {
        return Ok(plan);
    }
    let min = if node.kind == Kind::Leaf { 2 } else { 3 };
    if n < min {
        return Err(corrupt(pid, format!("cannot split a {:?} node of {n} entries", node.kind)));
    }
    let mut total = 0;
    let mut sizes = Vec::with_capacity(n);
    for i in 0..n {
        sizes.push(node.entry_bytes(i)?);
        total += sizes[i];
    }
    let mut at = 0;
    let mut acc = 0;
    while at < n && acc < total / 2 {
        acc += sizes[at];
        at += 1;
    }
    match node.kind {
        Kind::Leaf => {
            let at = at.clamp(1, n - 1);
            let sep = shortest_separator(&node.full_key(at - 1)?, &node.full_key(at)?, pid)?;
            Ok(SplitPlan { at, sep })
        }
        Kind::Inner => {
            let at = at.clamp(1, n - 2);
            Ok(SplitPlan { at, sep: node.full_key(at)? })
        }
    }
}

/// How many bytes longer `key`'s common prefix with its left neighbour must be than
/// with its right one for [`plan_boundary_split`] to call the key an append to the left
/// neighbour's key group. Two: random keys of one group (TPC-C's customer ids in a
/// district, YCSB's hashed keys) rarely differ that much; the last order of a district
/// against the first of the next one always does.
const BOUNDARY_PREFIX_BYTES: usize = 2;

/// A leaf split at the boundary of two key groups: `key` goes between its neighbours
/// `l` and `r`, sharing a longer prefix with `l` (e.g. the next order of a district
/// whose leaf ends with the next district's first orders). A split in the middle would
/// leave a half-empty left node at every split, since the group keeps growing at the
/// same place (two TPC-C warehouses loaded at once made the database a quarter larger).
/// The split goes at the boundary instead: `key` stays left with its group if the left
/// part has room for it, else it starts the right node before `r` (the next keys of
/// its group then go in front of `r` and split at that boundary with room to spare).
/// `None` when the key is not at such a boundary, or the half that takes `key` would not
/// have room for a maximal entry, or the other half would not fit under the new fence
/// (computed with the node's prefix: the halves' prefixes can only be longer).
fn plan_boundary_split(node: &NodeRef<'_>, key: &[u8]) -> NodeResult<Option<SplitPlan>> {
    let (n, pid) = (node.count, node.pid);
    let (pos, found) = node.search(key, false)?;
    if found || pos == 0 || pos >= n {
        return Ok(None);
    }
    let (l, r) = (node.full_key(pos - 1)?, node.full_key(pos)?);
    if common_prefix_len(key, &l) < common_prefix_len(key, &r) + BOUNDARY_PREFIX_BYTES {
        return Ok(None);
    }
    let page = node.page_size();
    let room = leaf_entry_bytes_max(page);
    let mut sizes = Vec::with_capacity(n);
    for i in 0..n {
        sizes.push(node.entry_bytes(i)?);
    }
    // Each half without its new fence: the separator becomes the left half's upper
    // fence and the right half's lower one, so both halves must fit with it, the one
    // that takes `key` with room for a maximal entry besides. A separator cut from
    // keys of one group can be far longer than the fence it replaces, and the half
    // that does not take the key may be nearly the whole (full) node.
    let left = HEADER_BYTES + node.lower_fence().len() + sizes[..pos].iter().sum::<usize>();
    let right = HEADER_BYTES + node.upper_fence().map_or(0, <[u8]>::len) + sizes[pos..].iter().sum::<usize>();
    let sep = shortest_separator(key, &r, pid)?;
    if left + sep.len() + room <= page && right + sep.len() <= page {
        return Ok(Some(SplitPlan { at: pos, sep }));
    }
    let sep = shortest_separator(&l, key, pid)?;
    if right + sep.len() + room <= page && left + sep.len() <= page {
        return Ok(Some(SplitPlan { at: pos, sep }));
    }
    Ok(None)
}

/// Writes the halves of `old` (a copy of the node's page) into `left` (the node's own
/// page, keeping its id) and `right` (a fresh page).
///
/// # Errors
/// `Corrupted` if the source entries are inconsistent.
pub fn split_into(
    old: &NodeRef<'_>,
    plan: &SplitPlan,
    left: &mut [u8],
    left_pid: PageId,
    right: &mut [u8],
    right_pid: PageId,
) -> NodeResult<()> {
    let prefix = old.prefix();
    let (kind, level, n) = (old.kind, old.level, old.count);
    assert!(plan.at <= n, "{left_pid}: split at {} of {n}", plan.at);
    assert!(kind == Kind::Leaf || plan.at < n, "{left_pid}: inner split at {} of {n}", plan.at);
    let (left_link, right_first) = match kind {
        Kind::Leaf => (right_pid.0, plan.at),
        Kind::Inner => (old.child(plan.at)?.0, plan.at + 1),
    };
    let mut l = Builder::new(left, left_pid, kind, level, old.lower_fence(), Some(&plan.sep), left_link)?;
    for i in 0..plan.at {
        let (s, v) = old.entry(i)?;
        l.push([prefix, s], v)?;
    }
    let mut r = Builder::new(right, right_pid, kind, level, &plan.sep, old.upper_fence(), old.link())?;
    for i in right_first..n {
        let (s, v) = old.entry(i)?;
        r.push([prefix, s], v)?;
    }
    Ok(())
}

/// Bytes of the node merging `left`, the parent's separator `sep` (pulled down between
/// them for inner nodes) and `right`, under the merged fences.
pub fn merged_bytes(left: &NodeRef<'_>, sep: &[u8], right: &NodeRef<'_>) -> usize {
    let lower = left.lower_fence();
    let upper = right.upper_fence();
    let plen = upper.map_or(0, |u| common_prefix_len(lower, u));
    let mut bytes = HEADER_BYTES + lower.len() + upper.map_or(0, <[u8]>::len);
    for n in [left, right] {
        bytes += n.payload_bytes() + n.count * n.prefix_len.saturating_sub(plen);
    }
    if left.kind == Kind::Inner {
        bytes += SLOT_BYTES + ENTRY_HEADER_BYTES + sep.len().saturating_sub(plen) + CHILD_BYTES;
    }
    bytes
}

/// Whether `left`, `sep` and `right` fit in one node.
pub fn merge_fits(left: &NodeRef<'_>, sep: &[u8], right: &NodeRef<'_>) -> bool {
    merged_bytes(left, sep, right) <= left.page_size()
}

/// Writes the merge of `left` (a copy of the left page), `sep` and `right` into `dst`
/// (the left page), which takes over `right`'s upper fence and link.
///
/// # Errors
/// `Corrupted` if the source entries are inconsistent.
pub fn merge_into(
    left: &NodeRef<'_>,
    sep: &[u8],
    right: &NodeRef<'_>,
    dst: &mut [u8],
    dst_pid: PageId,
) -> NodeResult<()> {
    assert!(
        left.kind == right.kind && left.level == right.level,
        "{dst_pid}: merging a {:?} node at level {} with a {:?} node at level {}",
        left.kind,
        left.level,
        right.kind,
        right.level
    );
    let mut b =
        Builder::new(dst, dst_pid, left.kind, left.level, left.lower_fence(), right.upper_fence(), right.link())?;
    let lp = left.prefix();
    for i in 0..left.count {
        let (s, v) = left.entry(i)?;
        b.push([lp, s], v)?;
    }
    if left.kind == Kind::Inner {
        b.push([sep, &[]], &left.link().to_le_bytes())?;
    }
    let rp = right.prefix();
    for i in 0..right.count {
        let (s, v) = right.entry(i)?;
        b.push([rp, s], v)?;
    }
    Ok(())
}
