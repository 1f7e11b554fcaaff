//! restart-bench's text and plot: the header naming the setup, the table of the
//! series, the notes, and Figure 17's chart.

use std::fmt::Write as _;

use comfy_table::Table;
use tierdb::ByteSize;
use tierdb::device::EmulationMode;

use tierdb_bench::experiments::restart::{PEAK_FRACTION, STEADY_WINDOW_SECS, SeriesReport};
use tierdb_bench::harness::{Setup, devices_line, fmt_rate};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes};

use super::{RestartArgs, RestartReport};

/// What a reader must know besides the table.
pub(super) fn notes(args: &RestartArgs, setup: &Setup, series: &[SeriesReport]) -> Vec<String> {
    let mut notes = Vec::new();
    notes.push("FPTree, the paper's fourth line in Figure 17, is not part of tierdb".into());
    notes.push(format!(
        "t = 0 is the reopen's start: the timeline's first stretch without lookups is the reopen and the table's opening; steady state = median bucket of the last {STEADY_WINDOW_SECS} s (the whole run if shorter); time to peak = end of the first bucket at {:.0}% of it; one run per architecture",
        100.0 * PEAK_FRACTION
    ));
    match setup.mode {
        EmulationMode::Model => notes.push(
            "mode model: times and throughput are modelled (wall time plus the device time modelled on each thread); the NVM scan time is wall time".into(),
        ),
        EmulationMode::Off => {
            notes.push("mode off: device latencies are not emulated, so SSD and NVM cost only this machine's time".into())
        }
        _ => {}
    }
    let distribution = setup.workload.get("requestdistribution").unwrap_or_default();
    if distribution != "uniform" {
        notes.push(format!("requests are {distribution} (--set), not uniform as in Figure 17"));
    }
    if let Some(l) = series.iter().find(|l| l.load.data_bytes > args.dram.bytes()) {
        notes.push(format!(
            "the data ({}) is larger than DRAM ({}): unlike Figure 17 the workload does not fit the DRAM buffer pool",
            ByteSize(l.load.data_bytes),
            args.dram
        ));
    }
    if args.engine.buffered_io {
        notes.push("--buffered-io: ssd-bm's reads after the restart may come from the OS page cache".into());
    }
    for l in series {
        if let Some(info) = &l.nvm_restart {
            if let Some(why) = &info.formatted_because {
                notes.push(format!("{}: the NVM pool was formatted at the reopen, as {why}", l.label));
            }
            let page = setup.page_size_bytes as u64;
            let data_pages = l.load.data_bytes / page;
            if (info.pages_reused as u64) < data_pages {
                notes.push(format!(
                    "{}: {} of the table's {data_pages} pages came back from NVM; the rest are read from SSD",
                    l.label, info.pages_reused
                ));
            }
            if !info.frames_cleared.is_empty() {
                notes.push(format!(
                    "{}: the reopen cleared {} NVM frame header(s)",
                    l.label,
                    info.frames_cleared.len()
                ));
            }
        }
        if l.not_found > 0 {
            notes.push(format!("{}: {} lookups did not find their key", l.label, l.not_found));
        }
        if l.ops == 0 {
            notes.push(format!("{}: no lookup completed before the end", l.label));
        }
    }
    notes
}

fn describe(r: &RestartReport) -> String {
    let s = &r.setup;
    format!(
        "{} · workload ro ({}) · {} · {} s after the restart in {} ms buckets · CPU-cache model for in-place NVM reads {}",
        r.machine.label(),
        s.workload.get("requestdistribution").unwrap_or_default(),
        devices_line(s, &s.mode.to_string(), r.dram_bytes, r.nvm_bytes, r.data_bytes),
        r.duration_secs,
        r.interval_ms,
        s.cpu_cache_label(r.data_bytes),
    )
}

/// Seconds as ms below one second.
fn duration(secs: f64) -> String {
    if secs < 1.0 { format!("{:.1} ms", secs * 1e3) } else { format!("{secs:.2} s") }
}

fn dash<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

pub(super) fn render_text(r: &RestartReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "tierdb restart-bench: {}", describe(r));
    let mut t = Table::new();
    t.set_header([
        "architecture".to_string(),
        "reopen".to_string(),
        "NVM scan".to_string(),
        "first lookup".to_string(),
        format!("first {} ms ops/s", r.interval_ms),
        format!("{:.0}% of peak at", 100.0 * PEAK_FRACTION),
        "steady ops/s".to_string(),
        "SSD reads".to_string(),
        "NVM hits".to_string(),
    ]);
    for l in &r.series {
        let scan = l.nvm_restart.as_ref().map(|i| match &i.formatted_because {
            Some(_) => "formatted".to_string(),
            None => {
                // nvm-direct reads an allocation map, one byte per page slot.
                let what = if l.arch == tierdb::arch::Architecture::NvmDirect { "map entries" } else { "headers" };
                format!(
                    "{}: {} {what}, {} {what}/s, {} pages",
                    duration(i.scan_secs),
                    i.nvm_frames,
                    dash(l.scan_headers_per_sec, fmt_rate),
                    i.pages_reused
                )
            }
        });
        t.add_row([
            l.label.to_string(),
            duration(l.open_secs),
            dash(scan, |s| s),
            dash(l.first_op_secs, duration),
            fmt_rate(l.first_interval_ops_per_sec),
            dash(l.time_to_peak_secs, duration),
            dash(l.steady_ops_per_sec, fmt_rate),
            l.ssd_reads.to_string(),
            l.nvm_hits.to_string(),
        ]);
    }
    let _ = writeln!(
        out,
        "\nFigure 17: lookups right after a clean restart (times from the reopen's start; counters from the reopen's end to the run's end)\n{t}"
    );
    write_notes(&mut out, &r.notes);
    out
}

pub(super) fn chart(r: &RestartReport) -> Chart {
    let mut c = Chart::new("Figure 17: throughput after a clean restart");
    c.subtitle = describe(r);
    c.x_label = "seconds since the restart began".into();
    c.y_label = if r.setup.mode == EmulationMode::Model { "modelled lookups / s".into() } else { "lookups / s".into() };
    c.legend = LegendPosition::LowerRight;
    for l in &r.series {
        let t = &l.timeline;
        let points = (0..t.ops.len())
            .map(|i| {
                let (start, end) = t.span_secs(i);
                ((start + end) / 2.0, t.ops_per_sec[i])
            })
            .collect();
        c.series.push(Series { name: l.label.into(), points });
    }
    c
}
