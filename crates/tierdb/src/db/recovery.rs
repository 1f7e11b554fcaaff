//! Recovery on open: analysis and redo in one forward pass over the log from the
//! checkpoint's redo point, then undo of the transactions that did not commit, then a
//! checkpoint.
//!
//! - **Redo** repeats history. An update or compensation record is applied to its leaf
//!   when the leaf's page LSN is older than the record; a page image is installed (and
//!   the node's LSN set to the record's); a freed page goes back on the free list. Pages
//!   the log created after the checkpoint are counted as allocated.
//! - **Analysis** (the same pass): a transaction is a loser if it has records and no
//!   commit or end record.
//! - **Undo** walks each loser's records backwards through their previous-LSN chain and
//!   reverses every update through the tree, logging compensation records, whose
//!   undo-next LSN lets a crash during undo resume where it stopped; then an end record.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::{Db, DbError, decode_change, page_of, read_control};
use crate::Result;
use crate::btree::BTree;
use crate::btree::node::{HEADER_BYTES, NODE_MAGIC, NodeMut, NodeRef, OFF_PAGE_LSN};
use crate::buffer::ExclusivePage;
use crate::ids::PageId;
use crate::wal::{Kind, Lsn, RecordHead};

/// What recovery did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecoveryReport {
    /// Where redo started (the last checkpoint's redo point, or the log's start).
    pub redo_from: Lsn,
    /// The end of the log.
    pub log_end: Lsn,
    pub records_read: u64,
    /// Changes applied to pages that were older than their records.
    pub changes_redone: u64,
    /// Changes skipped because their page already had them.
    pub changes_skipped: u64,
    pub images_installed: u64,
    pub pages_freed: u64,
    /// Structure changes whose end record did not reach the log: not applied (none of
    /// their pages can have been written out).
    pub incomplete_smos: usize,
    pub committed: u64,
    /// Transactions rolled back.
    pub losers: Vec<u64>,
    /// Updates undone for them.
    pub updates_undone: u64,
    /// What the log's recovery reported about its tail.
    pub log_tail: Option<String>,
    /// Pages found again in NVM.
    pub nvm_pages_reused: usize,
    pub secs: f64,
}

#[derive(Default)]
struct TxnInfo {
    last: Lsn,
    finished: bool,
}

pub(super) fn recover(db: &Db, started: Instant) -> Result<RecoveryReport> {
    let mut rep = RecoveryReport {
        log_tail: db.wal.recovered().tail.clone(),
        nvm_pages_reused: db.bm.restart_info().map_or(0, |r| r.pages_reused),
        ..RecoveryReport::default()
    };
    let from = read_control(&db.dir)?.unwrap_or(db.wal.start_lsn()).max(db.wal.start_lsn());
    rep.redo_from = from;
    let mut txns: HashMap<u64, TxnInfo> = HashMap::new();
    let mut max_txn = 0u64;
    let mut max_smo = 0u64;
    // Structure changes' images and frees wait for their end record.
    let mut smos: HashMap<u64, Vec<crate::wal::Record>> = HashMap::new();
    // 1. Analysis and redo.
    for rec in db.wal.records_from(from) {
        let rec = rec?;
        rep.records_read += 1;
        let h = rec.head;
        if h.txn & super::SMO_ID_BIT != 0 {
            max_smo = max_smo.max(h.txn & !super::SMO_ID_BIT);
            if h.kind == Kind::SmoEnd {
                for r in smos.remove(&h.txn).unwrap_or_default() {
                    apply_smo_record(db, &r, &mut rep)?;
                }
            } else {
                smos.entry(h.txn).or_default().push(rec);
            }
            continue;
        }
        if h.txn != 0 {
            max_txn = max_txn.max(h.txn);
            let t = txns.entry(h.txn).or_default();
            t.last = rec.lsn;
            match h.kind {
                Kind::Commit => {
                    t.finished = true;
                    rep.committed += 1;
                }
                Kind::End => t.finished = true,
                _ => {}
            }
        }
        match h.kind {
            Kind::Update | Kind::Compensation => {
                if redo_change(db, rec.lsn, PageId(h.page), &rec.payload)? {
                    rep.changes_redone += 1;
                } else {
                    rep.changes_skipped += 1;
                }
            }
            _ => {}
        }
    }
    rep.incomplete_smos = smos.len();
    rep.log_end = db.wal.next_lsn();
    db.next_txn.store(max_txn + 1, std::sync::atomic::Ordering::Relaxed);
    db.next_smo.store(max_smo + 1, std::sync::atomic::Ordering::Relaxed);
    // 2. From here on, pages leave DRAM only after the log is forced.
    db.bm.set_log(db.wal.clone())?;
    // 3. Undo of the losers, newest first.
    let mut losers: Vec<(u64, Lsn)> = txns.iter().filter(|(_, t)| !t.finished).map(|(id, t)| (*id, t.last)).collect();
    losers.sort_by_key(|(_, last)| std::cmp::Reverse(*last));
    for (id, last) in losers {
        rep.updates_undone += undo_loser(db, id, last)?;
        rep.losers.push(id);
    }
    // 4. A checkpoint: the next recovery starts here.
    db.checkpoint()?;
    rep.secs = started.elapsed().as_secs_f64();
    Ok(rep)
}

/// Applies a record of a complete structure change.
fn apply_smo_record(db: &Db, r: &crate::wal::Record, rep: &mut RecoveryReport) -> Result<()> {
    match r.head.kind {
        Kind::PageImage => {
            install_image(db, r.lsn, PageId(r.head.page), &r.payload)?;
            rep.images_installed += 1;
        }
        Kind::PageFree => {
            db.bm.recover_freed(PageId(r.head.page))?;
            rep.pages_freed += 1;
        }
        _ => {}
    }
    Ok(())
}

/// Applies an update or compensation to its leaf if the leaf is older. Returns whether
/// it applied.
fn redo_change(db: &Db, lsn: Lsn, pid: PageId, payload: &[u8]) -> Result<bool> {
    let c = decode_change(lsn, payload)?;
    let mut page = page_of(&db.bm, pid)?;
    let node = match NodeRef::parse(&page, pid) {
        Ok(node) => node,
        // Not a node on disk: a page created by a structure change whose image comes
        // later in the log, or one freed later (its bytes mark it free). Either way a
        // later record sets the page; nothing to do with this one.
        Err(crate::btree::BTreeError::NotATree { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if node.page_lsn() >= lsn {
        return Ok(false);
    }
    let (pos, found) = node.lower_bound(&c.key)?;
    // A patch rewrites part of the value the page holds.
    let patched = match (c.patch_offset, found) {
        (Some(offset), true) => {
            let mut v = node.value(pos)?.to_vec();
            let Some(range) = v.get_mut(offset..offset.saturating_add(c.value.len())) else {
                let what = format!("a patch of bytes {offset}.. past a {}-byte value in {pid}", v.len());
                return Err(DbError::BadRecord { lsn, what }.into());
            };
            range.copy_from_slice(&c.value);
            Some(v)
        }
        (Some(_), false) => {
            return Err(DbError::BadRecord { lsn, what: format!("a patch of a key {pid} does not hold") }.into());
        }
        (None, _) => None,
    };
    let mut m = NodeMut::trusted(&mut page, pid);
    let fits = match (c.delete, found) {
        (true, true) => {
            m.remove(pos)?;
            true
        }
        (true, false) => true,
        (false, true) => m.set_value(pos, patched.as_deref().unwrap_or(&c.value))?,
        (false, false) => m.insert(pos, &c.key, &c.value)?,
    };
    if !fits {
        return Err(DbError::BadRecord { lsn, what: format!("its change does not fit {pid} during redo") }.into());
    }
    m.set_page_lsn(lsn);
    page.set_page_lsn(lsn);
    Ok(true)
}

/// Installs a page image: the page's bytes become the image; a B+-tree node's LSN
/// becomes the record's.
fn install_image(db: &Db, lsn: Lsn, pid: PageId, image: &[u8]) -> Result<()> {
    let mut page = page_of(&db.bm, pid)?;
    if image.len() != page.len() {
        return Err(DbError::BadRecord {
            lsn,
            what: format!("an image of {} bytes for a page of {}", image.len(), page.len()),
        }
        .into());
    }
    page.copy_from_slice(image);
    if image.len() >= HEADER_BYTES && image[..4] == NODE_MAGIC {
        page[OFF_PAGE_LSN..OFF_PAGE_LSN + 8].copy_from_slice(&lsn.to_le_bytes());
    }
    page.set_page_lsn(lsn);
    Ok(())
}

/// Rolls back transaction `id` from its record at `last`: every update not yet
/// compensated is reversed through its tree, with a compensation record. Returns how
/// many were undone.
fn undo_loser(db: &Db, id: u64, last: Lsn) -> Result<u64> {
    let log = super::TxnLog { db, id, state: parking_lot::Mutex::new(super::TxnState::default()) };
    log.state.lock().last = last;
    let mut n = 0;
    let mut lsn = last;
    let mut guard = 0u64;
    while lsn != 0 {
        guard += 1;
        if guard > crate::limits::RECOVERY_UNDO_STEPS_MAX {
            return Err(DbError::BadRecord { lsn, what: "the undo chain does not end".into() }.into());
        }
        let rec = db.wal.read(lsn)?;
        if rec.head.txn != id {
            return Err(DbError::BadRecord { lsn, what: format!("in the chain of transaction {id}") }.into());
        }
        lsn = match rec.head.kind {
            Kind::Update => {
                let c = decode_change(rec.lsn, &rec.payload)?;
                log.state.lock().compensating = Some(rec.head.prev);
                let tree = BTree::open(&db.bm, c.root)?.logged(&log);
                let undo = match (c.patch_offset, c.old) {
                    (Some(offset), Some(old)) => super::Undo::Patch { offset, old },
                    (_, old) => super::Undo::Restore(old),
                };
                if !undo.apply(&tree, &c.key)? {
                    return Err(DbError::BadRecord {
                        lsn: rec.lsn,
                        what: "the undo of a patch of a missing key".into(),
                    }
                    .into());
                }
                n += 1;
                rec.head.prev
            }
            // Undone already: continue before what it undid.
            Kind::Compensation => rec.head.undo_next,
            _ => rec.head.prev,
        };
    }
    let last = log.state.lock().last;
    db.wal.append(&RecordHead::new(Kind::End, id, last), &[])?;
    Ok(n)
}
