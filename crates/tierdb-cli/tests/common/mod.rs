//! Helpers the CLI tests share: running the binary and reading what it printed.

// Each test file uses some of these.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs `tierdb` with `args` and waits for it.
pub fn tierdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tierdb")).args(args).output().expect("run tierdb")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON report of a run that must have succeeded.
pub fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("JSON report")
}

/// Runs `tierdb <command> --quiet` with each `(flag, value)` of `defaults` that `extra`
/// does not name (as `--flag value` or `--flag=value`), then `extra`.
pub fn tierdb_with(command: &str, defaults: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut args = vec![command, "--quiet"];
    for &(flag, value) in defaults {
        if !extra.iter().any(|e| e.split('=').next() == Some(flag)) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    tierdb(&args)
}

/// Starts `tierdb args`, waits until `dir` holds `entries` entries (its files exist),
/// lets it run `settle_ms` more, sends SIGINT and returns what it printed. The caller
/// checks the exit status (130) and what is left in `dir`.
pub fn interrupt_once_files_exist(args: &[&str], dir: &std::path::Path, entries: usize, settle_ms: u64) -> Output {
    use std::time::{Duration, Instant};
    let child = Command::new(env!("CARGO_BIN_EXE_tierdb"))
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tierdb");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir).expect("read the directory").count() < entries {
        assert!(Instant::now() < deadline, "the engine's files never appeared in {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(settle_ms));
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("run kill");
    assert!(kill.success());
    child.wait_with_output().expect("wait for tierdb")
}
