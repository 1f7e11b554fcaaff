//! `tierdb check-isolation` end to end: bad options are refused with a message, a
//! short run under read uncommitted reports the dirty reads it lets through and exits
//! non-zero, and judged at its own level it passes; no files are left behind.

mod common;
use common::{json, stderr, tierdb};

#[test]
fn bad_options_are_refused_with_a_message() {
    for (args, needle) in [
        (&["check-isolation", "--keys", "0"][..], "keys 0 is outside"),
        (&["check-isolation", "--threads", "0"], "threads 0 is outside"),
        (&["check-isolation", "--accounts", "1"], "accounts 1 is outside"),
        (&["check-isolation", "--duration", "soon"], "expected e.g. 30s"),
        (&["check-isolation", "--duration", "0s"], "is outside"),
        (&["check-isolation", "--isolation", "serializable"], "expected snapshot, read-committed or read-uncommitted"),
        (&["check-isolation", "--durability", "none"], "durability none"),
        (&["check-isolation", "--arch", "tape"], "tape"),
    ] {
        let o = tierdb(args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(e.contains(needle), "{args:?}: {needle:?} missing in: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(o.stdout.is_empty(), "{args:?} printed a report");
    }
}

#[test]
fn read_uncommitted_fails_with_dirty_reads_and_passes_judged_at_its_own_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let base = ["check-isolation", "--arch", "main-memory", "--isolation", "read-uncommitted", "--ssd-dir", &d];
    let small = ["--threads", "6", "--keys", "3", "--accounts", "3"];
    // Judged as read committed (the default for read uncommitted): dirty reads.
    let mut found = false;
    for seed in ["1", "2", "3"] {
        let args = [&base[..], &small, &["--duration", "1s", "--seed", seed]].concat();
        let o = tierdb(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("isolation read-uncommitted, judged as read-committed"), "{out}");
        assert!(out.contains("main-memory") && out.contains(&format!("seed {seed}")), "{out}");
        if !o.status.success() {
            assert_eq!(o.status.code(), Some(1));
            assert!(stderr(&o).contains("that read-committed forbids"), "{}", stderr(&o));
            assert!(out.contains("dirty read:") && out.contains("FAILED:"), "{out}");
            found = true;
            break;
        }
    }
    assert!(found, "three 1-second runs under read uncommitted found no dirty read");
    // Judged as read uncommitted, which forbids only dirty writes: it passes, and
    // --json prints the report alone.
    let args = [&base[..], &small, &["--duration", "300ms", "--judge", "read-uncommitted", "--json"]].concat();
    let r = json(&tierdb(&args));
    assert_eq!(r["setup"]["isolation"], "read-uncommitted");
    assert_eq!(r["setup"]["judged_as"], "read-uncommitted");
    assert_eq!(r["analysis"]["forbidden_found"], 0);
    assert!(r["outcomes"]["committed"].as_u64().unwrap() > 0, "{r}");
    let kinds: Vec<&str> =
        r["analysis"]["anomalies"].as_array().unwrap().iter().map(|a| a["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.len(), 7, "{kinds:?}");
    assert!(kinds.contains(&"dirty-read") && kinds.contains(&"read-skew"), "{kinds:?}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the database's files are removed");
}
