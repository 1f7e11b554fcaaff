//! A model of the CPU's last-level cache for reads made in place in NVM.
//!
//! Loads from the NVM mapping cannot be intercepted, so code that reads NVM in place
//! (`nvm-direct`, and the buffer manager's in-place guards for `spitfire` and SE2)
//! charges its reads to the NVM device as it makes them. On real hardware those loads
//! go through the CPU caches, and a line read again soon costs no NVM access; without a
//! model every load would pay NVM latency. The model is a direct-mapped tag array of
//! the configured size (rounded down to a power of two; 0 turns it off and charges
//! every read): a line whose tag is present is a hit and costs nothing; a miss installs
//! it. Tags are relaxed atomics: threads racing on a set only blur the model.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::device::NvmRegion;
use crate::limits::CACHE_LINE_BYTES;

const LINE: u64 = CACHE_LINE_BYTES as u64;

/// The last-level cache the charge model assumes by default (a server CPU's of the
/// Optane era, as in the three-tier paper's machine).
pub const CPU_CACHE_MODEL_DEFAULT_BYTES: u64 = 32 << 20;
/// The largest modelled cache (its tags take an eighth of it in DRAM).
pub const CPU_CACHE_MODEL_MAX_BYTES: u64 = 1 << 30;

/// The dependent NVM line reads a binary search of a node is charged with: about one
/// line per halving until the range fits in a line, plus the header — log2(page /
/// line) for the page size.
pub fn search_lines(page_size: usize) -> u32 {
    (page_size / CACHE_LINE_BYTES).max(2).ilog2()
}

/// Per set, the region line number + 1 it holds (0: none).
pub struct CpuCacheModel {
    tags: Box<[AtomicU64]>,
}

impl CpuCacheModel {
    /// A model of a cache of `bytes` (0: no model).
    ///
    /// # Panics
    /// Above [`CPU_CACHE_MODEL_MAX_BYTES`] (callers check configurations first).
    pub fn new(bytes: u64) -> CpuCacheModel {
        assert!(bytes <= CPU_CACHE_MODEL_MAX_BYTES, "CPU cache model of {bytes} bytes");
        let sets = if bytes < LINE { 0 } else { 1usize << (bytes / LINE).ilog2() };
        CpuCacheModel { tags: (0..sets).map(|_| AtomicU64::new(0)).collect() }
    }

    /// The modelled cache's size in bytes.
    #[expect(dead_code, reason = "no caller since the module stopped being public")]
    pub fn bytes(&self) -> u64 {
        self.tags.len() as u64 * LINE
    }

    /// Charges a read of region bytes `at..at + len` to `nvm` for the lines the model
    /// misses: one device read covering them (the lines of one access arrive together).
    #[inline]
    pub fn charge(&self, nvm: &NvmRegion, at: u64, len: u64) {
        debug_assert!(len > 0);
        let (first, last) = (at / LINE, (at + len - 1) / LINE);
        let sets = self.tags.len();
        if sets == 0 {
            nvm.charge_read(first * LINE, (last + 1 - first) * LINE);
            return;
        }
        let mut missed = 0u64;
        for line in first..=last {
            missed += u64::from(self.install(line, sets));
        }
        if missed > 0 {
            // From the first line's start: `at` may sit inside a line, and `at` plus
            // whole lines can run past the region's last line.
            nvm.charge_read(first * LINE, missed * LINE);
        }
    }

    /// Charges a read of `at..at + len` followed by a software prefetch of
    /// `at + len..at + len + ahead`: the prefetched lines ride with the read when it goes
    /// to NVM (they are charged in the same device read and installed, so later loads of
    /// them hit); when every line of the read hits, the read costs nothing and its
    /// prefetch is not modelled (the lines next to cached ones are mostly cached too,
    /// and a prefetch stalls nothing).
    #[inline]
    pub fn charge_with_prefetch(&self, nvm: &NvmRegion, at: u64, len: u64, ahead: u64) {
        debug_assert!(len > 0);
        let sets = self.tags.len();
        if sets == 0 || ahead == 0 {
            return self.charge(nvm, at, len);
        }
        let (first, last) = (at / LINE, (at + len - 1) / LINE);
        let mut missed = 0u64;
        for line in first..=last {
            missed += u64::from(self.install(line, sets));
        }
        if missed == 0 {
            return;
        }
        let last_ahead = (at + len + ahead - 1) / LINE;
        for line in last + 1..=last_ahead {
            missed += u64::from(self.install(line, sets));
        }
        nvm.charge_read(first * LINE, missed * LINE);
    }

    /// Installs `line`; whether it missed.
    #[inline]
    fn install(&self, line: u64, sets: usize) -> bool {
        let set = &self.tags[(line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24) as usize & (sets - 1)];
        if set.load(Ordering::Relaxed) != line + 1 {
            set.store(line + 1, Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// Charges the loads of a binary search of the node at region offset `page_at`:
    /// the header line, then one line per halving of the page (the same lines each
    /// time, so a hot node's stay in the model), each a dependent read.
    pub fn charge_search(&self, nvm: &NvmRegion, page_at: u64, page_size: usize) {
        let lines = page_size as u64 / LINE;
        self.charge(nvm, page_at, LINE);
        for k in 1..search_lines(page_size) {
            self.charge(nvm, page_at + (lines >> k) * LINE, LINE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ByteSize;
    use crate::device::NvmConfig;

    /// A read that starts inside a line near the region's end is charged as the whole
    /// lines it touches, which end at the region's end (the charge used to start at the
    /// unaligned offset and ran past it).
    #[test]
    fn an_unaligned_read_at_the_end_of_the_region_is_charged_within_it() {
        let dir = tempfile::tempdir().unwrap();
        let size = 64u64 << 10;
        let nvm = NvmRegion::open(&NvmConfig::new(dir.path().join("r.nvm"), ByteSize(size))).unwrap();
        let at = size - 100; // inside the second-to-last line
        for bytes in [0, 1 << 20] {
            let model = CpuCacheModel::new(bytes);
            model.charge(&nvm, at, 100);
            model.charge_with_prefetch(&nvm, at - 4096, 100, 0);
        }
        // A read whose prefetch reaches the last line (callers keep it in the page).
        let model = CpuCacheModel::new(1 << 20);
        model.charge_with_prefetch(&nvm, at - 64, 36, 128);
        // The lines up to the region's end are cached now: nothing more is read.
        let before = nvm.core().stats().snapshot();
        model.charge(&nvm, at, 100);
        assert_eq!(nvm.core().stats().snapshot(), before);
    }
}
