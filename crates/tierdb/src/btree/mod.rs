//! A concurrent B+-tree over any [`PageSource`].
//!
//! The tree knows pages only as latched guards from its source: it never learns which
//! tier a page is on. Nodes are slotted pages with prefix truncation and key heads
//! ([`node`]); the format, the limits and the protocol below are also in `docs/btree.md`.
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
//!   scans move right along sibling links with shared coupling;
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
mod bulk;
mod check;
mod cursor;
mod error;
mod lines;
pub mod node;
mod structure;

pub use check::TreeStats;
pub use cursor::Cursor;
pub use error::BTreeError;
pub use node::value_bytes_max;

use std::ops::Range;

use crate::Result;
use crate::buffer::{ExclusivePage, LinePage, OptimisticPage, PageSource};
use crate::ids::PageId;
use crate::limits::{BTREE_KEY_BYTES_MAX, BTREE_OPTIMISTIC_RESTARTS_MAX, BTREE_RESTARTS_MAX, BTREE_UNDERFULL_DIVISOR};
use node::{Builder, INNER_ENTRY_BYTES_MAX, Kind, NodeMut, NodeRef, SLOT_BYTES};

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

/// A change to one leaf, as a logged tree operation reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafChange<'a> {
    /// `key` now maps to `value`; before, to `old` (`None`: absent).
    Put {
        /// The full key.
        key: &'a [u8],
        /// The whole new value.
        value: &'a [u8],
        /// The whole previous value; `None` if the key was absent (an insert).
        old: Option<&'a [u8]>,
    },
    /// `key`, which mapped to `old`, is gone.
    Delete {
        /// The full key that was removed.
        key: &'a [u8],
        /// The whole value it held.
        old: &'a [u8],
    },
    /// Bytes `offset..offset + value.len()` of `key`'s value are now `value`; before,
    /// `old` (as long as `value`). The rest of the value, and its length, did not change:
    /// an in-place update logs only the bytes it wrote.
    Patch {
        /// The full key whose value changed.
        key: &'a [u8],
        /// Byte offset in the value where the written bytes start.
        offset: usize,
        /// The bytes written.
        value: &'a [u8],
        /// The bytes they replaced, as many as `value`.
        old: &'a [u8],
    },
}

/// Where a tree logs its changes (the database's transactions implement it). Every
/// call is made while the page is still latched exclusive, so records of one page are
/// in the log in the order of its changes; the returned LSN is stamped on the page.
pub trait TreeLog: Sync {
    /// A change to leaf `page` of the tree rooted at `root`: redo applies it to that
    /// page, undo reverses it through the tree.
    ///
    /// # Errors
    /// The log's errors (the change is then not durable; the caller's operation fails).
    fn leaf_change(&self, root: PageId, page: PageId, change: LeafChange<'_>) -> Result<u64>;

    /// Starts a structure change (split, merge, root change, a tree's pages freed):
    /// the images and frees logged with its id count only once its end is logged.
    fn smo_begin(&self) -> u64;

    /// The full bytes of a page the structure change `smo` wrote: redo only.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_image(&self, smo: u64, page: PageId, bytes: &[u8]) -> Result<u64>;

    /// A page the structure change `smo` frees.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_free(&self, smo: u64, page: PageId) -> Result<u64>;

    /// The end of structure change `smo`: from here on it counts. Returns its LSN,
    /// which the change's pages must not be written out before.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_end(&self, smo: u64) -> Result<u64>;
}

/// Pages a structure change holds until it is logged: those it is done with
/// (`touched`) and those it frees (`to_free`), besides the descent's chain.
pub(crate) struct Smo<'s, S: PageSource + 's> {
    touched: Vec<(PageId, Exclusive<'s, S>)>,
    to_free: Vec<(PageId, Exclusive<'s, S>)>,
}

impl<'s, S: PageSource> Smo<'s, S> {
    fn new() -> Self {
        Smo { touched: Vec::new(), to_free: Vec::new() }
    }
}

impl<S: PageSource> Clone for BTree<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: PageSource> Copy for BTree<'_, S> {}

impl<'s, S: PageSource> BTree<'s, S> {
    /// This tree, with every change logged to `log` (shorter-lived than the source).
    pub fn logged<'l>(self, log: &'l dyn TreeLog) -> BTree<'l, S>
    where
        's: 'l,
    {
        BTree { source: self.source, root: self.root, log: Some(log) }
    }

    /// Ends a structure change: logs the images of every page of the chain and of the
    /// change that was written, the pages it frees and its end, as one unit; stamps the
    /// pages (the node's LSN with its image's, the frame's with the end's, so that no
    /// page of the change is written out before the whole change is durable); then
    /// frees the pages to free and releases the rest.
    fn finish_smo(&self, chain: &mut Chain<'s, S>, smo: Smo<'s, S>) -> Result<()> {
        let Smo { mut touched, to_free } = smo;
        if let Some(log) = self.log {
            let wrote = |g: &Exclusive<'s, S>| g.wrote();
            if chain.iter().any(|(_, g)| wrote(g)) || !touched.is_empty() || !to_free.is_empty() {
                let id = log.smo_begin();
                for (pid, page) in chain.iter_mut().chain(touched.iter_mut()) {
                    if page.wrote() {
                        let lsn = log.smo_image(id, *pid, page)?;
                        NodeMut::trusted(page, *pid).set_page_lsn(lsn);
                        // The frame learns the image's LSN too (the end's follows): its
                        // first-update LSN must not be past the record that redoes it
                        // (`nvsql` keeps the log back to it).
                        page.set_page_lsn(lsn);
                        page.image_logged();
                    }
                }
                for (pid, _) in &to_free {
                    log.smo_free(id, *pid)?;
                }
                let end = log.smo_end(id)?;
                for (_, page) in chain.iter_mut().chain(touched.iter_mut()) {
                    if page.wrote() {
                        page.set_page_lsn(end);
                    }
                }
            }
        }
        drop(touched);
        for (_, page) in to_free {
            self.source.free(page)?;
        }
        Ok(())
    }

    /// The leaf that holds `key` (fixed line-grained, shared or exclusive), its header
    /// and the key's slot; `None` if the key is absent.
    #[inline]
    fn find(&self, key: &[u8], exclusive: bool) -> Result<Option<Found<'s, S>>> {
        let (pid, mut leaf) = self.descend_lines(key, exclusive)?;
        let h = lines::leaf_header(&mut leaf, self.source.page_size())?;
        match lines::lower_bound(&mut leaf, &h, key)? {
            (pos, true) => Ok(Some(Found { pid, leaf, h, pos })),
            _ => Ok(None),
        }
    }

    /// The value at `vs..vs + vlen` of a leaf, copied, when changes are logged (the
    /// undo of the change about to be made needs it).
    fn old_for_log(&self, leaf: &mut Lines<'_, S>, vs: usize, vlen: usize) -> Result<Option<Vec<u8>>> {
        match self.log {
            Some(_) => Ok(Some(leaf.read(vs, vlen)?.to_vec())),
            None => Ok(None),
        }
    }

    /// Logs a leaf change made through a line guard and stamps its LSN on the leaf.
    fn log_leaf_lines(&self, pid: PageId, leaf: &mut Lines<'_, S>, change: LeafChange<'_>) -> Result<()> {
        if let Some(log) = self.log {
            let lsn = log.leaf_change(self.root, pid, change)?;
            leaf.write(node::OFF_PAGE_LSN, 8)?.copy_from_slice(&lsn.to_le_bytes());
            leaf.set_page_lsn(lsn);
        }
        Ok(())
    }

    /// Logs a leaf change made on a whole page and stamps its LSN on the leaf.
    fn log_leaf_whole<B: std::ops::DerefMut<Target = [u8]>>(
        &self,
        pid: PageId,
        leaf: &mut B,
        change: LeafChange<'_>,
    ) -> Result<u64> {
        match self.log {
            Some(log) => {
                let lsn = log.leaf_change(self.root, pid, change)?;
                NodeMut::trusted(leaf, pid).set_page_lsn(lsn);
                Ok(lsn)
            }
            None => Ok(0),
        }
    }
}

impl<S: PageSource> std::fmt::Debug for BTree<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTree").field("root", &self.root).finish_non_exhaustive()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WriteMode {
    Insert,
    Update,
    Upsert,
}

/// A key found in its leaf ([`BTree::find`]).
struct Found<'s, S: PageSource + 's> {
    pid: PageId,
    leaf: Lines<'s, S>,
    h: node::Header,
    pos: usize,
}

/// One step of an optimistic descent through node `pid` (bytes `page`, expected at
/// `level` if its parent said so): `None` if it is a leaf, else where the reference to
/// the child holding `key` lies, the reference, and the child's level. Nothing in it
/// counts until the page validates.
#[inline]
fn inner_step(page: &[u8], pid: PageId, level: Option<u8>, key: &[u8]) -> Result<Option<(usize, u64, u8)>> {
    let node = NodeRef::parse(page, pid)?;
    if let Some(l) = level {
        node.expect_level(l)?;
    }
    if node.is_leaf() {
        return Ok(None);
    }
    let (offset, raw) = node.child_ref(node.child_index(key)?)?;
    Ok(Some((offset, raw, node.level() - 1)))
}

/// The outcome of one optimistic attempt of [`BTree::read_into`].
enum Attempt {
    /// Read and validated: the bytes copied (`None`: no such key), or `Err(len)` if the
    /// part of `len` bytes does not fit the buffer.
    Done(std::result::Result<Option<usize>, usize>),
    /// A page changed under the read: try again.
    Restart,
    /// Take the latched way of `get_part` (a page does not parse, or the leaf must be
    /// fixed exclusive to load lines).
    Latched,
}

/// Looks `key` up in the leaf `leaf` (page `pid`) read optimistically and copies bytes
/// `part` of its value into `out`; the result counts only if the leaf validates after.
#[inline]
fn copy_from_leaf<G: OptimisticPage>(
    leaf: &G,
    pid: PageId,
    key: &[u8],
    part: &Range<usize>,
    out: &mut [u8],
) -> Attempt {
    let found = (|| -> std::result::Result<Option<&[u8]>, BTreeError> {
        let node = NodeRef::parse(leaf, pid)?;
        if !node.is_leaf() {
            return Err(BTreeError::Corrupted { pid, detail: "an inner node where its parent has a leaf".into() });
        }
        match node.lower_bound(key)? {
            (pos, true) => Ok(Some(node.value(pos)?)),
            _ => Ok(None),
        }
    })();
    let copied = match found {
        Ok(Some(value)) => {
            let end = part.end.min(value.len());
            let bytes = &value[part.start.min(end)..end];
            match out.get_mut(..bytes.len()) {
                Some(o) => {
                    o.copy_from_slice(bytes);
                    Ok(Some(bytes.len()))
                }
                None => Err(bytes.len()),
            }
        }
        Ok(None) => Ok(None),
        Err(_) => return if leaf.validate() { Attempt::Latched } else { Attempt::Restart },
    };
    if leaf.validate() { Attempt::Done(copied) } else { Attempt::Restart }
}

/// The outcome of a write attempted on a leaf held exclusive.
enum LeafWrite {
    /// Done, with the operation's result.
    Done(bool),
    /// The leaf must split first.
    NoRoom,
}

fn corrupted(pid: PageId, detail: impl Into<String>) -> crate::Error {
    BTreeError::Corrupted { pid, detail: detail.into() }.into()
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Creates an empty tree: allocates its root, an empty leaf.
    ///
    /// # Errors
    /// The source's allocation errors.
    pub fn create(source: &'s S) -> Result<Self> {
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
    pub fn open(source: &'s S, root: PageId) -> Result<Self> {
        let page = source.fix_shared(root)?;
        let node = NodeRef::parse(&page, root)?;
        if !node.lower_fence().is_empty() || node.upper_fence().is_some() {
            return Err(BTreeError::NotATree { pid: root, detail: "a node with fences, not a root".into() }.into());
        }
        Ok(BTree { source, root, log: None })
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

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > BTREE_KEY_BYTES_MAX {
            return Err(BTreeError::KeyTooLarge { len: key.len(), max: BTREE_KEY_BYTES_MAX }.into());
        }
        Ok(())
    }

    fn check_value(&self, value: &[u8]) -> Result<()> {
        let page_size = self.source.page_size();
        let max = value_bytes_max(page_size);
        if value.len() > max {
            return Err(BTreeError::ValueTooLarge { len: value.len(), max, page_size }.into());
        }
        Ok(())
    }

    /// Calls `f` with the value of `key`, in place in the leaf (under its shared latch:
    /// `f` must not use the tree), and returns what `f` returns.
    ///
    /// # Errors
    /// `KeyTooLarge`; `Corrupted`/`NotATree` for bad pages; the source's fix errors.
    #[inline]
    pub fn get<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.get_part(key, 0..usize::MAX, f)
    }

    /// Calls `f` with bytes `part` of the value of `key` (clipped to the value's
    /// length), like [`get`](Self::get). On cache-line-grained pages only the lines of
    /// that part of the value are loaded, not the whole value (a YCSB read of one field).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    #[inline]
    pub fn get_part<R>(&self, key: &[u8], part: Range<usize>, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.check_key(key)?;
        // Shared first; a leaf whose lines must be loaded while others read it is fixed
        // again exclusive (a cache-line fault changes the page).
        let mut f = Some(f);
        match self.get_with(key, &part, false, &mut f) {
            Err(e) if e.needs_exclusive() => self.get_with(key, &part, true, &mut f),
            r => r,
        }
    }

    /// Copies bytes `part` of the value of `key` (clipped to the value's length, as
    /// [`get_part`](Self::get_part) clips) to the front of `out`, and returns how many;
    /// `None` if the key is absent.
    ///
    /// Where the source hands out a leaf resident whole without loading anything
    /// ([`PageSource::fix_child_resident`]), the leaf is read optimistically, like the
    /// inner nodes: no latch is taken, the bytes are copied, and the copy counts only if
    /// the leaf's version is unchanged afterwards; else the lookup starts again. A leaf
    /// that is not resident is fixed shared and line-grained from the same parent, as
    /// `get_part` fixes it (loading what is missing). A page that does not parse, a
    /// leaf that must be fixed exclusive, or [`BTREE_OPTIMISTIC_RESTARTS_MAX`] restarts
    /// take the latched way of `get_part`, which reports what is corrupt.
    ///
    /// # Errors
    /// `OutputTooSmall` if the part does not fit `out`; those of `get_part`.
    #[inline]
    pub fn read_into(&self, key: &[u8], part: Range<usize>, out: &mut [u8]) -> Result<Option<usize>> {
        self.check_key(key)?;
        for _ in 0..BTREE_OPTIMISTIC_RESTARTS_MAX {
            match self.read_optimistic(key, &part, out)? {
                Attempt::Done(Ok(n)) => return Ok(n),
                Attempt::Done(Err(len)) => {
                    return Err(BTreeError::OutputTooSmall { len, capacity: out.len() }.into());
                }
                Attempt::Restart => {}
                Attempt::Latched => break,
            }
        }
        let copied = self.get_part(key, part, |v| match out.get_mut(..v.len()) {
            Some(o) => {
                o.copy_from_slice(v);
                Ok(v.len())
            }
            None => Err(v.len()),
        })?;
        match copied {
            None => Ok(None),
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(len)) => Err(BTreeError::OutputTooSmall { len, capacity: out.len() }.into()),
        }
    }

    /// One optimistic attempt of [`read_into`](Self::read_into): descends as
    /// [`descend_with`](Self::descend_with) does, then reads the leaf optimistically if
    /// the source hands it out so.
    #[inline]
    fn read_optimistic(&self, key: &[u8], part: &Range<usize>, out: &mut [u8]) -> Result<Attempt> {
        let mut pid = self.root;
        let mut page = self.source.fix_optimistic(pid)?;
        let mut level = None;
        loop {
            let step = inner_step(&page, pid, level, key);
            if !page.validate() {
                return Ok(Attempt::Restart);
            }
            let Ok(step) = step else { return Ok(Attempt::Latched) };
            let Some((offset, raw, next_level)) = step else {
                // The root is a leaf, fixed whole.
                return Ok(copy_from_leaf(&page, pid, key, part, out));
            };
            if next_level == 0 {
                let leaf = match self.source.fix_child_resident(&page, offset, raw) {
                    Ok(Some(leaf)) => leaf,
                    // Not resident whole: the leaf latched from the same parent, as the
                    // latched lookup would fix it (no second descent).
                    Ok(None) => return self.copy_from_latched_leaf(&page, offset, raw, key, part, out),
                    Err(_) if !page.validate() => return Ok(Attempt::Restart),
                    Err(e) => return Err(e),
                };
                let next = self.source.child_pid(raw);
                if !page.validate() {
                    return Ok(Attempt::Restart);
                }
                return Ok(copy_from_leaf(&leaf, next, key, part, out));
            }
            let child = match self.source.fix_child_optimistic(&page, offset, raw) {
                Ok(child) => child,
                Err(_) if !page.validate() => return Ok(Attempt::Restart),
                Err(e) => return Err(e),
            };
            pid = self.source.child_pid(raw);
            if !page.validate() {
                return Ok(Attempt::Restart);
            }
            page = child;
            level = Some(next_level);
        }
    }

    /// The leaf under `parent` (read optimistically; the reference `raw` at `offset`),
    /// fixed shared and line-grained as [`get_part`](Self::get_part) fixes it, and bytes
    /// `part` of `key`'s value copied into `out`. A cache-line fault that needs the leaf
    /// exclusive hands over to `get_part` (`Latched`).
    #[inline(never)]
    fn copy_from_latched_leaf(
        &self,
        parent: &S::Optimistic<'s>,
        offset: usize,
        raw: u64,
        key: &[u8],
        part: &Range<usize>,
        out: &mut [u8],
    ) -> Result<Attempt> {
        let mut leaf = match self.source.fix_child_lines(parent, offset, raw, false) {
            Ok(leaf) => leaf,
            Err(_) if !parent.validate() => return Ok(Attempt::Restart),
            Err(e) if e.needs_exclusive() => return Ok(Attempt::Latched),
            Err(e) => return Err(e),
        };
        if !parent.validate() {
            return Ok(Attempt::Restart);
        }
        let step = (|| -> Result<Option<std::result::Result<Option<usize>, usize>>> {
            let h = lines::header(&mut leaf, self.source.page_size())?;
            if h.kind != Kind::Leaf {
                return Ok(None); // the root split between the two reads
            }
            let (pos, found) = lines::lower_bound(&mut leaf, &h, key)?;
            if !found {
                return Ok(Some(Ok(None)));
            }
            let (_, _, vs, vlen) = lines::entry(&mut leaf, &h, pos)?;
            let end = part.end.min(vlen);
            let start = part.start.min(end);
            let bytes = leaf.read(vs + start, end - start)?;
            Ok(Some(match out.get_mut(..bytes.len()) {
                Some(o) => {
                    o.copy_from_slice(bytes);
                    Ok(Some(bytes.len()))
                }
                None => Err(bytes.len()),
            }))
        })();
        match step {
            Ok(Some(done)) => Ok(Attempt::Done(done)),
            Ok(None) => Ok(Attempt::Restart),
            Err(e) if e.needs_exclusive() => Ok(Attempt::Latched),
            Err(e) => Err(e),
        }
    }

    #[inline]
    fn get_with<R>(
        &self,
        key: &[u8],
        part: &Range<usize>,
        exclusive: bool,
        f: &mut Option<impl FnOnce(&[u8]) -> R>,
    ) -> Result<Option<R>> {
        let Found { mut leaf, h, pos, .. } = match self.find(key, exclusive)? {
            Some(f) => f,
            None => return Ok(None),
        };
        let (_, _, vs, vlen) = lines::entry(&mut leaf, &h, pos)?;
        let end = part.end.min(vlen);
        let start = part.start.min(end);
        let bytes = leaf.read(vs + start, end - start)?;
        let f = f.take().expect("f is called once, after the last fallible step");
        Ok(Some(f(bytes)))
    }

    /// Inserts `key -> value` if `key` is absent. Returns false, changing nothing, if it
    /// is present.
    ///
    /// # Errors
    /// `KeyTooLarge`, `ValueTooLarge`; bad pages; the source's errors (a split needs a
    /// page).
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.write(key, value, WriteMode::Insert)
    }

    /// Inserts `key -> value` or replaces the value of `key`.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(key, value, WriteMode::Upsert).map(|_| ())
    }

    /// Replaces the value of `key` (with a value of any length). Returns false if `key`
    /// is absent.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    pub fn update(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.write(key, value, WriteMode::Update)
    }

    /// Overwrites `bytes.len()` bytes of `key`'s value at `offset`, in place: the leaf is
    /// latched exclusive, nothing is re-laid out. Returns false if `key` is absent.
    ///
    /// # Errors
    /// `OffsetOutOfRange` if the range is not inside the value; as [`get`](Self::get).
    pub fn update_in_place(&self, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool> {
        self.check_key(key)?;
        let Some(Found { pid, mut leaf, h, pos }) = self.find(key, true)? else { return Ok(false) };
        let (_, _, vs, value_len) = lines::entry(&mut leaf, &h, pos)?;
        if offset.checked_add(bytes.len()).is_none_or(|end| end > value_len) {
            return Err(BTreeError::OffsetOutOfRange { offset, len: bytes.len(), value_len }.into());
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
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
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

    /// Calls `f(key, value)` for the keys `>= start` in order until `f` returns false.
    /// Holds one or two shared leaf latches while `f` runs: `f` must not use the tree.
    ///
    /// # Errors
    /// `KeyTooLarge` for `start`; bad pages; the source's fix errors.
    pub fn scan(&self, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
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
    pub fn check_invariants(&self) -> Result<TreeStats> {
        check::check(self)
    }

    /// Frees every page of the tree, the root included. The caller guarantees that no
    /// other handle of this tree is used again.
    ///
    /// # Errors
    /// Bad pages; the source's errors.
    pub fn destroy(self) -> Result<()> {
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

    /// Descends to the leaf for `key` and returns it latched shared (whole page: for
    /// scans).
    #[inline]
    fn descend_shared(&self, key: &[u8]) -> Result<(PageId, Shared<'s, S>)> {
        self.descend_with(
            key,
            |_, raw| self.source.fix_shared(self.source.child_pid(raw)),
            |leaf, pid| Ok(NodeRef::parse(leaf, pid)?.is_leaf()),
        )
    }

    /// Descends to the leaf for `key` and returns it fixed for cache-line-grained
    /// access, shared or exclusive.
    #[inline]
    fn descend_lines(&self, key: &[u8], exclusive: bool) -> Result<(PageId, Lines<'s, S>)> {
        let page_size = self.source.page_size();
        self.descend_with(
            key,
            |parent, raw| match parent {
                Some((parent, offset)) => self.source.fix_child_lines(parent, offset, raw, exclusive),
                None => self.source.fix_lines(PageId(raw), exclusive),
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
        fix_leaf: impl Fn(Option<(&Optimistic<'s, S>, usize)>, u64) -> Result<L>,
        is_leaf: impl Fn(&mut L, PageId) -> Result<bool>,
    ) -> Result<(PageId, L)> {
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
                    Err(e) => return Err(e),
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
        fix_leaf: impl Fn(Option<(&Optimistic<'s, S>, usize)>, u64) -> Result<L>,
        is_leaf: impl Fn(&mut L, PageId) -> Result<bool>,
    ) -> Result<(PageId, L)> {
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
        Err(BTreeError::RestartLimit { op: "descent", restarts: BTREE_RESTARTS_MAX }.into())
    }

    /// The pessimistic descent: exclusive coupling from the root; ancestors are released
    /// as soon as the current node is `safe(node, is_root)`. Returns the held chain, the
    /// leaf last.
    fn descend_exclusive(&self, key: &[u8], safe: impl Fn(&NodeRef<'_>, bool) -> bool) -> Result<Chain<'s, S>> {
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

    /// Insert, update or upsert: optimistic first, pessimistic with splits if the leaf
    /// has no room.
    fn write(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<bool> {
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
    ) -> Result<LeafWrite> {
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
    ) -> Result<LeafWrite> {
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

#[cfg(test)]
mod tests;
