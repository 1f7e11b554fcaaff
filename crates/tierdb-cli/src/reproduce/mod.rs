//! `tierdb reproduce`: runs the headline experiment of every paper tierdb implements and
//! writes one report, `OUT/papers.md`: for each paper figure or table, the published
//! number, tierdb's number at this machine's scale, their ratio and why they differ,
//! with the command beside every figure and links to each experiment's artifacts
//! (text, JSON, SVG) under `OUT/papers/<experiment>/`.
//!
//! Every experiment runs as a child `tierdb` process with the same arguments a user
//! would type, so each figure's command can be copied out of the report and run alone.
//! A child's standard output and error go to `OUT/papers/logs/<step>.log`. A step that
//! fails leaves its section in the report with the error and the log, never a number,
//! and the command exits non-zero after writing the report.
//!
//! `--scale quick` runs every experiment at sizes that finish in under 15 minutes on
//! two cores (a check that the pipeline works, not evidence); `--scale full` is what
//! the committed report comes from.

mod engine;
mod hymem;
mod mmap;
mod nvcache;
mod nvsql;
mod report;
mod sections;
mod sim;
mod spitfire;
mod three_tier;
mod three_tier_tpcc;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

pub(crate) use report::{Row, Section};

/// Steps (child runs) of one reproduction, at most: a guard against a section that
/// loops.
const STEPS_MAX: usize = 500;

/// How large the experiments run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// Small sizes and one run per point: the whole reproduction in under 15 minutes on
    /// two cores. Checks that every experiment runs; its figures are not evidence.
    Quick,
    /// The sizes and runs the committed report comes from.
    Full,
}

impl Scale {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Sizes of the experiments: quick (under 15 minutes, not evidence) or full.
    #[arg(long, value_enum, default_value = "quick")]
    scale: Scale,
    /// Directory of the report: OUT/papers.md, the artifacts under OUT/papers/.
    #[arg(long, default_value = "tierdb-reproduce")]
    out: PathBuf,
    /// Only the sections whose name contains one of these, comma-separated (names:
    /// see --list).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Print the sections and exit.
    #[arg(long)]
    list: bool,
    /// Directory for the SSD page files of the children (default: each command's own).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
    /// Directory for the NVM files of the children (default: each command's own).
    #[arg(long)]
    nvm_dir: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// What a section gets to run its experiments.
pub(crate) struct Ctx {
    scale: Scale,
    out: PathBuf,
    exe: PathBuf,
    ssd_dir: Option<PathBuf>,
    nvm_dir: Option<PathBuf>,
    bar: ProgressBar,
    steps: std::cell::Cell<usize>,
}

/// One child run: the command line as a user would type it, and how long it took.
#[derive(Clone, Debug)]
pub(crate) struct Ran {
    pub command: String,
    pub seconds: f64,
}

impl Ctx {
    pub(crate) fn scale(&self) -> Scale {
        self.scale
    }

    pub(crate) fn quick(&self) -> bool {
        self.scale == Scale::Quick
    }

    /// `OUT/papers/<name>`, created: where an experiment writes its artifacts. Pass it
    /// to the child as its `--out`.
    pub(crate) fn dir(&self, name: &str) -> Result<PathBuf> {
        let dir = self.out.join("papers").join(name);
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// The report's link to an artifact: its path relative to the report.
    pub(crate) fn link(&self, artifact: &Path) -> String {
        artifact.strip_prefix(&self.out).unwrap_or(artifact).display().to_string()
    }

    /// `--ssd-dir X --nvm-dir Y` when the reproduction was given them; append to the
    /// arguments of an engine command.
    pub(crate) fn device_dirs(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(d) = &self.ssd_dir {
            args.extend(["--ssd-dir".to_string(), d.display().to_string()]);
        }
        if let Some(d) = &self.nvm_dir {
            args.extend(["--nvm-dir".to_string(), d.display().to_string()]);
        }
        args
    }

    /// `--out DIR`, the device directories and `--quiet`: the tail every experiment
    /// command of a section takes.
    pub(crate) fn child_outputs(&self, dir: &Path) -> Vec<String> {
        let mut args = vec!["--out".to_string(), dir.display().to_string()];
        args.extend(self.device_dirs());
        args.push("--quiet".into());
        args
    }

    /// Runs `tierdb <args>` as a child (step `step`, which names its log); fails, with
    /// the log's tail, when the child exits non-zero.
    pub(crate) fn tierdb(&self, step: &str, args: &[String]) -> Result<Ran> {
        self.tierdb_to(step, args, None)
    }

    /// As [`tierdb`](Self::tierdb), the child's standard output written to `stdout`
    /// (an artifact, e.g. the JSON of a command given `--json`) instead of the log.
    pub(crate) fn tierdb_stdout(&self, step: &str, args: &[String], stdout: &Path) -> Result<Ran> {
        self.tierdb_to(step, args, Some(stdout))
    }

    fn tierdb_to(&self, step: &str, args: &[String], stdout: Option<&Path>) -> Result<Ran> {
        let n = self.steps.get() + 1;
        if n > STEPS_MAX {
            bail!("more than {STEPS_MAX} steps: a section is looping");
        }
        self.steps.set(n);
        let logs = self.out.join("papers").join("logs");
        fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        let log_path = logs.join(format!("{step}.log"));
        let log = fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let mut command = format!("tierdb {}", shell_words(args));
        if let Some(p) = stdout {
            command.push_str(&format!(" > {}", p.display()));
        }
        let out = match stdout {
            Some(p) => fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
            None => log.try_clone().context("duplicating the log's handle")?,
        };
        self.bar.set_message(format!("{step}: {command}"));
        let started = Instant::now();
        let status = Command::new(&self.exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(log)
            .status()
            .with_context(|| format!("starting {command}"))?;
        let seconds = started.elapsed().as_secs_f64();
        if !status.success() {
            let text = fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "`{command}` exited with {status} after {seconds:.0} s; log {}:\n{}",
                log_path.display(),
                tail.join("\n")
            );
        }
        self.bar.println(format!("  {step}: {seconds:.0} s"));
        Ok(Ran { command, seconds })
    }
}

/// The arguments quoted where a shell would need it.
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.is_empty() || a.chars().any(|c| !(c.is_ascii_alphanumeric() || "-_=.,/:%".contains(c))) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    let all = sections::all();
    if args.list {
        for s in &all {
            println!("{:<24} {}", s.name, s.about);
        }
        return Ok(());
    }
    let chosen: Vec<_> =
        all.iter().filter(|s| args.only.is_empty() || args.only.iter().any(|o| s.name.contains(o.as_str()))).collect();
    if chosen.is_empty() {
        let names: Vec<_> = all.iter().map(|s| s.name).collect();
        bail!("--only {:?} matches no section; the sections: {}", args.only, names.join(", "));
    }
    fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("finding the tierdb binary to run the experiments")?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(chosen.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} sections  {wide_msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(500));
        bar
    };
    let ctx = Ctx {
        scale: args.scale,
        out: args.out.clone(),
        exe,
        ssd_dir: args.ssd_dir.clone(),
        nvm_dir: args.nvm_dir.clone(),
        bar: bar.clone(),
        steps: std::cell::Cell::new(0),
    };
    let started = Instant::now();
    let mut done = Vec::new();
    let mut failed = 0;
    for s in chosen {
        bar.println(format!("{} — {}", s.name, s.about));
        let t = Instant::now();
        let result = (s.run)(&ctx);
        let seconds = t.elapsed().as_secs_f64();
        match result {
            Ok(mut sections) => {
                for sec in &mut sections {
                    sec.seconds = seconds;
                }
                done.extend(sections)
            }
            Err(e) => {
                failed += 1;
                bar.println(format!("  {} failed: {e:#}", s.name));
                done.push(Section::failed(s.name, s.about, &format!("{e:#}"), seconds));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let path = args.out.join("papers.md");
    let text = report::render(&ctx, &done, started.elapsed().as_secs_f64());
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {} ({} sections, {:.0} s)", path.display(), done.len(), started.elapsed().as_secs_f64());
    if failed > 0 {
        bail!("{failed} section(s) failed; their errors are in {}", path.display());
    }
    Ok(())
}
