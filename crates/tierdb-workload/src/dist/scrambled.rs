//! Zipf popularity over items whose popular members are scattered, not clustered.
//!
//! A plain Zipf makes items 0, 1, 2, … the most popular; a key space loaded in that
//! order would then have its hot keys side by side (in one page, loaded first). Here a
//! rank from [`Zipf`] is mapped to an item by a seeded [`Permutation`], so the most
//! popular item is a random one and the hot set is spread over the whole range, while
//! the popularity of each rank is still exactly Zipf.
//!
//! YCSB's `ScrambledZipfianGenerator` instead hashes a draw from a fixed 10^10-item
//! zipfian modulo the item count, which distorts the distribution (hash collisions merge
//! ranks); the permutation keeps it exact.

use crate::dist::{Permutation, Zipf};
use rand::Rng;
use rand::distr::Distribution;

/// Items `0..n`, each with a Zipf-distributed popularity; which item has which rank is
/// fixed by a seed.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrambledZipf {
    zipf: Zipf,
    permutation: Permutation,
}

impl ScrambledZipf {
    /// Items `0..n` with exponent `exponent`, ranks assigned to items by `seed`.
    ///
    /// # Panics
    ///
    /// As [`Zipf::new`] and [`Permutation::new`].
    pub fn new(n: u64, exponent: f64, seed: u64) -> ScrambledZipf {
        ScrambledZipf { zipf: Zipf::new(n, exponent), permutation: Permutation::new(n, seed) }
    }

    /// The number of items.
    pub fn n(&self) -> u64 {
        self.zipf.n()
    }

    /// The item that has popularity rank `rank` (1 is the most popular).
    ///
    /// # Panics
    ///
    /// If `rank` is not in `1..=n`.
    #[inline]
    pub fn item_of_rank(&self, rank: u64) -> u64 {
        assert!(rank >= 1, "rank 0 does not exist");
        self.permutation.apply(rank - 1)
    }

    /// One item in `0..n`.
    #[inline]
    pub fn sample_item<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.item_of_rank(self.zipf.sample_rank(rng))
    }
}

impl Distribution<u64> for ScrambledZipf {
    /// An item in `0..n`; see [`ScrambledZipf::sample_item`].
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.sample_item(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn most_frequent_item_is_rank_one_and_not_item_zero() {
        let seed = 11;
        let n = 10_000;
        let dist = ScrambledZipf::new(n, 0.99, seed);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..100_000 {
            let item = dist.sample_item(&mut rng);
            assert!(item < n);
            counts[item as usize] += 1;
        }
        let (top, _) = counts.iter().enumerate().max_by_key(|&(_, c)| *c).unwrap();
        assert_eq!(top as u64, dist.item_of_rank(1), "seed {seed}");
        // The ten hottest items are not the ten lowest numbers.
        let hot: Vec<u64> = (1..=10).map(|r| dist.item_of_rank(r)).collect();
        assert!(hot.iter().any(|&i| i >= 10), "seed {seed}: {hot:?}");
    }

    #[test]
    fn same_seed_same_hot_items() {
        let a = ScrambledZipf::new(1 << 20, 1.0, 5);
        let b = ScrambledZipf::new(1 << 20, 1.0, 5);
        let c = ScrambledZipf::new(1 << 20, 1.0, 6);
        assert_eq!(a.item_of_rank(1), b.item_of_rank(1));
        assert!((1..=8).any(|r| a.item_of_rank(r) != c.item_of_rank(r)));
    }
}
