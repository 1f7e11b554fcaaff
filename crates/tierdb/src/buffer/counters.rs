//! The buffer manager's counters: hits per tier and pages moved between tiers.
//!
//! Striped like the device counters (`device::stats`): each thread bumps its own
//! cache-padded row with a relaxed load and store, so the hit path does no locked
//! instruction; a snapshot sums the rows.

use serde::{Deserialize, Serialize};

use crate::device::stats::Striped;

/// One counter of [`BufferCounters`].
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub enum Count {
    DramHits,
    NvmHits,
    SsdReads,
    NvmToDram,
    DramToNvm,
    NvmAdmissions,
    DramToSsd,
    NvmToSsd,
    DramEvictions,
    NvmEvictions,
    CleanDrops,
    Allocations,
    Frees,
    NvmLinesLoaded,
    NvmLinesWritten,
    LineFaults,
    MiniAllocations,
    MiniPromotions,
    Swizzles,
    Unswizzles,
    NvmReadsInPlace,
    NvmWritesInPlace,
    NvmCorruptDropped,
}
const COUNTS: usize = Count::NvmCorruptDropped as usize + 1;

pub struct BufferCounters {
    counts: Striped<COUNTS>,
}

/// Buffer counters at one moment, or the difference between two moments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    /// Fixes that found the page in DRAM.
    pub dram_hits: u64,
    /// Fixes that found the page in NVM (and copied it to DRAM).
    pub nvm_hits: u64,
    /// Fixes that read the page from SSD.
    pub ssd_reads: u64,
    /// Pages copied NVM → DRAM.
    pub nvm_to_dram_pages: u64,
    /// Pages written DRAM → NVM (admissions and write-backs of dirty NVM-backed pages).
    pub dram_to_nvm_pages: u64,
    /// DRAM victims given a new NVM frame.
    pub nvm_admissions: u64,
    /// Dirty pages written DRAM → SSD.
    pub dram_to_ssd_pages: u64,
    /// Dirty pages written NVM → SSD on NVM eviction.
    pub nvm_to_ssd_pages: u64,
    pub dram_evictions: u64,
    pub nvm_evictions: u64,
    /// DRAM evictions that wrote nothing (clean, and not newly admitted to NVM).
    pub clean_drops: u64,
    pub allocations: u64,
    pub frees: u64,
    /// 64-byte lines copied NVM → DRAM: a whole-page load counts all its lines.
    pub nvm_lines_loaded: u64,
    /// 64-byte lines written DRAM → NVM: a whole-page write counts all its lines.
    pub nvm_lines_written: u64,
    /// Accesses that found lines of a cache-line-grained page missing and loaded them.
    pub line_faults: u64,
    /// Mini pages given to NVM-backed pages.
    pub mini_allocations: u64,
    /// Mini pages that overflowed and became full pages.
    pub mini_promotions: u64,
    /// Child references in inner nodes turned into frame references.
    pub swizzles: u64,
    /// Frame references turned back into page ids (eviction, restructuring).
    pub unswizzles: u64,
    /// Fixes of an NVM page served in place for reading (DRAM bypassed, Spitfire's Dr).
    #[serde(default)]
    pub nvm_reads_in_place: u64,
    /// Fixes of an NVM page served in place for writing (changed lines persisted in
    /// NVM at unfix, Spitfire's Dw).
    #[serde(default)]
    pub nvm_writes_in_place: u64,
    /// Clean NVM frames whose page failed its data CRC when read: dropped, the page read
    /// from SSD instead (`docs/checksums.md`).
    #[serde(default)]
    pub nvm_corrupt_dropped: u64,
}

impl BufferStats {
    /// `self - earlier`, counter by counter.
    pub fn since(&self, earlier: &BufferStats) -> BufferStats {
        let (a, b) = (self.to_array(), earlier.to_array());
        BufferStats::from_array(std::array::from_fn(|i| a[i].wrapping_sub(b[i])))
    }

    /// Fixes of any kind.
    pub fn fixes(&self) -> u64 {
        self.dram_hits + self.nvm_hits + self.ssd_reads
    }

    fn to_array(self) -> [u64; COUNTS] {
        [
            self.dram_hits,
            self.nvm_hits,
            self.ssd_reads,
            self.nvm_to_dram_pages,
            self.dram_to_nvm_pages,
            self.nvm_admissions,
            self.dram_to_ssd_pages,
            self.nvm_to_ssd_pages,
            self.dram_evictions,
            self.nvm_evictions,
            self.clean_drops,
            self.allocations,
            self.frees,
            self.nvm_lines_loaded,
            self.nvm_lines_written,
            self.line_faults,
            self.mini_allocations,
            self.mini_promotions,
            self.swizzles,
            self.unswizzles,
            self.nvm_reads_in_place,
            self.nvm_writes_in_place,
            self.nvm_corrupt_dropped,
        ]
    }

    fn from_array(a: [u64; COUNTS]) -> BufferStats {
        BufferStats {
            dram_hits: a[Count::DramHits as usize],
            nvm_hits: a[Count::NvmHits as usize],
            ssd_reads: a[Count::SsdReads as usize],
            nvm_to_dram_pages: a[Count::NvmToDram as usize],
            dram_to_nvm_pages: a[Count::DramToNvm as usize],
            nvm_admissions: a[Count::NvmAdmissions as usize],
            dram_to_ssd_pages: a[Count::DramToSsd as usize],
            nvm_to_ssd_pages: a[Count::NvmToSsd as usize],
            dram_evictions: a[Count::DramEvictions as usize],
            nvm_evictions: a[Count::NvmEvictions as usize],
            clean_drops: a[Count::CleanDrops as usize],
            allocations: a[Count::Allocations as usize],
            frees: a[Count::Frees as usize],
            nvm_lines_loaded: a[Count::NvmLinesLoaded as usize],
            nvm_lines_written: a[Count::NvmLinesWritten as usize],
            line_faults: a[Count::LineFaults as usize],
            mini_allocations: a[Count::MiniAllocations as usize],
            mini_promotions: a[Count::MiniPromotions as usize],
            swizzles: a[Count::Swizzles as usize],
            unswizzles: a[Count::Unswizzles as usize],
            nvm_reads_in_place: a[Count::NvmReadsInPlace as usize],
            nvm_writes_in_place: a[Count::NvmWritesInPlace as usize],
            nvm_corrupt_dropped: a[Count::NvmCorruptDropped as usize],
        }
    }
}

impl Default for BufferCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl BufferCounters {
    pub fn new() -> BufferCounters {
        BufferCounters { counts: Striped::new() }
    }

    #[inline]
    pub fn bump(&self, c: Count) {
        self.counts.row().add(c as usize, 1);
    }

    #[inline]
    pub fn add(&self, c: Count, n: u64) {
        self.counts.row().add(c as usize, n);
    }

    pub fn snapshot(&self) -> BufferStats {
        BufferStats::from_array(self.counts.sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_threads_add_up() {
        let c = BufferCounters::new();
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.bump(Count::DramHits);
                    }
                    c.bump(Count::Frees);
                });
            }
        });
        let snap = c.snapshot();
        assert_eq!((snap.dram_hits, snap.frees), (3000, 3));
        assert_eq!(snap.since(&BufferStats { dram_hits: 1000, ..Default::default() }).dram_hits, 2000);
    }
}
