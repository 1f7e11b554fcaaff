//! Record values: `fieldcount` fields of `fieldlength` printable random bytes.
//!
//! A record is stored as its fields back to back, field `i` at bytes
//! [`field_range`]`(spec, i)`, so an update of one field overwrites that range and a
//! read of one field reads it. The bytes are printable ASCII (`0x20..=0x5F`), one
//! random byte each, like YCSB's `RandomByteIterator`; they are not meant to compress.

use crate::dist::derive_seed;
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

/// Fills `dst` with printable random bytes (`0x20..=0x5F`), eight per 64-bit draw.
pub fn fill_printable<R: Rng + ?Sized>(rng: &mut R, dst: &mut [u8]) {
    for chunk in dst.chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        for (d, w) in chunk.iter_mut().zip(word) {
            *d = b' ' + (w & 63);
        }
    }
}

/// Replaces `out` with a whole new record: [`YcsbSpec::record_length_bytes`] printable
/// random bytes. Allocates only if `out` has less capacity than a record.
pub fn fill_record<R: Rng + ?Sized>(spec: &YcsbSpec, rng: &mut R, out: &mut Vec<u8>) {
    out.clear();
    out.resize(spec.record_length_bytes(), 0);
    fill_printable(rng, out);
}

/// The bytes of field `field` within a record.
///
/// # Panics
///
/// If `field >= fieldcount`.
pub fn field_range(spec: &YcsbSpec, field: u32) -> Range<usize> {
    assert!(field < spec.field_count(), "field {field} of a record with {} fields", spec.field_count());
    let length = spec.field_length_bytes() as usize;
    let start = field as usize * length;
    start..start + length
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
}
