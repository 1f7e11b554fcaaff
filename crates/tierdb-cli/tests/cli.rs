//! The `tierdb` binary end to end: good runs produce what they promise; bad input gets
//! a message naming what and where, a non-zero exit, and changes no file.

use std::path::Path;

mod common;
use common::{stderr, tierdb};

/// A tiny bench: every tier, few operations, files in `dir`.
fn small_bench<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "devices",
        "bench",
        "--dram-size",
        "4MiB",
        "--nvm-size",
        "4MiB",
        "--ssd-size",
        "1MiB",
        "--ops",
        "200",
        "--ssd-ops",
        "20",
        "--runs",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("--nvm-path".into());
    v.push(dir.join("b.nvm").display().to_string());
    v.push("--ssd-path".into());
    v.push(dir.join("b.db").display().to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn bench_in_model_mode_reports_profile_costs_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let args = small_bench(dir.path(), &["--mode", "model", "--json", "--seed", "7"]);
    let o = tierdb(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(v["mode"], "model");
    assert_eq!(v["seed"], 7);
    assert_eq!(v["threads"], 1);
    assert_eq!(v["nvm"]["profile"]["name"], "optane-dcpmm");
    assert_eq!(v["ssd"]["profile"]["name"], "nvme-ssd");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 + 8 + 5);
    for r in rows {
        // In model mode the modelled time is exactly the profile's, row by row.
        let ratio = r["ratio"].as_f64().unwrap();
        assert!((ratio - 1.0).abs() < 0.005, "{r}");
    }
    let interfered = rows.iter().find(|r| r["op"] == "line write, then read, random").unwrap();
    assert_eq!(interfered["interfered_reads_per_op"], 1.0);
    // The files it created are gone again.
    assert!(!dir.path().join("b.nvm").exists() && !dir.path().join("b.db").exists());
}

#[test]
fn bench_prints_a_table_with_every_tier() {
    let dir = tempfile::tempdir().unwrap();
    let args = small_bench(dir.path(), &["--mode", "off", "--tiers", "nvm,ssd"]);
    let o = tierdb(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["mode off", "line read, random", "page read, random", "wall/profile", "O_DIRECT"] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    assert!(!out.contains("| dram"), "{out}");
}

#[test]
fn probe_answers_in_json() {
    let o = tierdb(&["devices", "probe", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cpu"]["clflush"], true);
    assert_eq!(v["paths"][0]["file_system"], "tmpfs");
    assert!(v["numa_nodes"].as_array().is_some());
}

#[test]
fn profiles_list_and_show_sources() {
    let o = tierdb(&["devices", "profiles"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for name in ["dram", "optane-dcpmm", "nvdimm-n", "cxl-expander", "nvme-ssd", "sata-ssd"] {
        assert!(out.contains(name), "{name} missing");
    }
    let o = tierdb(&["devices", "profiles", "--show", "optane-dcpmm"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Izraelevitz"));
}

#[test]
fn unknown_profile_is_an_error_listing_presets() {
    let o = tierdb(&["devices", "bench", "--nvm-profile", "optane-9000", "--tiers", "nvm"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("optane-9000") && e.contains("optane-dcpmm") && e.contains("--nvm-profile"), "{e}");
}

#[test]
fn malformed_profile_file_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mine.toml");
    std::fs::write(&f, "inherits = \"optane-dcpmm\"\nread_latency_ns = \n").unwrap();
    let o = tierdb(&["devices", "bench", "--nvm-profile", f.to_str().unwrap(), "--tiers", "nvm"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("mine.toml") && e.contains("line 2"), "{e}");
    std::fs::write(&f, "inherits = \"optane-dcpmm\"\nread_latency_ns = -300\n").unwrap();
    let o = tierdb(&["devices", "bench", "--nvm-profile", f.to_str().unwrap(), "--tiers", "nvm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("read_latency_ns"), "{}", stderr(&o));
}

#[test]
fn zero_negative_and_bad_sizes_are_refused() {
    for bad in ["--nvm-size=0", "--nvm-size=-1GiB", "--nvm-size=12parsecs"] {
        let o = tierdb(&["devices", "bench", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("--nvm-size"), "{bad}: {}", stderr(&o));
    }
    let o = tierdb(&["devices", "bench", "--mode", "warp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("warp"));
    let o = tierdb(&["devices", "bench", "--runs", "0"]);
    assert_eq!(o.status.code(), Some(1));
    let o = tierdb(&["devices", "bench", "--page-size", "5000", "--tiers", "ssd"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("5000"), "{}", stderr(&o));
}

#[test]
fn a_path_that_cannot_be_created_is_an_error() {
    let o = tierdb(&["devices", "bench", "--tiers", "nvm", "--nvm-path", "/proc/no/such/dir/x.nvm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/proc/no/such/dir/x.nvm"), "{}", stderr(&o));
}

#[test]
fn existing_files_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = dir.path().join("b.nvm");
    let ssd = dir.path().join("b.db");
    std::fs::write(&nvm, b"my data").unwrap();
    std::fs::write(&ssd, b"other data").unwrap();
    for tier in ["nvm", "ssd"] {
        let args = small_bench(dir.path(), &["--tiers", tier]);
        let o = tierdb(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(1), "{tier}");
        assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&nvm).unwrap(), b"my data");
    assert_eq!(std::fs::read(&ssd).unwrap(), b"other data");
}

/// Makes a page file with 16 KiB pages through the library, as the engine will.
fn page_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("pages.db");
    let f = tierdb::device::SsdFile::create(&tierdb::device::SsdConfig::new(&path)).unwrap();
    f.grow(3).unwrap();
    path
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut all = std::fs::read(path).unwrap();
    all[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, all).unwrap();
}

#[test]
fn inspect_reads_a_page_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = page_file(dir.path());
    let o = tierdb(&["devices", "inspect", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["superblock"]["page_size"], 16384);
    assert_eq!(v["superblock"]["page_count"], 4);
}

#[test]
fn inspect_reports_each_superblock_problem_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = page_file(dir.path());
    let p = path.to_str().unwrap();
    let check = |args: &[&str], needle: &str| {
        let before = std::fs::read(&path).unwrap();
        let o = tierdb(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains(needle) && e.contains("pages.db"), "{args:?}: {e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "inspect changed the file");
    };
    // Another page size than asked for.
    check(&["devices", "inspect", p, "--page-size", "8KiB"], "page size 16384");
    // A bad checksum in both slots.
    let original = std::fs::read(&path).unwrap();
    patch(&path, 40, &[0xee]);
    patch(&path, 512 + 40, &[0xee]);
    check(&["devices", "inspect", p], "checksum");
    // Another format version (a valid slot of version 9).
    std::fs::write(&path, &original).unwrap();
    for slot in [0usize, 512] {
        let mut b = original[slot..slot + 512].to_vec();
        b[8..12].copy_from_slice(&9u32.to_le_bytes());
        let crc = crc32c_of(&b[..508]);
        b[508..].copy_from_slice(&crc.to_le_bytes());
        patch(&path, slot, &b);
    }
    check(&["devices", "inspect", p], "format version 9");
    // Another magic: not a tierdb file at all.
    std::fs::write(&path, b"SQLite format 3\0".repeat(512)).unwrap();
    check(&["devices", "inspect", p], "not a tierdb page file");
    // Truncated below a superblock.
    std::fs::write(&path, b"short").unwrap();
    check(&["devices", "inspect", p], "shorter");
}

/// CRC-32C (Castagnoli), bitwise: the test's own, independent of the engine's.
fn crc32c_of(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}
