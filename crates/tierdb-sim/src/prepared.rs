//! A trace made ready for replay: page ids renumbered densely (0, 1, 2, … in order of
//! first use) and each record packed into one `u64`, so that the simulator indexes
//! plain vectors instead of hashing, and a 10-million-access trace takes 80 MB.
//!
//! Packing: bits 0–2 the [`Op`] code, bits 3.. the dense page id (for a marker, its
//! code).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::trace::{Marker, Op, Trace};

/// Where measurement starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Warmup {
    /// At the `measure` marker if the trace has one, else after the first half of the
    /// accesses (the Spitfire paper's simulator warms up on the first half).
    Auto,
    /// After the first half of the accesses.
    FirstHalf,
    /// From the first record (cold start counted, as the ARC paper counts).
    None,
}

/// A multiplicative hasher for page ids (integers): far cheaper than SipHash and good
/// enough for ids that are not chosen by an adversary.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

/// A hash map keyed by page id, hashed with [`IdHasher`].
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Low bits of a packed record that hold the [`Op`] code.
pub const OP_BITS: u32 = 3;
/// Mask of the [`Op`] code in a packed record.
pub const OP_MASK: u64 = (1 << OP_BITS) - 1;

/// A packed, densely numbered trace.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The records in trace order, one packed `u64` each (see the module docs);
    /// markers keep their place. Decode with [`unpack`].
    pub ops: Vec<u64>,
    /// Original page id of each dense id.
    pub original: Vec<u64>,
    /// Bytes per page, from the trace's header.
    pub page_size_bytes: u32,
    /// Where the trace came from, from the trace's header.
    pub source: String,
    /// Index in `ops` of the `measure` marker, if any.
    pub measure_marker: Option<usize>,
    /// Pages whose first record is not an allocation: the database's size before the
    /// trace began (the engine's `DatabaseSize` at open).
    pub preexisting_pages: u64,
}

impl Prepared {
    /// Renumbers and packs `trace` in one pass: dense ids follow the order of first
    /// use, markers included in place.
    pub fn new(trace: &Trace) -> Prepared {
        let mut ids: IdMap<u32> = IdMap::default();
        ids.reserve(trace.records.len() / 4);
        let mut original = Vec::new();
        let mut ops = Vec::with_capacity(trace.records.len());
        let mut measure_marker = None;
        let mut preexisting_pages = 0;
        for r in &trace.records {
            let v = if r.op == Op::Marker {
                if r.page == Marker::Measure.code() && measure_marker.is_none() {
                    measure_marker = Some(ops.len());
                }
                r.page
            } else {
                let next = original.len() as u32;
                let id = *ids.entry(r.page).or_insert(next);
                if id == next {
                    original.push(r.page);
                    preexisting_pages += u64::from(r.op != Op::Alloc);
                }
                u64::from(id)
            };
            ops.push((v << OP_BITS) | u64::from(r.op.code()));
        }
        Prepared {
            ops,
            original,
            page_size_bytes: trace.header.page_size_bytes,
            source: trace.header.source.clone(),
            measure_marker,
            preexisting_pages,
        }
    }

    /// Distinct pages.
    pub fn pages(&self) -> usize {
        self.original.len()
    }

    /// Reads and writes.
    pub fn accesses(&self) -> usize {
        self.ops.iter().filter(|&&v| Op::from_code((v & OP_MASK) as u8).is_some_and(Op::is_access)).count()
    }

    /// The index in `ops` where measurement starts.
    pub fn measure_from(&self, w: Warmup) -> usize {
        match (w, self.measure_marker) {
            (Warmup::None, _) => 0,
            (Warmup::Auto, Some(i)) => i,
            (Warmup::Auto | Warmup::FirstHalf, _) => {
                let half = self.accesses() / 2;
                let mut seen = 0;
                for (i, &v) in self.ops.iter().enumerate() {
                    if seen == half {
                        return i;
                    }
                    if Op::from_code((v & OP_MASK) as u8).is_some_and(Op::is_access) {
                        seen += 1;
                    }
                }
                self.ops.len()
            }
        }
    }
}

/// Splits a packed record into its op and its dense page id (for a marker, its
/// code). A code that names no op reads as [`Op::Marker`].
#[inline]
pub fn unpack(v: u64) -> (Op, u64) {
    (Op::from_code((v & OP_MASK) as u8).unwrap_or(Op::Marker), v >> OP_BITS)
}
