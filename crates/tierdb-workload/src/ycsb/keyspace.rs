//! Which key numbers exist: the loaded ones, and those inserted during the run.
//!
//! # Load phase
//!
//! This instance loads key numbers `insertstart..insertstart + insertcount`.
//! [`LoadKeys`] splits them into one contiguous share per loading thread (YCSB instead
//! lets its threads take the next number from a shared counter; contiguous shares make
//! each thread's sequence deterministic). With hashed key names a share is still
//! scattered over the key space.
//!
//! # Run phase
//!
//! Inserts take new key numbers from `recordcount` upward, in the order
//! [`KeySpace::next_insert_key`] hands them out, as YCSB's transaction-insert sequence
//! does. A request may only name a record whose insert has completed, and inserts
//! complete out of order, so readers see a watermark, [`KeySpace::acknowledged_end`]:
//! every key number below it is loaded or inserted. It advances over a key only once
//! that key and every key before it have been acknowledged
//! ([`KeySpace::acknowledge_insert`], YCSB's `AcknowledgedCounterGenerator`).
//!
//! # Concurrency
//!
//! `KeySpace` is `Sync` and lock-free. Acknowledgements go to a ring of
//! [`INSERTS_IN_FLIGHT_MAX`] slots: acknowledging key `k` stores `k + 1` into slot
//! `k mod W`; the watermark `e` advances by compare-and-swap from `e` to `e + 1` while
//! slot `e mod W` holds `e + 1`. Any thread may advance it, so no insert waits for a
//! slower one. A slot is only reused by key `k + W`, which is handed out only once the
//! watermark has passed `k` (the hand-out waits for that), so a slot never holds a stale
//! value that looks current.
//!
//! # Sequential requests
//!
//! `requestdistribution=sequential` names the loaded keys in order, wrapping around,
//! from one counter shared by all threads ([`KeySpace::next_sequential_key`]), as YCSB's
//! one `SequentialGenerator` serves all its client threads.
//!
//! All slot and watermark accesses are sequentially consistent: an acknowledger stores
//! its slot then loads the watermark, an advancer moves the watermark then loads the
//! next slot, so one of them always sees the other and no acknowledgement is stranded
//! behind a watermark nobody advances. A reader that loads the watermark (acquire)
//! happens after the acknowledgements below it, and so after the inserts themselves.
//!
//! Every handed-out key must be acknowledged, even if its insert failed (YCSB does the
//! same), or the watermark stops there and hand-outs wait, then panic, after
//! [`INSERT_WINDOW_WAIT_MS_MAX`].

use crate::limits::{INSERT_WINDOW_WAIT_MS_MAX, INSERTS_IN_FLIGHT_MAX, KEY_NUMBER_MAX, LOAD_THREADS_MAX};
use crate::ycsb::YcsbSpec;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The key numbers that exist during a run; shared by all generator threads.
pub struct KeySpace {
    /// Key numbers this instance loaded: `insertstart..insertstart + insertcount`.
    load_range: Range<u64>,
    /// `recordcount`: the first key number of the run's inserts.
    record_count: u64,
    /// The next key number to hand out for an insert.
    next_insert: AtomicU64,
    /// The watermark: every key number below it exists.
    acknowledged_end: AtomicU64,
    /// Slot `k mod W` holds `k + 1` once key `k` is acknowledged (0: never used).
    window: Box<[AtomicU64]>,
    /// Sequential requests handed out so far.
    sequential: AtomicU64,
}

impl KeySpace {
    /// The key space of `spec` before the run: `0..recordcount` exist (this instance
    /// loaded its share, other instances the rest) and no insert is in flight.
    ///
    /// # Panics
    ///
    /// Never for a spec that upholds its invariant (the load range within `recordcount`).
    pub fn new(spec: &YcsbSpec) -> KeySpace {
        let load_start = spec.insert_start();
        let load_range = load_start..load_start + spec.insert_count();
        assert!(load_range.end <= spec.record_count(), "spec invariant: load range {load_range:?} beyond recordcount");
        KeySpace {
            load_range,
            record_count: spec.record_count(),
            next_insert: AtomicU64::new(spec.record_count()),
            acknowledged_end: AtomicU64::new(spec.record_count()),
            window: (0..INSERTS_IN_FLIGHT_MAX).map(|_| AtomicU64::new(0)).collect(),
            sequential: AtomicU64::new(0),
        }
    }

    /// The key numbers loaded by this instance.
    pub fn load_range(&self) -> Range<u64> {
        self.load_range.clone()
    }

    /// The watermark: every key number below it is loaded or inserted.
    #[inline]
    pub fn acknowledged_end(&self) -> u64 {
        self.acknowledged_end.load(Ordering::Acquire)
    }

    /// Key numbers handed out for inserts so far.
    pub fn inserts_issued(&self) -> u64 {
        self.next_insert.load(Ordering::Relaxed) - self.record_count
    }

    /// Hands out the key number of a new record. The caller inserts it and then calls
    /// [`KeySpace::acknowledge_insert`], whether or not the insert succeeded.
    ///
    /// Waits (yielding the core) while [`INSERTS_IN_FLIGHT_MAX`] earlier keys are not
    /// yet acknowledged.
    ///
    /// # Panics
    ///
    /// If key numbers reach [`KEY_NUMBER_MAX`], or the wait exceeds
    /// [`INSERT_WINDOW_WAIT_MS_MAX`] (an insert was never acknowledged).
    pub fn next_insert_key(&self) -> u64 {
        let key = self.next_insert.fetch_add(1, Ordering::Relaxed);
        assert!(key < KEY_NUMBER_MAX, "key space exhausted: insert key {key} reaches the limit {KEY_NUMBER_MAX}");
        if !self.in_window(key) {
            let deadline = Instant::now() + Duration::from_millis(INSERT_WINDOW_WAIT_MS_MAX);
            while !self.in_window(key) {
                assert!(
                    Instant::now() < deadline,
                    "insert key {key} waited {INSERT_WINDOW_WAIT_MS_MAX} ms for key {} to be acknowledged; \
                     every key from next_insert_key must be acknowledged",
                    self.acknowledged_end.load(Ordering::SeqCst)
                );
                std::thread::yield_now();
            }
        }
        key
    }

    /// The next key of the `sequential` request distribution: `insertstart`,
    /// `insertstart + 1`, … through the loaded keys, then from the first again; one
    /// sequence for all threads.
    #[inline]
    pub fn next_sequential_key(&self) -> u64 {
        let n = self.sequential.fetch_add(1, Ordering::Relaxed);
        let count = self.load_range.end - self.load_range.start;
        self.load_range.start + n % count
    }

    /// Marks the insert of `key` (from [`KeySpace::next_insert_key`]) as complete, and
    /// advances the watermark over every key acknowledged without a gap.
    ///
    /// # Panics
    ///
    /// If `key` was not handed out, or is acknowledged twice.
    pub fn acknowledge_insert(&self, key: u64) {
        assert!(
            key >= self.record_count && key < self.next_insert.load(Ordering::Relaxed),
            "acknowledging key {key}, which was not handed out by next_insert_key"
        );
        let slot = &self.window[Self::slot(key)];
        let previous = slot.swap(key + 1, Ordering::SeqCst);
        assert_ne!(previous, key + 1, "key {key} acknowledged twice");
        // Advance the watermark while the key at it has been acknowledged. A failed
        // swap means another thread advanced it; look again from where it is now.
        loop {
            let end = self.acknowledged_end.load(Ordering::SeqCst);
            if self.window[Self::slot(end)].load(Ordering::SeqCst) != end + 1 {
                break;
            }
            let _ = self.acknowledged_end.compare_exchange(end, end + 1, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// Whether `key`'s slot is free: every key `W` or more before it is acknowledged.
    fn in_window(&self, key: u64) -> bool {
        key < self.acknowledged_end.load(Ordering::SeqCst) + INSERTS_IN_FLIGHT_MAX
    }

    fn slot(key: u64) -> usize {
        (key & (INSERTS_IN_FLIGHT_MAX - 1)) as usize
    }
}

impl fmt::Debug for KeySpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySpace")
            .field("load_range", &self.load_range)
            .field("record_count", &self.record_count)
            .field("next_insert", &self.next_insert.load(Ordering::Relaxed))
            .field("acknowledged_end", &self.acknowledged_end.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One loading thread's share of the key numbers to load, in increasing order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadKeys {
    next: u64,
    end: u64,
}

impl LoadKeys {
    /// Thread `thread` of `threads`: the `thread`-th of `threads` contiguous, equal (±1)
    /// shares of `insertstart..insertstart + insertcount`.
    ///
    /// # Panics
    ///
    /// If `threads` is 0 or above [`LOAD_THREADS_MAX`], or `thread >= threads`.
    pub fn new(spec: &YcsbSpec, thread: u32, threads: u32) -> LoadKeys {
        assert!((1..=LOAD_THREADS_MAX).contains(&threads), "load: {threads} threads");
        assert!(thread < threads, "load: thread {thread} of {threads}");
        let start = spec.insert_start();
        let count = u128::from(spec.insert_count());
        // Boundaries at floor(count * t / threads): exact in 128 bits, shares differ by
        // at most one key, and the shares of all threads tile the range.
        let boundary = |t: u32| start + (count * u128::from(t) / u128::from(threads)) as u64;
        LoadKeys { next: boundary(thread), end: boundary(thread + 1) }
    }

    /// The key numbers not yet returned.
    pub fn remaining(&self) -> Range<u64> {
        self.next..self.end
    }
}

impl Iterator for LoadKeys {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        (self.next < self.end).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.end - self.next).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for LoadKeys {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    fn spec(text: &str) -> YcsbSpec {
        YcsbSpec::parse(text, "test").unwrap()
    }

    #[test]
    fn sequential_keys_cycle_through_the_loaded_range_across_threads() {
        let keyspace = KeySpace::new(&spec("recordcount=100\ninsertstart=10\ninsertcount=30"));
        let first: Vec<u64> = (0..35).map(|_| keyspace.next_sequential_key()).collect();
        assert_eq!(first[..30], (10..40).collect::<Vec<_>>()[..]);
        assert_eq!(first[30..], [10, 11, 12, 13, 14]);
        // Threads share the sequence: every key handed out once per round.
        let keyspace = KeySpace::new(&spec("recordcount=1000"));
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..250).map(|_| keyspace.next_sequential_key()).collect::<Vec<_>>()))
                .collect();
            workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
        });
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn load_shares_tile_the_range() {
        let spec = spec("recordcount=1000\ninsertstart=100\ninsertcount=803");
        for threads in [1, 2, 3, 7, 1000] {
            let mut all = Vec::new();
            for t in 0..threads {
                let share: Vec<u64> = LoadKeys::new(&spec, t, threads).collect();
                assert!(share.len() as u64 <= 803 / u64::from(threads) + 1);
                all.extend(share);
            }
            assert_eq!(all, (100..903).collect::<Vec<_>>(), "{threads} threads");
        }
        let keys = LoadKeys::new(&spec, 1, 2);
        assert_eq!(keys.len(), 402);
        assert_eq!(keys.remaining(), 501..903);
    }

    #[test]
    fn watermark_waits_for_gaps() {
        let spec = spec("recordcount=10");
        let ks = KeySpace::new(&spec);
        assert_eq!((ks.acknowledged_end(), ks.load_range()), (10, 0..10));
        let keys: Vec<u64> = (0..4).map(|_| ks.next_insert_key()).collect();
        assert_eq!(keys, [10, 11, 12, 13]);
        ks.acknowledge_insert(12);
        ks.acknowledge_insert(11);
        assert_eq!(ks.acknowledged_end(), 10);
        ks.acknowledge_insert(10);
        assert_eq!(ks.acknowledged_end(), 13);
        ks.acknowledge_insert(13);
        assert_eq!(ks.acknowledged_end(), 14);
        assert_eq!(ks.inserts_issued(), 4);
    }

    #[test]
    #[should_panic(expected = "acknowledged twice")]
    fn double_acknowledgement_panics() {
        let ks = KeySpace::new(&spec("recordcount=10"));
        let k = ks.next_insert_key();
        ks.acknowledge_insert(k);
        ks.acknowledge_insert(k);
    }

    #[test]
    #[should_panic(expected = "not handed out")]
    fn acknowledging_a_foreign_key_panics() {
        let ks = KeySpace::new(&spec("recordcount=10"));
        ks.acknowledge_insert(10);
    }

    #[test]
    fn window_wraps_many_times() {
        let ks = KeySpace::new(&spec("recordcount=1"));
        let total = 3 * INSERTS_IN_FLIGHT_MAX + 5;
        for _ in 0..total {
            let k = ks.next_insert_key();
            ks.acknowledge_insert(k);
        }
        assert_eq!(ks.acknowledged_end(), 1 + total);
    }

    #[test]
    fn concurrent_inserts_in_random_order() {
        let seed = 77;
        let ks = KeySpace::new(&spec("recordcount=1000"));
        let threads = 4u64;
        let per_thread = 20_000u64;
        std::thread::scope(|scope| {
            for t in 0..threads {
                let ks = &ks;
                scope.spawn(move || {
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed + t);
                    let mut pending = Vec::new();
                    for _ in 0..per_thread {
                        pending.push(ks.next_insert_key());
                        // Acknowledge a few at a time, out of order.
                        if pending.len() >= 8 || rng.random_bool(0.3) {
                            while let Some(i) = (!pending.is_empty()).then(|| rng.random_range(0..pending.len())) {
                                let key = pending.swap_remove(i);
                                assert!(key >= ks.acknowledged_end(), "seed {seed}: {key} below watermark early");
                                ks.acknowledge_insert(key);
                                if rng.random_bool(0.5) {
                                    break;
                                }
                            }
                        }
                    }
                    for key in pending {
                        ks.acknowledge_insert(key);
                    }
                });
            }
        });
        assert_eq!(ks.acknowledged_end(), 1000 + threads * per_thread, "seed {seed}");
    }
}
