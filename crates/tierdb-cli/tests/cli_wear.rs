//! `tierdb wear` end to end: a tiny run of both architectures, and bad input.

use std::path::Path;
use std::process::Output;

mod common;
use common::{stderr, tierdb_with};

/// `wear` at tiny sizes with files under `dir`; `extra` replaces a default option of
/// the same name or adds one.
fn wear(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    let defaults = [
        ("--dram", "2MiB"),
        ("--nvm", "16MiB"),
        ("--data", "8MiB"),
        ("--ops", "3000"),
        ("--ssd-dir", &d),
        ("--nvm-dir", &d),
        ("--out", &out),
    ];
    tierdb_with("wear", &defaults, extra)
}

#[test]
fn both_architectures_count_their_line_writes() {
    check_both_architectures("nvm");
}

#[test]
fn both_architectures_count_their_line_writes_without_a_log() {
    check_both_architectures("none");
}

fn check_both_architectures(log: &str) {
    let dir = tempfile::tempdir().unwrap();
    let o = wear(dir.path(), &["--seed", "3", "--log", log]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("wear.json")).unwrap()).unwrap();
    assert_eq!(v["command"], "wear");
    assert_eq!(v["setup"]["mode"], "off");
    assert_eq!(v["setup"]["workload"]["update_proportion"], 1.0, "{}", v["setup"]["workload"]);
    let series = v["series"].as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|s| s["arch"].as_str().unwrap()).collect();
    assert_eq!(names, ["three-tier", "nvm-direct"]);
    for s in series {
        let name = s["arch"].as_str().unwrap();
        assert_eq!(s["ops"], 3000, "{name}: exactly --ops updates");
        let (total, written, max) = (
            s["line_writes_total"].as_u64().unwrap(),
            s["lines_written"].as_u64().unwrap(),
            s["line_writes_max"].as_u64().unwrap(),
        );
        assert!(total >= written && written > 0 && max >= 1, "{name}: {total} {written} {max}");
        let (meta, meta_max, page_max) = (
            s["metadata_line_writes"].as_u64().unwrap(),
            s["metadata_line_writes_max"].as_u64().unwrap(),
            s["page_line_writes_max"].as_u64().unwrap(),
        );
        // With the log in NVM its ring's lines count too, and the log wrote some.
        let (log_total, log_max) = (s["log_line_writes"].as_u64(), s["log_line_writes_max"].as_u64());
        assert_eq!(log_total.is_some(), log == "nvm", "{name}: {log_total:?}");
        assert!(log_total.is_none_or(|l| l > 0 && l + meta <= total), "{name}: {log_total:?} {meta} {total}");
        let all_max = meta_max.max(page_max).max(log_max.unwrap_or(0));
        assert!(meta <= total && all_max == max, "{name}: {meta} {meta_max} {page_max} {log_max:?} {max}");
        // The buckets account for every line, the curve starts at the maximum and falls.
        let buckets: u64 = s["log2_buckets"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum();
        assert_eq!(buckets, s["lines"].as_u64().unwrap(), "{name}");
        let curve: Vec<(u64, u64)> =
            s["sorted"].as_array().unwrap().iter().map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap())).collect();
        assert_eq!(curve[0], (1, max), "{name}");
        assert!(curve.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1), "{name}: {curve:?}");
        assert_eq!(curve.last().unwrap().0, written, "{name}: the curve ends at the last written line");
    }
    // Every update of nvm-direct writes its value's lines in place, at least one each.
    assert!(series[1]["line_writes_total"].as_u64().unwrap() >= 3000, "{}", series[1]);
    let text = std::fs::read_to_string(out.join("wear.txt")).unwrap();
    for needle in ["Figure 16", "nvm-direct / three-tier", "3000 updates"] {
        assert!(text.contains(needle), "wear.txt lacks {needle:?}:\n{text}");
    }
    let svg = std::fs::read_to_string(out.join("wear.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("nvm-direct") && svg.contains("three-tier"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["out"], "files left behind");
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--ops", "0"], "--ops 0 is outside"),
        (&["--archs", "ssd-bm"], "has no NVM"),
        (&["--archs", "three-tier,three-tier"], "listed twice"),
        (&["--archs", "fptree"], "unknown architecture"),
        (&["--data", "32MiB"], "larger than --nvm"),
        (&["--duration", "2"], "do not apply"),
        (&["--techniques", "all"], "its own techniques"),
        (&["--set", "readproportion=0.5"], "updates only"),
    ];
    for (args, want) in cases {
        let o = wear(dir.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
}
