//! The database: named B+-trees over a buffer manager, with transactions made atomic
//! and durable by the write-ahead log, and ARIES-style recovery on open.
//!
//! ```no_run
//! use tierdb::db::{Db, DbConfig};
//! let db = Db::open(&DbConfig::new("/tmp/mydb"))?;
//! db.create_tree("users")?;
//! let mut t = db.begin();
//! t.put("users", b"alice", b"1")?;
//! t.put("users", b"bob", b"2")?;
//! t.commit()?; // durable (durability `sync`)
//! assert_eq!(db.get("users", b"alice")?, Some(b"1".to_vec()));
//! db.close()?;
//! # Ok::<(), tierdb::Error>(())
//! ```
//!
//! Logging (see `docs/wal.md`): a change to a leaf is an *update* record for that page
//! (redo applies it to the page if the page's LSN is older; undo puts the old value back
//! through the tree); structure changes log page images (redo only); freed pages are
//! logged. Commit appends a commit record and waits as [`Durability`](crate::wal::Durability) says.
//!
//! Isolation ([`Isolation`], `docs/isolation.md`): snapshot isolation by default — a
//! transaction reads the database as of its start, its own changes included, never an
//! uncommitted change nor one committed after it began; read committed and read
//! uncommitted as options. A transaction's writes take exclusive locks on their keys,
//! held until it ends (so no two transactions change one key at once, and undo never
//! overwrites another's change); the second writer of a key waits, and under snapshot
//! isolation fails with `WriteConflict` if the first committed after it began. A wait
//! that would close a cycle fails at once with `Deadlock`; any other wait longer than
//! [`LOCK_WAIT_MS_MAX`] fails with `LockTimeout`. Reads take no locks: the tree holds
//! the newest value of each key, and the version store (`mvcc.rs`, DRAM only, not
//! logged) the before-images that readers of older snapshots need. Non-transactional
//! [`Db::get`] and [`Db::scan`] read the latest committed state.
//!
//! Stores: a buffer manager ([`Db::open`]) with its page file on SSD, or with its pages
//! in the NVM pool ([`DbConfig::pages_in_nvm`]: each write-back's page image logged
//! first); `nvm-direct` ([`Db::open_nvm_direct`]); all pages in DRAM with a snapshot
//! per checkpoint ([`Db::open_main_memory`], [`MemoryStore`]). See `docs/wal.md`.
//!
//! Recovery on open: the log is read from the last checkpoint's redo point; every
//! logged change is redone where its page is older; transactions without a commit are
//! rolled back (compensation records make that restartable); a checkpoint ends it.
//!
//! Checkpoints: [`Db::checkpoint`], [`Db::close`], and a background checkpointer by log
//! growth and time ([`DbConfig::checkpoint`], [`Db::checkpoints`]; `docs/wal.md`,
//! "Automatic checkpoints").
//!
//! The rooms of this module, dependencies first: `config.rs` (configuration, errors),
//! `locks.rs` (key locks, deadlock detection), `store.rs` (the store trait) with `stores.rs` (buffer
//! manager, `nvm-direct`) and `snapshot.rs` (`main-memory`), `control.rs` (control
//! file, creation marker), `report.rs` (what recovery did), `mvcc.rs` (the version
//! store, read views), `checkpointer.rs` (when a checkpoint is due, and the background
//! thread that takes one), `handle.rs` (the [`Db`]: trees, reads, checkpoint, close),
//! `reads.rs` (reads and writes through the versions), `undo.rs`, `txn.rs`
//! (transactions and their log), `range.rs` (range iterators both ways,
//! `delete_range`), `drop_tree.rs` (dropping a tree, logged as one structure change),
//! `recovery.rs`, `open.rs`. The payloads of the records it logs are encoded in
//! `wal/payload.rs`; transaction ids are [`TxnId`]s (`ids.rs`). No room uses one that
//! comes after it.

mod checkpointer;
mod config;
mod config_file;
mod control;
mod drop_tree;
mod handle;
mod locks;
mod mvcc;
mod open;
mod range;
mod reads;
mod recovery;
mod report;
mod snapshot;
mod store;
mod stores;
mod txn;
mod undo;

pub use checkpointer::{CHECKPOINTER_POLL_MS, CheckpointStats, checkpointer_threads};
pub use config::{CheckpointConfig, DbConfig, DbError, Isolation, VERSION_BYTES_MAX_DEFAULT};
pub use handle::{Db, DbInfo};
pub use locks::LOCK_WAIT_MS_MAX;
pub use mvcc::MvccStats;
pub use open::NVM_DIRECT_LOG_SEGMENT_BYTES;
pub use range::{DbRange, KeyRange, RANGE_BATCH_ENTRIES};
pub use report::RecoveryReport;
pub use snapshot::{MemoryStore, SNAPSHOT_FILE};
pub use store::DbStore;
pub use txn::Txn;

pub use crate::ids::TxnId;

/// Transaction-id bit of structure changes' records ([`TxnId::SMO_BIT`]).
pub const SMO_ID_BIT: u64 = TxnId::SMO_BIT;
