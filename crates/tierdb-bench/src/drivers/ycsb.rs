//! The YCSB driver: load a B+-tree through an architecture's page source, warm up,
//! run the measured phase on N threads, and report.
//!
//! Phases:
//! 1. **Load** (one thread): the record count comes from the workload, or from a target
//!    data size (the B+-tree's size after loading, as in the paper's §5.1). Keys are
//!    generated as YCSB names them, sorted, and bulk-loaded (`BTree::bulk_load`: the tree
//!    built bottom-up), so the load writes each node once and never reads a page back
//!    from a lower tier. During the load, the buffer manager's bulk-load mode lets evicted
//!    pages fill free NVM frames. [`load`] runs
//!    this phase alone (`restart-bench` loads, closes the engine and reopens it).
//! 2. **Warm-up** (N threads, timed): the workload runs unmeasured until the buffers
//!    settle.
//! 3. **Run** (N threads): timed, or until `operationcount` operations. Latencies go into
//!    per-kind HDR histograms in TSC ticks. Buffer and device counters are diffed over
//!    this phase only. In `model` mode each thread also diffs its virtual device clock,
//!    and its CPU clock, and the modelled throughput is Σ ops / (own time + device
//!    time) over threads, the own time being wall time or, with `--model-clock cpu`,
//!    the thread's CPU time ([`ModelClock`]).
//!
//! Phases 2 and 3 ([`run_phases`]) run any [`Executor`]: operations straight on the tree
//! here, a database's transactions in the sibling `ycsb_txn`, which also loads through
//! [`fill_table`] and reports through [`summary`].
//!
//! Records ([`execute`]): with constant field lengths a field is read and updated in
//! place at its offset. With varying field lengths (`fieldlengthdistribution` uniform,
//! zipfian or histogram) a record carries a length header, so a read fetches the record
//! and picks the field(s) out, and an update of one field reads the record and writes it
//! back whole with the field replaced, as YCSB's bindings for embedded stores do. With
//! `dataintegrity` every read (and the read of a read-modify-write) is checked against
//! YCSB's deterministic values, and a mismatch stops the run with an error naming the
//! key: wrong data from the engine is a bug, not a statistic.
//!
//! Files: this one the configuration, the report and the phases' entry points; `load`
//! the load, `phases` warm-up and measured run, `ops` the operations on a tree.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use hdrhistogram::Histogram;
use serde::Serialize;
use tierdb::arch::{Engine, SourceVisitor};
use tierdb::buffer::{ProviderReport, TierStats};
use tierdb::device::clock;
use tierdb::limits::BTREE_BULK_FILL_DEFAULT;
use tierdb::{BTree, Catalog, PageSource};
use tierdb_workload::ycsb::{new_field_value, replace_field, verify_record};
use tierdb_workload::{
    KeySpace, Op, OpGenerator, OpKind, YcsbSpec, build_key, build_record, field_range, record_field, value_rng,
};

use load::*;
use ops::*;
use phases::*;

mod load;
mod ops;
mod phases;
#[cfg(test)]
mod tests;

pub use load::fill_table;
pub use ops::{execute, new_field};
pub use phases::{
    Done, Executor, Measured, ProviderFn, ThreadResult, commit_latency, provider_of, run_phases, summary,
};

/// Bytes a record costs in a leaf beyond its key and value (slot, heap bookkeeping),
/// and the fill of leaves after a sorted load: used to turn a data size into a record
/// count. The report states the size actually reached.
const ENTRY_OVERHEAD_BYTES: f64 = 12.0;
const SORTED_LOAD_FILL: f64 = 0.93;
/// Progress is reported every this many records or operations.
const PROGRESS_EVERY: u64 = 1 << 12;
/// The most batches in a row that skip reading ahead after batches that found every
/// page in memory (`--batch`).
const PREFETCH_SKIP_BATCHES_MAX: u32 = 64;
/// Upper bound on records a load may generate (keys are held in memory to sort them).
const LOAD_RECORDS_MAX: u64 = 200_000_000;

/// How to run.
#[derive(Clone, Debug, Serialize)]
pub struct DriverConfig {
    pub threads: u32,
    #[serde(serialize_with = "secs")]
    pub warmup: Duration,
    /// Measured phase length; `None`: run `operationcount` operations.
    #[serde(serialize_with = "opt_secs")]
    pub duration: Option<Duration>,
    pub seed: u64,
    /// Target B+-tree size after the load; `None`: load `recordcount` records.
    pub data_bytes: Option<u64>,
    /// `model` mode: what a thread's own time is taken from in the modelled throughput.
    pub model_clock: ModelClock,
    /// The devices run in `model` mode: the modelled throughput is reported even when
    /// the run charged no device time (every access hit DRAM or the CPU-cache model).
    pub model: bool,
    /// Run the buffer manager's page provider on a thread beside the workers, through
    /// the warm-up and the measured phase (buffer-managed architectures only).
    pub page_provider: bool,
    /// Operations a worker takes at once: their pages are read ahead together
    /// ([`Executor::prefetch`]) before they run one after another. 1: one at a time.
    pub batch: u32,
}

/// `model` mode's throughput is Σ over threads of operations / (the thread's own time
/// + its modelled device time); this says where the thread's own time comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ModelClock {
    /// Wall time of the measured phase: includes the time the thread waited for a
    /// core that other processes held, so it moves with the machine's load.
    #[default]
    Wall,
    /// The thread's CPU time (user + system): what the thread itself ran, whatever
    /// else the machine does. Blocking waits (locks, real I/O) do not count, so it
    /// suits runs with no more threads than cores whose device waits are modelled.
    Cpu,
}

impl ModelClock {
    pub fn name(self) -> &'static str {
        match self {
            ModelClock::Wall => "wall",
            ModelClock::Cpu => "cpu",
        }
    }

    /// Σ over `threads` of operations / (own seconds + modelled device seconds), the
    /// own seconds being `wall_secs` (one figure for every thread: the phase, or the
    /// thread's own span) or the thread's CPU time.
    pub fn throughput(self, threads: &[ThreadResult], wall_secs: impl Fn(&ThreadResult) -> f64) -> f64 {
        threads
            .iter()
            .map(|t| {
                let own = match self {
                    ModelClock::Wall => wall_secs(t),
                    ModelClock::Cpu => t.cpu_secs,
                };
                t.ops as f64 / (own + t.virtual_ps as f64 * 1e-12).max(1e-9)
            })
            .sum()
    }
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// A progress event: phase name, done, total.
pub type ProgressFn<'a> = &'a (dyn Fn(&str, u64, u64) + Sync);

/// Latency percentiles of one kind of operation, nanoseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub kind: String,
    pub ops: u64,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub max_ns: f64,
}

/// What one YCSB run measured.
#[derive(Clone, Debug, Serialize)]
pub struct YcsbReport {
    /// The workload as run: the given one with `recordcount` / `insertcount` set from
    /// the data size.
    pub workload: YcsbSpec,
    pub records: u64,
    /// The longest record (every record, with constant field lengths).
    pub record_bytes: usize,
    /// The mean record length the workload draws.
    pub record_bytes_mean: f64,
    pub data_bytes_target: Option<u64>,
    /// Pages in use after the load × page size.
    pub data_bytes: u64,
    pub load_secs: f64,
    pub load_records_per_sec: f64,
    pub warmup_secs: f64,
    pub run_secs: f64,
    pub ops: u64,
    pub throughput_ops_per_sec: f64,
    /// `model` mode: Σ over threads of ops / (wall + modelled device time).
    pub modelled_ops_per_sec: Option<f64>,
    pub modelled_device_secs: f64,
    pub latency: Vec<Latency>,
    /// Reads or updates of keys the tree did not have (0 unless something is wrong).
    pub not_found: u64,
    pub tiers: TierStats,
    /// Cache lines moved between tiers in the measured run (page moves × lines per page).
    pub lines_nvm_to_dram: u64,
    pub lines_dram_to_nvm: u64,
    pub lines_ssd_to_dram: u64,
    /// What the page provider did, when one ran (`--page-provider`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_provider: Option<ProviderReport>,
}

/// Loads, warms up and runs `spec` on `engine`.
///
/// # Errors
/// Engine errors (e.g. data that does not fit an architecture), a bad configuration.
pub fn run(engine: &Engine, spec: &YcsbSpec, cfg: &DriverConfig, progress: ProgressFn<'_>) -> Result<YcsbReport> {
    if cfg.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if cfg.page_provider && !matches!(engine, Engine::Buffer(_)) {
        bail!("--page-provider needs an architecture with a buffer manager (not main-memory or nvm-direct)");
    }
    let spec = sized(spec, cfg)?;
    engine.visit(Runner { engine, spec: &spec, cfg, progress })
}

/// What [`load`] did.
#[derive(Clone, Debug, Serialize)]
pub struct Loaded {
    /// The workload as loaded: the given one with `recordcount` / `insertcount` set from
    /// the data size. Run it, not the given one, against the loaded table.
    pub workload: YcsbSpec,
    pub records: u64,
    pub data_bytes_target: Option<u64>,
    /// Pages in use after the load × page size.
    pub data_bytes: u64,
    pub load_secs: f64,
}

/// Phase 1 alone: creates the table and loads it as [`run`] does, then returns; the
/// table stays in `engine` under [`TABLE`].
///
/// # Errors
/// As [`run`].
pub fn load(engine: &Engine, spec: &YcsbSpec, cfg: &DriverConfig, progress: ProgressFn<'_>) -> Result<Loaded> {
    let spec = sized(spec, cfg)?;
    let (records, load_secs) = engine.visit(Loader { engine, spec: &spec, cfg, progress })?;
    let data_bytes = engine.pages_in_use() * engine.page_size() as u64;
    Ok(Loaded { workload: spec, records, data_bytes_target: cfg.data_bytes, data_bytes, load_secs })
}

/// What one epoch of [`run_epochs`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct EpochRun {
    pub ops: u64,
    /// Σ over threads of the thread's operations / its own measured seconds (the
    /// main thread's polling does not count).
    pub throughput_ops_per_sec: f64,
    /// `model` mode: Σ over threads of operations / (the thread's own seconds, by
    /// [`DriverConfig::model_clock`], + its modelled device time).
    pub modelled_ops_per_sec: Option<f64>,
    /// Buffer and device counters over the epoch.
    pub tiers: TierStats,
}

impl EpochRun {
    /// The modelled throughput in `model` mode, the measured one otherwise.
    pub fn ops_per_sec(&self) -> f64 {
        self.modelled_ops_per_sec.unwrap_or(self.throughput_ops_per_sec)
    }

    /// Cache lines written to NVM (device counter: page write-backs, in-place writes,
    /// frame headers).
    pub fn nvm_line_writes(&self) -> u64 {
        self.tiers.nvm.map_or(0, |n| n.write_lines)
    }
}

/// The hooks of [`run_epochs`].
pub trait EpochHooks {
    /// Before epoch `epoch` (from 0; epoch 0 comes after the load and before the
    /// warm-up). False ends the run.
    ///
    /// # Errors
    /// Any: it ends the run.
    fn before(&mut self, epoch: u32) -> Result<bool>;

    /// After epoch `epoch`.
    ///
    /// # Errors
    /// Any: it ends the run.
    fn after(&mut self, epoch: u32, run: &EpochRun) -> Result<()>;

    /// The operations epoch `epoch` runs, asked after [`EpochHooks::before`]; `full` is
    /// the configured epoch length. The default runs full epochs.
    fn epoch_ops(&mut self, _epoch: u32, full: u64) -> u64 {
        full
    }

    /// The workload epoch `epoch` runs, asked after [`EpochHooks::before`]; `None`: the
    /// run's own. Its record count is the loaded table's whatever it says, so a run can
    /// change the operation mix between epochs (phases) on the same data.
    fn epoch_workload(&mut self, _epoch: u32) -> Option<YcsbSpec> {
        None
    }
}

/// Loads the table once, then runs epochs of `epoch_ops` operations on the live engine
/// until `hooks.before` says stop: the online tuner's loop. The timed warm-up of `cfg`
/// runs once, before epoch 0 (after `before(0)`); `cfg.duration` is ignored. Each
/// epoch draws its operations from its own seed (derived from `cfg.seed` and the
/// epoch), so epochs do not repeat one another's keys.
///
/// # Errors
/// As [`run`], and the hooks' errors.
pub fn run_epochs(
    engine: &Engine,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    epoch_ops: u64,
    progress: ProgressFn<'_>,
    hooks: &mut dyn EpochHooks,
) -> Result<Loaded> {
    if cfg.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if epoch_ops == 0 {
        bail!("an epoch needs at least one operation");
    }
    let spec = sized(spec, cfg)?;
    let (records, load_secs) = engine.visit(Epochs { engine, spec: &spec, cfg, epoch_ops, progress, hooks })?;
    let data_bytes = engine.pages_in_use() * engine.page_size() as u64;
    Ok(Loaded { workload: spec, records, data_bytes_target: cfg.data_bytes, data_bytes, load_secs })
}

struct Epochs<'a> {
    engine: &'a Engine,
    spec: &'a YcsbSpec,
    cfg: &'a DriverConfig,
    epoch_ops: u64,
    progress: ProgressFn<'a>,
    hooks: &'a mut dyn EpochHooks,
}

impl SourceVisitor for Epochs<'_> {
    /// Records loaded, load seconds.
    type Output = Result<(u64, f64)>;

    fn visit<S: PageSource>(self, source: &S) -> Result<(u64, f64)> {
        let Epochs { engine, spec, cfg, epoch_ops, progress, hooks } = self;
        let (tree, records, load_secs) = load_table(engine, source, spec, cfg, progress)?;
        let keyspace = KeySpace::new(spec);
        let mut epoch = 0u32;
        while hooks.before(epoch)? {
            let ops = hooks.epoch_ops(epoch, epoch_ops);
            if !(1..=epoch_ops).contains(&ops) {
                bail!("epoch {epoch} asks for {ops} operations, not in 1..={epoch_ops}");
            }
            let mut epoch_spec = match hooks.epoch_workload(epoch) {
                Some(mut w) => {
                    for key in ["recordcount", "insertstart", "insertcount"] {
                        if let Some(v) = spec.get(key) {
                            w.set(key, &v).with_context(|| format!("epoch {epoch}: setting {key} of its workload"))?;
                        }
                    }
                    // It must name keys and lay out records as the loaded table does.
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    for n in [0, spec.record_count().saturating_sub(1)] {
                        build_key(spec, n, &mut a);
                        build_key(&w, n, &mut b);
                        if a != b || !w.same_records_as(spec) {
                            bail!(
                                "epoch {epoch}: its workload {} names keys or lays out records otherwise than the loaded table's {}",
                                w.origin(),
                                spec.origin()
                            );
                        }
                    }
                    w
                }
                None => spec.clone(),
            };
            epoch_spec.set("operationcount", &ops.to_string()).context("setting the epoch's operationcount")?;
            let mut c = cfg.clone();
            c.duration = None;
            if epoch > 0 {
                c.warmup = Duration::ZERO;
            }
            c.seed = cfg.seed ^ u64::from(epoch).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let (c, spec) = (&c, &epoch_spec);
            let m = run_phases(
                spec,
                &keyspace,
                c,
                progress,
                &|| engine.stats(),
                &|t| TreeOps::new(&tree, spec, &keyspace, c.seed, t),
                None,
            )?;
            let r = &m.results;
            let run = EpochRun {
                ops: r.iter().map(|t| t.ops).sum(),
                throughput_ops_per_sec: r.iter().map(|t| t.ops as f64 / t.measured_secs.max(1e-9)).sum(),
                modelled_ops_per_sec: r
                    .iter()
                    .any(|t| t.virtual_ps > 0)
                    .then(|| c.model_clock.throughput(r, |t| t.measured_secs)),
                tiers: m.after.since(&m.before),
            };
            hooks.after(epoch, &run)?;
            epoch = epoch.checked_add(1).context("too many epochs")?;
        }
        Ok((records, load_secs))
    }
}

/// `spec` with its record count set from the target data size, if there is one.
pub fn sized(spec: &YcsbSpec, cfg: &DriverConfig) -> Result<YcsbSpec> {
    let mut spec = spec.clone();
    let mut key = Vec::new();
    build_key(&spec, spec.record_count().saturating_sub(1), &mut key);
    if let Some(bytes) = cfg.data_bytes {
        let per_record = key.len() as f64 + spec.record_length_mean_bytes() + ENTRY_OVERHEAD_BYTES;
        let records = ((bytes as f64 * SORTED_LOAD_FILL / per_record) as u64).max(1);
        if records > LOAD_RECORDS_MAX {
            bail!(
                "a data size of {} needs {records} records, above the limit of {LOAD_RECORDS_MAX}",
                tierdb::ByteSize(bytes)
            );
        }
        spec.set("recordcount", &records.to_string()).context("setting recordcount from --data")?;
        // This instance loads all of them from insertstart on (a file's insertcount would
        // no longer match the new record count).
        let count = records.checked_sub(spec.insert_start()).filter(|&c| c > 0).ok_or_else(|| {
            anyhow!("--data gives {records} records, not more than insertstart {}", spec.insert_start())
        })?;
        spec.set("insertcount", &count.to_string()).context("setting insertcount from --data")?;
    }
    Ok(spec)
}

/// The table the driver creates and loads.
pub const TABLE: &str = "usertable";
