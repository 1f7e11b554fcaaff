//! The `spitfire` policy's defining behaviour on the buffer manager (Spitfire §3): with
//! Dr = 0 no page moves NVM → DRAM on reads (leaves, inner nodes and scans are read in
//! place); with Dw = 0 writes to NVM pages are persisted in place and survive a reopen;
//! with Nw = 0 (and Nr = 0) nothing is admitted to NVM; random operations under every
//! knob setting agree with a `BTreeMap`, on one thread and on two.

use std::collections::BTreeMap;

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::btree::BTree;
use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::catalog::Catalog;
use tierdb::counters::BufferStats;
use tierdb::device::{NvmConfig, OpenMode, SsdConfig};

const PS: usize = 4096;
/// Cache-line-grained pages and mini pages. Not swizzling: `check_invariants` holds a
/// parent shared while it visits the children, and a parent whose swizzled children
/// fill DRAM then leaves no victim (a limit of the check, not of the policy).
const CL_MINI: Techniques = Techniques { cl_grained: true, mini_pages: true, swizzling: false };
const KEYS: u64 = 3000;

fn config(dir: &tempfile::TempDir, dram_frames: u64, nvm_frames: u64, policy: &str, tech: Techniques) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(dram_frames * PS as u64));
    c.page_size = PS;
    c.techniques = tech;
    c.policy = policy.into();
    c.nvm = Some(NvmConfig::new(
        dir.path().join("t.nvm"),
        ByteSize((8192 + nvm_frames * (PS as u64 + 64) + 4096).next_multiple_of(4096)),
    ));
    c.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
    c
}

fn key(i: u64) -> Vec<u8> {
    format!("user{:019}", i * 104_729).into_bytes()
}

fn value(i: u64, version: u8) -> Vec<u8> {
    (0..100).map(|j| (i as u8).wrapping_add(j as u8).wrapping_add(version)).collect()
}

/// Loads `KEYS` keys with eager knobs, then sets `knobs` and pushes every page out of
/// DRAM by reading all keys twice.
fn loaded<'a>(bm: &'a BufferManager, knobs: &str) -> BTree<'a, BufferManager> {
    let t = Catalog::create_tree(bm, "t").unwrap();
    for i in 0..KEYS {
        t.insert(&key(i), &value(i, 0)).unwrap();
    }
    assert!(bm.set_knobs(knobs.parse().unwrap()));
    t
}

fn delta(bm: &BufferManager, before: &BufferStats) -> BufferStats {
    bm.stats().buffer.since(before)
}

#[test]
fn dr_zero_never_moves_a_page_to_dram_on_reads() {
    for tech in [Techniques::NONE, Techniques::ALL] {
        let dir = tempfile::tempdir().unwrap();
        // NVM holds the whole tree: reads never need SSD after the first pass.
        let bm = BufferManager::open(&config(&dir, 16, 400, "spitfire", tech)).unwrap();
        let t = loaded(&bm, "dr=0,dw=1,nr=1,nw=1");
        // Evict the tree from DRAM: DRAM victims go to NVM (nw = 1).
        let before = bm.stats().buffer;
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let i = rng.random_range(0..KEYS);
            assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), Some(value(i, 0)), "{tech}");
        }
        let mut n = 0;
        t.scan(b"", |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, KEYS);
        let d = delta(&bm, &before);
        assert_eq!(d.nvm_to_dram_pages, 0, "{tech}: {d:?}");
        assert_eq!(d.nvm_lines_loaded, 0, "{tech}: {d:?}");
        assert!(d.nvm_reads_in_place > 10_000, "leaves and inner nodes read in place: {tech}: {d:?}");
        bm.check_invariants();
    }
}

#[test]
fn dw_zero_writes_in_place_durably() {
    let dir = tempfile::tempdir().unwrap();
    {
        let bm = BufferManager::open(&config(&dir, 16, 400, "spitfire", Techniques::ALL)).unwrap();
        let t = loaded(&bm, "eager");
        // Push everything to NVM, then write in place.
        for i in 0..KEYS {
            t.get(&key(i), |_| ()).unwrap();
        }
        assert!(bm.set_knobs("dr=0,dw=0,nr=1,nw=1".parse().unwrap()));
        let before = bm.stats().buffer;
        for i in (0..KEYS).step_by(3) {
            assert!(t.update_in_place(&key(i), 10, &[0xEE; 20]).unwrap());
        }
        let d = delta(&bm, &before);
        assert!(d.nvm_writes_in_place > KEYS / 6, "{d:?}");
        assert!(d.nvm_lines_written > 0, "{d:?}");
        for i in (0..KEYS).step_by(3) {
            assert_eq!(t.get_part(&key(i), 10..30, <[u8]>::to_vec).unwrap(), Some(vec![0xEE; 20]));
        }
        bm.close().unwrap();
    }
    let mut cfg = config(&dir, 16, 400, "spitfire:dr=0,dw=0", Techniques::ALL);
    cfg.ssd_open_mode = OpenMode::Open;
    let bm = BufferManager::open(&cfg).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    for i in 0..KEYS {
        let mut want = value(i, 0);
        if i % 3 == 0 {
            want[10..30].fill(0xEE);
        }
        assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), Some(want), "key {i} after reopen");
    }
    t.check_invariants().unwrap();
    bm.check_invariants();
}

#[test]
fn nw_and_nr_zero_admit_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 16, 400, "spitfire:nr=0,nw=0", Techniques::ALL)).unwrap();
    let t = Catalog::create_tree(&bm, "t").unwrap();
    let mut rng = SmallRng::seed_from_u64(9);
    for i in 0..KEYS {
        t.insert(&key(i), &value(i, 0)).unwrap();
    }
    for _ in 0..10_000 {
        let i = rng.random_range(0..KEYS);
        assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), Some(value(i, 0)));
    }
    let s = bm.stats().buffer;
    assert_eq!((s.nvm_admissions, s.dram_to_nvm_pages, s.nvm_hits), (0, 0, 0), "{s:?}");
    assert!(s.dram_evictions > 100 && s.ssd_reads > 100, "{s:?}");
}

/// Random operations against a model under `knobs`, with DRAM and NVM both far smaller
/// than the tree so that pages cross all three tiers.
fn model_run(knobs: &str, tech: Techniques, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 24, 40, &format!("spitfire:{knobs}"), tech)).unwrap();
    let t = BTree::create(&bm).unwrap();
    let mut m = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    for op in 0..12_000u32 {
        let i = rng.random_range(0..KEYS);
        let k = key(i);
        match rng.random_range(0..10) {
            0..3 => {
                let v = value(i, op as u8);
                t.upsert(&k, &v).unwrap();
                m.insert(k, v);
            }
            3..5 => {
                if let Some(v) = m.get_mut(&k) {
                    assert!(t.update_in_place(&k, 5, &[op as u8; 7]).unwrap());
                    v[5..12].fill(op as u8);
                }
            }
            5 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some()),
            _ => assert_eq!(t.get(&k, <[u8]>::to_vec).expect(knobs), m.get(&k).cloned(), "{knobs} seed {seed} op {op}"),
        }
    }
    t.check_invariants().unwrap();
    let mut it = m.iter();
    t.scan(b"", |k, v| {
        assert_eq!(Some((k, v)), it.next().map(|(a, b)| (a.as_slice(), b.as_slice())), "{knobs}");
        true
    })
    .unwrap();
    assert!(it.next().is_none());
    let s = bm.stats().buffer;
    assert!(s.ssd_reads > 0 && s.nvm_hits > 0, "{knobs}: {s:?}");
    bm.check_invariants();
}

#[test]
fn random_operations_agree_with_a_model_under_every_preset() {
    // Panics name the knobs and the seed.
    for (i, knobs) in
        ["eager", "a", "b", "c", "d", "dr=0,dw=0,nr=1,nw=1", "dr=0.5,dw=0.5,nr=0.5,nw=0.5"].into_iter().enumerate()
    {
        model_run(knobs, CL_MINI, 40 + i as u64);
    }
    model_run("b", Techniques::NONE, 60);
}

#[test]
fn two_threads_with_half_the_accesses_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let bm =
        BufferManager::open(&config(&dir, 16, 60, "spitfire:dr=0.5,dw=0.5,nr=0.5,nw=0.5", Techniques::ALL)).unwrap();
    let t = BTree::create(&bm).unwrap();
    for i in 0..KEYS {
        t.insert(&key(i), &value(i, 0)).unwrap();
    }
    // Each thread owns the keys of its parity: it writes them and checks its own
    // writes, while reading the other thread's keys (any version is fine).
    std::thread::scope(|s| {
        for parity in 0..2u64 {
            let t = &t;
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(parity);
                let mut mine: BTreeMap<u64, u8> = BTreeMap::new();
                for op in 0..8_000u32 {
                    let i = rng.random_range(0..KEYS / 2) * 2 + parity;
                    if rng.random_bool(0.4) {
                        assert!(t.update_in_place(&key(i), 0, &[op as u8; 8]).unwrap());
                        mine.insert(i, op as u8);
                    } else {
                        let got = t.get(&key(i), <[u8]>::to_vec).unwrap().expect("key present");
                        if let Some(b) = mine.get(&i) {
                            assert_eq!(got[..8], [*b; 8], "thread {parity} key {i}");
                        }
                        let j = rng.random_range(0..KEYS / 2) * 2 + (1 - parity);
                        assert_eq!(t.get(&key(j), |v| v.len()).unwrap(), Some(100));
                    }
                }
            });
        }
    });
    t.check_invariants().unwrap();
    let s = bm.stats().buffer;
    assert!(s.nvm_reads_in_place > 0 && s.nvm_writes_in_place > 0, "{s:?}");
    bm.check_invariants();
}
