//! The rows and sections of `papers.md` and their rendering.

use std::fmt::Write as _;
use std::path::Path;

use super::{Ctx, Ran};

/// One published figure against tierdb's.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// The paper's figure or table, e.g. "Figure 8".
    pub figure: String,
    /// What is compared, e.g. "three-tier ÷ basic NVM BM, data 4× DRAM".
    pub what: String,
    /// The published number, when the paper gives one to compare with.
    pub published: Option<f64>,
    /// How the paper states it, when it does not give a number (e.g. "best of the
    /// five", "read off the plot ≈ 1.5×").
    pub published_text: String,
    /// tierdb's number; `None` when the run did not produce one (then `ours_text` says
    /// why).
    pub ours: Option<f64>,
    pub ours_text: String,
    /// Unit of both numbers ("×", "M ops/s", "%", …).
    pub unit: String,
    /// One or two sentences on why the numbers differ (or agree).
    pub why: String,
}

impl Row {
    pub(crate) fn new(figure: impl Into<String>, what: impl Into<String>) -> Self {
        Row {
            figure: figure.into(),
            what: what.into(),
            published: None,
            published_text: String::new(),
            ours: None,
            ours_text: String::new(),
            unit: String::new(),
            why: String::new(),
        }
    }

    /// The published number (and how the paper states it, when that helps; may be
    /// empty).
    pub(crate) fn published(mut self, value: f64, text: impl Into<String>) -> Self {
        self.published = Some(value);
        self.published_text = text.into();
        self
    }

    /// The paper states it without a number to divide by.
    pub(crate) fn published_text(mut self, text: impl Into<String>) -> Self {
        self.published_text = text.into();
        self
    }

    pub(crate) fn ours(mut self, value: f64) -> Self {
        self.ours = Some(value);
        self
    }

    /// tierdb's result in words (with or without a number).
    pub(crate) fn ours_text(mut self, text: impl Into<String>) -> Self {
        self.ours_text = text.into();
        self
    }

    pub(crate) fn unit(mut self, unit: impl Into<String>) -> Self {
        self.unit = unit.into();
        self
    }

    pub(crate) fn why(mut self, why: impl Into<String>) -> Self {
        self.why = why.into();
        self
    }

    /// ours ÷ published, when both are numbers and the published one is not zero.
    pub(crate) fn ratio(&self) -> Option<f64> {
        match (self.ours, self.published) {
            (Some(o), Some(p)) if p != 0.0 && o.is_finite() && p.is_finite() => Some(o / p),
            _ => None,
        }
    }
}

/// One experiment's part of the report.
#[derive(Clone, Debug)]
pub(crate) struct Section {
    /// The paper, by its short name: "three-tier", "spitfire", "nvcache", "nv-sql",
    /// "mmap-postgres".
    pub paper: String,
    pub title: String,
    /// How it ran: emulation mode, device profiles, sizes, threads, seed, runs.
    pub setup: String,
    /// The child runs, in order; their command lines regenerate the artifacts.
    pub ran: Vec<Ran>,
    /// Artifacts (text, JSON, SVG), paths relative to the report (see [`Ctx::link`]).
    pub artifacts: Vec<String>,
    pub rows: Vec<Row>,
    /// Free text after the table: deviations, switchable choices, what was left out.
    pub notes: Vec<String>,
    /// Seconds the section took (set by the runner).
    pub seconds: f64,
    /// The error when the section failed: then it has no rows.
    pub error: Option<String>,
}

impl Section {
    pub(crate) fn new(paper: &str, title: impl Into<String>) -> Self {
        Section {
            paper: paper.to_string(),
            title: title.into(),
            setup: String::new(),
            ran: Vec::new(),
            artifacts: Vec::new(),
            rows: Vec::new(),
            notes: Vec::new(),
            seconds: 0.0,
            error: None,
        }
    }

    pub(crate) fn failed(paper: &str, title: &str, error: &str, seconds: f64) -> Self {
        let mut s = Section::new(paper, title);
        s.error = Some(error.to_string());
        s.seconds = seconds;
        s
    }

    /// Adds every file of `dir` with one of the extensions txt, json, svg, md as an
    /// artifact.
    pub(crate) fn artifacts_in(&mut self, ctx: &Ctx, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut found: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("txt" | "json" | "svg" | "md")))
            .collect();
        found.sort();
        self.artifacts.extend(found.iter().map(|p| ctx.link(p)));
    }
}

fn number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn cell(value: Option<f64>, text: &str, unit: &str) -> String {
    match (value, text.is_empty()) {
        (Some(v), true) => format!("{} {unit}", number(v)).trim_end().to_string(),
        (Some(v), false) => format!("{} {unit} ({text})", number(v)).replace("  ", " "),
        (None, false) => text.to_string(),
        (None, true) => "—".to_string(),
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The report: a header with the machine and scale, a summary table of every row,
/// then one part per section with its commands, setup, rows, notes and artifacts.
pub(crate) fn render(ctx: &Ctx, sections: &[Section], seconds: f64) -> String {
    let mut md = String::new();
    let machine = tierdb_bench::harness::Machine::probe();
    let _ = writeln!(md, "# The papers' results, reproduced\n");
    let _ = writeln!(
        md,
        "Written by `tierdb reproduce --scale {} --out {}` in {:.0} min on {}, {}, tierdb {}. \
         Each section below lists the commands that produced its figures; each command \
         also runs alone. Numbers are tierdb's at this machine's scale (a 2-core VM, \
         emulated NVM), set beside the published ones: compare the shapes and ratios, \
         not absolute throughput.\n",
        ctx.scale().name(),
        ctx.out.display(),
        seconds / 60.0,
        machine.label(),
        machine.kernel,
        env!("CARGO_PKG_VERSION"),
    );
    if ctx.quick() {
        let _ = writeln!(
            md,
            "**Scale quick:** every experiment ran at toy sizes with one run per point to \
             check that it works. These figures are not evidence; the committed report \
             comes from `--scale full`.\n"
        );
    }
    let failed: Vec<_> = sections.iter().filter(|s| s.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "**{} section(s) failed** and show no figures:", failed.len());
        for s in &failed {
            let _ = writeln!(md, "- {} ({})", s.title, s.paper);
        }
        md.push('\n');
    }
    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(md, "| paper | figure | what | published | tierdb | tierdb ÷ published |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for s in sections {
        for r in &s.rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                escape(&s.paper),
                escape(&r.figure),
                escape(&r.what),
                escape(&cell(r.published, &r.published_text, &r.unit)),
                escape(&cell(r.ours, &r.ours_text, &r.unit)),
                r.ratio().map(|x| format!("{x:.2}")).unwrap_or_else(|| "—".into()),
            );
        }
    }
    md.push('\n');
    for s in sections {
        let _ = writeln!(md, "## {} — {}\n", s.paper, s.title);
        if let Some(e) = &s.error {
            let _ = writeln!(md, "**Failed** after {:.0} s; no figures:\n\n```\n{e}\n```\n", s.seconds);
            continue;
        }
        if !s.setup.is_empty() {
            let _ = writeln!(md, "{}\n", s.setup);
        }
        let _ = writeln!(md, "Commands ({:.0} s in all):\n\n```", s.seconds);
        for r in &s.ran {
            let _ = writeln!(md, "{}   # {:.0} s", r.command, r.seconds);
        }
        let _ = writeln!(md, "```\n");
        if !s.rows.is_empty() {
            let _ = writeln!(md, "| figure | what | published | tierdb | ratio | why they differ |");
            let _ = writeln!(md, "|---|---|---|---|---|---|");
            for r in &s.rows {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} |",
                    escape(&r.figure),
                    escape(&r.what),
                    escape(&cell(r.published, &r.published_text, &r.unit)),
                    escape(&cell(r.ours, &r.ours_text, &r.unit)),
                    r.ratio().map(|x| format!("{x:.2}")).unwrap_or_else(|| "—".into()),
                    escape(&r.why),
                );
            }
            md.push('\n');
        }
        for n in &s.notes {
            let _ = writeln!(md, "{n}\n");
        }
        if !s.artifacts.is_empty() {
            let links: Vec<String> = s.artifacts.iter().map(|a| format!("[{a}]({a})")).collect();
            let _ = writeln!(md, "Artifacts: {}\n", links.join(", "));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_needs_two_numbers_and_a_nonzero_divisor() {
        let r = Row::new("Figure 8", "x").published(2.0, "").ours(3.0);
        assert_eq!(r.ratio(), Some(1.5));
        assert_eq!(Row::new("f", "x").published(0.0, "").ours(1.0).ratio(), None);
        assert_eq!(Row::new("f", "x").published_text("best").ours(1.0).ratio(), None);
        assert_eq!(Row::new("f", "x").published(1.0, "").ours_text("did not run").ratio(), None);
    }

    #[test]
    fn cells_show_number_unit_and_words() {
        assert_eq!(cell(Some(1.234), "", "×"), "1.23 ×");
        assert_eq!(cell(Some(123.4), "read off the plot", "%"), "123 % (read off the plot)");
        assert_eq!(cell(None, "best of five", "×"), "best of five");
        assert_eq!(cell(None, "", "×"), "—");
        assert_eq!(escape("a|b"), "a\\|b");
    }
}
