//! Tests of the node format: insert, search, remove and compaction; prefix truncation
//! and heads; separators; splits and merges; cache lines read per lookup; random
//! operations checked against a model.

use proptest::prelude::*;
use rand::prelude::*;

use super::format::*;
use super::header::*;
use super::split::{SplitPlan, merged_bytes};
use super::*;
use crate::btree::error::BTreeError;
use crate::ids::PageId;
use crate::limits::BTREE_KEY_BYTES_MAX;

const P: PageId = PageId(7);

fn leaf(page: usize, lower: &[u8], upper: Option<&[u8]>) -> Vec<u8> {
    let mut b = vec![0u8; page];
    Builder::new(&mut b, P, Kind::Leaf, 0, lower, upper, 0).unwrap();
    b
}

fn insert(b: &mut [u8], key: &[u8], value: &[u8]) -> bool {
    let n = NodeRef::parse(b, P).unwrap();
    let (pos, found) = n.lower_bound(key).unwrap();
    assert!(!found);
    NodeMut::new(b, P).unwrap().insert(pos, key, value).unwrap()
}

fn get<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let n = NodeRef::parse(b, P).unwrap();
    match n.lower_bound(key).unwrap() {
        (pos, true) => Some(n.value(pos).unwrap()),
        _ => None,
    }
}

fn keys(b: &[u8]) -> Vec<Vec<u8>> {
    let n = NodeRef::parse(b, P).unwrap();
    (0..n.count()).map(|i| n.full_key(i).unwrap()).collect()
}

/// Space accounting and order, as `check_invariants` checks them for whole trees.
fn check(b: &[u8]) {
    let n = NodeRef::parse(b, P).unwrap();
    let mut heap = n.fence_bytes() + n.garbage();
    for i in 0..n.count() {
        heap += n.entry_bytes(i).unwrap() - SLOT_BYTES;
        assert_eq!(n.head(i), head_of(n.suffix(i).unwrap()));
    }
    assert_eq!(heap, b.len() - n.heap_start());
    let ks = keys(b);
    assert!(ks.windows(2).all(|w| w[0] < w[1]), "order");
    let lower = n.lower_fence();
    assert!(ks.iter().all(|k| k.as_slice() >= lower && n.upper_fence().is_none_or(|u| k.as_slice() < u)));
}

#[test]
fn value_limits_per_page_size() {
    assert_eq!(value_bytes_max(4096), 614);
    assert_eq!(value_bytes_max(16384), 3686);
    assert_eq!(value_bytes_max(65536), 15974);
    for page in [4096, 8192, 16384, 32768, 65536] {
        // Four maximal entries fit next to two maximal fences: a split of a full
        // node always leaves room for the entry that did not fit.
        assert!(HEADER_BYTES + 2 * BTREE_KEY_BYTES_MAX + 4 * leaf_entry_bytes_max(page) <= page);
    }
}

#[test]
fn insert_search_remove_compact() {
    let mut b = leaf(4096, b"", None);
    for i in (0..100u32).rev() {
        assert!(insert(&mut b, format!("key{i:05}").as_bytes(), &i.to_le_bytes()));
    }
    check(&b);
    for i in 0..100u32 {
        assert_eq!(get(&b, format!("key{i:05}").as_bytes()), Some(&i.to_le_bytes()[..]));
    }
    assert_eq!(get(&b, b"key"), None);
    assert_eq!(get(&b, b"key000000"), None);
    let free_before = NodeRef::parse(&b, P).unwrap().free_total();
    for i in (0..100).step_by(2) {
        let n = NodeRef::parse(&b, P).unwrap();
        let (pos, found) = n.lower_bound(format!("key{i:05}").as_bytes()).unwrap();
        assert!(found);
        NodeMut::new(&mut b, P).unwrap().remove(pos).unwrap();
    }
    check(&b);
    let n = NodeRef::parse(&b, P).unwrap();
    assert!(n.free_total() > free_before);
    let garbage = n.garbage();
    assert!(garbage > 0);
    NodeMut::new(&mut b, P).unwrap().compact().unwrap();
    let n = NodeRef::parse(&b, P).unwrap();
    assert_eq!(n.garbage(), 0);
    assert_eq!(n.count(), 50);
    check(&b);
    assert_eq!(get(&b, b"key00001"), Some(&1u32.to_le_bytes()[..]));
}

#[test]
fn a_full_node_compacts_to_take_an_entry() {
    let mut b = leaf(4096, b"", None);
    let mut i = 0u32;
    while insert(&mut b, format!("k{i:04}").as_bytes(), &[1; 100]) {
        i += 1;
    }
    // Free space is fragmented: remove every other entry, then one large entry
    // fits only after compaction.
    let n = NodeRef::parse(&b, P).unwrap();
    assert!(n.free_total() < 200);
    for j in (0..i).step_by(2) {
        let n = NodeRef::parse(&b, P).unwrap();
        let (pos, _) = n.lower_bound(format!("k{j:04}").as_bytes()).unwrap();
        NodeMut::new(&mut b, P).unwrap().remove(pos).unwrap();
    }
    let n = NodeRef::parse(&b, P).unwrap();
    assert!(n.free_contiguous() < 600 && n.free_total() > 600);
    assert!(insert(&mut b, b"k9999", &[2; 590]));
    check(&b);
    assert_eq!(get(&b, b"k9999").unwrap().len(), 590);
}

#[test]
fn set_value_shrinks_grows_and_refuses() {
    let mut b = leaf(4096, b"", None);
    assert!(insert(&mut b, b"a", &[1; 10]));
    assert!(insert(&mut b, b"b", &[2; 10]));
    let set = |b: &mut Vec<u8>, k: &[u8], v: &[u8]| {
        let (pos, found) = NodeRef::parse(b, P).unwrap().lower_bound(k).unwrap();
        assert!(found);
        NodeMut::new(b, P).unwrap().set_value(pos, v).unwrap()
    };
    assert!(set(&mut b, b"a", &[3; 4]));
    assert_eq!(get(&b, b"a"), Some(&[3u8; 4][..]));
    assert!(set(&mut b, b"a", &[4; 600]));
    assert_eq!(get(&b, b"a"), Some(&[4u8; 600][..]));
    check(&b);
    // Fill with garbage so that growing needs remove + compact + insert.
    for _ in 0..5 {
        assert!(set(&mut b, b"b", &[5; 500]));
        assert!(set(&mut b, b"b", &[6; 10]));
    }
    assert!(set(&mut b, b"b", &[7; 3000]));
    check(&b);
    assert_eq!(get(&b, b"b"), Some(&[7u8; 3000][..]));
    assert!(!set(&mut b, b"a", &[8; 4000]), "does not fit");
    assert_eq!(get(&b, b"a"), Some(&[4u8; 600][..]), "unchanged after a refusal");
    let (pos, _) = NodeRef::parse(&b, P).unwrap().lower_bound(b"a").unwrap();
    let mut m = NodeMut::new(&mut b, P).unwrap();
    m.write_value(pos, 598, &[9, 9]).unwrap();
    assert!(matches!(m.write_value(pos, 599, &[9, 9]), Err(BTreeError::OffsetOutOfRange { value_len: 600, .. })));
    assert!(matches!(m.write_value(pos, usize::MAX, &[9]), Err(BTreeError::OffsetOutOfRange { .. })));
    assert_eq!(&get(&b, b"a").unwrap()[597..], &[4, 9, 9]);
}

#[test]
fn prefix_truncation_and_heads() {
    let mut b = leaf(4096, b"user1000", Some(b"user1999"));
    let n = NodeRef::parse(&b, P).unwrap();
    assert_eq!((n.prefix_len(), n.prefix()), (5, &b"user1"[..]));
    for k in ["user1500", "user1000", "user1", "user10", "user1\0", "user1\0\0", "user15001"] {
        if k >= "user1000" {
            assert!(insert(&mut b, k.as_bytes(), k.as_bytes()), "{k}");
        }
    }
    check(&b);
    let n = NodeRef::parse(&b, P).unwrap();
    // Stored without the prefix; heads are the next four bytes, big endian.
    let (pos, found) = n.lower_bound(b"user1500").unwrap();
    assert!(found);
    assert_eq!(n.suffix(pos).unwrap(), b"500");
    assert_eq!(n.head(pos), u32::from_be_bytes(*b"500\0"));
    assert_eq!(get(&b, b"user15001"), Some(&b"user15001"[..]));
    assert_eq!(get(&b, b"user150"), None);
    assert!(matches!(NodeMut::new(&mut b, P).unwrap().insert(0, b"uxer1", b""), Err(BTreeError::Corrupted { .. })));
    // Keys that fit a head and differ only in trailing zero bytes are ordered by length.
    let mut z = leaf(4096, b"", None);
    for k in [&b"a\0\0"[..], b"a", b"a\0", b"a\0\0\0", b"a\0\0\0\0", b""] {
        assert!(insert(&mut z, k, k));
    }
    check(&z);
    for k in [&b"a\0\0"[..], b"a", b"a\0", b"a\0\0\0", b"a\0\0\0\0", b""] {
        assert_eq!(get(&z, k), Some(k));
    }
    assert_eq!(keys(&z)[..3], [b"".to_vec(), b"a".to_vec(), b"a\0".to_vec()]);
}

#[test]
fn shortest_separators() {
    assert_eq!(shortest_separator(b"user123", b"user124", P).unwrap(), b"user124");
    assert_eq!(shortest_separator(b"user1299", b"user13", P).unwrap(), b"user13");
    assert_eq!(shortest_separator(b"abc", b"abd000", P).unwrap(), b"abd");
    assert_eq!(shortest_separator(b"ab", b"abc", P).unwrap(), b"abc");
    assert_eq!(shortest_separator(b"", b"x", P).unwrap(), b"x");
    assert!(shortest_separator(b"b", b"a", P).is_err());
    assert!(shortest_separator(b"ab", b"ab", P).is_err());
}

fn split(b: &[u8], key: &[u8]) -> (Vec<u8>, Vec<u8>, SplitPlan) {
    let n = NodeRef::parse(b, P).unwrap();
    let plan = plan_split(&n, key).unwrap();
    let (mut l, mut r) = (vec![0u8; b.len()], vec![0u8; b.len()]);
    split_into(&n, &plan, &mut l, P, &mut r, PageId(8)).unwrap();
    (l, r, plan)
}

#[test]
fn split_middle_and_sequential() {
    let mut b = leaf(4096, b"", None);
    let mut i = 0u32;
    while insert(&mut b, format!("user{:08}", i * 2).as_bytes(), &[0; 50]) {
        i += 1;
    }
    // Middle split: halves by bytes, separator between the neighbours.
    let (l, r, plan) = split(&b, b"user00000011");
    check(&l);
    check(&r);
    let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
    assert_eq!(ln.count() + rn.count(), i as usize);
    assert!(ln.count().abs_diff(rn.count()) <= 1);
    assert_eq!(ln.upper_fence(), Some(&plan.sep[..]));
    assert_eq!(rn.lower_fence(), &plan.sep[..]);
    assert_eq!((ln.link(), rn.link()), (8, 0));
    assert!(keys(&l).last().unwrap() < &plan.sep && plan.sep <= keys(&r)[0]);
    assert!(plan.sep.len() <= 12, "the separator is cut after the first differing digit");
    assert_eq!(ln.prefix(), b"", "leftmost");
    // Sequential: the last key of the rightmost leaf; the left half stays full.
    let next = format!("user{:08}", i * 2).into_bytes();
    let (l, r, plan) = split(&b, &next);
    check(&l);
    check(&r);
    let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
    assert!(ln.count() + 1 >= i as usize, "left keeps {} of {i}", ln.count());
    assert!(rn.count() <= 1);
    assert!(keys(&l).last().unwrap() < &plan.sep && plan.sep <= next);
    // An append to a leaf that is not rightmost (its own key range, in the middle of
    // the tree) keeps the left half full too; an insert before its last key splits
    // in the middle.
    let mut nb = leaf(4096, b"user", Some(b"user9"));
    for k in keys(&b) {
        if !insert(&mut nb, &k, &[0; 50]) {
            break;
        }
    }
    let m = NodeRef::parse(&nb, P).unwrap().count();
    let (l, r, plan) = split(&nb, b"user5");
    check(&l);
    check(&r);
    let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
    assert!(ln.count() + 1 >= m && rn.count() <= 1, "left keeps {} of {m}", ln.count());
    assert_eq!(rn.upper_fence(), Some(&b"user9"[..]));
    assert!(plan.sep.as_slice() <= b"user5".as_slice());
    let (l, _, _) = split(&nb, b"user00000011");
    assert!(NodeRef::parse(&l, P).unwrap().count() < m * 2 / 3);
    // At the boundary of two key groups (the key shares 2+ more bytes with its left
    // neighbour than with its right one) the split goes at the boundary.
    let mut g = leaf(4096, b"", None);
    let mut k = 0u32;
    loop {
        let (w, o) = if k % 4 == 3 { (2u16, k) } else { (1u16, k) };
        let mut key = w.to_be_bytes().to_vec();
        key.extend_from_slice(&o.to_be_bytes());
        if !insert(&mut g, &key, &[0; 50]) {
            break;
        }
        k += 1;
    }
    let gn = NodeRef::parse(&g, P).unwrap().count();
    let ones = keys(&g).iter().filter(|k| k[..2] == [0, 1]).count();
    let mut key = 1u16.to_be_bytes().to_vec();
    key.extend_from_slice(&(k + 1).to_be_bytes());
    let (l, r, plan) = split(&g, &key);
    check(&l);
    check(&r);
    let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
    assert_eq!(ln.count() + rn.count(), gn);
    assert!(ln.count() == ones || ln.count() + 1 == ones, "{} of {ones}", ln.count());
    assert!(keys(&r).iter().all(|k| k[..2] == [0, 2] || k.as_slice() >= plan.sep.as_slice()));
}

/// A boundary split whose key goes right makes the left half's upper fence the
/// separator after its last key: with keys of one group sharing a long prefix it is
/// long, and the left half (nearly all of a full node) must still fit under it.
/// Found by the bulk-load property test: the left half overflowed and the insert
/// failed as `Corrupted`. Every fill from a few bytes to one entry short of full.
#[test]
fn boundary_splits_fit_both_halves_under_a_long_separator() {
    let group = |i: u16| {
        let mut k = vec![1u8];
        k.extend_from_slice(&[b'p'; 240]);
        k.extend_from_slice(&i.to_be_bytes());
        k
    };
    let mut worst = usize::MAX;
    for pad in 0..=40usize {
        // Short fences; the next group's first key at the end.
        let mut b = leaf(4096, b"\x01", Some(b"\x02"));
        assert!(insert(&mut b, b"\x01q", b""));
        let mut i = 0u16;
        while insert(&mut b, &group(i), &vec![7; 300]) {
            i += 1;
        }
        while insert(&mut b, &group(i), &vec![7; pad]) {
            i += 1;
        }
        let n = NodeRef::parse(&b, P).unwrap();
        worst = worst.min(n.free_total());
        let (l, r, plan) = split(&b, &group(i));
        check(&l);
        check(&r);
        let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
        assert_eq!(ln.count() + rn.count(), n.count(), "pad {pad}");
        assert!(keys(&l).last().unwrap() < &plan.sep && plan.sep <= keys(&r)[0], "pad {pad}");
        // The half that takes the key has room for it.
        let half = if group(i) < plan.sep { ln } else { rn };
        assert!(half.free_total() >= half.entry_bytes_for(&group(i), pad), "pad {pad}");
    }
    assert!(worst < 243, "no fill left less room than the long separator needs: {worst}");
}

#[test]
fn inner_split_and_merge_round_trip() {
    let mut b = vec![0u8; 4096];
    Builder::new(&mut b, P, Kind::Inner, 1, b"a", Some(b"b"), 1000).unwrap();
    let mut i = 0u32;
    while NodeMut::new(&mut b, P)
        .unwrap()
        .insert(i as usize, format!("a{i:06}").as_bytes(), &(i as u64 + 1).to_le_bytes())
        .unwrap()
    {
        i += 1;
    }
    let before = keys(&b);
    let (l, r, plan) = split(&b, b"a000005");
    check(&l);
    check(&r);
    let (ln, rn) = (NodeRef::parse(&l, P).unwrap(), NodeRef::parse(&r, P).unwrap());
    assert_eq!(ln.count() + rn.count() + 1, i as usize, "the middle separator moved up");
    assert_eq!(ln.link(), plan.at as u64 + 1, "its child became the left's rightmost");
    assert_eq!(rn.link(), 1000);
    let mut m = vec![0u8; 4096];
    merge_into(&ln, &plan.sep, &rn, &mut m, P).unwrap();
    check(&m);
    assert_eq!(keys(&m), before);
    let mn = NodeRef::parse(&m, P).unwrap();
    assert_eq!((mn.link(), mn.prefix()), (1000, &b""[..]));
    for j in 0..i as usize {
        assert_eq!(mn.child(j).unwrap(), PageId(j as u64 + 1));
    }
    assert_eq!(merged_bytes(&ln, &plan.sep, &rn), 4096 - NodeRef::parse(&b, P).unwrap().free_total());
}

#[test]
fn merge_recomputes_the_prefix() {
    let mut a = leaf(4096, b"user10", Some(b"user15"));
    let mut c = leaf(4096, b"user15", Some(b"user2"));
    assert!(insert(&mut a, b"user11", b"x"));
    assert!(insert(&mut c, b"user17", b"y"));
    assert!(insert(&mut c, b"user19", b"z"));
    let (an, cn) = (NodeRef::parse(&a, P).unwrap(), NodeRef::parse(&c, P).unwrap());
    assert_eq!((an.prefix_len(), cn.prefix_len()), (5, 4));
    assert!(merge_fits(&an, b"user15", &cn));
    let mut m = vec![0u8; 4096];
    merge_into(&an, b"user15", &cn, &mut m, P).unwrap();
    check(&m);
    let mn = NodeRef::parse(&m, P).unwrap();
    assert_eq!(mn.prefix(), b"user");
    assert_eq!(merged_bytes(&an, b"", &cn), HEADER_BYTES + mn.payload_bytes() + mn.fence_bytes());
    assert_eq!(keys(&m), [b"user11".to_vec(), b"user17".to_vec(), b"user19".to_vec()]);
}

/// Builds a full 16 KiB leaf of sorted keys with the fences a leaf in the middle of a
/// tree has (its neighbours' keys), then counts the distinct cache lines each point
/// lookup reads: search, then the value. Returns (max, mean) of both.
fn lookup_lines(keys: &[Vec<u8>], value_len: usize) -> ((usize, f64), (usize, f64), usize, usize) {
    let (lower, upper) = (&keys[0], &keys[keys.len() - 1]);
    let mut b = leaf(16384, lower, Some(upper));
    let mut stored = Vec::new();
    for k in &keys[1..keys.len() - 1] {
        if !insert(&mut b, k, &vec![0xab; value_len]) {
            break;
        }
        stored.push(k.clone());
    }
    check(&b);
    let prefix_len = NodeRef::parse(&b, P).unwrap().prefix_len();
    let (mut search_max, mut search_sum, mut all_max, mut all_sum) = (0, 0, 0, 0);
    for k in &stored {
        lines::start();
        let n = NodeRef::parse(&b, P).unwrap();
        let (pos, found) = n.lower_bound(k).unwrap();
        assert!(found);
        let v = n.value(pos).unwrap();
        let search = lines::stop();
        // The value's own lines, as the caller's closure reads them.
        let start = v.as_ptr() as usize - b.as_ptr() as usize;
        let mut all = search.clone();
        all.extend(start / 64..=(start + v.len().max(1) - 1) / 64);
        all.sort_unstable();
        all.dedup();
        search_max = search_max.max(search.len());
        search_sum += search.len();
        all_max = all_max.max(all.len());
        all_sum += all.len();
    }
    let m = stored.len() as f64;
    ((search_max, search_sum as f64 / m), (all_max, all_sum as f64 / m), stored.len(), prefix_len)
}

#[test]
fn point_lookup_cache_lines() {
    let mut rng = SmallRng::seed_from_u64(7);
    let report = |what: &str, keys: &[Vec<u8>], value_len: usize| {
        let (search, all, entries, plen) = lookup_lines(keys, value_len);
        eprintln!(
            "{what}: {entries} entries, prefix {plen} B: search lines max {} mean {:.2}; \
             with the value max {} mean {:.2}",
            search.0, search.1, all.0, all.1
        );
        (search, all, entries)
    };
    // YCSB: "user" + 19 digits, 1000-byte values. A leaf of a table of about 10^7 keys
    // covers 10^12..10^13 of the key space, so its fences share the first digits.
    let base = rng.random_range(0..9 * 10u64.pow(18));
    let mut ycsb: Vec<Vec<u8>> =
        (0..40).map(|_| format!("user{:019}", base + rng.random_range(0..10u64.pow(13))).into_bytes()).collect();
    ycsb.sort();
    ycsb.dedup();
    let (search, all, entries) = report("YCSB 16 KiB leaf", &ycsb, 1000);
    assert!(entries >= 15);
    // Header, two lines of slots, and a key read on the final tie that may straddle a line.
    assert!(search.0 <= 5, "search read {} lines", search.0);
    assert!(all.0 <= 3 + 1000 / 64 + 2, "lookup read {} lines", all.0);
    // 8-byte big-endian keys and 8-byte values: random keys of a table of about 10^8
    // (a leaf covers about 2^47 of the space), and dense keys.
    let base = rng.random::<u64>() & !((1u64 << 47) - 1);
    let mut ints: Vec<Vec<u8>> =
        (0..2000).map(|_| (base + rng.random_range(0..1u64 << 47)).to_be_bytes().to_vec()).collect();
    ints.sort();
    ints.dedup();
    let (search, all, entries) = report("8-byte random keys, 16 KiB leaf", &ints, 8);
    assert!(entries >= 600);
    assert!(search.0 <= 11, "search read {} lines", search.0);
    assert!(all.0 <= 12, "lookup read {} lines", all.0);
    let dense: Vec<Vec<u8>> = (0..2000u64).map(|i| (base + i).to_be_bytes().to_vec()).collect();
    let (search, all, _) = report("8-byte dense keys, 16 KiB leaf", &dense, 8);
    assert!(search.0 <= 11, "search read {} lines", search.0);
    assert!(all.0 <= 12, "lookup read {} lines", all.0);
}

#[test]
fn random_operations_against_a_model() {
    let mut rng = SmallRng::seed_from_u64(3);
    for page in [4096, 16384, 65536] {
        let mut b = leaf(page, b"k", Some(b"l"));
        let mut model = std::collections::BTreeMap::new();
        for _ in 0..20_000 {
            let key: Vec<u8> =
                [b"k".to_vec(), (0..rng.random_range(0..6)).map(|_| rng.random_range(0..3u8)).collect()].concat();
            let n = NodeRef::parse(&b, P).unwrap();
            let (pos, found) = n.lower_bound(&key).unwrap();
            assert_eq!(found, model.contains_key(&key));
            let value = vec![rng.random::<u8>(); rng.random_range(0..300)];
            match (rng.random_range(0..3), found) {
                (0, false) if NodeMut::new(&mut b, P).unwrap().insert(pos, &key, &value).unwrap() => {
                    model.insert(key, value);
                }
                (1, true) if NodeMut::new(&mut b, P).unwrap().set_value(pos, &value).unwrap() => {
                    model.insert(key, value);
                }
                (2, true) => {
                    NodeMut::new(&mut b, P).unwrap().remove(pos).unwrap();
                    model.remove(&key);
                }
                _ => {}
            }
        }
        check(&b);
        let n = NodeRef::parse(&b, P).unwrap();
        assert_eq!(n.count(), model.len());
        for (i, (k, v)) in model.iter().enumerate() {
            assert_eq!(n.full_key(i).unwrap(), *k);
            assert_eq!(n.value(i).unwrap(), &v[..]);
        }
    }
}

proptest! {
    /// The header check computed in one go accepts exactly the headers the checks made
    /// one by one accept, and fails with the same error: valid headers with one or two
    /// bytes changed (half of the cases unchanged), on pages of valid and invalid sizes.
    #[test]
    fn header_checks_agree(
        inner in any::<bool>(),
        upper in prop_oneof![Just(None), Just(Some(b"key-m".to_vec())), Just(Some(b"k".to_vec()))],
        changes in proptest::collection::vec((0usize..HEADER_BYTES, any::<u8>()), 0..3),
        changed in any::<bool>(),
        len in prop_oneof![Just(4096usize), Just(4097usize), Just(64usize)],
    ) {
        let mut b = vec![0u8; 4096];
        let (kind, level, link) = if inner { (Kind::Inner, 1, 9) } else { (Kind::Leaf, 0, 0) };
        Builder::new(&mut b, P, kind, level, b"key-a", upper.as_deref(), link).unwrap();
        if changed {
            for (at, v) in changes {
                b[at] = v;
            }
        }
        let one_by_one = Header::check_one_by_one(&b[..HEADER_BYTES], len, P);
        let at_once = Header::parse(&b[..HEADER_BYTES], len, P);
        match (at_once, one_by_one) {
            (Ok(_), Ok(())) => {}
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "at once {:?}, one by one {:?}", a, b),
        }
    }
}

proptest! {
    /// Decoding arbitrary bytes never panics, whether or not the header is plausible.
    #[test]
    fn decoding_is_total(
        mut bytes in proptest::collection::vec(any::<u8>(), 4096),
        magic in any::<bool>(),
        kind in 0u8..3,
        count in 0u16..600,
        key in proptest::collection::vec(any::<u8>(), 0..10),
    ) {
        if magic {
            bytes[..4].copy_from_slice(&NODE_MAGIC);
            bytes[OFF_KIND] = kind;
            bytes[OFF_LEVEL] = kind.saturating_sub(1);
            bytes[OFF_FLAGS] &= 1;
            bytes[OFF_COUNT..OFF_COUNT + 2].copy_from_slice(&count.to_le_bytes());
            bytes[OFF_HEAP_START..OFF_HEAP_START + 4].copy_from_slice(&(4096u32 - 100).to_le_bytes());
        }
        if let Ok(n) = NodeRef::parse(&bytes, P) {
            let _ = n.lower_bound(&key);
            let _ = n.lower_fence();
            let _ = n.upper_fence();
            let _ = n.payload_bytes();
            for i in 0..n.count() {
                let _ = n.entry(i);
                if !n.is_leaf() {
                    let _ = n.child(i);
                }
            }
            if !n.is_leaf() {
                let _ = n.child_for(&key);
            }
        }
    }
}
