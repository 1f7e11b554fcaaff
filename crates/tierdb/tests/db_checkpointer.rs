//! The background checkpointer (issue 23): it keeps the log on disk bounded by its
//! size trigger, its time trigger fires, it is off when configured off, it runs beside
//! manual checkpoints from several threads, a crash while it runs loses no committed
//! transaction, close joins its thread, and a checkpoint of its that fails is reported
//! in the statistics without a panic.
//!
//! The tests of this file run one at a time (`SERIAL`): they count the process's
//! checkpointer threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tierdb::ByteSize;
use tierdb::db::{CheckpointConfig, CheckpointStats, Db, DbConfig, checkpointer_threads};
use tierdb::device::{DramConfig, FaultError, FaultPlan, LOG_SEGMENT_BYTES_MIN, SsdConfig};
use tierdb::wal::Durability;

static SERIAL: Mutex<()> = Mutex::new(());

const PS: usize = 4096;

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tierdb-ckpt-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small database in `dir`/db: 4 KiB pages, 1 MiB of DRAM, log segments of the
/// smallest size (truncation deletes whole segments), the page file and the log under
/// `plan`'s faults.
fn config(dir: &Path, checkpoint: CheckpointConfig, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(256 * PS as u64));
    let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = PS;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.segment_bytes = LOG_SEGMENT_BYTES_MIN;
    c.wal.file.faults = plan.cloned();
    c.checkpoint = checkpoint;
    c
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; 600];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

/// Bytes of the files in the log directory (a segment a checkpoint deletes meanwhile
/// counts nothing).
fn log_bytes_on_disk(dir: &Path) -> u64 {
    let files = std::fs::read_dir(dir.join("db").join("wal")).unwrap();
    files.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()
}

/// Waits up to 5 s for `cond` on the statistics; returns them.
fn wait_for(db: &Db, what: &str, cond: impl Fn(&CheckpointStats) -> bool) -> CheckpointStats {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = db.checkpoints();
        if cond(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "waited 5 s for {what}: {s:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Transactions `0..n` of `PUTS_PER_COMMIT` keys each, committed with `group`
/// durability; after each [`PACE_BYTES`] of log the writer pauses [`PACE_MS`], so that
/// the log grows at a rate a checkpointer can follow (there is no back-pressure on
/// commits). Returns the most bytes the log directory held, sampled at each pause.
fn grow_log(db: &Db, dir: &Path, n: u32) -> u64 {
    let mut most = 0;
    let mut paused_at = db.wal().next_lsn().get();
    for c in 0..n {
        let mut t = db.begin();
        for i in c * PUTS_PER_COMMIT..(c + 1) * PUTS_PER_COMMIT {
            t.put("t", &key(i), &value(i)).unwrap();
        }
        t.commit().unwrap();
        let end = db.wal().next_lsn().get();
        if end - paused_at >= PACE_BYTES {
            most = most.max(log_bytes_on_disk(dir));
            std::thread::sleep(Duration::from_millis(PACE_MS));
            paused_at = end;
        }
    }
    most.max(log_bytes_on_disk(dir))
}

const PUTS_PER_COMMIT: u32 = 10;
/// Enough commits for about 11 MiB of log (leaf changes and the page images of splits).
const GROW_COMMITS: u32 = 400;
/// The writer's pauses.
const PACE_BYTES: u64 = 64 << 10;
const PACE_MS: u64 = 10;
/// The size trigger of the bounded-log test.
const LOG_TRIGGER_BYTES: u64 = 256 << 10;
/// What the log directory may hold with that trigger: the trigger, what commits add
/// while a poll waits and a checkpoint runs, and the segments partly kept.
const LOG_BOUND_BYTES: u64 = 4 << 20;

fn bounded_log_run(name: &str, checkpoint: CheckpointConfig) -> (u64, CheckpointStats) {
    let tmp = Scratch::new(name);
    let mut cfg = config(&tmp.0, checkpoint, None);
    cfg.durability = Durability::Group;
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    let t0 = Instant::now();
    let most = grow_log(&db, &tmp.0, GROW_COMMITS);
    println!("{name}: {GROW_COMMITS} commits in {:?}", t0.elapsed());
    let stats = db.checkpoints();
    println!("{name}: log directory at most {most} bytes, {} bytes of log written; {stats:?}", db.wal().stats().bytes);
    assert!(db.wal().stats().bytes > 2 * LOG_BOUND_BYTES, "the workload writes too little log");
    db.close().unwrap();
    (most, stats)
}

#[test]
fn a_small_log_trigger_keeps_the_log_on_disk_bounded() {
    let _serial = SERIAL.lock();
    let on = CheckpointConfig { enabled: true, log_bytes: LOG_TRIGGER_BYTES, interval_ms: 0 };
    let (most, stats) = bounded_log_run("bounded", on);
    assert!(most <= LOG_BOUND_BYTES, "log directory reached {most} bytes, bound {LOG_BOUND_BYTES}");
    assert!(stats.by_log_bytes >= 3, "{stats:?}");
    assert_eq!((stats.by_interval, stats.failed, stats.last_error), (0, 0, None));
    // The same workload without the checkpointer passes the bound.
    let (most, stats) = bounded_log_run("unbounded", CheckpointConfig::OFF);
    assert!(most > LOG_BOUND_BYTES, "log directory only {most} bytes without the checkpointer");
    assert_eq!(stats.automatic, 0);
}

#[test]
fn the_time_trigger_fires_after_growth_only() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("interval");
    let db =
        Db::open(&config(&tmp.0, CheckpointConfig { enabled: true, log_bytes: 0, interval_ms: 30 }, None)).unwrap();
    assert!(db.checkpoints().running);
    let opened = db.checkpoints();
    assert_eq!((opened.taken, opened.automatic), (1, 0), "the open's checkpoint only");
    db.create_tree("t").unwrap();
    db.put("t", b"a", b"1").unwrap();
    let s = wait_for(&db, "a checkpoint by time", |s| s.by_interval >= 1);
    assert_eq!((s.by_log_bytes, s.failed), (0, 0), "{s:?}");
    // Without growth, no more checkpoints: wait several intervals.
    let quiet = wait_for(&db, "the log to stop growing", |s| s.last_end_lsn == db.wal().next_lsn().get());
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(db.checkpoints().automatic, quiet.automatic, "checkpoints of a log that did not grow");
    db.put("t", b"b", b"2").unwrap();
    wait_for(&db, "a checkpoint after more growth", |s| s.automatic > quiet.automatic);
    db.close().unwrap();
}

#[test]
fn off_takes_no_background_checkpoint_and_starts_no_thread() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("off");
    let threads = checkpointer_threads();
    let db = Db::open(&config(&tmp.0, CheckpointConfig::OFF, None)).unwrap();
    assert_eq!(checkpointer_threads(), threads);
    db.create_tree("t").unwrap();
    for i in 0..200 {
        db.put("t", &key(i), &value(i)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let s = db.checkpoints();
    assert!(!s.running);
    assert_eq!((s.taken, s.automatic), (1, 0), "{s:?}");
    db.checkpoint().unwrap();
    assert_eq!(db.checkpoints().taken, 2);
    assert_eq!(db.info().checkpoints.taken, 2);
    db.close().unwrap();
}

#[test]
fn manual_checkpoints_race_with_background_ones_from_several_threads() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("race");
    const THREADS: u32 = 4;
    const PER_THREAD: u32 = 300;
    let cfg = config(&tmp.0, CheckpointConfig { enabled: true, log_bytes: 32 << 10, interval_ms: 5 }, None);
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for j in 0..PER_THREAD {
                    let i = t * PER_THREAD + j;
                    db.put("t", &key(i), &value(i)).unwrap();
                    if j % 50 == 0 {
                        db.checkpoint().unwrap();
                    }
                }
            });
        }
    });
    let s = db.checkpoints();
    println!("{s:?}");
    let manual = u64::from(THREADS * PER_THREAD.div_ceil(50));
    assert!(s.automatic >= 1, "{s:?}");
    assert_eq!(s.taken, 1 + manual + s.automatic, "{s:?}");
    assert_eq!((s.failed, s.last_error), (0, None));
    db.close().unwrap();
    let db = Db::open(&config(&tmp.0, CheckpointConfig::OFF, None)).unwrap();
    for i in 0..THREADS * PER_THREAD {
        assert_eq!(db.get("t", &key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    db.close().unwrap();
}

#[test]
fn a_crash_while_the_checkpointer_runs_loses_no_committed_key() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("crash");
    let plan = FaultPlan::new();
    let cfg = config(&tmp.0, CheckpointConfig { enabled: true, log_bytes: 64 << 10, interval_ms: 10 }, Some(&plan));
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    // Never dropped (a crash runs no drop): as `std::mem::forget`, but still reachable
    // to see its statistics.
    let db: &'static Db = Box::leak(Box::new(db));
    let committed = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let committed = committed.clone();
        std::thread::spawn(move || {
            for i in 0.. {
                if db.put("t", &key(i), &value(i)).is_err() {
                    return; // the crash
                }
                committed.lock().push(i);
            }
        })
    };
    wait_for(db, "background checkpoints", |s| s.automatic >= 5 && committed.lock().len() >= 300);
    // The power fails while commits and checkpoints run: what was not synced is gone,
    // and nothing more reaches the files.
    plan.lose_unsynced().unwrap();
    writer.join().unwrap();
    // The failed commit poisoned the log: the checkpointer ends (and touches no file).
    let s = wait_for(db, "the checkpointer to end", |s| !s.running);
    assert!(s.stopped.is_some(), "{s:?}");
    let committed = committed.lock().clone();
    println!("{} commits before the crash; {s:?}", committed.len());
    assert!(committed.len() > 100, "only {} commits", committed.len());
    let db = Db::open(&config(&tmp.0, CheckpointConfig::OFF, None)).unwrap();
    for &i in &committed {
        assert_eq!(db.get("t", &key(i)).unwrap(), Some(value(i)), "committed key {i} lost: {:?}", db.recovery());
    }
    db.close().unwrap();
}

#[test]
fn close_checkpoints_and_joins_the_thread_and_so_does_a_drop() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("close");
    let threads = checkpointer_threads();
    let on = CheckpointConfig { enabled: true, log_bytes: 1 << 30, interval_ms: 60_000 };
    let db = Db::open(&config(&tmp.0, on, None)).unwrap();
    assert_eq!(checkpointer_threads(), threads + 1);
    db.create_tree("t").unwrap();
    for i in 0..100 {
        db.put("t", &key(i), &value(i)).unwrap();
    }
    assert_eq!(db.checkpoints().automatic, 0, "no trigger was reached");
    db.close().unwrap();
    assert_eq!(checkpointer_threads(), threads, "close left the thread running");
    // The close checkpointed: the reopen redoes nothing.
    let db = Db::open(&config(&tmp.0, on, None)).unwrap();
    assert_eq!(db.recovery().changes_redone, 0, "{:?}", db.recovery());
    assert_eq!(db.get("t", &key(99)).unwrap(), Some(value(99)));
    assert_eq!(checkpointer_threads(), threads + 1);
    drop(db);
    assert_eq!(checkpointer_threads(), threads, "a drop left the thread running");
}

#[test]
fn a_failed_background_checkpoint_is_reported_without_a_panic() {
    let _serial = SERIAL.lock();
    let tmp = Scratch::new("fails");
    let plan = FaultPlan::new();
    let mut cfg = config(&tmp.0, CheckpointConfig { enabled: true, log_bytes: 16 << 10, interval_ms: 0 }, Some(&plan));
    cfg.wal.file.faults = None; // the page file only
    let db = Db::open(&cfg).unwrap();
    db.create_tree("t").unwrap();
    for i in 0..40 {
        db.put("t", &key(i), &value(i)).unwrap();
    }
    wait_for(&db, "a background checkpoint", |s| s.automatic >= 1);
    // The page file's disk fills up: commits go on (the log is elsewhere, every page
    // fits in DRAM), and the next checkpoint cannot write its pages.
    plan.fail_every_write_from(1, FaultError::NoSpace);
    for i in 40..80 {
        db.put("t", &key(i), &value(i)).unwrap();
    }
    let s = wait_for(&db, "a failed background checkpoint", |s| s.failed >= 1);
    let last = s.last_error.clone().expect("the error is kept");
    assert!(last.contains("background checkpoint (log grew") && last.contains("no space"), "{last}");
    // The page file's handle is poisoned (every later checkpoint fails), the database
    // is not (the log holds every change, the pages stay in DRAM): the checkpointer
    // retries, but not before `RETRY_AFTER_FAILURE_MS` (1 s).
    std::thread::sleep(Duration::from_millis(300));
    let later = db.checkpoints();
    println!("{later:?}");
    assert!(later.running && later.stopped.is_none(), "{later:?}");
    assert!(later.failed <= s.failed + 1, "retried too often: {later:?}");
    assert!(db.close().is_err(), "the close's checkpoint cannot write to the page file");
    // Every commit is in the log.
    plan.stop_failing_writes();
    let db = Db::open(&config(&tmp.0, CheckpointConfig::OFF, None)).unwrap();
    for i in 0..80 {
        assert_eq!(db.get("t", &key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    db.close().unwrap();
}
