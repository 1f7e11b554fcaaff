//! Page reads and writes of the page file: sealed images, runs of consecutive pages,
//! batches in flight together through io_uring, and the double-write protocol around
//! them; `sync` ends a double-write period.
//!
//! Concurrency: reads and writes of different pages run from many threads; with the
//! double-write area, writes and syncs hold its lock. A failed write or sync poisons
//! the handle before it returns.

use std::os::unix::fs::FileExt;

use super::{POISON_DOUBLE_WRITE, POISON_SYNC, POISON_WRITE, SsdFile};
use crate::device::aligned::{AlignedBuf, is_io_aligned};
use crate::device::double_write::{self, DoubleWrite};
use crate::device::page_seal::{self, Sealed};
use crate::device::{DeviceError, EmulationMode, OpKind};
use crate::ids::{Lsn, PageId};
use crate::limits::{SSD_WRITE_BATCH_BYTES_MAX, SSD_WRITE_RUN_BYTES_MAX, SSD_WRITES_IN_FLIGHT_MAX};

impl SsdFile {
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
    pub fn read_page_flushed(&self, id: PageId, buf: &mut [u8]) -> Result<Lsn, DeviceError> {
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
    pub fn read_pages_flushed(&self, pages: &mut [(PageId, &mut [u8])]) -> Vec<Result<Lsn, DeviceError>> {
        let mut results: Vec<Result<Lsn, DeviceError>> = Vec::with_capacity(pages.len());
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
        debug_assert_eq!(offsets.len(), pages.len());
        for (id, buf) in pages.iter_mut() {
            let r = if read { Ok(()) } else { self.read_raw(*id, buf) };
            results.push(r.and_then(|()| self.check_sealed(*id, buf)));
        }
        debug_assert_eq!(results.len(), pages.len(), "one result per page");
        results
    }

    /// `buf`, just read as page `id`: its last-flush LSN if its seal holds (the seal's
    /// bytes then cleared), else `Corrupted` naming the page and the file.
    fn check_sealed(&self, id: PageId, buf: &mut [u8]) -> Result<Lsn, DeviceError> {
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
    pub(super) fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<(), DeviceError> {
        let offset = self.check_page(id, buf.len())?;
        debug_assert!(offset >= self.page_size as u64, "a data page read from the superblock page");
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
        self.write_pages_flushed(pages, Lsn::NONE)
    }

    /// [`write_pages`](Self::write_pages), recording `flush_lsn` (the log's LSN at this
    /// write; 0: unknown) as every page's last-flush LSN in its seal.
    ///
    /// # Errors
    /// As [`write_pages`](Self::write_pages).
    ///
    /// # Panics
    /// As [`write_pages`](Self::write_pages).
    pub fn write_pages_flushed(&self, pages: &[(PageId, &[u8])], flush_lsn: Lsn) -> Result<(), DeviceError> {
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
    /// [`SSD_WRITES_IN_FLIGHT_MAX`] in flight, [`crate::device::uring`]), else one after another.
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
        debug_assert_eq!(runs.iter().map(|r| r.2).sum::<usize>(), order.len(), "runs cover every page once");
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
            // In-flight limit: a group is one submission, its runs fit the buffer.
            assert!(
                (1..=SSD_WRITES_IN_FLIGHT_MAX).contains(&n) && (!together || used <= group_pages),
                "a group of {n} runs ({used} pages) for {SSD_WRITES_IN_FLIGHT_MAX} in flight and {group_pages} pages"
            );
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
        assert!(
            writes.len() <= SSD_WRITES_IN_FLIGHT_MAX,
            "{} writes in flight, more than {SSD_WRITES_IN_FLIGHT_MAX}",
            writes.len()
        );
        debug_assert!(!self.info.direct_io || is_io_aligned(buf), "direct I/O from an unaligned buffer");
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
    pub(super) fn write_raw(&self, id: PageId, buf: &[u8]) -> Result<(), DeviceError> {
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
                crate::device::fault::write_at(faults, &self.info.path, &self.file, &bounce, offset)
            } else {
                crate::device::fault::write_at(faults, &self.info.path, &self.file, buf, offset)
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

    pub(super) fn sync_file(&self) -> Result<(), DeviceError> {
        self.check_poison()?;
        self.core.run(OpKind::Sync, 0, 0, || {
            crate::device::fault::sync(self.faults.as_deref(), &self.info.path, &self.file).map_err(|e| {
                self.poison(POISON_SYNC);
                DeviceError::io("fdatasync", &self.info.path, 0, e)
            })
        })
    }
}
