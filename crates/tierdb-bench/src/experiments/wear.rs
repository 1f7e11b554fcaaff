//! The wear experiment behind `tierdb wear` (Figure 16 of van Renen et al.): NVM writes
//! per cache line for an architecture under 100% updates, counted by the NVM region's
//! wear counters, with the sorted curve kept at log-spaced ranks.
//!
//! Two ways to run: [`run_arch`] runs the raw tree (no log: only the data's lines
//! count); [`run_logged`] runs every update as a transaction of a database whose log
//! buffer is a ring in NVM, as the paper's engines wrote their log (appendix A.5), and
//! counts the ring's line writes beside the data's.
//!
//! Invariants: a run counts from a fresh engine whose counters start at zero (reset
//! after the load); the curve keeps its first and last ranks.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tierdb::arch::{ArchConfig, Architecture, Engine};
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore, Txn};
use tierdb::device::{NvmConfig, NvmRegion, OpenMode};
use tierdb::sources::DirectConfig;
use tierdb::wal::LogBuffer;
use tierdb::{ByteSize, Catalog, PageSource};
use tierdb_workload::{KeySpace, Op, OpGenerator, YcsbSpec, build_key, value_rng};

use crate::drivers::ycsb::{self as ycsb_driver, TABLE, YcsbReport};
use crate::harness::{Cleanup, EngineArgs, Progress, Setup};

/// Bytes of the NVM log ring of a logged run (as `bench tpcc` gives `nvm-direct`).
pub const LOG_RING_BYTES: u64 = 16 << 20;

/// Points of the sorted curve kept per architecture (log-spaced ranks).
pub const CURVE_POINTS: usize = 256;

/// One architecture's counts.
#[derive(Serialize)]
pub struct WearSeries {
    pub arch: Architecture,
    /// NVM lines of the region.
    pub lines: u64,
    /// Σ over lines of the writes counted.
    pub line_writes_total: u64,
    pub lines_written: u64,
    pub line_writes_max: u64,
    /// Line writes to the metadata below the pages (`three-tier`: pool and frame
    /// headers; `nvm-direct`: header and allocation map), and the most to one such line.
    pub metadata_line_writes: u64,
    pub metadata_line_writes_max: u64,
    /// The most writes to one line of page data.
    pub page_line_writes_max: u64,
    /// Line writes per update.
    pub line_writes_per_op: f64,
    /// `log2_buckets[0]`: lines never written; `[i]`, i ≥ 1: written more than 2^(i-2)
    /// and at most 2^(i-1) times.
    pub log2_buckets: Vec<u64>,
    /// The sorted curve at log-spaced ranks: (rank from 1, writes of the line at that
    /// rank), most written first; ranks past the last written line are left out.
    pub sorted: Vec<(u64, u64)>,
    pub ops: u64,
    pub ops_per_sec: f64,
    /// Device counters of the measured run: NVM writes and persists.
    pub nvm_writes: u64,
    pub nvm_write_bytes: u64,
    pub nvm_persists: u64,
    /// Line writes to the NVM log ring (the log's records) when the run was logged
    /// ([`run_logged`]); counted in `line_writes_total` and the curve too. `None`: the
    /// raw tree, no log.
    pub log_line_writes: Option<u64>,
    /// The log's lines written at all and the most writes to one of them.
    pub log_lines_written: Option<u64>,
    pub log_line_writes_max: Option<u64>,
    /// The raw run's report; `None` for a logged run (its counts are above).
    pub run: Option<YcsbReport>,
}

/// One architecture's run: a fresh engine with wear counters, `data` loaded, the
/// workload's operations, then the NVM lines' write counts.
///
/// # Errors
/// Opening the engine; the run; an architecture without NVM.
pub fn run_arch(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    (dram, nvm): (ByteSize, ByteSize),
    data: ByteSize,
    progress: &Progress,
) -> Result<WearSeries> {
    let mut engine_args = engine_args.clone();
    engine_args.techniques = None;
    let mut cfg = engine_args.arch_config(setup, arch, dram, nvm, Some(data), &format!("wear-{arch}"))?;
    cfg.wear_counters = true;
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch}"))?;
    progress.set_prefix(arch.name());
    let mut driver = engine_args.driver_config(setup, Some(data));
    driver.warmup = Duration::ZERO;
    driver.duration = None;
    let run = ycsb_driver::run(&engine, &setup.workload, &driver, &|p, d, t| progress.update(p, d, t))?;
    let region = engine.nvm_region().context("an architecture with NVM has a region")?;
    let mut counts = region.wear_counts().context("wear counters were switched on")?;
    let summary = region.wear_summary().context("wear counters were switched on")?;
    let meta_lines = (engine.nvm_data_offset().unwrap_or(0) / 64) as usize;
    let (meta, pages) = counts.split_at(meta_lines.min(counts.len()));
    let (metadata_line_writes, metadata_line_writes_max) = (meta.iter().sum(), meta.iter().copied().max().unwrap_or(0));
    let page_line_writes_max = pages.iter().copied().max().unwrap_or(0);
    drop(engine);
    drop(files);
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let written = counts.iter().take_while(|&&c| c > 0).count() as u64;
    let nvm = run.tiers.nvm.unwrap_or_default();
    Ok(WearSeries {
        arch,
        lines: summary.lines,
        line_writes_total: summary.writes_total,
        lines_written: summary.lines_written,
        line_writes_max: summary.writes_max,
        metadata_line_writes,
        metadata_line_writes_max,
        page_line_writes_max,
        line_writes_per_op: summary.writes_total as f64 / run.ops.max(1) as f64,
        log2_buckets: summary.log2_buckets,
        sorted: log_spaced(&counts[..written as usize]),
        ops: run.ops,
        ops_per_sec: run.throughput_ops_per_sec,
        nvm_writes: nvm.writes,
        nvm_write_bytes: nvm.write_bytes,
        nvm_persists: nvm.persists,
        log_line_writes: None,
        log_lines_written: None,
        log_line_writes_max: None,
        run: Some(run),
    })
}

/// What a logged run counted, before it becomes a [`WearSeries`].
struct Logged {
    ops: u64,
    secs: f64,
    /// The data region's counts and where its pages start.
    data: Vec<u64>,
    data_offset: u64,
    log: Vec<u64>,
}

/// One architecture's run through a database's transactions: a fresh database whose log
/// buffer is an NVM ring of [`LOG_RING_BYTES`], `data` loaded straight into the table
/// (no log) and checkpointed, the wear counters of the data region and the ring reset,
/// then exactly the workload's operation count of updates on one thread, each a
/// transaction committed durably (the ring makes a record durable when appended). The
/// series counts the data region's and the ring's line writes together; the ring's are
/// also given apart.
///
/// # Errors
/// Opening the database; the run; an architecture without NVM; a workload with other
/// operations than updates.
pub fn run_logged(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    (dram, nvm): (ByteSize, ByteSize),
    data: ByteSize,
    progress: &Progress,
) -> Result<WearSeries> {
    if !arch.uses_nvm() {
        bail!("{arch} has no NVM to count writes on");
    }
    let mut engine_args = engine_args.clone();
    engine_args.techniques = None;
    let mut acfg = engine_args.arch_config(setup, arch, dram, nvm, Some(data), &format!("wearlog-{arch}"))?;
    acfg.wear_counters = true;
    let stem = acfg.nvm_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = acfg.ssd_path.with_file_name(format!("{stem}-wear-db"));
    let ring = acfg.nvm_path.with_file_name(format!("{stem}-log.nvm"));
    let mut cfg = if arch == Architecture::NvmDirect {
        let mut c = DbConfig::new(&dir);
        c.wal.file.profile = acfg.ssd_profile.clone();
        c.wal.file.mode = acfg.mode;
        c
    } else {
        DbConfig::from_arch(&acfg, &dir).with_context(|| format!("--arch {arch}"))?
    };
    let mut n = NvmConfig::new(&ring, ByteSize(LOG_RING_BYTES));
    n.profile = acfg.nvm_profile.clone();
    n.mode = acfg.mode;
    n.wear_counters = true;
    cfg.wal.buffer = LogBuffer::Nvm(n);
    // The writes counted are the updates' and their log's: background checkpoints would
    // add write-backs that depend on timing.
    cfg.checkpoint = CheckpointConfig::OFF;
    let files: Vec<PathBuf> = vec![acfg.nvm_path.clone(), acfg.nvm_double_write_path(), ring, dir];
    if let Some(f) = files.iter().find(|f| f.exists()) {
        bail!("{} exists already: it is not overwritten", f.display());
    }
    let files = Cleanup::new(files);
    let mut driver = engine_args.driver_config(setup, Some(data));
    driver.threads = 1;
    let spec = ycsb_driver::sized(&setup.workload, &driver)?;
    if spec.mix().update < 1.0 {
        bail!("the logged wear run takes updates only (rw:100), not {}", spec.origin());
    }
    progress.set_prefix(&format!("{arch} logged"));
    let counted = if arch == Architecture::NvmDirect {
        let db = Db::open_nvm_direct(&cfg, &direct_config(&acfg, nvm))
            .with_context(|| format!("opening a database on {arch}"))?;
        let region = db.store().pages().nvm();
        logged_updates(&db, &spec, &driver, region, db.store().pages().data_offset(), &|_| Ok(()), progress)?
    } else {
        let db = Db::open(&cfg).with_context(|| format!("opening a database on {arch}"))?;
        let bm = db.buffer();
        let pool = bm.nvm().context("an architecture with NVM has a pool")?;
        let bulk = |on: bool| bm.set_bulk_load(on).context("switching bulk-load mode");
        logged_updates(&db, &spec, &driver, pool.region(), pool.frames_offset(), &bulk, progress)?
    };
    drop(files);
    Ok(series_of(arch, counted))
}

/// `nvm-direct`'s page source as `bench tpcc` opens it, with wear counters.
fn direct_config(acfg: &ArchConfig, nvm: ByteSize) -> DirectConfig {
    let mut n = NvmConfig::new(&acfg.nvm_path, nvm);
    n.profile = acfg.nvm_profile.clone();
    n.mode = acfg.mode;
    n.open_mode = OpenMode::OpenOrCreate;
    n.wear_counters = true;
    let mut dc = DirectConfig::new(n, acfg.page_size);
    dc.cpu_cache_bytes = acfg.cpu_cache_model.bytes();
    dc.nvm_verify = acfg.nvm_verify;
    dc
}

/// Loads the table, resets the counters, runs the updates as transactions and reads the
/// counts of the data region and of the log's ring.
fn logged_updates<S: DbStore + PageSource>(
    db: &Db<S>,
    spec: &YcsbSpec,
    driver: &ycsb_driver::DriverConfig,
    data: &NvmRegion,
    data_offset: u64,
    bulk: &dyn Fn(bool) -> Result<()>,
    progress: &Progress,
) -> Result<Logged> {
    // 1. Load straight into the tree, then checkpoint: the load is not what is counted.
    db.create_tree(TABLE).context("creating the table")?;
    let tree = Catalog::open_tree(db.store(), TABLE).context("opening the table")?;
    ycsb_driver::fill_table(&tree, bulk, spec, driver, &|p, d, t| progress.update(p, d, t))?;
    db.checkpoint().context("the checkpoint after the load")?;
    let ring = db.wal().nvm_ring_region().context("the log buffer is an NVM ring")?;
    data.reset_wear();
    ring.reset_wear();
    // 2. The updates, one transaction each.
    let keyspace = KeySpace::new(spec);
    let mut generator = OpGenerator::new(spec, &keyspace, driver.seed, 0);
    let mut rng = value_rng(driver.seed, 0);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let ops = spec.operation_count();
    let started = Instant::now();
    for i in 0..ops {
        let Op::Update { key: k, field } = generator.next() else {
            bail!("the logged wear run takes updates only, and {} generated another operation", spec.origin());
        };
        build_key(spec, k, &mut key);
        let mut t = db.begin();
        let found = update(&mut t, spec, &key, field, &mut value, &mut rng)?;
        assert!(found, "update {i}: key {k} of the loaded table is missing");
        t.commit().with_context(|| format!("committing update {i}"))?;
        if i % 4096 == 0 {
            progress.update("logged updates", i, ops);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let data_counts = data.wear_counts().context("wear counters were switched on for the data")?;
    let log = ring.wear_counts().context("wear counters were switched on for the log")?;
    Ok(Logged { ops, secs, data: data_counts, data_offset, log })
}

/// One field in place, or a whole new record; false if the key is absent.
fn update<S: DbStore>(
    t: &mut Txn<'_, S>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    value: &mut Vec<u8>,
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match field {
        Some(f) => t.update_in_place(TABLE, key, ycsb_driver::new_field(spec, f, value, rng), value)?,
        None => {
            tierdb_workload::fill_record(spec, rng, value);
            t.put(TABLE, key, value)?;
            true
        }
    })
}

/// The series of a logged run: data and log lines counted together.
fn series_of(arch: Architecture, l: Logged) -> WearSeries {
    let meta_lines = ((l.data_offset / 64) as usize).min(l.data.len());
    let (meta, pages) = l.data.split_at(meta_lines);
    let log_total: u64 = l.log.iter().sum();
    let log_written = l.log.iter().filter(|&&c| c > 0).count() as u64;
    let log_max = l.log.iter().copied().max().unwrap_or(0);
    let mut all: Vec<u64> = l.data.iter().chain(&l.log).copied().collect();
    let summary = summarize(&all);
    all.sort_unstable_by(|a, b| b.cmp(a));
    let written = all.iter().take_while(|&&c| c > 0).count();
    WearSeries {
        arch,
        lines: all.len() as u64,
        line_writes_total: summary.0,
        lines_written: written as u64,
        line_writes_max: all.first().copied().unwrap_or(0),
        metadata_line_writes: meta.iter().sum(),
        metadata_line_writes_max: meta.iter().copied().max().unwrap_or(0),
        page_line_writes_max: pages.iter().copied().max().unwrap_or(0),
        line_writes_per_op: summary.0 as f64 / l.ops.max(1) as f64,
        log2_buckets: summary.1,
        sorted: log_spaced(&all[..written]),
        ops: l.ops,
        ops_per_sec: l.ops as f64 / l.secs.max(1e-9),
        nvm_writes: 0,
        nvm_write_bytes: 0,
        nvm_persists: 0,
        log_line_writes: Some(log_total),
        log_lines_written: Some(log_written),
        log_line_writes_max: Some(log_max),
        run: None,
    }
}

/// Σ of the counts, and the log2 buckets as the region's summary makes them:
/// `[0]` lines never written, `[i]` written more than 2^(i-2) and at most 2^(i-1) times.
fn summarize(counts: &[u64]) -> (u64, Vec<u64>) {
    let mut buckets = vec![0u64; 65];
    for &c in counts {
        let i = if c == 0 { 0 } else { 64 - (c - 1).leading_zeros() as usize + 1 };
        buckets[i.min(64)] += 1;
    }
    while buckets.len() > 1 && buckets.last() == Some(&0) {
        buckets.pop();
    }
    (counts.iter().sum(), buckets)
}

/// `(rank, count)` at about [`CURVE_POINTS`] log-spaced ranks of a sorted list, always
/// with the first and the last.
fn log_spaced(sorted: &[u64]) -> Vec<(u64, u64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let mut ranks: Vec<usize> = (0..CURVE_POINTS)
        .map(|i| ((n as f64).powf(i as f64 / (CURVE_POINTS - 1) as f64)).round() as usize)
        .map(|r| r.clamp(1, n))
        .collect();
    ranks.dedup();
    ranks.into_iter().map(|r| (r as u64, sorted[r - 1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_spaced_keeps_the_ends_and_is_sorted() {
        let sorted: Vec<u64> = (1..=10_000u64).rev().collect();
        let p = log_spaced(&sorted);
        assert_eq!(p.first(), Some(&(1, 10_000)));
        assert_eq!(p.last(), Some(&(10_000, 1)));
        assert!(p.len() <= CURVE_POINTS);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1));
        assert!(log_spaced(&[]).is_empty());
        assert_eq!(log_spaced(&[5]), vec![(1, 5)]);
    }

    #[test]
    fn summaries_bucket_as_the_region_does() {
        let (total, b) = summarize(&[0, 1, 5, 5, 0, 2]);
        assert_eq!(total, 13);
        assert_eq!(b, vec![2, 1, 1, 0, 2]);
        assert_eq!(summarize(&[0, 0]), (0, vec![2]));
    }
}
