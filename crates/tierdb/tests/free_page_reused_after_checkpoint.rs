//! A crash after a page that was free at the last checkpoint was handed out again and
//! written to the page file (issue 5: `tierdb crashtest --arch ssd-bm --log-buffer nvm
//! --seed 502` stopped on reopen with "page 45 in free-page chain … not marked free").
//!
//! The checkpoint used to persist the free list as a chain through the free pages
//! themselves; a free page reused after the checkpoint and written out (an eviction)
//! lost its link and its free marker, and the reopen walked the checkpoint's chain into
//! it. The tests free pages (merging deletes), checkpoint, reuse every free page for new
//! nodes (splits), make those nodes reach the page file (evictions from a small DRAM
//! pool), crash (the process dies; with and without a power loss that drops unsynced
//! writes) and reopen: every committed key is there, the tree's invariants hold, no free
//! page is in use and no page is lost (pages in use + free pages = pages allocated).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use small_db::{PS, key, value};
use tierdb::btree::{NODE_MAGIC, NodeRef};
use tierdb::db::{Db, DbConfig};
use tierdb::device::{DoubleWriteMode, FaultPlan, SsdConfig};
use tierdb::{Catalog, PageId, PageSource};

mod small_db;

const KEYS: u32 = 600;

fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    small_db::config(dir, plan, DoubleWriteMode::Ssd)
}

/// The pages of the database in use: the catalog and every node of tree `t`.
fn pages_in_use(db: &Db) -> BTreeSet<PageId> {
    let root = Catalog::open_tree(db.store(), "t").unwrap().root();
    let mut seen = BTreeSet::from([PageId::CATALOG]);
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        assert!(seen.insert(pid), "{pid} reached twice");
        let page = db.store().fix_shared(pid).unwrap();
        let node = NodeRef::parse(&page, pid).unwrap();
        if !node.is_leaf() {
            for i in 0..=node.count() {
                stack.push(node.child(i).unwrap());
            }
        }
    }
    seen
}

/// Every committed key, the tree's invariants, and the page accounting.
fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    small_db::check_contents(db, model, what);
    let in_use = pages_in_use(db);
    let free: BTreeSet<PageId> = db.buffer().free_pages().into_iter().collect();
    let both: Vec<&PageId> = in_use.intersection(&free).collect();
    assert!(both.is_empty(), "{what}: pages in use and free at once: {both:?}");
    let allocated = db.buffer().ssd().unwrap().superblock().pages_allocated;
    assert_eq!(
        in_use.len() as u64 + free.len() as u64,
        allocated - 1,
        "{what}: {} pages in use + {} free, {allocated} allocated (page 0 is the superblock)",
        in_use.len(),
        free.len()
    );
    assert_eq!(db.buffer().pages_in_use(), in_use.len() as u64, "{what}");
}

/// Frees pages, checkpoints, reuses them, writes them out, crashes; reopens and checks.
fn reuse_then_crash(lose_unsynced: bool) {
    let what = if lose_unsynced { "power loss" } else { "process killed" };
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&config(dir.path(), Some(&plan))).unwrap();
        db.create_tree("t").unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        // 1. Deletes that empty leaves: merges free their pages.
        for i in 100..500 {
            assert!(db.delete("t", &key(i)).unwrap());
            model.remove(&key(i));
        }
        // 2. The checkpoint persists the free list.
        db.checkpoint().unwrap();
        let free_at_checkpoint: BTreeSet<PageId> = db.buffer().free_pages().into_iter().collect();
        assert!(free_at_checkpoint.len() >= 10, "only {} pages freed", free_at_checkpoint.len());
        // 3. Inserts that split: new nodes take the free pages.
        for i in KEYS..KEYS + 500 {
            db.put("t", &key(i), &value(i, 2)).unwrap();
            model.insert(key(i), value(i, 2));
        }
        // 4. Reads through the small DRAM pool write the dirty nodes out.
        for _ in 0..2 {
            db.scan("t", b"", |_, _| true).unwrap();
        }
        let file = std::fs::read(dir.path().join("db").join("data.db")).unwrap();
        let reused_on_disk = free_at_checkpoint
            .iter()
            .filter(|p| file.get(p.0 as usize * PS..p.0 as usize * PS + 4) == Some(&NODE_MAGIC[..]))
            .count();
        assert!(reused_on_disk > 0, "no page free at the checkpoint was written out as a node: the test tests nothing");
        // 5. The crash: nothing more is written.
        std::mem::forget(db);
    }
    if lose_unsynced {
        plan.lose_unsynced().unwrap();
    }
    let db = Db::open(&config(dir.path(), None)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    check(&db, &model, what);
    // Work on, close cleanly, reopen: the list the recovery's checkpoint wrote holds.
    for i in 0..100 {
        db.put("t", &key(i), &value(i, 3)).unwrap();
        model.insert(key(i), value(i, 3));
    }
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), None)).unwrap();
    check(&db, &model, what);
    db.close().unwrap();
}

#[test]
fn a_free_page_reused_and_written_after_the_checkpoint_survives_a_crash() {
    reuse_then_crash(false);
}

#[test]
fn a_free_page_reused_and_written_after_the_checkpoint_survives_a_power_loss() {
    reuse_then_crash(true);
}

/// Recovery's redo point goes back to the oldest transaction active at the checkpoint,
/// so it replays records of pages freed before the checkpoint, which may now hold the
/// free-page list: those records (the split that made the page, its updates, the merge
/// that freed it) are skipped, and recovery leaves the list's pages as they were (a
/// second crash during recovery would read them again).
#[test]
fn records_older_than_the_checkpoint_of_a_page_that_now_holds_the_free_list_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let path = dir.path().join("db").join("data.db");
    let head = {
        let db = Db::open(&config(dir.path(), None)).unwrap();
        db.create_tree("t").unwrap();
        // A transaction that stays active across the checkpoint: recovery starts at
        // its first record, before everything below.
        let mut t = db.begin();
        t.put("t", b"a", b"uncommitted").unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        // Every other key first, so that every leaf of the range has records, then the
        // rest, which empties leaves: merges free them.
        for i in (100..500).step_by(2).chain((101..500).step_by(2)) {
            assert!(db.delete("t", &key(i)).unwrap());
            model.remove(&key(i));
        }
        db.checkpoint().unwrap();
        let head = PageId(db.buffer().ssd().unwrap().superblock().free_list_head);
        assert!(head.0 != 0);
        std::mem::forget(t); // the process dies: no rollback
        std::mem::forget(db);
        head
    };
    let list_page = |bytes: &[u8]| bytes[head.0 as usize * PS..(head.0 as usize + 1) * PS].to_vec();
    let before = list_page(&std::fs::read(&path).unwrap());
    let db = Db::open(&config(dir.path(), None)).unwrap_or_else(|e| panic!("reopen: {e}"));
    let rep = db.recovery().clone();
    assert_eq!(rep.losers.len(), 1, "{rep:?}");
    check(&db, &model, "records of free-list pages");
    assert!(list_page(&std::fs::read(&path).unwrap()) == before, "recovery wrote into {head}, a free-list page");
    assert!(rep.records_of_free_pages > 0, "no record of a free-list page was replayed: {rep:?}");
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), None)).unwrap();
    check(&db, &model, "reopened");
}

/// A list that is not as a checkpoint wrote it (here: a list page's marker changed and
/// the page sealed again, so the page file's own check passes) is reported, naming the
/// page and the file.
#[test]
fn a_corrupt_free_list_is_reported_naming_the_page_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let head = {
        let db = Db::open(&config(dir.path(), None)).unwrap();
        db.create_tree("t").unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 1)).unwrap();
        }
        for i in 100..500 {
            db.delete("t", &key(i)).unwrap();
        }
        db.close().unwrap();
        let ssd = SsdConfig::new(dir.path().join("db").join("data.db"));
        let sb = tierdb::device::SsdFile::open(&SsdConfig { page_size: PS, ..ssd }).unwrap().superblock();
        assert!(sb.free_pages > 0 && sb.free_list_head != 0, "{sb:?}");
        PageId(sb.free_list_head)
    };
    let path = dir.path().join("db").join("data.db");
    let mut bytes = std::fs::read(&path).unwrap();
    let page = &mut bytes[head.0 as usize * PS..(head.0 as usize + 1) * PS];
    tierdb::device::page_seal::clear(page);
    page[0] ^= 0x01;
    tierdb::device::page_seal::seal(page, head);
    std::fs::write(&path, &bytes).unwrap();
    let e = Db::open(&config(dir.path(), None)).map(|_| ()).unwrap_err();
    match &e {
        tierdb::Error::Buffer(tierdb::buffer::BufferError::Corrupted { pid, location, detail }) => {
            assert_eq!(*pid, head, "{e}");
            assert!(location.starts_with("free-page list of") && location.ends_with("data.db"), "{e}");
            assert!(detail.contains("not a free-list page"), "{e}");
        }
        e => panic!("{e}"),
    }
}
