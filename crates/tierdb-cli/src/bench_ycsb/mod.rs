//! `tierdb bench ycsb`: one YCSB run on one architecture, with a full report; straight
//! on the B+-tree (the raw mode), or with `--durability` through a database's
//! transactions ([`tierdb_bench::drivers::ycsb_txn`]).

mod report;

use anyhow::Result;
use clap::Args;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb_bench::drivers::ycsb_txn::TxnArgs;
use tierdb_bench::harness::{EngineArgs, Progress, remove_files_on_interrupt, run_one, run_one_txn};

use report::print_report;

#[derive(Args, Debug)]
pub struct YcsbArgs {
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
    let report = match &txn {
        None => run_one(&args.engine, &setup, arch, args.dram, args.nvm, args.data, "bench", &progress)?,
        Some(t) => run_one_txn(&args.engine, &setup, t, arch, args.dram, args.nvm, args.data, "bench", &progress)?,
    };
    progress.finish();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}
