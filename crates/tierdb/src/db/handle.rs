//! The database handle: [`Db`] and what it does outside a transaction — trees, reads,
//! checkpoints, close. Opening is in `open.rs`, transactions in `txn.rs`.
//!
//! Invariants: a checkpoint's control file names a redo point at or before the first
//! record of every transaction active when it began, and retains the log back to the
//! oldest change a store keeps outside the page file; ids handed out are below the
//! control file's bounds. Once the log or the store has failed, or a rollback failed
//! part-way, every operation refuses work (`check_alive`).
//!
//! Concurrency: `Db` is shared by reference between threads; its state is a
//! [`DbCore`] behind an `Arc`, which the background checkpointer's thread reaches
//! through a weak reference (`checkpointer.rs`; the handle joins the thread before it
//! closes or drops). The tree map is behind a reader-writer lock, the
//! active-transaction table behind a mutex, id counters are atomics; checkpoints
//! (manual, background, close's) run one at a time, beside transactions.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use serde::Serialize;

use crate::Result;
use crate::btree::BTree;
use crate::buffer::BufferManager;
use crate::catalog::Catalog;
use crate::ids::{PageId, TxnId};
use crate::wal::payload::encode_checkpoint_begin;
use crate::wal::{Durability, Kind, Lsn, RecordHead, Wal, WalError};

use super::checkpointer::{Background, CheckpointStats, Checkpointer, Checkpoints, Trigger};
use super::config::DbError;
use super::control::{Control, write_control};
use super::locks::Locks;
use super::mvcc::Mvcc;
use super::report::RecoveryReport;
use super::store::DbStore;

/// What a [`Db`] reports about itself.
#[derive(Clone, Debug, Serialize)]
pub struct DbInfo {
    /// The names of the trees, sorted.
    pub trees: Vec<String>,
    /// What commits wait for.
    pub durability: Durability,
    /// True if the log buffer is in NVM (records durable when appended).
    pub log_buffer_in_nvm: bool,
    /// What the checkpoints did ([`Db::checkpoints`]).
    pub checkpoints: CheckpointStats,
}

/// A database: see the module doc.
pub struct Db<S: DbStore = BufferManager> {
    /// The background checkpointer (`None`: off). Declared first: a drop stops and
    /// joins its thread before the core goes.
    pub(super) checkpointer: Option<Checkpointer>,
    /// Everything else, shared with the background checkpointer's thread (which holds
    /// a weak reference): `Db` derefs to it.
    pub(super) core: Arc<DbCore<S>>,
}

/// The state of a [`Db`], which derefs to it: behind an `Arc` so that the background
/// checkpointer reaches it. Public in name only (not reachable from outside the crate).
pub struct DbCore<S: DbStore> {
    pub(super) store: S,
    pub(super) wal: Arc<Wal>,
    pub(super) dir: PathBuf,
    pub(super) durability: Durability,
    /// [`DbConfig::redo_from_retained`](super::DbConfig::redo_from_retained).
    pub(super) redo_from_retained: bool,
    pub(super) next_txn: AtomicU64,
    pub(super) next_smo: AtomicU64,
    /// Active transactions: id → first LSN (bounds log truncation).
    pub(super) active: Mutex<HashMap<TxnId, Lsn>>,
    pub(super) trees: RwLock<HashMap<String, PageId>>,
    pub(super) locks: Locks,
    /// Before-images for snapshots, and the snapshots running (`mvcc.rs`).
    pub(super) mvcc: Mvcc,
    pub(super) recovery: RecoveryReport,
    /// Set when a rollback failed part-way (`Txn::undo_all`): memory holds changes of a
    /// transaction that is neither committed nor rolled back, which no read may show
    /// and no checkpoint may make the starting point of recovery.
    pub(super) halted: OnceLock<String>,
    /// The checkpoints' triggers, lock and record.
    pub(super) checkpoints: Checkpoints,
    /// Flushes the log if the database is dropped without [`close`](Db::close).
    pub(super) log_on_drop: LogOnDrop,
}

#[doc(hidden)]
impl<S: DbStore> Deref for Db<S> {
    type Target = DbCore<S>;
    fn deref(&self) -> &DbCore<S> {
        &self.core
    }
}

impl<S: DbStore> std::fmt::Debug for Db<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.dir).field("durability", &self.durability).finish_non_exhaustive()
    }
}

impl Db<BufferManager> {
    /// The buffer manager that holds the pages (its counters, tiers and policy).
    pub fn buffer(&self) -> &BufferManager {
        &self.store
    }
}

impl<S: DbStore> Db<S> {
    /// What recovery did when the database was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The page storage.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The write-ahead log (its counters, what its recovery found).
    pub fn wal(&self) -> &Wal {
        &self.wal
    }

    /// What commits wait for, fixed at open ([`DbConfig::durability`](super::DbConfig::durability)).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The trees, the durability, where the log buffer is and the checkpoints, for
    /// reports.
    pub fn info(&self) -> DbInfo {
        DbInfo {
            trees: self.tree_names(),
            durability: self.durability,
            log_buffer_in_nvm: self.wal.buffer_in_nvm(),
            checkpoints: self.checkpoints(),
        }
    }

    /// Creates an empty tree (durably: its root and the catalog page are logged as
    /// one structure change and forced).
    ///
    /// # Errors
    /// `TreeExists`, catalog errors; the log's errors.
    pub fn create_tree(&self, name: &str) -> Result<()> {
        let mut trees = self.trees.write();
        let tree = Catalog::create_tree(&self.store, name)?;
        if self.durability != Durability::None {
            let smo = self.smo_begin();
            let mut pages = Vec::new();
            for pid in [tree.root(), self.store.catalog_page()] {
                let mut page = self.store.fix_exclusive(pid)?;
                let lsn = self.smo_image(smo, pid, &page)?;
                // The frame learns the image's LSN before the end's: its first-update
                // LSN (`nvsql`'s recovery LSN) must not be past the record that redoes
                // it, or a torn NVM frame of the catalog is rebuilt without the tree.
                crate::page::ExclusivePage::set_page_lsn(&mut page, lsn);
                crate::page::ExclusivePage::image_logged(&mut page);
                pages.push(page);
            }
            let end = self.wal.append(&RecordHead::new(Kind::SmoEnd, smo, Lsn::NONE), &[])?;
            for page in &mut pages {
                crate::page::ExclusivePage::set_page_lsn(page, end);
            }
            drop(pages);
            self.wal.flush_until(end.advance(1))?;
        }
        trees.insert(name.to_string(), tree.root());
        Ok(())
    }

    /// A new structure change's id (top bit set: not a transaction's).
    pub(super) fn smo_begin(&self) -> TxnId {
        TxnId::smo(self.next_smo.fetch_add(1, Ordering::Relaxed))
    }

    /// Logs the image of a page structure change `smo` wrote (redo only).
    pub(super) fn smo_image(&self, smo: TxnId, page: PageId, bytes: &[u8]) -> Result<Lsn, WalError> {
        debug_assert!(smo.is_smo(), "page image of {page} for {smo:#x}, not a structure change");
        self.wal.append(&RecordHead::new(Kind::PageImage, smo, Lsn::NONE).page(page.0), bytes)
    }

    /// The names of the trees.
    pub fn tree_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.read().keys().cloned().collect();
        v.sort();
        v
    }

    pub(super) fn root(&self, name: &str) -> Result<PageId> {
        self.trees.read().get(name).copied().ok_or_else(|| DbError::NoSuchTree { name: name.into() }.into())
    }

    pub(super) fn tree(&self, name: &str) -> Result<BTree<'_, S>> {
        Ok(BTree::open(&self.store, self.root(name)?)?)
    }

    /// The value of `key` in tree `tree`: the latest committed (never a change of a
    /// transaction still running; with [`Isolation::ReadUncommitted`](super::Isolation::ReadUncommitted) the tree's).
    ///
    /// # Errors
    /// `NoSuchTree`; the tree's errors.
    pub fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        self.with_tree(tree, |t| self.read_visible(self.mvcc.latest_view(), t.root(), key))
    }

    /// Calls `f` with bytes `part` of the value of `key` (clipped to the value): the
    /// latest committed, as [`get`](Self::get). In place in the leaf under its shared
    /// latch when no version of the key is involved (`f` must not use the database).
    /// On cache-line-grained pages only the lines of `part` are loaded.
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
        self.check_alive()?;
        self.with_tree(tree, |t| self.read_visible_part(self.mvcc.latest_view(), t.root(), key, part, f))
    }

    /// Calls `f(key, value)` for keys `>= start` in order until it returns false: one
    /// snapshot of the latest committed state, taken when the scan starts (read in
    /// batches; `f` may use the database).
    ///
    /// # Errors
    /// As [`get`](Self::get); `SnapshotTooOld` if the scan outlived the versions limit.
    pub fn scan(&self, tree: &str, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        let view = self.mvcc.snapshot_view();
        self.scan_visible(&view, tree, start, f)
    }

    /// A checkpoint: every dirty page is written out (the log forced first), then the
    /// control file records where recovery starts, and older log segments are deleted.
    /// Transactions may run meanwhile: recovery starts at the oldest record of one
    /// active at the checkpoint, so that it finds every transaction to roll back.
    /// Checkpoints do not overlap: this one waits for a background one running.
    ///
    /// # Errors
    /// `Halted`; device and log errors (also kept in [`checkpoints`](Self::checkpoints)).
    pub fn checkpoint(&self) -> Result<()> {
        self.check_halted()?;
        self.checkpoints.run(Trigger::Manual, || self.wal.next_lsn(), || self.checkpoint_control()).map(|_| ())
    }

    /// What the checkpoints since the open did (manual, background, the open's), and
    /// whether the background checkpointer runs ([`DbConfig::checkpoint`](super::DbConfig::checkpoint)).
    /// A consistent snapshot, taken under a short lock (never waits for a checkpoint).
    pub fn checkpoints(&self) -> CheckpointStats {
        CheckpointStats {
            running: self.checkpointer.as_ref().is_some_and(Checkpointer::running),
            ..self.checkpoints.stats()
        }
    }

    /// An in-place store keeps only the log of unfinished work: after a commit, the log
    /// is truncated behind the oldest record still needed (whole segments; the NVM log
    /// buffer's records go with them).
    pub(super) fn truncate_after_commit(&self) -> Result<()> {
        if self.store.in_place() && self.durability != Durability::None && self.store.check().is_ok() {
            self.wal.truncate_before(self.log_needed_from(self.wal.next_lsn()))?;
        }
        Ok(())
    }

    /// Checkpoints and closes: the background checkpointer is stopped (its thread
    /// joined) first. Every step runs even if one before it failed, so that a
    /// checkpoint that cannot write pages (a full disk) still leaves every record in
    /// the log file: commits acknowledged with [`Durability::Group`] are durable after
    /// `close` unless it says they are lost.
    ///
    /// # Errors
    /// The log's error if it failed: `Poisoned`, which says whether the records it still
    /// held in memory (those of the flush that failed) could be written now
    /// ([`Wal::finish`]); if not they are lost, and the next open rolls back what they
    /// began. Else the first error of the checkpoint and the store's close.
    pub fn close(self) -> Result<()> {
        let Db { checkpointer, core } = self;
        // No background checkpoint runs beside (or after) the close's.
        drop(checkpointer);
        // A halted database keeps its last checkpoint's control file: recovery must
        // start before the transaction whose rollback failed, and finish it.
        let checkpoint = core
            .check_halted()
            .and_then(|()| core.checkpoints.run(Trigger::Close, || core.wal.next_lsn(), || core.checkpoint_control()));
        // The thread that held a weak reference is joined, and a `Db` is not cloned.
        let core = match Arc::try_unwrap(core) {
            Ok(core) => core,
            Err(core) => panic!("closing {}: the database core is shared", core.dir.display()),
        };
        let DbCore { store, wal, dir, mut log_on_drop, .. } = core;
        log_on_drop.wal = None;
        let store_closed = store.close_store();
        // Nothing is appended after the store's close (its last flush notes).
        let log_end = wal.next_lsn();
        let log_closed = match Arc::try_unwrap(wal) {
            Ok(w) => w.close(),
            Err(w) => w.finish(),
        };
        // The log's error first: it says what became of the acknowledged commits.
        let control = log_closed.map_err(crate::Error::from).and(checkpoint).and_then(|c| store_closed.map(|()| c))?;
        // Every record is in the log file, which ends at `log_end`: a lost NVM ring
        // loses nothing until the next open appends (`RingInit::ClosedAt`).
        write_control(&dir, Control { clean_end: log_end, ..control })
    }

    /// Stops the database for good (until it is reopened): a rollback failed part-way,
    /// so memory holds changes of a transaction that is neither committed nor rolled
    /// back. Its records stay in the log (it stays in the active table), and the next
    /// open's recovery finishes its rollback. The first cause is kept.
    pub(super) fn halt(&self, cause: String) {
        let _ = self.halted.set(cause);
    }
}

impl<S: DbStore> DbCore<S> {
    /// A checkpoint's work ([`Db::checkpoint`]), returning what it wrote to the control
    /// file. Callers serialise it through [`Checkpoints::run`] (the control file and the
    /// log's truncation are not safe against a second checkpoint at once).
    fn checkpoint_control(&self) -> Result<Control> {
        // Changes logged before `redo` are in pages written by the flush below.
        let redo = self.wal.next_lsn();
        self.store.flush_all()?;
        let lsn = self
            .wal
            .append(&RecordHead::new(Kind::CheckpointBegin, TxnId::NONE, Lsn::NONE), &encode_checkpoint_begin(redo))?;
        self.wal.flush_until(lsn.advance(1))?;
        let start = self.log_needed_from(redo);
        // A durable NVM cache's dirty pages keep older records (not scanned unless a
        // crash tears one of them).
        let retain = start.min(self.store.oldest_retained().unwrap_or(start));
        // Every id handed out so far is below these: a transaction or structure change
        // with a record before `start` began before this point.
        let (next_txn, next_smo) = (self.next_txn.load(Ordering::Relaxed), self.next_smo.load(Ordering::Relaxed));
        assert!(retain <= start && start <= redo, "checkpoint: retain {retain}, redo point {start}, flush from {redo}");
        let control = Control { retain, redo: start, next_txn, next_smo, clean_end: Lsn::NONE };
        write_control(&self.dir, control)?;
        self.wal.truncate_before(retain)?;
        Ok(control)
    }

    /// The oldest record recovery may need, given that changes before `bound` are in
    /// the store: the first record of every active transaction (for undo), and for an
    /// in-place store the records of changes not yet written back.
    pub(super) fn log_needed_from(&self, bound: Lsn) -> Lsn {
        let oldest_active = self.active.lock().values().copied().min().unwrap_or(bound);
        bound.min(oldest_active).min(self.store.oldest_pending().unwrap_or(bound))
    }

    /// Refuses work once the log or the store has failed: what reached them is unknown
    /// until recovery, and memory may hold changes whose records never reached the log
    /// (the change whose append failed, commits acknowledged with `group` durability
    /// whose flush failed), which a read must not show.
    pub(super) fn check_alive(&self) -> Result<()> {
        self.check_halted()?;
        self.wal.check()?;
        self.store.check()
    }

    /// `Halted` once a rollback failed part-way ([`Db::halt`]).
    pub(super) fn check_halted(&self) -> Result<()> {
        match self.halted.get() {
            None => Ok(()),
            Some(cause) => Err(DbError::Halted { cause: cause.clone() }.into()),
        }
    }
}

/// The background checkpointer's view of a database: a halted one, or one whose log or
/// store failed, takes no more checkpoints.
impl<S: DbStore> Background for DbCore<S> {
    fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    fn alive(&self) -> Result<()> {
        self.check_alive()
    }

    fn checkpoint_if_due(&self) -> Result<bool> {
        self.checkpoints.run_if_due(
            || self.wal.next_lsn(),
            || {
                // Halted while it waited for the checkpoint lock: see `Db::close`.
                self.check_halted()?;
                self.checkpoint_control().map(|_| ())
            },
        )
    }
}

/// Makes the log's buffered records durable when a [`Db`] is dropped without
/// [`Db::close`] (commits acknowledged with `group` durability among them), and says
/// on standard error if it cannot: a drop has no other way to report that the log
/// failed. `close` disarms it. A crash (or `std::mem::forget` in tests) runs no drop.
pub(super) struct LogOnDrop {
    pub(super) wal: Option<Arc<Wal>>,
    pub(super) dir: PathBuf,
}

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        if let Some(wal) = self.wal.take()
            && let Err(e) = wal.finish()
        {
            eprintln!(
                "tierdb: database {} dropped without close, and its log could not be made durable: {e}",
                self.dir.display()
            );
        }
    }
}
