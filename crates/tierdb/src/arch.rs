//! Storage architectures by name: the same B+-tree and driver over different page
//! sources (van Renen et al., SIGMOD 2018, §5).
//!
//! | name | tiers | page source |
//! |---|---|---|
//! | `main-memory` | DRAM | [`MemorySource`]: no buffer manager; refuses data larger than DRAM |
//! | `ssd-bm` | DRAM + SSD | [`BufferManager`], `eager` (nothing to admit to) |
//! | `basic-nvm-bm` | DRAM + NVM | [`BufferManager`], `eager`; refuses data larger than NVM |
//! | `three-tier` | DRAM + NVM + SSD | [`BufferManager`], `hymem`, cache-line-grained pages, mini pages, pointer swizzling |
//! | `nvm-direct` | NVM | [`NvmDirect`]: pages read and changed in place in NVM (§2.1); refuses data larger than NVM |
//! | `mmap-read` | DRAM + NVM | [`BufferManager`], `eager`: the database file on NVM, pages copied into the buffer with `pread`/`pwrite` (the PostgreSQL study's unmodified engine) |
//! | `mmap-se1` | DRAM + NVM | the same with the file mapped: pages copied with `memcpy` (SE1) |
//! | `mmap-se2` | DRAM + NVM | the same, but reads go to the mapping in place and a page is copied into DRAM only before it is changed (SE2, policy `se2`) |
//! | `nvcache` | DRAM + NVM + SSD | [`BufferManager`], `nvcache`: NVM a volatile cache of clean SSD pages under DRAM (NVCache, §3) |
//! | `nvsql` | DRAM + NVM + SSD | [`BufferManager`], `nvsql`: NVM a durable write cache beside DRAM, pages read and updated in place there (NV-SQL, §3–5; `docs/nvsql.md`) |
//!
//! Code that runs a workload is written once, generic over [`PageSource`], and reaches
//! the concrete source through [`Engine::visit`], so `main-memory` is monomorphised
//! without any buffer-manager code in its path.
//!
//! [`Engine::open`] creates a new database, or with [`ArchConfig::open_existing`] reopens
//! the one a previous engine left in the same files after [`Engine::close`] (a
//! checkpoint). The architectures with an SSD keep the superblock and the catalog there;
//! `three-tier` reopened reuses the NVM pool (the page table is rebuilt from its frame
//! headers, [`Engine::restart_info`]). `basic-nvm-bm` has every page in its NVM pool
//! after a close and reopens from the frame headers alone (the catalog is page 1).
//! `nvm-direct` keeps everything in its NVM region and reopens it in place. `nvcache`
//! reopens from SSD with an empty NVM cache (it is volatile by design); `nvsql` reuses
//! its NVM pool like `three-tier` (NVM holds the durable copy of its pages).
//! `main-memory` keeps nothing to reopen.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::buffer::{BufferConfig, BufferError, BufferManager, RestartInfo, Techniques, TierStats};
use crate::device::{
    DeviceProfile, DirectIo, DoubleWriteMode, DramConfig, EmulationMode, NvmConfig, OpenMode, SsdConfig,
    TornPageRecovery,
};
use crate::page::NvmVerify;
use crate::page::PageSource;
use crate::sources::DirectConfig;
use crate::sources::MemorySource;
use crate::sources::NvmDirect;
use crate::{ByteSize, Result};

/// An architecture's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// `main-memory`: every page in DRAM, no buffer manager, nothing to reopen.
    MainMemory,
    /// `ssd-bm`: a DRAM buffer over the SSD page file.
    SsdBm,
    /// `basic-nvm-bm`: a DRAM buffer over an NVM pool holding every page.
    BasicNvmBm,
    /// `three-tier`: DRAM over NVM over SSD, with the `hymem` policy and all NVM
    /// techniques.
    ThreeTier,
    /// `nvm-direct`: pages read and changed in place in NVM, no DRAM buffer.
    NvmDirect,
    /// `mmap-read`: a DRAM buffer over the database file on NVM, pages moved with
    /// `pread`/`pwrite`.
    MmapRead,
    /// `mmap-se1`: as `mmap-read` with the file mapped, pages copied with `memcpy`.
    MmapSe1,
    /// `mmap-se2`: as `mmap-se1`, but reads go to the mapping in place; a page is
    /// copied into DRAM only before it is changed.
    MmapSe2,
    /// `nvcache`: NVM a volatile cache of clean SSD pages under DRAM.
    Nvcache,
    /// `nvsql`: NVM a durable write cache beside DRAM, pages updated in place there.
    Nvsql,
}

impl Architecture {
    /// Every architecture, in the order of the module's table.
    pub const ALL: [Architecture; 10] = [
        Architecture::MainMemory,
        Architecture::SsdBm,
        Architecture::BasicNvmBm,
        Architecture::ThreeTier,
        Architecture::NvmDirect,
        Architecture::MmapRead,
        Architecture::MmapSe1,
        Architecture::MmapSe2,
        Architecture::Nvcache,
        Architecture::Nvsql,
    ];

    /// The memory-mapped engines of the PostgreSQL study.
    pub const MMAP: [Architecture; 3] = [Architecture::MmapRead, Architecture::MmapSe1, Architecture::MmapSe2];

    /// The architecture's name as the CLI and reports spell it (`ssd-bm`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Architecture::MainMemory => "main-memory",
            Architecture::SsdBm => "ssd-bm",
            Architecture::BasicNvmBm => "basic-nvm-bm",
            Architecture::ThreeTier => "three-tier",
            Architecture::NvmDirect => "nvm-direct",
            Architecture::MmapRead => "mmap-read",
            Architecture::MmapSe1 => "mmap-se1",
            Architecture::MmapSe2 => "mmap-se2",
            Architecture::Nvcache => "nvcache",
            Architecture::Nvsql => "nvsql",
        }
    }

    /// True if the architecture keeps pages on NVM (an NVM pool, `nvm-direct`'s region,
    /// or the memory-mapped engines' database file).
    pub fn uses_nvm(self) -> bool {
        matches!(
            self,
            Architecture::BasicNvmBm
                | Architecture::ThreeTier
                | Architecture::NvmDirect
                | Architecture::Nvcache
                | Architecture::Nvsql
        ) || self.is_mmap()
    }

    /// One of the memory-mapped engines ([`Architecture::MMAP`]).
    pub fn is_mmap(self) -> bool {
        Architecture::MMAP.contains(&self)
    }

    /// True if the architecture has a buffer manager (DRAM caching a lower tier).
    pub fn has_buffer(self) -> bool {
        matches!(
            self,
            Architecture::SsdBm
                | Architecture::BasicNvmBm
                | Architecture::ThreeTier
                | Architecture::Nvcache
                | Architecture::Nvsql
        ) || self.is_mmap()
    }

    /// True if a database it made can be reopened ([`ArchConfig::open_existing`]): all
    /// but `main-memory`.
    pub fn reopens(self) -> bool {
        self != Architecture::MainMemory
    }

    /// True if the architecture keeps its pages in an SSD page file.
    pub fn uses_ssd(self) -> bool {
        matches!(self, Architecture::SsdBm | Architecture::ThreeTier | Architecture::Nvcache | Architecture::Nvsql)
    }

    /// The policy the paper's version of this architecture uses.
    pub fn default_policy(self) -> &'static str {
        match self {
            Architecture::ThreeTier => "hymem",
            Architecture::MmapSe2 => "se2",
            Architecture::Nvcache => "nvcache",
            Architecture::Nvsql => "nvsql",
            _ => "eager",
        }
    }

    /// Where SSD page writes are made durable before they go in place: in NVM for
    /// `nvsql` (NV-SQL §5.4, its double-write buffer in NVDIMM), in a file on SSD for
    /// the others.
    pub fn default_double_write(self) -> DoubleWriteMode {
        match self {
            Architecture::Nvsql => DoubleWriteMode::Nvm,
            _ => DoubleWriteMode::Ssd,
        }
    }

    /// The NVM techniques of the paper's version of this architecture: all three for
    /// `three-tier`, none elsewhere (`basic-nvm-bm` is the paper's basic NVM buffer
    /// manager; the others have no NVM).
    pub fn default_techniques(self) -> Techniques {
        match self {
            Architecture::ThreeTier => Techniques::ALL,
            _ => Techniques::NONE,
        }
    }

    /// The largest data this architecture holds with these tier sizes, if bounded.
    pub fn capacity_bytes(self, dram: ByteSize, nvm: ByteSize) -> Option<u64> {
        match self {
            Architecture::MainMemory => Some(dram.bytes()),
            Architecture::BasicNvmBm | Architecture::NvmDirect => Some(nvm.bytes()),
            Architecture::MmapRead | Architecture::MmapSe1 | Architecture::MmapSe2 => Some(nvm.bytes()),
            Architecture::SsdBm | Architecture::ThreeTier | Architecture::Nvcache | Architecture::Nvsql => None,
        }
    }
}

impl fmt::Display for Architecture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Architecture {
    type Err = BufferError;
    fn from_str(s: &str) -> Result<Architecture, BufferError> {
        Architecture::ALL.into_iter().find(|a| a.name() == s).ok_or_else(|| BufferError::Config {
            what: format!(
                "unknown architecture {s:?}; known: {}",
                Architecture::ALL.map(Architecture::name).join(", ")
            ),
        })
    }
}

/// Everything needed to open an architecture.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchConfig {
    /// Which architecture to open.
    pub arch: Architecture,
    /// Bytes per page (and per DRAM frame): a power of two within the page size limits.
    pub page_size: usize,
    /// Size of the DRAM tier (the buffer, or all data for `main-memory`).
    pub dram: ByteSize,
    /// Size of the NVM tier; unused by architectures without NVM.
    pub nvm: ByteSize,
    /// How every device applies its profile.
    pub mode: EmulationMode,
    /// The DRAM device's profile.
    pub dram_profile: DeviceProfile,
    /// The NVM device's profile (also the NVM double-write area's).
    pub nvm_profile: DeviceProfile,
    /// The SSD device's profile (page file and its double-write file).
    pub ssd_profile: DeviceProfile,
    /// The NVM pool's file: created if missing. A new database formats it; a reopened
    /// one reuses the pool it left there (or formats it and says why in
    /// [`RestartInfo::formatted_because`]).
    pub nvm_path: PathBuf,
    /// The SSD page file: must not exist for a new database, must exist with
    /// `open_existing`.
    pub ssd_path: PathBuf,
    /// Reopen the database the files hold instead of creating one: the SSD page file,
    /// or the NVM pool or region of an architecture without SSD. Refused for
    /// `main-memory` ([`Architecture::reopens`]).
    pub open_existing: bool,
    /// Whether the SSD page file uses `O_DIRECT`.
    pub direct_io: DirectIo,
    /// Overrides the architecture's default policy.
    pub policy: Option<String>,
    /// Pages in `hymem`'s admission set; `None`: half the NVM frames. Other policies
    /// ignore it.
    pub admission_set_pages: Option<usize>,
    /// Seed of a probabilistic policy's coins (`spitfire`).
    pub policy_seed: u64,
    /// The `nvcache` policy's tunables (OBP mode, target and window, small-bypass, LFRU).
    pub nvcache: crate::policy::NvcacheConfig,
    /// Overrides the architecture's default techniques ([`Architecture::default_techniques`]).
    pub techniques: Option<Techniques>,
    /// Debug mode for cache-line-grained access (slow; for tests).
    pub debug_lines: bool,
    /// Count NVM writes per cache line (`tierdb wear`; 8 bytes of DRAM per NVM line).
    pub wear_counters: bool,
    /// The CPU last-level cache that charges for reads made in place in NVM model
    /// (`nvm-direct`, `spitfire`'s and SE2's in-place reads; 0: none). By default the
    /// default share ([`crate::page::CpuCacheSize`]) of the NVM capacity, the most
    /// data an in-place architecture holds; callers that know the data set it.
    pub cpu_cache_model: ByteSize,
    /// Software prefetch of the next lines after an in-place NVM read (SE2, `spitfire`
    /// bypassing DRAM; `BufferConfig::prefetch_lines`; 0: off).
    pub prefetch_lines: u32,
    /// Protect SSD page writes with a double-write area (`BufferConfig::double_write`):
    /// [`Architecture::default_double_write`] unless set.
    pub double_write: DoubleWriteMode,
    /// Slots of an NVM double-write area (`SsdConfig::nvm_double_write_slots`; its size:
    /// [`crate::device::double_write::nvm_area_bytes`]).
    pub nvm_double_write_slots: usize,
    /// What is checked against the CRCs of the pages in NVM (`BufferConfig::nvm_verify`,
    /// `DirectConfig::nvm_verify`; `docs/checksums.md`).
    pub nvm_verify: NvmVerify,
}

impl ArchConfig {
    /// Defaults: 16 KiB pages, mode off, `dram` / `optane-dcpmm` / `nvme-ssd` profiles,
    /// files named after `name` under the NVM default directory and `ssd_dir`.
    ///
    /// # Errors
    /// A built-in profile failed to load (a bug).
    pub fn new(
        arch: Architecture,
        dram: ByteSize,
        nvm: ByteSize,
        name: &str,
        ssd_dir: &std::path::Path,
    ) -> Result<ArchConfig> {
        Ok(ArchConfig {
            arch,
            page_size: crate::limits::PAGE_SIZE_DEFAULT_BYTES,
            dram,
            nvm,
            mode: EmulationMode::Off,
            dram_profile: DeviceProfile::preset("dram")?,
            nvm_profile: DeviceProfile::preset("optane-dcpmm")?,
            ssd_profile: DeviceProfile::preset("nvme-ssd")?,
            nvm_path: NvmConfig::default_path(name),
            ssd_path: ssd_dir.join(format!("{name}.db")),
            open_existing: false,
            direct_io: DirectIo::Auto,
            policy: None,
            admission_set_pages: None,
            policy_seed: crate::limits::POLICY_SEED_DEFAULT,
            nvcache: crate::policy::NvcacheConfig::default(),
            techniques: None,
            debug_lines: false,
            wear_counters: false,
            cpu_cache_model: ByteSize(crate::page::CpuCacheSize::default().resolve(nvm.bytes())),
            prefetch_lines: 0,
            double_write: arch.default_double_write(),
            nvm_double_write_slots: crate::limits::DOUBLE_WRITE_SLOTS,
            nvm_verify: NvmVerify::Cheap,
        })
    }

    /// The files the engine may create: the NVM pool, the SSD page file and its
    /// double-write areas, on SSD and in NVM (for callers that remove them afterwards).
    pub fn files(&self) -> Vec<PathBuf> {
        vec![
            self.nvm_path.clone(),
            self.ssd_path.clone(),
            crate::device::double_write::path_for(&self.ssd_path),
            self.nvm_double_write_path(),
        ]
    }

    /// The NVM double-write area: beside the NVM pool, `<nvm path>.dwa`.
    pub fn nvm_double_write_path(&self) -> PathBuf {
        let mut name = self.nvm_path.as_os_str().to_owned();
        name.push(".dwa");
        PathBuf::from(name)
    }

    /// The DRAM tier: page-sized frames, this configuration's profile and mode.
    pub fn dram_config(&self) -> DramConfig {
        let mut dram = DramConfig::new(self.dram);
        dram.frame_bytes = self.page_size;
        dram.profile = self.dram_profile.clone();
        dram.mode = self.mode;
        dram
    }

    /// The buffer manager this architecture runs on: tiers, profiles, policy and
    /// techniques as [`Engine::open`] opens them (the database layer, `db`, which builds
    /// on this module, opens the same).
    ///
    /// # Errors
    /// `Config` for `main-memory` and `nvm-direct` (no buffer manager) and for techniques
    /// asked of an architecture without NVM.
    pub fn buffer_config(&self) -> Result<BufferConfig> {
        if !self.arch.has_buffer() {
            return Err(BufferError::Config { what: format!("{} has no buffer manager", self.arch) }.into());
        }
        let mut bc = BufferConfig::new(self.dram);
        bc.page_size = self.page_size;
        bc.dram = self.dram_config();
        bc.policy = self.policy.clone().unwrap_or_else(|| self.arch.default_policy().into());
        bc.admission_set_pages = self.admission_set_pages;
        bc.policy_seed = self.policy_seed;
        bc.cpu_cache_model_bytes = self.cpu_cache_model.bytes();
        bc.prefetch_lines = self.prefetch_lines;
        bc.nvcache = self.nvcache.clone();
        bc.techniques = self.techniques.unwrap_or(self.arch.default_techniques());
        bc.debug_lines = self.debug_lines;
        bc.double_write = self.double_write;
        bc.nvm_file_io = self.arch == Architecture::MmapRead;
        bc.nvm_verify = self.nvm_verify;
        if bc.techniques != Techniques::NONE && !self.arch.uses_nvm() {
            return Err(BufferError::Config {
                what: format!(
                    "techniques {} work between DRAM and NVM; {} has no NVM",
                    bc.techniques,
                    self.arch.name()
                ),
            }
            .into());
        }
        if self.arch.uses_nvm() {
            let mut n = NvmConfig::new(&self.nvm_path, self.nvm);
            n.profile = self.nvm_profile.clone();
            n.mode = self.mode;
            n.open_mode = OpenMode::OpenOrCreate;
            n.wear_counters = self.wear_counters;
            bc.nvm = Some(n);
            bc.reopen_nvm_only = self.open_existing && !self.arch.uses_ssd();
        }
        if self.arch.uses_ssd() {
            let mut s = SsdConfig::new(&self.ssd_path);
            s.page_size = self.page_size;
            s.profile = self.ssd_profile.clone();
            s.mode = self.mode;
            s.direct_io = self.direct_io;
            // The NVM double-write area is on the NVM device: its profile and mode.
            s.nvm_double_write.path = self.nvm_double_write_path();
            s.nvm_double_write.profile = self.nvm_profile.clone();
            s.nvm_double_write.mode = self.mode;
            s.nvm_double_write_slots = self.nvm_double_write_slots;
            bc.ssd = Some(s);
            bc.ssd_open_mode = if self.open_existing { OpenMode::Open } else { OpenMode::Create };
        }
        Ok(bc)
    }
}

/// An open architecture.
pub enum Engine {
    /// `main-memory`: pages in DRAM only.
    Memory(Box<MemorySource>),
    /// Every architecture with a buffer manager.
    Buffer(Box<BufferManager>),
    /// `nvm-direct`: pages in place in NVM.
    Direct(Box<NvmDirect>),
}

/// Code generic over the page source, run by [`Engine::visit`].
pub trait SourceVisitor {
    /// What the visit returns.
    type Output;
    /// Runs on the engine's page source, monomorphised for its concrete type.
    fn visit<S: PageSource>(self, source: &S) -> Self::Output;
}

impl Engine {
    /// Opens the architecture with fresh files, or with [`ArchConfig::open_existing`]
    /// the database already in them.
    ///
    /// # Errors
    /// Configuration and device errors; for a new database an existing SSD file
    /// (`AlreadyExists`); for `open_existing` `main-memory` (`Config`), a missing SSD
    /// file or NVM pool, or an NVM file of another size (`SizeMismatch`).
    pub fn open(cfg: &ArchConfig) -> Result<Engine> {
        if cfg.open_existing && !cfg.arch.reopens() {
            return Err(BufferError::Config {
                what: format!("{} cannot reopen a database: it keeps nothing beyond DRAM", cfg.arch),
            }
            .into());
        }
        if cfg.arch == Architecture::NvmDirect {
            if cfg.techniques.is_some_and(|t| t != Techniques::NONE) || cfg.policy.is_some() {
                return Err(BufferError::Config {
                    what: "nvm-direct has no buffer manager: no policy or techniques apply".into(),
                }
                .into());
            }
            let mut n = NvmConfig::new(&cfg.nvm_path, cfg.nvm);
            n.profile = cfg.nvm_profile.clone();
            n.mode = cfg.mode;
            // The region is the database: reopened, a missing one is not made afresh.
            n.open_mode = if cfg.open_existing { OpenMode::Open } else { OpenMode::OpenOrCreate };
            n.wear_counters = cfg.wear_counters;
            let mut dc = DirectConfig::new(n, cfg.page_size);
            dc.reuse = cfg.open_existing;
            dc.cpu_cache_bytes = cfg.cpu_cache_model.bytes();
            dc.nvm_verify = cfg.nvm_verify;
            let direct = NvmDirect::open(&dc)?;
            // No log, so no redo: a page that fails its check is an error at once.
            direct.end_redo();
            return Ok(Engine::Direct(Box::new(direct)));
        }
        if cfg.arch == Architecture::MainMemory {
            return Ok(Engine::Memory(Box::new(MemorySource::new(&cfg.dram_config())?)));
        }
        let bc = cfg.buffer_config()?;
        Ok(Engine::Buffer(Box::new(BufferManager::open(&bc)?)))
    }

    /// Checkpoints and closes: every page a buffer manager holds is written to its
    /// lowest tier, so that [`ArchConfig::open_existing`] finds it (`main-memory` keeps
    /// nothing and just drops its pages).
    ///
    /// # Errors
    /// Device errors of the checkpoint.
    pub fn close(self) -> Result<()> {
        match self {
            Engine::Memory(_) | Engine::Direct(_) => Ok(()),
            Engine::Buffer(b) => Ok(b.close()?),
        }
    }

    /// What reopening found in the NVM pool: `None` for a new database and for
    /// architectures without NVM.
    pub fn restart_info(&self) -> Option<RestartInfo> {
        match self {
            Engine::Memory(_) => None,
            Engine::Buffer(b) => b.restart_info(),
            Engine::Direct(d) => d.restart_info().map(|r| {
                let secs = r.map_scan_ms / 1e3;
                let bytes = r.pages_in_use as f64 * d.page_size() as f64;
                RestartInfo {
                    nvm_frames: d.capacity_pages() as usize,
                    pages_reused: r.pages_in_use as usize,
                    frames_cleared: Vec::new(),
                    log_needed_from: None,
                    frames_discarded: 0,
                    page_lsn_max: None,
                    scan_secs: secs,
                    frames_gb_per_sec: if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
                    formatted_because: None,
                }
            }),
        }
    }

    /// The NVM region, for its wear counters and device statistics (`None` without NVM).
    pub fn nvm_region(&self) -> Option<&crate::device::NvmRegion> {
        match self {
            Engine::Memory(_) => None,
            Engine::Buffer(b) => b.nvm().map(crate::buffer::nvm_pool::NvmPool::region),
            Engine::Direct(d) => Some(d.pages().nvm()),
        }
    }

    /// Where pages start in the NVM region: the bytes below hold metadata (pool and frame
    /// headers, or `nvm-direct`'s header and allocation map). `None` without NVM.
    pub fn nvm_data_offset(&self) -> Option<u64> {
        match self {
            Engine::Memory(_) => None,
            Engine::Buffer(b) => b.nvm().map(crate::buffer::nvm_pool::NvmPool::frames_offset),
            Engine::Direct(d) => Some(d.pages().data_offset()),
        }
    }

    /// What opening the SSD page file restored from its double-write area (`None`: no
    /// SSD, or no double-write file was there).
    pub fn torn_pages(&self) -> Option<TornPageRecovery> {
        match self {
            Engine::Memory(_) | Engine::Direct(_) => None,
            Engine::Buffer(b) => b.torn_pages().cloned(),
        }
    }

    /// Runs `v` over the concrete page source.
    pub fn visit<V: SourceVisitor>(&self, v: V) -> V::Output {
        match self {
            Engine::Memory(m) => v.visit(&**m),
            Engine::Buffer(b) => v.visit(&**b),
            Engine::Direct(d) => v.visit(&**d),
        }
    }

    /// Bytes per page.
    pub fn page_size(&self) -> usize {
        match self {
            Engine::Memory(m) => m.page_size(),
            Engine::Buffer(b) => b.page_size(),
            Engine::Direct(d) => d.page_size(),
        }
    }

    /// Pages in use now.
    pub fn pages_in_use(&self) -> u64 {
        match self {
            Engine::Memory(m) => m.pages_used(),
            Engine::Buffer(b) => b.pages_in_use(),
            Engine::Direct(d) => d.pages_in_use(),
        }
    }

    /// Counters of the buffer manager and devices (all zero for `main-memory`).
    pub fn stats(&self) -> TierStats {
        match self {
            Engine::Memory(_) => TierStats::default(),
            Engine::Buffer(b) => b.stats(),
            Engine::Direct(d) => d.stats(),
        }
    }

    /// Frames per tier: (DRAM, NVM); `nvm-direct` has page slots in NVM and no DRAM frames.
    pub fn frames(&self) -> (usize, usize) {
        match self {
            Engine::Memory(m) => (m.capacity_pages() as usize, 0),
            Engine::Buffer(b) => {
                let i = b.info();
                (i.dram_frames, i.nvm_frames)
            }
            Engine::Direct(d) => (0, d.capacity_pages() as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;

    const RECORDS: u64 = 3000;

    fn config(arch: Architecture, dir: &std::path::Path) -> ArchConfig {
        let mut c = ArchConfig::new(arch, ByteSize(1 << 20), ByteSize(8 << 20), "arch-test", dir).unwrap();
        c.nvm_path = dir.join("arch-test.nvm");
        c.page_size = 4096;
        c
    }

    fn value(i: u64) -> [u8; 100] {
        [(i % 251) as u8; 100]
    }

    /// Creates a tree and fills it.
    struct Fill;

    impl SourceVisitor for Fill {
        type Output = Result<()>;
        fn visit<S: PageSource>(self, source: &S) -> Result<()> {
            let tree = Catalog::create_tree(source, "t")?;
            for i in 0..RECORDS {
                assert!(tree.insert(&i.to_be_bytes(), &value(i))?, "record {i} inserted twice");
            }
            Ok(())
        }
    }

    /// Opens the tree and counts the records with the value `Fill` gave them.
    struct Check;

    impl SourceVisitor for Check {
        type Output = Result<u64>;
        fn visit<S: PageSource>(self, source: &S) -> Result<u64> {
            let tree = Catalog::open_tree(source, "t")?;
            let mut good = 0;
            for i in 0..RECORDS {
                good += u64::from(tree.get(&i.to_be_bytes(), |v| v == value(i))? == Some(true));
            }
            Ok(good)
        }
    }

    #[test]
    fn a_closed_engine_reopens_with_its_data() {
        for arch in [Architecture::SsdBm, Architecture::BasicNvmBm, Architecture::ThreeTier, Architecture::NvmDirect] {
            let dir = tempfile::tempdir().unwrap();
            let mut cfg = config(arch, dir.path());
            let engine = Engine::open(&cfg).unwrap();
            match &engine {
                Engine::Buffer(bm) => {
                    // As the YCSB driver loads: evicted and remaining pages fill free NVM frames.
                    bm.set_bulk_load(true).unwrap();
                    engine.visit(Fill).unwrap();
                    bm.set_bulk_load(false).unwrap();
                }
                _ => engine.visit(Fill).unwrap(),
            }
            assert!(engine.restart_info().is_none(), "{arch}: a new database has no restart");
            engine.close().unwrap();

            cfg.open_existing = true;
            let engine = Engine::open(&cfg).unwrap();
            let info = engine.restart_info();
            match arch {
                Architecture::BasicNvmBm | Architecture::ThreeTier | Architecture::NvmDirect => {
                    let info = info.expect("reopened in its NVM region");
                    assert!(info.formatted_because.is_none() && info.pages_reused > 0, "{info:?}");
                }
                _ => assert!(info.is_none(), "{arch} has no NVM: {info:?}"),
            }
            assert_eq!(engine.visit(Check).unwrap(), RECORDS, "{arch}");
            let b = engine.stats().buffer;
            match arch {
                Architecture::ThreeTier | Architecture::BasicNvmBm => {
                    assert!(b.nvm_hits > 0 && b.ssd_reads == 0, "{b:?}")
                }
                Architecture::NvmDirect => assert!(engine.stats().nvm.unwrap().reads > 0),
                _ => assert!(b.ssd_reads > 0, "{b:?}"),
            }
        }
    }

    /// Deletes three keys in four (the tree merges and frees pages).
    struct Thin;

    impl SourceVisitor for Thin {
        type Output = Result<()>;
        fn visit<S: PageSource>(self, source: &S) -> Result<()> {
            let tree = Catalog::open_tree(source, "t")?;
            for i in (0..RECORDS).filter(|i| i % 4 != 0) {
                assert!(tree.delete(&i.to_be_bytes())?, "record {i} missing");
            }
            Ok(())
        }
    }

    #[test]
    fn basic_nvm_bm_reopens_from_its_pool_with_its_free_pages() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(Architecture::BasicNvmBm, dir.path());
        let engine = Engine::open(&cfg).unwrap();
        engine.visit(Fill).unwrap();
        engine.visit(Thin).unwrap();
        let in_use = engine.pages_in_use();
        engine.close().unwrap();
        cfg.open_existing = true;
        let engine = Engine::open(&cfg).unwrap();
        assert_eq!(engine.pages_in_use(), in_use, "freed pages are free again, the others in use");
        assert_eq!(engine.visit(Check).unwrap(), RECORDS.div_ceil(4));
        let Engine::Buffer(bm) = &engine else { panic!("a buffer manager") };
        bm.check_invariants();
    }

    #[test]
    fn main_memory_does_not_reopen_and_reopening_needs_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(Architecture::MainMemory, dir.path());
        cfg.open_existing = true;
        let e = Engine::open(&cfg).err().expect("no database to reopen").to_string();
        assert!(e.contains("cannot reopen"), "{e}");
        // basic-nvm-bm needs a pool that holds a database.
        let mut cfg = config(Architecture::BasicNvmBm, dir.path());
        cfg.open_existing = true;
        let e = Engine::open(&cfg).err().expect("no database to reopen").to_string();
        assert!(e.contains("cannot reopen") || e.contains("no page"), "{e}");
        // An SSD architecture needs the file.
        let mut cfg = config(Architecture::SsdBm, dir.path());
        cfg.open_existing = true;
        assert!(Engine::open(&cfg).is_err(), "reopened a database that does not exist");
        assert!(!cfg.ssd_path.exists(), "a failed reopen created {}", cfg.ssd_path.display());
    }
}
