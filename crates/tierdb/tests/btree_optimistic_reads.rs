//! Lookups read inner nodes optimistically (no latch, validated by version). This test
//! runs them against a writer that splits and merges inner nodes all the time: a reader
//! must always find the keys that are never deleted, with their exact values, and never
//! see a torn value or an error — on main memory, on the buffer manager with pages
//! moving between DRAM, NVM and SSD, and on nvm-direct, where writers change the pages
//! readers are reading in NVM.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tierdb::buffer::{BufferConfig, BufferManager, DirectConfig, MemorySource, NvmDirect, Techniques};
use tierdb::device::{DramConfig, NvmConfig, SsdConfig};
use tierdb::{BTree, ByteSize, PageSource};

const STABLE: u64 = 2_000;
const CHURN_ROUNDS: u64 = 6;

fn stable_key(i: u64) -> Vec<u8> {
    format!("s{:08}", i * 7919 % 1_000_003).into_bytes()
}

fn stable_value(i: u64) -> Vec<u8> {
    vec![(i % 251) as u8; 40 + (i % 60) as usize]
}

fn hammer<S: PageSource>(source: &S) {
    let tree = BTree::create(source).unwrap();
    for i in 0..STABLE {
        tree.insert(&stable_key(i), &stable_value(i)).unwrap();
    }
    let stop = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    std::thread::scope(|s| {
        // Writer: waves of inserts and deletes of other keys between the stable ones,
        // so leaves and inner nodes split and merge again and again.
        s.spawn(|| {
            for round in 0..CHURN_ROUNDS {
                for j in 0..6_000u64 {
                    let k = format!("c{:08}", (j * 104_729 + round) % 1_000_003);
                    tree.upsert(k.as_bytes(), &[round as u8; 120]).unwrap();
                }
                for j in 0..6_000u64 {
                    let k = format!("c{:08}", (j * 104_729 + round) % 1_000_003);
                    tree.delete(k.as_bytes()).unwrap();
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        // Reader: every stable key, again and again, until the writer is done.
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let want = stable_value(i % STABLE);
                let got = tree.get(&stable_key(i % STABLE), |v| v == want.as_slice()).unwrap();
                assert_eq!(got, Some(true), "stable key {} lost or torn", i % STABLE);
                i += 1;
            }
            lookups.store(i, Ordering::Relaxed);
        });
    });
    assert!(lookups.load(Ordering::Relaxed) > 1000, "the reader ran alongside the writer");
    let st = tree.check_invariants().unwrap();
    assert_eq!(st.entries, STABLE);
}

#[test]
fn lookups_survive_splits_and_merges_in_place_in_nvm() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let cfg = DirectConfig::new(NvmConfig::new(dir.path().join("d.nvm"), ByteSize(32 << 20)), 4096);
    hammer(&NvmDirect::open(&cfg).unwrap());
}

#[test]
fn lookups_survive_splits_and_merges_in_main_memory() {
    let mut cfg = DramConfig::new(ByteSize(64 << 20));
    cfg.frame_bytes = 4096;
    hammer(&MemorySource::new(&cfg).unwrap());
}

#[test]
fn lookups_survive_splits_merges_and_evictions_in_the_buffer_manager() {
    for tech in [Techniques::NONE, Techniques::ALL] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = BufferConfig::new(ByteSize(48 * 4096));
        cfg.page_size = 4096;
        cfg.policy = "hymem".into();
        cfg.nvm = Some(NvmConfig::new(dir.path().join("t.nvm"), ByteSize(1 << 20)));
        cfg.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
        cfg.techniques = tech;
        let bm = BufferManager::open(&cfg).unwrap();
        hammer(&bm);
        let s = bm.stats().buffer;
        assert!(s.dram_evictions > 0 && s.nvm_hits > 0, "{tech}: {s:?}");
        if tech == Techniques::ALL {
            assert!(s.line_faults > 0 && s.swizzles > 0, "{s:?}");
        }
        bm.check_invariants();
    }
}

/// With DRAM this small, evictions invalidate optimistic descents often; lookups must
/// then fall back to latch coupling rather than fail.
#[test]
fn lookups_survive_a_tiny_dram_pool() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = BufferConfig::new(ByteSize(12 * 4096));
    cfg.page_size = 4096;
    cfg.policy = "hymem".into();
    cfg.nvm = Some(NvmConfig::new(dir.path().join("t.nvm"), ByteSize(512 << 10)));
    cfg.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
    cfg.techniques = Techniques::ALL;
    let bm = BufferManager::open(&cfg).unwrap();
    hammer(&bm);
    bm.check_invariants();
}
