//! The seal of a page in the SSD page file: its page id and a CRC-32C of its bytes, so
//! that a page torn by a crash in the middle of its write, corrupted on the medium, or
//! written to the wrong place is reported instead of used.
//!
//! The seal lives in bytes [`PAGE_SEAL_OFFSET`]`..+`[`PAGE_SEAL_BYTES`] (48..64) of the
//! page, which every page format leaves zero: the B+-tree node header and the catalog
//! header reserve them, a free-list page keeps its header before them and its ids after
//! them. So no page loses a byte of capacity and no B+-tree limit changes. Little endian:
//!
//! ```text
//! offset size field
//!     48    5 page id (40 bits; page ids stay below SSD_PAGES_MAX = 2^36)
//!     53    3 last-flush LSN, bits 32..56
//!     56    4 CRC-32C of the page with these four bytes left out (bytes 0..56 and 60..)
//!     60    4 last-flush LSN, bits 0..32
//! ```
//!
//! The *last-flush LSN* is the log's LSN when the page was written to SSD (0: unknown),
//! which NV-SQL's re-update-interval admission needs after the page is read back, also
//! after a restart (`docs/nvsql.md`). Format 3 of the page file had the page id in all
//! 8 bytes 48..56 and zeros in 60..64: since page ids are below 2^40, its pages read
//! here as the same page id with last-flush LSN 0 (unknown).
//!
//! The seal is put on a *copy* of the page on its way to SSD and checked and cleared on
//! the way back, so the callers above see exactly the bytes they wrote, with zeros in
//! the seal's place. A page of zeros is a page never written (the file grows with
//! zeros, and fresh pages start as zeros): it needs no seal. Any other page without a
//! valid seal is torn or corrupt.
//!
//! Checking is total: any bytes give `Ok` or a [`SealError`], never a panic.

use std::ops::Range;

use crate::ids::{Lsn, PageId};
use crate::limits::{PAGE_SEAL_BYTES, PAGE_SEAL_OFFSET, PAGE_SIZE_MIN_BYTES, SSD_PAGES_MAX};

/// The bytes of a page that hold its seal.
pub const SEAL_RANGE: Range<usize> = PAGE_SEAL_OFFSET..PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES;
const OFF_PID: usize = PAGE_SEAL_OFFSET;
const PID_BYTES: usize = 5;
const OFF_LSN_HIGH: usize = OFF_PID + PID_BYTES;
const LSN_HIGH_BYTES: usize = 3;
const OFF_CRC: usize = PAGE_SEAL_OFFSET + 8;
const OFF_LSN_LOW: usize = PAGE_SEAL_OFFSET + 12;
/// The largest last-flush LSN a seal holds (56 bits); a larger one is stored as this,
/// a lower bound.
pub const FLUSH_LSN_MAX: Lsn = Lsn::new((1 << 56) - 1);

const _: () = assert!(OFF_LSN_HIGH + LSN_HIGH_BYTES == OFF_CRC);
const _: () = assert!(OFF_LSN_LOW + 4 == PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES);
const _: () = assert!(SSD_PAGES_MAX <= 1 << (8 * PID_BYTES));
const _: () = assert!(PAGE_SEAL_OFFSET + PAGE_SEAL_BYTES <= PAGE_SIZE_MIN_BYTES);

/// What a page's seal says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sealed {
    /// A valid seal naming the page.
    Valid,
    /// All zeros: never written.
    Zero,
}

/// Why a page's seal does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The checksum does not match the bytes: a torn write or corruption.
    Checksum {
        /// The checksum in the seal.
        stored: u32,
        /// The checksum of the page's bytes as read.
        computed: u32,
    },
    /// The bytes are intact but belong to another page: a misdirected write.
    PageId {
        /// The page id the seal names.
        found: u64,
    },
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SealError::Checksum { stored, computed } => write!(
                f,
                "page checksum {stored:#010x} stored, {computed:#010x} computed (a torn write or corrupted bytes)"
            ),
            SealError::PageId { found } => write!(f, "the bytes are sealed as page {found} (a misdirected write)"),
        }
    }
}

/// True if the seal's bytes of `page` are zero, as every page format leaves them.
#[inline]
pub fn is_clear(page: &[u8]) -> bool {
    page[SEAL_RANGE].iter().all(|&b| b == 0)
}

/// CRC-32C of `page` without its checksum field.
#[inline]
fn checksum(page: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&page[..OFF_CRC]), &page[OFF_CRC + 4..])
}

/// Seals `page` (a copy on its way to SSD) as page `pid`.
///
/// # Panics
/// If the seal's bytes are not zero: the caller's page format wrote into them, and
/// the seal would silently destroy those bytes.
pub fn seal(page: &mut [u8], pid: PageId) {
    seal_flushed(page, pid, Lsn::NONE);
}

/// Seals `page` as page `pid` written when the log's LSN was `flush_lsn` ([`Lsn::NONE`]: unknown;
/// above [`FLUSH_LSN_MAX`] stored as that).
///
/// # Panics
/// As [`seal`].
pub fn seal_flushed(page: &mut [u8], pid: PageId, flush_lsn: Lsn) {
    assert!(
        is_clear(page),
        "{pid}: bytes {}..{} are reserved for the page seal but hold {:02x?}",
        SEAL_RANGE.start,
        SEAL_RANGE.end,
        &page[SEAL_RANGE]
    );
    debug_assert!(pid != PageId::SUPERBLOCK, "the superblock page has no seal");
    debug_assert!(pid.0 < SSD_PAGES_MAX, "{pid} past the page file's limit");
    page[OFF_PID..OFF_PID + PID_BYTES].copy_from_slice(&pid.0.to_le_bytes()[..PID_BYTES]);
    let lsn = flush_lsn.min(FLUSH_LSN_MAX).to_le_bytes();
    page[OFF_LSN_LOW..OFF_LSN_LOW + 4].copy_from_slice(&lsn[..4]);
    page[OFF_LSN_HIGH..OFF_LSN_HIGH + LSN_HIGH_BYTES].copy_from_slice(&lsn[4..4 + LSN_HIGH_BYTES]);
    let crc = checksum(page);
    page[OFF_CRC..OFF_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Checks the seal of `page` as read from page `pid`'s place.
///
/// # Errors
/// A [`SealError`] for a page that is neither validly sealed as `pid` nor all zeros.
pub fn check(page: &[u8], pid: PageId) -> Result<Sealed, SealError> {
    let stored = u32::from_le_bytes(page[OFF_CRC..OFF_CRC + 4].try_into().expect("4 bytes"));
    let computed = checksum(page);
    if stored != computed {
        // The rare path: a page never written has no seal.
        if page.iter().all(|&b| b == 0) {
            return Ok(Sealed::Zero);
        }
        return Err(SealError::Checksum { stored, computed });
    }
    let mut id = [0u8; 8];
    id[..PID_BYTES].copy_from_slice(&page[OFF_PID..OFF_PID + PID_BYTES]);
    let found = u64::from_le_bytes(id);
    if found != pid.0 {
        return Err(SealError::PageId { found });
    }
    Ok(Sealed::Valid)
}

/// The last-flush LSN in the seal of a checked page ([`Lsn::NONE`]: unknown, or a page
/// of format 3).
#[inline]
pub fn flush_lsn(page: &[u8]) -> Lsn {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&page[OFF_LSN_LOW..OFF_LSN_LOW + 4]);
    b[4..4 + LSN_HIGH_BYTES].copy_from_slice(&page[OFF_LSN_HIGH..OFF_LSN_HIGH + LSN_HIGH_BYTES]);
    Lsn::from_le_bytes(b)
}

/// Clears the seal of a checked page, giving back the bytes that were sealed.
#[inline]
pub fn clear(page: &mut [u8]) {
    page[SEAL_RANGE].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn page(fill: u8) -> Vec<u8> {
        let mut p = vec![fill; 4096];
        clear(&mut p);
        p
    }

    #[test]
    fn seal_check_clear_round_trip() {
        let original = page(0x5a);
        let mut p = original.clone();
        seal(&mut p, PageId(7));
        assert!(!is_clear(&p));
        assert_eq!(check(&p, PageId(7)), Ok(Sealed::Valid));
        assert_eq!(check(&p, PageId(8)), Err(SealError::PageId { found: 7 }));
        clear(&mut p);
        assert_eq!(p, original);
    }

    #[test]
    fn the_last_flush_lsn_round_trips_and_a_format_3_seal_reads_as_unknown() {
        for lsn in [0u64, 1, 0xffff_ffff, 0x1_0000_0000, 0x12_3456_789a_bcde, FLUSH_LSN_MAX.get()] {
            let lsn = Lsn::new(lsn);
            let mut p = page(0x33);
            seal_flushed(&mut p, PageId((1 << 36) - 1), lsn);
            assert_eq!(check(&p, PageId((1 << 36) - 1)), Ok(Sealed::Valid), "{lsn:#x}");
            assert_eq!(flush_lsn(&p), lsn);
        }
        let mut p = page(0x33);
        seal_flushed(&mut p, PageId(5), Lsn::MAX);
        assert_eq!(flush_lsn(&p), FLUSH_LSN_MAX, "saturates: a lower bound");
        // Format 3: page id in 8 bytes, CRC, zeros.
        let mut old = page(0x44);
        old[48..56].copy_from_slice(&77u64.to_le_bytes());
        let crc = checksum(&old);
        old[56..60].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(check(&old, PageId(77)), Ok(Sealed::Valid));
        assert_eq!(flush_lsn(&old), Lsn::NONE);
    }

    #[test]
    fn zero_pages_need_no_seal_and_others_do() {
        assert_eq!(check(&[0u8; 4096], PageId(3)), Ok(Sealed::Zero));
        let unsealed = page(1);
        assert!(matches!(check(&unsealed, PageId(3)), Err(SealError::Checksum { .. })));
    }

    #[test]
    fn every_flipped_byte_and_a_torn_half_are_caught() {
        let mut p = page(0);
        p.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 7 + 1) as u8);
        clear(&mut p);
        seal(&mut p, PageId(9));
        for at in [0, 47, 48, 55, 56, 59, 60, 63, 64, 2047, 4095] {
            let mut c = p.clone();
            c[at] ^= 0x01;
            assert!(check(&c, PageId(9)).is_err(), "byte {at}");
        }
        // The first half of a new version over the old one (a torn write).
        let mut newer = page(0xee);
        seal(&mut newer, PageId(9));
        let mut torn = p.clone();
        torn[..2048].copy_from_slice(&newer[..2048]);
        assert!(matches!(check(&torn, PageId(9)), Err(SealError::Checksum { .. })));
        // The first half of a page written over zeros.
        let mut torn = vec![0u8; 4096];
        torn[..2048].copy_from_slice(&newer[..2048]);
        assert!(matches!(check(&torn, PageId(9)), Err(SealError::Checksum { .. })));
    }

    #[test]
    #[should_panic(expected = "reserved for the page seal")]
    fn sealing_a_page_that_uses_the_seal_bytes_panics() {
        seal(&mut vec![1u8; 4096], PageId(2));
    }

    proptest! {
        #[test]
        fn checking_is_total(bytes in proptest::collection::vec(any::<u8>(), 4096), pid in any::<u64>()) {
            let _ = check(&bytes, PageId(pid));
        }
    }
}
