//! The crashtest's database side, apart from the processes `tierdb crashtest` starts
//! and kills: the database under test ([`DbOptions`] → configuration), the writer a
//! child runs until killed ([`child`]), and the checks after each kill
//! ([`check_point`]): the surviving transactions are exactly the committed ones, all of
//! a transaction's changes or none, no rolled-back key visible, every page and index
//! invariant, and on the buffered stores no page lost.
//!
//! The workload: transaction `i` puts the marker `m<i>` and sets `c<i mod 97>` and
//! `d<i mod 89>` to a value naming `i`; every tenth one writes `r<i>` and rolls back
//! instead. After each commit returns, the writer prints `ack <i>` on standard output.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use rand::prelude::*;
use tierdb::ByteSize;
use tierdb::buffer::{BufferManager, Techniques};
use tierdb::db::{Db, DbConfig, DbStore};
use tierdb::device::NvmConfig;
use tierdb::sources::{DirectConfig, NvmDirect};
use tierdb::wal::{Durability, LogBuffer};

/// Bounds of `--dram-frames`: a B+-tree descent holds a few frames at once.
pub const DRAM_FRAMES_MIN: u64 = 8;
/// See [`DRAM_FRAMES_MIN`].
pub const DRAM_FRAMES_MAX: u64 = 1 << 20;
/// The table the writer writes.
const TABLE: &str = "crash";

/// The database under test: the options the parent passes on to each child.
#[derive(Args, Debug, Clone)]
pub struct DbOptions {
    /// ssd-bm (DRAM + SSD), three-tier (DRAM + NVM + SSD, all techniques), nvsql
    /// (DRAM beside a durable NVM write cache, over SSD) or nvm-direct (all pages in
    /// NVM, changed in place).
    #[arg(long, default_value = "three-tier")]
    pub arch: String,
    /// Where the log buffer lives: dram or nvm.
    #[arg(long, default_value = "dram")]
    pub log_buffer: String,
    /// The buffer manager's policy instead of the architecture's (e.g.
    /// `nvsql:admit=checkpoint,pct=50` or `nvsql:keep=unbounded`).
    #[arg(long)]
    pub policy: Option<String>,
    /// Redo scans the whole retained log, as before it started at the redo point (for
    /// comparisons of recovery).
    #[arg(long)]
    pub redo_from_retained: bool,
    /// DRAM frames of 4 KiB instead of the architecture's (64; nvsql 16): fewer make
    /// more evictions, so more pages reach SSD between kills (and flush records).
    #[arg(long)]
    pub dram_frames: Option<u64>,
    /// Run the buffer manager's page provider beside the writer (not nvm-direct): the
    /// kills then also land while it writes victims down.
    #[arg(long)]
    pub page_provider: bool,
}

impl DbOptions {
    /// The options as the child's command line repeats them.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--arch".into(), self.arch.clone(), "--log-buffer".into(), self.log_buffer.clone()];
        if let Some(p) = &self.policy {
            a.extend(["--policy".into(), p.clone()]);
        }
        if self.redo_from_retained {
            a.push("--redo-from-retained".into());
        }
        if let Some(n) = self.dram_frames {
            a.extend(["--dram-frames".into(), n.to_string()]);
        }
        if self.page_provider {
            a.push("--page-provider".into());
        }
        a
    }
}

/// Checks the options' names and sizes, before anything runs.
///
/// # Errors
/// An unknown architecture or log buffer, a policy the architecture cannot take, a
/// frame count out of bounds.
pub fn check_options(options: &DbOptions) -> Result<()> {
    config(Path::new("."), options).map(drop)
}

/// The database's configuration, and the NVM region of `nvm-direct`.
fn config(dir: &Path, db: &DbOptions) -> Result<(DbConfig, Option<DirectConfig>)> {
    let (arch, log_buffer, policy) = (db.arch.as_str(), db.log_buffer.as_str(), db.policy.as_deref());
    let (from_retained, dram_frames) = (db.redo_from_retained, db.dram_frames);
    let mut c = DbConfig::new(dir.join("db"));
    c.buffer.page_size = 4096;
    c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(64 * 4096));
    c.durability = Durability::Sync;
    let mut direct = None;
    match arch {
        "ssd-bm" => {}
        "three-tier" => {
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(256 * 4160 + 16384)));
            c.buffer.techniques = Techniques::ALL;
            c.buffer.policy = "hymem".into();
        }
        "nvsql" => {
            // Small pools (16 DRAM frames beside 64 NVM frames), so that pages are
            // admitted, updated in place and evicted to SSD between kills.
            c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(16 * 4096));
            c.buffer.nvm = Some(NvmConfig::new(dir.join("pool.nvm"), ByteSize(64 * 4160 + 16384)));
            c.buffer.policy = "nvsql".into();
            // The paper's double-write buffer in NVM, beside the pool.
            c.buffer.double_write = tierdb::device::DoubleWriteMode::Nvm;
            let mut ssd = tierdb::device::SsdConfig::new(dir.join("data.db"));
            ssd.nvm_double_write.path = dir.join("pool.nvm.dwa");
            c.buffer.ssd = Some(ssd);
        }
        "nvm-direct" => {
            direct = Some(DirectConfig::new(NvmConfig::new(dir.join("data.nvm"), ByteSize(2048 * 4096)), 4096));
        }
        other => {
            bail!(
                "--arch {other:?}: crashtest runs ssd-bm, three-tier, nvsql or nvm-direct (main-memory and basic-nvm-bm keep no database to recover)"
            )
        }
    }
    match log_buffer {
        "dram" => {}
        "nvm" => c.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(1 << 20))),
        other => bail!("--log-buffer {other:?}: expected dram or nvm"),
    }
    if let Some(p) = policy {
        ensure!(direct.is_none() && arch != "ssd-bm", "--policy {p:?}: {arch} has no NVM policy to choose");
        c.buffer.policy = p.to_string();
    }
    c.redo_from_retained = from_retained;
    ensure!(!(db.page_provider && direct.is_some()), "--page-provider: {arch} has no buffer manager");
    if let Some(n) = dram_frames {
        ensure!(
            (DRAM_FRAMES_MIN..=DRAM_FRAMES_MAX).contains(&n),
            "--dram-frames {n} is outside {DRAM_FRAMES_MIN}..={DRAM_FRAMES_MAX}"
        );
        c.buffer.dram = tierdb::device::DramConfig::new(ByteSize(n * 4096));
    }
    Ok((c, direct))
}

/// An open database of either kind of store.
enum Opened {
    Buffer(Box<Db<BufferManager>>),
    Direct(Box<Db<NvmDirect>>),
}

fn open(dir: &Path, db: &DbOptions) -> Result<Opened> {
    Ok(match config(dir, db)? {
        (c, None) => Opened::Buffer(Box::new(Db::open(&c)?)),
        (c, Some(d)) => Opened::Direct(Box::new(Db::open_nvm_direct(&c, &d)?)),
    })
}

/// Runs `$body` with `$db` bound to the database, whatever its store.
macro_rules! with_db {
    ($opened:expr, $db:ident => $body:expr) => {
        match $opened {
            Opened::Buffer($db) => $body,
            Opened::Direct($db) => $body,
        }
    };
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("txn {i:012} ").into_bytes();
    v.resize(60 + (i as usize * 31) % 300, b'.');
    v
}

fn txn_of(v: &[u8]) -> Option<u64> {
    std::str::from_utf8(v.get(4..16)?).ok()?.parse().ok()
}

fn rolls_back(i: u64) -> bool {
    i % 10 == 9
}

/// The child: opens the database in `dir` (recovering it) and runs transactions until
/// killed, the workload drawn from `seed`.
///
/// # Errors
/// The database's errors; `--page-provider` on `nvm-direct`.
pub fn child(dir: &Path, options: &DbOptions, seed: u64) -> Result<()> {
    let opened = open(dir, options).context("opening the database")?;
    match &opened {
        Opened::Buffer(db) if options.page_provider => {
            let stop = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let provider = s.spawn(|| db.store().provide_pages(&stop));
                let written = write_until_killed(db, seed);
                stop.store(true, std::sync::atomic::Ordering::Release);
                let provided = provider.join().map_err(|_| anyhow::anyhow!("the page provider panicked"))?;
                written.and(provided.map(drop).context("the page provider"))
            })
        }
        Opened::Direct(_) if options.page_provider => bail!("--page-provider: nvm-direct has no buffer manager"),
        _ => with_db!(&opened, db => write_until_killed(db, seed)),
    }
}

fn write_until_killed<S: DbStore>(db: &Db<S>, seed: u64) -> Result<()> {
    if db.tree_names().is_empty() {
        db.create_tree(TABLE)?;
    }
    let mut next = surviving(db)?.map_or(0, |(_, d)| d + 1);
    let mut rng = SmallRng::seed_from_u64(seed);
    let out = std::io::stdout();
    loop {
        let i = next;
        next += 1;
        let mut t = db.begin();
        if rolls_back(i) {
            t.put(TABLE, format!("r{i}").as_bytes(), &value(i))?;
            t.put(TABLE, format!("c{}", i % 97).as_bytes(), &value(i))?;
            t.rollback()?;
            continue;
        }
        t.put(TABLE, format!("m{i:012}").as_bytes(), &value(i))?;
        t.put(TABLE, format!("c{}", i % 97).as_bytes(), &value(i))?;
        t.put(TABLE, format!("d{}", i % 89).as_bytes(), &value(i))?;
        t.commit()?;
        {
            use std::io::Write;
            let mut o = out.lock();
            writeln!(o, "ack {i}")?;
            o.flush()?;
        }
        if rng.random_ratio(1, 40) {
            db.checkpoint()?;
        }
    }
}

/// The first and last surviving markers, if any.
fn surviving<S: DbStore>(db: &Db<S>) -> Result<Option<(u64, u64)>> {
    let mut first = None;
    let mut last = None;
    db.scan(TABLE, b"m", |k, _| {
        if !k.starts_with(b"m") {
            return false;
        }
        let i: u64 = std::str::from_utf8(&k[1..]).ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        first.get_or_insert(i);
        last = Some(i);
        true
    })?;
    Ok(first.zip(last))
}

/// Checks the database after a kill; returns the last surviving transaction.
fn verify<S: DbStore>(db: &Db<S>, last_ack: Option<u64>, check: impl FnOnce()) -> Result<Option<u64>> {
    let Some((start, d)) = surviving(db)? else {
        ensure!(last_ack.is_none(), "commit {} was acknowledged, but no transaction survived", last_ack.unwrap_or(0));
        return Ok(None);
    };
    if let Some(a) = last_ack {
        ensure!(d >= a, "commit {a} was acknowledged, but the last surviving transaction is {d}");
    }
    let mut c: std::collections::HashMap<u64, u64> = Default::default();
    let mut dd: std::collections::HashMap<u64, u64> = Default::default();
    let mut expect = start;
    let mut problems = Vec::new();
    db.scan(TABLE, b"", |k, v| {
        let key = String::from_utf8_lossy(k).into_owned();
        let txn = txn_of(v);
        match key.as_bytes()[0] {
            b'm' => {
                let i: u64 = key[1..].parse().unwrap_or(u64::MAX);
                while rolls_back(expect) {
                    expect += 1;
                }
                if i != expect {
                    problems.push(format!("marker m{i} where m{expect} was expected (a gap or an extra)"));
                }
                if txn != Some(i) {
                    problems.push(format!("marker {key} holds {:?}", String::from_utf8_lossy(v)));
                }
                expect = i + 1;
            }
            b'c' => {
                c.insert(key[1..].parse().unwrap_or(u64::MAX), txn.unwrap_or(u64::MAX));
            }
            b'd' => {
                dd.insert(key[1..].parse().unwrap_or(u64::MAX), txn.unwrap_or(u64::MAX));
            }
            b'r' => problems.push(format!("{key} of a rolled-back transaction is visible")),
            _ => problems.push(format!("unexpected key {key}")),
        }
        true
    })?;
    // Each c/d key holds the last surviving transaction (<= d) that set it, if it is
    // one of this database's (transactions before `start` belong to an earlier run and
    // are gone from the markers only if never written: not the case here).
    for (j, got) in c {
        let want = (start..=d).rev().find(|i| i % 97 == j && !rolls_back(*i));
        if want.is_some_and(|w| w != got) {
            problems.push(format!("c{j} holds transaction {got}, expected {want:?}"));
        }
    }
    for (j, got) in dd {
        let want = (start..=d).rev().find(|i| i % 89 == j && !rolls_back(*i));
        if want.is_some_and(|w| w != got) {
            problems.push(format!("d{j} holds transaction {got}, expected {want:?}"));
        }
    }
    if !problems.is_empty() {
        bail!("{} problem(s), first: {}", problems.len(), problems[0]);
    }
    check();
    Ok(Some(d))
}

/// Every node's invariants (order, fences, sizes) in the table's tree; returns its
/// pages.
fn tree_invariants<S: DbStore>(db: &Db<S>) -> Result<u64> {
    let tree = tierdb::Catalog::open_tree(db.store(), TABLE)?;
    Ok(tree.check_invariants().context("the tree's invariants")?.pages())
}

/// What one kill point's recovery did and found.
pub struct PointCheck {
    /// The recovery's time.
    pub recovery_ms: f64,
    /// Unfinished transactions rolled back.
    pub losers: usize,
    /// Pages found again in NVM.
    pub nvm_pages_reused: usize,
    /// NVM frames not used because the kill caught them in an in-place write.
    pub nvm_frames_cleared: usize,
    /// NVM frames older than their page's SSD copy, dropped.
    pub nvm_frames_stale: usize,
    /// Log records redo read.
    pub records_read: u64,
    /// Changes redo applied.
    pub changes_redone: u64,
    /// Changes redo skipped (their page held them).
    pub changes_skipped: u64,
    /// Of those, skipped without reading the page (a flush record or an NVM frame's
    /// page LSN).
    pub changes_skipped_unread: u64,
    /// The kill came inside the first open, before the database was created: its files
    /// were discarded and it was created afresh.
    pub creation_discarded: bool,
    /// The last surviving transaction (the one before the kill's if the table is
    /// empty).
    pub last_surviving: Option<u64>,
}

/// After the kill of point `point` (`kill_after` into the child's run): reopens the
/// database in `dir`, recovering it, and checks it against the commits acknowledged
/// (`ack`: the last, `acked`: how many over the campaign; `last_surviving`: the last
/// surviving transaction before this point). The database is dropped, not closed, so
/// the next child recovers again.
///
/// # Errors
/// The reopening's errors, and every check that fails, naming the point.
#[allow(clippy::too_many_arguments)]
pub fn check_point(
    dir: &Path,
    options: &DbOptions,
    point: u32,
    kill_after: Duration,
    ack: Option<u64>,
    acked: u64,
    last_surviving: Option<u64>,
) -> Result<PointCheck> {
    let opened = open(dir, options).with_context(|| format!("point {point}: reopening after the kill"))?;
    let context =
        || format!("point {point} (killed after {} ms, last acknowledged commit {ack:?})", kill_after.as_millis());
    let mut check = with_db!(&opened, db => {
        let r = db.recovery();
        PointCheck {
            recovery_ms: r.secs * 1e3,
            losers: r.losers.len(),
            nvm_pages_reused: r.nvm_pages_reused,
            nvm_frames_cleared: r.nvm_frames_cleared,
            nvm_frames_stale: r.nvm_frames_stale,
            records_read: r.records_read,
            changes_redone: r.changes_redone,
            changes_skipped: r.changes_skipped,
            changes_skipped_unread: r.changes_skipped_unread + r.changes_skipped_in_nvm,
            creation_discarded: false,
            last_surviving,
        }
    });
    // A kill inside the first open, before it created the database: the files it
    // left are discarded and the database is made afresh, which is right only if
    // no commit was ever acknowledged.
    let uncreated = with_db!(&opened, db => db.recovery().unfinished_creation.clone());
    if !uncreated.is_empty() {
        check.creation_discarded = true;
        ensure!(
            ack.is_none() && acked == 0,
            "point {point}: the database was discarded as never created ({}), but {acked} commit(s) were acknowledged",
            uncreated.join(", ")
        );
    }
    let empty = with_db!(&opened, db => db.tree_names().is_empty());
    if empty {
        ensure!(ack.is_none(), "point {point}: the table is gone after acknowledged commits");
    } else {
        check.last_surviving = match &opened {
            Opened::Buffer(db) => verify(db, ack, || db.buffer().check_invariants()),
            Opened::Direct(db) => verify(db, ack, || ()),
        }
        .with_context(context)?;
        let tree_pages = with_db!(&opened, db => tree_invariants(db)).with_context(context)?;
        if let Opened::Buffer(db) = &opened {
            // No page lost, none both free and in the tree: the catalog and the
            // tree's nodes are exactly the pages not on the free list.
            let in_use = db.buffer().pages_in_use();
            ensure!(
                in_use == 1 + tree_pages,
                "{}: {in_use} pages allocated and not free, but the catalog and the tree hold {}",
                context(),
                1 + tree_pages
            );
        }
    }
    drop(opened); // not closed: the next child recovers again
    Ok(check)
}
