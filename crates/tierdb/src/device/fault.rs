//! Fault injection for the file-backed devices (the SSD page file and the log
//! segments): fail the N-th write or sync with EIO or ENOSPC, tear the N-th write, and
//! drop every write that was not synced, as a power loss would.
//!
//! A [`FaultPlan`] is shared (`Arc`) by the devices of one test through their configs
//! (`SsdConfig::faults`, `LogFileConfig::faults`). Devices consult it around each write
//! and sync; without a plan they pay one `Option` check. Counting is global to the plan,
//! so "the 5th write" means the 5th write of any device using it.
//!
//! To drop unsynced writes the plan keeps, for every write since its file's last sync,
//! the bytes it overwrote (and the file length before it), and [`FaultPlan::lose_unsynced`]
//! puts them back, newest first. A crash test runs a workload, calls it, and reopens.
//!
//! [`FaultPlan::crash_at_nth_op`] models a kill instead of an error: from the N-th write
//! or sync on, nothing reaches the files, and the clean-up a failing device would do
//! (removing a file it half made) does not happen either: a killed process runs no clean-up.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Which error an injected failure raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// `EIO`: the device failed.
    Io,
    /// `ENOSPC`: the device is full.
    NoSpace,
}

impl FaultError {
    /// The error, as the operating system would raise it (so that a full device maps
    /// to `DeviceError::Full`, as a real one does).
    fn error(self) -> io::Error {
        io::Error::from_raw_os_error(match self {
            FaultError::Io => libc::EIO,
            FaultError::NoSpace => libc::ENOSPC,
        })
    }
}

/// What a device does with one write.
#[derive(Debug)]
pub enum WriteFault {
    /// Write all of it.
    None,
    /// Write nothing and return this error.
    Fail(io::Error),
    /// Write only the first this many bytes, then return an error (a crash mid-write).
    Tear(usize),
}

#[derive(Debug)]
struct Undo {
    path: PathBuf,
    offset: u64,
    old: Vec<u8>,
    old_len: u64,
}

/// Faults to inject; see the module doc.
#[derive(Debug, Default)]
pub struct FaultPlan {
    writes: AtomicU64,
    syncs: AtomicU64,
    fail_write_at: AtomicU64,
    fail_write_kind: Mutex<Option<FaultError>>,
    /// From this write on every write fails (0: none): a device that stays full.
    fail_writes_from: AtomicU64,
    fail_sync_at: AtomicU64,
    tear_write_at: AtomicU64,
    /// Writes and syncs together, for `crash_at`.
    ops: AtomicU64,
    /// The operation (write or sync) at which the process "dies"; 0: never.
    crash_at: AtomicU64,
    unsynced: Mutex<Vec<Undo>>,
    /// Held across each write or sync made through the plan (check and I/O together)
    /// and by [`FaultPlan::lose_unsynced`], so that a power loss never interleaves with
    /// a write in flight.
    io: Mutex<()>,
}

impl FaultPlan {
    /// A plan that injects nothing until told to, with all counts at zero; shared, to
    /// be put in the configs of the devices under test.
    pub fn new() -> std::sync::Arc<FaultPlan> {
        std::sync::Arc::new(FaultPlan::default())
    }

    /// The `n`-th write from now on (1 = the next) fails with `kind`.
    pub fn fail_nth_write(&self, n: u64, kind: FaultError) {
        *self.fail_write_kind.lock() = Some(kind);
        self.fail_write_at.store(self.writes.load(Ordering::SeqCst) + n, Ordering::SeqCst);
    }

    /// The `n`-th write from now on and every one after it fail with `kind` (a disk
    /// that stays full) until [`stop_failing_writes`](Self::stop_failing_writes).
    pub fn fail_every_write_from(&self, n: u64, kind: FaultError) {
        *self.fail_write_kind.lock() = Some(kind);
        self.fail_writes_from.store(self.writes.load(Ordering::SeqCst) + n, Ordering::SeqCst);
    }

    /// Writes succeed again (space was freed).
    pub fn stop_failing_writes(&self) {
        self.fail_writes_from.store(0, Ordering::SeqCst);
    }

    /// The `n`-th sync from now on fails with EIO.
    pub fn fail_nth_sync(&self, n: u64) {
        self.fail_sync_at.store(self.syncs.load(Ordering::SeqCst) + n, Ordering::SeqCst);
    }

    /// The `n`-th write from now on writes only its first half (rounded down to whole
    /// 512-byte sectors, so possibly nothing) and fails with EIO.
    pub fn tear_nth_write(&self, n: u64) {
        self.tear_write_at.store(self.writes.load(Ordering::SeqCst) + n, Ordering::SeqCst);
    }

    /// A kill at the `n`-th write or sync from now on (1 = the next; writes and syncs
    /// counted together): it and every later one fail with EIO without touching the
    /// file, and the devices' clean-up of files a failed operation made leaves them in
    /// place from then on.
    pub fn crash_at_nth_op(&self, n: u64) {
        self.crash_at.store(self.ops.load(Ordering::SeqCst) + n, Ordering::SeqCst);
    }

    /// The planned crash has happened.
    pub fn crashed(&self) -> bool {
        let at = self.crash_at.load(Ordering::SeqCst);
        at != 0 && self.ops.load(Ordering::SeqCst) >= at
    }

    /// Counts one operation; true if the process is "dead" at it.
    fn dead_at_next_op(&self) -> bool {
        let op = self.ops.fetch_add(1, Ordering::SeqCst) + 1;
        let at = self.crash_at.load(Ordering::SeqCst);
        at != 0 && op >= at
    }

    /// Writes and syncs seen so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.writes.load(Ordering::SeqCst), self.syncs.load(Ordering::SeqCst))
    }

    /// Called by a device before writing `len` bytes at `offset` of `file` (`path`):
    /// remembers what the write overwrites and says what to do.
    pub(crate) fn before_write(&self, path: &Path, file: &File, offset: u64, len: usize) -> WriteFault {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if self.dead_at_next_op() {
            return WriteFault::Fail(FaultError::Io.error());
        }
        let from = self.fail_writes_from.load(Ordering::SeqCst);
        if n == self.fail_write_at.load(Ordering::SeqCst) || (from != 0 && n >= from) {
            let kind = self.fail_write_kind.lock().unwrap_or(FaultError::Io);
            return WriteFault::Fail(kind.error());
        }
        let old_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let keep = (old_len.saturating_sub(offset) as usize).min(len);
        let mut old = vec![0u8; keep];
        // Read through a buffered handle: `file` may be O_DIRECT, which wants aligned
        // buffers.
        if keep > 0 && File::open(path).and_then(|f| f.read_exact_at(&mut old, offset)).is_err() {
            old.clear();
        }
        self.unsynced.lock().push(Undo { path: path.to_path_buf(), offset, old, old_len });
        if n == self.tear_write_at.load(Ordering::SeqCst) {
            return WriteFault::Tear(len / 2);
        }
        WriteFault::None
    }

    /// Called by a device before syncing `path`: `Some(error)` to fail the sync; else
    /// the file's writes count as durable from now on.
    pub(crate) fn before_sync(&self, path: &Path) -> Option<io::Error> {
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if self.dead_at_next_op() || n == self.fail_sync_at.load(Ordering::SeqCst) {
            return Some(FaultError::Io.error());
        }
        self.unsynced.lock().retain(|u| u.path != path);
        None
    }

    /// A power loss: every write not followed by a sync of its file is undone, newest
    /// first, and the process that made them is gone: every later write or sync through
    /// this plan fails without touching a file. (Tests `forget` a database to model the
    /// kill, and its background threads — the log flusher — live on; from here they can
    /// no longer change the files a reopened database reads.) Reopen without the plan.
    ///
    /// # Errors
    /// I/O errors restoring the files.
    pub fn lose_unsynced(&self) -> io::Result<usize> {
        let _io = self.io.lock();
        if self.crash_at.load(Ordering::SeqCst) == 0 {
            self.crash_at.store(self.ops.load(Ordering::SeqCst).max(1), Ordering::SeqCst);
        }
        let undos = std::mem::take(&mut *self.unsynced.lock());
        let n = undos.len();
        for u in undos.into_iter().rev() {
            let Ok(f) = std::fs::OpenOptions::new().write(true).open(&u.path) else { continue };
            f.write_all_at(&u.old, u.offset)?;
            f.set_len(u.old_len)?;
            f.sync_all()?;
        }
        Ok(n)
    }
}

/// Writes `bytes` at `offset` of `file` (at `path`), through `plan` if there is one:
/// failing or tearing the write as planned.
pub(crate) fn write_at(
    plan: Option<&FaultPlan>,
    path: &Path,
    file: &File,
    bytes: &[u8],
    offset: u64,
) -> io::Result<()> {
    let Some(p) = plan else { return file.write_all_at(bytes, offset) };
    let _io = p.io.lock();
    match p.before_write(path, file, offset, bytes.len()) {
        WriteFault::None => file.write_all_at(bytes, offset),
        WriteFault::Fail(e) => Err(e),
        WriteFault::Tear(k) => {
            // Half of it reaches the file, as when the power fails mid-write; whole
            // sectors, so that O_DIRECT accepts it.
            let k = k / 512 * 512;
            if k > 0 {
                file.write_all_at(&bytes[..k], offset)?;
            }
            Err(FaultError::Io.error())
        }
    }
}

/// `fdatasync` of `file` (at `path`), through `plan` if there is one.
pub(crate) fn sync(plan: Option<&FaultPlan>, path: &Path, file: &File) -> io::Result<()> {
    let Some(p) = plan else { return file.sync_data() };
    let _io = p.io.lock();
    if let Some(e) = p.before_sync(path) {
        return Err(e);
    }
    file.sync_data()
}

/// Removes a file a failed operation made, unless `plan` says the process was killed
/// before (then it stays, as after a real kill).
pub(crate) fn remove_file(plan: Option<&FaultPlan>, path: &Path) {
    if !plan.is_some_and(FaultPlan::crashed) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_fail_tear_and_undo() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let plan = FaultPlan::new();
        plan.fail_nth_write(2, FaultError::NoSpace);
        assert!(matches!(plan.before_write(&path, &f, 0, 4), WriteFault::None));
        f.write_all_at(b"abcd", 0).unwrap();
        match plan.before_write(&path, &f, 4, 4) {
            WriteFault::Fail(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}"),
            w => panic!("{w:?}"),
        }
        plan.fail_every_write_from(1, FaultError::NoSpace);
        for _ in 0..3 {
            assert!(matches!(plan.before_write(&path, &f, 4, 4), WriteFault::Fail(_)), "a disk that stays full");
        }
        plan.stop_failing_writes();
        plan.tear_nth_write(1);
        assert!(matches!(plan.before_write(&path, &f, 8, 6), WriteFault::Tear(3)));
        f.write_all_at(b"XYZ", 8).unwrap(); // the torn half, past the old end
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd4567XYZ");
        assert_eq!(plan.counts(), (6, 0));
        assert_eq!(plan.lose_unsynced().unwrap(), 2);
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789", "a power loss undoes unsynced writes");
        // The process is gone: nothing it still runs reaches the file.
        assert!(plan.crashed());
        assert!(matches!(plan.before_write(&path, &f, 0, 4), WriteFault::Fail(_)));
        let plan = FaultPlan::new();
        assert!(plan.before_sync(&path).is_none());
        plan.fail_nth_sync(1);
        assert!(plan.before_sync(&path).is_some());
        assert_eq!(plan.counts(), (0, 2));
    }

    #[test]
    fn a_crash_stops_every_later_write_sync_and_clean_up() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, b"0123").unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let plan = FaultPlan::new();
        plan.crash_at_nth_op(2);
        assert!(matches!(plan.before_write(&path, &f, 0, 4), WriteFault::None));
        assert!(!plan.crashed());
        assert!(plan.before_sync(&path).is_some(), "op 2: the crash");
        assert!(plan.crashed());
        assert!(matches!(plan.before_write(&path, &f, 0, 4), WriteFault::Fail(_)));
        assert!(plan.before_sync(&path).is_some());
        remove_file(Some(&plan), &path);
        assert!(path.exists(), "a killed process cleans nothing up");
        remove_file(None, &path);
        assert!(!path.exists());
    }
}
