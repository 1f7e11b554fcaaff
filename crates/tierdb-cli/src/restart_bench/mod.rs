//! `tierdb restart-bench`: throughput over time right after a clean restart — Figure 17
//! of van Renen et al., SIGMOD 2018 (appendix A.5), at this machine's scale. Writes a
//! text table, JSON and an SVG plot.
//!
//! For each series of the figure (an architecture with its NVM techniques), one run:
//! 1. Create an engine with fresh files, load `--data` through the YCSB driver (sorted,
//!    bulk load: pages the load leaves in DRAM are copied to free NVM frames), and close
//!    it: a checkpoint puts every page on SSD and keeps the NVM copies, clean.
//! 2. Reopen the same SSD and NVM files as a new engine: a cold DRAM pool; `three-tier`
//!    rebuilds its page table from the NVM frame headers.
//! 3. Open the table and run lookups on `--threads` threads for `--duration` seconds,
//!    rounded up to the end of a bucket, counting the lookups that complete in each
//!    `--interval-ms` bucket.
//! 4. Summarise: the reopen's time, time to the first lookup, throughput in the first
//!    bucket, the steady state (median of the buckets of the run's last second) and the
//!    time at which a bucket first reaches [`PEAK_FRACTION`] of it ("time to peak").
//!
//! Time: t = 0 is the call that reopens the engine, so the reopen and the table's opening
//! are the timeline's first stretch without lookups, as FPTree's rebuild is in the
//! paper's figure. A thread's clock is the wall time since t = 0 plus, in `model` mode,
//! the device time modelled on that thread and, before it started, on the thread that
//! reopened the engine: in `model` mode the timeline is modelled time, in `spin` and
//! `off` mode wall time. Each thread stops at the first lookup that completes at or after
//! the end; that lookup is not counted.
//!
//! The series (`--archs`):
//! - `ssd-bm`: DRAM comes back cold and every page is read from SSD.
//! - `basic-nvm-bm`: the paper's basic NVM buffer manager (DRAM + NVM, no SSD): it
//!   reopens from its NVM pool's frame headers, and its pages come back from NVM a whole
//!   page at a time.
//! - `three-tier`: all techniques; the pages come back from NVM, cache-line-grained.
//! - `nvm-direct`: the pages never left NVM; the reopen reads the allocation map, and
//!   only the CPU-cache model starts cold.
//!
//! ("Line" means a cache line in tierdb, so a line of the plot is a series here.)
//!
//! Engine files are removed after each series, on error and on Ctrl-C (the handler of
//! `tierdb_bench::harness`). Series run one after the other; a series' threads are joined before the
//! next starts.

mod table;

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;

use tierdb_bench::experiments::restart::{
    BUCKETS_MAX, PEAK_FRACTION, Plan, STEADY_WINDOW_SECS, SeriesReport, Subject, run_all, workload_setup,
};
use tierdb_bench::harness::{DURATION_SECS_MAX, EngineArgs, Machine, Progress, Setup, remove_files_on_interrupt};
use tierdb_bench::plot::write_outputs;

/// Timeline bucket width, milliseconds.
const INTERVAL_MS_MIN: u64 = 1;
const INTERVAL_MS_MAX: u64 = 60_000;

const _: () = assert!(INTERVAL_MS_MIN > 0 && INTERVAL_MS_MIN <= INTERVAL_MS_MAX);
// At the widest buckets, the longest run `EngineArgs` allows fits the timeline.
const _: () = assert!((BUCKETS_MAX * INTERVAL_MS_MAX) as f64 / 1000.0 >= DURATION_SECS_MAX);

#[derive(Args, Debug)]
#[command(mut_arg("duration", |a| a
    .default_value("5")
    .help("Seconds of lookups after the restart, from the moment the table is open")))]
#[command(mut_arg("warmup", |a| a
    .default_value("0")
    .hide(true)
    .help("Refused: the lookups start cold, right after the restart")))]
#[command(mut_arg("techniques", |a| a.hide(true).help("Refused: each architecture has its own techniques")))]
pub struct RestartArgs {
    /// DRAM of every architecture; the data should fit it, as in the paper's figure.
    #[arg(long, default_value = "256MiB")]
    dram: ByteSize,
    /// NVM of the NVM architectures; must hold all data for basic-nvm-bm.
    #[arg(long, default_value = "1GiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "64MiB")]
    data: ByteSize,
    /// Width of a timeline bucket, milliseconds.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// Architectures, comma-separated: ssd-bm, basic-nvm-bm, three-tier, nvm-direct.
    #[arg(long, default_value = "ssd-bm,basic-nvm-bm,three-tier,nvm-direct")]
    archs: String,
    /// Directory for restart.txt, restart.json and restart.svg.
    #[arg(long, default_value = "tierdb-restart")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
pub(super) struct RestartReport {
    pub(super) command: &'static str,
    pub(super) version: &'static str,
    pub(super) machine: Machine,
    pub(super) dram_bytes: u64,
    pub(super) nvm_bytes: u64,
    pub(super) data_bytes: u64,
    pub(super) interval_ms: u64,
    pub(super) duration_secs: f64,
    pub(super) steady_window_secs: f64,
    pub(super) peak_fraction: f64,
    /// Runs per series (one: the timeline is a single run's).
    pub(super) runs: usize,
    pub(super) setup: Setup,
    pub(super) notes: Vec<String>,
    pub(super) series: Vec<SeriesReport>,
}

pub fn run(args: RestartArgs) -> Result<()> {
    // 1. Check everything before the first run.
    let subjects = check(&args)?;
    let setup = workload_setup(&args.engine)?;
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    // 2. One run per series.
    let progress = Progress::new(!args.quiet);
    let plan =
        Plan { engine: &args.engine, dram: args.dram, nvm: args.nvm, data: args.data, interval_ms: args.interval_ms };
    let reports = run_all(&plan, &setup, &subjects, args.quiet, &progress)?;

    // 3. Report.
    let notes = table::notes(&args, &setup, &reports);
    let report = RestartReport {
        command: "restart-bench",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes: args.data.bytes(),
        interval_ms: args.interval_ms,
        duration_secs: args.engine.duration,
        steady_window_secs: STEADY_WINDOW_SECS,
        peak_fraction: PEAK_FRACTION,
        runs: 1,
        setup,
        notes,
        series: reports,
    };
    let text = table::render_text(&report);
    write_outputs(&args.out, "restart", &text, &report, &[("restart.svg".into(), table::chart(&report))])?;
    Ok(())
}

/// Checks the options that are this command's own; returns the series in order.
fn check(args: &RestartArgs) -> Result<Vec<Subject>> {
    if !(INTERVAL_MS_MIN..=INTERVAL_MS_MAX).contains(&args.interval_ms) {
        bail!("--interval-ms {} is outside {INTERVAL_MS_MIN}..={INTERVAL_MS_MAX}", args.interval_ms);
    }
    let duration = args.engine.duration;
    if !(duration.is_finite() && duration > 0.0) {
        bail!("--duration {duration}: must be above 0 seconds (the lookups after the restart are timed)");
    }
    if args.interval_ms as f64 > duration * 1000.0 {
        bail!(
            "--interval-ms {} is longer than --duration {duration} s: the timeline would have a single bucket",
            args.interval_ms
        );
    }
    let buckets = (duration * 1000.0 / args.interval_ms as f64).ceil();
    if buckets > BUCKETS_MAX as f64 {
        bail!(
            "--duration {duration} s in buckets of --interval-ms {} makes {buckets} buckets, more than {BUCKETS_MAX}",
            args.interval_ms
        );
    }
    if args.engine.warmup != 0.0 {
        bail!("--warmup {}: restart-bench has no warm-up; it measures from the restart on", args.engine.warmup);
    }
    if let Some(t) = args.engine.techniques {
        bail!(
            "--techniques {t}: restart-bench sets the techniques itself (three-tier: all; basic NVM BM: none; ssd-bm has no NVM)"
        );
    }
    let known = Subject::ALL.map(Subject::name).join(", ");
    if args.archs.trim().is_empty() {
        bail!("--archs is empty; choose from {known}");
    }
    let mut subjects = Vec::new();
    for word in args.archs.split(',').map(str::trim) {
        let subject = Subject::ALL.into_iter().find(|s| s.name() == word).ok_or_else(|| {
            anyhow!("--archs: unknown architecture {word:?} in {:?}; restart-bench runs {known}", args.archs)
        })?;
        if subjects.contains(&subject) {
            bail!("--archs: {word} is listed twice");
        }
        subjects.push(subject);
    }
    for (s, why) in [
        (
            Subject::BasicNvmBm,
            "the basic NVM BM keeps all data in NVM, and its restart brings every page back from there",
        ),
        (Subject::NvmDirect, "nvm-direct keeps all data in NVM"),
    ] {
        if subjects.contains(&s) && args.data.bytes() > args.nvm.bytes() {
            bail!("--data {} is larger than --nvm {}: {why}", args.data, args.nvm);
        }
    }
    Ok(subjects)
}
