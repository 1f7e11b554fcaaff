//! Range reads: [`Db::range`] and [`Txn::range`] return a [`DbRange`], an iterator
//! over a tree's keys within bounds, in both directions; [`Txn::delete_range`] and
//! [`Db::delete_range`] delete what a range holds.
//!
//! A `DbRange` reads the tree in batches of at most [`RANGE_BATCH_ENTRIES`] entries
//! ([`BTree::read_range`]) and holds no latch between calls. It keeps what it has not
//! read yet as one key range, `lower..upper`: a forward batch reads from `lower` up and
//! moves `lower` past the range the batch covered; a reverse batch reads from `upper`
//! down and moves `upper` below it. Entries read but not yet returned wait in a buffer
//! per end. Once `lower..upper` is empty, each end takes what is left in the other's
//! buffer, so `next` and `next_back` meet without returning a key twice.
//!
//! Every batch goes through [`Db::visible_batch`] (`mvcc.rs`) with the iterator's read
//! view, which may drop entries the view must not see and add keys the view sees that
//! the tree no longer holds, within the range the raw read covered: the iterator
//! resumes from that covered range, never from the last entry it was given, and an
//! empty batch is not the end. While a batch reads the tree it holds the tree map's
//! read guard ([`Db::with_tree`]), so [`Db::drop_tree`] cannot free pages under it.
//!
//! Bounds are given as a [`KeyRange`]: any of `..`, `a..`, `..b`, `a..b`, `a..=b`,
//! `..=b`, or a pair of [`Bound`]s, over keys that are `AsRef<[u8]>`.

use std::collections::VecDeque;
use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use crate::Result;
use crate::btree::{BTree, BTreeError, RangeRead};
use crate::buffer::BufferManager;
use crate::ids::PageId;
use crate::limits::BTREE_KEY_BYTES_MAX;

use super::config::DbError;
use super::handle::Db;
use super::mvcc::{Batch, ReadView};
use super::store::DbStore;
use super::txn::Txn;

/// Most entries one batch of a [`DbRange`] reads from the tree (and most keys
/// [`Txn::delete_range`] collects before deleting them).
pub const RANGE_BATCH_ENTRIES: usize = 128;

/// Bounds of a range of keys: implemented for `..` and for `a..b`, `a..=b`, `a..`,
/// `..b`, `..=b` and `(Bound<K>, Bound<K>)` over any key type `K: AsRef<[u8]>`
/// (`&[u8]`, `Vec<u8>`, `&[u8; N]`, `&str`…), so that `db.range("t", ..)` and
/// `db.range("t", b"a".as_slice()..b"c".as_slice())` need no type annotation. (A bound
/// `RangeBounds<[u8]>` would not do: std implements `RangeBounds<T>` for `Range<&T>`
/// only for sized `T`.)
pub trait KeyRange {
    /// The lower and the upper bound.
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>);
}

impl KeyRange for RangeFull {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for Range<K> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start.as_ref()), Bound::Excluded(self.end.as_ref()))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeInclusive<K> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start().as_ref()), Bound::Included(self.end().as_ref()))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeFrom<K> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start.as_ref()), Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeTo<K> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Excluded(self.end.as_ref()))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeToInclusive<K> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Included(self.end.as_ref()))
    }
}

impl<K: AsRef<[u8]>> KeyRange for (Bound<K>, Bound<K>) {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (self.0.as_ref().map(AsRef::as_ref), self.1.as_ref().map(AsRef::as_ref))
    }
}

impl<R: KeyRange + ?Sized> KeyRange for &R {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (**self).key_bounds()
    }
}

/// A key-value pair a [`DbRange`] yields.
type Entry = (Vec<u8>, Vec<u8>);

/// Lower and upper bound of a range of owned keys.
type OwnedBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// An iterator over the keys of a tree within bounds, in ascending order (`next`) and
/// descending order (`next_back`, so `.rev()` works), the two ends meeting without
/// overlap; see the module doc. Made by [`Db::range`] and [`Txn::range`].
///
/// What it sees: [`Db::range`]'s, one snapshot of the database taken when the range was
/// made and kept for the iterator's life; [`Txn::range`]'s, what its transaction sees
/// (its own changes included). It holds no latch and no lock between calls, so the
/// caller may write to the database while iterating.
///
/// After an error (the tree's, the log's or the store's failure, `SnapshotTooOld`,
/// `NoSuchTree` once the tree was dropped) it yields that error once and then `None`.
pub struct DbRange<'db, S: DbStore = BufferManager> {
    db: &'db Db<S>,
    tree: String,
    /// The tree's root when the range was made: a batch that finds no tree or another
    /// root under the name (dropped, perhaps made again) fails with `NoSuchTree`. (A
    /// tree made again whose root is the very page of the old root is not told apart.)
    root: PageId,
    view: ViewHold<'db>,
    /// What is not read yet, from either end.
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// `lower..upper` holds nothing more: each end drains the buffers.
    read_all: bool,
    /// Read forward, not yet returned: ascending, all below `lower`.
    front: VecDeque<Entry>,
    /// Read in reverse, not yet returned: descending, all above `upper`.
    back: VecDeque<Entry>,
    /// An error was returned: nothing more.
    failed: bool,
}

/// A range's view: its transaction's, or a snapshot of its own (`Db::range`).
enum ViewHold<'a> {
    Borrowed(&'a ReadView),
    Owned(ReadView),
}

impl ViewHold<'_> {
    fn get(&self) -> &ReadView {
        match self {
            ViewHold::Borrowed(v) => v,
            ViewHold::Owned(v) => v,
        }
    }
}

impl<S: DbStore> std::fmt::Debug for DbRange<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbRange")
            .field("tree", &self.tree)
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("read_all", &self.read_all)
            .finish_non_exhaustive()
    }
}

impl<'db, S: DbStore> DbRange<'db, S> {
    /// A range over `bounds` of tree `tree` as `view` sees it.
    ///
    /// # Errors
    /// As [`Db::range`].
    fn new(db: &'db Db<S>, tree: &str, bounds: (Bound<&[u8]>, Bound<&[u8]>), view: ViewHold<'db>) -> Result<Self> {
        db.check_alive()?;
        let root = db.root(tree)?;
        let (lower, upper) = check_bounds(tree, bounds)?;
        let read_all = is_empty(&lower, &upper);
        Ok(DbRange {
            db,
            tree: tree.to_string(),
            root,
            view,
            lower,
            upper,
            read_all,
            front: VecDeque::new(),
            back: VecDeque::new(),
            failed: false,
        })
    }

    /// Reads the next batch at the front (or with `reverse` at the back) through the
    /// view, and moves that end of `lower..upper` past the range it covered.
    fn fill(&mut self, reverse: bool) -> Result<()> {
        debug_assert!(!self.read_all, "a batch read past the end of {}", self.tree);
        self.db.check_alive()?;
        let (db, tree, root) = (self.db, self.tree.as_str(), self.root);
        let (lower, upper) = (&self.lower, &self.upper);
        let mut read = || -> Result<Batch> {
            let got = db.with_tree(tree, |t| {
                if t.root() != root {
                    return Err(DbError::NoSuchTree { name: format!("{tree} (dropped while a range read it)") }.into());
                }
                let (lo, hi) = (lower.as_ref().map(Vec::as_slice), upper.as_ref().map(Vec::as_slice));
                Ok(t.read_range(lo, hi, reverse, RANGE_BATCH_ENTRIES)?)
            })?;
            Ok(covered(got, lower, upper, reverse))
        };
        let batch = db.visible_batch(self.view.get(), root, reverse, &mut read)?;
        debug_assert!(
            batch.entries.windows(2).all(|w| if reverse { w[0].0 > w[1].0 } else { w[0].0 < w[1].0 }),
            "a batch of {tree} out of order"
        );
        // The next read starts past what this one covered, whatever entries it kept.
        if reverse {
            assert!(
                batch.hi == self.upper,
                "{tree}: a reverse batch from {:?} covered up to {:?}",
                self.upper,
                batch.hi
            );
            match batch.lo {
                Bound::Included(k) => self.upper = Bound::Excluded(k),
                Bound::Excluded(k) => self.upper = Bound::Included(k),
                Bound::Unbounded => self.read_all = true,
            }
            self.back.extend(batch.entries);
        } else {
            assert!(
                batch.lo == self.lower,
                "{tree}: a forward batch from {:?} covered from {:?}",
                self.lower,
                batch.lo
            );
            match batch.hi {
                Bound::Included(k) => self.lower = Bound::Excluded(k),
                Bound::Excluded(k) => self.lower = Bound::Included(k),
                Bound::Unbounded => self.read_all = true,
            }
            self.front.extend(batch.entries);
        }
        self.read_all |= is_empty(&self.lower, &self.upper);
        Ok(())
    }

    /// The next entry from one end: its buffer, then a new batch, then (once
    /// everything is read) the other end's buffer.
    fn step(&mut self, reverse: bool) -> Option<Result<Entry>> {
        if self.failed {
            return None;
        }
        loop {
            let own = if reverse { self.back.pop_front() } else { self.front.pop_front() };
            if let Some(e) = own {
                return Some(Ok(e));
            }
            if self.read_all {
                let other = if reverse { self.front.pop_back() } else { self.back.pop_back() };
                return other.map(Ok);
            }
            if let Err(e) = self.fill(reverse) {
                self.failed = true;
                self.front.clear();
                self.back.clear();
                return Some(Err(e));
            }
        }
    }
}

impl<S: DbStore> Iterator for DbRange<'_, S> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    /// The next key and value in ascending order.
    fn next(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

impl<S: DbStore> DoubleEndedIterator for DbRange<'_, S> {
    /// The next key and value in descending order.
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl<S: DbStore> std::iter::FusedIterator for DbRange<'_, S> {}

/// The batch a raw read covered: from where it started to its last entry, or to the
/// range's other end if the tree ran out.
fn covered(got: RangeRead, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>, reverse: bool) -> Batch {
    let last = got.entries.last().map(|(k, _)| Bound::Included(k.clone()));
    assert!(got.exhausted || last.is_some(), "a read stopped at its limit with no entry");
    let (lo, hi) = match (reverse, last) {
        (false, Some(last)) if !got.exhausted => (lower.clone(), last),
        (true, Some(last)) if !got.exhausted => (last, upper.clone()),
        _ => (lower.clone(), upper.clone()),
    };
    Batch { entries: got.entries, lo, hi }
}

/// The bounds, owned, if they make a range.
///
/// # Errors
/// `BadRange` for a start after the end or both bounds excluding one key;
/// `KeyTooLarge` for a bound longer than a key can be.
fn check_bounds(tree: &str, (lo, hi): (Bound<&[u8]>, Bound<&[u8]>)) -> Result<OwnedBounds> {
    for b in [lo, hi] {
        if let Bound::Included(k) | Bound::Excluded(k) = b
            && k.len() > BTREE_KEY_BYTES_MAX
        {
            return Err(BTreeError::KeyTooLarge { len: k.len(), max: BTREE_KEY_BYTES_MAX }.into());
        }
    }
    let bad = |what: String| Err(DbError::BadRange { tree: tree.to_string(), what }.into());
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) = (lo, hi) {
        if a > b {
            return bad(format!("start {:?} is after end {:?}", lossy(a), lossy(b)));
        }
        if let (Bound::Excluded(_), Bound::Excluded(_)) = (lo, hi)
            && a == b
        {
            return bad(format!("both bounds exclude the one key {:?}", lossy(a)));
        }
    }
    Ok((lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec)))
}

/// A key for an error message.
fn lossy(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

/// Whether no key lies within `lower..upper`.
fn is_empty(lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    match (lower, upper) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a >= b
        }
        _ => false,
    }
}

impl<S: DbStore> Db<S> {
    /// The keys of tree `tree` within `bounds`, with their values: an iterator both
    /// ways ([`DbRange`]), reading in batches, which sees one snapshot of the database
    /// taken now for its whole life. `bounds` is any range over keys ([`KeyRange`]):
    /// `db.range("t", ..)`, `db.range("t", b"a".as_slice()..b"c".as_slice())`,
    /// `db.range("t", (Bound::Excluded(a), Bound::Included(b)))`.
    ///
    /// ```no_run
    /// # let db = tierdb::db::Db::open(&tierdb::db::DbConfig::new("/tmp/mydb"))?;
    /// for entry in db.range("users", b"a".as_slice()..b"m".as_slice())?.rev() {
    ///     let (key, value) = entry?;
    /// }
    /// # Ok::<(), tierdb::Error>(())
    /// ```
    ///
    /// # Errors
    /// `NoSuchTree`; `BadRange` for a start after the end or both bounds excluding one
    /// key (where `BTreeMap::range` panics); `KeyTooLarge` for a bound longer than a
    /// key can be; `Halted` or the log's or store's failure. Later errors come from the
    /// iterator (see [`DbRange`]).
    pub fn range<R: KeyRange>(&self, tree: &str, bounds: R) -> Result<DbRange<'_, S>> {
        DbRange::new(self, tree, bounds.key_bounds(), ViewHold::Owned(self.mvcc.snapshot_view()))
    }

    /// Deletes every key of tree `tree` within `bounds`, in a transaction of its own;
    /// returns how many it deleted.
    ///
    /// # Errors
    /// As [`Txn::delete_range`] and [`Txn::commit`]; after an error nothing is deleted.
    pub fn delete_range<R: KeyRange>(&self, tree: &str, bounds: R) -> Result<u64> {
        let mut t = self.begin();
        let n = t.delete_range(tree, bounds)?;
        t.commit()?;
        Ok(n)
    }

    /// Calls `f` with tree `name` while holding the tree map's read guard, so that the
    /// tree is not dropped (its pages freed) while `f` reads it. `f` must not take the
    /// tree map's lock again (a recursive read waits behind a waiting writer:
    /// [`parking_lot::RwLock`] is fair), so it must not call `Db` methods that name a
    /// tree.
    ///
    /// # Errors
    /// `NoSuchTree`; `f`'s errors.
    pub(super) fn with_tree<R>(&self, name: &str, f: impl FnOnce(&BTree<'_, S>) -> Result<R>) -> Result<R> {
        let trees = self.trees.read();
        let Some(&root) = trees.get(name) else {
            return Err(DbError::NoSuchTree { name: name.into() }.into());
        };
        let tree = BTree::open(&self.store, root)?;
        let r = f(&tree);
        drop(trees);
        r
    }
}

impl<S: DbStore> Txn<'_, S> {
    /// The keys of tree `tree` within `bounds` as this transaction sees them (its own
    /// uncommitted changes included), with their values: as [`Db::range`], with the
    /// transaction's view instead of a snapshot of its own.
    ///
    /// # Errors
    /// As [`Db::range`].
    pub fn range<R: KeyRange>(&self, tree: &str, bounds: R) -> Result<DbRange<'_, S>> {
        self.check_failed()?;
        DbRange::new(self.db(), tree, bounds.key_bounds(), ViewHold::Borrowed(self.view()))
    }

    /// Deletes every key of tree `tree` within `bounds` that this transaction sees,
    /// each through [`delete`](Self::delete) (locked until the transaction ends);
    /// returns how many it deleted. Reads at most [`RANGE_BATCH_ENTRIES`] keys, deletes
    /// them, and reads on after the last.
    ///
    /// # Errors
    /// As [`range`](Self::range) and [`delete`](Self::delete). After an error the
    /// transaction should be rolled back (some keys may be deleted).
    pub fn delete_range<R: KeyRange>(&mut self, tree: &str, bounds: R) -> Result<u64> {
        let (lower, upper) = bounds.key_bounds();
        let mut lower = lower.map(<[u8]>::to_vec);
        let mut deleted = 0u64;
        loop {
            let keys = {
                let range = self.range(tree, (lower.as_ref().map(Vec::as_slice), upper))?;
                range.take(RANGE_BATCH_ENTRIES).map(|e| e.map(|(k, _)| k)).collect::<Result<Vec<_>>>()?
            };
            for k in &keys {
                if self.delete(tree, k)? {
                    deleted += 1;
                }
            }
            match keys.into_iter().next_back() {
                Some(last) if upper_allows_more(&last, upper) => lower = Bound::Excluded(last),
                _ => return Ok(deleted),
            }
        }
    }
}

/// Whether a key after `last` may still be within `upper`.
fn upper_allows_more(last: &[u8], upper: Bound<&[u8]>) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Included(u) | Bound::Excluded(u) => last < u,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(k: &str) -> Bound<Vec<u8>> {
        Bound::Included(k.as_bytes().to_vec())
    }

    fn x(k: &str) -> Bound<Vec<u8>> {
        Bound::Excluded(k.as_bytes().to_vec())
    }

    #[test]
    fn emptiness_of_ranges() {
        let u = Bound::Unbounded;
        assert!(!is_empty(&u, &u));
        assert!(!is_empty(&b("a"), &b("a")));
        assert!(is_empty(&b("a"), &x("a")));
        assert!(is_empty(&x("a"), &b("a")));
        assert!(is_empty(&b("b"), &b("a")));
        assert!(!is_empty(&x("a"), &x("b")), "keys such as \"a\\0\" lie between");
        assert!(!is_empty(&x("a"), &u));
    }

    #[test]
    fn bad_bounds_are_typed_errors() {
        let ok = |lo, hi| check_bounds("t", (lo, hi)).is_ok();
        assert!(ok(Bound::Included(&b"a"[..]), Bound::Excluded(&b"a"[..])), "empty, not bad");
        assert!(ok(Bound::Excluded(&b"a"[..]), Bound::Included(&b"a"[..])));
        let e = check_bounds("t", (Bound::Included(b"b"), Bound::Included(b"a"))).unwrap_err().to_string();
        assert!(e.contains("start \"b\" is after end \"a\"") && e.contains("\"t\""), "{e}");
        let e = check_bounds("t", (Bound::Excluded(b"a"), Bound::Excluded(b"a"))).unwrap_err().to_string();
        assert!(e.contains("exclude the one key"), "{e}");
        let long = vec![0u8; BTREE_KEY_BYTES_MAX + 1];
        let e = check_bounds("t", (Bound::Unbounded, Bound::Excluded(&long))).unwrap_err().to_string();
        assert!(e.contains(&format!("{}", BTREE_KEY_BYTES_MAX + 1)), "{e}");
    }

    #[test]
    fn a_covered_range_ends_at_the_last_entry_unless_the_tree_ran_out() {
        let e = |k: &str| (k.as_bytes().to_vec(), Vec::new());
        let stopped = RangeRead { entries: vec![e("b"), e("c")], exhausted: false };
        let c = covered(stopped.clone(), &b("a"), &Bound::Unbounded, false);
        assert_eq!((c.lo, c.hi), (b("a"), b("c")));
        let c = covered(stopped, &b("a"), &x("z"), true);
        assert_eq!((c.lo, c.hi), (b("c"), x("z")));
        let ran_out = RangeRead { entries: vec![], exhausted: true };
        let c = covered(ran_out, &x("a"), &x("z"), true);
        assert_eq!((c.lo, c.hi), (x("a"), x("z")));
    }
}
