//! Single-tier DRAM replacement policies for the simulator: LRU and ARC (Megiddo and
//! Modha, FAST 2003, Figure 4). They answer one question — is this page cached? — and
//! exist to check the simulator against the ARC paper's published hit ratios and to
//! compare DRAM policies; the engine's tiered policies run in [`crate::sim`].
//!
//! Both work over dense page ids (`prepared`), with intrusive doubly linked lists in
//! plain vectors: O(1) per access and no allocation after start-up.

/// No page / no list node.
const NIL: u32 = u32::MAX;

/// Which list a page is on.
const NONE: u8 = 0;
const T1: u8 = 1;
const T2: u8 = 2;
const B1: u8 = 3;
const B2: u8 = 4;
const LISTS: usize = 5;

/// Doubly linked lists over page ids; each page is on at most one list.
#[derive(Debug)]
struct Lists {
    prev: Vec<u32>,
    next: Vec<u32>,
    on: Vec<u8>,
    /// MRU end, LRU end and length of each list.
    head: [u32; LISTS],
    tail: [u32; LISTS],
    len: [usize; LISTS],
}

impl Lists {
    fn new(pages: usize) -> Lists {
        Lists {
            prev: vec![NIL; pages],
            next: vec![NIL; pages],
            on: vec![NONE; pages],
            head: [NIL; LISTS],
            tail: [NIL; LISTS],
            len: [0; LISTS],
        }
    }

    #[inline]
    fn unlink(&mut self, p: u32) {
        let l = self.on[p as usize] as usize;
        debug_assert!(l != NONE as usize, "page {p} is on no list");
        let (pr, nx) = (self.prev[p as usize], self.next[p as usize]);
        if pr == NIL {
            self.head[l] = nx;
        } else {
            self.next[pr as usize] = nx;
        }
        if nx == NIL {
            self.tail[l] = pr;
        } else {
            self.prev[nx as usize] = pr;
        }
        self.len[l] -= 1;
        self.on[p as usize] = NONE;
    }

    /// Puts `p` (on no list) at the MRU end of list `l`.
    #[inline]
    fn push_mru(&mut self, l: u8, p: u32) {
        debug_assert_eq!(self.on[p as usize], NONE);
        let li = l as usize;
        let h = self.head[li];
        self.prev[p as usize] = NIL;
        self.next[p as usize] = h;
        if h == NIL {
            self.tail[li] = p;
        } else {
            self.prev[h as usize] = p;
        }
        self.head[li] = p;
        self.len[li] += 1;
        self.on[p as usize] = l;
    }

    /// Removes and returns the LRU page of list `l`.
    #[inline]
    fn pop_lru(&mut self, l: u8) -> u32 {
        let p = self.tail[l as usize];
        debug_assert!(p != NIL, "pop from empty list {l}");
        self.unlink(p);
        p
    }
}

/// A DRAM-only replacement policy over dense page ids.
pub trait Cache {
    /// Accesses `page`; true on a hit. A miss brings the page in.
    fn access(&mut self, page: u32) -> bool;
    /// Pages cached now.
    fn len(&self) -> usize;
    /// Whether no page is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Least recently used.
#[derive(Debug)]
pub struct Lru {
    capacity: usize,
    lists: Lists,
}

impl Lru {
    /// # Panics
    /// If `capacity` is 0.
    pub fn new(capacity: usize, pages: usize) -> Lru {
        assert!(capacity > 0, "an LRU cache of no pages");
        Lru { capacity, lists: Lists::new(pages) }
    }
}

impl Cache for Lru {
    #[inline]
    fn access(&mut self, p: u32) -> bool {
        let hit = self.lists.on[p as usize] == T1;
        if hit {
            self.lists.unlink(p);
        } else if self.lists.len[T1 as usize] == self.capacity {
            self.lists.pop_lru(T1);
        }
        self.lists.push_mru(T1, p);
        hit
    }

    fn len(&self) -> usize {
        self.lists.len[T1 as usize]
    }
}

/// Adaptive replacement cache: T1 (seen once recently) and T2 (seen at least twice)
/// hold the cached pages, B1 and B2 remember the pages recently evicted from each;
/// a hit in a ghost list moves the target size `p` of T1 towards that side.
#[derive(Debug)]
pub struct Arc {
    c: usize,
    /// Target size of T1 (real-valued, as in the paper).
    p: f64,
    lists: Lists,
}

impl Arc {
    /// # Panics
    /// If `capacity` is 0.
    pub fn new(capacity: usize, pages: usize) -> Arc {
        assert!(capacity > 0, "an ARC cache of no pages");
        Arc { c: capacity, p: 0.0, lists: Lists::new(pages) }
    }

    fn n(&self, l: u8) -> usize {
        self.lists.len[l as usize]
    }

    /// The paper's REPLACE(x, p): demote the LRU page of T1 or of T2 to its ghost list.
    #[inline]
    fn replace(&mut self, in_b2: bool) {
        let t1 = self.n(T1);
        if t1 >= 1 && ((in_b2 && t1 as f64 == self.p) || t1 as f64 > self.p) {
            let v = self.lists.pop_lru(T1);
            self.lists.push_mru(B1, v);
        } else {
            let v = self.lists.pop_lru(T2);
            self.lists.push_mru(B2, v);
        }
    }

    /// Checks the paper's invariants on the list sizes.
    pub fn check_invariants(&self) {
        let (t1, t2, b1, b2) = (self.n(T1), self.n(T2), self.n(B1), self.n(B2));
        assert!(t1 + t2 <= self.c, "|T1| {t1} + |T2| {t2} > c {}", self.c);
        assert!(t1 + b1 <= self.c, "|T1| {t1} + |B1| {b1} > c {}", self.c);
        assert!(t1 + t2 + b1 + b2 <= 2 * self.c, "directory over 2c");
        assert!((0.0..=self.c as f64).contains(&self.p), "p {} out of [0, c]", self.p);
    }
}

impl Cache for Arc {
    #[inline]
    fn access(&mut self, x: u32) -> bool {
        match self.lists.on[x as usize] {
            // Case I: a hit.
            T1 | T2 => {
                self.lists.unlink(x);
                self.lists.push_mru(T2, x);
                true
            }
            // Case II: a ghost hit in B1: favour recency.
            B1 => {
                let d = if self.n(B1) >= self.n(B2) { 1.0 } else { self.n(B2) as f64 / self.n(B1) as f64 };
                self.p = (self.p + d).min(self.c as f64);
                self.replace(false);
                self.lists.unlink(x);
                self.lists.push_mru(T2, x);
                false
            }
            // Case III: a ghost hit in B2: favour frequency.
            B2 => {
                let d = if self.n(B2) >= self.n(B1) { 1.0 } else { self.n(B1) as f64 / self.n(B2) as f64 };
                self.p = (self.p - d).max(0.0);
                self.replace(true);
                self.lists.unlink(x);
                self.lists.push_mru(T2, x);
                false
            }
            // Case IV: a page in no list.
            _ => {
                let l1 = self.n(T1) + self.n(B1);
                if l1 == self.c {
                    if self.n(T1) < self.c {
                        self.lists.pop_lru(B1);
                        self.replace(false);
                    } else {
                        self.lists.pop_lru(T1);
                    }
                } else {
                    let total = l1 + self.n(T2) + self.n(B2);
                    if total >= self.c {
                        if total == 2 * self.c {
                            self.lists.pop_lru(B2);
                        }
                        self.replace(false);
                    }
                }
                self.lists.push_mru(T1, x);
                false
            }
        }
    }

    fn len(&self) -> usize {
        self.n(T1) + self.n(T2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used() {
        let mut c = Lru::new(2, 10);
        assert!(!c.access(1));
        assert!(!c.access(2));
        assert!(c.access(1));
        assert!(!c.access(3)); // evicts 2
        assert!(c.access(1));
        assert!(!c.access(2));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn arc_resists_a_scan_that_lru_does_not() {
        let hot: Vec<u32> = (0..50).collect();
        let (mut lru, mut arc) = (Lru::new(100, 20_000), Arc::new(100, 20_000));
        let (mut lh, mut ah) = (0, 0);
        let mut scan = 1000u32;
        for round in 0..200 {
            for &p in &hot {
                lh += usize::from(lru.access(p));
                ah += usize::from(arc.access(p));
            }
            if round % 2 == 0 {
                for _ in 0..120 {
                    lru.access(scan);
                    arc.access(scan);
                    scan += 1;
                }
            }
            arc.check_invariants();
        }
        assert!(ah > lh + 2000, "ARC hits {ah} should beat LRU hits {lh} under scans");
        assert!(arc.len() <= 100);
    }
}
