//! The write working set over time (NV-SQL §3.2, Figure 2): per interval of the
//! measured run, how many distinct pages were accessed, written (fixed exclusively or
//! allocated) and written at least twice.
//!
//! A buffer-manager [`AccessRecorder`]: each tracked page has three stamps (the last
//! interval in which it was accessed, written, written a second time); an access whose
//! stamp is not the current interval's swaps it in and counts the page once. No lock,
//! one relaxed load per access in the common case (a page already counted), so the
//! recorder costs every configuration the same and little. Intervals are numbered from
//! 1 by [`WriteSetRecorder::tick`]; at 0 (warm-up) nothing is counted. Pages with ids
//! past [`WRITE_SET_PAGES_MAX`] are not tracked, only counted in `untracked`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde::Serialize;
use tierdb::PageId;
use tierdb::recorder::{AccessKind, AccessRecorder};

/// Pages whose accesses are tracked (page ids below this): 3 × 4 bytes each.
pub const WRITE_SET_PAGES_MAX: usize = 1 << 21;
/// Intervals tracked; later ones count into the last.
pub const WRITE_SET_INTERVALS_MAX: usize = 4096;

pub struct WriteSetRecorder {
    interval: AtomicU32,
    accessed: Vec<AtomicU32>,
    written: Vec<AtomicU32>,
    written_twice: Vec<AtomicU32>,
    /// Per interval: distinct pages accessed, written, written twice.
    counts: Vec<[AtomicU64; 3]>,
    untracked: AtomicU64,
}

/// The recorded series.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WriteSet {
    pub interval_secs: f64,
    /// Per interval of the measured run (the last may be partial).
    pub accessed: Vec<u64>,
    pub written: Vec<u64>,
    pub written_twice: Vec<u64>,
    /// Accesses to pages past the tracked range (not in the counts).
    pub untracked_accesses: u64,
}

impl WriteSet {
    /// Means over the whole intervals (the last, partial one left out when there are
    /// more) of distinct pages accessed, written and written twice.
    pub fn means(&self) -> [f64; 3] {
        let n = if self.written.len() > 1 { self.written.len() - 1 } else { self.written.len() };
        let mean = |v: &[u64]| if n == 0 { 0.0 } else { v[..n].iter().sum::<u64>() as f64 / n as f64 };
        [mean(&self.accessed), mean(&self.written), mean(&self.written_twice)]
    }

    /// The mean of distinct pages written per interval, and its share of those
    /// accessed.
    pub fn mean_written(&self) -> (f64, f64) {
        let [a, w, _] = self.means();
        (w, if a == 0.0 { 0.0 } else { w / a })
    }
}

fn stamps(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

impl WriteSetRecorder {
    pub fn new() -> WriteSetRecorder {
        WriteSetRecorder {
            interval: AtomicU32::new(0),
            accessed: stamps(WRITE_SET_PAGES_MAX),
            written: stamps(WRITE_SET_PAGES_MAX),
            written_twice: stamps(WRITE_SET_PAGES_MAX),
            counts: (0..=WRITE_SET_INTERVALS_MAX).map(|_| Default::default()).collect(),
            untracked: AtomicU64::new(0),
        }
    }

    /// Starts interval `i` (1-based; 0 stops counting).
    pub fn tick(&self, i: u32) {
        self.interval.store(i.min(WRITE_SET_INTERVALS_MAX as u32), Ordering::Release);
    }

    /// The counts of intervals 1..=`last`.
    pub fn series(&self, interval_secs: f64, last: u32) -> WriteSet {
        let last = (last as usize).min(WRITE_SET_INTERVALS_MAX);
        let col = |c: usize| (1..=last).map(|i| self.counts[i][c].load(Ordering::Relaxed)).collect();
        WriteSet {
            interval_secs,
            accessed: col(0),
            written: col(1),
            written_twice: col(2),
            untracked_accesses: self.untracked.load(Ordering::Relaxed),
        }
    }

    /// Stamps `pid` in `stamps` with interval `e`; true if it was not stamped yet.
    fn first(stamps: &[AtomicU32], pid: usize, e: u32) -> bool {
        stamps[pid].load(Ordering::Relaxed) != e && stamps[pid].swap(e, Ordering::Relaxed) != e
    }
}

impl Default for WriteSetRecorder {
    fn default() -> WriteSetRecorder {
        WriteSetRecorder::new()
    }
}

impl AccessRecorder for WriteSetRecorder {
    fn access(&self, kind: AccessKind, pid: PageId) {
        let e = self.interval.load(Ordering::Acquire);
        if e == 0 {
            return;
        }
        let Some(p) = usize::try_from(pid.0).ok().filter(|&p| p < WRITE_SET_PAGES_MAX) else {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let c = &self.counts[e as usize];
        if Self::first(&self.accessed, p, e) {
            c[0].fetch_add(1, Ordering::Relaxed);
        }
        if matches!(kind, AccessKind::Write | AccessKind::WriteLines | AccessKind::Alloc) {
            if Self::first(&self.written, p, e) {
                c[1].fetch_add(1, Ordering::Relaxed);
            } else if Self::first(&self.written_twice, p, e) {
                c[2].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn marker(&self, _name: &'static str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_distinct_pages_per_interval() {
        let r = WriteSetRecorder::new();
        r.access(AccessKind::Write, PageId(1)); // interval 0: not counted
        r.tick(1);
        for _ in 0..3 {
            r.access(AccessKind::Read, PageId(1));
            r.access(AccessKind::WriteLines, PageId(2));
        }
        r.access(AccessKind::Write, PageId(3));
        r.tick(2);
        r.access(AccessKind::ReadLines, PageId(2));
        r.access(AccessKind::Read, PageId(u64::MAX));
        let s = r.series(1.0, 2);
        assert_eq!(s.accessed, [3, 1]);
        assert_eq!(s.written, [2, 0]);
        assert_eq!(s.written_twice, [1, 0]);
        assert_eq!(s.untracked_accesses, 1);
        assert_eq!(s.mean_written(), (2.0, 2.0 / 3.0));
        assert_eq!(s.means(), [3.0, 2.0, 1.0]);
    }
}
