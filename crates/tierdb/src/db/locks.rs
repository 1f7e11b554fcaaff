//! Key locks: (tree root, key) → the transaction that holds it exclusively.
//!
//! A transaction's writes (and locking reads) lock their keys until it ends, so that
//! no two transactions change one key at once and an undo never overwrites another
//! transaction's change. Reads take no locks (read uncommitted).
//!
//! Invariants: a key has at most one owner; only the owner releases it (the keys a
//! transaction releases are those it acquired, which it records). Concurrency: one
//! mutex over the table; waiters sleep on one condition variable, woken by every
//! release, and give up after [`LOCK_WAIT_MS_MAX`] (no deadlock detection: a timeout
//! breaks a cycle of waiters).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::Result;
use crate::ids::{PageId, TxnId};

use super::config::DbError;

/// Longest wait for another transaction's key lock.
pub const LOCK_WAIT_MS_MAX: u64 = 10_000;

/// A locked key: the raw root page id of its tree and the key's bytes.
pub(super) type LockedKey = (u64, Vec<u8>);

/// Key locks: (tree root, key) → owning transaction.
#[derive(Default)]
pub(super) struct Locks {
    held: Mutex<HashMap<LockedKey, TxnId>>,
    released: Condvar,
}

impl Locks {
    /// Locks `key` of the tree rooted at `root` for `txn`, waiting up to
    /// [`LOCK_WAIT_MS_MAX`] for its owner to release it. True if `txn` acquired it now
    /// (it must release it at its end), false if it held it already.
    ///
    /// # Errors
    /// `LockTimeout`, naming the owner, after the longest wait.
    pub(super) fn lock(&self, txn: TxnId, root: PageId, key: &[u8]) -> Result<bool> {
        assert!(!txn.is_none() && !txn.is_smo(), "key lock for {txn:#x}, not a transaction");
        let mut held = self.held.lock();
        let deadline = Instant::now() + Duration::from_millis(LOCK_WAIT_MS_MAX);
        loop {
            match held.get(&(root.0, key.to_vec())) {
                None => {
                    held.insert((root.0, key.to_vec()), txn);
                    return Ok(true);
                }
                Some(&owner) if owner == txn => return Ok(false),
                Some(&owner) => {
                    if self.released.wait_until(&mut held, deadline).timed_out() {
                        return Err(DbError::LockTimeout { owner, ms: LOCK_WAIT_MS_MAX }.into());
                    }
                }
            }
        }
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
            let owner = held.remove(k);
            assert_eq!(owner, Some(txn), "{txn} releases key {:?} of root {}, held by {owner:?}", k.1, k.0);
        }
        self.released.notify_all();
    }

    /// Keys locked now (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().len()
    }

    /// A transaction that holds a lock on a key of the tree rooted at `root`, if any
    /// (a scan of the table: for `Db::drop_tree`).
    pub(super) fn owner_in(&self, root: PageId) -> Option<TxnId> {
        self.held.lock().iter().find(|((r, _), _)| *r == root.0).map(|(_, &owner)| owner)
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
        assert_eq!(locks.held.lock().get(&(3, b"k".to_vec())), Some(&b));
    }

    #[test]
    #[should_panic(expected = "releases key")]
    fn releasing_a_key_held_by_another_panics() {
        let locks = Locks::default();
        assert!(locks.lock(TxnId::new(1), PageId(3), b"k").unwrap());
        locks.release(TxnId::new(2), &[(3, b"k".to_vec())]);
    }
}
