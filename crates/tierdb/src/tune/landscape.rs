//! A synthetic, noisy cost landscape over the migration knobs with a known optimum: the
//! ground on which the tuners are tested and compared without running the engine.
//!
//! Throughput is `peak · e^(−q(x))` where `x` holds the knobs in decades (log10) and `q`
//! is a positive-definite quadratic form centred on the optimum, with a cross term
//! between Dr and Nr. [`Landscape::spitfire_like`] puts the optimum where §6.5–6.8 of
//! the paper find it: lazy DRAM migration (Dr = Dw = 0.01), Nr ≈ 0.3, eager Nw = 1;
//! the eager start then runs at about 61% of the peak, and Dw matters least (as for a
//! read-mostly workload). NVM writes per operation grow with Nw and with in-place
//! writes (low Dw). Each measurement multiplies the throughput by `1 + σz`, z standard
//! normal from a seeded generator, so a seed reproduces the noise.

use super::{Measurement, SplitMix, Tuner, to_decades};
use crate::policy::knobs::MigrationKnobs;

/// A synthetic landscape.
#[derive(Clone, Debug)]
pub struct Landscape {
    /// The optimum, in decades.
    pub optimum_decades: [f64; 4],
    /// Curvature per knob (decades⁻²).
    pub weights: [f64; 4],
    /// Cross term between Dr and Nr.
    pub cross_dr_nr: f64,
    /// Throughput at the optimum, operations per second.
    pub peak_ops_per_sec: f64,
    /// Relative standard deviation of a measurement.
    pub noise: f64,
    rng: SplitMix,
}

impl Landscape {
    /// The landscape described in the module docs, 2% noise.
    pub fn spitfire_like(noise_seed: u64) -> Landscape {
        Landscape {
            optimum_decades: [-2.0, -2.0, -0.5, 0.0],
            weights: [0.08, 0.03, 0.1, 0.25],
            cross_dr_nr: 0.03,
            peak_ops_per_sec: 100_000.0,
            noise: 0.02,
            rng: SplitMix::new(noise_seed),
        }
    }

    /// The knobs at the optimum.
    pub fn optimum(&self) -> MigrationKnobs {
        MigrationKnobs::from_array(self.optimum_decades.map(|d| 10f64.powf(d)))
    }

    /// Noise-free throughput of `k`.
    pub fn throughput(&self, k: MigrationKnobs) -> f64 {
        let x = to_decades(k);
        let d: Vec<f64> = x.iter().zip(self.optimum_decades).map(|(x, o)| x - o).collect();
        let q = d.iter().zip(self.weights).map(|(d, w)| w * d * d).sum::<f64>() + self.cross_dr_nr * d[0] * d[2];
        debug_assert!(q >= -1e-12, "the quadratic form is positive definite: q = {q}");
        self.peak_ops_per_sec * (-q).exp()
    }

    /// NVM line writes per operation of `k` (noise-free).
    pub fn writes_per_op(&self, k: MigrationKnobs) -> f64 {
        0.3 + 1.5 * k.nw + 1.0 * (1.0 - k.dw)
    }

    /// One noisy epoch of `ops` operations with `k`: the noise is `noise` for an epoch
    /// of [`LANDSCAPE_EPOCH_OPS`] and grows as 1/√ops for shorter ones.
    pub fn measure(&mut self, k: MigrationKnobs, ops: u64) -> Measurement {
        // Box–Muller: one standard normal from two uniforms.
        let (u1, u2) = (self.rng.next_f64().max(f64::MIN_POSITIVE), self.rng.next_f64());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let sigma = self.noise * (LANDSCAPE_EPOCH_OPS as f64 / ops.max(1) as f64).sqrt();
        Measurement {
            ops,
            throughput_ops_per_sec: (self.throughput(k) * (1.0 + sigma * z)).max(0.0),
            nvm_line_writes: (self.writes_per_op(k) * ops as f64).round() as u64,
        }
    }
}

/// Operations of a full epoch on a landscape.
pub const LANDSCAPE_EPOCH_OPS: u64 = 1_000_000;

/// Runs `tuner` for `epochs` epochs on `land`, each of [`LANDSCAPE_EPOCH_OPS`] times the
/// tuner's [`Tuner::epoch_fraction`].
pub fn drive(tuner: &mut dyn Tuner, land: &mut Landscape, epochs: u32) {
    for _ in 0..epochs {
        let k = tuner.propose();
        let ops = (LANDSCAPE_EPOCH_OPS as f64 * tuner.epoch_fraction()).round().max(1.0) as u64;
        let m = land.measure(k, ops);
        tuner.observe(m);
    }
}

/// The first record of the tuner's trajectory after which its best configuration has a
/// noise-free throughput of at least `fraction` of the peak, and the tuning time spent
/// by then in full epochs ([`super::epochs_elapsed`]); `None` if none.
pub fn epochs_to_reach(tuner: &dyn Tuner, land: &Landscape, fraction: f64) -> Option<(usize, f64)> {
    let target = fraction * land.peak_ops_per_sec;
    let elapsed = super::epochs_elapsed(tuner.trajectory(), LANDSCAPE_EPOCH_OPS);
    tuner.trajectory().iter().position(|r| land.throughput(r.best.knobs) >= target).map(|i| (i, elapsed[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optimum_is_the_peak_and_eager_is_well_below() {
        let land = Landscape::spitfire_like(1);
        assert!((land.throughput(land.optimum()) - land.peak_ops_per_sec).abs() < 1e-6);
        let eager = land.throughput(MigrationKnobs::EAGER) / land.peak_ops_per_sec;
        assert!((0.55..0.65).contains(&eager), "{eager}");
        // Any single step of half a decade from the optimum costs something.
        let o = to_decades(land.optimum());
        for i in 0..4 {
            for s in [-0.5, 0.5] {
                let mut d = o;
                d[i] = (d[i] + s).clamp(-3.0, 0.0);
                if d != o {
                    assert!(land.throughput(super::super::from_decades(d)) < land.peak_ops_per_sec);
                }
            }
        }
    }

    #[test]
    fn noise_has_the_stated_spread_and_is_seeded() {
        let mut land = Landscape::spitfire_like(3);
        let spread = |land: &mut Landscape, ops: u64| {
            let xs: Vec<f64> = (0..4000).map(|_| land.measure(land.optimum(), ops).throughput_ops_per_sec).collect();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
            (xs[0], mean / 100_000.0, sd / 100_000.0)
        };
        let (first, mean, sd) = spread(&mut land, LANDSCAPE_EPOCH_OPS);
        assert!((mean - 1.0).abs() < 0.003, "{mean}");
        assert!((sd - 0.02).abs() < 0.002, "{sd}");
        // A quarter epoch is twice as noisy.
        let (_, mean, sd) = spread(&mut land, LANDSCAPE_EPOCH_OPS / 4);
        assert!((mean - 1.0).abs() < 0.006, "{mean}");
        assert!((sd - 0.04).abs() < 0.004, "{sd}");
        let mut again = Landscape::spitfire_like(3);
        assert_eq!(again.measure(again.optimum(), LANDSCAPE_EPOCH_OPS).throughput_ops_per_sec, first);
    }
}
