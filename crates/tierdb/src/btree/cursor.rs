//! Range scans: the callback scan that reads leaves in place, and a cursor that copies
//! out a leaf's worth of entries at a time.
//!
//! The scan couples shared latches along the leaf chain: the right sibling is latched
//! before the current leaf is released, and each step checks that the sibling's lower
//! fence is the current leaf's upper fence and that fences increase, so a corrupt link
//! (or a cycle) is an error rather than a wrong answer or an endless loop.
//!
//! The cursor holds no latch between calls: each refill descends from the root to the
//! key after the last one returned. It therefore sees every key that exists for its
//! whole life exactly once, in order; keys inserted or deleted concurrently may or may
//! not be seen.

use super::BTreeError;
use super::node::NodeRef;
use super::{BTree, corrupted};
use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_KEY_BYTES_MAX;
use crate::page::PageSource;

/// A key and its value, borrowed from the cursor until its next call.
type KeyValue<'c> = (&'c [u8], &'c [u8]);

impl<'s, S: PageSource> BTree<'s, S> {
    /// Calls `f(key, value)` for keys `>= start` (`> start` unless `inclusive`) in order,
    /// until `f` returns false or the keys run out.
    pub(super) fn scan_from(
        &self,
        start: &[u8],
        inclusive: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), BTreeError> {
        let (mut pid, mut page) = self.descend_shared(start)?;
        let mut key = [0u8; BTREE_KEY_BYTES_MAX];
        let mut first = true;
        loop {
            let node = NodeRef::parse(&page, pid)?;
            let mut pos = 0;
            if first {
                let (p, found) = node.lower_bound(start)?;
                pos = if found && !inclusive { p + 1 } else { p };
                first = false;
            }
            let prefix = node.prefix();
            key[..prefix.len()].copy_from_slice(prefix);
            for i in pos..node.count() {
                let (suffix, value) = node.entry(i)?;
                let len = prefix.len() + suffix.len();
                if len > BTREE_KEY_BYTES_MAX {
                    return Err(corrupted(pid, format!("a key of {len} bytes")));
                }
                key[prefix.len()..len].copy_from_slice(suffix);
                if !f(&key[..len], value) {
                    return Ok(());
                }
            }
            let next = PageId(node.link());
            let Some(upper) = node.upper_fence() else {
                if next.0 != 0 {
                    return Err(corrupted(pid, format!("the rightmost leaf links to {next}")));
                }
                return Ok(());
            };
            if next.0 == 0 {
                return Err(corrupted(pid, "a leaf with an upper fence has no right sibling"));
            }
            let next_page = self.source.fix_shared(next)?;
            let nv = NodeRef::parse(&next_page, next)?;
            nv.expect_level(0)?;
            if nv.lower_fence() != upper || nv.upper_fence().is_some_and(|u| u <= upper) {
                return Err(corrupted(next, format!("fences do not continue those of its left sibling {pid}")));
            }
            page = next_page;
            pid = next;
        }
    }
}

/// A forward cursor over a tree's keys from a start key; see [`BTree::range`].
///
/// `next` lends the key and value from the cursor's buffer, which holds copies of up
/// to a page's worth of entries; no latch is held between calls.
pub struct Cursor<'t, 's, S: PageSource> {
    tree: &'t BTree<'s, S>,
    /// The next batch starts at this key (included only before the first batch).
    resume: Vec<u8>,
    inclusive: bool,
    /// Copies of the batch's keys and values, back to back.
    buf: Vec<u8>,
    /// Per entry: offset in `buf`, key length, value length.
    items: Vec<(usize, usize, usize)>,
    next: usize,
    exhausted: bool,
}

impl<'t, 's, S: PageSource> Cursor<'t, 's, S> {
    pub(super) fn new(tree: &'t BTree<'s, S>, start: &[u8]) -> Self {
        Cursor {
            tree,
            resume: start.to_vec(),
            inclusive: true,
            buf: Vec::new(),
            items: Vec::new(),
            next: 0,
            exhausted: false,
        }
    }

    /// The next key and value in order, or `None` after the last.
    ///
    /// # Errors
    /// As [`BTree::scan`]; the cursor may be called again after an error.
    #[allow(clippy::should_implement_trait)] // Lending: the items borrow the cursor.
    pub fn next(&mut self) -> Result<Option<KeyValue<'_>>, BTreeError> {
        if self.next == self.items.len() {
            if self.exhausted {
                return Ok(None);
            }
            self.refill()?;
            if self.items.is_empty() {
                return Ok(None);
            }
        }
        let (at, klen, vlen) = self.items[self.next];
        self.next += 1;
        Ok(Some((&self.buf[at..at + klen], &self.buf[at + klen..at + klen + vlen])))
    }

    /// Copies the entries after `resume`, up to a page's worth of bytes (at least one).
    fn refill(&mut self) -> Result<(), BTreeError> {
        let Cursor { tree, resume, inclusive, buf, items, next, exhausted } = self;
        tree.check_key(resume)?;
        buf.clear();
        items.clear();
        *next = 0;
        let budget = tree.source.page_size();
        let mut more = false;
        tree.scan_from(resume, *inclusive, |k, v| {
            if !items.is_empty() && buf.len() + k.len() + v.len() > budget {
                more = true;
                return false;
            }
            items.push((buf.len(), k.len(), v.len()));
            buf.extend_from_slice(k);
            buf.extend_from_slice(v);
            true
        })?;
        match items.last() {
            Some(&(at, klen, _)) if more => {
                resume.clear();
                resume.extend_from_slice(&buf[at..at + klen]);
                *inclusive = false;
            }
            _ => *exhausted = true,
        }
        Ok(())
    }
}
