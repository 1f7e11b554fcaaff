//! The buffer manager's invariants, checked by tests and simulations: every page in at
//! most one DRAM and one NVM frame, the page table agreeing with the frames, the free list
//! disjoint from resident pages.

use crate::buffer::table::Entry;
use crate::ids::PageId;
use crate::page::frame::FrameId;
use crate::page::frame::MINI_BLOCK;
use crate::page::frame::NO_PAGE;
use std::sync::atomic::Ordering;

use super::BufferManager;

impl BufferManager {
    /// Checks the invariants of the module doc. Expensive; for tests, with no other
    /// thread running.
    ///
    /// # Panics
    /// On a violated invariant, naming it.
    pub fn check_invariants(&self) {
        let mut in_nvm = std::collections::HashMap::new();
        if let Some(nvm) = &self.nvm {
            for n in nvm.slots() {
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
            let n = m.nvm_slot();
            assert!(n.is_some() && in_nvm.get(&pid) == n.as_ref(), "mini page {i} of {pid} names NVM frame {n:?}");
            let lines = m.lines();
            assert!(lines.windows(2).all(|w| w[0] < w[1]), "mini page {i}: slot map {lines:?} not sorted");
        }
        for i in 0..self.frames.len() {
            let meta = self.frames.meta(FrameId::from_index(i));
            assert!(!meta.latch.is_held(), "frame {i} is still latched");
            let pid = meta.pid();
            if pid == NO_PAGE || pid == MINI_BLOCK {
                continue;
            }
            assert!(
                meta.resident_all.load(Ordering::Relaxed) || meta.nvm_slot().is_some(),
                "frame {i} is partly resident without an NVM copy"
            );
            let pid = PageId(pid);
            assert!(in_dram.insert(pid, i).is_none(), "{pid} in two DRAM frames");
            assert_eq!(self.table.get(pid).unwrap(), Entry::Dram(FrameId::from_index(i)), "table entry of {pid}");
            if let Some(n) = meta.nvm_slot() {
                assert_eq!(in_nvm.get(&pid), Some(&n), "DRAM frame {i} of {pid} names NVM frame {n}");
            }
        }
        for (pid, e) in self.table.resident() {
            match e {
                Entry::Dram(f) => assert_eq!(in_dram.get(&pid), Some(&f.index()), "{pid}"),
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
