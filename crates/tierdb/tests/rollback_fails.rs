//! A rollback that fails part-way halts the database. A transaction changes every key,
//! and its dirty leaves go out to the page file. The page file is then damaged under
//! the open database, so the rollback fails on the first leaf it reads back. At that
//! point memory holds some of the transaction's changes, undone or not. No read may
//! show them, no waiter for the transaction's locks may write over them, and `close`
//! may not checkpoint past them. The next open's recovery finishes the rollback from the
//! log. Before the fix, the failed rollback released its locks and left the active
//! table, and reads returned the uncommitted values.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::FileExt;

mod small_db;
use small_db::{PS, check_contents, config, key, value};

use tierdb::db::Db;
use tierdb::device::DoubleWriteMode;

const KEYS: u32 = 1_000;

#[test]
fn a_rollback_that_fails_part_way_halts_the_database_and_recovery_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), None, DoubleWriteMode::Off);
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    let mut model = BTreeMap::new();
    let mut t = db.begin();
    for i in 0..KEYS {
        t.put("t", &key(i), &value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    t.commit().unwrap();

    // Every leaf changed; with 12 DRAM frames most of them go out to the page file.
    let mut loser = db.begin();
    for i in 0..KEYS {
        loser.put("t", &key(i), &value(i, 2)).unwrap();
    }
    let writes = db.buffer().stats().buffer.dram_to_ssd_pages;
    assert!(writes > 40, "only {writes} pages written out: the test needs leaves on the page file");

    // Damage every page on the page file (one byte in the middle of each), keeping the
    // bytes to put back once the database is closed.
    let file = cfg.buffer.ssd.as_ref().unwrap().path.clone();
    let saved = fs::read(&file).unwrap();
    let f = fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
    let pages = saved.len() / PS;
    for p in 1..pages {
        let at = (p * PS + PS / 2) as u64;
        let mut b = [0u8];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);

    let err = loser.rollback().expect_err("the rollback read damaged leaves back");
    println!("rollback: {err}");

    // Nothing reads, writes or checkpoints any more: memory holds half a rollback.
    for i in 0..KEYS {
        match db.get("t", &key(i)) {
            Err(e) => assert!(e.to_string().contains("halted"), "get of key {i} after the failed rollback: {e}"),
            Ok(v) => panic!("get of key {i} after the failed rollback returned {:?}", v.map(|v| v[4])),
        }
    }
    let mut t = db.begin();
    let e = t.put("t", &key(0), &value(0, 3)).expect_err("a write after the failed rollback");
    assert!(e.to_string().contains("halted"), "{e}");
    drop(t);
    let e = db.checkpoint().expect_err("a checkpoint after the failed rollback");
    assert!(e.to_string().contains("halted"), "{e}");
    let e = db.close().expect_err("close after the failed rollback");
    assert!(e.to_string().contains("halted"), "{e}");

    // Undamaged, the page file holds older versions of some pages (as after a crash
    // that lost their last writes); the log holds every change and the partial rollback.
    fs::write(&file, &saved).unwrap();
    let db = Db::open(&cfg).unwrap();
    let report = db.recovery().clone();
    assert_eq!(report.losers.len(), 1, "recovery rolled back no transaction: {report:?}");
    check_contents(&db, &model, "after the halted rollback and a reopen");
    db.close().unwrap();
}
