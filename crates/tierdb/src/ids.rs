//! Identifiers that cross module boundaries.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// A page of the database: page `n` lives at byte `n x page size` of the SSD file.
/// Page 0 holds the superblock and is never a data page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageId(pub u64);

impl PageId {
    /// The superblock's page.
    pub const SUPERBLOCK: PageId = PageId(0);
    /// The catalog of named trees: the first page every page source allocates.
    pub const CATALOG: PageId = PageId(1);

    /// The page number: the page lives at byte `get() x page size` of the SSD file.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "page {}", self.0)
    }
}

/// The id a log record carries in its transaction field: a transaction's, a structure
/// change's, or none. On media it is 8 little-endian bytes (`wal/record.rs`).
///
/// ```text
///  bit 63     : SMO bit: set for a structure change's records (its page images,
///               frees and end record), clear for a transaction's
///  bits 0..63 : the sequence number; 0 with the SMO bit clear is "no transaction"
///               (checkpoints, flush records, line images)
/// ```
///
/// Transactions and structure changes are numbered from 1 apart, each in its own
/// sequence; ids continue after a reopen (the control file keeps a lower bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TxnId(u64);

impl TxnId {
    /// The transaction field of a record that belongs to no transaction.
    pub const NONE: TxnId = TxnId(0);
    /// The bit that marks a structure change's id.
    pub const SMO_BIT: u64 = 1 << 63;

    /// Transaction `seq` (from 1).
    ///
    /// # Panics
    /// In debug builds, if `seq` is 0 or has the SMO bit set.
    pub fn new(seq: u64) -> TxnId {
        debug_assert!(seq != 0 && seq & Self::SMO_BIT == 0, "transaction id {seq:#x}: 0 or SMO bit set");
        TxnId(seq)
    }

    /// Structure change `seq` (from 1): the SMO bit set.
    ///
    /// # Panics
    /// In debug builds, if `seq` is 0 or has the SMO bit set already.
    pub fn smo(seq: u64) -> TxnId {
        debug_assert!(seq != 0 && seq & Self::SMO_BIT == 0, "structure change id {seq:#x}: 0 or SMO bit set");
        TxnId(Self::SMO_BIT | seq)
    }

    /// The id as a record header stores it: any value (a decoder of bytes from a
    /// device must not panic).
    pub const fn from_raw(raw: u64) -> TxnId {
        TxnId(raw)
    }

    /// The raw value, as a record header stores it (SMO bit included).
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The record belongs to no transaction.
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// A structure change's id.
    pub const fn is_smo(self) -> bool {
        self.0 & Self::SMO_BIT != 0
    }

    /// The sequence number, without the SMO bit.
    pub const fn seq(self) -> u64 {
        self.0 & !Self::SMO_BIT
    }
}

/// A raw id as a record header stores it ([`TxnId::from_raw`]): what callers that
/// append records of their own (log benchmarks, tests) pass.
impl From<u64> for TxnId {
    fn from(raw: u64) -> TxnId {
        TxnId(raw)
    }
}

impl std::fmt::Display for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.is_none(), self.is_smo()) {
            (true, _) => write!(f, "no transaction"),
            (false, true) => write!(f, "structure change {}", self.seq()),
            (false, false) => write!(f, "transaction {}", self.0),
        }
    }
}

/// The raw value in hex (log dumps show the SMO bit so).
impl std::fmt::LowerHex for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// A frame of the NVM pool (`buffer::nvm_pool`): frame `n`'s header is the pool's
/// `n`-th 64-byte header and its page the `n`-th page-sized block of data. Slots are
/// never stored on media (a frame's header names its page, not its slot); in DRAM the
/// page table packs one into a tagged word (`buffer::table`) and a DRAM frame's
/// metadata keeps its page's slot in an `AtomicU32`, with `u32::MAX` for "none"
/// ([`NvmSlot::from_raw`] / [`NvmSlot::raw`] convert there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct NvmSlot(u32);

impl NvmSlot {
    /// The raw value that means "no slot" where a slot is kept as a `u32`.
    pub const NONE_RAW: u32 = u32::MAX;

    /// Slot `n` of the pool.
    ///
    /// # Panics
    /// In debug builds, if `n` is [`NvmSlot::NONE_RAW`].
    #[inline]
    pub const fn new(n: u32) -> NvmSlot {
        debug_assert!(n != Self::NONE_RAW, "u32::MAX is no NVM slot");
        NvmSlot(n)
    }

    /// Slot `i` of the pool, from an index into it.
    ///
    /// # Panics
    /// In debug builds, if `i` does not fit a slot.
    #[inline]
    pub fn from_index(i: usize) -> NvmSlot {
        debug_assert!(i < Self::NONE_RAW as usize, "NVM frame index {i} does not fit a slot");
        NvmSlot(i as u32)
    }

    /// The slot a raw `u32` names, `None` for [`NvmSlot::NONE_RAW`].
    #[inline]
    pub const fn from_raw(raw: u32) -> Option<NvmSlot> {
        if raw == Self::NONE_RAW { None } else { Some(NvmSlot(raw)) }
    }

    /// `slot` as a raw `u32`, [`NvmSlot::NONE_RAW`] for `None`.
    #[inline]
    pub const fn raw(slot: Option<NvmSlot>) -> u32 {
        match slot {
            Some(s) => s.0,
            None => Self::NONE_RAW,
        }
    }

    /// The slot's number.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The slot's index into the pool.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The slot's number, as messages print it ("NVM frame 3").
impl std::fmt::Display for NvmSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// A log sequence number: a byte position in the log stream. On media (log records,
/// NVM frame headers, SSD page seals, the control file) it is 8 little-endian bytes
/// ([`Lsn::to_le_bytes`]).
///
/// The stream's first byte has LSN `device::log_file::LOG_STREAM_START` (64), so
/// [`Lsn::NONE`] (0) is never a record's position: a field holding it means "no
/// record" (a transaction's first record has no previous one, a page never logged has
/// no page LSN). Any `u64` is a valid `Lsn` otherwise, so decoders of bytes from a
/// device never panic. Comparisons are those of the `u64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(transparent)]
pub struct Lsn(u64);

impl Lsn {
    /// No record: below every record's LSN.
    pub const NONE: Lsn = Lsn(0);
    /// Above every LSN: the identity of a minimum.
    pub const MAX: Lsn = Lsn(u64::MAX);

    /// The LSN of byte `pos` of the log stream (any value: it may come from a device).
    #[inline]
    pub const fn new(pos: u64) -> Lsn {
        Lsn(pos)
    }

    /// The byte position in the log stream.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// True for [`Lsn::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The LSN `bytes` further on in the stream.
    ///
    /// # Panics
    /// In debug builds, if the position overflows (a stream of 2^64 bytes is a bug).
    #[inline]
    pub const fn advance(self, bytes: u64) -> Lsn {
        debug_assert!(self.0.checked_add(bytes).is_some(), "LSN overflow");
        Lsn(self.0.wrapping_add(bytes))
    }

    /// The bytes of the stream from `earlier` to `self`.
    ///
    /// # Panics
    /// In debug builds, if `earlier` is past `self`.
    #[inline]
    pub const fn bytes_since(self, earlier: Lsn) -> u64 {
        debug_assert!(earlier.0 <= self.0, "an earlier LSN past a later one");
        self.0.wrapping_sub(earlier.0)
    }

    /// The bytes of the stream from `earlier` to `self`, `None` if `earlier` is past `self`.
    #[inline]
    pub const fn checked_bytes_since(self, earlier: Lsn) -> Option<u64> {
        self.0.checked_sub(earlier.0)
    }

    /// The bytes of the stream from `earlier` to `self`, 0 if `earlier` is past `self`.
    #[inline]
    pub const fn saturating_bytes_since(self, earlier: Lsn) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The LSN as stored on media: 8 little-endian bytes.
    #[inline]
    pub const fn to_le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }

    /// The LSN stored as 8 little-endian bytes (any bytes decode).
    #[inline]
    pub const fn from_le_bytes(b: [u8; 8]) -> Lsn {
        Lsn(u64::from_le_bytes(b))
    }
}

/// The byte position, as messages and log dumps print it.
impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// The byte position in hex.
impl std::fmt::LowerHex for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// An `AtomicU64` that holds an [`Lsn`] (frame metadata, the log's durable LSN): the
/// atomic stays a `u64` (some live in mapped NVM), these convert at the boundary.
pub trait AtomicLsn {
    /// Loads the LSN.
    fn load_lsn(&self, order: Ordering) -> Lsn;
    /// Stores `lsn`.
    fn store_lsn(&self, lsn: Lsn, order: Ordering);
    /// Raises the LSN to `lsn` if it is below; returns the previous LSN.
    fn fetch_max_lsn(&self, lsn: Lsn, order: Ordering) -> Lsn;
}

impl AtomicLsn for AtomicU64 {
    #[inline]
    fn load_lsn(&self, order: Ordering) -> Lsn {
        Lsn(self.load(order))
    }

    #[inline]
    fn store_lsn(&self, lsn: Lsn, order: Ordering) {
        self.store(lsn.0, order);
    }

    #[inline]
    fn fetch_max_lsn(&self, lsn: Lsn, order: Ordering) -> Lsn {
        Lsn(self.fetch_max(lsn.0, order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_id_bits() {
        let t = TxnId::new(7);
        assert!(!t.is_smo() && !t.is_none());
        assert_eq!((t.get(), t.seq(), t.to_string()), (7, 7, "transaction 7".to_string()));
        let s = TxnId::smo(3);
        assert!(s.is_smo());
        assert_eq!((s.get(), s.seq(), s.to_string()), (TxnId::SMO_BIT | 3, 3, "structure change 3".to_string()));
        assert_eq!(format!("{s:#x}"), "0x8000000000000003");
        assert!(TxnId::NONE.is_none() && !TxnId::NONE.is_smo());
        assert_eq!(TxnId::from_raw(s.get()), s);
        assert_eq!(serde_json::to_string(&t).unwrap(), "7");
    }

    #[test]
    fn lsn_encoding_order_and_display() {
        let a = Lsn::new(4096);
        assert_eq!(a.to_le_bytes(), 4096u64.to_le_bytes(), "the on-media bytes of a u64");
        assert_eq!(Lsn::from_le_bytes(a.to_le_bytes()), a);
        assert_eq!(Lsn::from_le_bytes([0xff; 8]), Lsn::MAX);
        let b = a.advance(72);
        assert_eq!((b.get(), b.bytes_since(a), a.saturating_bytes_since(b)), (4168, 72, 0));
        assert_eq!((b.checked_bytes_since(a), a.checked_bytes_since(b)), (Some(72), None));
        assert!(Lsn::NONE < a && a < b && b < Lsn::MAX);
        assert_eq!(a.max(b), b);
        assert!(Lsn::NONE.is_none() && !a.is_none() && Lsn::default().is_none());
        assert_eq!(
            (a.to_string(), format!("LSN {b}"), format!("{a:>6}")),
            ("4096".into(), "LSN 4168".into(), "  4096".into())
        );
        assert_eq!(format!("{a:#x}"), "0x1000");
        assert_eq!(serde_json::to_string(&a).unwrap(), "4096");
        let at = AtomicU64::new(0);
        assert_eq!(at.fetch_max_lsn(b, Ordering::Relaxed), Lsn::NONE);
        assert_eq!(at.fetch_max_lsn(a, Ordering::Relaxed), b);
        assert_eq!(at.load_lsn(Ordering::Relaxed), b);
        at.store_lsn(a, Ordering::Relaxed);
        assert_eq!(at.load(Ordering::Relaxed), 4096);
    }

    #[test]
    fn nvm_slot_index_raw_and_display() {
        let s = NvmSlot::new(3);
        assert_eq!((s.get(), s.index(), NvmSlot::from_index(3)), (3, 3, s));
        assert_eq!((NvmSlot::from_raw(3), NvmSlot::from_raw(u32::MAX)), (Some(s), None));
        assert_eq!((NvmSlot::raw(Some(s)), NvmSlot::raw(None)), (3, NvmSlot::NONE_RAW));
        assert!(NvmSlot::new(0) < s && s < NvmSlot::new(4));
        assert_eq!(format!("NVM frame {s}"), "NVM frame 3");
    }
}
