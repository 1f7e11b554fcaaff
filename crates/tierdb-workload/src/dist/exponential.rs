//! YCSB's exponential distribution: ages whose popularity falls exponentially.
//!
//! YCSB's `ExponentialGenerator(percentile, range)` draws `-ln(U) / γ` with
//! `γ = -ln(1 - percentile/100) / range`, so that `percentile`% of the draws are below
//! `range`. Its core workload (`requestdistribution=exponential`) requests the key
//! `last - ⌊draw⌋`, `last` being the newest inserted key, and draws again while that
//! falls below the first key: the newest records are the most popular. Here a draw is
//! an *age*, `⌊-ln(1 - U) / γ⌋` (`1 - U` is in `(0, 1]`, so the logarithm is finite);
//! the generator turns it into a key.

use crate::dist::unit_f64;
use rand::Rng;
use rand::distr::Distribution;

/// Exponentially distributed ages: `percentile`% of them below `range`.
#[derive(Clone, Debug, PartialEq)]
pub struct Exponential {
    /// The rate `γ`: the mean age is `1 / γ`.
    gamma: f64,
}

impl Exponential {
    /// Ages of which `percentile`% fall below `range` (YCSB's `exponential.percentile`
    /// and `recordcount × exponential.frac`).
    ///
    /// # Panics
    ///
    /// If `percentile` is not strictly between 0 and 100, or `range` is not a positive
    /// finite number. Workload parameters are validated before they get here.
    pub fn new(percentile: f64, range: f64) -> Exponential {
        assert!(percentile > 0.0 && percentile < 100.0, "exponential: percentile {percentile} outside (0, 100)");
        assert!(range > 0.0 && range.is_finite(), "exponential: range {range}");
        let gamma = -(1.0 - percentile / 100.0).ln() / range;
        assert!(gamma > 0.0 && gamma.is_finite(), "exponential: rate {gamma} from {percentile}% below {range}");
        Exponential { gamma }
    }

    /// The mean of the (unrounded) draws, `1 / γ`.
    pub fn mean(&self) -> f64 {
        1.0 / self.gamma
    }

    /// One age: `⌊-ln(1 - U) / γ⌋`, saturating at `u64::MAX`.
    #[inline]
    pub fn sample_age<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let draw = -(1.0 - unit_f64(rng)).ln() / self.gamma;
        debug_assert!(draw >= 0.0, "exponential draw {draw}");
        // `as` truncates toward zero and saturates, like YCSB's `intValue()` without
        // its overflow into negative numbers.
        draw as u64
    }
}

impl Distribution<u64> for Exponential {
    /// An age; see [`Exponential::sample_age`].
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.sample_age(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn the_percentile_falls_below_the_range() {
        let seed = 51;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // YCSB's defaults: 95% of the draws within 1000 × 0.8571428571 items.
        let range = 1000.0 * 0.857_142_857_1;
        let dist = Exponential::new(95.0, range);
        let draws = 100_000;
        let below = (0..draws).filter(|_| (dist.sample_age(&mut rng) as f64) < range).count();
        let share = below as f64 / f64::from(draws);
        assert!((share - 0.95).abs() < 0.005, "seed {seed}: {share} of the draws below the range");
        assert!((dist.mean() - range / -(0.05f64).ln()).abs() < 1e-9);
    }

    #[test]
    fn young_ages_are_the_most_frequent() {
        let seed = 52;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let dist = Exponential::new(90.0, 100.0);
        let mut counts = [0u32; 4];
        for _ in 0..100_000 {
            if let Some(c) = counts.get_mut((dist.sample_age(&mut rng) / 25) as usize) {
                *c += 1;
            }
        }
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "seed {seed}: {counts:?}");
    }

    #[test]
    #[should_panic(expected = "percentile 100")]
    fn a_percentile_of_100_is_refused() {
        let _ = Exponential::new(100.0, 10.0);
    }
}
