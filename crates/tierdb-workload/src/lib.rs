//! tierdb-workload: the operations a benchmark runs against tierdb, and nothing else.
//!
//! It implements YCSB's core workload ([`ycsb`]): reading YCSB property files (and our
//! built-in copies of the standard workloads A–F plus the read-only, read/write and
//! scan workloads of van Renen et al., SIGMOD 2018), naming keys exactly as YCSB does,
//! and generating per-thread, seed-deterministic streams of reads, updates, inserts,
//! scans and read-modify-writes. The samplers behind it ([`dist`]) are exact: Zipf by
//! rejection-inversion for any exponent, scrambled by a seeded permutation. No storage
//! engine code lives here; a driver executes the operations.
//!
//! ```
//! use tierdb_workload::{KeySpace, LoadKeys, Op, OpGenerator, YcsbSpec, build_key};
//!
//! # fn main() -> Result<(), tierdb_workload::WorkloadError> {
//! let mut spec = YcsbSpec::resolve("a")?;
//! spec.set("recordcount", "10000")?;
//! let keyspace = KeySpace::new(&spec);
//! let mut key = Vec::new();
//! for number in LoadKeys::new(&spec, 0, 1).take(1) {
//!     build_key(&spec, number, &mut key);
//!     assert_eq!(key, b"user6284781860667377211");
//! }
//! let mut generator = OpGenerator::new(&spec, &keyspace, 42, 0);
//! match generator.next() {
//!     Op::Read { key, field: None } | Op::Update { key, field: Some(_) } => assert!(key < 10_000),
//!     other => unreachable!("workload a has no {other:?}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! [`tpcc`] holds TPC-C: schema and key encodings, the loader, NURand, the transaction
//! mix, the five transactions over a small transactional key-value trait, and the
//! consistency conditions.
//!
//! All code is safe Rust; the key space shared by threads uses atomics only.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dist;
pub mod error;
pub mod limits;
pub mod tpcc;
pub mod ycsb;

pub use error::WorkloadError;
pub use ycsb::{
    FieldLengthDistribution, IgnoredProperty, InsertOrder, KeySpace, LoadKeys, Mix, Op, OpGenerator, OpKind,
    RequestDistribution, ScanLengthDistribution, UnknownName, YcsbSpec, build_key, build_record, field_range,
    fill_record, record_field, value_rng,
};

// The crate README is what crates.io shows; its examples are compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
