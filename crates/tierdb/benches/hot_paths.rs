//! Micro-benchmarks of the hot paths: page-table lookup, fix/unfix of a DRAM-resident
//! page (main-memory and buffer manager), a line-grained fix and read, and B+-tree point
//! lookups (`get`, latched leaf, and `read_into`, optimistic leaf) on main-memory and on
//! the buffer manager with the NVM techniques off and on (all pages in DRAM: the
//! overhead of the buffer manager itself).
//!
//! `cargo bench -p tierdb --bench hot_paths`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tierdb::buffer::{BufferConfig, BufferManager, Techniques};
use tierdb::buffer::{Entry, PageTable};
use tierdb::device::{DramConfig, NvmConfig};
use tierdb::page::FrameId;
use tierdb::page::LinePage;
use tierdb::sources::MemorySource;
use tierdb::{BTree, ByteSize, PageId, PageSource};

const PAGES: u64 = 4096;

/// A cheap deterministic sequence of page ids in 1..PAGES.
fn ids() -> impl FnMut() -> PageId {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        PageId(1 + x % (PAGES - 1))
    }
}

fn page_table(c: &mut Criterion) {
    let t = PageTable::new(1 << 20);
    for p in 1..PAGES {
        t.set(PageId(p), Entry::Dram(FrameId::new(p as u32)));
    }
    let mut next = ids();
    c.bench_function("page_table/get", |b| b.iter(|| black_box(t.get(next()).unwrap())));
}

fn fix<S: PageSource>(c: &mut Criterion, name: &str, s: &S) {
    let mut next = ids();
    c.bench_function(&format!("fix_shared+unfix/{name}"), |b| {
        b.iter(|| {
            let g = s.fix_shared(next()).unwrap();
            black_box(g[100])
        })
    });
    let mut next = ids();
    c.bench_function(&format!("fix_exclusive+unfix/{name}"), |b| {
        b.iter(|| {
            let g = s.fix_exclusive(next()).unwrap();
            black_box(g[100])
        })
    });
}

fn sources(c: &mut Criterion) {
    let mut d = DramConfig::new(ByteSize(PAGES * 16384));
    d.frame_bytes = 16384;
    let mem = MemorySource::new(&d).unwrap();
    let bm = BufferManager::open(&BufferConfig::new(ByteSize((PAGES + 16) * 16384))).unwrap();
    for _ in 1..PAGES {
        drop(mem.allocate().unwrap());
        drop(bm.allocate().unwrap());
    }
    fix(c, "main-memory", &mem);
    fix(c, "buffer-manager", &bm);
    let mut next = ids();
    c.bench_function("fix_lines+read 8 B+unfix/buffer-manager", |b| {
        b.iter(|| {
            let mut g = bm.fix_lines(next(), false).unwrap();
            black_box(g.read(100, 8).unwrap()[0])
        })
    });
}

const KEYS: u64 = 200_000;

/// Point lookups of random keys in a tree of `KEYS` u64 keys on `source`.
fn lookups<S: PageSource>(c: &mut Criterion, name: &str, source: &S) {
    let tree = BTree::create(source).unwrap();
    for k in 0..KEYS {
        tree.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let mut x = 1u64;
    c.bench_function(&format!("btree/get (200k u64 keys, {name})"), |b| {
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = (x >> 20) % KEYS;
            black_box(tree.get(&k.to_be_bytes(), |v| v[0]).unwrap())
        })
    });
    // The copying lookup: the leaf read optimistically where it is resident whole.
    let mut out = [0u8; 8];
    c.bench_function(&format!("btree/read_into (200k u64 keys, {name})"), |b| {
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = (x >> 20) % KEYS;
            black_box(tree.read_into(&k.to_be_bytes(), 0..usize::MAX, &mut out).unwrap())
        })
    });
}

fn btree_lookup(c: &mut Criterion) {
    let mut d = DramConfig::new(ByteSize(256 << 20));
    d.frame_bytes = 16384;
    lookups(c, "main-memory", &MemorySource::new(&d).unwrap());
    let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    for (name, t) in [("buffer manager, basic", Techniques::NONE), ("buffer manager, all techniques", Techniques::ALL)]
    {
        let mut cfg = BufferConfig::new(ByteSize(256 << 20));
        cfg.techniques = t;
        cfg.nvm = Some(NvmConfig::new(dir.path().join(format!("{}.nvm", t.name())), ByteSize(512 << 20)));
        lookups(c, name, &BufferManager::open(&cfg).unwrap());
    }
}

criterion_group!(benches, page_table, sources, btree_lookup);
criterion_main!(benches);
