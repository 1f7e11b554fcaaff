//! A model of the CPU's last-level cache for reads made in place in NVM.
//!
//! Loads from the NVM mapping cannot be intercepted, so code that reads NVM in place
//! (`nvm-direct`, and the buffer manager's in-place guards for `spitfire` and SE2)
//! charges its reads to the NVM device as it makes them. On real hardware those loads
//! go through the CPU caches, and a line read again soon costs no NVM access; without a
//! model every load would pay NVM latency. The model is a direct-mapped tag array of
//! the configured size (rounded down to whole lines; 0 turns it off and charges every
//! read): a line whose tag is present is a hit and costs nothing; a miss installs it.
//! Tags are relaxed atomics: threads racing on a set only blur the model.
//!
//! Its size is given as bytes or as a share of the data ([`CpuCacheSize`]). The share
//! is what keeps a scaled-down experiment honest: the three-tier paper's machine had a
//! 20 MB L3 over 10 GB of data (§5.1, §5.4), 0.2% of it; a fixed cache of tens of MiB
//! over a few hundred MiB of data would hold a tenth of the data or more and hand the
//! in-place designs hits no real machine gives them.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ByteSize;
use crate::device::NvmRegion;
use crate::limits::CACHE_LINE_BYTES;

const LINE: u64 = CACHE_LINE_BYTES as u64;

/// Parts per million of the data the modelled cache holds by default: the three-tier
/// paper's 20 MB L3 (§5.1: Xeon E5-4620 v2) over its 10 GB of data (§5.4, §5.6), 0.2%.
pub const CPU_CACHE_MODEL_SHARE_DEFAULT_PPM: u32 = 2_000;
/// The default as the command line spells it (`--cpu-cache`).
pub const CPU_CACHE_MODEL_DEFAULT: &str = "0.2%";
/// The smallest cache a share resolves to: the per-core L2 of the paper's CPU (256 KiB
/// on an E5-4620 v2), which sits between the core and NVM however small the data. It
/// keeps the hot lines of a small tree's upper levels cached (8 search lines per 16 KiB
/// node: 512 nodes' worth), so that a test of a few MiB does not miss on the root.
pub const CPU_CACHE_MODEL_MIN_BYTES: u64 = 256 << 10;
/// The largest modelled cache (its tags take an eighth of it in DRAM).
pub const CPU_CACHE_MODEL_MAX_BYTES: u64 = 1 << 30;
/// Parts per million in a whole.
const PPM: u64 = 1_000_000;

const _: () = assert!(CPU_CACHE_MODEL_MIN_BYTES.is_multiple_of(LINE));
const _: () = assert!(CPU_CACHE_MODEL_MIN_BYTES < CPU_CACHE_MODEL_MAX_BYTES);
const _: () = assert!(CPU_CACHE_MODEL_SHARE_DEFAULT_PPM as u64 <= PPM);

/// The size of the modelled cache: fixed bytes, or a share of the data resolved when
/// the data's size is known ([`CpuCacheSize::resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuCacheSize {
    /// This many bytes whatever the data (0: no model, every read charged).
    Bytes(u64),
    /// This many parts per million of the data, at least [`CPU_CACHE_MODEL_MIN_BYTES`]
    /// and at most [`CPU_CACHE_MODEL_MAX_BYTES`].
    Share {
        /// Parts per million, 1..=1,000,000.
        ppm: u32,
    },
}

/// Why a `--cpu-cache` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU-cache size {text:?}: {reason}")]
pub struct CpuCacheSizeError {
    text: String,
    reason: String,
}

impl Default for CpuCacheSize {
    fn default() -> Self {
        CpuCacheSize::Share { ppm: CPU_CACHE_MODEL_SHARE_DEFAULT_PPM }
    }
}

impl CpuCacheSize {
    /// The modelled cache's bytes for `data_bytes` of data: a share is clamped to
    /// `CPU_CACHE_MODEL_MIN_BYTES..=CPU_CACHE_MODEL_MAX_BYTES`; both kinds are rounded
    /// down to whole lines.
    pub fn resolve(self, data_bytes: u64) -> u64 {
        let bytes = match self {
            CpuCacheSize::Bytes(b) => b,
            CpuCacheSize::Share { ppm } => {
                let share = (u128::from(data_bytes) * u128::from(ppm) / u128::from(PPM)) as u64;
                share.clamp(CPU_CACHE_MODEL_MIN_BYTES, CPU_CACHE_MODEL_MAX_BYTES)
            }
        };
        let bytes = bytes / LINE * LINE;
        debug_assert!(bytes <= CPU_CACHE_MODEL_MAX_BYTES, "{self} resolved to {bytes} bytes");
        bytes
    }

    /// The model as a report states it, for `data_bytes` of data: its bytes and its
    /// share of the data, e.g. `2 MiB (0.20% of 1 GiB of data; asked: 0.2%)`.
    pub fn describe(self, data_bytes: u64) -> String {
        describe_model(self.resolve(data_bytes), data_bytes, self)
    }
}

/// A model of `bytes` over `data_bytes` of data, asked for as `asked`, as a report
/// states it: `2.0MiB (0.20% of 1GiB of data; --cpu-cache 0.2%)`.
pub fn describe_model(bytes: u64, data_bytes: u64, asked: CpuCacheSize) -> String {
    {
        let share = if data_bytes == 0 {
            "no data".to_string()
        } else {
            format!("{:.2}% of {} of data", 100.0 * bytes as f64 / data_bytes as f64, ByteSize(data_bytes))
        };
        format!("{} ({share}; --cpu-cache {asked})", approx_bytes(bytes))
    }
}

/// Bytes in the largest binary unit they reach, to a tenth (`2.0MiB`, `256.0KiB`).
fn approx_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match UNITS.iter().find(|&&(_, f)| bytes >= f) {
        Some(&(name, f)) => format!("{:.1}{name}", bytes as f64 / f as f64),
        None => format!("{bytes}B"),
    }
}

impl fmt::Display for CpuCacheSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CpuCacheSize::Bytes(b) => write!(f, "{}", ByteSize(b)),
            CpuCacheSize::Share { ppm } => {
                let text = format!("{:.4}", f64::from(ppm) / 10_000.0);
                write!(f, "{}%", text.trim_end_matches('0').trim_end_matches('.'))
            }
        }
    }
}

impl FromStr for CpuCacheSize {
    type Err = CpuCacheSizeError;

    /// `32MiB` (any [`ByteSize`]), `0` (no model), or a percentage of the data, `0.2%`
    /// (above 0, at most 100, in steps of 0.0001%).
    fn from_str(text: &str) -> Result<Self, CpuCacheSizeError> {
        let err = |reason: String| CpuCacheSizeError { text: text.to_string(), reason };
        let s = text.trim();
        if let Some(number) = s.strip_suffix('%') {
            let pct: f64 = number.trim().parse().map_err(|_| err("not a percentage, e.g. 0.2%".into()))?;
            if !(pct > 0.0 && pct <= 100.0) {
                return Err(err(format!("{pct}% is outside (0, 100]")));
            }
            let ppm = (pct * 10_000.0).round();
            if ppm < 1.0 {
                return Err(err("below 0.0001% of the data".into()));
            }
            return Ok(CpuCacheSize::Share { ppm: ppm as u32 });
        }
        if s == "0" {
            // No model: every read charged (`ByteSize` refuses a size of zero).
            return Ok(CpuCacheSize::Bytes(0));
        }
        let bytes: ByteSize =
            s.parse().map_err(|e: crate::size::SizeError| err(format!("{e} (or a share such as 0.2%)")))?;
        if bytes.bytes() > CPU_CACHE_MODEL_MAX_BYTES {
            return Err(err(format!("larger than the model's maximum, {}", ByteSize(CPU_CACHE_MODEL_MAX_BYTES))));
        }
        Ok(CpuCacheSize::Bytes(bytes.bytes()))
    }
}

impl serde::Serialize for CpuCacheSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

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
    /// A model of a cache of `bytes`, rounded down to whole lines (0: no model).
    ///
    /// # Panics
    /// Above [`CPU_CACHE_MODEL_MAX_BYTES`] (callers check configurations first).
    pub fn new(bytes: u64) -> CpuCacheModel {
        assert!(bytes <= CPU_CACHE_MODEL_MAX_BYTES, "CPU cache model of {bytes} bytes");
        let sets = (bytes / LINE) as usize;
        CpuCacheModel { tags: (0..sets).map(|_| AtomicU64::new(0)).collect() }
    }

    /// The modelled cache's size in bytes.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
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
        // A multiplicative hash mapped onto `sets` by its high bits (any set count, not
        // only powers of two, so the model is as large as the share asks).
        let hash = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let set = &self.tags[((u128::from(hash) * sets as u128) >> 64) as usize];
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

    #[test]
    fn sizes_parse_as_bytes_or_shares_and_bad_ones_are_refused() {
        assert_eq!("32MiB".parse(), Ok(CpuCacheSize::Bytes(32 << 20)));
        assert_eq!("0".parse(), Ok(CpuCacheSize::Bytes(0)));
        assert_eq!("0.2%".parse(), Ok(CpuCacheSize::Share { ppm: 2_000 }));
        assert_eq!(" 100 % ".parse(), Ok(CpuCacheSize::Share { ppm: 1_000_000 }));
        assert_eq!(CPU_CACHE_MODEL_DEFAULT.parse(), Ok(CpuCacheSize::default()));
        for bad in ["-1%", "0%", "101%", "abc", "%", "-5MiB", "2GiB", "0.00001%", "nan%"] {
            let e = bad.parse::<CpuCacheSize>().expect_err(bad);
            assert!(e.to_string().contains("bad CPU-cache size"), "{bad}: {e}");
        }
        for s in ["0.2%", "0.35%", "12.5%", "32MiB"] {
            assert_eq!(s.parse::<CpuCacheSize>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn a_share_resolves_within_its_bounds_in_whole_lines() {
        let share = CpuCacheSize::default();
        assert_eq!(share.resolve(10 << 30), (10u64 << 30) / 500 / LINE * LINE);
        assert_eq!(share.resolve(1 << 20), CPU_CACHE_MODEL_MIN_BYTES);
        assert_eq!(share.resolve(0), CPU_CACHE_MODEL_MIN_BYTES);
        assert_eq!(CpuCacheSize::Share { ppm: 1_000_000 }.resolve(u64::MAX), CPU_CACHE_MODEL_MAX_BYTES);
        assert_eq!(CpuCacheSize::Bytes(1000).resolve(1 << 40), 960);
        assert_eq!(CpuCacheSize::Bytes(0).resolve(1 << 40), 0);
        let d = share.describe(1 << 30);
        assert!(d.starts_with("2.0MiB (0.20% of 1GiB") && d.contains("--cpu-cache 0.2%"), "{d}");
        // The model is as large as asked, not a power of two below it.
        assert_eq!(CpuCacheModel::new(share.resolve(3 << 30)).bytes(), share.resolve(3 << 30));
    }

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
