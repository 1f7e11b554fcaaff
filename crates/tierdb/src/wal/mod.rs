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
//! into the file, so that afterwards every record is in the file. Records ([`Record`])
//! are framed in `record.rs` ([`decode_record`]); their meaning (redo and undo) belongs
//! to the layer that logs them.
//!
//! After a failed write or sync the WAL refuses further work (`Poisoned`): what reached
//! the log file is unknown, and only recovery after reopening can tell.

//!
//! The log is split by activity: [`config`](WalConfig) and [`error`](WalError) define
//! what is asked of it and what it returns; `state` holds the state the appenders, the
//! flusher and readers share; `append` is the write path (buffer, ring, flushes),
//! `read` the read path, `recover` what happens at open before the first append, and
//! `log` the [`Wal`] handle that ties them together.

mod append;
mod config;
mod damage;
mod error;
mod log;
pub(crate) mod payload;
mod read;
mod record;
mod recover;
mod state;

pub use config::{
    BUFFER_BYTES_DEFAULT, Durability, FLUSH_INTERVAL_DEFAULT, LogBuffer, RingInit, SKIP_BYTES_MAX, WalConfig,
};
pub use error::WalError;
pub use log::Wal;
pub use read::Records;
pub use record::{Invalid as InvalidRecord, Kind, Lsn, PAYLOAD_BYTES_MAX, Record, RecordHead, decode as decode_record};
pub use recover::Recovered;
pub use state::WalStats;

/// What a buffer manager needs of the log: make every record up to an LSN durable
/// before a page changed by it is written out (the write-ahead rule).
pub trait LogForce: Send + Sync {
    /// Makes the record at `lsn` and every one before it durable.
    ///
    /// # Errors
    /// The log's errors.
    fn force(&self, lsn: Lsn) -> Result<(), WalError>;

    /// Appends an image of page `pid` (not yet durable: [`force`](Self::force) it) before
    /// the page is written over its only durable copy — an NVM frame of a database with
    /// no SSD below, where a crash in the middle of the write would leave neither the
    /// old page nor the new one. Redo rebuilds such a page from its last image and the
    /// changes after it. Returns the image's LSN; `None` if this log keeps no images
    /// (the plain [`Wal`]: the write then goes unprotected).
    ///
    /// # Errors
    /// The log's errors.
    fn append_image(&self, _pid: crate::ids::PageId, _page: &[u8]) -> Result<Option<Lsn>, WalError> {
        Ok(None)
    }

    /// The log's LSN now: the next record's. A page written to SSD records it as its
    /// last-flush LSN ([`Lsn::NONE`]: unknown, the default).
    fn end_lsn(&self) -> Lsn {
        Lsn::NONE
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
    fn note_flushed(&self, _pages: &[(crate::ids::PageId, Lsn)]) -> Result<(), WalError> {
        Ok(())
    }
}

impl LogForce for Wal {
    fn force(&self, lsn: Lsn) -> Result<(), WalError> {
        self.flush_until(lsn.advance(1))
    }

    fn end_lsn(&self) -> Lsn {
        self.next_lsn()
    }
}

#[cfg(test)]
mod tests;
