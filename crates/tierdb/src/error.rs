//! The crate's error type: one enum per layer, converted into [`Error`].
//!
//! Each layer returns its own error; only the API (`db/`, the architecture's
//! constructors) returns [`Error`]. An error that passed through layers on its way up
//! (a device's inside a [`BufferError`]) converts into the variant of the layer where it
//! arose (`Error::Device`), so callers match it there whichever layer returned it. The
//! messages are the layers' own: every variant is transparent.

use crate::btree::BTreeError;
use crate::buffer::BufferError;
use crate::db::DbError;
use crate::device::DeviceError;
use crate::device::profile::ProfileError;
use crate::policy::PolicyError;
use crate::size::SizeError;
use crate::tune::TuneError;
use crate::wal::WalError;

/// Any error tierdb returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A device (DRAM, NVM, SSD page file, log files) failed or refused an operation.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A device profile could not be found, read or validated.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A byte size could not be parsed.
    #[error(transparent)]
    Size(#[from] SizeError),
    /// The buffer layer (page sources, buffer manager) failed. Errors of the layers
    /// below that it passes on convert into their own variants (`Device`, `Wal`,
    /// `Policy`).
    #[error(transparent)]
    Buffer(BufferError),
    /// A placement policy's name or parameters were refused.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A B+-tree or catalog operation failed. The page source's and the log's errors
    /// that it passes on convert into their own variants (`Buffer`, `Wal`, ...).
    #[error(transparent)]
    BTree(BTreeError),
    /// The write-ahead log failed.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// The transactional database or its recovery failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A tuner's configuration was refused.
    #[error(transparent)]
    Tune(#[from] TuneError),
}

/// A result whose error is tierdb's [`Error`] unless given.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True for [`BufferError::NeedsExclusive`]: retry the access with an exclusive fix.
    pub fn needs_exclusive(&self) -> bool {
        matches!(self, Error::Buffer(e) if e.needs_exclusive())
    }

    /// True for the errors a transaction meets through concurrency alone, after which
    /// it should roll back and may run again: a lock wait over the limit, a deadlock, a
    /// write conflict, a snapshot too old, and the `TxnFailed` they leave behind.
    pub fn is_retryable(&self) -> bool {
        use crate::db::DbError as D;
        matches!(
            self,
            Error::Db(
                D::LockTimeout { .. }
                    | D::Deadlock { .. }
                    | D::WriteConflict { .. }
                    | D::SnapshotTooOld { .. }
                    | D::TxnFailed { .. }
            )
        )
    }

    /// True for [`BufferError::Full`]: a tier holds no more pages.
    pub fn is_full(&self) -> bool {
        matches!(self, Error::Buffer(e) if e.is_full())
    }
}

impl From<BufferError> for Error {
    fn from(e: BufferError) -> Self {
        match e {
            BufferError::Device(e) => Error::Device(*e),
            BufferError::Wal(e) => Error::Wal(*e),
            BufferError::Policy(e) => Error::Policy(e),
            e => Error::Buffer(e),
        }
    }
}

impl From<BTreeError> for Error {
    fn from(e: BTreeError) -> Self {
        match e {
            BTreeError::Buffer(e) => Error::from(e),
            BTreeError::Wal(e) => Error::Wal(*e),
            e => Error::BTree(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::ids::PageId;

    fn device() -> DeviceError {
        DeviceError::Io { op: "read", path: "data.db".into(), source: std::io::Error::from_raw_os_error(libc::EIO) }
    }

    #[test]
    fn an_error_passed_on_by_layers_converts_into_the_variant_of_the_layer_where_it_arose() {
        let e = Error::from(BTreeError::from(BufferError::from(device())));
        assert!(matches!(&e, Error::Device(DeviceError::Io { op: "read", .. })), "{e}");
        let e = Error::from(BTreeError::from(WalError::Config { what: "w".into() }));
        assert!(matches!(&e, Error::Wal(WalError::Config { .. })), "{e}");
        let e = Error::from(BufferError::from(WalError::Config { what: "w".into() }));
        assert!(matches!(&e, Error::Wal(WalError::Config { .. })), "{e}");
        let e = Error::from(BTreeError::from(BufferError::NeedsExclusive { pid: PageId(3) }));
        assert!(e.needs_exclusive() && matches!(&e, Error::Buffer(BufferError::NeedsExclusive { .. })), "{e}");
        let full = || BufferError::Full { tier: "dram", what: "64 frames".into() };
        assert!(
            full().is_full() && BTreeError::from(full()).is_full() && Error::from(BTreeError::from(full())).is_full()
        );
        let e = Error::from(BTreeError::CatalogFull { max: 8 });
        assert!(matches!(&e, Error::BTree(BTreeError::CatalogFull { max: 8 })), "{e}");
    }

    #[test]
    fn messages_and_sources_are_the_layers_own_whichever_layer_passed_the_error_on() {
        let wrapped = [
            Error::from(device()),
            Error::from(BufferError::from(device())),
            Error::from(BTreeError::from(BufferError::from(device()))),
        ];
        for e in &wrapped {
            assert_eq!(e.to_string(), device().to_string());
            assert_eq!(e.source().map(ToString::to_string), device().source().map(ToString::to_string), "{e}");
        }
        let layer = BTreeError::from(BufferError::from(device()));
        assert_eq!(layer.to_string(), device().to_string());
        assert_eq!(layer.source().map(ToString::to_string), device().source().map(ToString::to_string));
    }
}
