//! Reading frames: a whole page copied out and checked against its header, lines of a
//! page, and the data-CRC check a frame gets before it is first read after a restart
//! (or on every read, as the pool's [`NvmVerify`] says). A failed check is a
//! `Corrupted` error naming the file, frame and page, never bytes.
//!
//! The caller owns the frame or holds its in-place latch (the pool's module doc).

#![allow(unsafe_code)]

use std::sync::atomic::Ordering;

use super::header::{FLAG_NO_CRC, FLAG_VALID, FrameHeader, HEADER_BYTES};
use super::{NvmPool, dev};
use crate::buffer::error::BufferError;
use crate::ids::{NvmSlot, PageId};
use crate::page::crc::NvmVerify;

impl NvmPool {
    /// Copies frame `n` into `dst` (one page), checking its CRC unless verification is
    /// off.
    ///
    /// # Errors
    /// Device errors; `Corrupted` on a header or data CRC mismatch or a header that
    /// names another page.
    pub fn read_page(&self, n: NvmSlot, expect: PageId, dst: &mut [u8]) -> Result<(), BufferError> {
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
            self.metas[n.index()].checked.store(true, Ordering::Relaxed);
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
    pub fn read_lines(&self, n: NvmSlot, pid: PageId, off: usize, dst: &mut [u8]) -> Result<(), BufferError> {
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
    pub fn check_before_read(&self, n: NvmSlot, pid: PageId) -> Result<(), BufferError> {
        let due = match self.verify {
            NvmVerify::Off => false,
            NvmVerify::Cheap => !self.metas[n.index()].checked.load(Ordering::Relaxed),
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
    pub fn check_page(&self, n: NvmSlot, pid: PageId) -> Result<(), BufferError> {
        let m = &self.metas[n.index()];
        if m.no_crc.load(Ordering::Relaxed) {
            m.checked.store(true, Ordering::Relaxed);
            return Ok(());
        }
        // Through the CPU-cache model where the pool has one (the in-place designs): the
        // check's loads are loads like the guard's, as `nvm-direct` charges its own.
        self.charge_in_place(n, 0, self.page_size);
        debug_assert!(
            self.data_offset(n) + self.page_size as u64 <= self.region.size_bytes(),
            "NVM frame {n} past the region"
        );
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

    fn corrupted(&self, n: NvmSlot, pid: PageId, detail: String) -> BufferError {
        BufferError::Corrupted {
            pid,
            location: format!("NVM frame {n} of {}", self.region.info().path.display()),
            detail,
        }
    }

    /// Reads frame `n`'s persistent header.
    ///
    /// # Errors
    /// Device errors; `Corrupted` on a header CRC mismatch.
    pub fn header(&self, n: NvmSlot) -> Result<Option<FrameHeader>, BufferError> {
        debug_assert!(n.index() < self.metas.len(), "NVM frame {n} of {}", self.metas.len());
        let mut b = [0u8; HEADER_BYTES];
        self.region.read_lines(self.header_offset(n), &mut b).map_err(dev)?;
        FrameHeader::decode(&b).map_err(|detail| BufferError::Corrupted {
            pid: PageId(self.metas[n.index()].pid.load(Ordering::Relaxed)),
            location: format!("NVM frame header {n} of {}", self.region.info().path.display()),
            detail,
        })
    }
}
