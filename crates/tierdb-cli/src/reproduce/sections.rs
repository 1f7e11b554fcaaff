//! The sections of the report, in the order they run. Each paper's experiments live in
//! their own file; a section returns its parts of the report or fails as a whole.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

use super::{Ctx, Section};
use super::{engine, nvcache, sim, three_tier_tpcc};

/// One entry of the reproduction.
pub(crate) struct Entry {
    /// Short name for `--only` and the step logs.
    pub name: &'static str,
    /// One line on what it reproduces.
    pub about: &'static str,
    pub run: fn(&Ctx) -> Result<Vec<Section>>,
}

/// Every section, in order.
pub(crate) fn all() -> Vec<Entry> {
    vec![
        Entry {
            name: "three-tier-fig9",
            about: "three-tier paper, Figure 9: TPC-C throughput over warehouses, every architecture",
            run: three_tier_tpcc::run,
        },
        Entry {
            name: "nvcache",
            about: "NVCache paper, Table 1, Figure 4 and Figure 8(a): throttled admission, overhead for small data, performance per memory cost",
            run: nvcache::run,
        },
        Entry {
            name: "engine",
            about: "tierdb's own figures: the devices against their profiles, two threads against one, all data in DRAM",
            run: engine::run,
        },
        Entry {
            name: "spitfire-fig3-skew",
            about: "Spitfire, Figure 3: skew of recorded TPC-C and YCSB traces (CDF of accesses over pages)",
            run: sim::run_skew,
        },
        Entry {
            name: "spitfire-fig10-recommender",
            about: "Spitfire, Figure 10b: the recommender's hierarchy for a recorded TPC-C trace, and its perf/$",
            run: sim::run_recommender,
        },
    ]
}

/// Reads a JSON artifact a child wrote.
pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The strings as owned arguments.
pub(crate) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}
