//! A damaged log (issue 18, 3): the log is cut only at a torn tail — damage in its last
//! segment with no valid record after it, past the control file's redo point. Damage
//! followed by valid records, or a log that ends before the redo point, is an error
//! naming the segment file and the byte; salvage (`WalConfig::salvage_damaged_log`)
//! cuts it all the same, reports it, and keeps every LSN handed out above the pages'.
//! Before, each was cut silently: the commits after the damage were lost, and in a
//! closed database new LSNs restarted below the pages', so that the next crash lost
//! every change made since (redo skipped them as already on the pages).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tierdb::buffer::Techniques;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbError};
use tierdb::device::{DramConfig, FaultPlan, LOG_SEGMENT_BYTES_MIN, NvmConfig, SsdConfig};
use tierdb::wal::{Durability, Kind, Lsn, WalError, decode_record};
use tierdb::{ByteSize, Error};

const PS: usize = 4096;

fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>, dram_frames: u64) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: the log's segments and records are asserted: no checkpoint truncates them.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(dram_frames * PS as u64));
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = PS;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.segment_bytes = LOG_SEGMENT_BYTES_MIN;
    c.wal.file.faults = plan.cloned();
    c.durability = Durability::Sync;
    c
}

/// Transaction `i`'s key: 600 keys, visited in a scattered order, so that a leaf is
/// changed again and again while others are.
fn key(i: u32) -> Vec<u8> {
    format!("key{:05}", (i * 7919) % 600).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value of transaction {i:06}:").into_bytes();
    v.resize(120, b'.');
    v
}

/// Transactions `from..to`, each a put of `key(i)` to `value(i)`.
fn commit(db: &Db, from: u32, to: u32) {
    for i in from..to {
        db.put("t", &key(i), &value(i)).unwrap();
    }
}

/// Tree `t` holds what transactions `0..n` left.
fn check(db: &Db, n: u32, what: &str) {
    let mut want = std::collections::BTreeMap::new();
    for i in 0..n {
        want.insert(key(i), value(i));
    }
    let mut got = std::collections::BTreeMap::new();
    db.scan("t", b"", |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        true
    })
    .unwrap();
    let wrong = want.iter().filter(|(k, v)| got.get(*k) != Some(v)).count();
    assert!(wrong == 0 && got.len() == want.len(), "{what}: {wrong} of {} keys wrong; {:?}", want.len(), db.recovery());
}

/// The control file's redo point (its second 16-byte entry).
fn redo_point(dir: &Path) -> Lsn {
    let b = std::fs::read(dir.join("db").join("CHECKPOINT")).unwrap();
    Lsn::from_le_bytes(b[16..24].try_into().unwrap())
}

/// The log's segments: (first LSN, path), oldest first.
fn segments(dir: &Path) -> Vec<(Lsn, PathBuf)> {
    let mut v: Vec<(Lsn, PathBuf)> = std::fs::read_dir(dir.join("db").join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(".wal")?.to_string();
            Some((Lsn::new(u64::from_str_radix(&name, 16).ok()?), p))
        })
        .collect();
    v.sort();
    v
}

/// Every record in the log files: (LSN, kind, segment path, offset in it).
fn records(dir: &Path) -> Vec<(Lsn, Kind, PathBuf, u64)> {
    let mut out = Vec::new();
    for (start, path) in segments(dir) {
        let bytes = std::fs::read(&path).unwrap();
        let mut o = 0usize;
        while let Ok(r) = decode_record(start.advance(o as u64), &bytes[o..]) {
            out.push((r.lsn, r.head.kind, path.clone(), o as u64));
            o = r.next_lsn().bytes_since(start) as usize;
        }
    }
    out
}

fn flip(path: &Path, offset: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[offset as usize] ^= 0x04;
    std::fs::write(path, &b).unwrap();
}

/// A crash: nothing more is written, and what was not synced is gone.
fn crash(db: Db, plan: &FaultPlan) {
    std::mem::forget(db);
    plan.lose_unsynced().unwrap();
}

/// The database after 300 transactions, a checkpoint and 100 more, crashed; returns
/// the redo point.
fn crashed_after_a_checkpoint(dir: &Path) -> Lsn {
    let plan = FaultPlan::new();
    let db = Db::open(&config(dir, Some(&plan), 256)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 300);
    db.checkpoint().unwrap();
    commit(&db, 300, 400);
    crash(db, &plan);
    redo_point(dir)
}

fn corrupted(e: Error) -> (PathBuf, u64, Lsn, String) {
    let msg = e.to_string();
    match e {
        Error::Wal(WalError::Corrupted { file, offset, lsn, .. }) => (file, offset, lsn, msg),
        e => panic!("not a damaged log: {e}"),
    }
}

#[test]
fn a_flipped_byte_before_the_redo_point_is_an_error_naming_the_file_and_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let redo = crashed_after_a_checkpoint(tmp.path());
    let recs = records(tmp.path());
    let (lsn, _, path, offset) = recs.iter().rfind(|r| r.0 < redo && r.1 == Kind::Update).cloned().unwrap();
    flip(&path, offset + 60);
    let before = std::fs::read(&path).unwrap();
    let (file, at, damaged, msg) = corrupted(Db::open(&config(tmp.path(), None, 256)).unwrap_err());
    assert_eq!((&file, at, damaged), (&path, offset, lsn), "{msg}");
    assert!(msg.contains(&path.display().to_string()) && msg.contains(&format!("byte {offset}")), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was cut");
    // Once the byte is mended, every commit is there.
    flip(&path, offset + 60);
    let db = Db::open(&config(tmp.path(), None, 256)).unwrap();
    check(&db, 400, "mended");
    db.close().unwrap();
}

#[test]
fn a_flipped_byte_with_valid_records_after_it_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let redo = crashed_after_a_checkpoint(tmp.path());
    let recs = records(tmp.path());
    // An update of the transactions after the checkpoint, in the middle of them.
    let after: Vec<_> = recs.iter().filter(|r| r.0 > redo && r.1 == Kind::Update).collect();
    let (lsn, _, path, offset) = after[after.len() / 2].clone();
    flip(&path, offset + 60);
    let (file, at, damaged, msg) = corrupted(Db::open(&config(tmp.path(), None, 256)).unwrap_err());
    assert_eq!((&file, at, damaged), (&path, offset, lsn), "{msg}");
    assert!(msg.contains("a valid record follows"), "{msg}");
}

#[test]
fn a_log_that_ends_before_the_redo_point_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let db = Db::open(&config(tmp.path(), Some(&plan), 256)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 300);
    db.close().unwrap();
    let redo = redo_point(tmp.path());
    // The last segment loses its records from one before the redo point on, as if the
    // file had been truncated: what is left is whole records, no torn bytes.
    let recs = records(tmp.path());
    let (_, _, path, offset) = recs.iter().rfind(|r| r.0 < redo).cloned().unwrap();
    assert_eq!(&path, &segments(tmp.path()).last().unwrap().1, "the redo point is in the last segment");
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(offset).unwrap();
    let (file, at, _, msg) = corrupted(Db::open(&config(tmp.path(), None, 256)).unwrap_err());
    assert_eq!((&file, at), (&path, offset), "{msg}");
    assert!(msg.contains("redo point"), "{msg}");
}

#[test]
fn a_torn_tail_is_cut_and_the_database_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut cfg = config(tmp.path(), Some(&plan), 256);
    // No background flush: the torn write must be the commit's flush, not one of the
    // puts' records flushed early by the timer (a slow build hit that).
    cfg.wal.flush_interval = std::time::Duration::from_secs(3600);
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 300);
    db.checkpoint().unwrap();
    commit(&db, 300, 400);
    let durable = db.wal().durable_lsn();
    // The flush of transaction 400's commit writes half of its bytes (whole sectors:
    // some of its records, and one cut short) and dies; the file system then leaves
    // zeros past them (a file extended, its data not written).
    plan.tear_nth_write(1);
    let mut t = db.begin();
    for i in 400..420 {
        t.put("t", &key(i), &value(i)).unwrap();
    }
    t.commit().unwrap_err();
    std::mem::forget(db);
    let (_, last) = segments(tmp.path()).pop().unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
    f.set_len(f.metadata().unwrap().len() + 4096).unwrap();
    drop(f);
    let db = Db::open(&config(tmp.path(), None, 256)).unwrap();
    let tail = db.recovery().log_tail.clone().unwrap_or_default();
    assert!(tail.contains("cut") && !tail.contains("salvaged"), "{tail}");
    assert!(db.wal().recovered().salvaged.is_none());
    assert!(db.recovery().log_end > durable, "the whole records of the torn write are kept: {:?}", db.recovery());
    assert_eq!(db.recovery().losers.len(), 1, "transaction 400 did not commit");
    // Every acknowledged commit is there; the torn one is not.
    check(&db, 400, "torn tail");
    db.close().unwrap();
}

/// Before the fix a closed database whose log lost its records past a damaged byte
/// opened, and new LSNs restarted below the pages': after the next crash, redo skipped
/// every overwrite as already on its page (100 of 100 lost).
#[test]
fn a_closed_database_with_a_damaged_log_hands_out_no_lsn_below_its_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(&config(tmp.path(), None, 256)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 300);
    db.close().unwrap();
    let redo = redo_point(tmp.path());
    // The first update the log still holds: the further back, the more LSNs an open
    // that cut there would hand out again.
    let (lsn, _, path, offset) = records(tmp.path()).into_iter().find(|r| r.1 == Kind::Update).unwrap();
    assert!(redo.bytes_since(lsn) > 16 << 10, "{lsn} {redo}");
    flip(&path, offset + 60);
    let plan = FaultPlan::new();
    for salvage in [false, true] {
        let mut cfg = config(tmp.path(), Some(&plan), 256);
        cfg.wal.salvage_damaged_log = salvage;
        let db = match Db::open(&cfg) {
            Ok(db) => db,
            Err(e) => {
                assert!(!salvage, "salvage opens: {e}");
                corrupted(e);
                continue;
            }
        };
        assert!(db.wal().next_lsn() > redo, "LSNs continue past the redo point: {:?}", db.wal().recovered());
        // 100 overwrites, each committed durably, then a crash.
        commit(&db, 300, 400);
        crash(db, &plan);
        let db = Db::open(&config(tmp.path(), None, 256)).unwrap();
        check(&db, 400, "after the crash");
        db.close().unwrap();
    }
}

#[test]
fn salvage_opens_a_log_damaged_mid_way_and_reports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let redo = crashed_after_a_checkpoint(tmp.path());
    let recs = records(tmp.path());
    let old_end = {
        let (start, last) = segments(tmp.path()).pop().unwrap();
        start.advance(std::fs::metadata(&last).unwrap().len())
    };
    let after: Vec<_> = recs.iter().filter(|r| r.0 > redo && r.1 == Kind::Update).collect();
    let (lsn, _, path, offset) = after[after.len() / 2].clone();
    flip(&path, offset + 60);
    let mut cfg = config(tmp.path(), None, 256);
    cfg.wal.salvage_damaged_log = true;
    let db = Db::open(&cfg).unwrap();
    let r = db.wal().recovered().clone();
    let tail = db.recovery().log_tail.clone().unwrap_or_default();
    assert!(r.salvaged.is_some() && tail.contains("salvaged"), "{tail}");
    assert!(tail.contains(&path.display().to_string()) && tail.contains(&format!("byte {offset}")), "{tail}");
    assert!(r.end >= old_end, "LSNs continue past every byte the log held: {r:?}, {old_end}");
    assert!(db.recovery().log_end >= old_end);
    // The transactions before the damaged record are there; its own was rolled back.
    let first_lost = recs.iter().filter(|r| r.0 < lsn && r.1 == Kind::Commit).count() as u32;
    let v = db.get("t", &key(first_lost - 1)).unwrap();
    assert_eq!(v, Some(value(first_lost - 1)), "the last transaction committed before the damage");
    // The salvaged log opens as it is from now on.
    db.close().unwrap();
    let db = Db::open(&config(tmp.path(), None, 256)).unwrap();
    assert!(db.recovery().log_tail.is_none(), "{:?}", db.recovery().log_tail);
    db.close().unwrap();
}

/// A page written out after a record that the log then lost (its last segment cut at
/// an earlier record, as a torn tail would be) carries an LSN past the log's end: redo
/// reads it and refuses, or with salvage moves the log past it.
#[test]
fn a_page_ahead_of_the_log_is_an_error_or_moves_a_salvaged_log() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    // A DRAM pool of 12 frames for a tree of dozens of leaves: leaves are written out
    // (after the log is forced to them) while transactions run.
    let db = Db::open(&config(tmp.path(), Some(&plan), 12)).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 600);
    db.checkpoint().unwrap();
    commit(&db, 600, 1200);
    crash(db, &plan);
    let redo = redo_point(tmp.path());
    let recs = records(tmp.path());
    let (start, last) = segments(tmp.path()).pop().unwrap();
    // Keep a tenth of the records after the redo point.
    let after: Vec<_> = recs.iter().filter(|r| r.0 > redo && r.0 >= start).collect();
    let (cut, _, _, offset) = after[after.len() / 10].clone();
    std::fs::OpenOptions::new().write(true).open(&last).unwrap().set_len(offset).unwrap();
    let e = Db::open(&config(tmp.path(), None, 12)).unwrap_err();
    let Error::Db(DbError::PageAheadOfLog { page_lsn, log_end, .. }) = e else { panic!("{e}") };
    assert!(page_lsn >= cut && log_end == cut, "{page_lsn} {log_end} {cut}");
    let mut cfg = config(tmp.path(), None, 12);
    cfg.wal.salvage_damaged_log = true;
    let db = Db::open(&cfg).unwrap();
    assert!(db.wal().next_lsn() > page_lsn, "{} {page_lsn}", db.wal().next_lsn());
    db.close().unwrap();
}

/// The same with the pages in NVM frames (three-tier), the log cut right after the
/// checkpoint's record: redo then reads no page, and would skip the changes a frame
/// holds by its header anyway, so the frame headers found at open are checked against
/// the log's end.
#[test]
fn a_page_in_nvm_ahead_of_the_log_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let nvm_config = |plan: Option<&Arc<FaultPlan>>| {
        let mut c = config(tmp.path(), plan, 12);
        c.buffer.nvm = Some(NvmConfig::new(tmp.path().join("pool.nvm"), ByteSize(2 << 20)));
        c.buffer.techniques = Techniques::ALL;
        c.buffer.policy = "hymem".into();
        c
    };
    let plan = FaultPlan::new();
    let db = Db::open(&nvm_config(Some(&plan))).unwrap();
    db.create_tree("t").unwrap();
    commit(&db, 0, 600);
    db.checkpoint().unwrap();
    commit(&db, 600, 1200);
    crash(db, &plan);
    let redo = redo_point(tmp.path());
    let recs = records(tmp.path());
    let i = recs.iter().position(|r| r.0 >= redo && r.1 == Kind::CheckpointBegin).unwrap();
    let (cut, _, path, offset) = recs[i + 1].clone();
    for (_, seg) in segments(tmp.path()).into_iter().filter(|(s, _)| *s > cut) {
        std::fs::remove_file(seg).unwrap();
    }
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(offset).unwrap();
    let e = Db::open(&nvm_config(None)).unwrap_err();
    let Error::Db(DbError::PageAheadOfLog { page_lsn, log_end, .. }) = e else { panic!("{e}") };
    assert!(page_lsn >= cut && log_end == cut, "{page_lsn} {log_end} {cut}");
}
