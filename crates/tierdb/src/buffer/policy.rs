//! Placement policies: the answers to the page life cycle's questions.
//!
//! The buffer manager owns the mechanism (frames, latches, the page table, copies,
//! I/O); at every transition it asks its [`Policy`] what to do, passing only page
//! metadata and tier statistics. A policy never touches page bytes and is deterministic
//! given its inputs (and a seeded RNG, for the probabilistic policies to come), so the
//! simulator can run the same code over metadata-only pools.
//!
//! The questions (DESIGN.md, "The page life cycle"):
//! 1. [`Policy::ssd_miss`] — a page read from SSD goes to DRAM, or to DRAM and NVM;
//! 2. [`Policy::nvm_access`] — an access to an NVM-resident page migrates it to DRAM;
//! 3. [`Policy::dram_victim`] — the clock hand offers a DRAM frame: evict it or not;
//! 4. [`Policy::dram_eviction`] — the evicted page goes to NVM or to SSD (dropped if
//!    clean);
//! 5. [`Policy::nvm_victim`] — the NVM clock hand offers a frame: evict it or not.

pub mod eager;
pub mod hymem;
pub mod knobs;
pub mod se2;
pub mod spitfire;

pub use eager::Eager;
pub use hymem::Hymem;
pub use knobs::MigrationKnobs;
pub use se2::Se2;
pub use spitfire::Spitfire;

use crate::ids::PageId;

/// What a policy may know of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    pub pid: PageId,
    /// DRAM (or NVM) copy newer than the tier below.
    pub dirty: bool,
    /// The page has a copy in an NVM frame.
    pub nvm_copy: bool,
    /// Touched since the clock hand last passed.
    pub referenced: bool,
}

/// Which tiers an architecture has and how full they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiers {
    pub has_nvm: bool,
    pub has_ssd: bool,
    pub dram_frames: usize,
    pub nvm_frames: usize,
}

/// Where a page read from SSD goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissTarget {
    Dram,
    DramAndNvm,
    /// Into NVM; whether it also goes to DRAM is then [`Policy::nvm_access`]'s call. A
    /// whole-page fix (inner nodes, scans, structure changes) takes it to DRAM too.
    Nvm,
}

/// What to do with an access to a page that is in NVM but not in DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvmAccess {
    /// Copy the page into a DRAM frame (it keeps its NVM frame).
    Migrate,
    /// Serve the access on NVM: reads load from the NVM frame, writes are persisted
    /// there at unfix. Only cache-line-grained fixes (the B+-tree's leaf accesses) go
    /// in place; whole-page fixes always migrate.
    InPlace,
}

/// The verdict on a frame the clock hand offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    Evict,
    /// Clear the reference bit and move on.
    SecondChance,
    /// Leave the frame as it is and move on.
    Skip,
}

/// Where a page evicted from DRAM goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvictTo {
    /// Into NVM: its own NVM frame if it has one (written back if dirty), else a new one.
    Nvm,
    /// To SSD if dirty, else dropped; an NVM copy is released.
    Ssd,
}

/// A placement policy. Implementations are `Send + Sync` and cheap to call.
pub trait Policy: Send + Sync {
    fn name(&self) -> &'static str;

    fn ssd_miss(&self, page: &PageInfo, tiers: &Tiers) -> MissTarget;

    fn nvm_access(&self, page: &PageInfo, write: bool, tiers: &Tiers) -> NvmAccess;

    /// Clock (second chance) unless overridden.
    fn dram_victim(&self, page: &PageInfo, _tiers: &Tiers) -> Victim {
        if page.referenced { Victim::SecondChance } else { Victim::Evict }
    }

    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo;

    /// Clock (second chance) unless overridden.
    fn nvm_victim(&self, page: &PageInfo, _tiers: &Tiers) -> Victim {
        if page.referenced { Victim::SecondChance } else { Victim::Evict }
    }

    /// A page left NVM (evicted or released).
    fn nvm_evicted(&self, _pid: PageId) {}

    /// A page was freed; forget it.
    fn page_freed(&self, _pid: PageId) {}

    /// True if [`nvm_access`](Self::nvm_access) may answer `InPlace` (the buffer
    /// manager asks whole-page reads only then).
    fn may_access_in_place(&self) -> bool {
        false
    }

    /// The migration knobs of a probabilistic policy (`spitfire`), `None` for others.
    fn knobs(&self) -> Option<MigrationKnobs> {
        None
    }

    /// Sets the migration knobs at run time (the online tuner's lever). Returns false
    /// if the policy has none.
    fn set_knobs(&self, _knobs: MigrationKnobs) -> bool {
        false
    }
}

/// The policies selectable by name. `spitfire` takes its knobs after a colon:
/// `spitfire:b`, `spitfire:dr=0.1,dw=0.1` (plain `spitfire` is eager).
pub const POLICY_NAMES: &[&str] = &["eager", "hymem", "spitfire", "se2"];

/// Builds a policy by name. `admission_set_pages` sizes `hymem`'s admission set;
/// `seed` seeds the probabilistic policies.
///
/// # Errors
/// `Config` for an unknown name or bad knobs.
pub fn by_name(name: &str, admission_set_pages: usize, seed: u64) -> Result<Box<dyn Policy>, super::BufferError> {
    let (base, args) = match name.split_once(':') {
        Some((b, a)) => (b, Some(a)),
        None => (name, None),
    };
    match (base, args) {
        ("eager", None) => Ok(Box::new(Eager)),
        ("hymem", None) => Ok(Box::new(Hymem::new(admission_set_pages))),
        ("se2", None) => Ok(Box::new(Se2)),
        ("spitfire", knobs) => {
            let knobs = knobs.map(str::parse).transpose()?.unwrap_or(MigrationKnobs::EAGER);
            Ok(Box::new(Spitfire::new(knobs, seed)))
        }
        _ => Err(super::BufferError::Config {
            what: format!(
                "unknown policy {name:?}; known: {} (spitfire:KNOBS with a preset eager, a–d, or dr=X,dw=X,nr=X,nw=X)",
                POLICY_NAMES.join(", ")
            ),
        }),
    }
}
