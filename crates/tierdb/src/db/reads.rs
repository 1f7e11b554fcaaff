//! Reads and writes through the version store: what a view sees of a key or of a
//! batch of a range (`read_visible`, `visible_batch`, `scan_visible`), and the steps a
//! transaction takes at its first write of a key, its commit and its rollback. The
//! store itself and the argument for why these reads are right are in `mvcc.rs`.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::Result;
use crate::btree::BTree;
use crate::ids::PageId;

use super::config::{DbError, Isolation};
use super::handle::Db;
use super::mvcc::{Batch, Conflict, MvccStats, ReadView};
use super::store::DbStore;

/// Rereads of one key or batch because rollbacks kept interfering, at most; then the
/// read fails (each reread means another transaction rolled back meanwhile).
const REREADS_MAX: u32 = 1_000;

/// Entries a scan reads from the tree at a time, at most (the first batch reads
/// fewer, [`SCAN_BATCH_ENTRIES_FIRST`], doubling: a short scan reads little).
pub(super) const SCAN_BATCH_ENTRIES: usize = 256;

/// Entries the first batch of a scan reads.
const SCAN_BATCH_ENTRIES_FIRST: usize = 16;

impl<S: DbStore> Db<S> {
    /// The value of `key` in the tree rooted at `root` as `view` sees it.
    ///
    /// # Errors
    /// The tree's errors; `SnapshotTooOld` if the view's snapshot was ended.
    pub(super) fn read_visible(&self, view: &ReadView, root: PageId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read_visible_part(view, root, key, 0..usize::MAX, <[u8]>::to_vec)
    }

    /// Bytes `part` of the value of `key` as `view` sees it, given to `f` (in place
    /// when no version is involved).
    ///
    /// # Errors
    /// As [`read_visible`](Self::read_visible).
    pub(super) fn read_visible_part<R>(
        &self,
        view: &ReadView,
        root: PageId,
        key: &[u8],
        part: std::ops::Range<usize>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let mvcc = &self.mvcc;
        let tree = BTree::open(&self.store, root)?;
        if view.isolation() == Isolation::ReadUncommitted {
            return Ok(tree.get_part(key, part, f)?);
        }
        let clip = |v: &[u8]| v[part.start.min(v.len())..part.end.min(v.len())].to_vec();
        let mut f = Some(f);
        for _ in 0..REREADS_MAX {
            let aborts = mvcc.aborts();
            let s = view.snapshot_now(mvcc);
            // Under the leaf's latch, where no writer can change the key nor drop a
            // version of it that the value read depends on (a version is recorded
            // before the tree changes and removed only after the change is undone or
            // visible to every snapshot): `f` runs in place on the value the view
            // sees, unless a version says otherwise. (No lock is held while a latch is
            // taken, so looking a version up under one cannot deadlock.)
            let r = tree.get_part(key, part.clone(), |v| {
                let resolved = if mvcc.empty() { None } else { mvcc.resolve(view, s, root.0, key) };
                match resolved {
                    None => Ok(f.take().expect("once")(v)),
                    Some(before) => Err(before),
                }
            })?;
            let value = match r {
                Some(Ok(r)) => {
                    view.check(mvcc)?;
                    return Ok(Some(r));
                }
                Some(Err(before)) => before,
                // Absent from the tree: an uncommitted or later delete the view must
                // not see, unless that delete was rolled back meanwhile.
                None => {
                    let resolved = if mvcc.empty() { None } else { mvcc.resolve(view, s, root.0, key) };
                    if mvcc.aborts() != aborts {
                        continue;
                    }
                    resolved.flatten()
                }
            };
            view.check(mvcc)?;
            return Ok(value.map(|b| f.take().expect("once")(&clip(&b))));
        }
        Err(interfered(key))
    }

    /// One batch of a range read as `view` sees it. `read` reads the tree's entries
    /// (it may be called again if a writer interfered); the result keeps its covered
    /// range and order, with each entry's value as the view sees it, entries the view
    /// does not see left out, and keys the view sees but the tree no longer holds (a
    /// delete the view must not see) put in.
    ///
    /// # Errors
    /// `read`'s errors; the tree's; `SnapshotTooOld`.
    pub(super) fn visible_batch(
        &self,
        view: &ReadView,
        root: PageId,
        reverse: bool,
        read: &mut dyn FnMut() -> Result<Batch>,
    ) -> Result<Batch> {
        let mvcc = &self.mvcc;
        if view.isolation() == Isolation::ReadUncommitted {
            return read();
        }
        for _ in 0..REREADS_MAX {
            let aborts = mvcc.aborts();
            let s = view.snapshot_now(mvcc);
            let raw = read()?;
            if mvcc.empty() {
                if mvcc.aborts() != aborts {
                    continue;
                }
                view.check(mvcc)?;
                return Ok(raw);
            }
            let mut seen: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            for (k, v) in raw.entries {
                let value = match mvcc.resolve(view, s, root.0, &k) {
                    None => Some(v),
                    Some(before) => before,
                };
                seen.insert(k, value);
            }
            let lo = as_ref_bound(&raw.lo);
            let hi = as_ref_bound(&raw.hi);
            for k in mvcc.keys_in(root.0, lo, hi) {
                if seen.contains_key(&k) {
                    continue;
                }
                // Not in the tree when it was read: what the view sees instead.
                if let Some(before) = mvcc.resolve(view, s, root.0, &k) {
                    seen.insert(k, before);
                }
            }
            if mvcc.aborts() != aborts {
                continue;
            }
            view.check(mvcc)?;
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
                seen.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
            if reverse {
                entries.reverse();
            }
            return Ok(Batch { entries, lo: raw.lo, hi: raw.hi });
        }
        Err(interfered(b"(a range)"))
    }

    /// Calls `f(key, value)` for the keys `>= start` of tree `tree` that `view` sees, in
    /// order, until `f` returns false. Reads up to [`SCAN_BATCH_ENTRIES`] at a time through
    /// [`visible_batch`](Self::visible_batch), holding no latch while `f` runs.
    ///
    /// # Errors
    /// `NoSuchTree`; the tree's errors; `SnapshotTooOld`.
    pub(super) fn scan_visible(
        &self,
        view: &ReadView,
        tree: &str,
        start: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.check_alive()?;
        let root = self.root(tree)?;
        let mut from: Bound<Vec<u8>> = Bound::Included(start.to_vec());
        let mut batch_entries = SCAN_BATCH_ENTRIES_FIRST;
        loop {
            let mut read = || -> Result<Batch> {
                let mut entries = Vec::new();
                let (key, skip) = match &from {
                    Bound::Included(k) => (k.as_slice(), None),
                    Bound::Excluded(k) => (k.as_slice(), Some(k.as_slice())),
                    Bound::Unbounded => (&[][..], None),
                };
                let mut full = false;
                // Under the tree map's guard: a drop cannot free the pages meanwhile.
                self.with_tree(tree, |t| {
                    if t.root() != root {
                        return Err(DbError::NoSuchTree { name: tree.to_string() }.into());
                    }
                    Ok(t.scan(key, |k, v| {
                        if skip == Some(k) {
                            return true;
                        }
                        entries.push((k.to_vec(), v.to_vec()));
                        full = entries.len() >= batch_entries;
                        !full
                    })?)
                })?;
                let hi = match (full, entries.last()) {
                    (true, Some((k, _))) => Bound::Included(k.clone()),
                    _ => Bound::Unbounded,
                };
                Ok(Batch { entries, lo: from.clone(), hi })
            };
            let batch = self.visible_batch(view, root, false, &mut read)?;
            for (k, v) in &batch.entries {
                if !f(k, v) {
                    return Ok(());
                }
            }
            batch_entries = (batch_entries * 2).min(SCAN_BATCH_ENTRIES);
            match batch.hi {
                Bound::Included(k) => from = Bound::Excluded(k),
                _ => return Ok(()),
            }
        }
    }

    /// Before the transaction of `view` first writes `key` of the tree rooted at `root`
    /// (holding its lock): the snapshot-isolation check, and its before-image recorded.
    ///
    /// # Errors
    /// `WriteConflict` (named by `tree`); the tree's errors reading the before-image.
    pub(super) fn before_first_write(&self, view: &ReadView, tree: &str, root: PageId, key: &[u8]) -> Result<()> {
        if view.isolation() == Isolation::ReadUncommitted {
            return Ok(());
        }
        view.check(&self.mvcc)?;
        let before = BTree::open(&self.store, root)?.get(key, <[u8]>::to_vec)?;
        self.mvcc.record(view, root.0, key, before).map_err(|Conflict| conflict(view, tree, key))
    }

    /// `WriteConflict` if `key` was committed after `view`'s snapshot (a locking read).
    pub(super) fn check_conflict(&self, view: &ReadView, tree: &str, root: PageId, key: &[u8]) -> Result<()> {
        view.check(&self.mvcc)?;
        if self.mvcc.conflicts(view, root.0, key) { Err(conflict(view, tree, key)) } else { Ok(()) }
    }

    /// The transaction of `view` committed: its versions become visible to newer
    /// snapshots; then what no snapshot needs is collected.
    pub(super) fn versions_committed(&self, view: &ReadView, keys: Vec<(u64, Box<[u8]>)>) {
        if view.isolation() != Isolation::ReadUncommitted {
            self.mvcc.commit(view, keys);
        }
    }

    /// The transaction of `view` rolled back: its versions go.
    pub(super) fn versions_rolled_back(&self, view: &ReadView, keys: &[(u64, Box<[u8]>)]) {
        if view.isolation() != Isolation::ReadUncommitted {
            self.mvcc.abort(view, keys);
        }
    }

    /// The isolation of its transactions ([`DbConfig::isolation`](super::DbConfig::isolation)).
    pub fn isolation(&self) -> Isolation {
        self.mvcc.isolation()
    }

    /// What the version store holds now: versions, bytes kept for snapshots, running
    /// snapshots, snapshots the limit ended.
    pub fn versions(&self) -> MvccStats {
        self.mvcc.stats()
    }

    /// Collects versions no snapshot needs (after a transaction ended and its view was
    /// dropped).
    pub(super) fn collect_versions(&self) {
        if self.mvcc.isolation() != Isolation::ReadUncommitted && self.mvcc.has_committed() {
            self.mvcc.collect();
        }
    }
}

fn conflict(view: &ReadView, tree: &str, key: &[u8]) -> crate::Error {
    DbError::WriteConflict { txn: view.txn(), tree: tree.to_string(), key: String::from_utf8_lossy(key).into() }.into()
}

/// A read that rollbacks kept interfering with.
fn interfered(key: &[u8]) -> crate::Error {
    DbError::Config {
        what: format!(
            "a read of {:?} was interrupted by rollbacks {REREADS_MAX} times in a row",
            String::from_utf8_lossy(key)
        ),
    }
    .into()
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}
