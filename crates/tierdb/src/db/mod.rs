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
//! Isolation: a transaction's writes take exclusive locks on their keys, held until it
//! ends (so no two transactions change one key at once, and undo never overwrites
//! another's change); reads take no locks and may see uncommitted changes (read
//! uncommitted). A lock wait longer than [`LOCK_WAIT_MS_MAX`] fails the operation.
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
//! The rooms of this module, dependencies first: `config.rs` (configuration, errors),
//! `locks.rs` (key locks), `store.rs` (the store trait) with `stores.rs` (buffer
//! manager, `nvm-direct`) and `snapshot.rs` (`main-memory`), `control.rs` (control
//! file, creation marker), `report.rs` (what recovery did), `handle.rs` (the [`Db`]:
//! trees, reads, checkpoint, close), `undo.rs`, `txn.rs` (transactions and their log),
//! `recovery.rs`, `open.rs`. The payloads of the records it logs are encoded in
//! `wal/payload.rs`; transaction ids are [`TxnId`]s (`ids.rs`). No room uses one that
//! comes after it.

mod config;
mod config_file;
mod control;
mod handle;
mod locks;
#[allow(dead_code)] // the skeleton, until snapshot isolation lands
mod mvcc;
mod open;
mod recovery;
mod report;
mod snapshot;
mod store;
mod stores;
mod txn;
mod undo;

pub use config::{CheckpointConfig, DbConfig, DbError, Isolation, VERSION_BYTES_MAX_DEFAULT};
pub use handle::{Db, DbInfo};
pub use locks::LOCK_WAIT_MS_MAX;
pub use open::NVM_DIRECT_LOG_SEGMENT_BYTES;
pub use report::RecoveryReport;
pub use snapshot::{MemoryStore, SNAPSHOT_FILE};
pub use store::DbStore;
pub use txn::Txn;

pub use crate::ids::TxnId;

/// Transaction-id bit of structure changes' records ([`TxnId::SMO_BIT`]).
pub const SMO_ID_BIT: u64 = TxnId::SMO_BIT;
