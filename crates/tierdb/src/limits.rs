//! Limits and tunables of the whole engine, in one place.
//!
//! Every size, count and loop bound that another module relies on is a named constant
//! here, and the relationships between them are checked at compile time.

/// Bytes in one CPU cache line: the unit of NVM access, flushing and wear counting.
pub const CACHE_LINE_BYTES: usize = 64;

/// Smallest, default and largest database page size.
pub const PAGE_SIZE_MIN_BYTES: usize = 4 * 1024;
pub const PAGE_SIZE_DEFAULT_BYTES: usize = 16 * 1024;
pub const PAGE_SIZE_MAX_BYTES: usize = 64 * 1024;

/// Alignment of buffers used for `O_DIRECT` I/O (the largest logical block size we
/// expect of a block device) and of DRAM frames.
pub const IO_ALIGN_BYTES: usize = 4096;

/// The operating system's page size assumed for `msync` and `mbind` alignment.
pub const OS_PAGE_BYTES: usize = 4096;

/// Upper bounds on device sizes: a bad config fails fast instead of reserving absurd
/// amounts of memory or disk.
pub const DRAM_ARENA_BYTES_MAX: u64 = 1 << 40; // 1 TiB
pub const NVM_REGION_BYTES_MAX: u64 = 1 << 42; // 4 TiB
pub const SSD_PAGES_MAX: u64 = 1 << 36;

/// The superblock lives in the first bytes of SSD page 0, in two slots of this size.
pub const SUPERBLOCK_SLOT_BYTES: usize = 512;
pub const SUPERBLOCK_SLOTS: usize = 2;

/// The longest single busy-wait of `spin` emulation; a longer modelled cost is a bug
/// in a profile or in a cost computation, and is cut short (and counted).
pub const SPIN_WAIT_NS_MAX: u64 = 100_000_000;

/// How long start-up calibration of the time-stamp counter may take.
pub const TSC_CALIBRATION_NS: u64 = 20_000_000;

/// Stripes of the per-device statistics counters (threads pick one; see `stats`).
pub const STATS_STRIPES: usize = 16;

/// Bounds on the values a device profile may hold.
pub const PROFILE_LATENCY_NS_MAX: f64 = 1e9; // one second
pub const PROFILE_BANDWIDTH_GB_S_MAX: f64 = 10_000.0;
pub const PROFILE_INTERFERENCE_MAX: f64 = 100.0;
pub const PROFILE_GRANULARITY_BYTES_MAX: u64 = 1 << 20;

/// How deep `inherits` chains of device profiles may go.
pub const PROFILE_INHERIT_DEPTH_MAX: usize = 8;

/// Spins of a latch waiter before it starts yielding its core.
pub const LATCH_SPINS_BEFORE_YIELD: u32 = 64;

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
