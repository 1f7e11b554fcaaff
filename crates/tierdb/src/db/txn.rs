//! Transactions: [`Txn`], and its log ([`TxnLog`]) — what the trees call as they
//! change pages, which appends update and compensation records and keeps the
//! transaction's undo steps.
//!
//! A transaction's records form a chain by previous LSN from its last record back to
//! its first; its first record's LSN (a bound below it) is registered in the database's
//! active table before the record is appended, so that no truncation or checkpoint
//! drops it. It ends with a commit and end record, or with compensations and an end
//! record; either way its locks are released and it leaves the active table.
//! Concurrency: a `Txn` is used by one thread; its state is behind a mutex only
//! because the trees reach it through a shared [`TreeLog`].

use std::collections::HashSet;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;

use crate::Result;
use crate::btree::{BTree, LeafChange, TreeLog};
use crate::buffer::BufferManager;
use crate::ids::{PageId, TxnId};
use crate::wal::payload::{ChangeOp, encode_change};
use crate::wal::{Durability, Kind, Lsn, RecordHead, WalError};

use super::config::DbError;
use super::handle::Db;
use super::locks::{LOCK_WAIT_MS_MAX, LockError, LockedKey};
use super::mvcc::ReadView;
use super::store::DbStore;
use super::undo::{Undo, UndoStep};

/// What a transaction's log knows of it.
#[derive(Default)]
pub(super) struct TxnState {
    /// A bound below its first record ([`Lsn::NONE`]: none yet), registered in the
    /// active table.
    first: Lsn,
    /// Its last record ([`Lsn::NONE`]: none): the previous LSN of its next record.
    pub(super) last: Lsn,
    /// For rollback, in order of change.
    undo: Vec<UndoStep>,
    /// Keys locked.
    locks: Vec<LockedKey>,
    /// Keys locked by a locking read and not (yet) written: their first write records
    /// a version.
    read_locked: HashSet<LockedKey>,
    /// Keys with a version of this transaction (`mvcc.rs`), in order of first write.
    versioned: Vec<(u64, Box<[u8]>)>,
    /// Rolling back: changes are compensations, whose undo-next LSN is this.
    pub(super) compensating: Option<Lsn>,
}

/// A transaction's log: what the trees call as they change pages.
pub(super) struct TxnLog<'db, S: DbStore> {
    pub(super) db: &'db Db<S>,
    pub(super) id: TxnId,
    pub(super) state: Mutex<TxnState>,
}

impl<'db, S: DbStore> TxnLog<'db, S> {
    /// The log of transaction `id`, which has no records yet (or whose last record
    /// recovery sets: a loser's).
    pub(super) fn new(db: &'db Db<S>, id: TxnId) -> TxnLog<'db, S> {
        assert!(!id.is_none() && !id.is_smo(), "a transaction's log for {id:#x}, not a transaction id");
        TxnLog { db, id, state: Mutex::new(TxnState::default()) }
    }
}

impl<S: DbStore> TreeLog for TxnLog<'_, S> {
    fn leaf_change(&self, root: PageId, page: PageId, change: LeafChange<'_>) -> Result<Lsn, WalError> {
        let mut st = self.state.lock();
        let (kind, undo_next) = match st.compensating {
            Some(next) => (Kind::Compensation, next),
            None => (Kind::Update, Lsn::NONE),
        };
        if st.first.is_none() {
            // Registered before the append, at a bound below the record's LSN, so that
            // a truncation racing with it cannot drop the record.
            let bound = self.db.wal.next_lsn();
            st.first = bound;
            self.db.active.lock().insert(self.id, bound);
        }
        let head = RecordHead::new(kind, self.id, st.last).page(page.0).undo_next(undo_next);
        let appended = self.db.wal.append(&head, &encode_leaf_change(root, &change));
        if st.compensating.is_none() {
            // Kept whether or not the append succeeded: the tree changed the leaf before
            // logging it, so a failed append leaves the change in memory, and a rollback
            // must undo it (or, with the log failed, the database refuses all work).
            let (key, undo) = match change {
                LeafChange::Put { key, old, .. } => (key, Undo::Restore(old.map(<[u8]>::to_vec))),
                LeafChange::Delete { key, old } => (key, Undo::Restore(Some(old.to_vec()))),
                LeafChange::Patch { key, offset, old, .. } => (key, Undo::Patch { offset, old: old.to_vec() }),
            };
            let undo_next = st.last;
            st.undo.push(UndoStep { root, key: key.to_vec(), undo, undo_next });
        }
        let lsn = appended?;
        // The chain by previous LSN runs backwards through the log.
        assert!(
            lsn > st.last && lsn >= st.first,
            "{}: record at {lsn}, previous {}, first bound {}",
            self.id,
            st.last,
            st.first
        );
        st.last = lsn;
        Ok(lsn)
    }

    fn smo_begin(&self) -> TxnId {
        self.db.smo_begin()
    }

    fn smo_image(&self, smo: TxnId, page: PageId, bytes: &[u8]) -> Result<Lsn, WalError> {
        self.db.smo_image(smo, page, bytes)
    }

    fn smo_free(&self, smo: TxnId, page: PageId) -> Result<Lsn, WalError> {
        debug_assert!(smo.is_smo(), "free of {page} for {smo:#x}, not a structure change");
        self.db.wal.append(&RecordHead::new(Kind::PageFree, smo, Lsn::NONE).page(page.0), &[])
    }

    fn smo_end(&self, smo: TxnId) -> Result<Lsn, WalError> {
        debug_assert!(smo.is_smo(), "end of {smo:#x}, not a structure change");
        self.db.wal.append(&RecordHead::new(Kind::SmoEnd, smo, Lsn::NONE), &[])
    }
}

/// A transaction. Dropped without [`commit`](Self::commit), it rolls back.
pub struct Txn<'db, S: DbStore = BufferManager> {
    db: &'db Db<S>,
    log: TxnLog<'db, S>,
    /// What its reads see.
    view: ReadView,
    /// Set by the first error that dooms it (a conflict, a deadlock, a snapshot too
    /// old): every later operation fails with `TxnFailed`.
    failed: OnceLock<String>,
    done: bool,
}

impl<S: DbStore> std::fmt::Debug for Txn<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Txn").field("id", &self.log.id).finish_non_exhaustive()
    }
}

impl<S: DbStore> Txn<'_, S> {
    /// The transaction's id, as its log records carry it: never 0, and not reused by a
    /// later transaction of this database (ids continue after a reopen).
    pub fn id(&self) -> TxnId {
        self.log.id
    }

    /// What the transaction's reads see.
    pub(super) fn view(&self) -> &ReadView {
        &self.view
    }

    /// The database.
    pub(super) fn db(&self) -> &Db<S> {
        self.db
    }

    fn logged(&self, tree: &str) -> Result<BTree<'_, S>> {
        let t = self.db.tree(tree)?;
        Ok(if self.db.durability == Durability::None { t } else { t.logged(&self.log) })
    }

    /// `TxnFailed` once an error doomed the transaction.
    pub(super) fn check_failed(&self) -> Result<()> {
        match self.failed.get() {
            None => Ok(()),
            Some(cause) => Err(DbError::TxnFailed { txn: self.log.id, cause: cause.clone() }.into()),
        }
    }

    /// Passes `r` on; an error that dooms the transaction (a conflict, a deadlock, a
    /// snapshot too old) is remembered, so that every later operation fails.
    pub(super) fn doomed_by<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(crate::Error::Db(
            e @ (DbError::WriteConflict { .. } | DbError::Deadlock { .. } | DbError::SnapshotTooOld { .. }),
        )) = &r
        {
            let _ = self.failed.set(e.to_string());
        }
        r
    }

    /// Locks `key` of tree `tree` (rooted at `root`) for a write (`write`) or a
    /// locking read; a write's first one records the key's version.
    fn lock(&self, tree: &str, root: PageId, key: &[u8], write: bool) -> Result<()> {
        self.check_failed()?;
        let r = self.lock_inner(tree, root, key, write);
        self.doomed_by(r)
    }

    fn lock_inner(&self, tree: &str, root: PageId, key: &[u8], write: bool) -> Result<()> {
        // Every write and locking read comes here first.
        self.db.check_alive()?;
        let acquired = self.db.locks.lock(self.log.id, root, key).map_err(|e| match e {
            LockError::Timeout { owner } => DbError::LockTimeout { owner, ms: LOCK_WAIT_MS_MAX },
            LockError::Deadlock { cycle } => DbError::Deadlock { txn: self.log.id, tree: tree.to_string(), cycle },
        })?;
        if acquired {
            self.log.state.lock().locks.push((root.0, key.to_vec()));
        }
        // The holder this waited for may have failed to roll back: its changes are
        // still in memory, and the key must not be written over them.
        self.db.check_halted()?;
        // The tree may have been dropped (and its pages freed) while this waited.
        if self.db.root(tree)? != root {
            return Err(DbError::NoSuchTree { name: tree.to_string() }.into());
        }
        let first_write = {
            let mut st = self.log.state.lock();
            let k = (root.0, key.to_vec());
            match (write, acquired) {
                (true, true) => true,
                (true, false) => st.read_locked.remove(&k),
                (false, true) => {
                    st.read_locked.insert(k);
                    false
                }
                (false, false) => false,
            }
        };
        if first_write {
            self.db.before_first_write(&self.view, tree, root, key)?;
            self.log.state.lock().versioned.push((root.0, key.into()));
        } else if !write && acquired {
            self.db.check_conflict(&self.view, tree, root, key)?;
        }
        Ok(())
    }

    /// Sets `key` to `value` in tree `tree`.
    ///
    /// # Errors
    /// `NoSuchTree`, `LockTimeout`, the tree's and the log's errors. After an error
    /// the transaction should be rolled back.
    pub fn put(&mut self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let root = self.db.root(tree)?;
        self.lock(tree, root, key, true)?;
        Ok(self.logged(tree)?.upsert(key, value)?)
    }

    /// Removes `key` from tree `tree`; false if it was absent.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> Result<bool> {
        let root = self.db.root(tree)?;
        self.lock(tree, root, key, true)?;
        Ok(self.logged(tree)?.delete(key)?)
    }

    /// Overwrites `bytes.len()` bytes of `key`'s value at `offset`, in place (the
    /// value keeps its length; [`BTree::update_in_place`]). Returns false, locking the
    /// key but changing nothing, if `key` is absent.
    ///
    /// # Errors
    /// `OffsetOutOfRange` if the range is not inside the value; as [`put`](Self::put).
    pub fn update_in_place(&mut self, tree: &str, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool> {
        let root = self.db.root(tree)?;
        self.lock(tree, root, key, true)?;
        Ok(self.logged(tree)?.update_in_place(key, offset, bytes)?)
    }

    /// Locks `key` (exclusively, until the transaction ends, as a write would), then
    /// reads its value: a read-modify-write that no other writer can interleave with.
    /// An absent key is locked too. Under snapshot isolation it fails with
    /// `WriteConflict` if the key was committed after the transaction began (the value
    /// read is then the latest, which the snapshot does not see).
    ///
    /// # Errors
    /// `NoSuchTree`, `LockTimeout`, `Deadlock`, `WriteConflict`; as [`Db::get`].
    pub fn get_for_update(&mut self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let root = self.db.root(tree)?;
        self.lock(tree, root, key, false)?;
        self.get(tree, key)
    }

    /// The value of `key` as the transaction sees it: its snapshot (snapshot
    /// isolation) or the latest commit (read committed), its own changes included.
    ///
    /// # Errors
    /// `NoSuchTree`; `SnapshotTooOld` (the transaction kept its snapshot so long that
    /// the versions it needs passed [`DbConfig::version_bytes_max`](super::DbConfig::version_bytes_max)); `TxnFailed`; as [`Db::get`].
    pub fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_failed()?;
        self.db.check_alive()?;
        let r = self.db.with_tree(tree, |t| self.db.read_visible(&self.view, t.root(), key));
        self.doomed_by(r)
    }

    /// Calls `f` with bytes `part` of the value of `key` as the transaction sees it
    /// (in place when no version of the key is involved; [`Db::get_part`]).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn get_part<R>(
        &self,
        tree: &str,
        key: &[u8],
        part: Range<usize>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.check_failed()?;
        self.db.check_alive()?;
        let r = self.db.with_tree(tree, |t| self.db.read_visible_part(&self.view, t.root(), key, part, f));
        self.doomed_by(r)
    }

    /// Calls `f(key, value)` for the keys `>= start` the transaction sees, in order,
    /// until `f` returns false (in batches: `f` may use the database).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn scan(&self, tree: &str, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        self.check_failed()?;
        let r = self.db.scan_visible(&self.view, tree, start, f);
        self.doomed_by(r)
    }

    /// Commits: durable as the database's durability says once this returns.
    ///
    /// `commit` (like [`rollback`](Self::rollback)) takes the transaction: using it
    /// afterwards does not compile, so no operation can reach an ended transaction.
    ///
    /// ```compile_fail
    /// # fn f(db: &tierdb::db::Db) -> tierdb::Result<()> {
    /// let mut t = db.begin();
    /// t.put("t", b"k", b"1")?;
    /// t.commit()?;
    /// t.put("t", b"k", b"2")?; // error[E0382]: borrow of moved value: `t`
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The log's errors: the commit may or may not be durable (recovery decides). The
    /// database then refuses all further work (`Poisoned`) until it is reopened, reads
    /// included: this transaction's changes are still in memory. Once the log has
    /// failed, every commit returns its error, `group` ones too.
    pub fn commit(mut self) -> Result<()> {
        if let Err(e) = self.check_failed() {
            // Nothing of it may commit: it rolls back.
            self.done = true;
            self.undo_all()?;
            return Err(e);
        }
        self.done = true;
        let (last, locks, versioned) = {
            let mut st = self.log.state.lock();
            (st.last, std::mem::take(&mut st.locks), std::mem::take(&mut st.versioned))
        };
        let result = (|| -> Result<()> {
            self.db.check_alive()?;
            if !last.is_none() {
                let lsn = self.db.wal.append(&RecordHead::new(Kind::Commit, self.log.id, last), &[])?;
                self.db.wal.commit(lsn.advance(1), self.db.durability)?;
                self.db.wal.append(&RecordHead::new(Kind::End, self.log.id, lsn), &[])?;
            }
            Ok(())
        })();
        if result.is_ok() {
            // Visible to newer snapshots before the keys are free: the next writer of
            // one of them sees the commit (and conflicts if it began before).
            self.db.versions_committed(&self.view, versioned);
        }
        self.leave_active();
        self.db.locks.release(self.log.id, &locks);
        self.end_view();
        result?;
        self.db.truncate_after_commit()
    }

    /// Unregisters the transaction's snapshot, then collects the versions no snapshot
    /// needs any more.
    fn end_view(&mut self) {
        self.db.mvcc.release(&mut self.view);
        self.db.collect_versions();
    }

    /// Rolls back every change of the transaction, its change whose log append failed
    /// included.
    ///
    /// # Errors
    /// The tree's and the log's errors. A rollback that fails part-way halts the
    /// database: every later operation returns `Halted` (reads included, since memory
    /// holds some of the transaction's changes; `close` writes no checkpoint), and the
    /// next open's recovery finishes the rollback. Once the log has failed, `Poisoned` without undoing anything: the undo cannot be logged,
    /// the database refuses all work (no read shows the changes), and recovery rolls the
    /// transaction back when the database is reopened.
    pub fn rollback(mut self) -> Result<()> {
        self.done = true;
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<()> {
        let undo = std::mem::take(&mut self.log.state.lock().undo);
        let result = (|| {
            self.db.check_alive()?;
            // Each undo step's compensation points past the record it undoes; newest
            // first, those records run back through the log.
            let mut undo_next_max = Lsn::MAX;
            for UndoStep { root, key, undo, undo_next } in undo.into_iter().rev() {
                assert!(
                    undo_next <= undo_next_max,
                    "{}: undo chain out of order, undo-next {undo_next} after {undo_next_max}",
                    self.log.id
                );
                undo_next_max = undo_next;
                self.log.state.lock().compensating = Some(undo_next);
                let tree = BTree::open(&self.db.store, root)?.logged(&self.log);
                let applied = undo.apply(&tree, &key)?;
                // The transaction holds the key's lock: nobody removed the key.
                assert!(applied, "{}: undo of a patch of {key:?}, a key that is gone", self.log.id);
            }
            let last = self.log.state.lock().last;
            if !last.is_none() {
                self.db.wal.append(&RecordHead::new(Kind::End, self.log.id, last), &[])?;
            }
            Ok(())
        })();
        let (locks, versioned) = {
            let mut st = self.log.state.lock();
            (std::mem::take(&mut st.locks), std::mem::take(&mut st.versioned))
        };
        if result.is_ok() {
            // The tree holds the old values again.
            self.db.versions_rolled_back(&self.view, &versioned);
        }
        match &result {
            // Some changes are undone, some are not. The transaction stays in the active
            // table, so that no checkpoint lets recovery start after its first record,
            // and the database refuses all work; waiters for its locks wake and fail.
            // (A failed log or store refuses all work already, and says why.)
            Err(e) if self.db.wal.check().is_ok() && self.db.store.check().is_ok() => {
                self.db.halt(format!("the rollback of {} failed: {e}", self.log.id))
            }
            _ => self.leave_active(),
        }
        self.db.locks.release(self.log.id, &locks);
        self.end_view();
        result
    }

    /// Takes the transaction out of the active table: it is there from its first
    /// change's registration on, and only it removes itself.
    fn leave_active(&self) {
        let first = self.log.state.lock().first;
        let registered = self.db.active.lock().remove(&self.log.id);
        assert_eq!(
            registered,
            (!first.is_none()).then_some(first),
            "{}: active-table entry {registered:?}, first record bound {first}",
            self.log.id
        );
    }
}

impl<S: DbStore> Drop for Txn<'_, S> {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            // Errors cannot be returned from drop; recovery completes a failed rollback.
            let _ = self.undo_all();
        }
    }
}

impl<S: DbStore> Db<S> {
    /// Starts a transaction.
    pub fn begin(&self) -> Txn<'_, S> {
        let id = TxnId::new(self.next_txn.fetch_add(1, Ordering::Relaxed));
        Txn {
            db: self,
            log: TxnLog::new(self, id),
            view: self.mvcc.begin_view(id),
            failed: OnceLock::new(),
            done: false,
        }
    }

    /// `put` in a transaction of its own.
    ///
    /// # Errors
    /// As [`Txn::put`] and [`Txn::commit`].
    pub fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let mut t = self.begin();
        t.put(tree, key, value)?;
        t.commit()
    }

    /// `delete` in a transaction of its own.
    ///
    /// # Errors
    /// As [`Txn::delete`] and [`Txn::commit`].
    pub fn delete(&self, tree: &str, key: &[u8]) -> Result<bool> {
        let mut t = self.begin();
        let r = t.delete(tree, key)?;
        t.commit()?;
        Ok(r)
    }
}

/// The payload of an update or compensation record of a change to a leaf.
fn encode_leaf_change(root: PageId, change: &LeafChange<'_>) -> Vec<u8> {
    match *change {
        LeafChange::Put { key, value, old } => encode_change(root, ChangeOp::Put, key, None, value, old),
        LeafChange::Delete { key, old } => encode_change(root, ChangeOp::Delete, key, None, &[], Some(old)),
        LeafChange::Patch { key, offset, value, old } => {
            encode_change(root, ChangeOp::Patch, key, Some(offset), value, Some(old))
        }
    }
}
