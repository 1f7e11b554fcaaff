//! What opening a log does before the first append: the NVM ring opened as
//! [`RingInit`] allows, then the log scanned to its last valid record, the torn tail
//! cut (damage that is not a torn tail refused or, with salvage, cut and reported),
//! and the ring's records copied into the file.
//!
//! Runs single-threaded inside `Wal::open`, before the flusher starts. Nothing is
//! changed on the media before step 3 has decided where the log may end.

use serde::Serialize;

use super::config::{RingInit, WalConfig};
use super::damage;
use super::error::WalError;
use super::read::FileScan;
use super::record::{self, Lsn};
use crate::device::log_file::LOG_STREAM_START;
use crate::device::{DeviceError, LogFile, NvmConfig, NvmRegion, NvmRing, OpenMode};

/// What recovery found at the end of the log.
#[derive(Clone, Debug, Serialize)]
pub struct Recovered {
    /// LSN of the oldest record held.
    pub start: Lsn,
    /// LSN after the last valid record: where appending continues.
    pub end: Lsn,
    /// Records found (file and ring).
    pub records: u64,
    /// Records that were only in the NVM ring and were copied to the file.
    pub from_ring: u64,
    /// Why the log ended where it did, if bytes followed the last valid record (they
    /// were cut): e.g. a torn write.
    pub tail: Option<String>,
    /// The log was damaged where it had been durable and was cut there all the same
    /// ([`WalConfig::salvage_damaged_log`]; `tail` says where and what went): the LSN
    /// of the cut, a record's start. Filler records follow what was kept, so that
    /// positions past it (a control file's redo point) need not be records' starts.
    pub salvaged: Option<Lsn>,
}

/// Opens the NVM ring `n` as `init` allows (see [`RingInit`]). Returns it and, when a
/// ring that could not be used was made afresh, why nothing was lost.
pub(super) fn open_ring(n: &NvmConfig, file: &LogFile, init: RingInit) -> Result<(NvmRing, Option<String>), WalError> {
    if init == RingInit::New {
        return Ok((NvmRing::open_or_format(NvmRegion::open(n)?, file.end())?, None));
    }
    // 1. The ring as it is: never created, never formatted.
    let mut existing = n.clone();
    existing.open_mode = OpenMode::Open;
    let why = match NvmRegion::open(&existing).and_then(NvmRing::open) {
        Ok(ring) => return Ok((ring, None)),
        Err(DeviceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            "the file is missing".to_string()
        }
        Err(DeviceError::SizeMismatch { file_bytes, config_bytes, .. }) => {
            format!("the file has {file_bytes} bytes, not the {config_bytes} configured (truncated?)")
        }
        Err(DeviceError::Corrupted { detail, .. }) => detail,
        Err(e) => return Err(e.into()),
    };
    // 2. Made afresh only when the log file provably holds every record: the last
    //    close moved the whole ring into it, and nothing was appended since.
    let RingInit::ClosedAt(closed_end) = init else {
        return Err(WalError::RingLost { path: n.path.clone(), why });
    };
    let file_end = file.end();
    if file_end != closed_end {
        let why = format!(
            "{why}; the log was closed cleanly at LSN {closed_end}, but the log file ends at {file_end}, so the \
             ring may have held records the file lacks"
        );
        return Err(WalError::RingLost { path: n.path.clone(), why });
    }
    match std::fs::remove_file(&n.path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(DeviceError::Io { op: "remove", path: n.path.clone(), source: e }.into()),
    }
    let mut fresh = n.clone();
    fresh.open_mode = OpenMode::Create;
    let ring = NvmRing::format(NvmRegion::open(&fresh)?, file_end)?;
    let note = format!(
        "the NVM log buffer {} could not be used ({why}); the log was closed cleanly at LSN {closed_end} with \
         every record in the log file, which still ends there: made afresh",
        n.path.display()
    );
    Ok((ring, Some(note)))
}

/// Scans the log file (and then the ring) from its start to the last valid record,
/// cuts the file there if what follows is a torn tail (`wal::damage`; else an error, or
/// with salvage a reported cut), and appends the ring's further records to the file.
pub(super) fn recover(file: &LogFile, ring: Option<&NvmRing>, cfg: &WalConfig) -> Result<Recovered, WalError> {
    let start = file.start();
    let file_end = file.end();
    let mut records = 0u64;
    let mut at = start;
    // 1. The log file, to its first bytes that are not a record.
    let mut scan = FileScan::new(start);
    let invalid = loop {
        match scan.decode(file, at, file_end)? {
            Ok(r) => {
                at = r.next_lsn();
                records += 1;
            }
            Err(e) => break e,
        }
    };
    let file_valid = at;
    assert!(
        start <= file_valid && file_valid <= file_end,
        "the log file's valid records end at LSN {file_valid}, outside its bytes {start}..{file_end}"
    );
    // 2. The ring: records past the file's valid end, which the flusher had not moved
    //    yet (or whose copy in the file is torn). Read only; written in step 5.
    let mut from_ring = 0u64;
    let mut copy = Vec::new();
    let ring_flushed = ring.map(NvmRing::flushed).transpose()?;
    if let Some(ring) = ring {
        let mut head = [0u8; record::HEADER_BYTES];
        // Records name their LSN, so stale ring bytes (an older pass) end the loop; a
        // pass holds at most one ring's worth of stream.
        loop {
            ring.read(at, &mut head)?;
            let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
            if !(record::HEADER_BYTES..=record::RECORD_BYTES_MAX).contains(&len)
                || at.advance(len as u64) > file_valid.advance(ring.capacity())
            {
                break;
            }
            let mut rec = vec![0u8; len];
            ring.read(at, &mut rec)?;
            if record::decode(at, &rec).is_err() {
                break;
            }
            copy.extend_from_slice(&rec);
            at = at.advance(len as u64);
            from_ring += 1;
        }
    }
    debug_assert!(at >= file_valid && at.bytes_since(file_valid) == copy.len() as u64, "ring records end at {at}");
    // 3. May the log end there? Nothing is changed before this is decided.
    let end =
        damage::LogEnd { file_valid, invalid: &invalid, file_end, end: at, valid_past: cfg.valid_past, ring_flushed };
    let damage = damage::assess(file, &end)?;
    let mut tail = None;
    if let Some(d) = &damage {
        if !cfg.salvage_damaged_log {
            return Err(WalError::Corrupted {
                file: d.file.clone(),
                offset: d.offset,
                lsn: d.lsn,
                detail: d.detail.clone(),
            });
        }
    } else if file_valid < file_end {
        tail = Some(format!(
            "log file: bytes {file_valid}..{file_end} after the last valid record are not a record ({invalid}); cut"
        ));
    }
    // 4. Cut the file after its last valid record.
    if file_valid < file_end {
        file.cut(file_valid)?;
    }
    // 5. The ring's records into the file.
    if !copy.is_empty() {
        file.append(file_valid, &copy)?;
        file.sync()?;
    }
    // 6. Salvage: LSNs continue past every byte the log held, so that none is handed
    //    out again below a page's LSN (`wal::damage`).
    let salvaged = damage.is_some();
    if let Some(d) = damage {
        let past = file_end.max(cfg.valid_past.advance(1)).max(ring_flushed.unwrap_or(Lsn::NONE));
        let resumed = damage::fill(file, at, past)?;
        tail = Some(format!(
            "salvaged: log file {} damaged at byte {} (LSN {}): {}; cut, {} bytes of the log dropped, the stream \
             continues at LSN {resumed} after filler records",
            d.file.display(),
            d.offset,
            d.lsn,
            d.detail,
            file_end.saturating_bytes_since(at),
        ));
        at = resumed;
    }
    if let Some(ring) = ring {
        ring.set_flushed(at)?;
        records += from_ring;
    }
    let salvaged = salvaged.then_some(file_valid);
    assert!(at >= file_valid, "recovery ends the log at LSN {at}, before its valid records end at {file_valid}");
    Ok(Recovered { start, end: at.max(LOG_STREAM_START), records, from_ring, tail, salvaged })
}
