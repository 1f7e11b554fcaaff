//! Per-device operation counters: cheap to bump from many threads, summed on demand.
//!
//! Counters are striped: each thread owns one of [`STATS_STRIPES`] - 1 cache-padded
//! rows (taken on its first count, given back when the thread exits) and bumps it with
//! a plain relaxed load and store, no locked read-modify-write, because no other thread
//! writes that row. Threads beyond that many share the last row and use atomic adds.
//! A snapshot sums the rows with relaxed loads: taken while threads run, each counter
//! is exact as of some moment, the set of them consistent enough for reports.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use serde::{Deserialize, Serialize};

use super::emulation::{OpCost, OpKind};
use crate::limits::{CACHE_LINE_BYTES, STATS_STRIPES};

#[derive(Clone, Copy)]
#[repr(usize)]
enum C {
    Reads,
    ReadBytes,
    ReadLines,
    ReadMediaBytes,
    Writes,
    WriteBytes,
    WriteLines,
    WriteMediaBytes,
    Persists,
    PersistLines,
    Syncs,
    InterferedReads,
    ModelledPs,
    WaitedPs,
}
const COUNTERS: usize = C::WaitedPs as usize + 1;

/// `N` counters striped over threads (see the module doc); shared by the device
/// counters here and the buffer manager's.
pub(crate) struct Striped<const N: usize> {
    stripes: Box<[CachePadded<[AtomicU64; N]>]>,
}

/// The calling thread's row of a [`Striped`].
pub(crate) struct Row<'a, const N: usize> {
    cells: &'a [AtomicU64; N],
    exclusive: bool,
}

impl<const N: usize> Striped<N> {
    pub(crate) fn new() -> Striped<N> {
        let stripes =
            (0..STATS_STRIPES).map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0)))).collect();
        Striped { stripes }
    }

    #[inline]
    pub(crate) fn row(&self) -> Row<'_, N> {
        let stripe = my_stripe();
        Row { cells: &self.stripes[stripe], exclusive: stripe != SHARED_STRIPE }
    }

    /// The sum of all stripes now.
    pub(crate) fn sum(&self) -> [u64; N] {
        let mut sum = [0u64; N];
        for row in self.stripes.iter() {
            for (s, c) in sum.iter_mut().zip(row.iter()) {
                *s = s.wrapping_add(c.load(Ordering::Relaxed));
            }
        }
        sum
    }
}

impl<const N: usize> Row<'_, N> {
    #[inline]
    pub(crate) fn add(&self, i: usize, v: u64) {
        let cell = &self.cells[i];
        if self.exclusive {
            // Only this thread writes the row: load + store loses nothing.
            cell.store(cell.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
        } else {
            cell.fetch_add(v, Ordering::Relaxed);
        }
    }
}

/// A device's counters.
pub struct DeviceStats {
    counts: Striped<COUNTERS>,
}

impl std::fmt::Debug for DeviceStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

/// Counter values at one moment, or the difference between two moments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Read operations.
    pub reads: u64,
    /// Bytes the callers asked to read.
    pub read_bytes: u64,
    /// Cache lines covered by reads.
    pub read_lines: u64,
    /// Bytes the media moved for reads (whole access granules).
    pub read_media_bytes: u64,
    /// Write operations.
    pub writes: u64,
    /// Bytes the callers asked to write.
    pub write_bytes: u64,
    /// Cache lines covered by writes.
    pub write_lines: u64,
    /// Bytes the media moved for writes (whole access granules).
    pub write_media_bytes: u64,
    /// Persist operations (cache-line flushes to the persistence domain).
    pub persists: u64,
    /// Cache lines covered by persists.
    pub persist_lines: u64,
    /// Sync operations (file `fsync`/`fdatasync`).
    pub syncs: u64,
    /// Reads that were slowed by concurrent or recent writes.
    pub interfered_reads: u64,
    /// Modelled device time of all operations, picoseconds.
    pub modelled_ps: u64,
    /// Time spent busy-waiting in `spin` mode, picoseconds.
    pub waited_ps: u64,
}

/// The row threads share once every exclusive row is taken.
const SHARED_STRIPE: usize = STATS_STRIPES - 1;

/// Exclusive rows not held by a live thread.
static FREE_STRIPES: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

/// A thread's row; gives an exclusive row back when the thread exits.
struct StripeLease(usize);

impl StripeLease {
    fn take() -> StripeLease {
        if let Some(i) = FREE_STRIPES.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return StripeLease(i);
        }
        let i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed);
        StripeLease(if i < SHARED_STRIPE { i } else { SHARED_STRIPE })
    }
}

impl Drop for StripeLease {
    fn drop(&mut self) {
        if self.0 != SHARED_STRIPE {
            FREE_STRIPES.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
        }
    }
}

thread_local! {
    static STRIPE: StripeLease = StripeLease::take();
}

#[inline]
fn my_stripe() -> usize {
    // During thread teardown the lease may be gone: count in the shared row then.
    STRIPE.try_with(|s| s.0).unwrap_or(SHARED_STRIPE)
}

/// Cache lines overlapping `[offset, offset + len)`.
#[inline]
pub fn lines_covered(offset: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    let l = CACHE_LINE_BYTES as u64;
    (offset + len - 1) / l - offset / l + 1
}

impl Default for DeviceStats {
    fn default() -> Self {
        Self::new()
    }
}

impl DeviceStats {
    /// All counters at zero.
    pub fn new() -> DeviceStats {
        DeviceStats { counts: Striped::new() }
    }

    /// Counts one operation on `bytes` covering `lines` cache lines
    /// (`lines_covered`; the caller has it already).
    #[inline]
    pub fn record(&self, kind: OpKind, bytes: u64, lines: u64, media_bytes: u64, cost: OpCost) {
        debug_assert!(lines <= bytes.div_ceil(64) + 1, "{lines} lines for {bytes} bytes");
        let row = self.counts.row();
        match kind {
            OpKind::Read => {
                row.add(C::Reads as usize, 1);
                row.add(C::ReadBytes as usize, bytes);
                row.add(C::ReadLines as usize, lines);
                row.add(C::ReadMediaBytes as usize, media_bytes);
                if cost.interfered {
                    row.add(C::InterferedReads as usize, 1);
                }
            }
            OpKind::Write => {
                row.add(C::Writes as usize, 1);
                row.add(C::WriteBytes as usize, bytes);
                row.add(C::WriteLines as usize, lines);
                row.add(C::WriteMediaBytes as usize, media_bytes);
            }
            OpKind::Persist => {
                row.add(C::Persists as usize, 1);
                row.add(C::PersistLines as usize, lines);
            }
            OpKind::Sync => row.add(C::Syncs as usize, 1),
        }
        row.add(C::ModelledPs as usize, cost.modelled_ps);
        if cost.waited_ps != 0 {
            row.add(C::WaitedPs as usize, cost.waited_ps);
        }
    }

    /// Counts time busy-waited in `spin` mode after the operation was recorded.
    #[inline]
    pub fn record_wait(&self, waited_ps: u64) {
        if waited_ps != 0 {
            self.counts.row().add(C::WaitedPs as usize, waited_ps);
        }
    }

    /// The sum of all stripes now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let sum = self.counts.sum();
        let g = |c: C| sum[c as usize];
        StatsSnapshot {
            reads: g(C::Reads),
            read_bytes: g(C::ReadBytes),
            read_lines: g(C::ReadLines),
            read_media_bytes: g(C::ReadMediaBytes),
            writes: g(C::Writes),
            write_bytes: g(C::WriteBytes),
            write_lines: g(C::WriteLines),
            write_media_bytes: g(C::WriteMediaBytes),
            persists: g(C::Persists),
            persist_lines: g(C::PersistLines),
            syncs: g(C::Syncs),
            interfered_reads: g(C::InterferedReads),
            modelled_ps: g(C::ModelledPs),
            waited_ps: g(C::WaitedPs),
        }
    }
}

impl StatsSnapshot {
    /// What happened between `earlier` and `self`.
    ///
    /// # Panics
    /// In debug builds, if any counter of `earlier` is larger (snapshots out of order).
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        let d = |now: u64, then: u64| {
            debug_assert!(now >= then, "counter went back from {then} to {now}");
            now.saturating_sub(then)
        };
        StatsSnapshot {
            reads: d(self.reads, earlier.reads),
            read_bytes: d(self.read_bytes, earlier.read_bytes),
            read_lines: d(self.read_lines, earlier.read_lines),
            read_media_bytes: d(self.read_media_bytes, earlier.read_media_bytes),
            writes: d(self.writes, earlier.writes),
            write_bytes: d(self.write_bytes, earlier.write_bytes),
            write_lines: d(self.write_lines, earlier.write_lines),
            write_media_bytes: d(self.write_media_bytes, earlier.write_media_bytes),
            persists: d(self.persists, earlier.persists),
            persist_lines: d(self.persist_lines, earlier.persist_lines),
            syncs: d(self.syncs, earlier.syncs),
            interfered_reads: d(self.interfered_reads, earlier.interfered_reads),
            modelled_ps: d(self.modelled_ps, earlier.modelled_ps),
            waited_ps: d(self.waited_ps, earlier.waited_ps),
        }
    }

    /// All operations counted.
    pub fn ops(&self) -> u64 {
        self.reads + self.writes + self.persists + self.syncs
    }

    /// [`modelled_ps`](Self::modelled_ps) in nanoseconds.
    pub fn modelled_ns(&self) -> f64 {
        self.modelled_ps as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_covered_counts_partial_lines() {
        assert_eq!(lines_covered(0, 64), 1);
        assert_eq!(lines_covered(63, 2), 2);
        assert_eq!(lines_covered(64, 128), 2);
        assert_eq!(lines_covered(10, 0), 0);
    }

    #[test]
    fn more_threads_than_stripes_lose_nothing() {
        let s = std::sync::Arc::new(DeviceStats::new());
        let handles: Vec<_> = (0..STATS_STRIPES * 3)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        s.record(OpKind::Write, 64, lines_covered(0, 64), 64, OpCost::default());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(s.snapshot().writes, (STATS_STRIPES * 3 * 2000) as u64);
    }

    #[test]
    fn threads_sum_and_diff() {
        let s = std::sync::Arc::new(DeviceStats::new());
        let before = s.snapshot();
        let cost = OpCost { modelled_ps: 10, interfered: true, waited_ps: 0, deadline_ticks: 0 };
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        s.record(OpKind::Read, 128, lines_covered(0, 128), 256, cost);
                        s.record(OpKind::Persist, 64, lines_covered(0, 64), 0, OpCost::default());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let d = s.snapshot().since(&before);
        assert_eq!(d.reads, 4000);
        assert_eq!(d.read_lines, 8000);
        assert_eq!(d.read_media_bytes, 4000 * 256);
        assert_eq!(d.interfered_reads, 4000);
        assert_eq!(d.persists, 4000);
        assert_eq!(d.modelled_ps, 40_000);
        assert_eq!(d.ops(), 8000);
        let json = serde_json::to_string(&d).unwrap();
        let back: StatsSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
    }
}
