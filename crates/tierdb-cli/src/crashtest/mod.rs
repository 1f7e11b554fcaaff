//! `tierdb crashtest`: kills a writer with SIGKILL at random points and checks that
//! recovery keeps exactly the committed transactions.
//!
//! One database is used for all points. At each point a child process (`tierdb
//! crashtest-child`, hidden) opens it (recovering from the previous kill) and runs
//! transactions numbered on from the last one that survived: transaction `i` puts the
//! marker `m<i>` and sets `c<i mod 97>` and `d<i mod 89>` to a value naming `i`; every
//! tenth one writes `r<i>` and rolls back instead. After each commit returns, the child
//! prints `ack <i>`. The parent kills it after a random delay, reopens the database and
//! checks:
//!
//! - the surviving markers are exactly the transactions `start..=D` that committed
//!   (no gap, none beyond `D`), and `D` is at least the last acknowledged commit;
//! - every `c` and `d` key holds the value of the last surviving transaction that set it
//!   (all of a transaction's changes, or none);
//! - no rolled-back key is visible; every page and index invariant holds;
//! - on the buffered stores, no page is lost: the pages allocated and not on the free
//!   list are exactly the catalog and the tree's nodes.

mod campaign;
mod wal_dump;

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use clap::Args;
use tierdb_bench::experiments::crashtest::{self, DbOptions};

pub use wal_dump::{WalDumpArgs, wal_dump};

const POINTS_MAX: u32 = 100_000;
const KILL_AFTER_MS_MAX: u64 = 60_000;

#[derive(Args, Debug)]
pub struct CrashtestArgs {
    #[command(flatten)]
    db: DbOptions,
    /// Kill points.
    #[arg(long, default_value_t = 50)]
    points: u32,
    /// Seed of the kill delays and the children's workloads (default: drawn at random
    /// and printed). Kill timing is real time, so a failing seed may need a few runs to
    /// fail again.
    #[arg(long)]
    seed: Option<u64>,
    /// Longest delay before a kill, in milliseconds (each point draws one up to it).
    #[arg(long, default_value_t = 80)]
    kill_after_ms: u64,
    /// Directory for the database (default: a temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct CrashChildArgs {
    #[arg(long)]
    dir: PathBuf,
    #[command(flatten)]
    db: DbOptions,
    #[arg(long)]
    seed: u64,
}

/// The child: transactions until killed.
pub fn child(args: CrashChildArgs) -> Result<()> {
    crashtest::child(&args.dir, &args.db, args.seed)
}

pub fn run(args: CrashtestArgs) -> Result<()> {
    ensure!(args.points > 0 && args.points <= POINTS_MAX, "--points {} is outside 1..={POINTS_MAX}", args.points);
    ensure!(
        (1..=KILL_AFTER_MS_MAX).contains(&args.kill_after_ms),
        "--kill-after-ms {} is outside 1..={KILL_AFTER_MS_MAX}",
        args.kill_after_ms
    );
    crashtest::check_options(&args.db)?; // checks the names and the sizes
    let seed = args.seed.unwrap_or_else(rand::random);
    let report = campaign::campaign(&args, seed)
        .with_context(|| format!("crashtest failed; re-run it with: {}", rerun(&args, seed)))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "crashtest {}{} (log buffer {}): {} kill points, seed {}: every acknowledged commit survived ({} acknowledged, {} transactions in the database), {} unfinished transaction(s) rolled back, {} kill(s) inside creation (discarded, created afresh); NVM pages reused {}, NVM frames cleared mid-write {}, stale NVM frames dropped {}; redo read {} records, redid {} changes, skipped {} ({} unread); recovery median {:.1} ms, max {:.1} ms; {:.1} s",
            report.arch,
            report.policy.as_ref().map(|p| format!(" --policy {p}")).unwrap_or_default(),
            report.log_buffer,
            report.points,
            report.seed,
            report.acknowledged_commits,
            report.surviving_transactions,
            report.losers_rolled_back,
            report.creations_discarded,
            report.nvm_pages_reused,
            report.nvm_frames_cleared,
            report.nvm_frames_stale,
            report.redo_records_read,
            report.redo_changes_redone,
            report.redo_changes_skipped,
            report.redo_changes_skipped_unread,
            report.median_recovery_ms,
            report.max_recovery_ms,
            report.secs
        );
    }
    Ok(())
}

/// The command line that runs the same campaign again.
fn rerun(args: &CrashtestArgs, seed: u64) -> String {
    let mut a = vec!["tierdb".to_string(), "crashtest".into()];
    a.extend(args.db.to_args());
    a.extend([
        "--points".into(),
        args.points.to_string(),
        "--kill-after-ms".into(),
        args.kill_after_ms.to_string(),
        "--seed".into(),
        seed.to_string(),
    ]);
    a.join(" ")
}
