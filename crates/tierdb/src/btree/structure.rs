//! Structure modifications: splits on the way up a held chain, merges on the way up
//! after a delete, and the root's growth and shrinking in place.
//!
//! Every function here runs under a chain of exclusive latches from the pessimistic
//! descent: the highest held node is safe, so a split or merge never propagates above
//! it. New latches are taken only on fresh pages (nobody else can reach them) or on a
//! sibling to the right of a held node under a held parent (left to right); merging a
//! leaf with its left sibling first releases the leaf, then latches left, then the leaf
//! again (scans go left to right across leaves; inner nodes are only reached top-down,
//! so an inner node stays held while its left sibling is latched).
//!
//! Pages are allocated before anything is changed, so an allocation error leaves the
//! tree as it was (or with a finished split of an ancestor, which is a valid tree).
//!
//! A page the change is done with stays latched in the [`Smo`] until the whole change
//! is logged (its pages' images and an end record, as one unit that recovery applies
//! whole or not at all); pages to free are freed after that.

use super::BTreeError;
use super::log::Smo;
use super::node::{self, Builder, CHILD_BYTES, ENTRY_HEADER_BYTES, Kind, NodeMut, NodeRef, SLOT_BYTES};
use super::{BTree, Chain, Exclusive, corrupted};
use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_HEIGHT_MAX;
use crate::page::ExclusivePage;
use crate::page::PageSource;

impl<'s, S: PageSource> BTree<'s, S> {
    /// Makes room in `chain[idx]` for an entry of `need` bytes whose key is `key`,
    /// splitting it (and, first, its ancestors) as needed. Returns the index in `chain`
    /// of the node that must now take `key`: the chain may have grown by one (a root
    /// split) and the node may be the new right half.
    pub(super) fn make_room(
        &self,
        chain: &mut Chain<'s, S>,
        smo: &mut Smo<'s, S>,
        idx: usize,
        key: &[u8],
        need: usize,
    ) -> Result<usize, BTreeError> {
        let mut idx = idx;
        // One split always makes room in a sound node (see `node`'s value limit).
        for _ in 0..2 {
            let (pid, page) = &chain[idx];
            let pid = *pid;
            if NodeRef::parse(page, pid)?.free_total() >= need {
                return Ok(idx);
            }
            idx = if pid == self.root {
                self.split_root(chain, smo, idx, key)?
            } else {
                self.split_node(chain, smo, idx, key)?
            };
        }
        // (A node whose bytes are damaged may need the second split; a third would not
        // help: its bytes are not what a node's are.)
        let (pid, page) = &chain[idx];
        let free = NodeRef::parse(page, *pid)?.free_total();
        if free >= need {
            return Ok(idx);
        }
        Err(corrupted(*pid, format!("{free} bytes free after two splits, {need} needed")))
    }

    /// Splits the non-root node `chain[idx]` into itself (left) and a fresh right node,
    /// and posts the separator in its parent `chain[idx - 1]` (splitting that first if
    /// it is full). Returns the index of the half that holds `key`.
    fn split_node(
        &self,
        chain: &mut Chain<'s, S>,
        smo: &mut Smo<'s, S>,
        idx: usize,
        key: &[u8],
    ) -> Result<usize, BTreeError> {
        let (pid, page) = &chain[idx];
        let pid = *pid;
        assert!(idx > 0, "{pid} must split but its parent is not held: the descent released an unsafe node");
        // Work from a copy: the node's own page is rewritten as the left half.
        let copy = page.to_vec();
        let old = NodeRef::parse(&copy, pid)?;
        let plan = node::plan_split(&old, key)?;
        let sep_need = SLOT_BYTES + ENTRY_HEADER_BYTES + plan.sep.len() + CHILD_BYTES;
        let parent_idx = self.make_room(chain, smo, idx - 1, &plan.sep, sep_need)?;
        let idx = parent_idx + 1;
        assert_eq!(chain[idx].0, pid, "a parent split moved {pid} in the chain");
        // 1. Check the parent before changing anything: it must route the separator to
        //    this node and take it (its prefix).
        let pos = {
            let (ppid, parent) = &chain[parent_idx];
            let pv = NodeRef::parse(parent, *ppid)?;
            let pos = pv.child_index(&plan.sep)?;
            if pv.child(pos)? != pid || !plan.sep.starts_with(pv.prefix()) {
                return Err(corrupted(*ppid, format!("separator {:02x?} does not belong under it at {pid}", plan.sep)));
            }
            pos
        };
        // 2. Build both halves; the left one in a scratch page, so that a failure (bad
        //    bytes in the node) leaves the node as it was.
        let mut right = self.source.allocate()?;
        let right_pid = right.page_id();
        let mut left = vec![0u8; copy.len()];
        if let Err(e) = node::split_into(&old, &plan, &mut left, pid, &mut right, right_pid) {
            self.source.free(right)?; // never part of the tree
            return Err(e);
        }
        chain[idx].1.copy_from_slice(&left);
        // 3. Post `(sep, left)` in front of the position that pointed to the node, and
        //    point that position to the right half.
        let (ppid, parent) = &mut chain[parent_idx];
        let mut m = NodeMut::trusted(parent, *ppid);
        let done = m.insert(pos, &plan.sep, &pid.0.to_le_bytes())?;
        assert!(done, "{ppid}: no room for a separator after make_room");
        m.set_child(pos + 1, right_pid)?;
        // A half that leaves the chain stays latched in the structure change until its
        // image and the change's end are logged.
        if key >= plan.sep.as_slice() {
            let left = std::mem::replace(&mut chain[idx], (right_pid, right));
            smo.touched.push(left);
        } else {
            smo.touched.push((right_pid, right));
        }
        Ok(idx)
    }

    /// Splits the root in place: its halves move to two fresh pages and the root becomes
    /// an inner node one level up with one separator. `chain[idx]` is the root; the half
    /// that holds `key` is inserted after it. Returns its index.
    fn split_root(
        &self,
        chain: &mut Chain<'s, S>,
        smo: &mut Smo<'s, S>,
        idx: usize,
        key: &[u8],
    ) -> Result<usize, BTreeError> {
        assert_eq!(idx, 0, "the root is the top of any chain that holds it");
        let root = self.root;
        let copy = chain[idx].1.to_vec();
        let old = NodeRef::parse(&copy, root)?;
        if old.level() as usize + 1 >= BTREE_HEIGHT_MAX {
            return Err(corrupted(root, format!("a root split beyond {BTREE_HEIGHT_MAX} levels")));
        }
        let plan = node::plan_split(&old, key)?;
        let mut left = self.source.allocate()?;
        let mut right = match self.source.allocate() {
            Ok(r) => r,
            Err(e) => {
                self.source.free(left)?;
                return Err(e.into());
            }
        };
        let (left_pid, right_pid) = (left.page_id(), right.page_id());
        if let Err(e) = node::split_into(&old, &plan, &mut left, left_pid, &mut right, right_pid) {
            self.source.free(left)?;
            self.source.free(right)?;
            return Err(e);
        }
        let mut b = Builder::new(&mut chain[idx].1, root, Kind::Inner, old.level() + 1, &[], None, right_pid.0)?;
        b.push([&plan.sep, &[]], &left_pid.0.to_le_bytes())?;
        let target = if key < plan.sep.as_slice() {
            smo.touched.push((right_pid, right));
            (left_pid, left)
        } else {
            smo.touched.push((left_pid, left));
            (right_pid, right)
        };
        chain.insert(idx + 1, target);
        Ok(idx + 1)
    }

    /// After a delete in the chain's last node: while that node is underfull and its
    /// parent is held, merges it with a sibling; then shrinks a root left with a single
    /// child. `key` routes to every node of the chain.
    pub(super) fn rebalance(
        &self,
        chain: &mut Chain<'s, S>,
        smo: &mut Smo<'s, S>,
        key: &[u8],
    ) -> Result<(), BTreeError> {
        loop {
            let (pid, page) = chain.last().expect("a chain holds at least one node");
            let node = NodeRef::parse(page, *pid)?;
            if *pid == self.root {
                if !node.is_leaf() && node.count() == 0 {
                    self.collapse_root(chain, smo)?;
                }
                return Ok(());
            }
            if chain.len() == 1 || !node.is_underfull() {
                return Ok(());
            }
            let (pid, page) = chain.pop().expect("checked non-empty");
            self.merge_child(chain.last_mut().expect("the parent is held"), smo, pid, page, key)?;
        }
    }

    /// Merges the underfull `node` (a child of `parent`) with its right sibling if the
    /// result fits, else with its left sibling if that fits, into the left page of the
    /// pair; frees the right page. Leaves everything as it is if neither fits.
    ///
    /// An inner node here lost a separator to the merge one level down: that change is
    /// part of the structure change, so if the node does not merge it stays held in
    /// `smo` and is logged with the change's other pages. Released at once, it would
    /// be written back (in place, with its own line image, on `nvm-direct`) before the
    /// change's end is logged, and a crash in between would keep the parent's half of
    /// the merge without the child's; on a buffered store its change would not be
    /// logged at all.
    fn merge_child(
        &self,
        (ppid, parent): &mut (PageId, Exclusive<'s, S>),
        smo: &mut Smo<'s, S>,
        pid: PageId,
        page: Exclusive<'s, S>,
        key: &[u8],
    ) -> Result<(), BTreeError> {
        let ppid = *ppid;
        let pv = NodeRef::parse(parent, ppid)?;
        let pos = pv.child_index(key)?;
        if pv.child(pos)? != pid {
            return Err(corrupted(ppid, format!("key routes to {}, not to the held child {pid}", pv.child(pos)?)));
        }
        let is_leaf = pv.level() == 1;
        let n = pv.count();
        let right_sibling = if pos < n { Some(pv.child(pos + 1)?) } else { None };
        let left_sibling = if pos > 0 { Some(pv.child(pos - 1)?) } else { None };
        let mut node = Some(page);
        if let Some(right_pid) = right_sibling {
            let right = self.source.fix_exclusive(right_pid)?;
            let page = node.take().expect("the node is held");
            match self.merge_pair(ppid, parent, smo, pos, (pid, page), (right_pid, right))? {
                None => return Ok(()),
                Some((page, _right)) => node = Some(page),
            }
        }
        if let Some(left_pid) = left_sibling {
            let (left, page) = if is_leaf {
                // Left to right: a scan holding the left leaf waits for the node, so the
                // node is released, then its left sibling and the node are latched in
                // order. With the parent held exclusive, only readers can reach the node
                // in between. (A leaf's only change here is the delete, logged on its
                // own.)
                drop(node.take());
                let left = self.source.fix_exclusive(left_pid)?;
                (left, self.source.fix_exclusive(pid)?)
            } else {
                // Inner nodes are latched top-down only, and the siblings' parent is
                // held: nobody holding the left sibling can be waiting for the node.
                (self.source.fix_exclusive(left_pid)?, node.take().expect("the node is held"))
            };
            if let Some((_left, page)) = self.merge_pair(ppid, parent, smo, pos - 1, (left_pid, left), (pid, page))? {
                node = Some(page);
            }
        }
        if let Some(page) = node.filter(|p| !is_leaf && p.wrote()) {
            smo.touched.push((pid, page));
        }
        Ok(())
    }

    /// Merges the children at positions `i` and `i + 1` of `parent` if they fit in one
    /// node: `right`'s entries (and, for inner nodes, separator `i`) move into `left`,
    /// separator `i` leaves the parent, and `right`'s page is freed; both pages stay in
    /// `smo`. Returns `None` if it merged, else both guards, unchanged.
    #[allow(clippy::type_complexity)]
    fn merge_pair(
        &self,
        ppid: PageId,
        parent: &mut Exclusive<'s, S>,
        smo: &mut Smo<'s, S>,
        i: usize,
        (left_pid, mut left): (PageId, Exclusive<'s, S>),
        (right_pid, right): (PageId, Exclusive<'s, S>),
    ) -> Result<Option<(Exclusive<'s, S>, Exclusive<'s, S>)>, BTreeError> {
        let pv = NodeRef::parse(parent, ppid)?;
        let level = pv.level() - 1;
        let sep = pv.full_key(i)?;
        let lv = NodeRef::parse(&left, left_pid)?;
        let rv = NodeRef::parse(&right, right_pid)?;
        lv.expect_level(level)?;
        rv.expect_level(level)?;
        if lv.upper_fence() != Some(&sep[..]) || rv.lower_fence() != &sep[..] {
            return Err(corrupted(ppid, format!("fences of {left_pid} and {right_pid} do not meet at separator {i}")));
        }
        if lv.is_leaf() && lv.link() != right_pid.0 {
            return Err(corrupted(left_pid, format!("right sibling {} is not {right_pid}", lv.link())));
        }
        if !node::merge_fits(&lv, &sep, &rv) {
            return Ok(Some((left, right)));
        }
        // Build in a scratch page, so that bad bytes in either node change nothing.
        let mut merged = vec![0u8; left.len()];
        node::merge_into(&lv, &sep, &rv, &mut merged, left_pid)?;
        left.copy_from_slice(&merged);
        let mut pm = NodeMut::trusted(parent, ppid);
        pm.remove(i)?;
        pm.set_child(i, left_pid)?;
        smo.touched.push((left_pid, left));
        smo.to_free.push((right_pid, right));
        Ok(None)
    }

    /// A root that is an inner node without separators absorbs its only child (whose
    /// fences are infinite on both sides, like the root's), until it has separators or
    /// is a leaf. `chain` holds just the root.
    fn collapse_root(&self, chain: &mut Chain<'s, S>, smo: &mut Smo<'s, S>) -> Result<(), BTreeError> {
        let (pid, root) = chain.last_mut().expect("the root is held");
        assert_eq!(*pid, self.root);
        for _ in 0..BTREE_HEIGHT_MAX {
            let rv = NodeRef::parse(root, self.root)?;
            if rv.is_leaf() || rv.count() > 0 {
                return Ok(());
            }
            let child_pid = rv.child(0)?;
            let level = rv.level() - 1;
            // The child may be a page this change merged into and still holds.
            let child: Exclusive<'s, S> = match smo.touched.iter().position(|(p, _)| *p == child_pid) {
                Some(i) => smo.touched.swap_remove(i).1,
                None => self.source.fix_exclusive(child_pid)?,
            };
            let cv = NodeRef::parse(&child, child_pid)?;
            cv.expect_level(level)?;
            if !cv.lower_fence().is_empty() || cv.upper_fence().is_some() {
                return Err(corrupted(child_pid, "the only child of the root has fences"));
            }
            root.copy_from_slice(&child);
            smo.to_free.push((child_pid, child));
        }
        Err(corrupted(self.root, "root collapse did not end"))
    }
}
