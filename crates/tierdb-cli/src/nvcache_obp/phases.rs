//! The phases part of `tierdb nvcache-obp`: its table and its plots (the experiment is
//! [`tierdb_bench::experiments::nvcache_phases`]).

use comfy_table::Table;
use tierdb_bench::experiments::nvcache_phases::{PhaseReport, label};
use tierdb_bench::harness::fmt_rate;
use tierdb_bench::plot::{Chart, LegendPosition, Marker, Series};

/// The phases' table.
pub fn render(r: &PhaseReport) -> String {
    let mut t = Table::new();
    t.set_header([
        "phase",
        "admission",
        "ops",
        "ops/s (median epoch)",
        "NVM hit ratio",
        "inserts",
        "bypass OBP",
        "inserts, first half",
        "OBP at end",
    ]);
    for s in &r.summaries {
        t.add_row([
            format!("{} ({})", s.phase + 1, s.workload),
            label(s.obp).into(),
            s.ops.to_string(),
            fmt_rate(s.ops_per_sec),
            format!("{:.1}%", 100.0 * s.hit_ratio),
            s.inserts.to_string(),
            s.bypass_obp.to_string(),
            s.inserts_first_half.to_string(),
            format!("{:.1}%", s.obp_permille_end as f64 / 10.0),
        ]);
    }
    format!(
        "Phases: {} in turn, {} epochs of {} operations each, one engine per admission mode\n{t}\n",
        r.plan.workloads.join(" then "),
        r.plan.epochs_per_phase,
        r.plan.epoch_ops
    )
}

/// Per epoch: the NVM hit ratio (or the admission rate) of each mode, a marker at each
/// phase change.
pub fn chart(r: &PhaseReport, subtitle: &str, inserts: bool) -> Chart {
    let mut c = Chart::new(if inserts {
        "NVM cache: admissions per epoch across workload phases"
    } else {
        "NVM cache: hit ratio per epoch across workload phases"
    });
    c.subtitle = subtitle.to_string();
    c.x_label = format!("epoch ({} operations each)", r.plan.epoch_ops);
    c.y_label =
        if inserts { "pages inserted per 1,000 lookups".into() } else { "NVM hit ratio in the epoch, %".into() };
    c.y_log10 = inserts;
    c.legend = LegendPosition::Auto;
    for run in &r.runs {
        let points = run
            .epochs
            .iter()
            .map(|e| {
                // A log axis has no zero: an epoch that admitted nothing sits at its floor.
                let y = if inserts { e.inserts_per_kilo_lookup.max(0.1) } else { 100.0 * e.hit_ratio };
                (f64::from(e.epoch), y)
            })
            .collect();
        c.series.push(Series { name: label(run.obp).into(), points });
    }
    c.markers = (1..r.plan.workloads.len())
        .map(|i| Marker {
            x: f64::from(i as u32 * r.plan.epochs_per_phase) - 0.5,
            label: format!("→ {}", r.plan.workloads[i]),
        })
        .collect();
    c
}
