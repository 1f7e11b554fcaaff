//! tierdb's trace-driven simulator and storage-hierarchy recommender.
//!
//! - [`trace`]: the trace format (binary and text), import of other systems' traces;
//! - [`prepared`]: a trace renumbered and packed for replay;
//! - [`sim`]: replay through the engine's own placement policies over metadata-only
//!   pools, and DRAM-only LRU / ARC ([`cache`]);
//! - [`model`]: modelled time from device profiles, and the Spitfire paper's §5.1
//!   hierarchy model;
//! - [`stream`]: replay of a trace file read in chunks (memory independent of its
//!   length);
//! - [`skew`]: the workload's skew (the paper's Figure 3 CDF);
//! - [`recommend`]: the grid search over DRAM / NVM / SSD capacities under a budget.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod error;
pub mod model;
pub mod prepared;
pub mod recommend;
pub mod record;
pub mod sim;
pub mod skew;
pub mod stream;
pub mod trace;

pub use error::{SimError, TraceError};
pub use prepared::{Prepared, Warmup};
pub use sim::{SimConfig, SimResult, simulate};

// The crate README is what crates.io shows; its examples are compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
