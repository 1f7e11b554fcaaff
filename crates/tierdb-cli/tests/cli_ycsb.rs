//! `tierdb bench ycsb` and `tierdb compare` end to end, at tiny sizes in `model` mode.

use std::path::Path;
use std::process::Output;

mod common;
use common::{interrupt_once_files_exist, json, stderr, tierdb};

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
        // --nvm only where there is an NVM tier: elsewhere it is refused.
        // nvm-direct reads in place through the CPU-cache model: one smaller than the data
        // (the default 32 MiB holds all 6 MiB once the load has touched them), so that the
        // run's reads reach NVM.
        let nvm: &[&str] = match arch {
            "main-memory" | "ssd-bm" => &[],
            "nvm-direct" => &["--nvm", "8MiB", "--cpu-cache", "1MiB"],
            _ => &["--nvm", "8MiB"],
        };
        let args = [&["--arch", arch, "--dram", "2MiB", "--data", "6MiB", "--seed", "9", "--json"][..], nvm].concat();
        let o = bench(dir.path(), &args);
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
    std::fs::write(&bad, "recordcount=100\nreadproportion=1\nupdateproportion=lots\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--workload".into(), bad.display().to_string()], "line 3: bad value `lots` for `updateproportion`"),
        (vec!["--set".into(), "recrodcount=5".into()], "did you mean `recordcount`?"),
        (
            vec!["--set".into(), "fieldlengthdistribution=uniform".into(), "--durability".into(), "group".into()],
            "constant field lengths",
        ),
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
    assert!(std::fs::read_to_string(&bad).unwrap().contains("=lots"));
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

/// YCSB's shipped files, byte for byte (crates/tierdb-workload/tests/ycsb-files).
fn ycsb_file(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tierdb-workload/tests/ycsb-files").join(name).display().to_string()
}

/// A tiny three-tier run of `workload` in model mode: 2000 records, 300 operations.
fn run_file(dir: &Path, workload: &str, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut args = vec![
        "bench",
        "ycsb",
        "--arch",
        "three-tier",
        "--mode",
        "model",
        "--dram",
        "1MiB",
        "--nvm",
        "4MiB",
        "--workload",
        workload,
        "--set",
        "recordcount=2000",
        "--set",
        "operationcount=300",
        "--warmup",
        "0",
        "--duration",
        "0",
        "--seed",
        "3",
        "--quiet",
        "--json",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
    ];
    args.extend_from_slice(extra);
    tierdb(&args)
}

#[test]
fn ycsb_workloada_and_the_template_run_unmodified_on_three_tier() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_file(dir.path(), &ycsb_file("workloada"), &[]);
    let v = json(&o);
    assert_eq!(v["result"]["ops"], 300);
    assert_eq!(v["result"]["not_found"], 0);
    assert_eq!(v["setup"]["workload"]["request_distribution"], "zipfian");
    assert_eq!(v["setup"]["workload"]["mix"]["update"], 0.5);
    // Everything workloada sets applies: nothing to warn about.
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));

    let template = ycsb_file("workload_template");
    let o = run_file(dir.path(), &template, &[]);
    let v = json(&o);
    assert_eq!(v["result"]["ops"], 300);
    assert_eq!(
        (v["setup"]["workload"]["field_count"].as_u64(), v["result"]["record_bytes"].as_u64()),
        (Some(10), Some(1000))
    );
    // One warning line lists what the template sets that does not apply here.
    let err = stderr(&o);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].starts_with(&format!("warning: workload file {template}: 11 properties ignored: ")), "{err}");
    for key in
        ["maxscanrate", "table", "measurementtype", "histogram.buckets", "timeseries.granularity", "hotspotopnfraction"]
    {
        assert!(warnings[0].contains(key), "{key}: {err}");
    }
    assert!(!err.contains("unknown"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

#[test]
fn an_unknown_property_warns_and_a_bad_value_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(ycsb_file("workloada")).unwrap();
    let lines = shipped.lines().count();
    let typo = dir.path().join("typo");
    std::fs::write(&typo, format!("{shipped}requestdistrbution=uniform\n")).unwrap();
    let o = run_file(dir.path(), &typo.display().to_string(), &[]);
    let v = json(&o);
    // Ignored, so the file's zipfian stays.
    assert_eq!(v["setup"]["workload"]["request_distribution"], "zipfian");
    assert!(
        stderr(&o).contains(&format!(
            "warning: workload file {} line {}: unknown property `requestdistrbution` ignored (no YCSB version \
             defines it); did you mean `requestdistribution`?",
            typo.display(),
            lines + 1
        )),
        "{}",
        stderr(&o)
    );

    let bad = dir.path().join("bad");
    std::fs::write(&bad, shipped.replace("readproportion=0.5", "readproportion=0.5x")).unwrap();
    let o = run_file(dir.path(), &bad.display().to_string(), &[]);
    assert!(!o.status.success());
    let line = shipped.lines().position(|l| l == "readproportion=0.5").unwrap() + 1;
    assert!(
        stderr(&o).contains(&format!(
            "workload file {} line {line}: bad value `0.5x` for `readproportion`: expected a finite number",
            bad.display()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "files left behind");
}

#[test]
fn every_distribution_kind_runs_through_the_driver() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lengths.txt"), "BlockSize\t16\n0\t5\n1\t10\n2\t20\n3\t5\n").unwrap();
    let cases = [
        "requestdistribution=sequential\nfieldlengthdistribution=uniform\nreadallfields=false\n\
         readproportion=0.5\nupdateproportion=0.5",
        "requestdistribution=exponential\nfieldlengthdistribution=zipfian\nminfieldlength=10\n\
         readproportion=0.4\nupdateproportion=0\nscanproportion=0.3\nreadmodifywriteproportion=0.3\n\
         scanlengthdistribution=zipfian\nmaxscanlength=50",
        "requestdistribution=hotspot\nfieldlengthdistribution=histogram\nfieldlengthhistogram=lengths.txt\n\
         writeallfields=true\nreadproportion=0.5\nupdateproportion=0.3\ninsertproportion=0.2",
        "requestdistribution=latest\ninsertorder=ordered\nzeropadding=12\ndataintegrity=true\n\
         readproportion=0.6\nupdateproportion=0.2\ninsertproportion=0.1\nreadmodifywriteproportion=0.1",
    ];
    for (i, text) in cases.iter().enumerate() {
        let file = dir.path().join(format!("w{i}"));
        std::fs::write(&file, text).unwrap();
        let o = run_file(dir.path(), &file.display().to_string(), &["--threads", "2"]);
        let v = json(&o);
        let r = &v["result"];
        assert_eq!((r["ops"].as_u64(), r["not_found"].as_u64()), (Some(300), Some(0)), "{text}: {r}");
        assert!(!stderr(&o).contains("warning"), "{text}: {}", stderr(&o));
        if text.contains("fieldlengthdistribution") {
            assert!(r["record_bytes_mean"].as_f64().unwrap() < r["record_bytes"].as_f64().unwrap(), "{text}: {r}");
        }
    }
    // Only the workload files and the histogram are left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), cases.len() + 1);
}

/// `--batch`: a worker takes operations in batches and reads their SSD pages ahead
/// together. Every read checks its bytes (`dataintegrity`) through updates, the pages
/// read ahead are counted apart, an operation count is run exactly, and bad values are
/// refused.
#[test]
fn batches_read_ahead_and_every_read_checks_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (arch, mode, nvm) in [("ssd-bm", "off", "0"), ("three-tier", "off", "2MiB"), ("ssd-bm", "model", "0")] {
        let nvm: &[&str] = if nvm == "0" { &[] } else { &["--nvm", nvm] };
        let o = batched(
            dir.path(),
            &[
                &[
                    "--arch",
                    arch,
                    "--mode",
                    mode,
                    "--dram",
                    "1MiB",
                    "--data",
                    "8MiB",
                    "--workload",
                    "a",
                    "--set",
                    "dataintegrity=true",
                    "--threads",
                    "2",
                    "--batch",
                    "16",
                    "--json",
                ][..],
                nvm,
            ]
            .concat(),
        );
        assert!(o.status.success(), "{arch} {mode}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
        assert_eq!(v["setup"]["batch"], 16, "{arch} {mode}");
        assert_eq!(v["result"]["not_found"], 0, "{arch} {mode}");
        assert!(v["result"]["ops"].as_u64().unwrap() > 0, "{arch} {mode}");
        let b = &v["result"]["tiers"]["buffer"];
        assert!(b["prefetch_reads"].as_u64().unwrap() > 0, "{arch} {mode}: {b}");
    }
    // An operation count that is no multiple of the batch.
    let o = batched(
        dir.path(),
        &[
            "--arch",
            "ssd-bm",
            "--mode",
            "off",
            "--dram",
            "1MiB",
            "--data",
            "4MiB",
            "--workload",
            "ro",
            "--warmup",
            "0",
            "--duration",
            "0",
            "--set",
            "operationcount=203",
            "--threads",
            "2",
            "--batch",
            "16",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(v["result"]["ops"], 203);
    for (args, want) in [
        (&["--batch", "0"][..], "--batch 0 is outside 1..=1024"),
        (&["--batch", "2000"][..], "--batch 2000 is outside 1..=1024"),
        (&["--batch", "4", "--durability", "group"][..], "transactions look their keys up one at a time"),
    ] {
        let o = batched(
            dir.path(),
            &[&["--arch", "ssd-bm", "--mode", "model", "--dram", "1MiB", "--data", "4MiB"][..], args].concat(),
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "files left behind");
}

/// `bench ycsb` with `extra` (which names the mode; a short run unless it names the
/// phases).
fn batched(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut args = vec!["bench", "ycsb", "--quiet", "--ssd-dir", &d, "--nvm-dir", &d];
    if !extra.contains(&"--warmup") {
        args.extend(["--warmup", "0.2", "--duration", "0.5"]);
    }
    args.extend_from_slice(extra);
    tierdb(&args)
}
