//! `tierdb compare`: every architecture over data sizes that cross the DRAM and the NVM
//! capacity — the paper's Figure 8 (van Renen et al., SIGMOD 2018) at this machine's
//! scale. Writes a text table, JSON and an SVG plot.

mod tpcc;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;

use tierdb_bench::harness::{
    EngineArgs, Middle, Progress, RunReport, fmt_rate, is_full, median_of_all, remove_files_on_interrupt, run_one,
    value,
};
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Marker, Series, write_outputs};

const RUNS_MAX: usize = 25;
const SIZES_MAX: usize = 64;

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[arg(long, default_value = "256MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "1GiB")]
    nvm: ByteSize,
    /// Data sizes (B+-tree size after loading), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128MiB,192MiB,384MiB,640MiB,896MiB,1536MiB,2GiB")]
    sizes: Vec<ByteSize>,
    /// Architectures, comma-separated [default: main-memory, ssd-bm, basic-nvm-bm,
    /// three-tier, nvm-direct (the paper's Figures 8 and 9); with --workload tpcc also
    /// nvcache].
    #[arg(long, value_delimiter = ',')]
    archs: Option<Vec<String>>,
    /// ro, rw:PCT, scan, a..f, or a YCSB property file; or tpcc (the paper's Figure 9:
    /// throughput vs warehouses, through transactions).
    #[arg(long, default_value = "ro")]
    workload: String,
    /// With --workload tpcc: warehouse counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    warehouses: Vec<u32>,
    /// With --workload tpcc: the tiny population of the tests (NOT spec-conformant).
    #[arg(long)]
    tiny: bool,
    /// With --workload tpcc: sync, group or none.
    #[arg(long, default_value = "group")]
    durability: tierdb::wal::Durability,
    /// With --workload tpcc: where the log buffer lives, dram, nvm, or auto (nvm for
    /// nvm-direct, dram for the others).
    #[arg(long, default_value = "auto")]
    log_buffer: String,
    /// Runs of each point; the table and plot show the median.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Directory for compare.txt, compare.json and compare.svg.
    #[arg(long, default_value = "tierdb-compare")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// One point: an architecture at a data size.
#[derive(Serialize)]
struct Point {
    arch: Architecture,
    data_bytes: u64,
    /// Median over the runs of throughput (modelled throughput in `model` mode).
    ops_per_sec: Option<f64>,
    /// Why there is no value (the architecture cannot hold the data).
    skipped: Option<String>,
    runs: Vec<RunReport>,
}

#[derive(Serialize)]
struct CompareReport {
    command: &'static str,
    version: &'static str,
    dram_bytes: u64,
    nvm_bytes: u64,
    runs: usize,
    setup: tierdb_bench::harness::Setup,
    points: Vec<Point>,
}

pub fn run(args: CompareArgs) -> Result<()> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if args.sizes.is_empty() || args.sizes.len() > SIZES_MAX {
        bail!("--sizes takes 1..={SIZES_MAX} sizes");
    }
    let tpcc = args.workload == "tpcc";
    let mut default_archs = [
        Architecture::MainMemory,
        Architecture::SsdBm,
        Architecture::BasicNvmBm,
        Architecture::ThreeTier,
        Architecture::NvmDirect,
    ]
    .to_vec();
    if tpcc {
        default_archs.push(Architecture::Nvcache);
    }
    let archs: Vec<Architecture> = match &args.archs {
        Some(names) => names.iter().map(|a| a.parse()).collect::<Result<_, _>>()?,
        None => default_archs,
    };
    remove_files_on_interrupt()?;
    if tpcc {
        let opts = tierdb_bench::drivers::tpcc::TpccOptions {
            warehouses: 1,
            tiny: args.tiny,
            durability: args.durability,
            isolation: tierdb::db::Isolation::Snapshot,
            log_buffer: args.log_buffer.clone(),
            load_threads: None,
            checkpoint_interval: tierdb_bench::drivers::tpcc::CHECKPOINT_INTERVAL_SECS_DEFAULT,
            write_set_interval: None,
        };
        return tpcc::compare(
            &args.engine,
            &opts,
            &archs,
            &args.warehouses,
            args.dram,
            args.nvm,
            args.runs,
            &args.out,
            args.quiet,
        );
    }
    let setup = args.engine.setup(&args.workload)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let progress = Progress::new(!args.quiet);
    let mut points = Vec::new();
    for &size in &args.sizes {
        for &arch in &archs {
            let mut p = Point { arch, data_bytes: size.bytes(), ops_per_sec: None, skipped: None, runs: Vec::new() };
            if let Some(cap) = arch.capacity_bytes(args.dram, args.nvm)
                && size.bytes() > cap
            {
                p.skipped = Some(format!("holds at most {}", ByteSize(cap)));
                points.push(p);
                continue;
            }
            for r in 0..args.runs {
                let tag = format!("cmp{r}");
                match run_one(&args.engine, &setup, arch, args.dram, args.nvm, Some(size), &tag, &progress) {
                    Ok(rep) => p.runs.push(rep),
                    Err(e) if is_full(&e) => {
                        p.skipped = Some(format!("run {} of {} did not fit: {e:#}", r + 1, args.runs));
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            let values: Vec<f64> = p.runs.iter().map(value).collect();
            p.ops_per_sec = median_of_all(&values, args.runs, Middle::Upper);
            points.push(p);
        }
    }
    progress.finish();
    let report = CompareReport {
        command: "compare",
        version: env!("CARGO_PKG_VERSION"),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        runs: args.runs,
        setup,
        points,
    };
    let text = render_table(&report, &archs);
    write_outputs(&args.out, "compare", &text, &report, &[("compare.svg".into(), chart(&report, &archs))])?;
    Ok(())
}

fn describe(report: &CompareReport) -> String {
    let s = &report.setup;
    format!(
        "workload {} · mode {} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · page {} · {} thread(s) · seed {} · {} run(s) per point, median · {} s warm-up + {} run · CPU-cache model for in-place NVM reads {}",
        s.workload.origin(),
        s.mode,
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        ByteSize(report.dram_bytes),
        ByteSize(report.nvm_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        report.runs,
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s")).unwrap_or_else(|| "operationcount".into()),
        s.cpu_cache_label_over(&report.points.iter().map(|p| p.data_bytes).collect::<Vec<_>>()),
    )
}

fn render_table(report: &CompareReport, archs: &[Architecture]) -> String {
    let mut by_size: BTreeMap<u64, BTreeMap<&str, &Point>> = BTreeMap::new();
    for p in &report.points {
        by_size.entry(p.data_bytes).or_default().insert(p.arch.name(), p);
    }
    let mut t = Table::new();
    let mut header = vec!["data".to_string(), "zone".to_string()];
    header.extend(archs.iter().map(|a| format!("{a} ops/s")));
    let ratio = archs.contains(&Architecture::ThreeTier) && archs.contains(&Architecture::SsdBm);
    if ratio {
        header.push("three-tier / ssd-bm".into());
    }
    let mm = archs.contains(&Architecture::ThreeTier) && archs.contains(&Architecture::MainMemory);
    if mm {
        header.push("three-tier / main-memory".into());
    }
    t.set_header(header);
    for (size, row) in &by_size {
        let zone = if *size <= report.dram_bytes {
            "DRAM"
        } else if *size <= report.nvm_bytes {
            "NVM"
        } else {
            "SSD"
        };
        let mut cells = vec![ByteSize(*size).to_string(), zone.to_string()];
        for a in archs {
            cells.push(match row.get(a.name()) {
                Some(Point { ops_per_sec: Some(v), .. }) => fmt_rate(*v),
                _ => "—".into(),
            });
        }
        let get = |a: Architecture| row.get(a.name()).and_then(|p| p.ops_per_sec);
        if ratio {
            cells.push(match (get(Architecture::ThreeTier), get(Architecture::SsdBm)) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.2}×", x / y),
                _ => "—".into(),
            });
        }
        if mm {
            cells.push(match (get(Architecture::ThreeTier), get(Architecture::MainMemory)) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.0}%", 100.0 * x / y),
                _ => "—".into(),
            });
        }
        t.add_row(cells);
    }
    format!("tierdb compare: {}\n{t}\n", describe(report))
}

fn chart(report: &CompareReport, archs: &[Architecture]) -> Chart {
    let mut c = Chart::new(format!("YCSB {} throughput vs data size", report.setup.workload.origin()));
    c.subtitle = describe(report);
    c.x_label = "data size (B+-tree after load)".into();
    c.y_label = tierdb_bench::plot::throughput_label(report.setup.mode);
    c.x_format = AxisFormat::Bytes;
    c.y_format = AxisFormat::Plain;
    c.legend = LegendPosition::UpperRight;
    for &a in archs {
        let points = report
            .points
            .iter()
            .filter(|p| p.arch == a)
            .filter_map(|p| p.ops_per_sec.map(|v| (p.data_bytes as f64, v)))
            .collect();
        c.series.push(Series { name: a.name().into(), points });
    }
    c.markers = vec![
        Marker { x: report.dram_bytes as f64, label: format!("DRAM {}", ByteSize(report.dram_bytes)) },
        Marker { x: report.nvm_bytes as f64, label: format!("NVM {}", ByteSize(report.nvm_bytes)) },
    ];
    c
}
