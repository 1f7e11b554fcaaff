//! The warm-up and the measured phase on N threads ([`run_phases`]) for any
//! [`Executor`], and the report's figures from their results ([`summary`]).

use super::*;

pub(super) struct Runner<'a> {
    pub(super) engine: &'a Engine,
    pub(super) spec: &'a YcsbSpec,
    pub(super) cfg: &'a DriverConfig,
    pub(super) progress: ProgressFn<'a>,
}

pub(super) const PHASE_WARMUP: u8 = 0;
pub(super) const PHASE_MEASURE: u8 = 1;
pub(super) const PHASE_STOP: u8 = 2;

/// What one operation did.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// The operation found its key (inserts and scans that saw a record count as found).
    pub found: bool,
    /// TSC ticks of the commit of a transaction that changed something; `None` when
    /// nothing was committed (raw trees, read-only transactions).
    pub commit_ticks: Option<u64>,
}

/// Runs a page provider until the flag is set ([`BufferManager::provide_pages`](tierdb::buffer::BufferManager::provide_pages)).
pub type ProviderFn<'a> = dyn Fn(&AtomicBool) -> Result<ProviderReport> + Sync + 'a;

/// The page provider of `engine` if `cfg` asks for one.
pub fn provider_of<'a>(
    engine: &'a Engine,
    cfg: &DriverConfig,
) -> Option<impl Fn(&AtomicBool) -> Result<ProviderReport> + Sync + 'a> {
    match engine {
        Engine::Buffer(b) if cfg.page_provider => {
            Some(move |stop: &AtomicBool| b.provide_pages(stop).context("the page provider"))
        }
        _ => None,
    }
}

/// Runs one worker thread's operations (the tree directly, or a database's
/// transactions).
pub trait Executor {
    /// Runs `op`.
    ///
    /// # Errors
    /// The engine's errors; they stop the run.
    fn execute(&mut self, op: Op) -> Result<Done>;

    /// Reads ahead what `ops`, about to run in this order, need (a batch of
    /// [`DriverConfig::batch`] operations). The default reads nothing.
    ///
    /// # Errors
    /// The engine's; they stop the run.
    fn prefetch(&mut self, ops: &[Op]) -> Result<()> {
        let _ = ops;
        Ok(())
    }
}

/// What one worker thread measured.
pub struct ThreadResult {
    pub ops: u64,
    /// Wall seconds from the thread's first measured operation to its last.
    pub measured_secs: f64,
    /// The thread's CPU seconds over the same span.
    pub cpu_secs: f64,
    pub not_found: u64,
    pub virtual_ps: u64,
    /// Per operation kind.
    pub hist: Vec<Histogram<u64>>,
    /// Commits of transactions that changed something.
    pub commits: Histogram<u64>,
}

/// The warm-up and measured phases: each thread's results, the phases' seconds, and a
/// snapshot of the counters taken before and after the measured phase.
pub struct Measured<T> {
    pub results: Vec<ThreadResult>,
    pub warmup_secs: f64,
    pub run_secs: f64,
    pub before: T,
    pub after: T,
    /// What the page provider did, if one ran.
    pub provider: Option<ProviderReport>,
}

impl SourceVisitor for Runner<'_> {
    type Output = Result<YcsbReport>;

    fn visit<S: PageSource>(self, source: &S) -> Result<YcsbReport> {
        let Runner { engine, spec, cfg, progress } = self;
        // 1. Load, in key order.
        let (tree, records, load_secs) = load_table(engine, source, spec, cfg, progress)?;
        let keyspace = KeySpace::new(spec);
        let data_bytes = engine.pages_in_use() * engine.page_size() as u64;

        // 2 + 3. Warm-up and run on N threads.
        // Wear counters (when on) count the measured run only: they restart with the
        // snapshot taken right before it (the first one).
        let first = std::sync::atomic::AtomicBool::new(true);
        let snapshot = || {
            let is_first = first.swap(false, Ordering::Relaxed);
            if is_first && let Some(r) = engine.nvm_region() {
                r.reset_wear();
            }
            // A recorded trace marks where the measured run starts (docs/sim.md).
            if is_first && let Engine::Buffer(b) = engine {
                b.record_marker("measure");
            }
            engine.stats()
        };
        let provider = provider_of(engine, cfg);
        let provider = provider.as_ref().map(|p| p as &ProviderFn<'_>);
        let m = run_phases(
            spec,
            &keyspace,
            cfg,
            progress,
            &snapshot,
            &|t| TreeOps::new(&tree, spec, &keyspace, cfg.seed, t),
            provider,
        )?;
        let tiers = m.after.since(&m.before);
        Ok(summary(spec, cfg, (records, load_secs, data_bytes), engine.page_size(), &m, tiers))
    }
}

/// Runs the warm-up and the measured phase on `cfg.threads` threads, each with the
/// executor `make(thread)` makes; `snapshot` is taken right before and right after the
/// measured phase.
///
/// # Errors
/// The first error of a worker (the others stop at once).
pub fn run_phases<X: Executor, T>(
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
    snapshot: &(dyn Fn() -> T + Sync),
    make: &(dyn Fn(u32) -> X + Sync),
    provider: Option<&ProviderFn<'_>>,
) -> Result<Measured<T>> {
    let phase = AtomicU8::new(PHASE_WARMUP);
    let remaining = AtomicU64::new(spec.operation_count());
    let failed = AtomicBool::new(false);
    let counted = cfg.duration.is_none();
    let stop_provider = AtomicBool::new(false);
    // `model` mode: the virtual clock is per thread, and an NVM write (the load's)
    // makes reads slower until its end in the writer's clock. The threads below start
    // their clocks where this one is (after the load), so that they do not take the
    // load's writes as still running: with a fresh clock at zero, a process's later
    // runs, after earlier loads had moved this thread's clock on, saw every read of
    // their run as interfered.
    let loaded_at_ps = clock::virtual_now_ps();
    let (results, warmup_secs, run_secs, before, after, provided) = std::thread::scope(|s| {
        let provider = provider.map(|p| {
            let stop = &stop_provider;
            s.spawn(move || {
                clock::virtual_advance_ps(loaded_at_ps);
                p(stop)
            })
        });
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let (phase, remaining, failed) = (&phase, &remaining, &failed);
                s.spawn(move || -> Result<ThreadResult> {
                    clock::virtual_advance_ps(loaded_at_ps);
                    let r = worker(make(t), spec, keyspace, cfg, t, phase, counted.then_some(remaining));
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                        phase.store(PHASE_STOP, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let warm = Instant::now();
        sleep_with_progress(cfg.warmup, "warm-up", progress, &failed);
        let warmup_secs = warm.elapsed().as_secs_f64();
        let before = snapshot();
        let start = Instant::now();
        phase.store(PHASE_MEASURE, Ordering::Release);
        match cfg.duration {
            Some(d) => sleep_with_progress(d, "run", progress, &failed),
            None => {
                let total = spec.operation_count();
                while remaining.load(Ordering::Relaxed) > 0 && !failed.load(Ordering::Relaxed) {
                    progress("run", total - remaining.load(Ordering::Relaxed), total);
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        phase.store(PHASE_STOP, Ordering::Release);
        let run_secs = start.elapsed().as_secs_f64();
        let after = snapshot();
        let results: Vec<Result<ThreadResult>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a worker thread panicked"))))
            .collect();
        stop_provider.store(true, Ordering::Release);
        let provided = provider.map(|p| {
            p.thread().unpark();
            p.join().unwrap_or_else(|_| Err(anyhow!("the page provider's thread panicked")))
        });
        (results, warmup_secs, run_secs, before, after, provided)
    });
    let results: Vec<ThreadResult> = results.into_iter().collect::<Result<_>>()?;
    let provider = provided.transpose()?;
    Ok(Measured { results, warmup_secs, run_secs, before, after, provider })
}

/// The report of a run: `(records, load seconds, data bytes)` of the load, the measured
/// phases and the tier counters over the measured one.
pub fn summary<T>(
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    (records, load_secs, data_bytes): (u64, f64, u64),
    page_size: usize,
    m: &Measured<T>,
    tiers: TierStats,
) -> YcsbReport {
    let tsc = clock::rate();
    let (results, run_secs) = (&m.results, m.run_secs);
    let ops: u64 = results.iter().map(|r| r.ops).sum();
    let not_found = results.iter().map(|r| r.not_found).sum();
    let modelled_device_secs = results.iter().map(|r| r.virtual_ps as f64 * 1e-12).sum::<f64>();
    let modelled = (cfg.model || results.iter().any(|r| r.virtual_ps > 0))
        .then(|| cfg.model_clock.throughput(results, |_| run_secs));
    let mut latency = Vec::new();
    let mut all = new_histogram();
    for kind in OpKind::ALL {
        let mut h = new_histogram();
        for r in results {
            h.add(&r.hist[kind as usize]).expect("same bounds");
        }
        if h.is_empty() {
            continue;
        }
        all.add(&h).expect("same bounds");
        latency.push(summarise(kind.name(), &h, tsc));
    }
    if !all.is_empty() {
        latency.insert(0, summarise("ALL", &all, tsc));
    }
    let lines_per_page = (page_size / tierdb::limits::CACHE_LINE_BYTES) as u64;
    YcsbReport {
        workload: spec.clone(),
        records,
        record_bytes: spec.record_length_bytes(),
        record_bytes_mean: spec.record_length_mean_bytes(),
        data_bytes_target: cfg.data_bytes,
        data_bytes,
        load_secs,
        load_records_per_sec: records as f64 / load_secs.max(1e-9),
        warmup_secs: m.warmup_secs,
        run_secs,
        ops,
        throughput_ops_per_sec: ops as f64 / run_secs.max(1e-9),
        modelled_ops_per_sec: modelled,
        modelled_device_secs,
        latency,
        not_found,
        lines_nvm_to_dram: tiers.buffer.nvm_lines_loaded,
        lines_dram_to_nvm: tiers.buffer.nvm_lines_written,
        lines_ssd_to_dram: (tiers.buffer.ssd_reads + tiers.buffer.prefetch_reads) * lines_per_page,
        page_provider: m.provider.clone(),
        tiers,
    }
}

/// The latency percentiles of the commits in `results`, `None` if there were none.
pub fn commit_latency(results: &[ThreadResult]) -> Option<Latency> {
    let mut h = new_histogram();
    for r in results {
        h.add(&r.commits).expect("same bounds");
    }
    (!h.is_empty()).then(|| summarise("COMMIT", &h, clock::rate()))
}

/// A histogram of TSC ticks from 1 to ~2^42 (over half an hour at 2 GHz), 3 digits.
pub(super) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 42, 3).expect("valid histogram bounds")
}

pub(super) fn summarise(kind: &str, h: &Histogram<u64>, tsc: clock::TscRate) -> Latency {
    let ns = |ticks: u64| tsc.ns_from_ticks(ticks);
    Latency {
        kind: kind.to_string(),
        ops: h.len(),
        mean_ns: h.mean() / tsc.ticks_per_ns,
        p50_ns: ns(h.value_at_quantile(0.5)),
        p90_ns: ns(h.value_at_quantile(0.9)),
        p99_ns: ns(h.value_at_quantile(0.99)),
        p999_ns: ns(h.value_at_quantile(0.999)),
        max_ns: ns(h.max()),
    }
}

pub(super) fn sleep_with_progress(d: Duration, name: &str, progress: ProgressFn<'_>, failed: &AtomicBool) {
    let start = Instant::now();
    let total_ms = d.as_millis() as u64;
    while start.elapsed() < d && !failed.load(Ordering::Relaxed) {
        progress(name, start.elapsed().as_millis() as u64, total_ms);
        std::thread::sleep(Duration::from_millis(50).min(d.saturating_sub(start.elapsed())));
    }
    progress(name, total_ms, total_ms);
}

/// One worker: runs operations until the phase says stop; measures in the run phase.
/// With batches of more than one operation, a batch is read ahead together
/// ([`Executor::prefetch`]) and then run; an operation's latency runs from the start of
/// its batch (what a caller that issues the batch sees) to its own end.
pub(super) fn worker<X: Executor>(
    mut exec: X,
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    cfg: &DriverConfig,
    thread: u32,
    phase: &AtomicU8,
    remaining: Option<&AtomicU64>,
) -> Result<ThreadResult> {
    let mut generator = OpGenerator::new(spec, keyspace, cfg.seed, thread);
    let mut hist: Vec<Histogram<u64>> = OpKind::ALL.iter().map(|_| new_histogram()).collect();
    let mut commits = new_histogram();
    let (mut ops, mut not_found) = (0u64, 0u64);
    let mut measuring = false;
    let mut virtual_start = 0;
    let mut measure_start = None;
    let mut cpu_start = 0;
    let mut budget = 0u64; // operations claimed from `remaining` and not yet run
    let batch_max = cfg.batch.max(1) as usize;
    let mut batch: Vec<Op> = Vec::with_capacity(batch_max);
    'run: loop {
        match phase.load(Ordering::Acquire) {
            // Operations already claimed from the count still run: the main thread stops
            // the phase once the count is all claimed, not once it is all done.
            PHASE_STOP if budget == 0 => break,
            PHASE_MEASURE if !measuring => {
                measuring = true;
                measure_start = Some(Instant::now());
                cpu_start = clock::thread_cpu_ns();
                virtual_start = clock::virtual_now_ps();
            }
            _ => {}
        }
        batch.clear();
        while batch.len() < batch_max {
            if measuring && let Some(rem) = remaining {
                if budget == 0 {
                    // Claim a batch of the operation count.
                    let got = rem
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| (r > 0).then(|| r.saturating_sub(64)));
                    match got {
                        Ok(r) => budget = r.min(64),
                        Err(_) if batch.is_empty() => break 'run,
                        Err(_) => break,
                    }
                }
                budget -= 1;
            }
            batch.push(generator.next());
            if budget == 0 && phase.load(Ordering::Relaxed) == PHASE_STOP {
                break;
            }
        }
        let t0 = clock::ticks();
        if batch.len() > 1 {
            exec.prefetch(&batch)?;
        }
        for &op in &batch {
            let done = exec.execute(op)?;
            let t1 = clock::ticks();
            if measuring {
                ops += 1;
                not_found += u64::from(!done.found);
                hist[op.kind() as usize].saturating_record(t1.saturating_sub(t0).max(1));
                if let Some(c) = done.commit_ticks {
                    commits.saturating_record(c.max(1));
                }
            }
        }
    }
    let virtual_ps = if measuring { clock::virtual_now_ps() - virtual_start } else { 0 };
    let measured_secs = measure_start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let cpu_secs = if measuring { clock::thread_cpu_ns().saturating_sub(cpu_start) as f64 * 1e-9 } else { 0.0 };
    Ok(ThreadResult { ops, measured_secs, cpu_secs, not_found, virtual_ps, hist, commits })
}
