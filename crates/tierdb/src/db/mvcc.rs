//! Snapshot isolation: the version store and read views (skeleton: the API that
//! `range.rs` and `txn.rs` use; the store is filled in by the same change).
//!
//! The tree always holds the newest value of a key, committed or not. A transaction
//! that writes a key first records the key's committed value (its before-image) here,
//! then changes the tree; a reader whose view must not see that change finds the
//! before-image and reads it instead of the tree's value.

use std::ops::Bound;
use std::sync::Arc;

use crate::Result;
use crate::ids::{PageId, TxnId};

use super::config::Isolation;
use super::handle::Db;
use super::store::DbStore;

/// The version store: before-images of keys written by running transactions, and of
/// keys committed after the oldest snapshot still running.
pub(super) struct Mvcc {
    isolation: Isolation,
    bytes_max: u64,
}

impl Mvcc {
    /// A version store for transactions of `isolation`, keeping at most `bytes_max`
    /// bytes of before-images for snapshots.
    pub(super) fn new(isolation: Isolation, bytes_max: u64) -> Mvcc {
        Mvcc { isolation, bytes_max }
    }

    /// The isolation of the database's transactions.
    pub(super) fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Most bytes of before-images kept.
    pub(super) fn bytes_max(&self) -> u64 {
        self.bytes_max
    }

    /// The view of a transaction `txn` starting now (its snapshot registered until the
    /// last clone of the view is dropped).
    pub(super) fn begin_view(&self, txn: TxnId) -> ReadView {
        ReadView { inner: Arc::new(ViewInner { txn }) }
    }

    /// The view of a non-transactional reader that lasts (an iterator of `Db::range`):
    /// a registered snapshot without a transaction.
    pub(super) fn snapshot_view(&self) -> ReadView {
        self.begin_view(TxnId::NONE)
    }

    /// The view of a non-transactional point read: the latest committed state.
    pub(super) fn latest_view(&self) -> ReadView {
        ReadView { inner: Arc::new(ViewInner { txn: TxnId::NONE }) }
    }
}

/// What a reader sees: a snapshot (or the latest committed state) and the
/// transaction whose own changes it sees. Cheap to clone; the snapshot stays
/// registered while a clone lives.
#[derive(Clone)]
pub(super) struct ReadView {
    inner: Arc<ViewInner>,
}

struct ViewInner {
    txn: TxnId,
}

impl ReadView {
    /// The transaction whose changes the view sees as its own ([`TxnId::NONE`]: none).
    pub(super) fn txn(&self) -> TxnId {
        self.inner.txn
    }
}

impl std::fmt::Debug for ReadView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadView").field("txn", &self.inner.txn).finish_non_exhaustive()
    }
}

/// A batch of a range read: the entries read, in the order read (descending keys
/// for a reverse read), and the key range the read covered, `lo <= hi` in key order:
/// every key the tree held in it was read.
#[derive(Debug)]
pub(super) struct Batch {
    /// `(key, value)` in the order read.
    pub(super) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// The covered range's lower bound.
    pub(super) lo: Bound<Vec<u8>>,
    /// The covered range's upper bound.
    pub(super) hi: Bound<Vec<u8>>,
}

impl<S: DbStore> Db<S> {
    /// The value of `key` in the tree rooted at `root` as `view` sees it.
    ///
    /// # Errors
    /// The tree's errors; `SnapshotTooOld` if the view's snapshot was ended.
    pub(super) fn read_visible(&self, view: &ReadView, root: PageId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = view;
        Ok(crate::btree::BTree::open(&self.store, root)?.get(key, <[u8]>::to_vec)?)
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
        let _ = (view, root, reverse);
        read()
    }
}
