//! `tierdb bench ycsb --durability …` end to end: YCSB through a database's
//! transactions at tiny sizes in `model` mode, every durability and both log buffers,
//! and the options it refuses.

use std::path::Path;
use std::process::Output;

mod common;
use common::{interrupt_once_files_exist, json, no_nvm_tier, stderr, tierdb};

fn bench(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut args = vec![
        "bench",
        "ycsb",
        "--mode",
        "model",
        "--dram",
        "2MiB",
        "--data",
        "4MiB",
        "--workload",
        "rw:50",
        "--warmup",
        "0.1",
        "--duration",
        "0.4",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
    ];
    if !no_nvm_tier(extra) {
        args.extend(["--nvm", "8MiB"]);
    }
    args.extend_from_slice(extra);
    tierdb(&args)
}

#[test]
fn every_durability_commits_and_reports_its_log() {
    let dir = tempfile::tempdir().unwrap();
    for (arch, durability, buffer) in [
        ("three-tier", "sync", "dram"),
        ("three-tier", "group", "dram"),
        ("three-tier", "group", "nvm"),
        ("ssd-bm", "group", "nvm"),
        ("basic-nvm-bm", "group", "dram"),
        ("mmap-se2", "sync", "dram"),
        ("three-tier", "none", "dram"),
    ] {
        let what = format!("{arch} {durability} {buffer}");
        let v = json(&bench(
            dir.path(),
            &["--arch", arch, "--durability", durability, "--log-buffer", buffer, "--threads", "2", "--json"],
        ));
        assert_eq!(v["arch"], arch, "{what}");
        assert_eq!(v["setup"]["mode"], "model", "{what}");
        assert_eq!(v["setup"]["threads"], 2, "{what}");
        let r = &v["result"];
        assert!(r["ops"].as_u64().unwrap() > 0, "{what}: {r}");
        assert_eq!(r["not_found"], 0, "{what}");
        let t = &v["txn"];
        assert_eq!(t["durability"], durability, "{what}");
        assert_eq!(t["log_buffer"], buffer, "{what}");
        assert_eq!(t["load_logged"], false, "{what}");
        assert!(t["flush_interval_us"].as_u64().unwrap() > 0, "{what}");
        // rw:50: every update found its key and committed.
        let updates = r["latency"].as_array().unwrap().iter().find(|l| l["kind"] == "UPDATE").expect("updates ran");
        let commits = t["commits"].as_u64().unwrap();
        assert!(commits > 0, "{what}: {t}");
        assert_eq!(commits, updates["ops"].as_u64().unwrap(), "{what}: one commit per update");
        assert_eq!(t["commit_latency"]["ops"].as_u64().unwrap(), commits, "{what}");
        assert!(t["commit_latency"]["p50_ns"].as_f64().unwrap() > 0.0, "{what}");
        let wal = &t["wal"];
        let records = wal["records"].as_u64().unwrap();
        if durability == "none" {
            assert_eq!(records, 0, "{what}: nothing is logged: {wal}");
            assert_eq!(wal["bytes"], 0, "{what}");
        } else {
            // An update, a commit and an end record per transaction (the counters are
            // read at the measured run's ends, where each thread may be mid-transaction).
            assert!(records + 3 * 2 >= 3 * commits, "{what}: {records} records for {commits} commits");
            assert!(wal["bytes"].as_u64().unwrap() > records * 56, "{what}: {wal}");
            // A one-field update logs the field, not the record; with the pages in NVM
            // each write-back (the data is twice DRAM) also logs the page's image.
            let per_commit = t["wal_bytes_per_commit"].as_f64().unwrap();
            let in_nvm = arch == "basic-nvm-bm" || arch.starts_with("mmap");
            assert!(per_commit < 1000.0 || in_nvm, "{what}: {per_commit} log bytes per commit");
        }
        if (durability, buffer) == ("sync", "dram") {
            assert!(wal["syncs"].as_u64().unwrap() > 0, "{what}: a sync commit waits for an fdatasync");
        }
    }
    // The raw mode's report has no transactional part.
    let v = json(&bench(dir.path(), &["--arch", "three-tier", "--json"]));
    assert!(v.get("txn").is_none(), "{v}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

#[test]
fn bad_transactional_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--durability", "maybe"], "expected sync, group or none"),
        (&["--durability", "group", "--log-buffer", "tape"], "expected dram or nvm"),
        (&["--log-buffer", "nvm"], "needs --durability"),
        (&["--flush-interval-us", "500"], "needs --durability"),
        (&["--durability", "group", "--flush-interval-us", "0"], "--flush-interval-us"),
        (&["--durability", "sync", "--arch", "main-memory"], "main-memory has none"),
        (&["--durability", "sync", "--arch", "nvm-direct"], "nvm-direct has none"),
        (&["--durability", "group", "--log-buffer", "nvm", "--log-buffer-size", "100KiB"], "largest records"),
    ];
    for (args, want) in cases {
        let o = bench(dir.path(), args);
        assert!(!o.status.success(), "{args:?} should fail");
        assert_eq!(o.status.code(), Some(if want.contains("expected sync") { 2 } else { 1 }), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

#[test]
fn an_interrupted_transactional_run_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let args = ["bench", "ycsb", "--arch", "three-tier", "--durability", "group", "--log-buffer", "nvm"];
    let more = ["--mode", "model", "--dram", "2MiB", "--nvm", "8MiB", "--data", "4MiB", "--warmup", "60"];
    let dirs = ["--quiet", "--ssd-dir", &d, "--nvm-dir", &d];
    // The pool, the log ring and the database directory; then interrupt.
    let out = interrupt_once_files_exist(&[&args[..], &more[..], &dirs[..]].concat(), dir.path(), 3, 300);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

/// `--page-provider`: a thread beside the workers frees DRAM frames ahead, through the
/// tree and through transactions; the report says so and counts what it did. An
/// architecture without a buffer manager refuses it.
#[test]
fn the_page_provider_runs_beside_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    for txn in [&[][..], &["--durability", "group"][..]] {
        let mut extra = vec!["--arch", "ssd-bm", "--threads", "2", "--page-provider", "--json"];
        extra.extend_from_slice(txn);
        let v = json(&bench(dir.path(), &extra));
        assert_eq!(v["setup"]["page_provider"], true, "{txn:?}");
        let p = &v["result"]["page_provider"];
        assert!(p["frames"].as_u64().unwrap() > 0 && p["errors"] == 0, "{txn:?}: {p}");
        let b = &v["result"]["tiers"]["buffer"];
        assert_eq!(b["provider_errors"], 0, "{txn:?}: {b}");
        assert!(b["provider_frames"].as_u64().unwrap() > 0, "{txn:?}: {b}");
        assert_eq!(v["result"]["not_found"], 0, "{txn:?}");
    }
    let out = bench(dir.path(), &["--arch", "main-memory", "--page-provider"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--page-provider needs an architecture with a buffer manager"), "{}", stderr(&out));
}
