//! Samplers of integers: the distributions a workload draws keys and lengths from.
//!
//! All samplers are immutable after construction except [`Latest`], whose key range
//! grows with the run, and take the random number generator as an argument, so one
//! sampler may serve many threads, each with its own generator. Those that do not
//! depend on outside state implement [`rand::distr::Distribution`].
//!
//! The primitive draws ([`unit_f64`], [`uniform_below`]) are written here rather than
//! taken from `rand`'s distributions so that a seed produces the same workload whatever
//! version of `rand` builds it: only the raw 64-bit output of the generator is used.

mod exponential;
mod histogram;
mod hotspot;
mod latest;
mod permutation;
mod scan_length;
mod scrambled;
mod zipf;

pub use exponential::Exponential;
pub use histogram::Histogram;
pub use hotspot::Hotspot;
pub use latest::Latest;
pub use permutation::Permutation;
pub use scan_length::ScanLength;
pub use scrambled::ScrambledZipf;
pub use zipf::Zipf;

use rand::Rng;

/// A uniform double in `[0, 1)` from the top 53 bits of one 64-bit draw.
#[inline]
pub fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// A uniform integer in `0..n` by multiply-and-shift of one 64-bit draw (Lemire).
///
/// The bias is below `n / 2^64` per value, under 2^-22 for the largest key space
/// ([`crate::limits::KEY_NUMBER_MAX`]); no rejection loop is needed at that precision.
///
/// # Panics
///
/// If `n` is 0.
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    assert!(n > 0, "uniform_below(0): empty range");
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// A bijective 64-bit mixer (the `SplitMix64` finaliser): a cheap, well-spread hash.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derives the seed of an independent stream (a thread, a permutation, …) from a run
/// seed, so that streams of one run do not overlap and a run seed reproduces them all.
#[inline]
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    mix64(seed ^ mix64(stream.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Goodness-of-fit helpers shared by the samplers' tests.

    /// Pearson's chi-square statistic of observed counts against expected probabilities.
    pub fn chi_square(observed: &[u64], probabilities: &[f64]) -> f64 {
        assert_eq!(observed.len(), probabilities.len());
        let total: u64 = observed.iter().sum();
        let total = total as f64;
        observed
            .iter()
            .zip(probabilities)
            .map(|(&o, &p)| {
                let e = p * total;
                assert!(e >= 5.0, "expected count {e} too small for a chi-square test");
                (o as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// Upper critical values of the chi-square distribution at p = 0.001, by degrees of
    /// freedom (from the standard tables; e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.4).
    pub fn chi_square_critical_p001(degrees_of_freedom: usize) -> f64 {
        match degrees_of_freedom {
            9 => 27.877,
            19 => 43.820,
            49 => 85.351,
            99 => 148.230,
            _ => panic!("no critical value tabulated for {degrees_of_freedom} degrees of freedom"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn unit_f64_is_in_unit_interval() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for _ in 0..10_000 {
            let u = unit_f64(&mut rng);
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }

    #[test]
    fn uniform_below_fits_uniform() {
        let seed = 2;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = [0u64; 10];
        for _ in 0..100_000 {
            counts[uniform_below(&mut rng, 10) as usize] += 1;
        }
        let chi = chi_square(&counts, &[0.1; 10]);
        assert!(chi < chi_square_critical_p001(9), "seed {seed}: chi-square {chi}, counts {counts:?}");
        assert_eq!(uniform_below(&mut rng, 1), 0);
    }

    #[test]
    fn derived_seeds_differ_per_stream() {
        let a: Vec<u64> = (0..100).map(|s| derive_seed(7, s)).collect();
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(a.len(), b.len());
        assert_ne!(derive_seed(7, 0), derive_seed(8, 0));
    }
}
