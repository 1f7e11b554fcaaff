//! The page provider: a thread that keeps DRAM frames free ahead of the misses that
//! need them, so that a miss takes a frame from the free list instead of evicting (and
//! writing a dirty victim) first (issue 20 item 3; LeanStore runs page-provider threads,
//! vmcache evicts in batches from the thread that runs short). With NVM between DRAM
//! and SSD it keeps NVM frames free too, so that a DRAM victim or an SSD miss the
//! policy sends to NVM does not wait for an NVM victim's write to SSD.
//!
//! It evicts exactly as a miss would: the same clock hand, the same questions to the
//! policy with the same page information, the same batches of dirty victims, the same
//! write-ahead force before a page leaves DRAM, the same double-write protection and,
//! with NVM, the same in-update protocol, since it calls the same code. What changes is
//! only when: a miss that found the free list empty would have evicted those victims
//! itself. A run compared against the simulator, which has no provider, runs without
//! one.
//!
//! The engine does not start the thread: the caller runs
//! [`BufferManager::provide_pages`] on a thread of its own (a scoped thread beside its
//! workers) and stops it with a flag. A buffer manager runs one provider at a time.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::{BufferError, BufferManager};
use crate::Result;
use crate::limits::{
    PROVIDER_ERROR_BACKOFF_MAX_MILLIS, PROVIDER_ERROR_BACKOFF_MILLIS, PROVIDER_FREE_FRAMES_DIVISOR,
    PROVIDER_IDLE_MICROS,
};

thread_local! {
    /// Set on the thread that runs the page provider: its write time is background
    /// time, counted apart from the misses' ([`on_provider_thread`]).
    static PROVIDER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running the page provider.
pub(super) fn on_provider_thread() -> bool {
    PROVIDER_THREAD.with(Cell::get)
}

/// Free frames a provider keeps in a pool of `frames` frames that evicts `evict_batch`
/// pages at once: one in [`PROVIDER_FREE_FRAMES_DIVISOR`], at least two batches, at most
/// a quarter of the pool.
pub(super) fn target(frames: usize, evict_batch: usize) -> usize {
    (frames / PROVIDER_FREE_FRAMES_DIVISOR).max(2 * evict_batch).min(frames / 4).max(1)
}

/// What a page provider did, from [`BufferManager::provide_pages`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProviderReport {
    /// Evictions it made (one page, or one batch of dirty pages).
    pub evictions: u64,
    /// DRAM frames it put on the free list.
    pub frames: u64,
    /// NVM frames it put on the NVM pool's free list (three-tier architectures).
    pub nvm_frames: u64,
    /// Evictions that failed (the pages stayed where they were); the misses that
    /// needed a frame meanwhile evicted themselves and met the error themselves.
    pub errors: u64,
    /// The first failure's message (the cause: after a failed write the SSD file
    /// refuses every later one until it is reopened).
    pub first_error: Option<String>,
    /// The last failure's message.
    pub last_error: Option<String>,
}

/// Registers the calling thread as the provider while it lives.
struct Running<'a> {
    bm: &'a BufferManager,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.bm.provider_on.store(false, Ordering::Relaxed);
        *self.bm.provider.lock() = None;
        PROVIDER_THREAD.with(|p| p.set(false));
    }
}

impl BufferManager {
    /// Free DRAM frames the page provider keeps ready.
    pub fn provider_target(&self) -> usize {
        self.provider_target
    }

    /// Free NVM frames the page provider keeps ready (0: no NVM pool, or no SSD for its
    /// victims).
    pub fn provider_nvm_target(&self) -> usize {
        self.provider_nvm_target
    }

    /// Runs the page provider on the calling thread until `stop` is set (or the buffer
    /// manager stops after a failed write-back): while fewer than
    /// [`provider_target`](Self::provider_target) DRAM frames are free, evicts the
    /// clock's next victims as a miss would (see the module doc) and puts their frames
    /// on the free list; otherwise sleeps until a miss runs the list low (at most
    /// [`PROVIDER_IDLE_MICROS`]). An eviction that fails is counted and retried after
    /// [`PROVIDER_ERROR_BACKOFF_MILLIS`], doubled after each failure in a row up to
    /// [`PROVIDER_ERROR_BACKOFF_MAX_MILLIS`]; nothing is lost: its pages stay where they
    /// were, and the misses that need a frame meanwhile evict themselves and meet the
    /// error. The caller who stops the provider should also unpark its thread, so that
    /// it sees the flag at once.
    ///
    /// # Errors
    /// `Config` if a provider already runs on this buffer manager.
    pub fn provide_pages(&self, stop: &AtomicBool) -> Result<ProviderReport, BufferError> {
        {
            let mut slot = self.provider.lock();
            if slot.is_some() {
                return Err(BufferError::Config { what: "a page provider already runs on this buffer manager".into() });
            }
            *slot = Some(std::thread::current());
        }
        PROVIDER_THREAD.with(|p| p.set(true));
        self.provider_on.store(true, Ordering::Relaxed);
        let _running = Running { bm: self };
        let idle = Duration::from_micros(PROVIDER_IDLE_MICROS);
        let mut report = ProviderReport::default();
        let mut backoff = PROVIDER_ERROR_BACKOFF_MILLIS;
        while !stop.load(Ordering::Acquire) && !self.stopped.load(Ordering::Relaxed) {
            let dram_low = self.free_frames.lock().len() < self.provider_target;
            let nvm_low = self.nvm.as_ref().is_some_and(|n| n.free_frames() < self.provider_nvm_target);
            if !dram_low && !nvm_low {
                std::thread::park_timeout(idle);
                continue;
            }
            let done = if dram_low { self.provide_once() } else { Ok(0) }.and_then(|dram| {
                let nvm = if nvm_low { self.provide_nvm_once()? } else { 0 };
                Ok((dram, nvm))
            });
            match done {
                Ok((0, 0)) => std::thread::park_timeout(idle),
                Ok((freed, nvm_freed)) => {
                    report.evictions += u64::from(freed > 0) + u64::from(nvm_freed > 0);
                    report.frames += freed as u64;
                    report.nvm_frames += nvm_freed as u64;
                    self.counters.add(super::Count::ProviderFrames, freed as u64);
                    self.counters.add(super::Count::ProviderNvmFrames, nvm_freed as u64);
                    backoff = PROVIDER_ERROR_BACKOFF_MILLIS;
                }
                Err(e) => {
                    report.errors += 1;
                    self.counters.bump(super::Count::ProviderErrors);
                    let message = e.to_string();
                    report.first_error.get_or_insert_with(|| message.clone());
                    report.last_error = Some(message);
                    // Parked, not slept: a stop (which unparks) ends the wait.
                    let until = std::time::Instant::now() + Duration::from_millis(backoff);
                    while !stop.load(Ordering::Acquire) && std::time::Instant::now() < until {
                        std::thread::park_timeout(until - std::time::Instant::now());
                    }
                    backoff = (backoff * 2).min(PROVIDER_ERROR_BACKOFF_MAX_MILLIS);
                }
            }
        }
        Ok(report)
    }

    /// Wakes the page provider (a miss found the free list low).
    pub(super) fn wake_provider(&self) {
        if let Some(t) = self.provider.lock().as_ref() {
            t.unpark();
        }
    }

    /// One NVM eviction, as a DRAM eviction or an SSD miss that needs an NVM frame
    /// makes it (the policy's victim or sweep, written to SSD if dirty, with the
    /// write-behind of the next dirty pages): returns the NVM frames it freed (0: none
    /// could be freed now).
    fn provide_nvm_once(&self) -> Result<usize, BufferError> {
        let Some(nvm) = &self.nvm else { return Ok(0) };
        let before = nvm.free_frames();
        // One round of the NVM clock at most, as `provide_once` for DRAM.
        match self.nvm_evict_one(nvm.len())? {
            Some(n) => {
                // Its header is clear (a victim's is cleared by the eviction): free it.
                // (A sweep that evicted nothing handed out a frame that was free: 0.)
                nvm.detach(n);
                Ok(nvm.free_frames().saturating_sub(before))
            }
            None => Ok(0),
        }
    }

    /// One eviction, as a miss makes it, within one round of the clock: returns the
    /// frames it put on the free list (0: every frame the hand passed was fixed, free or
    /// given a second chance).
    fn provide_once(&self) -> Result<usize, BufferError> {
        Ok(match self.evict_next(self.frames.len())? {
            Some((g, others)) => {
                self.return_frame(g);
                others + 1
            }
            None => 0,
        })
    }
}
