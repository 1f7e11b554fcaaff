//! A log write that fails (issue 18, 5; a full disk made deterministic with the fault
//! plan): nothing of the failed transaction is visible — the database refuses every
//! read and write from then on, since memory holds changes the log does not — every
//! later commit fails, `group` ones too, and closing says what became of the records
//! the failed flush held. Those records (commits acknowledged with `group` durability
//! among them) are written when the database closes if the disk took writes again, so
//! no acknowledged commit is lost without a crash; a disk that stays full loses them,
//! and `close` says so. Dropping a database without `close` flushes its log too.
//!
//! Before: the failed transaction's change stayed visible and its rollback returned
//! `Ok`; the records of the failed flush were dropped (the `group` commits acknowledged
//! since the last flush were lost with no crash), and so were those of a database
//! dropped without `close`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{DramConfig, FaultError, FaultPlan, SsdConfig};
use tierdb::wal::{Durability, WalError};
use tierdb::{ByteSize, Error};

fn config(dir: &Path, durability: Durability, log: Option<&Arc<FaultPlan>>, ssd: Option<&Arc<FaultPlan>>) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: which log write fails is counted, and a checkpoint would flush the log buffer.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = 4096;
    c.buffer.dram = DramConfig::new(ByteSize(256 * 4096));
    let mut s = SsdConfig::new(dir.join("db").join("data.db"));
    s.page_size = 4096;
    s.faults = ssd.cloned();
    c.buffer.ssd = Some(s);
    c.wal.file.faults = log.cloned();
    // Only commits, checkpoints and closes flush: what is in the buffer is known.
    c.wal.flush_interval = Duration::from_secs(3600);
    c.durability = durability;
    c
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Transactions `from..to`, each a put of `key(i)` = "v<i>"; all must succeed.
fn commit(db: &Db, from: u32, to: u32) {
    for i in from..to {
        db.put("t", &key(i), format!("v{i}").as_bytes()).unwrap();
    }
}

/// The database, reopened without faults, holds exactly transactions `present` (and
/// none of `absent`).
fn check_after_reopen(dir: &Path, present: std::ops::Range<u32>, absent: std::ops::Range<u32>) {
    let db = Db::open(&config(dir, Durability::Sync, None, None)).unwrap();
    for i in present {
        assert_eq!(db.get("t", &key(i)).unwrap(), Some(format!("v{i}").into_bytes()), "transaction {i} lost");
    }
    for i in absent {
        assert_eq!(db.get("t", &key(i)).unwrap(), None, "transaction {i} is there");
    }
    db.close().unwrap();
}

fn poisoned(e: &Error) -> bool {
    matches!(e, Error::Wal(WalError::Poisoned { .. }))
}

#[test]
fn a_failed_log_write_leaves_nothing_of_its_transaction_visible() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let db = Db::open(&config(tmp.path(), Durability::Sync, Some(&plan), None)).unwrap();
    db.create_tree("t").unwrap();
    for k in [1, 2, 3] {
        db.put("t", &key(k), b"old").unwrap();
    }
    // A changes key 3 (logged in the buffer), then the disk fills up: B's commit
    // cannot flush, and the log fails.
    let mut a = db.begin();
    a.put("t", &key(3), b"a").unwrap();
    plan.fail_nth_write(1, FaultError::NoSpace);
    let e = db.put("t", &key(1), b"b").unwrap_err();
    assert!(e.to_string().contains("no space left"), "{e}");
    // A's next change is made in its leaf, and its append fails.
    let e = a.put("t", &key(2), b"a").unwrap_err();
    assert!(poisoned(&e), "{e}");
    // Nothing of it, or of B, can be seen: the database refuses reads and writes.
    for k in [1, 2, 3] {
        let e = db.get("t", &key(k)).unwrap_err();
        assert!(poisoned(&e) && e.to_string().contains("no space left"), "{e}");
    }
    assert!(poisoned(&db.put("t", &key(9), b"c").unwrap_err()));
    // The rollback cannot be logged: an error, not `Ok`; recovery rolls A back.
    let e = a.rollback().unwrap_err();
    assert!(poisoned(&e), "{e}");
    // Closing writes what the failed flush held (the disk takes writes again).
    let e = db.close().unwrap_err();
    assert!(e.to_string().contains("written and synced"), "{e}");
    let db = Db::open(&config(tmp.path(), Durability::Sync, None, None)).unwrap();
    assert_eq!(db.get("t", &key(2)).unwrap(), Some(b"old".to_vec()), "A's failed change");
    assert_eq!(db.get("t", &key(3)).unwrap(), Some(b"old".to_vec()), "A's change before it");
    // B's commit failed: it may or may not have survived (its record was written on
    // closing, so it did).
    assert_eq!(db.get("t", &key(1)).unwrap(), Some(b"b".to_vec()));
    assert_eq!(db.recovery().losers.len(), 1, "A: {:?}", db.recovery());
    db.close().unwrap();
}

#[test]
fn group_commits_acknowledged_before_the_log_failed_survive_close() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let db = Db::open(&config(tmp.path(), Durability::Group, Some(&plan), None)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 30); // acknowledged, in the log buffer
    plan.fail_nth_write(1, FaultError::NoSpace);
    let e = db.checkpoint().unwrap_err(); // its log force fails
    assert!(e.to_string().contains("no space left"), "{e}");
    // From now on no commit is acknowledged.
    for i in 30..35 {
        assert!(poisoned(&db.put("t", &key(i), b"x").unwrap_err()), "transaction {i}");
    }
    let t = db.begin();
    assert!(poisoned(&t.commit().unwrap_err()), "even one that wrote nothing");
    let e = db.close().unwrap_err();
    assert!(poisoned(&e) && e.to_string().contains("written and synced"), "{e}");
    check_after_reopen(tmp.path(), 0..30, 30..35);
}

#[test]
fn a_log_that_stays_full_says_on_close_which_commits_are_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let db = Db::open(&config(tmp.path(), Durability::Group, Some(&plan), None)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 10);
    db.wal().flush_until(db.wal().next_lsn()).unwrap();
    let durable = db.wal().durable_lsn();
    commit(&db, 10, 30);
    plan.fail_every_write_from(1, FaultError::NoSpace);
    db.checkpoint().unwrap_err();
    assert!(poisoned(&db.put("t", &key(30), b"x").unwrap_err()));
    let e = db.close().unwrap_err().to_string();
    assert!(e.contains("could not be written either") && e.contains("lost"), "{e}");
    assert!(e.contains(&format!("LSN {durable}..")), "{e}");
    // As after a crash within the flush interval: the acknowledged commits not yet
    // flushed are gone, and close said so.
    check_after_reopen(tmp.path(), 0..10, 10..31);
}

#[test]
fn group_commits_survive_a_drop_without_close() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(&config(tmp.path(), Durability::Group, None, None)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 30);
    assert!(db.wal().durable_lsn() < db.wal().next_lsn(), "the commits are in the buffer only");
    drop(db);
    check_after_reopen(tmp.path(), 0..30, 30..31);
}

#[test]
fn group_commits_survive_a_full_page_file() {
    let tmp = tempfile::tempdir().unwrap();
    let ssd = FaultPlan::new();
    let db = Db::open(&config(tmp.path(), Durability::Group, None, Some(&ssd))).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 30);
    ssd.fail_every_write_from(1, FaultError::NoSpace);
    assert!(db.checkpoint().unwrap_err().to_string().contains("no space left"));
    // The log is fine: commits go on, into its buffer.
    commit(&db, 30, 60);
    let e = db.close().unwrap_err();
    assert!(e.to_string().contains("no space left") || e.to_string().contains("poisoned"), "{e}");
    check_after_reopen(tmp.path(), 0..60, 60..61);
}
