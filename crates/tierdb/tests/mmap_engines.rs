//! The PostgreSQL study's memory-mapped engines on the buffer manager: SE2 copies no
//! page on reads and exactly one page before the first change of a page; `mmap-read`
//! moves pages with `pread`/`pwrite`; all three agree with a `BTreeMap` under random
//! operations and reopen from the NVM file alone.

use std::collections::BTreeMap;

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::buffer::{BufferConfig, BufferManager};
use tierdb::catalog::Catalog;
use tierdb::device::NvmConfig;

const PS: usize = 4096;
const KEYS: u64 = 2000;

/// DRAM of `dram_frames` over an NVM file of 200 frames, no SSD (the database file).
fn config(dir: &tempfile::TempDir, dram_frames: u64, policy: &str, reopen: bool) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(dram_frames * PS as u64));
    c.page_size = PS;
    c.policy = policy.into();
    c.nvm = Some(NvmConfig::new(
        dir.path().join("db.nvm"),
        ByteSize((8192 + 200 * (PS as u64 + 64) + 4096).next_multiple_of(4096)),
    ));
    c.reopen_nvm_only = reopen;
    c
}

fn key(i: u64) -> Vec<u8> {
    format!("user{:019}", i * 7919).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    (0..120).map(|j| (i as u8).wrapping_mul(3).wrapping_add(j as u8)).collect()
}

#[test]
fn se2_copies_nothing_on_reads_and_one_page_before_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    {
        let bm = BufferManager::open(&config(&dir, 8, "se2", false)).unwrap();
        let t = Catalog::create_tree(&bm, "t").unwrap();
        for i in 0..KEYS {
            t.insert(&key(i), &value(i)).unwrap();
        }
        bm.close().unwrap();
    }
    // Reopened, every page is in the NVM file and DRAM is empty.
    let bm = BufferManager::open(&config(&dir, 8, "se2", true)).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    let before = bm.stats().buffer;
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..5000 {
        let i = rng.random_range(0..KEYS);
        assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), Some(value(i)));
    }
    let mut n = 0;
    t.scan(b"", |_, _| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, KEYS);
    let reads = bm.stats().buffer.since(&before);
    assert_eq!((reads.nvm_to_dram_pages, reads.nvm_lines_loaded), (0, 0), "reads copy nothing: {reads:?}");
    assert!(reads.nvm_reads_in_place > 5000, "{reads:?}");
    // The first change of a leaf copies it (one page); more changes of it copy nothing.
    let mut copies = Vec::new();
    for i in [10, 11, 12, 1500] {
        let before = bm.stats().buffer;
        assert!(t.update_in_place(&key(i), 0, &[0xAB; 4]).unwrap());
        copies.push(bm.stats().buffer.since(&before).nvm_to_dram_pages);
    }
    // Keys 10..12 share a leaf; key 1500 is in another.
    assert_eq!(copies, vec![1, 0, 0, 1]);
    assert_eq!(t.get_part(&key(11), 0..4, <[u8]>::to_vec).unwrap(), Some(vec![0xAB; 4]));
    bm.check_invariants();
}

fn model_run(policy: &str, file_io: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = BTreeMap::new();
    {
        let bm = BufferManager::open(&config(&dir, 12, policy, false)).unwrap();
        bm.nvm().unwrap().set_file_io(file_io);
        let t = Catalog::create_tree(&bm, "t").unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        for op in 0..10_000u32 {
            let i = rng.random_range(0..KEYS);
            match rng.random_range(0..10) {
                0..4 => {
                    t.upsert(&key(i), &value(i + op as u64)).unwrap();
                    m.insert(key(i), value(i + op as u64));
                }
                4 => assert_eq!(t.delete(&key(i)).unwrap(), m.remove(&key(i)).is_some()),
                _ => assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), m.get(&key(i)).cloned(), "{policy} op {op}"),
            }
        }
        let s = bm.stats();
        assert!(s.buffer.dram_evictions > 100 && s.buffer.nvm_hits > 100, "{policy}: {:?}", s.buffer);
        bm.close().unwrap();
    }
    let bm = BufferManager::open(&config(&dir, 12, policy, true)).unwrap();
    bm.nvm().unwrap().set_file_io(file_io);
    let t = Catalog::open_tree(&bm, "t").unwrap();
    t.check_invariants().unwrap();
    let mut it = m.iter();
    t.scan(b"", |k, v| {
        assert_eq!(Some((k, v)), it.next().map(|(a, b)| (a.as_slice(), b.as_slice())), "{policy} after reopen");
        true
    })
    .unwrap();
    assert!(it.next().is_none());
}

#[test]
fn every_mmap_engine_agrees_with_a_model_and_reopens() {
    model_run("eager", true); // mmap-read
    model_run("eager", false); // mmap-se1
    model_run("se2", false); // mmap-se2
}

/// NVM device reads and lines read by SE2 for the same lookups, with software prefetch
/// of `prefetch_lines` after each in-place read, through a 64 KiB CPU-cache model.
fn se2_lookup_reads(prefetch_lines: u32) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    {
        let bm = BufferManager::open(&config(&dir, 8, "se2", false)).unwrap();
        let t = Catalog::create_tree(&bm, "t").unwrap();
        for i in 0..KEYS {
            t.insert(&key(i), &value(i)).unwrap();
        }
        bm.close().unwrap();
    }
    let mut c = config(&dir, 8, "se2", true);
    c.cpu_cache_model_bytes = 64 << 10;
    c.prefetch_lines = prefetch_lines;
    let bm = BufferManager::open(&c).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    let before = bm.stats();
    let mut rng = SmallRng::seed_from_u64(2);
    for _ in 0..3000 {
        let i = rng.random_range(0..KEYS);
        assert_eq!(t.get(&key(i), <[u8]>::to_vec).unwrap(), Some(value(i)));
    }
    let d = bm.stats().since(&before);
    assert_eq!(d.buffer.nvm_to_dram_pages, 0, "lookups stay in place");
    let nvm = d.nvm.expect("an NVM device");
    (nvm.reads, nvm.read_lines)
}

#[test]
fn se2_prefetch_brings_the_next_lines_in_with_a_read() {
    let (reads_off, lines_off) = se2_lookup_reads(0);
    let (reads_on, lines_on) = se2_lookup_reads(4);
    // Lines the prefetch brought in are hits for the lookup's next loads: fewer device
    // reads (each pays NVM latency), more lines moved per read.
    assert!(reads_on < reads_off, "reads with prefetch {reads_on}, without {reads_off}");
    assert!(lines_on > lines_off, "lines with prefetch {lines_on}, without {lines_off}");
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir, 8, "se2", false);
    c.prefetch_lines = tierdb::limits::PREFETCH_LINES_MAX + 1;
    let e = BufferManager::open(&c).err().expect("too many lines refused").to_string();
    assert!(e.contains("prefetch"), "{e}");
}
