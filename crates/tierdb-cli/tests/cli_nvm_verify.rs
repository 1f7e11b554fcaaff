//! `--nvm-verify off|cheap|every` on `tierdb bench ycsb` (docs/checksums.md): each mode
//! runs on the architectures that keep pages in NVM and is named in the report; with
//! `every` each line load and in-place read checks its page, so the run spends more
//! modelled NVM time; a bad mode is refused naming the choices.

mod common;
use common::{json, stderr, tierdb};

fn bench(dir: &std::path::Path, arch: &str, verify: &str) -> std::process::Output {
    let d = dir.display().to_string();
    tierdb(&[
        "bench",
        "ycsb",
        "--arch",
        arch,
        "--mode",
        "model",
        "--dram",
        "2MiB",
        "--nvm",
        "16MiB",
        "--data",
        "3MiB",
        "--workload",
        "rw:50",
        "--warmup",
        "0",
        "--duration",
        "0",
        "--set",
        "operationcount=1000",
        "--quiet",
        "--json",
        "--ssd-dir",
        &d,
        "--nvm-dir",
        &d,
        // In-place reads (nvm-direct's, nvsql's), checks included, go through a model of
        // the CPU cache; with none, every check is charged and `every` must cost more.
        "--cpu-cache",
        "0",
        "--nvm-verify",
        verify,
    ])
}

#[test]
fn every_verify_mode_runs_and_every_spends_more_nvm_time() {
    let dir = tempfile::tempdir().unwrap();
    for arch in ["three-tier", "nvsql", "nvm-direct"] {
        let mut nvm_ps = Vec::new();
        let modes: &[&str] = if arch == "three-tier" { &["off", "cheap", "every"] } else { &["cheap", "every"] };
        for &verify in modes {
            let v = json(&bench(dir.path(), arch, verify));
            assert_eq!(v["setup"]["nvm_verify"], verify, "{arch}");
            let r = &v["result"];
            assert_eq!(r["ops"], 1000, "{arch} {verify}: {r}");
            assert_eq!(r["not_found"], 0, "{arch} {verify}");
            nvm_ps.push(r["tiers"]["nvm"]["modelled_ps"].as_u64().unwrap());
        }
        // Off and cheap check nothing here (the load wrote every page); every checks the
        // whole page at each line load or in-place fix.
        let (every, rest) = nvm_ps.split_last().unwrap();
        assert!(rest.iter().all(|ps| *every > 2 * ps), "{arch}: modelled NVM ps {nvm_ps:?}");
    }
}

#[test]
fn a_bad_verify_mode_is_refused_naming_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(dir.path(), "three-tier", "all");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("off, cheap, every"), "{}", stderr(&o));
}
