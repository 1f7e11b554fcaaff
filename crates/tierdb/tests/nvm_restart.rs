//! Restart from NVM (paper §4.4): reopening a database rebuilds the page table from the
//! NVM pool's frame headers instead of formatting the pool, fast enough to cover at
//! least 10 GB of NVM frames per second, and the pages found are used, not re-read.

use tierdb::ByteSize;
use tierdb::buffer::{BufferConfig, BufferManager, Entry};
use tierdb::device::{NvmConfig, OpenMode, SsdConfig};
use tierdb::ids::PageId;
use tierdb::page::ExclusivePage;
use tierdb::page::PageSource;

const PS: usize = 4096;
/// Reopens whose rebuild speed is measured; the best counts.
const RESTART_ATTEMPTS: usize = 3;

fn config(dir: &std::path::Path, mode: OpenMode) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(4 << 20));
    c.page_size = PS;
    c.policy = "eager".into();
    c.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(256 << 20)));
    c.ssd = Some(SsdConfig::new(dir.join("data.db")));
    c.ssd_open_mode = mode;
    c
}

#[test]
fn a_clean_restart_rebuilds_the_page_table_from_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let pages = 12_000u64;
    {
        let bm = BufferManager::open(&config(dir.path(), OpenMode::Create)).unwrap();
        for i in 0..pages {
            let mut g = bm.allocate().unwrap();
            let pid = g.page_id();
            g[..8].copy_from_slice(&pid.0.to_le_bytes());
            g[PS - 1] = i as u8;
        }
        assert!(bm.restart_info().is_none(), "a new database has no restart");
        bm.close().unwrap();
    }
    // The rebuild's speed is a measurement on a shared machine: the best of a few
    // clean reopens must reach it (a rebuild that reads page bodies never does).
    let mut best_gb_per_sec = 0.0f64;
    for _ in 1..RESTART_ATTEMPTS {
        let bm = BufferManager::open(&config(dir.path(), OpenMode::Open)).unwrap();
        best_gb_per_sec = best_gb_per_sec.max(bm.restart_info().unwrap().frames_gb_per_sec);
        bm.close().unwrap();
    }
    let bm = BufferManager::open(&config(dir.path(), OpenMode::Open)).unwrap();
    let info = bm.restart_info().unwrap();
    eprintln!("restart: {info:?}");
    assert!(info.formatted_because.is_none() && info.frames_cleared.is_empty(), "{info:?}");
    // DRAM held ~1000 pages at close; the rest were evicted into NVM.
    assert!(info.pages_reused as u64 > pages - 1100, "{info:?}");
    let best_gb_per_sec = best_gb_per_sec.max(info.frames_gb_per_sec);
    assert!(best_gb_per_sec >= 10.0, "page-table rebuild covered at best {best_gb_per_sec:.1} GB/s: {info:?}");
    let in_nvm = (1..pages + 2).filter(|p| matches!(bm.location(PageId(*p)).unwrap(), Entry::Nvm(_))).count();
    assert_eq!(in_nvm, info.pages_reused);
    for p in (2..pages + 2).step_by(7) {
        let g = bm.fix_shared(PageId(p)).unwrap();
        assert_eq!(u64::from_le_bytes(g[..8].try_into().unwrap()), p);
    }
    let s = bm.stats().buffer;
    assert!(s.nvm_hits > s.ssd_reads * 5, "served from NVM: {s:?}");
    bm.check_invariants();
}

#[test]
fn a_pool_of_another_database_is_formatted_and_reported() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [&a, &b] {
        let bm = BufferManager::open(&config(dir.path(), OpenMode::Create)).unwrap();
        drop(bm.allocate().unwrap());
        bm.close().unwrap();
    }
    // Database B opened with database A's NVM pool: not B's, so it is formatted.
    let mut cfg = config(b.path(), OpenMode::Open);
    cfg.nvm = Some(NvmConfig::new(a.path().join("pool.nvm"), ByteSize(256 << 20)));
    let bm = BufferManager::open(&cfg).unwrap();
    let info = bm.restart_info().unwrap();
    assert!(info.formatted_because.as_deref().is_some_and(|w| w.contains("belongs to database")), "{info:?}");
    assert_eq!(info.pages_reused, 0);
    bm.check_invariants();
}
