//! `tierdb wear`: NVM writes per cache line (van Renen et al., SIGMOD 2018, A.4 and
//! Figure 16) for `three-tier` and `nvm-direct` under YCSB-R/W with 100% updates.
//!
//! Each architecture gets fresh files, wear counters on its NVM region (one counter per
//! line: every line a write to the region covers counts once), the same loaded table and
//! exactly `--ops` updates from the same seed. Counters are reset when the measured run
//! starts, so the load does not count. The report gives, per architecture, the total
//! line writes, the lines written at all, the most-written line's count and the
//! distribution; the plot is the paper's: lines sorted by their writes, both axes
//! logarithmic.
//!
//! What counts: every write to the NVM region — for `three-tier` the write-backs of
//! DRAM victims (whole pages or their dirty lines) and frame-header updates; for
//! `nvm-direct` the in-place write-backs of changed lines and allocation-map bytes. The
//! runs use the raw trees (no log), as the paper's counts are of the data's lines.
//! Dirty pages still in DRAM at the end of the run are not written back for the count.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{Architecture, Engine};

use tierdb_bench::drivers::ycsb::{self as ycsb_driver, YcsbReport};
use tierdb_bench::harness::Machine;
use tierdb_bench::harness::{Cleanup, EngineArgs, Progress, Setup, fmt_rate, remove_files_on_interrupt};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes, write_outputs};

/// Updates of one run, at most.
const OPS_MAX: u64 = 1_000_000_000;
/// Points of the sorted curve kept per architecture (log-spaced ranks).
const CURVE_POINTS: usize = 256;

#[derive(Args, Debug)]
#[command(mut_arg("warmup", |a| a.default_value("0").hide(true).help("Refused: every update counts")))]
#[command(mut_arg("duration", |a| a.default_value("0").hide(true).help("Refused: the run is --ops updates")))]
#[command(mut_arg("mode", |a| a.default_value("off")))]
#[command(mut_arg("techniques", |a| a.hide(true).help("Refused: each architecture has its own techniques")))]
pub struct WearArgs {
    /// DRAM of three-tier (nvm-direct uses none).
    #[arg(long, default_value = "64MiB")]
    dram: ByteSize,
    /// NVM of both; the data must fit it (nvm-direct keeps all data in NVM).
    #[arg(long, default_value = "320MiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "300MiB")]
    data: ByteSize,
    /// Updates in the measured run (the paper: 10 million).
    #[arg(long, default_value_t = 1_000_000)]
    ops: u64,
    /// Architectures, comma-separated: three-tier, nvm-direct (and any other with NVM).
    #[arg(long, value_delimiter = ',', default_value = "three-tier,nvm-direct")]
    archs: Vec<String>,
    /// Directory for wear.txt, wear.json and wear.svg.
    #[arg(long, default_value = "tierdb-wear")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// One architecture's counts.
#[derive(Serialize)]
struct WearSeries {
    arch: Architecture,
    /// NVM lines of the region.
    lines: u64,
    /// Σ over lines of the writes counted.
    line_writes_total: u64,
    lines_written: u64,
    line_writes_max: u64,
    /// Line writes to the metadata below the pages (`three-tier`: pool and frame
    /// headers; `nvm-direct`: header and allocation map), and the most to one such line.
    metadata_line_writes: u64,
    metadata_line_writes_max: u64,
    /// The most writes to one line of page data.
    page_line_writes_max: u64,
    /// Line writes per update.
    line_writes_per_op: f64,
    /// `log2_buckets[0]`: lines never written; `[i]`, i ≥ 1: written more than 2^(i-2)
    /// and at most 2^(i-1) times.
    log2_buckets: Vec<u64>,
    /// The sorted curve at log-spaced ranks: (rank from 1, writes of the line at that
    /// rank), most written first; ranks past the last written line are left out.
    sorted: Vec<(u64, u64)>,
    ops: u64,
    ops_per_sec: f64,
    /// Device counters of the measured run: NVM writes and persists.
    nvm_writes: u64,
    nvm_write_bytes: u64,
    nvm_persists: u64,
    run: YcsbReport,
}

#[derive(Serialize)]
struct WearReport {
    command: &'static str,
    version: &'static str,
    machine: Machine,
    dram_bytes: u64,
    nvm_bytes: u64,
    data_bytes: u64,
    setup: Setup,
    notes: Vec<String>,
    series: Vec<WearSeries>,
}

fn check(args: &WearArgs) -> Result<Vec<Architecture>> {
    if args.engine.warmup != 0.0 || args.engine.duration != 0.0 {
        bail!("--warmup and --duration do not apply: wear counts exactly --ops updates from the first");
    }
    if let Some(t) = args.engine.techniques {
        bail!("--techniques {t}: wear runs each architecture with its own techniques");
    }
    if args.ops == 0 || args.ops > OPS_MAX {
        bail!("--ops {} is outside 1..={OPS_MAX}", args.ops);
    }
    let mut archs = Vec::new();
    for a in &args.archs {
        let arch: Architecture = a.trim().parse()?;
        if !arch.uses_nvm() {
            bail!("--archs: {arch} has no NVM, so nothing wears");
        }
        if archs.contains(&arch) {
            bail!("--archs: {arch} is listed twice");
        }
        if let Some(cap) = arch.capacity_bytes(args.dram, args.nvm)
            && args.data.bytes() > cap
        {
            bail!("--data {} is larger than --nvm {}: {arch} keeps all data in NVM", args.data, args.nvm);
        }
        archs.push(arch);
    }
    if archs.is_empty() {
        bail!("--archs is empty");
    }
    Ok(archs)
}

pub fn run(args: WearArgs) -> Result<()> {
    let archs = check(&args)?;
    let mut setup = args.engine.setup("rw:100")?;
    setup.workload.set("operationcount", &args.ops.to_string())?;
    let mix = setup.workload.mix();
    if mix.update < 1.0 {
        bail!("wear runs updates only (YCSB-R/W 100%), and --set gives {:.0}% updates", 100.0 * mix.update);
    }
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    let progress = Progress::new(!args.quiet);
    let mut series = Vec::new();
    for (i, &arch) in archs.iter().enumerate() {
        if !args.quiet {
            progress.println(&format!("[{}/{}] {arch}", i + 1, archs.len()));
        }
        series.push(run_arch(&args, &setup, arch, &progress).with_context(|| arch.to_string())?);
    }
    progress.finish();

    let report = WearReport {
        command: "wear",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes: args.data.bytes(),
        notes: notes(&series),
        setup,
        series,
    };
    let text = render_text(&report);
    write_outputs(&args.out, "wear", &text, &report, &[("wear.svg".into(), chart(&report))])?;
    Ok(())
}

fn run_arch(args: &WearArgs, setup: &Setup, arch: Architecture, progress: &Progress) -> Result<WearSeries> {
    let mut engine_args = args.engine.clone();
    engine_args.techniques = None;
    let mut cfg = engine_args.arch_config(setup, arch, args.dram, args.nvm, &format!("wear-{arch}"))?;
    cfg.wear_counters = true;
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch}"))?;
    progress.set_prefix(arch.name());
    let mut driver = engine_args.driver_config(setup, Some(args.data));
    driver.warmup = Duration::ZERO;
    driver.duration = None;
    let run = ycsb_driver::run(&engine, &setup.workload, &driver, &|p, d, t| progress.update(p, d, t))?;
    let region = engine.nvm_region().context("an architecture with NVM has a region")?;
    let mut counts = region.wear_counts().context("wear counters were switched on")?;
    let summary = region.wear_summary().context("wear counters were switched on")?;
    let meta_lines = (engine.nvm_data_offset().unwrap_or(0) / 64) as usize;
    let (meta, pages) = counts.split_at(meta_lines.min(counts.len()));
    let (metadata_line_writes, metadata_line_writes_max) = (meta.iter().sum(), meta.iter().copied().max().unwrap_or(0));
    let page_line_writes_max = pages.iter().copied().max().unwrap_or(0);
    drop(engine);
    drop(files);
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let written = counts.iter().take_while(|&&c| c > 0).count() as u64;
    let nvm = run.tiers.nvm.unwrap_or_default();
    Ok(WearSeries {
        arch,
        lines: summary.lines,
        line_writes_total: summary.writes_total,
        lines_written: summary.lines_written,
        line_writes_max: summary.writes_max,
        metadata_line_writes,
        metadata_line_writes_max,
        page_line_writes_max,
        line_writes_per_op: summary.writes_total as f64 / run.ops.max(1) as f64,
        log2_buckets: summary.log2_buckets,
        sorted: log_spaced(&counts[..written as usize]),
        ops: run.ops,
        ops_per_sec: run.throughput_ops_per_sec,
        nvm_writes: nvm.writes,
        nvm_write_bytes: nvm.write_bytes,
        nvm_persists: nvm.persists,
        run,
    })
}

/// `(rank, count)` at about [`CURVE_POINTS`] log-spaced ranks of a sorted list, always
/// with the first and the last.
fn log_spaced(sorted: &[u64]) -> Vec<(u64, u64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let mut ranks: Vec<usize> = (0..CURVE_POINTS)
        .map(|i| ((n as f64).powf(i as f64 / (CURVE_POINTS - 1) as f64)).round() as usize)
        .map(|r| r.clamp(1, n))
        .collect();
    ranks.dedup();
    ranks.into_iter().map(|r| (r as u64, sorted[r - 1])).collect()
}

fn notes(series: &[WearSeries]) -> Vec<String> {
    let mut notes = vec![
        "counts: every NVM line a write to the region covered, during the measured run only (the load is not counted); raw trees, no log".into(),
        "three-tier writes NVM when DRAM evicts a dirty page (its dirty lines); pages dirty in DRAM at the end are not counted".into(),
    ];
    let get = |a| series.iter().find(|s| s.arch == a);
    if let (Some(t), Some(d)) = (get(Architecture::ThreeTier), get(Architecture::NvmDirect)) {
        let r = |x: u64, y: u64| if y == 0 { "—".to_string() } else { format!("{:.1}×", x as f64 / y as f64) };
        notes.push(format!(
            "nvm-direct / three-tier: {} the line writes, {} the most-written line's writes (paper: 25M / 4.7M = 5.3× and 60K / 3 = 20,000× for 10M updates on 10 GB)",
            r(d.line_writes_total, t.line_writes_total),
            r(d.line_writes_max, t.line_writes_max)
        ));
    }
    notes
}

fn describe(r: &WearReport) -> String {
    let s = &r.setup;
    format!(
        "{} ({} CPUs) · YCSB-R/W 100% updates ({} {:?}) · mode {} · profiles dram {}, nvm {} · DRAM {} · NVM {} · data {} · page {} · {} thread(s) · seed {} · {} updates",
        r.machine.cpu,
        r.machine.logical_cpus,
        s.workload.get("requestdistribution").unwrap_or_default(),
        s.workload.zipfian_constant(),
        s.mode,
        s.dram_profile.name,
        s.nvm_profile.name,
        ByteSize(r.dram_bytes),
        ByteSize(r.nvm_bytes),
        ByteSize(r.data_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        s.workload.operation_count(),
    )
}

fn render_text(r: &WearReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb wear: {}", describe(r));
    let mut t = Table::new();
    t.set_header([
        "architecture",
        "updates",
        "ops/s",
        "NVM line writes",
        "per update",
        "lines written",
        "of lines",
        "max writes of a line",
        "of a page line",
        "metadata line writes (max)",
        "NVM persists",
    ]);
    for s in &r.series {
        t.add_row([
            s.arch.to_string(),
            s.ops.to_string(),
            fmt_rate(s.ops_per_sec),
            s.line_writes_total.to_string(),
            format!("{:.2}", s.line_writes_per_op),
            s.lines_written.to_string(),
            s.lines.to_string(),
            s.line_writes_max.to_string(),
            s.page_line_writes_max.to_string(),
            format!("{} ({})", s.metadata_line_writes, s.metadata_line_writes_max),
            s.nvm_persists.to_string(),
        ]);
    }
    let _ = writeln!(out, "\nFigure 16: NVM writes per cache line\n{t}");
    write_notes(&mut out, &r.notes);
    out
}

fn chart(r: &WearReport) -> Chart {
    let mut c = Chart::new("Figure 16: NVM writes per cache line, lines sorted by writes");
    c.subtitle = describe(r);
    c.x_label = "cache lines, most written first (rank)".into();
    c.y_label = "writes".into();
    c.x_log2 = true;
    c.y_log10 = true;
    c.legend = LegendPosition::UpperRight;
    c.series = r
        .series
        .iter()
        .map(|s| Series {
            name: s.arch.to_string(),
            points: s.sorted.iter().map(|&(rank, n)| (rank as f64, n as f64)).collect(),
        })
        .collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_spaced_keeps_the_ends_and_is_sorted() {
        let sorted: Vec<u64> = (1..=10_000u64).rev().collect();
        let p = log_spaced(&sorted);
        assert_eq!(p.first(), Some(&(1, 10_000)));
        assert_eq!(p.last(), Some(&(10_000, 1)));
        assert!(p.len() <= CURVE_POINTS);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1));
        assert!(log_spaced(&[]).is_empty());
        assert_eq!(log_spaced(&[5]), vec![(1, 5)]);
    }
}
