//! Placement policies: the answers to the page life cycle's questions.
//!
//! The buffer manager owns the mechanism (frames, latches, the page table, copies,
//! I/O); at every transition it asks its [`Policy`] what to do, passing only page
//! metadata and tier statistics. A policy never touches page bytes and is deterministic
//! given its inputs (and a seeded RNG, for the probabilistic ones: `spitfire`), so the
//! simulator can run the same code over metadata-only pools.
//!
//! The questions (`docs/architecture.md`, "The page life cycle and the policy
//! interface"):
//! 1. [`Policy::ssd_miss`] — a page read from SSD goes to DRAM, to DRAM and NVM, or to
//!    NVM ([`MissTarget`]);
//! 2. [`Policy::nvm_access`] — an access to an NVM-resident page migrates it to DRAM or
//!    is served in place in NVM ([`NvmAccess`]);
//! 3. [`Policy::victim`] with [`Pool::Dram`] — the clock hand offers a DRAM frame: evict
//!    it or not;
//! 4. [`Policy::dram_eviction`] — the evicted page goes to NVM, to SSD (dropped if
//!    clean), or to SSD with a clean copy in NVM ([`EvictTo`]);
//! 5. [`Policy::victim`] with [`Pool::Nvm`] — the NVM clock hand offers a frame: evict it
//!    or not; or, for a policy that picks NVM victims itself, [`Policy::nvm_victims`].
//!
//! A checkpoint asks one more ([`Policy::checkpoint_to_nvm`]); [`Policy::observe`] tells
//! the policy what happened to pages ([`Event`]).
//!
//! A policy may run NVM as a volatile cache of clean SSD pages
//! ([`Shape::nvm_clean_only`], `nvcache`): the manager then never writes a dirty page
//! to NVM and formats the pool on open. It may keep DRAM and NVM disjoint
//! ([`Shape::nvm_disjoint`]) and NVM a durable cache across checkpoints
//! ([`Shape::nvm_durable_cache`]), as `nvsql` does: a policy's [`Shape`] says so, read
//! once at open.
//!
//! The module imports only identifiers and limits: the simulator (`tierdb-sim`) runs
//! these policies without the buffer manager.

mod eager;
mod hymem;
pub(crate) mod knobs;
mod nvcache;
mod nvsql;
mod se2;
mod spitfire;

pub use eager::Eager;
pub use hymem::Hymem;
pub use knobs::{KNOB_MIN, KnobCell, MigrationKnobs, PRESETS as KNOB_PRESETS};
pub use nvcache::{Nvcache, NvcacheConfig, NvmCacheStats, ObpCount, ObpMode};
pub use nvsql::{Nvsql, NvsqlAdmission, NvsqlConfig, NvsqlReplacement, NvsqlStats};
pub use se2::Se2;
pub use spitfire::{CLEAN_TO_NVM, CleanVictims, Spitfire, SpitfireConfig};

use std::sync::Arc;

use crate::ids::{Lsn, PageId};

/// Errors of the policy layer: a policy name or parameters that do not parse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// An unknown policy, or knobs or parameters that are not valid.
    #[error("policy configuration: {what}")]
    Config {
        /// What is wrong and what is accepted.
        what: String,
    },
}

/// What a policy may know of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    /// The page asked about.
    pub pid: PageId,
    /// DRAM (or NVM) copy newer than the tier below.
    pub dirty: bool,
    /// The page has a copy in an NVM frame.
    pub nvm_copy: bool,
    /// Touched since the clock hand last passed.
    pub referenced: bool,
    /// LSN of the first logged change since the page was last clean in DRAM
    /// ([`Lsn::NONE`]: unknown, or no change). Set only where a policy decides on it
    /// (`dram_eviction`); `nvsql`'s re-update interval starts here.
    pub first_update_lsn: Lsn,
    /// LSN of the page's last logged change in DRAM ([`Lsn::NONE`]: unknown). As above.
    pub page_lsn: Lsn,
    /// The last-flush LSN the page's SSD copy carried when it was read into this frame
    /// (the log's LSN when it was written to SSD, kept in its seal; [`Lsn::NONE`]: unknown, or not
    /// read from SSD). As above; `nvsql` also records later flushes itself
    /// ([`Event::Flushed`]).
    pub last_flush_lsn: Lsn,
}

impl PageInfo {
    /// A page a fix is about to bring into DRAM: clean, referenced, with an NVM copy if
    /// `nvm_copy` (it comes from NVM), and no LSNs known.
    pub fn fixing(pid: PageId, nvm_copy: bool) -> PageInfo {
        PageInfo {
            pid,
            dirty: false,
            nvm_copy,
            referenced: true,
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        }
    }
}

/// Which tiers an architecture has and how full they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiers {
    /// The architecture has an NVM pool.
    pub has_nvm: bool,
    /// The architecture has an SSD page file.
    pub has_ssd: bool,
    /// Full-page DRAM frames in the pool.
    pub dram_frames: usize,
    /// Frames in the NVM pool (0 without NVM).
    pub nvm_frames: usize,
}

/// Where a page read from SSD goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissTarget {
    /// Into a DRAM frame only.
    Dram,
    /// Into a DRAM frame, with a clean copy written to a new NVM frame if NVM can give
    /// one.
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
    /// Evict the page; where it goes is [`Policy::dram_eviction`]'s call for DRAM.
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
    /// To SSD if dirty (write-through), and a *clean* copy kept in NVM: its own NVM
    /// frame (rewritten if the page changed), else a new frame if one can be had
    /// (else none). For policies whose NVM holds clean copies only.
    SsdAndNvm,
}

/// The pool a clock hand walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The DRAM frames.
    Dram,
    /// The NVM frames.
    Nvm,
}

/// What a policy is, read once when a page source opens: how the mechanism must run
/// around it. Everything defaults to off.
#[derive(Clone, Debug, Default)]
pub struct Shape {
    /// [`Policy::nvm_access`] may answer `InPlace` (the buffer manager asks whole-page
    /// reads only then).
    pub in_place: bool,
    /// NVM holds only clean copies of SSD pages, as a volatile cache (`nvcache`): the
    /// manager never writes a dirty page there (no bulk-load placement, no write-back
    /// to NVM) and formats the pool on open instead of reusing it.
    pub nvm_clean_only: bool,
    /// DRAM and NVM are disjoint (`nvsql`): a page a whole-page fix copies from NVM into
    /// DRAM gives up its NVM frame (its DRAM copy is dirty if the frame was), so that a
    /// page is in one of the two. Off: the NVM frame stays as the page's older copy.
    pub nvm_disjoint: bool,
    /// NVM is a durable cache (`nvsql`): a checkpoint leaves dirty pages in NVM instead
    /// of writing them to SSD, and the log is kept back to their oldest change
    /// ([`BufferManager::oldest_unflushed_lsn`](crate::buffer::BufferManager::oldest_unflushed_lsn)).
    pub nvm_durable_cache: bool,
    /// For a durable NVM cache: how many checkpoints a change may stay in NVM only. A
    /// checkpoint writes to SSD (leaving them in NVM, clean) the dirty NVM pages whose
    /// recovery LSN is older than the start of the checkpoint that many before it, which
    /// bounds the log kept for them. `None`: unbounded.
    pub nvm_keep_checkpoints: Option<u32>,
    /// The migration knobs of a probabilistic policy (`spitfire`): the lever the online
    /// tuner moves while the engine runs. `None` for a policy without knobs.
    pub knobs: Option<Arc<KnobCell>>,
}

/// Something that happened to a page, which a policy may track
/// ([`Policy::observe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The page left NVM (evicted or released).
    NvmLeft(PageId),
    /// The page was written into NVM as a new copy or over its stale one: on a read from
    /// SSD (`on_eviction` false) or on its eviction from DRAM.
    NvmAdmitted {
        /// The page.
        pid: PageId,
        /// It came from a DRAM eviction (else from an SSD read).
        on_eviction: bool,
    },
    /// The page was freed.
    Freed(PageId),
    /// The page was written to SSD when the log's LSN was `flush_lsn` ([`Lsn::NONE`]: no log):
    /// every write — a DRAM eviction, an NVM eviction, a checkpoint, a page leaving NVM.
    /// `nvsql`'s last-flush LSN.
    Flushed {
        /// The page.
        pid: PageId,
        /// The log's LSN at the write.
        flush_lsn: Lsn,
    },
    /// The database spans this many pages (its file's size): at open and whenever it
    /// grows.
    DatabaseSize(u64),
}

/// A policy's own counters ([`Policy::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum PolicyStats {
    /// The policy keeps none.
    #[default]
    None,
    /// A policy that runs NVM as a cache (`nvcache`).
    Cache(NvmCacheStats),
    /// `nvsql`'s admission and NVM replacement.
    Nvsql(NvsqlStats),
}

/// A placement policy. Implementations are `Send + Sync` and cheap to call.
///
/// Five questions of the page life cycle (the module documentation lists them), one of
/// the checkpoint, one hook that observes what happened to pages, and two descriptions:
/// its [`Shape`] (read once at open) and its counters.
pub trait Policy: Send + Sync {
    /// The policy's name as reported ([`POLICY_NAMES`] lists the selectable ones).
    fn name(&self) -> &'static str;

    /// How the mechanism must run around this policy; read once at open.
    fn shape(&self) -> Shape {
        Shape::default()
    }

    /// Question 1: where a page that neither DRAM nor NVM holds goes when it is read
    /// from SSD.
    fn ssd_miss(&self, page: &PageInfo, tiers: &Tiers) -> MissTarget;

    /// Question 2: whether an access to a page in NVM but not in DRAM migrates it or is
    /// served in place; `write` is true for an exclusive fix.
    fn nvm_access(&self, page: &PageInfo, write: bool, tiers: &Tiers) -> NvmAccess;

    /// Questions 3 and 5: the clock hand of `pool` offers a frame. Clock (second
    /// chance) unless overridden.
    fn victim(&self, _pool: Pool, page: &PageInfo, _tiers: &Tiers) -> Victim {
        clock(page)
    }

    /// Question 4: where a page evicted from DRAM goes. The manager overrides the answer
    /// where the architecture leaves no choice: `Ssd` without NVM, `Nvm` without SSD or
    /// for a partly resident page (and for `Ssd` during bulk load while NVM has a free
    /// frame).
    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo;

    /// Question 5, for a policy that picks NVM victims itself: the NVM pool is full and
    /// a frame is needed. Such a policy appends the pages to evict, in order, to `out`
    /// (perhaps none: a veto) and returns true; the manager evicts those that are in NVM
    /// only and does not run its clock. False (the default): the clock asks
    /// [`victim`](Self::victim) with [`Pool::Nvm`].
    fn nvm_victims(&self, _tiers: &Tiers, _out: &mut Vec<PageId>) -> bool {
        false
    }

    /// The checkpoint's question: of the dirty DRAM pages (page, first-update LSN) a
    /// checkpoint is about to write to SSD, those it moves to NVM instead (durable
    /// there; NV-SQL §4.3's checkpoint-based admission). Empty (the default): none.
    fn checkpoint_to_nvm(&self, _dirty: &[(PageId, Lsn)]) -> Vec<PageId> {
        Vec::new()
    }

    /// Something happened to a page ([`Event`]); a policy that tracks pages updates
    /// itself. Ignored by default.
    fn observe(&self, _event: Event) {}

    /// The policy's own counters.
    fn stats(&self) -> PolicyStats {
        PolicyStats::None
    }
}

/// Clock (second chance): a page touched since the hand last passed gets another round.
#[inline]
pub fn clock(page: &PageInfo) -> Victim {
    if page.referenced { Victim::SecondChance } else { Victim::Evict }
}

/// The policies selectable by name. `spitfire` takes its knobs after a colon:
/// `spitfire:b`, `spitfire:dr=0.1,dw=0.1` (plain `spitfire` is eager), and the word
/// `clean-to-nvm` for the variant that admits clean DRAM victims to NVM
/// ([`SpitfireConfig`]); `nvsql` its
/// admission and replacement: `nvsql:admit=fixed,lsns=5000,lru=lru` ([`NvsqlConfig`]).
pub const POLICY_NAMES: &[&str] = &["eager", "hymem", "nvcache", "nvsql", "spitfire", "se2"];

/// Builds a policy by name. `admission_set_pages` sizes `hymem`'s admission set,
/// `nvcache` configures `nvcache`, `seed` seeds the probabilistic policies; each policy
/// ignores what is not its own.
///
/// # Errors
/// `Config` for an unknown name, bad knobs, or an `nvcache` configuration that cannot
/// work.
pub fn by_name(
    name: &str,
    admission_set_pages: usize,
    nvcache: &NvcacheConfig,
    seed: u64,
) -> Result<Box<dyn Policy>, PolicyError> {
    let (base, args) = match name.split_once(':') {
        Some((b, a)) => (b, Some(a)),
        None => (name, None),
    };
    match (base, args) {
        ("eager", None) => Ok(Box::new(Eager)),
        ("hymem", None) => Ok(Box::new(Hymem::new(admission_set_pages))),
        ("se2", None) => Ok(Box::new(Se2)),
        ("nvcache", None) => {
            nvcache.validate().map_err(|what| PolicyError::Config { what })?;
            Ok(Box::new(Nvcache::new(nvcache.clone())))
        }
        ("nvsql", args) => {
            let cfg = args.map(str::parse).transpose()?.unwrap_or_default();
            Ok(Box::new(Nvsql::new(cfg, 0)))
        }
        ("spitfire", config) => {
            let config = config.map(str::parse).transpose()?.unwrap_or_default();
            Ok(Box::new(Spitfire::new(config, seed)))
        }
        _ => Err(PolicyError::Config {
            what: format!(
                "unknown policy {name:?}; known: {} (spitfire:KNOBS with a preset eager, a–d, or dr=X,dw=X,nr=X,nw=X, and optionally ,{CLEAN_TO_NVM})",
                POLICY_NAMES.join(", ")
            ),
        }),
    }
}
