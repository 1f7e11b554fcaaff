//! Checksums of pages kept in NVM: how much is verified ([`NvmVerify`]), and the
//! arithmetic that keeps a page's CRC-32C current when only some of its lines change
//! ([`crc_after_runs`]) without reading the rest of the page.
//!
//! CRC-32C is affine over GF(2): for two messages of one length,
//! `crc(a) ^ crc(b) = L(a ^ b)`, where `L` is the CRC register's linear map (initial
//! value 0, no final inversion). For a page whose lines `off..off + len` change from
//! `old` to `new` and whose other bytes stay,
//!
//! ```text
//!   crc(page') = crc(page) ^ L(0^off ++ (old ^ new) ++ 0^m)      m = page − off − len
//!              = crc(page) ^ shift_m(L(old) ^ L(new))
//! ```
//!
//! (leading zero bytes leave `L` at 0; trailing ones multiply by x^(8m) modulo the
//! polynomial, `shift_m`). `shift_m` for a whole number of lines is a product of at
//! most [`SHIFT_OPS`] 32×32 bit matrices (shifts by 64 · 2^b bytes), built once, each
//! applied as four table lookups (one per byte of the register). So updating the CRC
//! of a page costs two CRCs of the changed lines and a few dozen instructions per run,
//! against a CRC of the whole page (≈ 0.8 µs per 16 KiB) and, worse, a read of every
//! line of it from NVM.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::Serialize;

use crate::limits::{CACHE_LINE_BYTES, PAGE_SIZE_MAX_BYTES};

/// How much of what is read from NVM is checked against the pages' CRC-32C.
///
/// | mode | checked |
/// |---|---|
/// | `Off` | nothing |
/// | `Cheap` (default) | every whole page copied out of NVM; every page found in NVM at a restart, once, before its first use (dirty frames of a buffer manager at the reopen itself) |
/// | `Every` | as `Cheap`, and every read: each line-grained load and each in-place fix checks the whole page first; a buffer manager's reopen checks every frame |
///
/// The CRCs are kept current on every write in every mode, so the mode can change
/// from one open to the next (`docs/checksums.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NvmVerify {
    /// Nothing is checked (the CRCs are still kept).
    Off,
    /// Whole-page copies, and each page found at a restart once before first use.
    #[default]
    Cheap,
    /// Every read, and every frame at a buffer manager's reopen.
    Every,
}

impl NvmVerify {
    /// Every mode, from least to most checked.
    pub const ALL: [NvmVerify; 3] = [NvmVerify::Off, NvmVerify::Cheap, NvmVerify::Every];

    /// The mode's name as configured and reported: `off`, `cheap`, `every` (what
    /// `FromStr` accepts and `Display` prints).
    pub fn name(self) -> &'static str {
        match self {
            NvmVerify::Off => "off",
            NvmVerify::Cheap => "cheap",
            NvmVerify::Every => "every",
        }
    }

    /// Anything is checked.
    #[inline]
    pub fn any(self) -> bool {
        self != NvmVerify::Off
    }

    /// Every read is checked.
    #[inline]
    pub fn every(self) -> bool {
        self == NvmVerify::Every
    }
}

impl fmt::Display for NvmVerify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NvmVerify {
    type Err = String;
    fn from_str(s: &str) -> Result<NvmVerify, String> {
        NvmVerify::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown NVM verify mode {s:?}; known: off, cheap, every"))
    }
}

/// Shift operators kept: shifts by 64 · 2^b bytes for b below this, enough for every
/// whole-line shift inside the largest page.
pub const SHIFT_OPS: usize = (PAGE_SIZE_MAX_BYTES / CACHE_LINE_BYTES).trailing_zeros() as usize;

const _: () = assert!(1 << SHIFT_OPS == PAGE_SIZE_MAX_BYTES / CACHE_LINE_BYTES);
const _: () = assert!(CACHE_LINE_BYTES == 64, "the first operator shifts by 2^9 bits");

/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// A 32×32 matrix over GF(2): entry `j` is the image of bit `j`.
type Op = [u32; 32];

fn times(m: &Op, mut v: u32) -> u32 {
    let mut sum = 0;
    let mut i = 0;
    while v != 0 {
        if v & 1 != 0 {
            sum ^= m[i];
        }
        v >>= 1;
        i += 1;
    }
    sum
}

fn square(m: &Op) -> Op {
    let mut r = [0u32; 32];
    for (n, r) in r.iter_mut().enumerate() {
        *r = times(m, m[n]);
    }
    r
}

/// A matrix as four tables: the image of each value of each byte of the register
/// (32 KiB in all for the [`SHIFT_OPS`] operators).
type ByteTables = [[u32; 256]; 4];

fn byte_tables(m: &Op) -> ByteTables {
    let mut t = [[0u32; 256]; 4];
    for (k, table) in t.iter_mut().enumerate() {
        for (b, e) in table.iter_mut().enumerate() {
            *e = times(m, (b as u32) << (8 * k));
        }
    }
    t
}

#[inline]
fn times_tables(t: &ByteTables, v: u32) -> u32 {
    t[0][(v & 0xff) as usize]
        ^ t[1][((v >> 8) & 0xff) as usize]
        ^ t[2][((v >> 16) & 0xff) as usize]
        ^ t[3][(v >> 24) as usize]
}

/// `ops[b]`: the register after 64 · 2^b more zero bytes, as byte tables.
fn shift_ops() -> &'static [ByteTables; SHIFT_OPS] {
    static OPS: OnceLock<Box<[ByteTables; SHIFT_OPS]>> = OnceLock::new();
    OPS.get_or_init(|| {
        // One zero bit, then squared 9 times: 2^9 bits = one line.
        let mut op = [0u32; 32];
        op[0] = POLY;
        for (n, o) in op.iter_mut().enumerate().skip(1) {
            *o = 1 << (n - 1);
        }
        for _ in 0..9 {
            op = square(&op);
        }
        let mut ops = Box::new([[[0u32; 256]; 4]; SHIFT_OPS]);
        for o in ops.iter_mut() {
            *o = byte_tables(&op);
            op = square(&op);
        }
        ops
    })
}

/// The register's linear map over `bytes` (start 0, no final inversion).
#[inline]
fn linear(bytes: &[u8]) -> u32 {
    !crc32c::crc32c_append(u32::MAX, bytes)
}

/// `v` followed by `lines` lines of zeros.
fn shift_lines(mut v: u32, lines: usize) -> u32 {
    debug_assert!(lines < 1 << SHIFT_OPS, "a shift of {lines} lines");
    let ops = shift_ops();
    let mut b = 0;
    let mut rest = lines;
    while rest != 0 && v != 0 {
        if rest & 1 != 0 {
            v = times_tables(&ops[b], v);
        }
        rest >>= 1;
        b += 1;
    }
    v
}

/// The CRC-32C of a page of `page_size` bytes whose CRC was `crc` after the runs
/// `(page offset, old bytes, new bytes)` changed from old to new (whole lines; runs
/// do not overlap; any order).
///
/// # Panics
/// In debug builds, for a run that is not whole lines inside the page or whose two
/// sides differ in length.
pub fn crc_after_runs<'a>(
    crc: u32,
    page_size: usize,
    runs: impl IntoIterator<Item = (usize, &'a [u8], &'a [u8])>,
) -> u32 {
    let mut delta = 0u32;
    for (off, old, new) in runs {
        debug_assert_eq!(old.len(), new.len(), "run at {off}");
        debug_assert!(
            off.is_multiple_of(CACHE_LINE_BYTES)
                && old.len().is_multiple_of(CACHE_LINE_BYTES)
                && off + old.len() <= page_size,
            "run {off}+{} in a page of {page_size}",
            old.len()
        );
        let after = (page_size - off - old.len()) / CACHE_LINE_BYTES;
        delta ^= shift_lines(linear(old) ^ linear(new), after);
    }
    crc ^ delta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(seed: u64, size: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..size)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn updated_crc_equals_the_crc_of_the_changed_page() {
        for size in [4096, 16384, PAGE_SIZE_MAX_BYTES] {
            let old = page(size as u64, size);
            let mut new = old.clone();
            let runs = [(0usize, 1usize), (3, 2), (size / 64 - 1, 1), (17, 5)];
            for (i, &(line, k)) in runs.iter().enumerate() {
                let r = &mut new[line * 64..(line + k) * 64];
                r.copy_from_slice(&page(i as u64 + 99, k * 64));
            }
            let got = crc_after_runs(
                crc32c::crc32c(&old),
                size,
                runs.iter().map(|&(l, k)| (l * 64, &old[l * 64..(l + k) * 64], &new[l * 64..(l + k) * 64])),
            );
            assert_eq!(got, crc32c::crc32c(&new), "page of {size}");
        }
    }

    #[test]
    fn unchanged_lines_change_nothing_and_a_flip_elsewhere_stays_visible() {
        let old = page(5, 4096);
        let crc = crc32c::crc32c(&old);
        assert_eq!(crc_after_runs(crc, 4096, [(128, &old[128..256], &old[128..256])]), crc);
        // A byte flipped outside the runs before the update: the updated CRC is that of
        // the page as it should be, so the flipped page still fails it.
        let mut flipped = old.clone();
        flipped[1000] ^= 0x10;
        let mut new = flipped.clone();
        new[64..128].fill(7);
        let updated = crc_after_runs(crc, 4096, [(64, &flipped[64..128], &new[64..128])]);
        assert_ne!(updated, crc32c::crc32c(&new));
        new[1000] ^= 0x10;
        assert_eq!(updated, crc32c::crc32c(&new));
    }

    #[test]
    fn verify_modes_parse_and_print() {
        for v in NvmVerify::ALL {
            assert_eq!(v.name().parse::<NvmVerify>().unwrap(), v);
        }
        assert!("all".parse::<NvmVerify>().unwrap_err().contains("off, cheap, every"));
        assert_eq!(NvmVerify::default(), NvmVerify::Cheap);
    }
}
