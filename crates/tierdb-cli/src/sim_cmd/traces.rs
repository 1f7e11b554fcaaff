//! `tierdb trace`: trace conversion into tierdb's format, and a trace's header and
//! counts.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb_bench::plot::{Chart, Series, write_outputs};
use tierdb_sim::Prepared;
use tierdb_sim::skew::{CdfPoint, coldest_first};
use tierdb_sim::stream::Index;
use tierdb_sim::trace::{self, Format, ImportOptions};

use super::{TraceInput, load_trace};

/// Page shares (%) of the skew table: where the Spitfire paper quotes Figure 3 (§6.3).
const SKEW_TABLE_PERCENTS: &[f64] = &[10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9];
/// Points of the skew curve (SVG and JSON): every percent.
const SKEW_CURVE_STEPS: u32 = 100;

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
    /// The skew of one or more traces as the Spitfire paper's Figure 3 draws it: pages
    /// ordered coldest first, the cumulative share of the accesses over the share of
    /// the pages. Writes skew.{txt,json,svg} to --out. Traces are streamed.
    Skew {
        /// tierdb traces (binary streamed, text read whole), each a curve.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// A name per trace for the legend (default: the file's stem).
        #[arg(long, value_delimiter = ',')]
        names: Vec<String>,
        /// Where skew.txt, skew.json and skew.svg go.
        #[arg(long, default_value = "tierdb-skew")]
        out: PathBuf,
        /// Count every access (`all`), or only the measured run's, from the trace's
        /// `measure` marker (`measured`; the whole trace if it has no marker).
        #[arg(long, default_value = "measured")]
        count: String,
    },
}

#[derive(Serialize)]
struct SkewCurve {
    name: String,
    trace: String,
    source: String,
    /// Pages read or written in the part counted.
    pages: usize,
    accesses: u64,
    counted: &'static str,
    page_size_bytes: u32,
    /// Coldest first: the share of the accesses the coldest `pages_percent` received.
    table: Vec<CdfPoint>,
    curve: Vec<CdfPoint>,
}

fn run_skew(traces: &[PathBuf], names: &[String], out: &std::path::Path, count: &str) -> anyhow::Result<()> {
    if !names.is_empty() && names.len() != traces.len() {
        anyhow::bail!("--names gives {} names for {} traces", names.len(), traces.len());
    }
    let measured = match count {
        "measured" => true,
        "all" => false,
        _ => anyhow::bail!("unknown --count {count:?}; known: measured (from the measure marker), all"),
    };
    let steps: Vec<f64> = (0..=SKEW_CURVE_STEPS).map(|i| 100.0 * f64::from(i) / f64::from(SKEW_CURVE_STEPS)).collect();
    let mut curves = Vec::new();
    for (i, path) in traces.iter().enumerate() {
        let ix = Index::scan(path, Format::Tierdb, ImportOptions::default())?;
        let name = names.get(i).cloned().unwrap_or_else(|| {
            path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned())
        });
        let (counts, counted) = match (measured, ix.measure_marker) {
            (true, Some(_)) => (&ix.measured_counts, "from the measure marker"),
            (true, None) => (&ix.access_counts, "all (no measure marker)"),
            (false, _) => (&ix.access_counts, "all"),
        };
        curves.push(SkewCurve {
            name,
            trace: path.display().to_string(),
            source: ix.source.clone(),
            pages: counts.iter().filter(|&&c| c > 0).count(),
            accesses: counts.iter().sum(),
            counted,
            page_size_bytes: ix.page_size_bytes,
            table: coldest_first(counts, SKEW_TABLE_PERCENTS),
            curve: coldest_first(counts, &steps),
        });
    }
    let mut t = String::from("skew (Spitfire Figure 3): share of accesses to the coldest x% of the pages\n");
    t += &format!("{:<16} {:>9} {:>11}", "trace", "pages", "accesses");
    for p in SKEW_TABLE_PERCENTS {
        t += &format!(" {:>8}", format!("{p}%"));
    }
    t += "\n";
    for c in &curves {
        t += &format!("{:<16} {:>9} {:>11}", c.name, c.pages, c.accesses);
        for p in &c.table {
            t += &format!(" {:>7.2}%", p.accesses_percent);
        }
        t += &format!("  ({}; {} pages; accesses {})\n", c.source, ByteSize(u64::from(c.page_size_bytes)), c.counted);
    }
    let mut chart = Chart::new("Skew: cumulative share of accesses, pages coldest first (Spitfire Fig. 3)");
    chart.x_label = "share of pages, coldest first (%)".into();
    chart.y_label = "share of accesses (%)".into();
    chart.y_from_zero = true;
    for c in &curves {
        chart.series.push(Series {
            name: c.name.clone(),
            points: c.curve.iter().map(|p| (p.pages_percent, p.accesses_percent)).collect(),
        });
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    write_outputs(out, "skew", &t, &serde_json::json!({ "curves": curves }), &[("skew.svg".into(), chart)])
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
        TraceCommand::Skew { traces, names, out, count } => run_skew(&traces, &names, &out, &count),
    }
}
