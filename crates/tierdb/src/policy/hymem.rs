//! `hymem`: van Renen et al.'s three-tier replacement (SIGMOD 2018, §4.2).
//!
//! Pages read from SSD go to DRAM only. Clock picks DRAM victims. A victim that already
//! has an NVM frame goes back to it. Any other victim is considered for NVM admission:
//! if it is in the *admission set* — it was denied admission recently — it is removed
//! from the set and admitted; otherwise it is added to the set and goes to SSD (written
//! if dirty, dropped if clean). The set is bounded and forgets its oldest entry first,
//! so it holds only pages considered recently: pages swapped out of DRAM again and again
//! reach NVM, pages read once do not pollute it. Clock picks NVM victims too.
//!
//! The paper gives no size for the set; we default to half the NVM frames (a page must
//! come back before as many other pages were denied as half of NVM holds).

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

use super::{Event, EvictTo, MissTarget, NvmAccess, PageInfo, Policy, Tiers};
use crate::ids::PageId;

/// The admission set: a FIFO-bounded set of page ids. `order` may hold stale entries
/// (pages admitted since, or re-added later); an entry counts only while its sequence
/// number is the member's current one.
#[derive(Debug, Default)]
struct AdmissionSet {
    order: VecDeque<(PageId, u64)>,
    members: HashMap<PageId, u64>,
    seq: u64,
}

/// The `hymem` policy: DRAM victims reach NVM only on their second recent eviction,
/// remembered in a bounded admission set (see the module doc).
pub struct Hymem {
    capacity: usize,
    set: Mutex<AdmissionSet>,
}

impl Hymem {
    /// An admission set of at most `capacity_pages` (at least 1).
    pub fn new(capacity_pages: usize) -> Hymem {
        Hymem { capacity: capacity_pages.max(1), set: Mutex::new(AdmissionSet::default()) }
    }

    /// The default set size for an NVM pool of `nvm_frames`.
    pub fn default_capacity(nvm_frames: usize) -> usize {
        (nvm_frames / 2).max(1)
    }

    /// Most pages the admission set holds before it forgets its oldest.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Pages in the admission set now.
    pub fn len(&self) -> usize {
        self.set.lock().members.len()
    }

    /// True if the admission set holds no page.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if page `pid` was denied NVM admission recently and is still in the set: its
    /// next DRAM eviction admits it.
    pub fn contains(&self, pid: PageId) -> bool {
        self.set.lock().members.contains_key(&pid)
    }
}

impl Policy for Hymem {
    fn name(&self) -> &'static str {
        "hymem"
    }

    fn ssd_miss(&self, _page: &PageInfo, _tiers: &Tiers) -> MissTarget {
        MissTarget::Dram
    }

    fn nvm_access(&self, _page: &PageInfo, _write: bool, _tiers: &Tiers) -> NvmAccess {
        NvmAccess::Migrate
    }

    fn dram_eviction(&self, page: &PageInfo, tiers: &Tiers) -> EvictTo {
        if !tiers.has_nvm {
            return EvictTo::Ssd;
        }
        if page.nvm_copy || !tiers.has_ssd {
            return EvictTo::Nvm;
        }
        let mut set = self.set.lock();
        if set.members.remove(&page.pid).is_some() {
            // Its entry in `order` is now stale and skipped when it reaches the front.
            return EvictTo::Nvm;
        }
        // Bound the set: forget the oldest members first.
        while set.members.len() >= self.capacity {
            let Some((old, seq)) = set.order.pop_front() else { break };
            if set.members.get(&old) == Some(&seq) {
                set.members.remove(&old);
            }
        }
        // Stale entries are bounded too: compact when `order` passes twice the capacity.
        if set.order.len() >= 2 * self.capacity {
            let AdmissionSet { order, members, .. } = &mut *set;
            order.retain(|(p, s)| members.get(p) == Some(s));
        }
        set.seq += 1;
        let seq = set.seq;
        set.members.insert(page.pid, seq);
        set.order.push_back((page.pid, seq));
        EvictTo::Ssd
    }

    fn observe(&self, event: Event) {
        if let Event::Freed(pid) = event {
            self.set.lock().members.remove(&pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Lsn;

    const TIERS: Tiers = Tiers { has_nvm: true, has_ssd: true, dram_frames: 4, nvm_frames: 8 };

    fn page(pid: u64) -> PageInfo {
        PageInfo {
            pid: PageId(pid),
            dirty: false,
            nvm_copy: false,
            referenced: false,
            first_update_lsn: Lsn::NONE,
            page_lsn: Lsn::NONE,
            last_flush_lsn: Lsn::NONE,
        }
    }

    #[test]
    fn second_eviction_is_admitted() {
        let h = Hymem::new(4);
        assert_eq!(h.dram_eviction(&page(1), &TIERS), EvictTo::Ssd);
        assert!(h.contains(PageId(1)));
        assert_eq!(h.dram_eviction(&page(1), &TIERS), EvictTo::Nvm);
        assert!(!h.contains(PageId(1)));
        assert_eq!(h.dram_eviction(&page(1), &TIERS), EvictTo::Ssd, "admission consumed the set entry");
    }

    #[test]
    fn nvm_backed_pages_go_back_to_nvm() {
        let h = Hymem::new(4);
        let p = PageInfo { nvm_copy: true, ..page(5) };
        assert_eq!(h.dram_eviction(&p, &TIERS), EvictTo::Nvm);
        assert!(h.is_empty());
    }

    #[test]
    fn the_set_is_bounded_and_forgets_the_oldest() {
        let h = Hymem::new(3);
        for pid in 1..=5 {
            assert_eq!(h.dram_eviction(&page(pid), &TIERS), EvictTo::Ssd);
        }
        assert_eq!(h.len(), 3);
        assert!(!h.contains(PageId(1)) && !h.contains(PageId(2)));
        assert_eq!(h.dram_eviction(&page(1), &TIERS), EvictTo::Ssd, "1 was forgotten");
        assert_eq!(h.dram_eviction(&page(5), &TIERS), EvictTo::Nvm);
        // Churn with stale entries keeps `order` bounded.
        for round in 0..1000 {
            let pid = 100 + round % 7;
            h.dram_eviction(&page(pid), &TIERS);
        }
        assert!(h.set.lock().order.len() <= 2 * h.capacity());
        assert!(h.len() <= h.capacity());
    }

    #[test]
    fn without_ssd_everything_goes_to_nvm_and_without_nvm_to_ssd() {
        let h = Hymem::new(2);
        let no_ssd = Tiers { has_ssd: false, ..TIERS };
        assert_eq!(h.dram_eviction(&page(1), &no_ssd), EvictTo::Nvm);
        let no_nvm = Tiers { has_nvm: false, ..TIERS };
        assert_eq!(h.dram_eviction(&page(1), &no_nvm), EvictTo::Ssd);
    }
}
