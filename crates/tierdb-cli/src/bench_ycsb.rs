//! `tierdb bench ycsb`: one YCSB run on one architecture, with a full report; straight
//! on the B+-tree (the raw mode), or with `--durability` through a database's
//! transactions ([`crate::ycsb_txn`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use comfy_table::Table;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{ArchConfig, Architecture, Engine};
use tierdb::buffer::NvmVerify;
use tierdb::buffer::policy::{NvcacheConfig, ObpCount, ObpMode};
use tierdb::device::DoubleWriteMode;
use tierdb::device::{DeviceProfile, DirectIo, EmulationMode};
use tierdb::limits::{NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT, NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT};
use tierdb_workload::YcsbSpec;

use crate::ycsb_driver::{self, DriverConfig, ModelClock, YcsbReport};
use crate::ycsb_txn::{self, TxnArgs, TxnReport};

/// Bounds on the knobs, so a typo cannot start an hour-long run.
const THREADS_MAX: u32 = 256;
/// Most operations a worker takes at once (`--batch`).
const BATCH_MAX: u32 = 1024;
pub(crate) const DURATION_SECS_MAX: f64 = 3600.0;

/// Options shared by `bench ycsb` and `compare`: devices, emulation, files.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// Record every page access of the buffer manager into this trace file (tierdb
    /// binary; text if it ends in .txt), with markers where the measured run starts;
    /// replay it with `tierdb sim` (docs/sim.md).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Emulation mode of every device: off (this machine's speed), spin (busy-wait to
    /// the profile), model (virtual clock; reports modelled throughput).
    #[arg(long, default_value = "spin")]
    pub mode: EmulationMode,
    /// NVM profile: a preset name or a TOML file.
    #[arg(long, default_value = "optane-dcpmm")]
    pub nvm_profile: String,
    /// SSD profile: a preset name or a TOML file.
    #[arg(long, default_value = "nvme-ssd")]
    pub ssd_profile: String,
    /// DRAM profile: a preset name or a TOML file.
    #[arg(long, default_value = "dram")]
    pub dram_profile: String,
    #[arg(long, default_value = "16KiB")]
    pub page_size: ByteSize,
    /// Directory for the SSD page file (a real disk: O_DIRECT is used where it works).
    #[arg(long)]
    pub ssd_dir: Option<PathBuf>,
    /// Directory for the NVM pool file (default /dev/shm).
    #[arg(long)]
    pub nvm_dir: Option<PathBuf>,
    /// Placement policy instead of the architecture's own: eager, hymem, or
    /// spitfire:KNOBS (a preset eager, a, b, c, d — the Spitfire paper's Table 3 — or
    /// dr=X,dw=X,nr=X,nw=X; plain spitfire is eager).
    /// Placement policy instead of the architecture's own (eager, hymem, nvcache).
    #[arg(long)]
    pub policy: Option<String>,
    /// Pages in hymem's admission set (default: half the NVM frames).
    #[arg(long)]
    pub admission_set: Option<usize>,
    /// NVM techniques instead of the architecture's own: none, all, or a list of cl
    /// (cache-line-grained pages), mini (mini pages), swizzle (pointer swizzling).
    #[arg(long)]
    pub techniques: Option<tierdb::buffer::Techniques>,
    /// Debug mode for cache-line-grained access: poisons lines that are not resident
    /// and checks on unfix that only lines marked dirty changed (slow).
    #[arg(long)]
    pub debug_lines: bool,
    /// Turn O_DIRECT off for the SSD file.
    #[arg(long)]
    pub buffered_io: bool,
    /// Run a page provider beside the workers (architectures with a buffer manager): a
    /// thread that keeps 1/64 of the DRAM frames free, evicting the clock's victims as a
    /// miss would (dirty ones in batches), so a miss takes a free frame instead of
    /// waiting for a victim's write. Off: each miss evicts for itself, as the simulator
    /// does.
    #[arg(long)]
    pub page_provider: bool,
    /// Operations a worker takes at once (1 to 1024): before they run, one after
    /// another, the pages they need that are only on SSD are read together (io_uring),
    /// so each thread keeps up to this many reads in flight instead of one. An
    /// operation's latency then runs from the start of its batch. Operations straight
    /// on the tree (not with `--durability`).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// The CPU last-level cache that charges for reads made in place in NVM model
    /// (nvm-direct, spitfire with DRAM bypassed, mmap-se2): a line read again while its
    /// tag is cached costs nothing; 0 charges every read.
    #[arg(long, default_value = "32MiB")]
    pub cpu_cache: ByteSize,
    /// Software prefetch for reads made in place in NVM (SE2, spitfire bypassing
    /// DRAM): a line-grained read also prefetches the next N lines of the page (the
    /// CPU-cache model counts them as brought in with it), a whole-page read its first
    /// N lines; 0: off.
    #[arg(long, default_value_t = 0)]
    pub prefetch_lines: u32,
    /// Torn-page protection of SSD page writes: each write (a batch at checkpoints)
    /// is first made durable in a double-write area — ssd: a file next to the page file
    /// (write + fdatasync); nvm: a 2 MiB NVM region (copy + persist; NV-SQL §5.4); on:
    /// the architecture's default (nvm for nvsql, ssd for the others). off: torn pages
    /// are detected but cannot be repaired.
    #[arg(long, value_name = "on|off|ssd|nvm", default_value = "on", value_parser = parse_double_write, action = clap::ArgAction::Set)]
    pub double_write: DoubleWriteArg,
    /// Slots (pages) of an NVM double-write area: 128 as InnoDB's doublewrite buffer (2
    /// MiB of NVM at 16 KiB pages); the page file is synced each time they are used up.
    #[arg(long, default_value_t = tierdb::limits::DOUBLE_WRITE_SLOTS, value_parser = parse_dw_slots)]
    pub nvm_double_write_slots: usize,
    /// What is checked against the CRC-32C of the pages in NVM: cheap — every whole page
    /// copied out of NVM and every page once before its first use after a restart;
    /// every — also every line-grained load and every in-place fix (slow); off —
    /// nothing (docs/checksums.md).
    #[arg(long, value_name = "off|cheap|every", default_value = "cheap", value_parser = parse_nvm_verify)]
    pub nvm_verify: NvmVerify,
    /// nvcache: the overhead-bypass ratio (inserted + removed) / looked-up taken over a
    /// sliding window of lookups (window), since start-up (cumulative), or not at all
    /// (off: always admit).
    #[arg(long, default_value = "window")]
    pub obp: ObpMode,
    /// nvcache: OBP above this percentage stops admissions and evictions.
    #[arg(long, default_value_t = 10.0)]
    pub obp_target: f64,
    /// nvcache: lookups the OBP window spans.
    #[arg(long, default_value_t = NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT)]
    pub obp_window: u64,
    /// nvcache small-bypass: admit nothing while the database is smaller than this
    /// percentage of DRAM (0: off).
    #[arg(long, default_value_t = NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT)]
    pub small_bypass: u32,
    /// nvcache LFRU: lookups within which a cached page must be hit again to stay safe
    /// from eviction (default: one per NVM frame).
    #[arg(long)]
    pub lfru_window: Option<u64>,
    /// nvcache: what OBP's numerator counts: all (inserts + removals + evictions, the
    /// paper's definition) or inserts (the NVM writes only; a removal writes nothing
    /// to the volatile cache).
    #[arg(long, default_value = "all")]
    pub obp_count: ObpCount,
    /// nvcache: a dirty DRAM victim whose admission OBP refuses overwrites its page's
    /// stale NVM copy in place if the copy had at least N NVM hits (not given: the copy
    /// is removed, as in the paper).
    #[arg(long, value_name = "N")]
    pub stale_overwrite: Option<u64>,
    /// model mode: each thread's own time in the modelled throughput (ops / (own time +
    /// modelled device time)): wall, or cpu — the thread's CPU time, which other
    /// processes on the machine do not inflate (for runs with no more threads than
    /// cores).
    #[arg(long, default_value = "wall")]
    pub model_clock: ModelClock,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Seconds of unmeasured warm-up.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Seconds of measured run (0: run the workload's operationcount instead).
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Override a workload property, e.g. --set requestdistribution=uniform (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
}

/// The resolved configuration a report embeds.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub mode: EmulationMode,
    pub page_size_bytes: usize,
    pub dram_profile: DeviceProfile,
    pub nvm_profile: DeviceProfile,
    pub ssd_profile: DeviceProfile,
    pub threads: u32,
    pub seed: u64,
    pub warmup_secs: f64,
    pub duration_secs: Option<f64>,
    pub policy: Option<String>,
    /// The NVM techniques asked for (`None`: the architecture's own).
    pub techniques: Option<tierdb::buffer::Techniques>,
    /// The CPU cache `nvm-direct`'s read charges model.
    pub cpu_cache_model_bytes: u64,
    /// Lines prefetched after an in-place NVM read.
    pub prefetch_lines: u32,
    /// Where SSD page writes go first (`on`: the architecture's default).
    pub double_write: DoubleWriteArg,
    /// Slots of an NVM double-write area.
    pub nvm_double_write_slots: usize,
    /// What is checked against the CRCs of the pages in NVM.
    pub nvm_verify: NvmVerify,
    /// `model` mode: the clock of a thread's own time in the modelled throughput.
    pub model_clock: ModelClock,
    /// Run the buffer manager's page provider beside the workers.
    pub page_provider: bool,
    /// Operations a worker takes at once, their pages read ahead together.
    pub batch: u32,
    /// The `nvcache` policy's tunables (used by `--arch nvcache` or `--policy nvcache`).
    pub nvcache: NvcacheConfig,
    pub workload: YcsbSpec,
}

impl Setup {
    /// The emulation mode as a report names it: `model` also names its clock.
    pub fn mode_label(&self) -> String {
        match self.mode {
            EmulationMode::Model => format!("model ({} clock)", self.model_clock.name()),
            m => m.to_string(),
        }
    }
}

impl EngineArgs {
    /// Checks the knobs and loads the profiles and the workload.
    pub fn setup(&self, workload: &str) -> Result<Setup> {
        if self.threads == 0 || self.threads > THREADS_MAX {
            bail!("--threads {} is outside 1..={THREADS_MAX}", self.threads);
        }
        if self.batch == 0 || self.batch > BATCH_MAX {
            bail!("--batch {} is outside 1..={BATCH_MAX}", self.batch);
        }
        for (name, v) in [("--warmup", self.warmup), ("--duration", self.duration)] {
            if !(0.0..=DURATION_SECS_MAX).contains(&v) {
                bail!("{name} {v} is outside 0..={DURATION_SECS_MAX} seconds");
            }
        }
        let mut spec = YcsbSpec::resolve(workload).with_context(|| format!("workload {workload:?}"))?;
        for o in &self.overrides {
            let Some((k, v)) = o.split_once('=') else { bail!("--set {o:?}: expected KEY=VALUE") };
            spec.set(k.trim(), v.trim())?;
        }
        for line in self.workload_warnings(&spec) {
            eprintln!("warning: {line}");
        }
        let page_size = usize::try_from(self.page_size.bytes()).context("page size")?;
        if !(self.obp_target > 0.0 && self.obp_target <= 100.0) {
            bail!("--obp-target {} is outside (0, 100] percent", self.obp_target);
        }
        let nvcache = NvcacheConfig {
            obp_mode: self.obp,
            obp_target_permille: (self.obp_target * 10.0).round().max(1.0) as u32,
            obp_window_lookups: self.obp_window,
            small_bypass_dram_percent: self.small_bypass,
            reuse_window_lookups: self.lfru_window,
            obp_count: self.obp_count,
            stale_overwrite_hits_min: self.stale_overwrite,
        };
        nvcache.validate().map_err(anyhow::Error::msg)?;
        Ok(Setup {
            mode: self.mode,
            page_size_bytes: page_size,
            dram_profile: DeviceProfile::load(&self.dram_profile)?,
            nvm_profile: DeviceProfile::load(&self.nvm_profile)?,
            ssd_profile: DeviceProfile::load(&self.ssd_profile)?,
            threads: self.threads,
            seed: spec.seed().unwrap_or(self.seed),
            warmup_secs: self.warmup,
            duration_secs: (self.duration > 0.0).then_some(self.duration),
            policy: self.policy.clone(),
            techniques: self.techniques,
            cpu_cache_model_bytes: self.cpu_cache.bytes(),
            prefetch_lines: self.prefetch_lines,
            double_write: self.double_write,
            nvm_double_write_slots: self.nvm_double_write_slots,
            nvm_verify: self.nvm_verify,
            model_clock: self.model_clock,
            page_provider: self.page_provider,
            batch: self.batch,
            nvcache,
            workload: spec,
        })
    }

    /// The warnings about `spec` (a YCSB file runs unmodified, but not every property it
    /// sets applies): one line per unknown name, then one line listing what is ignored,
    /// with the YCSB client options that the driver's own options replace named as such.
    fn workload_warnings(&self, spec: &YcsbSpec) -> Vec<String> {
        let mut lines: Vec<String> = spec.unknown().iter().map(ToString::to_string).collect();
        let mut ignored = spec.ignored();
        for p in &mut ignored {
            let instead = match p.key.as_str() {
                "threadcount" => format!("--threads sets the threads ({})", self.threads),
                "maxexecutiontime" => "--duration sets the run's length".to_owned(),
                "target" => "the driver does not throttle".to_owned(),
                "exporter" | "exportfile" => "--json prints the report as JSON".to_owned(),
                _ => continue,
            };
            p.reason = instead;
        }
        if let Some((origin, line)) = spec.given_at("operationcount").filter(|_| self.duration > 0.0) {
            ignored.push(tierdb_workload::IgnoredProperty {
                key: "operationcount".to_owned(),
                value: spec.operation_count().to_string(),
                origin: origin.to_owned(),
                line,
                reason: format!(
                    "the run lasts --duration {} s; --duration 0 runs operationcount operations",
                    self.duration
                ),
            });
        }
        lines.extend(tierdb_workload::ycsb::ignored_warning(&ignored));
        lines
    }

    /// The architecture's configuration with files unique to this process and `tag`.
    pub fn arch_config(
        &self,
        setup: &Setup,
        arch: Architecture,
        dram: ByteSize,
        nvm: ByteSize,
        tag: &str,
    ) -> Result<ArchConfig> {
        let name = format!("tierdb-{}-{tag}", std::process::id());
        let ssd_dir = self.ssd_dir.clone().unwrap_or_else(std::env::temp_dir);
        let mut c = ArchConfig::new(arch, dram, nvm, &name, &ssd_dir)?;
        if let Some(d) = &self.nvm_dir {
            c.nvm_path = d.join(format!("{name}.nvm"));
        }
        c.page_size = setup.page_size_bytes;
        c.mode = setup.mode;
        c.dram_profile = setup.dram_profile.clone();
        c.nvm_profile = setup.nvm_profile.clone();
        c.ssd_profile = setup.ssd_profile.clone();
        c.policy = self.policy.clone();
        c.admission_set_pages = self.admission_set;
        c.policy_seed = setup.seed;
        c.nvcache = setup.nvcache.clone();
        c.techniques = self.techniques;
        c.debug_lines = self.debug_lines;
        c.cpu_cache_model = ByteSize(setup.cpu_cache_model_bytes);
        c.prefetch_lines = setup.prefetch_lines;
        c.double_write = setup.double_write.resolve(arch);
        c.nvm_double_write_slots = setup.nvm_double_write_slots;
        c.nvm_verify = setup.nvm_verify;
        if self.buffered_io {
            c.direct_io = DirectIo::Off;
        }
        Ok(c)
    }

    pub fn driver_config(&self, setup: &Setup, data: Option<ByteSize>) -> DriverConfig {
        DriverConfig {
            threads: setup.threads,
            warmup: Duration::from_secs_f64(setup.warmup_secs),
            duration: setup.duration_secs.map(Duration::from_secs_f64),
            seed: setup.seed,
            data_bytes: data.map(ByteSize::bytes),
            model_clock: setup.model_clock,
            model: setup.mode == EmulationMode::Model,
            page_provider: setup.page_provider,
            batch: setup.batch,
        }
    }
}

#[derive(Args, Debug)]
pub struct YcsbArgs {
    /// Architecture: main-memory, ssd-bm, basic-nvm-bm, three-tier, nvm-direct, nvcache, mmap-read, mmap-se1, mmap-se2.
    #[arg(long, default_value = "three-tier")]
    arch: String,
    #[arg(long, default_value = "256MiB")]
    dram: ByteSize,
    #[arg(long, default_value = "1GiB")]
    nvm: ByteSize,
    /// Size of the B+-tree after loading (sets recordcount); omit to use the workload's
    /// recordcount.
    #[arg(long)]
    data: Option<ByteSize>,
    /// ro, rw:PCT, scan, a..f, or a YCSB property file.
    #[arg(long, default_value = "ro")]
    workload: String,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    txn: TxnArgs,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// A report of one run: what ran, on what, and what it measured.
#[derive(Serialize)]
pub struct RunReport {
    pub command: &'static str,
    pub version: &'static str,
    pub arch: Architecture,
    pub dram_bytes: u64,
    pub nvm_bytes: u64,
    pub dram_frames: usize,
    pub nvm_frames: usize,
    /// The NVM techniques the engine ran with (the architecture's own unless overridden).
    pub techniques: tierdb::buffer::Techniques,
    /// Debug mode for cache-line-grained access was on (slow: not a performance run).
    pub debug_lines: bool,
    pub setup: Setup,
    pub result: YcsbReport,
    /// The transactional mode's settings and measurements (absent in the raw mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn: Option<TxnReport>,
}

pub fn run(args: YcsbArgs) -> Result<()> {
    remove_files_on_interrupt()?;
    let arch: Architecture = args.arch.parse()?;
    let txn = args.txn.resolve()?;
    let setup = args.engine.setup(&args.workload)?;
    let progress = Progress::new(!args.quiet && !args.json);
    let report = match &txn {
        None => run_one(&args.engine, &setup, arch, args.dram, args.nvm, args.data, "bench", &progress)?,
        Some(t) => {
            ycsb_txn::run_one(&args.engine, &setup, t, arch, args.dram, args.nvm, args.data, "bench", &progress)?
        }
    };
    progress.finish();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

/// Opens `arch`, runs the workload, removes the files.
#[allow(clippy::too_many_arguments)]
pub fn run_one(
    engine_args: &EngineArgs,
    setup: &Setup,
    arch: Architecture,
    dram: ByteSize,
    nvm: ByteSize,
    data: Option<ByteSize>,
    tag: &str,
    progress: &Progress,
) -> Result<RunReport> {
    if setup.page_provider && !arch.has_buffer() {
        bail!("--page-provider needs an architecture with a buffer manager ({arch} has none)");
    }
    if let (Some(cap), Some(d)) = (arch.capacity_bytes(dram, nvm), data)
        && d.bytes() > cap
    {
        bail!(
            "{arch} cannot hold {d} of data: it keeps all data in {} of {}",
            if arch == Architecture::MainMemory { "DRAM" } else { "NVM" },
            ByteSize(cap)
        );
    }
    let cfg = engine_args.arch_config(setup, arch, dram, nvm, tag)?;
    let files = Cleanup::new(cfg.files());
    let engine = Engine::open(&cfg).with_context(|| format!("opening {arch}"))?;
    let (dram_frames, nvm_frames) = engine.frames();
    let recorder = crate::sim_cmd::start_recording(&engine, engine_args.trace.as_deref(), arch)?;
    progress.set_prefix(&format!("{arch}{}", data.map(|d| format!(" {d}")).unwrap_or_default()));
    let result = ycsb_driver::run(&engine, &setup.workload, &engine_args.driver_config(setup, data), &|p, d, t| {
        progress.update(p, d, t)
    })
    .with_context(|| format!("running {arch}"))?;
    crate::sim_cmd::finish_recording(recorder, engine_args.trace.as_deref(), progress)?;
    drop(engine);
    drop(files);
    Ok(RunReport::new("bench ycsb", &cfg, (dram, nvm), (dram_frames, nvm_frames), setup, result))
}

impl RunReport {
    /// The report of a run of `cfg` with tier sizes `(dram, nvm)` and frame counts.
    pub fn new(
        command: &'static str,
        cfg: &ArchConfig,
        (dram, nvm): (ByteSize, ByteSize),
        (dram_frames, nvm_frames): (usize, usize),
        setup: &Setup,
        result: YcsbReport,
    ) -> RunReport {
        let arch = cfg.arch;
        RunReport {
            command,
            version: env!("CARGO_PKG_VERSION"),
            arch,
            dram_bytes: dram.bytes(),
            nvm_bytes: if arch.uses_nvm() { nvm.bytes() } else { 0 },
            dram_frames,
            nvm_frames,
            techniques: cfg.techniques.unwrap_or(arch.default_techniques()),
            debug_lines: cfg.debug_lines,
            setup: setup.clone(),
            result,
            txn: None,
        }
    }
}

/// Engine files that exist now, removed by the Ctrl-C handler if the run is
/// interrupted (an NVM pool on /dev/shm holds RAM until someone deletes it).
static LIVE_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the handler that removes the engine's files on Ctrl-C / SIGTERM, then exits
/// with status 130.
///
/// # Errors
/// A handler was installed already.
pub fn remove_files_on_interrupt() -> Result<()> {
    ctrlc::set_handler(|| {
        let files = std::mem::take(&mut *LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()));
        for p in &files {
            remove_quietly(p);
        }
        eprintln!("\ninterrupted: removed {} engine file(s)", files.len());
        std::process::exit(130);
    })
    .context("installing the Ctrl-C handler")
}

/// Removes files and directories (with their contents) when dropped (also on error
/// paths), and on Ctrl-C meanwhile.
pub(crate) struct Cleanup(Vec<PathBuf>);

impl Cleanup {
    pub(crate) fn new(files: Vec<PathBuf>) -> Cleanup {
        LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()).extend(files.iter().cloned());
        Cleanup(files)
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        LIVE_FILES.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| !self.0.contains(p));
        for p in &self.0 {
            remove_quietly(p);
        }
    }
}

fn remove_quietly(p: &Path) {
    let removed = if p.is_dir() {
        std::fs::remove_dir_all(p)
    } else if p.exists() {
        std::fs::remove_file(p)
    } else {
        Ok(())
    };
    if let Err(e) = removed {
        eprintln!("warning: could not remove {}: {e}", p.display());
    }
}

/// A progress bar on stderr, or nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(show: bool) -> Progress {
        let bar = show.then(|| {
            let b = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{prefix:>24} {msg:>8} [{bar:30}] {percent:>3}% {elapsed}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b
        });
        Progress { bar }
    }

    pub fn set_prefix(&self, p: &str) {
        if let Some(b) = &self.bar {
            b.set_prefix(p.to_string());
        }
    }

    pub fn update(&self, phase: &str, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            if b.message() != phase {
                b.set_message(phase.to_string());
            }
            b.set_length(total.max(1));
            b.set_position(done.min(total));
        }
    }

    /// Prints a line above the bar, or to stderr where no bar is drawn (none asked for,
    /// or stderr is not a terminal).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) if !b.is_hidden() => b.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

pub fn print_report(r: &RunReport) {
    let s = &r.setup;
    let res = &r.result;
    println!(
        "tierdb {} bench ycsb: {}{} | workload {} | {} thread(s) | seed {} | mode {}",
        r.version,
        r.arch,
        r.txn.as_ref().map(|t| format!(" through transactions (durability {})", t.durability)).unwrap_or_default(),
        s.workload.origin(),
        s.threads,
        s.seed,
        s.mode
    );
    if s.page_provider {
        println!("page provider: on (a thread beside the workers keeps DRAM frames free)");
    }
    if s.batch > 1 {
        println!(
            "batches: {} operations a worker, their SSD pages read ahead together (latency from the batch's start)",
            s.batch
        );
    }
    println!(
        "profiles: dram {} · nvm {} · ssd {}{} | page {} | DRAM {} ({} frames) · NVM {} ({} frames)",
        s.dram_profile.name,
        s.nvm_profile.name,
        s.ssd_profile.name,
        if !r.arch.uses_ssd() {
            ""
        } else {
            match s.double_write.resolve(r.arch) {
                DoubleWriteMode::Off => " (double write off)",
                DoubleWriteMode::Ssd => " (double write on SSD)",
                DoubleWriteMode::Nvm => " (double write in NVM)",
            }
        },
        ByteSize(s.page_size_bytes as u64),
        ByteSize(r.dram_bytes),
        r.dram_frames,
        ByteSize(r.nvm_bytes),
        r.nvm_frames
    );
    if r.arch == Architecture::NvmDirect {
        println!(
            "nvm-direct: pages read and written in place in NVM; NVM reads charged through a {} CPU-cache model",
            ByteSize(s.cpu_cache_model_bytes)
        );
    } else if r.arch.uses_nvm() {
        println!(
            "NVM techniques: {}{}",
            r.techniques,
            if r.debug_lines { " (debug mode: checks every line access; slow)" } else { "" }
        );
    }
    println!(
        "data: {} records of {}, B+-tree {} (target {}); load {:.1} s ({:.0} records/s){}",
        res.records,
        if res.record_bytes_mean < res.record_bytes as f64 {
            format!("up to {} B (mean {:.0} B)", res.record_bytes, res.record_bytes_mean)
        } else {
            format!("{} B", res.record_bytes)
        },
        ByteSize(res.data_bytes),
        res.data_bytes_target.map(|b| ByteSize(b).to_string()).unwrap_or_else(|| "recordcount".into()),
        res.load_secs,
        res.load_records_per_sec,
        if r.arch == Architecture::Nvcache {
            "; nvcache admits by its own policy during the load"
        } else if r.arch.uses_nvm() && r.arch.uses_ssd() {
            "; the load admits DRAM victims to free NVM frames"
        } else {
            ""
        }
    );
    println!(
        "run: {:.1} s after {:.1} s warm-up: {} ops, {} ops/s{}",
        res.run_secs,
        res.warmup_secs,
        res.ops,
        fmt_rate(res.throughput_ops_per_sec),
        res.modelled_ops_per_sec
            .map(|m| format!(" (modelled: {} ops/s, {} clock)", fmt_rate(m), s.model_clock.name()))
            .unwrap_or_default()
    );
    if res.not_found > 0 {
        println!("warning: {} operations did not find their key", res.not_found);
    }
    let mut t = Table::new();
    t.set_header(["op", "count", "mean µs", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"]);
    for l in &res.latency {
        let us = |ns: f64| format!("{:.2}", ns / 1000.0);
        t.add_row([
            l.kind.clone(),
            l.ops.to_string(),
            us(l.mean_ns),
            us(l.p50_ns),
            us(l.p90_ns),
            us(l.p99_ns),
            us(l.p999_ns),
            us(l.max_ns),
        ]);
    }
    println!("{t}");
    if let Some(txn) = &r.txn {
        ycsb_txn::print(txn, res.run_secs);
    }
    if r.arch == Architecture::MainMemory {
        println!("main-memory has no buffer manager: no tier counters");
        return;
    }
    let b = &res.tiers.buffer;
    let per_op = |v: u64| if res.ops == 0 { 0.0 } else { v as f64 / res.ops as f64 };
    let mut t = Table::new();
    t.set_header(["counter (measured run)", "total", "per op"]);
    let mut row = |name: &str, v: u64| {
        t.add_row([name.to_string(), v.to_string(), format!("{:.4}", per_op(v))]);
    };
    row("DRAM hits", b.dram_hits);
    row("NVM hits", b.nvm_hits);
    if b.nvm_reads_in_place + b.nvm_writes_in_place > 0 {
        row("  of them read in place", b.nvm_reads_in_place);
        row("  of them written in place", b.nvm_writes_in_place);
    }
    row("SSD reads (page → DRAM)", b.ssd_reads);
    if s.batch > 1 {
        row("SSD reads ahead of a batch", b.prefetch_reads);
    }
    row("lines NVM → DRAM", res.lines_nvm_to_dram);
    row("lines DRAM → NVM", res.lines_dram_to_nvm);
    row("NVM admissions", b.nvm_admissions);
    row("pages DRAM → SSD (dirty)", b.dram_to_ssd_pages);
    row("pages NVM → SSD (dirty)", b.nvm_to_ssd_pages);
    row("DRAM evictions", b.dram_evictions);
    row("NVM evictions", b.nvm_evictions);
    if b.evict_write_ns > 0 || s.page_provider {
        row("ms misses spent writing victims", b.evict_write_ns / 1_000_000);
    }
    if s.page_provider {
        row("frames freed by the page provider", b.provider_frames);
        if b.provider_nvm_frames > 0 {
            row("NVM frames freed by the page provider", b.provider_nvm_frames);
        }
        row("ms the page provider spent writing", b.provider_write_ns / 1_000_000);
        row("page provider's failed evictions", b.provider_errors);
    }
    if r.techniques != tierdb::buffer::Techniques::NONE {
        row("line faults", b.line_faults);
        row("mini pages allocated", b.mini_allocations);
        row("mini pages promoted", b.mini_promotions);
        row("swizzles", b.swizzles);
        row("unswizzles", b.unswizzles);
    }
    if let Some(n) = &res.tiers.nvm {
        row("NVM write lines", n.write_lines);
        row("NVM write bytes", n.write_bytes);
        row("NVM persists", n.persists);
    }
    if let Some(s) = &res.tiers.ssd {
        row("SSD page reads", s.reads);
        row("SSD page writes", s.writes);
    }
    if let Some(d) = &res.tiers.ssd_double_write {
        row("SSD double-write writes", d.writes);
        row("SSD double-write syncs", d.syncs);
    }
    if let Some(d) = &res.tiers.nvm_double_write {
        row("NVM double-write writes", d.writes);
        row("NVM double-write bytes", d.write_bytes);
        row("NVM double-write persists", d.persists);
    }
    println!("{t}");
    if let Some(p) = &res.page_provider
        && let Some(e) = &p.first_error
    {
        println!("page provider: {} failed evictions; the first: {e}", p.errors);
    }
    if let Some(c) = &res.tiers.nvm_cache {
        print_nvm_cache(c, &s.nvcache);
    }
}

/// The NVM cache's counters over the measured run, as a production cache reports them.
pub fn print_nvm_cache(c: &tierdb::buffer::policy::NvmCacheStats, cfg: &NvcacheConfig) {
    println!(
        "NVM cache (nvcache): OBP {} (target {}%, window {} lookups), small-bypass below {}% of DRAM, LFRU window {}",
        cfg.obp_mode.name(),
        f64::from(cfg.obp_target_permille) / 10.0,
        cfg.obp_window_lookups,
        cfg.small_bypass_dram_percent,
        cfg.reuse_window_lookups.map_or_else(|| "1 lookup per frame".to_string(), |w| format!("{w} lookups")),
    );
    println!(
        "  OBP counts {}; a stale copy of a dirty victim refused by OBP is {}",
        if cfg.obp_count == ObpCount::All { "inserts + removals + evictions" } else { "inserts only" },
        cfg.stale_overwrite_hits_min
            .map_or_else(|| "removed".to_string(), |k| format!("overwritten if it had ≥ {k} NVM hits, else removed")),
    );
    let mut t = Table::new();
    t.set_header(["NVM cache (measured run)", "count"]);
    for (name, v) in [
        ("lookups (DRAM misses)", c.lookups),
        ("hits", c.hits),
        ("misses", c.misses),
        ("inserts on read", c.read_inserts),
        ("inserts on write (write-through)", c.write_inserts),
        ("removals (stale or freed)", c.removals),
        ("evictions (LFRU)", c.evictions),
        ("stale copies overwritten over target", c.stale_overwrites),
        ("bypassed: small database", c.bypass_small_db),
        ("bypassed: OBP over target", c.bypass_obp),
        ("bypassed: full, nothing stale", c.bypass_full),
        ("sweeps", c.sweeps),
        ("pages cached at the end", c.cached_pages),
    ] {
        t.add_row([name.to_string(), v.to_string()]);
    }
    t.add_row(["hit ratio".to_string(), format!("{:.1}%", 100.0 * c.hit_ratio())]);
    t.add_row(["OBP over the run".to_string(), format!("{:.1}%", 100.0 * c.obp())]);
    println!("{t}");
}

/// `--double-write`: a place, or `on` for the architecture's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DoubleWriteArg {
    On,
    Off,
    Ssd,
    Nvm,
}

impl DoubleWriteArg {
    pub fn resolve(self, arch: Architecture) -> DoubleWriteMode {
        match self {
            DoubleWriteArg::On => arch.default_double_write(),
            DoubleWriteArg::Off => DoubleWriteMode::Off,
            DoubleWriteArg::Ssd => DoubleWriteMode::Ssd,
            DoubleWriteArg::Nvm => DoubleWriteMode::Nvm,
        }
    }
}

fn parse_dw_slots(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("{s:?} is not a count of slots"))?;
    let max = tierdb::limits::DOUBLE_WRITE_SLOTS_MAX;
    if (1..=max).contains(&n) { Ok(n) } else { Err(format!("{n} slots: use 1 to {max}")) }
}

fn parse_nvm_verify(s: &str) -> Result<NvmVerify, String> {
    s.parse()
}

fn parse_double_write(s: &str) -> Result<DoubleWriteArg, String> {
    match s {
        "on" => Ok(DoubleWriteArg::On),
        "off" => Ok(DoubleWriteArg::Off),
        "ssd" => Ok(DoubleWriteArg::Ssd),
        "nvm" => Ok(DoubleWriteArg::Nvm),
        _ => Err(format!("{s:?}: expected on, off, ssd or nvm")),
    }
}

pub fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}
