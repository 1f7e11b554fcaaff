//! `tierdb trace`: trace conversion into tierdb's format, and a trace's header and
//! counts.

use std::path::PathBuf;

use clap::Subcommand;
use tierdb_sim::Prepared;
use tierdb_sim::trace;

use super::{TraceInput, load_trace};

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Converts a block or PostgreSQL trace (or a tierdb one) into tierdb's format:
    /// binary, or text if OUT ends in .txt.
    Import {
        #[command(flatten)]
        input: TraceInput,
        /// Where the tierdb trace goes.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Prints a trace's header and counts.
    Info {
        #[command(flatten)]
        input: TraceInput,
    },
}

pub fn run_trace(c: TraceCommand) -> anyhow::Result<()> {
    match c {
        TraceCommand::Import { input, out } => {
            let t = load_trace(&input.trace, &input.format, input.page_size)?;
            trace::save(&t, &out)?;
            println!(
                "wrote {} records ({} accesses) of {} to {}",
                t.records.len(),
                t.accesses(),
                input.trace.display(),
                out.display()
            );
            Ok(())
        }
        TraceCommand::Info { input } => {
            let t = load_trace(&input.trace, &input.format, input.page_size)?;
            let p = Prepared::new(&t);
            let mut by_op = std::collections::BTreeMap::new();
            for r in &t.records {
                *by_op.entry(r.op.letter()).or_insert(0u64) += 1;
            }
            println!("source: {}", t.header.source);
            println!("page size: {} B", t.header.page_size_bytes);
            println!("records: {} ({} accesses, {} distinct pages)", t.records.len(), t.accesses(), p.pages());
            println!("by op: {by_op:?}");
            Ok(())
        }
    }
}
