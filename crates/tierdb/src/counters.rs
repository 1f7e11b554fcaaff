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
    /// Fixes that found the page in DRAM ([`BufferStats::dram_hits`]).
    DramHits,
    /// Fixes served from NVM, copied to DRAM or read in place ([`BufferStats::nvm_hits`]).
    NvmHits,
    /// Pages read from SSD ([`BufferStats::ssd_reads`]).
    SsdReads,
    /// Whole pages copied NVM → DRAM ([`BufferStats::nvm_to_dram_pages`]).
    NvmToDram,
    /// Whole pages written DRAM → NVM ([`BufferStats::dram_to_nvm_pages`]).
    DramToNvm,
    /// Pages given a new NVM frame ([`BufferStats::nvm_admissions`]).
    NvmAdmissions,
    /// Dirty pages written DRAM → SSD ([`BufferStats::dram_to_ssd_pages`]).
    DramToSsd,
    /// Dirty pages written NVM → SSD ([`BufferStats::nvm_to_ssd_pages`]).
    NvmToSsd,
    /// Pages evicted from DRAM ([`BufferStats::dram_evictions`]).
    DramEvictions,
    /// Pages evicted from NVM ([`BufferStats::nvm_evictions`]).
    NvmEvictions,
    /// DRAM evictions that wrote nothing ([`BufferStats::clean_drops`]).
    CleanDrops,
    /// Pages allocated ([`BufferStats::allocations`]).
    Allocations,
    /// Pages freed ([`BufferStats::frees`]).
    Frees,
    /// 64-byte lines copied NVM → DRAM ([`BufferStats::nvm_lines_loaded`]); added in bulk.
    NvmLinesLoaded,
    /// 64-byte lines written DRAM → NVM ([`BufferStats::nvm_lines_written`]); added in bulk.
    NvmLinesWritten,
    /// Accesses that had to load missing lines ([`BufferStats::line_faults`]).
    LineFaults,
    /// Mini pages handed out ([`BufferStats::mini_allocations`]).
    MiniAllocations,
    /// Mini pages promoted to full pages ([`BufferStats::mini_promotions`]).
    MiniPromotions,
    /// Child references turned into frame references ([`BufferStats::swizzles`]).
    Swizzles,
    /// Frame references turned back into page ids ([`BufferStats::unswizzles`]).
    Unswizzles,
    /// Fixes served in place in NVM for reading ([`BufferStats::nvm_reads_in_place`]).
    NvmReadsInPlace,
    /// Fixes served in place in NVM for writing ([`BufferStats::nvm_writes_in_place`]).
    NvmWritesInPlace,
    /// Clean NVM frames dropped for a failed data CRC ([`BufferStats::nvm_corrupt_dropped`]).
    NvmCorruptDropped,
    /// Nanoseconds DRAM evictions spent writing dirty victims down
    /// ([`BufferStats::evict_write_ns`]); added in bulk.
    EvictWriteNanos,
    /// DRAM frames the page provider freed ahead of misses
    /// ([`BufferStats::provider_frames`]).
    ProviderFrames,
    /// Nanoseconds the page provider spent writing victims down
    /// ([`BufferStats::provider_write_ns`]); added in bulk.
    ProviderWriteNanos,
    /// Evictions of the page provider that failed ([`BufferStats::provider_errors`]).
    ProviderErrors,
    /// Pages read from SSD ahead of the fixes that need them
    /// ([`BufferStats::prefetch_reads`]).
    PrefetchReads,
    /// NVM frames the page provider freed ahead ([`BufferStats::provider_nvm_frames`]).
    ProviderNvmFrames,
    /// Child fixes that followed a swizzled reference ([`BufferStats::child_fixes_swizzled`]).
    ChildFixesSwizzled,
    /// Child fixes by page id that found a full DRAM frame
    /// ([`BufferStats::child_fixes_table_full`]).
    ChildFixesTableFull,
    /// Child fixes by page id that found a mini page ([`BufferStats::child_fixes_table_mini`]).
    ChildFixesTableMini,
}
const COUNTS: usize = Count::ChildFixesTableMini as usize + 1;

/// The buffer manager's live counters, one [`Count`] each, striped per thread: bumping
/// one costs no locked instruction; [`snapshot`](Self::snapshot) sums the stripes into a
/// [`BufferStats`].
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
    /// Pages that left DRAM (written down, kept in NVM, or dropped clean).
    pub dram_evictions: u64,
    /// Pages evicted from NVM by its replacement (written to SSD first if dirty).
    pub nvm_evictions: u64,
    /// DRAM evictions that wrote nothing (clean, and not newly admitted to NVM).
    pub clean_drops: u64,
    /// Pages allocated (new page ids handed out, and pages recovery found allocated
    /// that no tier held).
    pub allocations: u64,
    /// Pages freed.
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
    /// Nanoseconds the threads that evicted from DRAM spent writing dirty victims down
    /// (the write-ahead force of the log, the NVM or SSD writes, the double-write copies
    /// and their syncs): foreground time a miss waited for writes.
    #[serde(default)]
    pub evict_write_ns: u64,
    /// DRAM frames the page provider ([`BufferManager::provide_pages`](crate::buffer::BufferManager::provide_pages))
    /// freed ahead of the misses that took them.
    #[serde(default)]
    pub provider_frames: u64,
    /// Nanoseconds the page provider spent writing victims down: background time, not
    /// in [`evict_write_ns`](Self::evict_write_ns).
    #[serde(default)]
    pub provider_write_ns: u64,
    /// Evictions of the page provider that failed (their pages stayed where they were;
    /// its report names the errors).
    #[serde(default)]
    pub provider_errors: u64,
    /// Pages read from SSD ahead of the lookups that need them (a prefetch,
    /// [`PageSource::prefetch_children`](crate::PageSource::prefetch_children)), not in
    /// [`ssd_reads`](Self::ssd_reads): the fix that then finds the page counts a DRAM
    /// hit. Pages read from SSD are the two together.
    #[serde(default)]
    pub prefetch_reads: u64,
    /// NVM frames the page provider freed ahead of the DRAM evictions and SSD misses
    /// that took them.
    #[serde(default)]
    pub provider_nvm_frames: u64,
    /// Fixes of a B+-tree child, from a parent in DRAM, that followed a swizzled
    /// reference (no page-table lookup).
    #[serde(default)]
    pub child_fixes_swizzled: u64,
    /// Fixes of a child by its page id (the parent's reference not swizzled) that found
    /// the child in a full DRAM frame; the fix tries to swizzle the reference.
    #[serde(default)]
    pub child_fixes_table_full: u64,
    /// Fixes of a child by its page id that found it in a DRAM mini page: mini pages
    /// are never swizzled, so every such fix looks the page table up.
    #[serde(default)]
    pub child_fixes_table_mini: u64,
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
            self.evict_write_ns,
            self.provider_frames,
            self.provider_write_ns,
            self.provider_errors,
            self.prefetch_reads,
            self.provider_nvm_frames,
            self.child_fixes_swizzled,
            self.child_fixes_table_full,
            self.child_fixes_table_mini,
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
            evict_write_ns: a[Count::EvictWriteNanos as usize],
            provider_frames: a[Count::ProviderFrames as usize],
            provider_write_ns: a[Count::ProviderWriteNanos as usize],
            provider_errors: a[Count::ProviderErrors as usize],
            prefetch_reads: a[Count::PrefetchReads as usize],
            provider_nvm_frames: a[Count::ProviderNvmFrames as usize],
            child_fixes_swizzled: a[Count::ChildFixesSwizzled as usize],
            child_fixes_table_full: a[Count::ChildFixesTableFull as usize],
            child_fixes_table_mini: a[Count::ChildFixesTableMini as usize],
        }
    }
}

impl Default for BufferCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl BufferCounters {
    /// All counters at zero.
    pub fn new() -> BufferCounters {
        BufferCounters { counts: Striped::new() }
    }

    /// Adds 1 to counter `c` (in the calling thread's stripe).
    #[inline]
    pub fn bump(&self, c: Count) {
        self.counts.row().add(c as usize, 1);
    }

    /// Adds `n` to counter `c` (in the calling thread's stripe).
    #[inline]
    pub fn add(&self, c: Count, n: u64) {
        self.counts.row().add(c as usize, n);
    }

    /// The sum of all stripes now. Not atomic across counters: bumps racing with the
    /// snapshot may be in some counters and not yet in others.
    pub fn snapshot(&self) -> BufferStats {
        BufferStats::from_array(self.counts.sum())
    }
}

/// Counters of a page source and of its devices: what the buffer manager and
/// `nvm-direct` report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TierStats {
    /// The buffer manager's own counters (hits, moves between tiers).
    pub buffer: BufferStats,
    /// The NVM region's device counters, when there is NVM.
    pub nvm: Option<crate::device::StatsSnapshot>,
    /// The SSD page file (in-place page reads and writes, syncs).
    pub ssd: Option<crate::device::StatsSnapshot>,
    /// The SSD page file's double-write area, when it is on in a file on SSD.
    pub ssd_double_write: Option<crate::device::StatsSnapshot>,
    /// The double-write area's NVM region, when it is on in NVM (`DoubleWriteMode::Nvm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvm_double_write: Option<crate::device::StatsSnapshot>,
    /// The NVM cache's counters, for a policy that runs NVM as a cache (`nvcache`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvm_cache: Option<crate::policy::NvmCacheStats>,
    /// `nvsql`'s admission and NVM replacement counters (NV-SQL Table 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvsql: Option<crate::policy::NvsqlStats>,
}

impl TierStats {
    /// `self - earlier`, part by part; a part `earlier` lacks is taken whole from `self`.
    pub fn since(&self, earlier: &TierStats) -> TierStats {
        let d = |a: &Option<crate::device::StatsSnapshot>, b: &Option<crate::device::StatsSnapshot>| match (a, b) {
            (Some(a), Some(b)) => Some(a.since(b)),
            (a, _) => *a,
        };
        TierStats {
            buffer: self.buffer.since(&earlier.buffer),
            nvm: d(&self.nvm, &earlier.nvm),
            ssd: d(&self.ssd, &earlier.ssd),
            ssd_double_write: d(&self.ssd_double_write, &earlier.ssd_double_write),
            nvm_double_write: d(&self.nvm_double_write, &earlier.nvm_double_write),
            nvm_cache: match (&self.nvm_cache, &earlier.nvm_cache) {
                (Some(a), Some(b)) => Some(a.since(b)),
                (a, _) => *a,
            },
            nvsql: match (&self.nvsql, &earlier.nvsql) {
                (Some(a), Some(b)) => Some(a.since(b)),
                (a, _) => *a,
            },
        }
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
