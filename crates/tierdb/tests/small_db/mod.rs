//! Shared by the tests that crash a small database on SSD
//! (`free_page_reused_after_checkpoint`, `redo_skips_flushed_pages`): its configuration
//! — 4 KiB pages, a DRAM pool of a few frames so that dirty nodes are written out,
//! optional fault injection — its keys and values, and the check of its contents.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{DoubleWriteMode, DramConfig, FaultPlan, SsdConfig};
use tierdb::wal::Durability;
use tierdb::{ByteSize, Catalog};

pub const PS: usize = 4096;
/// DRAM frames: far fewer than the tree's pages, so dirty nodes are written out.
pub const DRAM_FRAMES: u64 = 12;

/// The database in `dir`/db, its page file and log under `plan`'s faults, commits
/// durable when they return.
pub fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>, double_write: DoubleWriteMode) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: redo's skips and the free list after a crash are asserted against the test's checkpoints.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(DRAM_FRAMES * PS as u64));
    c.buffer.double_write = double_write;
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = PS;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// 180 bytes: the key's number, then `round`.
pub fn value(i: u32, round: u8) -> Vec<u8> {
    let mut v = vec![round; 180];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

/// Tree `t` holds exactly `model`, and the tree's and the buffer manager's invariants
/// hold.
pub fn check_contents(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let mut got = BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    assert!(&got == model, "{what}: {} keys, {} committed; {:?}", got.len(), model.len(), db.recovery());
    Catalog::open_tree(db.store(), "t").unwrap().check_invariants().unwrap();
    db.buffer().check_invariants();
}
