//! `tierdb bench ycsb`'s text report: the run, the tiers' counters, the NVM cache's and
//! the transactions'.

use comfy_table::Table;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::device::DoubleWriteMode;
use tierdb::policy::{NvcacheConfig, ObpCount};
use tierdb_bench::drivers::ycsb_txn::TxnReport;
use tierdb_bench::harness::{RunReport, fmt_rate};

pub(super) fn print_report(r: &RunReport) {
    let s = &r.setup;
    let res = &r.result;
    println!(
        "tierdb {} bench ycsb: {}{} | workload {} | {} thread(s) | seed {} | mode {}",
        r.version,
        r.arch,
        r.txn.as_ref().map(|t| format!(" through transactions (durability {})", t.durability)).unwrap_or_default(),
        s.workload.origin(),
        s.threads,
        s.seed,
        s.mode
    );
    if s.page_provider {
        println!("page provider: on (a thread beside the workers keeps DRAM frames free)");
    }
    if s.batch > 1 {
        println!(
            "batches: {} operations a worker, their SSD pages read ahead together (latency from the batch's start)",
            s.batch
        );
    }
    println!(
        "profiles: dram {} · nvm {} · ssd {}{} | page {} | DRAM {} ({} frames) · NVM {} ({} frames)",
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        if !r.arch.uses_ssd() {
            ""
        } else {
            match s.double_write.resolve(r.arch) {
                DoubleWriteMode::Off => " (double write off)",
                DoubleWriteMode::Ssd => " (double write on SSD)",
                DoubleWriteMode::Nvm => " (double write in NVM)",
            }
        },
        ByteSize(s.page_size_bytes as u64),
        ByteSize(r.dram_bytes),
        r.dram_frames,
        ByteSize(r.nvm_bytes),
        r.nvm_frames
    );
    if r.arch == Architecture::NvmDirect {
        println!(
            "nvm-direct: pages read and written in place in NVM; NVM reads charged through a CPU-cache model of {}",
            tierdb::page::describe_model(r.cpu_cache_model_bytes, res.data_bytes, s.cpu_cache)
        );
    } else if r.arch.uses_nvm() {
        println!(
            "NVM techniques: {}{}",
            r.techniques,
            if r.debug_lines { " (debug mode: checks every line access; slow)" } else { "" }
        );
    }
    println!(
        "data: {} records of {}, B+-tree {} (target {}); load {:.1} s ({:.0} records/s){}",
        res.records,
        if res.record_bytes_mean < res.record_bytes as f64 {
            format!("up to {} B (mean {:.0} B)", res.record_bytes, res.record_bytes_mean)
        } else {
            format!("{} B", res.record_bytes)
        },
        ByteSize(res.data_bytes),
        res.data_bytes_target.map(|b| ByteSize(b).to_string()).unwrap_or_else(|| "recordcount".into()),
        res.load_secs,
        res.load_records_per_sec,
        if r.arch == Architecture::Nvcache {
            "; nvcache admits by its own policy during the load"
        } else if r.arch.uses_nvm() && r.arch.uses_ssd() {
            "; the load admits DRAM victims to free NVM frames"
        } else {
            ""
        }
    );
    println!(
        "run: {:.1} s after {:.1} s warm-up: {} ops, {} ops/s{}",
        res.run_secs,
        res.warmup_secs,
        res.ops,
        fmt_rate(res.throughput_ops_per_sec),
        res.modelled_ops_per_sec
            .map(|m| format!(" (modelled: {} ops/s, {} clock)", fmt_rate(m), s.model_clock.name()))
            .unwrap_or_default()
    );
    if res.not_found > 0 {
        println!("warning: {} operations did not find their key", res.not_found);
    }
    let mut t = Table::new();
    t.set_header(["op", "count", "mean µs", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"]);
    for l in &res.latency {
        let us = |ns: f64| format!("{:.2}", ns / 1000.0);
        t.add_row([
            l.kind.clone(),
            l.ops.to_string(),
            us(l.mean_ns),
            us(l.p50_ns),
            us(l.p90_ns),
            us(l.p99_ns),
            us(l.p999_ns),
            us(l.max_ns),
        ]);
    }
    println!("{t}");
    if let Some(txn) = &r.txn {
        print_txn(txn, res.run_secs);
    }
    if r.arch == Architecture::MainMemory {
        println!("main-memory has no buffer manager: no tier counters");
        return;
    }
    let b = &res.tiers.buffer;
    let per_op = |v: u64| if res.ops == 0 { 0.0 } else { v as f64 / res.ops as f64 };
    let mut t = Table::new();
    t.set_header(["counter (measured run)", "total", "per op"]);
    let mut row = |name: &str, v: u64| {
        t.add_row([name.to_string(), v.to_string(), format!("{:.4}", per_op(v))]);
    };
    row("DRAM hits", b.dram_hits);
    row("NVM hits", b.nvm_hits);
    if b.nvm_reads_in_place + b.nvm_writes_in_place > 0 {
        row("  of them read in place", b.nvm_reads_in_place);
        row("  of them written in place", b.nvm_writes_in_place);
    }
    row("SSD reads (page → DRAM)", b.ssd_reads);
    if s.batch > 1 {
        row("SSD reads ahead of a batch", b.prefetch_reads);
    }
    row("lines NVM → DRAM", res.lines_nvm_to_dram);
    row("lines DRAM → NVM", res.lines_dram_to_nvm);
    row("NVM admissions", b.nvm_admissions);
    row("pages DRAM → SSD (dirty)", b.dram_to_ssd_pages);
    row("pages NVM → SSD (dirty)", b.nvm_to_ssd_pages);
    row("DRAM evictions", b.dram_evictions);
    row("NVM evictions", b.nvm_evictions);
    if b.evict_write_ns > 0 || s.page_provider {
        row("ms misses spent writing victims", b.evict_write_ns / 1_000_000);
    }
    if s.page_provider {
        row("frames freed by the page provider", b.provider_frames);
        if b.provider_nvm_frames > 0 {
            row("NVM frames freed by the page provider", b.provider_nvm_frames);
        }
        row("ms the page provider spent writing", b.provider_write_ns / 1_000_000);
        row("page provider's failed evictions", b.provider_errors);
    }
    if r.techniques != tierdb::buffer::Techniques::NONE {
        row("line faults", b.line_faults);
        row("mini pages allocated", b.mini_allocations);
        row("mini pages promoted", b.mini_promotions);
        row("swizzles", b.swizzles);
        row("unswizzles", b.unswizzles);
    }
    if let Some(n) = &res.tiers.nvm {
        row("NVM write lines", n.write_lines);
        row("NVM write bytes", n.write_bytes);
        row("NVM persists", n.persists);
    }
    if let Some(s) = &res.tiers.ssd {
        row("SSD page reads", s.reads);
        row("SSD page writes", s.writes);
    }
    if let Some(d) = &res.tiers.ssd_double_write {
        row("SSD double-write writes", d.writes);
        row("SSD double-write syncs", d.syncs);
    }
    if let Some(d) = &res.tiers.nvm_double_write {
        row("NVM double-write writes", d.writes);
        row("NVM double-write bytes", d.write_bytes);
        row("NVM double-write persists", d.persists);
    }
    println!("{t}");
    if let Some(p) = &res.page_provider
        && let Some(e) = &p.first_error
    {
        println!("page provider: {} failed evictions; the first: {e}", p.errors);
    }
    if let Some(c) = &res.tiers.nvm_cache {
        print_nvm_cache(c, &s.nvcache);
    }
}

/// The NVM cache's counters over the measured run, as a production cache reports them.
fn print_nvm_cache(c: &tierdb::policy::NvmCacheStats, cfg: &NvcacheConfig) {
    println!(
        "NVM cache (nvcache): OBP {} (target {}%, window {} lookups), small-bypass below {}% of DRAM, LFRU window {}",
        cfg.obp_mode.name(),
        f64::from(cfg.obp_target_permille) / 10.0,
        cfg.obp_window_lookups,
        cfg.small_bypass_dram_percent,
        cfg.reuse_window_lookups.map_or_else(|| "1 lookup per frame".to_string(), |w| format!("{w} lookups")),
    );
    println!(
        "  OBP counts {}; a stale copy of a dirty victim refused by OBP is {}",
        if cfg.obp_count == ObpCount::All { "inserts + removals + evictions" } else { "inserts only" },
        cfg.stale_overwrite_hits_min
            .map_or_else(|| "removed".to_string(), |k| format!("overwritten if it had ≥ {k} NVM hits, else removed")),
    );
    let mut t = Table::new();
    t.set_header(["NVM cache (measured run)", "count"]);
    for (name, v) in [
        ("lookups (DRAM misses)", c.lookups),
        ("hits", c.hits),
        ("misses", c.misses),
        ("inserts on read", c.read_inserts),
        ("inserts on write (write-through)", c.write_inserts),
        ("removals (stale or freed)", c.removals),
        ("evictions (LFRU)", c.evictions),
        ("stale copies overwritten over target", c.stale_overwrites),
        ("bypassed: small database", c.bypass_small_db),
        ("bypassed: OBP over target", c.bypass_obp),
        ("bypassed: full, nothing stale", c.bypass_full),
        ("sweeps", c.sweeps),
        ("pages cached at the end", c.cached_pages),
    ] {
        t.add_row([name.to_string(), v.to_string()]);
    }
    t.add_row(["hit ratio".to_string(), format!("{:.1}%", 100.0 * c.hit_ratio())]);
    t.add_row(["OBP over the run".to_string(), format!("{:.1}%", 100.0 * c.obp())]);
    println!("{t}");
}

/// Prints the transactional part of a report (text mode).
fn print_txn(t: &TxnReport, run_secs: f64) {
    println!(
        "transactions: durability {} · log buffer {} ({}) · flush interval {} µs · the load bypassed the log, \
         then a checkpoint ({:.1} s)",
        t.durability,
        t.log_buffer.name(),
        ByteSize(t.log_buffer_bytes),
        t.flush_interval_us,
        t.load_checkpoint_secs
    );
    print!("commits: {} in {:.1} s ({:.0}/s)", t.commits, run_secs, t.commits_per_sec);
    match &t.commit_latency {
        Some(l) => println!(
            "; commit latency µs: mean {:.2} · p50 {:.2} · p90 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.2}",
            l.mean_ns / 1e3,
            l.p50_ns / 1e3,
            l.p90_ns / 1e3,
            l.p99_ns / 1e3,
            l.p999_ns / 1e3,
            l.max_ns / 1e3
        ),
        None => println!(),
    }
    println!(
        "log (measured run): {} records, {} bytes, {} flushes ({} by a waiting caller), {} syncs, {} waits for \
         durability; per commit {:.2} records, {:.0} bytes",
        t.wal.records,
        t.wal.bytes,
        t.wal.flushes,
        t.wal.forced_flushes,
        t.wal.syncs,
        t.wal.waits,
        t.wal_records_per_commit,
        t.wal_bytes_per_commit
    );
}
