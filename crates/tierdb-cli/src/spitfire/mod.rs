//! `tierdb spitfire`: the experiments of Spitfire's §6.5, §6.6 and §6.8 (Arulraj,
//! Pavlo, Malladi) on the `spitfire` policy of `three-tier`, on YCSB.
//!
//! Parts (`--parts`):
//! - `sweep` (Figures 5–7): D = Dr = Dw from 1 down to 0.001 with N = Nr = Nw = 1, and
//!   N from 1 down to 0.001 with D = 1: throughput and NVM line writes per operation.
//! - `policies` (Table 3, Figures 11–12): the eager policy and A–D.
//! - `tuners` (§6.6): a static sweep over a grid of knobs (`--grid` values per knob) for
//!   the best static policy, then each tuner (`--tuners`) online from the eager start,
//!   `--tuner-seeds` times; the tuning time each run needs (in full epochs: the
//!   funnel's short screen epochs count for what they ran) until the policy it has
//!   chosen is within 10% of the grid's best, judged by a measurement of that policy
//!   made the grid's way (never by the tuner's own, possibly lucky, epochs), the medians
//!   over the seeds, and each final choice judged the same way.
//!
//! A static run opens a fresh engine, loads the table, sets the knobs, runs
//! `--settle-epochs` unmeasured epochs (the buffers settle under the policy) and then
//! `--measure-epochs` epochs, and reports the median epoch's throughput and the NVM
//! lines written per operation over the measured epochs. A tuner's run is `tierdb
//! tune`'s loop ([`tierdb_bench::experiments::tuning::Session`]). The default mode is `model`, so throughputs
//! are modelled from the device profiles, with each thread's own time taken from its
//! CPU clock (`--model-clock cpu`), which the machine's other processes do not
//! inflate; it still varies a little from run to run.

mod charts;
mod table;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::policy::KNOB_MIN;
use tierdb::tune as tuning;

use tierdb_bench::experiments::spitfire::{Ctx, Plan, PolicyRow, SweepRow, TunerComparison, policies, sweep, tuners};
use tierdb_bench::experiments::tuning::{EPOCH_OPS_MAX, EPOCHS_MAX, TunerArgs, check_arch, check_engine_args};
use tierdb_bench::harness::{EngineArgs, Machine, Progress, Setup, remove_files_on_interrupt};
use tierdb_bench::plot::write_outputs;

/// The parts, in the order they run.
const PARTS: &[&str] = &["sweep", "policies", "tuners"];
/// Static runs: at most this many grid points.
const GRID_POINTS_MAX: usize = 10_000;
/// Runs of each tuner at most.
const TUNER_SEEDS_MAX: u32 = 100;

#[derive(Args, Debug)]
#[command(mut_arg("duration", |a| a.default_value("0").hide(true).help("Refused: runs are counted in epochs")))]
#[command(mut_arg("mode", |a| a.default_value("model")))]
#[command(mut_arg("warmup", |a| a.default_value("0").help("Seconds of timed warm-up before a run's first epoch (static runs settle by --settle-epochs instead)")))]
#[command(mut_arg("policy", |a| a.default_value(tierdb_bench::experiments::tuning::KNOB_POLICY).help("Placement policy: spitfire (the only one with migration knobs); spitfire:clean-to-nvm admits clean DRAM victims to NVM with probability Nw too (tierdb's rule before issue 22; the paper admits only modified ones)")))]
#[command(mut_arg("ssd_dir", |a| a.default_value("/dev/shm").help("Directory of the SSD page file (default /dev/shm: the SSD is emulated by its profile, and real disk time would blur a modelled throughput)")))]
#[command(mut_arg("cpu_cache", |a| a.default_value(tierdb_bench::experiments::tuning::KNOB_CPU_CACHE).help(tierdb_bench::experiments::tuning::KNOB_CPU_CACHE_HELP)))]
#[command(mut_arg("model_clock", |a| a.default_value(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK).help(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK_HELP)))]
pub struct SpitfireArgs {
    /// Parts to run, comma-separated: sweep, policies, tuners.
    #[arg(long, value_delimiter = ',', default_value = "sweep,policies,tuners")]
    parts: Vec<String>,
    /// Workloads, comma-separated (ro, rw:PCT, a..f, or property files).
    #[arg(long, value_delimiter = ',', default_value = "ro,rw:50")]
    workloads: Vec<String>,
    #[arg(long, default_value = "three-tier")]
    arch: String,
    #[arg(long, default_value = "8MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "32MiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "64MiB")]
    data: ByteSize,
    /// Operations per epoch (static runs and tuning steps).
    #[arg(long, default_value_t = 100_000)]
    epoch_ops: u64,
    /// Static runs: unmeasured epochs after the knobs are set.
    #[arg(long, default_value_t = 2)]
    settle_epochs: u32,
    /// Static runs: measured epochs (the median epoch is reported).
    #[arg(long, default_value_t = 3)]
    measure_epochs: u32,
    /// The tuner comparison's static grid: the values each knob takes.
    #[arg(long, value_delimiter = ',', default_value = "1,0.1,0.01")]
    grid: Vec<f64>,
    /// The grid runs on one live engine: unmeasured epochs after each point's knobs are
    /// set.
    #[arg(long, default_value_t = 1)]
    grid_settle_epochs: u32,
    /// Measured epochs per grid point (the median is taken).
    #[arg(long, default_value_t = 2)]
    grid_measure_epochs: u32,
    /// Tuners compared.
    #[arg(long, value_delimiter = ',', default_value = "anneal,coord,funnel")]
    tuners: Vec<String>,
    /// Runs of each tuner, with seeds --seed, --seed + 1, … (the tuner's and the
    /// workload's); the comparison quotes medians over them.
    #[arg(long, default_value_t = 5)]
    tuner_seeds: u32,
    /// Epochs of a tuner's run at most (it also ends when the tuner is done).
    #[arg(long, default_value_t = 80)]
    epochs_max: u32,
    #[command(flatten)]
    tuner_args: TunerArgs,
    /// Directory for the tables, JSON and SVG plots.
    #[arg(long, default_value = "tierdb-spitfire")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
pub(super) struct SpitfireReport {
    pub(super) command: &'static str,
    pub(super) version: &'static str,
    pub(super) machine: Machine,
    pub(super) arch: Architecture,
    pub(super) dram_bytes: u64,
    pub(super) nvm_bytes: u64,
    pub(super) data_bytes_target: u64,
    pub(super) epoch_ops: u64,
    pub(super) settle_epochs: u32,
    pub(super) measure_epochs: u32,
    pub(super) setups: Vec<Setup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sweep: Option<Vec<SweepRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) policies: Option<Vec<PolicyRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tuners: Option<Vec<TunerComparison>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tuner_config: Option<tuning::TunerConfig>,
    pub(super) notes: Vec<String>,
}

fn check(args: &SpitfireArgs) -> Result<Vec<&'static str>> {
    check_engine_args(&args.engine)?;
    let mut parts = Vec::new();
    for p in &args.parts {
        let p = p.trim();
        let Some(&known) = PARTS.iter().find(|&&k| k == p) else {
            bail!("--parts: unknown part {p:?}; known: {}", PARTS.join(", "));
        };
        if parts.contains(&known) {
            bail!("--parts: {p} is listed twice");
        }
        parts.push(known);
    }
    if parts.is_empty() || args.workloads.is_empty() {
        bail!("--parts and --workloads need at least one entry each");
    }
    if args.epoch_ops == 0 || args.epoch_ops > EPOCH_OPS_MAX {
        bail!("--epoch-ops {} is outside 1..={EPOCH_OPS_MAX}", args.epoch_ops);
    }
    for (settle, measure, what) in [
        (args.settle_epochs, args.measure_epochs, "--settle-epochs/--measure-epochs"),
        (args.grid_settle_epochs, args.grid_measure_epochs, "--grid-settle-epochs/--grid-measure-epochs"),
    ] {
        if measure == 0 || settle.saturating_add(measure) > EPOCHS_MAX {
            bail!("{what}: at least one measured epoch, and at most {EPOCHS_MAX} in all");
        }
    }
    if !(1..=TUNER_SEEDS_MAX).contains(&args.tuner_seeds) {
        bail!("--tuner-seeds {} is outside 1..={TUNER_SEEDS_MAX}", args.tuner_seeds);
    }
    if args.epochs_max == 0 || args.epochs_max > EPOCHS_MAX {
        bail!("--epochs-max {} is outside 1..={EPOCHS_MAX}", args.epochs_max);
    }
    if args.grid.is_empty() || args.grid.iter().any(|v| !(KNOB_MIN..=1.0).contains(v)) {
        bail!("--grid {:?}: values must be in [{KNOB_MIN}, 1]", args.grid);
    }
    if args.grid.len().pow(4) > GRID_POINTS_MAX {
        bail!(
            "--grid of {} values has {} points, more than {GRID_POINTS_MAX}",
            args.grid.len(),
            args.grid.len().pow(4)
        );
    }
    for t in &args.tuners {
        if !tuning::TUNER_NAMES.contains(&t.as_str()) {
            bail!("--tuners: unknown tuner {t:?}; known: {}", tuning::TUNER_NAMES.join(", "));
        }
    }
    args.tuner_args.config(args.engine.seed)?;
    Ok(parts)
}

pub fn run(args: SpitfireArgs) -> Result<()> {
    let parts = check(&args)?;
    let arch = check_arch(&args.arch)?;
    let setups: Vec<Setup> = args.workloads.iter().map(|w| args.engine.setup(w.trim())).collect::<Result<_>>()?;
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let progress = Progress::new(!args.quiet);
    let plan = Plan {
        engine: args.engine.clone(),
        dram: args.dram,
        nvm: args.nvm,
        data: args.data,
        epoch_ops: args.epoch_ops,
        settle_epochs: args.settle_epochs,
        measure_epochs: args.measure_epochs,
        grid: args.grid.clone(),
        grid_settle_epochs: args.grid_settle_epochs,
        grid_measure_epochs: args.grid_measure_epochs,
        tuners: args.tuners.clone(),
        tuner_seeds: args.tuner_seeds,
        epochs_max: args.epochs_max,
        tuner_args: args.tuner_args.clone(),
        quiet: args.quiet,
    };
    let ctx = Ctx { args: &plan, arch, progress: &progress };
    let started = std::time::Instant::now();
    let sweep = parts.contains(&"sweep").then(|| sweep(&ctx, &setups)).transpose()?;
    let policies = parts.contains(&"policies").then(|| policies(&ctx, &setups)).transpose()?;
    let tuners = parts.contains(&"tuners").then(|| tuners(&ctx, &setups)).transpose()?;
    progress.finish();
    let mut notes = vec![
        format!(
            "static runs: a fresh engine per policy, knobs set after the load, {} unmeasured epochs, then the median of {} epochs of {} operations",
            args.settle_epochs, args.measure_epochs, args.epoch_ops
        ),
        format!(
            "throughput is {}; NVM writes are cache lines written to the NVM device per operation",
            if setups[0].mode == tierdb::device::EmulationMode::Model {
                format!(
                    "modelled (operations / (the thread's {} time + modelled device time)); the CPU part varies a little between runs",
                    setups[0].model_clock.name()
                )
            } else {
                "measured (wall time)".to_string()
            }
        ),
        format!("{:.1} minutes in all", started.elapsed().as_secs_f64() / 60.0),
    ];
    if tuners.is_some() {
        notes.push(format!(
            "tuners start eager, epochs of {} operations, at most {}, {} seeds each ({}..); 'within 10%' is the tuning time, in full epochs (a short screen epoch counts for what it ran), by the end of the first epoch after which the policy the tuner has chosen (its best so far) is one whose judged throughput is at 90% or more of the best point of the grid {:?}: a grid point is judged by its grid measurement, any other policy is measured the grid's way ({} settling and the median of {} epochs on one live engine), so a lucky tuning epoch does not count; medians over the seeds, a run that never got there counting as infinitely many; 'final' is the judged throughput of the tuner's final choice",
            args.epoch_ops, args.epochs_max, args.tuner_seeds, args.engine.seed, args.grid, args.grid_settle_epochs, args.grid_measure_epochs
        ));
    }
    let report = SpitfireReport {
        command: "spitfire",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        arch,
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes_target: args.data.bytes(),
        epoch_ops: args.epoch_ops,
        settle_epochs: args.settle_epochs,
        measure_epochs: args.measure_epochs,
        tuner_config: tuners.as_ref().map(|_| args.tuner_args.config(args.engine.seed)).transpose()?,
        setups,
        sweep,
        policies,
        tuners,
        notes,
    };
    let text = table::render_text(&report);
    write_outputs(&args.out, "spitfire", &text, &report, &charts::charts(&report))
}
