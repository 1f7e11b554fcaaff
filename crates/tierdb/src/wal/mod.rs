//! The write-ahead log: records appended to a log buffer and made durable in a log
//! file of segments on SSD (`device::log_file`).
//!
//! The log buffer lives in one of two places ([`LogBuffer`]):
//!
//! - **DRAM**: appended records wait in memory; [`Wal::flush_until`] writes them to the
//!   log file and `fdatasync`s it. Concurrent committers share one sync: whoever takes
//!   the flush lock writes everything appended so far, and those who waited behind it
//!   find their records durable (group commit). A background flusher makes the buffer
//!   durable at least every `flush_interval` regardless.
//! - **NVM** (`device::log_ring`): a record is copied into a ring in NVM and persisted
//!   (`clwb` + `sfence`) as it is appended, so it is durable at once and a commit forces
//!   nothing (NV-SQL §5, the three-tier paper's A.5). The background flusher moves the
//!   ring's contents to the log file, which frees ring space; an append that finds the
//!   ring full flushes first.
//!
//! What a commit waits for is the caller's [`Durability`]. Recovery ([`Wal::open`])
//! reads the log file and then the ring to the last valid record, cuts what follows (a
//! torn or corrupt tail: reported in [`Recovered::tail`]), and copies the ring's records
//! into the file, so that afterwards every record is in the file. Records are in
//! [`record`]; their meaning (redo and undo) belongs to the layer that logs them.
//!
//! After a failed write or sync the WAL refuses further work (`Poisoned`): what reached
//! the log file is unknown, and only recovery after reopening can tell.

mod damage;
pub mod record;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

pub use record::{Kind, Lsn, Record, RecordHead};

use crate::device::log_file::LOG_STREAM_START;
use crate::device::{DeviceError, LogFile, LogFileConfig, NvmConfig, NvmRegion, NvmRing, OpenMode};

/// What a buffer manager needs of the log: make every record up to an LSN durable
/// before a page changed by it is written out (the write-ahead rule).
pub trait LogForce: Send + Sync {
    /// Makes the record at `lsn` and every one before it durable.
    ///
    /// # Errors
    /// The log's errors.
    fn force(&self, lsn: Lsn) -> crate::Result<()>;

    /// Appends an image of page `pid` (not yet durable: [`force`](Self::force) it) before
    /// the page is written over its only durable copy — an NVM frame of a database with
    /// no SSD below, where a crash in the middle of the write would leave neither the
    /// old page nor the new one. Redo rebuilds such a page from its last image and the
    /// changes after it. Returns the image's LSN; `None` if this log keeps no images
    /// (the plain [`Wal`]: the write then goes unprotected).
    ///
    /// # Errors
    /// The log's errors.
    fn append_image(&self, _pid: crate::ids::PageId, _page: &[u8]) -> crate::Result<Option<Lsn>> {
        Ok(None)
    }

    /// The log's LSN now: the next record's. A page written to SSD records it as its
    /// last-flush LSN (0: unknown, the default).
    fn end_lsn(&self) -> Lsn {
        0
    }

    /// Records that `pages` were written to SSD, each with its last-flush LSN (taken
    /// while the page could not change, after the write-ahead force): its SSD copy
    /// holds every change logged below that LSN. Call only once the writes survive a
    /// crash (the double-write area holds their copies, or the file is synced). Redo
    /// skips those changes without reading the page. Nothing by default (the plain
    /// [`Wal`] has no use for it).
    ///
    /// # Errors
    /// The log's errors.
    fn note_flushed(&self, _pages: &[(crate::ids::PageId, Lsn)]) -> crate::Result<()> {
        Ok(())
    }
}

impl LogForce for Wal {
    fn force(&self, lsn: Lsn) -> crate::Result<()> {
        Ok(self.flush_until(lsn + 1)?)
    }

    fn end_lsn(&self) -> Lsn {
        self.next_lsn()
    }
}

/// Where the log buffer lives.
#[derive(Clone, Debug)]
pub enum LogBuffer {
    /// In DRAM: durable after the log file's `fdatasync`.
    Dram,
    /// In an NVM region: durable as soon as it is appended.
    Nvm(NvmConfig),
}

/// What a commit waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// The commit returns once its commit record is durable. Concurrent commits share
    /// one `fdatasync`; with the log buffer in NVM nothing needs forcing.
    #[default]
    Sync,
    /// The commit returns once its records are in the log buffer; the buffer is made
    /// durable at least every flush interval, so a crash loses at most the last
    /// interval's commits (none with the log buffer in NVM).
    Group,
    /// Nothing is logged: changes are durable only through checkpoints, and a crash
    /// between two checkpoints can leave pages of both times side by side (a benchmark
    /// baseline, not a mode for data one keeps).
    None,
}

impl Durability {
    /// The name in configurations and reports: `sync`, `group` or `none` (what
    /// [`FromStr`](std::str::FromStr) parses).
    pub fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Group => "group",
            Durability::None => "none",
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = WalError;
    fn from_str(s: &str) -> Result<Self, WalError> {
        match s {
            "sync" => Ok(Durability::Sync),
            "group" => Ok(Durability::Group),
            "none" => Ok(Durability::None),
            _ => Err(WalError::Config { what: format!("durability {s:?}: expected sync, group or none") }),
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of the WAL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// An error of the log file or the NVM ring. A failed write or sync also poisons
    /// the log (later calls return `Poisoned`); a failed read does not.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// [`Wal::open`] was given a configuration it cannot work with (a DRAM buffer or
    /// NVM ring too small for the largest records), or could not start its flusher
    /// thread; also an unknown [`Durability`] name.
    #[error("WAL configuration: {what}")]
    Config {
        /// What is wrong, with the values involved.
        what: String,
    },
    /// [`Wal::append`] of a payload longer than [`record::PAYLOAD_BYTES_MAX`].
    #[error("a log record of {len} bytes is larger than the {max}-byte limit")]
    TooLarge {
        /// The payload's length in bytes.
        len: usize,
        /// The payload limit in bytes, [`record::PAYLOAD_BYTES_MAX`].
        max: usize,
    },
    /// An earlier write or sync of the log failed: every later append, flush and
    /// commit is refused until the log is reopened and recovered.
    #[error("the log failed earlier ({cause}); reopen the database to recover")]
    Poisoned {
        /// The failure that poisoned the log and the LSN below which records are
        /// durable (and, from [`Wal::finish`], what became of the records in memory).
        cause: String,
    },
    /// [`Wal::read`] found no valid record starting at the LSN: truncated away, past
    /// the end, or bytes that do not decode as the record for that LSN.
    #[error("no log record at LSN {lsn}: {why}")]
    NoRecord {
        /// The LSN asked for.
        lsn: Lsn,
        /// Why there is no record there.
        why: String,
    },
    /// Damage in records that were durable (not a torn tail, `wal::damage`): the log is
    /// not cut there unless [`WalConfig::salvage_damaged_log`] says so.
    #[error(
        "log file {} is damaged at byte {offset} (LSN {lsn}): {detail}; the log is not cut there, which would \
         lose durable records (WalConfig::salvage_damaged_log cuts it and reports what went)",
        file.display()
    )]
    Corrupted {
        /// The log segment file holding the damage.
        file: std::path::PathBuf,
        /// Byte offset of the damage in `file`.
        offset: u64,
        /// The LSN of the first byte that cutting there would lose.
        lsn: Lsn,
        /// What is wrong there and why it is not a torn tail.
        detail: String,
    },
    /// [`Wal::skip_past`] asked to skip more than [`SKIP_BYTES_MAX`]: no record of this
    /// log had that LSN (a page claims it: the page is damaged, not the log).
    #[error(
        "LSN {lsn} is {gap} bytes past the log's end, more than the {max} a salvaged log skips: no record of \
         this log had it"
    )]
    SkipTooFar {
        /// The LSN the log was asked to move past.
        lsn: Lsn,
        /// Bytes from the log's next LSN to `lsn`.
        gap: u64,
        /// The limit in bytes, [`SKIP_BYTES_MAX`].
        max: u64,
    },
    /// [`Wal::open`] of the log of an existing database ([`RingInit::Existing`], or
    /// [`RingInit::ClosedAt`] when the log file does not end at that LSN) found its NVM
    /// ring missing, of another size, or without a valid header (zeroed, corrupt): it
    /// may have held the last acknowledged commits, so nothing is made in its place.
    #[error(
        "the NVM log buffer {path} of an existing database cannot be used: {why}; it may hold the last \
         acknowledged commits, which are in no other file, so the log is not opened (restore the file, or \
         open the database as its last clean close left it)"
    )]
    RingLost {
        /// The NVM ring's file.
        path: std::path::PathBuf,
        /// What is wrong with it (and, for `ClosedAt`, why the file does not vouch for
        /// it).
        why: String,
    },
}

/// Whether [`Wal::open`] may make a new NVM ring (`device::log_ring`): an existing
/// ring may hold the last acknowledged records and nowhere else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RingInit {
    /// A new log (a database being created, or a log used alone): a ring file that is
    /// missing or holds no ring header is made.
    #[default]
    New,
    /// The log of an existing database: a ring that is missing, zeroed, or fails its
    /// header's checks is an error ([`WalError::RingLost`], naming the file).
    Existing,
    /// The log of an existing database last closed cleanly, when every record was in
    /// the log file and the file ended at this LSN: a ring that cannot be used is made
    /// afresh if the file still ends there (the ring held nothing the file lacks; said
    /// in [`Wal::ring_remade`]), else as `Existing`.
    ClosedAt(Lsn),
}

/// How to open a WAL.
#[derive(Clone, Debug)]
pub struct WalConfig {
    /// The log file: its directory, segment size, device profile and emulation mode.
    pub file: LogFileConfig,
    /// Where appended records wait before the log file: DRAM or an NVM ring.
    pub buffer: LogBuffer,
    /// DRAM buffer: an append that leaves more than this pending flushes it.
    pub buffer_bytes: usize,
    /// The background flusher's period.
    pub flush_interval: Duration,
    /// Recovery: a record starts at this LSN and was durable (0: none known); a log
    /// whose valid records end at or before it was damaged, and is not cut there.
    /// `Db` sets the control file's redo point (the record there was forced before the
    /// control file was written).
    pub valid_past: Lsn,
    /// Recovery: cut the log at damage that is not a torn tail (a valid record
    /// follows, it lies in a segment before the last, or the log would end at or
    /// before [`valid_past`](Self::valid_past)) instead of failing with
    /// [`WalError::Corrupted`]; what follows the damage is lost, said in
    /// [`Recovered::tail`] and [`Recovered::salvaged`], and LSNs continue past every
    /// byte the log held (`wal::damage`). Off by default: for getting at what is left
    /// of a damaged database, after a copy of it was kept.
    pub salvage_damaged_log: bool,
    /// With the log buffer in NVM: whether a ring may be made ([`RingInit::New`] by
    /// default).
    pub ring_init: RingInit,
}

/// Default period of the background flusher.
pub const FLUSH_INTERVAL_DEFAULT: Duration = Duration::from_millis(1);
/// Default DRAM log buffer size.
pub const BUFFER_BYTES_DEFAULT: usize = 4 << 20;
/// The most [`Wal::skip_past`] skips: a salvaged log is moved past a page's LSN only as
/// far as a log could have reached beyond what is left of it.
pub const SKIP_BYTES_MAX: u64 = 1 << 30;
/// Bytes read from the log file at a time while scanning it.
const SCAN_CHUNK_BYTES: usize = 1 << 20;
/// NVM ring: records up to this size are encoded on the stack.
const SMALL_RECORD_BYTES: usize = 512;

impl WalConfig {
    /// A WAL in directory `dir` with a DRAM log buffer.
    pub fn new(dir: impl Into<std::path::PathBuf>) -> WalConfig {
        WalConfig {
            file: LogFileConfig::new(dir),
            buffer: LogBuffer::Dram,
            buffer_bytes: BUFFER_BYTES_DEFAULT,
            flush_interval: FLUSH_INTERVAL_DEFAULT,
            valid_past: 0,
            salvage_damaged_log: false,
            ring_init: RingInit::New,
        }
    }
}

/// What recovery found at the end of the log.
#[derive(Clone, Debug, Serialize)]
pub struct Recovered {
    /// LSN of the oldest record held.
    pub start: Lsn,
    /// LSN after the last valid record: where appending continues.
    pub end: Lsn,
    /// Records found (file and ring).
    pub records: u64,
    /// Records that were only in the NVM ring and were copied to the file.
    pub from_ring: u64,
    /// Why the log ended where it did, if bytes followed the last valid record (they
    /// were cut): e.g. a torn write.
    pub tail: Option<String>,
    /// The log was damaged where it had been durable and was cut there all the same
    /// ([`WalConfig::salvage_damaged_log`]; `tail` says where and what went): the LSN
    /// of the cut, a record's start. Filler records follow what was kept, so that
    /// positions past it (a control file's redo point) need not be records' starts.
    pub salvaged: Option<Lsn>,
}

/// Counters of a WAL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalStats {
    /// Records appended through [`Wal::append`] since the log was opened (not those
    /// recovery copied from the ring or wrote as filler).
    pub records: u64,
    /// Bytes appended: encoded records, headers and padding included.
    pub bytes: u64,
    /// Writes of the log buffer to the log file (each followed by a sync).
    pub flushes: u64,
    /// Syncs of the log file after flushes; equal to `flushes` (recovery's syncs and
    /// the last-attempt write of [`Wal::finish`] are not counted).
    pub syncs: u64,
    /// Calls that found their records not yet durable and waited for a flush, their
    /// own or one in progress (a `sync` commit, the write-ahead rule before a page is
    /// written out, a checkpoint, a full DRAM buffer).
    pub waits: u64,
    /// Flushes made by such callers themselves, not by the background flusher.
    pub forced_flushes: u64,
}

impl WalStats {
    /// The counts from `before` to `self`.
    pub fn since(&self, before: &WalStats) -> WalStats {
        WalStats {
            records: self.records - before.records,
            bytes: self.bytes - before.bytes,
            flushes: self.flushes - before.flushes,
            syncs: self.syncs - before.syncs,
            waits: self.waits - before.waits,
            forced_flushes: self.forced_flushes - before.forced_flushes,
        }
    }
}

/// [`WalStats`] as the log counts them: atomics, so that appends share no lock for them.
#[derive(Default)]
struct Counters {
    records: AtomicU64,
    bytes: AtomicU64,
    flushes: AtomicU64,
    syncs: AtomicU64,
    waits: AtomicU64,
    forced_flushes: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WalStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WalStats {
            records: get(&self.records),
            bytes: get(&self.bytes),
            flushes: get(&self.flushes),
            syncs: get(&self.syncs),
            waits: get(&self.waits),
            forced_flushes: get(&self.forced_flushes),
        }
    }

    /// A flush and its sync, by `by`.
    fn flushed(&self, by: By) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        if by == By::Waiter {
            self.forced_flushes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Who flushes: the background flusher, or a caller that waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    Flusher,
    Waiter,
}

struct Tail {
    /// LSN of the next record.
    next: Lsn,
    /// DRAM buffer: encoded records from `pending_start` to `next`.
    pending: Vec<u8>,
    pending_start: Lsn,
    /// DRAM buffer: an empty buffer with the capacity of an earlier `pending`, swapped
    /// in when a flush takes `pending` (appends do not regrow it after every flush).
    spare: Vec<u8>,
}

struct Inner {
    file: LogFile,
    ring: Option<NvmRing>,
    buffer_bytes: usize,
    tail: Mutex<Tail>,
    /// Held while moving bytes to the log file.
    flush_lock: Mutex<()>,
    /// Every record below this LSN is durable.
    durable: AtomicU64,
    /// NVM ring: every record below this LSN is in the ring (persisted).
    appended: AtomicU64,
    /// NVM ring: every record below this LSN is durable in the log file (the ring's
    /// header says so); the ring holds the stream from here on.
    ring_flushed: AtomicU64,
    /// Set by a failed write or sync.
    poisoned: Mutex<Option<String>>,
    is_poisoned: AtomicBool,
    stop: AtomicBool,
    wake: (Mutex<bool>, Condvar),
    stats: Counters,
}

/// The write-ahead log.
pub struct Wal {
    inner: Arc<Inner>,
    flusher: Option<JoinHandle<()>>,
    recovered: Recovered,
    /// [`Wal::ring_remade`].
    ring_remade: Option<String>,
    /// [`WalConfig::salvage_damaged_log`].
    salvage: bool,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal").field("dir", &self.inner.file.dir()).field("recovered", &self.recovered).finish()
    }
}

impl Wal {
    /// Opens (or creates) the log: scans it to its last valid record, cuts what follows,
    /// copies records that are only in the NVM ring into the file, and starts the
    /// background flusher.
    ///
    /// # Errors
    /// Device errors; `Config` for an impossible configuration.
    pub fn open(cfg: &WalConfig) -> Result<Wal, WalError> {
        if cfg.buffer_bytes < record::RECORD_BYTES_MAX {
            return Err(WalError::Config {
                what: format!(
                    "a log buffer of {} bytes cannot hold the largest record ({} bytes)",
                    cfg.buffer_bytes,
                    record::RECORD_BYTES_MAX
                ),
            });
        }
        let file = LogFile::open(&cfg.file)?;
        let mut ring_remade = None;
        let ring = match &cfg.buffer {
            LogBuffer::Dram => None,
            LogBuffer::Nvm(n) => {
                let (ring, remade) = open_ring(n, &file, cfg.ring_init)?;
                ring_remade = remade;
                if ring.capacity() < 2 * record::RECORD_BYTES_MAX as u64 {
                    return Err(WalError::Config {
                        what: format!(
                            "an NVM log ring of {} bytes cannot hold two of the largest records",
                            ring.capacity()
                        ),
                    });
                }
                Some(ring)
            }
        };
        let recovered = recover(&file, ring.as_ref(), cfg)?;
        let end = recovered.end;
        let inner = Arc::new(Inner {
            file,
            ring,
            buffer_bytes: cfg.buffer_bytes,
            tail: Mutex::new(Tail { next: end, pending: Vec::new(), pending_start: end, spare: Vec::new() }),
            flush_lock: Mutex::new(()),
            durable: AtomicU64::new(end),
            appended: AtomicU64::new(end),
            ring_flushed: AtomicU64::new(end),
            poisoned: Mutex::new(None),
            is_poisoned: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            stats: Counters::default(),
        });
        let bg = Arc::clone(&inner);
        let interval = cfg.flush_interval;
        let flusher = std::thread::Builder::new()
            .name("tierdb-wal-flusher".into())
            .spawn(move || bg.flusher(interval))
            .map_err(|e| WalError::Config { what: format!("cannot start the log flusher thread: {e}") })?;
        Ok(Wal { inner, flusher: Some(flusher), recovered, ring_remade, salvage: cfg.salvage_damaged_log })
    }

    /// What recovery found when the log was opened.
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    /// The NVM ring of a cleanly closed log could not be used and was made afresh at
    /// open, and why that lost nothing ([`RingInit::ClosedAt`]).
    pub fn ring_remade(&self) -> Option<&str> {
        self.ring_remade.as_deref()
    }

    /// True if the log buffer is in NVM (appends are durable at once).
    pub fn buffer_in_nvm(&self) -> bool {
        self.inner.ring.is_some()
    }

    /// LSN the next record gets.
    pub fn next_lsn(&self) -> Lsn {
        self.inner.tail.lock().next
    }

    /// Every record below this LSN is durable.
    pub fn durable_lsn(&self) -> Lsn {
        self.inner.durable.load(Ordering::Acquire)
    }

    /// LSN of the oldest record held.
    pub fn start_lsn(&self) -> Lsn {
        self.inner.file.start()
    }

    /// The counters since the log was opened (a snapshot; take two and use
    /// [`WalStats::since`] for an interval).
    pub fn stats(&self) -> WalStats {
        self.inner.stats.snapshot()
    }

    /// The log device (its counters, its directory).
    pub fn file(&self) -> &LogFile {
        &self.inner.file
    }

    /// Appends a record and returns its LSN. With the log buffer in NVM it is durable
    /// when this returns.
    ///
    /// # Errors
    /// `TooLarge`; `Poisoned` after an earlier failure; device errors (which poison).
    pub fn append(&self, head: &RecordHead, payload: &[u8]) -> Result<Lsn, WalError> {
        self.inner.append(head, payload)
    }

    /// Waits until every record below `lsn` is durable, flushing if needed (one flush
    /// serves every waiter whose records it covers).
    ///
    /// # Errors
    /// `Poisoned`; device errors (which poison).
    pub fn flush_until(&self, lsn: Lsn) -> Result<(), WalError> {
        self.inner.flush_until(lsn, By::Waiter)
    }

    /// Makes a commit whose commit record ends at `lsn_end` as durable as `durability`
    /// asks.
    ///
    /// # Errors
    /// As [`flush_until`](Self::flush_until).
    pub fn commit(&self, lsn_end: Lsn, durability: Durability) -> Result<(), WalError> {
        match durability {
            Durability::Sync => self.flush_until(lsn_end),
            Durability::Group | Durability::None => self.inner.check_poison(),
        }
    }

    /// `Poisoned` once a write or sync of the log has failed: every later append,
    /// flush and commit fails the same way, and what the log holds is known only after
    /// it is reopened.
    ///
    /// # Errors
    /// `Poisoned`, saying what failed and up to where the log is durable.
    pub fn check(&self) -> Result<(), WalError> {
        self.inner.check_poison()
    }

    /// Whether the log was opened with [`WalConfig::salvage_damaged_log`].
    pub fn salvaging(&self) -> bool {
        self.salvage
    }

    /// Appends [`Kind::Filler`] records until the next LSN is above `lsn`, and makes
    /// them durable: a salvaged database whose page carries an LSN the damaged log no
    /// longer reaches moves the log past it (`wal::damage`).
    ///
    /// # Errors
    /// `SkipTooFar` past [`SKIP_BYTES_MAX`]; as [`append`](Self::append) and
    /// [`flush_until`](Self::flush_until).
    pub fn skip_past(&self, lsn: Lsn) -> Result<(), WalError> {
        let gap = lsn.saturating_sub(self.next_lsn());
        if gap > SKIP_BYTES_MAX {
            return Err(WalError::SkipTooFar { lsn, gap, max: SKIP_BYTES_MAX });
        }
        loop {
            let next = self.next_lsn();
            if next > lsn {
                break;
            }
            let gap = (lsn + 1 - next) as usize;
            let payload = gap.saturating_sub(record::HEADER_BYTES).min(record::PAYLOAD_BYTES_MAX);
            self.append(&RecordHead::new(Kind::Filler, 0, 0), &vec![0u8; payload])?;
        }
        self.flush_until(self.next_lsn())
    }

    /// Reads the record at `lsn`, wherever it is (log file, DRAM buffer, NVM ring).
    ///
    /// # Errors
    /// `NoRecord` if no valid record starts there; device errors.
    pub fn read(&self, lsn: Lsn) -> Result<Record, WalError> {
        self.inner.read(lsn)
    }

    /// The records from `lsn` (a record boundary) to the end of what was appended.
    /// The part in the log file is read ahead in chunks of `SCAN_CHUNK_BYTES` (1 MiB; a
    /// recovery pass reads the log sequentially, not a device read per record); the
    /// rest comes from the log buffer.
    pub fn records_from(&self, lsn: Lsn) -> Records<'_> {
        Records { wal: self, at: lsn, end: self.next_lsn(), scan: FileScan::new(lsn) }
    }

    /// Deletes log segments that hold only records below `lsn` (a checkpoint's bound).
    ///
    /// # Errors
    /// Device errors.
    pub fn truncate_before(&self, lsn: Lsn) -> Result<usize, WalError> {
        let durable = self.durable_lsn();
        Ok(self.inner.file.truncate_before(lsn.min(durable))?)
    }

    /// Flushes everything ([`finish`](Self::finish)) and stops the background flusher.
    ///
    /// # Errors
    /// As [`finish`](Self::finish).
    pub fn close(mut self) -> Result<(), WalError> {
        let r = self.finish();
        self.stop_flusher();
        r
    }

    /// Makes every record appended durable, as closing does. After the log failed, a
    /// failed write or sync left its records in the DRAM buffer (commits acknowledged
    /// with [`Durability::Group`] among them): this makes one last attempt to write them
    /// where the log file was last synced, and to sync (a failed sync may have dropped
    /// written pages from the page cache, so they are written again from memory, not
    /// only synced again). The log still refuses every other operation.
    ///
    /// # Errors
    /// `Poisoned` if the log failed, saying whether the records held in memory were
    /// written now or are lost; device errors of the flush.
    pub fn finish(&self) -> Result<(), WalError> {
        let r = self.inner.flush_until(u64::MAX, By::Waiter);
        let Err(WalError::Poisoned { cause }) = self.inner.check_poison() else { return r };
        let cause = match self.inner.write_retained() {
            Ok(None) => cause,
            Ok(Some((from, to))) => format!(
                "{cause}; on closing, the records held in memory since (LSN {from}..{to}) were written and synced"
            ),
            Err(e) => {
                let t = self.inner.tail.lock();
                format!(
                    "{cause}; on closing, the records held in memory since (LSN {}..{}) could not be written \
                     either ({e}): they are lost, commits acknowledged with group durability among them",
                    t.pending_start, t.next
                )
            }
        };
        Err(WalError::Poisoned { cause })
    }

    fn stop_flusher(&mut self) {
        self.inner.stop.store(true, Ordering::Release);
        {
            let (m, cv) = &self.inner.wake;
            *m.lock() = true;
            cv.notify_all();
        }
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.stop_flusher();
    }
}

/// An iterator over records, oldest first.
pub struct Records<'a> {
    wal: &'a Wal,
    at: Lsn,
    end: Lsn,
    scan: FileScan,
}

impl Records<'_> {
    /// The record at `self.at` from the log file read ahead; `None` where the file
    /// cannot tell (the record is not wholly in the file, or the bytes are not a
    /// record): the caller then reads it the ordinary way, which names what is wrong.
    fn read_ahead(&mut self) -> Result<Option<Record>, WalError> {
        let file = &self.wal.inner.file;
        let file_end = file.end();
        if self.at >= file_end || self.at < file.start() {
            return Ok(None);
        }
        Ok(self.scan.decode(file, self.at, file_end)?.ok())
    }
}

/// The log file read forward in chunks of [`SCAN_CHUNK_BYTES`]: the record at an LSN is
/// decoded from bytes read ahead, and more are read (the unread rest kept) while the
/// bytes end inside it. Opening the log and recovery's pass both scan this way.
struct FileScan {
    /// The stream bytes `buf_at..buf_at + buf.len()`.
    buf: Vec<u8>,
    buf_at: Lsn,
}

impl FileScan {
    fn new(at: Lsn) -> FileScan {
        FileScan { buf: Vec::new(), buf_at: at }
    }

    /// The record that starts at `at`, or why the file's bytes from `at` up to
    /// `file_end` are not one.
    fn decode(
        &mut self,
        file: &LogFile,
        at: Lsn,
        file_end: Lsn,
    ) -> Result<Result<Record, record::Invalid>, DeviceError> {
        if at < self.buf_at || at > self.buf_at + self.buf.len() as u64 {
            self.buf.clear();
            self.buf_at = at;
        }
        loop {
            let off = (at - self.buf_at) as usize;
            match record::decode(at, &self.buf[off..]) {
                Err(record::Invalid::Short { .. } | record::Invalid::Truncated { .. })
                    if self.buf_at + (self.buf.len() as u64) < file_end =>
                {
                    // Read more: keep the unread rest, append the next chunk.
                    self.buf.drain(..off);
                    self.buf_at = at;
                    let have = self.buf.len();
                    let want = (file_end - (at + have as u64)).min(SCAN_CHUNK_BYTES as u64) as usize;
                    self.buf.resize(have + want, 0);
                    let n = file.read(at + have as u64, &mut self.buf[have..])?;
                    self.buf.truncate(have + n);
                    if n == 0 {
                        return Ok(record::decode(at, &self.buf));
                    }
                }
                r => return Ok(r),
            }
        }
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Record, WalError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let got = match self.read_ahead() {
            Ok(Some(r)) => Ok(r),
            Ok(None) => self.wal.read(self.at),
            Err(e) => Err(e),
        };
        match got {
            Ok(r) => {
                self.at = r.next_lsn();
                Some(Ok(r))
            }
            Err(e) => {
                self.at = self.end;
                Some(Err(e))
            }
        }
    }
}

impl Inner {
    fn check_poison(&self) -> Result<(), WalError> {
        if self.is_poisoned.load(Ordering::Acquire) {
            let cause = self.poisoned.lock().clone().unwrap_or_default();
            return Err(WalError::Poisoned { cause });
        }
        Ok(())
    }

    fn poison<T>(&self, e: DeviceError) -> Result<T, WalError> {
        let durable = self.durable.load(Ordering::Acquire);
        *self.poisoned.lock() = Some(format!("{e}; records below LSN {durable} are durable"));
        self.is_poisoned.store(true, Ordering::Release);
        Err(e.into())
    }

    fn append(&self, head: &RecordHead, payload: &[u8]) -> Result<Lsn, WalError> {
        self.check_poison()?;
        if payload.len() > record::PAYLOAD_BYTES_MAX {
            return Err(WalError::TooLarge { len: payload.len(), max: record::PAYLOAD_BYTES_MAX });
        }
        let len = record::encoded_len(payload.len());
        let (lsn, flush) = match &self.ring {
            None => {
                let mut t = self.tail.lock();
                let lsn = t.next;
                let at = t.pending.len();
                t.pending.resize(at + len, 0);
                record::encode_into(lsn, head, payload, &mut t.pending[at..]);
                t.next += len as u64;
                (lsn, t.pending.len() > self.buffer_bytes)
            }
            Some(ring) => {
                let mut t = self.tail.lock();
                let lsn = t.next;
                // Room: the ring holds the stream from the flushed LSN on.
                if lsn + len as u64 > self.ring_flushed.load(Ordering::Acquire) + ring.capacity() {
                    self.flush_ring(By::Waiter)?;
                }
                // Small records are encoded on the stack.
                let mut small = [0u8; SMALL_RECORD_BYTES];
                let mut large = Vec::new();
                let buf = if len <= SMALL_RECORD_BYTES {
                    &mut small[..len]
                } else {
                    large.resize(len, 0);
                    &mut large[..]
                };
                record::encode_into(lsn, head, payload, buf);
                if let Err(e) = ring.write(lsn, buf) {
                    return self.poison(e);
                }
                t.next += len as u64;
                self.appended.store(t.next, Ordering::Release);
                self.durable.store(t.next, Ordering::Release);
                (lsn, false)
            }
        };
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
        if flush {
            self.flush_until(lsn + len as u64, By::Waiter)?;
        }
        Ok(lsn)
    }

    fn flush_until(&self, lsn: Lsn, by: By) -> Result<(), WalError> {
        self.check_poison()?;
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        if self.ring.is_some() {
            // Everything appended is durable already; `lsn` past the end asks for a
            // flush of the ring into the file (closing).
            return self.flush_ring(by);
        }
        if by == By::Waiter {
            self.stats.waits.fetch_add(1, Ordering::Relaxed);
        }
        let _f = self.flush_lock.lock();
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(()); // a flush that ran while we waited covered us
        }
        self.check_poison()?;
        let (start, mut bytes, end) = {
            let mut t = self.tail.lock();
            let spare = std::mem::take(&mut t.spare);
            let bytes = std::mem::replace(&mut t.pending, spare);
            let start = t.pending_start;
            t.pending_start = t.next;
            (start, bytes, t.next)
        };
        if !bytes.is_empty() {
            if let Err(e) = self.file.append(start, &bytes).and_then(|()| self.file.sync()) {
                // The records stay in the buffer, ahead of any appended meanwhile: the
                // log refuses all work from now on, but closing it makes one last
                // attempt to write them ([`Wal::finish`]).
                let mut t = self.tail.lock();
                bytes.extend_from_slice(&t.pending);
                t.pending = bytes;
                t.pending_start = start;
                drop(t);
                return self.poison(e);
            }
            self.stats.flushed(by);
        }
        self.durable.store(end, Ordering::Release);
        bytes.clear();
        self.tail.lock().spare = bytes;
        Ok(())
    }

    /// After the log failed: writes the records a failed flush left in the DRAM buffer
    /// (and any appended before the failure was known) where the log file was last
    /// synced, and syncs; the one retry of a failed log ([`Wal::finish`]). Returns the
    /// LSNs written, `None` if there were none.
    fn write_retained(&self) -> Result<Option<(Lsn, Lsn)>, DeviceError> {
        if self.ring.is_some() {
            return Ok(None); // the ring's records are durable; recovery copies them
        }
        let _f = self.flush_lock.lock();
        let mut t = self.tail.lock();
        let (from, to) = (t.pending_start, t.next);
        debug_assert_eq!(from, self.durable.load(Ordering::Acquire), "retained records start where the log is durable");
        if from == to {
            return Ok(None);
        }
        self.file.rewrite(from, &t.pending)?;
        t.pending.clear();
        t.pending_start = to;
        self.durable.store(to, Ordering::Release);
        Ok(Some((from, to)))
    }

    /// Moves the ring's unflushed bytes to the log file, syncs, and frees them.
    fn flush_ring(&self, by: By) -> Result<(), WalError> {
        let ring = self.ring.as_ref().expect("flush_ring needs the ring");
        let _f = self.flush_lock.lock();
        let from = self.file.end();
        let to = self.appended.load(Ordering::Acquire);
        if to <= from {
            return Ok(());
        }
        let mut buf = vec![0u8; (to - from).min(SCAN_CHUNK_BYTES as u64 * 4) as usize];
        let mut at = from;
        while at < to {
            let n = ((to - at) as usize).min(buf.len());
            ring.read(at, &mut buf[..n])?;
            if let Err(e) = self.file.append(at, &buf[..n]) {
                return self.poison(e);
            }
            at += n as u64;
        }
        if let Err(e) = self.file.sync() {
            return self.poison(e);
        }
        if let Err(e) = ring.set_flushed(to) {
            return self.poison(e);
        }
        self.ring_flushed.store(to, Ordering::Release);
        self.stats.flushed(by);
        Ok(())
    }

    fn flusher(&self, interval: Duration) {
        let (m, cv) = &self.wake;
        loop {
            {
                let mut woken = m.lock();
                if !*woken {
                    cv.wait_for(&mut woken, interval);
                }
                *woken = false;
            }
            if self.stop.load(Ordering::Acquire) || self.is_poisoned.load(Ordering::Acquire) {
                return;
            }
            // Errors poison the log; committers see them.
            let _ = match &self.ring {
                None => {
                    let next = self.tail.lock().next;
                    self.flush_until(next, By::Flusher)
                }
                Some(_) => self.flush_ring(By::Flusher),
            };
        }
    }

    fn read(&self, lsn: Lsn) -> Result<Record, WalError> {
        let no = |why: String| WalError::NoRecord { lsn, why };
        if lsn < self.file.start() {
            return Err(no(format!("the log was truncated before {}", self.file.start())));
        }
        let mut head = [0u8; record::HEADER_BYTES];
        let file_end = self.file.end();
        let fetch = |at: Lsn, buf: &mut [u8]| -> Result<(), WalError> {
            if at + buf.len() as u64 <= file_end {
                let n = self.file.read(at, buf)?;
                if n < buf.len() {
                    return Err(WalError::NoRecord { lsn, why: "past the end of the log file".into() });
                }
                return Ok(());
            }
            match &self.ring {
                Some(ring) => Ok(ring.read(at, buf)?),
                None => {
                    let t = self.tail.lock();
                    let s = at.checked_sub(t.pending_start).map(|s| s as usize);
                    match s.filter(|s| s + buf.len() <= t.pending.len()) {
                        Some(s) => {
                            buf.copy_from_slice(&t.pending[s..s + buf.len()]);
                            Ok(())
                        }
                        // Taken by a flush meanwhile: once the flush lock is free, the
                        // bytes are in the file.
                        None => {
                            drop(t);
                            drop(self.flush_lock.lock());
                            let n = self.file.read(at, buf)?;
                            if n < buf.len() {
                                return Err(WalError::NoRecord { lsn, why: "past the end of the log".into() });
                            }
                            Ok(())
                        }
                    }
                }
            }
        };
        fetch(lsn, &mut head)?;
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        if !(record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len) {
            return Err(no(format!("length field {len}")));
        }
        let mut buf = vec![0u8; len];
        fetch(lsn, &mut buf)?;
        record::decode(lsn, &buf).map_err(|e| no(e.to_string()))
    }
}

/// Opens the NVM ring `n` as `init` allows (see [`RingInit`]). Returns it and, when a
/// ring that could not be used was made afresh, why nothing was lost.
fn open_ring(n: &NvmConfig, file: &LogFile, init: RingInit) -> Result<(NvmRing, Option<String>), WalError> {
    if init == RingInit::New {
        return Ok((NvmRing::open_or_format(NvmRegion::open(n)?, file.end())?, None));
    }
    // 1. The ring as it is: never created, never formatted.
    let mut existing = n.clone();
    existing.open_mode = OpenMode::Open;
    let why = match NvmRegion::open(&existing).and_then(NvmRing::open) {
        Ok(ring) => return Ok((ring, None)),
        Err(DeviceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            "the file is missing".to_string()
        }
        Err(DeviceError::SizeMismatch { file_bytes, config_bytes, .. }) => {
            format!("the file has {file_bytes} bytes, not the {config_bytes} configured (truncated?)")
        }
        Err(DeviceError::Corrupted { detail, .. }) => detail,
        Err(e) => return Err(e.into()),
    };
    // 2. Made afresh only when the log file provably holds every record: the last
    //    close moved the whole ring into it, and nothing was appended since.
    let RingInit::ClosedAt(closed_end) = init else {
        return Err(WalError::RingLost { path: n.path.clone(), why });
    };
    let file_end = file.end();
    if file_end != closed_end {
        let why = format!(
            "{why}; the log was closed cleanly at LSN {closed_end}, but the log file ends at {file_end}, so the \
             ring may have held records the file lacks"
        );
        return Err(WalError::RingLost { path: n.path.clone(), why });
    }
    match std::fs::remove_file(&n.path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(DeviceError::Io { op: "remove", path: n.path.clone(), source: e }.into()),
    }
    let mut fresh = n.clone();
    fresh.open_mode = OpenMode::Create;
    let ring = NvmRing::format(NvmRegion::open(&fresh)?, file_end)?;
    let note = format!(
        "the NVM log buffer {} could not be used ({why}); the log was closed cleanly at LSN {closed_end} with \
         every record in the log file, which still ends there: made afresh",
        n.path.display()
    );
    Ok((ring, Some(note)))
}

/// Scans the log file (and then the ring) from its start to the last valid record,
/// cuts the file there if what follows is a torn tail (`wal::damage`; else an error, or
/// with salvage a reported cut), and appends the ring's further records to the file.
fn recover(file: &LogFile, ring: Option<&NvmRing>, cfg: &WalConfig) -> Result<Recovered, WalError> {
    let start = file.start();
    let file_end = file.end();
    let mut records = 0u64;
    let mut at = start;
    // 1. The log file, to its first bytes that are not a record.
    let mut scan = FileScan::new(start);
    let invalid = loop {
        match scan.decode(file, at, file_end)? {
            Ok(r) => {
                at = r.next_lsn();
                records += 1;
            }
            Err(e) => break e,
        }
    };
    let file_valid = at;
    // 2. The ring: records past the file's valid end, which the flusher had not moved
    //    yet (or whose copy in the file is torn). Read only; written in step 5.
    let mut from_ring = 0u64;
    let mut copy = Vec::new();
    let ring_flushed = ring.map(NvmRing::flushed).transpose()?;
    if let Some(ring) = ring {
        let mut head = [0u8; record::HEADER_BYTES];
        // Records name their LSN, so stale ring bytes (an older pass) end the loop; a
        // pass holds at most one ring's worth of stream.
        loop {
            ring.read(at, &mut head)?;
            let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
            if !(record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len)
                || at + len as u64 > file_valid + ring.capacity()
            {
                break;
            }
            let mut rec = vec![0u8; len];
            ring.read(at, &mut rec)?;
            if record::decode(at, &rec).is_err() {
                break;
            }
            copy.extend_from_slice(&rec);
            at += len as u64;
            from_ring += 1;
        }
    }
    // 3. May the log end there? Nothing is changed before this is decided.
    let end =
        damage::LogEnd { file_valid, invalid: &invalid, file_end, end: at, valid_past: cfg.valid_past, ring_flushed };
    let damage = damage::assess(file, &end)?;
    let mut tail = None;
    if let Some(d) = &damage {
        if !cfg.salvage_damaged_log {
            return Err(WalError::Corrupted {
                file: d.file.clone(),
                offset: d.offset,
                lsn: d.lsn,
                detail: d.detail.clone(),
            });
        }
    } else if file_valid < file_end {
        tail = Some(format!(
            "log file: bytes {file_valid}..{file_end} after the last valid record are not a record ({invalid}); cut"
        ));
    }
    // 4. Cut the file after its last valid record.
    if file_valid < file_end {
        file.cut(file_valid)?;
    }
    // 5. The ring's records into the file.
    if !copy.is_empty() {
        file.append(file_valid, &copy)?;
        file.sync()?;
    }
    // 6. Salvage: LSNs continue past every byte the log held, so that none is handed
    //    out again below a page's LSN (`wal::damage`).
    let salvaged = damage.is_some();
    if let Some(d) = damage {
        let past = file_end.max(cfg.valid_past + 1).max(ring_flushed.unwrap_or(0));
        let resumed = damage::fill(file, at, past)?;
        tail = Some(format!(
            "salvaged: log file {} damaged at byte {} (LSN {}): {}; cut, {} bytes of the log dropped, the stream \
             continues at LSN {resumed} after filler records",
            d.file.display(),
            d.offset,
            d.lsn,
            d.detail,
            file_end.saturating_sub(at),
        ));
        at = resumed;
    }
    if let Some(ring) = ring {
        ring.set_flushed(at)?;
        records += from_ring;
    }
    let salvaged = salvaged.then_some(file_valid);
    Ok(Recovered { start, end: at.max(LOG_STREAM_START), records, from_ring, tail, salvaged })
}

#[cfg(test)]
mod tests;
