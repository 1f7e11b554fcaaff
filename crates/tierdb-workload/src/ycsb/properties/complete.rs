//! Completing a [`YcsbSpec`] after its values change: the values that follow from others
//! are derived, every relation between keys is checked (a spec is always valid), a field
//! length histogram is read if one is needed, and the field length sampler is built. A
//! failed check is blamed on the key of its relation that was written last.

use std::sync::Arc;

use super::{Mix, RequestDistribution, YcsbSpec};
use crate::error::WorkloadError;
use crate::limits::{FIELD_LENGTH_HEADER_BYTES, RECORD_LENGTH_MAX_BYTES};
use crate::ycsb::field_length::{self, FieldLengthDistribution, FieldLengthHistogram, FieldLengths};

impl YcsbSpec {
    /// After values changed: derives the dependent values, checks the spec, reads a field
    /// length histogram if one is needed, and builds the field length sampler.
    pub(super) fn complete(&mut self) -> Result<(), WorkloadError> {
        self.derive();
        self.check().map_err(|failure| self.blame(failure))?;
        self.load_histogram()?;
        self.field_lengths = self.build_field_lengths();
        self.check_record_length(self.field_lengths.max()).map_err(|failure| self.blame(failure))
    }

    /// Computes the values that follow from others: the normalised mix, and the
    /// default `insertcount`.
    pub(super) fn derive(&mut self) {
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
    pub(super) fn check(&self) -> Result<(), CheckFailure> {
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
        let ranged = matches!(
            self.field_length_distribution,
            FieldLengthDistribution::Uniform | FieldLengthDistribution::Zipfian
        );
        if ranged && self.field_length_min_bytes > self.field_length_bytes {
            return fail(
                &["minfieldlength", "fieldlength", "fieldlengthdistribution"],
                format!(
                    "minfieldlength ({}) exceeds fieldlength ({}), the longest {} field length",
                    self.field_length_min_bytes,
                    self.field_length_bytes,
                    self.field_length_distribution.name()
                ),
            );
        }
        if self.data_integrity && self.field_lengths_vary() {
            return fail(
                &["dataintegrity", "fieldlengthdistribution"],
                format!(
                    "dataintegrity needs fieldlengthdistribution=constant, not {} (YCSB refuses it too)",
                    self.field_length_distribution.name()
                ),
            );
        }
        if self.request_distribution == RequestDistribution::Exponential
            && !(self.record_count as f64 * self.exponential_frac).is_normal()
        {
            return fail(
                &["exponential.frac", "recordcount"],
                format!("recordcount × exponential.frac ({}) must be a positive number", self.exponential_frac),
            );
        }
        // A histogram's longest field is known once it is read: checked again then.
        if self.field_length_distribution != FieldLengthDistribution::Histogram {
            self.check_record_length(self.field_length_bytes)?;
        }
        debug_assert!(
            (self.mix.read + self.mix.update + self.mix.insert + self.mix.scan + self.mix.read_modify_write - 1.0)
                .abs()
                < 1e-9
        );
        Ok(())
    }

    /// The longest record if the longest field is `max_field_bytes` long.
    pub(super) fn record_length_for(&self, max_field_bytes: u32) -> u64 {
        let header = if self.field_lengths_vary() { FIELD_LENGTH_HEADER_BYTES as u64 } else { 0 };
        u64::from(self.field_count) * (header + u64::from(max_field_bytes))
    }

    fn check_record_length(&self, max_field_bytes: u32) -> Result<(), CheckFailure> {
        let length = self.record_length_for(max_field_bytes);
        if length <= RECORD_LENGTH_MAX_BYTES {
            return Ok(());
        }
        let (keys, longest): (&'static [&'static str], _) = match self.field_length_distribution {
            FieldLengthDistribution::Histogram => {
                (&["fieldlengthhistogram", "fieldlengthdistribution", "fieldcount"], "the histogram's longest field")
            }
            FieldLengthDistribution::Constant => (&["fieldlength", "fieldcount"], "fieldlength"),
            _ => (&["fieldlength", "fieldcount", "fieldlengthdistribution"], "fieldlength"),
        };
        Err(CheckFailure {
            keys,
            reason: format!(
                "a record of fieldcount ({}) fields of up to {max_field_bytes} bytes ({longest}){} is {length} \
                 bytes, beyond the limit of {RECORD_LENGTH_MAX_BYTES}",
                self.field_count,
                if self.field_lengths_vary() { " with its length header" } else { "" },
            ),
        })
    }

    /// The error for a failed check: the value of the key of `failure` that was written
    /// last, where it was written (a key never given is blamed at line 0 of this spec's
    /// origin).
    fn blame(&self, failure: CheckFailure) -> WorkloadError {
        let blamed = failure
            .keys
            .iter()
            .filter_map(|&k| self.provenance.position(k).map(|position| (position, k)))
            .max()
            .map(|(position, _)| &self.provenance.given[position]);
        let (key, origin, line) = match blamed {
            Some(g) => (g.key.clone(), g.origin.clone(), g.line),
            None => (failure.keys[0].to_owned(), self.origin.clone(), 0),
        };
        let value = self.get(&key).unwrap_or_default();
        WorkloadError::BadValue { origin, line, key, value, reason: failure.reason }
    }

    /// Reads the field length histogram if `histogram` field lengths need one that is
    /// not read yet; drops it otherwise.
    fn load_histogram(&mut self) -> Result<(), WorkloadError> {
        if self.field_length_distribution != FieldLengthDistribution::Histogram {
            self.field_length_histogram = None;
            return Ok(());
        }
        let path = field_length::locate(&self.field_length_histogram_file, self.provenance.base_dir.as_deref());
        if self.field_length_histogram.as_ref().is_some_and(|h| h.path() == path) {
            return Ok(());
        }
        match FieldLengthHistogram::from_file(&path) {
            Ok(h) => {
                // The path as found, so that a spec written back finds the same file.
                self.field_length_histogram_file = path.display().to_string();
                self.field_length_histogram = Some(Arc::new(h));
                Ok(())
            }
            Err(WorkloadError::Io { source, .. }) => {
                // Name the line that asked for the file: its own, or the distribution's.
                let keys: &'static [&'static str] = if self.is_given("fieldlengthhistogram") {
                    &["fieldlengthhistogram"]
                } else {
                    &["fieldlengthdistribution"]
                };
                let default =
                    if self.is_given("fieldlengthhistogram") { "" } else { " (fieldlengthhistogram's default)" };
                Err(self.blame(CheckFailure {
                    keys,
                    reason: format!("cannot read the field length histogram {}{default}: {source}", path.display()),
                }))
            }
            Err(e) => Err(e),
        }
    }

    /// The field length sampler of a checked spec.
    fn build_field_lengths(&self) -> FieldLengths {
        let (min, max) = (self.field_length_min_bytes, self.field_length_bytes);
        match self.field_length_distribution {
            FieldLengthDistribution::Constant => FieldLengths::Constant(max),
            FieldLengthDistribution::Uniform => FieldLengths::Uniform { min, max },
            FieldLengthDistribution::Zipfian => FieldLengths::Zipfian {
                min,
                zipf: crate::dist::Zipf::new(u64::from(max - min) + 1, self.zipfian_constant),
            },
            FieldLengthDistribution::Histogram => FieldLengths::Histogram(Arc::clone(
                self.field_length_histogram.as_ref().expect("load_histogram read it for histogram field lengths"),
            )),
        }
    }
}

/// A failed consistency check: the keys involved and why.
pub(super) struct CheckFailure {
    keys: &'static [&'static str],
    reason: String,
}
