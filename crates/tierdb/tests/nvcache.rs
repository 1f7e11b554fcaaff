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
use tierdb::buffer::{BufferManager, Techniques};
use tierdb::counters::BufferStats;
use tierdb::device::{DoubleWriteMode, OpenMode, StatsSnapshot};
use tierdb::policy::{NvcacheConfig, ObpMode};
use tierdb::{ByteSize, Catalog};

mod pages;

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

/// Fills `pages` pages into a pool of 256 DRAM frames (batches of 8 victims), then
/// reads and rewrites them on a fixed skewed sequence, half of them updates; returns
/// the buffer's counters and the SSD file's over the run (SSD and NVM as `policy` and
/// `nvm_frames` say; no double-write area, so every SSD write is a page write).
fn evict_through_updates(policy: &str, nvm_frames: u64, pages: u64) -> (BufferStats, StatsSnapshot) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = pages::tiered(&dir, 256, nvm_frames, policy, Techniques::default());
    c.ssd_open_mode = OpenMode::Create;
    c.double_write = DoubleWriteMode::Off;
    // Small-bypass past anything the test reaches: `nvcache` admits nothing.
    c.nvcache = NvcacheConfig { small_bypass_dram_percent: 1_000_000, ..NvcacheConfig::default() };
    let bm = BufferManager::open(&c).unwrap();
    let ssd_before = bm.ssd().unwrap().core().stats().snapshot();
    let before = bm.stats().buffer;
    let ids = pages::fill(&bm, pages as usize);
    let mut x = 42u64;
    let mut rounds = vec![0u8; ids.len()];
    for _ in 0..20_000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
        let i = (u * u * ids.len() as f64) as usize;
        if (x >> 7) & 1 == 0 {
            rounds[i] = rounds[i].wrapping_add(1);
            pages::rewrite(&bm, ids[i], rounds[i]);
        } else {
            pages::check(&bm, ids[i], rounds[i]);
        }
    }
    let b = bm.stats().buffer.since(&before);
    let ssd = bm.ssd().unwrap().core().stats().snapshot().since(&ssd_before);
    bm.check_invariants();
    for (i, p) in ids.iter().enumerate() {
        pages::check(&bm, *p, rounds[i]);
    }
    (b, ssd)
}

/// `nvcache` admitting nothing (small-bypass) evicts as `ssd-bm` does: on the same
/// accesses, the same victims, each dirty one written to SSD once, in the same
/// batches, and counted as written (not as a clean drop).
#[test]
fn nvcache_admitting_nothing_writes_and_counts_each_victim_as_ssd_bm_does() {
    let (ssd_bm, ssd_bm_dev) = evict_through_updates("eager", 0, 1000);
    let (nvc, nvc_dev) = evict_through_updates("nvcache", 64, 1000);
    for (name, b) in [("ssd-bm", &ssd_bm), ("nvcache", &nvc)] {
        assert!(b.dram_evictions > 2000 && b.dram_to_ssd_pages > 1000, "{name}: too few evictions: {b:?}");
        assert_eq!(b.dram_evictions, b.dram_to_ssd_pages + b.clean_drops, "{name}: {b:?}");
        assert_eq!((b.nvm_admissions, b.dram_to_nvm_pages), (0, 0), "{name}: {b:?}");
    }
    let counts = |b: &BufferStats| (b.dram_evictions, b.dram_to_ssd_pages, b.clean_drops, b.ssd_reads);
    assert_eq!(counts(&nvc), counts(&ssd_bm), "nvcache {nvc:?}\nssd-bm {ssd_bm:?}");
    assert_eq!(
        nvc_dev.write_bytes, ssd_bm_dev.write_bytes,
        "SSD bytes written: nvcache {nvc_dev:?}\nssd-bm {ssd_bm_dev:?}"
    );
    assert_eq!(nvc_dev.write_bytes, ssd_bm.dram_to_ssd_pages * 4096, "{ssd_bm_dev:?} {ssd_bm:?}");
    assert_eq!(nvc_dev.writes, ssd_bm_dev.writes, "SSD writes: nvcache {nvc_dev:?}\nssd-bm {ssd_bm_dev:?}");
}
