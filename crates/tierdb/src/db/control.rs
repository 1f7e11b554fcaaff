//! The control file and the creation of a database.
//!
//! The control file (`CHECKPOINT` in the database directory) says where recovery
//! starts: written atomically by each checkpoint (temporary file, fsync, rename, fsync
//! of the directory), and once more by a clean close with the log's end. Its presence
//! says that the database exists; the creation marker (`CREATING`) says that one is
//! being created ([`prepare_open`] tells the cases apart, `docs/wal.md`, "Creation").
//!
//! Invariants: `retain <= redo` in every control file written or read; a control file
//! with a clean end is written only by a close, and cleared by the next open before it
//! appends. Only the thread that opens, checkpoints or closes the database writes it:
//! checkpoints (manual, background, close's) are serialised by a lock of the database
//! (`checkpointer.rs`), and a close stops the background checkpointer first.

use std::path::{Path, PathBuf};

use crate::Result;
use crate::wal::Lsn;

use super::config::{DbConfig, DbError, LOG_DIR};

/// The control file's name in the database directory: where recovery starts. Its
/// presence also says that the database was created (see `prepare_open`).
const CONTROL_FILE: &str = "CHECKPOINT";

/// The creation marker's name in the database directory: made (and synced) before any
/// other file of a new database, removed once its control file is in place. A
/// directory with files of a database but neither this nor the control file lost its
/// control file, which is an error, never a new database (see `prepare_open`).
const CREATION_MARKER: &str = "CREATING";

/// What the control file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Control {
    /// The oldest record kept.
    pub retain: Lsn,
    /// Where redo starts (not before `retain`).
    pub redo: Lsn,
    /// Lower bounds of the next transaction and structure-change ids (0: unknown, as in
    /// a control file written before they were kept). Ids restart from what the
    /// recovery's scan saw, and a later recovery may scan further back than the last
    /// one (a torn NVM frame's recovery LSN, `nvsql`): an id used before the last
    /// checkpoint and used again after it would make a loser look finished, or join
    /// an unfinished structure change's images to another's end record.
    /// Both are sequence numbers ([`TxnId::seq`](crate::ids::TxnId::seq)).
    pub next_txn: u64,
    /// See `next_txn`.
    pub next_smo: u64,
    /// The log's end when the database was last closed cleanly, with every record in
    /// the log file ([`Lsn::NONE`]: not closed cleanly since the last open). Written only by
    /// [`Db::close`](super::Db::close) and cleared by the next open before it appends anything: while it
    /// is set, a lost NVM log ring held nothing the log file lacks
    /// ([`RingInit::ClosedAt`](crate::wal::RingInit::ClosedAt)).
    pub clean_end: Lsn,
}

/// Writes the control file atomically (a temporary file, fsync, rename, fsync of the
/// directory). Layout: four 16-byte entries, each a u64, the CRC-32C of it and a zero
/// u32: retain, redo, next transaction id, next structure-change id; after a clean close
/// a fifth, the log's end then (80 bytes). An older file holds only the first entry
/// (16 bytes: redo = retain) or the first two (32 bytes).
pub(super) fn write_control(dir: &Path, c: Control) -> Result<()> {
    // A control file that breaks this is refused by the next open: never write one.
    assert!(c.retain <= c.redo, "control: retain {} after redo {}", c.retain, c.redo);
    let mut b = [0u8; 80];
    let entries = if c.clean_end.is_none() { 4 } else { 5 };
    let b = &mut b[..entries * 16];
    let values = [c.retain.get(), c.redo.get(), c.next_txn, c.next_smo, c.clean_end.get()];
    for (i, v) in values.into_iter().take(entries).enumerate() {
        let o = i * 16;
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        let crc = crc32c::crc32c(&b[o..o + 8]);
        b[o + 8..o + 12].copy_from_slice(&crc.to_le_bytes());
    }
    let tmp = dir.join(format!("{CONTROL_FILE}.tmp"));
    let io = |what: &str, e: std::io::Error| DbError::Open { path: dir.to_path_buf(), what: format!("{what}: {e}") };
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("create the control file", e))?;
        f.write_all(b).and_then(|()| f.sync_all()).map_err(|e| io("write the control file", e))?;
    }
    std::fs::rename(&tmp, dir.join(CONTROL_FILE)).map_err(|e| io("rename the control file", e))?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("sync the directory", e))?;
    Ok(())
}

/// Reads the control file, if there is one.
pub(super) fn read_control(dir: &Path) -> Result<Option<Control>> {
    let path = dir.join(CONTROL_FILE);
    let b = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DbError::Open { path, what: format!("cannot read the control file: {e}") }.into()),
    };
    let entry_ok = |o: usize| crc32c::crc32c(&b[o..o + 8]).to_le_bytes() == b[o + 8..o + 12];
    if ![16, 32, 64, 80].contains(&b.len()) || !(0..b.len()).step_by(16).all(entry_ok) {
        return Err(DbError::Open { path, what: "the control file is corrupt".into() }.into());
    }
    let at = |i: usize| {
        if b.len() > i * 16 {
            Some(u64::from_le_bytes(b[i * 16..i * 16 + 8].try_into().expect("8 bytes")))
        } else {
            None
        }
    };
    let retain = Lsn::new(at(0).expect("16 bytes at least"));
    let c = Control {
        retain,
        redo: at(1).map_or(retain, Lsn::new),
        next_txn: at(2).unwrap_or(0),
        next_smo: at(3).unwrap_or(0),
        clean_end: at(4).map_or(Lsn::NONE, Lsn::new),
    };
    if c.redo < c.retain {
        return Err(DbError::Open {
            path,
            what: format!("the control file's redo point {} is before {}", c.redo, c.retain),
        }
        .into());
    }
    Ok(Some(c))
}

/// What the database directory held at open (`prepare_open`).
#[must_use]
pub(super) enum Opening {
    /// A database exists: its control file does.
    Existing,
    /// A database is being created: the creation marker is in place; `removed` lists
    /// what an earlier creation, cut short, had left.
    Creating { removed: Vec<String> },
}

impl Opening {
    /// A database exists in the directory.
    pub(super) fn existing(&self) -> bool {
        matches!(self, Opening::Existing)
    }

    /// After a successful open of the database in `dir`: a creation is complete once
    /// the control file is in place (the checkpoint that ended recovery wrote it), so
    /// its marker goes. Returns, for a creation, what an earlier one had left.
    ///
    /// # Errors
    /// `Open` if the marker cannot be removed.
    ///
    /// # Panics
    /// A creation without its control file: the open did not end with a checkpoint.
    pub(super) fn finish(self, dir: &Path) -> Result<Option<Vec<String>>> {
        let Opening::Creating { removed } = self else { return Ok(None) };
        let control = dir.join(CONTROL_FILE);
        assert!(control.exists(), "a created database has its control file: {} is missing", control.display());
        remove_durably(dir, &dir.join(CREATION_MARKER))?;
        Ok(Some(removed))
    }
}

/// Tells an existing database from one being created, and an unfinished creation from
/// a lost control file (`docs/wal.md`, "Creation"):
///
/// 1. The control file is there: the database exists. Nothing is removed but a
///    creation marker (the creation was complete, and the marker's removal was lost),
///    and every file must be whole: none is made afresh.
/// 2. No control file, but the creation marker: a creation was cut short before any
///    open returned, so nothing was acknowledged. Whatever it left (a page file without
///    a superblock, a double-write file, log segments, an NVM log ring holding records
///    of that log, an NVM pool or region of the wrong size, the control file's
///    temporary) is removed, and the database is created afresh; the marker stays until
///    that creation is complete.
/// 3. Neither: with files of a database in the directory (page file, double-write
///    file, snapshot, log segments, the control file's temporary), its control file was
///    lost, and that is an error: the files may hold every committed change. Else a new
///    database: the marker is made and synced first, then stale files of the store
///    outside the directory (`files`: an NVM pool, region or double-write area, the NVM
///    log ring) are removed.
///
/// `files` are the store's files; the log's are added here.
pub(super) fn prepare_open(cfg: &DbConfig, mut files: Vec<PathBuf>) -> Result<Opening> {
    let dir = &cfg.dir;
    let marker = dir.join(CREATION_MARKER);
    let io = |what: String, e: std::io::Error| DbError::Open { path: dir.to_path_buf(), what: format!("{what}: {e}") };
    // 1. An existing database.
    if dir.join(CONTROL_FILE).exists() {
        if marker.exists() {
            remove_durably(dir, &marker)?;
        }
        return Ok(Opening::Existing);
    }
    files.push(dir.join(format!("{CONTROL_FILE}.tmp")));
    if let crate::wal::LogBuffer::Nvm(n) = &cfg.wal.buffer {
        files.push(n.path.clone());
    }
    let wal = dir.join(LOG_DIR);
    // 3. No marker: a new database, or one whose control file was lost.
    if !marker.exists() {
        let mut found: Vec<String> =
            files.iter().filter(|f| f.starts_with(dir) && f.exists()).map(|f| f.display().to_string()).collect();
        let segments = match std::fs::read_dir(&wal) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".wal")))
                .count(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io(format!("listing {}", wal.display()), e).into()),
        };
        if segments > 0 {
            found.push(format!("{} ({segments} log segments)", wal.display()));
        }
        if !found.is_empty() {
            return Err(DbError::FileLost {
                path: dir.join(CONTROL_FILE),
                what: format!(
                    "missing, but the directory holds files of a database ({}) and no creation marker \
                     {CREATION_MARKER}: the control file was lost, and opening would discard the database; \
                     restore it (or remove the directory to start afresh)",
                    found.join(", ")
                ),
            }
            .into());
        }
        let made = std::fs::write(&marker, b"tierdb: a database is being created here\n")
            .and_then(|()| std::fs::File::open(&marker)?.sync_all())
            .and_then(|()| std::fs::File::open(dir)?.sync_all());
        made.map_err(|e| io(format!("making the creation marker {}", marker.display()), e))?;
    }
    // 2. (and 3.) A creation: what an earlier one left goes.
    let mut removed = Vec::new();
    for f in files {
        match std::fs::remove_file(&f) {
            Ok(()) => removed.push(f.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(format!("removing {} of a creation that did not finish", f.display()), e).into()),
        }
    }
    match std::fs::remove_dir_all(&wal) {
        Ok(()) => removed.push(format!("{}/", wal.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(format!("removing {} of a creation that did not finish", wal.display()), e).into()),
    }
    if !removed.is_empty() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("sync the directory".into(), e))?;
    }
    // The marker outlives everything removed above: a crash from here on is still a
    // creation cut short, never a lost control file.
    assert!(marker.exists(), "creating a database without its marker {}", marker.display());
    Ok(Opening::Creating { removed })
}

/// Removes `file` from `dir` and syncs the directory.
pub(super) fn remove_durably(dir: &Path, file: &Path) -> Result<()> {
    std::fs::remove_file(file)
        .and_then(|()| std::fs::File::open(dir)?.sync_all())
        .map_err(|e| DbError::Open { path: file.to_path_buf(), what: format!("cannot remove it: {e}") }.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tierdb-control-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_control_file_round_trips_and_older_layouts_read() {
        let d = dir("round-trip");
        assert_eq!(read_control(&d).unwrap(), None);
        let c = Control { retain: Lsn::new(8), redo: Lsn::new(64), next_txn: 5, next_smo: 3, clean_end: Lsn::NONE };
        write_control(&d, c).unwrap();
        assert_eq!(std::fs::metadata(d.join(CONTROL_FILE)).unwrap().len(), 64);
        assert_eq!(read_control(&d).unwrap(), Some(c));
        let closed = Control { clean_end: Lsn::new(128), ..c };
        write_control(&d, closed).unwrap();
        assert_eq!(read_control(&d).unwrap(), Some(closed));
        // A file of the first layout: one entry, redo = retain, ids unknown.
        let b = std::fs::read(d.join(CONTROL_FILE)).unwrap();
        std::fs::write(d.join(CONTROL_FILE), &b[..16]).unwrap();
        let old = Control { retain: Lsn::new(8), redo: Lsn::new(8), next_txn: 0, next_smo: 0, clean_end: Lsn::NONE };
        assert_eq!(read_control(&d).unwrap(), Some(old));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_damaged_control_file_is_refused() {
        let d = dir("damaged");
        let c = Control { retain: Lsn::new(8), redo: Lsn::new(64), next_txn: 5, next_smo: 3, clean_end: Lsn::NONE };
        write_control(&d, c).unwrap();
        let mut b = std::fs::read(d.join(CONTROL_FILE)).unwrap();
        b[17] ^= 1;
        std::fs::write(d.join(CONTROL_FILE), &b).unwrap();
        assert!(matches!(read_control(&d).unwrap_err(), crate::Error::Db(DbError::Open { .. })));
        std::fs::write(d.join(CONTROL_FILE), &b[..20]).unwrap();
        assert!(read_control(&d).is_err(), "a length of no layout");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    #[should_panic(expected = "retain 9 after redo 8")]
    fn a_control_file_with_its_bounds_crossed_is_never_written() {
        // The assertion comes before any file is made: the directory need not exist.
        let d = std::env::temp_dir().join(format!("tierdb-control-never-made-{}", std::process::id()));
        let c = Control { retain: Lsn::new(9), redo: Lsn::new(8), next_txn: 1, next_smo: 1, clean_end: Lsn::NONE };
        let _ = write_control(&d, c);
    }
}
