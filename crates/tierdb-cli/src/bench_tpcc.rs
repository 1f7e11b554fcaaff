//! `tierdb bench tpcc`: TPC-C on a tierdb database, one architecture, with a full
//! report; the run loop (load, warm-up, measured run, checkpoints, consistency, crash
//! and recovery) is [`tierdb_bench::drivers::tpcc`].

use anyhow::{Result, bail};
use clap::Args;
use comfy_table::Table as TextTable;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb_bench::drivers::tpcc::{TpccOptions, TpccReport, run_from_config, run_one};
use tierdb_bench::harness::{EngineArgs, Progress, fmt_rate, remove_files_on_interrupt};
use tierdb_workload::tpcc::{ConsistencyReport, Table};

/// The flags a configuration file replaces (`--config` conflicts with them).
const CONFIG_REPLACES: [&str; 30] = [
    "isolation",
    "arch",
    "dram",
    "nvm",
    "durability",
    "log_buffer",
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
pub struct TpccArgs {
    /// The database from a configuration file (docs/config.md; `tierdb db config`
    /// writes one) instead of the architecture, device, policy, durability and
    /// log-buffer flags, which cannot be given with it. The file's `dir` must not exist:
    /// the database is made there and removed after the run.
    #[arg(long, value_name = "FILE", conflicts_with_all = CONFIG_REPLACES)]
    config: Option<std::path::PathBuf>,
    /// Architecture: main-memory, ssd-bm, basic-nvm-bm, three-tier, nvm-direct,
    /// mmap-read, mmap-se1, mmap-se2, nvcache, nvsql.
    #[arg(long, default_value = "three-tier")]
    arch: String,
    #[arg(long, default_value = "1GiB")]
    dram: ByteSize,
    #[arg(long, default_value = "4GiB")]
    nvm: ByteSize,
    #[command(flatten)]
    tpcc: TpccOptions,
    #[command(flatten)]
    engine: EngineArgs,
    /// After the run and its check: abandon the database without a checkpoint or close
    /// (a crash), reopen it (recovery) and check again.
    #[arg(long)]
    crash: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}
pub fn run(args: TpccArgs) -> Result<()> {
    remove_files_on_interrupt()?;
    let arch: Architecture = args.arch.parse()?;
    let setup = args.engine.setup("ro")?;
    let progress = Progress::new(!args.quiet && !args.json);
    let report = match &args.config {
        Some(file) => {
            let cfg = tierdb::db::DbConfig::load(file)?;
            run_from_config(&args.engine, &setup, &args.tpcc, &cfg, args.crash, &progress)?
        }
        None => run_one(&args.engine, &setup, &args.tpcc, arch, args.dram, args.nvm, args.crash, "tpcc", &progress)?,
    };
    progress.finish();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    let bad = !report.consistency.ok() || report.crash.as_ref().is_some_and(|c| !c.consistency.ok());
    if bad {
        bail!("the consistency check failed (see the report)");
    }
    Ok(())
}
fn print_consistency(what: &str, c: &ConsistencyReport) {
    println!(
        "consistency {what}: {} ({} warehouses, {} districts, {} orders, {} new orders, {} order lines; conditions 1-6 and indexes){}",
        if c.ok() { "OK" } else { "FAILED" },
        c.warehouses,
        c.districts,
        c.orders,
        c.new_orders,
        c.order_lines,
        if c.ok() { String::new() } else { format!("\n  {}", c.violations.join("\n  ")) }
    );
}

pub fn print_report(r: &TpccReport) {
    println!(
        "tierdb {} bench tpcc: {} | {} warehouse(s){} | {} thread(s) | seed {} | mode {} | durability {}, isolation {}, log buffer in {}",
        r.version,
        r.arch,
        r.scale.warehouses,
        match (r.scale.is_spec(), r.spec_conformant) {
            (false, _) => " at the TINY scale (not spec-conformant)",
            (true, false) => " reading uncommitted rows (not spec-conformant)",
            (true, true) => "",
        },
        r.threads,
        r.seed,
        r.mode,
        r.durability,
        r.isolation,
        r.log_buffer
    );
    println!(
        "profiles: dram {} · nvm {} · ssd {} | page {} | DRAM {} · NVM {}",
        r.profiles[0],
        r.profiles[1],
        r.profiles[2],
        ByteSize(r.page_size_bytes as u64),
        ByteSize(r.dram_bytes),
        ByteSize(r.nvm_bytes)
    );
    let rows = &r.load_rows;
    println!(
        "load: {} rows in {:.1} s with {} thread(s) (+ {:.1} s checkpoint); database {} ({} per warehouse), {} after the run",
        rows.total(),
        r.load_secs,
        r.load_threads,
        r.load_checkpoint_secs,
        ByteSize(r.db_bytes_loaded),
        ByteSize(r.db_bytes_per_warehouse),
        ByteSize(r.db_bytes_after)
    );
    println!(
        "rows: {}",
        Table::ALL.iter().map(|t| format!("{} {}", t.name(), rows.get(*t))).collect::<Vec<_>>().join(", ")
    );
    println!(
        "run: {:.1} s after {:.1} s warm-up: {} tx/s, {} new orders/min, {} aborts{}",
        r.run_secs,
        r.warmup_secs,
        fmt_rate(r.tx_per_sec),
        fmt_rate(r.new_orders_per_min),
        r.aborts,
        r.modelled_tx_per_sec.map(|m| format!(" (modelled: {} tx/s)", fmt_rate(m))).unwrap_or_default()
    );
    let mut t = TextTable::new();
    t.set_header(["transaction", "committed", "tx/s", "rolled back", "aborts (retried)", "p50 µs", "p99 µs"]);
    for k in &r.kinds {
        t.add_row([
            k.kind.clone(),
            k.committed.to_string(),
            fmt_rate(k.per_sec),
            k.rolled_back.to_string(),
            k.aborts.to_string(),
            format!("{:.1}", k.latency_p50_us),
            format!("{:.1}", k.latency_p99_us),
        ]);
    }
    println!("{t}");
    let b = &r.tiers.buffer;
    let total: u64 = r.kinds.iter().map(|k| k.committed).sum();
    let per_tx = |v: u64| if total == 0 { 0.0 } else { v as f64 / total as f64 };
    let mut t = TextTable::new();
    t.set_header(["counter (measured run)", "total", "per tx"]);
    let mut row = |name: &str, v: u64| {
        t.add_row([name.to_string(), v.to_string(), format!("{:.3}", per_tx(v))]);
    };
    row("DRAM hits", b.dram_hits);
    row("NVM hits", b.nvm_hits);
    row("SSD reads (page → DRAM)", b.ssd_reads);
    row("lines NVM → DRAM", b.nvm_lines_loaded);
    row("lines DRAM → NVM", b.nvm_lines_written);
    row("NVM admissions", b.nvm_admissions);
    row("pages DRAM → SSD (dirty)", b.dram_to_ssd_pages);
    row("pages NVM → SSD (dirty)", b.nvm_to_ssd_pages);
    row("DRAM evictions", b.dram_evictions);
    row("NVM evictions", b.nvm_evictions);
    if let Some(n) = &r.tiers.nvm {
        row("NVM write lines", n.write_lines);
        row("NVM persists", n.persists);
    }
    if let Some(s) = &r.tiers.ssd {
        row("SSD page reads", s.reads);
        row("SSD page writes", s.writes);
    }
    row("log records", r.wal.records);
    row("log bytes", r.wal.bytes);
    println!("{t}");
    let c = &r.checkpoints;
    if c.interval_secs > 0.0 {
        println!(
            "checkpoints every {} s while running: {} in the warm-up, {} in the measured run, {:.2} s in all (longest {:.2} s)",
            c.interval_secs, c.in_warmup, c.in_run, c.secs_total, c.secs_max
        );
    } else {
        println!("checkpoints while running: none (--checkpoint-interval 0)");
    }
    if let Some(w) = &r.write_set {
        let (mean, share) = w.mean_written();
        println!(
            "write working set: {:.0} distinct pages written per {} s interval on average ({:.1}% of those accessed); \
             per interval written / accessed: {}",
            mean,
            w.interval_secs,
            share * 100.0,
            w.written.iter().zip(&w.accessed).map(|(w, a)| format!("{w}/{a}")).collect::<Vec<_>>().join(" ")
        );
    }
    if r.consistency_checked_before_crash || r.crash.is_none() {
        print_consistency("after the run", &r.consistency);
    }
    if let Some(c) = &r.crash {
        println!(
            "crash: abandoned right after the run (no consistency scan, no checkpoint, no close), {} transaction(s) open; recovery read {} records, redid {} changes, skipped {} unread (flush records), rolled back {} transaction(s) in {:.2} s (open {:.2} · analysis {:.2} · redo {:.2} · undo {:.2} · checkpoint {:.2})",
            c.open_transactions,
            c.recovery.records_read,
            c.recovery.changes_redone,
            c.recovery.changes_skipped_unread,
            c.recovery.losers.len(),
            c.recovery.secs,
            c.recovery.open_secs,
            c.recovery.analysis_secs,
            c.recovery.redo_secs,
            c.recovery.undo_secs,
            c.recovery.checkpoint_secs
        );
        print_consistency("after recovery", &c.consistency);
    }
}
