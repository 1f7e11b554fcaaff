//! `tierdb compare --workload tpcc`: the three-tier paper's Figure 9, TPC-C throughput
//! against the number of warehouses for each architecture.

use anyhow::{Context, Result, bail};
use comfy_table::Table as TextTable;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb_bench::drivers::tpcc::{TpccOptions, TpccReport, run_one};
use tierdb_bench::harness::{EngineArgs, Middle, Progress, fmt_rate, is_full, median_of_all};
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Marker, Series, write_outputs};

/// One point of `compare --workload tpcc`.
#[derive(Serialize)]
struct Point {
    arch: Architecture,
    warehouses: u32,
    /// Median over the runs of committed tx/s (modelled in `model` mode).
    tx_per_sec: Option<f64>,
    skipped: Option<String>,
    runs: Vec<TpccReport>,
}

#[derive(Serialize)]
struct CompareReport {
    command: &'static str,
    version: &'static str,
    dram_bytes: u64,
    nvm_bytes: u64,
    runs: usize,
    db_bytes_per_warehouse: Option<u64>,
    points: Vec<Point>,
}

/// The three-tier paper's Figure 9: TPC-C throughput against the number of
/// warehouses, for each architecture; a table, JSON and an SVG in `out`.
///
/// # Errors
/// Bad options; a run that fails (other than a database that does not fit).
#[allow(clippy::too_many_arguments)]
pub fn compare(
    engine: &EngineArgs,
    opts: &TpccOptions,
    archs: &[Architecture],
    warehouses: &[u32],
    dram: ByteSize,
    nvm: ByteSize,
    runs: usize,
    out: &std::path::Path,
    quiet: bool,
) -> Result<()> {
    if warehouses.is_empty() {
        bail!("--warehouses takes at least one count");
    }
    let setup = engine.setup("ro")?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let progress = Progress::new(!quiet);
    let mut points = Vec::new();
    for &w in warehouses {
        for &arch in archs {
            let mut p = Point { arch, warehouses: w, tx_per_sec: None, skipped: None, runs: Vec::new() };
            let o = TpccOptions { warehouses: w, ..opts.clone() };
            for r in 0..runs {
                match run_one(engine, &setup, &o, arch, dram, nvm, false, &format!("tpcc{r}"), &progress) {
                    Ok(rep) => p.runs.push(rep),
                    Err(e) if is_full(&e) => {
                        p.skipped = Some(format!("run {} of {runs} did not fit: {e:#}", r + 1));
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            let values: Vec<f64> = p.runs.iter().map(|r| r.modelled_tx_per_sec.unwrap_or(r.tx_per_sec)).collect();
            p.tx_per_sec = median_of_all(&values, runs, Middle::Upper);
            points.push(p);
        }
    }
    progress.finish();
    let per_wh = points.iter().flat_map(|p| &p.runs).map(|r| r.db_bytes_per_warehouse).max();
    let report = CompareReport {
        command: "compare --workload tpcc",
        version: env!("CARGO_PKG_VERSION"),
        dram_bytes: dram.bytes(),
        nvm_bytes: nvm.bytes(),
        runs,
        db_bytes_per_warehouse: per_wh,
        points,
    };
    let describe = format!(
        "TPC-C{} · mode {} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · page {} · {} thread(s) · seed {} · durability {} · {} run(s) per point, median · {} s warm-up + {} s run{}",
        if opts.tiny { " (TINY scale, not spec-conformant)" } else { "" },
        setup.mode,
        setup.dram_profile.name,
        setup.nvm_profile.name,
        setup.ssd_profile.name,
        dram,
        nvm,
        ByteSize(setup.page_size_bytes as u64),
        setup.threads,
        setup.seed,
        opts.durability,
        runs,
        setup.warmup_secs,
        setup.duration_secs.unwrap_or(3.0),
        per_wh.map(|b| format!(" · database {} per warehouse", ByteSize(b))).unwrap_or_default(),
    );
    let mut t = TextTable::new();
    let mut header = vec!["warehouses".to_string(), "database".to_string()];
    header.extend(archs.iter().map(|a| format!("{a} tx/s")));
    t.set_header(header);
    let mut notes = Vec::new();
    for &w in warehouses {
        let row: Vec<&Point> = report.points.iter().filter(|p| p.warehouses == w).collect();
        let size = row.iter().flat_map(|p| &p.runs).map(|r| r.db_bytes_loaded).max();
        let mut cells = vec![w.to_string(), size.map(|b| ByteSize(b).to_string()).unwrap_or_else(|| "—".into())];
        for p in &row {
            cells.push(p.tx_per_sec.map(fmt_rate).unwrap_or_else(|| "—".into()));
            if let Some(s) = &p.skipped
                && w == warehouses[0]
            {
                notes.push(format!("{}: {s}", p.arch));
            }
        }
        t.add_row(cells);
    }
    let mut text = format!("tierdb compare --workload tpcc: {describe}\n{t}\n");
    tierdb_bench::plot::write_notes(&mut text, &notes);
    let mut c = Chart::new("TPC-C throughput vs warehouses");
    c.subtitle = describe;
    c.x_label = "warehouses".into();
    c.y_label = if setup.mode == tierdb::device::EmulationMode::Model {
        "modelled transactions / s".into()
    } else {
        "transactions / s".into()
    };
    c.x_format = AxisFormat::Plain;
    c.legend = LegendPosition::Auto;
    for &a in archs {
        let pts = report
            .points
            .iter()
            .filter(|p| p.arch == a)
            .filter_map(|p| p.tx_per_sec.map(|v| (f64::from(p.warehouses), v)))
            .collect::<Vec<_>>();
        if !pts.is_empty() {
            c.series.push(Series { name: a.name().into(), points: pts });
        }
    }
    if let Some(b) = per_wh.filter(|&b| b > 0) {
        c.markers = vec![
            Marker { x: dram.bytes() as f64 / b as f64, label: format!("DRAM {dram}") },
            Marker { x: nvm.bytes() as f64 / b as f64, label: format!("NVM {nvm}") },
        ];
    }
    write_outputs(out, "compare-tpcc", &text, &report, &[("compare-tpcc.svg".into(), c)])?;
    Ok(())
}
