//! What recovery did when a database was opened ([`RecoveryReport`]): counts of the
//! records read, redone, skipped and undone, what the store and the log found at open,
//! and the time of each phase. Filled by `recovery.rs` and `open.rs`, then read-only.

use serde::Serialize;

use crate::ids::TxnId;
use crate::wal::Lsn;

/// What recovery did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecoveryReport {
    /// Where redo started (the last checkpoint's redo point, or the log's start).
    pub redo_from: Lsn,
    /// The oldest record the last checkpoint kept: before `redo_from` when a durable
    /// NVM cache (`nvsql`) holds older changes than SSD.
    pub log_retained_from: Lsn,
    /// The end of the log.
    pub log_end: Lsn,
    /// Log records redo went through, from `redo_from` to the end.
    pub records_read: u64,
    /// Changes applied to pages that were older than their records.
    pub changes_redone: u64,
    /// Changes skipped because their page already had them.
    pub changes_skipped: u64,
    /// Of those, the changes skipped without reading the page: a flush record says its
    /// SSD copy was written after them.
    pub changes_skipped_unread: u64,
    /// Changes skipped because the page's NVM frame (found again at restart) holds
    /// them, by its header's page LSN, without fixing the page (NV-SQL §5.3).
    pub changes_skipped_in_nvm: u64,
    /// Structure changes' page images skipped the same way (either).
    pub images_skipped_unread: u64,
    /// Flush records read (pages written to SSD, with their last-flush LSNs).
    pub flush_records: u64,
    /// Page images of complete structure changes written over their pages.
    pub images_installed: u64,
    /// `nvm-direct`: line images repeated (every one in the log, in log order).
    pub line_images_installed: u64,
    /// Pages that complete structure changes freed, put back on the free list.
    pub pages_freed: u64,
    /// Records of pages free at that point of the redo, skipped: leaf changes of an
    /// older incarnation of a page the checkpoint listed as free (made moot by the free
    /// that followed), and any record of a page that holds the checkpoint's free-page
    /// list.
    pub records_of_free_pages: u64,
    /// Structure changes whose end record did not reach the log: not applied (none of
    /// their pages can have been written out).
    pub incomplete_smos: usize,
    /// Commit records found in the scanned log (transactions that need no undo).
    pub committed: u64,
    /// Transactions rolled back.
    pub losers: Vec<TxnId>,
    /// Updates undone for them.
    pub updates_undone: u64,
    /// What the log's recovery reported about its tail.
    pub log_tail: Option<String>,
    /// Pages found again in NVM.
    pub nvm_pages_reused: usize,
    /// `main-memory`: pages loaded from the last checkpoint's snapshot.
    pub snapshot_pages_loaded: usize,
    /// Files of a creation that a crash cut short (no control file yet), removed before
    /// the database was created afresh.
    pub unfinished_creation: Vec<String>,
    /// The NVM pool of this existing database could not be reused (missing, zeroed,
    /// another database's) and was formatted, and why: a cache whose pages the page
    /// file and the log hold (for a durable cache, `nvsql`, redo then scans from the
    /// oldest record kept, `log_retained_from`).
    pub nvm_pool_formatted: Option<String>,
    /// No double-write area could be applied where one was expected (missing, zeroed),
    /// and why: redo then scans from the oldest record kept and skips nothing by flush
    /// records (a page whose in-place write was lost is older than they say); a torn
    /// page fails its seal when read.
    pub double_write_lost: Option<String>,
    /// The NVM log ring could not be used and was made afresh, and why that lost
    /// nothing (the last close left every record in the log file).
    pub log_ring_remade: Option<String>,
    /// NVM frames not used because a crash caught them being written in place (their
    /// IN_UPDATE flag set) or their header unreadable: each such page is rebuilt from
    /// its SSD copy by the redo (NV-SQL §5.3). Pages reused from NVM skip the redo of
    /// every change they hold (counted in `changes_skipped`).
    pub nvm_frames_cleared: usize,
    /// NVM frames found at open but older than their page's SSD copy (by a flush record
    /// of the scanned log against the frame's written LSN): dropped, the SSD copy used.
    pub nvm_frames_stale: usize,
    /// SSD pages restored from the double-write area when the page file was opened
    /// (torn in place by the crash, or older than their copy).
    pub pages_restored: usize,
    /// Open to the end of the checkpoint that ends recovery.
    pub secs: f64,
    /// The split of `secs` by phase (NV-SQL's Figure 10): opening the store (the page
    /// file, the double-write area, the NVM pool's frame headers: the in-update flag
    /// scan) and the log;
    pub open_secs: f64,
    /// the pass over the log less the time spent applying its records (reading,
    /// decoding, the transaction table: the analysis);
    pub analysis_secs: f64,
    /// applying changes, images and frees to pages (the redo proper, page reads
    /// included);
    pub redo_secs: f64,
    /// rolling back the losers;
    pub undo_secs: f64,
    /// and the checkpoint that ends recovery.
    pub checkpoint_secs: f64,
}
