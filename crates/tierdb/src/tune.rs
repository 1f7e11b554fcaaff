//! Online tuning of Spitfire's migration knobs (Arulraj, Pavlo, Malladi, §4).
//!
//! A tuner searches the four knobs ([`MigrationKnobs`]: Dr, Dw, Nr, Nw) for the policy
//! that maximises the paper's objective `Cost(T, W) = T + λ / W` (T throughput, W NVM
//! writes; [`Objective`]). It is pure logic: the caller runs the engine. The protocol
//! is one call of [`Tuner::propose`] (the knobs of the next epoch), one epoch of the
//! workload with those knobs set (`Policy::set_knobs`), one call of [`Tuner::observe`]
//! with what the epoch measured, and so on. A tuner never measures anything itself, so
//! the same code tunes the live engine (`tierdb tune`), a simulator or a synthetic
//! landscape ([`landscape`]).
//!
//! Invariants: `propose` and `observe` alternate (a second `propose` before `observe`
//! returns the same knobs; `observe` without a pending proposal is a bug and panics);
//! every proposed knob lies in `[KNOB_MIN, 1]`; the trajectory holds one record per
//! observed epoch, in order. Every random choice comes from a generator seeded by the
//! configuration, so a seed and a sequence of observations reproduce the trajectory
//! exactly.
//!
//! Three tuners ([`TUNER_NAMES`]): [`Anneal`], the paper's simulated annealing
//! (Algorithm 1); [`Coord`], a coordinate search over a log-spaced grid with a
//! shrinking step; and [`Funnel`], a coarse-to-fine search (a screen of widely
//! spaced policies, a confirmed shortlist, then the coordinate search from its winner),
//! which gets within reach of the best static policy in the fewest epochs
//! (docs/tuning.md compares them).

mod anneal;
mod coord;
mod funnel;
pub mod landscape;

use serde::Serialize;

use crate::limits::TUNE_WRITES_PER_OP_FLOOR;
use crate::policy::knobs::{KNOB_MIN, MigrationKnobs};

pub use anneal::{Anneal, AnnealConfig};
pub use coord::{Coord, CoordConfig};
pub use funnel::{Funnel, FunnelConfig};

/// Errors of the tuners' configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TuneError {
    /// A parameter out of its range, named with its value.
    #[error("tuner configuration: {what}")]
    Config {
        /// The parameter, its value and the range it must lie in.
        what: String,
    },
    /// A tuner name that is not one of [`TUNER_NAMES`].
    #[error("unknown tuner {name:?}; known: {known}")]
    UnknownTuner {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
}

/// The tuners selectable by name.
pub const TUNER_NAMES: &[&str] = &["anneal", "coord", "funnel"];

/// What one epoch measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Measurement {
    /// Operations the epoch ran.
    pub ops: u64,
    /// Operations per second (modelled in `model` mode).
    pub throughput_ops_per_sec: f64,
    /// Cache lines written to NVM during the epoch.
    pub nvm_line_writes: u64,
}

impl Measurement {
    /// NVM line writes per operation.
    pub fn writes_per_op(&self) -> f64 {
        self.nvm_line_writes as f64 / self.ops.max(1) as f64
    }
}

/// The paper's objective, maximised: `Cost(T, W) = T + λ / W`.
///
/// T is the throughput in operations per second. W is NVM line writes per operation
/// (per operation, not per epoch, so that λ keeps its meaning when the epoch length
/// changes), floored at [`TUNE_WRITES_PER_OP_FLOOR`] so that a policy that writes
/// nothing to NVM earns at most `λ / floor`, not infinity. λ = 0 (the default) tunes
/// for throughput alone; λ is in (ops/s) × (lines/op): at one line written per
/// operation the write term is worth λ operations per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Objective {
    /// λ, the weight of the write term, in (ops/s) × (lines/op); finite and `>= 0`
    /// (0: throughput alone).
    pub lambda: f64,
}

impl Objective {
    /// The objective with weight `lambda` on the write term.
    ///
    /// # Errors
    /// `Config` if λ is negative or not finite.
    pub fn new(lambda: f64) -> Result<Objective, TuneError> {
        if !lambda.is_finite() || lambda < 0.0 {
            return Err(TuneError::Config { what: format!("lambda {lambda} is not a finite number >= 0") });
        }
        Ok(Objective { lambda })
    }

    /// The cost of one measurement (larger is better).
    pub fn cost(&self, m: &Measurement) -> f64 {
        assert!(
            m.throughput_ops_per_sec.is_finite() && m.throughput_ops_per_sec >= 0.0,
            "throughput {} is not a finite number >= 0",
            m.throughput_ops_per_sec
        );
        if self.lambda == 0.0 {
            return m.throughput_ops_per_sec;
        }
        m.throughput_ops_per_sec + self.lambda / m.writes_per_op().max(TUNE_WRITES_PER_OP_FLOOR)
    }
}

/// What a tuner made of an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The starting configuration, measured first.
    Start,
    /// The candidate became the current configuration.
    Accepted,
    /// The candidate was turned down.
    Rejected,
    /// A candidate that beat the current configuration once, measured again before it
    /// is accepted or rejected.
    Confirming,
    /// The current configuration measured again to refresh its estimate.
    Remeasured,
    /// A point of an opening screen, measured once.
    Screened,
    /// A shortlisted candidate measured again before a winner is chosen.
    Shortlisted,
    /// The search is over; the epoch ran the tuner's final choice.
    Hold,
}

/// One epoch of a tuner's trajectory.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EpochRecord {
    /// From 0.
    pub epoch: u32,
    /// The knobs the epoch ran with.
    pub knobs: MigrationKnobs,
    /// Operations the epoch ran (a screen's epochs may be shorter than the others:
    /// [`Tuner::epoch_fraction`]).
    pub ops: u64,
    /// The epoch's measured throughput, operations per second.
    pub throughput_ops_per_sec: f64,
    /// Cache lines the epoch wrote to NVM.
    pub nvm_line_writes: u64,
    /// NVM line writes per operation ([`Measurement::writes_per_op`]).
    pub nvm_writes_per_op: f64,
    /// The epoch's [`Objective`] value (larger is better).
    pub cost: f64,
    /// What the tuner made of the epoch.
    pub action: Action,
    /// Annealing's temperature when the epoch was proposed.
    pub temperature: Option<f64>,
    /// The tuner's best after this epoch ([`Tuner::best`]).
    pub best: Best,
}

/// A tuner's best configuration so far and what it is believed to give.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Best {
    /// The best knobs found.
    pub knobs: MigrationKnobs,
    /// Their estimated [`Objective`] value: the mean over `measurements` epochs,
    /// weighted by each epoch's operations (annealing keeps its best single epoch).
    pub cost: f64,
    /// Their estimated throughput, operations per second (same mean).
    pub throughput_ops_per_sec: f64,
    /// Their estimated NVM line writes per operation (same mean).
    pub nvm_writes_per_op: f64,
    /// Epochs the estimate is the mean of.
    pub measurements: u32,
}

/// A search over the migration knobs, driven one epoch at a time.
pub trait Tuner: Send {
    /// The tuner's name, one of [`TUNER_NAMES`].
    fn name(&self) -> &'static str;

    /// The knobs of the next epoch. Calling it again before [`Tuner::observe`] returns
    /// the same knobs. Once [`Tuner::done`], the tuner's final choice.
    fn propose(&mut self) -> MigrationKnobs;

    /// How long the proposed epoch should run, as a fraction of a full epoch, in
    /// `(0, 1]` (the funnel screens with short epochs). Asked after [`Tuner::propose`].
    fn epoch_fraction(&self) -> f64 {
        1.0
    }

    /// What the epoch run with the proposed knobs measured.
    ///
    /// # Panics
    /// Without a pending proposal, or for a throughput that is not a finite number
    /// `>= 0` (bugs of the caller).
    fn observe(&mut self, m: Measurement) -> &EpochRecord;

    /// The best configuration so far (`None` before the first observation).
    fn best(&self) -> Option<Best>;

    /// The search has ended; further epochs hold the final choice.
    fn done(&self) -> bool;

    /// One record per observed epoch.
    fn trajectory(&self) -> &[EpochRecord];
}

/// The tuning time spent by the end of each record of `trajectory`, in full epochs of
/// `full_epoch_ops` operations (a screen's short epochs count for what they ran).
pub fn epochs_elapsed(trajectory: &[EpochRecord], full_epoch_ops: u64) -> Vec<f64> {
    let full = full_epoch_ops.max(1) as f64;
    let mut ops = 0u64;
    trajectory
        .iter()
        .map(|r| {
            ops = ops.saturating_add(r.ops);
            ops as f64 / full
        })
        .collect()
}

/// The parameters of the tuners; each reads its own (the funnel's refinement reads
/// `coord`'s).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TunerConfig {
    /// What the tuners maximise.
    pub objective: Objective,
    /// Seeds every random choice: a seed and the same observations give the same
    /// trajectory.
    pub seed: u64,
    /// The configuration measured first (the paper starts eager).
    pub start: MigrationKnobs,
    /// Simulated annealing's parameters.
    pub anneal: AnnealConfig,
    /// The coordinate search's parameters (also the funnel's refinement).
    pub coord: CoordConfig,
    /// The funnel's screen and shortlist parameters.
    pub funnel: FunnelConfig,
}

impl TunerConfig {
    /// The paper's parameters, throughput alone (λ = 0), starting eager.
    pub fn new(seed: u64) -> TunerConfig {
        TunerConfig {
            objective: Objective { lambda: 0.0 },
            seed,
            start: MigrationKnobs::EAGER,
            anneal: AnnealConfig::default(),
            coord: CoordConfig::default(),
            funnel: FunnelConfig::default(),
        }
    }
}

/// Builds a tuner by name ([`TUNER_NAMES`]).
///
/// # Errors
/// `UnknownTuner`; `Config` for parameters out of range or a start outside
/// `[KNOB_MIN, 1]`.
pub fn by_name(name: &str, cfg: &TunerConfig) -> Result<Box<dyn Tuner>, TuneError> {
    match name {
        "anneal" => Ok(Box::new(Anneal::new(cfg)?)),
        "coord" => Ok(Box::new(Coord::new(cfg)?)),
        "funnel" => Ok(Box::new(Funnel::new(cfg)?)),
        _ => Err(TuneError::UnknownTuner { name: name.into(), known: TUNER_NAMES.join(", ") }),
    }
}

/// The lowest knob a tuner sets, in decades (log10 of [`KNOB_MIN`]).
pub(crate) fn decades_min() -> f64 {
    KNOB_MIN.log10()
}

/// Knobs as log10 values, each clamped to `[log10 KNOB_MIN, 0]`.
pub(crate) fn to_decades(k: MigrationKnobs) -> [f64; 4] {
    k.to_array().map(|v| v.max(KNOB_MIN).log10().clamp(decades_min(), 0.0))
}

/// Knobs from log10 values. Values are rounded to 1e-9 decades so that a move there and
/// back lands on the same knob bit for bit.
pub(crate) fn from_decades(d: [f64; 4]) -> MigrationKnobs {
    MigrationKnobs::from_array(d.map(|x| {
        let x = (x.clamp(decades_min(), 0.0) * 1e9).round() / 1e9;
        10f64.powf(x).clamp(KNOB_MIN, 1.0)
    }))
}

/// Checks a start configuration.
pub(crate) fn check_start(k: MigrationKnobs) -> Result<MigrationKnobs, TuneError> {
    for (name, v) in ["dr", "dw", "nr", "nw"].into_iter().zip(k.to_array()) {
        if !(KNOB_MIN..=1.0).contains(&v) {
            return Err(TuneError::Config { what: format!("start knob {name} = {v} is not in [{KNOB_MIN}, 1]") });
        }
    }
    Ok(k)
}

/// A small seeded generator (SplitMix64): the engine crate carries no `rand`, and the
/// tuners need a sequence that never changes between releases of a dependency.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// The bookkeeping the tuners share: the pending proposal and the trajectory.
#[derive(Clone, Debug)]
pub(crate) struct Log {
    pub objective: Objective,
    pub pending: Option<MigrationKnobs>,
    pub trajectory: Vec<EpochRecord>,
}

impl Log {
    pub(crate) fn new(objective: Objective) -> Log {
        Log { objective, pending: None, trajectory: Vec::new() }
    }

    /// Takes the pending proposal for `m`; returns the knobs and the cost.
    pub(crate) fn take(&mut self, m: &Measurement) -> (MigrationKnobs, f64) {
        let knobs = self.pending.take().expect("Tuner::observe without a pending proposal");
        (knobs, self.objective.cost(m))
    }

    pub(crate) fn record(
        &mut self,
        knobs: MigrationKnobs,
        m: &Measurement,
        cost: f64,
        action: Action,
        temperature: Option<f64>,
        best: Best,
    ) -> &EpochRecord {
        let epoch = u32::try_from(self.trajectory.len()).expect("fewer than 2^32 epochs");
        self.trajectory.push(EpochRecord {
            epoch,
            knobs,
            ops: m.ops,
            throughput_ops_per_sec: m.throughput_ops_per_sec,
            nvm_line_writes: m.nvm_line_writes,
            nvm_writes_per_op: m.writes_per_op(),
            cost,
            action,
            temperature,
            best,
        });
        self.trajectory.last().expect("just pushed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_is_throughput_plus_lambda_over_writes() {
        let m = Measurement { ops: 1000, throughput_ops_per_sec: 5000.0, nvm_line_writes: 2000 };
        assert_eq!(Objective::new(0.0).unwrap().cost(&m), 5000.0);
        assert_eq!(Objective::new(100.0).unwrap().cost(&m), 5050.0);
        let none = Measurement { nvm_line_writes: 0, ..m };
        assert_eq!(Objective::new(1.0).unwrap().cost(&none), 5000.0 + 1.0 / TUNE_WRITES_PER_OP_FLOOR);
        assert!(Objective::new(-1.0).is_err());
        assert!(Objective::new(f64::NAN).is_err());
    }

    #[test]
    fn decades_round_trip_and_clamp() {
        let k = MigrationKnobs { dr: 0.01, dw: 1.0, nr: 0.2, nw: 0.0 };
        let d = to_decades(k);
        assert_eq!(d[0], -2.0);
        assert_eq!(d[1], 0.0);
        assert_eq!(d[3], decades_min());
        let back = from_decades(d);
        assert!((back.nr - 0.2).abs() < 1e-9, "{back}");
        assert_eq!(back.nw, KNOB_MIN);
        assert_eq!(from_decades([-0.5, -1.0, 0.5, -9.0]).to_array()[2..], [1.0, KNOB_MIN]);
    }

    #[test]
    fn splitmix_is_seeded_and_uniform_enough() {
        let (mut a, mut b, mut c) = (SplitMix::new(7), SplitMix::new(7), SplitMix::new(8));
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..100).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(xs, (0..100).map(|_| c.next_u64()).collect::<Vec<_>>());
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[a.below(4) as usize] += 1;
        }
        assert!(counts.iter().all(|&n| (9_000..11_000).contains(&n)), "{counts:?}");
        let mean = (0..10_000).map(|_| a.next_f64()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn unknown_tuner_is_named() {
        let e = by_name("grid", &TunerConfig::new(1)).err().unwrap().to_string();
        assert!(e.contains("grid") && e.contains("anneal"), "{e}");
    }
}
