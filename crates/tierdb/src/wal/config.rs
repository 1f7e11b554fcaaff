//! What opening a log is asked for: where the log buffer lives ([`LogBuffer`]), what a
//! commit waits for ([`Durability`]), whether an NVM ring may be made ([`RingInit`]),
//! and the limits and defaults of the log.
//!
//! Plain data: no locks, no I/O. The limits here bound what the write and read paths
//! hold in memory at once (a scan chunk, a small record on the stack).

use std::time::Duration;

use serde::Serialize;

use super::error::WalError;
use super::record::Lsn;
use crate::device::{LogFileConfig, NvmConfig};

/// Where the log buffer lives.
#[derive(Clone, Debug, PartialEq)]
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

/// Whether [`Wal::open`](super::Wal::open) may make a new NVM ring (`device::log_ring`): an existing
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
    /// in [`Wal::ring_remade`](super::Wal::ring_remade)), else as `Existing`.
    ClosedAt(Lsn),
}

/// How to open a WAL.
#[derive(Clone, Debug, PartialEq)]
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
    /// [`Recovered::tail`](super::Recovered::tail) and [`Recovered::salvaged`](super::Recovered::salvaged), and LSNs continue past every
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
/// The most [`Wal::skip_past`](super::Wal::skip_past) skips: a salvaged log is moved past a page's LSN only as
/// far as a log could have reached beyond what is left of it.
pub const SKIP_BYTES_MAX: u64 = 1 << 30;
/// Bytes read from the log file at a time while scanning it.
pub(super) const SCAN_CHUNK_BYTES: usize = 1 << 20;
/// NVM ring: records up to this size are encoded on the stack.
pub(super) const SMALL_RECORD_BYTES: usize = 512;
/// NVM ring: the most bytes a flush writes to the log file at a time (its buffer). Each
/// write ends between records, so it holds at least the largest one.
pub(super) const RING_FLUSH_WRITE_BYTES: usize = 4 * SCAN_CHUNK_BYTES;

const _: () =
    assert!(RING_FLUSH_WRITE_BYTES >= super::record::RECORD_BYTES_MAX, "a ring flush's write holds the largest record");

impl WalConfig {
    /// A WAL in directory `dir` with a DRAM log buffer.
    pub fn new(dir: impl Into<std::path::PathBuf>) -> WalConfig {
        WalConfig {
            file: LogFileConfig::new(dir),
            buffer: LogBuffer::Dram,
            buffer_bytes: BUFFER_BYTES_DEFAULT,
            flush_interval: FLUSH_INTERVAL_DEFAULT,
            valid_past: Lsn::NONE,
            salvage_damaged_log: false,
            ring_init: RingInit::New,
        }
    }
}
