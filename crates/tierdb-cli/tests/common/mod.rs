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
