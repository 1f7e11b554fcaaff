//! Lookups in batches: the pages a batch of keys needs are read together, so a thread
//! keeps as many SSD reads in flight as its batch has missing pages instead of one
//! (issue 20 item 2).
//!
//! [`BTree::prefetch`] walks each key's path optimistically with
//! [`PageSource::peek_child`], which neither loads nor counts anything, until the path
//! leaves memory; the pages where the paths leave it are read together
//! ([`PageSource::prefetch_children`]), and paths that stopped above the leaves go on in
//! another round. [`BTree::get_many`] prefetches and then runs the lookups, which find
//! their pages in DRAM. A prefetch is only a hint: the lookups are the ordinary ones, so
//! a page evicted again before its lookup, or one that failed to read, is read (and its
//! error reported) by the lookup as if there had been no prefetch.

use super::BTree;
use super::BTreeError;
use super::descend::inner_step;
use crate::Result;
use crate::ids::PageId;
use crate::limits::{BTREE_HEIGHT_MAX, BTREE_OPTIMISTIC_RESTARTS_MAX, PREFETCH_PAGES_MAX};
use crate::page::OptimisticPage;
use crate::page::PageSource;
use crate::page::Peek;

/// Where one key's path leaves memory.
enum Probe<G> {
    /// At the child `raw` of `parent` (read optimistically), a leaf if `leaf`.
    Missing { parent: G, raw: u64, leaf: bool },
    /// Nowhere, or nowhere a prefetch can help (in memory to the leaf, in NVM, moving).
    Done,
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Reads the pages that lookups of `keys` would read from SSD, all together, and
    /// returns how many it read; the lookups that follow find them in DRAM. Keys that are
    /// too long are skipped (their lookups report them). A source that holds every page
    /// in memory reads nothing and costs nothing.
    ///
    /// # Errors
    /// The source's: stopped, no frame could be freed, a root that cannot be fixed.
    pub fn prefetch<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<usize, BTreeError> {
        if !self.source.prefetches() {
            return Ok(0);
        }
        let mut pending: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).filter(|k| self.check_key(k).is_ok()).collect();
        let mut read = 0;
        // Each round reads one level of the paths that stopped above the leaves.
        for _ in 0..BTREE_HEIGHT_MAX {
            let mut missing: Vec<(S::Optimistic<'s>, u64)> = Vec::new();
            let mut again = Vec::new();
            for &key in &pending {
                if let Probe::Missing { parent, raw, leaf } = self.probe(key)? {
                    missing.push((parent, raw));
                    if !leaf {
                        again.push(key);
                    }
                }
            }
            if missing.is_empty() {
                break;
            }
            let children: Vec<(&S::Optimistic<'s>, u64)> = missing.iter().map(|(p, raw)| (p, *raw)).collect();
            read += self.source.prefetch_children(&children)?;
            pending = again;
            if pending.is_empty() {
                break;
            }
        }
        Ok(read)
    }

    /// Looks up every key of `keys`, calling `f(i, value)` for `keys[i]` in order
    /// (`None`: absent; the value in place, under the leaf's latch: `f` must not use the
    /// tree). The pages the lookups need are read ahead together, up to
    /// [`PREFETCH_PAGES_MAX`] keys at a time ([`prefetch`](Self::prefetch)).
    ///
    /// # Errors
    /// Those of [`get`](Self::get), for the first key that fails; `f` has then been
    /// called for the keys before it.
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mut f: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<(), BTreeError> {
        for (c, chunk) in keys.chunks(PREFETCH_PAGES_MAX).enumerate() {
            if chunk.len() > 1 {
                self.prefetch(chunk)?;
            }
            for (j, key) in chunk.iter().enumerate() {
                let i = c * PREFETCH_PAGES_MAX + j;
                if self.get(key.as_ref(), |v| f(i, Some(v)))?.is_none() {
                    f(i, None);
                }
            }
        }
        Ok(())
    }

    /// Walks `key`'s path optimistically, without side effects, to where it leaves
    /// memory. A path that keeps changing, or a page that does not parse, is `Done`: its
    /// lookup finds out.
    fn probe(&self, key: &[u8]) -> Result<Probe<S::Optimistic<'s>>, BTreeError> {
        'restart: for _ in 0..BTREE_OPTIMISTIC_RESTARTS_MAX {
            let mut pid = self.root;
            // (A root that is not in memory is left to the lookups: one read.)
            let Peek::Resident(mut page) = self.source.peek_page(pid)? else { return Ok(Probe::Done) };
            let mut level = None;
            loop {
                let step = inner_step(&page, pid, level, key);
                if !page.validate() {
                    continue 'restart;
                }
                let Ok(Some((_, raw, next_level))) = step else { return Ok(Probe::Done) };
                let child = match self.source.peek_child(&page, raw) {
                    Ok(c) => c,
                    Err(_) if !page.validate() => continue 'restart,
                    Err(e) => return Err(e.into()),
                };
                match child {
                    Peek::Missing => {
                        if !page.validate() {
                            continue 'restart;
                        }
                        return Ok(Probe::Missing { parent: page, raw, leaf: next_level == 0 });
                    }
                    Peek::Elsewhere => return Ok(Probe::Done),
                    Peek::Resident(_) if next_level == 0 => return Ok(Probe::Done),
                    Peek::Resident(child) => {
                        let next = self.source.child_pid(raw);
                        if !page.validate() {
                            continue 'restart;
                        }
                        pid = PageId(next.0);
                        page = child;
                        level = Some(next_level);
                    }
                }
            }
        }
        Ok(Probe::Done)
    }
}
