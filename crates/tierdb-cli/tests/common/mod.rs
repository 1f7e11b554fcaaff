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
