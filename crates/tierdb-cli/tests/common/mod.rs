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

/// Architectures without an NVM tier: commands refuse `--nvm` for them.
pub const NO_NVM_ARCHS: [&str; 2] = ["main-memory", "ssd-bm"];

/// True if `args` choose architectures (`--arch`, `--archs`, either as `--flag value`
/// or `--flag=value`) and none of them has an NVM tier.
pub fn no_nvm_tier(args: &[&str]) -> bool {
    let mut names = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let value = match a.split_once('=') {
            Some((flag, v)) if flag == "--arch" || flag == "--archs" => Some(v),
            None if *a == "--arch" || *a == "--archs" => args.get(i + 1).copied(),
            _ => None,
        };
        names.extend(value.into_iter().flat_map(|v| v.split(',')));
    }
    !names.is_empty() && names.iter().all(|n| NO_NVM_ARCHS.contains(n))
}

/// Runs `tierdb <command> --quiet` with each `(flag, value)` of `defaults` that `extra`
/// does not name (as `--flag value` or `--flag=value`), then `extra`. A default
/// `--nvm` is left out where `extra` chooses architectures without an NVM tier.
pub fn tierdb_with(command: &str, defaults: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut args = vec![command, "--quiet"];
    for &(flag, value) in defaults {
        if flag == "--nvm" && no_nvm_tier(extra) {
            continue;
        }
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

/// Every command path of `tierdb --help` (`["bench", "ycsb"]`, `["sim"]`, …), found by
/// walking the `Commands:` sections of the help texts (hidden commands are not listed),
/// each with the long flags its help lists.
pub fn commands_and_flags() -> Vec<(Vec<String>, Vec<String>)> {
    fn help(path: &[String]) -> String {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let o = tierdb(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    fn walk(path: Vec<String>, out: &mut Vec<(Vec<String>, Vec<String>)>) {
        let text = help(&path);
        let mut subcommands = Vec::new();
        let mut flags = Vec::new();
        let mut in_commands = false;
        for line in text.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands {
                match line.split_whitespace().next() {
                    Some(name) if line.starts_with("  ") => {
                        if name != "help" {
                            subcommands.push(name.to_string());
                        }
                    }
                    _ => in_commands = false,
                }
                continue;
            }
            // Option lines are indented by at most 6 spaces; their descriptions by more.
            let indent = line.len() - line.trim_start().len();
            let t = line.trim_start();
            if (1..=6).contains(&indent) && t.starts_with('-') {
                // "-h, --help  Print help": the names end where the description begins.
                let names = t.split("  ").next().unwrap_or(t);
                let long = names.split(", ").last().unwrap_or(names);
                if let Some(name) = long.split([' ', '=', '[']).next().filter(|n| n.starts_with("--")) {
                    flags.push(name.to_string());
                }
            }
        }
        if subcommands.is_empty() {
            out.push((path, flags));
        } else {
            for s in subcommands {
                let mut p = path.clone();
                p.push(s);
                walk(p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &mut out);
    out
}

/// The command paths (joined by spaces) whose help lists `--flag` for every flag of
/// `flags` that is a single name, and at least one of the names of a `a|b` alternative.
pub fn commands_with(flags: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = commands_and_flags()
        .into_iter()
        .filter(|(_, have)| flags.iter().all(|f| f.split('|').any(|alt| have.iter().any(|h| h == alt))))
        .map(|(path, _)| path.join(" "))
        .collect();
    found.sort();
    found
}
