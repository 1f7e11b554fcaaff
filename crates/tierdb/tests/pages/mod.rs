//! Shared by the buffer-manager tests (`buffer_manager`, `batched_eviction`): pages
//! that name themselves.

use tierdb::buffer::BufferManager;
use tierdb::{ExclusivePage, PageId, PageSource};

/// Allocates `n` pages whose first 8 bytes hold their id.
pub fn fill(bm: &BufferManager, n: usize) -> Vec<PageId> {
    (0..n)
        .map(|_| {
            let mut g = bm.allocate().unwrap();
            let pid = g.page_id();
            g[0..8].copy_from_slice(&pid.0.to_le_bytes());
            pid
        })
        .collect()
}
