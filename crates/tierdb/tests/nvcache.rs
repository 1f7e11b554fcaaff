//! `nvcache` end to end: a B+-tree far larger than DRAM and NVM on the `nvcache`
//! architecture, random inserts, updates, deletes and lookups checked against a
//! `BTreeMap`, with pages moving through every tier (read inserts, write-through
//! inserts, stale copies removed, LFRU evictions). NVM must only ever hold clean copies
//! whose bytes match SSD, and a reopened database must start with an empty NVM cache.
//!
//! Every scenario runs under several seeds; a failure prints its seed, and
//! `TIERDB_SEED=<seed>` reruns just that one.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rand::prelude::*;
use tierdb::arch::{ArchConfig, Architecture, Engine};
use tierdb::buffer::BufferManager;
use tierdb::policy::{NvcacheConfig, ObpMode};
use tierdb::{ByteSize, Catalog};

const PAGE: usize = 4096;
const KEYS: u64 = 4000;
const OPS: usize = 5000;

fn seeds() -> Vec<u64> {
    match std::env::var("TIERDB_SEED") {
        Ok(s) => vec![s.parse().expect("TIERDB_SEED is a number")],
        Err(_) => vec![1, 2],
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

/// DRAM of 16 pages, NVM of about 64 frames, a database of a few hundred pages.
fn config(dir: &std::path::Path, mode: ObpMode) -> ArchConfig {
    let mut c =
        ArchConfig::new(Architecture::Nvcache, ByteSize(16 * PAGE as u64), ByteSize(72 * PAGE as u64), "nvc", dir)
            .unwrap();
    c.nvm_path = dir.join("nvc.nvm");
    c.page_size = PAGE;
    // A short reuse window, so that LFRU evicts within the test.
    c.nvcache = NvcacheConfig { obp_mode: mode, reuse_window_lookups: Some(32), ..NvcacheConfig::default() };
    c
}

fn key(i: u64) -> [u8; 8] {
    (i * 7919 % 100_003).to_be_bytes()
}

fn value(i: u64, version: u32) -> Vec<u8> {
    let len = 150 + (i as usize * 13 + version as usize) % 150;
    (0..len).map(|k| (i as usize + k + version as usize * 31) as u8).collect()
}

fn buffer(engine: &Engine) -> &BufferManager {
    match engine {
        Engine::Buffer(bm) => bm,
        _ => panic!("nvcache runs on the buffer manager"),
    }
}

/// Every page NVM holds is clean and equal to its SSD copy (checked by a read through
/// a fresh page buffer from both tiers).
fn check_nvm_clean(bm: &BufferManager) -> usize {
    let nvm = bm.nvm().expect("nvcache has NVM");
    let ssd = bm.ssd().expect("nvcache has SSD");
    let mut held = 0;
    let mut a = vec![0u8; PAGE];
    let mut b = tierdb::device::AlignedBuf::new(PAGE);
    for n in nvm.slots() {
        let Some(pid) = nvm.pid(n) else { continue };
        held += 1;
        assert!(!nvm.is_dirty(n), "NVM frame {n} holds {pid} dirty");
        nvm.read_page(n, pid, &mut a).unwrap();
        ssd.read_page(pid, &mut b).unwrap();
        assert!(a[..] == b[..], "NVM copy of {pid} differs from SSD");
    }
    held
}

fn run(seed: u64, mode: ObpMode, stale_overwrite: Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), mode);
    cfg.nvcache.stale_overwrite_hits_min = stale_overwrite;
    let engine = Engine::open(&cfg).unwrap();
    let bm = buffer(&engine);
    let tree = Catalog::create_tree(bm, "t").unwrap();
    let mut model: BTreeMap<u64, u32> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    // 1. Load half the keys.
    for i in (0..KEYS).step_by(2) {
        tree.insert(&key(i), &value(i, 0)).unwrap();
        model.insert(i, 0);
    }
    let before = bm.stats();
    // 2. Mixed operations, skewed to a hot tenth of the keys so that NVM gets hits.
    for _ in 0..OPS {
        let i = if rng.random_bool(0.7) { rng.random_range(0..KEYS / 10) } else { rng.random_range(0..KEYS) };
        match rng.random_range(0..10) {
            0..6 => {
                let got = tree.get(&key(i), |v| v.to_vec()).unwrap();
                assert_eq!(got, model.get(&i).map(|v| value(i, *v)), "seed {seed}: get {i}");
            }
            6..9 => {
                let version = model.get(&i).map_or(0, |v| v + 1);
                let existed = model.insert(i, version).is_some();
                if existed {
                    assert!(tree.update(&key(i), &value(i, version)).unwrap(), "seed {seed}: update {i}");
                } else {
                    assert!(tree.insert(&key(i), &value(i, version)).unwrap(), "seed {seed}: insert {i}");
                }
            }
            _ => {
                assert_eq!(tree.delete(&key(i)).unwrap(), model.remove(&i).is_some(), "seed {seed}: delete {i}");
            }
        }
    }
    for (i, v) in &model {
        assert_eq!(tree.get(&key(*i), |x| x.to_vec()).unwrap(), Some(value(*i, *v)), "seed {seed}: key {i}");
    }
    bm.check_invariants();
    check_nvm_clean(bm);
    let c = bm.stats().nvm_cache.expect("nvcache reports its counters");
    assert_eq!(c.lookups, c.hits + c.misses, "{c:?}");
    assert!(c.hits > 0 && c.read_inserts > 0 && c.write_inserts > 0, "{mode:?}: {c:?}");
    assert!(c.evictions > 0, "{mode:?}: LFRU never evicted: {c:?}");
    if mode == ObpMode::Off {
        assert_eq!(c.bypass_obp, 0, "{c:?}");
    } else {
        // Refused write-throughs leave stale copies to remove.
        assert!(c.bypass_obp > 0 && c.removals > 0, "{mode:?}: OBP never bypassed: {c:?}");
    }
    // New frames are a subset of inserts (an overwrite of a stale copy takes none).
    assert!(bm.stats().buffer.nvm_admissions <= c.inserts(), "{c:?}");
    if stale_overwrite.is_some() {
        assert!(c.stale_overwrites > 0 && c.stale_overwrites <= c.write_inserts, "{c:?}");
    } else {
        assert_eq!(c.stale_overwrites, 0, "{c:?}");
    }
    // The volatile cache writes NVM only to insert pages: each page's lines and its
    // frame header. Removals and evictions write nothing.
    let during = bm.stats().since(&before);
    let (lines, pages) = (during.nvm.unwrap().write_lines, during.buffer.dram_to_nvm_pages);
    let removed = during.nvm_cache.unwrap();
    assert!(removed.removals + removed.evictions > 0, "{removed:?}");
    assert_eq!(lines, pages * (PAGE as u64 / 64 + 1), "{pages} pages written, {removed:?}");
    let pages = engine.pages_in_use();
    engine.close().unwrap();

    // 3. Reopen: the NVM cache starts empty, the data comes from SSD.
    cfg.open_existing = true;
    let engine = Engine::open(&cfg).unwrap();
    let bm = buffer(&engine);
    let info = engine.restart_info().expect("a reopened database says what it did with NVM");
    assert!(info.formatted_because.is_some() && info.pages_reused == 0, "{info:?}");
    let nvm = bm.nvm().unwrap();
    assert_eq!(nvm.free_frames(), nvm.len(), "a reopened nvcache reused NVM frames");
    assert_eq!(engine.pages_in_use(), pages);
    let tree = Catalog::open_tree(bm, "t").unwrap();
    for (i, v) in &model {
        assert_eq!(tree.get(&key(*i), |x| x.to_vec()).unwrap(), Some(value(*i, *v)), "seed {seed}: reopened {i}");
    }
    let b = bm.stats().buffer;
    assert!(b.ssd_reads > 0, "{b:?}");
    bm.check_invariants();
    check_nvm_clean(bm);
    engine.close().unwrap();
}

#[test]
fn nvcache_always_admit_matches_a_btreemap_through_every_tier() {
    for_each_seed("nvcache always-admit", |seed| run(seed, ObpMode::Off, None));
}

#[test]
fn nvcache_windowed_obp_matches_a_btreemap_through_every_tier() {
    for_each_seed("nvcache windowed OBP", |seed| run(seed, ObpMode::Window, None));
}

#[test]
fn nvcache_overwriting_reused_stale_copies_matches_a_btreemap() {
    for_each_seed("nvcache stale overwrite", |seed| run(seed, ObpMode::Window, Some(1)));
}

#[test]
fn nvcache_admits_nothing_while_the_data_fits_in_dram() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), ObpMode::Off);
    cfg.dram = ByteSize(64 * PAGE as u64);
    let engine = Engine::open(&cfg).unwrap();
    let bm = buffer(&engine);
    let tree = Catalog::create_tree(bm, "t").unwrap();
    // About 20 pages of data in 64 DRAM frames.
    for i in 0..300 {
        tree.insert(&key(i), &value(i, 0)).unwrap();
    }
    for round in 0..3 {
        for i in 0..300 {
            assert_eq!(tree.get(&key(i), |v| v.len()).unwrap(), Some(value(i, 0).len()), "round {round}");
        }
    }
    bm.checkpoint().unwrap();
    let c = bm.stats().nvm_cache.unwrap();
    assert_eq!(c.inserts(), 0, "{c:?}");
    assert_eq!(check_nvm_clean(bm), 0);
    engine.close().unwrap();
}
