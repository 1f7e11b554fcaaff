//! The tuning experiments' shared pieces (`tune`, `spitfire`, `nvcache-obp`): the
//! engine options they take by default, the tuners' parameters, an engine opened with
//! the spitfire policy ([`open_spitfire`]), a tuner driven through the driver's epochs
//! ([`Session`]), and the names and series their reports share.
//!
//! Invariants: knobs are set only on a policy that has them ([`knob_policy`]); a run
//! is counted in epochs, never by `--duration` ([`check_engine_args`]).

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{Architecture, Engine};
use tierdb::buffer::BufferManager;
use tierdb::policy::MigrationKnobs;
use tierdb::tune::{self as tuning, EpochRecord, Measurement, Tuner, TunerConfig};
use tierdb_workload::YcsbSpec;

use crate::drivers::ycsb::{EpochHooks, EpochRun};
use crate::harness::{Cleanup, EngineArgs, Progress, Setup, fmt_rate};
use crate::plot::Series;

/// The only policy with migration knobs.
pub const KNOB_POLICY: &str = "spitfire";
/// The CPU-cache model of the knob experiments (`tune`, `spitfire`), and why.
pub const KNOB_CPU_CACHE: &str = tierdb::page::CPU_CACHE_MODEL_DEFAULT;
pub const KNOB_CPU_CACHE_HELP: &str = "The CPU last-level cache that charges for NVM lines read in place: a share of the data (default 0.2%, the three-tier paper's 20 MB L3 over 10 GB, at least 256 KiB) or a size (1MiB); 0 charges every read (docs/tuning.md)";
/// The model clock of the commands that compare policies epoch by epoch or run by
/// run (`tune`, `spitfire`, `nvcache-obp`), and why.
pub const COMPARE_MODEL_CLOCK: &str = "cpu";
pub const COMPARE_MODEL_CLOCK_HELP: &str = "model mode: each thread's own time in the modelled throughput (ops / (own time + modelled device time)): cpu (the default here: the thread's CPU time, which the machine's other processes do not inflate, so runs made minutes apart on a shared machine compare) or wall";
/// Bounds on an epoch and on a run, so a typo cannot start an hour-long run.
pub const EPOCH_OPS_MAX: u64 = 100_000_000;
pub const EPOCHS_MAX: u32 = 100_000;

/// The tuners' parameters on the command line (shared with `tierdb spitfire`).
#[derive(Args, Debug, Clone)]
pub struct TunerArgs {
    /// λ of the objective Cost(T, W) = T + λ / W (T ops/s, W NVM lines written per
    /// operation); 0 tunes for throughput alone.
    #[arg(long, default_value_t = 0.0)]
    pub lambda: f64,
    /// The knobs of the first epoch: a preset (eager, a–d) or dr=X,dw=X,nr=X,nw=X.
    #[arg(long, default_value = "eager")]
    pub start: MigrationKnobs,
    /// anneal: cooling factor α.
    #[arg(long, default_value_t = 0.9)]
    pub alpha: f64,
    /// anneal: accepted transitions per temperature γ.
    #[arg(long, default_value_t = 10)]
    pub gamma: u32,
    /// anneal: initial temperature T0.
    #[arg(long, default_value_t = 800.0)]
    pub t0: f64,
    /// anneal: final temperature Tmin.
    #[arg(long, default_value_t = 0.00008)]
    pub t_min: f64,
    /// anneal: energy E = −scale · Cost / Cost(first epoch).
    #[arg(long, default_value_t = 1000.0)]
    pub energy_scale: f64,
    /// coord: the assumed relative noise of one epoch's throughput.
    #[arg(long, default_value_t = 0.02)]
    pub noise: f64,
}

impl TunerArgs {
    /// The tuner configuration with `seed`.
    ///
    /// # Errors
    /// A λ, a start or a tuner parameter out of range.
    pub fn config(&self, seed: u64) -> Result<TunerConfig> {
        let mut cfg = TunerConfig::new(seed);
        cfg.objective = tuning::Objective::new(self.lambda)?;
        cfg.start = self.start;
        cfg.anneal.alpha = self.alpha;
        cfg.anneal.gamma = self.gamma;
        cfg.anneal.t0 = self.t0;
        cfg.anneal.t_min = self.t_min;
        cfg.anneal.energy_scale = self.energy_scale;
        cfg.coord.noise = self.noise;
        // Both, whichever tuner runs: a bad option is an error even where unused.
        cfg.anneal.validate()?;
        cfg.coord.validate()?;
        Ok(cfg)
    }
}

/// Checks the engine options shared by `tune` and `spitfire`: the policy must be
/// spitfire, the run is counted in epochs.
pub fn check_engine_args(engine: &EngineArgs) -> Result<()> {
    let policy = engine.policy.as_deref().unwrap_or(KNOB_POLICY);
    if policy.split(':').next() != Some(KNOB_POLICY) {
        bail!(
            "--policy {policy}: tuning sets Spitfire's migration knobs (Dr, Dw, Nr, Nw), which only the {KNOB_POLICY} policy has"
        );
    }
    if engine.duration != 0.0 {
        bail!("--duration does not apply: runs are counted in epochs of --epoch-ops operations");
    }
    Ok(())
}

/// Checks an architecture for tuning: a buffer manager over NVM and SSD.
pub fn check_arch(arch: &str) -> Result<Architecture> {
    let arch: Architecture = arch.parse()?;
    if !(arch.has_buffer() && arch.uses_nvm() && arch.uses_ssd()) {
        bail!("--arch {arch}: Spitfire's knobs move pages between DRAM, NVM and SSD; use three-tier");
    }
    Ok(arch)
}

/// The buffer manager of `engine`, if its policy has migration knobs.
///
/// # Errors
/// An engine without a buffer manager, or a policy without knobs.
pub fn knob_policy(engine: &Engine) -> Result<&BufferManager> {
    let Engine::Buffer(bm) = engine else { bail!("tuning needs an engine with a buffer manager") };
    if bm.knobs().is_none() {
        bail!("policy {} has no migration knobs; tuning needs {KNOB_POLICY}", bm.policy().name());
    }
    Ok(bm)
}

/// Sets `knobs` on `engine`'s policy.
///
/// # Errors
/// As [`knob_policy`], or a policy that refused them.
pub fn set_knobs(engine: &Engine, knobs: MigrationKnobs) -> Result<()> {
    let bm = knob_policy(engine)?;
    if !bm.set_knobs(knobs) {
        bail!("policy {} refused knobs {}", bm.policy().name(), fmt_knobs(knobs));
    }
    Ok(())
}

/// An engine opened for tuning, with its files removed when it is dropped.
pub struct Opened {
    pub engine: Engine,
    _files: Cleanup,
}

/// Opens `arch` with the spitfire policy and fresh files named after `tag`, its
/// CPU-cache model sized for `data`.
///
/// # Errors
/// Opening the engine; a policy without knobs.
pub fn open_spitfire(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    tag: &str,
) -> Result<Opened> {
    let mut cfg = engine_args.arch_config(setup, arch, dram, nvm, Some(data), tag)?;
    cfg.policy.get_or_insert_with(|| KNOB_POLICY.into());
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch} with the {KNOB_POLICY} policy"))?;
    knob_policy(&engine)?;
    Ok(Opened { engine, _files: files })
}

/// What an epoch measured beyond the tuner's record.
#[derive(Clone, Debug, Serialize)]
pub struct EpochDetail {
    pub ops: u64,
    pub wall_ops_per_sec: f64,
    pub modelled_ops_per_sec: Option<f64>,
    pub dram_hits: u64,
    pub nvm_hits: u64,
    pub ssd_reads: u64,
    pub ssd_page_writes: u64,
    pub nvm_line_writes: u64,
}

impl EpochDetail {
    pub fn of(run: &EpochRun) -> EpochDetail {
        let b = &run.tiers.buffer;
        EpochDetail {
            ops: run.ops,
            wall_ops_per_sec: run.throughput_ops_per_sec,
            modelled_ops_per_sec: run.modelled_ops_per_sec,
            dram_hits: b.dram_hits,
            nvm_hits: b.nvm_hits,
            ssd_reads: b.ssd_reads,
            ssd_page_writes: run.tiers.ssd.map_or(0, |s| s.writes),
            nvm_line_writes: run.nvm_line_writes(),
        }
    }
}

/// A tuner driven through the driver's epochs on one engine, after `warmup_epochs`
/// unmeasured epochs with the start knobs (the buffers leave the load's state).
pub struct Session<'a> {
    pub tuner: Box<dyn Tuner>,
    engine: &'a Engine,
    start: MigrationKnobs,
    warmup_epochs: u32,
    epochs_max: u32,
    hold: bool,
    progress: &'a Progress,
    /// Print a line per epoch.
    verbose: bool,
    pub details: Vec<EpochDetail>,
}

impl<'a> Session<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tuner: Box<dyn Tuner>,
        engine: &'a Engine,
        (start, warmup_epochs): (MigrationKnobs, u32),
        epochs_max: u32,
        hold: bool,
        progress: &'a Progress,
        verbose: bool,
    ) -> Session<'a> {
        Session { tuner, engine, start, warmup_epochs, epochs_max, hold, progress, verbose, details: Vec::new() }
    }

    /// The tuner and the epochs' details, releasing the engine.
    pub fn finish(self) -> (Box<dyn Tuner>, Vec<EpochDetail>) {
        (self.tuner, self.details)
    }
}

impl EpochHooks for Session<'_> {
    fn before(&mut self, epoch: u32) -> Result<bool> {
        let Some(epoch) = epoch.checked_sub(self.warmup_epochs) else {
            set_knobs(self.engine, self.start)?;
            self.progress.set_prefix(&format!("{} warm-up", self.tuner.name()));
            return Ok(true);
        };
        if epoch >= self.epochs_max || (self.tuner.done() && !self.hold) {
            return Ok(false);
        }
        let knobs = self.tuner.propose();
        set_knobs(self.engine, knobs)?;
        self.progress.set_prefix(&format!("{} epoch {epoch}", self.tuner.name()));
        Ok(true)
    }

    fn epoch_ops(&mut self, epoch: u32, full: u64) -> u64 {
        if epoch < self.warmup_epochs {
            return full;
        }
        let f = self.tuner.epoch_fraction();
        debug_assert!(f > 0.0 && f <= 1.0, "epoch fraction {f}");
        ((full as f64 * f).round() as u64).clamp(1, full)
    }

    fn after(&mut self, epoch: u32, run: &EpochRun) -> Result<()> {
        let Some(epoch) = epoch.checked_sub(self.warmup_epochs) else { return Ok(()) };
        let m = Measurement {
            ops: run.ops,
            throughput_ops_per_sec: run.ops_per_sec(),
            nvm_line_writes: run.nvm_line_writes(),
        };
        let r = *self.tuner.observe(m);
        debug_assert_eq!(r.epoch, epoch);
        self.details.push(EpochDetail::of(run));
        if self.verbose {
            self.progress.println(&epoch_line(&r));
        }
        Ok(())
    }
}

/// Knobs with three significant digits: `dr=0.01 dw=1 nr=0.316 nw=1`.
pub fn fmt_knobs(k: MigrationKnobs) -> String {
    let f = |v: f64| format!("{v:.2e}").parse::<f64>().map_or_else(|_| v.to_string(), |r| r.to_string());
    format!("dr={} dw={} nr={} nw={}", f(k.dr), f(k.dw), f(k.nr), f(k.nw))
}

pub fn epoch_line(r: &EpochRecord) -> String {
    format!(
        "epoch {:>3}  {:>9} ops  {:<34} {:>8} ops/s  {:>6.2} NVM lines/op  {:<10}{}  best {} ({})",
        r.epoch,
        r.ops,
        fmt_knobs(r.knobs),
        fmt_rate(r.throughput_ops_per_sec),
        r.nvm_writes_per_op,
        action_name(r.action),
        r.temperature.map(|t| format!(" T={t:.3}")).unwrap_or_default(),
        fmt_rate(r.best.throughput_ops_per_sec),
        fmt_knobs(r.best.knobs),
    )
}

pub fn action_name(a: tuning::Action) -> &'static str {
    match a {
        tuning::Action::Start => "start",
        tuning::Action::Accepted => "accepted",
        tuning::Action::Rejected => "rejected",
        tuning::Action::Confirming => "again",
        tuning::Action::Remeasured => "remeasure",
        tuning::Action::Screened => "screen",
        tuning::Action::Shortlisted => "shortlist",
        tuning::Action::Hold => "hold",
    }
}

/// Throughput per epoch and the best so far.
pub fn convergence_series(name: &str, trajectory: &[EpochRecord], epoch_ops: u64) -> [Series; 2] {
    let x = tuning::epochs_elapsed(trajectory, epoch_ops);
    [
        Series {
            name: format!("{name}: epoch"),
            points: trajectory.iter().zip(&x).map(|(e, &x)| (x, e.throughput_ops_per_sec)).collect(),
        },
        Series {
            name: format!("{name}: best so far"),
            points: trajectory.iter().zip(&x).map(|(e, &x)| (x, e.best.throughput_ops_per_sec)).collect(),
        },
    ]
}

/// The x-axis of a convergence plot.
pub fn tuning_time_label(epoch_ops: u64) -> String {
    format!("tuning time, epochs of {epoch_ops} operations (at the end of each epoch)")
}

/// A short name of a workload: `YCSB-RO`, `YCSB-R/W 50%`, or its mix.
pub fn workload_name(spec: &YcsbSpec) -> String {
    let m = spec.mix();
    let pct = |x: f64| (100.0 * x).round();
    if m.read >= 1.0 {
        "YCSB-RO".into()
    } else if (m.read + m.update - 1.0).abs() < 1e-9 {
        format!("YCSB-R/W {}%", pct(m.update))
    } else {
        format!(
            "YCSB read {}% update {}% insert {}% scan {}% rmw {}%",
            pct(m.read),
            pct(m.update),
            pct(m.insert),
            pct(m.scan),
            pct(m.read_modify_write)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_print_short() {
        let k = MigrationKnobs { dr: 0.01, dw: 1.0, nr: 10f64.powf(-0.5), nw: 0.001 };
        assert_eq!(fmt_knobs(k), "dr=0.01 dw=1 nr=0.316 nw=0.001");
    }

    #[test]
    fn workloads_have_short_names() {
        assert_eq!(workload_name(&YcsbSpec::builtin("ro").unwrap()), "YCSB-RO");
        assert_eq!(workload_name(&YcsbSpec::builtin("rw:50").unwrap()), "YCSB-R/W 50%");
    }
}
