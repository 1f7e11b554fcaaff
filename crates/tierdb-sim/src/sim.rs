//! The simulator: replays a [`Prepared`] trace through the engine's own [`Policy`]
//! code over metadata-only pools.
//!
//! [`Pools`] is the buffer manager's mechanism (crates/tierdb/src/buffer/manager.rs)
//! without page bytes, latches or I/O: the page table, DRAM frames with their clock
//! hand and free stack, NVM frames with theirs. It asks the policy the same questions
//! at the same points in the same order — so a policy's state (hymem's admission set,
//! nvcache's OBP window, spitfire's coin stream) evolves as in a single-threaded engine
//! run — and bumps the engine's own counters ([`BufferStats`]). What it leaves out:
//! cache-line-grained pages, mini pages and swizzling (`Techniques::NONE` only), and
//! frames the engine's clock skips because another fix holds their latch.
//!
//! `lru` and `arc` are DRAM-only policies of [`crate::cache`], run by the same driver.
//!
//! Measurement: counters are taken from where [`Warmup`] says (by default the trace's
//! `measure` marker, else the second half of the accesses).

use tierdb::counters::BufferStats;
use tierdb::ids::{Lsn, PageId};
use tierdb::limits::{CACHE_LINE_BYTES, CLOCK_ROUNDS_MAX, POLICY_SEED_DEFAULT};
use tierdb::policy::{
    self, Event, EvictTo, MissTarget, NvcacheConfig, NvmAccess, NvmCacheStats, PageInfo, Policy, PolicyStats, Pool,
    Tiers, Victim,
};

use crate::cache::{Arc, Cache, Lru};
use crate::error::SimError;
use crate::prepared::{Prepared, Warmup, unpack};
use crate::trace::{Marker, Op};

/// DRAM-only policies the simulator adds to the engine's.
pub const DRAM_POLICIES: &[&str] = &["lru", "arc"];

/// A simulation's configuration.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// DRAM frames, pages; at least 1.
    pub dram_pages: usize,
    /// NVM frames, pages; 0 for no NVM (and must be 0 for `lru` / `arc`).
    pub nvm_pages: usize,
    /// Without SSD every page must fit in NVM (`basic-nvm-bm`).
    pub has_ssd: bool,
    /// An engine policy ([`policy::POLICY_NAMES`]) or `lru` / `arc`.
    pub policy: String,
    /// Capacity of hymem's admission set, pages; `None` for the engine's default for
    /// this NVM size (`Hymem::default_capacity`).
    pub admission_set_pages: Option<usize>,
    /// Settings of the `nvcache` policy (ignored by the others).
    pub nvcache: NvcacheConfig,
    /// Seed of the policy's random choices (spitfire's coin stream): one seed, one
    /// replay.
    pub seed: u64,
    /// Where measurement starts.
    pub warmup: Warmup,
    /// Treat whole-page reads and writes as line-grained ones, so that a policy may
    /// serve them in place on NVM (block traces carry no such distinction; the
    /// Spitfire paper's simulator applies its knobs to every access).
    pub as_lines: bool,
}

impl SimConfig {
    /// `policy` over `dram_pages` DRAM and `nvm_pages` NVM frames with an SSD, the
    /// engine's default seed and nvcache settings, [`Warmup::Auto`], whole-page
    /// accesses as they are.
    pub fn new(policy: &str, dram_pages: usize, nvm_pages: usize) -> SimConfig {
        SimConfig {
            dram_pages,
            nvm_pages,
            has_ssd: true,
            policy: policy.into(),
            admission_set_pages: None,
            nvcache: NvcacheConfig::default(),
            seed: POLICY_SEED_DEFAULT,
            warmup: Warmup::Auto,
            as_lines: false,
        }
    }
}

/// What a simulation counted (over the measured part).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SimResult {
    /// The policy simulated, as configured.
    pub policy: String,
    /// DRAM frames simulated, pages.
    pub dram_pages: usize,
    /// NVM frames simulated, pages.
    pub nvm_pages: usize,
    /// Whether the hierarchy had an SSD.
    pub has_ssd: bool,
    /// Page accesses (reads and writes) measured; never 0 in a returned result.
    pub accesses: u64,
    /// Page accesses replayed before measurement started; not in `stats`.
    pub warmup_accesses: u64,
    /// The engine's counters, as a run of the engine would report them.
    pub stats: BufferStats,
    /// The counters of a policy that runs NVM as a cache (nvcache), over the measured
    /// part; `None` for the other policies.
    pub nvm_cache: Option<NvmCacheStats>,
    /// Lines per page (for line counts).
    pub lines_per_page: u64,
}

impl SimResult {
    /// Accesses served by DRAM, by NVM (migrated or in place), by SSD.
    pub fn hit_ratios(&self) -> (f64, f64, f64) {
        let f = self.stats.fixes().max(1) as f64;
        (self.stats.dram_hits as f64 / f, self.stats.nvm_hits as f64 / f, self.stats.ssd_reads as f64 / f)
    }

    /// Pages written into NVM (admissions and write-backs) plus lines written in place,
    /// in lines: the wear measure.
    pub fn nvm_lines_written(&self) -> u64 {
        self.stats.nvm_lines_written
    }
}

const EMPTY: u32 = u32::MAX;
const NVM_BIT: u32 = 1 << 31;
const NO_FRAME: u32 = u32::MAX;
/// A page being moved (the engine's claimed entry): no clock takes it meanwhile.
const BUSY: u32 = NVM_BIT - 1;

/// Metadata-only tiers driven by a policy.
pub struct Pools {
    policy: Box<dyn Policy>,
    tiers: Tiers,
    lines_per_page: u64,
    /// Page table by dense page id: `EMPTY`, a DRAM frame, or `NVM_BIT | nvm frame`.
    table: Vec<u32>,
    d_pid: Vec<u32>,
    d_dirty: Vec<bool>,
    d_nvm: Vec<u32>,
    d_ref: Vec<bool>,
    d_free: Vec<u32>,
    d_hand: usize,
    n_pid: Vec<u32>,
    n_dirty: Vec<bool>,
    n_ref: Vec<bool>,
    n_free: Vec<u32>,
    n_hand: usize,
    in_place_reads: bool,
    clean_only: bool,
    bulk_load: bool,
    sweep: Vec<PageId>,
    /// The engine's counters, bumped where the buffer manager bumps them; cumulative
    /// since [`Pools::new`] (the caller subtracts the warm-up).
    pub stats: BufferStats,
}

impl Pools {
    /// Empty pools of `cfg`'s capacities, driven by `cfg`'s policy, for a trace of
    /// `pages` dense page ids over a database of `database_pages` pages when it begins
    /// (the policy is told, as the engine tells it at open; allocations grow it).
    ///
    /// # Errors
    /// `Config` for an unknown policy, no DRAM, or a `basic-nvm-bm` whose NVM cannot
    /// hold the trace's pages.
    pub fn new(cfg: &SimConfig, pages: usize, database_pages: u64, page_size_bytes: u32) -> Result<Pools, SimError> {
        if cfg.dram_pages == 0 {
            return Err(SimError::Config { what: "DRAM must hold at least one page".into() });
        }
        if !cfg.has_ssd && cfg.nvm_pages <= pages {
            return Err(SimError::Config {
                what: format!(
                    "without SSD all {pages} pages must fit in NVM (and one frame stay free); NVM has {}",
                    cfg.nvm_pages
                ),
            });
        }
        if cfg.dram_pages >= BUSY as usize || cfg.nvm_pages >= BUSY as usize {
            return Err(SimError::Config { what: "pools of 2^31 pages or more".into() });
        }
        let tiers = Tiers {
            has_nvm: cfg.nvm_pages > 0,
            has_ssd: cfg.has_ssd,
            dram_frames: cfg.dram_pages,
            nvm_frames: cfg.nvm_pages,
        };
        let set = cfg.admission_set_pages.unwrap_or(policy::Hymem::default_capacity(cfg.nvm_pages));
        let policy = policy::by_name(&cfg.policy, set, &cfg.nvcache, cfg.seed)?;
        let shape = policy.shape();
        if shape.nvm_disjoint || shape.nvm_durable_cache {
            // Not modelled: a cache whose NVM copies are durable and flushed to SSD by
            // LSN, beside DRAM rather than below it. Replaying it here would run none of
            // those paths (and give every page LSN 0), so its counts would be wrong.
            return Err(SimError::Config {
                what: format!(
                    "policy {} keeps a durable NVM write cache beside DRAM (disjoint tiers, flushes by LSN), \
                     which the simulator does not model; measure it on the engine (`tierdb bench ycsb --arch nvsql`)",
                    cfg.policy
                ),
            });
        }
        let in_place_reads = cfg.nvm_pages > 0 && shape.in_place;
        let clean_only = shape.nvm_clean_only;
        policy.observe(Event::DatabaseSize(database_pages));
        Ok(Pools {
            tiers,
            lines_per_page: u64::from(page_size_bytes) / CACHE_LINE_BYTES as u64,
            table: vec![EMPTY; pages],
            d_pid: vec![EMPTY; cfg.dram_pages],
            d_dirty: vec![false; cfg.dram_pages],
            d_nvm: vec![NO_FRAME; cfg.dram_pages],
            d_ref: vec![false; cfg.dram_pages],
            d_free: (0..cfg.dram_pages as u32).rev().collect(),
            d_hand: 0,
            n_pid: vec![EMPTY; cfg.nvm_pages],
            n_dirty: vec![false; cfg.nvm_pages],
            n_ref: vec![false; cfg.nvm_pages],
            n_free: (0..cfg.nvm_pages as u32).rev().collect(),
            n_hand: 0,
            in_place_reads,
            clean_only,
            bulk_load: false,
            sweep: Vec::new(),
            stats: BufferStats::default(),
            policy,
        })
    }

    /// The policy's NVM-cache counters (`nvcache`), `None` for other policies.
    pub fn cache_stats(&self) -> Option<NvmCacheStats> {
        match self.policy.stats() {
            PolicyStats::Cache(c) => Some(c),
            _ => None,
        }
    }

    /// The policy the pools ask (for its own counters).
    pub fn policy(&self) -> &dyn Policy {
        &*self.policy
    }

    #[inline]
    fn info(pid: u32, dirty: bool, nvm_copy: bool, referenced: bool) -> PageInfo {
        PageInfo {
            pid: PageId(u64::from(pid)),
            dirty,
            nvm_copy,
            referenced,
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        }
    }

    /// A whole-page fix (`fix_optimistic` / `fix_shared` for reads, `fix_exclusive`
    /// for writes).
    #[inline]
    pub fn fix(&mut self, pid: u32, write: bool) {
        let e = self.table[pid as usize];
        if e < NVM_BIT {
            self.d_ref[e as usize] = true;
            self.d_dirty[e as usize] |= write;
            self.stats.dram_hits += 1;
            return;
        }
        if e != EMPTY && !write && self.in_place_reads {
            // `read_in_place`: the policy may let a whole-page read stay in NVM.
            let info = Self::info(pid, false, true, true);
            if self.policy.nvm_access(&info, false, &self.tiers) == NvmAccess::InPlace {
                let n = (e & !NVM_BIT) as usize;
                self.n_ref[n] = true;
                self.stats.nvm_reads_in_place += 1;
                self.stats.nvm_hits += 1;
                return;
            }
        }
        self.load(pid, e, None);
        let f = self.table[pid as usize] as usize;
        self.d_dirty[f] |= write;
    }

    /// A line-grained fix (`fix_lines`): an NVM page may be served in place.
    #[inline]
    pub fn fix_lines(&mut self, pid: u32, write: bool) {
        let mut e = self.table[pid as usize];
        if e < NVM_BIT {
            self.d_ref[e as usize] = true;
            self.d_dirty[e as usize] |= write;
            self.stats.dram_hits += 1;
            return;
        }
        if e == EMPTY {
            let info = Self::info(pid, false, false, true);
            let miss = self.policy.ssd_miss(&info, &self.tiers);
            let to = match miss {
                MissTarget::Nvm if self.tiers.has_nvm && self.load_into_nvm(pid) => None,
                MissTarget::Nvm => Some(MissTarget::Dram),
                other => Some(other),
            };
            if let Some(to) = to {
                self.load(pid, EMPTY, Some(to));
                let f = self.table[pid as usize] as usize;
                self.d_dirty[f] |= write;
                return;
            }
            e = self.table[pid as usize];
        }
        let info = Self::info(pid, false, true, true);
        match self.policy.nvm_access(&info, write, &self.tiers) {
            NvmAccess::InPlace => {
                let n = (e & !NVM_BIT) as usize;
                self.n_ref[n] = true;
                if write {
                    self.n_dirty[n] = true;
                    self.stats.nvm_writes_in_place += 1;
                } else {
                    self.stats.nvm_reads_in_place += 1;
                }
                self.stats.nvm_hits += 1;
            }
            NvmAccess::Migrate => {
                self.load(pid, e, None);
                let f = self.table[pid as usize] as usize;
                self.d_dirty[f] |= write;
            }
        }
    }

    /// A new page (`allocate`): a DRAM frame, dirty, no read.
    pub fn allocate(&mut self, pid: u32, database_pages: u64) {
        self.policy.observe(Event::DatabaseSize(database_pages));
        debug_assert_eq!(self.table[pid as usize], EMPTY, "allocating resident page {pid}");
        let f = self.free_frame();
        self.reset_frame(f, pid, NO_FRAME);
        self.d_dirty[f as usize] = true;
        self.table[pid as usize] = f;
        self.stats.allocations += 1;
    }

    /// A page freed (`free`), fixed in DRAM before; tolerates one that is not (an
    /// imported trace) by dropping whatever copy it has.
    pub fn free(&mut self, pid: u32) {
        let e = self.table[pid as usize];
        if e == EMPTY {
            return;
        }
        if e >= NVM_BIT {
            self.n_release((e & !NVM_BIT) as usize);
        } else {
            let f = e as usize;
            if self.d_nvm[f] != NO_FRAME {
                self.n_release(self.d_nvm[f] as usize);
            }
            self.d_pid[f] = EMPTY;
            self.d_nvm[f] = NO_FRAME;
            self.d_dirty[f] = false;
            self.d_free.push(f as u32);
        }
        self.policy.observe(Event::Freed(PageId(u64::from(pid))));
        self.table[pid as usize] = EMPTY;
        self.stats.frees += 1;
    }

    /// The engine's `set_bulk_load`: on, evictions fill free NVM frames; off, the dirty
    /// DRAM pages without an NVM copy are copied into free NVM frames, frame by frame.
    pub fn set_bulk_load(&mut self, on: bool) {
        self.bulk_load = on;
        if on || !self.tiers.has_nvm || !self.tiers.has_ssd || self.clean_only {
            return;
        }
        for f in 0..self.d_pid.len() {
            let pid = self.d_pid[f];
            if pid == EMPTY || self.d_nvm[f] != NO_FRAME || !self.d_dirty[f] {
                continue;
            }
            let Some(n) = self.n_free.pop() else { break };
            self.n_write(n, pid, true);
            self.d_nvm[f] = n;
            self.d_dirty[f] = false;
            self.stats.nvm_admissions += 1;
        }
    }

    fn n_release(&mut self, n: usize) {
        self.n_pid[n] = EMPTY;
        self.n_dirty[n] = false;
        self.n_ref[n] = false;
        self.n_free.push(n as u32);
    }

    fn reset_frame(&mut self, f: u32, pid: u32, n: u32) {
        let f = f as usize;
        self.d_pid[f] = pid;
        self.d_nvm[f] = n;
        self.d_dirty[f] = false;
        self.d_ref[f] = true;
    }

    /// `load_to` + `fill`: brings `pid` into a DRAM frame from NVM or SSD.
    fn load(&mut self, pid: u32, from: u32, miss: Option<MissTarget>) {
        // Claimed first, as the engine does: finding a frame may run the NVM clock,
        // which must not take the page being loaded.
        self.table[pid as usize] = BUSY;
        let f = self.free_frame();
        let mut n_of = NO_FRAME;
        if from != EMPTY {
            let n = from & !NVM_BIT;
            self.n_ref[n as usize] = true;
            n_of = n;
            self.stats.nvm_hits += 1;
            self.stats.nvm_to_dram_pages += 1;
            self.stats.nvm_lines_loaded += self.lines_per_page;
        } else {
            self.stats.ssd_reads += 1;
            let miss = miss.unwrap_or_else(|| {
                let info = Self::info(pid, false, false, true);
                self.policy.ssd_miss(&info, &self.tiers)
            });
            if matches!(miss, MissTarget::DramAndNvm | MissTarget::Nvm)
                && self.tiers.has_nvm
                && let Some(n) = self.nvm_frame()
            {
                self.n_write(n, pid, false);
                n_of = n;
                self.stats.nvm_admissions += 1;
                self.policy.observe(Event::NvmAdmitted { pid: PageId(u64::from(pid)), on_eviction: false });
            }
        }
        self.reset_frame(f, pid, n_of);
        self.table[pid as usize] = f;
    }

    /// `load_into_nvm`: an SSD page into an NVM frame only. False if NVM has no frame.
    fn load_into_nvm(&mut self, pid: u32) -> bool {
        self.table[pid as usize] = BUSY;
        let Some(n) = self.nvm_frame() else {
            self.table[pid as usize] = EMPTY;
            return false;
        };
        self.n_write(n, pid, false);
        self.stats.ssd_reads += 1;
        self.stats.nvm_admissions += 1;
        self.table[pid as usize] = NVM_BIT | n;
        true
    }

    /// `NvmPool::write_page`: a whole page written into NVM frame `n`.
    fn n_write(&mut self, n: u32, pid: u32, dirty: bool) {
        let n = n as usize;
        self.n_pid[n] = pid;
        self.n_dirty[n] = dirty;
        self.n_ref[n] = true;
        self.stats.dram_to_nvm_pages += 1;
        self.stats.nvm_lines_written += self.lines_per_page;
    }

    /// `free_frame`: the free stack, else the clock's victim, evicted.
    fn free_frame(&mut self) -> u32 {
        if let Some(f) = self.d_free.pop() {
            return f;
        }
        let len = self.d_pid.len();
        for _ in 0..len * CLOCK_ROUNDS_MAX {
            let f = self.d_hand % len;
            self.d_hand += 1;
            let pid = self.d_pid[f];
            if pid == EMPTY {
                continue;
            }
            let info = Self::info(pid, self.d_dirty[f], self.d_nvm[f] != NO_FRAME, self.d_ref[f]);
            match self.policy.victim(Pool::Dram, &info, &self.tiers) {
                Victim::SecondChance => {
                    self.d_ref[f] = false;
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            self.evict(f);
            return f as u32;
        }
        // A policy that skips every frame: the engine reports `Exhausted`; the
        // simulator takes the frame under the hand rather than stop the replay.
        let f = self.d_hand % len;
        self.evict(f);
        f as u32
    }

    /// `evict`: moves the page out of DRAM frame `f` where the policy says.
    fn evict(&mut self, f: usize) {
        let pid = self.d_pid[f];
        let n = self.d_nvm[f];
        let dirty = self.d_dirty[f];
        let info = Self::info(pid, dirty, n != NO_FRAME, false);
        let mut to = self.policy.dram_eviction(&info, &self.tiers);
        let bulk_to_free_nvm = to == EvictTo::Ssd && !self.clean_only && self.bulk_load && !self.n_free.is_empty();
        if !self.tiers.has_nvm || (to == EvictTo::SsdAndNvm && !self.tiers.has_ssd) {
            to = EvictTo::Ssd;
        } else if !self.tiers.has_ssd || bulk_to_free_nvm {
            to = EvictTo::Nvm;
        }
        let entry = match to {
            EvictTo::Nvm => self.evict_to_nvm(pid, dirty, n),
            EvictTo::Ssd => self.evict_to_ssd(pid, dirty, n),
            EvictTo::SsdAndNvm => self.evict_through(pid, dirty, n),
        };
        self.table[pid as usize] = entry;
        self.d_pid[f] = EMPTY;
        self.d_nvm[f] = NO_FRAME;
        self.d_dirty[f] = false;
        self.stats.dram_evictions += 1;
    }

    fn evict_to_nvm(&mut self, pid: u32, dirty: bool, n: u32) -> u32 {
        if n != NO_FRAME {
            if dirty {
                self.n_write(n, pid, true);
            } else {
                self.stats.clean_drops += 1;
            }
            return NVM_BIT | n;
        }
        let Some(n) = self.nvm_frame() else { return self.evict_to_ssd(pid, dirty, NO_FRAME) };
        self.n_write(n, pid, dirty);
        self.stats.nvm_admissions += 1;
        self.policy.observe(Event::NvmAdmitted { pid: PageId(u64::from(pid)), on_eviction: true });
        NVM_BIT | n
    }

    fn evict_through(&mut self, pid: u32, dirty: bool, n: u32) -> u32 {
        if !dirty {
            self.stats.clean_drops += 1;
            return if n == NO_FRAME { EMPTY } else { NVM_BIT | n };
        }
        self.stats.dram_to_ssd_pages += 1;
        if n != NO_FRAME {
            self.n_write(n, pid, false);
            self.policy.observe(Event::NvmAdmitted { pid: PageId(u64::from(pid)), on_eviction: true });
            return NVM_BIT | n;
        }
        let Some(n) = self.nvm_frame() else { return EMPTY };
        self.n_write(n, pid, false);
        self.stats.nvm_admissions += 1;
        self.policy.observe(Event::NvmAdmitted { pid: PageId(u64::from(pid)), on_eviction: true });
        NVM_BIT | n
    }

    fn evict_to_ssd(&mut self, pid: u32, dirty: bool, n: u32) -> u32 {
        if dirty {
            self.stats.dram_to_ssd_pages += 1;
        } else {
            self.stats.clean_drops += 1;
        }
        if n != NO_FRAME {
            self.n_release(n as usize);
            self.policy.observe(Event::NvmLeft(PageId(u64::from(pid))));
        }
        EMPTY
    }

    /// `nvm_frame`: a free NVM frame, else one the policy's sweep or the clock frees.
    fn nvm_frame(&mut self) -> Option<u32> {
        if let Some(n) = self.n_free.pop() {
            return Some(n);
        }
        if !self.tiers.has_ssd {
            return None;
        }
        let mut sweep = std::mem::take(&mut self.sweep);
        sweep.clear();
        if self.policy.nvm_victims(&self.tiers, &mut sweep) {
            for &p in &sweep {
                let pid = p.0 as u32;
                let e = self.table[pid as usize];
                if e == EMPTY || e < NVM_BIT {
                    continue;
                }
                let n = (e & !NVM_BIT) as usize;
                if self.n_dirty[n] {
                    self.stats.nvm_to_ssd_pages += 1;
                }
                self.n_release(n);
                self.policy.observe(Event::NvmLeft(p));
                self.stats.nvm_evictions += 1;
                self.table[pid as usize] = EMPTY;
            }
            self.sweep = sweep;
            return self.n_free.pop();
        }
        self.sweep = sweep;
        let len = self.n_pid.len();
        for _ in 0..len * CLOCK_ROUNDS_MAX {
            let n = self.n_hand % len;
            self.n_hand += 1;
            let pid = self.n_pid[n];
            if pid == EMPTY || self.table[pid as usize] != NVM_BIT | n as u32 {
                continue; // free, or in DRAM too (its DRAM frame owns it)
            }
            let info = Self::info(pid, self.n_dirty[n], true, self.n_ref[n]);
            match self.policy.victim(Pool::Nvm, &info, &self.tiers) {
                Victim::SecondChance => {
                    self.n_ref[n] = false;
                    continue;
                }
                Victim::Skip => continue,
                Victim::Evict => {}
            }
            if self.n_dirty[n] {
                self.stats.nvm_to_ssd_pages += 1;
            }
            self.n_pid[n] = EMPTY;
            self.n_dirty[n] = false;
            self.policy.observe(Event::NvmLeft(PageId(u64::from(pid))));
            self.stats.nvm_evictions += 1;
            self.table[pid as usize] = EMPTY;
            return Some(n as u32);
        }
        self.n_free.pop()
    }

    /// The buffer manager's invariants, on metadata: each page in at most one frame
    /// per tier, the table agreeing with the frames.
    pub fn check_invariants(&self) {
        for (f, &pid) in self.d_pid.iter().enumerate() {
            if pid != EMPTY {
                assert_eq!(self.table[pid as usize], f as u32, "DRAM frame {f} holds {pid}, the table disagrees");
                let n = self.d_nvm[f];
                if n != NO_FRAME {
                    assert_eq!(self.n_pid[n as usize], pid, "DRAM frame {f}'s NVM copy {n} holds another page");
                }
            }
        }
        for (n, &pid) in self.n_pid.iter().enumerate() {
            if pid != EMPTY {
                let e = self.table[pid as usize];
                assert!(
                    e == NVM_BIT | n as u32 || (e < NVM_BIT && self.d_nvm[e as usize] == n as u32),
                    "NVM frame {n} holds {pid} but the table says {e:#x}"
                );
            }
        }
        for (pid, &e) in self.table.iter().enumerate() {
            if e != EMPTY && e < NVM_BIT {
                assert_eq!(self.d_pid[e as usize], pid as u32);
            } else if e != EMPTY {
                assert_eq!(self.n_pid[(e & !NVM_BIT) as usize], pid as u32);
            }
        }
    }
}

/// A simulator: the tiered pools or a DRAM-only cache.
enum Engine {
    Tiered(Box<Pools>),
    Dram(Box<dyn Cache + Send>),
}

/// Where a replay starts counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// At the record of this index (0: from the start; the `measure` marker's index).
    Record(u64),
    /// At the first record preceded by this many page accesses (the first half).
    Access(u64),
}

/// One replay, fed record by record: what [`simulate`] runs over a [`Prepared`] trace,
/// and what [`crate::stream`] runs over a trace file read in chunks, so that both count
/// the same.
pub struct Replay {
    engine: Engine,
    cfg: SimConfig,
    start: Start,
    started: bool,
    records: u64,
    accesses: u64,
    dram_stats: BufferStats,
    warm: u64,
    measured: u64,
    before: BufferStats,
    cache_before: Option<NvmCacheStats>,
    allocated_max: u64,
    lines_per_page: u64,
}

impl Replay {
    /// A replay of `cfg` over a trace of `pages` dense page ids, `database_pages` of
    /// which exist before it begins (see [`Prepared::preexisting_pages`]), counting
    /// from `start`.
    ///
    /// # Errors
    /// `Config` for a configuration that cannot run.
    pub fn new(
        cfg: &SimConfig,
        pages: usize,
        database_pages: u64,
        page_size_bytes: u32,
        start: Start,
    ) -> Result<Replay, SimError> {
        let engine = match cfg.policy.as_str() {
            "lru" | "arc" => {
                if cfg.nvm_pages > 0 {
                    return Err(SimError::Config {
                        what: format!("{} is a DRAM-only policy; give no NVM", cfg.policy),
                    });
                }
                if cfg.dram_pages == 0 {
                    return Err(SimError::Config { what: "DRAM must hold at least one page".into() });
                }
                let c: Box<dyn Cache + Send> = if cfg.policy == "lru" {
                    Box::new(Lru::new(cfg.dram_pages, pages))
                } else {
                    Box::new(Arc::new(cfg.dram_pages, pages))
                };
                Engine::Dram(c)
            }
            _ => Engine::Tiered(Box::new(Pools::new(cfg, pages, database_pages, page_size_bytes)?)),
        };
        Ok(Replay {
            engine,
            cfg: cfg.clone(),
            start,
            started: false,
            records: 0,
            accesses: 0,
            dram_stats: BufferStats::default(),
            warm: 0,
            measured: 0,
            before: BufferStats::default(),
            cache_before: None,
            allocated_max: database_pages,
            lines_per_page: u64::from(page_size_bytes) / CACHE_LINE_BYTES as u64,
        })
    }

    fn snapshot(&mut self) {
        self.before = match &self.engine {
            Engine::Tiered(p) => {
                self.cache_before = p.cache_stats();
                p.stats
            }
            Engine::Dram(_) => self.dram_stats,
        };
        self.started = true;
    }

    /// Replays one record: `op` on dense page `x` (a marker: its code), whose id in
    /// the trace is `original` (used by allocations: the database's size).
    #[inline]
    pub fn step(&mut self, op: Op, x: u64, original: u64) {
        if !self.started
            && match self.start {
                Start::Record(i) => self.records == i,
                Start::Access(n) => self.accesses == n,
            }
        {
            self.snapshot();
        }
        self.records += 1;
        match &mut self.engine {
            Engine::Tiered(p) => match op {
                Op::Read | Op::Write if !self.cfg.as_lines => p.fix(x as u32, op == Op::Write),
                Op::Read | Op::Write | Op::ReadLines | Op::WriteLines => p.fix_lines(x as u32, op.is_write()),
                Op::Alloc => {
                    self.allocated_max = self.allocated_max.max(original);
                    p.allocate(x as u32, self.allocated_max);
                }
                Op::Free => p.free(x as u32),
                Op::Marker => match Marker::from_code(x) {
                    Some(Marker::BulkLoadOn) => p.set_bulk_load(true),
                    Some(Marker::BulkLoadOff) => p.set_bulk_load(false),
                    _ => {}
                },
            },
            Engine::Dram(c) => {
                if op.is_access() || op == Op::Alloc {
                    let held = c.len();
                    if c.access(x as u32) {
                        self.dram_stats.dram_hits += 1;
                    } else {
                        if op == Op::Alloc {
                            self.dram_stats.allocations += 1;
                        } else {
                            self.dram_stats.ssd_reads += 1;
                        }
                        // A miss that did not grow the cache pushed a page out.
                        if c.len() == held {
                            self.dram_stats.dram_evictions += 1;
                        }
                    }
                }
            }
        }
        if op.is_access() {
            self.accesses += 1;
            if self.started {
                self.measured += 1;
            } else {
                self.warm += 1;
            }
        }
    }

    /// The counts of the measured part.
    ///
    /// # Errors
    /// `NoAccesses` if no page access was measured.
    pub fn finish(mut self) -> Result<SimResult, SimError> {
        if self.measured == 0 {
            let what = if self.warm == 0 {
                format!("the trace's {} records hold no page access (read or write)", self.records)
            } else {
                // Only a start at the `measure` marker can measure none of them.
                format!(
                    "the trace's `measure` marker comes after all {} of its page accesses; \
                     replay with warm-up none or half",
                    self.warm
                )
            };
            return Err(SimError::NoAccesses { what });
        }
        if !self.started {
            self.snapshot();
        }
        let (end, cache) = match &self.engine {
            Engine::Tiered(p) => {
                if cfg!(debug_assertions) {
                    p.check_invariants();
                }
                let c = p.cache_stats();
                (p.stats, c.map(|c| self.cache_before.map_or(c, |b| c.since(&b))))
            }
            Engine::Dram(_) => (self.dram_stats, None),
        };
        Ok(SimResult {
            policy: self.cfg.policy.clone(),
            dram_pages: self.cfg.dram_pages,
            nvm_pages: self.cfg.nvm_pages,
            has_ssd: self.cfg.has_ssd,
            accesses: self.measured,
            warmup_accesses: self.warm,
            stats: end.since(&self.before),
            nvm_cache: cache,
            lines_per_page: self.lines_per_page,
        })
    }
}

/// Runs `cfg` over `trace`.
///
/// # Errors
/// `Config` for a configuration that cannot run; `NoAccesses` if no page access is
/// measured (the trace has none, or all come before its `measure` marker).
pub fn simulate(trace: &Prepared, cfg: &SimConfig) -> Result<SimResult, SimError> {
    let from = trace.measure_from(cfg.warmup) as u64;
    let mut replay =
        Replay::new(cfg, trace.pages(), trace.preexisting_pages, trace.page_size_bytes, Start::Record(from))?;
    for &v in &trace.ops {
        let (op, x) = unpack(v);
        let original = if op == Op::Alloc { trace.original[x as usize] } else { 0 };
        replay.step(op, x, original);
    }
    replay.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Header, Record, Trace};

    fn trace(ops: &[(Op, u64)]) -> Prepared {
        Prepared::new(&Trace {
            header: Header { page_size_bytes: 16384, source: "t".into() },
            records: ops.iter().map(|&(o, p)| Record::access(o, p)).collect(),
        })
    }

    fn zipfish(n: usize, pages: u64, seed: u64) -> Vec<(Op, u64)> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
                let p = ((pages as f64).powf(u) - 1.0) as u64; // skewed towards 0
                (if (x >> 7).is_multiple_of(5) { Op::Write } else { Op::Read }, p)
            })
            .collect()
    }

    #[test]
    fn every_policy_keeps_the_pools_consistent_and_counts_add_up() {
        let t = trace(&zipfish(50_000, 2000, 7));
        for policy in ["eager", "hymem", "nvcache", "spitfire:b", "spitfire:c", "se2"] {
            for as_lines in [false, true] {
                let mut cfg = SimConfig::new(policy, 64, 256);
                cfg.warmup = Warmup::None;
                cfg.as_lines = as_lines;
                if policy == "se2" {
                    cfg.has_ssd = false;
                    cfg.nvm_pages = 2048;
                }
                let r = simulate(&t, &cfg).unwrap();
                let s = r.stats;
                assert_eq!(r.accesses, 50_000);
                // Each access hits DRAM, NVM, or reads SSD (load_into_nvm + in-place
                // counts both an SSD read and an NVM hit).
                let fixes = s.dram_hits + s.nvm_hits + s.ssd_reads;
                assert!(fixes >= 50_000, "{policy}: {s:?}");
                assert!(s.dram_hits > 10_000, "{policy}: skewed trace should hit DRAM: {s:?}");
                if policy != "se2" {
                    assert!(s.ssd_reads >= 2000 / 2, "{policy}: cold misses");
                } else {
                    assert_eq!(s.ssd_reads, t.pages() as u64, "se2 without SSD: only the first touch");
                }
            }
        }
    }

    #[test]
    fn nvm_catches_what_dram_drops() {
        let t = trace(&zipfish(100_000, 1000, 3));
        let mut cfg = SimConfig::new("eager", 50, 0);
        let dram_only = simulate(&t, &cfg).unwrap();
        cfg.nvm_pages = 2000;
        let three = simulate(&t, &cfg).unwrap();
        assert_eq!(dram_only.stats.nvm_hits, 0);
        assert!(three.stats.ssd_reads < dram_only.stats.ssd_reads / 10, "{:?} vs {:?}", three.stats, dram_only.stats);
        assert_eq!(three.stats.dram_hits + three.stats.nvm_hits + three.stats.ssd_reads, three.accesses);
    }

    #[test]
    fn spitfire_with_the_same_seed_repeats_and_another_differs() {
        let t = trace(&zipfish(30_000, 1000, 5));
        let mut cfg = SimConfig::new("spitfire:b", 32, 128);
        cfg.as_lines = true;
        let a = simulate(&t, &cfg).unwrap();
        let b = simulate(&t, &cfg).unwrap();
        assert_eq!(a.stats, b.stats);
        cfg.seed += 1;
        assert_ne!(simulate(&t, &cfg).unwrap().stats, a.stats);
    }

    #[test]
    fn dram_only_caches_count_their_evictions() {
        // Two pages of DRAM: 1 and 2 fill it, 3 pushes 1 out, 1 pushes 2 (LRU) out.
        let t = trace(&[(Op::Read, 1), (Op::Read, 2), (Op::Read, 3), (Op::Read, 1), (Op::Read, 1)]);
        for policy in ["lru", "arc"] {
            let mut cfg = SimConfig::new(policy, 2, 0);
            cfg.warmup = Warmup::None;
            let s = simulate(&t, &cfg).unwrap().stats;
            assert_eq!((s.dram_hits, s.ssd_reads, s.dram_evictions), (1, 4, 2), "{policy}: {s:?}");
        }
    }

    #[test]
    fn bad_configurations_are_errors() {
        let t = trace(&zipfish(100, 50, 1));
        assert!(simulate(&t, &SimConfig::new("nope", 4, 4)).is_err());
        assert!(simulate(&t, &SimConfig::new("eager", 0, 4)).is_err());
        assert!(simulate(&t, &SimConfig::new("lru", 4, 4)).is_err());
        // nvsql's durable write cache is not modelled: refused, naming the policy.
        let e = simulate(&t, &SimConfig::new("nvsql", 4, 4)).unwrap_err().to_string();
        assert!(e.contains("nvsql") && e.contains("does not model"), "{e}");
        let mut c = SimConfig::new("eager", 4, 10);
        c.has_ssd = false;
        assert!(simulate(&t, &c).is_err());
    }

    #[test]
    fn a_trace_without_measured_accesses_is_an_error_not_a_result_of_zeros() {
        let cfg = SimConfig::new("eager", 4, 4);
        let allocs = trace(&[(Op::Alloc, 1), (Op::Free, 1)]);
        let e = simulate(&allocs, &cfg).unwrap_err();
        assert!(matches!(e, SimError::NoAccesses { .. }) && e.to_string().contains("no page access"), "{e}");
        let marker_last = Prepared::new(&Trace {
            header: Header { page_size_bytes: 16384, source: "t".into() },
            records: vec![Record::access(Op::Read, 1), Record::marker(Marker::Measure)],
        });
        let e = simulate(&marker_last, &cfg).unwrap_err();
        assert!(e.to_string().contains("measure"), "{e}");
        let mut none = cfg.clone();
        none.warmup = Warmup::None;
        assert_eq!(simulate(&marker_last, &none).unwrap().accesses, 1);
    }
}
