//! `tierdb bench tpcc` and `tierdb compare --workload tpcc` end to end at the tiny
//! scale (not spec-conformant) in `model` mode: every architecture runs, crashes,
//! recovers and passes the consistency conditions.

use std::path::Path;
use std::process::Output;

mod common;
use common::{json, no_nvm_tier, stderr, tierdb};

fn bench(dir: &Path, arch: &str, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    // main-memory holds the whole database (and its growth during the run) in DRAM.
    let dram = if arch == "main-memory" { "32MiB" } else { "4MiB" };
    let mut args = vec![
        "bench",
        "tpcc",
        "--arch",
        arch,
        "--tiny",
        "--warehouses",
        "2",
        "--threads",
        "2",
        "--mode",
        "model",
        "--dram",
        dram,
        "--warmup",
        "0.1",
        "--duration",
        "0.5",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
    ];
    if !no_nvm_tier(&["--arch", arch]) {
        args.extend(["--nvm", "16MiB"]);
    }
    args.extend_from_slice(extra);
    tierdb(&args)
}

#[test]
fn every_architecture_runs_crashes_and_stays_consistent() {
    for arch in [
        "main-memory",
        "ssd-bm",
        "basic-nvm-bm",
        "three-tier",
        "nvm-direct",
        "mmap-read",
        "mmap-se1",
        "mmap-se2",
        "nvcache",
        "nvsql",
    ] {
        let dir = tempfile::tempdir().unwrap();
        // nvm-direct logs each write-back durably before it: an NVM log buffer makes that
        // an NVM persist, not an fdatasync.
        let log = if arch == "nvm-direct" { "nvm" } else { "dram" };
        let out = bench(dir.path(), arch, &["--crash", "--json", "--log-buffer", log, "--checkpoint-interval", "0.2"]);
        assert!(out.status.success(), "{arch}: {}", stderr(&out));
        let r = json(&out);
        assert_eq!(r["arch"], arch);
        assert_eq!(r["spec_conformant"], false);
        assert_eq!(r["load_rows"]["rows"][10], 2000, "{arch}: stock rows");
        assert_eq!(r["load_rows"]["rows"][5], 180, "{arch}: new-order rows");
        assert!(r["db_bytes_loaded"].as_u64().unwrap() > 1 << 20);
        let kinds = r["kinds"].as_array().unwrap();
        assert!(kinds[0]["committed"].as_u64().unwrap() > 0 && kinds[1]["committed"].as_u64().unwrap() > 0, "{arch}");
        assert!(r["modelled_tx_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(r["consistency"]["violations"].as_array().unwrap().len(), 0, "{arch}: {}", r["consistency"]);
        // Checkpoints ran while the transactions did (every 0.2 s).
        assert!(r["checkpoints"]["in_warmup"].as_u64().unwrap() + r["checkpoints"]["in_run"].as_u64().unwrap() >= 1);
        let crash = &r["crash"];
        assert_eq!(crash["open_transactions"], 2);
        let rec = &crash["recovery"];
        let phases: f64 = ["open_secs", "analysis_secs", "redo_secs", "undo_secs", "checkpoint_secs"]
            .iter()
            .map(|k| rec[k].as_f64().unwrap())
            .sum();
        assert!(phases <= rec["secs"].as_f64().unwrap() + 1e-6, "{arch}: the phases split the recovery: {rec}");
        assert!(crash["recovery"]["losers"].as_array().unwrap().len() >= 2, "{arch}: {crash}");
        assert_eq!(crash["consistency"]["violations"].as_array().unwrap().len(), 0, "{arch}: {crash}");
        assert_eq!(crash["consistency"]["orders"], r["consistency"]["orders"], "{arch}: committed orders kept");
        match arch {
            "main-memory" => assert!(crash["recovery"]["snapshot_pages_loaded"].as_u64().unwrap() > 0, "{crash}"),
            "basic-nvm-bm" | "mmap-read" | "mmap-se1" | "mmap-se2" => {
                assert!(crash["recovery"]["nvm_pages_reused"].as_u64().unwrap() > 0, "{arch}: {crash}")
            }
            _ => {}
        }
        // Nothing is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{arch}");
    }
}

#[test]
fn a_bad_log_buffer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench(dir.path(), "ssd-bm", &["--log-buffer", "pmem"]);
    assert!(!out.status.success() && stderr(&out).contains("--log-buffer"));
}

#[test]
fn a_bad_double_write_slot_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "70000", "many"] {
        let out = bench(dir.path(), "nvsql", &["--nvm-double-write-slots", bad]);
        let err = stderr(&out);
        assert!(!out.status.success() && err.contains("--nvm-double-write-slots"), "{bad}: {err}");
    }
}

#[test]
fn compare_tpcc_sweeps_warehouses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let out_dir = dir.path().join("out");
    let o = out_dir.display().to_string();
    let out = tierdb(&[
        "compare",
        "--workload",
        "tpcc",
        "--tiny",
        "--warehouses",
        "1,2",
        "--archs",
        "ssd-bm,nvm-direct,three-tier",
        "--mode",
        "model",
        "--dram",
        "4MiB",
        "--nvm",
        "16MiB",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--out",
        &o,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(out_dir.join("compare-tpcc.txt")).unwrap();
    assert!(text.contains("nvm-direct tx/s"), "{text}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("compare-tpcc.json")).unwrap()).unwrap();
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    let measured = points.iter().filter(|p| p["tx_per_sec"].as_f64().is_some_and(|v| v > 0.0)).count();
    assert_eq!(measured, 6);
    // nvm-direct's log buffer is in NVM (`--log-buffer auto`): with it in DRAM, every
    // in-place write-back waits for an fdatasync, and its line lay flat at zero.
    for p in points {
        let want = if p["arch"] == "nvm-direct" { "nvm" } else { "dram" };
        assert_eq!(p["runs"][0]["log_buffer"], want, "{p}");
    }
    let svg = std::fs::read_to_string(out_dir.join("compare-tpcc.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("nvm-direct"));
}
