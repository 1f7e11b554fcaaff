//! Recovery on open: analysis and redo in one forward pass over the log from the
//! checkpoint's redo point, then undo of the transactions that did not commit, then a
//! checkpoint.
//!
//! - **Redo** repeats history. An update or compensation record is applied to its leaf
//!   when the leaf's page LSN is older than the record; a page image is installed (and
//!   the node's LSN set to the record's); a freed page goes back on the free list. Pages
//!   the log created after the checkpoint are counted as allocated. A leaf change to a
//!   page that is free at that point is skipped (an older incarnation's, made moot by
//!   the free after it: redo may start before the checkpoint, at the oldest transaction
//!   then active), and so is every record of a page that holds the checkpoint's
//!   free-page list (`buffer/manager/free_list.rs`). For an in-place
//!   store (`nvm-direct`) history is repeated physically instead: every line image is
//!   written again in log order and updates are not redone (a change whose line image
//!   is not in the log never reached NVM).
//! - **Analysis** (the same pass): a transaction is a loser if it has records and no
//!   commit or end record.
//! - **Undo** walks each loser's records backwards through their previous-LSN chain and
//!   reverses every update through the tree, logging compensation records, whose
//!   undo-next LSN lets a crash during undo resume where it stopped; then an end record.

use std::collections::HashMap;
use std::time::Instant;

use crate::Result;
use crate::btree::BTree;
use crate::btree::node::{HEADER_BYTES, NODE_MAGIC, NodeMut, NodeRef, OFF_PAGE_LSN};
use crate::ids::{PageId, TxnId};
use crate::page::ExclusivePage;
use crate::wal::payload::{decode_change, decode_flushed, decode_lines};
use crate::wal::{Kind, Lsn, Record, RecordHead};

use super::config::DbError;
use super::control::{Control, read_control};
use super::handle::Db;
use super::report::RecoveryReport;
use super::store::DbStore;
use super::txn::TxnLog;
use super::undo::Undo;

#[derive(Default)]
struct TxnInfo {
    last: Lsn,
    finished: bool,
}

pub(super) fn recover<S: DbStore>(db: &Db<S>, started: Instant) -> Result<RecoveryReport> {
    let in_place = db.store.in_place();
    let mut rep = RecoveryReport {
        log_tail: db.wal.recovered().tail.clone(),
        nvm_pages_reused: db.store.pages_reused(),
        snapshot_pages_loaded: db.store.snapshot_pages(),
        nvm_frames_cleared: db.store.nvm_frames_cleared(),
        pages_restored: db.store.pages_restored(),
        nvm_pool_formatted: db.store.nvm_pool_formatted(),
        double_write_lost: db.store.double_write_lost(),
        log_ring_remade: db.wal.ring_remade().map(str::to_string),
        ..RecoveryReport::default()
    };
    rep.open_secs = started.elapsed().as_secs_f64();
    let start = db.wal.start_lsn();
    let control = read_control(&db.dir)?.unwrap_or(Control {
        retain: start,
        redo: start,
        next_txn: 0,
        next_smo: 0,
        clean_end: Lsn::NONE,
    });
    let (retain, redo) = (control.retain, control.redo);
    // Redo scans from the checkpoint's redo point, or further back to rebuild a page
    // whose NVM frame a crash caught mid-write (NV-SQL §5.3: from its recovery LSN; 0,
    // unknown: from the oldest record kept). The pages in NVM that were not being
    // written hold every change before the redo point (a checkpoint waits for the
    // in-place writers, and a page leaving NVM is written to SSD) and skip the records
    // they hold by page LSN.
    let from = match db.store.log_needed_at_open() {
        _ if db.redo_from_retained => retain,
        None => redo,
        Some(Lsn::NONE) => retain,
        Some(l) => redo.min(l).max(retain),
    }
    .max(start);
    // The redo point and the retained log's start are records' starts; a frame's
    // recovery LSN is only a lower bound on its oldest change and may fall inside a
    // record (earlier pools stored one past a page LSN). Scan from a record's start
    // then, and pass over the records that begin below the bound.
    let scan_from = if from == redo.max(start) || from == retain.max(start) { from } else { retain.max(start) };
    // A salvaged log was cut below them and filled up past them: they need not be
    // records' starts any more, the cut is.
    let scan_from = db.wal.recovered().salvaged.map_or(scan_from, |cut| scan_from.min(cut));
    // The pages found again in NVM carry LSNs the log must reach, as those redo reads.
    if let Some((pid, lsn)) = db.store.page_lsn_max_found() {
        page_within_log(db, pid, lsn)?;
    }
    rep.redo_from = from;
    rep.log_retained_from = retain.max(start);
    let mut txns: HashMap<TxnId, TxnInfo> = HashMap::new();
    let mut max_txn = 0u64;
    let mut max_smo = 0u64;
    // Structure changes' images and frees wait for their end record.
    let mut smos: HashMap<TxnId, Vec<Record>> = HashMap::new();
    // 1. Analysis: where each page's SSD copy stands (flush records: redo skips the
    //    changes a copy holds without reading the page). One pass over the records
    //    from the scan's start; the log is read ahead in chunks, so this costs little
    //    beside a page read.
    let pass = Instant::now();
    let mut flushed = flushed_pages(db, scan_from)?;
    // Without the double-write area an SSD page may be older than its flush record.
    flushed.trusted = rep.double_write_lost.is_none();
    rep.flush_records = flushed.records;
    // A copy found at open is trusted only if it is at least as new as every flush
    // record redo relies on (a kill between a page's SSD write and the refresh of its
    // NVM copy leaves an older NVM frame in front of the newer SSD page).
    rep.nvm_frames_stale = db.store.recover_trust_newest(&db.wal, &flushed.at)?;
    // 2. Analysis and redo. Each apply is timed (two clock reads per record applied:
    //    small against a page fix), the rest of the pass is the analysis.
    let mut applying = std::time::Duration::ZERO;
    for rec in db.wal.records_from(scan_from) {
        let rec = rec?;
        if rec.lsn < from {
            continue;
        }
        rep.records_read += 1;
        let h = rec.head;
        if h.txn.is_smo() {
            max_smo = max_smo.max(h.txn.seq());
            if h.kind == Kind::SmoEnd {
                let t = Instant::now();
                for r in smos.remove(&h.txn).unwrap_or_default() {
                    apply_smo_record(db, &r, &mut rep, &flushed)?;
                }
                applying += t.elapsed();
            } else {
                smos.entry(h.txn).or_default().push(rec);
            }
            continue;
        }
        if !h.txn.is_none() {
            max_txn = max_txn.max(h.txn.get());
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
        let t = Instant::now();
        match h.kind {
            // In place: the line images carry every change that reached the pages.
            Kind::Update | Kind::Compensation if in_place => rep.changes_skipped += 1,
            Kind::LineImage => {
                if install_lines(db, rec.lsn, PageId(h.page), &rec.payload)? {
                    rep.line_images_installed += 1;
                } else {
                    rep.records_of_free_pages += 1;
                }
            }
            Kind::Update | Kind::Compensation => {
                match redo_change(db, rec.lsn, PageId(h.page), &rec.payload, &flushed)? {
                    Redo::Applied => rep.changes_redone += 1,
                    Redo::Held => rep.changes_skipped += 1,
                    Redo::HeldUnread => {
                        rep.changes_skipped += 1;
                        rep.changes_skipped_unread += 1;
                    }
                    Redo::HeldInNvm => {
                        rep.changes_skipped += 1;
                        rep.changes_skipped_in_nvm += 1;
                    }
                    Redo::FreePage => rep.records_of_free_pages += 1,
                }
            }
            _ => {}
        }
        applying += t.elapsed();
    }
    rep.redo_secs = applying.as_secs_f64();
    rep.analysis_secs = (pass.elapsed().saturating_sub(applying)).as_secs_f64();
    rep.incomplete_smos = smos.len();
    rep.log_end = db.wal.next_lsn();
    // Above every id the retained log may hold, not only those scanned (see `Control`).
    db.next_txn.store((max_txn + 1).max(control.next_txn), std::sync::atomic::Ordering::Relaxed);
    db.next_smo.store((max_smo + 1).max(control.next_smo), std::sync::atomic::Ordering::Relaxed);
    // 3. From here on, pages leave DRAM only after the log is forced.
    db.store.attach_log(&db.wal, db.durability)?;
    // 4. Undo of the losers, newest first.
    let undo = Instant::now();
    let mut losers: Vec<(TxnId, Lsn)> = txns.iter().filter(|(_, t)| !t.finished).map(|(id, t)| (*id, t.last)).collect();
    losers.sort_by_key(|(_, last)| std::cmp::Reverse(*last));
    for (id, last) in losers {
        rep.updates_undone += undo_loser(db, id, last)?;
        rep.losers.push(id);
    }
    rep.undo_secs = undo.elapsed().as_secs_f64();
    // 5. A checkpoint: the next recovery starts here.
    let checkpoint = Instant::now();
    db.checkpoint()?;
    rep.checkpoint_secs = checkpoint.elapsed().as_secs_f64();
    rep.secs = started.elapsed().as_secs_f64();
    Ok(rep)
}

/// The last-flush LSN of each page the scanned log's flush records name (the latest
/// one), and how many flush records there were.
#[derive(Default)]
struct Flushed {
    at: HashMap<u64, Lsn>,
    records: u64,
    /// Whether redo may skip changes by them: the writes they note survived the crash
    /// (their double-write copies were found at open).
    trusted: bool,
}

impl Flushed {
    /// Whether page `pid`'s SSD copy holds the change logged at `lsn`: a flush record
    /// says the page was written at a later log LSN.
    fn holds(&self, pid: PageId, lsn: Lsn) -> bool {
        self.trusted && self.at.get(&pid.0).is_some_and(|&flushed| lsn < flushed)
    }
}

/// Whether page `pid`'s current copy is known, without reading the page, to hold the
/// record at `lsn` — by a flush record ([`Redo::HeldUnread`]) or by its NVM frame's
/// header ([`Redo::HeldInNvm`]) — or `None`. Redo then skips every such record of the
/// page, images included: installing an older image would take the page back behind
/// changes it skips as held.
fn held_unread<S: DbStore>(db: &Db<S>, flushed: &Flushed, pid: PageId, lsn: Lsn) -> Result<Option<Redo>> {
    Ok(if flushed.holds(pid, lsn) {
        Some(Redo::HeldUnread)
    } else if db.store.recover_holds(pid, lsn)? {
        Some(Redo::HeldInNvm)
    } else {
        None
    })
}

/// Reads the flush records from `from` on.
fn flushed_pages<S: DbStore>(db: &Db<S>, from: Lsn) -> Result<Flushed> {
    let mut f = Flushed { trusted: true, ..Flushed::default() };
    for rec in db.wal.records_from(from) {
        let rec = rec?;
        if rec.head.kind != Kind::PagesFlushed {
            continue;
        }
        f.records += 1;
        for (pid, lsn) in decode_flushed(rec.lsn, &rec.payload)? {
            debug_assert!(lsn <= rec.lsn, "{pid} flushed at {lsn}, noted at {}", rec.lsn);
            let at = f.at.entry(pid.0).or_insert(lsn);
            *at = (*at).max(lsn);
        }
    }
    Ok(f)
}

/// Applies a record of a complete structure change.
fn apply_smo_record<S: DbStore>(db: &Db<S>, r: &Record, rep: &mut RecoveryReport, flushed: &Flushed) -> Result<()> {
    match r.head.kind {
        Kind::PageImage => {
            let pid = PageId(r.head.page);
            if held_unread(db, flushed, pid, r.lsn)?.is_some() {
                // The same allocation bookkeeping as an install, without the page.
                if db.store.recover_allocated(pid)? {
                    rep.images_skipped_unread += 1;
                } else {
                    rep.records_of_free_pages += 1;
                }
            } else if install_image(db, r.lsn, pid, &r.payload)? {
                rep.images_installed += 1;
            } else {
                rep.records_of_free_pages += 1;
            }
        }
        Kind::PageFree => {
            db.store.recover_freed(PageId(r.head.page))?;
            rep.pages_freed += 1;
        }
        _ => {}
    }
    Ok(())
}

/// What redo did with an update or compensation.
enum Redo {
    /// Applied to its leaf, which was older.
    Applied,
    /// The leaf already held it.
    Held,
    /// A flush record says the page's SSD copy holds it: the page was not read.
    HeldUnread,
    /// The page's NVM frame holds it (its header's page LSN): the page was not fixed.
    HeldInNvm,
    /// The page is free at this point (see [`DbStore::recover_is_free`]; redo may start
    /// before the checkpoint, at the oldest transaction then active, and the page may
    /// have been freed after this record and its bytes on disk be of another
    /// incarnation).
    FreePage,
}

/// Applies an update or compensation to its leaf if the leaf is older.
fn redo_change<S: DbStore>(db: &Db<S>, lsn: Lsn, pid: PageId, payload: &[u8], flushed: &Flushed) -> Result<Redo> {
    let c = decode_change(lsn, payload)?;
    if db.store.recover_is_free(pid) {
        return Ok(Redo::FreePage);
    }
    if let Some(held) = held_unread(db, flushed, pid, lsn)? {
        // The same allocation bookkeeping as a read of the page, without the read.
        if !db.store.recover_allocated(pid)? {
            return Ok(Redo::FreePage);
        }
        // Checked against the page (a shared fix: it leaves an NVM page in place).
        #[cfg(debug_assertions)]
        if let Ok(page) = db.store.fix_shared(pid)
            && let Ok(node) = NodeRef::parse(&page, pid)
        {
            debug_assert!(
                node.page_lsn() >= lsn,
                "{pid} holds {lsn} by its flush or NVM frame, but is at {}",
                node.page_lsn()
            );
        }
        return Ok(held);
    }
    let Some(mut page) = page_of(&db.store, pid)? else { return Ok(Redo::FreePage) };
    let node = match NodeRef::parse(&page, pid) {
        Ok(node) => node,
        // Not a node on disk: a page created by a structure change whose image comes
        // later in the log, or one freed later (its bytes are another free-list page's
        // or a freed node's). Either way a later record sets the page; nothing to do with
        // this one.
        Err(crate::btree::BTreeError::NotATree { .. }) => return Ok(Redo::Held),
        Err(e) => return Err(e.into()),
    };
    page_within_log(db, pid, node.page_lsn())?;
    if node.page_lsn() >= lsn {
        return Ok(Redo::Held);
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
    Ok(Redo::Applied)
}

/// Checks that a page read during redo (or found in NVM at open) carries an LSN the log
/// reaches: one past the log's end means the log lost durable records, and the LSNs
/// handed out from its end would be below the page's, so that redo after the next crash
/// skips changes of the page. A salvaged log (`WalConfig::salvage_damaged_log`) is moved
/// past the page's LSN.
fn page_within_log<S: DbStore>(db: &Db<S>, pid: PageId, page_lsn: Lsn) -> Result<()> {
    let log_end = db.wal.next_lsn();
    if page_lsn < log_end {
        return Ok(());
    }
    if db.wal.salvaging() {
        return Ok(db.wal.skip_past(page_lsn)?);
    }
    let log = db.wal.file().segment_paths().pop().unwrap_or_else(|| db.wal.file().dir().to_path_buf());
    Err(DbError::PageAheadOfLog { log, pid, page_lsn, log_end }.into())
}

/// Installs a page image: the page's bytes become the image; a B+-tree node's LSN
/// becomes the record's. False for a page that holds the free-page list (skipped).
fn install_image<S: DbStore>(db: &Db<S>, lsn: Lsn, pid: PageId, image: &[u8]) -> Result<bool> {
    let Some(mut page) = page_of(&db.store, pid)? else { return Ok(false) };
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
    Ok(true)
}

/// Writes the lines of a line image into its page (unconditionally: repeating every
/// image in log order leaves each line as the last write-back made it, whether or not
/// that write-back reached NVM whole). False for a page that holds the free-page list
/// (skipped; `nvm-direct` has none).
fn install_lines<S: DbStore>(db: &Db<S>, lsn: Lsn, pid: PageId, payload: &[u8]) -> Result<bool> {
    let lines = decode_lines(lsn, payload)?;
    let Some(mut page) = page_of(&db.store, pid)? else { return Ok(false) };
    let line = crate::limits::CACHE_LINE_BYTES;
    if lines.last().is_some_and(|(l, _)| (l + 1) * line > page.len()) {
        return Err(DbError::BadRecord { lsn, what: format!("a line image past the end of {pid}") }.into());
    }
    let bytes: &mut [u8] = &mut page;
    for (l, b) in lines {
        bytes[l * line..(l + 1) * line].copy_from_slice(b);
    }
    Ok(true)
}

/// Rolls back transaction `id` from its record at `last`: every update not yet
/// compensated is reversed through its tree, with a compensation record. Returns how
/// many were undone.
fn undo_loser<S: DbStore>(db: &Db<S>, id: TxnId, last: Lsn) -> Result<u64> {
    let log = TxnLog::new(db, id);
    log.state.lock().last = last;
    let mut n = 0;
    let mut lsn = last;
    let mut guard = 0u64;
    while !lsn.is_none() {
        guard += 1;
        if guard > crate::limits::RECOVERY_UNDO_STEPS_MAX {
            return Err(DbError::BadRecord { lsn, what: "the undo chain does not end".into() }.into());
        }
        let rec = db.wal.read(lsn)?;
        if rec.head.txn != id {
            return Err(DbError::BadRecord { lsn, what: format!("in the chain of {id}") }.into());
        }
        lsn = match rec.head.kind {
            Kind::Update => {
                let c = decode_change(rec.lsn, &rec.payload)?;
                log.state.lock().compensating = Some(rec.head.prev);
                let tree = BTree::open(&db.store, c.root)?.logged(&log);
                let undo = Undo::of_update(c.patch_offset, c.old);
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
            // Undone already: continue before what it undid. In place, the newest
            // record's change may not have reached NVM (its line image was not logged
            // when the crash came): it is applied again (it only sets a key's value or
            // removes it, so once more is harmless), logged as a new compensation.
            Kind::Compensation if db.store.in_place() => {
                let c = decode_change(rec.lsn, &rec.payload)?;
                log.state.lock().compensating = Some(rec.head.undo_next);
                let tree = BTree::open(&db.store, c.root)?.logged(&log);
                let redo = Undo::repeating(c.delete, c.patch_offset, c.value);
                redo.apply(&tree, &c.key)?;
                rec.head.undo_next
            }
            Kind::Compensation => rec.head.undo_next,
            _ => rec.head.prev,
        };
    }
    let last = log.state.lock().last;
    db.wal.append(&RecordHead::new(Kind::End, id, last), &[])?;
    // The compensations registered the loser as active (`TxnLog::leaf_change`); it has
    // ended now. Left in the set, it would hold every later checkpoint's start point
    // at its rollback's first record: more redo each time, and no log truncated past it.
    db.active.lock().remove(&id);
    Ok(n)
}

/// A page for redo, fixed exclusive: counted as allocated first (the log may name
/// pages created after the last checkpoint). `None` for a page that holds the free-page
/// list: free since before the record, which is skipped (see
/// [`DbStore::recover_allocated`]).
fn page_of<S: DbStore>(store: &S, pid: PageId) -> Result<Option<S::Exclusive<'_>>> {
    if !store.recover_allocated(pid)? {
        return Ok(None);
    }
    Ok(store.fix_exclusive(pid).map(Some)?)
}
