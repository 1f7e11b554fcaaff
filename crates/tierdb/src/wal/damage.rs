//! Damage in the log found at open: whether the log may end where its valid records
//! end, and what salvage does when it may not.
//!
//! Recovery (`recover.rs`) reads the log file, then the NVM ring, to the first
//! bytes that are not a valid record. The log may end there only if what follows is a
//! **torn tail**: the bytes a write cut short by a crash leaves (a record cut short, or
//! followed only by zeros or garbage that are no record), which were never durable, so
//! that no page carries their LSNs and no commit was acknowledged on them. That holds
//! when all of these do ([`assess`]):
//!
//! 1. no valid record follows in the file: a record names its own LSN, so a valid one
//!    further on was written after the damaged one and the damage is not the end of a
//!    write (a flipped byte, a lost sector in the middle of the log);
//! 2. the damage is in the last segment: a segment is synced before the next one
//!    begins, so the bytes of an earlier one were durable;
//! 3. the log still reaches past what it is known to have held durably: the record at
//!    the control file's redo point ([`WalConfig::valid_past`](super::WalConfig),
//!    forced before the control file was written) and, with the log buffer in NVM,
//!    everything below the ring's flushed LSN.
//!
//! Otherwise the log is damaged where it was durable. Cutting it there would drop
//! commits silently and hand out LSNs again below those pages already carry, so that
//! redo skips later changes of those pages; recovery refuses instead
//! ([`WalError::Corrupted`](super::WalError), naming the segment file and the byte).
//!
//! **Salvage** ([`WalConfig::salvage_damaged_log`](super::WalConfig)) cuts the log at
//! the damage all the same, says so in `Recovered::tail` and `Recovered::salvaged`,
//! and fills the stream with [`Kind::Filler`] records up to past every byte the log
//! held before the cut and past the bounds of point 3. Every page LSN was taken from
//! a record that was in the log file (a page is written out only after the log is
//! forced to its LSN), so every LSN handed out afterwards is above every page's.

use super::record::{self, ALIGN, HEADER_BYTES, Invalid, Kind, Lsn, RECORD_BYTES_MAX, RecordHead};
use crate::device::{DeviceError, LogFile};

/// Bytes read at a time when looking for a valid record past damage (and filler bytes
/// written at a time).
const CHUNK_BYTES: usize = 1 << 20;

const _: () = assert!(CHUNK_BYTES >= RECORD_BYTES_MAX, "a chunk holds the largest record");
const _: () = assert!(HEADER_BYTES.is_multiple_of(ALIGN), "a filler of a bare header is aligned");
const _: () = assert!(RECORD_BYTES_MAX.is_multiple_of(ALIGN), "the largest filler is aligned");

/// Where the valid records of the log end, and what it is known to have held.
#[derive(Debug)]
pub(super) struct LogEnd<'a> {
    /// After the log file's last valid record.
    pub file_valid: Lsn,
    /// Why the file's bytes at `file_valid` are not a record (if `file_valid <
    /// file_end`).
    pub invalid: &'a Invalid,
    /// The log file's end as opened, before any cut.
    pub file_end: Lsn,
    /// After the last valid record of the file and then of the NVM ring: where the log
    /// ends if nothing is wrong.
    pub end: Lsn,
    /// A record starts at this LSN ([`Lsn::NONE`]: none known): the log must end past it.
    pub valid_past: Lsn,
    /// The NVM ring's flushed LSN: every byte below it was synced to the log file.
    pub ring_flushed: Option<Lsn>,
}

/// Damage the log must not be cut at silently.
#[derive(Debug)]
pub(super) struct Damage {
    /// The first byte that would be lost.
    pub lsn: Lsn,
    /// Its segment file and offset there.
    pub file: std::path::PathBuf,
    pub offset: u64,
    /// What is wrong there and why it is not a torn tail.
    pub detail: String,
}

/// Whether the log may end at `e.end` (a torn tail, or no damage at all: `None`), or
/// where it was damaged while durable.
///
/// # Errors
/// Device errors reading the file.
pub(super) fn assess(file: &LogFile, e: &LogEnd<'_>) -> Result<Option<Damage>, DeviceError> {
    debug_assert!(e.file_valid <= e.file_end && e.file_valid <= e.end, "{e:?}");
    let mut why = Vec::new();
    // The file's bytes from `end` on are lost (those below it the ring supplied).
    let lost_from = e.end.max(e.file_valid);
    if lost_from < e.file_end {
        // 1. A valid record further on. At `file_valid` itself the record is invalid;
        //    where the ring supplied records past it, the file may hold one at `end`.
        let from = if e.end > e.file_valid { e.end } else { e.file_valid.advance(ALIGN as u64) };
        if let Some(lsn) = valid_record_at_or_after(file, from, e.file_end)? {
            let (path, offset) = file.locate(lsn).unwrap_or_default();
            why.push(format!(
                "a valid record follows at LSN {lsn} (byte {offset} of {}), so this is not the end of a torn write",
                path.display()
            ));
        }
        // 2. An earlier segment: synced before the next one began.
        let last = file.last_segment_start();
        if lost_from < last {
            why.push(format!(
                "it is in a segment before the last (which begins at LSN {last}), synced before that one began"
            ));
        }
    }
    // 3. The bounds of what the log held durably.
    if !e.valid_past.is_none() && e.end <= e.valid_past {
        why.push(format!(
            "the log held a record at LSN {}, the control file's redo point, durably before the control file was written",
            e.valid_past
        ));
    }
    if let Some(flushed) = e.ring_flushed.filter(|&f| e.end < f) {
        why.push(format!("the NVM log buffer says the log file held every byte below LSN {flushed}"));
    }
    if why.is_empty() {
        return Ok(None);
    }
    // Name the first byte lost: the damaged record, or the end of a log that stops early.
    let lsn = if lost_from < e.file_end { lost_from } else { e.end.min(e.file_end) };
    let (path, offset) = file.locate(lsn).unwrap_or_default();
    let what = if lost_from < e.file_end {
        if lost_from == e.file_valid {
            format!("the bytes there are not a record ({})", e.invalid)
        } else {
            "the bytes there are not a record, nor does the NVM log buffer hold one".to_string()
        }
    } else {
        format!("the log's valid records end there (LSN {})", e.end)
    };
    Ok(Some(Damage { lsn, file: path, offset, detail: format!("{what}; {}", why.join("; ")) }))
}

/// The first LSN in `from..to` (from a multiple of [`ALIGN`] on) where the log file holds
/// a valid record; records name their own LSN, so stale or random bytes pass as one only
/// with a matching LSN field and CRC-32C.
///
/// # Errors
/// Device errors reading the file.
pub(super) fn valid_record_at_or_after(file: &LogFile, from: Lsn, to: Lsn) -> Result<Option<Lsn>, DeviceError> {
    let mut at = Lsn::new(from.get().next_multiple_of(ALIGN as u64));
    let mut buf = vec![0u8; CHUNK_BYTES + RECORD_BYTES_MAX];
    while at < to {
        // Candidates `at..at + CHUNK_BYTES`; the bytes read after them let a record that
        // begins near the chunk's end decode whole.
        let want = (to.bytes_since(at) as usize).min(buf.len());
        let n = file.read(at, &mut buf[..want])?;
        let bytes = &buf[..n];
        for o in (0..n.min(CHUNK_BYTES)).step_by(ALIGN) {
            if o + HEADER_BYTES > n {
                break;
            }
            let lsn = at.advance(o as u64);
            // Cheap test first: the LSN field must name this position.
            if bytes[o + 8..o + 16] == lsn.to_le_bytes() && record::decode(lsn, &bytes[o..]).is_ok() {
                return Ok(Some(lsn));
            }
        }
        if n <= CHUNK_BYTES {
            break; // every candidate up to `to` was tried
        }
        at = at.advance(CHUNK_BYTES as u64);
    }
    Ok(None)
}

/// Appends [`Kind::Filler`] records to `file` from its end `from` up to at least `to`,
/// and syncs. Returns where the stream ends now.
///
/// # Errors
/// Device errors.
pub(super) fn fill(file: &LogFile, from: Lsn, to: Lsn) -> Result<Lsn, DeviceError> {
    debug_assert_eq!(file.end(), from);
    debug_assert!(from.get().is_multiple_of(ALIGN as u64), "LSN {from}");
    if to <= from {
        return Ok(from);
    }
    // A filler is at least a header: a gap shorter than that grows to one.
    let gap = to.bytes_since(from).next_multiple_of(ALIGN as u64).max(HEADER_BYTES as u64);
    let end = from.advance(gap);
    let mut chunk = Vec::with_capacity(CHUNK_BYTES + RECORD_BYTES_MAX);
    let mut at = from;
    while at < end {
        let left = end.bytes_since(at);
        let max = RECORD_BYTES_MAX as u64;
        // Leave no remainder too short to be a record.
        let len = if left <= max {
            left
        } else if left - max < HEADER_BYTES as u64 {
            left - HEADER_BYTES as u64
        } else {
            max
        } as usize;
        let o = chunk.len();
        chunk.resize(o + len, 0);
        let payload = vec![0u8; len - HEADER_BYTES];
        record::encode_into(at, &RecordHead::new(Kind::Filler, 0, Lsn::NONE), &payload, &mut chunk[o..]);
        at = at.advance(len as u64);
        if chunk.len() >= CHUNK_BYTES || at == end {
            file.append(Lsn::new(at.get() - chunk.len() as u64), &chunk)?;
            chunk.clear();
        }
    }
    file.sync()?;
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::LogFileConfig;
    use crate::device::log_file::{LOG_SEGMENT_BYTES_MIN, LOG_STREAM_START};

    fn log(dir: &std::path::Path) -> LogFile {
        let mut c = LogFileConfig::new(dir.join("log"));
        c.segment_bytes = LOG_SEGMENT_BYTES_MIN;
        LogFile::open(&c).unwrap()
    }

    fn records(file: &LogFile, from: Lsn, to: Lsn) -> Vec<Lsn> {
        let mut buf = vec![0u8; to.bytes_since(from) as usize];
        assert_eq!(file.read(from, &mut buf).unwrap(), buf.len());
        let mut at = from;
        let mut out = Vec::new();
        while at < to {
            let r = record::decode(at, &buf[at.bytes_since(from) as usize..]).unwrap();
            assert_eq!(r.head.kind, Kind::Filler);
            out.push(at);
            at = r.next_lsn();
        }
        assert_eq!(at, to);
        out
    }

    #[test]
    fn fillers_cover_any_gap_with_whole_records() {
        let tmp = tempfile::tempdir().unwrap();
        let file = log(tmp.path());
        let mut at = LOG_STREAM_START;
        for gap in [1u64, 8, 56, 64, RECORD_BYTES_MAX as u64 + 8, RECORD_BYTES_MAX as u64 + 80, 3 << 20] {
            let end = fill(&file, at, at.advance(gap)).unwrap();
            assert!(
                end >= at.advance(gap) && end.bytes_since(at.advance(gap)) < HEADER_BYTES as u64 + ALIGN as u64,
                "gap {gap}: {end}"
            );
            assert!(!records(&file, at, end).is_empty());
            at = end;
        }
        assert_eq!(file.end(), at);
    }

    #[test]
    fn a_valid_record_is_found_past_garbage_only_at_its_own_lsn() {
        let tmp = tempfile::tempdir().unwrap();
        let file = log(tmp.path());
        let start = LOG_STREAM_START;
        file.append(start, &[0xA5; 3000]).unwrap();
        let end = fill(&file, start.advance(3000), start.advance(3000 + 100)).unwrap();
        assert_eq!(valid_record_at_or_after(&file, start, end).unwrap(), Some(start.advance(3000)));
        assert_eq!(valid_record_at_or_after(&file, start.advance(3001), end).unwrap(), None);
        // Far past the first chunk.
        let far = file.end();
        file.append(far, &vec![0u8; 3 << 20]).unwrap();
        let after = fill(&file, file.end(), file.end().advance(1)).unwrap();
        assert_eq!(valid_record_at_or_after(&file, far, after).unwrap(), Some(far.advance(3 << 20)));
    }
}
