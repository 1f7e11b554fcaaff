//! One crashtest campaign: a child process per kill point, started from this binary,
//! killed with SIGKILL after a random delay, and the database checked after each kill.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rand::prelude::*;
use serde::Serialize;
use tierdb_bench::experiments::crashtest::check_point;
use tierdb_bench::harness::{Middle, median};

use super::CrashtestArgs;

#[derive(Serialize)]
pub(super) struct Report {
    pub(super) command: &'static str,
    pub(super) arch: String,
    pub(super) log_buffer: String,
    /// The policy given with `--policy` (else the architecture's).
    pub(super) policy: Option<String>,
    pub(super) redo_from_retained: bool,
    pub(super) dram_frames: Option<u64>,
    pub(super) seed: u64,
    pub(super) points: u32,
    pub(super) acknowledged_commits: u64,
    pub(super) surviving_transactions: u64,
    pub(super) losers_rolled_back: usize,
    /// Kills inside the first open, before the database was created: its files were
    /// discarded and it was created afresh on reopening.
    pub(super) creations_discarded: u32,
    /// Summed over the recoveries: pages found again in NVM, and NVM frames not used
    /// because a kill caught them in an in-place write (rebuilt by redo).
    pub(super) nvm_pages_reused: usize,
    pub(super) nvm_frames_cleared: usize,
    /// Summed over the recoveries: NVM frames older than their page's SSD copy (a kill
    /// between the SSD write and the NVM refresh), dropped.
    pub(super) nvm_frames_stale: usize,
    /// Summed over the recoveries: log records redo read, changes it applied and
    /// changes it skipped (their page held them).
    pub(super) redo_records_read: u64,
    pub(super) redo_changes_redone: u64,
    pub(super) redo_changes_skipped: u64,
    /// Of those, skipped without reading the page (a flush record: its SSD copy holds
    /// them; or its NVM frame's page LSN).
    pub(super) redo_changes_skipped_unread: u64,
    pub(super) max_recovery_ms: f64,
    pub(super) median_recovery_ms: f64,
    pub(super) secs: f64,
}

/// The kill points of one campaign; an error names the point that failed.
pub(super) fn campaign(args: &CrashtestArgs, seed: u64) -> Result<Report> {
    let tmp = tempfile::Builder::new().prefix("tierdb-crashtest-").tempdir().context("temporary directory")?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe().context("locating the tierdb binary")?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let started = Instant::now();
    let (mut acked, mut losers, mut recoveries) = (0u64, 0usize, Vec::new());
    let mut creations_discarded = 0u32;
    let (mut nvm_pages_reused, mut nvm_frames_cleared, mut nvm_frames_stale) = (0usize, 0usize, 0usize);
    let mut redo = (0u64, 0u64, 0u64, 0u64);
    let mut last_surviving = None;
    for point in 0..args.points {
        let kill_after = Duration::from_millis(rng.random_range(1..=args.kill_after_ms));
        let mut child = Command::new(&exe)
            .arg("crashtest-child")
            .args(args.db.to_args())
            .arg("--dir")
            .arg(&dir)
            .args(["--seed", &rng.random::<u64>().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting the child")?;
        let stdout = child.stdout.take().expect("piped");
        let last_ack = Arc::new(AtomicU64::new(u64::MAX));
        let acks = Arc::new(AtomicU64::new(0));
        let reader = {
            let (last_ack, acks) = (last_ack.clone(), acks.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                        last_ack.store(n, Ordering::SeqCst);
                        acks.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        };
        let deadline = Instant::now() + kill_after;
        let exited = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        if let Some(status) = exited {
            let mut err = String::new();
            use std::io::Read;
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            bail!("point {point}: the child exited by itself ({status}) before the kill: {}", err.trim());
        }
        child.kill().context("killing the child")?; // SIGKILL
        child.wait()?;
        reader.join().map_err(|_| anyhow::anyhow!("the reader thread panicked"))?;
        acked += acks.load(Ordering::SeqCst);
        let ack = match last_ack.load(Ordering::SeqCst) {
            u64::MAX => last_surviving,
            n => Some(n),
        };
        if args.dir.is_some() {
            // Keep the state as the kill left it, for diagnosis of a failing point.
            let keep = dir.with_extension("at-kill");
            let _ = std::fs::remove_dir_all(&keep);
            copy_dir(&dir, &keep)?;
        }
        let c = check_point(&dir, &args.db, point, kill_after, ack, acked, last_surviving)?;
        nvm_pages_reused += c.nvm_pages_reused;
        nvm_frames_cleared += c.nvm_frames_cleared;
        nvm_frames_stale += c.nvm_frames_stale;
        redo.0 += c.records_read;
        redo.1 += c.changes_redone;
        redo.2 += c.changes_skipped;
        redo.3 += c.changes_skipped_unread;
        recoveries.push(c.recovery_ms);
        losers += c.losers;
        creations_discarded += u32::from(c.creation_discarded);
        last_surviving = c.last_surviving;
    }
    recoveries.sort_by(f64::total_cmp);
    let report = Report {
        command: "crashtest",
        arch: args.db.arch.clone(),
        log_buffer: args.db.log_buffer.clone(),
        policy: args.db.policy.clone(),
        redo_from_retained: args.db.redo_from_retained,
        dram_frames: args.db.dram_frames,
        seed,
        points: args.points,
        acknowledged_commits: acked,
        surviving_transactions: last_surviving.map_or(0, |d| d + 1),
        losers_rolled_back: losers,
        creations_discarded,
        nvm_pages_reused,
        nvm_frames_cleared,
        nvm_frames_stale,
        redo_records_read: redo.0,
        redo_changes_redone: redo.1,
        redo_changes_skipped: redo.2,
        redo_changes_skipped_unread: redo.3,
        max_recovery_ms: recoveries.last().copied().unwrap_or(0.0),
        median_recovery_ms: median(recoveries.iter().copied(), Middle::Upper).unwrap_or(0.0),
        secs: started.elapsed().as_secs_f64(),
    };
    Ok(report)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}
