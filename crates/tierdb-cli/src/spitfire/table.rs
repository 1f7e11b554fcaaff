//! spitfire's text: the header naming the setup, and the tables of the sweep, the
//! policies and the tuners.

use std::fmt::Write as _;

use comfy_table::Table;

use tierdb_bench::experiments::spitfire::fmt_epochs;
use tierdb_bench::experiments::tuning::{fmt_knobs, workload_name};
use tierdb_bench::harness::{devices_line, fmt_rate};
use tierdb_bench::plot::write_notes;

use super::SpitfireReport;

pub(super) fn describe(r: &SpitfireReport) -> String {
    let s = &r.setups[0];
    let workloads = r
        .setups
        .iter()
        .map(|s| {
            format!(
                "{} ({} {:?})",
                workload_name(&s.workload),
                s.workload.get("requestdistribution").unwrap_or_default(),
                s.workload.zipfian_constant()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{} · {} + {} · {workloads} · {}",
        r.machine.label(),
        r.arch,
        s.policy.as_deref().unwrap_or(tierdb_bench::experiments::tuning::KNOB_POLICY),
        devices_line(s, &s.mode_label(), r.dram_bytes, r.nvm_bytes, r.data_bytes_target),
    )
}

pub(super) fn fmt_value(v: f64) -> String {
    format!("{v:.2e}").parse::<f64>().map_or_else(|_| v.to_string(), |r| r.to_string())
}

pub(super) fn render_text(r: &SpitfireReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb spitfire: {}", describe(r));
    if let Some(rows) = &r.sweep {
        let mut t = Table::new();
        t.set_header(["workload", "knob", "value", "ops/s", "vs eager", "NVM lines/op", "SSD reads/op"]);
        for row in rows {
            let eager =
                rows.iter().find(|e| e.workload == row.workload && e.value == 1.0).map_or(1.0, |e| e.point.ops_per_sec);
            t.add_row([
                row.workload.clone(),
                row.knob.to_string(),
                fmt_value(row.value),
                fmt_rate(row.point.ops_per_sec),
                format!("{:.2}×", row.point.ops_per_sec / eager),
                format!("{:.2}", row.point.nvm_writes_per_op),
                format!("{:.3}", row.point.ssd_reads_per_op),
            ]);
        }
        let _ = writeln!(out, "\nFigures 5–7: D = Dr = Dw with N = 1, and N = Nr = Nw with D = 1\n{t}");
    }
    if let Some(rows) = &r.policies {
        let mut t = Table::new();
        t.set_header([
            "workload",
            "policy",
            "knobs",
            "ops/s",
            "vs A",
            "NVM lines/op",
            "NVM writes vs A",
            "SSD reads/op",
        ]);
        for row in rows {
            let a = rows.iter().find(|e| e.workload == row.workload && e.policy == "A").map(|e| &e.point);
            t.add_row([
                row.workload.clone(),
                row.policy.clone(),
                fmt_knobs(row.point.knobs),
                fmt_rate(row.point.ops_per_sec),
                a.map_or("—".into(), |a| format!("{:.2}×", row.point.ops_per_sec / a.ops_per_sec)),
                format!("{:.2}", row.point.nvm_writes_per_op),
                a.map_or("—".into(), |a| {
                    format!("{:.2}×", row.point.nvm_writes_per_op / a.nvm_writes_per_op.max(1e-12))
                }),
                format!("{:.3}", row.point.ssd_reads_per_op),
            ]);
        }
        let _ = writeln!(out, "\nTable 3, Figures 11–12: eager and policies A–D\n{t}");
    }
    if let Some(cmp) = &r.tuners {
        let mut t = Table::new();
        t.set_header([
            "workload",
            "tuner",
            "seed",
            "epochs (full)",
            "done",
            "within 10% after",
            "(own estimate)",
            "final policy",
            "final vs grid best",
        ]);
        for c in cmp {
            t.add_row([
                c.workload.clone(),
                format!("static grid ({} points)", c.grid.len()),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                fmt_knobs(c.grid_best),
                format!(
                    "{} (fresh engine {}, eager {:.2})",
                    fmt_rate(c.grid_best_ops_per_sec),
                    fmt_rate(c.best_static.ops_per_sec),
                    c.eager.ops_per_sec / c.best_static.ops_per_sec
                ),
            ]);
            for run in &c.runs {
                t.add_row([
                    c.workload.clone(),
                    run.tuner.clone(),
                    run.seed.to_string(),
                    format!("{} ({})", run.epochs, fmt_epochs(run.epochs_elapsed)),
                    if run.done { "yes" } else { "no" }.into(),
                    run.epochs_to_within_10pct.map_or("—".into(), fmt_epochs),
                    run.epochs_to_within_10pct_own_estimate.map_or("—".into(), fmt_epochs),
                    run.best.map_or("—".into(), |b| fmt_knobs(b.knobs)),
                    format!("{:.2}", run.final_vs_best),
                ]);
            }
        }
        let _ = writeln!(out, "\n§6.6: online tuning against the best static policy of a grid, per run\n{t}");
        let mut t = Table::new();
        t.set_header([
            "workload",
            "tuner",
            "runs",
            "within 10%",
            "median epochs to within 10%",
            "vs anneal",
            "median final",
        ]);
        for c in cmp {
            let anneal = c.summaries.iter().find(|x| x.tuner == "anneal").and_then(|x| x.median_epochs_to_within_10pct);
            for x in &c.summaries {
                t.add_row([
                    c.workload.clone(),
                    x.tuner.clone(),
                    x.runs.to_string(),
                    format!("{} of {}", x.reached, x.runs),
                    x.median_epochs_to_within_10pct.map_or("—".into(), fmt_epochs),
                    match (x.median_epochs_to_within_10pct, anneal) {
                        (Some(e), Some(a)) => format!("{:.2}", e / a),
                        _ => "—".into(),
                    },
                    format!("{:.2}", x.median_final_vs_best),
                ]);
            }
        }
        let _ = writeln!(out, "\nMedians over the seeds\n{t}");
    }
    write_notes(&mut out, &r.notes);
    out
}
