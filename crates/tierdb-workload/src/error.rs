//! The error type of the workload crate.
//!
//! Every error from reading a workload says what was wrong and where: the origin (a
//! file, a built-in workload, the command line) and, for text, the 1-based line.
//! Line 0 means the value did not come from a line of text (a command-line override).

use std::fmt;
use std::path::PathBuf;

/// Why a workload could not be read or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A key that no YCSB version defines and that is not a tierdb extension, given
    /// where an unknown name is refused: [`crate::YcsbSpec::set`] (the command line). In
    /// a workload file it is a warning instead ([`crate::YcsbSpec::unknown`]).
    #[error("{}: unknown property `{key}`{}", Where(.origin, *.line), DidYouMean(.suggestion.as_deref()))]
    UnknownProperty {
        /// Where the text came from, e.g. `command line`.
        origin: String,
        /// 1-based line, or 0 for a command-line override.
        line: usize,
        /// The unknown key.
        key: String,
        /// The nearest known name, if one is close.
        suggestion: Option<String>,
    },

    /// A known key whose value is malformed, out of range, or inconsistent with the
    /// values of other keys.
    #[error("{}: bad value `{value}` for `{key}`: {reason}", Where(.origin, *.line))]
    BadValue {
        /// Where the text came from, e.g. `workload file x.txt`.
        origin: String,
        /// 1-based line, or 0 for a command-line override or a default value.
        line: usize,
        /// The key whose value is rejected.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A line that is not `key=value`, a comment, or blank.
    #[error("{}: cannot read `{text}`: {reason}", Where(.origin, *.line))]
    Syntax {
        /// Where the text came from.
        origin: String,
        /// 1-based line.
        line: usize,
        /// The offending line, trimmed.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A workload name that is not built in (and, for [`crate::YcsbSpec::resolve`],
    /// not an existing file either).
    #[error(
        "unknown workload `{name}`; the built-in workloads are {known}; \
         anything else must be the path of a property file"
    )]
    UnknownWorkload {
        /// The name asked for.
        name: String,
        /// The built-in names, comma separated.
        known: String,
    },

    /// A property file that could not be read.
    #[error("cannot read workload file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },

    /// A field length histogram (`fieldlengthhistogram`) that is not one YCSB reads: a
    /// first line `BlockSize<TAB>n`, then one `bucket<TAB>count` line per bucket.
    #[error("field length histogram {} line {line}: {reason}", .path.display())]
    Histogram {
        /// The histogram file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },

    /// A property file larger than [`crate::limits::PROPERTIES_FILE_MAX_BYTES`].
    #[error("workload file {} is {size_bytes} bytes, more than the limit of {max_bytes}", .path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size_bytes: u64,
        /// The limit.
        max_bytes: u64,
    },
}

/// Formats an origin and line as `origin line N`, or just `origin` for line 0.
struct Where<'a>(&'a str, usize);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 0 { write!(f, "{}", self.0) } else { write!(f, "{} line {}", self.0, self.1) }
    }
}

/// Formats a suggested name as `; did you mean `name`?`, or nothing.
struct DidYouMean<'a>(Option<&'a str>);

impl fmt::Display for DidYouMean<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(name) => write!(f, "; did you mean `{name}`?"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_where() {
        let e = WorkloadError::UnknownProperty {
            origin: "workload file x.txt".into(),
            line: 7,
            key: "foo".into(),
            suggestion: None,
        };
        assert_eq!(e.to_string(), "workload file x.txt line 7: unknown property `foo`");
        let e = WorkloadError::UnknownProperty {
            origin: "command line".into(),
            line: 0,
            key: "recrodcount".into(),
            suggestion: Some("recordcount".into()),
        };
        assert_eq!(e.to_string(), "command line: unknown property `recrodcount`; did you mean `recordcount`?");
        let e =
            WorkloadError::Histogram { path: "h.txt".into(), line: 3, reason: "expected `bucket<TAB>count`".into() };
        assert_eq!(e.to_string(), "field length histogram h.txt line 3: expected `bucket<TAB>count`");
        let e = WorkloadError::BadValue {
            origin: "command line".into(),
            line: 0,
            key: "fieldcount".into(),
            value: "0".into(),
            reason: "must be at least 1".into(),
        };
        assert_eq!(e.to_string(), "command line: bad value `0` for `fieldcount`: must be at least 1");
    }
}
