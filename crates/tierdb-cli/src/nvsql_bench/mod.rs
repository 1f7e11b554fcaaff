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
//!   (`nvsql-table4.*`);
//! - `ablation`: Figure 6 on the first nvsql configuration: DRAM-only, the NVM write
//!   cache alone (double-write area on SSD, log buffer in DRAM), + the double-write area
//!   in NVM, + the log buffer in NVM (`nvsql-ablation.*`).
//!
//! **Placement** (§5.4): DRAM-only runs with its double-write area on SSD and its log
//! buffer in DRAM (a page write-back forces the log first); nvsql with both in NVM (the
//! log ring is durable as appended: no log force at commit or before a write-back).
//!
//! With `--runs N` every number is the median of N runs; the write-set series is the
//! run with the median throughput's.

mod figures;
mod table;

use table::Describe;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use tierdb::ByteSize;
use tierdb::device::EmulationMode;
use tierdb::wal::Durability;

use tierdb_bench::drivers::tpcc::TpccOptions;
use tierdb_bench::experiments::nvsql::{TpccPlan, budget_bytes, configurations, ycsb_points};
use tierdb_bench::harness::{EngineArgs, Progress, remove_files_on_interrupt};

/// Bounds on the counts, so a typo cannot start a day-long run.
const RUNS_MAX: usize = 21;
const PARTS: [&str; 4] = ["tpcc", "ycsb", "table4", "ablation"];
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
    /// table4, ablation (Figure 6: the write cache alone, + NVM double write, + NVM log
    /// buffer).
    #[arg(long, value_delimiter = ',', default_value = "tpcc,ycsb,table4,ablation")]
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
        isolation: tierdb::db::Isolation::Snapshot,
        // Each configuration sets its own (`MemConfig::log_buffer`): DRAM for DRAM-only,
        // an NVM ring for nvsql (§5.4).
        log_buffer: "auto".into(),
        load_threads: None,
        checkpoint_interval: args.checkpoint_interval,
        write_set_interval: Some(args.write_set_interval),
    };
    tpcc.scale()?; // checks the intervals before anything runs
    let budget = budget_bytes(
        args.budget,
        args.warehouses,
        args.tiny,
        args.data_ratio,
        args.units,
        &args.nvm_units,
        page,
        &setup.dram_profile,
        &setup.nvm_profile,
    );
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
        tpcc_points = tpcc_plan.points(&configs, !args.no_crash)?;
        let workload = tpcc_workload(&args);
        table::write_config_part(&args.out, "nvsql-tpcc", "TPC-C", "transaction", &describe, &workload, &tpcc_points)?;
        table::write_write_set(&args.out, &describe, &workload, &tpcc_points)?;
        if !args.no_crash {
            figures::write_recovery(&args.out, &describe, &workload, &tpcc_points)?;
        }
    }
    if has("ycsb") {
        let points = ycsb_points(
            &engine,
            &args.ycsb_workload,
            args.durability,
            &configs,
            ByteSize(ycsb_data),
            args.runs,
            &progress,
        )?;
        let workload = format!(
            "YCSB {}, {} of data, one transaction per operation (no checkpoints while running)",
            args.ycsb_workload,
            ByteSize(ycsb_data)
        );
        table::write_config_part(&args.out, "nvsql-ycsb", "YCSB", "operation", &describe, &workload, &points)?;
    }
    if has("table4") {
        let policies = TABLE4.map(|(_, p)| p);
        let points = tpcc_plan.table4(&configs, &tpcc_points, &policies)?;
        figures::write_table4(&args.out, &describe, &tpcc_workload(&args), &points)?;
    }
    if has("ablation") {
        let points = tpcc_plan.ablation(&configs, &tpcc_points)?;
        figures::write_ablation(&args.out, &describe, &tpcc_workload(&args), &points)?;
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
