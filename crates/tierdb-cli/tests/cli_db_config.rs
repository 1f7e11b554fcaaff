//! `tierdb db`: a configuration file written by `db config` opens the database it
//! describes in later invocations (put in one, get in the next), and a file with an
//! unknown key, a bad value or no file at all is refused with the key, the file and a
//! non-zero exit.

mod common;
use std::path::{Path, PathBuf};

use common::{stderr, tierdb};

/// A scratch directory of this test and process (removed by the test).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tierdb-cli-db-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `tierdb db <args>` and returns its standard output; it must succeed.
fn db_ok(args: &[&str]) -> String {
    let mut all = vec!["db"];
    all.extend_from_slice(args);
    let o = tierdb(&all);
    assert!(o.status.success(), "tierdb {all:?}: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `tierdb db <args>`, which must fail with status 1, and returns its standard error.
fn db_fails(args: &[&str]) -> String {
    let mut all = vec!["db"];
    all.extend_from_slice(args);
    let o = tierdb(&all);
    assert_eq!(o.status.code(), Some(1), "tierdb {all:?} should fail: {}", stderr(&o));
    stderr(&o)
}

#[test]
fn a_written_config_keeps_a_put_across_invocations() {
    for arch in ["ssd-bm", "three-tier", "main-memory"] {
        let base = scratch(arch);
        let (dir, file) = (base.join("db"), base.join("db.toml"));
        let mut config = vec!["config", "--arch", arch, "--dram", "8MiB", "--mode", "off", "--page-size", "4KiB"];
        if arch == "three-tier" {
            config.extend(["--nvm", "16MiB"]); // refused for an architecture without NVM
        }
        config.extend(["--durability", "sync", "--dir", s(&dir), "--out", s(&file)]);
        db_ok(&config);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(&format!("architecture = \"{arch}\"")) && text.contains("emulation = \"off\""), "{text}");

        let f = s(&file);
        db_ok(&["put", "--config", f, "alice", "1"]);
        db_ok(&["put", "--config", f, "bob", "2"]);
        assert_eq!(db_ok(&["get", "--config", f, "alice"]), "1\n", "{arch}: the value put by an earlier invocation");
        assert_eq!(db_ok(&["scan", "--config", f, "--start", "b"]), "bob\t2\n", "{arch}");
        assert_eq!(db_ok(&["scan", "--config", f, "--limit", "1"]), "alice\t1\n", "{arch}");
        db_ok(&["delete", "--config", f, "alice"]);
        let e = db_fails(&["get", "--config", f, "alice"]);
        assert!(e.contains("no key \"alice\""), "{arch}: {e}");
        db_ok(&["checkpoint", "--config", f]);
        let info = db_ok(&["info", "--config", f]);
        assert!(info.contains(&format!("architecture: {arch}")) && info.contains("trees: main"), "{info}");
        let e = db_fails(&["get", "--config", f, "--tree", "nope", "bob"]);
        assert!(e.contains("nope"), "{e}");
        std::fs::remove_dir_all(base).unwrap();
    }
}

#[test]
fn an_unknown_key_is_refused_naming_key_and_file() {
    let base = scratch("unknown");
    let file = base.join("db.toml");
    let text = format!("dir = {:?}\n\n[checkpoint]\nenabled = true\nlog-byts = \"8MiB\"\n", s(&base.join("db")));
    std::fs::write(&file, text).unwrap();
    let e = db_fails(&["info", "--config", s(&file)]);
    assert!(e.contains("checkpoint.log-byts") && e.contains(&format!("{}:5", file.display())), "{e}");
    assert!(!base.join("db").exists(), "nothing is made from a refused file");
    std::fs::remove_dir_all(base).unwrap();
}

#[test]
fn a_bad_value_is_refused_naming_key_and_file() {
    let base = scratch("bad-value");
    let file = base.join("db.toml");
    let text = format!("dir = {:?}\ndurability = \"sometimes\"\n", s(&base.join("db")));
    std::fs::write(&file, text).unwrap();
    let e = db_fails(&["put", "--config", s(&file), "k", "v"]);
    assert!(
        e.contains("key durability") && e.contains("sometimes") && e.contains(&format!("{}:2", file.display())),
        "{e}"
    );
    let text = format!("dir = {:?}\narchitecture = \"three-tier\"\n[nvm]\nsize = \"lots\"\n", s(&base.join("db")));
    std::fs::write(&file, text).unwrap();
    let e = db_fails(&["info", "--config", s(&file)]);
    assert!(e.contains("key nvm.size") && e.contains("lots") && e.contains(s(&file)), "{e}");
    let missing = base.join("missing.toml");
    let e = db_fails(&["info", "--config", s(&missing)]);
    assert!(e.contains(s(&missing)) && e.contains("cannot read"), "{e}");
    std::fs::remove_dir_all(base).unwrap();
}

#[test]
fn bench_tpcc_and_ycsb_run_on_a_config_instead_of_the_architecture_flags() {
    for bench in ["tpcc", "ycsb"] {
        let o = tierdb(&["bench", bench, "--config", "x.toml", "--arch", "ssd-bm"]);
        assert_eq!(o.status.code(), Some(2), "--config conflicts with --arch: {}", stderr(&o));
        assert!(stderr(&o).contains("--arch"), "{}", stderr(&o));
    }
    let base = scratch("bench");
    let (dir, file) = (base.join("db"), base.join("db.toml"));
    let text = format!(
        "dir = {:?}\narchitecture = \"three-tier\"\nemulation = \"model\"\ndurability = \"group\"\n\
         dram.size = \"4MiB\"\nnvm.size = \"16MiB\"\n",
        s(&dir)
    );
    std::fs::write(&file, text).unwrap();
    let f = s(&file);
    let common = ["--warmup", "0.1", "--duration", "0.3", "--quiet", "--json", "--config", f];
    let mut tpcc = vec!["bench", "tpcc", "--tiny", "--warehouses", "1"];
    tpcc.extend(common);
    let r = common::json(&tierdb(&tpcc));
    assert_eq!(r["arch"], "three-tier", "{r}");
    assert_eq!(r["durability"], "group", "{r}");
    let mut ycsb = vec!["bench", "ycsb", "--data", "2MiB", "--workload", "rw:50"];
    ycsb.extend(common);
    let r = common::json(&tierdb(&ycsb));
    assert!(r["txn"].is_object(), "through transactions: {r}");
    assert!(!dir.exists(), "the run's database is removed");
    std::fs::remove_dir_all(base).unwrap();
}
