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
    for tuner in ["anneal", "coord", "funnel"] {
        let dir = tempfile::tempdir().unwrap();
        let o = tune(dir.path(), &["--tuner", tuner, "--workload", "rw:50", "--seed", "5"]);
        assert!(o.status.success(), "{tuner}: {}", stderr(&o));
        let out = dir.path().join("out");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("tune.json")).unwrap()).unwrap();
        assert_eq!(v["command"], "tune");
        assert_eq!(v["tuner"], tuner);
        assert_eq!(v["setup"]["mode"], "model");
        assert_eq!(v["setup"]["model_clock"], "cpu", "tune charges a thread's CPU time by default");
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
        // The funnel measures its start and screen for a quarter of an epoch.
        let first = if tuner == "funnel" { 500 } else { 2000 };
        assert!(v["epochs"][0]["ops"].as_u64().unwrap() >= first, "{tuner}");
        assert_eq!(t[0]["ops"], v["epochs"][0]["ops"], "{tuner}");
        if tuner == "funnel" {
            assert!(t[1]["ops"].as_u64().unwrap() < 2000, "the screen runs short epochs");
        }
        assert!(out.join("tune.svg").exists() && out.join("tune.txt").exists());
        // No engine file is left behind.
        let left: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.path() != out).collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// `spitfire --parts tuners` at a tiny size: every run of every seed is there, and the
/// chosen policies are judged by the grid's measurement or measured alike.
#[test]
fn spitfire_tuners_judges_the_chosen_policies_over_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let out = dir.path().join("out");
    let o = tierdb_with(
        "spitfire",
        &[],
        &[
            "--parts",
            "tuners",
            "--workloads",
            "ro",
            "--dram",
            "1MiB",
            "--nvm",
            "4MiB",
            "--data",
            "8MiB",
            "--epoch-ops",
            "500",
            "--grid",
            "1",
            "--grid-measure-epochs",
            "1",
            "--settle-epochs",
            "1",
            "--measure-epochs",
            "1",
            "--tuners",
            "anneal,funnel",
            "--tuner-seeds",
            "2",
            "--epochs-max",
            "4",
            "--ssd-dir",
            &d,
            "--nvm-dir",
            &d,
            "--out",
            &out.display().to_string(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("spitfire.json")).unwrap()).unwrap();
    let c = &v["tuners"][0];
    // A one-point grid (eager): every other policy chosen is measured to be judged.
    assert_eq!(c["grid"].as_array().unwrap().len(), 1);
    let grid_best = c["grid_best_ops_per_sec"].as_f64().unwrap();
    let runs = c["runs"].as_array().unwrap();
    let seeds: Vec<(String, u64)> =
        runs.iter().map(|r| (r["tuner"].as_str().unwrap().to_string(), r["seed"].as_u64().unwrap())).collect();
    assert_eq!(
        seeds,
        [("anneal", 42), ("anneal", 43), ("funnel", 42), ("funnel", 43)].map(|(t, s)| (t.to_string(), s)),
    );
    for r in runs {
        assert_eq!(r["trajectory"].as_array().unwrap().len(), 4);
        let f = r["final_vs_best"].as_f64().unwrap();
        assert!(f > 0.0 && f.is_finite(), "{f}");
        let elapsed = r["epochs_elapsed"].as_f64().unwrap();
        assert!(elapsed > 0.0 && elapsed <= 4.0, "{elapsed}");
        if let Some(e) = r["epochs_to_within_10pct"].as_f64() {
            assert!(e > 0.0 && e <= elapsed, "{e}");
        }
    }
    // The funnel screens after its start, in quarter epochs.
    assert_eq!(runs[2]["trajectory"][1]["action"], "screened");
    assert_eq!(runs[2]["epochs_elapsed"], 1.0, "four quarter epochs");
    let summaries = c["summaries"].as_array().unwrap();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[1]["runs"], 2);
    assert!(grid_best > 0.0);
    let judged = c["judged"].as_array().unwrap();
    for j in judged {
        assert!(j["ops_per_sec"].as_f64().unwrap() > 0.0, "{j}");
    }
    // Every final choice off the grid was measured to be judged.
    for r in runs {
        let k = &r["best"]["knobs"];
        assert!(
            k["dr"] == 1.0 && k["nr"] == 1.0 && k["dw"] == 1.0 && k["nw"] == 1.0
                || judged.iter().any(|j| j["knobs"] == *k),
            "{k}"
        );
    }
    let text = std::fs::read_to_string(out.join("spitfire.txt")).unwrap();
    assert!(text.contains("Medians over the seeds") && text.contains("funnel"), "{text}");
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
        (&["--tuner-seeds", "0"][..], "--tuner-seeds 0"),
    ] {
        let o = tierdb_with("spitfire", &[], extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
    }
    // Nothing was created.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
