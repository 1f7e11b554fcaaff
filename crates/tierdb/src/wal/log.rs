//! The log handle, [`Wal`]: opening (recovery, then the background flusher), the
//! public operations, closing. It owns the shared state (`state::Inner`) behind an
//! `Arc` that the flusher thread also holds; every operation delegates to the write
//! path (`append`) or the read path (`read`).
//!
//! Concurrency: `Wal` is `Sync`; appends, flushes and reads may run from many threads.
//! Dropping or closing it stops the flusher and joins it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::config::{Durability, LogBuffer, SKIP_BYTES_MAX, WalConfig};
use super::error::WalError;
use super::read::Records;
use super::record::{self, Kind, Lsn, Record, RecordHead};
use super::recover::{Recovered, open_ring, recover};
use super::state::{By, Counters, Inner, Tail, WalStats};
use crate::device::LogFile;
use crate::ids::AtomicLsn;

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
        // Appending continues at the end of the log file: every record is in it.
        assert_eq!(end, file.end(), "recovery ends the log at LSN {end}, the log file at {}", file.end());
        let inner = Arc::new(Inner {
            file,
            ring,
            buffer_bytes: cfg.buffer_bytes,
            tail: Mutex::new(Tail { next: end, pending: Vec::new(), pending_start: end, spare: Vec::new() }),
            flush_lock: Mutex::new(()),
            durable: AtomicU64::new(end.get()),
            appended: AtomicU64::new(end.get()),
            ring_flushed: AtomicU64::new(end.get()),
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
    /// open, and why that lost nothing ([`RingInit::ClosedAt`](super::RingInit::ClosedAt)).
    pub fn ring_remade(&self) -> Option<&str> {
        self.ring_remade.as_deref()
    }

    /// The NVM region of the log buffer's ring (`None`: the buffer is in DRAM), for its
    /// wear counters and device statistics.
    pub fn nvm_ring_region(&self) -> Option<&crate::device::NvmRegion> {
        self.inner.ring.as_ref().map(crate::device::NvmRing::region)
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
        self.inner.durable.load_lsn(Ordering::Acquire)
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
        let gap = lsn.saturating_bytes_since(self.next_lsn());
        if gap > SKIP_BYTES_MAX {
            return Err(WalError::SkipTooFar { lsn, gap, max: SKIP_BYTES_MAX });
        }
        loop {
            let next = self.next_lsn();
            if next > lsn {
                break;
            }
            let gap = lsn.advance(1).bytes_since(next) as usize;
            let payload = gap.saturating_sub(record::HEADER_BYTES).min(record::PAYLOAD_BYTES_MAX);
            self.append(&RecordHead::new(Kind::Filler, 0, Lsn::NONE), &vec![0u8; payload])?;
            debug_assert!(self.next_lsn() > next, "a filler record at LSN {next} did not move the log");
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
        Records::new(&self.inner, lsn, self.next_lsn())
    }

    /// Deletes log segments that hold only records below `lsn` (a checkpoint's bound).
    ///
    /// # Errors
    /// Device errors.
    pub fn truncate_before(&self, lsn: Lsn) -> Result<usize, WalError> {
        let durable = self.durable_lsn();
        // Durable never passes appended: segments holding records not yet durable stay.
        debug_assert!(durable <= self.next_lsn(), "durable LSN {durable} past the next LSN {}", self.next_lsn());
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
        let r = self.inner.flush_until(Lsn::MAX, By::Waiter);
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
