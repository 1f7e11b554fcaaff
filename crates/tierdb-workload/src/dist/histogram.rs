//! YCSB's histogram distribution: lengths in blocks, each bucket weighted by a count.
//!
//! YCSB's `HistogramGenerator` holds `buckets[i]` (a count per bucket) and a block size
//! `b`. A draw takes `n` uniform in `0..area` (`area = Σ buckets`), then for `i` from 0
//! subtracts `buckets[i]` from `n` and returns `(i + 1) × b` as soon as `n ≤ 0`; past
//! the second-to-last bucket it returns `(len - 1) × b`. We reproduce that exactly,
//! quirks included: bucket 0 (length `b`) gets one draw in `area` more than its count,
//! and the last bucket's draws give the same length as the one before it.

use crate::dist::uniform_below;
use rand::Rng;
use rand::distr::Distribution;

/// Lengths drawn as YCSB's `HistogramGenerator` draws them.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    block_size: u64,
    buckets: Box<[u64]>,
    /// `Σ buckets`, above 0.
    area: u64,
}

impl Histogram {
    /// The histogram of `buckets` (counts) with blocks of `block_size`.
    ///
    /// # Panics
    ///
    /// If `buckets` is empty, every count is 0, or the counts or the longest length
    /// overflow a `u64`.
    pub fn new(block_size: u64, buckets: Vec<u64>) -> Histogram {
        assert!(!buckets.is_empty(), "histogram: no buckets");
        let area = buckets.iter().try_fold(0u64, |sum, &c| sum.checked_add(c)).expect("histogram: counts overflow");
        assert!(area > 0, "histogram: every bucket is empty");
        assert!((buckets.len() as u64).checked_mul(block_size).is_some(), "histogram: lengths overflow");
        Histogram { block_size, buckets: buckets.into_boxed_slice(), area }
    }

    /// The block size.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// The number of buckets.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// The longest length a draw can give: `(len - 1) × b`.
    pub fn max_length(&self) -> u64 {
        (self.buckets.len() as u64 - 1) * self.block_size
    }

    /// The exact mean of the draws (not YCSB's `mean()`, which weighs bucket `i` as
    /// length `i × b`).
    pub fn mean_length(&self) -> f64 {
        // Way out i < last takes the numbers in (S(i-1), S(i)] (S the running sum of the
        // counts, S(-1) = -1), the final way those above S(last - 1); all within
        // 0..area.
        let top = self.area as i128 - 1;
        let last = self.buckets.len() - 1;
        let (mut low, mut running) = (-1i128, 0i128);
        let mut sum = 0.0;
        for (i, &count) in self.buckets[..last].iter().enumerate() {
            running += i128::from(count);
            let taken = (running.min(top) - low).max(0);
            sum += taken as f64 * ((i as u64 + 1) * self.block_size) as f64;
            low = low.max(running);
        }
        sum += (top - low).max(0) as f64 * (last as u64 * self.block_size) as f64;
        sum / self.area as f64
    }

    /// One length.
    #[inline]
    pub fn sample_length<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let mut number = uniform_below(rng, self.area);
        let last = self.buckets.len() - 1;
        for (i, &count) in self.buckets[..last].iter().enumerate() {
            // YCSB: number -= buckets[i]; if (number <= 0) return (i + 1) * b.
            if number <= count {
                return (i as u64 + 1) * self.block_size;
            }
            number -= count;
        }
        last as u64 * self.block_size
    }
}

impl Distribution<u64> for Histogram {
    /// A length; see [`Histogram::sample_length`].
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.sample_length(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    /// YCSB's loop, literally, for a given `number`.
    fn ycsb(buckets: &[u64], block_size: u64, number: u64) -> u64 {
        let mut number = number as i64;
        let mut i = 0;
        while i < buckets.len() - 1 {
            number -= buckets[i] as i64;
            if number <= 0 {
                return (i as u64 + 1) * block_size;
            }
            i += 1;
        }
        i as u64 * block_size
    }

    #[test]
    fn every_number_leaves_where_ycsb_leaves() {
        let buckets = vec![3, 0, 5, 2, 4];
        let h = Histogram::new(10, buckets.clone());
        let mut counts = std::collections::HashMap::new();
        for number in 0..h.area {
            *counts.entry(ycsb(&buckets, 10, number)).or_insert(0u64) += 1;
        }
        // The same numbers through our loop (uniform_below is replaced by each value).
        let mut ours = std::collections::HashMap::new();
        for number in 0..h.area {
            let mut n = number;
            let mut got = 4 * 10;
            for (i, &c) in buckets[..4].iter().enumerate() {
                if n <= c {
                    got = (i as u64 + 1) * 10;
                    break;
                }
                n -= c;
            }
            *ours.entry(got).or_insert(0u64) += 1;
        }
        assert_eq!(counts, ours);
        // The exact mean agrees with the counts.
        let mean = counts.iter().map(|(&len, &c)| len as f64 * c as f64).sum::<f64>() / h.area as f64;
        assert!((h.mean_length() - mean).abs() < 1e-9, "{} vs {mean}", h.mean_length());
        assert_eq!(h.max_length(), 40);
    }

    #[test]
    fn draws_follow_the_counts() {
        let seed = 61;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let h = Histogram::new(100, vec![10, 60, 30, 0]);
        let mut counts = std::collections::BTreeMap::new();
        let draws = 100_000;
        for _ in 0..draws {
            *counts.entry(h.sample_length(&mut rng)).or_insert(0u32) += 1;
        }
        // Lengths 100, 200, 300 (bucket 3 is empty and would give 300 too).
        assert_eq!(counts.keys().copied().collect::<Vec<_>>(), [100, 200, 300], "seed {seed}");
        let share = |len| f64::from(counts[&len]) / f64::from(draws);
        assert!((share(200) - 0.6).abs() < 0.01, "seed {seed}: {counts:?}");
        assert!((share(300) - 0.3).abs() < 0.01, "seed {seed}: {counts:?}");
    }

    #[test]
    fn one_bucket_gives_length_zero() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let h = Histogram::new(64, vec![7]);
        assert_eq!(h.sample_length(&mut rng), 0);
        assert_eq!((h.max_length(), h.mean_length()), (0, 0.0));
    }
}
