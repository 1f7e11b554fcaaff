//! YCSB's hotspot distribution: a fraction of the items gets a fraction of the draws.
//!
//! Items `start..start + count` split into a hot set, the first
//! `floor(count × data_fraction)` items, and the cold rest. A draw goes to the hot set
//! with probability `op_fraction`, and is uniform within the set it goes to. As in YCSB
//! the hot items are the lowest numbers; with hashed key names they are still spread
//! over the key space. An empty set never receives draws (YCSB divides by zero there).

use crate::dist::{uniform_below, unit_f64};
use rand::Rng;
use rand::distr::Distribution;

/// `op_fraction` of the draws are uniform over the first `data_fraction` of the items,
/// the rest uniform over the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Hotspot {
    start: u64,
    hot_count: u64,
    cold_count: u64,
    op_fraction: f64,
}

impl Hotspot {
    /// Items `start..start + count`, hot set `data_fraction` of them, receiving
    /// `op_fraction` of the draws.
    ///
    /// # Panics
    ///
    /// If `count` is 0, a fraction is outside `[0, 1]`, or the range overflows.
    pub fn new(start: u64, count: u64, data_fraction: f64, op_fraction: f64) -> Hotspot {
        assert!(count > 0, "hotspot: no items");
        assert!((0.0..=1.0).contains(&data_fraction), "hotspot: data fraction {data_fraction}");
        assert!((0.0..=1.0).contains(&op_fraction), "hotspot: operation fraction {op_fraction}");
        assert!(start.checked_add(count).is_some(), "hotspot: range {start} + {count} overflows");
        let hot_count = ((count as f64 * data_fraction) as u64).min(count);
        Hotspot { start, hot_count, cold_count: count - hot_count, op_fraction }
    }

    /// The hot items.
    pub fn hot_range(&self) -> std::ops::Range<u64> {
        self.start..self.start + self.hot_count
    }

    /// One item.
    #[inline]
    pub fn sample_item<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let hot = unit_f64(rng) < self.op_fraction;
        if (hot && self.hot_count > 0) || self.cold_count == 0 {
            self.start + uniform_below(rng, self.hot_count)
        } else {
            self.start + self.hot_count + uniform_below(rng, self.cold_count)
        }
    }
}

impl Distribution<u64> for Hotspot {
    /// An item; see [`Hotspot::sample_item`].
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
    fn hot_set_gets_its_share() {
        let seed = 21;
        let dist = Hotspot::new(100, 1000, 0.2, 0.8);
        assert_eq!(dist.hot_range(), 100..300);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let samples = 100_000;
        let mut hot = 0;
        for _ in 0..samples {
            let item = dist.sample_item(&mut rng);
            assert!((100..1100).contains(&item), "seed {seed}: {item}");
            hot += u32::from(dist.hot_range().contains(&item));
        }
        let share = f64::from(hot) / f64::from(samples);
        assert!((share - 0.8).abs() < 0.01, "seed {seed}: hot share {share}");
    }

    #[test]
    fn empty_sets_receive_nothing() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
        let all_cold = Hotspot::new(0, 10, 0.0, 0.9);
        let all_hot = Hotspot::new(0, 10, 1.0, 0.1);
        for _ in 0..1000 {
            assert!(all_cold.sample_item(&mut rng) < 10);
            assert!(all_hot.sample_item(&mut rng) < 10);
        }
        let one = Hotspot::new(5, 1, 0.5, 0.5);
        assert_eq!(one.sample_item(&mut rng), 5);
    }
}
