//! `tierdb nvcache-obp`: the NVCache paper's admission experiment (§3.2.3, the shape of
//! its Table 1) on the `nvcache` architecture — always-admit against the overhead
//! bypass ratio computed since start-up and over a sliding window, on YCSB A (50%
//! updates) and C (read only). Each row reports throughput, NVM writes (device lines and
//! pages written), the NVM hit ratio, admissions and bypasses.
//!
//! The NVM profile's write-to-read interference (`optane-dcpmm`: a read within 1 µs of
//! a write costs 3.5×) is what makes admissions expensive; the command runs in `model`
//! mode by default, where every device cost is the profile's, charged on a virtual
//! clock. SSD page writes skip the double-write area by default (the paper's engine
//! writes new blocks and has none); `--double-write on` restores it.
//!
//! Parts (`--parts`): `table1`, the rows above; `phases`, workload phases in turn on
//! one engine per admission mode, epoch by epoch, which shows why OBP is taken over a
//! window ([`nvcache_phases`]); `overhead`, the paper's Figure 4: what the NVM cache
//! costs data the DRAM holds, under always-admit, small-bypass and small-bypass + OBP;
//! `cost`, its Figure 8(a): a memory budget split between DRAM and NVM as its Table 4,
//! throughput per memory cost against all DRAM
//! ([`tierdb_bench::experiments::nvcache_paper`]).

mod paper;
mod phases;
mod table;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::policy::ObpMode;

use tierdb_bench::experiments::nvcache_obp::{Row, table1};
use tierdb_bench::experiments::nvcache_paper::{self, CostRow, OverheadRow};
use tierdb_bench::experiments::nvcache_phases::{self, PhasePlan, PhaseReport};
use tierdb_bench::harness::{EngineArgs, Machine, Progress, Setup, devices_line, remove_files_on_interrupt};
use tierdb_bench::plot::write_outputs;

const RUNS_MAX: usize = 25;
const WORKLOADS_MAX: usize = 8;
/// The parts of the command.
const PARTS: &[&str] = &["table1", "phases", "overhead", "cost"];

#[derive(Args, Debug)]
#[command(mut_arg("mode", |a| a.default_value("model")))]
#[command(mut_arg("double_write", |a| a.default_value("off")))]
#[command(mut_arg("obp", |a| a.hide(true).help("Refused: every row sets its own")))]
#[command(mut_arg("model_clock", |a| a.default_value(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK).help(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK_HELP)))]
pub struct NvcacheObpArgs {
    /// Parts to run, comma-separated: table1 (each workload under each admission mode),
    /// phases (--phases in turn on one engine per mode, epoch by epoch), overhead (Figure
    /// 4: the NVM cache's cost for data the DRAM holds) and cost (Figure 8a: throughput
    /// per memory cost over DRAM/NVM splits of a budget).
    #[arg(long, value_delimiter = ',', default_value = "table1,phases,overhead,cost")]
    parts: Vec<String>,
    /// YCSB workloads, comma-separated (a..f or a property file).
    #[arg(long, value_delimiter = ',', default_value = "a,c")]
    workloads: Vec<String>,
    #[arg(long, default_value = "16MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "64MiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "192MiB")]
    data: ByteSize,
    /// Runs of each row; the table and plots show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The phases part: YCSB workloads run in turn, comma-separated (default: reads,
    /// then updates only, then reads again).
    #[arg(long, value_delimiter = ',', default_value = "c,rw:100,c")]
    phases: Vec<String>,
    /// The phases part: epochs per phase.
    #[arg(long, default_value_t = 8)]
    phase_epochs: u32,
    /// The phases part: operations per epoch.
    #[arg(long, default_value_t = 20_000)]
    phase_epoch_ops: u64,
    /// The overhead part: the engine's DRAM cache; the OS buffer cache is taken to be as
    /// large (the os-page-cache SSD profile), the NVM is --nvm.
    #[arg(long, default_value = "16MiB")]
    overhead_dram: ByteSize,
    /// The overhead part: the data, above --overhead-dram and at most twice it.
    #[arg(long, default_value = "24MiB")]
    overhead_data: ByteSize,
    /// The cost part: the memory budget split between DRAM and NVM (the paper: 96 GB).
    #[arg(long, default_value = "96MiB")]
    budget: ByteSize,
    /// The cost part: the data, beyond the budget (the paper: 1.4–2.7× it).
    #[arg(long, default_value = "240MiB")]
    cost_data: ByteSize,
    /// The cost part: NVM's price per byte as a share of DRAM's (the paper: 0.38).
    #[arg(long, default_value_t = tierdb_bench::experiments::nvcache_paper::NVM_COST_RATIO_PAPER)]
    nvm_cost_ratio: f64,
    /// Directory for nvcache-obp.txt, .json and the SVG plots.
    #[arg(long, default_value = "tierdb-nvcache-obp")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
pub(super) struct ObpReport {
    pub(super) command: &'static str,
    pub(super) version: &'static str,
    pub(super) machine: Machine,
    pub(super) dram_bytes: u64,
    pub(super) nvm_bytes: u64,
    pub(super) data_bytes: u64,
    pub(super) runs: usize,
    pub(super) setup: Setup,
    pub(super) notes: Vec<String>,
    pub(super) rows: Vec<Row>,
    pub(super) phases: Option<PhaseReport>,
    /// The overhead part (Figure 4).
    pub(super) overhead: Vec<OverheadRow>,
    /// The cost part (Figure 8a).
    pub(super) cost: Vec<CostRow>,
    pub(super) nvm_cost_ratio: f64,
}

pub fn run(args: NvcacheObpArgs) -> Result<()> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if args.workloads.is_empty() || args.workloads.len() > WORKLOADS_MAX {
        bail!("--workloads takes 1..={WORKLOADS_MAX} workloads");
    }
    if args.engine.obp != ObpMode::Window {
        bail!("--obp does not apply: the rows are always-admit, cumulative and windowed OBP");
    }
    if args.engine.policy.as_deref().is_some_and(|p| p != "nvcache") {
        bail!("--policy does not apply: the experiment runs the nvcache policy");
    }
    if let Some(p) = args.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
        bail!("--parts: unknown part {p:?}; known: {}", PARTS.join(", "));
    }
    if args.parts.is_empty() {
        bail!("--parts takes at least one of {}", PARTS.join(", "));
    }
    let plan = PhasePlan {
        workloads: args.phases.clone(),
        epochs_per_phase: args.phase_epochs,
        epoch_ops: args.phase_epoch_ops,
    };
    let want = |p: &str| args.parts.iter().any(|x| x == p);
    // Bad phases fail now, not after the table1 rows have run.
    let phase_specs = if want("phases") {
        plan.validate()?;
        plan.workloads(&args.engine)?
    } else {
        Vec::new()
    };
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut engine = args.engine.clone();
    // The SSD page file on /dev/shm unless told otherwise: in `model` mode its profile is
    // charged, and the medium's own time (small there) stays out of the way.
    if engine.ssd_dir.is_none() && args.engine.mode == tierdb::device::EmulationMode::Model {
        engine.ssd_dir = Some(PathBuf::from("/dev/shm"));
    }
    let progress = Progress::new(!args.quiet);
    let (rows, first_setup) = if want("table1") {
        table1(&engine, &args.workloads, args.runs, (args.dram, args.nvm, args.data), &progress)?
    } else {
        (Vec::new(), None)
    };
    let mut setup = match first_setup {
        Some(s) => s,
        None => engine.setup(&args.workloads[0])?,
    };
    setup.nvcache.obp_mode = ObpMode::Window;
    let phases = if want("phases") {
        Some(nvcache_phases::run(&engine, &setup, (&plan, &phase_specs), (args.dram, args.nvm, args.data), &progress)?)
    } else {
        None
    };
    let overhead = if want("overhead") {
        nvcache_paper::overhead(
            &engine,
            &args.workloads,
            args.runs,
            (args.overhead_dram, args.nvm, args.overhead_data),
            &progress,
        )?
    } else {
        Vec::new()
    };
    let cost = if want("cost") {
        nvcache_paper::cost(
            &engine,
            &args.workloads,
            args.runs,
            (args.budget, args.cost_data),
            args.nvm_cost_ratio,
            &progress,
        )?
    } else {
        Vec::new()
    };
    progress.finish();
    let notes = table::notes(&setup, &engine);
    let report = ObpReport {
        command: "nvcache-obp",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes: args.data.bytes(),
        runs: args.runs,
        setup,
        notes,
        rows,
        phases,
        overhead,
        cost,
        nvm_cost_ratio: args.nvm_cost_ratio,
    };
    let mut text = table::render(&report);
    let mut page_cache = report.setup.clone();
    page_cache.ssd_profile = tierdb::device::DeviceProfile::preset(nvcache_paper::OS_PAGE_CACHE_PROFILE)?;
    let (mode, s) = (report.setup.mode_label(), &report.setup);
    let sub_overhead =
        devices_line(&page_cache, &mode, args.overhead_dram.bytes(), args.nvm.bytes(), args.overhead_data.bytes());
    let sub_cost = format!(
        "{} · NVM ÷ DRAM price {}",
        devices_line(s, &mode, args.budget.bytes(), 0, args.cost_data.bytes())
            .replace("NVM 0 B", "NVM 0–2/3 of the budget"),
        args.nvm_cost_ratio
    );
    if !report.overhead.is_empty() {
        text.push_str(&paper::render_overhead(&report.overhead, args.overhead_dram, args.nvm, args.overhead_data));
    }
    if !report.cost.is_empty() {
        text.push_str(&paper::render_cost(&report.cost, args.budget, args.cost_data, args.nvm_cost_ratio));
    }
    let mut charts = Vec::new();
    if !report.rows.is_empty() {
        charts.push(("nvcache-obp-throughput.svg".to_string(), table::chart(&report, false)));
        charts.push(("nvcache-obp-nvm-writes.svg".to_string(), table::chart(&report, true)));
    }
    if !report.overhead.is_empty() {
        charts.push(("nvcache-overhead.svg".to_string(), paper::overhead_chart(&report.overhead, &sub_overhead)));
    }
    if !report.cost.is_empty() {
        charts.push(("nvcache-cost.svg".to_string(), paper::cost_chart(&report.cost, &sub_cost)));
    }
    if let Some(p) = &report.phases {
        let sub = table::describe(&report);
        charts.push(("nvcache-obp-phases-hits.svg".to_string(), phases::chart(p, &sub, false)));
        charts.push(("nvcache-obp-phases-inserts.svg".to_string(), phases::chart(p, &sub, true)));
    }
    write_outputs(&args.out, "nvcache-obp", &text, &report, &charts)
}
