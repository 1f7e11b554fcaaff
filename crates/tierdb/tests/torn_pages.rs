//! Torn and corrupted SSD pages, on real files with the fault injector: a page torn in
//! the middle of its write-out (eviction or checkpoint) is restored from the
//! double-write area when the database is opened again; with the double-write area off,
//! the same tear is reported naming the page; a page corrupted on disk is reported,
//! never returned; a database whose checkpoint was torn recovers all its data.

use std::path::Path;
use std::sync::Arc;

use tierdb::buffer::{BufferConfig, BufferError, BufferManager};
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{DeviceError, DoubleWriteMode, FaultPlan, OpenMode, SsdConfig, double_write_path, page_seal};
use tierdb::wal::Durability;
use tierdb::{ByteSize, Error, ExclusivePage, PageId, PageSource};

const PS: usize = 4096;

fn config(dir: &Path, dram_frames: u64, plan: Option<&Arc<FaultPlan>>, double_write: bool) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(dram_frames * PS as u64));
    c.page_size = PS;
    let mut ssd = SsdConfig::new(dir.join("t.db"));
    ssd.faults = plan.cloned();
    c.ssd = Some(ssd);
    c.double_write = if double_write { DoubleWriteMode::Ssd } else { DoubleWriteMode::Off };
    c
}

fn reopen(dir: &Path, double_write: bool) -> BufferManager {
    let mut c = config(dir, 16, None, double_write);
    c.ssd_open_mode = OpenMode::Open;
    BufferManager::open(&c).unwrap()
}

/// Version `v` of page `pid`: every byte depends on both, so half of one version over
/// another shows; the seal's bytes stay zero.
fn image(pid: PageId, v: u8) -> Vec<u8> {
    let mut b: Vec<u8> = (0..PS).map(|i| (i as u64 * 31 + pid.0 * 7 + u64::from(v) * 101) as u8).collect();
    b[0..8].copy_from_slice(&pid.0.to_le_bytes());
    b[8] = v;
    page_seal::clear(&mut b);
    b
}

fn write(bm: &BufferManager, pid: PageId, v: u8) {
    bm.fix_exclusive(pid).unwrap().copy_from_slice(&image(pid, v));
}

/// Allocates `n` pages at version 1 and checkpoints them.
fn populate(bm: &BufferManager, n: usize) -> Vec<PageId> {
    let pages: Vec<PageId> = (0..n)
        .map(|_| {
            let mut g = bm.allocate().unwrap();
            let pid = g.page_id();
            g.copy_from_slice(&image(pid, 1));
            pid
        })
        .collect();
    bm.checkpoint().unwrap();
    pages
}

/// Writes version 2 of `victim` and fixes the other pages until the write-out of
/// `victim` (an eviction) fails with the tear the plan injects.
fn tear_eviction(bm: &BufferManager, plan: &FaultPlan, pages: &[PageId], victim: PageId, nth_write: u64) {
    write(bm, victim, 2);
    plan.tear_nth_write(nth_write);
    for (i, p) in pages.iter().filter(|p| **p != victim).cycle().enumerate() {
        assert!(i < 8 * pages.len(), "{victim} was never evicted");
        match bm.fix_shared(*p).map_err(Error::from) {
            Ok(_) => continue,
            Err(Error::Device(DeviceError::Io { op, path, .. })) => {
                assert_eq!((op, path.file_name().unwrap().to_str()), ("write", Some("t.db")));
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn assert_version(bm: &BufferManager, pid: PageId, v: u8) {
    let g = bm.fix_shared(pid).unwrap_or_else(|e| panic!("{pid}: {e}"));
    assert!(g[..] == image(pid, v)[..], "{pid}: not version {v} (byte 8: {})", g[8]);
}

#[test]
fn a_page_torn_during_its_eviction_is_restored_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let victim;
    let pages;
    {
        let bm = BufferManager::open(&config(dir.path(), 8, Some(&plan), true)).unwrap();
        pages = populate(&bm, 24);
        victim = pages[5];
        // The eviction writes the copy to the double-write area (write 1), syncs it,
        // then writes the page in place (write 2): that one is torn.
        tear_eviction(&bm, &plan, &pages, victim, 2);
        // The handle is poisoned; the process dies here without a checkpoint.
    }
    let bm = reopen(dir.path(), true);
    let torn = bm.torn_pages().expect("the double-write file was there");
    assert_eq!((torn.copies, &torn.restored_torn[..], torn.restored_older.len()), (1, &[victim][..], 0), "{torn:?}");
    assert_version(&bm, victim, 2);
    for p in pages.iter().filter(|p| **p != victim) {
        assert_version(&bm, *p, 1);
    }
    bm.check_invariants();
    bm.close().unwrap();
    // Restored and checkpointed: the next open has nothing to restore.
    let bm = reopen(dir.path(), true);
    assert_eq!(bm.torn_pages().map(|t| (t.copies, t.pages_restored())), Some((0, 0)));
    assert_version(&bm, victim, 2);
}

#[test]
fn with_the_double_write_area_off_the_same_tear_is_reported_naming_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let victim;
    let pages;
    {
        let bm = BufferManager::open(&config(dir.path(), 8, Some(&plan), false)).unwrap();
        assert!(bm.ssd().unwrap().info().double_write.is_none());
        pages = populate(&bm, 24);
        victim = pages[5];
        // No copy first: the page's own write is the first, and it is torn.
        tear_eviction(&bm, &plan, &pages, victim, 1);
    }
    assert!(!double_write_path(&dir.path().join("t.db")).exists());
    let bm = reopen(dir.path(), false);
    assert!(bm.torn_pages().is_none());
    let e = bm.fix_shared(victim).map(|_| ()).unwrap_err();
    match &e {
        BufferError::Corrupted { pid, location, detail } => {
            assert_eq!(*pid, victim);
            assert!(location.ends_with("t.db") && detail.contains("checksum"), "{e}");
        }
        e => panic!("{e}"),
    }
    assert!(e.to_string().contains(&format!("{victim}")), "{e}");
    // Asked again, the same answer: nothing of the torn bytes was kept.
    assert!(matches!(bm.fix_exclusive(victim).map(|_| ()), Err(BufferError::Corrupted { .. })));
    for p in pages.iter().filter(|p| **p != victim) {
        assert_version(&bm, *p, 1);
    }
    bm.check_invariants();
}

#[test]
fn a_page_corrupted_on_disk_is_reported_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let pages = {
        let bm = BufferManager::open(&config(dir.path(), 8, None, true)).unwrap();
        let pages = populate(&bm, 12);
        bm.close().unwrap();
        pages
    };
    let bad = pages[3];
    let path = dir.path().join("t.db");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bad.0 as usize * PS + 1234;
    bytes[at] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let bm = reopen(dir.path(), true);
    assert_eq!(bm.torn_pages().map(|t| t.copies), Some(0), "a clean close leaves no copies to restore from");
    let e = bm.fix_shared(bad).map(|_| ()).unwrap_err();
    assert!(matches!(&e, BufferError::Corrupted { pid, .. } if *pid == bad), "{e}");
    assert!(e.to_string().contains(&format!("corrupted {bad} in ")), "{e}");
    for p in pages.iter().filter(|p| **p != bad) {
        assert_version(&bm, *p, 1);
    }
    bm.check_invariants();
}

#[test]
fn a_checkpoint_writes_its_pages_as_one_double_write_batch_and_a_tear_in_it_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let changed;
    {
        // 64 frames: a checkpoint batch holds up to 16 of them.
        let bm = BufferManager::open(&config(dir.path(), 64, Some(&plan), true)).unwrap();
        let pages = populate(&bm, 20);
        for p in &pages[..8] {
            write(&bm, *p, 2);
        }
        let before = bm.stats();
        bm.checkpoint().unwrap();
        let s = bm.stats().since(&before);
        let (ssd, dwa) = (s.ssd.unwrap(), s.ssd_double_write.unwrap());
        // One batch: one write of 8 copies and one sync; the page file's sync ends the
        // period (a header write and a sync). In place: the 8 pages are consecutive, one
        // write; 1 sync.
        assert_eq!((dwa.writes, dwa.syncs), (2, 2), "{dwa:?}");
        assert_eq!((ssd.writes, ssd.syncs), (1, 1), "{ssd:?}");
        assert_eq!(dwa.write_bytes, 8 * (4096 + PS as u64) + 4096);
        changed = pages[8..15].to_vec();
        for p in &changed {
            write(&bm, *p, 3);
        }
        // Write 1: the batch's copies; write 2: the 7 consecutive pages in place, torn
        // halfway: 3 pages new, the fourth torn, the three after it old.
        plan.tear_nth_write(2);
        assert!(bm.checkpoint().is_err());
    }
    let bm = reopen(dir.path(), true);
    let torn = bm.torn_pages().unwrap().clone();
    assert_eq!((torn.copies, torn.restored_torn.len(), torn.restored_older.len()), (7, 1, 3), "{torn:?}");
    for p in &changed {
        assert_version(&bm, *p, 3);
    }
    bm.check_invariants();
}

fn db_config(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: the torn writes fall at counted device operations, and recovery reports are asserted.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(64 * PS as u64));
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.durability = Durability::Sync;
    c
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("{round:04}-{i:06}-{}", "v".repeat(80)).into_bytes()
}

#[test]
fn a_database_whose_checkpoint_was_torn_recovers_every_committed_change() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    const KEYS: u32 = 400;
    {
        let db = Db::open(&db_config(dir.path(), Some(&plan))).unwrap();
        db.create_tree("t").unwrap();
        for i in 0..KEYS {
            db.put("t", &i.to_be_bytes(), &value(i, 1)).unwrap();
        }
        db.checkpoint().unwrap();
        for i in 0..KEYS {
            db.put("t", &i.to_be_bytes(), &value(i, 2)).unwrap();
        }
        // Only the page file uses the plan: write 1 is a batch of copies, then its pages
        // go in place, a run of consecutive pages a write; tear the first run.
        plan.tear_nth_write(2);
        assert!(db.checkpoint().is_err());
    }
    let db = Db::open(&db_config(dir.path(), None)).unwrap();
    assert!(db.recovery().pages_restored >= 1, "{:?}", db.recovery());
    for i in 0..KEYS {
        assert_eq!(db.get("t", &i.to_be_bytes()).unwrap(), Some(value(i, 2)), "key {i}");
    }
    db.close().unwrap();
}

#[test]
fn a_corrupt_tree_page_fails_the_lookup_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(&db_config(dir.path(), None)).unwrap();
        db.create_tree("t").unwrap();
        for i in 0..50u32 {
            db.put("t", &i.to_be_bytes(), &value(i, 1)).unwrap();
        }
        db.close().unwrap();
    }
    // The tree's only node is page 2 (page 1 is the catalog): garble its middle.
    let path = dir.path().join("db").join("data.db");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2 * PS + PS / 2..2 * PS + PS / 2 + 16].fill(0xee);
    std::fs::write(&path, &bytes).unwrap();
    let e = match Db::open(&db_config(dir.path(), None)) {
        Ok(db) => db.get("t", &7u32.to_be_bytes()).unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(&e, Error::Buffer(BufferError::Corrupted { pid: PageId(2), .. })), "{e}");
}

/// Random transactions over a DRAM pool much smaller than the data, so that pages are
/// written out all the time; one write to the page file (or to its double-write file) at
/// a random point is torn, which poisons the page file, so the run stops at its first
/// error; then the power fails: with `lose_unsynced`, every write not synced is undone,
/// else what reached the files stays, torn half included. Reopened, the database holds
/// exactly the committed transactions. Returns the pages restored from the double-write
/// area: (torn, older).
fn torn_power_loss(seed: u64, lose_unsynced: bool) -> (usize, usize) {
    use rand::prelude::*;
    use std::collections::BTreeMap;

    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut cfg = db_config(dir.path(), Some(&plan));
    cfg.buffer.dram = tierdb::device::DramConfig::new(ByteSize(12 * PS as u64));
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    {
        let db = Db::open(&cfg).unwrap();
        db.create_tree("t").unwrap();
        db.checkpoint().unwrap();
        plan.tear_nth_write(rng.random_range(1..=80));
        'run: for round in 0..200 {
            let mut t = db.begin();
            let mut staged = model.clone();
            for _ in 0..rng.random_range(1..20) {
                let k = format!("key{:05}", rng.random_range(0..2000)).into_bytes();
                let done = if rng.random_bool(0.85) {
                    let v = vec![rng.random::<u8>(); rng.random_range(10..300)];
                    staged.insert(k.clone(), v.clone());
                    t.put("t", &k, &v)
                } else {
                    staged.remove(&k);
                    t.delete("t", &k).map(|_| ())
                };
                if done.is_err() {
                    std::mem::forget(t); // the process dies: no rollback
                    break 'run;
                }
            }
            t.commit().unwrap_or_else(|e| panic!("seed {seed}: commit touches only the log: {e}"));
            model = staged;
            if round % 50 == 49 && db.checkpoint().is_err() {
                break;
            }
        }
        std::mem::forget(db); // the process stops: nothing more is written
    }
    if lose_unsynced {
        plan.lose_unsynced().unwrap();
    }
    let db = Db::open(&db_config(dir.path(), None)).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let mut got = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    assert!(got == model, "seed {seed}: {} keys, {} committed; {:?}", got.len(), model.len(), db.recovery());
    db.buffer().check_invariants();
    let t = db.buffer().torn_pages().expect("a double-write file was there");
    let restored = (t.restored_torn.len(), t.restored_older.len());
    assert_eq!(db.recovery().pages_restored, restored.0 + restored.1);
    db.close().unwrap();
    restored
}

#[test]
fn a_power_loss_with_a_torn_page_write_keeps_exactly_the_committed_transactions() {
    let (mut torn, mut older) = (0, 0);
    for seed in 0..24 {
        let (t, o) = torn_power_loss(seed, seed % 2 == 0);
        torn += t;
        older += o;
    }
    // Not every tear hits a page in place (it may hit a batch of copies), but some do.
    assert!(torn > 0, "no seed tore a page in place: the test does not test repair");
    assert!(older > 0, "no seed lost an in-place write the double-write area had");
}
