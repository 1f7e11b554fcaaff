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
//! Lines starting with `#` are comments; the three header comments are optional (page
//! size defaults to 16 KiB). Blank lines are skipped.

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
/// `Io`; `Corrupted` naming the line of the first one that does not parse.
pub fn read(input: impl BufRead, path: &Path) -> Result<Trace, TraceError> {
    let mut header = Header { page_size_bytes: tierdb::limits::PAGE_SIZE_DEFAULT_BYTES as u32, source: String::new() };
    let mut records = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|source| TraceError::Io { path: path.to_path_buf(), source })?;
        let bad =
            |what: String| TraceError::Corrupted { path: path.to_path_buf(), what, at: format!("line {}", i + 1) };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if let Some(v) = c.strip_prefix("page_size ") {
                header.page_size_bytes = v.trim().parse().map_err(|_| bad(format!("bad page size {v:?}")))?;
            } else if let Some(v) = c.strip_prefix("source ") {
                header.source = v.to_string();
            } else if let Some(v) = c.strip_prefix("tierdb-trace ")
                && v.trim() != "1"
            {
                return Err(TraceError::Version {
                    path: path.to_path_buf(),
                    found: v.trim().parse().unwrap_or(u16::MAX),
                    supported: 1,
                });
            }
            continue;
        }
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
            other => return Err(bad(format!("unknown op {other:?} (R, W, r, w, A, F or M)"))),
        };
        let arg = words.next().ok_or_else(|| bad("missing page id".into()))?;
        let page = if op == Op::Marker {
            match Marker::from_name(arg) {
                Some(m) => m.code(),
                None => arg.parse().map_err(|_| bad(format!("unknown marker {arg:?}")))?,
            }
        } else {
            arg.parse().map_err(|_| bad(format!("bad page id {arg:?}")))?
        };
        let mut r = Record { op, page, lsn: None, thread: None, time_ns: None };
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| bad(format!("expected key=value, got {w:?}")))?;
            let n: u64 = v.parse().map_err(|_| bad(format!("bad number in {w:?}")))?;
            match k {
                "lsn" => r.lsn = Some(n),
                "thread" => r.thread = Some(u32::try_from(n).map_err(|_| bad(format!("thread {n} out of range")))?),
                "time" => r.time_ns = Some(n),
                _ => return Err(bad(format!("unknown field {k:?} (lsn, thread, time)"))),
            }
        }
        records.push(r);
    }
    Ok(Trace { header, records })
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
        let e = read(&b"R 1\nX 2\n"[..], Path::new("t.txt")).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = read(&b"R 1 lsn=x\n"[..], Path::new("t.txt")).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
