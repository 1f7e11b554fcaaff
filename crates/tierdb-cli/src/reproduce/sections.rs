//! The sections of the report, in the order they run. Each paper's experiments live in
//! their own file; a section returns its parts of the report or fails as a whole.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

use super::{Ctx, Section};
use super::{engine, hymem, mmap, nvcache, nvsql, sim, spitfire, three_tier, three_tier_tpcc};

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
            name: "three-tier-fig12",
            about: "three-tier paper, Figure 12: YCSB-RO over NVM latency, three-tier vs nvm-direct",
            run: hymem::fig12,
        },
        Entry {
            name: "three-tier-fig14-15",
            about: "three-tier paper, Figures 14 and 15: data size scaled with DRAM and NVM; update share",
            run: hymem::fig14_15,
        },
        Entry {
            name: "three-tier-fig16",
            about: "three-tier paper, Figure 16: NVM line writes, three-tier vs nvm-direct, with their logs",
            run: hymem::fig16,
        },
        Entry {
            name: "three-tier-fig17",
            about: "three-tier paper, Figure 17: throughput right after a clean restart",
            run: hymem::fig17,
        },
        Entry {
            name: "three-tier-ycsb",
            about: "three-tier paper, Figures 8, 10 and 13: YCSB-RO over data sizes, the techniques, DRAM size",
            run: three_tier::run,
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
        Entry {
            name: "spitfire-figs5-7-11-12",
            about: "Spitfire paper, Figures 5–7, 11–12 and §6.6: D/N sweeps, Table 3's policies, online tuners",
            run: spitfire::run,
        },
        Entry {
            name: "nvcache",
            about: "NVCache paper, Table 1, Figure 4 and Figure 8(a): throttled admission, overhead for small data, performance per memory cost",
            run: nvcache::run,
        },
        Entry {
            name: "nvsql",
            about: "NV-SQL, Figures 4, 6 and 10, Table 5: TPC-C at equal memory cost, the ablation, recovery",
            run: nvsql::run,
        },
        Entry { name: "mmap", about: "PostgreSQL-on-NVM paper, §VI-B: SE1 and SE2 against read()", run: mmap::run },
        Entry {
            name: "engine",
            about: "tierdb's own figures: the devices against their profiles, two threads against one, all data in DRAM",
            run: engine::run,
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
