//! tierdb's benchmark crate: the workload drivers and the experiment harness the
//! `tierdb` command line runs its experiments with.
//!
//! - [`drivers`]: YCSB raw and transactional, epochs, the TPC-C run loop;
//! - [`harness`]: engine arguments → configuration, one run, repetitions and medians,
//!   clean-up, progress bars, the environment of a report and its shared header line;
//! - [`experiments`]: the run logic of the commands' experiments (engines built,
//!   workloads run, measurements collected), one file per command or family;
//! - [`plot`]: SVG charts and the text/JSON/SVG output files;
//! - [`write_set`]: the write working set recorder of the TPC-C runs.
//!
//! Nothing here parses a command line (the `clap::Args` structs of the engine, workload
//! and crashtest database options are shared by the commands that flatten them) or
//! renders a table.

#![forbid(unsafe_code)]

pub mod drivers;
pub mod experiments;
pub mod harness;
pub mod plot;
pub mod write_set;
