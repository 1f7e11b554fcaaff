//! Shared by the buffer-manager tests (`buffer_manager`, `batched_eviction`,
//! `page_provider`): pages that name themselves, and a byte that says which round of
//! rewrites a page last saw.

use std::sync::Arc;

use tierdb::buffer::{BufferConfig, BufferManager};
use tierdb::device::{FaultPlan, SsdConfig};
use tierdb::{ExclusivePage, PageId, PageSource};

/// Allocates `n` pages whose first 8 bytes hold their id.
#[allow(dead_code)] // not every test file uses every helper
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

/// Checks that page `pid` names itself and holds round `round` (byte 100).
#[allow(dead_code)] // not every test file uses every helper
pub fn check(bm: &BufferManager, pid: PageId, round: u8) {
    let g = bm.fix_shared(pid).unwrap();
    assert_eq!((u64::from_le_bytes(g[0..8].try_into().unwrap()), g[100]), (pid.0, round), "{pid}");
}

/// Marks page `pid` with round `round` (byte 100), making it dirty.
#[allow(dead_code)]
pub fn rewrite(bm: &BufferManager, pid: PageId, round: u8) {
    let mut g = bm.fix_exclusive(pid).unwrap();
    g[100] = round;
}

/// A pool of `frames` DRAM frames of 4 KiB over the SSD file `t.db` in `dir` (with the
/// fault plan `plan`), `eager` policy.
#[allow(dead_code)]
pub fn ssd_pool(dir: &tempfile::TempDir, frames: u64, plan: Option<&Arc<FaultPlan>>) -> BufferConfig {
    let mut c = BufferConfig::new(tierdb::ByteSize(frames * 4096));
    c.page_size = 4096;
    c.policy = "eager".into();
    let mut ssd = SsdConfig::new(dir.path().join("t.db"));
    ssd.faults = plan.cloned();
    c.ssd = Some(ssd);
    c
}

/// A pool of `dram_frames` DRAM frames of 4 KiB, `nvm_frames` NVM frames in `t.nvm` (no
/// NVM if 0) and the SSD file `t.db`, all in `dir`, with `policy` and `tech`.
#[allow(dead_code)]
pub fn tiered(
    dir: &tempfile::TempDir,
    dram_frames: u64,
    nvm_frames: u64,
    policy: &str,
    tech: tierdb::buffer::Techniques,
) -> BufferConfig {
    let mut c = BufferConfig::new(tierdb::ByteSize(dram_frames * 4096));
    c.page_size = 4096;
    c.techniques = tech;
    c.policy = policy.into();
    if nvm_frames > 0 {
        c.nvm = Some(tierdb::device::NvmConfig::new(
            dir.path().join("t.nvm"),
            tierdb::ByteSize((8192 + nvm_frames * (4096 + 64) + 4096).next_multiple_of(4096)),
        ));
    }
    c.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
    c
}
