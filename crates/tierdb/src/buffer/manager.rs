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

use parking_lot::Mutex;
use serde::Serialize;

use super::BufferError;
use super::nvm_pool::NvmPool;
use super::table::{Entry, PageTable};
use super::techniques::Techniques;
use crate::counters::{BufferCounters, Count};
use crate::device::{DoubleWriteMode, DramConfig, NvmConfig, OpenMode, SsdConfig, SsdFile};
use crate::ids::{Lsn, PageId};
use crate::limits::{CACHE_LINE_BYTES, EVICT_BATCH_DEFAULT, PAGE_TABLE_PAGES_DEFAULT, POLICY_SEED_DEFAULT};
use crate::page::crc::NvmVerify;
use crate::page::frame::{FrameId, FramePool, FrameWrite, Mask, NO_PAGE, NO_PARENT};
use crate::policy::{self, EvictTo, PageInfo, Policy, PolicyStats, Shape, Tiers};
use crate::wal::LogForce;
use crate::{ByteSize, Result};

mod checkpoint;
mod evict;
mod fix;
mod free_list;
mod invariants;
mod lines;
mod load;
mod nvm;
mod open;
mod prefetch;
mod provider;
mod recover;
mod swizzle;

pub use crate::counters::TierStats;
pub use provider::ProviderReport;

use free_list::FreePages;

/// How to build a buffer manager.
#[derive(Clone, Debug, PartialEq)]
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
    /// (`frame::cpu_cache`; 0: every such read is charged). By default the model's
    /// minimum, as no data size is known here; `ArchConfig` sets it from the data.
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
    /// The most DRAM victims evicted together when one must be written to SSD (default
    /// [`EVICT_BATCH_DEFAULT`]; 1: one page at a time). A pool of `f` frames evicts at
    /// most `f /` [`EVICT_BATCH_FRAMES_PER_PAGE`](crate::limits::EVICT_BATCH_FRAMES_PER_PAGE) pages at
    /// once. With NVM the batch holds the victims the policy sends to SSD alone (whole
    /// in DRAM, without an NVM copy; not a durable NVM cache's pages, `nvsql`); the
    /// first victim it sends elsewhere ends the batch and goes there alone. When the
    /// NVM clock's victim is dirty, up to this many dirty pages its hand reaches next
    /// are written to SSD with it (write-behind: they stay in NVM, clean).
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
            cpu_cache_model_bytes: crate::page::frame::cpu_cache::CPU_CACHE_MODEL_MIN_BYTES,
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
    flush_notes: Mutex<Vec<(PageId, Lsn)>>,
    /// The log's end at the start of the last checkpoints, oldest first (a durable NVM
    /// cache's bound on its dirty pages: [`Shape::nvm_keep_checkpoints`]).
    checkpoint_starts: Mutex<std::collections::VecDeque<Lsn>>,
    /// Set when a change could not be written back in place (an unfix cannot return the
    /// error): every later fix fails with `Stopped`, naming the first failure.
    stopped: std::sync::atomic::AtomicBool,
    stop_reason: Mutex<Option<String>>,
    /// The policy may serve whole-page reads in place in NVM (else those fixes skip
    /// asking it).
    in_place_reads: bool,
    /// Sees every access when set (trace recording).
    recorder: std::sync::OnceLock<std::sync::Arc<dyn crate::recorder::AccessRecorder>>,
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
    /// there to rebuild its page (`Some(Lsn::NONE)`: unknown, from the log's start; `None`: the
    /// checkpoint's redo point suffices).
    pub log_needed_from: Option<Lsn>,
    /// Frames naming pages the database does not have (freed, never allocated).
    pub frames_discarded: usize,
    /// The highest page LSN among the frames reused, and its page: a page reaches NVM
    /// only after the log is forced to its LSN, so the log must reach past it
    /// (`db::recovery` checks; a log that does not lost durable records).
    pub page_lsn_max: Option<(PageId, Lsn)>,
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
    /// Installs a recorder that sees every access from now on. False if one is
    /// installed already.
    pub fn set_recorder(&self, r: std::sync::Arc<dyn crate::recorder::AccessRecorder>) -> bool {
        self.recorder.set(r).is_ok()
    }

    /// Passes a phase marker to the recorder, if any.
    pub fn record_marker(&self, name: &'static str) {
        if let Some(r) = self.recorder.get() {
            r.marker(name);
        }
    }

    #[inline]
    fn record(&self, kind: crate::recorder::AccessKind, pid: PageId) {
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
    pub fn set_log(&self, log: std::sync::Arc<dyn LogForce>) -> Result<(), BufferError> {
        self.set_lsn_clock(log.clone());
        self.log.set(log).map_err(|_| BufferError::Config { what: "a log is attached already".into() })
    }

    /// The write-ahead rule: every record up to LSN `lsn` is durable before a page
    /// changed by it is written out.
    #[inline]
    fn force_log(&self, lsn: Lsn) -> Result<(), BufferError> {
        match self.log.get() {
            Some(log) if !lsn.is_none() => Ok(log.force(lsn)?),
            _ => Ok(()),
        }
    }

    /// Stops the manager after a failure that an unfix could not report (see
    /// [`NvmLines`]): every later fix fails. The first reason is kept.
    pub(crate) fn stop(&self, why: String) {
        self.stop_reason.lock().get_or_insert(why);
        self.stopped.store(true, Ordering::Release);
    }

    /// `Stopped` once [`stop`](Self::stop) was called.
    #[inline]
    fn check_stopped(&self) -> Result<(), BufferError> {
        if !self.stopped.load(Ordering::Relaxed) {
            return Ok(());
        }
        let what = self.stop_reason.lock().clone().unwrap_or_default();
        Err(BufferError::Stopped { store: "the buffer manager", what })
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
    pub fn residency(&self, pid: PageId) -> Result<Option<Residency>, BufferError> {
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
    pub fn location(&self, pid: PageId) -> Result<Entry, BufferError> {
        self.table.get(pid)
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

    // ----- pointer swizzling (paper §3.3) -----------------------------------------------

    // ----- hooks of the line guards (frame::lines) ------------------------------------

    // ----- DRAM replacement -----------------------------------------------------------

    // ----- NVM replacement ------------------------------------------------------------

    // ----- SSD ------------------------------------------------------------------------

    // ----- allocation -----------------------------------------------------------------

    /// Checkpoints and closes.
    ///
    /// # Errors
    /// As [`checkpoint`](Self::checkpoint).
    pub fn close(self) -> Result<(), BufferError> {
        self.checkpoint()
    }
}

/// How long a fixer spins on the frame of a swizzled reference before it takes the
/// page table's way (the frame is held by a writer or being evicted).
const SWIZZLED_SPINS_MAX: u32 = 256;

/// The fewest DRAM frames a buffer manager works with: a B+-tree operation holds a
/// few pages at once (coupling) and each thread may need one more to load into.
pub const MIN_DRAM_FRAMES: usize = 8;
