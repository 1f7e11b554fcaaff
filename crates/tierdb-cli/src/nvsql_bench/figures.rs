//! nvsql-bench's recovery split (NV-SQL Figure 10), NVM replacement (Table 4) and
//! ablation (Figure 6) tables.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use tierdb::ByteSize;

use tierdb_bench::experiments::nvsql::{ABLATION_STEPS, Point, get};
use tierdb_bench::harness::fmt_rate;
use tierdb_bench::plot::{AxisFormat, Chart, Series};

use super::TABLE4;
use super::table::{Describe, PartReport, category_chart, change, header, pct, placement, table, write_part};

const PHASES: [(&str, &str); 5] = [
    ("open", "recovery_open_secs"),
    ("analysis", "recovery_analysis_secs"),
    ("redo", "recovery_redo_secs"),
    ("undo", "recovery_undo_secs"),
    ("checkpoint", "recovery_checkpoint_secs"),
];

pub(super) fn write_recovery(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    header(&mut md, "Recovery time after a crash (NV-SQL Figure 10)", d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let m = &p.median;
            let mut r = vec![p.config.name()];
            r.extend(PHASES.iter().map(|(_, k)| format!("{:.3}", get(m, k))));
            r.extend([
                format!("{:.3}", get(m, "recovery_secs")),
                format!("{:.0}", get(m, "recovery_records_read")),
                ByteSize(get(m, "recovery_log_scanned_bytes") as u64).to_string(),
                format!("{:.0}", get(m, "recovery_changes_redone")),
                format!("{:.0}", get(m, "recovery_changes_skipped")),
                format!("{:.0}", get(m, "recovery_changes_skipped_unread")),
                format!("{:.0}", get(m, "recovery_changes_skipped_in_nvm")),
                format!("{:.0}", get(m, "recovery_nvm_pages_reused")),
            ]);
            r
        })
        .collect();
    table(
        &mut md,
        &[
            "configuration",
            "open s",
            "analysis s",
            "redo s",
            "undo s",
            "checkpoint s",
            "total s",
            "records read",
            "log scanned",
            "changes redone",
            "changes skipped",
            "of them unread",
            "in NVM",
            "NVM pages reused",
        ],
        &rows,
    );
    let _ = writeln!(
        md,
        "The database is abandoned right after the run (no consistency scan, which would write out every dirty page; \
         no checkpoint, no close; a New-Order and a Payment left open) and \
         reopened. open: the page file, double-write area, NVM frame headers (the in-update flag scan) and log; \
         analysis: the log pass less the time applying records; redo: applying changes, images and frees to pages; \
         undo: rolling back the open transactions; checkpoint: the one ending recovery. Changes skipped: the page \
         held them; unread: a flush record said its SSD copy was written after them, so the page was not read; in \
         NVM: the page's NVM frame held them (its header's page LSN), so the page was not fixed (NV-SQL §5.3).\n"
    );
    let series: Vec<(&str, &str)> = PHASES.to_vec();
    let c = category_chart("Recovery time by phase (TPC-C)", d, "seconds", points, &series);
    let rep = PartReport { part: "recovery", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-recovery", &md, &rep, &[("nvsql-recovery.svg".into(), c)])
}

pub(super) fn write_table4(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    let cfg = points.first().map(|p| p.config.name()).unwrap_or_default();
    header(&mut md, &format!("NVM replacement (NV-SQL Table 4), {cfg}"), d, workload);
    let rows: Vec<Vec<String>> = points
        .iter()
        .zip(TABLE4)
        .map(|(p, (name, _))| {
            let m = &p.median;
            vec![
                name.to_string(),
                p.policy.clone(),
                fmt_rate(get(m, "throughput")),
                pct(get(m, "dram_hit_ratio")),
                pct(get(m, "nvm_hit_ratio")),
                format!("{:.2}", get(m, "ssd_writes_per_unit")),
                format!("{:.3}", get(m, "nvm_admissions_per_unit")),
                format!("{:.3}", get(m, "nvm_evictions_per_unit")),
                format!("{:.2}", get(m, "nvm_writes_in_place_per_unit")),
                format!("{} / {}", pct(1.0 - get(m, "write_amount_new")), pct(get(m, "write_amount_new"))),
                format!("{:.1} / {:.1}", get(m, "updates_per_page_old"), get(m, "updates_per_page_new")),
            ]
        })
        .collect();
    table(
        &mut md,
        &[
            "replacement",
            "policy",
            "tx/s",
            "DRAM hit",
            "NVM hit",
            "SSD page writes / tx",
            "NVM admissions / tx",
            "NVM evictions / tx",
            "in-place NVM updates / tx",
            "write amount old / new",
            "updates / page old / new",
        ],
        &rows,
    );
    md.push_str(
        "\nWrite amount: the share of the pages leaving NVM (written to SSD if dirty) that stayed in the old sublist \
         throughout / that had been promoted to the new one. Updates / page: in-place updates made while in a sublist, \
         over the pages that entered it (a stay in NVM counts once per sublist). Plain LRU has no new sublist.\n",
    );
    let mut c = Chart::new(format!("NVM replacement rules, TPC-C on {cfg}"));
    c.subtitle = d.line();
    c.x_label = "NVM replacement".into();
    c.y_label = "per transaction".into();
    c.x_categories = TABLE4.iter().map(|(n, _)| (*n).to_string()).collect();
    c.y_format = AxisFormat::Plain;
    for (name, key) in [
        ("SSD page writes", "ssd_writes_per_unit"),
        ("NVM evictions", "nvm_evictions_per_unit"),
        ("in-place NVM updates", "nvm_writes_in_place_per_unit"),
    ] {
        c.series.push(Series {
            name: name.into(),
            points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, key))).collect(),
        });
    }
    let rep = PartReport { part: "table4", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-table4", &md, &rep, &[("nvsql-table4.svg".into(), c)])
}

/// NV-SQL's Figure 6: what each NVM use adds, step by step, on one equal-cost
/// configuration.
pub(super) fn write_ablation(out: &Path, d: &Describe, workload: &str, points: &[Point]) -> Result<()> {
    let mut md = String::new();
    let cfg = points.get(1).map(|p| p.config.label.clone()).unwrap_or_default();
    header(&mut md, &format!("What each NVM use adds (NV-SQL Figure 6), {cfg}"), d, workload);
    let base = points.first().map(|p| p.median.clone()).unwrap_or_default();
    let rows: Vec<Vec<String>> = points
        .iter()
        .zip(ABLATION_STEPS)
        .map(|(p, step)| {
            let m = &p.median;
            vec![
                step.to_string(),
                p.config.name(),
                placement(&p.config),
                ByteSize(p.config.nvm_bytes).to_string(),
                fmt_rate(get(m, "throughput")),
                change(get(m, "throughput"), get(&base, "throughput")),
                format!("{:.2}", get(m, "ssd_writes_per_unit")),
                change(get(m, "ssd_writes_per_unit"), get(&base, "ssd_writes_per_unit")),
                format!(
                    "{:.2} / {:.2} / {:.2}",
                    get(m, "ssd_writes_dram_evictions_per_unit"),
                    get(m, "ssd_writes_from_nvm_per_unit"),
                    get(m, "ssd_writes_checkpoint_per_unit")
                ),
                format!("{:.2}", get(m, "double_write_pages_per_unit")),
                format!("{:.1}", get(m, "ssd_data_kib_per_unit")),
                change(get(m, "ssd_data_kib_per_unit"), get(&base, "ssd_data_kib_per_unit")),
                format!("{:.2}", get(m, "ssd_reads_per_unit")),
                format!("{:.3}", get(m, "log_waits_per_unit")),
                pct(get(m, "dram_hit_ratio")),
                pct(get(m, "nvm_hit_ratio")),
                format!("{:.3} / {:.3}", get(m, "nvm_admissions_per_unit"), get(m, "nvm_evictions_per_unit")),
                format!("{:.2}", get(m, "nvm_writes_in_place_per_unit")),
            ]
        })
        .collect();
    table(
        &mut md,
        &[
            "step",
            "configuration",
            "double write · log buffer",
            "NVM pool",
            "tx/s",
            "vs DRAM-only",
            "SSD page writes / tx (in place)",
            "vs DRAM-only",
            "of them: DRAM victims / from NVM / checkpoint",
            "double-write pages / tx on SSD",
            "SSD KiB written / tx",
            "vs DRAM-only",
            "SSD page reads / tx",
            "log waits / tx",
            "DRAM hit",
            "NVM hit",
            "NVM admissions / evictions per tx",
            "in-place NVM updates / tx",
        ],
        &rows,
    );
    md.push_str(
        "\nSteps (NV-SQL §6.2.3): caching only is nvsql's NVM write cache with InnoDB's double-write area on SSD \
         and the log buffer in DRAM, all the NVM bought in the pool; + NVM double write moves the area into NVM \
         (about 1/32 of the NVM bought, §5.4); + NVM redo buffer puts the log buffer in an NVM ring too (durable as \
         appended: no log force at commit or before a page write-back). SSD page writes in place, by cause: dirty \
         DRAM victims; pages leaving NVM (its replacement's victims, pages a whole-page write takes back to DRAM, \
         the old dirty pages a checkpoint writes to bound the log); a checkpoint's writes of DRAM pages. Log waits: \
         callers that waited for the log file's sync (the write-ahead rule before a write-back, a checkpoint).\n",
    );
    let mut c = Chart::new(format!("What each NVM use adds, TPC-C on {cfg}"));
    c.subtitle = d.line();
    c.x_label = "configuration".into();
    c.y_label = "per transaction; tx/s ÷ DRAM-only".into();
    c.x_categories = ABLATION_STEPS.iter().map(|s| (*s).to_string()).collect();
    c.y_format = AxisFormat::Plain;
    let t0 = get(&base, "throughput");
    c.series.push(Series {
        name: "throughput ÷ DRAM-only".into(),
        points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, "throughput") / t0)).collect(),
    });
    for (name, key) in [
        ("SSD page writes in place", "ssd_writes_per_unit"),
        ("double-write pages on SSD", "double_write_pages_per_unit"),
        ("SSD page reads", "ssd_reads_per_unit"),
    ] {
        c.series.push(Series {
            name: name.into(),
            points: points.iter().enumerate().map(|(i, p)| (i as f64, get(&p.median, key))).collect(),
        });
    }
    let rep = PartReport { part: "ablation", setup: d, workload: workload.into(), points };
    write_part(out, "nvsql-ablation", &md, &rep, &[("nvsql-ablation.svg".into(), c)])
}
