//! The storage-hierarchy recommender (Spitfire paper §5.2): a grid search over DRAM /
//! NVM / SSD capacities within a budget, ranked by modelled throughput per dollar.
//!
//! The grid: DRAM and NVM capacities are 0 or powers of two (in pages) up to the
//! first power of two that holds the whole trace; SSD is absent or the smallest power
//! of two that holds it (a larger SSD only costs more). The database must fit in the
//! lowest level, so a hierarchy without SSD needs NVM that holds every page. A
//! hierarchy "without DRAM" still gets [`DRAM_PAGES_NO_DRAM`] frames to work in, not
//! charged, as the engine cannot run without any.
//!
//! Steps:
//! 1. Enumerate the triples within the budget.
//! 2. Estimate each with the §5.1 model over the trace's LRU stack distances (one pass
//!    for all capacities) and drop those whose estimated throughput per dollar is
//!    below the best estimate divided by [`MODEL_FILTER_FACTOR`]: the model errs, but
//!    not by that much (it agrees with the simulation within a few percent where the
//!    policy keeps the tiers exclusive), so what it drops could not have won.
//! 3. Simulate the rest in parallel (rayon), each through the policy, and rank.

use rayon::prelude::*;
use serde::Serialize;

use crate::error::SimError;
use crate::model::{Profiles, hierarchy_time_ns, level_times_ns, modelled_time};
use crate::prepared::Prepared;
use crate::sim::{SimConfig, SimResult, simulate};
use crate::skew::StackDistances;

/// Frames a hierarchy "without DRAM" still has.
pub const DRAM_PAGES_NO_DRAM: u64 = 16;
/// How far below the best model estimate a candidate may be and still be simulated.
pub const MODEL_FILTER_FACTOR: f64 = 1.5;
/// The smallest non-zero capacity of the grid, as a fraction of the trace's pages
/// (2^-GRID_SPAN_LOG2): a tier far smaller than that changes nothing but the cost.
pub const GRID_SPAN_LOG2: u32 = 10;
/// Largest power-of-two step of the grid (2^30 pages).
pub const GRID_LOG2_MAX: u32 = 30;

/// One candidate hierarchy and, if simulated, its result.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// DRAM capacity, pages; 0 for a hierarchy "without DRAM", simulated with
    /// [`DRAM_PAGES_NO_DRAM`] frames that are not charged.
    pub dram_pages: u64,
    /// NVM capacity, pages; 0 for no NVM.
    pub nvm_pages: u64,
    /// SSD capacity, pages: 0 for no SSD, else the smallest power of two that holds
    /// the trace's pages.
    pub ssd_pages: u64,
    /// Price of the three capacities at the profiles' dollars per GB.
    pub cost_usd: f64,
    /// §5.1 estimate: accesses per second.
    pub model_throughput_per_s: f64,
    /// Simulated and modelled: accesses per second (0 if filtered out).
    pub throughput_per_s: f64,
    /// `throughput_per_s` per dollar of `cost_usd`: what candidates are ranked by.
    pub throughput_per_usd: f64,
    /// Whether the candidate was simulated (those the model filters out are counted
    /// in [`Recommendation::filtered_by_model`], not listed).
    pub simulated: bool,
    /// The simulation's counters, if simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<SimResult>,
}

/// What the recommender was asked and found.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// The budget, dollars; every candidate costs at most this.
    pub budget_usd: f64,
    /// The policy every candidate was simulated with.
    pub policy: String,
    /// Distinct pages of the trace.
    pub pages: u64,
    /// Bytes per page of the trace (prices are charged per byte of capacity).
    pub page_size_bytes: u32,
    /// Grid points within the budget, before the model's filter.
    pub candidates_in_budget: usize,
    /// Grid points the §5.1 estimate dropped without simulating them.
    pub filtered_by_model: usize,
    /// Simulated candidates, best throughput per dollar first.
    pub ranked: Vec<Candidate>,
    /// Wall time of the whole search, seconds.
    pub elapsed_s: f64,
    /// Threads of the rayon pool the simulations ran on.
    pub threads: usize,
}

/// Runs the grid for `base` (its policy, seed and warm-up; capacities are the grid's).
///
/// # Errors
/// `NoAccesses` for a trace without page accesses (there is nothing to size a
/// hierarchy for); `Config` if nothing fits the budget; the errors of [`simulate`].
pub fn recommend(
    t: &Prepared,
    base: &SimConfig,
    profiles: &Profiles,
    budget_usd: f64,
) -> Result<Recommendation, SimError> {
    let start = std::time::Instant::now();
    if t.accesses() == 0 {
        return Err(SimError::NoAccesses {
            what: format!(
                "the trace's {} records hold no page access (read or write) to size a hierarchy for",
                t.ops.len()
            ),
        });
    }
    let pages = t.pages() as u64;
    let ps = u64::from(t.page_size_bytes);
    let top = pages.max(1).next_power_of_two();
    let steps: Vec<u64> = std::iter::once(0)
        .chain(
            (0..=GRID_LOG2_MAX)
                .map(|k| 1u64 << k)
                .filter(|&c| c >= (top >> GRID_SPAN_LOG2).max(1))
                .take_while(|&c| c <= top),
        )
        .collect();
    // 1. The grid within the budget.
    let mut grid = Vec::new();
    for &d in &steps {
        for &n in &steps {
            for s in [0, top] {
                if s == 0 && n <= pages {
                    continue; // without SSD, NVM holds everything (and a free frame)
                }
                if d == 0 && n == 0 {
                    continue;
                }
                let cost = profiles.cost_usd(d * ps, n * ps, s * ps);
                if cost <= budget_usd {
                    grid.push((d, n, s, cost));
                }
            }
        }
    }
    if grid.is_empty() {
        let cheapest = profiles.cost_usd(DRAM_PAGES_NO_DRAM * ps, 0, top * ps);
        return Err(SimError::Config {
            what: format!(
                "no hierarchy fits a budget of ${budget_usd}; the cheapest holding the trace costs ${cheapest:.2}"
            ),
        });
    }
    // 2. The §5.1 estimate as a filter.
    let sd = StackDistances::new(t);
    let lt = level_times_ns(profiles, ps);
    let estimate = |&(d, n, s, cost): &(u64, u64, u64, f64)| {
        let time = hierarchy_time_ns([d, n, s], lt, |c| sd.hit_ratio(c));
        let tput = if time > 0.0 { 1e9 / time } else { 0.0 };
        (tput, tput / cost.max(1e-9))
    };
    let best = grid.iter().map(|c| estimate(c).1).fold(0.0, f64::max);
    let in_budget = grid.len();
    let mut keep = Vec::new();
    let mut filtered = 0;
    for c in grid {
        let (tput, per_usd) = estimate(&c);
        if per_usd * MODEL_FILTER_FACTOR >= best {
            keep.push((c, tput));
        } else {
            filtered += 1;
        }
    }
    // 3. Simulate the rest in parallel.
    let runs: Result<Vec<Candidate>, SimError> = keep
        .par_iter()
        .map(|&((d, n, s, cost), model)| {
            let mut cfg = base.clone();
            cfg.dram_pages = d.max(if d == 0 { DRAM_PAGES_NO_DRAM } else { 1 }) as usize;
            cfg.nvm_pages = n as usize;
            cfg.has_ssd = s > 0;
            let r = simulate(t, &cfg)?;
            let m = modelled_time(&r, ps, profiles);
            Ok(Candidate {
                dram_pages: d,
                nvm_pages: n,
                ssd_pages: s,
                cost_usd: cost,
                model_throughput_per_s: model,
                throughput_per_s: m.throughput_per_s,
                throughput_per_usd: m.throughput_per_s / cost.max(1e-9),
                simulated: true,
                result: Some(r),
            })
        })
        .collect();
    let mut ranked = runs?;
    ranked.sort_by(|a, b| b.throughput_per_usd.total_cmp(&a.throughput_per_usd));
    Ok(Recommendation {
        budget_usd,
        policy: base.policy.clone(),
        pages,
        page_size_bytes: t.page_size_bytes,
        candidates_in_budget: in_budget,
        filtered_by_model: filtered,
        ranked,
        elapsed_s: start.elapsed().as_secs_f64(),
        threads: rayon::current_num_threads(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Header, Op, Record, Trace};

    #[test]
    fn the_grid_respects_the_budget_and_ranks_by_throughput_per_dollar() {
        let mut x = 1u64;
        let records = (0..40_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
                Record::access(Op::Read, 4000f64.powf(u) as u64)
            })
            .collect();
        let t = Prepared::new(&Trace { header: Header { page_size_bytes: 16384, source: String::new() }, records });
        let p = Profiles::default_presets().unwrap();
        let budget = 2.0;
        let r = recommend(&t, &SimConfig::new("eager", 1, 0), &p, budget).unwrap();
        assert!(!r.ranked.is_empty());
        assert!(r.ranked.iter().all(|c| c.cost_usd <= budget));
        assert!(r.ranked.windows(2).all(|w| w[0].throughput_per_usd >= w[1].throughput_per_usd));
        assert!(r.candidates_in_budget >= r.ranked.len() + r.filtered_by_model);
        assert!(recommend(&t, &SimConfig::new("eager", 1, 0), &p, 0.0001).is_err());
    }

    #[test]
    fn a_trace_without_accesses_is_refused() {
        let records = vec![Record::access(Op::Alloc, 3), Record::marker(crate::trace::Marker::Measure)];
        let t = Prepared::new(&Trace { header: Header { page_size_bytes: 16384, source: String::new() }, records });
        let p = Profiles::default_presets().unwrap();
        let e = recommend(&t, &SimConfig::new("eager", 1, 0), &p, 100.0).unwrap_err();
        assert!(matches!(e, SimError::NoAccesses { .. }), "{e}");
    }
}
