//! Field lengths: `fieldlengthdistribution` and the histogram file it may name.
//!
//! As YCSB's `CoreWorkload.getFieldLengthGenerator`: `constant` gives every field
//! `fieldlength` bytes; `uniform` draws uniformly from `minfieldlength..=fieldlength`;
//! `zipfian` draws from the same range with the shortest length the most likely (YCSB's
//! `ZipfianGenerator(min, max)`, exponent `tierdb.zipfianconstant`); `histogram` draws
//! from the histogram in the file `fieldlengthhistogram` (YCSB's `HistogramGenerator`,
//! see [`crate::dist::Histogram`]). A new length is drawn for every field written, on
//! insert and update alike.
//!
//! # The histogram file
//!
//! YCSB's format: the first line is `BlockSize<TAB>b`, each further line
//! `bucket<TAB>count`, and YCSB stores each count at the index `bucket` names by
//! inserting it there (Java's `ArrayList.add(index, element)`), so buckets listed in
//! order 0, 1, 2, … are the usual file and an index past the end is an error. We also
//! accept spaces for tabs and skip blank lines, which YCSB refuses. A relative path is
//! looked up next to the workload file that names it, then in the current directory
//! (where YCSB looks).

use crate::dist::{Histogram, Zipf, uniform_below};
use crate::error::WorkloadError;
use crate::limits::{FIELD_LENGTH_MAX_BYTES, HISTOGRAM_BUCKETS_MAX, HISTOGRAM_FILE_MAX_BYTES};
use rand::Rng;
use serde::Serialize;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How field lengths are drawn (`fieldlengthdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldLengthDistribution {
    /// Every field `fieldlength` bytes.
    Constant,
    /// Uniform over `minfieldlength..=fieldlength`.
    Uniform,
    /// Zipfian over `minfieldlength..=fieldlength`, the shortest the most likely.
    Zipfian,
    /// From the histogram file `fieldlengthhistogram`.
    Histogram,
}

impl FieldLengthDistribution {
    /// The property value that selects it.
    pub fn name(self) -> &'static str {
        match self {
            FieldLengthDistribution::Constant => "constant",
            FieldLengthDistribution::Uniform => "uniform",
            FieldLengthDistribution::Zipfian => "zipfian",
            FieldLengthDistribution::Histogram => "histogram",
        }
    }
}

/// A field length histogram read from its file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldLengthHistogram {
    /// The file it was read from, as found (relative paths resolved).
    path: PathBuf,
    /// YCSB's `BlockSize`.
    block_size_bytes: u64,
    /// Buckets in the file.
    bucket_count: usize,
    /// The mean length of a drawn field.
    mean_length_bytes: f64,
    #[serde(skip)]
    dist: Histogram,
}

impl FieldLengthHistogram {
    /// Reads the histogram at `path`.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::Io`] if it cannot be read, [`WorkloadError::FileTooLarge`] beyond
    /// [`HISTOGRAM_FILE_MAX_BYTES`], [`WorkloadError::Histogram`] for content YCSB would
    /// not read or lengths beyond [`FIELD_LENGTH_MAX_BYTES`].
    pub fn from_file(path: &Path) -> Result<FieldLengthHistogram, WorkloadError> {
        let io = |source| WorkloadError::Io { path: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let size_bytes = file.metadata().map_err(io)?.len();
        let too_large =
            || WorkloadError::FileTooLarge { path: path.to_owned(), size_bytes, max_bytes: HISTOGRAM_FILE_MAX_BYTES };
        if size_bytes > HISTOGRAM_FILE_MAX_BYTES {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        file.take(HISTOGRAM_FILE_MAX_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > HISTOGRAM_FILE_MAX_BYTES {
            return Err(too_large());
        }
        FieldLengthHistogram::parse(&crate::ycsb::syntax::decode(bytes), path)
    }

    /// Parses histogram text; `path` names it in errors.
    ///
    /// # Errors
    ///
    /// As [`FieldLengthHistogram::from_file`], less the I/O.
    pub fn parse(text: &str, path: &Path) -> Result<FieldLengthHistogram, WorkloadError> {
        let error = |line, reason: String| WorkloadError::Histogram { path: path.to_owned(), line, reason };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
        let (line, first) = lines.next().ok_or_else(|| error(1, "empty file; expected `BlockSize<TAB>n`".into()))?;
        let block_size_bytes = match first.split_whitespace().collect::<Vec<_>>()[..] {
            ["BlockSize", n, ..] => n.parse::<u32>().map_err(|_| error(line, format!("bad block size `{n}`")))?,
            _ => return Err(error(line, "the first line must be `BlockSize<TAB>n`".into())),
        };
        let mut buckets: Vec<u64> = Vec::new();
        for (line, text) in lines {
            let fields: Vec<&str> = text.split_whitespace().collect();
            let [bucket, count, ..] = fields[..] else {
                return Err(error(line, "expected `bucket<TAB>count`".into()));
            };
            let bucket = bucket.parse::<usize>().map_err(|_| error(line, format!("bad bucket number `{bucket}`")))?;
            let count = count.parse::<u32>().map_err(|_| error(line, format!("bad count `{count}`")))?;
            if bucket > buckets.len() {
                return Err(error(
                    line,
                    format!("bucket {bucket} comes after {} bucket(s); YCSB needs them in order from 0", buckets.len()),
                ));
            }
            if buckets.len() == HISTOGRAM_BUCKETS_MAX {
                return Err(error(line, format!("more than {HISTOGRAM_BUCKETS_MAX} buckets")));
            }
            buckets.insert(bucket, u64::from(count));
        }
        let last = lines_count(text);
        if buckets.is_empty() || buckets.iter().all(|&c| c == 0) {
            return Err(error(last, "no bucket has a count above 0".into()));
        }
        let longest = (buckets.len() as u64 - 1) * u64::from(block_size_bytes);
        if longest > u64::from(FIELD_LENGTH_MAX_BYTES) {
            return Err(error(
                last,
                format!(
                    "fields up to {longest} bytes ({} buckets of {block_size_bytes}); the limit is {FIELD_LENGTH_MAX_BYTES}",
                    buckets.len()
                ),
            ));
        }
        let dist = Histogram::new(u64::from(block_size_bytes), buckets);
        Ok(FieldLengthHistogram {
            path: path.to_owned(),
            block_size_bytes: u64::from(block_size_bytes),
            bucket_count: dist.bucket_count(),
            mean_length_bytes: dist.mean_length(),
            dist,
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The longest field it draws.
    pub fn max_length_bytes(&self) -> u32 {
        // Checked against FIELD_LENGTH_MAX_BYTES when read.
        self.dist.max_length() as u32
    }

    /// The mean length of the fields it draws.
    pub fn mean_length_bytes(&self) -> f64 {
        self.mean_length_bytes
    }
}

fn lines_count(text: &str) -> usize {
    text.lines().count().max(1)
}

/// Where a relative histogram path is found: next to the workload file (`base`), else
/// in the current directory. An absolute path, or one found nowhere, is returned as the
/// first place looked.
pub(crate) fn locate(given: &str, base: Option<&Path>) -> PathBuf {
    let given = Path::new(given);
    match base {
        Some(dir) if given.is_relative() => {
            let beside = dir.join(given);
            if beside.exists() || !given.exists() { beside } else { given.to_owned() }
        }
        _ => given.to_owned(),
    }
}

/// The sampler of field lengths of a valid spec.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FieldLengths {
    /// Always this many bytes.
    Constant(u32),
    /// Uniform over `min..=max`.
    Uniform { min: u32, max: u32 },
    /// `min + rank - 1` for a Zipf rank over `max - min + 1` lengths.
    Zipfian { min: u32, zipf: Zipf },
    /// YCSB's histogram.
    Histogram(Arc<FieldLengthHistogram>),
}

impl FieldLengths {
    /// One field length.
    #[inline]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match self {
            FieldLengths::Constant(length) => *length,
            // The draw is below max - min + 1 <= 2^32, so the sum fits u32.
            FieldLengths::Uniform { min, max } => min + uniform_below(rng, u64::from(max - min) + 1) as u32,
            FieldLengths::Zipfian { min, zipf } => min + (zipf.sample_rank(rng) - 1) as u32,
            // At most FIELD_LENGTH_MAX_BYTES, checked when the file was read.
            FieldLengths::Histogram(h) => h.dist.sample_length(rng) as u32,
        }
    }

    /// The longest length drawn.
    pub(crate) fn max(&self) -> u32 {
        match self {
            FieldLengths::Constant(length) => *length,
            FieldLengths::Uniform { max, .. } => *max,
            FieldLengths::Zipfian { min, zipf } => min + (zipf.n() - 1) as u32,
            FieldLengths::Histogram(h) => h.max_length_bytes(),
        }
    }

    /// The mean length drawn.
    pub(crate) fn mean(&self) -> f64 {
        match self {
            FieldLengths::Constant(length) => f64::from(*length),
            FieldLengths::Uniform { min, max } => (f64::from(*min) + f64::from(*max)) / 2.0,
            FieldLengths::Zipfian { min, zipf } => {
                // E[rank] = Σ k^(1-s) / Σ k^-s; summed directly (at most
                // FIELD_LENGTH_MAX_BYTES terms, once per spec).
                let s = zipf.exponent();
                let (mut weighted, mut total) = (0.0, 0.0);
                for k in 1..=zipf.n() {
                    let p = (k as f64).powf(-s);
                    weighted += k as f64 * p;
                    total += p;
                }
                f64::from(*min) + weighted / total - 1.0
            }
            FieldLengths::Histogram(h) => h.mean_length_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    fn parse(text: &str) -> Result<FieldLengthHistogram, WorkloadError> {
        FieldLengthHistogram::parse(text, Path::new("h.txt"))
    }

    #[test]
    fn reads_ycsb_histograms() {
        let h = parse("BlockSize\t100\n0\t10\n1\t60\n2\t30\n3\t0\n").unwrap();
        assert_eq!((h.block_size_bytes, h.bucket_count, h.max_length_bytes()), (100, 4, 300));
        // Spaces for tabs, blank lines and CRLF are accepted too.
        let same = parse("BlockSize 100\r\n\r\n0 10\r\n1   60\r\n2\t30\r\n3\t0\r\n").unwrap();
        assert_eq!(same, h);
        // YCSB inserts at the index given: 1, then 0 before it.
        let reordered = parse("BlockSize\t8\n0\t5\n0\t7\n").unwrap();
        assert_eq!(reordered.dist, Histogram::new(8, vec![7, 5]));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let lengths = FieldLengths::Histogram(Arc::new(h));
        for _ in 0..1000 {
            assert!([100, 200, 300].contains(&lengths.sample(&mut rng)));
        }
    }

    #[test]
    fn refuses_what_ycsb_cannot_read() {
        let reason = |text| match parse(text) {
            Err(WorkloadError::Histogram { line, reason, .. }) => (line, reason),
            other => panic!("{other:?}"),
        };
        assert_eq!(reason("").0, 1);
        assert!(reason("Blocksize\t10\n0\t1").1.contains("BlockSize"));
        assert!(reason("BlockSize\tx\n0\t1").1.contains("block size"));
        let (line, why) = reason("BlockSize\t10\n0\t1\n2\t1\n");
        assert!(line == 3 && why.contains("in order from 0"), "{line}: {why}");
        assert_eq!(reason("BlockSize\t10\n\n0\n").0, 3);
        assert!(reason("BlockSize\t10\n0\t-1\n").1.contains("count"));
        assert!(reason("BlockSize\t10\n0\t0\n").1.contains("above 0"));
        assert!(reason("BlockSize\t1048576\n0\t1\n1\t1\n2\t1\n").1.contains("limit"));
        let err = parse("BlockSize\t10\n0\tx\n").unwrap_err();
        assert_eq!(err.to_string(), "field length histogram h.txt line 2: bad count `x`");
    }

    #[test]
    fn a_relative_path_is_found_beside_the_workload_file() {
        let dir = tempfile_dir("locate");
        std::fs::write(dir.join("hist.txt"), "").unwrap();
        assert_eq!(locate("hist.txt", Some(&dir)), dir.join("hist.txt"));
        assert_eq!(locate("/abs/hist.txt", Some(&dir)), PathBuf::from("/abs/hist.txt"));
        assert_eq!(locate("nosuch.txt", Some(&dir)), dir.join("nosuch.txt"));
        assert_eq!(locate("hist.txt", None), PathBuf::from("hist.txt"));
        // Found in the current directory (the crate's, under cargo test) only.
        assert_eq!(locate("Cargo.toml", Some(&dir)), PathBuf::from("Cargo.toml"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn means_and_maxima() {
        let zipf = FieldLengths::Zipfian { min: 10, zipf: Zipf::new(91, 0.99) };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let draws = 200_000;
        let observed = (0..draws).map(|_| f64::from(zipf.sample(&mut rng))).sum::<f64>() / f64::from(draws);
        assert!((observed - zipf.mean()).abs() < 0.3, "observed {observed}, mean {}", zipf.mean());
        assert_eq!(zipf.max(), 100);
        let uniform = FieldLengths::Uniform { min: 1, max: 100 };
        assert_eq!((uniform.mean(), uniform.max()), (50.5, 100));
        assert_eq!(FieldLengths::Constant(7).mean(), 7.0);
    }

    fn tempfile_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tierdb-field-length-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
