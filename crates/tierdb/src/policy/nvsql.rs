//! `nvsql`: NVM as a durable write cache *beside* DRAM (NV-SQL, papers/
//! nv-sql-nvdimm-write-cache.txt, §3–4).
//!
//! DRAM and NVM are one tier: a page read from SSD always enters DRAM
//! ([`MissTarget::Dram`]); a page in NVM is read and updated in place there
//! ([`NvmAccess::InPlace`]: the buffer manager persists the changed lines under the
//! frame's IN_UPDATE flag, after the log force); a dirty page leaving DRAM goes to NVM
//! only if the admission rule calls it write-hot, else to SSD; a page leaving NVM is
//! written to SSD. A page that a whole-page fix (an inner node, a structure change)
//! needs in DRAM moves there and gives up its NVM frame ([`Shape::nvm_disjoint`](super::Shape::nvm_disjoint)): a
//! page is in one of the two (see `docs/nvsql.md`).
//!
//! **Admission** (§4.3), [`NvsqlAdmission`]. A page qualifies for NVM by either of two
//! rules, each asked where it applies ([`NvsqlAdmission::Combined`], the default): the
//! re-update interval when a dirty page leaves DRAM, the checkpoint rule when a
//! checkpoint is about to write the dirty pages. Each rule alone is selectable for
//! comparison (`admit=interval`, `admit=checkpoint`).
//! - *re-update interval*: interval = first-update LSN of this stay in DRAM − the LSN
//!   at which the page was last flushed to SSD. A short interval means the page is
//!   updated again soon after it is written out: write-hot. The paper ranks the interval
//!   among recent ones against a threshold found by offline profiling; here the recent
//!   intervals are kept online in an [`IntervalSketch`] (a fixed window of the last
//!   [`NVSQL_SKETCH_WINDOW`] intervals over log-linear buckets), so no profiling is
//!   needed, and [`NvsqlAdmission::FixedInterval`] keeps an absolute LSN threshold for
//!   comparison;
//! - *checkpoint*: at a checkpoint the dirty pages with the oldest first-update LSN (the
//!   head of the dirty-page list) go to NVM instead of SSD
//!   ([`Nvsql::checkpoint_selection`]), at most as many as the old sublist holds (they
//!   enter there: more would push out the ones just admitted).
//!
//! The last-flush LSN is kept here, per page, from the evictions the policy sends to
//! SSD (the page's LSN at that moment). Without a log (LSNs all zero) the policy's count
//! of dirty evictions stands in for the LSN clock.
//!
//! **Replacement** (§4.4), [`NvsqlReplacement`]: midpoint-insertion LRU — a new and an
//! old sublist, pages enter at the head of the old one (the midpoint), the tail of the
//! new one spills into the old one, victims come from the tail of the old one — with
//! the *update-count* rule: a hit in the old sublist moves a page to the new sublist
//! only if it was an update (reads leave it where it is). `midpoint` promotes on any
//! hit (InnoDB's default), `lru` is plain LRU.
//!
//! Concurrency: one mutex, taken on NVM accesses and on evictions (which do I/O anyway).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::str::FromStr;

use parking_lot::Mutex;
use serde::Serialize;

use super::PolicyError;
use super::{Event, EvictTo, MissTarget, NvmAccess, PageInfo, Policy, PolicyStats, Pool, Shape, Tiers, Victim};
use crate::ids::{Lsn, PageId};
use crate::limits::{
    NVSQL_CHECKPOINT_PERCENT_DEFAULT, NVSQL_INTERVAL_PERCENT_DEFAULT, NVSQL_KEEP_CHECKPOINTS_DEFAULT,
    NVSQL_NEW_SUBLIST_PERCENT, NVSQL_SKETCH_MIN_SAMPLES, NVSQL_SKETCH_WINDOW,
};

/// Which dirty pages leaving DRAM are admitted to NVM.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum NvsqlAdmission {
    /// Both rules of §4.3 (the default): a dirty page leaving DRAM is admitted when its
    /// re-update interval ranks within the shortest `interval_percent` (as
    /// [`Interval`](Self::Interval)); a checkpoint moves the share `checkpoint_percent`
    /// of its dirty pages with the oldest first-update LSN to NVM (as
    /// [`Checkpoint`](Self::Checkpoint)).
    Combined {
        /// The share of recent intervals, in percent (0 to 100), that counts as short.
        interval_percent: f64,
        /// The share of a checkpoint's dirty pages, in percent (0 to 100), moved to NVM.
        checkpoint_percent: f64,
    },
    /// Admit when the re-update interval ranks within the shortest `percent` of the
    /// recent intervals (online sketch).
    Interval {
        /// The share of recent intervals, in percent (0 to 100), that counts as short.
        percent: f64,
    },
    /// Admit when the re-update interval is at most `lsns`.
    FixedInterval {
        /// The longest interval admitted, in LSNs (dirty evictions without a log).
        lsns: u64,
    },
    /// Admit nothing at eviction; checkpoints move the oldest dirty pages to NVM.
    Checkpoint {
        /// The share of a checkpoint's dirty pages, in percent (0 to 100, rounded up to
        /// whole pages), moved to NVM.
        percent: f64,
    },
    /// Every dirty page (a baseline).
    Always,
}

/// How NVM victims are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NvsqlReplacement {
    /// Midpoint insertion; a hit in the old sublist promotes only if it is an update.
    UpdateCount,
    /// Midpoint insertion; any hit in the old sublist promotes.
    Midpoint,
    /// Plain LRU.
    Lru,
}

/// `nvsql`'s configuration, parsed from `nvsql[:key=value,...]`:
/// `admit=combined|interval|fixed|checkpoint|always` (default `combined`), `pct=P`
/// (the interval share for combined and interval, the checkpoint share for
/// checkpoint), `ckpt=P` (combined: the checkpoint share), `lsns=N` (fixed), `lru=update-count|midpoint|lru`, `keep=K|unbounded` (checkpoints a
/// change may stay in NVM only; default [`NVSQL_KEEP_CHECKPOINTS_DEFAULT`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NvsqlConfig {
    /// Which dirty DRAM victims go to NVM (`admit=`, `pct=`, `lsns=`).
    pub admission: NvsqlAdmission,
    /// How NVM victims are chosen (`lru=`).
    pub replacement: NvsqlReplacement,
    /// `None`: unbounded (hot pages stay dirty in NVM, and pin the log, until evicted).
    pub keep_checkpoints: Option<u32>,
}

impl Default for NvsqlConfig {
    fn default() -> NvsqlConfig {
        NvsqlConfig {
            admission: NvsqlAdmission::Combined {
                interval_percent: NVSQL_INTERVAL_PERCENT_DEFAULT,
                checkpoint_percent: NVSQL_CHECKPOINT_PERCENT_DEFAULT,
            },
            replacement: NvsqlReplacement::UpdateCount,
            keep_checkpoints: Some(NVSQL_KEEP_CHECKPOINTS_DEFAULT),
        }
    }
}

impl fmt::Display for NvsqlConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.admission {
            NvsqlAdmission::Combined { interval_percent, checkpoint_percent } => {
                write!(f, "admit=combined,pct={interval_percent},ckpt={checkpoint_percent}")?
            }
            NvsqlAdmission::Interval { percent } => write!(f, "admit=interval,pct={percent}")?,
            NvsqlAdmission::FixedInterval { lsns } => write!(f, "admit=fixed,lsns={lsns}")?,
            NvsqlAdmission::Checkpoint { percent } => write!(f, "admit=checkpoint,pct={percent}")?,
            NvsqlAdmission::Always => f.write_str("admit=always")?,
        }
        let lru = match self.replacement {
            NvsqlReplacement::UpdateCount => "update-count",
            NvsqlReplacement::Midpoint => "midpoint",
            NvsqlReplacement::Lru => "lru",
        };
        write!(f, ",lru={lru}")?;
        match self.keep_checkpoints {
            Some(k) => write!(f, ",keep={k}"),
            None => f.write_str(",keep=unbounded"),
        }
    }
}

impl FromStr for NvsqlConfig {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<NvsqlConfig, PolicyError> {
        let bad = |what: String| PolicyError::Config { what: format!("nvsql:{s}: {what}") };
        let (mut admit, mut pct, mut lsns, mut ckpt) = ("combined", None, None, None);
        let percent = |k: &str, v: &str| -> Result<f64, PolicyError> {
            let p: f64 = v.parse().map_err(|_| bad(format!("{k} {v:?} is not a number")))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(bad(format!("{k} {p} is not within 0..=100")));
            }
            Ok(p)
        };
        let mut cfg = NvsqlConfig::default();
        for kv in s.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad(format!("{kv:?} is not key=value")))?;
            match k {
                "admit" => admit = v,
                "pct" => pct = Some(percent(k, v)?),
                "ckpt" => ckpt = Some(percent(k, v)?),
                "lsns" => lsns = Some(v.parse().map_err(|_| bad(format!("lsns {v:?} is not an integer")))?),
                "lru" => {
                    cfg.replacement = match v {
                        "update-count" => NvsqlReplacement::UpdateCount,
                        "midpoint" => NvsqlReplacement::Midpoint,
                        "lru" => NvsqlReplacement::Lru,
                        _ => return Err(bad(format!("lru {v:?}: update-count, midpoint or lru"))),
                    }
                }
                "keep" => {
                    cfg.keep_checkpoints = match v {
                        "unbounded" => None,
                        _ => Some(
                            v.parse().map_err(|_| bad(format!("keep {v:?}: a count of checkpoints or unbounded")))?,
                        ),
                    }
                }
                _ => return Err(bad(format!("unknown key {k:?} (admit, pct, ckpt, lsns, lru, keep)"))),
            }
        }
        if ckpt.is_some() && admit != "combined" {
            return Err(bad("ckpt=P goes with admit=combined only (admit=checkpoint takes pct=P)".into()));
        }
        let pct_or = |default: f64| pct.unwrap_or(default);
        cfg.admission = match (admit, lsns) {
            ("combined", None) => NvsqlAdmission::Combined {
                interval_percent: pct_or(NVSQL_INTERVAL_PERCENT_DEFAULT),
                checkpoint_percent: ckpt.unwrap_or(NVSQL_CHECKPOINT_PERCENT_DEFAULT),
            },
            ("interval", None) => NvsqlAdmission::Interval { percent: pct_or(NVSQL_INTERVAL_PERCENT_DEFAULT) },
            ("fixed", Some(lsns)) => NvsqlAdmission::FixedInterval { lsns },
            ("fixed", None) => return Err(bad("admit=fixed needs lsns=N".into())),
            ("checkpoint", None) => NvsqlAdmission::Checkpoint { percent: pct_or(NVSQL_CHECKPOINT_PERCENT_DEFAULT) },
            ("always", None) => NvsqlAdmission::Always,
            (_, Some(_)) => return Err(bad("lsns=N goes with admit=fixed only".into())),
            (a, _) => return Err(bad(format!("admit {a:?}: combined, interval, fixed, checkpoint or always"))),
        };
        if pct.is_some() && matches!(cfg.admission, NvsqlAdmission::FixedInterval { .. } | NvsqlAdmission::Always) {
            return Err(bad(format!("pct=P does not go with admit={admit}")));
        }
        Ok(cfg)
    }
}

/// Sub-buckets per power of two in [`IntervalSketch`]: ranks are exact to 1/8 of an
/// octave.
const SUB_BUCKET_BITS: u32 = 3;
const BUCKETS: usize = (64 << SUB_BUCKET_BITS) + 1;

/// The distribution of the last `window` re-update intervals: a ring of the samples
/// (so the oldest can be taken out again) over counts per log-linear bucket.
#[derive(Clone, Debug)]
pub struct IntervalSketch {
    window: usize,
    ring: VecDeque<u64>,
    counts: Vec<u32>,
}

impl IntervalSketch {
    /// An empty sketch of the last `window` samples (at least one: a window of 0 is
    /// taken as 1, which keeps only the newest sample).
    pub fn new(window: usize) -> IntervalSketch {
        let window = window.max(1);
        IntervalSketch { window, ring: VecDeque::with_capacity(window), counts: vec![0; BUCKETS] }
    }

    /// The bucket of `x`: exact below 2^SUB_BUCKET_BITS, then 2^SUB_BUCKET_BITS per
    /// power of two (monotone in `x`).
    fn bucket(x: u64) -> usize {
        if x < (1 << SUB_BUCKET_BITS) {
            return x as usize;
        }
        let top = 63 - x.leading_zeros(); // >= SUB_BUCKET_BITS
        let sub = (x >> (top - SUB_BUCKET_BITS)) & ((1 << SUB_BUCKET_BITS) - 1);
        (((top - SUB_BUCKET_BITS + 1) << SUB_BUCKET_BITS) as u64 + sub) as usize
    }

    /// Adds interval `x`, dropping the oldest sample once the window is full.
    pub fn add(&mut self, x: u64) {
        if self.ring.len() == self.window {
            let old = self.ring.pop_front().expect("full");
            self.counts[Self::bucket(old)] -= 1;
        }
        self.ring.push_back(x);
        self.counts[Self::bucket(x)] += 1;
    }

    /// Samples held, at most the window.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// True before the first sample.
    #[expect(dead_code, reason = "len_without_is_empty wanted it while the type was exported")]
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// The share (0..=1) of the samples shorter than `x`, counting half of those in
    /// `x`'s own bucket.
    pub fn rank(&self, x: u64) -> f64 {
        if self.ring.is_empty() {
            return 0.0;
        }
        let b = Self::bucket(x);
        let below: u64 = self.counts[..b].iter().map(|&c| u64::from(c)).sum();
        (below as f64 + f64::from(self.counts[b]) / 2.0) / self.ring.len() as f64
    }
}

/// Where a page is in the NVM replacement list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sub {
    /// The new (hot) sublist, nearer the head.
    New,
    /// The old sublist: pages enter at its head, victims leave from its tail.
    Old,
}

/// Midpoint-insertion LRU over page ids, by sequence numbers: each sublist maps a
/// recency stamp to a page (larger: nearer the head).
#[derive(Debug)]
pub struct MidpointList {
    replacement: NvsqlReplacement,
    /// The pool's frames (the last size given).
    frames: usize,
    /// Most pages in the new sublist (0 for plain LRU, which uses the old one only).
    new_cap: usize,
    new: BTreeMap<u64, PageId>,
    old: BTreeMap<u64, PageId>,
    at: HashMap<PageId, (Sub, u64)>,
    stamp: u64,
}

impl MidpointList {
    /// A list for a pool of `frames` frames.
    pub fn new(replacement: NvsqlReplacement, frames: usize) -> MidpointList {
        let new_cap = match replacement {
            NvsqlReplacement::Lru => 0,
            _ => frames * NVSQL_NEW_SUBLIST_PERCENT / 100,
        };
        MidpointList {
            replacement,
            frames,
            new_cap,
            new: BTreeMap::new(),
            old: BTreeMap::new(),
            at: HashMap::new(),
            stamp: 0,
        }
    }

    /// Sizes the new sublist for a pool of `frames` frames (the pool's size is known
    /// to the policy from the [`Tiers`] of its first NVM access or sweep).
    pub fn resize(&mut self, frames: usize) {
        self.frames = frames;
        if self.replacement != NvsqlReplacement::Lru {
            self.new_cap = frames * NVSQL_NEW_SUBLIST_PERCENT / 100;
        }
    }

    /// Frames of the old sublist when the pool is full: those the new one leaves (all
    /// of them for plain LRU); `None` while the pool's size is unknown (no
    /// [`Tiers`] seen yet).
    pub fn old_capacity(&self) -> Option<usize> {
        debug_assert!(self.new_cap <= self.frames, "new sublist {} of {} frames", self.new_cap, self.frames);
        (self.frames > 0).then(|| self.frames - self.new_cap)
    }

    fn next(&mut self) -> u64 {
        self.stamp += 1;
        self.stamp
    }

    fn remove(&mut self, pid: PageId) -> Option<Sub> {
        let (sub, s) = self.at.remove(&pid)?;
        match sub {
            Sub::New => self.new.remove(&s),
            Sub::Old => self.old.remove(&s),
        };
        Some(sub)
    }

    fn push_head(&mut self, pid: PageId, sub: Sub) {
        let s = self.next();
        match sub {
            Sub::New => self.new.insert(s, pid),
            Sub::Old => self.old.insert(s, pid),
        };
        self.at.insert(pid, (sub, s));
        // The new sublist's tail spills into the old sublist's head.
        while self.new.len() > self.new_cap {
            let (_, p) = self.new.pop_first().expect("non-empty");
            let s = self.next();
            self.old.insert(s, p);
            self.at.insert(p, (Sub::Old, s));
        }
    }

    /// A page entered NVM: at the midpoint (the head of the old sublist), or at the
    /// head for plain LRU. A page already listed counts as an update hit.
    pub fn insert(&mut self, pid: PageId) {
        if self.at.contains_key(&pid) {
            self.hit(pid, true);
        } else {
            self.push_head(pid, Sub::Old);
        }
    }

    /// The sublist `pid` is in, if listed.
    pub fn sublist(&self, pid: PageId) -> Option<Sub> {
        self.at.get(&pid).map(|&(sub, _)| sub)
    }

    /// An access to a listed page (`update`: a write). Returns the sublist the page was
    /// in and the one it is in now (`None` for a page not listed).
    pub fn hit(&mut self, pid: PageId, update: bool) -> Option<(Sub, Sub)> {
        let &(sub, _) = self.at.get(&pid)?;
        let to = match (self.replacement, sub) {
            (NvsqlReplacement::Lru, _) => Sub::Old,
            (_, Sub::New) => Sub::New,
            (NvsqlReplacement::Midpoint, Sub::Old) => Sub::New,
            (NvsqlReplacement::UpdateCount, Sub::Old) if update => Sub::New,
            (NvsqlReplacement::UpdateCount, Sub::Old) => return Some((sub, sub)),
        };
        self.remove(pid);
        self.push_head(pid, to);
        Some((sub, to))
    }

    /// Takes `pid` off the list (it left NVM); nothing if not listed.
    pub fn forget(&mut self, pid: PageId) {
        self.remove(pid);
    }

    /// Up to `k` victims, least recent first: the old sublist's tail, then the new one's.
    pub fn victims(&self, k: usize, out: &mut Vec<PageId>) {
        out.extend(self.old.values().chain(self.new.values()).take(k).copied());
    }

    /// The pages from the head of the new sublist to the tail of the old one (tests).
    #[cfg_attr(not(test), expect(dead_code, reason = "the unit tests use it; the crate no longer exports it"))]
    pub fn order(&self) -> Vec<PageId> {
        self.new.values().rev().chain(self.old.values().rev()).copied().collect()
    }

    /// Pages listed, in both sublists.
    #[cfg_attr(not(test), expect(dead_code, reason = "the unit tests use it; the crate no longer exports it"))]
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True if no page is listed.
    #[expect(dead_code, reason = "len_without_is_empty wanted it while the type was exported")]
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// Counters of the admission rule and of the NVM replacement's sublists (the columns
/// of NV-SQL's Table 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct NvsqlStats {
    /// Dirty DRAM evictions the admission rule sent to NVM.
    pub admitted: u64,
    /// Dirty DRAM evictions the admission rule sent to SSD.
    pub rejected: u64,
    /// Intervals seen (dirty evictions of pages with a known last flush).
    pub intervals: u64,
    /// Pages that entered the old sublist (each stay in NVM enters it).
    pub entered_old: u64,
    /// Pages that entered the new sublist (a stay counts once, at its first promotion).
    pub entered_new: u64,
    /// Updates made in place to pages while in the old sublist.
    pub updates_old: u64,
    /// Updates made in place to pages while in the new sublist.
    pub updates_new: u64,
    /// Pages leaving NVM (written to SSD if dirty).
    pub evicted: u64,
    /// Of `evicted`, those that had been in the new sublist during their stay: the
    /// paper's "write amount" of the new sublist is `evicted_after_new / evicted`.
    pub evicted_after_new: u64,
}

impl NvsqlStats {
    /// `self - earlier`, counter by counter; `earlier` must be an older snapshot of the
    /// same policy (a counter smaller than its earlier value overflows).
    pub fn since(&self, earlier: &NvsqlStats) -> NvsqlStats {
        NvsqlStats {
            admitted: self.admitted - earlier.admitted,
            rejected: self.rejected - earlier.rejected,
            intervals: self.intervals - earlier.intervals,
            entered_old: self.entered_old - earlier.entered_old,
            entered_new: self.entered_new - earlier.entered_new,
            updates_old: self.updates_old - earlier.updates_old,
            updates_new: self.updates_new - earlier.updates_new,
            evicted: self.evicted - earlier.evicted,
            evicted_after_new: self.evicted_after_new - earlier.evicted_after_new,
        }
    }

    /// Updates per page in the old / the new sublist (NV-SQL Table 4, "Update # / Page").
    pub fn updates_per_page(&self) -> (f64, f64) {
        let per = |u: u64, p: u64| if p == 0 { 0.0 } else { u as f64 / p as f64 };
        (per(self.updates_old, self.entered_old), per(self.updates_new, self.entered_new))
    }

    /// The share of the pages leaving NVM that had been in the new sublist (Table 4,
    /// "Write Amount", new; the rest is the old sublist's).
    pub fn write_amount_new(&self) -> f64 {
        if self.evicted == 0 { 0.0 } else { self.evicted_after_new as f64 / self.evicted as f64 }
    }
}

struct State {
    list: MidpointList,
    sketch: IntervalSketch,
    /// Per page: the log's LSN (or the eviction count, without a log) at its last
    /// write to SSD in this run, whatever wrote it (`Policy::page_flushed`). After a
    /// restart the page's SSD seal gives it (`PageInfo::last_flush_lsn`).
    last_flush: HashMap<PageId, u64>,
    /// Dirty evictions so far: the clock when pages carry no LSN.
    dirty_evictions: u64,
    /// The pages in NVM whose stay has been in the new sublist.
    been_new: HashSet<PageId>,
    stats: NvsqlStats,
}

/// The `nvsql` policy: NVM as a durable write cache beside DRAM, with re-update-interval
/// or checkpoint admission and midpoint LRU replacement (see the module doc).
pub struct Nvsql {
    cfg: NvsqlConfig,
    state: Mutex<State>,
}

impl Nvsql {
    /// A policy for an NVM pool of `nvm_frames` frames.
    pub fn new(cfg: NvsqlConfig, nvm_frames: usize) -> Nvsql {
        Nvsql {
            cfg,
            state: Mutex::new(State {
                list: MidpointList::new(cfg.replacement, nvm_frames),
                sketch: IntervalSketch::new(NVSQL_SKETCH_WINDOW),
                last_flush: HashMap::new(),
                dirty_evictions: 0,
                been_new: HashSet::new(),
                stats: NvsqlStats::default(),
            }),
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> NvsqlConfig {
        self.cfg
    }

    /// Its admission and replacement counters since it was built.
    pub fn stats(&self) -> NvsqlStats {
        self.state.lock().stats
    }

    /// The re-update interval of a dirty page: first-update LSN − last-flush LSN. The
    /// last flush is the later of the one recorded in this run and the one the page's
    /// SSD copy carried when read (its seal: this survives restarts); a page with
    /// neither is taken as flushed at 0, a long interval.
    pub fn interval(&self, page: &PageInfo) -> u64 {
        Self::interval_locked(&self.state.lock(), page)
    }

    fn interval_locked(st: &State, page: &PageInfo) -> u64 {
        // Without a log the clock is the count of dirty evictions.
        let first = if page.first_update_lsn.is_none() { st.dirty_evictions } else { page.first_update_lsn.get() };
        let last = st.last_flush.get(&page.pid).copied().unwrap_or(0).max(page.last_flush_lsn.get());
        first.saturating_sub(last)
    }

    /// The admission decision for a dirty page leaving DRAM without an NVM frame; also
    /// records the page's interval. (Its flush, if it goes to SSD, is recorded when the
    /// buffer manager writes it: `Policy::page_flushed`.)
    pub fn admit(&self, page: &PageInfo) -> bool {
        let mut st = self.state.lock();
        st.dirty_evictions += 1;
        let interval = Self::interval_locked(&st, page);
        let admit = match self.cfg.admission {
            NvsqlAdmission::Always => true,
            NvsqlAdmission::Checkpoint { .. } => false,
            NvsqlAdmission::FixedInterval { lsns } => interval <= lsns,
            NvsqlAdmission::Interval { percent } | NvsqlAdmission::Combined { interval_percent: percent, .. } => {
                // Until the sketch has seen enough, admit: NVM starts empty.
                let admit = st.sketch.len() < NVSQL_SKETCH_MIN_SAMPLES || st.sketch.rank(interval) * 100.0 <= percent;
                st.sketch.add(interval);
                admit
            }
        };
        st.stats.intervals += 1;
        if admit {
            st.stats.admitted += 1;
        } else {
            st.stats.rejected += 1;
        }
        admit
    }

    /// Checkpoint-based admission: of the dirty pages `(pid, first-update LSN)`, those
    /// to move to NVM instead of writing to SSD — the oldest first-update LSNs, the
    /// configured share of them (rounded up), at most as many as the old sublist holds
    /// (they enter at its head: more would push the first of them out again). Empty
    /// for the modes without the checkpoint rule.
    pub fn checkpoint_selection(&self, dirty: &[(PageId, Lsn)]) -> Vec<PageId> {
        let percent = match self.cfg.admission {
            NvsqlAdmission::Checkpoint { percent } | NvsqlAdmission::Combined { checkpoint_percent: percent, .. } => {
                percent
            }
            _ => return Vec::new(),
        };
        let cap = self.state.lock().list.old_capacity().unwrap_or(usize::MAX);
        // A page dirty without a logged change (its first-update LSN unknown: a new page
        // not yet logged) is not moved: its NVM frame's recovery LSN would be unknown,
        // and a crash that tore the frame would need the log from its very start, which
        // checkpoints delete (crashtest --arch nvsql with admit=checkpoint failed with
        // "recovery needs the log from LSN 1", seeds 11-13 of 10 points). Such pages sort
        // first by LSN, so before, they were the first chosen.
        let mut v: Vec<(PageId, Lsn)> = dirty.iter().copied().filter(|(_, lsn)| !lsn.is_none()).collect();
        v.sort_by_key(|&(pid, lsn)| (lsn, pid));
        let k = (((v.len() as f64) * percent / 100.0).ceil() as usize).min(cap);
        debug_assert!(k <= v.len(), "{k} of {} dirty pages selected", v.len());
        v.into_iter().take(k).map(|(p, _)| p).collect()
    }
}

impl Policy for Nvsql {
    fn name(&self) -> &'static str {
        "nvsql"
    }

    fn ssd_miss(&self, _page: &PageInfo, _tiers: &Tiers) -> MissTarget {
        MissTarget::Dram
    }

    fn nvm_access(&self, page: &PageInfo, write: bool, tiers: &Tiers) -> NvmAccess {
        let mut st = self.state.lock();
        st.list.resize(tiers.nvm_frames);
        if let Some((from, to)) = st.list.hit(page.pid, write) {
            if write {
                match from {
                    Sub::Old => st.stats.updates_old += 1,
                    Sub::New => st.stats.updates_new += 1,
                }
            }
            if to == Sub::New && st.been_new.insert(page.pid) {
                st.stats.entered_new += 1;
            }
        }
        NvmAccess::InPlace
    }

    fn shape(&self) -> Shape {
        Shape {
            in_place: true,
            nvm_disjoint: true,
            nvm_durable_cache: true,
            nvm_keep_checkpoints: self.cfg.keep_checkpoints,
            ..Shape::default()
        }
    }

    fn checkpoint_to_nvm(&self, dirty: &[(PageId, Lsn)]) -> Vec<PageId> {
        self.checkpoint_selection(dirty)
    }

    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo {
        if !tiers.has_nvm || !tiers.has_ssd {
            return if tiers.has_nvm { EvictTo::Nvm } else { EvictTo::Ssd };
        }
        // Not for `nvsql` (disjoint tiers), but for a manager that kept the frame: the
        // page goes back to it.
        if page.nvm_copy {
            return EvictTo::Nvm;
        }
        if !page.dirty {
            return EvictTo::Ssd; // clean: dropped
        }
        self.state.lock().list.resize(tiers.nvm_frames);
        if self.admit(page) { EvictTo::Nvm } else { EvictTo::Ssd }
    }

    /// Clock in DRAM; in NVM (not asked: [`Policy::nvm_victims`] picks) every frame.
    fn victim(&self, pool: Pool, page: &PageInfo, _tiers: &Tiers) -> Victim {
        match pool {
            Pool::Dram => super::clock(page),
            Pool::Nvm => Victim::Evict,
        }
    }

    fn nvm_victims(&self, tiers: &Tiers, out: &mut Vec<PageId>) -> bool {
        let mut st = self.state.lock();
        st.list.resize(tiers.nvm_frames);
        st.list.victims(1, out);
        true
    }

    fn observe(&self, event: Event) {
        match event {
            Event::NvmAdmitted { pid, .. } => self.admitted(pid),
            Event::NvmLeft(pid) => self.nvm_left(pid),
            Event::Flushed { pid, flush_lsn } => self.flushed(pid, flush_lsn),
            Event::Freed(pid) => self.freed(pid),
            Event::DatabaseSize(_) => {}
        }
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats::Nvsql(Nvsql::stats(self))
    }
}

impl Nvsql {
    fn admitted(&self, pid: PageId) {
        let mut st = self.state.lock();
        if st.list.sublist(pid).is_none() {
            st.stats.entered_old += 1;
            st.been_new.remove(&pid);
        }
        st.list.insert(pid);
    }

    fn nvm_left(&self, pid: PageId) {
        let mut st = self.state.lock();
        if st.list.sublist(pid).is_some() {
            st.stats.evicted += 1;
            if st.been_new.remove(&pid) {
                st.stats.evicted_after_new += 1;
            }
        }
        st.list.forget(pid);
    }

    fn flushed(&self, pid: PageId, flush_lsn: Lsn) {
        let mut st = self.state.lock();
        // Without a log (`Lsn::NONE`) the clock is the count of dirty evictions.
        let now = if flush_lsn.is_none() { st.dirty_evictions } else { flush_lsn.get() };
        st.last_flush.entry(pid).and_modify(|l| *l = (*l).max(now)).or_insert(now);
    }

    fn freed(&self, pid: PageId) {
        let mut st = self.state.lock();
        st.list.forget(pid);
        st.been_new.remove(&pid);
        st.last_flush.remove(&pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirty(pid: u64, first: u64, last: u64) -> PageInfo {
        PageInfo {
            pid: PageId(pid),
            dirty: true,
            nvm_copy: false,
            referenced: false,
            first_update_lsn: Lsn::new(first),
            page_lsn: Lsn::new(last),
            last_flush_lsn: Lsn::NONE,
        }
    }

    fn tiers() -> Tiers {
        Tiers { has_nvm: true, has_ssd: true, dram_frames: 8, nvm_frames: 8 }
    }

    #[test]
    fn config_parses_and_rejects() {
        assert_eq!("".parse::<NvsqlConfig>().unwrap(), NvsqlConfig::default());
        assert_eq!("admit=combined".parse::<NvsqlConfig>().unwrap(), NvsqlConfig::default());
        let c: NvsqlConfig = "pct=10,ckpt=20".parse().unwrap();
        assert_eq!(c.admission, NvsqlAdmission::Combined { interval_percent: 10.0, checkpoint_percent: 20.0 });
        assert_eq!(c.to_string().parse::<NvsqlConfig>().unwrap(), c);
        let c: NvsqlConfig = "admit=checkpoint,pct=40".parse().unwrap();
        assert_eq!(c.admission, NvsqlAdmission::Checkpoint { percent: 40.0 });
        assert_eq!(c.to_string().parse::<NvsqlConfig>().unwrap(), c);
        let c: NvsqlConfig = "admit=interval".parse().unwrap();
        assert_eq!(c.admission, NvsqlAdmission::Interval { percent: NVSQL_INTERVAL_PERCENT_DEFAULT });
        let c: NvsqlConfig = "admit=fixed,lsns=100,lru=lru".parse().unwrap();
        assert_eq!(c.admission, NvsqlAdmission::FixedInterval { lsns: 100 });
        assert_eq!(c.replacement, NvsqlReplacement::Lru);
        assert_eq!(c.to_string().parse::<NvsqlConfig>().unwrap(), c);
        assert_eq!(c.keep_checkpoints, Some(NVSQL_KEEP_CHECKPOINTS_DEFAULT));
        for (s, keep) in [("keep=0", Some(0)), ("keep=3", Some(3)), ("keep=unbounded", None)] {
            let c: NvsqlConfig = s.parse().unwrap();
            assert_eq!(c.keep_checkpoints, keep, "{s}");
            assert_eq!(c.to_string().parse::<NvsqlConfig>().unwrap(), c);
        }
        for bad in [
            "admit=fixed",
            "pct=101",
            "ckpt=-1",
            "admit=interval,ckpt=5",
            "admit=always,pct=5",
            "admit=x",
            "lsns=3",
            "lru=mru",
            "foo=1",
            "admit",
            "keep=-1",
            "keep=x",
        ] {
            assert!(bad.parse::<NvsqlConfig>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sketch_ranks_and_forgets() {
        let mut s = IntervalSketch::new(100);
        for x in 1..=100u64 {
            s.add(x * 1000);
        }
        let r = s.rank(25_000);
        assert!((0.2..0.3).contains(&r), "{r}");
        assert!(s.rank(1) < 0.01 && s.rank(1 << 40) > 0.99);
        // The window slides: 100 short intervals push the long ones out.
        for _ in 0..100 {
            s.add(10);
        }
        assert!(s.rank(1000) > 0.99, "{}", s.rank(1000));
        // A window of 0 keeps the newest sample, as one of 1 (it panicked in release
        // builds, where its debug assertion was off).
        let mut z = IntervalSketch::new(0);
        z.add(5);
        z.add(7);
        assert_eq!(z.len(), 1);
        assert_eq!(s.len(), 100);
        for x in [0u64, 7, 8, 9, 15, 16, 1000, u64::MAX] {
            assert!(IntervalSketch::bucket(x) < BUCKETS);
            assert!(IntervalSketch::bucket(x) <= IntervalSketch::bucket(x.saturating_add(1)));
        }
    }

    /// A scripted LSN sequence: page 1 is re-updated soon after each flush, page 2
    /// long after. With a fixed threshold of 50 LSNs, page 1 is admitted on its second
    /// eviction, page 2 never.
    #[test]
    fn fixed_interval_admits_short_re_updates() {
        let p =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::FixedInterval { lsns: 50 }, ..Default::default() }, 8);
        // First stays: never flushed before, interval = first-update LSN (long). The
        // buffer manager then writes them and reports the log's LSN at the write.
        assert_eq!(p.dram_eviction(&dirty(1, 1000, 1010), &tiers()), EvictTo::Ssd);
        p.observe(Event::Flushed { pid: PageId(1), flush_lsn: Lsn::new(1010) });
        assert_eq!(p.dram_eviction(&dirty(2, 1005, 1020), &tiers()), EvictTo::Ssd);
        p.observe(Event::Flushed { pid: PageId(2), flush_lsn: Lsn::new(1020) });
        // Page 1 updated again at 1040 (interval 30), page 2 at 1500 (interval 480).
        assert_eq!(p.dram_eviction(&dirty(1, 1040, 1045), &tiers()), EvictTo::Nvm);
        assert_eq!(p.dram_eviction(&dirty(2, 1500, 1501), &tiers()), EvictTo::Ssd);
        // Clean pages are dropped; a page with an NVM frame goes home.
        let clean = PageInfo { dirty: false, ..dirty(3, 0, 0) };
        assert_eq!(p.dram_eviction(&clean, &tiers()), EvictTo::Ssd);
        assert_eq!(p.dram_eviction(&PageInfo { nvm_copy: true, ..dirty(2, 1, 1) }, &tiers()), EvictTo::Nvm);
        assert_eq!(p.stats(), NvsqlStats { admitted: 1, rejected: 3, intervals: 4, ..NvsqlStats::default() });
    }

    /// Online ranking: after a warm-up of intervals 1..=100 (×10 LSNs), a 20% threshold
    /// admits an interval of 100 (rank ~10%) and rejects one of 900 (rank ~90%).
    #[test]
    fn online_interval_ranks_against_recent_intervals() {
        let p =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::Interval { percent: 20.0 }, ..Default::default() }, 8);
        let mut lsn = 1_000_000;
        for i in 1..=100u64 {
            // Flushed at `lsn` (rejected or not, the policy records the flush when it
            // sends the page to SSD): seed every page's last flush explicitly.
            p.state.lock().last_flush.insert(PageId(i), lsn);
            p.admit(&dirty(i, lsn + i * 10, lsn + i * 10));
            lsn += 10_000;
        }
        assert!(p.state.lock().sketch.len() >= NVSQL_SKETCH_MIN_SAMPLES);
        p.state.lock().last_flush.insert(PageId(500), lsn);
        p.state.lock().last_flush.insert(PageId(501), lsn);
        assert!(p.admit(&dirty(500, lsn + 100, lsn + 100)));
        assert!(!p.admit(&dirty(501, lsn + 900, lsn + 900)));
        // A rejection records nothing: the write that follows does.
        assert_eq!(p.state.lock().last_flush[&PageId(501)], lsn);
        p.observe(Event::Flushed { pid: PageId(501), flush_lsn: Lsn::new(lsn + 950) });
        assert_eq!(p.state.lock().last_flush[&PageId(501)], lsn + 950);
    }

    /// Scripted LSNs: every write to SSD moves the last flush — a checkpoint's as much
    /// as an eviction's or an NVM eviction's — and never back.
    #[test]
    fn a_checkpoint_write_moves_the_last_flush() {
        let p =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::FixedInterval { lsns: 50 }, ..Default::default() }, 8);
        p.observe(Event::Flushed { pid: PageId(1), flush_lsn: Lsn::new(1_000) }); // evicted to SSD at log LSN 1000
        // Re-updated at 5000 without a checkpoint in between: interval 4000, rejected.
        assert_eq!(p.interval(&dirty(1, 5_000, 5_010)), 4_000);
        // A checkpoint wrote it at 4980 (the page stayed in DRAM, clean): interval 20.
        p.observe(Event::Flushed { pid: PageId(1), flush_lsn: Lsn::new(4_980) });
        assert_eq!(p.interval(&dirty(1, 5_000, 5_010)), 20);
        assert_eq!(p.dram_eviction(&dirty(1, 5_000, 5_010), &tiers()), EvictTo::Nvm);
        // An older report (a write racing the checkpoint's) does not move it back.
        p.observe(Event::Flushed { pid: PageId(1), flush_lsn: Lsn::new(3_000) });
        assert_eq!(p.interval(&dirty(1, 5_000, 5_010)), 20);
        // An NVM eviction writes it at 9000: the next interval runs from there.
        p.observe(Event::Flushed { pid: PageId(1), flush_lsn: Lsn::new(9_000) });
        assert_eq!(p.interval(&dirty(1, 9_030, 9_040)), 30);
    }

    /// Scripted LSNs across a restart: the policy starts empty, and the page's
    /// last-flush LSN comes from its SSD seal (`PageInfo::last_flush_lsn`, set when the
    /// page is read). Without it the interval would run from 0.
    #[test]
    fn after_a_restart_the_seal_gives_the_last_flush() {
        let before =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::FixedInterval { lsns: 50 }, ..Default::default() }, 8);
        before.observe(Event::Flushed { pid: PageId(7), flush_lsn: Lsn::new(70_000) });
        drop(before); // the restart: the DRAM map is gone
        let after =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::FixedInterval { lsns: 50 }, ..Default::default() }, 8);
        let unknown = dirty(7, 70_040, 70_041);
        assert_eq!(after.interval(&unknown), 70_040, "no seal value: from 0");
        let sealed = PageInfo { last_flush_lsn: Lsn::new(70_000), ..unknown };
        assert_eq!(after.interval(&sealed), 40);
        assert_eq!(after.dram_eviction(&sealed, &tiers()), EvictTo::Nvm);
        assert_eq!(after.dram_eviction(&unknown, &tiers()), EvictTo::Ssd);
        // A flush in this run that is newer than the seal's wins.
        after.observe(Event::Flushed { pid: PageId(7), flush_lsn: Lsn::new(70_030) });
        assert_eq!(after.interval(&sealed), 10);
    }

    #[test]
    fn checkpoint_selects_oldest_first_updates() {
        let p = Nvsql::new(
            NvsqlConfig { admission: NvsqlAdmission::Checkpoint { percent: 50.0 }, ..Default::default() },
            8,
        );
        let dirty = [(PageId(1), 40), (PageId(2), 10), (PageId(3), 30), (PageId(4), 20)].map(|(p, l)| (p, Lsn::new(l)));
        assert_eq!(p.checkpoint_selection(&dirty), vec![PageId(2), PageId(4)]);
        // Nothing is admitted at eviction in this mode.
        assert_eq!(p.dram_eviction(&super::tests::dirty(9, 5, 5), &tiers()), EvictTo::Ssd);
        let q =
            Nvsql::new(NvsqlConfig { admission: NvsqlAdmission::Interval { percent: 30.0 }, ..Default::default() }, 8);
        assert!(q.checkpoint_selection(&dirty).is_empty(), "the interval rule alone admits at evictions only");
        // The share is capped by the old sublist (8 frames, 4 new: 4 old), where they enter.
        let many: Vec<(PageId, Lsn)> = (1..=20).map(|i| (PageId(i), Lsn::new(i * 10))).collect();
        let all = Nvsql::new(
            NvsqlConfig { admission: NvsqlAdmission::Checkpoint { percent: 100.0 }, ..Default::default() },
            8,
        );
        assert_eq!(all.checkpoint_selection(&many), [1, 2, 3, 4].map(PageId));
        // Pages without a first-update LSN are never chosen (they would sort first).
        let unlogged = [(PageId(9), Lsn::NONE), (PageId(1), Lsn::new(40)), (PageId(2), Lsn::new(10))];
        assert_eq!(all.checkpoint_selection(&unlogged), [2, 1].map(PageId));
    }

    /// The default admits by either rule (§4.3): four pages, one per combination of
    /// "its re-update interval ranks short" and "it is at the head of the dirty-page list
    /// at a checkpoint". Each is asked at both places a page can enter NVM: the
    /// checkpoint's selection and an eviction.
    #[test]
    fn combined_admission_admits_by_either_rule() {
        let cfg = NvsqlConfig::default();
        let NvsqlAdmission::Combined { interval_percent, checkpoint_percent } = cfg.admission else {
            panic!("the default is not combined: {cfg}")
        };
        assert_eq!(
            (interval_percent, checkpoint_percent),
            (NVSQL_INTERVAL_PERCENT_DEFAULT, NVSQL_CHECKPOINT_PERCENT_DEFAULT)
        );
        // A pool of 16 frames: 7 in the old sublist, the checkpoint cap.
        let p = Nvsql::new(
            NvsqlConfig {
                admission: NvsqlAdmission::Combined { interval_percent: 30.0, checkpoint_percent: 50.0 },
                ..cfg
            },
            16,
        );
        // Warm the sketch: intervals 10, 20, ..., 1000 LSNs.
        let mut lsn = 1_000_000;
        for i in 1..=100u64 {
            p.state.lock().last_flush.insert(PageId(1000 + i), lsn);
            p.admit(&dirty(1000 + i, lsn + i * 10, lsn + i * 10));
            lsn += 10_000;
        }
        // Pages 1..=4, all last flushed at `lsn`: 1 and 2 re-updated soon after (interval
        // 50, rank ~5%), 3 and 4 long after (interval 900, rank ~90%). First-update LSNs:
        // 1 and 3 oldest (the head of the dirty-page list), 2 and 4 youngest.
        let first = [(1, lsn + 50), (2, lsn + 60), (3, lsn + 900), (4, lsn + 950)];
        for (pid, _) in first {
            p.state.lock().last_flush.insert(PageId(pid), lsn);
        }
        // The checkpoint's order is by first-update LSN; make 1 and 3 the oldest.
        let dirty_list = [(1, 10), (3, 20), (2, 30), (4, 40)].map(|(pid, at)| (PageId(pid), Lsn::new(at)));
        let by_checkpoint = p.checkpoint_selection(&dirty_list);
        assert_eq!(by_checkpoint, [1, 3].map(PageId), "50% of 4: the two oldest");
        let evicted = |pid: u64| {
            let (_, f) = first.iter().copied().find(|&(q, _)| q == pid).expect("listed");
            p.dram_eviction(&dirty(pid, f, f + 1), &Tiers { nvm_frames: 16, ..tiers() })
        };
        // Both: page 1 (short interval, oldest).
        assert!(by_checkpoint.contains(&PageId(1)));
        assert_eq!(evicted(1), EvictTo::Nvm);
        // Interval only: page 2 (short interval, young).
        assert!(!by_checkpoint.contains(&PageId(2)));
        assert_eq!(evicted(2), EvictTo::Nvm);
        // Checkpoint only: page 3 (long interval, oldest).
        assert!(by_checkpoint.contains(&PageId(3)));
        assert_eq!(evicted(3), EvictTo::Ssd);
        // Neither: page 4 (long interval, young).
        assert!(!by_checkpoint.contains(&PageId(4)));
        assert_eq!(evicted(4), EvictTo::Ssd);

        // Each rule alone, on the same pages: the interval rule never selects at a
        // checkpoint; the checkpoint rule never admits at an eviction.
        let only = |admission| Nvsql::new(NvsqlConfig { admission, ..cfg }, 16);
        assert!(only(NvsqlAdmission::Interval { percent: 30.0 }).checkpoint_selection(&dirty_list).is_empty());
        let c = only(NvsqlAdmission::Checkpoint { percent: 50.0 });
        assert_eq!(c.checkpoint_selection(&dirty_list), [1, 3].map(PageId));
        assert_eq!(c.dram_eviction(&dirty(1, lsn + 50, lsn + 51), &tiers()), EvictTo::Ssd);
    }

    /// A scripted access sequence over 8 frames (new sublist 5 of them): pages enter at
    /// the midpoint; under the update-count rule reads in the old sublist do not promote,
    /// updates do; the victim is the old sublist's tail.
    #[test]
    fn midpoint_list_update_count_rule() {
        let mut l = MidpointList::new(NvsqlReplacement::UpdateCount, 8);
        assert_eq!(l.new_cap, 8 * NVSQL_NEW_SUBLIST_PERCENT / 100);
        let pid = PageId;
        for p in 1..=4 {
            l.insert(pid(p));
        }
        // All in the old sublist, newest at its head.
        assert_eq!(l.order(), vec![pid(4), pid(3), pid(2), pid(1)]);
        l.hit(pid(1), false); // a read: stays at the tail
        let mut v = Vec::new();
        l.victims(1, &mut v);
        assert_eq!(v, vec![pid(1)]);
        l.hit(pid(1), true); // an update: to the new sublist
        l.hit(pid(2), true);
        assert_eq!(l.order(), vec![pid(2), pid(1), pid(4), pid(3)]);
        v.clear();
        l.victims(2, &mut v);
        assert_eq!(v, vec![pid(3), pid(4)]);
        // Reads in the new sublist move to its head.
        l.hit(pid(1), false);
        assert_eq!(l.order()[0], pid(1));
        l.forget(pid(3));
        assert_eq!(l.len(), 3);

        // Midpoint without the rule promotes on a read.
        let mut m = MidpointList::new(NvsqlReplacement::Midpoint, 8);
        m.insert(pid(1));
        m.insert(pid(2));
        m.hit(pid(1), false);
        assert_eq!(m.order(), vec![pid(1), pid(2)]);
    }

    #[test]
    fn new_sublist_spills_into_old_and_lru_is_plain() {
        let mut l = MidpointList::new(NvsqlReplacement::UpdateCount, 4); // new cap 2
        for p in 1..=4 {
            l.insert(PageId(p));
            l.hit(PageId(p), true);
        }
        // 4 and 3 in new; 2 then 1 spilled to the old head in that order.
        assert_eq!(l.order(), [4, 3, 2, 1].map(PageId));
        let mut v = Vec::new();
        l.victims(1, &mut v);
        assert_eq!(v, vec![PageId(1)]);

        let mut lru = MidpointList::new(NvsqlReplacement::Lru, 4);
        for p in 1..=3 {
            lru.insert(PageId(p));
        }
        lru.hit(PageId(1), false);
        assert_eq!(lru.order(), [1, 3, 2].map(PageId));
    }

    #[test]
    fn the_policy_feeds_the_list() {
        let p = Nvsql::new(NvsqlConfig::default(), 8);
        p.observe(Event::NvmAdmitted { pid: PageId(1), on_eviction: true });
        p.observe(Event::NvmAdmitted { pid: PageId(2), on_eviction: true });
        let info = |pid| PageInfo { nvm_copy: true, ..dirty(pid, 0, 0) };
        assert_eq!(p.nvm_access(&info(1), true, &tiers()), NvmAccess::InPlace);
        let mut v = Vec::new();
        assert!(p.nvm_victims(&tiers(), &mut v));
        assert_eq!(v, vec![PageId(2)]);
        p.observe(Event::NvmLeft(PageId(2)));
        v.clear();
        p.nvm_victims(&tiers(), &mut v);
        assert_eq!(v, vec![PageId(1)]);
        assert_eq!(p.ssd_miss(&info(3), &tiers()), MissTarget::Dram);
    }

    /// Table 4's counters on a script: updates counted in the sublist they hit, a stay
    /// counted once in the new sublist, evictions split by whether the page had been new.
    #[test]
    fn sublist_counters_follow_a_scripted_sequence() {
        let script = |replacement| {
            let cfg = NvsqlConfig { replacement, ..NvsqlConfig::default() };
            let p = Nvsql::new(cfg, 8);
            for pid in 1..=3 {
                p.observe(Event::NvmAdmitted { pid: PageId(pid), on_eviction: true });
            }
            let info = |pid| PageInfo { nvm_copy: true, ..dirty(pid, 0, 0) };
            p.nvm_access(&info(1), true, &tiers()); // old → new (an update)
            p.nvm_access(&info(1), true, &tiers()); // in new
            p.nvm_access(&info(1), false, &tiers());
            p.nvm_access(&info(2), false, &tiers()); // a read: promotes only without the rule
            p.nvm_access(&info(3), true, &tiers());
            for pid in 1..=3 {
                p.observe(Event::NvmLeft(PageId(pid)));
            }
            p.stats()
        };
        let s = script(NvsqlReplacement::UpdateCount);
        assert_eq!((s.entered_old, s.entered_new), (3, 2));
        assert_eq!((s.updates_old, s.updates_new), (2, 1));
        assert_eq!((s.evicted, s.evicted_after_new), (3, 2));
        assert_eq!(s.updates_per_page(), (2.0 / 3.0, 0.5));
        assert!((s.write_amount_new() - 2.0 / 3.0).abs() < 1e-12);
        let m = script(NvsqlReplacement::Midpoint);
        assert_eq!((m.entered_new, m.evicted_after_new), (3, 3), "any hit promotes");
        let l = script(NvsqlReplacement::Lru);
        assert_eq!((l.entered_new, l.updates_old, l.updates_new, l.evicted_after_new), (0, 3, 0, 0));
        assert_eq!(s.since(&s), NvsqlStats::default());
    }
}
