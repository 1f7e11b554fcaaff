//! The experiment harness every command that runs an engine shares: engine arguments →
//! configuration ([`EngineArgs`], the one place), one run of YCSB on one architecture
//! ([`run_one`], [`run_one_txn`]), the engine files' clean-up, progress bars, the
//! statistics over repeated runs ([`median`], [`ratio`]) and the environment a report
//! names ([`Machine`], [`devices_line`]).
//!
//! Dependencies run one way: the harness uses the drivers, never the reverse (the
//! TPC-C driver takes the harness's configuration and clean-up).

mod engine_args;
mod environment;
mod files;
mod progress;
mod run;
mod stats;
mod trace;

pub use engine_args::{DURATION_SECS_MAX, DoubleWriteArg, EngineArgs, Setup};
pub use environment::{Machine, devices_line};
pub use files::{Cleanup, remove_files_on_interrupt};
pub use progress::Progress;
pub use run::{RunReport, is_full, run_one, run_one_txn, run_one_txn_from_config, value};
pub use stats::{Middle, Ranked, fmt_rate, median, median_of_all, ratio};
pub use trace::{finish_recording, start_recording};
