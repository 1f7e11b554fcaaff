//! The length of a scan: uniform over `[min, max]`, or Zipf favouring short scans.
//!
//! The zipfian form gives length `min + r - 1` for a rank `r` of a [`Zipf`] over the
//! `max - min + 1` lengths, so `min` is the most likely, as YCSB's
//! `ZipfianGenerator(min, max)` does.

use crate::dist::{Zipf, uniform_below};
use rand::Rng;
use rand::distr::Distribution;

/// Scan lengths between two bounds.
#[derive(Clone, Debug, PartialEq)]
pub enum ScanLength {
    /// Every length in `min..=max` equally likely.
    Uniform {
        /// Shortest length.
        min: u32,
        /// Longest length.
        max: u32,
    },
    /// Length `min + r - 1` for a Zipf rank `r` over `max - min + 1` lengths.
    Zipfian {
        /// Shortest (and most likely) length.
        min: u32,
        /// The ranks.
        zipf: Zipf,
    },
}

impl ScanLength {
    /// Uniform lengths in `min..=max`.
    ///
    /// # Panics
    ///
    /// If `min` is 0 or above `max`.
    pub fn uniform(min: u32, max: u32) -> ScanLength {
        assert!(min >= 1 && min <= max, "scan length: bad bounds {min}..={max}");
        ScanLength::Uniform { min, max }
    }

    /// Zipfian lengths in `min..=max` with exponent `exponent`, `min` the most likely.
    ///
    /// # Panics
    ///
    /// If `min` is 0 or above `max`, or as [`Zipf::new`].
    pub fn zipfian(min: u32, max: u32, exponent: f64) -> ScanLength {
        assert!(min >= 1 && min <= max, "scan length: bad bounds {min}..={max}");
        ScanLength::Zipfian { min, zipf: Zipf::new(u64::from(max - min) + 1, exponent) }
    }

    /// One length.
    #[inline]
    pub fn sample_length<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match self {
            ScanLength::Uniform { min, max } => {
                let span = u64::from(max - min) + 1;
                // The draw is below span <= u32::MAX + 1, so min + draw <= max fits.
                min + uniform_below(rng, span) as u32
            }
            ScanLength::Zipfian { min, zipf } => min + (zipf.sample_rank(rng) - 1) as u32,
        }
    }
}

impl Distribution<u32> for ScanLength {
    /// A length; see [`ScanLength::sample_length`].
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        self.sample_length(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn lengths_within_bounds() {
        let seed = 41;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for dist in [ScanLength::uniform(1, 100), ScanLength::zipfian(1, 100, 0.99), ScanLength::uniform(5, 5)] {
            let (min, max) = match &dist {
                ScanLength::Uniform { min, max } => (*min, *max),
                ScanLength::Zipfian { min, zipf } => (*min, *min + zipf.n() as u32 - 1),
            };
            let mut seen_min = false;
            let mut seen_max = false;
            for _ in 0..50_000 {
                let len = dist.sample_length(&mut rng);
                assert!((min..=max).contains(&len), "seed {seed}: {len} outside {min}..={max}");
                seen_min |= len == min;
                seen_max |= len == max;
            }
            assert!(seen_min && seen_max, "seed {seed}: {dist:?} misses an end");
        }
    }

    #[test]
    fn zipfian_favours_short_scans() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        let dist = ScanLength::zipfian(10, 1000, 0.99);
        let short = (0..10_000).filter(|_| dist.sample_length(&mut rng) < 20).count();
        let uniform = ScanLength::uniform(10, 1000);
        let short_uniform = (0..10_000).filter(|_| uniform.sample_length(&mut rng) < 20).count();
        assert!(short > 10 * short_uniform, "{short} vs {short_uniform}");
    }
}
