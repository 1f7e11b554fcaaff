//! The double-write area lost after a power loss (issue 18, item 2): pages written out
//! after the last checkpoint had their copies made durable in `data.db.dwa` and their
//! flush records logged, but their in-place writes were never synced, and the power loss
//! dropped them. With the area gone too (deleted or zeroed, as a lost or wiped file),
//! those pages are intact on SSD but older than their flush records say: a redo that
//! skipped changes by the flush records would leave them old. The open must say the area
//! was lost and redo every change from the log instead: every committed value is there.

use std::collections::BTreeMap;

use small_db::{check_contents as check, config, key, value};
use tierdb::db::Db;
use tierdb::device::{DoubleWriteMode, FaultPlan};

mod small_db;

const KEYS: u32 = 800;
/// Coprime with `KEYS`: `i * STRIDE % KEYS` visits every key once, far apart.
const STRIDE: u32 = 7919;

/// Loads and checkpoints, rewrites every leaf (evictions: copies in the area, flush
/// records in the log, in-place writes unsynced), loses the power, then the area.
fn lose_the_area(zero: bool) {
    let what = if zero { "area zeroed" } else { "area deleted" };
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&config(dir.path(), Some(&plan), DoubleWriteMode::Ssd)).unwrap();
        db.create_tree("t").unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        db.checkpoint().unwrap();
        for round in 2..4 {
            for i in (0..KEYS).map(|i| i * STRIDE % KEYS) {
                db.put("t", &key(i), &value(i, round)).unwrap();
                model.insert(key(i), value(i, round));
            }
        }
        std::mem::forget(db); // the crash: nothing more is written
    }
    plan.lose_unsynced().unwrap();
    let area = dir.path().join("db").join("data.db.dwa");
    if zero {
        let len = std::fs::metadata(&area).unwrap().len();
        std::fs::write(&area, vec![0u8; len as usize]).unwrap();
    } else {
        std::fs::remove_file(&area).unwrap();
    }
    let db = Db::open(&config(dir.path(), None, DoubleWriteMode::Ssd)).unwrap_or_else(|e| panic!("{what}: {e}"));
    let rep = db.recovery().clone();
    assert!(rep.double_write_lost.as_deref().is_some_and(|w| w.contains("data.db.dwa")), "{what}: {rep:?}");
    assert!(rep.flush_records > 0, "{what}: no flush record, the test tests nothing: {rep:?}");
    assert_eq!(rep.changes_skipped_unread + rep.images_skipped_unread, 0, "{what}: {rep:?}");
    check(&db, &model, what);
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), None, DoubleWriteMode::Ssd)).unwrap();
    assert!(db.recovery().double_write_lost.is_none(), "made afresh: {:?}", db.recovery());
    check(&db, &model, what);
    db.close().unwrap();
}

#[test]
fn a_double_write_area_deleted_after_a_power_loss_loses_no_commit() {
    lose_the_area(false);
}

#[test]
fn a_double_write_area_zeroed_after_a_power_loss_loses_no_commit() {
    lose_the_area(true);
}
