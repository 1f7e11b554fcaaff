//! Key names, as YCSB's `CoreWorkload.buildKeyName` makes them.
//!
//! A record is identified by its key *number* (`0..recordcount` loaded, then upward for
//! inserts); its key *name* is
//!
//! 1. the number itself with `insertorder=ordered`, or its hash [`fnv_hash64`] with
//!    `insertorder=hashed` (the default), as a signed 64-bit value;
//! 2. written in decimal, left-padded with zeros to `zeropadding` digits;
//! 3. after the `keyprefix` (`user`).
//!
//! So key number 0 is `user6284781860667377211` by default, the first key of every
//! YCSB load, and `user00000005` is number 5 with `insertorder=ordered, zeropadding=8`.

use crate::limits::KEY_NUMBER_DIGITS_MAX;
use crate::ycsb::{InsertOrder, YcsbSpec};

/// FNV 64-bit offset basis, as YCSB's `Utils.FNV_OFFSET_BASIS_64`.
pub const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;

/// FNV 64-bit prime, as YCSB's `Utils.FNV_PRIME_64`.
pub const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the eight bytes of `value`, least significant
/// first, then Java's `Math.abs` of the result read as a signed long.
///
/// Java's `Math.abs(Long.MIN_VALUE)` is `Long.MIN_VALUE`, so one hash value stays
/// negative; that is reproduced (a key name with a `-`), not "fixed", so that key names
/// match YCSB's.
pub fn fnv_hash64(value: u64) -> i64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for byte in value.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    java_abs(hash as i64)
}

/// Java's `Math.abs(long)`: wraps at `i64::MIN`.
fn java_abs(value: i64) -> i64 {
    value.wrapping_abs()
}

/// The number written into the name of key number `key_number`: its hash or itself.
pub fn key_name_number(spec: &YcsbSpec, key_number: u64) -> i64 {
    match spec.insert_order() {
        InsertOrder::Hashed => fnv_hash64(key_number),
        // Key numbers stay below KEY_NUMBER_MAX <= i64::MAX (checked in limits).
        InsertOrder::Ordered => key_number as i64,
    }
}

/// Writes the name of key number `key_number` into `out`, replacing its contents.
///
/// Allocates only if `out` is shorter than the key; a buffer reused across calls stops
/// allocating after the first. The name is at most
/// [`crate::limits::KEY_LENGTH_MAX_BYTES`] long.
pub fn build_key(spec: &YcsbSpec, key_number: u64, out: &mut Vec<u8>) {
    write_key(spec.key_prefix().as_bytes(), spec.zero_padding() as usize, key_name_number(spec, key_number), out);
}

/// "00" to "99", two bytes each.
static DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Prefix, zeros up to `zero_padding` characters of number, then the number in decimal.
/// As in YCSB the padding counts the sign of a negative number as a digit.
fn write_key(prefix: &[u8], zero_padding: usize, number: i64, out: &mut Vec<u8>) {
    let mut digits = [0u8; KEY_NUMBER_DIGITS_MAX];
    let mut start = digits.len();
    let mut rest = number.unsigned_abs();
    // Two digits a step (a key is built for every operation of a run).
    while rest >= 100 {
        let pair = (rest % 100) as usize;
        rest /= 100;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&DIGIT_PAIRS[2 * pair..2 * pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&DIGIT_PAIRS[2 * pair..2 * pair + 2]);
    } else {
        start -= 1;
        digits[start] = b'0' + rest as u8;
    }
    if number < 0 {
        start -= 1;
        digits[start] = b'-';
    }
    let digits = &digits[start..];
    out.clear();
    out.extend_from_slice(prefix);
    out.resize(out.len() + zero_padding.saturating_sub(digits.len()), b'0');
    out.extend_from_slice(digits);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, step by step, in 128-bit arithmetic reduced by hand.
    fn fnv_reference(value: u64) -> i64 {
        let mut hash: u128 = 0xCBF29CE484222325;
        for i in 0..8 {
            let octet = (value >> (8 * i)) & 0xFF;
            hash ^= u128::from(octet);
            hash = (hash * 1_099_511_628_211) % (1u128 << 64);
        }
        let signed = hash as u64 as i64;
        if signed == i64::MIN { signed } else { signed.abs() }
    }

    fn key(spec: &YcsbSpec, n: u64) -> String {
        let mut out = Vec::new();
        build_key(spec, n, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fnv_matches_definition_and_ycsb() {
        for v in [0, 1, 2, 3, 255, 256, 999, 1000, u64::MAX, 1 << 40] {
            assert_eq!(fnv_hash64(v), fnv_reference(v), "value {v}");
        }
        // The names of YCSB's first loaded keys.
        assert_eq!(fnv_hash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv_hash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv_hash64(2), 1_820_151_046_732_198_393);
        assert_eq!(fnv_hash64(1000), 5_952_875_239_596_136_740);
        assert_eq!(java_abs(i64::MIN), i64::MIN);
        assert_eq!(java_abs(-5), 5);
    }

    #[test]
    fn hashed_keys() {
        let spec = YcsbSpec::default();
        assert_eq!(key(&spec, 0), "user6284781860667377211");
        assert_eq!(key(&spec, 1), "user8517097267634966620");
        let mut spec = spec;
        spec.set("zeropadding", "22").unwrap();
        spec.set("keyprefix", "k").unwrap();
        assert_eq!(key(&spec, 0), "k0006284781860667377211");
    }

    #[test]
    fn ordered_keys() {
        let mut spec = YcsbSpec::default();
        spec.set("insertorder", "ordered").unwrap();
        assert_eq!(key(&spec, 5), "user5");
        assert_eq!(key(&spec, 0), "user0");
        spec.set("zeropadding", "8").unwrap();
        assert_eq!(key(&spec, 5), "user00000005");
        assert_eq!(key(&spec, 123_456_789), "user123456789");
        spec.set("zeropadding", "0").unwrap();
        assert_eq!(key(&spec, 42), "user42");
    }

    #[test]
    fn negative_hash_is_written_as_java_does() {
        let mut out = b"old contents".to_vec();
        write_key(b"user", 22, i64::MIN, &mut out);
        assert_eq!(out, b"user00-9223372036854775808");
        write_key(b"", 1, i64::MAX, &mut out);
        assert_eq!(out, b"9223372036854775807");
    }

    /// The digits are Rust's own decimal formatting of the number, zero padded, at every
    /// length from 1 to 20 characters and at the ends of the range.
    #[test]
    fn digits_are_decimal_formatting() {
        let mut numbers = vec![0i64, 1, 9, 10, 11, 99, 100, 101, 999, 1000, i64::MAX, i64::MIN, i64::MIN + 1];
        let mut p = 1i64;
        for _ in 0..18 {
            p *= 10;
            numbers.extend([p - 1, p, p + 1, -p, -(p - 1), p / 7 * 3]);
        }
        let mut out = Vec::new();
        for n in numbers {
            for padding in [0usize, 1, 5, 19, 21] {
                write_key(b"k", padding, n, &mut out);
                let body = if n < 0 { format!("-{}", n.unsigned_abs()) } else { n.to_string() };
                let expected = format!("k{}{body}", "0".repeat(padding.saturating_sub(body.len())));
                assert_eq!(String::from_utf8_lossy(&out), expected, "number {n}, padding {padding}");
            }
        }
    }
}
