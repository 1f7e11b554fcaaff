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
//!
//! The file is split by activity: `open` creates and opens the file (superblock
//! checks, double-write recovery), `io` reads and writes pages; this file holds the
//! types, the handle and its superblock updates.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use serde::Serialize;

use super::aligned::AlignedBuf;
use super::double_write::{self, DoubleWrite, DoubleWriteMode, TornPageRecovery};
use super::profile::DeviceProfile;
use super::superblock::Superblock;
use super::{DeviceCore, DeviceError, EmulationMode, NvmConfig};
use crate::ids::PageId;
use crate::limits::{
    DOUBLE_WRITE_SLOTS, IO_ALIGN_BYTES, PAGE_SIZE_DEFAULT_BYTES, SSD_PAGES_MAX, SUPERBLOCK_SLOT_BYTES, SUPERBLOCK_SLOTS,
};

mod io;
mod open;
#[cfg(test)]
mod tests;

const DEVICE: &str = "ssd";

// Both superblock slots go in one aligned write of page 0's first block.
const _: () = assert!(SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS <= IO_ALIGN_BYTES);
const _: () = assert!(IO_ALIGN_BYTES.is_power_of_two());
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

/// Equal when every setting is; fault plans are equal only if they are the same plan
/// (`Arc::ptr_eq`: a plan is shared state, not a value).
impl PartialEq for SsdConfig {
    fn eq(&self, o: &SsdConfig) -> bool {
        let SsdConfig {
            path,
            page_size,
            direct_io,
            profile,
            mode,
            faults,
            double_write,
            nvm_double_write,
            nvm_double_write_slots,
        } = self;
        *path == o.path
            && *page_size == o.page_size
            && *direct_io == o.direct_io
            && *profile == o.profile
            && *mode == o.mode
            && same_plan(faults, &o.faults)
            && *double_write == o.double_write
            && *nvm_double_write == o.nvm_double_write
            && *nvm_double_write_slots == o.nvm_double_write_slots
    }
}

/// Both without a fault plan, or both with the same one.
pub(crate) fn same_plan(
    a: &Option<std::sync::Arc<super::FaultPlan>>,
    b: &Option<std::sync::Arc<super::FaultPlan>>,
) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
        _ => false,
    }
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
        let offset = id.0 * self.page_size as u64;
        debug_assert!(offset.is_multiple_of(IO_ALIGN_BYTES as u64), "{id} at offset {offset} is not I/O aligned");
        Ok(offset)
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
        debug_assert_eq!(first, self.page_count(), "superblock and handle disagree on the page count");
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
        // 3. Only now may callers use the pages (the count never shrinks).
        assert!(new_count >= self.page_count(), "growth to {new_count} pages below {}", self.page_count());
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
        // The slot written last is the newest generation's: a torn write leaves the other.
        debug_assert_eq!(
            Superblock::decode(&meta.slots[meta.sb.slot() * SUPERBLOCK_SLOT_BYTES..][..SUPERBLOCK_SLOT_BYTES]).ok(),
            Some(meta.sb.clone()),
            "superblock slot {} does not hold generation {}",
            meta.sb.slot(),
            meta.sb.generation
        );
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
