//! The device layer: DRAM arena, NVM region, SSD page file (with its page seals and
//! double-write area), log segments.
//!
//! Every operation on a device goes through its [`DeviceCore`], which counts it
//! ([`DeviceStats`]) and applies the device's profile in the chosen emulation mode
//! ([`EmulationMode`]). Devices know bytes and offsets, never what pages mean.
//!
//! This module is the layer's façade: users of the crate cannot name its submodules, and
//! what they need is re-exported here, plus two namespaces of free functions whose names
//! read only with their module's: [`clock`] (the TSC, the virtual clock of `model`
//! emulation) and [`page_seal`] (the seal in bytes 48..64 of every page on SSD).
//!
//! Unsafe code of the crate lives here, in `mapping`, `persist`, `clock`, `numa` and
//! `aligned` (see `docs/unsafe.md`); the device types expose safe APIs plus `unsafe`
//! shared-write variants for callers that prove exclusive access by other means.

mod aligned;
pub mod clock;
pub(crate) mod double_write;
mod dram;
mod emulation;
mod error;
mod fault;
pub(crate) mod log_file;
mod log_ring;
mod mapping;
mod numa;
mod nvm;
pub mod page_seal;
mod persist;
mod probe;
pub(crate) mod profile;
pub(crate) mod ssd;
pub(crate) mod stats;
mod superblock;
mod uring;

pub use aligned::AlignedBuf;
pub use double_write::{
    DoubleWriteMode, NVM_SLOT_HEADER_BYTES as NVM_DOUBLE_WRITE_SLOT_HEADER_BYTES, TornPageRecovery,
    nvm_area_bytes as nvm_double_write_bytes, path_for as double_write_path,
};
pub use dram::{DramArena, DramConfig, HugePages};
pub use emulation::{CostModel, EmulationMode, OpKind};
pub use error::DeviceError;
pub use fault::{FaultError, FaultPlan, WriteFault};
pub use log_file::{ExistingLog, LOG_SEGMENT_BYTES_MIN, LogFile, LogFileConfig};
pub use log_ring::NvmRing;
pub use numa::NumaNode;
pub use nvm::{MsyncPolicy, NvmConfig, NvmInfo, NvmRegion, WearSummary};
pub use persist::{CpuCaps, FlushInstruction, best as best_flush_instruction, cpu_caps};
pub use probe::{Capability, MachineProbe, PathProbe, probe};
pub use profile::{DeviceProfile, PRESETS as PROFILE_PRESETS, ProfileError, Tier};
pub use ssd::{DirectIo, SsdConfig, SsdFile, SsdInfo};
pub use stats::{DeviceStats, StatsSnapshot};

use emulation::{Emulator, PathOvershoot};

/// How a device opens its backing file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpenMode {
    /// Create a new file; fail if it exists (nothing is ever overwritten).
    Create,
    /// Open an existing file; fail if it is missing.
    Open,
    /// Open the file if it exists, else create it.
    #[default]
    OpenOrCreate,
}

/// What every device has: its tier, profile, emulator and counters.
#[derive(Debug)]
pub struct DeviceCore {
    tier: Tier,
    profile: DeviceProfile,
    emulator: Emulator,
    stats: DeviceStats,
}

impl DeviceCore {
    /// The core of a device serving `tier`, charged by `profile` in `mode`, with all
    /// counters at zero. In `spin` mode the first call in a process calibrates the TSC
    /// and the device path's overshoot (tens of milliseconds).
    ///
    /// # Errors
    /// `WrongTier` if the profile cannot serve `tier`.
    pub fn new(tier: Tier, profile: DeviceProfile, mode: EmulationMode) -> Result<DeviceCore, ProfileError> {
        profile.expect_tier(tier)?;
        let overshoot = if mode == EmulationMode::Spin { spin_path_overshoot() } else { PathOvershoot::default() };
        let emulator = Emulator::with_path_overshoot(mode, &profile, overshoot);
        Ok(DeviceCore { tier, profile, emulator, stats: DeviceStats::new() })
    }

    /// Runs one device operation on `len` bytes at `offset`: `f` does the real work;
    /// if it succeeds the operation is charged and counted.
    #[inline]
    pub(crate) fn run<T, E>(
        &self,
        kind: OpKind,
        offset: u64,
        len: u64,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = self.emulator.begin();
        let out = f()?;
        let media_bytes = match kind {
            OpKind::Read | OpKind::Write => self.profile.media_bytes(offset, len),
            OpKind::Persist | OpKind::Sync => 0,
        };
        let lines = stats::lines_covered(offset, len);
        let cost = self.emulator.charge(start, kind, media_bytes, lines);
        self.stats.record(kind, len, lines, media_bytes, cost);
        // Spin last, so the bookkeeping above is part of the emulated time.
        let waited_ps = self.emulator.wait(&cost);
        self.stats.record_wait(waited_ps);
        Ok(out)
    }

    /// The tier this device serves.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// The profile whose costs the device is charged (and, in `spin` mode, made to last).
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    /// How the profile is applied to this device's operations.
    pub fn mode(&self) -> EmulationMode {
        self.emulator.mode()
    }

    /// The profile's costs in the units the emulator charges (picoseconds).
    pub fn cost_model(&self) -> &CostModel {
        self.emulator.cost_model()
    }

    /// The device's operation counters; take a [`DeviceStats::snapshot`] to read them.
    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

/// The start-up calibration of `spin` emulation, for reports.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct SpinCalibration {
    /// The calibrated time-stamp counter rate, ticks per nanosecond.
    pub tsc_ticks_per_ns: f64,
    /// How far a bare spin loop passes its deadline.
    pub loop_overshoot_ns: f64,
    /// The device path's own cost around a read's wait, ns, taken off each read's deadline.
    pub read_path_ns: f64,
    /// The same for writes, persists and syncs, whose path also moves the interference
    /// window.
    pub write_path_ns: f64,
}

/// Runs (once per process) and returns the `spin` calibration.
pub fn spin_calibration() -> SpinCalibration {
    let rate = clock::rate();
    let path = spin_path_overshoot();
    SpinCalibration {
        tsc_ticks_per_ns: rate.ticks_per_ns,
        loop_overshoot_ns: rate.ns_from_ticks(rate.overshoot_ticks),
        read_path_ns: rate.ns_from_ticks(path.read_ticks),
        write_path_ns: rate.ns_from_ticks(path.write_ticks),
    }
}

/// How far past its deadline a `spin` operation on the full device path returns, in
/// TSC ticks, for reads and for writes: measured once per process by timing batches of
/// empty operations of known cost, so that emulated operations last their profile's time
/// as a caller timing them sees it (`clock::rate().overshoot_ticks` covers the spin loop).
fn spin_path_overshoot() -> PathOvershoot {
    static OVERSHOOT: std::sync::OnceLock<PathOvershoot> = std::sync::OnceLock::new();
    *OVERSHOOT.get_or_init(|| {
        const BATCH_OPS: u64 = 1000;
        const BATCHES: usize = 7;
        // A profile with interference, so the write path updates the window as real ones do.
        let mut profile = DeviceProfile::preset("optane-dcpmm").expect("built-in optane preset is valid");
        profile.read_latency_ns = 400.0;
        profile.write_latency_ns = 400.0;
        profile.interference_window_ns = 0.0;
        let core = DeviceCore {
            tier: Tier::Nvm,
            emulator: Emulator::with_path_overshoot(EmulationMode::Spin, &profile, PathOvershoot::default()),
            profile,
            stats: DeviceStats::new(),
        };
        let rate = clock::rate();
        let measure = |kind: OpKind| {
            let media_bytes = core.profile().media_bytes(0, 64);
            let target = rate.ticks_from_ps(core.cost_model().cost_ps(kind, media_bytes, 1));
            let mut per_op: Vec<u64> = (0..BATCHES)
                .map(|_| {
                    let t0 = clock::ticks_ordered();
                    for _ in 0..BATCH_OPS {
                        let _ = core.run(kind, 0, 64, || Ok::<(), ()>(()));
                    }
                    (clock::ticks_ordered() - t0) / BATCH_OPS
                })
                .collect();
            per_op.sort_unstable();
            per_op[BATCHES / 2].saturating_sub(target)
        };
        PathOvershoot { read_ticks: measure(OpKind::Read), write_ticks: measure(OpKind::Write) }
    })
}

/// `Ok` if `[offset, offset + len)` lies within `size` bytes.
#[inline]
pub(crate) fn check_range(device: &'static str, offset: u64, len: u64, size: u64) -> Result<(), DeviceError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(DeviceError::OutOfRange { device, offset, len, size }),
    }
}

/// `Ok` if `value` is a multiple of `align` (a power of two).
#[inline]
pub(crate) fn check_aligned(
    device: &'static str,
    what: &'static str,
    value: u64,
    align: u64,
) -> Result<(), DeviceError> {
    debug_assert!(align.is_power_of_two());
    if value & (align - 1) == 0 { Ok(()) } else { Err(DeviceError::Misaligned { device, what, value, align }) }
}

/// The file system type of `path` as a short name ("tmpfs", "ext4", ...).
pub fn fs_type(path: &std::path::Path) -> String {
    probe::fs_type_of(path)
}
