//! The errors of the simulator crate: one enum for reading and writing traces, one
//! for configuring a simulation, both folded into [`SimError`].

use std::path::PathBuf;

/// Reading, writing or importing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// Bytes or text that do not decode: `what` went wrong `at` (a byte offset,
    /// block number or line).
    #[error("{path}: corrupted trace at {at}: {what}")]
    Corrupted {
        /// The trace file.
        path: PathBuf,
        /// What did not decode (a CRC mismatch, a bad field, a truncated file).
        what: String,
        /// Where: `byte N`, `block N`, `line N` or `the header`.
        at: String,
    },
    /// A version of the binary format this build does not read.
    #[error("{path}: trace format version {found} is not supported (this build reads {supported})")]
    Version {
        /// The trace file.
        path: PathBuf,
        /// The version in the file's header.
        found: u16,
        /// The version this build reads ([`crate::trace::binary::VERSION`]).
        supported: u16,
    },
    /// A file with no trace in it: no bytes at all, or nothing but a header, blank
    /// lines or comments. Never read as a trace of zero accesses.
    #[error("{path}: empty trace: {what}")]
    Empty {
        /// The trace file.
        path: PathBuf,
        /// Why it holds no record (0 bytes, only a header, no request line).
        what: String,
    },
    /// A value that cannot be written (source text too long, page size out of range).
    #[error("trace: {what}")]
    Invalid {
        /// The value and why it cannot be written.
        what: String,
    },
}

/// Configuring or running a simulation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The trace could not be read, imported or written.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A configuration that cannot run: an unknown policy, no DRAM, a DRAM-only policy
    /// given NVM, no SSD with NVM too small for the trace, pools of 2^31 pages or more,
    /// or a budget no hierarchy fits. Also what a policy's `PolicyError` turns into.
    #[error("simulator configuration: {what}")]
    Config {
        /// What is wrong with the configuration.
        what: String,
    },
    /// A trace with no page access to replay, or none after the warm-up: a result of
    /// zeros would look like a measurement.
    #[error("nothing to simulate: {what}")]
    NoAccesses {
        /// Why nothing is measured (no access at all, or all before the `measure`
        /// marker).
        what: String,
    },
    /// An error of the engine crate, passed through.
    #[error(transparent)]
    Engine(#[from] tierdb::Error),
    /// A device profile that does not load (unknown name, bad file) or is for the
    /// wrong tier.
    #[error(transparent)]
    Profile(#[from] tierdb::device::ProfileError),
}

impl From<tierdb::policy::PolicyError> for SimError {
    fn from(e: tierdb::policy::PolicyError) -> SimError {
        SimError::Config { what: e.to_string() }
    }
}
