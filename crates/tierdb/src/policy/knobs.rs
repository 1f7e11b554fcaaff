//! Spitfire's migration knobs (Arulraj, Pavlo, Malladi, §3): four probabilities that
//! make a multi-tier buffer manager's data flow lazy or eager.
//!
//! | knob | probability that … | otherwise |
//! |---|---|---|
//! | `dr` | a read of an NVM-resident page copies it to DRAM | the read is served in place on NVM |
//! | `dw` | a write to an NVM-resident page copies it to DRAM | the write is applied in place on NVM and persisted |
//! | `nr` | a page read from SSD is also installed in NVM | it goes to DRAM only |
//! | `nw` | a modified page evicted from DRAM is admitted to NVM | it is written to SSD |
//!
//! (An unmodified DRAM victim without an NVM frame is dropped whatever `nw` says, unless
//! the policy runs the `clean-to-nvm` variant: `policy/spitfire.rs`.)
//!
//! All ones is the eager policy of a classic hierarchy; the paper's Table 3 names four
//! more (A–D). Knobs are plain data: the policy draws against them with a seeded RNG,
//! the tuner searches over them.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::PolicyError;

/// The smallest probability a tuner moves a knob to (the paper sweeps down to 0.001);
/// zero is allowed when set by hand.
pub const KNOB_MIN: f64 = 0.001;

/// Spitfire's four migration probabilities, each in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MigrationKnobs {
    /// Probability that a read of an NVM-resident page copies it to DRAM.
    pub dr: f64,
    /// Probability that a write to an NVM-resident page copies it to DRAM.
    pub dw: f64,
    /// Probability that a page read from SSD is also installed in NVM.
    pub nr: f64,
    /// Probability that a modified page evicted from DRAM without an NVM frame is admitted
    /// to NVM.
    pub nw: f64,
}

/// The named presets: `eager` and the paper's Table 3.
pub const PRESETS: &[(&str, MigrationKnobs)] = &[
    ("eager", MigrationKnobs::EAGER),
    ("a", MigrationKnobs { dr: 1.0, dw: 1.0, nr: 0.01, nw: 0.5 }),
    ("b", MigrationKnobs { dr: 0.01, dw: 0.01, nr: 0.2, nw: 1.0 }),
    ("c", MigrationKnobs { dr: 0.01, dw: 0.01, nr: 0.2, nw: 0.5 }),
    ("d", MigrationKnobs { dr: 0.01, dw: 0.01, nr: 0.2, nw: 0.3 }),
];

impl MigrationKnobs {
    /// Every transition taken: the classic hierarchy.
    pub const EAGER: MigrationKnobs = MigrationKnobs { dr: 1.0, dw: 1.0, nr: 1.0, nw: 1.0 };

    /// The knobs in the order dr, dw, nr, nw.
    pub fn to_array(self) -> [f64; 4] {
        [self.dr, self.dw, self.nr, self.nw]
    }

    /// Knobs from an array in the order dr, dw, nr, nw (not validated).
    pub fn from_array(a: [f64; 4]) -> MigrationKnobs {
        MigrationKnobs { dr: a[0], dw: a[1], nr: a[2], nw: a[3] }
    }

    /// Checks every knob is a probability.
    ///
    /// # Errors
    /// `Config` naming the knob that is not in `[0, 1]`.
    pub fn validate(self) -> Result<MigrationKnobs, PolicyError> {
        for (name, v) in ["dr", "dw", "nr", "nw"].into_iter().zip(self.to_array()) {
            if !(0.0..=1.0).contains(&v) {
                return Err(PolicyError::Config { what: format!("spitfire knob {name} = {v} is not in [0, 1]") });
            }
        }
        Ok(self)
    }

    /// A preset by name (`eager`, `a`–`d`, case-insensitive).
    pub fn preset(name: &str) -> Option<MigrationKnobs> {
        let name = name.to_ascii_lowercase();
        PRESETS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }
}

/// Knobs that change while the engine runs: four `f64`s kept as bits in atomics. The
/// policy reads them at every decision; the online tuner sets them between epochs
/// through the buffer manager, which holds the same cell (a policy's
/// [`Shape::knobs`](super::Shape::knobs)).
#[derive(Debug)]
pub struct KnobCell {
    knobs: [AtomicU64; 4],
}

impl KnobCell {
    /// A cell holding `knobs` (taken as given).
    pub fn new(knobs: MigrationKnobs) -> KnobCell {
        KnobCell { knobs: knobs.to_array().map(|k| AtomicU64::new(k.to_bits())) }
    }

    /// One knob, in the order dr, dw, nr, nw.
    #[inline]
    pub fn knob(&self, i: usize) -> f64 {
        f64::from_bits(self.knobs[i].load(Ordering::Relaxed))
    }

    /// The four knobs now.
    pub fn get(&self) -> MigrationKnobs {
        MigrationKnobs::from_array(std::array::from_fn(|i| self.knob(i)))
    }

    /// Sets the four knobs; each is swapped atomically, so a decision made meanwhile
    /// may see some old and some new.
    pub fn set(&self, knobs: MigrationKnobs) {
        for (cell, k) in self.knobs.iter().zip(knobs.to_array()) {
            debug_assert!((0.0..=1.0).contains(&k), "knob {k} is not a probability");
            cell.store(k.to_bits(), Ordering::Relaxed);
        }
    }
}

impl Default for MigrationKnobs {
    fn default() -> MigrationKnobs {
        MigrationKnobs::EAGER
    }
}

impl fmt::Display for MigrationKnobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dr={},dw={},nr={},nw={}", self.dr, self.dw, self.nr, self.nw)
    }
}

impl FromStr for MigrationKnobs {
    type Err = PolicyError;

    /// A preset name, or `dr=X,dw=X,nr=X,nw=X` (knobs left out stay 1).
    fn from_str(s: &str) -> Result<MigrationKnobs, PolicyError> {
        if let Some(k) = MigrationKnobs::preset(s.trim()) {
            return Ok(k);
        }
        let bad = |why: String| PolicyError::Config {
            what: format!(
                "spitfire knobs {s:?}: {why}; expected a preset ({}) or dr=X,dw=X,nr=X,nw=X",
                PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        };
        let mut k = MigrationKnobs::EAGER;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| bad(format!("{part:?} has no '='")))?;
            let v: f64 = value.trim().parse().map_err(|_| bad(format!("{value:?} is not a number")))?;
            match name.trim() {
                "dr" => k.dr = v,
                "dw" => k.dw = v,
                "nr" => k.nr = v,
                "nw" => k.nw = v,
                other => return Err(bad(format!("unknown knob {other:?}"))),
            }
        }
        k.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_lists_parse() {
        assert_eq!("eager".parse::<MigrationKnobs>().unwrap(), MigrationKnobs::EAGER);
        let b: MigrationKnobs = "B".parse().unwrap();
        assert_eq!(b, MigrationKnobs { dr: 0.01, dw: 0.01, nr: 0.2, nw: 1.0 });
        let k: MigrationKnobs = "dr=0.1, nw=0".parse().unwrap();
        assert_eq!(k, MigrationKnobs { dr: 0.1, dw: 1.0, nr: 1.0, nw: 0.0 });
        assert_eq!(k.to_string().parse::<MigrationKnobs>().unwrap(), k);
    }

    #[test]
    fn bad_knobs_are_named() {
        for (s, needle) in [("dr=2", "dr = 2"), ("xx=0.5", "unknown knob"), ("dr", "no '='"), ("nr=abc", "abc")] {
            let e = s.parse::<MigrationKnobs>().unwrap_err().to_string();
            assert!(e.contains(needle), "{s}: {e}");
        }
    }
}
