//! YCSB's "latest" distribution: Zipf over recency, the newest item the most popular.
//!
//! Over items `oldest..end`, where `end` grows as inserts are acknowledged, rank `r`
//! from a [`Zipf`] over the `end - oldest` items picks item `end - r`: the newest item
//! `end - 1` is rank 1. (YCSB's `SkewedLatestGenerator` computes `last - zipf(last)`
//! with a 0-based rank, the same thing.) The Zipf is rebuilt, in O(1), whenever the
//! range has grown since the previous draw.

use crate::dist::Zipf;
use crate::limits::ZIPF_EXPONENT_MAX;
use rand::Rng;

/// Zipf popularity by recency over a growing range of items.
#[derive(Clone, Debug)]
pub struct Latest {
    exponent: f64,
    /// The Zipf over the range of the previous draw.
    zipf: Option<Zipf>,
}

impl Latest {
    /// Recency popularity with Zipf exponent `exponent`.
    ///
    /// # Panics
    ///
    /// If `exponent` is not in `(0, ZIPF_EXPONENT_MAX]`.
    pub fn new(exponent: f64) -> Latest {
        assert!(exponent > 0.0 && exponent <= ZIPF_EXPONENT_MAX, "latest: exponent {exponent}");
        Latest { exponent, zipf: None }
    }

    /// One item of `oldest..end`; `end - 1` is the most likely.
    ///
    /// # Panics
    ///
    /// If the range is empty, or larger than [`Zipf::new`] accepts.
    #[inline]
    pub fn sample_item<R: Rng + ?Sized>(&mut self, rng: &mut R, oldest: u64, end: u64) -> u64 {
        assert!(oldest < end, "latest: empty range {oldest}..{end}");
        let count = end - oldest;
        let zipf = match &mut self.zipf {
            Some(zipf) if zipf.n() == count => zipf,
            slot => slot.insert(Zipf::new(count, self.exponent)),
        };
        let rank = zipf.sample_rank(rng);
        debug_assert!(rank <= count);
        end - rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn newest_is_most_frequent_and_range_is_respected() {
        let seed = 31;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut latest = Latest::new(0.99);
        let mut counts = vec![0u32; 1100];
        for end in [1000u64, 1000, 1050, 1100] {
            for _ in 0..20_000 {
                let item = latest.sample_item(&mut rng, 10, end);
                assert!((10..end).contains(&item), "seed {seed}: {item} outside 10..{end}");
                if end == 1100 {
                    counts[item as usize] += 1;
                }
            }
        }
        let (top, _) = counts.iter().enumerate().max_by_key(|&(_, c)| *c).unwrap();
        assert_eq!(top, 1099, "seed {seed}");
        assert!(counts[1099] > counts[1098] && counts[1098] > counts[1000], "seed {seed}");
    }

    #[test]
    fn single_item() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(32);
        let mut latest = Latest::new(1.0);
        assert_eq!(latest.sample_item(&mut rng, 7, 8), 7);
    }
}
