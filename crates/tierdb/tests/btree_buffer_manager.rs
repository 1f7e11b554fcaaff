//! The B+-tree, unchanged, on the buffer manager with DRAM far smaller than the tree,
//! so that every operation moves pages between DRAM, NVM and SSD: random operations
//! checked against a `BTreeMap`, two threads at once, and the tree found again by name
//! after the database is closed and reopened. Each runs as the basic buffer manager and
//! again with cache-line-grained pages, mini pages and pointer swizzling in debug mode.

use std::collections::BTreeMap;

mod pages;

use rand::prelude::*;
use tierdb::btree::BTree;
use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::catalog::Catalog;
use tierdb::device::OpenMode;

/// The techniques every test runs with: none, and all in debug mode.
const TECHS: [Techniques; 2] = [Techniques::NONE, Techniques::ALL];

/// DRAM of `dram_frames`, NVM of `nvm_frames` (none if 0), SSD; debug mode for
/// cache-line-grained access whenever a technique is on.
fn config(dir: &tempfile::TempDir, dram_frames: u64, nvm_frames: u64, policy: &str, tech: Techniques) -> BufferConfig {
    let mut c = pages::tiered(dir, dram_frames, nvm_frames, policy, tech);
    c.debug_lines = tech != Techniques::NONE;
    c
}

/// Random operations on tree `t`, mirrored in `m`.
fn run(t: &BTree<'_, BufferManager>, m: &mut BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut SmallRng, ops: usize) {
    for _ in 0..ops {
        let k = key(rng);
        match rng.random_range(0..10) {
            0..4 => {
                let v = value(rng);
                assert_eq!(t.insert(&k, &v).unwrap(), !m.contains_key(&k));
                m.entry(k).or_insert(v);
            }
            4..6 => {
                let v = value(rng);
                t.upsert(&k, &v).unwrap();
                m.insert(k, v);
            }
            6..8 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some()),
            _ => assert_eq!(t.get(&k, <[u8]>::to_vec).unwrap(), m.get(&k).cloned()),
        }
    }
}

/// Builds a tree through the buffer manager, closes it, reopens the database and
/// finds the tree by name with all its contents.
fn survives_close_and_reopen(nvm_frames: u64, policy: &str, tech: Techniques) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(5);
    {
        let bm = BufferManager::open(&config(&dir, 24, nvm_frames, policy, tech)).unwrap();
        let t = Catalog::create_tree(&bm, "t").unwrap();
        run(&t, &mut m, &mut rng, 10_000);
        check(&t, &m, &format!("{policy}, {nvm_frames} NVM frames, before close"));
        bm.close().unwrap();
    }
    let mut cfg = config(&dir, 24, nvm_frames, policy, tech);
    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    check(&t, &m, &format!("{policy}, {nvm_frames} NVM frames, after reopen"));
    if nvm_frames > 0 {
        // The NVM pool was not formatted: its pages went back into the page table and
        // were read from there (paper §4.4).
        let info = bm.restart_info().expect("a reopened database with NVM reports its restart");
        assert!(info.formatted_because.is_none() && info.frames_cleared.is_empty(), "{info:?}");
        assert!(info.pages_reused > 10, "{info:?}");
        assert!(bm.stats().buffer.nvm_hits > 0, "{:?}", bm.stats().buffer);
        bm.check_invariants();
    }
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("user{:019}", rng.random_range(0..4000u64) * 104_729).into_bytes()
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = if rng.random_bool(0.1) { rng.random_range(300..600) } else { rng.random_range(0..100) };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn check(t: &BTree<'_, BufferManager>, m: &BTreeMap<Vec<u8>, Vec<u8>>, phase: &str) {
    let st = t.check_invariants().unwrap_or_else(|e| panic!("{phase}: {e}"));
    assert_eq!(st.entries, m.len() as u64, "{phase}");
    let mut it = m.iter();
    t.scan(b"", |k, v| {
        let want = it.next().map(|(a, b)| (a.as_slice(), b.as_slice()));
        assert!(
            Some((k, v)) == want,
            "{phase}: {:?} found, {:?} expected",
            String::from_utf8_lossy(k),
            want.map(|w| String::from_utf8_lossy(w.0))
        );
        true
    })
    .unwrap();
    assert!(it.next().is_none(), "{phase}");
}

#[test]
fn random_operations_through_all_tiers() {
    for (policy, tech) in ["eager", "hymem"].into_iter().flat_map(|p| TECHS.map(|t| (p, t))) {
        let dir = tempfile::tempdir().unwrap();
        let bm = BufferManager::open(&config(&dir, 24, 48, policy, tech)).unwrap();
        let t = BTree::create(&bm).unwrap();
        let (mut m, mut rng) = (BTreeMap::new(), SmallRng::seed_from_u64(11));
        run(&t, &mut m, &mut rng, 15_000);
        check(&t, &m, &format!("{policy} {tech}"));
        let st = t.check_invariants().unwrap();
        assert!(st.pages() > 3 * 24, "the tree ({} pages) is much larger than DRAM", st.pages());
        let s = bm.stats().buffer;
        assert!(s.dram_evictions > 1000, "{policy}: {s:?}");
        assert!(s.nvm_hits > 0 && s.ssd_reads > 0 && s.nvm_evictions > 0, "all three tiers in use: {policy}: {s:?}");
        if tech == Techniques::ALL {
            assert!(s.line_faults > 0 && s.mini_allocations > 0 && s.mini_promotions > 0, "{policy}: {s:?}");
            assert!(s.nvm_lines_written > 0, "{policy}: {s:?}");
            assert!(s.swizzles > 0 && s.unswizzles > 0, "swizzled under eviction pressure: {policy}: {s:?}");
        }
        bm.check_invariants();
    }
}

#[test]
fn survives_close_and_reopen_without_nvm() {
    survives_close_and_reopen(0, "eager", Techniques::NONE);
}

/// Regression: pages whose NVM copy was dirty while they sat clean in DRAM at close
/// read back stale after reopening.
#[test]
fn survives_close_and_reopen_with_nvm() {
    for tech in TECHS {
        survives_close_and_reopen(48, "eager", tech);
        survives_close_and_reopen(48, "hymem", tech);
    }
}

#[test]
fn two_threads_through_all_tiers() {
    for tech in TECHS {
        two_threads(tech);
    }
}

fn two_threads(tech: Techniques) {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 64, 64, "hymem", tech)).unwrap();
    let t = BTree::create(&bm).unwrap();
    let models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..2u8)
            .map(|tid| {
                let t = &t;
                sc.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(tid as u64);
                    let mut m = BTreeMap::new();
                    for _ in 0..8000 {
                        let k = [&[tid][..], &key(&mut rng)].concat();
                        match rng.random_range(0..10) {
                            0..5 => {
                                let v = value(&mut rng);
                                t.upsert(&k, &v).unwrap();
                                m.insert(k, v);
                            }
                            5..8 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some()),
                            _ => {
                                let mut n = 0;
                                t.scan(&k, |_, _| {
                                    n += 1;
                                    n < 20
                                })
                                .unwrap();
                            }
                        }
                    }
                    m
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: BTreeMap<_, _> = models.into_iter().flatten().collect();
    check(&t, &all, "two threads");
    assert_eq!(bm.info().pages_in_use, 1 + t.check_invariants().unwrap().pages());
}

/// Two threads on the same keys: every value they write is tagged with the writer, and
/// at the end each surviving key holds a value one of them wrote, whole.
#[test]
fn two_threads_on_overlapping_keys_through_all_tiers() {
    for tech in TECHS {
        two_threads_overlapping(tech);
    }
}

fn two_threads_overlapping(tech: Techniques) {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 32, 48, "hymem", tech)).unwrap();
    let t = BTree::create(&bm).unwrap();
    std::thread::scope(|sc| {
        for tid in 0..2u8 {
            let t = &t;
            sc.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + tid as u64);
                for _ in 0..8000 {
                    let k = key(&mut rng);
                    match rng.random_range(0..10) {
                        0..6 => {
                            let len = rng.random_range(1..400);
                            t.upsert(&k, &vec![tid + 1; len]).unwrap();
                        }
                        6..8 => {
                            t.delete(&k).unwrap();
                        }
                        _ => {
                            t.get(&k, |v| assert!(v.iter().all(|&b| b == v[0]) && (1..=2).contains(&v[0]))).unwrap();
                        }
                    }
                }
            });
        }
    });
    let st = t.check_invariants().unwrap();
    let mut n = 0;
    t.scan(b"", |_, v| {
        n += 1;
        assert!(!v.is_empty() && v.iter().all(|&b| b == v[0]) && (1..=2).contains(&v[0]), "a torn or foreign value");
        true
    })
    .unwrap();
    assert_eq!(n, st.entries);
    let s = bm.stats().buffer;
    assert!(s.nvm_hits > 0 && s.ssd_reads > 0, "{s:?}");
    bm.check_invariants();
}
