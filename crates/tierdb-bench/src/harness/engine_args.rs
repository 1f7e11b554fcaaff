//! Engine arguments → configuration: the one place where the command line's engine
//! options (`EngineArgs`, flattened into every command that opens an engine) become a
//! checked [`Setup`], an architecture's [`ArchConfig`] and the YCSB driver's
//! [`DriverConfig`].
//!
//! Invariants: every knob is checked against its bound in [`EngineArgs::setup`] before
//! anything is created; files get names unique to this process and a caller's tag.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::arch::{ArchConfig, Architecture};
use tierdb::device::DoubleWriteMode;
use tierdb::device::{DeviceProfile, DirectIo, EmulationMode};
use tierdb::limits::{NVCACHE_OBP_WINDOW_LOOKUPS_DEFAULT, NVCACHE_SMALL_BYPASS_DRAM_PERCENT_DEFAULT};
use tierdb::page::{CpuCacheSize, NvmVerify};
use tierdb::policy::{NvcacheConfig, ObpCount, ObpMode};
use tierdb_workload::YcsbSpec;

use crate::drivers::ycsb::{DriverConfig, ModelClock};

/// Bounds on the knobs, so a typo cannot start an hour-long run.
const THREADS_MAX: u32 = 256;
/// Most operations a worker takes at once (`--batch`).
const BATCH_MAX: u32 = 1024;
pub const DURATION_SECS_MAX: f64 = 3600.0;

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
    /// dr=X,dw=X,nr=X,nw=X; plain spitfire is eager; `,clean-to-nvm` also admits clean
    /// DRAM victims to NVM with probability Nw, which by default only modified ones are).
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
    /// The CPU last-level cache modelled when charging reads made in place in NVM
    /// (nvm-direct, spitfire with DRAM bypassed, mmap-se2): a share of the data (0.2%,
    /// the three-tier paper's 20 MB L3 over 10 GB; at least 256 KiB, a per-core L2) or
    /// a size (32MiB). A line read again while its tag is cached costs nothing; 0
    /// charges every read (docs/nvm-direct.md).
    #[arg(long, default_value = tierdb::page::CPU_CACHE_MODEL_DEFAULT, value_parser = parse_cpu_cache)]
    pub cpu_cache: CpuCacheSize,
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
    /// The CPU cache that in-place NVM reads are charged through, as asked: bytes, or
    /// a share of each run's data ([`Setup::cpu_cache_bytes`]; a run's report has the
    /// bytes it resolved to).
    pub cpu_cache: CpuCacheSize,
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
    /// This setup with the devices, page size, policy and NVM settings an architecture
    /// configuration chose (a run from a `--config` file: its report names what the
    /// file chose, not the flags' defaults).
    pub fn with_arch_config(&self, acfg: &ArchConfig) -> Setup {
        Setup {
            mode: acfg.mode,
            page_size_bytes: acfg.page_size,
            dram_profile: acfg.dram_profile.clone(),
            nvm_profile: acfg.nvm_profile.clone(),
            ssd_profile: acfg.ssd_profile.clone(),
            policy: acfg.policy.clone(),
            techniques: acfg.techniques,
            prefetch_lines: acfg.prefetch_lines,
            nvm_double_write_slots: acfg.nvm_double_write_slots,
            nvm_verify: acfg.nvm_verify,
            nvcache: acfg.nvcache.clone(),
            ..self.clone()
        }
    }

    /// The CPU-cache model's bytes for a run over `data` (the data size the run loads
    /// to), or without one over the workload's records (record count × mean record
    /// length: the flat data, below the B+-tree's size).
    pub fn cpu_cache_bytes(&self, data: Option<ByteSize>) -> u64 {
        self.cpu_cache.resolve(data.map_or_else(|| self.records_bytes(), ByteSize::bytes))
    }

    /// The workload's flat record bytes (record count × mean record length).
    pub fn records_bytes(&self) -> u64 {
        (self.workload.record_count() as f64 * self.workload.record_length_mean_bytes()) as u64
    }

    /// The CPU-cache model as a report states it for one data size: bytes and share.
    pub fn cpu_cache_label(&self, data_bytes: u64) -> String {
        self.cpu_cache.describe(data_bytes)
    }

    /// The CPU-cache model as a report over several data sizes states it: the bytes at
    /// the smallest and the largest (one size when the model is fixed).
    pub fn cpu_cache_label_over(&self, data_bytes: &[u64]) -> String {
        let (Some(&lo), Some(&hi)) = (data_bytes.iter().min(), data_bytes.iter().max()) else {
            return self.cpu_cache.to_string();
        };
        if lo == hi {
            return self.cpu_cache.describe(lo);
        }
        // Whole KiB: a share resolves to whole lines, which `ByteSize` would print in bytes.
        let kib = |data: u64| ByteSize(self.cpu_cache.resolve(data) >> 10 << 10);
        let pct = |data: u64| 100.0 * self.cpu_cache.resolve(data) as f64 / data.max(1) as f64;
        format!(
            "{} ({:.2}% of {} of data) … {} ({:.2}% of {}); --cpu-cache {}",
            kib(lo),
            pct(lo),
            ByteSize(lo),
            kib(hi),
            pct(hi),
            ByteSize(hi),
            self.cpu_cache
        )
    }

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
            cpu_cache: self.cpu_cache,
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

    /// The architecture's configuration with files unique to this process and `tag`,
    /// its CPU-cache model sized for `data` ([`Setup::cpu_cache_bytes`]).
    pub fn arch_config(
        &self,
        setup: &Setup,
        arch: Architecture,
        dram: ByteSize,
        nvm: ByteSize,
        data: Option<ByteSize>,
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
        c.cpu_cache_model = ByteSize(setup.cpu_cache_bytes(data));
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

fn parse_cpu_cache(s: &str) -> Result<CpuCacheSize, String> {
    s.parse().map_err(|e: tierdb::page::CpuCacheSizeError| e.to_string())
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        engine: EngineArgs,
    }

    fn setup(args: &[&str]) -> Result<Setup> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        cli.engine.setup("ro")
    }

    /// The default is a share of each run's data; a size stays fixed; bad values are
    /// refused by the parser with the reason.
    #[test]
    fn the_cpu_cache_is_a_share_of_the_data_by_default() {
        let s = setup(&[]).unwrap();
        assert_eq!(s.cpu_cache, CpuCacheSize::default());
        assert_eq!(s.cpu_cache_bytes(Some(ByteSize(1 << 30))), (1u64 << 30) / 500 / 64 * 64);
        assert_eq!(s.cpu_cache_bytes(Some(ByteSize(1 << 20))), tierdb::page::CPU_CACHE_MODEL_MIN_BYTES);
        let label = s.cpu_cache_label_over(&[16 << 20, 240 << 20]);
        assert!(label.starts_with("256KiB (1.56% of 16MiB of data) … 491KiB"), "{label}");
        let fixed = setup(&["--cpu-cache", "32MiB"]).unwrap();
        assert_eq!(fixed.cpu_cache_bytes(Some(ByteSize(1 << 30))), 32 << 20);
        assert_eq!(fixed.cpu_cache_bytes(None), 32 << 20);
        for bad in ["-1%", "0%", "150%", "lots", "4GiB"] {
            let arg = format!("--cpu-cache={bad}");
            let e = setup(&[&arg]).expect_err(bad);
            assert!(format!("{e:#}").contains("bad CPU-cache size"), "{bad}: {e:#}");
        }
    }
}
