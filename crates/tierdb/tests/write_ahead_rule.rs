//! The write-ahead rule in the buffer manager: a page changed under a log record is
//! written out (to NVM or SSD) only after the log is forced up to that record, the NVM
//! frame header records the page LSN, and a log that cannot be forced keeps the page in
//! DRAM.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tierdb::ByteSize;
use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::device::{NvmConfig, SsdConfig};
use tierdb::ids::PageId;
use tierdb::page::ExclusivePage;
use tierdb::page::LinePage;
use tierdb::page::PageSource;
use tierdb::wal::{LogForce, Lsn};

const PS: usize = 4096;

#[derive(Default)]
struct Recorder {
    forced: Mutex<Vec<u64>>,
    fail: AtomicBool,
}

impl LogForce for Recorder {
    fn force(&self, lsn: Lsn) -> Result<(), tierdb::wal::WalError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(tierdb::wal::WalError::Config { what: "the log is gone".into() });
        }
        self.forced.lock().push(lsn.get());
        Ok(())
    }
}

fn manager(dir: &std::path::Path, tech: Techniques) -> BufferManager {
    let mut c = BufferConfig::new(ByteSize(8 * PS as u64));
    c.page_size = PS;
    c.nvm = Some(NvmConfig::new(dir.join("t.nvm"), ByteSize(1 << 20)));
    c.ssd = Some(SsdConfig::new(dir.join("t.db")));
    c.techniques = tech;
    BufferManager::open(&c).unwrap()
}

#[test]
fn evicted_pages_force_the_log_first_and_carry_their_lsn_to_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let bm = manager(dir.path(), Techniques::NONE);
    let rec = Arc::new(Recorder::default());
    bm.set_log(rec.clone()).unwrap();
    assert!(bm.set_log(rec.clone()).is_err(), "set once");
    let mut pids = Vec::new();
    for i in 0..40u64 {
        let mut g = bm.allocate().unwrap();
        g[0] = i as u8;
        g.set_page_lsn(Lsn::new(1000 + i));
        g.set_page_lsn(Lsn::new(5)); // smaller LSNs are ignored
        pids.push(g.page_id());
    }
    // 40 pages through 8 DRAM frames: most were evicted, each after forcing its LSN.
    let forced = rec.forced.lock().clone();
    assert!(forced.len() >= 30, "{forced:?}");
    for (i, pid) in pids.iter().enumerate().take(30) {
        assert!(forced.contains(&(1000 + i as u64)), "{pid} was written out without forcing its LSN: {forced:?}");
    }
    let nvm = bm.nvm().unwrap();
    let with_lsn = nvm
        .slots()
        .filter_map(|n| nvm.header(n).unwrap())
        .filter(|h| {
            h.page_lsn >= Lsn::new(1000)
                && pids.iter().position(|p| *p == h.pid) == Some(h.page_lsn.get() as usize - 1000)
        })
        .count();
    assert!(with_lsn >= 25, "NVM headers carry the page LSNs: {with_lsn}");
}

#[test]
fn line_grained_write_backs_force_the_log_too() {
    let dir = tempfile::tempdir().unwrap();
    let bm = manager(dir.path(), Techniques::ALL);
    let mut pids = Vec::new();
    for _ in 0..20 {
        pids.push(bm.allocate().unwrap().page_id());
    }
    bm.checkpoint().unwrap();
    // Cycle the pages so the first ones are in NVM only.
    for p in &pids {
        drop(bm.fix_shared(*p).unwrap());
    }
    let rec = Arc::new(Recorder::default());
    bm.set_log(rec.clone()).unwrap();
    let mut g = bm.fix_lines(pids[0], true).unwrap();
    g.write(100, 8).unwrap().copy_from_slice(b"changed!");
    g.set_page_lsn(Lsn::new(777));
    drop(g);
    for p in &pids[1..] {
        drop(bm.fix_shared(*p).unwrap());
    }
    assert!(rec.forced.lock().contains(&777), "{:?}", rec.forced.lock());
    let g = bm.fix_shared(pids[0]).unwrap();
    assert_eq!(&g[100..108], b"changed!");
}

#[test]
fn a_log_that_cannot_be_forced_keeps_the_page_in_dram() {
    let dir = tempfile::tempdir().unwrap();
    let bm = manager(dir.path(), Techniques::NONE);
    let rec = Arc::new(Recorder::default());
    bm.set_log(rec.clone()).unwrap();
    let mut pids: Vec<PageId> = Vec::new();
    for i in 0..7u64 {
        let mut g = bm.allocate().unwrap();
        g.set_page_lsn(Lsn::new(10 + i));
        pids.push(g.page_id());
    }
    rec.fail.store(true, Ordering::Relaxed);
    // Every frame holds a page that needs the log: no victim can leave DRAM.
    let mut failures = 0;
    for _ in 0..4 {
        if bm.allocate().is_err() {
            failures += 1;
        }
    }
    assert!(failures > 0, "allocations needing an eviction fail while the log cannot be forced");
    rec.fail.store(false, Ordering::Relaxed);
    for p in &pids {
        assert!(bm.fix_shared(*p).is_ok(), "{p} is still readable");
    }
    bm.check_invariants();
}
