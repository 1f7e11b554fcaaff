//! `nvcache`: NVM as an independent, volatile block cache under the DRAM buffer
//! (NVCache for WiredTiger, papers/nvcache-optane-block-cache.txt, §3).
//!
//! The NVM pool holds *clean copies* of SSD pages, nothing else: a DRAM victim that is
//! dirty is written to SSD first ([`EvictTo::SsdAndNvm`], write-through) and may then be
//! admitted; a page read from SSD may be admitted on the way to DRAM. A page in DRAM may
//! also have its copy in NVM. Nothing in the cache survives a restart (the buffer
//! manager formats the pool on open when [`Shape::nvm_clean_only`](super::Shape::nvm_clean_only) says so), and
//! dropping any copy at any time loses nothing.
//!
//! Admission (§3.2.3):
//! - *small-bypass*: nothing is admitted while the database spans fewer pages than a
//!   configured share of the DRAM frames (data that fits in DRAM gains nothing);
//! - *overhead bypass*: OBP = (inserted + removed) / looked-up; while OBP exceeds its
//!   target (10% by default) nothing is admitted and nothing is evicted, because NVM
//!   writes slow down the reads that make the cache worth having (§2.1). OBP is taken
//!   over a sliding window of the last lookups (a ring of epochs), or since start-up
//!   ([`ObpMode::Cumulative`], the form that never forgets a write-heavy phase), or not
//!   at all ([`ObpMode::Off`]: always admit).
//!
//! Eviction: LFRU. Each cached page has an access count and the tick (lookup number)
//! of its last NVM hit. When the pool is full, a *sweep* picks the pages not reused
//! within the reuse window and evicts the least frequently used of them first, a batch
//! at a time. The paper runs the sweeper as a thread that wakes once a second; here it
//! is a step the buffer manager runs when an admission finds no free frame
//! ([`Policy::nvm_victims`]), on the logical clock of NVM-cache lookups, so `model` runs
//! stay deterministic and the sweep's cost is charged to the thread that needs the
//! frame. A sweep that found too few stale pages is not repeated for a sixteenth of the
//! window, the analogue of the thread's sleep.
//!
//! Counting: a *lookup* is a DRAM miss (the page table says NVM or SSD); a *hit* found
//! the page in NVM. An *insert* writes a page into NVM: on a read miss (read insert) or
//! on a dirty DRAM eviction (write insert; overwriting a cached page's stale copy in
//! place counts as one insert, as it is one page write). A *removal* drops a copy made
//! stale by a write that was not admitted, or a freed page; an *eviction* is the
//! sweep's. Inserts, removals and evictions all count in OBP's numerator (the paper's
//! definition, the default); [`ObpCount::Inserts`] counts only the inserts, the
//! operations that write NVM in this volatile pool.
//!
//! Stale copies: a page updated in DRAM has a stale copy in NVM until it leaves DRAM.
//! The paper's engine writes the new version as a new block (admitted or not) and frees
//! the old one (a removal, always). By default a dirty victim whose admission OBP
//! refuses has its copy removed likewise; with `stale_overwrite_hits_min` a copy that
//! has been reused is overwritten in place instead, one write insert for one removal.
//!
//! Concurrency: all state is behind one mutex, taken only on the DRAM-miss and eviction
//! paths, which do I/O anyway.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::{Event, EvictTo, MissTarget, NvmAccess, PageInfo, Policy, PolicyStats, Pool, Shape, Tiers, Victim};
use crate::ids::PageId;
use crate::limits::{
    NVCACHE_OBP_EPOCHS, NVCACHE_OBP_TARGET_PERMILLE_DEFAULT, NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT,
    NVCACHE_REUSE_WINDOW_LOOKUPS_PER_FRAME_DEFAULT, NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT,
    NVCACHE_SWEEP_BATCH_DIVISOR, NVCACHE_SWEEP_INTERVAL_DIVISOR,
};

/// How the overhead-bypass ratio is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObpMode {
    /// No overhead bypass: admit (and evict) whenever there is room (small-bypass
    /// still applies).
    Off,
    /// Since start-up.
    Cumulative,
    /// Over the last `obp_window_lookups` lookups.
    #[default]
    Window,
}

impl ObpMode {
    /// Every mode.
    pub const ALL: [ObpMode; 3] = [ObpMode::Off, ObpMode::Cumulative, ObpMode::Window];

    /// The mode's name as configured and reported (what `FromStr` accepts).
    pub fn name(self) -> &'static str {
        match self {
            ObpMode::Off => "off",
            ObpMode::Cumulative => "cumulative",
            ObpMode::Window => "window",
        }
    }
}

impl std::str::FromStr for ObpMode {
    type Err = String;
    fn from_str(s: &str) -> Result<ObpMode, String> {
        ObpMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown OBP mode {s:?}; known: off, cumulative, window"))
    }
}

/// What OBP's numerator counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObpCount {
    /// The paper's definition: inserts + removals (+ the sweep's evictions, which
    /// remove blocks too).
    #[default]
    All,
    /// Inserts only: the operations that write NVM. In the paper every removal frees
    /// allocator metadata kept in NVM, a write; in a volatile pool a removal or an
    /// eviction writes nothing (the pool runs volatile: it frees frames without
    /// touching their headers).
    Inserts,
}

impl ObpCount {
    /// Every choice.
    pub const ALL: [ObpCount; 2] = [ObpCount::All, ObpCount::Inserts];

    /// The choice's name as configured and reported (what `FromStr` accepts).
    pub fn name(self) -> &'static str {
        match self {
            ObpCount::All => "all",
            ObpCount::Inserts => "inserts",
        }
    }
}

impl std::str::FromStr for ObpCount {
    type Err = String;
    fn from_str(s: &str) -> Result<ObpCount, String> {
        ObpCount::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown OBP count {s:?}; known: all, inserts"))
    }
}

/// The tunables of `nvcache`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NvcacheConfig {
    /// How OBP is computed: over a sliding window (the default), since start-up, or not
    /// at all.
    pub obp_mode: ObpMode,
    /// OBP above this stops admissions and evictions; parts per thousand.
    pub obp_target_permille: u32,
    /// Lookups the sliding window spans (`ObpMode::Window`).
    pub obp_window_lookups: u64,
    /// Small-bypass: admit nothing while the database spans fewer pages than this
    /// percentage of the DRAM frames (0: off).
    pub small_bypass_dram_percent: u32,
    /// LFRU: a page not hit in NVM within this many lookups may be evicted; `None`:
    /// [`NVCACHE_REUSE_WINDOW_LOOKUPS_PER_FRAME_DEFAULT`] per NVM frame.
    pub reuse_window_lookups: Option<u64>,
    /// What OBP's numerator counts (the paper: inserts and removals).
    #[serde(default)]
    pub obp_count: ObpCount,
    /// A dirty DRAM victim whose admission OBP refuses, and whose page has a (now
    /// stale) NVM copy: `None` (the paper) removes the copy; `Some(k)` overwrites it in
    /// place instead (one page write, counted as a write insert, the same one unit of
    /// OBP as the removal) if the copy has had at least `k` NVM hits since admission.
    #[serde(default)]
    pub stale_overwrite_hits_min: Option<u64>,
}

impl Default for NvcacheConfig {
    fn default() -> NvcacheConfig {
        NvcacheConfig {
            obp_mode: ObpMode::Window,
            obp_target_permille: NVCACHE_OBP_TARGET_PERMILLE_DEFAULT,
            obp_window_lookups: NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT,
            small_bypass_dram_percent: NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT,
            reuse_window_lookups: None,
            obp_count: ObpCount::All,
            stale_overwrite_hits_min: None,
        }
    }
}

impl NvcacheConfig {
    /// Checks that the tunables can work together.
    ///
    /// # Errors
    /// A description of the first value that cannot work.
    pub fn validate(&self) -> Result<(), String> {
        if self.obp_target_permille == 0 {
            return Err("nvcache: the OBP target must be above 0".into());
        }
        if self.obp_window_lookups < NVCACHE_OBP_EPOCHS as u64 {
            return Err(format!(
                "nvcache: the OBP window of {} lookups is shorter than its {NVCACHE_OBP_EPOCHS} epochs",
                self.obp_window_lookups
            ));
        }
        if self.reuse_window_lookups == Some(0) {
            return Err("nvcache: the LFRU reuse window must be at least one lookup".into());
        }
        Ok(())
    }
}

/// The NVM cache's counters, as a production cache reports them. Counters count since
/// start-up (differences between two snapshots with [`since`](Self::since)); the
/// fields marked *now* are gauges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvmCacheStats {
    /// DRAM misses that looked the page up in the NVM cache.
    pub lookups: u64,
    /// Lookups that found the page in NVM.
    pub hits: u64,
    /// Lookups that read the page from SSD (`lookups = hits + misses`).
    pub misses: u64,
    /// Pages written into NVM on a read miss.
    pub read_inserts: u64,
    /// Pages written into NVM on a dirty DRAM eviction (after their SSD write).
    pub write_inserts: u64,
    /// Copies dropped because a write made them stale and was not admitted, or the page
    /// was freed.
    pub removals: u64,
    /// Copies the LFRU sweep evicted.
    pub evictions: u64,
    /// Write inserts that overwrote a page's stale copy while OBP was over target
    /// (`stale_overwrite_hits_min`; included in `write_inserts`).
    #[serde(default)]
    pub stale_overwrites: u64,
    /// Admissions refused: the database is smaller than the small-bypass threshold.
    pub bypass_small_db: u64,
    /// Admissions refused: OBP above its target.
    pub bypass_obp: u64,
    /// Admissions allowed but with no frame to take (full, nothing stale to evict).
    pub bypass_full: u64,
    /// Sweeps that looked for stale pages.
    pub sweeps: u64,
    /// Pages cached now.
    pub cached_pages: u64,
    /// OBP now (window or cumulative, as configured), parts per thousand (capped).
    pub obp_permille: u64,
}

impl NvmCacheStats {
    /// Counters of `self` minus `earlier`; gauges as in `self`.
    pub fn since(&self, earlier: &NvmCacheStats) -> NvmCacheStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        NvmCacheStats {
            lookups: d(self.lookups, earlier.lookups),
            hits: d(self.hits, earlier.hits),
            misses: d(self.misses, earlier.misses),
            read_inserts: d(self.read_inserts, earlier.read_inserts),
            write_inserts: d(self.write_inserts, earlier.write_inserts),
            removals: d(self.removals, earlier.removals),
            evictions: d(self.evictions, earlier.evictions),
            stale_overwrites: d(self.stale_overwrites, earlier.stale_overwrites),
            bypass_small_db: d(self.bypass_small_db, earlier.bypass_small_db),
            bypass_obp: d(self.bypass_obp, earlier.bypass_obp),
            bypass_full: d(self.bypass_full, earlier.bypass_full),
            sweeps: d(self.sweeps, earlier.sweeps),
            cached_pages: self.cached_pages,
            obp_permille: self.obp_permille,
        }
    }

    /// Pages written into NVM, on read misses and dirty evictions.
    pub fn inserts(&self) -> u64 {
        self.read_inserts + self.write_inserts
    }

    /// NVM hits per lookup (0 without lookups).
    pub fn hit_ratio(&self) -> f64 {
        if self.lookups == 0 { 0.0 } else { self.hits as f64 / self.lookups as f64 }
    }

    /// (inserts + removals + evictions) / lookups over the counted interval: the paper's
    /// OBP ([`ObpCount::All`]).
    pub fn obp(&self) -> f64 {
        self.obp_counting(ObpCount::All)
    }

    /// OBP over the counted interval with the numerator `count` says.
    pub fn obp_counting(&self, count: ObpCount) -> f64 {
        let overhead = match count {
            ObpCount::All => self.inserts() + self.removals + self.evictions,
            ObpCount::Inserts => self.inserts(),
        } as f64;
        if self.lookups == 0 {
            if overhead == 0.0 { 0.0 } else { f64::INFINITY }
        } else {
            overhead / self.lookups as f64
        }
    }
}

/// Largest OBP a gauge reports, in parts per thousand (an OBP with no lookups is
/// infinite).
const OBP_PERMILLE_CAP: u64 = 1_000_000;

/// What the policy knows of a cached page.
#[derive(Clone, Copy, Debug)]
struct Cached {
    /// NVM hits since admission.
    accesses: u64,
    /// Tick of admission or of the last NVM hit.
    last_tick: u64,
    /// The page is in DRAM too (its DRAM frame owns the NVM frame: not evictable).
    in_dram: bool,
    /// The policy sent the page's DRAM copy to SSD without it: the copy is being
    /// removed (counted as a removal, not an eviction).
    removing: bool,
}

/// Lookups and overhead (inserts + removals + evictions) of one epoch of the window.
#[derive(Clone, Copy, Debug, Default)]
struct Epoch {
    lookups: u64,
    overhead: u64,
}

#[derive(Debug)]
struct State {
    /// Lookups so far: the LFRU clock.
    tick: u64,
    cached: HashMap<PageId, Cached>,
    ring: [Epoch; NVCACHE_OBP_EPOCHS],
    current: usize,
    total: Epoch,
    /// Pages the database file spans (small-bypass).
    db_pages: u64,
    /// Admissions allowed (inserts that did not happen were refused for lack of room).
    attempts: u64,
    /// Tick of the last sweep that found fewer stale pages than a batch.
    thin_sweep_tick: Option<u64>,
    stats: NvmCacheStats,
}

/// Why an admission was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bypass {
    SmallDb,
    Obp,
}

/// The `nvcache` policy: NVM as a volatile cache of clean SSD pages, with overhead
/// bypass and LFRU eviction (see the module doc).
pub struct Nvcache {
    cfg: NvcacheConfig,
    epoch_lookups: u64,
    state: Mutex<State>,
}

impl Nvcache {
    /// # Panics
    /// On a configuration [`NvcacheConfig::validate`] refuses (callers validate first).
    pub fn new(cfg: NvcacheConfig) -> Nvcache {
        if let Err(e) = cfg.validate() {
            panic!("{e}");
        }
        let epoch_lookups = cfg.obp_window_lookups.div_ceil(NVCACHE_OBP_EPOCHS as u64);
        Nvcache {
            cfg,
            epoch_lookups,
            state: Mutex::new(State {
                tick: 0,
                cached: HashMap::new(),
                ring: [Epoch::default(); NVCACHE_OBP_EPOCHS],
                current: 0,
                total: Epoch::default(),
                db_pages: 0,
                attempts: 0,
                thin_sweep_tick: None,
                stats: NvmCacheStats::default(),
            }),
        }
    }

    /// The tunables it was built with.
    pub fn config(&self) -> &NvcacheConfig {
        &self.cfg
    }

    /// OBP now, as admission sees it (infinite: overhead without lookups).
    pub fn obp(&self) -> f64 {
        Self::obp_of(&self.cfg, &self.state.lock())
    }

    /// True if page `pid` has a copy in the cache now (for tests).
    pub fn is_cached(&self, pid: PageId) -> bool {
        self.state.lock().cached.contains_key(&pid)
    }

    fn obp_of(cfg: &NvcacheConfig, s: &State) -> f64 {
        let e = match cfg.obp_mode {
            ObpMode::Off | ObpMode::Cumulative => s.total,
            ObpMode::Window => s.ring.iter().fold(Epoch::default(), |a, e| Epoch {
                lookups: a.lookups + e.lookups,
                overhead: a.overhead + e.overhead,
            }),
        };
        if e.lookups == 0 {
            if e.overhead == 0 { 0.0 } else { f64::INFINITY }
        } else {
            e.overhead as f64 / e.lookups as f64
        }
    }

    fn obp_over_target(&self, s: &State) -> bool {
        self.cfg.obp_mode != ObpMode::Off
            && Self::obp_of(&self.cfg, s) * 1000.0 > f64::from(self.cfg.obp_target_permille)
    }

    fn lookup(&self, s: &mut State) {
        s.tick += 1;
        s.stats.lookups += 1;
        s.total.lookups += 1;
        if s.ring[s.current].lookups >= self.epoch_lookups {
            s.current = (s.current + 1) % NVCACHE_OBP_EPOCHS;
            s.ring[s.current] = Epoch::default();
        }
        s.ring[s.current].lookups += 1;
    }

    /// One unit of OBP's numerator: an insert (`write`) or a removal or eviction.
    fn overhead(&self, s: &mut State, write: bool) {
        if !write && self.cfg.obp_count == ObpCount::Inserts {
            return;
        }
        s.total.overhead += 1;
        let c = s.current;
        s.ring[c].overhead += 1;
    }

    /// Whether an admission may happen now; counts the attempt or the bypass.
    fn admit(&self, s: &mut State, tiers: &Tiers) -> Result<(), Bypass> {
        let why = self.refusal(s, tiers);
        self.count_admission(s, why);
        why.map_or(Ok(()), Err)
    }

    /// Why an admission would be refused now, if it would.
    fn refusal(&self, s: &State, tiers: &Tiers) -> Option<Bypass> {
        let small = s.db_pages * 100 < u64::from(self.cfg.small_bypass_dram_percent) * tiers.dram_frames as u64;
        if small {
            Some(Bypass::SmallDb)
        } else if self.obp_over_target(s) {
            Some(Bypass::Obp)
        } else {
            None
        }
    }

    fn count_admission(&self, s: &mut State, why: Option<Bypass>) {
        match why {
            Some(Bypass::SmallDb) => s.stats.bypass_small_db += 1,
            Some(Bypass::Obp) => s.stats.bypass_obp += 1,
            None => s.attempts += 1,
        }
    }

    fn reuse_window(&self, tiers: &Tiers) -> u64 {
        self.cfg
            .reuse_window_lookups
            .unwrap_or(NVCACHE_REUSE_WINDOW_LOOKUPS_PER_FRAME_DEFAULT * tiers.nvm_frames as u64)
            .max(1)
    }
}

impl Policy for Nvcache {
    fn name(&self) -> &'static str {
        "nvcache"
    }

    fn ssd_miss(&self, page: &PageInfo, tiers: &Tiers) -> MissTarget {
        debug_assert!(!page.nvm_copy, "{}: an SSD miss with an NVM copy", page.pid);
        let mut s = self.state.lock();
        self.lookup(&mut s);
        s.stats.misses += 1;
        if tiers.has_nvm && self.admit(&mut s, tiers).is_ok() { MissTarget::DramAndNvm } else { MissTarget::Dram }
    }

    fn nvm_access(&self, page: &PageInfo, _write: bool, _tiers: &Tiers) -> NvmAccess {
        let mut s = self.state.lock();
        self.lookup(&mut s);
        s.stats.hits += 1;
        let tick = s.tick;
        if let Some(c) = s.cached.get_mut(&page.pid) {
            c.accesses += 1;
            c.last_tick = tick;
            c.in_dram = true;
        } else {
            debug_assert!(false, "{}: an NVM hit on a page the cache does not hold", page.pid);
        }
        NvmAccess::Migrate
    }

    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo {
        if !tiers.has_nvm || !tiers.has_ssd {
            return EvictTo::Ssd;
        }
        let mut s = self.state.lock();
        if let Some(c) = s.cached.get_mut(&page.pid) {
            c.in_dram = false;
        }
        if !page.dirty {
            // A clean copy in NVM stays (nothing to write); a clean page without one
            // was bypassed when it was read and is dropped.
            return if page.nvm_copy { EvictTo::SsdAndNvm } else { EvictTo::Ssd };
        }
        let why = self.refusal(&s, tiers);
        // The page's copy, if any, is stale now. If OBP refuses the new version the
        // copy is removed, as the paper's engine frees the old block, unless the
        // optional rule overwrites a reused copy instead: the same one unit of OBP,
        // one page write, and the hit is kept.
        let overwrite = why == Some(Bypass::Obp)
            && page.nvm_copy
            && self
                .cfg
                .stale_overwrite_hits_min
                .is_some_and(|k| s.cached.get(&page.pid).is_some_and(|c| c.accesses >= k));
        if overwrite {
            s.attempts += 1;
            s.stats.stale_overwrites += 1;
            return EvictTo::SsdAndNvm;
        }
        self.count_admission(&mut s, why);
        if why.is_none() {
            return EvictTo::SsdAndNvm;
        }
        if page.nvm_copy
            && let Some(c) = s.cached.get_mut(&page.pid)
        {
            c.removing = true;
        }
        EvictTo::Ssd
    }

    /// Clock in DRAM. In NVM never reached: NVM frames are freed by
    /// [`Policy::nvm_victims`]; a veto, should a clock ever ask.
    fn victim(&self, pool: Pool, page: &PageInfo, _tiers: &Tiers) -> Victim {
        match pool {
            Pool::Dram => super::clock(page),
            Pool::Nvm => Victim::Skip,
        }
    }

    fn shape(&self) -> Shape {
        Shape { nvm_clean_only: true, ..Shape::default() }
    }

    fn nvm_victims(&self, tiers: &Tiers, out: &mut Vec<PageId>) -> bool {
        self.sweep(tiers, out)
    }

    fn observe(&self, event: Event) {
        match event {
            Event::NvmLeft(pid) => self.nvm_left(pid),
            Event::Freed(pid) => self.freed(pid),
            Event::NvmAdmitted { pid, on_eviction } => self.admitted(pid, on_eviction),
            Event::DatabaseSize(pages) => {
                let mut s = self.state.lock();
                s.db_pages = s.db_pages.max(pages);
            }
            Event::Flushed { .. } => {}
        }
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats::Cache(self.cache_stats())
    }
}

impl Nvcache {
    fn nvm_left(&self, pid: PageId) {
        let mut s = self.state.lock();
        let Some(c) = s.cached.remove(&pid) else { return };
        if c.removing {
            s.stats.removals += 1;
        } else {
            s.stats.evictions += 1;
        }
        self.overhead(&mut s, false);
    }

    fn freed(&self, pid: PageId) {
        let mut s = self.state.lock();
        if s.cached.remove(&pid).is_some() {
            s.stats.removals += 1;
            self.overhead(&mut s, false);
        }
    }

    /// The sweep: the cached pages not used for a reuse window, least frequently used
    /// first ([`Policy::nvm_victims`]).
    fn sweep(&self, tiers: &Tiers, out: &mut Vec<PageId>) -> bool {
        let mut s = self.state.lock();
        // No eviction while OBP is above its target (it would only make room for
        // admissions, which are refused too).
        if self.obp_over_target(&s) {
            return true;
        }
        let window = self.reuse_window(tiers);
        let now = s.tick;
        if s.thin_sweep_tick.is_some_and(|t| now < t + (window / NVCACHE_SWEEP_INTERVAL_DIVISOR).max(1)) {
            return true;
        }
        s.stats.sweeps += 1;
        let batch = (tiers.nvm_frames / NVCACHE_SWEEP_BATCH_DIVISOR).max(1);
        // Least frequently used first, then least recently; the page id makes the
        // order total, so the choice does not depend on the map's iteration order.
        let mut stale: Vec<(u64, u64, PageId)> = s
            .cached
            .iter()
            .filter(|(_, c)| !c.in_dram && !c.removing && now.saturating_sub(c.last_tick) >= window)
            .map(|(pid, c)| (c.accesses, c.last_tick, *pid))
            .collect();
        s.thin_sweep_tick = (stale.len() < batch).then_some(now);
        if stale.len() > batch {
            stale.select_nth_unstable(batch);
            stale.truncate(batch);
        }
        stale.sort_unstable();
        out.extend(stale.into_iter().map(|(_, _, pid)| pid));
        true
    }

    fn admitted(&self, pid: PageId, on_eviction: bool) {
        let mut s = self.state.lock();
        if on_eviction {
            s.stats.write_inserts += 1;
        } else {
            s.stats.read_inserts += 1;
        }
        self.overhead(&mut s, true);
        let tick = s.tick;
        // Admitted on a read miss, the page is in DRAM now; on an eviction, it is not.
        let c = s.cached.entry(pid).or_insert(Cached { accesses: 0, last_tick: tick, in_dram: false, removing: false });
        c.in_dram = !on_eviction;
        c.removing = false;
    }

    /// The cache's counters now.
    pub fn cache_stats(&self) -> NvmCacheStats {
        let s = self.state.lock();
        let obp = Self::obp_of(&self.cfg, &s);
        let mut st = s.stats;
        st.bypass_full = s.attempts.saturating_sub(st.read_inserts + st.write_inserts);
        st.cached_pages = s.cached.len() as u64;
        st.obp_permille =
            if obp.is_finite() { ((obp * 1000.0).round() as u64).min(OBP_PERMILLE_CAP) } else { OBP_PERMILLE_CAP };
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Lsn;

    /// 16 DRAM frames, 64 NVM frames.
    const TIERS: Tiers = Tiers { has_nvm: true, has_ssd: true, dram_frames: 16, nvm_frames: 64 };

    fn page(pid: u64, dirty: bool, nvm_copy: bool) -> PageInfo {
        PageInfo {
            pid: PageId(pid),
            dirty,
            nvm_copy,
            referenced: false,
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        }
    }

    fn policy(mode: ObpMode) -> Nvcache {
        let p = Nvcache::new(NvcacheConfig {
            obp_mode: mode,
            obp_window_lookups: 160,
            reuse_window_lookups: Some(50),
            ..NvcacheConfig::default()
        });
        p.observe(Event::DatabaseSize(1000)); // past small-bypass
        p
    }

    /// A read miss the policy admits is inserted (as the manager would notify).
    fn read_miss(p: &Nvcache, pid: u64) -> bool {
        let admit = p.ssd_miss(&page(pid, false, false), &TIERS) == MissTarget::DramAndNvm;
        if admit {
            p.observe(Event::NvmAdmitted { pid: PageId(pid), on_eviction: false });
        }
        admit
    }

    fn hit(p: &Nvcache, pid: u64) {
        assert_eq!(p.nvm_access(&page(pid, false, true), false, &TIERS), NvmAccess::Migrate);
    }

    #[test]
    fn obp_above_target_stops_admission_and_eviction_and_below_resumes() {
        let p = policy(ObpMode::Window);
        // Every miss admitted at first: OBP climbs to 1 insert per lookup...
        assert!(read_miss(&p, 1));
        // ...so the next misses are refused, and counted as OBP bypasses.
        assert!(!read_miss(&p, 2));
        assert!(!read_miss(&p, 3));
        let st = p.cache_stats();
        assert_eq!((st.read_inserts, st.bypass_obp, st.lookups), (1, 2, 3));
        assert!(p.obp() > 0.1, "OBP {}", p.obp());
        // A dirty victim is written to SSD only, its stale NVM copy removed.
        hit(&p, 1);
        assert_eq!(p.dram_eviction(&page(1, true, true), &TIERS), EvictTo::Ssd);
        p.observe(Event::NvmLeft(PageId(1)));
        assert_eq!(p.cache_stats().removals, 1);
        // And no eviction: the sweep offers nothing although the page is stale.
        read_miss(&p, 9);
        let mut out = Vec::new();
        assert!(p.nvm_victims(&TIERS, &mut out));
        assert!(out.is_empty(), "evicted {out:?} with OBP {}", p.obp());
        // Lookups without overhead bring OBP under 10%: admissions resume.
        for pid in 100..130 {
            p.ssd_miss(&page(pid, false, false), &TIERS);
            if p.obp() <= 0.1 {
                break;
            }
        }
        assert!(p.obp() <= 0.1);
        assert_eq!(p.dram_eviction(&page(201, true, false), &TIERS), EvictTo::SsdAndNvm);
        p.observe(Event::NvmAdmitted { pid: PageId(201), on_eviction: true });
        for pid in 300..330 {
            p.ssd_miss(&page(pid, false, false), &TIERS);
            if p.obp() <= 0.1 {
                break;
            }
        }
        assert!(read_miss(&p, 400), "OBP {} under target, yet refused", p.obp());
        let st = p.cache_stats();
        assert_eq!((st.read_inserts, st.write_inserts), (2, 1), "pages 1 and 400; 201");
    }

    /// Runs one dirty eviction of `pid` through the policy as the manager would:
    /// `true` if the page went to NVM (its copy overwritten or a new one).
    fn dirty_eviction(p: &Nvcache, pid: u64, nvm_copy: bool) -> bool {
        match p.dram_eviction(&page(pid, true, nvm_copy), &TIERS) {
            EvictTo::SsdAndNvm => {
                p.observe(Event::NvmAdmitted { pid: PageId(pid), on_eviction: true });
                true
            }
            _ => {
                if nvm_copy {
                    p.observe(Event::NvmLeft(PageId(pid)));
                }
                false
            }
        }
    }

    #[test]
    fn a_reused_stale_copy_is_overwritten_when_obp_refuses_and_a_cold_one_removed() {
        let script = |hits_min: Option<u64>| {
            let p = Nvcache::new(NvcacheConfig {
                obp_mode: ObpMode::Window,
                obp_window_lookups: 160,
                reuse_window_lookups: Some(50),
                stale_overwrite_hits_min: hits_min,
                ..NvcacheConfig::default()
            });
            p.observe(Event::DatabaseSize(1000));
            // Pages 1 and 2 admitted while OBP is low (a lookup without overhead first).
            p.ssd_miss(&page(50, false, false), &TIERS);
            assert!(read_miss(&p, 1));
            for pid in 60..80 {
                p.ssd_miss(&page(pid, false, false), &TIERS);
            }
            assert!(read_miss(&p, 2));
            // Page 1 goes back to NVM only, then is hit twice (reused); page 2 stays in
            // DRAM from its admission (never hit).
            p.dram_eviction(&page(1, false, true), &TIERS);
            hit(&p, 1);
            p.dram_eviction(&page(1, false, true), &TIERS);
            hit(&p, 1);
            // Three write inserts of other pages push OBP over target.
            for pid in 3..6 {
                p.observe(Event::NvmAdmitted { pid: PageId(pid), on_eviction: true });
            }
            assert!(p.obp() > 0.1, "OBP {}", p.obp());
            let before = p.cache_stats();
            // Both pages come back dirty; OBP refuses the new versions.
            let kept1 = dirty_eviction(&p, 1, true);
            let kept2 = dirty_eviction(&p, 2, true);
            let st = p.cache_stats().since(&before);
            (kept1, kept2, st, p.is_cached(PageId(1)), p.is_cached(PageId(2)))
        };
        // The paper: both stale copies removed, two removals, nothing written.
        let (k1, k2, st, c1, c2) = script(None);
        assert_eq!((k1, k2, c1, c2), (false, false, false, false));
        assert_eq!((st.removals, st.write_inserts, st.stale_overwrites, st.bypass_obp), (2, 0, 0, 2));
        // Overwrite copies with ≥ 2 hits: page 1 (hit twice) is rewritten in place, one
        // write insert instead of a removal; page 2 (never hit) is removed.
        let (k1, k2, st, c1, c2) = script(Some(2));
        assert_eq!((k1, k2, c1, c2), (true, false, true, false));
        assert_eq!((st.removals, st.write_inserts, st.stale_overwrites, st.bypass_obp), (1, 1, 1, 1));
        // The same units of OBP either way: one per stale copy.
        assert_eq!(st.inserts() + st.removals, 2);
        // Threshold 0: every stale copy is overwritten.
        let (k1, k2, st, ..) = script(Some(0));
        assert_eq!((k1, k2, st.removals, st.stale_overwrites), (true, true, 0, 2));
        // A victim without a copy is still refused (the rule never admits new pages).
        let p = Nvcache::new(NvcacheConfig {
            obp_window_lookups: 160,
            stale_overwrite_hits_min: Some(0),
            ..NvcacheConfig::default()
        });
        p.observe(Event::DatabaseSize(1000));
        assert!(read_miss(&p, 1));
        assert!(p.obp() > 0.1);
        assert!(!dirty_eviction(&p, 7, false));
        assert_eq!(p.cache_stats().stale_overwrites, 0);
    }

    #[test]
    fn counting_inserts_only_leaves_removals_out_of_obp() {
        let run = |count| {
            let p = Nvcache::new(NvcacheConfig {
                obp_mode: ObpMode::Window,
                obp_window_lookups: 160,
                obp_count: count,
                ..NvcacheConfig::default()
            });
            p.observe(Event::DatabaseSize(1000));
            // 30 pages cached at OBP ≤ 10% (one admission per ten lookups).
            let mut cached = Vec::new();
            for pid in 1..=300 {
                if read_miss(&p, pid) {
                    cached.push(pid);
                }
            }
            // Each is rewritten; OBP admits at most the first, the others' stale
            // copies are removed. Then more misses.
            let kept: usize = cached.iter().map(|&pid| usize::from(dirty_eviction(&p, pid, true))).sum();
            assert!(kept <= 1, "{count:?}: {kept} of {} rewritten copies admitted", cached.len());
            let admitted: u64 = (1000..1020).map(|pid| u64::from(read_miss(&p, pid))).sum();
            (p.obp(), admitted, p.cache_stats())
        };
        let (obp_all, admitted_all, st_all) = run(ObpCount::All);
        let (obp_ins, admitted_ins, st_ins) = run(ObpCount::Inserts);
        // The paper's count: the removals push OBP over target and stop admissions.
        assert!(obp_all > 0.1, "OBP {obp_all}");
        assert_eq!(admitted_all, 0);
        assert!(st_all.removals >= 20, "{st_all:?}");
        // Counting inserts only: removals are free, admissions go on.
        assert!(obp_ins <= 0.11, "OBP {obp_ins}");
        assert!(admitted_ins >= 1, "{st_ins:?}");
        // The report's paper-defined OBP still counts everything.
        assert!(st_ins.obp() > st_ins.obp_counting(ObpCount::Inserts));
    }

    #[test]
    fn always_admit_ignores_obp() {
        let p = policy(ObpMode::Off);
        for pid in 1..50 {
            assert!(read_miss(&p, pid));
        }
        assert_eq!(p.cache_stats().read_inserts, 49);
        assert_eq!(p.dram_eviction(&page(77, true, false), &TIERS), EvictTo::SsdAndNvm);
    }

    #[test]
    fn the_window_recovers_after_a_write_heavy_phase_and_cumulative_does_not() {
        let run = |mode| {
            let p = policy(mode);
            // A read phase that caches pages 1..=20 slowly (OBP ≈ 10%).
            let mut cached = Vec::new();
            for pid in 1..=400 {
                if read_miss(&p, pid) {
                    cached.push(pid);
                }
            }
            assert!(cached.len() >= 20, "{mode:?}: {} admitted", cached.len());
            // A write-heavy phase: every cached page rewritten and its copy removed,
            // with hardly a lookup.
            for &pid in &cached {
                if p.dram_eviction(&page(pid, true, true), &TIERS) == EvictTo::Ssd {
                    p.observe(Event::NvmLeft(PageId(pid)));
                } else {
                    p.observe(Event::NvmAdmitted { pid: PageId(pid), on_eviction: true });
                }
            }
            // Reads again: two windows' worth of misses.
            let mut admitted_late = 0;
            for pid in 1000..1000 + 2 * 160 {
                admitted_late += u64::from(read_miss(&p, pid));
            }
            (p.obp(), admitted_late)
        };
        let (window_obp, window_late) = run(ObpMode::Window);
        let (cumulative_obp, cumulative_late) = run(ObpMode::Cumulative);
        assert!(window_obp <= 0.12, "window OBP {window_obp}");
        assert!(window_late >= 10, "window admitted {window_late} after the write phase");
        assert!(cumulative_obp > 0.1, "cumulative OBP {cumulative_obp}");
        assert!(
            cumulative_late * 2 < window_late,
            "cumulative admitted {cumulative_late}, window {window_late} after the write phase"
        );
    }

    #[test]
    fn small_bypass_admits_nothing_while_the_data_fits_in_dram() {
        let p = Nvcache::new(NvcacheConfig { obp_mode: ObpMode::Off, ..NvcacheConfig::default() });
        p.observe(Event::DatabaseSize(TIERS.dram_frames as u64 - 1));
        for pid in 1..10 {
            assert!(!read_miss(&p, pid));
            assert_eq!(p.dram_eviction(&page(pid, true, false), &TIERS), EvictTo::Ssd);
        }
        let st = p.cache_stats();
        assert_eq!((st.inserts(), st.bypass_small_db, st.bypass_obp), (0, 18, 0));
        // The database outgrows DRAM: admissions begin.
        p.observe(Event::DatabaseSize(TIERS.dram_frames as u64));
        assert!(read_miss(&p, 11));
        // A smaller threshold admits earlier; 0 turns small-bypass off.
        let p = Nvcache::new(NvcacheConfig {
            obp_mode: ObpMode::Off,
            small_bypass_dram_percent: 0,
            ..NvcacheConfig::default()
        });
        assert!(read_miss(&p, 1));
    }

    #[test]
    fn lfru_evicts_stale_pages_least_frequently_used_first() {
        let p = policy(ObpMode::Off);
        for pid in 1..=4 {
            assert!(read_miss(&p, pid));
            // Back in NVM only (clean DRAM victims keep their copy).
            assert_eq!(p.dram_eviction(&page(pid, false, true), &TIERS), EvictTo::SsdAndNvm);
        }
        // Page 1 hit 3 times, 2 once, 3 twice, 4 never; then all go stale.
        for (pid, n) in [(1, 3), (2, 1), (3, 2)] {
            for _ in 0..n {
                hit(&p, pid);
            }
            p.dram_eviction(&page(pid, false, true), &TIERS);
        }
        let mut out = Vec::new();
        assert!(p.nvm_victims(&TIERS, &mut out));
        assert!(out.is_empty(), "nothing is stale yet: {out:?}");
        for pid in 500..560 {
            p.ssd_miss(&page(pid, false, false), &TIERS);
        }
        // Page 5 admitted just now, and page 3 hit just now and in DRAM: neither goes.
        p.observe(Event::NvmAdmitted { pid: PageId(5), on_eviction: false });
        p.dram_eviction(&page(5, false, true), &TIERS);
        hit(&p, 3);
        let tiers = Tiers { nvm_frames: 64 * 4, ..TIERS }; // a batch of 4
        let mut out = Vec::new();
        // The thin sweep above waits its interval out first.
        for pid in 600..610 {
            p.ssd_miss(&page(pid, false, false), &TIERS);
        }
        assert!(p.nvm_victims(&tiers, &mut out));
        assert_eq!(out, [PageId(4), PageId(2), PageId(1)], "never used, once, three times");
        for pid in out {
            p.observe(Event::NvmLeft(pid));
        }
        let st = p.cache_stats();
        assert_eq!((st.evictions, st.removals, st.cached_pages), (3, 0, 2));
    }

    #[test]
    fn counters_add_up() {
        let p = policy(ObpMode::Off);
        read_miss(&p, 1);
        hit(&p, 1);
        read_miss(&p, 2);
        p.observe(Event::Freed(PageId(2)));
        let st = p.cache_stats();
        assert_eq!(st.lookups, st.hits + st.misses);
        assert_eq!((st.lookups, st.hits, st.read_inserts, st.removals), (3, 1, 2, 1));
        assert_eq!(st.bypass_full, 0);
        // An allowed admission that got no frame shows as bypass_full.
        p.ssd_miss(&page(3, false, false), &TIERS);
        assert_eq!(p.cache_stats().bypass_full, 1);
        let later = p.cache_stats();
        assert_eq!(later.since(&st).lookups, 1);
    }
}
