//! `--json` means standard output holds one JSON document and nothing else (issue 19,
//! item 5): every command that has the flag is run at tiny sizes (`--mode model` where
//! something runs) and its standard output is parsed as exactly one JSON value; notes,
//! warnings and progress go to standard error. A command that gains `--json` without
//! a case here fails `every_command_with_json_is_checked`.

use std::path::Path;
use std::process::Output;

mod common;
use common::{commands_with, stderr, tierdb};

/// The commands checked below, by their path in `tierdb --help`.
const CHECKED: [&str; 9] = [
    "bench tpcc",
    "bench wal",
    "bench ycsb",
    "check-isolation",
    "crashtest",
    "devices bench",
    "devices inspect",
    "devices probe",
    "sim",
];

/// Asserts that `o` succeeded and printed exactly one JSON object on standard output
/// (serde_json refuses anything after the value but white space), and returns it.
fn only_json(o: &Output, what: &str) -> serde_json::Value {
    assert!(o.status.success(), "{what}: {}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{what}: standard output is not one JSON document ({e}):\n{}", String::from_utf8_lossy(&o.stdout))
    });
    assert!(v.is_object(), "{what}: {v}");
    v
}

fn dir_arg(dir: &Path) -> String {
    dir.display().to_string()
}

#[test]
fn every_command_with_json_is_checked() {
    assert_eq!(commands_with(&["--json"]), CHECKED, "a command has --json but no check in this file");
}

#[test]
fn devices_probe() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let v = only_json(&tierdb(&["devices", "probe", "--nvm-dir", &d, "--ssd-dir", &d, "--json"]), "devices probe");
    assert!(v.as_object().is_some_and(|m| !m.is_empty()), "{v}");
}

#[test]
fn devices_inspect() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages.db");
    let f = tierdb::device::SsdFile::create(&tierdb::device::SsdConfig::new(&path)).unwrap();
    f.grow(3).unwrap();
    drop(f);
    let v = only_json(&tierdb(&["devices", "inspect", path.to_str().unwrap(), "--json"]), "devices inspect");
    assert_eq!(v["superblock"]["page_count"], 4);
}

#[test]
fn devices_bench() {
    let dir = tempfile::tempdir().unwrap();
    let (nvm, ssd) = (dir.path().join("b.nvm"), dir.path().join("b.ssd"));
    let (nvm, ssd) = (dir_arg(&nvm), dir_arg(&ssd));
    let o = tierdb(&[
        "devices",
        "bench",
        "--mode",
        "model",
        "--dram-size",
        "1MiB",
        "--nvm-size",
        "1MiB",
        "--ssd-size",
        "1MiB",
        "--ops",
        "1000",
        "--ssd-ops",
        "20",
        "--runs",
        "1",
        "--nvm-path",
        &nvm,
        "--ssd-path",
        &ssd,
        "--json",
    ]);
    only_json(&o, "devices bench");
}

#[test]
fn bench_wal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let o = tierdb(&["bench", "wal", "--mode", "model", "--duration", "0.2", "--dir", &d, "--json"]);
    only_json(&o, "bench wal");
}

fn ycsb(dir: &Path, extra: &[&str]) -> Output {
    let d = dir_arg(dir);
    let mut args = vec!["bench", "ycsb", "--mode", "model", "--dram", "1MiB", "--nvm", "4MiB", "--data", "2MiB"];
    args.extend(["--warmup", "0", "--duration", "0.2", "--ssd-dir", &d, "--nvm-dir", &d, "--json"]);
    args.extend_from_slice(extra);
    tierdb(&args)
}

#[test]
fn bench_ycsb_with_a_trace_and_a_workload_file_that_warns() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir_arg(&dir.path().join("y.trace"));
    let workload = dir.path().join("w.properties");
    std::fs::write(&workload, "recordcount=1000\nreadproportion=1\nupdateproportion=0\nnosuchproperty=1\n").unwrap();
    let o = ycsb(dir.path(), &["--trace", &trace, "--workload", workload.to_str().unwrap()]);
    let v = only_json(&o, "bench ycsb");
    assert_eq!(v["command"], "bench ycsb");
    // The notes went to standard error.
    let e = stderr(&o);
    assert!(e.contains("records written to") && e.contains("nosuchproperty"), "{e}");
}

#[test]
fn bench_ycsb_through_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let v = only_json(&ycsb(dir.path(), &["--durability", "group"]), "bench ycsb --durability group");
    assert!(v["txn"].is_object(), "{v}");
}

#[test]
fn bench_tpcc_with_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let o = tierdb(&[
        "bench",
        "tpcc",
        "--tiny",
        "--mode",
        "model",
        "--dram",
        "4MiB",
        "--nvm",
        "16MiB",
        "--warmup",
        "0",
        "--duration",
        "0.2",
        "--crash",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--json",
    ]);
    let v = only_json(&o, "bench tpcc");
    assert!(v["crash"].is_object(), "{v}");
}

#[test]
fn check_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir_arg(dir.path());
    let args =
        ["check-isolation", "--arch", "main-memory", "--isolation", "read-uncommitted", "--judge", "read-uncommitted"];
    let v = only_json(
        &tierdb(&[&args[..], &["--duration", "200ms", "--ssd-dir", &d, "--json"]].concat()),
        "check-isolation",
    );
    assert_eq!(v["setup"]["arch"], "main-memory", "{v}");
}

#[test]
fn crashtest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir_arg(&dir.path().join("db"));
    let o =
        tierdb(&["crashtest", "--arch", "ssd-bm", "--points", "2", "--kill-after-ms", "20", "--dir", &db, "--json"]);
    only_json(&o, "crashtest");
}

#[test]
fn sim_prints_its_report_as_json_alone() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.txt");
    std::fs::write(&trace, "# tierdb-trace 1\n# page_size 4096\nR 1\nR 2\nW 1\nM measure\nR 1\nR 3\n").unwrap();
    let trace = dir_arg(&trace);
    let o = tierdb(&["sim", &trace, "--arch", "three-tier", "--dram", "1p", "--nvm", "2p", "--json"]);
    let v = only_json(&o, "sim");
    assert_eq!(v["result"]["accesses"], 2);
    assert_eq!(stderr(&o), "", "sim --json: the text report is printed nowhere");
    // Without --json, the text report alone.
    let o = tierdb(&["sim", &trace, "--arch", "three-tier", "--dram", "1p", "--nvm", "2p"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.starts_with("trace ") && !text.contains('{'), "{text}");
}
