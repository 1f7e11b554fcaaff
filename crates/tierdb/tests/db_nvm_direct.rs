//! Transactions on `nvm-direct`: pages are changed in place in NVM before commit, every
//! write-back is preceded by its durable line image, the log is truncated behind the
//! unfinished work, and recovery repeats the line images and rolls back what did not
//! commit — also when the crash tore a write-back.

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{FaultPlan, NvmConfig};
use tierdb::ids::PageId;
use tierdb::sources::DirectConfig;
use tierdb::sources::NvmDirect;
use tierdb::wal::{Durability, Kind, LogBuffer};

const PAGE: usize = 4096;

fn config(dir: &std::path::Path, plan: Option<&Arc<FaultPlan>>, nvm_log: bool) -> (DbConfig, DirectConfig) {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: recovery reports (losers, redo) are asserted: no checkpoint but the test's own.
    c.checkpoint = CheckpointConfig::OFF;
    if nvm_log {
        c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20)));
    }
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    let d = DirectConfig::new(NvmConfig::new(dir.join("data.nvm"), ByteSize(1024 * PAGE as u64)), PAGE);
    (c, d)
}

fn open(dir: &std::path::Path, plan: Option<&Arc<FaultPlan>>, nvm_log: bool) -> Db<NvmDirect> {
    let (c, d) = config(dir, plan, nvm_log);
    Db::open_nvm_direct(&c, &d).unwrap()
}

fn contents(db: &Db<NvmDirect>, tree: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    db.scan(tree, b"", |k, v| {
        m.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    m
}

/// Committed and rolled-back transactions, then one left open (its changes are in NVM
/// already) and a power loss; `tear` also overwrites lines the open transaction's
/// last write-back wrote, as a write-back cut short would leave them.
fn power_loss(nvm_log: bool, tear: bool, seed: u64) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let plan = FaultPlan::new();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let torn: Option<(PageId, Vec<usize>)>;
    let slot_offset;
    {
        let db = open(dir.path(), Some(&plan), nvm_log);
        db.create_tree("t").unwrap();
        for round in 0..30 {
            let mut t = db.begin();
            let mut staged = model.clone();
            for _ in 0..rng.random_range(1..30) {
                let k = format!("key{:05}", rng.random_range(0..2000)).into_bytes();
                if let Some(v) = staged.get_mut(&k).filter(|_| rng.random_bool(0.3)) {
                    // A patch of part of the value, logged as offset and bytes.
                    let off = rng.random_range(0..v.len());
                    let bytes = vec![rng.random::<u8>(); rng.random_range(1..=v.len() - off)];
                    assert!(t.update_in_place("t", &k, off, &bytes).unwrap());
                    v[off..off + bytes.len()].copy_from_slice(&bytes);
                } else if rng.random_bool(0.8) {
                    let v = vec![rng.random::<u8>(); rng.random_range(10..300)];
                    t.put("t", &k, &v).unwrap();
                    staged.insert(k, v);
                } else {
                    let had = staged.remove(&k).is_some();
                    assert_eq!(t.delete("t", &k).unwrap(), had);
                }
            }
            if round % 5 == 4 {
                t.rollback().unwrap();
            } else {
                t.commit().unwrap();
                model = staged;
            }
        }
        let first_open = db.wal().next_lsn();
        let mut open = db.begin();
        for i in 0..200 {
            open.put("t", format!("key{:05}", i * 7).as_bytes(), &[0xEE; 150]).unwrap();
        }
        if let Some(k) = model.keys().find(|k| !k.ends_with(b"0") && !k.ends_with(b"7")) {
            assert!(open.update_in_place("t", k, 0, &[0xDD; 8]).unwrap());
        }
        // The open transaction's changes are in NVM already (that is nvm-direct): in
        // the tree itself, which `Db`'s reads show only once they commit.
        let raw = tierdb::Catalog::open_tree(db.store(), "t").unwrap();
        assert_eq!(raw.get(b"key00007", |v| v[0]).unwrap(), Some(0xEE), "an uncommitted change is in place");
        assert_ne!(db.get("t", b"key00007").unwrap().map(|v| v[0]), Some(0xEE), "a dirty read");
        // The newest line image, whose write-back the tear pretends was cut short.
        let mut last = None;
        for r in db.wal().records_from(first_open) {
            let r = r.unwrap();
            if r.head.kind == Kind::LineImage {
                last = Some(r);
            }
        }
        let r = last.expect("the open transaction's write-backs were logged");
        let n = u16::from_le_bytes([r.payload[0], r.payload[1]]) as usize;
        let lines: Vec<usize> = (0..n).filter(|l| r.payload[2 + l / 8] & (1 << (l % 8)) != 0).collect();
        torn = tear.then_some((PageId(r.head.page), lines));
        slot_offset = db.store().pages().slot_offset(0);
        std::mem::forget(open);
        std::mem::forget(db); // the process stops: nothing more is written
    }
    plan.lose_unsynced().unwrap();
    if let Some((pid, lines)) = &torn {
        let mut f = std::fs::OpenOptions::new().write(true).open(dir.path().join("data.nvm")).unwrap();
        let page_at = slot_offset + (pid.0 - 1) * PAGE as u64;
        for l in lines.iter().step_by(2) {
            f.seek(SeekFrom::Start(page_at + *l as u64 * 64)).unwrap();
            f.write_all(&[0x5A; 64]).unwrap();
        }
    }
    let db = open(dir.path(), None, nvm_log);
    let rep = db.recovery().clone();
    assert_eq!(rep.losers.len(), 1, "{rep:?}");
    assert!(rep.updates_undone > 0, "the open transaction's changes were in NVM: {rep:?}");
    assert!(rep.line_images_installed > 0, "{rep:?}");
    let got = contents(&db, "t");
    assert!(
        got == model,
        "state after recovery differs from the committed one: {} keys vs {}: {rep:?}",
        got.len(),
        model.len()
    );
    tierdb::Catalog::open_tree(db.store(), "t").unwrap().check_invariants().unwrap();
    db.close().unwrap();
    let db = open(dir.path(), None, nvm_log);
    assert!(db.recovery().losers.is_empty());
    assert!(contents(&db, "t") == model);
}

#[test]
fn power_loss_rolls_back_changes_already_in_nvm() {
    power_loss(false, false, 1);
    power_loss(true, false, 2);
}

#[test]
fn a_torn_write_back_is_repaired_from_its_line_image() {
    power_loss(true, true, 3);
    power_loss(false, true, 4);
}

#[test]
fn commits_truncate_the_log_and_a_reopen_finds_them_all() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(dir.path(), None, true);
    db.create_tree("t").unwrap();
    let start = db.wal().start_lsn();
    let mut model = BTreeMap::new();
    let mut i = 0u64;
    // Values of other lengths rewrite whole pages, logged as a page's worth of lines:
    // a few hundred commits fill a log segment.
    while db.wal().start_lsn() == start {
        i += 1;
        assert!(i < 20_000, "the log never lost its first segment");
        let (k, v) = (format!("k{:04}", i % 500).into_bytes(), vec![i as u8; 50 + (i as usize % 200)]);
        db.put("t", &k, &v).unwrap();
        model.insert(k, v);
    }
    let kept = db.wal().next_lsn().bytes_since(db.wal().start_lsn());
    assert!(kept <= 2 * tierdb::db::NVM_DIRECT_LOG_SEGMENT_BYTES, "{kept} bytes of log kept");
    std::mem::forget(db);
    // Reopened after a crash: the committed state is all in NVM.
    let db = open(dir.path(), None, true);
    assert!(db.recovery().losers.is_empty(), "{:?}", db.recovery());
    assert!(contents(&db, "t") == model);
}

#[test]
fn a_failed_log_sync_stops_writes_and_reopen_recovers() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let plan = FaultPlan::new();
    let mut model = BTreeMap::new();
    {
        let db = open(dir.path(), Some(&plan), false);
        db.create_tree("t").unwrap();
        for i in 0..50u32 {
            let (k, v) = (format!("k{i:03}").into_bytes(), vec![i as u8; 100]);
            db.put("t", &k, &v).unwrap();
            model.insert(k, v);
        }
        // The next fdatasync of the log fails: the write-back that needed it is not
        // written, and nothing commits after it.
        plan.fail_nth_sync(1);
        let mut t = db.begin();
        let mut failed = false;
        for i in 0..50u32 {
            if t.put("t", format!("k{i:03}").as_bytes(), &[0xAB; 100]).is_err() {
                failed = true;
                break;
            }
        }
        let commit = t.commit();
        assert!(failed || commit.is_err(), "a failed log sync went unnoticed");
        let e = db.put("t", b"after", b"x").expect_err("the store is stopped").to_string();
        assert!(e.contains("stopped") || e.contains("sync") || e.contains("log"), "{e}");
        std::mem::forget(db);
    }
    let db = open(dir.path(), None, false);
    assert!(contents(&db, "t") == model, "{:?}", db.recovery());
    db.put("t", b"after", b"x").unwrap();
}
