//! A mapped memory range (anonymous, or a shared file mapping) and the raw copies into
//! and out of it. The only place that dereferences mapped memory.
//!
//! A file is mapped with `MAP_SHARED_VALIDATE | MAP_SYNC` first: the kernel accepts
//! that only on a DAX file system, where a store flushed from the CPU cache is durable
//! without `msync`. Anywhere else (tmpfs, ext4 without DAX) it refuses with
//! `EOPNOTSUPP`/`EINVAL` and we map the file with memmap2 as an ordinary shared mapping.
//!
//! Concurrency: the mapping itself is `Send + Sync`; the copy functions are `unsafe`
//! because two threads copying into the same bytes at once is a data race. Callers
//! (the device types) either hold `&mut` or pass the obligation on in an `unsafe fn`.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

use crate::limits::OS_PAGE_BYTES;

enum Backing {
    /// Held only to unmap on drop.
    Memmap(#[allow(dead_code)] memmap2::MmapRaw),
    /// Mapped with MAP_SYNC by us; unmapped in `Drop`.
    MapSync,
}

pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

// SAFETY: the mapping is plain memory owned by this value; access to its bytes goes
// through `unsafe` copy functions whose callers guarantee data-race freedom.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only exposes raw copies with a documented contract.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Anonymous private memory of `len` bytes, zeroed, page-aligned.
    pub fn anon(len: usize) -> io::Result<Mapping> {
        let raw: memmap2::MmapRaw = memmap2::MmapOptions::new().len(len).map_anon()?.into();
        let ptr = NonNull::new(raw.as_mut_ptr()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping { ptr, len, backing: Backing::Memmap(raw) })
    }

    /// The first `len` bytes of `file`, shared. Tries `MAP_SYNC` first when
    /// `try_map_sync`; returns whether it was granted.
    pub fn file(file: &File, len: usize, try_map_sync: bool) -> io::Result<(Mapping, bool)> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if try_map_sync {
            // SAFETY: a fresh mapping at a kernel-chosen address; we pass a valid fd and
            // length, and own the result until Drop unmaps it.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                    file.as_raw_fd(),
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
                return Ok((Mapping { ptr, len, backing: Backing::MapSync }, true));
            }
        }
        let _ = try_map_sync;
        let raw = memmap2::MmapOptions::new().len(len).map_raw(file)?;
        let ptr = NonNull::new(raw.as_mut_ptr()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok((Mapping { ptr, len, backing: Backing::Memmap(raw) }, false))
    }

    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Copies `dst.len()` bytes at `offset` into `dst`.
    ///
    /// # Safety
    /// `offset + dst.len() <= self.len()`, and no other thread writes those bytes
    /// during the copy.
    #[inline]
    pub unsafe fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        debug_assert!(offset + dst.len() <= self.len, "copy_out {offset}+{} > {}", dst.len(), self.len);
        // SAFETY: in bounds per the caller; `dst` is a distinct Rust slice, so the
        // ranges cannot overlap; no concurrent writer per the caller.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), dst.as_mut_ptr(), dst.len()) }
    }

    /// Copies `src` to `offset`.
    ///
    /// # Safety
    /// `offset + src.len() <= self.len()`, and no other thread reads or writes those
    /// bytes during the copy.
    #[inline]
    pub unsafe fn copy_in(&self, offset: usize, src: &[u8]) {
        debug_assert!(offset + src.len() <= self.len, "copy_in {offset}+{} > {}", src.len(), self.len);
        // SAFETY: in bounds per the caller; `src` is a Rust slice, not part of this
        // mapping's range handed out mutably, so no overlap; exclusive per the caller.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len()) }
    }

    /// Asks for transparent huge pages; returns the OS error if refused.
    pub fn advise_huge_pages(&self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: madvise on our own live mapping; MADV_HUGEPAGE does not change contents.
            let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_HUGEPAGE) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    /// `msync(MS_SYNC)` of the OS pages overlapping `[offset, offset + len)`.
    pub fn msync(&self, offset: usize, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let start = offset & !(OS_PAGE_BYTES - 1);
        let end = (offset + len).min(self.len);
        debug_assert!(start < end, "msync {offset}+{len} of {}", self.len);
        // SAFETY: the range lies within our live mapping and starts page-aligned.
        let rc = unsafe { libc::msync(self.ptr.as_ptr().add(start).cast(), end - start, libc::MS_SYNC) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if let Backing::MapSync = self.backing {
            // SAFETY: we mapped exactly (ptr, len) in `file` and nobody uses it after drop.
            let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
            debug_assert_eq!(rc, 0, "munmap failed: {}", io::Error::last_os_error());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_is_zeroed_and_page_aligned() {
        let m = Mapping::anon(1 << 20).unwrap();
        assert_eq!(m.as_ptr() as usize % OS_PAGE_BYTES, 0);
        let mut buf = [1u8; 64];
        // SAFETY: in bounds, single-threaded.
        unsafe { m.copy_out(4096, &mut buf) };
        assert!(buf.iter().all(|&b| b == 0));
        // SAFETY: in bounds, single-threaded.
        unsafe { m.copy_in(4096, &[9u8; 64]) };
        // SAFETY: as above.
        unsafe { m.copy_out(4096, &mut buf) };
        assert!(buf.iter().all(|&b| b == 9));
    }
}
