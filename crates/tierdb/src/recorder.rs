//! A hook that sees every page access of a buffer manager, for recording traces that
//! the simulator (crates/tierdb-sim) replays through the same policies.
//!
//! The buffer manager calls the recorder at the start of each fix, allocation and
//! free, before it acts, from the fixing thread; a recorder must be cheap and
//! thread-safe. With no recorder installed the cost is one load of a `OnceLock`.

use crate::ids::PageId;

/// What a recorded access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A whole-page shared or optimistic fix.
    Read,
    /// A whole-page exclusive fix.
    Write,
    /// A line-grained shared fix (may be served in place on NVM).
    ReadLines,
    /// A line-grained exclusive fix.
    WriteLines,
    /// A page allocated (recorded with its new id).
    Alloc,
    /// A page freed.
    Free,
}

/// Receives the accesses of a buffer manager.
pub trait AccessRecorder: Send + Sync {
    /// An access of `kind` to page `pid` is about to happen (called before the manager
    /// acts, from the accessing thread).
    fn access(&self, kind: AccessKind, pid: PageId);
    /// A phase boundary: `bulk-load-on`, `bulk-load-off`, `warmup`, `measure`.
    fn marker(&self, name: &'static str);
}
