//! The NVM region: a file mapped into memory, accessed in cache lines, made durable
//! with cache-line flushes.
//!
//! Without persistent memory the file lives on /dev/shm (RAM) and the region runs at
//! DRAM speed unless a profile is emulated; on a DAX file system the mapping is
//! `MAP_SYNC` and a flushed line is durable. On a non-DAX disk file a persist also
//! `msync`s the touched OS pages (policy [`MsyncPolicy`]).
//!
//! Access: reads take `&self`; writes take `&mut self`, or `&self` through the
//! `unsafe` `*_shared` variants whose callers guarantee nobody else touches the same
//! bytes at the same time (the buffer manager does so with frame latches). Persists
//! take `&self`: a flush never races in the Rust sense.
//!
//! Invariant: a byte written and then covered by a completed `persist` is durable to
//! the extent the medium is (DAX: power loss; msync: OS crash; tmpfs: process crash).

#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::mapping::Mapping;
use super::persist::{self, FlushInstruction};
use super::profile::DeviceProfile;
use super::{DeviceCore, DeviceError, EmulationMode, OpKind, OpenMode, Tier, check_aligned, check_range, numa};
use crate::limits::{CACHE_LINE_BYTES, NVM_REGION_BYTES_MAX, OS_PAGE_BYTES};
use crate::size::ByteSize;

const DEVICE: &str = "nvm";
const LINE: u64 = CACHE_LINE_BYTES as u64;

/// When a persist also calls `msync`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MsyncPolicy {
    /// When the mapping is not DAX and the file is not in RAM (tmpfs).
    #[default]
    Auto,
    /// On every persist, even where the mapping is DAX or the file in RAM.
    Always,
    /// Never: a persist only flushes cache lines (the page cache may lose them on an
    /// OS crash when the file system is not DAX).
    Never,
}

/// How the NVM region is opened.
#[derive(Clone, Debug, PartialEq)]
pub struct NvmConfig {
    /// The backing file; [`NvmConfig::default_path`] puts it in /dev/shm.
    pub path: PathBuf,
    /// Bytes in the region: a multiple of the OS page size.
    pub size: ByteSize,
    /// Whether to create the file, open an existing one, or either.
    pub open_mode: OpenMode,
    /// The costs to charge: an NVM or DRAM profile (memory tiers take either).
    pub profile: DeviceProfile,
    /// How the profile is applied.
    pub mode: EmulationMode,
    /// The flush instruction; `None` picks the best the CPU has.
    pub flush: Option<FlushInstruction>,
    /// When a persist also calls `msync`.
    pub msync: MsyncPolicy,
    /// Count writes per cache line (wear); costs 8 bytes per line of the region.
    pub wear_counters: bool,
    /// Bind the region's memory to this NUMA node (e.g. a CXL memory node).
    pub numa_node: Option<u32>,
}

impl NvmConfig {
    /// A region of `size` at `path`: open or create, `optane-dcpmm` profile, mode off,
    /// best flush instruction, msync auto, no wear counters, no NUMA binding.
    pub fn new(path: impl Into<PathBuf>, size: ByteSize) -> NvmConfig {
        NvmConfig {
            path: path.into(),
            size,
            open_mode: OpenMode::OpenOrCreate,
            profile: DeviceProfile::preset("optane-dcpmm").expect("built-in optane preset is valid"),
            mode: EmulationMode::Off,
            flush: None,
            msync: MsyncPolicy::Auto,
            wear_counters: false,
            numa_node: None,
        }
    }

    /// The default location: a file under /dev/shm named after `name`.
    pub fn default_path(name: &str) -> PathBuf {
        Path::new("/dev/shm").join(format!("{name}.nvm"))
    }
}

/// What the region ended up with, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct NvmInfo {
    /// The backing file.
    pub path: PathBuf,
    /// Bytes in the region (and in the file).
    pub size_bytes: u64,
    /// The file system type of the backing file ("tmpfs", "ext4", ...).
    pub file_system: String,
    /// The kernel granted MAP_SYNC: the file is on a DAX file system.
    pub map_sync: bool,
    /// The flush instruction persists use.
    pub flush: FlushInstruction,
    /// Whether a persist also `msync`s, as [`MsyncPolicy`] decided.
    pub msync_on_persist: bool,
    /// True if this open created the file; false if it existed.
    pub created: bool,
    /// The NUMA node the region is bound to; `None` when not bound.
    pub numa_node: Option<u32>,
    /// Whether per-line write counts are kept.
    pub wear_counters: bool,
}

/// Distribution of per-line write counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WearSummary {
    /// Cache lines in the region.
    pub lines: u64,
    /// Lines written at least once.
    pub lines_written: u64,
    /// Line writes counted over all lines (a write covering k lines counts k).
    pub writes_total: u64,
    /// The most writes counted on any one line.
    pub writes_max: u64,
    /// `log2_buckets[0]`: lines never written; `log2_buckets[i]` for i >= 1: lines written
    /// more than 2^(i-2) and at most 2^(i-1) times (1, 2, 3-4, 5-8, ...).
    pub log2_buckets: Vec<u64>,
}

/// A mapped NVM file.
pub struct NvmRegion {
    map: Mapping,
    info: NvmInfo,
    flush: FlushInstruction,
    msync: bool,
    wear: Option<Box<[AtomicU64]>>,
    core: DeviceCore,
    _file: File,
}

impl NvmRegion {
    /// Opens (or creates) and maps the region.
    ///
    /// # Errors
    /// `Config` for a bad size or profile; `Unsupported` for a flush instruction the
    /// CPU lacks; `AlreadyExists`, `Create`, `Io`, `Full` for the file; `SizeMismatch`
    /// if an existing file has another size (nothing is changed); `Numa` if binding fails.
    pub fn open(cfg: &NvmConfig) -> Result<NvmRegion, DeviceError> {
        // 1. Validate the configuration before touching the file system.
        let config = |what: String| DeviceError::Config { device: DEVICE, what };
        let size = cfg.size.bytes();
        if size > NVM_REGION_BYTES_MAX {
            return Err(config(format!("size {} is above the limit of {}", cfg.size, ByteSize(NVM_REGION_BYTES_MAX))));
        }
        if !size.is_multiple_of(OS_PAGE_BYTES as u64) {
            return Err(config(format!("size {} is not a multiple of {OS_PAGE_BYTES} bytes", cfg.size)));
        }
        let len = usize::try_from(size).map_err(|_| config(format!("size {} does not fit in memory", cfg.size)))?;
        let core = DeviceCore::new(Tier::Nvm, cfg.profile.clone(), cfg.mode).map_err(|e| config(e.to_string()))?;
        let flush = cfg.flush.unwrap_or_else(persist::best);
        if !flush.supported() {
            return Err(DeviceError::Unsupported {
                what: format!("flush instruction {}", flush.name()),
                why: "this CPU does not report it in CPUID".into(),
            });
        }

        // 2. Open or create the file; an existing file must already have the size.
        let (file, created) = open_file(&cfg.path, cfg.open_mode, size)?;

        // 3. Map it, MAP_SYNC where the file system is DAX.
        let (map, map_sync) = Mapping::file(&file, len, true).map_err(|source| DeviceError::Io {
            op: "mmap",
            path: cfg.path.clone(),
            source,
        })?;
        let file_system = super::fs_type(&cfg.path);
        let msync = match cfg.msync {
            MsyncPolicy::Always => true,
            MsyncPolicy::Never => false,
            MsyncPolicy::Auto => !map_sync && file_system != "tmpfs",
        };

        // 4. Bind to a NUMA node before the first touch places pages elsewhere.
        if let Some(node) = cfg.numa_node {
            numa::bind(map.as_ptr(), len, node)?;
        }

        let wear = cfg.wear_counters.then(|| (0..size / LINE).map(|_| AtomicU64::new(0)).collect());
        let info = NvmInfo {
            path: cfg.path.clone(),
            size_bytes: size,
            file_system,
            map_sync,
            flush,
            msync_on_persist: msync,
            created,
            numa_node: cfg.numa_node,
            wear_counters: cfg.wear_counters,
        };
        Ok(NvmRegion { map, info, flush, msync, wear, core, _file: file })
    }

    /// Bytes in the region, a multiple of the OS page size.
    pub fn size_bytes(&self) -> u64 {
        self.info.size_bytes
    }

    /// What the region ended up with (file system, DAX, flush, msync, NUMA), for reports.
    pub fn info(&self) -> &NvmInfo {
        &self.info
    }

    /// The region's tier, profile, emulator and counters.
    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// Reads whole cache lines starting at line-aligned `offset` into `dst`
    /// (`dst.len()` a multiple of 64): one device operation.
    ///
    /// # Errors
    /// `Misaligned`, `OutOfRange`.
    #[inline]
    pub fn read_lines(&self, offset: u64, dst: &mut [u8]) -> Result<(), DeviceError> {
        check_aligned(DEVICE, "offset", offset, LINE)?;
        check_aligned(DEVICE, "length", dst.len() as u64, LINE)?;
        self.copy_out(offset, dst)
    }

    /// Writes whole cache lines at line-aligned `offset` (not yet durable: see
    /// [`persist`](Self::persist)).
    ///
    /// # Errors
    /// `Misaligned`, `OutOfRange`.
    #[inline]
    pub fn write_lines(&mut self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        // SAFETY: `&mut self` excludes all other access.
        unsafe { self.write_lines_shared(offset, src) }
    }

    /// [`write_lines`](Self::write_lines) through a shared reference.
    ///
    /// # Safety
    /// No other thread reads or writes `[offset, offset + src.len())` during the call.
    ///
    /// # Errors
    /// `Misaligned`, `OutOfRange`.
    #[inline]
    pub unsafe fn write_lines_shared(&self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        check_aligned(DEVICE, "offset", offset, LINE)?;
        check_aligned(DEVICE, "length", src.len() as u64, LINE)?;
        // SAFETY: passed on from this function's contract.
        unsafe { self.copy_in_shared(offset, src) }
    }

    /// Copies any byte range out (e.g. a whole page into a DRAM frame): one operation.
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub fn copy_out(&self, offset: u64, dst: &mut [u8]) -> Result<(), DeviceError> {
        let len = dst.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(OpKind::Read, offset, len, || {
            // SAFETY: in range; writers hold `&mut self` or promised exclusivity.
            unsafe { self.map.copy_out(offset as usize, dst) };
            Ok(())
        })
    }

    /// Copies a range out with `pread(2)` on the region's file instead of from the
    /// mapping: the file-I/O path of an engine that does not map its NVM (the
    /// PostgreSQL study's unmodified baseline: a system call and the kernel's copy).
    /// One operation, charged as [`copy_out`](Self::copy_out).
    ///
    /// # Errors
    /// `OutOfRange`; `Io` if the read fails or comes back short.
    pub fn pread_out(&self, offset: u64, dst: &mut [u8]) -> Result<(), DeviceError> {
        use std::os::unix::fs::FileExt;
        let len = dst.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(OpKind::Read, offset, len, || {
            self._file.read_exact_at(dst, offset).map_err(|source| DeviceError::Io {
                op: "pread",
                path: self.info.path.clone(),
                source,
            })
        })
    }

    /// Writes a range with `pwrite(2)` on the region's file (see
    /// [`pread_out`](Self::pread_out)); the caller then persists it through the
    /// mapping, which shares the file's pages.
    ///
    /// # Safety
    /// As [`copy_in_shared`](Self::copy_in_shared): no other thread reads or writes the
    /// range during the call.
    ///
    /// # Errors
    /// `OutOfRange`; `Io` if the write fails.
    pub unsafe fn pwrite_in_shared(&self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        use std::os::unix::fs::FileExt;
        let len = src.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(OpKind::Write, offset, len, || {
            self._file.write_all_at(src, offset).map_err(|source| DeviceError::Io {
                op: "pwrite",
                path: self.info.path.clone(),
                source,
            })?;
            self.count_wear(offset, len);
            Ok(())
        })
    }

    /// Counts and emulates a read of `[offset, offset + len)` that the caller makes with
    /// direct loads from [`base_ptr`](Self::base_ptr) rather than a copy (the
    /// `nvm-direct` architecture reads pages in place): one device operation, charged
    /// as [`copy_out`](Self::copy_out) would be.
    #[inline]
    pub fn charge_read(&self, offset: u64, len: u64) {
        debug_assert!(offset + len <= self.size_bytes(), "charge_read {offset}+{len} past the region");
        let _ = self.core.run(OpKind::Read, offset, len, || Ok::<(), DeviceError>(()));
    }

    /// The first byte of the mapping, for in-place access by the frame module (which
    /// latches what it reads and writes). Writes through it bypass wear counting and
    /// emulation: in-place writers use [`write_lines_shared`](Self::write_lines_shared).
    #[inline]
    pub fn base_ptr(&self) -> *mut u8 {
        self.map.as_ptr()
    }

    /// Copies any byte range in (e.g. a whole page from a DRAM frame): one operation.
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub fn copy_in(&mut self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        // SAFETY: `&mut self` excludes all other access.
        unsafe { self.copy_in_shared(offset, src) }
    }

    /// [`copy_in`](Self::copy_in) through a shared reference.
    ///
    /// # Safety
    /// No other thread reads or writes `[offset, offset + src.len())` during the call.
    ///
    /// # Errors
    /// `OutOfRange`.
    #[inline]
    pub unsafe fn copy_in_shared(&self, offset: u64, src: &[u8]) -> Result<(), DeviceError> {
        let len = src.len() as u64;
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(OpKind::Write, offset, len, || {
            // SAFETY: in range; exclusive per this function's contract.
            unsafe { self.map.copy_in(offset as usize, src) };
            self.count_wear(offset, len);
            Ok::<(), DeviceError>(())
        })
    }

    /// Makes `[offset, offset + len)` durable: flush every line, fence, and `msync`
    /// where the mapping is not DAX and the policy asks for it.
    ///
    /// # Errors
    /// `OutOfRange`; `Io` if `msync` fails.
    #[inline]
    pub fn persist(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(DEVICE, offset, len, self.size_bytes())?;
        self.core.run(OpKind::Persist, offset, len, || {
            // The pointer stays inside the mapping: checked above.
            let addr = self.map.as_ptr().wrapping_add(offset as usize);
            persist::flush_range(self.flush, addr, len as usize);
            persist::fence();
            if self.msync {
                self.map.msync(offset as usize, len as usize).map_err(|source| DeviceError::Io {
                    op: "msync",
                    path: self.info.path.clone(),
                    source,
                })?;
            }
            Ok(())
        })
    }

    /// Persists the whole region.
    ///
    /// # Errors
    /// As [`persist`](Self::persist).
    pub fn persist_all(&self) -> Result<(), DeviceError> {
        self.persist(0, self.size_bytes())
    }

    #[inline]
    fn count_wear(&self, offset: u64, len: u64) {
        if let Some(wear) = &self.wear
            && len > 0
        {
            for line in offset / LINE..=(offset + len - 1) / LINE {
                wear[line as usize].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Writes counted on the line at `offset`; `None` when wear counting is off.
    pub fn line_writes(&self, offset: u64) -> Option<u64> {
        let wear = self.wear.as_ref()?;
        wear.get((offset / LINE) as usize).map(|c| c.load(Ordering::Relaxed))
    }

    /// Sets every line's write count to zero (to count one phase of a run); no-op
    /// when wear counting is off. Writes racing with it may or may not be counted.
    pub fn reset_wear(&self) {
        if let Some(wear) = &self.wear {
            for c in wear.iter() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Every line's write count, in region order; `None` when wear counting is off.
    pub fn wear_counts(&self) -> Option<Vec<u64>> {
        Some(self.wear.as_ref()?.iter().map(|c| c.load(Ordering::Relaxed)).collect())
    }

    /// The distribution of per-line writes; `None` when wear counting is off.
    pub fn wear_summary(&self) -> Option<WearSummary> {
        let wear = self.wear.as_ref()?;
        let mut s = WearSummary { lines: wear.len() as u64, log2_buckets: vec![0; 65], ..Default::default() };
        for c in wear.iter() {
            let n = c.load(Ordering::Relaxed);
            s.writes_total += n;
            s.writes_max = s.writes_max.max(n);
            if n > 0 {
                s.lines_written += 1;
            }
            let bucket = if n == 0 { 0 } else { 64 - (n - 1).leading_zeros() as usize + 1 };
            s.log2_buckets[bucket.min(64)] += 1;
        }
        while s.log2_buckets.len() > 1 && s.log2_buckets.last() == Some(&0) {
            s.log2_buckets.pop();
        }
        Some(s)
    }

    /// The NUMA node holding the (touched) OS page at `offset`.
    ///
    /// # Errors
    /// `OutOfRange`; `Io` if the kernel cannot tell.
    pub fn numa_node_of(&self, offset: u64) -> Result<u32, DeviceError> {
        check_range(DEVICE, offset, 1, self.size_bytes())?;
        numa::node_of(self.map.as_ptr().wrapping_add(offset as usize)).map_err(|source| DeviceError::Io {
            op: "get_mempolicy",
            path: self.info.path.clone(),
            source,
        })
    }
}

/// Opens or creates the backing file per `mode`; a created file is allocated in full so
/// that a full device shows here and not as SIGBUS on a later store.
fn open_file(path: &Path, mode: OpenMode, size: u64) -> Result<(File, bool), DeviceError> {
    let existing = || OpenOptions::new().read(true).write(true).open(path);
    let (file, created) = match mode {
        OpenMode::Open => (existing().map_err(|e| DeviceError::io("open", path, 0, e))?, false),
        OpenMode::Create => (create_sized(path, size)?, true),
        OpenMode::OpenOrCreate => match existing() {
            Ok(f) => (f, false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (create_sized(path, size)?, true),
            Err(e) => return Err(DeviceError::io("open", path, 0, e)),
        },
    };
    if !created {
        let file_bytes = file.metadata().map_err(|e| DeviceError::io("stat", path, 0, e))?.len();
        if file_bytes != size {
            return Err(DeviceError::SizeMismatch { path: path.to_path_buf(), file_bytes, config_bytes: size });
        }
    }
    Ok((file, created))
}

/// Creates the file at its full size under a temporary name (`<name>.creating`), then
/// renames it into place and syncs the directory: a crash while creating leaves no
/// file of the wrong size under `path` (which every later open would refuse with
/// `SizeMismatch`), only a temporary that the next creation replaces.
fn create_sized(path: &Path, size: u64) -> Result<File, DeviceError> {
    if path.exists() {
        return Err(DeviceError::AlreadyExists { path: path.to_path_buf() });
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".creating");
    let tmp = path.with_file_name(name);
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(DeviceError::io("remove", &tmp, 0, e)),
    }
    let file = create_file(&tmp)?;
    let placed = allocate(&file, size)
        .map_err(|e| DeviceError::io("fallocate", &tmp, size, e))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| DeviceError::io("rename into place", path, 0, e)));
    if let Err(e) = placed {
        drop(file);
        // We made the file a moment ago; removing it loses nothing.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| DeviceError::io("fsync directory", dir, 0, e))?;
    }
    Ok(file)
}

fn create_file(path: &Path) -> Result<File, DeviceError> {
    OpenOptions::new().read(true).write(true).create_new(true).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            DeviceError::AlreadyExists { path: path.to_path_buf() }
        } else {
            DeviceError::Create { path: path.to_path_buf(), source: e }
        }
    })
}

/// Reserves `size` bytes for `file` (posix_fallocate), falling back to `set_len`
/// where the file system does not support allocation.
pub(crate) fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    let len = libc::off_t::try_from(size).map_err(|_| std::io::Error::other("size does not fit off_t"))?;
    // SAFETY: posix_fallocate on a valid, open descriptor; no memory is passed.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(size),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dir: &tempfile::TempDir, size: u64) -> NvmConfig {
        NvmConfig::new(dir.path().join("r.nvm"), ByteSize(size))
    }

    #[test]
    fn a_creation_cut_short_leaves_no_file_of_the_wrong_size() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let c = cfg(&dir, 64 * 1024);
        // What a kill between creating and sizing the file leaves: the temporary.
        std::fs::write(dir.path().join("r.nvm.creating"), b"").unwrap();
        let r = NvmRegion::open(&c).unwrap();
        assert!(r.info().created);
        assert_eq!(std::fs::metadata(&c.path).unwrap().len(), 64 * 1024);
        assert!(!dir.path().join("r.nvm.creating").exists());
        drop(r);
        let mut create = c.clone();
        create.open_mode = OpenMode::Create;
        assert!(matches!(NvmRegion::open(&create), Err(DeviceError::AlreadyExists { .. })));
    }

    #[test]
    fn lines_survive_unmap_and_remap() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let c = cfg(&dir, 1 << 20);
        let pattern: Vec<u8> = (0..256u32).map(|i| (i * 7 + 1) as u8).collect();
        {
            let mut r = NvmRegion::open(&c).unwrap();
            assert!(r.info().created);
            r.write_lines(4096, &pattern).unwrap();
            r.persist(4096, 256).unwrap();
            let s = r.core().stats().snapshot();
            assert_eq!((s.writes, s.write_lines, s.persists, s.persist_lines), (1, 4, 1, 4));
        }
        let r = NvmRegion::open(&c).unwrap();
        assert!(!r.info().created);
        let mut back = vec![0u8; 256];
        r.read_lines(4096, &mut back).unwrap();
        assert_eq!(back, pattern);
    }

    #[test]
    fn every_flush_instruction_persists() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        for how in [FlushInstruction::Clwb, FlushInstruction::Clflushopt, FlushInstruction::Clflush] {
            let mut c = cfg(&dir, 64 << 10);
            c.flush = Some(how);
            if !how.supported() {
                assert!(matches!(NvmRegion::open(&c), Err(DeviceError::Unsupported { .. })));
                continue;
            }
            let mut r = NvmRegion::open(&c).unwrap();
            assert_eq!(r.info().flush, how);
            r.write_lines(0, &[how as u8 + 1; 64]).unwrap();
            r.persist(0, 64).unwrap();
        }
    }

    #[test]
    fn misaligned_and_out_of_range_are_errors() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut r = NvmRegion::open(&cfg(&dir, 64 << 10)).unwrap();
        let mut buf = [0u8; 64];
        assert!(matches!(r.read_lines(32, &mut buf), Err(DeviceError::Misaligned { .. })));
        assert!(matches!(r.write_lines(0, &[0u8; 65]), Err(DeviceError::Misaligned { .. })));
        assert!(matches!(r.read_lines(64 << 10, &mut buf), Err(DeviceError::OutOfRange { .. })));
        assert!(matches!(r.persist(60 << 10, 8 << 10), Err(DeviceError::OutOfRange { .. })));
        r.copy_in(13, &[1, 2, 3]).unwrap();
        let mut three = [0u8; 3];
        r.copy_out(13, &mut three).unwrap();
        assert_eq!(three, [1, 2, 3]);
    }

    #[test]
    fn existing_file_of_another_size_is_untouched() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let c = cfg(&dir, 64 << 10);
        {
            let mut r = NvmRegion::open(&c).unwrap();
            r.write_lines(0, &[9u8; 64]).unwrap();
        }
        let bigger = cfg(&dir, 128 << 10);
        assert!(matches!(NvmRegion::open(&bigger), Err(DeviceError::SizeMismatch { .. })));
        let mut create = c.clone();
        create.open_mode = OpenMode::Create;
        assert!(matches!(NvmRegion::open(&create), Err(DeviceError::AlreadyExists { .. })));
        assert_eq!(std::fs::metadata(&c.path).unwrap().len(), 64 << 10);
        let r = NvmRegion::open(&c).unwrap();
        let mut b = [0u8; 64];
        r.read_lines(0, &mut b).unwrap();
        assert_eq!(b, [9u8; 64]);
    }

    #[test]
    fn bad_paths_and_sizes_are_errors() {
        let mut c = NvmConfig::new("/nonexistent-dir/x/r.nvm", ByteSize(1 << 20));
        let e = NvmRegion::open(&c).err().unwrap();
        assert!(matches!(e, DeviceError::Create { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent-dir/x/r.nvm"), "{e}");
        c.size = ByteSize(1000);
        assert!(matches!(NvmRegion::open(&c), Err(DeviceError::Config { .. })));
        c.size = ByteSize(NVM_REGION_BYTES_MAX * 2);
        assert!(matches!(NvmRegion::open(&c), Err(DeviceError::Config { .. })));
    }

    #[test]
    fn wear_counters_count_lines() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut c = cfg(&dir, 64 << 10);
        c.wear_counters = true;
        let mut r = NvmRegion::open(&c).unwrap();
        for _ in 0..5 {
            r.write_lines(128, &[1u8; 128]).unwrap();
        }
        r.copy_in(0, &[1u8; 1]).unwrap();
        assert_eq!(r.line_writes(128), Some(5));
        assert_eq!(r.line_writes(192), Some(5));
        assert_eq!(r.line_writes(256), Some(0));
        let w = r.wear_summary().unwrap();
        assert_eq!((w.lines_written, w.writes_total, w.writes_max), (3, 11, 5));
        assert_eq!(w.log2_buckets[0], w.lines - 3);
        assert_eq!(w.log2_buckets[1], 1); // written once
        assert_eq!(w.log2_buckets[4], 2); // 5 writes: (4, 8]
        let off = NvmRegion::open(&cfg(&tempfile::tempdir_in("/dev/shm").unwrap(), 4096)).unwrap();
        assert_eq!(off.wear_summary(), None);
    }

    #[test]
    fn numa_binding_to_node_zero() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut c = cfg(&dir, 1 << 20);
        c.numa_node = Some(0);
        let mut r = NvmRegion::open(&c).unwrap();
        for off in (0..1u64 << 20).step_by(OS_PAGE_BYTES) {
            r.write_lines(off, &[1u8; 64]).unwrap();
        }
        for off in [0u64, 4096 * 17, (1 << 20) - 4096] {
            assert_eq!(r.numa_node_of(off).unwrap(), 0);
        }
        c.numa_node = Some(999);
        c.path = dir.path().join("other.nvm");
        let e = NvmRegion::open(&c).err().unwrap();
        assert!(matches!(e, DeviceError::Numa { node: 999, .. }), "{e}");
    }
}
