//! The run phase: a per-thread, deterministic stream of YCSB operations.
//!
//! Each [`OpGenerator`] draws from its own generator seeded by `(seed, thread)`, so a
//! thread's sequence of operation kinds, fields and scan lengths is reproducible. The
//! request keys are reproducible too while no inserts run concurrently: with inserts,
//! which keys exist depends on how the threads interleave (as in YCSB), because a
//! request only names keys below [`KeySpace::acknowledged_end`].
//!
//! # Request keys (key numbers, before [`crate::ycsb::build_key`])
//!
//! * `uniform`: uniform over this instance's loaded keys,
//!   `insertstart..insertstart + insertcount` (as YCSB: records inserted during the run
//!   are never requested).
//! * `hotspot`: [`Hotspot`] over the same range (the hot set is its low end).
//! * `zipfian`: [`ScrambledZipf`] over `insertstart..insertstart + n`, where `n` =
//!   [`YcsbSpec::zipfian_key_count`] counts the loaded keys plus the inserts expected in
//!   the run, as YCSB sizes its scrambled zipfian, so a record inserted later had its
//!   popularity all along. A key not yet inserted is drawn again; after
//!   [`KEY_REDRAWS_MAX`] draws (only when few of the expected keys exist yet) the key
//!   is uniform over the existing ones instead, and [`OpGenerator::key_fallbacks`]
//!   counts it. Inserts beyond the expected count are never requested.
//! * `latest`: [`Latest`] over `insertstart..acknowledged_end`: the newest acknowledged
//!   key is the most popular, and popularity follows the inserts as they complete.
//! * `sequential`: [`KeySpace::next_sequential_key`], the loaded keys in order, one
//!   sequence shared by the threads.
//! * `exponential`: the newest acknowledged key minus an [`Exponential`] age, with
//!   `exponential.percentile`% of the ages below `recordcount × exponential.frac` (as
//!   YCSB); an age reaching below `insertstart` is drawn again, and after
//!   [`KEY_REDRAWS_MAX`] draws the key is uniform instead (counted as for `zipfian`).
//!
//! The rank-to-key permutation of `zipfian` is seeded by the run seed alone, so all
//! threads agree on which keys are hot.

use crate::dist::{Exponential, Hotspot, Latest, ScanLength, ScrambledZipf, derive_seed, uniform_below, unit_f64};
use crate::limits::KEY_REDRAWS_MAX;
use crate::ycsb::{KeySpace, RequestDistribution, ScanLengthDistribution, YcsbSpec};
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use serde::Serialize;

/// The stream of the zipfian permutation, above every thread's stream number.
const PERMUTATION_STREAM: u64 = 1 << 32;

/// One operation of the run phase. Keys are key *numbers*; `field: None` means all
/// fields, `Some(i)` the one field `i` (see [`crate::ycsb::field_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read a record: all fields if `readallfields`, else one uniformly chosen field.
    Read {
        /// The record.
        key: u64,
        /// The field to read, or `None` for all.
        field: Option<u32>,
    },
    /// Overwrite a record's fields with new values: all if `writeallfields`, else one
    /// uniformly chosen field.
    Update {
        /// The record.
        key: u64,
        /// The field to write, or `None` for all.
        field: Option<u32>,
    },
    /// Insert a new record with all fields. The key comes from
    /// [`KeySpace::next_insert_key`]: acknowledge it with
    /// [`KeySpace::acknowledge_insert`] once the insert is done, even if it failed.
    Insert {
        /// The new record.
        key: u64,
    },
    /// Read `len` records in key-name order, starting at the record `start`: all fields
    /// if `readallfields`, else the one field `field` of each.
    Scan {
        /// The first record.
        start: u64,
        /// Records to read, in `minscanlength..=maxscanlength`.
        len: u32,
        /// The field to read, or `None` for all.
        field: Option<u32>,
    },
    /// Read a record, then write it back with new values. `field` is the field written
    /// (`None` = all, per `writeallfields`); the read fetches all fields if
    /// `readallfields`, else the same field. (YCSB draws the read field independently;
    /// one field per operation keeps the operation a single record-range update.)
    ReadModifyWrite {
        /// The record.
        key: u64,
        /// The field to write, or `None` for all.
        field: Option<u32>,
    },
}

impl Op {
    /// The kind of this operation.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Read { .. } => OpKind::Read,
            Op::Update { .. } => OpKind::Update,
            Op::Insert { .. } => OpKind::Insert,
            Op::Scan { .. } => OpKind::Scan,
            Op::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
        }
    }

    /// The key number the operation names (a scan's first record).
    pub fn key(&self) -> u64 {
        match *self {
            Op::Read { key, .. } | Op::Update { key, .. } | Op::Insert { key } | Op::ReadModifyWrite { key, .. } => key,
            Op::Scan { start, .. } => start,
        }
    }
}

/// The kinds of [`Op`], for counting and reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// [`Op::Read`].
    Read,
    /// [`Op::Update`].
    Update,
    /// [`Op::Insert`].
    Insert,
    /// [`Op::Scan`].
    Scan,
    /// [`Op::ReadModifyWrite`].
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in declaration order.
    pub const ALL: [OpKind; 5] = [OpKind::Read, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];

    /// YCSB's name of the kind, as in its reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// How request keys are drawn; see the module documentation.
#[derive(Clone, Debug)]
enum KeyChooser {
    Uniform { start: u64, count: u64 },
    Zipfian { start: u64, dist: ScrambledZipf },
    Latest { oldest: u64, dist: Latest },
    Hotspot(Hotspot),
    Sequential,
    Exponential { oldest: u64, dist: Exponential },
}

/// One thread's generator of run-phase operations.
#[derive(Debug)]
pub struct OpGenerator<'k> {
    keyspace: &'k KeySpace,
    thread: u32,
    rng: Xoshiro256PlusPlus,
    /// `(upper bound of u, kind)` for the kinds with a non-zero share, by cumulative
    /// share; the last bound is infinite so that rounding never falls off the end.
    kinds: Box<[(f64, OpKind)]>,
    keys: KeyChooser,
    scan_length: ScanLength,
    field_count: u32,
    read_all_fields: bool,
    write_all_fields: bool,
    insert_start: u64,
    key_fallbacks: u64,
}

impl<'k> OpGenerator<'k> {
    /// The generator of thread `thread` for `spec`, drawing keys from `keyspace`
    /// (built from the same spec and shared by all threads). Deterministic for
    /// `(seed, thread)`; the zipfian hot keys depend on `seed` only.
    ///
    /// # Panics
    ///
    /// If `keyspace` was built from a spec with another load range.
    pub fn new(spec: &YcsbSpec, keyspace: &'k KeySpace, seed: u64, thread: u32) -> OpGenerator<'k> {
        assert_eq!(
            keyspace.load_range(),
            spec.insert_start()..spec.insert_start() + spec.insert_count(),
            "key space built from another spec"
        );
        let mix = spec.mix();
        let mut kinds = Vec::with_capacity(OpKind::ALL.len());
        let mut cumulative = 0.0;
        for kind in OpKind::ALL {
            let share = mix.proportion(kind);
            if share > 0.0 {
                cumulative += share;
                kinds.push((cumulative, kind));
            }
        }
        assert!(!kinds.is_empty(), "spec invariant: some proportion is positive");
        if let Some(last) = kinds.last_mut() {
            last.0 = f64::INFINITY;
        }

        let start = spec.insert_start();
        let count = spec.insert_count();
        let exponent = spec.zipfian_constant();
        let keys = match spec.request_distribution() {
            RequestDistribution::Uniform => KeyChooser::Uniform { start, count },
            RequestDistribution::Zipfian => KeyChooser::Zipfian {
                start,
                dist: ScrambledZipf::new(spec.zipfian_key_count(), exponent, derive_seed(seed, PERMUTATION_STREAM)),
            },
            RequestDistribution::Latest => KeyChooser::Latest { oldest: start, dist: Latest::new(exponent) },
            RequestDistribution::Hotspot => KeyChooser::Hotspot(Hotspot::new(
                start,
                count,
                spec.hotspot_data_fraction(),
                spec.hotspot_op_fraction(),
            )),
            RequestDistribution::Sequential => KeyChooser::Sequential,
            RequestDistribution::Exponential => KeyChooser::Exponential {
                oldest: start,
                dist: Exponential::new(
                    spec.exponential_percentile(),
                    spec.record_count() as f64 * spec.exponential_frac(),
                ),
            },
        };
        let (min, max) = (spec.scan_length_min(), spec.scan_length_max());
        let scan_length = match spec.scan_length_distribution() {
            ScanLengthDistribution::Uniform => ScanLength::uniform(min, max),
            ScanLengthDistribution::Zipfian => ScanLength::zipfian(min, max, exponent),
        };
        OpGenerator {
            keyspace,
            thread,
            rng: Xoshiro256PlusPlus::seed_from_u64(derive_seed(seed, u64::from(thread))),
            kinds: kinds.into_boxed_slice(),
            keys,
            scan_length,
            field_count: spec.field_count(),
            read_all_fields: spec.read_all_fields(),
            write_all_fields: spec.write_all_fields(),
            insert_start: start,
            key_fallbacks: 0,
        }
    }

    /// The next operation. An [`Op::Insert`] has taken its key from the key space and
    /// must be acknowledged there.
    ///
    /// # Panics
    ///
    /// As [`KeySpace::next_insert_key`], when the operation is an insert.
    #[allow(clippy::should_implement_trait, reason = "an endless stream: Iterator's Option would always be Some")]
    pub fn next(&mut self) -> Op {
        let u = unit_f64(&mut self.rng);
        let kind = self.kinds.iter().find(|(bound, _)| u < *bound).map_or(OpKind::Read, |&(_, kind)| kind);
        match kind {
            OpKind::Read => Op::Read { key: self.request_key(), field: self.field(self.read_all_fields) },
            OpKind::Update => Op::Update { key: self.request_key(), field: self.field(self.write_all_fields) },
            OpKind::Insert => Op::Insert { key: self.keyspace.next_insert_key() },
            OpKind::Scan => {
                let start = self.request_key();
                let len = self.scan_length.sample_length(&mut self.rng);
                Op::Scan { start, len, field: self.field(self.read_all_fields) }
            }
            OpKind::ReadModifyWrite => {
                Op::ReadModifyWrite { key: self.request_key(), field: self.field(self.write_all_fields) }
            }
        }
    }

    /// The thread number this generator was made for.
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// How many zipfian (or exponential) request keys fell back to a uniform choice after
    /// [`KEY_REDRAWS_MAX`] draws of keys not yet inserted (or below `insertstart`).
    pub fn key_fallbacks(&self) -> u64 {
        self.key_fallbacks
    }

    /// A key number that exists now.
    fn request_key(&mut self) -> u64 {
        let end = self.keyspace.acknowledged_end();
        let rng = &mut self.rng;
        let key = match &mut self.keys {
            KeyChooser::Uniform { start, count } => *start + uniform_below(rng, *count),
            KeyChooser::Hotspot(dist) => dist.sample_item(rng),
            KeyChooser::Latest { oldest, dist } => dist.sample_item(rng, *oldest, end),
            KeyChooser::Sequential => self.keyspace.next_sequential_key(),
            KeyChooser::Exponential { oldest, dist } => {
                let span = end - *oldest;
                match (0..KEY_REDRAWS_MAX).map(|_| dist.sample_age(rng)).find(|&age| age < span) {
                    Some(age) => end - 1 - age,
                    None => {
                        self.key_fallbacks += 1;
                        *oldest + uniform_below(rng, span)
                    }
                }
            }
            KeyChooser::Zipfian { start, dist } => {
                let mut found = None;
                for _ in 0..KEY_REDRAWS_MAX {
                    let key = *start + dist.sample_item(rng);
                    if key < end {
                        found = Some(key);
                        break;
                    }
                }
                found.unwrap_or_else(|| {
                    self.key_fallbacks += 1;
                    self.insert_start + uniform_below(rng, end - self.insert_start)
                })
            }
        };
        debug_assert!(key < end, "request key {key} not yet inserted (watermark {end})");
        key
    }

    /// `None` for all fields, else one uniformly chosen field.
    fn field(&mut self, all: bool) -> Option<u32> {
        // field_count <= FIELD_COUNT_MAX, so the draw fits u32.
        (!all).then(|| uniform_below(&mut self.rng, u64::from(self.field_count)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Runs `ops` operations on one thread, acknowledging inserts at once, and counts
    /// operations by kind and requests by key.
    fn run(spec: &YcsbSpec, seed: u64, ops: u32) -> (HashMap<OpKind, u32>, HashMap<u64, u32>, Vec<Op>) {
        let keyspace = KeySpace::new(spec);
        let mut generator = OpGenerator::new(spec, &keyspace, seed, 0);
        let mut kinds = HashMap::new();
        let mut keys = HashMap::new();
        let mut first = Vec::new();
        for i in 0..ops {
            let op = generator.next();
            *kinds.entry(op.kind()).or_insert(0) += 1;
            if let Op::Insert { key } = op {
                assert_eq!(key, keyspace.acknowledged_end(), "seed {seed}: inserts in order on one thread");
                keyspace.acknowledge_insert(key);
            } else {
                assert!(op.key() < keyspace.acknowledged_end(), "seed {seed}: {op:?} names a missing key");
                assert!(op.key() >= spec.insert_start(), "seed {seed}: {op:?} below insertstart");
                *keys.entry(op.key()).or_insert(0) += 1;
            }
            if i < 1000 {
                first.push(op);
            }
        }
        (kinds, keys, first)
    }

    #[test]
    fn standard_mixes_are_generated() {
        let ops = 100_000;
        for (i, name) in ["a", "b", "c", "d", "e", "f"].into_iter().enumerate() {
            let seed = 1000 + i as u64;
            let spec = YcsbSpec::builtin(name).unwrap();
            let (kinds, _, _) = run(&spec, seed, ops);
            for kind in OpKind::ALL {
                let observed = f64::from(kinds.get(&kind).copied().unwrap_or(0)) / f64::from(ops);
                let expected = spec.mix().proportion(kind);
                assert!(
                    (observed - expected).abs() < 0.01,
                    "seed {seed}, workload {name}: {kind:?} observed {observed}, expected {expected}"
                );
                if expected == 0.0 {
                    assert_eq!(observed, 0.0, "workload {name}: {kind:?}");
                }
            }
        }
    }

    #[test]
    fn fields_follow_read_and_write_all() {
        let seed = 3;
        let spec = YcsbSpec::builtin("a").unwrap();
        let (_, _, ops) = run(&spec, seed, 1000);
        let mut seen_fields = [false; 10];
        for op in ops {
            match op {
                Op::Read { field, .. } => assert_eq!(field, None, "seed {seed}"),
                Op::Update { field: Some(f), .. } => seen_fields[f as usize] = true,
                other => panic!("seed {seed}: {other:?} in workload a"),
            }
        }
        assert!(seen_fields.iter().all(|&s| s), "seed {seed}: {seen_fields:?}");

        let spec = YcsbSpec::builtin("rw:50").unwrap();
        let (_, _, ops) = run(&spec, seed, 1000);
        for op in ops {
            match op {
                Op::Read { field: Some(f), .. } | Op::Update { field: Some(f), .. } => assert!(f < 10),
                other => panic!("seed {seed}: {other:?} in rw:50"),
            }
        }
    }

    #[test]
    fn scans_have_lengths_in_range() {
        let seed = 4;
        let spec = YcsbSpec::builtin("e").unwrap();
        let (_, _, ops) = run(&spec, seed, 1000);
        let mut longest = 0;
        for op in ops {
            if let Op::Scan { len, field, .. } = op {
                assert!((1..=100).contains(&len), "seed {seed}: {op:?}");
                assert_eq!(field, None);
                longest = longest.max(len);
            }
        }
        assert!(longest > 90, "seed {seed}: longest scan {longest}");
    }

    #[test]
    fn deterministic_per_seed_and_thread() {
        let spec = YcsbSpec::builtin("b").unwrap();
        let (_, _, a) = run(&spec, 9, 1000);
        let (_, _, b) = run(&spec, 9, 1000);
        let (_, _, c) = run(&spec, 10, 1000);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let keyspace = KeySpace::new(&spec);
        let mut t0 = OpGenerator::new(&spec, &keyspace, 9, 0);
        let mut t1 = OpGenerator::new(&spec, &keyspace, 9, 1);
        assert_eq!(t1.thread(), 1);
        let s0: Vec<Op> = (0..100).map(|_| t0.next()).collect();
        let s1: Vec<Op> = (0..100).map(|_| t1.next()).collect();
        assert_eq!(s0, a[..100]);
        assert_ne!(s0, s1);
    }

    #[test]
    fn zipfian_hot_keys_are_shared_by_threads_and_scattered() {
        let spec = YcsbSpec::builtin("c").unwrap();
        let keyspace = KeySpace::new(&spec);
        let hottest = |thread| {
            let mut generator = OpGenerator::new(&spec, &keyspace, 5, thread);
            let mut counts = vec![0u32; 1000];
            for _ in 0..50_000 {
                counts[generator.next().key() as usize] += 1;
            }
            counts.iter().enumerate().max_by_key(|&(_, c)| *c).map(|(k, _)| k).unwrap()
        };
        let (h0, h1) = (hottest(0), hottest(1));
        assert_eq!(h0, h1);
        let hot_key =
            ScrambledZipf::new(spec.zipfian_key_count(), spec.zipfian_constant(), derive_seed(5, PERMUTATION_STREAM))
                .item_of_rank(1);
        assert_eq!(h0 as u64, hot_key);
    }

    #[test]
    fn latest_requests_the_newest_key_most() {
        let seed = 6;
        let spec = YcsbSpec::parse("requestdistribution=latest\nreadproportion=1\nupdateproportion=0", "test").unwrap();
        let (_, keys, _) = run(&spec, seed, 50_000);
        let (&top, _) = keys.iter().max_by_key(|&(k, c)| (*c, *k)).unwrap();
        assert_eq!(top, 999, "seed {seed}");

        // With inserts (workload d) the newest keys at the time of the request stay the
        // most requested: count requests by age, the distance from the watermark.
        let spec = YcsbSpec::builtin("d").unwrap();
        let keyspace = KeySpace::new(&spec);
        let mut generator = OpGenerator::new(&spec, &keyspace, seed, 0);
        let mut by_age = vec![0u32; 1000];
        for _ in 0..50_000 {
            match generator.next() {
                Op::Insert { key } => keyspace.acknowledge_insert(key),
                op => {
                    let age = keyspace.acknowledged_end() - 1 - op.key();
                    if let Some(count) = by_age.get_mut(age as usize) {
                        *count += 1;
                    }
                }
            }
        }
        assert!(keyspace.inserts_issued() > 2000, "seed {seed}");
        let (top, _) = by_age.iter().enumerate().max_by_key(|&(_, c)| *c).unwrap();
        assert_eq!(top, 0, "seed {seed}");
        let young: u32 = by_age[..100].iter().sum();
        let old: u32 = by_age[900..].iter().sum();
        assert!(young > 10 * old, "seed {seed}: ages below 100 {young}, ages 900..1000 {old}");
    }

    #[test]
    fn hotspot_sends_its_share_to_the_hot_set() {
        let seed = 7;
        let spec = YcsbSpec::parse(
            "requestdistribution=hotspot\nrecordcount=10000\nreadproportion=1\nupdateproportion=0",
            "test",
        )
        .unwrap();
        let (kinds, keys, _) = run(&spec, seed, 100_000);
        let hot: u32 = keys.iter().filter(|&(&k, _)| k < 2000).map(|(_, &c)| c).sum();
        let share = f64::from(hot) / f64::from(kinds[&OpKind::Read]);
        assert!((share - spec.hotspot_op_fraction()).abs() < 0.01, "seed {seed}: hot share {share}");
    }

    #[test]
    fn zipfian_with_inserts_requests_inserted_keys() {
        let seed = 8;
        // 50% inserts into 100 records: most of the zipfian key space is inserted later.
        let spec = YcsbSpec::parse(
            "recordcount=100\noperationcount=10000\nrequestdistribution=zipfian\nreadproportion=0.5\nupdateproportion=0\ninsertproportion=0.5",
            "test",
        )
        .unwrap();
        assert_eq!(spec.zipfian_key_count(), 100 + 10_000);
        let (_, keys, _) = run(&spec, seed, 10_000);
        assert!(keys.keys().any(|&k| k >= 100), "seed {seed}: inserted keys never requested");
    }

    #[test]
    fn partitioned_instance_stays_in_its_range() {
        let seed = 9;
        let spec =
            YcsbSpec::parse("recordcount=1000\ninsertstart=500\ninsertcount=250\nrequestdistribution=uniform", "test")
                .unwrap();
        let (_, keys, _) = run(&spec, seed, 10_000);
        assert!(keys.keys().all(|k| (500..750).contains(k)), "seed {seed}");
    }

    #[test]
    fn concurrent_generators_with_inserts() {
        let spec = YcsbSpec::builtin("d").unwrap();
        let keyspace = KeySpace::new(&spec);
        let threads = 4;
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let (spec, keyspace) = (&spec, &keyspace);
                scope.spawn(move || {
                    let mut generator = OpGenerator::new(spec, keyspace, 11, thread);
                    for _ in 0..20_000 {
                        match generator.next() {
                            Op::Insert { key } => keyspace.acknowledge_insert(key),
                            op => assert!(op.key() < keyspace.acknowledged_end(), "{op:?}"),
                        }
                    }
                });
            }
        });
        assert_eq!(keyspace.acknowledged_end(), 1000 + keyspace.inserts_issued());
    }
}
