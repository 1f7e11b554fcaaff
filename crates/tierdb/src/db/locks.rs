//! Key locks: (tree root, key) → the transaction that holds it exclusively.
//!
//! A transaction's writes (and locking reads) lock their keys until it ends, so that
//! no two transactions change one key at once and an undo never overwrites another
//! transaction's change. Reads take no locks (they read versions, `mvcc.rs`).
//!
//! Deadlocks are found when they form: a waiter records whom it waits for (a
//! transaction waits for one key at a time, so the wait-for graph is a set of chains),
//! and before it sleeps it follows the chain from the key's owner; if the chain comes
//! back to it, waiting would close a cycle, and it fails at once with the cycle. The
//! edge is renewed each time it wakes (the key may have changed hands), so a cycle
//! closed by another's renewal is found by that one. [`LOCK_WAIT_MS_MAX`] stays as a
//! safety net.
//!
//! Invariants: a key has at most one owner; only the owner releases it (the keys a
//! transaction releases are those it acquired, which it records); a transaction has a
//! wait-for edge only while it is inside [`Locks::lock`]. Concurrency: one mutex over
//! the table; waiters sleep on one condition variable, woken by every release.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::ids::{PageId, TxnId};

/// Longest wait for another transaction's key lock.
pub const LOCK_WAIT_MS_MAX: u64 = 10_000;

/// A locked key: the raw root page id of its tree and the key's bytes.
pub(super) type LockedKey = (u64, Vec<u8>);

/// Key locks: (tree root, key) → owning transaction.
#[derive(Default)]
pub(super) struct Locks {
    held: Mutex<Table>,
    released: Condvar,
}

/// The lock table and the wait-for graph.
#[derive(Default)]
struct Table {
    owners: HashMap<LockedKey, TxnId>,
    /// Waiter → the owner of the key it waits for.
    waits_for: HashMap<TxnId, TxnId>,
}

/// Why a lock was not granted.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LockError {
    /// Waited [`LOCK_WAIT_MS_MAX`] for `owner`.
    Timeout { owner: TxnId },
    /// Waiting would close this cycle (the asking transaction first).
    Deadlock { cycle: Vec<TxnId> },
}

impl Table {
    /// The cycle `txn` would close by waiting for `owner`, if any: the chain of waits
    /// from `owner` on.
    fn cycle(&self, txn: TxnId, owner: TxnId) -> Option<Vec<TxnId>> {
        let mut cycle = vec![txn, owner];
        let mut at = owner;
        // A chain longer than the waiters is a cycle that does not pass `txn` (which
        // the edges' checks rule out); stop rather than loop.
        for _ in 0..=self.waits_for.len() {
            match self.waits_for.get(&at) {
                Some(&next) if next == txn => return Some(cycle),
                Some(&next) => {
                    cycle.push(next);
                    at = next;
                }
                None => return None,
            }
        }
        None
    }
}

impl Locks {
    /// Locks `key` of the tree rooted at `root` for `txn`, waiting up to
    /// [`LOCK_WAIT_MS_MAX`] for its owner to release it. True if `txn` acquired it now
    /// (it must release it at its end), false if it held it already.
    ///
    /// # Errors
    /// `Deadlock` with the cycle if waiting would close one (at once, before any
    /// wait); `Timeout`, naming the owner, after the longest wait.
    pub(super) fn lock(&self, txn: TxnId, root: PageId, key: &[u8]) -> Result<bool, LockError> {
        assert!(!txn.is_none() && !txn.is_smo(), "key lock for {txn:#x}, not a transaction");
        let mut held = self.held.lock();
        let deadline = Instant::now() + Duration::from_millis(LOCK_WAIT_MS_MAX);
        let k = (root.0, key.to_vec());
        let result = loop {
            match held.owners.get(&k) {
                None => {
                    held.owners.insert(k, txn);
                    break Ok(true);
                }
                Some(&owner) if owner == txn => break Ok(false),
                Some(&owner) => {
                    if let Some(cycle) = held.cycle(txn, owner) {
                        break Err(LockError::Deadlock { cycle });
                    }
                    held.waits_for.insert(txn, owner);
                    if self.released.wait_until(&mut held, deadline).timed_out() {
                        break Err(LockError::Timeout { owner });
                    }
                }
            }
        };
        held.waits_for.remove(&txn);
        result
    }

    /// Releases the keys `txn` acquired, and wakes every waiter.
    ///
    /// # Panics
    /// A key that `txn` does not hold: the lock table and the transaction's list of
    /// its keys disagree.
    pub(super) fn release(&self, txn: TxnId, keys: &[LockedKey]) {
        if keys.is_empty() {
            return;
        }
        let mut held = self.held.lock();
        for k in keys {
            let owner = held.owners.remove(k);
            assert_eq!(owner, Some(txn), "{txn} releases key {:?} of root {}, held by {owner:?}", k.1, k.0);
        }
        self.released.notify_all();
    }

    /// Keys locked now (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().owners.len()
    }

    /// A transaction that holds a lock on a key of the tree rooted at `root`, if any
    /// (a scan of the table: for `Db::drop_tree`).
    pub(super) fn owner_in(&self, root: PageId) -> Option<TxnId> {
        self.held.lock().owners.iter().find(|((r, _), _)| *r == root.0).map(|(_, &owner)| owner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_lock_is_taken_once_and_released_by_its_owner() {
        let locks = Locks::default();
        let (a, b) = (TxnId::new(1), TxnId::new(2));
        assert!(locks.lock(a, PageId(3), b"k").unwrap());
        assert!(!locks.lock(a, PageId(3), b"k").unwrap(), "held already");
        assert!(locks.lock(b, PageId(4), b"k").unwrap(), "another tree's key");
        assert_eq!(locks.len(), 2);
        locks.release(a, &[(3, b"k".to_vec())]);
        assert!(locks.lock(b, PageId(3), b"k").unwrap());
        locks.release(b, &[(3, b"k".to_vec()), (4, b"k".to_vec())]);
        assert_eq!(locks.len(), 0);
    }

    #[test]
    fn a_waiter_gets_the_key_when_its_owner_releases_it() {
        let locks = Arc::new(Locks::default());
        let (a, b) = (TxnId::new(1), TxnId::new(2));
        assert!(locks.lock(a, PageId(3), b"k").unwrap());
        let waiter = {
            let locks = locks.clone();
            std::thread::spawn(move || locks.lock(b, PageId(3), b"k"))
        };
        std::thread::sleep(Duration::from_millis(20));
        locks.release(a, &[(3, b"k".to_vec())]);
        assert!(waiter.join().unwrap().unwrap());
        assert_eq!(locks.held.lock().owners.get(&(3, b"k".to_vec())), Some(&b));
    }

    /// `txn` waits in a thread for `key` (held by another); the result when it ends.
    fn wait_in_thread(
        locks: &Arc<Locks>,
        txn: TxnId,
        key: &'static [u8],
    ) -> std::thread::JoinHandle<Result<bool, LockError>> {
        let waiter = locks.clone();
        let h = std::thread::spawn(move || waiter.lock(txn, PageId(3), key));
        // Until it waits (its edge is in the graph).
        let t0 = Instant::now();
        while !locks_waiting(locks, txn) {
            assert!(t0.elapsed() < Duration::from_secs(5), "{txn} never waited");
            std::thread::sleep(Duration::from_millis(1));
        }
        h
    }

    fn locks_waiting(locks: &Locks, txn: TxnId) -> bool {
        locks.held.lock().waits_for.contains_key(&txn)
    }

    #[test]
    fn a_cycle_of_two_fails_the_transaction_that_closes_it_at_once() {
        let locks = Arc::new(Locks::default());
        let (a, b) = (TxnId::new(1), TxnId::new(2));
        assert!(locks.lock(a, PageId(3), b"x").unwrap());
        assert!(locks.lock(b, PageId(3), b"y").unwrap());
        let a_waits = wait_in_thread(&locks, a, b"y");
        let t0 = Instant::now();
        let err = locks.lock(b, PageId(3), b"x").unwrap_err();
        assert!(t0.elapsed() < Duration::from_millis(100), "took {:?}", t0.elapsed());
        assert_eq!(err, LockError::Deadlock { cycle: vec![b, a] });
        // b gives up its key: a gets it.
        locks.release(b, &[(3, b"y".to_vec())]);
        assert!(a_waits.join().unwrap().unwrap());
        assert!(locks.held.lock().waits_for.is_empty());
    }

    #[test]
    fn a_cycle_of_three_is_found_and_a_chain_is_not_a_cycle() {
        let locks = Arc::new(Locks::default());
        let (a, b, c) = (TxnId::new(1), TxnId::new(2), TxnId::new(3));
        for (t, k) in [(a, b"x"), (b, b"y"), (c, b"z")] {
            assert!(locks.lock(t, PageId(3), k).unwrap());
        }
        // a -> b -> c: a chain, both wait.
        let a_waits = wait_in_thread(&locks, a, b"y");
        let b_waits = wait_in_thread(&locks, b, b"z");
        // c -> a closes a -> b -> c -> a.
        let err = locks.lock(c, PageId(3), b"x").unwrap_err();
        assert_eq!(err, LockError::Deadlock { cycle: vec![c, a, b] });
        locks.release(c, &[(3, b"z".to_vec())]);
        assert!(b_waits.join().unwrap().unwrap());
        locks.release(b, &[(3, b"y".to_vec()), (3, b"z".to_vec())]);
        assert!(a_waits.join().unwrap().unwrap());
    }

    #[test]
    #[should_panic(expected = "releases key")]
    fn releasing_a_key_held_by_another_panics() {
        let locks = Locks::default();
        assert!(locks.lock(TxnId::new(1), PageId(3), b"k").unwrap());
        locks.release(TxnId::new(2), &[(3, b"k".to_vec())]);
    }
}
