//! Opening a database: the three stores' constructors ([`Db::open`],
//! [`Db::open_main_memory`], [`Db::open_nvm_direct`]) and the steps they share
//! (`open_with`): the directory prepared (`control.rs`), the store opened, the log
//! opened from the control file's bounds, recovery run, the catalog read.
//!
//! An open runs on one thread and hands out the [`Db`] only once recovery has ended
//! with a checkpoint; a created database's marker is removed after that checkpoint,
//! and the background checkpointer (`checkpointer.rs`) starts last.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use crate::Result;
use crate::buffer::{BufferManager, Techniques};
use crate::catalog::Catalog;
use crate::device::{ExistingLog, OpenMode, SsdConfig};
use crate::sources::DirectConfig;
use crate::sources::NvmDirect;
use crate::wal::{Lsn, RingInit, Wal};

use super::checkpointer::{Checkpointer, Checkpoints};
use super::config::{DbConfig, DbError, LOG_DIR, PAGE_FILE};
use super::control::{Control, Opening, prepare_open, read_control, write_control};
use super::handle::{Db, DbCore, LogOnDrop};
use super::locks::Locks;
use super::mvcc::Mvcc;
use super::recovery;
use super::report::RecoveryReport;
use super::snapshot::{MemoryStore, SNAPSHOT_FILE};
use super::store::DbStore;

/// `nvm-direct`'s log segments at most: a commit truncates the log by whole segments,
/// so this bounds what it keeps beyond the unfinished transactions.
pub const NVM_DIRECT_LOG_SEGMENT_BYTES: u64 = 1 << 20;

impl Db<BufferManager> {
    /// Opens the database in `cfg.dir` (creating it if it does not exist) and recovers
    /// it: redo of the log since the last checkpoint, undo of unfinished transactions,
    /// then a checkpoint.
    ///
    /// # Errors
    /// Device errors; `Open` for a directory that cannot be used; corrupt pages or log
    /// records (reported with their page id or LSN); `FileLost` for a file of an
    /// existing database that is missing (the page file, the pool a database in NVM
    /// lives in) or files of a database without its control file; the log's errors for
    /// missing log segments or NVM log ring (see `docs/wal.md`, "Creation").
    pub fn open(cfg: &DbConfig) -> Result<Db> {
        let started = Instant::now();
        create_dir(&cfg.dir)?;
        let mut bc = cfg.buffer.clone();
        let mut files = Vec::new();
        if cfg.pages_in_nvm {
            let Some(nvm) = &bc.nvm else {
                return Err(DbError::Config { what: "pages in NVM, and no NVM pool configured".into() }.into());
            };
            if bc.techniques != Techniques::NONE {
                return Err(DbError::Config {
                    what: format!("techniques {} on a database whose pages live in NVM", bc.techniques),
                }
                .into());
            }
            files.push(nvm.path.clone());
            bc.ssd = None;
        } else {
            let ssd_path = cfg.dir.join(PAGE_FILE);
            let mut ssd = bc.ssd.clone().unwrap_or_else(|| SsdConfig::new(&ssd_path));
            ssd.path = ssd_path.clone();
            bc.ssd = Some(ssd);
            bc.ssd_open_mode = OpenMode::OpenOrCreate;
            let nvm_dwa = bc.ssd.as_ref().map(|s| s.nvm_double_write.path.clone());
            files.extend([crate::device::double_write::path_for(&ssd_path), ssd_path]);
            files.extend(nvm_dwa);
            files.extend(bc.nvm.as_ref().map(|n| n.path.clone()));
        }
        let opening = prepare_open(cfg, files)?;
        let existing = opening.existing();
        // A database in NVM exists once its control file does: its pool is reopened
        // (never formatted, which would lose it).
        bc.reopen_nvm_only = cfg.pages_in_nvm && existing;
        if existing && let Some(ssd) = &bc.ssd {
            // Never made afresh: an empty page file would be an empty database.
            if !ssd.path.exists() {
                return Err(DbError::FileLost {
                    path: ssd.path.clone(),
                    what: "the page file of an existing database (its control file is there) is missing".into(),
                }
                .into());
            }
            bc.ssd_open_mode = OpenMode::Open;
        }
        let db = Db::open_with(cfg, BufferManager::open(&bc)?, started)?;
        finish(opening, cfg, db)
    }
}

impl Db<MemoryStore> {
    /// Opens a `main-memory` database in `cfg.dir`: every page in DRAM
    /// (`cfg.buffer.dram`, page size `cfg.buffer.page_size`), loaded from the snapshot
    /// the last checkpoint wrote, then recovered from the log like any other
    /// ([`MemoryStore`]); `cfg.buffer`'s other tiers are not used.
    ///
    /// # Errors
    /// As [`Db::open`]; a snapshot missing or corrupt while the control file exists;
    /// `Full` when the data does not fit in DRAM.
    pub fn open_main_memory(cfg: &DbConfig) -> Result<Db<MemoryStore>> {
        let started = Instant::now();
        create_dir(&cfg.dir)?;
        let snapshot = cfg.dir.join(SNAPSHOT_FILE);
        let opening = prepare_open(cfg, vec![snapshot.with_extension("mm.tmp"), snapshot])?;
        let mut dram = cfg.buffer.dram.clone();
        dram.frame_bytes = cfg.buffer.page_size;
        let db = Db::open_with(cfg, MemoryStore::open(&dram, &cfg.dir, opening.existing())?, started)?;
        finish(opening, cfg, db)
    }
}

impl Db<NvmDirect> {
    /// Opens an `nvm-direct` database: pages in the NVM region of `direct` (reopened for
    /// an existing database, formatted for a new one), the log and the control file in
    /// `cfg.dir` (`cfg.buffer` is not used). Recovery repeats the logged line images and
    /// rolls back unfinished transactions.
    ///
    /// # Errors
    /// As [`Db::open`]; a region made with another page size; for an existing database
    /// a region file that is missing (`FileLost`), zeroed or without a valid header
    /// (`Corrupted`), or of another size.
    pub fn open_nvm_direct(cfg: &DbConfig, direct: &DirectConfig) -> Result<Db<NvmDirect>> {
        let started = Instant::now();
        create_dir(&cfg.dir)?;
        let opening = prepare_open(cfg, vec![direct.nvm.path.clone()])?;
        let mut dc = direct.clone();
        // The region is the database: an existing one's is never made or formatted.
        dc.reuse = opening.existing();
        if dc.reuse {
            if !dc.nvm.path.exists() {
                return Err(DbError::FileLost {
                    path: dc.nvm.path.clone(),
                    what: "the nvm-direct region of an existing database (its control file is there) is missing".into(),
                }
                .into());
            }
            dc.nvm.open_mode = OpenMode::Open;
        }
        // The log keeps only unfinished work; it is truncated by whole segments.
        let mut cfg = cfg.clone();
        cfg.wal.file.segment_bytes = cfg.wal.file.segment_bytes.min(NVM_DIRECT_LOG_SEGMENT_BYTES);
        let db = Db::open_with(&cfg, NvmDirect::open(&dc)?, started)?;
        finish(opening, &cfg, db)
    }
}

impl<S: DbStore> Db<S> {
    /// What every open does once the directory is prepared and the store opened:
    ///
    /// 1. The log is opened within the control file's bounds (none: a new log).
    /// 2. A clean close's claim on the NVM ring is cleared before anything is appended.
    /// 3. Recovery: redo, undo of the losers, a checkpoint.
    /// 4. The catalog's trees are read.
    fn open_with(cfg: &DbConfig, store: S, started: Instant) -> Result<Db<S>> {
        // 1. The log.
        let mut wc = cfg.wal.clone();
        wc.file.dir = cfg.dir.join(LOG_DIR);
        let control = read_control(&cfg.dir)?;
        if let Some(c) = control {
            // An existing database: no part of its log is made afresh. Commits of an
            // in-place store truncate the log behind the control file's bound.
            wc.file.existing = Some(ExistingLog { needed_from: (!store.in_place()).then_some(c.retain) });
            wc.ring_init = if !c.clean_end.is_none() { RingInit::ClosedAt(c.clean_end) } else { RingInit::Existing };
        }
        // The record at the redo point was forced before the control file was written:
        // a log that ends before it is damaged, not torn (`wal::damage`).
        wc.valid_past = control.map_or(Lsn::NONE, |c| c.redo);
        let wal = Arc::new(Wal::open(&wc)?);
        // 2. The clean close's claim.
        if let Some(c) = control.filter(|c| !c.clean_end.is_none()) {
            // From the first append on, the NVM ring may hold records the file lacks:
            // the clean close's claim goes before anything is appended.
            write_control(&cfg.dir, Control { clean_end: Lsn::NONE, ..c })?;
        }
        let core = DbCore {
            log_on_drop: LogOnDrop { wal: Some(wal.clone()), dir: cfg.dir.clone() },
            store,
            wal,
            dir: cfg.dir.clone(),
            durability: cfg.durability,
            redo_from_retained: cfg.redo_from_retained,
            next_txn: AtomicU64::new(1),
            next_smo: AtomicU64::new(1),
            active: Mutex::new(HashMap::new()),
            trees: RwLock::new(HashMap::new()),
            locks: Locks::default(),
            mvcc: Mvcc::new(cfg.isolation, cfg.version_bytes_max),
            recovery: RecoveryReport::default(),
            halted: std::sync::OnceLock::new(),
            checkpoints: Checkpoints::new(cfg.checkpoint),
        };
        let mut db = Db { checkpointer: None, core: Arc::new(core) };
        // 3. Recovery.
        db.core_mut().recovery = recovery::recover(&db, started)?;
        // 4. The catalog.
        for e in Catalog::list(&db.store)? {
            db.trees.write().insert(e.name, e.root);
        }
        Ok(db)
    }

    /// The core, while nothing shares it: during the open, before the background
    /// checkpointer starts.
    fn core_mut(&mut self) -> &mut DbCore<S> {
        assert!(self.checkpointer.is_none(), "{}: the core changed after the checkpointer started", self.dir.display());
        let shared = Arc::strong_count(&self.core) + Arc::weak_count(&self.core);
        Arc::get_mut(&mut self.core)
            .unwrap_or_else(|| panic!("the core is shared ({shared} references) during the open"))
    }
}

/// After a successful open: a creation is complete once the control file is in place
/// (the checkpoint that ended recovery wrote it), so its marker goes, and the report
/// lists what an earlier creation had left. Then the background checkpointer starts.
fn finish<S: DbStore>(opening: Opening, cfg: &DbConfig, mut db: Db<S>) -> Result<Db<S>> {
    if let Some(removed) = opening.finish(&cfg.dir)? {
        db.core_mut().recovery.unfinished_creation = removed;
    }
    db.checkpointer = Checkpointer::start(&db.core).map_err(|what| DbError::Open { path: cfg.dir.clone(), what })?;
    Ok(db)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| DbError::Open { path: dir.to_path_buf(), what: format!("cannot create it: {e}") }.into())
}
