//! The text form of a trace: one record per line, for small traces written by hand.
//!
//! ```text
//! # tierdb-trace 1
//! # page_size 16384
//! # source ycsb ro on three-tier
//! R 17
//! W 17 lsn=42 thread=0 time=1234
//! A 18
//! F 18
//! M measure
//! r 19
//! ```
//!
//! `R`/`W` are whole-page reads and writes, `r`/`w` line-grained ones (which a policy
//! may serve in place on NVM), `A`/`F` allocation and free, `M` a marker.
//!
//! The header: `# tierdb-trace 1` is the first line that is not blank (it is how a text
//! trace is told from another file), and `# page_size N` (N ≥ 1) comes before the
//! first record; `# source` is optional. Other lines starting with `#` are comments;
//! blank lines are skipped. A file without the header is an error, not a trace of
//! 16 KiB pages.

use std::io::{BufRead, Write};
use std::path::Path;

use super::{Header, Marker, Op, Record, Trace};
use crate::error::TraceError;

/// Writes `trace` as text.
///
/// # Errors
/// I/O errors.
pub fn write(trace: &Trace, mut out: impl Write) -> std::io::Result<()> {
    writeln!(out, "# tierdb-trace 1")?;
    writeln!(out, "# page_size {}", trace.header.page_size_bytes)?;
    writeln!(out, "# source {}", trace.header.source.replace('\n', " "))?;
    for r in &trace.records {
        if r.op == Op::Marker {
            match Marker::from_code(r.page) {
                Some(m) => writeln!(out, "M {}", m.name())?,
                None => writeln!(out, "M {}", r.page)?,
            }
            continue;
        }
        write!(out, "{} {}", r.op.letter(), r.page)?;
        if let Some(l) = r.lsn {
            write!(out, " lsn={l}")?;
        }
        if let Some(t) = r.thread {
            write!(out, " thread={t}")?;
        }
        if let Some(t) = r.time_ns {
            write!(out, " time={t}")?;
        }
        writeln!(out)?;
    }
    out.flush()
}

/// Reads a text trace.
///
/// # Errors
/// `Io`; `Corrupted` naming the line of the first one that does not parse, or where the
/// header should have been (a missing `# tierdb-trace 1` or `# page_size N`, a page size
/// of 0); `Version` for another version; `Empty` for a file of blank lines.
pub fn read(input: impl BufRead, path: &Path) -> Result<Trace, TraceError> {
    let mut header = Header { page_size_bytes: 0, source: String::new() };
    let (mut version_seen, mut page_size_seen) = (false, false);
    let mut records = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|source| TraceError::Io { path: path.to_path_buf(), source })?;
        let bad =
            |what: String| TraceError::Corrupted { path: path.to_path_buf(), what, at: format!("line {}", i + 1) };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let comment = line.strip_prefix('#').map(str::trim);
        if !version_seen {
            // 1. The first line that is not blank says what the file is.
            let Some(v) = comment.and_then(|c| c.strip_prefix("tierdb-trace")) else {
                return Err(bad(format!(
                    "no `# tierdb-trace 1` header: a text trace opens with it, then `# page_size N`; \
                     found {:?} (a block trace needs --format arc, msr or pg-usdt)",
                    clip(line)
                )));
            };
            if v.trim() != "1" {
                return Err(TraceError::Version {
                    path: path.to_path_buf(),
                    found: v.trim().parse().unwrap_or(u16::MAX),
                    supported: 1,
                });
            }
            version_seen = true;
            continue;
        }
        if let Some(c) = comment {
            // 2. Header fields and comments.
            if let Some(v) = c.strip_prefix("page_size ") {
                header.page_size_bytes = v.trim().parse().map_err(|_| bad(format!("bad page size {v:?}")))?;
                if header.page_size_bytes == 0 {
                    return Err(bad("page size 0 (a page holds at least one byte)".into()));
                }
                page_size_seen = true;
            } else if let Some(v) = c.strip_prefix("source ") {
                header.source = v.to_string();
            }
            continue;
        }
        // 3. A record, once the header has given the page size.
        if !page_size_seen {
            return Err(bad("a record before `# page_size N`: the header must give the page size".into()));
        }
        records.push(parse_record(line).map_err(bad)?);
    }
    if !version_seen {
        return Err(TraceError::Empty { path: path.to_path_buf(), what: "only blank lines".into() });
    }
    if !page_size_seen {
        return Err(TraceError::Corrupted {
            path: path.to_path_buf(),
            what: "no `# page_size N` line in the header".into(),
            at: "the header".into(),
        });
    }
    Ok(Trace { header, records })
}

/// The start of a line, for messages.
fn clip(line: &str) -> String {
    line.chars().take(40).collect()
}

/// Parses one record line (not blank, not a comment).
fn parse_record(line: &str) -> Result<Record, String> {
    let mut words = line.split_ascii_whitespace();
    let letter = words.next().unwrap_or_default();
    let op = match letter {
        "R" => Op::Read,
        "W" => Op::Write,
        "r" => Op::ReadLines,
        "w" => Op::WriteLines,
        "A" => Op::Alloc,
        "F" => Op::Free,
        "M" => Op::Marker,
        other => return Err(format!("unknown op {other:?} (R, W, r, w, A, F or M)")),
    };
    let arg = words.next().ok_or("missing page id")?;
    let page = if op == Op::Marker {
        match Marker::from_name(arg) {
            Some(m) => m.code(),
            None => arg.parse().map_err(|_| format!("unknown marker {arg:?}"))?,
        }
    } else {
        arg.parse().map_err(|_| format!("bad page id {arg:?}"))?
    };
    let mut r = Record { op, page, lsn: None, thread: None, time_ns: None };
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("expected key=value, got {w:?}"))?;
        let n: u64 = v.parse().map_err(|_| format!("bad number in {w:?}"))?;
        match k {
            "lsn" => r.lsn = Some(n),
            "thread" => r.thread = Some(u32::try_from(n).map_err(|_| format!("thread {n} out of range"))?),
            "time" => r.time_ns = Some(n),
            _ => return Err(format!("unknown field {k:?} (lsn, thread, time)")),
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_errors_name_the_line() {
        let t = Trace {
            header: Header { page_size_bytes: 4096, source: "hand".into() },
            records: vec![
                Record::marker(Marker::Warmup),
                Record::access(Op::Read, 5),
                Record { op: Op::Write, page: 6, lsn: Some(9), thread: Some(1), time_ns: Some(77) },
                Record::access(Op::Alloc, 7),
                Record::access(Op::Free, 7),
                Record::access(Op::ReadLines, 8),
                Record::access(Op::WriteLines, 8),
            ],
        };
        let mut buf = Vec::new();
        write(&t, &mut buf).unwrap();
        let back = read(&buf[..], Path::new("t.txt")).unwrap();
        assert_eq!(back.header, t.header);
        assert_eq!(back.records, t.records);
        let e = read(&b"# tierdb-trace 1\n# page_size 4096\nR 1\nX 2\n"[..], Path::new("t.txt")).unwrap_err();
        assert!(e.to_string().contains("line 4"), "{e}");
        let e = read(&b"# tierdb-trace 1\n# page_size 4096\nR 1 lsn=x\n"[..], Path::new("t.txt")).unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    #[test]
    fn a_text_trace_needs_its_header_and_a_page_size_above_zero() {
        let err = |text: &str| read(text.as_bytes(), Path::new("t.txt")).unwrap_err().to_string();
        let e = err("R 1\nR 2\n");
        assert!(e.contains("t.txt") && e.contains("line 1") && e.contains("# tierdb-trace 1"), "{e}");
        let e = err("\n# a comment\nR 1\n");
        assert!(e.contains("line 2") && e.contains("# tierdb-trace 1"), "{e}");
        let e = err("# tierdb-trace 1\nR 1\n");
        assert!(e.contains("line 2") && e.contains("# page_size N"), "{e}");
        let e = err("# tierdb-trace 1\n# page_size 0\nR 1\n");
        assert!(e.contains("line 2") && e.contains("page size 0"), "{e}");
        let e = err("# tierdb-trace 1\n# source only\n");
        assert!(e.contains("no `# page_size N`"), "{e}");
        let e = err("# tierdb-trace 2\n# page_size 4096\nR 1\n");
        assert!(e.contains("version 2"), "{e}");
        assert!(matches!(read(&b"\n  \n"[..], Path::new("t.txt")), Err(TraceError::Empty { .. })));
        // The header alone is a trace of no records; `trace::load` refuses it.
        let t = read(&b"# tierdb-trace 1\n# page_size 4096\n"[..], Path::new("t.txt")).unwrap();
        assert!(t.records.is_empty());
    }
}
