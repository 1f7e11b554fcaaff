//! Bounded reads in batches, in both directions: [`BTree::read_range`] copies out at
//! most N entries of a key range, ascending from its lower bound or descending from its
//! upper bound, and says whether the range ran out; and [`BTree::pages`], the page ids
//! of a whole tree (what dropping it frees).
//!
//! A forward read is the callback scan of `cursor.rs` (an optimistic descent, then
//! shared latches coupled along the right-sibling links). Leaves have no left link, so
//! a reverse read moves left by descending again from the root: to the leaf that holds
//! the last keys *below* the current leaf's lower fence (at each inner node the child
//! left of the first separator `>=` the fence). Those descents couple shared latches
//! top-down (a child is latched before its parent is released), the order every
//! descent takes, so they cannot deadlock with writers or restart. Each step checks the
//! leaf's fences against the key sought; the key sought strictly decreases from one
//! leaf to the next (it is the previous leaf's lower fence), so a reverse read visits
//! each page at most once and ends even on a corrupt tree: a violation is `Corrupted`.
//!
//! No latch is held when a call returns. Each leaf's entries are a consistent copy of
//! that leaf; entries from several leaves are not one snapshot: a key present for the
//! whole read is returned exactly once, keys inserted or deleted meanwhile may or may
//! not be.

use std::collections::HashSet;
use std::ops::Bound;

use super::node::NodeRef;
use super::{BTree, BTreeError, Shared, corrupted};
use crate::Result;
use crate::ids::PageId;
use crate::page::PageSource;

/// What one [`BTree::read_range`] returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRead {
    /// `(key, value)` in the order read: ascending forward, descending in reverse.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// True if the tree held no more keys of the range past the last entry (in the
    /// read's direction) when the read ended; false if the read stopped at its limit.
    pub exhausted: bool,
}

/// Where a descent goes.
#[derive(Clone, Copy, Debug)]
enum Seek<'k> {
    /// To the leaf whose fences hold the key (`lower <= key < upper`).
    At(&'k [u8]),
    /// To the leaf that holds the last keys below the key (`lower < key <= upper`).
    Below(&'k [u8]),
    /// To the rightmost leaf.
    Last,
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Reads at most `entries_max` entries with keys within `lower..upper`: ascending
    /// from `lower`, or with `reverse` descending from `upper`. An empty range (`lower`
    /// past `upper`) reads nothing and is exhausted. Holds no latch once it returns;
    /// see the module doc for what concurrent writers do to a read.
    ///
    /// # Errors
    /// `KeyTooLarge` for a bound longer than a key can be; `Corrupted` for broken
    /// fences or sibling links; the source's fix errors.
    ///
    /// # Panics
    /// If `entries_max` is 0 (a read that could never make progress).
    pub fn read_range(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
        entries_max: usize,
    ) -> Result<RangeRead, BTreeError> {
        assert!(entries_max > 0, "a range read of at most 0 entries");
        for b in [lower, upper] {
            if let Bound::Included(k) | Bound::Excluded(k) = b {
                self.check_key(k)?;
            }
        }
        if reverse { self.read_down(lower, upper, entries_max) } else { self.read_up(lower, upper, entries_max) }
    }

    /// The forward read: the callback scan from `lower`, stopped past `upper` or at
    /// the limit.
    fn read_up(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, max: usize) -> Result<RangeRead, BTreeError> {
        let (start, inclusive) = match lower {
            Bound::Unbounded => (&[][..], true),
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        let mut entries = Vec::new();
        let mut stopped = false;
        self.scan_from(start, inclusive, |k, v| {
            if !below_upper(k, upper) {
                return false;
            }
            if entries.len() == max {
                stopped = true;
                return false;
            }
            entries.push((k.to_vec(), v.to_vec()));
            true
        })?;
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "a forward read out of order");
        Ok(RangeRead { entries, exhausted: !stopped })
    }

    /// The reverse read: leaf by leaf leftwards, each reached by a descent to the keys
    /// below the previous leaf's lower fence.
    fn read_down(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, max: usize) -> Result<RangeRead, BTreeError> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        // The key sought next, owned once it is a fence copied out of a leaf.
        let mut fence: Vec<u8>;
        let mut seek = match upper {
            Bound::Unbounded => Seek::Last,
            Bound::Included(k) => Seek::At(k),
            // No key is below the empty key.
            Bound::Excluded([]) => return Ok(RangeRead { entries, exhausted: true }),
            Bound::Excluded(k) => Seek::Below(k),
        };
        loop {
            let (pid, page) = self.descend_shared_to(seek)?;
            let node = NodeRef::parse(&page, pid)?;
            let (lo, hi) = (node.lower_fence(), node.upper_fence());
            // The leaf's fences must hold the position sought (the descent followed
            // separators under shared latches).
            let (holds, end) = match seek {
                Seek::At(k) => (lo <= k && hi.is_none_or(|u| k < u), node.search(k, true)?.0),
                Seek::Below(k) => {
                    let holds = lo < k && hi.is_none_or(|u| k <= u);
                    let end = if hi.is_some_and(|u| k >= u) { node.count() } else { node.lower_bound(k)?.0 };
                    (holds, end)
                }
                Seek::Last => (hi.is_none(), node.count()),
            };
            if !holds {
                return Err(corrupted(pid, format!("a descent to {seek:?} reached a leaf with fences {lo:?}..{hi:?}")));
            }
            let prefix = node.prefix();
            for i in (0..end).rev() {
                let (suffix, value) = node.entry(i)?;
                let mut key = Vec::with_capacity(prefix.len() + suffix.len());
                key.extend_from_slice(prefix);
                key.extend_from_slice(suffix);
                if !above_lower(&key, lower) {
                    return Ok(RangeRead { entries, exhausted: true });
                }
                if entries.len() == max {
                    return Ok(RangeRead { entries, exhausted: false });
                }
                entries.push((key, value.to_vec()));
            }
            // Every key left of this leaf is below its lower fence: none if the leaf is
            // the leftmost (an empty fence) or the fence is at or below `lower`.
            let past_lower = match lower {
                Bound::Unbounded => false,
                Bound::Included(l) | Bound::Excluded(l) => lo <= l,
            };
            if lo.is_empty() || past_lower {
                debug_assert!(entries.windows(2).all(|w| w[0].0 > w[1].0), "a reverse read out of order");
                return Ok(RangeRead { entries, exhausted: true });
            }
            fence = lo.to_vec();
            drop(page);
            seek = Seek::Below(&fence);
        }
    }

    /// Descends to the leaf `seek` names with shared latch coupling from the root and
    /// returns it latched shared. Levels must fall by one per step (at most
    /// `u8::MAX` steps).
    fn descend_shared_to(&self, seek: Seek<'_>) -> Result<(PageId, Shared<'s, S>), BTreeError> {
        let mut pid = self.root;
        let mut page = self.source.fix_shared(pid)?;
        let mut level = None;
        loop {
            let node = NodeRef::parse(&page, pid)?;
            if let Some(l) = level {
                node.expect_level(l)?;
            }
            if node.is_leaf() {
                return Ok((pid, page));
            }
            let i = match seek {
                Seek::At(k) => node.child_index(k)?,
                Seek::Below(k) => node.lower_bound(k)?.0,
                Seek::Last => node.count(),
            };
            // Under the parent's latch a swizzled reference names the child's frame.
            let child = self.source.child_pid(node.child(i)?.0);
            level = Some(node.level() - 1);
            let child_page = self.source.fix_shared(child)?;
            (pid, page) = (child, child_page);
        }
    }

    /// The page ids of every node of the tree, the root first (parents before their
    /// children). A walk with one shared latch at a time: the caller keeps writers away
    /// (a split during the walk could hide a new page).
    ///
    /// # Errors
    /// `Corrupted` for a page reached twice or a child at the wrong level; the
    /// source's fix errors.
    pub fn pages(&self) -> Result<Vec<PageId>, BTreeError> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![(self.root, None)];
        while let Some((pid, level)) = stack.pop() {
            if !seen.insert(pid) {
                return Err(corrupted(pid, "reached twice: the tree is not a tree"));
            }
            let page = self.source.fix_shared(pid)?;
            let node = NodeRef::parse(&page, pid)?;
            if let Some(l) = level {
                node.expect_level(l)?;
            }
            if !node.is_leaf() {
                for i in (0..=node.count()).rev() {
                    stack.push((self.source.child_pid(node.child(i)?.0), Some(node.level() - 1)));
                }
            }
            out.push(pid);
        }
        Ok(out)
    }
}

/// Whether `key` is within the upper bound `upper`.
fn below_upper(key: &[u8], upper: Bound<&[u8]>) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Included(u) => key <= u,
        Bound::Excluded(u) => key < u,
    }
}

/// Whether `key` is within the lower bound `lower`.
fn above_lower(key: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Unbounded => true,
        Bound::Included(l) => key >= l,
        Bound::Excluded(l) => key > l,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound::{Excluded, Included, Unbounded};

    use proptest::prelude::*;

    use super::*;
    use crate::ByteSize;
    use crate::device::DramConfig;
    use crate::sources::MemorySource;

    fn source(pages: u64) -> MemorySource {
        let mut cfg = DramConfig::new(ByteSize(4096 * pages));
        cfg.frame_bytes = 4096;
        cfg.huge_pages = false;
        MemorySource::new(&cfg).unwrap()
    }

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;
    type KeyBounds<'k> = (Bound<&'k [u8]>, Bound<&'k [u8]>);

    /// The whole range read batch by batch, each batch resuming after the last key of
    /// the one before, checked against the model's range.
    fn read_all(t: &BTree<'_, MemorySource>, m: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>, rev: bool, max: usize) {
        let empty = match (lo, hi) {
            (Included(a), Included(b)) => a > b,
            (Included(a) | Excluded(a), Excluded(b)) | (Excluded(a), Included(b)) => a >= b,
            _ => false,
        };
        let expect: Vec<_> = if empty {
            Vec::new()
        } else {
            let v = m.range::<[u8], _>((lo, hi)).map(|(k, v)| (k.clone(), v.clone()));
            if rev { v.rev().collect() } else { v.collect() }
        };
        let (mut lo, mut hi) = (lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec));
        let mut got = Vec::new();
        for round in 0.. {
            assert!(round <= expect.len(), "no progress after {round} batches");
            let r = t.read_range(lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice), rev, max).unwrap();
            assert!(r.entries.len() <= max, "{} entries, max {max}", r.entries.len());
            if !r.exhausted {
                assert_eq!(r.entries.len(), max, "a read stopped early before its limit");
                let last = r.entries.last().unwrap().0.clone();
                if rev { hi = Excluded(last) } else { lo = Excluded(last) }
            }
            got.extend(r.entries);
            if r.exhausted {
                break;
            }
        }
        assert_eq!(got.len(), expect.len(), "range read {} entries, the model holds {}", got.len(), expect.len());
        assert!(got == expect, "range read differs from the model");
    }

    fn key(i: u64) -> Vec<u8> {
        format!("k{i:06}").into_bytes()
    }

    /// A tree of three levels (300-byte values: about 12 entries a leaf).
    fn three_levels(s: &MemorySource) -> (BTree<'_, MemorySource>, Model) {
        let t = BTree::create(s).unwrap();
        let mut m = Model::new();
        for i in 0..4000 {
            let v = vec![i as u8; 300];
            t.insert(&key(i * 2), &v).unwrap();
            m.insert(key(i * 2), v);
        }
        assert!(t.check_invariants().unwrap().height >= 3);
        (t, m)
    }

    #[test]
    fn reads_in_both_directions_match_the_model() {
        let s = source(2048);
        let (t, m) = three_levels(&s);
        let (a, b, c) = (key(1001), key(2000), key(6999));
        let bounds: Vec<KeyBounds<'_>> = vec![
            (Unbounded, Unbounded),
            (Included(&a), Unbounded),
            (Excluded(&b), Unbounded),
            (Unbounded, Included(&b)),
            (Unbounded, Excluded(&b)),
            (Included(&b), Included(&c)),
            (Excluded(&b), Excluded(&c)),
            (Included(&a), Excluded(&b)),
            (Included(&b), Included(&b)),
            (Excluded(&b), Included(&b)),
            (Included(&c), Included(&a)),
            (Unbounded, Excluded(b"")),
            (Included(b""), Included(b"")),
            (Excluded(b"z"), Unbounded),
        ];
        for (lo, hi) in bounds {
            for rev in [false, true] {
                for max in [1, 7, 100, 10_000] {
                    read_all(&t, &m, lo, hi, rev, max);
                }
            }
        }
    }

    #[test]
    fn a_batch_stops_at_its_limit_and_says_so() {
        let s = source(2048);
        let (t, _) = three_levels(&s);
        let r = t.read_range(Unbounded, Unbounded, true, 3).unwrap();
        assert_eq!(r.entries.iter().map(|e| e.0.clone()).collect::<Vec<_>>(), vec![key(7998), key(7996), key(7994)]);
        assert!(!r.exhausted);
        // Exactly as many entries as the range holds: exhausted, not stopped.
        let r = t.read_range(Included(&key(10)), Excluded(&key(16)), true, 3).unwrap();
        assert_eq!(r.entries.len(), 3);
        assert!(r.exhausted);
        let r = t.read_range(Included(&key(10)), Excluded(&key(16)), false, 3).unwrap();
        assert_eq!(r.entries.iter().map(|e| e.0.clone()).collect::<Vec<_>>(), vec![key(10), key(12), key(14)]);
        assert!(r.exhausted);
        let empty = BTree::create(&s).unwrap();
        for rev in [false, true] {
            assert_eq!(
                empty.read_range(Unbounded, Unbounded, rev, 1).unwrap(),
                RangeRead { entries: vec![], exhausted: true }
            );
        }
    }

    #[test]
    fn bounds_longer_than_a_key_are_errors() {
        let s = source(64);
        let t = BTree::create(&s).unwrap();
        let long = vec![1u8; crate::limits::BTREE_KEY_BYTES_MAX + 1];
        for rev in [false, true] {
            let e = t.read_range(Included(&long), Unbounded, rev, 4).unwrap_err();
            assert!(matches!(e, BTreeError::KeyTooLarge { .. }), "{e}");
            let e = t.read_range(Unbounded, Excluded(&long), rev, 4).unwrap_err();
            assert!(matches!(e, BTreeError::KeyTooLarge { .. }), "{e}");
        }
    }

    #[test]
    fn pages_lists_every_node_once() {
        let s = source(2048);
        let (t, _) = three_levels(&s);
        let stats = t.check_invariants().unwrap();
        let pages = t.pages().unwrap();
        assert_eq!(pages.len() as u64, stats.leaves + stats.inner_nodes);
        assert_eq!(pages[0], t.root());
        assert_eq!(pages.iter().collect::<HashSet<_>>().len(), pages.len());
    }

    /// Readers in both directions beside a writer that splits and merges leaves: every
    /// key present throughout is returned once, in order, and no read fails or loops.
    #[test]
    fn reads_beside_a_writer_see_every_stable_key_once() {
        let s = source(4096);
        let t = BTree::create(&s).unwrap();
        let stable: Vec<Vec<u8>> = (0..1500).map(|i| key(i * 2)).collect();
        for k in &stable {
            t.insert(k, &[1; 100]).unwrap();
        }
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Odd keys with large values come and go: splits, then merges.
                for round in 0..6u64 {
                    for i in (0..1500).map(|i| i * 2 + 1) {
                        if round % 2 == 0 {
                            t.upsert(&key(i), &[2; 600]).unwrap();
                        } else {
                            t.delete(&key(i)).unwrap();
                        }
                    }
                }
                done.store(true, std::sync::atomic::Ordering::Release);
            });
            for reverse in [true, false] {
                let (stable, done) = (&stable, &done);
                scope.spawn(move || {
                    let mut reads = 0;
                    while !done.load(std::sync::atomic::Ordering::Acquire) || reads < 2 {
                        let (mut lo, mut hi): (Bound<Vec<u8>>, Bound<Vec<u8>>) = (Unbounded, Unbounded);
                        let mut got = Vec::new();
                        loop {
                            let r = t.read_range(
                                lo.as_ref().map(Vec::as_slice),
                                hi.as_ref().map(Vec::as_slice),
                                reverse,
                                50,
                            );
                            let r = r.unwrap();
                            if let Some((k, _)) = r.entries.last() {
                                if reverse { hi = Excluded(k.clone()) } else { lo = Excluded(k.clone()) }
                            }
                            got.extend(r.entries.into_iter().map(|(k, _)| k).filter(|k| k[k.len() - 1] % 2 == 0));
                            if r.exhausted {
                                break;
                            }
                        }
                        if reverse {
                            got.reverse();
                        }
                        assert!(
                            got == *stable,
                            "a {} read saw {} stable keys of {}",
                            if reverse { "reverse" } else { "forward" },
                            got.len(),
                            stable.len()
                        );
                        reads += 1;
                    }
                });
            }
        });
        t.check_invariants().unwrap();
    }

    /// A bound of each kind over the keys `0..KEYS`.
    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            Just(Unbounded),
            (0u64..KEYS).prop_map(|i| Included(key(i))),
            (0u64..KEYS).prop_map(|i| Excluded(key(i))),
        ]
    }

    const KEYS: u64 = 3000;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random inserts and deletes (enough to make three levels, then merges), then
        /// reads with random bounds in both directions and random batch sizes.
        #[test]
        fn bounded_reads_match_a_btreemap(
            seed in any::<u64>(),
            reads in proptest::collection::vec((bound(), bound(), any::<bool>(), 1usize..40), 12),
        ) {
            use rand::prelude::*;
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let s = source(4096);
            let t = BTree::create(&s).unwrap();
            let mut m = Model::new();
            for _ in 0..6000 {
                let k = key(rng.random_range(0..KEYS));
                if rng.random_range(0..4) == 0 {
                    prop_assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some());
                } else {
                    let v = vec![rng.random::<u8>(); rng.random_range(0..400)];
                    t.upsert(&k, &v).unwrap();
                    m.insert(k, v);
                }
            }
            prop_assert!(t.check_invariants().unwrap().height >= 2);
            for (lo, hi, rev, max) in &reads {
                read_all(&t, &m, lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice), *rev, *max);
            }
        }
    }
}
