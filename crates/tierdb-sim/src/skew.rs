//! Workload skew: how accesses concentrate on pages (the Spitfire paper's Figure 3,
//! the cumulative share of accesses against the share of pages, hottest first), and
//! LRU stack distances (Mattson et al.), which give the LRU hit ratio at every
//! capacity in one pass — the H(C) of the §5.1 model.

use serde::Serialize;

use crate::prepared::{Prepared, unpack};

/// Page shares (%) at which the CDF is reported.
pub const CDF_PAGE_PERCENTS: &[f64] =
    &[0.1, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0];

/// One point of the skew CDF.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct CdfPoint {
    /// Share of the pages accessed, hottest first, in percent (one of
    /// [`CDF_PAGE_PERCENTS`]).
    pub pages_percent: f64,
    /// Share of the reads and writes those pages received, in percent; 0 for a trace
    /// without accesses.
    pub accesses_percent: f64,
}

/// The skew CDF of `t`'s reads and writes.
pub fn cdf(t: &Prepared) -> Vec<CdfPoint> {
    let mut counts = vec![0u64; t.pages()];
    for &v in &t.ops {
        let (op, p) = unpack(v);
        if op.is_access() {
            counts[p as usize] += 1;
        }
    }
    cdf_of_counts(counts)
}

/// The skew CDF of pages that received `counts` reads and writes each (any order).
pub fn cdf_of_counts(mut counts: Vec<u64>) -> Vec<CdfPoint> {
    let total: u64 = counts.iter().sum();
    counts.retain(|&c| c > 0);
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let n = counts.len();
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    for c in &counts {
        prefix.push(prefix.last().copied().unwrap_or(0) + c);
    }
    CDF_PAGE_PERCENTS
        .iter()
        .map(|&pct| {
            let k = ((pct / 100.0) * n as f64).ceil() as usize;
            let acc = prefix[k.min(n)];
            CdfPoint {
                pages_percent: pct,
                accesses_percent: if total == 0 { 0.0 } else { 100.0 * acc as f64 / total as f64 },
            }
        })
        .collect()
}

/// The Figure 3 curve as the paper draws it: pages ordered coldest first, the share of
/// the accesses that the coldest `pages_percent` of the pages received, at each of
/// `percents` (0 ..= 100). Pages never read or written are left out.
pub fn coldest_first(counts: &[u64], percents: &[f64]) -> Vec<CdfPoint> {
    let mut sorted: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    sorted.sort_unstable();
    let n = sorted.len();
    let total: u64 = sorted.iter().sum();
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    for c in &sorted {
        prefix.push(prefix.last().copied().unwrap_or(0) + c);
    }
    percents
        .iter()
        .map(|&pct| {
            debug_assert!((0.0..=100.0).contains(&pct), "page share {pct}% out of 0..=100");
            let k = ((pct / 100.0) * n as f64).floor() as usize;
            CdfPoint {
                pages_percent: pct,
                accesses_percent: if total == 0 { 0.0 } else { 100.0 * prefix[k.min(n)] as f64 / total as f64 },
            }
        })
        .collect()
}

/// A histogram of LRU stack distances: `hits_within(c)` accesses would hit an LRU
/// cache of `c` pages.
#[derive(Clone, Debug)]
pub struct StackDistances {
    /// `cumulative[c]`: accesses with distance ≤ c.
    cumulative: Vec<u64>,
    /// Page accesses (reads and writes) of the whole trace, warm-up included: the
    /// denominator of [`StackDistances::hit_ratio`].
    pub accesses: u64,
}

impl StackDistances {
    /// One pass over `t` with a Fenwick tree over access times: O(n log n).
    pub fn new(t: &Prepared) -> StackDistances {
        let n = t.ops.len();
        let mut tree = vec![0i32; n + 1];
        let add = |tree: &mut [i32], mut i: usize, d: i32| {
            i += 1;
            while i < tree.len() {
                tree[i] += d;
                i += i & i.wrapping_neg();
            }
        };
        let sum = |tree: &[i32], mut i: usize| -> i64 {
            // Sum of positions 0..i.
            let mut s = 0i64;
            while i > 0 {
                s += i64::from(tree[i]);
                i &= i - 1;
            }
            s
        };
        let mut last = vec![usize::MAX; t.pages()];
        let mut hist = vec![0u64; t.pages() + 2];
        let mut accesses = 0u64;
        let mut live = 0i64;
        for (time, &v) in t.ops.iter().enumerate() {
            let (op, p) = unpack(v);
            if !op.is_access() {
                continue;
            }
            accesses += 1;
            let prev = last[p as usize];
            if prev != usize::MAX {
                // Distinct pages touched after `prev`, plus this one.
                let d = (live - sum(&tree, prev + 1)) as usize + 1;
                hist[d] += 1;
                add(&mut tree, prev, -1);
            } else {
                live += 1;
            }
            add(&mut tree, time, 1);
            last[p as usize] = time;
        }
        let mut cumulative = hist;
        for i in 1..cumulative.len() {
            cumulative[i] += cumulative[i - 1];
        }
        StackDistances { cumulative, accesses }
    }

    /// LRU hits of a cache of `capacity` pages.
    pub fn hits_within(&self, capacity: u64) -> u64 {
        let i = (capacity as usize).min(self.cumulative.len() - 1);
        self.cumulative[i]
    }

    /// The LRU hit ratio at `capacity` pages.
    pub fn hit_ratio(&self, capacity: u64) -> f64 {
        if self.accesses == 0 { 0.0 } else { self.hits_within(capacity) as f64 / self.accesses as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Cache, Lru};
    use crate::trace::{Header, Op, Record, Trace};

    fn prepared(pages: &[u64]) -> Prepared {
        Prepared::new(&Trace {
            header: Header { page_size_bytes: 4096, source: String::new() },
            records: pages.iter().map(|&p| Record::access(Op::Read, p)).collect(),
        })
    }

    #[test]
    fn stack_distances_agree_with_an_lru_cache_at_every_size() {
        let mut x = 99u64;
        let pages: Vec<u64> = (0..20_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
                (300f64.powf(u)) as u64
            })
            .collect();
        let t = prepared(&pages);
        let sd = StackDistances::new(&t);
        for c in [1usize, 2, 5, 17, 64, 150, 299, 400] {
            let mut lru = Lru::new(c, t.pages());
            let hits = t.ops.iter().filter(|&&v| lru.access(unpack(v).1 as u32)).count() as u64;
            assert_eq!(sd.hits_within(c as u64), hits, "capacity {c}");
        }
    }

    #[test]
    fn cdf_of_a_skewed_trace() {
        // Page 0 takes 90 of 100 accesses, ten others one each.
        let mut pages = vec![0u64; 90];
        pages.extend(1..=10);
        let c = cdf(&prepared(&pages));
        let at = |pct: f64| c.iter().find(|p| p.pages_percent == pct).unwrap().accesses_percent;
        assert_eq!(at(10.0), 91.0); // 10% of 11 pages: the hottest two
        assert_eq!(at(100.0), 100.0);
    }

    #[test]
    fn coldest_first_is_the_complement_of_hottest_first() {
        // Ten pages: 1, 2, …, 10 accesses (55 in all).
        let counts: Vec<u64> = (1..=10).collect();
        let c = coldest_first(&counts, &[0.0, 30.0, 100.0]);
        assert_eq!(c[0].accesses_percent, 0.0);
        assert!((c[1].accesses_percent - 100.0 * 6.0 / 55.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c[2].accesses_percent, 100.0);
        let hot = cdf_of_counts(counts);
        let h70 = hot.iter().find(|p| p.pages_percent == 70.0).unwrap().accesses_percent;
        assert!((h70 + c[1].accesses_percent - 100.0).abs() < 1e-9);
    }
}
