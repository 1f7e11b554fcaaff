//! Storage architectures by name: the same B+-tree and driver over different page
//! sources (van Renen et al., SIGMOD 2018, §5).
//!
//! | name | tiers | page source |
//! |---|---|---|
//! | `main-memory` | DRAM | [`MemorySource`]: no buffer manager; refuses data larger than DRAM |
//! | `ssd-bm` | DRAM + SSD | [`BufferManager`], `eager` (nothing to admit to) |
//! | `basic-nvm-bm` | DRAM + NVM | [`BufferManager`], `eager`; refuses data larger than NVM |
//! | `three-tier` | DRAM + NVM + SSD | [`BufferManager`], `hymem`, cache-line-grained pages, mini pages, pointer swizzling |
//!
//! Code that runs a workload is written once, generic over [`PageSource`], and reaches
//! the concrete source through [`Engine::visit`], so `main-memory` is monomorphised
//! without any buffer-manager code in its path.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::buffer::{BufferConfig, BufferError, BufferManager, MemorySource, PageSource, Techniques, TierStats};
use crate::device::{DeviceProfile, DirectIo, DramConfig, EmulationMode, NvmConfig, OpenMode, SsdConfig};
use crate::{ByteSize, Result};

/// An architecture's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    MainMemory,
    SsdBm,
    BasicNvmBm,
    ThreeTier,
}

impl Architecture {
    pub const ALL: [Architecture; 4] =
        [Architecture::MainMemory, Architecture::SsdBm, Architecture::BasicNvmBm, Architecture::ThreeTier];

    pub fn name(self) -> &'static str {
        match self {
            Architecture::MainMemory => "main-memory",
            Architecture::SsdBm => "ssd-bm",
            Architecture::BasicNvmBm => "basic-nvm-bm",
            Architecture::ThreeTier => "three-tier",
        }
    }

    pub fn uses_nvm(self) -> bool {
        matches!(self, Architecture::BasicNvmBm | Architecture::ThreeTier)
    }

    pub fn uses_ssd(self) -> bool {
        matches!(self, Architecture::SsdBm | Architecture::ThreeTier)
    }

    /// The policy the paper's version of this architecture uses.
    pub fn default_policy(self) -> &'static str {
        match self {
            Architecture::ThreeTier => "hymem",
            _ => "eager",
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
            Architecture::BasicNvmBm => Some(nvm.bytes()),
            Architecture::SsdBm | Architecture::ThreeTier => None,
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
#[derive(Clone, Debug)]
pub struct ArchConfig {
    pub arch: Architecture,
    pub page_size: usize,
    pub dram: ByteSize,
    pub nvm: ByteSize,
    pub mode: EmulationMode,
    pub dram_profile: DeviceProfile,
    pub nvm_profile: DeviceProfile,
    pub ssd_profile: DeviceProfile,
    /// The NVM pool's file (a new one is formatted).
    pub nvm_path: PathBuf,
    /// The SSD page file (must not exist: a new database is created).
    pub ssd_path: PathBuf,
    pub direct_io: DirectIo,
    /// Overrides the architecture's default policy.
    pub policy: Option<String>,
    pub admission_set_pages: Option<usize>,
    /// Overrides the architecture's default techniques ([`Architecture::default_techniques`]).
    pub techniques: Option<Techniques>,
    /// Debug mode for cache-line-grained access (slow; for tests).
    pub debug_lines: bool,
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
            direct_io: DirectIo::Auto,
            policy: None,
            admission_set_pages: None,
            techniques: None,
            debug_lines: false,
        })
    }
}

/// An open architecture.
pub enum Engine {
    Memory(Box<MemorySource>),
    Buffer(Box<BufferManager>),
}

/// Code generic over the page source, run by [`Engine::visit`].
pub trait SourceVisitor {
    type Output;
    fn visit<S: PageSource>(self, source: &S) -> Self::Output;
}

impl Engine {
    /// Opens the architecture with fresh files.
    ///
    /// # Errors
    /// Configuration and device errors; an existing SSD file (`AlreadyExists`).
    pub fn open(cfg: &ArchConfig) -> Result<Engine> {
        let mut dram = DramConfig::new(cfg.dram);
        dram.frame_bytes = cfg.page_size;
        dram.profile = cfg.dram_profile.clone();
        dram.mode = cfg.mode;
        if cfg.arch == Architecture::MainMemory {
            return Ok(Engine::Memory(Box::new(MemorySource::new(&dram)?)));
        }
        let mut bc = BufferConfig::new(cfg.dram);
        bc.page_size = cfg.page_size;
        bc.dram = dram;
        bc.policy = cfg.policy.clone().unwrap_or_else(|| cfg.arch.default_policy().into());
        bc.admission_set_pages = cfg.admission_set_pages;
        bc.techniques = cfg.techniques.unwrap_or(cfg.arch.default_techniques());
        bc.debug_lines = cfg.debug_lines;
        if bc.techniques != Techniques::NONE && !cfg.arch.uses_nvm() {
            return Err(crate::buffer::BufferError::Config {
                what: format!("techniques {} work between DRAM and NVM; {} has no NVM", bc.techniques, cfg.arch.name()),
            }
            .into());
        }
        if cfg.arch.uses_nvm() {
            let mut n = NvmConfig::new(&cfg.nvm_path, cfg.nvm);
            n.profile = cfg.nvm_profile.clone();
            n.mode = cfg.mode;
            n.open_mode = OpenMode::OpenOrCreate;
            bc.nvm = Some(n);
        }
        if cfg.arch.uses_ssd() {
            let mut s = SsdConfig::new(&cfg.ssd_path);
            s.page_size = cfg.page_size;
            s.profile = cfg.ssd_profile.clone();
            s.mode = cfg.mode;
            s.direct_io = cfg.direct_io;
            bc.ssd = Some(s);
            bc.ssd_open_mode = OpenMode::Create;
        }
        Ok(Engine::Buffer(Box::new(BufferManager::open(&bc)?)))
    }

    /// Runs `v` over the concrete page source.
    pub fn visit<V: SourceVisitor>(&self, v: V) -> V::Output {
        match self {
            Engine::Memory(m) => v.visit(&**m),
            Engine::Buffer(b) => v.visit(&**b),
        }
    }

    pub fn page_size(&self) -> usize {
        match self {
            Engine::Memory(m) => m.page_size(),
            Engine::Buffer(b) => b.page_size(),
        }
    }

    /// Pages in use now.
    pub fn pages_in_use(&self) -> u64 {
        match self {
            Engine::Memory(m) => m.pages_used(),
            Engine::Buffer(b) => b.pages_in_use(),
        }
    }

    /// Counters of the buffer manager and devices (all zero for `main-memory`).
    pub fn stats(&self) -> TierStats {
        match self {
            Engine::Memory(_) => TierStats::default(),
            Engine::Buffer(b) => b.stats(),
        }
    }

    /// Frames per tier: (DRAM, NVM).
    pub fn frames(&self) -> (usize, usize) {
        match self {
            Engine::Memory(m) => (m.capacity_pages() as usize, 0),
            Engine::Buffer(b) => {
                let i = b.info();
                (i.dram_frames, i.nvm_frames)
            }
        }
    }
}
