//! `nvcache` from the command line: the `nvcache-obp` experiment at a tiny size, the
//! NVM cache's counters in `bench ycsb`, and bad input.

mod common;
use common::{json, stderr, tierdb, tierdb_with};

/// `nvcache-obp` at a tiny size with its files under `dir` (output in `dir/out`).
fn tiny_obp(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    tierdb_with(
        "nvcache-obp",
        &[
            ("--dram", "512KiB"),
            ("--nvm", "2MiB"),
            ("--data", "6MiB"),
            ("--runs", "1"),
            ("--warmup", "0.1"),
            ("--duration", "0.4"),
            ("--ssd-dir", &d),
            ("--nvm-dir", &d),
            ("--out", &out),
        ],
        extra,
    )
}

#[test]
fn nvcache_obp_writes_a_row_per_workload_and_admission_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = tiny_obp(dir.path(), &["--parts", "table1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["nvcache-obp.txt", "nvcache-obp.json", "nvcache-obp-throughput.svg", "nvcache-obp-nvm-writes.svg"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("nvcache-obp.json")).unwrap()).unwrap();
    assert_eq!(v["command"], "nvcache-obp");
    assert_eq!(v["setup"]["mode"], "model");
    assert_eq!(v["setup"]["model_clock"], "cpu");
    assert!(v["phases"].is_null(), "--parts table1 runs no phases");
    let rows = v["rows"].as_array().unwrap();
    let shape: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["workload"].as_str().unwrap(), r["obp"].as_str().unwrap())).collect();
    assert_eq!(
        shape,
        [("a", "off"), ("a", "cumulative"), ("a", "window"), ("c", "off"), ("c", "cumulative"), ("c", "window")]
    );
    for r in rows {
        let c = &r["nvm_cache"];
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert!(c["lookups"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["lookups"].as_u64(), Some(c["hits"].as_u64().unwrap() + c["misses"].as_u64().unwrap()));
        if r["obp"] == "off" {
            assert_eq!(c["bypass_obp"], 0, "{c}");
        }
    }
    // Windowed OBP bypasses admissions on both workloads; always-admit writes at least
    // as much to NVM per operation on the read-only one (the runs are timed, so compare
    // per operation).
    for w in [0, 3] {
        assert!(rows[w + 2]["nvm_cache"]["bypass_obp"].as_u64().unwrap() > 0, "{}", rows[w + 2]);
    }
    let per_op = |r: &serde_json::Value| {
        r["nvm_line_writes"].as_f64().unwrap() / r["runs"][0]["result"]["ops"].as_f64().unwrap().max(1.0)
    };
    assert!(per_op(&rows[3]) >= per_op(&rows[5]), "c: {} vs {}", per_op(&rows[3]), per_op(&rows[5]));
    let text = std::fs::read_to_string(out.join("nvcache-obp.txt")).unwrap();
    assert!(text.contains("OBP window") && text.contains("always-admit") && text.contains("optane-dcpmm"), "{text}");
}

#[test]
fn bench_ycsb_reports_the_nvm_cache_counters() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let args = [
        "bench",
        "ycsb",
        "--arch",
        "nvcache",
        "--dram",
        "512KiB",
        "--nvm",
        "2MiB",
        "--data",
        "6MiB",
        "--workload",
        "c",
        "--mode",
        "model",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--obp",
        "cumulative",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--quiet",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let v = json(&tierdb(&with_json));
    assert_eq!(v["arch"], "nvcache");
    assert_eq!(v["setup"]["nvcache"]["obp_mode"], "cumulative");
    let c = &v["result"]["tiers"]["nvm_cache"];
    assert!(c["lookups"].as_u64().unwrap() > 0 && c["misses"].as_u64().unwrap() > 0, "{c}");
    let o = tierdb(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("bypassed: OBP over target") && text.contains("inserts on write"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "engine files left behind");
}

/// The phases part: each admission mode runs the phases in turn on one engine, epoch by
/// epoch; the reads fill the cache, the updates remove copies.
#[test]
fn nvcache_obp_phases_run_each_mode_over_the_phases() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = tiny_obp(
        dir.path(),
        &["--parts", "phases", "--phases", "c,rw:100", "--phase-epochs", "2", "--phase-epoch-ops", "1500"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["nvcache-obp.txt", "nvcache-obp.json", "nvcache-obp-phases-hits.svg", "nvcache-obp-phases-inserts.svg"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("nvcache-obp.json")).unwrap()).unwrap();
    assert!(v["rows"].as_array().unwrap().is_empty(), "--parts phases runs no table1 rows");
    let runs = v["phases"]["runs"].as_array().unwrap();
    let modes: Vec<&str> = runs.iter().map(|r| r["obp"].as_str().unwrap()).collect();
    assert_eq!(modes, ["off", "cumulative", "window"]);
    for r in runs {
        let e = r["epochs"].as_array().unwrap();
        let shape: Vec<(u64, &str)> =
            e.iter().map(|e| (e["epoch"].as_u64().unwrap(), e["workload"].as_str().unwrap())).collect();
        assert_eq!(shape, [(0, "c"), (1, "c"), (2, "rw:100"), (3, "rw:100")], "{r}");
        assert!(e.iter().all(|e| e["ops"] == 1500), "{r}");
    }
    // Always-admit inserts in the read phase; only updates remove stale copies.
    let off = runs[0]["epochs"].as_array().unwrap();
    assert!(off[0]["cache"]["read_inserts"].as_u64().unwrap() > 0, "{}", off[0]);
    assert_eq!(off[0]["cache"]["removals"], 0);
    assert_eq!(v["phases"]["summaries"].as_array().unwrap().len(), 6);
    let text = std::fs::read_to_string(out.join("nvcache-obp.txt")).unwrap();
    assert!(text.contains("Phases: c then rw:100"), "{text}");
}

#[test]
fn bad_nvcache_options_are_refused() {
    for (args, what) in [
        (&["--obp", "sometimes"][..], "OBP mode"),
        (&["--obp-target", "0"][..], "--obp-target"),
        (&["--obp-window", "3"][..], "window"),
    ] {
        let mut all = vec!["bench", "ycsb", "--arch", "nvcache", "--dram", "256KiB", "--data", "1MiB", "--quiet"];
        all.extend_from_slice(args);
        let o = tierdb(&all);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
    let o = tierdb(&["nvcache-obp", "--obp", "off", "--quiet"]);
    assert!(!o.status.success() && stderr(&o).contains("--obp does not apply"), "{}", stderr(&o));
    for (args, what) in [
        (&["--parts", "table2"][..], "unknown part"),
        (&["--phase-epochs", "0"][..], "--phase-epochs"),
        (&["--phases", "c,nosuchworkload"][..], "nosuchworkload"),
    ] {
        let mut all = vec!["nvcache-obp", "--quiet", "--dram", "256KiB", "--nvm", "1MiB", "--data", "1MiB"];
        all.extend_from_slice(args);
        let o = tierdb(&all);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn nvcache_overhead_and_cost_parts_compare_against_ssd_bm() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = tiny_obp(
        dir.path(),
        &[
            "--parts",
            "overhead,cost",
            "--workloads",
            "c",
            "--overhead-dram",
            "2MiB",
            "--overhead-data",
            "3MiB",
            "--nvm",
            "4MiB",
            "--budget",
            "2MiB",
            "--cost-data",
            "5MiB",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["nvcache-overhead.svg", "nvcache-cost.svg"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("nvcache-obp.json")).unwrap()).unwrap();
    let overhead = v["overhead"].as_array().unwrap();
    let shape: Vec<&str> = overhead.iter().map(|r| r["admission"].as_str().unwrap()).collect();
    assert_eq!(shape, ["no-cache", "always-admit", "small-bypass", "small-bypass-obp"]);
    assert!(overhead[0]["degradation_percent"].is_null(), "the reference has no degradation");
    for r in &overhead[1..] {
        assert!(r["degradation_percent"].as_f64().is_some(), "{r}");
        assert!(r["runs"][0]["result"]["tiers"]["buffer"]["nvm_hits"].is_u64(), "{r}");
    }
    // Small-bypass admits nothing while the data fits the DRAM: no NVM writes.
    assert_eq!(overhead[2]["nvm_line_writes_per_op"].as_f64(), Some(0.0), "{}", overhead[2]);
    let cost = v["cost"].as_array().unwrap();
    assert_eq!(cost.len(), 5, "Table 4's five splits");
    assert_eq!(cost[0]["nvm_bytes"], 0);
    assert_eq!(cost[0]["relative_cost"].as_f64(), Some(1.0));
    assert_eq!(cost[0]["perf_per_cost"].as_f64(), Some(1.0), "all DRAM is the reference");
    let costs: Vec<f64> = cost.iter().map(|r| r["relative_cost"].as_f64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[1] < w[0]), "more NVM costs less: {costs:?}");
}

#[test]
fn nvcache_overhead_refuses_data_the_dram_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiny_obp(dir.path(), &["--parts", "overhead", "--overhead-dram", "1MiB", "--overhead-data", "3MiB"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("must fit the DRAM"), "{}", stderr(&o));
}
