//! Replay of a trace file without holding the trace: two passes over the file, read a
//! chunk (a binary block) at a time.
//!
//! 1. [`Index::scan`] numbers the pages densely in order of first use (as
//!    [`Prepared::new`] does), counts records, accesses and accesses per page, and finds
//!    the `measure` marker.
//! 2. [`simulate_file`] reads the file again and feeds each record, translated through
//!    the index, to a [`Replay`] — the driver [`crate::simulate`] runs over a
//!    [`Prepared`] trace, so both count the same (tested below).
//!
//! Memory: the page-id map and the pools, per page; nothing per access. A trace whose
//! format cannot be streamed (text, imported block traces) is parsed whole by
//! [`trace::for_each_chunk`] on each pass.

use std::path::Path;

use crate::error::{SimError, TraceError};
use crate::prepared::{IdMap, Prepared, Warmup};
use crate::sim::{Replay, SimConfig, SimResult, Start};
use crate::skew::{CdfPoint, cdf_of_counts};
use crate::trace::{self, Format, ImportOptions, Marker, Op};

/// What the first pass learns of a trace file: everything the replay needs but the
/// records themselves.
#[derive(Clone, Debug)]
pub struct Index {
    ids: IdMap<u32>,
    /// Original page id of each dense id.
    pub original: Vec<u64>,
    /// Reads and writes per dense page id.
    pub access_counts: Vec<u64>,
    /// Reads and writes per dense page id from the first `measure` marker on (all of
    /// them if the trace has none): the measured run's skew.
    pub measured_counts: Vec<u64>,
    /// Bytes per page, from the trace's header.
    pub page_size_bytes: u32,
    /// Where the trace came from, from the trace's header.
    pub source: String,
    /// Records, markers included.
    pub records: u64,
    /// Reads and writes.
    pub accesses: u64,
    /// Index of the first `measure` marker, if any.
    pub measure_marker: Option<u64>,
    /// Pages whose first record is not an allocation ([`Prepared::preexisting_pages`]).
    pub preexisting_pages: u64,
}

impl Index {
    /// The first pass over the trace of `format` at `path`.
    ///
    /// # Errors
    /// The trace's read errors ([`trace::for_each_chunk`]).
    pub fn scan(path: &Path, format: Format, opts: ImportOptions) -> Result<Index, TraceError> {
        let mut ix = Index {
            ids: IdMap::default(),
            original: Vec::new(),
            access_counts: Vec::new(),
            measured_counts: Vec::new(),
            page_size_bytes: 0,
            source: String::new(),
            records: 0,
            accesses: 0,
            measure_marker: None,
            preexisting_pages: 0,
        };
        let header = trace::for_each_chunk(path, format, opts, |_, chunk| {
            for r in chunk {
                if r.op == Op::Marker {
                    if r.page == Marker::Measure.code() && ix.measure_marker.is_none() {
                        ix.measure_marker = Some(ix.records);
                    }
                } else {
                    let next = ix.original.len() as u32;
                    let id = *ix.ids.entry(r.page).or_insert(next);
                    if id == next {
                        ix.original.push(r.page);
                        ix.access_counts.push(0);
                        ix.measured_counts.push(0);
                        ix.preexisting_pages += u64::from(r.op != Op::Alloc);
                    }
                    if r.op.is_access() {
                        ix.access_counts[id as usize] += 1;
                        ix.accesses += 1;
                        if ix.measure_marker.is_some() {
                            ix.measured_counts[id as usize] += 1;
                        }
                    }
                }
                ix.records += 1;
            }
            Ok(())
        })?;
        if ix.measure_marker.is_none() {
            ix.measured_counts.clone_from(&ix.access_counts);
        }
        ix.page_size_bytes = header.page_size_bytes;
        ix.source = header.source;
        Ok(ix)
    }

    /// The index of a trace held in memory (for tests and for callers that have one).
    pub fn of(p: &Prepared) -> Index {
        let mut access_counts = vec![0u64; p.pages()];
        let mut accesses = 0;
        for &v in &p.ops {
            let (op, x) = crate::prepared::unpack(v);
            if op.is_access() {
                access_counts[x as usize] += 1;
                accesses += 1;
            }
        }
        let measured_counts = match p.measure_marker {
            None => access_counts.clone(),
            Some(m) => {
                let mut c = vec![0u64; p.pages()];
                for &v in &p.ops[m..] {
                    let (op, x) = crate::prepared::unpack(v);
                    if op.is_access() {
                        c[x as usize] += 1;
                    }
                }
                c
            }
        };
        Index {
            ids: p.original.iter().enumerate().map(|(i, &o)| (o, i as u32)).collect(),
            original: p.original.clone(),
            access_counts,
            measured_counts,
            page_size_bytes: p.page_size_bytes,
            source: p.source.clone(),
            records: p.ops.len() as u64,
            accesses,
            measure_marker: p.measure_marker.map(|i| i as u64),
            preexisting_pages: p.preexisting_pages,
        }
    }

    /// Distinct pages.
    pub fn pages(&self) -> usize {
        self.original.len()
    }

    /// Where a replay of `w` starts counting (as [`Prepared::measure_from`]).
    pub fn start(&self, w: Warmup) -> Start {
        match (w, self.measure_marker) {
            (Warmup::None, _) => Start::Record(0),
            (Warmup::Auto, Some(i)) => Start::Record(i),
            (Warmup::Auto | Warmup::FirstHalf, _) => Start::Access(self.accesses / 2),
        }
    }

    /// The skew CDF of the trace's reads and writes ([`crate::skew::cdf`]).
    pub fn skew_cdf(&self) -> Vec<CdfPoint> {
        cdf_of_counts(self.access_counts.clone())
    }
}

/// Replays the trace at `path` (second pass) through `cfg`, given its [`Index`].
///
/// # Errors
/// The trace's read errors (also `Corrupted` if the file changed since the index was
/// made: a page the index does not know); as [`crate::simulate`] otherwise.
pub fn simulate_file(
    path: &Path,
    format: Format,
    opts: ImportOptions,
    ix: &Index,
    cfg: &SimConfig,
) -> Result<SimResult, SimError> {
    let mut replay = Replay::new(cfg, ix.pages(), ix.preexisting_pages, ix.page_size_bytes, ix.start(cfg.warmup))?;
    let mut seen = 0u64;
    trace::for_each_chunk(path, format, opts, |_, chunk| {
        for r in chunk {
            let x = if r.op == Op::Marker {
                r.page
            } else {
                match ix.ids.get(&r.page) {
                    Some(&id) => u64::from(id),
                    None => {
                        return Err(TraceError::Corrupted {
                            path: path.to_path_buf(),
                            what: format!("page {} was not in the trace's first reading (the file changed)", r.page),
                            at: format!("record {seen}"),
                        });
                    }
                }
            };
            replay.step(r.op, x, r.page);
            seen += 1;
        }
        Ok(())
    })?;
    if seen != ix.records {
        return Err(SimError::Trace(TraceError::Corrupted {
            path: path.to_path_buf(),
            what: format!("{seen} records on the second reading, {} on the first (the file changed)", ix.records),
            at: "the end".into(),
        }));
    }
    replay.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;
    use crate::trace::{Header, Record, Trace};

    /// A small trace with every kind of record: a bulk load of allocations, markers,
    /// skewed reads and writes (whole and line-grained), a free.
    fn mixed(seed: u64) -> Trace {
        let mut records = vec![Record::marker(Marker::BulkLoadOn)];
        records.extend((0..300).map(|p| Record::access(Op::Alloc, 1000 + p)));
        records.push(Record::marker(Marker::BulkLoadOff));
        let mut x = seed;
        for i in 0..40_000u64 {
            if i == 15_000 {
                records.push(Record::marker(Marker::Measure));
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
            let p = 1000 + (300f64.powf(u) - 1.0) as u64;
            let op = [Op::Read, Op::Read, Op::Read, Op::Write, Op::ReadLines, Op::WriteLines][(x >> 40) as usize % 6];
            records.push(Record::access(op, p));
        }
        records.push(Record::access(Op::Free, 1299));
        Trace { header: Header { page_size_bytes: 4096, source: "mixed".into() }, records }
    }

    #[test]
    fn streaming_a_file_counts_what_the_whole_trace_counts() {
        let dir = tempfile::tempdir().unwrap();
        for seed in [42u64, 7] {
            let t = mixed(seed);
            let path = dir.path().join(format!("t{seed}.trace"));
            trace::save(&t, &path).unwrap();
            let p = Prepared::new(&t);
            let ix = Index::scan(&path, Format::Tierdb, ImportOptions::default()).unwrap();
            assert_eq!((ix.pages(), ix.records, ix.accesses), (p.pages(), p.ops.len() as u64, p.accesses() as u64));
            assert_eq!((&ix.original, ix.preexisting_pages), (&p.original, p.preexisting_pages));
            assert_eq!(ix.skew_cdf(), crate::skew::cdf(&p));
            let of = Index::of(&p);
            assert_eq!((&of.access_counts, &of.measured_counts), (&ix.access_counts, &ix.measured_counts));
            assert_eq!(ix.measured_counts.iter().sum::<u64>(), 25_000, "the accesses after the marker");
            for policy in ["eager", "hymem", "nvcache", "spitfire", "se2", "lru", "arc"] {
                for warmup in [Warmup::Auto, Warmup::FirstHalf, Warmup::None] {
                    let nvm = if matches!(policy, "lru" | "arc") { 0 } else { 96 };
                    let mut cfg = SimConfig::new(policy, 24, nvm);
                    cfg.seed = seed;
                    cfg.warmup = warmup;
                    let whole = simulate(&p, &cfg).unwrap();
                    let streamed = simulate_file(&path, Format::Tierdb, ImportOptions::default(), &ix, &cfg).unwrap();
                    assert_eq!(whole.stats, streamed.stats, "{policy} seed {seed} {warmup:?}");
                    assert_eq!(whole.nvm_cache, streamed.nvm_cache, "{policy} seed {seed} {warmup:?}");
                    assert_eq!(
                        (whole.accesses, whole.warmup_accesses),
                        (streamed.accesses, streamed.warmup_accesses),
                        "{policy} seed {seed} {warmup:?}"
                    );
                    assert!(whole.stats.dram_hits > 0);
                }
            }
        }
    }

    #[test]
    fn a_file_that_changed_between_the_passes_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        trace::save(&mixed(1), &path).unwrap();
        let ix = Index::scan(&path, Format::Tierdb, ImportOptions::default()).unwrap();
        let mut other = mixed(1);
        other.records.push(Record::access(Op::Read, 5));
        trace::save(&other, &path).unwrap();
        let e = simulate_file(&path, Format::Tierdb, ImportOptions::default(), &ix, &SimConfig::new("eager", 8, 8));
        assert!(e.unwrap_err().to_string().contains("changed"));
    }
}
