//! Spitfire's experiments behind `tierdb spitfire`: the D and N sweeps (Figures 5–7),
//! Table 3's policies (Figures 11–12) and the tuners against the best static policy
//! (§6.6), each a function of a [`Ctx`] that returns its rows; the command checks its
//! arguments, renders the tables and draws the plots.
//!
//! Invariants: every static run is a fresh engine whose knobs are set after the load;
//! a tuner's choice is judged by a grid measurement, never by one lucky epoch.
//! Concurrency: runs are sequential; each engine's threads are joined before the next.

use anyhow::{Context, Result};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::policy::KNOB_PRESETS;
use tierdb::policy::MigrationKnobs;
use tierdb::tune::{self as tuning, Best, EpochRecord};

use crate::drivers::ycsb::{self as ycsb_driver, EpochHooks, EpochRun};
use crate::experiments::tuning::{EpochDetail, Session, TunerArgs, fmt_knobs, open_spitfire, set_knobs, workload_name};
use crate::harness::{EngineArgs, Middle, Progress, Setup, median};

/// The knob values of the sweep (Figures 5–7 go from 1 to 0).
pub const SWEEP_VALUES: [f64; 4] = [1.0, 0.1, 0.01, 0.001];
/// "Within 10% of the best static policy".
pub const WITHIN: f64 = 0.9;

/// What the parts of one invocation share: the engine options, the sizes, the epochs
/// and the tuners (the command's arguments, checked).
pub struct Plan {
    pub engine: EngineArgs,
    pub dram: ByteSize,
    pub nvm: ByteSize,
    pub data: ByteSize,
    pub epoch_ops: u64,
    pub settle_epochs: u32,
    pub measure_epochs: u32,
    pub grid: Vec<f64>,
    pub grid_settle_epochs: u32,
    pub grid_measure_epochs: u32,
    pub tuners: Vec<String>,
    pub tuner_seeds: u32,
    pub epochs_max: u32,
    pub tuner_args: TunerArgs,
    /// No progress lines (the tuners' comparison prints one per judged run).
    pub quiet: bool,
}

/// What a static run of one policy measured.
#[derive(Clone, Debug, Serialize)]
pub struct StaticPoint {
    pub knobs: MigrationKnobs,
    /// The median measured epoch's throughput (modelled in `model` mode).
    pub ops_per_sec: f64,
    /// NVM lines written per operation over the measured epochs.
    pub nvm_writes_per_op: f64,
    /// SSD page reads per operation over the measured epochs.
    pub ssd_reads_per_op: f64,
    pub epochs: Vec<EpochDetail>,
}

/// Runs segments of epochs on one engine: each sets its knobs, runs `settle`
/// unmeasured epochs and `measure` measured ones.
struct Schedule<'a> {
    engine: &'a tierdb::arch::Engine,
    /// (knobs, settle, measure)
    segments: Vec<(MigrationKnobs, u32, u32)>,
    progress: &'a Progress,
    label: String,
    /// Where in `segments` the run is, and the epoch its segment began at.
    at: usize,
    begun: u32,
    runs: Vec<Vec<EpochRun>>,
}

impl<'a> Schedule<'a> {
    fn new(
        engine: &'a tierdb::arch::Engine,
        segments: Vec<(MigrationKnobs, u32, u32)>,
        progress: &'a Progress,
        label: String,
    ) -> Self {
        let n = segments.len();
        Schedule { engine, segments, progress, label, at: 0, begun: 0, runs: vec![Vec::new(); n] }
    }

    /// One point per segment.
    fn points(self) -> Vec<StaticPoint> {
        self.segments.iter().zip(self.runs).map(|(&(k, _, _), runs)| StaticPoint::of(k, &runs)).collect()
    }
}

impl EpochHooks for Schedule<'_> {
    fn before(&mut self, epoch: u32) -> Result<bool> {
        let Some(&(_, settle, measure)) = self.segments.get(self.at) else { return Ok(false) };
        if epoch - self.begun == settle + measure {
            self.at += 1;
            self.begun = epoch;
        }
        let Some(&(knobs, _, _)) = self.segments.get(self.at) else { return Ok(false) };
        if epoch == self.begun {
            set_knobs(self.engine, knobs)?;
            self.progress.set_prefix(&format!(
                "{} {}/{} {}",
                self.label,
                self.at + 1,
                self.segments.len(),
                fmt_knobs(knobs)
            ));
        }
        Ok(true)
    }

    fn after(&mut self, epoch: u32, run: &EpochRun) -> Result<()> {
        let (_, settle, _) = self.segments[self.at];
        if epoch - self.begun >= settle {
            self.runs[self.at].push(run.clone());
        }
        Ok(())
    }
}

impl StaticPoint {
    /// The median epoch's throughput and the writes and reads over all of `runs`.
    fn of(knobs: MigrationKnobs, runs: &[EpochRun]) -> StaticPoint {
        assert!(!runs.is_empty(), "a static point has measured epochs");
        let ops = runs.iter().map(|r| r.ops).sum::<u64>().max(1) as f64;
        StaticPoint {
            knobs,
            ops_per_sec: median(runs.iter().map(EpochRun::ops_per_sec), Middle::Upper).expect("measured epochs"),
            nvm_writes_per_op: runs.iter().map(EpochRun::nvm_line_writes).sum::<u64>() as f64 / ops,
            ssd_reads_per_op: runs.iter().map(|r| r.tiers.buffer.ssd_reads).sum::<u64>() as f64 / ops,
            epochs: runs.iter().map(EpochDetail::of).collect(),
        }
    }
}

/// One invocation's plan, the architecture and the progress bar, shared by the parts.
pub struct Ctx<'a> {
    pub args: &'a Plan,
    pub arch: Architecture,
    pub progress: &'a Progress,
}

impl Ctx<'_> {
    /// Runs `segments` on a fresh engine loaded with `setup`'s workload.
    fn schedule(
        &self,
        setup: &Setup,
        segments: Vec<(MigrationKnobs, u32, u32)>,
        tag: &str,
    ) -> Result<Vec<StaticPoint>> {
        let a = self.args;
        let opened = open_spitfire(&a.engine, setup, self.arch, (a.dram, a.nvm, a.data), tag)?;
        let mut hooks =
            Schedule::new(&opened.engine, segments, self.progress, format!("{} {tag}", workload_name(&setup.workload)));
        ycsb_driver::run_epochs(
            &opened.engine,
            &setup.workload,
            &a.engine.driver_config(setup, Some(a.data)),
            a.epoch_ops,
            &|p, d, t| self.progress.update(p, d, t),
            &mut hooks,
        )?;
        Ok(hooks.points())
    }

    /// A static run of `knobs`: a fresh engine, `--settle-epochs`, `--measure-epochs`.
    fn static_run(&self, setup: &Setup, knobs: MigrationKnobs, tag: &str) -> Result<StaticPoint> {
        let a = self.args;
        let mut p = self
            .schedule(setup, vec![(knobs, a.settle_epochs, a.measure_epochs)], tag)
            .with_context(|| format!("static run of {}", fmt_knobs(knobs)))?;
        Ok(p.remove(0))
    }
}

// ---- part (a): the D and N sweeps ----

#[derive(Serialize)]
pub struct SweepRow {
    pub workload: String,
    /// "D" (Dr = Dw, N = 1) or "N" (Nr = Nw, D = 1).
    pub knob: &'static str,
    pub value: f64,
    pub point: StaticPoint,
}

pub fn sweep(ctx: &Ctx<'_>, setups: &[Setup]) -> Result<Vec<SweepRow>> {
    let mut rows = Vec::new();
    for s in setups {
        let eager = ctx.static_run(s, MigrationKnobs::EAGER, "sweep")?;
        for knob in ["D", "N"] {
            for v in SWEEP_VALUES {
                let point = if v == 1.0 {
                    eager.clone()
                } else {
                    let k = if knob == "D" {
                        MigrationKnobs { dr: v, dw: v, ..MigrationKnobs::EAGER }
                    } else {
                        MigrationKnobs { nr: v, nw: v, ..MigrationKnobs::EAGER }
                    };
                    ctx.static_run(s, k, "sweep")?
                };
                rows.push(SweepRow { workload: workload_name(&s.workload), knob, value: v, point });
            }
        }
    }
    Ok(rows)
}

// ---- part (b): Table 3's policies ----

#[derive(Serialize)]
pub struct PolicyRow {
    pub workload: String,
    pub policy: String,
    pub point: StaticPoint,
}

pub fn policies(ctx: &Ctx<'_>, setups: &[Setup]) -> Result<Vec<PolicyRow>> {
    let mut rows = Vec::new();
    for s in setups {
        for (name, k) in KNOB_PRESETS {
            let point = ctx.static_run(s, *k, "policy")?;
            rows.push(PolicyRow { workload: workload_name(&s.workload), policy: name.to_ascii_uppercase(), point });
        }
    }
    Ok(rows)
}

// ---- part (c): the tuners against the best static policy ----

#[derive(Serialize)]
pub struct TunerRun {
    pub tuner: String,
    /// The tuner's seed and the workload's (run i of a tuner: `--seed` + i).
    pub seed: u64,
    pub epochs: u32,
    pub done: bool,
    /// The tuning time, in full epochs of `--epoch-ops` (a short screen epoch counts for
    /// what it ran), by the end of the first epoch after which the tuner's chosen
    /// policy is one whose judged throughput ([`TunerComparison::judged`]) is at 90% or
    /// more of the grid's best; `None` if no chosen policy of the run got there.
    pub epochs_to_within_10pct: Option<f64>,
    /// The same by the tuner's own estimate of its choice (a lucky epoch counts).
    pub epochs_to_within_10pct_own_estimate: Option<f64>,
    /// The tuning time of the whole run, in full epochs.
    pub epochs_elapsed: f64,
    pub best: Option<Best>,
    /// The judged throughput of the final choice / the grid's best.
    pub final_vs_best: f64,
    pub trajectory: Vec<EpochRecord>,
    pub details: Vec<EpochDetail>,
}

/// One tuner over its seeds.
#[derive(Serialize)]
pub struct TunerSummary {
    pub tuner: String,
    pub runs: u32,
    /// Runs whose choice got within 10%.
    pub reached: u32,
    /// The median over the runs of the tuning time to within 10%, in full epochs (a run
    /// that never got there counts as infinitely long); `None` if half or more never
    /// got there.
    pub median_epochs_to_within_10pct: Option<f64>,
    pub median_final_vs_best: f64,
}

/// A policy's judged throughput: measured like a grid point.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    pub knobs: MigrationKnobs,
    pub ops_per_sec: f64,
}

#[derive(Serialize)]
pub struct TunerComparison {
    pub workload: String,
    /// The grid, on one live engine.
    pub grid: Vec<StaticPoint>,
    /// The grid's best point, measured there: the target's base.
    pub grid_best: MigrationKnobs,
    pub grid_best_ops_per_sec: f64,
    /// The grid's best policy, run again on a fresh engine.
    pub best_static: StaticPoint,
    pub eager: StaticPoint,
    /// The policies the tuners chose that are not on the grid, measured like grid
    /// points (one live engine, `--grid-settle-epochs` then the median of
    /// `--grid-measure-epochs`); grid points are judged by their grid measurement.
    pub judged: Vec<Judged>,
    pub runs: Vec<TunerRun>,
    pub summaries: Vec<TunerSummary>,
}

pub fn grid_points(values: &[f64]) -> Vec<MigrationKnobs> {
    let mut out = Vec::new();
    for &dr in values {
        for &dw in values {
            for &nr in values {
                for &nw in values {
                    out.push(MigrationKnobs { dr, dw, nr, nw });
                }
            }
        }
    }
    out
}

/// The key of a policy in the judged table: the knobs bit for bit.
fn knob_key(k: MigrationKnobs) -> [u64; 4] {
    k.to_array().map(f64::to_bits)
}

/// The policies a run chose, each with the tuning time (full epochs of `epoch_ops`) by
/// the end of the epoch it was first chosen in, in order.
fn choices(trajectory: &[EpochRecord], epoch_ops: u64) -> Vec<(f64, MigrationKnobs)> {
    let mut out: Vec<(f64, MigrationKnobs)> = Vec::new();
    for (r, t) in trajectory.iter().zip(tuning::epochs_elapsed(trajectory, epoch_ops)) {
        if out.last().is_none_or(|&(_, k)| k != r.best.knobs) {
            out.push((t, r.best.knobs));
        }
    }
    out
}

/// Chosen policies judged per round and run: a run's choices are judged in order only
/// until one is within 10%, in rounds of one engine each.
const JUDGE_PER_RUN_AND_ROUND: usize = 4;

/// The median of `v`, `None` counting as infinitely large.
fn typical_epochs(v: &[Option<f64>]) -> Option<f64> {
    median(v.iter().map(|e| e.unwrap_or(f64::INFINITY)), Middle::Lower).filter(|e| e.is_finite())
}

/// Tuning time in full epochs, as the tables print it.
pub fn fmt_epochs(e: f64) -> String {
    if e.fract() == 0.0 { format!("{e:.0}") } else { format!("{e:.2}") }
}

/// The lower median of `v`, NaN if empty.
fn lower_mid(v: &[f64]) -> f64 {
    median(v.iter().copied(), Middle::Lower).unwrap_or(f64::NAN)
}

/// One tuner's run on a fresh engine.
fn tuner_run(ctx: &Ctx<'_>, setup: &Setup, name: &str) -> Result<(Box<dyn tuning::Tuner>, Vec<EpochDetail>)> {
    let a = ctx.args;
    let cfg = a.tuner_args.config(setup.seed)?;
    let tuner = tuning::by_name(name, &cfg)?;
    let opened = open_spitfire(&a.engine, setup, ctx.arch, (a.dram, a.nvm, a.data), "tuner")?;
    let mut session =
        Session::new(tuner, &opened.engine, (cfg.start, a.settle_epochs), a.epochs_max, false, ctx.progress, false);
    ycsb_driver::run_epochs(
        &opened.engine,
        &setup.workload,
        &a.engine.driver_config(setup, Some(a.data)),
        a.epoch_ops,
        &|p, d, t| ctx.progress.update(p, d, t),
        &mut session,
    )
    .with_context(|| format!("tuning with {name}, seed {}", setup.seed))?;
    Ok(session.finish())
}

pub fn tuners(ctx: &Ctx<'_>, setups: &[Setup]) -> Result<Vec<TunerComparison>> {
    let a = ctx.args;
    let mut out = Vec::new();
    for s in setups {
        // 1. The grid on one live engine: eager to leave the load's state, then each point.
        let points = grid_points(&a.grid);
        let mut segments = vec![(MigrationKnobs::EAGER, a.settle_epochs, 1)];
        segments.extend(points.iter().map(|&k| (k, a.grid_settle_epochs, a.grid_measure_epochs)));
        let grid = ctx.schedule(s, segments, "grid").context("the static grid")?.split_off(1);
        let grid_best = grid.iter().max_by(|x, y| x.ops_per_sec.total_cmp(&y.ops_per_sec)).context("a grid point")?;
        let target = WITHIN * grid_best.ops_per_sec;
        // 2. The grid's winner and eager again, as static runs on fresh engines.
        let best_static = ctx.static_run(s, grid_best.knobs, "best")?;
        let eager = ctx.static_run(s, MigrationKnobs::EAGER, "eager")?;
        // 3. Each tuner with each seed, on a fresh engine each.
        let mut tuned = Vec::new();
        for name in &a.tuners {
            for i in 0..a.tuner_seeds {
                let setup = Setup { seed: s.seed.wrapping_add(u64::from(i)), ..s.clone() };
                let (t, details) = tuner_run(ctx, &setup, name)?;
                tuned.push((name.clone(), setup.seed, t, details));
            }
        }
        // 4. Judge the chosen policies: grid points by the grid, the others measured the
        //    grid's way, each run's in order until one is within 10%, plus every final.
        let mut judged: std::collections::HashMap<[u64; 4], f64> =
            grid.iter().map(|p| (knob_key(p.knobs), p.ops_per_sec)).collect();
        let chosen: Vec<Vec<(f64, MigrationKnobs)>> =
            tuned.iter().map(|(_, _, t, _)| choices(t.trajectory(), a.epoch_ops)).collect();
        let finals: Vec<MigrationKnobs> =
            tuned.iter().map(|(_, _, t, _)| t.best().map_or(MigrationKnobs::EAGER, |b| b.knobs)).collect();
        let mut extra = Vec::new();
        let mut round = 0;
        loop {
            let mut need: Vec<MigrationKnobs> = Vec::new();
            let want = |k: MigrationKnobs, need: &mut Vec<MigrationKnobs>| {
                if !judged.contains_key(&knob_key(k)) && !need.contains(&k) {
                    need.push(k);
                }
            };
            if round == 0 {
                finals.iter().for_each(|&k| want(k, &mut need));
            }
            for c in &chosen {
                let mut asked = 0;
                for &(_, k) in c {
                    match judged.get(&knob_key(k)) {
                        Some(&v) if v >= target => break,
                        Some(_) => {}
                        None if asked < JUDGE_PER_RUN_AND_ROUND => {
                            want(k, &mut need);
                            asked += 1;
                        }
                        None => break,
                    }
                }
            }
            if need.is_empty() {
                break;
            }
            let mut segments = vec![(MigrationKnobs::EAGER, a.settle_epochs, 1)];
            segments.extend(need.iter().map(|&k| (k, a.grid_settle_epochs, a.grid_measure_epochs)));
            let measured = ctx.schedule(s, segments, "judge").context("judging the tuners' choices")?;
            for p in measured.into_iter().skip(1) {
                judged.insert(knob_key(p.knobs), p.ops_per_sec);
                extra.push(Judged { knobs: p.knobs, ops_per_sec: p.ops_per_sec });
            }
            round += 1;
        }
        // 5. The runs and their medians.
        let mut runs = Vec::new();
        for (((name, seed, t, details), c), final_knobs) in tuned.into_iter().zip(&chosen).zip(&finals) {
            let reach = c
                .iter()
                .take_while(|&&(_, k)| judged.contains_key(&knob_key(k)))
                .find(|&&(_, k)| judged[&knob_key(k)] >= target)
                .map(|&(e, _)| e);
            let elapsed = tuning::epochs_elapsed(t.trajectory(), a.epoch_ops);
            let own = t.trajectory().iter().position(|r| r.best.throughput_ops_per_sec >= target).map(|i| elapsed[i]);
            let final_vs_best = judged[&knob_key(*final_knobs)] / grid_best.ops_per_sec;
            if !a.quiet {
                ctx.progress.println(&format!(
                    "{} {name} seed {seed}: {} epochs, within 10% after {} (own estimate {}), final {} at {:.0}% of the grid's best",
                    workload_name(&s.workload),
                    t.trajectory().len(),
                    reach.map_or("—".into(), fmt_epochs),
                    own.map_or("—".into(), fmt_epochs),
                    fmt_knobs(*final_knobs),
                    100.0 * final_vs_best
                ));
            }
            runs.push(TunerRun {
                tuner: name,
                seed,
                epochs: t.trajectory().len() as u32,
                done: t.done(),
                epochs_to_within_10pct: reach,
                epochs_to_within_10pct_own_estimate: own,
                epochs_elapsed: elapsed.last().copied().unwrap_or(0.0),
                best: t.best(),
                final_vs_best,
                trajectory: t.trajectory().to_vec(),
                details,
            });
        }
        let summaries = a
            .tuners
            .iter()
            .map(|name| {
                let mine: Vec<&TunerRun> = runs.iter().filter(|r| r.tuner == *name).collect();
                let reach: Vec<Option<f64>> = mine.iter().map(|r| r.epochs_to_within_10pct).collect();
                TunerSummary {
                    tuner: name.clone(),
                    runs: mine.len() as u32,
                    reached: reach.iter().flatten().count() as u32,
                    median_epochs_to_within_10pct: typical_epochs(&reach),
                    median_final_vs_best: lower_mid(&mine.iter().map(|r| r.final_vs_best).collect::<Vec<_>>()),
                }
            })
            .collect();
        out.push(TunerComparison {
            workload: workload_name(&s.workload),
            grid_best: grid_best.knobs,
            grid_best_ops_per_sec: grid_best.ops_per_sec,
            grid,
            best_static,
            eager,
            judged: extra,
            runs,
            summaries,
        });
    }
    Ok(out)
}

// ---- the command ----

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_has_every_combination() {
        let g = grid_points(&[1.0, 0.1]);
        assert_eq!(g.len(), 16);
        assert!(g.contains(&MigrationKnobs::EAGER));
        assert!(g.contains(&MigrationKnobs { dr: 0.1, dw: 1.0, nr: 0.1, nw: 1.0 }));
    }
}
