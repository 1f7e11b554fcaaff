//! The log device: one append-only byte stream kept in segment files on SSD.
//!
//! A position in the stream is a log sequence number (LSN): the stream's first byte
//! ever written has LSN [`LOG_STREAM_START`] (so that 0 can mean "none"), and LSNs grow
//! forever; truncation deletes whole old segments. Segment `s` is the file
//! `<start LSN as 16 hex digits>.wal` in the log directory and holds the bytes from its
//! start LSN on; a new segment is begun at the end of the stream once the current one
//! has reached the configured size, so segments hold whole appends. Creating a segment
//! syncs the directory, so its name survives a crash.
//!
//! The device knows bytes, not records: writing records, checking them and cutting a
//! torn tail is the job of the write-ahead log, the layer above (the device never
//! imports it). Operations are counted and emulated with an SSD profile, like the
//! page file's: an append is a write, `sync` is `fdatasync`.
//! A failed write or sync poisons the handle (the page cache's state is unknown), as
//! for the page file.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::{DeviceCore, DeviceError, DeviceProfile, EmulationMode, OpKind, Tier};
use crate::ids::Lsn;

const DEVICE: &str = "log";

/// LSN of the first byte of a new log stream.
pub const LOG_STREAM_START: Lsn = Lsn::new(64);

/// Smallest segment size, bytes.
pub const LOG_SEGMENT_BYTES_MIN: u64 = 64 * 1024;
/// Segment size of [`LogFileConfig::new`], bytes.
pub const LOG_SEGMENT_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;
/// Most segments a log directory may hold (a bound on the directory scan).
pub const LOG_SEGMENTS_MAX: usize = 1 << 16;

/// How to open a log directory.
#[derive(Clone, Debug)]
pub struct LogFileConfig {
    /// The directory holding the segment files (`<start LSN in hex>.wal`).
    pub dir: PathBuf,
    /// A new segment begins once the current one holds this many bytes.
    pub segment_bytes: u64,
    /// An SSD profile, or an NVM one (the log on NVM, for databases without an SSD).
    pub profile: DeviceProfile,
    /// How the profile is applied.
    pub mode: EmulationMode,
    /// Faults to inject (tests).
    pub faults: Option<std::sync::Arc<super::FaultPlan>>,
    /// The log of an existing database (`None`: a new log, whose directory and first
    /// segment are made if missing). See [`ExistingLog`].
    pub existing: Option<ExistingLog>,
}

/// Equal when every setting is; fault plans only if they are the same plan.
impl PartialEq for LogFileConfig {
    fn eq(&self, o: &LogFileConfig) -> bool {
        let LogFileConfig { dir, segment_bytes, profile, mode, faults, existing } = self;
        *dir == o.dir
            && *segment_bytes == o.segment_bytes
            && *profile == o.profile
            && *mode == o.mode
            && super::ssd::same_plan(faults, &o.faults)
            && *existing == o.existing
    }
}

/// What the log of an existing database must hold when it is opened: a missing or
/// deleted segment is never replaced by an empty stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExistingLog {
    /// The oldest LSN recovery reads (the control file's oldest record kept): the first
    /// segment must start at or before it. `None`: not known (a store whose commits
    /// truncate the log behind the control file, `nvm-direct`); only the presence of
    /// segments and their continuity are checked.
    pub needed_from: Option<Lsn>,
}

impl LogFileConfig {
    /// 64 MiB segments, `nvme-ssd` profile, emulation off.
    ///
    /// # Panics
    /// If the built-in profile does not load (a bug).
    pub fn new(dir: impl Into<PathBuf>) -> LogFileConfig {
        LogFileConfig {
            dir: dir.into(),
            segment_bytes: LOG_SEGMENT_BYTES_DEFAULT,
            profile: DeviceProfile::preset("nvme-ssd").expect("built-in profile"),
            mode: EmulationMode::Off,
            faults: None,
            existing: None,
        }
    }
}

#[derive(Debug)]
struct Segment {
    start: u64,
    path: PathBuf,
}

#[derive(Debug)]
struct State {
    /// Oldest first; the last one is written.
    segments: Vec<Segment>,
    current: File,
    /// LSN of the next byte appended.
    end: u64,
    /// A segment was created since the last directory sync.
    dir_dirty: bool,
}

/// An append-only log stream in segment files.
#[derive(Debug)]
pub struct LogFile {
    dir: PathBuf,
    segment_bytes: u64,
    state: Mutex<State>,
    poisoned: AtomicBool,
    core: DeviceCore,
    faults: Option<std::sync::Arc<super::FaultPlan>>,
}

fn segment_name(start: u64) -> String {
    format!("{start:016x}.wal")
}

fn parse_segment_name(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".wal")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

fn open_rw(path: &Path) -> Result<File, DeviceError> {
    OpenOptions::new().read(true).write(true).open(path).map_err(|e| DeviceError::io("open", path, 0, e))
}

fn sync_dir(dir: &Path) -> Result<(), DeviceError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| DeviceError::io("fsync directory", dir, 0, e))
}

impl LogFile {
    /// Opens the log in `cfg.dir`, creating the directory and a first segment if there
    /// is none (a new log only: see [`LogFileConfig::existing`]). The stream's end is
    /// the end of the last segment, whatever its bytes are: the WAL finds the last
    /// valid record and [`cut`](Self::cut)s the rest.
    ///
    /// # Errors
    /// `Config` for a segment size below [`LOG_SEGMENT_BYTES_MIN`] or a bad profile;
    /// `Create`/`Io` from the file system; `Corrupted` for segments that do not follow
    /// each other (a gap between one's end and the next's start), and for the log of
    /// an existing database without its directory or segments, or whose first segment
    /// starts after [`ExistingLog::needed_from`] (an older segment is missing).
    pub fn open(cfg: &LogFileConfig) -> Result<LogFile, DeviceError> {
        if cfg.segment_bytes < LOG_SEGMENT_BYTES_MIN {
            return Err(DeviceError::Config {
                device: DEVICE,
                what: format!("segment size {} bytes is below {LOG_SEGMENT_BYTES_MIN}", cfg.segment_bytes),
            });
        }
        // The log's device is of its profile's kind: SSD, or NVM for a database with no
        // SSD (log files on a DAX file system, where a sync is a persist).
        let tier = if cfg.profile.kind == Tier::Ssd { Tier::Ssd } else { Tier::Nvm };
        let core = DeviceCore::new(tier, cfg.profile.clone(), cfg.mode)
            .map_err(|e| DeviceError::Config { device: DEVICE, what: e.to_string() })?;
        let dir = cfg.dir.clone();
        let lost = |detail: String| DeviceError::Corrupted {
            what: "log of an existing database",
            location: dir.display().to_string(),
            detail,
        };
        if cfg.existing.is_some() && !dir.is_dir() {
            return Err(lost("the log directory is missing".into()));
        }
        std::fs::create_dir_all(&dir).map_err(|e| DeviceError::Create { path: dir.clone(), source: e })?;
        let mut segments = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| DeviceError::io("list", &dir, 0, e))? {
            let entry = entry.map_err(|e| DeviceError::io("list", &dir, 0, e))?;
            if let Some(start) = entry.file_name().to_str().and_then(parse_segment_name) {
                segments.push(Segment { start, path: entry.path() });
                if segments.len() > LOG_SEGMENTS_MAX {
                    return Err(DeviceError::Corrupted {
                        what: "log directory",
                        location: dir.display().to_string(),
                        detail: format!("more than {LOG_SEGMENTS_MAX} segments"),
                    });
                }
            }
        }
        segments.sort_by_key(|s| s.start);
        if let Some(existing) = cfg.existing {
            // A lost segment must not pass for a log that begins later or is empty.
            let Some(first) = segments.first() else {
                return Err(lost("it holds no log segment (*.wal): the log was deleted".into()));
            };
            if let Some(needed) = existing.needed_from.filter(|&n| first.start > n.get()) {
                return Err(lost(format!(
                    "recovery needs the log from LSN {needed}, but the first segment {} starts at {}: \
                     a segment before it was deleted",
                    first.path.display(),
                    first.start,
                )));
            }
        }
        let mut dir_dirty = false;
        if segments.is_empty() {
            let path = dir.join(segment_name(LOG_STREAM_START.get()));
            File::create(&path).map_err(|e| DeviceError::Create { path: path.clone(), source: e })?;
            segments.push(Segment { start: LOG_STREAM_START.get(), path });
            dir_dirty = true;
        }
        for w in segments.windows(2) {
            let len = std::fs::metadata(&w[0].path).map_err(|e| DeviceError::io("stat", &w[0].path, 0, e))?.len();
            if w[0].start + len != w[1].start {
                return Err(DeviceError::Corrupted {
                    what: "log segments",
                    location: dir.display().to_string(),
                    detail: format!(
                        "{} ends at LSN {} but the next segment starts at {}",
                        w[0].path.display(),
                        w[0].start + len,
                        w[1].start
                    ),
                });
            }
        }
        let last = segments.last().expect("at least one segment");
        let current = open_rw(&last.path)?;
        let len = current.metadata().map_err(|e| DeviceError::io("stat", &last.path, 0, e))?.len();
        let end = last.start + len;
        let log = LogFile {
            dir,
            segment_bytes: cfg.segment_bytes,
            state: Mutex::new(State { segments, current, end, dir_dirty }),
            poisoned: AtomicBool::new(false),
            core,
            faults: cfg.faults.clone(),
        };
        if dir_dirty {
            log.sync()?;
        }
        Ok(log)
    }

    /// The directory holding the segment files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log device's tier (SSD, or NVM for a log on NVM), profile, emulator and
    /// counters.
    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// LSN of the oldest byte still held.
    pub fn start(&self) -> Lsn {
        Lsn::new(self.state.lock().segments[0].start)
    }

    /// LSN of the next byte appended.
    pub fn end(&self) -> Lsn {
        Lsn::new(self.state.lock().end)
    }

    fn check_poison(&self) -> Result<(), DeviceError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(DeviceError::Poisoned { path: self.dir.clone(), cause: "write or sync" });
        }
        Ok(())
    }

    /// Appends `bytes` at LSN `at`, which must be the end of the stream (not durable
    /// until [`sync`](Self::sync)). A new segment may begin here, and once the segments
    /// before it are deleted the stream is read from its first byte: callers append
    /// whole records (the log's unit), never a record's part.
    ///
    /// # Errors
    /// `Config` if `at` is not the end; `Io`/`Full` (the handle is then poisoned);
    /// `Poisoned`.
    pub fn append(&self, at: Lsn, bytes: &[u8]) -> Result<(), DeviceError> {
        let at = at.get();
        self.check_poison()?;
        let mut st = self.state.lock();
        if at != st.end {
            return Err(DeviceError::Config {
                device: DEVICE,
                what: format!("append at LSN {at}, but the stream ends at {}", st.end),
            });
        }
        let seg_start = st.segments.last().expect("a segment").start;
        if st.end - seg_start >= self.segment_bytes {
            self.roll(&mut st)?;
        }
        let seg_start = st.segments.last().expect("a segment").start;
        debug_assert!(st.end >= seg_start, "stream end {} before its last segment's start {seg_start}", st.end);
        let offset = st.end - seg_start;
        let path = &st.segments.last().expect("a segment").path;
        self.core.run(OpKind::Write, offset, bytes.len() as u64, || {
            super::fault::write_at(self.faults.as_deref(), path, &st.current, bytes, offset).map_err(|e| {
                self.poisoned.store(true, Ordering::Release);
                DeviceError::io("append to", path, bytes.len() as u64, e)
            })
        })?;
        st.end += bytes.len() as u64;
        Ok(())
    }

    /// Ends the current segment (synced) and begins a new one at the end of the stream.
    fn roll(&self, st: &mut State) -> Result<(), DeviceError> {
        let last_start = st.segments.last().expect("a segment").start;
        // Segment boundaries: a new segment starts past the last one, at the end of
        // the stream, so that segments hold whole appends and never overlap.
        assert!(
            st.end > last_start && st.end - last_start >= self.segment_bytes,
            "rolling at LSN {} a segment that starts at {last_start} (segment size {})",
            st.end,
            self.segment_bytes
        );
        let old = st.segments.last().expect("a segment").path.clone();
        super::fault::sync(self.faults.as_deref(), &old, &st.current).map_err(|e| {
            self.poisoned.store(true, Ordering::Release);
            DeviceError::io("fdatasync", &old, 0, e)
        })?;
        let path = self.dir.join(segment_name(st.end));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| DeviceError::Create { path: path.clone(), source: e })?;
        st.segments.push(Segment { start: st.end, path });
        st.current = file;
        st.dir_dirty = true;
        Ok(())
    }

    /// Makes every appended byte durable (`fdatasync`, and the directory after a new
    /// segment).
    ///
    /// # Errors
    /// `Io` (the handle is then poisoned); `Poisoned`.
    pub fn sync(&self) -> Result<(), DeviceError> {
        self.check_poison()?;
        let mut st = self.state.lock();
        let path = st.segments.last().expect("a segment").path.clone();
        self.core.run(OpKind::Sync, 0, 0, || {
            super::fault::sync(self.faults.as_deref(), &path, &st.current).map_err(|e| {
                self.poisoned.store(true, Ordering::Release);
                DeviceError::io("fdatasync", &path, 0, e)
            })
        })?;
        if st.dir_dirty {
            sync_dir(&self.dir)?;
            st.dir_dirty = false;
        }
        Ok(())
    }

    /// Reads stream bytes from LSN `at` into `buf`, across segments; returns how many
    /// were read (fewer at the end of the stream).
    ///
    /// # Errors
    /// `OutOfRange` below the start; `Io`.
    pub fn read(&self, at: Lsn, buf: &mut [u8]) -> Result<usize, DeviceError> {
        let at = at.get();
        let st = self.state.lock();
        let start = st.segments[0].start;
        if at < start {
            return Err(DeviceError::OutOfRange { device: DEVICE, offset: at, len: buf.len() as u64, size: st.end });
        }
        let want = buf.len().min(st.end.saturating_sub(at) as usize);
        let mut done = 0;
        while done < want {
            let pos = at + done as u64;
            let i = st.segments.partition_point(|s| s.start <= pos) - 1;
            let seg = &st.segments[i];
            let seg_end = st.segments.get(i + 1).map_or(st.end, |n| n.start);
            debug_assert!(seg.start <= pos && pos < seg_end, "LSN {pos} outside segment {}..{seg_end}", seg.start);
            let n = (want - done).min((seg_end - pos) as usize);
            let off = pos - seg.start;
            let dst = &mut buf[done..done + n];
            self.core.run(OpKind::Read, off, n as u64, || {
                if i + 1 == st.segments.len() {
                    st.current.read_exact_at(dst, off)
                } else {
                    File::open(&seg.path).and_then(|f| f.read_exact_at(dst, off))
                }
                .map_err(|e| DeviceError::io("read", &seg.path, 0, e))
            })?;
            done += n;
        }
        Ok(done)
    }

    /// Deletes the segments that hold only bytes below `lsn` (never the current one).
    /// Returns how many were deleted.
    ///
    /// # Errors
    /// `Io` from the file system: the segments before the failing one are gone, the
    /// failing one and those after it are still part of the stream (a later call tries
    /// them again).
    pub fn truncate_before(&self, lsn: Lsn) -> Result<usize, DeviceError> {
        let lsn = lsn.get();
        let mut st = self.state.lock();
        let mut n = 0;
        while st.segments.len() > 1 && st.segments[1].start <= lsn {
            // The file first: a segment leaves the stream only once its file is gone.
            remove_segment(&st.segments[0].path)?;
            st.segments.remove(0);
            n += 1;
        }
        debug_assert!(!st.segments.is_empty() && st.segments[0].start <= st.end, "truncation left no stream");
        if n > 0 {
            sync_dir(&self.dir)?;
        }
        Ok(n)
    }

    /// Drops every byte from LSN `at` on (a torn or corrupt tail found by recovery):
    /// later segments are deleted and the one holding `at` is truncated, durably.
    ///
    /// # Errors
    /// `OutOfRange` outside the stream; `Io`.
    pub fn cut(&self, at: Lsn) -> Result<(), DeviceError> {
        let at = at.get();
        let mut st = self.state.lock();
        if at < st.segments[0].start || at > st.end {
            return Err(DeviceError::OutOfRange { device: DEVICE, offset: at, len: 0, size: st.end });
        }
        while st.segments.len() > 1 && st.segments.last().expect("a segment").start > at {
            remove_segment(&st.segments.last().expect("a segment").path)?;
            st.segments.pop();
        }
        let seg = st.segments.last().expect("a segment");
        assert!(seg.start <= at && at <= st.end, "cut at LSN {at} outside the last segment {}..{}", seg.start, st.end);
        let file = open_rw(&seg.path)?;
        file.set_len(at - seg.start).map_err(|e| DeviceError::io("truncate", &seg.path, 0, e))?;
        file.sync_all().map_err(|e| DeviceError::io("fsync", &seg.path, 0, e))?;
        st.current = file;
        st.end = at;
        sync_dir(&self.dir)?;
        Ok(())
    }

    /// After a failed write or sync: drops every byte from `at` (where the stream was
    /// last synced) on, writes `bytes` there again and syncs. A failed sync may have
    /// dropped written pages from the page cache and cleared the error, so syncing
    /// again proves nothing; writing the bytes again from memory, then syncing, does.
    /// This is the only retry of a failed handle, made once by the WAL as it closes.
    ///
    /// # Errors
    /// As [`cut`](Self::cut), [`append`](Self::append) and [`sync`](Self::sync); the
    /// handle is poisoned again by a failed write or sync.
    pub fn rewrite(&self, at: Lsn, bytes: &[u8]) -> Result<(), DeviceError> {
        self.cut(at)?;
        self.poisoned.store(false, Ordering::Release);
        self.append(at, bytes)?;
        self.sync()
    }

    /// The segment file that holds stream byte `lsn` and the byte's offset in it (the
    /// last segment for the end of the stream); `None` below the start or past the end.
    pub fn locate(&self, lsn: Lsn) -> Option<(PathBuf, u64)> {
        let lsn = lsn.get();
        let st = self.state.lock();
        if lsn < st.segments[0].start || lsn > st.end {
            return None;
        }
        let seg = &st.segments[st.segments.partition_point(|s| s.start <= lsn) - 1];
        Some((seg.path.clone(), lsn - seg.start))
    }

    /// LSN of the first byte of the last segment (the one appended to).
    pub fn last_segment_start(&self) -> Lsn {
        Lsn::new(self.state.lock().segments.last().expect("a segment").start)
    }

    /// The segment files, oldest first (for tests and tools).
    pub fn segment_paths(&self) -> Vec<PathBuf> {
        self.state.lock().segments.iter().map(|s| s.path.clone()).collect()
    }
}

/// Removes a segment's file; one that is already gone counts as removed (a call before
/// failed after it).
fn remove_segment(path: &Path) -> Result<(), DeviceError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(DeviceError::io("remove", path, 0, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> LogFileConfig {
        let mut c = LogFileConfig::new(dir.join("log"));
        c.segment_bytes = LOG_SEGMENT_BYTES_MIN;
        c
    }

    #[test]
    fn appends_roll_segments_read_back_truncate_and_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let log = LogFile::open(&config(tmp.path())).unwrap();
        assert_eq!((log.start(), log.end()), (LOG_STREAM_START, LOG_STREAM_START));
        let chunk: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let mut at = log.end();
        for _ in 0..5 {
            log.append(at, &chunk).unwrap();
            at = at.advance(chunk.len() as u64);
        }
        log.sync().unwrap();
        assert!(log.append(at.advance(1), b"x").is_err(), "appends only at the end");
        let segs = log.segment_paths();
        assert_eq!(segs.len(), 3, "{segs:?}");
        // Read across a segment boundary.
        let mut buf = vec![0u8; 100_000];
        assert_eq!(log.read(LOG_STREAM_START.advance(30_000), &mut buf).unwrap(), 100_000);
        for (i, b) in buf.iter().enumerate() {
            assert_eq!(*b, ((30_000 + i) % 40_000 % 251) as u8, "byte {i}");
        }
        assert_eq!(log.read(Lsn::new(at.get() - 10), &mut buf).unwrap(), 10, "short read at the end");
        drop(log);
        // Reopen: the same stream.
        let log = LogFile::open(&config(tmp.path())).unwrap();
        assert_eq!(log.end(), at);
        assert_eq!(log.truncate_before(LOG_STREAM_START.advance(90_000)).unwrap(), 1);
        assert!(log.read(LOG_STREAM_START, &mut buf).is_err(), "truncated bytes are gone");
        log.cut(LOG_STREAM_START.advance(150_000)).unwrap();
        assert_eq!(log.end(), LOG_STREAM_START.advance(150_000));
        log.append(log.end(), b"after the cut").unwrap();
        drop(log);
        let log = LogFile::open(&config(tmp.path())).unwrap();
        assert_eq!(log.end(), LOG_STREAM_START.advance(150_000 + 13));
    }

    /// A segment whose file cannot be removed stays in the stream (before, it left the
    /// list first: the stream forgot it while its file stayed, and no later call removed
    /// it); once it can be, the next call removes it. The same for a cut's segments.
    #[test]
    fn a_segment_that_cannot_be_removed_stays_in_the_stream() {
        let tmp = tempfile::tempdir().unwrap();
        let log = LogFile::open(&config(tmp.path())).unwrap();
        let chunk = vec![7u8; 40_000];
        let mut at = log.end();
        for _ in 0..5 {
            log.append(at, &chunk).unwrap();
            at = at.advance(chunk.len() as u64);
        }
        log.sync().unwrap();
        let segs = log.segment_paths();
        assert_eq!(segs.len(), 3, "{segs:?}");
        // A directory in place of a file: removing it fails, even for root.
        let block = |p: &Path| {
            std::fs::remove_file(p).unwrap();
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("x"), b"x").unwrap();
        };
        block(&segs[0]);
        assert!(log.truncate_before(LOG_STREAM_START.advance(90_000)).is_err());
        assert_eq!(log.start(), LOG_STREAM_START, "the failed segment is still the stream's first");
        assert_eq!(log.segment_paths().len(), 3);
        std::fs::remove_dir_all(&segs[0]).unwrap();
        assert_eq!(log.truncate_before(LOG_STREAM_START.advance(90_000)).unwrap(), 1, "tried again, counted once gone");
        assert_eq!(log.segment_paths(), segs[1..].to_vec());
        block(&segs[2]);
        // Inside the middle segment: the last one must go, and cannot.
        let e = log.cut(Lsn::new(log.last_segment_start().get() - 1)).unwrap_err().to_string();
        assert!(e.contains("remove"), "{e}");
        assert_eq!(log.segment_paths(), segs[1..].to_vec(), "the cut's failed segment is still listed");
        std::fs::remove_dir_all(&segs[2]).unwrap();
        log.cut(LOG_STREAM_START.advance(150_000)).unwrap();
        assert_eq!((log.end(), log.segment_paths()), (LOG_STREAM_START.advance(150_000), segs[1..2].to_vec()));
    }

    #[test]
    fn a_gap_between_segments_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let log = LogFile::open(&config(tmp.path())).unwrap();
        log.append(LOG_STREAM_START, &[1; 100]).unwrap();
        drop(log);
        std::fs::write(tmp.path().join("log").join(segment_name(LOG_STREAM_START.get() + 5000)), b"x").unwrap();
        let e = LogFile::open(&config(tmp.path())).unwrap_err().to_string();
        assert!(e.contains("starts at"), "{e}");
    }

    #[test]
    fn the_log_of_an_existing_database_is_never_made_afresh() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cfg = config(tmp.path());
        cfg.existing = Some(ExistingLog { needed_from: Some(LOG_STREAM_START) });
        let e = LogFile::open(&cfg).unwrap_err().to_string();
        assert!(e.contains("log directory is missing") && e.contains("log"), "{e}");
        assert!(!cfg.dir.exists(), "nothing made");
        std::fs::create_dir_all(&cfg.dir).unwrap();
        let e = LogFile::open(&cfg).unwrap_err().to_string();
        assert!(e.contains("no log segment"), "{e}");
        // A log whose first segment starts after what recovery needs.
        let fresh = config(tmp.path());
        let log = LogFile::open(&fresh).unwrap();
        let chunk = vec![7u8; 40_000];
        for i in 0..3 {
            log.append(LOG_STREAM_START.advance(i * 40_000), &chunk).unwrap();
        }
        log.sync().unwrap();
        let first = log.segment_paths()[0].clone();
        drop(log);
        assert!(LogFile::open(&cfg).is_ok(), "the whole log");
        std::fs::remove_file(&first).unwrap();
        let e = LogFile::open(&cfg).unwrap_err().to_string();
        assert!(e.contains("needs the log from LSN 64") && e.contains("a segment before it was deleted"), "{e}");
        cfg.existing = Some(ExistingLog { needed_from: None });
        assert!(LogFile::open(&cfg).is_ok(), "no bound: the segments left follow each other");
    }
}
