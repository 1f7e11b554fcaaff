//! `tierdb drilldown` end to end: a tiny run of all four parts, the errors for bad
//! input, and the removal of engine files on Ctrl-C.

use std::path::Path;
use std::process::Output;

mod common;
use common::{interrupt_once_files_exist, stderr, tierdb_with};

/// `drilldown` at tiny sizes with engine files and output under `dir`; `extra` replaces
/// a default option of the same name or adds one.
fn drilldown(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    let defaults = [
        ("--dram", "1MiB"),
        ("--nvm", "4MiB"),
        ("--data", "3MiB"),
        ("--warmup", "0"),
        ("--duration", "0.1"),
        ("--runs", "1"),
        ("--latencies", "165,600"),
        ("--dram-percent", "25,100"),
        ("--mode", "off"),
        ("--ssd-dir", &d),
        ("--nvm-dir", &d),
        ("--out", &out),
    ];
    tierdb_with("drilldown", &defaults, extra)
}

#[test]
fn every_part_reports_its_rows_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let o = drilldown(dir.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("drilldown.json")).unwrap()).unwrap();
    assert_eq!(v["parts"], serde_json::json!(["fig10", "scan", "latency", "dram"]));
    assert_eq!((v["runs"].as_u64(), v["data_bytes"].as_u64()), (Some(1), Some(3 << 20)));
    assert_eq!(v["setup"]["mode"], "off");
    assert!(v["machine"]["logical_cpus"].as_u64().unwrap() > 0);
    let rows = |part: &str| v[part]["rows"].as_array().unwrap_or_else(|| panic!("no rows in {part}")).clone();

    // Figure 10: the four steps in order, basic relative to itself.
    let fig10 = rows("fig10");
    let steps: Vec<&str> = fig10.iter().map(|r| r["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["basic", "+cl-grained", "+mini-pages", "+swizzling"]);
    assert_eq!(fig10[0]["relative_to_basic"], 1.0);
    for r in &fig10 {
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["runs"]["per_sec_runs"].as_array().unwrap().len(), 1);
        assert!(r["nvm_lines_loaded"].is_u64() && r["nvm_lines_per_lookup"].is_f64(), "{r}");
    }
    assert_eq!(v["fig10"]["targets"].as_array().unwrap().len(), 3);

    // Scans: short scans of exactly 100 records and full scans of every record.
    let scan = rows("scan");
    assert_eq!(scan.len(), 4);
    for r in &scan {
        for kind in ["short", "full"] {
            assert!(r[format!("{kind}_scans_per_sec")].as_f64().unwrap() > 0.0, "{kind}: {r}");
        }
        let full = &r["full"]["reports"][0]["result"];
        assert!(full["ops"].as_u64().unwrap() >= 1, "{full}");
        assert_eq!(full["latency"][0]["kind"], "FULL-SCAN");
    }
    let short_workload = &v["scan"]["workload"];
    assert_eq!(short_workload["scan_length_min"], 100, "{short_workload}");
    assert_eq!(short_workload["scan_length_max"], 100, "{short_workload}");

    // The reference line: nvm-direct on the same lookups.
    let d = &v["fig10"]["nvm_direct"];
    assert_eq!(d["arch"], "nvm-direct");
    assert!(d["ops_per_sec"].as_f64().unwrap() > 0.0 && d["relative_to_basic"].as_f64().unwrap() > 0.0, "{d}");

    // Latency: two latencies × three architectures, profiles named after their latency.
    let latency = rows("latency");
    assert_eq!(latency.len(), 6);
    let profiles: Vec<&str> = latency.iter().map(|r| r["nvm_profile"].as_str().unwrap()).collect();
    assert_eq!(profiles, [&["optane-dcpmm@165ns"; 3][..], &["optane-dcpmm@600ns"; 3][..]].concat());
    assert_eq!(latency[3]["write_latency_ns"], 600.0, "write latency raised to the read latency");
    let ran = &latency[5]["runs"]["reports"][0]["setup"]["nvm_profile"];
    assert_eq!((ran["name"].as_str(), ran["read_latency_ns"].as_f64()), (Some("optane-dcpmm@600ns"), Some(600.0)));

    // DRAM: two percentages × three architectures.
    let dram = rows("dram");
    assert_eq!(dram.len(), 6);
    assert_eq!(dram[0]["dram_bytes"], 1 << 20);
    assert_eq!(dram[5]["dram_bytes"], 4 << 20);
    let archs: Vec<&str> = dram.iter().map(|r| r["arch"].as_str().unwrap()).collect();
    assert_eq!(
        archs,
        [&["three-tier", "basic-nvm-bm", "nvm-direct"][..], &["three-tier", "basic-nvm-bm", "nvm-direct"]].concat()
    );

    let text = std::fs::read_to_string(out.join("drilldown.txt")).unwrap();
    for needle in
        ["Figure 10", "§5.4.2", "Figure 12", "Figure 13", "mode off", "reference: nvm-direct", "CPU-cache model"]
    {
        assert!(text.contains(needle), "drilldown.txt lacks {needle:?}:\n{text}");
    }
    for (name, needles) in [
        ("drilldown-fig10.svg", &["+cl-grained", "+swizzling"][..]),
        ("drilldown-fig10.svg", &["nvm-direct throughput"][..]),
        ("drilldown-latency.svg", &["three-tier", "basic-nvm-bm", "nvm-direct"][..]),
        ("drilldown-dram.svg", &["three-tier", "basic-nvm-bm", "nvm-direct"][..]),
    ] {
        let svg = std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(svg.starts_with("<svg"), "{name}");
        for n in needles {
            assert!(svg.contains(n), "{name} lacks {n}");
        }
    }
    // No engine file left: only the output directory remains.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["out"], "files left behind");
}

#[test]
fn size_and_rw_parts_scale_the_sizes_and_mix_the_updates() {
    let dir = tempfile::tempdir().unwrap();
    let o = drilldown(dir.path(), &["--parts", "rw,size", "--size-factors", "1,2", "--update-percent", "0,100"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("drilldown.json")).unwrap()).unwrap();
    assert_eq!(v["parts"], serde_json::json!(["size", "rw"]));
    let size = v["size"]["rows"].as_array().unwrap();
    assert_eq!(size.len(), 6, "two factors × three architectures");
    let archs: Vec<&str> = size[..3].iter().map(|r| r["arch"].as_str().unwrap()).collect();
    assert_eq!(archs, ["three-tier", "basic-nvm-bm", "nvm-direct"]);
    for (r, f) in size.iter().zip([1u64, 1, 1, 2, 2, 2]) {
        let sizes = (r["dram_bytes"].as_u64(), r["nvm_bytes"].as_u64(), r["data_bytes"].as_u64());
        assert_eq!(sizes, (Some(f << 20), Some(f * (4 << 20)), Some(f * (3 << 20))), "{r}");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    }
    let rw = v["rw"]["rows"].as_array().unwrap();
    assert_eq!(rw.len(), 6, "two update shares × three architectures");
    for (r, pct) in rw.iter().zip([0.0, 0.0, 0.0, 100.0, 100.0, 100.0]) {
        assert_eq!(r["x"], pct, "{r}");
        let proportion = &r["runs"]["reports"][0]["setup"]["workload"]["update_proportion"];
        assert_eq!(proportion.as_f64(), Some(pct / 100.0), "{r}");
    }
    let text = std::fs::read_to_string(out.join("drilldown.txt")).unwrap();
    for needle in ["Figure 14", "Figure 15", "no log"] {
        assert!(text.contains(needle), "drilldown.txt lacks {needle:?}:\n{text}");
    }
    for svg in ["drilldown-size.svg", "drilldown-rw.svg"] {
        let t = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(t.contains("nvm-direct") && t.contains("three-tier"), "{svg}");
    }
}

#[test]
fn bad_input_is_a_clear_error_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--parts", "fig11"], "unknown part \"fig11\""),
        (&["--parts", ""], "--parts is empty"),
        (&["--parts", "scan,scan"], "listed twice"),
        (&["--latencies", ""], "empty entry"),
        (&["--latencies", "600,165"], "increasing"),
        (&["--latencies", "165,165"], "increasing"),
        (&["--latencies", "0"], "outside"),
        (&["--latencies", "1e9"], "outside"),
        (&["--latencies", "fast"], "not a number"),
        (&["--dram-percent", "0"], "above 0"),
        (&["--dram-percent", "50,150"], "outside"),
        (&["--dram-percent", "50,10"], "increasing"),
        (&["--data", "5MiB"], "larger than --nvm"),
        (&["--runs", "0"], "--runs"),
        (&["--techniques", "all"], "sets the techniques itself"),
        (&["--size-factors", "2,1"], "increasing"),
        (&["--size-factors", "0"], "outside"),
        (&["--update-percent", "12.5"], "not a whole number"),
        (&["--update-percent", "0,101"], "outside"),
    ];
    for (args, want) in cases {
        let o = drilldown(dir.path(), args);
        assert!(!o.status.success(), "{args:?} should fail");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    // Nothing ran: no output directory, no engine file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_interrupted_drilldown_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let out_dir = dir.path().join("out").display().to_string();
    let args = [
        "drilldown",
        "--parts",
        "fig10",
        "--dram",
        "1MiB",
        "--nvm",
        "4MiB",
        "--data",
        "3MiB",
        "--mode",
        "off",
        "--warmup",
        "60",
        "--quiet",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        "--out",
        &out_dir,
    ];
    // The engine's two files beside the output directory; then interrupt.
    let out = interrupt_once_files_exist(&args, dir.path(), 3, 200);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["out"], "files left behind");
}
