//! The files of a report: text, JSON and charts, printed and written together.

use super::{Chart, write_svg};

/// Prints `text` and writes it to `<dir>/<stem>.txt`, `report` to `<dir>/<stem>.json` and
/// each chart to its file name in `dir`; then prints what it wrote.
///
/// # Errors
/// A file that cannot be written (named in the error).
pub fn write_outputs(
    dir: &std::path::Path,
    stem: &str,
    text: &str,
    report: &impl serde::Serialize,
    charts: &[(String, Chart)],
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut written = Vec::new();
    let txt = dir.join(format!("{stem}.txt"));
    std::fs::write(&txt, text).with_context(|| format!("writing {}", txt.display()))?;
    written.push(txt);
    let json = dir.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    written.push(json);
    for (name, chart) in charts {
        let path = dir.join(name);
        write_svg(chart, &path).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    let names = written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    to_stdout(&format!("{text}wrote {names}\n"))
}

/// The y-axis label of a throughput plot: modelled in `model` mode, measured otherwise.
pub fn throughput_label(mode: tierdb::device::EmulationMode) -> String {
    if mode == tierdb::device::EmulationMode::Model { "modelled operations / s" } else { "operations / s" }.into()
}

/// Writes `s` to standard output. A closed pipe (`tierdb ... | head`) is not an error:
/// the outputs are on disk already; any other failure is.
fn to_stdout(s: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::from(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}

/// Appends a "notes:" list to `out` (nothing if there are none).
pub fn write_notes(out: &mut String, notes: &[String]) {
    use std::fmt::Write as _;
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nnotes:");
    for n in notes {
        let _ = writeln!(out, "- {n}");
    }
}
