//! Two more of the NVCache paper's experiments (shared/papers,
//! nvcache-optane-block-cache.txt), run by `tierdb nvcache-obp --parts overhead,cost`:
//!
//! - [`overhead`], Figure 4 (§3.2.3, lessons 1 and 2): the throughput a block cache in
//!   NVM costs workloads that cannot gain from it — data that the DRAM (the engine's
//!   cache plus the OS buffer cache) holds — under always-admit, small-bypass, and
//!   small-bypass with OBP, against the same engine without the NVM cache (`ssd-bm`).
//!   The OS buffer cache is the `os-page-cache` SSD profile: a block read that misses
//!   the engine's DRAM costs a system call and a copy, not a device access. The NVM is
//!   larger than the data, so nothing is evicted (the paper disabled eviction).
//! - [`cost`], Figure 8(a) and Table 4 (§4.2): a fixed memory budget split between DRAM
//!   and NVM in five ways, from all DRAM (`ssd-bm`, no NVM) to one third DRAM; each
//!   split's throughput relative to all-DRAM, divided by its memory cost relative to
//!   all-DRAM (NVM costs `nvm_cost_ratio` of DRAM per byte; the paper: 0.38).

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::device::DeviceProfile;
use tierdb::policy::ObpMode;

use crate::harness::{EngineArgs, Middle, Progress, RunReport, Setup, median_of_all, run_one, value};

/// The SSD profile that stands for the OS buffer cache in [`overhead`].
pub const OS_PAGE_CACHE_PROFILE: &str = "os-page-cache";

/// The paper's NVM-to-DRAM price per byte (§4.2, after its reference 25).
pub const NVM_COST_RATIO_PAPER: f64 = 0.38;

/// Table 4's splits of the budget: the NVM share in 96ths (0, 16, 32, 48, 64 GB of 96).
pub const COST_NVM_SHARES_96THS: [u64; 5] = [0, 16, 32, 48, 64];

/// The admission setups of Figure 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Admission {
    /// No NVM cache: `ssd-bm`, the reference.
    NoCache,
    /// `nvcache`, every block read or written admitted (OBP off, small-bypass off).
    AlwaysAdmit,
    /// `nvcache`, nothing admitted while the data fits the DRAM (OBP off).
    SmallBypass,
    /// `nvcache`, small-bypass and windowed OBP (the paper's design).
    SmallBypassObp,
}

impl Admission {
    pub const ALL: [Admission; 4] =
        [Admission::NoCache, Admission::AlwaysAdmit, Admission::SmallBypass, Admission::SmallBypassObp];

    pub fn label(self) -> &'static str {
        match self {
            Admission::NoCache => "no NVM cache (ssd-bm)",
            Admission::AlwaysAdmit => "always-admit",
            Admission::SmallBypass => "small-bypass",
            Admission::SmallBypassObp => "small-bypass + OBP",
        }
    }
}

/// One bar of Figure 4.
#[derive(Serialize)]
pub struct OverheadRow {
    pub workload: String,
    pub admission: Admission,
    /// Median over the runs; `None` when a run failed.
    pub ops_per_sec: Option<f64>,
    /// 1 − this row ÷ the workload's no-cache row, in percent (the paper's "throughput
    /// degradation"; negative: faster than without the cache).
    pub degradation_percent: Option<f64>,
    /// NVM line writes per operation (admissions and removals write NVM).
    pub nvm_line_writes_per_op: Option<f64>,
    pub runs: Vec<RunReport>,
}

/// One split of Figure 8(a).
#[derive(Serialize)]
pub struct CostRow {
    pub workload: String,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    /// Memory cost relative to the budget all in DRAM.
    pub relative_cost: f64,
    pub ops_per_sec: Option<f64>,
    /// Throughput ÷ the all-DRAM split's.
    pub relative_throughput: Option<f64>,
    /// `relative_throughput ÷ relative_cost`: above 1, the split gives more throughput
    /// per dollar of memory than all DRAM.
    pub perf_per_cost: Option<f64>,
    pub nvm_hit_ratio: Option<f64>,
    pub runs: Vec<RunReport>,
}

fn median_value(runs: &[RunReport], wanted: usize, f: impl Fn(&RunReport) -> f64) -> Option<f64> {
    let v: Vec<f64> = runs.iter().map(f).collect();
    median_of_all(&v, wanted, Middle::Upper)
}

fn nvm_lines_per_op(r: &RunReport) -> f64 {
    r.result.tiers.nvm.map_or(0, |n| n.write_lines) as f64 / r.result.ops.max(1) as f64
}

/// `runs_n` runs of `arch` on `setup`; the runs that succeeded (a failure is reported
/// on `progress` and ends the point: its median is `None`).
fn runs_of(
    engine: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    runs_n: usize,
    tag: &str,
    progress: &Progress,
) -> Result<Vec<RunReport>> {
    let mut runs = Vec::new();
    for r in 0..runs_n {
        runs.push(
            run_one(engine, setup, arch, dram, nvm, Some(data), &format!("{tag}{r}"), progress)
                .with_context(|| format!("{arch}, run {} of {runs_n}", r + 1))?,
        );
    }
    Ok(runs)
}

/// Figure 4: each workload under each [`Admission`], `runs_n` runs each. `dram` is the
/// engine's cache; the OS buffer cache is taken to be as large again (the paper gives
/// each half of the DRAM), so small-bypass admits nothing while the data is below
/// twice `dram`. `data` must fit that and `nvm` must hold it.
///
/// # Errors
/// Sizes that do not make the experiment's setting; a bad workload; a run that fails.
pub fn overhead(
    engine: &EngineArgs,
    workloads: &[String],
    runs_n: usize,
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    progress: &Progress,
) -> Result<Vec<OverheadRow>> {
    if data.bytes() > 2 * dram.bytes() {
        bail!(
            "overhead: the data ({data}) must fit the DRAM, the engine's {dram} plus an OS buffer cache as large (the paper's Figure 4 setting)"
        );
    }
    if data.bytes() <= dram.bytes() {
        bail!(
            "overhead: the data ({data}) must outgrow the engine's DRAM ({dram}), or no block is ever read twice from the OS cache"
        );
    }
    if nvm.bytes() < data.bytes() {
        bail!(
            "overhead: the NVM ({nvm}) must hold the data ({data}), so that nothing is evicted (the paper disabled eviction)"
        );
    }
    let ssd_profile = DeviceProfile::preset(OS_PAGE_CACHE_PROFILE).context("the os-page-cache profile")?;
    let mut rows: Vec<OverheadRow> = Vec::new();
    for w in workloads {
        let mut base = engine.setup(w)?;
        base.ssd_profile = ssd_profile.clone();
        let mut reference = None;
        for adm in Admission::ALL {
            let mut setup = base.clone();
            let arch = if adm == Admission::NoCache { Architecture::SsdBm } else { Architecture::Nvcache };
            let (obp, small) = match adm {
                Admission::NoCache | Admission::AlwaysAdmit => (ObpMode::Off, 0),
                Admission::SmallBypass => (ObpMode::Off, 200),
                Admission::SmallBypassObp => (ObpMode::Window, 200),
            };
            setup.nvcache.obp_mode = obp;
            setup.nvcache.small_bypass_dram_percent = small;
            let runs = runs_of(engine, &setup, arch, (dram, nvm, data), runs_n, "ovh", progress)
                .with_context(|| format!("overhead: workload {w}, {}", adm.label()))?;
            let ops = median_value(&runs, runs_n, value);
            if adm == Admission::NoCache {
                reference = ops;
            }
            let degradation = match (ops, reference) {
                (Some(o), Some(r)) if r > 0.0 && adm != Admission::NoCache => Some(100.0 * (1.0 - o / r)),
                _ => None,
            };
            rows.push(OverheadRow {
                workload: w.clone(),
                admission: adm,
                ops_per_sec: ops,
                degradation_percent: degradation,
                nvm_line_writes_per_op: median_value(&runs, runs_n, nvm_lines_per_op),
                runs,
            });
        }
    }
    Ok(rows)
}

/// Figure 8(a): each workload on each split of `budget` ([`COST_NVM_SHARES_96THS`]),
/// `runs_n` runs each; `data` should be well beyond the budget (the paper's: 1.4–2.7×).
///
/// # Errors
/// A cost ratio outside (0, 1]; a bad workload; a run that fails.
pub fn cost(
    engine: &EngineArgs,
    workloads: &[String],
    runs_n: usize,
    (budget, data): (ByteSize, ByteSize),
    nvm_cost_ratio: f64,
    progress: &Progress,
) -> Result<Vec<CostRow>> {
    if !(nvm_cost_ratio > 0.0 && nvm_cost_ratio <= 1.0) {
        bail!("cost: the NVM-to-DRAM price ratio {nvm_cost_ratio} is outside (0, 1]");
    }
    if data.bytes() <= budget.bytes() {
        bail!("cost: the data ({data}) must outgrow the memory budget ({budget}), or no split needs NVM");
    }
    let mut rows: Vec<CostRow> = Vec::new();
    for w in workloads {
        let setup = engine.setup(w)?;
        let page = setup.page_size_bytes as u64;
        if budget.bytes() % page != 0 {
            bail!("cost: the budget ({budget}) is not a whole number of {} pages", ByteSize(page));
        }
        let mut reference = None;
        for share in COST_NVM_SHARES_96THS {
            // Whole pages of NVM; the DRAM takes the rest of the budget.
            let nvm = ByteSize(budget.bytes() * share / 96 / page * page);
            let dram = ByteSize(budget.bytes() - nvm.bytes());
            let arch = if share == 0 { Architecture::SsdBm } else { Architecture::Nvcache };
            let runs = runs_of(engine, &setup, arch, (dram, nvm, data), runs_n, "cost", progress)
                .with_context(|| format!("cost: workload {w}, DRAM {dram} + NVM {nvm}"))?;
            let ops = median_value(&runs, runs_n, value);
            if share == 0 {
                reference = ops;
            }
            let relative_cost = (dram.bytes() as f64 + nvm_cost_ratio * nvm.bytes() as f64) / budget.bytes() as f64;
            let relative_throughput = match (ops, reference) {
                (Some(o), Some(r)) if r > 0.0 => Some(o / r),
                _ => None,
            };
            let hit = if share == 0 {
                None
            } else {
                median_value(&runs, runs_n, |r| r.result.tiers.nvm_cache.unwrap_or_default().hit_ratio())
            };
            rows.push(CostRow {
                workload: w.clone(),
                dram_bytes: dram.bytes(),
                nvm_bytes: nvm.bytes(),
                relative_cost,
                ops_per_sec: ops,
                relative_throughput,
                perf_per_cost: relative_throughput.map(|t| t / relative_cost),
                nvm_hit_ratio: hit,
                runs,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table4s_costs_follow_from_the_price_ratio() {
        // The paper's Table 4: 1, 0.90, 0.79, 0.69, 0.59 at a ratio of 0.38.
        let want = [1.0, 0.90, 0.79, 0.69, 0.59];
        for (share, w) in COST_NVM_SHARES_96THS.into_iter().zip(want) {
            let nvm = share as f64 / 96.0;
            let c = (1.0 - nvm) + NVM_COST_RATIO_PAPER * nvm;
            assert!((c - w).abs() < 0.006, "share {share}/96: cost {c:.3}, Table 4 says {w}");
        }
    }

    #[test]
    fn the_os_page_cache_profile_is_an_ssd_profile() {
        let p = DeviceProfile::preset(OS_PAGE_CACHE_PROFILE).unwrap();
        p.expect_tier(tierdb::device::Tier::Ssd).unwrap();
        assert!(p.read_latency_ns < 10_000.0, "a page-cache read is no device access: {} ns", p.read_latency_ns);
    }
}
