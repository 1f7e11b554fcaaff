//! `tierdb devices ...`: probe the machine, list profiles, benchmark the devices.

mod bench;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use comfy_table::Table;
use tierdb::device::{DeviceProfile, PROFILE_PRESETS, probe};

use bench::{self as device_bench, BenchArgs};

#[derive(Subcommand)]
pub enum DevicesCommand {
    /// What this machine offers: flush instructions, O_DIRECT, DAX/MAP_SYNC, huge pages, NUMA.
    Probe {
        /// Directory for the NVM file (checked for DAX / MAP_SYNC and O_DIRECT).
        #[arg(long, default_value = "/dev/shm")]
        nvm_dir: PathBuf,
        /// Directory for the SSD page file (checked for O_DIRECT and DAX).
        #[arg(long, default_value_os_t = std::env::temp_dir())]
        ssd_dir: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the built-in device profiles, or print one as TOML.
    Profiles {
        /// A preset name or a profile file to print in full.
        #[arg(long)]
        show: Option<String>,
    },
    /// Check an SSD page file: read its superblock, then open it as the engine would
    /// (page size, length); print what it holds.
    Inspect {
        /// The page file.
        path: PathBuf,
        /// Expected page size (default: the one the superblock records).
        #[arg(long)]
        page_size: Option<tierdb::ByteSize>,
        #[arg(long)]
        json: bool,
    },
    /// Measure each tier: line reads/writes/persists on DRAM and NVM, page I/O on SSD,
    /// next to what the device profile says.
    Bench(BenchArgs),
}

pub fn run(cmd: DevicesCommand) -> Result<()> {
    match cmd {
        DevicesCommand::Probe { nvm_dir, ssd_dir, json } => run_probe(nvm_dir, ssd_dir, json),
        DevicesCommand::Profiles { show } => run_profiles(show),
        DevicesCommand::Inspect { path, page_size, json } => run_inspect(path, page_size, json),
        DevicesCommand::Bench(args) => device_bench::run(args),
    }
}

fn run_probe(nvm_dir: PathBuf, ssd_dir: PathBuf, json: bool) -> Result<()> {
    for dir in [&nvm_dir, &ssd_dir] {
        anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    }
    let p = probe(&[nvm_dir, ssd_dir]);
    if json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(());
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    let mut t = Table::new();
    t.set_header(["what", "here", "detail"]);
    t.add_row(["clwb", yes(p.cpu.clwb), "CPUID.(EAX=7):EBX[24]"]);
    t.add_row(["clflushopt", yes(p.cpu.clflushopt), "CPUID.(EAX=7):EBX[23]"]);
    t.add_row(["clflush", yes(p.cpu.clflush), "CPUID.(EAX=1):EDX[19]"]);
    t.add_row(["persist uses", p.flush_chosen.name(), "followed by sfence"]);
    t.add_row(["TSC", &format!("{:.3} ticks/ns", p.tsc_ticks_per_ns), "calibrated against the monotonic clock"]);
    let c = tierdb::device::spin_calibration();
    t.add_row([
        "spin calibration".to_string(),
        format!("{:.0} ns loop", c.loop_overshoot_ns),
        format!(
            "device path {:.0} ns (reads), {:.0} ns (writes), taken off each wait",
            c.read_path_ns, c.write_path_ns
        ),
    ]);
    t.add_row(["transparent huge pages", &p.transparent_huge_pages, "/sys/kernel/mm/transparent_hugepage/enabled"]);
    t.add_row(["hugetlb pages", &p.hugetlb_pages_total.to_string(), "reserved in /proc/meminfo"]);
    for path in &p.paths {
        let where_ = format!("{} ({})", path.path.display(), path.file_system);
        t.add_row([format!("O_DIRECT on {where_}"), yes(path.o_direct.available).into(), path.o_direct.note.clone()]);
        t.add_row([
            format!("DAX / MAP_SYNC on {where_}"),
            yes(path.map_sync.available).into(),
            path.map_sync.note.clone(),
        ]);
    }
    for n in &p.numa_nodes {
        let cpus = if n.cpu_less() { "none (memory only: CXL-like)".to_string() } else { n.cpus.clone() };
        t.add_row([
            format!("NUMA node {}", n.id),
            format!("{} MiB", n.memory_total_bytes >> 20),
            format!("cpus {cpus}"),
        ]);
    }
    if p.numa_nodes.is_empty() {
        t.add_row(["NUMA nodes", "none", "no /sys/devices/system/node"]);
    }
    println!("{t}");
    Ok(())
}

fn run_profiles(show: Option<String>) -> Result<()> {
    if let Some(spec) = show {
        if let Some((_, text)) = PROFILE_PRESETS.iter().find(|(n, _)| *n == spec) {
            print!("{text}");
        } else {
            let p = DeviceProfile::load(&spec)?;
            print!("{}", toml::to_string(&p).context("printing the profile")?);
        }
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header([
        "name",
        "tier",
        "read ns",
        "write ns",
        "read GB/s",
        "write GB/s",
        "persist ns",
        "granule B",
        "interference",
        "$/GB",
        "persistent",
    ]);
    for (name, _) in PROFILE_PRESETS {
        let p = DeviceProfile::preset(name)?;
        t.add_row([
            p.name.clone(),
            p.kind.to_string(),
            format!("{}", p.read_latency_ns),
            format!("{}", p.write_latency_ns),
            format!("{}", p.read_bandwidth_gb_s),
            format!("{}", p.write_bandwidth_gb_s),
            format!("{}", p.persist_ns),
            p.access_granularity_bytes.to_string(),
            format!("x{} for {} ns", p.write_read_interference, p.interference_window_ns),
            format!("{}", p.cost_per_gb_usd),
            if p.persistent { "yes" } else { "no" }.to_string(),
        ]);
    }
    println!("{t}");
    println!("`tierdb devices profiles --show NAME` prints a preset with the source of each value.");
    Ok(())
}

fn run_inspect(path: PathBuf, page_size: Option<tierdb::ByteSize>, json: bool) -> Result<()> {
    use tierdb::device::{SsdConfig, SsdFile};
    let (sb, note) = SsdFile::read_superblock(&path)?;
    let mut cfg = SsdConfig::new(&path);
    cfg.page_size = match page_size {
        Some(p) => usize::try_from(p.bytes()).context("--page-size too large")?,
        None => sb.page_size as usize,
    };
    // Opening checks the page size and the file's length against the superblock.
    let file = SsdFile::open(&cfg)?;
    let sb = file.superblock();
    if json {
        println!("{}", serde_json::json!({ "superblock": sb, "file": file.info(), "note": note }));
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header(["field", "value"]);
    t.add_row(["path", &path.display().to_string()]);
    t.add_row(["format version", &sb.format_version.to_string()]);
    t.add_row(["page size", &format!("{} bytes", sb.page_size)]);
    t.add_row(["pages", &format!("{} (page 0 is the superblock)", sb.page_count)]);
    t.add_row(["generation", &sb.generation.to_string()]);
    t.add_row(["created", &format!("{} s after the Unix epoch", sb.created_unix_secs)]);
    t.add_row(["database id", &format!("{:016x}", sb.db_id)]);
    t.add_row(["catalog root", &sb.catalog_root.to_string()]);
    t.add_row(["free-list head", &sb.free_list_head.to_string()]);
    t.add_row(["free pages", &sb.free_pages.to_string()]);
    t.add_row(["creator", &sb.creator]);
    t.add_row(["O_DIRECT", &format!("{} ({})", file.info().direct_io, file.info().direct_io_note)]);
    if let Some(n) = note {
        t.add_row(["warning", &n]);
    }
    println!("{t}");
    Ok(())
}
