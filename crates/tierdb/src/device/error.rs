//! Errors of the device layer.
//!
//! A variant with a `#[source]` does not repeat the source in its message: printing
//! the chain (`{:#}` with anyhow, or walking `source()`) shows each cause once.

use std::io;
use std::path::PathBuf;

/// What went wrong in a device operation. Environment problems (I/O, full devices,
/// corrupt files, bad configuration) are errors; bugs are panics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error("{op} {path}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: no space left for {needed_bytes} more bytes")]
    Full {
        path: PathBuf,
        needed_bytes: u64,
        #[source]
        source: io::Error,
    },
    #[error("cannot create {path}")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} already exists; refusing to overwrite it")]
    AlreadyExists { path: PathBuf },
    #[error("{path} is {file_bytes} bytes but the configuration asks for {config_bytes}")]
    SizeMismatch { path: PathBuf, file_bytes: u64, config_bytes: u64 },
    #[error("invalid {device} configuration: {what}")]
    Config { device: &'static str, what: String },
    #[error("{device}: access at offset {offset} of {len} bytes is outside its {size} bytes")]
    OutOfRange { device: &'static str, offset: u64, len: u64, size: u64 },
    #[error("{device}: {what} {value} is not a multiple of {align}")]
    Misaligned { device: &'static str, what: &'static str, value: u64, align: u64 },
    #[error("{path}: not a tierdb page file (magic \"{}\", expected \"{}\")", .found.escape_ascii(), .expected.escape_ascii())]
    BadMagic { path: PathBuf, found: [u8; 8], expected: [u8; 8] },
    #[error("{path}: format version {found}, this build reads version {expected}")]
    VersionMismatch { path: PathBuf, found: u32, expected: u32 },
    #[error("{path}: page size {found} bytes, but {expected} bytes were asked for")]
    PageSizeMismatch { path: PathBuf, found: u32, expected: u32 },
    #[error("corrupted {what} in {location}: {detail}")]
    Corrupted { what: &'static str, location: String, detail: String },
    #[error("{what} is not supported here: {why}")]
    Unsupported { what: String, why: String },
    #[error("NUMA node {node}: {reason}")]
    Numa { node: u32, reason: String },
    #[error("{path}: the handle is poisoned by an earlier failed {cause}; reopen the file")]
    Poisoned { path: PathBuf, cause: &'static str },
}

impl DeviceError {
    /// An I/O error, or `Full` when the operating system says the device is full.
    pub(crate) fn io(op: &'static str, path: &std::path::Path, needed_bytes: u64, e: io::Error) -> Self {
        if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
            DeviceError::Full { path: path.to_path_buf(), needed_bytes, source: e }
        } else {
            DeviceError::Io { op, path: path.to_path_buf(), source: e }
        }
    }
}
