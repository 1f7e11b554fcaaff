//! The superblock of the SSD page file: what the file is and how it was made.
//!
//! It lives in page 0, in two slots of [`SUPERBLOCK_SLOT_BYTES`] each (bytes 0..512
//! and 512..1024). Writes alternate between the slots by generation, so a write torn
//! by a crash leaves the other slot, one generation older, intact; a reader takes the
//! valid slot with the higher generation. A slot fits in one 512-byte sector, which
//! devices write atomically in practice; the alternation covers those that do not.
//!
//! Slot layout (little endian; `docs/format.md` has the same table):
//!
//! ```text
//! offset size field
//!      0    8 magic "TIERDBPF"
//!      8    4 format version
//!     12    4 page size, bytes
//!     16    8 generation (incremented by every superblock write)
//!     24    8 page count (pages of the file in use, page 0 included)
//!     32    8 created, seconds since the Unix epoch
//!     40    8 database id (random at creation)
//!     48    8 catalog root page id (0 = none)
//!     56    8 free-list head: first page of the free-page list (0 = no free page)
//!     64   32 creator: the tierdb version that created the file, NUL-padded
//!     96    8 pages allocated: ids below it have been handed out (0 = page count)
//!    104    8 free pages the free-page list names (its own pages not included)
//!    112  396 reserved, zero
//!    508    4 CRC-32C of bytes 0..508
//! ```

use crate::limits::SUPERBLOCK_SLOT_BYTES;

/// The first 8 bytes of each superblock slot: marks a tierdb page file.
pub const MAGIC: [u8; 8] = *b"TIERDBPF";
/// 2: every data page carries a seal (page id, CRC-32C) in bytes 48..64.
/// 3: the free pages are listed in free-list pages that are not reused before the next
/// checkpoint (2 chained them through the free pages themselves, which a crash after a
/// free page's reuse broke); the superblock counts them.
/// 4: a page's seal carries its last-flush LSN (`page_seal`); a format-3 page reads as
/// the same page with the LSN unknown, so format 3 is read too, and opening it
/// records format 4 (older builds then refuse the file with `VersionMismatch`).
pub const FORMAT_VERSION: u32 = 4;
/// The oldest format this build reads.
pub const FORMAT_VERSION_READ_MIN: u32 = 3;
const CHECKSUM_AT: usize = SUPERBLOCK_SLOT_BYTES - 4;
const CREATOR_BYTES: usize = 32;

/// The decoded contents of one superblock slot.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Superblock {
    /// The file's format, from [`FORMAT_VERSION_READ_MIN`] to [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Bytes per page, a power of two.
    pub page_size: u32,
    /// Incremented by every superblock write; its parity picks the slot ([`Superblock::slot`]).
    pub generation: u64,
    /// Pages of the file in use, page 0 (the superblock) included; at least 1.
    pub page_count: u64,
    /// When the file was created, seconds since the Unix epoch.
    pub created_unix_secs: u64,
    /// Random at creation: tells one database's files from another's.
    pub db_id: u64,
    /// Page id of the catalog's root (0: none yet).
    pub catalog_root: u64,
    /// The first page of the free-page list (0: no free page).
    pub free_list_head: u64,
    /// The tierdb version that created the file (`tierdb x.y.z`); at most 32 bytes are
    /// stored.
    pub creator: String,
    /// Page ids below this have been handed out; the file may hold more pages
    /// (it grows in chunks). Zero in a file that never recorded it: then `page_count`.
    pub pages_allocated: u64,
    /// Free pages the free-page list names (the list's own pages not included).
    pub free_pages: u64,
}

/// Why one slot did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotError {
    /// The slot does not start with [`MAGIC`]: not a tierdb page file. Holds the bytes found.
    BadMagic([u8; 8]),
    /// A format version this build does not read. Holds the version found.
    Version(u32),
    /// The CRC-32C does not match the slot's bytes: a torn or corrupted slot.
    Checksum {
        /// The checksum in bytes 508..512.
        stored: u32,
        /// The checksum of bytes 0..508 as read.
        computed: u32,
    },
    /// Checksum fine but a field makes no sense (a bug wrote it, or a collision).
    Field(&'static str, u64),
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Superblock {
    /// A new superblock for a file of `page_size` bytes per page, one page in use.
    pub fn new(page_size: u32, db_id: u64, created_unix_secs: u64) -> Superblock {
        Superblock {
            format_version: FORMAT_VERSION,
            page_size,
            generation: 1,
            page_count: 1,
            created_unix_secs,
            db_id,
            catalog_root: 0,
            free_list_head: 0,
            creator: format!("tierdb {}", env!("CARGO_PKG_VERSION")),
            pages_allocated: 1,
            free_pages: 0,
        }
    }

    /// The slot this generation is written to.
    pub fn slot(&self) -> usize {
        (self.generation % 2) as usize
    }

    /// The slot's bytes in the layout of the module doc, checksum included. A `creator`
    /// longer than 32 bytes is cut.
    pub fn encode(&self) -> [u8; SUPERBLOCK_SLOT_BYTES] {
        let mut b = [0u8; SUPERBLOCK_SLOT_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.format_version.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.page_count.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_unix_secs.to_le_bytes());
        b[40..48].copy_from_slice(&self.db_id.to_le_bytes());
        b[48..56].copy_from_slice(&self.catalog_root.to_le_bytes());
        b[56..64].copy_from_slice(&self.free_list_head.to_le_bytes());
        let creator = self.creator.as_bytes();
        let n = creator.len().min(CREATOR_BYTES);
        b[64..64 + n].copy_from_slice(&creator[..n]);
        b[96..104].copy_from_slice(&self.pages_allocated.to_le_bytes());
        b[104..112].copy_from_slice(&self.free_pages.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CHECKSUM_AT]);
        b[CHECKSUM_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes one slot. Checks, in order: magic, format version, checksum, fields;
    /// so that a file of another format is reported as such, not as corrupt.
    pub fn decode(b: &[u8]) -> Result<Superblock, SlotError> {
        assert_eq!(b.len(), SUPERBLOCK_SLOT_BYTES, "superblock slot size");
        let magic: [u8; 8] = b[0..8].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(SlotError::BadMagic(magic));
        }
        let format_version = u32_at(b, 8);
        if !(FORMAT_VERSION_READ_MIN..=FORMAT_VERSION).contains(&format_version) {
            return Err(SlotError::Version(format_version));
        }
        let stored = u32_at(b, CHECKSUM_AT);
        let computed = crc32c::crc32c(&b[..CHECKSUM_AT]);
        if stored != computed {
            return Err(SlotError::Checksum { stored, computed });
        }
        let page_size = u32_at(b, 12);
        if !page_size.is_power_of_two() {
            return Err(SlotError::Field("page size", page_size as u64));
        }
        let page_count = u64_at(b, 24);
        if page_count == 0 {
            return Err(SlotError::Field("page count", 0));
        }
        let creator_raw = &b[64..64 + CREATOR_BYTES];
        let end = creator_raw.iter().position(|&c| c == 0).unwrap_or(CREATOR_BYTES);
        Ok(Superblock {
            format_version,
            page_size,
            generation: u64_at(b, 16),
            page_count,
            created_unix_secs: u64_at(b, 32),
            db_id: u64_at(b, 40),
            catalog_root: u64_at(b, 48),
            free_list_head: u64_at(b, 56),
            creator: String::from_utf8_lossy(&creator_raw[..end]).into_owned(),
            pages_allocated: match u64_at(b, 96) {
                0 => page_count,
                n if n > page_count => return Err(SlotError::Field("pages allocated", n)),
                n => n,
            },
            free_pages: match u64_at(b, 104) {
                n if n >= page_count => return Err(SlotError::Field("free pages", n)),
                n => n,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let mut sb = Superblock::new(16384, 42, 1_700_000_000);
        sb.page_count = 99;
        sb.catalog_root = 7;
        sb.pages_allocated = 50;
        sb.free_pages = 12;
        let b = sb.encode();
        assert_eq!(Superblock::decode(&b).unwrap(), sb);
    }

    #[test]
    fn each_corruption_is_told_apart() {
        let b = Superblock::new(4096, 1, 2).encode();
        let mut m = b;
        m[0] = b'X';
        assert!(matches!(Superblock::decode(&m), Err(SlotError::BadMagic(_))));
        let mut v = b;
        v[8] = 1; // the format before page seals
        assert_eq!(Superblock::decode(&v), Err(SlotError::Version(1)));
        let mut c = b;
        c[40] ^= 1;
        assert!(matches!(Superblock::decode(&c), Err(SlotError::Checksum { .. })));
    }

    proptest! {
        /// Decoding arbitrary bytes never panics; whatever it accepts has a version we read.
        #[test]
        fn decode_is_total(mut bytes in proptest::collection::vec(any::<u8>(), SUPERBLOCK_SLOT_BYTES), fix in any::<bool>()) {
            if fix {
                bytes[0..8].copy_from_slice(&MAGIC);
                bytes[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
                let crc = crc32c::crc32c(&bytes[..CHECKSUM_AT]);
                bytes[CHECKSUM_AT..].copy_from_slice(&crc.to_le_bytes());
            }
            if let Ok(sb) = Superblock::decode(&bytes) {
                prop_assert!((FORMAT_VERSION_READ_MIN..=FORMAT_VERSION).contains(&sb.format_version));
            }
        }
    }
}
