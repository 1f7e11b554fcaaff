//! spitfire's charts: the sweeps, the policies, and the tuners' convergence.

use tierdb::policy::KNOB_PRESETS;

use tierdb_bench::experiments::spitfire::{SWEEP_VALUES, StaticPoint, WITHIN};
use tierdb_bench::experiments::tuning::convergence_series;
use tierdb_bench::plot::{Chart, LegendPosition, Series};

use super::SpitfireReport;
use super::table::{describe, fmt_value};

pub(super) fn charts(r: &SpitfireReport) -> Vec<(String, Chart)> {
    let mut charts = Vec::new();
    let categories: Vec<String> = SWEEP_VALUES.iter().map(|&v| fmt_value(v)).collect();
    if let Some(rows) = &r.sweep {
        for (file, title, y, get) in [
            (
                "spitfire-sweep.svg",
                "Figures 5–6: throughput as DRAM (D) or NVM (N) migration gets lazier",
                "operations per second",
                (|p: &StaticPoint| p.ops_per_sec) as fn(&StaticPoint) -> f64,
            ),
            (
                "spitfire-sweep-writes.svg",
                "Figure 7: NVM writes as DRAM (D) or NVM (N) migration gets lazier",
                "NVM cache lines written per operation",
                |p: &StaticPoint| p.nvm_writes_per_op,
            ),
        ] {
            let mut c = Chart::new(title);
            c.subtitle = describe(r);
            c.x_label = "migration probability".into();
            c.y_label = y.into();
            c.x_categories = categories.clone();
            c.legend = LegendPosition::Auto;
            let mut names: Vec<(String, &str)> = Vec::new();
            for row in rows {
                if !names.iter().any(|(w, k)| *w == row.workload && *k == row.knob) {
                    names.push((row.workload.clone(), row.knob));
                }
            }
            c.series = names
                .iter()
                .map(|(w, k)| Series {
                    name: format!("{w}, {k}"),
                    points: rows
                        .iter()
                        .filter(|row| row.workload == *w && row.knob == *k)
                        .filter_map(|row| {
                            SWEEP_VALUES.iter().position(|&v| v == row.value).map(|i| (i as f64, get(&row.point)))
                        })
                        .collect(),
                })
                .collect();
            charts.push((file.to_string(), c));
        }
    }
    if let Some(rows) = &r.policies {
        let policies: Vec<String> = KNOB_PRESETS.iter().map(|(n, _)| n.to_ascii_uppercase()).collect();
        for (file, title, y, get) in [
            (
                "spitfire-policies.svg",
                "Figure 11: throughput of the eager policy and Table 3's A–D",
                "operations per second",
                (|p: &StaticPoint| p.ops_per_sec) as fn(&StaticPoint) -> f64,
            ),
            (
                "spitfire-policies-writes.svg",
                "Figure 12: NVM writes of the eager policy and Table 3's A–D",
                "NVM cache lines written per operation",
                |p: &StaticPoint| p.nvm_writes_per_op,
            ),
        ] {
            let mut c = Chart::new(title);
            c.subtitle = describe(r);
            c.x_label = "policy".into();
            c.y_label = y.into();
            c.x_categories = policies.clone();
            let mut workloads: Vec<String> = rows.iter().map(|r| r.workload.clone()).collect();
            workloads.dedup();
            c.series = workloads
                .iter()
                .map(|w| Series {
                    name: w.clone(),
                    points: rows
                        .iter()
                        .filter(|row| row.workload == *w)
                        .filter_map(|row| {
                            policies.iter().position(|p| *p == row.policy).map(|i| (i as f64, get(&row.point)))
                        })
                        .collect(),
                })
                .collect();
            charts.push((file.to_string(), c));
        }
    }
    if let Some(cmp) = &r.tuners {
        for (i, c) in cmp.iter().enumerate() {
            let mut ch = Chart::new(format!("§6.6: online tuning on {} against the best static policy", c.workload));
            ch.subtitle = describe(r);
            ch.x_label = tierdb_bench::experiments::tuning::tuning_time_label(r.epoch_ops);
            ch.y_label = "operations per second".into();
            ch.legend = LegendPosition::LowerRight;
            let epochs = c.runs.iter().map(|r| r.epochs_elapsed).fold(1.0, f64::max);
            // One run per tuner (its first seed): more would hide each other.
            let mut shown: Vec<&str> = Vec::new();
            for run in &c.runs {
                if !shown.contains(&run.tuner.as_str()) {
                    shown.push(&run.tuner);
                    ch.series.extend(convergence_series(
                        &format!("{} (seed {})", run.tuner, run.seed),
                        &run.trajectory,
                        r.epoch_ops,
                    ));
                }
            }
            for (name, y) in [
                ("best grid point".to_string(), c.grid_best_ops_per_sec),
                ("90% of it".to_string(), WITHIN * c.grid_best_ops_per_sec),
            ] {
                ch.series.push(Series { name, points: vec![(0.0, y), (epochs, y)] });
            }
            charts.push((format!("spitfire-tuners-{}.svg", i + 1), ch));
        }
    }
    charts
}
