//! Tests of the bulk load: every level built from sorted input, densities against sorted
//! inserts, refused input, a full source, random loads followed by changes checked against
//! a `BTreeMap`, and loads through the buffer manager.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rand::prelude::*;

use super::*;
use crate::ByteSize;
use crate::btree::{LeafChange, TreeLog, TreeStats, value_bytes_max};
use crate::device::DramConfig;
use crate::ids::{Lsn, TxnId};
use crate::limits::BTREE_BULK_FILL_DEFAULT;
use crate::sources::MemorySource;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const PS: usize = 4096;

fn source(page: usize, pages: u64) -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(page as u64 * pages));
    cfg.frame_bytes = page;
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

/// Bulk-loads `records` (in their order) into `t`.
fn load<S: PageSource>(t: &BTree<'_, S>, fill: f64, records: &[(Vec<u8>, Vec<u8>)]) -> crate::Result<u64> {
    let mut it = records.iter();
    t.bulk_load(fill, |k, v| {
        Ok(it.next().is_some_and(|(a, b)| {
            k.extend_from_slice(a);
            v.extend_from_slice(b);
            true
        }))
    })
}

fn ycsb_key(i: u64) -> Vec<u8> {
    format!("user{i:019}").into_bytes()
}

/// The checker passes, every key is found with its value, and a cursor over the
/// whole tree returns exactly the model, in order.
fn check_against<S: PageSource>(t: &BTree<'_, S>, m: &Model, what: &str) -> TreeStats {
    let st = t.check_invariants().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(st.entries, m.len() as u64, "{what}");
    for (k, v) in m {
        assert_eq!(t.get(k, <[u8]>::to_vec).unwrap().as_ref(), Some(v), "{what}: key {k:02x?}");
    }
    let mut c = t.range(b"");
    let mut it = m.iter();
    while let Some((k, v)) = c.next().unwrap() {
        let want = it.next().unwrap_or_else(|| panic!("{what}: cursor past the model at {k:02x?}"));
        assert_eq!((k, v), (want.0.as_slice(), want.1.as_slice()), "{what}");
    }
    assert!(it.next().is_none(), "{what}: the cursor ended early");
    st
}

/// Level, bytes in use, entries and whether it is the last of its level, of every
/// node, level by level from the root.
fn nodes(t: &BTree<'_, MemorySource>) -> Vec<(u8, usize, usize, bool)> {
    let mut out = Vec::new();
    let mut level = vec![t.root()];
    while !level.is_empty() {
        let mut below = Vec::new();
        for (i, &pid) in level.iter().enumerate() {
            let page = t.source().fix_shared(pid).unwrap();
            let n = NodeRef::parse(&page, pid).unwrap();
            out.push((n.level(), page.len() - n.free_total(), n.count(), i + 1 == level.len()));
            if !n.is_leaf() {
                below.extend((0..=n.count()).map(|c| n.child(c).unwrap()));
            }
        }
        level = below;
    }
    out
}

/// Every node but the last of its level is within the fill limit, unless it holds
/// only its minimum of items; returns the mean fill of those leaves.
fn check_fill(t: &BTree<'_, MemorySource>, fill: f64) -> f64 {
    let limit = (fill * PS as f64) as usize;
    let (mut sum, mut n) = (0.0, 0);
    for (level, used, count, last) in nodes(t) {
        if last || count <= 1 {
            continue;
        }
        assert!(used <= limit, "a level-{level} node of {count} entries uses {used} bytes, limit {limit}");
        if level == 0 {
            sum += used as f64 / PS as f64;
            n += 1;
        }
    }
    if n == 0 { 1.0 } else { sum / n as f64 }
}

#[test]
fn common_prefix_len_is_the_bytewise_one() {
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..2000 {
        let a: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random_range(0..3)).collect();
        let b: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random_range(0..3)).collect();
        assert_eq!(common_prefix_len(&a, &b), super::super::node::common_prefix_len(&a, &b), "{a:?} {b:?}");
        assert_eq!(common_prefix_len(&a, &a), a.len());
    }
}

#[test]
fn an_empty_input_leaves_an_empty_tree() {
    let s = source(PS, 16);
    let t = BTree::create(&s).unwrap();
    let used = s.pages_used();
    assert_eq!(load(&t, BTREE_BULK_FILL_DEFAULT, &[]).unwrap(), 0);
    let st = check_against(&t, &Model::new(), "empty");
    assert_eq!((st.height, st.leaves), (1, 1));
    assert_eq!(s.pages_used(), used);
    // Still empty, so it may be loaded.
    assert_eq!(load(&t, 1.0, &[(b"k".to_vec(), b"v".to_vec())]).unwrap(), 1);
}

#[test]
fn one_record_is_a_root_leaf() {
    let s = source(PS, 16);
    let t = BTree::create(&s).unwrap();
    let used = s.pages_used();
    let records = [(vec![0xff; BTREE_KEY_BYTES_MAX], vec![7; value_bytes_max(PS)])];
    assert_eq!(load(&t, 0.5, &records).unwrap(), 1);
    let mut m: Model = records.iter().cloned().collect();
    let st = check_against(&t, &m, "one record");
    assert_eq!((st.height, st.leaves, st.entries), (1, 1, 1));
    assert_eq!(s.pages_used(), used, "written into the root page");
    for i in 0..300 {
        t.insert(&ycsb_key(i), &[1; 40]).unwrap();
        m.insert(ycsb_key(i), vec![1; 40]);
    }
    check_against(&t, &m, "after inserts");
}

/// Sorted YCSB-like records at several fill factors: three levels or more, every
/// node within the fill, leaves filled close to it, no page lost or leaked, and the
/// tree takes inserts, updates and deletes afterwards.
#[test]
fn sorted_records_build_every_level() {
    for fill in [BTREE_BULK_FILL_MIN, 0.75, BTREE_BULK_FILL_DEFAULT, 1.0] {
        let s = source(PS, 4096);
        let t = BTree::create(&s).unwrap();
        let root = t.root();
        let used = s.pages_used();
        let records: Vec<_> = (0..20_000u64).map(|i| (ycsb_key(i * 3), vec![i as u8; 100])).collect();
        assert_eq!(load(&t, fill, &records).unwrap(), 20_000);
        let mut m: Model = records.into_iter().collect();
        let st = check_against(&t, &m, &format!("fill {fill}"));
        assert!(st.height >= 3, "fill {fill}: {st:?}");
        assert_eq!(t.root(), root);
        assert_eq!(s.pages_used(), used - 1 + st.pages(), "fill {fill}: every page is in the tree");
        if fill >= 0.75 {
            // (At half a page the last two nodes of a level, re-cut, may be just
            // below a quarter of a page each.)
            assert_eq!((st.underfull_leaves, st.underfull_inner), (0, 0), "fill {fill}: {st:?}");
        }
        let mean = check_fill(&t, fill);
        // Each leaf is short of the limit by less than one entry (~125 bytes).
        assert!(mean > fill - 0.035, "fill {fill}: leaves filled to {mean:.3}");
        let mut rng = SmallRng::seed_from_u64(fill.to_bits());
        for _ in 0..4000 {
            let k = ycsb_key(rng.random_range(0..60_000));
            match rng.random_range(0..3) {
                0 => {
                    let v = vec![rng.random(); rng.random_range(0..300)];
                    assert_eq!(t.insert(&k, &v).unwrap(), !m.contains_key(&k));
                    m.entry(k).or_insert(v);
                }
                1 => {
                    let v = vec![rng.random(); rng.random_range(0..300)];
                    assert_eq!(t.update(&k, &v).unwrap(), m.contains_key(&k));
                    m.entry(k).and_modify(|old| *old = v);
                }
                _ => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some()),
            }
        }
        check_against(&t, &m, &format!("fill {fill}, after changes"));
    }
}

/// Against the sorted inserts the bulk load replaces (5000 records of 23-byte keys
/// in order, sharing long prefixes):
/// the default fill packs small records (up to ~3% of a page) at least as densely
/// (inserts lose what prefix truncation frees once a left node gets its upper
/// fence), and full pages pack any records at least as densely. (Larger records
/// lose a record or two per leaf to the default's room: see
/// `BTREE_BULK_FILL_DEFAULT`.)
#[test]
fn bulk_loads_are_as_dense_as_sorted_inserts() {
    for (page, value) in [(4096, 100), (4096, 120), (4096, 600), (16384, 100), (16384, 1000), (16384, 3000)] {
        let records: Vec<_> = (0..5000u64).map(|i| (ycsb_key(i), vec![5u8; value])).collect();
        let s = source(page, 8192);
        let inserted = BTree::create(&s).unwrap();
        for (k, v) in &records {
            inserted.insert(k, v).unwrap();
        }
        let inserted = inserted.check_invariants().unwrap().leaves;
        for fill in [BTREE_BULK_FILL_DEFAULT, 1.0] {
            let loaded = BTree::create(&s).unwrap();
            load(&loaded, fill, &records).unwrap();
            let loaded = loaded.check_invariants().unwrap().leaves;
            if fill == 1.0 || value * 30 < page {
                assert!(
                    loaded <= inserted,
                    "{page}-byte pages, {value}-byte values, fill {fill}: {loaded} leaves, {inserted} inserted",
                );
            }
        }
    }
}

struct NoLog;

impl TreeLog for NoLog {
    fn leaf_change(&self, _: PageId, _: PageId, _: LeafChange<'_>) -> Result<Lsn, crate::wal::WalError> {
        Ok(Lsn::new(1))
    }
    fn smo_begin(&self) -> TxnId {
        TxnId::smo(1)
    }
    fn smo_image(&self, _: TxnId, _: PageId, _: &[u8]) -> Result<Lsn, crate::wal::WalError> {
        Ok(Lsn::new(1))
    }
    fn smo_free(&self, _: TxnId, _: PageId) -> Result<Lsn, crate::wal::WalError> {
        Ok(Lsn::new(1))
    }
    fn smo_end(&self, _: TxnId) -> Result<Lsn, crate::wal::WalError> {
        Ok(Lsn::new(1))
    }
}

fn btree_error(e: crate::Error) -> BTreeError {
    match e {
        crate::Error::BTree(e) => e,
        e => panic!("not a B-tree error: {e}"),
    }
}

/// Bad input is a typed error, and the tree is left empty with every page the load
/// took freed again, even when the error comes after thousands of records.
#[test]
fn bad_input_is_refused_and_leaves_the_tree_empty() {
    let s = source(PS, 4096);
    let t = BTree::create(&s).unwrap();
    let used = s.pages_used();
    let sorted: Vec<_> = (0..10_000u64).map(|i| (ycsb_key(i), vec![1u8; 50])).collect();
    let with = |i: usize, r: (Vec<u8>, Vec<u8>)| {
        let mut v = sorted.clone();
        v[i] = r;
        v
    };
    let empty_and_whole = |what: &str| {
        let st = t.check_invariants().unwrap();
        assert_eq!((st.height, st.entries), (1, 0), "{what}");
        assert_eq!(s.pages_used(), used, "{what}: pages leaked");
    };
    // Out of order, and a duplicate, late in the input.
    let e = btree_error(load(&t, 0.9, &with(7000, (ycsb_key(6998), vec![]))).unwrap_err());
    assert!(
        matches!(&e, BTreeError::BulkLoadUnsorted { position: 7000, key, previous }
            if *key == ycsb_key(6998) && *previous == ycsb_key(6999)),
        "{e}"
    );
    assert!(e.to_string().contains("record 7000"), "{e}");
    empty_and_whole("unsorted");
    let e = btree_error(load(&t, 0.9, &with(9999, (ycsb_key(9998), vec![]))).unwrap_err());
    assert!(matches!(e, BTreeError::BulkLoadUnsorted { position: 9999, .. }), "{e}");
    empty_and_whole("duplicate");
    // A key that is a prefix of the one before it is below it.
    let e = btree_error(load(&t, 0.9, &[(b"ab".to_vec(), vec![]), (b"a".to_vec(), vec![])]).unwrap_err());
    assert!(matches!(e, BTreeError::BulkLoadUnsorted { position: 1, .. }), "{e}");
    // The limits of `insert`.
    let e = btree_error(load(&t, 0.9, &with(5000, (vec![b'v'; BTREE_KEY_BYTES_MAX + 1], vec![]))).unwrap_err());
    assert!(matches!(e, BTreeError::KeyTooLarge { len: 257, max: 256 }), "{e}");
    empty_and_whole("long key");
    let max = value_bytes_max(PS);
    let e = btree_error(load(&t, 0.9, &with(5000, (ycsb_key(5000), vec![0; max + 1]))).unwrap_err());
    assert!(matches!(e, BTreeError::ValueTooLarge { len, .. } if len == max + 1), "{e}");
    empty_and_whole("long value");
    // Fill factors outside the range, NaN included.
    for fill in [0.0, 0.49, 1.01, f64::NAN, f64::INFINITY] {
        let e = btree_error(load(&t, fill, &sorted).unwrap_err());
        assert!(matches!(e, BTreeError::BulkLoadFill { .. }), "{fill}: {e}");
    }
    // The caller's error comes back as it was.
    #[derive(Debug)]
    enum Caller {
        Stop(usize),
        Tree(#[allow(dead_code)] crate::Error),
    }
    impl From<crate::Error> for Caller {
        fn from(e: crate::Error) -> Self {
            Caller::Tree(e)
        }
    }
    let mut n = 0;
    let r = t.bulk_load(0.9, |k, v| {
        n += 1;
        if n == 8000 {
            return Err(Caller::Stop(n));
        }
        k.extend_from_slice(&ycsb_key(n as u64));
        v.extend_from_slice(&[9; 100]);
        Ok(true)
    });
    assert!(matches!(r, Err(Caller::Stop(8000))), "{r:?}");
    empty_and_whole("the caller's error");
    // A logged tree.
    let log = NoLog;
    let e = btree_error(load(&t.logged(&log), 0.9, &sorted).unwrap_err());
    assert!(matches!(e, BTreeError::BulkLoadLogged { root } if root == t.root()), "{e}");
    assert!(e.to_string().contains("checkpoint"), "{e}");
    empty_and_whole("logged");
    // A tree that is not empty, whether its root is a leaf or not.
    t.insert(b"x", b"y").unwrap();
    let e = btree_error(load(&t, 0.9, &sorted).unwrap_err());
    assert!(matches!(e, BTreeError::BulkLoadNotEmpty { .. }), "{e}");
    t.delete(b"x").unwrap();
    load(&t, 0.9, &sorted).unwrap();
    let e = btree_error(load(&t, 0.9, &sorted[..1]).unwrap_err());
    assert!(e.to_string().contains("not empty"), "{e}");
    check_against(&t, &sorted.iter().cloned().collect(), "loaded after the errors");
}

/// A source too small for the records fails cleanly: an error, the tree empty and
/// the source as before.
#[test]
fn a_full_source_fails_cleanly() {
    let s = source(PS, 40);
    let t = BTree::create(&s).unwrap();
    let used = s.pages_used();
    let records: Vec<_> = (0..5000u64).map(|i| (ycsb_key(i), vec![3u8; 200])).collect();
    let e = load(&t, 1.0, &records).unwrap_err();
    assert!(e.to_string().contains("does not fit in DRAM"), "{e}");
    assert_eq!(s.pages_used(), used);
    assert_eq!(t.check_invariants().unwrap().entries, 0);
    load(&t, 1.0, &records[..500]).unwrap();
    check_against(&t, &records[..500].iter().cloned().collect(), "a smaller load");
}

/// Random keys of 1 to 256 bytes over a small alphabet, many sharing long
/// prefixes (so separators and fences are long and nodes hold few of them).
fn random_key(rng: &mut SmallRng, prefixes: &[Vec<u8>]) -> Vec<u8> {
    let mut k = prefixes[rng.random_range(0..prefixes.len())].clone();
    let len = if rng.random_bool(0.5) {
        k.len() + rng.random_range(1..=8)
    } else {
        rng.random_range(k.len().max(1)..=BTREE_KEY_BYTES_MAX)
    };
    while k.len() < len.min(BTREE_KEY_BYTES_MAX) {
        k.push([0, 1, 2, b'a', 0xfe, 0xff][rng.random_range(0..6)]);
    }
    k
}

fn random_value(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = match rng.random_range(0..20) {
        0 => rng.random_range(0..=max),
        1..4 => rng.random_range(0..300.min(max)),
        _ => rng.random_range(0..40),
    };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn prefixes(rng: &mut SmallRng) -> Vec<Vec<u8>> {
    [0, 0, 3, 30, 120, 200, 250]
        .iter()
        .map(|&n| (0..n).map(|_| [b'p', b'q', 0][rng.random_range(0..3)]).collect())
        .collect()
}

/// Random inserts, upserts, updates and deletes on `t`, mirrored in `m`.
fn change<S: PageSource>(t: &BTree<'_, S>, m: &mut Model, rng: &mut SmallRng, ops: usize, seed: u64) {
    let (pre, max) = (prefixes(rng), t.value_bytes_max());
    for _ in 0..ops {
        let k = if !m.is_empty() && rng.random_bool(0.4) {
            m.keys().nth(rng.random_range(0..m.len())).cloned().expect("in range")
        } else {
            random_key(rng, &pre)
        };
        let v = random_value(rng, max);
        match rng.random_range(0..4) {
            0 => {
                assert_eq!(t.insert(&k, &v).unwrap(), !m.contains_key(&k), "seed {seed}");
                m.entry(k).or_insert(v);
            }
            1 => {
                t.upsert(&k, &v).unwrap();
                m.insert(k, v);
            }
            2 => {
                assert_eq!(t.update(&k, &v).unwrap(), m.contains_key(&k), "seed {seed}");
                m.entry(k).and_modify(|old| *old = v);
            }
            _ => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some(), "seed {seed}"),
        }
    }
}

/// Random records (sorted), bulk-loaded, checked, changed at random, checked again.
fn load_and_change(seed: u64, records: usize, fill: f64, ops: usize) -> TreeStats {
    let what = format!("seed {seed}, {records} records, fill {fill}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let pre = prefixes(&mut rng);
    let max = value_bytes_max(PS);
    let mut m = Model::new();
    while m.len() < records {
        let k = random_key(&mut rng, &pre);
        let v = random_value(&mut rng, max);
        m.insert(k, v);
    }
    let s = source(PS, 16_384);
    let t = BTree::create(&s).unwrap();
    let used = s.pages_used();
    let sorted: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(load(&t, fill, &sorted).unwrap(), records as u64, "{what}");
    let st = check_against(&t, &m, &what);
    assert_eq!(s.pages_used(), used - 1 + st.pages(), "{what}");
    check_fill(&t, fill);
    change(&t, &mut m, &mut rng, ops, seed);
    check_against(&t, &m, &format!("{what}, after changes"));
    st
}

#[test]
fn random_keys_grow_three_levels_on_small_pages() {
    for seed in 1..=3 {
        let st = load_and_change(seed, 3000, [0.6, 0.9, 1.0][seed as usize - 1], 3000);
        assert!(st.height >= 3, "seed {seed}: {st:?}");
    }
}

/// A case the property test found in CI: an insert after the load split a leaf at a
/// key-group boundary and the left half overflowed (see `node`'s
/// `boundary_splits_fit_both_halves_under_a_long_separator`).
#[test]
fn found_by_the_property_test() {
    load_and_change(210_217_435_019_341_833, 1444, 0.562_641_776_143_674_7, 400);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn bulk_loads_match_the_model(
        seed in any::<u64>(),
        records in prop_oneof![1..8usize, 8..200usize, 200..1500usize],
        fill in prop_oneof![Just(BTREE_BULK_FILL_MIN), Just(BTREE_BULK_FILL_DEFAULT), Just(1.0), 0.5..=1.0f64],
    ) {
        load_and_change(seed, records, fill, 400);
    }
}

/// On the buffer manager with DRAM for a fraction of the tree (32 frames; with
/// `tech`, 48 NVM frames too): pages are evicted while the load runs, and every
/// record reads back, also after a close and reopen, and takes `ops` changes.
fn load_through_a_buffer_manager(tech: crate::buffer::Techniques, records: u64, ops: usize) {
    use crate::buffer::{BufferConfig, BufferManager, Techniques};
    use crate::catalog::Catalog;
    use crate::device::{NvmConfig, OpenMode, SsdConfig};

    let dir = tempfile::tempdir().unwrap();
    let config = |mode: OpenMode| {
        let mut c = BufferConfig::new(ByteSize(32 * PS as u64));
        c.page_size = PS;
        c.techniques = tech;
        c.debug_lines = tech != Techniques::NONE;
        if tech != Techniques::NONE {
            // The techniques work between DRAM and NVM.
            let bytes = (8192 + 48 * (PS as u64 + 64) + 4096).next_multiple_of(4096);
            c.nvm = Some(NvmConfig::new(dir.path().join("t.nvm"), ByteSize(bytes)));
        }
        c.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
        c.ssd_open_mode = mode;
        c
    };
    let recs: Vec<_> = (0..records).map(|i| (ycsb_key(i * 7), vec![i as u8; 120])).collect();
    let mut m: Model = recs.iter().cloned().collect();
    {
        let bm = BufferManager::open(&config(OpenMode::Create)).unwrap();
        let t = Catalog::create_tree(&bm, "t").unwrap();
        assert_eq!(load(&t, BTREE_BULK_FILL_DEFAULT, &recs).unwrap(), records);
        let st = check_against(&t, &m, &format!("{tech}"));
        assert!(st.pages() > 3 * (32 + 48), "{tech}: the tree ({} pages) is far larger than DRAM", st.pages());
        assert!(bm.stats().buffer.dram_evictions > st.pages(), "{tech}: {:?}", bm.stats().buffer);
        assert_eq!(bm.info().pages_in_use, 1 + st.pages(), "{tech}: the catalog and the tree");
        bm.check_invariants();
        bm.close().unwrap();
    }
    let bm = BufferManager::open(&config(OpenMode::Open)).unwrap();
    let t = Catalog::open_tree(&bm, "t").unwrap();
    check_against(&t, &m, &format!("{tech}, reopened"));
    change(&t, &mut m, &mut SmallRng::seed_from_u64(9), ops, 9);
    check_against(&t, &m, &format!("{tech}, reopened and changed"));
}

#[test]
fn loads_through_a_buffer_manager_smaller_than_the_tree() {
    load_through_a_buffer_manager(crate::buffer::Techniques::NONE, 20_000, 2000);
}

/// The same with cache-line-grained pages, mini pages and swizzling in debug mode
/// (slow: fewer records, still a tree three times DRAM and NVM together).
#[test]
fn loads_through_a_buffer_manager_with_every_technique() {
    load_through_a_buffer_manager(crate::buffer::Techniques::ALL, 7000, 300);
}
