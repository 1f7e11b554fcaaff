//! The buffer manager across its tiers: placement decisions, counters, contents,
//! persistence across close and open, and bad input.

use std::collections::HashMap;

mod pages;
use pages::fill;

use tierdb::buffer::{BufferConfig, BufferManager, Entry};
use tierdb::device::{NvmConfig, OpenMode, SsdConfig};
use tierdb::ids::NvmSlot;
use tierdb::{ByteSize, ExclusivePage, PageId, PageSource, SharedPage};

const PS: usize = 4096;

fn config(dir: &tempfile::TempDir, dram_frames: u64, nvm_frames: Option<u64>, ssd: bool, policy: &str) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(dram_frames * PS as u64));
    c.page_size = PS;
    c.policy = policy.into();
    // Frames plus headers plus the pool header, rounded generously.
    c.nvm = nvm_frames.map(|n| {
        NvmConfig::new(dir.path().join("t.nvm"), ByteSize((8192 + n * (PS as u64 + 64) + 4096).next_multiple_of(4096)))
    });
    if ssd {
        c.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
    }
    c
}

fn read_tag(bm: &BufferManager, pid: PageId) -> u64 {
    let g = bm.fix_shared(pid).unwrap();
    assert_eq!(g.page_id(), pid);
    u64::from_le_bytes(g[0..8].try_into().unwrap())
}

#[test]
fn hymem_admits_a_page_on_its_second_eviction() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, 8, Some(16), true, "hymem");
    let bm = BufferManager::open(&cfg).unwrap();
    let nvm_frames = bm.info().nvm_frames;
    assert!(nvm_frames >= 16, "{nvm_frames}");
    // Catalog + 7 pages fill DRAM; the 8th evicts the clock's first victim.
    let pages = fill(&bm, 7);
    let before = bm.stats().buffer;
    let extra = fill(&bm, 1);
    let s = bm.stats().buffer.since(&before);
    assert_eq!((s.dram_evictions, s.dram_to_ssd_pages, s.nvm_admissions), (1, 1, 0), "{s:?}");
    // Which page left? The one now EMPTY.
    let victim =
        pages.iter().copied().chain([PageId::CATALOG]).find(|p| bm.location(*p).unwrap() == Entry::Empty).unwrap();
    // Read it back (SSD → DRAM), then force it out again: now it is admitted.
    assert_eq!(read_tag(&bm, victim), if victim == PageId::CATALOG { 0 } else { victim.0 });
    let before = bm.stats().buffer;
    assert_eq!(before.ssd_reads, 1);
    let mut rounds = 0;
    while bm.location(victim).unwrap() != Entry::Nvm(NvmSlot::new(0)) {
        fill(&bm, 1);
        rounds += 1;
        assert!(rounds < 64, "the page never reached NVM: {:?}", bm.location(victim));
    }
    let s = bm.stats().buffer.since(&before);
    assert!(s.nvm_admissions >= 1, "{s:?}");
    // A third access is an NVM hit, copied page-wise back into DRAM.
    let before = bm.stats().buffer;
    read_tag(&bm, victim);
    let s = bm.stats().buffer.since(&before);
    assert_eq!((s.nvm_hits, s.nvm_to_dram_pages, s.ssd_reads), (1, 1, 0), "{s:?}");
    bm.check_invariants();
    let _ = extra;
}

#[test]
fn eager_admits_every_victim_and_nvm_evicts_to_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, Some(8), true, "eager")).unwrap();
    let nvm_frames = bm.info().nvm_frames as u64;
    let pages = fill(&bm, 40);
    let s = bm.stats().buffer;
    // Every DRAM eviction admitted to NVM; once NVM filled, NVM victims went to SSD.
    assert_eq!(s.dram_evictions, s.nvm_admissions, "{s:?}");
    assert_eq!(s.dram_to_ssd_pages, 0, "{s:?}");
    assert_eq!(s.nvm_evictions, s.dram_evictions - nvm_frames, "{s:?}");
    assert_eq!(s.nvm_to_ssd_pages, s.nvm_evictions, "new pages are dirty: {s:?}");
    for &p in &pages {
        assert_eq!(read_tag(&bm, p), p.0);
    }
    bm.check_invariants();
}

#[test]
fn contents_survive_every_tier_with_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 12, Some(24), true, "hymem")).unwrap();
    let pages = fill(&bm, 100);
    // Each thread owns alternate pages and keeps a model of a counter in each.
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (bm, pages) = (&bm, &pages);
            s.spawn(move || {
                let mut model: HashMap<PageId, u64> = HashMap::new();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                for i in 0..4000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let idx = (x % 50) as usize * 2 + t as usize;
                    let pid = pages[idx];
                    if i % 3 == 0 {
                        let mut g = bm.fix_exclusive(pid).unwrap();
                        let v = model.entry(pid).or_insert(0);
                        *v += 1;
                        g[8..16].copy_from_slice(&v.to_le_bytes());
                    } else {
                        let g = bm.fix_shared(pid).unwrap();
                        assert_eq!(u64::from_le_bytes(g[0..8].try_into().unwrap()), pid.0);
                        let want = model.get(&pid).copied().unwrap_or(0);
                        assert_eq!(u64::from_le_bytes(g[8..16].try_into().unwrap()), want, "{pid} in thread {t}");
                    }
                }
            });
        }
    });
    let s = bm.stats().buffer;
    assert!(s.ssd_reads > 0 && s.nvm_hits > 0 && s.dram_hits > 0, "all three tiers served fixes: {s:?}");
    bm.check_invariants();
}

#[test]
fn a_closed_database_reopens_with_its_pages_and_free_list() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&dir, 8, Some(8), true, "hymem");
    cfg.ssd_open_mode = OpenMode::Create;
    let bm = BufferManager::open(&cfg).unwrap();
    let pages = fill(&bm, 30);
    bm.free(bm.fix_exclusive(pages[3]).unwrap()).unwrap();
    bm.free(bm.fix_exclusive(pages[7]).unwrap()).unwrap();
    {
        let mut c = bm.fix_exclusive(PageId::CATALOG).unwrap();
        c[100] = 0xAB;
    }
    bm.close().unwrap();

    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    assert_eq!(bm.pages_in_use(), 29, "catalog + 30 - 2 freed");
    assert_eq!(bm.fix_shared(PageId::CATALOG).unwrap()[100], 0xAB);
    for (i, &p) in pages.iter().enumerate() {
        if i != 3 && i != 7 {
            assert_eq!(read_tag(&bm, p), p.0);
        }
    }
    // Freed ids come back first, but for the one holding the free-page list the
    // superblock names: it comes back once the next checkpoint has written another
    // list (here into a fresh page, as no other page is free).
    let mut freed = vec![pages[3], pages[7]];
    freed.sort();
    assert_eq!(bm.free_pages(), freed);
    let first = bm.allocate().unwrap().page_id();
    assert!(freed.contains(&first), "{first}");
    assert_eq!(bm.allocate().unwrap().page_id(), PageId(32));
    bm.checkpoint().unwrap();
    let list_page = freed.iter().find(|p| **p != first).copied();
    assert_eq!(Some(bm.allocate().unwrap().page_id()), list_page);
    assert_eq!(bm.free_pages(), vec![PageId(33)], "the new list's page");
    assert_eq!(bm.allocate().unwrap().page_id(), PageId(34));
    bm.check_invariants();
    bm.close().unwrap();

    // Another page size: a typed error, the file untouched.
    let mut other = cfg.clone();
    other.page_size = 8192;
    other.dram.size = ByteSize(1 << 20);
    let e = BufferManager::open(&other).err().unwrap();
    assert!(e.to_string().contains("page size"), "{e}");
    let bm = BufferManager::open(&cfg).unwrap();
    assert_eq!(read_tag(&bm, pages[0]), pages[0].0);
}

#[test]
fn basic_nvm_bm_refuses_data_larger_than_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, Some(20), false, "eager")).unwrap();
    let cap = bm.info().nvm_frames;
    let pages = fill(&bm, cap - 1); // the catalog takes one
    let e = bm.allocate().err().expect("NVM is full");
    assert!(e.to_string().contains("does not fit"), "{e}");
    for &p in &pages {
        assert_eq!(read_tag(&bm, p), p.0);
    }
    let s = bm.stats().buffer;
    assert_eq!(s.ssd_reads, 0);
    assert!(s.nvm_hits > 0, "{s:?}");
    bm.check_invariants();
}

#[test]
fn ssd_bm_uses_no_nvm_and_unknown_pages_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, None, true, "eager")).unwrap();
    let pages = fill(&bm, 20);
    for &p in pages.iter().rev() {
        assert_eq!(read_tag(&bm, p), p.0);
    }
    let s = bm.stats();
    assert!(s.nvm.is_none());
    assert!(s.buffer.ssd_reads > 0 && s.buffer.dram_to_ssd_pages > 0, "{:?}", s.buffer);
    assert!(bm.fix_shared(PageId(500)).is_err());
    assert!(bm.fix_shared(PageId(0)).is_err());
    bm.check_invariants();
}

#[test]
fn bad_configurations_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir, 8, None, true, "lru-k");
    assert!(BufferManager::open(&c).err().unwrap().to_string().contains("unknown policy"));
    c.policy = "eager".into();
    c.page_size = 3000;
    assert!(BufferManager::open(&c).err().unwrap().to_string().contains("power of two"));
    let tiny = config(&dir, 2, None, true, "eager");
    assert!(BufferManager::open(&tiny).err().unwrap().to_string().contains("at least"));
}

/// Regression: a page whose NVM copy was dirty and which sat clean in DRAM at close was
/// never written to SSD, so it read back stale after reopening.
#[test]
fn close_writes_dirty_nvm_copies_of_pages_cached_in_dram() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&dir, 8, Some(32), true, "eager");
    cfg.ssd_open_mode = OpenMode::Create;
    let bm = BufferManager::open(&cfg).unwrap();
    let pages = fill(&bm, 24);
    // Dirty every page, push them through NVM, then read some back clean into DRAM.
    for round in 1..=3u64 {
        for &p in &pages {
            bm.fix_exclusive(p).unwrap()[8..16].copy_from_slice(&round.to_le_bytes());
        }
    }
    for &p in &pages[..6] {
        read_tag(&bm, p);
    }
    let cached_clean_with_dirty_nvm =
        pages.iter().filter(|p| matches!(bm.location(**p).unwrap(), Entry::Dram(_))).count();
    assert!(cached_clean_with_dirty_nvm > 0);
    bm.close().unwrap();
    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    for &p in &pages {
        let g = bm.fix_shared(p).unwrap();
        assert_eq!(u64::from_le_bytes(g[8..16].try_into().unwrap()), 3, "{p} is stale");
    }
}

/// A fix of a freed page (a reader that followed a stale reference) fails with
/// `NoSuchPage`, before and after a reopen, instead of loading the page's old bytes from
/// SSD into a frame, which the page's next allocation would have left behind, still
/// naming the page; once handed out again the page fixes as ever.
#[test]
fn a_freed_page_is_not_loaded_by_a_stale_fix() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&dir, 8, None, true, "eager");
    cfg.ssd_open_mode = OpenMode::Create;
    let bm = BufferManager::open(&cfg).unwrap();
    let pages = fill(&bm, 30); // more than DRAM: most are on SSD only
    let gone = pages[4];
    bm.free(bm.fix_exclusive(gone).unwrap()).unwrap();
    let freed = |bm: &BufferManager| {
        let e = bm.fix_shared(gone).map(|_| ()).unwrap_err();
        assert!(matches!(&e, tierdb::buffer::BufferError::NoSuchPage { pid, why: "freed" } if *pid == gone), "{e}");
        assert!(bm.fix_optimistic(gone).is_err() && bm.fix_lines(gone, false).is_err());
    };
    freed(&bm);
    bm.check_invariants();
    bm.close().unwrap();
    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    freed(&bm);
    // Handed out again (once a checkpoint has moved the free-page list it holds to
    // another page), it is a page like any other: zeroed, not its old bytes.
    bm.checkpoint().unwrap();
    freed(&bm);
    let mut g = bm.allocate().unwrap();
    assert_eq!(g.page_id(), gone);
    assert!(g.iter().all(|&b| b == 0));
    g[0..8].copy_from_slice(&gone.0.to_le_bytes());
    drop(g);
    assert_eq!(read_tag(&bm, gone), gone.0);
    bm.check_invariants();
}
