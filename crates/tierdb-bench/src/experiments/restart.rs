//! The restart experiment behind `tierdb restart-bench` (Figure 17 of van Renen et al.,
//! SIGMOD 2018): per series, create an engine, load, close cleanly, reopen the same
//! files and count the lookups that complete in each bucket of time from the reopen
//! on ([`run_series`], every series: [`run_all`]); the lookups' setup
//! ([`workload_setup`]); the timeline's summary ([`Timeline`], [`SeriesReport`]).
//!
//! Invariants: a timeline has at least one bucket, every bucket is one interval long,
//! from t = 0 (the reopen's start). Concurrency: a series' lookup threads are joined
//! before it returns; series run one after the other.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use tierdb::arch::{ArchConfig, Architecture, Engine, SourceVisitor};
use tierdb::buffer::{RestartInfo, Techniques, TierStats};
use tierdb::device::clock;
use tierdb::{ByteSize, Catalog, PageSource};
use tierdb_workload::{KeySpace, OpGenerator, YcsbSpec, value_rng};

use crate::drivers::ycsb::{self as ycsb_driver, Loaded, TABLE};
use crate::harness::{Cleanup, EngineArgs, Middle, Progress, Setup, median};

/// Buckets of one timeline, the reopen included.
pub const BUCKETS_MAX: u64 = 20_000;
/// The steady state is the median bucket of the run's last this many seconds (the whole
/// run if it is shorter).
pub const STEADY_WINDOW_SECS: f64 = 1.0;
/// "Peak" is reached at the first bucket with this fraction of the steady state.
pub const PEAK_FRACTION: f64 = 0.9;
/// Lookups between two updates of the progress bar's clock, per thread.
const PROGRESS_EVERY_OPS: u64 = 1 << 10;
const PROGRESS_PERIOD: Duration = Duration::from_millis(50);

const _: () = assert!(PEAK_FRACTION > 0.0 && PEAK_FRACTION <= 1.0);

/// One series of the figure: an architecture with its techniques.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Subject {
    SsdBm,
    BasicNvmBm,
    ThreeTier,
    NvmDirect,
}

impl Subject {
    pub const ALL: [Subject; 4] = [Subject::SsdBm, Subject::BasicNvmBm, Subject::ThreeTier, Subject::NvmDirect];

    pub fn name(self) -> &'static str {
        match self {
            Subject::SsdBm => "ssd-bm",
            Subject::BasicNvmBm => "basic-nvm-bm",
            Subject::ThreeTier => "three-tier",
            Subject::NvmDirect => "nvm-direct",
        }
    }

    /// What the report and the plot call it: what actually ran.
    pub fn label(self) -> &'static str {
        match self {
            Subject::SsdBm => "ssd-bm",
            Subject::BasicNvmBm => "basic-nvm-bm",
            Subject::ThreeTier => "three-tier (all techniques)",
            Subject::NvmDirect => "nvm-direct",
        }
    }

    pub fn arch(self) -> Architecture {
        match self {
            Subject::SsdBm => Architecture::SsdBm,
            Subject::BasicNvmBm => Architecture::BasicNvmBm,
            Subject::ThreeTier => Architecture::ThreeTier,
            Subject::NvmDirect => Architecture::NvmDirect,
        }
    }

    pub fn techniques(self) -> Techniques {
        match self {
            Subject::SsdBm | Subject::BasicNvmBm | Subject::NvmDirect => Techniques::NONE,
            Subject::ThreeTier => Techniques::ALL,
        }
    }
}

/// Completed lookups per bucket, from t = 0 (the reopen's start). Every bucket is
/// `interval_secs` long: the run ends at the end of a bucket.
#[derive(Serialize)]
pub struct Timeline {
    pub interval_secs: f64,
    /// The end of the last bucket: the reopen, the table's opening and `--duration`,
    /// rounded up to a whole bucket.
    pub end_secs: f64,
    pub ops: Vec<u64>,
    /// `ops` over the bucket's length, modelled in `model` mode.
    pub ops_per_sec: Vec<f64>,
}

impl Timeline {
    pub fn new(ops: Vec<u64>, interval_ns: u64) -> Timeline {
        assert!(!ops.is_empty() && interval_ns > 0, "{} buckets of {interval_ns} ns", ops.len());
        let interval_secs = interval_ns as f64 * 1e-9;
        let ops_per_sec = ops.iter().map(|&n| n as f64 / interval_secs).collect();
        Timeline { interval_secs, end_secs: ops.len() as f64 * interval_secs, ops, ops_per_sec }
    }

    /// Start and end of bucket `i`, seconds.
    pub fn span_secs(&self, i: usize) -> (f64, f64) {
        debug_assert!(i < self.ops.len(), "bucket {i} of {}", self.ops.len());
        (i as f64 * self.interval_secs, (i + 1) as f64 * self.interval_secs)
    }

    /// The median throughput of the buckets that start in the last `window_secs`, or of
    /// the last bucket if the window is shorter than one.
    pub fn steady(&self, window_secs: f64) -> Option<f64> {
        let from = self.end_secs - window_secs;
        // Bucket starts are multiples of the interval; the slack absorbs rounding.
        let first = (0..self.ops.len()).find(|&i| self.span_secs(i).0 >= from - self.interval_secs * 1e-6);
        let first = first.unwrap_or(self.ops.len() - 1).min(self.ops.len() - 1);
        median(self.ops_per_sec[first..].iter().copied(), Middle::Upper)
    }

    /// The end of the first bucket whose throughput reaches `target`.
    pub fn reached_at(&self, target: f64) -> Option<f64> {
        self.ops_per_sec.iter().position(|&r| r >= target).map(|i| self.span_secs(i).1)
    }
}

/// One series' run.
#[derive(Serialize)]
pub struct SeriesReport {
    pub name: Subject,
    pub label: &'static str,
    /// The architecture that ran, with its techniques and policy.
    pub arch: Architecture,
    pub techniques: Techniques,
    pub policy: String,
    pub dram_frames: usize,
    pub nvm_frames: usize,
    /// The load before the restart.
    pub load: Loaded,
    /// The checkpoint that closed the loaded engine (wall time).
    pub close_secs: f64,
    /// The reopen: `Engine::open` on the same files (modelled in `model` mode).
    pub open_secs: f64,
    /// The reopen and the table's opening: when the lookups start.
    pub ready_secs: f64,
    /// When the first lookup completed, on any thread.
    pub first_op_secs: Option<f64>,
    /// What the reopen found in NVM: frames scanned, pages reused, scan time (wall).
    /// `None` without NVM. (Its `frames_gb_per_sec` is the frames' bytes over the scan
    /// time, a figure no scan moves: only the headers are read.)
    pub nvm_restart: Option<RestartInfo>,
    /// Frame headers read per second by the reopen's scan: frames over scan time, the
    /// scan's real work (the paper's Figure 17 discussion reports the table's rebuild,
    /// not bytes of pages); for `nvm-direct`, allocation-map entries (one byte per page
    /// slot) per second. `None` without NVM, a formatted pool, or a zero scan time.
    pub scan_headers_per_sec: Option<f64>,
    pub timeline: Timeline,
    pub ops: u64,
    /// Lookups of keys the table did not have (0 unless something is wrong).
    pub not_found: u64,
    pub first_interval_ops_per_sec: f64,
    /// Median bucket of the run's last `steady_window_secs` (the whole run if shorter).
    pub steady_ops_per_sec: Option<f64>,
    /// When a bucket first reached `peak_fraction` of the steady state.
    pub time_to_peak_secs: Option<f64>,
    /// From `run_tiers`.
    pub dram_hits: u64,
    pub nvm_hits: u64,
    pub ssd_reads: u64,
    /// Counters of the reopen itself (superblock, free-page list, NVM frame headers).
    pub open_tiers: TierStats,
    /// Counters from the end of the reopen to the end of the run.
    pub run_tiers: TierStats,
}

/// Frame headers the reopen's scan read per second; none for a formatted pool or a scan
/// too short to time.
pub fn headers_per_sec(i: &RestartInfo) -> Option<f64> {
    (i.formatted_because.is_none() && i.scan_secs > 0.0).then(|| i.nvm_frames as f64 / i.scan_secs)
}

/// What every series of one invocation shares: the engine options and the sizes.
pub struct Plan<'a> {
    pub engine: &'a EngineArgs,
    /// DRAM of every architecture, NVM of the NVM architectures.
    pub dram: ByteSize,
    pub nvm: ByteSize,
    /// Size of the B+-tree after loading.
    pub data: ByteSize,
    /// Width of a timeline bucket, milliseconds.
    pub interval_ms: u64,
}

/// The lookups: the built-in `ro` (one random field per lookup) with uniform requests,
/// unless `--set requestdistribution=…` says otherwise. Only reads are allowed.
///
/// # Errors
/// A bad engine option or workload setting; a mix with anything but reads.
pub fn workload_setup(engine: &EngineArgs) -> Result<Setup> {
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

/// One run per series, in order, a progress line before each unless `quiet`.
///
/// # Errors
/// As [`run_series`], naming the series.
pub fn run_all(
    plan: &Plan<'_>,
    setup: &Setup,
    subjects: &[Subject],
    quiet: bool,
    progress: &Progress,
) -> Result<Vec<SeriesReport>> {
    let mut reports = Vec::new();
    for (i, &subject) in subjects.iter().enumerate() {
        if !quiet {
            progress.println(&format!("[{}/{}] {}", i + 1, subjects.len(), subject.label()));
        }
        let report = run_series(plan, setup, subject, progress).with_context(|| subject.name().to_string())?;
        reports.push(report);
    }
    progress.finish();
    Ok(reports)
}

/// Create, load, close; reopen, run.
///
/// # Errors
/// Opening, loading, closing or reopening the engine; a failed lookup.
pub fn run_series(plan: &Plan<'_>, setup: &Setup, subject: Subject, progress: &Progress) -> Result<SeriesReport> {
    // 1. A fresh engine whose files go away with `files`, on every path.
    let mut engine_args = plan.engine.clone();
    engine_args.techniques = Some(subject.techniques());
    let tag = format!("restart-{}", subject.name());
    let mut cfg = engine_args.arch_config(setup, subject.arch(), plan.dram, plan.nvm, Some(plan.data), &tag)?;
    let files = Cleanup::new(cfg.files());
    progress.set_prefix(subject.name());
    let engine = Engine::open(&cfg).with_context(|| format!("creating {}", subject.arch()))?;

    // 2. Load, then close cleanly.
    let driver = engine_args.driver_config(setup, Some(plan.data));
    let load =
        ycsb_driver::load(&engine, &setup.workload, &driver, &|p, d, t| progress.update(p, d, t)).context("loading")?;
    progress.update("close", 0, 1);
    let closing = Instant::now();
    engine.close().context("closing (checkpoint)")?;
    let close_secs = closing.elapsed().as_secs_f64();

    // 3. Reopen the same files and run.
    cfg.open_existing = true;
    let run = restart(&cfg, &load.workload, setup, plan.interval_ms, progress)?;
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
        scan_headers_per_sec: r.nvm_restart.as_ref().and_then(headers_per_sec),
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
