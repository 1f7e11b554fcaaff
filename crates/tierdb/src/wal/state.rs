//! The state shared by appenders, the background flusher and readers of the log: the
//! tail (next LSN and the DRAM buffer), the durable and appended LSNs, the poison flag
//! and the counters.
//!
//! Invariants: `durable <= next`; with the NVM ring, `ring_flushed <= appended ==
//! durable == next` between appends, and the ring holds the stream from
//! `ring_flushed` on; with the DRAM buffer, `pending` holds exactly the bytes
//! `pending_start..next`.
//!
//! Concurrency: `tail` is taken for every append (short); `flush_lock` is held while
//! bytes move to the log file, so one flush serves every waiter it covers; the LSNs are
//! atomics read without either lock (Acquire/Release pairs with the stores under them).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use super::error::WalError;
use super::record::Lsn;
use crate::device::{DeviceError, LogFile, NvmRing};

/// Counters of a WAL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalStats {
    /// Records appended through [`Wal::append`](super::Wal::append) since the log was opened (not those
    /// recovery copied from the ring or wrote as filler).
    pub records: u64,
    /// Bytes appended: encoded records, headers and padding included.
    pub bytes: u64,
    /// Writes of the log buffer to the log file (each followed by a sync).
    pub flushes: u64,
    /// Syncs of the log file after flushes; equal to `flushes` (recovery's syncs and
    /// the last-attempt write of [`Wal::finish`](super::Wal::finish) are not counted).
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
pub(super) struct Counters {
    pub(super) records: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) flushes: AtomicU64,
    pub(super) syncs: AtomicU64,
    pub(super) waits: AtomicU64,
    pub(super) forced_flushes: AtomicU64,
}

impl Counters {
    pub(super) fn snapshot(&self) -> WalStats {
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
    pub(super) fn flushed(&self, by: By) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        if by == By::Waiter {
            self.forced_flushes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Who flushes: the background flusher, or a caller that waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum By {
    Flusher,
    Waiter,
}

pub(super) struct Tail {
    /// LSN of the next record.
    pub(super) next: Lsn,
    /// DRAM buffer: encoded records from `pending_start` to `next`.
    pub(super) pending: Vec<u8>,
    pub(super) pending_start: Lsn,
    /// DRAM buffer: an empty buffer with the capacity of an earlier `pending`, swapped
    /// in when a flush takes `pending` (appends do not regrow it after every flush).
    pub(super) spare: Vec<u8>,
}

pub(super) struct Inner {
    pub(super) file: LogFile,
    pub(super) ring: Option<NvmRing>,
    pub(super) buffer_bytes: usize,
    pub(super) tail: Mutex<Tail>,
    /// Held while moving bytes to the log file.
    pub(super) flush_lock: Mutex<()>,
    /// Every record below this LSN is durable.
    pub(super) durable: AtomicU64,
    /// NVM ring: every record below this LSN is in the ring (persisted).
    pub(super) appended: AtomicU64,
    /// NVM ring: every record below this LSN is durable in the log file (the ring's
    /// header says so); the ring holds the stream from here on.
    pub(super) ring_flushed: AtomicU64,
    /// Set by a failed write or sync.
    pub(super) poisoned: Mutex<Option<String>>,
    pub(super) is_poisoned: AtomicBool,
    pub(super) stop: AtomicBool,
    pub(super) wake: (Mutex<bool>, Condvar),
    pub(super) stats: Counters,
}

impl Inner {
    pub(super) fn check_poison(&self) -> Result<(), WalError> {
        if self.is_poisoned.load(Ordering::Acquire) {
            let cause = self.poisoned.lock().clone().unwrap_or_default();
            return Err(WalError::Poisoned { cause });
        }
        Ok(())
    }

    pub(super) fn poison<T>(&self, e: DeviceError) -> Result<T, WalError> {
        let durable = self.durable.load(Ordering::Acquire);
        *self.poisoned.lock() = Some(format!("{e}; records below LSN {durable} are durable"));
        self.is_poisoned.store(true, Ordering::Release);
        Err(e.into())
    }
}
