//! Time for emulation: the CPU's time-stamp counter, calibrated once at start-up, and
//! the per-thread virtual clock of `model` mode.
//!
//! The TSC is invariant on the machines we run on (`constant_tsc`, `nonstop_tsc`), so
//! ticks taken on different cores compare. Calibration measures ticks per nanosecond
//! against the monotonic clock over [`TSC_CALIBRATION_NS`]. On other targets the
//! monotonic clock stands in for the TSC at one tick per nanosecond.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::limits::{SPIN_WAIT_NS_MAX, TSC_CALIBRATION_NS};

/// Ticks of the time-stamp counter now.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc is baseline x86-64 and has no side effects.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Ticks of the time-stamp counter once every earlier instruction has completed
/// (`lfence; rdtsc`), for timing a batch end to end (calibration). Operations do not
/// use it: the fence would make each wait for its own flushes, which the backing
/// medium does not do, and measured worse on every row of the device bench.
#[inline(always)]
pub fn ticks_ordered() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence is baseline x86-64 (SSE2) and has no memory operands.
    unsafe {
        std::arch::x86_64::_mm_lfence()
    };
    ticks()
}

/// The calibrated rate of [`ticks`], and how far a spin-wait overshoots its deadline.
#[derive(Clone, Copy, Debug)]
pub struct TscRate {
    /// TSC ticks per nanosecond of the monotonic clock (1.0 where the monotonic
    /// clock stands in for the TSC, and in emulators that never spin).
    pub ticks_per_ns: f64,
    /// Median ticks by which [`spin_until`] passes its deadline (one loop turn plus
    /// the final read of the counter); spins aim this much early.
    pub overshoot_ticks: u64,
}

static RATE: OnceLock<TscRate> = OnceLock::new();

/// The tick rate, calibrated on first use (takes ~20 ms once per process).
pub fn rate() -> TscRate {
    *RATE.get_or_init(calibrate)
}

fn calibrate() -> TscRate {
    if cfg!(not(target_arch = "x86_64")) {
        return TscRate { ticks_per_ns: 1.0, overshoot_ticks: 0 };
    }
    // Sleeping through the window is fine: preemption lengthens both clocks alike.
    let t0 = Instant::now();
    let c0 = ticks();
    std::thread::sleep(Duration::from_nanos(TSC_CALIBRATION_NS));
    let c1 = ticks();
    let ns = t0.elapsed().as_nanos() as f64;
    let ticks_per_ns = c1.wrapping_sub(c0) as f64 / ns;
    assert!(ticks_per_ns.is_finite() && ticks_per_ns > 0.01, "TSC calibration failed: {ticks_per_ns} ticks/ns");
    // The overshoot of a spin: median over short waits, measured with no correction.
    let mut rate = TscRate { ticks_per_ns, overshoot_ticks: 0 };
    let wait = rate.ticks_from_ps(OVERSHOOT_PROBE_WAIT_NS * 1000);
    let mut over: Vec<u64> = (0..OVERSHOOT_PROBES)
        .map(|_| {
            let deadline = ticks() + wait;
            spin_until(deadline, rate);
            ticks().saturating_sub(deadline)
        })
        .collect();
    over.sort_unstable();
    rate.overshoot_ticks = over[over.len() / 2];
    rate
}

const OVERSHOOT_PROBES: usize = 2001;
const OVERSHOOT_PROBE_WAIT_NS: u64 = 200;

impl TscRate {
    /// Converts picoseconds to TSC ticks (rounded down).
    #[inline]
    pub fn ticks_from_ps(self, ps: u64) -> u64 {
        (ps as f64 * self.ticks_per_ns / 1000.0) as u64
    }

    /// Converts TSC ticks to nanoseconds.
    #[inline]
    pub fn ns_from_ticks(self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }
}

/// Busy-waits until the TSC reaches `deadline` (less the calibrated overshoot);
/// returns the ticks waited. A wait longer than [`SPIN_WAIT_NS_MAX`] is cut short: it
/// can only come from a broken cost.
#[inline]
pub fn spin_until(deadline: u64, rate: TscRate) -> u64 {
    let start = ticks();
    let deadline = deadline.saturating_sub(rate.overshoot_ticks);
    if start >= deadline {
        return 0;
    }
    let limit = start + rate.ticks_from_ps(SPIN_WAIT_NS_MAX * 1000);
    debug_assert!(deadline <= limit, "spin of {} ns", rate.ns_from_ticks(deadline - start));
    let deadline = deadline.min(limit);
    // No `pause` in the loop: on these CPUs it stalls for tens of nanoseconds, which
    // would make the wait's end that coarse; waits are short, so the core is not held long.
    let mut now = start;
    while now < deadline {
        now = ticks();
    }
    now - start
}

/// CPU time this thread has run (user and system), in nanoseconds: the clock `model`
/// mode can charge a thread's own work on, since unlike wall time it does not grow
/// while the thread waits for a core other processes hold. Only differences between
/// two readings of one thread mean anything. Where the platform has no per-thread CPU
/// clock, the monotonic clock stands in (wall time, the same on every call of one
/// process).
pub fn thread_cpu_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes one timespec through a pointer to a live local;
        // CLOCK_THREAD_CPUTIME_ID is a clock id of Linux and the BSDs, and an unknown
        // id only returns an error.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64);
        }
    }
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

thread_local! {
    static VIRTUAL_PS: Cell<u64> = const { Cell::new(0) };
}

/// This thread's virtual clock (`model` mode), in picoseconds of modelled device time.
#[inline]
pub fn virtual_now_ps() -> u64 {
    VIRTUAL_PS.with(|c| c.get())
}

/// Advances this thread's virtual clock by `ps`; returns the new time.
#[inline]
pub fn virtual_advance_ps(ps: u64) -> u64 {
    VIRTUAL_PS.with(|c| {
        let t = c.get().saturating_add(ps);
        c.set(t);
        t
    })
}

/// Sets this thread's virtual clock back to zero.
pub fn virtual_reset() {
    VIRTUAL_PS.with(|c| c.set(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_matches_the_monotonic_clock() {
        let r = rate();
        let t0 = Instant::now();
        let c0 = ticks();
        std::thread::sleep(Duration::from_millis(5));
        let ns_tsc = r.ns_from_ticks(ticks() - c0);
        let ns = t0.elapsed().as_nanos() as f64;
        assert!((ns_tsc - ns).abs() < ns * 0.05, "tsc {ns_tsc} ns vs clock {ns} ns");
    }

    #[test]
    fn spin_waits_about_as_asked() {
        let r = rate();
        let want_ns = 50_000u64;
        let t0 = Instant::now();
        spin_until(ticks() + r.ticks_from_ps(want_ns * 1000), r);
        let got = t0.elapsed().as_nanos() as u64;
        assert!(got >= want_ns * 9 / 10, "waited {got} ns, wanted {want_ns}");
    }

    #[test]
    fn the_thread_cpu_clock_counts_work_and_not_sleep() {
        let c0 = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_ns() - c0;
        assert!(slept < 15_000_000, "30 ms asleep charged {slept} ns of CPU");
        // Busy work advances it: 20 ms of it, however long other processes hold the
        // core meanwhile (at most 10 s of wall time).
        let (c1, t1) = (thread_cpu_ns(), Instant::now());
        let mut x = 0u64;
        while thread_cpu_ns() - c1 < 20_000_000 && t1.elapsed() < Duration::from_secs(10) {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let worked = thread_cpu_ns() - c1;
        assert!(worked >= 20_000_000, "{:?} of busy work charged {worked} ns of CPU", t1.elapsed());
    }

    #[test]
    fn virtual_clock_is_per_thread() {
        virtual_reset();
        virtual_advance_ps(1500);
        assert_eq!(virtual_now_ps(), 1500);
        std::thread::spawn(|| assert_eq!(virtual_now_ps(), 0)).join().unwrap();
        virtual_reset();
        assert_eq!(virtual_now_ps(), 0);
    }
}
