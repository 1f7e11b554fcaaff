//! The sections of the report, in the order they run. Each paper's experiments live in
//! their own file; a section returns its parts of the report or fails as a whole.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

use super::spitfire;
use super::three_tier_tpcc;
use super::{Ctx, Section};

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
            name: "spitfire-figs5-7-11-12",
            about: "Spitfire paper, Figures 5–7, 11–12 and §6.6: D/N sweeps, Table 3's policies, online tuners",
            run: spitfire::run,
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
