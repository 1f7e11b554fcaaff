//! nvcache-obp's parts `overhead` (the NVCache paper's Figure 4) and `cost` (Figure
//! 8(a), Table 4): tables and plots ([`tierdb_bench::experiments::nvcache_paper`]).

use std::fmt::Write as _;

use comfy_table::Table;
use tierdb::ByteSize;
use tierdb_bench::experiments::nvcache_paper::{Admission, CostRow, OverheadRow};
use tierdb_bench::harness::fmt_rate;
use tierdb_bench::plot::{Chart, LegendPosition, Series};

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "— (a run failed)".into(), f)
}

fn workloads<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    for n in names {
        if !w.contains(n) {
            w.push(n.clone());
        }
    }
    w
}

pub(super) fn render_overhead(rows: &[OverheadRow], dram: ByteSize, nvm: ByteSize, data: ByteSize) -> String {
    let mut t = Table::new();
    t.set_header(["workload", "admission", "ops/s", "degradation", "NVM lines/op"]);
    for r in rows {
        t.add_row([
            r.workload.clone(),
            r.admission.label().into(),
            opt(r.ops_per_sec, fmt_rate),
            if r.admission == Admission::NoCache {
                "(reference)".into()
            } else {
                opt(r.degradation_percent, |d| format!("{d:.1}%"))
            },
            opt(r.nvm_line_writes_per_op, |v| format!("{v:.2}")),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Figure 4 (overhead for data the DRAM holds): engine DRAM {dram}, OS buffer cache (os-page-cache SSD profile) as large, NVM {nvm}, data {data}; degradation = 1 − ops ÷ no-cache ops (lower is better)"
    );
    let _ = writeln!(out, "{t}");
    out
}

pub(super) fn render_cost(rows: &[CostRow], budget: ByteSize, data: ByteSize, ratio: f64) -> String {
    let mut t = Table::new();
    t.set_header(["workload", "DRAM", "NVM", "relative cost", "ops/s", "relative ops", "perf / cost", "NVM hit ratio"]);
    for r in rows {
        t.add_row([
            r.workload.clone(),
            ByteSize(r.dram_bytes).to_string(),
            ByteSize(r.nvm_bytes).to_string(),
            format!("{:.2}", r.relative_cost),
            opt(r.ops_per_sec, fmt_rate),
            opt(r.relative_throughput, |v| format!("{v:.2}")),
            opt(r.perf_per_cost, |v| format!("{v:.2}")),
            r.nvm_hit_ratio.map_or_else(|| "—".into(), |h| format!("{:.1}%", 100.0 * h)),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Figure 8(a) (performance per memory cost): budget {budget} split as Table 4, data {data}, NVM costs {ratio} of DRAM per byte; all-DRAM runs ssd-bm; perf / cost above 1 beats all DRAM"
    );
    let _ = writeln!(out, "{t}");
    out
}

pub(super) fn overhead_chart(rows: &[OverheadRow], subtitle: &str) -> Chart {
    let names = workloads(rows.iter().map(|r| &r.workload));
    let mut c = Chart::new("NVM block cache: throughput degradation for data the DRAM holds (Figure 4)");
    c.subtitle = subtitle.into();
    c.x_label = "YCSB workload".into();
    c.y_label = "degradation against no NVM cache, %".into();
    c.x_categories = names.clone();
    c.legend = LegendPosition::Auto;
    for adm in Admission::ALL.into_iter().filter(|a| *a != Admission::NoCache) {
        let points = rows
            .iter()
            .filter(|r| r.admission == adm)
            .filter_map(|r| Some((names.iter().position(|w| *w == r.workload)? as f64, r.degradation_percent?)))
            .collect();
        c.series.push(Series { name: adm.label().into(), points });
    }
    c
}

pub(super) fn cost_chart(rows: &[CostRow], subtitle: &str) -> Chart {
    let names = workloads(rows.iter().map(|r| &r.workload));
    let mut c = Chart::new("NVM block cache: performance per memory cost against all DRAM (Figure 8a)");
    c.subtitle = subtitle.into();
    c.x_label = "NVM share of the memory budget, %".into();
    c.y_label = "relative throughput ÷ relative cost".into();
    c.legend = LegendPosition::Auto;
    for w in names {
        let points = rows
            .iter()
            .filter(|r| r.workload == w)
            .filter_map(|r| {
                let share = 100.0 * r.nvm_bytes as f64 / (r.nvm_bytes + r.dram_bytes) as f64;
                Some((share, r.perf_per_cost?))
            })
            .collect();
        c.series.push(Series { name: format!("YCSB {w}"), points });
    }
    c
}
