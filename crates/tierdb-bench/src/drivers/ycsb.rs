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

struct Loader<'a> {
    engine: &'a Engine,
    spec: &'a YcsbSpec,
    cfg: &'a DriverConfig,
    progress: ProgressFn<'a>,
}

impl SourceVisitor for Loader<'_> {
    /// Records loaded, seconds.
    type Output = Result<(u64, f64)>;

    fn visit<S: PageSource>(self, source: &S) -> Result<(u64, f64)> {
        let (_, records, secs) = load_table(self.engine, source, self.spec, self.cfg, self.progress)?;
        Ok((records, secs))
    }
}

/// Creates the table in `source` (the page source of `engine`) and inserts the load's
/// records in key order, in the buffer manager's bulk-load mode. Returns the tree, the
/// record count and the load's seconds.
fn load_table<'s, S: PageSource>(
    engine: &Engine,
    source: &'s S,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(BTree<'s, S>, u64, f64)> {
    let tree = Catalog::create_tree(source, TABLE).context("creating the table")?;
    let bulk = |on: bool| match engine {
        Engine::Buffer(b) => b.set_bulk_load(on).context("switching bulk-load mode"),
        Engine::Memory(_) | Engine::Direct(_) => Ok(()),
    };
    let (records, secs) = load_records(&tree, &bulk, spec, cfg, progress)?;
    Ok((tree, records, secs))
}

/// `load_records` for the transactional mode (the sibling `ycsb_txn`), whose executor
/// updates fields in place at fixed offsets and does not check values: it refuses
/// workloads whose field lengths vary or that ask for `dataintegrity`.
///
/// # Errors
/// Such a workload; those of `load_records`.
pub fn fill_table<S: PageSource>(
    tree: &BTree<'_, S>,
    bulk: &dyn Fn(bool) -> Result<()>,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(u64, f64)> {
    if spec.field_lengths_vary() || spec.data_integrity() {
        bail!(
            "the transactional mode runs workloads with constant field lengths and without dataintegrity; \
             {} has fieldlengthdistribution={}, dataintegrity={} (run it without --durability)",
            spec.origin(),
            spec.field_length_distribution().name(),
            spec.data_integrity()
        );
    }
    load_records(tree, bulk, spec, cfg, progress)
}

/// Loads the load's records into the empty `tree` in key order with one bulk load
/// ([`BTree::bulk_load`]: the tree built bottom-up, each node written once, as full as
/// [`load_fill`] says), with `bulk(true)` before and `bulk(false)` after (the buffer
/// manager's bulk-load mode, where there is one). The records go straight to the tree:
/// if it is a database's, they bypass its log (a bulk load refuses a logged tree
/// handle). Returns the record count and the load's seconds.
fn load_records<S: PageSource>(
    tree: &BTree<'_, S>,
    bulk: &dyn Fn(bool) -> Result<()>,
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
) -> Result<(u64, f64)> {
    // The load's time is all of it: building and sorting the keys, the records, the
    // tree, and the buffer manager's end of bulk-load mode (ready to run).
    let started = Instant::now();
    let keyspace = KeySpace::new(spec);
    let load = keyspace.load_range();
    let records = load.end - load.start;
    // The keys are not kept: each is sorted as the two big-endian words of its sixteen
    // bytes after the key prefix that every key starts with, and its key number, from
    // which it is built again when the tree takes it. Nearly every comparison ends at
    // the words; a tie builds both keys (a word is zero padded, so a tie falls through
    // to the keys, and the order is the keys' order).
    let prefix_len = spec.key_prefix().len();
    let mut scratch = Vec::new();
    let mut keys: Vec<[u64; 3]> = load
        .map(|n| {
            build_key(spec, n, &mut scratch);
            let [hi, lo] = sort_words(&scratch, prefix_len);
            [hi, lo, n]
        })
        .collect();
    keys.sort_unstable_by(|a, b| (a[0], a[1]).cmp(&(b[0], b[1])).then_with(|| compare_keys(spec, a[2], b[2])));
    bulk(true)?;
    let mut rng = value_rng(cfg.seed, u32::MAX);
    // The records in key order, each value built as the tree asks for it.
    let mut i = 0usize;
    let mut previous = Vec::new();
    let loaded = tree.bulk_load(load_fill(spec), |key, value| {
        let Some(&[_, _, n]) = keys.get(i) else { return Ok(false) };
        build_key(spec, n, &mut scratch);
        if i > 0 && previous == scratch {
            bail!("duplicate key {:?} in the load", String::from_utf8_lossy(&scratch));
        }
        key.extend_from_slice(&scratch);
        build_record(spec, &scratch, &mut rng, value);
        std::mem::swap(&mut previous, &mut scratch);
        if (i as u64).is_multiple_of(PROGRESS_EVERY) {
            progress("load", i as u64, records);
        }
        i += 1;
        Ok(true)
    });
    let loaded = loaded.map_err(|e| match e.downcast_ref::<tierdb::Error>() {
        // The tree's errors come after the record that caused them, or with it.
        Some(_) => e.context(format!("loading record {} of {records}", i.saturating_sub(1))),
        None => e,
    })?;
    assert_eq!(loaded, records, "the bulk load took every record");
    bulk(false)?;
    drop(keys);
    let load_secs = started.elapsed().as_secs_f64();
    progress("load", records, records);
    Ok((records, load_secs))
}

/// How full [`load_records`] fills the tree's nodes: whole pages when the run never
/// grows a leaf (no inserts, and records of constant length, which updates rewrite in
/// place), so that the tree is as small as the sorted inserts the bulk load replaced
/// left it (YCSB's hashed keys share short prefixes: those filled leaves nearly
/// whole), and the run's data size does not change; else
/// [`BTREE_BULK_FILL_DEFAULT`], whose room takes the run's first inserts into a leaf
/// without splitting it. (A later epoch's workload that inserts finds full leaves, as
/// it did after the sorted inserts.)
fn load_fill(spec: &YcsbSpec) -> f64 {
    if spec.mix().insert == 0.0 && !spec.field_lengths_vary() { 1.0 } else { BTREE_BULK_FILL_DEFAULT }
}

/// Bytes `skip..skip + 16` of `key`, zero padded, as two big-endian words: for keys
/// that share their first `skip` bytes, smaller words mean a smaller key.
fn sort_words(key: &[u8], skip: usize) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    let tail = key.get(skip..).unwrap_or_default();
    let n = tail.len().min(16);
    bytes[..n].copy_from_slice(&tail[..n]);
    let (hi, lo) = bytes.split_at(8);
    [u64::from_be_bytes(hi.try_into().expect("8 bytes")), u64::from_be_bytes(lo.try_into().expect("8 bytes"))]
}

/// The order of the names of key numbers `a` and `b` (for ties of [`sort_words`]).
fn compare_keys(spec: &YcsbSpec, a: u64, b: u64) -> std::cmp::Ordering {
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    build_key(spec, a, &mut ka);
    build_key(spec, b, &mut kb);
    ka.cmp(&kb)
}

struct Runner<'a> {
    engine: &'a Engine,
    spec: &'a YcsbSpec,
    cfg: &'a DriverConfig,
    progress: ProgressFn<'a>,
}

const PHASE_WARMUP: u8 = 0;
const PHASE_MEASURE: u8 = 1;
const PHASE_STOP: u8 = 2;

/// What one operation did.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// The operation found its key (inserts and scans that saw a record count as found).
    pub found: bool,
    /// TSC ticks of the commit of a transaction that changed something; `None` when
    /// nothing was committed (raw trees, read-only transactions).
    pub commit_ticks: Option<u64>,
}

/// Runs a page provider until the flag is set ([`BufferManager::provide_pages`](tierdb::buffer::BufferManager::provide_pages)).
pub type ProviderFn<'a> = dyn Fn(&AtomicBool) -> Result<ProviderReport> + Sync + 'a;

/// The page provider of `engine` if `cfg` asks for one.
pub fn provider_of<'a>(
    engine: &'a Engine,
    cfg: &DriverConfig,
) -> Option<impl Fn(&AtomicBool) -> Result<ProviderReport> + Sync + 'a> {
    match engine {
        Engine::Buffer(b) if cfg.page_provider => {
            Some(move |stop: &AtomicBool| b.provide_pages(stop).context("the page provider"))
        }
        _ => None,
    }
}

/// Runs one worker thread's operations (the tree directly, or a database's
/// transactions).
pub trait Executor {
    /// Runs `op`.
    ///
    /// # Errors
    /// The engine's errors; they stop the run.
    fn execute(&mut self, op: Op) -> Result<Done>;

    /// Reads ahead what `ops`, about to run in this order, need (a batch of
    /// [`DriverConfig::batch`] operations). The default reads nothing.
    ///
    /// # Errors
    /// The engine's; they stop the run.
    fn prefetch(&mut self, ops: &[Op]) -> Result<()> {
        let _ = ops;
        Ok(())
    }
}

/// What one worker thread measured.
pub struct ThreadResult {
    pub ops: u64,
    /// Wall seconds from the thread's first measured operation to its last.
    pub measured_secs: f64,
    /// The thread's CPU seconds over the same span.
    pub cpu_secs: f64,
    pub not_found: u64,
    pub virtual_ps: u64,
    /// Per operation kind.
    pub hist: Vec<Histogram<u64>>,
    /// Commits of transactions that changed something.
    pub commits: Histogram<u64>,
}

/// The warm-up and measured phases: each thread's results, the phases' seconds, and a
/// snapshot of the counters taken before and after the measured phase.
pub struct Measured<T> {
    pub results: Vec<ThreadResult>,
    pub warmup_secs: f64,
    pub run_secs: f64,
    pub before: T,
    pub after: T,
    /// What the page provider did, if one ran.
    pub provider: Option<ProviderReport>,
}

impl SourceVisitor for Runner<'_> {
    type Output = Result<YcsbReport>;

    fn visit<S: PageSource>(self, source: &S) -> Result<YcsbReport> {
        let Runner { engine, spec, cfg, progress } = self;
        // 1. Load, in key order.
        let (tree, records, load_secs) = load_table(engine, source, spec, cfg, progress)?;
        let keyspace = KeySpace::new(spec);
        let data_bytes = engine.pages_in_use() * engine.page_size() as u64;

        // 2 + 3. Warm-up and run on N threads.
        // Wear counters (when on) count the measured run only: they restart with the
        // snapshot taken right before it (the first one).
        let first = std::sync::atomic::AtomicBool::new(true);
        let snapshot = || {
            let is_first = first.swap(false, Ordering::Relaxed);
            if is_first && let Some(r) = engine.nvm_region() {
                r.reset_wear();
            }
            // A recorded trace marks where the measured run starts (docs/sim.md).
            if is_first && let Engine::Buffer(b) = engine {
                b.record_marker("measure");
            }
            engine.stats()
        };
        let provider = provider_of(engine, cfg);
        let provider = provider.as_ref().map(|p| p as &ProviderFn<'_>);
        let m = run_phases(
            spec,
            &keyspace,
            cfg,
            progress,
            &snapshot,
            &|t| TreeOps::new(&tree, spec, &keyspace, cfg.seed, t),
            provider,
        )?;
        let tiers = m.after.since(&m.before);
        Ok(summary(spec, cfg, (records, load_secs, data_bytes), engine.page_size(), &m, tiers))
    }
}

/// Runs the warm-up and the measured phase on `cfg.threads` threads, each with the
/// executor `make(thread)` makes; `snapshot` is taken right before and right after the
/// measured phase.
///
/// # Errors
/// The first error of a worker (the others stop at once).
pub fn run_phases<X: Executor, T>(
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    cfg: &DriverConfig,
    progress: ProgressFn<'_>,
    snapshot: &(dyn Fn() -> T + Sync),
    make: &(dyn Fn(u32) -> X + Sync),
    provider: Option<&ProviderFn<'_>>,
) -> Result<Measured<T>> {
    let phase = AtomicU8::new(PHASE_WARMUP);
    let remaining = AtomicU64::new(spec.operation_count());
    let failed = AtomicBool::new(false);
    let counted = cfg.duration.is_none();
    let stop_provider = AtomicBool::new(false);
    let (results, warmup_secs, run_secs, before, after, provided) = std::thread::scope(|s| {
        let provider = provider.map(|p| {
            let stop = &stop_provider;
            s.spawn(move || p(stop))
        });
        let workers: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let (phase, remaining, failed) = (&phase, &remaining, &failed);
                s.spawn(move || -> Result<ThreadResult> {
                    let r = worker(make(t), spec, keyspace, cfg, t, phase, counted.then_some(remaining));
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                        phase.store(PHASE_STOP, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let warm = Instant::now();
        sleep_with_progress(cfg.warmup, "warm-up", progress, &failed);
        let warmup_secs = warm.elapsed().as_secs_f64();
        let before = snapshot();
        let start = Instant::now();
        phase.store(PHASE_MEASURE, Ordering::Release);
        match cfg.duration {
            Some(d) => sleep_with_progress(d, "run", progress, &failed),
            None => {
                let total = spec.operation_count();
                while remaining.load(Ordering::Relaxed) > 0 && !failed.load(Ordering::Relaxed) {
                    progress("run", total - remaining.load(Ordering::Relaxed), total);
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        phase.store(PHASE_STOP, Ordering::Release);
        let run_secs = start.elapsed().as_secs_f64();
        let after = snapshot();
        let results: Vec<Result<ThreadResult>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a worker thread panicked"))))
            .collect();
        stop_provider.store(true, Ordering::Release);
        let provided = provider.map(|p| {
            p.thread().unpark();
            p.join().unwrap_or_else(|_| Err(anyhow!("the page provider's thread panicked")))
        });
        (results, warmup_secs, run_secs, before, after, provided)
    });
    let results: Vec<ThreadResult> = results.into_iter().collect::<Result<_>>()?;
    let provider = provided.transpose()?;
    Ok(Measured { results, warmup_secs, run_secs, before, after, provider })
}

/// The report of a run: `(records, load seconds, data bytes)` of the load, the measured
/// phases and the tier counters over the measured one.
pub fn summary<T>(
    spec: &YcsbSpec,
    cfg: &DriverConfig,
    (records, load_secs, data_bytes): (u64, f64, u64),
    page_size: usize,
    m: &Measured<T>,
    tiers: TierStats,
) -> YcsbReport {
    let tsc = clock::rate();
    let (results, run_secs) = (&m.results, m.run_secs);
    let ops: u64 = results.iter().map(|r| r.ops).sum();
    let not_found = results.iter().map(|r| r.not_found).sum();
    let modelled_device_secs = results.iter().map(|r| r.virtual_ps as f64 * 1e-12).sum::<f64>();
    let modelled = (cfg.model || results.iter().any(|r| r.virtual_ps > 0))
        .then(|| cfg.model_clock.throughput(results, |_| run_secs));
    let mut latency = Vec::new();
    let mut all = new_histogram();
    for kind in OpKind::ALL {
        let mut h = new_histogram();
        for r in results {
            h.add(&r.hist[kind as usize]).expect("same bounds");
        }
        if h.is_empty() {
            continue;
        }
        all.add(&h).expect("same bounds");
        latency.push(summarise(kind.name(), &h, tsc));
    }
    if !all.is_empty() {
        latency.insert(0, summarise("ALL", &all, tsc));
    }
    let lines_per_page = (page_size / tierdb::limits::CACHE_LINE_BYTES) as u64;
    YcsbReport {
        workload: spec.clone(),
        records,
        record_bytes: spec.record_length_bytes(),
        record_bytes_mean: spec.record_length_mean_bytes(),
        data_bytes_target: cfg.data_bytes,
        data_bytes,
        load_secs,
        load_records_per_sec: records as f64 / load_secs.max(1e-9),
        warmup_secs: m.warmup_secs,
        run_secs,
        ops,
        throughput_ops_per_sec: ops as f64 / run_secs.max(1e-9),
        modelled_ops_per_sec: modelled,
        modelled_device_secs,
        latency,
        not_found,
        lines_nvm_to_dram: tiers.buffer.nvm_lines_loaded,
        lines_dram_to_nvm: tiers.buffer.nvm_lines_written,
        lines_ssd_to_dram: (tiers.buffer.ssd_reads + tiers.buffer.prefetch_reads) * lines_per_page,
        page_provider: m.provider.clone(),
        tiers,
    }
}

/// The latency percentiles of the commits in `results`, `None` if there were none.
pub fn commit_latency(results: &[ThreadResult]) -> Option<Latency> {
    let mut h = new_histogram();
    for r in results {
        h.add(&r.commits).expect("same bounds");
    }
    (!h.is_empty()).then(|| summarise("COMMIT", &h, clock::rate()))
}

/// A histogram of TSC ticks from 1 to ~2^42 (over half an hour at 2 GHz), 3 digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 42, 3).expect("valid histogram bounds")
}

fn summarise(kind: &str, h: &Histogram<u64>, tsc: clock::TscRate) -> Latency {
    let ns = |ticks: u64| tsc.ns_from_ticks(ticks);
    Latency {
        kind: kind.to_string(),
        ops: h.len(),
        mean_ns: h.mean() / tsc.ticks_per_ns,
        p50_ns: ns(h.value_at_quantile(0.5)),
        p90_ns: ns(h.value_at_quantile(0.9)),
        p99_ns: ns(h.value_at_quantile(0.99)),
        p999_ns: ns(h.value_at_quantile(0.999)),
        max_ns: ns(h.max()),
    }
}

fn sleep_with_progress(d: Duration, name: &str, progress: ProgressFn<'_>, failed: &AtomicBool) {
    let start = Instant::now();
    let total_ms = d.as_millis() as u64;
    while start.elapsed() < d && !failed.load(Ordering::Relaxed) {
        progress(name, start.elapsed().as_millis() as u64, total_ms);
        std::thread::sleep(Duration::from_millis(50).min(d.saturating_sub(start.elapsed())));
    }
    progress(name, total_ms, total_ms);
}

/// One worker: runs operations until the phase says stop; measures in the run phase.
/// With batches of more than one operation, a batch is read ahead together
/// ([`Executor::prefetch`]) and then run; an operation's latency runs from the start of
/// its batch (what a caller that issues the batch sees) to its own end.
fn worker<X: Executor>(
    mut exec: X,
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    cfg: &DriverConfig,
    thread: u32,
    phase: &AtomicU8,
    remaining: Option<&AtomicU64>,
) -> Result<ThreadResult> {
    let mut generator = OpGenerator::new(spec, keyspace, cfg.seed, thread);
    let mut hist: Vec<Histogram<u64>> = OpKind::ALL.iter().map(|_| new_histogram()).collect();
    let mut commits = new_histogram();
    let (mut ops, mut not_found) = (0u64, 0u64);
    let mut measuring = false;
    let mut virtual_start = 0;
    let mut measure_start = None;
    let mut cpu_start = 0;
    let mut budget = 0u64; // operations claimed from `remaining` and not yet run
    let batch_max = cfg.batch.max(1) as usize;
    let mut batch: Vec<Op> = Vec::with_capacity(batch_max);
    'run: loop {
        match phase.load(Ordering::Acquire) {
            // Operations already claimed from the count still run: the main thread stops
            // the phase once the count is all claimed, not once it is all done.
            PHASE_STOP if budget == 0 => break,
            PHASE_MEASURE if !measuring => {
                measuring = true;
                measure_start = Some(Instant::now());
                cpu_start = clock::thread_cpu_ns();
                virtual_start = clock::virtual_now_ps();
            }
            _ => {}
        }
        batch.clear();
        while batch.len() < batch_max {
            if measuring && let Some(rem) = remaining {
                if budget == 0 {
                    // Claim a batch of the operation count.
                    let got = rem
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| (r > 0).then(|| r.saturating_sub(64)));
                    match got {
                        Ok(r) => budget = r.min(64),
                        Err(_) if batch.is_empty() => break 'run,
                        Err(_) => break,
                    }
                }
                budget -= 1;
            }
            batch.push(generator.next());
            if budget == 0 && phase.load(Ordering::Relaxed) == PHASE_STOP {
                break;
            }
        }
        let t0 = clock::ticks();
        if batch.len() > 1 {
            exec.prefetch(&batch)?;
        }
        for &op in &batch {
            let done = exec.execute(op)?;
            let t1 = clock::ticks();
            if measuring {
                ops += 1;
                not_found += u64::from(!done.found);
                hist[op.kind() as usize].saturating_record(t1.saturating_sub(t0).max(1));
                if let Some(c) = done.commit_ticks {
                    commits.saturating_record(c.max(1));
                }
            }
        }
    }
    let virtual_ps = if measuring { clock::virtual_now_ps() - virtual_start } else { 0 };
    let measured_secs = measure_start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let cpu_secs = if measuring { clock::thread_cpu_ns().saturating_sub(cpu_start) as f64 * 1e-9 } else { 0.0 };
    Ok(ThreadResult { ops, measured_secs, cpu_secs, not_found, virtual_ps, hist, commits })
}

/// Operations straight on a tree: no log, no transactions.
struct TreeOps<'t, 's, S: PageSource, R: rand::Rng> {
    tree: &'t BTree<'s, S>,
    spec: &'t YcsbSpec,
    keyspace: &'t KeySpace,
    key: Vec<u8>,
    value: Vec<u8>,
    out: Vec<u8>,
    rng: R,
    /// The keys of a batch being read ahead.
    keys: Vec<Vec<u8>>,
    /// Batches left that skip reading ahead, and how many the last skip was.
    prefetch_skip: u32,
    prefetch_backoff: u32,
}

impl<'t, 's, S: PageSource> TreeOps<'t, 's, S, rand::rngs::Xoshiro256PlusPlus> {
    /// Worker `thread`'s operations on `tree`, its values drawn from `seed`.
    fn new(tree: &'t BTree<'s, S>, spec: &'t YcsbSpec, keyspace: &'t KeySpace, seed: u64, thread: u32) -> Self {
        TreeOps {
            tree,
            spec,
            keyspace,
            key: Vec::new(),
            value: Vec::new(),
            out: vec![0u8; spec.record_length_bytes()],
            rng: value_rng(seed, thread),
            keys: Vec::new(),
            prefetch_skip: 0,
            prefetch_backoff: 0,
        }
    }
}

impl<S: PageSource, R: rand::Rng> Executor for TreeOps<'_, '_, S, R> {
    #[inline]
    fn prefetch(&mut self, ops: &[Op]) -> Result<()> {
        if self.prefetch_skip > 0 {
            self.prefetch_skip -= 1;
            return Ok(());
        }
        self.keys.resize_with(ops.len(), Vec::new);
        for (op, key) in ops.iter().zip(&mut self.keys) {
            let n = match *op {
                Op::Read { key, .. }
                | Op::Update { key, .. }
                | Op::ReadModifyWrite { key, .. }
                | Op::Insert { key } => key,
                Op::Scan { start, .. } => start,
            };
            build_key(self.spec, n, key);
        }
        // Reading ahead walks each key's path once more: where a batch found everything
        // in memory, the next ones skip it, for twice as many batches each time up to
        // PREFETCH_SKIP_BATCHES_MAX (a batch that reads something resets it).
        if self.tree.prefetch(&self.keys[..ops.len()])? == 0 {
            self.prefetch_backoff = (self.prefetch_backoff * 2).clamp(1, PREFETCH_SKIP_BATCHES_MAX);
            self.prefetch_skip = self.prefetch_backoff;
        } else {
            self.prefetch_backoff = 0;
        }
        Ok(())
    }

    #[inline]
    fn execute(&mut self, op: Op) -> Result<Done> {
        let found = execute(
            self.tree,
            self.spec,
            self.keyspace,
            op,
            &mut self.key,
            &mut self.value,
            &mut self.out,
            &mut self.rng,
        )?;
        Ok(Done { found, commit_ticks: None })
    }
}

/// Runs one operation; false if its key was missing. `out` holds a record
/// ([`YcsbSpec::record_length_bytes`]); `value` is scratch space.
///
/// # Errors
/// The engine's; a record that is not laid out as the workload lays records out; with
/// `dataintegrity`, a read whose bytes are not the values written.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn execute<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    keyspace: &KeySpace,
    op: Op,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
    out: &mut [u8],
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match op {
        Op::Read { key: n, field } => {
            build_key(spec, n, key);
            read(tree, spec, key, field, out)?
        }
        Op::Update { key: n, field } => {
            build_key(spec, n, key);
            update(tree, spec, key, field, value, out, rng)?
        }
        Op::ReadModifyWrite { key: n, field } => {
            build_key(spec, n, key);
            let read_field = if spec.read_all_fields() { None } else { field };
            read(tree, spec, key, read_field, out)? && update(tree, spec, key, field, value, out, rng)?
        }
        Op::Insert { key: n } => {
            build_key(spec, n, key);
            build_record(spec, key, rng, value);
            let r = tree.insert(key, value);
            keyspace.acknowledge_insert(n);
            r?;
            true
        }
        Op::Scan { start, len, field } => {
            build_key(spec, start, key);
            let mut seen = 0u32;
            let mut malformed = None;
            tree.scan(key, |k, v| {
                let bytes = match field {
                    None => Some(v),
                    Some(f) if !spec.field_lengths_vary() => {
                        let r = field_range(spec, f);
                        v.get(r.start.min(v.len())..r.end.min(v.len()))
                    }
                    Some(f) => record_field(spec, v, f),
                };
                match bytes {
                    Some(b) if b.len() <= out.len() => out[..b.len()].copy_from_slice(b),
                    _ => {
                        malformed = Some(k.to_vec());
                        return false;
                    }
                }
                seen += 1;
                seen < len
            })?;
            if let Some(k) = malformed {
                bail!("record {} is not laid out as {} lays records out", String::from_utf8_lossy(&k), spec.origin());
            }
            seen > 0
        }
    })
}

/// Reads field `field` (`None`: all) of the record `key` into `out`; false if it is
/// missing. With constant field lengths only the field is read; else the record, from
/// which the field is picked. With `dataintegrity` the bytes are checked.
fn read<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    out: &mut [u8],
) -> Result<bool> {
    let length = if !spec.field_lengths_vary() {
        let range = match field {
            Some(f) => field_range(spec, f),
            None => 0..spec.record_length_bytes(),
        };
        tree.read_into(key, range, out)?.map(Some)
    } else {
        tree.get(key, |v| {
            let bytes = match field {
                Some(f) => record_field(spec, v, f)?,
                None => v,
            };
            out.get_mut(..bytes.len())?.copy_from_slice(bytes);
            Some(bytes.len())
        })?
    };
    match length {
        None => Ok(false),
        Some(None) => bail!("record {} is not laid out as {} lays records out", lossy(key), spec.origin()),
        Some(Some(n)) => {
            if !verify_record(spec, key, field, &out[..n]) {
                bail!(
                    "dataintegrity: record {} {} read back other bytes than were written",
                    lossy(key),
                    field.map_or("(all fields)".to_owned(), |f| format!("field {}", spec.field_name(f)))
                );
            }
            Ok(true)
        }
    }
}

fn lossy(key: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(key)
}

/// Writes field `field` anew (in place with constant field lengths; else the record
/// with the field replaced), or the whole record for `None`; false if `key` is missing.
/// `record` is scratch space for the record read.
fn update<S: PageSource>(
    tree: &BTree<'_, S>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    value: &mut Vec<u8>,
    record: &mut [u8],
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match field {
        None => {
            build_record(spec, key, rng, value);
            tree.update(key, value)?
        }
        Some(f) if !spec.field_lengths_vary() => {
            new_field_value(spec, key, f, rng, value);
            tree.update_in_place(key, field_range(spec, f).start, value)?
        }
        Some(f) => {
            let Some(n) = tree.get(key, |v| {
                record[..v.len()].copy_from_slice(v);
                v.len()
            })?
            else {
                return Ok(false);
            };
            if !replace_field(spec, key, &record[..n], f, rng, value) {
                bail!("record {} is not laid out as {} lays records out", lossy(key), spec.origin());
            }
            tree.update(key, value)?
        }
    })
}

/// Fills `value` with new printable bytes for field `f`; returns the field's offset.
pub fn new_field(spec: &YcsbSpec, f: u32, value: &mut Vec<u8>, rng: &mut impl rand::Rng) -> usize {
    let r = field_range(spec, f);
    value.resize(r.len(), 0);
    tierdb_workload::ycsb::fill_printable(rng, value);
    r.start
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierdb::ByteSize;
    use tierdb::device::DramConfig;
    use tierdb::sources::MemorySource;

    fn source() -> MemorySource {
        let mut cfg = DramConfig::new(ByteSize(8 << 20));
        cfg.huge_pages = false;
        MemorySource::new(&cfg).unwrap()
    }

    fn config(seed: u64) -> DriverConfig {
        DriverConfig {
            threads: 1,
            warmup: Duration::ZERO,
            duration: None,
            seed,
            data_bytes: None,
            model_clock: ModelClock::Wall,
            model: false,
            page_provider: false,
            batch: 1,
        }
    }

    /// Loads `spec`, runs `ops` operations on one thread, and returns the tree's records.
    fn load_and_run(spec: &YcsbSpec, seed: u64, ops: u32) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let src = source();
        let tree = Catalog::create_tree(&src, TABLE)?;
        load_records(&tree, &|_| Ok(()), spec, &config(seed), &|_, _, _| {})?;
        let keyspace = KeySpace::new(spec);
        let mut generator = OpGenerator::new(spec, &keyspace, seed, 0);
        let (mut key, mut value, mut out) = (Vec::new(), Vec::new(), vec![0u8; spec.record_length_bytes()]);
        let mut rng = value_rng(seed, 0);
        for _ in 0..ops {
            let op = generator.next();
            let found = execute(&tree, spec, &keyspace, op, &mut key, &mut value, &mut out, &mut rng)?;
            assert!(found, "seed {seed}: {op:?} did not find its key");
        }
        let mut records = Vec::new();
        tree.scan(&[], |k, v| {
            records.push((k.to_vec(), v.to_vec()));
            true
        })?;
        Ok(records)
    }

    #[test]
    fn records_of_varying_length_stay_whole_through_every_operation() {
        let seed = 21;
        let spec = YcsbSpec::parse(
            "recordcount=300\nfieldcount=4\nfieldlengthdistribution=uniform\nminfieldlength=0\nfieldlength=64\n\
             readallfields=false\nreadproportion=0.2\nupdateproportion=0.3\ninsertproportion=0.1\n\
             scanproportion=0.1\nreadmodifywriteproportion=0.3",
            "test",
        )
        .unwrap();
        let records = load_and_run(&spec, seed, 3000).unwrap();
        assert!(records.len() > 300, "seed {seed}: inserts ran");
        let mut lengths = std::collections::BTreeSet::new();
        for (k, v) in &records {
            for f in 0..4 {
                let field = record_field(&spec, v, f).unwrap_or_else(|| panic!("seed {seed}: {k:?} malformed"));
                lengths.insert(field.len());
            }
        }
        assert_eq!((lengths.first(), lengths.last()), (Some(&0), Some(&64)), "seed {seed}");
    }

    #[test]
    fn dataintegrity_checks_every_read_and_catches_other_bytes() {
        let seed = 22;
        let text = "recordcount=200\nfieldcount=3\nfieldlength=40\ndataintegrity=true\nreadallfields=false\n\
                    readproportion=0.4\nupdateproportion=0.2\ninsertproportion=0.1\nreadmodifywriteproportion=0.3";
        let spec = YcsbSpec::parse(text, "test").unwrap();
        let records = load_and_run(&spec, seed, 2000).unwrap();
        assert!(records.iter().all(|(k, v)| verify_record(&spec, k, None, v)), "seed {seed}");
        // A table loaded with random values fails the first read.
        let plain = YcsbSpec::parse(&text.replace("dataintegrity=true", "dataintegrity=false"), "test").unwrap();
        let src = source();
        let tree = Catalog::create_tree(&src, TABLE).unwrap();
        load_records(&tree, &|_| Ok(()), &plain, &config(seed), &|_, _, _| {}).unwrap();
        let keyspace = KeySpace::new(&spec);
        let (mut key, mut value, mut out) = (Vec::new(), Vec::new(), vec![0u8; spec.record_length_bytes()]);
        let op = Op::Read { key: 7, field: Some(1) };
        let err =
            execute(&tree, &spec, &keyspace, op, &mut key, &mut value, &mut out, &mut value_rng(seed, 0)).unwrap_err();
        assert!(err.to_string().contains("field field1 read back other bytes than were written"), "{err}");
    }

    /// The bulk load stores exactly the records the loader inserted one at a time
    /// before it: the sorted keys, each with the next value of the load's value stream
    /// (so a run's data does not depend on how the tree is built), and reports progress
    /// every `PROGRESS_EVERY` records; the transactional loader loads the same.
    #[test]
    fn the_load_stores_every_record_in_key_order_with_its_value() {
        let seed = 23;
        for text in [
            "recordcount=10000\nfieldcount=1\nfieldlength=100",
            "recordcount=3000\nfieldcount=3\nfieldlengthdistribution=uniform\nminfieldlength=0\nfieldlength=50",
        ] {
            let spec = YcsbSpec::parse(text, "test").unwrap();
            let mut keys: Vec<Vec<u8>> = KeySpace::new(&spec)
                .load_range()
                .map(|n| {
                    let mut k = Vec::new();
                    build_key(&spec, n, &mut k);
                    k
                })
                .collect();
            keys.sort_unstable();
            let mut rng = value_rng(seed, u32::MAX);
            let expected: Vec<(Vec<u8>, Vec<u8>)> = keys
                .into_iter()
                .map(|k| {
                    let mut v = Vec::new();
                    build_record(&spec, &k, &mut rng, &mut v);
                    (k, v)
                })
                .collect();
            let src = source();
            let tree = Catalog::create_tree(&src, TABLE).unwrap();
            let calls = std::sync::Mutex::new(Vec::new());
            let bulk = |on: bool| {
                calls.lock().unwrap().push(format!("bulk {on}"));
                Ok(())
            };
            let progress =
                |phase: &str, done: u64, total: u64| calls.lock().unwrap().push(format!("{phase} {done}/{total}"));
            let (records, _) = load_records(&tree, &bulk, &spec, &config(seed), &progress).unwrap();
            assert_eq!(records, expected.len() as u64, "{text}");
            let mut got = Vec::new();
            tree.scan(&[], |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                true
            })
            .unwrap();
            assert!(got == expected, "{text}: other records than the sorted inserts");
            assert_eq!(tree.check_invariants().unwrap().entries, records, "{text}");
            let n = expected.len();
            let mut want = vec!["bulk true".to_string()];
            want.extend((0..n).step_by(PROGRESS_EVERY as usize).map(|i| format!("load {i}/{n}")));
            want.extend(["bulk false".to_string(), format!("load {n}/{n}")]);
            assert_eq!(*calls.lock().unwrap(), want, "{text}");
        }
        // Full pages unless the run can grow a leaf.
        for (text, fill) in [
            ("readproportion=0.5\nupdateproportion=0.5", 1.0),
            ("readproportion=0.9\ninsertproportion=0.1", BTREE_BULK_FILL_DEFAULT),
            ("fieldlengthdistribution=uniform\nreadproportion=0.5\nupdateproportion=0.5", BTREE_BULK_FILL_DEFAULT),
        ] {
            assert_eq!(load_fill(&YcsbSpec::parse(text, "test").unwrap()), fill, "{text}");
        }
        let spec = YcsbSpec::parse("recordcount=2000\nfieldcount=2\nfieldlength=30", "test").unwrap();
        let src = source();
        let tree = Catalog::create_tree(&src, TABLE).unwrap();
        let (records, _) = fill_table(&tree, &|_| Ok(()), &spec, &config(seed), &|_, _, _| {}).unwrap();
        assert_eq!((records, tree.check_invariants().unwrap().entries), (2000, 2000));
    }

    /// Sorting by word, then key, is sorting by key, for keys with a common prefix:
    /// short keys, zero bytes and ties in the first sixteen bytes after it included.
    #[test]
    fn sort_words_keep_the_order_of_keys() {
        use rand::prelude::*;
        let mut rng = SmallRng::seed_from_u64(24);
        for skip in [0, 4] {
            let mut keys: Vec<Vec<u8>> = (0..5000)
                .map(|_| {
                    let mut k = b"user"[..skip].to_vec();
                    let len = rng.random_range(0..22);
                    k.extend((0..len).map(|_| [0u8, 1, b'5', 0xff][rng.random_range(0..4)]));
                    k
                })
                .collect();
            let mut by_word: Vec<([u64; 2], Vec<u8>)> = keys.iter().map(|k| (sort_words(k, skip), k.clone())).collect();
            keys.sort_unstable();
            by_word.sort_unstable();
            assert!(by_word.into_iter().map(|(_, k)| k).eq(keys), "prefix of {skip} bytes");
        }
    }

    #[test]
    fn the_transactional_loader_refuses_what_its_executor_cannot_run() {
        let src = source();
        let tree = Catalog::create_tree(&src, TABLE).unwrap();
        for text in ["fieldlengthdistribution=zipfian", "dataintegrity=true"] {
            let spec = YcsbSpec::parse(text, "test").unwrap();
            let err = fill_table(&tree, &|_| Ok(()), &spec, &config(1), &|_, _, _| {}).unwrap_err();
            assert!(err.to_string().contains("constant field lengths and without dataintegrity"), "{err}");
        }
    }
}
