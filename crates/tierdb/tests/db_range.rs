//! Range iterators, `delete_range` and `drop_tree` end to end: ranges of every bound
//! kind forward, in reverse and from both ends at once against a `BTreeMap`, on trees
//! of several levels; a transaction's range with its own changes; dropping a tree
//! across a clean close and across crashes at each write of the drop, after which the
//! tree is whole or gone and its pages are reused.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::btree::BTreeError;
use tierdb::catalog::Catalog;
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbError};
use tierdb::device::FaultPlan;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A scratch directory named after the test and the process, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("tierdb-db-range-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// 4 KiB pages, 1 MiB of DRAM (trees of a few thousand keys are evicted in part), no
/// background checkpoints.
fn config(dir: &Path, plan: Option<&Arc<FaultPlan>>) -> DbConfig {
    let mut c = DbConfig::new(dir.join("db"));
    c.buffer.page_size = 4096;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(256 * 4096));
    let mut ssd = tierdb::device::SsdConfig::new(dir.join("db").join("data.db"));
    ssd.page_size = 4096;
    ssd.faults = plan.cloned();
    c.buffer.ssd = Some(ssd);
    c.wal.file.faults = plan.cloned();
    c.checkpoint = CheckpointConfig::OFF;
    c
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Keys `0, 2, 4, …` below `2 * n` with values of 150 to 250 bytes, in one
/// transaction: a tree of three levels for a few thousand keys.
fn fill(db: &Db, tree: &str, n: u64, seed: u64) -> Model {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = Model::new();
    let mut t = db.begin();
    for i in 0..n {
        let v = vec![rng.random::<u8>(); rng.random_range(150..250)];
        t.put(tree, &key(i * 2), &v).unwrap();
        m.insert(key(i * 2), v);
    }
    t.commit().unwrap();
    m
}

fn height(db: &Db, tree: &str) -> usize {
    Catalog::open_tree(db.store(), tree).unwrap().check_invariants().unwrap().height
}

fn contents(db: &Db, tree: &str) -> Model {
    db.range(tree, ..).unwrap().map(Result::unwrap).collect()
}

/// What std's `BTreeMap::range` holds for the bounds, or nothing where it would panic.
fn expect(m: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let empty = match (lo, hi) {
        (Included(a), Included(b)) => a > b,
        (Included(a) | Excluded(a), Excluded(b)) | (Excluded(a), Included(b)) => a >= b,
        _ => false,
    };
    if empty { Vec::new() } else { m.range::<[u8], _>((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect() }
}

#[test]
fn ranges_of_every_kind_match_a_btreemap() {
    let s = Scratch::new("kinds");
    let db = Db::open(&config(&s.0, None)).unwrap();
    db.create_tree("t").unwrap();
    let m = fill(&db, "t", 4000, 1);
    assert!(height(&db, "t") >= 3, "a tree of {} levels", height(&db, "t"));
    // Each syntax compiles without annotations and means what std says.
    let (a, c) = (key(1001), key(5000));
    let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let got = |r: tierdb::db::DbRange<'_>| r.map(Result::unwrap).collect::<Vec<_>>();
    assert!(got(db.range("t", ..).unwrap()) == all);
    let (sa, sc) = (a.as_slice(), c.as_slice());
    assert!(got(db.range("t", sa..sc).unwrap()) == expect(&m, Included(sa), Excluded(sc)));
    assert!(got(db.range("t", sa..=sc).unwrap()) == expect(&m, Included(sa), Included(sc)));
    assert!(got(db.range("t", sa..).unwrap()) == expect(&m, Included(sa), Unbounded));
    assert!(got(db.range("t", ..sc).unwrap()) == expect(&m, Unbounded, Excluded(sc)));
    assert!(got(db.range("t", ..=sc).unwrap()) == expect(&m, Unbounded, Included(sc)));
    assert!(got(db.range("t", (Excluded(sa), Included(sc))).unwrap()) == expect(&m, Excluded(sa), Included(sc)));
    assert!(got(db.range("t", a.clone()..c.clone()).unwrap()) == expect(&m, Included(sa), Excluded(sc)));
    assert_eq!(db.range("t", b"key000010".as_slice()..=b"key000014".as_slice()).unwrap().count(), 3);
    // Random bounds of every kind, each read forward, in reverse and from both ends.
    let mut rng = StdRng::seed_from_u64(7);
    let bound = |rng: &mut StdRng| {
        let k = key(rng.random_range(0..8100));
        match rng.random_range(0..3) {
            0 => Unbounded,
            1 => Included(k),
            _ => Excluded(k),
        }
    };
    let mut cases = 0;
    while cases < 60 {
        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
        let (lo, hi) = (lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice));
        let want = expect(&m, lo, hi);
        match db.range("t", (lo, hi)) {
            Err(e) => {
                // Start after end, or both excluding one key: a typed error.
                assert!(matches!(e, tierdb::Error::Db(DbError::BadRange { .. })), "{e}");
                assert!(want.is_empty());
                continue;
            }
            Ok(r) => assert!(got(r) == want, "forward {lo:?}..{hi:?}"),
        }
        let rev: Vec<_> = db.range("t", (lo, hi)).unwrap().rev().map(Result::unwrap).collect();
        assert!(rev.iter().rev().eq(want.iter()), "reverse {lo:?}..{hi:?}");
        // From both ends at random: the two halves meet without overlap.
        let mut r = db.range("t", (lo, hi)).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let e = if rng.random_bool(0.5) { r.next().map(|e| (true, e)) } else { r.next_back().map(|e| (false, e)) };
            match e {
                Some((true, e)) => front.push(e.unwrap()),
                Some((false, e)) => back.push(e.unwrap()),
                None => break,
            }
        }
        assert!(r.next().is_none() && r.next_back().is_none(), "the ends met: nothing more");
        front.extend(back.into_iter().rev());
        assert_eq!(front.len(), want.len(), "mixed {lo:?}..{hi:?}");
        assert!(front == want, "mixed {lo:?}..{hi:?}");
        cases += 1;
    }
    db.close().unwrap();
}

#[test]
fn a_transaction_s_range_sees_its_own_changes() {
    let s = Scratch::new("txn");
    let db = Db::open(&config(&s.0, None)).unwrap();
    db.create_tree("t").unwrap();
    let mut m = fill(&db, "t", 2000, 2);
    let before = m.clone();
    let mut t = db.begin();
    for i in (0..4000).step_by(7) {
        if i % 2 == 0 {
            assert!(t.delete("t", &key(i)).unwrap());
            m.remove(&key(i));
        } else {
            t.put("t", &key(i), b"new").unwrap();
            m.insert(key(i), b"new".to_vec());
        }
    }
    let (lo, hi) = (key(500), key(3500));
    let mine: Vec<_> = t.range("t", lo.as_slice()..hi.as_slice()).unwrap().map(Result::unwrap).collect();
    assert!(mine == expect(&m, Included(&lo), Excluded(&hi)), "the transaction's range");
    let mine_rev: Vec<_> = t.range("t", ..).unwrap().rev().map(Result::unwrap).collect();
    assert!(mine_rev.iter().rev().eq(expect(&m, Unbounded, Unbounded).iter()));
    t.rollback().unwrap();
    assert!(contents(&db, "t") == before, "rolled back");
    db.close().unwrap();
}

#[test]
fn delete_range_deletes_what_the_range_holds() {
    let s = Scratch::new("delete");
    let db = Db::open(&config(&s.0, None)).unwrap();
    db.create_tree("t").unwrap();
    let mut m = fill(&db, "t", 3000, 3);
    let mut check = |lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>| {
        let (l, h) = (lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice));
        let want: Vec<_> = expect(&m, l, h).into_iter().map(|(k, _)| k).collect();
        assert_eq!(db.delete_range("t", (l, h)).unwrap(), want.len() as u64, "{l:?}..{h:?}");
        for k in want {
            m.remove(&k);
        }
        assert!(contents(&db, "t") == m, "after deleting {l:?}..{h:?}");
    };
    check(Included(key(100)), Excluded(key(900)));
    check(Excluded(key(1000)), Included(key(1002)));
    check(Included(key(5000)), Unbounded);
    check(Unbounded, Included(key(40)));
    check(Included(key(2000)), Included(key(2000)));
    check(Excluded(key(3000)), Excluded(key(3001))); // an empty range
    assert_eq!(db.delete_range("t", ..).unwrap(), m.len() as u64);
    assert_eq!(db.range("t", ..).unwrap().count(), 0);
    // In a transaction: rolled back, nothing is deleted.
    let m = fill(&db, "t", 500, 4);
    let mut t = db.begin();
    assert_eq!(t.delete_range("t", ..).unwrap(), 500);
    assert_eq!(t.range("t", ..).unwrap().count(), 0);
    t.rollback().unwrap();
    assert!(contents(&db, "t") == m);
    let e = db.delete_range("t", key(9).as_slice()..key(1).as_slice()).unwrap_err();
    assert!(matches!(e, tierdb::Error::Db(DbError::BadRange { .. })), "{e}");
    db.close().unwrap();
}

#[test]
fn bad_input_is_a_typed_error() {
    let s = Scratch::new("bad");
    let db = Db::open(&config(&s.0, None)).unwrap();
    db.create_tree("t").unwrap();
    fill(&db, "t", 10, 5);
    let e = db.range("nope", ..).unwrap_err();
    assert!(matches!(&e, tierdb::Error::Db(DbError::NoSuchTree { name }) if name == "nope"), "{e}");
    let (a, b) = (b"b".as_slice(), b"a".as_slice());
    let e = db.range("t", a..b).unwrap_err();
    assert!(matches!(e, tierdb::Error::Db(DbError::BadRange { .. })), "{e}");
    assert!(e.to_string().contains("\"t\"") && e.to_string().contains("after"), "{e}");
    let e = db.range("t", (Excluded(a), Excluded(a))).unwrap_err();
    assert!(matches!(e, tierdb::Error::Db(DbError::BadRange { .. })), "{e}");
    assert_eq!(db.range("t", (Included(a), Excluded(a))).unwrap().count(), 0, "empty, not bad");
    let long = vec![b'k'; tierdb::limits::BTREE_KEY_BYTES_MAX + 1];
    for r in [db.range("t", long.as_slice()..), db.range("t", ..=long.as_slice())] {
        let e = r.unwrap_err();
        assert!(matches!(e, tierdb::Error::BTree(BTreeError::KeyTooLarge { .. })), "{e}");
    }
    let t = db.begin();
    assert!(t.range("nope", ..).is_err());
    assert!(t.range("t", a..=b).is_err());
    drop(t);
    let e = db.drop_tree("nope").unwrap_err();
    assert!(matches!(&e, tierdb::Error::Db(DbError::NoSuchTree { .. })), "{e}");
    db.close().unwrap();
}

#[test]
fn a_tree_is_busy_while_a_transaction_has_written_to_it() {
    let s = Scratch::new("busy");
    let db = Db::open(&config(&s.0, None)).unwrap();
    db.create_tree("t").unwrap();
    db.create_tree("u").unwrap();
    let m = fill(&db, "t", 300, 6);
    let mut t = db.begin();
    t.put("t", b"x", b"1").unwrap();
    let e = db.drop_tree("t").unwrap_err();
    assert!(matches!(&e, tierdb::Error::Db(DbError::TreeBusy { tree, .. }) if tree == "t"), "{e}");
    db.drop_tree("u").unwrap(); // another tree is not busy
    t.rollback().unwrap();
    assert!(contents(&db, "t") == m, "the refused drop changed nothing");
    // An iterator over a tree that is dropped meanwhile: the error once, then nothing.
    let mut r = db.range("t", ..).unwrap();
    assert!(r.next().unwrap().is_ok());
    db.drop_tree("t").unwrap();
    let mut errors = 0;
    for e in r.by_ref() {
        if let Err(e) = e {
            assert!(matches!(e, tierdb::Error::Db(DbError::NoSuchTree { .. })), "{e}");
            errors += 1;
        }
    }
    assert_eq!(errors, 1);
    assert!(r.next().is_none() && r.next_back().is_none());
    assert_eq!(db.tree_names(), Vec::<String>::new());
    db.close().unwrap();
}

/// Three trees; `b` is dropped. Returns the models of `a` and `c`, and `b`'s.
fn three_trees(db: &Db) -> (Model, Model, Model) {
    for n in ["a", "b", "c"] {
        db.create_tree(n).unwrap();
    }
    let a = fill(db, "a", 1500, 10);
    let b = fill(db, "b", 3000, 11);
    let c = fill(db, "c", 1500, 12);
    (a, b, c)
}

/// After a drop of `b` that may or may not have happened: `b` is whole or gone, `a` and
/// `c` intact; then `b` is made again (or refilled) and filled, reusing the freed
/// pages, and nothing else changes. Returns whether `b` was gone.
fn check_after_drop(db: &Db, a: &Model, b: &Model, c: &Model) -> bool {
    let gone = !db.tree_names().contains(&"b".to_string());
    if !gone {
        assert!(contents(db, "b") == *b, "b is there, but not whole");
        height(db, "b");
    }
    for (n, m) in [("a", a), ("c", c)] {
        assert!(contents(db, n) == *m, "tree {n} changed");
        height(db, n);
    }
    db.buffer().check_invariants();
    // The freed pages serve new inserts; were one still in use, a or c would change.
    if !gone {
        db.drop_tree("b").unwrap();
    }
    let free = db.buffer().free_pages().len();
    assert!(free >= 50, "{free} free pages after dropping b");
    db.create_tree("b").unwrap();
    let b2 = fill(db, "b", 2000, 13);
    assert!(db.buffer().free_pages().len() < free / 2, "the freed pages were not reused");
    assert!(contents(db, "b") == b2);
    for (n, m) in [("a", a), ("c", c)] {
        assert!(contents(db, n) == *m, "tree {n} changed after b was refilled");
        height(db, n);
    }
    height(db, "b");
    db.buffer().check_invariants();
    gone
}

#[test]
fn drop_tree_is_durable_across_a_close_and_a_crash() {
    let s = Scratch::new("drop");
    let (a, b, c) = {
        let db = Db::open(&config(&s.0, None)).unwrap();
        let models = three_trees(&db);
        let used = db.buffer().pages_in_use();
        db.drop_tree("b").unwrap();
        assert!(db.buffer().pages_in_use() + 50 < used, "the drop freed the tree's pages");
        assert!(db.range("b", ..).is_err());
        db.close().unwrap();
        models
    };
    // A clean close: b is gone.
    let db = Db::open(&config(&s.0, None)).unwrap();
    assert_eq!(db.tree_names(), vec!["a".to_string(), "c".to_string()]);
    assert!(check_after_drop(&db, &a, &BTreeMap::new(), &c));
    // A crash right after a drop that returned: gone after recovery.
    db.drop_tree("b").unwrap();
    std::mem::forget(db);
    let db = Db::open(&config(&s.0, None)).unwrap();
    assert!(check_after_drop(&db, &a, &b, &c), "a returned drop_tree lost in a crash");
    db.close().unwrap();
}

#[test]
fn a_crash_at_each_write_of_a_drop_leaves_the_tree_whole_or_gone() {
    let mut outcomes = Vec::new();
    for n in 1..=4 {
        let s = Scratch::new(&format!("crash{n}"));
        let plan = FaultPlan::new();
        let (a, b, c) = {
            let db = Db::open(&config(&s.0, Some(&plan))).unwrap();
            let models = three_trees(&db);
            db.checkpoint().unwrap();
            plan.crash_at_nth_op(n);
            let dropped = db.drop_tree("b");
            assert_eq!(dropped.is_ok(), !plan.crashed(), "crash at op {n}: {dropped:?}");
            std::mem::forget(db);
            models
        };
        plan.lose_unsynced().unwrap();
        let db = Db::open(&config(&s.0, None)).unwrap();
        outcomes.push(check_after_drop(&db, &a, &b, &c));
        db.close().unwrap();
    }
    // The first operation of the drop is its log write: a crash there keeps the tree;
    // once the log is synced the tree is gone.
    assert!(!outcomes[0], "crash at the drop's first write: {outcomes:?}");
    assert!(outcomes[3], "crash after the drop's log was forced: {outcomes:?}");
}
