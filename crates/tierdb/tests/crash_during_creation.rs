//! A crash while a database is being created: `Db::open` of a new directory makes the
//! page file, its double-write file, the log, (on three-tier) the NVM pool and (with an
//! NVM log buffer) the log ring, then checkpoints and writes the control file. A crash
//! at any write or sync of that, followed by a power loss, must leave a directory that
//! opens as an empty, working database: nothing was acknowledged. A kill (no clean-up
//! runs) and an error (the failing step cleans up) are both tried at every step.

use std::path::Path;
use std::sync::Arc;

use tierdb::ByteSize;
use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::{DeviceError, FaultError, FaultPlan, NvmConfig, SsdConfig};
use tierdb::wal::{Durability, LogBuffer};

const PS: usize = 4096;

fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>, three_tier: bool) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: the crashes fall at counted device operations, which a background checkpoint would shift.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(32 * PS as u64));
    if three_tier {
        c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(2 << 20)));
        c.buffer.techniques = Techniques::ALL;
        c.buffer.policy = "hymem".into();
        c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20)));
    }
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.faults = plan.cloned();
    // Only the open's own flushes write the log: the steps of a creation are the same
    // every time (a background flush of the NVM ring would come at any moment).
    c.wal.flush_interval = std::time::Duration::from_secs(3600);
    c.durability = Durability::Sync;
    c
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The process is killed at the n-th write or sync.
    Kill(u64),
    /// The n-th write fails with EIO.
    Write(u64),
    /// The n-th sync fails.
    Sync(u64),
}

/// Creation with `fault`, a power loss, then an open without faults: an empty database
/// that takes a transaction and keeps it over a close and a reopen.
fn crash_in_creation(three_tier: bool, fault: Fault) {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    match fault {
        Fault::Kill(n) => plan.crash_at_nth_op(n),
        Fault::Write(n) => plan.fail_nth_write(n, FaultError::Io),
        Fault::Sync(n) => plan.fail_nth_sync(n),
    }
    let r = Db::open(&config(dir.path(), Some(&plan), three_tier));
    assert!(r.is_err(), "{fault:?}: creation failed at that step");
    drop(r);
    plan.lose_unsynced().unwrap();
    let cfg = config(dir.path(), None, three_tier);
    let db = Db::open(&cfg).unwrap_or_else(|e| panic!("{fault:?} (three-tier {three_tier}): reopening: {e}"));
    assert!(db.tree_names().is_empty(), "{fault:?}");
    let rep = db.recovery();
    assert!(rep.losers.is_empty() && rep.committed == 0, "{fault:?}: {rep:?}");
    if let Fault::Kill(_) = fault {
        assert!(!rep.unfinished_creation.is_empty(), "{fault:?}: files of the creation left behind: {rep:?}");
    }
    db.create_tree("t").unwrap();
    db.put("t", b"k", b"v").unwrap();
    db.close().unwrap();
    let db = Db::open(&cfg).unwrap();
    assert!(db.recovery().unfinished_creation.is_empty(), "{fault:?}: created now: {:?}", db.recovery());
    assert_eq!(db.get("t", b"k").unwrap(), Some(b"v".to_vec()), "{fault:?}");
    db.close().unwrap();
}

/// The writes and syncs a creation makes through the plan.
fn creation_ops(three_tier: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let db = Db::open(&config(dir.path(), Some(&plan), three_tier)).unwrap();
    let counts = plan.counts();
    db.close().unwrap();
    counts
}

fn every_step(three_tier: bool) {
    let (writes, syncs) = creation_ops(three_tier);
    assert!(
        writes >= 3 && syncs >= 3,
        "creation writes a superblock, a double-write header, a catalog page, a log record: {writes} writes, {syncs} syncs"
    );
    for n in 1..=writes + syncs {
        crash_in_creation(three_tier, Fault::Kill(n));
    }
    for n in 1..=writes {
        crash_in_creation(three_tier, Fault::Write(n));
    }
    for n in 1..=syncs {
        crash_in_creation(three_tier, Fault::Sync(n));
    }
}

#[test]
fn a_crash_at_any_step_of_creation_leaves_an_empty_working_database() {
    every_step(false);
}

#[test]
fn a_crash_at_any_step_of_creation_on_three_tier_with_an_nvm_log_buffer() {
    every_step(true);
}

/// The rule that discards an unfinished creation does not touch a created database: a
/// corrupt superblock stays an error.
#[test]
fn a_created_database_with_a_corrupt_superblock_stays_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), None, false);
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    db.put("t", b"k", b"v").unwrap();
    db.close().unwrap();
    let path = dir.path().join("db").join("data.db");
    let mut bytes = std::fs::read(&path).unwrap();
    for slot in 0..2 {
        bytes[slot * 512 + 100] ^= 0xff; // past the magic: the CRC fails
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = Db::open(&cfg).map(|_| ()).unwrap_err();
    assert!(matches!(&e, tierdb::Error::Device(DeviceError::Corrupted { what: "superblock", .. })), "{e}");
    assert!(path.exists() && dir.path().join("db").join("wal").exists(), "nothing removed");
}
