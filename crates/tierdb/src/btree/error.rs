//! Errors of the access-method layer: the B+-tree and the catalog of named trees.
//!
//! Bad input (sizes, names) and bad bytes read from a page (headers, bounds, checksums)
//! are errors; bugs in the tree's own logic are assertions.

use crate::ids::PageId;

/// Errors of B+-tree and catalog operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BTreeError {
    /// A key longer than [`BTREE_KEY_BYTES_MAX`](crate::limits::BTREE_KEY_BYTES_MAX).
    #[error("key of {len} bytes is longer than the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    /// A value longer than the page size allows (see [`super::value_bytes_max`]).
    #[error("value of {len} bytes is longer than the limit of {max} bytes for {page_size}-byte pages")]
    ValueTooLarge { len: usize, max: usize, page_size: usize },
    /// `update_in_place` of a range outside the stored value.
    #[error("in-place update of {len} bytes at offset {offset} is outside the value of {value_len} bytes")]
    OffsetOutOfRange { offset: usize, len: usize, value_len: usize },
    /// The page does not hold a B+-tree node (wrong magic or kind), or not a root.
    #[error("{pid} is not a B+-tree node: {detail}")]
    NotATree { pid: PageId, detail: String },
    /// The page holds a node whose header or entries are inconsistent.
    #[error("corrupted B+-tree node in {pid}: {detail}")]
    Corrupted { pid: PageId, detail: String },
    /// An operation restarted more often than
    /// [`BTREE_RESTARTS_MAX`](crate::limits::BTREE_RESTARTS_MAX): a bug, not contention.
    #[error("B+-tree {op} restarted {restarts} times")]
    RestartLimit { op: &'static str, restarts: u32 },
    /// A tree name that is empty or too long.
    #[error("tree name {name:?} is invalid: {detail}")]
    BadTreeName { name: String, detail: String },
    /// `create_tree` of a name the catalog already holds.
    #[error("a tree named {name:?} already exists")]
    TreeExists { name: String },
    /// `open_tree` / `drop_tree` of a name the catalog does not hold.
    #[error("no tree named {name:?}; the catalog holds {known:?}")]
    NoSuchTree { name: String, known: Vec<String> },
    /// The catalog holds [`CATALOG_TREES_MAX`](crate::limits::CATALOG_TREES_MAX) trees.
    #[error("the catalog is full: it holds the maximum of {max} trees")]
    CatalogFull { max: usize },
    /// The catalog page is neither zero (empty catalog) nor a valid catalog.
    #[error("corrupted catalog in {pid}: {detail}")]
    CatalogCorrupted { pid: PageId, detail: String },
}
