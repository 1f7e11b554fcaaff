//! The DRAM arena: frame memory allocated once at start-up.
//!
//! One anonymous mapping sized by the configuration, rounded down to whole frames,
//! page-aligned, with transparent-huge-page advice where the kernel takes it. The
//! buffer manager carves it into frames; this type only moves bytes and counts them.

#![allow(unsafe_code)]

use serde::Serialize;

use super::mapping::Mapping;
use super::profile::DeviceProfile;
use super::{DeviceCore, DeviceError, EmulationMode, Tier, check_range};
use crate::limits::{DRAM_ARENA_BYTES_MAX, PAGE_SIZE_DEFAULT_BYTES, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES};
use crate::size::ByteSize;

const DEVICE: &str = "dram";

/// How the DRAM arena is built.
#[derive(Clone, Debug, PartialEq)]
pub struct DramConfig {
    /// Bytes of frame memory; rounded down to whole frames.
    pub size: ByteSize,
    /// Bytes per frame: a power of two between the page size limits.
    pub frame_bytes: usize,
    /// Ask for transparent huge pages.
    pub huge_pages: bool,
    /// The costs to charge: a DRAM or NVM profile (memory tiers take either).
    pub profile: DeviceProfile,
    /// How the profile is applied.
    pub mode: EmulationMode,
}

impl DramConfig {
    /// `size` bytes of 16 KiB frames, huge pages asked for, `dram` profile, mode off.
    pub fn new(size: ByteSize) -> DramConfig {
        DramConfig {
            size,
            frame_bytes: PAGE_SIZE_DEFAULT_BYTES,
            huge_pages: true,
            profile: DeviceProfile::preset("dram").expect("built-in dram preset is valid"),
            mode: EmulationMode::Off,
        }
    }
}

/// What became of the huge-page request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HugePages {
    /// The configuration did not ask for huge pages.
    NotAsked,
    /// `madvise(MADV_HUGEPAGE)` succeeded; the kernel may still back the arena with
    /// small pages.
    Advised,
    /// The advice failed; the arena uses small pages. Holds the operating system's
    /// message.
    Refused(String),
}

/// Frame memory in DRAM.
pub struct DramArena {
    map: Mapping,
    frame_bytes: usize,
    frame_count: usize,
    huge_pages: HugePages,
    core: DeviceCore,
}

impl DramArena {
    /// Allocates the arena.
    ///
    /// # Errors
    /// `Config` for a frame size outside the limits, an arena smaller than one frame or
    /// larger than [`DRAM_ARENA_BYTES_MAX`], a profile for the wrong tier; `Io` if the
    /// memory cannot be mapped.
    pub fn new(cfg: &DramConfig) -> Result<DramArena, DeviceError> {
        let config = |what: String| DeviceError::Config { device: DEVICE, what };
        let fb = cfg.frame_bytes;
        if !fb.is_power_of_two() || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&fb) {
            return Err(config(format!(
                "frame size {fb} bytes must be a power of two from {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
            )));
        }
        let size = cfg.size.bytes();
        if size > DRAM_ARENA_BYTES_MAX {
            return Err(config(format!("size {} is above the limit of {}", cfg.size, ByteSize(DRAM_ARENA_BYTES_MAX))));
        }
        let frame_count = (size / fb as u64) as usize;
        if frame_count == 0 {
            return Err(config(format!("size {} holds no frame of {fb} bytes", cfg.size)));
        }
        let core = DeviceCore::new(Tier::Dram, cfg.profile.clone(), cfg.mode).map_err(|e| config(e.to_string()))?;
        let len = frame_count * fb;
        let map = Mapping::anon(len).map_err(|source| DeviceError::Io {
            op: "mmap",
            path: "(anonymous DRAM arena)".into(),
            source,
        })?;
        let huge_pages = if cfg.huge_pages {
            match map.advise_huge_pages() {
                Ok(()) => HugePages::Advised,
                Err(e) => HugePages::Refused(e.to_string()),
            }
        } else {
            HugePages::NotAsked
        };
        Ok(DramArena { map, frame_bytes: fb, frame_count, huge_pages, core })
    }

    /// Bytes of frame memory: `frame_count() x frame_bytes()`, the configured size
    /// rounded down to whole frames.
    pub fn size_bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// Bytes per frame, a power of two.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// Number of frames in the arena (at least one).
    pub fn frame_count(&self) -> usize {
        self.frame_count
    }

    /// The first byte of frame memory, for the buffer manager's frame module, which
    /// hands out latched guards over it. Dereferencing it is the caller's `unsafe`.
    pub fn base_ptr(&self) -> *mut u8 {
        self.map.as_ptr()
    }

    /// What became of the huge-page request, for reports.
    pub fn huge_pages(&self) -> &HugePages {
        &self.huge_pages
    }

    /// The arena's tier, profile, emulator and counters.
    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// Copies `dst.len()` bytes at `offset` out of the arena.
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<(), DeviceError> {
        let len = dst.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(super::OpKind::Read, offset, len, || {
            // SAFETY: in range (checked); writers either hold `&mut self` (excluded by
            // this `&self`) or promised exclusive access in `write_shared`.
            unsafe { self.map.copy_out(offset as usize, dst) };
            Ok(())
        })
    }

    /// Copies `src` into the arena at `offset`.
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub fn write(&mut self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        // SAFETY: `&mut self` excludes every other access to the arena.
        unsafe { self.write_shared(offset, src) }
    }

    /// Like [`write`](Self::write) through a shared reference.
    ///
    /// # Safety
    /// No other thread reads or writes `[offset, offset + src.len())` during the call
    /// (the buffer manager guarantees it with the frame's exclusive latch).
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub unsafe fn write_shared(&self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        let len = src.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(super::OpKind::Write, offset, len, || {
            // SAFETY: in range (checked); exclusive access per this function's contract.
            unsafe { self.map.copy_in(offset as usize, src) };
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_down_and_bytes_round_trip() {
        let mut cfg = DramConfig::new(ByteSize(10 * 16384 + 100));
        cfg.huge_pages = true;
        let mut a = DramArena::new(&cfg).unwrap();
        assert_eq!(a.frame_count(), 10);
        assert_eq!(a.size_bytes(), 10 * 16384);
        assert_ne!(*a.huge_pages(), HugePages::NotAsked);
        a.write(16384 * 9 + 64, &[5u8; 128]).unwrap();
        let mut back = [0u8; 128];
        a.read(16384 * 9 + 64, &mut back).unwrap();
        assert_eq!(back, [5u8; 128]);
        let s = a.core().stats().snapshot();
        assert_eq!((s.reads, s.writes, s.read_lines, s.write_bytes), (1, 1, 2, 128));
    }

    #[test]
    fn bad_configs_are_errors() {
        let tiny = DramConfig::new(ByteSize(1000));
        assert!(matches!(DramArena::new(&tiny), Err(DeviceError::Config { .. })));
        let mut odd = DramConfig::new(ByteSize(1 << 20));
        odd.frame_bytes = 5000;
        let e = DramArena::new(&odd).err().unwrap();
        assert!(e.to_string().contains("5000"), "{e}");
        let mut ssd = DramConfig::new(ByteSize(1 << 20));
        ssd.profile = DeviceProfile::preset("nvme-ssd").unwrap();
        assert!(DramArena::new(&ssd).is_err());
    }

    #[test]
    fn out_of_range_is_an_error() {
        let a = DramArena::new(&DramConfig::new(ByteSize(1 << 20))).unwrap();
        let mut buf = [0u8; 64];
        assert!(matches!(a.read((1 << 20) - 32, &mut buf), Err(DeviceError::OutOfRange { .. })));
        assert!(matches!(a.read(u64::MAX - 8, &mut buf), Err(DeviceError::OutOfRange { .. })));
    }
}
