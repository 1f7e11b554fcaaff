//! `tierdb bench ycsb`: one YCSB run on one architecture, with a full report; straight
//! on the B+-tree (the raw mode), or with `--durability` through a database's
//! transactions ([`tierdb_bench::drivers::ycsb_txn`]).

mod report;

use anyhow::Result;
use clap::Args;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb_bench::drivers::ycsb_txn::TxnArgs;
use tierdb_bench::harness::{
    EngineArgs, Progress, remove_files_on_interrupt, run_one, run_one_txn, run_one_txn_from_config,
};

use report::print_report;

/// The flags a configuration file replaces (`--config` conflicts with them).
const CONFIG_REPLACES: [&str; 32] = [
    "isolation",
    "arch",
    "dram",
    "nvm",
    "durability",
    "log_buffer",
    "flush_interval_us",
    "log_buffer_size",
    "mode",
    "nvm_profile",
    "ssd_profile",
    "dram_profile",
    "page_size",
    "ssd_dir",
    "nvm_dir",
    "policy",
    "admission_set",
    "techniques",
    "debug_lines",
    "buffered_io",
    "cpu_cache",
    "prefetch_lines",
    "double_write",
    "nvm_double_write_slots",
    "nvm_verify",
    "obp",
    "obp_target",
    "obp_window",
    "small_bypass",
    "lfru_window",
    "obp_count",
    "stale_overwrite",
];

#[derive(Args, Debug)]
pub struct YcsbArgs {
    /// Run through the transactions of the database a configuration file describes
    /// (docs/config.md; `tierdb db config` writes one) instead of the architecture,
    /// device, policy, durability and log flags, which cannot be given with it. The
    /// file's `dir` must not exist: the database is made there and removed after the run.
    #[arg(long, value_name = "FILE", conflicts_with_all = CONFIG_REPLACES)]
    config: Option<std::path::PathBuf>,
    /// Architecture: main-memory, ssd-bm, basic-nvm-bm, three-tier, nvm-direct, nvcache, mmap-read, mmap-se1, mmap-se2.
    #[arg(long, default_value = "three-tier")]
    arch: String,
    #[arg(long, default_value = "256MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "1GiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading (sets recordcount); omit to use the workload's
    /// recordcount.
    #[arg(long)]
    data: Option<ByteSize>,
    /// ro, rw:PCT, scan, a..f, or a YCSB property file.
    #[arg(long, default_value = "ro")]
    workload: String,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    txn: TxnArgs,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: YcsbArgs) -> Result<()> {
    remove_files_on_interrupt()?;
    let arch: Architecture = args.arch.parse()?;
    let txn = args.txn.resolve()?;
    let setup = args.engine.setup(&args.workload)?;
    let progress = Progress::new(!args.quiet && !args.json);
    let report = match (&args.config, &txn) {
        (Some(file), _) => {
            let cfg = tierdb::db::DbConfig::load(file)?;
            run_one_txn_from_config(&args.engine, &setup, &cfg, args.data, &progress)?
        }
        (None, None) => run_one(&args.engine, &setup, arch, args.dram, args.nvm, args.data, "bench", &progress)?,
        (None, Some(t)) => {
            run_one_txn(&args.engine, &setup, t, arch, args.dram, args.nvm, args.data, "bench", &progress)?
        }
    };
    progress.finish();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}
