//! Limits and tunables of the whole engine, in one place.
//!
//! Every size, count and loop bound that another module relies on is a named constant
//! here, and the relationships between them are checked at compile time.

/// Bytes in one CPU cache line: the unit of NVM access, flushing and wear counting.
pub const CACHE_LINE_BYTES: usize = 64;

/// The smallest database page size.
pub const PAGE_SIZE_MIN_BYTES: usize = 4 * 1024;
/// The page size configurations use unless told otherwise.
pub const PAGE_SIZE_DEFAULT_BYTES: usize = 16 * 1024;
/// The largest database page size.
pub const PAGE_SIZE_MAX_BYTES: usize = 64 * 1024;

/// Alignment of buffers used for `O_DIRECT` I/O (the largest logical block size we
/// expect of a block device) and of DRAM frames.
pub const IO_ALIGN_BYTES: usize = 4096;

/// The operating system's page size assumed for `msync` and `mbind` alignment.
pub const OS_PAGE_BYTES: usize = 4096;

/// Upper bounds on device sizes: a bad config fails fast instead of reserving absurd
/// amounts of memory or disk. This one: the largest DRAM arena, bytes.
pub const DRAM_ARENA_BYTES_MAX: u64 = 1 << 40; // 1 TiB
/// The largest NVM region, bytes.
pub const NVM_REGION_BYTES_MAX: u64 = 1 << 42; // 4 TiB
/// The most pages an SSD page file may hold (page ids stay below it; a page seal
/// stores 40 bits of page id).
pub const SSD_PAGES_MAX: u64 = 1 << 36;

/// The superblock lives in the first bytes of SSD page 0, in two slots of this size.
pub const SUPERBLOCK_SLOT_BYTES: usize = 512;
/// Superblock slots, written alternately by generation.
pub const SUPERBLOCK_SLOTS: usize = 2;

/// The longest single busy-wait of `spin` emulation; a longer modelled cost is a bug
/// in a profile or in a cost computation, and is cut short.
pub const SPIN_WAIT_NS_MAX: u64 = 100_000_000;

/// How long start-up calibration of the time-stamp counter may take.
pub const TSC_CALIBRATION_NS: u64 = 20_000_000;

/// Stripes of the per-device statistics counters (threads pick one; see `stats`).
pub const STATS_STRIPES: usize = 16;

/// Bounds on the values a device profile may hold: the longest latency, persist or
/// interference window, ns.
pub const PROFILE_LATENCY_NS_MAX: f64 = 1e9; // one second
/// The highest bandwidth a profile may give, GB/s.
pub const PROFILE_BANDWIDTH_GB_S_MAX: f64 = 10_000.0;
/// The largest write-to-read interference factor a profile may give.
pub const PROFILE_INTERFERENCE_MAX: f64 = 100.0;
/// The largest media access granularity a profile may give, bytes.
pub const PROFILE_GRANULARITY_BYTES_MAX: u64 = 1 << 20;

/// How deep `inherits` chains of device profiles may go.
pub const PROFILE_INHERIT_DEPTH_MAX: usize = 8;

/// Rounds of a clock hand over its pool before the search for a victim gives up
/// (every frame fixed or moving is a bug or an undersized pool, not a wait).
pub const CLOCK_ROUNDS_MAX: usize = 4;

/// The most DRAM victims evicted together when one of them must be written to SSD
/// (vmcache evicts in batches of 64): their dirty pages go out in one batch of writes,
/// sorted and coalesced into runs of consecutive pages, so a miss pays for a write
/// once per batch instead of once per page. The default of
/// [`BufferConfig::evict_batch`](crate::buffer::BufferConfig::evict_batch).
pub const EVICT_BATCH_DEFAULT: usize = 64;
/// Frames of the DRAM pool per page of an eviction batch: a pool of fewer than this
/// many frames per batch page evicts smaller batches (and one page at a time below
/// twice this many frames), so that a batch never empties a small pool.
pub const EVICT_BATCH_FRAMES_PER_PAGE: usize = 32;
/// Frames the clock visits per page of an eviction batch before it writes the
/// batch it has (the other frames being fixed, referenced or parents).
pub const EVICT_BATCH_VISITS_PER_PAGE: usize = 4;
/// The page provider ([`BufferManager::provide_pages`](crate::buffer::BufferManager::provide_pages))
/// keeps one DRAM frame in this many free (at least two eviction batches, at most a
/// quarter of the pool): 4,096 frames (16 MiB) of a 1 GiB pool of 4 KiB pages.
pub const PROVIDER_FREE_FRAMES_DIVISOR: usize = 64;
/// How long the page provider sleeps when the free frames are enough, or no frame
/// could be evicted: a miss that finds none free wakes it at once.
pub const PROVIDER_IDLE_MICROS: u64 = 500;
/// How long the page provider waits after an eviction failed (a full or failing
/// device) before it tries again, doubled after each failure in a row up to
/// [`PROVIDER_ERROR_BACKOFF_MAX_MILLIS`]; the misses meanwhile evict themselves and
/// report the error to their callers.
pub const PROVIDER_ERROR_BACKOFF_MILLIS: u64 = 20;
/// The longest wait of the page provider between failed evictions.
pub const PROVIDER_ERROR_BACKOFF_MAX_MILLIS: u64 = 1000;
/// The most writes of one batch of page writes in flight at once (io_uring, where the
/// emulation is off): a batch of pages that are not consecutive goes to the device at
/// this queue depth instead of one write after another.
pub const SSD_WRITES_IN_FLIGHT_MAX: usize = 64;
/// The most pages one round of a prefetch
/// ([`PageSource::prefetch_children`](crate::PageSource::prefetch_children)) claims
/// frames for and reads together (a longer batch goes in rounds); never more than a
/// quarter of the DRAM pool.
pub const PREFETCH_PAGES_MAX: usize = SSD_WRITES_IN_FLIGHT_MAX;
/// The most bytes of page images a batch of SSD page writes holds in flight at once
/// (its runs beyond that go in the next group).
pub const SSD_WRITE_BATCH_BYTES_MAX: usize = 8 << 20;
/// The most bytes one write to the SSD page file carries when a batch of page writes
/// holds consecutive pages (a longer run is split).
pub const SSD_WRITE_RUN_BYTES_MAX: usize = 1 << 20;

/// How long a fix waits for a page another thread holds or moves before it reports
/// an error instead of waiting on.
pub const PAGE_BUSY_WAIT_MS_MAX: u64 = 60_000;

/// Default capacity of the page table, in pages (16 TiB of 16 KiB pages).
pub const PAGE_TABLE_PAGES_DEFAULT: u64 = 1 << 30;

/// Seed of a probabilistic policy's coins when the configuration gives none.
pub const POLICY_SEED_DEFAULT: u64 = 42;
/// Entries of one chunk of the page table, which creates its chunks lazily.
pub const PAGE_TABLE_CHUNK_ENTRIES: usize = 1 << 14;

/// The SSD file grows by at least this many pages, or an eighth of its size.
pub const SSD_GROW_PAGES_MIN: u64 = 256;

/// Where every page written to the SSD page file carries its seal (page id and CRC-32C,
/// `device::page_seal`): bytes 48..64, in the first cache line. Every page format keeps
/// them zero (the B+-tree node header and the catalog header reserve them).
pub const PAGE_SEAL_OFFSET: usize = 48;
/// Bytes of a page's seal.
pub const PAGE_SEAL_BYTES: usize = 16;

/// Slots of the double-write area (`device::double_write`): the most pages one batch
/// of protected SSD writes holds, and how many protected writes may go by between two
/// syncs of the page file (128 pages, as InnoDB's doublewrite buffer).
pub const DOUBLE_WRITE_SLOTS: usize = 128;
/// The most slots a double-write area may have (its header counts them).
pub const DOUBLE_WRITE_SLOTS_MAX: usize = 1 << 16;

/// Pages one flush record names (`wal::Kind::PagesFlushed`: 16 bytes each): the buffer
/// manager collects the pages it writes to SSD and logs them this many at a time, so
/// redo can skip the records their SSD copies already hold without reading them.
pub const FLUSH_NOTES_PER_RECORD: usize = 64;

/// Bytes of the header block in front of each double-write slot's page (one O_DIRECT
/// block, so that the page stays aligned).
pub const DOUBLE_WRITE_SLOT_HEADER_BYTES: usize = IO_ALIGN_BYTES;

/// The first bytes of a page of the free-page list on SSD (`docs/format.md`): the list
/// of free page ids a checkpoint writes, in pages that are themselves free and are not
/// handed out until a later checkpoint has written another list.
pub const FREE_LIST_MAGIC: &[u8; 8] = b"TDBFREE2";
/// Where the page ids start in a free-list page: after its header (magic, next list
/// page, count) and the page seal.
pub const FREE_LIST_IDS_OFFSET_BYTES: usize = 64;

/// Spins of a latch waiter before it starts yielding its core.
pub const LATCH_SPINS_BEFORE_YIELD: u32 = 64;

/// Longest B+-tree key. Node slots store key lengths in 16 bits; separators and fences
/// are at most this long, which bounds what a split must reserve (see `btree::node`).
pub const BTREE_KEY_BYTES_MAX: usize = 256;

/// Most levels a B+-tree may have (node levels are one byte). With 4 KiB pages and the
/// longest keys an inner node still holds at least 12 children, so 32 levels is more
/// than any database this engine can address.
pub const BTREE_HEIGHT_MAX: usize = 32;

/// How often one B+-tree operation may restart its optimistic descent (a root leaf that
/// split between its shared and its exclusive latch). More is a bug, never a wait.
pub const BTREE_RESTARTS_MAX: u32 = 64;

/// Optimistic lookup descents that may be invalidated (by writers or evictions on the
/// path) before a lookup falls back to shared latch coupling, which cannot be.
pub const BTREE_OPTIMISTIC_RESTARTS_MAX: u32 = 16;

/// A B+-tree node whose entries take less than `page size / this` bytes is underfull and
/// is merged with a sibling when a delete leaves it so.
pub const BTREE_UNDERFULL_DIVISOR: usize = 4;

/// Default fill factor of a bulk-loaded B+-tree (`BTree::bulk_load`): every node is
/// filled to at most this fraction of its page. Not 1.0: a full leaf splits at the
/// first insert into it, so workloads that insert after the load (YCSB D and E, TPC-C)
/// would split nearly every leaf they touch at once; 10% of a 4 KiB leaf is room for
/// two or three more 140-byte YCSB records. The price is size. Against the sorted
/// inserts a bulk load replaces (each left node filled with what fits before it gets
/// its upper fence): with keys in order that share long prefixes (`user` and 19 digits)
/// those lose ~15% to the prefix truncation the fence brings, and 0.9 is still denser
/// (188 against 193 leaves for 120-byte values at 4 KiB); with keys that share little
/// (YCSB's hashed keys) they are nearly full and 0.9 takes ~8% more pages, as it does
/// for records of a few percent of a page (7% more leaves for 1000-byte values at 16
/// KiB). A caller that never inserts afterwards passes 1.0 (the YCSB loader does for
/// such workloads).
pub const BTREE_BULK_FILL_DEFAULT: f64 = 0.9;

/// Smallest bulk-load fill factor accepted: below it, nodes would start out close to
/// underfull (`BTREE_UNDERFULL_DIVISOR`), and a node of the smallest page filled to it
/// still takes three children of the longest separators (checked below), so every cut
/// leaves the last two nodes of a level enough children to rebalance.
pub const BTREE_BULK_FILL_MIN: f64 = 0.5;

/// The catalog of named trees (one page): longest name and most trees. The catalog of
/// the largest allowed size must fit in the smallest page (checked below).
pub const CATALOG_NAME_BYTES_MAX: usize = 64;
/// The most named trees the catalog holds.
pub const CATALOG_TREES_MAX: usize = 48;
/// Catalog page header bytes (the page seal's bytes included) and per-entry overhead
/// (name length byte + root page id).
pub const CATALOG_HEADER_BYTES: usize = 64;
/// Bytes of a catalog entry besides its name: the name's length byte and the root
/// page id.
pub const CATALOG_ENTRY_OVERHEAD_BYTES: usize = 1 + 8;

/// `nvcache` (the NVM block cache, `buffer::policy::nvcache`): the overhead-bypass
/// ratio's target, (inserted + removed) / looked-up, in parts per thousand (the
/// paper's 10%), and the lookups its sliding window spans, in epochs of equal length.
pub const NVCACHE_OBP_TARGET_PERMILLE_DEFAULT: u32 = 100;
/// `nvcache`: lookups the overhead-bypass ratio's sliding window spans by default.
pub const NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT: u64 = 8192;
/// `nvcache`: epochs of equal length the overhead-bypass window is kept in.
pub const NVCACHE_OBP_EPOCHS: usize = 16;
/// `nvcache` small-bypass: nothing is admitted while the database is smaller than this
/// share of DRAM, in percent (the paper: until the data outgrows DRAM).
pub const NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT: u32 = 100;
/// `nvcache` LFRU: a cached block not reused within this many NVM-cache lookups per
/// NVM frame (so the window scales with the cache) may be evicted; a sweep frees at
/// most 1/`NVCACHE_SWEEP_BATCH_DIVISOR` of the frames, and a sweep that found too few
/// stale blocks is not repeated for 1/`NVCACHE_SWEEP_INTERVAL_DIVISOR` of the window.
pub const NVCACHE_REUSE_WINDOW_LOOKUPS_PER_FRAME_DEFAULT: u64 = 1;
/// `nvcache` LFRU: one sweep frees at most 1/this of the NVM frames.
pub const NVCACHE_SWEEP_BATCH_DIVISOR: usize = 64;
/// `nvcache` LFRU: after a sweep that found too few stale blocks, none runs again for
/// 1/this of the reuse window.
pub const NVCACHE_SWEEP_INTERVAL_DIVISOR: u64 = 16;

const _: () = assert!(CACHE_LINE_BYTES.is_power_of_two());
const _: () = assert!(PAGE_SIZE_MIN_BYTES.is_power_of_two());
const _: () = assert!(PAGE_SIZE_DEFAULT_BYTES.is_power_of_two());
const _: () = assert!(PAGE_SIZE_MAX_BYTES.is_power_of_two());
const _: () = assert!(PAGE_SIZE_MIN_BYTES <= PAGE_SIZE_DEFAULT_BYTES);
const _: () = assert!(PAGE_SIZE_DEFAULT_BYTES <= PAGE_SIZE_MAX_BYTES);
const _: () = assert!(PAGE_SIZE_MIN_BYTES >= IO_ALIGN_BYTES);
const _: () = assert!(PAGE_SIZE_MIN_BYTES.is_multiple_of(CACHE_LINE_BYTES));
const _: () = assert!(IO_ALIGN_BYTES.is_multiple_of(OS_PAGE_BYTES));
const _: () = assert!(SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS <= IO_ALIGN_BYTES);
const _: () = assert!(STATS_STRIPES.is_power_of_two());
const _: () = assert!(PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES <= CACHE_LINE_BYTES);
// A free-list page's header (magic, next list page, count) comes before the seal, its
// ids after it.
const _: () = assert!(FREE_LIST_MAGIC.len() + 8 + 8 <= PAGE_SEAL_OFFSET);
const _: () = assert!(FREE_LIST_IDS_OFFSET_BYTES >= PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES);
const _: () = assert!(FREE_LIST_IDS_OFFSET_BYTES.is_multiple_of(8));
const _: () = assert!((PAGE_SIZE_MIN_BYTES - FREE_LIST_IDS_OFFSET_BYTES) / 8 >= 2);
const _: () = assert!(CATALOG_HEADER_BYTES >= PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES);
const _: () = assert!(DOUBLE_WRITE_SLOTS >= 1 && DOUBLE_WRITE_SLOTS <= DOUBLE_WRITE_SLOTS_MAX);
const _: () = assert!(FLUSH_NOTES_PER_RECORD >= 1 && FLUSH_NOTES_PER_RECORD * 16 <= 64 << 10);
const _: () = assert!(DOUBLE_WRITE_SLOT_HEADER_BYTES.is_multiple_of(IO_ALIGN_BYTES));
const _: () = assert!(NVCACHE_OBP_EPOCHS >= 2 && NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT >= NVCACHE_OBP_EPOCHS as u64);
const _: () = assert!(NVCACHE_OBP_TARGET_PERMILLE_DEFAULT > 0 && NVCACHE_OBP_TARGET_PERMILLE_DEFAULT <= 1000);
const _: () = assert!(NVCACHE_SWEEP_BATCH_DIVISOR >= 1 && NVCACHE_SWEEP_INTERVAL_DIVISOR >= 1);
const _: () = assert!(BTREE_KEY_BYTES_MAX >= 128 && BTREE_KEY_BYTES_MAX <= u16::MAX as usize);
const _: () = assert!(BTREE_HEIGHT_MAX <= u8::MAX as usize);
const _: () = assert!(BTREE_UNDERFULL_DIVISOR >= 2);
const _: () = assert!(BTREE_BULK_FILL_MIN <= BTREE_BULK_FILL_DEFAULT && BTREE_BULK_FILL_DEFAULT <= 1.0);
const _: () = assert!(BTREE_BULK_FILL_MIN >= 1.0 / BTREE_UNDERFULL_DIVISOR as f64);
const _: () = assert!(CATALOG_NAME_BYTES_MAX <= u8::MAX as usize);
const _: () = assert!(
    CATALOG_HEADER_BYTES + CATALOG_TREES_MAX * (CATALOG_ENTRY_OVERHEAD_BYTES + CATALOG_NAME_BYTES_MAX)
        <= PAGE_SIZE_MIN_BYTES
);

/// Most records recovery follows back through one transaction's chain while undoing it
/// (a bound on a corrupt chain that loops).
pub const RECOVERY_UNDO_STEPS_MAX: u64 = 1 << 32;

/// The tuners' objective (`tune::Objective`) floors NVM line writes per operation at
/// this, so a policy that writes nothing earns `λ / floor`, not infinity.
pub const TUNE_WRITES_PER_OP_FLOOR: f64 = 1e-3;
/// Candidates simulated annealing tries at one temperature before it cools anyway
/// (Algorithm 1 waits for γ accepted ones, which near an optimum at a low temperature
/// may never come). Default and largest value.
pub const ANNEAL_ATTEMPTS_PER_TEMPERATURE_DEFAULT: u32 = 100;
/// The largest setting of simulated annealing's candidates per temperature.
pub const ANNEAL_ATTEMPTS_PER_TEMPERATURE_MAX: u32 = 1_000_000;
/// Temperature levels simulated annealing may have (T0 / Tmin with α), so a schedule
/// that would never end is refused.
pub const ANNEAL_LEVELS_MAX: u32 = 100_000;

const _: () = assert!(ANNEAL_ATTEMPTS_PER_TEMPERATURE_DEFAULT <= ANNEAL_ATTEMPTS_PER_TEMPERATURE_MAX);
/// Epochs the coordinate search may measure one candidate (largest value of its
/// setting).
pub const COORD_MEASUREMENTS_MAX: u32 = 100;
/// Values per tied knob on the funnel tuner's screen at most (its screen has the square).
pub const FUNNEL_SCREEN_LEVELS_MAX: u32 = 16;
/// The shortest screen epoch of the funnel tuner, as a fraction of a full epoch.
pub const FUNNEL_SCREEN_FRACTION_MIN: f64 = 0.01;

/// Lines after an in-place NVM read that the software prefetch of SE2-style in-place
/// access may bring in at most (`BufferConfig::prefetch_lines`): a page's worth at 4 KiB.
pub const PREFETCH_LINES_MAX: u32 = 64;

/// `nvsql`: the default re-update-interval threshold, as a percentile of the recent
/// intervals (a dirty page whose interval ranks within it is admitted to NVM).
pub const NVSQL_INTERVAL_PERCENT_DEFAULT: f64 = 30.0;
/// `nvsql`: the default share, in percent, of a checkpoint's dirty DRAM pages (those with
/// the oldest first-update LSN) that checkpoint-based admission moves to NVM (capped at
/// the NVM's old sublist).
pub const NVSQL_CHECKPOINT_PERCENT_DEFAULT: f64 = 30.0;
/// `nvsql`: recent re-update intervals the online sketch ranks against.
pub const NVSQL_SKETCH_WINDOW: usize = 4096;
/// `nvsql`: intervals seen before the sketch decides (every dirty page is admitted
/// until then, as NVM starts empty).
pub const NVSQL_SKETCH_MIN_SAMPLES: usize = 32;
/// `nvsql`: the new sublist's share of the NVM frames in midpoint-insertion LRU
/// (InnoDB's default: 5/8 new, 3/8 old).
pub const NVSQL_NEW_SUBLIST_PERCENT: usize = 62;
/// `nvsql`: checkpoints a change may stay in NVM only. A checkpoint writes to SSD (and
/// leaves in NVM, clean) the dirty NVM pages whose recovery LSN is older than the start
/// of the checkpoint this many before it, so the log kept for them spans at most this
/// many checkpoint intervals (plus the current one); 0 writes every dirty NVM page.
pub const NVSQL_KEEP_CHECKPOINTS_DEFAULT: u32 = 1;
