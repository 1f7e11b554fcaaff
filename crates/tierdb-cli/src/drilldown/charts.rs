//! drilldown's charts: Figure 10's ratios to basic, the sweeps of Figures 12 to 15.

use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::device::EmulationMode;

use tierdb_bench::experiments::drilldown::{DrilldownReport, Fig10Row, SWEEP_ARCHS};
use tierdb_bench::harness::ratio;
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Marker, Series};

use super::table::describe;

/// The charts of the parts that ran, with their file names.
pub(super) fn charts(r: &DrilldownReport) -> Vec<(&'static str, Chart)> {
    let ops_label = if r.setup.mode == EmulationMode::Model { "modelled lookups / s" } else { "lookups / s" };
    let mut charts = Vec::new();
    if let Some(f) = &r.fig10 {
        let mut c = Chart::new(format!("Figure 10: {} drill-down, YCSB-RO, relative to basic", f.arch));
        c.subtitle = describe(r);
        c.x_label = "techniques (cumulative)".into();
        c.y_label = "ratio to basic".into();
        c.x_categories = f.rows.iter().map(|row| row.step.to_string()).collect();
        let basic_lines = f.rows[0].nvm_lines_per_lookup;
        let series = |name: &str, y: &dyn Fn(&Fig10Row) -> Option<f64>| Series {
            name: name.into(),
            points: f.rows.iter().enumerate().filter_map(|(i, row)| Some((i as f64, y(row)?))).collect(),
        };
        c.series = vec![
            series("throughput", &|row| row.relative_to_basic),
            series("NVM lines per lookup", &|row| ratio(row.nvm_lines_per_lookup, basic_lines)),
        ];
        if let Some(y) = f.nvm_direct.relative_to_basic {
            c.series.push(Series {
                name: format!("{} throughput", f.nvm_direct.arch),
                points: (0..f.rows.len()).map(|i| (i as f64, y)).collect(),
            });
        }
        charts.push(("drilldown-fig10.svg", c));
    }
    if let Some(l) = &r.latency {
        let mut c = Chart::new("Figure 12: YCSB-RO throughput vs NVM read latency");
        c.subtitle = describe(r);
        c.x_label = "NVM read latency (ns)".into();
        c.y_label = ops_label.into();
        c.legend = LegendPosition::UpperRight;
        c.series = sweep_series(l.rows.iter().map(|row| (row.arch, row.read_latency_ns, row.ops_per_sec)));
        let base = r.setup.nvm_profile.read_latency_ns;
        let (lo, hi) = (l.rows.first().map(|x| x.read_latency_ns), l.rows.last().map(|x| x.read_latency_ns));
        if matches!((lo, hi), (Some(lo), Some(hi)) if (lo..=hi).contains(&base)) {
            c.markers = vec![Marker { x: base, label: format!("{} {base} ns", r.setup.nvm_profile.name) }];
        }
        charts.push(("drilldown-latency.svg", c));
    }
    if let Some(d) = &r.dram {
        let mut c = Chart::new("Figure 13: YCSB-RO throughput vs DRAM size");
        c.subtitle = describe(r);
        c.x_label = format!("DRAM as % of NVM ({})", ByteSize(r.nvm_bytes));
        c.y_label = ops_label.into();
        c.x_format = AxisFormat::Plain;
        c.series = sweep_series(d.rows.iter().map(|row| (row.arch, row.dram_percent, row.ops_per_sec)));
        charts.push(("drilldown-dram.svg", c));
    }
    if let Some(p) = &r.size {
        let mut c = Chart::new("Figure 14: YCSB-RO throughput vs data size (DRAM and NVM scaled with it)");
        c.subtitle = describe(r);
        c.x_label = "data size (MiB)".into();
        c.y_label = ops_label.into();
        c.x_format = AxisFormat::Plain;
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        c.series = sweep_series(p.rows.iter().map(|row| (row.arch, mib(row.data_bytes), row.ops_per_sec)));
        charts.push(("drilldown-size.svg", c));
    }
    if let Some(p) = &r.rw {
        let mut c = Chart::new("Figure 15: YCSB-R/W throughput vs update share");
        c.subtitle = describe(r);
        c.x_label = "updates (% of operations)".into();
        c.y_label = if r.setup.mode == EmulationMode::Model { "modelled ops / s" } else { "ops / s" }.into();
        c.x_format = AxisFormat::Plain;
        c.series = sweep_series(p.rows.iter().map(|row| (row.arch, row.x, row.ops_per_sec)));
        charts.push(("drilldown-rw.svg", c));
    }
    charts
}

/// One series per architecture of a sweep, from `(arch, x, median)` rows.
fn sweep_series(rows: impl Iterator<Item = (Architecture, f64, Option<f64>)> + Clone) -> Vec<Series> {
    SWEEP_ARCHS
        .iter()
        .map(|&(arch, t)| Series {
            name: format!("{arch} ({t})"),
            points: rows.clone().filter(|r| r.0 == arch).filter_map(|(_, x, y)| Some((x, y?))).collect(),
        })
        .collect()
}
