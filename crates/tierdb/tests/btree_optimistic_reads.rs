//! Lookups read inner nodes optimistically (no latch, validated by version). This test
//! runs them against a writer that splits and merges inner nodes all the time: a reader
//! must always find the keys that are never deleted, with their exact values, and never
//! see a torn value or an error — on main memory, on the buffer manager with pages
//! moving between DRAM, NVM and SSD, and on nvm-direct, where writers change the pages
//! readers are reading in NVM. `read_into` reads leaves optimistically too (where they are
//! resident whole): a second reader uses it on the stable keys and on keys whose values
//! a third writer keeps rewriting, and must never see a value half old, half new.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::device::{DramConfig, NvmConfig, SsdConfig};
use tierdb::sources::DirectConfig;
use tierdb::sources::MemorySource;
use tierdb::sources::NvmDirect;
use tierdb::{BTree, ByteSize, PageSource};

const STABLE: u64 = 2_000;
const CHURN_ROUNDS: u64 = 6;

fn stable_key(i: u64) -> Vec<u8> {
    format!("s{:08}", i * 7919 % 1_000_003).into_bytes()
}

fn stable_value(i: u64) -> Vec<u8> {
    vec![(i % 251) as u8; 40 + (i % 60) as usize]
}

/// Rounds of the copying reader and of the writer of the mutating keys (bounded: on
/// the small buffer pools every operation reads and writes the disk).
const COPY_ROUNDS: u64 = 3_000;

/// Keys whose values are rewritten all the time, each value telling its own length.
const MUTATING: u64 = 64;

fn mutating_key(i: u64) -> Vec<u8> {
    format!("m{:08}", i * 7919 % 1_000_003).into_bytes()
}

/// A value of `b` repeated `20 + b % 90` times: a torn read shows as mixed bytes or a
/// wrong length.
fn mutating_value(b: u8) -> Vec<u8> {
    vec![b; 20 + b as usize % 90]
}

fn hammer<S: PageSource>(source: &S) {
    let tree = BTree::create(source).unwrap();
    for i in 0..STABLE {
        tree.insert(&stable_key(i), &stable_value(i)).unwrap();
    }
    for i in 0..MUTATING {
        tree.insert(&mutating_key(i), &mutating_value(0)).unwrap();
    }
    let stop = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    let copies = AtomicU64::new(0);
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
        // Writer of the mutating keys: same-length and length-changing rewrites.
        s.spawn(|| {
            let mut b = 0u8;
            for _ in 0..COPY_ROUNDS {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                b = b.wrapping_add(1);
                tree.update(&mutating_key(u64::from(b) % MUTATING), &mutating_value(b)).unwrap();
            }
        });
        // Reader by copy: stable keys whole and in part, mutating keys whole.
        s.spawn(|| {
            let mut out = [0u8; 200];
            let mut i = 0u64;
            while i < COPY_ROUNDS && !stop.load(Ordering::Relaxed) {
                let n = i % STABLE;
                let want = stable_value(n);
                let got = tree.read_into(&stable_key(n), 0..usize::MAX, &mut out).unwrap();
                assert_eq!(got.map(|len| &out[..len]), Some(want.as_slice()), "stable key {n} lost or torn");
                let got = tree.read_into(&stable_key(n), 10..30, &mut out).unwrap();
                assert_eq!(got.map(|len| &out[..len]), Some(&want[10..30]), "stable key {n}, bytes 10..30");
                let m = i % MUTATING;
                let len = tree.read_into(&mutating_key(m), 0..usize::MAX, &mut out).unwrap().expect("present");
                assert_eq!(&out[..len], mutating_value(out[0]).as_slice(), "mutating key {m} torn");
                i += 1;
            }
            copies.store(i, Ordering::Relaxed);
        });
    });
    assert!(lookups.load(Ordering::Relaxed) > 1000, "the reader ran alongside the writer");
    assert!(copies.load(Ordering::Relaxed) > 500, "the copying reader ran alongside the writers");
    let st = tree.check_invariants().unwrap();
    assert_eq!(st.entries, STABLE + MUTATING);
    let mut small = [0u8; 8];
    let e = tree.read_into(&stable_key(1), 0..usize::MAX, &mut small).unwrap_err();
    assert!(e.to_string().contains("does not fit the buffer of 8 bytes"), "{e}");
    assert_eq!(tree.read_into(b"absent", 0..usize::MAX, &mut small).unwrap(), None);
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
