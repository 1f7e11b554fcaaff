//! Point lookups: [`BTree::get`], [`BTree::get_part`] and [`BTree::read_into`].
//!
//! This is the hot path. `get_part` descends optimistically ([`BTree::descend_lines`])
//! and reads the leaf line-grained under a shared latch (exclusive if a cache-line fault
//! must load lines). `read_into` reads a leaf that is resident whole optimistically too:
//! nothing it copies counts until the leaf's version validates, and a changed page
//! restarts the lookup (at most `BTREE_OPTIMISTIC_RESTARTS_MAX` times, then the latched
//! way). Checks here are `debug_assert!`s: release builds do no extra work per lookup.

use std::ops::Range;

use crate::Result;
use crate::ids::PageId;
use crate::limits::BTREE_OPTIMISTIC_RESTARTS_MAX;
use crate::page::LinePage;
use crate::page::OptimisticPage;
use crate::page::PageSource;

use super::descend::inner_step;
use super::error::BTreeError;
use super::lines;
use super::node::{self, Kind, NodeRef};
use super::{BTree, Lines};

/// A key found in its leaf ([`BTree::find`]).
pub(super) struct Found<'s, S: PageSource + 's> {
    pub(super) pid: PageId,
    pub(super) leaf: Lines<'s, S>,
    pub(super) h: node::Header,
    pub(super) pos: usize,
}

/// The outcome of one optimistic attempt of [`BTree::read_into`].
enum Attempt {
    /// Read and validated: the bytes copied (`None`: no such key), or `Err(len)` if the
    /// part of `len` bytes does not fit the buffer.
    Done(std::result::Result<Option<usize>, usize>),
    /// A page changed under the read: try again.
    Restart,
    /// Take the latched way of `get_part` (a page does not parse, or the leaf must be
    /// fixed exclusive to load lines).
    Latched,
}

/// Looks `key` up in the leaf `leaf` (page `pid`) read optimistically and copies bytes
/// `part` of its value into `out`; the result counts only if the leaf validates after.
#[inline]
fn copy_from_leaf<G: OptimisticPage>(
    leaf: &G,
    pid: PageId,
    key: &[u8],
    part: &Range<usize>,
    out: &mut [u8],
) -> Attempt {
    let found = (|| -> std::result::Result<Option<&[u8]>, BTreeError> {
        let node = NodeRef::parse(leaf, pid)?;
        if !node.is_leaf() {
            return Err(BTreeError::Corrupted { pid, detail: "an inner node where its parent has a leaf".into() });
        }
        match node.lower_bound(key)? {
            (pos, true) => Ok(Some(node.value(pos)?)),
            _ => Ok(None),
        }
    })();
    let copied = match found {
        Ok(Some(value)) => {
            let end = part.end.min(value.len());
            let bytes = &value[part.start.min(end)..end];
            match out.get_mut(..bytes.len()) {
                Some(o) => {
                    o.copy_from_slice(bytes);
                    Ok(Some(bytes.len()))
                }
                None => Err(bytes.len()),
            }
        }
        Ok(None) => Ok(None),
        Err(_) => return if leaf.validate() { Attempt::Latched } else { Attempt::Restart },
    };
    if leaf.validate() { Attempt::Done(copied) } else { Attempt::Restart }
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// The leaf that holds `key` (fixed line-grained, shared or exclusive), its header
    /// and the key's slot; `None` if the key is absent.
    #[inline]
    pub(super) fn find(&self, key: &[u8], exclusive: bool) -> Result<Option<Found<'s, S>>, BTreeError> {
        let (pid, mut leaf) = self.descend_lines(key, exclusive)?;
        let h = lines::leaf_header(&mut leaf, self.source.page_size())?;
        match lines::lower_bound(&mut leaf, &h, key)? {
            (pos, true) => Ok(Some(Found { pid, leaf, h, pos })),
            _ => Ok(None),
        }
    }

    /// Calls `f` with the value of `key`, in place in the leaf (under its shared latch:
    /// `f` must not use the tree), and returns what `f` returns.
    ///
    /// # Errors
    /// `KeyTooLarge`; `Corrupted`/`NotATree` for bad pages; the source's fix errors.
    #[inline]
    pub fn get<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, BTreeError> {
        self.get_part(key, 0..usize::MAX, f)
    }

    /// Calls `f` with bytes `part` of the value of `key` (clipped to the value's
    /// length), like [`get`](Self::get). On cache-line-grained pages only the lines of
    /// that part of the value are loaded, not the whole value (a YCSB read of one field).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    #[inline]
    pub fn get_part<R>(
        &self,
        key: &[u8],
        part: Range<usize>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, BTreeError> {
        self.check_key(key)?;
        // Shared first; a leaf whose lines must be loaded while others read it is fixed
        // again exclusive (a cache-line fault changes the page).
        let mut f = Some(f);
        match self.get_with(key, &part, false, &mut f) {
            Err(e) if e.needs_exclusive() => self.get_with(key, &part, true, &mut f),
            r => r,
        }
    }

    /// Copies bytes `part` of the value of `key` (clipped to the value's length, as
    /// [`get_part`](Self::get_part) clips) to the front of `out`, and returns how many;
    /// `None` if the key is absent.
    ///
    /// Where the source hands out a leaf resident whole without loading anything
    /// ([`PageSource::fix_child_resident`]), the leaf is read optimistically, like the
    /// inner nodes: no latch is taken, the bytes are copied, and the copy counts only if
    /// the leaf's version is unchanged afterwards; else the lookup starts again. A leaf
    /// that is not resident is fixed shared and line-grained from the same parent, as
    /// `get_part` fixes it (loading what is missing). A page that does not parse, a
    /// leaf that must be fixed exclusive, or [`BTREE_OPTIMISTIC_RESTARTS_MAX`] restarts
    /// take the latched way of `get_part`, which reports what is corrupt.
    ///
    /// # Errors
    /// `OutputTooSmall` if the part does not fit `out`; those of `get_part`.
    #[inline]
    pub fn read_into(&self, key: &[u8], part: Range<usize>, out: &mut [u8]) -> Result<Option<usize>, BTreeError> {
        self.check_key(key)?;
        for _ in 0..BTREE_OPTIMISTIC_RESTARTS_MAX {
            match self.read_optimistic(key, &part, out)? {
                Attempt::Done(Ok(n)) => return Ok(n),
                Attempt::Done(Err(len)) => {
                    return Err(BTreeError::OutputTooSmall { len, capacity: out.len() });
                }
                Attempt::Restart => {}
                Attempt::Latched => break,
            }
        }
        let copied = self.get_part(key, part, |v| match out.get_mut(..v.len()) {
            Some(o) => {
                o.copy_from_slice(v);
                Ok(v.len())
            }
            None => Err(v.len()),
        })?;
        match copied {
            None => Ok(None),
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(len)) => Err(BTreeError::OutputTooSmall { len, capacity: out.len() }),
        }
    }

    /// One optimistic attempt of [`read_into`](Self::read_into): descends as
    /// [`descend_with`](Self::descend_with) does, then reads the leaf optimistically if
    /// the source hands it out so.
    #[inline]
    fn read_optimistic(&self, key: &[u8], part: &Range<usize>, out: &mut [u8]) -> Result<Attempt, BTreeError> {
        let mut pid = self.root;
        let mut page = self.source.fix_optimistic(pid)?;
        let mut level = None;
        loop {
            let step = inner_step(&page, pid, level, key);
            if !page.validate() {
                return Ok(Attempt::Restart);
            }
            let Ok(step) = step else { return Ok(Attempt::Latched) };
            let Some((offset, raw, next_level)) = step else {
                // The root is a leaf, fixed whole.
                return Ok(copy_from_leaf(&page, pid, key, part, out));
            };
            if next_level == 0 {
                let leaf = match self.source.fix_child_resident(&page, offset, raw) {
                    Ok(Some(leaf)) => leaf,
                    // Not resident whole: the leaf latched from the same parent, as the
                    // latched lookup would fix it (no second descent).
                    Ok(None) => return self.copy_from_latched_leaf(&page, offset, raw, key, part, out),
                    Err(_) if !page.validate() => return Ok(Attempt::Restart),
                    Err(e) => return Err(e.into()),
                };
                let next = self.source.child_pid(raw);
                if !page.validate() {
                    return Ok(Attempt::Restart);
                }
                return Ok(copy_from_leaf(&leaf, next, key, part, out));
            }
            let child = match self.source.fix_child_optimistic(&page, offset, raw) {
                Ok(child) => child,
                Err(_) if !page.validate() => return Ok(Attempt::Restart),
                Err(e) => return Err(e.into()),
            };
            pid = self.source.child_pid(raw);
            if !page.validate() {
                return Ok(Attempt::Restart);
            }
            page = child;
            level = Some(next_level);
        }
    }

    /// The leaf under `parent` (read optimistically; the reference `raw` at `offset`),
    /// fixed shared and line-grained as [`get_part`](Self::get_part) fixes it, and bytes
    /// `part` of `key`'s value copied into `out`. A cache-line fault that needs the leaf
    /// exclusive hands over to `get_part` (`Latched`).
    #[inline(never)]
    fn copy_from_latched_leaf(
        &self,
        parent: &S::Optimistic<'s>,
        offset: usize,
        raw: u64,
        key: &[u8],
        part: &Range<usize>,
        out: &mut [u8],
    ) -> Result<Attempt, BTreeError> {
        let mut leaf = match self.source.fix_child_lines(parent, offset, raw, false) {
            Ok(leaf) => leaf,
            Err(_) if !parent.validate() => return Ok(Attempt::Restart),
            Err(e) if e.needs_exclusive() => return Ok(Attempt::Latched),
            Err(e) => return Err(e.into()),
        };
        if !parent.validate() {
            return Ok(Attempt::Restart);
        }
        let step = (|| -> Result<Option<std::result::Result<Option<usize>, usize>>, BTreeError> {
            let h = lines::header(&mut leaf, self.source.page_size())?;
            if h.kind != Kind::Leaf {
                return Ok(None); // the root split between the two reads
            }
            let (pos, found) = lines::lower_bound(&mut leaf, &h, key)?;
            if !found {
                return Ok(Some(Ok(None)));
            }
            let (_, _, vs, vlen) = lines::entry(&mut leaf, &h, pos)?;
            let end = part.end.min(vlen);
            let start = part.start.min(end);
            let bytes = leaf.read(vs + start, end - start)?;
            Ok(Some(match out.get_mut(..bytes.len()) {
                Some(o) => {
                    o.copy_from_slice(bytes);
                    Ok(Some(bytes.len()))
                }
                None => Err(bytes.len()),
            }))
        })();
        match step {
            Ok(Some(done)) => Ok(Attempt::Done(done)),
            Ok(None) => Ok(Attempt::Restart),
            Err(e) if e.needs_exclusive() => Ok(Attempt::Latched),
            Err(e) => Err(e),
        }
    }

    #[inline]
    fn get_with<R>(
        &self,
        key: &[u8],
        part: &Range<usize>,
        exclusive: bool,
        f: &mut Option<impl FnOnce(&[u8]) -> R>,
    ) -> Result<Option<R>, BTreeError> {
        let Found { mut leaf, h, pos, .. } = match self.find(key, exclusive)? {
            Some(f) => f,
            None => return Ok(None),
        };
        let (_, _, vs, vlen) = lines::entry(&mut leaf, &h, pos)?;
        let end = part.end.min(vlen);
        let start = part.start.min(end);
        let bytes = leaf.read(vs + start, end - start)?;
        let f = f.take().expect("f is called once, after the last fallible step");
        Ok(Some(f(bytes)))
    }
}
