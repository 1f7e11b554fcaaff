//! NV-SQL's experiments at equal memory cost, the parts of `tierdb nvsql-bench` that
//! are not argument parsing or rendering: the equal-cost memory configurations
//! ([`configurations`]) and the figures taken from each run ([`Metrics`], their medians
//! name by name).
//!
//! Invariants: every configuration costs the same budget; a median is taken per
//! figure over the runs that have it.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::buffer::TierStats;
use tierdb::device::DeviceProfile;
use tierdb::device::{NVM_DOUBLE_WRITE_SLOT_HEADER_BYTES, nvm_double_write_bytes};
use tierdb::limits::DOUBLE_WRITE_SLOTS;
use tierdb::wal::{self, Durability};

use crate::drivers::tpcc::{self, TpccOptions, TpccReport};
use crate::drivers::ycsb_txn::{LogPlace, TxnSetup};
use crate::harness::{DoubleWriteArg, EngineArgs, Middle, Progress, RunReport, Setup, median, run_one_txn};
use crate::write_set::WriteSet;

/// Estimated database bytes per TPC-C warehouse after the load (16 KiB and 8 KiB
/// pages, docs/tpcc.md "Measured"), items included once in
/// [`TPCC_ITEM_BYTES_EST`]; they size the default budget only (the report states the
/// measured size and ratio).
pub const TPCC_WAREHOUSE_BYTES_EST: u64 = 80 << 20;
pub const TPCC_ITEM_BYTES_EST: u64 = 9 << 20;
/// The same at the tiny scale (`--tiny`).
pub const TPCC_TINY_WAREHOUSE_BYTES_EST: u64 = 3 << 20;
pub const TPCC_TINY_ITEM_BYTES_EST: u64 = 1 << 20;
/// Memory units at most, so a typo cannot start a day-long run.
pub const UNITS_MAX: u32 = 1000;
/// An NVM pool's size is a multiple of this.
pub const NVM_ALIGN_BYTES: u64 = 4096;
/// DRAM frames a configuration needs at least (pages pinned by the workers' descents,
/// the checkpoint and the loaders).
pub const DRAM_FRAMES_MIN: u64 = 64;
/// The fewest NVM pool frames an nvsql configuration may have.
pub const NVM_FRAMES_MIN: u64 = 8;
/// The NVM double-write area takes about this fraction (1/N) of the NVM bought, with
/// at least `NVM_DOUBLE_WRITE_SLOTS_MIN` slots and at most `DOUBLE_WRITE_SLOTS`.
pub const NVM_DOUBLE_WRITE_SHARE_DIVISOR: u64 = 32;
pub const NVM_DOUBLE_WRITE_SLOTS_MIN: usize = 4;

/// One memory configuration.
#[derive(Clone, Debug, Serialize)]
pub struct MemConfig {
    /// `DRAM units:NVM units`, e.g. `8:1`.
    pub label: String,
    pub arch: Architecture,
    pub dram_bytes: u64,
    /// The NVM buffer pool.
    pub nvm_bytes: u64,
    /// The NVM double-write area beside the pool (NV-SQL §5.4), part of the NVM bought:
    /// its slots and bytes (0: none, DRAM-only).
    pub nvm_double_write_slots: usize,
    pub nvm_double_write_bytes: u64,
    /// Where the pages on their way to SSD are copied first (the double-write area,
    /// NV-SQL §5.4): `ssd` (InnoDB's, and DRAM-only's) or `nvm`.
    pub double_write: DoubleWriteArg,
    /// Where the log buffer lives: DRAM (a commit or a page write-back forces it to the
    /// log file) or an NVM ring (durable as appended: no log force, §5.4).
    pub log_buffer: LogPlace,
    pub cost_usd: f64,
}

impl MemConfig {
    /// `8:1 nvsql`: the label and the architecture.
    pub fn name(&self) -> String {
        format!("{} {}", self.label, self.arch)
    }

    /// NV-SQL's Figure 6, first step: the NVM write cache alone — the double-write area
    /// on SSD (its NVM goes to the pool) and the log buffer in DRAM.
    pub fn caching_only(&self) -> MemConfig {
        MemConfig {
            nvm_bytes: self.nvm_bytes + self.nvm_double_write_bytes,
            nvm_double_write_slots: 0,
            nvm_double_write_bytes: 0,
            double_write: DoubleWriteArg::Ssd,
            log_buffer: LogPlace::Dram,
            ..self.clone()
        }
    }

    /// Figure 6, second step: the write cache and the double-write area in NVM, the log
    /// buffer in DRAM.
    pub fn with_nvm_double_write(&self) -> MemConfig {
        MemConfig { log_buffer: LogPlace::Dram, ..self.clone() }
    }

    /// `ssd` or `nvm`: where the double-write area is.
    pub fn double_write_name(&self) -> &'static str {
        match self.double_write {
            DoubleWriteArg::Nvm => "nvm",
            DoubleWriteArg::Ssd => "ssd",
            DoubleWriteArg::Off => "off",
            DoubleWriteArg::On => "the architecture's",
        }
    }
}

/// The NVM log ring's size for nvsql's configurations: the TPC-C driver's (16 MiB). The
/// log buffer is outside the memory budget in every configuration, as the paper's 11 GB
/// and 8 + 1 GB are buffer pools: the DRAM-only configuration's DRAM log buffer
/// (`wal::BUFFER_BYTES_DEFAULT`, 4 MiB) is not counted either. The ring needs only what
/// is appended between two background flushes (1 ms).
pub const NVM_LOG_RING_BYTES: u64 = 16 << 20;

/// The equal-cost configurations: DRAM-only first, then one per NVM unit count.
///
/// # Errors
/// A configuration whose NVM would cost the whole budget or leave too little DRAM.
pub fn configurations(
    budget: u64,
    units: u32,
    nvm_units: &[u32],
    page: u64,
    dram: &DeviceProfile,
    nvm: &DeviceProfile,
) -> Result<Vec<MemConfig>> {
    if units == 0 || units > UNITS_MAX {
        bail!("--units {units} is outside 1..={UNITS_MAX}");
    }
    if !(dram.cost_per_gb_usd > 0.0 && nvm.cost_per_gb_usd > 0.0) {
        bail!("the DRAM and NVM profiles need a price (cost_per_gb_usd > 0) to compare at equal cost");
    }
    let ratio = nvm.cost_per_gb_usd / dram.cost_per_gb_usd;
    let unit = budget as f64 / f64::from(units);
    let cost = |d: u64, n: u64| (d as f64 * dram.cost_per_gb_usd + n as f64 * nvm.cost_per_gb_usd) / 1e9;
    let mut out = vec![MemConfig {
        label: format!("{units}:0"),
        arch: Architecture::SsdBm,
        dram_bytes: budget,
        nvm_bytes: 0,
        nvm_double_write_slots: 0,
        nvm_double_write_bytes: 0,
        double_write: DoubleWriteArg::Ssd,
        log_buffer: LogPlace::Dram,
        cost_usd: cost(budget, 0),
    }];
    for &k in nvm_units {
        // NVM comes in 4 KiB multiples, DRAM in pages: the costs agree to a page.
        let nvm_total = (unit * f64::from(k)) as u64 / NVM_ALIGN_BYTES * NVM_ALIGN_BYTES;
        let dram_f = ((budget as f64 - ratio * nvm_total as f64) / page as f64).floor() * page as f64;
        if k == 0 || dram_f < (DRAM_FRAMES_MIN * page) as f64 {
            bail!(
                "--nvm-units {k}: {} of NVM at {ratio:.2}× DRAM's price leaves {} of the {} budget for DRAM (at least \
                 {DRAM_FRAMES_MIN} pages of {} are needed, and k must be at least 1)",
                ByteSize(nvm_total),
                ByteSize(dram_f.max(0.0) as u64),
                ByteSize(budget),
                ByteSize(page)
            );
        }
        // The double-write area is NVM bought too: a share of it (InnoDB's 128 pages at
        // most; NV-SQL's was 2 MB of a 1 GB NVDIMM), the pool the rest.
        let slot = page + NVM_DOUBLE_WRITE_SLOT_HEADER_BYTES as u64;
        let slots = ((nvm_total / NVM_DOUBLE_WRITE_SHARE_DIVISOR / slot) as usize)
            .clamp(NVM_DOUBLE_WRITE_SLOTS_MIN, DOUBLE_WRITE_SLOTS);
        let dw_bytes = nvm_double_write_bytes(slots, page as usize);
        let nvm_bytes = nvm_total.saturating_sub(dw_bytes) / NVM_ALIGN_BYTES * NVM_ALIGN_BYTES;
        if nvm_bytes < NVM_FRAMES_MIN * page {
            bail!(
                "--nvm-units {k}: {} of NVM holds a double-write area of {} and too small a pool ({} pages of {} at \
                 least); give a larger --budget",
                ByteSize(nvm_total),
                ByteSize(dw_bytes),
                NVM_FRAMES_MIN,
                ByteSize(page)
            );
        }
        let dram_bytes = dram_f as u64;
        out.push(MemConfig {
            label: format!("{}:{k}", fmt_units(dram_bytes as f64 / unit)),
            arch: Architecture::Nvsql,
            dram_bytes,
            nvm_bytes,
            nvm_double_write_slots: slots,
            nvm_double_write_bytes: dw_bytes,
            double_write: DoubleWriteArg::Nvm,
            log_buffer: LogPlace::Nvm,
            cost_usd: cost(dram_bytes, nvm_bytes + dw_bytes),
        });
    }
    Ok(out)
}

/// A count of memory units as a label prints it: `8`, `2.5`.
pub fn fmt_units(u: f64) -> String {
    if (u - u.round()).abs() < 0.05 { format!("{}", u.round()) } else { format!("{u:.1}") }
}

/// One run's figures, by name (medians are taken name by name).
pub type Metrics = BTreeMap<&'static str, f64>;

/// `a / b`, 0 when `b` is 0 (a figure per unit of work).
pub fn per(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Figures common to both workloads, per unit of work (`work`: transactions or
/// operations).
pub fn tier_metrics(m: &mut Metrics, t: &TierStats, work: u64, page: u64) {
    let b = &t.buffer;
    let fixes = b.fixes();
    let ssd_writes = t.ssd.map_or(0, |s| s.write_bytes / page);
    let dwa_writes = t.ssd_double_write.map_or(0, |s| s.write_bytes / page);
    let ssd_reads = t.ssd.map_or(0, |s| s.read_bytes / page);
    m.insert("ssd_page_writes", ssd_writes as f64);
    m.insert("ssd_writes_per_unit", per(ssd_writes, work));
    m.insert("double_write_pages_per_unit", per(dwa_writes, work));
    // Every byte the SSD takes for data pages: the page file's in-place writes and the
    // double-write file's copies with their slot headers (NV-SQL Table 5's Write/TX,
    // which iostat measures, counts both; an NVM double-write area adds nothing here).
    let data_bytes = t.ssd.map_or(0, |s| s.write_bytes) + t.ssd_double_write.map_or(0, |s| s.write_bytes);
    m.insert("ssd_data_kib_per_unit", per(data_bytes, work) / 1024.0);
    m.insert("ssd_reads_per_unit", per(ssd_reads, work));
    // Where the in-place page writes come from: dirty DRAM victims; pages leaving NVM
    // (its replacement's victims, pages a whole-page write takes back to DRAM, and the
    // old dirty pages a checkpoint writes to bound the log); the rest, a checkpoint's
    // writes of DRAM pages (and the page file's own metadata pages).
    let from_dram = b.dram_to_ssd_pages.min(ssd_writes);
    let from_nvm = b.nvm_to_ssd_pages.min(ssd_writes - from_dram);
    m.insert("ssd_writes_dram_evictions_per_unit", per(from_dram, work));
    m.insert("ssd_writes_from_nvm_per_unit", per(from_nvm, work));
    m.insert("ssd_writes_checkpoint_per_unit", per(ssd_writes - from_dram - from_nvm, work));
    m.insert("dram_hit_ratio", per(b.dram_hits, fixes));
    m.insert("nvm_hit_ratio", per(b.nvm_hits, fixes));
    m.insert("nvm_admissions_per_unit", per(b.nvm_admissions, work));
    m.insert("nvm_evictions_per_unit", per(b.nvm_evictions, work));
    m.insert("nvm_writes_in_place_per_unit", per(b.nvm_writes_in_place, work));
    if let Some(n) = t.nvsql {
        let (old, new) = n.updates_per_page();
        m.insert("updates_per_page_old", old);
        m.insert("updates_per_page_new", new);
        m.insert("write_amount_new", n.write_amount_new());
    }
}

pub fn tpcc_metrics(r: &TpccReport) -> Metrics {
    let mut m = Metrics::new();
    let tx: u64 = r.kinds.iter().map(|k| k.committed).sum();
    m.insert("throughput", r.modelled_tx_per_sec.unwrap_or(r.tx_per_sec));
    m.insert("units", tx as f64);
    tier_metrics(&mut m, &r.tiers, tx, r.page_size_bytes as u64);
    m.insert("log_bytes_per_unit", per(r.wal.bytes, tx));
    // Log forces: callers that waited for the log file's sync (a commit under `sync`,
    // the write-ahead rule before a page write-back, a checkpoint); none with the log
    // buffer in NVM.
    m.insert("log_waits_per_unit", per(r.wal.waits, tx));
    m.insert("log_syncs_per_unit", per(r.wal.syncs, tx));
    m.insert("checkpoints_in_run", f64::from(r.checkpoints.in_run));
    m.insert("db_bytes_loaded", r.db_bytes_loaded as f64);
    m.insert("db_bytes_after", r.db_bytes_after as f64);
    if let Some(w) = &r.write_set {
        let (mean, share) = w.mean_written();
        m.insert("write_set_pages", mean);
        m.insert("write_set_share", share);
    }
    if let Some(c) = &r.crash {
        let rec = &c.recovery;
        m.insert("recovery_secs", rec.secs);
        m.insert("recovery_open_secs", rec.open_secs);
        m.insert("recovery_analysis_secs", rec.analysis_secs);
        m.insert("recovery_redo_secs", rec.redo_secs);
        m.insert("recovery_undo_secs", rec.undo_secs);
        m.insert("recovery_checkpoint_secs", rec.checkpoint_secs);
        m.insert("recovery_records_read", rec.records_read as f64);
        m.insert("recovery_changes_redone", rec.changes_redone as f64);
        m.insert("recovery_changes_skipped", rec.changes_skipped as f64);
        m.insert("recovery_changes_skipped_unread", rec.changes_skipped_unread as f64);
        m.insert("recovery_changes_skipped_in_nvm", rec.changes_skipped_in_nvm as f64);
        m.insert("recovery_images_skipped_unread", rec.images_skipped_unread as f64);
        m.insert("recovery_flush_records", rec.flush_records as f64);
        m.insert("recovery_log_scanned_bytes", rec.log_end.saturating_bytes_since(rec.redo_from) as f64);
        m.insert("recovery_nvm_pages_reused", rec.nvm_pages_reused as f64);
        m.insert("recovery_consistent", f64::from(u8::from(c.consistency.ok())));
    }
    m
}

pub fn ycsb_metrics(r: &RunReport) -> Metrics {
    let mut m = Metrics::new();
    let res = &r.result;
    m.insert("throughput", res.modelled_ops_per_sec.unwrap_or(res.throughput_ops_per_sec));
    m.insert("units", res.ops as f64);
    tier_metrics(&mut m, &res.tiers, res.ops, r.setup.page_size_bytes as u64);
    m.insert("db_bytes_loaded", res.data_bytes as f64);
    if let Some(t) = &r.txn {
        m.insert("log_bytes_per_unit", per(t.wal.bytes, res.ops));
    }
    m
}

/// The median of every metric over the runs, figure by figure.
pub fn metrics_median(runs: &[Metrics]) -> Metrics {
    let mut out = Metrics::new();
    if let Some(first) = runs.first() {
        for &k in first.keys() {
            let v = median(runs.iter().filter_map(|m| m.get(k).copied()), Middle::Upper);
            out.insert(k, v.expect("the first run has the metric"));
        }
    }
    out
}

/// One configuration's runs.
#[derive(Serialize)]
pub struct Point {
    pub config: MemConfig,
    pub policy: String,
    pub median: Metrics,
    pub runs: Vec<Metrics>,
    /// TPC-C: the write working set of the run with the median throughput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_set: Option<WriteSet>,
}

pub fn get(m: &Metrics, k: &str) -> f64 {
    m.get(k).copied().unwrap_or(f64::NAN)
}

/// The TPC-C runs of one invocation: the engine options, the workload, the runs per
/// point and the progress bar.
pub struct TpccPlan<'a> {
    pub engine: &'a EngineArgs,
    pub tpcc: &'a TpccOptions,
    pub runs: usize,
    pub progress: &'a Progress,
}

impl TpccPlan<'_> {
    /// One TPC-C run of `config` (with `policy` instead of the architecture's own), its
    /// consistency checked.
    ///
    /// # Errors
    /// The run's errors; a failed consistency check.
    pub fn run(
        &self,
        config: &MemConfig,
        policy: Option<&str>,
        crash: bool,
        tag: &str,
    ) -> Result<(Metrics, TpccReport)> {
        let mut e = self.engine.clone();
        e.policy = policy.map(str::to_string);
        if config.nvm_double_write_slots > 0 {
            e.nvm_double_write_slots = config.nvm_double_write_slots;
        }
        e.double_write = config.double_write;
        let opts = TpccOptions { log_buffer: config.log_buffer.name().to_string(), ..self.tpcc.clone() };
        let s = e.setup("ro")?;
        let r = tpcc::run_one(
            &e,
            &s,
            &opts,
            config.arch,
            ByteSize(config.dram_bytes),
            ByteSize(config.nvm_bytes),
            crash,
            tag,
            self.progress,
        )
        .with_context(|| format!("TPC-C on {}", config.name()))?;
        let bad = !r.consistency.ok() || r.crash.as_ref().is_some_and(|c| !c.consistency.ok());
        if bad {
            bail!("TPC-C on {}: the consistency check failed", config.name());
        }
        assert_eq!(r.log_buffer, config.log_buffer.name(), "{}: the run's log buffer", config.name());
        Ok((tpcc_metrics(&r), r))
    }

    /// `runs` runs of `config`, their medians, and the write set of the run with the
    /// median throughput.
    ///
    /// # Errors
    /// As [`TpccPlan::run`].
    pub fn point(&self, config: &MemConfig, policy: Option<&str>, crash: bool, tag: &str) -> Result<Point> {
        let mut runs = Vec::new();
        let mut sets = Vec::new();
        for i in 0..self.runs {
            let (m, r) = self.run(config, policy, crash, &format!("{tag}{i}"))?;
            sets.push((get(&m, "throughput"), r.write_set));
            runs.push(m);
        }
        sets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let write_set = sets.swap_remove(sets.len() / 2).1;
        Ok(Point {
            config: config.clone(),
            policy: policy.map_or_else(|| config.arch.default_policy().to_string(), str::to_string),
            median: metrics_median(&runs),
            runs,
            write_set,
        })
    }
}

/// `runs_n` runs of YCSB through transactions on `config`, and their medians.
///
/// # Errors
/// A run that fails.
#[allow(clippy::too_many_arguments)]
pub fn ycsb_point(
    engine: &EngineArgs,
    setup: &Setup,
    txn: &TxnSetup,
    config: &MemConfig,
    data: ByteSize,
    runs_n: usize,
    tag: &str,
    progress: &Progress,
) -> Result<Point> {
    let mut ys = setup.clone();
    if config.nvm_double_write_slots > 0 {
        ys.nvm_double_write_slots = config.nvm_double_write_slots;
    }
    let mut runs = Vec::new();
    for r in 0..runs_n {
        let rep = run_one_txn(
            engine,
            &ys,
            txn,
            config.arch,
            ByteSize(config.dram_bytes),
            ByteSize(config.nvm_bytes),
            Some(data),
            &format!("{tag}{r}"),
            progress,
        )
        .with_context(|| format!("YCSB on {}", config.name()))?;
        runs.push(ycsb_metrics(&rep));
    }
    Ok(Point {
        config: config.clone(),
        policy: config.arch.default_policy().to_string(),
        median: metrics_median(&runs),
        runs,
        write_set: None,
    })
}

/// The default memory budget: the estimated TPC-C database over `data_ratio`, never so
/// small that a configuration has fewer than [`DRAM_FRAMES_MIN`] DRAM pages (the tiny
/// scale), in whole pages; `budget` instead when given.
#[allow(clippy::too_many_arguments)]
pub fn budget_bytes(
    budget: Option<ByteSize>,
    warehouses: u32,
    tiny: bool,
    data_ratio: f64,
    units: u32,
    nvm_units: &[u32],
    page: u64,
    dram: &DeviceProfile,
    nvm: &DeviceProfile,
) -> u64 {
    let (per_wh, items) = if tiny {
        (TPCC_TINY_WAREHOUSE_BYTES_EST, TPCC_TINY_ITEM_BYTES_EST)
    } else {
        (TPCC_WAREHOUSE_BYTES_EST, TPCC_ITEM_BYTES_EST)
    };
    let estimate = u64::from(warehouses) * per_wh + items;
    let price = nvm.cost_per_gb_usd / dram.cost_per_gb_usd.max(f64::MIN_POSITIVE);
    let k_max = f64::from(nvm_units.iter().copied().max().unwrap_or(0));
    let left = 1.0 - price * k_max / f64::from(units.max(1));
    let floor = if left > 0.0 { (2 * DRAM_FRAMES_MIN * page) as f64 / left } else { 0.0 };
    budget.map_or((estimate as f64 / data_ratio).max(floor) as u64 / page * page, ByteSize::bytes)
}

impl TpccPlan<'_> {
    /// One point per configuration (tags `nvt{i}r`), with a crash and recovery after
    /// each run when `crash`.
    ///
    /// # Errors
    /// As [`TpccPlan::run`].
    pub fn points(&self, configs: &[MemConfig], crash: bool) -> Result<Vec<Point>> {
        configs.iter().enumerate().map(|(i, c)| self.point(c, None, crash, &format!("nvt{i}r"))).collect()
    }

    /// NV-SQL's Table 4: the first nvsql configuration (`configs[1]`) under each of
    /// `policies`; the first policy's point is `tpcc_points[1]` (the tpcc part's run
    /// with the default policy) when there is one. No write sets.
    ///
    /// # Errors
    /// No nvsql configuration; as [`TpccPlan::run`].
    pub fn table4(&self, configs: &[MemConfig], tpcc_points: &[Point], policies: &[&str]) -> Result<Vec<Point>> {
        let Some(c) = configs.get(1) else { bail!("table4 needs an nvsql configuration (--nvm-units)") };
        let mut points = Vec::new();
        for (i, policy) in policies.iter().enumerate() {
            match tpcc_points.get(1).filter(|_| i == 0) {
                Some(p) => points.push(Point {
                    config: p.config.clone(),
                    policy: (*policy).to_string(),
                    median: p.median.clone(),
                    runs: p.runs.clone(),
                    write_set: None,
                }),
                None => {
                    let mut p = self.point(c, Some(policy), false, &format!("nv4{i}r"))?;
                    p.write_set = None;
                    points.push(p);
                }
            }
        }
        Ok(points)
    }
}

/// NV-SQL's Figure 6 (§6.2.3): the names of its steps, in the order
/// [`TpccPlan::ablation`] runs them.
pub const ABLATION_STEPS: [&str; 4] =
    ["DRAM-only (Vanilla)", "caching only", "+ NVM double write", "+ NVM redo (log) buffer"];

impl TpccPlan<'_> {
    /// Figure 6 on the first nvsql configuration (`configs[1]`): DRAM-only; the NVM
    /// write cache alone (double-write area on SSD, log buffer in DRAM); with the
    /// double-write area in NVM; and with the log buffer in NVM too (nvsql as
    /// `configurations` makes it). The first and last are `tpcc_points[0]` and
    /// `tpcc_points[1]` when the tpcc part ran (tags `nva{i}r` otherwise). No crash, no
    /// write sets.
    ///
    /// # Errors
    /// No nvsql configuration; as [`TpccPlan::run`].
    pub fn ablation(&self, configs: &[MemConfig], tpcc_points: &[Point]) -> Result<Vec<Point>> {
        let Some(nv) = configs.get(1) else { bail!("the ablation needs an nvsql configuration (--nvm-units)") };
        assert_eq!(nv.arch, Architecture::Nvsql, "{}", nv.name());
        let steps = [configs[0].clone(), nv.caching_only(), nv.with_nvm_double_write(), nv.clone()];
        let mut points = Vec::new();
        for (i, c) in steps.iter().enumerate() {
            let reuse = match i {
                0 => tpcc_points.first(),
                3 => tpcc_points.get(1),
                _ => None,
            };
            let mut p = match reuse {
                Some(p) => Point {
                    config: p.config.clone(),
                    policy: p.policy.clone(),
                    median: p.median.clone(),
                    runs: p.runs.clone(),
                    write_set: None,
                },
                None => self.point(c, None, false, &format!("nva{i}r"))?,
            };
            p.write_set = None;
            points.push(p);
        }
        Ok(points)
    }
}

/// One YCSB point per configuration (tags `nvy{i}r`): `workload` through transactions
/// with `durability`, the log buffer and double-write area where the configuration puts
/// them, every architecture's own policy.
///
/// # Errors
/// A bad workload; a run that fails.
pub fn ycsb_points(
    engine: &EngineArgs,
    workload: &str,
    durability: Durability,
    configs: &[MemConfig],
    data: ByteSize,
    runs_n: usize,
    progress: &Progress,
) -> Result<Vec<Point>> {
    let mut e = engine.clone();
    e.policy = None;
    let ys = e.setup(workload)?;
    configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let txn = TxnSetup {
                durability,
                isolation: tierdb::db::Isolation::Snapshot,
                log_buffer: c.log_buffer,
                log_buffer_bytes: match c.log_buffer {
                    LogPlace::Dram => wal::BUFFER_BYTES_DEFAULT as u64,
                    LogPlace::Nvm => NVM_LOG_RING_BYTES,
                },
                flush_interval_us: wal::FLUSH_INTERVAL_DEFAULT.as_micros() as u64,
            };
            let mut ys = ys.clone();
            ys.double_write = c.double_write;
            ycsb_point(&e, &ys, &txn, c, data, runs_n, &format!("nvy{i}r"), progress)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_cost_configurations_follow_the_price_ratio() {
        let dram = DeviceProfile::load("dram").unwrap();
        let nvm = DeviceProfile::load("nvdimm-n").unwrap();
        let b = 11 << 20;
        let c = configurations(b, 11, &[1, 2], 8192, &dram, &nvm).unwrap();
        let labels: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["11:0", "8:1", "5:2"], "NV-SQL's configurations at its price ratio of 3");
        assert_eq!(c[1].dram_bytes, 8 << 20);
        // The NVM bought is the pool and its double-write area: 1 MiB, 4 KiB-aligned.
        assert_eq!(c[1].nvm_bytes + c[1].nvm_double_write_bytes, 1 << 20, "{:?}", c[1]);
        assert_eq!(c[1].nvm_double_write_slots, NVM_DOUBLE_WRITE_SLOTS_MIN, "{:?}", c[1]);
        assert!(c[2].nvm_double_write_slots >= c[1].nvm_double_write_slots, "{:?}", c[2]);
        for x in &c {
            assert!((x.cost_usd - c[0].cost_usd).abs() < 1e-5 * c[0].cost_usd, "{x:?}");
        }
        // Placement (§5.4): DRAM-only keeps InnoDB's; nvsql puts both in NVM.
        assert_eq!((c[0].double_write, c[0].log_buffer), (DoubleWriteArg::Ssd, LogPlace::Dram));
        assert_eq!((c[1].double_write, c[1].log_buffer), (DoubleWriteArg::Nvm, LogPlace::Nvm));
        // Figure 6's steps cost the same: caching only gives the area's NVM to the pool.
        let co = c[1].caching_only();
        assert_eq!(co.nvm_bytes, c[1].nvm_bytes + c[1].nvm_double_write_bytes);
        assert_eq!(
            (co.nvm_double_write_slots, co.double_write, co.log_buffer),
            (0, DoubleWriteArg::Ssd, LogPlace::Dram)
        );
        assert_eq!(co.cost_usd, c[1].cost_usd);
        let dw = c[1].with_nvm_double_write();
        assert_eq!(
            (dw.nvm_bytes, dw.double_write, dw.log_buffer),
            (c[1].nvm_bytes, DoubleWriteArg::Nvm, LogPlace::Dram)
        );
        // A large budget: the area stops at InnoDB's 128 pages.
        let big = configurations(11 << 30, 11, &[1], 8192, &dram, &nvm).unwrap();
        assert_eq!(big[1].nvm_double_write_slots, DOUBLE_WRITE_SLOTS);
        assert!(configurations(b, 11, &[4], 8192, &dram, &nvm).is_err(), "12 units of cost for 11");
        assert!(configurations(b, 0, &[1], 8192, &dram, &nvm).is_err());
    }

    #[test]
    fn medians_are_taken_figure_by_figure() {
        let m = |a: f64, b: f64| Metrics::from([("throughput", a), ("dram_hit_ratio", b)]);
        let med = metrics_median(&[m(3.0, 0.1), m(1.0, 0.9), m(2.0, 0.5)]);
        assert_eq!((get(&med, "throughput"), get(&med, "dram_hit_ratio")), (2.0, 0.5));
    }
}
