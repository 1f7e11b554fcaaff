//! `--trace`: a recorder of every page access of a run's buffer manager, installed before
//! the measured run and saved after it (replayed by `tierdb sim`, docs/sim.md).

use std::path::Path;

use anyhow::bail;
use tierdb::arch::Architecture;

use crate::harness::progress::Progress;

/// Installs a trace recorder in `engine`'s buffer manager if `path` is given.
///
/// # Errors
/// The architecture has no buffer manager to record.
pub fn start_recording(
    engine: &tierdb::arch::Engine,
    path: Option<&Path>,
    arch: Architecture,
) -> anyhow::Result<Option<std::sync::Arc<tierdb_sim::record::TraceRecorder>>> {
    let Some(path) = path else { return Ok(None) };
    let tierdb::arch::Engine::Buffer(bm) = engine else {
        bail!("--trace {}: {arch} has no buffer manager whose accesses could be recorded", path.display())
    };
    let rec = std::sync::Arc::new(tierdb_sim::record::TraceRecorder::new(
        engine.page_size() as u32,
        format!("tierdb bench ycsb --arch {arch} (policy {})", bm.policy().name()),
    ));
    bm.set_recorder(rec.clone());
    Ok(Some(rec))
}

/// Writes the recorded trace.
///
/// # Errors
/// I/O errors writing it.
pub fn finish_recording(
    rec: Option<std::sync::Arc<tierdb_sim::record::TraceRecorder>>,
    path: Option<&Path>,
    progress: &Progress,
) -> anyhow::Result<()> {
    let (Some(rec), Some(path)) = (rec, path) else { return Ok(()) };
    let n = rec.save(path)?;
    progress.println(&format!("trace: {n} records written to {}", path.display()));
    Ok(())
}
