//! The full-scan runs of `tierdb drilldown`'s scan table (§5.4.2): open an
//! architecture, load the table through the YCSB driver, then scan the whole table on
//! every thread, unmeasured for the warm-up and measured for the run.
//!
//! Concurrency: the scan threads share the engine read-only and are joined before
//! [`run`] returns; a failed scan stops the others through a shared flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use hdrhistogram::Histogram;
use tierdb::arch::{Architecture, Engine, SourceVisitor};
use tierdb::buffer::TierStats;
use tierdb::device::clock;
use tierdb::{BTree, ByteSize, Catalog, PageSource};
use tierdb_workload::{YcsbSpec, field_range};

use crate::drivers::ycsb::{self as ycsb_driver, Latency, TABLE};
use crate::harness::{Cleanup, EngineArgs, Progress, RunReport, Setup};

/// How often the full-scan phase updates the progress bar.
const PROGRESS_PERIOD: Duration = Duration::from_millis(50);

/// Opens `arch`, loads the table through the YCSB driver, then scans the whole table:
/// whole scans for `--warmup` seconds unmeasured, then whole scans until `--duration`
/// seconds have passed (at least one per thread; exactly one with `--duration 0`).
///
/// # Errors
/// Opening or loading the engine; a failed scan.
#[allow(clippy::too_many_arguments)]
pub fn run(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    data: ByteSize,
    tag: &str,
    progress: &Progress,
) -> Result<RunReport> {
    // 1. A fresh engine whose files go away with `files`, on every path.
    let cfg = engine_args.arch_config(setup, arch, dram, nvm, Some(data), tag)?;
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch}"))?;
    let (dram_frames, nvm_frames) = engine.frames();
    progress.set_prefix(&format!("{arch} {data} full scans"));

    // 2. Load: the driver with no warm-up and a run of zero length.
    let mut load = engine_args.driver_config(setup, Some(data));
    load.warmup = Duration::ZERO;
    load.duration = Some(Duration::ZERO);
    let mut result = ycsb_driver::run(&engine, &setup.workload, &load, &|p, d, t| progress.update(p, d, t))
        .with_context(|| format!("loading {arch}"))?;

    // 3. Warm-up and measured scans.
    let scanner = FullScans {
        engine: &engine,
        spec: &result.workload,
        records: result.records,
        threads: setup.threads,
        warmup: Duration::from_secs_f64(setup.warmup_secs),
        duration: setup.duration_secs.map(Duration::from_secs_f64),
        progress,
    };
    let phase = engine.visit(scanner).with_context(|| format!("full scans on {arch}"))?;
    let lines_per_page = (engine.page_size() / tierdb::limits::CACHE_LINE_BYTES) as u64;
    drop(engine);
    drop(files);

    // 4. The run's report in the driver's shape, one operation per full scan.
    result.warmup_secs = phase.warmup_secs;
    result.run_secs = phase.run_secs;
    result.ops = phase.scans;
    result.throughput_ops_per_sec = phase.scans as f64 / phase.run_secs.max(1e-9);
    result.modelled_ops_per_sec = phase.modelled_per_sec;
    result.modelled_device_secs = phase.modelled_device_secs;
    result.latency = vec![phase.latency];
    result.not_found = 0;
    // As the driver counts them: lines the buffer manager moved, pages × lines from SSD.
    result.lines_nvm_to_dram = phase.tiers.buffer.nvm_lines_loaded;
    result.lines_dram_to_nvm = phase.tiers.buffer.nvm_lines_written;
    result.lines_ssd_to_dram = phase.tiers.buffer.ssd_reads * lines_per_page;
    result.tiers = phase.tiers;
    Ok(RunReport::new("drilldown full scans", &cfg, (dram, nvm), (dram_frames, nvm_frames), setup, result))
}

/// Full scans over a loaded table, run through [`Engine::visit`].
struct FullScans<'a> {
    engine: &'a Engine,
    spec: &'a YcsbSpec,
    records: u64,
    threads: u32,
    warmup: Duration,
    /// `None`: one scan per thread.
    duration: Option<Duration>,
    progress: &'a Progress,
}

/// What the measured full scans did.
struct ScanPhase {
    scans: u64,
    warmup_secs: f64,
    run_secs: f64,
    modelled_per_sec: Option<f64>,
    modelled_device_secs: f64,
    latency: Latency,
    tiers: TierStats,
}

/// One thread's scans.
struct ThreadScans {
    scans: u64,
    virtual_ps: u64,
    /// Nanoseconds per scan.
    hist: Histogram<u64>,
}

impl SourceVisitor for FullScans<'_> {
    type Output = Result<ScanPhase>;

    fn visit<S: PageSource>(self, source: &S) -> Result<ScanPhase> {
        let tree = Catalog::open_tree(source, TABLE).context("opening the loaded table")?;
        // 1. Warm-up: whole scans, unmeasured, until `warmup` has passed.
        let warm = Instant::now();
        if !self.warmup.is_zero() {
            scan_threads(&tree, &self, self.warmup, false, "warm-up")?;
        }
        let warmup_secs = warm.elapsed().as_secs_f64();

        // 2. Measured: counters around whole scans on every thread.
        let before = self.engine.stats();
        let start = Instant::now();
        let threads = scan_threads(&tree, &self, self.duration.unwrap_or(Duration::ZERO), true, "run")?;
        let run_secs = start.elapsed().as_secs_f64();
        let tiers = self.engine.stats().since(&before);

        let scans: u64 = threads.iter().map(|t| t.scans).sum();
        assert!(scans >= u64::from(self.threads), "{scans} scans on {} threads", self.threads);
        let mut hist = new_histogram();
        for t in &threads {
            hist.add(&t.hist).expect("same bounds");
        }
        let modelled = threads
            .iter()
            .any(|t| t.virtual_ps > 0)
            .then(|| threads.iter().map(|t| t.scans as f64 / (run_secs + t.virtual_ps as f64 * 1e-12)).sum());
        Ok(ScanPhase {
            scans,
            warmup_secs,
            run_secs,
            modelled_per_sec: modelled,
            modelled_device_secs: threads.iter().map(|t| t.virtual_ps as f64 * 1e-12).sum(),
            latency: Latency {
                kind: "FULL-SCAN".into(),
                ops: hist.len(),
                mean_ns: hist.mean(),
                p50_ns: hist.value_at_quantile(0.5) as f64,
                p90_ns: hist.value_at_quantile(0.9) as f64,
                p99_ns: hist.value_at_quantile(0.99) as f64,
                p999_ns: hist.value_at_quantile(0.999) as f64,
                max_ns: hist.max() as f64,
            },
            tiers,
        })
    }
}

/// Nanoseconds from 1 to ~2^42 (over an hour), 3 digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 42, 3).expect("valid histogram bounds")
}

/// Whole scans on every thread until `length` has passed; with `at_least_one`, each
/// thread finishes at least one. Stops early, after the current scan, if a thread fails.
fn scan_threads<S: PageSource>(
    tree: &BTree<'_, S>,
    job: &FullScans<'_>,
    length: Duration,
    at_least_one: bool,
    phase: &str,
) -> Result<Vec<ThreadScans>> {
    let failed = AtomicBool::new(false);
    let total_ms = length.as_millis() as u64;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..job.threads)
            .map(|t| {
                let failed = &failed;
                s.spawn(move || -> Result<ThreadScans> {
                    let mut out = ThreadScans { scans: 0, virtual_ps: 0, hist: new_histogram() };
                    let mut buf = vec![0u8; job.spec.record_length_bytes()];
                    let virtual_start = clock::virtual_now_ps();
                    let start = Instant::now();
                    while ((at_least_one && out.scans == 0) || start.elapsed() < length)
                        && !failed.load(Ordering::Relaxed)
                    {
                        // Rotate the field read, offset per thread, as YCSB's random field would.
                        let field = (out.scans + u64::from(t)) % u64::from(job.spec.field_count());
                        let t0 = Instant::now();
                        if let Err(e) = full_scan(tree, job.spec, job.records, field as u32, &mut buf) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                        out.hist.saturating_record((t0.elapsed().as_nanos() as u64).max(1));
                        out.scans += 1;
                    }
                    out.virtual_ps = clock::virtual_now_ps() - virtual_start;
                    Ok(out)
                })
            })
            .collect();
        let start = Instant::now();
        while !workers.iter().all(|w| w.is_finished()) {
            job.progress.update(phase, (start.elapsed().as_millis() as u64).min(total_ms), total_ms);
            std::thread::sleep(PROGRESS_PERIOD);
        }
        job.progress.update(phase, total_ms, total_ms);
        workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a scan thread panicked")))).collect()
    })
}

/// Scans the table from its first key to its end, copying one field of every record
/// (all of it with `readallfields`), and checks that it saw every record.
fn full_scan<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    records: u64,
    field: u32,
    out: &mut [u8],
) -> Result<()> {
    let range = if spec.read_all_fields() { 0..spec.record_length_bytes() } else { field_range(spec, field) };
    let mut seen = 0u64;
    tree.scan(&[], |_, v| {
        let end = range.end.min(v.len());
        let start = range.start.min(end);
        out[..end - start].copy_from_slice(&v[start..end]);
        seen += 1;
        true
    })?;
    ensure!(seen == records, "a full scan saw {seen} records; the table holds {records}");
    Ok(())
}
