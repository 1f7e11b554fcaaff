//! The store trait: what the database needs of its page storage besides
//! [`PageSource`] — attaching the log, flushing and closing, and the questions recovery
//! asks of the pages found at open. Its implementations are in `stores.rs` (buffer
//! manager, `nvm-direct`) and `snapshot.rs` (`main-memory`).
//!
//! Every store obeys the write-ahead rule once [`DbStore::attach_log`] has run: no
//! change reaches the store's durable media before the record that redoes it is
//! durable. Methods are called from any thread; stores synchronise themselves.

use std::collections::HashMap;
use std::sync::Arc;

use crate::Result;
use crate::ids::PageId;
use crate::page::PageSource;
use crate::wal::{Durability, Lsn, Wal};

/// What the database needs of its page storage besides [`PageSource`]. Implemented by
/// the buffer manager (pages written out whole, after the log is forced to their LSN)
/// and by `nvm-direct` (pages changed in place, each write-back logged as a line image
/// first). `'static` (and `Send + Sync`, from [`PageSource`]): the background
/// checkpointer's thread shares the store.
pub trait DbStore: PageSource + Sized + 'static {
    /// Connects the log: from now on no change reaches the store before its record is
    /// durable. `durability` is the database's (with `None` nothing is logged, and
    /// the store logs nothing of its own either).
    ///
    /// # Errors
    /// A log is attached already.
    fn attach_log(&self, wal: &Arc<Wal>, durability: Durability) -> Result<()>;

    /// Writes every change out (a checkpoint's flush).
    ///
    /// # Errors
    /// Device errors.
    fn flush_all(&self) -> Result<()>;

    /// Flushes and closes.
    ///
    /// # Errors
    /// Device errors.
    fn close_store(self) -> Result<()>;

    /// Recovery: a page the log names exists (allocated after the last checkpoint).
    /// False when the page holds the free-page list the last checkpoint wrote: it was
    /// free from before that checkpoint until the crash, and the record naming it is to
    /// be skipped (`buffer/manager/free_list.rs`).
    ///
    /// # Errors
    /// A page beyond the store; device errors.
    fn recover_allocated(&self, pid: PageId) -> Result<bool>;

    /// Recovery: the page is free at this point of the redo (on the free list, or never
    /// allocated). A leaf change to it is an older incarnation's, made moot by the free
    /// that followed: the page's bytes on disk may be that incarnation's at any older
    /// state, or another page format, so the change is skipped, not applied.
    fn recover_is_free(&self, _pid: PageId) -> bool {
        false
    }

    /// Recovery: whether page `pid`'s current copy is known, without reading the page,
    /// to hold the change logged at `lsn` (an NVM frame found again at restart whose
    /// page LSN is at or past it: NV-SQL §5.3 skips the redo of such pages).
    ///
    /// # Errors
    /// Device errors reading a frame header.
    fn recover_holds(&self, _pid: PageId, _lsn: Lsn) -> Result<bool> {
        Ok(false)
    }

    /// Recovery: a page a complete structure change freed.
    ///
    /// # Errors
    /// Device errors.
    fn recover_freed(&self, pid: PageId) -> Result<()>;

    /// Recovery, before redo: copies written from now on are ordered against `wal`'s
    /// LSNs, and every copy of a page found at open that is older than the page's SSD
    /// copy by a flush record (`flushed`: page and its latest last-flush LSN in the
    /// scanned log) is dropped, so that the SSD copy, which redo relies on to skip the
    /// changes below that LSN unread, is the one used. Returns how many were dropped.
    ///
    /// # Errors
    /// Device errors reading or clearing a copy.
    fn recover_trust_newest(&self, _wal: &Arc<Wal>, _flushed: &HashMap<u64, Lsn>) -> Result<usize> {
        Ok(0)
    }

    /// Pages found again in NVM at open.
    fn pages_reused(&self) -> usize;

    /// The highest page LSN among the pages found again at open (NVM frame headers),
    /// and its page: the log must reach past it.
    fn page_lsn_max_found(&self) -> Option<(PageId, Lsn)> {
        None
    }

    /// The NVM pool of an existing database could not be reused and was formatted, and
    /// why (a cache: the log rebuilds what it held; see `docs/wal.md`, "Creation").
    fn nvm_pool_formatted(&self) -> Option<String> {
        None
    }

    /// No double-write area could be applied at open where one was expected, and why:
    /// an SSD page whose in-place write was lost is older than the flush records say,
    /// so redo must not skip changes by them, and scans from the oldest record kept.
    fn double_write_lost(&self) -> Option<String> {
        None
    }

    /// Pages loaded from a snapshot at open (`main-memory`).
    fn snapshot_pages(&self) -> usize {
        0
    }

    /// Torn SSD pages the store restored from its double-write area at open.
    fn pages_restored(&self) -> usize {
        0
    }

    /// NVM frames caught in the middle of an in-place write (IN_UPDATE) or unreadable
    /// at open: not used, so their pages are rebuilt from SSD and the log.
    fn nvm_frames_cleared(&self) -> usize {
        0
    }

    /// The oldest change the store keeps outside the page file that a crash may make
    /// recovery rebuild (`nvsql`: dirty NVM pages, left there by checkpoints): the log
    /// is kept back to it, but redo scans from there only when the store says at open
    /// that it must ([`log_needed_at_open`](Self::log_needed_at_open)).
    fn oldest_retained(&self) -> Option<Lsn> {
        None
    }

    /// At open: the oldest change of a page the store could not keep (an NVM frame a
    /// crash caught mid-write), from which redo must scan to rebuild it (`Some(0)`:
    /// unknown, from the oldest retained record); `None`: none.
    fn log_needed_at_open(&self) -> Option<Lsn> {
        None
    }

    /// Pages are changed in place and each write-back is logged as a line image before it
    /// happens: recovery repeats those images instead of the updates, and a commit
    /// truncates the log behind the oldest record still needed.
    fn in_place(&self) -> bool {
        false
    }

    /// For an in-place store: the lowest LSN a change not yet in the store may need.
    fn oldest_pending(&self) -> Option<Lsn> {
        None
    }

    /// An error if the store failed to keep a change it accepted (`nvm-direct` after a
    /// failed write-back): nothing may commit on top of it until it is reopened.
    ///
    /// # Errors
    /// The failure, as the store reports it.
    fn check(&self) -> Result<()> {
        Ok(())
    }
}
