//! Coarse-to-fine search: a tuner that spends its first epochs on widely spaced
//! candidates, measured briefly, keeps a shortlist, confirms it with full epochs, and
//! only then refines knob by knob.
//!
//! 1. **Start**: the start configuration is measured (the paper starts eager).
//! 2. **Screen**: the coarse plane of the paper's sweeps (Figures 5–7): D = Dr = Dw and
//!    N = Nr = Nw tied, each on the log grid 1, 0.1, 0.01 (`screen_levels` values
//!    `screen_step_decades` apart). The plane's points are a decade and more apart, so
//!    they differ by more than the noise of a short measurement: the start and each
//!    screen point run for `screen_fraction` of an epoch (a quarter by default), the
//!    first rung of successive halving. The order is centre-out: the middle of the
//!    plane first (D = N = 0.1), then its four neighbours, then the corners (ties: lazy
//!    D first, then lazy N). The middle is the point nearest on average to an optimum
//!    anywhere on the plane, and the paper finds lazy migration best on most of §6.5's
//!    workloads; the whole plane is always screened, so the order only decides how
//!    early a good policy is met, not which one is found.
//! 3. **Shortlist**: the `shortlist` best of everything measured get one full epoch
//!    each, best first; the winner is the best mean (weighted by operations) of a
//!    short and a full epoch, so a lucky short epoch of the screen cannot win alone.
//! 4. **Refine**: the coordinate search ([`super::coord`]) from the winner, knobs
//!    untied, full epochs, with its noise-aware sequential test; it starts with the
//!    winner's epochs and the spread the shortlist measured, and ends after its last
//!    level.
//!
//! The best configuration reported (`best`) is, until the refinement, the candidate
//! with the highest mean cost so far; then the coordinate search's incumbent.

use serde::Serialize;

use super::coord::{Coord, Estimate};
use super::{
    Action, Best, EpochRecord, Log, Measurement, TuneError, Tuner, TunerConfig, check_start, decades_min, from_decades,
    to_decades,
};
use crate::limits::{FUNNEL_SCREEN_FRACTION_MIN, FUNNEL_SCREEN_LEVELS_MAX};
use crate::policy::knobs::MigrationKnobs;

/// The coarse-to-fine search's parameters (the refinement reads [`super::CoordConfig`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunnelConfig {
    /// Spacing of the screen's levels, in decades (1: 1, 0.1, 0.01).
    pub screen_step_decades: f64,
    /// Values per tied knob (D, N) on the screen; the screen has this many squared
    /// points, the start's among them if it lies there.
    pub screen_levels: u32,
    /// Candidates measured again after the screen.
    pub shortlist: u32,
    /// The length of the start's and the screen's epochs, as a fraction of a full
    /// epoch (the shortlist and the refinement run full epochs).
    pub screen_fraction: f64,
}

impl Default for FunnelConfig {
    fn default() -> FunnelConfig {
        FunnelConfig { screen_step_decades: 1.0, screen_levels: 3, shortlist: 3, screen_fraction: 0.25 }
    }
}

impl FunnelConfig {
    /// Checks the screen, the shortlist and the screen's epoch fraction.
    ///
    /// # Errors
    /// `Config` naming the parameter out of range.
    pub fn validate(&self) -> Result<(), TuneError> {
        if !(2..=FUNNEL_SCREEN_LEVELS_MAX).contains(&self.screen_levels) {
            return Err(TuneError::Config {
                what: format!("funnel screen levels {} is not in 2..={FUNNEL_SCREEN_LEVELS_MAX}", self.screen_levels),
            });
        }
        let span = -decades_min();
        let widest = self.screen_step_decades * f64::from(self.screen_levels - 1);
        if !(self.screen_step_decades > 0.0 && widest <= span + 1e-9) {
            return Err(TuneError::Config {
                what: format!(
                    "funnel screen step {} decades: {} levels span {widest} decades, more than the knobs' {span}",
                    self.screen_step_decades, self.screen_levels
                ),
            });
        }
        if !(FUNNEL_SCREEN_FRACTION_MIN..=1.0).contains(&self.screen_fraction) {
            return Err(TuneError::Config {
                what: format!(
                    "funnel screen fraction {} is not in [{FUNNEL_SCREEN_FRACTION_MIN}, 1] (of an epoch)",
                    self.screen_fraction
                ),
            });
        }
        if !(1..=self.screen_levels * self.screen_levels).contains(&self.shortlist) {
            return Err(TuneError::Config {
                what: format!(
                    "funnel shortlist {} is not in 1..={} (the screen's points)",
                    self.shortlist,
                    self.screen_levels * self.screen_levels
                ),
            });
        }
        Ok(())
    }

    /// The screen in the order it is measured: centre-out — by distance (in decades)
    /// from the middle of the plane, ties lazy D first, then lazy N.
    pub fn screen(&self) -> Vec<MigrationKnobs> {
        let levels: Vec<f64> =
            (0..self.screen_levels).rev().map(|i| -self.screen_step_decades * f64::from(i)).collect();
        let centre = levels.iter().sum::<f64>() / levels.len() as f64;
        let mut points: Vec<(f64, f64)> = levels.iter().flat_map(|&d| levels.iter().map(move |&n| (d, n))).collect();
        let distance = |(d, n): (f64, f64)| (d - centre).powi(2) + (n - centre).powi(2);
        points
            .sort_by(|&a, &b| distance(a).total_cmp(&distance(b)).then(a.0.total_cmp(&b.0)).then(a.1.total_cmp(&b.1)));
        points.into_iter().map(|(d, n)| from_decades([d, d, n, n])).collect()
    }
}

/// Where the search is.
#[derive(Clone, Debug)]
enum Phase {
    Start,
    /// The next screen point to consider.
    Screen(usize),
    /// Candidates (indices into `measured`) to measure again, and the next of them.
    Shortlist(Vec<usize>, usize),
    Refine(Box<Coord>),
}

/// Coarse-to-fine search as a [`Tuner`].
#[derive(Clone, Debug)]
pub struct Funnel {
    cfg: TunerConfig,
    screen: Vec<MigrationKnobs>,
    log: Log,
    phase: Phase,
    /// Every configuration measured before the refinement, in the order first measured.
    measured: Vec<Estimate>,
}

impl Funnel {
    /// A coarse-to-fine search from `cfg.start`: the screen and shortlist with
    /// `cfg.funnel`'s parameters, the refinement with `cfg.coord`'s.
    ///
    /// # Errors
    /// `Config` for parameters out of range (the funnel's or the refinement's) or a
    /// start outside `[KNOB_MIN, 1]`.
    pub fn new(cfg: &TunerConfig) -> Result<Funnel, TuneError> {
        cfg.funnel.validate()?;
        cfg.coord.validate()?;
        check_start(cfg.start)?;
        Ok(Funnel {
            cfg: cfg.clone(),
            screen: cfg.funnel.screen(),
            log: Log::new(cfg.objective),
            phase: Phase::Start,
            measured: Vec::new(),
        })
    }

    /// The search has reached its refinement stage.
    pub fn refining(&self) -> bool {
        matches!(self.phase, Phase::Refine(_))
    }

    /// The index of the measured configuration with the highest mean cost.
    fn leader(&self) -> Option<usize> {
        (0..self.measured.len()).max_by(|&a, &b| self.measured[a].cost().total_cmp(&self.measured[b].cost()))
    }

    fn index_of(&self, k: MigrationKnobs) -> Option<usize> {
        self.measured.iter().position(|e| e.knobs == k)
    }

    /// The next screen point not yet measured, from `i` on.
    fn next_screen(&self, mut i: usize) -> Option<usize> {
        while i < self.screen.len() {
            if self.index_of(self.screen[i]).is_none() {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// After the screen: the shortlist, best first.
    fn shortlist(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.measured.len()).collect();
        order.sort_by(|&a, &b| self.measured[b].cost().total_cmp(&self.measured[a].cost()));
        order.truncate(self.cfg.funnel.shortlist as usize);
        order
    }

    /// After the shortlist: the refinement from the best mean among the shortlisted,
    /// with the spread the others measured.
    fn refine(&self, shortlisted: &[usize]) -> Coord {
        let winner = *shortlisted
            .iter()
            .max_by(|&&a, &&b| self.measured[a].cost().total_cmp(&self.measured[b].cost()))
            .expect("a shortlist is not empty");
        let (mut ss, mut dof) = (0.0, 0);
        for &i in shortlisted.iter().filter(|&&i| i != winner) {
            let (s, d) = self.measured[i].relative_ss();
            ss += s;
            dof += d;
        }
        Coord::from_incumbent(&self.cfg, self.measured[winner], (ss, dof)).expect("the configuration was validated")
    }

    fn phase_knobs(&mut self) -> MigrationKnobs {
        loop {
            let next = match &self.phase {
                Phase::Start => return self.cfg.start,
                Phase::Screen(i) => match self.next_screen(*i) {
                    Some(j) => {
                        self.phase = Phase::Screen(j);
                        return self.screen[j];
                    }
                    None => Phase::Shortlist(self.shortlist(), 0),
                },
                Phase::Shortlist(list, at) => match list.get(*at) {
                    Some(&i) => return self.measured[i].knobs,
                    None => Phase::Refine(Box::new(self.refine(list))),
                },
                Phase::Refine(_) => break,
            };
            self.phase = next;
        }
        let Phase::Refine(c) = &mut self.phase else { unreachable!("the loop ends in the refinement") };
        c.propose()
    }
}

impl Tuner for Funnel {
    fn name(&self) -> &'static str {
        "funnel"
    }

    fn epoch_fraction(&self) -> f64 {
        match self.phase {
            Phase::Start | Phase::Screen(_) => self.cfg.funnel.screen_fraction,
            Phase::Shortlist(..) | Phase::Refine(_) => 1.0,
        }
    }

    fn propose(&mut self) -> MigrationKnobs {
        if let Some(k) = self.log.pending {
            return k;
        }
        let k = self.phase_knobs();
        debug_assert!(to_decades(k).iter().all(|d| (decades_min() - 1e-9..=0.0).contains(d)), "{k}");
        self.log.pending = Some(k);
        k
    }

    fn observe(&mut self, m: Measurement) -> &EpochRecord {
        let (knobs, cost) = self.log.take(&m);
        let (action, best) = match &mut self.phase {
            Phase::Start => {
                let mut e = Estimate::new(knobs);
                e.add(cost, &m);
                self.measured.push(e);
                self.phase = Phase::Screen(0);
                (Action::Start, e.best())
            }
            Phase::Screen(i) => {
                debug_assert_eq!(self.screen[*i], knobs);
                *i += 1;
                let mut e = Estimate::new(knobs);
                e.add(cost, &m);
                self.measured.push(e);
                (Action::Screened, self.measured[self.leader().expect("measured")].best())
            }
            Phase::Shortlist(list, at) => {
                let i = list[*at];
                debug_assert_eq!(self.measured[i].knobs, knobs);
                *at += 1;
                self.measured[i].add(cost, &m);
                (Action::Shortlisted, self.measured[self.leader().expect("measured")].best())
            }
            Phase::Refine(c) => {
                let r = c.observe(m);
                debug_assert_eq!(r.knobs, knobs);
                (r.action, r.best)
            }
        };
        self.log.record(knobs, &m, cost, action, None, best)
    }

    fn best(&self) -> Option<Best> {
        match &self.phase {
            Phase::Refine(c) => c.best(),
            _ => self.leader().map(|i| self.measured[i].best()),
        }
    }

    fn done(&self) -> bool {
        match &self.phase {
            Phase::Refine(c) => c.done(),
            _ => false,
        }
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

    fn knobs(d: f64, n: f64) -> MigrationKnobs {
        MigrationKnobs { dr: d, dw: d, nr: n, nw: n }
    }

    #[test]
    fn bad_parameters_are_named() {
        for (f, needle) in [
            (Box::new(|c: &mut FunnelConfig| c.screen_levels = 1) as Box<dyn Fn(&mut FunnelConfig)>, "levels"),
            (Box::new(|c| c.screen_step_decades = 2.0), "step"),
            (Box::new(|c| c.shortlist = 0), "shortlist"),
            (Box::new(|c| c.shortlist = 10), "shortlist"),
        ] {
            let mut cfg = TunerConfig::new(1);
            f(&mut cfg.funnel);
            let e = Funnel::new(&cfg).expect_err(needle).to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let mut cfg = TunerConfig::new(1);
        cfg.coord.noise = 2.0;
        assert!(Funnel::new(&cfg).is_err(), "the refinement's parameters are checked too");
    }

    #[test]
    fn the_screen_is_the_tied_plane_centre_out() {
        let s = FunnelConfig::default().screen();
        assert_eq!(s.len(), 9);
        assert_eq!(s[0], knobs(0.1, 0.1), "the middle first");
        assert_eq!(s[1..5], [knobs(0.01, 0.1), knobs(0.1, 0.01), knobs(0.1, 1.0), knobs(1.0, 0.1)]);
        assert_eq!(s[5..], [knobs(0.01, 0.01), knobs(0.01, 1.0), knobs(1.0, 0.01), MigrationKnobs::EAGER]);
        let wide = FunnelConfig { screen_step_decades: 1.5, ..FunnelConfig::default() }.screen();
        assert_eq!(wide[0], knobs(10f64.powf(-1.5), 10f64.powf(-1.5)));
        assert_eq!(wide[5], knobs(KNOB_MIN, KNOB_MIN));
    }

    /// Screen (short epochs), shortlist (full epochs) and the hand-over to the
    /// refinement, step by step.
    #[test]
    fn screens_shortlists_the_best_means_and_refines_from_the_winner() {
        let short = |t: f64| Measurement { ops: 25, throughput_ops_per_sec: t, nvm_line_writes: 0 };
        let full = |t: f64| Measurement { ops: 100, throughput_ops_per_sec: t, nvm_line_writes: 0 };
        let mut f = Funnel::new(&TunerConfig::new(0)).unwrap();
        assert_eq!(f.propose(), MigrationKnobs::EAGER);
        assert_eq!(f.epoch_fraction(), 0.25, "the start is measured briefly, like the screen");
        assert_eq!(f.observe(short(100.0)).action, Action::Start);
        // The screen skips eager (already measured): eight points, a quarter epoch each.
        // (0.1, 0.1) has a lucky epoch (150); (0.01, 0.1) is the truly good one.
        let value = |k: MigrationKnobs| match (k.dr, k.nr) {
            (0.1, 0.1) => 150.0,
            (0.01, 0.1) => 140.0,
            (0.01, 0.01) => 120.0,
            (0.1, 0.01) => 110.0,
            _ => 90.0,
        };
        for expected in FunnelConfig::default().screen().into_iter().filter(|&k| k != MigrationKnobs::EAGER) {
            let k = f.propose();
            assert_eq!(k, expected);
            assert_eq!(f.epoch_fraction(), 0.25);
            let r = *f.observe(short(value(k)));
            assert_eq!((r.action, r.ops), (Action::Screened, 25));
            assert!(!f.refining());
        }
        assert_eq!(f.best().unwrap().knobs, knobs(0.1, 0.1));
        // The shortlist, best first, a full epoch each: (0.1, 0.1), (0.01, 0.1), (0.01, 0.01).
        for (k, t) in [(knobs(0.1, 0.1), 110.0), (knobs(0.01, 0.1), 141.0), (knobs(0.01, 0.01), 121.0)] {
            assert_eq!(f.propose(), k);
            assert_eq!(f.epoch_fraction(), 1.0);
            assert_eq!(f.observe(full(t)).action, Action::Shortlisted);
        }
        // The lucky short epoch is outweighed: (0.01, 0.1) leads with (25·140 + 100·141) / 125.
        let b = f.best().unwrap();
        assert_eq!((b.knobs, b.measurements), (knobs(0.01, 0.1), 2));
        assert!((b.cost - 140.8).abs() < 1e-9, "{}", b.cost);
        // The refinement probes from the winner, full epochs: Dr a decade down first.
        let k = f.propose();
        assert!(f.refining());
        assert_eq!(f.epoch_fraction(), 1.0);
        assert_eq!(k, MigrationKnobs { dr: 0.001, ..knobs(0.01, 0.1) });
        assert_eq!(f.observe(full(50.0)).action, Action::Rejected);
        assert_eq!(f.best().unwrap().knobs, knobs(0.01, 0.1));
        assert_eq!(f.trajectory().len(), 13);
        let elapsed = crate::tune::epochs_elapsed(f.trajectory(), 100);
        assert_eq!(elapsed[0], 0.25);
        assert_eq!(elapsed[8], 2.25, "start and screen: nine quarter epochs");
        assert_eq!(elapsed[12], 6.25);
    }

    #[test]
    fn a_bad_screen_fraction_is_named() {
        for bad in [0.0, 0.001, 1.5, f64::NAN] {
            let mut cfg = TunerConfig::new(1);
            cfg.funnel.screen_fraction = bad;
            let e = Funnel::new(&cfg).expect_err("bad fraction").to_string();
            assert!(e.contains("screen fraction"), "{e}");
        }
    }

    #[test]
    fn ends_on_a_flat_landscape_within_a_bounded_number_of_epochs() {
        let mut f = Funnel::new(&TunerConfig::new(0)).unwrap();
        let mut n = 0;
        while !f.done() {
            let k = f.propose();
            assert!(k.to_array().iter().all(|&v| (KNOB_MIN..=1.0).contains(&v)), "{k}");
            f.observe(m(100.0));
            n += 1;
            assert!(n < 150, "the funnel did not end");
        }
        let held = f.propose();
        assert_eq!(f.observe(m(100.0)).action, Action::Hold);
        assert_eq!(f.best().unwrap().knobs, held);
    }

    #[test]
    fn reproduces_its_trajectory_from_the_same_observations() {
        let run = |noise_seed| {
            let mut f = Funnel::new(&TunerConfig::new(4)).unwrap();
            drive(&mut f, &mut Landscape::spitfire_like(noise_seed), 60);
            f.trajectory().to_vec()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
