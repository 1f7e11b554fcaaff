//! Errors of the buffer layer and of every page source: the one error a fix, an
//! allocation or a free returns.
//!
//! Errors of the layers below pass through unchanged in message and source: a device's
//! as [`BufferError::Device`], the log's (forced before a write-back) as
//! [`BufferError::Wal`], a policy's as [`BufferError::Policy`]. Converted into the
//! crate's [`Error`](crate::Error) they become its `Device`, `Wal` and `Policy` again, so
//! callers at the API match them where they arose.

use crate::device::DeviceError;
use crate::ids::PageId;
use crate::wal::WalError;

/// Errors of the buffer layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BufferError {
    /// A tier (or the whole architecture) holds no more pages.
    #[error("{tier} is full: {what}")]
    Full {
        /// The tier that is full: `"dram"`, `"nvm"` or `"page table"`.
        tier: &'static str,
        /// Its capacity and what to change so that the data fits.
        what: String,
    },
    /// A page id that does not name a page.
    #[error("{pid} does not exist ({why})")]
    NoSuchPage {
        /// The page id asked for.
        pid: PageId,
        /// Why it names no page (never allocated, freed, beyond the region).
        why: &'static str,
    },
    /// Every frame of a pool is fixed, so no victim can be found; also returned when a
    /// fix waited for a page held or moved by others for longer than
    /// `PAGE_BUSY_WAIT_MS_MAX` (then `pool` is `"page latch"`, `frames` 1 and `rounds`
    /// the spins).
    #[error("{pool} pool exhausted: all {frames} frames are fixed or being moved after {rounds} clock rounds")]
    Exhausted {
        /// The pool that has no victim (`"DRAM"`, or `"page latch"` for a busy page).
        pool: &'static str,
        /// Frames in that pool.
        frames: usize,
        /// Clock rounds (or, for a busy page, backoff spins) made before giving up.
        rounds: usize,
    },
    /// A page whose checksum or header does not match.
    #[error("corrupted {pid} in {location}: {detail}")]
    Corrupted {
        /// The page the corrupted bytes belong to (as far as the frame's metadata says).
        pid: PageId,
        /// Where the bytes were read: the NVM frame or frame header and the file.
        location: String,
        /// What did not match.
        detail: String,
    },
    /// A device (DRAM arena, NVM region, SSD file) failed; boxed to keep this enum small.
    #[error(transparent)]
    Device(Box<DeviceError>),
    /// A cache-line-grained access under a shared latch needs lines that are not
    /// resident, and others hold the page too: fix it again exclusive.
    #[error("{pid} needs an exclusive fix to load cache lines (others hold it shared)")]
    NeedsExclusive {
        /// The page to fix again exclusive.
        pid: PageId,
    },
    /// A line-grained access outside the page.
    #[error("access to bytes {off}..{end} of {pid}, a page of {page_size} bytes")]
    OutOfPage {
        /// The page accessed.
        pid: PageId,
        /// First byte of the access, from the start of the page.
        off: usize,
        /// One past the last byte of the access (saturated at `usize::MAX`).
        end: usize,
        /// The page's size in bytes.
        page_size: usize,
    },
    /// The page source refuses further work after a failure it cannot undo (a
    /// write-back that an unfix could not report): every later fix returns this.
    #[error("{store} stopped: {what}")]
    Stopped {
        /// Which page source stopped (`nvm-direct`, `the buffer manager`).
        store: &'static str,
        /// The first failure, which stopped it.
        what: String,
    },
    /// The log failed while forced (or written to) before a write-back, the
    /// write-ahead rule's; boxed to keep this enum small.
    #[error(transparent)]
    Wal(Box<WalError>),
    /// A placement policy's name or parameters were refused.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    /// A buffer configuration that cannot work.
    #[error("buffer configuration: {what}")]
    Config {
        /// What is wrong with the configuration.
        what: String,
    },
}

impl BufferError {
    /// True for [`NeedsExclusive`](Self::NeedsExclusive): retry the access with an
    /// exclusive fix.
    pub fn needs_exclusive(&self) -> bool {
        matches!(self, BufferError::NeedsExclusive { .. })
    }

    /// True for [`Full`](Self::Full): a tier holds no more pages.
    pub fn is_full(&self) -> bool {
        matches!(self, BufferError::Full { .. })
    }
}

impl From<DeviceError> for BufferError {
    fn from(e: DeviceError) -> Self {
        BufferError::Device(Box::new(e))
    }
}

impl From<WalError> for BufferError {
    fn from(e: WalError) -> Self {
        BufferError::Wal(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fix returns this error, so it stays as small as it was when the fix path
    /// still returned the umbrella error (80 bytes): rare, large variants are boxed.
    const BUFFER_ERROR_BYTES_MAX: usize = 56;

    #[test]
    fn the_buffer_error_stays_small() {
        let size = std::mem::size_of::<BufferError>();
        assert!(size <= BUFFER_ERROR_BYTES_MAX, "BufferError is {size} bytes, the bound {BUFFER_ERROR_BYTES_MAX}");
        assert!(size <= std::mem::size_of::<crate::Error>(), "BufferError is larger than the umbrella error");
    }
}
