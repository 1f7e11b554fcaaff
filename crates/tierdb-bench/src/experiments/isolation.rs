//! The concurrent randomised history checker behind `tierdb check-isolation`: threads
//! of random transactions over a small key space on a real [`Db`] (its files, its
//! log, any architecture), every operation recorded with wall-clock bounds, then the
//! history analysed for the anomalies that the isolation level judged forbids
//! (`docs/isolation.md`).
//!
//! The workload. One tree holds `keys` registers (`r000`, …) and `accounts` bank
//! accounts (`a000`, …), all loaded before the run. Three kinds of transaction:
//! - *register*: one to [`OPS_PER_TXN_MAX`] operations, each a read, a re-read of a key
//!   it touched, or a read-modify-write (a read, then a write of a new value naming the
//!   version read); one in [`ROLLBACK_ONE_IN`] rolls back on purpose;
//! - *transfer*: reads two accounts and moves an amount from one to the other (the
//!   total stays); some roll back on purpose;
//! - *audit*: reads every account; the balances must add up to the total.
//!
//! With `ordered_writes`, a transaction writes its keys in ascending order, so that no
//! two can wait for each other's locks (no deadlock, even without deadlock detection).
//!
//! Every written value is unique and self-describing: `TXN.OP<PREV#BALANCE` (e.g. `12.3<7.1#990`),
//! the writer, the number of the write in its transaction, the version it read before
//! writing and the balance (0 for registers). The version a read returns names its
//! writer, so each key's version chain is rebuilt from the values: two committed
//! writers that read the same version are a fork (a lost update).
//!
//! The analysis ([`analyse`]) is a pure function of a [`History`]: the unit tests feed
//! it histories made by hand, one per anomaly and a clean one. It is sound, not
//! complete: an anomaly it reports happened (given the wall-clock bounds and that a
//! commit becomes visible at one instant between its call and its return, and a
//! snapshot is taken at one instant inside `begin`); many that happen go unseen.
//!
//! Concurrency: each worker records its own transactions; the histories are merged
//! after the workers stop. One seed draws every worker's plans; the interleaving is the
//! machine's, so a run is not replayable, but a seed's workload is.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::prelude::*;
use serde::Serialize;
use tierdb::arch::{ArchConfig, Architecture};
use tierdb::db::{Db, DbConfig, DbError, DbStore, Isolation, VERSION_BYTES_MAX_DEFAULT};
use tierdb::device::NvmConfig;
use tierdb::sources::DirectConfig;
use tierdb::wal::{Durability, LogBuffer};
use tierdb::{ByteSize, device::EmulationMode};

use crate::harness::Cleanup;

/// The tree the checker's keys live in.
pub const TREE: &str = "isolation";
/// Most worker threads.
pub const THREADS_MAX: u32 = 256;
/// Fewest registers: fewer leave no room for two transactions to meet and miss.
pub const KEYS_MIN: u32 = 1;
/// Most registers: more make conflicts, and so anomalies, rare.
pub const KEYS_MAX: u32 = 4096;
/// Fewest accounts: a transfer needs two.
pub const ACCOUNTS_MIN: u32 = 2;
/// Most accounts: an audit reads them all.
pub const ACCOUNTS_MAX: u32 = 256;
/// Longest run.
pub const DURATION_MAX: Duration = Duration::from_secs(3600);
/// Most transactions recorded; the run stops early when it reaches them (the history
/// is analysed in memory).
pub const HISTORY_TXNS_MAX: usize = 1_000_000;
/// Most operations of a register transaction.
pub const OPS_PER_TXN_MAX: u32 = 4;
/// One register or transfer transaction in this many rolls back on purpose (aborted
/// versions for dirty reads to find).
pub const ROLLBACK_ONE_IN: u32 = 8;
/// Each account's balance after the load.
pub const BALANCE_INITIAL: i64 = 1000;
/// Largest amount a transfer moves.
pub const TRANSFER_MAX: i64 = 100;
/// Examples kept per anomaly kind.
pub const EXAMPLES_MAX: usize = 5;
/// Bytes of an unknown value kept in its record.
const UNKNOWN_VALUE_BYTES_MAX: usize = 64;

const _: () = assert!(KEYS_MIN >= 1 && KEYS_MIN <= KEYS_MAX && ACCOUNTS_MIN >= 2 && ACCOUNTS_MIN <= ACCOUNTS_MAX);
const _: () = assert!(ROLLBACK_ONE_IN >= 2 && OPS_PER_TXN_MAX >= 2 && TRANSFER_MAX < BALANCE_INITIAL);
// Keys are named with three digits at least; more digits keep the order (all share one width).
const _: () = assert!(KEYS_MAX < 10_000 && ACCOUNTS_MAX < 10_000);

/// What the checker cannot do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// A setting out of bounds or a combination the checker refuses.
    #[error("isolation check: {what}")]
    Config {
        /// What is wrong, with the value.
        what: String,
    },
    /// A file the run would create exists already.
    #[error("{} exists already: it is not overwritten", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The database failed other than by an abort the checker expects.
    #[error("{what}: {source}")]
    Db {
        /// What was being done (opening, loading, a worker's transaction, closing).
        what: String,
        /// The database's error.
        #[source]
        source: tierdb::Error,
    },
    /// A worker thread panicked.
    #[error("worker thread {thread} panicked")]
    WorkerPanicked {
        /// The worker's number.
        thread: u32,
    },
}

/// A result of this module.
pub type Result<T, E = IsolationError> = std::result::Result<T, E>;

/// How to run a check.
#[derive(Clone, Debug)]
pub struct IsolationConfig {
    /// The architecture: tiers, profiles, mode, and where the NVM pool goes. The
    /// database directory is beside its SSD path (`<stem>-isolation`).
    pub arch: ArchConfig,
    /// The database's isolation ([`DbConfig::isolation`]).
    pub isolation: Isolation,
    /// The level the history is judged against: the anomalies it forbids are
    /// counted as failures.
    pub judged_as: Isolation,
    /// Worker threads.
    pub threads: u32,
    /// Registers.
    pub keys: u32,
    /// Bank accounts.
    pub accounts: u32,
    /// How long the workers run.
    pub duration: Duration,
    /// Draws every worker's plans.
    pub seed: u64,
    /// What a commit waits for (`sync` or `group`; `none` logs nothing, so a rollback
    /// could not undo, and is refused).
    pub durability: Durability,
    /// Each transaction writes its keys in ascending order (no deadlocks).
    pub ordered_writes: bool,
    /// [`DbConfig::version_bytes_max`]: small values end old snapshots
    /// (`SnapshotTooOld`).
    pub version_bytes_max: u64,
}

impl IsolationConfig {
    /// A check of `arch` under `isolation`, judged at that level (read uncommitted is
    /// judged as read committed: see [`default_judge`]): 4 threads, 8 registers, 8
    /// accounts, 2 s, seed 7, durability `group`, ordered writes.
    pub fn new(arch: ArchConfig, isolation: Isolation) -> IsolationConfig {
        IsolationConfig {
            arch,
            isolation,
            judged_as: default_judge(isolation),
            threads: 4,
            keys: 8,
            accounts: 8,
            duration: Duration::from_secs(2),
            seed: 7,
            durability: Durability::Group,
            ordered_writes: true,
            version_bytes_max: VERSION_BYTES_MAX_DEFAULT,
        }
    }

    /// Checks every bound.
    ///
    /// # Errors
    /// `Config`, naming the setting and its bounds.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| Err(IsolationError::Config { what });
        if self.threads == 0 || self.threads > THREADS_MAX {
            return bad(format!("threads {} is outside 1..={THREADS_MAX}", self.threads));
        }
        if !(KEYS_MIN..=KEYS_MAX).contains(&self.keys) {
            return bad(format!("keys {} is outside {KEYS_MIN}..={KEYS_MAX}", self.keys));
        }
        if !(ACCOUNTS_MIN..=ACCOUNTS_MAX).contains(&self.accounts) {
            return bad(format!("accounts {} is outside {ACCOUNTS_MIN}..={ACCOUNTS_MAX}", self.accounts));
        }
        if self.duration.is_zero() || self.duration > DURATION_MAX {
            return bad(format!("duration {:?} is outside (0, {} s]", self.duration, DURATION_MAX.as_secs()));
        }
        if self.durability == Durability::None {
            return bad("durability none logs nothing, so a rollback cannot undo: use sync or group".into());
        }
        Ok(())
    }
}

/// The level a run at `isolation` is judged against by default: its own, except read
/// uncommitted, judged as read committed — such a run is the checker's positive
/// control: it must find the dirty reads that read uncommitted lets through.
pub fn default_judge(isolation: Isolation) -> Isolation {
    match isolation {
        Isolation::ReadUncommitted => Isolation::ReadCommitted,
        other => other,
    }
}

// ---------------------------------------------------------------------------------------
// The history

/// A version of a key: the transaction that wrote it and the number of the operation
/// (in that transaction) that wrote it. The load is transaction 0, whose operation `i`
/// wrote key `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct VersionId {
    /// The writer (0: the load).
    pub txn: u64,
    /// The writing operation's number in its transaction.
    pub op: u32,
}

impl std::fmt::Display for VersionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.txn, self.op)
    }
}

/// What a read returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Seen {
    /// A value that decodes: its version and balance.
    Version {
        /// The version the value names.
        version: VersionId,
        /// The balance it carries.
        balance: i64,
    },
    /// No value (the keys are loaded and never deleted).
    Absent,
    /// A value that does not decode (lossy UTF-8, cut).
    Unknown {
        /// The value's start.
        value: String,
    },
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seen::Version { version, balance } => write!(f, "version {version} (balance {balance})"),
            Seen::Absent => f.write_str("no value"),
            Seen::Unknown { value } => write!(f, "the unknown value {value:?}"),
        }
    }
}

/// One operation of a transaction.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "kebab-case", tag = "op")]
pub enum OpKind {
    /// A `get`.
    Read {
        /// The key, as its index in [`History::keys`].
        key: u32,
        /// What it returned.
        seen: Seen,
    },
    /// A `put` of a new version.
    Write {
        /// The key, as its index in [`History::keys`].
        key: u32,
        /// The version written (its `op` is this operation's number).
        version: VersionId,
        /// The version the writer read before (None: it read none that decodes).
        prev: Option<VersionId>,
        /// The balance written (0 for registers).
        balance: i64,
    },
}

/// One operation with its wall-clock bounds (nanoseconds since the run started).
#[derive(Clone, Debug, Serialize)]
pub struct Op {
    /// What it did.
    #[serde(flatten)]
    pub kind: OpKind,
    /// When it was called.
    pub start_ns: u64,
    /// When it returned.
    pub end_ns: u64,
    /// It returned `Ok` (a failed operation ends the transaction).
    pub ok: bool,
}

/// Why a transaction aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbortCause {
    /// It rolled back on purpose.
    Voluntary,
    /// `WriteConflict`.
    WriteConflict,
    /// `Deadlock`.
    Deadlock,
    /// `LockTimeout`.
    LockTimeout,
    /// `SnapshotTooOld`.
    SnapshotTooOld,
    /// `TxnFailed` (an earlier error the checker did not see).
    TxnFailed,
}

impl AbortCause {
    /// The cause of an error the checker expects (a transaction fails and rolls back),
    /// None for the others.
    pub fn of(e: &tierdb::Error) -> Option<AbortCause> {
        match e {
            tierdb::Error::Db(d) => match d {
                DbError::WriteConflict { .. } => Some(AbortCause::WriteConflict),
                DbError::Deadlock { .. } => Some(AbortCause::Deadlock),
                DbError::LockTimeout { .. } => Some(AbortCause::LockTimeout),
                DbError::SnapshotTooOld { .. } => Some(AbortCause::SnapshotTooOld),
                DbError::TxnFailed { .. } => Some(AbortCause::TxnFailed),
                _ => None,
            },
            _ => None,
        }
    }
}

/// How a transaction ended, with the bounds of its commit or rollback call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum End {
    /// `commit` returned `Ok`.
    Committed {
        /// When `commit` was called.
        call_ns: u64,
        /// When it returned.
        return_ns: u64,
    },
    /// It rolled back.
    Aborted {
        /// Why.
        cause: AbortCause,
        /// When the commit or rollback that ended it was called.
        call_ns: u64,
        /// When it returned.
        return_ns: u64,
    },
}

impl End {
    /// When the call that ended the transaction was made.
    pub fn call_ns(&self) -> u64 {
        match *self {
            End::Committed { call_ns, .. } | End::Aborted { call_ns, .. } => call_ns,
        }
    }
}

/// The kind of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnKind {
    /// Reads and read-modify-writes of registers.
    Register,
    /// A transfer between two accounts.
    Transfer,
    /// Reads every account.
    Audit,
}

/// One transaction as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct TxnRecord {
    /// The checker's id (from 1; 0 is the load).
    pub id: u64,
    /// The worker that ran it.
    pub thread: u32,
    /// What it does.
    pub kind: TxnKind,
    /// When `begin` was called.
    pub begin_ns: u64,
    /// When `begin` returned.
    pub begun_ns: u64,
    /// Its operations, in order.
    pub ops: Vec<Op>,
    /// How it ended.
    pub end: End,
}

/// A run's history: the keys, the transactions, and what every key held at the end
/// (read after every worker stopped).
#[derive(Clone, Debug, Default, Serialize)]
pub struct History {
    /// Every key, registers first, then accounts: key `i`'s loaded version is
    /// `VersionId { txn: 0, op: i }`.
    pub keys: Vec<String>,
    /// How many of the keys (the last ones) are accounts.
    pub accounts: usize,
    /// Each account's loaded balance.
    pub balance_initial: i64,
    /// The transactions, any order.
    pub txns: Vec<TxnRecord>,
    /// Each key's value after the run (empty: not read).
    pub final_state: Vec<(String, Seen)>,
}

// ---------------------------------------------------------------------------------------
// Values

/// The value of version `v`, which read `prev`, with `balance`.
pub fn encode_value(v: VersionId, prev: Option<VersionId>, balance: i64) -> Vec<u8> {
    let prev = prev.map_or_else(|| "-".to_owned(), |p| p.to_string());
    format!("{v}<{prev}#{balance}").into_bytes()
}

/// What a read's value says.
pub fn decode_value(value: Option<&[u8]>) -> Seen {
    let Some(bytes) = value else { return Seen::Absent };
    let parsed = (|| {
        let s = std::str::from_utf8(bytes).ok()?;
        let (v, rest) = s.split_once('<')?;
        let (_prev, balance) = rest.split_once('#')?;
        let (txn, op) = v.split_once('.')?;
        Some(Seen::Version {
            version: VersionId { txn: txn.parse().ok()?, op: op.parse().ok()? },
            balance: balance.parse().ok()?,
        })
    })();
    parsed.unwrap_or_else(|| {
        let mut value = String::from_utf8_lossy(bytes).into_owned();
        if value.len() > UNKNOWN_VALUE_BYTES_MAX {
            let mut cut = UNKNOWN_VALUE_BYTES_MAX;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            value.truncate(cut);
        }
        Seen::Unknown { value }
    })
}

// ---------------------------------------------------------------------------------------
// The analysis

/// An anomaly kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    /// A read of a version whose writer aborted, or that its writer overwrote, or
    /// before its writer called commit.
    DirtyRead,
    /// A write while another transaction's write of the key was uncommitted, or a key
    /// left holding an aborted or overwritten version.
    DirtyWrite,
    /// Two committed transactions that read one version of a key and both wrote it;
    /// or the accounts' final total changed.
    LostUpdate,
    /// Two reads of a key in one transaction, without its own write between, that
    /// returned different versions.
    NonRepeatableRead,
    /// A transaction's reads fit no single instant of its `begin` (a version committed
    /// after it began, or replaced before it began, or two that never coexisted); or
    /// an audit whose balances do not add up.
    ReadSkew,
    /// A read of a value no transaction wrote (absent, garbled, unknown version, or a
    /// balance its writer did not write).
    UnknownValue,
    /// A read, after the transaction's own write of the key, of something else.
    OwnWriteNotSeen,
}

impl AnomalyKind {
    /// Every kind, in the report's order.
    pub const ALL: [AnomalyKind; 7] = [
        AnomalyKind::DirtyRead,
        AnomalyKind::DirtyWrite,
        AnomalyKind::LostUpdate,
        AnomalyKind::NonRepeatableRead,
        AnomalyKind::ReadSkew,
        AnomalyKind::UnknownValue,
        AnomalyKind::OwnWriteNotSeen,
    ];

    /// The name a report prints.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::DirtyRead => "dirty read",
            AnomalyKind::DirtyWrite => "dirty write",
            AnomalyKind::LostUpdate => "lost update",
            AnomalyKind::NonRepeatableRead => "non-repeatable read",
            AnomalyKind::ReadSkew => "read skew",
            AnomalyKind::UnknownValue => "unknown value",
            AnomalyKind::OwnWriteNotSeen => "own write not seen",
        }
    }

    /// True if a database at `level` must never show it. Every level forbids dirty
    /// writes (writes lock their keys) and reads of values nobody wrote; read
    /// committed adds dirty reads; snapshot isolation forbids them all.
    pub fn forbidden_at(self, level: Isolation) -> bool {
        match self {
            AnomalyKind::DirtyWrite | AnomalyKind::UnknownValue | AnomalyKind::OwnWriteNotSeen => true,
            AnomalyKind::DirtyRead => level != Isolation::ReadUncommitted,
            AnomalyKind::LostUpdate | AnomalyKind::NonRepeatableRead | AnomalyKind::ReadSkew => {
                level == Isolation::Snapshot
            }
        }
    }
}

/// One anomaly: the transactions involved and what was seen.
#[derive(Clone, Debug, Serialize)]
pub struct Anomaly {
    /// Its kind.
    pub kind: AnomalyKind,
    /// The transactions involved, the one that saw or did it first.
    pub txns: Vec<u64>,
    /// The key, if one.
    pub key: Option<String>,
    /// What happened, with versions and times.
    pub what: String,
}

/// The anomalies of one kind.
#[derive(Clone, Debug, Serialize)]
pub struct AnomalyCount {
    /// The kind.
    pub kind: AnomalyKind,
    /// Forbidden at the level judged.
    pub forbidden: bool,
    /// How many were found.
    pub count: u64,
    /// The first [`EXAMPLES_MAX`].
    pub examples: Vec<Anomaly>,
}

/// What the analysis found.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The level judged.
    pub judged_as: Isolation,
    /// Every kind, found or not, in [`AnomalyKind::ALL`]'s order.
    pub anomalies: Vec<AnomalyCount>,
    /// Anomalies of kinds forbidden at the level judged.
    pub forbidden_found: u64,
}

impl Analysis {
    /// The count of `kind`.
    pub fn count(&self, kind: AnomalyKind) -> u64 {
        self.anomalies.iter().find(|a| a.kind == kind).map_or(0, |a| a.count)
    }
}

/// Collects anomalies, keeping counts and the first examples per kind.
struct Found {
    counts: HashMap<AnomalyKind, (u64, Vec<Anomaly>)>,
}

impl Found {
    fn add(&mut self, kind: AnomalyKind, txns: Vec<u64>, key: Option<&str>, what: String) {
        let e = self.counts.entry(kind).or_default();
        e.0 += 1;
        if e.1.len() < EXAMPLES_MAX {
            e.1.push(Anomaly { kind, txns, key: key.map(str::to_owned), what });
        }
    }
}

/// What the analysis knows of a version.
struct VersionInfo<'h> {
    key: &'h str,
    /// The writer's last write of the key (not overwritten by the writer itself).
    last_in_txn: bool,
    balance: i64,
}

/// Status of a writer, as the analysis needs it.
#[derive(Clone, Copy)]
enum Status {
    /// The load, or a transaction whose commit was called at `call` and returned at `ret`.
    Committed {
        call: u64,
        ret: u64,
    },
    Aborted(AbortCause),
}

/// Analyses `h`, judging it at `level`.
///
/// Steps:
/// 1. index every version (the load's and every write's) and every writer's outcome;
/// 2. per committed writer, the version each of its keys' first write read (the
///    predecessor): two committed writers of one predecessor are a lost update; the
///    earliest return of a successor's commit bounds how long the predecessor was
///    the latest;
/// 3. per transaction, per read, in order: reads of unknown values, of its own
///    overwritten write, dirty reads, non-repeatable reads; the instant its
///    snapshot must lie at is narrowed by every clean read, and an empty range is
///    read skew; an audit's total;
/// 4. per key, writes that overlap another transaction's uncommitted write of the key
///    (dirty writes);
/// 5. the final state: every key holds a committed writer's last version, and the
///    accounts hold the total.
pub fn analyse(h: &History, level: Isolation) -> Analysis {
    let mut found = Found { counts: HashMap::new() };
    let name = |k: u32| h.keys.get(k as usize).map_or("?", String::as_str);
    let accounts_from = h.keys.len().saturating_sub(h.accounts);
    let account_keys: HashSet<&str> = h.keys[accounts_from..].iter().map(String::as_str).collect();
    let is_account = |key: &str| account_keys.contains(key);
    let total_expected = h.balance_initial * h.accounts as i64;

    // 1. Versions and writers.
    let mut versions: HashMap<VersionId, VersionInfo<'_>> = HashMap::new();
    for (i, key) in h.keys.iter().enumerate() {
        let balance = if i >= accounts_from { h.balance_initial } else { 0 };
        let op = u32::try_from(i).expect("keys are bounded by KEYS_MAX + ACCOUNTS_MAX");
        versions.insert(VersionId { txn: 0, op }, VersionInfo { key, last_in_txn: true, balance });
    }
    let mut status: HashMap<u64, Status> = HashMap::from([(0, Status::Committed { call: 0, ret: 0 })]);
    for t in &h.txns {
        status.insert(
            t.id,
            match t.end {
                End::Committed { call_ns, return_ns } => Status::Committed { call: call_ns, ret: return_ns },
                End::Aborted { cause, .. } => Status::Aborted(cause),
            },
        );
        let mut last: HashMap<&str, VersionId> = HashMap::new();
        for op in &t.ops {
            if let OpKind::Write { key, version, balance, .. } = &op.kind {
                let key = name(*key);
                if let Some(prev) = last.insert(key, *version)
                    && let Some(p) = versions.get_mut(&prev)
                {
                    p.last_in_txn = false;
                }
                versions.insert(*version, VersionInfo { key, last_in_txn: true, balance: *balance });
            }
        }
    }
    let committed = |txn: u64| match status.get(&txn) {
        Some(&Status::Committed { call, ret }) => Some((call, ret)),
        _ => None,
    };

    // 2. Predecessors of committed writes: forks, and when each version was replaced.
    let mut successors: HashMap<VersionId, Vec<(u64, u64)>> = HashMap::new(); // prev -> (txn, commit return)
    for t in &h.txns {
        let Some((_, ret)) = committed(t.id) else { continue };
        let mut written: HashSet<&str> = HashSet::new();
        for op in &t.ops {
            if let OpKind::Write { key, prev, .. } = &op.kind
                && written.insert(name(*key))
                && let Some(p) = prev
            {
                successors.entry(*p).or_default().push((t.id, ret));
            }
        }
    }
    let mut forks: Vec<_> = successors.iter().filter(|(_, s)| s.len() > 1).collect();
    forks.sort_by_key(|(v, _)| **v);
    for (v, s) in forks {
        let key = versions.get(v).map(|i| i.key);
        let txns: Vec<u64> = s.iter().map(|&(t, _)| t).collect();
        found.add(
            AnomalyKind::LostUpdate,
            txns.clone(),
            key,
            format!("committed transactions {txns:?} all read version {v} and wrote over it"),
        );
    }
    let replaced_by = |v: VersionId| successors.get(&v).and_then(|s| s.iter().min_by_key(|&&(_, ret)| ret)).copied();

    // 3. Reads.
    for t in &h.txns {
        let mut own: HashMap<&str, VersionId> = HashMap::new();
        let mut first_seen: HashMap<&str, &Seen> = HashMap::new();
        // The snapshot's instant lies in [lo, hi]; each bound with the read that set it.
        let (mut lo, mut lo_why) = (t.begin_ns, format!("{} began at {} ns", t.id, t.begin_ns));
        let (mut hi, mut hi_why) = (t.begun_ns, format!("{}'s begin returned at {} ns", t.id, t.begun_ns));
        let mut balances: Vec<i64> = Vec::new();
        for op in t.ops.iter().filter(|o| o.ok) {
            let (key, seen) = match &op.kind {
                OpKind::Write { key, version, .. } => {
                    own.insert(name(*key), *version);
                    continue;
                }
                OpKind::Read { key, seen } => (name(*key), seen),
            };
            let (v, balance) = match seen {
                Seen::Version { version, balance } => (*version, *balance),
                other => {
                    found.add(AnomalyKind::UnknownValue, vec![t.id], Some(key), format!("{} read {other}", t.id));
                    continue;
                }
            };
            let Some(info) = versions.get(&v).filter(|i| i.key == key && i.balance == balance) else {
                found.add(
                    AnomalyKind::UnknownValue,
                    vec![t.id, v.txn],
                    Some(key),
                    format!("{} read version {v} with balance {balance}, which no transaction wrote to {key}", t.id),
                );
                continue;
            };
            if let Some(&mine) = own.get(key) {
                if v != mine {
                    found.add(
                        AnomalyKind::OwnWriteNotSeen,
                        vec![t.id, v.txn],
                        Some(key),
                        format!("{} wrote version {mine}, then read version {v}", t.id),
                    );
                }
                continue;
            }
            if is_account(key) {
                balances.push(balance);
            }
            if let Some(before) = first_seen.insert(key, seen)
                && before != seen
            {
                found.add(
                    AnomalyKind::NonRepeatableRead,
                    vec![t.id, v.txn],
                    Some(key),
                    format!("{} read {key} twice: {before}, then {seen}", t.id),
                );
            }
            let writer = match status.get(&v.txn) {
                Some(Status::Aborted(cause)) => {
                    found.add(
                        AnomalyKind::DirtyRead,
                        vec![t.id, v.txn],
                        Some(key),
                        format!("{} read version {v}, written by {}, which aborted ({cause:?})", t.id, v.txn),
                    );
                    continue;
                }
                Some(&Status::Committed { call, .. }) if v.txn != t.id => call,
                _ => {
                    // Its own version before any write of its own: no transaction wrote that.
                    found.add(
                        AnomalyKind::UnknownValue,
                        vec![t.id],
                        Some(key),
                        format!("{} read version {v} before writing {key}", t.id),
                    );
                    continue;
                }
            };
            if !info.last_in_txn {
                found.add(
                    AnomalyKind::DirtyRead,
                    vec![t.id, v.txn],
                    Some(key),
                    format!("{} read version {v}, which its writer {} overwrote before committing", t.id, v.txn),
                );
                continue;
            }
            if op.end_ns < writer {
                found.add(
                    AnomalyKind::DirtyRead,
                    vec![t.id, v.txn],
                    Some(key),
                    format!(
                        "{} read version {v} by {} ns, before its writer {} called commit at {writer} ns",
                        t.id, op.end_ns, v.txn
                    ),
                );
                continue;
            }
            // A clean read: the snapshot is at or after the writer's commit, before its
            // successor's.
            if writer > lo {
                (lo, lo_why) =
                    (writer, format!("{} read version {v} of {key}, whose commit was called at {writer} ns", t.id));
            }
            if let Some((next, ret)) = replaced_by(v)
                && ret < hi
            {
                (hi, hi_why) =
                    (ret, format!("{next} replaced version {v} of {key}, and its commit returned at {ret} ns"));
            }
        }
        if lo > hi {
            found.add(
                AnomalyKind::ReadSkew,
                vec![t.id],
                None,
                format!("no instant fits its reads: {lo_why}; {hi_why}"),
            );
        }
        if t.kind == TxnKind::Audit && balances.len() == h.accounts {
            let total: i64 = balances.iter().sum();
            if total != total_expected {
                found.add(
                    AnomalyKind::ReadSkew,
                    vec![t.id],
                    None,
                    format!("audit {} saw a total of {total}, not {total_expected}", t.id),
                );
            }
        }
    }

    // 4. Dirty writes: W's write of k started after U's write of k returned and
    //    returned before U called commit or rollback.
    let mut writes: HashMap<&str, Vec<(u64, u64, u64, u64)>> = HashMap::new(); // key -> (start, end, txn, txn end call)
    for t in &h.txns {
        for op in t.ops.iter().filter(|o| o.ok) {
            if let OpKind::Write { key, .. } = &op.kind {
                writes.entry(name(*key)).or_default().push((op.start_ns, op.end_ns, t.id, t.end.call_ns()));
            }
        }
    }
    let mut keys: Vec<_> = writes.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let ws = &writes[key];
        let mut by_end: Vec<&(u64, u64, u64, u64)> = ws.iter().collect();
        by_end.sort_by_key(|w| w.1);
        let mut by_start: Vec<&(u64, u64, u64, u64)> = ws.iter().collect();
        by_start.sort_by_key(|w| w.0);
        // The two latest-ending holders (distinct transactions) among writes that
        // returned before the current write started.
        let mut best: [Option<(u64, u64)>; 2] = [None, None]; // (end call, txn)
        let mut next = 0;
        for &&(start, end, txn, _) in &by_start {
            while next < by_end.len() && by_end[next].1 < start {
                let (_, _, u, u_end) = *by_end[next];
                next += 1;
                offer(&mut best, (u_end, u));
            }
            let holder = best.iter().flatten().find(|&&(_, u)| u != txn);
            if let Some(&(u_end, u)) = holder
                && end < u_end
            {
                found.add(
                    AnomalyKind::DirtyWrite,
                    vec![txn, u],
                    Some(key),
                    format!(
                        "{txn} wrote {key} in [{start}, {end}] ns while {u} held an uncommitted write of it \
                         (ended at {u_end} ns)"
                    ),
                );
            }
        }
    }

    // 5. The final state.
    let mut total = 0i64;
    let mut all_accounts_read = 0usize;
    for (key, seen) in &h.final_state {
        let Seen::Version { version: v, balance } = seen else {
            found.add(AnomalyKind::UnknownValue, vec![], Some(key), format!("{key} holds {seen} after the run"));
            continue;
        };
        match (versions.get(v), status.get(&v.txn)) {
            (Some(info), Some(Status::Committed { .. })) if info.key == key && info.last_in_txn => {}
            (Some(info), Some(_)) if info.key == key => found.add(
                AnomalyKind::DirtyWrite,
                vec![v.txn],
                Some(key),
                format!("{key} holds version {v} after the run: aborted or overwritten by its writer"),
            ),
            _ => found.add(
                AnomalyKind::UnknownValue,
                vec![v.txn],
                Some(key),
                format!("{key} holds version {v} after the run, which no transaction wrote to it"),
            ),
        }
        if is_account(key) {
            total += balance;
            all_accounts_read += 1;
        }
    }
    if h.accounts > 0 && all_accounts_read == h.accounts && total != total_expected {
        found.add(
            AnomalyKind::LostUpdate,
            vec![],
            None,
            format!("the accounts hold {total} after the run, not {total_expected}: transfers were lost"),
        );
    }

    let anomalies: Vec<AnomalyCount> = AnomalyKind::ALL
        .iter()
        .map(|&kind| {
            let (count, examples) = found.counts.remove(&kind).unwrap_or_default();
            AnomalyCount { kind, forbidden: kind.forbidden_at(level), count, examples }
        })
        .collect();
    let forbidden_found = anomalies.iter().filter(|a| a.forbidden).map(|a| a.count).sum();
    Analysis { judged_as: level, anomalies, forbidden_found }
}

/// Offers `cand` (a transaction's end call and id) to the two latest-ending
/// transactions `best` (distinct, latest first). A transaction ends once, so one
/// already there is not offered again.
fn offer(best: &mut [Option<(u64, u64)>; 2], cand: (u64, u64)) {
    if best.iter().flatten().any(|&(_, t)| t == cand.1) {
        return;
    }
    if best[0].is_none_or(|b| cand.0 > b.0) {
        best[1] = best[0];
        best[0] = Some(cand);
    } else if best[1].is_none_or(|b| cand.0 > b.0) {
        best[1] = Some(cand);
    }
    debug_assert!(best[1].is_none_or(|b1| best[0].is_some_and(|b0| b0.0 >= b1.0)), "{best:?}");
}

// ---------------------------------------------------------------------------------------
// The run

/// Transactions by outcome.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcomes {
    /// Transactions run.
    pub txns: u64,
    /// Committed.
    pub committed: u64,
    /// Rolled back on purpose.
    pub voluntary_rollbacks: u64,
    /// Aborted by `WriteConflict`.
    pub write_conflicts: u64,
    /// Aborted by `Deadlock`.
    pub deadlocks: u64,
    /// Aborted by `LockTimeout`.
    pub lock_timeouts: u64,
    /// Aborted by `SnapshotTooOld`.
    pub snapshots_too_old: u64,
    /// Aborted by `TxnFailed`.
    pub txn_failed: u64,
    /// Register, transfer and audit transactions.
    pub by_kind: [u64; 3],
    /// Reads that returned.
    pub reads: u64,
    /// Writes that returned `Ok`.
    pub writes: u64,
}

impl Outcomes {
    fn of(txns: &[TxnRecord]) -> Outcomes {
        let mut o = Outcomes { txns: txns.len() as u64, ..Outcomes::default() };
        for t in txns {
            o.by_kind[t.kind as usize] += 1;
            for op in t.ops.iter().filter(|op| op.ok) {
                match op.kind {
                    OpKind::Read { .. } => o.reads += 1,
                    OpKind::Write { .. } => o.writes += 1,
                }
            }
            let n = match t.end {
                End::Committed { .. } => &mut o.committed,
                End::Aborted { cause, .. } => match cause {
                    AbortCause::Voluntary => &mut o.voluntary_rollbacks,
                    AbortCause::WriteConflict => &mut o.write_conflicts,
                    AbortCause::Deadlock => &mut o.deadlocks,
                    AbortCause::LockTimeout => &mut o.lock_timeouts,
                    AbortCause::SnapshotTooOld => &mut o.snapshots_too_old,
                    AbortCause::TxnFailed => &mut o.txn_failed,
                },
            };
            *n += 1;
        }
        o
    }
}

/// What ran.
#[derive(Clone, Debug, Serialize)]
pub struct IsolationSetup {
    /// The architecture.
    pub arch: Architecture,
    /// The devices' emulation mode.
    pub mode: EmulationMode,
    /// Bytes per page.
    pub page_size_bytes: usize,
    /// The DRAM tier.
    pub dram_bytes: u64,
    /// The NVM tier (0 without one).
    pub nvm_bytes: u64,
    /// The database's isolation.
    pub isolation: Isolation,
    /// The level judged.
    pub judged_as: Isolation,
    /// Worker threads.
    pub threads: u32,
    /// Registers.
    pub keys: u32,
    /// Accounts.
    pub accounts: u32,
    /// The run's length asked for.
    pub duration_secs: f64,
    /// The seed.
    pub seed: u64,
    /// What a commit waited for.
    pub durability: Durability,
    /// Writes in ascending key order.
    pub ordered_writes: bool,
    /// Most bytes of before-images kept for snapshots.
    pub version_bytes_max: u64,
}

/// A check's report.
#[derive(Clone, Debug, Serialize)]
pub struct IsolationReport {
    /// `tierdb`'s version.
    pub version: &'static str,
    /// What ran.
    pub setup: IsolationSetup,
    /// How long the workers ran.
    pub run_secs: f64,
    /// The run stopped at [`HISTORY_TXNS_MAX`] transactions.
    pub history_truncated: bool,
    /// Transactions by outcome.
    pub outcomes: Outcomes,
    /// The anomalies.
    pub analysis: Analysis,
}

/// Runs a check: opens a database for `cfg.arch` with `cfg.isolation`, loads the keys,
/// runs the workers for `cfg.duration`, reads the final state, closes and removes the
/// database, and analyses the history.
///
/// # Errors
/// `Config` for settings out of bounds; `Exists` if a file it would create exists;
/// `Db` for the database's errors other than the aborts it expects; `WorkerPanicked`.
pub fn run(cfg: &IsolationConfig) -> Result<IsolationReport> {
    let (history, run_secs, truncated) = run_history(cfg)?;
    let analysis = analyse(&history, cfg.judged_as);
    let a = &cfg.arch;
    Ok(IsolationReport {
        version: env!("CARGO_PKG_VERSION"),
        setup: IsolationSetup {
            arch: a.arch,
            mode: a.mode,
            page_size_bytes: a.page_size,
            dram_bytes: a.dram.bytes(),
            nvm_bytes: if a.arch.uses_nvm() { a.nvm.bytes() } else { 0 },
            isolation: cfg.isolation,
            judged_as: cfg.judged_as,
            threads: cfg.threads,
            keys: cfg.keys,
            accounts: cfg.accounts,
            duration_secs: cfg.duration.as_secs_f64(),
            seed: cfg.seed,
            durability: cfg.durability,
            ordered_writes: cfg.ordered_writes,
            version_bytes_max: cfg.version_bytes_max,
        },
        run_secs,
        history_truncated: truncated,
        outcomes: Outcomes::of(&history.txns),
        analysis,
    })
}

/// Runs the workload and returns its history, the workers' time and whether the
/// history reached its bound.
///
/// # Errors
/// As [`run`].
pub fn run_history(cfg: &IsolationConfig) -> Result<(History, f64, bool)> {
    cfg.check()?;
    let a = &cfg.arch;
    let stem = a.ssd_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = a.ssd_path.with_file_name(format!("{stem}-isolation"));
    let ring = a.nvm_path.with_file_name(format!("{stem}-isolation-log.nvm"));
    let files = vec![a.nvm_path.clone(), a.nvm_double_write_path(), ring.clone(), dir.clone()];
    if let Some(path) = files.iter().find(|f| f.exists()) {
        return Err(IsolationError::Exists { path: path.clone() });
    }
    let _files = Cleanup::new(files);
    let db_err = |what: &str| {
        let what = format!("{what} ({} in {})", a.arch, dir.display());
        move |source| IsolationError::Db { what, source }
    };
    let mut dc = if a.arch == Architecture::NvmDirect {
        let mut c = DbConfig::new(&dir);
        c.wal.file.profile = a.ssd_profile.clone();
        c.wal.file.mode = a.mode;
        // Each in-place write-back is logged durably first: a DRAM log buffer would
        // make that one fdatasync each.
        let mut n = NvmConfig::new(&ring, ByteSize(16 << 20));
        n.profile = a.nvm_profile.clone();
        n.mode = a.mode;
        c.wal.buffer = LogBuffer::Nvm(n);
        c
    } else {
        DbConfig::from_arch(a, &dir).map_err(db_err("configuring the database"))?
    };
    dc.durability = cfg.durability;
    dc.isolation = cfg.isolation;
    dc.version_bytes_max = cfg.version_bytes_max;
    match a.arch {
        Architecture::NvmDirect => {
            let mut n = NvmConfig::new(&a.nvm_path, a.nvm);
            n.profile = a.nvm_profile.clone();
            n.mode = a.mode;
            n.open_mode = tierdb::device::OpenMode::OpenOrCreate;
            let mut direct = DirectConfig::new(n, a.page_size);
            direct.cpu_cache_bytes = a.cpu_cache_model.bytes();
            direct.nvm_verify = a.nvm_verify;
            let db = Db::open_nvm_direct(&dc, &direct).map_err(db_err("opening the database"))?;
            run_on(db, cfg, &db_err)
        }
        Architecture::MainMemory => {
            let db = Db::open_main_memory(&dc).map_err(db_err("opening the database"))?;
            run_on(db, cfg, &db_err)
        }
        _ => {
            let db = Db::open(&dc).map_err(db_err("opening the database"))?;
            run_on(db, cfg, &db_err)
        }
    }
}

/// The keys: registers, then accounts.
fn key_names(cfg: &IsolationConfig) -> Vec<String> {
    (0..cfg.keys).map(|i| format!("r{i:03}")).chain((0..cfg.accounts).map(|i| format!("a{i:03}"))).collect()
}

/// Loads, runs the workers, reads the final state, closes `db`.
fn run_on<S: DbStore, F>(db: Db<S>, cfg: &IsolationConfig, db_err: &dyn Fn(&str) -> F) -> Result<(History, f64, bool)>
where
    F: FnOnce(tierdb::Error) -> IsolationError,
    Db<S>: Sync,
{
    let keys = key_names(cfg);
    let accounts_from = cfg.keys as usize;
    // The load: transaction 0 in the history, committed before the run's clock starts.
    db.create_tree(TREE).map_err(db_err("creating the tree"))?;
    let mut t = db.begin();
    for (i, key) in keys.iter().enumerate() {
        let balance = if i >= accounts_from { BALANCE_INITIAL } else { 0 };
        let op = u32::try_from(i).expect("keys are bounded");
        t.put(TREE, key.as_bytes(), &encode_value(VersionId { txn: 0, op }, None, balance))
            .map_err(db_err("loading the keys"))?;
    }
    t.commit().map_err(db_err("committing the load"))?;

    let start = Instant::now();
    let stop = AtomicBool::new(false);
    let next_id = AtomicU64::new(1);
    let recorded = AtomicU64::new(0);
    let truncated = AtomicBool::new(false);
    let ctx = Worker { db: &db, cfg, keys: &keys, start, stop: &stop, next_id: &next_id };
    let results: Vec<std::thread::Result<tierdb::Result<Vec<TxnRecord>>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|thread| {
                let (ctx, recorded, truncated) = (&ctx, &recorded, &truncated);
                s.spawn(move || {
                    let r = ctx.run(thread, recorded, truncated);
                    if r.is_err() {
                        ctx.stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        while start.elapsed() < cfg.duration && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5).min(cfg.duration));
        }
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join()).collect()
    });
    let run_secs = start.elapsed().as_secs_f64();
    let mut txns = Vec::new();
    for (thread, r) in results.into_iter().enumerate() {
        let thread = thread as u32;
        let r = r.map_err(|_| IsolationError::WorkerPanicked { thread })?;
        txns.extend(r.map_err(db_err(&format!("worker {thread}")))?);
    }
    let mut final_state = Vec::with_capacity(keys.len());
    for key in &keys {
        let v = db.get(TREE, key.as_bytes()).map_err(db_err("reading the final state"))?;
        final_state.push((key.clone(), decode_value(v.as_deref())));
    }
    db.close().map_err(db_err("closing the database"))?;
    let history =
        History { keys, accounts: cfg.accounts as usize, balance_initial: BALANCE_INITIAL, txns, final_state };
    Ok((history, run_secs, truncated.load(Ordering::Relaxed)))
}

/// What every worker shares.
struct Worker<'a, S: DbStore> {
    db: &'a Db<S>,
    cfg: &'a IsolationConfig,
    keys: &'a [String],
    start: Instant,
    stop: &'a AtomicBool,
    next_id: &'a AtomicU64,
}

/// One planned step of a transaction.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Read key `i`.
    Read(usize),
    /// Read key `i`, then write it a new version naming what was read; `delta` is
    /// added to the balance read.
    Update(usize, i64),
}

impl<S: DbStore> Worker<'_, S> {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Runs transactions until told to stop; returns their records.
    fn run(&self, thread: u32, recorded: &AtomicU64, truncated: &AtomicBool) -> tierdb::Result<Vec<TxnRecord>> {
        let seed = self.cfg.seed ^ u64::from(thread).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut out = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            if recorded.fetch_add(1, Ordering::Relaxed) >= HISTORY_TXNS_MAX as u64 {
                truncated.store(true, Ordering::Relaxed);
                self.stop.store(true, Ordering::Relaxed);
                break;
            }
            let (kind, steps, roll_back) = self.plan(&mut rng);
            out.push(self.run_txn(thread, kind, &steps, roll_back, &mut rng)?);
        }
        Ok(out)
    }

    /// A random transaction: its kind, its steps, and whether it rolls back on purpose.
    fn plan(&self, rng: &mut SmallRng) -> (TxnKind, Vec<Step>, bool) {
        let registers = self.cfg.keys as usize;
        let accounts = self.cfg.accounts as usize;
        let roll_back = rng.random_ratio(1, ROLLBACK_ONE_IN);
        match rng.random_range(0..20) {
            0..12 => {
                let n = rng.random_range(1..=OPS_PER_TXN_MAX) as usize;
                let mut steps: Vec<Step> = Vec::with_capacity(n);
                for _ in 0..n {
                    let touched: Vec<usize> = steps
                        .iter()
                        .map(|s| match *s {
                            Step::Read(k) | Step::Update(k, _) => k,
                        })
                        .collect();
                    let key = if !touched.is_empty() && rng.random_ratio(1, 3) {
                        touched[rng.random_range(0..touched.len())]
                    } else {
                        rng.random_range(0..registers)
                    };
                    steps.push(if rng.random_ratio(2, 5) { Step::Update(key, 0) } else { Step::Read(key) });
                }
                if self.cfg.ordered_writes {
                    // The written keys in ascending order, in the updates' places.
                    let mut written: Vec<usize> = steps
                        .iter()
                        .filter_map(|s| match *s {
                            Step::Update(k, _) => Some(k),
                            Step::Read(_) => None,
                        })
                        .collect();
                    written.sort_unstable();
                    let mut w = written.into_iter();
                    for s in &mut steps {
                        if let Step::Update(k, _) = s {
                            *k = w.next().expect("one key per update");
                        }
                    }
                }
                (TxnKind::Register, steps, roll_back)
            }
            12..17 => {
                let a = rng.random_range(0..accounts);
                let b = (a + rng.random_range(1..accounts)) % accounts;
                let (lo, hi) = if self.cfg.ordered_writes { (a.min(b), a.max(b)) } else { (a, b) };
                let amount = rng.random_range(1..=TRANSFER_MAX);
                let (lo, hi) = (registers + lo, registers + hi);
                (
                    TxnKind::Transfer,
                    vec![Step::Read(lo), Step::Read(hi), Step::Update(lo, -amount), Step::Update(hi, amount)],
                    roll_back,
                )
            }
            _ => (TxnKind::Audit, (registers..registers + accounts).map(Step::Read).collect(), false),
        }
    }

    /// Runs one planned transaction and records it. An abort the checker expects ends
    /// it (rolled back); any other error is returned.
    fn run_txn(
        &self,
        thread: u32,
        kind: TxnKind,
        steps: &[Step],
        roll_back: bool,
        rng: &mut SmallRng,
    ) -> tierdb::Result<TxnRecord> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let begin_ns = self.now_ns();
        let mut t = self.db.begin();
        let begun_ns = self.now_ns();
        let mut ops: Vec<Op> = Vec::with_capacity(2 * steps.len());
        let mut failed: Option<AbortCause> = None;
        for step in steps {
            let (k, delta) = match *step {
                Step::Read(k) => (k, None),
                Step::Update(k, d) => (k, Some(d)),
            };
            let key = &self.keys[k];
            let k = u32::try_from(k).expect("keys are bounded by KEYS_MAX + ACCOUNTS_MAX");
            // Read (every update reads first).
            let start_ns = self.now_ns();
            let got = t.get(TREE, key.as_bytes());
            let end_ns = self.now_ns();
            let seen = match got {
                Ok(v) => decode_value(v.as_deref()),
                Err(e) => {
                    failed = Some(AbortCause::of(&e).ok_or(e)?);
                    ops.push(Op { kind: OpKind::Read { key: k, seen: Seen::Absent }, start_ns, end_ns, ok: false });
                    break;
                }
            };
            let read = match &seen {
                Seen::Version { version, balance } => Some((*version, *balance)),
                _ => None,
            };
            ops.push(Op { kind: OpKind::Read { key: k, seen }, start_ns, end_ns, ok: true });
            think(rng);
            let Some(delta) = delta else { continue };
            let version = VersionId { txn: id, op: u32::try_from(ops.len()).expect("a few operations") };
            let prev = read.map(|(v, _)| v);
            let balance = read.map_or(0, |(_, b)| b) + delta;
            let start_ns = self.now_ns();
            let put = t.put(TREE, key.as_bytes(), &encode_value(version, prev, balance));
            let end_ns = self.now_ns();
            let ok = match put {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(AbortCause::of(&e).ok_or(e)?);
                    false
                }
            };
            ops.push(Op { kind: OpKind::Write { key: k, version, prev, balance }, start_ns, end_ns, ok });
            if !ok {
                break;
            }
            think(rng);
        }
        let call_ns = self.now_ns();
        let end = match failed.or(roll_back.then_some(AbortCause::Voluntary)) {
            Some(cause) => {
                t.rollback()?;
                End::Aborted { cause, call_ns, return_ns: self.now_ns() }
            }
            None => match t.commit() {
                Ok(()) => End::Committed { call_ns, return_ns: self.now_ns() },
                Err(e) => End::Aborted { cause: AbortCause::of(&e).ok_or(e)?, call_ns, return_ns: self.now_ns() },
            },
        };
        Ok(TxnRecord { id, thread, kind, begin_ns, begun_ns, ops, end })
    }
}

/// A pause between operations, so that other transactions run inside this one: mostly
/// none, sometimes a yield, rarely a short sleep.
fn think(rng: &mut SmallRng) {
    match rng.random_range(0..16) {
        0..10 => {}
        10..15 => std::thread::yield_now(),
        _ => std::thread::sleep(Duration::from_micros(50)),
    }
}

#[cfg(test)]
mod tests;
