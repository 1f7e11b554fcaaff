//! `tierdb restart-bench` end to end: a tiny run of the three architectures in `model`
//! mode, the errors for bad input, and the removal of engine files on Ctrl-C.

use std::path::Path;
use std::process::Output;

mod common;
use common::{interrupt_once_files_exist, stderr, tierdb_with};

/// `restart-bench` at tiny sizes with engine files and output under `dir`; `extra`
/// replaces a default option of the same name (`--flag value` or `--flag=value`) or adds
/// one.
fn restart(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    let defaults = [
        ("--mode", "model"),
        ("--data", "2MiB"),
        ("--dram", "8MiB"),
        ("--nvm", "16MiB"),
        ("--duration", "0.5"),
        ("--interval-ms", "50"),
        ("--page-size", "16KiB"),
        ("--ssd-dir", &d),
        ("--nvm-dir", &d),
        ("--out", &out),
    ];
    tierdb_with("restart-bench", &defaults, extra)
}

#[test]
fn four_architectures_restart_and_report_their_timelines() {
    let dir = tempfile::tempdir().unwrap();
    let o = restart(dir.path(), &["--seed", "7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("restart.json")).unwrap()).unwrap();
    assert_eq!(v["command"], "restart-bench");
    assert_eq!((v["interval_ms"].as_u64(), v["duration_secs"].as_f64()), (Some(50), Some(0.5)));
    assert_eq!((v["setup"]["mode"].as_str(), v["setup"]["seed"].as_u64()), (Some("model"), Some(7)));
    assert_eq!(v["setup"]["warmup_secs"], 0.0);
    assert_eq!(v["setup"]["workload"]["request_distribution"], "uniform", "{}", v["setup"]["workload"]);

    let series = v["series"].as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ssd-bm", "basic-nvm-bm", "three-tier", "nvm-direct"]);
    for l in series {
        let t = &l["timeline"];
        let ops = t["ops"].as_array().unwrap();
        assert!(!ops.is_empty(), "{}: empty timeline", l["name"]);
        assert_eq!(ops.len(), t["ops_per_sec"].as_array().unwrap().len());
        let sum: u64 = ops.iter().map(|n| n.as_u64().unwrap()).sum();
        assert!(sum > 0 && sum == l["ops"].as_u64().unwrap(), "{}: {sum} in buckets, {} ops", l["name"], l["ops"]);
        assert_eq!(l["not_found"], 0, "{}", l["name"]);
        let (open, ready, first) =
            (l["open_secs"].as_f64().unwrap(), l["ready_secs"].as_f64().unwrap(), l["first_op_secs"].as_f64().unwrap());
        assert!(
            0.0 < open && open <= ready && ready < first,
            "{}: open {open}, ready {ready}, first {first}",
            l["name"]
        );
        assert!(l["steady_ops_per_sec"].as_f64().unwrap() > 0.0, "{}", l["name"]);
        assert!(l["time_to_peak_secs"].as_f64().unwrap() <= t["end_secs"].as_f64().unwrap(), "{}", l["name"]);
        assert!(l["load"]["records"].as_u64().unwrap() > 0, "{}", l["name"]);
    }
    let (ssd, basic, three, direct) = (&series[0], &series[1], &series[2], &series[3]);
    // ssd-bm: cold DRAM, every page from SSD; no NVM.
    assert!(ssd["ssd_reads"].as_u64().unwrap() > 0, "{ssd}");
    assert!(ssd["nvm_restart"].is_null(), "{ssd}");
    // The basic NVM BM: no SSD, no techniques, pages back from NVM.
    assert_eq!(basic["arch"], "basic-nvm-bm");
    assert_eq!(basic["techniques"], serde_json::json!({"cl_grained": false, "mini_pages": false, "swizzling": false}));
    // Both NVM architectures rebuilt their page table from NVM and read nothing from SSD.
    for l in [basic, three] {
        let info = &l["nvm_restart"];
        assert!(info["pages_reused"].as_u64().unwrap() > 0, "{info}");
        assert!(info["formatted_because"].is_null(), "{info}");
        assert!(info["scan_secs"].as_f64().unwrap() > 0.0, "{info}");
        assert_eq!(l["ssd_reads"], 0, "{}", l["name"]);
        assert!(l["nvm_hits"].as_u64().unwrap() > 0, "{}", l["name"]);
    }
    assert_eq!(three["techniques"]["mini_pages"], true);
    // nvm-direct: the pages never left NVM; reopening read the allocation map.
    assert_eq!(direct["arch"], "nvm-direct");
    assert_eq!(direct["ssd_reads"], 0, "{direct}");
    let info = &direct["nvm_restart"];
    assert!(info["pages_reused"].as_u64().unwrap() > 0, "{info}");

    let text = std::fs::read_to_string(out.join("restart.txt")).unwrap();
    for needle in ["Figure 17", "basic-nvm-bm", "nvm-direct", "mode model"] {
        assert!(text.contains(needle), "restart.txt lacks {needle:?}:\n{text}");
    }
    let svg = std::fs::read_to_string(out.join("restart.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    for needle in ["ssd-bm", "basic-nvm-bm", "three-tier", "nvm-direct"] {
        assert!(svg.contains(needle), "restart.svg lacks {needle}");
    }
    // No engine file left: only the output directory remains.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["out"], "files left behind");
}

#[test]
fn bad_input_is_a_clear_error_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--interval-ms", "0"], "--interval-ms 0 is outside"),
        (&["--interval-ms", "600000"], "--interval-ms 600000 is outside"),
        (&["--duration", "0"], "must be above 0"),
        (&["--interval-ms", "1000"], "longer than --duration 0.5 s"),
        (&["--duration=-1"], "must be above 0"),
        (&["--duration", "3600", "--interval-ms", "1"], "buckets"),
        (&["--warmup", "1"], "no warm-up"),
        (&["--techniques", "all"], "sets the techniques itself"),
        (&["--archs", ""], "--archs is empty"),
        (&["--archs", "fptree"], "unknown architecture \"fptree\""),
        (&["--archs", "ssd-bm,ssd-bm"], "listed twice"),
        (&["--data", "32MiB"], "larger than --nvm"),
        (&["--set", "updateproportion=0.5"], "lookups only"),
        (&["--threads", "0"], "--threads 0"),
    ];
    for (args, want) in cases {
        let o = restart(dir.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    // Not a number: clap's usage error.
    assert_eq!(restart(dir.path(), &["--interval-ms", "fast"]).status.code(), Some(2));
    // Nothing ran: no output directory, no engine file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Without basic-nvm-bm in --archs, data larger than NVM is allowed (and not run here).
}

#[test]
fn an_interrupted_restart_bench_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let out_dir = dir.path().join("out").display().to_string();
    let args = ["restart-bench", "--archs", "three-tier", "--mode", "off", "--duration", "60", "--quiet"];
    let more =
        ["--data", "2MiB", "--dram", "8MiB", "--nvm", "16MiB", "--ssd-dir", &d, "--nvm-dir", &d, "--out", &out_dir];
    // The engine's two files beside the output directory; then interrupt.
    let out = interrupt_once_files_exist(&[&args[..], &more[..]].concat(), dir.path(), 3, 500);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["out"], "files left behind");
}
