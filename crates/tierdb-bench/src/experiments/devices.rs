//! `tierdb devices bench`'s measurements: each tier's basic operations, every row run
//! `runs` times, its median wall time per operation beside the modelled time from the
//! device counters and the profile's cost. Random line reads form a dependent chain (the
//! next address depends on the bytes just read), so they measure latency, not
//! overlapped throughput.
//!
//! The files it creates are removed at the end unless asked to keep them; it never
//! opens a file it did not create.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::PageId;
use tierdb::device::clock;
use tierdb::device::{
    AlignedBuf, CostModel, CpuCaps, DeviceProfile, DramArena, DramConfig, EmulationMode, FlushInstruction, HugePages,
    NvmConfig, NvmInfo, NvmRegion, OpenMode, SsdConfig, SsdFile, SsdInfo, StatsSnapshot, Tier, best_flush_instruction,
    cpu_caps,
};

use crate::harness::{Middle, median};

/// A cache line, the unit of the line operations.
const LINE: u64 = 64;

/// What to measure, checked by the command: the devices, their sizes and files, the
/// operations per run and the runs.
pub struct DeviceBench {
    /// Emulation mode of every device.
    pub mode: EmulationMode,
    /// The profiles of DRAM, NVM and SSD.
    pub dram_profile: DeviceProfile,
    /// See `dram_profile`.
    pub nvm_profile: DeviceProfile,
    /// See `dram_profile`.
    pub ssd_profile: DeviceProfile,
    /// Sizes of the DRAM arena, the NVM region and the SSD page file; each holds two
    /// pages at least.
    pub dram_size: ByteSize,
    /// See `dram_size`.
    pub nvm_size: ByteSize,
    /// See `dram_size`.
    pub ssd_size: ByteSize,
    /// The page size, in bytes.
    pub page_bytes: u64,
    /// The NVM file and SSD page file to create (never overwritten).
    pub nvm_path: PathBuf,
    /// See `nvm_path`.
    pub ssd_path: PathBuf,
    /// Operations per run for DRAM and NVM line operations (page operations use 1/16).
    pub ops: u64,
    /// Operations per run for SSD page I/O (with fdatasync: 1/10).
    pub ssd_ops: u64,
    /// Runs of each row, at least one.
    pub runs: usize,
    /// The seed of every run's addresses.
    pub seed: u64,
    /// Tiers to measure.
    pub tiers: Vec<Tier>,
    /// Keep the NVM and SSD files afterwards.
    pub keep: bool,
}

/// Everything a reader needs to reproduce and judge the numbers.
#[derive(Serialize)]
pub struct Report {
    pub command: &'static str,
    pub version: &'static str,
    pub mode: EmulationMode,
    pub threads: usize,
    pub seed: u64,
    pub runs: usize,
    pub cpu: CpuCaps,
    pub flush: FlushInstruction,
    pub tsc_ticks_per_ns: f64,
    /// Present in `spin` mode.
    pub spin_calibration: Option<tierdb::device::SpinCalibration>,
    pub page_size_bytes: u64,
    pub dram: Option<DramReport>,
    pub nvm: Option<TierReport<NvmInfo>>,
    pub ssd: Option<TierReport<SsdInfo>>,
    pub rows: Vec<Row>,
}

/// The DRAM arena measured.
#[derive(Serialize)]
pub struct DramReport {
    pub size_bytes: u64,
    pub huge_pages: HugePages,
    pub profile: DeviceProfile,
    pub counters: StatsSnapshot,
}

/// The NVM region or SSD page file measured.
#[derive(Serialize)]
pub struct TierReport<I> {
    pub info: I,
    pub profile: DeviceProfile,
    pub counters: StatsSnapshot,
}

/// One operation's measurements.
#[derive(Serialize, Clone)]
pub struct Row {
    pub tier: Tier,
    pub op: &'static str,
    pub ops_per_run: u64,
    pub wall_ns_per_op: f64,
    pub wall_ns_per_op_runs: Vec<f64>,
    pub modelled_ns_per_op: f64,
    pub profile_ns_per_op: f64,
    /// Wall (off, spin) or modelled (model) time over the profile's.
    pub ratio: f64,
    pub interfered_reads_per_op: f64,
}

/// SplitMix64: small, fast, seeded.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    /// Folds bytes just read into the state: the next address depends on them.
    fn fold(&mut self, bytes: &[u8]) {
        self.0 ^= u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    }
}

/// Files this run created, removed at the end unless `keep` (never a file it did not create).
struct Created {
    paths: Vec<PathBuf>,
    keep: bool,
}
impl Drop for Created {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// One row to measure: tier, operation, operations per run, the profile's ns/op.
struct Spec(Tier, &'static str, u64, f64);

struct Bench<'a> {
    plan: &'a DeviceBench,
    progress: ProgressBar,
    rows: Vec<Row>,
}

impl Bench<'_> {
    /// Runs `body` `ops` times per run, `runs` times, and records a row.
    fn measure<D>(
        &mut self,
        dev: &mut D,
        Spec(tier, op, ops, profile_ns): Spec,
        snap: fn(&D) -> StatsSnapshot,
        mut body: impl FnMut(&mut D, &mut Rng) -> Result<()>,
    ) -> Result<()> {
        self.progress.set_message(format!("{tier} {op}"));
        let mut walls = Vec::with_capacity(self.plan.runs);
        let mut modelled = Vec::with_capacity(self.plan.runs);
        let mut interfered = 0u64;
        for run in 0..self.plan.runs {
            let mut rng = Rng(self.plan.seed ^ (self.rows.len() as u64) << 32 ^ run as u64);
            let before = snap(dev);
            let t0 = Instant::now();
            for _ in 0..ops {
                body(dev, &mut rng)?;
            }
            let wall_ns = t0.elapsed().as_nanos() as f64;
            let d = snap(dev).since(&before);
            walls.push(wall_ns / ops as f64);
            modelled.push(d.modelled_ps as f64 / 1000.0 / ops as f64);
            interfered += d.interfered_reads;
            self.progress.inc(1);
        }
        let wall = median(walls.iter().copied(), Middle::Upper).expect("at least one run");
        let model = median(modelled.iter().copied(), Middle::Upper).expect("at least one run");
        let shown = if self.plan.mode == EmulationMode::Model { model } else { wall };
        self.rows.push(Row {
            tier,
            op,
            ops_per_run: ops,
            wall_ns_per_op: wall,
            wall_ns_per_op_runs: walls,
            modelled_ns_per_op: model,
            profile_ns_per_op: profile_ns,
            ratio: shown / profile_ns,
            interfered_reads_per_op: interfered as f64 / (ops * self.plan.runs as u64) as f64,
        });
        Ok(())
    }
}

fn ns(ps: u64) -> f64 {
    ps as f64 / 1000.0
}

/// Measures every tier asked for, in the order DRAM, NVM, SSD.
///
/// # Errors
/// Creating or using a device.
pub fn run(plan: &DeviceBench) -> Result<Report> {
    let page = plan.page_bytes;
    let page_usize = usize::try_from(page).context("--page-size too large")?;
    let mut created = Created { paths: Vec::new(), keep: plan.keep };

    let steps_per_tier = |t: Tier| match t {
        Tier::Dram => 3,
        Tier::Nvm => 8,
        Tier::Ssd => 5,
    };
    let total: u64 = plan.tiers.iter().map(|&t| steps_per_tier(t) * plan.runs as u64).sum();
    let progress = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    progress.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("progress template")
            .progress_chars("=> "),
    );
    let mut bench = Bench { plan, progress, rows: Vec::new() };
    let rate = clock::rate();
    let mut report = Report {
        command: "tierdb devices bench",
        version: env!("CARGO_PKG_VERSION"),
        mode: plan.mode,
        threads: 1,
        seed: plan.seed,
        runs: plan.runs,
        cpu: cpu_caps(),
        flush: best_flush_instruction(),
        tsc_ticks_per_ns: rate.ticks_per_ns,
        spin_calibration: (plan.mode == EmulationMode::Spin).then(tierdb::device::spin_calibration),
        page_size_bytes: page,
        dram: None,
        nvm: None,
        ssd: None,
        rows: Vec::new(),
    };

    if plan.tiers.contains(&Tier::Dram) {
        let mut cfg = DramConfig::new(plan.dram_size);
        cfg.frame_bytes = page_usize;
        cfg.profile = plan.dram_profile.clone();
        cfg.mode = plan.mode;
        let mut dram = DramArena::new(&cfg).context("DRAM arena")?;
        bench_dram(&mut bench, &mut dram)?;
        report.dram = Some(DramReport {
            size_bytes: dram.size_bytes(),
            huge_pages: dram.huge_pages().clone(),
            profile: dram.core().profile().clone(),
            counters: dram.core().stats().snapshot(),
        });
    }
    if plan.tiers.contains(&Tier::Nvm) {
        let mut cfg = NvmConfig::new(&plan.nvm_path, plan.nvm_size);
        cfg.open_mode = OpenMode::Create;
        cfg.profile = plan.nvm_profile.clone();
        cfg.mode = plan.mode;
        let mut nvm = NvmRegion::open(&cfg).context("NVM region")?;
        created.paths.push(plan.nvm_path.clone());
        bench_nvm(&mut bench, &mut nvm, page)?;
        report.nvm = Some(TierReport {
            info: nvm.info().clone(),
            profile: nvm.core().profile().clone(),
            counters: nvm.core().stats().snapshot(),
        });
    }
    if plan.tiers.contains(&Tier::Ssd) {
        let mut cfg = SsdConfig::new(&plan.ssd_path);
        cfg.page_size = page_usize;
        cfg.profile = plan.ssd_profile.clone();
        cfg.mode = plan.mode;
        let mut ssd = SsdFile::create(&cfg).context("SSD page file")?;
        created.paths.push(plan.ssd_path.clone());
        bench_ssd(&mut bench, &mut ssd, plan.ssd_size.bytes() / page - 1)?;
        report.ssd = Some(TierReport {
            info: ssd.info().clone(),
            profile: ssd.core().profile().clone(),
            counters: ssd.core().stats().snapshot(),
        });
    }
    bench.progress.finish_and_clear();
    report.rows = bench.rows;
    Ok(report)
}

fn bench_dram(b: &mut Bench, dram: &mut DramArena) -> Result<()> {
    let ops = b.plan.ops;
    let lines = dram.size_bytes() / LINE;
    let cost = *dram.core().cost_model();
    let profile = dram.core().profile().clone();
    let read_ns = ns(cost.read_ps(profile.media_bytes(0, LINE)));
    let write_ns = ns(cost.write_ps(profile.media_bytes(0, LINE)));
    let snap = |d: &DramArena| d.core().stats().snapshot();
    // Touch every OS page once, so page faults stay out of the measurements.
    let zero = vec![0u8; 4096];
    for off in (0..dram.size_bytes()).step_by(4096) {
        dram.write(off, &zero)?;
    }
    let mut buf = [0u8; LINE as usize];
    b.measure(dram, Spec(Tier::Dram, "line read, random", ops, read_ns), snap, |d, rng| {
        d.read(rng.below(lines) * LINE, &mut buf)?;
        rng.fold(&buf);
        Ok(())
    })?;
    let mut seq = 0u64;
    b.measure(dram, Spec(Tier::Dram, "line read, sequential", ops, read_ns), snap, |d, _| {
        d.read(seq * LINE, &mut buf)?;
        seq = (seq + 1) % lines;
        Ok(())
    })?;
    let line = [0x5au8; LINE as usize];
    b.measure(dram, Spec(Tier::Dram, "line write, random", ops, write_ns), snap, |d, rng| {
        Ok(d.write(rng.below(lines) * LINE, &line)?)
    })
}

fn bench_nvm(b: &mut Bench, nvm: &mut NvmRegion, page: u64) -> Result<()> {
    let ops = b.plan.ops;
    let page_ops = (ops / 16).max(1);
    let size = nvm.size_bytes();
    let lines = size / LINE;
    let pages = size / page;
    let cost: CostModel = *nvm.core().cost_model();
    let profile = nvm.core().profile().clone();
    let line_media = profile.media_bytes(0, LINE);
    let read_ns = ns(cost.read_ps(line_media));
    let write_ns = ns(cost.write_ps(line_media));
    let persist_ns = ns(cost.persist_ps(1));
    let page_read_ns = ns(cost.read_ps(profile.media_bytes(0, page)));
    let page_write_ns = ns(cost.write_ps(profile.media_bytes(0, page)) + cost.persist_ps(page / LINE));
    let mixed_ns = write_ns + ns(cost.interfered_ps(cost.read_ps(line_media)));
    let snap = |n: &NvmRegion| n.core().stats().snapshot();

    // Touch the whole region (one write per OS page), so page faults stay out.
    b.progress.set_message("nvm: touching the region");
    let zero = vec![0u8; 4096];
    for off in (0..size).step_by(4096) {
        nvm.copy_in(off, &zero)?;
    }
    let mut buf = [0u8; LINE as usize];
    let line = [0xa5u8; LINE as usize];
    b.measure(nvm, Spec(Tier::Nvm, "line read, random", ops, read_ns), snap, |n, rng| {
        n.read_lines(rng.below(lines) * LINE, &mut buf)?;
        rng.fold(&buf);
        Ok(())
    })?;
    let mut seq = 0u64;
    b.measure(nvm, Spec(Tier::Nvm, "line read, sequential", ops, read_ns), snap, |n, _| {
        n.read_lines(seq * LINE, &mut buf)?;
        seq = (seq + 1) % lines;
        Ok(())
    })?;
    b.measure(nvm, Spec(Tier::Nvm, "line write, random", ops, write_ns), snap, |n, rng| {
        Ok(n.write_lines(rng.below(lines) * LINE, &line)?)
    })?;
    let mut seq = 0u64;
    b.measure(nvm, Spec(Tier::Nvm, "line write, sequential", ops, write_ns), snap, |n, _| {
        n.write_lines(seq * LINE, &line)?;
        seq = (seq + 1) % lines;
        Ok(())
    })?;
    b.measure(nvm, Spec(Tier::Nvm, "line write + persist, random", ops, write_ns + persist_ns), snap, |n, rng| {
        let off = rng.below(lines) * LINE;
        n.write_lines(off, &line)?;
        Ok(n.persist(off, LINE)?)
    })?;
    b.measure(nvm, Spec(Tier::Nvm, "line write, then read, random", ops, mixed_ns), snap, |n, rng| {
        n.write_lines(rng.below(lines) * LINE, &line)?;
        n.read_lines(rng.below(lines) * LINE, &mut buf)?;
        rng.fold(&buf);
        Ok(())
    })?;
    let mut page_buf = vec![0u8; page as usize];
    b.measure(nvm, Spec(Tier::Nvm, "page copy out, random", page_ops, page_read_ns), snap, |n, rng| {
        Ok(n.copy_out(rng.below(pages) * page, &mut page_buf)?)
    })?;
    let page_src = vec![0x3cu8; page as usize];
    b.measure(nvm, Spec(Tier::Nvm, "page copy in + persist, random", page_ops, page_write_ns), snap, |n, rng| {
        let off = rng.below(pages) * page;
        n.copy_in(off, &page_src)?;
        Ok(n.persist(off, page)?)
    })
}

fn bench_ssd(b: &mut Bench, ssd: &mut SsdFile, data_pages: u64) -> Result<()> {
    if data_pages < 1 {
        bail!("the SSD file holds no data page");
    }
    let ops = b.plan.ssd_ops;
    let page = ssd.page_size() as u64;
    let cost: CostModel = *ssd.core().cost_model();
    let profile = ssd.core().profile().clone();
    let read_ns = ns(cost.read_ps(profile.media_bytes(0, page)));
    let write_ns = ns(cost.write_ps(profile.media_bytes(0, page)));
    let snap = |s: &SsdFile| s.core().stats().snapshot();

    // Fill every page with data first: reads of never-written extents never reach the disk.
    b.progress.set_message(format!("ssd: writing {data_pages} pages"));
    let first = ssd.grow(data_pages)?;
    debug_assert_eq!(first, PageId(1));
    let mut buf = AlignedBuf::new(page as usize);
    for p in 1..=data_pages {
        buf[..8].copy_from_slice(&p.to_le_bytes());
        ssd.write_page(PageId(p), &buf)?;
    }
    ssd.sync()?;
    let random_page = |rng: &mut Rng| PageId(1 + rng.below(data_pages));
    b.measure(ssd, Spec(Tier::Ssd, "page read, random", ops, read_ns), snap, |s, rng| {
        Ok(s.read_page(random_page(rng), &mut buf)?)
    })?;
    let mut seq = 0u64;
    b.measure(ssd, Spec(Tier::Ssd, "page read, sequential", ops, read_ns), snap, |s, _| {
        s.read_page(PageId(1 + seq), &mut buf)?;
        seq = (seq + 1) % data_pages;
        Ok(())
    })?;
    b.measure(ssd, Spec(Tier::Ssd, "page write, random", ops, write_ns), snap, |s, rng| {
        Ok(s.write_page(random_page(rng), &buf)?)
    })?;
    let mut seq = 0u64;
    b.measure(ssd, Spec(Tier::Ssd, "page write, sequential", ops, write_ns), snap, |s, _| {
        s.write_page(PageId(1 + seq), &buf)?;
        seq = (seq + 1) % data_pages;
        Ok(())
    })?;
    let sync_ns = write_ns + ns(cost.sync_ps());
    b.measure(ssd, Spec(Tier::Ssd, "page write + fdatasync", (ops / 10).max(1), sync_ns), snap, |s, rng| {
        s.write_page(random_page(rng), &buf)?;
        Ok(s.sync()?)
    })
}
