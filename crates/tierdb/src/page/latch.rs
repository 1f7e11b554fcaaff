//! The frame latch: one `AtomicU64` that is a writer-preferring reader-writer spin
//! latch and the version optimistic readers validate against (vmcache's shape: state
//! and version in one word).
//!
//! ```text
//!   bits 63..26  VERSION: bumped when an exclusive hold that may have changed what the
//!                latch guards ends (unlock_exclusive, downgrade); 38 bits, wrapping
//!   bit 25       EXCLUSIVE: held exclusive by one holder
//!   bit 24       WAITING: a writer waits; new readers stay out until it has the latch
//!   bits 23..0   shared holders (plus readers passing through, about to back out)
//!   state 0      unlocked (the version bits are not part of the state)
//! ```
//!
//! A reader takes the latch with one `fetch_add` that cannot fail, and backs out with a
//! `fetch_sub` if it finds EXCLUSIVE or WAITING set. Under contention this is one locked
//! instruction per acquisition rather than a compare-and-swap loop. A writer takes it by
//! compare-and-swap from a state of 0 (or of WAITING alone), keeping the version. While
//! it has to wait, it sets WAITING, so a stream of readers on a hot page cannot starve
//! it. The exclusive bit is released with an addition, never a store: adding EXCLUSIVE
//! to a word that has it set clears it and carries one into the version, so release
//! and version bump are one instruction, and the counts of readers passing through
//! survive. A holder that changed nothing releases with a subtraction instead
//! ([`Latch::unlock_exclusive_unchanged`]), which keeps optimistic readers valid.
//!
//! An optimistic reader loads the word once ([`Latch::optimistic`]): no EXCLUSIVE, and
//! the version it saw. Validation ([`Latch::validate`]) loads it again after the
//! caller's `Acquire` fence: still no EXCLUSIVE and the same version.
//!
//! Acquisition uses `Acquire` ordering and release uses `Release`, so everything a
//! holder wrote to the frame is visible to the next holder. Waiting spins briefly,
//! then yields the core (these machines have two). Latches are taken in the B+-tree's
//! top-down, left-to-right coupling order, and a thread never asks again for a latch it
//! holds. The buffer manager only ever *tries* latches it does not already own, so
//! there is no deadlock to detect.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::LATCH_SPINS_BEFORE_YIELD;

/// Shared holders (and readers passing through).
const READERS: u64 = (1 << 24) - 1;
/// A writer waits.
const WAITING: u64 = 1 << 24;
/// Held exclusive.
const EXCLUSIVE: u64 = 1 << 25;
/// Where the version starts.
const VERSION_SHIFT: u32 = 26;
/// The bits below the version: the latch's state.
const STATE: u64 = (1 << VERSION_SHIFT) - 1;
/// The unlocked state.
const UNLOCKED: u64 = 0;

// Releasing EXCLUSIVE by adding it carries exactly one into the version.
const _: () = assert!(EXCLUSIVE << 1 == 1 << VERSION_SHIFT);
const _: () = assert!(READERS | WAITING | EXCLUSIVE == STATE);

/// A reader-writer spin latch with a version.
#[derive(Debug, Default)]
pub struct Latch {
    state: AtomicU64,
}

impl Latch {
    /// An unlocked latch at version 0.
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
        let prev = self.state.fetch_add(1, Ordering::Acquire);
        debug_assert!(prev & READERS < READERS, "shared count overflow: {prev:#x}");
        if prev & (EXCLUSIVE | WAITING) == 0 {
            return true;
        }
        self.state.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Takes the latch exclusive if no one holds it.
    #[inline]
    pub fn try_exclusive(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & STATE == UNLOCKED
            && self.state.compare_exchange(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Takes the latch shared, waiting for an exclusive holder to leave.
    #[inline]
    pub fn shared(&self) {
        let mut spins = 0u32;
        while !self.try_shared() {
            backoff(&mut spins);
        }
    }

    /// Takes the latch exclusive, waiting for every holder to leave; new readers are
    /// held off meanwhile.
    #[inline]
    pub fn exclusive(&self) {
        let mut spins = 0u32;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & STATE & !WAITING == 0 {
                // Free (perhaps flagged by us or another writer): take it, clearing the
                // flag and keeping the version.
                let taken = (s & !STATE) | EXCLUSIVE;
                if self.state.compare_exchange_weak(s, taken, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    return;
                }
            } else if s & WAITING == 0 {
                self.state.fetch_or(WAITING, Ordering::Relaxed);
            }
            backoff(&mut spins);
        }
    }

    /// Releases one shared hold, which the caller must own (checked by a debug assertion
    /// only).
    #[inline]
    pub fn unlock_shared(&self) {
        let prev = self.state.fetch_sub(1, Ordering::Release);
        debug_assert!(prev & READERS != 0 && prev & EXCLUSIVE == 0, "unlock_shared of a latch in state {prev:#x}");
    }

    /// Releases the exclusive hold, which the caller must own (checked by a debug
    /// assertion only), and bumps the version: what the latch guards may have changed.
    /// A waiting writer's flag is kept.
    #[inline]
    pub fn unlock_exclusive(&self) {
        self.unlock_exclusive_versioned();
    }

    /// As [`unlock_exclusive`](Self::unlock_exclusive), returning the new version.
    #[inline]
    pub fn unlock_exclusive_versioned(&self) -> u64 {
        // An addition, not a store: readers passing through have counted themselves in
        // and will count themselves out; a waiting writer's flag stays; the carry out of
        // EXCLUSIVE is the version's increment.
        let prev = self.state.fetch_add(EXCLUSIVE, Ordering::Release);
        debug_assert!(prev & EXCLUSIVE != 0, "unlock_exclusive of a latch in state {prev:#x}");
        prev.wrapping_add(EXCLUSIVE) >> VERSION_SHIFT
    }

    /// Releases the exclusive hold without bumping the version: the holder changed
    /// nothing an optimistic reader could have seen (it found the frame holding another
    /// page, or gave up).
    #[inline]
    pub fn unlock_exclusive_unchanged(&self) {
        let prev = self.state.fetch_sub(EXCLUSIVE, Ordering::Release);
        debug_assert!(prev & EXCLUSIVE != 0, "unlock_exclusive_unchanged of a latch in state {prev:#x}");
    }

    /// Turns the caller's shared hold into an exclusive one if it is the only holder
    /// (a waiting writer's flag is kept: it gets the latch after this holder).
    #[inline]
    pub fn try_upgrade(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        debug_assert!(s & READERS != 0 && s & EXCLUSIVE == 0, "upgrade of a latch in state {s:#x}");
        s & READERS == 1
            && self.state.compare_exchange(s, (s - 1) | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Turns an exclusive hold into a shared one without letting a writer in between,
    /// bumping the version.
    #[inline]
    pub fn downgrade(&self) {
        // EXCLUSIVE → one shared holder and the next version, keeping readers passing
        // through.
        let prev = self.state.fetch_add(EXCLUSIVE + 1, Ordering::Release);
        debug_assert!(prev & EXCLUSIVE != 0, "downgrade of a latch in state {prev:#x}");
        // A writer that set WAITING meanwhile waits for this holder to leave.
    }

    /// True if someone holds or wants the latch (a racy hint for victim selection).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) & STATE != UNLOCKED
    }

    /// True if someone holds the latch exclusive now (racy unless the caller is that
    /// holder; optimistic readers re-check it in `validate`).
    pub fn is_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0
    }

    /// The version now (racy unless the caller holds the latch exclusive).
    #[inline]
    pub fn version(&self) -> u64 {
        self.state.load(Ordering::Relaxed) >> VERSION_SHIFT
    }

    /// Starts an optimistic read: the version, if no one holds the latch exclusive now.
    #[inline]
    pub fn optimistic(&self) -> Option<u64> {
        let s = self.state.load(Ordering::Acquire);
        (s & EXCLUSIVE == 0).then_some(s >> VERSION_SHIFT)
    }

    /// Ends an optimistic read that began at `version`: true if no exclusive hold
    /// began or ended since. The caller issues an `Acquire` fence first, ordering its
    /// reads of the guarded bytes before this load.
    #[inline]
    pub fn validate(&self, version: u64) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & EXCLUSIVE == 0 && s >> VERSION_SHIFT == version
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
    fn exclusive_holds_that_change_bump_the_version_and_others_do_not() {
        let l = Latch::new();
        let v = l.optimistic().expect("unlocked");
        assert!(l.try_shared());
        l.unlock_shared();
        assert!(l.validate(v), "a shared hold leaves the version");
        assert!(l.try_exclusive());
        assert_eq!(l.optimistic(), None);
        assert!(!l.validate(v), "an exclusive holder is in");
        l.unlock_exclusive_unchanged();
        assert!(l.validate(v), "an unchanged hold leaves the version");
        assert!(l.try_exclusive());
        assert_eq!(l.unlock_exclusive_versioned(), v + 1);
        assert!(!l.validate(v));
        assert!(l.validate(v + 1));
        l.exclusive();
        l.downgrade();
        assert!(l.validate(v + 2), "a downgrade bumps and lets readers in");
        l.unlock_shared();
        assert!(!l.is_held());
    }

    #[test]
    fn the_version_wraps_without_touching_the_state() {
        let l = Latch { state: AtomicU64::new(!STATE) };
        assert!(l.try_shared());
        assert!(l.try_shared());
        l.unlock_shared();
        l.unlock_shared();
        assert!(l.try_exclusive());
        assert_eq!(l.unlock_exclusive_versioned(), 0);
        assert!(!l.is_held());
        assert_eq!(l.version(), 0);
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

    #[test]
    fn readers_never_see_a_half_done_write() {
        let l = Latch::new();
        let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
        let reads = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                while reads.load(Ordering::Relaxed) == 0 {
                    std::hint::spin_loop();
                }
                for i in 1..=20_000u64 {
                    l.exclusive();
                    a.store(i, Ordering::Relaxed);
                    std::hint::spin_loop();
                    b.store(i, Ordering::Relaxed);
                    if i % 2 == 0 {
                        l.downgrade();
                        assert_eq!(a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
                        l.unlock_shared();
                    } else {
                        l.unlock_exclusive();
                    }
                }
            });
            s.spawn(|| {
                loop {
                    l.shared();
                    assert_eq!(a.load(Ordering::Relaxed), b.load(Ordering::Relaxed), "torn read under a shared latch");
                    reads.fetch_add(1, Ordering::Relaxed);
                    let done = b.load(Ordering::Relaxed) == 20_000;
                    l.unlock_shared();
                    if done {
                        break;
                    }
                }
            });
        });
        assert!(!l.is_held());
        assert!(reads.load(Ordering::Relaxed) > 0);
    }
}
