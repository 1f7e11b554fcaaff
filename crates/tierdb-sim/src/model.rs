//! Modelled time: what a simulated run would cost on given devices, and the Spitfire
//! paper's hierarchy model (§5.1).
//!
//! [`modelled_time`] charges each counted event with the engine's own cost model
//! (`tierdb::device::CostModel`, built from the device profiles): a page
//! copy is a read on the source plus a write on the target (plus persisting it on
//! NVM), an access served in DRAM or in place on NVM reads [`ACCESS_BYTES`]. It is a
//! sum of device costs, one thread, no overlap and no interference: a comparison
//! between hierarchies on the same trace, not a forecast of wall time.
//!
//! [`hierarchy_time_ns`] is §5.1: T = Σ_i (1 − H(C_{i−1})) t_i, with H the LRU hit
//! ratio of the trace at a capacity ([`crate::skew::StackDistances`]). The recommender
//! uses it as a quick filter before simulating.

use serde::Serialize;
use tierdb::device::{CostModel, DeviceProfile, Tier};
use tierdb::limits::CACHE_LINE_BYTES;

use crate::error::SimError;
use crate::sim::SimResult;

/// Bytes one access reads or writes of a page it finds in DRAM or in NVM in place (a
/// B+-tree leaf search touches a few lines): four cache lines.
pub const ACCESS_BYTES: u64 = 4 * CACHE_LINE_BYTES as u64;

/// The devices of a hierarchy.
#[derive(Clone, Debug)]
pub struct Profiles {
    /// The DRAM tier's profile.
    pub dram: DeviceProfile,
    /// The NVM tier's profile.
    pub nvm: DeviceProfile,
    /// The SSD tier's profile.
    pub ssd: DeviceProfile,
}

impl Profiles {
    /// Loads presets or files by name (`DeviceProfile::load`), checking each tier.
    ///
    /// # Errors
    /// An unknown name or a profile for the wrong tier.
    pub fn load(dram: &str, nvm: &str, ssd: &str) -> Result<Profiles, SimError> {
        let (d, n, s) = (DeviceProfile::load(dram)?, DeviceProfile::load(nvm)?, DeviceProfile::load(ssd)?);
        d.expect_tier(Tier::Dram)?;
        n.expect_tier(Tier::Nvm)?;
        s.expect_tier(Tier::Ssd)?;
        Ok(Profiles { dram: d, nvm: n, ssd: s })
    }

    /// The defaults of the CLI: DDR4, Optane DCPMM, NVMe SSD.
    ///
    /// # Errors
    /// Never for the built-in presets.
    pub fn default_presets() -> Result<Profiles, SimError> {
        Profiles::load("dram", "optane-dcpmm", "nvme-ssd")
    }

    /// Dollars for the capacities given, in bytes.
    pub fn cost_usd(&self, dram_bytes: u64, nvm_bytes: u64, ssd_bytes: u64) -> f64 {
        let gb = |b: u64| b as f64 / 1e9;
        gb(dram_bytes) * self.dram.cost_per_gb_usd
            + gb(nvm_bytes) * self.nvm.cost_per_gb_usd
            + gb(ssd_bytes) * self.ssd.cost_per_gb_usd
    }
}

/// Modelled time of a simulated run, split by device.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Modelled {
    /// Time charged to DRAM, ns: accesses served there and pages copied into it.
    pub dram_ns: f64,
    /// Time charged to NVM, ns: pages copied in and out (with persisting) and accesses
    /// served in place.
    pub nvm_ns: f64,
    /// Time charged to the SSD, ns: page reads and page write-backs.
    pub ssd_ns: f64,
    /// `dram_ns + nvm_ns + ssd_ns`: one thread, no overlap between devices.
    pub total_ns: f64,
    /// Accesses per second of modelled time.
    pub throughput_per_s: f64,
}

/// Charges the counters of `r` to the devices of `p`.
pub fn modelled_time(r: &SimResult, page_bytes: u64, p: &Profiles) -> Modelled {
    let (d, n, s) = (CostModel::new(&p.dram), CostModel::new(&p.nvm), CostModel::new(&p.ssd));
    let st = &r.stats;
    let lines = page_bytes / CACHE_LINE_BYTES as u64;
    let ns = |ps: u64, count: u64| ps as f64 / 1000.0 * count as f64;
    let in_place = st.nvm_reads_in_place + st.nvm_writes_in_place;
    // Every access not served in place ends with a DRAM access.
    let dram_accesses = r.accesses.saturating_sub(in_place);
    let dram_ns =
        ns(d.read_ps(ACCESS_BYTES), dram_accesses) + ns(d.write_ps(page_bytes), st.nvm_to_dram_pages + st.ssd_reads);
    let nvm_ns = ns(n.read_ps(page_bytes), st.nvm_to_dram_pages)
        + ns(n.write_ps(page_bytes) + n.persist_ps(lines), st.dram_to_nvm_pages)
        + ns(n.read_ps(ACCESS_BYTES), st.nvm_reads_in_place)
        + ns(n.write_ps(ACCESS_BYTES) + n.persist_ps(ACCESS_BYTES / CACHE_LINE_BYTES as u64), st.nvm_writes_in_place)
        + ns(n.read_ps(page_bytes), st.nvm_to_ssd_pages);
    let ssd_ns = ns(s.read_ps(page_bytes), st.ssd_reads)
        + ns(s.write_ps(page_bytes), st.dram_to_ssd_pages + st.nvm_to_ssd_pages);
    let total_ns = dram_ns + nvm_ns + ssd_ns;
    let throughput_per_s = if total_ns > 0.0 { r.accesses as f64 / (total_ns / 1e9) } else { 0.0 };
    Modelled { dram_ns, nvm_ns, ssd_ns, total_ns, throughput_per_s }
}

/// §5.1: the mean time per access of a hierarchy of capacities `pages` (DRAM, NVM,
/// SSD; 0 for a missing level) with access times `t_ns`, given the hit-ratio function
/// `h(capacity in pages)`. Each level holds copies of the levels above (inclusive), so
/// the fraction reaching level i is 1 − H(C_1 + … + C_{i−1}) in an exclusive reading
/// of the pools, as tierdb's tiers are. The last present level serves every miss.
pub fn hierarchy_time_ns(pages: [u64; 3], t_ns: [f64; 3], h: impl Fn(u64) -> f64) -> f64 {
    let mut above = 0u64;
    let mut t = 0.0;
    let last = pages.iter().rposition(|&c| c > 0).unwrap_or(0);
    for i in 0..=last {
        if pages[i] == 0 {
            continue;
        }
        let reach = if above == 0 { 1.0 } else { 1.0 - h(above) };
        t += reach * t_ns[i];
        above += pages[i];
    }
    t
}

/// The per-level access times the §5.1 model uses: a DRAM access, an in-place NVM
/// access, an SSD page read.
pub fn level_times_ns(p: &Profiles, page_bytes: u64) -> [f64; 3] {
    let (d, n, s) = (CostModel::new(&p.dram), CostModel::new(&p.nvm), CostModel::new(&p.ssd));
    [
        d.read_ps(ACCESS_BYTES) as f64 / 1000.0,
        n.read_ps(ACCESS_BYTES) as f64 / 1000.0,
        s.read_ps(page_bytes) as f64 / 1000.0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_charges_lower_levels_only_for_misses() {
        let t = [100.0, 300.0, 80_000.0];
        // Everything hits DRAM: only DRAM's time.
        assert_eq!(hierarchy_time_ns([10, 0, 100], t, |_| 1.0), 100.0);
        // Nothing hits: every level is paid.
        assert_eq!(hierarchy_time_ns([10, 20, 100], t, |_| 0.0), 100.0 + 300.0 + 80_000.0);
        // Half reach NVM, a quarter SSD.
        let h = |c: u64| if c >= 30 { 0.75 } else { 0.5 };
        assert_eq!(hierarchy_time_ns([10, 20, 100], t, h), 100.0 + 0.5 * 300.0 + 0.25 * 80_000.0);
        // No DRAM: NVM serves first.
        assert_eq!(hierarchy_time_ns([0, 20, 100], t, h), 300.0 + 0.5 * 80_000.0);
    }

    #[test]
    fn presets_load_and_cost_adds_up() {
        let p = Profiles::default_presets().unwrap();
        let c = p.cost_usd(1_000_000_000, 0, 0);
        assert!((c - p.dram.cost_per_gb_usd).abs() < 1e-9);
        assert!(Profiles::load("nvme-ssd", "optane-dcpmm", "nvme-ssd").is_err(), "wrong tier");
    }
}
