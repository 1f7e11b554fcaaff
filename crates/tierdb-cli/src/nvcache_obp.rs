//! `tierdb nvcache-obp`: the NVCache paper's admission experiment (§3.2.3, the shape of
//! its Table 1) on the `nvcache` architecture — always-admit against the overhead
//! bypass ratio computed since start-up and over a sliding window, on YCSB A (50%
//! updates) and C (read only). Each row reports throughput, NVM writes (device lines and
//! pages written), the NVM hit ratio, admissions and bypasses.
//!
//! The NVM profile's write-to-read interference (`optane-dcpmm`: a read within 1 µs of
//! a write costs 3.5×) is what makes admissions expensive; the command runs in `model`
//! mode by default, where every device cost is the profile's, charged on a virtual
//! clock. SSD page writes skip the double-write area by default (the paper's engine
//! writes new blocks and has none); `--double-write on` restores it.
//!
//! Parts (`--parts`): `table1`, the rows above; `phases`, workload phases in turn on
//! one engine per admission mode, epoch by epoch, which shows why OBP is taken over a
//! window ([`nvcache_phases`]).

mod phases;

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::policy::{ObpCount, ObpMode};

use tierdb_bench::experiments::nvcache_obp::{Row, table1_row};
use tierdb_bench::experiments::nvcache_phases::{self, PhasePlan, PhaseReport, label};
use tierdb_bench::harness::{EngineArgs, Machine, Progress, Setup, fmt_rate, remove_files_on_interrupt};
use tierdb_bench::plot::{Chart, LegendPosition, Series, write_notes, write_outputs};

const RUNS_MAX: usize = 25;
const WORKLOADS_MAX: usize = 8;

#[derive(Args, Debug)]
#[command(mut_arg("mode", |a| a.default_value("model")))]
#[command(mut_arg("double_write", |a| a.default_value("off")))]
#[command(mut_arg("obp", |a| a.hide(true).help("Refused: every row sets its own")))]
#[command(mut_arg("model_clock", |a| a.default_value(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK).help(tierdb_bench::experiments::tuning::COMPARE_MODEL_CLOCK_HELP)))]
pub struct NvcacheObpArgs {
    /// Parts to run, comma-separated: table1 (each workload under each admission mode)
    /// and phases (--phases in turn on one engine per mode, epoch by epoch).
    #[arg(long, value_delimiter = ',', default_value = "table1,phases")]
    parts: Vec<String>,
    /// YCSB workloads, comma-separated (a..f or a property file).
    #[arg(long, value_delimiter = ',', default_value = "a,c")]
    workloads: Vec<String>,
    #[arg(long, default_value = "16MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "64MiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading.
    #[arg(long, default_value = "192MiB")]
    data: ByteSize,
    /// Runs of each row; the table and plots show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The phases part: YCSB workloads run in turn, comma-separated (default: reads,
    /// then updates only, then reads again).
    #[arg(long, value_delimiter = ',', default_value = "c,rw:100,c")]
    phases: Vec<String>,
    /// The phases part: epochs per phase.
    #[arg(long, default_value_t = 8)]
    phase_epochs: u32,
    /// The phases part: operations per epoch.
    #[arg(long, default_value_t = 20_000)]
    phase_epoch_ops: u64,
    /// Directory for nvcache-obp.txt, .json and the SVG plots.
    #[arg(long, default_value = "tierdb-nvcache-obp")]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Serialize)]
struct ObpReport {
    command: &'static str,
    version: &'static str,
    machine: Machine,
    dram_bytes: u64,
    nvm_bytes: u64,
    data_bytes: u64,
    runs: usize,
    setup: Setup,
    notes: Vec<String>,
    rows: Vec<Row>,
    phases: Option<PhaseReport>,
}

pub fn run(args: NvcacheObpArgs) -> Result<()> {
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {} is outside 1..={RUNS_MAX}", args.runs);
    }
    if args.workloads.is_empty() || args.workloads.len() > WORKLOADS_MAX {
        bail!("--workloads takes 1..={WORKLOADS_MAX} workloads");
    }
    if args.engine.obp != ObpMode::Window {
        bail!("--obp does not apply: the rows are always-admit, cumulative and windowed OBP");
    }
    if args.engine.policy.as_deref().is_some_and(|p| p != "nvcache") {
        bail!("--policy does not apply: the experiment runs the nvcache policy");
    }
    if let Some(p) = args.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
        bail!("--parts: unknown part {p:?}; known: {}", PARTS.join(", "));
    }
    if args.parts.is_empty() {
        bail!("--parts takes at least one of {}", PARTS.join(", "));
    }
    let plan = PhasePlan {
        workloads: args.phases.clone(),
        epochs_per_phase: args.phase_epochs,
        epoch_ops: args.phase_epoch_ops,
    };
    let want = |p: &str| args.parts.iter().any(|x| x == p);
    // Bad phases fail now, not after the table1 rows have run.
    let phase_specs = if want("phases") {
        plan.validate()?;
        plan.workloads(&args.engine)?
    } else {
        Vec::new()
    };
    remove_files_on_interrupt()?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut engine = args.engine.clone();
    // The SSD page file on /dev/shm unless told otherwise: in `model` mode its profile is
    // charged, and the medium's own time (small there) stays out of the way.
    if engine.ssd_dir.is_none() && args.engine.mode == tierdb::device::EmulationMode::Model {
        engine.ssd_dir = Some(PathBuf::from("/dev/shm"));
    }
    let progress = Progress::new(!args.quiet);
    let mut rows = Vec::new();
    let mut first_setup = None;
    for w in args.workloads.iter().filter(|_| want("table1")) {
        let base = engine.setup(w)?;
        for obp in ObpMode::ALL {
            let mut setup = base.clone();
            setup.nvcache.obp_mode = obp;
            rows.push(
                table1_row(&engine, &setup, w, args.runs, (args.dram, args.nvm, args.data), &progress)
                    .with_context(|| format!("workload {w}, OBP {}", obp.name()))?,
            );
            first_setup.get_or_insert(setup);
        }
    }
    let mut setup = match first_setup {
        Some(s) => s,
        None => engine.setup(&args.workloads[0])?,
    };
    setup.nvcache.obp_mode = ObpMode::Window;
    let phases = if want("phases") {
        Some(nvcache_phases::run(&engine, &setup, (&plan, &phase_specs), (args.dram, args.nvm, args.data), &progress)?)
    } else {
        None
    };
    progress.finish();
    let notes = vec![
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
    ];
    let report = ObpReport {
        command: "nvcache-obp",
        version: env!("CARGO_PKG_VERSION"),
        machine: Machine::probe(),
        dram_bytes: args.dram.bytes(),
        nvm_bytes: args.nvm.bytes(),
        data_bytes: args.data.bytes(),
        runs: args.runs,
        setup,
        notes,
        rows,
        phases,
    };
    let text = render(&report);
    let mut charts = Vec::new();
    if !report.rows.is_empty() {
        charts.push(("nvcache-obp-throughput.svg".to_string(), chart(&report, false)));
        charts.push(("nvcache-obp-nvm-writes.svg".to_string(), chart(&report, true)));
    }
    if let Some(p) = &report.phases {
        let sub = describe(&report);
        charts.push(("nvcache-obp-phases-hits.svg".to_string(), phases::chart(p, &sub, false)));
        charts.push(("nvcache-obp-phases-inserts.svg".to_string(), phases::chart(p, &sub, true)));
    }
    write_outputs(&args.out, "nvcache-obp", &text, &report, &charts)
}

fn describe(r: &ObpReport) -> String {
    let s = &r.setup;
    format!(
        "nvcache · mode {} · profiles dram {}, nvm {}, ssd {} · DRAM {} · NVM {} · data {} · page {} · {} thread(s) · seed {} · {} s warm-up + {} · median of {} run(s)",
        s.mode_label(),
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        ByteSize(r.dram_bytes),
        ByteSize(r.nvm_bytes),
        ByteSize(r.data_bytes),
        ByteSize(s.page_size_bytes as u64),
        s.threads,
        s.seed,
        s.warmup_secs,
        s.duration_secs.map(|d| format!("{d} s run")).unwrap_or_else(|| "operationcount".into()),
        r.runs,
    )
}

/// The parts of the command.
const PARTS: &[&str] = &["table1", "phases"];

fn render(r: &ObpReport) -> String {
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
        let _ = writeln!(out, "{}", phases::render(p));
    }
    write_notes(&mut out, &r.notes);
    let _ = writeln!(out);
    out
}

fn chart(r: &ObpReport, writes: bool) -> Chart {
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
