//! A seeded pseudo-random permutation of `0..n`, computed, not stored.
//!
//! A Feistel network permutes `0..2^b`, the smallest power of two that is at least
//! `max(n, 4)`; cycle-walking (re-applying the network while the result is `≥ n`) turns
//! it into a permutation of `0..n`.
//!
//! The `b`-bit block is split into a high part of `⌈b/2⌉` bits and a low part of
//! `⌊b/2⌋` bits (unbalanced when `b` is odd). Rounds alternate: even rounds XOR the high
//! part with a keyed hash of the low part, odd rounds the low part with a keyed hash of
//! the high part. Each round is its own inverse whatever the hash, so the network is a
//! bijection of `0..2^b`; cycle-walking restricts a bijection to a subset, which is again
//! a bijection, because the cycle through any `x < n` comes back below `n`. The domain
//! is less than `2n`, so a walk takes fewer than two passes on average.
//!
//! The round keys come from the seed alone: equal seeds and sizes give equal
//! permutations in every thread and process.

use crate::dist::{derive_seed, mix64};
use crate::limits::KEY_NUMBER_MAX;

/// Feistel rounds: each part is rewritten three times. Four rounds make a strong
/// pseudo-random permutation of a balanced block (Luby & Rackoff); two more cover the
/// unbalanced split and spread small domains better, for a few nanoseconds.
const ROUNDS: usize = 6;
const _: () = assert!(ROUNDS.is_multiple_of(2), "rounds come in high/low pairs");

/// A bijection of `0..n` onto itself chosen by a seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    /// Bits of the low part of the block; the high part is `high_bits` wide.
    low_bits: u32,
    low_mask: u64,
    high_mask: u64,
    round_keys: [u64; ROUNDS],
}

impl Permutation {
    /// The permutation of `0..n` chosen by `seed`.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or above [`KEY_NUMBER_MAX`].
    pub fn new(n: u64, seed: u64) -> Permutation {
        assert!((1..=KEY_NUMBER_MAX).contains(&n), "permutation: n = {n} outside 1..={KEY_NUMBER_MAX}");
        // ceil(log2 n), at least 2 so that both parts have a bit.
        let bits = (u64::BITS - (n - 1).leading_zeros()).max(2);
        let low_bits = bits / 2;
        let high_bits = bits - low_bits;
        debug_assert!(1u64 << bits >= n && (bits == 2 || 1u64 << (bits - 1) < n));
        let mut round_keys = [0; ROUNDS];
        for (i, key) in round_keys.iter_mut().enumerate() {
            *key = derive_seed(seed, i as u64);
        }
        Permutation { n, low_bits, low_mask: (1 << low_bits) - 1, high_mask: (1 << high_bits) - 1, round_keys }
    }

    /// The size of the permuted range.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The image of `x`.
    ///
    /// # Panics
    ///
    /// If `x >= n`.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        assert!(x < self.n, "permutation: {x} outside 0..{}", self.n);
        let mut y = self.feistel(x);
        // The walk ends within the cycle of x, so within 2^b < 2n passes.
        let mut passes = 1;
        while y >= self.n {
            y = self.feistel(y);
            passes += 1;
            debug_assert!(passes <= 2 * self.n + 4, "permutation: cycle walk from {x} does not return");
        }
        y
    }

    /// One pass of the Feistel network over `0..2^b`.
    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mut high = x >> self.low_bits;
        let mut low = x & self.low_mask;
        for pair in self.round_keys.chunks_exact(2) {
            high ^= mix64(low ^ pair[0]) & self.high_mask;
            low ^= mix64(high ^ pair[1]) & self.low_mask;
        }
        (high << self.low_bits) | low
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_bijection(n: u64, seed: u64) -> Vec<u64> {
        let p = Permutation::new(n, seed);
        let mut seen = vec![false; n as usize];
        let image: Vec<u64> = (0..n).map(|x| p.apply(x)).collect();
        for (x, &y) in image.iter().enumerate() {
            assert!(y < n, "seed {seed}, n {n}: {x} -> {y} out of range");
            assert!(!seen[y as usize], "seed {seed}, n {n}: {y} hit twice");
            seen[y as usize] = true;
        }
        image
    }

    #[test]
    fn bijection_on_every_small_size() {
        for seed in [0, 1, 0xDEAD_BEEF] {
            for n in 1..=1000 {
                assert_bijection(n, seed);
            }
        }
        for n in [4095, 4096, 4097, 65_537] {
            assert_bijection(n, 9);
        }
    }

    #[test]
    fn deterministic_per_seed_and_different_across_seeds() {
        let a = assert_bijection(1000, 42);
        let b = assert_bijection(1000, 42);
        let c = assert_bijection(1000, 43);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Scrambled: the image of the first ten is not the first ten.
        assert!(a[..10].iter().any(|&y| y >= 10), "{:?}", &a[..10]);
    }

    #[test]
    fn huge_domain_maps_into_range() {
        let n = KEY_NUMBER_MAX;
        let p = Permutation::new(n, 1);
        for x in [0, 1, 2, n / 2, n - 2, n - 1] {
            assert!(p.apply(x) < n);
        }
        let odd = (1u64 << 40) + 12_345;
        let p = Permutation::new(odd, 2);
        for x in (0..odd).step_by(1 << 30) {
            assert!(p.apply(x) < odd);
        }
    }
}
