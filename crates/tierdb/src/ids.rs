//! Identifiers that cross module boundaries.

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
}
