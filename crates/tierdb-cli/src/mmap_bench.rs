//! `tierdb mmap-bench`: the PostgreSQL-on-NVM study's comparison (§IV, §VI) at this
//! machine's scale — the database file on NVM under a DRAM buffer pool, read with
//! `pread` (the unmodified engine, `mmap-read`), copied from the mapping with `memcpy`
//! (SE1, `mmap-se1`) or read in place through the mapping with a copy only before a
//! change (SE2, `mmap-se2`), on a scan-heavy and a lookup-heavy workload over a sweep
//! of buffer-pool sizes. Writes a text table, JSON and one SVG per workload.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;

use tierdb_bench::harness::value;
use tierdb_bench::harness::{EngineArgs, Progress, RunReport, fmt_rate, remove_files_on_interrupt, run_one};
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Series, write_outputs};

const RUNS_MAX: usize = 25;
const POINTS_MAX: usize = 16;
const WORKLOADS_MAX: usize = 8;

#[derive(Args, Debug)]
pub struct MmapBenchArgs {
    /// Workloads, comma-separated: the scan-heavy and the lookup-heavy one by default
    /// (ro, rw:PCT, scan, a..f, or YCSB property files).
    #[arg(long, value_delimiter = ',', default_value = "scan,ro")]
    workloads: Vec<String>,
    /// Data size (B+-tree size after loading).
    #[arg(long, default_value = "256MiB")]
    data: ByteSize,
    /// NVM size (the database file's room): at least the data.
    #[arg(long, default_value = "512MiB")]
    nvm: ByteSize,
    /// Buffer-pool (DRAM) sizes as percentages of the data, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,25,50")]
    dram_percent: Vec<f64>,
    /// Runs of each point; the table and plots show the median.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Directory for mmap.txt, mmap.json and mmap-<workload>.svg.
    #[arg(long, default_value = "tierdb-mmap")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
struct Point {
    workload: String,
    arch: Architecture,
    dram_percent: f64,
    dram_bytes: u64,
    /// Median throughput over the runs (modelled in `model` mode).
    ops_per_sec: f64,
    /// Pages copied NVM → DRAM per operation (median run).
    copies_per_op: f64,
    /// Fixes served in place on NVM per operation (median run).
    in_place_per_op: f64,
    runs: Vec<RunReport>,
}

#[derive(Serialize)]
struct MmapReport {
    command: &'static str,
    version: &'static str,
    data_bytes: u64,
    nvm_bytes: u64,
    runs: usize,
    setups: Vec<tierdb_bench::harness::Setup>,
    points: Vec<Point>,
}

pub fn run(args: MmapBenchArgs) -> Result<()> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if args.dram_percent.is_empty() || args.dram_percent.len() > POINTS_MAX {
        bail!("--dram-percent takes 1..={POINTS_MAX} values");
    }
    if let Some(p) = args.dram_percent.iter().find(|p| !(**p > 0.0 && **p <= 100.0)) {
        bail!("--dram-percent {p} is outside (0, 100]");
    }
    if args.workloads.is_empty() || args.workloads.len() > WORKLOADS_MAX {
        bail!("--workloads takes 1..={WORKLOADS_MAX} workloads");
    }
    if args.data.bytes() > args.nvm.bytes() {
        bail!(
            "--data {} does not fit --nvm {}: the memory-mapped engines keep the whole database in NVM",
            args.data,
            args.nvm
        );
    }
    remove_files_on_interrupt()?;
    let setups =
        args.workloads.iter().map(|w| args.engine.setup(w)).collect::<Result<Vec<_>>>().context("the workloads")?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let page = setups[0].page_size_bytes as u64;
    let progress = Progress::new(!args.quiet);
    let mut points = Vec::new();
    for (w, setup) in args.workloads.iter().zip(&setups) {
        for &pct in &args.dram_percent {
            // At least 16 frames, so that a B+-tree descent always finds room.
            let dram = ByteSize(((args.data.bytes() as f64 * pct / 100.0) as u64 / page).max(16) * page);
            for arch in Architecture::MMAP {
                let mut runs = Vec::new();
                for r in 0..args.runs {
                    runs.push(run_one(
                        &args.engine,
                        setup,
                        arch,
                        dram,
                        args.nvm,
                        Some(args.data),
                        &format!("mm{r}"),
                        &progress,
                    )?);
                }
                runs.sort_by(|a, b| value(a).total_cmp(&value(b)));
                let median = &runs[runs.len() / 2];
                let ops = median.result.ops.max(1) as f64;
                let b = &median.result.tiers.buffer;
                points.push(Point {
                    workload: w.clone(),
                    arch,
                    dram_percent: pct,
                    dram_bytes: dram.bytes(),
                    ops_per_sec: value(median),
                    copies_per_op: b.nvm_to_dram_pages as f64 / ops,
                    in_place_per_op: b.nvm_reads_in_place as f64 / ops,
                    runs,
                });
            }
        }
    }
    progress.finish();
    let report = MmapReport {
        command: "mmap-bench",
        version: env!("CARGO_PKG_VERSION"),
        data_bytes: args.data.bytes(),
        nvm_bytes: args.nvm.bytes(),
        runs: args.runs,
        setups,
        points,
    };
    let text = render(&report, &args.workloads);
    let charts: Vec<(String, Chart)> =
        args.workloads.iter().map(|w| (format!("mmap-{}.svg", file_stem(w)), chart(&report, w))).collect();
    write_outputs(&args.out, "mmap", &text, &report, &charts)
}

/// A workload name fit for a file name.
fn file_stem(w: &str) -> String {
    let stem = std::path::Path::new(w).file_stem().and_then(|s| s.to_str()).unwrap_or(w);
    stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

fn describe(report: &MmapReport) -> String {
    let s = &report.setups[0];
    format!(
        "mode {} · profiles dram {}, nvm {} · data {} · NVM {} · page {} · {} thread(s) · seed {} · {} run(s) per point, median · {} s warm-up + {} run · CPU-cache model for in-place NVM reads {} · SE2 software prefetch {}",
        s.mode,
        s.dram_profile.name,
        s.nvm_profile.name,
        ByteSize(report.data_bytes),
        ByteSize(report.nvm_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        report.runs,
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s")).unwrap_or_else(|| "operationcount".into()),
        s.cpu_cache_label(report.data_bytes),
        if s.prefetch_lines == 0 { "off".to_string() } else { format!("{} lines", s.prefetch_lines) },
    )
}

fn render(report: &MmapReport, workloads: &[String]) -> String {
    let mut t = Table::new();
    let mut header = vec!["workload".to_string(), "buffer".to_string()];
    header.extend(Architecture::MMAP.iter().map(|a| format!("{a} ops/s")));
    header.extend(["SE1 / read", "SE2 / read", "copies/op read · SE1 · SE2", "in place/op SE2"].map(String::from));
    t.set_header(header);
    for w in workloads {
        let mut pcts: Vec<f64> = report.points.iter().filter(|p| &p.workload == w).map(|p| p.dram_percent).collect();
        pcts.dedup();
        for pct in pcts {
            let get = |a: Architecture| {
                report.points.iter().find(|p| &p.workload == w && p.dram_percent == pct && p.arch == a).expect("point")
            };
            let (r, s1, s2) = (get(Architecture::MmapRead), get(Architecture::MmapSe1), get(Architecture::MmapSe2));
            let ratio = |x: f64| if r.ops_per_sec > 0.0 { format!("{:.2}×", x / r.ops_per_sec) } else { "—".into() };
            t.add_row(vec![
                w.clone(),
                format!("{pct}% ({})", ByteSize(r.dram_bytes)),
                fmt_rate(r.ops_per_sec),
                fmt_rate(s1.ops_per_sec),
                fmt_rate(s2.ops_per_sec),
                ratio(s1.ops_per_sec),
                ratio(s2.ops_per_sec),
                format!("{:.2} · {:.2} · {:.2}", r.copies_per_op, s1.copies_per_op, s2.copies_per_op),
                format!("{:.2}", s2.in_place_per_op),
            ]);
        }
    }
    format!("tierdb mmap-bench: {}\n{t}\n", describe(report))
}

fn chart(report: &MmapReport, workload: &str) -> Chart {
    let mut c = Chart::new(format!("{workload}: the database file on NVM under a buffer pool"));
    c.subtitle = describe(report);
    c.x_label = "buffer pool, % of the data".into();
    c.y_label = tierdb_bench::plot::throughput_label(report.setups[0].mode);
    c.x_format = AxisFormat::Plain;
    c.y_format = AxisFormat::Plain;
    c.y_from_zero = true;
    c.legend = LegendPosition::UpperRight;
    for a in Architecture::MMAP {
        let points = report
            .points
            .iter()
            .filter(|p| p.workload == workload && p.arch == a)
            .map(|p| (p.dram_percent, p.ops_per_sec))
            .collect();
        c.series.push(Series { name: a.name().into(), points });
    }
    c
}
