//! `se2`: the PostgreSQL study's second storage engine (§IV-C, pointer redirection):
//! with the database file mapped from NVM, a buffer miss for a read does not copy the
//! page: the reader is pointed at the NVM bytes (`NvmAccess::InPlace`). Before a page
//! is changed, it is copied into a DRAM buffer slot (`Migrate`), so every change is
//! made on a private copy and reaches NVM only when the slot is written back. Pages
//! leaving DRAM go back to their NVM frame (the database file; there is no SSD).

use super::{EvictTo, MissTarget, NvmAccess, PageInfo, Policy, Shape, Tiers};

/// The `se2` policy: reads are served in place in NVM, writes migrate the page to DRAM,
/// and DRAM victims go back to NVM. Stateless.
pub struct Se2;

impl Policy for Se2 {
    fn name(&self) -> &'static str {
        "se2"
    }

    fn ssd_miss(&self, _page: &PageInfo, _tiers: &Tiers) -> MissTarget {
        MissTarget::Dram
    }

    fn nvm_access(&self, _page: &PageInfo, write: bool, _tiers: &Tiers) -> NvmAccess {
        if write { NvmAccess::Migrate } else { NvmAccess::InPlace }
    }

    fn dram_eviction(&self, _page: &PageInfo, _tiers: &Tiers) -> EvictTo {
        EvictTo::Nvm
    }

    fn shape(&self) -> Shape {
        Shape { in_place: true, ..Shape::default() }
    }
}
