//! Errors of the access-method layer: the B+-tree and the catalog of named trees.
//!
//! Bad input (sizes, names) and bad bytes read from a page (headers, bounds, checksums)
//! are errors; bugs in the tree's own logic are assertions. The page source's errors
//! pass through as [`BTreeError::Buffer`] and the log's as [`BTreeError::Wal`], message
//! and source unchanged; converted into the crate's [`Error`](crate::Error) they become
//! its `Buffer` (or `Device`, `Wal`, `Policy`) again.

use crate::buffer::BufferError;
use crate::ids::PageId;
use crate::wal::WalError;

/// Errors of B+-tree and catalog operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BTreeError {
    /// A key longer than [`BTREE_KEY_BYTES_MAX`](crate::limits::BTREE_KEY_BYTES_MAX).
    #[error("key of {len} bytes is longer than the limit of {max} bytes")]
    KeyTooLarge {
        /// The key's length in bytes.
        len: usize,
        /// The limit in bytes, `BTREE_KEY_BYTES_MAX`.
        max: usize,
    },
    /// A value longer than the page size allows (see [`super::value_bytes_max`]).
    #[error("value of {len} bytes is longer than the limit of {max} bytes for {page_size}-byte pages")]
    ValueTooLarge {
        /// The value's length in bytes.
        len: usize,
        /// The limit in bytes for this page size, `value_bytes_max(page_size)`.
        max: usize,
        /// The page size of the tree's source, in bytes.
        page_size: usize,
    },
    /// `update_in_place` of a range outside the stored value.
    #[error("in-place update of {len} bytes at offset {offset} is outside the value of {value_len} bytes")]
    OffsetOutOfRange {
        /// Byte offset in the value where the write was to start.
        offset: usize,
        /// Bytes to write.
        len: usize,
        /// Length in bytes of the value stored under the key.
        value_len: usize,
    },
    /// [`read_into`](super::BTree::read_into) of a value part longer than the buffer
    /// given for it.
    #[error("the value part of {len} bytes does not fit the buffer of {capacity} bytes")]
    OutputTooSmall {
        /// Bytes of the value part asked for.
        len: usize,
        /// Bytes of the buffer.
        capacity: usize,
    },
    /// The page does not hold a B+-tree node (wrong magic or kind), or not a root.
    #[error("{pid} is not a B+-tree node: {detail}")]
    NotATree {
        /// The page that was read as a node.
        pid: PageId,
        /// What is wrong with it (magic, kind, size, fences of a non-root).
        detail: String,
    },
    /// The page holds a node whose header or entries are inconsistent.
    #[error("corrupted B+-tree node in {pid}: {detail}")]
    Corrupted {
        /// The page holding the bad node.
        pid: PageId,
        /// Which field or entry is inconsistent, with its values.
        detail: String,
    },
    /// An operation restarted more often than
    /// [`BTREE_RESTARTS_MAX`](crate::limits::BTREE_RESTARTS_MAX): a bug, not contention.
    #[error("B+-tree {op} restarted {restarts} times")]
    RestartLimit {
        /// The operation that gave up (e.g. `"descent"`).
        op: &'static str,
        /// Restarts made before giving up.
        restarts: u32,
    },
    /// [`BTree::bulk_load`](super::BTree::bulk_load) into a tree that holds entries.
    #[error("bulk load into the tree rooted at {root}, which is not empty ({detail})")]
    BulkLoadNotEmpty {
        /// The tree's root page.
        root: PageId,
        /// What the root holds (its level and entry count).
        detail: String,
    },
    /// [`BTree::bulk_load`](super::BTree::bulk_load) input whose keys do not strictly
    /// increase (a key repeated or out of order).
    #[error("bulk load: record {position} has key {key:02x?}, not above the previous key {previous:02x?}")]
    BulkLoadUnsorted {
        /// The record's position in the input, counted from 0.
        position: u64,
        /// Its key.
        key: Vec<u8>,
        /// The key of the record before it.
        previous: Vec<u8>,
    },
    /// [`BTree::bulk_load`](super::BTree::bulk_load) on a tree that logs its changes:
    /// load through a handle without a log, then checkpoint.
    #[error(
        "bulk load into the tree rooted at {root}, which logs its changes: load it through a handle \
         without a log and checkpoint afterwards"
    )]
    BulkLoadLogged {
        /// The tree's root page.
        root: PageId,
    },
    /// A bulk-load fill factor outside `min..=max`.
    #[error("bulk-load fill factor {fill} is outside {min}..={max}")]
    BulkLoadFill {
        /// The fill factor asked for.
        fill: f64,
        /// The smallest accepted, `BTREE_BULK_FILL_MIN`.
        min: f64,
        /// The largest accepted, 1.0 (full pages).
        max: f64,
    },
    /// A tree name that is empty or too long.
    #[error("tree name {name:?} is invalid: {detail}")]
    BadTreeName {
        /// The name as given.
        name: String,
        /// Why it is refused (empty, or its length against the limit).
        detail: String,
    },
    /// `create_tree` of a name the catalog already holds.
    #[error("a tree named {name:?} already exists")]
    TreeExists {
        /// The name asked for.
        name: String,
    },
    /// `open_tree` / `drop_tree` of a name the catalog does not hold.
    #[error("no tree named {name:?}; the catalog holds {known:?}")]
    NoSuchTree {
        /// The name asked for.
        name: String,
        /// Every name the catalog holds, to show in the message.
        known: Vec<String>,
    },
    /// The catalog holds [`CATALOG_TREES_MAX`](crate::limits::CATALOG_TREES_MAX) trees.
    #[error("the catalog is full: it holds the maximum of {max} trees")]
    CatalogFull {
        /// The catalog's capacity in trees, `CATALOG_TREES_MAX`.
        max: usize,
    },
    /// The catalog page is neither zero (empty catalog) nor a valid catalog.
    #[error("corrupted catalog in {pid}: {detail}")]
    CatalogCorrupted {
        /// The catalog page.
        pid: PageId,
        /// What is wrong with it.
        detail: String,
    },
    /// The page source failed: a fix, an allocation or a free (I/O, a corrupted page, a
    /// full tier).
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// The tree's log ([`TreeLog`](super::TreeLog)) failed; boxed to keep this enum
    /// small.
    #[error(transparent)]
    Wal(Box<WalError>),
}

impl BTreeError {
    /// True for the page source's [`BufferError::NeedsExclusive`]: retry the access with
    /// an exclusive fix.
    pub fn needs_exclusive(&self) -> bool {
        matches!(self, BTreeError::Buffer(e) if e.needs_exclusive())
    }

    /// True for the page source's [`BufferError::Full`]: a tier holds no more pages.
    pub fn is_full(&self) -> bool {
        matches!(self, BTreeError::Buffer(e) if e.is_full())
    }

    /// The page source's error, if this is one.
    pub fn as_buffer(&self) -> Option<&BufferError> {
        match self {
            BTreeError::Buffer(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WalError> for BTreeError {
    fn from(e: WalError) -> Self {
        BTreeError::Wal(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tree operation returns this error; it carries a [`BufferError`] unboxed (the
    /// common failure, a fix's), and stays no larger than the umbrella error (80 bytes).
    const BTREE_ERROR_BYTES_MAX: usize = 64;

    #[test]
    fn the_btree_error_stays_small() {
        let size = std::mem::size_of::<BTreeError>();
        assert!(size <= BTREE_ERROR_BYTES_MAX, "BTreeError is {size} bytes, the bound {BTREE_ERROR_BYTES_MAX}");
        assert!(size <= std::mem::size_of::<crate::Error>(), "BTreeError is larger than the umbrella error");
    }
}
