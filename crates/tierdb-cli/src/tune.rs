//! `tierdb tune`: Spitfire's online tuning (Arulraj, Pavlo, Malladi, §4 and §6.6) on the
//! live engine.
//!
//! The YCSB table is loaded once. Then the workload runs in epochs of `--epoch-ops`
//! operations; before each epoch the tuner ([`tierdb::tune`]: `anneal`, the paper's
//! simulated annealing, `coord`, a coordinate search, or `funnel`, a coarse-to-fine
//! search) proposes the four migration knobs and they are set on the running
//! `spitfire` policy (`Policy::set_knobs`); after it, the tuner observes the epoch's
//! throughput (modelled throughput in `model` mode) and the NVM cache lines written (the NVM device's counter). The run ends when the
//! tuner is done or after `--epochs-max` epochs. The report has one row per epoch, the
//! tuner's best policy, and a convergence plot (throughput per epoch and the best so
//! far).
//!
//! The pieces shared with `tierdb spitfire` are [`tierdb_bench::experiments::tuning`]:
//! [`open_spitfire`] opens an engine whose policy has knobs, [`Session`] drives a tuner
//! through the driver's epochs, [`fmt_knobs`] prints knobs.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::tune::{self as tuning, Best, EpochRecord, Tuner, TunerConfig};
use tierdb_bench::drivers::ycsb::{self as ycsb_driver, Loaded};
use tierdb_bench::experiments::tuning::{
    COMPARE_MODEL_CLOCK, COMPARE_MODEL_CLOCK_HELP, EPOCH_OPS_MAX, EPOCHS_MAX, EpochDetail, KNOB_CPU_CACHE,
    KNOB_CPU_CACHE_HELP, KNOB_POLICY, Session, TunerArgs, action_name, check_arch, check_engine_args,
    convergence_series, fmt_knobs, open_spitfire, tuning_time_label, workload_name,
};
use tierdb_bench::harness::{EngineArgs, Machine, Progress, Setup, devices_line, fmt_rate, remove_files_on_interrupt};
use tierdb_bench::plot::{Chart, LegendPosition, write_notes, write_outputs};

#[derive(Args, Debug)]
#[command(mut_arg("duration", |a| a.default_value("0").hide(true).help("Refused: a run is epochs of --epoch-ops")))]
#[command(mut_arg("mode", |a| a.default_value("model")))]
#[command(mut_arg("warmup", |a| a.default_value("0").help("Seconds of unmeasured warm-up before the first epoch (see also --warmup-epochs)")))]
#[command(mut_arg("policy", |a| a.default_value(KNOB_POLICY).help("Placement policy: spitfire (the only one with migration knobs)")))]
#[command(mut_arg("ssd_dir", |a| a.default_value("/dev/shm").help("Directory of the SSD page file (default /dev/shm: the SSD is emulated by its profile, and real disk time would blur a modelled throughput)")))]
#[command(mut_arg("cpu_cache", |a| a.default_value(KNOB_CPU_CACHE).help(KNOB_CPU_CACHE_HELP)))]
#[command(mut_arg("model_clock", |a| a.default_value(COMPARE_MODEL_CLOCK).help(COMPARE_MODEL_CLOCK_HELP)))]
pub struct TuneArgs {
    /// Architecture: one with a buffer manager, NVM and SSD (three-tier).
    #[arg(long, default_value = "three-tier")]
    arch: String,
    /// Tuner: anneal (the paper's simulated annealing), coord (coordinate search) or
    /// funnel (a screen of widely spaced policies, a shortlist, then coord).
    #[arg(long, default_value = "coord")]
    tuner: String,
    /// ro, rw:PCT, scan, a..f, or a YCSB property file.
    #[arg(long, default_value = "ro")]
    workload: String,
    #[arg(long, default_value = "8MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "32MiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "64MiB")]
    data: ByteSize,
    /// Operations per epoch (the paper: 1M per tuning step at its scale).
    #[arg(long, default_value_t = 100_000)]
    epoch_ops: u64,
    /// Epochs at most.
    #[arg(long, default_value_t = 80)]
    epochs_max: u32,
    /// Unmeasured epochs with the start knobs before the first tuning epoch.
    #[arg(long, default_value_t = 3)]
    warmup_epochs: u32,
    /// Keep running the tuner's final choice until --epochs-max once it is done.
    #[arg(long)]
    hold: bool,
    #[command(flatten)]
    tuner_args: TunerArgs,
    /// Directory for tune.txt, tune.json and tune.svg.
    #[arg(long, default_value = "tierdb-tune")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar and no per-epoch lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
struct TuneReport {
    command: &'static str,
    version: &'static str,
    machine: Machine,
    arch: Architecture,
    dram_bytes: u64,
    nvm_bytes: u64,
    data_bytes_target: u64,
    setup: Setup,
    load: Loaded,
    tuner: String,
    tuner_config: TunerConfig,
    epoch_ops: u64,
    epochs_max: u32,
    warmup_epochs: u32,
    done: bool,
    best: Option<Best>,
    trajectory: Vec<EpochRecord>,
    epochs: Vec<EpochDetail>,
    notes: Vec<String>,
}

pub fn run(args: TuneArgs) -> Result<()> {
    check_engine_args(&args.engine)?;
    let arch = check_arch(&args.arch)?;
    if args.epoch_ops == 0 || args.epoch_ops > EPOCH_OPS_MAX {
        bail!("--epoch-ops {} is outside 1..={EPOCH_OPS_MAX}", args.epoch_ops);
    }
    if args.epochs_max == 0 || args.epochs_max > EPOCHS_MAX {
        bail!("--epochs-max {} is outside 1..={EPOCHS_MAX}", args.epochs_max);
    }
    if args.warmup_epochs > EPOCHS_MAX {
        bail!("--warmup-epochs {} is above {EPOCHS_MAX}", args.warmup_epochs);
    }
    let setup = args.engine.setup(&args.workload)?;
    let tuner_cfg = args.tuner_args.config(setup.seed)?;
    let tuner = tuning::by_name(&args.tuner, &tuner_cfg)?;
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    let progress = Progress::new(!args.quiet);
    let opened = open_spitfire(&args.engine, &setup, arch, (args.dram, args.nvm, args.data), "tune")?;
    let driver = args.engine.driver_config(&setup, Some(args.data));
    let mut session = Session::new(
        tuner,
        &opened.engine,
        (tuner_cfg.start, args.warmup_epochs),
        args.epochs_max,
        args.hold,
        &progress,
        !args.quiet,
    );
    let load = ycsb_driver::run_epochs(
        &opened.engine,
        &setup.workload,
        &driver,
        args.epoch_ops,
        &|p, d, t| progress.update(p, d, t),
        &mut session,
    )?;
    progress.finish();
    let (tuner, details) = session.finish();
    drop(opened);

    let report = TuneReport {
        command: "tune",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        arch,
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes_target: args.data.bytes(),
        notes: notes(&setup, &*tuner),
        setup,
        load,
        tuner: tuner.name().into(),
        tuner_config: tuner_cfg,
        epoch_ops: args.epoch_ops,
        epochs_max: args.epochs_max,
        warmup_epochs: args.warmup_epochs,
        done: tuner.done(),
        best: tuner.best(),
        trajectory: tuner.trajectory().to_vec(),
        epochs: details,
    };
    let text = render_text(&report);
    write_outputs(&args.out, "tune", &text, &report, &[("tune.svg".into(), chart(&report))])
}

fn notes(setup: &Setup, tuner: &dyn Tuner) -> Vec<String> {
    let mut n = vec![format!(
        "throughput: {} per epoch; NVM writes: cache lines written to the NVM device per operation",
        if setup.mode == tierdb::device::EmulationMode::Model {
            "modelled (operations / (wall + modelled device time))"
        } else {
            "measured (wall time)"
        }
    )];
    n.push(match tuner.name() {
        "anneal" => "anneal: best = the epoch with the highest single measured cost; T = the temperature the candidate was judged at".into(),
        _ => "coord: best = the incumbent, its throughput the mean of its epochs; 'again' = measured once more before the decision".into(),
    });
    if !tuner.done() {
        n.push(format!("the tuner was not done after {} epochs", tuner.trajectory().len()));
    }
    n
}

fn describe(r: &TuneReport) -> String {
    let s = &r.setup;
    format!(
        "{} · {} · {} ({} {:?}) · {} · {} warm-up epochs, then epochs of {} ops · λ {}",
        r.machine.label(),
        r.arch,
        workload_name(&s.workload),
        s.workload.get("requestdistribution").unwrap_or_default(),
        s.workload.zipfian_constant(),
        devices_line(s, &s.mode_label(), r.dram_bytes, r.nvm_bytes, r.load.data_bytes),
        r.warmup_epochs,
        r.epoch_ops,
        r.tuner_config.objective.lambda,
    )
}

fn render_text(r: &TuneReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb tune --tuner {}: {}", r.tuner, describe(r));
    let mut t = Table::new();
    t.set_header([
        "epoch",
        "ops",
        "tuning time (epochs)",
        "knobs",
        "ops/s",
        "NVM lines/op",
        "action",
        "T",
        "best ops/s",
        "best knobs",
    ]);
    for (e, elapsed) in r.trajectory.iter().zip(tuning::epochs_elapsed(&r.trajectory, r.epoch_ops)) {
        t.add_row([
            e.epoch.to_string(),
            e.ops.to_string(),
            format!("{elapsed:.2}"),
            fmt_knobs(e.knobs),
            fmt_rate(e.throughput_ops_per_sec),
            format!("{:.2}", e.nvm_writes_per_op),
            action_name(e.action).into(),
            e.temperature.map(|t| format!("{t:.3}")).unwrap_or_default(),
            fmt_rate(e.best.throughput_ops_per_sec),
            fmt_knobs(e.best.knobs),
        ]);
    }
    let _ = writeln!(out, "\n{t}");
    if let Some(b) = &r.best {
        let _ = writeln!(
            out,
            "\nbest: {} at {} ops/s, {:.2} NVM lines/op (mean of {} epoch(s)); {} after {} epochs ({:.2} full epochs of tuning time)",
            fmt_knobs(b.knobs),
            fmt_rate(b.throughput_ops_per_sec),
            b.nvm_writes_per_op,
            b.measurements,
            if r.done { "done" } else { "not done" },
            r.trajectory.len(),
            tuning::epochs_elapsed(&r.trajectory, r.epoch_ops).last().copied().unwrap_or(0.0)
        );
    }
    write_notes(&mut out, &r.notes);
    out
}

fn chart(r: &TuneReport) -> Chart {
    let mut c = Chart::new(format!("Online tuning of the spitfire policy ({})", r.tuner));
    c.subtitle = describe(r);
    c.x_label = tuning_time_label(r.epoch_ops);
    c.y_label = "operations per second".into();
    c.legend = LegendPosition::LowerRight;
    c.series = convergence_series(&r.tuner, &r.trajectory, r.epoch_ops).into();
    c
}
