//! `tierdb crashtest`: kills a writer with SIGKILL at random points and checks that
//! recovery keeps exactly the committed transactions.
//!
//! One database is used for all points. At each point a child process (`tierdb
//! crashtest-child`, hidden) opens it (recovering from the previous kill) and runs
//! transactions numbered on from the last one that survived: transaction `i` puts the
//! marker `m<i>` and sets `c<i mod 97>` and `d<i mod 89>` to a value naming `i`; every
//! tenth one writes `r<i>` and rolls back instead. After each commit returns, the child
//! prints `ack <i>`. The parent kills it after a random delay, reopens the database and
//! checks:
//!
//! - the surviving markers are exactly the transactions `start..=D` that committed
//!   (no gap, none beyond `D`), and `D` is at least the last acknowledged commit;
//! - every `c` and `d` key holds the value of the last surviving transaction that set it
//!   (all of a transaction's changes, or none);
//! - no rolled-back key is visible; every page and index invariant holds;
//! - on the buffered stores, no page is lost: the pages allocated and not on the free
//!   list are exactly the catalog and the tree's nodes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use rand::prelude::*;
use serde::Serialize;
use tierdb::ByteSize;
use tierdb::buffer::{BufferManager, Techniques};
use tierdb::db::{Db, DbConfig, DbStore};
use tierdb::device::NvmConfig;
use tierdb::sources::DirectConfig;
use tierdb::sources::NvmDirect;
use tierdb::wal::{Durability, LogBuffer};
use tierdb_bench::harness::{Middle, median};

const POINTS_MAX: u32 = 100_000;
const KILL_AFTER_MS_MAX: u64 = 60_000;
/// Bounds of `--dram-frames`: a B+-tree descent holds a few frames at once.
const DRAM_FRAMES_MIN: u64 = 8;
const DRAM_FRAMES_MAX: u64 = 1 << 20;
const TABLE: &str = "crash";

/// The database under test: the options the parent passes on to each child.
#[derive(Args, Debug, Clone)]
pub struct DbOptions {
    /// ssd-bm (DRAM + SSD), three-tier (DRAM + NVM + SSD, all techniques), nvsql
    /// (DRAM beside a durable NVM write cache, over SSD) or nvm-direct (all pages in
    /// NVM, changed in place).
    #[arg(long, default_value = "three-tier")]
    arch: String,
    /// Where the log buffer lives: dram or nvm.
    #[arg(long, default_value = "dram")]
    log_buffer: String,
    /// The buffer manager's policy instead of the architecture's (e.g.
    /// `nvsql:admit=checkpoint,pct=50` or `nvsql:keep=unbounded`).
    #[arg(long)]
    policy: Option<String>,
    /// Redo scans the whole retained log, as before it started at the redo point (for
    /// comparisons of recovery).
    #[arg(long)]
    redo_from_retained: bool,
    /// DRAM frames of 4 KiB instead of the architecture's (64; nvsql 16): fewer make
    /// more evictions, so more pages reach SSD between kills (and flush records).
    #[arg(long)]
    dram_frames: Option<u64>,
    /// Run the buffer manager's page provider beside the writer (not nvm-direct): the
    /// kills then also land while it writes victims down.
    #[arg(long)]
    page_provider: bool,
}

impl DbOptions {
    /// The options as the child's command line repeats them.
    fn to_args(&self) -> Vec<String> {
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

#[derive(Args, Debug)]
pub struct CrashtestArgs {
    #[command(flatten)]
    db: DbOptions,
    /// Kill points.
    #[arg(long, default_value_t = 50)]
    points: u32,
    /// Seed of the kill delays and the children's workloads (default: drawn at random
    /// and printed). Kill timing is real time, so a failing seed may need a few runs to
    /// fail again.
    #[arg(long)]
    seed: Option<u64>,
    /// Longest delay before a kill, in milliseconds (each point draws one up to it).
    #[arg(long, default_value_t = 80)]
    kill_after_ms: u64,
    /// Directory for the database (default: a temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct CrashChildArgs {
    #[arg(long)]
    dir: PathBuf,
    #[command(flatten)]
    db: DbOptions,
    #[arg(long)]
    seed: u64,
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

/// The child: transactions until killed.
pub fn child(args: CrashChildArgs) -> Result<()> {
    let opened = open(&args.dir, &args.db).context("opening the database")?;
    match &opened {
        Opened::Buffer(db) if args.db.page_provider => {
            let stop = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let provider = s.spawn(|| db.store().provide_pages(&stop));
                let written = write_until_killed(db, args.seed);
                stop.store(true, std::sync::atomic::Ordering::Release);
                let provided = provider.join().map_err(|_| anyhow::anyhow!("the page provider panicked"))?;
                written.and(provided.map(drop).context("the page provider"))
            })
        }
        Opened::Direct(_) if args.db.page_provider => bail!("--page-provider: nvm-direct has no buffer manager"),
        _ => with_db!(&opened, db => write_until_killed(db, args.seed)),
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

#[derive(Serialize)]
struct Report {
    command: &'static str,
    arch: String,
    log_buffer: String,
    /// The policy given with `--policy` (else the architecture's).
    policy: Option<String>,
    redo_from_retained: bool,
    dram_frames: Option<u64>,
    seed: u64,
    points: u32,
    acknowledged_commits: u64,
    surviving_transactions: u64,
    losers_rolled_back: usize,
    /// Kills inside the first open, before the database was created: its files were
    /// discarded and it was created afresh on reopening.
    creations_discarded: u32,
    /// Summed over the recoveries: pages found again in NVM, and NVM frames not used
    /// because a kill caught them in an in-place write (rebuilt by redo).
    nvm_pages_reused: usize,
    nvm_frames_cleared: usize,
    /// Summed over the recoveries: NVM frames older than their page's SSD copy (a kill
    /// between the SSD write and the NVM refresh), dropped.
    nvm_frames_stale: usize,
    /// Summed over the recoveries: log records redo read, changes it applied and
    /// changes it skipped (their page held them).
    redo_records_read: u64,
    redo_changes_redone: u64,
    redo_changes_skipped: u64,
    /// Of those, skipped without reading the page (a flush record: its SSD copy holds
    /// them; or its NVM frame's page LSN).
    redo_changes_skipped_unread: u64,
    max_recovery_ms: f64,
    median_recovery_ms: f64,
    secs: f64,
}

pub fn run(args: CrashtestArgs) -> Result<()> {
    ensure!(args.points > 0 && args.points <= POINTS_MAX, "--points {} is outside 1..={POINTS_MAX}", args.points);
    ensure!(
        (1..=KILL_AFTER_MS_MAX).contains(&args.kill_after_ms),
        "--kill-after-ms {} is outside 1..={KILL_AFTER_MS_MAX}",
        args.kill_after_ms
    );
    config(Path::new("."), &args.db)?; // checks the names and the sizes
    let seed = args.seed.unwrap_or_else(rand::random);
    let report =
        campaign(&args, seed).with_context(|| format!("crashtest failed; re-run it with: {}", rerun(&args, seed)))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "crashtest {}{} (log buffer {}): {} kill points, seed {}: every acknowledged commit survived ({} acknowledged, {} transactions in the database), {} unfinished transaction(s) rolled back, {} kill(s) inside creation (discarded, created afresh); NVM pages reused {}, NVM frames cleared mid-write {}, stale NVM frames dropped {}; redo read {} records, redid {} changes, skipped {} ({} unread); recovery median {:.1} ms, max {:.1} ms; {:.1} s",
            report.arch,
            report.policy.as_ref().map(|p| format!(" --policy {p}")).unwrap_or_default(),
            report.log_buffer,
            report.points,
            report.seed,
            report.acknowledged_commits,
            report.surviving_transactions,
            report.losers_rolled_back,
            report.creations_discarded,
            report.nvm_pages_reused,
            report.nvm_frames_cleared,
            report.nvm_frames_stale,
            report.redo_records_read,
            report.redo_changes_redone,
            report.redo_changes_skipped,
            report.redo_changes_skipped_unread,
            report.median_recovery_ms,
            report.max_recovery_ms,
            report.secs
        );
    }
    Ok(())
}

/// The command line that runs the same campaign again.
fn rerun(args: &CrashtestArgs, seed: u64) -> String {
    let mut a = vec!["tierdb".to_string(), "crashtest".into()];
    a.extend(args.db.to_args());
    a.extend([
        "--points".into(),
        args.points.to_string(),
        "--kill-after-ms".into(),
        args.kill_after_ms.to_string(),
        "--seed".into(),
        seed.to_string(),
    ]);
    a.join(" ")
}

/// The kill points of one campaign; an error names the point that failed.
fn campaign(args: &CrashtestArgs, seed: u64) -> Result<Report> {
    let tmp = tempfile::Builder::new().prefix("tierdb-crashtest-").tempdir().context("temporary directory")?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe().context("locating the tierdb binary")?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let started = Instant::now();
    let (mut acked, mut losers, mut recoveries) = (0u64, 0usize, Vec::new());
    let mut creations_discarded = 0u32;
    let (mut nvm_pages_reused, mut nvm_frames_cleared, mut nvm_frames_stale) = (0usize, 0usize, 0usize);
    let mut redo = (0u64, 0u64, 0u64, 0u64);
    let mut last_surviving = None;
    for point in 0..args.points {
        let kill_after = Duration::from_millis(rng.random_range(1..=args.kill_after_ms));
        let mut child = Command::new(&exe)
            .arg("crashtest-child")
            .args(args.db.to_args())
            .arg("--dir")
            .arg(&dir)
            .args(["--seed", &rng.random::<u64>().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting the child")?;
        let stdout = child.stdout.take().expect("piped");
        let last_ack = Arc::new(AtomicU64::new(u64::MAX));
        let acks = Arc::new(AtomicU64::new(0));
        let reader = {
            let (last_ack, acks) = (last_ack.clone(), acks.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                        last_ack.store(n, Ordering::SeqCst);
                        acks.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        };
        let deadline = Instant::now() + kill_after;
        let exited = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        if let Some(status) = exited {
            let mut err = String::new();
            use std::io::Read;
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            bail!("point {point}: the child exited by itself ({status}) before the kill: {}", err.trim());
        }
        child.kill().context("killing the child")?; // SIGKILL
        child.wait()?;
        reader.join().map_err(|_| anyhow::anyhow!("the reader thread panicked"))?;
        acked += acks.load(Ordering::SeqCst);
        let ack = match last_ack.load(Ordering::SeqCst) {
            u64::MAX => last_surviving,
            n => Some(n),
        };
        if args.dir.is_some() {
            // Keep the state as the kill left it, for diagnosis of a failing point.
            let keep = dir.with_extension("at-kill");
            let _ = std::fs::remove_dir_all(&keep);
            copy_dir(&dir, &keep)?;
        }
        let opened = open(&dir, &args.db).with_context(|| format!("point {point}: reopening after the kill"))?;
        let context =
            || format!("point {point} (killed after {} ms, last acknowledged commit {ack:?})", kill_after.as_millis());
        let (secs, lost) = with_db!(&opened, db => (db.recovery().secs, db.recovery().losers.len()));
        let (reused, cleared) =
            with_db!(&opened, db => (db.recovery().nvm_pages_reused, db.recovery().nvm_frames_cleared));
        nvm_pages_reused += reused;
        nvm_frames_cleared += cleared;
        nvm_frames_stale += with_db!(&opened, db => db.recovery().nvm_frames_stale);
        let (read, redone, skipped, unread) = with_db!(&opened, db => {
            let r = db.recovery();
            (r.records_read, r.changes_redone, r.changes_skipped, r.changes_skipped_unread + r.changes_skipped_in_nvm)
        });
        redo.0 += read;
        redo.1 += redone;
        redo.2 += skipped;
        redo.3 += unread;
        recoveries.push(secs * 1e3);
        losers += lost;
        // A kill inside the first open, before it created the database: the files it
        // left are discarded and the database is made afresh, which is right only if
        // no commit was ever acknowledged.
        let uncreated = with_db!(&opened, db => db.recovery().unfinished_creation.clone());
        if !uncreated.is_empty() {
            creations_discarded += 1;
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
            last_surviving = match &opened {
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
    }
    recoveries.sort_by(f64::total_cmp);
    let report = Report {
        command: "crashtest",
        arch: args.db.arch.clone(),
        log_buffer: args.db.log_buffer.clone(),
        policy: args.db.policy.clone(),
        redo_from_retained: args.db.redo_from_retained,
        dram_frames: args.db.dram_frames,
        seed,
        points: args.points,
        acknowledged_commits: acked,
        surviving_transactions: last_surviving.map_or(0, |d| d + 1),
        losers_rolled_back: losers,
        creations_discarded,
        nvm_pages_reused,
        nvm_frames_cleared,
        nvm_frames_stale,
        redo_records_read: redo.0,
        redo_changes_redone: redo.1,
        redo_changes_skipped: redo.2,
        redo_changes_skipped_unread: redo.3,
        max_recovery_ms: recoveries.last().copied().unwrap_or(0.0),
        median_recovery_ms: median(recoveries.iter().copied(), Middle::Upper).unwrap_or(0.0),
        secs: started.elapsed().as_secs_f64(),
    };
    Ok(report)
}

/// Every node's invariants (order, fences, sizes) in the table's tree; returns its
/// pages.
fn tree_invariants<S: DbStore>(db: &Db<S>) -> Result<u64> {
    let tree = tierdb::Catalog::open_tree(db.store(), TABLE)?;
    Ok(tree.check_invariants().context("the tree's invariants")?.pages())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct WalDumpArgs {
    /// The log directory (a database's `wal/`).
    #[arg(long)]
    dir: PathBuf,
    /// Only records of this transaction.
    #[arg(long)]
    txn: Option<u64>,
    /// The NVM log buffer file, if the log has one (its records are read too).
    #[arg(long)]
    ring: Option<PathBuf>,
}

/// Prints the log's records, one a line (a diagnostic).
pub fn wal_dump(args: WalDumpArgs) -> Result<()> {
    let mut cfg = tierdb::wal::WalConfig::new(&args.dir);
    cfg.flush_interval = Duration::from_secs(3600);
    if let Some(r) = &args.ring {
        let size = std::fs::metadata(r).with_context(|| format!("{}", r.display()))?.len();
        cfg.buffer = LogBuffer::Nvm(NvmConfig::new(r, ByteSize(size)));
    }
    let wal = tierdb::wal::Wal::open(&cfg).context("opening the log")?;
    println!("log {}..{} ({:?})", wal.start_lsn(), wal.next_lsn(), wal.recovered().tail);
    for r in wal.records_from(wal.start_lsn()) {
        let r = r?;
        if args.txn.is_some_and(|t| t != r.head.txn.get()) {
            continue;
        }
        let what = match r.head.kind {
            tierdb::wal::Kind::Update | tierdb::wal::Kind::Compensation => {
                let klen = u16::from_le_bytes([r.payload[9], r.payload[10]]) as usize;
                String::from_utf8_lossy(&r.payload[11..11 + klen]).into_owned()
            }
            _ => String::new(),
        };
        println!(
            "{:>10} {:?} txn {:#x} prev {} page {} undo-next {} {}",
            r.lsn, r.head.kind, r.head.txn, r.head.prev, r.head.page, r.head.undo_next, what
        );
    }
    Ok(())
}
