//! nvcache-obp's text and plots: the header naming the setup, the notes, Table 1 and its
//! charts.

use std::fmt::Write as _;

use comfy_table::Table;
use tierdb::policy::{ObpCount, ObpMode};

use tierdb_bench::experiments::nvcache_phases::label;
use tierdb_bench::harness::{EngineArgs, Setup, devices_line, fmt_rate};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes};

use super::ObpReport;

/// What a reader must know besides the tables.
pub(super) fn notes(setup: &Setup, engine: &EngineArgs) -> Vec<String> {
    vec![
        format!(
            "always-admit = OBP off; cumulative = OBP since start-up; window = OBP over the last {} lookups; target {}%",
            setup.nvcache.obp_window_lookups,
            f64::from(setup.nvcache.obp_target_permille) / 10.0
        ),
        format!(
            "OBP counts {}; a dirty victim refused by OBP {} its page's stale NVM copy (--obp-count, --stale-overwrite)",
            if setup.nvcache.obp_count == ObpCount::All {
                "inserts + removals + evictions (the paper)"
            } else {
                "inserts only (the NVM writes)"
            },
            setup
                .nvcache
                .stale_overwrite_hits_min
                .map_or_else(|| "removes (the paper)".to_string(), |k| format!("overwrites (if it had ≥ {k} NVM hits) or removes")),
        ),
        format!(
            "device µs/op: modelled device time per operation, the same from run to run; ops/s adds the thread's {} time{}",
            setup.model_clock.name(),
            if setup.model_clock == tierdb_bench::drivers::ycsb::ModelClock::Wall {
                ", which varies with the machine's load"
            } else {
                ""
            }
        ),
        "NVM line writes: the NVM device's written cache lines in the measured run (pages, frame headers); page writes: pages copied DRAM → NVM; rows run for the same time, not the same operations, so `writes ÷` (always-admit ÷ row) compares lines per operation".into(),
        format!(
            "interference: NVM reads within {} ns of an NVM write cost {}× ({} profile)",
            setup.nvm_profile.interference_window_ns, setup.nvm_profile.write_read_interference, setup.nvm_profile.name
        ),
        format!(
            "SSD page file in {}; double write {}",
            engine.ssd_dir.as_ref().map_or_else(|| std::env::temp_dir().display().to_string(), |d| d.display().to_string()),
            setup.double_write.resolve(tierdb::arch::Architecture::Nvcache)
        ),
    ]
}

pub(super) fn describe(r: &ObpReport) -> String {
    let s = &r.setup;
    format!(
        "nvcache · {} · {} s warm-up + {} · median of {} run(s)",
        devices_line(s, &s.mode_label(), r.dram_bytes, r.nvm_bytes, r.data_bytes),
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s run")).unwrap_or_else(|| "operationcount".into()),
        r.runs,
    )
}

pub(super) fn render(r: &ObpReport) -> String {
    let mut t = Table::new();
    t.set_header([
        "workload",
        "admission",
        "ops/s",
        "vs always",
        "device µs/op",
        "NVM line writes",
        "NVM page writes",
        "lines/op",
        "writes ÷",
        "NVM hit ratio",
        "inserts r/w",
        "removals",
        "evictions",
        "stale overwr.",
        "bypass OBP",
        "bypass full",
        "OBP",
    ]);
    for row in &r.rows {
        let always = r.rows.iter().find(|x| x.workload == row.workload && x.obp == ObpMode::Off);
        let (vs, fewer) = match always {
            Some(a) if row.obp != ObpMode::Off => (
                if a.ops_per_sec > 0.0 {
                    format!("{:+.1}%", 100.0 * (row.ops_per_sec / a.ops_per_sec - 1.0))
                } else {
                    "—".into()
                },
                if row.nvm_line_writes_per_op > 0.0 {
                    format!("{:.1}×", a.nvm_line_writes_per_op / row.nvm_line_writes_per_op)
                } else {
                    "∞".into()
                },
            ),
            _ => ("—".into(), "—".into()),
        };
        let c = &row.nvm_cache;
        t.add_row([
            row.workload.clone(),
            label(row.obp).into(),
            fmt_rate(row.ops_per_sec),
            vs,
            format!("{:.1}", row.device_us_per_op),
            row.nvm_line_writes.to_string(),
            row.nvm_page_writes.to_string(),
            format!("{:.1}", row.nvm_line_writes_per_op),
            fewer,
            format!("{:.1}%", 100.0 * row.nvm_hit_ratio),
            format!("{}/{}", c.read_inserts, c.write_inserts),
            c.removals.to_string(),
            c.evictions.to_string(),
            c.stale_overwrites.to_string(),
            c.bypass_obp.to_string(),
            c.bypass_full.to_string(),
            format!("{:.1}%", 100.0 * c.obp()),
        ]);
    }
    let mut out = format!("tierdb nvcache-obp: {}\n", describe(r));
    if !r.rows.is_empty() {
        let _ = writeln!(out, "{t}");
    }
    if let Some(p) = &r.phases {
        let _ = writeln!(out, "{}", super::phases::render(p));
    }
    write_notes(&mut out, &r.notes);
    let _ = writeln!(out);
    out
}

pub(super) fn chart(r: &ObpReport, writes: bool) -> Chart {
    let workloads: Vec<String> = {
        let mut w: Vec<String> = Vec::new();
        for row in &r.rows {
            if !w.contains(&row.workload) {
                w.push(row.workload.clone());
            }
        }
        w
    };
    let mut c = Chart::new(if writes {
        "NVM cache: NVM line writes per operation by admission policy"
    } else {
        "NVM cache: throughput by admission policy"
    });
    c.subtitle = describe(r);
    c.x_label = "YCSB workload".into();
    c.y_label = if writes {
        "NVM lines written per operation".into()
    } else {
        tierdb_bench::plot::throughput_label(r.setup.mode)
    };
    c.y_log10 = writes;
    c.x_categories = workloads.clone();
    c.legend = LegendPosition::Auto;
    for m in ObpMode::ALL {
        let points = r
            .rows
            .iter()
            .filter(|row| row.obp == m)
            .filter_map(|row| {
                let x = workloads.iter().position(|w| *w == row.workload)? as f64;
                let y = if writes { row.nvm_line_writes_per_op.max(1e-3) } else { row.ops_per_sec };
                Some((x, y))
            })
            .collect();
        c.series.push(Series { name: label(m).into(), points });
    }
    c
}
