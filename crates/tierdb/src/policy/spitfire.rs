//! `spitfire`: probabilistic data migration (Arulraj, Pavlo, Malladi, §3).
//!
//! Each page-life-cycle question is answered by a coin weighted by one of the four
//! [`MigrationKnobs`] (the data-flow paths of the paper's Figure 2):
//!
//! - a page read from SSD is installed in NVM with probability `nr` (path ➊; whether it
//!   then also goes to DRAM is the next question), else it goes to DRAM only (➒);
//! - an access to a page in NVM copies it to DRAM with probability `dr` (reads) or
//!   `dw` (writes) (➋); otherwise the buffer manager serves it in place on NVM (➐ for
//!   reads; ➑ for writes, whose changed lines are persisted at unfix);
//! - a *modified* page evicted from DRAM that has no NVM frame is admitted to NVM with
//!   probability `nw` (➎), else it is written to SSD (➓); an unmodified one is dropped,
//!   as its SSD copy is current (§3.3: "If the data read into the DRAM buffer is not
//!   subsequently modified, and is selected for replacement, then the buffer manager
//!   discards it. If the page is modified […] the buffer manager considers admitting it
//!   to NVM"); a page that has an NVM frame goes back to it. The variant
//!   `clean-to-nvm` ([`CleanVictims::ToNvm`]) admits unmodified victims with probability
//!   `nw` too, as tierdb did before (kept to measure what the rule is worth);
//! - clock (second chance) picks victims in both pools.
//!
//! The knobs can be changed while the engine runs (they live in a [`KnobCell`] that the
//! policy's [`Shape`] hands to the buffer manager), which is what
//! the online tuner does between epochs. The coins come from one seeded SplitMix64
//! stream shared by all threads (an atomic counter, no lock): a single-threaded run with
//! the same seed makes the same decisions in the engine and in the simulator, as long as
//! the two agree on which pages are dirty.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{EvictTo, KnobCell, MigrationKnobs, MissTarget, NvmAccess, PageInfo, Policy, PolicyError, Shape, Tiers};

/// The golden-ratio increment of SplitMix64.
const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The word of a policy string (`spitfire:b,clean-to-nvm`) that selects
/// [`CleanVictims::ToNvm`].
pub const CLEAN_TO_NVM: &str = "clean-to-nvm";

/// What becomes of a DRAM victim that is unmodified and has no NVM frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CleanVictims {
    /// Dropped, without a coin: SSD holds the same bytes (the paper's §3.3–3.4, and its
    /// authors' code). `nw` weighs only the admission of modified victims.
    #[default]
    Drop,
    /// Admitted to NVM with probability `nw`, like a modified one ([`CLEAN_TO_NVM`]):
    /// tierdb's rule before issue 22, kept to measure the difference.
    ToNvm,
}

/// The `spitfire` policy's configuration: its starting knobs and its rule for clean
/// victims. Parsed from what follows `spitfire:` — a preset or a knob list, and
/// optionally the word [`CLEAN_TO_NVM`], comma-separated (`b,clean-to-nvm`,
/// `nw=0.5,clean-to-nvm`, `clean-to-nvm` alone for eager knobs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpitfireConfig {
    /// The knobs it starts with (a tuner may change them while it runs).
    pub knobs: MigrationKnobs,
    /// What becomes of unmodified DRAM victims without an NVM frame.
    pub clean_victims: CleanVictims,
}

impl From<MigrationKnobs> for SpitfireConfig {
    fn from(knobs: MigrationKnobs) -> SpitfireConfig {
        SpitfireConfig { knobs, clean_victims: CleanVictims::Drop }
    }
}

impl FromStr for SpitfireConfig {
    type Err = PolicyError;

    /// # Errors
    /// `Config` for knobs that do not parse ([`MigrationKnobs`]'s `FromStr`).
    fn from_str(s: &str) -> Result<SpitfireConfig, PolicyError> {
        let mut clean_victims = CleanVictims::Drop;
        let mut rest = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part == CLEAN_TO_NVM {
                clean_victims = CleanVictims::ToNvm;
            } else {
                rest.push(part);
            }
        }
        let knobs = if rest.is_empty() { MigrationKnobs::EAGER } else { rest.join(",").parse()? };
        Ok(SpitfireConfig { knobs, clean_victims })
    }
}

impl fmt::Display for SpitfireConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.knobs)?;
        if self.clean_victims == CleanVictims::ToNvm {
            write!(f, ",{CLEAN_TO_NVM}")?;
        }
        Ok(())
    }
}

/// The `spitfire` policy: every migration decided by a coin weighted by one of the
/// [`MigrationKnobs`], which can change while it runs.
pub struct Spitfire {
    /// The four knobs, shared with whoever tunes them.
    knobs: Arc<KnobCell>,
    clean_victims: CleanVictims,
    rng: AtomicU64,
}

impl Spitfire {
    /// A policy with `config`'s knobs (taken as given: a knob at or below 0 never fires,
    /// one at or above 1 always does) and clean-victim rule, whose coins come from a
    /// SplitMix64 stream seeded with `seed`.
    pub fn new(config: SpitfireConfig, seed: u64) -> Spitfire {
        Spitfire {
            knobs: Arc::new(KnobCell::new(config.knobs)),
            clean_victims: config.clean_victims,
            rng: AtomicU64::new(seed),
        }
    }

    #[inline]
    fn knob(&self, i: usize) -> f64 {
        self.knobs.knob(i)
    }

    /// True with probability `p` (exactly: never for 0, always for 1).
    #[inline]
    fn coin(&self, p: f64) -> bool {
        if p >= 1.0 {
            return true;
        }
        if p <= 0.0 {
            return false;
        }
        let mut z = self.rng.fetch_add(SPLITMIX_GAMMA, Ordering::Relaxed).wrapping_add(SPLITMIX_GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // 53 random bits as a uniform float in [0, 1).
        ((z >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < p
    }
}

impl Policy for Spitfire {
    fn name(&self) -> &'static str {
        "spitfire"
    }

    fn ssd_miss(&self, _page: &PageInfo, tiers: &Tiers) -> MissTarget {
        if tiers.has_nvm && self.coin(self.knob(2)) { MissTarget::Nvm } else { MissTarget::Dram }
    }

    fn nvm_access(&self, _page: &PageInfo, write: bool, _tiers: &Tiers) -> NvmAccess {
        let p = if write { self.knob(1) } else { self.knob(0) };
        if self.coin(p) { NvmAccess::Migrate } else { NvmAccess::InPlace }
    }

    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo {
        if !tiers.has_nvm {
            return EvictTo::Ssd;
        }
        if page.nvm_copy {
            return EvictTo::Nvm;
        }
        if !page.dirty && self.clean_victims == CleanVictims::Drop {
            return EvictTo::Ssd;
        }
        if self.coin(self.knob(3)) { EvictTo::Nvm } else { EvictTo::Ssd }
    }

    fn shape(&self) -> Shape {
        Shape { in_place: true, knobs: Some(self.knobs.clone()), ..Shape::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Lsn;
    use crate::ids::PageId;

    const TIERS: Tiers = Tiers { has_nvm: true, has_ssd: true, dram_frames: 8, nvm_frames: 64 };

    /// A dirty page, with an NVM copy or not.
    fn page(nvm_copy: bool) -> PageInfo {
        PageInfo {
            pid: PageId(7),
            dirty: true,
            nvm_copy,
            referenced: false,
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        }
    }

    #[test]
    fn zero_and_one_are_exact() {
        let p = Spitfire::new(MigrationKnobs { dr: 0.0, dw: 1.0, nr: 0.0, nw: 0.0 }.into(), 1);
        for _ in 0..10_000 {
            assert_eq!(p.nvm_access(&page(true), false, &TIERS), NvmAccess::InPlace);
            assert_eq!(p.nvm_access(&page(true), true, &TIERS), NvmAccess::Migrate);
            assert_eq!(p.ssd_miss(&page(false), &TIERS), MissTarget::Dram);
            assert_eq!(p.dram_eviction(&page(false), &TIERS), EvictTo::Ssd);
            // A page with an NVM frame goes back to it whatever nw says.
            assert_eq!(p.dram_eviction(&page(true), &TIERS), EvictTo::Nvm);
        }
    }

    #[test]
    fn frequencies_follow_the_knobs_and_the_seed_fixes_the_sequence() {
        let k = MigrationKnobs { dr: 0.1, dw: 0.5, nr: 0.2, nw: 0.7 };
        let (a, b) = (Spitfire::new(k.into(), 9), Spitfire::new(k.into(), 9));
        let draws = 100_000;
        let mut migrated = 0;
        for _ in 0..draws {
            let x = a.nvm_access(&page(true), false, &TIERS);
            assert_eq!(x, b.nvm_access(&page(true), false, &TIERS), "same seed, same decisions");
            migrated += usize::from(x == NvmAccess::Migrate);
        }
        let f = migrated as f64 / draws as f64;
        assert!((f - 0.1).abs() < 0.005, "dr = 0.1 migrated {f}");
        let admitted = (0..draws).filter(|_| a.dram_eviction(&page(false), &TIERS) == EvictTo::Nvm).count();
        assert!((admitted as f64 / draws as f64 - 0.7).abs() < 0.01, "nw = 0.7 admitted {admitted}");
    }

    #[test]
    fn knobs_change_at_run_time() {
        let p = Spitfire::new(MigrationKnobs::EAGER.into(), 3);
        assert_eq!(p.nvm_access(&page(true), false, &TIERS), NvmAccess::Migrate);
        let b = MigrationKnobs::preset("b").unwrap();
        let cell = p.shape().knobs.expect("spitfire has knobs");
        cell.set(MigrationKnobs { dr: 0.0, ..b });
        assert_eq!(cell.get(), MigrationKnobs { dr: 0.0, ..b });
        assert_eq!(p.nvm_access(&page(true), false, &TIERS), NvmAccess::InPlace);
        let no_nvm = Tiers { has_nvm: false, ..TIERS };
        assert_eq!(p.ssd_miss(&page(false), &no_nvm), MissTarget::Dram);
    }

    fn clean(nvm_copy: bool) -> PageInfo {
        PageInfo { dirty: false, ..page(nvm_copy) }
    }

    #[test]
    fn a_clean_victim_without_an_nvm_copy_is_dropped_and_draws_no_coin() {
        let k = MigrationKnobs { nw: 1.0, ..MigrationKnobs::EAGER };
        let p = Spitfire::new(k.into(), 5);
        for _ in 0..10_000 {
            assert_eq!(p.dram_eviction(&clean(false), &TIERS), EvictTo::Ssd, "nw = 1 does not admit a clean page");
            assert_eq!(p.dram_eviction(&clean(true), &TIERS), EvictTo::Nvm, "back to its own NVM frame");
        }
        // No coin was drawn: the stream goes on as that of a policy never asked.
        let half = MigrationKnobs { dr: 0.5, nw: 0.5, ..MigrationKnobs::EAGER };
        let (a, b) = (Spitfire::new(half.into(), 5), Spitfire::new(half.into(), 5));
        for _ in 0..100 {
            assert_eq!(a.dram_eviction(&clean(false), &TIERS), EvictTo::Ssd);
        }
        for _ in 0..1_000 {
            assert_eq!(a.nvm_access(&page(true), false, &TIERS), b.nvm_access(&page(true), false, &TIERS));
        }
    }

    #[test]
    fn a_dirty_victim_goes_to_nvm_with_probability_nw() {
        for (nw, to) in [(0.0, EvictTo::Ssd), (1.0, EvictTo::Nvm)] {
            for rule in [CleanVictims::Drop, CleanVictims::ToNvm] {
                let k = MigrationKnobs { nw, ..MigrationKnobs::EAGER };
                let p = Spitfire::new(SpitfireConfig { knobs: k, clean_victims: rule }, 11);
                for _ in 0..10_000 {
                    assert_eq!(p.dram_eviction(&page(false), &TIERS), to, "nw = {nw}, {rule:?}");
                }
            }
        }
    }

    #[test]
    fn clean_to_nvm_admits_clean_victims_with_probability_nw() {
        for (nw, to) in [(0.0, EvictTo::Ssd), (1.0, EvictTo::Nvm)] {
            let k = MigrationKnobs { nw, ..MigrationKnobs::EAGER };
            let p = Spitfire::new(SpitfireConfig { knobs: k, clean_victims: CleanVictims::ToNvm }, 13);
            for _ in 0..10_000 {
                assert_eq!(p.dram_eviction(&clean(false), &TIERS), to, "clean-to-nvm, nw = {nw}");
            }
        }
        // The same coins as a dirty victim's: the variant repeats the old rule's stream.
        let k = MigrationKnobs { nw: 0.3, ..MigrationKnobs::EAGER };
        let to_nvm = SpitfireConfig { knobs: k, clean_victims: CleanVictims::ToNvm };
        let (a, b) = (Spitfire::new(to_nvm, 17), Spitfire::new(to_nvm, 17));
        for _ in 0..1_000 {
            assert_eq!(a.dram_eviction(&clean(false), &TIERS), b.dram_eviction(&page(false), &TIERS));
        }
    }

    #[test]
    fn the_configuration_parses_knobs_and_the_clean_rule() {
        let b = MigrationKnobs::preset("b").unwrap();
        for (s, knobs, rule) in [
            ("", MigrationKnobs::EAGER, CleanVictims::Drop),
            ("b", b, CleanVictims::Drop),
            ("b,clean-to-nvm", b, CleanVictims::ToNvm),
            ("clean-to-nvm", MigrationKnobs::EAGER, CleanVictims::ToNvm),
            ("nw=0.5, clean-to-nvm", MigrationKnobs { nw: 0.5, ..MigrationKnobs::EAGER }, CleanVictims::ToNvm),
        ] {
            let c: SpitfireConfig = s.parse().unwrap();
            assert_eq!(c, SpitfireConfig { knobs, clean_victims: rule }, "{s:?}");
            assert_eq!(c.to_string().parse::<SpitfireConfig>().unwrap(), c, "{s:?} round trip");
        }
        let e = "b,clean-to-ssd".parse::<SpitfireConfig>().unwrap_err().to_string();
        assert!(e.contains("clean-to-ssd"), "{e}");
        // Through the policy's name, as `--policy` gives it.
        let nvcache = crate::policy::NvcacheConfig::default();
        let old = crate::policy::by_name("spitfire:clean-to-nvm", 0, &nvcache, 1).unwrap();
        let new = crate::policy::by_name("spitfire", 0, &nvcache, 1).unwrap();
        assert_eq!(old.dram_eviction(&clean(false), &TIERS), EvictTo::Nvm);
        assert_eq!(new.dram_eviction(&clean(false), &TIERS), EvictTo::Ssd);
    }
}
