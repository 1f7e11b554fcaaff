//! The errors of the simulator crate: one enum for reading and writing traces, one
//! for configuring a simulation, both folded into [`SimError`].

use std::path::PathBuf;

/// Reading, writing or importing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bytes or text that do not decode: `what` went wrong `at` (a byte offset,
    /// block number or line).
    #[error("{path}: corrupted trace at {at}: {what}")]
    Corrupted { path: PathBuf, what: String, at: String },
    /// A version of the binary format this build does not read.
    #[error("{path}: trace format version {found} is not supported (this build reads {supported})")]
    Version { path: PathBuf, found: u16, supported: u16 },
    /// A file with no trace in it: no bytes at all, or nothing but a header, blank
    /// lines or comments. Never read as a trace of zero accesses.
    #[error("{path}: empty trace: {what}")]
    Empty { path: PathBuf, what: String },
    /// A value that cannot be written (source text too long, page size out of range).
    #[error("trace: {what}")]
    Invalid { what: String },
}

/// Configuring or running a simulation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("simulator configuration: {what}")]
    Config { what: String },
    /// A trace with no page access to replay, or none after the warm-up: a result of
    /// zeros would look like a measurement.
    #[error("nothing to simulate: {what}")]
    NoAccesses { what: String },
    #[error(transparent)]
    Engine(#[from] tierdb::Error),
    #[error(transparent)]
    Profile(#[from] tierdb::device::profile::ProfileError),
}

impl From<tierdb::buffer::BufferError> for SimError {
    fn from(e: tierdb::buffer::BufferError) -> SimError {
        SimError::Config { what: e.to_string() }
    }
}
