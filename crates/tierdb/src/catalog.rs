//! The catalog of named trees: one page, [`PageSource::catalog_page`], maps tree names
//! to root page ids.
//!
//! Layout (little endian; `docs/btree.md` has the same table):
//!
//! ```text
//! offset size field
//!      0    8 magic "TDBCATLG"
//!      8    4 format version ([`CATALOG_VERSION`])
//!     12    4 CRC-32C of bytes 16..used
//!     16    4 used: bytes of header and entries
//!     20    2 tree count
//!     22   26 reserved, zero
//!     48   16 page seal: zero here (the SSD page file's, see `device::page_seal`)
//!     64    . entries, back to back: name length (1 byte), name (UTF-8), root page id (8)
//!  used..   . zero
//! ```
//!
//! A page of zeros (as every source allocates it) is an empty catalog; anything else
//! that does not decode is `CatalogCorrupted`. Changes take the catalog page exclusive,
//! so concurrent `create_tree` and `drop_tree` calls serialize; lookups take it shared.
//! The catalog page is latched before any page of a tree and never while one is held.

use crate::Result;
use crate::btree::{BTree, BTreeError};
use crate::ids::PageId;
use crate::limits::{CATALOG_ENTRY_OVERHEAD_BYTES, CATALOG_HEADER_BYTES, CATALOG_NAME_BYTES_MAX, CATALOG_TREES_MAX};
use crate::page::PageSource;

/// The first 8 bytes of a catalog page once written (a page of zeros is an empty
/// catalog never written).
pub const CATALOG_MAGIC: [u8; 8] = *b"TDBCATLG";
/// 2: entries start at byte 64, after the page seal's bytes.
pub const CATALOG_VERSION: u32 = 2;

/// One named tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The tree's name: UTF-8, 1 to [`CATALOG_NAME_BYTES_MAX`] bytes, unique in the catalog.
    pub name: String,
    /// The tree's root page.
    pub root: PageId,
}

/// A tree's removal from the catalog, prepared and not yet made
/// ([`Catalog::prepare_drop`]).
pub struct PreparedDrop<'s, S: PageSource + 's> {
    /// The tree's root page.
    pub root: PageId,
    /// The catalog page, latched exclusive, unchanged.
    pub page: S::Exclusive<'s>,
    /// The catalog page's bytes without the tree.
    pub image: Vec<u8>,
}

/// The catalog's operations; its state lives in the source's catalog page.
pub struct Catalog;

impl Catalog {
    /// Creates an empty tree named `name` and records it.
    ///
    /// # Errors
    /// `BadTreeName` (empty or longer than
    /// [`CATALOG_NAME_BYTES_MAX`]), `TreeExists`,
    /// `CatalogFull`, `CatalogCorrupted`; the source's errors.
    pub fn create_tree<'s, S: PageSource>(source: &'s S, name: &str) -> Result<BTree<'s, S>, BTreeError> {
        check_name(name)?;
        let pid = source.catalog_page();
        let mut page = source.fix_exclusive(pid)?;
        let mut entries = decode(&page, pid)?;
        if entries.iter().any(|e| e.name == name) {
            return Err(BTreeError::TreeExists { name: name.into() });
        }
        if entries.len() >= CATALOG_TREES_MAX {
            return Err(BTreeError::CatalogFull { max: CATALOG_TREES_MAX });
        }
        let tree = BTree::create(source)?;
        entries.push(CatalogEntry { name: name.into(), root: tree.root() });
        encode(&entries, &mut page);
        debug_assert_eq!(decode(&page, pid).ok().as_ref(), Some(&entries));
        Ok(tree)
    }

    /// Opens the tree named `name`.
    ///
    /// # Errors
    /// `NoSuchTree` listing the names the catalog holds; `CatalogCorrupted`; as
    /// [`BTree::open`].
    pub fn open_tree<'s, S: PageSource>(source: &'s S, name: &str) -> Result<BTree<'s, S>, BTreeError> {
        let root = Self::lookup(source, name)?;
        BTree::open(source, root)
    }

    /// The named trees, in creation order.
    ///
    /// # Errors
    /// `CatalogCorrupted`; the source's errors.
    pub fn list<S: PageSource>(source: &S) -> Result<Vec<CatalogEntry>, BTreeError> {
        let pid = source.catalog_page();
        let page = source.fix_shared(pid)?;
        decode(&page, pid)
    }

    /// Removes `name` from the catalog and frees its tree's pages. The caller
    /// guarantees that no handle of the tree is used any more.
    ///
    /// # Errors
    /// `NoSuchTree`, `CatalogCorrupted`; errors freeing the pages (the name is gone
    /// then, and pages not yet freed are lost).
    pub fn drop_tree<S: PageSource>(source: &S, name: &str) -> Result<(), BTreeError> {
        let pid = source.catalog_page();
        let root = {
            let mut page = source.fix_exclusive(pid)?;
            let mut entries = decode(&page, pid)?;
            let Some(i) = entries.iter().position(|e| e.name == name) else {
                return Err(no_such_tree(name, &entries));
            };
            let root = entries.remove(i).root;
            encode(&entries, &mut page);
            root
        };
        BTree::open(source, root)?.destroy()
    }

    /// Prepares the removal of `name` for a caller that logs it first: returns the
    /// tree's root, the catalog page latched exclusive and still unchanged, and the
    /// bytes the page holds once `name` is removed. The caller logs those bytes, then
    /// writes them into the page before releasing it, and frees the tree's pages
    /// (`Db::drop_tree`). Dropping the guard without writing changes nothing.
    ///
    /// # Errors
    /// `NoSuchTree`, `CatalogCorrupted`; the source's errors.
    pub fn prepare_drop<'s, S: PageSource>(source: &'s S, name: &str) -> Result<PreparedDrop<'s, S>, BTreeError> {
        let pid = source.catalog_page();
        let page = source.fix_exclusive(pid)?;
        let mut entries = decode(&page, pid)?;
        let Some(i) = entries.iter().position(|e| e.name == name) else {
            return Err(no_such_tree(name, &entries));
        };
        let root = entries.remove(i).root;
        let mut image = vec![0u8; page.len()];
        encode(&entries, &mut image);
        debug_assert_eq!(decode(&image, pid).ok().as_ref(), Some(&entries));
        Ok(PreparedDrop { root, page, image })
    }

    fn lookup<S: PageSource>(source: &S, name: &str) -> Result<PageId, BTreeError> {
        let pid = source.catalog_page();
        let page = source.fix_shared(pid)?;
        let entries = decode(&page, pid)?;
        match entries.iter().find(|e| e.name == name) {
            Some(e) => Ok(e.root),
            None => Err(no_such_tree(name, &entries)),
        }
    }
}

fn no_such_tree(name: &str, entries: &[CatalogEntry]) -> BTreeError {
    BTreeError::NoSuchTree { name: name.into(), known: entries.iter().map(|e| e.name.clone()).collect() }
}

fn check_name(name: &str) -> Result<(), BTreeError> {
    let bad = |detail: String| Err(BTreeError::BadTreeName { name: name.into(), detail });
    if name.is_empty() {
        return bad("empty".into());
    }
    if name.len() > CATALOG_NAME_BYTES_MAX {
        return bad(format!("{} bytes, the limit is {CATALOG_NAME_BYTES_MAX}", name.len()));
    }
    Ok(())
}

/// Writes the catalog into `b` (a whole page): header, entries, zeros after them.
fn encode(entries: &[CatalogEntry], b: &mut [u8]) {
    assert!(entries.len() <= CATALOG_TREES_MAX, "{} trees", entries.len());
    b.fill(0);
    let mut at = CATALOG_HEADER_BYTES;
    for e in entries {
        let n = e.name.len();
        assert!(n > 0 && n <= CATALOG_NAME_BYTES_MAX, "name of {n} bytes");
        b[at] = n as u8;
        b[at + 1..at + 1 + n].copy_from_slice(e.name.as_bytes());
        b[at + 1 + n..at + CATALOG_ENTRY_OVERHEAD_BYTES + n].copy_from_slice(&e.root.0.to_le_bytes());
        at += CATALOG_ENTRY_OVERHEAD_BYTES + n;
    }
    b[..8].copy_from_slice(&CATALOG_MAGIC);
    b[8..12].copy_from_slice(&CATALOG_VERSION.to_le_bytes());
    b[16..20].copy_from_slice(&(at as u32).to_le_bytes());
    b[20..22].copy_from_slice(&(entries.len() as u16).to_le_bytes());
    let crc = crc32c::crc32c(&b[16..at]);
    b[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// Reads the catalog from the page `b`.
///
/// # Errors
/// `CatalogCorrupted` for anything but a valid catalog or a page of zeros.
fn decode(b: &[u8], pid: PageId) -> Result<Vec<CatalogEntry>, BTreeError> {
    let bad = |detail: String| Err(BTreeError::CatalogCorrupted { pid, detail });
    if b.iter().all(|&x| x == 0) {
        return Ok(Vec::new());
    }
    if b.len() < CATALOG_HEADER_BYTES {
        return bad(format!("a page of {} bytes", b.len()));
    }
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    if b[..8] != CATALOG_MAGIC {
        return bad(format!("magic {:?}, expected {:?}", String::from_utf8_lossy(&b[..8]), "TDBCATLG"));
    }
    let version = u32_at(8);
    if version != CATALOG_VERSION {
        return bad(format!("format version {version}, expected {CATALOG_VERSION}"));
    }
    let used = u32_at(16) as usize;
    if !(CATALOG_HEADER_BYTES..=b.len()).contains(&used) {
        return bad(format!("{used} bytes used in a page of {}", b.len()));
    }
    let (stored, computed) = (u32_at(12), crc32c::crc32c(&b[16..used]));
    if stored != computed {
        return bad(format!("checksum {stored:#010x} stored, {computed:#010x} computed"));
    }
    let count = u16::from_le_bytes([b[20], b[21]]) as usize;
    if count > CATALOG_TREES_MAX {
        return bad(format!("{count} trees, the limit is {CATALOG_TREES_MAX}"));
    }
    let mut entries: Vec<CatalogEntry> = Vec::with_capacity(count);
    let mut at = CATALOG_HEADER_BYTES;
    for i in 0..count {
        if at >= used {
            return bad(format!("entry {i} starts at byte {at}, past the {used} used"));
        }
        let n = b[at] as usize;
        let end = at + CATALOG_ENTRY_OVERHEAD_BYTES + n;
        if n == 0 || n > CATALOG_NAME_BYTES_MAX || end > used {
            return bad(format!("entry {i}: a name of {n} bytes at offset {at}"));
        }
        let Ok(name) = std::str::from_utf8(&b[at + 1..at + 1 + n]) else {
            return bad(format!("entry {i}: the name is not UTF-8"));
        };
        let mut root = [0u8; 8];
        root.copy_from_slice(&b[at + 1 + n..end]);
        let root = PageId(u64::from_le_bytes(root));
        if root.0 == 0 || root == pid {
            return bad(format!("tree {name:?} rooted at {root}"));
        }
        if entries.iter().any(|e| e.name == name) {
            return bad(format!("tree {name:?} listed twice"));
        }
        entries.push(CatalogEntry { name: name.into(), root });
        at = end;
    }
    if at != used {
        return bad(format!("entries end at byte {at}, the header says {used}"));
    }
    if let Some(i) = b[used..].iter().position(|&x| x != 0) {
        return bad(format!("byte {} after the {used} used is not zero", used + i));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: PageId = PageId(1);

    #[test]
    fn round_trip_and_zero_page() {
        let mut b = vec![0u8; 4096];
        assert_eq!(decode(&b, P).unwrap(), vec![]);
        // The largest catalog: every tree, every name of the longest length.
        let entries: Vec<_> = (0..CATALOG_TREES_MAX)
            .map(|i| CatalogEntry {
                name: format!("{i:02}{}", "n".repeat(CATALOG_NAME_BYTES_MAX - 2)),
                root: PageId(i as u64 + 2),
            })
            .collect();
        encode(&entries, &mut b);
        assert_eq!(decode(&b, P).unwrap(), entries);
        encode(&[], &mut b);
        assert_eq!(decode(&b, P).unwrap(), vec![]);
        assert!(b[..8] == CATALOG_MAGIC, "an empty catalog that was written keeps its header");
    }

    #[test]
    fn each_corruption_is_an_error() {
        let mut b = vec![0u8; 4096];
        encode(&[CatalogEntry { name: "a".into(), root: PageId(5) }], &mut b);
        let cases = [
            (0, "magic"),
            (8, "version"),
            (12, "checksum"),
            (16, "used"), // 74 bytes used become 10, less than the header
            (19, "used"),
            (20, "checksum"),
            (50, "checksum"),
            (65, "checksum"),
        ];
        for (at, what) in cases {
            let mut c = b.clone();
            c[at] ^= 0x40;
            let e = decode(&c, P).unwrap_err().to_string();
            assert!(e.contains(what), "byte {at}: {e}");
        }
        let mut c = b.clone();
        c[100] = 1; // After `used`: not covered by the checksum, but must be zero.
        assert!(decode(&c, P).unwrap_err().to_string().contains("not zero"));
    }

    proptest! {
        #[test]
        fn decoding_is_total(mut bytes in proptest::collection::vec(any::<u8>(), 4096), fix in any::<bool>(), used in 0u32..5000) {
            if fix {
                bytes[..8].copy_from_slice(&CATALOG_MAGIC);
                bytes[8..12].copy_from_slice(&CATALOG_VERSION.to_le_bytes());
                bytes[16..20].copy_from_slice(&used.to_le_bytes());
                let end = (used as usize).clamp(16, 4096);
                let crc = crc32c::crc32c(&bytes[16..end]);
                bytes[12..16].copy_from_slice(&crc.to_le_bytes());
            }
            let _ = decode(&bytes, P);
        }
    }
}
