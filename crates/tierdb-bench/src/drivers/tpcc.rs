//! The TPC-C run loop behind `tierdb bench tpcc`, `compare --workload tpcc` and
//! `nvsql-bench`: TPC-C on a tierdb database ([`tierdb::db::Db`]), one architecture.
//!
//! The transactions, loader and consistency conditions are `tierdb_workload::tpcc`;
//! this module runs them on a `Db` whose eleven trees are the nine tables and the two
//! secondary indexes, each TPC-C transaction one tierdb transaction ([`DbTx`]).
//! Every architecture has transactions: a buffer manager with its page file on SSD
//! (`ssd-bm`, `three-tier`, `nvcache`, `nvsql`) or with its pages in the NVM pool
//! (`basic-nvm-bm`, `mmap-*`) through [`Db::open`], `nvm-direct` through
//! [`Db::open_nvm_direct`], `main-memory` (pages in DRAM, a snapshot per checkpoint)
//! through [`Db::open_main_memory`]; each recovers after `--crash`.
//!
//! Phases:
//! 1. **Load**, parallel by warehouse (a shared queue of the item table and the
//!    warehouses), through transactions of [`LOAD_BATCH_ROWS`] rows, then a checkpoint.
//! 2. **Warm-up** and 3. **measured run**: `--threads` workers run the standard mix back
//!    to back. A transaction that meets a lock wait over the limit or a row a concurrent
//!    Delivery took is rolled back and retried (counted as an abort); New-Order's 1%
//!    with an unused item is rolled back and counted apart. A background thread takes a
//!    checkpoint every `--checkpoint-interval` seconds from the warm-up's start, while
//!    the workers run (so the log is truncated and a crash's redo is bounded, as in a
//!    real deployment); with `--write-set-interval` a recorder counts the distinct pages
//!    accessed and written per interval of the measured run ([`crate::write_set`]).
//! 4. **Consistency**: conditions 1–6 and the indexes are checked on the quiet database.
//!    With `--crash`, the database is instead abandoned right after the run, without a
//!    checkpoint or close (a New-Order and a Payment left open), reopened — recovery
//!    redoes and undoes from the log — and then checked: a check before the crash would
//!    scan every table and write out every dirty page on the way, leaving recovery
//!    little of what a crash during the run leaves it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use hdrhistogram::Histogram;
use serde::Serialize;
use tierdb::arch::Architecture;
use tierdb::buffer::{BufferManager, TierStats};
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore, MemoryStore, Txn};
use tierdb::device::{NvmConfig, clock};
use tierdb::sources::DirectConfig;
use tierdb::sources::NvmDirect;
use tierdb::wal::{Durability, LogBuffer, Lsn, WalStats};
use tierdb::{ByteSize, PageSource};
use tierdb_workload::tpcc::{
    self, ConsistencyReport, Kind, LoadCounts, Mix, Scale, Table, TpccTx, TxError, check_consistency,
};

use crate::harness::{Cleanup, DURATION_SECS_MAX, EngineArgs, Progress, Setup};
use crate::write_set::{WriteSet, WriteSetRecorder};

/// Rows per loader transaction.
pub const LOAD_BATCH_ROWS: u64 = 2000;
/// Retries of one transaction after aborts before the run fails.
const RETRIES_MAX: u32 = 1000;
/// Loader threads at most.
const LOAD_THREADS_MAX: u32 = 64;
/// Longest a latency histogram records: 100 s in TSC ticks at up to 10 GHz.
const LATENCY_TICKS_MAX: u64 = 1_000_000_000_000;
/// Seconds between the checkpoints taken while transactions run, by default: a
/// checkpoint of a database that fits in DRAM takes 1–2 s here (docs/tpcc.md), so one
/// every 10 s costs a run little and bounds the log to about 10 s of transactions.
pub const CHECKPOINT_INTERVAL_SECS_DEFAULT: f64 = 10.0;
/// Checkpoint and write-set intervals: at least this (0 turns checkpoints off)...
const INTERVAL_SECS_MIN: f64 = 0.1;
/// ...and at most this.
const INTERVAL_SECS_MAX: f64 = 3600.0;

/// Options of the TPC-C workload shared with `compare --workload tpcc`.
#[derive(Args, Debug, Clone)]
pub struct TpccOptions {
    /// Warehouses (about 100 MB each at the specification's scale).
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// A tiny population for tests (1,000 items, 30 customers per district): NOT
    /// spec-conformant.
    #[arg(long)]
    pub tiny: bool,
    /// sync (a commit waits for its log records to be durable), group (the log is made
    /// durable every millisecond) or none (nothing logged).
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    /// Where the log buffer lives: dram, nvm (a ring in a file beside the NVM pool), or
    /// auto: nvm for nvm-direct (its log is persisted before every in-place write-back,
    /// as in the paper's NVM-direct design), dram for the others.
    #[arg(long, default_value = "auto")]
    pub log_buffer: String,
    /// What transactions see of each other: snapshot (each reads the database as of
    /// its start; a write to a row committed since fails and is retried), read-committed,
    /// or read-uncommitted (reads see uncommitted rows: below the specification, for
    /// measuring what isolation costs).
    #[arg(long, default_value = "snapshot")]
    pub isolation: tierdb::db::Isolation,
    /// Loader threads [default: --threads, at least 2].
    #[arg(long)]
    pub load_threads: Option<u32>,
    /// Seconds between checkpoints taken by a background thread while the transactions
    /// run, from the warm-up's start (0: none, the log grows until the run ends).
    #[arg(long, default_value_t = CHECKPOINT_INTERVAL_SECS_DEFAULT)]
    pub checkpoint_interval: f64,
    /// Count the distinct pages accessed and written per interval of this many seconds
    /// of the measured run (the write working set, NV-SQL's Figure 2).
    #[arg(long)]
    pub write_set_interval: Option<f64>,
}

impl TpccOptions {
    pub fn scale(&self) -> Result<Scale> {
        let s = if self.tiny { Scale::tiny(self.warehouses) } else { Scale::spec(self.warehouses) };
        s.validate()?;
        let ok = |v: f64| (INTERVAL_SECS_MIN..=INTERVAL_SECS_MAX).contains(&v);
        if !(self.checkpoint_interval == 0.0 || ok(self.checkpoint_interval)) {
            bail!(
                "--checkpoint-interval {} is outside {INTERVAL_SECS_MIN}..={INTERVAL_SECS_MAX} seconds (0: none)",
                self.checkpoint_interval
            );
        }
        if let Some(w) = self.write_set_interval.filter(|&w| !ok(w)) {
            bail!("--write-set-interval {w} is outside {INTERVAL_SECS_MIN}..={INTERVAL_SECS_MAX} seconds");
        }
        Ok(s)
    }
}

/// The checkpoints taken while the transactions ran.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckpointReport {
    /// `--checkpoint-interval` (0: none taken).
    pub interval_secs: f64,
    /// Checkpoints that started in the warm-up, and in the measured run.
    pub in_warmup: u32,
    pub in_run: u32,
    /// Their time, all of them.
    pub secs_total: f64,
    pub secs_max: f64,
}

/// Counters of one transaction type.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindReport {
    pub kind: String,
    pub committed: u64,
    /// New-Orders rolled back by their unused item (the specification's 1%).
    pub rolled_back: u64,
    /// Attempts rolled back by a lock wait over the limit or a conflict, then retried.
    pub aborts: u64,
    pub per_sec: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
}

/// A TPC-C run's report.
#[derive(Serialize)]
pub struct TpccReport {
    pub command: &'static str,
    pub version: &'static str,
    pub arch: Architecture,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    pub mode: tierdb::device::EmulationMode,
    pub profiles: [String; 3],
    pub page_size_bytes: usize,
    pub threads: u32,
    pub seed: u64,
    pub durability: Durability,
    /// What the transactions saw of each other.
    pub isolation: tierdb::db::Isolation,
    pub log_buffer: String,
    pub scale: Scale,
    pub spec_conformant: bool,
    pub load_threads: u32,
    pub load_rows: LoadCounts,
    pub load_secs: f64,
    pub load_checkpoint_secs: f64,
    /// Pages in use × page size after the load, and after the run.
    pub db_bytes_loaded: u64,
    pub db_bytes_after: u64,
    pub db_bytes_per_warehouse: u64,
    pub warmup_secs: f64,
    pub run_secs: f64,
    pub kinds: Vec<KindReport>,
    /// Committed transactions of all types per second.
    pub tx_per_sec: f64,
    /// New-Orders committed per minute (tpmC, without the specification's rules on
    /// terminals and think times).
    pub new_orders_per_min: f64,
    /// `model` mode: Σ over workers of committed / (wall + modelled device time).
    pub modelled_tx_per_sec: Option<f64>,
    pub aborts: u64,
    pub tiers: TierStats,
    pub wal: WalStats,
    pub checkpoints: CheckpointReport,
    /// With `--write-set-interval`: distinct pages accessed and written per interval.
    pub write_set: Option<WriteSet>,
    /// The check after the run; with `--crash`, after recovery (the same as
    /// `crash.consistency`: a check before the crash would write out every dirty page).
    pub consistency: ConsistencyReport,
    pub consistency_checked_before_crash: bool,
    /// With `--crash`: what recovery did, and the check after it.
    pub crash: Option<CrashReport>,
}

#[derive(Serialize)]
pub struct CrashReport {
    pub open_transactions: u32,
    pub recovery: tierdb::db::RecoveryReport,
    pub consistency: ConsistencyReport,
}

/// Opens a database on `arch`, loads, runs, checks (and with `crash` crashes,
/// recovers and checks again), removes its files.
///
/// # Errors
/// Files that exist already; the engine's errors (`Full` when the data outgrows a
/// bounded architecture).
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    engine: &EngineArgs,
    setup: &Setup,
    opts: &TpccOptions,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    crash: bool,
    tag: &str,
    progress: &Progress,
) -> Result<TpccReport> {
    let scale = opts.scale()?;
    let acfg = engine.arch_config(setup, arch, dram, nvm, Some(data_bytes_estimate(&scale)), tag)?;
    let stem = acfg.ssd_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = acfg.ssd_path.with_file_name(format!("{stem}-tpcc"));
    let mut files = vec![acfg.nvm_path.clone(), acfg.nvm_double_write_path(), dir.clone()];
    let mut cfg = if arch == Architecture::NvmDirect {
        DbConfig::new(&dir)
    } else {
        DbConfig::from_arch(&acfg, &dir).with_context(|| format!("--arch {arch}"))?
    };
    cfg.durability = opts.durability;
    cfg.isolation = opts.isolation;
    // The driver checkpoints on its own schedule (`--checkpoint-interval`), and a crash
    // run measures the redo of exactly that schedule (the NV-SQL experiment).
    cfg.checkpoint = CheckpointConfig::OFF;
    if arch == Architecture::NvmDirect {
        cfg.wal.file.profile = acfg.ssd_profile.clone();
        cfg.wal.file.mode = acfg.mode;
    }
    let opts = &TpccOptions { log_buffer: resolve_log_buffer(&opts.log_buffer, arch).to_string(), ..opts.clone() };
    match opts.log_buffer.as_str() {
        "dram" => {}
        "nvm" => {
            let ring = acfg.nvm_path.with_file_name(format!("{stem}-log.nvm"));
            let mut n = NvmConfig::new(&ring, ByteSize(16 << 20));
            n.profile = acfg.nvm_profile.clone();
            n.mode = acfg.mode;
            cfg.wal.buffer = LogBuffer::Nvm(n);
            files.push(ring);
        }
        other => bail!("--log-buffer {other:?}: expected auto, dram or nvm"),
    }
    for f in &files {
        if f.exists() {
            bail!("{} exists already: it is not overwritten", f.display());
        }
    }
    let _files = Cleanup::new(files);
    if engine.trace.is_some() && opts.write_set_interval.is_some() {
        bail!("--trace and --write-set-interval both need the buffer manager's one access recorder; give one");
    }
    let ctx = RunCtx { setup, opts, scale, arch, dram, nvm, progress, trace: engine.trace.as_deref() };
    progress.set_prefix(&format!("{arch} tpcc W={}", scale.warehouses));
    if arch == Architecture::NvmDirect {
        let mut n = NvmConfig::new(&acfg.nvm_path, nvm);
        n.profile = acfg.nvm_profile.clone();
        n.mode = acfg.mode;
        n.open_mode = tierdb::device::OpenMode::OpenOrCreate;
        let mut dc = DirectConfig::new(n, acfg.page_size);
        dc.cpu_cache_bytes = acfg.cpu_cache_model.bytes();
        dc.nvm_verify = acfg.nvm_verify;
        let open = || Db::open_nvm_direct(&cfg, &dc).with_context(|| format!("opening a database on {arch}"));
        ctx.run(open, crash)
    } else if arch == Architecture::MainMemory {
        let open = || {
            Db::open_main_memory(&cfg).with_context(|| format!("opening a database on {arch} in {}", cfg.dir.display()))
        };
        ctx.run(open, crash)
    } else {
        let open = || Db::open(&cfg).with_context(|| format!("opening a database on {arch} in {}", cfg.dir.display()));
        ctx.run(open, crash)
    }
}

/// As [`run_one`], on the database a configuration file describes (`tierdb bench tpcc
/// --config`): its architecture, tiers, devices, policy, durability and log buffer come
/// from `cfg`, not from `engine` (whose workload options, threads and `--trace` still
/// apply). The database is made in `cfg.dir`, which must not exist, and its files are
/// removed after the run, as [`run_one`]'s are.
///
/// # Errors
/// A configuration without an architecture (`DbConfig::new`'s); files that exist
/// already; as [`run_one`].
pub fn run_from_config(
    engine: &EngineArgs,
    setup: &Setup,
    opts: &TpccOptions,
    cfg: &DbConfig,
    crash: bool,
    progress: &Progress,
) -> Result<TpccReport> {
    let Some(acfg) = cfg.arch.clone() else {
        bail!("the configuration has no `architecture`: bench tpcc reports one, so the file must name it");
    };
    let arch = acfg.arch;
    let scale = opts.scale()?;
    let mut files = vec![cfg.dir.clone()];
    if arch.uses_nvm() {
        files.extend([acfg.nvm_path.clone(), acfg.nvm_double_write_path()]);
    }
    let log_buffer = match &cfg.wal.buffer {
        LogBuffer::Dram => "dram",
        LogBuffer::Nvm(n) => {
            files.push(n.path.clone());
            "nvm"
        }
    };
    for f in &files {
        if f.exists() {
            bail!("{} exists already: it is not overwritten", f.display());
        }
    }
    let _files = Cleanup::new(files);
    if engine.trace.is_some() && opts.write_set_interval.is_some() {
        bail!("--trace and --write-set-interval both need the buffer manager's one access recorder; give one");
    }
    // The report names the devices the file chose.
    let setup = &setup.with_arch_config(&acfg);
    let opts = &TpccOptions {
        durability: cfg.durability,
        isolation: cfg.isolation,
        log_buffer: log_buffer.to_string(),
        ..opts.clone()
    };
    let ctx =
        RunCtx { setup, opts, scale, arch, dram: acfg.dram, nvm: acfg.nvm, progress, trace: engine.trace.as_deref() };
    progress.set_prefix(&format!("{arch} tpcc W={}", scale.warehouses));
    let opening = || format!("opening a database on {arch} in {}", cfg.dir.display());
    match arch {
        Architecture::NvmDirect => {
            let dc = cfg.direct_config()?;
            ctx.run(|| Db::open_nvm_direct(cfg, &dc).with_context(opening), crash)
        }
        Architecture::MainMemory => ctx.run(|| Db::open_main_memory(cfg).with_context(opening), crash),
        _ => ctx.run(|| Db::open(cfg).with_context(opening), crash),
    }
}

/// Bytes of a loaded database per warehouse and of the item table, at the
/// specification's population (docs/tpcc.md, measured 2026-11-25: about 78 MiB per
/// warehouse plus 9 MiB of items, 16 KiB pages).
const DB_BYTES_PER_WAREHOUSE_SPEC: u64 = 78 << 20;
const DB_BYTES_ITEMS_SPEC: u64 = 9 << 20;

/// The database's size after loading `scale`, estimated before it is loaded (the
/// CPU-cache model is sized from it when it opens): the measured sizes above, scaled
/// by the population's share of the specification's (a tiny one shrinks every
/// cardinality about as much as the items).
fn data_bytes_estimate(scale: &tierdb_workload::tpcc::Scale) -> ByteSize {
    let spec = DB_BYTES_PER_WAREHOUSE_SPEC * u64::from(scale.warehouses) + DB_BYTES_ITEMS_SPEC;
    ByteSize(spec / u64::from(tierdb_workload::tpcc::SPEC_ITEMS) * u64::from(scale.items))
}

/// `--log-buffer auto`: an NVM ring for `nvm-direct`, whose every in-place write-back
/// is logged durably first (with a DRAM buffer, one `fdatasync` each: about 50 tx/s,
/// a line flat at zero in Figure 9), DRAM for the others.
fn resolve_log_buffer(choice: &str, arch: Architecture) -> &str {
    match choice {
        "auto" if arch == Architecture::NvmDirect => "nvm",
        "auto" => "dram",
        other => other,
    }
}

/// What the store of a database reports (the buffer manager's or `nvm-direct`'s).
pub trait StoreView {
    fn tier_stats(&self) -> TierStats;
    fn bytes_in_use(&self) -> u64;
    /// Installs an access recorder; false if the store has none to install.
    fn set_recorder(&self, r: Arc<WriteSetRecorder>) -> bool;
    /// Installs a trace recorder (`--trace`); false if the store has no buffer manager.
    fn set_trace_recorder(&self, _r: Arc<tierdb_sim::record::TraceRecorder>) -> bool {
        false
    }
    /// Passes a phase marker to the trace recorder, if any.
    fn record_marker(&self, _name: &'static str) {}
}

impl StoreView for BufferManager {
    fn tier_stats(&self) -> TierStats {
        self.stats()
    }
    fn bytes_in_use(&self) -> u64 {
        self.pages_in_use() * self.page_size() as u64
    }
    fn set_recorder(&self, r: Arc<WriteSetRecorder>) -> bool {
        BufferManager::set_recorder(self, r)
    }
    fn set_trace_recorder(&self, r: Arc<tierdb_sim::record::TraceRecorder>) -> bool {
        BufferManager::set_recorder(self, r)
    }
    fn record_marker(&self, name: &'static str) {
        BufferManager::record_marker(self, name);
    }
}

impl StoreView for MemoryStore {
    fn tier_stats(&self) -> TierStats {
        TierStats::default()
    }
    fn bytes_in_use(&self) -> u64 {
        self.source().pages_used() * self.page_size() as u64
    }
    fn set_recorder(&self, _: Arc<WriteSetRecorder>) -> bool {
        false
    }
}

impl StoreView for NvmDirect {
    fn tier_stats(&self) -> TierStats {
        self.stats()
    }
    fn bytes_in_use(&self) -> u64 {
        self.pages_in_use() * self.page_size() as u64
    }
    fn set_recorder(&self, _: Arc<WriteSetRecorder>) -> bool {
        false
    }
}

/// A tierdb transaction as the TPC-C code sees it.
pub struct DbTx<'t, 'db, S: DbStore> {
    pub txn: &'t mut Txn<'db, S>,
}

impl<S: DbStore> TpccTx for DbTx<'_, '_, S> {
    type Error = tierdb::Error;

    fn get(&mut self, table: Table, key: &[u8]) -> tierdb::Result<Option<Vec<u8>>> {
        self.txn.get(table.name(), key)
    }
    fn get_for_update(&mut self, table: Table, key: &[u8]) -> tierdb::Result<Option<Vec<u8>>> {
        self.txn.get_for_update(table.name(), key)
    }
    fn insert(&mut self, table: Table, key: &[u8], value: &[u8]) -> tierdb::Result<()> {
        self.txn.put(table.name(), key, value)
    }
    fn patch(&mut self, table: Table, key: &[u8], offset: usize, bytes: &[u8]) -> tierdb::Result<bool> {
        self.txn.update_in_place(table.name(), key, offset, bytes)
    }
    fn delete(&mut self, table: Table, key: &[u8]) -> tierdb::Result<bool> {
        self.txn.delete(table.name(), key)
    }
    fn scan(&mut self, table: Table, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> tierdb::Result<()> {
        self.txn.scan(table.name(), start, f)
    }
}

/// A lock wait over the limit, a deadlock, a write conflict (snapshot isolation), a
/// snapshot too old: the transaction is rolled back and retried
/// ([`tierdb::Error::is_retryable`]).
pub fn is_retryable_engine_error(e: &tierdb::Error) -> bool {
    e.is_retryable()
}

/// Creates the trees and loads the database with `threads` loaders.
///
/// # Errors
/// The engine's.
pub fn create_and_load<S: DbStore + Sync>(
    db: &Db<S>,
    scale: &Scale,
    seed: u64,
    threads: u32,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<LoadCounts> {
    for t in Table::ALL {
        db.create_tree(t.name()).with_context(|| format!("creating tree {}", t.name()))?;
    }
    // Task 0 is the item table, task w is warehouse w.
    let next = AtomicU32::new(0);
    let done = AtomicU32::new(0);
    let tasks = scale.warehouses + 1;
    let results: Vec<Result<LoadCounts>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(tasks))
            .map(|_| {
                s.spawn(|| -> Result<LoadCounts> {
                    let mut counts = LoadCounts::default();
                    loop {
                        let task = next.fetch_add(1, Ordering::Relaxed);
                        if task >= tasks {
                            return Ok(counts);
                        }
                        let mut txn = Some(db.begin());
                        let mut rows = 0u64;
                        let mut emit = |t: Table, k: &[u8], v: &[u8]| -> tierdb::Result<()> {
                            txn.as_mut().expect("a transaction is open").put(t.name(), k, v)?;
                            rows += 1;
                            if rows.is_multiple_of(LOAD_BATCH_ROWS) {
                                txn.take().expect("a transaction is open").commit()?;
                                txn = Some(db.begin());
                            }
                            Ok(())
                        };
                        let c = if task == 0 {
                            tpcc::load_items(scale, seed, &mut emit)
                        } else {
                            tpcc::load_warehouse(scale, seed, task, &mut emit)
                        }
                        .with_context(|| format!("loading task {task}"))?;
                        txn.take().expect("a transaction is open").commit()?;
                        counts.add(&c);
                        progress(u64::from(done.fetch_add(1, Ordering::Relaxed) + 1), u64::from(tasks));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a loader thread panicked")))).collect()
    });
    let mut counts = LoadCounts::default();
    for r in results {
        counts.add(&r?);
    }
    Ok(counts)
}

/// Checks the consistency conditions in a read-only transaction.
///
/// # Errors
/// The engine's; rows that do not decode.
pub fn check<S: DbStore>(db: &Db<S>) -> Result<ConsistencyReport> {
    let mut txn = db.begin();
    let rep = check_consistency(&mut DbTx { txn: &mut txn }).map_err(|e| anyhow!("consistency check: {e}"))?;
    txn.commit()?;
    Ok(rep)
}

/// One worker's counters.
struct WorkerResult {
    committed: [u64; 5],
    rolled_back: [u64; 5],
    aborts: [u64; 5],
    hist: Vec<Histogram<u64>>,
    virtual_ps: u64,
}

/// Runs one transaction of `input` to its end: commits, rolls back (New-Order's unused
/// item), or after an abort rolls back and retries. Returns (rolled back, aborts).
///
/// # Errors
/// Engine errors other than lock timeouts; data that breaks the population rules; more
/// than `RETRIES_MAX` aborts in a row.
pub fn run_transaction<S: DbStore>(db: &Db<S>, scale: &Scale, input: &tpcc::Input) -> Result<(bool, u32)> {
    let mut aborts = 0;
    loop {
        let mut txn = db.begin();
        let r = tpcc::execute(&mut DbTx { txn: &mut txn }, scale, input);
        match r {
            Ok(done) if done.rolled_back => {
                txn.rollback()?;
                return Ok((true, aborts));
            }
            Ok(_) => {
                txn.commit()?;
                return Ok((false, aborts));
            }
            Err(e) if e.is_retryable(is_retryable_engine_error) => {
                txn.rollback()?;
                aborts += 1;
                if aborts > RETRIES_MAX {
                    bail!("{} aborted {aborts} times in a row: {e}", input.kind().name());
                }
            }
            Err(TxError::Engine(e)) => return Err(e).context(input.kind().name()),
            Err(e) => return Err(anyhow!("{}: {e}", input.kind().name())),
        }
    }
}

struct RunCtx<'a> {
    setup: &'a Setup,
    opts: &'a TpccOptions,
    scale: Scale,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    progress: &'a Progress,
    /// `--trace`: where the buffer manager's page accesses go, recorded from the load on.
    trace: Option<&'a std::path::Path>,
}

impl RunCtx<'_> {
    fn run<S: DbStore + StoreView + Sync>(&self, open: impl Fn() -> Result<Db<S>>, crash: bool) -> Result<TpccReport> {
        let (setup, scale, progress) = (self.setup, &self.scale, self.progress);
        let db = open()?;
        let tracer = match self.trace {
            Some(path) => {
                let rec = Arc::new(tierdb_sim::record::TraceRecorder::new(
                    db.store().page_size() as u32,
                    format!("tierdb bench tpcc --arch {} --warehouses {}", self.arch, scale.warehouses),
                ));
                if !db.store().set_trace_recorder(rec.clone()) {
                    bail!(
                        "--trace {}: {} has no buffer manager whose accesses could be recorded",
                        path.display(),
                        self.arch
                    );
                }
                Some(rec)
            }
            None => None,
        };
        // 1. Load and checkpoint.
        let load_threads = self.opts.load_threads.unwrap_or(setup.threads.max(2));
        if load_threads == 0 || load_threads > LOAD_THREADS_MAX {
            bail!("--load-threads {load_threads} is outside 1..={LOAD_THREADS_MAX}");
        }
        let started = Instant::now();
        let load_rows = create_and_load(&db, scale, setup.seed, load_threads, &|d, t| progress.update("load", d, t))?;
        let load_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        db.checkpoint().context("the checkpoint after the load")?;
        let load_checkpoint_secs = started.elapsed().as_secs_f64();
        let db_bytes_loaded = db.store().bytes_in_use();

        // 2 + 3. Warm-up and measured run, checkpoints meanwhile.
        let threads = setup.threads;
        let measuring = AtomicBool::new(false);
        let stop = AtomicBool::new(false);
        let recorder = match self.opts.write_set_interval {
            Some(_) => {
                let r = Arc::new(WriteSetRecorder::new());
                if !db.store().set_recorder(Arc::clone(&r)) {
                    bail!("--write-set-interval: {} has no buffer manager to record page accesses of", self.arch);
                }
                Some(r)
            }
            None => None,
        };
        let ws_interval = self.opts.write_set_interval.unwrap_or(1.0);
        let mut last_interval = 0u32;
        let warmup = Duration::from_secs_f64(setup.warmup_secs);
        let (results, run_secs, before, after, checkpoints) = std::thread::scope(|s| -> Result<_> {
            let origin = Instant::now();
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let (db, measuring, stop) = (&db, &measuring, &stop);
                    s.spawn(move || worker(db, scale, setup.seed, t, threads, measuring, stop))
                })
                .collect();
            let every = self.opts.checkpoint_interval;
            let (db_ref, stop_ref) = (&db, &stop);
            let checkpointer = s.spawn(move || checkpointer(db_ref, every, origin, stop_ref));
            let duration = Duration::from_secs_f64(setup.duration_secs.unwrap_or(3.0).min(DURATION_SECS_MAX));
            sleep_with_progress(progress, "warm-up", warmup, &stop, &mut |_| {});
            let before = (db.store().tier_stats(), db.wal().stats());
            let started = Instant::now();
            db.store().record_marker("measure");
            measuring.store(true, Ordering::Release);
            if let Some(r) = &recorder {
                r.tick(1);
                last_interval = 1;
            }
            sleep_with_progress(progress, "run", duration, &stop, &mut |elapsed| {
                if let Some(r) = &recorder {
                    let i = (elapsed.as_secs_f64() / ws_interval) as u32 + 1;
                    if i != last_interval {
                        r.tick(i);
                        last_interval = i;
                    }
                }
            });
            if let Some(r) = &recorder {
                r.tick(0);
            }
            stop.store(true, Ordering::Release);
            let run_secs = started.elapsed().as_secs_f64();
            let after = (db.store().tier_stats(), db.wal().stats());
            let results: Vec<Result<WorkerResult>> = workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a worker thread panicked"))))
                .collect();
            let taken = checkpointer.join().unwrap_or_else(|_| Err(anyhow!("the checkpoint thread panicked")))?;
            let mut c = CheckpointReport { interval_secs: every, ..CheckpointReport::default() };
            for (at, secs) in taken {
                if at < warmup {
                    c.in_warmup += 1;
                } else {
                    c.in_run += 1;
                }
                c.secs_total += secs;
                c.secs_max = c.secs_max.max(secs);
            }
            Ok((results.into_iter().collect::<Result<Vec<_>>>()?, run_secs, before, after, c))
        })?;
        let write_set = recorder.map(|r| r.series(ws_interval, last_interval));
        if let (Some(rec), Some(path)) = (&tracer, self.trace) {
            let n = rec.save(path).with_context(|| format!("writing the trace {}", path.display()))?;
            progress.println(&format!("trace: {n} records written to {}", path.display()));
        }
        let db_bytes_after = db.store().bytes_in_use();

        // 4. Consistency, or a crash and recovery and then the check: a check before
        //    the crash would scan every table, writing out every dirty page, and leave
        //    recovery nothing of what a crash during the run leaves it.
        let consistency = if crash {
            None
        } else {
            progress.update("check", 0, 1);
            Some(check(&db)?)
        };
        let crash = if crash {
            // Transactions left open at the crash: recovery must undo them. A New-Order
            // in district 1 and a Payment in district 2 of a customer there: they lock no
            // row in common, so the second does not wait for the first.
            let mut mix = Mix::new(scale, setup.seed ^ 0xC4A5, 0, 1);
            let mut open_transactions = 0;
            for kind in [Kind::NewOrder, Kind::Payment] {
                let mut input = mix.input(kind);
                match &mut input {
                    tpcc::Input::NewOrder(i) => {
                        (i.w, i.d) = (1, 1);
                        i.lines.retain(|l| l.i_id <= scale.items);
                        for l in &mut i.lines {
                            l.supply_w = 1;
                        }
                    }
                    tpcc::Input::Payment(i) => {
                        (i.w, i.d, i.c_w, i.c_d) = (1, 2, 1, 2);
                        i.customer = tpcc::mix::CustomerBy::Id(1);
                    }
                    _ => unreachable!("only the two kinds above"),
                }
                let mut txn = db.begin();
                tpcc::execute(&mut DbTx { txn: &mut txn }, scale, &input)
                    .map_err(|e| anyhow!("{} left open at the crash: {e}", kind.name()))?;
                open_transactions += 1;
                std::mem::forget(txn);
            }
            db.wal().flush_until(Lsn::MAX).context("forcing the log before the crash")?;
            // No checkpoint, no close: what is on the devices now is what recovery gets.
            std::mem::forget(db);
            progress.update("recover", 0, 1);
            let db = open().context("reopening after the crash")?;
            let recovery = db.recovery().clone();
            let consistency = check(&db)?;
            db.close()?;
            Some(CrashReport { open_transactions, recovery, consistency })
        } else {
            db.close()?;
            None
        };

        // 5. The report.
        let tsc = clock::rate();
        let mut kinds = Vec::new();
        let mut total = 0u64;
        for k in Kind::ALL {
            let i = k as usize;
            let mut h = new_histogram();
            for r in &results {
                h.add(&r.hist[i]).expect("same bounds");
            }
            let committed: u64 = results.iter().map(|r| r.committed[i]).sum();
            total += committed;
            let us = |q: f64| if h.is_empty() { 0.0 } else { tsc.ns_from_ticks(h.value_at_quantile(q)) / 1e3 };
            kinds.push(KindReport {
                kind: k.name().into(),
                committed,
                rolled_back: results.iter().map(|r| r.rolled_back[i]).sum(),
                aborts: results.iter().map(|r| r.aborts[i]).sum(),
                per_sec: committed as f64 / run_secs,
                latency_p50_us: us(0.5),
                latency_p99_us: us(0.99),
            });
        }
        let modelled = (setup.mode == tierdb::device::EmulationMode::Model || results.iter().any(|r| r.virtual_ps > 0))
            .then(|| {
                results
                    .iter()
                    .map(|r| r.committed.iter().sum::<u64>() as f64 / (run_secs + r.virtual_ps as f64 * 1e-12))
                    .sum::<f64>()
            });
        Ok(TpccReport {
            command: "bench tpcc",
            version: env!("CARGO_PKG_VERSION"),
            arch: self.arch,
            dram_bytes: if self.arch == Architecture::NvmDirect { 0 } else { self.dram.bytes() },
            nvm_bytes: if self.arch.uses_nvm() { self.nvm.bytes() } else { 0 },
            mode: setup.mode,
            profiles: [setup.dram_profile.name.clone(), setup.nvm_profile.name.clone(), setup.ssd_profile.name.clone()],
            page_size_bytes: setup.page_size_bytes,
            threads,
            seed: setup.seed,
            durability: self.opts.durability,
            isolation: self.opts.isolation,
            log_buffer: self.opts.log_buffer.clone(),
            scale: *scale,
            // The population's scale, and reads that see no uncommitted row.
            spec_conformant: scale.is_spec() && self.opts.isolation != tierdb::db::Isolation::ReadUncommitted,
            load_threads,
            load_rows,
            load_secs,
            load_checkpoint_secs,
            db_bytes_loaded,
            db_bytes_after,
            db_bytes_per_warehouse: db_bytes_loaded / u64::from(scale.warehouses),
            warmup_secs: setup.warmup_secs,
            run_secs,
            tx_per_sec: total as f64 / run_secs,
            new_orders_per_min: kinds[Kind::NewOrder as usize].committed as f64 * 60.0 / run_secs,
            modelled_tx_per_sec: modelled,
            aborts: kinds.iter().map(|k| k.aborts).sum(),
            kinds,
            tiers: after.0.since(&before.0),
            wal: after.1.since(&before.1),
            checkpoints,
            write_set,
            consistency_checked_before_crash: consistency.is_some(),
            consistency: consistency
                .or_else(|| crash.as_ref().map(|c| c.consistency.clone()))
                .expect("checked before the crash or after recovery"),
            crash,
        })
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_TICKS_MAX, 2).expect("valid bounds")
}

/// Sleeps `d` in steps of at most 50 ms, calling `step` with the time elapsed after each.
fn sleep_with_progress(
    progress: &Progress,
    phase: &str,
    d: Duration,
    stop: &AtomicBool,
    step: &mut dyn FnMut(Duration),
) {
    let start = Instant::now();
    let total_ms = d.as_millis() as u64;
    while start.elapsed() < d && !stop.load(Ordering::Relaxed) {
        progress.update(phase, start.elapsed().as_millis() as u64, total_ms);
        std::thread::sleep(Duration::from_millis(50).min(d.saturating_sub(start.elapsed())));
        step(start.elapsed());
    }
}

/// Takes a checkpoint every `every` seconds (none for 0) from `origin` until `stop`,
/// while the workers run. Returns when each started (after `origin`) and how long it
/// took. An error stops the workers too.
fn checkpointer<S: DbStore>(
    db: &Db<S>,
    every: f64,
    origin: Instant,
    stop: &AtomicBool,
) -> Result<Vec<(Duration, f64)>> {
    let mut taken = Vec::new();
    if every <= 0.0 {
        return Ok(taken);
    }
    let every = Duration::from_secs_f64(every);
    let mut next = origin + every;
    loop {
        while Instant::now() < next {
            if stop.load(Ordering::Acquire) {
                return Ok(taken);
            }
            std::thread::sleep(Duration::from_millis(20).min(next.saturating_duration_since(Instant::now())));
        }
        let t = Instant::now();
        if let Err(e) = db.checkpoint() {
            stop.store(true, Ordering::Release);
            return Err(anyhow::Error::from(e).context("a checkpoint during the run"));
        }
        taken.push((t - origin, t.elapsed().as_secs_f64()));
        // The next one an interval after this one's start, or at once if it took longer.
        next += every;
    }
}

/// One worker: the mix until `stop`; counts while `measuring`. On an error it stops the
/// others too.
fn worker<S: DbStore>(
    db: &Db<S>,
    scale: &Scale,
    seed: u64,
    t: u32,
    threads: u32,
    measuring: &AtomicBool,
    stop: &AtomicBool,
) -> Result<WorkerResult> {
    let mut mix = Mix::new(scale, seed, t, threads);
    let mut r = WorkerResult {
        committed: [0; 5],
        rolled_back: [0; 5],
        aborts: [0; 5],
        hist: Kind::ALL.iter().map(|_| new_histogram()).collect(),
        virtual_ps: 0,
    };
    let mut counting = false;
    let mut virtual_start = 0;
    while !stop.load(Ordering::Acquire) {
        if !counting && measuring.load(Ordering::Acquire) {
            counting = true;
            virtual_start = clock::virtual_now_ps();
        }
        let input = mix.next_input();
        let i = input.kind() as usize;
        let t0 = clock::ticks();
        let (rolled_back, aborts) = match run_transaction(db, scale, &input) {
            Ok(x) => x,
            Err(e) => {
                stop.store(true, Ordering::Release);
                return Err(e.context(format!("worker {t}")));
            }
        };
        if counting {
            r.aborts[i] += u64::from(aborts);
            if rolled_back {
                r.rolled_back[i] += 1;
            } else {
                r.committed[i] += 1;
                r.hist[i].saturating_record(clock::ticks().saturating_sub(t0).max(1));
            }
        }
    }
    if counting {
        r.virtual_ps = clock::virtual_now_ps() - virtual_start;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tierdb::db::DbError;
    use tierdb::device::{DramConfig, FaultPlan, SsdConfig};

    use super::*;

    const SEED: u64 = 11;
    const TX_PER_THREAD: u32 = 150;

    fn config(dir: &std::path::Path, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
        let mut c = DbConfig::new(dir.join("db"));
        // The crash is placed after the test's own checkpoint; its losers are counted.
        c.checkpoint = CheckpointConfig::OFF;
        c.buffer.page_size = 8192;
        c.buffer.dram = DramConfig::new(ByteSize(128 * 8192));
        let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
        ssd.page_size = 8192;
        ssd.faults = plan.cloned();
        c.buffer.ssd = Some(ssd);
        c.wal.file.faults = plan.cloned();
        c.durability = Durability::Sync;
        c
    }

    /// New orders committed in warehouse 1: the districts' next order ids past the load.
    fn new_orders(db: &Db, scale: &Scale) -> u64 {
        (1..=tpcc::DISTRICTS)
            .map(|d| {
                let v = db.get(Table::District.name(), &tpcc::keys::district(1, d)).unwrap().unwrap();
                let next = tpcc::rows::District::decode(&v).unwrap().next_o_id;
                u64::from(next - scale.customers_per_district - 1)
            })
            .sum()
    }

    /// Two workers on one warehouse (they share every row), then transactions left open
    /// and a power loss (unsynced writes to the page file and the log dropped): after
    /// recovery the conditions hold and exactly the committed New-Orders are there.
    #[test]
    fn consistency_after_a_two_thread_run_and_a_power_loss() {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        let scale = Scale::tiny(1);
        let committed_new_orders;
        {
            let db = Db::open(&config(dir.path(), Some(&plan))).unwrap();
            // (A customer row is 667 bytes: pages of 8 KiB at least.)
            let counts = create_and_load(&db, &scale, SEED, 2, &|_, _| {}).unwrap();
            assert_eq!(counts.get(Table::Stock), 1000);
            assert_eq!(counts.get(Table::NewOrder), 90);
            db.checkpoint().unwrap();
            let done: Vec<[u64; 3]> = std::thread::scope(|s| {
                let ws: Vec<_> = (0..2)
                    .map(|t| {
                        let db = &db;
                        let scale = &scale;
                        s.spawn(move || {
                            let mut mix = Mix::new(scale, SEED, t, 2);
                            let mut n = [0u64; 3]; // new orders committed, rolled back, aborts
                            for _ in 0..TX_PER_THREAD {
                                let input = mix.next_input();
                                let (rolled_back, aborts) = run_transaction(db, scale, &input).unwrap();
                                if input.kind() == Kind::NewOrder {
                                    n[usize::from(rolled_back)] += 1;
                                }
                                n[2] += u64::from(aborts);
                            }
                            n
                        })
                    })
                    .collect();
                ws.into_iter().map(|w| w.join().unwrap()).collect()
            });
            committed_new_orders = done.iter().map(|n| n[0]).sum::<u64>();
            assert!(committed_new_orders > 50, "{done:?}");
            assert_eq!(new_orders(&db, &scale), committed_new_orders);
            let rep = check(&db).unwrap();
            assert!(rep.ok(), "{rep:?}");
            // Left open: a New-Order's changes reach the log, never a commit.
            let mut txn = db.begin();
            let input = Mix::new(&scale, SEED + 1, 0, 1).input(Kind::NewOrder);
            let _ = tpcc::execute(&mut DbTx { txn: &mut txn }, &scale, &input).unwrap();
            db.wal().flush_until(Lsn::MAX).unwrap();
            std::mem::forget(txn);
            std::mem::forget(db);
        }
        plan.lose_unsynced().unwrap();
        let db = Db::open(&config(dir.path(), None)).unwrap();
        assert_eq!(db.recovery().losers.len(), 1, "{:?}", db.recovery());
        let rep = check(&db).unwrap();
        assert!(rep.ok(), "{rep:?}");
        assert_eq!(new_orders(&db, &scale), committed_new_orders, "exactly the committed New-Orders");
        db.close().unwrap();
    }

    #[test]
    fn lock_timeouts_and_conflicts_are_retried_other_errors_are_not() {
        let t = tierdb::ids::TxnId::new(1);
        assert!(is_retryable_engine_error(&DbError::LockTimeout { owner: t, ms: 1 }.into()));
        assert!(is_retryable_engine_error(&DbError::Deadlock { txn: t, tree: "x".into(), cycle: vec![t] }.into()));
        let conflict = DbError::WriteConflict { txn: t, tree: "x".into(), key: "k".into() };
        assert!(is_retryable_engine_error(&conflict.into()));
        assert!(!is_retryable_engine_error(&DbError::NoSuchTree { name: "x".into() }.into()));
    }
}
