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
    /// A file, mapping or system call failed, for a reason other than a full device.
    #[error("{op} {path}")]
    Io {
        /// The operation that failed ("read", "fdatasync", "mmap", ...).
        op: &'static str,
        /// The file it was on (a description in parentheses for anonymous memory).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The device or the user's quota is full (`ENOSPC`, `EDQUOT`): a write, an
    /// allocation or a growth found no room.
    #[error("{path}: no space left for {needed_bytes} more bytes")]
    Full {
        /// The file being written or grown.
        path: PathBuf,
        /// Bytes the failed operation wanted to write or reserve; 0 when not known.
        needed_bytes: u64,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A file or directory could not be created (for a reason other than one being
    /// there already, which is [`AlreadyExists`](Self::AlreadyExists)).
    #[error("cannot create {path}")]
    Create {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Creating a file found one in its place; the existing file is left untouched.
    #[error("{path} already exists; refusing to overwrite it")]
    AlreadyExists {
        /// The file that exists.
        path: PathBuf,
    },
    /// An existing file (an NVM region, a ring) has another size than the
    /// configuration asks for; nothing was changed.
    #[error("{path} is {file_bytes} bytes but the configuration asks for {config_bytes}")]
    SizeMismatch {
        /// The file.
        path: PathBuf,
        /// Its size on disk, bytes.
        file_bytes: u64,
        /// The size the configuration asks for, bytes.
        config_bytes: u64,
    },
    /// A configuration or request the device cannot serve: a size, page size or
    /// segment size out of its limits, a profile for the wrong tier, a buffer of the
    /// wrong length, an append away from the log's end.
    #[error("invalid {device} configuration: {what}")]
    Config {
        /// Which device ("dram", "nvm", "ssd", "log", ...).
        device: &'static str,
        /// What is wrong, with the values.
        what: String,
    },
    /// An access reaches outside the device.
    #[error("{device}: access at offset {offset} of {len} bytes is outside its {size} bytes")]
    OutOfRange {
        /// Which device.
        device: &'static str,
        /// Where the access starts, bytes (for the log: an LSN).
        offset: u64,
        /// Bytes the access covers.
        len: u64,
        /// The device's size, bytes (for the log: the LSN of its end).
        size: u64,
    },
    /// An offset or length that must be a multiple of an alignment (NVM cache lines)
    /// is not.
    #[error("{device}: {what} {value} is not a multiple of {align}")]
    Misaligned {
        /// Which device.
        device: &'static str,
        /// Which value: "offset" or "length".
        what: &'static str,
        /// The value given, bytes.
        value: u64,
        /// The alignment it needs, bytes (a power of two).
        align: u64,
    },
    /// The file is not a tierdb page file: no superblock slot starts with the magic.
    #[error("{path}: not a tierdb page file (magic \"{}\", expected \"{}\")", .found.escape_ascii(), .expected.escape_ascii())]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The first 8 bytes of the file.
        found: [u8; 8],
        /// The magic of a page file.
        expected: [u8; 8],
    },
    /// The page file has a format version this build does not read.
    #[error("{path}: format version {found}, this build reads version {expected}")]
    VersionMismatch {
        /// The file.
        path: PathBuf,
        /// The version in its superblock.
        found: u32,
        /// The version this build writes (it also reads some older ones).
        expected: u32,
    },
    /// The page file's pages have another size than the configuration asks for.
    #[error("{path}: page size {found} bytes, but {expected} bytes were asked for")]
    PageSizeMismatch {
        /// The file.
        path: PathBuf,
        /// The page size its superblock records, bytes.
        found: u32,
        /// The page size configured, bytes.
        expected: u32,
    },
    /// Data read from a device fails its checks: a torn or misplaced page, a
    /// superblock with no valid slot, log segments with a gap or missing, a damaged
    /// NVM log-ring or double-write header.
    #[error("corrupted {what} in {location}: {detail}")]
    Corrupted {
        /// The structure at fault ("page", "superblock", "log segments", ...).
        what: &'static str,
        /// Where: the file, and the page where there is one.
        location: String,
        /// What the check found.
        detail: String,
    },
    /// The machine or file system lacks something the configuration requires (a
    /// flush instruction, `O_DIRECT`).
    #[error("{what} is not supported here: {why}")]
    Unsupported {
        /// The feature.
        what: String,
        /// Why it is not available.
        why: String,
    },
    /// Binding memory to a NUMA node failed: no such node, or the kernel refused.
    #[error("NUMA node {node}: {reason}")]
    Numa {
        /// The node asked for.
        node: u32,
        /// Why binding failed.
        reason: String,
    },
    /// A write or sync on a handle that an earlier failed write or sync poisoned: the
    /// state of the page cache is unknown, so the file must be reopened (and recovered).
    #[error("{path}: the handle is poisoned by an earlier failed {cause}; reopen the file")]
    Poisoned {
        /// The file (the directory, for the log).
        path: PathBuf,
        /// The kind of operation that failed first ("write", "fdatasync", ...).
        cause: &'static str,
    },
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
