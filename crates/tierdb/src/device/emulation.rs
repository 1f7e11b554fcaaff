//! Emulation of a device profile: what each operation costs, and what to do with it.
//!
//! Three modes, chosen per device:
//!
//! - `off`: operations run at the speed of the backing medium. Their modelled cost is
//!   still computed and counted (without interference), so a report can show both.
//! - `spin`: each operation lasts at least its modelled cost. The emulator notes the
//!   time-stamp counter when the operation starts and, once the real work is done,
//!   busy-waits until start + cost. The wait is therefore the profile's cost minus
//!   what the backing medium already took: the "extra latency" the profile adds.
//! - `model`: nothing waits; the cost is added to the calling thread's virtual clock
//!   ([`crate::device::clock::virtual_now_ps`]). Deterministic for a single thread.
//!
//! Cost of one operation (picoseconds, rounded to the nearest):
//!
//! ```text
//! read     read_latency  + media_bytes x 1000 / read_bandwidth_gb_s
//! write    write_latency + media_bytes x 1000 / write_bandwidth_gb_s
//! persist  persist       + (lines - 1) x 64 x 1000 / write_bandwidth_gb_s
//! sync     persist
//! ```
//!
//! where `media_bytes` is the access rounded out to whole granules of the media
//! ([`DeviceProfile::media_bytes`]). Write-to-read interference: a read that starts
//! while a write, persist or sync on the same device is in flight, or ended less than
//! `interference_window_ns` ago, costs `write_read_interference` times as much (in
//! `spin` on the shared TSC time line; in `model` on the reading thread's virtual
//! clock against the writers' virtual completion times).

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::clock::{self, TscRate};
use super::profile::DeviceProfile;
use crate::limits::CACHE_LINE_BYTES;

/// How a device's profile is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmulationMode {
    /// Run at the backing medium's speed; the modelled cost (without interference)
    /// is only counted.
    #[default]
    Off,
    /// Busy-wait so that each operation lasts at least its modelled cost.
    Spin,
    /// Never wait; add the modelled cost to the calling thread's virtual clock.
    Model,
}

impl EmulationMode {
    /// The mode's name as configurations and reports spell it: `off`, `spin` or `model`.
    pub fn name(self) -> &'static str {
        match self {
            EmulationMode::Off => "off",
            EmulationMode::Spin => "spin",
            EmulationMode::Model => "model",
        }
    }
}

impl FromStr for EmulationMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(EmulationMode::Off),
            "spin" => Ok(EmulationMode::Spin),
            "model" => Ok(EmulationMode::Model),
            _ => Err(format!("unknown emulation mode {s:?}; use off, spin or model")),
        }
    }
}

impl std::fmt::Display for EmulationMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of device operation the cost model and the counters know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A read of bytes from the device.
    Read,
    /// A write of bytes to the device (not yet durable).
    Write,
    /// A flush of written cache lines to the persistence domain (NVM).
    Persist,
    /// A sync of a file to stable storage (`fsync`/`fdatasync`).
    Sync,
}

/// A profile's costs, converted once into the units the hot path uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    read_latency_ps: u64,
    write_latency_ps: u64,
    persist_ps: u64,
    read_ps_per_byte: f64,
    write_ps_per_byte: f64,
    interference: f64,
    window_ps: u64,
}

fn ps(ns: f64) -> u64 {
    (ns * 1000.0).round() as u64
}

impl CostModel {
    /// The cost model of `profile`: its latencies in picoseconds and its bandwidths as
    /// picoseconds per byte.
    pub fn new(profile: &DeviceProfile) -> CostModel {
        CostModel {
            read_latency_ps: ps(profile.read_latency_ns),
            write_latency_ps: ps(profile.write_latency_ns),
            persist_ps: ps(profile.persist_ns),
            read_ps_per_byte: 1000.0 / profile.read_bandwidth_gb_s,
            write_ps_per_byte: 1000.0 / profile.write_bandwidth_gb_s,
            interference: profile.write_read_interference,
            window_ps: ps(profile.interference_window_ns),
        }
    }

    /// A read's cost in ps: read latency plus `media_bytes` at read bandwidth.
    #[inline]
    pub fn read_ps(&self, media_bytes: u64) -> u64 {
        self.read_latency_ps + (media_bytes as f64 * self.read_ps_per_byte).round() as u64
    }

    /// A write's cost in ps: write latency plus `media_bytes` at write bandwidth.
    #[inline]
    pub fn write_ps(&self, media_bytes: u64) -> u64 {
        self.write_latency_ps + (media_bytes as f64 * self.write_ps_per_byte).round() as u64
    }

    /// A persist's cost in ps for `lines` cache lines: the persist latency covers the
    /// first line, the others stream at write bandwidth.
    #[inline]
    pub fn persist_ps(&self, lines: u64) -> u64 {
        let streamed = lines.saturating_sub(1) * CACHE_LINE_BYTES as u64;
        self.persist_ps + (streamed as f64 * self.write_ps_per_byte).round() as u64
    }

    /// A sync's cost in ps: the profile's persist latency, whatever the file size.
    #[inline]
    pub fn sync_ps(&self) -> u64 {
        self.persist_ps
    }

    /// The cost of an operation without interference.
    #[inline]
    pub fn cost_ps(&self, kind: OpKind, media_bytes: u64, lines: u64) -> u64 {
        match kind {
            OpKind::Read => self.read_ps(media_bytes),
            OpKind::Write => self.write_ps(media_bytes),
            OpKind::Persist => self.persist_ps(lines),
            OpKind::Sync => self.sync_ps(),
        }
    }

    /// A read's cost when writes interfere with it.
    #[inline]
    pub fn interfered_ps(&self, cost_ps: u64) -> u64 {
        (cost_ps as f64 * self.interference).round() as u64
    }

    /// How long after a write, persist or sync ends reads still suffer interference, ps.
    pub fn interference_window_ps(&self) -> u64 {
        self.window_ps
    }

    fn interferes(&self) -> bool {
        self.interference > 1.0
    }
}

/// How much sooner than its modelled cost a `spin` operation should stop waiting, so
/// that with the bookkeeping around the wait it lasts the cost: TSC ticks, for reads and
/// for the other kinds (whose path also updates the interference window).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PathOvershoot {
    pub read_ticks: u64,
    pub write_ticks: u64,
}

/// When an operation started, as the emulator needs it (TSC ticks in `spin` mode).
#[derive(Clone, Copy, Debug)]
pub struct OpStart(u64);

/// What the emulator charged for an operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCost {
    /// The operation's modelled cost in ps, interference included.
    pub modelled_ps: u64,
    /// True if the operation was a read slowed by write interference.
    pub interfered: bool,
    /// Time busy-waited (`spin` mode), ps; filled in by [`Emulator::wait`]'s caller.
    pub waited_ps: u64,
    /// TSC deadline to spin to (`spin` mode; 0 otherwise): see [`Emulator::wait`].
    pub deadline_ticks: u64,
}

/// Applies one profile to one device's operations.
#[derive(Debug)]
pub struct Emulator {
    mode: EmulationMode,
    cost: CostModel,
    rate: TscRate,
    path: PathOvershoot,
    /// Until when reads suffer interference from writes: TSC ticks in `spin` mode,
    /// virtual picoseconds in `model` mode; unused in `off` mode.
    write_busy_until: AtomicU64,
}

impl Emulator {
    /// An emulator of `profile` in `mode`; calibrates the TSC on first use of `spin`.
    #[cfg_attr(not(test), expect(dead_code, reason = "the unit tests use it; the crate no longer exports it"))]
    pub fn new(mode: EmulationMode, profile: &DeviceProfile) -> Emulator {
        Self::with_path_overshoot(mode, profile, PathOvershoot::default())
    }

    /// An emulator whose spins end early by the calibrated cost of the device path's
    /// own bookkeeping (see `DeviceCore`), per kind of operation.
    pub(crate) fn with_path_overshoot(mode: EmulationMode, profile: &DeviceProfile, path: PathOvershoot) -> Emulator {
        let rate =
            if mode == EmulationMode::Spin { clock::rate() } else { TscRate { ticks_per_ns: 1.0, overshoot_ticks: 0 } };
        Emulator { mode, cost: CostModel::new(profile), rate, path, write_busy_until: AtomicU64::new(0) }
    }

    /// The mode this emulator applies its profile in.
    pub fn mode(&self) -> EmulationMode {
        self.mode
    }

    /// The profile's costs this emulator charges.
    pub fn cost_model(&self) -> &CostModel {
        &self.cost
    }

    /// Call before the real work of an operation.
    #[inline]
    pub fn begin(&self) -> OpStart {
        match self.mode {
            EmulationMode::Spin => OpStart(clock::ticks()),
            _ => OpStart(0),
        }
    }

    /// Call after the real work: charges the operation and, in `model` mode, advances
    /// the virtual clock. In `spin` mode the caller counts the operation and then calls
    /// [`wait`](Self::wait), so that the bookkeeping falls inside the emulated time.
    #[inline]
    pub fn charge(&self, start: OpStart, kind: OpKind, media_bytes: u64, lines: u64) -> OpCost {
        let base_ps = self.cost.cost_ps(kind, media_bytes, lines);
        match self.mode {
            EmulationMode::Off => OpCost { modelled_ps: base_ps, ..OpCost::default() },
            EmulationMode::Spin => self.charge_spin(start, kind, base_ps),
            EmulationMode::Model => self.charge_model(kind, base_ps),
        }
    }

    /// Busy-waits until the operation charged as `cost` has lasted its modelled time
    /// (`spin` mode; returns at once otherwise). Returns the picoseconds waited.
    #[inline]
    pub fn wait(&self, cost: &OpCost) -> u64 {
        if cost.deadline_ticks == 0 {
            return 0;
        }
        let waited = clock::spin_until(cost.deadline_ticks, self.rate);
        if waited == 0 { 0 } else { (self.rate.ns_from_ticks(waited) * 1000.0) as u64 }
    }

    /// `charge`, then `wait`.
    #[inline]
    #[cfg_attr(not(test), expect(dead_code, reason = "the unit tests use it; the crate no longer exports it"))]
    pub fn finish(&self, start: OpStart, kind: OpKind, media_bytes: u64, lines: u64) -> OpCost {
        let mut cost = self.charge(start, kind, media_bytes, lines);
        cost.waited_ps = self.wait(&cost);
        cost
    }

    fn charge_spin(&self, start: OpStart, kind: OpKind, base_ps: u64) -> OpCost {
        let (modelled_ps, interfered) = self.interference(kind, start.0, base_ps);
        let early = if kind == OpKind::Read { self.path.read_ticks } else { self.path.write_ticks };
        let deadline = (start.0 + self.rate.ticks_from_ps(modelled_ps)).saturating_sub(early);
        if kind != OpKind::Read && self.cost.interferes() {
            self.extend_window(deadline + self.rate.ticks_from_ps(self.cost.window_ps));
        }
        OpCost { modelled_ps, interfered, waited_ps: 0, deadline_ticks: deadline.max(1) }
    }

    fn charge_model(&self, kind: OpKind, base_ps: u64) -> OpCost {
        let (modelled_ps, interfered) = self.interference(kind, clock::virtual_now_ps(), base_ps);
        let end = clock::virtual_advance_ps(modelled_ps);
        if kind != OpKind::Read && self.cost.interferes() {
            self.extend_window(end + self.cost.window_ps);
        }
        OpCost { modelled_ps, interfered, ..OpCost::default() }
    }

    /// Moves the end of the interference window to `until` if that is later. A relaxed
    /// load and store, not a locked read-modify-write: a locked instruction is a full
    /// barrier on x86 and would make every write wait for its flushes, which the
    /// backing medium does not do. Two writers racing may keep the earlier of their
    /// ends, shortening the window by at most one write's cost.
    #[inline]
    fn extend_window(&self, until: u64) {
        if until > self.write_busy_until.load(Ordering::Relaxed) {
            self.write_busy_until.store(until, Ordering::Relaxed);
        }
    }

    /// A read starting at `now` (in the mode's time unit) is slowed if writes are busy.
    #[inline]
    fn interference(&self, kind: OpKind, now: u64, base_ps: u64) -> (u64, bool) {
        if kind == OpKind::Read && self.cost.interferes() && now < self.write_busy_until.load(Ordering::Relaxed) {
            (self.cost.interfered_ps(base_ps), true)
        } else {
            (base_ps, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_formulas() {
        let p = DeviceProfile::preset("optane-dcpmm").unwrap();
        let m = CostModel::new(&p);
        assert_eq!(m.read_ps(256), 305_000 + (256.0f64 * 1000.0 / 6.6).round() as u64);
        assert_eq!(m.write_ps(0), 94_000);
        assert_eq!(m.persist_ps(1), 94_000);
        assert_eq!(m.persist_ps(3), 94_000 + (128.0f64 * 1000.0 / 2.3).round() as u64);
        assert_eq!(m.interfered_ps(1000), 3500);
    }

    #[test]
    fn model_mode_interference_follows_the_virtual_clock() {
        clock::virtual_reset();
        let p = DeviceProfile::preset("optane-dcpmm").unwrap();
        let e = Emulator::new(EmulationMode::Model, &p);
        let r1 = e.finish(e.begin(), OpKind::Read, 256, 1);
        assert!(!r1.interfered);
        e.finish(e.begin(), OpKind::Write, 256, 1);
        let r2 = e.finish(e.begin(), OpKind::Read, 256, 1);
        assert!(r2.interfered);
        assert_eq!(r2.modelled_ps, e.cost_model().interfered_ps(r1.modelled_ps));
        clock::virtual_advance_ps(e.cost_model().interference_window_ps());
        let r3 = e.finish(e.begin(), OpKind::Read, 256, 1);
        assert!(!r3.interfered);
        clock::virtual_reset();
    }

    #[test]
    fn off_mode_neither_waits_nor_advances() {
        clock::virtual_reset();
        let p = DeviceProfile::preset("nvme-ssd").unwrap();
        let e = Emulator::new(EmulationMode::Off, &p);
        let c = e.finish(e.begin(), OpKind::Read, 4096, 64);
        assert!(c.modelled_ps >= 80_000_000);
        assert_eq!(c.waited_ps, 0);
        assert_eq!(clock::virtual_now_ps(), 0);
    }
}
