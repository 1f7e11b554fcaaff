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
//! `bench_ycsb`). Series run one after the other; a series' threads are joined before the
//! next starts.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::arch::{ArchConfig, Architecture, Engine, SourceVisitor};
use tierdb::buffer::{RestartInfo, Techniques, TierStats};
use tierdb::device::{EmulationMode, clock};
use tierdb::{ByteSize, Catalog, PageSource};
use tierdb_workload::{KeySpace, OpGenerator, YcsbSpec, value_rng};

use tierdb_bench::drivers::ycsb::{self as ycsb_driver, Loaded, TABLE};
use tierdb_bench::harness::{
    Cleanup, DURATION_SECS_MAX, EngineArgs, Progress, Setup, fmt_rate, remove_files_on_interrupt,
};
use tierdb_bench::harness::{Machine, Middle, median};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes, write_outputs};

/// Timeline bucket width, milliseconds.
const INTERVAL_MS_MIN: u64 = 1;
const INTERVAL_MS_MAX: u64 = 60_000;
/// Buckets of one timeline, the reopen included.
const BUCKETS_MAX: u64 = 20_000;
/// The steady state is the median bucket of the run's last this many seconds (the whole
/// run if it is shorter).
const STEADY_WINDOW_SECS: f64 = 1.0;
/// "Peak" is reached at the first bucket with this fraction of the steady state.
const PEAK_FRACTION: f64 = 0.9;
/// Lookups between two updates of the progress bar's clock, per thread.
const PROGRESS_EVERY_OPS: u64 = 1 << 10;
const PROGRESS_PERIOD: Duration = Duration::from_millis(50);

const _: () = assert!(INTERVAL_MS_MIN > 0 && INTERVAL_MS_MIN <= INTERVAL_MS_MAX);
// At the widest buckets, the longest run `EngineArgs` allows fits the timeline.
const _: () = assert!((BUCKETS_MAX * INTERVAL_MS_MAX) as f64 / 1000.0 >= DURATION_SECS_MAX);
const _: () = assert!(PEAK_FRACTION > 0.0 && PEAK_FRACTION <= 1.0);

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

/// One series of the figure: an architecture with its techniques.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Subject {
    SsdBm,
    BasicNvmBm,
    ThreeTier,
    NvmDirect,
}

impl Subject {
    const ALL: [Subject; 4] = [Subject::SsdBm, Subject::BasicNvmBm, Subject::ThreeTier, Subject::NvmDirect];

    fn name(self) -> &'static str {
        match self {
            Subject::SsdBm => "ssd-bm",
            Subject::BasicNvmBm => "basic-nvm-bm",
            Subject::ThreeTier => "three-tier",
            Subject::NvmDirect => "nvm-direct",
        }
    }

    /// What the report and the plot call it: what actually ran.
    fn label(self) -> &'static str {
        match self {
            Subject::SsdBm => "ssd-bm",
            Subject::BasicNvmBm => "basic-nvm-bm",
            Subject::ThreeTier => "three-tier (all techniques)",
            Subject::NvmDirect => "nvm-direct",
        }
    }

    fn arch(self) -> Architecture {
        match self {
            Subject::SsdBm => Architecture::SsdBm,
            Subject::BasicNvmBm => Architecture::BasicNvmBm,
            Subject::ThreeTier => Architecture::ThreeTier,
            Subject::NvmDirect => Architecture::NvmDirect,
        }
    }

    fn techniques(self) -> Techniques {
        match self {
            Subject::SsdBm | Subject::BasicNvmBm | Subject::NvmDirect => Techniques::NONE,
            Subject::ThreeTier => Techniques::ALL,
        }
    }
}

/// Completed lookups per bucket, from t = 0 (the reopen's start). Every bucket is
/// `interval_secs` long: the run ends at the end of a bucket.
#[derive(Serialize)]
struct Timeline {
    interval_secs: f64,
    /// The end of the last bucket: the reopen, the table's opening and `--duration`,
    /// rounded up to a whole bucket.
    end_secs: f64,
    ops: Vec<u64>,
    /// `ops` over the bucket's length, modelled in `model` mode.
    ops_per_sec: Vec<f64>,
}

impl Timeline {
    fn new(ops: Vec<u64>, interval_ns: u64) -> Timeline {
        assert!(!ops.is_empty() && interval_ns > 0, "{} buckets of {interval_ns} ns", ops.len());
        let interval_secs = interval_ns as f64 * 1e-9;
        let ops_per_sec = ops.iter().map(|&n| n as f64 / interval_secs).collect();
        Timeline { interval_secs, end_secs: ops.len() as f64 * interval_secs, ops, ops_per_sec }
    }

    /// Start and end of bucket `i`, seconds.
    fn span_secs(&self, i: usize) -> (f64, f64) {
        debug_assert!(i < self.ops.len(), "bucket {i} of {}", self.ops.len());
        (i as f64 * self.interval_secs, (i + 1) as f64 * self.interval_secs)
    }

    /// The median throughput of the buckets that start in the last `window_secs`, or of
    /// the last bucket if the window is shorter than one.
    fn steady(&self, window_secs: f64) -> Option<f64> {
        let from = self.end_secs - window_secs;
        // Bucket starts are multiples of the interval; the slack absorbs rounding.
        let first = (0..self.ops.len()).find(|&i| self.span_secs(i).0 >= from - self.interval_secs * 1e-6);
        let first = first.unwrap_or(self.ops.len() - 1).min(self.ops.len() - 1);
        median(self.ops_per_sec[first..].iter().copied(), Middle::Upper)
    }

    /// The end of the first bucket whose throughput reaches `target`.
    fn reached_at(&self, target: f64) -> Option<f64> {
        self.ops_per_sec.iter().position(|&r| r >= target).map(|i| self.span_secs(i).1)
    }
}

/// One series' run.
#[derive(Serialize)]
struct SeriesReport {
    name: Subject,
    label: &'static str,
    /// The architecture that ran, with its techniques and policy.
    arch: Architecture,
    techniques: Techniques,
    policy: String,
    dram_frames: usize,
    nvm_frames: usize,
    /// The load before the restart.
    load: Loaded,
    /// The checkpoint that closed the loaded engine (wall time).
    close_secs: f64,
    /// The reopen: `Engine::open` on the same files (modelled in `model` mode).
    open_secs: f64,
    /// The reopen and the table's opening: when the lookups start.
    ready_secs: f64,
    /// When the first lookup completed, on any thread.
    first_op_secs: Option<f64>,
    /// What the reopen found in NVM: frames scanned, pages reused, scan time (wall) and
    /// GB/s of frames. `None` without NVM.
    nvm_restart: Option<RestartInfo>,
    timeline: Timeline,
    ops: u64,
    /// Lookups of keys the table did not have (0 unless something is wrong).
    not_found: u64,
    first_interval_ops_per_sec: f64,
    /// Median bucket of the run's last `steady_window_secs` (the whole run if shorter).
    steady_ops_per_sec: Option<f64>,
    /// When a bucket first reached `peak_fraction` of the steady state.
    time_to_peak_secs: Option<f64>,
    /// From `run_tiers`.
    dram_hits: u64,
    nvm_hits: u64,
    ssd_reads: u64,
    /// Counters of the reopen itself (superblock, free-page list, NVM frame headers).
    open_tiers: TierStats,
    /// Counters from the end of the reopen to the end of the run.
    run_tiers: TierStats,
}

#[derive(Serialize)]
struct RestartReport {
    command: &'static str,
    version: &'static str,
    machine: Machine,
    dram_bytes: u64,
    nvm_bytes: u64,
    data_bytes: u64,
    interval_ms: u64,
    duration_secs: f64,
    steady_window_secs: f64,
    peak_fraction: f64,
    /// Runs per series (one: the timeline is a single run's).
    runs: usize,
    setup: Setup,
    notes: Vec<String>,
    series: Vec<SeriesReport>,
}

pub fn run(args: RestartArgs) -> Result<()> {
    // 1. Check everything before the first run.
    let subjects = check(&args)?;
    let setup = workload_setup(&args.engine)?;
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    // 2. One run per series.
    let progress = Progress::new(!args.quiet);
    let mut reports = Vec::new();
    for (i, &subject) in subjects.iter().enumerate() {
        if !args.quiet {
            progress.println(&format!("[{}/{}] {}", i + 1, subjects.len(), subject.label()));
        }
        let report = run_series(&args, &setup, subject, &progress).with_context(|| subject.name().to_string())?;
        reports.push(report);
    }
    progress.finish();

    // 3. Report.
    let notes = notes(&args, &setup, &reports);
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
    let text = render_text(&report);
    write_outputs(&args.out, "restart", &text, &report, &[("restart.svg".into(), chart(&report))])?;
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

/// The lookups: the built-in `ro` (one random field per lookup) with uniform requests,
/// unless `--set requestdistribution=…` says otherwise. Only reads are allowed.
fn workload_setup(engine: &EngineArgs) -> Result<Setup> {
    let mut setup = engine.setup("ro")?;
    let chosen =
        engine.overrides.iter().any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == "requestdistribution"));
    if !chosen {
        setup.workload.set("requestdistribution", "uniform")?;
    }
    let mix = setup.workload.mix();
    if mix.read < 1.0 {
        bail!(
            "restart-bench runs lookups only (Figure 17), and --set gives a mix of {:.0}% reads; leave the proportions as they are",
            100.0 * mix.read
        );
    }
    Ok(setup)
}

/// Create, load, close; reopen, run.
fn run_series(args: &RestartArgs, setup: &Setup, subject: Subject, progress: &Progress) -> Result<SeriesReport> {
    // 1. A fresh engine whose files go away with `files`, on every path.
    let mut engine_args = args.engine.clone();
    engine_args.techniques = Some(subject.techniques());
    let tag = format!("restart-{}", subject.name());
    let mut cfg = engine_args.arch_config(setup, subject.arch(), args.dram, args.nvm, &tag)?;
    let files = Cleanup::new(cfg.files());
    progress.set_prefix(subject.name());
    let engine = Engine::open(&cfg).with_context(|| format!("creating {}", subject.arch()))?;

    // 2. Load, then close cleanly.
    let driver = engine_args.driver_config(setup, Some(args.data));
    let load =
        ycsb_driver::load(&engine, &setup.workload, &driver, &|p, d, t| progress.update(p, d, t)).context("loading")?;
    progress.update("close", 0, 1);
    let closing = Instant::now();
    engine.close().context("closing (checkpoint)")?;
    let close_secs = closing.elapsed().as_secs_f64();

    // 3. Reopen the same files and run.
    cfg.open_existing = true;
    let run = restart(&cfg, &load.workload, setup, args.interval_ms, progress)?;
    drop(files);
    Ok(summarise(subject, &cfg, load, close_secs, run))
}

/// What [`restart`] measured.
struct Restarted {
    dram_frames: usize,
    nvm_frames: usize,
    open_ns: u64,
    nvm_restart: Option<RestartInfo>,
    open_tiers: TierStats,
    phase: RunPhase,
}

/// Reopens the engine of `cfg` and runs the lookups on it.
fn restart(
    cfg: &ArchConfig,
    spec: &YcsbSpec,
    setup: &Setup,
    interval_ms: u64,
    progress: &Progress,
) -> Result<Restarted> {
    progress.update("reopen", 0, 1);
    let rate = clock::rate();
    let t0 = clock::ticks();
    let virtual0_ps = clock::virtual_now_ps();
    let engine = Engine::open(cfg).with_context(|| format!("reopening {}", cfg.arch))?;
    let open_ns = wall_ns(rate, t0) + (clock::virtual_now_ps() - virtual0_ps) / 1000;
    let open_tiers = engine.stats();
    let (dram_frames, nvm_frames) = engine.frames();
    let nvm_restart = engine.restart_info();
    let phase = engine
        .visit(Lookups {
            engine: &engine,
            spec,
            threads: setup.threads,
            seed: setup.seed,
            t0,
            virtual0_ps,
            duration_ns: (setup.duration_secs.expect("checked: above 0") * 1e9) as u64,
            interval_ns: interval_ms * 1_000_000,
            before: &open_tiers,
            progress,
        })
        .context("lookups after the restart")?;
    Ok(Restarted { dram_frames, nvm_frames, open_ns, nvm_restart, open_tiers, phase })
}

/// Nanoseconds of wall time since TSC reading `t0`.
fn wall_ns(rate: clock::TscRate, t0: u64) -> u64 {
    rate.ns_from_ticks(clock::ticks().saturating_sub(t0)) as u64
}

/// The lookups after the reopen, run through [`Engine::visit`].
struct Lookups<'a> {
    engine: &'a Engine,
    spec: &'a YcsbSpec,
    threads: u32,
    seed: u64,
    /// TSC reading and this thread's virtual clock when the reopen began (t = 0).
    t0: u64,
    virtual0_ps: u64,
    duration_ns: u64,
    interval_ns: u64,
    /// Counters when the reopen returned.
    before: &'a TierStats,
    progress: &'a Progress,
}

/// What the lookups did.
struct RunPhase {
    interval_ns: u64,
    ready_ns: u64,
    end_ns: u64,
    buckets: Vec<u64>,
    first_op_ns: Option<u64>,
    ops: u64,
    not_found: u64,
    tiers: TierStats,
}

/// One thread's lookups.
struct ThreadRun {
    buckets: Vec<u64>,
    first_op_ns: Option<u64>,
    ops: u64,
    not_found: u64,
}

impl SourceVisitor for Lookups<'_> {
    type Output = Result<RunPhase>;

    fn visit<S: PageSource>(self, source: &S) -> Result<RunPhase> {
        let rate = clock::rate();
        // 1. Open the table; the lookups start here.
        let tree = Catalog::open_tree(source, TABLE).context("opening the table")?;
        let keyspace = KeySpace::new(self.spec);
        // Device time modelled on this thread since t = 0 (zero unless in `model` mode).
        let opener_virtual_ns = (clock::virtual_now_ps() - self.virtual0_ps) / 1000;
        let ready_ns = wall_ns(rate, self.t0) + opener_virtual_ns;
        // `--duration` from here, to the end of its bucket.
        let buckets = (ready_ns + self.duration_ns).div_ceil(self.interval_ns);
        let end_ns = buckets * self.interval_ns;
        if buckets > BUCKETS_MAX {
            bail!(
                "the reopen took {:.3} s; with --interval-ms {} the timeline needs {buckets} buckets, more than {BUCKETS_MAX}",
                ready_ns as f64 * 1e-9,
                self.interval_ns / 1_000_000
            );
        }
        let buckets = buckets as usize;

        // 2. Lookups on every thread until its clock reaches the end.
        let failed = AtomicBool::new(false);
        let clock_ns = AtomicU64::new(ready_ns); // thread 0's clock, for the progress bar
        let total_ms = self.duration_ns / 1_000_000;
        let results: Vec<Result<ThreadRun>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..self.threads)
                .map(|thread| {
                    let (tree, keyspace, failed, clock_ns, this) = (&tree, &keyspace, &failed, &clock_ns, &self);
                    s.spawn(move || -> Result<ThreadRun> {
                        let virtual_start_ps = clock::virtual_now_ps();
                        let now_ns = || {
                            wall_ns(rate, this.t0)
                                + opener_virtual_ns
                                + (clock::virtual_now_ps() - virtual_start_ps) / 1000
                        };
                        let r = lookups(this, tree, keyspace, thread, buckets, end_ns, now_ns, failed, clock_ns);
                        if r.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                })
                .collect();
            while !workers.iter().all(|w| w.is_finished()) {
                let done_ms = clock_ns.load(Ordering::Relaxed).saturating_sub(ready_ns) / 1_000_000;
                self.progress.update("run", done_ms.min(total_ms), total_ms);
                std::thread::sleep(PROGRESS_PERIOD);
            }
            self.progress.update("run", total_ms, total_ms);
            workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a lookup thread panicked")))).collect()
        });
        let tiers = self.engine.stats().since(self.before);
        let results: Vec<ThreadRun> = results.into_iter().collect::<Result<_>>()?;

        // 3. Sum the threads.
        let mut sum = vec![0u64; buckets];
        for r in &results {
            assert_eq!(r.buckets.len(), buckets, "a thread's timeline has another length");
            for (s, b) in sum.iter_mut().zip(&r.buckets) {
                *s += b;
            }
        }
        let ops = results.iter().map(|r| r.ops).sum();
        assert_eq!(sum.iter().sum::<u64>(), ops, "every counted lookup is in one bucket");
        Ok(RunPhase {
            interval_ns: self.interval_ns,
            ready_ns,
            end_ns,
            buckets: sum,
            first_op_ns: results.iter().filter_map(|r| r.first_op_ns).min(),
            ops,
            not_found: results.iter().map(|r| r.not_found).sum(),
            tiers,
        })
    }
}

/// One thread: lookups until one completes at or after `end_ns` on `now_ns`, or another
/// thread failed.
#[allow(clippy::too_many_arguments)]
fn lookups<S: PageSource>(
    job: &Lookups<'_>,
    tree: &tierdb::BTree<'_, S>,
    keyspace: &KeySpace,
    thread: u32,
    buckets: usize,
    end_ns: u64,
    now_ns: impl Fn() -> u64,
    failed: &AtomicBool,
    clock_ns: &AtomicU64,
) -> Result<ThreadRun> {
    let spec = job.spec;
    let interval_ns = job.interval_ns;
    let mut generator = OpGenerator::new(spec, keyspace, job.seed, thread);
    let mut rng = value_rng(job.seed, thread);
    let (mut key, mut value, mut out) = (Vec::new(), Vec::new(), vec![0u8; spec.record_length_bytes()]);
    let mut run = ThreadRun { buckets: vec![0; buckets], first_op_ns: None, ops: 0, not_found: 0 };
    while !failed.load(Ordering::Relaxed) {
        let op = generator.next();
        let found = ycsb_driver::execute(tree, spec, keyspace, op, &mut key, &mut value, &mut out, &mut rng)?;
        let now = now_ns();
        if now >= end_ns {
            break;
        }
        run.buckets[(now / interval_ns) as usize] += 1;
        run.first_op_ns.get_or_insert(now);
        run.ops += 1;
        run.not_found += u64::from(!found);
        if thread == 0 && run.ops.is_multiple_of(PROGRESS_EVERY_OPS) {
            clock_ns.store(now, Ordering::Relaxed);
        }
    }
    Ok(run)
}

fn summarise(subject: Subject, cfg: &ArchConfig, load: Loaded, close_secs: f64, r: Restarted) -> SeriesReport {
    let phase = r.phase;
    let secs = |ns: u64| ns as f64 * 1e-9;
    let timeline = Timeline::new(phase.buckets, phase.interval_ns);
    let steady = timeline.steady(STEADY_WINDOW_SECS.min(secs(phase.end_ns - phase.ready_ns)));
    let time_to_peak = steady.filter(|&s| s > 0.0).and_then(|s| timeline.reached_at(PEAK_FRACTION * s));
    let b = &phase.tiers.buffer;
    SeriesReport {
        name: subject,
        label: subject.label(),
        arch: cfg.arch,
        techniques: cfg.techniques.unwrap_or(cfg.arch.default_techniques()),
        policy: cfg.policy.clone().unwrap_or_else(|| cfg.arch.default_policy().into()),
        dram_frames: r.dram_frames,
        nvm_frames: r.nvm_frames,
        load,
        close_secs,
        open_secs: secs(r.open_ns),
        ready_secs: secs(phase.ready_ns),
        first_op_secs: phase.first_op_ns.map(secs),
        nvm_restart: r.nvm_restart,
        first_interval_ops_per_sec: timeline.ops_per_sec.first().copied().unwrap_or(0.0),
        steady_ops_per_sec: steady,
        time_to_peak_secs: time_to_peak,
        timeline,
        ops: phase.ops,
        not_found: phase.not_found,
        dram_hits: b.dram_hits,
        nvm_hits: b.nvm_hits,
        ssd_reads: b.ssd_reads,
        open_tiers: r.open_tiers,
        run_tiers: phase.tiers,
    }
}

/// What a reader must know besides the table.
fn notes(args: &RestartArgs, setup: &Setup, series: &[SeriesReport]) -> Vec<String> {
    let mut notes = Vec::new();
    notes.push("FPTree, the paper's fourth line in Figure 17, is not part of tierdb".into());
    notes.push(format!(
        "t = 0 is the reopen's start: the timeline's first stretch without lookups is the reopen and the table's opening; steady state = median bucket of the last {STEADY_WINDOW_SECS} s (the whole run if shorter); time to peak = end of the first bucket at {:.0}% of it; one run per architecture",
        100.0 * PEAK_FRACTION
    ));
    match setup.mode {
        EmulationMode::Model => notes.push(
            "mode model: times and throughput are modelled (wall time plus the device time modelled on each thread); the NVM scan time is wall time".into(),
        ),
        EmulationMode::Off => {
            notes.push("mode off: device latencies are not emulated, so SSD and NVM cost only this machine's time".into())
        }
        _ => {}
    }
    let distribution = setup.workload.get("requestdistribution").unwrap_or_default();
    if distribution != "uniform" {
        notes.push(format!("requests are {distribution} (--set), not uniform as in Figure 17"));
    }
    if let Some(l) = series.iter().find(|l| l.load.data_bytes > args.dram.bytes()) {
        notes.push(format!(
            "the data ({}) is larger than DRAM ({}): unlike Figure 17 the workload does not fit the DRAM buffer pool",
            ByteSize(l.load.data_bytes),
            args.dram
        ));
    }
    if args.engine.buffered_io {
        notes.push("--buffered-io: ssd-bm's reads after the restart may come from the OS page cache".into());
    }
    for l in series {
        if let Some(info) = &l.nvm_restart {
            if let Some(why) = &info.formatted_because {
                notes.push(format!("{}: the NVM pool was formatted at the reopen, as {why}", l.label));
            }
            let page = setup.page_size_bytes as u64;
            let data_pages = l.load.data_bytes / page;
            if (info.pages_reused as u64) < data_pages {
                notes.push(format!(
                    "{}: {} of the table's {data_pages} pages came back from NVM; the rest are read from SSD",
                    l.label, info.pages_reused
                ));
            }
            if !info.frames_cleared.is_empty() {
                notes.push(format!(
                    "{}: the reopen cleared {} NVM frame header(s)",
                    l.label,
                    info.frames_cleared.len()
                ));
            }
        }
        if l.not_found > 0 {
            notes.push(format!("{}: {} lookups did not find their key", l.label, l.not_found));
        }
        if l.ops == 0 {
            notes.push(format!("{}: no lookup completed before the end", l.label));
        }
    }
    notes
}

fn describe(r: &RestartReport) -> String {
    let s = &r.setup;
    format!(
        "{} ({} CPUs) · workload ro ({}) · mode {} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · data {} · page {} · {} thread(s) · seed {} · {} s after the restart in {} ms buckets · CPU-cache model for in-place NVM reads {}",
        r.machine.cpu,
        r.machine.logical_cpus,
        s.workload.get("requestdistribution").unwrap_or_default(),
        s.mode,
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        ByteSize(r.dram_bytes),
        ByteSize(r.nvm_bytes),
        ByteSize(r.data_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        r.duration_secs,
        r.interval_ms,
        ByteSize(s.cpu_cache_model_bytes),
    )
}

/// Seconds as ms below one second.
fn duration(secs: f64) -> String {
    if secs < 1.0 { format!("{:.1} ms", secs * 1e3) } else { format!("{secs:.2} s") }
}

fn dash<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

fn render_text(r: &RestartReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb restart-bench: {}", describe(r));
    let mut t = Table::new();
    t.set_header([
        "architecture".to_string(),
        "reopen".to_string(),
        "NVM scan".to_string(),
        "first lookup".to_string(),
        format!("first {} ms ops/s", r.interval_ms),
        format!("{:.0}% of peak at", 100.0 * PEAK_FRACTION),
        "steady ops/s".to_string(),
        "SSD reads".to_string(),
        "NVM hits".to_string(),
    ]);
    for l in &r.series {
        let scan = l.nvm_restart.as_ref().map(|i| match &i.formatted_because {
            Some(_) => "formatted".to_string(),
            None => format!("{}, {:.1} GB/s, {} pages", duration(i.scan_secs), i.frames_gb_per_sec, i.pages_reused),
        });
        t.add_row([
            l.label.to_string(),
            duration(l.open_secs),
            dash(scan, |s| s),
            dash(l.first_op_secs, duration),
            fmt_rate(l.first_interval_ops_per_sec),
            dash(l.time_to_peak_secs, duration),
            dash(l.steady_ops_per_sec, fmt_rate),
            l.ssd_reads.to_string(),
            l.nvm_hits.to_string(),
        ]);
    }
    let _ = writeln!(
        out,
        "\nFigure 17: lookups right after a clean restart (times from the reopen's start; counters from the reopen's end to the run's end)\n{t}"
    );
    write_notes(&mut out, &r.notes);
    out
}

fn chart(r: &RestartReport) -> Chart {
    let mut c = Chart::new("Figure 17: throughput after a clean restart");
    c.subtitle = describe(r);
    c.x_label = "seconds since the restart began".into();
    c.y_label = if r.setup.mode == EmulationMode::Model { "modelled lookups / s".into() } else { "lookups / s".into() };
    c.legend = LegendPosition::LowerRight;
    for l in &r.series {
        let t = &l.timeline;
        let points = (0..t.ops.len())
            .map(|i| {
                let (start, end) = t.span_secs(i);
                ((start + end) / 2.0, t.ops_per_sec[i])
            })
            .collect();
        c.series.push(Series { name: l.label.into(), points });
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn buckets_are_whole_intervals_from_zero() {
        let t = Timeline::new(vec![0, 5, 10, 1], 100 * MS);
        assert_eq!(t.ops_per_sec, vec![0.0, 50.0, 100.0, 10.0]);
        let (start, end) = t.span_secs(3);
        assert!(close(start, 0.3) && close(end, 0.4) && close(t.end_secs, 0.4), "{start} {end} {}", t.end_secs);
    }

    #[test]
    fn steady_state_is_the_median_of_the_last_window() {
        // 1.2 s in 100 ms buckets; the last second is buckets 2..=11.
        let ops = vec![0, 10, 20, 30, 40, 50, 100, 100, 100, 90, 100, 100];
        let t = Timeline::new(ops, 100 * MS);
        // 200, 300, 400, 500, 900, 1000 × 5: the upper median of ten is 1000.
        assert_eq!(t.steady(1.0), Some(1000.0));
        // Without the last two buckets the window holds 200 … 1000 and the median is 900.
        let t = Timeline::new(vec![0, 10, 20, 30, 40, 50, 100, 100, 100, 90], 100 * MS);
        assert_eq!(t.steady(0.8), Some(900.0));
        // 90% of 900: first reached by bucket 6, which ends at 0.7 s.
        assert!(t.reached_at(0.9 * 900.0).is_some_and(|s| close(s, 0.7)));
        // A window shorter than a bucket: the last bucket.
        let t = Timeline::new(vec![3, 7], 100 * MS);
        assert_eq!(t.steady(0.01), Some(70.0));
        assert_eq!(t.reached_at(1e9), None);
    }

    #[test]
    fn lines_run_what_they_say() {
        assert_eq!(
            Subject::ALL.map(Subject::arch),
            [Architecture::SsdBm, Architecture::BasicNvmBm, Architecture::ThreeTier, Architecture::NvmDirect]
        );
        assert_eq!(Subject::BasicNvmBm.techniques(), Techniques::NONE);
        assert_eq!(Subject::ThreeTier.techniques(), Techniques::ALL);
    }
}
