//! `tierdb sim`: one trace replayed on one simulated hierarchy, with the modelled time,
//! the cost and the trace's skew.

use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Args;
use serde::Serialize;
use tierdb::arch::Architecture;
use tierdb_sim::model::{Modelled, modelled_time};
use tierdb_sim::skew::CdfPoint;
use tierdb_sim::stream::{Index, simulate_file};
use tierdb_sim::{SimConfig, SimResult, Warmup};

use super::{ProfileArgs, TraceInput, pages_of, peak_rss_bytes, warmup_of};

#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// ssd-bm, basic-nvm-bm, three-tier, nvcache, mmap-se2: which tiers exist and the
    /// default policy.
    #[arg(long, default_value = "three-tier")]
    pub arch: String,
    /// eager, hymem, nvcache, spitfire[:KNOBS], se2, or the DRAM-only lru, arc
    /// (default: the architecture's).
    #[arg(long)]
    pub policy: Option<String>,
    /// DRAM capacity: bytes (256MiB) or pages (1000p).
    #[arg(long, default_value = "64MiB")]
    pub dram: String,
    /// NVM capacity, bytes or pages: required where the architecture has an NVM tier
    /// (basic-nvm-bm, three-tier, nvcache, mmap-se2), refused where it has none (ssd-bm).
    #[arg(long)]
    pub nvm: Option<String>,
    /// SSD capacity (only its cost depends on it; default: the trace's pages).
    #[arg(long)]
    pub ssd: Option<String>,
    #[command(flatten)]
    pub profiles: ProfileArgs,
    /// auto (the trace's measure marker, else the first half), half, none.
    #[arg(long, default_value = "auto")]
    pub warmup: String,
    /// Treat whole-page accesses as line-grained (policies may serve them in place).
    #[arg(long)]
    pub as_lines: bool,
    #[arg(long, default_value_t = tierdb::limits::POLICY_SEED_DEFAULT)]
    pub seed: u64,
    /// Print the report as JSON instead of text (standard output holds the JSON alone).
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct SimReport<'a> {
    trace: String,
    source: &'a str,
    page_size_bytes: u32,
    pages: usize,
    arch: &'a str,
    profiles: [&'a str; 3],
    seed: u64,
    warmup: Warmup,
    result: &'a SimResult,
    modelled: Modelled,
    ssd_pages: u64,
    cost_usd: f64,
    skew_cdf: Vec<CdfPoint>,
    load_s: f64,
    replay_s: f64,
    replay_accesses_per_s: f64,
    /// The process's peak resident set (VmHWM), if the OS reports it.
    peak_rss_bytes: Option<u64>,
}

pub fn run_sim(a: SimArgs) -> anyhow::Result<()> {
    // Two passes over the file (streamed: memory per page, not per access): the index,
    // then the replay.
    let t0 = Instant::now();
    let (format, opts) = a.input.format_and_options()?;
    let p = Index::scan(&a.input.trace, format, opts)?;
    let load_s = t0.elapsed().as_secs_f64();
    let ps = u64::from(p.page_size_bytes);
    let arch: Architecture = a.arch.parse()?;
    if !arch.has_buffer() {
        bail!("{arch} has no buffer manager to simulate; use ssd-bm, basic-nvm-bm, three-tier, nvcache or mmap-se2");
    }
    let nvm_pages = match (arch.uses_nvm(), &a.nvm) {
        (true, Some(n)) => pages_of(n, ps)?,
        (true, None) => bail!(
            "--arch {arch} has an NVM tier, so --nvm is required: its capacity, bytes like 32MiB or pages like 1000p"
        ),
        (false, Some(n)) => bail!("{}", crate::arg_checks::nvm_without_tier(n, &[arch])),
        (false, None) => 0,
    };
    let policy = a.policy.clone().unwrap_or_else(|| arch.default_policy().to_string());
    let mut cfg = SimConfig::new(&policy, pages_of(&a.dram, ps)?, nvm_pages);
    cfg.has_ssd = arch.uses_ssd();
    cfg.seed = a.seed;
    cfg.warmup = warmup_of(&a.warmup)?;
    cfg.as_lines = a.as_lines;
    let profiles = a.profiles.load()?;
    let t0 = Instant::now();
    let r = simulate_file(&a.input.trace, format, opts, &p, &cfg)
        .with_context(|| format!("replaying {}", a.input.trace.display()))?;
    let replay_s = t0.elapsed().as_secs_f64();
    let m = modelled_time(&r, ps, &profiles);
    let ssd_pages = match &a.ssd {
        Some(s) => pages_of(s, ps)? as u64,
        None if cfg.has_ssd => p.pages() as u64,
        None => 0,
    };
    let cost = profiles.cost_usd(cfg.dram_pages as u64 * ps, cfg.nvm_pages as u64 * ps, ssd_pages * ps);
    let skew = p.skew_cdf();
    let ops = p.records as f64;
    let report = SimReport {
        trace: a.input.trace.display().to_string(),
        source: &p.source,
        page_size_bytes: p.page_size_bytes,
        pages: p.pages(),
        arch: arch.name(),
        profiles: [&profiles.dram.name, &profiles.nvm.name, &profiles.ssd.name],
        seed: a.seed,
        warmup: cfg.warmup,
        result: &r,
        modelled: m,
        ssd_pages,
        cost_usd: cost,
        skew_cdf: skew,
        load_s,
        replay_s,
        replay_accesses_per_s: ops / replay_s.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", sim_text(&report));
    }
    Ok(())
}

fn sim_text(r: &SimReport<'_>) -> String {
    let s = &r.result.stats;
    let (hd, hn, hs) = r.result.hit_ratios();
    let mut t = String::new();
    t += &format!("trace {} ({}), {} pages of {} B\n", r.trace, r.source, r.pages, r.page_size_bytes);
    t += &format!(
        "simulated {} policy {} | DRAM {} pages, NVM {} pages, SSD {} | profiles {} / {} / {} | seed {} | warm-up {:?}\n",
        r.arch,
        r.result.policy,
        r.result.dram_pages,
        r.result.nvm_pages,
        if r.result.has_ssd { "yes" } else { "no" },
        r.profiles[0],
        r.profiles[1],
        r.profiles[2],
        r.seed,
        r.warmup
    );
    t += &format!("accesses measured {} (warm-up {})\n", r.result.accesses, r.result.warmup_accesses);
    t += &format!(
        "hits: DRAM {} ({:.2}%), NVM {} ({:.2}%; in place: {} reads, {} writes), SSD reads {} ({:.2}%)\n",
        s.dram_hits,
        100.0 * hd,
        s.nvm_hits,
        100.0 * hn,
        s.nvm_reads_in_place,
        s.nvm_writes_in_place,
        s.ssd_reads,
        100.0 * hs
    );
    t += &format!(
        "pages moved: NVM→DRAM {}, DRAM→NVM {} (admissions {}), DRAM→SSD {}, NVM→SSD {}, clean drops {}; evictions DRAM {}, NVM {}\n",
        s.nvm_to_dram_pages,
        s.dram_to_nvm_pages,
        s.nvm_admissions,
        s.dram_to_ssd_pages,
        s.nvm_to_ssd_pages,
        s.clean_drops,
        s.dram_evictions,
        s.nvm_evictions
    );
    t += &format!("lines: NVM loaded {}, NVM written {}\n", s.nvm_lines_loaded, s.nvm_lines_written);
    t += &format!(
        "modelled time {:.3} s (DRAM {:.3}, NVM {:.3}, SSD {:.3}), throughput {:.0} accesses/s; cost ${:.2}\n",
        r.modelled.total_ns / 1e9,
        r.modelled.dram_ns / 1e9,
        r.modelled.nvm_ns / 1e9,
        r.modelled.ssd_ns / 1e9,
        r.modelled.throughput_per_s,
        r.cost_usd
    );
    t += "skew (hottest pages → share of accesses): ";
    t += &r
        .skew_cdf
        .iter()
        .map(|c| format!("{}%→{:.1}%", c.pages_percent, c.accesses_percent))
        .collect::<Vec<_>>()
        .join(" ");
    t += "\n";
    t += &format!(
        "index pass {:.2} s; replay pass {:.3} s = {:.2} M records/s (one thread, reading included)",
        r.load_s,
        r.replay_s,
        r.replay_accesses_per_s / 1e6
    );
    if let Some(b) = r.peak_rss_bytes {
        t += &format!("; peak RSS {:.1} MiB", b as f64 / (1u64 << 20) as f64);
    }
    t += "\n";
    t
}
