//! Log records: a fixed 56-byte header and a payload, 8-byte aligned, CRC-checked.
//!
//! ```text
//!  offset size field
//!       0    4 CRC-32C of bytes 4 .. length
//!       4    4 length: header + payload + zero padding to a multiple of 8
//!       8    8 LSN: the record's own position in the log stream
//!      16    8 previous LSN of the same transaction (0: its first record)
//!      24    8 transaction id (0: not a transaction's record, e.g. a checkpoint)
//!      32    8 page id (0: not about one page)
//!      40    8 undo-next LSN (compensation records: the next record to undo)
//!      48    1 kind
//!      49    1 flags (zero)
//!      50    2 reserved (zero)
//!      52    4 payload length
//!      56      payload, then zeros to the length
//! ```
//!
//! A record names its own LSN, so bytes left over from an older pass of a ring buffer
//! or a torn write never pass for the record that should be there: decoding checks the
//! length, the CRC and that the LSN is the position it was read from. The payload's
//! meaning belongs to the layer that logged it (see `docs/wal.md`); the log treats it as
//! bytes.

use crate::ids::TxnId;
use crate::limits::CACHE_LINE_BYTES;

pub use crate::ids::Lsn;

/// Bytes of the fixed record header (table above); the payload starts here.
pub const HEADER_BYTES: usize = 56;
/// Records are padded to multiples of this.
pub const ALIGN: usize = 8;
/// The largest payload: a full image of the largest page plus room for its context.
pub const PAYLOAD_BYTES_MAX: usize = crate::limits::PAGE_SIZE_MAX_BYTES + 4 * CACHE_LINE_BYTES;
/// The largest record.
pub const RECORD_BYTES_MAX: usize = (HEADER_BYTES + PAYLOAD_BYTES_MAX).next_multiple_of(ALIGN);

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u8)]
pub enum Kind {
    /// A transaction began.
    Begin = 1,
    /// A transaction committed: durable once this record is.
    Commit = 2,
    /// A transaction decided to roll back (its undo follows as compensation records).
    Abort = 3,
    /// A transaction is finished (after commit, or after its rollback): nothing of it
    /// is left to do.
    End = 4,
    /// A change to one page, with what redoes and undoes it.
    Update = 5,
    /// A compensation record: the undo of an update, redo-only.
    Compensation = 6,
    /// A full image of a page (structure changes, torn-page protection): redo-only.
    PageImage = 7,
    /// A checkpoint began (its payload: the active transactions and dirty pages).
    CheckpointBegin = 8,
    /// The checkpoint that began at the record's previous LSN finished.
    CheckpointEnd = 9,
    /// A page was freed (redo only).
    PageFree = 10,
    /// The structure change whose images and frees carry this record's transaction
    /// field is complete: recovery applies them only if this record is in the log.
    SmoEnd = 11,
    /// The new contents of some cache lines of one page, logged before they are
    /// written in place (`nvm-direct`): redo-only, applied in log order.
    LineImage = 12,
    /// Pages written to SSD, each with its last-flush LSN: the page's SSD copy holds
    /// every change logged below it, so redo skips those records without reading the
    /// page (payload: pairs of page id and LSN, u64 each).
    PagesFlushed = 13,
    /// Bytes the log skips, of no meaning: a salvaged log (`wal::damage`) fills the
    /// stream up to past every byte it held before its cut with them, so that later
    /// LSNs stay above every page's.
    Filler = 14,
}

impl Kind {
    /// The kind stored as byte `b` in a record header; `None` for a byte that names
    /// no kind (0, or above 14).
    pub fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Begin,
            2 => Kind::Commit,
            3 => Kind::Abort,
            4 => Kind::End,
            5 => Kind::Update,
            6 => Kind::Compensation,
            7 => Kind::PageImage,
            8 => Kind::CheckpointBegin,
            9 => Kind::CheckpointEnd,
            10 => Kind::PageFree,
            11 => Kind::SmoEnd,
            12 => Kind::LineImage,
            13 => Kind::PagesFlushed,
            14 => Kind::Filler,
            _ => return None,
        })
    }
}

/// A record's fields other than its LSN, for appending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHead {
    /// The previous record of the same transaction ([`Lsn::NONE`]: this is its first, or the
    /// record belongs to no transaction).
    pub prev: Lsn,
    /// The transaction id ([`TxnId::NONE`]: none, e.g. a checkpoint; the top bit set,
    /// [`TxnId::SMO_BIT`], for a structure change's records).
    pub txn: TxnId,
    /// The page the record is about, as a raw page id (0: not about one page).
    pub page: u64,
    /// Compensation records: the next record of the transaction to undo ([`Lsn::NONE`]: none, or
    /// not a compensation record).
    pub undo_next: Lsn,
    /// What the record says.
    pub kind: Kind,
}

impl RecordHead {
    /// A record of `kind` for transaction `txn` following its record `prev` (a raw
    /// `u64` converts as [`TxnId::from_raw`]).
    pub fn new(kind: Kind, txn: impl Into<TxnId>, prev: Lsn) -> RecordHead {
        RecordHead { prev, txn: txn.into(), page: 0, undo_next: Lsn::NONE, kind }
    }

    /// This head, about page `page` (a raw page id).
    pub fn page(mut self, page: u64) -> RecordHead {
        self.page = page;
        self
    }

    /// This head with undo-next LSN `lsn` (compensation records).
    pub fn undo_next(mut self, lsn: Lsn) -> RecordHead {
        self.undo_next = lsn;
        self
    }
}

/// A decoded record that owns its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The record's own LSN: its byte position in the log stream.
    pub lsn: Lsn,
    /// Its header fields.
    pub head: RecordHead,
    /// The payload, without the padding (at most [`PAYLOAD_BYTES_MAX`] bytes).
    pub payload: Vec<u8>,
}

impl Record {
    /// The LSN of the record after this one.
    pub fn next_lsn(&self) -> Lsn {
        self.lsn.advance(encoded_len(self.payload.len()) as u64)
    }
}

/// Bytes a record with `payload_len` bytes of payload takes in the log.
#[inline]
pub const fn encoded_len(payload_len: usize) -> usize {
    (HEADER_BYTES + payload_len).next_multiple_of(ALIGN)
}

/// Writes the record at LSN `lsn` into `out` (exactly [`encoded_len`] bytes).
///
/// # Panics
/// If `out` has the wrong length or the payload is longer than [`PAYLOAD_BYTES_MAX`]
/// (callers check sizes first).
pub fn encode_into(lsn: Lsn, head: &RecordHead, payload: &[u8], out: &mut [u8]) {
    assert!(payload.len() <= PAYLOAD_BYTES_MAX, "a payload of {} bytes", payload.len());
    let len = encoded_len(payload.len());
    assert_eq!(out.len(), len);
    out[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    out[8..16].copy_from_slice(&lsn.to_le_bytes());
    out[16..24].copy_from_slice(&head.prev.to_le_bytes());
    out[24..32].copy_from_slice(&head.txn.get().to_le_bytes());
    out[32..40].copy_from_slice(&head.page.to_le_bytes());
    out[40..48].copy_from_slice(&head.undo_next.to_le_bytes());
    out[48] = head.kind as u8;
    out[49..52].fill(0);
    out[52..56].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    out[HEADER_BYTES..HEADER_BYTES + payload.len()].copy_from_slice(payload);
    out[HEADER_BYTES + payload.len()..].fill(0);
    let crc = crc32c::crc32c(&out[4..]);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Why the bytes at an LSN are not a record: the log's valid part ends before them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// Fewer bytes than a header: the end of the bytes given (or of the log).
    #[error("{have} bytes left, fewer than a record header")]
    Short {
        /// Bytes available from the LSN on.
        have: usize,
    },
    /// The length field is not a multiple of `ALIGN` in
    /// `HEADER_BYTES..=RECORD_BYTES_MAX`: zeros or garbage, not a record.
    #[error("length field {len} is not a multiple of {ALIGN} between {HEADER_BYTES} and {RECORD_BYTES_MAX}")]
    BadLength {
        /// The length field as stored.
        len: usize,
    },
    /// The length field is plausible but the bytes end before it: a record cut short,
    /// or only the front of it read so far.
    #[error("record of {len} bytes, only {have} present (torn write)")]
    Truncated {
        /// The record length its header states.
        len: usize,
        /// Bytes available from the LSN on.
        have: usize,
    },
    /// The checksum over bytes `4..len` does not match the stored one.
    #[error("CRC-32C {found:#010x}, the record says {stored:#010x}")]
    BadCrc {
        /// The CRC-32C computed over the bytes.
        found: u32,
        /// The CRC-32C stored in the record.
        stored: u32,
    },
    /// A valid record, but for another LSN: bytes left from an earlier pass of the NVM
    /// ring, or a record that was moved.
    #[error("the record says LSN {stored}, it lies at {at} (stale bytes)")]
    WrongLsn {
        /// The LSN the record names.
        stored: Lsn,
        /// The LSN it was read at.
        at: Lsn,
    },
    /// The checksum holds, but the kind is unknown, the flags or reserved bytes are
    /// not zero, or the payload length does not match the record length.
    #[error("unknown kind {kind}, nonzero reserved bytes or a payload length {payload} that does not fit")]
    BadFields {
        /// The kind byte as stored.
        kind: u8,
        /// The payload length field as stored.
        payload: usize,
    },
}

/// Decodes the record that should start at LSN `at` from the front of `bytes`.
///
/// # Errors
/// [`Invalid`] says why these bytes are not that record. Never panics on any input.
pub fn decode(at: Lsn, bytes: &[u8]) -> Result<Record, Invalid> {
    if bytes.len() < HEADER_BYTES {
        return Err(Invalid::Short { have: bytes.len() });
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    let len = u32_at(4) as usize;
    if !len.is_multiple_of(ALIGN) || !(HEADER_BYTES..=RECORD_BYTES_MAX).contains(&len) {
        return Err(Invalid::BadLength { len });
    }
    if bytes.len() < len {
        return Err(Invalid::Truncated { len, have: bytes.len() });
    }
    let (stored, found) = (u32_at(0), crc32c::crc32c(&bytes[4..len]));
    if stored != found {
        return Err(Invalid::BadCrc { found, stored });
    }
    let lsn = Lsn::new(u64_at(8));
    if lsn != at {
        return Err(Invalid::WrongLsn { stored: lsn, at });
    }
    let payload_len = u32_at(52) as usize;
    let kind = Kind::from_u8(bytes[48]);
    if kind.is_none() || bytes[49..52] != [0, 0, 0] || encoded_len(payload_len) != len {
        return Err(Invalid::BadFields { kind: bytes[48], payload: payload_len });
    }
    Ok(Record {
        lsn,
        head: RecordHead {
            prev: Lsn::new(u64_at(16)),
            txn: TxnId::from_raw(u64_at(24)),
            page: u64_at(32),
            undo_next: Lsn::new(u64_at(40)),
            kind: kind.expect("checked"),
        },
        payload: bytes[HEADER_BYTES..HEADER_BYTES + payload_len].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn encode(lsn: Lsn, head: &RecordHead, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; encoded_len(payload.len())];
        encode_into(lsn, head, payload, &mut b);
        b
    }

    #[test]
    fn round_trip_and_each_kind_of_damage() {
        let lsn = |n| Lsn::new(n);
        let head = RecordHead::new(Kind::Update, 7, lsn(128)).page(42).undo_next(Lsn::NONE);
        let b = encode(lsn(4096), &head, b"hello, log");
        assert_eq!(b.len(), 72);
        assert_eq!(
            (&b[8..16], &b[16..24], &b[40..48]),
            (&4096u64.to_le_bytes()[..], &128u64.to_le_bytes()[..], &[0u8; 8][..])
        );
        let r = decode(lsn(4096), &b).unwrap();
        assert_eq!(
            (r.lsn, r.head, r.payload.as_slice(), r.next_lsn()),
            (lsn(4096), head, &b"hello, log"[..], lsn(4168))
        );
        assert_eq!(decode(lsn(4104), &b), Err(Invalid::WrongLsn { stored: lsn(4096), at: lsn(4104) }));
        assert!(matches!(decode(lsn(4096), &b[..60]), Err(Invalid::Truncated { len: 72, have: 60 })));
        assert!(matches!(decode(lsn(4096), &b[..20]), Err(Invalid::Short { .. })));
        let mut bad = b.clone();
        bad[60] ^= 1;
        assert!(matches!(decode(lsn(4096), &bad), Err(Invalid::BadCrc { .. })));
        assert!(matches!(decode(lsn(4096), &[0u8; 64]), Err(Invalid::BadLength { len: 0 })));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(at in any::<u64>(), bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(Lsn::new(at), &bytes);
        }

        #[test]
        fn any_record_round_trips(lsn in any::<u64>(), txn in any::<u64>(), prev in any::<u64>(), page in any::<u64>(),
                                   kind in 1u8..=14, payload in proptest::collection::vec(any::<u8>(), 0..500)) {
            let head = RecordHead::new(Kind::from_u8(kind).unwrap(), txn, Lsn::new(prev)).page(page);
            let lsn = Lsn::new(lsn);
            let r = decode(lsn, &encode(lsn, &head, &payload)).unwrap();
            prop_assert_eq!(r.head, head);
            prop_assert_eq!(r.payload, payload);
        }
    }
}
