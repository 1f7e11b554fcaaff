//! Records: how their fields are laid out, and the values written into them.
//!
//! # Layout
//!
//! With constant field lengths (`fieldlengthdistribution=constant`, the default) a
//! record is its fields back to back, field `i` at bytes [`field_range`]`(spec, i)`: an
//! update of one field overwrites that range in place and a read of one field reads it.
//!
//! With field lengths that vary, a record starts with a header of one little-endian
//! `u32` length per field ([`FIELD_LENGTH_HEADER_BYTES`] each), followed by the fields
//! back to back:
//!
//! ```text
//! | len 0 | len 1 | … | len n-1 | field 0 (len 0 bytes) | field 1 | … | field n-1 |
//!   4 B     4 B         4 B
//! ```
//!
//! Where a field lies then depends on the record, so a read of one field reads the
//! record and picks the field out ([`record_field`]), and an update of one field writes
//! the whole record anew with that field replaced ([`replace_field`]), as YCSB's
//! bindings for embedded key-value stores (RocksDB's) do with every record.
//!
//! # Values
//!
//! Printable random bytes (`0x20..=0x5F`), one random byte each, like YCSB's
//! `RandomByteIterator`; they are not meant to compress. With `dataintegrity`, a field
//! holds YCSB's deterministic value of its key and field name ([`deterministic_value`]),
//! and reads check it ([`verify_record`]).

use crate::dist::derive_seed;
use crate::limits::FIELD_LENGTH_HEADER_BYTES;
use crate::ycsb::YcsbSpec;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use std::ops::Range;

/// Stream numbers above every thread number, so that value streams do not repeat the
/// operation streams of [`crate::ycsb::OpGenerator`].
const VALUE_STREAM_BASE: u64 = 1 << 33;

/// The generator for the values of thread `thread` of a run with seed `seed`:
/// independent of the thread's operation stream, deterministic for `(seed, thread)`.
pub fn value_rng(seed: u64, thread: u32) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(derive_seed(seed, VALUE_STREAM_BASE + u64::from(thread)))
}

/// Fills `dst` with printable random bytes (`0x20..=0x5F`), eight per 64-bit draw:
/// byte `i` of a chunk is `b' ' + (b & 63)` for byte `i` of the draw in little-endian
/// order (pinned by a test: recorded runs depend on these bytes).
pub fn fill_printable<R: Rng + ?Sized>(rng: &mut R, dst: &mut [u8]) {
    /// The low six bits of every byte, and `b' '` in every byte: their sum never
    /// carries into the next byte (63 + 32 < 256), so eight bytes are made at once.
    const LOW6: u64 = u64::from_ne_bytes([63; 8]);
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    let mut chunks = dst.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&((rng.next_u64() & LOW6) + SPACES).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let word = ((rng.next_u64() & LOW6) + SPACES).to_le_bytes();
        rest.copy_from_slice(&word[..rest.len()]);
    }
}

/// Replaces `out` with a whole new record of random values: with constant field lengths
/// [`YcsbSpec::record_length_bytes`] printable bytes, else the length header and a
/// newly drawn length of printable bytes per field. Allocates only if `out` has less
/// capacity than the record. (With `dataintegrity` use [`build_record`].)
pub fn fill_record<R: Rng + ?Sized>(spec: &YcsbSpec, rng: &mut R, out: &mut Vec<u8>) {
    out.clear();
    if !spec.field_lengths_vary() {
        out.resize(spec.record_length_bytes(), 0);
        fill_printable(rng, out);
        return;
    }
    let header_bytes = header_bytes(spec);
    out.resize(header_bytes, 0);
    let mut body_bytes = 0usize;
    for slot in out.chunks_exact_mut(FIELD_LENGTH_HEADER_BYTES) {
        let length = spec.field_lengths().sample(rng);
        slot.copy_from_slice(&length.to_le_bytes());
        body_bytes += length as usize;
    }
    out.resize(header_bytes + body_bytes, 0);
    fill_printable(rng, &mut out[header_bytes..]);
    debug_assert!(out.len() <= spec.record_length_bytes());
}

/// Replaces `out` with a new record for the key named `key`: as [`fill_record`], but with
/// `dataintegrity` every field holds [`deterministic_value`] of the key and its name.
pub fn build_record<R: Rng + ?Sized>(spec: &YcsbSpec, key: &[u8], rng: &mut R, out: &mut Vec<u8>) {
    if !spec.data_integrity() {
        return fill_record(spec, rng, out);
    }
    // dataintegrity implies constant field lengths (a spec invariant).
    debug_assert!(!spec.field_lengths_vary());
    out.clear();
    let mut value = Vec::new();
    for field in 0..spec.field_count() {
        deterministic_value(key, spec.field_name(field).as_bytes(), spec.field_length_bytes() as usize, &mut value);
        out.extend_from_slice(&value);
    }
}

/// Replaces `out` with a new value for field `field` of the key named `key`: its
/// [`deterministic_value`] with `dataintegrity`, else printable random bytes of a newly
/// drawn length (always `fieldlength` with constant lengths).
pub fn new_field_value<R: Rng + ?Sized>(spec: &YcsbSpec, key: &[u8], field: u32, rng: &mut R, out: &mut Vec<u8>) {
    if spec.data_integrity() {
        deterministic_value(key, spec.field_name(field).as_bytes(), spec.field_length_bytes() as usize, out);
        return;
    }
    out.clear();
    out.resize(spec.field_lengths().sample(rng) as usize, 0);
    fill_printable(rng, out);
}

/// The bytes to read for field `field`: with constant field lengths, the field itself;
/// with varying ones, the whole record (`0..`[`YcsbSpec::record_length_bytes`], longer
/// than any record; a read stops at the record's end), from which [`record_field`] picks
/// the field.
///
/// # Panics
///
/// If `field >= fieldcount`.
pub fn field_range(spec: &YcsbSpec, field: u32) -> Range<usize> {
    assert!(field < spec.field_count(), "field {field} of a record with {} fields", spec.field_count());
    if spec.field_lengths_vary() {
        return 0..spec.record_length_bytes();
    }
    let length = spec.field_length_bytes() as usize;
    let start = field as usize * length;
    start..start + length
}

/// Field `field` of the whole record `record`, or `None` if `record` is not laid out as
/// `spec` lays records out (its length disagrees with `fieldcount` and its header): a
/// record damaged or written for another workload.
///
/// # Panics
///
/// If `field >= fieldcount`.
pub fn record_field<'r>(spec: &YcsbSpec, record: &'r [u8], field: u32) -> Option<&'r [u8]> {
    assert!(field < spec.field_count(), "field {field} of a record with {} fields", spec.field_count());
    if !spec.field_lengths_vary() {
        return (record.len() == spec.record_length_bytes()).then(|| &record[field_range(spec, field)]);
    }
    let mut ranges = field_ranges(spec, record)?;
    Some(&record[ranges.nth(field as usize)?])
}

/// Replaces `out` with `record` whose field `field` holds a new value
/// ([`new_field_value`]), lengths re-encoded; false (and `out` unspecified) if `record`
/// is not a record of `spec`'s layout.
///
/// # Panics
///
/// If `field >= fieldcount`.
pub fn replace_field<R: Rng + ?Sized>(
    spec: &YcsbSpec,
    key: &[u8],
    record: &[u8],
    field: u32,
    rng: &mut R,
    out: &mut Vec<u8>,
) -> bool {
    assert!(field < spec.field_count(), "field {field} of a record with {} fields", spec.field_count());
    let mut value = Vec::new();
    new_field_value(spec, key, field, rng, &mut value);
    out.clear();
    if !spec.field_lengths_vary() {
        if record.len() != spec.record_length_bytes() {
            return false;
        }
        out.extend_from_slice(record);
        out[field_range(spec, field)].copy_from_slice(&value);
        return true;
    }
    let Some(ranges) = field_ranges(spec, record) else { return false };
    let header_bytes = header_bytes(spec);
    out.extend_from_slice(&record[..header_bytes]);
    let slot = field as usize * FIELD_LENGTH_HEADER_BYTES;
    // value.len() is at most the longest field, which fits its u32 slot.
    out[slot..slot + FIELD_LENGTH_HEADER_BYTES].copy_from_slice(&(value.len() as u32).to_le_bytes());
    for (i, range) in ranges.enumerate() {
        out.extend_from_slice(if i == field as usize { &value } else { &record[range] });
    }
    debug_assert!(field_ranges(spec, out).is_some());
    true
}

/// Whether `bytes`, as read for field `field` (`None`: the whole record), hold YCSB's
/// [`deterministic_value`]s for the key named `key`. Always true without
/// `dataintegrity`, whose values are random.
pub fn verify_record(spec: &YcsbSpec, key: &[u8], field: Option<u32>, bytes: &[u8]) -> bool {
    if !spec.data_integrity() {
        return true;
    }
    let length = spec.field_length_bytes() as usize;
    let mut expected = Vec::with_capacity(length);
    let mut check = |f: u32, got: &[u8]| {
        deterministic_value(key, spec.field_name(f).as_bytes(), length, &mut expected);
        got == expected.as_slice()
    };
    match field {
        Some(f) => check(f, bytes),
        None => {
            bytes.len() == spec.record_length_bytes()
                && (0..spec.field_count()).all(|f| check(f, &bytes[field_range(spec, f)]))
        }
    }
}

/// YCSB's `buildDeterministicValue(key, fieldkey)`: `key:fieldkey`, then while shorter
/// than `length`, `:` and the decimal Java `String.hashCode()` of everything so far,
/// cut to `length` bytes. (YCSB hashes the whole string again each round; the hash is
/// kept up to date byte by byte here, which gives the same numbers in linear time.)
pub fn deterministic_value(key: &[u8], field_name: &[u8], length: usize, out: &mut Vec<u8>) {
    /// Java's `s.hashCode()` grows as `h = 31 h + c` per character (ASCII here).
    fn push(out: &mut Vec<u8>, hash: &mut i32, b: u8) {
        out.push(b);
        *hash = hash.wrapping_mul(31).wrapping_add(i32::from(b));
    }
    out.clear();
    let mut hash = 0i32;
    for &b in key.iter().chain(b":").chain(field_name) {
        push(out, &mut hash, b);
    }
    while out.len() < length {
        push(out, &mut hash, b':');
        for b in hash.to_string().into_bytes() {
            push(out, &mut hash, b);
        }
    }
    out.truncate(length);
}

/// Bytes of the length header of a record of `spec` with varying field lengths.
fn header_bytes(spec: &YcsbSpec) -> usize {
    spec.field_count() as usize * FIELD_LENGTH_HEADER_BYTES
}

/// The byte ranges of the fields of `record` (varying lengths), or `None` if its header
/// does not describe it.
fn field_ranges(spec: &YcsbSpec, record: &[u8]) -> Option<impl Iterator<Item = Range<usize>>> {
    let header_bytes = header_bytes(spec);
    let header = record.get(..header_bytes)?;
    let lengths = header.chunks_exact(FIELD_LENGTH_HEADER_BYTES).map(|slot| {
        let bytes: [u8; FIELD_LENGTH_HEADER_BYTES] = slot.try_into().expect("chunks_exact gives whole slots");
        u32::from_le_bytes(bytes) as usize
    });
    let total = lengths.clone().try_fold(0usize, |sum, l| sum.checked_add(l))?;
    (header_bytes + total == record.len()).then(|| {
        lengths.scan(header_bytes, |start, length| {
            let range = *start..*start + length;
            *start += length;
            Some(range)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_has_the_right_size_and_printable_bytes() {
        let spec = YcsbSpec::parse("fieldcount=3\nfieldlength=13", "test").unwrap();
        let mut rng = value_rng(1, 0);
        let mut record = Vec::new();
        fill_record(&spec, &mut rng, &mut record);
        assert_eq!(record.len(), 39);
        assert!(record.iter().all(|b| (0x20..=0x5F).contains(b)), "{record:?}");
        let first = record.clone();
        fill_record(&spec, &mut rng, &mut record);
        assert_eq!(record.len(), 39);
        assert_ne!(record, first);
        // The same stream gives the same values.
        let mut again = Vec::new();
        fill_record(&spec, &mut value_rng(1, 0), &mut again);
        assert_eq!(again, first);
    }

    /// The bytes of a value stream are pinned: runs, their recorded data and results
    /// must not change with how `fill_printable` is written. Checked against the
    /// definition (one byte per byte of each draw's little-endian bytes, `b' ' + (b &
    /// 63)`) at every length around the 8-byte step, and against a digest of values
    /// made when the definition was the code.
    #[test]
    fn printable_bytes_are_pinned() {
        fn reference(rng: &mut impl Rng, dst: &mut [u8]) {
            for chunk in dst.chunks_mut(8) {
                let word = rng.next_u64().to_le_bytes();
                for (d, w) in chunk.iter_mut().zip(word) {
                    *d = b' ' + (w & 63);
                }
            }
        }
        let (mut rng, mut reference_rng) = (value_rng(42, u32::MAX), value_rng(42, u32::MAX));
        let mut digest = 0xcbf2_9ce4_8422_2325u64;
        for len in (0..=40).chain([100, 120, 1000, 4096]) {
            let (mut got, mut want) = (vec![0u8; len], vec![0u8; len]);
            fill_printable(&mut rng, &mut got);
            reference(&mut reference_rng, &mut want);
            assert_eq!(got, want, "length {len}");
            for b in got {
                digest = (digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        assert_eq!(digest, 15_042_594_706_148_229_112, "digest of the pinned stream");
        let mut record = Vec::new();
        fill_record(&YcsbSpec::parse("fieldcount=1\nfieldlength=24", "t").unwrap(), &mut value_rng(42, 7), &mut record);
        assert_eq!(record, br#"<^$'?(EEQ%?VL2KWJU.J8".$"#, "a pinned record");
    }

    #[test]
    fn field_ranges_tile_the_record() {
        let spec = YcsbSpec::parse("fieldcount=4\nfieldlength=100", "test").unwrap();
        let ranges: Vec<_> = (0..4).map(|f| field_range(&spec, f)).collect();
        assert_eq!(ranges, [0..100, 100..200, 200..300, 300..400]);
        assert_eq!(ranges[3].end, spec.record_length_bytes());
    }

    #[test]
    #[should_panic(expected = "field 4")]
    fn field_out_of_range_panics() {
        let spec = YcsbSpec::parse("fieldcount=4", "test").unwrap();
        let _ = field_range(&spec, 4);
    }

    #[test]
    fn varying_lengths_carry_a_header() {
        let seed = 5;
        let spec =
            YcsbSpec::parse("fieldcount=5\nfieldlengthdistribution=uniform\nminfieldlength=0\nfieldlength=40", "t")
                .unwrap();
        let mut rng = value_rng(seed, 0);
        let (mut record, mut next) = (Vec::new(), Vec::new());
        let mut lengths_seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            fill_record(&spec, &mut rng, &mut record);
            assert!(record.len() <= spec.record_length_bytes(), "seed {seed}");
            let fields: Vec<&[u8]> = (0..5).map(|f| record_field(&spec, &record, f).unwrap()).collect();
            assert_eq!(fields.iter().map(|f| f.len()).sum::<usize>() + 20, record.len(), "seed {seed}");
            lengths_seen.extend(fields.iter().map(|f| f.len()));
            // Replacing field 2 keeps the others.
            assert!(replace_field(&spec, b"k", &record, 2, &mut rng, &mut next));
            for f in [0, 1, 3, 4] {
                assert_eq!(record_field(&spec, &next, f), Some(fields[f as usize]), "seed {seed}");
            }
            assert!(field_range(&spec, 2).contains(&(next.len() - 1)));
        }
        assert_eq!((lengths_seen.first(), lengths_seen.last()), (Some(&0), Some(&40)), "seed {seed}");
        // A record that its header does not describe is refused.
        assert_eq!(record_field(&spec, &record[..record.len() - 1], 0), None);
        assert_eq!(record_field(&spec, &[0u8; 3], 0), None);
        assert!(!replace_field(&spec, b"k", &[1u8; 30], 0, &mut rng, &mut next));
    }

    #[test]
    fn deterministic_values_are_ycsbs() {
        // YCSB's buildDeterministicValue("user6284781860667377211", "field0") with
        // fieldlength 100, run in Java.
        let mut out = Vec::new();
        deterministic_value(b"user6284781860667377211", b"field0", 100, &mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "user6284781860667377211:field0:-56807877:2032869390:-165488160:1762371712:-169193395:-1039977118:-10"
        );
        deterministic_value(b"user1", b"f2", 5, &mut out);
        assert_eq!(out, b"user1");
        // The same as hashing the whole string each round, as YCSB does.
        let naive = |key: &str, field: &str, length: usize| {
            let mut s = format!("{key}:{field}");
            while s.len() < length {
                s.push(':');
                let h = s.bytes().fold(0i32, |h, b| h.wrapping_mul(31).wrapping_add(i32::from(b)));
                s.push_str(&h.to_string());
            }
            s.truncate(length);
            s
        };
        for length in [0, 1, 30, 100, 1000] {
            deterministic_value(b"user42", b"field7", length, &mut out);
            assert_eq!(out, naive("user42", "field7", length).as_bytes(), "length {length}");
        }
    }

    #[test]
    fn integrity_records_verify_and_random_ones_do_not() {
        let spec = YcsbSpec::parse("fieldcount=3\nfieldlength=50\ndataintegrity=true", "t").unwrap();
        let mut rng = value_rng(7, 0);
        let mut record = Vec::new();
        build_record(&spec, b"user9", &mut rng, &mut record);
        assert_eq!(record.len(), 150);
        assert!(verify_record(&spec, b"user9", None, &record));
        assert!(verify_record(&spec, b"user9", Some(1), &record[field_range(&spec, 1)]));
        assert!(!verify_record(&spec, b"user8", None, &record));
        let mut value = Vec::new();
        new_field_value(&spec, b"user9", 2, &mut rng, &mut value);
        assert_eq!(value, &record[100..]);
        record[120] ^= 1;
        assert!(!verify_record(&spec, b"user9", None, &record));
        assert!(!verify_record(&spec, b"user9", Some(2), &record[100..]));
        let mut random = Vec::new();
        fill_record(&spec, &mut rng, &mut random);
        assert!(!verify_record(&spec, b"user9", None, &random));
        // Without dataintegrity there is nothing to check.
        let plain = YcsbSpec::parse("fieldcount=3", "t").unwrap();
        assert!(verify_record(&plain, b"user9", None, &random));
    }
}
