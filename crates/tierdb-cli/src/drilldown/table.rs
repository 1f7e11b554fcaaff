//! drilldown's text: the header naming the setup, the tables of the parts, the
//! targets, and the notes.

use std::fmt::Write as _;

use comfy_table::Table;
use tierdb::ByteSize;
use tierdb::buffer::MIN_DRAM_FRAMES;
use tierdb::device::EmulationMode;

use tierdb_bench::experiments::drilldown::{DrilldownReport, Part, Plan, Runs, SWEEP_ARCHS, dram_at};
use tierdb_bench::harness::{Setup, devices_line, fmt_rate, ratio};

use super::DrilldownArgs;

/// What a reader must know besides the tables.
pub(super) fn notes(args: &DrilldownArgs, plan: &Plan, lookups: &Setup) -> Vec<String> {
    let mut notes = Vec::new();
    let has = |p| plan.parts.contains(&p);
    if has(Part::Latency) {
        if lookups.mode == EmulationMode::Off {
            notes.push("mode off: device latencies are not emulated, so the latency points differ in name only".into());
        }
        notes.push(format!(
            "latency: each point is {} with the read latency set and the write latency raised to it where lower (it is {} ns); persist cost ({} ns), bandwidth and interference are kept",
            lookups.nvm_profile.name, lookups.nvm_profile.write_latency_ns, lookups.nvm_profile.persist_ns
        ));
    }
    if has(Part::Rw) {
        notes.push(
            "rw: every architecture runs its raw tree (no log, as in every other part); the paper's engines also wrote a log record per update".into(),
        );
    }
    if has(Part::Dram) {
        let page = lookups.page_size_bytes as u64;
        for &pct in &plan.dram_percents {
            if let (dram, true) = dram_at(pct, args.nvm, page) {
                notes.push(format!(
                    "dram: {pct}% of {} is fewer than {MIN_DRAM_FRAMES} pages of {}; ran with the buffer manager's minimum, {dram}",
                    args.nvm,
                    ByteSize(page)
                ));
            }
        }
    }
    notes
}

pub(super) fn describe(r: &DrilldownReport) -> String {
    let s = &r.setup;
    let w = &s.workload;
    format!(
        "{} · workload ro ({} {:?}) · {} · median of {} run(s) · {} s warm-up + {} run · CPU-cache model for in-place NVM reads {}",
        r.machine.label(),
        w.get("requestdistribution").unwrap_or_default(),
        w.zipfian_constant(),
        devices_line(s, &s.mode.to_string(), r.dram_bytes, r.nvm_bytes, r.data_bytes),
        r.runs,
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s")).unwrap_or_else(|| "operationcount".into()),
        s.cpu_cache_label(r.data_bytes),
    )
}

/// The child fixes by way, with the share that found an unswizzled mini page.
fn child_fixes(row: &tierdb_bench::experiments::drilldown::Fig10Row) -> String {
    match (row.child_fixes_swizzled, row.child_fixes_table_full, row.child_fixes_table_mini) {
        (Some(s), Some(f), Some(m)) => {
            let all = (s + f + m).max(1);
            format!("{s} / {f} / {m} ({:.1}% mini)", 100.0 * m as f64 / all as f64)
        }
        _ => "—".into(),
    }
}

fn dash<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

fn times(v: f64) -> String {
    format!("{v:.2}×")
}

fn percent(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

fn count(v: u64) -> String {
    if v < 100_000 { v.to_string() } else { fmt_rate(v as f64) }
}

pub(super) fn render_text(r: &DrilldownReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb drilldown: {}", describe(r));
    if let Some(f) = &r.fig10 {
        let mut t = Table::new();
        t.set_header([
            "step",
            "ops/s",
            "vs basic",
            "NVM lines loaded",
            "lines / lookup",
            "line faults",
            "mini pages",
            "mini promotions",
            "swizzles",
            "child fixes: swizzled / table→frame / table→mini",
        ]);
        for row in &f.rows {
            t.add_row([
                row.step.to_string(),
                dash(row.ops_per_sec, fmt_rate),
                dash(row.relative_to_basic, times),
                dash(row.nvm_lines_loaded, count),
                dash(row.nvm_lines_per_lookup, |v| format!("{v:.2}")),
                dash(row.line_faults, count),
                dash(row.mini_allocations, count),
                dash(row.mini_promotions, count),
                dash(row.swizzles, count),
                child_fixes(row),
            ]);
        }
        let _ = writeln!(
            out,
            "\nFigure 10: {}, YCSB-RO, techniques added one at a time (counters: medians over the measured runs)\n{t}",
            f.arch
        );
        let d = &f.nvm_direct;
        let _ = writeln!(
            out,
            "reference: {} {} ops/s, {} basic",
            d.arch,
            dash(d.ops_per_sec, fmt_rate),
            dash(d.relative_to_basic, times)
        );
        for target in &f.targets {
            let value = match (target.value, &target.missing) {
                (Some(v), _) => format!("{v:.2}"),
                (None, Some(why)) => format!("— ({why})"),
                (None, None) => "—".into(),
            };
            let verdict = match target.met {
                Some(true) => ": met",
                Some(false) => ": not met",
                None => "",
            };
            let _ =
                writeln!(out, "{}: {value} (target {}, paper {}){verdict}", target.what, target.target, target.paper);
        }
    }
    if let Some(s) = &r.scan {
        let mut t = Table::new();
        t.set_header(["step", "short scans/s", "% of basic", "full scans/s", "% of basic"]);
        for row in &s.rows {
            let full_rate = |v: f64| if v >= 100.0 { fmt_rate(v) } else { format!("{v:.3}") };
            t.add_row([
                row.step.to_string(),
                dash(row.short_scans_per_sec, fmt_rate),
                dash(row.short_relative_to_basic, percent),
                dash(row.full_scans_per_sec, full_rate),
                dash(row.full_relative_to_basic, percent),
            ]);
        }
        let _ = writeln!(
            out,
            "\n§5.4.2 overhead: {} scans, techniques added one at a time\n{t}\nshort: {} records from a zipfian start, one field of each; full: the whole table from its first key, one field of each record, whole scans only",
            s.arch, s.short_scan_records
        );
    }
    if let Some(l) = &r.latency {
        let mut t = Table::new();
        let mut header = vec!["NVM read ns".to_string(), "write ns".to_string()];
        header.extend(SWEEP_ARCHS.iter().map(|(a, tech)| format!("{a} ({tech}) ops/s")));
        header.extend(["three-tier / basic-nvm-bm".into(), "three-tier / nvm-direct".into()]);
        t.set_header(header);
        for pair in l.rows.chunks(SWEEP_ARCHS.len()) {
            let mut cells = vec![pair[0].read_latency_ns.to_string(), pair[0].write_latency_ns.to_string()];
            cells.extend(pair.iter().map(|row| dash(row.ops_per_sec, fmt_rate)));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[1].ops_per_sec), times));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[2].ops_per_sec), times));
            t.add_row(cells);
        }
        let _ = writeln!(out, "\nFigure 12: NVM latency ({}; {})\n{t}", l.base_profile, l.rule);
    }
    if let Some(d) = &r.dram {
        let mut t = Table::new();
        let mut header = vec!["DRAM % of NVM".to_string(), "DRAM".to_string()];
        header.extend(SWEEP_ARCHS.iter().map(|(a, tech)| format!("{a} ({tech}) ops/s")));
        header.extend(["three-tier / basic-nvm-bm".into(), "three-tier / nvm-direct".into()]);
        t.set_header(header);
        for pair in d.rows.chunks(SWEEP_ARCHS.len()) {
            let clamp = if pair[0].clamped { " (minimum)" } else { "" };
            let mut cells =
                vec![format!("{}", pair[0].dram_percent), format!("{}{clamp}", ByteSize(pair[0].dram_bytes))];
            cells.extend(pair.iter().map(|row| dash(row.ops_per_sec, fmt_rate)));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[1].ops_per_sec), times));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[2].ops_per_sec), times));
            t.add_row(cells);
        }
        let _ = writeln!(out, "\nFigure 13: DRAM size, NVM fixed at {}\n{t}", ByteSize(r.nvm_bytes));
    }
    for (title, part) in [
        ("Figure 14: DRAM, NVM and data scaled together (YCSB-RO)", &r.size),
        ("Figure 15: YCSB-R/W over the share of updates", &r.rw),
    ] {
        let Some(p) = part else { continue };
        let mut t = Table::new();
        let mut header = vec![p.x_is.to_string(), "DRAM / NVM / data".to_string()];
        header.extend(SWEEP_ARCHS.iter().map(|(a, tech)| format!("{a} ({tech}) ops/s")));
        header.extend(["three-tier / basic-nvm-bm".into(), "three-tier / nvm-direct".into()]);
        t.set_header(header);
        for pair in p.rows.chunks(SWEEP_ARCHS.len()) {
            let sizes = format!(
                "{} / {} / {}",
                ByteSize(pair[0].dram_bytes),
                ByteSize(pair[0].nvm_bytes),
                ByteSize(pair[0].data_bytes)
            );
            let mut cells = vec![format!("{}", pair[0].x), sizes];
            cells.extend(pair.iter().map(|row| dash(row.ops_per_sec, fmt_rate)));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[1].ops_per_sec), times));
            cells.push(dash(ratio(pair[0].ops_per_sec, pair[2].ops_per_sec), times));
            t.add_row(cells);
        }
        let _ = writeln!(out, "\n{title}\n{t}");
    }
    let skipped: Vec<String> = skipped_runs(r);
    if !r.notes.is_empty() || !skipped.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for n in r.notes.iter().chain(&skipped) {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

/// A line per configuration without a value, saying why.
fn skipped_runs(r: &DrilldownReport) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |what: String, runs: &Runs| {
        if let Some(why) = &runs.skipped {
            out.push(format!("{what}: {why}"));
        }
    };
    for row in r.fig10.iter().flat_map(|f| &f.rows) {
        note(format!("fig10 {}", row.step), &row.runs);
    }
    for d in r.fig10.iter().map(|f| &f.nvm_direct) {
        note(format!("fig10 {}", d.arch), &d.runs);
    }
    for row in r.scan.iter().flat_map(|s| &s.rows) {
        note(format!("scan {} short", row.step), &row.short);
        note(format!("scan {} full", row.step), &row.full);
    }
    for row in r.latency.iter().flat_map(|l| &l.rows) {
        note(format!("latency {} {} ns", row.arch, row.read_latency_ns), &row.runs);
    }
    for row in r.dram.iter().flat_map(|d| &d.rows) {
        note(format!("dram {} {}%", row.arch, row.dram_percent), &row.runs);
    }
    for row in r.size.iter().flat_map(|d| &d.rows) {
        note(format!("size {} ×{}", row.arch, row.x), &row.runs);
    }
    for row in r.rw.iter().flat_map(|d| &d.rows) {
        note(format!("rw {} {}", row.arch, row.workload), &row.runs);
    }
    out
}
