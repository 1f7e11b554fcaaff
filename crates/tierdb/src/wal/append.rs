//! The write path of the log: appending a record (to the DRAM buffer, or persisted in
//! the NVM ring), flushing the buffer or the ring to the log file with one sync for
//! every waiter it covers, the last retry after a failure, and the background flusher.
//!
//! Every failed write or sync of the log file poisons the log before it returns: the
//! records stay in the DRAM buffer for the one retry of [`Wal::finish`](super::Wal::finish).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::config::{RING_FLUSH_WRITE_BYTES, SMALL_RECORD_BYTES};
use super::error::WalError;
use super::record::{self, Lsn, RecordHead};
use super::state::{By, Inner};
use crate::device::DeviceError;
use crate::ids::AtomicLsn;

impl Inner {
    pub(super) fn append(&self, head: &RecordHead, payload: &[u8]) -> Result<Lsn, WalError> {
        self.check_poison()?;
        if payload.len() > record::PAYLOAD_BYTES_MAX {
            return Err(WalError::TooLarge { len: payload.len(), max: record::PAYLOAD_BYTES_MAX });
        }
        let len = record::encoded_len(payload.len());
        debug_assert!(
            (record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len),
            "record of {len} bytes for a payload of {}",
            payload.len()
        );
        let (lsn, flush) = match &self.ring {
            None => {
                let mut t = self.tail.lock();
                let lsn = t.next;
                let at = t.pending.len();
                t.pending.resize(at + len, 0);
                record::encode_into(lsn, head, payload, &mut t.pending[at..]);
                t.next = t.next.advance(len as u64);
                // The DRAM buffer holds exactly the stream bytes `pending_start..next`.
                debug_assert_eq!(
                    t.pending_start.advance(t.pending.len() as u64),
                    t.next,
                    "pending bytes from LSN {} do not end at the next LSN",
                    t.pending_start
                );
                (lsn, t.pending.len() > self.buffer_bytes)
            }
            Some(ring) => {
                let mut t = self.tail.lock();
                let lsn = t.next;
                // Room: the ring holds the stream from the flushed LSN on.
                if lsn.advance(len as u64) > self.ring_flushed.load_lsn(Ordering::Acquire).advance(ring.capacity()) {
                    self.flush_ring(By::Waiter)?;
                }
                // Ring wrap: the record must not overwrite bytes not yet in the log file
                // (unless a flush failed meanwhile: the log is poisoned, and says so).
                let flushed = self.ring_flushed.load_lsn(Ordering::Acquire);
                assert!(
                    lsn.advance(len as u64) <= flushed.advance(ring.capacity())
                        || self.is_poisoned.load(Ordering::Acquire),
                    "record at LSN {lsn} of {len} bytes would overwrite ring bytes from LSN {flushed} not yet flushed \
                     (ring of {} bytes)",
                    ring.capacity()
                );
                // Small records are encoded on the stack.
                let mut small = [0u8; SMALL_RECORD_BYTES];
                let mut large = Vec::new();
                let buf = if len <= SMALL_RECORD_BYTES {
                    &mut small[..len]
                } else {
                    large.resize(len, 0);
                    &mut large[..]
                };
                record::encode_into(lsn, head, payload, buf);
                if let Err(e) = ring.write(lsn, buf) {
                    return self.poison(e);
                }
                t.next = t.next.advance(len as u64);
                debug_assert!(self.appended.load_lsn(Ordering::Relaxed) == lsn, "ring append at {lsn} not at the end");
                self.appended.store_lsn(t.next, Ordering::Release);
                self.durable.store_lsn(t.next, Ordering::Release);
                (lsn, false)
            }
        };
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
        if flush {
            self.flush_until(lsn.advance(len as u64), By::Waiter)?;
        }
        Ok(lsn)
    }

    pub(super) fn flush_until(&self, lsn: Lsn, by: By) -> Result<(), WalError> {
        self.check_poison()?;
        if self.durable.load_lsn(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        if self.ring.is_some() {
            // Everything appended is durable already; `lsn` past the end asks for a
            // flush of the ring into the file (closing).
            return self.flush_ring(by);
        }
        if by == By::Waiter {
            self.stats.waits.fetch_add(1, Ordering::Relaxed);
        }
        let _f = self.flush_lock.lock();
        if self.durable.load_lsn(Ordering::Acquire) >= lsn {
            return Ok(()); // a flush that ran while we waited covered us
        }
        self.check_poison()?;
        let (start, mut bytes, end) = {
            let mut t = self.tail.lock();
            let spare = std::mem::take(&mut t.spare);
            let bytes = std::mem::replace(&mut t.pending, spare);
            let start = t.pending_start;
            t.pending_start = t.next;
            (start, bytes, t.next)
        };
        // What the flush writes continues the durable stream and ends at the tail.
        assert!(
            start.advance(bytes.len() as u64) == end && start == self.durable.load_lsn(Ordering::Acquire),
            "flush of LSN {start}..{end} with {} bytes, the log durable to {}",
            bytes.len(),
            self.durable.load(Ordering::Acquire)
        );
        if !bytes.is_empty() {
            if let Err(e) = self.file.append(start, &bytes).and_then(|()| self.file.sync()) {
                // The records stay in the buffer, ahead of any appended meanwhile: the
                // log refuses all work from now on, but closing it makes one last
                // attempt to write them ([`Wal::finish`](super::Wal::finish)).
                let mut t = self.tail.lock();
                bytes.extend_from_slice(&t.pending);
                t.pending = bytes;
                t.pending_start = start;
                drop(t);
                return self.poison(e);
            }
            self.stats.flushed(by);
        }
        self.durable.store_lsn(end, Ordering::Release);
        bytes.clear();
        self.tail.lock().spare = bytes;
        Ok(())
    }

    /// After the log failed: writes the records a failed flush left in the DRAM buffer
    /// (and any appended before the failure was known) where the log file was last
    /// synced, and syncs; the one retry of a failed log ([`Wal::finish`](super::Wal::finish)). Returns the
    /// LSNs written, `None` if there were none.
    pub(super) fn write_retained(&self) -> Result<Option<(Lsn, Lsn)>, DeviceError> {
        if self.ring.is_some() {
            return Ok(None); // the ring's records are durable; recovery copies them
        }
        let _f = self.flush_lock.lock();
        let mut t = self.tail.lock();
        let (from, to) = (t.pending_start, t.next);
        debug_assert_eq!(
            from,
            self.durable.load_lsn(Ordering::Acquire),
            "retained records start where the log is durable"
        );
        if from == to {
            return Ok(None);
        }
        assert_eq!(from.advance(t.pending.len() as u64), to, "retained bytes from LSN {from} do not end at {to}");
        self.file.rewrite(from, &t.pending)?;
        t.pending.clear();
        t.pending_start = to;
        self.durable.store_lsn(to, Ordering::Release);
        Ok(Some((from, to)))
    }

    /// Moves the ring's unflushed bytes to the log file, syncs, and frees them.
    pub(super) fn flush_ring(&self, by: By) -> Result<(), WalError> {
        let ring = self.ring.as_ref().expect("flush_ring needs the ring");
        let _f = self.flush_lock.lock();
        let from = self.file.end();
        let to = self.appended.load_lsn(Ordering::Acquire);
        if to <= from {
            return Ok(());
        }
        // The ring holds the stream from its flushed LSN on, at most one ring's worth.
        let ring_flushed = self.ring_flushed.load_lsn(Ordering::Acquire);
        assert!(
            ring_flushed <= from && to.bytes_since(ring_flushed) <= ring.capacity()
                || self.is_poisoned.load(Ordering::Acquire),
            "ring flush of LSN {from}..{to}: the ring holds the stream from {ring_flushed}, {} bytes",
            ring.capacity()
        );
        // Writes of whole records: a segment begins at a write (`LogFile::append`), and
        // once the segments before it are truncated, opening the log reads the stream
        // from that segment's first byte, which must begin a record. (Writes of a fixed
        // number of bytes began segments inside records: such a log failed to open.)
        let mut buf = vec![0u8; to.bytes_since(from).min(RING_FLUSH_WRITE_BYTES as u64) as usize];
        let mut at = from;
        while at < to {
            let n = (to.bytes_since(at) as usize).min(buf.len());
            ring.read(at, &mut buf[..n])?;
            // The last write ends at `to`, the appended end, a record boundary.
            let whole = if at.advance(n as u64) == to {
                n
            } else {
                match whole_records_bytes(&buf[..n]) {
                    Ok(w) => w,
                    Err(detail) => {
                        let location = ring.region().info().path.display().to_string();
                        let detail = format!("flushing LSN {from}..{to}, at LSN {at}: {detail}");
                        return self.poison(DeviceError::Corrupted { what: "NVM log buffer", location, detail });
                    }
                }
            };
            // A write holds at least the largest record (`RING_FLUSH_WRITE_BYTES`).
            assert!(whole > 0, "ring flush at LSN {at}: no whole record in {n} bytes");
            if let Err(e) = self.file.append(at, &buf[..whole]) {
                return self.poison(e);
            }
            at = at.advance(whole as u64);
        }
        debug_assert_eq!(at, to, "ring flush of LSN {from}..{to} ended at {at}");
        if let Err(e) = self.file.sync() {
            return self.poison(e);
        }
        if let Err(e) = ring.set_flushed(to) {
            return self.poison(e);
        }
        self.ring_flushed.store_lsn(to, Ordering::Release);
        self.stats.flushed(by);
        Ok(())
    }

    pub(super) fn flusher(&self, interval: Duration) {
        let (m, cv) = &self.wake;
        loop {
            {
                let mut woken = m.lock();
                if !*woken {
                    cv.wait_for(&mut woken, interval);
                }
                *woken = false;
            }
            if self.stop.load(Ordering::Acquire) || self.is_poisoned.load(Ordering::Acquire) {
                return;
            }
            // Errors poison the log; committers see them.
            let _ = match &self.ring {
                None => {
                    let next = self.tail.lock().next;
                    self.flush_until(next, By::Flusher)
                }
                Some(_) => self.flush_ring(By::Flusher),
            };
        }
    }
}

/// How many bytes of `bytes`, which begin with a record of the NVM ring, are whole
/// records: the record lengths are followed up to the last one that ends inside.
///
/// # Errors
/// A length field that no record has (the ring's bytes between its flushed LSN and the
/// appended end are records appended by this process, so the NVM was damaged): what.
pub(super) fn whole_records_bytes(bytes: &[u8]) -> Result<usize, String> {
    let mut at = 0;
    while at + record::HEADER_BYTES <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        if !(record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len) || !len.is_multiple_of(record::ALIGN) {
            return Err(format!("{at} bytes on, a record's length field holds {len}"));
        }
        if at + len > bytes.len() {
            break;
        }
        at += len;
    }
    Ok(at)
}
