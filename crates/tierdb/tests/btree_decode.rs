//! Reading a tree never panics on bad page bytes: opening arbitrary or mutated root
//! pages, and every read operation on a tree whose pages were corrupted at random,
//! return results or typed errors. Writes to a corrupted tree do not panic either
//! (they may change it in ways that are wrong, as its bytes are).

use proptest::prelude::*;
use tierdb::btree::BTree;
use tierdb::btree::{NodeBuilder, NodeKind};
use tierdb::device::DramConfig;
use tierdb::sources::MemorySource;
use tierdb::{ByteSize, ExclusivePage, PageId, PageSource};

const PAGE: usize = 4096;

fn source(pages: u64) -> MemorySource {
    let mut cfg = DramConfig::new(ByteSize(PAGE as u64 * pages));
    cfg.frame_bytes = PAGE;
    cfg.huge_pages = false;
    MemorySource::new(&cfg).unwrap()
}

/// Every read operation; errors are fine, panics and endless loops are not.
fn read_everything(t: &BTree<'_, MemorySource>, probes: &[Vec<u8>]) {
    for k in probes {
        let _ = t.get(k, |v| v.len());
        let _ = t.scan(k, |_, _| true);
    }
    let mut c = t.range(b"");
    for _ in 0..10_000 {
        match c.next() {
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    let _ = t.check_invariants();
}

fn key(i: u32) -> Vec<u8> {
    format!("user{:08}", i * 37).into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Arbitrary bytes as a root, or a valid node header over arbitrary entries.
    #[test]
    fn open_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), PAGE),
        header in 0u8..3,
        keep in 64usize..PAGE,
        probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..8),
    ) {
        let s = source(16);
        let pid = {
            let mut p = s.allocate().unwrap();
            p.copy_from_slice(&bytes);
            if header > 0 {
                // A real header and fences, the slots and heap below `keep` random.
                let (kind, level) = if header == 1 { (NodeKind::Leaf, 0) } else { (NodeKind::Inner, 1) };
                let mut node = vec![0u8; PAGE];
                let mut b = NodeBuilder::new(&mut node, p.page_id(), kind, level, b"", None, 2).unwrap();
                for i in 0..40u32 {
                    b.push([&key(i), b""], &(i as u64 % 3 + 1).to_le_bytes()).unwrap();
                }
                p[..64].copy_from_slice(&node[..64]);
                p[keep..].copy_from_slice(&node[keep..]);
            }
            p.page_id()
        };
        if let Ok(t) = BTree::open(&s, pid) {
            read_everything(&t, &probes);
        }
    }

    /// A tree of a few levels with random bytes overwritten in random pages.
    #[test]
    fn reads_of_a_corrupted_tree_never_panic(
        seed in any::<u64>(),
        flips in proptest::collection::vec((0u64..64, 0usize..PAGE, any::<u8>()), 1..24),
    ) {
        let s = source(256);
        let t = BTree::create(&s).unwrap();
        for i in 0..1500u32 {
            let v = vec![(i as u64 ^ seed) as u8; (i % 50) as usize];
            t.insert(&key(i), &v).unwrap();
        }
        let pages = s.pages_used() + 1;
        for (p, at, b) in flips {
            let pid = PageId(2 + p % (pages - 2));
            let mut g = s.fix_exclusive(pid).unwrap();
            g[at] = b;
        }
        let probes: Vec<Vec<u8>> = (0..1500).step_by(97).map(key).collect();
        read_everything(&t, &probes);
        let _ = BTree::open(&s, t.root());
    }

    /// Writes (splits, merges, compactions) on a corrupted tree.
    #[test]
    fn writes_to_a_corrupted_tree_never_panic(
        seed in any::<u64>(),
        flips in proptest::collection::vec((0u64..64, 0usize..PAGE, any::<u8>()), 1..24),
    ) {
        let s = source(512);
        let t = BTree::create(&s).unwrap();
        for i in 0..1500u32 {
            t.insert(&key(i), &vec![(i as u64 ^ seed) as u8; (i % 50) as usize]).unwrap();
        }
        let pages = s.pages_used() + 1;
        for (p, at, b) in flips {
            s.fix_exclusive(PageId(2 + p % (pages - 2))).unwrap()[at] = b;
        }
        for i in 0..1500u32 {
            let _ = t.insert(&key(i * 3 + 1), &[1; 100]);
            let _ = t.delete(&key(i));
            let _ = t.update(&key(i + 1), &[2; 300]);
            let _ = t.update_in_place(&key(i + 2), 1, &[3; 2]);
        }
        read_everything(&t, &[key(7)]);
    }
}
