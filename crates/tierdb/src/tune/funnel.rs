//! Coarse-to-fine search: a tuner that spends its first epochs on widely spaced
//! candidates, keeps a shortlist, confirms it, and only then refines knob by knob.
//!
//! 1. **Start**: the start configuration is measured (the paper starts eager).
//! 2. **Screen**: one epoch each on the coarse plane of the paper's sweeps (Figures
//!    5–7): D = Dr = Dw and N = Nr = Nw tied, each on the log grid 1, 0.1, 0.01
//!    (`screen_levels` values `screen_step_decades` apart). The plane's points are
//!    widely spaced (a decade and more apart), so one epoch tells them apart where a
//!    half-decade step of one knob would drown in the noise. Their order is lazy D
//!    first (the paper finds lazy migration to DRAM best on every workload of §6.5),
//!    and for each D, N from lazy to eager; the whole plane is always screened, so the
//!    order only decides how early a good policy is met, not which is found.
//! 3. **Shortlist** (one round of successive halving): the `shortlist` best of
//!    everything measured get one more epoch each, best first; the winner is the best
//!    mean of two or more epochs, so a single lucky epoch of the screen cannot win.
//! 4. **Refine**: the coordinate search ([`super::coord`]) from the winner, knobs
//!    untied, with its noise-aware sequential test; it starts with the winner's
//!    epochs and the spread the shortlist measured, and ends after its last level.
//!
//! The best configuration reported (`best`) is, until the refinement, the candidate
//! with the highest mean cost so far; then the coordinate search's incumbent.

use serde::Serialize;

use super::coord::{Coord, Estimate};
use super::{
    Action, Best, EpochRecord, Log, Measurement, TuneError, Tuner, TunerConfig, check_start, decades_min, from_decades,
    to_decades,
};
use crate::buffer::policy::knobs::MigrationKnobs;
use crate::limits::FUNNEL_SCREEN_LEVELS_MAX;

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
}

impl Default for FunnelConfig {
    fn default() -> FunnelConfig {
        FunnelConfig { screen_step_decades: 1.0, screen_levels: 3, shortlist: 3 }
    }
}

impl FunnelConfig {
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

    /// The screen in the order it is measured: D from lazy to eager, and for each D,
    /// N from lazy to eager.
    pub fn screen(&self) -> Vec<MigrationKnobs> {
        let levels: Vec<f64> =
            (0..self.screen_levels).rev().map(|i| -self.screen_step_decades * f64::from(i)).collect();
        let mut out = Vec::with_capacity(levels.len() * levels.len());
        for &d in &levels {
            for &n in &levels {
                out.push(from_decades([d, d, n, n]));
            }
        }
        out
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
    use crate::buffer::policy::knobs::KNOB_MIN;
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
    fn the_screen_is_the_tied_plane_lazy_d_first() {
        let s = FunnelConfig::default().screen();
        assert_eq!(s.len(), 9);
        assert_eq!(s[0], knobs(0.01, 0.01));
        assert_eq!(s[1], knobs(0.01, 0.1));
        assert_eq!(s[2], knobs(0.01, 1.0));
        assert_eq!(s[8], MigrationKnobs::EAGER);
        let wide = FunnelConfig { screen_step_decades: 1.5, ..FunnelConfig::default() }.screen();
        assert_eq!(wide[0], knobs(KNOB_MIN, KNOB_MIN));
    }

    /// Screen, shortlist and the hand-over to the refinement, step by step.
    #[test]
    fn screens_shortlists_the_best_means_and_refines_from_the_winner() {
        let mut f = Funnel::new(&TunerConfig::new(0)).unwrap();
        assert_eq!(f.propose(), MigrationKnobs::EAGER);
        assert_eq!(f.observe(m(100.0)).action, Action::Start);
        // The screen skips eager (already measured): eight points, one epoch each.
        // (0.1, 0.1) has a lucky epoch (150); (0.01, 0.1) is the truly good one.
        let screen = [120.0, 140.0, 110.0, 90.0, 150.0, 100.0, 80.0, 95.0];
        let expected = FunnelConfig::default().screen();
        for (i, t) in screen.into_iter().enumerate() {
            assert_eq!(f.propose(), expected[i]);
            let r = *f.observe(m(t));
            assert_eq!(r.action, Action::Screened);
            assert!(!f.refining());
        }
        assert_eq!(f.best().unwrap().knobs, knobs(0.1, 0.1));
        // The shortlist, best first: (0.1, 0.1) 150, (0.01, 0.1) 140, (0.01, 0.01) 120.
        for (k, t) in [(knobs(0.1, 0.1), 110.0), (knobs(0.01, 0.1), 141.0), (knobs(0.01, 0.01), 121.0)] {
            assert_eq!(f.propose(), k);
            assert_eq!(f.observe(m(t)).action, Action::Shortlisted);
        }
        // The lucky epoch is averaged away: (0.01, 0.1) leads with a mean of 140.5.
        let b = f.best().unwrap();
        assert_eq!((b.knobs, b.cost, b.measurements), (knobs(0.01, 0.1), 140.5, 2));
        // The refinement probes from the winner: Dr a decade down first.
        let k = f.propose();
        assert!(f.refining());
        assert_eq!(k, MigrationKnobs { dr: 0.001, ..knobs(0.01, 0.1) });
        assert_eq!(f.observe(m(50.0)).action, Action::Rejected);
        assert_eq!(f.best().unwrap().knobs, knobs(0.01, 0.1));
        assert_eq!(f.trajectory().len(), 13);
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
