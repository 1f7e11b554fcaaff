//! The `main-memory` database's store: every page in DRAM ([`MemorySource`]), made
//! durable by the log and by checkpoints that write a snapshot of every page to a file,
//! as main-memory engines do (the log alone would grow without bound).
//!
//! A checkpoint copies each page under its shared latch into `snapshot.mm.tmp`, forces
//! the log up to everything appended so far (so that no change in the copy lacks its
//! durable record: the write-ahead rule for the snapshot as a whole), syncs the file,
//! renames it over `snapshot.mm` and syncs the directory; only then does the caller
//! write the control file and truncate the log. A crash leaves either the old snapshot
//! with the old control file, or the new snapshot with the old control file (redo from
//! the older point then skips every change a page already has, by page LSN), never a
//! half-written snapshot in place. Open loads the snapshot and recovery redoes from the
//! control file's point. The snapshot is fuzzy (pages copied while transactions run),
//! like a buffer manager's checkpoint flush.
//!
//! Format (little-endian; `docs/format.md`):
//!
//! ```text
//! header (64 bytes): magic "TIERDBMM" | version u32 | page size u32 | next page id u64
//!                    | free page count u64 | reserved (zero) to 60 | CRC-32C of 0..60 u32
//! free list:         free page count × page id u64, then CRC-32C u32 of the list
//! pages:             for page id 1 .. next: the page's bytes, then CRC-32C u32 of them
//! ```
//!
//! The snapshot's file I/O is not counted by the device layer (it is a checkpoint's
//! sequential write, outside the measured transaction path).

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::config::DbError;
use super::store::DbStore;
use crate::Result;
use crate::buffer::BufferError;
use crate::device::DramConfig;
use crate::ids::PageId;
use crate::page::PageSource;
use crate::page::frame::FrameOptimistic;
use crate::page::frame::FrameRead;
use crate::page::frame::FrameWrite;
use crate::page::frame::lines::WholeLines;
use crate::sources::MemorySource;
use crate::wal::{Durability, Wal};

/// The snapshot's name in the database directory.
pub const SNAPSHOT_FILE: &str = "snapshot.mm";
const MAGIC: &[u8; 8] = b"TIERDBMM";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 64;

/// A `main-memory` database's pages: see the module doc.
pub struct MemoryStore {
    src: MemorySource,
    path: PathBuf,
    log: OnceLock<Arc<Wal>>,
    loaded: usize,
}

impl MemoryStore {
    /// Loads the snapshot in `dir` if `existing`, else starts empty (the catalog page
    /// only).
    ///
    /// # Errors
    /// `Open` for a missing or corrupt snapshot (naming the file and what is wrong);
    /// `Full` if its pages do not fit in DRAM; I/O errors.
    pub fn open(dram: &DramConfig, dir: &Path, existing: bool) -> Result<MemoryStore> {
        let src = MemorySource::new(dram)?;
        let path = dir.join(SNAPSHOT_FILE);
        let loaded = if existing { load(&src, &path)? } else { 0 };
        Ok(MemoryStore { src, path, log: OnceLock::new(), loaded })
    }

    /// The DRAM page source that holds every page.
    pub fn source(&self) -> &MemorySource {
        &self.src
    }

    /// Pages loaded from the snapshot at open.
    pub fn pages_loaded(&self) -> usize {
        self.loaded
    }

    /// Writes the snapshot: see the module doc.
    fn write(&self) -> Result<()> {
        let ps = self.src.page_size();
        let (next, freed) = self.src.allocation();
        let tmp = self.path.with_extension("mm.tmp");
        let err = |what: &str, e: std::io::Error| -> crate::Error {
            DbError::Open { path: self.path.clone(), what: format!("{what}: {e}") }.into()
        };
        let file = std::fs::File::create(&tmp).map_err(|e| err("create the snapshot", e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(ps as u32).to_le_bytes());
        h[16..24].copy_from_slice(&next.0.to_le_bytes());
        h[24..32].copy_from_slice(&(freed.len() as u64).to_le_bytes());
        let crc = crc32c::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        let mut list = Vec::with_capacity(freed.len() * 8);
        for p in &freed {
            list.extend_from_slice(&p.0.to_le_bytes());
        }
        let list_crc = crc32c::crc32c(&list);
        let mut body = (|| -> std::io::Result<()> {
            w.write_all(&h)?;
            w.write_all(&list)?;
            w.write_all(&list_crc.to_le_bytes())
        })()
        .map_err(|e| err("write the snapshot", e));
        let mut page = vec![0u8; ps];
        for pid in 1..next.0 {
            if body.is_err() {
                break;
            }
            // A page is consistent under its latch; the snapshot as a whole is fuzzy.
            page.copy_from_slice(&self.src.fix_shared(PageId(pid))?);
            body = w
                .write_all(&page)
                .and_then(|()| w.write_all(&crc32c::crc32c(&page).to_le_bytes()))
                .map_err(|e| err("write the snapshot", e));
        }
        body?;
        let file = w.into_inner().map_err(|e| err("write the snapshot", e.into_error()))?;
        // Every change the copies hold was appended before this point.
        if let Some(wal) = self.log.get() {
            wal.flush_until(wal.next_lsn())?;
        }
        file.sync_all().map_err(|e| err("sync the snapshot", e))?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(|e| err("rename the snapshot", e))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| err("sync the directory", e))?;
        Ok(())
    }
}

/// Reads the snapshot at `path` into `src`; returns the pages loaded.
fn load(src: &MemorySource, path: &Path) -> Result<usize> {
    let bad = |what: String| -> crate::Error { DbError::Open { path: path.to_path_buf(), what }.into() };
    let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot open the snapshot: {e}")))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut h = [0u8; HEADER_BYTES];
    r.read_exact(&mut h).map_err(|e| bad(format!("the snapshot's header: {e}")))?;
    let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
    if &h[0..8] != MAGIC || u32_at(60) != crc32c::crc32c(&h[..60]) {
        return Err(bad("the snapshot's header is not one (magic or CRC-32C)".into()));
    }
    let ps = src.page_size();
    if u32_at(8) != VERSION || u32_at(12) as usize != ps {
        return Err(bad(format!("a snapshot of version {} with {}-byte pages, not {ps}", u32_at(8), u32_at(12))));
    }
    let (next, free_count) = (u64_at(16), u64_at(24));
    if next < 2 || free_count >= next {
        return Err(bad(format!("the snapshot's header says {next} pages, {free_count} free")));
    }
    let mut list = vec![0u8; free_count as usize * 8];
    let mut crc = [0u8; 4];
    r.read_exact(&mut list).and_then(|()| r.read_exact(&mut crc)).map_err(|e| bad(format!("its free list: {e}")))?;
    if crc32c::crc32c(&list).to_le_bytes() != crc {
        return Err(bad("the snapshot's free list fails its CRC-32C".into()));
    }
    let freed = list.chunks_exact(8).map(|c| PageId(u64::from_le_bytes(c.try_into().expect("8 bytes")))).collect();
    src.restore_allocation(PageId(next), freed)?;
    for pid in 1..next {
        let mut page = src.fix_exclusive(PageId(pid))?;
        r.read_exact(&mut page).and_then(|()| r.read_exact(&mut crc)).map_err(|e| bad(format!("page {pid}: {e}")))?;
        if crc32c::crc32c(&page).to_le_bytes() != crc {
            return Err(bad(format!("page {pid} fails its CRC-32C")));
        }
    }
    Ok((next - 1) as usize)
}

impl PageSource for MemoryStore {
    type Shared<'a> = FrameRead<'a>;
    type Exclusive<'a> = FrameWrite<'a>;
    type Optimistic<'a> = FrameOptimistic<'a>;
    type Lines<'a> = WholeLines<'a>;

    #[inline]
    fn page_size(&self) -> usize {
        self.src.page_size()
    }
    #[inline]
    fn fix_shared(&self, pid: PageId) -> Result<FrameRead<'_>, BufferError> {
        self.src.fix_shared(pid)
    }
    #[inline]
    fn fix_optimistic(&self, pid: PageId) -> Result<FrameOptimistic<'_>, BufferError> {
        self.src.fix_optimistic(pid)
    }
    #[inline]
    fn fix_exclusive(&self, pid: PageId) -> Result<FrameWrite<'_>, BufferError> {
        self.src.fix_exclusive(pid)
    }
    #[inline]
    fn fix_lines(&self, pid: PageId, exclusive: bool) -> Result<WholeLines<'_>, BufferError> {
        self.src.fix_lines(pid, exclusive)
    }
    fn allocate(&self) -> Result<FrameWrite<'_>, BufferError> {
        self.src.allocate()
    }
    fn free(&self, page: FrameWrite<'_>) -> Result<(), BufferError> {
        self.src.free(page)
    }
    fn catalog_page(&self) -> PageId {
        self.src.catalog_page()
    }
}

impl DbStore for MemoryStore {
    fn attach_log(&self, wal: &Arc<Wal>, _durability: Durability) -> Result<()> {
        self.log.set(wal.clone()).map_err(|_| DbError::Config { what: "a log is attached already".into() }.into())
    }
    fn flush_all(&self) -> Result<()> {
        self.write()
    }
    fn close_store(self) -> Result<()> {
        Ok(())
    }
    fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        Ok(self.src.recover_allocated(pid).map(|()| true)?)
    }
    fn recover_is_free(&self, pid: PageId) -> bool {
        self.src.is_free(pid)
    }
    fn recover_freed(&self, pid: PageId) -> Result<()> {
        if pid == PageId::CATALOG || self.src.is_free(pid) {
            return Ok(());
        }
        Ok(self.src.free(self.src.fix_exclusive(pid)?)?)
    }
    fn pages_reused(&self) -> usize {
        0
    }
    fn snapshot_pages(&self) -> usize {
        self.loaded
    }
}
