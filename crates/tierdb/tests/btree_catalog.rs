//! The catalog of named trees: create, reopen by name, list, drop; typed errors for
//! unknown and duplicate names, bad names, a full catalog and a corrupted catalog page.

use tierdb::btree::BTreeError;
use tierdb::catalog::{Catalog, CatalogEntry};
use tierdb::device::DramConfig;
use tierdb::limits::{CATALOG_NAME_BYTES_MAX, CATALOG_TREES_MAX};
use tierdb::sources::MemorySource;
use tierdb::{ByteSize, Error, PageSource};

fn source(pages: u64) -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(4096 * pages));
    cfg.frame_bytes = 4096;
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

fn btree_error(e: impl Into<Error>) -> BTreeError {
    match e.into() {
        Error::BTree(e) => e,
        e => panic!("not a B+-tree error: {e}"),
    }
}

#[test]
fn create_reopen_list_and_drop() {
    let s = source(1024);
    assert_eq!(Catalog::list(&s).unwrap(), vec![], "a zeroed catalog page is empty");
    let users = Catalog::create_tree(&s, "users").unwrap();
    let orders = Catalog::create_tree(&s, "orders").unwrap();
    for i in 0..2000u32 {
        users.insert(format!("user{i}").as_bytes(), b"u").unwrap();
        orders.insert(&i.to_be_bytes(), b"o").unwrap();
    }
    let (ur, or) = (users.root(), orders.root());
    let users = Catalog::open_tree(&s, "users").unwrap();
    let orders = Catalog::open_tree(&s, "orders").unwrap();
    assert_eq!((users.root(), orders.root()), (ur, or));
    assert_eq!(users.get(b"user1999", <[u8]>::to_vec).unwrap(), Some(b"u".to_vec()));
    assert_eq!(orders.get(&7u32.to_be_bytes(), <[u8]>::to_vec).unwrap(), Some(b"o".to_vec()));
    assert_eq!(users.check_invariants().unwrap().entries, 2000);
    assert_eq!(
        Catalog::list(&s).unwrap(),
        vec![CatalogEntry { name: "users".into(), root: ur }, CatalogEntry { name: "orders".into(), root: or }]
    );
    let before = s.pages_used();
    let orders_pages = orders.check_invariants().unwrap().pages();
    Catalog::drop_tree(&s, "orders").unwrap();
    assert_eq!(s.pages_used(), before - orders_pages, "dropping frees the tree's pages");
    assert_eq!(Catalog::list(&s).unwrap().len(), 1);
    let again = Catalog::create_tree(&s, "orders").unwrap();
    assert_eq!(again.get(&7u32.to_be_bytes(), |_| ()).unwrap(), None, "a new, empty tree");
}

#[test]
fn unknown_duplicate_and_bad_names() {
    let s = source(64);
    Catalog::create_tree(&s, "a").unwrap();
    Catalog::create_tree(&s, "b").unwrap();
    match btree_error(Catalog::open_tree(&s, "c").unwrap_err()) {
        BTreeError::NoSuchTree { name, known } => {
            assert_eq!((name.as_str(), known), ("c", vec!["a".to_string(), "b".to_string()]));
        }
        e => panic!("{e}"),
    }
    let e = Catalog::open_tree(&s, "c").unwrap_err().to_string();
    assert!(e.contains("\"a\", \"b\""), "the message lists the known names: {e}");
    assert!(matches!(btree_error(Catalog::create_tree(&s, "a").unwrap_err()), BTreeError::TreeExists { .. }));
    assert!(matches!(btree_error(Catalog::drop_tree(&s, "zz").unwrap_err()), BTreeError::NoSuchTree { .. }));
    assert!(matches!(btree_error(Catalog::create_tree(&s, "").unwrap_err()), BTreeError::BadTreeName { .. }));
    let long = "x".repeat(CATALOG_NAME_BYTES_MAX + 1);
    assert!(matches!(btree_error(Catalog::create_tree(&s, &long).unwrap_err()), BTreeError::BadTreeName { .. }));
    Catalog::create_tree(&s, &long[1..]).unwrap();
}

#[test]
fn the_catalog_has_a_limit() {
    let s = source(128);
    for i in 0..CATALOG_TREES_MAX {
        Catalog::create_tree(&s, &format!("{i:0width$}", width = CATALOG_NAME_BYTES_MAX)).unwrap();
    }
    let e = btree_error(Catalog::create_tree(&s, "one more").unwrap_err());
    assert!(matches!(e, BTreeError::CatalogFull { max } if max == CATALOG_TREES_MAX));
    assert_eq!(Catalog::list(&s).unwrap().len(), CATALOG_TREES_MAX);
}

#[test]
fn a_corrupted_catalog_page_is_a_typed_error() {
    let s = source(64);
    Catalog::create_tree(&s, "t").unwrap();
    let catalog = s.catalog_page();
    for at in [0usize, 9, 13, 17, 24, 26] {
        let old = {
            let mut p = s.fix_exclusive(catalog).unwrap();
            let old = p[at];
            p[at] ^= 0x5a;
            old
        };
        for e in [Catalog::open_tree(&s, "t").unwrap_err(), Catalog::list(&s).unwrap_err()] {
            assert!(matches!(btree_error(e), BTreeError::CatalogCorrupted { .. }), "byte {at}");
        }
        assert!(Catalog::create_tree(&s, "u").is_err(), "nothing is written over a corrupted catalog");
        s.fix_exclusive(catalog).unwrap()[at] = old;
    }
    Catalog::open_tree(&s, "t").unwrap();
    // Garbage where the catalog should be (not zero, not a catalog).
    s.fix_exclusive(catalog).unwrap()[3000] = 1;
    let e = Catalog::list(&s).unwrap_err().to_string();
    assert!(e.contains("byte 3000"), "{e}");
}

#[test]
fn concurrent_creates_are_serialized() {
    let s = source(512);
    std::thread::scope(|sc| {
        for th in 0..2 {
            let s = &s;
            sc.spawn(move || {
                for i in 0..20 {
                    let t = Catalog::create_tree(s, &format!("t{th}-{i}")).unwrap();
                    t.insert(b"k", format!("{th}-{i}").as_bytes()).unwrap();
                }
            });
        }
    });
    let list = Catalog::list(&s).unwrap();
    assert_eq!(list.len(), 40);
    for e in list {
        let t = Catalog::open_tree(&s, &e.name).unwrap();
        assert_eq!(t.get(b"k", <[u8]>::to_vec).unwrap(), Some(e.name.as_bytes()[1..].to_vec()));
    }
}
