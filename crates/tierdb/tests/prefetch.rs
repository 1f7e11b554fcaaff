//! Lookups in batches (`BTree::get_many`, `BTree::prefetch`): the pages a batch of keys
//! needs are read from SSD together ahead of the lookups. Every value is the one a
//! lookup alone finds, with DRAM far smaller than the tree, with NVM and every
//! technique, while writers split, merge and free pages beside; the lookups then find
//! their pages in DRAM; a page corrupted on disk fails its lookup with an error naming
//! it, not the batch silently.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

mod pages;

use rand::prelude::*;
use tierdb::PageId;
use tierdb::btree::BTree;
use tierdb::buffer::{BufferConfig, BufferError, BufferManager, Techniques};
use tierdb::catalog::Catalog;
use tierdb::device::OpenMode;

const PS: usize = 4096;

/// DRAM of `dram_frames`, NVM of `nvm_frames` (none if 0), SSD.
fn config(dir: &tempfile::TempDir, dram_frames: u64, nvm_frames: u64, policy: &str, tech: Techniques) -> BufferConfig {
    pages::tiered(dir, dram_frames, nvm_frames, policy, tech)
}

fn key(i: u64) -> Vec<u8> {
    format!("user{:019}", i * 7919).into_bytes()
}

/// A value that names its key and a round.
fn value(i: u64, round: u32) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(150 + (i % 50) as usize, b'a' + (round % 26) as u8);
    v
}

/// Loads keys `0..n` (round 0) into a tree named "t".
fn load<'a>(bm: &'a BufferManager, n: u64) -> (BTree<'a, BufferManager>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = Catalog::create_tree(bm, "t").unwrap();
    let mut m = BTreeMap::new();
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(3));
    for i in order {
        t.insert(&key(i), &value(i, 0)).unwrap();
        m.insert(key(i), value(i, 0));
    }
    (t, m)
}

/// `get_many` of `keys` against `m`.
fn check_batch(t: &BTree<'_, BufferManager>, keys: &[Vec<u8>], m: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let mut seen = 0;
    t.get_many(keys, |i, v| {
        assert_eq!(i, seen, "{what}: called in order");
        seen += 1;
        assert_eq!(v, m.get(&keys[i]).map(Vec::as_slice), "{what}: {}", String::from_utf8_lossy(&keys[i]));
    })
    .unwrap();
    assert_eq!(seen, keys.len(), "{what}: every key answered");
}

#[test]
fn batches_find_every_value_and_their_lookups_find_the_pages_in_dram() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 256, 0, "eager", Techniques::NONE)).unwrap();
    let (t, m) = load(&bm, 20_000);
    let pages = t.check_invariants().unwrap().pages();
    assert!(pages > 4 * 256, "the tree ({pages} pages) is much larger than DRAM");
    let mut rng = SmallRng::seed_from_u64(7);
    let before = bm.stats().buffer;
    for b in 0..40 {
        // Present keys and absent ones (odd multiples land between).
        let keys: Vec<Vec<u8>> = (0..(1 + b * 7 % 100))
            .map(|j| {
                if j % 9 == 4 {
                    format!("user{:019}", rng.random_range(0..20_000u64) * 7919 + 1).into_bytes()
                } else {
                    key(rng.random_range(0..20_000))
                }
            })
            .collect();
        check_batch(&t, &keys, &m, &format!("batch {b}"));
    }
    let s = bm.stats().buffer.since(&before);
    assert!(s.prefetch_reads > 500, "{s:?}");
    // The lookups found what the prefetches read (a page evicted again before its
    // lookup is read by the lookup; with 64 of 256 frames a round that is rare).
    assert!(s.ssd_reads * 20 < s.prefetch_reads, "{s:?}");
    // A prefetch of pages already in DRAM reads nothing.
    let keys: Vec<Vec<u8>> = (0..30).map(key).collect();
    t.prefetch(&keys).unwrap();
    assert_eq!(t.prefetch(&keys).unwrap(), 0);
    t.check_invariants().unwrap();
    bm.check_invariants();
}

#[test]
fn batches_through_nvm_and_every_technique_match_single_lookups() {
    for (nvm, policy, tech) in
        [(0, "eager", Techniques::NONE), (96, "hymem", Techniques::ALL), (96, "eager", Techniques::NONE)]
    {
        let dir = tempfile::tempdir().unwrap();
        let bm = BufferManager::open(&config(&dir, 48, nvm, policy, tech)).unwrap();
        let (t, m) = load(&bm, 6_000);
        let mut rng = SmallRng::seed_from_u64(11);
        for b in 0..30 {
            let keys: Vec<Vec<u8>> = (0..64).map(|_| key(rng.random_range(0..6_500))).collect();
            check_batch(&t, &keys, &m, &format!("{policy} {tech} nvm {nvm}, batch {b}"));
        }
        t.check_invariants().unwrap();
        bm.check_invariants();
    }
}

/// Readers look up batches while writers rewrite, insert and delete (splits, merges,
/// pages freed and handed out again) over a pool much smaller than the tree: every
/// stable key reads its value, every changing key a value of its own, and the tree and
/// pool hold together after.
#[test]
fn batches_beside_writers_that_split_merge_and_free_pages() {
    beside_writers(0, "eager", Techniques::NONE);
    beside_writers(64, "hymem", Techniques::ALL);
}

fn beside_writers(nvm: u64, policy: &str, tech: Techniques) {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 64, nvm, policy, tech)).unwrap();
    // Even keys stay; odd keys are deleted and inserted again by the writers.
    let (t, _) = load(&bm, 8_000);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (t, stop) = (&t, &stop);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + w);
                let mut round = 1;
                while !stop.load(Ordering::Relaxed) {
                    // A run of odd keys gone, then back with a new round.
                    let from = rng.random_range(0..7_000u64) | 1;
                    for i in (from..from + 600).step_by(2) {
                        t.delete(&key(i)).unwrap();
                    }
                    for i in (from..from + 600).step_by(2) {
                        t.upsert(&key(i), &value(i, round)).unwrap();
                    }
                    round += 1;
                }
            });
        }
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                let t = &t;
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(200 + r);
                    for _ in 0..150 {
                        let ids: Vec<u64> = (0..48).map(|_| rng.random_range(0..8_000)).collect();
                        let keys: Vec<Vec<u8>> = ids.iter().map(|&i| key(i)).collect();
                        t.get_many(&keys, |j, v| {
                            let i = ids[j];
                            match v {
                                Some(v) if i.is_multiple_of(2) => assert_eq!(v, value(i, 0), "stable key {i}"),
                                None if i.is_multiple_of(2) => panic!("stable key {i} missing"),
                                Some(v) => assert!(v.starts_with(format!("{i}:").as_bytes()), "key {i}"),
                                None => {}
                            }
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    t.check_invariants().unwrap();
    bm.check_invariants();
    let s = bm.stats().buffer;
    assert!(s.prefetch_reads > 0 && s.frees > 0, "{policy} {tech}: {s:?}");
}

#[test]
fn a_corrupt_page_fails_its_lookup_in_a_batch_naming_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000;
    let (m, bad) = {
        let bm = BufferManager::open(&config(&dir, 32, 0, "eager", Techniques::NONE)).unwrap();
        let (_, m) = load(&bm, n);
        // Nothing was freed: the pages in use are 1 (the catalog) up to this many, all
        // of them the catalog's or the tree's. One of the last splits'.
        let bad = PageId(bm.pages_in_use() - 2);
        bm.close().unwrap();
        (m, bad)
    };
    let path = dir.path().join("t.db");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bad.0 as usize * PS + PS / 2;
    bytes[at..at + 16].fill(0xee);
    std::fs::write(&path, &bytes).unwrap();
    let mut cfg = config(&dir, 32, 0, "eager", Techniques::NONE);
    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
    let mut answered = 0;
    let e = t
        .get_many(&keys, |i, v| {
            assert_eq!(v, Some(m[&keys[i]].as_slice()));
            answered += 1;
        })
        .unwrap_err();
    assert!(matches!(e.as_buffer(), Some(BufferError::Corrupted { pid, .. }) if *pid == bad), "{e}");
    assert!(answered < keys.len(), "{answered}");
    // Nothing of the batch is left half done: the bad page is on SSD as it was, every
    // other key reads.
    bm.check_invariants();
    let e = bm.location(bad).unwrap();
    assert_eq!(e, tierdb::buffer::Entry::Empty, "the bad page stays on SSD");
}

/// A pool whose frames are all held: a read ahead that cannot make room reads what it
/// can and returns, claiming nothing; the lookups then work as ever.
#[test]
fn a_read_ahead_without_room_reads_what_it_can() {
    use tierdb::PageSource;
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, 0, "eager", Techniques::NONE)).unwrap();
    let (t, m) = load(&bm, 3_000);
    let keys: Vec<Vec<u8>> = (0..3_000).step_by(37).map(key).collect();
    {
        // Every frame held, the root's among them (shared: the walk still reads it).
        let root = t.root();
        let mut held = vec![bm.fix_shared(root).unwrap()];
        held.extend(
            (2..bm.pages_in_use() + 1).map(PageId).filter(|&p| p != root).take(7).map(|p| bm.fix_shared(p).unwrap()),
        );
        assert_eq!(held.len(), 8);
        let before = bm.stats().buffer;
        assert_eq!(t.prefetch(&keys).unwrap(), 0);
        assert_eq!(bm.stats().buffer.since(&before).prefetch_reads, 0);
    }
    // No page was left claimed (a claimed page fails the check).
    check_batch(&t, &keys, &m, "after the pool was free again");
    bm.check_invariants();
}
