//! Device profiles: what a DRAM, NVM or SSD device costs per operation, in TOML.
//!
//! A profile gives latencies, bandwidths, the cost of a persist, the media's access
//! granularity, how much writes slow concurrent reads, capacity, price and endurance.
//! Built-in presets live in `profiles/*.toml` beside this file, each value with its
//! public source in a comment; users write their own files in the same format, and
//! a file may start from a preset with `inherits = "optane-dcpmm"` and override fields.
//!
//! Every value is validated on load: finite, non-negative, within the bounds of
//! [`crate::limits`]; a bad file is an error naming the file, the field and the value.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::limits::{
    PROFILE_BANDWIDTH_GB_S_MAX, PROFILE_GRANULARITY_BYTES_MAX, PROFILE_INHERIT_DEPTH_MAX, PROFILE_INTERFERENCE_MAX,
    PROFILE_LATENCY_NS_MAX,
};
use crate::size::ByteSize;

/// Which tier a device (or a profile) is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Volatile main memory, the fastest tier.
    Dram,
    /// Byte-addressable memory behind DRAM: persistent memory or CXL-attached memory.
    Nvm,
    /// The SSD page file, accessed in whole pages.
    Ssd,
}

impl Tier {
    /// The tier's name as profiles and reports spell it: `dram`, `nvm` or `ssd`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Dram => "dram",
            Tier::Nvm => "nvm",
            Tier::Ssd => "ssd",
        }
    }
}

impl std::str::FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> Result<Tier, String> {
        match s {
            "dram" => Ok(Tier::Dram),
            "nvm" => Ok(Tier::Nvm),
            "ssd" => Ok(Tier::Ssd),
            _ => Err(format!("unknown tier {s:?}; use dram, nvm or ssd")),
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The performance, price and endurance of one kind of device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Name of the profile (a preset's name, or the file's own `name`).
    pub name: String,
    /// Which tier this device can serve.
    pub kind: Tier,
    /// Free text about the device and where its numbers come from; empty if not given.
    #[serde(default)]
    pub description: String,
    /// Whether data survives power loss once persisted.
    pub persistent: bool,
    /// Latency of one read (a cache line on memory, a page on SSD), before transfer.
    pub read_latency_ns: f64,
    /// Latency of one write, before transfer.
    pub write_latency_ns: f64,
    /// Sustained read bandwidth, GB/s (10^9 bytes per second).
    pub read_bandwidth_gb_s: f64,
    /// Sustained write bandwidth, GB/s (10^9 bytes per second).
    pub write_bandwidth_gb_s: f64,
    /// Cost of making one cache line durable (memory) or of one flush (SSD).
    pub persist_ns: f64,
    /// The media's internal access unit: an access is charged whole units.
    pub access_granularity_bytes: u64,
    /// Factor (>= 1) by which reads slow down while writes are in flight or recent.
    pub write_read_interference: f64,
    /// How long after a write completes reads still suffer the interference.
    pub interference_window_ns: f64,
    /// Capacity of one device.
    pub capacity: ByteSize,
    /// Price, US dollars per GB (10^9 bytes).
    pub cost_per_gb_usd: f64,
    /// Writes each cell survives; absent when there is no practical limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endurance_writes_per_cell: Option<f64>,
}

/// Why a profile could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// A name that is no preset and does not look like a path to a file.
    #[error("unknown device profile {name:?}; presets are: {known}; or give a path to a .toml file")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The preset names, comma-separated.
        known: String,
    },
    /// A profile file (or a file named by `inherits`) could not be read.
    #[error("cannot read device profile {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// Text that is not valid TOML, or has unknown, missing or mistyped fields.
    #[error("malformed device profile {source_name}: {message}")]
    Parse {
        /// Where the text came from: a file path or `preset <name>`.
        source_name: String,
        /// The parser's message, with the line where it has one.
        message: String,
    },
    /// A field whose value is out of range or of the wrong kind.
    #[error("device profile {source_name}: {field} = {value}: {reason}")]
    Invalid {
        /// Where the profile came from: a file path or `preset <name>`.
        source_name: String,
        /// The profile field at fault.
        field: &'static str,
        /// The bad value as text.
        value: String,
        /// What the value must be.
        reason: &'static str,
    },
    /// An `inherits` chain deeper than [`PROFILE_INHERIT_DEPTH_MAX`], most likely a cycle.
    #[error("device profile {source_name}: `inherits` chain is longer than {PROFILE_INHERIT_DEPTH_MAX} (a cycle?)")]
    InheritTooDeep {
        /// The profile at which the depth limit was passed.
        source_name: String,
    },
    /// A profile used for a tier it cannot serve (see [`DeviceProfile::expect_tier`]).
    #[error(
        "device profile {name:?} is for {found} devices and cannot serve the {expected} tier (memory tiers take dram or nvm profiles, the ssd tier ssd profiles)"
    )]
    WrongTier {
        /// The profile's name.
        name: String,
        /// The tier the profile is for (its `kind`).
        found: Tier,
        /// The tier it was asked to serve.
        expected: Tier,
    },
}

/// The built-in presets: name and TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("dram", include_str!("profiles/dram.toml")),
    ("optane-dcpmm", include_str!("profiles/optane-dcpmm.toml")),
    ("nvdimm-n", include_str!("profiles/nvdimm-n.toml")),
    ("cxl-expander", include_str!("profiles/cxl-expander.toml")),
    ("nvme-ssd", include_str!("profiles/nvme-ssd.toml")),
    ("nvme-ssd-no-plp", include_str!("profiles/nvme-ssd-no-plp.toml")),
    ("optane-ssd", include_str!("profiles/optane-ssd.toml")),
    ("sata-ssd", include_str!("profiles/sata-ssd.toml")),
    ("os-page-cache", include_str!("profiles/os-page-cache.toml")),
];

fn preset_names() -> String {
    PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

impl DeviceProfile {
    /// A built-in preset by name.
    ///
    /// # Errors
    /// `Unknown` when no preset has that name.
    pub fn preset(name: &str) -> Result<DeviceProfile, ProfileError> {
        let text = PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| ProfileError::Unknown { name: name.to_string(), known: preset_names() })?;
        Self::from_toml_str(text, &format!("preset {name}"))
    }

    /// A preset name, or a path to a TOML file.
    ///
    /// ```
    /// use tierdb::device::{DeviceProfile, Tier};
    /// let optane = DeviceProfile::load("optane-dcpmm").unwrap();
    /// assert_eq!(optane.kind, Tier::Nvm);
    /// assert_eq!(optane.media_bytes(0, 64), 256); // one 64-B line costs a 256-B XPLine
    /// assert!(DeviceProfile::load("no-such-device").is_err());
    /// ```
    ///
    /// # Errors
    /// `Unknown` for a name that is neither a preset nor an existing file; `Read`,
    /// `Parse`, `Invalid` for a file that cannot be read, parsed or validated.
    pub fn load(spec: &str) -> Result<DeviceProfile, ProfileError> {
        if PRESETS.iter().any(|(n, _)| *n == spec) {
            return Self::preset(spec);
        }
        let path = Path::new(spec);
        let looks_like_path = spec.contains('/') || spec.ends_with(".toml") || path.exists();
        if !looks_like_path {
            return Err(ProfileError::Unknown { name: spec.to_string(), known: preset_names() });
        }
        Self::from_file(path)
    }

    /// Loads and validates a profile file.
    ///
    /// # Errors
    /// As [`DeviceProfile::load`].
    pub fn from_file(path: &Path) -> Result<DeviceProfile, ProfileError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ProfileError::Read { path: path.to_path_buf(), source })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates profile TOML; `source_name` says where it came from in errors.
    ///
    /// # Errors
    /// `Parse` for malformed TOML, unknown or missing fields; `Invalid` for values out of
    /// range; `InheritTooDeep` for an `inherits` cycle.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<DeviceProfile, ProfileError> {
        let table = resolve_inherits(text, source_name, 0)?;
        let profile = DeviceProfile::deserialize(toml::Value::Table(table))
            .map_err(|e| ProfileError::Parse { source_name: source_name.to_string(), message: e.to_string() })?;
        profile.validate(source_name)?;
        Ok(profile)
    }

    /// Checks every value; `source_name` names the profile in the error.
    ///
    /// # Errors
    /// `Invalid` naming the first bad field.
    pub fn validate(&self, source_name: &str) -> Result<(), ProfileError> {
        let invalid = |field: &'static str, value: String, reason: &'static str| ProfileError::Invalid {
            source_name: source_name.to_string(),
            field,
            value,
            reason,
        };
        if self.name.trim().is_empty() {
            return Err(invalid("name", format!("{:?}", self.name), "must not be empty"));
        }
        let ranged = [
            ("read_latency_ns", self.read_latency_ns, 0.0, PROFILE_LATENCY_NS_MAX),
            ("write_latency_ns", self.write_latency_ns, 0.0, PROFILE_LATENCY_NS_MAX),
            ("persist_ns", self.persist_ns, 0.0, PROFILE_LATENCY_NS_MAX),
            ("interference_window_ns", self.interference_window_ns, 0.0, PROFILE_LATENCY_NS_MAX),
            ("cost_per_gb_usd", self.cost_per_gb_usd, 0.0, 1e9),
            ("write_read_interference", self.write_read_interference, 1.0, PROFILE_INTERFERENCE_MAX),
        ];
        for (field, value, min, max) in ranged {
            if !value.is_finite() || value < min || value > max {
                return Err(invalid(field, value.to_string(), range_reason(min)));
            }
        }
        for (field, value) in
            [("read_bandwidth_gb_s", self.read_bandwidth_gb_s), ("write_bandwidth_gb_s", self.write_bandwidth_gb_s)]
        {
            if !value.is_finite() || value <= 0.0 || value > PROFILE_BANDWIDTH_GB_S_MAX {
                return Err(invalid(field, value.to_string(), "must be greater than 0 and at most 10000 GB/s"));
            }
        }
        let g = self.access_granularity_bytes;
        if g == 0 || !g.is_power_of_two() || g > PROFILE_GRANULARITY_BYTES_MAX {
            return Err(invalid(
                "access_granularity_bytes",
                g.to_string(),
                "must be a power of two between 1 and 1 MiB",
            ));
        }
        if let Some(e) = self.endurance_writes_per_cell
            && (!e.is_finite() || e < 1.0)
        {
            return Err(invalid(
                "endurance_writes_per_cell",
                e.to_string(),
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        Ok(())
    }

    /// Fails unless this profile can serve `tier`: the memory tiers (DRAM, NVM) take
    /// either memory profile, so that NVM can be emulated at DRAM speed and back; the
    /// SSD tier takes SSD profiles only.
    ///
    /// # Errors
    /// `WrongTier`.
    pub fn expect_tier(&self, tier: Tier) -> Result<(), ProfileError> {
        if (self.kind == Tier::Ssd) == (tier == Tier::Ssd) {
            Ok(())
        } else {
            Err(ProfileError::WrongTier { name: self.name.clone(), found: self.kind, expected: tier })
        }
    }

    /// Bytes the media moves for an access of `len` bytes at `offset`: whole
    /// granules covering the range.
    #[inline]
    pub fn media_bytes(&self, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let g = self.access_granularity_bytes;
        debug_assert!(g.is_power_of_two(), "granularity {g}");
        let first = offset / g;
        let last = (offset + len - 1) / g;
        (last - first + 1) * g
    }
}

fn range_reason(min: f64) -> &'static str {
    if min >= 1.0 {
        "must be a finite number of at least 1"
    } else {
        "must be a finite, non-negative number within bounds"
    }
}

/// Parses `text`, and if it names `inherits = "preset-or-file"`, lays it over that base.
fn resolve_inherits(text: &str, source_name: &str, depth: usize) -> Result<toml::Table, ProfileError> {
    if depth > PROFILE_INHERIT_DEPTH_MAX {
        return Err(ProfileError::InheritTooDeep { source_name: source_name.to_string() });
    }
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ProfileError::Parse {
        source_name: source_name.to_string(),
        message: e.to_string(),
    })?;
    let Some(base) = table.remove("inherits") else {
        return Ok(table);
    };
    let Some(base_name) = base.as_str() else {
        return Err(ProfileError::Invalid {
            source_name: source_name.to_string(),
            field: "inherits",
            value: base.to_string(),
            reason: "must be the name of a preset or a path to a profile file",
        });
    };
    let (base_text, base_source) = match PRESETS.iter().find(|(n, _)| *n == base_name) {
        Some((_, t)) => (t.to_string(), format!("preset {base_name}")),
        None => {
            let path = Path::new(base_name);
            let t = std::fs::read_to_string(path)
                .map_err(|source| ProfileError::Read { path: path.to_path_buf(), source })?;
            (t, path.display().to_string())
        }
    };
    let mut merged = resolve_inherits(&base_text, &base_source, depth + 1)?;
    for (k, v) in table {
        merged.insert(k, v);
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_loads_and_validates() {
        for (name, _) in PRESETS {
            let p = DeviceProfile::preset(name).unwrap();
            assert_eq!(p.name, *name);
            assert!(p.read_latency_ns > 0.0);
        }
        let optane = DeviceProfile::load("optane-dcpmm").unwrap();
        assert_eq!(optane.kind, Tier::Nvm);
        assert_eq!(optane.access_granularity_bytes, 256);
        assert!(optane.read_latency_ns > 3.0 * DeviceProfile::preset("dram").unwrap().read_latency_ns);
        assert!(optane.write_bandwidth_gb_s < optane.read_bandwidth_gb_s);
    }

    #[test]
    fn unknown_name_lists_presets() {
        let e = DeviceProfile::load("optane-dcpmm2").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ProfileError::Unknown { .. }), "{msg}");
        assert!(msg.contains("optane-dcpmm2") && msg.contains("nvme-ssd"), "{msg}");
    }

    #[test]
    fn malformed_toml_says_where() {
        let e = DeviceProfile::from_toml_str("name = \"x\"\nread_latency_ns = = 3\n", "mine.toml").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ProfileError::Parse { .. }), "{msg}");
        assert!(msg.contains("mine.toml") && msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn unknown_and_missing_fields_are_errors() {
        let base = PRESETS[1].1;
        let e = DeviceProfile::from_toml_str(&format!("{base}\nlatency_typo_ns = 3\n"), "t").unwrap_err();
        assert!(e.to_string().contains("latency_typo_ns"), "{e}");
        let without: String = base.lines().filter(|l| !l.starts_with("persist_ns")).collect::<Vec<_>>().join("\n");
        let e = DeviceProfile::from_toml_str(&without, "t").unwrap_err();
        assert!(e.to_string().contains("persist_ns"), "{e}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let cases = [
            ("read_latency_ns = -5", "read_latency_ns"),
            ("write_bandwidth_gb_s = 0", "write_bandwidth_gb_s"),
            ("write_read_interference = 0.5", "write_read_interference"),
            ("access_granularity_bytes = 100", "access_granularity_bytes"),
            ("capacity = \"0GiB\"", "capacity"),
            ("capacity = -3", "capacity"),
            ("persist_ns = nan", "persist_ns"),
            ("endurance_writes_per_cell = 0", "endurance_writes_per_cell"),
        ];
        for (line, field) in cases {
            let text = format!("inherits = \"optane-dcpmm\"\n{line}\n");
            let e = DeviceProfile::from_toml_str(&text, "bad.toml").unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(field) && msg.contains("bad.toml"), "{line}: {msg}");
        }
    }

    #[test]
    fn inherits_overrides_fields() {
        let p = DeviceProfile::from_toml_str(
            "inherits = \"optane-dcpmm\"\nname = \"slow-optane\"\nread_latency_ns = 1800\n",
            "t",
        )
        .unwrap();
        assert_eq!(p.name, "slow-optane");
        assert_eq!(p.read_latency_ns, 1800.0);
        assert_eq!(p.write_bandwidth_gb_s, 2.3);
    }

    #[test]
    fn media_bytes_rounds_to_granules() {
        let p = DeviceProfile::preset("optane-dcpmm").unwrap();
        assert_eq!(p.media_bytes(0, 64), 256);
        assert_eq!(p.media_bytes(192, 128), 512);
        assert_eq!(p.media_bytes(256, 256), 256);
        assert_eq!(p.media_bytes(0, 0), 0);
    }

    #[test]
    fn wrong_tier_is_refused() {
        let p = DeviceProfile::preset("nvme-ssd").unwrap();
        assert!(p.expect_tier(Tier::Ssd).is_ok());
        let e = p.expect_tier(Tier::Nvm).unwrap_err();
        assert!(e.to_string().contains("nvme-ssd"), "{e}");
        let dram = DeviceProfile::preset("dram").unwrap();
        assert!(dram.expect_tier(Tier::Nvm).is_ok());
        assert!(dram.expect_tier(Tier::Ssd).is_err());
    }
}
