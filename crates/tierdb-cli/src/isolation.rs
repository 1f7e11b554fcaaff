//! `tierdb check-isolation`: the concurrent randomised history checker on one
//! architecture ([`tierdb_bench::experiments::isolation`], `docs/isolation.md`): the
//! setup, the transactions by outcome, and the anomalies by kind with their first
//! examples. Exits non-zero when an anomaly that the level judged forbids was found.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table as TextTable;
use tierdb::ByteSize;
use tierdb::arch::{ArchConfig, Architecture};
use tierdb::db::Isolation;
use tierdb::device::{DeviceProfile, EmulationMode};
use tierdb::wal::Durability;
use tierdb_bench::experiments::isolation::{self, IsolationConfig, IsolationReport, default_judge};
use tierdb_bench::harness::remove_files_on_interrupt;

/// Examples printed per anomaly kind (the JSON report keeps all it has).
const EXAMPLES_PRINTED: usize = 3;

#[derive(Args, Debug)]
pub struct CheckIsolationArgs {
    /// Architecture: main-memory, ssd-bm, basic-nvm-bm, three-tier, nvm-direct,
    /// mmap-read, mmap-se1, mmap-se2, nvcache, nvsql.
    #[arg(long, default_value = "ssd-bm")]
    arch: String,
    /// The DRAM tier.
    #[arg(long, default_value = "64MiB")]
    dram: ByteSize,
    /// The NVM tier (architectures with NVM).
    #[arg(long, default_value = "256MiB")]
    nvm: ByteSize,
    /// Worker threads, each running transactions back to back.
    #[arg(long, default_value_t = 4)]
    threads: u32,
    /// Registers (keys read and read-modify-written); fewer make more conflicts.
    #[arg(long, default_value_t = 8)]
    keys: u32,
    /// Bank accounts (transfers between two; audits read all).
    #[arg(long, default_value_t = 8)]
    accounts: u32,
    /// How long the workers run: 30s, 2m, 500ms, or seconds.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,
    /// The database's isolation: snapshot, read-committed or read-uncommitted.
    #[arg(long, default_value = "snapshot")]
    isolation: Isolation,
    /// The level the history is judged against [default: --isolation's; read
    /// committed for read-uncommitted, so that such a run shows the dirty reads it lets
    /// through and fails].
    #[arg(long)]
    judge: Option<Isolation>,
    /// Draws every worker's transactions (the interleaving is the machine's).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// What a commit waits for: sync or group (none logs nothing, so nothing could
    /// roll back).
    #[arg(long, default_value = "group")]
    durability: Durability,
    /// Let transactions write their keys in any order (deadlocks become possible: a
    /// database without deadlock detection then waits for its lock timeout).
    #[arg(long)]
    unordered_writes: bool,
    /// Most bytes of before-images the database keeps for snapshots
    /// (DbConfig::version_bytes_max): a small value makes old snapshots end with
    /// `SnapshotTooOld` [default: 256MiB].
    #[arg(long)]
    version_bytes_max: Option<ByteSize>,
    /// Emulation mode of every device: off, spin or model.
    #[arg(long, default_value = "off")]
    mode: EmulationMode,
    /// Page size [default: the architecture's].
    #[arg(long)]
    page_size: Option<ByteSize>,
    /// NVM profile: a preset name or a TOML file.
    #[arg(long, default_value = "optane-dcpmm")]
    nvm_profile: String,
    /// SSD profile: a preset name or a TOML file.
    #[arg(long, default_value = "nvme-ssd")]
    ssd_profile: String,
    /// Directory for the database (default: the temporary directory).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
    /// Directory for the NVM pool file (default /dev/shm).
    #[arg(long)]
    nvm_dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `30s`, `2m`, `500ms`, `1.5` (seconds).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (number, unit_secs) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let secs =
        number.trim().parse::<f64>().map_err(|_| format!("{s:?}: expected e.g. 30s, 2m, 500ms or 1.5"))? * unit_secs;
    let max = isolation::DURATION_MAX.as_secs_f64();
    if !(secs > 0.0 && secs <= max) {
        return Err(format!("{s:?} is outside (0, {max}] seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl CheckIsolationArgs {
    fn config(&self) -> Result<IsolationConfig> {
        let arch: Architecture = self.arch.parse()?;
        let name = format!("tierdb-{}-isolation", std::process::id());
        let ssd_dir = self.ssd_dir.clone().unwrap_or_else(std::env::temp_dir);
        let mut a = ArchConfig::new(arch, self.dram, self.nvm, &name, &ssd_dir)?;
        if let Some(d) = &self.nvm_dir {
            a.nvm_path = d.join(format!("{name}.nvm"));
        }
        if let Some(p) = self.page_size {
            a.page_size = usize::try_from(p.bytes()).context("--page-size")?;
        }
        a.mode = self.mode;
        a.nvm_profile = DeviceProfile::load(&self.nvm_profile).context("--nvm-profile")?;
        a.ssd_profile = DeviceProfile::load(&self.ssd_profile).context("--ssd-profile")?;
        let mut c = IsolationConfig::new(a, self.isolation);
        c.judged_as = self.judge.unwrap_or(default_judge(self.isolation));
        c.threads = self.threads;
        c.keys = self.keys;
        c.accounts = self.accounts;
        c.duration = self.duration;
        c.seed = self.seed;
        c.durability = self.durability;
        c.ordered_writes = !self.unordered_writes;
        if let Some(b) = self.version_bytes_max {
            c.version_bytes_max = b.bytes();
        }
        c.check()?;
        Ok(c)
    }
}

pub fn run(args: CheckIsolationArgs) -> Result<()> {
    let cfg = args.config()?;
    remove_files_on_interrupt()?;
    let report = isolation::run(&cfg).with_context(|| format!("check-isolation on {}", cfg.arch.arch))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    let a = &report.analysis;
    if a.forbidden_found > 0 {
        bail!(
            "{} anomal{} that {} forbids (see the report)",
            a.forbidden_found,
            plural(a.forbidden_found),
            a.judged_as
        );
    }
    Ok(())
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

fn print_report(r: &IsolationReport) {
    let s = &r.setup;
    println!(
        "tierdb {} check-isolation: {} | mode {} | page {} | DRAM {}{} | {} thread(s) | {} keys, {} accounts | {:.1} s | seed {}",
        r.version,
        s.arch,
        s.mode,
        ByteSize(s.page_size_bytes as u64),
        ByteSize(s.dram_bytes),
        if s.nvm_bytes > 0 { format!(" · NVM {}", ByteSize(s.nvm_bytes)) } else { String::new() },
        s.threads,
        s.keys,
        s.accounts,
        s.duration_secs,
        s.seed
    );
    println!(
        "isolation {}, judged as {} | durability {} | writes in {} key order | before-images for snapshots up to {}",
        s.isolation,
        s.judged_as,
        s.durability,
        if s.ordered_writes { "ascending" } else { "any" },
        ByteSize(s.version_bytes_max)
    );
    let o = &r.outcomes;
    println!(
        "run: {:.1} s, {} transactions ({} register, {} transfer, {} audit){}, {} reads, {} writes",
        r.run_secs,
        o.txns,
        o.by_kind[0],
        o.by_kind[1],
        o.by_kind[2],
        if r.history_truncated { " (the history reached its bound: the run stopped early)" } else { "" },
        o.reads,
        o.writes
    );
    println!(
        "committed {} | aborted: {} rolled back on purpose, {} write conflicts, {} deadlocks, {} lock timeouts, \
         {} snapshots too old, {} failed",
        o.committed,
        o.voluntary_rollbacks,
        o.write_conflicts,
        o.deadlocks,
        o.lock_timeouts,
        o.snapshots_too_old,
        o.txn_failed
    );
    let mut t = TextTable::new();
    t.set_header(["anomaly", format!("forbidden at {}", s.judged_as).as_str(), "found"]);
    for a in &r.analysis.anomalies {
        t.add_row([a.kind.name().to_string(), if a.forbidden { "yes" } else { "no" }.to_string(), a.count.to_string()]);
    }
    println!("{t}");
    for a in r.analysis.anomalies.iter().filter(|a| a.count > 0) {
        println!("{}{}:", a.kind.name(), if a.forbidden { "" } else { " (allowed)" });
        for e in a.examples.iter().take(EXAMPLES_PRINTED) {
            println!(
                "  txns {:?}{}: {}",
                e.txns,
                e.key.as_ref().map(|k| format!(" key {k}")).unwrap_or_default(),
                e.what
            );
        }
    }
    let n = r.analysis.forbidden_found;
    if n == 0 {
        println!("OK: no anomaly that {} forbids", s.judged_as);
    } else {
        println!("FAILED: {n} anomal{} that {} forbids", plural(n), s.judged_as);
    }
}
