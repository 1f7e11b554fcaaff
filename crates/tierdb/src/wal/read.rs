//! The read path of the log: one record at an LSN wherever it is (log file, DRAM
//! buffer, NVM ring), and [`Records`], an iterator that reads the log file ahead in
//! chunks ([`FileScan`], also used by recovery's pass).
//!
//! Readers take no lock of the write path except for a moment: the tail's lock to copy
//! bytes still in the DRAM buffer, the flush lock to wait for bytes a flush took.

use super::config::SCAN_CHUNK_BYTES;
use super::error::WalError;
use super::record::{self, Lsn, Record};
use super::state::Inner;
use crate::device::{DeviceError, LogFile};

/// An iterator over records, oldest first.
pub struct Records<'a> {
    inner: &'a Inner,
    at: Lsn,
    end: Lsn,
    scan: FileScan,
}

impl<'a> Records<'a> {
    /// The records of `inner` from `at` (a record boundary) to `end`.
    pub(super) fn new(inner: &'a Inner, at: Lsn, end: Lsn) -> Records<'a> {
        Records { inner, at, end, scan: FileScan::new(at) }
    }

    /// The record at `self.at` from the log file read ahead; `None` where the file
    /// cannot tell (the record is not wholly in the file, or the bytes are not a
    /// record): the caller then reads it the ordinary way, which names what is wrong.
    fn read_ahead(&mut self) -> Result<Option<Record>, WalError> {
        let file = &self.inner.file;
        let file_end = file.end();
        if self.at >= file_end || self.at < file.start() {
            return Ok(None);
        }
        Ok(self.scan.decode(file, self.at, file_end)?.ok())
    }
}

/// The log file read forward in chunks of [`SCAN_CHUNK_BYTES`]: the record at an LSN is
/// decoded from bytes read ahead, and more are read (the unread rest kept) while the
/// bytes end inside it. Opening the log and recovery's pass both scan this way.
pub(super) struct FileScan {
    /// The stream bytes `buf_at..buf_at + buf.len()`.
    buf: Vec<u8>,
    buf_at: Lsn,
}

impl FileScan {
    pub(super) fn new(at: Lsn) -> FileScan {
        FileScan { buf: Vec::new(), buf_at: at }
    }

    /// The record that starts at `at`, or why the file's bytes from `at` up to
    /// `file_end` are not one.
    pub(super) fn decode(
        &mut self,
        file: &LogFile,
        at: Lsn,
        file_end: Lsn,
    ) -> Result<Result<Record, record::Invalid>, DeviceError> {
        if at < self.buf_at || at > self.buf_at.advance(self.buf.len() as u64) {
            self.buf.clear();
            self.buf_at = at;
        }
        debug_assert!(
            at >= self.buf_at && at <= self.buf_at.advance(self.buf.len() as u64),
            "scan at LSN {at} outside its buffer"
        );
        loop {
            let off = at.bytes_since(self.buf_at) as usize;
            match record::decode(at, &self.buf[off..]) {
                Err(record::Invalid::Short { .. } | record::Invalid::Truncated { .. })
                    if self.buf_at.advance(self.buf.len() as u64) < file_end =>
                {
                    // Read more: keep the unread rest, append the next chunk.
                    self.buf.drain(..off);
                    self.buf_at = at;
                    let have = self.buf.len();
                    let want = file_end.bytes_since(at.advance(have as u64)).min(SCAN_CHUNK_BYTES as u64) as usize;
                    self.buf.resize(have + want, 0);
                    let n = file.read(at.advance(have as u64), &mut self.buf[have..])?;
                    self.buf.truncate(have + n);
                    if n == 0 {
                        return Ok(record::decode(at, &self.buf));
                    }
                }
                r => return Ok(r),
            }
        }
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Record, WalError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let got = match self.read_ahead() {
            Ok(Some(r)) => Ok(r),
            Ok(None) => self.inner.read(self.at),
            Err(e) => Err(e),
        };
        match got {
            Ok(r) => {
                // LSN order: each record starts where the one before ended.
                debug_assert_eq!(r.lsn, self.at, "record read at LSN {} names LSN {}", self.at, r.lsn);
                debug_assert!(r.next_lsn() > self.at, "record at LSN {} does not advance", self.at);
                self.at = r.next_lsn();
                Some(Ok(r))
            }
            Err(e) => {
                self.at = self.end;
                Some(Err(e))
            }
        }
    }
}

impl Inner {
    pub(super) fn read(&self, lsn: Lsn) -> Result<Record, WalError> {
        let no = |why: String| WalError::NoRecord { lsn, why };
        if lsn < self.file.start() {
            return Err(no(format!("the log was truncated before {}", self.file.start())));
        }
        let mut head = [0u8; record::HEADER_BYTES];
        let file_end = self.file.end();
        let fetch = |at: Lsn, buf: &mut [u8]| -> Result<(), WalError> {
            if at.advance(buf.len() as u64) <= file_end {
                let n = self.file.read(at, buf)?;
                if n < buf.len() {
                    return Err(WalError::NoRecord { lsn, why: "past the end of the log file".into() });
                }
                return Ok(());
            }
            match &self.ring {
                Some(ring) => Ok(ring.read(at, buf)?),
                None => {
                    let t = self.tail.lock();
                    let s = at.checked_bytes_since(t.pending_start).map(|s| s as usize);
                    match s.filter(|s| s + buf.len() <= t.pending.len()) {
                        Some(s) => {
                            buf.copy_from_slice(&t.pending[s..s + buf.len()]);
                            Ok(())
                        }
                        // Taken by a flush meanwhile: once the flush lock is free, the
                        // bytes are in the file.
                        None => {
                            drop(t);
                            drop(self.flush_lock.lock());
                            let n = self.file.read(at, buf)?;
                            if n < buf.len() {
                                return Err(WalError::NoRecord { lsn, why: "past the end of the log".into() });
                            }
                            Ok(())
                        }
                    }
                }
            }
        };
        fetch(lsn, &mut head)?;
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        if !(record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len) {
            return Err(no(format!("length field {len}")));
        }
        let mut buf = vec![0u8; len];
        fetch(lsn, &mut buf)?;
        record::decode(lsn, &buf).map_err(|e| no(e.to_string()))
    }
}
