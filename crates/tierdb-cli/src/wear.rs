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
//! `nvm-direct` the in-place write-backs of changed lines and allocation-map bytes —
//! and, with `--log nvm` (the default), every write to the log's ring in NVM: each
//! update is a transaction of a database whose log buffer is an NVM ring, as the
//! paper's engines wrote their log to NVM (A.5), so `nvm-direct`'s count includes the
//! record it persists before each in-place write-back, and `three-tier`'s its commit
//! records. `--log none` runs the raw trees (the data's lines only). Dirty pages still
//! in DRAM at the end of the run are not written back for the count.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;

use tierdb_bench::experiments::wear::{LOG_RING_BYTES, WearSeries, run_arch, run_logged};
use tierdb_bench::harness::Machine;
use tierdb_bench::harness::{EngineArgs, Progress, Setup, fmt_rate, remove_files_on_interrupt};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes, write_outputs};

/// Updates of one run, at most.
const OPS_MAX: u64 = 1_000_000_000;
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
    /// Where the log goes: nvm (each update a transaction, its log ring in NVM counted
    /// with the data, as the paper's engines) or none (raw trees, data lines only).
    #[arg(long, default_value = "nvm", value_parser = ["nvm", "none"])]
    log: String,
    /// Directory for wear.txt, wear.json and wear.svg.
    #[arg(long, default_value = "tierdb-wear")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
struct WearReport {
    command: &'static str,
    version: &'static str,
    machine: Machine,
    dram_bytes: u64,
    nvm_bytes: u64,
    data_bytes: u64,
    /// `nvm` or `none` (`--log`).
    log: String,
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
        let sizes = (args.dram, args.nvm);
        let one = if args.log == "nvm" {
            run_logged(&args.engine, &setup, arch, sizes, args.data, &progress)
        } else {
            run_arch(&args.engine, &setup, arch, sizes, args.data, &progress)
        };
        series.push(one.with_context(|| arch.to_string())?);
    }
    progress.finish();

    let report = WearReport {
        command: "wear",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes: args.data.bytes(),
        log: args.log.clone(),
        notes: notes(&series, &args.log),
        setup,
        series,
    };
    let text = render_text(&report);
    write_outputs(&args.out, "wear", &text, &report, &[("wear.svg".into(), chart(&report))])?;
    Ok(())
}

fn notes(series: &[WearSeries], log: &str) -> Vec<String> {
    let what = if log == "nvm" {
        format!(
            "each update a transaction on one thread, its log in a {} NVM ring whose line writes are counted with the data's",
            ByteSize(LOG_RING_BYTES)
        )
    } else {
        "raw trees, no log".to_string()
    };
    let mut notes = vec![
        format!("counts: every NVM line a write covered, during the measured run only (the load is not counted); {what}"),
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
        "of them log",
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
            s.log_line_writes.map_or("—".into(), |n| n.to_string()),
            format!("{:.2}", s.line_writes_per_op),
            s.lines_written.to_string(),
            s.lines.to_string(),
            s.line_writes_max.to_string(),
            s.page_line_writes_max.to_string(),
            format!("{} ({})", s.metadata_line_writes, s.metadata_line_writes_max),
            if s.log_line_writes.is_some() { "—".into() } else { s.nvm_persists.to_string() },
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
