//! A crash inside a merge whose parent is left underfull (the `nvm-direct` crash test's
//! "open bug" of issue 5).
//!
//! A delete that empties the last leaf under an underfull inner node merges the leaf
//! into its left sibling and takes a separator out of that inner node; the inner node,
//! still underfull, then tries to merge with its own siblings and, when neither fits,
//! was released at once instead of staying in the structure change:
//!
//! - on `nvm-direct` it was written back in place, with its own line image, before the
//!   change's images and end record were logged; a crash in between left a parent whose
//!   last child was a leaf with a finite upper fence (the left leaf without the merge);
//! - on a buffered store its change was never logged, so a crash after the change
//!   committed left it pointing at the freed page.
//!
//! The tests crash (a failed write stops the store; unsynced writes are lost) at every
//! log write of the first deletes that merge, and check the tree and its contents after
//! recovery.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use tierdb::ByteSize;
use tierdb::buffer::BufferManager;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore};
use tierdb::device::{DramConfig, FaultError, FaultPlan, NvmConfig, SsdConfig};
use tierdb::sources::DirectConfig;
use tierdb::sources::NvmDirect;
use tierdb::wal::Durability;

const PAGE: usize = 4096;
/// Merging deletes whose every log write is a crash point.
const MERGES_TRIED: usize = 12;

fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: what recovery redoes and undoes is asserted: no checkpoint but the test's own.
    c.checkpoint = CheckpointConfig::OFF;
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

fn open_direct(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> Db<NvmDirect> {
    let d = DirectConfig::new(NvmConfig::new(dir.join("data.nvm"), ByteSize(1024 * PAGE as u64)), PAGE);
    Db::open_nvm_direct(&config(dir, plan), &d).unwrap()
}

/// `ssd-bm`, with DRAM for the whole tree: nothing is written out before a crash but
/// what a checkpoint writes.
fn open_buffered(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> Db<BufferManager> {
    let mut c = config(dir, plan);
    c.buffer.page_size = PAGE;
    c.buffer.dram = DramConfig::new(ByteSize(256 * PAGE as u64));
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = PAGE;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    Db::open(&c).unwrap()
}

/// Long keys with a long common head: separators are long, so the inner nodes at the
/// root's edges (no fence prefix) hold few of them and a three-level tree is small.
fn key(i: u32) -> Vec<u8> {
    let mut k = vec![b'a'; 200];
    k.extend_from_slice(format!("{i:06}").as_bytes());
    k
}

/// Ascending inserts until the tree has three levels and then `extra` more: the root
/// split left the right inner node with few separators (underfull), and its left
/// sibling full. Returns the keys.
fn build<S: DbStore>(db: &Db<S>) -> Vec<Vec<u8>> {
    db.create_tree("t").unwrap();
    let mut keys = Vec::new();
    let mut three_levels_at = None;
    for i in 0.. {
        assert!(i < 5_000, "the tree never grew a third level");
        let k = key(i);
        db.put("t", &k, &[i as u8; 60]).unwrap();
        keys.push(k);
        if three_levels_at.is_none() && i % 10 == 0 {
            let stats = tierdb::Catalog::open_tree(db.store(), "t").unwrap().check_invariants().unwrap();
            if stats.height >= 3 {
                three_levels_at = Some(i);
            }
        }
        if three_levels_at.is_some_and(|at| i >= at + 60) {
            break;
        }
    }
    keys
}

/// The tree's nodes (fewer after a delete that merged).
fn node_count<S: DbStore>(db: &Db<S>) -> u64 {
    let stats = tierdb::Catalog::open_tree(db.store(), "t").unwrap().check_invariants().unwrap();
    stats.leaves + stats.inner_nodes
}

/// Deletes the keys from the top down, stopping at the first error; returns how many
/// succeeded.
fn delete_down<S: DbStore>(db: &Db<S>, keys: &[Vec<u8>]) -> usize {
    for (n, k) in keys.iter().rev().enumerate() {
        match db.delete("t", k) {
            Ok(found) => assert!(found),
            Err(_) => return n,
        }
    }
    keys.len()
}

/// Crashes at every log write of the first merging deletes; returns how many points.
fn crash_in_merges<S: DbStore>(open: fn(&Path, Option<&Arc<FaultPlan>>) -> Db<S>) -> usize {
    // A dry run: which deletes merge, and which log writes (counted by the plan) each
    // makes.
    let mut crash_points = Vec::new();
    {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let plan = FaultPlan::new();
        let db = open(dir.path(), Some(&plan));
        let keys = build(&db);
        let base = plan.counts().0;
        let mut merges = 0;
        let mut nodes = node_count(&db);
        for k in keys.iter().rev() {
            let before = plan.counts().0;
            assert!(db.delete("t", k).unwrap());
            let now = node_count(&db);
            if std::mem::replace(&mut nodes, now) > now {
                crash_points.extend(before - base + 1..=plan.counts().0 - base);
                merges += 1;
                if merges == MERGES_TRIED {
                    break;
                }
            }
        }
        assert_eq!(merges, MERGES_TRIED, "the deletes merged too rarely");
    }
    let points = crash_points.len();
    for n in crash_points {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let plan = FaultPlan::new();
        let keys;
        let done;
        {
            let db = open(dir.path(), Some(&plan));
            keys = build(&db);
            plan.fail_nth_write(n, FaultError::Io);
            done = delete_down(&db, &keys);
            assert!(done < keys.len(), "crash point {n}: no write failed");
            std::mem::forget(db); // the process stops: nothing more is written
        }
        plan.lose_unsynced().unwrap();
        let db = open(dir.path(), None);
        let rep = db.recovery().clone();
        let tree = tierdb::Catalog::open_tree(db.store(), "t").unwrap();
        if let Err(e) = tree.check_invariants() {
            panic!("crash at log write {n} of the deletes (after {done} deletes): {e}; {rep:?}");
        }
        // The delete that failed did not commit: it is rolled back.
        let want: BTreeSet<Vec<u8>> = keys[..keys.len() - done].iter().cloned().collect();
        let mut got = BTreeSet::new();
        db.scan("t", b"", |k, _| got.insert(k.to_vec())).unwrap();
        assert!(got == want, "crash at log write {n}: {} keys, {} expected; {rep:?}", got.len(), want.len());
    }
    points
}

#[test]
fn a_crash_inside_a_merge_that_leaves_its_parent_underfull_recovers_a_valid_tree() {
    // Every write-back forces the log: several writes per merging delete.
    let points = crash_in_merges(open_direct);
    assert!(points > 2 * MERGES_TRIED, "{points} crash points");
}

#[test]
fn a_crash_after_a_merge_that_leaves_its_parent_underfull_recovers_a_valid_tree_on_a_buffered_store() {
    // One log write per delete here (its commit forces the log).
    let points = crash_in_merges(open_buffered);
    assert!(points >= MERGES_TRIED, "{points} crash points");
}
