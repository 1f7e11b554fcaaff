//! An in-memory [`TpccTx`]: one `BTreeMap` per tree behind one mutex, with an undo list
//! per transaction. It is the reference the tests run the transactions on; it takes no
//! locks (transactions on it run one at a time).

use std::collections::BTreeMap;
use std::convert::Infallible;

use std::sync::Mutex;

use super::{LoadCounts, Scale, Table, TpccTx, load_items, load_warehouse};

type Tree = BTreeMap<Vec<u8>, Vec<u8>>;

/// The trees.
#[derive(Default)]
pub struct MemDb {
    trees: Mutex<Vec<Tree>>,
}

impl MemDb {
    /// An empty database: every tree empty.
    pub fn new() -> MemDb {
        MemDb { trees: Mutex::new(vec![Tree::new(); Table::ALL.len()]) }
    }

    /// A database loaded at `scale`.
    pub fn loaded(scale: &Scale, seed: u64) -> (MemDb, LoadCounts) {
        let db = MemDb::new();
        let mut counts = LoadCounts::default();
        {
            let mut trees = db.trees.lock().expect("not poisoned");
            let mut emit = |t: Table, k: &[u8], v: &[u8]| -> Result<(), Infallible> {
                trees[t.index()].insert(k.to_vec(), v.to_vec());
                Ok(())
            };
            let Ok(c) = load_items(scale, seed, &mut emit);
            counts.add(&c);
            for w in 1..=scale.warehouses {
                let Ok(c) = load_warehouse(scale, seed, w, &mut emit);
                counts.add(&c);
            }
        }
        (db, counts)
    }

    /// Opens a transaction. Its changes are visible to everyone at once (no
    /// isolation) and undone if it is dropped without a commit.
    pub fn begin(&self) -> MemTx<'_> {
        MemTx { db: self, undo: Vec::new() }
    }

    /// Rows in `table`.
    pub fn len(&self, table: Table) -> usize {
        self.trees.lock().expect("not poisoned")[table.index()].len()
    }

    /// True if every tree is empty.
    pub fn is_empty(&self) -> bool {
        Table::ALL.iter().all(|&t| self.len(t) == 0)
    }

    /// The value of `key` in `table`, read outside any transaction.
    pub fn get(&self, table: Table, key: &[u8]) -> Option<Vec<u8>> {
        self.trees.lock().expect("not poisoned")[table.index()].get(key).cloned()
    }

    /// A copy of every tree (to compare states).
    pub fn snapshot(&self) -> Vec<Tree> {
        self.trees.lock().expect("not poisoned").clone()
    }
}

/// A transaction of a [`MemDb`]; dropped without [`commit`](Self::commit), it rolls back.
pub struct MemTx<'a> {
    db: &'a MemDb,
    undo: Vec<(Table, Vec<u8>, Option<Vec<u8>>)>,
}

impl MemTx<'_> {
    /// Keeps the transaction's changes.
    pub fn commit(mut self) {
        self.undo.clear();
    }

    /// Undoes the transaction's changes, as dropping it does.
    pub fn rollback(self) {}

    fn set(&mut self, table: Table, key: &[u8], value: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let mut trees = self.db.trees.lock().expect("not poisoned");
        let tree = &mut trees[table.index()];
        let old = match value {
            Some(v) => tree.insert(key.to_vec(), v),
            None => tree.remove(key),
        };
        self.undo.push((table, key.to_vec(), old.clone()));
        old
    }
}

impl Drop for MemTx<'_> {
    fn drop(&mut self) {
        let mut trees = self.db.trees.lock().unwrap_or_else(|e| e.into_inner());
        for (t, k, old) in self.undo.drain(..).rev() {
            match old {
                Some(v) => trees[t.index()].insert(k, v),
                None => trees[t.index()].remove(&k),
            };
        }
    }
}

impl TpccTx for MemTx<'_> {
    type Error = Infallible;

    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Infallible> {
        Ok(self.db.get(table, key))
    }

    fn get_for_update(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Infallible> {
        Ok(self.db.get(table, key))
    }

    fn insert(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Infallible> {
        self.set(table, key, Some(value.to_vec()));
        Ok(())
    }

    fn patch(&mut self, table: Table, key: &[u8], offset: usize, bytes: &[u8]) -> Result<bool, Infallible> {
        let Some(mut v) = self.db.get(table, key) else { return Ok(false) };
        assert!(offset + bytes.len() <= v.len(), "a patch inside the value");
        v[offset..offset + bytes.len()].copy_from_slice(bytes);
        self.set(table, key, Some(v));
        Ok(true)
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, Infallible> {
        Ok(self.set(table, key, None).is_some())
    }

    fn scan(&mut self, table: Table, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(), Infallible> {
        // Copy the range first: `f` may not run under the lock (it is the caller's code).
        let rows: Vec<(Vec<u8>, Vec<u8>)> = {
            let trees = self.db.trees.lock().expect("not poisoned");
            trees[table.index()].range(start.to_vec()..).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        for (k, v) in rows {
            if !f(&k, &v) {
                break;
            }
        }
        Ok(())
    }
}
