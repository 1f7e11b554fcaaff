//! A kill between a page's SSD write and the refresh of its NVM copy (issue 18, item 1).
//!
//! A checkpoint writes a page that is dirty in DRAM and has a clean NVM copy: first to
//! SSD, noted in a flush record, then over its NVM frame. A kill in between leaves a
//! valid, clean NVM frame that is older than the SSD page. Restart put that frame in the
//! page table ahead of the SSD page, and redo skipped the page's changes unread because
//! the flush record said SSD held them: acknowledged commits were gone (`tierdb
//! crashtest --arch three-tier --kill-after-ms 300` found it). A frame is now trusted
//! only if it was written at or after every flush of its page that redo relies on.
//!
//! The test drives the crash state directly: the NVM pool and the control file are
//! copied after a first checkpoint, every page is then changed and checkpointed again
//! (SSD writes, flush records, NVM refreshes), the process "dies", and the two files
//! are put back as they were — which is what a kill after the flush records reached the
//! log and before the refreshes and the control file leaves, as the pages are in DRAM
//! and nothing else writes NVM in between.

use std::collections::BTreeMap;
use std::path::Path;

use tierdb::ByteSize;
use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{DoubleWriteMode, DramConfig, NvmConfig, SsdConfig};
use tierdb::wal::Durability;

const PS: usize = 4096;
/// Enough for flush records of several pages (one is logged per 64 pages written).
const KEYS: u32 = 6_000;
/// DRAM and NVM frames: every page of the tree fits in either.
const FRAMES: u64 = 512;

fn config(dir: &Path) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: the kill falls between known checkpoints, and the recovery report is asserted.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(FRAMES * PS as u64));
    c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(FRAMES * (PS as u64 + 64) + 16384)));
    c.buffer.techniques = Techniques::ALL;
    c.buffer.policy = "hymem".into();
    c.buffer.double_write = DoubleWriteMode::Ssd;
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = PS;
    c.buffer.ssd = Some(ssd);
    c.durability = Durability::Sync;
    c
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32, round: u8) -> Vec<u8> {
    let mut v = vec![round; 60];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

#[test]
fn a_kill_before_the_nvm_copies_are_refreshed_loses_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("pool.nvm");
    let control = dir.path().join("db").join("CHECKPOINT");
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&config(dir.path())).unwrap();
        db.create_tree("t").unwrap();
        // Loaded in bulk-load mode: turning it off gives every DRAM page an NVM copy.
        db.buffer().set_bulk_load(true).unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        db.buffer().set_bulk_load(false).unwrap();
        // Every page clean in DRAM, with a clean NVM copy equal to its SSD copy.
        db.checkpoint().unwrap();
        std::fs::copy(&pool, dir.path().join("pool.before")).unwrap();
        std::fs::copy(&control, dir.path().join("control.before")).unwrap();
        for i in 0..KEYS {
            db.put("t", &key(i), &value(i, 2)).unwrap();
            model.insert(key(i), value(i, 2));
        }
        // Every page to SSD (flush records, made durable by the checkpoint record),
        // then over its NVM copy.
        db.checkpoint().unwrap();
        std::mem::forget(db); // the kill
    }
    // As the kill left it: the NVM copies not refreshed, the checkpoint not finished.
    std::fs::copy(dir.path().join("pool.before"), &pool).unwrap();
    std::fs::copy(dir.path().join("control.before"), &control).unwrap();
    let db = Db::open(&config(dir.path())).unwrap();
    let rep = db.recovery().clone();
    assert!(rep.flush_records > 0, "no flush record: the test tests nothing; {rep:?}");
    assert!(rep.nvm_pages_reused > 0, "no NVM frame found again: the test tests nothing; {rep:?}");
    let mut got = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    let stale = model.iter().filter(|(k, v)| got.get(*k) != Some(*v)).count();
    assert_eq!(stale, 0, "{stale} of {} committed values lost; {rep:?}", model.len());
    assert!(rep.nvm_frames_stale > 0, "the stale frames were not counted; {rep:?}");
    tierdb::Catalog::open_tree(db.store(), "t").unwrap().check_invariants().unwrap();
    db.buffer().check_invariants();
    db.close().unwrap();
}
