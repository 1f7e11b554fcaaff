//! Which of the three-tier paper's NVM techniques a buffer manager uses (§3.1–3.3).
//!
//! Each one switches on and off on its own, so one architecture runs as the paper's
//! drill-down: `basic` (none), `+cl` (cache-line-grained pages), `+mini` (mini pages),
//! `+swizzle` (pointer swizzling). Mini pages need cache-line-grained pages (a mini page
//! is filled a line at a time).

use serde::{Deserialize, Serialize};

use super::BufferError;

/// The techniques a buffer manager uses between DRAM and NVM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Techniques {
    /// Cache-line-grained pages: an NVM-backed page is loaded into DRAM one 64-byte line
    /// at a time, as accessed, and written back only in its dirty lines.
    pub cl_grained: bool,
    /// Mini pages: an NVM-backed page is first given a 16-line DRAM frame, promoted to a
    /// full frame when it overflows.
    pub mini_pages: bool,
    /// Pointer swizzling: inner B+-tree nodes reference DRAM-resident children by frame,
    /// skipping the page table.
    pub swizzling: bool,
}

impl Techniques {
    /// None: the basic NVM buffer manager (whole pages, page-table lookups).
    pub const NONE: Techniques = Techniques { cl_grained: false, mini_pages: false, swizzling: false };
    /// All three: the paper's three-tier buffer manager.
    pub const ALL: Techniques = Techniques { cl_grained: true, mini_pages: true, swizzling: true };

    /// The drill-down's cumulative steps, with their names: basic, +cl-grained,
    /// +mini-pages, +swizzling.
    pub const DRILLDOWN: [(&'static str, Techniques); 4] = [
        ("basic", Techniques::NONE),
        ("+cl-grained", Techniques { cl_grained: true, mini_pages: false, swizzling: false }),
        ("+mini-pages", Techniques { cl_grained: true, mini_pages: true, swizzling: false }),
        ("+swizzling", Techniques::ALL),
    ];

    /// Parses `none`, `all`, or a comma-separated list of `cl`, `mini`, `swizzle`
    /// (also spelled `cl-grained`, `mini-pages`, `swizzling`).
    ///
    /// # Errors
    /// `Config` naming the unknown word, or mini pages without cache-line-grained pages.
    pub fn parse(s: &str) -> Result<Techniques, BufferError> {
        let s = s.trim();
        match s {
            "none" | "basic" => return Ok(Techniques::NONE),
            "all" => return Ok(Techniques::ALL),
            _ => {}
        }
        let mut t = Techniques::NONE;
        for word in s.split([',', '+']).map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "cl" | "cl-grained" => t.cl_grained = true,
                "mini" | "mini-pages" => t.mini_pages = true,
                "swizzle" | "swizzling" => t.swizzling = true,
                other => {
                    return Err(BufferError::Config {
                        what: format!(
                            "technique {other:?} in {s:?}: expected none, all, or a list of cl, mini, swizzle"
                        ),
                    });
                }
            }
        }
        t.validate()?;
        Ok(t)
    }

    /// # Errors
    /// `Config` for mini pages without cache-line-grained pages.
    pub fn validate(&self) -> Result<(), BufferError> {
        if self.mini_pages && !self.cl_grained {
            return Err(BufferError::Config {
                what: "mini pages are filled one cache line at a time: they need cl-grained pages too".into(),
            });
        }
        Ok(())
    }

    /// The canonical spelling `parse` reads back: `none`, `all` or e.g. `cl,swizzle`.
    pub fn name(&self) -> String {
        if *self == Techniques::NONE {
            return "none".into();
        }
        if *self == Techniques::ALL {
            return "all".into();
        }
        let mut parts = Vec::new();
        if self.cl_grained {
            parts.push("cl");
        }
        if self.mini_pages {
            parts.push("mini");
        }
        if self.swizzling {
            parts.push("swizzle");
        }
        parts.join(",")
    }
}

impl std::fmt::Display for Techniques {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Techniques {
    type Err = BufferError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Techniques::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_and_refuses() {
        for (_, t) in Techniques::DRILLDOWN {
            assert_eq!(Techniques::parse(&t.name()).unwrap(), t);
        }
        assert_eq!(Techniques::parse("cl+swizzle").unwrap().name(), "cl,swizzle");
        assert!(Techniques::parse("mini").unwrap_err().to_string().contains("need cl-grained"));
        assert!(Techniques::parse("cl,turbo").unwrap_err().to_string().contains("\"turbo\""));
    }
}
