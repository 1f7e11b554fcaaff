//! Table 1 of `tierdb nvcache-obp` (the NVCache paper's admission experiment): a workload
//! on `nvcache` under one admission mode, run `--runs` times, and the medians of its
//! throughput, NVM writes and NVM cache counters ([`table1_row`]); every workload under
//! every admission mode ([`table1`]).

use anyhow::{Context, Result};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::policy::{NvmCacheStats, ObpMode};

use crate::harness::{EngineArgs, Middle, Progress, Ranked, RunReport, Setup, median, run_one, value};

/// One row: a workload under one admission mode.
#[derive(Serialize)]
pub struct Row {
    pub workload: String,
    /// `off` is always-admit.
    pub obp: ObpMode,
    /// Medians over the runs.
    pub ops_per_sec: f64,
    /// Modelled device time per operation, µs: the part of `model` mode's time that
    /// does not depend on the machine's load (the rest is the thread's wall time).
    pub device_us_per_op: f64,
    pub nvm_line_writes: u64,
    pub nvm_page_writes: u64,
    /// NVM lines written per operation: the rows run for the same wall time, not the
    /// same number of operations, so the write reduction compares this.
    pub nvm_line_writes_per_op: f64,
    pub nvm_hit_ratio: f64,
    pub nvm_cache: NvmCacheStats,
    pub runs: Vec<RunReport>,
}

/// The median of the runs' values (the upper one of an even count), 0 without runs.
fn mid<T: Ranked + Default>(v: Vec<T>) -> T {
    median(v, Middle::Upper).unwrap_or_default()
}

/// `runs` runs of `w` on `nvcache` with `setup`'s admission mode, and their medians.
///
/// # Errors
/// A run that fails.
pub fn table1_row(
    engine: &EngineArgs,
    setup: &Setup,
    w: &str,
    runs_n: usize,
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    progress: &Progress,
) -> Result<Row> {
    let mut runs = Vec::new();
    for r in 0..runs_n {
        let tag = format!("obp{r}");
        let rep = run_one(engine, setup, Architecture::Nvcache, dram, nvm, Some(data), &tag, progress)?;
        runs.push(rep);
    }
    let cache = |r: &RunReport| r.result.tiers.nvm_cache.unwrap_or_default();
    let nvm_lines = |r: &RunReport| r.result.tiers.nvm.map_or(0, |n| n.write_lines);
    let med = |f: &dyn Fn(&NvmCacheStats) -> u64| mid(runs.iter().map(|r| f(&cache(r))).collect());
    let nvm_cache = NvmCacheStats {
        lookups: med(&|c| c.lookups),
        hits: med(&|c| c.hits),
        misses: med(&|c| c.misses),
        read_inserts: med(&|c| c.read_inserts),
        write_inserts: med(&|c| c.write_inserts),
        removals: med(&|c| c.removals),
        evictions: med(&|c| c.evictions),
        stale_overwrites: med(&|c| c.stale_overwrites),
        bypass_small_db: med(&|c| c.bypass_small_db),
        bypass_obp: med(&|c| c.bypass_obp),
        bypass_full: med(&|c| c.bypass_full),
        sweeps: med(&|c| c.sweeps),
        cached_pages: med(&|c| c.cached_pages),
        obp_permille: med(&|c| c.obp_permille),
    };
    Ok(Row {
        workload: w.to_string(),
        obp: setup.nvcache.obp_mode,
        ops_per_sec: mid(runs.iter().map(value).collect()),
        device_us_per_op: mid(runs
            .iter()
            .map(|r| r.result.modelled_device_secs * 1e6 / r.result.ops.max(1) as f64)
            .collect()),
        nvm_line_writes: mid(runs.iter().map(nvm_lines).collect()),
        nvm_page_writes: mid(runs.iter().map(|r| r.result.tiers.buffer.dram_to_nvm_pages).collect()),
        nvm_line_writes_per_op: mid(runs.iter().map(|r| nvm_lines(r) as f64 / r.result.ops.max(1) as f64).collect()),
        nvm_hit_ratio: mid(runs.iter().map(|r| cache(r).hit_ratio()).collect()),
        nvm_cache,
        runs,
    })
}

/// Table 1: every workload of `workloads` under every admission mode
/// ([`ObpMode::ALL`]), in that order; and the setup of the first row (none without
/// rows).
///
/// # Errors
/// A bad workload; a run that fails, naming the workload and the mode.
pub fn table1(
    engine: &EngineArgs,
    workloads: &[String],
    runs_n: usize,
    sizes: (ByteSize, ByteSize, ByteSize),
    progress: &Progress,
) -> Result<(Vec<Row>, Option<Setup>)> {
    let mut rows = Vec::new();
    let mut first_setup = None;
    for w in workloads {
        let base = engine.setup(w)?;
        for obp in ObpMode::ALL {
            let mut setup = base.clone();
            setup.nvcache.obp_mode = obp;
            rows.push(
                table1_row(engine, &setup, w, runs_n, sizes, progress)
                    .with_context(|| format!("workload {w}, OBP {}", obp.name()))?,
            );
            first_setup.get_or_insert(setup);
        }
    }
    Ok((rows, first_setup))
}
