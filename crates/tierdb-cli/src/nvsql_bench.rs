//! `tierdb nvsql-bench`: NV-SQL's evaluation (papers/nv-sql-nvdimm-write-cache.txt,
//! §6) at equal memory cost, scaled to this machine.
//!
//! **Equal cost.** DRAM is priced at the DRAM profile's $/GB, NVM at the NVM profile's
//! (`nvdimm-n`: three times DRAM, NV-SQL's Table 3). The memory budget `B` is the DRAM
//! of the DRAM-only configuration (`ssd-bm`, label `U:0` with `U = --units`); a
//! configuration with `k` NVM units (`--nvm-units`) has `k·B/U` bytes of NVM and
//! `B − ratio·k·B/U` of DRAM (`nvsql`), so all cost the same: with the paper's ratio 3
//! and 11 units, 11:0, 8:1 and 5:2. The default budget is the estimated database size
//! over `--data-ratio` (5: data ≈ 5× the buffer memory; NV-SQL used 20%).
//!
//! **Parts** (`--parts`), each a markdown table, JSON and SVG in `--out`:
//! - `tpcc`: per configuration, TPC-C throughput, SSD page writes per transaction (the
//!   page file's, checkpoints included; the double-write area's apart), DRAM and NVM
//!   hit ratios (`nvsql-tpcc.*`); the write working set over time, distinct pages
//!   written (and written twice) per interval against those accessed (NV-SQL's Figure
//!   2, `nvsql-write-set.*`); and unless `--no-crash`, a crash after the run and the
//!   recovery's time split into open / analysis / redo / undo / checkpoint (Figure 10,
//!   `nvsql-recovery.*`);
//! - `ycsb`: the same per configuration for YCSB-R/W (`--ycsb-workload rw:50`) through
//!   transactions (`nvsql-ycsb.*`);
//! - `table4`: NVM replacement on the first nvsql configuration: update-count midpoint
//!   insertion (nvsql's default) against default midpoint insertion and plain LRU
//!   (`nvsql-table4.*`).
//!
//! With `--runs N` every number is the median of N runs; the write-set series is the
//! run with the median throughput's.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::device::EmulationMode;
use tierdb::wal::{self, Durability};

use tierdb_bench::drivers::tpcc::TpccOptions;
use tierdb_bench::drivers::ycsb_txn::{LogPlace, TxnSetup};
use tierdb_bench::experiments::nvsql::{
    DRAM_FRAMES_MIN, MemConfig, Point, TPCC_ITEM_BYTES_EST, TPCC_TINY_ITEM_BYTES_EST, TPCC_TINY_WAREHOUSE_BYTES_EST,
    TPCC_WAREHOUSE_BYTES_EST, TpccPlan, configurations, get, ycsb_point,
};
use tierdb_bench::harness::{EngineArgs, Progress, fmt_rate, remove_files_on_interrupt};
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Series, write_svg};

/// Bounds on the counts, so a typo cannot start a day-long run.
const RUNS_MAX: usize = 21;
const PARTS: [&str; 3] = ["tpcc", "ycsb", "table4"];
/// Table 4's replacement rules: name and policy.
const TABLE4: [(&str, &str); 3] = [
    ("update-count midpoint", "nvsql:lru=update-count"),
    ("default midpoint", "nvsql:lru=midpoint"),
    ("plain LRU", "nvsql:lru=lru"),
];

#[derive(Args, Debug)]
pub struct NvsqlBenchArgs {
    /// Directory for the tables, JSON and SVG plots.
    #[arg(long)]
    out: PathBuf,
    /// Parts to run: tpcc (with the write working set and the recovery split), ycsb,
    /// table4.
    #[arg(long, value_delimiter = ',', default_value = "tpcc,ycsb,table4")]
    parts: Vec<String>,
    /// TPC-C warehouses.
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// TPC-C at the tiny scale (tests): NOT spec-conformant.
    #[arg(long)]
    tiny: bool,
    /// The memory budget: DRAM of the DRAM-only configuration [default: the estimated
    /// TPC-C database / --data-ratio].
    #[arg(long)]
    budget: Option<ByteSize>,
    /// Data size over buffer memory, for the default budget and YCSB's data.
    #[arg(long, default_value_t = 5.0)]
    data_ratio: f64,
    /// Units the budget is divided into (NV-SQL: 11, i.e. 11 GB of DRAM).
    #[arg(long, default_value_t = 11)]
    units: u32,
    /// NVM units of each nvsql configuration (NV-SQL: 1 and 2, i.e. 8:1 and 5:2).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    nvm_units: Vec<u32>,
    /// YCSB's data [default: --data-ratio × the budget].
    #[arg(long)]
    ycsb_data: Option<ByteSize>,
    /// YCSB workload (rw:50: YCSB-R/W, 50% updates).
    #[arg(long, default_value = "rw:50")]
    ycsb_workload: String,
    /// Runs per configuration; every figure is the median.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// No crash after the TPC-C runs (no recovery split).
    #[arg(long)]
    no_crash: bool,
    /// TPC-C: seconds between checkpoints while transactions run.
    #[arg(long, default_value_t = tierdb_bench::drivers::tpcc::CHECKPOINT_INTERVAL_SECS_DEFAULT)]
    checkpoint_interval: f64,
    /// TPC-C: the write working set's interval, seconds.
    #[arg(long, default_value_t = 1.0)]
    write_set_interval: f64,
    /// sync, group or none.
    #[arg(long, default_value = "group")]
    durability: Durability,
    /// Emulation mode: off, spin, model.
    #[arg(long, default_value = "spin")]
    mode: EmulationMode,
    #[arg(long, default_value = "dram")]
    dram_profile: String,
    /// NVM profile (NV-SQL ran on NVDIMM-N).
    #[arg(long, default_value = "nvdimm-n")]
    nvm_profile: String,
    #[arg(long, default_value = "nvme-ssd")]
    ssd_profile: String,
    /// Page size (TPC-C's customer rows need 8 KiB at least).
    #[arg(long, default_value = "8KiB")]
    page_size: ByteSize,
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Seconds of warm-up per run.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Seconds of measured run per run.
    #[arg(long, default_value_t = 15.0)]
    duration: f64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for the SSD files (default: the temporary directory).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
    /// Directory for the NVM files (default /dev/shm).
    #[arg(long)]
    nvm_dir: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// `EngineArgs` with its defaults, for filling from this command's options.
#[derive(Parser)]
struct EngineOnly {
    #[command(flatten)]
    engine: EngineArgs,
}

/// The NVM bought: the pool, and the double-write area beside it.
fn nvm_cell(c: &MemConfig) -> String {
    if c.nvm_double_write_bytes == 0 {
        ByteSize(c.nvm_bytes).to_string()
    } else {
        format!(
            "{} + {} (double write, {} slots)",
            ByteSize(c.nvm_bytes),
            ByteSize(c.nvm_double_write_bytes),
            c.nvm_double_write_slots
        )
    }
}

/// What every report states.
#[derive(Clone, Serialize)]
struct Describe {
    command: &'static str,
    version: &'static str,
    mode: EmulationMode,
    profiles: [String; 3],
    prices_usd_per_gb: [f64; 2],
    page_size_bytes: u64,
    threads: u32,
    seed: u64,
    durability: Durability,
    warmup_secs: f64,
    duration_secs: f64,
    runs: usize,
    budget_bytes: u64,
    units: u32,
    warehouses: u32,
    tiny: bool,
    ycsb_workload: String,
    ycsb_data_bytes: u64,
    checkpoint_interval_secs: f64,
}

impl Describe {
    fn line(&self) -> String {
        format!(
            "mode {} · profiles dram {} (${}/GB), nvm {} (${}/GB), ssd {} · budget {} in {} units · page {} · {} \
             thread(s) · seed {} · durability {} · {} s warm-up + {} s run · {} run(s), median",
            self.mode,
            self.profiles[0],
            self.prices_usd_per_gb[0],
            self.profiles[1],
            self.prices_usd_per_gb[1],
            self.profiles[2],
            ByteSize(self.budget_bytes),
            self.units,
            ByteSize(self.page_size_bytes),
            self.threads,
            self.seed,
            self.durability,
            self.warmup_secs,
            self.duration_secs,
            self.runs
        )
    }
}

#[derive(Serialize)]
struct PartReport<'a> {
    part: &'static str,
    setup: &'a Describe,
    workload: String,
    points: &'a [Point],
}

pub fn run(args: NvsqlBenchArgs) -> Result<()> {
    remove_files_on_interrupt()?;
    for p in &args.parts {
        if !PARTS.contains(&p.as_str()) {
            bail!("--parts {p:?}: expected a list of {}", PARTS.join(", "));
        }
    }
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if !(args.data_ratio > 0.0 && args.data_ratio <= 1000.0) {
        bail!("--data-ratio {} is outside (0, 1000]", args.data_ratio);
    }
    let mut engine = EngineOnly::try_parse_from(["nvsql-bench"]).context("engine defaults")?.engine;
    engine.mode = args.mode;
    engine.dram_profile = args.dram_profile.clone();
    engine.nvm_profile = args.nvm_profile.clone();
    engine.ssd_profile = args.ssd_profile.clone();
    engine.page_size = args.page_size;
    engine.threads = args.threads;
    engine.warmup = args.warmup;
    engine.duration = args.duration;
    engine.seed = args.seed;
    engine.ssd_dir = args.ssd_dir.clone();
    engine.nvm_dir = args.nvm_dir.clone();
    if args.duration <= 0.0 {
        bail!("--duration {} must be positive", args.duration);
    }
    let setup = engine.setup("ro")?;
    let page = setup.page_size_bytes as u64;
    let tpcc = TpccOptions {
        warehouses: args.warehouses,
        tiny: args.tiny,
        durability: args.durability,
        log_buffer: "dram".into(),
        load_threads: None,
        checkpoint_interval: args.checkpoint_interval,
        write_set_interval: Some(args.write_set_interval),
    };
    tpcc.scale()?; // checks the intervals before anything runs
    let (per_wh, items) = if args.tiny {
        (TPCC_TINY_WAREHOUSE_BYTES_EST, TPCC_TINY_ITEM_BYTES_EST)
    } else {
        (TPCC_WAREHOUSE_BYTES_EST, TPCC_ITEM_BYTES_EST)
    };
    let estimate = u64::from(args.warehouses) * per_wh + items;
    // The default: the data ratio, but never so small that a configuration has fewer
    // than DRAM_FRAMES_MIN DRAM pages (the tiny scale).
    let price = setup.nvm_profile.cost_per_gb_usd / setup.dram_profile.cost_per_gb_usd.max(f64::MIN_POSITIVE);
    let k_max = f64::from(args.nvm_units.iter().copied().max().unwrap_or(0));
    let left = 1.0 - price * k_max / f64::from(args.units.max(1));
    let floor = if left > 0.0 { (2 * DRAM_FRAMES_MIN * page) as f64 / left } else { 0.0 };
    let budget =
        args.budget.map_or((estimate as f64 / args.data_ratio).max(floor) as u64 / page * page, ByteSize::bytes);
    let configs = configurations(budget, args.units, &args.nvm_units, page, &setup.dram_profile, &setup.nvm_profile)?;
    let ycsb_data = args.ycsb_data.map_or((budget as f64 * args.data_ratio) as u64, ByteSize::bytes);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let describe = Describe {
        command: "nvsql-bench",
        version: env!("CARGO_PKG_VERSION"),
        mode: setup.mode,
        profiles: [setup.dram_profile.name.clone(), setup.nvm_profile.name.clone(), setup.ssd_profile.name.clone()],
        prices_usd_per_gb: [setup.dram_profile.cost_per_gb_usd, setup.nvm_profile.cost_per_gb_usd],
        page_size_bytes: page,
        threads: setup.threads,
        seed: setup.seed,
        durability: args.durability,
        warmup_secs: args.warmup,
        duration_secs: args.duration,
        runs: args.runs,
        budget_bytes: budget,
        units: args.units,
        warehouses: args.warehouses,
        tiny: args.tiny,
        ycsb_workload: args.ycsb_workload.clone(),
        ycsb_data_bytes: ycsb_data,
        checkpoint_interval_secs: args.checkpoint_interval,
    };
    let progress = Progress::new(!args.quiet);
    let has = |p: &str| args.parts.iter().any(|q| q == p);
    let tpcc_plan = TpccPlan { engine: &engine, tpcc: &tpcc, runs: args.runs, progress: &progress };

    let mut tpcc_points = Vec::new();
    if has("tpcc") {
        for (i, c) in configs.iter().enumerate() {
            tpcc_points.push(tpcc_plan.point(c, None, !args.no_crash, &format!("nvt{i}r"))?);
        }
        let workload = tpcc_workload(&args);
        write_config_part(&args.out, "nvsql-tpcc", "TPC-C", "transaction", &describe, &workload, &tpcc_points)?;
        write_write_set(&args.out, &describe, &workload, &tpcc_points)?;
        if !args.no_crash {
            write_recovery(&args.out, &describe, &workload, &tpcc_points)?;
        }
    }
    if has("ycsb") {
        let mut e = engine.clone();
        e.policy = None;
        let ys = e.setup(&args.ycsb_workload)?;
        let txn = TxnSetup {
            durability: args.durability,
            log_buffer: LogPlace::Dram,
            log_buffer_bytes: wal::BUFFER_BYTES_DEFAULT as u64,
            flush_interval_us: wal::FLUSH_INTERVAL_DEFAULT.as_micros() as u64,
        };
        let mut points = Vec::new();
        for (i, c) in configs.iter().enumerate() {
            points.push(ycsb_point(&e, &ys, &txn, c, ByteSize(ycsb_data), args.runs, &format!("nvy{i}r"), &progress)?);
        }
        let workload = format!(
            "YCSB {}, {} of data, one transaction per operation (no checkpoints while running)",
            args.ycsb_workload,
            ByteSize(ycsb_data)
        );
        write_config_part(&args.out, "nvsql-ycsb", "YCSB", "operation", &describe, &workload, &points)?;
    }
    if has("table4") {
        let Some(c) = configs.get(1) else { bail!("table4 needs an nvsql configuration (--nvm-units)") };
        let mut points = Vec::new();
        for (i, (_, policy)) in TABLE4.iter().enumerate() {
            // The default policy's run is the tpcc part's, when it ran.
            match tpcc_points.get(1).filter(|_| i == 0) {
                Some(p) => points.push(Point {
                    config: p.config.clone(),
                    policy: (*policy).to_string(),
                    median: p.median.clone(),
                    runs: p.runs.clone(),
                    write_set: None,
                }),
                None => {
                    let mut p = tpcc_plan.point(c, Some(policy), false, &format!("nv4{i}r"))?;
                    p.write_set = None;
                    points.push(p);
                }
            }
        }
        write_table4(&args.out, &describe, &tpcc_workload(&args), &points)?;
    }
    progress.finish();
    Ok(())
}

fn tpcc_workload(args: &NvsqlBenchArgs) -> String {
    format!(
        "TPC-C, {} warehouse(s){}, checkpoints every {} s while running",
        args.warehouses,
        if args.tiny { " at the TINY scale (not spec-conformant)" } else { "" },
        args.checkpoint_interval
    )
}

/// Writes `<stem>.md`, `<stem>.json` and the charts, and prints the table.
fn write_part(out: &Path, stem: &str, md: &str, json: &impl Serialize, charts: &[(String, Chart)]) -> Result<()> {
    let mut written = Vec::new();
    let p = out.join(format!("{stem}.md"));
    std::fs::write(&p, md).with_context(|| format!("writing {}", p.display()))?;
    written.push(p);
    let p = out.join(format!("{stem}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(json)?).with_context(|| format!("writing {}", p.display()))?;
    written.push(p);
    for (name, c) in charts {
        let p = out.join(name);
        write_svg(c, &p).with_context(|| format!("writing {}", p.display()))?;
        written.push(p);
    }
    println!("{md}wrote {}\n", written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

fn header(md: &mut String, title: &str, d: &Describe, workload: &str) {
    let _ = writeln!(md, "## {title}\n\n{workload}. {}\n", d.line());
}

fn table(md: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(md, "|{}", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        let _ = writeln!(md, "| {} |", r.join(" | "));
    }
    md.push('\n');
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn change(v: f64, base: f64) -> String {
    if base > 0.0 && v.is_finite() { format!("{:+.0}%", (v / base - 1.0) * 100.0) } else { "—".into() }
}

fn category_chart(title: &str, d: &Describe, y: &str, points: &[Point], series: &[(&str, &str)]) -> Chart {
    let mut c = Chart::new(title);
    c.subtitle = d.line();
    c.y_label = y.into();
    c.x_label = "configuration (DRAM:NVM units, equal cost)".into();
    c.x_categories = points.iter().map(|p| p.config.name()).collect();
    c.legend = LegendPosition::Auto;
    for (name, key) in series {
        c.series.push(Series {
            name: (*name).into(),
            points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, key))).collect(),
        });
    }
    c
}

fn write_config_part(
    out: &Path,
    stem: &str,
    name: &str,
    unit: &str,
    d: &Describe,
    workload: &str,
    points: &[Point],
) -> Result<()> {
    let mut md = String::new();
    header(&mut md, &format!("{name} at equal memory cost"), d, workload);
    let base = points.first().map(|p| p.median.clone()).unwrap_or_default();
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let m = &p.median;
            vec![
                p.config.name(),
                ByteSize(p.config.dram_bytes).to_string(),
                nvm_cell(&p.config),
                format!("${:.5}", p.config.cost_usd),
                ByteSize(get(m, "db_bytes_loaded") as u64).to_string(),
                fmt_rate(get(m, "throughput")),
                change(get(m, "throughput"), get(&base, "throughput")),
                format!("{:.2}", get(m, "ssd_writes_per_unit")),
                change(get(m, "ssd_writes_per_unit"), get(&base, "ssd_writes_per_unit")),
                format!("{:.2}", get(m, "double_write_pages_per_unit")),
                format!("{:.1}", get(m, "ssd_data_kib_per_unit")),
                change(get(m, "ssd_data_kib_per_unit"), get(&base, "ssd_data_kib_per_unit")),
                format!("{:.2}", get(m, "ssd_reads_per_unit")),
                pct(get(m, "dram_hit_ratio")),
                pct(get(m, "nvm_hit_ratio")),
                format!("{:.3}", get(m, "nvm_admissions_per_unit")),
            ]
        })
        .collect();
    let per = format!("per {unit}");
    table(
        &mut md,
        &[
            "configuration",
            "DRAM",
            "NVM",
            "memory cost",
            "data",
            &format!("{unit}s/s"),
            "vs DRAM-only",
            &format!("SSD page writes {per}"),
            "vs DRAM-only",
            &format!("double-write pages {per}"),
            &format!("SSD KiB written {per}"),
            "vs DRAM-only",
            &format!("SSD page reads {per}"),
            "DRAM hit",
            "NVM hit",
            &format!("NVM admissions {per}"),
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "SSD page writes: pages written in place to the page file in the measured run (evictions and checkpoints), \
         over committed {unit}s; the double-write area's copies apart (page-sized units of the area's bytes: a copy \
         and its slot header). SSD KiB written: every byte written to the SSD for data pages, the page file's and the \
         double-write file's (the log apart: alike in every configuration); an NVM double-write area (nvsql) writes \
         none of it to SSD. Hit ratios: fixes served by DRAM, by NVM (in place), out of all fixes.\n"
    );
    let charts = vec![
        (
            format!("{stem}-throughput.svg"),
            category_chart(
                &format!("{name} throughput at equal memory cost"),
                d,
                &format!("{unit}s / s"),
                points,
                &[(name, "throughput")],
            ),
        ),
        (
            format!("{stem}-writes.svg"),
            category_chart(
                &format!("{name}: SSD page writes per {unit}"),
                d,
                &format!("SSD page writes / {unit}"),
                points,
                &[("page file", "ssd_writes_per_unit"), ("double-write area", "double_write_pages_per_unit")],
            ),
        ),
    ];
    let rep = PartReport { part: "configurations", setup: d, workload: workload.into(), points };
    write_part(out, stem, &md, &rep, &charts)
}

fn write_write_set(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    header(&mut md, "Write working set over time (NV-SQL Figure 2)", d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter_map(|p| p.write_set.as_ref().map(|w| (p, w)))
        .map(|(p, w)| {
            let (mean, share) = w.mean_written();
            let [accessed, _, twice] = w.means();
            vec![
                p.config.name(),
                format!("{}", w.interval_secs),
                format!("{accessed:.0}"),
                format!("{mean:.0}"),
                format!("{twice:.0}"),
                pct(share),
                format!("{:.1} MiB", mean * d.page_size_bytes as f64 / f64::from(1 << 20)),
            ]
        })
        .collect();
    table(
        &mut md,
        &[
            "configuration",
            "interval s",
            "pages accessed / interval",
            "pages written / interval",
            "written twice / interval",
            "written / accessed",
            "write working set (pages written × page)",
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "Distinct pages per interval of the measured run: accessed (any fix), written (an exclusive fix or an \
         allocation), written at least twice. Means over the whole intervals.\n"
    );
    let mut c = Chart::new("Write working set over time (TPC-C)");
    c.subtitle = format!("{workload} · {}", d.line());
    c.x_label = "seconds into the measured run".into();
    c.y_label = "distinct pages per interval".into();
    c.y_log10 = true;
    for p in points {
        let Some(w) = &p.write_set else { continue };
        let at = |i: usize| (i as f64 + 1.0) * w.interval_secs;
        let line = |v: &[u64]| v.iter().enumerate().filter(|(_, v)| **v > 0).map(|(i, v)| (at(i), *v as f64)).collect();
        c.series.push(Series { name: format!("written, {}", p.config.label), points: line(&w.written) });
        if p.config.arch == Architecture::SsdBm {
            c.series.push(Series { name: format!("accessed, {}", p.config.label), points: line(&w.accessed) });
            c.series
                .push(Series { name: format!("written twice, {}", p.config.label), points: line(&w.written_twice) });
        }
    }
    let rep = PartReport { part: "write-set", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-write-set", &md, &rep, &[("nvsql-write-set.svg".into(), c)])
}

const PHASES: [(&str, &str); 5] = [
    ("open", "recovery_open_secs"),
    ("analysis", "recovery_analysis_secs"),
    ("redo", "recovery_redo_secs"),
    ("undo", "recovery_undo_secs"),
    ("checkpoint", "recovery_checkpoint_secs"),
];

fn write_recovery(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    header(&mut md, "Recovery time after a crash (NV-SQL Figure 10)", d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let m = &p.median;
            let mut r = vec![p.config.name()];
            r.extend(PHASES.iter().map(|(_, k)| format!("{:.3}", get(m, k))));
            r.extend([
                format!("{:.3}", get(m, "recovery_secs")),
                format!("{:.0}", get(m, "recovery_records_read")),
                ByteSize(get(m, "recovery_log_scanned_bytes") as u64).to_string(),
                format!("{:.0}", get(m, "recovery_changes_redone")),
                format!("{:.0}", get(m, "recovery_changes_skipped")),
                format!("{:.0}", get(m, "recovery_changes_skipped_unread")),
                format!("{:.0}", get(m, "recovery_changes_skipped_in_nvm")),
                format!("{:.0}", get(m, "recovery_nvm_pages_reused")),
            ]);
            r
        })
        .collect();
    table(
        &mut md,
        &[
            "configuration",
            "open s",
            "analysis s",
            "redo s",
            "undo s",
            "checkpoint s",
            "total s",
            "records read",
            "log scanned",
            "changes redone",
            "changes skipped",
            "of them unread",
            "in NVM",
            "NVM pages reused",
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "The database is abandoned right after the run (no consistency scan, which would write out every dirty page; \
         no checkpoint, no close; a New-Order and a Payment left open) and \
         reopened. open: the page file, double-write area, NVM frame headers (the in-update flag scan) and log; \
         analysis: the log pass less the time applying records; redo: applying changes, images and frees to pages; \
         undo: rolling back the open transactions; checkpoint: the one ending recovery. Changes skipped: the page \
         held them; unread: a flush record said its SSD copy was written after them, so the page was not read; in \
         NVM: the page's NVM frame held them (its header's page LSN), so the page was not fixed (NV-SQL §5.3).\n"
    );
    let series: Vec<(&str, &str)> = PHASES.to_vec();
    let c = category_chart("Recovery time by phase (TPC-C)", d, "seconds", points, &series);
    let rep = PartReport { part: "recovery", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-recovery", &md, &rep, &[("nvsql-recovery.svg".into(), c)])
}

fn write_table4(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    let cfg = points.first().map(|p| p.config.name()).unwrap_or_default();
    header(&mut md, &format!("NVM replacement (NV-SQL Table 4), {cfg}"), d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .zip(TABLE4)
        .map(|(p, (name, _))| {
            let m = &p.median;
            vec![
                name.to_string(),
                p.policy.clone(),
                fmt_rate(get(m, "throughput")),
                pct(get(m, "dram_hit_ratio")),
                pct(get(m, "nvm_hit_ratio")),
                format!("{:.2}", get(m, "ssd_writes_per_unit")),
                format!("{:.3}", get(m, "nvm_admissions_per_unit")),
                format!("{:.3}", get(m, "nvm_evictions_per_unit")),
                format!("{:.2}", get(m, "nvm_writes_in_place_per_unit")),
                format!("{} / {}", pct(1.0 - get(m, "write_amount_new")), pct(get(m, "write_amount_new"))),
                format!("{:.1} / {:.1}", get(m, "updates_per_page_old"), get(m, "updates_per_page_new")),
            ]
        })
        .collect();
    table(
        &mut md,
        &[
            "replacement",
            "policy",
            "tx/s",
            "DRAM hit",
            "NVM hit",
            "SSD page writes / tx",
            "NVM admissions / tx",
            "NVM evictions / tx",
            "in-place NVM updates / tx",
            "write amount old / new",
            "updates / page old / new",
        ],
        &rows,
    );
    md.push_str(
        "\nWrite amount: the share of the pages leaving NVM (written to SSD if dirty) that stayed in the old sublist \
         throughout / that had been promoted to the new one. Updates / page: in-place updates made while in a sublist, \
         over the pages that entered it (a stay in NVM counts once per sublist). Plain LRU has no new sublist.\n",
    );
    let mut c = Chart::new(format!("NVM replacement rules, TPC-C on {cfg}"));
    c.subtitle = d.line();
    c.x_label = "NVM replacement".into();
    c.y_label = "per transaction".into();
    c.x_categories = TABLE4.iter().map(|(n, _)| (*n).to_string()).collect();
    c.y_format = AxisFormat::Plain;
    for (name, key) in [
        ("SSD page writes", "ssd_writes_per_unit"),
        ("NVM evictions", "nvm_evictions_per_unit"),
        ("in-place NVM updates", "nvm_writes_in_place_per_unit"),
    ] {
        c.series.push(Series {
            name: name.into(),
            points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, key))).collect(),
        });
    }
    let rep = PartReport { part: "table4", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-table4", &md, &rep, &[("nvsql-table4.svg".into(), c)])
}
