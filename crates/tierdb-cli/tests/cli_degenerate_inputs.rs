//! Degenerate inputs are errors, never reports of zeros (issue 19, item 5): empty trace
//! files in every format, a text trace without its header, `# page_size 0`, traces
//! without page accesses (`sim`, `recommend`), `--nvm` where no architecture has an NVM
//! tier (every command that takes `--nvm` with `--arch` or `--archs`), and `sim` on an
//! architecture with NVM but no `--nvm`. Each fails with a message that says what is
//! wrong and where, prints nothing on standard output and leaves nothing behind.

use std::path::Path;
use std::process::Output;

mod common;
use common::{commands_with, stderr, tierdb};

/// A zstd frame of no bytes (what `zstd` makes of an empty file).
const ZSTD_OF_NOTHING: [u8; 13] = [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00, 0x99, 0xe9, 0xd8, 0x51];

/// Every trace format `--format` takes.
const FORMATS: [&str; 4] = ["tierdb", "arc", "msr", "pg-usdt"];

/// The commands that read a trace, with what each needs besides the trace; `out` is a
/// directory the command must not create.
fn trace_commands<'a>(trace: &'a str, out: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec!["trace", "info", trace],
        vec!["trace", "import", trace, "--out", out],
        vec!["sim", trace, "--arch", "ssd-bm"],
        vec!["recommend", trace, "--budget", "10", "--out", out],
    ]
}

/// Asserts that `o` failed with status `code` and a message holding every `needle`, and
/// printed nothing on standard output.
fn assert_refused(o: &Output, code: i32, needles: &[&str], what: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{what}: {e}");
    for n in needles {
        assert!(e.contains(n), "{what}: {n:?} missing in: {e}");
    }
    assert!(!e.contains("panicked"), "{what}: {e}");
    assert!(o.stdout.is_empty(), "{what}: printed {}", String::from_utf8_lossy(&o.stdout));
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

#[test]
fn an_empty_trace_file_is_an_error_in_every_format_and_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    for (name, bytes, why) in [
        ("empty", &b""[..], "the file is empty (0 bytes)"),
        ("empty.zst", &ZSTD_OF_NOTHING[..], "decompresses to nothing"),
    ] {
        let trace = write(dir.path(), name, bytes);
        for format in FORMATS {
            for mut args in trace_commands(&trace, &out) {
                args.extend(["--format", format]);
                let o = tierdb(&args);
                assert_refused(&o, 1, &[&trace, "empty trace", why], &format!("{args:?}"));
            }
        }
    }
    assert!(!Path::new(&out).exists(), "an output was written for an empty trace");
}

#[test]
fn a_file_without_records_is_an_empty_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let cases = [
        ("header.txt", "# tierdb-trace 1\n# page_size 4096\n# source by hand\n", "tierdb", "a header and no records"),
        ("blank.txt", "\n   \n", "tierdb", "only blank lines"),
        ("comments.lis", "# nothing\n\n", "arc", "no request lines for --format arc"),
        ("blank.csv", "\n", "msr", "no request lines for --format msr"),
        ("probes.out", "Attaching 2 probes...\n", "pg-usdt", "no request lines for --format pg-usdt"),
    ];
    for (name, text, format, why) in cases {
        let trace = write(dir.path(), name, text.as_bytes());
        for mut args in trace_commands(&trace, &out) {
            args.extend(["--format", format]);
            assert_refused(&tierdb(&args), 1, &[&trace, "empty trace", why], &format!("{args:?}"));
        }
    }
    assert!(!Path::new(&out).exists(), "an output was written for an empty trace");
}

#[test]
fn a_text_trace_without_its_header_is_an_error_that_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let cases = [
        ("records.txt", "R 1\nR 2\nW 1\n", "line 1", "no `# tierdb-trace 1` header"),
        ("comment-first.txt", "\n# made by hand\nR 1\n", "line 2", "no `# tierdb-trace 1` header"),
        ("csv.txt", "128166372003061629,hm,1,Read,8192,8192,100\n", "line 1", "--format arc, msr or pg-usdt"),
        ("no-page-size.txt", "# tierdb-trace 1\n# source x\nR 1\n", "line 3", "before `# page_size N`"),
        ("page-size-0.txt", "# tierdb-trace 1\n# page_size 0\nR 1\nR 2\n", "line 2", "page size 0"),
    ];
    for (name, text, at, why) in cases {
        let trace = write(dir.path(), name, text.as_bytes());
        for args in trace_commands(&trace, &out) {
            assert_refused(&tierdb(&args), 1, &[&trace, at, why], &format!("{args:?}"));
        }
    }
    assert!(!Path::new(&out).exists(), "an output was written for a bad trace");
}

#[test]
fn a_trace_without_measured_page_accesses_is_not_simulated_or_sized() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let no_access = write(dir.path(), "alloc.txt", b"# tierdb-trace 1\n# page_size 4096\nA 1\nF 1\nM measure\n");
    let late_marker = write(dir.path(), "late.txt", b"# tierdb-trace 1\n# page_size 4096\nR 1\nR 2\nM measure\n");
    for (trace, why) in [(&no_access, "hold no page access"), (&late_marker, "`measure` marker comes after all 2")] {
        let sim = tierdb(&["sim", trace, "--arch", "ssd-bm"]);
        assert_refused(&sim, 1, &[trace, "nothing to simulate", why], "sim");
        let rec = tierdb(&["recommend", trace, "--budget", "10", "--out", &out]);
        assert_refused(&rec, 1, &[trace, "nothing to simulate", why], "recommend");
    }
    assert!(!Path::new(&out).exists(), "recommend wrote an output");
    // The same trace measured from its start is a result.
    let o = tierdb(&["sim", &late_marker, "--arch", "ssd-bm", "--warmup", "none", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["result"]["accesses"], 2);
    // trace info and import still read a trace whose records are not accesses.
    assert!(tierdb(&["trace", "info", &no_access]).status.success());
}

/// Each command that takes `--nvm` beside `--arch` or `--archs`, with architectures
/// none of which has an NVM tier, and the reason its refusal must give.
fn nvm_refusals<'a>(d: &'a str) -> Vec<(&'static str, Vec<&'a str>, &'static str)> {
    let run = ["--mode", "model", "--ssd-dir", d, "--nvm-dir", d];
    let with = |cmd: &[&'a str], arch: &[&'a str], extra: &[&'a str]| {
        [cmd, arch, &["--nvm", "4MiB"], &run[..], extra].concat()
    };
    let ssd_bm = "ssd-bm has no NVM tier (DRAM and SSD)";
    let both = "none of ssd-bm, main-memory has an NVM tier";
    vec![
        ("bench ycsb", with(&["bench", "ycsb"], &["--arch", "ssd-bm"], &["--quiet"]), ssd_bm),
        (
            "bench ycsb",
            with(&["bench", "ycsb"], &["--arch=main-memory"], &["--quiet"]),
            "main-memory has no NVM tier (DRAM only)",
        ),
        ("bench tpcc", with(&["bench", "tpcc"], &["--arch", "ssd-bm"], &["--tiny", "--quiet"]), ssd_bm),
        ("check-isolation", with(&["check-isolation"], &["--arch", "ssd-bm"], &[]), ssd_bm),
        ("db config", with(&["db", "config"], &["--arch", "ssd-bm"], &["--dir", d]), ssd_bm),
        ("compare", with(&["compare"], &["--archs", "ssd-bm,main-memory"], &["--sizes", "1MiB", "--out", d]), both),
        ("compare", with(&["compare"], &["--archs", "ssd-bm", "--archs", "main-memory"], &["--out", d]), both),
        ("restart-bench", with(&["restart-bench"], &["--archs", "ssd-bm"], &["--out", d]), ssd_bm),
        ("spitfire", with(&["spitfire"], &["--arch", "ssd-bm"], &["--out", d]), ssd_bm),
        ("tune", with(&["tune"], &["--arch", "ssd-bm"], &["--out", d]), ssd_bm),
        ("wear", with(&["wear"], &["--archs", "ssd-bm"], &["--out", d]), ssd_bm),
    ]
}

#[test]
fn nvm_without_an_nvm_tier_is_refused_by_every_command_that_takes_both() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let trace = write(dir.path(), "t.txt", b"# tierdb-trace 1\n# page_size 4096\nR 1\n");
    let mut cases = nvm_refusals(&d);
    cases.push(("sim", vec!["sim", &trace, "--arch", "ssd-bm", "--nvm", "4MiB"], "ssd-bm has no NVM tier"));
    let mut tested: Vec<String> = cases.iter().map(|(c, _, _)| c.to_string()).collect();
    tested.dedup();
    tested.sort();
    assert_eq!(tested, commands_with(&["--nvm", "--arch|--archs"]), "a command takes --nvm and --arch untested here");
    for (command, args, why) in &cases {
        let usage = format!("Usage: tierdb {command}");
        assert_refused(&tierdb(args), 2, &["--nvm 4MiB", why, "drop --nvm", &usage], &format!("{args:?}"));
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["t.txt"], "a refused command left files behind");
}

#[test]
fn nvm_is_taken_where_one_of_the_architectures_has_an_nvm_tier() {
    // wear refuses ssd-bm itself (nothing wears without NVM): the --nvm check let the
    // list through because three-tier has NVM, and wear's own check speaks.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let args = ["wear", "--archs", "three-tier,ssd-bm", "--nvm", "4MiB", "--mode", "model", "--out", &d];
    let o = tierdb(&args);
    assert_refused(&o, 1, &["--archs: ssd-bm has no NVM, so nothing wears"], "wear");
    // Without --nvm, an architecture without NVM runs (the default is not the user's).
    let trace = write(dir.path(), "t.txt", b"# tierdb-trace 1\n# page_size 4096\nR 1\nR 2\nR 1\n");
    let o = tierdb(&["sim", &trace, "--arch", "ssd-bm", "--warmup", "none"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn sim_on_an_architecture_with_nvm_says_that_nvm_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.txt", b"# tierdb-trace 1\n# page_size 4096\nR 1\nR 2\nR 1\n");
    for arch in [None, Some("three-tier"), Some("basic-nvm-bm"), Some("nvcache"), Some("mmap-se2")] {
        let mut args = vec!["sim", trace.as_str(), "--warmup", "none"];
        args.extend(arch.iter().flat_map(|a| ["--arch", a]));
        let o = tierdb(&args);
        let name = arch.unwrap_or("three-tier");
        assert_refused(&o, 1, &[&format!("--arch {name} has an NVM tier, so --nvm is required")], name);
        assert!(!stderr(&o).contains("greater than zero"), "{}", stderr(&o));
        args.extend(["--nvm", "8p"]);
        let o = tierdb(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}
