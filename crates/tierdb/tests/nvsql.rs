//! `nvsql` end to end (NV-SQL, docs/nvsql.md).
//!
//! - A B+-tree far larger than DRAM and NVM, random inserts, updates, deletes and
//!   lookups checked against a `BTreeMap`, with pages moving through every tier: SSD →
//!   DRAM, dirty DRAM victims admitted to NVM or written to SSD, NVM pages read and
//!   updated in place, NVM victims written to SSD; DRAM and NVM never both hold a
//!   page; a reopen reuses the NVM frames as the durable copy.
//! - A database power loss, including one in the middle of an in-place NVM update (the
//!   frame's IN_UPDATE flag set, part of the change persisted): no committed
//!   transaction is lost, the torn frame is not used, its page is rebuilt from its SSD
//!   copy and the log.
//!
//! `TIERDB_SEED=<seed>` reruns one seed.

mod common;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rand::prelude::*;
use tierdb::arch::{ArchConfig, Architecture, Engine};
use tierdb::buffer::{BufferManager, Entry};
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::FaultPlan;
use tierdb::ids::NvmSlot;
use tierdb::wal::{Durability, Lsn};
use tierdb::{ByteSize, Catalog, PageId};

const PAGE: usize = 4096;
const KEYS: u64 = 4000;
const OPS: usize = 5000;

fn seeds() -> Vec<u64> {
    match std::env::var("TIERDB_SEED") {
        Ok(s) => vec![s.parse().expect("TIERDB_SEED is a number")],
        Err(_) => vec![1, 2],
    }
}

fn for_each_seed(name: &str, f: impl Fn(u64)) {
    for seed in seeds() {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(seed))) {
            eprintln!("{name} failed with seed {seed}; rerun with TIERDB_SEED={seed}");
            resume_unwind(e);
        }
    }
}

/// DRAM of 16 pages, NVM of 64 frames, a database of a few hundred pages.
fn config(dir: &std::path::Path, policy: &str) -> ArchConfig {
    let mut c =
        ArchConfig::new(Architecture::Nvsql, ByteSize(16 * PAGE as u64), ByteSize(72 * PAGE as u64), "nvsql", dir)
            .unwrap();
    c.nvm_path = dir.join("nvsql.nvm");
    c.page_size = PAGE;
    c.policy = Some(policy.into());
    c
}

fn key(i: u64) -> [u8; 8] {
    (i * 7919 % 100_003).to_be_bytes()
}

fn value(i: u64, version: u32) -> Vec<u8> {
    let len = 150 + (i as usize * 13 + version as usize) % 150;
    (0..len).map(|k| (i as usize + k + version as usize * 31) as u8).collect()
}

fn buffer(engine: &Engine) -> &BufferManager {
    match engine {
        Engine::Buffer(bm) => bm,
        _ => panic!("nvsql runs on the buffer manager"),
    }
}

/// Pages held by NVM whose page table entry says NVM, and those in DRAM that also keep
/// an NVM frame (none, for disjoint tiers).
fn residency(bm: &BufferManager) -> (usize, usize) {
    let nvm = bm.nvm().unwrap();
    let (mut only, mut both) = (0, 0);
    for n in nvm.slots() {
        let Some(pid) = nvm.pid(n) else { continue };
        match bm.location(pid).unwrap() {
            Entry::Nvm(m) => {
                assert_eq!(m, n, "{pid} in two NVM frames");
                only += 1;
            }
            Entry::Dram(_) => both += 1,
            other => panic!("NVM frame {n} holds {pid}, whose entry is {other:?}"),
        }
    }
    (only, both)
}

fn run(seed: u64, policy: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), policy);
    let engine = Engine::open(&cfg).unwrap();
    let bm = buffer(&engine);
    assert_eq!(bm.policy().name(), "nvsql");
    let tree = Catalog::create_tree(bm, "t").unwrap();
    let mut model: BTreeMap<u64, u32> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in (0..KEYS).step_by(2) {
        tree.insert(&key(i), &value(i, 0)).unwrap();
        model.insert(i, 0);
    }
    // Skewed to a hot tenth of the keys, so that some pages are re-updated soon after
    // they leave DRAM (write-hot) and others not.
    for _ in 0..OPS {
        let i = if rng.random_bool(0.7) { rng.random_range(0..KEYS / 10) } else { rng.random_range(0..KEYS) };
        match rng.random_range(0..10) {
            0..5 => {
                let got = tree.get(&key(i), |v| v.to_vec()).unwrap();
                assert_eq!(got, model.get(&i).map(|v| value(i, *v)), "seed {seed}: get {i}");
            }
            5..9 => {
                let version = model.get(&i).map_or(0, |v| v + 1);
                let existed = model.insert(i, version).is_some();
                if existed {
                    assert!(tree.update(&key(i), &value(i, version)).unwrap(), "seed {seed}: update {i}");
                } else {
                    assert!(tree.insert(&key(i), &value(i, version)).unwrap(), "seed {seed}: insert {i}");
                }
            }
            _ => {
                assert_eq!(tree.delete(&key(i)).unwrap(), model.remove(&i).is_some(), "seed {seed}: delete {i}");
            }
        }
    }
    for (i, v) in &model {
        assert_eq!(tree.get(&key(*i), |x| x.to_vec()).unwrap(), Some(value(*i, *v)), "seed {seed}: key {i}");
    }
    bm.check_invariants();
    let b = bm.stats().buffer;
    // Every tier moved pages: SSD reads into DRAM only, DRAM victims to NVM and to
    // SSD, NVM accessed in place, NVM victims to SSD.
    assert!(b.ssd_reads > 0 && b.dram_to_nvm_pages > 0 && b.dram_to_ssd_pages > 0, "{policy}: {b:?}");
    assert!(b.nvm_reads_in_place > 0 && b.nvm_writes_in_place > 0, "{policy}: {b:?}");
    assert!(b.nvm_evictions > 0 && b.nvm_to_ssd_pages > 0, "{policy}: {b:?}");
    let (only, both) = residency(bm);
    assert!(only > 0, "{policy}: no page in NVM only");
    // Disjoint tiers: whole-page fixes (inner nodes, structure changes) took pages from
    // NVM to DRAM, and each gave up its NVM frame.
    assert!(b.nvm_to_dram_pages > 0, "{policy}: {b:?}");
    assert_eq!(both, 0, "{policy}: pages in DRAM kept NVM frames");
    let pages = engine.pages_in_use();
    engine.close().unwrap();

    // Reopen: the NVM frames are the pages' durable copies and are used again.
    cfg.open_existing = true;
    let engine = Engine::open(&cfg).unwrap();
    let bm = buffer(&engine);
    let info = engine.restart_info().expect("a reopened nvsql reuses NVM");
    assert!(info.formatted_because.is_none() && info.pages_reused > 0, "{info:?}");
    assert_eq!(engine.pages_in_use(), pages);
    let tree = Catalog::open_tree(bm, "t").unwrap();
    for (i, v) in &model {
        assert_eq!(tree.get(&key(*i), |x| x.to_vec()).unwrap(), Some(value(*i, *v)), "seed {seed}: reopened {i}");
    }
    bm.check_invariants();
    engine.close().unwrap();
}

#[test]
fn nvsql_online_interval_and_update_count_lru_match_a_btreemap_through_every_tier() {
    for_each_seed("nvsql default", |seed| run(seed, "nvsql"));
}

#[test]
fn nvsql_fixed_interval_and_plain_lru_match_a_btreemap_through_every_tier() {
    for_each_seed("nvsql fixed/lru", |seed| run(seed, "nvsql:admit=fixed,lsns=64,lru=lru"));
}

#[test]
fn a_bad_nvsql_configuration_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::open(&config(dir.path(), "nvsql:admit=fixed")).err().expect("refused");
    assert!(err.to_string().contains("lsns"), "{err}");
}

// ----- power loss -------------------------------------------------------------------

fn db_config(dir: &std::path::Path, plan: Option<&std::sync::Arc<FaultPlan>>) -> DbConfig {
    db_config_with(dir, plan, "nvsql:admit=always")
}

fn db_config_with(dir: &std::path::Path, plan: Option<&std::sync::Arc<FaultPlan>>, policy: &str) -> DbConfig {
    let mut arch = config(dir, policy);
    arch.nvm = ByteSize(48 * PAGE as u64);
    let mut c = DbConfig::from_arch(&arch, dir.join("db")).unwrap();
    // No background checkpoints: the redo of the log since the test's checkpoints is measured and asserted.
    c.checkpoint = CheckpointConfig::OFF;
    if let Some(ssd) = c.buffer.ssd.as_mut() {
        ssd.faults = plan.cloned();
    }
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        m.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    m
}

/// Committed transactions over a tree larger than DRAM, a checkpoint in the middle, an
/// a checkpoint at the end — which leaves the dirty NVM pages in NVM — an open
/// transaction; then (if `tear`) a crash inside the in-place update of a page in NVM only
/// that is newer than its SSD copy, and the power loss. After recovery the committed
/// state is exactly there; redo scanned from the last checkpoint, or from further back
/// (the retained log) to rebuild the torn page.
fn power_loss(seed: u64, tear: bool) {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut torn: Option<PageId> = None;
    let cp_redo;
    {
        let db = Db::open(&db_config(dir.path(), Some(&plan))).unwrap();
        db.create_tree("t").unwrap();
        for round in 0..40 {
            let mut t = db.begin();
            let mut staged = model.clone();
            for _ in 0..rng.random_range(1..40) {
                common::random_op(&mut t, &mut rng, &mut staged);
            }
            if round % 5 == 4 {
                t.rollback().unwrap();
            } else {
                t.commit().unwrap();
                model = staged;
            }
            if round == 20 {
                db.checkpoint().unwrap();
            }
        }
        let b = db.buffer().stats().buffer;
        assert!(b.nvm_writes_in_place > 0 && b.dram_to_nvm_pages > 0, "{b:?}");
        // A checkpoint leaves the dirty NVM pages in NVM and keeps the log back to
        // their oldest change: the page torn below holds changes older than it.
        cp_redo = db.wal().next_lsn();
        db.checkpoint().unwrap();
        let nvm = db.buffer().nvm().unwrap();
        let dirty = nvm.slots().filter(|&n| nvm.pid(n).is_some() && nvm.is_dirty(n)).count();
        assert!(dirty > 0, "no dirty page in NVM after a checkpoint");
        let oldest = db.buffer().oldest_unflushed_lsn().expect("dirty NVM pages need the log");
        assert!(oldest < db.wal().next_lsn());
        let mut open = db.begin();
        for (k, v) in model.iter().take(30) {
            assert!(open.update_in_place("t", k, v.len() / 2, &vec![0xDD; v.len() - v.len() / 2]).unwrap());
        }
        // The open transaction's records reach the log whatever the page placement (an
        // in-place NVM update forces the log, a DRAM one does not): recovery must meet
        // it, and roll it back.
        db.wal().flush_until(db.wal().next_lsn()).unwrap();
        if tear {
            // A page in NVM only, dirty (newer than SSD): the crash comes while its lines
            // are being written in place.
            let bm = db.buffer();
            let nvm = bm.nvm().unwrap();
            let n = nvm
                .slots()
                .find(|&n| nvm.pid(n).is_some_and(|p| nvm.is_dirty(n) && bm.location(p).unwrap() == Entry::Nvm(n)))
                .expect("a dirty page in NVM only");
            let pid = nvm.pid(n).unwrap();
            nvm.crash_inside_write_lines(n, pid, 2 * PAGE / 4, &[0xA5; 256]).unwrap();
            torn = Some(pid);
        }
        std::mem::forget(open);
        std::mem::forget(db); // the process stops: nothing more is written
    }
    plan.lose_unsynced().unwrap();
    let db = Db::open(&db_config(dir.path(), None)).unwrap();
    let rep = db.recovery().clone();
    assert_eq!(rep.losers.len(), 1, "{rep:?}");
    assert!(rep.nvm_pages_reused > 0, "{rep:?}");
    // The last checkpoint kept older records for the dirty NVM pages; redo scans them
    // only to rebuild the torn page, from its recovery LSN.
    assert!(rep.log_retained_from < cp_redo, "checkpoint at {cp_redo}: {rep:?}");
    if let Some(pid) = torn {
        assert_eq!(rep.nvm_frames_cleared, 1, "{rep:?}");
        assert!(rep.redo_from <= cp_redo && rep.redo_from >= rep.log_retained_from, "{rep:?}");
        assert!(rep.changes_redone > 0, "the torn page {pid} was rebuilt by redo: {rep:?}");
    } else {
        assert_eq!(rep.nvm_frames_cleared, 0, "{rep:?}");
        // No frame torn: redo starts at the last checkpoint's redo point.
        assert!(rep.redo_from >= cp_redo, "checkpoint at {cp_redo}: {rep:?}");
    }
    let got = contents(&db);
    assert!(got == model, "committed state differs after recovery (torn {torn:?}): {rep:?}");
    db.buffer().check_invariants();
    db.close().unwrap();
    let db = Db::open(&db_config(dir.path(), None)).unwrap();
    assert!(db.recovery().losers.is_empty());
    assert!(contents(&db) == model);
}

#[test]
fn power_loss_keeps_exactly_the_committed_transactions() {
    for_each_seed("nvsql power loss", |seed| power_loss(seed, false));
}

#[test]
fn a_crash_inside_an_in_place_nvm_update_loses_no_commit() {
    for_each_seed("nvsql torn in-place update", |seed| power_loss(seed + 100, true));
}

// ----- ids across restarts, retained-log bound, checkpoint admission ------------------

/// Puts `n` keys from `from` in one committed transaction each.
fn commit_keys(db: &Db, from: u64, n: u64, version: u8) {
    for i in from..from + n {
        let mut t = db.begin();
        t.put("t", format!("key{i:05}").as_bytes(), &vec![version; 200 + (i as usize % 100)]).unwrap();
        t.commit().unwrap();
    }
}

/// The dirty NVM frame (in NVM only) with the oldest recovery LSN.
fn oldest_dirty_frame(bm: &BufferManager) -> (NvmSlot, PageId) {
    let nvm = bm.nvm().unwrap();
    nvm.slots()
        .filter(|&n| nvm.pid(n).is_some_and(|p| nvm.is_dirty(n) && bm.location(p).unwrap() == Entry::Nvm(n)))
        .min_by_key(|&n| nvm.rec_lsn(n))
        .map(|n| (n, nvm.pid(n).unwrap()))
        .expect("a dirty page in NVM only")
}

/// A restart whose redo starts at the checkpoint sees no transaction, yet a later
/// recovery may scan from before it (a torn frame's recovery LSN): the ids handed out
/// after the restart must not be those of transactions in that older log, or a loser
/// taking a committed transaction's id looks finished and is not rolled back (found by
/// `crashtest --arch nvsql`: a rolled-back key visible).
#[test]
fn transaction_ids_are_not_reused_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    // Dirty NVM pages stay dirty across checkpoints: their recovery LSNs stay old.
    let policy = "nvsql:admit=always,keep=unbounded";
    {
        let db = Db::open(&db_config_with(dir.path(), Some(&plan), policy)).unwrap();
        db.create_tree("t").unwrap();
        commit_keys(&db, 0, 300, 1);
        db.checkpoint().unwrap();
        std::mem::forget(db);
    }
    plan.lose_unsynced().unwrap();
    let plan = FaultPlan::new(); // a plan stays failed once it lost the unsynced writes
    {
        let db = Db::open(&db_config_with(dir.path(), Some(&plan), policy)).unwrap();
        assert!(db.recovery().committed == 0, "redo started at the checkpoint: {:?}", db.recovery());
        let mut loser = db.begin();
        loser.put("t", b"loser", b"rolled back").unwrap();
        commit_keys(&db, 300, 1, 2); // forces the loser's record too
        let bm = db.buffer();
        let (n, pid) = oldest_dirty_frame(bm);
        assert!(bm.nvm().unwrap().rec_lsn(n) < db.recovery().redo_from);
        bm.nvm().unwrap().crash_inside_write_lines(n, pid, PAGE / 2, &[0x5A; 128]).unwrap();
        std::mem::forget(loser);
        std::mem::forget(db);
    }
    plan.lose_unsynced().unwrap();
    let db = Db::open(&db_config_with(dir.path(), None, policy)).unwrap();
    let rep = db.recovery().clone();
    assert_eq!(rep.nvm_frames_cleared, 1, "{rep:?}");
    assert!(rep.committed > 1, "redo scanned the first run's commits again: {rep:?}");
    assert_eq!(rep.losers.len(), 1, "{rep:?}");
    assert_eq!(db.get("t", b"loser").unwrap(), None, "{rep:?}");
    assert_eq!(db.get("t", b"key00300").unwrap(), Some(vec![2; 200]));
    assert_eq!(contents(&db).len(), 301);
}

/// Hot pages updated in place stay dirty in NVM; with the default bound each checkpoint
/// writes those older than the checkpoint before it to SSD (they stay in NVM, clean), so
/// the log kept for them never reaches further back than that; unbounded, it stays at
/// their first change.
#[test]
fn the_retained_log_stays_bounded_under_hot_pages() {
    for (policy, bounded) in [("nvsql:admit=always", true), ("nvsql:admit=always,keep=unbounded", false)] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&db_config_with(dir.path(), None, policy)).unwrap();
        db.create_tree("t").unwrap();
        commit_keys(&db, 0, 1500, 0);
        db.checkpoint().unwrap();
        let first = db.buffer().oldest_unflushed_lsn();
        let mut prev_redo = db.wal().next_lsn();
        for round in 1..=8u8 {
            // A few hot keys, between sweeps of cold ones that push them out of DRAM:
            // their leaves stay in NVM, updated in place.
            for k in 0..4u64 {
                commit_keys(&db, 0, 10, round);
                commit_keys(&db, 100 + (round as u64 * 4 + k) * 40 % 1400, 40, round);
            }
            let redo = db.wal().next_lsn();
            db.checkpoint().unwrap();
            let oldest = db.buffer().oldest_unflushed_lsn();
            if bounded {
                assert!(oldest.is_none_or(|o| o >= prev_redo), "{policy} round {round}: {oldest:?} < {prev_redo}");
            }
            prev_redo = redo;
        }
        let b = db.buffer().stats().buffer;
        assert!(b.nvm_writes_in_place > 0, "{policy}: {b:?}");
        let last = db.buffer().oldest_unflushed_lsn();
        if !bounded {
            // Pinned at the hot pages' first change ever.
            assert!(first.is_some() && last == first, "{policy}: {first:?} then {last:?}");
        } else {
            assert!(last.is_none_or(|l| l > first.unwrap_or(Lsn::NONE)), "{policy}: {first:?} then {last:?}");
        }
        // The hot pages are still in NVM.
        let (only, _) = residency(db.buffer());
        assert!(only > 0, "{policy}");
        db.close().unwrap();
    }
}

/// Checkpoint-based admission (§4.3): the checkpoint moves the share of the dirty DRAM
/// pages with the oldest first-update LSN to NVM (dirty there: not written to SSD)
/// instead of writing them to SSD; a power loss right after it loses nothing.
#[test]
fn checkpoint_admission_moves_the_oldest_dirty_pages_to_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let policy = "nvsql:admit=checkpoint,pct=50";
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&db_config_with(dir.path(), Some(&plan), policy)).unwrap();
        db.create_tree("t").unwrap();
        commit_keys(&db, 0, 400, 1);
        for i in 0..400u64 {
            model.insert(format!("key{i:05}").into_bytes(), vec![1u8; 200 + (i as usize % 100)]);
        }
        let bm = db.buffer();
        // Nothing is admitted at eviction (only by the checkpoint that ends the open).
        let before = bm.stats().buffer.nvm_admissions;
        assert!(before <= 1, "{before}");
        // No page is freed here: the pages in use are the first ones allocated.
        let pages = bm.pages_in_use() + 1;
        let in_dram: Vec<PageId> =
            (1..pages).map(PageId).filter(|&p| matches!(bm.location(p), Ok(Entry::Dram(_)))).collect();
        assert!(in_dram.len() > 2, "{in_dram:?}");
        db.checkpoint().unwrap();
        let admitted = bm.stats().buffer.nvm_admissions - before;
        assert!(admitted > 0, "the checkpoint admitted no page");
        let nvm = bm.nvm().unwrap();
        let moved: Vec<PageId> = in_dram
            .iter()
            .copied()
            .filter(|&p| matches!(bm.location(p).unwrap(), Entry::Nvm(n) if nvm.is_dirty(n)))
            .collect();
        assert_eq!(moved.len() as u64, admitted, "admitted pages are in NVM, dirty (not on SSD)");
        assert!(moved.len() < in_dram.len(), "only a share of the dirty pages: {moved:?} of {in_dram:?}");
        assert!(bm.oldest_unflushed_lsn().is_some(), "the log is kept for them");
        std::mem::forget(db);
    }
    plan.lose_unsynced().unwrap();
    let db = Db::open(&db_config_with(dir.path(), None, policy)).unwrap();
    let rep = db.recovery().clone();
    assert!(rep.nvm_pages_reused > 0, "{rep:?}");
    assert!(contents(&db) == model, "{rep:?}");
    db.buffer().check_invariants();
}

/// Recovery after a power loss that follows a hot-page workload with checkpoints: as it
/// was (redo from the oldest retained record, no bound on it), with redo from the redo
/// point, and with a torn NVM frame (redo from its recovery LSN) without and with the
/// bound: the figures docs/nvsql.md quotes (printed with `--nocapture`). Each keeps
/// every commit; the redo point and the bound each shorten the scan.
#[test]
fn redo_from_the_redo_point_and_the_bound_shorten_recovery() {
    let mut read = Vec::new();
    for (policy, from_retained, tear) in [
        ("nvsql:admit=always,keep=unbounded", true, false),
        ("nvsql:admit=always,keep=unbounded", false, false),
        ("nvsql:admit=always,keep=unbounded", false, true),
        ("nvsql:admit=always", false, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        let mut cfg = db_config_with(dir.path(), Some(&plan), policy);
        cfg.redo_from_retained = from_retained;
        {
            let db = Db::open(&cfg).unwrap();
            db.create_tree("t").unwrap();
            commit_keys(&db, 0, 400, 0);
            for round in 1..=4u8 {
                for k in 0..4u64 {
                    commit_keys(&db, 0, 10, round);
                    commit_keys(&db, 100 + (round as u64 * 4 + k) * 40 % 260, 40, round);
                }
                db.checkpoint().unwrap();
            }
            // Hot pages changed after the last checkpoint, pushed to NVM by a cold sweep.
            commit_keys(&db, 0, 10, 99);
            commit_keys(&db, 200, 100, 98);
            if tear {
                let (n, pid) = oldest_dirty_frame(db.buffer());
                db.buffer().nvm().unwrap().crash_inside_write_lines(n, pid, PAGE / 2, &[0x5A; 128]).unwrap();
            }
            std::mem::forget(db);
        }
        let db = reopen_after_power_loss(&plan, &mut cfg);
        let r = db.recovery().clone();
        println!(
            "{policy} redo_from_retained={from_retained} torn={tear}: log kept from {} redo from {} to {}: {} records read, {} changes redone, {} skipped, {} images, {:.1} ms",
            r.log_retained_from,
            r.redo_from,
            r.log_end,
            r.records_read,
            r.changes_redone,
            r.changes_skipped,
            r.images_installed,
            r.secs * 1e3
        );
        assert_eq!(r.nvm_frames_cleared, usize::from(tear), "{r:?}");
        assert_eq!(db.get("t", b"key00000").unwrap(), Some(vec![99; 200]), "{r:?}");
        assert_eq!(contents(&db).len(), 400);
        read.push(r.records_read);
    }
    assert!(read[1] < read[0] && read[1] <= read[2] && read[3] < read[2], "records read {read:?}");
}

/// The power goes (unsynced writes are lost), and the database is opened again without
/// the fault plan.
fn reopen_after_power_loss(plan: &std::sync::Arc<FaultPlan>, cfg: &mut DbConfig) -> Db {
    plan.lose_unsynced().unwrap();
    cfg.buffer.ssd.as_mut().unwrap().faults = None;
    cfg.wal.file.faults = None;
    Db::open(cfg).unwrap()
}

/// Tree `t` with 400 keys, then four rounds of hot and cold changes, each ending with
/// a checkpoint.
fn hot_rounds_with_checkpoints(db: &Db) {
    db.create_tree("t").unwrap();
    commit_keys(db, 0, 400, 0);
    for round in 1..=4u8 {
        commit_keys(db, 0, 10, round);
        commit_keys(db, 100 + u64::from(round) * 40, 40, round);
        db.checkpoint().unwrap();
    }
}

/// Every dirty NVM frame's recovery LSN is a record's start (or 0, unknown): recovery
/// may start its scan there. A clean frame changed in place once took one past its
/// page LSN, which lies inside that record, and a torn frame's restart then failed
/// with "no log record at LSN …" (found by `crashtest --arch nvsql`).
#[test]
fn recovery_lsns_of_dirty_nvm_frames_are_record_starts() {
    let dir = tempfile::tempdir().unwrap();
    // keep=1: a checkpoint writes the NVM pages dirty since before the previous one to
    // SSD, and they stay in NVM clean; the last sweep changes them in place again.
    let db = Db::open(&db_config_with(dir.path(), None, "nvsql:admit=always")).unwrap();
    hot_rounds_with_checkpoints(&db);
    commit_keys(&db, 0, 400, 99);
    let bm = db.buffer();
    let nvm = bm.nvm().unwrap();
    let mut checked = 0;
    for n in nvm.slots().filter(|&n| nvm.is_dirty(n)) {
        let r = nvm.rec_lsn(n);
        if r.is_none() || r < db.wal().start_lsn() {
            continue;
        }
        let rec = db.wal().read(r).unwrap_or_else(|e| panic!("frame {n}: recovery LSN {r} is no record's start: {e}"));
        assert_eq!(rec.lsn, r);
        checked += 1;
    }
    assert!(checked > 0, "no dirty NVM frame with a recovery LSN in the log");
    db.close().unwrap();
}

/// A torn frame whose recovery LSN lies inside a record (as earlier pools stored one
/// past a page LSN): recovery scans from a record's start below it and passes over the
/// records that begin before it, instead of failing to read a record there.
#[test]
fn a_recovery_lsn_inside_a_record_is_scanned_from_a_record_start() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let cfg = db_config_with(dir.path(), Some(&plan), "nvsql:admit=always,keep=unbounded");
    let model;
    let bound;
    {
        let db = Db::open(&cfg).unwrap();
        hot_rounds_with_checkpoints(&db);
        db.wal().flush_until(db.wal().next_lsn()).unwrap();
        model = contents(&db);
        let bm = db.buffer();
        let nvm = bm.nvm().unwrap();
        // The dirty frames the last checkpoint kept: the log is retained from the oldest
        // of their recovery LSNs, and the redo point lies past all of them.
        let dirty: Vec<(NvmSlot, Lsn)> = nvm
            .slots()
            .filter(|&n| nvm.is_dirty(n) && nvm.pid(n).is_some_and(|p| bm.location(p).unwrap() == Entry::Nvm(n)))
            .map(|n| (n, nvm.rec_lsn(n)))
            .collect();
        let oldest = dirty.iter().map(|&(_, r)| r).min().expect("dirty NVM frames");
        let &(n, r) = dirty.iter().max_by_key(|&&(_, r)| r).unwrap();
        assert!(r > oldest.advance(1), "{dirty:?}");
        let pid = nvm.pid(n).unwrap();
        // One byte below its recovery LSN: inside the record before, which is on SSD for
        // this page (r is its first change that is not) and older than the redo point.
        bound = Lsn::new(r.get() - 1);
        assert!(db.wal().read(bound).is_err(), "LSN {bound} is inside a record");
        let mut page = vec![0u8; PAGE];
        nvm.read_page(n, pid, &mut page).unwrap();
        let page_lsn = nvm.header(n).unwrap().unwrap().page_lsn;
        nvm.write_page_rec(n, pid, &page, true, page_lsn, bound).unwrap();
        assert_eq!(nvm.rec_lsn(n), bound);
        nvm.crash_inside_write_lines(n, pid, PAGE / 2, &[0x5A; 128]).unwrap();
        std::mem::forget(db);
    }
    plan.lose_unsynced().unwrap();
    let mut cfg = cfg;
    cfg.buffer.ssd.as_mut().unwrap().faults = None;
    cfg.wal.file.faults = None;
    let db = Db::open(&cfg).unwrap();
    let r = db.recovery().clone();
    assert_eq!((r.nvm_frames_cleared, r.redo_from), (1, bound), "{r:?}");
    assert!(contents(&db) == model, "{r:?}");
    db.close().unwrap();
}

/// NV-SQL §5.3: at restart, a page whose NVM frame is found again (not IN_UPDATE)
/// holds every change up to its frame's page LSN, and redo leaves it alone. Hot keys
/// are changed in place in NVM after the last checkpoint, the process dies: redo skips
/// those changes by the frame headers without fixing the pages, which stay in NVM
/// (an exclusive fix would have moved each to DRAM and written it to SSD), and every
/// committed value is there.
#[test]
fn redo_leaves_the_pages_nvm_holds_in_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut cfg = db_config_with(dir.path(), Some(&plan), "nvsql:admit=always");
    let in_nvm: Vec<PageId>;
    {
        let db = Db::open(&cfg).unwrap();
        hot_rounds_with_checkpoints(&db);
        // The hot keys' leaves go to NVM (a cold sweep evicts them from DRAM), then
        // change there, in place, after the last checkpoint.
        commit_keys(&db, 200, 150, 7);
        for round in 0..3u8 {
            commit_keys(&db, 0, 10, 90 + round);
        }
        let bm = db.buffer();
        let nvm = bm.nvm().unwrap();
        in_nvm = nvm
            .slots()
            .filter_map(|n| nvm.pid(n).filter(|&p| nvm.is_dirty(n) && bm.location(p).unwrap() == Entry::Nvm(n)))
            .collect();
        assert!(!in_nvm.is_empty(), "no dirty page in NVM only: the test tests nothing");
        assert!(bm.stats().buffer.nvm_writes_in_place > 0);
        std::mem::forget(db);
    }
    let db = reopen_after_power_loss(&plan, &mut cfg);
    let r = db.recovery().clone();
    assert!(r.changes_skipped_in_nvm > 0, "{r:?}");
    assert_eq!(db.get("t", b"key00000").unwrap(), Some(vec![92; 200]), "{r:?}");
    assert_eq!(db.get("t", b"key00349").unwrap(), Some(vec![7; 200 + 49]), "{r:?}");
    assert_eq!(contents(&db).len(), 400);
    // The pages NVM held when the process died and redo did not need are there still.
    let bm = db.buffer();
    let still = in_nvm.iter().filter(|&&p| matches!(bm.location(p).unwrap(), Entry::Nvm(_))).count();
    assert!(still > 0, "every page left NVM during recovery: {r:?}");
    db.buffer().check_invariants();
}
