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
//! - a page evicted from DRAM that has no NVM frame is admitted to NVM with probability
//!   `nw` (➎), else it goes to SSD (➓: written if dirty, dropped if clean); a page that
//!   has an NVM frame goes back to it;
//! - clock (second chance) picks victims in both pools.
//!
//! The knobs can be changed while the engine runs (they live in a [`KnobCell`] that the
//! policy's [`Shape`] hands to the buffer manager), which is what
//! the online tuner does between epochs. The coins come from one seeded SplitMix64
//! stream shared by all threads (an atomic counter, no lock): a single-threaded run with
//! the same seed makes the same decisions in the engine and in the simulator.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{EvictTo, KnobCell, MigrationKnobs, MissTarget, NvmAccess, PageInfo, Policy, Shape, Tiers};

/// The golden-ratio increment of SplitMix64.
const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The `spitfire` policy: every migration decided by a coin weighted by one of the
/// [`MigrationKnobs`], which can change while it runs.
pub struct Spitfire {
    /// The four knobs, shared with whoever tunes them.
    knobs: Arc<KnobCell>,
    rng: AtomicU64,
}

impl Spitfire {
    /// A policy with `knobs` (taken as given: a knob at or below 0 never fires, one at
    /// or above 1 always does) whose coins come from a SplitMix64 stream seeded with
    /// `seed`.
    pub fn new(knobs: MigrationKnobs, seed: u64) -> Spitfire {
        Spitfire { knobs: Arc::new(KnobCell::new(knobs)), rng: AtomicU64::new(seed) }
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
        if page.nvm_copy || self.coin(self.knob(3)) { EvictTo::Nvm } else { EvictTo::Ssd }
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
        let p = Spitfire::new(MigrationKnobs { dr: 0.0, dw: 1.0, nr: 0.0, nw: 0.0 }, 1);
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
        let (a, b) = (Spitfire::new(k, 9), Spitfire::new(k, 9));
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
        let p = Spitfire::new(MigrationKnobs::EAGER, 3);
        assert_eq!(p.nvm_access(&page(true), false, &TIERS), NvmAccess::Migrate);
        let b = MigrationKnobs::preset("b").unwrap();
        let cell = p.shape().knobs.expect("spitfire has knobs");
        cell.set(MigrationKnobs { dr: 0.0, ..b });
        assert_eq!(cell.get(), MigrationKnobs { dr: 0.0, ..b });
        assert_eq!(p.nvm_access(&page(true), false, &TIERS), NvmAccess::InPlace);
        let no_nvm = Tiers { has_nvm: false, ..TIERS };
        assert_eq!(p.ssd_miss(&page(false), &no_nvm), MissTarget::Dram);
    }
}
