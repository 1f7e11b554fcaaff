//! The payloads of the database's log records: how `db/` encodes what a record says
//! beyond its header, and how redo, undo and the flush-record scan decode it. The log
//! itself treats payloads as bytes (`record.rs`); `docs/wal.md` lists each kind's.
//!
//! | kind                         | payload                                          |
//! |------------------------------|--------------------------------------------------|
//! | `Update`, `Compensation`     | a change ([`encode_change`])                     |
//! | `PageImage`                  | the page's bytes, whole                          |
//! | `LineImage`                  | some lines of one page ([`encode_lines`])        |
//! | `PagesFlushed`               | page and last-flush LSN pairs ([`encode_flushed`]) |
//! | `CheckpointBegin`            | the redo point ([`encode_checkpoint_begin`])     |
//! | `PageFree`, `SmoEnd`, `Commit`, `End` | empty                                   |
//!
//! Every decoder takes bytes read back from a device: it returns [`BadPayload`] for
//! any input it cannot use and never panics. Encoders assert what their callers must
//! hold (a patch as long as the bytes it replaces, a line image inside its page).
//! All integers are little-endian. Plain functions: no state, no locks.

use crate::ids::PageId;
use crate::limits::CACHE_LINE_BYTES;
use crate::wal::Lsn;

/// A payload that does not decode (its record's checksum holds): the database reports
/// it as a bad record (`DbError::BadRecord`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("log record at LSN {lsn}: {what}")]
pub struct BadPayload {
    /// The record's LSN.
    pub lsn: Lsn,
    /// What is wrong with its payload.
    pub what: String,
}

/// What a change payload does to its key (its operation byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ChangeOp {
    /// The key gets a whole new value.
    Put = 1,
    /// The key is removed.
    Delete = 2,
    /// Bytes of the key's value are overwritten in place.
    Patch = 3,
}

/// Encodes an update or compensation payload:
///
/// ```text
/// root u64 | op u8 (1 put, 2 delete, 3 patch) | key length u16 | key
///   | patch only: offset u32 | value length u32 | value
///   | old present u8 (0 | 1) | if 1: old length u32 | old
/// ```
///
/// A put carries the whole new value and the old one (or none: an insert); a delete
/// the old value (and an empty value); a patch the bytes written at `patch_offset` and
/// the bytes they replaced.
///
/// # Panics
/// A patch without an offset or without old bytes as long as its value, an offset for
/// another operation, a key longer than `u16::MAX`, an offset beyond `u32::MAX`.
pub fn encode_change(
    root: PageId,
    op: ChangeOp,
    key: &[u8],
    patch_offset: Option<usize>,
    value: &[u8],
    old: Option<&[u8]>,
) -> Vec<u8> {
    assert_eq!(op == ChangeOp::Patch, patch_offset.is_some(), "{op:?} with patch offset {patch_offset:?}");
    if op == ChangeOp::Patch {
        let old_len = old.map(<[u8]>::len);
        assert_eq!(old_len, Some(value.len()), "a patch replaces as many bytes as it writes");
    }
    let key_len = u16::try_from(key.len()).unwrap_or_else(|_| panic!("a key of {} bytes", key.len()));
    let mut p = Vec::with_capacity(28 + key.len() + value.len() + old.map_or(0, <[u8]>::len));
    p.extend_from_slice(&root.0.to_le_bytes());
    p.push(op as u8);
    p.extend_from_slice(&key_len.to_le_bytes());
    p.extend_from_slice(key);
    if let Some(offset) = patch_offset {
        let offset = u32::try_from(offset).expect("an offset inside a value on one page");
        p.extend_from_slice(&offset.to_le_bytes());
    }
    p.extend_from_slice(&(value.len() as u32).to_le_bytes());
    p.extend_from_slice(value);
    match old {
        Some(o) => {
            p.push(1);
            p.extend_from_slice(&(o.len() as u32).to_le_bytes());
            p.extend_from_slice(o);
        }
        None => p.push(0),
    }
    p
}

/// A decoded update or compensation payload.
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    /// The root of the tree the key is in.
    pub root: PageId,
    /// The key is removed.
    pub delete: bool,
    /// A patch: `value` replaced bytes `offset..offset + value.len()` of the value,
    /// which were `old` (as long as `value`).
    pub patch_offset: Option<usize>,
    /// The key.
    pub key: Vec<u8>,
    /// The new value (a put), the bytes written (a patch), empty (a delete).
    pub value: Vec<u8>,
    /// The old value (a put over a key, a delete), the bytes replaced (a patch).
    pub old: Option<Vec<u8>>,
}

/// Decodes an update or compensation payload ([`encode_change`]).
///
/// # Errors
/// [`BadPayload`] for bytes that are not a change (short, an unknown operation, a
/// patch whose old bytes are not as long as its value, trailing flags other than 0/1).
pub fn decode_change(lsn: Lsn, p: &[u8]) -> Result<Change, BadPayload> {
    let bad = || BadPayload { lsn, what: "a change payload that does not decode".into() };
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], BadPayload> {
        let s = p.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let root = PageId(u64::from_le_bytes(take(8)?.try_into().expect("8")));
    let op = take(1)?[0];
    if !(ChangeOp::Put as u8..=ChangeOp::Patch as u8).contains(&op) {
        return Err(bad());
    }
    let klen = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
    let key = take(klen)?.to_vec();
    let patch_offset = match op {
        o if o == ChangeOp::Patch as u8 => Some(u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize),
        _ => None,
    };
    let vlen = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
    let value = take(vlen)?.to_vec();
    let old = match take(1)?[0] {
        0 => None,
        1 => {
            let olen = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
            Some(take(olen)?.to_vec())
        }
        _ => return Err(bad()),
    };
    if op == ChangeOp::Patch as u8 && old.as_ref().is_none_or(|o| o.len() != value.len()) {
        return Err(bad());
    }
    Ok(Change { root, delete: op == ChangeOp::Delete as u8, patch_offset, key, value, old })
}

/// A line image's payload: the page's line count (u16), a bitmap of the lines present,
/// then those lines in order. `runs` are `(first line, bytes)`, whole lines each,
/// in ascending order.
///
/// # Panics
/// A run past `page_lines`.
pub fn encode_lines(page_lines: usize, runs: &[(usize, &[u8])]) -> Vec<u8> {
    const LINE: usize = CACHE_LINE_BYTES;
    let map_bytes = page_lines.div_ceil(8);
    let mut p = vec![0u8; 2 + map_bytes];
    p[0..2].copy_from_slice(&(page_lines as u16).to_le_bytes());
    for &(first, bytes) in runs {
        let end = first + bytes.len() / LINE;
        assert!(end <= page_lines, "lines {first}..{end} of a page of {page_lines} lines");
        for l in first..end {
            p[2 + l / 8] |= 1 << (l % 8);
        }
        p.extend_from_slice(bytes);
    }
    p
}

/// Decodes a line image: `(line, bytes)` for each line present.
///
/// # Errors
/// [`BadPayload`] for a payload shorter or longer than its bitmap says.
pub fn decode_lines(lsn: Lsn, p: &[u8]) -> Result<Vec<(usize, &[u8])>, BadPayload> {
    const LINE: usize = CACHE_LINE_BYTES;
    let bad = |what: &str| BadPayload { lsn, what: format!("a line image {what}") };
    let n = u16::from_le_bytes(p.get(0..2).ok_or_else(|| bad("without a header"))?.try_into().expect("2")) as usize;
    let map = p.get(2..2 + n.div_ceil(8)).ok_or_else(|| bad("with a short bitmap"))?;
    let mut at = 2 + map.len();
    let mut out = Vec::new();
    for l in (0..n).filter(|l| map[l / 8] & (1 << (l % 8)) != 0) {
        out.push((l, p.get(at..at + LINE).ok_or_else(|| bad("shorter than its bitmap says"))?));
        at += LINE;
    }
    if at != p.len() {
        return Err(bad("longer than its bitmap says"));
    }
    Ok(out)
}

/// A flush record's payload: page id and last-flush LSN of each page, u64 each.
pub fn encode_flushed(pages: &[(PageId, Lsn)]) -> Vec<u8> {
    let mut p = Vec::with_capacity(pages.len() * 16);
    for (pid, lsn) in pages {
        p.extend_from_slice(&pid.0.to_le_bytes());
        p.extend_from_slice(&lsn.to_le_bytes());
    }
    p
}

/// Decodes a flush record: `(page, last-flush LSN)` pairs.
///
/// # Errors
/// [`BadPayload`] for a length that is not a multiple of 16.
pub fn decode_flushed(lsn: Lsn, p: &[u8]) -> Result<impl Iterator<Item = (PageId, Lsn)> + '_, BadPayload> {
    if !p.len().is_multiple_of(16) {
        let what = format!("a flush record of {} bytes, not pairs of 16", p.len());
        return Err(BadPayload { lsn, what });
    }
    Ok(p.chunks_exact(16).map(|c| {
        let pid = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
        (PageId(pid), Lsn::from_le_bytes(c[8..].try_into().expect("8 bytes")))
    }))
}

/// A checkpoint-begin record's payload: the checkpoint's redo point (u64).
pub fn encode_checkpoint_begin(redo: Lsn) -> [u8; 8] {
    redo.to_le_bytes()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn each_change_round_trips() {
        let root = PageId(9);
        type Case<'a> = (ChangeOp, Option<usize>, &'a [u8], Option<&'a [u8]>);
        let cases: [Case<'_>; 4] = [
            (ChangeOp::Put, None, b"new", None),
            (ChangeOp::Put, None, b"new", Some(b"older")),
            (ChangeOp::Delete, None, b"", Some(b"gone")),
            (ChangeOp::Patch, Some(3), b"ab", Some(b"xy")),
        ];
        for (op, offset, value, old) in cases {
            let c = decode_change(Lsn::new(8), &encode_change(root, op, b"key", offset, value, old)).unwrap();
            let want = Change {
                root,
                delete: op == ChangeOp::Delete,
                patch_offset: offset,
                key: b"key".to_vec(),
                value: value.to_vec(),
                old: old.map(<[u8]>::to_vec),
            };
            assert_eq!(c, want, "{op:?}");
        }
    }

    #[test]
    fn lines_and_flushed_round_trip() {
        let line = [7u8; CACHE_LINE_BYTES];
        let two = [[1u8; CACHE_LINE_BYTES], [2u8; CACHE_LINE_BYTES]].concat();
        let p = encode_lines(64, &[(0, &line), (10, &two)]);
        let lines = decode_lines(Lsn::new(16), &p).unwrap();
        assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [0, 10, 11]);
        assert_eq!(lines[2].1, &[2u8; CACHE_LINE_BYTES][..]);
        assert!(decode_lines(Lsn::new(16), &p[..p.len() - 1]).is_err());
        let pages = [(PageId(3), Lsn::new(100)), (PageId(4), Lsn::new(200))];
        let p = encode_flushed(&pages);
        assert_eq!(&p[8..16], &100u64.to_le_bytes(), "an LSN is stored as a little-endian u64");
        assert_eq!(decode_flushed(Lsn::new(24), &p).unwrap().collect::<Vec<_>>(), pages);
        assert_eq!(decode_flushed(Lsn::new(24), &p[..15]).err().map(|e| e.lsn), Some(Lsn::new(24)));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_payloads_never_panics(lsn in any::<u64>(), p in proptest::collection::vec(any::<u8>(), 0..300)) {
            let lsn = Lsn::new(lsn);
            let _ = decode_change(lsn, &p);
            let _ = decode_lines(lsn, &p);
            let _ = decode_flushed(lsn, &p).map(Iterator::count);
        }
    }
}
