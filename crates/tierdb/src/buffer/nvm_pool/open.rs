//! Making a pool: `format` lays an empty pool over a region (frame headers cleared
//! before the pool header is written), `reopen` finds one again at restart, rebuilds
//! the DRAM-side metadata from the frame headers and clears the frames a crash left
//! mid-write or whose data fails its check.
//!
//! Both run before the pool is shared: no frame has an owner yet, so the headers are
//! read and written without the ownership rules of the pool's module doc.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::header::{
    FLAG_DIRTY, FLAG_IN_UPDATE, FLAG_NO_CRC, FLAG_VALID, FrameHeader, HEADER_BYTES, HEADERS_OFFSET, MAGIC, NO_PAGE,
    VERSION,
};
use super::{NvmFrameMeta, NvmPool, Reopened, dev};
use crate::buffer::error::BufferError;
use crate::device::NvmRegion;
use crate::ids::{AtomicLsn, Lsn, NvmSlot};
use crate::limits::IO_ALIGN_BYTES;
use crate::page::crc::NvmVerify;
use crate::page::latch::Latch;

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
        // Slot bounds: the headers end before the frames, the frames inside the region.
        assert!(
            HEADERS_OFFSET + (count * HEADER_BYTES) as u64 <= data_offset
                && data_offset.is_multiple_of(IO_ALIGN_BYTES as u64)
                && data_offset + (count * page_size) as u64 <= size,
            "{count} frames of {page_size} bytes from {data_offset} in a region of {size} bytes"
        );
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
        debug_assert!(count > 0 && count < u32::MAX as usize, "{count} frames");
        let metas = (0..count)
            .map(|_| NvmFrameMeta {
                pid: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                no_crc: AtomicBool::new(false),
                crc: AtomicU32::new(0),
                checked: AtomicBool::new(true),
                latch: Latch::new(),
                rec_lsn: AtomicU64::new(0),
            })
            .collect();
        // Hand frames out from index 0 upwards.
        let free = Mutex::new((0..count).rev().map(NvmSlot::from_index).collect());
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
        for (n, b) in headers.chunks_exact(HEADER_BYTES).enumerate().map(|(i, b)| (NvmSlot::from_index(i), b)) {
            let meta = NvmFrameMeta {
                pid: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                no_crc: AtomicBool::new(false),
                crc: AtomicU32::new(0),
                checked: AtomicBool::new(true),
                latch: Latch::new(),
                rec_lsn: AtomicU64::new(0),
            };
            match FrameHeader::decode(b.try_into().expect("64 bytes")) {
                Ok(Some(fh)) if fh.flags & FLAG_VALID != 0 && fh.flags & FLAG_IN_UPDATE == 0 => {
                    meta.pid.store(fh.pid.0, Ordering::Relaxed);
                    meta.dirty.store(fh.flags & FLAG_DIRTY != 0, Ordering::Relaxed);
                    meta.no_crc.store(fh.flags & FLAG_NO_CRC != 0, Ordering::Relaxed);
                    meta.crc.store(fh.data_crc, Ordering::Relaxed);
                    meta.checked.store(!verify.any(), Ordering::Relaxed);
                    meta.rec_lsn.store_lsn(fh.rec_lsn, Ordering::Relaxed);
                    pages.push((n, fh));
                }
                Ok(None) => {}
                Ok(Some(fh)) => {
                    // A dirty frame's page is rebuilt from SSD with the changes since its
                    // recovery LSN (`Lsn::NONE`: unknown, the whole log kept); a clean one's SSD
                    // copy is the frame as it was, and its changes are newer than the
                    // last checkpoint (which waited for in-place writers).
                    if fh.flags & FLAG_DIRTY != 0 {
                        let from = fh.rec_lsn;
                        log_needed_from = Some(log_needed_from.map_or(from, |l: Lsn| l.min(from)));
                    }
                    cleared.push((n, format!("{} was being written in place (IN_UPDATE)", fh.pid)));
                }
                Err(e) => {
                    log_needed_from = Some(Lsn::NONE);
                    cleared.push((n, format!("unreadable header: {e}")));
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
                log_needed_from = Some(log_needed_from.map_or(fh.rec_lsn, |l: Lsn| l.min(fh.rec_lsn)));
            }
            let m = &pool.metas[n.index()];
            m.pid.store(NO_PAGE, Ordering::Relaxed);
            m.dirty.store(false, Ordering::Relaxed);
            m.no_crc.store(false, Ordering::Relaxed);
            m.checked.store(true, Ordering::Relaxed);
            m.rec_lsn.store_lsn(Lsn::NONE, Ordering::Relaxed);
            cleared.push((n, why));
        }
        let pages = kept;
        for (n, _) in &cleared {
            pool.write_header_bytes(*n, &[0u8; HEADER_BYTES])?;
        }
        let used: std::collections::HashSet<NvmSlot> = pages.iter().map(|(n, _)| *n).collect();
        *pool.free.lock() = (0..count).rev().map(NvmSlot::from_index).filter(|n| !used.contains(n)).collect();
        // Every frame is either a kept page's or free, never both.
        assert_eq!(used.len(), pages.len(), "a frame listed twice among the pages found");
        assert_eq!(pool.free_frames() + pages.len(), count, "free frames and pages do not cover the pool");
        let scan_secs = start.elapsed().as_secs_f64();
        Ok(Ok(Reopened { pool, pages, cleared, log_needed_from, scan_secs }))
    }

    /// The oldest change any dirty frame holds that SSD does not: the least recovery LSN
    /// of the dirty frames (a frame whose bound is unknown counts as LSN 1, keeping the
    /// whole log); `None` if no frame is dirty. Racy against concurrent writers, which
    /// only add changes newer than the caller's bound (the checkpoint takes it after
    /// choosing its redo point).
    pub fn oldest_dirty_rec_lsn(&self) -> Option<Lsn> {
        self.metas
            .iter()
            .filter(|m| m.pid.load(Ordering::Relaxed) != NO_PAGE && m.dirty.load(Ordering::Relaxed))
            .map(|m| m.rec_lsn.load_lsn(Ordering::Relaxed).max(Lsn::new(1)))
            .min()
    }

    /// Frees frame `n` at restart (its header named a page the database does not have):
    /// clears the header durably and puts the frame on the free list.
    ///
    /// # Errors
    /// Device errors.
    pub fn discard(&self, n: NvmSlot) -> Result<(), BufferError> {
        self.release(n)
    }
}
