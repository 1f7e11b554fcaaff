//! `tierdb bench wal`: commit throughput and latency of the write-ahead log alone.
//!
//! Each thread runs transactions of `--updates` update records of `--record-bytes`
//! bytes and a commit record, and commits each with `--durability`. The log buffer is
//! in DRAM (durable after `fdatasync`, concurrent commits sharing one) or in NVM
//! (durable once persisted). A commit's latency is its wall time plus, in `model`
//! mode, the device time its thread's virtual clock advanced by.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use hdrhistogram::Histogram;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::device::{DeviceProfile, EmulationMode, NvmConfig, clock};
use tierdb::wal::{Durability, Kind, LogBuffer, Lsn, RecordHead, Wal, WalConfig, WalStats};

const THREADS_MAX: u32 = 64;
const DURATION_SECS_MAX: f64 = 3600.0;
const UPDATES_MAX: u32 = 1000;
const RECORD_BYTES_MAX: usize = 64 * 1024;

#[derive(Args, Debug)]
pub struct WalArgs {
    /// Where the log buffer lives: dram or nvm.
    #[arg(long, default_value = "dram")]
    buffer: String,
    /// What a commit waits for: sync (its records durable) or group (in the buffer;
    /// flushed every --flush-interval-us).
    #[arg(long, default_value = "sync")]
    durability: Durability,
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Seconds of measured run.
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    /// Update records per transaction.
    #[arg(long, default_value_t = 1)]
    updates: u32,
    /// Payload bytes of each update record.
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// The background flusher's period.
    #[arg(long, default_value_t = 1000)]
    flush_interval_us: u64,
    /// Emulation mode of the devices: off, spin, model.
    #[arg(long, default_value = "spin")]
    mode: EmulationMode,
    #[arg(long, default_value = "optane-dcpmm")]
    nvm_profile: String,
    #[arg(long, default_value = "nvme-ssd")]
    ssd_profile: String,
    /// NVM log buffer size.
    #[arg(long, default_value = "16MiB")]
    nvm_buffer: ByteSize,
    /// Directory for the log segments (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    command: &'static str,
    version: &'static str,
    mode: EmulationMode,
    buffer: String,
    durability: Durability,
    threads: u32,
    updates_per_commit: u32,
    record_bytes: usize,
    flush_interval_us: u64,
    nvm_profile: DeviceProfile,
    ssd_profile: DeviceProfile,
    run_secs: f64,
    commits: u64,
    commits_per_sec: f64,
    /// `model` mode: commits / (wall + device time), summed over threads.
    modelled_commits_per_sec: Option<f64>,
    latency_us: Percentiles,
    wal: WalStats,
}

#[derive(Serialize)]
struct Percentiles {
    mean: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

pub fn run(args: WalArgs) -> Result<()> {
    if args.threads == 0 || args.threads > THREADS_MAX {
        bail!("--threads {} is outside 1..={THREADS_MAX}", args.threads);
    }
    if !(0.0..=DURATION_SECS_MAX).contains(&args.duration) || args.duration == 0.0 {
        bail!("--duration {} is outside (0, {DURATION_SECS_MAX}] seconds", args.duration);
    }
    if args.updates > UPDATES_MAX || args.record_bytes > RECORD_BYTES_MAX {
        bail!("--updates at most {UPDATES_MAX}, --record-bytes at most {RECORD_BYTES_MAX}");
    }
    if args.durability == Durability::None {
        bail!("--durability none logs nothing; measure sync or group");
    }
    let nvm_profile = DeviceProfile::load(&args.nvm_profile)?;
    let ssd_profile = DeviceProfile::load(&args.ssd_profile)?;
    let tmp = tempfile::Builder::new().prefix("tierdb-bench-wal-").tempdir().context("temporary directory")?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut cfg = WalConfig::new(dir.join(format!("wal-{}", std::process::id())));
    cfg.file.profile = ssd_profile.clone();
    cfg.file.mode = args.mode;
    cfg.flush_interval = Duration::from_micros(args.flush_interval_us.max(1));
    let nvm_path = NvmConfig::default_path(&format!("tierdb-bench-wal-{}", std::process::id()));
    cfg.buffer = match args.buffer.as_str() {
        "dram" => LogBuffer::Dram,
        "nvm" => {
            let mut n = NvmConfig::new(&nvm_path, args.nvm_buffer);
            n.profile = nvm_profile.clone();
            n.mode = args.mode;
            LogBuffer::Nvm(n)
        }
        other => bail!("--buffer {other:?}: expected dram or nvm"),
    };
    let result = measure(&args, &cfg);
    let _ = std::fs::remove_dir_all(&cfg.file.dir);
    let _ = std::fs::remove_file(&nvm_path);
    let (run_secs, commits, hist, virtual_ps, wal) = result?;
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
    let report = Report {
        command: "bench wal",
        version: env!("CARGO_PKG_VERSION"),
        mode: args.mode,
        buffer: args.buffer.clone(),
        durability: args.durability,
        threads: args.threads,
        updates_per_commit: args.updates,
        record_bytes: args.record_bytes,
        flush_interval_us: args.flush_interval_us,
        nvm_profile,
        ssd_profile,
        run_secs,
        commits,
        commits_per_sec: commits as f64 / run_secs,
        modelled_commits_per_sec: (args.mode == EmulationMode::Model)
            .then(|| virtual_ps.iter().map(|(c, ps)| *c as f64 / (run_secs + *ps as f64 * 1e-12)).sum::<f64>()),
        latency_us: Percentiles {
            mean: hist.mean() / 1000.0,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: hist.max() as f64 / 1000.0,
        },
        wal,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "tierdb {} bench wal: log buffer {} · durability {} · {} thread(s) · {} update(s) of {} B per commit · mode {} · nvm {} · ssd {}",
        report.version,
        report.buffer,
        report.durability,
        report.threads,
        report.updates_per_commit,
        report.record_bytes,
        report.mode,
        report.nvm_profile.name,
        report.ssd_profile.name
    );
    println!(
        "{} commits in {:.2} s: {:.0} commits/s{}",
        report.commits,
        report.run_secs,
        report.commits_per_sec,
        report.modelled_commits_per_sec.map(|m| format!(" (modelled: {m:.0}/s)")).unwrap_or_default()
    );
    let l = &report.latency_us;
    println!(
        "commit latency µs{}: mean {:.2} · p50 {:.2} · p90 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.2}",
        if args.mode == EmulationMode::Model { " (wall + modelled device time)" } else { "" },
        l.mean,
        l.p50,
        l.p90,
        l.p99,
        l.p999,
        l.max
    );
    println!(
        "log: {} records, {} bytes, {} flushes, {} syncs",
        report.wal.records, report.wal.bytes, report.wal.flushes, report.wal.syncs
    );
    Ok(())
}

type Measured = (f64, u64, Histogram<u64>, Vec<(u64, u64)>, WalStats);

fn measure(args: &WalArgs, cfg: &WalConfig) -> Result<Measured> {
    let wal = Wal::open(cfg).context("opening the log")?;
    let rate = clock::rate();
    let payload = vec![0x5Au8; args.record_bytes];
    let duration = Duration::from_secs_f64(args.duration);
    let start = Instant::now();
    let results: Vec<Result<(Histogram<u64>, u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads as u64)
            .map(|t| {
                let (wal, payload) = (&wal, &payload);
                s.spawn(move || -> Result<(Histogram<u64>, u64, u64)> {
                    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).context("histogram")?;
                    let mut commits = 0u64;
                    let v0 = clock::virtual_now_ps();
                    let mut txn = t << 48;
                    while start.elapsed() < duration {
                        txn += 1;
                        let (t0, vs) = (clock::ticks(), clock::virtual_now_ps());
                        let mut prev = Lsn::NONE;
                        for u in 0..args.updates {
                            let head = RecordHead::new(Kind::Update, txn, prev).page(u as u64 + 1);
                            prev = wal.append(&head, payload)?;
                        }
                        let lsn = wal.append(&RecordHead::new(Kind::Commit, txn, prev), &[])?;
                        wal.commit(lsn.advance(1), args.durability)?;
                        let wall_ns = rate.ns_from_ticks(clock::ticks() - t0);
                        let dev_ns = (clock::virtual_now_ps() - vs) as f64 / 1000.0;
                        hist.saturating_record((wall_ns + dev_ns).max(1.0) as u64);
                        commits += 1;
                    }
                    Ok((hist, commits, clock::virtual_now_ps() - v0))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a bench thread panicked")).collect()
    });
    let run_secs = start.elapsed().as_secs_f64();
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).context("histogram")?;
    let mut total = 0;
    let mut per_thread = Vec::new();
    for r in results {
        let (h, c, v) = r?;
        hist.add(&h).context("merging histograms")?;
        total += c;
        per_thread.push((c, v));
    }
    let stats = wal.stats();
    wal.close().context("closing the log")?;
    Ok((run_secs, total, hist, per_thread, stats))
}
