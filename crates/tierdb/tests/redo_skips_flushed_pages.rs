//! Flush records (`wal::Kind::PagesFlushed`): the buffer manager logs the pages it
//! writes to SSD with their last-flush LSNs, and redo skips the changes a page's SSD copy
//! holds without reading the page.
//!
//! The tests update a tree far larger than a tiny DRAM pool (so leaves are written out
//! again and again), crash — the process dies, or the power goes and unsynced writes are
//! lost — and reopen: every committed value is there, the tree's invariants hold, and
//! redo skipped changes unread. Without a double-write area an unsynced page write may
//! be lost, so nothing is noted and redo reads every page, as before.

use std::collections::BTreeMap;

use small_db::{check_contents as check, config, key, value};
use tierdb::db::Db;
use tierdb::device::{DoubleWriteMode, FaultPlan};

mod small_db;

const KEYS: u32 = 800;
/// Update rounds after the checkpoint: each rewrites every leaf several times.
const ROUNDS: u8 = 4;
/// Coprime with `KEYS`: `i * STRIDE % KEYS` visits every key once, far apart.
const STRIDE: u32 = 7919;

/// Loads, checkpoints, updates (splits and evictions), crashes; reopens and checks.
/// Returns the recovery report.
fn update_then_crash(lose_unsynced: bool, double_write: DoubleWriteMode) -> tierdb::db::RecoveryReport {
    let what = format!(
        "{}, double write {}",
        if lose_unsynced { "power loss" } else { "process killed" },
        double_write.name()
    );
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&config(dir.path(), Some(&plan), double_write)).unwrap();
        db.create_tree("t").unwrap();
        for i in (0..KEYS).step_by(2) {
            db.put("t", &key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        db.checkpoint().unwrap();
        for round in 2..2 + ROUNDS {
            // The odd keys on the first round: splits (page images) after the checkpoint.
            // Later rounds in a scattered order: nearly every update misses DRAM.
            let keys: Vec<u32> = if round == 2 {
                (1..KEYS).step_by(2).collect()
            } else {
                (0..KEYS).map(|i| i * STRIDE % KEYS).collect()
            };
            for i in keys {
                if round > 2 && i % 3 == 0 {
                    continue;
                }
                db.put("t", &key(i), &value(i, round)).unwrap();
                model.insert(key(i), value(i, round));
            }
        }
        std::mem::forget(db); // the crash: nothing more is written
    }
    if lose_unsynced {
        plan.lose_unsynced().unwrap();
    }
    let db = Db::open(&config(dir.path(), None, double_write)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    check(&db, &model, &what);
    let rep = db.recovery().clone();
    // Work on, close, reopen: the pages recovery left are sound.
    for i in 0..50 {
        db.put("t", &key(i), &value(i, 99)).unwrap();
        model.insert(key(i), value(i, 99));
    }
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), None, double_write)).unwrap();
    check(&db, &model, &what);
    db.close().unwrap();
    rep
}

#[test]
fn redo_skips_the_changes_a_flushed_page_holds_after_a_crash() {
    let rep = update_then_crash(false, DoubleWriteMode::Ssd);
    assert!(rep.flush_records > 0, "no flush record: the test tests nothing; {rep:?}");
    assert!(rep.changes_skipped_unread > 0, "{rep:?}");
    assert!(rep.changes_skipped_unread <= rep.changes_skipped, "{rep:?}");
}

#[test]
fn redo_skips_the_changes_a_flushed_page_holds_after_a_power_loss() {
    let rep = update_then_crash(true, DoubleWriteMode::Ssd);
    assert!(rep.flush_records > 0, "{rep:?}");
    assert!(rep.changes_skipped_unread > 0, "{rep:?}");
}

/// Without a double-write area a page write is not durable until the file is synced:
/// no flush record, and redo reads every page it redoes (the power loss drops unsynced
/// writes, which redo rebuilds).
#[test]
fn without_a_double_write_area_nothing_is_noted() {
    for lose in [false, true] {
        let rep = update_then_crash(lose, DoubleWriteMode::Off);
        assert_eq!(rep.flush_records, 0, "{rep:?}");
        assert_eq!(rep.changes_skipped_unread, 0, "{rep:?}");
        assert_eq!(rep.images_skipped_unread, 0, "{rep:?}");
        assert!(rep.changes_redone > 0, "{rep:?}");
    }
}
