//! `tierdb db`: database configuration files (`docs/config.md`) and a small admin tool
//! over the database one describes.
//!
//! `db config` writes a file from the architecture flags `bench` takes; `db info`,
//! `get`, `put`, `delete`, `scan` and `checkpoint` each open the database the file
//! describes (recovering it if it was not closed), do one thing and close it. Keys and
//! values are UTF-8 arguments; output is printed lossily as UTF-8.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use tierdb::ByteSize;
use tierdb::arch::Architecture;
use tierdb::db::{Db, DbConfig, DbStore, Isolation};
use tierdb::device::NvmConfig;
use tierdb::wal::{Durability, LogBuffer};
use tierdb_bench::harness::EngineArgs;

/// Most records `db scan --limit` prints.
pub const SCAN_LIMIT_MAX: usize = 1_000_000;

/// Size of the NVM log ring `db config --log-buffer nvm` writes.
const LOG_RING_BYTES: u64 = 16 << 20;

#[derive(Subcommand)]
pub enum DbCommand {
    /// Writes a database configuration file (docs/config.md) from the architecture
    /// flags `bench` takes (--arch, --dram, --nvm, --mode, profiles, policy,
    /// techniques, ...; the workload flags among them are ignored; --mode is spin unless
    /// given, as for bench: give --mode off for a database on real devices) and the
    /// database's own (--dir, --durability, --isolation, --log-buffer).
    Config(Box<ConfigArgs>),
    /// Opens the database, prints its architecture, trees, durability and what
    /// recovery did, and closes it.
    Info(OpenArgs),
    /// Prints the value of KEY in --tree; exits 1 if there is none.
    Get(KeyArgs),
    /// Sets KEY to VALUE in --tree (made if missing) in one committed transaction.
    Put(PutArgs),
    /// Deletes KEY from --tree; exits 1 if there is none.
    Delete(KeyArgs),
    /// Prints up to --limit records of --tree from --start on, one `key<TAB>value` a line.
    Scan(ScanArgs),
    /// Checkpoints the database (every dirty page written, the log truncated).
    Checkpoint(OpenArgs),
}

#[derive(Args)]
pub struct ConfigArgs {
    /// Architecture: main-memory, ssd-bm, basic-nvm-bm, three-tier, nvm-direct,
    /// mmap-read, mmap-se1, mmap-se2, nvcache, nvsql.
    #[arg(long, default_value = "three-tier")]
    arch: String,
    /// DRAM: the buffer, or all data for main-memory.
    #[arg(long, default_value = "64MiB")]
    dram: ByteSize,
    /// NVM (architectures with NVM).
    #[arg(long, default_value = "1GiB")]
    nvm: ByteSize,
    /// The database directory the file names (not made now).
    #[arg(long)]
    dir: PathBuf,
    /// What a commit waits for: sync, group or none.
    #[arg(long, default_value = "sync")]
    durability: Durability,
    /// What a transaction's reads see: snapshot, read-committed or read-uncommitted.
    #[arg(long, default_value = "snapshot")]
    isolation: Isolation,
    /// The log buffer: dram, or nvm (a 16 MiB ring `wal.nvm` in --dir).
    #[arg(long, default_value = "dram", value_parser = ["dram", "nvm"])]
    log_buffer: String,
    /// Where to write the file (atomically); standard output if not given.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args)]
pub struct OpenArgs {
    /// The database's configuration file (`tierdb db config` writes one).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
}

#[derive(Args)]
pub struct KeyArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// The tree.
    #[arg(long, default_value = "main")]
    tree: String,
    key: String,
}

#[derive(Args)]
pub struct PutArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// The tree (made if missing).
    #[arg(long, default_value = "main")]
    tree: String,
    key: String,
    value: String,
}

#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// The tree.
    #[arg(long, default_value = "main")]
    tree: String,
    /// The first key (the smallest if not given).
    #[arg(long, default_value = "")]
    start: String,
    /// Most records printed.
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

/// One thing done on an open database.
enum Op<'a> {
    Info,
    Get { tree: &'a str, key: &'a str },
    Put { tree: &'a str, key: &'a str, value: &'a str },
    Delete { tree: &'a str, key: &'a str },
    Scan { tree: &'a str, start: &'a str, limit: usize },
    Checkpoint,
}

pub fn run(command: DbCommand) -> Result<()> {
    match command {
        DbCommand::Config(args) => write_config(&args),
        DbCommand::Info(a) => with_db(&a.config, &Op::Info),
        DbCommand::Get(a) => with_db(&a.open.config, &Op::Get { tree: &a.tree, key: &a.key }),
        DbCommand::Put(a) => with_db(&a.open.config, &Op::Put { tree: &a.tree, key: &a.key, value: &a.value }),
        DbCommand::Delete(a) => with_db(&a.open.config, &Op::Delete { tree: &a.tree, key: &a.key }),
        DbCommand::Scan(a) => {
            if a.limit == 0 || a.limit > SCAN_LIMIT_MAX {
                bail!("--limit {} is outside 1..={SCAN_LIMIT_MAX}", a.limit);
            }
            with_db(&a.open.config, &Op::Scan { tree: &a.tree, start: &a.start, limit: a.limit })
        }
        DbCommand::Checkpoint(a) => with_db(&a.config, &Op::Checkpoint),
    }
}

/// `db config`: the file of the architecture flags and the database's own.
fn write_config(args: &ConfigArgs) -> Result<()> {
    let arch: Architecture = args.arch.parse()?;
    let setup = args.engine.setup("ro")?;
    let mut acfg = args.engine.arch_config(&setup, arch, args.dram, args.nvm, None, "db")?;
    // A database's files are its own: the pool in --nvm-dir or in the directory,
    // named after the directory, not after this process.
    let stem = args.dir.file_name().map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
    acfg.nvm_path = match &args.engine.nvm_dir {
        Some(d) => d.join(format!("{stem}.nvm")),
        None => args.dir.join("pool.nvm"),
    };
    let mut cfg = DbConfig::for_arch(&acfg, &args.dir).with_context(|| format!("--arch {arch}"))?;
    cfg.durability = args.durability;
    cfg.isolation = args.isolation;
    if args.log_buffer == "nvm" {
        let mut ring = NvmConfig::new(args.dir.join("wal.nvm"), ByteSize(LOG_RING_BYTES));
        ring.profile = acfg.nvm_profile.clone();
        ring.mode = acfg.mode;
        cfg.wal.buffer = LogBuffer::Nvm(ring);
    }
    match &args.out {
        Some(out) => {
            cfg.save(out)?;
            eprintln!("wrote {}", out.display());
        }
        None => print!("{}", cfg.to_toml_string()?),
    }
    Ok(())
}

/// Opens the database `config` describes, as its architecture says, runs `op`, closes.
fn with_db(config: &Path, op: &Op) -> Result<()> {
    let cfg = DbConfig::load(config)?;
    let opening = || format!("opening the database in {} ({})", cfg.dir.display(), config.display());
    match cfg.architecture() {
        Some(Architecture::MainMemory) => run_op(Db::open_main_memory(&cfg).with_context(opening)?, &cfg, op),
        Some(Architecture::NvmDirect) => {
            run_op(Db::open_nvm_direct(&cfg, &cfg.direct_config()?).with_context(opening)?, &cfg, op)
        }
        _ => run_op(Db::open(&cfg).with_context(opening)?, &cfg, op),
    }
}

/// Runs `op` and closes the database, whatever `op` did.
fn run_op<S: DbStore>(db: Db<S>, cfg: &DbConfig, op: &Op) -> Result<()> {
    let done = one(&db, cfg, op);
    let closed = db.close().context("closing the database");
    done?;
    closed
}

fn one<S: DbStore>(db: &Db<S>, cfg: &DbConfig, op: &Op) -> Result<()> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // Written, not printed: a closed pipe is an error to report, not a panic.
    let mut out = std::io::stdout().lock();
    match *op {
        Op::Info => {
            let info = db.info();
            writeln!(out, "dir: {}", cfg.dir.display())?;
            writeln!(
                out,
                "architecture: {}",
                cfg.architecture().map_or("(DbConfig::new: a DRAM buffer over the page file)", Architecture::name)
            )?;
            writeln!(out, "durability: {}", info.durability.name())?;
            writeln!(out, "isolation: {}", cfg.isolation)?;
            writeln!(out, "log buffer: {}", if info.log_buffer_in_nvm { "nvm" } else { "dram" })?;
            writeln!(out, "trees: {}", info.trees.join(", "))?;
            writeln!(out, "recovery: {:?}", db.recovery())?;
        }
        Op::Get { tree, key } => match db.get(tree, key.as_bytes())? {
            Some(v) => writeln!(out, "{}", text(&v))?,
            None => bail!("no key {key:?} in tree {tree:?}"),
        },
        Op::Put { tree, key, value } => {
            if !db.tree_names().iter().any(|t| t == tree) {
                db.create_tree(tree)?;
            }
            db.put(tree, key.as_bytes(), value.as_bytes())?;
        }
        Op::Delete { tree, key } => {
            if !db.delete(tree, key.as_bytes())? {
                bail!("no key {key:?} in tree {tree:?}");
            }
        }
        Op::Scan { tree, start, limit } => {
            let (mut n, mut written) = (0, Ok(()));
            db.scan(tree, start.as_bytes(), |k, v| {
                written = writeln!(out, "{}\t{}", text(k), text(v));
                n += 1;
                written.is_ok() && n < limit
            })?;
            written?;
        }
        Op::Checkpoint => db.checkpoint()?,
    }
    Ok(())
}
