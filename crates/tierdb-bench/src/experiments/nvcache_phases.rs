//! The phases experiment of `tierdb nvcache-obp --parts phases`: why the overhead-bypass ratio is taken over a
//! sliding window. One engine per admission mode loads the table once and then runs
//! phases of different YCSB mixes back to back (default: A, 50% updates, then C, read
//! only), in epochs of `--phase-epoch-ops` operations. Per epoch it records what the
//! NVM cache did: lookups, hits, inserts, removals, evictions, bypasses by OBP and the
//! OBP gauge at the epoch's end.
//!
//! A write-heavy phase drives OBP over its target: each dirty victim with an NVM copy
//! removes it, and removals are not gated. OBP since start-up then remembers those
//! removals: admissions stay off until enough later lookups dilute the ratio below the
//! target. OBP over the last `--obp-window` lookups forgets them within a window and
//! admits again. (While the gate holds, both ratios sit at the target, so they differ
//! only where ungated removals push them over it; docs/nvcache.md has the figures.)

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{Architecture, Engine};
use tierdb::policy::{NvmCacheStats, ObpMode};
use tierdb_workload::YcsbSpec;

use crate::drivers::ycsb::{self as ycsb_driver, EpochHooks, EpochRun};
use crate::harness::{Cleanup, EngineArgs, Middle, Progress, Setup, median};

/// Phases at most, and epochs per phase at most (a typo cannot start an hour-long run).
pub const PHASES_MAX: usize = 8;
pub const PHASE_EPOCHS_MAX: u32 = 1_000;
pub const PHASE_EPOCH_OPS_MAX: u64 = 10_000_000;

/// What the phases part runs.
#[derive(Clone, Debug, Serialize)]
pub struct PhasePlan {
    /// YCSB workloads, one per phase, in order.
    pub workloads: Vec<String>,
    pub epochs_per_phase: u32,
    pub epoch_ops: u64,
}

impl PhasePlan {
    /// # Errors
    /// Counts out of range.
    pub fn validate(&self) -> Result<()> {
        if self.workloads.is_empty() || self.workloads.len() > PHASES_MAX {
            bail!("--phases takes 1..={PHASES_MAX} workloads, got {}", self.workloads.len());
        }
        if !(1..=PHASE_EPOCHS_MAX).contains(&self.epochs_per_phase) {
            bail!("--phase-epochs {} is outside 1..={PHASE_EPOCHS_MAX}", self.epochs_per_phase);
        }
        if !(1..=PHASE_EPOCH_OPS_MAX).contains(&self.epoch_ops) {
            bail!("--phase-epoch-ops {} is outside 1..={PHASE_EPOCH_OPS_MAX}", self.epoch_ops);
        }
        Ok(())
    }

    /// The phases' workloads, resolved as `engine_args` would any workload.
    ///
    /// # Errors
    /// An unknown workload or a bad property, named.
    pub fn workloads(&self, engine_args: &EngineArgs) -> Result<Vec<YcsbSpec>> {
        self.workloads
            .iter()
            .map(|w| engine_args.setup(w).map(|s| s.workload).with_context(|| format!("--phases workload {w}")))
            .collect()
    }

    fn epochs(&self) -> u32 {
        self.epochs_per_phase * self.workloads.len() as u32
    }
}

/// One epoch of one admission mode.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseEpoch {
    /// From 0, over all phases.
    pub epoch: u32,
    pub workload: String,
    pub ops: u64,
    /// Modelled in `model` mode.
    pub ops_per_sec: f64,
    /// NVM lines written per operation.
    pub nvm_lines_per_op: f64,
    /// NVM cache hits / lookups in this epoch.
    pub hit_ratio: f64,
    /// Pages inserted into the NVM cache per 1,000 lookups.
    pub inserts_per_kilo_lookup: f64,
    /// The cache's counters over the epoch (`obp_permille` and `cached_pages` at its end).
    pub cache: NvmCacheStats,
}

/// One admission mode over all phases.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseRun {
    pub obp: ObpMode,
    pub epochs: Vec<PhaseEpoch>,
}

/// Per phase and mode: what the phase's epochs added up to.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseSummary {
    pub phase: usize,
    pub workload: String,
    pub obp: ObpMode,
    pub ops: u64,
    /// The median epoch's throughput.
    pub ops_per_sec: f64,
    pub hit_ratio: f64,
    pub inserts: u64,
    pub bypass_obp: u64,
    /// OBP at the phase's end, per mille.
    pub obp_permille_end: u64,
    /// Inserts in the first half of the phase's epochs (rounded up): how soon the mode
    /// admits again after a phase change.
    pub inserts_first_half: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    pub plan: PhasePlan,
    pub runs: Vec<PhaseRun>,
    pub summaries: Vec<PhaseSummary>,
}

struct Hooks<'a> {
    plan: &'a PhasePlan,
    specs: &'a [YcsbSpec],
    progress: &'a Progress,
    obp: ObpMode,
    epochs: Vec<PhaseEpoch>,
}

impl Hooks<'_> {
    fn phase(&self, epoch: u32) -> usize {
        (epoch / self.plan.epochs_per_phase) as usize
    }
}

impl EpochHooks for Hooks<'_> {
    fn before(&mut self, epoch: u32) -> Result<bool> {
        if epoch >= self.plan.epochs() {
            return Ok(false);
        }
        self.progress.set_prefix(&format!(
            "phases {} {} epoch {epoch}",
            label(self.obp),
            self.plan.workloads[self.phase(epoch)]
        ));
        Ok(true)
    }

    fn epoch_workload(&mut self, epoch: u32) -> Option<YcsbSpec> {
        Some(self.specs[self.phase(epoch)].clone())
    }

    fn after(&mut self, epoch: u32, run: &EpochRun) -> Result<()> {
        let cache = run.tiers.nvm_cache.unwrap_or_default();
        let lines = run.nvm_line_writes();
        let inserts = cache.read_inserts + cache.write_inserts;
        self.epochs.push(PhaseEpoch {
            epoch,
            workload: self.plan.workloads[self.phase(epoch)].clone(),
            ops: run.ops,
            ops_per_sec: run.ops_per_sec(),
            nvm_lines_per_op: lines as f64 / run.ops.max(1) as f64,
            hit_ratio: cache.hit_ratio(),
            inserts_per_kilo_lookup: 1000.0 * inserts as f64 / cache.lookups.max(1) as f64,
            cache,
        });
        Ok(())
    }
}

/// Runs the phases (`specs`: the plan's workloads, [`PhasePlan::workloads`]) under each
/// admission mode on a fresh `nvcache` engine.
///
/// # Errors
/// Bad plan, opening the engine, the run.
pub fn run(
    engine_args: &EngineArgs,
    base: &Setup,
    (plan, specs): (&PhasePlan, &[YcsbSpec]),
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    progress: &Progress,
) -> Result<PhaseReport> {
    plan.validate()?;
    debug_assert_eq!(specs.len(), plan.workloads.len());
    let mut runs = Vec::new();
    for obp in ObpMode::ALL {
        let mut setup = base.clone();
        setup.nvcache.obp_mode = obp;
        setup.workload = specs[0].clone();
        let cfg = engine_args.arch_config(
            &setup,
            Architecture::Nvcache,
            dram,
            nvm,
            Some(data),
            &format!("phases-{}", obp.name()),
        )?;
        let _files = Cleanup::new(cfg.files());
        let engine = Engine::open(&cfg).context("opening nvcache for the phases")?;
        let mut hooks = Hooks { plan, specs, progress, obp, epochs: Vec::new() };
        ycsb_driver::run_epochs(
            &engine,
            &setup.workload,
            &engine_args.driver_config(&setup, Some(data)),
            plan.epoch_ops,
            &|p, d, t| progress.update(p, d, t),
            &mut hooks,
        )
        .with_context(|| format!("phases with OBP {}", obp.name()))?;
        drop(engine);
        runs.push(PhaseRun { obp, epochs: hooks.epochs });
    }
    let summaries = summarise(plan, &runs);
    Ok(PhaseReport { plan: plan.clone(), runs, summaries })
}

fn summarise(plan: &PhasePlan, runs: &[PhaseRun]) -> Vec<PhaseSummary> {
    let mut out = Vec::new();
    for run in runs {
        for (i, w) in plan.workloads.iter().enumerate() {
            let mine: Vec<&PhaseEpoch> =
                run.epochs.iter().filter(|e| (e.epoch / plan.epochs_per_phase) as usize == i).collect();
            let Some(last) = mine.last() else { continue };
            let (lookups, hits) = mine.iter().fold((0u64, 0u64), |(l, h), e| (l + e.cache.lookups, h + e.cache.hits));
            out.push(PhaseSummary {
                phase: i,
                workload: w.clone(),
                obp: run.obp,
                ops: mine.iter().map(|e| e.ops).sum(),
                ops_per_sec: median(mine.iter().map(|e| e.ops_per_sec), Middle::Upper).expect("an epoch of the phase"),
                hit_ratio: hits as f64 / lookups.max(1) as f64,
                inserts: mine.iter().map(|e| e.cache.read_inserts + e.cache.write_inserts).sum(),
                bypass_obp: mine.iter().map(|e| e.cache.bypass_obp).sum(),
                obp_permille_end: last.cache.obp_permille,
                inserts_first_half: mine
                    .iter()
                    .take(mine.len().div_ceil(2))
                    .map(|e| e.cache.read_inserts + e.cache.write_inserts)
                    .sum(),
            });
        }
    }
    out
}

pub fn label(m: ObpMode) -> &'static str {
    match m {
        ObpMode::Off => "always-admit",
        ObpMode::Cumulative => "OBP cumulative",
        ObpMode::Window => "OBP window",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(w: &[&str], epochs: u32) -> PhasePlan {
        PhasePlan { workloads: w.iter().map(|s| s.to_string()).collect(), epochs_per_phase: epochs, epoch_ops: 100 }
    }

    #[test]
    fn bad_plans_are_named() {
        assert!(plan(&[], 3).validate().unwrap_err().to_string().contains("--phases"));
        assert!(plan(&["a"], 0).validate().unwrap_err().to_string().contains("--phase-epochs"));
        let mut p = plan(&["a", "c"], 2);
        p.epoch_ops = 0;
        assert!(p.validate().unwrap_err().to_string().contains("--phase-epoch-ops"));
        assert!(plan(&["a", "c"], 2).validate().is_ok());
    }

    #[test]
    fn summaries_split_the_epochs_by_phase() {
        let p = plan(&["a", "c"], 2);
        let e = |epoch: u32, inserts: u64, hits: u64| PhaseEpoch {
            epoch,
            workload: p.workloads[(epoch / 2) as usize].clone(),
            ops: 100,
            ops_per_sec: 10.0 * f64::from(epoch + 1),
            nvm_lines_per_op: 0.0,
            hit_ratio: hits as f64 / 50.0,
            inserts_per_kilo_lookup: 0.0,
            cache: NvmCacheStats {
                lookups: 50,
                hits,
                read_inserts: inserts,
                obp_permille: 100 + u64::from(epoch),
                ..NvmCacheStats::default()
            },
        };
        let runs =
            vec![PhaseRun { obp: ObpMode::Window, epochs: vec![e(0, 3, 10), e(1, 0, 10), e(2, 0, 20), e(3, 4, 30)] }];
        let s = summarise(&p, &runs);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].workload.as_str(), s[0].ops, s[0].inserts), ("a", 200, 3));
        assert_eq!(s[0].inserts_first_half, 3);
        assert_eq!((s[1].inserts, s[1].inserts_first_half, s[1].obp_permille_end), (4, 0, 103));
        assert!((s[1].hit_ratio - 0.5).abs() < 1e-12);
        assert_eq!(s[1].ops_per_sec, 40.0, "the upper median of two epochs");
    }
}
