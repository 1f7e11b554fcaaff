//! `tierdb drilldown`: the performance drill-down and the NVM sensitivity experiments of
//! van Renen et al., SIGMOD 2018 (§5.4 and §5.6), at this machine's scale.
//!
//! Four parts, chosen with `--parts`:
//! 1. `fig10` (Figure 10): `three-tier` under YCSB-RO (zipf 1.0) with the techniques added
//!    one at a time ([`Techniques::DRILLDOWN`]); throughput relative to `basic`, NVM lines
//!    loaded per lookup, mini-page promotions, swizzles; `nvm-direct` on the same lookups
//!    as the paper's reference line.
//! 2. `scan` (the §5.4.2 overhead table): short scans of exactly 100 records and full
//!    scans of the table at the same steps, relative to `basic`.
//! 3. `latency` (Figure 12): `three-tier` (all techniques), `basic-nvm-bm` and
//!    `nvm-direct` over NVM read latencies.
//! 4. `dram` (Figure 13): the three over DRAM sizes given as percentages of the NVM size
//!    (`nvm-direct` uses no DRAM: its line is flat by design).
//!
//! Every configuration is a job run `--runs` times with fresh files. The runs go round
//! robin (run 1 of every job, then run 2, …), so that drift of a shared machine spreads
//! over all configurations instead of landing on one. A job's value is the median of its
//! runs, and every ratio is taken between medians of this invocation.
//!
//! Full scans are not a YCSB operation: a job of them loads the table through the YCSB
//! driver (a zero-length run), then reopens the table and scans it from its first key to
//! its end on `--threads` threads, whole scans only, until the measured time has passed.
//!
//! Engine files are removed after each run, on error, and on Ctrl-C (the handler of
//! `tierdb_bench::harness`). Runs are sequential; a run's threads are joined before the next starts.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use comfy_table::Table;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::buffer::MIN_DRAM_FRAMES;
use tierdb::buffer::Techniques;
use tierdb::device::{DeviceProfile, EmulationMode};

use tierdb_bench::experiments::drilldown::{
    DRILLDOWN_ARCH, DrilldownReport, Fig10Row, Job, Kind, Part, Plan, Runs, SHORT_SCAN_RECORDS, SWEEP_ARCHS, dram_at,
    report,
};
use tierdb_bench::experiments::full_scans;
use tierdb_bench::harness::{
    EngineArgs, Middle, Progress, Setup, fmt_rate, is_full, median, ratio, remove_files_on_interrupt, run_one, value,
};
use tierdb_bench::plot::{AxisFormat, Chart, LegendPosition, Marker, Series, write_outputs};

const RUNS_MAX: usize = 25;
/// Points of one sweep (`--latencies`, `--dram-percent`).
const SWEEP_POINTS_MAX: usize = 32;
const LATENCY_NS_MIN: f64 = 1.0;
const LATENCY_NS_MAX: f64 = 100_000.0;
const DRAM_PERCENT_MAX: f64 = 100.0;

const _: () = assert!(LATENCY_NS_MIN > 0.0 && LATENCY_NS_MIN < LATENCY_NS_MAX);
const _: () = assert!(SWEEP_POINTS_MAX <= tierdb_bench::plot::CATEGORIES_MAX);

#[derive(Args, Debug)]
pub struct DrilldownArgs {
    /// Parts to run, comma-separated: fig10, scan, latency, dram.
    #[arg(long, default_value = "fig10,scan,latency,dram")]
    parts: String,
    /// DRAM of the fig10, scan and latency parts (DRAM : NVM : data ≈ 1 : 5 : 5).
    #[arg(long, default_value = "64MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "320MiB")]
    nvm: ByteSize,
    /// B+-tree size after loading; must fit the NVM.
    #[arg(long, default_value = "300MiB")]
    data: ByteSize,
    /// Runs of each configuration; tables and plots show the median.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// NVM read latencies of the latency part, ns, increasing, comma-separated.
    #[arg(long, default_value = "165,300,500,800,1200,1800")]
    latencies: String,
    /// DRAM sizes of the dram part, percent of --nvm, increasing, comma-separated.
    #[arg(long, default_value = "1,5,10,20,40,60,80,100")]
    dram_percent: String,
    /// Directory for drilldown.txt, drilldown.json and the SVG charts.
    #[arg(long, default_value = "tierdb-drilldown")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: DrilldownArgs) -> Result<()> {
    // 1. Check everything before the first run.
    let plan = plan(&args)?;
    let lookups = args.engine.setup("ro")?;
    let scans = scan_setup(&args.engine)?;
    let mut jobs = jobs(&args, &plan, &lookups, &scans)?;
    let mut notes = notes(&args, &plan, &lookups);
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    // 2. Run round robin: run r of every job, then run r + 1.
    let progress = Progress::new(!args.quiet);
    let per_round = jobs.len();
    for r in 0..args.runs {
        for (i, job) in jobs.iter_mut().enumerate() {
            if job.runs.skipped.is_some() {
                continue;
            }
            if !args.quiet {
                progress.println(&format!(
                    "[{}/{}] {} {}, run {} of {}",
                    r * per_round + i + 1,
                    per_round * args.runs,
                    job.part.name(),
                    job.label,
                    r + 1,
                    args.runs
                ));
            }
            let mut engine = args.engine.clone();
            engine.techniques = Some(job.techniques);
            let tag = format!("dd{i}r{r}");
            let outcome = match job.kind {
                Kind::Ycsb => {
                    run_one(&engine, &job.setup, job.arch, job.dram, args.nvm, Some(args.data), &tag, &progress)
                }
                Kind::FullScans => {
                    full_scans::run(&engine, &job.setup, job.arch, job.dram, args.nvm, args.data, &tag, &progress)
                }
            };
            match outcome {
                Ok(rep) => {
                    job.runs.per_sec_runs.push(value(&rep));
                    job.runs.reports.push(rep);
                }
                Err(e) if is_full(&e) => job.runs.skipped = Some(format!("did not fit: {e:#}")),
                Err(e) => return Err(e.context(format!("{} {}", job.part.name(), job.label))),
            }
        }
    }
    progress.finish();
    for job in &mut jobs {
        job.runs.per_sec = if job.runs.skipped.is_some() {
            None
        } else {
            median(job.runs.per_sec_runs.iter().copied(), Middle::Upper)
        };
    }

    // 3. Report.
    let report = report((args.dram, args.nvm, args.data), args.runs, &plan, lookups, scans, jobs, &mut notes);
    let text = render_text(&report);
    let charts: Vec<(String, Chart)> = charts(&report).into_iter().map(|(n, c)| (n.to_string(), c)).collect();
    write_outputs(&args.out, "drilldown", &text, &report, &charts)?;
    Ok(())
}

/// Parses and checks the lists and the sizes.
fn plan(args: &DrilldownArgs) -> Result<Plan> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if args.data.bytes() > args.nvm.bytes() {
        bail!(
            "--data {} is larger than --nvm {}: the drill-down keeps all data in NVM (the paper's DRAM : NVM : data of 1 : 5 : 5)",
            args.data,
            args.nvm
        );
    }
    if let Some(t) = args.engine.techniques {
        bail!(
            "--techniques {t}: drilldown sets the techniques itself (fig10 and scan: each step; latency and dram: three-tier all, basic-nvm-bm none)"
        );
    }
    let known = Part::ALL.map(Part::name).join(", ");
    if args.parts.trim().is_empty() {
        bail!("--parts is empty; choose from {known}");
    }
    let mut parts = Vec::new();
    for word in args.parts.split(',').map(str::trim) {
        let part = Part::ALL
            .into_iter()
            .find(|p| p.name() == word)
            .ok_or_else(|| anyhow!("--parts: unknown part {word:?} in {:?}; known: {known}", args.parts))?;
        if parts.contains(&part) {
            bail!("--parts: {word} is listed twice");
        }
        parts.push(part);
    }
    parts.sort();
    let latencies_ns = sweep("--latencies", &args.latencies, LATENCY_NS_MIN, LATENCY_NS_MAX, "ns")?;
    let dram_percents = sweep("--dram-percent", &args.dram_percent, 0.0, DRAM_PERCENT_MAX, "%")?;
    if dram_percents[0] <= 0.0 {
        bail!("--dram-percent {}: must be above 0", dram_percents[0]);
    }
    Ok(Plan { parts, latencies_ns, dram_percents })
}

/// A non-empty, strictly increasing list of numbers within `min..=max`.
fn sweep(flag: &str, text: &str, min: f64, max: f64, unit: &str) -> Result<Vec<f64>> {
    let mut values: Vec<f64> = Vec::new();
    for word in text.split(',').map(str::trim) {
        if word.is_empty() {
            bail!("{flag} {text:?}: expected a comma-separated list of numbers, found an empty entry");
        }
        let v: f64 = word.parse().map_err(|_| anyhow!("{flag}: {word:?} is not a number"))?;
        if !(v.is_finite() && (min..=max).contains(&v)) {
            bail!("{flag}: {word} is outside {min}..={max} {unit}");
        }
        if let Some(&last) = values.last()
            && v <= last
        {
            bail!("{flag} {text:?}: the list must be increasing, and {v} follows {last}");
        }
        values.push(v);
    }
    if values.len() > SWEEP_POINTS_MAX {
        bail!("{flag}: {} points, at most {SWEEP_POINTS_MAX}", values.len());
    }
    Ok(values)
}

/// The short scans' setup: the paper's scan workload with exactly 100 records a scan.
fn scan_setup(engine: &EngineArgs) -> Result<Setup> {
    let mut s = engine.setup("scan")?;
    // In an order where every step is valid whatever --set gave: max, then min.
    let len = SHORT_SCAN_RECORDS.to_string();
    for (k, v) in [("minscanlength", "1"), ("maxscanlength", len.as_str()), ("minscanlength", len.as_str())] {
        s.workload.set(k, v).with_context(|| format!("fixing the short scans at {SHORT_SCAN_RECORDS} records"))?;
    }
    s.workload.set("scanlengthdistribution", "uniform")?;
    Ok(s)
}

/// The NVM profile `base` with read latency `read_ns`; the write latency is raised to it
/// where it was lower, the persist cost kept.
fn profile_at(base: &DeviceProfile, read_ns: f64) -> Result<DeviceProfile> {
    let mut p = base.clone();
    p.name = format!("{}@{read_ns}ns", base.name);
    p.read_latency_ns = read_ns;
    p.write_latency_ns = base.write_latency_ns.max(read_ns);
    p.validate(&p.name).with_context(|| format!("NVM read latency {read_ns} ns"))?;
    Ok(p)
}

fn jobs(args: &DrilldownArgs, plan: &Plan, lookups: &Setup, scans: &Setup) -> Result<Vec<Job>> {
    let with = |setup: &Setup, t: Techniques| Setup { techniques: Some(t), ..setup.clone() };
    let job = |part, label: String, kind, arch, techniques, dram, setup: Setup| Job {
        part,
        label,
        kind,
        arch,
        techniques,
        dram,
        setup,
        runs: Runs::default(),
    };
    let mut jobs = Vec::new();
    for &part in &plan.parts {
        match part {
            Part::Fig10 => {
                for (step, t) in Techniques::DRILLDOWN {
                    let label = format!("{DRILLDOWN_ARCH} {step}");
                    jobs.push(job(part, label, Kind::Ycsb, DRILLDOWN_ARCH, t, args.dram, with(lookups, t)));
                }
                let (d, none) = (Architecture::NvmDirect, Techniques::NONE);
                jobs.push(job(part, d.to_string(), Kind::Ycsb, d, none, args.dram, with(lookups, none)));
            }
            Part::Scan => {
                for (step, t) in Techniques::DRILLDOWN {
                    for (kind, what) in [(Kind::Ycsb, "short scans"), (Kind::FullScans, "full scans")] {
                        let label = format!("{DRILLDOWN_ARCH} {step} {what}");
                        jobs.push(job(part, label, kind, DRILLDOWN_ARCH, t, args.dram, with(scans, t)));
                    }
                }
            }
            Part::Latency => {
                for &ns in &plan.latencies_ns {
                    let profile = profile_at(&lookups.nvm_profile, ns)?;
                    for (arch, t) in SWEEP_ARCHS {
                        let setup = Setup { nvm_profile: profile.clone(), ..with(lookups, t) };
                        jobs.push(job(part, format!("{arch} @{ns} ns"), Kind::Ycsb, arch, t, args.dram, setup));
                    }
                }
            }
            Part::Dram => {
                for &pct in &plan.dram_percents {
                    let (dram, _) = dram_at(pct, args.nvm, lookups.page_size_bytes as u64);
                    for (arch, t) in SWEEP_ARCHS {
                        let label = format!("{arch} DRAM {pct}% = {dram}");
                        jobs.push(job(part, label, Kind::Ycsb, arch, t, dram, with(lookups, t)));
                    }
                }
            }
        }
    }
    Ok(jobs)
}

/// What a reader must know besides the tables.
fn notes(args: &DrilldownArgs, plan: &Plan, lookups: &Setup) -> Vec<String> {
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

fn describe(r: &DrilldownReport) -> String {
    let s = &r.setup;
    let w = &s.workload;
    format!(
        "{} ({} CPUs) · workload ro ({} {:?}) · mode {} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · data {} · page {} · {} thread(s) · seed {} · median of {} run(s) · {} s warm-up + {} run · CPU-cache model for in-place NVM reads {}",
        r.machine.cpu,
        r.machine.logical_cpus,
        w.get("requestdistribution").unwrap_or_default(),
        w.zipfian_constant(),
        s.mode,
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        ByteSize(r.dram_bytes),
        ByteSize(r.nvm_bytes),
        ByteSize(r.data_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        r.runs,
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s")).unwrap_or_else(|| "operationcount".into()),
        ByteSize(s.cpu_cache_model_bytes),
    )
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

fn render_text(r: &DrilldownReport) -> String {
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
    out
}

/// The charts of the parts that ran, with their file names.
fn charts(r: &DrilldownReport) -> Vec<(&'static str, Chart)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_must_be_increasing_and_in_range() {
        assert_eq!(sweep("--x", "1, 2.5,10", 0.0, 10.0, "ns").unwrap(), vec![1.0, 2.5, 10.0]);
        for (bad, want) in [
            ("", "empty entry"),
            ("1,,2", "empty entry"),
            ("1,x", "not a number"),
            ("2,1", "increasing"),
            ("1,1", "increasing"),
            ("11", "outside"),
            ("-1", "outside"),
            ("NaN", "outside"),
        ] {
            let e = sweep("--x", bad, 0.0, 10.0, "ns").unwrap_err().to_string();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
        let many = (1..=SWEEP_POINTS_MAX + 1).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        assert!(sweep("--x", &many, 0.0, 1000.0, "ns").unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn dram_sizes_are_whole_pages_and_at_least_the_minimum() {
        let nvm = ByteSize(320 << 20);
        assert_eq!(dram_at(20.0, nvm, 16 << 10), (ByteSize(64 << 20), false));
        assert_eq!(dram_at(100.0, nvm, 16 << 10), (nvm, false));
        let (small, clamped) = dram_at(0.001, nvm, 16 << 10);
        assert!(clamped);
        assert_eq!(small.bytes(), MIN_DRAM_FRAMES as u64 * (16 << 10));
        let (odd, _) = dram_at(1.0, nvm, 16 << 10);
        assert_eq!(odd.bytes() % (16 << 10), 0);
        assert!(odd.bytes() <= nvm.bytes() / 100);
    }

    #[test]
    fn latency_profiles_keep_a_higher_write_latency_and_say_what_they_are() {
        let base = DeviceProfile::preset("optane-dcpmm").unwrap();
        let low = profile_at(&base, 50.0).unwrap();
        assert_eq!((low.read_latency_ns, low.write_latency_ns), (50.0, base.write_latency_ns));
        let high = profile_at(&base, 800.0).unwrap();
        assert_eq!((high.read_latency_ns, high.write_latency_ns), (800.0, 800.0));
        assert_eq!(high.name, "optane-dcpmm@800ns");
        assert_eq!(high.persist_ns, base.persist_ns);
    }
}
