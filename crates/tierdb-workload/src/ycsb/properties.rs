//! The YCSB workload specification and its property-file parser.
//!
//! A [`YcsbSpec`] holds the properties of YCSB's `CoreWorkload`, read from property text
//! as YCSB's client reads it (Java's `Properties.load`, see `ycsb/syntax.rs`):
//! `key=value`, `key:value` or `key value`, `#`/`!` comments, `\` continuations and
//! escapes, a repeated key overriding the earlier one.
//!
//! # Invariant
//!
//! A `YcsbSpec` is always valid: every value is within its limit (see [`crate::limits`])
//! and consistent with the others. Its fields are private; the only ways to change it,
//! [`YcsbSpec::parse`] and [`YcsbSpec::set`], validate, and `set` leaves the spec as it
//! was when it fails. The generators therefore take a spec without checking it again.
//!
//! # Which properties do what
//!
//! A workload file YCSB's client accepts runs here unmodified. Every property name falls
//! in one of these classes:
//!
//! * **Applied**, with YCSB's defaults: `workload` (YCSB's `CoreWorkload` only),
//!   `recordcount` (1000, the standard files' value), `operationcount` (1000),
//!   `insertstart` (0), `insertcount` (`recordcount - insertstart`), `fieldcount` (10),
//!   `fieldlength` (100), `minfieldlength` (1), `fieldlengthdistribution` (`constant`;
//!   also `uniform`, `zipfian`, `histogram`), `fieldlengthhistogram` (`hist.txt`),
//!   `fieldnameprefix` (`field`), `readallfields` (true), `writeallfields` (false),
//!   `dataintegrity` (false), `readproportion` (0.95), `updateproportion` (0.05),
//!   `insertproportion`, `scanproportion`, `readmodifywriteproportion` (0),
//!   `requestdistribution` (`uniform`; also `zipfian`, `latest`, `hotspot`, `sequential`,
//!   `exponential`), `hotspotdatafraction` (0.2), `hotspotopnfraction` (0.8),
//!   `exponential.percentile` (95), `exponential.frac` (0.8571428571), `minscanlength`
//!   (1), `maxscanlength` (1000), `scanlengthdistribution` (`uniform` or `zipfian`),
//!   `insertorder` (`hashed` or `ordered`), `zeropadding` (1). A value we cannot parse,
//!   or cannot honour, is [`WorkloadError::BadValue`] naming the origin and line.
//! * **Ours**: `keyprefix` (`user`), `tierdb.zipfianconstant` (0.99 as in YCSB; the
//!   exponent of every zipfian draw: requests, latest, scan and field lengths) and
//!   `tierdb.seed` (none: the driver chooses; decimal or `0x` hexadecimal).
//! * **Accepted, not applied**: every other name some YCSB version reads (its client's
//!   options, measurement and export, `table`, the database bindings' options, other
//!   workload classes' properties; see [`crate::ycsb::catalog`]). Their values are not
//!   read. [`YcsbSpec::ignored`] lists them, with the applied properties that have no
//!   effect on this particular run (`maxscanlength` without scans, …).
//! * **Unknown**: a name no YCSB version defines. In property text it is a warning
//!   ([`YcsbSpec::unknown`], with the nearest known name); in [`YcsbSpec::set`] (the
//!   command line, where a typo is better caught at once) it is
//!   [`WorkloadError::UnknownProperty`].
//!
//! Proportions are normalised by their sum, as YCSB's `DiscreteGenerator` does, so
//! `readproportion=1` with `updateproportion=1` is a 50/50 mix. Numbers are read as
//! Java reads them (`+5`, `0.5d` and `1e3` included).

use crate::error::WorkloadError;
use crate::limits::{FIELD_LENGTH_HEADER_BYTES, KEY_NUMBER_MAX, PROPERTIES_FILE_MAX_BYTES};
use crate::ycsb::OpKind;
use crate::ycsb::catalog::{self, Group, IgnoredProperty, UnknownName};
use crate::ycsb::field_length::{FieldLengthDistribution, FieldLengthHistogram, FieldLengths};
use crate::ycsb::syntax;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod complete;
mod table;

use table::{PROPERTIES, escape};

/// The origin [`YcsbSpec::set`] reports in its errors.
pub const COMMAND_LINE_ORIGIN: &str = "command line";

/// The `workload` classes that are YCSB's core workload (its package was renamed).
const CORE_WORKLOAD_CLASSES: [&str; 2] = ["site.ycsb.workloads.CoreWorkload", "com.yahoo.ycsb.workloads.CoreWorkload"];

/// YCSB's default `fieldlengthhistogram`.
const HISTOGRAM_FILE_DEFAULT: &str = "hist.txt";

/// How the records a request operates on are chosen (`requestdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestDistribution {
    /// Every loaded record equally likely.
    Uniform,
    /// Zipfian popularity, the popular records scattered over the key space; the key
    /// space includes the inserts expected during the run.
    Zipfian,
    /// Zipfian popularity by recency: the newest record is the most popular.
    Latest,
    /// `hotspotopnfraction` of the requests go to `hotspotdatafraction` of the records.
    Hotspot,
    /// The loaded records in order, over and over, one shared sequence for all threads.
    Sequential,
    /// Exponential popularity by recency: `exponential.percentile`% of the requests go to
    /// the newest `recordcount × exponential.frac` records.
    Exponential,
}

impl RequestDistribution {
    /// The property value that selects it.
    pub fn name(self) -> &'static str {
        match self {
            RequestDistribution::Uniform => "uniform",
            RequestDistribution::Zipfian => "zipfian",
            RequestDistribution::Latest => "latest",
            RequestDistribution::Hotspot => "hotspot",
            RequestDistribution::Sequential => "sequential",
            RequestDistribution::Exponential => "exponential",
        }
    }
}

/// How scan lengths are chosen (`scanlengthdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanLengthDistribution {
    /// Uniform over `minscanlength..=maxscanlength`.
    Uniform,
    /// Zipfian over the same range, short scans the most likely.
    Zipfian,
}

/// How key numbers become key names (`insertorder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InsertOrder {
    /// The key number is hashed (FNV-1a 64), so consecutive inserts land all over the
    /// key space.
    Hashed,
    /// The key number itself, so inserts append in key order (with enough `zeropadding`).
    Ordered,
}

/// The operation mix: the proportions normalised to sum to 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Mix {
    /// Point reads.
    pub read: f64,
    /// Updates of one or all fields.
    pub update: f64,
    /// Inserts of new records.
    pub insert: f64,
    /// Range scans.
    pub scan: f64,
    /// Read, then update, of one record.
    pub read_modify_write: f64,
}

impl Mix {
    /// The proportion of operations of kind `kind`.
    pub fn proportion(&self, kind: OpKind) -> f64 {
        match kind {
            OpKind::Read => self.read,
            OpKind::Update => self.update,
            OpKind::Insert => self.insert,
            OpKind::Scan => self.scan,
            OpKind::ReadModifyWrite => self.read_modify_write,
        }
    }
}

/// A validated YCSB core workload: what to load and which operations to generate.
///
/// See the [module documentation](self) for the keys, their defaults and the invariant.
/// Serialises with the effective values (a report can embed it); [`YcsbSpec::to_properties`]
/// writes it back as property text that parses to an equal spec. Where each value came
/// from (file and line, or the command line) is kept for warnings and errors, but is not
/// part of what a spec is: two specs with equal values are equal.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct YcsbSpec {
    origin: String,
    record_count: u64,
    operation_count: u64,
    field_count: u32,
    field_length_bytes: u32,
    field_length_min_bytes: u32,
    field_length_distribution: FieldLengthDistribution,
    /// `fieldlengthhistogram`: as given, or as found once read.
    field_length_histogram_file: String,
    /// The histogram read, while `field_length_distribution` is `histogram`.
    #[serde(serialize_with = "serialize_histogram")]
    field_length_histogram: Option<Arc<FieldLengthHistogram>>,
    field_name_prefix: String,
    read_all_fields: bool,
    write_all_fields: bool,
    data_integrity: bool,
    read_proportion: f64,
    update_proportion: f64,
    insert_proportion: f64,
    scan_proportion: f64,
    read_modify_write_proportion: f64,
    mix: Mix,
    request_distribution: RequestDistribution,
    hotspot_data_fraction: f64,
    hotspot_op_fraction: f64,
    exponential_percentile: f64,
    exponential_frac: f64,
    scan_length_min: u32,
    scan_length_max: u32,
    scan_length_distribution: ScanLengthDistribution,
    insert_order: InsertOrder,
    zero_padding: u32,
    insert_start: u64,
    /// The effective count: as given, or `record_count - insert_start`.
    insert_count: u64,
    /// Whether `insertcount` was given; if not, it follows `recordcount` and `insertstart`.
    #[serde(skip)]
    insert_count_given: bool,
    key_prefix: String,
    zipfian_constant: f64,
    seed: Option<u64>,
    /// The sampler of field lengths, built from the values above once they are valid.
    #[serde(skip)]
    field_lengths: FieldLengths,
    #[serde(skip)]
    provenance: Provenance,
}

fn serialize_histogram<S: serde::Serializer>(
    histogram: &Option<Arc<FieldLengthHistogram>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    histogram.as_deref().serialize(s)
}

impl Default for YcsbSpec {
    /// YCSB's defaults: 1000 records, 95% reads and 5% updates, uniform requests.
    fn default() -> YcsbSpec {
        let mut spec = YcsbSpec {
            origin: "defaults".to_owned(),
            record_count: 1000,
            operation_count: 1000,
            field_count: 10,
            field_length_bytes: 100,
            field_length_min_bytes: 1,
            field_length_distribution: FieldLengthDistribution::Constant,
            field_length_histogram_file: HISTOGRAM_FILE_DEFAULT.to_owned(),
            field_length_histogram: None,
            field_name_prefix: "field".to_owned(),
            read_all_fields: true,
            write_all_fields: false,
            data_integrity: false,
            read_proportion: 0.95,
            update_proportion: 0.05,
            insert_proportion: 0.0,
            scan_proportion: 0.0,
            read_modify_write_proportion: 0.0,
            mix: Mix { read: 0.0, update: 0.0, insert: 0.0, scan: 0.0, read_modify_write: 0.0 },
            request_distribution: RequestDistribution::Uniform,
            hotspot_data_fraction: 0.2,
            hotspot_op_fraction: 0.8,
            exponential_percentile: 95.0,
            exponential_frac: 0.857_142_857_1,
            scan_length_min: 1,
            scan_length_max: 1000,
            scan_length_distribution: ScanLengthDistribution::Uniform,
            insert_order: InsertOrder::Hashed,
            zero_padding: 1,
            insert_start: 0,
            insert_count: 1000,
            insert_count_given: false,
            key_prefix: "user".to_owned(),
            zipfian_constant: 0.99,
            seed: None,
            field_lengths: FieldLengths::Constant(100),
            provenance: Provenance::default(),
        };
        spec.derive();
        debug_assert!(spec.check().is_ok());
        spec
    }
}

/// What to do with a name no YCSB version defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IfUnknown {
    /// Keep it as a warning (property text: YCSB accepts any name).
    Warn,
    /// Refuse it (the command line).
    Refuse,
}

impl YcsbSpec {
    /// Parses property text. `origin` names the text in error messages, e.g.
    /// `workload file x.txt` gives `workload file x.txt line 7: …`. A relative
    /// `fieldlengthhistogram` is looked up in the current directory.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::Syntax`] for a malformed `\uXXXX` escape,
    /// [`WorkloadError::BadValue`] for a value of an applied property that cannot be
    /// parsed, is out of range or is inconsistent with others (reported at the line of
    /// the last-written key involved), and the errors of reading a field length
    /// histogram ([`WorkloadError::Histogram`], …). Unknown names are not errors: see
    /// [`YcsbSpec::unknown`].
    pub fn parse(text: &str, origin: &str) -> Result<YcsbSpec, WorkloadError> {
        YcsbSpec::parse_in(text, origin, None)
    }

    /// [`YcsbSpec::parse`], resolving relative paths in `base` first.
    fn parse_in(text: &str, origin: &str, base: Option<&Path>) -> Result<YcsbSpec, WorkloadError> {
        let mut spec = YcsbSpec { origin: origin.to_owned(), ..YcsbSpec::default() };
        spec.provenance.base_dir = base.map(Path::to_owned);
        for entry in syntax::entries(text, origin)? {
            spec.apply(&entry.key, &entry.value, origin, entry.line, IfUnknown::Warn)?;
        }
        spec.complete()?;
        Ok(spec)
    }

    /// Reads and parses a property file; errors name it as `workload file <path>`. Its
    /// bytes are read as Java reads them (ISO-8859-1 unless they are UTF-8), and a
    /// relative `fieldlengthhistogram` is looked up next to it, then in the current
    /// directory.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::Io`] if it cannot be read, [`WorkloadError::FileTooLarge`] beyond
    /// [`PROPERTIES_FILE_MAX_BYTES`], and the errors of [`YcsbSpec::parse`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<YcsbSpec, WorkloadError> {
        let path = path.as_ref();
        let io = |source| WorkloadError::Io { path: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let size_bytes = file.metadata().map_err(io)?.len();
        let too_large =
            || WorkloadError::FileTooLarge { path: path.to_owned(), size_bytes, max_bytes: PROPERTIES_FILE_MAX_BYTES };
        if size_bytes > PROPERTIES_FILE_MAX_BYTES {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        // The file may grow after the size check; read one byte past the limit to see it.
        file.take(PROPERTIES_FILE_MAX_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > PROPERTIES_FILE_MAX_BYTES {
            return Err(too_large());
        }
        let base = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
        YcsbSpec::parse_in(&syntax::decode(bytes), &format!("workload file {}", path.display()), base)
    }

    /// Overrides one property, with the checks of [`YcsbSpec::parse`]; errors name
    /// the origin [`COMMAND_LINE_ORIGIN`]. On error the spec is unchanged. A name YCSB
    /// reads but we do not apply is accepted (and listed by [`YcsbSpec::ignored`]).
    ///
    /// # Errors
    ///
    /// [`WorkloadError::UnknownProperty`] for a name no YCSB version defines (with the
    /// nearest known one), and the errors of [`YcsbSpec::parse`].
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), WorkloadError> {
        let (key, value) = (key.trim(), value.trim());
        let mut next = self.clone();
        next.apply(key, value, COMMAND_LINE_ORIGIN, 0, IfUnknown::Refuse)?;
        next.complete()?;
        *self = next;
        Ok(())
    }

    /// Writes the spec as property text, one key per line with its effective value,
    /// that [`YcsbSpec::parse`] turns back into an equal spec (origin aside). YCSB's
    /// client reads it too (it passes over our `tierdb.` keys and `keyprefix`).
    pub fn to_properties(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}", self.origin.replace(['\n', '\r'], " "));
        for property in PROPERTIES {
            if let Some(value) = (property.get)(self) {
                let _ = writeln!(out, "{}={}", property.key, escape(&value));
            }
        }
        out
    }

    /// The value of an applied property as it would be written in a file, or `None`
    /// for another key or an unset optional one (`tierdb.seed`, `insertcount`).
    pub fn get(&self, key: &str) -> Option<String> {
        PROPERTIES.iter().find(|p| p.key == key).and_then(|p| (p.get)(self))
    }

    /// Whether `key` was given (in the text parsed or with [`YcsbSpec::set`]) rather
    /// than left at its default. Built-in workloads count as giving nothing.
    pub fn is_given(&self, key: &str) -> bool {
        self.provenance.find(key).is_some()
    }

    /// Where `key` was last given: the origin and line (0 for the command line), or
    /// `None` if it was not given.
    pub fn given_at(&self, key: &str) -> Option<(&str, usize)> {
        self.provenance.find(key).map(|g| (g.origin.as_str(), g.line))
    }

    /// The properties given that do not change this run: the names YCSB reads that we
    /// do not apply, and applied ones that have no effect with the other values (scan
    /// lengths without scans, hot-spot fractions without `hotspot` requests, …), in the
    /// order given, each with why. [`catalog::ignored_warning`] makes one warning line of
    /// them.
    pub fn ignored(&self) -> Vec<IgnoredProperty> {
        self.provenance
            .given
            .iter()
            .filter_map(|g| {
                let reason = match &g.class {
                    Class::Ignored(group) => group.reason().to_owned(),
                    Class::Applied => self.unused_reason(&g.key)?,
                    Class::Unknown(_) => return None,
                };
                Some(IgnoredProperty {
                    key: g.key.clone(),
                    value: g.value.clone(),
                    origin: g.origin.clone(),
                    line: g.line,
                    reason,
                })
            })
            .collect()
    }

    /// The names given in property text that no YCSB version defines, each with the
    /// nearest known name if one is close. They are ignored; a driver should warn.
    pub fn unknown(&self) -> Vec<UnknownName> {
        self.provenance
            .given
            .iter()
            .filter_map(|g| match &g.class {
                Class::Unknown(suggestion) => Some(UnknownName {
                    key: g.key.clone(),
                    value: g.value.clone(),
                    origin: g.origin.clone(),
                    line: g.line,
                    suggestion: suggestion.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The warnings a driver should print: one line per unknown name, then one line
    /// listing the ignored properties (if any).
    pub fn warnings(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.unknown().iter().map(ToString::to_string).collect();
        lines.extend(catalog::ignored_warning(&self.ignored()));
        lines
    }

    /// Where the spec came from: `defaults`, `workload file <path>`, `built-in workload
    /// <name>`, or the origin given to [`YcsbSpec::parse`]. Overrides are not recorded.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Records loaded before the run (`recordcount`), key numbers `0..record_count`.
    pub fn record_count(&self) -> u64 {
        self.record_count
    }

    /// Operations in the run phase (`operationcount`).
    pub fn operation_count(&self) -> u64 {
        self.operation_count
    }

    /// Fields per record (`fieldcount`).
    pub fn field_count(&self) -> u32 {
        self.field_count
    }

    /// Bytes per field (`fieldlength`): every field's with `constant` field lengths, the
    /// longest with `uniform` and `zipfian`; unused with `histogram`.
    pub fn field_length_bytes(&self) -> u32 {
        self.field_length_bytes
    }

    /// The shortest field with `uniform` and `zipfian` field lengths (`minfieldlength`).
    pub fn field_length_min_bytes(&self) -> u32 {
        self.field_length_min_bytes
    }

    /// How field lengths are drawn (`fieldlengthdistribution`).
    pub fn field_length_distribution(&self) -> FieldLengthDistribution {
        self.field_length_distribution
    }

    /// The field length histogram, with `fieldlengthdistribution=histogram`.
    pub fn field_length_histogram(&self) -> Option<&FieldLengthHistogram> {
        self.field_length_histogram.as_deref()
    }

    /// Whether field lengths vary (any `fieldlengthdistribution` but `constant`): records
    /// then carry a length header (see [`crate::ycsb::record`]).
    pub fn field_lengths_vary(&self) -> bool {
        self.field_length_distribution != FieldLengthDistribution::Constant
    }

    /// The longest record, in bytes: `fieldcount × fieldlength` with constant field
    /// lengths; with varying ones, the length header and `fieldcount` of the longest
    /// field. At most [`RECORD_LENGTH_MAX_BYTES`](crate::limits::RECORD_LENGTH_MAX_BYTES);
    /// a buffer this long holds any record.
    pub fn record_length_bytes(&self) -> usize {
        self.record_length_for(self.field_lengths.max()) as usize
    }

    /// The mean record length, in bytes (equal to [`YcsbSpec::record_length_bytes`] with
    /// constant field lengths).
    pub fn record_length_mean_bytes(&self) -> f64 {
        let header = if self.field_lengths_vary() { FIELD_LENGTH_HEADER_BYTES } else { 0 };
        f64::from(self.field_count) * (header as f64 + self.field_lengths.mean())
    }

    /// The prefix of field names (`fieldnameprefix`).
    pub fn field_name_prefix(&self) -> &str {
        &self.field_name_prefix
    }

    /// The name of field `field`: the prefix and the field's number, e.g. `field3`.
    pub fn field_name(&self, field: u32) -> String {
        format!("{}{field}", self.field_name_prefix)
    }

    /// Whether reads, scans and the read of a read-modify-write fetch all fields
    /// (`readallfields`) rather than one.
    pub fn read_all_fields(&self) -> bool {
        self.read_all_fields
    }

    /// Whether updates and the write of a read-modify-write replace all fields
    /// (`writeallfields`) rather than one.
    pub fn write_all_fields(&self) -> bool {
        self.write_all_fields
    }

    /// Whether values are YCSB's deterministic strings of their key and field name, and
    /// reads check them (`dataintegrity`); only with constant field lengths.
    pub fn data_integrity(&self) -> bool {
        self.data_integrity
    }

    /// The operation mix, proportions normalised to sum to 1.
    pub fn mix(&self) -> Mix {
        self.mix
    }

    /// How request keys are chosen (`requestdistribution`).
    pub fn request_distribution(&self) -> RequestDistribution {
        self.request_distribution
    }

    /// The fraction of records in the hot set (`hotspotdatafraction`).
    pub fn hotspot_data_fraction(&self) -> f64 {
        self.hotspot_data_fraction
    }

    /// The fraction of requests that go to the hot set (`hotspotopnfraction`).
    pub fn hotspot_op_fraction(&self) -> f64 {
        self.hotspot_op_fraction
    }

    /// With `exponential` requests, the percentage of them that go to the newest
    /// [`YcsbSpec::exponential_frac`] of the records (`exponential.percentile`).
    pub fn exponential_percentile(&self) -> f64 {
        self.exponential_percentile
    }

    /// With `exponential` requests, the fraction of `recordcount` that receives
    /// [`YcsbSpec::exponential_percentile`]% of them (`exponential.frac`).
    pub fn exponential_frac(&self) -> f64 {
        self.exponential_frac
    }

    /// Shortest scan, in records (`minscanlength`), at least 1.
    pub fn scan_length_min(&self) -> u32 {
        self.scan_length_min
    }

    /// Longest scan, in records (`maxscanlength`), at least [`YcsbSpec::scan_length_min`].
    pub fn scan_length_max(&self) -> u32 {
        self.scan_length_max
    }

    /// How scan lengths are chosen (`scanlengthdistribution`).
    pub fn scan_length_distribution(&self) -> ScanLengthDistribution {
        self.scan_length_distribution
    }

    /// How key numbers become key names (`insertorder`).
    pub fn insert_order(&self) -> InsertOrder {
        self.insert_order
    }

    /// The least number of digits of the number in a key name (`zeropadding`).
    pub fn zero_padding(&self) -> u32 {
        self.zero_padding
    }

    /// The first key number this instance loads and requests (`insertstart`).
    pub fn insert_start(&self) -> u64 {
        self.insert_start
    }

    /// How many records this instance loads from [`YcsbSpec::insert_start`] on
    /// (`insertcount`, by default `recordcount - insertstart`), at least 1.
    pub fn insert_count(&self) -> u64 {
        self.insert_count
    }

    /// The prefix of key names (`keyprefix`).
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// The exponent of zipfian draws (`tierdb.zipfianconstant`).
    pub fn zipfian_constant(&self) -> f64 {
        self.zipfian_constant
    }

    /// The seed written in the workload (`tierdb.seed`), if any.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// Inserts the run is expected to make, with YCSB's fudge factor of 2:
    /// `floor(operationcount × insert share × 2)`.
    pub fn expected_insert_count(&self) -> u64 {
        (self.operation_count as f64 * self.mix.insert * 2.0) as u64
    }

    /// The size of the zipfian request key space: the loaded records of this instance
    /// plus [`YcsbSpec::expected_insert_count`], so that records inserted during the run
    /// have their popularity from the start (as in YCSB). Request keys drawn beyond
    /// what has been inserted are drawn again.
    pub fn zipfian_key_count(&self) -> u64 {
        let count = self.insert_count() + self.expected_insert_count();
        count.min(KEY_NUMBER_MAX - self.insert_start)
    }

    /// Whether records of `other` are laid out and valued as records of `self` are: a
    /// table loaded for one can be run with the other.
    pub fn same_records_as(&self, other: &YcsbSpec) -> bool {
        self.field_count == other.field_count
            && self.field_length_distribution == other.field_length_distribution
            && self.field_lengths == other.field_lengths
            && self.data_integrity == other.data_integrity
            && (!self.data_integrity || self.field_name_prefix == other.field_name_prefix)
    }

    /// The sampler of field lengths.
    pub(crate) fn field_lengths(&self) -> &FieldLengths {
        &self.field_lengths
    }

    /// Applies one `key=value` given at `origin` line `line`, and records where it came
    /// from.
    fn apply(
        &mut self,
        key: &str,
        value: &str,
        origin: &str,
        line: usize,
        if_unknown: IfUnknown,
    ) -> Result<(), WorkloadError> {
        let class = if let Some(property) = PROPERTIES.iter().find(|p| p.key == key) {
            (property.set)(self, value).map_err(|reason| WorkloadError::BadValue {
                origin: origin.to_owned(),
                line,
                key: key.to_owned(),
                value: value.chars().take(200).collect(),
                reason,
            })?;
            Class::Applied
        } else if let Some(group) = catalog::ignored(key) {
            Class::Ignored(group)
        } else {
            let suggestion = catalog::suggest(key, PROPERTIES.iter().map(|p| p.key));
            if if_unknown == IfUnknown::Refuse {
                return Err(WorkloadError::UnknownProperty {
                    origin: origin.to_owned(),
                    line,
                    key: key.to_owned(),
                    suggestion,
                });
            }
            Class::Unknown(suggestion)
        };
        self.provenance.record(Given {
            key: key.to_owned(),
            value: value.chars().take(200).collect(),
            origin: origin.to_owned(),
            line,
            class,
        });
        Ok(())
    }

    /// Why the applied property `key` has no effect with the other values, if it has
    /// none.
    fn unused_reason(&self, key: &str) -> Option<String> {
        let mix = self.mix;
        let requests = self.request_distribution;
        let lengths = self.field_length_distribution;
        let not = |what: &str, is: &str| Some(format!("{what} is {is}"));
        match key {
            "minscanlength" | "maxscanlength" | "scanlengthdistribution" if mix.scan == 0.0 => {
                Some("this mix has no scans".to_owned())
            }
            "hotspotdatafraction" | "hotspotopnfraction" if requests != RequestDistribution::Hotspot => {
                not("requestdistribution", requests.name())
            }
            "exponential.percentile" | "exponential.frac" if requests != RequestDistribution::Exponential => {
                not("requestdistribution", requests.name())
            }
            "minfieldlength"
                if !matches!(lengths, FieldLengthDistribution::Uniform | FieldLengthDistribution::Zipfian) =>
            {
                not("fieldlengthdistribution", lengths.name())
            }
            "fieldlength" if lengths == FieldLengthDistribution::Histogram => {
                Some("field lengths come from the histogram".to_owned())
            }
            "fieldlengthhistogram" if lengths != FieldLengthDistribution::Histogram => {
                not("fieldlengthdistribution", lengths.name())
            }
            "writeallfields" if mix.update == 0.0 && mix.read_modify_write == 0.0 => {
                Some("this mix has no updates".to_owned())
            }
            "readallfields" if mix.read == 0.0 && mix.scan == 0.0 && mix.read_modify_write == 0.0 => {
                Some("this mix has no reads".to_owned())
            }
            "fieldnameprefix" if !self.data_integrity => {
                Some("field names are not stored; only dataintegrity values contain them".to_owned())
            }
            "tierdb.zipfianconstant" if !self.draws_zipfian() => Some("nothing is drawn from a zipfian".to_owned()),
            _ => None,
        }
    }

    /// Whether any draw of the run is zipfian.
    fn draws_zipfian(&self) -> bool {
        matches!(self.request_distribution, RequestDistribution::Zipfian | RequestDistribution::Latest)
            || (self.mix.scan > 0.0 && self.scan_length_distribution == ScanLengthDistribution::Zipfian)
            || self.field_length_distribution == FieldLengthDistribution::Zipfian
    }
}

/// What a given property name is.
#[derive(Clone, Debug)]
enum Class {
    /// One of [`PROPERTIES`].
    Applied,
    /// A name YCSB reads that we do not apply.
    Ignored(Group),
    /// A name no YCSB version defines, with the nearest known one.
    Unknown(Option<String>),
}

/// One property as given.
#[derive(Clone, Debug)]
struct Given {
    key: String,
    /// The value as written (at most 200 characters).
    value: String,
    origin: String,
    line: usize,
    class: Class,
}

/// Where the values of a spec came from.
///
/// It does not take part in comparisons: a spec is its values, wherever they came from
/// (a spec written back by [`YcsbSpec::to_properties`] and parsed again is equal to the
/// original).
#[derive(Clone, Debug, Default)]
struct Provenance {
    /// The properties given, each key once (its last write), in the order last written.
    given: Vec<Given>,
    /// The directory of the workload file, where relative paths are looked up first.
    base_dir: Option<PathBuf>,
}

impl PartialEq for Provenance {
    fn eq(&self, _: &Provenance) -> bool {
        true
    }
}

impl Provenance {
    fn record(&mut self, given: Given) {
        self.given.retain(|g| g.key != given.key);
        self.given.push(given);
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.given.iter().position(|g| g.key == key)
    }

    fn find(&self, key: &str) -> Option<&Given> {
        self.given.iter().find(|g| g.key == key)
    }
}

impl YcsbSpec {
    /// Forgets where the values came from, so that none counts as given (built-in
    /// workloads: their values are ours, not the user's).
    pub(crate) fn forget_provenance(&mut self) {
        self.provenance.given.clear();
    }
}

#[cfg(test)]
mod tests;
