//! `tierdb sim`, `tierdb recommend` and `tierdb trace`: the trace-driven simulator,
//! the storage-hierarchy recommender, and trace conversion (crates/tierdb-sim).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb_sim::model::{Modelled, Profiles, modelled_time};
use tierdb_sim::recommend::{Recommendation, recommend};
use tierdb_sim::skew::{CdfPoint, cdf};
use tierdb_sim::trace::{self, Format, ImportOptions};
use tierdb_sim::{Prepared, SimConfig, SimResult, Warmup, simulate};

use tierdb_bench::plot::{AxisFormat, Chart, Series, write_outputs};

/// Where the trace comes from and how to read it.
#[derive(Args, Clone, Debug)]
pub struct TraceInput {
    /// The trace: tierdb binary or text, or (with --format) a block trace; zstd-compressed
    /// files are decompressed on the fly.
    pub trace: PathBuf,
    /// tierdb (binary or text), arc (the ARC paper's .lis), msr (MSR-Cambridge CSV),
    /// pg-usdt (the PostgreSQL recipe of docs/sim.md).
    #[arg(long, default_value = "tierdb")]
    pub format: String,
    /// Page size for imported block traces (ARC blocks are taken as pages).
    #[arg(long, default_value = "16KiB")]
    pub page_size: ByteSize,
}

impl TraceInput {
    fn load(&self) -> anyhow::Result<(Prepared, f64)> {
        let t0 = Instant::now();
        let t = load_trace(&self.trace, &self.format, self.page_size)?;
        let p = Prepared::new(&t);
        Ok((p, t0.elapsed().as_secs_f64()))
    }
}

fn load_trace(path: &Path, format: &str, page_size: ByteSize) -> anyhow::Result<trace::Trace> {
    let Some(f) = Format::from_name(format) else {
        bail!("unknown trace format {format:?}; known: {}", Format::NAMES.join(", "))
    };
    let opts = ImportOptions { page_size_bytes: u32::try_from(page_size.bytes()).context("page size")? };
    Ok(trace::load(path, f, opts)?)
}

/// Capacities and devices shared by `sim` and `recommend`.
#[derive(Args, Clone, Debug)]
pub struct ProfileArgs {
    #[arg(long, default_value = "dram")]
    pub dram_profile: String,
    #[arg(long, default_value = "optane-dcpmm")]
    pub nvm_profile: String,
    #[arg(long, default_value = "nvme-ssd")]
    pub ssd_profile: String,
}

impl ProfileArgs {
    fn load(&self) -> anyhow::Result<Profiles> {
        Ok(Profiles::load(&self.dram_profile, &self.nvm_profile, &self.ssd_profile)?)
    }
}

/// A size as bytes (`256MiB`) or pages (`1000p`).
fn pages_of(s: &str, page_bytes: u64) -> anyhow::Result<usize> {
    if let Some(p) = s.strip_suffix('p').or_else(|| s.strip_suffix("pages")) {
        return p.trim().parse().with_context(|| format!("bad page count {s:?}"));
    }
    let b: ByteSize = s.parse().with_context(|| format!("bad size {s:?} (bytes like 256MiB, or pages like 1000p)"))?;
    Ok((b.bytes() / page_bytes) as usize)
}

fn warmup_of(s: &str) -> anyhow::Result<Warmup> {
    Ok(match s {
        "auto" => Warmup::Auto,
        "half" => Warmup::FirstHalf,
        "none" => Warmup::None,
        _ => bail!("unknown warm-up {s:?}; known: auto (the measure marker, else the first half), half, none"),
    })
}

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
}

pub fn run_sim(a: SimArgs) -> anyhow::Result<()> {
    let (p, load_s) = a.input.load()?;
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
    let r = simulate(&p, &cfg).with_context(|| format!("replaying {}", a.input.trace.display()))?;
    let replay_s = t0.elapsed().as_secs_f64();
    let m = modelled_time(&r, ps, &profiles);
    let ssd_pages = match &a.ssd {
        Some(s) => pages_of(s, ps)? as u64,
        None if cfg.has_ssd => p.pages() as u64,
        None => 0,
    };
    let cost = profiles.cost_usd(cfg.dram_pages as u64 * ps, cfg.nvm_pages as u64 * ps, ssd_pages * ps);
    let skew = cdf(&p);
    let ops = p.ops.len() as f64;
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
        "load {:.2} s; replay {:.3} s = {:.2} M records/s (one thread)\n",
        r.load_s,
        r.replay_s,
        r.replay_accesses_per_s / 1e6
    );
    t
}

#[derive(Args, Debug)]
pub struct RecommendArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// Budget in US dollars for DRAM + NVM + SSD.
    #[arg(long)]
    pub budget: f64,
    /// The policy each candidate runs.
    #[arg(long, default_value = "hymem")]
    pub policy: String,
    #[command(flatten)]
    pub profiles: ProfileArgs,
    #[arg(long, default_value = "auto")]
    pub warmup: String,
    #[arg(long)]
    pub as_lines: bool,
    #[arg(long, default_value_t = tierdb::limits::POLICY_SEED_DEFAULT)]
    pub seed: u64,
    /// Rows of the table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Where the table, JSON and SVG go.
    #[arg(long, default_value = "tierdb-recommend")]
    pub out: PathBuf,
}

#[derive(Serialize)]
struct RecommendReport<'a> {
    trace: String,
    profiles: [&'a str; 3],
    seed: u64,
    recommendation: &'a Recommendation,
}

pub fn run_recommend(a: RecommendArgs) -> anyhow::Result<()> {
    let (p, _) = a.input.load()?;
    let profiles = a.profiles.load()?;
    let mut base = SimConfig::new(&a.policy, 1, 0);
    base.seed = a.seed;
    base.warmup = warmup_of(&a.warmup)?;
    base.as_lines = a.as_lines;
    let rec = recommend(&p, &base, &profiles, a.budget)
        .with_context(|| format!("recommending for {}", a.input.trace.display()))?;
    let ps = u64::from(p.page_size_bytes);
    let size = |pages: u64| ByteSize(pages * ps).to_string();
    let mut t = format!(
        "recommend for {} ({} pages of {} B, {} accesses), budget ${}, policy {}, profiles {} / {} / {}, seed {}\n",
        a.input.trace.display(),
        rec.pages,
        ps,
        p.accesses(),
        a.budget,
        a.policy,
        profiles.dram.name,
        profiles.nvm.name,
        profiles.ssd.name,
        a.seed
    );
    t += &format!(
        "{} hierarchies in budget, {} dropped by the §5.1 model, {} simulated on {} threads in {:.2} s\n",
        rec.candidates_in_budget,
        rec.filtered_by_model,
        rec.ranked.len(),
        rec.threads,
        rec.elapsed_s
    );
    t += &format!(
        "{:>4} {:>10} {:>10} {:>10} {:>9} {:>14} {:>14} {:>12}\n",
        "rank", "DRAM", "NVM", "SSD", "cost $", "accesses/s", "per $", "model acc/s"
    );
    for (i, c) in rec.ranked.iter().take(a.top).enumerate() {
        t += &format!(
            "{:>4} {:>10} {:>10} {:>10} {:>9.2} {:>14.0} {:>14.0} {:>12.0}\n",
            i + 1,
            size(c.dram_pages),
            size(c.nvm_pages),
            size(c.ssd_pages),
            c.cost_usd,
            c.throughput_per_s,
            c.throughput_per_usd,
            c.model_throughput_per_s
        );
    }
    // Figure 10's shape: throughput against NVM capacity, one line per DRAM capacity.
    let mut chart = Chart::new(format!("Modelled throughput by hierarchy (budget ${})", a.budget));
    chart.subtitle = format!(
        "{} · policy {} · {} / {} / {} · seed {}",
        a.input.trace.display(),
        a.policy,
        profiles.dram.name,
        profiles.nvm.name,
        profiles.ssd.name,
        a.seed
    );
    chart.x_label = "NVM capacity".into();
    chart.y_label = "accesses per second (modelled)".into();
    chart.x_format = AxisFormat::Bytes;
    chart.x_log2 = true;
    let mut drams: Vec<u64> = rec.ranked.iter().map(|c| c.dram_pages).collect();
    drams.sort_unstable();
    drams.dedup();
    for d in drams {
        let mut pts: Vec<(f64, f64)> = rec
            .ranked
            .iter()
            .filter(|c| c.dram_pages == d && c.nvm_pages > 0 && c.ssd_pages > 0)
            .map(|c| ((c.nvm_pages * ps) as f64, c.throughput_per_s))
            .collect();
        pts.sort_by(|x, y| x.0.total_cmp(&y.0));
        if !pts.is_empty() {
            chart.series.push(Series { name: format!("DRAM {}", size(d)), points: pts });
        }
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let report = RecommendReport {
        trace: a.input.trace.display().to_string(),
        profiles: [&profiles.dram.name, &profiles.nvm.name, &profiles.ssd.name],
        seed: a.seed,
        recommendation: &rec,
    };
    write_outputs(&a.out, "recommend", &t, &report, &[("recommend.svg".into(), chart)])
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Converts a block or PostgreSQL trace (or a tierdb one) into tierdb's format:
    /// binary, or text if OUT ends in .txt.
    Import {
        #[command(flatten)]
        input: TraceInput,
        /// Where the tierdb trace goes.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Prints a trace's header and counts.
    Info {
        #[command(flatten)]
        input: TraceInput,
    },
}

pub fn run_trace(c: TraceCommand) -> anyhow::Result<()> {
    match c {
        TraceCommand::Import { input, out } => {
            let t = load_trace(&input.trace, &input.format, input.page_size)?;
            trace::save(&t, &out)?;
            println!(
                "wrote {} records ({} accesses) of {} to {}",
                t.records.len(),
                t.accesses(),
                input.trace.display(),
                out.display()
            );
            Ok(())
        }
        TraceCommand::Info { input } => {
            let t = load_trace(&input.trace, &input.format, input.page_size)?;
            let p = Prepared::new(&t);
            let mut by_op = std::collections::BTreeMap::new();
            for r in &t.records {
                *by_op.entry(r.op.letter()).or_insert(0u64) += 1;
            }
            println!("source: {}", t.header.source);
            println!("page size: {} B", t.header.page_size_bytes);
            println!("records: {} ({} accesses, {} distinct pages)", t.records.len(), t.accesses(), p.pages());
            println!("by op: {by_op:?}");
            Ok(())
        }
    }
}
