//! The wear experiment behind `tierdb wear` (Figure 16 of van Renen et al.): NVM writes
//! per cache line for an architecture under 100% updates, counted by the NVM region's
//! wear counters, with the sorted curve kept at log-spaced ranks.
//!
//! Invariants: a run counts from a fresh engine whose counters start at zero; the
//! curve keeps its first and last ranks.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{Architecture, Engine};

use crate::drivers::ycsb::{self as ycsb_driver, YcsbReport};
use crate::harness::{Cleanup, EngineArgs, Progress, Setup};

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
    pub run: YcsbReport,
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
        run,
    })
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
}
