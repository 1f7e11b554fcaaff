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

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::device::EmulationMode;

use tierdb_bench::experiments::restart::{
    BUCKETS_MAX, PEAK_FRACTION, Plan, STEADY_WINDOW_SECS, SeriesReport, Subject, run_series,
};
use tierdb_bench::harness::{
    DURATION_SECS_MAX, EngineArgs, Machine, Progress, Setup, fmt_rate, remove_files_on_interrupt,
};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes, write_outputs};

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
    let plan =
        Plan { engine: &args.engine, dram: args.dram, nvm: args.nvm, data: args.data, interval_ms: args.interval_ms };
    let mut reports = Vec::new();
    for (i, &subject) in subjects.iter().enumerate() {
        if !args.quiet {
            progress.println(&format!("[{}/{}] {}", i + 1, subjects.len(), subject.label()));
        }
        let report = run_series(&plan, &setup, subject, &progress).with_context(|| subject.name().to_string())?;
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
