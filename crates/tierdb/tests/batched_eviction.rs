//! A pool without NVM evicts a dirty victim together with the clock's next victims
//! (`BufferConfig::evict_batch`): their pages go to SSD in one batch of writes, runs of
//! consecutive pages in one write each. Every page reads back after the batches, after
//! a close and reopen, and a batch whose write fails leaves every page where it was.

use std::sync::Arc;

mod pages;
use pages::{check, fill, rewrite, ssd_pool};

use tierdb::buffer::{BufferConfig, BufferManager, Entry};
use tierdb::device::{DoubleWriteMode, FaultError, FaultPlan, OpenMode};
use tierdb::{ExclusivePage, PageId, PageSource};

/// 32 frames per batch page: batches of 8 pages.
const FRAMES: u64 = 256;
const PAGES: u64 = 1000;

fn config(dir: &tempfile::TempDir, batch: usize, dwa: DoubleWriteMode, plan: Option<&Arc<FaultPlan>>) -> BufferConfig {
    let mut c = ssd_pool(dir, FRAMES, plan);
    c.double_write = dwa;
    c.evict_batch = batch;
    c
}

#[test]
fn dirty_victims_go_out_in_batches_and_every_page_reads_back() {
    for dwa in [DoubleWriteMode::Off, DoubleWriteMode::Ssd] {
        let mut writes = Vec::new();
        for batch in [1, 64] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = config(&dir, batch, dwa, None);
            c.ssd_open_mode = OpenMode::Create;
            let bm = BufferManager::open(&c).unwrap();
            let pages = fill(&bm, PAGES as usize);
            // Every page dirty again, in another order, twice over the pool.
            for round in 1..=2u8 {
                for &p in pages.iter().rev() {
                    rewrite(&bm, p, round);
                }
            }
            for &p in &pages {
                check(&bm, p, 2);
            }
            let s = bm.stats().buffer;
            assert!(s.dram_to_ssd_pages > PAGES, "{batch} {dwa}: {s:?}");
            writes.push(bm.ssd().unwrap().core().stats().snapshot().writes);
            bm.check_invariants();
            bm.close().unwrap();
            let mut c = config(&dir, batch, dwa, None);
            c.ssd_open_mode = OpenMode::Open;
            let bm = BufferManager::open(&c).unwrap();
            for &p in &pages {
                check(&bm, p, 2);
            }
        }
        // One page a time writes each victim alone; batches of 8 write runs.
        assert!(writes[1] * 2 < writes[0], "{dwa}: SSD writes one at a time {}, batched {}", writes[0], writes[1]);
    }
}

#[test]
fn a_batch_that_fails_to_write_leaves_every_page_in_its_frame() {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let mut c = config(&dir, 64, DoubleWriteMode::Off, Some(&plan));
    c.ssd_open_mode = OpenMode::Create;
    let bm = BufferManager::open(&c).unwrap();
    let pages = fill(&bm, FRAMES as usize - 8);
    let resident = |p: PageId| matches!(bm.location(p).unwrap(), Entry::Dram(_));
    assert!(pages.iter().all(|&p| resident(p)));
    plan.fail_nth_write(1, FaultError::NoSpace);
    // Allocating on fills the pool: the first batch's write fails.
    let mut failed = None;
    for _ in 0..64 {
        match bm.allocate() {
            Ok(mut g) => {
                let pid = g.page_id();
                g[0..8].copy_from_slice(&pid.0.to_le_bytes());
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let e = failed.expect("a batch was written and failed");
    assert!(e.to_string().contains("no space left"), "{e}");
    // No page left its frame: each still reads as written.
    for &p in &pages {
        assert!(resident(p), "{p} left DRAM: {:?}", bm.location(p));
        check(&bm, p, 0);
    }
    bm.check_invariants();
}
