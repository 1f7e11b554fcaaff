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
//! window ([`nvcache_phases`]).

mod phases;
mod table;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::policy::ObpMode;

use tierdb_bench::experiments::nvcache_obp::{Row, table1};
use tierdb_bench::experiments::nvcache_phases::{self, PhasePlan, PhaseReport};
use tierdb_bench::harness::{EngineArgs, Machine, Progress, Setup, remove_files_on_interrupt};
use tierdb_bench::plot::write_outputs;

const RUNS_MAX: usize = 25;
const WORKLOADS_MAX: usize = 8;
/// The parts of the command.
const PARTS: &[&str] = &["table1", "phases"];

#[derive(Args, Debug)]
#[command(mut_arg("mode", |a| a.default_value("model")))]
#[command(mut_arg("double_write", |a| a.default_value("off")))]
#[command(mut_arg("obp", |a| a.hide(true).help("Refused: every row sets its own")))]
#[command(mut_arg("model_clock", |a| a.default_value(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK).help(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK_HELP)))]
pub struct NvcacheObpArgs {
    /// Parts to run, comma-separated: table1 (each workload under each admission mode)
    /// and phases (--phases in turn on one engine per mode, epoch by epoch).
    #[arg(long, value_delimiter = ',', default_value = "table1,phases")]
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
    };
    let text = table::render(&report);
    let mut charts = Vec::new();
    if !report.rows.is_empty() {
        charts.push(("nvcache-obp-throughput.svg".to_string(), table::chart(&report, false)));
        charts.push(("nvcache-obp-nvm-writes.svg".to_string(), table::chart(&report, true)));
    }
    if let Some(p) = &report.phases {
        let sub = table::describe(&report);
        charts.push(("nvcache-obp-phases-hits.svg".to_string(), phases::chart(p, &sub, false)));
        charts.push(("nvcache-obp-phases-inserts.svg".to_string(), phases::chart(p, &sub, true)));
    }
    write_outputs(&args.out, "nvcache-obp", &text, &report, &charts)
}
