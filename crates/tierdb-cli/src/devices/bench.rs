//! `tierdb devices bench`: measures each tier's basic operations and sets them beside
//! the device profile's cost for the same operation.
//!
//! Every row runs `--runs` times; the table shows the median wall time per operation
//! (and the spread), the modelled time per operation from the device counters, and
//! the profile's cost. Random line reads form a dependent chain (the next address
//! depends on the bytes just read), so they measure latency, not overlapped throughput.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use clap::Args;
use comfy_table::Table;
use tierdb::ByteSize;
use tierdb::device::{DeviceProfile, EmulationMode, Tier};
use tierdb_bench::experiments::devices::{self, DeviceBench, Report};

/// Bounds on the knobs, so a typo cannot start an hour-long run.
const RUNS_MAX: usize = 101;
const OPS_MAX: u64 = 100_000_000;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Emulation mode of every device: off (this machine's speed), spin (busy-wait to
    /// the profile), model (virtual clock only).
    #[arg(long, default_value = "spin")]
    mode: EmulationMode,
    /// NVM profile: a preset name or a TOML file.
    #[arg(long, default_value = "optane-dcpmm")]
    nvm_profile: String,
    /// SSD profile: a preset name or a TOML file.
    #[arg(long, default_value = "nvme-ssd")]
    ssd_profile: String,
    /// DRAM profile: a preset name or a TOML file.
    #[arg(long, default_value = "dram")]
    dram_profile: String,
    #[arg(long, default_value = "256MiB")]
    dram_size: ByteSize,
    #[arg(long, default_value = "1GiB")]
    nvm_size: ByteSize,
    #[arg(long, default_value = "512MiB")]
    ssd_size: ByteSize,
    #[arg(long, default_value = "16KiB")]
    page_size: ByteSize,
    /// NVM file to create (default: /dev/shm/tierdb-bench-PID.nvm); never overwritten.
    #[arg(long)]
    nvm_path: Option<PathBuf>,
    /// SSD page file to create (default: in the temp dir); never overwritten.
    #[arg(long)]
    ssd_path: Option<PathBuf>,
    /// Operations per run for DRAM and NVM line operations (page operations use 1/16).
    #[arg(long, default_value_t = 200_000)]
    ops: u64,
    /// Operations per run for SSD page I/O (with fdatasync: 1/10).
    #[arg(long, default_value_t = 2_000)]
    ssd_ops: u64,
    /// Runs of each row; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Tiers to measure.
    #[arg(long, value_delimiter = ',', default_value = "dram,nvm,ssd")]
    tiers: Vec<Tier>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Keep the NVM and SSD files afterwards.
    #[arg(long)]
    keep: bool,
}

pub fn run(args: BenchArgs) -> Result<()> {
    // 1. Check every knob before creating anything.
    ensure!((1..=RUNS_MAX).contains(&args.runs), "--runs {} must be between 1 and {RUNS_MAX}", args.runs);
    for (name, v) in [("--ops", args.ops), ("--ssd-ops", args.ssd_ops)] {
        ensure!((1..=OPS_MAX).contains(&v), "{name} {v} must be between 1 and {OPS_MAX}");
    }
    ensure!(!args.tiers.is_empty(), "--tiers names no tier");
    let page = args.page_size.bytes();
    usize::try_from(page).context("--page-size too large")?;
    let load = |spec: &str, flag: &str| DeviceProfile::load(spec).with_context(|| format!("{flag} {spec}"));
    let dram_profile = load(&args.dram_profile, "--dram-profile")?;
    let nvm_profile = load(&args.nvm_profile, "--nvm-profile")?;
    let ssd_profile = load(&args.ssd_profile, "--ssd-profile")?;
    for (size, flag) in [(args.nvm_size, "--nvm-size"), (args.ssd_size, "--ssd-size"), (args.dram_size, "--dram-size")]
    {
        ensure!(size.bytes() >= 2 * page, "{flag} {size} must hold at least two pages of {}", args.page_size);
    }
    let pid = std::process::id();
    let nvm_path = args.nvm_path.clone().unwrap_or_else(|| PathBuf::from(format!("/dev/shm/tierdb-bench-{pid}.nvm")));
    let ssd_path = args.ssd_path.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("tierdb-bench-{pid}.db")));

    // 2. Each tier in turn.
    let report = devices::run(&DeviceBench {
        mode: args.mode,
        dram_profile,
        nvm_profile,
        ssd_profile,
        dram_size: args.dram_size,
        nvm_size: args.nvm_size,
        ssd_size: args.ssd_size,
        page_bytes: page,
        nvm_path: nvm_path.clone(),
        ssd_path: ssd_path.clone(),
        ops: args.ops,
        ssd_ops: args.ssd_ops,
        runs: args.runs,
        seed: args.seed,
        tiers: args.tiers.clone(),
        keep: args.keep,
    })?;

    // 3. Report.
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, &args, &nvm_path, &ssd_path);
    }
    Ok(())
}

fn fmt_ns(v: f64) -> String {
    if v >= 100_000.0 {
        format!("{:.0} us", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn print_report(r: &Report, args: &BenchArgs, nvm_path: &Path, ssd_path: &Path) {
    println!(
        "tierdb devices bench — mode {}, 1 thread, seed {}, median of {} runs; persist: {} + sfence; TSC {:.3} ticks/ns",
        r.mode,
        r.seed,
        r.runs,
        r.flush.name(),
        r.tsc_ticks_per_ns
    );
    if let Some(c) = &r.spin_calibration {
        println!(
            "  spin calibration: loop overshoot {:.0} ns; device path {:.0} ns (reads), {:.0} ns (writes)",
            c.loop_overshoot_ns, c.read_path_ns, c.write_path_ns
        );
    }
    if let Some(d) = &r.dram {
        println!("  dram: {} arena, huge pages {:?}, profile {}", ByteSize(d.size_bytes), d.huge_pages, d.profile.name);
    }
    if let Some(n) = &r.nvm {
        println!(
            "  nvm:  {} at {} ({}, MAP_SYNC {}, msync on persist {}), profile {}",
            ByteSize(n.info.size_bytes),
            nvm_path.display(),
            n.info.file_system,
            if n.info.map_sync { "yes" } else { "no" },
            if n.info.msync_on_persist { "yes" } else { "no" },
            n.profile.name
        );
    }
    if let Some(s) = &r.ssd {
        println!(
            "  ssd:  {} at {} ({}, O_DIRECT {}: {}), {} pages, profile {}",
            args.ssd_size,
            ssd_path.display(),
            s.info.file_system,
            if s.info.direct_io { "yes" } else { "no" },
            s.info.direct_io_note,
            ByteSize(r.page_size_bytes),
            s.profile.name
        );
    }
    let mut t = Table::new();
    let ratio_head = if r.mode == EmulationMode::Model { "modelled/profile" } else { "wall/profile" };
    t.set_header([
        "tier",
        "operation",
        "ops/run",
        "wall ns/op",
        "runs min-max",
        "modelled ns/op",
        "profile ns/op",
        ratio_head,
    ]);
    for row in &r.rows {
        let lo = row.wall_ns_per_op_runs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = row.wall_ns_per_op_runs.iter().copied().fold(0.0, f64::max);
        t.add_row([
            row.tier.to_string(),
            row.op.to_string(),
            row.ops_per_run.to_string(),
            fmt_ns(row.wall_ns_per_op),
            format!("{}-{}", fmt_ns(lo), fmt_ns(hi)),
            fmt_ns(row.modelled_ns_per_op),
            fmt_ns(row.profile_ns_per_op),
            format!("{:.2}", row.ratio),
        ]);
    }
    println!("{t}");
    match r.mode {
        EmulationMode::Off => {
            println!("mode off: wall time is this machine's own; modelled is what the profile would charge.")
        }
        EmulationMode::Spin => println!(
            "mode spin: each operation busy-waits until it has lasted the profile's cost; where the\nbacking medium is slower than the profile, wall time is the medium's."
        ),
        EmulationMode::Model => {
            println!("mode model: nothing waits; modelled ns/op is the virtual clock, wall is this machine's speed.")
        }
    }
}
