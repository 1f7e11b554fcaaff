//! [`DbStore`] for the buffer manager (pages written out whole, after the log is forced
//! to their LSN; flush records after each batch; page images before a write over a
//! page's only durable copy in NVM) and for `nvm-direct` (pages changed in place, each
//! write-back logged as a line image and made durable first).
//!
//! The adapters (`PageLog`, `LineLog`) hold the log by `Arc`: the store calls them
//! from its own threads (eviction, write-back), under its own latches, and they take
//! no lock of the database's.

use std::collections::HashMap;
use std::sync::Arc;

use crate::Result;
use crate::buffer::BufferManager;
use crate::ids::{PageId, TxnId};
use crate::sources::NvmDirect;
use crate::sources::nvm_direct::frames::WriteBackLog;
use crate::wal::payload::{encode_flushed, encode_lines};
use crate::wal::{Durability, Kind, Lsn, RecordHead, Wal, WalError};

use super::store::DbStore;

/// The log as a buffer manager sees it: forced before a page leaves DRAM, and taking
/// the image of a page about to be written over its only durable copy (a database whose
/// pages live in NVM) as a line image of every line.
struct PageLog {
    wal: Arc<Wal>,
    /// Whether to log the pages written to SSD (not when nothing else is logged).
    flush_notes: bool,
}

impl crate::wal::LogForce for PageLog {
    fn force(&self, lsn: Lsn) -> Result<(), WalError> {
        self.wal.flush_until(lsn.advance(1))
    }

    fn append_image(&self, pid: PageId, page: &[u8]) -> Result<Option<Lsn>, WalError> {
        let lines = page.len() / crate::limits::CACHE_LINE_BYTES;
        let payload = encode_lines(lines, &[(0, page)]);
        Ok(Some(self.wal.append(&RecordHead::new(Kind::LineImage, TxnId::NONE, Lsn::NONE).page(pid.0), &payload)?))
    }

    fn end_lsn(&self) -> Lsn {
        self.wal.next_lsn()
    }

    fn note_flushed(&self, pages: &[(PageId, Lsn)]) -> Result<(), WalError> {
        if self.flush_notes && !pages.is_empty() {
            self.wal.append(&RecordHead::new(Kind::PagesFlushed, TxnId::NONE, Lsn::NONE), &encode_flushed(pages))?;
        }
        Ok(())
    }
}

impl DbStore for BufferManager {
    fn attach_log(&self, wal: &Arc<Wal>, durability: Durability) -> Result<()> {
        Ok(self.set_log(Arc::new(PageLog { wal: wal.clone(), flush_notes: durability != Durability::None }))?)
    }
    fn flush_all(&self) -> Result<()> {
        Ok(self.checkpoint()?)
    }
    fn close_store(self) -> Result<()> {
        Ok(self.close()?)
    }
    fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        Ok(BufferManager::recover_allocated(self, pid)?)
    }
    fn recover_freed(&self, pid: PageId) -> Result<()> {
        Ok(BufferManager::recover_freed(self, pid)?)
    }
    fn recover_is_free(&self, pid: PageId) -> bool {
        BufferManager::recover_is_free(self, pid)
    }
    fn recover_holds(&self, pid: PageId, lsn: Lsn) -> Result<bool> {
        Ok(self.recover_nvm_holds(pid, lsn)?)
    }
    fn recover_trust_newest(&self, wal: &Arc<Wal>, flushed: &HashMap<u64, Lsn>) -> Result<usize> {
        self.set_lsn_clock(wal.clone());
        Ok(self.recover_drop_stale_nvm(flushed.iter().map(|(p, l)| (PageId(*p), *l)))?)
    }
    fn pages_reused(&self) -> usize {
        self.restart_info().map_or(0, |r| r.pages_reused)
    }
    fn page_lsn_max_found(&self) -> Option<(PageId, Lsn)> {
        self.restart_info().and_then(|r| r.page_lsn_max)
    }
    fn pages_restored(&self) -> usize {
        self.torn_pages().map_or(0, |t| t.pages_restored())
    }
    fn nvm_frames_cleared(&self) -> usize {
        self.restart_info().map_or(0, |r| r.frames_cleared.len())
    }
    fn oldest_retained(&self) -> Option<Lsn> {
        self.oldest_unflushed_lsn()
    }
    fn log_needed_at_open(&self) -> Option<Lsn> {
        if self.double_write_lost().is_some() {
            return Some(Lsn::NONE);
        }
        self.restart_info().and_then(|r| r.log_needed_from)
    }
    fn nvm_pool_formatted(&self) -> Option<String> {
        self.restart_info().and_then(|r| r.formatted_because)
    }
    fn double_write_lost(&self) -> Option<String> {
        BufferManager::double_write_lost(self).map(str::to_string)
    }
}

/// The log as `nvm-direct`'s write-backs see it: a line image appended and made durable
/// before the lines are written in place.
struct LineLog(Arc<Wal>);

impl WriteBackLog for LineLog {
    fn log_lines(&self, pid: PageId, runs: &[(usize, &[u8])]) -> Result<Lsn, WalError> {
        let lines = runs.iter().map(|r| r.0 + r.1.len() / crate::limits::CACHE_LINE_BYTES).max().unwrap_or(0);
        let payload = encode_lines(lines, runs);
        let lsn = self.0.append(&RecordHead::new(Kind::LineImage, TxnId::NONE, Lsn::NONE).page(pid.0), &payload)?;
        self.0.commit(lsn.advance(1), Durability::Sync)?;
        Ok(lsn)
    }

    fn next_lsn(&self) -> Lsn {
        self.0.next_lsn()
    }
}

impl DbStore for NvmDirect {
    fn attach_log(&self, wal: &Arc<Wal>, _durability: Durability) -> Result<()> {
        self.set_log(Some(Arc::new(LineLog(wal.clone()))));
        Ok(())
    }
    fn flush_all(&self) -> Result<()> {
        Ok(())
    }
    fn close_store(self) -> Result<()> {
        Ok(())
    }
    fn recover_allocated(&self, pid: PageId) -> Result<bool> {
        Ok(NvmDirect::recover_allocated(self, pid).map(|()| true)?)
    }
    fn recover_freed(&self, pid: PageId) -> Result<()> {
        Ok(NvmDirect::recover_freed(self, pid)?)
    }
    fn pages_reused(&self) -> usize {
        self.restart_info().map_or(0, |r| r.pages_in_use as usize)
    }
    fn in_place(&self) -> bool {
        true
    }
    fn oldest_pending(&self) -> Option<Lsn> {
        self.pages().oldest_pending()
    }
    fn check(&self) -> Result<()> {
        Ok(self.pages().check_poison()?)
    }
}
