//! The YCSB workload specification and its property-file parser.
//!
//! A [`YcsbSpec`] holds the properties of YCSB's `CoreWorkload`, read from text in Java
//! properties style: one `key=value` (or `key:value`) per line, whitespace around key
//! and value trimmed, lines starting with `#` or `!` and blank lines ignored, a repeated
//! key overriding the earlier one. Escapes and `\` line continuations are not supported
//! (a line ending in `\` is an error rather than a silently different value).
//!
//! # Invariant
//!
//! A `YcsbSpec` is always valid: every value is within its limit (see [`crate::limits`])
//! and consistent with the others. Its fields are private; the only ways to change it,
//! [`YcsbSpec::parse`] and [`YcsbSpec::set`], validate, and `set` leaves the spec as it
//! was when it fails. The generators therefore take a spec without checking it again.
//!
//! # Keys
//!
//! Recognised, with YCSB's defaults: `recordcount` (1000, the standard files' value),
//! `operationcount` (1000), `fieldcount` (10), `fieldlength` (100), `fieldnameprefix`
//! (`field`), `readallfields` (true), `writeallfields` (false), `readproportion` (0.95),
//! `updateproportion` (0.05), `insertproportion`, `scanproportion`,
//! `readmodifywriteproportion` (0), `requestdistribution` (`uniform`; also `zipfian`,
//! `latest`, `hotspot`), `hotspotdatafraction` (0.2), `hotspotopnfraction` (0.8),
//! `minscanlength` (1), `maxscanlength` (1000), `scanlengthdistribution` (`uniform` or
//! `zipfian`), `insertorder` (`hashed` or `ordered`), `zeropadding` (1), `insertstart`
//! (0), `insertcount` (`recordcount - insertstart`), `keyprefix` (`user`).
//!
//! Our extensions: `tierdb.zipfianconstant` (0.99 as in YCSB; the exponent of every
//! zipfian draw: requests, latest, scan lengths) and `tierdb.seed` (none: the driver
//! chooses; decimal or `0x` hexadecimal).
//!
//! Accepted and ignored, because they cannot change what is generated: `workload`
//! (only YCSB's `CoreWorkload` class), `table`, `fieldlengthdistribution` (only
//! `constant`), `measurementtype`. `threadcount` is rejected with a pointer to the
//! driver's option, since ignoring it would silently run with another thread count.
//! Any other key is [`WorkloadError::UnknownProperty`].
//!
//! Proportions are normalised by their sum, as YCSB's `DiscreteGenerator` does, so
//! `readproportion=1` with `updateproportion=1` is a 50/50 mix.

use crate::error::WorkloadError;
use crate::limits::{
    FIELD_COUNT_MAX, FIELD_LENGTH_MAX_BYTES, KEY_NUMBER_MAX, OPERATION_COUNT_MAX, PREFIX_MAX_BYTES,
    PROPERTIES_FILE_MAX_BYTES, RECORD_COUNT_MAX, RECORD_LENGTH_MAX_BYTES, SCAN_LENGTH_MAX, ZERO_PADDING_MAX,
    ZIPF_EXPONENT_MAX,
};
use crate::ycsb::OpKind;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

/// The origin [`YcsbSpec::set`] reports in its errors.
pub const COMMAND_LINE_ORIGIN: &str = "command line";

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
/// writes it back as property text that parses to an equal spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct YcsbSpec {
    origin: String,
    record_count: u64,
    operation_count: u64,
    field_count: u32,
    field_length_bytes: u32,
    field_name_prefix: String,
    read_all_fields: bool,
    write_all_fields: bool,
    read_proportion: f64,
    update_proportion: f64,
    insert_proportion: f64,
    scan_proportion: f64,
    read_modify_write_proportion: f64,
    mix: Mix,
    request_distribution: RequestDistribution,
    hotspot_data_fraction: f64,
    hotspot_op_fraction: f64,
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
            field_name_prefix: "field".to_owned(),
            read_all_fields: true,
            write_all_fields: false,
            read_proportion: 0.95,
            update_proportion: 0.05,
            insert_proportion: 0.0,
            scan_proportion: 0.0,
            read_modify_write_proportion: 0.0,
            mix: Mix { read: 0.0, update: 0.0, insert: 0.0, scan: 0.0, read_modify_write: 0.0 },
            request_distribution: RequestDistribution::Uniform,
            hotspot_data_fraction: 0.2,
            hotspot_op_fraction: 0.8,
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
        };
        spec.derive();
        debug_assert!(spec.check().is_ok());
        spec
    }
}

impl YcsbSpec {
    /// Parses property text. `origin` names the text in error messages, e.g.
    /// `workload file x.txt` gives `workload file x.txt line 7: …`.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::Syntax`] for a line that is not `key=value`,
    /// [`WorkloadError::UnknownProperty`] for a key we do not know, and
    /// [`WorkloadError::BadValue`] for a value out of range or inconsistent with others
    /// (reported at the line of the last-written key involved).
    pub fn parse(text: &str, origin: &str) -> Result<YcsbSpec, WorkloadError> {
        let mut spec = YcsbSpec { origin: origin.to_owned(), ..YcsbSpec::default() };
        // The line each key was last set on, to place errors of consistency checks.
        let mut lines: HashMap<&'static str, usize> = HashMap::new();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                continue;
            }
            let syntax = |reason| WorkloadError::Syntax {
                origin: origin.to_owned(),
                line,
                text: trimmed.chars().take(200).collect(),
                reason,
            };
            if trimmed.ends_with('\\') {
                return Err(syntax("line continuations are not supported"));
            }
            let Some(separator) = trimmed.find(['=', ':']) else {
                return Err(syntax("expected `key=value`"));
            };
            let key = trimmed[..separator].trim();
            let value = trimmed[separator + 1..].trim();
            if key.is_empty() {
                return Err(syntax("missing key before `=`"));
            }
            if let Some(known) = spec.apply(key, value, origin, line)? {
                lines.insert(known, line);
            }
        }
        spec.derive();
        spec.check().map_err(|failure| {
            // Blame the key of the failed check that was written last in the text.
            let blamed = failure
                .keys
                .iter()
                .filter_map(|&k| lines.get(k).map(|&line| (line, k)))
                .max()
                .unwrap_or((0, failure.keys[0]));
            spec.bad_value(origin, blamed.0, blamed.1, failure.reason)
        })?;
        Ok(spec)
    }

    /// Reads and parses a property file; errors name it as `workload file <path>`.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::Io`] if it cannot be read (or is not UTF-8),
    /// [`WorkloadError::FileTooLarge`] beyond [`PROPERTIES_FILE_MAX_BYTES`], and the
    /// errors of [`YcsbSpec::parse`].
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
        let mut text = String::new();
        // The file may grow after the size check; read one byte past the limit to see it.
        file.take(PROPERTIES_FILE_MAX_BYTES + 1).read_to_string(&mut text).map_err(io)?;
        if text.len() as u64 > PROPERTIES_FILE_MAX_BYTES {
            return Err(too_large());
        }
        YcsbSpec::parse(&text, &format!("workload file {}", path.display()))
    }

    /// Overrides one property, with the checks of [`YcsbSpec::parse`]; errors name
    /// the origin [`COMMAND_LINE_ORIGIN`]. On error the spec is unchanged.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::UnknownProperty`] and [`WorkloadError::BadValue`] as for `parse`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), WorkloadError> {
        let (key, value) = (key.trim(), value.trim());
        let mut next = self.clone();
        next.apply(key, value, COMMAND_LINE_ORIGIN, 0)?;
        next.derive();
        next.check().map_err(|failure| {
            // Blame the key being set if the check involves it; otherwise the check
            // held before and cannot fail now, but report its first key anyway.
            let blamed = failure.keys.iter().copied().find(|&k| k == key).unwrap_or(failure.keys[0]);
            next.bad_value(COMMAND_LINE_ORIGIN, 0, blamed, failure.reason)
        })?;
        *self = next;
        Ok(())
    }

    /// Writes the spec as property text, one key per line with its effective value,
    /// that [`YcsbSpec::parse`] turns back into an equal spec (origin aside).
    pub fn to_properties(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}", self.origin.replace('\n', " "));
        for property in PROPERTIES {
            if let Some(value) = (property.get)(self) {
                let _ = writeln!(out, "{}={}", property.key, value);
            }
        }
        out
    }

    /// The value of a recognised property as it would be written in a file, or `None`
    /// for an unknown key or an unset optional one (`tierdb.seed`, `insertcount`).
    pub fn get(&self, key: &str) -> Option<String> {
        PROPERTIES.iter().find(|p| p.key == key).and_then(|p| (p.get)(self))
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

    /// Bytes per field (`fieldlength`).
    pub fn field_length_bytes(&self) -> u32 {
        self.field_length_bytes
    }

    /// Bytes per record: `fieldcount × fieldlength`, at most [`RECORD_LENGTH_MAX_BYTES`].
    pub fn record_length_bytes(&self) -> usize {
        self.field_count as usize * self.field_length_bytes as usize
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

    /// Applies one `key=value`. Returns the canonical key when it is a recognised
    /// property, `None` when it is an accepted-and-ignored one.
    fn apply(
        &mut self,
        key: &str,
        value: &str,
        origin: &str,
        line: usize,
    ) -> Result<Option<&'static str>, WorkloadError> {
        let bad = |reason: String| WorkloadError::BadValue {
            origin: origin.to_owned(),
            line,
            key: key.to_owned(),
            value: value.chars().take(200).collect(),
            reason,
        };
        if let Some(property) = PROPERTIES.iter().find(|p| p.key == key) {
            (property.set)(self, value).map_err(bad)?;
            return Ok(Some(property.key));
        }
        match key {
            "workload" => {
                if value == "site.ycsb.workloads.CoreWorkload" || value == "com.yahoo.ycsb.workloads.CoreWorkload" {
                    Ok(None)
                } else {
                    Err(bad("only YCSB's CoreWorkload (site.ycsb.workloads.CoreWorkload) is implemented".to_owned()))
                }
            }
            "table" | "measurementtype" => Ok(None),
            "fieldlengthdistribution" => {
                if value == "constant" {
                    Ok(None)
                } else {
                    Err(bad("only `constant` field lengths are implemented".to_owned()))
                }
            }
            "threadcount" => Err(bad("the thread count is an option of the driver, not of the workload".to_owned())),
            _ => Err(WorkloadError::UnknownProperty { origin: origin.to_owned(), line, key: key.to_owned() }),
        }
    }

    /// Computes the values that follow from others: the normalised mix, and the
    /// default `insertcount`.
    fn derive(&mut self) {
        if !self.insert_count_given {
            // insertstart >= recordcount is rejected by `check`; keep the count sane meanwhile.
            self.insert_count = self.record_count.saturating_sub(self.insert_start);
        }
        let sum = self.read_proportion
            + self.update_proportion
            + self.insert_proportion
            + self.scan_proportion
            + self.read_modify_write_proportion;
        // A zero sum is rejected by `check`; keep the mix finite meanwhile.
        let scale = if sum > 0.0 { 1.0 / sum } else { 0.0 };
        self.mix = Mix {
            read: self.read_proportion * scale,
            update: self.update_proportion * scale,
            insert: self.insert_proportion * scale,
            scan: self.scan_proportion * scale,
            read_modify_write: self.read_modify_write_proportion * scale,
        };
    }

    /// The checks that involve more than one key; single values are checked by the
    /// setters in [`PROPERTIES`].
    fn check(&self) -> Result<(), CheckFailure> {
        let fail = |keys, reason| Err(CheckFailure { keys, reason });
        if self.insert_start >= self.record_count {
            return fail(
                &["insertstart", "recordcount"],
                format!("insertstart ({}) must be below recordcount ({})", self.insert_start, self.record_count),
            );
        }
        if self.insert_start + self.insert_count > self.record_count {
            return fail(
                &["insertcount", "insertstart", "recordcount"],
                format!(
                    "insertstart ({}) + insertcount ({}) exceeds recordcount ({})",
                    self.insert_start, self.insert_count, self.record_count
                ),
            );
        }
        if self.scan_length_min > self.scan_length_max {
            return fail(
                &["minscanlength", "maxscanlength"],
                format!("minscanlength ({}) exceeds maxscanlength ({})", self.scan_length_min, self.scan_length_max),
            );
        }
        let sum = self.read_proportion
            + self.update_proportion
            + self.insert_proportion
            + self.scan_proportion
            + self.read_modify_write_proportion;
        if sum <= 0.0 {
            return fail(
                &[
                    "readproportion",
                    "updateproportion",
                    "insertproportion",
                    "scanproportion",
                    "readmodifywriteproportion",
                ],
                "all operation proportions are zero".to_owned(),
            );
        }
        if self.record_length_bytes() as u64 > RECORD_LENGTH_MAX_BYTES {
            return fail(
                &["fieldlength", "fieldcount"],
                format!(
                    "a record of fieldcount ({}) × fieldlength ({}) bytes exceeds the limit of {RECORD_LENGTH_MAX_BYTES} bytes",
                    self.field_count, self.field_length_bytes
                ),
            );
        }
        debug_assert!(
            (self.mix.read + self.mix.update + self.mix.insert + self.mix.scan + self.mix.read_modify_write - 1.0)
                .abs()
                < 1e-9
        );
        Ok(())
    }

    fn bad_value(&self, origin: &str, line: usize, key: &str, reason: String) -> WorkloadError {
        WorkloadError::BadValue {
            origin: origin.to_owned(),
            line,
            key: key.to_owned(),
            value: self.get(key).unwrap_or_default(),
            reason,
        }
    }
}

/// A failed consistency check: the keys involved and why.
struct CheckFailure {
    keys: &'static [&'static str],
    reason: String,
}

/// One recognised key: how to set it from text (checking the value alone) and how to
/// write it back.
struct Property {
    key: &'static str,
    set: fn(&mut YcsbSpec, &str) -> Result<(), String>,
    get: fn(&YcsbSpec) -> Option<String>,
}

/// Every recognised key, in the order [`YcsbSpec::to_properties`] writes them.
const PROPERTIES: &[Property] = &[
    Property {
        key: "recordcount",
        set: |s, v| parse_u64(v, 1, RECORD_COUNT_MAX).map(|x| s.record_count = x),
        get: |s| Some(s.record_count.to_string()),
    },
    Property {
        key: "operationcount",
        set: |s, v| parse_u64(v, 0, OPERATION_COUNT_MAX).map(|x| s.operation_count = x),
        get: |s| Some(s.operation_count.to_string()),
    },
    Property {
        key: "fieldcount",
        set: |s, v| parse_u32(v, 1, FIELD_COUNT_MAX).map(|x| s.field_count = x),
        get: |s| Some(s.field_count.to_string()),
    },
    Property {
        key: "fieldlength",
        set: |s, v| parse_u32(v, 1, FIELD_LENGTH_MAX_BYTES).map(|x| s.field_length_bytes = x),
        get: |s| Some(s.field_length_bytes.to_string()),
    },
    Property {
        key: "fieldnameprefix",
        set: |s, v| parse_prefix(v).map(|x| s.field_name_prefix = x),
        get: |s| Some(s.field_name_prefix.clone()),
    },
    Property {
        key: "readallfields",
        set: |s, v| parse_bool(v).map(|x| s.read_all_fields = x),
        get: |s| Some(s.read_all_fields.to_string()),
    },
    Property {
        key: "writeallfields",
        set: |s, v| parse_bool(v).map(|x| s.write_all_fields = x),
        get: |s| Some(s.write_all_fields.to_string()),
    },
    Property {
        key: "readproportion",
        set: |s, v| parse_fraction(v).map(|x| s.read_proportion = x),
        get: |s| Some(s.read_proportion.to_string()),
    },
    Property {
        key: "updateproportion",
        set: |s, v| parse_fraction(v).map(|x| s.update_proportion = x),
        get: |s| Some(s.update_proportion.to_string()),
    },
    Property {
        key: "insertproportion",
        set: |s, v| parse_fraction(v).map(|x| s.insert_proportion = x),
        get: |s| Some(s.insert_proportion.to_string()),
    },
    Property {
        key: "scanproportion",
        set: |s, v| parse_fraction(v).map(|x| s.scan_proportion = x),
        get: |s| Some(s.scan_proportion.to_string()),
    },
    Property {
        key: "readmodifywriteproportion",
        set: |s, v| parse_fraction(v).map(|x| s.read_modify_write_proportion = x),
        get: |s| Some(s.read_modify_write_proportion.to_string()),
    },
    Property {
        key: "requestdistribution",
        set: |s, v| {
            s.request_distribution = match v {
                "uniform" => RequestDistribution::Uniform,
                "zipfian" => RequestDistribution::Zipfian,
                "latest" => RequestDistribution::Latest,
                "hotspot" => RequestDistribution::Hotspot,
                _ => return Err("expected uniform, zipfian, latest or hotspot".to_owned()),
            };
            Ok(())
        },
        get: |s| {
            Some(
                match s.request_distribution {
                    RequestDistribution::Uniform => "uniform",
                    RequestDistribution::Zipfian => "zipfian",
                    RequestDistribution::Latest => "latest",
                    RequestDistribution::Hotspot => "hotspot",
                }
                .to_owned(),
            )
        },
    },
    Property {
        key: "hotspotdatafraction",
        set: |s, v| parse_fraction(v).map(|x| s.hotspot_data_fraction = x),
        get: |s| Some(s.hotspot_data_fraction.to_string()),
    },
    Property {
        key: "hotspotopnfraction",
        set: |s, v| parse_fraction(v).map(|x| s.hotspot_op_fraction = x),
        get: |s| Some(s.hotspot_op_fraction.to_string()),
    },
    Property {
        key: "minscanlength",
        set: |s, v| parse_u32(v, 1, SCAN_LENGTH_MAX).map(|x| s.scan_length_min = x),
        get: |s| Some(s.scan_length_min.to_string()),
    },
    Property {
        key: "maxscanlength",
        set: |s, v| parse_u32(v, 1, SCAN_LENGTH_MAX).map(|x| s.scan_length_max = x),
        get: |s| Some(s.scan_length_max.to_string()),
    },
    Property {
        key: "scanlengthdistribution",
        set: |s, v| {
            s.scan_length_distribution = match v {
                "uniform" => ScanLengthDistribution::Uniform,
                "zipfian" => ScanLengthDistribution::Zipfian,
                _ => return Err("expected uniform or zipfian".to_owned()),
            };
            Ok(())
        },
        get: |s| {
            Some(
                match s.scan_length_distribution {
                    ScanLengthDistribution::Uniform => "uniform",
                    ScanLengthDistribution::Zipfian => "zipfian",
                }
                .to_owned(),
            )
        },
    },
    Property {
        key: "insertorder",
        set: |s, v| {
            s.insert_order = match v {
                "hashed" => InsertOrder::Hashed,
                "ordered" => InsertOrder::Ordered,
                _ => return Err("expected hashed or ordered".to_owned()),
            };
            Ok(())
        },
        get: |s| {
            Some(
                match s.insert_order {
                    InsertOrder::Hashed => "hashed",
                    InsertOrder::Ordered => "ordered",
                }
                .to_owned(),
            )
        },
    },
    Property {
        key: "zeropadding",
        set: |s, v| parse_u32(v, 0, ZERO_PADDING_MAX).map(|x| s.zero_padding = x),
        get: |s| Some(s.zero_padding.to_string()),
    },
    Property {
        key: "insertstart",
        set: |s, v| parse_u64(v, 0, RECORD_COUNT_MAX - 1).map(|x| s.insert_start = x),
        get: |s| Some(s.insert_start.to_string()),
    },
    Property {
        key: "insertcount",
        set: |s, v| {
            s.insert_count = parse_u64(v, 1, RECORD_COUNT_MAX)?;
            s.insert_count_given = true;
            Ok(())
        },
        get: |s| s.insert_count_given.then(|| s.insert_count.to_string()),
    },
    Property {
        key: "keyprefix",
        set: |s, v| parse_prefix(v).map(|x| s.key_prefix = x),
        get: |s| Some(s.key_prefix.clone()),
    },
    Property {
        key: "tierdb.zipfianconstant",
        set: |s, v| {
            let c = parse_f64(v)?;
            if !(c > 0.0 && c <= ZIPF_EXPONENT_MAX) {
                return Err(format!("must be above 0 and at most {ZIPF_EXPONENT_MAX}"));
            }
            s.zipfian_constant = c;
            Ok(())
        },
        get: |s| Some(s.zipfian_constant.to_string()),
    },
    Property {
        key: "tierdb.seed",
        set: |s, v| {
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse::<u64>(),
            };
            s.seed = Some(parsed.map_err(|_| "expected an unsigned 64-bit integer, decimal or 0x hex".to_owned())?);
            Ok(())
        },
        get: |s| s.seed.map(|seed| seed.to_string()),
    },
];

/// An unsigned integer in `min..=max`.
fn parse_u64(value: &str, min: u64, max: u64) -> Result<u64, String> {
    let parsed = if value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty() {
        value.parse::<u64>().map_err(|_| format!("must be at most {max}"))?
    } else if value.starts_with('-') && value[1..].bytes().all(|b| b.is_ascii_digit()) && value.len() > 1 {
        return Err("must not be negative".to_owned());
    } else {
        return Err("expected a whole number".to_owned());
    };
    if parsed < min || parsed > max {
        return Err(format!("must be between {min} and {max}"));
    }
    Ok(parsed)
}

/// An unsigned 32-bit integer in `min..=max`.
fn parse_u32(value: &str, min: u32, max: u32) -> Result<u32, String> {
    // max fits u32, so the conversion cannot fail after the range check.
    parse_u64(value, u64::from(min), u64::from(max)).map(|v| v as u32)
}

/// A finite number.
fn parse_f64(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err("expected a finite number".to_owned()),
    }
}

/// A number in `[0, 1]`.
fn parse_fraction(value: &str) -> Result<f64, String> {
    let v = parse_f64(value)?;
    if (0.0..=1.0).contains(&v) {
        // -0.0 is in range; store +0.0 so that written-back text reads "0".
        Ok(v + 0.0)
    } else {
        Err("must be between 0 and 1".to_owned())
    }
}

/// `true` or `false`, in any case (Java's `Boolean.parseBoolean` takes anything else
/// as false; we reject it).
fn parse_bool(value: &str) -> Result<bool, String> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err("expected true or false".to_owned())
    }
}

/// A key or field name prefix: printable ASCII without spaces, at most
/// [`PREFIX_MAX_BYTES`], possibly empty.
fn parse_prefix(value: &str) -> Result<String, String> {
    if value.len() > PREFIX_MAX_BYTES {
        return Err(format!("longer than {PREFIX_MAX_BYTES} bytes"));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("only printable ASCII characters without spaces are allowed".to_owned());
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<YcsbSpec, WorkloadError> {
        YcsbSpec::parse(text, "workload file x.txt")
    }

    fn bad_value(result: Result<YcsbSpec, WorkloadError>) -> (usize, String, String) {
        match result {
            Err(WorkloadError::BadValue { line, key, value, .. }) => (line, key, value),
            other => panic!("expected BadValue, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_ycsb_defaults() {
        let spec = parse("").unwrap();
        assert_eq!(spec.field_count(), 10);
        assert_eq!(spec.field_length_bytes(), 100);
        assert_eq!(spec.record_length_bytes(), 1000);
        assert!(spec.read_all_fields() && !spec.write_all_fields());
        assert_eq!(spec.mix(), Mix { read: 0.95, update: 0.05, insert: 0.0, scan: 0.0, read_modify_write: 0.0 });
        assert_eq!(spec.request_distribution(), RequestDistribution::Uniform);
        assert_eq!((spec.scan_length_min(), spec.scan_length_max()), (1, 1000));
        assert_eq!(spec.insert_order(), InsertOrder::Hashed);
        assert_eq!((spec.zero_padding(), spec.insert_start(), spec.insert_count()), (1, 0, 1000));
        assert_eq!((spec.key_prefix(), spec.field_name(3)), ("user", "field3".to_owned()));
        assert_eq!(spec.zipfian_constant(), 0.99);
        assert_eq!(spec.seed(), None);
        assert_eq!(spec.origin(), "workload file x.txt");
        assert_eq!(YcsbSpec::default().mix(), spec.mix());
    }

    #[test]
    fn syntax_comments_whitespace_and_overrides() {
        let text = "# comment\n! also a comment\n\n  recordcount = 5000  \r\nfieldcount:4\nrecordcount=6000\n";
        let spec = parse(text).unwrap();
        assert_eq!(spec.record_count(), 6000);
        assert_eq!(spec.field_count(), 4);
        assert!(matches!(parse("recordcount 5"), Err(WorkloadError::Syntax { line: 1, .. })));
        assert!(matches!(parse("\n=5"), Err(WorkloadError::Syntax { line: 2, .. })));
        assert!(matches!(parse("keyprefix=a\\"), Err(WorkloadError::Syntax { .. })));
    }

    #[test]
    fn proportions_are_normalised() {
        let spec = parse("readproportion=1\nupdateproportion=1").unwrap();
        assert_eq!(spec.mix().read, 0.5);
        assert_eq!(spec.mix().update, 0.5);
        assert_eq!(spec.get("readproportion").as_deref(), Some("1"));
    }

    #[test]
    fn unknown_key_names_its_line() {
        let err = parse("recordcount=10\n\n# x\nfoo=bar\n").unwrap_err();
        assert!(matches!(&err, WorkloadError::UnknownProperty { line: 4, key, .. } if key == "foo"), "{err:?}");
        assert_eq!(err.to_string(), "workload file x.txt line 4: unknown property `foo`");
        assert!(matches!(parse("tierdb.nosuch=1"), Err(WorkloadError::UnknownProperty { line: 1, .. })));
    }

    #[test]
    fn ignored_keys() {
        let spec =
            parse("workload=site.ycsb.workloads.CoreWorkload\ntable=t\nfieldlengthdistribution=constant\nmeasurementtype=hdrhistogram")
                .unwrap();
        assert_eq!(spec, YcsbSpec { origin: spec.origin.clone(), ..YcsbSpec::default() });
        assert_eq!(bad_value(parse("workload=site.ycsb.workloads.RestWorkload")).1, "workload");
        assert_eq!(bad_value(parse("fieldlengthdistribution=zipfian")).1, "fieldlengthdistribution");
        assert_eq!(bad_value(parse("threadcount=4")).1, "threadcount");
    }

    #[test]
    fn bad_values() {
        assert_eq!(bad_value(parse("recordcount=12x")), (1, "recordcount".into(), "12x".into()));
        assert_eq!(bad_value(parse("operationcount=-5")).1, "operationcount");
        assert_eq!(bad_value(parse("recordcount=0")).1, "recordcount");
        assert_eq!(bad_value(parse(&format!("recordcount={}", RECORD_COUNT_MAX + 1))).1, "recordcount");
        assert_eq!(bad_value(parse("recordcount=99999999999999999999999")).1, "recordcount");
        assert_eq!(bad_value(parse("fieldcount=0")).1, "fieldcount");
        assert_eq!(bad_value(parse("fieldcount=1025")).1, "fieldcount");
        assert_eq!(bad_value(parse("fieldlength=2000000")).1, "fieldlength");
        assert_eq!(bad_value(parse("readproportion=1.5")).1, "readproportion");
        assert_eq!(bad_value(parse("readproportion=-0.1")).1, "readproportion");
        assert_eq!(bad_value(parse("readproportion=NaN")).1, "readproportion");
        assert_eq!(bad_value(parse("readallfields=yes")).1, "readallfields");
        assert_eq!(bad_value(parse("requestdistribution=exponential")).1, "requestdistribution");
        assert_eq!(bad_value(parse("scanlengthdistribution=constant")).1, "scanlengthdistribution");
        assert_eq!(bad_value(parse("insertorder=random")).1, "insertorder");
        assert_eq!(bad_value(parse("tierdb.zipfianconstant=0")).1, "tierdb.zipfianconstant");
        assert_eq!(bad_value(parse("tierdb.zipfianconstant=-1")).1, "tierdb.zipfianconstant");
        assert_eq!(bad_value(parse("tierdb.zipfianconstant=inf")).1, "tierdb.zipfianconstant");
        assert_eq!(bad_value(parse("tierdb.seed=-1")).1, "tierdb.seed");
        assert_eq!(bad_value(parse("keyprefix=a b")).1, "keyprefix");
        assert_eq!(bad_value(parse("hotspotopnfraction=2")).1, "hotspotopnfraction");
        let err = parse("\n\n\n\n\n\nfieldcount=0").unwrap_err();
        assert!(err.to_string().starts_with("workload file x.txt line 7: bad value `0` for `fieldcount`"), "{err}");
    }

    #[test]
    fn inconsistent_values_blame_the_last_key_written() {
        assert_eq!(bad_value(parse("maxscanlength=10\nminscanlength=20")), (2, "minscanlength".into(), "20".into()));
        assert_eq!(bad_value(parse("minscanlength=20\nmaxscanlength=10")), (2, "maxscanlength".into(), "10".into()));
        // Against a default: the key written is blamed.
        assert_eq!(bad_value(parse("minscanlength=2000")), (1, "minscanlength".into(), "2000".into()));
        let zero = "readproportion=0\nupdateproportion=0\nscanproportion=0";
        assert_eq!(bad_value(parse(zero)).1, "scanproportion");
        assert_eq!(bad_value(parse("recordcount=100\ninsertstart=100")).1, "insertstart");
        assert_eq!(bad_value(parse("recordcount=100\ninsertstart=50\ninsertcount=51")).1, "insertcount");
        let spec = parse("recordcount=100\ninsertstart=50\ninsertcount=50").unwrap();
        assert_eq!((spec.insert_start(), spec.insert_count()), (50, 50));
        let spec = parse("recordcount=100\ninsertstart=30").unwrap();
        assert_eq!(spec.insert_count(), 70);
        assert_eq!(bad_value(parse("fieldcount=1024\nfieldlength=1048576")).1, "fieldlength");
    }

    #[test]
    fn set_validates_and_is_atomic() {
        let mut spec = YcsbSpec::default();
        spec.set("recordcount", " 5000 ").unwrap();
        spec.set("tierdb.seed", "0x10").unwrap();
        assert_eq!((spec.record_count(), spec.seed()), (5000, Some(16)));
        let before = spec.clone();
        let err = spec.set("minscanlength", "5000").unwrap_err();
        assert_eq!(
            err.to_string(),
            "command line: bad value `5000` for `minscanlength`: minscanlength (5000) exceeds maxscanlength (1000)"
        );
        assert!(matches!(spec.set("nosuch", "1"), Err(WorkloadError::UnknownProperty { line: 0, .. })));
        assert!(spec.set("tierdb.zipfianconstant", "0").is_err());
        assert_eq!(spec, before);
        spec.set("readproportion", "0").unwrap();
        assert_eq!(spec.mix().update, 1.0);
    }

    #[test]
    fn properties_round_trip() {
        let mut spec = parse("recordcount=77\ninsertstart=7\ninsertcount=70\nkeyprefix=k\nzeropadding=12").unwrap();
        spec.set("tierdb.seed", "123").unwrap();
        spec.set("readproportion", "0.3333333333333333").unwrap();
        spec.set("requestdistribution", "hotspot").unwrap();
        let again = parse(&spec.to_properties()).unwrap();
        assert_eq!(YcsbSpec { origin: spec.origin.clone(), ..again }, spec);
    }

    #[test]
    fn serialises_effective_values() {
        let spec = YcsbSpec::parse("requestdistribution=zipfian\nreadproportion=1\nupdateproportion=1", "t").unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["record_count"], 1000);
        assert_eq!(json["request_distribution"], "zipfian");
        assert_eq!(json["insert_order"], "hashed");
        assert_eq!(json["mix"]["read"], 0.5);
        assert_eq!(json["seed"], serde_json::Value::Null);
        assert_eq!(json["insert_count"], 1000);
    }

    #[test]
    fn from_file_names_the_file() {
        let dir = std::env::temp_dir().join(format!("tierdb-workload-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.txt");
        std::fs::write(&path, "recordcount=10\nbogus=1\n").unwrap();
        let err = YcsbSpec::from_file(&path).unwrap_err();
        assert_eq!(err.to_string(), format!("workload file {} line 2: unknown property `bogus`", path.display()));
        assert!(matches!(YcsbSpec::from_file(dir.join("missing")), Err(WorkloadError::Io { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Lines built from real keys and odd values, to reach the validation paths.
    fn property_lines() -> impl Strategy<Value = String> {
        let keys: Vec<&'static str> = PROPERTIES
            .iter()
            .map(|p| p.key)
            .chain(["workload", "table", "threadcount", "fieldlengthdistribution", "nosuch"])
            .collect();
        let value = prop_oneof![
            "[0-9]{0,25}",
            "-?[0-9]{0,3}\\.[0-9]{0,3}(e[+-]?[0-9]{1,3})?",
            Just("uniform".to_owned()),
            Just("zipfian".to_owned()),
            Just("latest".to_owned()),
            Just("hotspot".to_owned()),
            Just("true".to_owned()),
            Just("0x".to_owned()),
            ".{0,10}",
        ];
        prop::collection::vec((prop::sample::select(keys), "[ =:]{1,2}", value), 0..12)
            .prop_map(|lines| lines.into_iter().map(|(k, sep, v)| format!("{k}{sep}{v}\n")).collect::<String>())
    }

    proptest! {
        #[test]
        fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
            let _ = YcsbSpec::parse(&text, "proptest");
        }

        #[test]
        fn parse_never_panics_on_property_like_text(text in property_lines()) {
            if let Ok(spec) = YcsbSpec::parse(&text, "proptest") {
                // A spec that parses is valid and survives a round trip.
                prop_assert!(spec.check().is_ok());
                let again = YcsbSpec::parse(&spec.to_properties(), "proptest").unwrap();
                prop_assert_eq!(again, spec);
            }
        }
    }
}
