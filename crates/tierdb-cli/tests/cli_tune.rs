//! `tierdb tune` and `tierdb spitfire` end to end: tiny runs, and bad input.

use std::path::Path;
use std::process::Output;

mod common;
use common::{stderr, tierdb_with};

/// `tune` at tiny sizes with files under `dir`; `extra` replaces a default option of
/// the same name or adds one.
fn tune(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    let defaults = [
        ("--dram", "1MiB"),
        ("--nvm", "4MiB"),
        ("--data", "8MiB"),
        ("--epoch-ops", "2000"),
        ("--epochs-max", "6"),
        ("--warmup-epochs", "1"),
        ("--ssd-dir", &d),
        ("--nvm-dir", &d),
        ("--out", &out),
    ];
    tierdb_with("tune", &defaults, extra)
}

#[test]
fn tune_runs_epochs_and_writes_its_report() {
    for tuner in ["anneal", "coord"] {
        let dir = tempfile::tempdir().unwrap();
        let o = tune(dir.path(), &["--tuner", tuner, "--workload", "rw:50", "--seed", "5"]);
        assert!(o.status.success(), "{tuner}: {}", stderr(&o));
        let out = dir.path().join("out");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("tune.json")).unwrap()).unwrap();
        assert_eq!(v["command"], "tune");
        assert_eq!(v["tuner"], tuner);
        assert_eq!(v["setup"]["mode"], "model");
        let t = v["trajectory"].as_array().unwrap();
        assert_eq!(t.len(), 6, "{tuner}: --epochs-max epochs");
        assert_eq!(t[0]["action"], "start");
        assert_eq!(t[0]["knobs"]["dr"], 1.0, "{tuner}: starts eager");
        for (i, e) in t.iter().enumerate() {
            assert_eq!(e["epoch"], i as u64);
            assert!(e["throughput_ops_per_sec"].as_f64().unwrap() > 0.0, "{tuner}: {e}");
            for k in ["dr", "dw", "nr", "nw"] {
                let x = e["knobs"][k].as_f64().unwrap();
                assert!((0.001..=1.0).contains(&x), "{tuner}: {k} = {x}");
            }
        }
        assert_eq!(v["epochs"].as_array().unwrap().len(), 6);
        assert!(v["epochs"][0]["ops"].as_u64().unwrap() >= 2000);
        assert!(out.join("tune.svg").exists() && out.join("tune.txt").exists());
        // No engine file is left behind.
        let left: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.path() != out).collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn a_policy_without_knobs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for policy in ["hymem", "eager"] {
        let o = tune(dir.path(), &["--policy", policy]);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains(&format!("--policy {policy}")) && e.contains("spitfire"), "{e}");
    }
    let o = tierdb_with("spitfire", &[], &["--policy", "hymem"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("spitfire"), "{}", stderr(&o));
}

#[test]
fn bad_options_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, needle) in [
        (&["--tuner", "grid"][..], "unknown tuner \"grid\""),
        (&["--arch", "ssd-bm"][..], "--arch ssd-bm"),
        (&["--epoch-ops", "0"][..], "--epoch-ops 0"),
        (&["--alpha", "1.5"][..], "alpha 1.5"),
        (&["--lambda=-1"][..], "lambda -1"),
        (&["--start", "dr=2"][..], "dr = 2"),
        (&["--duration", "3"][..], "--duration"),
    ] {
        let o = tune(dir.path(), extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
    }
    for (extra, needle) in [
        (&["--parts", "sweep,nope"][..], "unknown part \"nope\""),
        (&["--grid", "1,2"][..], "--grid"),
        (&["--tuners", "x"][..], "unknown tuner \"x\""),
    ] {
        let o = tierdb_with("spitfire", &[], extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
    }
    // Nothing was created.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
