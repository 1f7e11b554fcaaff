//! The SSD page file: fixed-size pages at `id x page size`, read and written with
//! `O_DIRECT` where the file system allows it, a superblock in page 0.
//!
//! `O_DIRECT` needs buffers, offsets and lengths aligned to the logical block size; we
//! align to [`IO_ALIGN_BYTES`]. Callers pass any buffer: an aligned one ([`AlignedBuf`])
//! goes straight to the device, another is bounced through an aligned copy. Where the
//! file system refuses `O_DIRECT` (or it is turned off) the file is opened buffered
//! and [`SsdInfo`] says so; on tmpfs `O_DIRECT` is accepted but served from RAM.
//!
//! Every data page is written with a seal (page id and CRC-32C, [`super::page_seal`])
//! on a copy, and checked and cleared on every read: a torn, corrupted or misplaced
//! page is a `Corrupted` error, never bytes. With [`SsdConfig::double_write`], every
//! batch of page writes first goes to the double-write area ([`super::double_write`]) —
//! a file next to the page file, or an NVM region — and opening the file restores pages
//! torn in place from there ([`SsdInfo::torn_pages`]). A page's seal also carries its
//! last-flush LSN, given by the writer ([`SsdFile::write_pages_flushed`]) and handed
//! back by [`SsdFile::read_page_flushed`].
//!
//! Failure: after a failed write or `fdatasync` the handle is poisoned, as the state of
//! the page cache and the device is then unknown; later writes and syncs return
//! `Poisoned` until the file is reopened (reads still work).
//!
//! Concurrency: reads and writes of different pages may run from many threads; growth
//! and superblock updates are serialised by one mutex. With the double-write area,
//! page writes and syncs are serialised by its lock.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use serde::Serialize;

use super::aligned::{AlignedBuf, is_io_aligned};
use super::double_write::{self, DoubleWrite, DoubleWriteMode, SlotCopy, TornPageRecovery};
use super::page_seal::{self, Sealed};
use super::profile::DeviceProfile;
use super::superblock::{FORMAT_VERSION, MAGIC, SlotError, Superblock};
use super::{DeviceCore, DeviceError, EmulationMode, NvmConfig, OpKind, Tier};
use crate::ids::PageId;
use crate::limits::{
    DOUBLE_WRITE_SLOTS, IO_ALIGN_BYTES, PAGE_SIZE_DEFAULT_BYTES, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES,
    SSD_PAGES_MAX, SSD_WRITE_BATCH_BYTES_MAX, SSD_WRITE_RUN_BYTES_MAX, SSD_WRITES_IN_FLIGHT_MAX, SUPERBLOCK_SLOT_BYTES,
    SUPERBLOCK_SLOTS,
};

const DEVICE: &str = "ssd";
const POISON_NONE: u8 = 0;
const POISON_WRITE: u8 = 1;
const POISON_SYNC: u8 = 2;
const POISON_DOUBLE_WRITE: u8 = 3;

/// Whether to use `O_DIRECT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectIo {
    /// Use it where the file system accepts it, else buffered I/O (reported).
    #[default]
    Auto,
    /// Require it: opening fails where the file system refuses it.
    On,
    /// Buffered I/O through the page cache.
    Off,
}

/// How the page file is opened.
#[derive(Clone, Debug)]
pub struct SsdConfig {
    /// The page file.
    pub path: PathBuf,
    /// Bytes per page: a power of two between the page size limits.
    pub page_size: usize,
    /// Whether to use `O_DIRECT`.
    pub direct_io: DirectIo,
    /// The costs to charge: an SSD profile.
    pub profile: DeviceProfile,
    /// How the profile is applied.
    pub mode: EmulationMode,
    /// Faults to inject (tests).
    pub faults: Option<std::sync::Arc<super::FaultPlan>>,
    /// Protect page writes with a double-write area: the file `<path>.dwa` (`Ssd`) or
    /// the NVM region [`nvm_double_write`](Self::nvm_double_write) (`Nvm`). Off by
    /// default for the bare device; the buffer manager sets it from
    /// `BufferConfig::double_write`. Opening restores pages from every area it finds
    /// (the file, the NVM region) whatever this says; the areas not used are then
    /// emptied and removed.
    pub double_write: DoubleWriteMode,
    /// Where the NVM double-write area lives and its device profile and mode (its size
    /// follows from the page size and [`nvm_double_write_slots`](Self::nvm_double_write_slots)).
    /// Default: `<path>.dwa.nvm` next to the page file; architectures put it on the
    /// NVM device beside their pool.
    pub nvm_double_write: NvmConfig,
    /// Slots of the NVM double-write area (default [`DOUBLE_WRITE_SLOTS`]: 2 MiB at
    /// 16 KiB pages, the paper's DWB).
    pub nvm_double_write_slots: usize,
}

impl SsdConfig {
    /// 16 KiB pages, `O_DIRECT` where possible, `nvme-ssd` profile, mode off.
    pub fn new(path: impl Into<PathBuf>) -> SsdConfig {
        let path: PathBuf = path.into();
        SsdConfig {
            path: path.clone(),
            page_size: PAGE_SIZE_DEFAULT_BYTES,
            direct_io: DirectIo::Auto,
            profile: DeviceProfile::preset("nvme-ssd").expect("built-in nvme preset is valid"),
            mode: EmulationMode::Off,
            faults: None,
            double_write: DoubleWriteMode::Off,
            nvm_double_write: NvmConfig::new(
                double_write::nvm_path_for(&path),
                crate::size::ByteSize(double_write::nvm_area_bytes(DOUBLE_WRITE_SLOTS, PAGE_SIZE_DEFAULT_BYTES)),
            ),
            nvm_double_write_slots: DOUBLE_WRITE_SLOTS,
        }
    }
}

/// What the page file ended up with, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct SsdInfo {
    /// The page file.
    pub path: PathBuf,
    /// Bytes per page.
    pub page_size: usize,
    /// The page file's file system type ("tmpfs", "ext4", ...).
    pub file_system: String,
    /// Whether `O_DIRECT` is in effect.
    pub direct_io: bool,
    /// Why not, or what it means here (e.g. tmpfs serves it from RAM).
    pub direct_io_note: String,
    /// Set when one superblock slot was unreadable and the other was used.
    pub superblock_note: Option<String>,
    /// Where page writes are made durable before they go in place.
    pub double_write_mode: DoubleWriteMode,
    /// The double-write area (file or NVM region) protecting page writes; `None` when
    /// that is off.
    pub double_write: Option<PathBuf>,
    /// What opening did with the double-write areas it found (`None`: there was none;
    /// with both a file and an NVM area, one report of both).
    pub torn_pages: Option<TornPageRecovery>,
    /// Opening an existing page file with the double-write area on found none it could
    /// use (missing, zeroed, another database's): the copies of page writes the last
    /// run may not have finished in place are gone, and why. A torn page then fails its
    /// seal when read; a page whose in-place write was lost is intact but older than
    /// what the log's flush records say, so recovery must not rely on them
    /// (`docs/wal.md`, "Creation").
    pub double_write_lost: Option<String>,
}

struct Meta {
    sb: Superblock,
    /// The encoded slots as they are on disk (slot i at i x SUPERBLOCK_SLOT_BYTES).
    slots: [u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS],
}

/// The page file.
pub struct SsdFile {
    file: File,
    info: SsdInfo,
    page_size: usize,
    page_count: AtomicU64,
    meta: Mutex<Meta>,
    poisoned: AtomicU8,
    core: DeviceCore,
    faults: Option<std::sync::Arc<super::FaultPlan>>,
    /// The double-write area, when page writes are protected.
    dwa: Option<DoubleWrite>,
    /// Rings for batches of writes in flight together (mode `off`, no fault plan).
    rings: super::uring::Rings,
}

impl SsdFile {
    /// Creates a new page file holding only its superblock, and with
    /// [`SsdConfig::double_write`] its double-write file (replacing a file of that name:
    /// it can only belong to a page file that no longer exists).
    ///
    /// # Errors
    /// `Config` for a bad page size or profile; `AlreadyExists` if the file exists
    /// (it is left untouched); `Create` if it cannot be created; `Unsupported` if
    /// `O_DIRECT` is required but refused; `Io`/`Full` for the first write.
    pub fn create(cfg: &SsdConfig) -> Result<SsdFile, DeviceError> {
        let core = validate(cfg)?;
        OpenOptions::new().write(true).create_new(true).open(&cfg.path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                DeviceError::AlreadyExists { path: cfg.path.clone() }
            } else {
                DeviceError::Create { path: cfg.path.clone(), source: e }
            }
        })?;
        let result = (|| {
            let (file, info) = open_file(cfg)?;
            let now =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let sb = Superblock::new(cfg.page_size as u32, random_id(), now);
            let db_id = sb.db_id;
            let mut slots = [0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
            for slot in slots.chunks_exact_mut(SUPERBLOCK_SLOT_BYTES) {
                slot.copy_from_slice(&sb.encode());
            }
            super::nvm::allocate(&file, cfg.page_size as u64)
                .map_err(|e| DeviceError::io("fallocate", &cfg.path, cfg.page_size as u64, e))?;
            let mut ssd = SsdFile {
                file,
                info,
                page_size: cfg.page_size,
                page_count: AtomicU64::new(1),
                meta: Mutex::new(Meta { sb, slots }),
                poisoned: AtomicU8::new(POISON_NONE),
                core,
                faults: cfg.faults.clone(),
                dwa: None,
                rings: super::uring::Rings::new(),
            };
            {
                let meta = ssd.meta.lock().expect("superblock lock");
                ssd.write_superblock(&meta)?;
            }
            ssd.create_double_write(cfg, db_id)?;
            Ok(ssd)
        })();
        if result.is_err() {
            // The file is ours, made a moment ago and never acknowledged: remove it
            // (and its double-write file, which belongs to it).
            let faults = cfg.faults.as_deref();
            super::fault::remove_file(faults, &cfg.path);
            match cfg.double_write {
                DoubleWriteMode::Off => {}
                DoubleWriteMode::Ssd => super::fault::remove_file(faults, &double_write::path_for(&cfg.path)),
                DoubleWriteMode::Nvm => super::fault::remove_file(faults, &cfg.nvm_double_write.path),
            }
        }
        result
    }

    /// Opens an existing page file and checks its superblock. If a double-write file
    /// is next to it, the pages it holds copies of are checked in place and restored
    /// where they are torn or older ([`SsdInfo::torn_pages`] says which); then it is
    /// reset for this run (double write on) or removed (off), or created if missing
    /// (on). Nothing else is written, and nothing at all when a check of the page file
    /// fails.
    ///
    /// # Errors
    /// `Io` if it cannot be opened; `BadMagic`, `VersionMismatch`, `PageSizeMismatch`
    /// or `Corrupted` (bad checksum, truncated file) for a file that is not what the
    /// configuration expects; `Io`/`Full` restoring pages or writing the double-write
    /// file.
    pub fn open(cfg: &SsdConfig) -> Result<SsdFile, DeviceError> {
        let core = validate(cfg)?;
        let (file, mut info) = open_file(cfg)?;
        let path = &cfg.path;
        let file_bytes = file.metadata().map_err(|e| DeviceError::io("stat", path, 0, e))?.len();
        if file_bytes < IO_ALIGN_BYTES as u64 {
            return Err(DeviceError::Corrupted {
                what: "superblock",
                location: path.display().to_string(),
                detail: format!("the file has {file_bytes} bytes, fewer than one superblock ({IO_ALIGN_BYTES})"),
            });
        }
        let mut buf = AlignedBuf::new(IO_ALIGN_BYTES);
        file.read_exact_at(&mut buf, 0).map_err(|e| DeviceError::io("read superblock of", path, 0, e))?;
        let (sb, note) = choose_slot(path, &buf)?;
        if sb.page_size as usize != cfg.page_size {
            return Err(DeviceError::PageSizeMismatch {
                path: path.clone(),
                found: sb.page_size,
                expected: cfg.page_size as u32,
            });
        }
        let needed = sb.page_count * cfg.page_size as u64;
        if file_bytes < needed {
            return Err(DeviceError::Corrupted {
                what: "page file",
                location: path.display().to_string(),
                detail: format!(
                    "the superblock counts {} pages ({needed} bytes) but the file has {file_bytes} bytes",
                    sb.page_count
                ),
            });
        }
        info.superblock_note = note;
        let mut slots = [0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
        slots.copy_from_slice(&buf[..SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS]);
        let db_id = sb.db_id;
        let mut ssd = SsdFile {
            file,
            info,
            page_size: cfg.page_size,
            page_count: AtomicU64::new(sb.page_count),
            meta: Mutex::new(Meta { sb, slots }),
            poisoned: AtomicU8::new(POISON_NONE),
            core,
            faults: cfg.faults.clone(),
            dwa: None,
            rings: super::uring::Rings::new(),
        };
        ssd.open_double_write(cfg, db_id)?;
        ssd.upgrade_format()?;
        Ok(ssd)
    }

    /// A file of an older format this build reads (3: seals without last-flush LSN) is
    /// recorded as the current format once opened: its pages written from now on carry
    /// the LSN, which older builds would misread.
    fn upgrade_format(&self) -> Result<(), DeviceError> {
        let mut meta = self.meta.lock().expect("superblock lock");
        if meta.sb.format_version >= FORMAT_VERSION {
            return Ok(());
        }
        let mut sb = meta.sb.clone();
        sb.format_version = FORMAT_VERSION;
        sb.generation += 1;
        let slot = sb.slot();
        meta.slots[slot * SUPERBLOCK_SLOT_BYTES..(slot + 1) * SUPERBLOCK_SLOT_BYTES].copy_from_slice(&sb.encode());
        meta.sb = sb;
        self.write_superblock(&meta)
    }

    /// Creates the double-write area `cfg.double_write` names, replacing what is there.
    fn create_double_write(&mut self, cfg: &SsdConfig, db_id: u64) -> Result<(), DeviceError> {
        let d = match cfg.double_write {
            DoubleWriteMode::Off => return Ok(()),
            DoubleWriteMode::Ssd => DoubleWrite::create(
                &double_write::path_for(&cfg.path),
                self.page_size,
                db_id,
                self.info.direct_io,
                dwa_core(cfg)?,
                cfg.faults.clone(),
            )?,
            DoubleWriteMode::Nvm => {
                DoubleWrite::create_nvm(&cfg.nvm_double_write, cfg.nvm_double_write_slots, self.page_size, db_id)?
            }
        };
        self.info.double_write = Some(d.path().to_path_buf());
        self.info.double_write_mode = cfg.double_write;
        self.dwa = Some(d);
        Ok(())
    }

    /// Opening, after the superblock checks: restores pages from the double-write areas
    /// it finds (the file, then the NVM region), then sets one up for this run as
    /// `cfg.double_write` says. An area not used this run is emptied durably (its
    /// period ended) before it is removed, so that a removal lost in a crash cannot
    /// bring back copies older than the pages written after it.
    fn open_double_write(&mut self, cfg: &SsdConfig, db_id: u64) -> Result<(), DeviceError> {
        let path = double_write::path_for(&cfg.path);
        let nvm_path = cfg.nvm_double_write.path.clone();
        let direct = self.info.direct_io;
        let mut found: Vec<DoubleWrite> = Vec::new();
        let mut report: Option<TornPageRecovery> = None;
        for mode in [DoubleWriteMode::Ssd, DoubleWriteMode::Nvm] {
            let p = if mode == DoubleWriteMode::Ssd { &path } else { &nvm_path };
            if !p.exists() {
                continue;
            }
            let started = std::time::Instant::now();
            let mut r = TornPageRecovery { path: p.clone(), ..TornPageRecovery::default() };
            let opened = match mode {
                DoubleWriteMode::Ssd => {
                    DoubleWrite::open(p, self.page_size, db_id, direct, dwa_core(cfg)?, cfg.faults.clone())?
                }
                _ => DoubleWrite::open_nvm(&cfg.nvm_double_write, cfg.nvm_double_write_slots, self.page_size, db_id)?,
            };
            match opened {
                Ok((d, copies)) => {
                    r.copies = copies.len();
                    self.restore(&copies, &mut r)?;
                    found.push(d);
                }
                Err(why) => r.unusable = Some(why),
            }
            r.secs = started.elapsed().as_secs_f64();
            report = Some(match report.take() {
                None => r,
                Some(mut a) => {
                    a.copies += r.copies;
                    a.restored_torn.extend(r.restored_torn);
                    a.restored_older.extend(r.restored_older);
                    a.unusable = match (a.unusable, r.unusable) {
                        (Some(x), Some(y)) => Some(format!("{x}; {}: {y}", r.path.display())),
                        (x, y) => x.or(y.map(|y| format!("{}: {y}", r.path.display()))),
                    };
                    a.secs += r.secs;
                    a
                }
            });
        }
        // No area to apply, where this run expects one (or where one was there but
        // unusable): whatever its last period held is gone.
        if found.is_empty() && (cfg.double_write.is_on() || report.as_ref().is_some_and(|r| r.unusable.is_some())) {
            self.info.double_write_lost =
                Some(match report.as_ref().and_then(|r| r.unusable.as_ref().map(|u| (r, u))) {
                    Some((r, why)) => format!("{}: {why}", r.path.display()),
                    None => {
                        let expected = if cfg.double_write == DoubleWriteMode::Nvm { &nvm_path } else { &path };
                        format!("{} is missing", expected.display())
                    }
                });
        }
        self.info.torn_pages = report;
        // The restored pages are synced: the copies are no longer needed.
        for d in found {
            d.end_period(&mut d.lock()).inspect_err(|_| self.poison(POISON_DOUBLE_WRITE))?;
            if d.mode() == cfg.double_write {
                self.info.double_write = Some(d.path().to_path_buf());
                self.info.double_write_mode = cfg.double_write;
                self.dwa = Some(d);
            }
        }
        for (mode, p) in [(DoubleWriteMode::Ssd, &path), (DoubleWriteMode::Nvm, &nvm_path)] {
            if mode != cfg.double_write && p.exists() {
                std::fs::remove_file(p).map_err(|e| DeviceError::io("remove", p, 0, e))?;
            }
        }
        if cfg.double_write.is_on() && self.dwa.is_none() {
            self.create_double_write(cfg, db_id)?;
        }
        Ok(())
    }

    /// Writes the newest copy of each page in `copies` (oldest first) in place where
    /// the page there fails its seal or differs, then syncs.
    fn restore(&self, copies: &[SlotCopy], report: &mut TornPageRecovery) -> Result<(), DeviceError> {
        let mut newest = std::collections::BTreeMap::new();
        for c in copies {
            newest.insert(c.pid, c);
        }
        let mut buf = AlignedBuf::new(self.page_size);
        for (pid, copy) in newest {
            debug_assert_eq!(page_seal::check(&copy.page, pid), Ok(Sealed::Valid), "copies are checked when read");
            if pid.0 >= self.page_count() {
                // Growth is durable before a page past the old end is written: a bug.
                return Err(DeviceError::Corrupted {
                    what: "double-write copy",
                    location: report.path.display().to_string(),
                    detail: format!("a copy of {pid}, past the page file's {} pages", self.page_count()),
                });
            }
            self.read_raw(pid, &mut buf)?;
            match page_seal::check(&buf, pid) {
                Err(_) => report.restored_torn.push(pid),
                Ok(_) if buf[..] != copy.page[..] => report.restored_older.push(pid),
                Ok(_) => continue,
            }
            self.write_raw(pid, &copy.page)?;
        }
        if report.pages_restored() > 0 {
            self.sync_file()?;
        }
        Ok(())
    }

    /// Reads the superblock of the page file at `path` without opening it for use
    /// (read-only; nothing is written). Returns it with a note when one slot was
    /// unreadable and the other was used.
    ///
    /// # Errors
    /// `Io` if it cannot be read; `BadMagic`, `VersionMismatch`, `Corrupted`.
    pub fn read_superblock(path: &Path) -> Result<(Superblock, Option<String>), DeviceError> {
        let file = File::open(path).map_err(|e| DeviceError::io("open", path, 0, e))?;
        let mut page0 = vec![0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
        file.read_exact_at(&mut page0, 0).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => DeviceError::Corrupted {
                what: "superblock",
                location: path.display().to_string(),
                detail: "the file is shorter than one superblock".into(),
            },
            _ => DeviceError::io("read superblock of", path, 0, e),
        })?;
        choose_slot(path, &page0)
    }

    /// Bytes per page, as the superblock records and the configuration asked.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Pages in use, the superblock page included; data pages are `1..page_count`.
    pub fn page_count(&self) -> u64 {
        self.page_count.load(Ordering::Acquire)
    }

    /// What the page file ended up with (`O_DIRECT`, double write, torn pages
    /// restored), for reports.
    pub fn info(&self) -> &SsdInfo {
        &self.info
    }

    /// The page file's tier, profile, emulator and counters (the SSD double-write
    /// file has its own: [`double_write_core`](Self::double_write_core)).
    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// A copy of the current superblock.
    pub fn superblock(&self) -> Superblock {
        self.meta.lock().expect("superblock lock").sb.clone()
    }

    fn check_page(&self, id: PageId, len: usize) -> Result<u64, DeviceError> {
        if len != self.page_size {
            return Err(DeviceError::Config {
                device: DEVICE,
                what: format!("buffer of {len} bytes for a page of {} bytes", self.page_size),
            });
        }
        let count = self.page_count();
        if id == PageId::SUPERBLOCK || id.0 >= count {
            return Err(DeviceError::OutOfRange {
                device: DEVICE,
                offset: id.0.saturating_mul(self.page_size as u64),
                len: len as u64,
                size: count * self.page_size as u64,
            });
        }
        Ok(id.0 * self.page_size as u64)
    }

    fn check_poison(&self) -> Result<(), DeviceError> {
        match self.poisoned.load(Ordering::Acquire) {
            POISON_NONE => Ok(()),
            p => Err(DeviceError::Poisoned {
                path: self.info.path.clone(),
                cause: match p {
                    POISON_WRITE => "write",
                    POISON_SYNC => "fdatasync",
                    _ => "write or fdatasync of the double-write area",
                },
            }),
        }
    }

    fn poison(&self, cause: u8) {
        self.poisoned.store(cause, Ordering::Release);
    }

    /// Reads data page `id` into `buf` (`buf.len()` = page size) and checks its seal;
    /// `buf` then holds the bytes that were written, with the seal's bytes zero. A page
    /// never written reads as zeros.
    ///
    /// # Errors
    /// `OutOfRange` for page 0 or a page past the end; `Config` for a buffer of the
    /// wrong size; `Io`; `Corrupted` (`what: "page"`) for a page whose seal fails (torn,
    /// corrupted, or another page's bytes): `buf` then holds those bytes, which must not
    /// be used.
    pub fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.read_page_flushed(id, buf).map(|_| ())
    }

    /// [`read_page`](Self::read_page), giving back the page's last-flush LSN: the one
    /// its writer passed to [`write_pages_flushed`](Self::write_pages_flushed) (0:
    /// unknown, a page never written or written by format 3).
    ///
    /// # Errors
    /// As [`read_page`](Self::read_page).
    pub fn read_page_flushed(&self, id: PageId, buf: &mut [u8]) -> Result<u64, DeviceError> {
        self.read_raw(id, buf)?;
        self.check_sealed(id, buf)
    }

    /// [`read_page_flushed`](Self::read_page_flushed) of several pages, with the reads
    /// in flight together: `pages[i]`'s page is read into its buffer and `results[i]`
    /// says what became of it (its last-flush LSN, or the error `read_page_flushed`
    /// would have given). Without emulation, and where the buffers suit the file (page
    /// sized; aligned for direct I/O), the reads go to the device in one io_uring
    /// submission (up to [`SSD_WRITES_IN_FLIGHT_MAX`] in flight); else, or without
    /// io_uring, one after another, each charged as a read is. A failed batch is read
    /// again one page after another, so each page gets its own error.
    pub fn read_pages_flushed(&self, pages: &mut [(PageId, &mut [u8])]) -> Vec<Result<u64, DeviceError>> {
        let mut results: Vec<Result<u64, DeviceError>> = Vec::with_capacity(pages.len());
        let mut offsets = Vec::with_capacity(pages.len());
        for (id, buf) in pages.iter() {
            match self.check_page(*id, buf.len()) {
                Ok(o) => offsets.push(Some(o)),
                Err(_) => offsets.push(None),
            }
        }
        let together = pages.len() > 1
            && self.core.mode() == EmulationMode::Off
            && offsets.iter().all(Option::is_some)
            && (!self.info.direct_io || pages.iter().all(|(_, b)| is_io_aligned(b)));
        let mut read = false;
        if together {
            let mut reads: Vec<(u64, &mut [u8])> =
                pages.iter_mut().zip(&offsets).map(|((_, b), o)| (o.expect("checked above"), &mut b[..])).collect();
            if let Some(Ok(())) = self.rings.read_all(&self.file, &mut reads) {
                read = true;
                // Counted as the reads they are (no emulation to charge).
                for (o, b) in &reads {
                    let _ = self.core.run(OpKind::Read, *o, b.len() as u64, || Ok::<(), DeviceError>(()));
                }
            }
        }
        for (id, buf) in pages.iter_mut() {
            let r = if read { Ok(()) } else { self.read_raw(*id, buf) };
            results.push(r.and_then(|()| self.check_sealed(*id, buf)));
        }
        results
    }

    /// `buf`, just read as page `id`: its last-flush LSN if its seal holds (the seal's
    /// bytes then cleared), else `Corrupted` naming the page and the file.
    fn check_sealed(&self, id: PageId, buf: &mut [u8]) -> Result<u64, DeviceError> {
        match page_seal::check(buf, id) {
            Ok(_) => {
                let lsn = page_seal::flush_lsn(buf);
                page_seal::clear(buf);
                Ok(lsn)
            }
            Err(e) => Err(DeviceError::Corrupted {
                what: "page",
                location: format!("{id} of {}", self.info.path.display()),
                detail: e.to_string(),
            }),
        }
    }

    /// Reads page `id`'s bytes as they are on the device.
    fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<(), DeviceError> {
        let offset = self.check_page(id, buf.len())?;
        self.core.run(OpKind::Read, offset, buf.len() as u64, || {
            let r = if self.info.direct_io && !is_io_aligned(buf) {
                let mut bounce = AlignedBuf::new(buf.len());
                self.file.read_exact_at(&mut bounce, offset).map(|()| buf.copy_from_slice(&bounce))
            } else {
                self.file.read_exact_at(buf, offset)
            };
            r.map_err(|e| DeviceError::io("read", &self.info.path, 0, e))
        })
    }

    /// Writes data page `id` from `buf` (not durable until [`sync`](Self::sync));
    /// as [`write_pages`](Self::write_pages) with one page.
    ///
    /// # Errors
    /// As [`write_pages`](Self::write_pages).
    ///
    /// # Panics
    /// As [`write_pages`](Self::write_pages).
    pub fn write_page(&self, id: PageId, buf: &[u8]) -> Result<(), DeviceError> {
        self.write_pages(&[(id, buf)])
    }

    /// Writes data pages, each sealed (page id and checksum in its bytes 48..64). With
    /// the double-write area, the batch (in pieces of at most its slot count) is first
    /// written there and synced, then in place. The pages are not durable in place
    /// until [`sync`](Self::sync).
    ///
    /// # Errors
    /// `OutOfRange`, `Config` as for [`read_page`](Self::read_page); `Io`; `Full` when
    /// the device is full; `Poisoned` after an earlier failed write or sync. A failed
    /// write or sync poisons the handle.
    ///
    /// # Panics
    /// If a page's bytes 48..64 are not zero: they belong to the seal, and every page
    /// format leaves them free (a page format that does not is a bug that would lose
    /// those bytes).
    pub fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<(), DeviceError> {
        self.write_pages_flushed(pages, 0)
    }

    /// [`write_pages`](Self::write_pages), recording `flush_lsn` (the log's LSN at this
    /// write; 0: unknown) as every page's last-flush LSN in its seal.
    ///
    /// # Errors
    /// As [`write_pages`](Self::write_pages).
    ///
    /// # Panics
    /// As [`write_pages`](Self::write_pages).
    pub fn write_pages_flushed(&self, pages: &[(PageId, &[u8])], flush_lsn: u64) -> Result<(), DeviceError> {
        self.check_poison()?;
        for (id, buf) in pages {
            self.check_page(*id, buf.len())?;
        }
        let Some(dwa) = &self.dwa else {
            return self.write_runs(pages, |j, dst| {
                dst.copy_from_slice(pages[j].1);
                page_seal::seal_flushed(dst, pages[j].0, flush_lsn);
            });
        };
        let mut st = dwa.lock();
        for batch in pages.chunks(dwa.slots()) {
            if dwa.free_slots(&st) < batch.len() {
                self.sync_locked(dwa, &mut st)?;
            }
            // 1. The copies, durable before any page of the batch is touched in place.
            dwa.write(&mut st, batch, flush_lsn).inspect_err(|_| self.poison(POISON_DOUBLE_WRITE))?;
            // 2. The pages in place: a tear now leaves a good copy.
            self.write_runs(batch, |j, dst| dst.copy_from_slice(dwa.staged(&st, j)))?;
        }
        Ok(())
    }

    /// Writes `pages` in place in page order, each run of consecutive pages (at most
    /// [`SSD_WRITE_RUN_BYTES_MAX`] bytes) in one write; `image(j, dst)` puts the sealed
    /// image of `pages[j]` into `dst`. Of a page given twice, the last image is written.
    /// Without emulation and fault injection the runs go to the device together (up to
    /// [`SSD_WRITES_IN_FLIGHT_MAX`] in flight, [`super::uring`]), else one after another.
    fn write_runs(
        &self,
        pages: &[(PageId, &[u8])],
        mut image: impl FnMut(usize, &mut [u8]),
    ) -> Result<(), DeviceError> {
        let ps = self.page_size;
        let mut order: Vec<usize> = (0..pages.len()).collect();
        order.sort_by_key(|&j| pages[j].0); // stable
        // A page given twice: only its last image is written (writes in flight together
        // reach the device in any order).
        let order: Vec<usize> = (0..order.len())
            .filter(|&i| order.get(i + 1).is_none_or(|&next| pages[next].0 != pages[order[i]].0))
            .map(|i| order[i])
            .collect();
        let run_max = (SSD_WRITE_RUN_BYTES_MAX / ps).max(1);
        // (first page, its place in `order`, pages)
        let mut runs: Vec<(PageId, usize, usize)> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let first = pages[order[i]].0;
            let mut k = 1;
            while i + k < order.len() && k < run_max && pages[order[i + k]].0.0 == first.0 + k as u64 {
                k += 1;
            }
            runs.push((first, i, k));
            i += k;
        }
        let together = runs.len() > 1 && self.faults.is_none() && self.core.mode() == EmulationMode::Off;
        let group_pages = if together { (SSD_WRITE_BATCH_BYTES_MAX / ps).max(run_max) } else { run_max };
        let mut buf = AlignedBuf::new(ps * group_pages.min(pages.len()).max(1));
        let mut rest = &runs[..];
        while !rest.is_empty() {
            // A group: runs that fit the buffer, at most SSD_WRITES_IN_FLIGHT_MAX.
            let (mut n, mut used) = (0, 0);
            while n < rest.len() && n < SSD_WRITES_IN_FLIGHT_MAX && used + rest[n].2 <= group_pages {
                used += rest[n].2;
                n += 1;
            }
            if !together {
                n = 1;
            }
            let (group, later) = rest.split_at(n);
            let mut at = 0;
            let mut writes: Vec<(PageId, std::ops::Range<usize>)> = Vec::with_capacity(group.len());
            for &(first, start, k) in group {
                for j in 0..k {
                    image(order[start + j], &mut buf[(at + j) * ps..(at + j + 1) * ps]);
                }
                writes.push((first, at * ps..(at + k) * ps));
                at += k;
            }
            if writes.len() == 1 {
                self.write_raw(writes[0].0, &buf[writes[0].1.clone()])?;
            } else {
                self.write_together(&writes, &buf)?;
            }
            rest = later;
        }
        Ok(())
    }

    /// Writes runs of sealed pages (`(first page, range of buf)`) with all of them in
    /// flight; without io_uring, one after another.
    fn write_together(&self, writes: &[(PageId, std::ops::Range<usize>)], buf: &[u8]) -> Result<(), DeviceError> {
        self.check_poison()?;
        let ps = self.page_size;
        let mut at = Vec::with_capacity(writes.len());
        for (first, range) in writes {
            let k = (range.len() / ps) as u64;
            let offset = self.check_page(*first, ps)?;
            self.check_page(PageId(first.0 + k - 1), ps)?;
            for (j, page) in buf[range.clone()].chunks(ps).enumerate() {
                let pid = PageId(first.0 + j as u64);
                debug_assert_eq!(page_seal::check(page, pid), Ok(Sealed::Valid), "{pid} is written sealed");
            }
            at.push((offset, &buf[range.clone()]));
        }
        match self.rings.write_all(&self.file, &at) {
            None => {
                for (first, range) in writes {
                    self.write_raw(*first, &buf[range.clone()])?;
                }
                Ok(())
            }
            Some(Err(e)) => {
                self.poison(POISON_WRITE);
                let bytes = at.iter().map(|(_, b)| b.len() as u64).sum();
                Err(DeviceError::io("write", &self.info.path, bytes, e))
            }
            Some(Ok(())) => {
                // Counted as the writes they are (no emulation to charge).
                for (offset, bytes) in at {
                    self.core.run(OpKind::Write, offset, bytes.len() as u64, || Ok::<(), DeviceError>(()))?;
                }
                Ok(())
            }
        }
    }

    /// Writes the pages from `id` on (a whole number of them, consecutive) as they go
    /// on the device (sealed), in one write.
    fn write_raw(&self, id: PageId, buf: &[u8]) -> Result<(), DeviceError> {
        self.check_poison()?;
        let ps = self.page_size;
        if buf.is_empty() || !buf.len().is_multiple_of(ps) {
            return self.check_page(id, buf.len()).map(|_| ()); // names the bad length
        }
        let k = (buf.len() / ps) as u64;
        let offset = self.check_page(id, ps)?;
        self.check_page(PageId(id.0 + k - 1), ps)?;
        for (j, page) in buf.chunks(ps).enumerate() {
            let pid = PageId(id.0 + j as u64);
            debug_assert_eq!(page_seal::check(page, pid), Ok(Sealed::Valid), "{pid} is written sealed");
        }
        self.core.run(OpKind::Write, offset, buf.len() as u64, || {
            let faults = self.faults.as_deref();
            let r = if self.info.direct_io && !is_io_aligned(buf) {
                let mut bounce = AlignedBuf::new(buf.len());
                bounce.copy_from_slice(buf);
                super::fault::write_at(faults, &self.info.path, &self.file, &bounce, offset)
            } else {
                super::fault::write_at(faults, &self.info.path, &self.file, buf, offset)
            };
            r.map_err(|e| {
                self.poison(POISON_WRITE);
                DeviceError::io("write", &self.info.path, buf.len() as u64, e)
            })
        })
    }

    /// Makes all written pages durable (`fdatasync`). With the double-write area, this
    /// also ends its period: the copies are no longer needed (one more header write and
    /// `fdatasync` of the double-write file, if it holds any).
    ///
    /// # Errors
    /// `Io`, `Poisoned`. A failed sync poisons the handle.
    pub fn sync(&self) -> Result<(), DeviceError> {
        self.check_poison()?;
        match &self.dwa {
            None => self.sync_file(),
            Some(dwa) => self.sync_locked(dwa, &mut dwa.lock()),
        }
    }

    /// Step 3 of the double-write protocol, under its lock: sync the page file, then
    /// free the slots.
    fn sync_locked(&self, dwa: &DoubleWrite, st: &mut double_write::State) -> Result<(), DeviceError> {
        self.sync_file()?;
        dwa.end_period(st).inspect_err(|_| self.poison(POISON_DOUBLE_WRITE))
    }

    fn sync_file(&self) -> Result<(), DeviceError> {
        self.check_poison()?;
        self.core.run(OpKind::Sync, 0, 0, || {
            super::fault::sync(self.faults.as_deref(), &self.info.path, &self.file).map_err(|e| {
                self.poison(POISON_SYNC);
                DeviceError::io("fdatasync", &self.info.path, 0, e)
            })
        })
    }

    /// The double-write area's device (for its counters), when page writes are
    /// protected: its own SSD device for the file, the NVM region's for the NVM area
    /// ([`SsdInfo::double_write_mode`] says which).
    pub fn double_write_core(&self) -> Option<&DeviceCore> {
        self.dwa.as_ref().map(DoubleWrite::core)
    }

    /// Adds `pages` zeroed pages at the end of the file and records them in the
    /// superblock (durably); returns the first new page.
    ///
    /// # Errors
    /// `Config` past [`SSD_PAGES_MAX`]; `Full` when the device has no room; `Io`;
    /// `Poisoned`.
    pub fn grow(&self, pages: u64) -> Result<PageId, DeviceError> {
        self.check_poison()?;
        let mut meta = self.meta.lock().expect("superblock lock");
        let first = meta.sb.page_count;
        let new_count =
            first.checked_add(pages).filter(|&n| n <= SSD_PAGES_MAX).ok_or_else(|| DeviceError::Config {
                device: DEVICE,
                what: format!("growing {first} pages by {pages} passes the limit of {SSD_PAGES_MAX} pages"),
            })?;
        let bytes = new_count * self.page_size as u64;
        // 1. Reserve the space first, so a full device fails here and not on a write.
        super::nvm::allocate(&self.file, bytes)
            .map_err(|e| DeviceError::io("fallocate", &self.info.path, pages * self.page_size as u64, e))?;
        // 2. Record the new size in the next superblock generation, durably.
        let mut sb = meta.sb.clone();
        sb.page_count = new_count;
        sb.generation += 1;
        let slot = sb.slot();
        meta.slots[slot * SUPERBLOCK_SLOT_BYTES..(slot + 1) * SUPERBLOCK_SLOT_BYTES].copy_from_slice(&sb.encode());
        meta.sb = sb;
        self.write_superblock(&meta)?;
        // 3. Only now may callers use the pages.
        self.page_count.store(new_count, Ordering::Release);
        Ok(PageId(first))
    }

    /// Records the catalog root, the first page of the free-page list, the allocation
    /// high-water mark and the number of free pages the list names in the next
    /// superblock generation, durably (the data pages they name must already be synced).
    ///
    /// # Errors
    /// `Config` if `pages_allocated` exceeds the file; `Io`, `Poisoned`.
    pub fn set_roots(
        &self,
        catalog_root: PageId,
        free_list_head: PageId,
        pages_allocated: u64,
        free_pages: u64,
    ) -> Result<(), DeviceError> {
        self.check_poison()?;
        let mut meta = self.meta.lock().expect("superblock lock");
        if pages_allocated == 0 || pages_allocated > meta.sb.page_count {
            return Err(DeviceError::Config {
                device: DEVICE,
                what: format!("{pages_allocated} pages allocated in a file of {} pages", meta.sb.page_count),
            });
        }
        let mut sb = meta.sb.clone();
        sb.pages_allocated = pages_allocated;
        sb.catalog_root = catalog_root.0;
        sb.free_list_head = free_list_head.0;
        sb.free_pages = free_pages;
        sb.generation += 1;
        let slot = sb.slot();
        meta.slots[slot * SUPERBLOCK_SLOT_BYTES..(slot + 1) * SUPERBLOCK_SLOT_BYTES].copy_from_slice(&sb.encode());
        meta.sb = sb;
        self.write_superblock(&meta)
    }

    /// Writes both superblock slots as held in `meta` and syncs.
    fn write_superblock(&self, meta: &Meta) -> Result<(), DeviceError> {
        let mut buf = AlignedBuf::new(IO_ALIGN_BYTES);
        buf[..meta.slots.len()].copy_from_slice(&meta.slots);
        let path = &self.info.path;
        if let Err(e) = super::fault::write_at(self.faults.as_deref(), path, &self.file, &buf, 0) {
            self.poisoned.store(POISON_WRITE, Ordering::Release);
            return Err(DeviceError::io("write superblock of", path, IO_ALIGN_BYTES as u64, e));
        }
        if let Err(e) = super::fault::sync(self.faults.as_deref(), path, &self.file) {
            self.poisoned.store(POISON_SYNC, Ordering::Release);
            return Err(DeviceError::io("fdatasync", path, 0, e));
        }
        Ok(())
    }
}

/// The double-write file's device: the same profile and mode as the page file's, its
/// own counters.
fn dwa_core(cfg: &SsdConfig) -> Result<DeviceCore, DeviceError> {
    DeviceCore::new(Tier::Ssd, cfg.profile.clone(), cfg.mode)
        .map_err(|e| DeviceError::Config { device: DEVICE, what: e.to_string() })
}

fn validate(cfg: &SsdConfig) -> Result<DeviceCore, DeviceError> {
    let ps = cfg.page_size;
    if !ps.is_power_of_two() || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&ps) {
        return Err(DeviceError::Config {
            device: DEVICE,
            what: format!(
                "page size {ps} bytes must be a power of two from {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
            ),
        });
    }
    DeviceCore::new(Tier::Ssd, cfg.profile.clone(), cfg.mode)
        .map_err(|e| DeviceError::Config { device: DEVICE, what: e.to_string() })
}

/// Opens the existing file read-write, with `O_DIRECT` per the configuration.
fn open_file(cfg: &SsdConfig) -> Result<(File, SsdInfo), DeviceError> {
    let path = &cfg.path;
    let plain = || OpenOptions::new().read(true).write(true).open(path);
    let file_system = super::fs_type(path);
    let (file, direct_io, note) = match cfg.direct_io {
        DirectIo::Off => (plain(), false, "turned off by configuration".to_string()),
        DirectIo::Auto | DirectIo::On => {
            match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path) {
                Ok(f) => {
                    let note = if file_system == "tmpfs" {
                        "accepted, but tmpfs serves it from RAM (no device underneath)".to_string()
                    } else {
                        "in effect".to_string()
                    };
                    (Ok(f), true, note)
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    if cfg.direct_io == DirectIo::On {
                        return Err(DeviceError::Unsupported {
                            what: format!("O_DIRECT on {}", path.display()),
                            why: format!("the {file_system} file system refuses it"),
                        });
                    }
                    (plain(), false, format!("refused by {file_system}; using buffered I/O"))
                }
                Err(e) => (Err(e), false, String::new()),
            }
        }
    };
    let file = file.map_err(|e| DeviceError::io("open", path, 0, e))?;
    let info = SsdInfo {
        path: path.clone(),
        page_size: cfg.page_size,
        file_system,
        direct_io,
        direct_io_note: note,
        superblock_note: None,
        double_write_mode: DoubleWriteMode::Off,
        double_write: None,
        torn_pages: None,
        double_write_lost: None,
    };
    Ok((file, info))
}

/// Picks the valid slot with the higher generation, or says why none is valid.
fn choose_slot(path: &Path, page0: &[u8]) -> Result<(Superblock, Option<String>), DeviceError> {
    let decoded: Vec<Result<Superblock, SlotError>> =
        page0.chunks_exact(SUPERBLOCK_SLOT_BYTES).take(SUPERBLOCK_SLOTS).map(Superblock::decode).collect();
    let best = decoded
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().ok().map(|sb| (i, sb)))
        .max_by_key(|(_, sb)| sb.generation);
    if let Some((i, sb)) = best {
        let note = decoded.iter().enumerate().find_map(|(j, r)| {
            r.as_ref().err().map(|e| {
                format!("superblock slot {j} unreadable ({e:?}); using slot {i}, generation {}", sb.generation)
            })
        });
        return Ok((sb.clone(), note));
    }
    // No valid slot: report the most specific reason.
    if decoded.iter().all(|r| matches!(r, Err(SlotError::BadMagic(_)))) {
        let found: [u8; 8] = page0[0..8].try_into().expect("8 bytes");
        return Err(DeviceError::BadMagic { path: path.to_path_buf(), found, expected: MAGIC });
    }
    if let Some(found) = decoded.iter().find_map(|r| match r {
        Err(SlotError::Version(v)) => Some(*v),
        _ => None,
    }) {
        return Err(DeviceError::VersionMismatch { path: path.to_path_buf(), found, expected: FORMAT_VERSION });
    }
    let reasons: Vec<String> = decoded
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Err(SlotError::Checksum { stored, computed }) => {
                format!("slot {i}: checksum {stored:#010x} stored, {computed:#010x} computed")
            }
            Err(e) => format!("slot {i}: {e:?}"),
            Ok(_) => unreachable!("no slot is valid here"),
        })
        .collect();
    Err(DeviceError::Corrupted { what: "superblock", location: path.display().to_string(), detail: reasons.join("; ") })
}

fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::DOUBLE_WRITE_SLOTS;

    fn dir() -> tempfile::TempDir {
        // The root file system takes O_DIRECT (PLATFORM.md); /tmp is on it here.
        tempfile::tempdir().unwrap()
    }

    fn cfg(d: &tempfile::TempDir) -> SsdConfig {
        let mut c = SsdConfig::new(d.path().join("pages.db"));
        c.page_size = 4096;
        c
    }

    #[test]
    fn superblock_and_pages_round_trip() {
        let d = dir();
        let c = cfg(&d);
        let db_id;
        {
            let f = SsdFile::create(&c).unwrap();
            db_id = f.superblock().db_id;
            assert_eq!(f.page_count(), 1);
            let first = f.grow(3).unwrap();
            assert_eq!(first, PageId(1));
            let mut page = AlignedBuf::new(4096);
            page.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            page_seal::clear(&mut page);
            f.write_page(PageId(2), &page).unwrap();
            let mut unaligned = vec![0xabu8; 4096];
            page_seal::clear(&mut unaligned);
            f.write_page(PageId(3), &unaligned).unwrap();
            f.sync().unwrap();
            let s = f.core().stats().snapshot();
            assert_eq!((s.writes, s.syncs, s.write_bytes), (2, 1, 8192));
        }
        let f = SsdFile::open(&c).unwrap();
        assert_eq!(f.page_count(), 4);
        let sb = f.superblock();
        assert_eq!((sb.db_id, sb.page_size, sb.generation), (db_id, 4096, 2));
        assert!(f.info().superblock_note.is_none());
        let mut back = vec![0u8; 4096];
        f.read_page(PageId(2), &mut back).unwrap();
        assert!(
            back.iter().enumerate().all(|(i, &b)| b == if page_seal::SEAL_RANGE.contains(&i) { 0 } else { i as u8 })
        );
        f.read_page(PageId(3), &mut back).unwrap();
        assert_eq!(back, unaligned_page(0xab));
        f.read_page(PageId(1), &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "a page never written reads as zeros");
    }

    /// A page of `fill` bytes with the seal's bytes zero, as page formats leave them.
    fn unaligned_page(fill: u8) -> Vec<u8> {
        let mut p = vec![fill; 4096];
        page_seal::clear(&mut p);
        p
    }

    #[test]
    fn a_corrupted_or_misplaced_page_is_an_error_naming_it() {
        let d = dir();
        let c = cfg(&d);
        {
            let f = SsdFile::create(&c).unwrap();
            f.grow(3).unwrap();
            f.write_page(PageId(1), &unaligned_page(1)).unwrap();
            f.write_page(PageId(2), &unaligned_page(2)).unwrap();
            f.sync().unwrap();
        }
        let all = std::fs::read(&c.path).unwrap();
        patch(&c.path, 4096 + 3000, &[all[4096 + 3000] ^ 0x10]); // page 1
        patch(&c.path, 3 * 4096, &all[2 * 4096..3 * 4096]); // page 2's bytes at page 3
        let f = SsdFile::open(&c).unwrap();
        let mut buf = vec![0u8; 4096];
        for (pid, what) in [(1, "checksum"), (3, "sealed as page 2")] {
            let e = f.read_page(PageId(pid), &mut buf).unwrap_err();
            assert!(matches!(e, DeviceError::Corrupted { what: "page", .. }), "{e}");
            let msg = e.to_string();
            assert!(msg.contains(&format!("page {pid} of")) && msg.contains("pages.db") && msg.contains(what), "{msg}");
        }
        f.read_page(PageId(2), &mut buf).unwrap();
        assert_eq!(buf, unaligned_page(2));
    }

    fn dwa_cfg(d: &tempfile::TempDir, plan: Option<&std::sync::Arc<super::super::FaultPlan>>) -> SsdConfig {
        let mut c = cfg(d);
        c.double_write = DoubleWriteMode::Ssd;
        c.faults = plan.cloned();
        c
    }

    #[test]
    fn a_page_torn_in_place_is_restored_from_its_copy_on_open() {
        let d = dir();
        let plan = super::super::FaultPlan::new();
        let c = dwa_cfg(&d, Some(&plan));
        {
            let f = SsdFile::create(&c).unwrap();
            assert_eq!(f.info().double_write.as_deref(), Some(double_write::path_for(&c.path).as_path()));
            f.grow(4).unwrap();
            let old: Vec<Vec<u8>> = (1..=3).map(unaligned_page).collect();
            f.write_pages(&[(PageId(1), &old[0]), (PageId(2), &old[1]), (PageId(3), &old[2])]).unwrap();
            f.sync().unwrap();
            let new: Vec<Vec<u8>> = (11..=13).map(unaligned_page).collect();
            // Writes: the batch's copies (1), then pages 1, 2, 3 in place in one write
            // (2): torn halfway, page 1 is new, page 2 torn, page 3 old.
            plan.tear_nth_write(2);
            let e = f.write_pages(&[(PageId(1), &new[0]), (PageId(2), &new[1]), (PageId(3), &new[2])]).unwrap_err();
            assert!(matches!(e, DeviceError::Io { .. }), "{e}");
            assert!(matches!(f.write_page(PageId(4), &new[0]), Err(DeviceError::Poisoned { .. })));
        }
        let mut plain = c.clone();
        plain.double_write = DoubleWriteMode::Off;
        plain.faults = None;
        // Without the copies the tear shows: a scratch copy of the files opened with the
        // double-write file left out.
        let scratch = dir();
        let sp = scratch.path().join("pages.db");
        std::fs::copy(&c.path, &sp).unwrap();
        let mut sc = plain.clone();
        sc.path = sp;
        let f = SsdFile::open(&sc).unwrap();
        assert!(f.info().torn_pages.is_none());
        let mut buf = vec![0u8; 4096];
        let e = f.read_page(PageId(2), &mut buf).unwrap_err();
        assert!(e.to_string().contains("page 2 of"), "{e}");
        drop(f);
        // With them, page 2 is restored, and page 3 (never written in place) too.
        let f = SsdFile::open(&dwa_cfg(&d, None)).unwrap();
        let r = f.info().torn_pages.clone().unwrap();
        assert_eq!(
            (r.copies, r.restored_torn.clone(), r.restored_older.clone()),
            (3, vec![PageId(2)], vec![PageId(3)]),
            "{r:?}"
        );
        for pid in 1..=3u8 {
            f.read_page(PageId(u64::from(pid)), &mut buf).unwrap();
            assert_eq!(buf, unaligned_page(10 + pid), "page {pid}");
        }
        drop(f);
        // The copies are spent: the next open finds none; opened without double write,
        // the file is removed.
        let f = SsdFile::open(&plain).unwrap();
        let r = f.info().torn_pages.clone().unwrap();
        assert_eq!((r.copies, r.pages_restored()), (0, 0), "{r:?}");
        assert!(!double_write::path_for(&c.path).exists());
        assert!(f.info().double_write.is_none());
    }

    #[test]
    fn a_double_write_file_of_another_database_is_not_applied() {
        let d = dir();
        let c = dwa_cfg(&d, None);
        SsdFile::create(&c).unwrap().grow(1).unwrap();
        let other = dir();
        let mut oc = dwa_cfg(&other, None);
        oc.path = other.path().join("pages.db");
        {
            let f = SsdFile::create(&oc).unwrap();
            f.grow(1).unwrap();
            f.write_page(PageId(1), &unaligned_page(9)).unwrap();
        }
        std::fs::copy(double_write::path_for(&oc.path), double_write::path_for(&c.path)).unwrap();
        let f = SsdFile::open(&c).unwrap();
        let r = f.info().torn_pages.clone().unwrap();
        assert!(r.unusable.as_deref().is_some_and(|w| w.contains("belongs to database")), "{r:?}");
        let mut buf = vec![0u8; 4096];
        f.read_page(PageId(1), &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0), "nothing of the other database was restored");
        drop(f);
        let f = SsdFile::open(&c).unwrap();
        assert!(f.info().torn_pages.as_ref().unwrap().unusable.is_none(), "formatted for this database");
    }

    #[test]
    fn a_full_batch_ends_the_period_and_syncs_first() {
        let d = dir();
        let c = dwa_cfg(&d, None);
        let f = SsdFile::create(&c).unwrap();
        let n = DOUBLE_WRITE_SLOTS as u64 + 5;
        f.grow(n).unwrap();
        let page = unaligned_page(3);
        let batch: Vec<(PageId, &[u8])> = (1..=n).map(|p| (PageId(p), &page[..])).collect();
        let before = f.core().stats().snapshot();
        f.write_pages(&batch).unwrap();
        let s = f.core().stats().snapshot().since(&before);
        // Each piece's pages are consecutive: one write each.
        assert_eq!((s.writes, s.syncs), (2, 1), "one page-file sync before the second piece");
        let w = f.double_write_core().unwrap().stats().snapshot();
        // Creation: header write + sync; two pieces: two writes and syncs; one period
        // ended: a header write and sync.
        assert_eq!((w.writes, w.syncs), (4, 4), "{w:?}");
    }

    /// A batch goes out in page order, each run of consecutive pages in one write (at
    /// most `SSD_WRITE_RUN_BYTES_MAX` bytes); a page given twice ends with its last
    /// image; every page reads back as given.
    #[test]
    fn a_batch_is_written_in_runs_of_consecutive_pages() {
        for dwa in [false, true] {
            let d = dir();
            let c = if dwa { dwa_cfg(&d, None) } else { cfg(&d) };
            let f = SsdFile::create(&c).unwrap();
            let run_max = (SSD_WRITE_RUN_BYTES_MAX / 4096) as u64;
            f.grow(run_max + 20).unwrap();
            // Pages 10..=12, 5, 7, 6 (a run of 5..=7 given out of order), 12 again, and
            // 1..=run_max + 1 (one run too long for one write).
            let ids: Vec<u64> = [10, 11, 12, 5, 7, 6, 12].into_iter().chain(1..=run_max + 1).collect();
            let images: Vec<Vec<u8>> = ids.iter().enumerate().map(|(j, _)| unaligned_page(j as u8)).collect();
            let pages: Vec<(PageId, &[u8])> = ids.iter().zip(&images).map(|(&p, b)| (PageId(p), &b[..])).collect();
            for chunk in pages.chunks(if dwa { DOUBLE_WRITE_SLOTS } else { pages.len() }) {
                let before = f.core().stats().snapshot();
                f.write_pages(chunk).unwrap();
                let writes = f.core().stats().snapshot().since(&before).writes;
                let mut sorted: Vec<u64> = chunk.iter().map(|(p, _)| p.0).collect();
                sorted.sort_unstable();
                // A repeated page is written once; a new run where a page does not
                // follow the one before, or where the run is full.
                sorted.dedup();
                let (mut runs, mut len) = (0u64, 0u64);
                for (i, p) in sorted.iter().enumerate() {
                    if i == 0 || *p != sorted[i - 1] + 1 || len == run_max {
                        runs += 1;
                        len = 0;
                    }
                    len += 1;
                }
                assert_eq!(writes, runs, "dwa {dwa}: {sorted:?}");
            }
            let mut buf = vec![0u8; 4096];
            let mut last = std::collections::HashMap::new();
            for (j, p) in ids.iter().enumerate() {
                last.insert(*p, j);
            }
            for (p, j) in last {
                f.read_page(PageId(p), &mut buf).unwrap();
                assert!(buf == images[j], "dwa {dwa}: page {p} does not hold image {j}");
            }
        }
    }

    #[test]
    fn superblock_page_and_pages_past_the_end_are_refused() {
        let d = dir();
        let f = SsdFile::create(&cfg(&d)).unwrap();
        f.grow(1).unwrap();
        let mut buf = vec![0u8; 4096];
        assert!(matches!(f.read_page(PageId(0), &mut buf), Err(DeviceError::OutOfRange { .. })));
        assert!(matches!(f.write_page(PageId(2), &buf), Err(DeviceError::OutOfRange { .. })));
        assert!(matches!(f.read_page(PageId(1), &mut buf[..100]), Err(DeviceError::Config { .. })));
    }

    #[test]
    fn create_never_overwrites() {
        let d = dir();
        let c = cfg(&d);
        std::fs::write(&c.path, b"precious").unwrap();
        assert!(matches!(SsdFile::create(&c), Err(DeviceError::AlreadyExists { .. })));
        assert_eq!(std::fs::read(&c.path).unwrap(), b"precious");
    }

    /// Opens `c` expecting an error; checks the file's bytes did not change.
    fn open_fails(c: &SsdConfig) -> DeviceError {
        let before = std::fs::read(&c.path).unwrap();
        let e = SsdFile::open(c).err().expect("open should fail");
        assert_eq!(std::fs::read(&c.path).unwrap(), before, "failed open changed the file");
        e
    }

    fn make(d: &tempfile::TempDir) -> SsdConfig {
        let c = cfg(d);
        SsdFile::create(&c).unwrap().grow(2).unwrap();
        c
    }

    fn patch(path: &Path, at: usize, bytes: &[u8]) {
        let mut all = std::fs::read(path).unwrap();
        all[at..at + bytes.len()].copy_from_slice(bytes);
        std::fs::write(path, all).unwrap();
    }

    #[test]
    fn another_magic_is_not_a_tierdb_file() {
        let d = dir();
        let c = make(&d);
        patch(&c.path, 0, b"SQLite f");
        patch(&c.path, 512, b"SQLite f");
        let e = open_fails(&c);
        assert!(matches!(e, DeviceError::BadMagic { .. }), "{e}");
        assert!(e.to_string().contains("pages.db"), "{e}");
    }

    #[test]
    fn another_version_is_reported_as_such() {
        let d = dir();
        let c = make(&d);
        for slot in 0..2 {
            let mut sb = Superblock::new(4096, 1, 1);
            sb.format_version = FORMAT_VERSION + 1;
            patch(&c.path, slot * 512, &sb.encode());
        }
        let e = open_fails(&c);
        assert!(
            matches!(e, DeviceError::VersionMismatch { found, expected: FORMAT_VERSION, .. } if found == FORMAT_VERSION + 1),
            "{e}"
        );
    }

    /// A format-3 file (seals without last-flush LSN) opens; its pages read with LSN
    /// 0, and the file is recorded as format 4 from then on.
    #[test]
    fn a_format_3_file_is_read_and_upgraded() {
        let d = dir();
        let c = make(&d);
        let mut old = unaligned_page(5);
        old[48..56].copy_from_slice(&1u64.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&old[..56]), &old[60..]);
        old[56..60].copy_from_slice(&crc.to_le_bytes());
        patch(&c.path, 4096, &old);
        let sb = SsdFile::read_superblock(&c.path).unwrap().0;
        for slot in 0..2 {
            let mut v3 = sb.clone();
            v3.format_version = 3;
            v3.generation = sb.generation - 1 + slot as u64;
            patch(&c.path, v3.slot() * 512, &v3.encode());
        }
        let f = SsdFile::open(&c).unwrap();
        assert_eq!(f.superblock().format_version, FORMAT_VERSION);
        let mut buf = vec![0u8; 4096];
        assert_eq!(f.read_page_flushed(PageId(1), &mut buf).unwrap(), 0);
        assert_eq!(buf, unaligned_page(5));
        f.write_pages_flushed(&[(PageId(2), &unaligned_page(6))], 1 << 40).unwrap();
        assert_eq!(f.read_page_flushed(PageId(2), &mut buf).unwrap(), 1 << 40);
        drop(f);
        assert_eq!(SsdFile::read_superblock(&c.path).unwrap().0.format_version, FORMAT_VERSION);
    }

    #[test]
    fn another_page_size_is_refused() {
        let d = dir();
        let mut c = make(&d);
        c.page_size = 8192;
        let e = open_fails(&c);
        assert!(matches!(e, DeviceError::PageSizeMismatch { found: 4096, expected: 8192, .. }), "{e}");
    }

    #[test]
    fn bad_checksums_in_both_slots_are_corruption() {
        let d = dir();
        let c = make(&d);
        // Byte 40 is the random database id's: flip it, as a fixed value may be there.
        let all = std::fs::read(&c.path).unwrap();
        patch(&c.path, 40, &[!all[40]]);
        patch(&c.path, 512 + 40, &[!all[512 + 40]]);
        let e = open_fails(&c);
        assert!(matches!(e, DeviceError::Corrupted { what: "superblock", .. }), "{e}");
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    #[test]
    fn a_torn_newest_slot_falls_back_to_the_older() {
        let d = dir();
        let c = make(&d); // generation 2 in slot 0, generation 1 in slot 1
        patch(&c.path, 20, &[0x55]);
        let f = SsdFile::open(&c).unwrap();
        assert_eq!(f.superblock().generation, 1);
        assert_eq!(f.page_count(), 1);
        assert!(f.info().superblock_note.as_deref().unwrap().contains("slot 0"));
    }

    #[test]
    fn truncated_files_are_corruption() {
        let d = dir();
        let c = make(&d);
        let all = std::fs::read(&c.path).unwrap();
        std::fs::write(&c.path, &all[..4096 * 2]).unwrap();
        let e = open_fails(&c);
        assert!(matches!(e, DeviceError::Corrupted { what: "page file", .. }), "{e}");
        std::fs::write(&c.path, &all[..100]).unwrap();
        let e = open_fails(&c);
        assert!(matches!(e, DeviceError::Corrupted { what: "superblock", .. }), "{e}");
    }

    #[test]
    fn read_superblock_needs_no_page_size() {
        let d = dir();
        let c = make(&d);
        let (sb, note) = SsdFile::read_superblock(&c.path).unwrap();
        assert_eq!((sb.page_size, sb.page_count, note), (4096, 3, None));
        patch(&c.path, 0, b"XXXXXXXX");
        patch(&c.path, 512, b"XXXXXXXX");
        assert!(matches!(SsdFile::read_superblock(&c.path), Err(DeviceError::BadMagic { .. })));
    }

    #[test]
    fn bad_configs_and_paths() {
        let d = dir();
        let mut c = cfg(&d);
        c.page_size = 3000;
        assert!(matches!(SsdFile::create(&c), Err(DeviceError::Config { .. })));
        let c = SsdConfig::new("/nonexistent-dir/y/pages.db");
        let e = SsdFile::create(&c).err().unwrap();
        assert!(matches!(e, DeviceError::Create { .. }) && e.to_string().contains("/nonexistent-dir/y"), "{e}");
        assert!(matches!(SsdFile::open(&c), Err(DeviceError::Io { .. })));
    }

    #[test]
    fn direct_io_is_used_on_the_root_file_system() {
        let d = dir();
        let f = SsdFile::create(&cfg(&d)).unwrap();
        if f.info().file_system != "tmpfs" {
            assert!(f.info().direct_io, "{:?}", f.info());
        }
        let d2 = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut c = cfg(&d2);
        c.direct_io = DirectIo::Off;
        let f = SsdFile::create(&c).unwrap();
        assert!(!f.info().direct_io);
    }
}
