//! The page provider (`BufferManager::provide_pages`) keeps DRAM frames free beside the
//! threads that use the pool, evicting as their misses would: every page reads back
//! while it runs, after it stops and after a close and reopen; a second provider is
//! refused; an eviction of the provider's that fails to write loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod pages;
use pages::{check, fill, rewrite, ssd_pool};

use tierdb::buffer::{BufferConfig, BufferManager, ProviderReport};
use tierdb::device::{DoubleWriteMode, FaultError, FaultPlan, OpenMode};
use tierdb::{ExclusivePage, PageId, PageSource};

/// Batches of 8 pages; the provider keeps 16 frames free.
const FRAMES: u64 = 256;
const PAGES: u64 = 1000;

fn config(dir: &tempfile::TempDir, mode: OpenMode, plan: Option<&Arc<FaultPlan>>) -> BufferConfig {
    let mut c = ssd_pool(dir, FRAMES, plan);
    c.ssd_open_mode = mode;
    c.double_write = DoubleWriteMode::Ssd;
    c
}

/// Sets the provider's stop flag when dropped: a failed assertion stops it too (else the
/// scope would wait for it forever).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Every page of `pages` dirty again, in another order, three times over the pool, and
/// read back after each round (round `r` in byte 100), while a provider evicts beside.
fn three_rounds_beside_a_provider(bm: &BufferManager, pages: &[PageId]) -> ProviderReport {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let provider = s.spawn(|| bm.provide_pages(&stop));
        let _stop = StopOnDrop(&stop);
        for round in 1..=3u8 {
            for &p in pages.iter().rev() {
                rewrite(bm, p, round);
            }
            for &p in pages {
                check(bm, p, round);
            }
        }
        stop.store(true, Ordering::Release);
        provider.thread().unpark();
        provider.join().unwrap().unwrap()
    })
}

#[test]
fn the_provider_frees_frames_ahead_and_every_page_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, OpenMode::Create, None)).unwrap();
    assert_eq!(bm.provider_target(), 16);
    let pages = fill(&bm, PAGES as usize);
    let report = three_rounds_beside_a_provider(&bm, &pages);
    let s = bm.stats().buffer;
    assert!(report.frames > 0 && report.errors == 0, "{report:?}");
    assert_eq!(s.provider_frames, report.frames, "{s:?}");
    assert!(s.provider_write_ns > 0, "the provider wrote dirty victims: {s:?}");
    assert!(s.dram_to_ssd_pages > PAGES, "{s:?}");
    bm.check_invariants();
    bm.close().unwrap();
    let bm = BufferManager::open(&config(&dir, OpenMode::Open, None)).unwrap();
    for &p in &pages {
        check(&bm, p, 3);
    }
}

#[test]
fn a_second_provider_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, OpenMode::Create, None)).unwrap();
    let (stop, stopped) = (AtomicBool::new(false), AtomicBool::new(true));
    std::thread::scope(|s| {
        let first = s.spawn(|| bm.provide_pages(&stop));
        let _stop = StopOnDrop(&stop);
        // Until the first one has registered, a second one (told to stop at once) runs
        // and returns; then it is refused.
        let started = Instant::now();
        let refused = loop {
            match bm.provide_pages(&stopped) {
                Err(e) => break e,
                Ok(r) => assert_eq!(r.evictions, 0, "{r:?}"),
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the first provider never started");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(refused.to_string().contains("already runs"), "{refused}");
        stop.store(true, Ordering::Release);
        first.join().unwrap().unwrap();
    });
    // Stopped, it leaves the place free for the next.
    assert!(bm.provide_pages(&stopped).is_ok());
}

#[test]
fn a_provider_whose_write_fails_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let bm = BufferManager::open(&config(&dir, OpenMode::Create, Some(&plan))).unwrap();
    // The pool all but full of dirty pages: the provider must write some to free 16.
    let pages = fill(&bm, FRAMES as usize - 8);
    plan.fail_nth_write(1, FaultError::NoSpace);
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        let provider = s.spawn(|| bm.provide_pages(&stop));
        let _stop = StopOnDrop(&stop);
        // The provider fails and backs off; a miss that needs a frame meanwhile evicts
        // itself and meets the device's refusal as its own typed error.
        let started = Instant::now();
        while bm.stats().buffer.provider_errors == 0 {
            assert!(started.elapsed() < Duration::from_secs(30), "the provider never tried to write");
            std::thread::sleep(Duration::from_millis(1));
        }
        let e = loop {
            match bm.allocate() {
                Ok(mut g) => {
                    let pid = g.page_id();
                    g[0..8].copy_from_slice(&pid.0.to_le_bytes());
                }
                Err(e) => break e,
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the pool never ran out");
        };
        stop.store(true, Ordering::Release);
        provider.thread().unpark();
        (e.to_string(), provider.join().unwrap().unwrap())
    });
    let (miss, report) = report;
    // The provider met the full device; the miss, the handle that refuses writes after
    // a failed one.
    assert!(report.errors >= 1 && report.frames == 0, "{report:?}");
    assert_eq!(bm.stats().buffer.provider_errors, report.errors);
    let first = report.first_error.as_deref().unwrap_or_default();
    assert!(first.contains("no space left"), "{report:?}");
    assert!(miss.contains("poisoned by an earlier failed write"), "{miss}");
    // Every failed eviction left its pages where they were: each reads as written.
    for &p in &pages {
        check(&bm, p, 0);
    }
    bm.check_invariants();
}

/// With NVM between DRAM and SSD the provider keeps NVM frames free as well, evicting
/// the NVM clock's victims (dirty ones written to SSD) as a DRAM eviction that needs an
/// NVM frame would: every page reads back while it runs and after a reopen.
#[test]
fn the_provider_keeps_nvm_frames_free_too() {
    let dir = tempfile::tempdir().unwrap();
    let nvm_frames = 256u64;
    let cfg = |mode| {
        let mut c = config(&dir, mode, None);
        c.policy = "eager".into(); // every DRAM victim to NVM: NVM fills and evicts
        c.nvm = Some(tierdb::device::NvmConfig::new(
            dir.path().join("t.nvm"),
            tierdb::ByteSize((8192 + nvm_frames * (4096 + 64) + 4096).next_multiple_of(4096)),
        ));
        c
    };
    let bm = BufferManager::open(&cfg(OpenMode::Create)).unwrap();
    let target = bm.provider_nvm_target();
    assert!(target >= 1 && target <= nvm_frames as usize / 4, "{target}");
    let pages = fill(&bm, PAGES as usize);
    let report = three_rounds_beside_a_provider(&bm, &pages);
    let s = bm.stats().buffer;
    assert!(report.nvm_frames > 0 && report.frames > 0 && report.errors == 0, "{report:?}");
    assert_eq!(s.provider_nvm_frames, report.nvm_frames, "{s:?}");
    assert!(s.nvm_to_ssd_pages > 0, "dirty NVM victims went to SSD: {s:?}");
    bm.check_invariants();
    bm.close().unwrap();
    let bm = BufferManager::open(&cfg(OpenMode::Open)).unwrap();
    for &p in &pages {
        check(&bm, p, 3);
    }
    bm.check_invariants();
}
