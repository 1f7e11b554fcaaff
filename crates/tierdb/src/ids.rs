//! Identifiers that cross module boundaries.

use serde::{Deserialize, Serialize};

/// A page of the database: page `n` lives at byte `n x page size` of the SSD file.
/// Page 0 holds the superblock and is never a data page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageId(pub u64);

impl PageId {
    /// The superblock's page.
    pub const SUPERBLOCK: PageId = PageId(0);
    /// The catalog of named trees: the first page every page source allocates.
    pub const CATALOG: PageId = PageId(1);

    /// The page number: the page lives at byte `get() x page size` of the SSD file.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "page {}", self.0)
    }
}
