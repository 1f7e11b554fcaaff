//! The frame latch: one `AtomicU64` that is a reader-writer spin latch.
//!
//! ```text
//!   0                 unlocked
//!   1 ..= SHARED_MAX  held shared by that many holders
//!   EXCLUSIVE         held exclusive by one holder
//! ```
//!
//! Acquisition is a compare-and-swap with `Acquire` ordering, release a store or a
//! decrement with `Release`, so everything a holder wrote to the frame is visible to the
//! next holder. Waiting spins briefly, then yields the core (these machines have two).
//! Latches are never held across a wait for another latch in the reverse order of the
//! B+-tree's top-down, left-to-right coupling, so there is no deadlock to detect; the
//! buffer manager only ever *tries* latches it does not already own.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::LATCH_SPINS_BEFORE_YIELD;

const UNLOCKED: u64 = 0;
const EXCLUSIVE: u64 = u64::MAX;
const SHARED_MAX: u64 = EXCLUSIVE - 1;

/// A reader-writer spin latch.
#[derive(Debug, Default)]
pub struct Latch {
    state: AtomicU64,
}

impl Latch {
    pub const fn new() -> Latch {
        Latch { state: AtomicU64::new(UNLOCKED) }
    }

    /// A latch created held exclusive (for a frame being filled before it is visible).
    pub const fn new_exclusive() -> Latch {
        Latch { state: AtomicU64::new(EXCLUSIVE) }
    }

    /// Takes the latch shared if no one holds it exclusive.
    #[inline]
    pub fn try_shared(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        if s >= SHARED_MAX {
            return false;
        }
        self.state.compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Takes the latch exclusive if no one holds it.
    #[inline]
    pub fn try_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) == UNLOCKED
            && self.state.compare_exchange(UNLOCKED, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Takes the latch shared, waiting for an exclusive holder to leave.
    #[inline]
    pub fn shared(&self) {
        let mut spins = 0u32;
        while !self.try_shared() {
            backoff(&mut spins);
        }
    }

    /// Takes the latch exclusive, waiting for every holder to leave.
    #[inline]
    pub fn exclusive(&self) {
        let mut spins = 0u32;
        while !self.try_exclusive() {
            backoff(&mut spins);
        }
    }

    #[inline]
    pub fn unlock_shared(&self) {
        let prev = self.state.fetch_sub(1, Ordering::Release);
        debug_assert!(prev != UNLOCKED && prev != EXCLUSIVE, "unlock_shared of a latch in state {prev:#x}");
    }

    #[inline]
    pub fn unlock_exclusive(&self) {
        debug_assert_eq!(
            self.state.load(Ordering::Relaxed),
            EXCLUSIVE,
            "unlock_exclusive of a latch not held exclusive"
        );
        self.state.store(UNLOCKED, Ordering::Release);
    }

    /// Turns an exclusive hold into a shared one without letting a writer in between.
    #[inline]
    pub fn downgrade(&self) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), EXCLUSIVE, "downgrade of a latch not held exclusive");
        self.state.store(1, Ordering::Release);
    }

    /// True if someone holds the latch (a racy hint for victim selection).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) != UNLOCKED
    }

    pub fn is_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) == EXCLUSIVE
    }
}

/// Spin a little, then give the core away: with two cores a spinning waiter can keep
/// the holder from running.
#[inline]
pub fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < LATCH_SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_exclude_a_writer_and_the_reverse() {
        let l = Latch::new();
        assert!(l.try_shared());
        assert!(l.try_shared());
        assert!(!l.try_exclusive());
        l.unlock_shared();
        l.unlock_shared();
        assert!(l.try_exclusive());
        assert!(!l.try_shared());
        l.downgrade();
        assert!(l.try_shared());
        l.unlock_shared();
        l.unlock_shared();
        assert!(!l.is_held());
    }

    #[test]
    fn writers_exclude_each_other_across_threads() {
        let l = Latch::new();
        // A load-then-store increment loses updates unless the latch excludes writers.
        let counter = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        l.exclusive();
                        let v = counter.load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store(v + 1, Ordering::Relaxed);
                        l.unlock_exclusive();
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), 40_000);
    }
}
