//! Logging of tree changes: the [`TreeLog`] a logged tree reports to, the leaf changes
//! it reports, and the structure-change bundle ([`Smo`]) that holds pages until their
//! images are logged.
//!
//! Invariants: every record is written while its page is still latched exclusive, so the
//! records of one page are in the log in the order of its changes; the LSN a record
//! returns is stamped on the node (its page LSN) and on the frame. A structure change's
//! images and frees count only once its end is logged, and none of its pages may be
//! written out before that end (the frames carry the end's LSN).

use super::BTreeError;
use super::node::{self, NodeMut};
use super::{BTree, Chain, Exclusive, Lines};
use crate::Result;
use crate::ids::{Lsn, PageId, TxnId};
use crate::page::ExclusivePage;
use crate::page::LinePage;
use crate::page::PageSource;
use crate::wal::WalError;

/// A change to one leaf, as a logged tree operation reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafChange<'a> {
    /// `key` now maps to `value`; before, to `old` (`None`: absent).
    Put {
        /// The full key.
        key: &'a [u8],
        /// The whole new value.
        value: &'a [u8],
        /// The whole previous value; `None` if the key was absent (an insert).
        old: Option<&'a [u8]>,
    },
    /// `key`, which mapped to `old`, is gone.
    Delete {
        /// The full key that was removed.
        key: &'a [u8],
        /// The whole value it held.
        old: &'a [u8],
    },
    /// Bytes `offset..offset + value.len()` of `key`'s value are now `value`; before,
    /// `old` (as long as `value`). The rest of the value, and its length, did not change:
    /// an in-place update logs only the bytes it wrote.
    Patch {
        /// The full key whose value changed.
        key: &'a [u8],
        /// Byte offset in the value where the written bytes start.
        offset: usize,
        /// The bytes written.
        value: &'a [u8],
        /// The bytes they replaced, as many as `value`.
        old: &'a [u8],
    },
}

/// Where a tree logs its changes (the database's transactions implement it). Every
/// call is made while the page is still latched exclusive, so records of one page are
/// in the log in the order of its changes; the returned LSN is stamped on the page.
pub trait TreeLog: Sync {
    /// A change to leaf `page` of the tree rooted at `root`: redo applies it to that
    /// page, undo reverses it through the tree.
    ///
    /// # Errors
    /// The log's errors (the change is then not durable; the caller's operation fails).
    fn leaf_change(&self, root: PageId, page: PageId, change: LeafChange<'_>) -> Result<Lsn, WalError>;

    /// Starts a structure change (split, merge, root change, a tree's pages freed):
    /// the images and frees logged with its id count only once its end is logged.
    fn smo_begin(&self) -> TxnId;

    /// The full bytes of a page the structure change `smo` wrote: redo only.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_image(&self, smo: TxnId, page: PageId, bytes: &[u8]) -> Result<Lsn, WalError>;

    /// A page the structure change `smo` frees.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_free(&self, smo: TxnId, page: PageId) -> Result<Lsn, WalError>;

    /// The end of structure change `smo`: from here on it counts. Returns its LSN,
    /// which the change's pages must not be written out before.
    ///
    /// # Errors
    /// As [`leaf_change`](Self::leaf_change).
    fn smo_end(&self, smo: TxnId) -> Result<Lsn, WalError>;
}

/// Pages a structure change holds until it is logged: those it is done with
/// (`touched`) and those it frees (`to_free`), besides the descent's chain.
pub(crate) struct Smo<'s, S: PageSource + 's> {
    pub(super) touched: Vec<(PageId, Exclusive<'s, S>)>,
    pub(super) to_free: Vec<(PageId, Exclusive<'s, S>)>,
}

impl<'s, S: PageSource> Smo<'s, S> {
    pub(super) fn new() -> Self {
        Smo { touched: Vec::new(), to_free: Vec::new() }
    }
}

impl<'s, S: PageSource> BTree<'s, S> {
    /// Ends a structure change: logs the images of every page of the chain and of the
    /// change that was written, the pages it frees and its end, as one unit; stamps the
    /// pages (the node's LSN with its image's, the frame's with the end's, so that no
    /// page of the change is written out before the whole change is durable); then
    /// frees the pages to free and releases the rest.
    pub(super) fn finish_smo(&self, chain: &mut Chain<'s, S>, smo: Smo<'s, S>) -> Result<(), BTreeError> {
        let Smo { mut touched, to_free } = smo;
        if let Some(log) = self.log {
            let wrote = |g: &Exclusive<'s, S>| g.wrote();
            if chain.iter().any(|(_, g)| wrote(g)) || !touched.is_empty() || !to_free.is_empty() {
                let id = log.smo_begin();
                for (pid, page) in chain.iter_mut().chain(touched.iter_mut()) {
                    if page.wrote() {
                        let lsn = log.smo_image(id, *pid, page)?;
                        NodeMut::trusted(page, *pid).set_page_lsn(lsn);
                        // The frame learns the image's LSN too (the end's follows): its
                        // first-update LSN must not be past the record that redoes it
                        // (`nvsql` keeps the log back to it).
                        page.set_page_lsn(lsn);
                        page.image_logged();
                    }
                }
                for (pid, _) in &to_free {
                    log.smo_free(id, *pid)?;
                }
                let end = log.smo_end(id)?;
                for (_, page) in chain.iter_mut().chain(touched.iter_mut()) {
                    if page.wrote() {
                        page.set_page_lsn(end);
                    }
                }
            }
        }
        drop(touched);
        for (_, page) in to_free {
            self.source.free(page)?;
        }
        Ok(())
    }

    /// The value at `vs..vs + vlen` of a leaf, copied, when changes are logged (the
    /// undo of the change about to be made needs it).
    pub(super) fn old_for_log(
        &self,
        leaf: &mut Lines<'_, S>,
        vs: usize,
        vlen: usize,
    ) -> Result<Option<Vec<u8>>, BTreeError> {
        match self.log {
            Some(_) => Ok(Some(leaf.read(vs, vlen)?.to_vec())),
            None => Ok(None),
        }
    }

    /// Logs a leaf change made through a line guard and stamps its LSN on the leaf.
    pub(super) fn log_leaf_lines(
        &self,
        pid: PageId,
        leaf: &mut Lines<'_, S>,
        change: LeafChange<'_>,
    ) -> Result<(), BTreeError> {
        if let Some(log) = self.log {
            let lsn = log.leaf_change(self.root, pid, change)?;
            leaf.write(node::OFF_PAGE_LSN, 8)?.copy_from_slice(&lsn.to_le_bytes());
            leaf.set_page_lsn(lsn);
        }
        Ok(())
    }

    /// Logs a leaf change made on a whole page and stamps its LSN on the leaf.
    pub(super) fn log_leaf_whole<B: std::ops::DerefMut<Target = [u8]>>(
        &self,
        pid: PageId,
        leaf: &mut B,
        change: LeafChange<'_>,
    ) -> Result<Lsn, BTreeError> {
        match self.log {
            Some(log) => {
                let lsn = log.leaf_change(self.root, pid, change)?;
                NodeMut::trusted(leaf, pid).set_page_lsn(lsn);
                Ok(lsn)
            }
            None => Ok(Lsn::NONE),
        }
    }
}
