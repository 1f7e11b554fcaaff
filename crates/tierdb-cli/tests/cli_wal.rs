//! `tierdb bench wal` end to end: both log buffers in model mode, the NVM commit-latency
//! target, and bad options.

mod common;
use common::{json, tierdb};

#[test]
fn both_log_buffers_commit_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let base = ["bench", "wal", "--mode", "model", "--duration", "0.3", "--json", "--dir", d.as_str()];
    for (buffer, durability) in [("dram", "sync"), ("dram", "group"), ("nvm", "sync")] {
        let mut args = base.to_vec();
        args.extend(["--buffer", buffer, "--durability", durability, "--threads", "2"]);
        let r = json(&tierdb(&args));
        assert!(r["commits"].as_u64().unwrap() > 10, "{buffer} {durability}: {r}");
        assert_eq!(r["wal"]["records"].as_u64().unwrap(), 2 * r["commits"].as_u64().unwrap(), "{r}");
        assert_eq!(r["mode"], "model");
        if buffer == "nvm" {
            // The target: commit p50 <= 5 µs with the log buffer in NVM (optane, model).
            let p50 = r["latency_us"]["p50"].as_f64().unwrap();
            assert!(p50 <= 5.0, "NVM log commit p50 {p50} µs");
        }
        if (buffer, durability) == ("dram", "sync") {
            assert!(r["wal"]["syncs"].as_u64().unwrap() > 0, "{r}");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the log's files are removed");
}

#[test]
fn bad_options_are_refused() {
    for args in [
        &["bench", "wal", "--buffer", "tape"][..],
        &["bench", "wal", "--durability", "maybe"],
        &["bench", "wal", "--durability", "none"],
        &["bench", "wal", "--threads", "0"],
        &["bench", "wal", "--duration", "0"],
    ] {
        let o = tierdb(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(!o.stderr.is_empty(), "{args:?}: no message");
    }
}
