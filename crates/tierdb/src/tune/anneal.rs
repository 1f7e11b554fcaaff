//! Simulated annealing over the migration knobs: the paper's Algorithm 1.
//!
//! ```text
//! C = C0; E = energy(C); T = T0
//! while T > Tmin:
//!     while accepted transitions at T < γ:
//!         C' = neighbour(C); E' = energy(C'); ΔE = E' − E
//!         if ΔE < 0 or uniform() < e^(−ΔE / T): C = C'
//!     T = α T
//! ```
//!
//! Each `energy(C')` is one epoch of the workload run with `C'`. Annealing minimises
//! energy and the paper maximises `Cost(T, W)`, so the energy is the negated cost,
//! **normalised by the cost of the first epoch** (the start, `C0`):
//! `E(C) = −s · Cost(C) / Cost(C0)` with the scale `s` = 1000 by default, so that the
//! start has energy −1000 and ΔE = 10 is a change of 1% of the start's cost, whatever
//! the machine's speed or the epoch's length. With the paper's T0 = 800, α = 0.9,
//! γ = 10, Tmin = 0.00008 this makes T0 hot (a move that loses 10% is accepted with
//! probability e^(−100/800) ≈ 0.88) and Tmin frozen (a loss of 0.001% is accepted with
//! probability e^(−0.01/0.00008) ≈ 0); after about 42 coolings (T ≈ 10) a 1% loss is
//! accepted with probability 1/e. Other scales are allowed (`energy_scale`).
//!
//! A neighbour moves one knob, chosen uniformly, by `move_decades` (default half a
//! decade, ×√10) up or down on a log scale, clamped to `[KNOB_MIN, 1]`; a move that
//! the clamp would cancel goes the other way. Knobs therefore take the values
//! 1, 0.316, 0.1, …, 0.001 from the eager start.
//!
//! One addition to Algorithm 1: at most `attempts_per_temperature` candidates are tried
//! at one temperature before it cools anyway; near an optimum at a low temperature γ
//! accepted moves may never come, and the loop would not end. The best configuration
//! reported is the one with the highest single measured cost (annealing keeps no
//! averages; see docs/tuning.md on noise).

use serde::Serialize;

use super::{
    Action, Best, EpochRecord, Log, Measurement, SplitMix, TuneError, Tuner, TunerConfig, check_start, from_decades,
    to_decades,
};
use crate::limits::{ANNEAL_ATTEMPTS_PER_TEMPERATURE_DEFAULT, ANNEAL_ATTEMPTS_PER_TEMPERATURE_MAX, ANNEAL_LEVELS_MAX};
use crate::policy::knobs::MigrationKnobs;

/// Algorithm 1's parameters; the defaults are the paper's (§6.6).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnnealConfig {
    /// Cooling factor: T ← αT.
    pub alpha: f64,
    /// Accepted transitions per temperature.
    pub gamma: u32,
    /// Starting temperature T0, in energy units (see the module doc's scale).
    pub t0: f64,
    /// The temperature below which the search ends (Tmin), in energy units.
    pub t_min: f64,
    /// `s` in `E = −s · Cost / Cost(C0)`.
    pub energy_scale: f64,
    /// Size of a neighbour move of one knob, in decades.
    pub move_decades: f64,
    /// Candidates tried at one temperature before it cools anyway.
    pub attempts_per_temperature: u32,
}

impl Default for AnnealConfig {
    fn default() -> AnnealConfig {
        AnnealConfig {
            alpha: 0.9,
            gamma: 10,
            t0: 800.0,
            t_min: 0.00008,
            energy_scale: 1000.0,
            move_decades: 0.5,
            attempts_per_temperature: ANNEAL_ATTEMPTS_PER_TEMPERATURE_DEFAULT,
        }
    }
}

impl AnnealConfig {
    /// Temperature levels from T0 down to Tmin: how many times the schedule cools.
    pub fn levels(&self) -> u32 {
        ((self.t_min / self.t0).ln() / self.alpha.ln()).ceil().max(0.0) as u32
    }

    /// Checks every parameter and that the schedule ends within [`ANNEAL_LEVELS_MAX`]
    /// levels.
    ///
    /// # Errors
    /// `Config` naming the parameter out of range.
    pub fn validate(&self) -> Result<(), TuneError> {
        let bad = |what: String| Err(TuneError::Config { what });
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return bad(format!("anneal alpha {} is not in (0, 1)", self.alpha));
        }
        if self.gamma == 0 {
            return bad("anneal gamma is 0: each temperature needs accepted transitions".into());
        }
        if !(self.t_min.is_finite() && self.t_min > 0.0 && self.t0.is_finite() && self.t0 > self.t_min) {
            return bad(format!("anneal temperatures T0 {} and Tmin {} need T0 > Tmin > 0", self.t0, self.t_min));
        }
        if self.levels() > ANNEAL_LEVELS_MAX {
            return bad(format!(
                "anneal schedule T0 {} → Tmin {} by α {} has {} levels, more than {ANNEAL_LEVELS_MAX}",
                self.t0,
                self.t_min,
                self.alpha,
                self.levels()
            ));
        }
        if !(self.energy_scale.is_finite() && self.energy_scale > 0.0) {
            return bad(format!("anneal energy scale {} is not a finite number > 0", self.energy_scale));
        }
        if !(self.move_decades > 0.0 && self.move_decades <= -super::decades_min()) {
            return bad(format!(
                "anneal move of {} decades is not in (0, {}]",
                self.move_decades,
                -super::decades_min()
            ));
        }
        if !(self.gamma..=ANNEAL_ATTEMPTS_PER_TEMPERATURE_MAX).contains(&self.attempts_per_temperature) {
            return bad(format!(
                "anneal attempts per temperature {} is not in gamma {}..={ANNEAL_ATTEMPTS_PER_TEMPERATURE_MAX}",
                self.attempts_per_temperature, self.gamma
            ));
        }
        Ok(())
    }
}

/// What the pending proposal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    Start,
    Candidate,
    Hold,
}

/// Simulated annealing (Algorithm 1) as a [`Tuner`].
#[derive(Clone, Debug)]
pub struct Anneal {
    cfg: AnnealConfig,
    start: MigrationKnobs,
    rng: SplitMix,
    log: Log,
    pending: Option<Pending>,
    /// C and E(C); `None` until the start is measured.
    current: Option<(MigrationKnobs, f64)>,
    /// Cost(C0): the energy's unit.
    cost_ref: f64,
    temperature: f64,
    accepted_here: u32,
    attempts_here: u32,
    best: Option<Best>,
}

impl Anneal {
    /// Simulated annealing from `cfg.start` at temperature T0, its moves drawn from a
    /// generator seeded with `cfg.seed`.
    ///
    /// # Errors
    /// `Config` for parameters out of range ([`AnnealConfig::validate`]) or a start
    /// outside `[KNOB_MIN, 1]`.
    pub fn new(cfg: &TunerConfig) -> Result<Anneal, TuneError> {
        cfg.anneal.validate()?;
        Ok(Anneal {
            cfg: cfg.anneal.clone(),
            start: check_start(cfg.start)?,
            rng: SplitMix::new(cfg.seed),
            log: Log::new(cfg.objective),
            pending: None,
            current: None,
            cost_ref: 0.0,
            temperature: cfg.anneal.t0,
            accepted_here: 0,
            attempts_here: 0,
            best: None,
        })
    }

    /// The current temperature.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }

    fn energy(&self, cost: f64) -> f64 {
        -self.cfg.energy_scale * cost / self.cost_ref
    }

    /// One knob moved by `move_decades`, up or down at random.
    fn neighbour(&mut self, c: MigrationKnobs) -> MigrationKnobs {
        let mut d = to_decades(c);
        let i = self.rng.below(4) as usize;
        let step = if self.rng.below(2) == 1 { self.cfg.move_decades } else { -self.cfg.move_decades };
        let min = super::decades_min();
        let moved = (d[i] + step).clamp(min, 0.0);
        d[i] = if (moved - d[i]).abs() < 1e-12 { (d[i] - step).clamp(min, 0.0) } else { moved };
        let n = from_decades(d);
        debug_assert_ne!(n, c, "a neighbour differs from its origin");
        n
    }

    fn note_best(&mut self, knobs: MigrationKnobs, cost: f64, m: &Measurement) -> Best {
        if self.best.is_none_or(|b| cost > b.cost) {
            self.best = Some(Best {
                knobs,
                cost,
                throughput_ops_per_sec: m.throughput_ops_per_sec,
                nvm_writes_per_op: m.writes_per_op(),
                measurements: 1,
            });
        }
        self.best.expect("just set")
    }
}

impl Tuner for Anneal {
    fn name(&self) -> &'static str {
        "anneal"
    }

    fn propose(&mut self) -> MigrationKnobs {
        if let Some(k) = self.log.pending {
            return k;
        }
        let (kind, knobs) = match self.current {
            None => (Pending::Start, self.start),
            Some((c, _)) if self.done() => (Pending::Hold, c),
            Some((c, _)) => (Pending::Candidate, self.neighbour(c)),
        };
        self.pending = Some(kind);
        self.log.pending = Some(knobs);
        knobs
    }

    fn observe(&mut self, m: Measurement) -> &EpochRecord {
        let (knobs, cost) = self.log.take(&m);
        let kind = self.pending.take().expect("a pending proposal has a kind");
        let temperature = self.temperature;
        let best = self.note_best(knobs, cost, &m);
        let action = match kind {
            Pending::Start => {
                self.cost_ref = cost.max(f64::MIN_POSITIVE);
                self.current = Some((knobs, self.energy(cost)));
                Action::Start
            }
            Pending::Hold => Action::Hold,
            Pending::Candidate => {
                let (_, e) = self.current.expect("a candidate follows the start");
                let e_new = self.energy(cost);
                let delta = e_new - e;
                // Always accept a lower energy; a higher one with the Boltzmann factor.
                let accept = delta < 0.0 || self.rng.next_f64() < (-delta / self.temperature).exp();
                self.attempts_here += 1;
                if accept {
                    self.current = Some((knobs, e_new));
                    self.accepted_here += 1;
                }
                if self.accepted_here >= self.cfg.gamma || self.attempts_here >= self.cfg.attempts_per_temperature {
                    self.temperature *= self.cfg.alpha;
                    self.accepted_here = 0;
                    self.attempts_here = 0;
                }
                if accept { Action::Accepted } else { Action::Rejected }
            }
        };
        self.log.record(knobs, &m, cost, action, Some(temperature), best)
    }

    fn best(&self) -> Option<Best> {
        self.best
    }

    fn done(&self) -> bool {
        self.current.is_some() && self.temperature <= self.cfg.t_min
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

    #[test]
    fn paper_schedule_has_153_levels_and_bad_parameters_are_named() {
        assert_eq!(AnnealConfig::default().levels(), 153);
        for (f, needle) in [
            (Box::new(|c: &mut AnnealConfig| c.alpha = 1.0) as Box<dyn Fn(&mut AnnealConfig)>, "alpha"),
            (Box::new(|c| c.gamma = 0), "gamma"),
            (Box::new(|c| c.t_min = 900.0), "Tmin"),
            (Box::new(|c| c.energy_scale = 0.0), "energy scale"),
            (Box::new(|c| c.move_decades = 4.0), "decades"),
            (Box::new(|c| c.attempts_per_temperature = 3), "attempts"),
            (Box::new(|c| c.alpha = 0.999_999_9), "levels"),
        ] {
            let mut cfg = TunerConfig::new(1);
            f(&mut cfg.anneal);
            let e = Anneal::new(&cfg).expect_err(needle).to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn starts_eager_then_moves_one_knob_by_half_a_decade() {
        let mut a = Anneal::new(&TunerConfig::new(3)).unwrap();
        assert_eq!(a.propose(), MigrationKnobs::EAGER);
        assert_eq!(a.propose(), MigrationKnobs::EAGER, "propose twice: same knobs");
        a.observe(Measurement { ops: 100, throughput_ops_per_sec: 1000.0, nvm_line_writes: 0 });
        for _ in 0..50 {
            let c = a.current.unwrap().0;
            let n = a.propose();
            let changed: Vec<_> =
                c.to_array().iter().zip(n.to_array()).filter(|(x, y)| **x != *y).map(|(x, y)| (*x, y)).collect();
            assert_eq!(changed.len(), 1, "{c} → {n}");
            let (x, y) = changed[0];
            assert!((x.log10() - y.log10()).abs() - 0.5 < 1e-9, "{x} → {y}");
            assert!(n.to_array().iter().all(|&v| (KNOB_MIN..=1.0).contains(&v)), "{n}");
            a.observe(Measurement { ops: 100, throughput_ops_per_sec: 1000.0 + y, nvm_line_writes: 0 });
        }
    }

    #[test]
    fn an_equal_or_better_candidate_is_always_accepted_and_a_much_worse_one_rarely_when_cold() {
        let mut cfg = TunerConfig::new(9);
        cfg.anneal.t0 = 1.0;
        cfg.anneal.t_min = 0.5;
        let mut a = Anneal::new(&cfg).unwrap();
        a.propose();
        a.observe(Measurement { ops: 1, throughput_ops_per_sec: 1000.0, nvm_line_writes: 0 });
        a.propose();
        assert_eq!(
            a.observe(Measurement { ops: 1, throughput_ops_per_sec: 1000.0, nvm_line_writes: 0 }).action,
            Action::Accepted
        );
        a.propose();
        // 10% worse: ΔE = 100 at T = 1.
        assert_eq!(
            a.observe(Measurement { ops: 1, throughput_ops_per_sec: 900.0, nvm_line_writes: 0 }).action,
            Action::Rejected
        );
    }

    #[test]
    fn cools_after_gamma_acceptances_and_ends_at_tmin() {
        let mut cfg = TunerConfig::new(5);
        cfg.anneal.t0 = 1.0;
        cfg.anneal.t_min = 0.5;
        cfg.anneal.alpha = 0.5;
        cfg.anneal.gamma = 3;
        let mut a = Anneal::new(&cfg).unwrap();
        let m = Measurement { ops: 1, throughput_ops_per_sec: 1000.0, nvm_line_writes: 0 };
        a.propose();
        a.observe(m);
        for i in 0..3 {
            assert!(!a.done(), "{i}");
            a.propose();
            a.observe(m); // equal energy: accepted
        }
        assert!(a.done());
        let c = a.current.unwrap().0;
        assert_eq!(a.propose(), c);
        assert_eq!(a.observe(m).action, Action::Hold);
    }

    #[test]
    fn reproduces_its_trajectory_from_a_seed() {
        let run = |seed| {
            let mut cfg = TunerConfig::new(seed);
            cfg.anneal.alpha = 0.5; // short: 21 levels
            let mut a = Anneal::new(&cfg).unwrap();
            drive(&mut a, &mut Landscape::spitfire_like(77), 400);
            a.trajectory().to_vec()
        };
        let (x, y, z) = (run(1), run(1), run(2));
        assert_eq!(x, y);
        assert_ne!(x, z);
    }
}
