//! One YCSB run on one architecture, raw or through transactions: open the engine with
//! the configuration of [`EngineArgs`], run the driver, remove the files, and the
//! report every command that runs YCSB embeds.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{ArchConfig, Architecture, Engine};
use tierdb::db::{CheckpointConfig, Db, DbConfig};
use tierdb::device::NvmConfig;
use tierdb::wal::LogBuffer;

use crate::drivers::ycsb::{self as ycsb_driver, YcsbReport};
use crate::drivers::ycsb_txn::{self, LogPlace, TxnReport, TxnSetup};
use crate::harness::engine_args::{EngineArgs, Setup};
use crate::harness::files::Cleanup;
use crate::harness::progress::Progress;
use crate::harness::trace;

/// A report of one run: what ran, on what, and what it measured.
#[derive(Serialize)]
pub struct RunReport {
    pub command: &'static str,
    pub version: &'static str,
    pub arch: Architecture,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    pub dram_frames: usize,
    pub nvm_frames: usize,
    /// The NVM techniques the engine ran with (the architecture's own unless overridden).
    pub techniques: tierdb::buffer::Techniques,
    /// Debug mode for cache-line-grained access was on (slow: not a performance run).
    pub debug_lines: bool,
    /// The CPU-cache model's bytes for in-place NVM reads, `setup.cpu_cache` resolved
    /// for this run's data.
    pub cpu_cache_model_bytes: u64,
    pub setup: Setup,
    pub result: YcsbReport,
    /// The transactional mode's settings and measurements (absent in the raw mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn: Option<TxnReport>,
}

/// Opens `arch`, runs the workload, removes the files.
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    data: Option<ByteSize>,
    tag: &str,
    progress: &Progress,
) -> Result<RunReport> {
    if setup.page_provider && !arch.has_buffer() {
        bail!("--page-provider needs an architecture with a buffer manager ({arch} has none)");
    }
    if let (Some(cap), Some(d)) = (arch.capacity_bytes(dram, nvm), data)
        && d.bytes() > cap
    {
        bail!(
            "{arch} cannot hold {d} of data: it keeps all data in {} of {}",
            if arch == Architecture::MainMemory { "DRAM" } else { "NVM" },
            ByteSize(cap)
        );
    }
    let cfg = engine_args.arch_config(setup, arch, dram, nvm, data, tag)?;
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch}"))?;
    let (dram_frames, nvm_frames) = engine.frames();
    let recorder = trace::start_recording(&engine, engine_args.trace.as_deref(), arch)?;
    progress.set_prefix(&format!("{arch}{}", data.map(|d| format!(" {d}")).unwrap_or_default()));
    let result = ycsb_driver::run(&engine, &setup.workload, &engine_args.driver_config(setup, data), &|p, d, t| {
        progress.update(p, d, t)
    })
    .with_context(|| format!("running {arch}"))?;
    trace::finish_recording(recorder, engine_args.trace.as_deref(), progress)?;
    drop(engine);
    drop(files);
    Ok(RunReport::new("bench ycsb", &cfg, (dram, nvm), (dram_frames, nvm_frames), setup, result))
}

impl RunReport {
    /// The report of a run of `cfg` with tier sizes `(dram, nvm)` and frame counts.
    pub fn new(
        command: &'static str,
        cfg: &ArchConfig,
        (dram, nvm): (ByteSize, ByteSize),
        (dram_frames, nvm_frames): (usize, usize),
        setup: &Setup,
        result: YcsbReport,
    ) -> RunReport {
        let arch = cfg.arch;
        RunReport {
            command,
            version: env!("CARGO_PKG_VERSION"),
            arch,
            dram_bytes: dram.bytes(),
            nvm_bytes: if arch.uses_nvm() { nvm.bytes() } else { 0 },
            dram_frames,
            nvm_frames,
            techniques: cfg.techniques.unwrap_or(arch.default_techniques()),
            debug_lines: cfg.debug_lines,
            cpu_cache_model_bytes: cfg.cpu_cache_model.bytes(),
            setup: setup.clone(),
            result,
            txn: None,
        }
    }
}

/// Opens a database on `arch`, loads it, runs the workload through transactions, and
/// removes its files.
///
/// # Errors
/// An architecture the database cannot run on; files that exist already; the engine's
/// errors.
#[allow(clippy::too_many_arguments)]
pub fn run_one_txn(
    engine_args: &EngineArgs,
    setup: &Setup,
    txn: &TxnSetup,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    data: Option<ByteSize>,
    tag: &str,
    progress: &Progress,
) -> Result<RunReport> {
    if !arch.has_buffer() {
        bail!(
            "--durability runs YCSB through a database's transactions and log, on a buffer manager; \
             {arch} has none (use another architecture, or `bench tpcc --arch {arch}` for transactions on it)"
        );
    }
    if setup.batch > 1 {
        bail!(
            "--batch {}: transactions look their keys up one at a time; batches run on the tree directly \
             (drop --durability)",
            setup.batch
        );
    }
    let acfg = engine_args.arch_config(setup, arch, dram, nvm, data, tag)?;
    let mut cfg = DbConfig::from_arch(&acfg, db_dir(&acfg.ssd_path)).with_context(|| format!("--arch {arch}"))?;
    cfg.durability = txn.durability;
    cfg.isolation = txn.isolation;
    cfg.wal.flush_interval = Duration::from_micros(txn.flush_interval_us);
    let mut files = vec![acfg.nvm_path.clone(), acfg.nvm_double_write_path()];
    match txn.log_buffer {
        LogPlace::Dram => {
            cfg.wal.buffer_bytes = usize::try_from(txn.log_buffer_bytes).context("--log-buffer-size")?;
        }
        LogPlace::Nvm => {
            let ring = log_ring_path(&acfg.nvm_path);
            let mut n = NvmConfig::new(&ring, ByteSize(txn.log_buffer_bytes));
            n.profile = setup.nvm_profile.clone();
            n.mode = setup.mode;
            cfg.wal.buffer = LogBuffer::Nvm(n);
            files.push(ring);
        }
    }
    files.push(cfg.dir.clone());
    for f in &files {
        if f.exists() {
            bail!("{} exists already: it is not overwritten", f.display());
        }
    }
    run_txn_db(engine_args, setup, txn, &acfg, &cfg, Cleanup::new(files), data, progress)
}

/// As [`run_one_txn`], on the database a configuration file describes (`bench ycsb
/// --config`): architecture, tiers, devices, policy, durability and log from `cfg`, not
/// from `engine_args` (whose workload, threads and run options still apply). The
/// database is made in `cfg.dir`, which must not exist, and removed after the run.
///
/// # Errors
/// A configuration without an architecture, or on one without a buffer manager; files
/// that exist already; the engine's errors.
pub fn run_one_txn_from_config(
    engine_args: &EngineArgs,
    setup: &Setup,
    cfg: &DbConfig,
    data: Option<ByteSize>,
    progress: &Progress,
) -> Result<RunReport> {
    let Some(acfg) = cfg.arch.clone() else {
        bail!("the configuration has no `architecture`: bench ycsb reports one, so the file must name it");
    };
    let arch = acfg.arch;
    if !arch.has_buffer() {
        bail!(
            "bench ycsb --config runs YCSB through a database's transactions, on a buffer manager; the file's \
             {arch} has none (`bench tpcc --config` runs transactions on it)"
        );
    }
    if setup.batch > 1 {
        bail!("--batch {}: transactions look their keys up one at a time", setup.batch);
    }
    let (log_buffer, log_buffer_bytes) = match &cfg.wal.buffer {
        LogBuffer::Dram => (LogPlace::Dram, cfg.wal.buffer_bytes as u64),
        LogBuffer::Nvm(n) => (LogPlace::Nvm, n.size.bytes()),
    };
    let txn = TxnSetup {
        durability: cfg.durability,
        isolation: cfg.isolation,
        log_buffer,
        log_buffer_bytes,
        flush_interval_us: u64::try_from(cfg.wal.flush_interval.as_micros()).unwrap_or(u64::MAX),
    };
    let mut files = vec![acfg.nvm_path.clone(), acfg.nvm_double_write_path(), cfg.dir.clone()];
    if let LogBuffer::Nvm(n) = &cfg.wal.buffer {
        files.push(n.path.clone());
    }
    for f in &files {
        if f.exists() {
            bail!("{} exists already: it is not overwritten", f.display());
        }
    }
    // The report names the devices the file chose.
    let setup = &setup.with_arch_config(&acfg);
    run_txn_db(engine_args, setup, &txn, &acfg, cfg, Cleanup::new(files), data, progress)
}

/// Opens the database of `cfg` on `acfg`'s architecture, runs YCSB through its
/// transactions, removes `files`.
#[allow(clippy::too_many_arguments)]
fn run_txn_db(
    engine_args: &EngineArgs,
    setup: &Setup,
    txn: &TxnSetup,
    acfg: &ArchConfig,
    cfg: &DbConfig,
    files: Cleanup,
    data: Option<ByteSize>,
    progress: &Progress,
) -> Result<RunReport> {
    let (arch, dram, nvm) = (acfg.arch, acfg.dram, acfg.nvm);
    // The load runs in bulk-load mode, which wants no other thread on the buffer
    // manager (a background checkpoint's flush), and checkpoints once after it.
    let cfg = &DbConfig { checkpoint: CheckpointConfig::OFF, ..cfg.clone() };
    let db = Db::open(cfg).with_context(|| format!("opening a database on {arch} in {}", cfg.dir.display()))?;
    let info = db.buffer().info();
    progress.set_prefix(&format!("{arch} txn{}", data.map(|d| format!(" {d}")).unwrap_or_default()));
    let driver = engine_args.driver_config(setup, data);
    let (result, txn_report) = ycsb_txn::run(&db, &setup.workload, &driver, txn, &|p, d, t| progress.update(p, d, t))
        .with_context(|| format!("running {arch}"))?;
    drop(db);
    drop(files);
    let mut report =
        RunReport::new("bench ycsb", acfg, (dram, nvm), (info.dram_frames, info.nvm_frames), setup, result);
    report.txn = Some(txn_report);
    Ok(report)
}

/// The database directory beside the raw mode's page file `ssd_path`.
fn db_dir(ssd_path: &std::path::Path) -> PathBuf {
    let stem = ssd_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    ssd_path.with_file_name(format!("{stem}-db"))
}

/// The NVM log buffer's file beside the NVM pool `nvm_path`.
fn log_ring_path(nvm_path: &std::path::Path) -> PathBuf {
    let stem = nvm_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    nvm_path.with_file_name(format!("{stem}-log.nvm"))
}

/// Throughput of a run: modelled in `model` mode, measured otherwise.
pub fn value(r: &RunReport) -> f64 {
    r.result.modelled_ops_per_sec.unwrap_or(r.result.throughput_ops_per_sec)
}

/// True for "the data does not fit" errors, which make a point empty, not the command fail.
pub fn is_full(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<tierdb::Error>(),
            Some(tierdb::Error::Buffer(tierdb::buffer::BufferError::Full { .. }))
        ) || matches!(c.downcast_ref::<tierdb::buffer::BufferError>(), Some(tierdb::buffer::BufferError::Full { .. }))
            || c.downcast_ref::<tierdb::btree::BTreeError>().is_some_and(tierdb::btree::BTreeError::is_full)
    })
}
