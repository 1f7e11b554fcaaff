//! `tierdb sim`, `tierdb recommend` and `tierdb trace`: the trace-driven simulator,
//! the storage-hierarchy recommender, and trace conversion (crates/tierdb-sim). This
//! file holds what the three share: the trace input, the device profiles, capacities
//! and warm-up.

mod recommend;
mod sim;
mod traces;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Args;
use tierdb::ByteSize;
use tierdb_sim::model::Profiles;
use tierdb_sim::trace::{self, Format, ImportOptions};
use tierdb_sim::{Prepared, Warmup};

pub use recommend::{RecommendArgs, run_recommend};
pub use sim::{SimArgs, run_sim};
pub use traces::{TraceCommand, run_trace};

/// Where the trace comes from and how to read it.
#[derive(Args, Clone, Debug)]
pub struct TraceInput {
    /// The trace: tierdb binary or text, or (with --format) a block trace; zstd-compressed
    /// files are decompressed on the fly.
    pub trace: PathBuf,
    /// tierdb (binary or text), arc (the ARC paper's .lis), msr (MSR-Cambridge CSV),
    /// pg-usdt (the PostgreSQL recipe of docs/sim.md).
    #[arg(long, default_value = "tierdb")]
    pub format: String,
    /// Page size for imported block traces (ARC blocks are taken as pages).
    #[arg(long, default_value = "16KiB")]
    pub page_size: ByteSize,
}

impl TraceInput {
    pub(super) fn load(&self) -> anyhow::Result<(Prepared, f64)> {
        let t0 = Instant::now();
        let t = load_trace(&self.trace, &self.format, self.page_size)?;
        let p = Prepared::new(&t);
        Ok((p, t0.elapsed().as_secs_f64()))
    }
}

impl TraceInput {
    /// The format and import options, checked.
    pub(super) fn format_and_options(&self) -> anyhow::Result<(Format, ImportOptions)> {
        let Some(f) = Format::from_name(&self.format) else {
            bail!("unknown trace format {:?}; known: {}", self.format, Format::NAMES.join(", "))
        };
        let opts = ImportOptions { page_size_bytes: u32::try_from(self.page_size.bytes()).context("page size")? };
        Ok((f, opts))
    }
}

/// The process's peak resident set size (`VmHWM` of /proc/self/status), bytes; `None`
/// where the OS does not report it.
pub(super) fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

pub(super) fn load_trace(path: &Path, format: &str, page_size: ByteSize) -> anyhow::Result<trace::Trace> {
    let Some(f) = Format::from_name(format) else {
        bail!("unknown trace format {format:?}; known: {}", Format::NAMES.join(", "))
    };
    let opts = ImportOptions { page_size_bytes: u32::try_from(page_size.bytes()).context("page size")? };
    Ok(trace::load(path, f, opts)?)
}

/// Capacities and devices shared by `sim` and `recommend`.
#[derive(Args, Clone, Debug)]
pub struct ProfileArgs {
    #[arg(long, default_value = "dram")]
    pub dram_profile: String,
    #[arg(long, default_value = "optane-dcpmm")]
    pub nvm_profile: String,
    #[arg(long, default_value = "nvme-ssd")]
    pub ssd_profile: String,
}

impl ProfileArgs {
    pub(super) fn load(&self) -> anyhow::Result<Profiles> {
        Ok(Profiles::load(&self.dram_profile, &self.nvm_profile, &self.ssd_profile)?)
    }
}

/// A size as bytes (`256MiB`) or pages (`1000p`).
pub(super) fn pages_of(s: &str, page_bytes: u64) -> anyhow::Result<usize> {
    if let Some(p) = s.strip_suffix('p').or_else(|| s.strip_suffix("pages")) {
        return p.trim().parse().with_context(|| format!("bad page count {s:?}"));
    }
    let b: ByteSize = s.parse().with_context(|| format!("bad size {s:?} (bytes like 256MiB, or pages like 1000p)"))?;
    Ok((b.bytes() / page_bytes) as usize)
}

pub(super) fn warmup_of(s: &str) -> anyhow::Result<Warmup> {
    Ok(match s {
        "auto" => Warmup::Auto,
        "half" => Warmup::FirstHalf,
        "none" => Warmup::None,
        _ => bail!("unknown warm-up {s:?}; known: auto (the measure marker, else the first half), half, none"),
    })
}
