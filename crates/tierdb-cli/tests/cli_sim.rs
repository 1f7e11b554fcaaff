//! `tierdb trace`, `tierdb sim`, `tierdb recommend` and `bench ycsb --trace` end to end:
//! the shared OLTP trace imported and replayed (LRU at 1,000 pages gives the ARC paper's
//! 32.83%), a recorded YCSB run replayed, the recommender's outputs, bad input.

use std::path::PathBuf;

mod common;
use common::{stderr, tierdb};

fn oltp() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/OLTP.lis.zst").display().to_string()
}

#[test]
fn the_oltp_trace_imports_and_replays_at_the_published_hit_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("oltp.trace").display().to_string();
    let o = tierdb(&["trace", "import", "--format", "arc", &oltp(), "--out", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tierdb(&["trace", "info", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(info.contains("914145"), "{info}");
    let o = tierdb(&["sim", &t, "--arch", "ssd-bm", "--policy", "lru", "--dram", "1000p", "--warmup", "none"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(report.contains("DRAM 300122 (32.83%)"), "{report}");
    assert!(report.contains("modelled time") && report.contains("skew"), "{report}");
}

#[test]
fn a_recorded_ycsb_run_replays_and_the_recommender_writes_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let t = dir.path().join("ycsb.trace").display().to_string();
    let o = tierdb(&[
        "bench",
        "ycsb",
        "--arch",
        "three-tier",
        "--techniques",
        "none",
        "--mode",
        "model",
        "--dram",
        "2MiB",
        "--nvm",
        "8MiB",
        "--data",
        "6MiB",
        "--warmup",
        "0.1",
        "--duration",
        "0.3",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--trace",
        &t,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tierdb(&["sim", &t, "--arch", "three-tier", "--dram", "2MiB", "--nvm", "8MiB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("rec").display().to_string();
    let o = tierdb(&["recommend", &t, "--budget", "1", "--out", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["recommend.txt", "recommend.json", "recommend.svg"] {
        assert!(dir.path().join("rec").join(f).exists(), "{f} missing");
    }
    // Figure 3's curve of the measured run: from 0% to 100% of the accesses.
    let out = dir.path().join("skew").display().to_string();
    let o = tierdb(&["trace", "skew", &t, "--names", "ycsb", "--out", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("skew").join("skew.json")).unwrap()).unwrap();
    let curve = j["curves"][0]["curve"].as_array().unwrap();
    assert_eq!(curve.first().unwrap()["accesses_percent"].as_f64(), Some(0.0));
    assert_eq!(curve.last().unwrap()["accesses_percent"].as_f64(), Some(100.0));
    assert_eq!(j["curves"][0]["counted"], "from the measure marker");
    assert!(dir.path().join("skew").join("skew.svg").exists());
    let o = tierdb(&["trace", "skew", &t, "--names", "a,b", "--out", &out]);
    assert!(!o.status.success() && stderr(&o).contains("--names gives 2 names for 1 traces"), "{}", stderr(&o));
}

#[test]
fn a_recorded_tpcc_run_replays() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let t = dir.path().join("tpcc.trace").display().to_string();
    let o = tierdb(&[
        "bench",
        "tpcc",
        "--tiny",
        "--arch",
        "three-tier",
        "--dram",
        "4MiB",
        "--nvm",
        "16MiB",
        "--threads",
        "1",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--mode",
        "off",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--trace",
        &t,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tierdb(&["sim", &t, "--arch", "three-tier", "--dram", "1MiB", "--nvm", "4MiB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["result"]["accesses"].as_u64().unwrap() > 0, "the measured run was recorded: {j}");
    assert!(j["result"]["warmup_accesses"].as_u64().unwrap() > 0, "and the load before it: {j}");
}

#[test]
fn bad_traces_and_options_are_errors_that_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "hello world\n").unwrap();
    let bad = bad.display().to_string();
    for (args, needle) in [
        (vec!["trace", "info", bad.as_str()], "bad.txt"),
        (vec!["sim", bad.as_str()], "bad.txt"),
        (vec!["sim", "/nonexistent/trace"], "/nonexistent/trace"),
        (vec!["sim", bad.as_str(), "--format", "nosuch"], "nosuch"),
        (vec!["recommend", bad.as_str(), "--budget", "-1"], ""),
    ] {
        let o = tierdb(&args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}
