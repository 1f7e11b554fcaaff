//! `tierdb nvsql-bench` end to end at the tiny scale (not spec-conformant): every part
//! writes its table, JSON and plots, the configurations cost the same, and bad options
//! are refused naming the option.

mod common;
use common::{stderr, tierdb};

#[test]
fn nvsql_bench_writes_every_part_and_the_configurations_cost_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("files");
    std::fs::create_dir_all(&d).unwrap();
    let d = d.display().to_string();
    let out_dir = dir.path().join("out");
    let o = out_dir.display().to_string();
    let out = tierdb(&[
        "nvsql-bench",
        "--tiny",
        "--nvm-units",
        "1",
        "--mode",
        "off",
        "--warmup",
        "0.1",
        "--duration",
        "0.6",
        "--checkpoint-interval",
        "0.2",
        "--write-set-interval",
        "0.2",
        "--ycsb-data",
        "4MiB",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--out",
        &o,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let json = |name: &str| -> serde_json::Value { serde_json::from_str(&read(name)).unwrap() };
    for stem in ["nvsql-tpcc", "nvsql-write-set", "nvsql-recovery", "nvsql-ycsb", "nvsql-table4", "nvsql-ablation"] {
        let md = read(&format!("{stem}.md"));
        assert!(md.contains("mode off") && md.contains("nvdimm-n") && md.contains("seed 42"), "{stem}: {md}");
        assert!(md.contains("| 11:0 ssd-bm |") || stem == "nvsql-table4", "{stem}: {md}");
        let r = json(&format!("{stem}.json"));
        assert_eq!(r["setup"]["threads"], 2, "{stem}");
    }
    for svg in [
        "nvsql-tpcc-throughput.svg",
        "nvsql-tpcc-writes.svg",
        "nvsql-write-set.svg",
        "nvsql-recovery.svg",
        "nvsql-ycsb-throughput.svg",
        "nvsql-ycsb-writes.svg",
        "nvsql-table4.svg",
        "nvsql-ablation.svg",
    ] {
        assert!(read(svg).contains("<svg"), "{svg}");
    }
    let t = json("nvsql-tpcc.json");
    let points = t["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let labels: Vec<&str> = points.iter().map(|p| p["config"]["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["11:0", "8:1"]);
    let cost = |i: usize| points[i]["config"]["cost_usd"].as_f64().unwrap();
    assert!((cost(0) - cost(1)).abs() / cost(0) < 0.01, "equal cost: {} vs {}", cost(0), cost(1));
    for p in points {
        let m = &p["median"];
        assert!(m["throughput"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(m["recovery_consistent"], 1.0, "{p}");
        let ws = &p["write_set"];
        assert!(!ws["written"].as_array().unwrap().is_empty(), "{p}");
    }
    assert_eq!(points[1]["config"]["arch"], "nvsql");
    // nvsql's NVM double-write area is NVM bought: inside the equal cost, beside the pool.
    assert!(points[1]["config"]["nvm_double_write_slots"].as_u64().unwrap() >= 4, "{}", points[1]);
    assert_eq!(points[0]["config"]["nvm_double_write_bytes"], 0);
    assert!(read("nvsql-tpcc.md").contains("(double write, "), "{}", read("nvsql-tpcc.md"));
    // The SSD's data bytes: DRAM-only's include its double-write file's copies; nvsql's
    // double-write area is in NVM and puts nothing on SSD.
    let m0 = &points[0]["median"];
    let kib = |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap();
    assert!(kib(m0, "double_write_pages_per_unit") > 0.0, "{m0}");
    assert!(kib(m0, "ssd_data_kib_per_unit") > kib(m0, "ssd_writes_per_unit") * 8.0, "{m0}");
    assert_eq!(kib(&points[1]["median"], "double_write_pages_per_unit"), 0.0);
    assert!(points[1]["median"]["nvm_hit_ratio"].as_f64().unwrap() > 0.0, "nvsql served fixes from NVM");
    let t4 = json("nvsql-table4.json");
    let policies: Vec<&str> = t4["points"].as_array().unwrap().iter().map(|p| p["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["nvsql:lru=update-count", "nvsql:lru=midpoint", "nvsql:lru=lru"]);
    // Table 4's columns: write amount by sublist and updates per page; plain LRU has no
    // new sublist.
    for p in t4["points"].as_array().unwrap() {
        let share = p["median"]["write_amount_new"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{p}");
        assert!(p["median"]["updates_per_page_old"].as_f64().unwrap() >= 0.0, "{p}");
    }
    let lru = &t4["points"][2]["median"];
    assert_eq!((lru["write_amount_new"].as_f64(), lru["updates_per_page_new"].as_f64()), (Some(0.0), Some(0.0)));
    // Placement (NV-SQL §5.4): DRAM-only's double write on SSD and log buffer in DRAM,
    // nvsql's both in NVM.
    let place = |p: &serde_json::Value| {
        (
            p["config"]["double_write"].as_str().unwrap().to_string(),
            p["config"]["log_buffer"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(place(&points[0]), ("ssd".into(), "dram".into()));
    assert_eq!(place(&points[1]), ("nvm".into(), "nvm".into()));
    assert_eq!(points[1]["median"]["log_waits_per_unit"], 0.0, "an NVM log ring forces nothing");
    // Figure 6: four steps on 8:1, the first and last the tpcc part's runs.
    let ab = json("nvsql-ablation.json");
    let steps = ab["points"].as_array().unwrap();
    let places: Vec<(String, String)> = steps.iter().map(place).collect();
    let want = [("ssd", "dram"), ("ssd", "dram"), ("nvm", "dram"), ("nvm", "nvm")].map(|(a, b)| (a.into(), b.into()));
    assert_eq!(places, want);
    assert_eq!(steps[0]["median"], points[0]["median"]);
    assert_eq!(steps[3]["median"], points[1]["median"]);
    // Caching only: the area's NVM in the pool, its copies on SSD.
    assert_eq!(steps[1]["config"]["arch"], "nvsql");
    assert_eq!(steps[1]["config"]["nvm_double_write_slots"], 0);
    let pool = |i: usize| steps[i]["config"]["nvm_bytes"].as_u64().unwrap();
    assert!(pool(1) > pool(2), "caching only: {} vs {}", pool(1), pool(2));
    assert!(kib(&steps[1]["median"], "double_write_pages_per_unit") > 0.0, "{}", steps[1]);
    assert_eq!(kib(&steps[2]["median"], "double_write_pages_per_unit"), 0.0, "{}", steps[2]);
    assert!(
        read("nvsql-ablation.md").contains("| caching only | 8:1 nvsql | ssd · dram |"),
        "{}",
        read("nvsql-ablation.md")
    );
    // Nothing is left behind.
    assert_eq!(std::fs::read_dir(dir.path().join("files")).unwrap().count(), 0);
}

#[test]
fn bad_nvsql_bench_options_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().display().to_string();
    for (args, says) in [
        (vec!["--parts", "tpcc,fig9"], "--parts \"fig9\""),
        (vec!["--nvm-units", "4"], "--nvm-units 4"),
        (vec!["--runs", "0"], "--runs 0"),
        (vec!["--checkpoint-interval=-1"], "--checkpoint-interval -1"),
    ] {
        let mut a = vec!["nvsql-bench", "--tiny", "--quiet", "--out", &o];
        a.extend(args);
        let out = tierdb(&a);
        assert!(!out.status.success(), "{a:?}");
        assert!(stderr(&out).contains(says), "{a:?}: {}", stderr(&out));
    }
}
