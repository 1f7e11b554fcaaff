//! The NVM pool: page frames with persistent headers in the NVM region.
//!
//! Region layout (all offsets in bytes, little-endian; see `docs/format.md`):
//!
//! ```text
//!   0                 pool header, one cache line: magic "TIERDBNV", version u32,
//!                     page size u32, frame count u64, db id u64, .. CRC-32C at 60
//!   4096              frame headers, 64 bytes each, frame_count of them
//!   data_offset       frames, page_size bytes each (4 KiB aligned)
//!
//!   frame header:  0 page id u64 | 8 page LSN u64 (of the page's last logged change) | 16 flags u32 | 20 data CRC-32C u32
//!                  24 recovery LSN u64 (of the oldest change not on SSD, while DIRTY; 0: unknown)
//!                  32 written LSN u64 (the log's end when the frame's bytes or flags were last set; 0: unknown)
//!                  40..60 reserved (zero) | 60 header CRC-32C u32 over bytes 0..60
//!   flags:         VALID 1, DIRTY 2 (newer than the SSD copy), IN_UPDATE 4,
//!                  NO_CRC 8 (the data CRC is not kept; set by earlier builds on line write-backs)
//! ```
//!
//! A frame is written data first, then its header, each persisted (`clwb` + `sfence`),
//! so a header never names data that is not durable; a torn frame shows as a CRC
//! mismatch, which is reported and never used.
//!
//! The data CRC is kept current on every write: a whole page's is computed, and a
//! line write-back updates it from the lines' old and new bytes (`page_crc`), so every
//! frame has one. What is checked against it is the pool's [`NvmVerify`]: every whole
//! page copied out ([`read_page`](NvmPool::read_page)); each frame once, before it is
//! first read after a restart ([`check_before_read`](NvmPool::check_before_read): line
//! loads, in-place fixes), dirty frames at [`reopen`](NvmPool::reopen) already, so that
//! a bad one is cleared and rebuilt as a torn one is; in `Every` mode every read and,
//! at reopen, every frame.
//!
//! The *written LSN* orders a frame against the page's SSD copy at restart. A page is
//! written to SSD at a log LSN F (its last-flush LSN, noted in a flush record), and its
//! copies change one at a time under the page's hold, each change logged first. So a
//! frame whose written LSN is below F was last set before the SSD copy was taken, from
//! bytes that copy includes: SSD is at least as new, and the frame is not to be trusted
//! (a kill between an SSD write and the refresh of the page's NVM copy leaves such a
//! frame; `BufferManager::recover_drop_stale_nvm`). A frame written at or after F is at
//! least as new as SSD. The LSN comes from the attached log ([`NvmPool::set_lsn_clock`];
//! 0 without one, which counts as older than every flush).
//!
//! Concurrency: a frame is used by one thread at a time, which owns it by having popped
//! it from the free list, by having claimed its page's table entry (NVM → BUSY), or by
//! holding the exclusive latch of the DRAM frame whose page it backs. The DRAM-side
//! metadata here (page id, dirty, reference bit) is atomic so the clock hand can read
//! it racily; it re-checks ownership through the page table before using a frame.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::BufferError;
use super::frame::cpu_cache::CpuCacheModel;
use super::latch::Latch;
use super::page_crc::{NvmVerify, crc_after_runs};
use crate::device::{DeviceError, NvmRegion};
use crate::ids::PageId;
use crate::limits::{CACHE_LINE_BYTES, IO_ALIGN_BYTES};

const MAGIC: &[u8; 8] = b"TIERDBNV";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = CACHE_LINE_BYTES;
const HEADERS_OFFSET: u64 = IO_ALIGN_BYTES as u64;

/// Frame header flag: the frame holds the page the header names.
pub const FLAG_VALID: u32 = 1;
/// Frame header flag: the frame's copy is newer than the page's SSD copy (or the only
/// one, without SSD).
pub const FLAG_DIRTY: u32 = 2;
/// Frame header flag: the frame's data is being overwritten in place; a restart that
/// finds it clears the frame instead of trusting bytes a crash may have torn.
pub const FLAG_IN_UPDATE: u32 = 4;
/// The data CRC does not cover the data (set by earlier builds when a page was
/// written back line by line; this one keeps the CRC current and never sets it).
pub const FLAG_NO_CRC: u32 = 8;

const NO_PAGE: u64 = u64::MAX;
/// Shadow buffers kept for reuse ([`NvmPool::take_shadow`]): two per in-place writer.
const SHADOWS_KEPT_MAX: usize = 64;

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The page the frame holds.
    pub pid: PageId,
    /// LSN of the page's last logged change that the frame's bytes include (0: unknown).
    pub page_lsn: u64,
    /// `FLAG_*` bits: [`FLAG_VALID`], [`FLAG_DIRTY`], [`FLAG_IN_UPDATE`], [`FLAG_NO_CRC`].
    pub flags: u32,
    /// CRC-32C of the frame's page bytes (not kept if [`FLAG_NO_CRC`] is set).
    pub data_crc: u32,
    /// While DIRTY: a lower bound of the LSN of the oldest change the frame holds that
    /// SSD does not (0: unknown). `nvsql` keeps dirty pages in NVM across checkpoints,
    /// so the log must reach back to it (`NvmPool::oldest_dirty_rec_lsn`).
    pub rec_lsn: u64,
    /// The log's end LSN when the frame's bytes or flags were last set (0: unknown);
    /// see the module doc.
    pub written_lsn: u64,
}

impl FrameHeader {
    /// The header's 64 bytes as stored, bytes 40..60 zero and the header CRC-32C at 60.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.pid.0.to_le_bytes());
        b[8..16].copy_from_slice(&self.page_lsn.to_le_bytes());
        b[16..20].copy_from_slice(&self.flags.to_le_bytes());
        b[20..24].copy_from_slice(&self.data_crc.to_le_bytes());
        b[24..32].copy_from_slice(&self.rec_lsn.to_le_bytes());
        b[32..40].copy_from_slice(&self.written_lsn.to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header; `None` for an all-zero (never written) one.
    ///
    /// # Errors
    /// A description of the mismatch when the header's CRC is wrong.
    pub fn decode(b: &[u8; HEADER_BYTES]) -> Result<Option<FrameHeader>, String> {
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let (stored, computed) = (u32_at(60), crc32c::crc32c(&b[..60]));
        if stored != computed {
            return Err(format!("header CRC-32C {stored:#010x}, computed {computed:#010x}"));
        }
        Ok(Some(FrameHeader {
            pid: PageId(u64_at(0)),
            page_lsn: u64_at(8),
            flags: u32_at(16),
            data_crc: u32_at(20),
            rec_lsn: u64_at(24),
            written_lsn: u64_at(32),
        }))
    }
}

/// DRAM-side metadata of one NVM frame.
#[derive(Debug)]
pub struct NvmFrameMeta {
    /// The page held, or `u64::MAX`.
    pid: AtomicU64,
    dirty: AtomicBool,
    referenced: AtomicBool,
    /// The header says FLAG_NO_CRC.
    no_crc: AtomicBool,
    /// The header's data CRC (meaningless while `no_crc`).
    crc: AtomicU32,
    /// The data was checked against `crc`, or written, since the pool was opened: a
    /// frame found at a restart is checked before it is first read.
    checked: AtomicBool,
    /// Held by guards that access the page in place (shared to read, exclusive to
    /// write; `frame::in_place`) and, exclusive for an instant, by whoever claims the
    /// page's table entry away from `Nvm(n)`, so that no in-place guard outlives the
    /// page's stay in this frame.
    latch: Latch,
    /// Bumped by every in-place writer and every claim, before it releases the latch:
    /// optimistic in-place readers validate against it (seqlock).
    version: AtomicU64,
    /// The header's recovery LSN, while dirty.
    rec_lsn: AtomicU64,
}

/// A pool found again at restart ([`NvmPool::reopen`]).
pub struct Reopened {
    /// The pool, its frames' metadata rebuilt from their headers.
    pub pool: NvmPool,
    /// Frames holding a page: frame and header.
    pub pages: Vec<(u32, FrameHeader)>,
    /// Frames cleared, and why.
    pub cleared: Vec<(u32, String)>,
    /// The oldest change a cleared frame held that SSD does not (`Some(0)`: unknown, as
    /// far back as the log goes; `None`: no cleared frame needs the log before the
    /// last checkpoint's redo point).
    pub log_needed_from: Option<u64>,
    /// Time to read and check the headers.
    pub scan_secs: f64,
}

/// Page frames in an NVM region.
pub struct NvmPool {
    region: NvmRegion,
    page_size: usize,
    data_offset: u64,
    metas: Box<[NvmFrameMeta]>,
    free: Mutex<Vec<u32>>,
    hand: AtomicUsize,
    verify: NvmVerify,
    /// Whole pages move with `pread`/`pwrite` on the file instead of `memcpy` on the
    /// mapping (the `mmap-read` architecture's file I/O).
    file_io: AtomicBool,
    /// Charges reads made in place (set when the policy may read in place).
    cpu_cache: std::sync::OnceLock<CpuCacheModel>,
    /// Lines after an in-place read that are prefetched (0: none); set before use.
    prefetch_lines: std::sync::atomic::AtomicU32,
    /// The pool is a volatile cache, formatted on every open ([`set_volatile`](Self::set_volatile)):
    /// no header is ever read after a restart, so freeing a frame writes nothing and
    /// rewriting a frame sets no in-update flag.
    volatile: bool,
    /// The log whose end LSN stamps every header written (`written_lsn`); unset: 0.
    lsn_clock: std::sync::OnceLock<std::sync::Arc<dyn crate::wal::LogForce>>,
    /// Page-sized buffers of in-place writers (`frame::in_place`), kept for reuse.
    shadows: Mutex<Vec<Box<[u8]>>>,
}

impl NvmPool {
    /// Formats `region` as an empty pool of `page_size` frames.
    ///
    /// # Errors
    /// `Config` if the region holds no frame; device errors while writing headers.
    pub fn format(region: NvmRegion, page_size: usize, db_id: u64, verify: NvmVerify) -> Result<NvmPool, BufferError> {
        let size = region.size_bytes();
        // Each frame costs its page plus a header; the header area is rounded up.
        let per_frame = (page_size + HEADER_BYTES) as u64;
        let mut count = size.saturating_sub(HEADERS_OFFSET) / per_frame;
        let data_offset = |n: u64| (HEADERS_OFFSET + n * HEADER_BYTES as u64).next_multiple_of(IO_ALIGN_BYTES as u64);
        while count > 0 && data_offset(count) + count * page_size as u64 > size {
            count -= 1;
        }
        if count == 0 {
            return Err(BufferError::Config {
                what: format!(
                    "the NVM region of {} holds no frame of {page_size} bytes plus headers",
                    crate::ByteSize(size)
                ),
            });
        }
        let count = count.min(u32::MAX as u64 - 1) as usize;
        let data_offset = data_offset(count as u64);
        let mut region = region;
        // 1. Clear every frame header: nothing from an earlier use of the file is valid.
        let zeros = vec![0u8; (data_offset - HEADERS_OFFSET) as usize];
        region.write_lines(HEADERS_OFFSET, &zeros).map_err(dev)?;
        region.persist(HEADERS_OFFSET, zeros.len() as u64).map_err(dev)?;
        // 2. Then the pool header.
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(page_size as u32).to_le_bytes());
        h[16..24].copy_from_slice(&(count as u64).to_le_bytes());
        h[24..32].copy_from_slice(&db_id.to_le_bytes());
        let crc = crc32c::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        region.write_lines(0, &h).map_err(dev)?;
        region.persist(0, HEADER_BYTES as u64).map_err(dev)?;
        let metas = (0..count)
            .map(|_| NvmFrameMeta {
                pid: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                no_crc: AtomicBool::new(false),
                crc: AtomicU32::new(0),
                checked: AtomicBool::new(true),
                latch: Latch::new(),
                version: AtomicU64::new(0),
                rec_lsn: AtomicU64::new(0),
            })
            .collect();
        // Hand frames out from index 0 upwards.
        let free = Mutex::new((0..count as u32).rev().collect());
        Ok(NvmPool {
            region,
            page_size,
            data_offset,
            metas,
            free,
            hand: AtomicUsize::new(0),
            verify,
            file_io: AtomicBool::new(false),
            cpu_cache: std::sync::OnceLock::new(),
            prefetch_lines: std::sync::atomic::AtomicU32::new(0),
            volatile: false,
            lsn_clock: std::sync::OnceLock::new(),
            shadows: Mutex::new(Vec::new()),
        })
    }

    /// Opens a pool that `format` made earlier, for a restart: checks the pool header
    /// against this region, page size and database, then reads every frame header.
    /// A valid frame keeps its page (listed in the result, for the page table); a frame
    /// marked IN_UPDATE (a crash during an in-place write) or whose header fails its
    /// CRC is cleared and reported. With `ssd` (the pages have a copy there to rebuild
    /// from) so is one whose data fails its data CRC when `verify` checks it here: the
    /// dirty frames (`Cheap`: their pages are rebuilt from SSD and the log, which only a
    /// restart's redo can do), every frame (`Every`, which also clears frames without a
    /// data CRC). The others are checked before their first read, and without SSD a
    /// frame that fails is kept, so that reading its page reports it. Returns
    /// `Err(reason)` when the pool is not one to reuse (another database, another page
    /// size, no pool at all): the caller formats.
    ///
    /// # Errors
    /// Device errors, inside `Ok`.
    pub fn reopen(
        region: NvmRegion,
        page_size: usize,
        db_id: u64,
        verify: NvmVerify,
        ssd: bool,
    ) -> Result<Result<Reopened, (NvmRegion, String)>, BufferError> {
        let start = std::time::Instant::now();
        let mut h = [0u8; HEADER_BYTES];
        region.read_lines(0, &mut h).map_err(dev)?;
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let why = if &h[0..8] != MAGIC {
            Some("it holds no NVM pool".to_string())
        } else if u32_at(60) != crc32c::crc32c(&h[..60]) {
            Some("its pool header fails its CRC".into())
        } else if u32_at(8) != VERSION || u32_at(12) as usize != page_size {
            Some(format!("its pool is version {} with {}-byte pages", u32_at(8), u32_at(12)))
        } else if u64_at(24) != db_id {
            Some(format!("its pool belongs to database {:#x}, not {db_id:#x}", u64_at(24)))
        } else {
            None
        };
        if let Some(why) = why {
            return Ok(Err((region, why)));
        }
        let count = u64_at(16) as usize;
        let data_offset = (HEADERS_OFFSET + count as u64 * HEADER_BYTES as u64).next_multiple_of(IO_ALIGN_BYTES as u64);
        if count == 0 || count >= u32::MAX as usize || data_offset + (count * page_size) as u64 > region.size_bytes() {
            return Ok(Err((region, format!("its pool header counts {count} frames, which do not fit the region"))));
        }
        let mut headers = vec![0u8; count * HEADER_BYTES];
        region.copy_out(HEADERS_OFFSET, &mut headers).map_err(dev)?;
        let mut metas = Vec::with_capacity(count);
        let mut pages = Vec::new();
        let mut cleared = Vec::new();
        let mut log_needed_from = None;
        for (n, b) in headers.chunks_exact(HEADER_BYTES).enumerate() {
            let meta = NvmFrameMeta {
                pid: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                no_crc: AtomicBool::new(false),
                crc: AtomicU32::new(0),
                checked: AtomicBool::new(true),
                latch: Latch::new(),
                version: AtomicU64::new(0),
                rec_lsn: AtomicU64::new(0),
            };
            match FrameHeader::decode(b.try_into().expect("64 bytes")) {
                Ok(Some(fh)) if fh.flags & FLAG_VALID != 0 && fh.flags & FLAG_IN_UPDATE == 0 => {
                    meta.pid.store(fh.pid.0, Ordering::Relaxed);
                    meta.dirty.store(fh.flags & FLAG_DIRTY != 0, Ordering::Relaxed);
                    meta.no_crc.store(fh.flags & FLAG_NO_CRC != 0, Ordering::Relaxed);
                    meta.crc.store(fh.data_crc, Ordering::Relaxed);
                    meta.checked.store(!verify.any(), Ordering::Relaxed);
                    meta.rec_lsn.store(fh.rec_lsn, Ordering::Relaxed);
                    pages.push((n as u32, fh));
                }
                Ok(None) => {}
                Ok(Some(fh)) => {
                    // A dirty frame's page is rebuilt from SSD with the changes since its
                    // recovery LSN (0: unknown, the whole log kept); a clean one's SSD
                    // copy is the frame as it was, and its changes are newer than the
                    // last checkpoint (which waited for in-place writers).
                    if fh.flags & FLAG_DIRTY != 0 {
                        let from = if fh.rec_lsn == 0 { 0 } else { fh.rec_lsn };
                        log_needed_from = Some(log_needed_from.map_or(from, |l: u64| l.min(from)));
                    }
                    cleared.push((n as u32, format!("{} was being written in place (IN_UPDATE)", fh.pid)));
                }
                Err(e) => {
                    log_needed_from = Some(0);
                    cleared.push((n as u32, format!("unreadable header: {e}")));
                }
            }
            metas.push(meta);
        }
        let pool = NvmPool {
            region,
            page_size,
            data_offset,
            metas: metas.into_boxed_slice(),
            free: Mutex::new(Vec::new()),
            hand: AtomicUsize::new(0),
            verify,
            file_io: AtomicBool::new(false),
            cpu_cache: std::sync::OnceLock::new(),
            prefetch_lines: std::sync::atomic::AtomicU32::new(0),
            volatile: false,
            lsn_clock: std::sync::OnceLock::new(),
            shadows: Mutex::new(Vec::new()),
        };
        // The data checks `verify` makes here (see above).
        let mut kept = Vec::with_capacity(pages.len());
        for (n, fh) in pages {
            let dirty = fh.flags & FLAG_DIRTY != 0;
            let why = if !ssd || !(verify.every() || (verify.any() && dirty)) {
                None
            } else if fh.flags & FLAG_NO_CRC != 0 {
                verify.every().then(|| format!("{} has no data CRC to check", fh.pid))
            } else {
                match pool.check_page(n, fh.pid) {
                    Ok(()) => None,
                    Err(BufferError::Corrupted { detail, .. }) => {
                        Some(format!("{} fails its data CRC: {detail}", fh.pid))
                    }
                    Err(e) => return Err(e),
                }
            };
            let Some(why) = why else {
                kept.push((n, fh));
                continue;
            };
            // As a frame caught mid-write: a dirty one's page is rebuilt from SSD with
            // the changes since its recovery LSN; a clean one's SSD copy is the page.
            if dirty {
                log_needed_from = Some(log_needed_from.map_or(fh.rec_lsn, |l: u64| l.min(fh.rec_lsn)));
            }
            let m = &pool.metas[n as usize];
            m.pid.store(NO_PAGE, Ordering::Relaxed);
            m.dirty.store(false, Ordering::Relaxed);
            m.no_crc.store(false, Ordering::Relaxed);
            m.checked.store(true, Ordering::Relaxed);
            m.rec_lsn.store(0, Ordering::Relaxed);
            cleared.push((n, why));
        }
        let pages = kept;
        for (n, _) in &cleared {
            pool.write_header_bytes(*n, &[0u8; HEADER_BYTES])?;
        }
        let used: std::collections::HashSet<u32> = pages.iter().map(|(n, _)| *n).collect();
        *pool.free.lock() = (0..count as u32).rev().filter(|n| !used.contains(n)).collect();
        let scan_secs = start.elapsed().as_secs_f64();
        Ok(Ok(Reopened { pool, pages, cleared, log_needed_from, scan_secs }))
    }

    /// The oldest change any dirty frame holds that SSD does not: the least recovery LSN
    /// of the dirty frames (a frame whose bound is unknown counts as LSN 1, keeping the
    /// whole log); `None` if no frame is dirty. Racy against concurrent writers, which
    /// only add changes newer than the caller's bound (the checkpoint takes it after
    /// choosing its redo point).
    pub fn oldest_dirty_rec_lsn(&self) -> Option<u64> {
        self.metas
            .iter()
            .filter(|m| m.pid.load(Ordering::Relaxed) != NO_PAGE && m.dirty.load(Ordering::Relaxed))
            .map(|m| m.rec_lsn.load(Ordering::Relaxed).max(1))
            .min()
    }

    /// Frees frame `n` at restart (its header named a page the database does not have):
    /// clears the header durably and puts the frame on the free list.
    ///
    /// # Errors
    /// Device errors.
    pub fn discard(&self, n: u32) -> Result<(), BufferError> {
        self.release(n)
    }

    /// Number of frames, fixed when the pool was formatted.
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    /// True if the pool has no frame (never: `format` and `reopen` refuse zero frames).
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Where the frames start in the region: below are the pool and frame headers.
    pub fn frames_offset(&self) -> u64 {
        self.data_offset
    }

    /// The NVM region the pool lives in (its device counters, its file).
    pub fn region(&self) -> &NvmRegion {
        &self.region
    }

    /// Frames on the free list now (racy while others run).
    pub fn free_frames(&self) -> usize {
        self.free.lock().len()
    }

    fn header_offset(&self, n: u32) -> u64 {
        HEADERS_OFFSET + n as u64 * HEADER_BYTES as u64
    }

    fn data_offset(&self, n: u32) -> u64 {
        self.data_offset + n as u64 * self.page_size as u64
    }

    /// The page frame `n` holds, if any (racy unless the caller owns the frame).
    #[inline]
    pub fn pid(&self, n: u32) -> Option<PageId> {
        let p = self.metas[n as usize].pid.load(Ordering::Relaxed);
        (p != NO_PAGE).then_some(PageId(p))
    }

    /// Frame `n`'s recovery LSN while dirty (0: unknown; racy unless the caller owns
    /// the frame).
    pub fn rec_lsn(&self, n: u32) -> u64 {
        self.metas[n as usize].rec_lsn.load(Ordering::Relaxed)
    }

    /// Frame `n` was checked against its data CRC, or written, since the pool was opened.
    #[inline]
    pub fn is_checked(&self, n: u32) -> bool {
        self.metas[n as usize].checked.load(Ordering::Relaxed)
    }

    /// Frame `n` holds a copy newer than SSD's (its header's DIRTY flag; racy unless the
    /// caller owns the frame).
    pub fn is_dirty(&self, n: u32) -> bool {
        self.metas[n as usize].dirty.load(Ordering::Relaxed)
    }

    /// Frame `n`'s reference bit, for the NVM clock's second chance (racy).
    pub fn is_referenced(&self, n: u32) -> bool {
        self.metas[n as usize].referenced.load(Ordering::Relaxed)
    }

    /// Sets frame `n`'s reference bit, writing only when it is clear.
    #[inline]
    pub fn touch(&self, n: u32) {
        let r = &self.metas[n as usize].referenced;
        if !r.load(Ordering::Relaxed) {
            r.store(true, Ordering::Relaxed);
        }
    }

    /// Clears frame `n`'s reference bit (the clock hand passing it).
    pub fn clear_referenced(&self, n: u32) {
        self.metas[n as usize].referenced.store(false, Ordering::Relaxed);
    }

    /// Runs the pool as a volatile cache (the `nvcache` policy's clean copies): the
    /// caller formats it on every open, so its frame headers matter only while it runs.
    /// [`release`](Self::release) and [`clear_owner`](Self::clear_owner) then forget the
    /// frame's page in DRAM metadata without writing its header, and
    /// [`write_page`](Self::write_page) over a frame's own page sets no in-update flag
    /// first: both exist for a restart that reuses the pool, and none does.
    pub fn set_volatile(&mut self) {
        self.volatile = true;
    }

    /// Moves whole pages with `pread`/`pwrite` on the file (true) or `memcpy` on the
    /// mapping (false, the default).
    pub fn set_file_io(&self, on: bool) {
        self.file_io.store(on, Ordering::Relaxed);
    }

    /// The in-place latch of frame `n` (see [`NvmFrameMeta`]).
    #[inline]
    pub fn latch(&self, n: u32) -> &Latch {
        &self.metas[n as usize].latch
    }

    /// Frame `n`'s in-place version (see [`NvmFrameMeta`]).
    #[inline]
    pub fn version(&self, n: u32) -> u64 {
        self.metas[n as usize].version.load(Ordering::Acquire)
    }

    /// Bumps frame `n`'s version; the caller holds its latch exclusive.
    #[inline]
    pub fn bump_version(&self, n: u32) {
        debug_assert!(self.latch(n).is_exclusive());
        self.metas[n as usize].version.fetch_add(1, Ordering::Release);
    }

    /// Where frame `n`'s page starts in the mapping, for in-place access by a guard
    /// that holds [`latch`](Self::latch)`(n)`.
    #[inline]
    pub fn page_ptr(&self, n: u32) -> std::ptr::NonNull<u8> {
        debug_assert!((n as usize) < self.metas.len());
        // SAFETY: `data_offset(n) + page_size` lies inside the mapping (checked when the
        // pool was formatted or reopened), so the pointer is in bounds and not null.
        unsafe { std::ptr::NonNull::new_unchecked(self.region.base_ptr().add(self.data_offset(n) as usize)) }
    }

    /// Reads made in place are charged through a model of a CPU cache of `bytes`
    /// (`frame::cpu_cache`); without one, every such read is charged. Set once.
    pub fn set_cpu_cache_model(&self, bytes: u64) {
        let _ = self.cpu_cache.set(CpuCacheModel::new(bytes));
    }

    /// Line-grained reads made in place also bring in the next `lines` lines of the
    /// page (`frame::in_place`'s software prefetch; 0: off). Set at start-up.
    pub fn set_prefetch_lines(&self, lines: u32) {
        debug_assert!(lines <= crate::limits::PREFETCH_LINES_MAX);
        self.prefetch_lines.store(lines, Ordering::Relaxed);
    }

    /// Bytes of a frame's page.
    #[inline]
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Lines prefetched after a line-grained in-place read.
    #[inline]
    pub fn prefetch_lines(&self) -> u32 {
        self.prefetch_lines.load(Ordering::Relaxed)
    }

    /// Charges a read made in place of bytes `off..off + len` of frame `n`.
    #[inline]
    pub fn charge_in_place(&self, n: u32, off: usize, len: usize) {
        let at = self.data_offset(n) + off as u64;
        match self.cpu_cache.get() {
            Some(m) => m.charge(&self.region, at, len as u64),
            None => self.region.charge_read(at, len as u64),
        }
    }

    /// Charges a read made in place of bytes `off..off + len` of frame `n` followed by a
    /// software prefetch of the `ahead` bytes after it (`CpuCacheModel::charge_with_prefetch`;
    /// without a model, only the read is charged).
    #[inline]
    pub fn charge_in_place_prefetched(&self, n: u32, off: usize, len: usize, ahead: usize) {
        let at = self.data_offset(n) + off as u64;
        match self.cpu_cache.get() {
            Some(m) => m.charge_with_prefetch(&self.region, at, len as u64, ahead as u64),
            None => self.region.charge_read(at, len as u64),
        }
    }

    /// Charges the loads of a binary search made in place in frame `n`'s node.
    pub fn charge_search_in_place(&self, n: u32) {
        let at = self.data_offset(n);
        match self.cpu_cache.get() {
            Some(m) => m.charge_search(&self.region, at, self.page_size),
            None => {
                let lines = super::frame::cpu_cache::search_lines(self.page_size) as u64;
                self.region.charge_read(at, lines * CACHE_LINE_BYTES as u64);
            }
        }
    }

    /// A page-sized buffer for an in-place writer's staged lines: reused, so its bytes
    /// are a former writer's (the writer tracks which lines it loaded).
    pub fn take_shadow(&self) -> Box<[u8]> {
        self.shadows.lock().pop().unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice())
    }

    /// Gives a buffer of [`take_shadow`](Self::take_shadow) back.
    pub fn give_shadow(&self, b: Box<[u8]>) {
        debug_assert_eq!(b.len(), self.page_size);
        let mut s = self.shadows.lock();
        if s.len() < SHADOWS_KEPT_MAX {
            s.push(b);
        }
    }

    /// Takes a free frame, if any.
    pub fn pop_free(&self) -> Option<u32> {
        self.free.lock().pop()
    }

    /// The next frame under the clock hand.
    pub fn advance_hand(&self) -> u32 {
        (self.hand.fetch_add(1, Ordering::Relaxed) % self.metas.len()) as u32
    }

    /// Copies frame `n` into `dst` (one page), checking its CRC unless verification is
    /// off.
    ///
    /// # Errors
    /// Device errors; `Corrupted` on a header or data CRC mismatch or a header that
    /// names another page.
    pub fn read_page(&self, n: u32, expect: PageId, dst: &mut [u8]) -> Result<(), BufferError> {
        debug_assert_eq!(dst.len(), self.page_size);
        debug_assert_eq!(self.pid(n), Some(expect), "reading NVM frame {n} that does not hold {expect}");
        if self.file_io.load(Ordering::Relaxed) {
            self.region.pread_out(self.data_offset(n), dst).map_err(dev)?;
        } else {
            self.region.copy_out(self.data_offset(n), dst).map_err(dev)?;
        }
        if self.verify.any() {
            let h = self.header(n)?;
            let Some(h) = h else { return Err(self.corrupted(n, expect, "the frame header is empty".into())) };
            if h.pid != expect || h.flags & FLAG_VALID == 0 {
                return Err(self.corrupted(
                    n,
                    expect,
                    format!("the frame header names {} with flags {:#x}", h.pid, h.flags),
                ));
            }
            let crc = crc32c::crc32c(dst);
            if h.flags & FLAG_NO_CRC == 0 && crc != h.data_crc {
                return Err(self.corrupted(
                    n,
                    expect,
                    format!("data CRC-32C {crc:#010x}, header says {:#010x}", h.data_crc),
                ));
            }
            self.metas[n as usize].checked.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes at page offset `off` of frame `n` (whole lines of a
    /// page loaded cache-line-grained, or staged by an in-place writer), after
    /// [`check_before_read`](Self::check_before_read).
    ///
    /// # Errors
    /// Device errors; `Corrupted` if the page fails its check.
    #[inline]
    pub fn read_lines(&self, n: u32, pid: PageId, off: usize, dst: &mut [u8]) -> Result<(), BufferError> {
        debug_assert!(off + dst.len() <= self.page_size);
        self.check_before_read(n, pid)?;
        self.region.read_lines(self.data_offset(n) + off as u64, dst).map_err(dev)
    }

    /// Before a read of part of frame `n`'s page or a read in place: checks the whole
    /// page against its data CRC ([`check_page`](Self::check_page)) if the pool's
    /// [`NvmVerify`] asks for it — every time in `Every` mode, else once, the first
    /// time the frame is read after a restart. The caller owns the frame or holds its
    /// in-place latch.
    ///
    /// # Errors
    /// `Corrupted` naming the file, frame and page.
    #[inline]
    pub fn check_before_read(&self, n: u32, pid: PageId) -> Result<(), BufferError> {
        let due = match self.verify {
            NvmVerify::Off => false,
            NvmVerify::Cheap => !self.metas[n as usize].checked.load(Ordering::Relaxed),
            NvmVerify::Every => true,
        };
        if due { self.check_page(n, pid) } else { Ok(()) }
    }

    /// Checks frame `n`'s page, read in place (charged as a read of the page), against
    /// its data CRC; a frame without one (`FLAG_NO_CRC`) passes. The caller owns the
    /// frame or holds its in-place latch.
    ///
    /// # Errors
    /// `Corrupted` naming the file, frame and page.
    #[cold]
    pub fn check_page(&self, n: u32, pid: PageId) -> Result<(), BufferError> {
        let m = &self.metas[n as usize];
        if m.no_crc.load(Ordering::Relaxed) {
            m.checked.store(true, Ordering::Relaxed);
            return Ok(());
        }
        self.region.charge_read(self.data_offset(n), self.page_size as u64);
        // SAFETY: the page lies inside the mapping; the caller keeps writers out (it
        // owns the frame or holds its in-place latch).
        let bytes = unsafe { std::slice::from_raw_parts(self.page_ptr(n).as_ptr(), self.page_size) };
        let (crc, want) = (crc32c::crc32c(bytes), m.crc.load(Ordering::Relaxed));
        if crc != want {
            return Err(self.corrupted(n, pid, format!("data CRC-32C {crc:#010x}, header says {want:#010x}")));
        }
        m.checked.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// What [`NvmVerify`] this pool checks with.
    pub fn verify(&self) -> NvmVerify {
        self.verify
    }

    fn corrupted(&self, n: u32, pid: PageId, detail: String) -> BufferError {
        BufferError::Corrupted {
            pid,
            location: format!("NVM frame {n} of {}", self.region.info().path.display()),
            detail,
        }
    }

    /// Writes the given runs of lines of page `pid` into frame `n` durably, then marks
    /// the header dirty (newer than SSD) with the data CRC updated for the change.
    /// `runs` are `(page offset, bytes)`; `old`, if given, is a page-sized buffer
    /// holding what the runs' lines hold in the frame now (an in-place writer's staged
    /// copy), else they are read from the frame first. The caller owns the frame.
    ///
    /// # Errors
    /// Device errors.
    pub fn write_lines(
        &self,
        n: u32,
        pid: PageId,
        runs: &[(usize, &[u8])],
        old: Option<&[u8]>,
        page_lsn: u64,
    ) -> Result<(), BufferError> {
        debug_assert_eq!(self.pid(n), Some(pid));
        debug_assert!(old.is_none_or(|o| o.len() == self.page_size));
        let base = self.data_offset(n);
        let m = &self.metas[n as usize];
        // 1. The lines' bytes before the change, for the CRC (not needed for a frame
        //    that has none: its CRC is computed from the whole page below).
        let mut read_old = Vec::new();
        if old.is_none() && !m.no_crc.load(Ordering::Relaxed) {
            read_old.resize(runs.iter().map(|(_, b)| b.len()).sum(), 0);
            let mut at = 0;
            for (off, b) in runs {
                self.region.read_lines(base + *off as u64, &mut read_old[at..at + b.len()]).map_err(dev)?;
                at += b.len();
            }
        }
        let before = self.begin_update(n, pid)?;
        // A clean frame becomes newer than SSD with this change, whose LSN is past the
        // page LSN SSD holds and past the log's end when the frame was last written
        // clean (every change since was logged after that: under the latch the
        // writer held, which the write that made the frame clean waited for); a dirty
        // one keeps its older bound. The bound is the later of the two itself: recovery
        // may start its scan there, so it must be a record's start (the page LSN names
        // a record on SSD already, skipped by page LSN; the log's end was the next
        // record's start). The page LSN alone could be long gone from the log: a page
        // last changed before a checkpoint that deleted those segments, and changed in
        // place after it, then caught mid-write by a crash, made recovery ask for a log
        // no longer there (found by the crash campaign on `nvsql`).
        let rec_lsn = match before {
            Some(h) if h.flags & FLAG_DIRTY != 0 => h.rec_lsn,
            Some(h) => h.page_lsn.max(h.written_lsn),
            None => 0,
        };
        // 2. The new CRC: updated by the runs' change, or (a frame without one) computed
        //    over the whole page once written.
        let updated = match before {
            Some(h) if h.flags & FLAG_NO_CRC == 0 && (old.is_some() || !read_old.is_empty()) => {
                let mut at = 0;
                let olds = runs.iter().map(|(off, b)| match old {
                    Some(o) => &o[*off..*off + b.len()],
                    None => {
                        at += b.len();
                        &read_old[at - b.len()..at]
                    }
                });
                Some(crc_after_runs(
                    h.data_crc,
                    self.page_size,
                    runs.iter().zip(olds).map(|((off, new), old)| (*off, old, *new)),
                ))
            }
            _ => None,
        };
        for (off, bytes) in runs {
            debug_assert!(off + bytes.len() <= self.page_size);
            // SAFETY: frame `n`'s data is written only by its owner, the caller.
            unsafe { self.region.write_lines_shared(base + *off as u64, bytes) }.map_err(dev)?;
            self.region.persist(base + *off as u64, bytes.len() as u64).map_err(dev)?;
        }
        let data_crc = match updated {
            Some(c) => c,
            None => {
                let mut page = vec![0u8; self.page_size];
                self.region.copy_out(base, &mut page).map_err(dev)?;
                crc32c::crc32c(&page)
            }
        };
        let flags = FLAG_VALID | FLAG_DIRTY;
        let h = FrameHeader { pid, page_lsn, flags, data_crc, rec_lsn, written_lsn: self.lsn_now() };
        self.write_header(n, &h)?;
        m.rec_lsn.store(rec_lsn, Ordering::Relaxed);
        m.dirty.store(true, Ordering::Relaxed);
        m.crc.store(data_crc, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Crash tests: what a power loss in the middle of [`write_lines`](Self::write_lines)
    /// leaves — the header marked IN_UPDATE (durably, by the same step `write_lines`
    /// takes first) and `bytes` at page offset `off` persisted, the rest of the change
    /// and the header's completion never made. The frame must not be used afterwards
    /// (the caller abandons the process, as a crash would); its owner must not be
    /// accessing it.
    ///
    /// # Errors
    /// Device errors.
    #[doc(hidden)]
    pub fn crash_inside_write_lines(&self, n: u32, pid: PageId, off: usize, bytes: &[u8]) -> Result<(), BufferError> {
        debug_assert!(off + bytes.len() <= self.page_size && bytes.len().is_multiple_of(CACHE_LINE_BYTES));
        self.begin_update(n, pid)?;
        let at = self.data_offset(n) + off as u64;
        // SAFETY: the caller owns frame `n` and stops using the pool after this call.
        unsafe { self.region.write_lines_shared(at, bytes) }.map_err(dev)?;
        self.region.persist(at, bytes.len() as u64).map_err(dev)
    }

    /// Before frame `n`'s data is overwritten in place for the page it holds: marks the
    /// header IN_UPDATE (durably), so that a crash in the middle leaves a frame that a
    /// restart discards instead of a valid header over torn bytes. A frame being
    /// filled for a new page has an empty header already.
    /// Returns the header as it was before (`None` for a frame filled for a new page).
    fn begin_update(&self, n: u32, pid: PageId) -> Result<Option<FrameHeader>, BufferError> {
        if self.metas[n as usize].pid.load(Ordering::Relaxed) != pid.0 {
            return Ok(None);
        }
        let Some(before) = self.header(n)? else { return Ok(None) };
        let mut h = before;
        h.flags |= FLAG_IN_UPDATE;
        self.write_header(n, &h)?;
        Ok(Some(before))
    }

    /// Reads frame `n`'s persistent header.
    ///
    /// # Errors
    /// Device errors; `Corrupted` on a header CRC mismatch.
    pub fn header(&self, n: u32) -> Result<Option<FrameHeader>, BufferError> {
        let mut b = [0u8; HEADER_BYTES];
        self.region.read_lines(self.header_offset(n), &mut b).map_err(dev)?;
        FrameHeader::decode(&b).map_err(|detail| BufferError::Corrupted {
            pid: PageId(self.metas[n as usize].pid.load(Ordering::Relaxed)),
            location: format!("NVM frame header {n} of {}", self.region.info().path.display()),
            detail,
        })
    }

    /// Writes page `pid` into frame `n` durably: data, then header.
    ///
    /// The caller owns frame `n` (see the module's concurrency rules).
    ///
    /// # Errors
    /// Device errors.
    pub fn write_page(&self, n: u32, pid: PageId, src: &[u8], dirty: bool, page_lsn: u64) -> Result<(), BufferError> {
        self.write_page_rec(n, pid, src, dirty, page_lsn, 0)
    }

    /// [`write_page`](Self::write_page) with the recovery LSN of a dirty page: a lower
    /// bound of its oldest change not on SSD (0: unknown). A frame that held the page
    /// dirty already keeps the older of its bound and this one.
    ///
    /// # Errors
    /// Device errors.
    pub fn write_page_rec(
        &self,
        n: u32,
        pid: PageId,
        src: &[u8],
        dirty: bool,
        page_lsn: u64,
        rec_lsn: u64,
    ) -> Result<(), BufferError> {
        debug_assert_eq!(src.len(), self.page_size);
        let off = self.data_offset(n);
        let before = if self.volatile { None } else { self.begin_update(n, pid)? };
        debug_assert!(!(self.volatile && dirty), "{pid}: a dirty page in volatile NVM frame {n}");
        let rec_lsn = match before {
            _ if !dirty => 0,
            Some(h) if h.flags & FLAG_DIRTY != 0 && (h.rec_lsn == 0 || rec_lsn == 0) => 0,
            Some(h) if h.flags & FLAG_DIRTY != 0 => h.rec_lsn.min(rec_lsn),
            _ => rec_lsn,
        };
        if self.file_io.load(Ordering::Relaxed) {
            // SAFETY: as below.
            unsafe { self.region.pwrite_in_shared(off, src) }.map_err(dev)?;
        } else {
            // SAFETY: frame `n`'s data range is written only by its owner, which the
            // caller is; no reader copies it out while the owner holds it.
            unsafe { self.region.copy_in_shared(off, src) }.map_err(dev)?;
        }
        self.region.persist(off, src.len() as u64).map_err(dev)?;
        let flags = FLAG_VALID | if dirty { FLAG_DIRTY } else { 0 };
        let data_crc = crc32c::crc32c(src);
        let h = FrameHeader { pid, page_lsn, flags, data_crc, rec_lsn, written_lsn: self.lsn_now() };
        self.write_header(n, &h)?;
        let m = &self.metas[n as usize];
        m.crc.store(data_crc, Ordering::Relaxed);
        m.checked.store(true, Ordering::Relaxed);
        m.rec_lsn.store(rec_lsn, Ordering::Relaxed);
        m.pid.store(pid.0, Ordering::Relaxed);
        m.dirty.store(dirty, Ordering::Relaxed);
        m.referenced.store(true, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Clears frame `n`'s dirty flag, durably (its page was written to SSD). The caller
    /// owns the frame.
    ///
    /// # Errors
    /// Device errors; `Corrupted` if the header does not decode.
    pub fn mark_clean(&self, n: u32) -> Result<(), BufferError> {
        let Some(mut h) = self.header(n)? else {
            return Err(BufferError::Corrupted {
                pid: PageId(self.metas[n as usize].pid.load(Ordering::Relaxed)),
                location: format!("NVM frame header {n} of {}", self.region.info().path.display()),
                detail: "the header of a frame in use is empty".into(),
            });
        };
        h.flags &= !FLAG_DIRTY;
        h.rec_lsn = 0;
        // After the page's SSD write, at or past its flush LSN: the frame stays trusted.
        h.written_lsn = self.lsn_now();
        self.write_header(n, &h)?;
        self.metas[n as usize].dirty.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Marks frame `n` empty, durably (in a volatile pool, in DRAM metadata only), and
    /// returns it to the free list.
    ///
    /// # Errors
    /// Device errors (the frame then stays owned by the caller's page).
    pub fn release(&self, n: u32) -> Result<(), BufferError> {
        if !self.volatile {
            self.write_header_bytes(n, &[0u8; HEADER_BYTES])?;
        }
        self.detach(n);
        Ok(())
    }

    /// Forgets frame `n`'s page in DRAM metadata and frees it without touching its
    /// persistent header: for a frame whose header is empty already (popped from the
    /// free list, or cleared) after a write into it failed or was not needed.
    pub fn detach(&self, n: u32) {
        let m = &self.metas[n as usize];
        m.pid.store(NO_PAGE, Ordering::Relaxed);
        m.dirty.store(false, Ordering::Relaxed);
        m.referenced.store(false, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        self.free.lock().push(n);
    }

    /// Takes frame `n` out of use by its page without freeing it (the caller reuses it
    /// at once for another page). The header is cleared durably first: a restart must
    /// never take the frame's old bytes for its old page, whose copy on SSD may later
    /// become newer. (A volatile pool has no restart: nothing is written.)
    ///
    /// # Errors
    /// Device errors (the frame then still holds its page).
    pub fn clear_owner(&self, n: u32) -> Result<(), BufferError> {
        if !self.volatile {
            self.write_header_bytes(n, &[0u8; HEADER_BYTES])?;
        }
        let m = &self.metas[n as usize];
        m.pid.store(NO_PAGE, Ordering::Relaxed);
        m.dirty.store(false, Ordering::Relaxed);
        m.no_crc.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Stamps every header written from now on with `log`'s end LSN (see the module
    /// doc). Set once, before the pool's frames are written for the database's log:
    /// at open, before redo.
    pub fn set_lsn_clock(&self, log: std::sync::Arc<dyn crate::wal::LogForce>) {
        // A second call (a log attached again) keeps the first clock: both are the log's.
        let _ = self.lsn_clock.set(log);
    }

    /// The log's end LSN now (0 without a log).
    fn lsn_now(&self) -> u64 {
        self.lsn_clock.get().map_or(0, |l| l.end_lsn())
    }

    fn write_header(&self, n: u32, h: &FrameHeader) -> Result<(), BufferError> {
        self.write_header_bytes(n, &h.encode())
    }

    fn write_header_bytes(&self, n: u32, b: &[u8; HEADER_BYTES]) -> Result<(), BufferError> {
        let off = self.header_offset(n);
        // SAFETY: frame `n`'s header line is written only by the frame's owner.
        unsafe { self.region.write_lines_shared(off, b) }.map_err(dev)?;
        self.region.persist(off, HEADER_BYTES as u64).map_err(dev)
    }
}

fn dev(e: DeviceError) -> BufferError {
    BufferError::Device(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ByteSize;
    use crate::device::NvmConfig;

    fn pool(dir: &tempfile::TempDir, bytes: u64) -> NvmPool {
        let region = NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(bytes))).unwrap();
        NvmPool::format(region, 4096, 7, NvmVerify::Cheap).unwrap()
    }

    #[test]
    fn layout_fits_the_region() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(&dir, 1 << 20);
        // (1 MiB - 4 KiB) / (4096 + 64) = 251, less the rounding of the header area.
        assert!(p.len() >= 245 && p.len() <= 251, "{}", p.len());
        assert!(p.data_offset(p.len() as u32 - 1) + 4096 <= 1 << 20);
        assert!(p.data_offset(0) >= HEADERS_OFFSET + p.len() as u64 * 64);
    }

    #[test]
    fn a_volatile_pool_frees_frames_without_writing_nvm() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = pool(&dir, 1 << 20);
        p.set_volatile();
        let lines = |p: &NvmPool| p.region.core().stats().snapshot().write_lines;
        let n = p.pop_free().unwrap();
        let page = vec![5u8; 4096];
        let before = lines(&p);
        p.write_page(n, PageId(3), &page, false, 0).unwrap();
        // Data and header, nothing more.
        assert_eq!(lines(&p) - before, 4096 / 64 + 1);
        // Rewriting its own page sets no in-update flag first.
        let before = lines(&p);
        p.write_page(n, PageId(3), &page, false, 0).unwrap();
        assert_eq!(lines(&p) - before, 4096 / 64 + 1);
        let before = lines(&p);
        p.release(n).unwrap();
        let m = p.pop_free().unwrap();
        assert_eq!(m, n);
        p.write_page(m, PageId(4), &page, false, 0).unwrap();
        p.clear_owner(m).unwrap();
        assert_eq!(lines(&p) - before, 4096 / 64 + 1, "release and clear_owner wrote NVM");
        assert_eq!((p.pid(n), p.pid(m)), (None, None));
        // A durable pool clears the header on both.
        let dir2 = tempfile::tempdir().unwrap();
        let q = pool(&dir2, 1 << 20);
        let n = q.pop_free().unwrap();
        q.write_page(n, PageId(3), &page, false, 0).unwrap();
        let before = lines(&q);
        q.release(n).unwrap();
        assert_eq!(lines(&q) - before, 1);
    }

    #[test]
    fn write_read_and_corruption_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(&dir, 1 << 20);
        let n = p.pop_free().unwrap();
        let page: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        p.write_page(n, PageId(9), &page, true, 0).unwrap();
        assert_eq!(p.pid(n), Some(PageId(9)));
        assert!(p.is_dirty(n));
        let h = p.header(n).unwrap().unwrap();
        assert_eq!((h.pid, h.flags), (PageId(9), FLAG_VALID | FLAG_DIRTY));
        let mut back = vec![0u8; 4096];
        p.read_page(n, PageId(9), &mut back).unwrap();
        assert_eq!(back, page);
        // Flip one data byte behind the pool's back.
        let mut bad = page.clone();
        bad[100] ^= 1;
        // SAFETY (test): single-threaded.
        unsafe { p.region.copy_in_shared(p.data_offset(n), &bad) }.unwrap();
        let e = p.read_page(n, PageId(9), &mut back).unwrap_err();
        assert!(matches!(e, BufferError::Corrupted { .. }), "{e}");
        assert!(e.to_string().contains("NVM frame"), "{e}");
        p.release(n).unwrap();
        assert_eq!(p.header(n).unwrap(), None);
        assert_eq!(p.pid(n), None);
    }

    #[test]
    fn reopen_finds_the_pages_and_clears_frames_caught_mid_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(&dir, 1 << 20);
        let page = vec![5u8; 4096];
        let frames: Vec<u32> = (0..4).map(|_| p.pop_free().unwrap()).collect();
        for (i, n) in frames.iter().enumerate() {
            p.write_page(*n, PageId(10 + i as u64), &page, i % 2 == 0, 0).unwrap();
        }
        p.begin_update(frames[1], PageId(11)).unwrap(); // a crash in the middle of a rewrite
        p.release(frames[3]).unwrap();
        let count = p.len();
        drop(p);
        let open = || NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(1 << 20))).unwrap();
        let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
        let pages: Vec<(u32, u64, bool)> =
            r.pages.iter().map(|(n, h)| (*n, h.pid.0, h.flags & FLAG_DIRTY != 0)).collect();
        assert_eq!(pages, vec![(frames[0], 10, true), (frames[2], 12, true)]);
        assert_eq!(r.cleared.len(), 1);
        assert!(r.cleared[0].1.contains("IN_UPDATE"), "{:?}", r.cleared);
        assert_eq!(r.pool.free_frames(), count - 2, "the others are free");
        let mut back = vec![0u8; 4096];
        r.pool.read_page(frames[2], PageId(12), &mut back).unwrap();
        assert_eq!(back, page);
        drop(r);
        // The cleared header stays cleared; another database or page size is refused.
        let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
        assert!(r.cleared.is_empty() && r.pages.len() == 2);
        drop(r);
        let why = NvmPool::reopen(open(), 4096, 8, NvmVerify::Cheap, true).unwrap().err().unwrap().1;
        assert!(why.contains("belongs to database"), "{why}");
        let why = NvmPool::reopen(open(), 8192, 7, NvmVerify::Cheap, true).unwrap().err().unwrap().1;
        assert!(why.contains("4096-byte pages"), "{why}");
    }

    #[test]
    fn too_small_a_region_is_a_config_error() {
        let dir = tempfile::tempdir().unwrap();
        let region = NvmRegion::open(&NvmConfig::new(dir.path().join("s.nvm"), ByteSize(8192))).unwrap();
        assert!(matches!(NvmPool::format(region, 16384, 1, NvmVerify::Cheap), Err(BufferError::Config { .. })));
    }

    #[test]
    fn header_decoding_rejects_bad_crc() {
        let h =
            FrameHeader { pid: PageId(3), page_lsn: 5, flags: FLAG_VALID, data_crc: 11, rec_lsn: 4, written_lsn: 9 };
        let mut b = h.encode();
        assert_eq!(FrameHeader::decode(&b).unwrap(), Some(h));
        b[3] ^= 0x10;
        assert!(FrameHeader::decode(&b).is_err());
    }

    /// Flips byte `at` of frame `n`'s data behind the pool's back.
    fn flip(p: &NvmPool, n: u32, at: usize) {
        let mut page = vec![0u8; p.page_size];
        p.region.copy_out(p.data_offset(n), &mut page).unwrap();
        page[at] ^= 0x20;
        // SAFETY (test): single-threaded, the frame is not in use.
        unsafe { p.region.copy_in_shared(p.data_offset(n), &page) }.unwrap();
    }

    fn frame_bytes(p: &NvmPool, n: u32) -> Vec<u8> {
        let mut page = vec![0u8; p.page_size];
        p.region.copy_out(p.data_offset(n), &mut page).unwrap();
        page
    }

    #[test]
    fn line_write_backs_keep_the_data_crc() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(&dir, 1 << 20);
        let n = p.pop_free().unwrap();
        let page: Vec<u8> = (0..4096).map(|i| (i * 7 % 253) as u8).collect();
        p.write_page(n, PageId(4), &page, false, 1).unwrap();
        // Lines read back from the frame for the CRC, then with the caller's old copy.
        let (a, b) = (vec![1u8; 128], vec![2u8; 64]);
        p.write_lines(n, PageId(4), &[(64, &a), (4032, &b)], None, 2).unwrap();
        let old = frame_bytes(&p, n);
        let c = vec![3u8; 192];
        p.write_lines(n, PageId(4), &[(1024, &c)], Some(&old), 3).unwrap();
        let h = p.header(n).unwrap().unwrap();
        assert_eq!(h.flags, FLAG_VALID | FLAG_DIRTY, "no NO_CRC flag");
        assert_eq!(h.data_crc, crc32c::crc32c(&frame_bytes(&p, n)));
        let mut back = vec![0u8; 4096];
        p.read_page(n, PageId(4), &mut back).unwrap();
        // A frame of an earlier build without a CRC gets one at its next write-back.
        let mut legacy = h;
        legacy.flags |= FLAG_NO_CRC;
        legacy.data_crc = 0;
        p.write_header(n, &legacy).unwrap();
        p.metas[n as usize].no_crc.store(true, Ordering::Relaxed);
        p.write_lines(n, PageId(4), &[(0, &b)], None, 4).unwrap();
        let h = p.header(n).unwrap().unwrap();
        assert_eq!((h.flags & FLAG_NO_CRC, h.data_crc), (0, crc32c::crc32c(&frame_bytes(&p, n))));
    }

    /// A log whose end is set by the test.
    struct Clock(AtomicU64);

    impl crate::wal::LogForce for Clock {
        fn force(&self, _lsn: u64) -> crate::Result<()> {
            Ok(())
        }
        fn end_lsn(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn a_clean_frame_changed_in_place_is_bound_by_when_it_was_last_clean() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(&dir, 1 << 20);
        let clock = std::sync::Arc::new(Clock(AtomicU64::new(1_000)));
        p.set_lsn_clock(clock.clone());
        let n = p.pop_free().unwrap();
        // The page's last change (LSN 7) is on SSD; the frame is written clean when the
        // log is at 1,000 (a checkpoint may delete the log before that).
        p.write_page(n, PageId(4), &vec![5u8; 4096], false, 7).unwrap();
        clock.0.store(2_000, Ordering::Relaxed);
        p.write_lines(n, PageId(4), &[(64, &[1u8; 64])], None, 1_500).unwrap();
        let h = p.header(n).unwrap().unwrap();
        assert_eq!((h.flags & FLAG_DIRTY, h.rec_lsn), (FLAG_DIRTY, 1_000), "not the page LSN 7");
        assert_eq!(p.rec_lsn(n), 1_000);
        // Dirty, it keeps its bound through later changes; clean again, a new one.
        p.write_lines(n, PageId(4), &[(128, &[2u8; 64])], None, 2_100).unwrap();
        assert_eq!(p.header(n).unwrap().unwrap().rec_lsn, 1_000);
        clock.0.store(3_000, Ordering::Relaxed);
        p.mark_clean(n).unwrap();
        p.write_lines(n, PageId(4), &[(192, &[3u8; 64])], None, 3_100).unwrap();
        assert_eq!(p.header(n).unwrap().unwrap().rec_lsn, 3_000);
    }

    #[test]
    fn reads_check_once_after_a_reopen_or_every_time() {
        let dir = tempfile::tempdir().unwrap();
        let open = || NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(1 << 20))).unwrap();
        let p = NvmPool::format(open(), 4096, 7, NvmVerify::Cheap).unwrap();
        let page = vec![9u8; 4096];
        let (clean, dirty) = (p.pop_free().unwrap(), p.pop_free().unwrap());
        p.write_page(clean, PageId(5), &page, false, 0).unwrap();
        p.write_page_rec(dirty, PageId(6), &page, true, 40, 33).unwrap();
        flip(&p, clean, 100);
        flip(&p, dirty, 4000);
        // Written by this process: checked already, so the cheap mode does not look.
        let mut line = vec![0u8; 64];
        p.read_lines(clean, PageId(5), 64, &mut line).unwrap();
        drop(p);
        // Cheap: the dirty frame is cleared at the reopen (its page is rebuilt from its
        // recovery LSN), the clean one fails its first read, once checked.
        let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
        assert_eq!(r.pages.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![clean]);
        assert!(r.cleared.len() == 1 && r.cleared[0].1.contains("fails its data CRC"), "{:?}", r.cleared);
        assert_eq!(r.log_needed_from, Some(33));
        let e = r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap_err();
        assert!(e.to_string().contains("p.nvm") && e.to_string().contains("NVM frame"), "{e}");
        flip(&r.pool, clean, 100);
        r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap();
        flip(&r.pool, clean, 100);
        r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap(); // checked: not again
        drop(r);
        // Every: checked at the reopen, and at each read.
        let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Every, true).unwrap().ok().unwrap();
        assert!(r.pages.is_empty() && r.cleared.len() == 1, "{:?}", r.cleared);
        let n = r.pool.pop_free().unwrap();
        r.pool.write_page(n, PageId(5), &page, false, 0).unwrap();
        r.pool.read_lines(n, PageId(5), 0, &mut line).unwrap();
        flip(&r.pool, n, 7);
        assert!(matches!(r.pool.read_lines(n, PageId(5), 0, &mut line), Err(BufferError::Corrupted { .. })));
        drop(r);
        // Without SSD nothing rebuilds a cleared page: the frame stays, and its read fails.
        let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Every, false).unwrap().ok().unwrap();
        assert!(r.cleared.is_empty() && r.pages.len() == 1, "{:?}", r.cleared);
        assert!(r.pool.check_before_read(n, PageId(5)).is_err());
    }
}
