//! The drill-down experiments of `tierdb drilldown` (van Renen et al., SIGMOD 2018,
//! §5.4, §5.6 and the appendix's A.2 and A.3): the jobs' shapes and setups ([`scan_setup`], [`profile_at`]), their
//! runs, round robin ([`run_jobs`]), and the assembly of finished jobs into the
//! report's parts ([`report`]) with the targets; the command plans the jobs from
//! its arguments and renders the tables and plots.
//!
//! Invariants: jobs come back in the order they were planned, one per row; a skipped
//! job (its data did not fit) has no value, never a zero.

use anyhow::{Context, Result};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::buffer::MIN_DRAM_FRAMES;
use tierdb::buffer::Techniques;
use tierdb::counters::BufferStats;
use tierdb::device::DeviceProfile;
use tierdb_workload::YcsbSpec;

use crate::experiments::full_scans;
use crate::harness::{
    EngineArgs, Machine, Middle, Progress, RunReport, Setup, is_full, median, median_of_all, ratio, run_one, value,
};

/// Records of one short scan (§5.4.2: "range = 100").
pub const SHORT_SCAN_RECORDS: u32 = 100;
/// The architecture of Figure 10 and the scan table, whose techniques are switched.
pub const DRILLDOWN_ARCH: Architecture = Architecture::ThreeTier;
/// The lines of Figures 12 and 13, each with its own techniques (`nvm-direct` has no
/// DRAM buffer: its line in Figure 13 shows that DRAM does not matter to it).
pub const SWEEP_ARCHS: [(Architecture, Techniques); 3] = [
    (Architecture::ThreeTier, Techniques::ALL),
    (Architecture::BasicNvmBm, Techniques::NONE),
    (Architecture::NvmDirect, Techniques::NONE),
];
/// The targets for the NVM lines a lookup loads, and the paper's values (§5.4.1:
/// 652.5M lines basic, 11.8M with cache-line-grained pages, 5.6M with mini pages).
pub const CL_RATIO_TARGET_MIN: f64 = 20.0;
pub const CL_RATIO_PAPER: f64 = 55.0;
pub const MINI_RATIO_TARGET_MIN: f64 = 1.5;
pub const MINI_RATIO_PAPER: f64 = 2.0;
pub const LINES_PER_LOOKUP_TARGET_MAX: f64 = 10.0;
pub const LINES_PER_LOOKUP_PAPER: f64 = 6.5;

const _: () = assert!(Techniques::DRILLDOWN.len() == 4 && SWEEP_ARCHS.len() == 3);

/// One part of the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    Fig10,
    Scan,
    Latency,
    Dram,
    /// Figure 14: DRAM, NVM and data scaled together.
    Size,
    /// Figure 15: YCSB-R/W over the share of updates.
    Rw,
}

impl Part {
    pub const ALL: [Part; 6] = [Part::Fig10, Part::Scan, Part::Latency, Part::Dram, Part::Size, Part::Rw];

    pub fn name(self) -> &'static str {
        match self {
            Part::Fig10 => "fig10",
            Part::Scan => "scan",
            Part::Latency => "latency",
            Part::Dram => "dram",
            Part::Size => "size",
            Part::Rw => "rw",
        }
    }
}

/// What a job's operations are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The driver's workload: YCSB-RO lookups or short scans.
    Ycsb,
    /// Scans of the whole table ([`super::full_scans`]).
    FullScans,
}

/// One configuration, run `--runs` times.
pub struct Job {
    pub part: Part,
    /// Names the job in progress lines.
    pub label: String,
    pub kind: Kind,
    pub arch: Architecture,
    pub techniques: Techniques,
    pub dram: ByteSize,
    /// The NVM and the data of its runs (the `size` part scales them; every other part
    /// uses the command's).
    pub nvm: ByteSize,
    pub data: ByteSize,
    /// The setup of its runs: workload, techniques and NVM profile as this job needs.
    pub setup: Setup,
    pub runs: Runs,
}

/// The runs of one configuration, or why it has none.
#[derive(Default, Serialize)]
pub struct Runs {
    /// Throughput of each run in run order: operations (lookups or scans) per second,
    /// modelled in `model` mode.
    pub per_sec_runs: Vec<f64>,
    /// Median of `per_sec_runs` (the upper one of an even count); none if skipped.
    pub per_sec: Option<f64>,
    /// Why the configuration has no value (the data did not fit).
    pub skipped: Option<String>,
    /// Every run's full report.
    pub reports: Vec<RunReport>,
}

impl Runs {
    /// Median over the runs of `f`, none if skipped or empty.
    pub fn over_runs(&self, f: impl Fn(&RunReport) -> f64) -> Option<f64> {
        if self.skipped.is_some() {
            return None;
        }
        median(self.reports.iter().map(f), Middle::Upper)
    }

    /// Median over the runs of a buffer counter of the measured run.
    pub fn counter(&self, f: impl Fn(&BufferStats) -> u64) -> Option<u64> {
        self.over_runs(|r| f(&r.result.tiers.buffer) as f64).map(|v| v as u64)
    }
}

/// One of the targets, checked against this invocation's medians.
#[derive(Serialize)]
pub struct Target {
    pub what: &'static str,
    pub value: Option<f64>,
    /// `>= 20` or `<= 10`.
    pub target: String,
    pub paper: f64,
    pub met: Option<bool>,
    /// Why there is no value.
    pub missing: Option<String>,
}

#[derive(Serialize)]
pub struct Fig10Row {
    pub step: &'static str,
    pub techniques: Techniques,
    /// Median lookups per second, and its ratio to basic's median.
    pub ops_per_sec: Option<f64>,
    pub relative_to_basic: Option<f64>,
    /// Medians over the runs of the measured run's counters.
    pub nvm_lines_loaded: Option<u64>,
    pub nvm_lines_per_lookup: Option<f64>,
    pub line_faults: Option<u64>,
    pub mini_allocations: Option<u64>,
    pub mini_promotions: Option<u64>,
    /// Fixes of B+-tree children from a DRAM parent, by how the child was reached: a
    /// swizzled reference, the page table finding a full frame, the page table finding
    /// a mini page (never swizzled).
    pub child_fixes_swizzled: Option<u64>,
    pub child_fixes_table_full: Option<u64>,
    pub child_fixes_table_mini: Option<u64>,
    pub swizzles: Option<u64>,
    pub unswizzles: Option<u64>,
    pub runs: Runs,
}

#[derive(Serialize)]
pub struct Fig10 {
    pub arch: Architecture,
    pub rows: Vec<Fig10Row>,
    /// The paper's reference line: `nvm-direct` on the same lookups.
    pub nvm_direct: Fig10Reference,
    /// Ratios of the medians of NVM lines loaded per lookup (per lookup, so that runs of
    /// different lengths compare; with `--duration 0` every run has the same count).
    pub targets: Vec<Target>,
}

#[derive(Serialize)]
pub struct Fig10Reference {
    pub arch: Architecture,
    pub ops_per_sec: Option<f64>,
    pub relative_to_basic: Option<f64>,
    pub runs: Runs,
}

#[derive(Serialize)]
pub struct ScanRow {
    pub step: &'static str,
    pub techniques: Techniques,
    pub short_scans_per_sec: Option<f64>,
    pub short_relative_to_basic: Option<f64>,
    pub full_scans_per_sec: Option<f64>,
    pub full_relative_to_basic: Option<f64>,
    pub short: Runs,
    pub full: Runs,
}

#[derive(Serialize)]
pub struct ScanPart {
    pub arch: Architecture,
    pub short_scan_records: u32,
    /// The workload of the short scans (the full scans load the same table).
    pub workload: YcsbSpec,
    pub rows: Vec<ScanRow>,
}

#[derive(Serialize)]
pub struct LatencyRow {
    pub arch: Architecture,
    pub techniques: Techniques,
    pub read_latency_ns: f64,
    pub write_latency_ns: f64,
    pub nvm_profile: String,
    pub ops_per_sec: Option<f64>,
    pub runs: Runs,
}

#[derive(Serialize)]
pub struct LatencyPart {
    /// The profile every point was derived from, and how.
    pub base_profile: String,
    pub rule: String,
    pub rows: Vec<LatencyRow>,
}

#[derive(Serialize)]
pub struct DramRow {
    pub arch: Architecture,
    pub techniques: Techniques,
    pub dram_percent: f64,
    pub dram_bytes: u64,
    /// True when the percentage gave fewer than the buffer manager's minimum of frames.
    pub clamped: bool,
    pub ops_per_sec: Option<f64>,
    pub runs: Runs,
}

#[derive(Serialize)]
pub struct DramPart {
    pub dram_frames_min: usize,
    pub rows: Vec<DramRow>,
}

/// One point of the `size` (Figure 14) or `rw` (Figure 15) sweep.
#[derive(Serialize)]
pub struct SweepRow {
    pub arch: Architecture,
    pub techniques: Techniques,
    /// The sweep's variable: the scale factor of DRAM, NVM and data (`size`), or the
    /// percentage of updates (`rw`).
    pub x: f64,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    pub data_bytes: u64,
    /// The workload's name (`ro`, `rw:50`).
    pub workload: String,
    pub ops_per_sec: Option<f64>,
    pub runs: Runs,
}

#[derive(Serialize)]
pub struct SweepPart {
    /// What `x` is.
    pub x_is: &'static str,
    pub rows: Vec<SweepRow>,
}

#[derive(Serialize)]
pub struct DrilldownReport {
    pub command: &'static str,
    pub version: &'static str,
    pub machine: Machine,
    pub parts: Vec<Part>,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    pub data_bytes: u64,
    pub runs: usize,
    /// The lookups' setup. Scan jobs differ in the workload, latency points in the NVM
    /// profile, DRAM points in the DRAM size; each run's report holds its own setup.
    pub setup: Setup,
    pub notes: Vec<String>,
    pub fig10: Option<Fig10>,
    pub scan: Option<ScanPart>,
    pub latency: Option<LatencyPart>,
    pub dram: Option<DramPart>,
    pub size: Option<SweepPart>,
    pub rw: Option<SweepPart>,
}

/// Checked command-line lists.
pub struct Plan {
    pub parts: Vec<Part>,
    pub latencies_ns: Vec<f64>,
    pub dram_percents: Vec<f64>,
    /// Factors of the `size` part applied to DRAM, NVM and data.
    pub size_factors: Vec<f64>,
    /// Update percentages of the `rw` part.
    pub update_percents: Vec<f64>,
}

/// `size` scaled by `factor`, in whole pages, at least `min` pages.
pub fn scaled(size: ByteSize, factor: f64, page_bytes: u64, min_pages: u64) -> ByteSize {
    let pages = (size.bytes() as f64 * factor / page_bytes as f64).floor() as u64;
    ByteSize(pages.max(min_pages) * page_bytes)
}

/// DRAM of `percent` of `nvm`, in whole pages, at least the buffer manager's minimum.
/// Returns the size and whether it was raised to the minimum.
pub fn dram_at(percent: f64, nvm: ByteSize, page_bytes: u64) -> (ByteSize, bool) {
    let pages = (percent / 100.0 * nvm.bytes() as f64 / page_bytes as f64).floor() as u64;
    let min = MIN_DRAM_FRAMES as u64;
    (ByteSize(pages.max(min) * page_bytes), pages < min)
}

/// The short scans' setup: the paper's scan workload with exactly
/// [`SHORT_SCAN_RECORDS`] records a scan.
///
/// # Errors
/// A bad engine option or workload setting.
pub fn scan_setup(engine: &EngineArgs) -> Result<Setup> {
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
///
/// # Errors
/// A latency the profile's checks refuse.
pub fn profile_at(base: &DeviceProfile, read_ns: f64) -> Result<DeviceProfile> {
    let mut p = base.clone();
    p.name = format!("{}@{read_ns}ns", base.name);
    p.read_latency_ns = read_ns;
    p.write_latency_ns = base.write_latency_ns.max(read_ns);
    p.validate(&p.name).with_context(|| format!("NVM read latency {read_ns} ns"))?;
    Ok(p)
}

/// Runs every job `runs` times round robin (run r of every job, then run r + 1), so
/// that drift of a shared machine spreads over all configurations, with fresh files
/// each time (each job's own DRAM, NVM and data); then takes each job's
/// median. A job whose data does not fit is skipped from then on.
///
/// # Errors
/// A run's error other than a full device, naming the job.
pub fn run_jobs(engine: &EngineArgs, jobs: &mut [Job], runs: usize, quiet: bool, progress: &Progress) -> Result<()> {
    let per_round = jobs.len();
    for r in 0..runs {
        for (i, job) in jobs.iter_mut().enumerate() {
            if job.runs.skipped.is_some() {
                continue;
            }
            if !quiet {
                progress.println(&format!(
                    "[{}/{}] {} {}, run {} of {}",
                    r * per_round + i + 1,
                    per_round * runs,
                    job.part.name(),
                    job.label,
                    r + 1,
                    runs
                ));
            }
            let mut engine = engine.clone();
            engine.techniques = Some(job.techniques);
            let tag = format!("dd{i}r{r}");
            let (dram, nvm, data) = (job.dram, job.nvm, job.data);
            let outcome = match job.kind {
                Kind::Ycsb => run_one(&engine, &job.setup, job.arch, dram, nvm, Some(data), &tag, progress),
                Kind::FullScans => full_scans::run(&engine, &job.setup, job.arch, dram, nvm, data, &tag, progress),
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
    for job in jobs.iter_mut() {
        job.runs.per_sec = median_of_all(&job.runs.per_sec_runs, runs, Middle::Upper);
    }
    Ok(())
}

/// Turns the finished jobs into the report's parts, in job order.
#[allow(clippy::too_many_arguments)]
pub fn report(
    (dram, nvm, data): (ByteSize, ByteSize, ByteSize),
    runs: usize,
    plan: &Plan,
    lookups: Setup,
    scans: Setup,
    jobs: Vec<Job>,
    notes: &mut Vec<String>,
) -> DrilldownReport {
    let mut jobs = jobs.into_iter();
    let mut next = |part: Part| {
        let j = jobs.next().expect("one job per row");
        assert_eq!(j.part, part, "job {} in the wrong part", j.label);
        j
    };
    let mut out = DrilldownReport {
        command: "drilldown",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        parts: plan.parts.clone(),
        dram_bytes: dram.bytes(),
        nvm_bytes: nvm.bytes(),
        data_bytes: data.bytes(),
        runs,
        setup: lookups.clone(),
        notes: Vec::new(),
        fig10: None,
        scan: None,
        latency: None,
        dram: None,
        size: None,
        rw: None,
    };
    for &part in &plan.parts {
        match part {
            Part::Fig10 => {
                let mut rows: Vec<Fig10Row> = Techniques::DRILLDOWN
                    .iter()
                    .map(|&(step, techniques)| {
                        let runs = next(part).runs;
                        Fig10Row {
                            step,
                            techniques,
                            ops_per_sec: runs.per_sec,
                            relative_to_basic: None,
                            nvm_lines_loaded: runs.counter(|b| b.nvm_lines_loaded),
                            nvm_lines_per_lookup: runs.over_runs(|r| {
                                r.result.tiers.buffer.nvm_lines_loaded as f64 / r.result.ops.max(1) as f64
                            }),
                            line_faults: runs.counter(|b| b.line_faults),
                            mini_allocations: runs.counter(|b| b.mini_allocations),
                            mini_promotions: runs.counter(|b| b.mini_promotions),
                            child_fixes_swizzled: runs.counter(|b| b.child_fixes_swizzled),
                            child_fixes_table_full: runs.counter(|b| b.child_fixes_table_full),
                            child_fixes_table_mini: runs.counter(|b| b.child_fixes_table_mini),
                            swizzles: runs.counter(|b| b.swizzles),
                            unswizzles: runs.counter(|b| b.unswizzles),
                            runs,
                        }
                    })
                    .collect();
                let basic = rows[0].ops_per_sec;
                for r in &mut rows {
                    r.relative_to_basic = ratio(r.ops_per_sec, basic);
                }
                let runs = next(part).runs;
                let nvm_direct = Fig10Reference {
                    arch: Architecture::NvmDirect,
                    ops_per_sec: runs.per_sec,
                    relative_to_basic: ratio(runs.per_sec, basic),
                    runs,
                };
                if rows.iter().all(|r| r.nvm_lines_loaded == Some(0)) {
                    notes.push("fig10: the buffer manager counted no NVM lines loaded in any step".into());
                }
                let targets = fig10_targets(&rows);
                out.fig10 = Some(Fig10 { arch: DRILLDOWN_ARCH, rows, nvm_direct, targets });
            }
            Part::Scan => {
                let mut rows: Vec<ScanRow> = Techniques::DRILLDOWN
                    .iter()
                    .map(|&(step, techniques)| {
                        let short = next(part).runs;
                        let full = next(part).runs;
                        ScanRow {
                            step,
                            techniques,
                            short_scans_per_sec: short.per_sec,
                            short_relative_to_basic: None,
                            full_scans_per_sec: full.per_sec,
                            full_relative_to_basic: None,
                            short,
                            full,
                        }
                    })
                    .collect();
                let (short, full) = (rows[0].short_scans_per_sec, rows[0].full_scans_per_sec);
                for r in &mut rows {
                    r.short_relative_to_basic = ratio(r.short_scans_per_sec, short);
                    r.full_relative_to_basic = ratio(r.full_scans_per_sec, full);
                }
                out.scan = Some(ScanPart {
                    arch: DRILLDOWN_ARCH,
                    short_scan_records: SHORT_SCAN_RECORDS,
                    workload: scans.workload.clone(),
                    rows,
                });
            }
            Part::Latency => {
                let mut rows = Vec::new();
                for &ns in &plan.latencies_ns {
                    for (arch, techniques) in SWEEP_ARCHS {
                        let j = next(part);
                        rows.push(LatencyRow {
                            arch,
                            techniques,
                            read_latency_ns: ns,
                            write_latency_ns: j.setup.nvm_profile.write_latency_ns,
                            nvm_profile: j.setup.nvm_profile.name.clone(),
                            ops_per_sec: j.runs.per_sec,
                            runs: j.runs,
                        });
                    }
                }
                out.latency = Some(LatencyPart {
                    base_profile: lookups.nvm_profile.name.clone(),
                    rule: format!(
                        "read latency as given; write latency = max(read latency, the profile's {} ns); everything else as in the profile",
                        lookups.nvm_profile.write_latency_ns
                    ),
                    rows,
                });
            }
            Part::Dram => {
                let mut rows = Vec::new();
                for &pct in &plan.dram_percents {
                    let (dram, clamped) = dram_at(pct, nvm, lookups.page_size_bytes as u64);
                    for (arch, techniques) in SWEEP_ARCHS {
                        let j = next(part);
                        debug_assert_eq!(j.dram, dram);
                        rows.push(DramRow {
                            arch,
                            techniques,
                            dram_percent: pct,
                            dram_bytes: dram.bytes(),
                            clamped,
                            ops_per_sec: j.runs.per_sec,
                            runs: j.runs,
                        });
                    }
                }
                out.dram = Some(DramPart { dram_frames_min: MIN_DRAM_FRAMES, rows });
            }
            Part::Size | Part::Rw => {
                let xs = if part == Part::Size { &plan.size_factors } else { &plan.update_percents };
                let mut rows = Vec::new();
                for &x in xs {
                    for (arch, techniques) in SWEEP_ARCHS {
                        let j = next(part);
                        debug_assert_eq!(j.arch, arch, "job {} out of order", j.label);
                        rows.push(SweepRow {
                            arch,
                            techniques,
                            x,
                            dram_bytes: j.dram.bytes(),
                            nvm_bytes: j.nvm.bytes(),
                            data_bytes: j.data.bytes(),
                            workload: j.setup.workload.origin().to_string(),
                            ops_per_sec: j.runs.per_sec,
                            runs: j.runs,
                        });
                    }
                }
                let x_is = if part == Part::Size {
                    "factor applied to DRAM, NVM and data"
                } else {
                    "percent of operations that are updates"
                };
                let sweep = Some(SweepPart { x_is, rows });
                if part == Part::Size { out.size = sweep } else { out.rw = sweep }
            }
        }
    }
    assert!(jobs.next().is_none(), "jobs left without a row");
    out.notes = std::mem::take(notes);
    out
}

/// The targets for Figure 10, checked against the rows' medians.
pub fn fig10_targets(rows: &[Fig10Row]) -> Vec<Target> {
    let lines = |i: usize| rows[i].nvm_lines_per_lookup;
    let why = |num: usize, den: usize| {
        if lines(den) == Some(0.0) {
            Some(format!("{} loaded no NVM lines", rows[den].step))
        } else if lines(num).is_none() || lines(den).is_none() {
            Some("a step has no value".to_string())
        } else {
            None
        }
    };
    let at_least = |what, value: Option<f64>, min: f64, paper, missing| Target {
        what,
        value,
        target: format!(">= {min}"),
        paper,
        met: value.map(|v| v >= min),
        missing: if value.is_none() { missing } else { None },
    };
    let all = lines(3);
    vec![
        at_least(
            "NVM lines per lookup, basic / +cl-grained",
            ratio(lines(0), lines(1)),
            CL_RATIO_TARGET_MIN,
            CL_RATIO_PAPER,
            why(0, 1),
        ),
        at_least(
            "NVM lines per lookup, +cl-grained / +mini-pages",
            ratio(lines(1), lines(2)),
            MINI_RATIO_TARGET_MIN,
            MINI_RATIO_PAPER,
            why(1, 2),
        ),
        Target {
            what: "NVM lines per lookup, all techniques",
            value: all,
            target: format!("<= {LINES_PER_LOOKUP_TARGET_MAX}"),
            paper: LINES_PER_LOOKUP_PAPER,
            met: all.map(|v| v <= LINES_PER_LOOKUP_TARGET_MAX),
            missing: all.is_none().then(|| "the step has no value".to_string()),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

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
