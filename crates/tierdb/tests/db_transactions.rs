//! The database API end to end: transactions commit and roll back over several trees,
//! and a power loss at any moment loses no committed transaction and keeps no change of
//! an unfinished one (redo of the log, undo of the losers).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{FaultPlan, NvmConfig};
use tierdb::wal::{Durability, LogBuffer};

fn config(dir: &std::path::Path, plan: Option<&Arc<FaultPlan>>, nvm: bool, nvm_log: bool) -> DbConfig {
    config_with(dir, plan, nvm, nvm_log, "hymem")
}

/// [`config`] with `policy` over the NVM tier.
fn config_with(
    dir: &std::path::Path,
    plan: Option<&Arc<FaultPlan>>,
    nvm: bool,
    nvm_log: bool,
    policy: &str,
) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: recovery reports (losers, undo counts) are asserted: no checkpoint but the test's own.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = 4096;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(32 * 4096));
    if nvm {
        c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(2 << 20)));
        c.buffer.techniques = Techniques::ALL;
        c.buffer.policy = policy.into();
        if policy.starts_with("spitfire") {
            // DRAM for a third of the tree: most leaves are reached in NVM.
            c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(16 * 4096));
        }
    }
    if nvm_log {
        c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20)));
    }
    let mut ssd = tierdb::device::SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = 4096;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

fn contents(db: &Db, tree: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    db.scan(tree, b"", |k, v| {
        m.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    m
}

#[test]
fn commit_rollback_and_drop_over_two_trees() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&config(dir.path(), None, false, false)).unwrap();
    db.create_tree("a").unwrap();
    db.create_tree("b").unwrap();
    let mut t = db.begin();
    t.put("a", b"k1", b"v1").unwrap();
    t.put("b", b"k2", b"v2").unwrap();
    t.commit().unwrap();
    let mut t = db.begin();
    t.put("a", b"k1", b"changed").unwrap();
    t.put("a", b"k3", b"new").unwrap();
    assert!(t.update_in_place("a", b"k3", 1, b"EW").unwrap());
    assert!(t.update_in_place("a", b"k1", 6, b"D").unwrap());
    assert!(!t.update_in_place("a", b"k4", 0, b"x").unwrap(), "no such key");
    assert!(t.update_in_place("a", b"k1", 6, b"DD").is_err(), "past the value's end");
    assert!(t.delete("b", b"k2").unwrap());
    assert_eq!(t.get("a", b"k1").unwrap().as_deref(), Some(&b"changeD"[..]), "a transaction sees its changes");
    assert_eq!(t.get_part("a", b"k3", 1..3, <[u8]>::to_vec).unwrap().as_deref(), Some(&b"EW"[..]));
    t.rollback().unwrap();
    assert_eq!(db.get("a", b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    let mut t = db.begin();
    assert!(t.update_in_place("b", b"k2", 1, b"9").unwrap());
    t.commit().unwrap();
    assert_eq!(db.get("b", b"k2").unwrap().as_deref(), Some(&b"v9"[..]));
    let mut t = db.begin();
    assert!(t.update_in_place("b", b"k2", 1, b"2").unwrap());
    t.commit().unwrap();
    assert_eq!(db.get("a", b"k3").unwrap(), None);
    assert_eq!(db.get("b", b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    {
        let mut t = db.begin();
        t.put("b", b"k9", b"x").unwrap();
        // Dropped without commit: rolled back.
    }
    assert_eq!(db.get("b", b"k9").unwrap(), None);
    assert!(db.get("nope", b"k").is_err());
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), None, false, false)).unwrap();
    assert_eq!(db.tree_names(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(db.get("a", b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert!(db.recovery().losers.is_empty(), "{:?}", db.recovery());
}

/// Random transactions, some committed, some left open, then a power loss (unsynced
/// writes to the page file and the log are dropped) and a reopen: the committed state
/// is exactly there.
fn power_loss(nvm: bool, nvm_log: bool, seed: u64) {
    power_loss_with(nvm, nvm_log, seed, "hymem");
}

fn power_loss_with(nvm: bool, nvm_log: bool, seed: u64, policy: &str) {
    let config = |dir: &std::path::Path, plan: Option<&Arc<FaultPlan>>, nvm: bool, nvm_log: bool| {
        config_with(dir, plan, nvm, nvm_log, policy)
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    {
        let db = Db::open(&config(dir.path(), Some(&plan), nvm, nvm_log)).unwrap();
        db.create_tree("t").unwrap();
        for round in 0..40 {
            let mut t = db.begin();
            let mut staged = model.clone();
            for _ in 0..rng.random_range(1..40) {
                common::random_op(&mut t, &mut rng, &mut staged);
            }
            match round % 5 {
                4 => t.rollback().unwrap(),
                _ => {
                    t.commit().unwrap();
                    model = staged;
                }
            }
            if round == 20 {
                db.checkpoint().unwrap();
            }
        }
        // Transactions in flight at the power loss: never committed.
        let mut open = db.begin();
        for (k, v) in model.iter().take(50) {
            assert!(open.update_in_place("t", k, v.len() / 2, &vec![0xDD; v.len() - v.len() / 2]).unwrap());
        }
        for i in 0..300 {
            open.put("t", format!("key{:05}", i * 7).as_bytes(), &[0xEE; 200]).unwrap();
        }
        std::mem::forget(open);
        if policy.contains("dw=0,") {
            let b = db.buffer().stats().buffer;
            assert!(b.nvm_writes_in_place > 0, "{policy}: {b:?}");
        }
        std::mem::forget(db); // the process stops: nothing more is written
    }
    plan.lose_unsynced().unwrap();
    let db = Db::open(&config(dir.path(), None, nvm, nvm_log)).unwrap();
    let rep = db.recovery().clone();
    assert_eq!(rep.losers.len(), 1, "{rep:?}");
    assert!(rep.updates_undone > 0 || rep.changes_redone > 0, "{rep:?}");
    let got = contents(&db, "t");
    assert_eq!(got.len(), model.len(), "{rep:?}");
    assert!(got == model, "committed state differs after recovery: {rep:?}");
    db.buffer().check_invariants();
    db.close().unwrap();
    // And again: a second recovery finds nothing to undo.
    let db = Db::open(&config(dir.path(), None, nvm, nvm_log)).unwrap();
    assert!(db.recovery().losers.is_empty());
    assert!(contents(&db, "t") == model);
}

#[test]
fn power_loss_keeps_exactly_the_committed_transactions() {
    power_loss(false, false, 1);
}

#[test]
fn power_loss_with_nvm_techniques_and_an_nvm_log_buffer() {
    power_loss(true, true, 2);
    power_loss(true, false, 3);
}

/// Spitfire with DRAM bypassed: leaves read and changed in place in NVM (changes staged
/// and persisted at unfix after the log force), through a power loss.
#[test]
fn power_loss_with_pages_changed_in_place_in_nvm() {
    for (seed, knobs) in [(40, "dr=0,dw=0,nr=1,nw=1"), (41, "dr=0.5,dw=0.3,nr=0.5,nw=0.5"), (42, "b")] {
        power_loss_with(true, seed % 2 == 0, seed, &format!("spitfire:{knobs}"));
    }
}

#[test]
fn power_loss_under_many_seeds() {
    for seed in 10..30 {
        power_loss(seed % 3 == 0, seed % 2 == 0, seed);
    }
}

/// Recovery rolls a loser back and then forgets it: the next checkpoint's start point
/// (where the following recovery begins, and below which the log is deleted) lies past
/// the loser's records and its compensations. Before the fix the loser stayed in the
/// set of active transactions, so every checkpoint of that process went back to its
/// rollback's first record.
#[test]
fn a_loser_rolled_back_by_recovery_no_longer_holds_back_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || {
        let mut c = config(dir.path(), None, false, false);
        c.wal.file.segment_bytes = 64 << 10; // the smallest: truncation shows
        c
    };
    {
        let db = Db::open(&cfg()).unwrap();
        db.create_tree("t").unwrap();
        let mut loser = db.begin();
        for i in 0..400u32 {
            loser.put("t", format!("loser{i:05}").as_bytes(), &[0xAB; 200]).unwrap();
        }
        // A synced commit forces the log, the loser's records with it.
        db.put("t", b"committed", b"yes").unwrap();
        // And its end record, so that this log's flusher has nothing left to write
        // while the next open reads the log.
        db.wal().flush_until(db.wal().next_lsn()).unwrap();
        std::mem::forget(loser);
        std::mem::forget(db); // the process stops
    }
    let db = Db::open(&cfg()).unwrap();
    let rep = db.recovery().clone();
    assert_eq!((rep.losers.len(), rep.updates_undone), (1, 400), "{rep:?}");
    // The compensations follow the log end that recovery found.
    let compensations_from = rep.log_end;
    let after_undo = db.wal().next_lsn();
    assert!(after_undo > compensations_from.advance(128 << 10), "{rep:?}: the rollback spans segments");
    db.put("t", b"later", b"1").unwrap();
    db.checkpoint().unwrap();
    assert!(
        db.wal().start_lsn() > compensations_from,
        "the log is truncated past the rollback: starts at {}, compensations from {compensations_from}",
        db.wal().start_lsn()
    );
    db.wal().flush_until(db.wal().next_lsn()).unwrap();
    std::mem::forget(db); // no close: the next open starts where that checkpoint said
    let db = Db::open(&cfg()).unwrap();
    let rep2 = db.recovery().clone();
    assert!(
        rep2.redo_from >= after_undo,
        "redo starts past the rolled-back loser: {rep2:?}, undo ended at {after_undo}"
    );
    assert!(rep2.losers.is_empty(), "{rep2:?}");
    assert_eq!(db.get("t", b"committed").unwrap(), Some(b"yes".to_vec()));
    assert_eq!(db.get("t", b"loser00000").unwrap(), None);
    db.close().unwrap();
}
