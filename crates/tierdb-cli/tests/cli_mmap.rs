//! `tierdb mmap-bench` and the `spitfire` policy from the command line, at tiny sizes in
//! `model` mode.

mod common;
use common::{stderr, tierdb, tierdb_with};

fn mmap_bench(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let d = dir.display().to_string();
    let out = dir.join("out").display().to_string();
    tierdb_with(
        "mmap-bench",
        &[
            ("--mode", "model"),
            ("--data", "4MiB"),
            ("--nvm", "8MiB"),
            ("--dram-percent", "25"),
            ("--runs", "1"),
            ("--warmup", "0.1"),
            ("--duration", "0.3"),
            ("--ssd-dir", &d),
            ("--nvm-dir", &d),
            ("--out", &out),
        ],
        extra,
    )
}

#[test]
fn mmap_bench_writes_its_outputs_and_se2_copies_nothing_on_reads() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmap_bench(dir.path(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    for f in ["mmap.txt", "mmap.json", "mmap-scan.svg", "mmap-ro.svg"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("mmap.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6, "2 workloads × 3 engines");
    for p in points {
        let copies = p["copies_per_op"].as_f64().unwrap();
        match p["arch"].as_str().unwrap() {
            "mmap-se2" => {
                assert_eq!(copies, 0.0, "{p}");
                assert!(p["in_place_per_op"].as_f64().unwrap() > 0.0, "{p}");
            }
            _ => assert!(copies > 0.0, "a buffer of 25% misses: {p}"),
        }
        assert!(p["ops_per_sec"].as_f64().unwrap() > 0.0);
    }
    let text = std::fs::read_to_string(out.join("mmap.txt")).unwrap();
    assert!(text.contains("mode model") && text.contains("SE2 / read"), "{text}");
    // Only the outputs are left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn mmap_bench_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, needle) in [
        (&["--data", "16MiB"][..], "does not fit"),
        (&["--dram-percent", "0"][..], "outside (0, 100]"),
        (&["--runs", "0"][..], "--runs 0"),
        (&["--workloads", "nosuch"][..], "nosuch"),
    ] {
        let o = mmap_bench(dir.path(), extra);
        assert!(!o.status.success(), "{extra:?} succeeded");
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
    }
}

#[test]
fn spitfire_knobs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let run = |policy: &str| {
        tierdb(&[
            "bench",
            "ycsb",
            "--arch",
            "three-tier",
            "--mode",
            "model",
            "--dram",
            "2MiB",
            "--nvm",
            "16MiB",
            "--data",
            "6MiB",
            "--workload",
            "rw:50",
            "--warmup",
            "0.1",
            "--duration",
            "0.4",
            "--quiet",
            "--json",
            "--ssd-dir",
            &d,
            "--nvm-dir",
            &d,
            "--policy",
            policy,
        ])
    };
    let o = run("spitfire:dr=0,dw=0,nr=1,nw=1");
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &v["result"]["tiers"]["buffer"];
    assert!(b["nvm_reads_in_place"].as_u64().unwrap() > 0 && b["nvm_writes_in_place"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(b["nvm_to_dram_pages"], 0, "dr = dw = 0 never copies a page up: {b}");
    assert_eq!(v["result"]["not_found"], 0);
    for (policy, needle) in
        [("spitfire:dr=2", "dr = 2"), ("spitfire:zz=1", "unknown knob"), ("nosuch", "unknown policy")]
    {
        let o = run(policy);
        assert!(!o.status.success(), "{policy} succeeded");
        assert!(stderr(&o).contains(needle), "{policy}: {}", stderr(&o));
    }
}
