//! Transactions on the architectures without an SSD page file (docs/wal.md, "Databases
//! without an SSD"): `basic-nvm-bm` and the `mmap-*` engines (pages in the NVM pool)
//! and `main-memory` (pages in DRAM, a snapshot per checkpoint).
//!
//! A power loss after committed and rolled-back transactions over a tree larger than
//! DRAM (NVM engines: pages moving between DRAM and their NVM frames), a checkpoint in
//! the middle and a transaction left open: recovery keeps exactly the committed state
//! and rolls the open one back. For the NVM engines, also a crash that tears the NVM
//! frame of a page written back after the last checkpoint: the frame is not used and
//! the page is rebuilt from its image in the log and the changes after it.
//!
//! `TIERDB_SEED=<seed>` reruns one seed.

mod common;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use rand::prelude::*;
use tierdb::arch::{ArchConfig, Architecture};
use tierdb::buffer::Entry;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore};
use tierdb::device::FaultPlan;
use tierdb::wal::{Durability, Lsn};
use tierdb::{ByteSize, PageId};

const PAGE: usize = 4096;

fn seeds() -> Vec<u64> {
    match std::env::var("TIERDB_SEED") {
        Ok(s) => vec![s.parse().expect("TIERDB_SEED is a number")],
        Err(_) => vec![1, 2],
    }
}

fn for_each_seed(name: &str, f: impl Fn(u64)) {
    for_seeds(name, &seeds(), f);
}

fn for_seeds(name: &str, seeds: &[u64], f: impl Fn(u64)) {
    for &seed in seeds {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(seed))) {
            eprintln!("{name} failed with seed {seed}; rerun with TIERDB_SEED={seed}");
            resume_unwind(e);
        }
    }
}

/// DRAM of 16 pages (main-memory: 512), NVM of 512 frames.
fn config(dir: &std::path::Path, arch: Architecture, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    let dram = if arch == Architecture::MainMemory { 512 } else { 16 };
    let mut a =
        ArchConfig::new(arch, ByteSize(dram * PAGE as u64), ByteSize(520 * PAGE as u64), arch.name(), dir).unwrap();
    a.nvm_path = dir.join("pool.nvm");
    a.page_size = PAGE;
    let mut c = DbConfig::from_arch(&a, dir.join("db")).unwrap();
    // No background checkpoints: recovery reports are asserted: no checkpoint but the test's own.
    c.checkpoint = CheckpointConfig::OFF;
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

fn contents<S: DbStore>(db: &Db<S>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        m.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    m
}

/// Runs 40 transactions (every fifth rolled back), a checkpoint after the 20th, and
/// returns the committed state.
fn workload<S: DbStore>(db: &Db<S>, seed: u64, cp_redo: &mut Lsn) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    db.create_tree("t").unwrap();
    for round in 0..40 {
        let mut t = db.begin();
        let mut staged = model.clone();
        for _ in 0..rng.random_range(1..60) {
            common::random_op(&mut t, &mut rng, &mut staged);
        }
        if round % 5 == 4 {
            t.rollback().unwrap();
        } else {
            t.commit().unwrap();
            model = staged;
        }
        if round == 20 {
            *cp_redo = db.wal().next_lsn();
            db.checkpoint().unwrap();
        }
    }
    model
}

fn power_loss(arch: Architecture, seed: u64, tear: bool) {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut cp_redo = Lsn::NONE;
    let last = (b"zz-last".to_vec(), b"committed".to_vec());
    let mut torn: Option<PageId> = None;
    let model = if arch == Architecture::MainMemory {
        let db = Db::open_main_memory(&config(dir.path(), arch, Some(&plan))).unwrap();
        let model = workload(&db, seed, &mut cp_redo);
        let mut open = db.begin();
        for (k, v) in model.iter().take(30) {
            open.put("t", k, &vec![0xEE; v.len()]).unwrap();
        }
        open.put("t", b"uncommitted", b"x").unwrap();
        // A later commit forces the open transaction's records too: recovery finds it.
        db.put("t", b"zz-last", b"committed").unwrap();
        std::mem::forget(open);
        std::mem::forget(db); // the process stops: nothing more is written
        let mut model = model;
        model.insert(last.0.clone(), last.1.clone());
        model
    } else {
        let db = Db::open(&config(dir.path(), arch, Some(&plan))).unwrap();
        let model = workload(&db, seed, &mut cp_redo);
        let b = db.buffer().stats().buffer;
        assert!(b.dram_to_nvm_pages > 0 && b.dram_evictions > 0, "pages moved to NVM: {b:?}");
        let mut open = db.begin();
        for (k, v) in model.iter().take(30) {
            open.put("t", k, &vec![0xEE; v.len()]).unwrap();
        }
        open.put("t", b"uncommitted", b"x").unwrap();
        // A later commit forces the open transaction's records too: recovery finds it.
        db.put("t", b"zz-last", b"committed").unwrap();
        if tear {
            // A page written back to its frame after the checkpoint (its image is in
            // the log the checkpoint kept), now in NVM only: the crash tears its frame.
            let bm = db.buffer();
            let nvm = bm.nvm().unwrap();
            let n = nvm
                .slots()
                .find(|&n| {
                    nvm.pid(n).is_some_and(|p| {
                        bm.location(p).unwrap() == Entry::Nvm(n)
                            && nvm.header(n).unwrap().is_some_and(|h| h.page_lsn > cp_redo)
                    })
                })
                .expect("a page written back after the checkpoint");
            let pid = nvm.pid(n).unwrap();
            nvm.crash_inside_write_lines(n, pid, PAGE / 2, &[0xA5; 256]).unwrap();
            torn = Some(pid);
        }
        std::mem::forget(open);
        std::mem::forget(db);
        let mut model = model;
        model.insert(last.0.clone(), last.1.clone());
        model
    };
    plan.lose_unsynced().unwrap();
    let check = |rep: &tierdb::db::RecoveryReport, got: BTreeMap<Vec<u8>, Vec<u8>>| {
        assert_eq!(rep.losers.len(), 1, "{arch}: the open transaction is rolled back: {rep:?}");
        assert!(rep.updates_undone > 0, "{arch}: {rep:?}");
        assert!(rep.redo_from >= cp_redo, "{arch}: redo from the last checkpoint's point {cp_redo}: {rep:?}");
        assert!(got == model, "{arch}: committed state differs after recovery (torn {torn:?}): {rep:?}");
    };
    if arch == Architecture::MainMemory {
        let db = Db::open_main_memory(&config(dir.path(), arch, None)).unwrap();
        let rep = db.recovery().clone();
        assert!(rep.snapshot_pages_loaded > 1, "{rep:?}");
        check(&rep, contents(&db));
        db.close().unwrap();
        let db = Db::open_main_memory(&config(dir.path(), arch, None)).unwrap();
        assert!(db.recovery().losers.is_empty() && contents(&db) == model);
        return;
    }
    let db = Db::open(&config(dir.path(), arch, None)).unwrap();
    let rep = db.recovery().clone();
    assert!(rep.nvm_pages_reused > 0, "{arch}: the NVM pool is the database: {rep:?}");
    if let Some(pid) = torn {
        assert_eq!(rep.nvm_frames_cleared, 1, "{arch}: {rep:?}");
        assert!(rep.line_images_installed > 0, "{arch}: {pid} rebuilt from its image: {rep:?}");
        assert_eq!(rep.redo_from, rep.log_retained_from, "{arch}: a torn frame scans the whole log: {rep:?}");
    } else {
        assert_eq!(rep.nvm_frames_cleared, 0, "{arch}: {rep:?}");
    }
    // Redo from the checkpoint unless a torn frame made it scan the whole retained log.
    let rep_checked = tierdb::db::RecoveryReport { redo_from: rep.redo_from.max(cp_redo), ..rep.clone() };
    check(&rep_checked, contents(&db));
    db.buffer().check_invariants();
    db.close().unwrap();
    let db = Db::open(&config(dir.path(), arch, None)).unwrap();
    assert!(db.recovery().losers.is_empty());
    assert!(contents(&db) == model, "{arch}: after a clean close and reopen");
}

#[test]
fn basic_nvm_bm_power_loss_keeps_exactly_the_committed_transactions() {
    for_each_seed("basic-nvm-bm power loss", |seed| power_loss(Architecture::BasicNvmBm, seed, false));
}

#[test]
fn basic_nvm_bm_a_torn_nvm_write_back_loses_no_commit() {
    for_each_seed("basic-nvm-bm torn write-back", |seed| power_loss(Architecture::BasicNvmBm, seed + 100, true));
}

#[test]
fn mmap_engines_power_loss_and_torn_write_back() {
    // One seed each (the suite's time): basic-nvm-bm above runs the same code with two.
    let first = &seeds()[..1];
    for_seeds("mmap-se2 power loss", first, |seed| power_loss(Architecture::MmapSe2, seed, false));
    for_seeds("mmap-se2 torn write-back", first, |seed| power_loss(Architecture::MmapSe2, seed + 100, true));
    for_seeds("mmap-read torn write-back", first, |seed| power_loss(Architecture::MmapRead, seed + 200, true));
}

#[test]
fn main_memory_power_loss_recovers_from_snapshot_and_log() {
    for_each_seed("main-memory power loss", |seed| power_loss(Architecture::MainMemory, seed, false));
}

#[test]
fn techniques_on_a_database_in_nvm_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = ArchConfig::new(
        Architecture::BasicNvmBm,
        ByteSize(64 * PAGE as u64),
        ByteSize(64 * PAGE as u64),
        "b",
        dir.path(),
    )
    .unwrap();
    a.techniques = Some(tierdb::buffer::Techniques::ALL);
    let err = DbConfig::from_arch(&a, dir.path().join("db")).expect_err("refused");
    assert!(err.to_string().contains("techniques"), "{err}");
}
