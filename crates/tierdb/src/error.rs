//! The crate's error type: one enum per layer, converted into [`Error`].

use crate::btree::BTreeError;
use crate::buffer::BufferError;
use crate::db::DbError;
use crate::device::DeviceError;
use crate::device::profile::ProfileError;
use crate::size::SizeError;
use crate::tune::TuneError;
use crate::wal::WalError;

/// Any error tierdb returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Size(#[from] SizeError),
    #[error(transparent)]
    Buffer(#[from] BufferError),
    #[error(transparent)]
    BTree(#[from] BTreeError),
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Tune(#[from] TuneError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True for [`BufferError::NeedsExclusive`]: retry the access with an exclusive fix.
    pub fn needs_exclusive(&self) -> bool {
        matches!(self, Error::Buffer(BufferError::NeedsExclusive { .. }))
    }
}
