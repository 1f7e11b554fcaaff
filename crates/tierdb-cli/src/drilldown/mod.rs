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
//! 5. `size` (Figure 14, appendix A.2): the three with DRAM, NVM and data scaled together
//!    by each of `--size-factors` (DRAM : NVM stays 1 : 5, the data fits the NVM).
//! 6. `rw` (Figure 15, appendix A.3): the three under YCSB-R/W (`rw:X`) for each update
//!    percentage of `--update-percent`.
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

mod charts;
mod table;

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::buffer::{MIN_DRAM_FRAMES, Techniques};

use tierdb_bench::experiments::drilldown::{
    DRILLDOWN_ARCH, Job, Kind, Part, Plan, Runs, SWEEP_ARCHS, dram_at, profile_at, report, run_jobs, scaled, scan_setup,
};
use tierdb_bench::harness::{EngineArgs, Progress, Setup, remove_files_on_interrupt};
use tierdb_bench::plot::{Chart, write_outputs};

const RUNS_MAX: usize = 25;
/// Points of one sweep (`--latencies`, `--dram-percent`).
const SWEEP_POINTS_MAX: usize = 32;
const LATENCY_NS_MIN: f64 = 1.0;
const LATENCY_NS_MAX: f64 = 100_000.0;
const DRAM_PERCENT_MAX: f64 = 100.0;
/// Range of a `--size-factors` entry.
const SIZE_FACTOR_MIN: f64 = 0.01;
const SIZE_FACTOR_MAX: f64 = 64.0;

const _: () = assert!(LATENCY_NS_MIN > 0.0 && LATENCY_NS_MIN < LATENCY_NS_MAX);
const _: () = assert!(SWEEP_POINTS_MAX <= tierdb_bench::plot::CATEGORIES_MAX);

#[derive(Args, Debug)]
pub struct DrilldownArgs {
    /// Parts to run, comma-separated: fig10, scan, latency, dram, size, rw.
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
    /// Factors of the size part applied to --dram, --nvm and --data, increasing.
    #[arg(long, default_value = "0.25,0.5,1,2")]
    size_factors: String,
    /// Update percentages of the rw part (whole numbers 0..=100), increasing.
    #[arg(long, default_value = "0,25,50,75,100")]
    update_percent: String,
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
    let mut notes = table::notes(&args, &plan, &lookups);
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;

    // 2. Run round robin: run r of every job, then run r + 1.
    let progress = Progress::new(!args.quiet);
    run_jobs(&args.engine, &mut jobs, args.runs, args.quiet, &progress)?;

    // 3. Report.
    let report = report((args.dram, args.nvm, args.data), args.runs, &plan, lookups, scans, jobs, &mut notes);
    let text = table::render_text(&report);
    let charts: Vec<(String, Chart)> = charts::charts(&report).into_iter().map(|(n, c)| (n.to_string(), c)).collect();
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
    let size_factors = sweep("--size-factors", &args.size_factors, SIZE_FACTOR_MIN, SIZE_FACTOR_MAX, "×")?;
    let update_percents = sweep("--update-percent", &args.update_percent, 0.0, 100.0, "%")?;
    if let Some(p) = update_percents.iter().find(|p| p.fract() != 0.0) {
        bail!("--update-percent: {p} is not a whole number (the workload is rw:PCT)");
    }
    Ok(Plan { parts, latencies_ns, dram_percents, size_factors, update_percents })
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

fn jobs(args: &DrilldownArgs, plan: &Plan, lookups: &Setup, scans: &Setup) -> Result<Vec<Job>> {
    let with = |setup: &Setup, t: Techniques| Setup { techniques: Some(t), ..setup.clone() };
    let sized = |part, label: String, kind, arch, techniques, (dram, nvm, data), setup: Setup| Job {
        part,
        label,
        kind,
        arch,
        techniques,
        dram,
        nvm,
        data,
        setup,
        runs: Runs::default(),
    };
    let job = |part, label, kind, arch, techniques, dram, setup| {
        sized(part, label, kind, arch, techniques, (dram, args.nvm, args.data), setup)
    };
    let page = lookups.page_size_bytes as u64;
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
                    let (dram, _) = dram_at(pct, args.nvm, page);
                    for (arch, t) in SWEEP_ARCHS {
                        let label = format!("{arch} DRAM {pct}% = {dram}");
                        jobs.push(job(part, label, Kind::Ycsb, arch, t, dram, with(lookups, t)));
                    }
                }
            }
            Part::Size => {
                for &f in &plan.size_factors {
                    let min = MIN_DRAM_FRAMES as u64;
                    let sizes =
                        (scaled(args.dram, f, page, min), scaled(args.nvm, f, page, 1), scaled(args.data, f, page, 1));
                    for (arch, t) in SWEEP_ARCHS {
                        let label = format!("{arch} ×{f}: data {}", sizes.2);
                        jobs.push(sized(part, label, Kind::Ycsb, arch, t, sizes, with(lookups, t)));
                    }
                }
            }
            Part::Rw => {
                for &p in &plan.update_percents {
                    let rw = args.engine.setup(&format!("rw:{p}"))?;
                    for (arch, t) in SWEEP_ARCHS {
                        jobs.push(job(part, format!("{arch} rw:{p}"), Kind::Ycsb, arch, t, args.dram, with(&rw, t)));
                    }
                }
            }
        }
    }
    Ok(jobs)
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
}
