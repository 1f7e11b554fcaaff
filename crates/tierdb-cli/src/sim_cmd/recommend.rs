//! `tierdb recommend`: the storage hierarchies within a budget, ranked by simulated
//! throughput; a table, JSON and a chart.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb_sim::SimConfig;
use tierdb_sim::recommend::{Recommendation, recommend};

use tierdb_bench::plot::{AxisFormat, Chart, Series, write_outputs};

use super::{ProfileArgs, TraceInput, warmup_of};

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
