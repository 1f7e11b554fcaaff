//! YCSB's core workload: its specification, key names, key space, records and
//! operation stream.
//!
//! Read top to bottom: `syntax` (property text as Java reads it), [`catalog`] (the
//! names YCSB reads that we accept without applying), [`field_length`] (field length
//! distributions and histogram files), [`properties`] (the validated [`YcsbSpec`] and
//! its parser), [`builtin`] (the standard and paper workloads), [`keys`] (key numbers to
//! key names), [`keyspace`] (which key numbers exist, shared by threads), [`record`]
//! (record layout and values) and [`generator`] (the per-thread operation stream).
//!
//! A run uses them as follows: resolve a spec, build one [`KeySpace`] from it, load each
//! thread's [`LoadKeys`] with values from [`fill_record`], then give each thread an
//! [`OpGenerator`] and execute what its [`OpGenerator::next`] returns, naming records
//! by [`build_key`] and acknowledging every insert in the key space.

pub mod builtin;
pub mod catalog;
pub mod field_length;
pub mod generator;
pub mod keys;
pub mod keyspace;
pub mod properties;
pub mod record;
mod syntax;

pub use catalog::{IgnoredProperty, UnknownName, ignored_warning};
pub use field_length::{FieldLengthDistribution, FieldLengthHistogram};
pub use generator::{Op, OpGenerator, OpKind};
pub use keys::{build_key, fnv_hash64, key_name_number};
pub use keyspace::{KeySpace, LoadKeys};
pub use properties::{InsertOrder, Mix, RequestDistribution, ScanLengthDistribution, YcsbSpec};
pub use record::{
    build_record, deterministic_value, field_range, fill_printable, fill_record, new_field_value, record_field,
    replace_field, value_rng, verify_record,
};
