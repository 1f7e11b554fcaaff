//! nvsql-bench's output files and the configuration tables: TPC-C's and YCSB's parts
//! at equal memory cost, and the write working set.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::device::EmulationMode;
use tierdb::wal::Durability;

use tierdb_bench::experiments::nvsql::{MemConfig, Point, get};
use tierdb_bench::harness::fmt_rate;
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_svg};

/// What every report states.
#[derive(Clone, Serialize)]
pub(super) struct Describe {
    pub(super) command: &'static str,
    pub(super) version: &'static str,
    pub(super) mode: EmulationMode,
    pub(super) profiles: [String; 3],
    pub(super) prices_usd_per_gb: [f64; 2],
    pub(super) page_size_bytes: u64,
    pub(super) threads: u32,
    pub(super) seed: u64,
    pub(super) durability: Durability,
    pub(super) warmup_secs: f64,
    pub(super) duration_secs: f64,
    pub(super) runs: usize,
    pub(super) budget_bytes: u64,
    pub(super) units: u32,
    pub(super) warehouses: u32,
    pub(super) tiny: bool,
    pub(super) ycsb_workload: String,
    pub(super) ycsb_data_bytes: u64,
    pub(super) checkpoint_interval_secs: f64,
}

impl Describe {
    pub(super) fn line(&self) -> String {
        format!(
            "mode {} · profiles dram {} (${}/GB), nvm {} (${}/GB), ssd {} · budget {} in {} units · page {} · {} \
             thread(s) · seed {} · durability {} · {} s warm-up + {} s run · {} run(s), median",
            self.mode,
            self.profiles[0],
            self.prices_usd_per_gb[0],
            self.profiles[1],
            self.prices_usd_per_gb[1],
            self.profiles[2],
            ByteSize(self.budget_bytes),
            self.units,
            ByteSize(self.page_size_bytes),
            self.threads,
            self.seed,
            self.durability,
            self.warmup_secs,
            self.duration_secs,
            self.runs
        )
    }
}

#[derive(Serialize)]
pub(super) struct PartReport<'a> {
    pub(super) part: &'static str,
    pub(super) setup: &'a Describe,
    pub(super) workload: String,
    pub(super) points: &'a [Point],
}

/// The NVM bought: the pool, and the double-write area beside it.
fn nvm_cell(c: &MemConfig) -> String {
    if c.nvm_double_write_bytes == 0 {
        ByteSize(c.nvm_bytes).to_string()
    } else {
        format!(
            "{} + {} (double write, {} slots)",
            ByteSize(c.nvm_bytes),
            ByteSize(c.nvm_double_write_bytes),
            c.nvm_double_write_slots
        )
    }
}

/// Where the double-write area and the log buffer are: `ssd · dram`, `nvm · nvm`.
pub(super) fn placement(c: &MemConfig) -> String {
    format!("{} · {}", c.double_write_name(), c.log_buffer.name())
}

/// Writes `<stem>.md`, `<stem>.json` and the charts, and prints the table.
pub(super) fn write_part(
    out: &Path,
    stem: &str,
    md: &str,
    json: &impl Serialize,
    charts: &[(String, Chart)],
) -> Result<()> {
    let mut written = Vec::new();
    let p = out.join(format!("{stem}.md"));
    std::fs::write(&p, md).with_context(|| format!("writing {}", p.display()))?;
    written.push(p);
    let p = out.join(format!("{stem}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(json)?).with_context(|| format!("writing {}", p.display()))?;
    written.push(p);
    for (name, c) in charts {
        let p = out.join(name);
        write_svg(c, &p).with_context(|| format!("writing {}", p.display()))?;
        written.push(p);
    }
    println!("{md}wrote {}\n", written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

pub(super) fn header(md: &mut String, title: &str, d: &Describe, workload: &str) {
    let _ = writeln!(md, "## {title}\n\n{workload}. {}\n", d.line());
}

pub(super) fn table(md: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(md, "|{}", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        let _ = writeln!(md, "| {} |", r.join(" | "));
    }
    md.push('\n');
}

pub(super) fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

pub(super) fn change(v: f64, base: f64) -> String {
    if base > 0.0 && v.is_finite() { format!("{:+.0}%", (v / base - 1.0) * 100.0) } else { "—".into() }
}

pub(super) fn category_chart(title: &str, d: &Describe, y: &str, points: &[Point], series: &[(&str, &str)]) -> Chart {
    let mut c = Chart::new(title);
    c.subtitle = d.line();
    c.y_label = y.into();
    c.x_label = "configuration (DRAM:NVM units, equal cost)".into();
    c.x_categories = points.iter().map(|p| p.config.name()).collect();
    c.legend = LegendPosition::Auto;
    for (name, key) in series {
        c.series.push(Series {
            name: (*name).into(),
            points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, key))).collect(),
        });
    }
    c
}

pub(super) fn write_config_part(
    out: &Path,
    stem: &str,
    name: &str,
    unit: &str,
    d: &Describe,
    workload: &str,
    points: &[Point],
) -> Result<()> {
    let mut md = String::new();
    header(&mut md, &format!("{name} at equal memory cost"), d, workload);
    let base = points.first().map(|p| p.median.clone()).unwrap_or_default();
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let m = &p.median;
            vec![
                p.config.name(),
                ByteSize(p.config.dram_bytes).to_string(),
                nvm_cell(&p.config),
                placement(&p.config),
                format!("${:.5}", p.config.cost_usd),
                ByteSize(get(m, "db_bytes_loaded") as u64).to_string(),
                fmt_rate(get(m, "throughput")),
                change(get(m, "throughput"), get(&base, "throughput")),
                format!("{:.2}", get(m, "ssd_writes_per_unit")),
                change(get(m, "ssd_writes_per_unit"), get(&base, "ssd_writes_per_unit")),
                format!("{:.2}", get(m, "double_write_pages_per_unit")),
                format!("{:.1}", get(m, "ssd_data_kib_per_unit")),
                change(get(m, "ssd_data_kib_per_unit"), get(&base, "ssd_data_kib_per_unit")),
                format!("{:.2}", get(m, "ssd_reads_per_unit")),
                pct(get(m, "dram_hit_ratio")),
                pct(get(m, "nvm_hit_ratio")),
                format!("{:.3}", get(m, "nvm_admissions_per_unit")),
            ]
        })
        .collect();
    let per = format!("per {unit}");
    table(
        &mut md,
        &[
            "configuration",
            "DRAM",
            "NVM",
            "double write · log buffer",
            "memory cost",
            "data",
            &format!("{unit}s/s"),
            "vs DRAM-only",
            &format!("SSD page writes {per}"),
            "vs DRAM-only",
            &format!("double-write pages {per}"),
            &format!("SSD KiB written {per}"),
            "vs DRAM-only",
            &format!("SSD page reads {per}"),
            "DRAM hit",
            "NVM hit",
            &format!("NVM admissions {per}"),
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "SSD page writes: pages written in place to the page file in the measured run (evictions and checkpoints), \
         over committed {unit}s; the double-write area's copies apart (page-sized units of the area's bytes: a copy \
         and its slot header). SSD KiB written: every byte written to the SSD for data pages, the page file's and the \
         double-write file's (the log apart: alike in every configuration); an NVM double-write area (nvsql) writes \
         none of it to SSD. Hit ratios: fixes served by DRAM, by NVM (in place), out of all fixes.\n"
    );
    let charts = vec![
        (
            format!("{stem}-throughput.svg"),
            category_chart(
                &format!("{name} throughput at equal memory cost"),
                d,
                &format!("{unit}s / s"),
                points,
                &[(name, "throughput")],
            ),
        ),
        (
            format!("{stem}-writes.svg"),
            category_chart(
                &format!("{name}: SSD page writes per {unit}"),
                d,
                &format!("SSD page writes / {unit}"),
                points,
                &[("page file", "ssd_writes_per_unit"), ("double-write area", "double_write_pages_per_unit")],
            ),
        ),
    ];
    let rep = PartReport { part: "configurations", setup: d, workload: workload.into(), points };
    write_part(out, stem, &md, &rep, &charts)
}

pub(super) fn write_write_set(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    header(&mut md, "Write working set over time (NV-SQL Figure 2)", d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter_map(|p| p.write_set.as_ref().map(|w| (p, w)))
        .map(|(p, w)| {
            let (mean, share) = w.mean_written();
            let [accessed, _, twice] = w.means();
            vec![
                p.config.name(),
                format!("{}", w.interval_secs),
                format!("{accessed:.0}"),
                format!("{mean:.0}"),
                format!("{twice:.0}"),
                pct(share),
                format!("{:.1} MiB", mean * d.page_size_bytes as f64 / f64::from(1 << 20)),
            ]
        })
        .collect();
    table(
        &mut md,
        &[
            "configuration",
            "interval s",
            "pages accessed / interval",
            "pages written / interval",
            "written twice / interval",
            "written / accessed",
            "write working set (pages written × page)",
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "Distinct pages per interval of the measured run: accessed (any fix), written (an exclusive fix or an \
         allocation), written at least twice. Means over the whole intervals.\n"
    );
    let mut c = Chart::new("Write working set over time (TPC-C)");
    c.subtitle = format!("{workload} · {}", d.line());
    c.x_label = "seconds into the measured run".into();
    c.y_label = "distinct pages per interval".into();
    c.y_log10 = true;
    for p in points {
        let Some(w) = &p.write_set else { continue };
        let at = |i: usize| (i as f64 + 1.0) * w.interval_secs;
        let line = |v: &[u64]| v.iter().enumerate().filter(|(_, v)| **v > 0).map(|(i, v)| (at(i), *v as f64)).collect();
        c.series.push(Series { name: format!("written, {}", p.config.label), points: line(&w.written) });
        if p.config.arch == Architecture::SsdBm {
            c.series.push(Series { name: format!("accessed, {}", p.config.label), points: line(&w.accessed) });
            c.series
                .push(Series { name: format!("written twice, {}", p.config.label), points: line(&w.written_twice) });
        }
    }
    let rep = PartReport { part: "write-set", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-write-set", &md, &rep, &[("nvsql-write-set.svg".into(), c)])
}
