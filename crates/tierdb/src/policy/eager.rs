//! `eager`: every page read from SSD goes to DRAM, every DRAM victim is admitted to
//! NVM. The basic NVM buffer manager's policy, and a baseline for `hymem`.

use super::{EvictTo, MissTarget, NvmAccess, PageInfo, Policy, Tiers};

/// The `eager` policy: SSD misses go to DRAM, NVM pages migrate to DRAM on access, and
/// every DRAM victim goes to NVM (to SSD without NVM). Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Eager;

impl Policy for Eager {
    fn name(&self) -> &'static str {
        "eager"
    }

    fn ssd_miss(&self, _page: &PageInfo, _tiers: &Tiers) -> MissTarget {
        MissTarget::Dram
    }

    fn nvm_access(&self, _page: &PageInfo, _write: bool, _tiers: &Tiers) -> NvmAccess {
        NvmAccess::Migrate
    }

    fn dram_eviction(&self, _page: &PageInfo, tiers: &Tiers) -> EvictTo {
        if tiers.has_nvm { EvictTo::Nvm } else { EvictTo::Ssd }
    }
}
