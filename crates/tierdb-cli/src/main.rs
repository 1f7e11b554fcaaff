//! The `tierdb` command line.
//!
//! Errors from the engine arrive typed and are printed with their causes; any error
//! exits with status 1 (argument errors: 2, from clap, and from the checks of
//! `arg_checks` that span commands).
//!
//! Standard output: a command given `--json` prints one JSON document there and
//! nothing else (progress, warnings and notes go to standard error).

#![forbid(unsafe_code)]

mod arg_checks;
mod bench_tpcc;
mod bench_wal;
mod bench_ycsb;
mod compare;
mod crashtest;
mod db_cmd;
mod devices;
mod drilldown;
mod isolation;
mod mmap_bench;
mod nvcache_obp;
mod nvsql_bench;
mod reproduce;
mod restart_bench;
mod sim_cmd;
mod spitfire;
mod tune;
mod wear;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "tierdb", version, about = "A storage engine for DRAM, NVM/CXL memory and SSD")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect and measure the devices: DRAM arena, NVM region, SSD page file.
    Devices {
        #[command(subcommand)]
        command: devices::DevicesCommand,
    },
    /// Database configuration files and a small admin tool: `db config` writes a file
    /// from the architecture flags; `db info|get|put|delete|scan|checkpoint --config
    /// FILE` opens the database it describes, does one thing and closes it.
    Db {
        #[command(subcommand)]
        command: db_cmd::DbCommand,
    },
    /// Run a workload on one architecture and report throughput, latency and tier counters.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Run every architecture over data sizes that cross the DRAM and NVM capacities
    /// (the paper's Figure 8); writes a table, JSON and an SVG plot.
    Compare(compare::CompareArgs),
    /// The paper's drill-down (Figure 10, the §5.4.2 scan overheads) and NVM sensitivity
    /// (Figures 12 and 13); writes tables, JSON and SVG plots.
    Drilldown(drilldown::DrilldownArgs),
    /// Kills a writing child process with SIGKILL at random points and checks after
    /// each that recovery kept exactly the committed transactions.
    Crashtest(crashtest::CrashtestArgs),
    /// Runs every paper's headline experiments and writes OUT/papers.md: the published
    /// number, tierdb's, their ratio and why they differ, with each figure's command
    /// and artifacts.
    Reproduce(reproduce::ReproduceArgs),
    /// The writer `crashtest` runs and kills (not for direct use).
    #[command(hide = true)]
    CrashtestChild(crashtest::CrashChildArgs),
    /// Prints a log's records (a diagnostic).
    #[command(hide = true)]
    WalDump(crashtest::WalDumpArgs),
    /// Throughput over time right after a clean restart, per architecture (the paper's
    /// Figure 17); writes a table, JSON and an SVG plot.
    RestartBench(restart_bench::RestartArgs),
    /// NVM writes per cache line for three-tier and nvm-direct under 100% updates (the
    /// paper's Figure 16); writes a table, JSON and an SVG plot.
    Wear(wear::WearArgs),
    /// Spitfire's online tuner on the live engine: epochs of YCSB, the spitfire policy's
    /// knobs set before each; writes a table, JSON and a convergence plot.
    Tune(Box<tune::TuneArgs>),
    /// Spitfire's experiments: the D and N sweeps (Figures 5–7), Table 3's policies
    /// (Figures 11–12), and the tuners against the best static policy (§6.6); writes
    /// tables, JSON and SVG plots.
    Spitfire(Box<spitfire::SpitfireArgs>),
    /// The PostgreSQL-on-NVM study: the database file on NVM read with pread, copied
    /// from the mapping (SE1) or read in place (SE2), on scan- and lookup-heavy
    /// workloads over buffer-pool sizes; writes a table, JSON and SVG plots.
    MmapBench(mmap_bench::MmapBenchArgs),
    /// The NVCache paper's admission experiment: always-admit against cumulative and
    /// windowed OBP on YCSB A and C (NVM writes, throughput, hit ratio); writes a
    /// table, JSON and SVG plots.
    NvcacheObp(nvcache_obp::NvcacheObpArgs),
    /// NV-SQL's experiments at equal memory cost: DRAM-only against nvsql with DRAM and
    /// NVM on TPC-C and YCSB-R/W (throughput, SSD page writes, hit ratios), the write
    /// working set over time, NVM replacement rules (Table 4) and the recovery time split
    /// (Figure 10); writes tables, JSON and SVG plots.
    NvsqlBench(Box<nvsql_bench::NvsqlBenchArgs>),
    /// Replays a page-access trace through a policy over metadata-only pools: hits per
    /// tier, pages moved, modelled time, skew (docs/sim.md).
    Sim(Box<sim_cmd::SimArgs>),
    /// Grid search over DRAM / NVM / SSD capacities within a budget, ranked by
    /// modelled throughput per dollar; writes a table, JSON and an SVG.
    Recommend(Box<sim_cmd::RecommendArgs>),
    /// Trace conversion and inspection.
    Trace {
        #[command(subcommand)]
        command: sim_cmd::TraceCommand,
    },
    /// Runs random concurrent transactions on a database and checks their history for the
    /// anomalies its isolation level forbids (docs/isolation.md); fails if it finds any.
    CheckIsolation(Box<isolation::CheckIsolationArgs>),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// YCSB: load, warm up, run; --arch main-memory|ssd-bm|basic-nvm-bm|three-tier|nvm-direct|nvcache|mmap-read|mmap-se1|mmap-se2;
    /// with --durability sync|group|none through a database's transactions.
    Ycsb(Box<bench_ycsb::YcsbArgs>),
    /// Commit throughput and latency of the write-ahead log alone (log buffer in DRAM
    /// or NVM, durability sync or group).
    Wal(bench_wal::WalArgs),
    /// TPC-C through a database's transactions: load W warehouses, run the standard mix,
    /// report tx/s by type, aborts, tier counters and database size, check consistency;
    /// any architecture (each durable, each recovers after --crash).
    Tpcc(Box<bench_tpcc::TpccArgs>),
}

/// Parses the command line and makes the checks of [`arg_checks`], exiting as clap
/// does on an argument error.
fn parse() -> Cli {
    let mut cmd = Cli::command();
    let matches = cmd.get_matches_mut();
    if let Err(refusal) = arg_checks::check(&cmd, &matches) {
        let mut leaf = &mut cmd;
        for name in &refusal.path {
            leaf = leaf.find_subcommand_mut(name).expect("the path the matches took");
        }
        leaf.error(clap::error::ErrorKind::ArgumentConflict, refusal.message).exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let cli = parse();
    let result = match cli.command {
        Command::Devices { command } => devices::run(command),
        Command::Db { command } => db_cmd::run(command),
        Command::Bench { command: BenchCommand::Ycsb(args) } => bench_ycsb::run(*args),
        Command::Bench { command: BenchCommand::Wal(args) } => bench_wal::run(args),
        Command::Bench { command: BenchCommand::Tpcc(args) } => bench_tpcc::run(*args),
        Command::Compare(args) => compare::run(args),
        Command::Drilldown(args) => drilldown::run(args),
        Command::Wear(args) => wear::run(args),
        Command::MmapBench(args) => mmap_bench::run(args),
        Command::Crashtest(args) => crashtest::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::CrashtestChild(args) => crashtest::child(args),
        Command::WalDump(args) => crashtest::wal_dump(args),
        Command::RestartBench(args) => restart_bench::run(args),
        Command::NvcacheObp(args) => nvcache_obp::run(args),
        Command::NvsqlBench(args) => nvsql_bench::run(*args),
        Command::Tune(args) => tune::run(*args),
        Command::Spitfire(args) => spitfire::run(*args),
        Command::Sim(args) => sim_cmd::run_sim(*args),
        Command::Recommend(args) => sim_cmd::run_recommend(*args),
        Command::Trace { command } => sim_cmd::run_trace(command),
        Command::CheckIsolation(args) => isolation::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
