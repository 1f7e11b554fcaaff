//! Limits of the workload generators, in one place.
//!
//! Every bound a property value is checked against, and every loop bound of a sampler,
//! is a named constant here; how they relate is checked at compile time. A value past a
//! limit is rejected when the workload is parsed, so the generators never meet it.

/// Most records a workload may load (`recordcount`): 2^40, about 10^12.
pub const RECORD_COUNT_MAX: u64 = 1 << 40;

/// Most operations a run phase may ask for (`operationcount`).
pub const OPERATION_COUNT_MAX: u64 = 1 << 40;

/// Key numbers stay below this bound, including the keys inserted during a run. It is
/// the largest domain a Zipf distribution or a key permutation (`dist/`) is built for.
pub const KEY_NUMBER_MAX: u64 = 1 << 42;

/// Most fields in a record (`fieldcount`).
pub const FIELD_COUNT_MAX: u32 = 1024;

/// Longest field (`fieldlength`): 1 MiB.
pub const FIELD_LENGTH_MAX_BYTES: u32 = 1 << 20;

/// Largest record, `fieldcount × fieldlength`: 16 MiB.
pub const RECORD_LENGTH_MAX_BYTES: u64 = 16 << 20;

/// Longest scan (`maxscanlength`), in records.
pub const SCAN_LENGTH_MAX: u32 = 1 << 20;

/// Widest zero padding of a key number (`zeropadding`), in digits.
pub const ZERO_PADDING_MAX: u32 = 64;

/// Longest `keyprefix` and `fieldnameprefix`.
pub const PREFIX_MAX_BYTES: usize = 64;

/// Decimal digits of the widest key number: `i64::MIN` has 19 digits and a sign.
pub const KEY_NUMBER_DIGITS_MAX: usize = 20;

/// Longest key [`crate::ycsb::build_key`] produces: prefix, then padding or digits.
pub const KEY_LENGTH_MAX_BYTES: usize = PREFIX_MAX_BYTES + max(ZERO_PADDING_MAX as usize, KEY_NUMBER_DIGITS_MAX);

/// Largest zipfian exponent (`tierdb.zipfianconstant`). Beyond it almost every draw is
/// rank 1 and `x^-s` underflows for modest ranks.
pub const ZIPF_EXPONENT_MAX: f64 = 10.0;

/// Rejection-inversion accepts each candidate with probability well above one half,
/// so a Zipf draw that needs this many candidates is a bug, not bad luck.
pub const ZIPF_CANDIDATES_MAX: u32 = 1000;

/// Redraws of a request key that names a record not yet inserted (a scrambled zipfian
/// key space is sized for the inserts to come) before falling back to a uniform
/// choice among the inserted keys.
pub const KEY_REDRAWS_MAX: u32 = 1024;

/// Inserts handed out but not yet acknowledged, over all threads of one run. Each is a
/// slot (8 bytes) of the acknowledgement window of [`crate::ycsb::KeySpace`].
pub const INSERTS_IN_FLIGHT_MAX: u64 = 1 << 16;

/// How long [`crate::ycsb::KeySpace::next_insert_key`] waits for the acknowledgement
/// window to drain before it declares a lost acknowledgement (a bug in the driver).
pub const INSERT_WINDOW_WAIT_MS_MAX: u64 = 60_000;

/// Largest property file read by [`crate::ycsb::YcsbSpec::from_file`].
pub const PROPERTIES_FILE_MAX_BYTES: u64 = 1 << 20;

/// Largest field length histogram file (`fieldlengthhistogram`).
pub const HISTOGRAM_FILE_MAX_BYTES: u64 = 4 << 20;

/// Most buckets of a field length histogram. YCSB inserts each line's bucket at the
/// index it names (Java's `ArrayList.add(index, element)`), which we reproduce, so the
/// cost of reading a file is quadratic in the bucket count at worst.
pub const HISTOGRAM_BUCKETS_MAX: usize = 1 << 16;

/// Bytes per field of the length header that starts a record whose field lengths vary
/// (`fieldlengthdistribution` other than `constant`): one little-endian `u32` each.
pub const FIELD_LENGTH_HEADER_BYTES: usize = 4;

/// Most threads a load phase may be split into.
pub const LOAD_THREADS_MAX: u32 = 1 << 16;

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

// The run may insert up to two expected-insert allowances per operation on top of the
// loaded records; all of them must stay below KEY_NUMBER_MAX.
const _: () = assert!(RECORD_COUNT_MAX + 2 * OPERATION_COUNT_MAX <= KEY_NUMBER_MAX);
// Key numbers and ranks convert to f64 without loss.
const _: () = assert!(KEY_NUMBER_MAX <= 1 << 53);
// A key number fits the signed 64-bit "long" YCSB formats.
const _: () = assert!(KEY_NUMBER_MAX <= i64::MAX as u64);
const _: () =
    assert!(FIELD_LENGTH_MAX_BYTES as u64 <= RECORD_LENGTH_MAX_BYTES, "one full-length field must fit a record");
const _: () = assert!(RECORD_LENGTH_MAX_BYTES <= u32::MAX as u64);
// A record of the longest fields, with its length header, still fits the record limit
// when fieldcount × fieldlength does: the header is checked as part of the record.
const _: () = assert!(
    (FIELD_COUNT_MAX as usize * FIELD_LENGTH_HEADER_BYTES) as u64 + FIELD_LENGTH_MAX_BYTES as u64
        <= RECORD_LENGTH_MAX_BYTES
);
const _: () = assert!(FIELD_LENGTH_MAX_BYTES as u64 <= u32::MAX as u64, "a field length fits its u32 header slot");
const _: () = assert!(HISTOGRAM_BUCKETS_MAX <= u32::MAX as usize);
const _: () = assert!(INSERTS_IN_FLIGHT_MAX.is_power_of_two());
const _: () = assert!(KEY_LENGTH_MAX_BYTES <= 256);
const _: () = assert!(SCAN_LENGTH_MAX >= 1000, "YCSB's default maxscanlength must be allowed");
