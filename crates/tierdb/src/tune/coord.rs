//! Coordinate search over a log-spaced grid with a shrinking step: a tuner that needs
//! far fewer epochs than annealing.
//!
//! The knobs live on a log scale in `[KNOB_MIN, 1]`. Starting from the start
//! configuration (the incumbent) with a step of one decade — the grid 1, 0.1, 0.01,
//! 0.001 of the paper's sweeps — the search visits the knobs in turn (Dr, Dw, Nr, Nw):
//!
//! 1. **Probe**: move the knob one step down (lazier); if that does not win, one step
//!    up. A move the bounds cancel is skipped, and so is the move straight back to where
//!    the incumbent came from.
//! 2. **Decide** by a sequential test against the incumbent: the difference of the
//!    candidate's mean cost from the incumbent's, in standard errors (from the assumed
//!    relative noise of one epoch, `noise`, and the epochs each mean holds). Two
//!    standard errors worse: rejected at once. Two better: accepted, but only after a
//!    second epoch (every win is confirmed). In between: measured again, up to
//!    `measurements_max` epochs, then accepted if its mean is better at all. An
//!    accepted move is repeated in the same direction on the same knob (a line
//!    search: the landscapes of §6.5 are mostly monotone in a knob until a turn).
//! 3. **Level end**: once every knob in a row has failed to improve the incumbent, the
//!    incumbent is **re-measured** (its estimate is the mean of all its epochs), and
//!    the step halves. After the level at `step_decades_min` the search is done and
//!    holds the incumbent.
//!
//! The noise is the configured `noise` until configurations have been measured more
//! than once; then the pooled relative spread of their epochs, if that is larger.
//!
//! Noise: a single epoch's throughput varies (the machine, the buffer's state after a
//! policy change). Clear differences cost one epoch (a loss) or two (a win); only
//! differences within the noise cost more. The incumbent's estimate is a mean that is
//! refreshed once per level, so one lucky epoch does not hold the search back. Flat
//! knobs (Dw under a read-only workload) cost `measurements_max` epochs per probe and
//! may drift, at no cost in throughput.
//!
//! The best configuration reported is the incumbent with its mean.

use serde::Serialize;

use super::{
    Action, Best, EpochRecord, Log, Measurement, TuneError, Tuner, TunerConfig, check_start, decades_min, from_decades,
    to_decades,
};
use crate::limits::COORD_MEASUREMENTS_MAX;
use crate::policy::knobs::MigrationKnobs;

/// The coordinate search's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoordConfig {
    /// First step, in decades (1: the grid 1, 0.1, 0.01, 0.001).
    pub step_decades: f64,
    /// Last step; the search ends after the level at this step.
    pub step_decades_min: f64,
    /// The assumed relative standard deviation of one epoch's cost.
    pub noise: f64,
    /// Epochs a candidate is measured at most before it is decided.
    pub measurements_max: u32,
}

impl Default for CoordConfig {
    fn default() -> CoordConfig {
        CoordConfig { step_decades: 1.0, step_decades_min: 0.5, noise: 0.02, measurements_max: 3 }
    }
}

impl CoordConfig {
    /// Checks the steps, the noise and the measurements per candidate.
    ///
    /// # Errors
    /// `Config` naming the parameter out of range.
    pub fn validate(&self) -> Result<(), TuneError> {
        let span = -decades_min();
        if !(self.step_decades > 0.0 && self.step_decades <= span) {
            return Err(TuneError::Config {
                what: format!("coord step {} decades is not in (0, {span}]", self.step_decades),
            });
        }
        if !(self.step_decades_min > 0.0 && self.step_decades_min <= self.step_decades) {
            return Err(TuneError::Config {
                what: format!(
                    "coord last step {} decades is not in (0, first step {}]",
                    self.step_decades_min, self.step_decades
                ),
            });
        }
        if !(0.0..1.0).contains(&self.noise) {
            return Err(TuneError::Config { what: format!("coord noise {} is not in [0, 1)", self.noise) });
        }
        if !(2..=COORD_MEASUREMENTS_MAX).contains(&self.measurements_max) {
            return Err(TuneError::Config {
                what: format!(
                    "coord measurements per candidate {} is not in 2..={COORD_MEASUREMENTS_MAX}",
                    self.measurements_max
                ),
            });
        }
        Ok(())
    }
}

/// The running mean of a configuration's epochs, each weighted by the operations it
/// ran (epochs of equal length weigh alike; a screen's short epoch counts less).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Estimate {
    pub(crate) knobs: MigrationKnobs,
    /// Σ w, Σ w·cost, Σ w·cost², Σ w·throughput, Σ w·writes per op; w = operations.
    weight_sum: f64,
    cost_sum: f64,
    cost_sq_sum: f64,
    throughput_sum: f64,
    writes_per_op_sum: f64,
    pub(crate) n: u32,
}

impl Estimate {
    pub(crate) fn new(knobs: MigrationKnobs) -> Estimate {
        Estimate {
            knobs,
            weight_sum: 0.0,
            cost_sum: 0.0,
            cost_sq_sum: 0.0,
            throughput_sum: 0.0,
            writes_per_op_sum: 0.0,
            n: 0,
        }
    }

    pub(crate) fn add(&mut self, cost: f64, m: &Measurement) {
        let w = m.ops.max(1) as f64;
        self.weight_sum += w;
        self.cost_sum += w * cost;
        self.cost_sq_sum += w * cost * cost;
        self.throughput_sum += w * m.throughput_ops_per_sec;
        self.writes_per_op_sum += w * m.writes_per_op();
        self.n += 1;
    }

    pub(crate) fn cost(&self) -> f64 {
        debug_assert!(self.n > 0);
        self.cost_sum / self.weight_sum
    }

    /// Σ (cost − mean)² / mean² and its degrees of freedom: the spread of this
    /// configuration's epochs relative to its mean (for epochs of unequal length, the
    /// weighted sum scaled to epochs of the mean length).
    pub(crate) fn relative_ss(&self) -> (f64, u32) {
        let mean = self.cost();
        if self.n < 2 || mean <= 0.0 {
            return (0.0, 0);
        }
        let weighted = (self.cost_sq_sum - self.weight_sum * mean * mean).max(0.0);
        let per_epoch = weighted * f64::from(self.n) / self.weight_sum;
        (per_epoch / (mean * mean), self.n - 1)
    }

    pub(crate) fn best(&self) -> Best {
        Best {
            knobs: self.knobs,
            cost: self.cost(),
            throughput_ops_per_sec: self.throughput_sum / self.weight_sum,
            nvm_writes_per_op: self.writes_per_op_sum / self.weight_sum,
            measurements: self.n,
        }
    }
}

/// A difference of this many standard errors decides at once (a win still needs two
/// epochs).
const Z_CLEAR: f64 = 2.0;
/// After `measurements_max` epochs, a candidate this many standard errors better wins.
const Z_LAST: f64 = 0.0;

/// Degrees of freedom before the measured noise replaces the configured one.
const NOISE_DOF_MIN: u32 = 3;

/// What the sequential test says of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Accept,
    Reject,
    Again,
}

/// Where the search is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// The start is to be measured.
    Start,
    /// Probing moves of the cursor's knob.
    Probe,
    /// A winning probe measured once, to be measured again.
    Confirm(Estimate),
    /// The incumbent to be re-measured at the end of a level.
    Refresh,
    Done,
}

/// A probe: one knob, one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Move {
    knob: usize,
    up: bool,
}

/// Coordinate search as a [`Tuner`].
#[derive(Clone, Debug)]
pub struct Coord {
    cfg: CoordConfig,
    start: MigrationKnobs,
    log: Log,
    phase: Phase,
    incumbent: Option<Estimate>,
    step: f64,
    /// The next probe to consider.
    cursor: Move,
    /// The move that made the incumbent, while its knob is still being searched.
    came_by: Option<Move>,
    /// Knobs in a row that found nothing better.
    failed_in_row: usize,
    /// The probe pending, if the pending proposal is one.
    probing: Option<Move>,
    /// Σ relative squared deviations and degrees of freedom of retired configurations.
    noise_ss: f64,
    noise_dof: u32,
}

impl Coord {
    /// A coordinate search from `cfg.start` with `cfg.coord`'s parameters; it draws no
    /// random numbers.
    ///
    /// # Errors
    /// `Config` for parameters out of range or a start outside `[KNOB_MIN, 1]`.
    pub fn new(cfg: &TunerConfig) -> Result<Coord, TuneError> {
        cfg.coord.validate()?;
        Ok(Coord {
            cfg: cfg.coord.clone(),
            start: check_start(cfg.start)?,
            log: Log::new(cfg.objective),
            phase: Phase::Start,
            incumbent: None,
            step: cfg.coord.step_decades,
            cursor: Move { knob: 0, up: false },
            came_by: None,
            failed_in_row: 0,
            probing: None,
            noise_ss: 0.0,
            noise_dof: 0,
        })
    }

    /// A search whose incumbent, `incumbent`, was already measured (its epochs are in
    /// the estimate), with the pooled relative spread `noise_ss` over `noise_dof`
    /// degrees of freedom of configurations measured before: the refinement stage of
    /// the funnel search (`tune/funnel.rs`). Its first proposal is a probe.
    ///
    /// # Errors
    /// As [`Coord::new`].
    pub(crate) fn from_incumbent(
        cfg: &TunerConfig,
        incumbent: Estimate,
        (noise_ss, noise_dof): (f64, u32),
    ) -> Result<Coord, TuneError> {
        assert!(incumbent.n > 0, "an incumbent with measurements");
        let mut c = Coord::new(&TunerConfig { start: incumbent.knobs, ..cfg.clone() })?;
        c.incumbent = Some(incumbent);
        c.phase = Phase::Probe;
        c.noise_ss = noise_ss;
        c.noise_dof = noise_dof;
        Ok(c)
    }

    /// The current step in decades.
    pub fn step_decades(&self) -> f64 {
        self.step
    }

    fn incumbent(&self) -> Estimate {
        self.incumbent.expect("the start was measured")
    }

    /// The incumbent with `mv` applied, or `None` if the bounds cancel it.
    fn moved(&self, mv: Move) -> Option<MigrationKnobs> {
        let inc = self.incumbent().knobs;
        let mut d = to_decades(inc);
        d[mv.knob] += if mv.up { self.step } else { -self.step };
        let k = from_decades(d);
        (k != inc).then_some(k)
    }

    /// Moves the cursor past a failed or skipped probe: down, then up, then the next
    /// knob.
    fn advance(&mut self) {
        if self.cursor.up {
            self.cursor = Move { knob: (self.cursor.knob + 1) % 4, up: false };
            self.failed_in_row += 1;
            self.came_by = None;
        } else {
            self.cursor.up = true;
        }
    }

    /// The next probe, or `None` when every knob has failed in a row.
    fn next_probe(&mut self) -> Option<(Move, MigrationKnobs)> {
        while self.failed_in_row < 4 {
            let mv = self.cursor;
            let back = self.came_by.is_some_and(|c| c.knob == mv.knob && c.up != mv.up);
            match self.moved(mv) {
                Some(k) if !back => return Some((mv, k)),
                _ => self.advance(),
            }
        }
        None
    }

    /// The relative noise of one epoch: the pooled spread of every configuration
    /// measured more than once (this one and the incumbent included), never below the
    /// configured `noise`.
    fn noise(&self, cand: &Estimate) -> f64 {
        let (mut ss, mut dof) = (self.noise_ss, self.noise_dof);
        for e in [cand, &self.incumbent()] {
            let (s, d) = e.relative_ss();
            ss += s;
            dof += d;
        }
        if dof >= NOISE_DOF_MIN { self.cfg.noise.max((ss / f64::from(dof)).sqrt()) } else { self.cfg.noise }
    }

    /// Adds a configuration that is no longer measured to the pooled noise.
    fn retire(&mut self, e: &Estimate) {
        let (s, d) = e.relative_ss();
        self.noise_ss += s;
        self.noise_dof += d;
    }

    /// The sequential test of a candidate against the incumbent: their difference in
    /// standard errors, from the assumed noise of one epoch and the epochs each mean
    /// holds.
    fn judge(&self, cand: &Estimate) -> Verdict {
        let inc = self.incumbent();
        let ratio = if inc.cost() > 0.0 { cand.cost() / inc.cost() - 1.0 } else { f64::INFINITY };
        let se = self.noise(cand) * (1.0 / f64::from(cand.n) + 1.0 / f64::from(inc.n)).sqrt();
        let z = if se > 0.0 { ratio / se } else { ratio * f64::INFINITY };
        if z <= -Z_CLEAR {
            Verdict::Reject
        } else if z >= Z_CLEAR && cand.n >= 2 {
            Verdict::Accept
        } else if cand.n < self.cfg.measurements_max {
            Verdict::Again
        } else if z > Z_LAST {
            Verdict::Accept
        } else {
            Verdict::Reject
        }
    }
}

impl Tuner for Coord {
    fn name(&self) -> &'static str {
        "coord"
    }

    fn propose(&mut self) -> MigrationKnobs {
        if let Some(k) = self.log.pending {
            return k;
        }
        let knobs = match self.phase {
            Phase::Start => self.start,
            Phase::Probe => match self.next_probe() {
                Some((mv, k)) => {
                    self.probing = Some(mv);
                    k
                }
                None => {
                    self.phase = Phase::Refresh;
                    self.incumbent().knobs
                }
            },
            Phase::Confirm(c) => c.knobs,
            Phase::Refresh | Phase::Done => self.incumbent().knobs,
        };
        self.log.pending = Some(knobs);
        knobs
    }

    fn observe(&mut self, m: Measurement) -> &EpochRecord {
        let (knobs, cost) = self.log.take(&m);
        let action = match self.phase {
            Phase::Start => {
                let mut e = Estimate::new(knobs);
                e.add(cost, &m);
                self.incumbent = Some(e);
                self.phase = Phase::Probe;
                Action::Start
            }
            Phase::Probe | Phase::Confirm(_) => {
                let mv = self.probing.take().expect("a probe was proposed");
                let mut e = match self.phase {
                    Phase::Confirm(e) => e,
                    _ => Estimate::new(knobs),
                };
                debug_assert_eq!(e.knobs, knobs);
                e.add(cost, &m);
                match self.judge(&e) {
                    Verdict::Reject => {
                        self.retire(&e);
                        self.phase = Phase::Probe;
                        self.advance();
                        Action::Rejected
                    }
                    Verdict::Accept => {
                        let old = self.incumbent();
                        self.retire(&old);
                        self.phase = Phase::Probe;
                        self.incumbent = Some(e);
                        // Line search: the same move again from the new incumbent.
                        self.came_by = Some(mv);
                        self.failed_in_row = 0;
                        Action::Accepted
                    }
                    Verdict::Again => {
                        self.phase = Phase::Confirm(e);
                        self.probing = Some(mv);
                        Action::Confirming
                    }
                }
            }
            Phase::Refresh => {
                let mut inc = self.incumbent();
                inc.add(cost, &m);
                self.incumbent = Some(inc);
                if self.step <= self.cfg.step_decades_min + 1e-12 {
                    self.phase = Phase::Done;
                } else {
                    self.step = (self.step / 2.0).max(self.cfg.step_decades_min);
                    self.phase = Phase::Probe;
                    self.cursor = Move { knob: 0, up: false };
                    self.came_by = None;
                    self.failed_in_row = 0;
                }
                Action::Remeasured
            }
            Phase::Done => {
                let mut inc = self.incumbent();
                inc.add(cost, &m);
                self.incumbent = Some(inc);
                Action::Hold
            }
        };
        let best = self.incumbent().best();
        self.log.record(knobs, &m, cost, action, None, best)
    }

    fn best(&self) -> Option<Best> {
        self.incumbent.map(|e| e.best())
    }

    fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    fn trajectory(&self) -> &[EpochRecord] {
        &self.log.trajectory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::knobs::KNOB_MIN;
    use crate::tune::landscape::{Landscape, drive};

    fn m(t: f64) -> Measurement {
        Measurement { ops: 1, throughput_ops_per_sec: t, nvm_line_writes: 0 }
    }

    #[test]
    fn bad_parameters_are_named() {
        for (f, needle) in [
            (Box::new(|c: &mut CoordConfig| c.step_decades = 0.0) as Box<dyn Fn(&mut CoordConfig)>, "step"),
            (Box::new(|c| c.step_decades_min = 2.0), "last step"),
            (Box::new(|c| c.noise = 1.5), "noise"),
            (Box::new(|c| c.measurements_max = 1), "measurements"),
        ] {
            let mut cfg = TunerConfig::new(1);
            f(&mut cfg.coord);
            let e = Coord::new(&cfg).expect_err(needle).to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn probes_the_grid_confirms_wins_and_line_searches() {
        let mut c = Coord::new(&TunerConfig::new(0)).unwrap();
        assert_eq!(c.propose(), MigrationKnobs::EAGER);
        c.observe(m(100.0));
        // Dr down a decade; it wins clearly, is confirmed, and the line search goes on.
        let k = c.propose();
        assert_eq!(k, MigrationKnobs { dr: 0.1, ..MigrationKnobs::EAGER });
        assert_eq!(c.observe(m(150.0)).action, Action::Confirming);
        assert_eq!(c.propose(), k);
        assert_eq!(c.observe(m(140.0)).action, Action::Accepted);
        assert_eq!(c.best().unwrap().cost, 145.0);
        assert_eq!(c.best().unwrap().measurements, 2);
        assert_eq!(c.propose(), MigrationKnobs { dr: 0.01, ..MigrationKnobs::EAGER });
        // A clear loss is decided at once; Dr up is where we came from, so Dw down next.
        assert_eq!(c.observe(m(60.0)).action, Action::Rejected);
        let k = c.propose();
        assert_eq!(k, MigrationKnobs { dr: 0.1, dw: 0.1, ..MigrationKnobs::EAGER });
        // Within the noise: measured up to three times, then turned down (mean 143.3
        // is below 145).
        for t in [150.0, 140.0] {
            assert_eq!(c.observe(m(t)).action, Action::Confirming);
            assert_eq!(c.propose(), k);
        }
        assert_eq!(c.observe(m(140.0)).action, Action::Rejected);
        // Dw up is cancelled by the bound: Nr down next.
        assert_eq!(c.propose(), MigrationKnobs { dr: 0.1, nr: 0.1, ..MigrationKnobs::EAGER });
        // Within the noise but better on the mean of three: accepted.
        for t in [146.0, 147.0] {
            assert_eq!(c.observe(m(t)).action, Action::Confirming);
            c.propose();
        }
        assert_eq!(c.observe(m(148.0)).action, Action::Accepted);
        assert_eq!(c.best().unwrap().knobs, MigrationKnobs { dr: 0.1, nr: 0.1, ..MigrationKnobs::EAGER });
    }

    #[test]
    fn a_level_without_wins_remeasures_then_halves_the_step_then_ends() {
        let mut c = Coord::new(&TunerConfig::new(0)).unwrap();
        c.propose();
        c.observe(m(100.0));
        let mut actions = Vec::new();
        while !c.done() {
            let k = c.propose();
            assert!(k.to_array().iter().all(|&v| (KNOB_MIN..=1.0).contains(&v)), "{k}");
            actions.push(c.observe(m(100.0)).action);
            assert!(actions.len() < 100);
        }
        // Step 1: each knob's one probe (down; up is out of bounds) ties, so it is
        // measured three times and turned down; then a re-measure. Step 0.5: the same.
        let probe = [Action::Confirming, Action::Confirming, Action::Rejected];
        let level = [probe.repeat(4), vec![Action::Remeasured]].concat();
        assert_eq!(actions, [level.clone(), level].concat());
        assert_eq!(c.best().unwrap().measurements, 3);
        assert_eq!(c.propose(), MigrationKnobs::EAGER);
        assert_eq!(c.observe(m(100.0)).action, Action::Hold);
    }

    #[test]
    fn reproduces_its_trajectory_from_the_same_observations() {
        let run = |noise_seed| {
            let mut c = Coord::new(&TunerConfig::new(4)).unwrap();
            drive(&mut c, &mut Landscape::spitfire_like(noise_seed), 60);
            c.trajectory().to_vec()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
