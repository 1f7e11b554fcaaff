//! Random operations on a B+-tree of 4 KiB pages, checked against a `BTreeMap`: every
//! result of every operation, then the whole contents and `check_invariants` after each
//! phase (mixed operations, growth, deleting most keys so that nodes merge, growth again).
//! Then two threads at once, on disjoint and on overlapping keys.
//!
//! The single-threaded scenario runs on `main-memory` and again on the buffer manager
//! with a DRAM pool far smaller than the tree, every NVM technique on and the debug mode
//! of cache-line-grained access (paper A.6) checking every line access.
//!
//! Every scenario runs under several seeds; a failure prints its seed, and
//! `TIERDB_SEED=<seed>` reruns just that one.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::btree::{BTree, BTreeError, value_bytes_max};
use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::device::{DramConfig, NvmConfig};
use tierdb::limits::BTREE_KEY_BYTES_MAX;
use tierdb::page::PageSource;
use tierdb::sources::DirectConfig;
use tierdb::sources::MemorySource;
use tierdb::sources::NvmDirect;

const PAGE: usize = 4096;

fn source(pages: u64) -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(PAGE as u64 * pages));
    cfg.frame_bytes = PAGE;
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

fn seeds() -> Vec<u64> {
    match std::env::var("TIERDB_SEED") {
        Ok(s) => vec![s.parse().expect("TIERDB_SEED is a number")],
        Err(_) => vec![1, 2, 3, 4, 5],
    }
}

fn for_each_seed(name: &str, f: impl Fn(u64)) {
    for seed in seeds() {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(seed))) {
            eprintln!("{name} failed with seed {seed}; rerun with TIERDB_SEED={seed}");
            resume_unwind(e);
        }
    }
}

/// Keys and values that exercise heads, prefixes and size limits.
struct Gen {
    rng: SmallRng,
    /// Keys handed out before (some deleted since): lookups of them hit or miss.
    used: Vec<Vec<u8>>,
    value_max: usize,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen { rng: SmallRng::seed_from_u64(seed), used: Vec::new(), value_max: value_bytes_max(PAGE) }
    }

    fn fresh_key(&mut self) -> Vec<u8> {
        let r = &mut self.rng;
        let k = match r.random_range(0..10) {
            // YCSB-like: a shared "user" prefix, digits.
            0..4 => format!("user{:019}", r.random_range(0..50_000u64) * 7919).into_bytes(),
            // Short keys over a tiny alphabet: head ties, zero padding, prefixes of others.
            4..7 => (0..r.random_range(1..=6)).map(|_| [0u8, 1, 2, 0xff][r.random_range(0..4)]).collect(),
            // Long keys with a long shared prefix, up to the limit.
            7..9 => {
                let len = r.random_range(150..=BTREE_KEY_BYTES_MAX);
                let mut k = vec![b'p'; 140];
                k.extend((140..len).map(|_| r.random_range(b'a'..=b'c')));
                k
            }
            _ => (0..r.random_range(1..=BTREE_KEY_BYTES_MAX)).map(|_| r.random()).collect(),
        };
        self.used.push(k.clone());
        k
    }

    fn key(&mut self) -> Vec<u8> {
        if !self.used.is_empty() && self.rng.random_bool(0.5) {
            let i = self.rng.random_range(0..self.used.len());
            return self.used[i].clone();
        }
        self.fresh_key()
    }

    fn value(&mut self) -> Vec<u8> {
        let r = &mut self.rng;
        let len = match r.random_range(0..10) {
            0..7 => r.random_range(0..32),
            7..9 => r.random_range(32..300),
            _ => r.random_range(self.value_max - 50..=self.value_max),
        };
        let b: u8 = r.random();
        (0..len).map(|i| b.wrapping_add(i as u8)).collect()
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn get<S: PageSource>(t: &BTree<'_, S>, k: &[u8]) -> Option<Vec<u8>> {
    t.get(k, <[u8]>::to_vec).unwrap()
}

/// One random operation, checked against the model.
fn step<S: PageSource>(t: &BTree<'_, S>, m: &mut Model, g: &mut Gen) {
    let k = g.key();
    match g.rng.random_range(0..100) {
        0..25 => {
            let v = g.value();
            let absent = !m.contains_key(&k);
            assert_eq!(t.insert(&k, &v).unwrap(), absent, "insert {k:02x?}");
            m.entry(k).or_insert(v);
        }
        25..40 => {
            let v = g.value();
            t.upsert(&k, &v).unwrap();
            m.insert(k, v);
        }
        40..50 => {
            let v = g.value();
            let present = m.contains_key(&k);
            assert_eq!(t.update(&k, &v).unwrap(), present, "update {k:02x?}");
            if present {
                m.insert(k, v);
            }
        }
        50..60 => {
            let Some(old) = m.get_mut(&k) else {
                assert!(!t.update_in_place(&k, 0, &[]).unwrap());
                return;
            };
            let offset = g.rng.random_range(0..=old.len());
            let len = g.rng.random_range(0..=old.len() - offset + 1);
            let bytes: Vec<u8> = (0..len).map(|_| g.rng.random()).collect();
            match t.update_in_place(&k, offset, &bytes) {
                Ok(true) => old[offset..offset + len].copy_from_slice(&bytes),
                Err(BTreeError::OffsetOutOfRange { value_len, .. }) => {
                    assert!(offset + len > old.len());
                    assert_eq!(value_len, old.len());
                }
                r => panic!("update_in_place {k:02x?}: {r:?}"),
            }
        }
        60..80 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some(), "delete {k:02x?}"),
        80..92 => assert_eq!(get(t, &k), m.get(&k).cloned(), "get {k:02x?}"),
        92..96 => {
            let n = g.rng.random_range(0..60);
            let mut got = Vec::new();
            t.scan(&k, |key, v| {
                if got.len() == n {
                    return false;
                }
                got.push((key.to_vec(), v.to_vec()));
                true
            })
            .unwrap();
            let want: Vec<_> = m.range(k.clone()..).take(n).map(|(a, b)| (a.clone(), b.clone())).collect();
            assert_eq!(got, want, "scan from {k:02x?}, {n} entries");
        }
        _ => {
            let n = g.rng.random_range(0..200);
            let mut c = t.range(&k);
            let mut got = Vec::new();
            while got.len() < n {
                match c.next().unwrap() {
                    Some((key, v)) => got.push((key.to_vec(), v.to_vec())),
                    None => break,
                }
            }
            let want: Vec<_> = m.range(k.clone()..).take(n).map(|(a, b)| (a.clone(), b.clone())).collect();
            assert_eq!(got, want, "cursor from {k:02x?}, {n} entries");
        }
    }
}

/// The tree holds exactly the model, and its invariants hold.
fn compare<S: PageSource>(t: &BTree<'_, S>, m: &Model, phase: &str) -> tierdb::TreeStats {
    let st = t.check_invariants().unwrap_or_else(|e| panic!("{phase}: {e}"));
    let mut it = m.iter();
    t.scan(b"", |k, v| {
        let (mk, mv) = it.next().unwrap_or_else(|| panic!("{phase}: extra key {k:02x?}"));
        assert_eq!((k, v), (mk.as_slice(), mv.as_slice()), "{phase}");
        true
    })
    .unwrap();
    assert!(it.next().is_none(), "{phase}: keys missing from the tree");
    assert_eq!(st.entries, m.len() as u64, "{phase}");
    st
}

#[test]
fn random_operations_match_a_btreemap() {
    for_each_seed("random_operations_match_a_btreemap", |seed| {
        let s = source(8192);
        random_operations(&s, seed, || s.pages_used());
    });
}

/// The same on the buffer manager: 64 DRAM frames (the tree grows to hundreds of pages),
/// NVM for all of it, cache-line-grained pages, mini pages and pointer swizzling, and
/// the debug mode that poisons lines not made resident and catches writes to lines not
/// marked dirty.
#[test]
fn random_operations_match_a_btreemap_on_nvm_techniques_in_debug_mode() {
    for_each_seed("random_operations_match_a_btreemap_on_nvm_techniques_in_debug_mode", |seed| {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = BufferConfig::new(ByteSize(64 * PAGE as u64));
        cfg.page_size = PAGE;
        cfg.nvm = Some(NvmConfig::new(dir.path().join("m.nvm"), ByteSize(8192 + 4096 * (PAGE as u64 + 64) + 4096)));
        cfg.techniques = Techniques::ALL;
        cfg.debug_lines = true;
        let bm = BufferManager::open(&cfg).unwrap();
        random_operations(&bm, seed, || bm.info().pages_in_use);
        let s = bm.stats().buffer;
        assert!(s.line_faults > 0 && s.mini_promotions > 0 && s.swizzles > 0 && s.unswizzles > 0, "{s:?}");
        bm.check_invariants();
    });
}

/// The same in place in NVM (`nvm-direct`): every change staged, compared line by line
/// and written back at unfix.
#[test]
fn random_operations_match_a_btreemap_in_place_in_nvm() {
    for_each_seed("random_operations_match_a_btreemap_in_place_in_nvm", |seed| {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let cfg = DirectConfig::new(NvmConfig::new(dir.path().join("m.nvm"), ByteSize(8192 * PAGE as u64)), PAGE);
        let s = NvmDirect::open(&cfg).unwrap();
        random_operations(&s, seed, || s.pages_in_use());
        let c = &s.pages().counters;
        assert!(c.write_backs.load(std::sync::atomic::Ordering::Relaxed) > 0);
    });
}

/// Mixed operations, growth, mass deletion and regrowth on `s`, checked against a model;
/// `pages_used` counts the pages `s` has handed out.
fn random_operations<S: PageSource>(s: &S, seed: u64, pages_used: impl Fn() -> u64) {
    {
        let t = BTree::create(s).unwrap();
        let mut m = Model::new();
        let mut g = Gen::new(seed);
        // 1. Mixed operations on a growing tree.
        for _ in 0..10_000 {
            step(&t, &mut m, &mut g);
        }
        compare(&t, &m, "mixed");
        // 2. Growth: inserts only, until the tree is deep.
        for _ in 0..8000 {
            let (k, v) = (g.fresh_key(), g.value());
            let absent = !m.contains_key(&k);
            assert_eq!(t.insert(&k, &v).unwrap(), absent);
            m.entry(k).or_insert(v);
        }
        let grown = compare(&t, &m, "grown");
        assert!(grown.height >= 3, "{grown:?}");
        assert_eq!(pages_used(), 1 + grown.pages(), "pages in use are the tree's");
        // 3. Delete most keys: nodes merge, pages are freed.
        let mut keys: Vec<Vec<u8>> = m.keys().cloned().collect();
        keys.shuffle(&mut g.rng);
        for k in &keys[..keys.len() * 19 / 20] {
            // Absent only if a random delete below took it first.
            assert_eq!(t.delete(k).unwrap(), m.remove(k).is_some());
            if g.rng.random_bool(0.05) {
                let k = g.key();
                assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some());
            }
        }
        let shrunk = compare(&t, &m, "shrunk");
        assert!(shrunk.pages() * 8 < grown.pages(), "{shrunk:?} after {grown:?}");
        assert_eq!(pages_used(), 1 + shrunk.pages(), "merged pages are freed");
        // 4. Grow again, mixed.
        for _ in 0..8000 {
            step(&t, &mut m, &mut g);
        }
        compare(&t, &m, "regrown");
    }
}

/// A value written by thread `tid` as its `n`-th write to `key`: a tag, then a filler
/// derived from the key, so any surviving value tells who wrote it.
fn tagged(tid: u8, n: u32, key: &[u8], len: usize) -> Vec<u8> {
    let mut v = vec![tid];
    v.extend_from_slice(&n.to_le_bytes());
    v.extend((5..len.max(5)).map(|i| filler(key, i)));
    v
}

fn filler(key: &[u8], i: usize) -> u8 {
    key.iter().fold(i as u8, |a, &b| a.wrapping_mul(31).wrapping_add(b))
}

/// The tag of a well-formed value.
fn tag_of(key: &[u8], v: &[u8]) -> (u8, u32) {
    assert!(v.len() >= 5 && v[0] < 2, "value {v:02x?} of {key:02x?} has no tag");
    assert!(v[5..].iter().enumerate().all(|(i, &b)| b == filler(key, i + 5)), "filler of {key:02x?}");
    (v[0], u32::from_le_bytes([v[1], v[2], v[3], v[4]]))
}

#[test]
fn two_threads_on_disjoint_keys() {
    for_each_seed("two_threads_on_disjoint_keys", |seed| {
        let s = source(8192);
        let t = BTree::create(&s).unwrap();
        let models: Vec<Model> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..2u8)
                .map(|tid| {
                    let t = &t;
                    sc.spawn(move || {
                        let mut m = Model::new();
                        let mut g = Gen::new(seed * 10 + tid as u64);
                        for _ in 0..15_000 {
                            let base = g.key();
                            let k = [&[tid][..], &base[..base.len().min(BTREE_KEY_BYTES_MAX - 1)]].concat();
                            let v = g.value();
                            match g.rng.random_range(0..10) {
                                0..4 => {
                                    assert_eq!(t.insert(&k, &v).unwrap(), !m.contains_key(&k));
                                    m.entry(k).or_insert(v);
                                }
                                4..6 => {
                                    t.upsert(&k, &v).unwrap();
                                    m.insert(k, v);
                                }
                                6..9 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some()),
                                _ => assert_eq!(get(t, &k), m.get(&k).cloned()),
                            }
                        }
                        m
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let all: Model = models.into_iter().flatten().collect();
        compare(&t, &all, "disjoint");
    });
}

#[test]
fn two_threads_on_overlapping_keys() {
    for_each_seed("two_threads_on_overlapping_keys", |seed| {
        let s = source(8192);
        let t = BTree::create(&s).unwrap();
        let value_max = t.value_bytes_max();
        let keys: Vec<Vec<u8>> = {
            let mut g = Gen::new(seed);
            (0..1000).map(|_| g.fresh_key()).collect()
        };
        // Per thread: key -> its last successful operation (Some(n) = wrote tag n,
        // None = deleted).
        let lasts: Vec<HashMap<Vec<u8>, Option<u32>>> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..2u8)
                .map(|tid| {
                    let (t, keys) = (&t, &keys);
                    sc.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(seed * 100 + tid as u64);
                        let mut last = HashMap::new();
                        for n in 0..20_000u32 {
                            let k = &keys[rng.random_range(0..keys.len())];
                            let len = if rng.random_bool(0.1) { value_max } else { rng.random_range(5..200) };
                            let v = tagged(tid, n, k, len);
                            match rng.random_range(0..20) {
                                0..5 => {
                                    if t.insert(k, &v).unwrap() {
                                        last.insert(k.clone(), Some(n));
                                    }
                                }
                                5..8 => {
                                    t.upsert(k, &v).unwrap();
                                    last.insert(k.clone(), Some(n));
                                }
                                8..10 => {
                                    if t.update(k, &v).unwrap() {
                                        last.insert(k.clone(), Some(n));
                                    }
                                }
                                10..12 => {
                                    if t.update_in_place(k, 0, &v[..5]).unwrap() {
                                        last.insert(k.clone(), Some(n));
                                    }
                                }
                                12..17 => {
                                    if t.delete(k).unwrap() {
                                        last.insert(k.clone(), None);
                                    }
                                }
                                17..19 => {
                                    if let Some(v) = get(t, k) {
                                        tag_of(k, &v);
                                    }
                                }
                                _ => {
                                    let mut prev: Option<Vec<u8>> = None;
                                    let mut left = rng.random_range(0..100);
                                    t.scan(k, |key, v| {
                                        assert!(prev.as_deref().is_none_or(|p| p < key), "scan order");
                                        tag_of(key, v);
                                        prev = Some(key.to_vec());
                                        left -= 1;
                                        left > 0
                                    })
                                    .unwrap();
                                }
                            }
                        }
                        last
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        t.check_invariants().unwrap();
        let mut present = 0;
        for k in &keys {
            let ops: Vec<Option<Option<u32>>> = lasts.iter().map(|l| l.get(k).copied()).collect();
            match get(&t, k) {
                // The final value is the last write of the thread whose tag it carries.
                Some(v) => {
                    let (tid, n) = tag_of(k, &v);
                    assert_eq!(ops[tid as usize], Some(Some(n)), "{k:02x?} holds tag ({tid}, {n}); last ops {ops:?}");
                    present += 1;
                }
                // Absent: some thread's last successful operation deleted it, or none
                // ever wrote it.
                None => assert!(
                    ops.contains(&Some(None)) || ops.iter().all(Option::is_none),
                    "{k:02x?} is absent; last ops {ops:?}"
                ),
            }
        }
        assert!(present > 0);
    });
}
