//! The buffer manager: DRAM frames over an optional NVM pool over an optional SSD file.
//!
//! Which tiers exist makes the architecture: DRAM + SSD is `ssd-bm`, DRAM + NVM is
//! `basic-nvm-bm` (all pages must fit in NVM), DRAM + NVM + SSD is `three-tier`. The
//! [`Policy`] answers every placement question; this file is the mechanism.
//!
//! Invariants (checked by [`BufferManager::check_invariants`]):
//! - a page is in at most one DRAM frame and at most one NVM frame;
//! - the page table says `Dram(f)` iff frame `f` holds the page, `Nvm(n)` iff NVM frame
//!   `n` holds it and no DRAM frame does, `Empty` iff neither (then it is on SSD);
//! - a DRAM frame's `nvm` field names the NVM frame holding the page's older copy.
//!
//! Concurrency: the hit path reads the page table (no lock), tries the frame latch and
//! re-checks the frame's page id. Moving a page (load, eviction, free) is owned by one
//! thread: either it claimed the page's table entry (EMPTY/NVM → BUSY by
//! compare-and-swap) or it holds the page's DRAM frame exclusive. Housekeeping only
//! *tries* latches, so it adds no waits to the callers' top-down latch order.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use super::BufferError;
use super::frame::in_place::{self, BmLines, BmOptimistic, BmShared, NvmLines, NvmOptimistic, NvmRead};
use super::frame::lines::{LineGuard, Place};
use super::frame::{
    FrameId, FrameOptimistic, FramePool, FrameWrite, MINI_BLOCK, Mask, NO_NVM_FRAME, NO_PAGE, NO_PARENT, bump,
};
use super::latch::backoff;
use super::nvm_pool::NvmPool;
use super::page_crc::NvmVerify;
use super::source::{ExclusivePage, PageSource};
use super::table::{Entry, PageTable};
use super::techniques::Techniques;
use crate::counters::{BufferCounters, BufferStats, Count};
use crate::device::{
    AlignedBuf, DeviceError, DoubleWriteMode, DramArena, DramConfig, NvmConfig, NvmRegion, OpenMode, SsdConfig,
    SsdFile, StatsSnapshot, TornPageRecovery,
};
use crate::ids::PageId;
use crate::limits::{
    CACHE_LINE_BYTES, CLOCK_ROUNDS_MAX, EVICT_BATCH_DEFAULT, EVICT_BATCH_FRAMES_PER_PAGE, EVICT_BATCH_VISITS_PER_PAGE,
    FLUSH_NOTES_PER_RECORD, PAGE_BUSY_WAIT_MS_MAX, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES, PAGE_TABLE_PAGES_DEFAULT,
    POLICY_SEED_DEFAULT, SSD_GROW_PAGES_MIN,
};
use crate::policy::{self, Event, EvictTo, MissTarget, PageInfo, Policy, PolicyStats, Pool, Shape, Tiers, Victim};
use crate::wal::LogForce;
use crate::{ByteSize, Result};

mod checkpoint;
mod free_list;
mod prefetch;
mod provider;

pub use provider::ProviderReport;

use free_list::FreePages;

/// How to build a buffer manager.
#[derive(Clone, Debug)]
pub struct BufferConfig {
    /// Bytes per page: a power of two from 4 KiB to 64 KiB. Overrides the frame size
    /// in `dram` and the page size in `ssd`.
    pub page_size: usize,
    /// The DRAM tier: its size, huge pages, device profile (its frame size is replaced
    /// by `page_size`).
    pub dram: DramConfig,
    /// The NVM tier, if any. Its file is (re)formatted: the pool starts empty.
    pub nvm: Option<NvmConfig>,
    /// The SSD tier, if any.
    pub ssd: Option<SsdConfig>,
    /// A new database file (`Create`), an existing one (`Open`), or either.
    pub ssd_open_mode: OpenMode,
    /// A name from [`policy::POLICY_NAMES`].
    pub policy: String,
    /// Size of `hymem`'s admission set; default half the NVM frames.
    pub admission_set_pages: Option<usize>,
    /// Seed of a probabilistic policy's coins (`spitfire`).
    pub policy_seed: u64,
    /// The CPU last-level cache that charges for reads made in place in NVM model
    /// (`frame::cpu_cache`; 0: every such read is charged).
    pub cpu_cache_model_bytes: u64,
    /// Software prefetch of in-place reads: a line-grained read made in place in NVM
    /// also brings in the next this many lines of the page, and a whole-page one its
    /// first lines (`frame::in_place`; 0: off, at most `PREFETCH_LINES_MAX`).
    pub prefetch_lines: u32,
    /// The tunables of the `nvcache` policy (OBP, small-bypass, LFRU).
    pub nvcache: policy::NvcacheConfig,
    /// What is checked against the CRC-32C of the pages in NVM ([`NvmVerify`]):
    /// whole-page copies and each frame once after a restart (`Cheap`, the default),
    /// every read (`Every`), nothing (`Off`).
    pub nvm_verify: NvmVerify,
    /// Largest page id + 1 the page table can map.
    pub max_pages: u64,
    /// Cache-line-grained pages, mini pages, pointer swizzling (each needs NVM).
    pub techniques: Techniques,
    /// Debug mode for cache-line-grained access (paper A.6): lines not resident are
    /// poisoned on fix and writes to lines not marked dirty are caught on unfix.
    pub debug_lines: bool,
    /// Reopening an existing database, reuse the NVM pool it left (rebuild the page
    /// table from the frame headers, paper §4.4) instead of formatting it.
    pub reuse_nvm: bool,
    /// Without an SSD: reopen the database the NVM pool holds (the catalog is page 1;
    /// the allocated pages are those with a frame; the rest below the highest are
    /// free) instead of formatting the pool. Every page is in NVM after `close`.
    pub reopen_nvm_only: bool,
    /// Protect SSD page writes against tearing with a double-write area
    /// (`device::double_write`; overrides `ssd.double_write`): a file next to the page
    /// file (`Ssd`, the default) or an NVM region (`Nvm`, where `ssd.nvm_double_write`
    /// says). Off, a torn page is still detected (its seal fails) but cannot be repaired.
    pub double_write: DoubleWriteMode,
    /// Copy pages between DRAM and NVM with `pread`/`pwrite` on the pool's file instead
    /// of through the mapping (`mmap-read`, the PostgreSQL study's unmodified engine).
    pub nvm_file_io: bool,
    /// The most DRAM victims evicted together when one must be written to SSD, in a
    /// pool without NVM (default [`EVICT_BATCH_DEFAULT`]; 1: one page at a time). A
    /// pool of `f` frames evicts at most `f /` [`EVICT_BATCH_FRAMES_PER_PAGE`] pages at
    /// once. With NVM every victim goes where the policy sends it, one at a time; when
    /// the NVM clock's victim is dirty, or a DRAM victim goes to SSD dirty, up to this
    /// many dirty pages its clock's hand reaches next are written to SSD with it
    /// (write-behind: they stay where they are, clean; not for a durable NVM cache's
    /// DRAM pages, `nvsql`).
    pub evict_batch: usize,
}

impl BufferConfig {
    /// A configuration with the given DRAM size and no other tier, `eager` policy.
    pub fn new(dram: ByteSize) -> BufferConfig {
        BufferConfig {
            page_size: crate::limits::PAGE_SIZE_DEFAULT_BYTES,
            dram: DramConfig::new(dram),
            nvm: None,
            ssd: None,
            ssd_open_mode: OpenMode::OpenOrCreate,
            policy: "eager".into(),
            admission_set_pages: None,
            policy_seed: POLICY_SEED_DEFAULT,
            cpu_cache_model_bytes: super::frame::cpu_cache::CPU_CACHE_MODEL_DEFAULT_BYTES,
            prefetch_lines: 0,
            nvcache: policy::NvcacheConfig::default(),
            nvm_verify: NvmVerify::Cheap,
            max_pages: PAGE_TABLE_PAGES_DEFAULT,
            techniques: Techniques::NONE,
            debug_lines: false,
            reuse_nvm: true,
            reopen_nvm_only: false,
            double_write: DoubleWriteMode::Ssd,
            nvm_file_io: false,
            evict_batch: EVICT_BATCH_DEFAULT,
        }
    }
}

/// What a buffer manager reports about itself.
#[derive(Clone, Debug, Serialize)]
pub struct BufferInfo {
    /// Bytes per page.
    pub page_size: usize,
    /// The policy's name ([`Policy::name`]).
    pub policy: &'static str,
    /// Full-page DRAM frames.
    pub dram_frames: usize,
    /// NVM frames (0 without NVM).
    pub nvm_frames: usize,
    /// The architecture has an SSD tier.
    pub has_ssd: bool,
    /// Pages handed out and not freed.
    pub pages_in_use: u64,
    /// The NVM techniques in use.
    pub techniques: Techniques,
}

/// Counters of the buffer manager and of its devices.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TierStats {
    /// The buffer manager's own counters (hits, moves between tiers).
    pub buffer: BufferStats,
    /// The NVM region's device counters, when there is NVM.
    pub nvm: Option<StatsSnapshot>,
    /// The SSD page file (in-place page reads and writes, syncs).
    pub ssd: Option<StatsSnapshot>,
    /// The SSD page file's double-write area, when it is on in a file on SSD.
    pub ssd_double_write: Option<StatsSnapshot>,
    /// The double-write area's NVM region, when it is on in NVM (`DoubleWriteMode::Nvm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvm_double_write: Option<StatsSnapshot>,
    /// The NVM cache's counters, for a policy that runs NVM as a cache (`nvcache`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvm_cache: Option<policy::NvmCacheStats>,
    /// `nvsql`'s admission and NVM replacement counters (NV-SQL Table 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvsql: Option<policy::NvsqlStats>,
}

impl TierStats {
    /// `self - earlier`, part by part; a part `earlier` lacks is taken whole from `self`.
    pub fn since(&self, earlier: &TierStats) -> TierStats {
        let d = |a: &Option<StatsSnapshot>, b: &Option<StatsSnapshot>| match (a, b) {
            (Some(a), Some(b)) => Some(a.since(b)),
            (a, _) => *a,
        };
        TierStats {
            buffer: self.buffer.since(&earlier.buffer),
            nvm: d(&self.nvm, &earlier.nvm),
            ssd: d(&self.ssd, &earlier.ssd),
            ssd_double_write: d(&self.ssd_double_write, &earlier.ssd_double_write),
            nvm_double_write: d(&self.nvm_double_write, &earlier.nvm_double_write),
            nvm_cache: match (&self.nvm_cache, &earlier.nvm_cache) {
                (Some(a), Some(b)) => Some(a.since(b)),
                (a, _) => *a,
            },
            nvsql: match (&self.nvsql, &earlier.nvsql) {
                (Some(a), Some(b)) => Some(a.since(b)),
                (a, _) => *a,
            },
        }
    }
}

/// What [`BufferManager::residency`] reports of a page in DRAM.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Residency {
    /// In a mini page (else a full frame).
    pub mini: bool,
    /// Every line is in DRAM (the paper's `r` bit).
    pub resident_all: bool,
    /// The lines in DRAM, ascending.
    pub resident: Vec<usize>,
    /// Lines written since the page came from NVM, ascending.
    pub dirty_lines: Vec<usize>,
    /// Written as a whole (the paper's `d` bit): write-back copies the whole page.
    pub dirty_whole: bool,
    /// Children this page references by frame.
    pub swizzled_children: usize,
    /// Its parent references it by frame.
    pub swizzled: bool,
}

/// The three-tier buffer manager.
pub struct BufferManager {
    page_size: usize,
    frames: FramePool,
    free_frames: Mutex<Vec<FrameId>>,
    hand: AtomicUsize,
    nvm: Option<NvmPool>,
    ssd: Option<SsdFile>,
    ssd_grow: Mutex<()>,
    table: PageTable,
    policy: Box<dyn Policy>,
    /// The policy's shape, read once at open.
    shape: Shape,
    tiers: Tiers,
    /// The next never-allocated page id.
    next_pid: AtomicU64,
    freed: Mutex<FreePages>,
    /// Held while a checkpoint writes the free-page list and the superblock: one list
    /// is written at a time (each must avoid the pages of the one before).
    free_list_write: Mutex<()>,
    /// Most pages that may be in use at once.
    capacity_pages: u64,
    counters: BufferCounters,
    /// Bulk-load mode: see [`BufferManager::set_bulk_load`].
    bulk_load: std::sync::atomic::AtomicBool,
    techniques: Techniques,
    debug_lines: bool,
    /// Pointer swizzling: each parent frame's children referenced by frame.
    swizzled: Mutex<std::collections::HashMap<u32, Vec<u32>>>,
    /// What reopening found in NVM.
    restart: Mutex<Option<RestartInfo>>,
    /// The log to force before a page leaves DRAM (the write-ahead rule), once set.
    log: std::sync::OnceLock<std::sync::Arc<dyn LogForce>>,
    /// Pages written to SSD and their last-flush LSNs, not yet in a flush record
    /// ([`LogForce::note_flushed`], at most [`FLUSH_NOTES_PER_RECORD`] of them).
    flush_notes: Mutex<Vec<(PageId, u64)>>,
    /// The log's end at the start of the last checkpoints, oldest first (a durable NVM
    /// cache's bound on its dirty pages: [`Shape::nvm_keep_checkpoints`]).
    checkpoint_starts: Mutex<std::collections::VecDeque<u64>>,
    /// Set when a change could not be written back in place (an unfix cannot return the
    /// error): every later fix fails with `Stopped`, naming the first failure.
    stopped: std::sync::atomic::AtomicBool,
    stop_reason: Mutex<Option<String>>,
    /// The policy may serve whole-page reads in place in NVM (else those fixes skip
    /// asking it).
    in_place_reads: bool,
    /// Sees every access when set (trace recording).
    recorder: std::sync::OnceLock<std::sync::Arc<dyn super::recorder::AccessRecorder>>,
    /// DRAM victims evicted together when one is dirty (1: one at a time;
    /// [`BufferConfig::evict_batch`]).
    evict_batch: usize,
    /// Dirty NVM pages written to SSD together when the NVM clock's victim is dirty
    /// (1: only the victim; [`BufferConfig::evict_batch`]).
    nvm_clean_batch: usize,
    /// The page provider's thread while one runs ([`BufferManager::provide_pages`]):
    /// a miss that finds no free frame wakes it.
    provider: Mutex<Option<std::thread::Thread>>,
    /// Whether a page provider runs (read on every frame taken from the free list).
    provider_on: std::sync::atomic::AtomicBool,
    /// Free DRAM frames the provider keeps ready.
    provider_target: usize,
    /// Free NVM frames the provider keeps ready (0: no NVM, or no SSD to evict to).
    provider_nvm_target: usize,
}

/// What a restart found in the NVM pool (paper §4.4): the page table is rebuilt from the
/// frame headers, so the pages NVM holds are used from there, not read from SSD.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RestartInfo {
    /// Frames in the reopened pool (0 if it was formatted instead).
    pub nvm_frames: usize,
    /// Pages whose NVM copy went into the page table.
    pub pages_reused: usize,
    /// Frames whose header was cleared (written in place when the crash came, or an
    /// unreadable header), with the reason.
    pub frames_cleared: Vec<String>,
    /// The oldest change a cleared frame held that SSD does not: recovery redoes from
    /// there to rebuild its page (`Some(0)`: unknown, from the log's start; `None`: the
    /// checkpoint's redo point suffices).
    pub log_needed_from: Option<u64>,
    /// Frames naming pages the database does not have (freed, never allocated).
    pub frames_discarded: usize,
    /// The highest page LSN among the frames reused, and its page: a page reaches NVM
    /// only after the log is forced to its LSN, so the log must reach past it
    /// (`db::recovery` checks; a log that does not lost durable records).
    pub page_lsn_max: Option<(PageId, u64)>,
    /// Time to read and check every frame header.
    pub scan_secs: f64,
    /// NVM frames covered per second of the scan (frames × page size / time).
    pub frames_gb_per_sec: f64,
    /// The pool was formatted instead, and why (another database, no pool).
    pub formatted_because: Option<String>,
}

/// What one step of the DRAM clock found ([`BufferManager::clock_step`]).
enum ClockStep<'a> {
    /// Nothing to evict under the hand.
    Pass,
    /// A block of mini pages, to sweep.
    Block(FrameId),
    /// A victim, held exclusive and unswizzled.
    Victim(FrameWrite<'a>),
}

impl BufferManager {
    /// Builds the tiers and, for a new database, allocates the catalog page; for an
    /// existing one (SSD opened with [`OpenMode::Open`]) reads the superblock and the
    /// free-page list.
    ///
    /// # Errors
    /// `Config` for an impossible configuration (bad page size, no lower tier to evict
    /// to is fine, but a DRAM pool of fewer than [`MIN_DRAM_FRAMES`] frames is not);
    /// device errors; `PageSizeMismatch` when the existing file has another page size.
    pub fn open(cfg: &BufferConfig) -> Result<BufferManager> {
        let ps = cfg.page_size;
        if !ps.is_power_of_two() || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&ps) {
            return Err(BufferError::Config {
                what: format!(
                    "page size {ps} must be a power of two from {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
                ),
            }
            .into());
        }
        let mut dram = cfg.dram.clone();
        dram.frame_bytes = ps;
        cfg.techniques.validate()?;
        if cfg.techniques != Techniques::NONE && cfg.nvm.is_none() {
            return Err(BufferError::Config {
                what: format!("techniques {} work between DRAM and NVM, and there is no NVM tier", cfg.techniques),
            }
            .into());
        }
        let frames = FramePool::with_minis(DramArena::new(&dram)?, cfg.techniques.mini_pages);
        if frames.len() < MIN_DRAM_FRAMES {
            return Err(BufferError::Config {
                what: format!(
                    "DRAM of {} holds {} frames of {ps} bytes; the buffer manager needs at least {MIN_DRAM_FRAMES}",
                    dram.size,
                    frames.len()
                ),
            }
            .into());
        }
        let ssd = match &cfg.ssd {
            None => None,
            Some(s) => {
                let mut s = s.clone();
                s.page_size = ps;
                s.double_write = cfg.double_write;
                Some(match cfg.ssd_open_mode {
                    OpenMode::Create => SsdFile::create(&s)?,
                    OpenMode::Open => SsdFile::open(&s)?,
                    OpenMode::OpenOrCreate if s.path.exists() => SsdFile::open(&s)?,
                    OpenMode::OpenOrCreate => SsdFile::create(&s)?,
                })
            }
        };
        let db_id = ssd.as_ref().map_or(0, |s| s.superblock().db_id);
        // A policy that keeps clean copies only runs NVM as a volatile cache: it needs
        // SSD below it, no technique that writes NVM in place, and never reuses the pool.
        let probe = policy::by_name(&cfg.policy, 1, &cfg.nvcache, cfg.policy_seed)?;
        let probe = probe.shape();
        let volatile_nvm = probe.nvm_clean_only && cfg.nvm.is_some();
        // A durable NVM cache (`nvsql`) keeps dirty pages in NVM across checkpoints: a
        // pool it cannot reuse may have held the only copy of committed changes.
        let durable_nvm = probe.nvm_durable_cache && cfg.nvm.is_some();
        if volatile_nvm && (ssd.is_none() || cfg.techniques != Techniques::NONE) {
            return Err(BufferError::Config {
                what: format!(
                    "policy {} keeps only clean copies in NVM: it needs an SSD tier and no techniques (got {})",
                    cfg.policy, cfg.techniques
                ),
            }
            .into());
        }
        let nvm_only = ssd.is_none() && cfg.nvm.is_some() && cfg.reopen_nvm_only;
        let existing = ssd.as_ref().is_some_and(|s| s.superblock().catalog_root != 0) || nvm_only;
        let mut restart = None;
        let mut nvm_pages = Vec::new();
        let nvm = match &cfg.nvm {
            None => None,
            Some(n) => {
                let pool_missing = !n.path.exists();
                if existing && nvm_only && pool_missing {
                    // The pool is the database: a new one would be an empty database.
                    return Err(BufferError::Config {
                        what: format!("cannot reopen the database in {}: the file is missing", n.path.display()),
                    }
                    .into());
                }
                let region = NvmRegion::open(n)?;
                let verify = cfg.nvm_verify;
                // The pool of an existing database formatted: say why, and for a durable
                // cache redo from the oldest record kept, which the last checkpoint kept
                // for the oldest change only NVM held (`docs/wal.md`, "Creation").
                let formatted = |why: String| RestartInfo {
                    formatted_because: Some(format!("{}: {why}", n.path.display())),
                    log_needed_from: durable_nvm.then_some(0),
                    ..RestartInfo::default()
                };
                if existing && volatile_nvm {
                    restart = Some(RestartInfo {
                        formatted_because: Some(format!("policy {}: the NVM cache is volatile", cfg.policy)),
                        ..RestartInfo::default()
                    });
                    Some(NvmPool::format(region, ps, db_id, verify)?)
                } else if existing && (cfg.reuse_nvm || nvm_only) {
                    match NvmPool::reopen(region, ps, db_id, verify, ssd.is_some())? {
                        Ok(r) => {
                            let frames = r.pool.len();
                            restart = Some(RestartInfo {
                                nvm_frames: frames,
                                pages_reused: 0,
                                frames_cleared: r.cleared.iter().map(|(n, why)| format!("frame {n}: {why}")).collect(),
                                log_needed_from: r.log_needed_from,
                                frames_discarded: 0,
                                page_lsn_max: None,
                                scan_secs: r.scan_secs,
                                frames_gb_per_sec: (frames * ps) as f64 / r.scan_secs.max(1e-9) / 1e9,
                                formatted_because: None,
                            });
                            nvm_pages = r.pages;
                            Some(r.pool)
                        }
                        Err((_, why)) if nvm_only => {
                            // The pool is the database: formatting it would lose it.
                            return Err(BufferError::Config {
                                what: format!("cannot reopen the database in {}: {why}", n.path.display()),
                            }
                            .into());
                        }
                        Err((region, why)) => {
                            let why = if pool_missing { "the file was missing".to_string() } else { why };
                            restart = Some(formatted(why));
                            Some(NvmPool::format(region, ps, db_id, verify)?)
                        }
                    }
                } else {
                    if existing && durable_nvm {
                        restart = Some(formatted("reusing the pool is turned off (reuse_nvm)".into()));
                    }
                    Some(NvmPool::format(region, ps, db_id, verify)?)
                }
            }
        };
        let mut nvm = nvm;
        if volatile_nvm && let Some(pool) = nvm.as_mut() {
            pool.set_volatile();
        }
        let nvm_frames = nvm.as_ref().map_or(0, NvmPool::len);
        let admission = cfg.admission_set_pages.unwrap_or(policy::Hymem::default_capacity(nvm_frames));
        let policy = policy::by_name(&cfg.policy, admission, &cfg.nvcache, cfg.policy_seed)?;
        let shape = policy.shape();
        let in_place_reads = nvm_frames > 0 && shape.in_place;
        if in_place_reads && let Some(nvm) = &nvm {
            if cfg.prefetch_lines > crate::limits::PREFETCH_LINES_MAX {
                return Err(BufferError::Config {
                    what: format!(
                        "prefetch of {} lines after an in-place read is more than {}",
                        cfg.prefetch_lines,
                        crate::limits::PREFETCH_LINES_MAX
                    ),
                }
                .into());
            }
            if cfg.cpu_cache_model_bytes > super::frame::cpu_cache::CPU_CACHE_MODEL_MAX_BYTES {
                return Err(BufferError::Config {
                    what: format!(
                        "a CPU cache model of {} is larger than {}",
                        ByteSize(cfg.cpu_cache_model_bytes),
                        ByteSize(super::frame::cpu_cache::CPU_CACHE_MODEL_MAX_BYTES)
                    ),
                }
                .into());
            }
            nvm.set_cpu_cache_model(cfg.cpu_cache_model_bytes);
            nvm.set_prefetch_lines(cfg.prefetch_lines);
        }
        let tiers = Tiers { has_nvm: nvm.is_some(), has_ssd: ssd.is_some(), dram_frames: frames.len(), nvm_frames };
        // Without SSD every page must have a home in NVM; without both, in DRAM.
        let capacity_pages = match (&ssd, &nvm) {
            (Some(_), _) => cfg.max_pages.saturating_sub(1),
            (None, Some(n)) => n.len() as u64,
            (None, None) => frames.len() as u64,
        };
        let (next_pid, pages_allocated) = match &ssd {
            Some(s) if s.superblock().catalog_root != 0 => {
                let sb = s.superblock();
                (sb.pages_allocated, sb.pages_allocated)
            }
            // Without SSD, the pages are those the pool holds.
            None if nvm_only => {
                let high = nvm_pages.iter().map(|(_, h)| h.pid.0).max().unwrap_or(0);
                // A frame a crash tore may have held the catalog: the log rebuilds it
                // (a database on NVM logs a page's image before each write-back).
                let torn = restart.as_ref().is_some_and(|r: &RestartInfo| !r.frames_cleared.is_empty());
                if high < PageId::CATALOG.0 && !torn {
                    return Err(BufferError::Config {
                        what: "the NVM pool holds no page: no database to reopen (it was never closed?)".into(),
                    }
                    .into());
                }
                let high = high.max(PageId::CATALOG.0);
                (high + 1, high + 1)
            }
            _ => (PageId::CATALOG.0, 0),
        };
        if next_pid > cfg.max_pages {
            return Err(BufferError::Config {
                what: format!("the database has {next_pid} pages, more than the page table's {} ", cfg.max_pages),
            }
            .into());
        }
        if cfg.evict_batch == 0 {
            return Err(BufferError::Config { what: "evict_batch is 0: evict at least 1 page at a time".into() }.into());
        }
        let evict_batch = if nvm.is_none() && ssd.is_some() {
            cfg.evict_batch.min(frames.len() / EVICT_BATCH_FRAMES_PER_PAGE).max(1)
        } else {
            1
        };
        let nvm_clean_batch = match (&nvm, &ssd) {
            (Some(n), Some(_)) => cfg.evict_batch.min(n.len() / EVICT_BATCH_FRAMES_PER_PAGE).max(1),
            _ => 1,
        };
        let free_frames = Mutex::new((0..frames.len() as u32).rev().map(FrameId).collect());
        let provider_target = provider::target(frames.len(), evict_batch);
        let provider_nvm_target = match (&nvm, &ssd) {
            (Some(n), Some(_)) => provider::target(n.len(), nvm_clean_batch),
            _ => 0,
        };
        let bm = BufferManager {
            page_size: ps,
            frames,
            free_frames,
            hand: AtomicUsize::new(0),
            nvm,
            ssd,
            ssd_grow: Mutex::new(()),
            table: PageTable::new(cfg.max_pages),
            policy,
            shape,
            tiers,
            next_pid: AtomicU64::new(next_pid),
            freed: Mutex::new(FreePages::default()),
            free_list_write: Mutex::new(()),
            capacity_pages,
            counters: BufferCounters::new(),
            bulk_load: std::sync::atomic::AtomicBool::new(false),
            techniques: cfg.techniques,
            debug_lines: cfg.debug_lines,
            swizzled: Mutex::new(std::collections::HashMap::new()),
            restart: Mutex::new(None),
            log: std::sync::OnceLock::new(),
            flush_notes: Mutex::new(Vec::new()),
            checkpoint_starts: Mutex::new(std::collections::VecDeque::new()),
            stopped: std::sync::atomic::AtomicBool::new(false),
            stop_reason: Mutex::new(None),
            in_place_reads,
            recorder: std::sync::OnceLock::new(),
            evict_batch,
            provider: Mutex::new(None),
            provider_on: std::sync::atomic::AtomicBool::new(false),
            provider_target,
            provider_nvm_target,
            nvm_clean_batch,
        };
        if cfg.nvm_file_io
            && let Some(nvm) = &bm.nvm
        {
            nvm.set_file_io(true);
        }
        bm.policy.observe(Event::DatabaseSize(next_pid.saturating_sub(1)));
        if pages_allocated == 0 {
            let catalog = bm.allocate()?.page_id();
            assert_eq!(catalog, PageId::CATALOG, "the first page allocated is the catalog");
        } else if nvm_only {
            // Page ids below the highest that no frame holds were freed.
            let held: std::collections::HashSet<u64> = nvm_pages.iter().map(|(_, h)| h.pid.0).collect();
            let torn = restart.as_ref().is_some_and(|r| !r.frames_cleared.is_empty());
            if !held.contains(&PageId::CATALOG.0) && !torn {
                return Err(BufferError::Corrupted {
                    pid: PageId::CATALOG,
                    location: "the NVM pool".into(),
                    detail: "the catalog page is in no frame".into(),
                }
                .into());
            }
            let free: Vec<PageId> =
                (PageId::CATALOG.0 + 1..next_pid).rev().filter(|p| !held.contains(p)).map(PageId).collect();
            for &pid in &free {
                bm.table.set_free(pid);
            }
            bm.freed.lock().ready = free;
        } else {
            bm.read_free_list()?;
        }
        if let Some(mut info) = restart {
            info.pages_reused = nvm_pages.len();
            if nvm_only && !info.frames_cleared.is_empty() {
                // The page a cleared frame held has no other copy: redo rebuilds it from
                // its last image in the log (`log_nvm_images`), found by scanning all of it.
                info.log_needed_from = Some(0);
            }
            let freed: std::collections::HashSet<PageId> = bm.freed.lock().all().collect();
            let limit = bm.next_pid.load(Ordering::Relaxed);
            let nvm = bm.nvm.as_ref().expect("a restart info implies NVM");
            // Of two frames naming one page, only the one written last can be the
            // page's state: the other goes with the frames of pages not in it.
            let mut newest: std::collections::HashMap<u64, (u64, u32)> = std::collections::HashMap::new();
            for (n, h) in &nvm_pages {
                let e = newest.entry(h.pid.0).or_insert((h.written_lsn, *n));
                if h.written_lsn > e.0 {
                    *e = (h.written_lsn, *n);
                }
            }
            for (n, h) in nvm_pages {
                // A page the database no longer has (freed, or past its allocation
                // mark), or an older copy of one: not a page of this database's state.
                if h.pid.0 == 0
                    || h.pid.0 >= limit
                    || freed.contains(&h.pid)
                    || newest.get(&h.pid.0).is_some_and(|&(_, best)| best != n)
                    || bm.table.get(h.pid)? != Entry::Empty
                {
                    nvm.discard(n)?;
                    info.pages_reused -= 1;
                    info.frames_discarded += 1;
                    continue;
                }
                if info.page_lsn_max.is_none_or(|(_, lsn)| h.page_lsn > lsn) {
                    info.page_lsn_max = Some((h.pid, h.page_lsn));
                }
                bm.table.set(h.pid, Entry::Nvm(n));
            }
            *bm.restart.lock() = Some(info);
        }
        Ok(bm)
    }

    /// Bulk-load mode: while on, a DRAM victim the policy sends to SSD goes into a
    /// *free* NVM frame instead, if there is one. A load fills the database in key
    /// order, so without this NVM would start the measured run empty and need a long
    /// warm-up to fill through the admission set; with it, NVM starts as a warmed-up
    /// cache of the most recently loaded pages. No page is ever evicted from NVM on
    /// this account. Off by default; workload drivers turn it on for their load phase
    /// only and say so in their reports.
    ///
    /// Turning it off also copies the dirty DRAM pages that have no NVM frame into free
    /// NVM frames (they stay in DRAM, clean, backed by NVM): the pages a load leaves in
    /// DRAM would otherwise be written to SSD on their first eviction and read back from
    /// there. Call it with no other thread using the buffer manager.
    ///
    /// # Errors
    /// Device errors while copying to NVM (the pages stay dirty in DRAM).
    pub fn set_bulk_load(&self, on: bool) -> Result<()> {
        self.record_marker(if on { "bulk-load-on" } else { "bulk-load-off" });
        self.bulk_load.store(on, Ordering::Relaxed);
        let (Some(nvm), Some(_), false) = (&self.nvm, &self.ssd, on) else { return Ok(()) };
        if self.shape.nvm_clean_only {
            return Ok(()); // dirty pages never go to a clean-only NVM cache
        }
        for i in 0..self.frames.len() {
            let f = FrameId(i as u32);
            let meta = self.frames.meta(f);
            if !meta.holds_page() || meta.nvm.load(Ordering::Relaxed) != NO_NVM_FRAME {
                continue;
            }
            let Some(n) = nvm.pop_free() else { break };
            let g = self.frames.write(f);
            let pid = g.meta().pid();
            if !meta.holds_page()
                || !meta.dirty.load(Ordering::Relaxed)
                || meta.nvm.load(Ordering::Relaxed) != NO_NVM_FRAME
            {
                nvm.detach(n);
                continue;
            }
            let written = self.force_log(meta.page_lsn.load(Ordering::Relaxed)).and_then(|()| {
                Ok(nvm.write_page(
                    n,
                    PageId(pid),
                    &self.stored_image(f, &g),
                    true,
                    meta.page_lsn.load(Ordering::Relaxed),
                )?)
            });
            if let Err(e) = written {
                nvm.detach(n);
                return Err(e);
            }
            meta.nvm.store(n, Ordering::Relaxed);
            meta.dirty.store(false, Ordering::Relaxed);
            self.count_page_to_nvm();
            self.counters.bump(Count::NvmAdmissions);
        }
        Ok(())
    }

    /// Installs a recorder that sees every access from now on. False if one is
    /// installed already.
    pub fn set_recorder(&self, r: std::sync::Arc<dyn super::recorder::AccessRecorder>) -> bool {
        self.recorder.set(r).is_ok()
    }

    /// Passes a phase marker to the recorder, if any.
    pub fn record_marker(&self, name: &'static str) {
        if let Some(r) = self.recorder.get() {
            r.marker(name);
        }
    }

    #[inline]
    fn record(&self, kind: super::recorder::AccessKind, pid: PageId) {
        if let Some(r) = self.recorder.get() {
            r.access(kind, pid);
        }
    }

    /// The NVM techniques in use.
    pub fn techniques(&self) -> Techniques {
        self.techniques
    }

    /// Attaches the write-ahead log: from now on, before a page's bytes leave DRAM
    /// (to NVM or SSD), the log is forced up to the page's LSN. Set once.
    ///
    /// # Errors
    /// `Config` if a log is attached already.
    pub fn set_log(&self, log: std::sync::Arc<dyn LogForce>) -> Result<()> {
        self.set_lsn_clock(log.clone());
        self.log.set(log).map_err(|_| BufferError::Config { what: "a log is attached already".into() }.into())
    }

    /// The write-ahead rule: every record up to LSN `lsn` is durable before a page
    /// changed by it is written out.
    #[inline]
    fn force_log(&self, lsn: u64) -> Result<()> {
        match self.log.get() {
            Some(log) if lsn != 0 => log.force(lsn),
            _ => Ok(()),
        }
    }

    /// Without SSD an NVM frame holds its page's only durable copy, and a write over it
    /// that a crash cuts short leaves neither version: each page's image is appended to
    /// the log and forced before any of `pages` is written into NVM (the log keeps
    /// images only when it is a database's, [`LogForce::append_image`]).
    pub(super) fn log_nvm_images(&self, pages: &[(PageId, &[u8])]) -> Result<()> {
        if self.ssd.is_some() {
            return Ok(());
        }
        let Some(log) = self.log.get() else { return Ok(()) };
        let mut last = 0;
        for &(pid, bytes) in pages {
            debug_assert_eq!(bytes.len(), self.page_size, "{pid}: an image of a part of the page");
            if let Some(lsn) = log.append_image(pid, bytes)? {
                last = last.max(lsn);
            }
        }
        if last != 0 {
            log.force(last)?;
        }
        Ok(())
    }

    /// Stops the manager after a failure that an unfix could not report (see
    /// [`NvmLines`]): every later fix fails. The first reason is kept.
    pub(crate) fn stop(&self, why: String) {
        self.stop_reason.lock().get_or_insert(why);
        self.stopped.store(true, Ordering::Release);
    }

    /// `Stopped` once [`stop`](Self::stop) was called.
    #[inline]
    fn check_stopped(&self) -> Result<()> {
        if !self.stopped.load(Ordering::Relaxed) {
            return Ok(());
        }
        let what = self.stop_reason.lock().clone().unwrap_or_default();
        Err(BufferError::Stopped { store: "the buffer manager", what }.into())
    }

    pub(crate) fn page_size_bytes(&self) -> usize {
        self.page_size
    }

    /// Writes the changed lines of an in-place guard into NVM frame `n` durably, after
    /// the log is forced up to `page_lsn` (the write-ahead rule). `old` is the guard's
    /// page-sized copy of what the lines held before (for the frame's data CRC).
    pub(crate) fn write_in_place(
        &self,
        n: u32,
        pid: PageId,
        runs: &[(usize, &[u8])],
        old: &[u8],
        page_lsn: u64,
        lines: u64,
    ) -> Result<()> {
        let nvm = self.nvm.as_ref().expect("an in-place guard implies an NVM pool");
        self.force_log(page_lsn)?;
        nvm.write_lines(n, pid, runs, Some(old), page_lsn)?;
        self.counters.add(Count::NvmLinesWritten, lines);
        Ok(())
    }

    /// Claims `pid`'s table entry, which was `observed`, for a move (`PageTable::claim`).
    /// An entry `Nvm(n)` is claimed only while holding frame `n`'s in-place latch
    /// exclusive, so that no in-place guard ([`NvmLines`]) is left on the page; false
    /// if one is, or if the entry changed.
    fn claim(&self, pid: PageId, observed: Entry) -> Result<bool> {
        let Entry::Nvm(n) = observed else { return Ok(self.table.claim(pid, observed)?) };
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let latch = nvm.latch(n);
        if !latch.try_exclusive() {
            return Ok(false);
        }
        let claimed = self.table.claim(pid, observed);
        if matches!(claimed, Ok(true)) {
            nvm.bump_version(n);
        }
        latch.unlock_exclusive();
        Ok(claimed?)
    }

    /// Recovery: makes sure page `pid` counts as allocated (a page a logged structure
    /// change created after the last checkpoint): raises the allocation mark past it and
    /// takes it off the free list. Returns false, changing nothing, for a page that
    /// holds the free-page list the superblock names: such a page was free from before
    /// that checkpoint wrote the list until the crash (it is not handed out before a
    /// later checkpoint names another list), so the record naming it is older and its
    /// effect on the page moot; the caller skips the record, and the page's bytes, which
    /// a second crash during recovery reads again, stay as they are.
    ///
    /// # Errors
    /// `Full` past the page table.
    pub fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        if pid.0 > self.capacity_pages {
            return Err(self.full_error().into());
        }
        let mut free = self.freed.lock();
        if free.list.contains(&pid) {
            return Ok(false);
        }
        self.next_pid.fetch_max(pid.0 + 1, Ordering::AcqRel);
        free.ready.retain(|p| *p != pid);
        self.table.clear_free(pid)?;
        drop(free);
        if self.ssd.is_none() && self.table.get(pid)? == Entry::Empty {
            // Without SSD no tier holds a page allocated after the last checkpoint
            // that never left DRAM, or one whose NVM frame a crash tore: it starts
            // zeroed, as on an SSD past its end, and the log's images rebuild it.
            let mut g = self.free_frame()?;
            self.reset_frame(g.frame(), pid, NO_NVM_FRAME, true);
            g.fill(0);
            self.table.set(pid, Entry::Dram(g.frame()));
            self.counters.bump(Count::Allocations);
        }
        Ok(true)
    }

    /// Recovery: whether page `pid` lives in an NVM frame (found again at restart, or
    /// put there since) that holds the change logged at `lsn`: the frame's header names
    /// the page, is not IN_UPDATE, and its page LSN is at or past `lsn` (every change to
    /// a page is made under its latch, in LSN order, so the frame holds all of the
    /// page's changes up to its page LSN). Redo skips such a change without fixing the
    /// page, which for `nvsql` would move it out of NVM (an exclusive whole-page fix),
    /// writing it to SSD on the way. False without NVM, for a page elsewhere, or a
    /// header of page LSN 0 (unknown).
    ///
    /// # Errors
    /// `NoSuchPage` past the page table; an unreadable header.
    pub fn recover_nvm_holds(&self, pid: PageId, lsn: u64) -> Result<bool> {
        let Some(nvm) = &self.nvm else { return Ok(false) };
        let Entry::Nvm(n) = self.table.get(pid)? else { return Ok(false) };
        let Some(h) = nvm.header(n)? else { return Ok(false) };
        Ok(h.pid == pid && h.flags & super::nvm_pool::FLAG_IN_UPDATE == 0 && h.page_lsn >= lsn && h.page_lsn != 0)
    }

    /// Stamps the NVM frames written from now on with `log`'s end LSN (their written
    /// LSN, `nvm_pool`'s module doc): at open, before redo writes any frame.
    pub fn set_lsn_clock(&self, log: std::sync::Arc<dyn LogForce>) {
        if let Some(nvm) = &self.nvm {
            nvm.set_lsn_clock(log);
        }
    }

    /// Recovery, before redo: every page of `flushed` (page, latest last-flush LSN of
    /// the scanned log's flush records) whose NVM frame found at open was last written
    /// below that LSN loses the frame: the SSD copy was taken after it and holds all it
    /// held, and redo skips the changes below the LSN without reading the page, so only
    /// the SSD copy may be used. Returns how many frames went.
    ///
    /// # Errors
    /// `NoSuchPage` past the page table; device errors reading or clearing a header.
    pub fn recover_drop_stale_nvm(&self, flushed: impl IntoIterator<Item = (PageId, u64)>) -> Result<usize> {
        let Some(nvm) = &self.nvm else { return Ok(0) };
        let mut dropped = 0;
        for (pid, flush_lsn) in flushed {
            if pid.0 >= self.capacity_pages {
                continue; // a page the log names past the table: redo reports it
            }
            let Entry::Nvm(n) = self.table.get(pid)? else { continue };
            let Some(h) = nvm.header(n)? else { continue };
            assert_eq!(h.pid, pid, "frame {n} holds {} but the table maps {pid} to it", h.pid);
            if h.written_lsn >= flush_lsn {
                continue;
            }
            nvm.discard(n)?;
            self.table.set(pid, Entry::Empty);
            if let Some(info) = self.restart.lock().as_mut() {
                info.pages_reused = info.pages_reused.saturating_sub(1);
            }
            dropped += 1;
        }
        Ok(dropped)
    }

    /// Recovery: page `pid` is free (on the free list, the list's own pages included, or
    /// at or above the allocation mark).
    pub fn recover_is_free(&self, pid: PageId) -> bool {
        pid.0 >= self.next_pid.load(Ordering::Acquire) || self.freed.lock().contains(&pid)
    }

    /// Recovery: page `pid` was freed after the last checkpoint (the caller replays the
    /// log that freed it). Any copy of it in DRAM or NVM is dropped (a stale NVM copy
    /// must not come back at the next restart) and it goes on the free list.
    ///
    /// # Errors
    /// Device errors while dropping its copies.
    pub fn recover_freed(&self, pid: PageId) -> Result<()> {
        if pid == PageId::CATALOG || pid.0 >= self.next_pid.load(Ordering::Acquire) || self.freed.lock().contains(&pid)
        {
            return Ok(());
        }
        let page = self.fix_exclusive(pid)?;
        self.free(page)
    }

    /// For a durable NVM cache ([`Policy::nvm_durable_cache`], `nvsql`): the LSN of the
    /// oldest change that only NVM holds (dirty frames are not written to SSD by a
    /// checkpoint), which the log must keep for recovery to rebuild a frame a crash
    /// caught mid-write; `None` for other policies or with no dirty frame. Call it
    /// after a [`checkpoint`](Self::checkpoint) that followed the redo point.
    pub fn oldest_unflushed_lsn(&self) -> Option<u64> {
        if !self.shape.nvm_durable_cache {
            return None;
        }
        self.nvm.as_ref().and_then(NvmPool::oldest_dirty_rec_lsn)
    }

    /// Opening the SSD page file found no double-write area it could use where one was
    /// expected ([`crate::device::ssd::SsdInfo::double_write_lost`]), and why.
    pub fn double_write_lost(&self) -> Option<&str> {
        self.ssd.as_ref().and_then(|s| s.info().double_write_lost.as_deref())
    }

    /// What opening the SSD page file did with the double-write file it found: the
    /// pages it restored (`None`: no SSD, or no double-write file was there).
    pub fn torn_pages(&self) -> Option<&TornPageRecovery> {
        self.ssd.as_ref().and_then(|s| s.info().torn_pages.as_ref())
    }

    /// What reopening found in the NVM pool (`None` for a new database, or without
    /// NVM, or with `reuse_nvm` off).
    pub fn restart_info(&self) -> Option<RestartInfo> {
        self.restart.lock().clone()
    }

    fn lines_per_page(&self) -> u64 {
        (self.page_size / CACHE_LINE_BYTES) as u64
    }

    fn count_page_to_nvm(&self) {
        self.counters.bump(Count::DramToNvm);
        self.counters.add(Count::NvmLinesWritten, self.lines_per_page());
    }

    /// Its page size, policy, tier sizes, pages in use and techniques.
    pub fn info(&self) -> BufferInfo {
        BufferInfo {
            page_size: self.page_size,
            policy: self.policy.name(),
            dram_frames: self.frames.len(),
            nvm_frames: self.tiers.nvm_frames,
            has_ssd: self.ssd.is_some(),
            pages_in_use: self.pages_in_use(),
            techniques: self.techniques,
        }
    }

    /// The placement policy it asks.
    pub fn policy(&self) -> &dyn Policy {
        &*self.policy
    }

    /// The policy's migration knobs now (`spitfire`), `None` for a policy without knobs.
    pub fn knobs(&self) -> Option<policy::MigrationKnobs> {
        self.shape.knobs.as_ref().map(|k| k.get())
    }

    /// Sets the policy's migration knobs while the engine runs (the online tuner's
    /// lever). Returns false if the policy has none.
    pub fn set_knobs(&self, knobs: policy::MigrationKnobs) -> bool {
        self.shape.knobs.as_ref().map(|k| k.set(knobs)).is_some()
    }

    /// The NVM pool, if there is an NVM tier.
    pub fn nvm(&self) -> Option<&NvmPool> {
        self.nvm.as_ref()
    }

    /// The SSD page file, if there is an SSD tier.
    pub fn ssd(&self) -> Option<&SsdFile> {
        self.ssd.as_ref()
    }

    /// The free pages, ascending, the pages holding the free-page list included (for
    /// tests and tools).
    pub fn free_pages(&self) -> Vec<PageId> {
        let mut v: Vec<PageId> = self.freed.lock().all().collect();
        v.sort();
        v
    }

    /// Pages allocated and not freed, the catalog included (the pages holding the
    /// free-page list count as free).
    pub fn pages_in_use(&self) -> u64 {
        self.next_pid.load(Ordering::Relaxed) - 1 - self.freed.lock().len() as u64
    }

    /// Which lines of page `pid` are in DRAM and which are dirty, if it is in DRAM
    /// (for tests and tools; racy while others run).
    ///
    /// # Errors
    /// `NoSuchPage` past the page table.
    pub fn residency(&self, pid: PageId) -> Result<Option<Residency>> {
        Ok(match self.table.get(pid)? {
            Entry::Dram(f) => {
                let meta = self.frames.meta(f);
                let last = self.frames.lines() - 1;
                let all = meta.resident_all.load(Ordering::Relaxed);
                let lines = |m| self.frames.runs(m, f, 0, last, true).into_iter().flat_map(|(s, k)| s..s + k).collect();
                Some(Residency {
                    mini: false,
                    resident_all: all,
                    resident: if all { (0..=last).collect() } else { lines(Mask::Resident) },
                    dirty_lines: lines(Mask::Dirty),
                    dirty_whole: meta.dirty.load(Ordering::Relaxed),
                    swizzled_children: meta.swizzled_children.load(Ordering::Relaxed) as usize,
                    swizzled: meta.parent.load(Ordering::Relaxed) != NO_PARENT,
                })
            }
            Entry::Mini(i) => {
                let m = self.frames.minis().meta(i);
                let lines = m.lines();
                let dirty = m.dirty.load(Ordering::Relaxed);
                Some(Residency {
                    mini: true,
                    resident_all: false,
                    dirty_lines: lines
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| dirty & (1 << k) != 0)
                        .map(|(_, l)| *l)
                        .collect(),
                    resident: lines,
                    dirty_whole: false,
                    swizzled_children: 0,
                    swizzled: false,
                })
            }
            _ => None,
        })
    }

    /// Where a page is now (for tests and tools; racy while others run).
    ///
    /// # Errors
    /// `NoSuchPage` past the page table.
    pub fn location(&self, pid: PageId) -> Result<Entry> {
        Ok(self.table.get(pid)?)
    }

    /// The counters of the buffer manager, its devices and its policy now (counted since
    /// open: take two and use [`TierStats::since`]).
    pub fn stats(&self) -> TierStats {
        let policy_stats = self.policy.stats();
        TierStats {
            buffer: self.counters.snapshot(),
            nvm: self.nvm.as_ref().map(|n| n.region().core().stats().snapshot()),
            ssd: self.ssd.as_ref().map(|s| s.core().stats().snapshot()),
            ssd_double_write: self
                .ssd
                .as_ref()
                .filter(|s| s.info().double_write_mode == DoubleWriteMode::Ssd)
                .and_then(|s| s.double_write_core())
                .map(|c| c.stats().snapshot()),
            nvm_double_write: self
                .ssd
                .as_ref()
                .filter(|s| s.info().double_write_mode == DoubleWriteMode::Nvm)
                .and_then(|s| s.double_write_core())
                .map(|c| c.stats().snapshot()),
            nvm_cache: match policy_stats {
                PolicyStats::Cache(c) => Some(c),
                _ => None,
            },
            nvsql: match policy_stats {
                PolicyStats::Nvsql(n) => Some(n),
                _ => None,
            },
        }
    }

    // ----- fixing -------------------------------------------------------------------

    /// The fix loop shared by both latch modes: `try_latch` tries the frame in the
    /// caller's mode, `from_load` turns a freshly loaded (exclusive) frame into that mode.
    #[inline]
    fn fix_with<'a, G>(
        &'a self,
        pid: PageId,
        try_latch: impl Fn(&'a FramePool, FrameId) -> Option<G>,
        frame_pid: impl Fn(&G) -> u64,
        from_load: impl Fn(FrameWrite<'a>) -> G,
    ) -> Result<G> {
        self.check_stopped()?;
        let slot = self.table.slot(pid)?;
        let mut spins = 0u32;
        let mut waited_since: Option<Instant> = None;
        loop {
            match Entry::decode(slot.load(Ordering::Acquire)) {
                Entry::Dram(f) => {
                    self.frames.prefetch(f);
                    // A mismatched page id: the frame was reused between lookup and latch.
                    if let Some(g) = try_latch(&self.frames, f)
                        && frame_pid(&g) == pid.0
                    {
                        let meta = self.frames.meta(f);
                        if meta.resident_all.load(Ordering::Relaxed) {
                            meta.touch();
                            self.counters.bump(Count::DramHits);
                            return Ok(g);
                        }
                        // Partly resident (cache-line-grained): whole-page access loads
                        // the rest first, under an exclusive fix.
                        drop(g);
                        self.complete(pid)?;
                        continue;
                    }
                }
                Entry::Mini(_) => {
                    // Whole-page access to a mini page promotes it.
                    self.complete(pid)?;
                    continue;
                }
                Entry::Busy => {}
                observed @ (Entry::Empty | Entry::Nvm(_)) => {
                    if observed == Entry::Empty {
                        self.check_allocated(pid)?;
                    }
                    if let Some(g) = self.load(pid, observed)? {
                        return Ok(from_load(g));
                    }
                }
            }
            // Someone holds or moves the page: wait, bounded in time.
            backoff(&mut spins);
            if spins.is_multiple_of(1024) {
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(PAGE_BUSY_WAIT_MS_MAX) {
                    return Err(BufferError::Exhausted { pool: "page latch", frames: 1, rounds: spins as usize }.into());
                }
            }
        }
    }

    /// Makes page `pid` fully resident in a full frame (loading its missing lines,
    /// promoting a mini page).
    fn complete(&self, pid: PageId) -> Result<()> {
        let mut g = self.fix_lines(pid, true)?;
        crate::buffer::LinePage::whole(&mut g)?;
        Ok(())
    }

    /// The line-grained fix: the page table, then the latch of the full frame or mini
    /// page, or a load.
    fn fix_lines_impl(&self, pid: PageId, exclusive: bool) -> Result<BmLines<'_>> {
        self.check_stopped()?;
        let slot = self.table.slot(pid)?;
        let mut spins = 0u32;
        let mut waited_since: Option<Instant> = None;
        // The policy's answer for this fix, asked once however often the loop turns.
        let mut access: Option<policy::NvmAccess> = None;
        loop {
            let entry = Entry::decode(slot.load(Ordering::Acquire));
            let latched = match entry {
                Entry::Dram(f) => Some((&self.frames.meta(f).latch, Place::Full(f))),
                Entry::Mini(i) => Some((&self.frames.minis().meta(i).latch, Place::Mini(i))),
                Entry::Busy => None,
                Entry::Nvm(n) => {
                    let info = PageInfo::fixing(pid, true);
                    match *access.get_or_insert_with(|| self.policy.nvm_access(&info, exclusive, &self.tiers)) {
                        policy::NvmAccess::InPlace => {
                            if let Some(g) = self.fix_in_place(pid, n, exclusive)? {
                                return Ok(BmLines::Nvm(g));
                            }
                        }
                        policy::NvmAccess::Migrate => {
                            if let Some(g) = self.load_lines_page(pid, entry)? {
                                return Ok(BmLines::Dram(g));
                            }
                        }
                    }
                    None
                }
                Entry::Empty => {
                    self.check_allocated(pid)?;
                    let info = PageInfo::fixing(pid, false);
                    let miss = self.policy.ssd_miss(&info, &self.tiers);
                    // `Nvm`: into NVM only, and the next turn asks whether it goes on
                    // to DRAM; if NVM has no frame to give, into DRAM.
                    let to = match miss {
                        MissTarget::Nvm if self.nvm.is_some() && self.load_into_nvm(pid)? => None,
                        MissTarget::Nvm => Some(MissTarget::Dram),
                        other => Some(other),
                    };
                    if let Some(to) = to
                        && let Some(g) = self.load_to(pid, entry, Some(to))?
                    {
                        return Ok(BmLines::Dram(LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
                    }
                    None
                }
            };
            if let Some((latch, place)) = latched {
                let ok = if exclusive { latch.try_exclusive() } else { latch.try_shared() };
                if ok {
                    let held = match place {
                        Place::Full(f) => self.frames.meta(f).pid(),
                        Place::Mini(i) => self.frames.minis().meta(i).pid(),
                    };
                    if held == pid.0 {
                        match place {
                            Place::Full(f) => self.frames.meta(f).touch(),
                            Place::Mini(i) => self.frames.minis().meta(i).touch(),
                        }
                        self.counters.bump(Count::DramHits);
                        return Ok(BmLines::Dram(LineGuard::new(self, pid, place, exclusive)));
                    }
                    if exclusive {
                        latch.unlock_exclusive();
                    } else {
                        latch.unlock_shared();
                    }
                }
            }
            backoff(&mut spins);
            if spins.is_multiple_of(1024) {
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(PAGE_BUSY_WAIT_MS_MAX) {
                    return Err(BufferError::Exhausted { pool: "page latch", frames: 1, rounds: spins as usize }.into());
                }
            }
        }
    }

    /// A shared fix of `pid` in place in NVM, if the page is in NVM only, the policy
    /// says to read it in place and its frame's latch is free. Out of line: the hit path
    /// of `fix_shared` stays small.
    #[cold]
    #[inline(never)]
    fn shared_in_place(&self, pid: PageId) -> Result<Option<NvmRead<'_>>> {
        let Some((nvm, n)) = self.read_in_place(pid)? else { return Ok(None) };
        let latch = nvm.latch(n);
        if !latch.try_shared() {
            return Ok(None);
        }
        // With the latch held the entry is stable (movers claim under it).
        if self.table.get(pid)? == Entry::Nvm(n) && nvm.pid(n) == Some(pid) {
            if let Err(e) = nvm.check_before_read(n, pid) {
                latch.unlock_shared();
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
            nvm.touch(n);
            in_place::count_fix(self, false);
            return Ok(Some(NvmRead::new(nvm, n, pid, self.page_size)));
        }
        latch.unlock_shared();
        Ok(None)
    }

    /// An optimistic read of `pid` in place in NVM (see [`shared_in_place`](Self::shared_in_place)).
    #[cold]
    #[inline(never)]
    fn optimistic_in_place(&self, pid: PageId) -> Result<Option<NvmOptimistic<'_>>> {
        let Some((nvm, n)) = self.read_in_place(pid)? else { return Ok(None) };
        if nvm.verify() == NvmVerify::Every || !nvm.is_checked(n) {
            // The check reads the page under the shared latch, as a shared fix would.
            let latch = nvm.latch(n);
            if !latch.try_shared() {
                return Ok(None);
            }
            let checked = if self.table.get(pid).ok() == Some(Entry::Nvm(n)) && nvm.pid(n) == Some(pid) {
                nvm.check_before_read(n, pid)
            } else {
                Ok(())
            };
            latch.unlock_shared();
            if let Err(e) = checked {
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
        }
        let g = NvmOptimistic::try_new(nvm, n, self.page_size);
        if g.is_some() {
            in_place::count_fix(self, false);
        }
        Ok(g)
    }

    /// For a whole-page read: the NVM frame to read `pid` in, if the page is in NVM only
    /// and the policy says to read it in place.
    #[inline]
    fn read_in_place(&self, pid: PageId) -> Result<Option<(&NvmPool, u32)>> {
        self.check_stopped()?;
        let Entry::Nvm(n) = self.table.get(pid)? else { return Ok(None) };
        let info = PageInfo::fixing(pid, true);
        if self.policy.nvm_access(&info, false, &self.tiers) == policy::NvmAccess::Migrate {
            return Ok(None);
        }
        Ok(self.nvm.as_ref().map(|nvm| (nvm, n)))
    }

    /// Latches NVM frame `n` for in-place access to `pid` (shared, or exclusive to
    /// write) and checks the page if due (`NvmPool::check_before_read`); `None` if the
    /// latch is taken, the page left the frame meanwhile, or its clean frame failed the
    /// check and was dropped (look again: the page is on SSD).
    ///
    /// # Errors
    /// `Corrupted` for a dirty frame that fails the check.
    fn fix_in_place(&self, pid: PageId, n: u32, exclusive: bool) -> Result<Option<NvmLines<'_>>> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let latch = nvm.latch(n);
        if !(if exclusive { latch.try_exclusive() } else { latch.try_shared() }) {
            return Ok(None);
        }
        let unlock = || {
            if exclusive {
                latch.unlock_exclusive();
            } else {
                latch.unlock_shared();
            }
        };
        // Movers claim the entry only while holding the latch, so with it held the entry
        // is stable: check it still names this frame.
        if self.table.get(pid).ok() == Some(Entry::Nvm(n)) && nvm.pid(n) == Some(pid) {
            if let Err(e) = nvm.check_before_read(n, pid) {
                unlock();
                self.drop_corrupt_frame(pid, n, e)?;
                return Ok(None);
            }
            nvm.touch(n);
            in_place::count_fix(self, exclusive);
            return Ok(Some(NvmLines::new(self, nvm, n, pid, exclusive)));
        }
        unlock();
        Ok(None)
    }

    /// NVM frame `n` of `pid` failed its check before a read (`e`); the caller holds no
    /// latch of it. A clean frame's page is on SSD as it was: the frame is dropped, and
    /// the caller looks again (`Ok`). A dirty frame holds the only copy of its changes,
    /// and a pool without SSD the only copy of its pages: the error stands.
    ///
    /// # Errors
    /// `e`, for a dirty frame or without SSD; device errors clearing the frame.
    #[cold]
    fn drop_corrupt_frame(&self, pid: PageId, n: u32, e: BufferError) -> Result<()> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        if self.ssd.is_none() || nvm.is_dirty(n) {
            return Err(e.into());
        }
        if !self.claim(pid, Entry::Nvm(n))? {
            return Ok(()); // moved or held meanwhile: look again
        }
        // Owned now. Rewritten between the check and the claim? Then it may be good, or
        // dirty with changes only it holds.
        let recheck = if nvm.pid(n) == Some(pid) { nvm.check_page(n, pid) } else { Ok(()) };
        if recheck.is_ok() || nvm.is_dirty(n) {
            self.table.set(pid, Entry::Nvm(n));
            return recheck.map_err(Into::into);
        }
        if let Err(err) = nvm.release(n) {
            self.table.set(pid, Entry::Nvm(n));
            return Err(err.into());
        }
        self.policy.observe(Event::NvmLeft(pid));
        self.counters.bump(Count::NvmCorruptDropped);
        self.table.set(pid, Entry::Empty);
        Ok(())
    }

    /// Reads page `pid` from SSD into an NVM frame only (`MissTarget::Nvm`): the
    /// table then says `Nvm(n)`. True if the caller should look again (installed, or
    /// another thread changed the entry first); false if NVM has no frame to give (all
    /// its pages are in DRAM too, or held), so the page must go to DRAM.
    fn load_into_nvm(&self, pid: PageId) -> Result<bool> {
        let (nvm, ssd) = (self.nvm.as_ref().expect("checked"), self.ssd.as_ref().expect("an EMPTY page is on SSD"));
        if !self.table.claim(pid, Entry::Empty)? {
            return Ok(true);
        }
        let installed = (|| {
            let Some(n) = self.nvm_frame()? else { return Ok(None) };
            let mut buf = AlignedBuf::new(self.page_size);
            let read = if pid.0 >= ssd.page_count() {
                buf.fill(0); // allocated but never written back, as in `fill`
                Ok(())
            } else {
                self.ssd_read(ssd, pid, &mut buf).map(|_| ())
            };
            if let Err(e) = read.and_then(|()| nvm.write_page(n, pid, &buf, false, 0).map_err(Into::into)) {
                nvm.detach(n);
                return Err(e);
            }
            Ok(Some(n))
        })();
        match installed {
            Ok(Some(n)) => {
                self.counters.bump(Count::SsdReads);
                self.count_page_to_nvm();
                self.counters.bump(Count::NvmAdmissions);
                self.table.set(pid, Entry::Nvm(n));
                Ok(true)
            }
            Ok(None) => {
                self.table.set(pid, Entry::Empty);
                Ok(false)
            }
            Err(e) => {
                self.table.set(pid, Entry::Empty);
                Err(e)
            }
        }
    }

    /// Loads a page for line-grained access: an NVM page with cache-line-grained pages
    /// on gets a mini page (or an empty full frame) and no bytes yet; anything else is
    /// loaded whole. `None` if another thread changed the entry first.
    fn load_lines_page(&self, pid: PageId, observed: Entry) -> Result<Option<LineGuard<'_>>> {
        let Entry::Nvm(n) = observed else {
            return Ok(self.load(pid, observed)?.map(|g| LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
        };
        if !self.techniques.cl_grained {
            return Ok(self.load(pid, observed)?.map(|g| LineGuard::new(self, pid, Place::Full(g.into_held()), true)));
        }
        if !self.claim(pid, observed)? {
            return Ok(None);
        }
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        let place = if self.techniques.mini_pages {
            match self.mini_page() {
                Ok(i) => {
                    let m = self.frames.minis().meta(i);
                    m.clear();
                    m.pid.store(pid.0, Ordering::Relaxed);
                    m.nvm.store(n, Ordering::Relaxed);
                    m.referenced.store(true, Ordering::Relaxed);
                    self.table.set(pid, Entry::Mini(i));
                    Place::Mini(i)
                }
                Err(e) => {
                    self.table.set(pid, observed);
                    return Err(e);
                }
            }
        } else {
            match self.free_frame() {
                Ok(g) => {
                    let f = g.frame();
                    self.reset_frame(f, pid, n, false);
                    self.table.set(pid, Entry::Dram(f));
                    Place::Full(g.into_held())
                }
                Err(e) => {
                    self.table.set(pid, observed);
                    return Err(e);
                }
            }
        };
        nvm.touch(n);
        self.counters.bump(Count::NvmHits);
        Ok(Some(LineGuard::new(self, pid, place, true)))
    }

    /// Sets up frame `f` (held exclusive) for page `pid` with NVM copy `n`.
    fn reset_frame(&self, f: FrameId, pid: PageId, n: u32, resident_all: bool) {
        let meta = self.frames.meta(f);
        meta.pid.store(pid.0, Ordering::Relaxed);
        meta.nvm.store(n, Ordering::Relaxed);
        meta.dirty.store(false, Ordering::Relaxed);
        meta.referenced.store(true, Ordering::Relaxed);
        meta.resident_all.store(resident_all, Ordering::Relaxed);
        meta.page_lsn.store(0, Ordering::Relaxed);
        meta.first_lsn.store(0, Ordering::Relaxed);
        meta.flush_lsn.store(0, Ordering::Relaxed);
        self.frames.clear_mask(Mask::Resident, f);
        self.frames.clear_mask(Mask::Dirty, f);
    }

    /// A free mini page, latched exclusive: from a block with room, else from a new
    /// block (a full frame lent out).
    fn mini_page(&self) -> Result<u32> {
        let minis = self.frames.minis();
        let i = match minis.pop() {
            Some(i) => i,
            None => {
                let g = self.free_frame()?;
                // A block is no page's frame: nothing of its last page may linger.
                self.reset_frame(g.frame(), PageId(MINI_BLOCK), NO_NVM_FRAME, true);
                g.meta().dirty.store(false, Ordering::Relaxed);
                minis.add_block(g.frame())
            }
        };
        // Free, but a stale fixer may be looking at it for a moment.
        minis.meta(i).latch.exclusive();
        self.counters.bump(Count::MiniAllocations);
        Ok(i)
    }

    // ----- pointer swizzling (paper §3.3) -----------------------------------------------

    /// Replaces the page id at byte `offset` of `parent` (read optimistically at its
    /// version) with a reference to frame `child`, if nothing changed meanwhile and the
    /// child is not referenced by frame yet. `child_version`: the child's version when
    /// it was read optimistically, or `None` if the caller holds the child's latch.
    /// Everything is only *tried*: a busy latch means no swizzle this time.
    fn try_swizzle(&self, parent: &FrameOptimistic<'_>, offset: usize, child: FrameId, child_version: Option<u64>) {
        let (p, pm, cm) = (parent.frame(), parent.meta(), self.frames.meta(child));
        if p == child || !pm.latch.try_exclusive() {
            return;
        }
        let mut done = false;
        if pm.version.load(Ordering::Relaxed) == parent.version() && pm.holds_page() {
            let child_latched = child_version.is_none() || cm.latch.try_shared();
            if child_latched {
                let pid = cm.pid();
                let same = child_version.is_none_or(|v| cm.version.load(Ordering::Relaxed) == v);
                if same
                    && cm.holds_page()
                    && cm.parent.load(Ordering::Relaxed) == NO_PARENT
                    && self.frames.read_ref(p, offset) == pid
                {
                    std::sync::atomic::fence(Ordering::Release);
                    self.frames.write_ref(p, offset, SWIZZLED | child.0 as u64);
                    cm.parent.store(p.0, Ordering::Relaxed);
                    cm.parent_offset.store(
                        u16::try_from(offset).expect("a reference lies in a page of at most 64 KiB"),
                        Ordering::Relaxed,
                    );
                    pm.swizzled_children.fetch_add(1, Ordering::Relaxed);
                    self.swizzled.lock().entry(p.0).or_default().push(child.0);
                    self.counters.bump(Count::Swizzles);
                    done = true;
                }
                if child_version.is_some() {
                    cm.latch.unlock_shared();
                }
            }
        }
        if done {
            bump(pm);
        }
        pm.latch.unlock_exclusive();
    }

    /// Turns frame `child`'s reference in its parent (whose exclusive latch the caller
    /// holds) back into its page id.
    fn unswizzle_held(&self, parent: FrameId, child: FrameId) {
        let cm = self.frames.meta(child);
        debug_assert_eq!(cm.parent.load(Ordering::Relaxed), parent.0);
        let off = cm.parent_offset.load(Ordering::Relaxed) as usize;
        debug_assert_eq!(self.frames.read_ref(parent, off), SWIZZLED | child.0 as u64);
        self.frames.write_ref(parent, off, cm.pid());
        cm.parent.store(NO_PARENT, Ordering::Relaxed);
        self.frames.meta(parent).swizzled_children.fetch_sub(1, Ordering::Relaxed);
        self.counters.bump(Count::Unswizzles);
    }

    /// Before frame `g`'s page leaves it: unswizzles its reference in its parent, if
    /// any. False if the parent's latch is busy (pick another victim).
    fn unswizzle_victim(&self, g: &FrameWrite<'_>) -> bool {
        let cm = g.meta();
        let p = cm.parent.load(Ordering::Relaxed);
        if p == NO_PARENT {
            return true;
        }
        let pm = self.frames.meta(FrameId(p));
        if !pm.latch.try_exclusive() {
            return false;
        }
        // The parent may have unswizzled us before we got its latch.
        if cm.parent.load(Ordering::Relaxed) == p {
            self.unswizzle_held(FrameId(p), g.frame());
            let mut map = self.swizzled.lock();
            if let Some(v) = map.get_mut(&p) {
                v.retain(|c| *c != g.frame().0);
                if v.is_empty() {
                    map.remove(&p);
                }
            }
            bump(pm);
        }
        pm.latch.unlock_exclusive();
        true
    }

    /// Unswizzles every child of frame `g` (held exclusive): an exclusive holder may
    /// move or copy its entries, so it must see page ids only.
    fn unswizzle_children(&self, g: &FrameWrite<'_>) {
        let p = g.frame();
        let children = self.swizzled.lock().remove(&p.0).unwrap_or_default();
        for c in children {
            self.unswizzle_held(p, FrameId(c));
        }
        debug_assert_eq!(g.meta().swizzled_children.load(Ordering::Relaxed), 0);
    }

    /// The bytes of frame `f`'s page as they are stored: with its swizzled children's
    /// references turned back into page ids. The caller holds the frame's latch.
    fn stored_image<'b>(&self, f: FrameId, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
        if self.frames.meta(f).swizzled_children.load(Ordering::Relaxed) == 0 {
            return std::borrow::Cow::Borrowed(bytes);
        }
        let mut copy = bytes.to_vec();
        for c in self.swizzled.lock().get(&f.0).into_iter().flatten() {
            let cm = self.frames.meta(FrameId(*c));
            let off = cm.parent_offset.load(Ordering::Relaxed) as usize;
            copy[off..off + 8].copy_from_slice(&cm.pid().to_le_bytes());
        }
        std::borrow::Cow::Owned(copy)
    }

    // ----- hooks of the line guards (frame::lines) ------------------------------------

    pub(crate) fn frames(&self) -> &FramePool {
        &self.frames
    }

    pub(crate) fn debug_lines(&self) -> bool {
        self.debug_lines
    }

    pub(crate) fn count(&self, c: Count, n: u64) {
        self.counters.add(c, n);
    }

    /// Copies lines of `pid` at page offset `off` from its NVM frame `n`.
    pub(crate) fn load_lines(&self, n: u32, pid: PageId, off: usize, dst: &mut [u8]) -> Result<()> {
        debug_assert_ne!(n, NO_NVM_FRAME, "{pid}: lines missing from a page without an NVM copy");
        let nvm = self.nvm.as_ref().expect("a partly resident page has an NVM copy");
        nvm.read_lines(n, pid, off, dst)?;
        self.counters.add(Count::NvmLinesLoaded, (dst.len() / CACHE_LINE_BYTES) as u64);
        Ok(())
    }

    /// An empty full frame for a mini page's promotion.
    pub(crate) fn promotion_frame(&self) -> Result<FrameWrite<'_>> {
        self.free_frame()
    }

    /// Points the page table at a promoted page's full frame.
    pub(crate) fn publish_promotion(&self, pid: PageId, f: FrameId) {
        self.table.set(pid, Entry::Dram(f));
        self.counters.bump(Count::MiniPromotions);
    }

    /// Frees mini page `i` (cleared, unlatched); gives its block back if it was the last.
    pub(crate) fn release_mini(&self, i: u32) {
        if let Some(block) = self.frames.minis().push(i) {
            self.frames.meta(block).pid.store(NO_PAGE, Ordering::Relaxed);
            self.free_frames.lock().push(block);
        }
    }

    fn check_allocated(&self, pid: PageId) -> Result<()> {
        if pid.0 == 0 || pid.0 >= self.next_pid.load(Ordering::Acquire) {
            return Err(BufferError::NoSuchPage { pid, why: "never allocated" }.into());
        }
        if self.table.is_free(pid)? {
            return Err(BufferError::NoSuchPage { pid, why: "freed" }.into());
        }
        if self.ssd.is_none() {
            return Err(BufferError::NoSuchPage { pid, why: "freed (no tier holds it)" }.into());
        }
        Ok(())
    }

    /// Moves `pid` into a DRAM frame from where `observed` says it is. `None` if another
    /// thread changed the entry first.
    fn load(&self, pid: PageId, observed: Entry) -> Result<Option<FrameWrite<'_>>> {
        self.load_to(pid, observed, None)
    }

    /// [`load`](Self::load) with the policy's answer for an SSD miss given (`None`: ask).
    fn load_to(&self, pid: PageId, observed: Entry, miss: Option<MissTarget>) -> Result<Option<FrameWrite<'_>>> {
        if !self.claim(pid, observed)? {
            return Ok(None);
        }
        let mut g = match self.free_frame() {
            Ok(g) => g,
            Err(e) => {
                self.table.set(pid, observed);
                return Err(e);
            }
        };
        match self.fill(pid, observed, &mut g, miss) {
            Ok(()) => self.install(pid, observed, g).map(Some),
            Err(e) => {
                // A corrupt clean frame `fill` dropped is gone: the page is on SSD.
                let back = match observed {
                    Entry::Nvm(n) if self.nvm.as_ref().is_some_and(|nvm| nvm.pid(n) != Some(pid)) => Entry::Empty,
                    other => other,
                };
                self.table.set(pid, back);
                self.return_frame(g);
                Err(e)
            }
        }
    }

    /// Frame `g` (held, filled with page `pid`, whose entry was `observed` and is
    /// claimed) becomes the page's DRAM frame: set up, and published in the page table.
    /// On an error the entry is `observed` again and the frame free.
    fn install<'a>(&'a self, pid: PageId, observed: Entry, g: FrameWrite<'a>) -> Result<FrameWrite<'a>> {
        let n = g.meta().nvm.load(Ordering::Relaxed);
        // What the SSD copy's seal said survives the reset.
        let flushed = g.meta().flush_lsn.load(Ordering::Relaxed);
        self.reset_frame(g.frame(), pid, n, true);
        g.meta().flush_lsn.store(flushed, Ordering::Relaxed);
        if n != NO_NVM_FRAME
            && self.shape.nvm_disjoint
            && let Err(e) = self.leave_nvm(&g, pid, n)
        {
            self.table.set(pid, observed);
            self.return_frame(g);
            return Err(e);
        }
        self.table.set(pid, Entry::Dram(g.frame()));
        Ok(g)
    }

    /// Disjoint tiers (`nvsql`): page `pid`, just copied from NVM frame `n` into DRAM
    /// frame `g` (held, its entry claimed), gives up the NVM frame. If the NVM copy is
    /// newer than SSD it is written to SSD first: the frame may hold changes older than
    /// the last checkpoint's redo point, which a restart would not redo for a page that
    /// is in no NVM frame (the log before that point is scanned only to rebuild a frame
    /// caught mid-write). Its log records were forced before they reached NVM. Then the
    /// header is cleared durably; the DRAM copy is clean.
    fn leave_nvm(&self, g: &FrameWrite<'_>, pid: PageId, n: u32) -> Result<()> {
        let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
        if nvm.is_dirty(n) {
            self.ssd_write(pid, &self.stored_image(g.frame(), g))?;
            self.counters.bump(Count::NvmToSsd);
        }
        nvm.release(n)?;
        self.policy.observe(Event::NvmLeft(pid));
        g.meta().nvm.store(NO_NVM_FRAME, Ordering::Relaxed);
        Ok(())
    }

    /// Copies the page into frame `g` from NVM or SSD. Whole-page loads always migrate
    /// (an in-place answer of the policy applies to line-grained fixes only), and a page
    /// the policy sends from SSD to NVM goes to DRAM as well. `miss` is the policy's
    /// answer for an SSD miss if the caller asked already.
    fn fill(&self, pid: PageId, from: Entry, g: &mut FrameWrite<'_>, miss: Option<MissTarget>) -> Result<()> {
        // Known only for a copy read from SSD (below).
        g.meta().flush_lsn.store(0, Ordering::Relaxed);
        let info = PageInfo::fixing(pid, matches!(from, Entry::Nvm(_)));
        match from {
            Entry::Nvm(n) => {
                let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
                match nvm.read_page(n, pid, g.bytes_for_load()) {
                    Ok(()) => {}
                    // A clean frame's page is on SSD as it was: drop the frame (owned:
                    // the entry is claimed) and read SSD. A dirty frame's error stands.
                    Err(BufferError::Corrupted { .. }) if self.ssd.is_some() && !nvm.is_dirty(n) => {
                        nvm.release(n)?;
                        self.policy.observe(Event::NvmLeft(pid));
                        self.counters.bump(Count::NvmCorruptDropped);
                        return self.fill(pid, Entry::Empty, g, miss);
                    }
                    Err(e) => return Err(e.into()),
                }
                nvm.touch(n);
                g.meta().nvm.store(n, Ordering::Relaxed);
                self.counters.bump(Count::NvmHits);
                self.counters.bump(Count::NvmToDram);
                self.counters.add(Count::NvmLinesLoaded, self.lines_per_page());
            }
            Entry::Empty => {
                let ssd = self.ssd.as_ref().expect("check_allocated refuses EMPTY pages without SSD");
                if pid.0 >= ssd.page_count() {
                    // Allocated but never written back: its bytes are the zeros it was
                    // allocated with. (Only reachable after a failed write-back.)
                    g.bytes_for_load().fill(0);
                } else {
                    let flushed = self.ssd_read(ssd, pid, g.bytes_for_load())?;
                    g.meta().flush_lsn.store(flushed, Ordering::Relaxed);
                }
                self.counters.bump(Count::SsdReads);
                self.after_ssd_read(&info, g, miss)?;
            }
            Entry::Dram(_) | Entry::Mini(_) | Entry::Busy => unreachable!("fill from {from:?}"),
        }
        Ok(())
    }

    /// The rest of a miss once page `info.pid` is read from SSD into `g`: the policy's
    /// answer (`miss`, if the caller asked already) may admit it to NVM as well.
    fn after_ssd_read(&self, info: &PageInfo, g: &mut FrameWrite<'_>, miss: Option<MissTarget>) -> Result<()> {
        let pid = info.pid;
        g.meta().nvm.store(NO_NVM_FRAME, Ordering::Relaxed);
        let miss = miss.unwrap_or_else(|| self.policy.ssd_miss(info, &self.tiers));
        if matches!(miss, MissTarget::DramAndNvm | MissTarget::Nvm)
            && let Some(nvm) = &self.nvm
            && let Some(n) = self.nvm_frame()?
        {
            if let Err(e) = nvm.write_page(n, pid, g, false, g.meta().page_lsn.load(Ordering::Relaxed)) {
                nvm.detach(n);
                return Err(e.into());
            }
            g.meta().nvm.store(n, Ordering::Relaxed);
            self.count_page_to_nvm();
            self.counters.bump(Count::NvmAdmissions);
            self.policy.observe(Event::NvmAdmitted { pid, on_eviction: false });
        }
        Ok(())
    }

    /// Counts the time since `started` spent writing victims down: a miss's, or the
    /// page provider's.
    fn count_write_time(&self, started: Instant) {
        let c = if provider::on_provider_thread() { Count::ProviderWriteNanos } else { Count::EvictWriteNanos };
        self.counters.add(c, started.elapsed().as_nanos() as u64);
    }

    /// Gives an empty frame (not in the page table) back to the free list.
    fn return_frame(&self, mut g: FrameWrite<'_>) {
        let meta = g.meta();
        meta.pid.store(NO_PAGE, Ordering::Relaxed);
        meta.nvm.store(NO_NVM_FRAME, Ordering::Relaxed);
        meta.dirty.store(false, Ordering::Relaxed);
        g.clear_wrote();
        let f = g.frame();
        drop(g);
        self.free_frames.lock().push(f);
    }

    // ----- DRAM replacement -----------------------------------------------------------

    /// An empty DRAM frame, held exclusive: from the free list, else by evicting the
    /// clock's victim — together with the next victims, up to
    /// [`evict_batch`](BufferConfig::evict_batch), when it must be written to SSD.
    fn free_frame(&self) -> Result<FrameWrite<'_>> {
        let (f, left) = {
            let mut free = self.free_frames.lock();
            (free.pop(), free.len())
        };
        if self.provider_on.load(Ordering::Relaxed) && left < self.provider_target / 2 {
            self.wake_provider();
        }
        if let Some(f) = f {
            // Free frames are unlatched but for a stale fixer checking its page id.
            return Ok(self.frames.write(f));
        }
        let n = self.frames.len();
        if let Some((g, _)) = self.evict_next(n * CLOCK_ROUNDS_MAX)? {
            return Ok(g);
        }
        if let Some(f) = self.free_frames.lock().pop() {
            return Ok(self.frames.write(f));
        }
        Err(BufferError::Exhausted { pool: "DRAM", frames: n, rounds: CLOCK_ROUNDS_MAX }.into())
    }

    /// Moves the DRAM clock's hand over at most `visits` frames until an eviction frees
    /// one (for a miss, [`free_frame`](Self::free_frame), or the page provider): that
    /// frame, empty and held exclusive, and how many more the eviction put on the free
    /// list (the rest of a batch of dirty victims); `None` if every frame passed was
    /// free, fixed or given a second chance.
    fn evict_next(&self, visits: usize) -> Result<Option<(FrameWrite<'_>, usize)>> {
        let n = self.frames.len();
        for _ in 0..visits {
            match self.clock_step(n) {
                ClockStep::Pass => {}
                ClockStep::Block(f) => {
                    if let Some(g) = self.sweep_block(f)? {
                        return Ok(Some((g, 0)));
                    }
                }
                ClockStep::Victim(mut g) => {
                    if self.evict_batch > 1 && (g.meta().dirty.load(Ordering::Relaxed) || g.wrote()) {
                        return self.evict_batch_from(g).map(Some);
                    }
                    self.evict(&mut g)?;
                    return Ok(Some((g, 0)));
                }
            }
        }
        Ok(None)
    }

    /// One step of the DRAM clock's hand over a pool of `n` frames: the frame under it,
    /// held exclusive and unswizzled from its parent, if the policy gives its page up
    /// now; a block of mini pages to sweep; or nothing (free, fixed, a parent, or a
    /// second chance).
    fn clock_step(&self, n: usize) -> ClockStep<'_> {
        let f = FrameId((self.hand.fetch_add(1, Ordering::Relaxed) % n) as u32);
        let meta = self.frames.meta(f);
        let pid = meta.pid();
        if pid == NO_PAGE || meta.latch.is_held() || meta.swizzled_children.load(Ordering::Relaxed) > 0 {
            return ClockStep::Pass;
        }
        if pid == MINI_BLOCK {
            return ClockStep::Block(f);
        }
        let info = PageInfo {
            pid: PageId(pid),
            dirty: meta.dirty.load(Ordering::Relaxed),
            nvm_copy: meta.nvm.load(Ordering::Relaxed) != NO_NVM_FRAME,
            referenced: meta.referenced.load(Ordering::Relaxed),
            first_update_lsn: 0,
            page_lsn: 0,
            last_flush_lsn: 0,
        };
        match self.policy.victim(Pool::Dram, &info, &self.tiers) {
            Victim::SecondChance => {
                meta.referenced.store(false, Ordering::Relaxed);
                return ClockStep::Pass;
            }
            Victim::Skip => return ClockStep::Pass,
            Victim::Evict => {}
        }
        let Some(g) = self.frames.try_write(f) else { return ClockStep::Pass };
        if !g.meta().holds_page() || g.meta().swizzled_children.load(Ordering::Relaxed) > 0 {
            return ClockStep::Pass; // freed or lent to mini pages in the meantime, or now a parent
        }
        if !self.unswizzle_victim(&g) {
            return ClockStep::Pass;
        }
        ClockStep::Victim(g)
    }

    /// Evicts the dirty victim `first` together with the clock's next victims (at most
    /// [`evict_batch`](BufferConfig::evict_batch) in all, within
    /// [`EVICT_BATCH_VISITS_PER_PAGE`] frames visited per page) in one batch of SSD
    /// writes; returns `first`'s frame, empty, and puts the others on the free list
    /// (their number returned too). A pool without NVM only: every victim goes to SSD,
    /// as one at a time.
    fn evict_batch_from<'a>(&'a self, first: FrameWrite<'a>) -> Result<(FrameWrite<'a>, usize)> {
        debug_assert!(self.nvm.is_none() && self.ssd.is_some(), "batched eviction without NVM, to SSD");
        let n = self.frames.len();
        let mut batch = Vec::with_capacity(self.evict_batch);
        batch.push(first);
        for _ in 0..self.evict_batch * EVICT_BATCH_VISITS_PER_PAGE {
            if batch.len() >= self.evict_batch {
                break;
            }
            // No mini pages without NVM: a block is passed by.
            if let ClockStep::Victim(g) = self.clock_step(n) {
                batch.push(g);
            }
        }
        self.evict_to_ssd_batch(&mut batch)?;
        let mut batch = batch.into_iter();
        let first = batch.next().expect("the batch holds its first victim");
        let others = batch.len();
        for g in batch {
            self.return_frame(g);
        }
        Ok((first, others))
    }

    /// Moves the pages of the frames `batch` (held exclusive, in a pool without NVM) to
    /// SSD: one write-ahead force up to the newest page LSN among the dirty ones, then
    /// their writes in one batch ([`SsdFile::write_pages_flushed`]: one double-write
    /// sync for the batch, consecutive pages in one write). On error every page stays
    /// in its frame, as it was.
    fn evict_to_ssd_batch(&self, batch: &mut [FrameWrite<'_>]) -> Result<()> {
        let ssd = self.ssd.as_ref().expect("a batched eviction writes to SSD");
        let mut dirty = Vec::with_capacity(batch.len());
        let mut force_to = None;
        for g in batch.iter() {
            let meta = g.meta();
            let pid = PageId(meta.pid());
            debug_assert_eq!(self.table.get(pid)?, Entry::Dram(g.frame()), "frame {:?} holds {pid}", g.frame());
            debug_assert_eq!(meta.nvm.load(Ordering::Relaxed), NO_NVM_FRAME, "{pid} has an NVM copy");
            debug_assert!(meta.resident_all.load(Ordering::Relaxed), "{pid} is partly resident without NVM");
            let d = meta.dirty.load(Ordering::Relaxed) || g.wrote();
            let info = PageInfo {
                pid,
                dirty: d,
                nvm_copy: false,
                referenced: false,
                first_update_lsn: meta.first_lsn.load(Ordering::Relaxed),
                page_lsn: meta.page_lsn.load(Ordering::Relaxed),
                last_flush_lsn: meta.flush_lsn.load(Ordering::Relaxed),
            };
            // Asked as for every eviction; without NVM every page goes to SSD.
            let _ = self.policy.dram_eviction(&info, &self.tiers);
            if d {
                force_to = force_to.max(Some(info.page_lsn));
            }
            dirty.push(d);
        }
        let started = std::time::Instant::now();
        if let Some(lsn) = force_to {
            self.force_log(lsn)?;
        }
        // Fixers see BUSY (and fail on the latch anyway) until the pages have landed.
        for g in batch.iter() {
            self.table.set(PageId(g.meta().pid()), Entry::Busy);
        }
        let written = (|| {
            let pages: Vec<(PageId, &[u8])> =
                batch.iter().zip(&dirty).filter(|(_, d)| **d).map(|(g, _)| (PageId(g.meta().pid()), &g[..])).collect();
            let Some(last) = pages.iter().map(|(pid, _)| *pid).max() else { return Ok(()) };
            self.ssd_reserve(ssd, last)?;
            let lsn = self.log_end_lsn();
            ssd.write_pages_flushed(&pages, lsn)?;
            self.note_flushed(pages.iter().map(|(pid, _)| *pid), lsn)
        })();
        self.count_write_time(started);
        if let Err(e) = written {
            for g in batch.iter() {
                self.table.set(PageId(g.meta().pid()), Entry::Dram(g.frame()));
            }
            return Err(e);
        }
        for (g, d) in batch.iter_mut().zip(dirty) {
            let meta = g.meta();
            self.table.set(PageId(meta.pid()), Entry::Empty);
            meta.pid.store(NO_PAGE, Ordering::Relaxed);
            meta.dirty.store(false, Ordering::Relaxed);
            meta.first_lsn.store(0, Ordering::Relaxed);
            g.clear_wrote();
            self.counters.bump(if d { Count::DramToSsd } else { Count::CleanDrops });
            self.counters.bump(Count::DramEvictions);
        }
        Ok(())
    }

    /// The clock's visit to a block of mini pages (frame `f`): evicts the mini pages
    /// the policy gives up (second chance by their own reference bits). Returns the
    /// frame, empty and held exclusive, if that emptied the block.
    fn sweep_block(&self, f: FrameId) -> Result<Option<FrameWrite<'_>>> {
        let Some(g) = self.frames.try_write(f) else { return Ok(None) };
        if g.meta().pid() != MINI_BLOCK {
            return Ok(None);
        }
        let minis = self.frames.minis();
        for i in minis.of_block(f) {
            let m = minis.meta(i);
            let pid = m.pid();
            if pid == NO_PAGE || m.latch.is_held() {
                continue;
            }
            let info = PageInfo {
                pid: PageId(pid),
                dirty: m.dirty.load(Ordering::Relaxed) != 0,
                nvm_copy: true,
                referenced: m.referenced.load(Ordering::Relaxed),
                first_update_lsn: 0,
                page_lsn: 0,
                last_flush_lsn: 0,
            };
            match self.policy.victim(Pool::Dram, &info, &self.tiers) {
                Victim::SecondChance => {
                    m.referenced.store(false, Ordering::Relaxed);
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            if !self.frames.try_write_mini(i) {
                continue;
            }
            if m.pid() != pid {
                self.frames.unlock_mini(i);
                continue;
            }
            let done = self.evict_mini(i, PageId(pid));
            self.frames.unlock_mini(i);
            done?;
            if let Some(block) = minis.push(i) {
                debug_assert_eq!(block, f);
                g.meta().pid.store(NO_PAGE, Ordering::Relaxed);
                return Ok(Some(g));
            }
        }
        Ok(None)
    }

    /// Writes mini page `i`'s dirty lines back to its NVM frame; with `drop_page`, also
    /// moves the page out (to NVM only) and clears the mini page. Held exclusive.
    fn flush_mini(&self, i: u32, pid: PageId, drop_page: bool) -> Result<()> {
        let m = self.frames.minis().meta(i);
        let n = m.nvm.load(Ordering::Relaxed);
        let dirty = m.dirty.load(Ordering::Relaxed);
        if drop_page {
            self.table.set(pid, Entry::Busy);
        }
        let mut written = Ok(());
        if dirty != 0 {
            let lines = m.lines();
            let mut bufs: Vec<(usize, Vec<u8>)> = Vec::new();
            for (k, l) in lines.iter().enumerate() {
                if dirty & (1 << k) == 0 {
                    continue;
                }
                let mut line = [0u8; CACHE_LINE_BYTES];
                self.frames.copy_mini_line_out(i, k, &mut line);
                match bufs.last_mut() {
                    Some((off, b)) if *off + b.len() == l * CACHE_LINE_BYTES => b.extend_from_slice(&line),
                    _ => bufs.push((l * CACHE_LINE_BYTES, line.to_vec())),
                }
            }
            let runs: Vec<(usize, &[u8])> = bufs.iter().map(|(o, b)| (*o, b.as_slice())).collect();
            let nvm = self.nvm.as_ref().expect("a mini page has an NVM copy");
            written = self
                .force_log(m.page_lsn.load(Ordering::Relaxed))
                .and_then(|()| Ok(nvm.write_lines(n, pid, &runs, None, m.page_lsn.load(Ordering::Relaxed))?));
            if written.is_ok() {
                m.dirty.store(0, Ordering::Relaxed);
                self.counters.add(Count::NvmLinesWritten, dirty.count_ones() as u64);
            }
        }
        if drop_page {
            if let Err(e) = written {
                self.table.set(pid, Entry::Mini(i));
                return Err(e);
            }
            self.table.set(pid, Entry::Nvm(n));
            m.clear();
            self.counters.bump(Count::DramEvictions);
            if dirty == 0 {
                self.counters.bump(Count::CleanDrops);
            }
        }
        written
    }

    fn evict_mini(&self, i: u32, pid: PageId) -> Result<()> {
        self.flush_mini(i, pid, true)
    }

    /// Writes the dirty lines of frame `g` (exclusive; its page has NVM frame `n`)
    /// back to NVM and clears its dirty mask.
    fn write_back_lines(&self, g: &FrameWrite<'_>, pid: PageId, n: u32) -> Result<()> {
        let f = g.frame();
        let last = self.frames.lines() - 1;
        let runs: Vec<(usize, &[u8])> = self
            .frames
            .runs(Mask::Dirty, f, 0, last, true)
            .into_iter()
            .map(|(s, k)| (s * CACHE_LINE_BYTES, &g[s * CACHE_LINE_BYTES..(s + k) * CACHE_LINE_BYTES]))
            .collect();
        if runs.is_empty() {
            return Ok(());
        }
        let nvm = self.nvm.as_ref().expect("dirty lines imply an NVM copy");
        let lsn = g.meta().page_lsn.load(Ordering::Relaxed);
        self.force_log(lsn)?;
        nvm.write_lines(n, pid, &runs, None, lsn)?;
        self.counters.add(Count::NvmLinesWritten, self.frames.count_set(Mask::Dirty, f) as u64);
        self.frames.clear_mask(Mask::Dirty, f);
        Ok(())
    }

    /// Moves the page out of frame `g` (held exclusive) to where the policy says. On
    /// error the page stays in the frame, as it was.
    fn evict(&self, g: &mut FrameWrite<'_>) -> Result<()> {
        self.evict_with(g, None)
    }

    /// [`evict`](Self::evict) to `to` if given, instead of where the policy says.
    fn evict_with(&self, g: &mut FrameWrite<'_>, to: Option<EvictTo>) -> Result<()> {
        let meta = g.meta();
        let pid = PageId(meta.pid());
        debug_assert_eq!(self.table.get(pid)?, Entry::Dram(g.frame()), "frame {:?} holds {pid}", g.frame());
        let nvm_frame = meta.nvm.load(Ordering::Relaxed);
        let partial = !meta.resident_all.load(Ordering::Relaxed);
        debug_assert!(!partial || nvm_frame != NO_NVM_FRAME, "{pid} is partly resident without an NVM copy");
        let dirty = meta.dirty.load(Ordering::Relaxed)
            || g.wrote()
            || (nvm_frame != NO_NVM_FRAME && self.frames.count_set(Mask::Dirty, g.frame()) > 0);
        let info = PageInfo {
            pid,
            dirty,
            nvm_copy: nvm_frame != NO_NVM_FRAME,
            referenced: false,
            // `nvsql`'s admission rule measures the re-update interval from these.
            first_update_lsn: meta.first_lsn.load(Ordering::Relaxed),
            page_lsn: meta.page_lsn.load(Ordering::Relaxed),
            last_flush_lsn: meta.flush_lsn.load(Ordering::Relaxed),
        };
        let mut to = match to {
            Some(to) => to,
            None => self.policy.dram_eviction(&info, &self.tiers),
        };
        let clean_only = self.shape.nvm_clean_only;
        debug_assert!(!(clean_only && dirty && to == EvictTo::Nvm), "{pid}: a dirty page sent to a clean-only NVM");
        let bulk_to_free_nvm = to == EvictTo::Ssd
            && !clean_only
            && self.bulk_load.load(Ordering::Relaxed)
            && self.nvm.as_ref().is_some_and(|n| n.free_frames() > 0);
        if self.nvm.is_none() || (to == EvictTo::SsdAndNvm && self.ssd.is_none()) {
            to = EvictTo::Ssd;
        } else if self.ssd.is_none() || bulk_to_free_nvm || partial {
            // A partly resident page is whole only together with its NVM copy.
            to = EvictTo::Nvm;
        }
        let started = dirty.then(std::time::Instant::now);
        let ahead = self.nvm_clean_batch.min(self.frames.len() / EVICT_BATCH_FRAMES_PER_PAGE);
        if dirty
            && to == EvictTo::Ssd
            && nvm_frame == NO_NVM_FRAME
            && ahead > 1
            && !self.shape.nvm_durable_cache
            && let Some(ssd) = &self.ssd
        {
            // The next dirty DRAM pages go out with it, in one batch (write-behind).
            self.clean_dram_ahead(ssd, ahead - 1)?;
        }
        if dirty {
            self.force_log(meta.page_lsn.load(Ordering::Relaxed))?;
        }
        // Fixers see BUSY (and fail on the latch anyway) until the page has landed.
        self.table.set(pid, Entry::Busy);
        let landed = match to {
            EvictTo::Nvm => self.evict_to_nvm(g, pid, dirty, nvm_frame),
            EvictTo::Ssd => self.evict_to_ssd(g, pid, dirty, nvm_frame),
            EvictTo::SsdAndNvm => self.evict_through(g, pid, dirty, nvm_frame),
        };
        if let Some(t) = started {
            self.count_write_time(t);
        }
        match landed {
            Ok(entry) => {
                self.table.set(pid, entry);
                meta.pid.store(NO_PAGE, Ordering::Relaxed);
                meta.nvm.store(NO_NVM_FRAME, Ordering::Relaxed);
                meta.dirty.store(false, Ordering::Relaxed);
                meta.first_lsn.store(0, Ordering::Relaxed);
                g.clear_wrote();
                self.counters.bump(Count::DramEvictions);
                Ok(())
            }
            Err(e) => {
                self.table.set(pid, Entry::Dram(g.frame()));
                Err(e)
            }
        }
    }

    fn evict_to_nvm(&self, g: &FrameWrite<'_>, pid: PageId, dirty: bool, nvm_frame: u32) -> Result<Entry> {
        let nvm = self.nvm.as_ref().expect("evict_to_nvm needs NVM");
        if nvm_frame != NO_NVM_FRAME {
            // Back to its own frame: write only if DRAM holds newer bytes (only the
            // dirty lines, unless the page was written as a whole); the NVM copy stays
            // dirty (newer than SSD) if it was.
            if g.meta().dirty.load(Ordering::Relaxed) || g.wrote() {
                debug_assert!(g.meta().resident_all.load(Ordering::Relaxed));
                self.log_nvm_images(&[(pid, &g[..])])?;
                nvm.write_page(nvm_frame, pid, g, true, g.meta().page_lsn.load(Ordering::Relaxed))?;
                self.count_page_to_nvm();
            } else if dirty {
                self.write_back_lines(g, pid, nvm_frame)?;
            } else {
                self.counters.bump(Count::CleanDrops);
            }
            return Ok(Entry::Nvm(nvm_frame));
        }
        let Some(n) = self.nvm_frame()? else {
            // NVM has no victim to give (all its pages are in DRAM or moving).
            return self.evict_to_ssd(g, pid, dirty, NO_NVM_FRAME);
        };
        // The first-update LSN bounds the oldest change not on SSD (`nvsql` keeps the
        // log back to it while the page is dirty in NVM).
        let (lsn, rec) = (g.meta().page_lsn.load(Ordering::Relaxed), g.meta().first_lsn.load(Ordering::Relaxed));
        if let Err(e) = self.log_nvm_images(&[(pid, &g[..])]) {
            nvm.detach(n);
            return Err(e);
        }
        if let Err(e) = nvm.write_page_rec(n, pid, g, dirty, lsn, rec) {
            nvm.detach(n);
            return Err(e.into());
        }
        self.count_page_to_nvm();
        self.counters.bump(Count::NvmAdmissions);
        self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
        Ok(Entry::Nvm(n))
    }

    /// [`EvictTo::SsdAndNvm`]: writes a dirty page to SSD, then keeps a clean copy in
    /// NVM — its own frame, rewritten if the page changed, else a new frame if
    /// [`nvm_frame`](Self::nvm_frame) can give one (else the page lives on SSD only).
    fn evict_through(&self, g: &FrameWrite<'_>, pid: PageId, dirty: bool, nvm_frame: u32) -> Result<Entry> {
        let nvm = self.nvm.as_ref().expect("evict_through needs NVM");
        debug_assert!(g.meta().resident_all.load(Ordering::Relaxed), "{pid}: write-through of a partial page");
        debug_assert!(nvm_frame == NO_NVM_FRAME || !nvm.is_dirty(nvm_frame), "{pid}: a dirty copy in a clean cache");
        if !dirty {
            self.counters.bump(Count::CleanDrops);
            return Ok(if nvm_frame == NO_NVM_FRAME { Entry::Empty } else { Entry::Nvm(nvm_frame) });
        }
        // 1. SSD first: the NVM copy is clean only once SSD holds the same bytes.
        self.ssd_write(pid, g)?;
        self.counters.bump(Count::DramToSsd);
        let lsn = g.meta().page_lsn.load(Ordering::Relaxed);
        // 2. The page's own frame holds a stale copy: overwrite it.
        if nvm_frame != NO_NVM_FRAME {
            nvm.write_page(nvm_frame, pid, &self.stored_image(g.frame(), g), false, lsn)?;
            self.count_page_to_nvm();
            self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
            return Ok(Entry::Nvm(nvm_frame));
        }
        // 3. Else a new frame, if there is one to have.
        let Some(n) = self.nvm_frame()? else { return Ok(Entry::Empty) };
        if let Err(e) = nvm.write_page(n, pid, &self.stored_image(g.frame(), g), false, lsn) {
            nvm.detach(n);
            return Err(e.into());
        }
        self.count_page_to_nvm();
        self.counters.bump(Count::NvmAdmissions);
        self.policy.observe(Event::NvmAdmitted { pid, on_eviction: true });
        Ok(Entry::Nvm(n))
    }

    fn evict_to_ssd(&self, g: &FrameWrite<'_>, pid: PageId, dirty: bool, nvm_frame: u32) -> Result<Entry> {
        if dirty {
            self.ssd_write(pid, g)?;
            self.counters.bump(Count::DramToSsd);
        } else {
            self.counters.bump(Count::CleanDrops);
        }
        if nvm_frame != NO_NVM_FRAME {
            let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
            // The SSD copy is current now; the NVM copy must not come back after a
            // restart, so its header is cleared (not in a volatile pool, which no
            // restart reuses: a removal there writes nothing to NVM).
            nvm.release(nvm_frame)?;
            self.policy.observe(Event::NvmLeft(pid));
        }
        Ok(Entry::Empty)
    }

    // ----- NVM replacement ------------------------------------------------------------

    /// An NVM frame owned by the caller: free, or taken from the clock's victim (written
    /// to SSD if dirty). `None` if no frame can be freed now.
    fn nvm_frame(&self) -> Result<Option<u32>> {
        let nvm = self.nvm.as_ref().expect("nvm_frame needs NVM");
        if let Some(n) = nvm.pop_free() {
            if self.provider_on.load(Ordering::Relaxed) && nvm.free_frames() < self.provider_nvm_target / 2 {
                self.wake_provider();
            }
            return Ok(Some(n));
        }
        if self.provider_on.load(Ordering::Relaxed) {
            self.wake_provider();
        }
        match self.nvm_evict_one(nvm.len() * CLOCK_ROUNDS_MAX)? {
            Some(n) => Ok(Some(n)),
            None => Ok(nvm.pop_free()),
        }
    }

    /// An NVM frame taken from the clock's victim (written to SSD if dirty; the hand
    /// visits at most `visits` frames), or from the policy's sweep, for the caller;
    /// `None` if nothing was evicted.
    fn nvm_evict_one(&self, visits: usize) -> Result<Option<u32>> {
        let nvm = self.nvm.as_ref().expect("nvm_evict_one needs NVM");
        let Some(ssd) = &self.ssd else {
            // Without SSD nothing leaves NVM; capacity checks keep a frame free.
            return Ok(None);
        };
        let mut sweep = Vec::new();
        if self.policy.nvm_victims(&self.tiers, &mut sweep) {
            if sweep.is_empty() {
                return Ok(None);
            }
            self.evict_from_nvm(ssd, &sweep)?;
            return Ok(nvm.pop_free());
        }
        for _ in 0..visits {
            let n = nvm.advance_hand();
            let Some(pid) = nvm.pid(n) else { continue };
            if self.table.get(pid)? != Entry::Nvm(n) {
                continue; // in DRAM too (its DRAM frame owns it) or moving
            }
            let info = PageInfo {
                pid,
                dirty: nvm.is_dirty(n),
                nvm_copy: true,
                referenced: nvm.is_referenced(n),
                first_update_lsn: 0,
                page_lsn: 0,
                last_flush_lsn: 0,
            };
            match self.policy.victim(Pool::Nvm, &info, &self.tiers) {
                Victim::SecondChance => {
                    nvm.clear_referenced(n);
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            if !self.claim(pid, Entry::Nvm(n))? {
                continue;
            }
            if self.nvm_clean_batch > 1 && nvm.is_dirty(n) {
                // The next dirty pages go out with it, in one batch (write-behind).
                if let Err(e) = self.clean_nvm_ahead(nvm, ssd, n, self.nvm_clean_batch - 1) {
                    self.table.set(pid, Entry::Nvm(n));
                    return Err(e);
                }
            }
            self.evict_claimed_nvm(ssd, pid, n, true)?;
            return Ok(Some(n));
        }
        Ok(None)
    }

    /// Evicts page `pid` from NVM frame `n` after the caller claimed its entry: writes it
    /// to SSD if dirty, clears the frame's header — so that a restart never takes its
    /// old bytes for the page — and keeps the frame for the caller (`keep_frame`) or
    /// frees it. On error the page stays in the frame, as it was.
    fn evict_claimed_nvm(&self, ssd: &SsdFile, pid: PageId, n: u32, keep_frame: bool) -> Result<()> {
        let nvm = self.nvm.as_ref().expect("an NVM entry implies an NVM pool");
        debug_assert_eq!(nvm.pid(n), Some(pid));
        debug_assert_eq!(self.table.get(pid)?, Entry::Busy, "{pid} is not claimed");
        let evicted = (|| {
            if nvm.is_dirty(n) {
                let mut buf = AlignedBuf::new(self.page_size);
                nvm.read_page(n, pid, &mut buf)?;
                self.ssd_write_with(ssd, pid, &buf)?;
                self.counters.bump(Count::NvmToSsd);
            }
            if keep_frame { nvm.clear_owner(n) } else { nvm.release(n) }.map_err(crate::Error::from)
        })();
        if let Err(e) = evicted {
            self.table.set(pid, Entry::Nvm(n));
            return Err(e);
        }
        self.policy.observe(Event::NvmLeft(pid));
        self.counters.bump(Count::NvmEvictions);
        self.table.set(pid, Entry::Empty);
        Ok(())
    }

    /// Evicts the pages `pids` from NVM (a policy's sweep), each if it is in NVM only and
    /// not moving: written to SSD if dirty, its frame freed.
    fn evict_from_nvm(&self, ssd: &SsdFile, pids: &[PageId]) -> Result<()> {
        for &pid in pids {
            let Entry::Nvm(n) = self.table.get(pid)? else { continue };
            if self.claim(pid, Entry::Nvm(n))? {
                self.evict_claimed_nvm(ssd, pid, n, false)?;
            }
        }
        Ok(())
    }

    // ----- SSD ------------------------------------------------------------------------

    fn ssd_write(&self, pid: PageId, bytes: &[u8]) -> Result<()> {
        let ssd = self.ssd.as_ref().expect("ssd_write needs SSD");
        self.ssd_write_with(ssd, pid, bytes)
    }

    /// Writes a page (protected by the double-write area if it is on), growing the file
    /// first if the page lies past its end. The page's seal records the log's LSN now
    /// as its last-flush LSN, and the policy hears of the flush.
    fn ssd_write_with(&self, ssd: &SsdFile, pid: PageId, bytes: &[u8]) -> Result<()> {
        self.ssd_reserve(ssd, pid)?;
        let lsn = self.log_end_lsn();
        ssd.write_pages_flushed(&[(pid, bytes)], lsn)?;
        self.note_flushed([pid], lsn)
    }

    /// The log's LSN now (0 without a log): the last-flush LSN of a page written now.
    /// Taken after the write-ahead force, so it is past every change the page holds.
    pub(crate) fn log_end_lsn(&self) -> u64 {
        self.log.get().map_or(0, |l| l.end_lsn())
    }

    /// `pids` were written to SSD at log LSN `lsn` (taken while they could not change,
    /// after the write-ahead force): the policy hears of it, and with a double-write
    /// area (the writes survive a crash once they return) the log learns it, in flush
    /// records of [`FLUSH_NOTES_PER_RECORD`] pages, so that redo skips the changes those
    /// copies hold without reading them. Without the area an unsynced write may be lost
    /// and nothing is noted.
    ///
    /// # Errors
    /// The log's, appending a flush record.
    pub(crate) fn note_flushed(&self, pids: impl IntoIterator<Item = PageId>, lsn: u64) -> Result<()> {
        let log =
            self.log.get().filter(|_| lsn != 0 && self.ssd.as_ref().is_some_and(|s| s.double_write_core().is_some()));
        let mut full = None;
        {
            let mut notes = log.map(|_| self.flush_notes.lock());
            for pid in pids {
                self.policy.observe(Event::Flushed { pid, flush_lsn: lsn });
                if let Some(notes) = notes.as_mut() {
                    notes.push((pid, lsn));
                    if notes.len() >= FLUSH_NOTES_PER_RECORD {
                        full.get_or_insert_with(Vec::new).append(notes);
                    }
                }
            }
        }
        match (log, full) {
            (Some(log), Some(batch)) => {
                for chunk in batch.chunks(FLUSH_NOTES_PER_RECORD) {
                    log.note_flushed(chunk)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The last-flush LSN that page `pid`'s SSD copy carried when it was read into its
    /// DRAM frame (0: unknown); `None` if the page is not in DRAM. For reports and tests.
    ///
    /// # Errors
    /// `NoSuchPage` for a page id past the page table.
    pub fn loaded_flush_lsn(&self, pid: PageId) -> Result<Option<u64>> {
        Ok(match self.table.get(pid)? {
            Entry::Dram(f) => Some(self.frames.meta(f).flush_lsn.load(Ordering::Relaxed)),
            _ => None,
        })
    }

    /// Grows the page file, in chunks, until it holds page `pid`.
    fn ssd_reserve(&self, ssd: &SsdFile, pid: PageId) -> Result<()> {
        if pid.0 >= ssd.page_count() {
            let _grow = self.ssd_grow.lock();
            let count = ssd.page_count();
            if pid.0 >= count {
                let chunk = (count / 8).max(SSD_GROW_PAGES_MIN);
                ssd.grow((pid.0 + 1 - count).max(chunk))?;
            }
        }
        Ok(())
    }

    /// Reads page `pid` from SSD and returns its last-flush LSN (0: unknown); a page
    /// that fails its seal is `Corrupted`, naming it and the file.
    fn ssd_read(&self, ssd: &SsdFile, pid: PageId, buf: &mut [u8]) -> Result<u64> {
        ssd.read_page_flushed(pid, buf).map_err(|e| match e {
            DeviceError::Corrupted { what: "page", detail, .. } => {
                BufferError::Corrupted { pid, location: ssd.info().path.display().to_string(), detail }.into()
            }
            e => e.into(),
        })
    }

    // ----- allocation -----------------------------------------------------------------

    fn take_page_id(&self) -> Result<PageId> {
        if let Some(pid) = self.freed.lock().ready.pop() {
            return Ok(pid);
        }
        self.take_fresh_page_id()
    }

    /// A page id never handed out: raises the allocation mark.
    fn take_fresh_page_id(&self) -> Result<PageId> {
        let cap = self.capacity_pages;
        let n = self
            .next_pid
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n <= cap).then_some(n + 1))
            .map_err(|_| self.full_error())?;
        self.policy.observe(Event::DatabaseSize(n));
        Ok(PageId(n))
    }

    fn full_error(&self) -> BufferError {
        let cap = self.capacity_pages;
        let ps = self.page_size;
        match (&self.ssd, &self.nvm) {
            (None, Some(n)) => BufferError::Full {
                tier: "nvm",
                what: format!(
                    "without SSD every page lives in NVM, which holds {cap} pages of {ps} bytes ({}); the data does not fit",
                    ByteSize(n.region().size_bytes())
                ),
            },
            (None, None) => BufferError::Full {
                tier: "dram",
                what: format!("without NVM or SSD every page lives in DRAM, which holds {cap} pages of {ps} bytes"),
            },
            (Some(_), _) => BufferError::Full {
                tier: "page table",
                what: format!("the page table maps {cap} pages; raise max_pages"),
            },
        }
    }

    /// Checkpoints and closes.
    ///
    /// # Errors
    /// As [`checkpoint`](Self::checkpoint).
    pub fn close(self) -> Result<()> {
        self.checkpoint()
    }

    /// Checks the invariants of the module doc. Expensive; for tests, with no other
    /// thread running.
    ///
    /// # Panics
    /// On a violated invariant, naming it.
    pub fn check_invariants(&self) {
        let mut in_nvm = std::collections::HashMap::new();
        if let Some(nvm) = &self.nvm {
            for n in 0..nvm.len() as u32 {
                if let Some(pid) = nvm.pid(n) {
                    assert!(in_nvm.insert(pid, n).is_none(), "{pid} in two NVM frames");
                }
            }
        }
        let mut in_dram = std::collections::HashMap::new();
        let minis = self.frames.minis();
        let mut in_mini = std::collections::HashMap::new();
        for i in 0..minis.len() as u32 {
            let m = minis.meta(i);
            assert!(!m.latch.is_held(), "mini page {i} is still latched");
            if m.pid() == NO_PAGE {
                continue;
            }
            let block = minis.block_of(i);
            assert_eq!(self.frames.meta(block).pid(), MINI_BLOCK, "mini page {i} in frame {block:?}, not a block");
            let pid = PageId(m.pid());
            assert!(in_mini.insert(pid, i).is_none(), "{pid} in two mini pages");
            assert_eq!(self.table.get(pid).unwrap(), Entry::Mini(i), "table entry of {pid}");
            let n = m.nvm.load(Ordering::Relaxed);
            assert_eq!(in_nvm.get(&pid), Some(&n), "mini page {i} of {pid} names NVM frame {n}");
            let lines = m.lines();
            assert!(lines.windows(2).all(|w| w[0] < w[1]), "mini page {i}: slot map {lines:?} not sorted");
        }
        for i in 0..self.frames.len() {
            let meta = self.frames.meta(FrameId(i as u32));
            assert!(!meta.latch.is_held(), "frame {i} is still latched");
            let pid = meta.pid();
            if pid == NO_PAGE || pid == MINI_BLOCK {
                continue;
            }
            assert!(
                meta.resident_all.load(Ordering::Relaxed) || meta.nvm.load(Ordering::Relaxed) != NO_NVM_FRAME,
                "frame {i} is partly resident without an NVM copy"
            );
            let pid = PageId(pid);
            assert!(in_dram.insert(pid, i).is_none(), "{pid} in two DRAM frames");
            assert_eq!(self.table.get(pid).unwrap(), Entry::Dram(FrameId(i as u32)), "table entry of {pid}");
            let n = meta.nvm.load(Ordering::Relaxed);
            if n != NO_NVM_FRAME {
                assert_eq!(in_nvm.get(&pid), Some(&n), "DRAM frame {i} of {pid} names NVM frame {n}");
            }
        }
        for (pid, e) in self.table.resident() {
            match e {
                Entry::Dram(f) => assert_eq!(in_dram.get(&pid), Some(&(f.0 as usize)), "{pid}"),
                Entry::Nvm(n) => {
                    assert_eq!(in_nvm.get(&pid), Some(&n), "{pid}");
                    assert!(!in_dram.contains_key(&pid), "{pid} says NVM but is in DRAM");
                }
                Entry::Mini(i) => assert_eq!(in_mini.get(&pid), Some(&i), "{pid}"),
                Entry::Busy => panic!("{pid} is still BUSY"),
                Entry::Empty => unreachable!(),
            }
        }
        for pid in in_nvm.keys() {
            assert!(
                matches!(self.table.get(*pid).unwrap(), Entry::Dram(_) | Entry::Nvm(_) | Entry::Mini(_)),
                "{pid} lost from the table"
            );
        }
        // Free pages: each once, none resident, none past the allocation mark.
        let limit = self.next_pid.load(Ordering::Relaxed);
        let mut free = std::collections::HashSet::new();
        for pid in self.freed.lock().all() {
            assert!(free.insert(pid), "{pid} twice on the free list");
            assert!(pid != PageId::CATALOG && pid.0 < limit, "{pid} free, allocation mark {limit}");
            assert_eq!(self.table.get(pid).unwrap(), Entry::Empty, "free {pid} is resident");
        }
    }
}

/// Bit 63 of a child reference: the rest is a DRAM frame index (pointer swizzling).
pub const SWIZZLED: u64 = 1 << 63;

/// How long a fixer spins on the frame of a swizzled reference before it takes the
/// page table's way (the frame is held by a writer or being evicted).
const SWIZZLED_SPINS_MAX: u32 = 256;

/// The fewest DRAM frames a buffer manager works with: a B+-tree operation holds a
/// few pages at once (coupling) and each thread may need one more to load into.
pub const MIN_DRAM_FRAMES: usize = 8;

impl PageSource for BufferManager {
    type Shared<'a> = BmShared<'a>;
    type Exclusive<'a> = FrameWrite<'a>;
    type Optimistic<'a> = BmOptimistic<'a>;
    type Lines<'a> = BmLines<'a>;

    #[inline]
    fn page_size(&self) -> usize {
        self.page_size
    }

    #[inline]
    fn fix_lines(&self, pid: PageId, exclusive: bool) -> Result<BmLines<'_>> {
        use super::recorder::AccessKind;
        self.record(if exclusive { AccessKind::WriteLines } else { AccessKind::ReadLines }, pid);
        self.fix_lines_impl(pid, exclusive)
    }

    #[inline]
    fn fix_optimistic(&self, pid: PageId) -> Result<BmOptimistic<'_>> {
        self.record(super::recorder::AccessKind::Read, pid);
        if self.in_place_reads
            && let Some(g) = self.optimistic_in_place(pid)?
        {
            return Ok(BmOptimistic::Nvm(g));
        }
        self.fix_with(pid, FramePool::try_optimistic, |g| g.meta().pid(), FrameWrite::into_optimistic)
            .map(BmOptimistic::Dram)
    }

    #[inline]
    fn fix_shared(&self, pid: PageId) -> Result<BmShared<'_>> {
        self.record(super::recorder::AccessKind::Read, pid);
        if self.in_place_reads
            && let Some(g) = self.shared_in_place(pid)?
        {
            return Ok(BmShared::Nvm(g));
        }
        self.fix_with(pid, FramePool::try_read, |g| g.meta().pid(), FrameWrite::downgrade).map(BmShared::Dram)
    }

    #[inline]
    fn fix_exclusive(&self, pid: PageId) -> Result<FrameWrite<'_>> {
        self.record(super::recorder::AccessKind::Write, pid);
        let g = self.fix_with(pid, FramePool::try_write, |g| g.meta().pid(), |g| g)?;
        if g.meta().swizzled_children.load(Ordering::Relaxed) > 0 {
            self.unswizzle_children(&g);
        }
        Ok(g)
    }

    #[inline]
    fn child_pid(&self, raw: u64) -> PageId {
        if raw & SWIZZLED == 0 {
            return PageId(raw);
        }
        let f = (raw & !SWIZZLED) as usize;
        // A frame out of range can only come from torn bytes of an optimistic read,
        // which the caller's validation discards.
        PageId(if f < self.frames.len() { self.frames.meta(FrameId(f as u32)).pid() } else { NO_PAGE })
    }

    #[inline]
    fn fix_child_optimistic<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<BmOptimistic<'a>> {
        let Some(parent) = parent.dram() else {
            // A parent read in place in NVM holds page ids only.
            return self.fix_optimistic(PageId(raw));
        };
        if raw & SWIZZLED != 0 {
            let f = (raw & !SWIZZLED) as usize;
            if f < self.frames.len() {
                let f = FrameId(f as u32);
                let mut spins = 0u32;
                // The child cannot leave its frame before the parent's reference is
                // unswizzled, which the caller's validation of the parent notices.
                while spins < SWIZZLED_SPINS_MAX {
                    if let Some(g) = self.frames.try_optimistic(f)
                        && g.meta().resident_all.load(Ordering::Relaxed)
                        && g.meta().parent.load(Ordering::Relaxed) == parent.frame().0
                    {
                        g.meta().touch();
                        self.counters.bump(Count::DramHits);
                        return Ok(BmOptimistic::Dram(g));
                    }
                    backoff(&mut spins);
                }
            }
            return self.fix_optimistic(self.child_pid(raw));
        }
        let g = self.fix_optimistic(PageId(raw))?;
        if self.techniques.swizzling
            && let BmOptimistic::Dram(child) = &g
        {
            self.try_swizzle(parent, offset, child.frame(), Some(child.version()));
        }
        Ok(g)
    }

    /// A leaf resident whole in a DRAM frame, read optimistically: found through a
    /// swizzled reference or the page table, with no latch taken and nothing loaded.
    /// Counted and recorded as the line-grained shared fix it replaces (a DRAM hit);
    /// swizzles the parent's reference as that fix would.
    #[inline]
    fn fix_child_resident<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
    ) -> Result<Option<BmOptimistic<'a>>> {
        let Some(dram_parent) = parent.dram() else { return Ok(None) };
        let swizzled = raw & SWIZZLED != 0;
        let (frame, pid) = if swizzled {
            let f = (raw & !SWIZZLED) as usize;
            if f >= self.frames.len() {
                return Ok(None);
            }
            (FrameId(f as u32), None)
        } else {
            match Entry::decode(self.table.slot(PageId(raw))?.load(Ordering::Acquire)) {
                Entry::Dram(f) => (f, Some(PageId(raw))),
                _ => return Ok(None),
            }
        };
        self.frames.prefetch(frame);
        let Some(g) = self.frames.try_optimistic(frame) else { return Ok(None) };
        let meta = g.meta();
        // The frame may have been given to another page meanwhile: then its version has
        // changed too, so the checks below count only if the guard validates later.
        let ours = match pid {
            Some(pid) => meta.pid() == pid.0,
            None => meta.parent.load(Ordering::Relaxed) == dram_parent.frame().0,
        };
        if !ours || !meta.resident_all.load(Ordering::Relaxed) {
            return Ok(None);
        }
        meta.touch();
        self.counters.bump(Count::DramHits);
        self.record(super::recorder::AccessKind::ReadLines, PageId(meta.pid()));
        if !swizzled && self.techniques.swizzling {
            self.try_swizzle(dram_parent, offset, frame, Some(g.version()));
        }
        Ok(Some(BmOptimistic::Dram(g)))
    }

    #[inline]
    fn fix_child_lines<'a>(
        &'a self,
        parent: &BmOptimistic<'a>,
        offset: usize,
        raw: u64,
        exclusive: bool,
    ) -> Result<BmLines<'a>> {
        let Some(parent) = parent.dram() else {
            return self.fix_lines(PageId(raw), exclusive);
        };
        if raw & SWIZZLED != 0 {
            let f = (raw & !SWIZZLED) as usize;
            if f < self.frames.len() {
                let f = FrameId(f as u32);
                let latch = &self.frames.meta(f).latch;
                let mut spins = 0u32;
                while spins < SWIZZLED_SPINS_MAX {
                    if if exclusive { latch.try_exclusive() } else { latch.try_shared() } {
                        let meta = self.frames.meta(f);
                        // Still the parent's child (else the reference is stale: the
                        // parent's validation will fail; take the table's way).
                        if meta.holds_page() && meta.parent.load(Ordering::Relaxed) == parent.frame().0 {
                            meta.touch();
                            self.counters.bump(Count::DramHits);
                            return Ok(BmLines::Dram(LineGuard::new(
                                self,
                                PageId(meta.pid()),
                                Place::Full(f),
                                exclusive,
                            )));
                        }
                        if exclusive {
                            latch.unlock_exclusive();
                        } else {
                            latch.unlock_shared();
                        }
                        break;
                    }
                    backoff(&mut spins);
                }
            }
            return self.fix_lines(self.child_pid(raw), exclusive);
        }
        let g = self.fix_lines(PageId(raw), exclusive)?;
        if self.techniques.swizzling
            && let Some(Place::Full(f)) = g.place()
        {
            self.try_swizzle(parent, offset, f, None);
        }
        Ok(g)
    }

    #[inline]
    fn prefetches(&self) -> bool {
        self.ssd.is_some()
    }

    #[inline]
    fn peek_child<'a>(&'a self, parent: &BmOptimistic<'a>, raw: u64) -> Result<super::Peek<BmOptimistic<'a>>> {
        self.peek_child_of(parent, raw)
    }

    #[inline]
    fn peek_page(&self, pid: PageId) -> Result<super::Peek<BmOptimistic<'_>>> {
        BufferManager::peek_page(self, pid)
    }

    fn prefetch_children<'a>(&'a self, children: &[(&BmOptimistic<'a>, u64)]) -> Result<usize> {
        self.prefetch(children)
    }

    fn allocate(&self) -> Result<FrameWrite<'_>> {
        let pid = self.take_page_id()?;
        let mut g = match self.free_frame() {
            Ok(g) => g,
            Err(e) => {
                self.freed.lock().ready.push(pid);
                return Err(e);
            }
        };
        debug_assert_eq!(self.table.get(pid)?, Entry::Empty, "allocating {pid} that is resident");
        self.record(super::recorder::AccessKind::Alloc, pid);
        self.reset_frame(g.frame(), pid, NO_NVM_FRAME, true);
        g.fill(0); // marks the frame dirty: a new page must reach a lower tier
        self.table.set(pid, Entry::Dram(g.frame()));
        self.counters.bump(Count::Allocations);
        Ok(g)
    }

    fn free(&self, mut page: FrameWrite<'_>) -> Result<()> {
        let meta = page.meta();
        let pid = PageId(meta.pid());
        assert!(pid != PageId::CATALOG, "the catalog page is never freed");
        self.record(super::recorder::AccessKind::Free, pid);
        // A page is freed after its parent dropped it, under the parent's exclusive
        // latch, whose fix unswizzled it; a swizzled reference here would dangle.
        debug_assert_eq!(meta.parent.load(Ordering::Relaxed), NO_PARENT, "{pid} freed while swizzled");
        debug_assert_eq!(meta.swizzled_children.load(Ordering::Relaxed), 0, "{pid} freed with swizzled children");
        self.table.set(pid, Entry::Busy);
        let n = meta.nvm.load(Ordering::Relaxed);
        if n != NO_NVM_FRAME {
            let nvm = self.nvm.as_ref().expect("an NVM frame implies an NVM pool");
            if let Err(e) = nvm.release(n) {
                self.table.set(pid, Entry::Dram(page.frame()));
                return Err(e.into());
            }
        }
        self.policy.observe(Event::Freed(pid));
        meta.pid.store(NO_PAGE, Ordering::Relaxed);
        meta.nvm.store(NO_NVM_FRAME, Ordering::Relaxed);
        meta.dirty.store(false, Ordering::Relaxed);
        page.clear_wrote();
        let f = page.frame();
        drop(page);
        // FREE, not EMPTY: a reader that followed a stale reference cannot load it.
        self.table.set_free(pid);
        self.free_frames.lock().push(f);
        self.freed.lock().ready.push(pid);
        self.counters.bump(Count::Frees);
        Ok(())
    }

    fn catalog_page(&self) -> PageId {
        PageId::CATALOG
    }
}
