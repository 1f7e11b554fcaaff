//! `tierdb wal-dump` (hidden): a log's records, one a line (a diagnostic).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use tierdb::ByteSize;
use tierdb::device::NvmConfig;
use tierdb::wal::LogBuffer;

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
