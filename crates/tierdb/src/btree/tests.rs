//! Unit tests of the tree on a `MemorySource`.

use super::*;
use crate::ByteSize;
use crate::device::DramConfig;
use crate::limits::BTREE_KEY_BYTES_MAX;
use crate::page::ExclusivePage;
use crate::sources::MemorySource;
use rand::prelude::*;

fn source(page: usize, pages: u64) -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(page as u64 * pages));
    cfg.frame_bytes = page;
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

fn get(t: &BTree<'_, MemorySource>, k: &[u8]) -> Option<Vec<u8>> {
    t.get(k, <[u8]>::to_vec).unwrap()
}

fn all(t: &BTree<'_, MemorySource>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    t.scan(b"", |k, val| {
        v.push((k.to_vec(), val.to_vec()));
        true
    })
    .unwrap();
    v
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:019}").into_bytes()
}

#[test]
fn operations_and_their_results() {
    let s = source(4096, 64);
    let t = BTree::create(&s).unwrap();
    assert!(t.insert(b"a", b"1").unwrap());
    assert!(!t.insert(b"a", b"2").unwrap(), "insert of a present key");
    assert_eq!(get(&t, b"a"), Some(b"1".to_vec()));
    assert!(t.update(b"a", b"22").unwrap());
    assert!(!t.update(b"b", b"x").unwrap(), "update of an absent key");
    assert_eq!(get(&t, b"b"), None);
    t.upsert(b"b", b"3").unwrap();
    t.upsert(b"a", b"").unwrap();
    assert_eq!(get(&t, b"a"), Some(vec![]));
    assert!(t.insert(b"", b"empty key").unwrap());
    assert_eq!(get(&t, b""), Some(b"empty key".to_vec()));
    assert!(t.update_in_place(b"", 6, b"KEY").unwrap());
    assert_eq!(get(&t, b""), Some(b"empty KEY".to_vec()));
    assert!(!t.update_in_place(b"zz", 0, b"").unwrap());
    let e = t.update_in_place(b"", 7, b"KEY").unwrap_err();
    assert!(matches!(e, BTreeError::OffsetOutOfRange { offset: 7, len: 3, value_len: 9 }), "{e}");
    assert!(t.delete(b"a").unwrap());
    assert!(!t.delete(b"a").unwrap());
    assert_eq!(all(&t), vec![(b"".to_vec(), b"empty KEY".to_vec()), (b"b".to_vec(), b"3".to_vec())]);
    t.check_invariants().unwrap();
}

#[test]
fn size_limits_are_typed_errors() {
    for page in [4096, 16384, 65536] {
        let s = source(page, 16);
        let t = BTree::create(&s).unwrap();
        let max = t.value_bytes_max();
        assert_eq!(max, value_bytes_max(page));
        let long_key = vec![7u8; BTREE_KEY_BYTES_MAX];
        assert!(t.insert(&long_key, &vec![1; max]).unwrap());
        for _ in 0..8 {
            // Several maximal entries: each needs a split.
            let k: Vec<u8> = (0..BTREE_KEY_BYTES_MAX).map(|_| rand::random()).collect();
            assert!(t.insert(&k, &vec![2; max]).unwrap());
        }
        let e = t.insert(&vec![0; BTREE_KEY_BYTES_MAX + 1], b"").unwrap_err();
        assert!(matches!(e, BTreeError::KeyTooLarge { len: 257, max: 256 }), "{e}");
        let e = t.upsert(b"k", &vec![0; max + 1]).unwrap_err();
        assert!(matches!(e, BTreeError::ValueTooLarge { page_size, .. } if page_size == page), "{e}");
        assert!(t.get(&vec![0; 300], |_| ()).is_err());
        assert_eq!(get(&t, &long_key).unwrap().len(), max);
        t.check_invariants().unwrap();
    }
}

#[test]
fn root_split_keeps_the_root_and_grows_the_tree() {
    let s = source(4096, 4096);
    let t = BTree::create(&s).unwrap();
    let root = t.root();
    let mut rng = SmallRng::seed_from_u64(1);
    let mut keys: Vec<u64> = (0..20_000).collect();
    keys.shuffle(&mut rng);
    for &i in &keys {
        assert!(t.insert(&key(i), &i.to_le_bytes()).unwrap());
    }
    assert_eq!(t.root(), root);
    let st = t.check_invariants().unwrap();
    assert!(st.height >= 3, "{st:?}");
    assert_eq!(st.entries, 20_000);
    assert!(st.leaf_fill_avg > 0.5 && st.leaf_fill_avg < 0.85, "random inserts fill {:.2}", st.leaf_fill_avg);
    for i in (0..20_000).step_by(97) {
        assert_eq!(get(&t, &key(i)), Some(i.to_le_bytes().to_vec()));
    }
    let reopened = BTree::open(&s, root).unwrap();
    assert_eq!(get(&reopened, &key(5)), Some(5u64.to_le_bytes().to_vec()));
}

#[test]
fn sequential_loads_fill_leaves() {
    let s = source(16384, 2048);
    let t = BTree::create(&s).unwrap();
    for i in 0..20_000u64 {
        assert!(t.insert(&key(i), &[0xab; 100]).unwrap());
    }
    // Every left node keeps all its entries; it is less than full only by what prefix
    // truncation saves once it has an upper fence (the rightmost leaf has no prefix):
    // here 18 of 133 bytes per entry.
    let st = t.check_invariants().unwrap();
    assert!(st.leaf_fill_avg > 0.84, "sequential inserts fill {:.3}", st.leaf_fill_avg);
    let s = source(16384, 4096);
    let t = BTree::create(&s).unwrap();
    for i in 0..20_000u64 {
        assert!(t.insert(&key(i), &[0xab; 1000]).unwrap());
    }
    let st = t.check_invariants().unwrap();
    // 15 entries of 1033 bytes fill 95% of a 16 KiB leaf; truncation frees 2% of it.
    assert!(st.leaf_fill_avg > 0.92, "sequential YCSB inserts fill {:.3}", st.leaf_fill_avg);
    // Descending inserts are not special-cased: middle splits.
    let s = source(16384, 2048);
    let t = BTree::create(&s).unwrap();
    for i in (0..20_000u64).rev() {
        assert!(t.insert(&key(i), &[0xab; 100]).unwrap());
    }
    let st = t.check_invariants().unwrap();
    assert!(st.leaf_fill_avg > 0.4, "descending inserts fill {:.3}", st.leaf_fill_avg);
}

#[test]
fn deletes_merge_and_free_pages() {
    let s = source(4096, 4096);
    let t = BTree::create(&s).unwrap();
    let mut rng = SmallRng::seed_from_u64(2);
    let mut keys: Vec<u64> = (0..10_000).collect();
    keys.shuffle(&mut rng);
    for &i in &keys {
        t.insert(&key(i), &[1; 40]).unwrap();
    }
    let full = t.check_invariants().unwrap();
    assert_eq!(s.pages_used(), 1 + full.pages());
    keys.shuffle(&mut rng);
    for (n, &i) in keys.iter().enumerate() {
        assert!(t.delete(&key(i)).unwrap());
        if n % 2500 == 0 {
            let st = t.check_invariants().unwrap();
            assert_eq!(st.entries, (keys.len() - n - 1) as u64);
            assert_eq!(s.pages_used(), 1 + st.pages(), "every page is in the tree or freed");
        }
        if n == keys.len() * 9 / 10 {
            let st = t.check_invariants().unwrap();
            assert!(st.pages() < full.pages() / 5, "after deleting 90%: {st:?} of {full:?}");
        }
    }
    let st = t.check_invariants().unwrap();
    assert_eq!((st.height, st.pages(), st.entries), (1, 1, 0), "back to a root leaf");
    assert_eq!(s.pages_used(), 2, "catalog and root");
    // And it grows again on the same root.
    for i in 0..5000 {
        t.insert(&key(i), &[2; 40]).unwrap();
    }
    assert_eq!(t.check_invariants().unwrap().entries, 5000);
}

#[test]
fn updates_that_grow_values_split_leaves() {
    let s = source(4096, 1024);
    let t = BTree::create(&s).unwrap();
    for i in 0..2000 {
        t.insert(&key(i), b"").unwrap();
    }
    let max = t.value_bytes_max();
    for i in (0..2000).step_by(3) {
        assert!(t.update(&key(i), &vec![i as u8; max]).unwrap());
    }
    t.check_invariants().unwrap();
    for i in 0..2000 {
        let expect = if i % 3 == 0 { vec![i as u8; max] } else { vec![] };
        assert_eq!(get(&t, &key(i)), Some(expect));
    }
}

#[test]
fn scans_and_cursors() {
    let s = source(4096, 1024);
    let t = BTree::create(&s).unwrap();
    for i in 0..3000 {
        t.insert(&key(i * 2), &i.to_le_bytes()).unwrap();
    }
    // From a key that is absent: the next one.
    let mut seen = Vec::new();
    t.scan(&key(1001), |k, _| {
        seen.push(k.to_vec());
        seen.len() < 10
    })
    .unwrap();
    assert_eq!(seen, (501..511).map(|i| key(i * 2)).collect::<Vec<_>>());
    // The cursor crosses leaves and ends.
    let mut c = t.range(&key(5000));
    let mut n = 0;
    let mut prev = Vec::new();
    while let Some((k, v)) = c.next().unwrap() {
        assert!(k > prev.as_slice());
        assert_eq!(v.len(), 8);
        prev = k.to_vec();
        n += 1;
    }
    assert_eq!(n, 500);
    assert!(c.next().unwrap().is_none());
    // It holds no latch between calls: writing to the tree while iterating is fine.
    let mut c = t.range(b"");
    let mut n = 0;
    while let Some((k, _)) = c.next().unwrap() {
        let k = k.to_vec();
        if n % 2 == 0 {
            t.delete(&k).unwrap();
        }
        n += 1;
    }
    assert_eq!(n, 3000);
    assert_eq!(t.check_invariants().unwrap().entries, 1500);
    let mut empty = t.range(&[0xff]);
    assert!(empty.next().unwrap().is_none());
}

#[test]
fn open_checks_the_root() {
    let s = source(4096, 256);
    let zero = {
        let p = s.allocate().unwrap();
        p.page_id()
    };
    let e = BTree::open(&s, zero).unwrap_err();
    assert!(matches!(e, BTreeError::NotATree { .. }), "{e}");
    let t = BTree::create(&s).unwrap();
    for i in 0..2000 {
        t.insert(&key(i), &[0; 20]).unwrap();
    }
    // A leaf is a node but not a root.
    let (leaf, _) = t.descend_shared(&key(1000)).map(|(p, g)| (p, drop(g))).unwrap();
    let e = BTree::open(&s, leaf).unwrap_err();
    assert!(e.to_string().contains("not a root"), "{e}");
    assert!(BTree::open(&s, PageId(9999)).is_err());
}

#[test]
fn a_full_source_fails_cleanly() {
    let s = source(4096, 40);
    let t = BTree::create(&s).unwrap();
    let mut inserted = 0;
    let err = loop {
        match t.insert(&key(inserted), &[3; 200]) {
            Ok(true) => inserted += 1,
            Ok(false) => unreachable!(),
            Err(e) => break e,
        }
    };
    assert!(err.to_string().contains("does not fit in DRAM"), "{err}");
    let st = t.check_invariants().unwrap();
    assert_eq!(st.entries, inserted);
    for i in 0..inserted {
        assert!(get(&t, &key(i)).is_some());
    }
    // Deleting makes room again.
    for i in 0..inserted / 2 {
        t.delete(&key(i)).unwrap();
    }
    t.insert(&key(inserted), &[3; 200]).unwrap();
    t.check_invariants().unwrap();
}

#[test]
fn destroy_frees_every_page() {
    let s = source(4096, 1024);
    let t = BTree::create(&s).unwrap();
    for i in 0..5000 {
        t.insert(&key(i), &[0; 30]).unwrap();
    }
    assert!(s.pages_used() > 50);
    t.destroy().unwrap();
    assert_eq!(s.pages_used(), 1);
}

#[test]
fn threads_share_a_tree() {
    let s = source(4096, 4096);
    let t = BTree::create(&s).unwrap();
    std::thread::scope(|sc| {
        for th in 0..2u64 {
            let t = &t;
            sc.spawn(move || {
                for i in 0..5000u64 {
                    t.insert(&key(i * 2 + th), &th.to_le_bytes()).unwrap();
                    if i % 3 == 0 {
                        t.delete(&key((i / 2) * 2 + th)).unwrap();
                    }
                }
            });
        }
        sc.spawn(|| {
            for _ in 0..50 {
                let mut prev = Vec::new();
                t.scan(b"", |k, _| {
                    assert!(k > prev.as_slice());
                    prev = k.to_vec();
                    true
                })
                .unwrap();
            }
        });
    });
    let st = t.check_invariants().unwrap();
    assert!(st.entries > 0);
}
