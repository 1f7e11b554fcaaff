//! Human-readable byte sizes: `"256MiB"`, `"1 GiB"`, `"4096"`, `"16k"`.
//!
//! Binary suffixes (KiB, MiB, GiB, TiB, and the short k/m/g/t) are powers of 1024;
//! decimal suffixes (KB, MB, GB, TB) are powers of 1000. Zero, negative, fractional
//! byte counts and overflow are errors.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A positive number of bytes, parsed from and printed as a human-readable size.
///
/// ```
/// use tierdb::ByteSize;
/// let s: ByteSize = "1.5GiB".parse().unwrap();
/// assert_eq!(s.bytes(), 3 << 29);
/// assert_eq!(s.to_string(), "1536MiB");
/// assert!("0MiB".parse::<ByteSize>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

/// Why a size string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad size {text:?}: {reason}")]
pub struct SizeError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it (unknown unit, zero, negative, fractional bytes, too large).
    pub reason: &'static str,
}

const UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("k", 1 << 10),
    ("kib", 1 << 10),
    ("kb", 1_000),
    ("m", 1 << 20),
    ("mib", 1 << 20),
    ("mb", 1_000_000),
    ("g", 1 << 30),
    ("gib", 1 << 30),
    ("gb", 1_000_000_000),
    ("t", 1 << 40),
    ("tib", 1 << 40),
    ("tb", 1_000_000_000_000),
];

impl ByteSize {
    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = SizeError;

    fn from_str(text: &str) -> Result<Self, SizeError> {
        let err = |reason| SizeError { text: text.to_string(), reason };
        let s = text.trim();
        if s.starts_with('-') {
            return Err(err("sizes must be positive"));
        }
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        if number.is_empty() {
            return Err(err("expected a number, e.g. 256MiB"));
        }
        let unit = unit.trim().to_ascii_lowercase();
        let factor = if unit.is_empty() {
            1
        } else {
            UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|&(_, f)| f)
                .ok_or_else(|| err("unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"))?
        };
        let bytes = if number.contains('.') {
            let value: f64 = number.parse().map_err(|_| err("not a number"))?;
            let bytes = value * factor as f64;
            if bytes.fract() != 0.0 {
                return Err(err("not a whole number of bytes"));
            }
            if bytes >= u64::MAX as f64 {
                return Err(err("too large"));
            }
            bytes as u64
        } else {
            let value: u64 = number.parse().map_err(|_| err("too large"))?;
            value.checked_mul(factor).ok_or_else(|| err("too large"))?
        };
        if bytes == 0 {
            return Err(err("sizes must be greater than zero"));
        }
        Ok(ByteSize(bytes))
    }
}

impl fmt::Display for ByteSize {
    /// The largest binary unit that divides the size exactly, else bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        for (name, factor) in NAMES {
            if self.0 >= factor && self.0.is_multiple_of(factor) {
                return write!(f, "{}{name}", self.0 / factor);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    /// Accepts a string (`"1GiB"`) or a positive integer of bytes.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Int(i64),
        }
        match Raw::deserialize(d)? {
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
            Raw::Int(n) if n > 0 => Ok(ByteSize(n as u64)),
            Raw::Int(n) => Err(serde::de::Error::custom(format!("bad size {n}: sizes must be greater than zero"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!("4096".parse::<ByteSize>().unwrap().0, 4096);
        assert_eq!("16k".parse::<ByteSize>().unwrap().0, 16384);
        assert_eq!("256MiB".parse::<ByteSize>().unwrap().0, 256 << 20);
        assert_eq!("1 GiB".parse::<ByteSize>().unwrap().0, 1 << 30);
        assert_eq!("2GB".parse::<ByteSize>().unwrap().0, 2_000_000_000);
        assert_eq!("1.5GiB".parse::<ByteSize>().unwrap().0, 3 << 29);
    }

    #[test]
    fn refuses_bad_sizes() {
        for bad in ["", "0", "0MiB", "-1", "-4GiB", "12 parsecs", "1.3B", "99999999999TiB", "MiB"] {
            let e = bad.parse::<ByteSize>().unwrap_err();
            assert_eq!(e.text, bad, "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for n in [1u64, 4096, 16384, 1 << 30, 3 << 29, 12345] {
            let s = ByteSize(n).to_string();
            assert_eq!(s.parse::<ByteSize>().unwrap().0, n, "{s}");
        }
    }
}
