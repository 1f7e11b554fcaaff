//! `tierdb bench ycsb --durability sync|group|none`: the YCSB driver through a
//! database's transactions ([`tierdb::db::Db`]) instead of straight on a B+-tree.
//!
//! The database runs on the buffer manager of the chosen architecture (its tiers,
//! profiles, emulation mode, policy and techniques), in a fresh directory next to where
//! the raw mode puts its page file; its NVM pool is where the raw mode's is, and an NVM
//! log buffer is a file beside it. All of them are removed after the run, on error and
//! on Ctrl-C. Architectures with a buffer manager run: with an SSD the database keeps
//! its page file there; `basic-nvm-bm` and the `mmap-*` engines keep their pages in the
//! NVM pool ([`tierdb::db::DbConfig::pages_in_nvm`]). `main-memory` and `nvm-direct`
//! are refused (the load goes straight into the buffer manager's tree); `bench tpcc`
//! runs transactions on them.
//!
//! Phases:
//! 1. **Load**: the table is created through the database (logged), then the records
//!    are inserted in key order straight into its tree in the buffer manager's
//!    bulk-load mode, **bypassing the log**, as the raw mode loads; a checkpoint follows,
//!    so every loaded page is durable without a log record. Its time is reported apart.
//! 2. **Warm-up** and 3. **run**: as the raw driver ([`ycsb_driver::run_phases`]),
//!    with each operation one transaction:
//!    - read: `get` of the field (or the record), then `commit` (nothing to log);
//!    - update: of one field, [`Txn::update_in_place`] (the value keeps its length, as
//!      the raw mode's in-place update); of all fields, `put` of a new record; then
//!      `commit`;
//!    - insert: `put` + `commit`; read-modify-write: `get` + update + `commit`;
//!    - scan: `scan` + `commit`.
//!
//!    Operation latencies include the commit. Commit latencies are recorded apart, for
//!    the transactions that changed something. The log's counters are diffed over the
//!    measured run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use tierdb::db::{Db, Isolation, Txn};
use tierdb::device::clock;
use tierdb::wal::{self, Durability, WalStats};
use tierdb::{ByteSize, Catalog, PageSource};
use tierdb_workload::{KeySpace, Op, YcsbSpec, build_key, field_range, fill_record, value_rng};

use crate::drivers::ycsb::{self as ycsb_driver, Done, Executor, Latency, TABLE, YcsbReport};

/// Bounds on the log options, so a typo cannot make a useless run.
const FLUSH_INTERVAL_US_MIN: u64 = 1;
const FLUSH_INTERVAL_US_MAX: u64 = 1_000_000;
const LOG_BUFFER_BYTES_MAX: u64 = 1 << 30;
/// The NVM log ring's default size (the DRAM buffer's is [`wal::BUFFER_BYTES_DEFAULT`]).
const NVM_LOG_BUFFER_BYTES_DEFAULT: u64 = 16 << 20;

const _: () = assert!(FLUSH_INTERVAL_US_MIN > 0 && FLUSH_INTERVAL_US_MIN <= FLUSH_INTERVAL_US_MAX);
const _: () = assert!(wal::FLUSH_INTERVAL_DEFAULT.as_micros() as u64 >= FLUSH_INTERVAL_US_MIN);
const _: () = assert!(wal::FLUSH_INTERVAL_DEFAULT.as_micros() as u64 <= FLUSH_INTERVAL_US_MAX);
const _: () = assert!(wal::BUFFER_BYTES_DEFAULT as u64 <= LOG_BUFFER_BYTES_MAX);
const _: () = assert!(NVM_LOG_BUFFER_BYTES_DEFAULT <= LOG_BUFFER_BYTES_MAX);

/// The transactional mode's options (`bench ycsb`).
#[derive(Args, Debug, Clone, Default)]
pub struct TxnArgs {
    /// Run each operation as a transaction of a database with this durability: sync (a
    /// commit waits until its log records are durable), group (a commit returns at once;
    /// the log buffer is made durable every --flush-interval-us) or none (nothing is
    /// logged). Absent: the operations run straight on the B+-tree, without log or
    /// transactions. Needs ssd-bm or three-tier.
    #[arg(long)]
    pub durability: Option<Durability>,
    /// With --durability: where the log buffer lives, dram (durable after the log
    /// file's fdatasync) or nvm (a ring in a file in the NVM directory, durable when
    /// appended) [default: dram].
    #[arg(long)]
    pub log_buffer: Option<String>,
    /// With --durability: the period of the log's background flusher, in microseconds
    /// [default: 1000].
    #[arg(long)]
    pub flush_interval_us: Option<u64>,
    /// With --durability: the log buffer's size [default: 4MiB in DRAM, where an append
    /// that leaves more pending flushes; 16MiB in NVM].
    #[arg(long)]
    pub log_buffer_size: Option<ByteSize>,
    /// With --durability: what transactions see of each other: snapshot, read-committed
    /// or read-uncommitted (reads see uncommitted changes; for measuring what isolation
    /// costs) [default: snapshot]. A transaction that conflicts is rolled back and run
    /// again (counted as an abort).
    #[arg(long)]
    pub isolation: Option<Isolation>,
}

/// Runs of one operation's transaction, at most, when it keeps conflicting.
pub const TXN_RETRIES_MAX: u32 = 1_000;

/// Where the log buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogPlace {
    Dram,
    Nvm,
}

impl LogPlace {
    pub fn name(self) -> &'static str {
        match self {
            LogPlace::Dram => "dram",
            LogPlace::Nvm => "nvm",
        }
    }
}

/// The transactional mode's resolved settings.
#[derive(Clone, Debug, Serialize)]
pub struct TxnSetup {
    pub durability: Durability,
    pub isolation: Isolation,
    pub log_buffer: LogPlace,
    pub log_buffer_bytes: u64,
    pub flush_interval_us: u64,
}

impl TxnArgs {
    /// The transactional settings, `None` for the raw mode.
    ///
    /// # Errors
    /// A log option without `--durability`; an unknown log buffer place; values out of
    /// bounds.
    pub fn resolve(&self) -> Result<Option<TxnSetup>> {
        let Some(durability) = self.durability else {
            for (name, given) in [
                ("--log-buffer", self.log_buffer.is_some()),
                ("--flush-interval-us", self.flush_interval_us.is_some()),
                ("--log-buffer-size", self.log_buffer_size.is_some()),
                ("--isolation", self.isolation.is_some()),
            ] {
                if given {
                    bail!("{name} configures the log of the transactional mode: it needs --durability sync|group|none");
                }
            }
            return Ok(None);
        };
        let log_buffer = match self.log_buffer.as_deref().unwrap_or("dram") {
            "dram" => LogPlace::Dram,
            "nvm" => LogPlace::Nvm,
            other => bail!("--log-buffer {other:?}: expected dram or nvm"),
        };
        let flush_interval_us = self.flush_interval_us.unwrap_or(wal::FLUSH_INTERVAL_DEFAULT.as_micros() as u64);
        if !(FLUSH_INTERVAL_US_MIN..=FLUSH_INTERVAL_US_MAX).contains(&flush_interval_us) {
            bail!(
                "--flush-interval-us {flush_interval_us} is outside {FLUSH_INTERVAL_US_MIN}..={FLUSH_INTERVAL_US_MAX}"
            );
        }
        let log_buffer_bytes = match (self.log_buffer_size, log_buffer) {
            (Some(s), _) => s.bytes(),
            (None, LogPlace::Dram) => wal::BUFFER_BYTES_DEFAULT as u64,
            (None, LogPlace::Nvm) => NVM_LOG_BUFFER_BYTES_DEFAULT,
        };
        if log_buffer_bytes == 0 || log_buffer_bytes > LOG_BUFFER_BYTES_MAX {
            bail!("--log-buffer-size {} is outside 1..={}", ByteSize(log_buffer_bytes), ByteSize(LOG_BUFFER_BYTES_MAX));
        }
        let isolation = self.isolation.unwrap_or_default();
        Ok(Some(TxnSetup { durability, isolation, log_buffer, log_buffer_bytes, flush_interval_us }))
    }
}

/// What the transactional mode adds to a run's report.
#[derive(Clone, Debug, Serialize)]
pub struct TxnReport {
    pub durability: Durability,
    pub isolation: Isolation,
    /// Transactions rolled back and run again because they conflicted (a write
    /// conflict, a deadlock, a lock wait over the limit), in the measured run.
    pub aborts: u64,
    pub log_buffer: LogPlace,
    pub log_buffer_bytes: u64,
    pub flush_interval_us: u64,
    /// The load went through the log (it does not: it inserts into the tree directly and
    /// ends with a checkpoint).
    pub load_logged: bool,
    /// The checkpoint after the load.
    pub load_checkpoint_secs: f64,
    /// Transactions that changed something and committed, in the measured run.
    pub commits: u64,
    pub commits_per_sec: f64,
    /// Latency of `commit` alone for those transactions (`None` without any).
    pub commit_latency: Option<Latency>,
    /// The log's counters over the measured run.
    pub wal: WalStats,
    pub wal_records_per_commit: f64,
    pub wal_bytes_per_commit: f64,
}

/// Loads, warms up and runs `spec` through `db`'s transactions.
///
/// # Errors
/// No threads; the engine's errors.
pub fn run(
    db: &Db,
    spec: &YcsbSpec,
    cfg: &ycsb_driver::DriverConfig,
    txn: &TxnSetup,
    progress: ycsb_driver::ProgressFn<'_>,
) -> Result<(YcsbReport, TxnReport)> {
    if cfg.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let spec = ycsb_driver::sized(spec, cfg)?;
    let bm = db.buffer();
    // 1. Load: the table through the database, its records straight into its tree (no
    //    log), then a checkpoint.
    db.create_tree(TABLE).context("creating the table")?;
    let tree = Catalog::open_tree(bm, TABLE).context("opening the table")?;
    let bulk = |on: bool| bm.set_bulk_load(on).context("switching bulk-load mode");
    let (records, load_secs) = ycsb_driver::fill_table(&tree, &bulk, &spec, cfg, progress)?;
    let started = Instant::now();
    db.checkpoint().context("the checkpoint after the load")?;
    let load_checkpoint_secs = started.elapsed().as_secs_f64();
    let data_bytes = bm.pages_in_use() * bm.page_size() as u64;

    // 2 + 3. Warm-up and run, one transaction per operation.
    let keyspace = KeySpace::new(&spec);
    let aborts = AtomicU64::new(0);
    let provide = |stop: &std::sync::atomic::AtomicBool| bm.provide_pages(stop).context("the page provider");
    let m = ycsb_driver::run_phases(
        &spec,
        &keyspace,
        cfg,
        progress,
        &|| (bm.stats(), db.wal().stats()),
        &|t| TxnOps {
            db,
            spec: &spec,
            keyspace: &keyspace,
            key: Vec::new(),
            value: Vec::new(),
            out: vec![0u8; spec.record_length_bytes()],
            rng: value_rng(cfg.seed, t),
            aborts: &aborts,
        },
        cfg.page_provider.then_some(&provide as &ycsb_driver::ProviderFn<'_>),
    )?;

    // 4. Summaries.
    let tiers = m.after.0.since(&m.before.0);
    let wal = m.after.1.since(&m.before.1);
    let commit_latency = ycsb_driver::commit_latency(&m.results);
    let commits = commit_latency.as_ref().map_or(0, |l| l.ops);
    let per_commit = |v: u64| if commits == 0 { 0.0 } else { v as f64 / commits as f64 };
    let txn_report = TxnReport {
        durability: txn.durability,
        isolation: txn.isolation,
        aborts: aborts.load(Ordering::Relaxed),
        log_buffer: txn.log_buffer,
        log_buffer_bytes: txn.log_buffer_bytes,
        flush_interval_us: txn.flush_interval_us,
        load_logged: false,
        load_checkpoint_secs,
        commits,
        commits_per_sec: commits as f64 / m.run_secs.max(1e-9),
        commit_latency,
        wal_records_per_commit: per_commit(wal.records),
        wal_bytes_per_commit: per_commit(wal.bytes),
        wal,
    };
    let report = ycsb_driver::summary(&spec, cfg, (records, load_secs, data_bytes), bm.page_size(), &m, tiers);
    Ok((report, txn_report))
}

/// One worker's operations, each a transaction of `db`.
struct TxnOps<'a, R: rand::Rng> {
    db: &'a Db,
    spec: &'a YcsbSpec,
    keyspace: &'a KeySpace,
    key: Vec<u8>,
    value: Vec<u8>,
    out: Vec<u8>,
    rng: R,
    /// Transactions run again after a conflict (all workers).
    aborts: &'a AtomicU64,
}

impl<R: rand::Rng> Executor for TxnOps<'_, R> {
    fn execute(&mut self, op: Op) -> Result<Done> {
        let mut runs = 0;
        loop {
            runs += 1;
            match self.run_once(op) {
                Err(e)
                    if runs < TXN_RETRIES_MAX
                        && e.downcast_ref::<tierdb::Error>().is_some_and(|e| e.is_retryable()) =>
                {
                    self.aborts.fetch_add(1, Ordering::Relaxed);
                }
                r => return r,
            }
        }
    }
}

impl<R: rand::Rng> TxnOps<'_, R> {
    /// `op` as one transaction (dropped without commit on an error: rolled back).
    fn run_once(&mut self, op: Op) -> Result<Done> {
        let TxnOps { db, spec, keyspace, key, value, out, rng, .. } = self;
        let spec: &YcsbSpec = spec;
        let read_range = |field: Option<u32>| match field {
            Some(f) => field_range(spec, f),
            None => 0..spec.record_length_bytes(),
        };
        let mut t = db.begin();
        let mut wrote = false;
        let found = match op {
            Op::Read { key: n, field } => {
                build_key(spec, n, key);
                t.get_part(TABLE, key, read_range(field), |v| out[..v.len()].copy_from_slice(v))?.is_some()
            }
            Op::Update { key: n, field } => {
                build_key(spec, n, key);
                wrote = update(&mut t, spec, key, field, value, rng)?;
                wrote
            }
            Op::ReadModifyWrite { key: n, field } => {
                build_key(spec, n, key);
                let r = read_range(if spec.read_all_fields() { None } else { field });
                let found = t.get_part(TABLE, key, r, |v| out[..v.len()].copy_from_slice(v))?.is_some();
                wrote = found && update(&mut t, spec, key, field, value, rng)?;
                wrote
            }
            Op::Insert { key: n } => {
                build_key(spec, n, key);
                fill_record(spec, rng, value);
                let r = t.put(TABLE, key, value);
                keyspace.acknowledge_insert(n);
                r?;
                wrote = true;
                true
            }
            Op::Scan { start, len, field } => {
                build_key(spec, start, key);
                let r = read_range(field);
                let mut seen = 0u32;
                t.scan(TABLE, key, |_, v| {
                    let end = r.end.min(v.len());
                    let start = r.start.min(end);
                    out[..end - start].copy_from_slice(&v[start..end]);
                    seen += 1;
                    seen < len
                })?;
                seen > 0
            }
        };
        let t0 = clock::ticks();
        t.commit()?;
        let commit_ticks = wrote.then(|| clock::ticks().saturating_sub(t0));
        Ok(Done { found, commit_ticks })
    }
}

/// Writes one field in place, or a whole new record, in transaction `t`; false if the
/// key is absent.
fn update(
    t: &mut Txn<'_>,
    spec: &YcsbSpec,
    key: &[u8],
    field: Option<u32>,
    value: &mut Vec<u8>,
    rng: &mut impl rand::Rng,
) -> Result<bool> {
    Ok(match field {
        Some(f) => t.update_in_place(TABLE, key, ycsb_driver::new_field(spec, f, value, rng), value)?,
        None => {
            fill_record(spec, rng, value);
            t.put(TABLE, key, value)?;
            true
        }
    })
}
