//! The NVM pool's layout in its region and the frame header's codec (`docs/format.md`
//! has the byte offsets; the module doc of the pool draws them).
//!
//! A header is one cache line, written with one persist: it is never torn across lines,
//! and its CRC-32C (bytes 60..64) catches a header written partly before a power loss
//! on media without 64-byte atomicity. All-zero is "no page", the state `format` and
//! every release leave.

use crate::ids::{Lsn, PageId};
use crate::limits::{CACHE_LINE_BYTES, IO_ALIGN_BYTES};

pub(super) const MAGIC: &[u8; 8] = b"TIERDBNV";
pub(super) const VERSION: u32 = 1;
pub(super) const HEADER_BYTES: usize = CACHE_LINE_BYTES;
pub(super) const HEADERS_OFFSET: u64 = IO_ALIGN_BYTES as u64;

/// Frame header flag: the frame holds the page the header names.
pub const FLAG_VALID: u32 = 1;
/// Frame header flag: the frame's copy is newer than the page's SSD copy (or the only
/// one, without SSD).
pub const FLAG_DIRTY: u32 = 2;
/// Frame header flag: the frame's data is being overwritten in place; a restart that
/// finds it clears the frame instead of trusting bytes a crash may have torn.
pub const FLAG_IN_UPDATE: u32 = 4;
/// The data CRC does not cover the data (set by earlier builds when a page was
/// written back line by line; this one keeps the CRC current and never sets it).
pub const FLAG_NO_CRC: u32 = 8;

pub(super) const NO_PAGE: u64 = u64::MAX;

// The layout: the pool header is one line below the frame headers, which are one line
// each; the frames start on an I/O-aligned offset after them.
const _: () = assert!(HEADER_BYTES == 64 && HEADER_BYTES == CACHE_LINE_BYTES);
const _: () = assert!(HEADERS_OFFSET >= HEADER_BYTES as u64 && HEADERS_OFFSET.is_multiple_of(HEADER_BYTES as u64));
const _: () = assert!(FLAG_VALID | FLAG_DIRTY | FLAG_IN_UPDATE | FLAG_NO_CRC == 0xf);

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The page the frame holds.
    pub pid: PageId,
    /// LSN of the page's last logged change that the frame's bytes include ([`Lsn::NONE`]: unknown).
    pub page_lsn: Lsn,
    /// `FLAG_*` bits: [`FLAG_VALID`], [`FLAG_DIRTY`], [`FLAG_IN_UPDATE`], [`FLAG_NO_CRC`].
    pub flags: u32,
    /// CRC-32C of the frame's page bytes (not kept if [`FLAG_NO_CRC`] is set).
    pub data_crc: u32,
    /// While DIRTY: a lower bound of the LSN of the oldest change the frame holds that
    /// SSD does not ([`Lsn::NONE`]: unknown). `nvsql` keeps dirty pages in NVM across checkpoints,
    /// so the log must reach back to it (`NvmPool::oldest_dirty_rec_lsn`).
    pub rec_lsn: Lsn,
    /// The log's end LSN when the frame's bytes or flags were last set ([`Lsn::NONE`]:
    /// unknown); see the module doc.
    pub written_lsn: Lsn,
}

impl FrameHeader {
    /// The header's 64 bytes as stored, bytes 40..60 zero and the header CRC-32C at 60.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.pid.0.to_le_bytes());
        b[8..16].copy_from_slice(&self.page_lsn.to_le_bytes());
        b[16..20].copy_from_slice(&self.flags.to_le_bytes());
        b[20..24].copy_from_slice(&self.data_crc.to_le_bytes());
        b[24..32].copy_from_slice(&self.rec_lsn.to_le_bytes());
        b[32..40].copy_from_slice(&self.written_lsn.to_le_bytes());
        // A header that says nothing must not encode as the all-zero "no page" header.
        debug_assert!(b[..40].iter().any(|&x| x != 0) || self.flags == 0, "header {self:?} encodes as empty");
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header; `None` for an all-zero (never written) one.
    ///
    /// # Errors
    /// A description of the mismatch when the header's CRC is wrong.
    pub fn decode(b: &[u8; HEADER_BYTES]) -> Result<Option<FrameHeader>, String> {
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let (stored, computed) = (u32_at(60), crc32c::crc32c(&b[..60]));
        if stored != computed {
            return Err(format!("header CRC-32C {stored:#010x}, computed {computed:#010x}"));
        }
        Ok(Some(FrameHeader {
            pid: PageId(u64_at(0)),
            page_lsn: Lsn::new(u64_at(8)),
            flags: u32_at(16),
            data_crc: u32_at(20),
            rec_lsn: Lsn::new(u64_at(24)),
            written_lsn: Lsn::new(u64_at(32)),
        }))
    }
}
