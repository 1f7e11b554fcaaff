//! How a database is opened ([`DbConfig`]) and what the database layer reports when it
//! cannot be ([`DbError`]): the configuration of its directory, log, store and
//! durability, and the error of every operation of `db/`. Plain data; no state.
//!
//! Layout of the database directory: the page file [`PAGE_FILE`] (with its
//! double-write file), the log [`LOG_DIR`]`/`, the control file and, while a database
//! is being created, its creation marker (`control.rs`); `main-memory` adds its
//! snapshot (`snapshot.rs`).

use std::path::{Path, PathBuf};

use crate::arch::{ArchConfig, Architecture};
use crate::buffer::{BufferConfig, Techniques};
use crate::device::{NvmConfig, OpenMode};
use crate::ids::{PageId, TxnId};
use crate::sources::DirectConfig;
use crate::wal::payload::BadPayload;
use crate::wal::{Durability, Lsn, WalConfig};
use crate::{ByteSize, Result};

/// The page file's name in the database directory (its double-write file is
/// `data.db.dwa`).
pub(super) const PAGE_FILE: &str = "data.db";

/// The log's directory in the database directory.
pub(super) const LOG_DIR: &str = "wal";

/// How to open a database.
///
/// A configuration saves to and loads from a TOML file ([`DbConfig::save`],
/// [`DbConfig::load`]; `docs/config.md`): the file holds the architecture's choices
/// ([`ArchConfig`]) and the database's own, and loading builds the configuration through
/// [`DbConfig::for_arch`], so a file and code that build one from the same choices agree.
#[derive(Clone, Debug, PartialEq)]
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
    /// What a transaction's reads see ([`Isolation::Snapshot`] by default).
    pub isolation: Isolation,
    /// The background checkpointer's triggers (on by default).
    pub checkpoint: CheckpointConfig,
    /// Most bytes of before-images kept for snapshots (keys and values of versions
    /// that a running transaction may still need); past it the oldest snapshot is
    /// ended (its transaction fails with `SnapshotTooOld`). [`VERSION_BYTES_MAX_DEFAULT`].
    pub version_bytes_max: u64,
    /// The architecture this configuration was built from ([`DbConfig::for_arch`],
    /// [`DbConfig::from_arch`]), with its SSD path the page file `dir/data.db` and
    /// `open_existing` off (the database decides from its control file); `None` for
    /// [`DbConfig::new`]. [`DbConfig::save`] writes it back; changing it does not change
    /// `buffer` or `wal`.
    pub arch: Option<ArchConfig>,
}

/// [`DbConfig::version_bytes_max`] by default: 256 MiB.
pub const VERSION_BYTES_MAX_DEFAULT: u64 = 256 << 20;

/// What a transaction's reads see of other transactions' changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Snapshot isolation: a transaction reads the database as of its start (its own
    /// changes included); of two transactions writing one key, the second waits for
    /// the first, and fails with `WriteConflict` if the first committed after the
    /// second began.
    #[default]
    Snapshot,
    /// Each read sees the changes committed before it (never an uncommitted one);
    /// writes wait for the key's lock and do not fail on a later commit.
    ReadCommitted,
    /// Reads see the tree as it is, uncommitted changes included (no version store).
    /// For measuring what isolation costs; not for data one keeps.
    ReadUncommitted,
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Isolation::Snapshot => "snapshot",
            Isolation::ReadCommitted => "read-committed",
            Isolation::ReadUncommitted => "read-uncommitted",
        })
    }
}

impl std::str::FromStr for Isolation {
    type Err = DbError;
    fn from_str(s: &str) -> Result<Isolation, DbError> {
        match s {
            "snapshot" | "si" => Ok(Isolation::Snapshot),
            "read-committed" | "rc" => Ok(Isolation::ReadCommitted),
            "read-uncommitted" | "ru" => Ok(Isolation::ReadUncommitted),
            _ => Err(DbError::Config {
                what: format!("isolation {s:?}: expected snapshot, read-committed or read-uncommitted"),
            }),
        }
    }
}

/// When the background checkpointer checkpoints: once the log has grown by
/// `log_bytes` since the last checkpoint, or `interval_ms` after it, whichever comes
/// first. Off (`enabled: false`), only [`Db::checkpoint`](super::Db::checkpoint) and
/// [`Db::close`](super::Db::close) checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Whether the background checkpointer runs.
    pub enabled: bool,
    /// Log growth (bytes of records since the last checkpoint) that triggers one; 0:
    /// no size trigger.
    pub log_bytes: u64,
    /// Time since the last checkpoint that triggers one, in milliseconds, if the log
    /// grew at all; 0: no time trigger.
    pub interval_ms: u64,
}

impl Default for CheckpointConfig {
    fn default() -> CheckpointConfig {
        CheckpointConfig { enabled: true, log_bytes: 64 << 20, interval_ms: 60_000 }
    }
}

impl CheckpointConfig {
    /// No background checkpoints.
    pub const OFF: CheckpointConfig = CheckpointConfig { enabled: false, log_bytes: 0, interval_ms: 0 };
}

impl DbConfig {
    /// A database in `dir` with 64 MiB of DRAM, no NVM, a DRAM log buffer, durability
    /// `sync`.
    pub fn new(dir: impl Into<PathBuf>) -> DbConfig {
        let dir = dir.into();
        DbConfig {
            buffer: BufferConfig::new(ByteSize(64 << 20)),
            wal: WalConfig::new(dir.join(LOG_DIR)),
            durability: Durability::Sync,
            pages_in_nvm: false,
            redo_from_retained: false,
            isolation: Isolation::Snapshot,
            checkpoint: CheckpointConfig::default(),
            version_bytes_max: VERSION_BYTES_MAX_DEFAULT,
            arch: None,
            dir,
        }
    }

    /// As [`DbConfig::from_arch`] for every architecture: `nvm-direct` too, whose
    /// database opens with [`Db::open_nvm_direct`](super::Db::open_nvm_direct) and
    /// [`DbConfig::direct_config`] (its log on a device of the SSD profile, in `dir`).
    /// Dispatch on [`DbConfig::architecture`].
    ///
    /// # Errors
    /// As [`DbConfig::from_arch`], but not for `nvm-direct`; `Config` for a policy or
    /// techniques asked of `nvm-direct` (it has no buffer manager).
    pub fn for_arch(arch: &ArchConfig, dir: impl Into<PathBuf>) -> Result<DbConfig> {
        if arch.arch != Architecture::NvmDirect {
            return DbConfig::from_arch(arch, dir);
        }
        if arch.techniques.is_some_and(|t| t != Techniques::NONE) || arch.policy.is_some() {
            return Err(DbError::Config {
                what: "nvm-direct has no buffer manager: no policy or techniques apply".into(),
            }
            .into());
        }
        let mut cfg = DbConfig::new(dir);
        cfg.wal.file.mode = arch.mode;
        cfg.wal.file.profile = arch.ssd_profile.clone();
        cfg.arch = Some(remembered(arch, &cfg.dir));
        Ok(cfg)
    }

    /// The architecture the configuration was built from; `None` for [`DbConfig::new`]
    /// (a DRAM buffer over the page file, opened with [`Db::open`](super::Db::open)).
    /// `main-memory` opens with [`Db::open_main_memory`](super::Db::open_main_memory),
    /// `nvm-direct` with [`Db::open_nvm_direct`](super::Db::open_nvm_direct), the others
    /// with [`Db::open`](super::Db::open).
    pub fn architecture(&self) -> Option<Architecture> {
        self.arch.as_ref().map(|a| a.arch)
    }

    /// The NVM region of an `nvm-direct` database, for
    /// [`Db::open_nvm_direct`](super::Db::open_nvm_direct): the architecture's NVM path,
    /// size, profile, mode, page size, CPU-cache model and checks.
    ///
    /// # Errors
    /// `Config` if the configuration was not built for `nvm-direct`.
    pub fn direct_config(&self) -> Result<DirectConfig> {
        let Some(arch) = self.arch.as_ref().filter(|a| a.arch == Architecture::NvmDirect) else {
            return Err(DbError::Config {
                what: format!(
                    "a direct configuration needs nvm-direct; this one is for {}",
                    self.architecture().map_or("DbConfig::new", Architecture::name)
                ),
            }
            .into());
        };
        let mut n = NvmConfig::new(&arch.nvm_path, arch.nvm);
        n.profile = arch.nvm_profile.clone();
        n.mode = arch.mode;
        n.open_mode = OpenMode::OpenOrCreate;
        n.wear_counters = arch.wear_counters;
        let mut dc = DirectConfig::new(n, arch.page_size);
        dc.cpu_cache_bytes = arch.cpu_cache_model.bytes();
        dc.nvm_verify = arch.nvm_verify;
        Ok(dc)
    }

    /// Reads a configuration file (`docs/config.md`).
    ///
    /// # Errors
    /// `ConfigFile` naming the file, and the key (dotted) and line where there is one:
    /// a file that cannot be read, malformed TOML, an unknown key, a bad value, a
    /// missing required key, or choices the architecture refuses.
    pub fn load(path: impl AsRef<Path>) -> Result<DbConfig> {
        super::config_file::load(path.as_ref())
    }

    /// Parses the text of a configuration file; `source_name` names it in errors.
    ///
    /// # Errors
    /// As [`DbConfig::load`].
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<DbConfig> {
        super::config_file::parse(text, source_name)
    }

    /// The configuration as the text of a configuration file, every key written.
    ///
    /// # Errors
    /// `Config` naming the fields a file cannot express (set in code after the
    /// configuration was built: a fault plan, `redo_from_retained`, a buffer field
    /// changed by hand, ...): they are never silently dropped.
    pub fn to_toml_string(&self) -> Result<String> {
        super::config_file::print(self)
    }

    /// Writes the configuration to `path` atomically (a temporary file beside it,
    /// synced, then renamed over it), so that [`DbConfig::load`] gives it back equal.
    ///
    /// # Errors
    /// As [`DbConfig::to_toml_string`]; `ConfigFile` if the file cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        super::config_file::save(self, path.as_ref())
    }

    /// A database in `dir` on architecture `arch` (its tiers, profiles, emulation mode,
    /// policy and techniques; [`ArchConfig::buffer_config`]):
    ///
    /// - with an SSD (`ssd-bm`, `three-tier`, `nvcache`, `nvsql`): the page file is
    ///   `dir/data.db`, not `arch.ssd_path`; the log is on a device of the SSD profile;
    ///   open with [`Db::open`](super::Db::open);
    /// - with NVM and no SSD (`basic-nvm-bm`, `mmap-*`): the pages live in the NVM pool
    ///   at `arch.nvm_path` ([`DbConfig::pages_in_nvm`]); the log files are on a device
    ///   of the NVM profile (there is no SSD to put them on); open with [`Db::open`](super::Db::open);
    /// - `main-memory`: every page in DRAM, a snapshot file in `dir` written by each
    ///   checkpoint, the log on a device of the SSD profile; open with
    ///   [`Db::open_main_memory`](super::Db::open_main_memory).
    ///
    /// The log buffer is in DRAM and durability `sync` until changed.
    ///
    /// # Errors
    /// `Config` for `nvm-direct` (it opens with [`Db::open_nvm_direct`](super::Db::open_nvm_direct)) and for
    /// techniques on an architecture whose pages live in NVM (a line-grained
    /// write-back would not be covered by the page images the log keeps).
    pub fn from_arch(arch: &ArchConfig, dir: impl Into<PathBuf>) -> Result<DbConfig> {
        let mut cfg = DbConfig::new(dir);
        let arch = &remembered(arch, &cfg.dir);
        cfg.arch = Some(arch.clone());
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

/// `arch` as a database in `dir` keeps it: the SSD page file is `dir/data.db` (where
/// [`Db::open`](super::Db::open) puts it whatever the configuration says) and
/// `open_existing` is off (the database's control file says whether it exists).
fn remembered(arch: &ArchConfig, dir: &Path) -> ArchConfig {
    let mut a = arch.clone();
    a.ssd_path = dir.join(PAGE_FILE);
    a.open_existing = false;
    a
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
    /// A write (or [`Txn::get_for_update`](super::Txn::get_for_update)) waited longer than [`LOCK_WAIT_MS_MAX`](super::LOCK_WAIT_MS_MAX)
    /// for another transaction's lock on the key. The transaction should roll back.
    #[error("key locked by {owner} for more than {ms} ms")]
    LockTimeout {
        /// The transaction that holds the lock.
        owner: TxnId,
        /// How long the wait lasted, in milliseconds.
        ms: u64,
    },
    /// A transaction wrote a key that another transaction changed and committed after
    /// this one's snapshot was taken (snapshot isolation, first updater wins). The
    /// transaction can do nothing more but roll back; running it again may succeed.
    #[error("{txn}: key {key:?} of tree {tree:?} was changed by a transaction that committed after {txn} began")]
    WriteConflict {
        /// The transaction that failed.
        txn: TxnId,
        /// The tree.
        tree: String,
        /// The key (lossy UTF-8).
        key: String,
    },
    /// Waiting for a key lock would close a cycle of transactions each waiting for the
    /// next: this one fails at once (the others go on). Roll back and retry.
    #[error("{txn}: deadlock, waiting for a key of tree {tree:?} would close the cycle {}", fmt_cycle(cycle))]
    Deadlock {
        /// The transaction that failed.
        txn: TxnId,
        /// The tree of the key it asked for.
        tree: String,
        /// The cycle, from this transaction round to the one it would wait for last.
        cycle: Vec<TxnId>,
    },
    /// The transaction's snapshot was ended: it needed more before-images than
    /// [`DbConfig::version_bytes_max`] allows, and it was the oldest. Roll back and retry.
    #[error(
        "{txn}: snapshot too old, ended because before-images kept for snapshots reached {bytes} bytes \
         (limit {limit}, DbConfig::version_bytes_max)"
    )]
    SnapshotTooOld {
        /// The transaction whose snapshot was ended.
        txn: TxnId,
        /// Bytes of before-images kept when it was ended.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// An operation on a transaction that an earlier error (a conflict, a deadlock, a
    /// snapshot too old) made fail: it can only roll back.
    #[error("{txn} failed earlier ({cause}): it can only roll back")]
    TxnFailed {
        /// The transaction.
        txn: TxnId,
        /// The first error.
        cause: String,
    },
    /// A range with its start after its end, or both bounds excluding one key.
    #[error("bad range over tree {tree:?}: {what}")]
    BadRange {
        /// The tree.
        tree: String,
        /// What is wrong with the bounds.
        what: String,
    },
    /// A tree could not be dropped: transactions hold locks on its keys.
    #[error("tree {tree:?} is in use: {what}")]
    TreeBusy {
        /// The tree.
        tree: String,
        /// Who uses it.
        what: String,
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
    /// A configuration file that cannot be read or used: where (the file, the key as a
    /// dotted path such as `checkpoint.log-bytes`, the line) and what is wrong.
    #[error("{}", fmt_file_error(file, key.as_deref(), *line, what))]
    ConfigFile {
        /// The file (or the name a string was given under).
        file: String,
        /// The key, dotted (`log.ring.size`); `None` for the file as a whole.
        key: Option<String>,
        /// The line (from 1), where known.
        line: Option<usize>,
        /// What is wrong, with the value.
        what: String,
    },
    /// A transaction's rollback failed part-way (a page could not be read or had no
    /// room for the restored value): memory holds some of its changes, so the database
    /// refuses all work until it is reopened, and the open's recovery finishes the
    /// rollback from the log.
    #[error("the database halted: {cause}; reopen it to finish the rollback from the log")]
    Halted {
        /// Which transaction's rollback failed, and the error.
        cause: String,
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

/// `db.toml:12: checkpoint.log-bytes: bad size "x"`.
fn fmt_file_error(file: &str, key: Option<&str>, line: Option<usize>, what: &str) -> String {
    let at = line.map(|l| format!(":{l}")).unwrap_or_default();
    match key {
        Some(k) => format!("config file {file}{at}: key {k}: {what}"),
        None => format!("config file {file}{at}: {what}"),
    }
}

/// `t1 -> t2 -> t1`.
fn fmt_cycle(cycle: &[TxnId]) -> String {
    let mut s: Vec<String> = cycle.iter().map(ToString::to_string).collect();
    s.extend(cycle.first().map(ToString::to_string));
    s.join(" -> ")
}

/// A payload that does not decode is a bad record of the database's log.
impl From<BadPayload> for DbError {
    fn from(b: BadPayload) -> DbError {
        DbError::BadRecord { lsn: b.lsn, what: b.what }
    }
}

impl From<BadPayload> for crate::Error {
    fn from(b: BadPayload) -> crate::Error {
        DbError::from(b).into()
    }
}
