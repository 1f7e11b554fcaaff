//! Bulk load: an empty tree built bottom-up from records in strictly increasing key order.
//!
//! Records stream through one *level builder* per level. A level keeps two nodes in
//! memory: the *open* node, which is taking items, and the *held* node, closed before it
//! but not yet written (the end of a level may still move its upper fence). An item is a
//! leaf record, or, one level up, a child: its page and the separator after it (its upper
//! fence). Each level, for each item:
//!
//! 1. computes, exactly, the bytes of the open node if it were closed right after the
//!    item: header, both fences, slots and entries after prefix truncation. A leaf's
//!    upper fence is then the shortest separator between the item and the next record,
//!    so the leaf level decides one record late; an inner node's is the item's own
//!    separator, and the item becomes the node's link (rightmost child);
//! 2. if that is within the fill limit, or the node has fewer than its minimum of items
//!    (one record; two children), the item joins the open node;
//! 3. else the open node is closed before the item: it gets a fresh page; the held node,
//!    now complete, is written whole into its page (linked to the open node's page if it
//!    is a leaf) and posted as an item to the level above; the open node becomes the
//!    held one, and the item opens the next node.
//!
//! At the end of the input, each level from the leaves up: a level that never closed a
//! node is the top, and its node is written into the root page (the root's id is fixed
//! for the tree's life); otherwise, if its last node is underfull (or an inner node with
//! a single child), the last two nodes are re-cut where the larger of them is smallest,
//! both are written, and the last is posted, as the last item, to the level above.
//!
//! Nodes are built with [`Builder`], so their format is exactly what splits write:
//! fences are the separators around the node in its parent (the leftmost node of a level
//! has the empty lower fence, the rightmost an infinite upper fence), the prefix is the
//! fences' common prefix, leaves are chained left to right. Every node is filled up to
//! `fill × page size` bytes, except the last of a level, which may be fuller (after the
//! re-cut) or emptier, and a node holding only its minimum of items.
//!
//! Pages come from [`PageSource::allocate`], one per node; the root page is latched
//! exclusive for the whole load and written last, so until then the tree is the empty
//! tree, and a load that fails frees every page it took. Changes are not logged: a tree
//! with a log is refused (see [`BTree::bulk_load`]).

use super::error::BTreeError;
use super::node::{
    Builder, CHILD_BYTES, ENTRY_HEADER_BYTES, HEADER_BYTES, INNER_ENTRY_BYTES_MAX, Kind, NodeRef, NodeResult,
    SLOT_BYTES,
};
use super::{BTree, Exclusive, corrupted};
use crate::ids::PageId;
use crate::limits::{
    BTREE_BULK_FILL_MIN, BTREE_HEIGHT_MAX, BTREE_KEY_BYTES_MAX, BTREE_UNDERFULL_DIVISOR, PAGE_SIZE_MIN_BYTES,
};
use crate::page::ExclusivePage;
use crate::page::PageSource;

/// Items an inner node takes before its size is checked: a node of two children (one
/// separator) always fits. A leaf takes one record unchecked (every leaf entry fits
/// any node: `node::value_bytes_max`).
const INNER_ITEMS_MIN: usize = 2;

// An inner node of three children (two separators) with the longest fences stays within
// the smallest fill limit: a level's nodes are closed only after three children, so at
// its end the last two nodes hold at least four, enough for two nodes of two each.
const _: () = assert!(
    HEADER_BYTES + 2 * BTREE_KEY_BYTES_MAX + 2 * INNER_ENTRY_BYTES_MAX
        <= (BTREE_BULK_FILL_MIN * PAGE_SIZE_MIN_BYTES as f64) as usize
);

/// One item of a level: a record of the leaf level, or a child one level up.
#[derive(Default)]
struct Item {
    /// Leaf: the record's key. Inner: the child's upper fence, the separator after it
    /// (empty for the last child of a level, whose upper fence is infinite).
    key: Vec<u8>,
    /// Leaf: the record's value. Inner: the child's page id, little endian.
    value: Vec<u8>,
}

/// A closed node whose page is allocated but not yet written.
struct Held<'s, S: PageSource + 's> {
    pid: PageId,
    page: Exclusive<'s, S>,
    lower: Vec<u8>,
    upper: Vec<u8>,
}

/// The builder of one level.
struct Level<'s, S: PageSource + 's> {
    kind: Kind,
    level: u8,
    /// The held node's items (`..held_len`), then the open node's.
    items: Vec<Item>,
    held: Option<Held<'s, S>>,
    held_len: usize,
    /// The open node's lower fence.
    lower: Vec<u8>,
    /// [`entry_bytes`] summed over the open node's items.
    sum: usize,
}

impl<S: PageSource> Level<'_, S> {
    fn new(kind: Kind, level: u8) -> Self {
        Level { kind, level, items: Vec::new(), held: None, held_len: 0, lower: Vec::new(), sum: 0 }
    }

    fn items_min(&self) -> usize {
        match self.kind {
            Kind::Leaf => 1,
            Kind::Inner => INNER_ITEMS_MIN,
        }
    }
}

/// A bulk load in progress.
struct Load<'t, 's, S: PageSource + 's> {
    tree: &'t BTree<'s, S>,
    /// The root page, latched exclusive from the emptiness check to the end.
    root: Exclusive<'s, S>,
    page_size: usize,
    /// Bytes a node is filled to (`fill × page size`).
    limit: usize,
    /// Level builders, the leaves' first; one is added when a level closes its first node.
    levels: Vec<Level<'s, S>>,
    /// Items whose buffers are reused.
    spare: Vec<Item>,
    /// Every page allocated so far: freed again if the load fails.
    pages: Vec<PageId>,
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Loads the empty tree with the records `next` yields, in strictly increasing key
    /// order, building it bottom-up: leaves filled left to right to `fill` of a page
    /// ([`BTREE_BULK_FILL_DEFAULT`](crate::limits::BTREE_BULK_FILL_DEFAULT) leaves room
    /// for later inserts; 1.0 packs pages full), then each inner level from the
    /// separators of the one below, the top written into the root page. No descent,
    /// search or split per record: a small fraction of the cost of inserting the
    /// records in order, with every node but the last of a level filled alike.
    ///
    /// `next(key, value)` puts the next record into the two buffers (they arrive empty)
    /// and returns true, or returns false at the end of the input; the buffers are
    /// reused, so the caller need not hold all records at once. It runs while the root
    /// is latched exclusive: it must not use this tree (other threads' operations on it
    /// wait until the load ends). Returns the number of records loaded.
    ///
    /// Not logged: a tree with a log ([`logged`](Self::logged)) is refused. Load the
    /// tree through a handle without one (as `BTree::open` or `Catalog::open_tree` give)
    /// and checkpoint afterwards; until then, a crash loses the load like any unlogged
    /// change.
    ///
    /// # Errors
    /// `BulkLoadLogged`; `BulkLoadFill` for a fill outside
    /// [`BTREE_BULK_FILL_MIN`]`..=1.0`;
    /// `BulkLoadNotEmpty` if the tree holds entries; `BulkLoadUnsorted` naming the first
    /// record whose key is not above the previous one; `KeyTooLarge` and
    /// `ValueTooLarge` as [`insert`](Self::insert); `next`'s errors, unchanged; the
    /// source's errors. After an error the tree is still empty (the pages the load
    /// took are freed again, unless freeing fails too), and the records are not loaded.
    pub fn bulk_load<E: From<crate::Error>>(
        &self,
        fill: f64,
        mut next: impl FnMut(&mut Vec<u8>, &mut Vec<u8>) -> Result<bool, E>,
    ) -> Result<u64, E> {
        let refuse = |e: BTreeError| E::from(crate::Error::from(e));
        if self.log.is_some() {
            return Err(refuse(BTreeError::BulkLoadLogged { root: self.root }));
        }
        if !(BTREE_BULK_FILL_MIN..=1.0).contains(&fill) {
            return Err(refuse(BTreeError::BulkLoadFill { fill, min: BTREE_BULK_FILL_MIN, max: 1.0 }));
        }
        let root = self.source.fix_exclusive(self.root).map_err(crate::Error::from)?;
        {
            let node = NodeRef::parse(&root, self.root).map_err(refuse)?;
            if !node.is_leaf() || node.count() > 0 {
                let detail = format!("a level-{} root with {} entries", node.level(), node.count());
                return Err(refuse(BTreeError::BulkLoadNotEmpty { root: self.root, detail }));
            }
        }
        let page_size = self.source.page_size();
        // A fill of 1.0 is exactly the page (the product is exact for powers of two).
        let limit = ((fill * page_size as f64) as usize).min(page_size);
        let mut load = Load {
            tree: self,
            root,
            page_size,
            limit,
            levels: vec![Level::new(Kind::Leaf, 0)],
            spare: Vec::new(),
            pages: Vec::new(),
        };
        match load.run(&mut next) {
            Ok(records) => Ok(records),
            Err(e) => {
                load.abandon();
                Err(e)
            }
        }
    }
}

impl<'s, S: PageSource> Load<'_, 's, S> {
    /// Feeds every record to the leaf level, one record late (a leaf's upper fence
    /// depends on the record after its last), then ends the levels.
    fn run<E: From<crate::Error>>(
        &mut self,
        next: &mut impl FnMut(&mut Vec<u8>, &mut Vec<u8>) -> Result<bool, E>,
    ) -> Result<u64, E> {
        // The tree's errors reach the caller as the crate's, as `bulk_load` promises.
        let lift = |e: BTreeError| E::from(crate::Error::from(e));
        let mut pending: Option<Item> = None;
        let mut records = 0u64;
        loop {
            let mut y = self.spare_item();
            if !next(&mut y.key, &mut y.value)? {
                self.spare.push(y);
                break;
            }
            self.tree.check_key(&y.key).map_err(lift)?;
            self.tree.check_value(&y.value).map_err(lift)?;
            if let Some(x) = pending.take() {
                let cp = common_prefix_len(&x.key, &y.key);
                // `y > x`: `y` goes on past their common prefix, which `x` ends or has a
                // smaller byte next.
                if cp == y.key.len() || (cp < x.key.len() && x.key[cp] > y.key[cp]) {
                    let e = BTreeError::BulkLoadUnsorted { position: records, key: y.key, previous: x.key };
                    return Err(lift(e));
                }
                let fits = self.fits(0, &x, Some(&y.key[..=cp]));
                self.push(0, x, fits).map_err(lift)?;
            }
            pending = Some(y);
            records += 1;
        }
        if let Some(x) = pending {
            let fits = self.fits(0, &x, None);
            self.push(0, x, fits).map_err(lift)?;
            self.finish(0).map_err(lift)?;
        }
        // No records: the root stays the empty leaf it is.
        Ok(records)
    }

    fn spare_item(&mut self) -> Item {
        let mut item = self.spare.pop().unwrap_or_default();
        item.key.clear();
        item.value.clear();
        item
    }

    /// Allocates a page and records it (to free it if the load fails).
    fn allocate(&mut self) -> Result<(PageId, Exclusive<'s, S>), BTreeError> {
        let page = self.tree.source.allocate()?;
        let pid = page.page_id();
        self.pages.push(pid);
        Ok((pid, page))
    }

    /// Whether level `l`'s open node may take `x` (step 2 of the module doc): its bytes
    /// with `x` as its last item and `upper` as its upper fence are within the limit, or
    /// it has fewer than its minimum of items.
    fn fits(&self, l: usize, x: &Item, upper: Option<&[u8]>) -> bool {
        let lv = &self.levels[l];
        let open = lv.items.len() - lv.held_len;
        if open < lv.items_min() {
            return true;
        }
        let (upper_len, plen) = match upper {
            Some(u) => (u.len(), common_prefix_len(&lv.lower, u)),
            None => (0, 0),
        };
        // A leaf's entries are its items; an inner node's all but the last (its link).
        let (entries, truncated) = match lv.kind {
            Kind::Leaf => (lv.sum + entry_bytes(Kind::Leaf, x), open + 1),
            Kind::Inner => (lv.sum, open),
        };
        // Every key of the node starts with the fences' common prefix (`lower <= key <
        // upper`), so the truncation never exceeds the entries' key bytes.
        HEADER_BYTES + lv.lower.len() + upper_len + entries - truncated * plen <= self.limit
    }

    /// Adds `x` to level `l`'s open node if it `fits`, else closes the node before it
    /// (step 3) and opens the next one with it.
    fn push(&mut self, l: usize, x: Item, fits: bool) -> Result<(), BTreeError> {
        if !fits {
            let lv = &self.levels[l];
            let last = lv.items.last().expect("a node is closed only after its minimum of items");
            let upper = cut_fence(lv.kind, last, &x);
            self.close(l, upper)?;
        }
        let lv = &mut self.levels[l];
        lv.sum += entry_bytes(lv.kind, &x);
        lv.items.push(x);
        Ok(())
    }

    /// Closes level `l`'s open node with upper fence `upper`: it gets a page and becomes
    /// the held node, after the held node before it is written.
    fn close(&mut self, l: usize, upper: Vec<u8>) -> Result<(), BTreeError> {
        let (pid, page) = self.allocate()?;
        if let Some(held) = self.levels[l].held.take() {
            self.write_held(l, held, pid)?;
        }
        let lv = &mut self.levels[l];
        let lower = std::mem::replace(&mut lv.lower, upper.clone());
        lv.held = Some(Held { pid, page, lower, upper });
        lv.held_len = lv.items.len();
        lv.sum = 0;
        Ok(())
    }

    /// Writes level `l`'s held node (its items are `items[..held_len]`), whose right
    /// neighbour is `next`, and posts it to the level above.
    fn write_held(&mut self, l: usize, mut held: Held<'s, S>, next: PageId) -> Result<(), BTreeError> {
        let lv = &mut self.levels[l];
        let n = lv.held_len;
        write_node(
            &mut held.page[..],
            held.pid,
            lv.kind,
            lv.level,
            &held.lower,
            Some(&held.upper),
            &lv.items[..n],
            next.0,
        )?;
        drop(held.page);
        self.spare.extend(lv.items.drain(..n));
        lv.held_len = 0;
        self.post(l, Some(held.upper), held.pid)
    }

    /// Gives level `l + 1` (created on the first call) the child `pid` of level `l`,
    /// whose upper fence is `upper` (`None`: the last child, which ends that level too).
    fn post(&mut self, l: usize, upper: Option<Vec<u8>>, pid: PageId) -> Result<(), BTreeError> {
        if l + 1 == self.levels.len() {
            if self.levels.len() >= BTREE_HEIGHT_MAX {
                return Err(corrupted(self.tree.root, format!("a bulk load beyond {BTREE_HEIGHT_MAX} levels")));
            }
            let level = u8::try_from(l + 1).expect("below BTREE_HEIGHT_MAX, which fits a byte");
            self.levels.push(Level::new(Kind::Inner, level));
        }
        let mut x = self.spare_item();
        x.value.extend_from_slice(&pid.0.to_le_bytes());
        let last = upper.is_none();
        if let Some(upper) = upper {
            x.key = upper;
        }
        let fits = self.fits(l + 1, &x, (!last).then_some(&x.key[..]));
        self.push(l + 1, x, fits)?;
        if last { self.finish(l + 1) } else { Ok(()) }
    }

    /// Ends level `l`, whose last item it has: writes its last node(s) and posts the
    /// last to the level above, or writes its only node into the root page.
    fn finish(&mut self, l: usize) -> Result<(), BTreeError> {
        if self.levels[l].held.is_none() {
            // 1. The level never closed a node: it is the top, and its node the root.
            assert_eq!(l + 1, self.levels.len(), "a level above one that closed no node");
            let lv = &self.levels[l];
            // Built aside and copied whole: the root page is rewritten only if the node
            // is sound.
            let mut scratch = vec![0u8; self.page_size];
            write_node(&mut scratch, self.tree.root, lv.kind, lv.level, &[], None, &lv.items, 0)?;
            self.root.copy_from_slice(&scratch);
            return Ok(());
        }
        // 2. Re-cut the last two nodes if the last one came out too small.
        let (pid, mut page) = self.allocate()?;
        let lv = &mut self.levels[l];
        let mut held = lv.held.take().expect("checked above");
        let cut = last_cut(lv.kind, &lv.items, lv.held_len, &held.lower, self.page_size);
        if cut != lv.held_len {
            let upper = cut_fence(lv.kind, &lv.items[cut - 1], &lv.items[cut]);
            lv.lower.clone_from(&upper);
            held.upper = upper;
            lv.held_len = cut;
        }
        // 3. Write both; the last one is the last child of the level above.
        self.write_held(l, held, pid)?;
        let lv = &mut self.levels[l];
        write_node(&mut page[..], pid, lv.kind, lv.level, &lv.lower, None, &lv.items, 0)?;
        drop(page);
        self.spare.append(&mut lv.items);
        self.post(l, None, pid)
    }

    /// After an error: frees every page the load allocated (the root was not written).
    /// Errors of freeing are dropped: the load's own error is the one to report, and a
    /// page that cannot be freed only stays allocated.
    fn abandon(mut self) {
        // Release the guards first: each page is then fixed again to free it.
        self.levels.clear();
        let source = self.tree.source;
        for pid in std::mem::take(&mut self.pages) {
            if let Ok(page) = source.fix_exclusive(pid) {
                let _ = source.free(page);
            }
        }
    }
}

/// Slot and heap bytes of an item's entry before prefix truncation (an inner item's
/// once it is an entry, not the link).
fn entry_bytes(kind: Kind, x: &Item) -> usize {
    let value = match kind {
        Kind::Leaf => x.value.len(),
        Kind::Inner => CHILD_BYTES,
    };
    SLOT_BYTES + ENTRY_HEADER_BYTES + x.key.len() + value
}

/// The fence between adjacent items `w` and `x` when a node is closed after `w`: for
/// leaves the shortest separator (`x`'s key cut one byte past its common prefix with
/// `w`'s), for inner nodes `w`'s separator, which moves up.
fn cut_fence(kind: Kind, w: &Item, x: &Item) -> Vec<u8> {
    match kind {
        Kind::Leaf => x.key[..=common_prefix_len(&w.key, &x.key)].to_vec(),
        Kind::Inner => w.key.clone(),
    }
}

/// Where to cut the last two nodes of a level, `items[..held]` (lower fence `lower`)
/// and `items[held..]` (the last, upper fence infinite): at `held` unless the last node
/// is underfull or has fewer than its minimum of items; then where the larger of the
/// two is smallest.
fn last_cut(kind: Kind, items: &[Item], held: usize, lower: &[u8], page_size: usize) -> usize {
    let (t, min) = (items.len(), if kind == Kind::Leaf { 1 } else { INNER_ITEMS_MIN });
    // sums[i]: entry bytes of items[..i].
    let mut sums = Vec::with_capacity(t + 1);
    sums.push(0usize);
    for x in items {
        sums.push(sums.last().copied().unwrap_or(0) + entry_bytes(kind, x));
    }
    // Entries of a node of items[a..b]: all for leaves, all but the link for inner nodes.
    let entries_end = |b: usize| if kind == Kind::Leaf { b } else { b - 1 };
    let open_payload = sums[entries_end(t)] - sums[held];
    if t - held >= min && open_payload >= page_size / BTREE_UNDERFULL_DIVISOR {
        return held;
    }
    let mut best = (usize::MAX, held);
    for c in min..=t - min {
        let upper_len;
        let plen;
        match kind {
            Kind::Leaf => {
                let cp = common_prefix_len(&items[c - 1].key, &items[c].key);
                upper_len = cp + 1;
                plen = common_prefix_len(lower, &items[c].key[..=cp]);
            }
            Kind::Inner => {
                upper_len = items[c - 1].key.len();
                plen = common_prefix_len(lower, &items[c - 1].key);
            }
        }
        let left_entries = entries_end(c);
        let left = HEADER_BYTES + lower.len() + upper_len + sums[left_entries] - left_entries * plen;
        let right = HEADER_BYTES + upper_len + sums[entries_end(t)] - sums[c];
        let larger = left.max(right);
        if larger <= page_size && larger < best.0 {
            best = (larger, c);
        }
    }
    assert!(best.0 <= page_size, "no cut of the last {t} items of a level fits two nodes");
    // Both nodes keep their minimum of items.
    assert!((min..=t - min).contains(&best.1), "a cut at {} of {t} items (minimum {min} a node)", best.1);
    best.1
}

/// Writes a node of `items` into page `b` (`pid`): a leaf of all of them, linked to the
/// right sibling `next` (0: none), or an inner node of all but the last, whose child
/// becomes the link.
#[allow(clippy::too_many_arguments)]
fn write_node(
    b: &mut [u8],
    pid: PageId,
    kind: Kind,
    level: u8,
    lower: &[u8],
    upper: Option<&[u8]>,
    items: &[Item],
    next: u64,
) -> NodeResult<()> {
    let (entries, link) = match kind {
        Kind::Leaf => (items, next),
        Kind::Inner => {
            let (last, entries) = items.split_last().expect("an inner node has a child");
            (entries, child_of(last, pid)?)
        }
    };
    let mut node = Builder::new(b, pid, kind, level, lower, upper, link)?;
    for x in entries {
        node.push([&x.key, &[]], &x.value)?;
    }
    Ok(())
}

fn child_of(x: &Item, pid: PageId) -> NodeResult<u64> {
    let bytes: [u8; CHILD_BYTES] = x.value[..]
        .try_into()
        .map_err(|_| BTreeError::Corrupted { pid, detail: format!("a bulk-load child of {} bytes", x.value.len()) })?;
    Ok(u64::from_le_bytes(bytes))
}

/// Length of the longest common prefix, eight bytes at a time (keys of one leaf share
/// long prefixes, and this runs twice per record).
fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().expect("chunks of eight"));
        let y = u64::from_le_bytes(y.try_into().expect("chunks of eight"));
        if x != y {
            // Little endian: the first differing byte is the lowest differing bits.
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..].iter().zip(&b[i..]).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests;
