//! The one error of the log layer: what `Wal` returns, converted into the crate's
//! `Error` at the API. Device errors pass through as [`WalError::Device`]; a failed
//! write or sync is reported once as the device error and then as `Poisoned`.

use super::record::Lsn;
use crate::device::DeviceError;

/// Errors of the WAL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// An error of the log file or the NVM ring. A failed write or sync also poisons
    /// the log (later calls return `Poisoned`); a failed read does not.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// [`Wal::open`](super::Wal::open) was given a configuration it cannot work with (a DRAM buffer or
    /// NVM ring too small for the largest records), or could not start its flusher
    /// thread; also an unknown [`Durability`](super::Durability) name.
    #[error("WAL configuration: {what}")]
    Config {
        /// What is wrong, with the values involved.
        what: String,
    },
    /// [`Wal::append`](super::Wal::append) of a payload longer than [`record::PAYLOAD_BYTES_MAX`](super::record::PAYLOAD_BYTES_MAX).
    #[error("a log record of {len} bytes is larger than the {max}-byte limit")]
    TooLarge {
        /// The payload's length in bytes.
        len: usize,
        /// The payload limit in bytes, [`record::PAYLOAD_BYTES_MAX`](super::record::PAYLOAD_BYTES_MAX).
        max: usize,
    },
    /// An earlier write or sync of the log failed: every later append, flush and
    /// commit is refused until the log is reopened and recovered.
    #[error("the log failed earlier ({cause}); reopen the database to recover")]
    Poisoned {
        /// The failure that poisoned the log and the LSN below which records are
        /// durable (and, from [`Wal::finish`](super::Wal::finish), what became of the records in memory).
        cause: String,
    },
    /// [`Wal::read`](super::Wal::read) found no valid record starting at the LSN: truncated away, past
    /// the end, or bytes that do not decode as the record for that LSN.
    #[error("no log record at LSN {lsn}: {why}")]
    NoRecord {
        /// The LSN asked for.
        lsn: Lsn,
        /// Why there is no record there.
        why: String,
    },
    /// Damage in records that were durable (not a torn tail, `wal::damage`): the log is
    /// not cut there unless [`WalConfig::salvage_damaged_log`](super::WalConfig::salvage_damaged_log) says so.
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
    /// [`Wal::skip_past`](super::Wal::skip_past) asked to skip more than [`SKIP_BYTES_MAX`](super::SKIP_BYTES_MAX): no record of this
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
        /// The limit in bytes, [`SKIP_BYTES_MAX`](super::SKIP_BYTES_MAX).
        max: u64,
    },
    /// [`Wal::open`](super::Wal::open) of the log of an existing database ([`RingInit::Existing`](super::RingInit::Existing), or
    /// [`RingInit::ClosedAt`](super::RingInit::ClosedAt) when the log file does not end at that LSN) found its NVM
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
