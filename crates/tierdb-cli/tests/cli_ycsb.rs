//! `tierdb bench ycsb` and `tierdb compare` end to end, at tiny sizes in `model` mode.

use std::path::Path;
use std::process::Output;

mod common;
use common::{interrupt_once_files_exist, stderr, tierdb};

fn bench(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut args = vec![
        "bench",
        "ycsb",
        "--mode",
        "model",
        "--warmup",
        "0.2",
        "--duration",
        "0.5",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
    ];
    args.extend_from_slice(extra);
    tierdb(&args)
}

#[test]
fn every_architecture_runs_and_reports_its_tiers() {
    let dir = tempfile::tempdir().unwrap();
    for arch in
        ["main-memory", "ssd-bm", "basic-nvm-bm", "three-tier", "nvm-direct", "mmap-read", "mmap-se1", "mmap-se2"]
    {
        let o = bench(
            dir.path(),
            &["--arch", arch, "--dram", "2MiB", "--nvm", "8MiB", "--data", "6MiB", "--seed", "9", "--json"],
        );
        if arch == "main-memory" {
            assert!(!o.status.success(), "6 MiB do not fit 2 MiB of DRAM");
            assert!(stderr(&o).contains("cannot hold"), "{}", stderr(&o));
            continue;
        }
        assert!(o.status.success(), "{arch}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
        assert_eq!(v["arch"], arch);
        assert_eq!(v["setup"]["seed"], 9);
        assert_eq!(v["setup"]["mode"], "model");
        let r = &v["result"];
        assert!(r["ops"].as_u64().unwrap() > 0, "{arch}: {r}");
        assert_eq!(r["not_found"], 0, "{arch}");
        assert!(r["modelled_ops_per_sec"].as_f64().unwrap() > 0.0, "{arch}");
        let data = r["data_bytes"].as_u64().unwrap() as f64;
        assert!((data / (6 << 20) as f64 - 1.0).abs() < 0.15, "{arch}: data size {data}");
        let b = &r["tiers"]["buffer"];
        if arch == "nvm-direct" {
            // No buffer: every page is read in NVM.
            assert!(r["tiers"]["nvm"]["reads"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(b["nvm_hits"], 0);
            continue;
        }
        // Data three times DRAM: some fixes miss DRAM on every architecture here.
        let misses = b["nvm_hits"].as_u64().unwrap() + b["ssd_reads"].as_u64().unwrap();
        assert!(misses > 0, "{arch}: {b}");
        match arch {
            "ssd-bm" => assert_eq!(b["nvm_hits"], 0),
            "basic-nvm-bm" | "mmap-read" | "mmap-se1" => assert_eq!(b["ssd_reads"], 0),
            // SE2 reads in place: YCSB-RO copies no page into DRAM.
            "mmap-se2" => {
                assert_eq!((b["ssd_reads"].as_u64(), b["nvm_to_dram_pages"].as_u64()), (Some(0), Some(0)), "{b}");
                assert!(b["nvm_reads_in_place"].as_u64().unwrap() > 0, "{b}");
            }
            _ => {}
        }
    }
    // Nothing left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// With an operation count, a run does exactly that many operations, also when the
/// threads claim them in batches and the last batch is claimed before it is done. A
/// slow SSD (2 ms a read, emulated) makes the last batch outlast the main thread's
/// 50 ms poll, which once stopped the workers with operations claimed and not run.
#[test]
fn an_operation_count_is_run_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let profile = dir.path().join("slow-ssd.toml");
    std::fs::write(&profile, "inherits = \"nvme-ssd\"\nname = \"slow-ssd\"\nread_latency_ns = 2000000\n").unwrap();
    let profile = profile.display().to_string();
    for threads in ["1", "2"] {
        let o = tierdb(&[
            "bench",
            "ycsb",
            "--arch",
            "ssd-bm",
            "--mode",
            "spin",
            "--ssd-profile",
            &profile,
            "--dram",
            "1MiB",
            "--data",
            "4MiB",
            "--workload",
            "ro",
            "--set",
            "requestdistribution=uniform",
            "--warmup",
            "0",
            "--duration",
            "0",
            "--set",
            "operationcount=200",
            "--threads",
            threads,
            "--quiet",
            "--json",
            "--ssd-dir",
            &d,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
        assert_eq!(v["result"]["ops"], 200, "{threads} thread(s)");
    }
}

#[test]
fn main_memory_in_dram_has_no_tier_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(dir.path(), &["--arch", "main-memory", "--dram", "8MiB", "--data", "2MiB", "--workload", "rw:50"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("UPDATE") && out.contains("READ"), "{out}");
    assert!(out.contains("mode model"), "{out}");
}

#[test]
fn every_builtin_workload_runs() {
    let dir = tempfile::tempdir().unwrap();
    for w in ["a", "b", "c", "d", "e", "f", "scan", "rw:5"] {
        let o = bench(
            dir.path(),
            &[
                "--arch",
                "three-tier",
                "--dram",
                "1MiB",
                "--nvm",
                "4MiB",
                "--workload",
                w,
                "--set",
                "recordcount=5000",
                "--json",
            ],
        );
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["result"]["records"], 5000, "{w}");
        assert!(v["result"]["ops"].as_u64().unwrap() > 0, "{w}");
    }
}

#[test]
fn bad_workloads_and_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.properties");
    std::fs::write(&bad, "recordcount=100\nreadproportion=1\nfoo=bar\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--workload".into(), bad.display().to_string()], "line 3"),
        (vec!["--workload".into(), "nosuch".into()], "rw:PCT"),
        (vec!["--workload".into(), "rw:101".into()], "rw"),
        (vec!["--set".into(), "recordcount=abc".into()], "recordcount"),
        (vec!["--set".into(), "novalue".into()], "KEY=VALUE"),
        (vec!["--arch".into(), "two-tier".into()], "unknown architecture"),
        (vec!["--threads".into(), "0".into()], "--threads"),
        (vec!["--page-size".into(), "3000".into()], "power of two"),
        (vec!["--nvm-profile".into(), "nosuch".into()], "nosuch"),
    ];
    for (args, want) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = bench(dir.path(), &a);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    // The workload file is untouched, and no engine file is left.
    assert!(std::fs::read_to_string(&bad).unwrap().contains("foo=bar"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn compare_writes_table_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let d = dir.path().display().to_string();
    let o = tierdb(&[
        "compare",
        "--mode",
        "model",
        "--dram",
        "1MiB",
        "--nvm",
        "3MiB",
        "--sizes",
        "512KiB,2MiB,4MiB",
        "--warmup",
        "0.1",
        "--duration",
        "0.3",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--out",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("compare.txt")).unwrap();
    assert!(text.contains("three-tier / ssd-bm") && text.contains("mode model"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("compare.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 15);
    let skipped: Vec<_> = points
        .iter()
        .filter(|p| p["skipped"].is_string())
        .map(|p| (p["arch"].clone(), p["data_bytes"].clone()))
        .collect();
    // main-memory holds 1 MiB, basic-nvm-bm and nvm-direct 3 MiB.
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    let svg = std::fs::read_to_string(out.join("compare.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{}", &svg[..50]);
    for name in ["main-memory", "ssd-bm", "basic-nvm-bm", "three-tier", "nvm-direct", "DRAM 1MiB", "NVM 3MiB"] {
        assert!(svg.contains(name), "svg lacks {name}");
    }
}

#[test]
fn an_interrupted_run_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let args = ["bench", "ycsb", "--arch", "three-tier", "--mode", "model", "--dram", "2MiB", "--nvm", "8MiB"];
    let more = ["--data", "4MiB", "--warmup", "60", "--quiet", "--ssd-dir", &d, "--nvm-dir", &d];
    // Once the engine's files exist.
    let out = interrupt_once_files_exist(&[&args[..], &more[..]].concat(), dir.path(), 2, 200);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

#[test]
fn double_write_can_be_turned_off_for_a_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let mut dwa_writes = Vec::new();
    let mut nvm_dwa_writes = Vec::new();
    for dw in ["on", "off", "nvm"] {
        let o = bench(
            dir.path(),
            &[
                "--arch",
                "ssd-bm",
                "--dram",
                "2MiB",
                "--data",
                "6MiB",
                "--workload",
                "rw:50",
                "--double-write",
                dw,
                "--json",
            ],
        );
        assert!(o.status.success(), "{dw}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
        assert_eq!(v["setup"]["double_write"], dw);
        let t = &v["result"]["tiers"];
        // Updates evict dirty pages: each eviction's page goes through the double-write file.
        assert!(t["ssd"]["writes"].as_u64().unwrap() > 0, "{dw}: {t}");
        dwa_writes.push(t["ssd_double_write"]["writes"].as_u64());
        nvm_dwa_writes.push(t["nvm_double_write"]["writes"].as_u64());
    }
    // on (ssd-bm: a file on SSD), off, nvm (the copies go to an NVM region instead).
    assert!(dwa_writes[0].is_some_and(|w| w > 0) && dwa_writes[1].is_none(), "{dwa_writes:?}");
    assert!(dwa_writes[2].is_none() && nvm_dwa_writes[2].is_some_and(|w| w > 0), "{nvm_dwa_writes:?}");
    assert!(nvm_dwa_writes[0].is_none() && nvm_dwa_writes[1].is_none(), "{nvm_dwa_writes:?}");
    let o = bench(dir.path(), &["--arch", "ssd-bm", "--double-write", "maybe"]);
    assert!(!o.status.success() && stderr(&o).contains("expected on, off, ssd or nvm"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");
}
