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
//! logged. Commit appends a commit record and waits as [`Durability`] says.
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

mod recovery;
mod snapshot;

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use serde::Serialize;

pub use recovery::RecoveryReport;
pub use snapshot::{MemoryStore, SNAPSHOT_FILE};

use crate::arch::{ArchConfig, Architecture};
use crate::btree::{BTree, LeafChange, TreeLog};
use crate::buffer::frame::direct::WriteBackLog;
use crate::buffer::{BufferConfig, BufferManager, DirectConfig, NvmDirect, PageSource, Techniques};
use crate::catalog::Catalog;
use crate::device::{ExistingLog, OpenMode, SsdConfig};
use crate::ids::PageId;
use crate::wal::{Durability, Kind, Lsn, RecordHead, RingInit, Wal, WalConfig};
use crate::{ByteSize, Result};

/// Transaction-id bit of structure changes' records.
pub const SMO_ID_BIT: u64 = 1 << 63;

/// Longest wait for another transaction's key lock.
pub const LOCK_WAIT_MS_MAX: u64 = 10_000;

/// `nvm-direct`'s log segments at most: a commit truncates the log by whole segments,
/// so this bounds what it keeps beyond the unfinished transactions.
pub const NVM_DIRECT_LOG_SEGMENT_BYTES: u64 = 1 << 20;

/// The control file's name in the database directory: where recovery starts. Its
/// presence also says that the database was created (see `prepare_open`).
const CONTROL_FILE: &str = "CHECKPOINT";

/// The creation marker's name in the database directory: made (and synced) before any
/// other file of a new database, removed once its control file is in place. A
/// directory with files of a database but neither this nor the control file lost its
/// control file, which is an error, never a new database (see `prepare_open`).
const CREATION_MARKER: &str = "CREATING";

/// The page file's name in the database directory (its double-write file is
/// `data.db.dwa`).
const PAGE_FILE: &str = "data.db";

/// The log's directory in the database directory.
const LOG_DIR: &str = "wal";

/// How to open a database.
#[derive(Clone, Debug)]
pub struct DbConfig {
    /// The database directory: holds the page file `data.db`, the log `wal/` and the
    /// control file.
    pub dir: PathBuf,
    /// DRAM, NVM, policy, techniques. Its SSD file is set from `dir`.
    pub buffer: BufferConfig,
    /// The log; its directory is set from `dir`.
    pub wal: WalConfig,
    /// What a commit waits for ([`Durability::Sync`] by default); with
    /// [`Durability::None`] nothing is logged.
    pub durability: Durability,
    /// The database lives in the NVM pool of `buffer.nvm` (`basic-nvm-bm`, `mmap-*`):
    /// no page file; the catalog is page 1 of the pool, checkpoints write DRAM pages to
    /// their NVM frames, and a reopen rebuilds the page table from the frame headers.
    /// Each write of a page into its NVM frame is preceded by the page's image in the
    /// log, so that redo rebuilds a page a crash tore mid-write.
    pub pages_in_nvm: bool,
    /// For comparisons only: redo scans the whole retained log (from the oldest record
    /// a durable NVM cache keeps, `nvsql`) instead of from the checkpoint's redo point,
    /// as it did before the redo point was made safe for it. Off by default.
    pub redo_from_retained: bool,
}

impl DbConfig {
    /// A database in `dir` with 64 MiB of DRAM, no NVM, a DRAM log buffer, durability
    /// `sync`.
    pub fn new(dir: impl Into<PathBuf>) -> DbConfig {
        let dir = dir.into();
        DbConfig {
            buffer: BufferConfig::new(ByteSize(64 << 20)),
            wal: WalConfig::new(dir.join("wal")),
            durability: Durability::Sync,
            pages_in_nvm: false,
            redo_from_retained: false,
            dir,
        }
    }

    /// A database in `dir` on architecture `arch` (its tiers, profiles, emulation mode,
    /// policy and techniques; [`ArchConfig::buffer_config`]):
    ///
    /// - with an SSD (`ssd-bm`, `three-tier`, `nvcache`, `nvsql`): the page file is
    ///   `dir/data.db`, not `arch.ssd_path`; the log is on a device of the SSD profile;
    ///   open with [`Db::open`];
    /// - with NVM and no SSD (`basic-nvm-bm`, `mmap-*`): the pages live in the NVM pool
    ///   at `arch.nvm_path` ([`DbConfig::pages_in_nvm`]); the log files are on a device
    ///   of the NVM profile (there is no SSD to put them on); open with [`Db::open`];
    /// - `main-memory`: every page in DRAM, a snapshot file in `dir` written by each
    ///   checkpoint, the log on a device of the SSD profile; open with
    ///   [`Db::open_main_memory`].
    ///
    /// The log buffer is in DRAM and durability `sync` until changed.
    ///
    /// # Errors
    /// `Config` for `nvm-direct` (it opens with [`Db::open_nvm_direct`]) and for
    /// techniques on an architecture whose pages live in NVM (a line-grained
    /// write-back would not be covered by the page images the log keeps).
    pub fn from_arch(arch: &ArchConfig, dir: impl Into<PathBuf>) -> Result<DbConfig> {
        let mut cfg = DbConfig::new(dir);
        cfg.wal.file.mode = arch.mode;
        cfg.wal.file.profile = arch.ssd_profile.clone();
        match arch.arch {
            Architecture::NvmDirect => {
                return Err(DbError::Config {
                    what: "an nvm-direct database opens with Db::open_nvm_direct (no buffer manager)".into(),
                }
                .into());
            }
            Architecture::MainMemory => {
                cfg.buffer.page_size = arch.page_size;
                cfg.buffer.dram = arch.dram_config();
                return Ok(cfg);
            }
            _ => {}
        }
        cfg.buffer = arch.buffer_config()?;
        if arch.arch.uses_ssd() {
            cfg.buffer.ssd_open_mode = OpenMode::OpenOrCreate;
        } else {
            if cfg.buffer.techniques != Techniques::NONE {
                return Err(DbError::Config {
                    what: format!(
                        "techniques {} on {}: a database whose pages live in NVM logs whole-page images before \
                         write-backs, and line-grained write-backs are not covered",
                        cfg.buffer.techniques, arch.arch
                    ),
                }
                .into());
            }
            cfg.pages_in_nvm = true;
            cfg.buffer.reopen_nvm_only = false; // `Db::open` decides
            cfg.wal.file.profile = arch.nvm_profile.clone();
        }
        Ok(cfg)
    }
}

/// Errors of the database layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// A read or write named a tree the database does not know.
    #[error("no tree named {name:?}")]
    NoSuchTree {
        /// The name given.
        name: String,
    },
    /// A write (or [`Txn::get_for_update`]) waited longer than [`LOCK_WAIT_MS_MAX`]
    /// for another transaction's lock on the key. The transaction should roll back.
    #[error("key locked by transaction {owner} for more than {ms} ms")]
    LockTimeout {
        /// The transaction that holds the lock.
        owner: u64,
        /// How long the wait lasted, in milliseconds.
        ms: u64,
    },
    /// A file of the database directory could not be made, read, written, renamed or
    /// removed, or the control file or snapshot is corrupt.
    #[error("database {path}: {what}")]
    Open {
        /// The file or directory concerned.
        path: PathBuf,
        /// What was being done and the error, or what is wrong with the file.
        what: String,
    },
    /// A log record that decoded (its checksum holds) carries a payload the database
    /// cannot use: it does not decode, or it does not fit the page it names during
    /// redo, or a transaction's undo chain is broken.
    #[error("log record at LSN {lsn}: {what}")]
    BadRecord {
        /// The record's LSN.
        lsn: Lsn,
        /// What is wrong with it.
        what: String,
    },
    /// A configuration the database cannot open with (e.g. pages in NVM without an
    /// NVM pool, `nvm-direct` through [`DbConfig::from_arch`]), or a second log
    /// attached to a store.
    #[error("database configuration: {what}")]
    Config {
        /// What is wrong, with the values involved.
        what: String,
    },
    /// A file of an existing database is missing or blank, or files of a database were
    /// found without its control file: nothing is created or formatted in its place
    /// (`docs/wal.md`, "Creation").
    #[error("{path}: {what}")]
    FileLost {
        /// The missing or blank file (the control file when the others are there
        /// without it).
        path: PathBuf,
        /// What the file is and what was found.
        what: String,
    },
    /// A page carries an LSN the log does not reach: the log lost records that were
    /// durable (damaged or missing), and LSNs handed out again below the page's would
    /// make redo skip later changes of it.
    #[error(
        "{}: page {pid} carries LSN {page_lsn}, but the log ends at {log_end}: the log lost durable records \
         (WalConfig::salvage_damaged_log moves the log past the page's LSN)",
        log.display()
    )]
    PageAheadOfLog {
        /// The log's last segment file, which ends too early.
        log: PathBuf,
        /// The page whose LSN is past the log.
        pid: PageId,
        /// The page's LSN.
        page_lsn: Lsn,
        /// The LSN after the log's last record.
        log_end: Lsn,
    },
}

/// Key locks: (tree root, key) → owning transaction.
#[derive(Default)]
struct Locks {
    held: Mutex<HashMap<(u64, Vec<u8>), u64>>,
    released: Condvar,
}

impl Locks {
    fn lock(&self, txn: u64, root: PageId, key: &[u8]) -> Result<bool> {
        let mut held = self.held.lock();
        let deadline = Instant::now() + Duration::from_millis(LOCK_WAIT_MS_MAX);
        loop {
            match held.get(&(root.0, key.to_vec())) {
                None => {
                    held.insert((root.0, key.to_vec()), txn);
                    return Ok(true);
                }
                Some(&owner) if owner == txn => return Ok(false),
                Some(&owner) => {
                    if self.released.wait_until(&mut held, deadline).timed_out() {
                        return Err(DbError::LockTimeout { owner, ms: LOCK_WAIT_MS_MAX }.into());
                    }
                }
            }
        }
    }

    fn release(&self, keys: &[(u64, Vec<u8>)]) {
        if keys.is_empty() {
            return;
        }
        let mut held = self.held.lock();
        for k in keys {
            held.remove(k);
        }
        self.released.notify_all();
    }
}

/// What the database needs of its page storage besides [`PageSource`]. Implemented by
/// the buffer manager (pages written out whole, after the log is forced to their LSN)
/// and by `nvm-direct` (pages changed in place, each write-back logged as a line image
/// first).
pub trait DbStore: PageSource + Sized {
    /// Connects the log: from now on no change reaches the store before its record is
    /// durable. `durability` is the database's (with `None` nothing is logged, and
    /// the store logs nothing of its own either).
    ///
    /// # Errors
    /// A log is attached already.
    fn attach_log(&self, wal: &Arc<Wal>, durability: Durability) -> Result<()>;

    /// Writes every change out (a checkpoint's flush).
    ///
    /// # Errors
    /// Device errors.
    fn flush_all(&self) -> Result<()>;

    /// Flushes and closes.
    ///
    /// # Errors
    /// Device errors.
    fn close_store(self) -> Result<()>;

    /// Recovery: a page the log names exists (allocated after the last checkpoint).
    /// False when the page holds the free-page list the last checkpoint wrote: it was
    /// free from before that checkpoint until the crash, and the record naming it is to
    /// be skipped (`buffer/manager/free_list.rs`).
    ///
    /// # Errors
    /// A page beyond the store; device errors.
    fn recover_allocated(&self, pid: PageId) -> Result<bool>;

    /// Recovery: the page is free at this point of the redo (on the free list, or never
    /// allocated). A leaf change to it is an older incarnation's, made moot by the free
    /// that followed: the page's bytes on disk may be that incarnation's at any older
    /// state, or another page format, so the change is skipped, not applied.
    fn recover_is_free(&self, _pid: PageId) -> bool {
        false
    }

    /// Recovery: whether page `pid`'s current copy is known, without reading the page,
    /// to hold the change logged at `lsn` (an NVM frame found again at restart whose
    /// page LSN is at or past it: NV-SQL §5.3 skips the redo of such pages).
    ///
    /// # Errors
    /// Device errors reading a frame header.
    fn recover_holds(&self, _pid: PageId, _lsn: Lsn) -> Result<bool> {
        Ok(false)
    }

    /// Recovery: a page a complete structure change freed.
    ///
    /// # Errors
    /// Device errors.
    fn recover_freed(&self, pid: PageId) -> Result<()>;

    /// Recovery, before redo: copies written from now on are ordered against `wal`'s
    /// LSNs, and every copy of a page found at open that is older than the page's SSD
    /// copy by a flush record (`flushed`: page and its latest last-flush LSN in the
    /// scanned log) is dropped, so that the SSD copy, which redo relies on to skip the
    /// changes below that LSN unread, is the one used. Returns how many were dropped.
    ///
    /// # Errors
    /// Device errors reading or clearing a copy.
    fn recover_trust_newest(&self, _wal: &Arc<Wal>, _flushed: &HashMap<u64, Lsn>) -> Result<usize> {
        Ok(0)
    }

    /// Pages found again in NVM at open.
    fn pages_reused(&self) -> usize;

    /// The highest page LSN among the pages found again at open (NVM frame headers),
    /// and its page: the log must reach past it.
    fn page_lsn_max_found(&self) -> Option<(PageId, Lsn)> {
        None
    }

    /// The NVM pool of an existing database could not be reused and was formatted, and
    /// why (a cache: the log rebuilds what it held; see `docs/wal.md`, "Creation").
    fn nvm_pool_formatted(&self) -> Option<String> {
        None
    }

    /// No double-write area could be applied at open where one was expected, and why:
    /// an SSD page whose in-place write was lost is older than the flush records say,
    /// so redo must not skip changes by them, and scans from the oldest record kept.
    fn double_write_lost(&self) -> Option<String> {
        None
    }

    /// Pages loaded from a snapshot at open (`main-memory`).
    fn snapshot_pages(&self) -> usize {
        0
    }

    /// Torn SSD pages the store restored from its double-write area at open.
    fn pages_restored(&self) -> usize {
        0
    }

    /// NVM frames caught in the middle of an in-place write (IN_UPDATE) or unreadable
    /// at open: not used, so their pages are rebuilt from SSD and the log.
    fn nvm_frames_cleared(&self) -> usize {
        0
    }

    /// The oldest change the store keeps outside the page file that a crash may make
    /// recovery rebuild (`nvsql`: dirty NVM pages, left there by checkpoints): the log
    /// is kept back to it, but redo scans from there only when the store says at open
    /// that it must ([`log_needed_at_open`](Self::log_needed_at_open)).
    fn oldest_retained(&self) -> Option<Lsn> {
        None
    }

    /// At open: the oldest change of a page the store could not keep (an NVM frame a
    /// crash caught mid-write), from which redo must scan to rebuild it (`Some(0)`:
    /// unknown, from the oldest retained record); `None`: none.
    fn log_needed_at_open(&self) -> Option<Lsn> {
        None
    }

    /// Pages are changed in place and each write-back is logged as a line image before it
    /// happens: recovery repeats those images instead of the updates, and a commit
    /// truncates the log behind the oldest record still needed.
    fn in_place(&self) -> bool {
        false
    }

    /// For an in-place store: the lowest LSN a change not yet in the store may need.
    fn oldest_pending(&self) -> Option<Lsn> {
        None
    }

    /// An error if the store failed to keep a change it accepted (`nvm-direct` after a
    /// failed write-back): nothing may commit on top of it until it is reopened.
    ///
    /// # Errors
    /// The failure, as the store reports it.
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// The log as a buffer manager sees it: forced before a page leaves DRAM, and taking
/// the image of a page about to be written over its only durable copy (a database whose
/// pages live in NVM) as a line image of every line.
struct PageLog {
    wal: Arc<Wal>,
    /// Whether to log the pages written to SSD (not when nothing else is logged).
    flush_notes: bool,
}

impl crate::wal::LogForce for PageLog {
    fn force(&self, lsn: Lsn) -> Result<()> {
        Ok(self.wal.flush_until(lsn + 1)?)
    }

    fn append_image(&self, pid: PageId, page: &[u8]) -> Result<Option<Lsn>> {
        let lines = page.len() / crate::limits::CACHE_LINE_BYTES;
        let payload = encode_lines(lines, &[(0, page)]);
        Ok(Some(self.wal.append(&RecordHead::new(Kind::LineImage, 0, 0).page(pid.0), &payload)?))
    }

    fn end_lsn(&self) -> Lsn {
        self.wal.next_lsn()
    }

    fn note_flushed(&self, pages: &[(PageId, Lsn)]) -> Result<()> {
        if self.flush_notes && !pages.is_empty() {
            self.wal.append(&RecordHead::new(Kind::PagesFlushed, 0, 0), &encode_flushed(pages))?;
        }
        Ok(())
    }
}

impl DbStore for BufferManager {
    fn attach_log(&self, wal: &Arc<Wal>, durability: Durability) -> Result<()> {
        self.set_log(Arc::new(PageLog { wal: wal.clone(), flush_notes: durability != Durability::None }))
    }
    fn flush_all(&self) -> Result<()> {
        self.checkpoint()
    }
    fn close_store(self) -> Result<()> {
        self.close()
    }
    fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        BufferManager::recover_allocated(self, pid)
    }
    fn recover_freed(&self, pid: PageId) -> Result<()> {
        BufferManager::recover_freed(self, pid)
    }
    fn recover_is_free(&self, pid: PageId) -> bool {
        BufferManager::recover_is_free(self, pid)
    }
    fn recover_holds(&self, pid: PageId, lsn: Lsn) -> Result<bool> {
        self.recover_nvm_holds(pid, lsn)
    }
    fn recover_trust_newest(&self, wal: &Arc<Wal>, flushed: &HashMap<u64, Lsn>) -> Result<usize> {
        self.set_lsn_clock(wal.clone());
        self.recover_drop_stale_nvm(flushed.iter().map(|(p, l)| (PageId(*p), *l)))
    }
    fn pages_reused(&self) -> usize {
        self.restart_info().map_or(0, |r| r.pages_reused)
    }
    fn page_lsn_max_found(&self) -> Option<(PageId, Lsn)> {
        self.restart_info().and_then(|r| r.page_lsn_max)
    }
    fn pages_restored(&self) -> usize {
        self.torn_pages().map_or(0, |t| t.pages_restored())
    }
    fn nvm_frames_cleared(&self) -> usize {
        self.restart_info().map_or(0, |r| r.frames_cleared.len())
    }
    fn oldest_retained(&self) -> Option<Lsn> {
        self.oldest_unflushed_lsn()
    }
    fn log_needed_at_open(&self) -> Option<Lsn> {
        if self.double_write_lost().is_some() {
            return Some(0);
        }
        self.restart_info().and_then(|r| r.log_needed_from)
    }
    fn nvm_pool_formatted(&self) -> Option<String> {
        self.restart_info().and_then(|r| r.formatted_because)
    }
    fn double_write_lost(&self) -> Option<String> {
        BufferManager::double_write_lost(self).map(str::to_string)
    }
}

/// The log as `nvm-direct`'s write-backs see it: a line image appended and made durable
/// before the lines are written in place.
struct LineLog(Arc<Wal>);

impl WriteBackLog for LineLog {
    fn log_lines(&self, pid: PageId, runs: &[(usize, &[u8])]) -> Result<u64> {
        let lines = runs.iter().map(|r| r.0 + r.1.len() / crate::limits::CACHE_LINE_BYTES).max().unwrap_or(0);
        let payload = encode_lines(lines, runs);
        let lsn = self.0.append(&RecordHead::new(Kind::LineImage, 0, 0).page(pid.0), &payload)?;
        self.0.commit(lsn + 1, Durability::Sync)?;
        Ok(lsn)
    }

    fn next_lsn(&self) -> u64 {
        self.0.next_lsn()
    }
}

impl DbStore for NvmDirect {
    fn attach_log(&self, wal: &Arc<Wal>, _durability: Durability) -> Result<()> {
        self.set_log(Some(Arc::new(LineLog(wal.clone()))));
        Ok(())
    }
    fn flush_all(&self) -> Result<()> {
        Ok(())
    }
    fn close_store(self) -> Result<()> {
        Ok(())
    }
    fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        NvmDirect::recover_allocated(self, pid).map(|()| true)
    }
    fn recover_freed(&self, pid: PageId) -> Result<()> {
        NvmDirect::recover_freed(self, pid)
    }
    fn pages_reused(&self) -> usize {
        self.restart_info().map_or(0, |r| r.pages_in_use as usize)
    }
    fn in_place(&self) -> bool {
        true
    }
    fn oldest_pending(&self) -> Option<Lsn> {
        self.pages().oldest_pending()
    }
    fn check(&self) -> Result<()> {
        self.pages().check_poison()
    }
}

/// A line image's payload: the page's line count (u16), a bitmap of the lines present,
/// then those lines in order.
pub(crate) fn encode_lines(page_lines: usize, runs: &[(usize, &[u8])]) -> Vec<u8> {
    const LINE: usize = crate::limits::CACHE_LINE_BYTES;
    let map_bytes = page_lines.div_ceil(8);
    let mut p = vec![0u8; 2 + map_bytes];
    p[0..2].copy_from_slice(&(page_lines as u16).to_le_bytes());
    for &(first, bytes) in runs {
        for l in first..first + bytes.len() / LINE {
            p[2 + l / 8] |= 1 << (l % 8);
        }
        p.extend_from_slice(bytes);
    }
    p
}

/// Decodes a line image: `(line, bytes)` for each line present.
pub(crate) fn decode_lines(lsn: Lsn, p: &[u8]) -> Result<Vec<(usize, &[u8])>> {
    const LINE: usize = crate::limits::CACHE_LINE_BYTES;
    let bad = |what: &str| -> crate::Error { DbError::BadRecord { lsn, what: format!("a line image {what}") }.into() };
    let n = u16::from_le_bytes(p.get(0..2).ok_or_else(|| bad("without a header"))?.try_into().expect("2")) as usize;
    let map = p.get(2..2 + n.div_ceil(8)).ok_or_else(|| bad("with a short bitmap"))?;
    let mut at = 2 + map.len();
    let mut out = Vec::new();
    for l in (0..n).filter(|l| map[l / 8] & (1 << (l % 8)) != 0) {
        out.push((l, p.get(at..at + LINE).ok_or_else(|| bad("shorter than its bitmap says"))?));
        at += LINE;
    }
    if at != p.len() {
        return Err(bad("longer than its bitmap says"));
    }
    Ok(out)
}

/// A flush record's payload: page id and last-flush LSN of each page, u64 each.
pub(crate) fn encode_flushed(pages: &[(PageId, Lsn)]) -> Vec<u8> {
    let mut p = Vec::with_capacity(pages.len() * 16);
    for (pid, lsn) in pages {
        p.extend_from_slice(&pid.0.to_le_bytes());
        p.extend_from_slice(&lsn.to_le_bytes());
    }
    p
}

/// Decodes a flush record: `(page, last-flush LSN)` pairs.
pub(crate) fn decode_flushed(lsn: Lsn, p: &[u8]) -> Result<impl Iterator<Item = (PageId, Lsn)> + '_> {
    if !p.len().is_multiple_of(16) {
        let what = format!("a flush record of {} bytes, not pairs of 16", p.len());
        return Err(DbError::BadRecord { lsn, what }.into());
    }
    Ok(p.chunks_exact(16).map(|c| {
        let pid = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
        (PageId(pid), u64::from_le_bytes(c[8..].try_into().expect("8 bytes")))
    }))
}

/// A database: see the module doc.
pub struct Db<S: DbStore = BufferManager> {
    store: S,
    wal: Arc<Wal>,
    dir: PathBuf,
    durability: Durability,
    /// [`DbConfig::redo_from_retained`].
    redo_from_retained: bool,
    next_txn: AtomicU64,
    next_smo: AtomicU64,
    /// Active transactions: id → first LSN (bounds log truncation).
    active: Mutex<HashMap<u64, Lsn>>,
    trees: RwLock<HashMap<String, PageId>>,
    locks: Locks,
    recovery: RecoveryReport,
    /// Flushes the log if the database is dropped without [`close`](Db::close).
    log_on_drop: LogOnDrop,
}

impl<S: DbStore> std::fmt::Debug for Db<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.dir).field("durability", &self.durability).finish_non_exhaustive()
    }
}

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
        opening.finish(cfg, db)
    }

    /// The buffer manager that holds the pages (its counters, tiers and policy).
    pub fn buffer(&self) -> &BufferManager {
        &self.store
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
        opening.finish(cfg, db)
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
        opening.finish(&cfg, db)
    }
}

/// What the database directory held at open (`prepare_open`).
#[must_use]
enum Opening {
    /// A database exists: its control file does.
    Existing,
    /// A database is being created: the creation marker is in place; `removed` lists
    /// what an earlier creation, cut short, had left.
    Creating { removed: Vec<String> },
}

impl Opening {
    fn existing(&self) -> bool {
        matches!(self, Opening::Existing)
    }

    /// After a successful open: a creation is complete once the control file is in
    /// place (the checkpoint that ended recovery wrote it), so its marker goes.
    fn finish<S: DbStore>(self, cfg: &DbConfig, mut db: Db<S>) -> Result<Db<S>> {
        if let Opening::Creating { removed } = self {
            assert!(cfg.dir.join(CONTROL_FILE).exists(), "a created database has its control file");
            remove_durably(&cfg.dir, &cfg.dir.join(CREATION_MARKER))?;
            db.recovery.unfinished_creation = removed;
        }
        Ok(db)
    }
}

/// Tells an existing database from one being created, and an unfinished creation from
/// a lost control file (`docs/wal.md`, "Creation"):
///
/// 1. The control file is there: the database exists. Nothing is removed but a
///    creation marker (the creation was complete, and the marker's removal was lost),
///    and every file must be whole: none is made afresh.
/// 2. No control file, but the creation marker: a creation was cut short before any
///    open returned, so nothing was acknowledged. Whatever it left (a page file without
///    a superblock, a double-write file, log segments, an NVM log ring holding records
///    of that log, an NVM pool or region of the wrong size, the control file's
///    temporary) is removed, and the database is created afresh; the marker stays until
///    that creation is complete.
/// 3. Neither: with files of a database in the directory (page file, double-write
///    file, snapshot, log segments, the control file's temporary), its control file was
///    lost, and that is an error: the files may hold every committed change. Else a new
///    database: the marker is made and synced first, then stale files of the store
///    outside the directory (`files`: an NVM pool, region or double-write area, the NVM
///    log ring) are removed.
///
/// `files` are the store's files; the log's are added here.
fn prepare_open(cfg: &DbConfig, mut files: Vec<PathBuf>) -> Result<Opening> {
    let dir = &cfg.dir;
    let marker = dir.join(CREATION_MARKER);
    let io = |what: String, e: std::io::Error| DbError::Open { path: dir.to_path_buf(), what: format!("{what}: {e}") };
    // 1. An existing database.
    if dir.join(CONTROL_FILE).exists() {
        if marker.exists() {
            remove_durably(dir, &marker)?;
        }
        return Ok(Opening::Existing);
    }
    files.push(dir.join(format!("{CONTROL_FILE}.tmp")));
    if let crate::wal::LogBuffer::Nvm(n) = &cfg.wal.buffer {
        files.push(n.path.clone());
    }
    let wal = dir.join(LOG_DIR);
    // 3. No marker: a new database, or one whose control file was lost.
    if !marker.exists() {
        let mut found: Vec<String> =
            files.iter().filter(|f| f.starts_with(dir) && f.exists()).map(|f| f.display().to_string()).collect();
        let segments = match std::fs::read_dir(&wal) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".wal")))
                .count(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io(format!("listing {}", wal.display()), e).into()),
        };
        if segments > 0 {
            found.push(format!("{} ({segments} log segments)", wal.display()));
        }
        if !found.is_empty() {
            return Err(DbError::FileLost {
                path: dir.join(CONTROL_FILE),
                what: format!(
                    "missing, but the directory holds files of a database ({}) and no creation marker \
                     {CREATION_MARKER}: the control file was lost, and opening would discard the database; \
                     restore it (or remove the directory to start afresh)",
                    found.join(", ")
                ),
            }
            .into());
        }
        let made = std::fs::write(&marker, b"tierdb: a database is being created here\n")
            .and_then(|()| std::fs::File::open(&marker)?.sync_all())
            .and_then(|()| std::fs::File::open(dir)?.sync_all());
        made.map_err(|e| io(format!("making the creation marker {}", marker.display()), e))?;
    }
    // 2. (and 3.) A creation: what an earlier one left goes.
    let mut removed = Vec::new();
    for f in files {
        match std::fs::remove_file(&f) {
            Ok(()) => removed.push(f.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(format!("removing {} of a creation that did not finish", f.display()), e).into()),
        }
    }
    match std::fs::remove_dir_all(&wal) {
        Ok(()) => removed.push(format!("{}/", wal.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(format!("removing {} of a creation that did not finish", wal.display()), e).into()),
    }
    if !removed.is_empty() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("sync the directory".into(), e))?;
    }
    Ok(Opening::Creating { removed })
}

/// Removes `file` from `dir` and syncs the directory.
fn remove_durably(dir: &Path, file: &Path) -> Result<()> {
    std::fs::remove_file(file)
        .and_then(|()| std::fs::File::open(dir)?.sync_all())
        .map_err(|e| DbError::Open { path: file.to_path_buf(), what: format!("cannot remove it: {e}") }.into())
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| DbError::Open { path: dir.to_path_buf(), what: format!("cannot create it: {e}") }.into())
}

impl<S: DbStore> Db<S> {
    fn open_with(cfg: &DbConfig, store: S, started: Instant) -> Result<Db<S>> {
        let mut wc = cfg.wal.clone();
        wc.file.dir = cfg.dir.join(LOG_DIR);
        let control = read_control(&cfg.dir)?;
        if let Some(c) = control {
            // An existing database: no part of its log is made afresh. Commits of an
            // in-place store truncate the log behind the control file's bound.
            wc.file.existing = Some(ExistingLog { needed_from: (!store.in_place()).then_some(c.retain) });
            wc.ring_init = if c.clean_end != 0 { RingInit::ClosedAt(c.clean_end) } else { RingInit::Existing };
        }
        // The record at the redo point was forced before the control file was written:
        // a log that ends before it is damaged, not torn (`wal::damage`).
        wc.valid_past = control.map_or(0, |c| c.redo);
        let wal = Arc::new(Wal::open(&wc)?);
        if let Some(c) = control.filter(|c| c.clean_end != 0) {
            // From the first append on, the NVM ring may hold records the file lacks:
            // the clean close's claim goes before anything is appended.
            write_control(&cfg.dir, Control { clean_end: 0, ..c })?;
        }
        let mut db = Db {
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
            recovery: RecoveryReport::default(),
        };
        db.recovery = recovery::recover(&db, started)?;
        for e in Catalog::list(&db.store)? {
            db.trees.write().insert(e.name, e.root);
        }
        Ok(db)
    }

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

    /// What commits wait for, fixed at open ([`DbConfig::durability`]).
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The trees, the durability and where the log buffer is, for reports.
    pub fn info(&self) -> DbInfo {
        DbInfo { trees: self.tree_names(), durability: self.durability, log_buffer_in_nvm: self.wal.buffer_in_nvm() }
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
                crate::buffer::ExclusivePage::set_page_lsn(&mut page, lsn);
                crate::buffer::ExclusivePage::image_logged(&mut page);
                pages.push(page);
            }
            let end = self.wal.append(&RecordHead::new(Kind::SmoEnd, smo, 0), &[])?;
            for page in &mut pages {
                crate::buffer::ExclusivePage::set_page_lsn(page, end);
            }
            drop(pages);
            self.wal.flush_until(end + 1)?;
        }
        trees.insert(name.to_string(), tree.root());
        Ok(())
    }

    /// A new structure change's id (top bit set: not a transaction's).
    fn smo_begin(&self) -> u64 {
        SMO_ID_BIT | self.next_smo.fetch_add(1, Ordering::Relaxed)
    }

    fn smo_image(&self, smo: u64, page: PageId, bytes: &[u8]) -> Result<u64> {
        Ok(self.wal.append(&RecordHead::new(Kind::PageImage, smo, 0).page(page.0), bytes)?)
    }

    /// The names of the trees.
    pub fn tree_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.read().keys().cloned().collect();
        v.sort();
        v
    }

    fn root(&self, name: &str) -> Result<PageId> {
        self.trees.read().get(name).copied().ok_or_else(|| DbError::NoSuchTree { name: name.into() }.into())
    }

    fn tree(&self, name: &str) -> Result<BTree<'_, S>> {
        BTree::open(&self.store, self.root(name)?)
    }

    /// Starts a transaction.
    pub fn begin(&self) -> Txn<'_, S> {
        let id = self.next_txn.fetch_add(1, Ordering::Relaxed);
        Txn { db: self, log: TxnLog { db: self, id, state: Mutex::new(TxnState::default()) }, done: false }
    }

    /// The value of `key` in tree `tree` (read uncommitted).
    ///
    /// # Errors
    /// `NoSuchTree`; the tree's errors.
    pub fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_alive()?;
        self.tree(tree)?.get(key, <[u8]>::to_vec)
    }

    /// Calls `f` with bytes `part` of the value of `key` (clipped to the value), in
    /// place in the leaf under its shared latch (read uncommitted; `f` must not use the
    /// database). On cache-line-grained pages only the lines of `part` are loaded.
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
        self.tree(tree)?.get_part(key, part, f)
    }

    /// Calls `f(key, value)` for keys `>= start` in order until it returns false.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn scan(&self, tree: &str, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        self.check_alive()?;
        self.tree(tree)?.scan(start, f)
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

    /// A checkpoint: every dirty page is written out (the log forced first), then the
    /// control file records where recovery starts, and older log segments are deleted.
    /// Transactions may run meanwhile: recovery starts at the oldest record of one
    /// active at the checkpoint, so that it finds every transaction to roll back.
    ///
    /// # Errors
    /// Device and log errors.
    pub fn checkpoint(&self) -> Result<()> {
        self.checkpoint_control().map(|_| ())
    }

    /// [`checkpoint`](Self::checkpoint), returning what it wrote to the control file.
    fn checkpoint_control(&self) -> Result<Control> {
        // Changes logged before `redo` are in pages written by the flush below.
        let redo = self.wal.next_lsn();
        self.store.flush_all()?;
        let lsn = self.wal.append(&RecordHead::new(Kind::CheckpointBegin, 0, 0), &redo.to_le_bytes())?;
        self.wal.flush_until(lsn + 1)?;
        let start = self.log_needed_from(redo);
        // A durable NVM cache's dirty pages keep older records (not scanned unless a
        // crash tears one of them).
        let retain = start.min(self.store.oldest_retained().unwrap_or(start));
        // Every id handed out so far is below these: a transaction or structure change
        // with a record before `start` began before this point.
        let (next_txn, next_smo) = (self.next_txn.load(Ordering::Relaxed), self.next_smo.load(Ordering::Relaxed));
        let control = Control { retain, redo: start, next_txn, next_smo, clean_end: 0 };
        write_control(&self.dir, control)?;
        self.wal.truncate_before(retain)?;
        Ok(control)
    }

    /// The oldest record recovery may need, given that changes before `bound` are in
    /// the store: the first record of every active transaction (for undo), and for an
    /// in-place store the records of changes not yet written back.
    fn log_needed_from(&self, bound: Lsn) -> Lsn {
        let oldest_active = self.active.lock().values().copied().min().unwrap_or(bound);
        bound.min(oldest_active).min(self.store.oldest_pending().unwrap_or(bound))
    }

    /// An in-place store keeps only the log of unfinished work: after a commit, the log
    /// is truncated behind the oldest record still needed (whole segments; the NVM log
    /// buffer's records go with them).
    fn truncate_after_commit(&self) -> Result<()> {
        if self.store.in_place() && self.durability != Durability::None && self.store.check().is_ok() {
            self.wal.truncate_before(self.log_needed_from(self.wal.next_lsn()))?;
        }
        Ok(())
    }

    /// Checkpoints and closes. Every step runs even if one before it failed, so that a
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
        let checkpoint = self.checkpoint_control();
        let Db { store, wal, dir, mut log_on_drop, .. } = self;
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

    /// Refuses work once the log or the store has failed: what reached them is unknown
    /// until recovery, and memory may hold changes whose records never reached the log
    /// (the change whose append failed, commits acknowledged with `group` durability
    /// whose flush failed), which a read must not show.
    fn check_alive(&self) -> Result<()> {
        self.wal.check()?;
        self.store.check()
    }
}

/// Makes the log's buffered records durable when a [`Db`] is dropped without
/// [`Db::close`] (commits acknowledged with `group` durability among them), and says
/// on standard error if it cannot: a drop has no other way to report that the log
/// failed. `close` disarms it. A crash (or `std::mem::forget` in tests) runs no drop.
struct LogOnDrop {
    wal: Option<Arc<Wal>>,
    dir: PathBuf,
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

/// What the control file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Control {
    /// The oldest record kept.
    pub retain: Lsn,
    /// Where redo starts (not before `retain`).
    pub redo: Lsn,
    /// Lower bounds of the next transaction and structure-change ids (0: unknown, as in
    /// a control file written before they were kept). Ids restart from what the
    /// recovery's scan saw, and a later recovery may scan further back than the last
    /// one (a torn NVM frame's recovery LSN, `nvsql`): an id used before the last
    /// checkpoint and used again after it would make a loser look finished, or join
    /// an unfinished structure change's images to another's end record.
    pub next_txn: u64,
    pub next_smo: u64,
    /// The log's end when the database was last closed cleanly, with every record in
    /// the log file (0: not closed cleanly since the last open). Written only by
    /// [`Db::close`] and cleared by the next open before it appends anything: while it
    /// is set, a lost NVM log ring held nothing the log file lacks
    /// ([`RingInit::ClosedAt`]).
    pub clean_end: Lsn,
}

/// Writes the control file atomically (a temporary file, fsync, rename, fsync of the
/// directory). Layout: four 16-byte entries, each a u64, the CRC-32C of it and a zero
/// u32: retain, redo, next transaction id, next structure-change id; after a clean close
/// a fifth, the log's end then (80 bytes). An older file holds only the first entry
/// (16 bytes: redo = retain) or the first two (32 bytes).
fn write_control(dir: &Path, c: Control) -> Result<()> {
    debug_assert!(c.retain <= c.redo, "control: retain {} after redo {}", c.retain, c.redo);
    let mut b = [0u8; 80];
    let entries = if c.clean_end == 0 { 4 } else { 5 };
    let b = &mut b[..entries * 16];
    for (i, v) in [c.retain, c.redo, c.next_txn, c.next_smo, c.clean_end].into_iter().take(entries).enumerate() {
        let o = i * 16;
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        let crc = crc32c::crc32c(&b[o..o + 8]);
        b[o + 8..o + 12].copy_from_slice(&crc.to_le_bytes());
    }
    let tmp = dir.join(format!("{CONTROL_FILE}.tmp"));
    let io = |what: &str, e: std::io::Error| DbError::Open { path: dir.to_path_buf(), what: format!("{what}: {e}") };
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("create the control file", e))?;
        f.write_all(b).and_then(|()| f.sync_all()).map_err(|e| io("write the control file", e))?;
    }
    std::fs::rename(&tmp, dir.join(CONTROL_FILE)).map_err(|e| io("rename the control file", e))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("sync the directory", e))?;
    Ok(())
}

/// Reads the control file, if there is one.
fn read_control(dir: &Path) -> Result<Option<Control>> {
    let path = dir.join(CONTROL_FILE);
    let b = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DbError::Open { path, what: format!("cannot read the control file: {e}") }.into()),
    };
    let entry_ok = |o: usize| crc32c::crc32c(&b[o..o + 8]).to_le_bytes() == b[o + 8..o + 12];
    if ![16, 32, 64, 80].contains(&b.len()) || !(0..b.len()).step_by(16).all(entry_ok) {
        return Err(DbError::Open { path, what: "the control file is corrupt".into() }.into());
    }
    let at = |i: usize| {
        if b.len() > i * 16 {
            Some(u64::from_le_bytes(b[i * 16..i * 16 + 8].try_into().expect("8 bytes")))
        } else {
            None
        }
    };
    let retain = at(0).expect("16 bytes at least");
    let c = Control {
        retain,
        redo: at(1).unwrap_or(retain),
        next_txn: at(2).unwrap_or(0),
        next_smo: at(3).unwrap_or(0),
        clean_end: at(4).unwrap_or(0),
    };
    if c.redo < c.retain {
        return Err(DbError::Open {
            path,
            what: format!("the control file's redo point {} is before {}", c.redo, c.retain),
        }
        .into());
    }
    Ok(Some(c))
}

#[derive(Default)]
struct TxnState {
    first: Lsn,
    last: Lsn,
    /// For rollback, in order of change.
    undo: Vec<UndoStep>,
    /// Keys locked.
    locks: Vec<(u64, Vec<u8>)>,
    /// Rolling back: changes are compensations.
    compensating: Option<Lsn>,
}

/// One change of a transaction, for its rollback.
struct UndoStep {
    root: PageId,
    key: Vec<u8>,
    undo: Undo,
    /// The transaction's record before the change's (0: none): where its compensation
    /// says undo continues.
    undo_next: Lsn,
}

/// How to undo one change of a key.
enum Undo {
    /// Put the old value back, or delete the key if it had none.
    Restore(Option<Vec<u8>>),
    /// Write the old bytes back at `offset` in the value.
    Patch { offset: usize, old: Vec<u8> },
}

impl Undo {
    /// Applies the undo to `key` through `tree` (a logged tree: compensation records).
    /// False if it patches a key that is gone (which the key lock rules out).
    fn apply<S: PageSource>(self, tree: &BTree<'_, S>, key: &[u8]) -> Result<bool> {
        match self {
            Undo::Restore(Some(v)) => tree.upsert(key, &v).map(|()| true),
            Undo::Restore(None) => tree.delete(key).map(|_| true),
            Undo::Patch { offset, old } => tree.update_in_place(key, offset, &old),
        }
    }
}

/// A transaction's log: what the trees call as they change pages.
struct TxnLog<'db, S: DbStore> {
    db: &'db Db<S>,
    id: u64,
    state: Mutex<TxnState>,
}

/// Operation byte of a change payload.
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_PATCH: u8 = 3;

/// Encodes an update or compensation payload (little-endian):
///
/// ```text
/// root u64 | op u8 (1 put, 2 delete, 3 patch) | key length u16 | key
///   | patch only: offset u32 | value length u32 | value
///   | old present u8 (0 | 1) | if 1: old length u32 | old
/// ```
///
/// A put carries the whole new value and the old one (or none: an insert); a delete
/// the old value; a patch the bytes written at `offset` and the bytes they replaced.
pub(crate) fn encode_change(root: PageId, change: &LeafChange<'_>) -> Vec<u8> {
    let (op, key, offset, value, old) = match change {
        LeafChange::Put { key, value, old } => (OP_PUT, *key, None, *value, *old),
        LeafChange::Delete { key, old } => (OP_DELETE, *key, None, &[][..], Some(*old)),
        LeafChange::Patch { key, offset, value, old } => {
            assert_eq!(value.len(), old.len(), "a patch replaces as many bytes as it writes");
            (OP_PATCH, *key, Some(*offset), *value, Some(*old))
        }
    };
    let mut p = Vec::with_capacity(28 + key.len() + value.len() + old.map_or(0, <[u8]>::len));
    p.extend_from_slice(&root.0.to_le_bytes());
    p.push(op);
    p.extend_from_slice(&(key.len() as u16).to_le_bytes());
    p.extend_from_slice(key);
    if let Some(offset) = offset {
        let offset = u32::try_from(offset).expect("an offset inside a value on one page");
        p.extend_from_slice(&offset.to_le_bytes());
    }
    p.extend_from_slice(&(value.len() as u32).to_le_bytes());
    p.extend_from_slice(value);
    match old {
        Some(o) => {
            p.push(1);
            p.extend_from_slice(&(o.len() as u32).to_le_bytes());
            p.extend_from_slice(o);
        }
        None => p.push(0),
    }
    p
}

/// A decoded update or compensation payload.
#[derive(Debug)]
pub(crate) struct Change {
    pub root: PageId,
    pub delete: bool,
    /// A patch: `value` replaced bytes `offset..offset + value.len()` of the value,
    /// which were `old` (as long as `value`).
    pub patch_offset: Option<usize>,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub old: Option<Vec<u8>>,
}

pub(crate) fn decode_change(lsn: Lsn, p: &[u8]) -> Result<Change> {
    let bad =
        || -> crate::Error { DbError::BadRecord { lsn, what: "a change payload that does not decode".into() }.into() };
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = p.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let root = PageId(u64::from_le_bytes(take(8)?.try_into().expect("8")));
    let op = take(1)?[0];
    if !(OP_PUT..=OP_PATCH).contains(&op) {
        return Err(bad());
    }
    let klen = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
    let key = take(klen)?.to_vec();
    let patch_offset = match op {
        OP_PATCH => Some(u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize),
        _ => None,
    };
    let vlen = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
    let value = take(vlen)?.to_vec();
    let old = match take(1)?[0] {
        0 => None,
        1 => {
            let olen = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
            Some(take(olen)?.to_vec())
        }
        _ => return Err(bad()),
    };
    if op == OP_PATCH && old.as_ref().is_none_or(|o| o.len() != value.len()) {
        return Err(bad());
    }
    Ok(Change { root, delete: op == OP_DELETE, patch_offset, key, value, old })
}

impl<S: DbStore> TreeLog for TxnLog<'_, S> {
    fn leaf_change(&self, root: PageId, page: PageId, change: LeafChange<'_>) -> Result<u64> {
        let mut st = self.state.lock();
        let (kind, undo_next) = match st.compensating {
            Some(next) => (Kind::Compensation, next),
            None => (Kind::Update, 0),
        };
        if st.first == 0 {
            // Registered before the append, at a bound below the record's LSN, so that
            // a truncation racing with it cannot drop the record.
            let bound = self.db.wal.next_lsn();
            st.first = bound;
            self.db.active.lock().insert(self.id, bound);
        }
        let head = RecordHead::new(kind, self.id, st.last).page(page.0).undo_next(undo_next);
        let appended = self.db.wal.append(&head, &encode_change(root, &change));
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
        st.last = lsn;
        Ok(lsn)
    }

    fn smo_begin(&self) -> u64 {
        self.db.smo_begin()
    }

    fn smo_image(&self, smo: u64, page: PageId, bytes: &[u8]) -> Result<u64> {
        self.db.smo_image(smo, page, bytes)
    }

    fn smo_free(&self, smo: u64, page: PageId) -> Result<u64> {
        Ok(self.db.wal.append(&RecordHead::new(Kind::PageFree, smo, 0).page(page.0), &[])?)
    }

    fn smo_end(&self, smo: u64) -> Result<u64> {
        Ok(self.db.wal.append(&RecordHead::new(Kind::SmoEnd, smo, 0), &[])?)
    }
}

/// A transaction. Dropped without [`commit`](Self::commit), it rolls back.
pub struct Txn<'db, S: DbStore = BufferManager> {
    db: &'db Db<S>,
    log: TxnLog<'db, S>,
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
    pub fn id(&self) -> u64 {
        self.log.id
    }

    fn logged(&self, tree: &str) -> Result<BTree<'_, S>> {
        let t = self.db.tree(tree)?;
        Ok(if self.db.durability == Durability::None { t } else { t.logged(&self.log) })
    }

    fn lock(&self, root: PageId, key: &[u8]) -> Result<()> {
        // Every write and locking read comes here first.
        self.db.check_alive()?;
        if self.db.locks.lock(self.log.id, root, key)? {
            self.log.state.lock().locks.push((root.0, key.to_vec()));
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
        self.lock(root, key)?;
        self.logged(tree)?.upsert(key, value)
    }

    /// Removes `key` from tree `tree`; false if it was absent.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> Result<bool> {
        let root = self.db.root(tree)?;
        self.lock(root, key)?;
        self.logged(tree)?.delete(key)
    }

    /// Overwrites `bytes.len()` bytes of `key`'s value at `offset`, in place (the
    /// value keeps its length; [`BTree::update_in_place`]). Returns false, locking the
    /// key but changing nothing, if `key` is absent.
    ///
    /// # Errors
    /// `OffsetOutOfRange` if the range is not inside the value; as [`put`](Self::put).
    pub fn update_in_place(&mut self, tree: &str, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool> {
        let root = self.db.root(tree)?;
        self.lock(root, key)?;
        self.logged(tree)?.update_in_place(key, offset, bytes)
    }

    /// Locks `key` (exclusively, until the transaction ends, as a write would), then
    /// reads its value: a read-modify-write that no other writer can interleave with
    /// (plain reads take no locks). An absent key is locked too.
    ///
    /// # Errors
    /// `NoSuchTree`, `LockTimeout`; as [`Db::get`].
    pub fn get_for_update(&mut self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let root = self.db.root(tree)?;
        self.lock(root, key)?;
        self.db.get(tree, key)
    }

    /// The value of `key` (this transaction's own changes included).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(tree, key)
    }

    /// Calls `f` with bytes `part` of the value of `key` in place, without copying the
    /// value ([`Db::get_part`]).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_part<R>(
        &self,
        tree: &str,
        key: &[u8],
        part: Range<usize>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.db.get_part(tree, key, part, f)
    }

    /// Scans tree `tree` from `start` (see [`Db::scan`]).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn scan(&self, tree: &str, start: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        self.db.scan(tree, start, f)
    }

    /// Commits: durable as the database's durability says once this returns.
    ///
    /// # Errors
    /// The log's errors: the commit may or may not be durable (recovery decides). The
    /// database then refuses all further work (`Poisoned`) until it is reopened, reads
    /// included: this transaction's changes are still in memory. Once the log has
    /// failed, every commit returns its error, `group` ones too.
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        let (last, locks) = {
            let mut st = self.log.state.lock();
            (st.last, std::mem::take(&mut st.locks))
        };
        let result = (|| -> Result<()> {
            self.db.check_alive()?;
            if last != 0 {
                let lsn = self.db.wal.append(&RecordHead::new(Kind::Commit, self.log.id, last), &[])?;
                self.db.wal.commit(lsn + 1, self.db.durability)?;
                self.db.wal.append(&RecordHead::new(Kind::End, self.log.id, lsn), &[])?;
            }
            Ok(())
        })();
        self.db.active.lock().remove(&self.log.id);
        self.db.locks.release(&locks);
        result?;
        self.db.truncate_after_commit()
    }

    /// Rolls back every change of the transaction, its change whose log append failed
    /// included.
    ///
    /// # Errors
    /// The tree's and the log's errors (recovery finishes the rollback then). Once the
    /// log has failed, `Poisoned` without undoing anything: the undo cannot be logged,
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
            // Each undo step's compensation points past the record it undoes.
            for UndoStep { root, key, undo, undo_next } in undo.into_iter().rev() {
                self.log.state.lock().compensating = Some(undo_next);
                let tree = BTree::open(&self.db.store, root)?.logged(&self.log);
                let applied = undo.apply(&tree, &key)?;
                // The transaction holds the key's lock: nobody removed the key.
                assert!(applied, "transaction {}: undo of a patch of {key:?}, a key that is gone", self.log.id);
            }
            let last = self.log.state.lock().last;
            if last != 0 {
                self.db.wal.append(&RecordHead::new(Kind::End, self.log.id, last), &[])?;
            }
            Ok(())
        })();
        let locks = std::mem::take(&mut self.log.state.lock().locks);
        self.db.active.lock().remove(&self.log.id);
        self.db.locks.release(&locks);
        result
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

/// What a [`Db`] reports about itself.
#[derive(Clone, Debug, Serialize)]
pub struct DbInfo {
    /// The names of the trees, sorted.
    pub trees: Vec<String>,
    /// What commits wait for.
    pub durability: Durability,
    /// True if the log buffer is in NVM (records durable when appended).
    pub log_buffer_in_nvm: bool,
}

/// A page for redo, fixed exclusive: counted as allocated first (the log may name
/// pages created after the last checkpoint). `None` for a page that holds the free-page
/// list: free since before the record, which is skipped (see
/// [`DbStore::recover_allocated`]).
pub(crate) fn page_of<S: DbStore>(store: &S, pid: PageId) -> Result<Option<S::Exclusive<'_>>> {
    if !store.recover_allocated(pid)? {
        return Ok(None);
    }
    store.fix_exclusive(pid).map(Some)
}
