//! Automatic checkpoints: when one is due ([`Checkpoints`]: the triggers of
//! [`CheckpointConfig`], what the checkpoints so far did), and the background thread
//! that takes them ([`Checkpointer`]). How a checkpoint is taken belongs to
//! `handle.rs`, which gives the thread its database through [`Background`].
//!
//! Triggers: a checkpoint is due once the log has grown by `log_bytes` since the end of
//! the last completed checkpoint (manual, automatic or the one that ended recovery;
//! LSNs are byte positions in the log stream, so growth is a difference of LSNs), or
//! `interval_ms` after that checkpoint if the log grew at all. After a failed attempt
//! the thread waits [`RETRY_AFTER_FAILURE_MS`] before the next.
//!
//! Waking: the thread polls every [`CHECKPOINTER_POLL_MS`]. A poll reads the log's end (one short
//! lock) and a clock: about a hundred cheap wakes a second, and nothing at all on the
//! commit path, which a notification from each commit would cost. A size trigger may
//! thus be passed by what the log takes in one poll interval.
//!
//! Invariants: checkpoints never overlap (one lock, [`Checkpoints::run`]); the thread
//! holds only a weak reference to its database between polls, and the database's
//! handle stops and joins it before it closes or drops (`Checkpointer`'s drop). Once
//! the database is halted or its log or store failed, the thread ends (and says why in
//! [`CheckpointStats::stopped`]). Concurrency: the statistics and the trigger state are
//! behind a mutex taken briefly; the checkpoint lock is held for a whole checkpoint.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use crate::Result;
use crate::wal::Lsn;

use super::config::CheckpointConfig;

/// How often the background checkpointer looks at the log and the clock, in
/// milliseconds.
pub const CHECKPOINTER_POLL_MS: u64 = 10;

/// How long the background checkpointer waits after a failed checkpoint before it tries
/// again, in milliseconds (a failure that did not stop the database, e.g. a control
/// file that could not be written).
pub const RETRY_AFTER_FAILURE_MS: u64 = 1_000;

const _: () = assert!(CHECKPOINTER_POLL_MS > 0 && CHECKPOINTER_POLL_MS < RETRY_AFTER_FAILURE_MS);

/// Background checkpointer threads running in this process.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The background checkpointer threads running in this process (of every database
/// open, and of databases forgotten without a drop, whose threads live on): a
/// diagnostic, e.g. to see that [`Db::close`](super::Db::close) joined its thread.
pub fn checkpointer_threads() -> usize {
    THREADS.load(Ordering::SeqCst)
}

/// What started a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// [`Db::checkpoint`](super::Db::checkpoint), or the end of recovery at open.
    Manual,
    /// [`Db::close`](super::Db::close).
    Close,
    /// The background checkpointer: the log grew by this many bytes, at least
    /// [`CheckpointConfig::log_bytes`].
    LogBytes(u64),
    /// The background checkpointer: this many milliseconds passed, at least
    /// [`CheckpointConfig::interval_ms`], and the log grew.
    Interval(u64),
}

impl Trigger {
    fn automatic(self) -> bool {
        matches!(self, Trigger::LogBytes(_) | Trigger::Interval(_))
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Manual => f.write_str("manual checkpoint"),
            Trigger::Close => f.write_str("checkpoint of close"),
            Trigger::LogBytes(b) => write!(f, "background checkpoint (log grew {b} bytes)"),
            Trigger::Interval(ms) => write!(f, "background checkpoint ({ms} ms since the last)"),
        }
    }
}

/// What a database's checkpoints did since it was opened ([`Db::checkpoints`](super::Db::checkpoints)).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CheckpointStats {
    /// Checkpoints completed: the one that ended recovery at open, manual ones and
    /// background ones.
    pub taken: u64,
    /// Of them, taken by the background checkpointer.
    pub automatic: u64,
    /// Of the automatic ones, started because the log grew by
    /// [`CheckpointConfig::log_bytes`].
    pub by_log_bytes: u64,
    /// Of the automatic ones, started because [`CheckpointConfig::interval_ms`] passed.
    pub by_interval: u64,
    /// Checkpoints that failed (of any kind; a halted database's refusals are not
    /// counted).
    pub failed: u64,
    /// The last failure: what started the checkpoint, and its error. Kept after later
    /// successes.
    pub last_error: Option<String>,
    /// The log's end (an LSN, a byte position) after the last completed checkpoint:
    /// growth is measured from here.
    pub last_end_lsn: u64,
    /// How long the last completed checkpoint took, in milliseconds.
    pub last_ms: f64,
    /// Whether the background checkpointer's thread runs.
    pub running: bool,
    /// Why the background checkpointer ended before the database closed (it halted,
    /// or its log or store failed), if it did.
    pub stopped: Option<String>,
}

/// The triggers and the record of a database's checkpoints; every checkpoint runs
/// through [`run`](Self::run).
pub(super) struct Checkpoints {
    cfg: CheckpointConfig,
    /// Held for the whole of a checkpoint: they never overlap.
    serial: Mutex<()>,
    state: Mutex<State>,
}

struct State {
    stats: CheckpointStats,
    /// When the last checkpoint completed (or the database was opened).
    last_at: Instant,
    /// When the last attempt failed, if it did after the last completion.
    failed_at: Option<Instant>,
}

impl Checkpoints {
    /// No checkpoint yet; triggers `cfg`.
    pub(super) fn new(cfg: CheckpointConfig) -> Checkpoints {
        let state = State { stats: CheckpointStats::default(), last_at: Instant::now(), failed_at: None };
        Checkpoints { cfg, serial: Mutex::new(()), state: Mutex::new(state) }
    }

    /// The triggers.
    pub(super) fn config(&self) -> CheckpointConfig {
        self.cfg
    }

    /// The statistics (`running` false: the handle knows whether its thread runs).
    pub(super) fn stats(&self) -> CheckpointStats {
        self.state.lock().stats.clone()
    }

    /// Runs `checkpoint`, started by `trigger`, once every other checkpoint has ended,
    /// and records its outcome; `log_end` is the log's end, read after it completes.
    ///
    /// # Errors
    /// `checkpoint`'s.
    pub(super) fn run<R>(
        &self,
        trigger: Trigger,
        log_end: impl Fn() -> Lsn,
        checkpoint: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let _serial = self.serial.lock();
        self.run_serialised(trigger, &log_end, checkpoint)
    }

    /// Runs `checkpoint` as [`run`](Self::run) does if one is due by the triggers
    /// (decided once every other checkpoint has ended, so that one just completed
    /// counts). Returns whether one ran.
    ///
    /// # Errors
    /// `checkpoint`'s.
    pub(super) fn run_if_due(
        &self,
        log_end: impl Fn() -> Lsn,
        checkpoint: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        let _serial = self.serial.lock();
        let Some(trigger) = self.due(log_end(), Instant::now()) else { return Ok(false) };
        self.run_serialised(trigger, &log_end, checkpoint).map(|()| true)
    }

    fn run_serialised<R>(
        &self,
        trigger: Trigger,
        log_end: &impl Fn() -> Lsn,
        checkpoint: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let started = Instant::now();
        let outcome = checkpoint();
        let mut st = self.state.lock();
        match &outcome {
            Ok(_) => {
                let end = log_end();
                assert!(
                    end.get() >= st.stats.last_end_lsn,
                    "log end {end} after a checkpoint, before the last one's {}",
                    st.stats.last_end_lsn
                );
                st.stats.taken += 1;
                match trigger {
                    Trigger::LogBytes(_) => st.stats.by_log_bytes += 1,
                    Trigger::Interval(_) => st.stats.by_interval += 1,
                    Trigger::Manual | Trigger::Close => {}
                }
                st.stats.automatic += u64::from(trigger.automatic());
                st.stats.last_end_lsn = end.get();
                st.stats.last_ms = started.elapsed().as_secs_f64() * 1e3;
                st.last_at = Instant::now();
                st.failed_at = None;
            }
            Err(e) => {
                st.stats.failed += 1;
                st.stats.last_error = Some(format!("{trigger}: {e}"));
                st.failed_at = Some(Instant::now());
            }
        }
        outcome
    }

    /// The automatic checkpoint due when the log ends at `log_end` at time `now`, if any.
    fn due(&self, log_end: Lsn, now: Instant) -> Option<Trigger> {
        let st = self.state.lock();
        if !self.cfg.enabled {
            return None;
        }
        if st
            .failed_at
            .is_some_and(|at| now.saturating_duration_since(at) < Duration::from_millis(RETRY_AFTER_FAILURE_MS))
        {
            return None;
        }
        // Before the first checkpoint (none yet: an open ends with one) nothing is due.
        if st.stats.taken == 0 {
            return None;
        }
        let grown = log_end.get().saturating_sub(st.stats.last_end_lsn);
        let since_ms = u64::try_from(now.saturating_duration_since(st.last_at).as_millis()).unwrap_or(u64::MAX);
        if self.cfg.log_bytes > 0 && grown >= self.cfg.log_bytes {
            Some(Trigger::LogBytes(grown))
        } else if self.cfg.interval_ms > 0 && grown > 0 && since_ms >= self.cfg.interval_ms {
            Some(Trigger::Interval(since_ms))
        } else {
            None
        }
    }

    /// The background checkpointer ended early, because of `why`.
    fn stopped(&self, why: String) {
        self.state.lock().stats.stopped = Some(why);
    }
}

/// What the background checkpointer needs of its database.
pub(super) trait Background: Send + Sync + 'static {
    /// The database's checkpoints.
    fn checkpoints(&self) -> &Checkpoints;

    /// Whether the database still takes checkpoints.
    ///
    /// # Errors
    /// Why not (halted, the log or the store failed): the thread ends.
    fn alive(&self) -> Result<()>;

    /// A checkpoint if one is due ([`Checkpoints::run_if_due`]).
    ///
    /// # Errors
    /// The checkpoint's (recorded in the statistics).
    fn checkpoint_if_due(&self) -> Result<bool>;
}

/// Stop flag and its wake-up.
#[derive(Default)]
struct Signal {
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Signal {
    /// Waits `timeout` unless told to stop; true if told to stop.
    fn stop_within(&self, timeout: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, timeout);
        }
        *stop
    }

    fn set(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
    }
}

/// The background checkpointer of one database: its thread, stopped and joined when
/// this is dropped.
pub(super) struct Checkpointer {
    signal: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread for `db` if its triggers are enabled and one of them is not 0
    /// (`None` if not).
    ///
    /// # Errors
    /// The thread could not be spawned: the message.
    pub(super) fn start<T: Background>(db: &Arc<T>) -> std::result::Result<Option<Checkpointer>, String> {
        let cfg = db.checkpoints().config();
        if !cfg.enabled || (cfg.log_bytes == 0 && cfg.interval_ms == 0) {
            return Ok(None);
        }
        let signal = Arc::new(Signal::default());
        let (weak, sig) = (Arc::downgrade(db), signal.clone());
        THREADS.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("tierdb-ckpt".into()).spawn(move || {
            let _count = ThreadCount;
            run(&weak, &sig);
        });
        match spawned {
            Ok(thread) => Ok(Some(Checkpointer { signal, thread: Some(thread) })),
            Err(e) => {
                THREADS.fetch_sub(1, Ordering::SeqCst);
                Err(format!("cannot start the background checkpointer: {e}"))
            }
        }
    }

    /// Whether the thread still runs.
    pub(super) fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.signal.set();
        if let Some(thread) = self.thread.take() {
            // A panic of the thread (a bug: a failed assertion) was reported by the
            // panic hook; the close goes on.
            let _ = thread.join();
        }
    }
}

/// Counts a running thread down when it ends, however it ends.
struct ThreadCount;

impl Drop for ThreadCount {
    fn drop(&mut self) {
        THREADS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The thread: every [`CHECKPOINTER_POLL_MS`], a checkpoint if one is due, until told to stop, the
/// database is gone, or it can take no more checkpoints.
fn run<T: Background>(db: &Weak<T>, signal: &Signal) {
    while !signal.stop_within(Duration::from_millis(CHECKPOINTER_POLL_MS)) {
        let Some(db) = db.upgrade() else { return };
        if let Err(e) = db.alive() {
            db.checkpoints().stopped(format!("no more background checkpoints: {e}"));
            return;
        }
        // A failure is in the statistics; the retry waits `RETRY_AFTER_FAILURE_MS`.
        let _ = db.checkpoint_if_due();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DbError;

    fn cfg(log_bytes: u64, interval_ms: u64) -> CheckpointConfig {
        CheckpointConfig { enabled: true, log_bytes, interval_ms }
    }

    fn completed(c: &Checkpoints, trigger: Trigger, end: u64) {
        c.run(trigger, || Lsn::new(end), || Ok(())).unwrap();
    }

    #[test]
    fn the_size_trigger_counts_bytes_since_the_last_checkpoint_of_any_kind() {
        let c = Checkpoints::new(cfg(1000, 0));
        let now = Instant::now();
        assert_eq!(c.due(Lsn::new(5000), now), None, "nothing is due before the open's checkpoint");
        completed(&c, Trigger::Manual, 100);
        assert_eq!(c.due(Lsn::new(1099), now), None);
        assert_eq!(c.due(Lsn::new(1100), now), Some(Trigger::LogBytes(1000)));
        completed(&c, Trigger::Manual, 1200);
        assert_eq!(c.due(Lsn::new(1300), now), None, "a manual checkpoint resets the size trigger");
        assert!(c.run_if_due(|| Lsn::new(2300), || Ok(())).unwrap());
        let s = c.stats();
        assert_eq!((s.taken, s.automatic, s.by_log_bytes, s.by_interval, s.last_end_lsn), (3, 1, 1, 0, 2300));
    }

    #[test]
    fn the_time_trigger_needs_growth_and_zero_disables_a_trigger() {
        let c = Checkpoints::new(cfg(0, 50));
        completed(&c, Trigger::Manual, 100);
        let later = Instant::now() + Duration::from_millis(60);
        assert_eq!(c.due(Lsn::new(100), later), None, "the log did not grow");
        assert!(matches!(c.due(Lsn::new(101), later), Some(Trigger::Interval(ms)) if ms >= 50));
        assert_eq!(c.due(Lsn::new(u64::MAX), Instant::now()), None, "no size trigger with log_bytes 0");
        let off = Checkpoints::new(CheckpointConfig::OFF);
        completed(&off, Trigger::Manual, 100);
        assert_eq!(off.due(Lsn::new(1 << 40), later + Duration::from_secs(3600)), None);
    }

    #[test]
    fn a_failure_is_kept_and_delays_the_next_attempt() {
        let c = Checkpoints::new(cfg(10, 0));
        completed(&c, Trigger::Manual, 100);
        let e = c.run_if_due(|| Lsn::new(200), || Err(DbError::Config { what: "injected".into() }.into())).unwrap_err();
        assert!(e.to_string().contains("injected"), "{e}");
        let s = c.stats();
        assert_eq!((s.taken, s.failed), (1, 1));
        let last = s.last_error.unwrap();
        assert!(last.contains("background checkpoint (log grew 100 bytes)") && last.contains("injected"), "{last}");
        assert_eq!(c.due(Lsn::new(200), Instant::now()), None, "retried at once");
        let later = Instant::now() + Duration::from_millis(RETRY_AFTER_FAILURE_MS);
        assert_eq!(c.due(Lsn::new(200), later), Some(Trigger::LogBytes(100)));
        completed(&c, Trigger::Close, 300);
        assert!(c.stats().last_error.is_some(), "the last error is kept after a success");
    }

    /// A stand-in database: its log grows by itself.
    struct Fake {
        checkpoints: Checkpoints,
        end: std::sync::atomic::AtomicU64,
        alive: std::sync::atomic::AtomicBool,
    }

    impl Background for Fake {
        fn checkpoints(&self) -> &Checkpoints {
            &self.checkpoints
        }
        fn alive(&self) -> Result<()> {
            if self.alive.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(DbError::Halted { cause: "test".into() }.into())
            }
        }
        fn checkpoint_if_due(&self) -> Result<bool> {
            self.checkpoints.run_if_due(|| Lsn::new(self.end.load(Ordering::SeqCst)), || Ok(()))
        }
    }

    #[test]
    fn the_thread_checkpoints_when_due_ends_when_the_database_fails_and_joins_on_drop() {
        let fake = Arc::new(Fake {
            checkpoints: Checkpoints::new(cfg(100, 0)),
            end: std::sync::atomic::AtomicU64::new(64),
            alive: std::sync::atomic::AtomicBool::new(true),
        });
        completed(&fake.checkpoints, Trigger::Manual, 64);
        let ckpt = Checkpointer::start(&fake).unwrap().expect("enabled");
        fake.end.store(1000, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while fake.checkpoints.stats().automatic == 0 {
            assert!(Instant::now() < deadline, "no background checkpoint: {:?}", fake.checkpoints.stats());
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(fake.checkpoints.stats().by_log_bytes, 1);
        fake.alive.store(false, Ordering::SeqCst);
        while ckpt.running() {
            assert!(Instant::now() < deadline, "the thread did not end");
            std::thread::sleep(Duration::from_millis(1));
        }
        let stopped = fake.checkpoints.stats().stopped.expect("why it stopped");
        assert!(stopped.contains("halted"), "{stopped}");
        drop(ckpt);
        assert_eq!(Arc::strong_count(&fake), 1);
        assert_eq!(Arc::weak_count(&fake), 0, "the thread's reference is gone");
        for off in [CheckpointConfig::OFF, cfg(0, 0)] {
            let fake = Arc::new(Fake {
                checkpoints: Checkpoints::new(off),
                end: std::sync::atomic::AtomicU64::new(64),
                alive: std::sync::atomic::AtomicBool::new(true),
            });
            assert!(Checkpointer::start(&fake).unwrap().is_none(), "a thread for {off:?}");
        }
    }
}
