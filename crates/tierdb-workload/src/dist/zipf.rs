//! The exact Zipf distribution over ranks `1..=n`, by rejection-inversion.
//!
//! `P(k) = k^-s / H(n, s)` for any exponent `s > 0`, 1.0 included, and `n` up to
//! [`KEY_NUMBER_MAX`]. Set-up and sampling are O(1): no table of harmonic numbers, unlike
//! YCSB's `ZipfianGenerator`, whose closed-form approximation (Gray et al.) is not exact
//! and is undefined at `s = 1`.
//!
//! # Method
//!
//! Hörmann & Derflinger, "Rejection-inversion to generate variates from monotone
//! discrete distributions", ACM TOMACS 6(3), 1996, with the integral shifted so that it
//! has a limit at `s = 1` (the form Apache Commons RNG uses):
//!
//! * the hat `h(x) = x^-s` is convex and decreasing, so for every `k ≥ 2` the interval
//!   `[H(k - ½), H(k + ½)]`, where `H(x) = ∫₁ˣ h = (x^(1-s) - 1) / (1 - s)` (`ln x` at
//!   `s = 1`), is at least `h(k)` long (midpoint rule on a convex function);
//! * rank 1 gets the interval `[H(3/2) - 1, H(3/2)]`, exactly `h(1) = 1` long;
//! * draw `u` uniformly from `(H(3/2) - 1, H(n + ½)]`, let `x = H⁻¹(u)` and `k` be `x`
//!   rounded to the nearest integer, clamped to `1..=n`; accept `k` if `u` falls in the
//!   top `h(k)` of its interval, `u ≥ H(k + ½) - h(k)`, else draw again. Every rank is then
//!   accepted with probability proportional to `h(k)`: the exact distribution.
//! * the squeeze: `k - x ≤ 2 - H⁻¹(H(5/2) - h(2))` implies acceptance (the accepted part
//!   of rank `k`'s interval, measured back from `k`, is narrowest at `k = 2`) and saves
//!   evaluating `H` for most draws.
//!
//! `(e^y - 1)/y` and `ln(1 + y)/y` are evaluated by Taylor series near `y = 0`, which
//! is what makes `s = 1` (and `s` within 1e-8 of it) exact rather than 0/0.

use crate::dist::unit_f64;
use crate::limits::{KEY_NUMBER_MAX, ZIPF_CANDIDATES_MAX, ZIPF_EXPONENT_MAX};
use rand::Rng;
use rand::distr::Distribution;

/// Below this magnitude the helper functions use their Taylor series.
const TAYLOR_THRESHOLD: f64 = 1e-8;

/// The Zipf distribution over ranks `1..=n` with exponent `s`: rank 1 is the most
/// probable, `P(k) ∝ k^-s`.
#[derive(Clone, Debug, PartialEq)]
pub struct Zipf {
    n: u64,
    exponent: f64,
    /// `H(3/2) - h(1)`: the lower end of the range of `u`.
    h_integral_x1: f64,
    /// `H(n + ½)`: the upper end of the range of `u`.
    h_integral_n: f64,
    /// Candidates with `k - x` at most this are accepted without evaluating `H`.
    squeeze: f64,
}

impl Zipf {
    /// The Zipf distribution over `1..=n` with exponent `exponent`.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or above [`KEY_NUMBER_MAX`], or `exponent` is not in
    /// `(0, ZIPF_EXPONENT_MAX]`. Workload parameters are validated before they get here.
    pub fn new(n: u64, exponent: f64) -> Zipf {
        assert!((1..=KEY_NUMBER_MAX).contains(&n), "zipf: n = {n} outside 1..={KEY_NUMBER_MAX}");
        assert!(
            exponent > 0.0 && exponent <= ZIPF_EXPONENT_MAX,
            "zipf: exponent {exponent} outside (0, {ZIPF_EXPONENT_MAX}]"
        );
        let h_integral_x1 = h_integral(1.5, exponent) - 1.0;
        let h_integral_n = h_integral(n as f64 + 0.5, exponent);
        let squeeze = 2.0 - h_integral_inverse(h_integral(2.5, exponent) - h(2.0, exponent), exponent);
        debug_assert!(h_integral_x1 < h_integral_n, "zipf: empty range of u for n = {n}, s = {exponent}");
        Zipf { n, exponent, h_integral_x1, h_integral_n, squeeze }
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent `s`.
    pub fn exponent(&self) -> f64 {
        self.exponent
    }

    /// One rank in `1..=n`.
    ///
    /// # Panics
    ///
    /// If [`ZIPF_CANDIDATES_MAX`] candidates in a row are rejected, which with a working
    /// generator does not happen (each is accepted with probability above one half).
    #[inline]
    pub fn sample_rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let s = self.exponent;
        for _ in 0..ZIPF_CANDIDATES_MAX {
            // 1. u uniform in (H(3/2) - 1, H(n + 1/2)]: unit_f64 is in [0, 1).
            let u = self.h_integral_n + unit_f64(rng) * (self.h_integral_x1 - self.h_integral_n);
            // 2. Invert the hat's integral and round to the rank whose interval holds u.
            let x = h_integral_inverse(u, s);
            // `as` saturates, so a (never expected) NaN or overflow still lands in range.
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            // 3. Accept by the squeeze, else by the exact test.
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= h_integral(kf + 0.5, s) - h(kf, s) {
                debug_assert!((1..=self.n).contains(&k));
                return k;
            }
        }
        panic!(
            "zipf(n = {}, s = {}): {ZIPF_CANDIDATES_MAX} candidates rejected in a row; is the generator broken?",
            self.n, self.exponent
        );
    }
}

impl Distribution<u64> for Zipf {
    /// A rank in `1..=n`; see [`Zipf::sample_rank`].
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.sample_rank(rng)
    }
}

/// The hat function `h(x) = x^-s`.
#[inline]
fn h(x: f64, s: f64) -> f64 {
    (-s * x.ln()).exp()
}

/// `H(x) = ∫₁ˣ t^-s dt = (x^(1-s) - 1) / (1 - s)`, `ln x` at `s = 1`, written as
/// `ln x · (e^((1-s) ln x) - 1) / ((1-s) ln x)` so that the limit needs no special case.
#[inline]
fn h_integral(x: f64, s: f64) -> f64 {
    let log_x = x.ln();
    expm1_over_x((1.0 - s) * log_x) * log_x
}

/// `H⁻¹(y) = (1 + (1-s) y)^(1/(1-s))`, `e^y` at `s = 1`, as `exp(y · ln(1+t)/t)` with
/// `t = (1-s) y`. `t < -1` only by rounding at the lower end (`s > 1`); it is clamped,
/// which gives `x = 0` and so rank 1.
#[inline]
fn h_integral_inverse(y: f64, s: f64) -> f64 {
    let t = (y * (1.0 - s)).max(-1.0);
    (ln1p_over_x(t) * y).exp()
}

/// `ln(1 + x) / x`, and its limit 1 at `x = 0`.
#[inline]
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > TAYLOR_THRESHOLD { x.ln_1p() / x } else { 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)) }
}

/// `(e^x - 1) / x`, and its limit 1 at `x = 0`.
#[inline]
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > TAYLOR_THRESHOLD { x.exp_m1() / x } else { 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::test_util::{chi_square, chi_square_critical_p001};
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    /// Exact probabilities of ranks `1..=n`.
    fn pmf(n: u64, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    fn assert_fits(n: u64, s: f64, samples: u32, seed: u64) {
        let zipf = Zipf::new(n, s);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            let k = zipf.sample_rank(&mut rng);
            assert!((1..=n).contains(&k), "seed {seed}: rank {k} outside 1..={n}");
            counts[k as usize - 1] += 1;
        }
        let chi = chi_square(&counts, &pmf(n, s));
        let critical = chi_square_critical_p001(n as usize - 1);
        assert!(chi < critical, "seed {seed}, n {n}, s {s}: chi-square {chi} >= {critical}; counts {counts:?}");
    }

    #[test]
    fn fits_exact_pmf_for_several_exponents() {
        for (i, s) in [0.5, 0.99, 1.0, 1.5].into_iter().enumerate() {
            assert_fits(20, s, 200_000, 100 + i as u64);
        }
        assert_fits(50, 1.0, 200_000, 200);
        // Just off 1: the Taylor branch of the helpers on one side of the threshold.
        assert_fits(20, 1.0 + 1e-9, 200_000, 201);
        assert_fits(20, 1.0 - 1e-7, 200_000, 202);
    }

    #[test]
    fn chi_square_detects_a_slightly_wrong_exponent() {
        // The fit test has power: draws with s = 1.0 do not pass as s = 1.05.
        let seed = 203;
        let zipf = Zipf::new(20, 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = vec![0u64; 20];
        for _ in 0..200_000 {
            counts[zipf.sample_rank(&mut rng) as usize - 1] += 1;
        }
        let chi = chi_square(&counts, &pmf(20, 1.05));
        assert!(chi > chi_square_critical_p001(19), "seed {seed}: chi-square {chi}");
    }

    #[test]
    fn one_rank_is_always_rank_one() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for s in [0.1, 0.99, 1.0, 2.0, ZIPF_EXPONENT_MAX] {
            let zipf = Zipf::new(1, s);
            for _ in 0..1000 {
                assert_eq!(zipf.sample_rank(&mut rng), 1, "s {s}");
            }
        }
    }

    #[test]
    fn huge_domain_stays_in_range_and_has_the_right_head() {
        let seed = 4;
        let n = 1u64 << 40;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for s in [0.2, 0.99, 1.5] {
            let zipf = Zipf::new(n, s);
            for _ in 0..20_000 {
                let k = zipf.sample_rank(&mut rng);
                assert!((1..=n).contains(&k), "seed {seed}, s {s}: rank {k}");
            }
        }
        // s = 1: P(1) = 1 / H_n with H_n = ln n + γ + 1/(2n) - …
        let zipf = Zipf::new(n, 1.0);
        let samples = 200_000;
        let mut ones = 0u32;
        let mut max_rank = 0;
        for _ in 0..samples {
            let k = zipf.sample_rank(&mut rng);
            assert!((1..=n).contains(&k), "seed {seed}: rank {k}");
            max_rank = max_rank.max(k);
            ones += u32::from(k == 1);
        }
        let p1 = 1.0 / ((n as f64).ln() + 0.577_215_664_901_532_9);
        let observed = f64::from(ones) / f64::from(samples);
        let sigma = (p1 * (1.0 - p1) / f64::from(samples)).sqrt();
        assert!((observed - p1).abs() < 5.0 * sigma, "seed {seed}: P(1) observed {observed}, expected {p1}");
        // About half the mass lies above sqrt(n) (ln is halved there), so large ranks occur.
        assert!(max_rank > n / 1000, "seed {seed}: largest rank {max_rank}");
    }

    #[test]
    fn extreme_exponent_is_rank_one_mostly() {
        let zipf = Zipf::new(1 << 30, ZIPF_EXPONENT_MAX);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let ones = (0..10_000).filter(|_| zipf.sample_rank(&mut rng) == 1).count();
        // P(1) = 1 / zeta(10) ≈ 0.99901.
        assert!(ones > 9_950, "{ones}");
    }

    #[test]
    #[should_panic(expected = "outside 1..=")]
    fn empty_domain_panics() {
        let _ = Zipf::new(0, 1.0);
    }

    #[test]
    #[should_panic(expected = "exponent")]
    fn zero_exponent_panics() {
        let _ = Zipf::new(10, 0.0);
    }
}
