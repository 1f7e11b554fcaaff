//! Isolation of `Db` transactions: snapshot isolation (the default), read committed and
//! read uncommitted, deadlock detection, the versions limit. Each test states the
//! anomaly it rules out with a fixed interleaving (the randomised history checker is
//! in tierdb-bench, `tests/isolation_history.rs`).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use tierdb::ByteSize;
use tierdb::db::{Db, DbConfig, DbError, Isolation};
use tierdb::wal::Durability;

fn open(dir: &std::path::Path, isolation: Isolation) -> Db {
    let mut c = DbConfig::new(dir.join("db"));
    c.buffer.page_size = 4096;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(64 * 4096));
    let mut ssd = tierdb::device::SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = 4096;
    c.buffer.ssd = Some(ssd);
    c.durability = Durability::Group;
    c.isolation = isolation;
    let db = Db::open(&c).unwrap();
    db.create_tree("t").unwrap();
    db
}

fn v(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

fn db_error(e: tierdb::Error) -> DbError {
    match e {
        tierdb::Error::Db(d) => d,
        e => panic!("not a database error: {e}"),
    }
}

fn scan(t: &tierdb::db::Txn<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    t.scan("t", b"", |k, v| {
        out.push((String::from_utf8_lossy(k).into(), String::from_utf8_lossy(v).into()));
        true
    })
    .unwrap();
    out
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn snapshot_isolation_shows_no_uncommitted_and_no_later_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"a", b"1").unwrap();
    db.put("t", b"b", b"1").unwrap();
    let reader = db.begin();
    let mut w = db.begin();
    w.put("t", b"a", b"2").unwrap();
    assert!(w.delete("t", b"b").unwrap());
    w.put("t", b"c", b"2").unwrap();
    // Uncommitted: neither the reader, a new transaction nor a plain read sees it.
    for r in [&reader, &db.begin()] {
        assert_eq!(r.get("t", b"a").unwrap(), v("1"), "dirty read");
        assert_eq!(r.get("t", b"b").unwrap(), v("1"), "an uncommitted delete seen");
        assert_eq!(r.get("t", b"c").unwrap(), None, "an uncommitted insert seen");
        assert_eq!(scan(r), pairs(&[("a", "1"), ("b", "1")]));
    }
    assert_eq!(db.get("t", b"a").unwrap(), v("1"));
    assert_eq!(db.get("t", b"c").unwrap(), None);
    assert_eq!(db.get_part("t", b"a", 0..1, <[u8]>::to_vec).unwrap(), v("1"));
    // The writer sees its own changes.
    assert_eq!(w.get("t", b"a").unwrap(), v("2"));
    assert_eq!(w.get("t", b"b").unwrap(), None);
    assert_eq!(scan(&w), pairs(&[("a", "2"), ("c", "2")]));
    w.commit().unwrap();
    // Committed after the reader began: still not seen (repeatable reads, no skew).
    assert_eq!(reader.get("t", b"a").unwrap(), v("1"), "non-repeatable read");
    assert_eq!(reader.get("t", b"b").unwrap(), v("1"));
    assert_eq!(scan(&reader), pairs(&[("a", "1"), ("b", "1")]));
    // A transaction begun after the commit and plain reads see it.
    let late = db.begin();
    assert_eq!(scan(&late), pairs(&[("a", "2"), ("c", "2")]));
    assert_eq!(db.get("t", b"a").unwrap(), v("2"));
    drop(late);
    reader.commit().unwrap();
    // No snapshot runs: every version is collected.
    let s = db.versions();
    assert_eq!((s.versions, s.committed_bytes, s.snapshots), (0, 0, 0), "{s:?}");
    db.close().unwrap();
}

#[test]
fn a_rolled_back_change_is_never_seen_and_its_versions_go() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"a", b"1").unwrap();
    let mut w = db.begin();
    w.put("t", b"a", b"2").unwrap();
    w.delete("t", b"a").unwrap();
    w.put("t", b"z", b"2").unwrap();
    assert_eq!(db.get("t", b"a").unwrap(), v("1"));
    w.rollback().unwrap();
    assert_eq!(db.get("t", b"a").unwrap(), v("1"));
    assert_eq!(db.get("t", b"z").unwrap(), None);
    assert_eq!(db.versions().versions, 0);
    db.close().unwrap();
}

#[test]
fn the_second_writer_of_a_key_conflicts_and_can_only_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"k", b"0").unwrap();
    // Committed after t began: t's write fails (a lost update otherwise).
    let mut t = db.begin();
    assert_eq!(t.get("t", b"k").unwrap(), v("0"));
    db.put("t", b"k", b"other").unwrap();
    let e = db_error(t.put("t", b"k", b"mine").unwrap_err());
    assert!(matches!(&e, DbError::WriteConflict { tree, key, .. } if tree == "t" && key == "k"), "{e}");
    // Doomed: every later operation says why.
    assert!(matches!(db_error(t.get("t", b"k").unwrap_err()), DbError::TxnFailed { .. }));
    assert!(matches!(db_error(t.put("t", b"x", b"1").unwrap_err()), DbError::TxnFailed { .. }));
    assert!(matches!(db_error(t.commit().unwrap_err()), DbError::TxnFailed { .. }));
    assert_eq!(db.get("t", b"k").unwrap(), v("other"));
    assert_eq!(db.get("t", b"x").unwrap(), None);
    // A locking read conflicts the same way.
    let mut t = db.begin();
    db.put("t", b"k", b"again").unwrap();
    assert!(matches!(db_error(t.get_for_update("t", b"k").unwrap_err()), DbError::WriteConflict { .. }));
    t.rollback().unwrap();
    // A key the transaction wrote first is its own: no conflict.
    let mut t = db.begin();
    t.put("t", b"k", b"1").unwrap();
    t.put("t", b"k", b"2").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("t", b"k").unwrap(), v("2"));
    db.close().unwrap();
}

#[test]
fn the_second_writer_waits_for_the_first_then_conflicts_or_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"k", b"0").unwrap();
    for first_commits in [true, false] {
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            let mut first = db.begin();
            let mut second = db.begin();
            first.put("t", b"k", b"first").unwrap();
            let waiter = s.spawn(|| {
                barrier.wait();
                let r = second.put("t", b"k", b"second");
                let ok = r.is_ok();
                let e = r.err().map(db_error);
                if ok {
                    second.commit().unwrap();
                } else {
                    second.rollback().unwrap();
                }
                e
            });
            barrier.wait();
            std::thread::sleep(Duration::from_millis(50));
            if first_commits {
                first.commit().unwrap()
            } else {
                first.rollback().unwrap()
            }
            let e = waiter.join().unwrap();
            if first_commits {
                assert!(matches!(e, Some(DbError::WriteConflict { .. })), "{e:?}");
            } else {
                assert!(e.is_none(), "{e:?}");
            }
        });
        let expect = if first_commits { "first" } else { "second" };
        assert_eq!(db.get("t", b"k").unwrap(), v(expect));
    }
    db.close().unwrap();
}

#[test]
fn read_committed_sees_each_commit_and_never_an_uncommitted_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::ReadCommitted);
    db.put("t", b"k", b"0").unwrap();
    let mut t = db.begin();
    let mut w = db.begin();
    w.put("t", b"k", b"1").unwrap();
    assert_eq!(t.get("t", b"k").unwrap(), v("0"), "dirty read");
    w.commit().unwrap();
    assert_eq!(t.get("t", b"k").unwrap(), v("1"), "read committed sees the commit");
    // No conflict for a later commit: the write goes on the latest value.
    db.put("t", b"k", b"2").unwrap();
    t.put("t", b"k", b"3").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("t", b"k").unwrap(), v("3"));
    db.close().unwrap();
}

#[test]
fn read_uncommitted_reads_the_tree_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::ReadUncommitted);
    assert_eq!(db.isolation(), Isolation::ReadUncommitted);
    db.put("t", b"k", b"0").unwrap();
    let mut w = db.begin();
    w.put("t", b"k", b"1").unwrap();
    assert_eq!(db.begin().get("t", b"k").unwrap(), v("1"));
    w.rollback().unwrap();
    assert_eq!(db.versions().versions, 0, "no version store");
    db.close().unwrap();
}

#[test]
fn a_read_only_transaction_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"k", b"0").unwrap();
    let end = db.wal().next_lsn();
    let t = db.begin();
    assert_eq!(t.get("t", b"k").unwrap(), v("0"));
    assert_eq!(scan(&t).len(), 1);
    t.commit().unwrap();
    assert_eq!(db.wal().next_lsn(), end, "a read-only transaction logged something");
    assert_eq!(db.versions().versions, 0);
    db.close().unwrap();
}

#[test]
fn a_long_reader_is_ended_when_the_versions_it_holds_pass_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DbConfig::new(dir.path().join("db"));
    c.durability = Durability::None;
    c.version_bytes_max = 64 << 10;
    let db = Db::open(&c).unwrap();
    db.create_tree("t").unwrap();
    for i in 0..100u32 {
        db.put("t", &i.to_be_bytes(), &[0u8; 100]).unwrap();
    }
    let old = db.begin();
    assert_eq!(old.get("t", &7u32.to_be_bytes()).unwrap().map(|v| v.len()), Some(100));
    let mut peak = 0;
    for round in 1..=20u8 {
        for i in 0..100u32 {
            db.put("t", &i.to_be_bytes(), &[round; 100]).unwrap();
        }
        peak = peak.max(db.versions().committed_bytes);
    }
    // Bounded: at most the limit and one transaction's versions more.
    assert!(peak <= (64 << 10) + 1024, "versions kept grew to {peak} bytes");
    let s = db.versions();
    assert!(s.snapshots_ended >= 1, "{s:?}");
    let e = db_error(old.get("t", &7u32.to_be_bytes()).unwrap_err());
    assert!(matches!(e, DbError::SnapshotTooOld { limit: 65536, .. }), "{e}");
    assert!(e.to_string().contains("version_bytes_max"), "{e}");
    drop(old);
    assert_eq!(db.get("t", &7u32.to_be_bytes()).unwrap(), Some(vec![20u8; 100]));
    db.close().unwrap();
}

#[test]
fn deadlocks_of_two_and_three_fail_within_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    for n in [2usize, 3] {
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("d{n}-{i}").into_bytes()).collect();
        let barrier = Barrier::new(n);
        let outcomes: Vec<(Result<(), DbError>, Duration)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (db, keys, barrier) = (&db, &keys, &barrier);
                    s.spawn(move || {
                        let mut t = db.begin();
                        t.put("t", &keys[i], b"mine").unwrap();
                        barrier.wait();
                        // Each waits for the next one's key: a cycle of n.
                        std::thread::sleep(Duration::from_millis(20 * i as u64));
                        let t0 = Instant::now();
                        let r = t.put("t", &keys[(i + 1) % n], b"next").map_err(db_error);
                        let took = t0.elapsed();
                        if r.is_ok() {
                            t.commit().unwrap();
                        } else {
                            t.rollback().unwrap();
                        }
                        (r, took)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // One transaction of the cycle fails with the deadlock; of the others, one that
        // gets a key committed after it began conflicts (snapshot isolation).
        let failed: Vec<_> = outcomes.iter().filter(|(r, _)| matches!(r, Err(DbError::Deadlock { .. }))).collect();
        assert_eq!(failed.len(), 1, "one transaction of the cycle of {n} fails: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .all(|(r, _)| matches!(r, Ok(()) | Err(DbError::Deadlock { .. } | DbError::WriteConflict { .. }))),
            "{outcomes:?}"
        );
        match &failed[0] {
            (Err(DbError::Deadlock { cycle, .. }), took) => {
                assert_eq!(cycle.len(), n, "{cycle:?}");
                assert!(*took < Duration::from_millis(500), "detected after {took:?}");
            }
            other => panic!("not a deadlock: {other:?}"),
        }
    }
    db.close().unwrap();
}

#[test]
fn ranges_read_the_snapshot_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    for i in 0..300u32 {
        db.put("t", format!("k{i:03}").as_bytes(), b"old").unwrap();
    }
    let reader = db.begin();
    let mut w = db.begin();
    // Deletes (the tree loses the keys), updates and inserts the reader must not see.
    for i in (0..300u32).step_by(3) {
        w.delete("t", format!("k{i:03}").as_bytes()).unwrap();
    }
    for i in (1..300u32).step_by(3) {
        w.put("t", format!("k{i:03}").as_bytes(), b"new").unwrap();
    }
    w.put("t", b"k150a", b"new").unwrap();
    let expect: Vec<(Vec<u8>, Vec<u8>)> =
        (0..300u32).map(|i| (format!("k{i:03}").into_bytes(), b"old".to_vec())).collect();
    let lo = b"k100".as_slice();
    let hi = b"k200".as_slice();
    let in_range: Vec<_> = expect.iter().filter(|(k, _)| k.as_slice() >= lo && k.as_slice() < hi).cloned().collect();
    let check_reader = |what: &str| {
        let fwd: Vec<_> = reader.range("t", lo..hi).unwrap().map(Result::unwrap).collect();
        assert_eq!(fwd, in_range, "forward, {what}");
        let mut rev: Vec<_> = reader.range("t", lo..hi).unwrap().rev().map(Result::unwrap).collect();
        rev.reverse();
        assert_eq!(rev, in_range, "reverse, {what}");
    };
    check_reader("writer running");
    let all: Vec<_> = db.range("t", ..).unwrap().map(Result::unwrap).collect();
    assert_eq!(all, expect, "Db::range reads the latest committed state");
    // The writer sees its own: 200 keys left and one inserted.
    assert_eq!(w.range("t", ..).unwrap().count(), 201);
    w.commit().unwrap();
    // Committed after the reader began: the reader still sees its snapshot.
    check_reader("writer committed");
    let latest: Vec<_> = db.range("t", lo..hi).unwrap().map(Result::unwrap).collect();
    assert_eq!(latest.len(), 100 - 33 + 1, "{latest:?}");
    assert!(latest.iter().all(|(k, v)| v == b"new" || !k.ends_with(b"a")));
    reader.commit().unwrap();
    assert_eq!(db.versions().versions, 0);
    db.close().unwrap();
}

#[test]
fn more_running_transactions_than_slots_keep_their_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Isolation::Snapshot);
    db.put("t", b"k", b"0").unwrap();
    // Beyond the lock-free slots, snapshots go to the shared registry.
    let n = 300;
    let mut readers: Vec<_> = (0..n).map(|_| db.begin()).collect();
    assert_eq!(db.versions().snapshots, n as u64);
    db.put("t", b"k", b"1").unwrap();
    for (i, r) in readers.iter().enumerate() {
        assert_eq!(r.get("t", b"k").unwrap(), v("0"), "reader {i}");
    }
    assert!(db.versions().versions > 0, "the before-image is kept for them");
    // Half commit, half roll back (or are dropped).
    for (i, r) in readers.drain(..).enumerate() {
        if i % 2 == 0 { r.commit().unwrap() } else { drop(r) }
    }
    db.put("t", b"k", b"2").unwrap();
    let s = db.versions();
    assert_eq!((s.versions, s.snapshots), (0, 0), "{s:?}");
    assert_eq!(db.begin().get("t", b"k").unwrap(), v("2"));
    drop(readers);
    db.close().unwrap();
}
