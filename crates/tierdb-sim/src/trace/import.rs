//! Conversion of other systems' traces into [`Trace`]s.
//!
//! - **ARC** (`.lis`, the traces of Megiddo & Modha's ARC paper, e.g. OLTP): each line
//!   is `start-block block-count ignored request-number`; every block of the range is
//!   one page read (the blocks are the cache's pages).
//! - **MSR-Cambridge** CSV: `timestamp,host,disk,Read|Write,offset,size,response`, with
//!   the timestamp in Windows file time (100 ns ticks). A request touches the pages
//!   `offset / page size ..= (offset + size − 1) / page size`; the disk number goes in
//!   bits 40 and up of the page id so that disks do not share pages.
//! - **pg-usdt**: the output of the bpftrace script in docs/sim.md, which prints one
//!   line per PostgreSQL `buffer__read__start` (`R`) and `buffer__flush__start` (`W`)
//!   probe: `R|W nsecs backend-pid fork block tablespace database relation`. Each
//!   relation fork gets its own range of page ids (in order of first appearance,
//!   2^32 pages each); a flush means the page was changed, so it is a write.
//!
//! Bad lines are errors that name the line; nothing is skipped silently.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::{Header, ImportOptions, Op, Record, Trace};
use crate::error::TraceError;

/// Pages one imported request may span; a larger one is a corrupt line, not a request.
pub const REQUEST_PAGES_MAX: u64 = 1 << 20;
/// Bit where MSR disk numbers start in a page id.
pub const MSR_DISK_SHIFT: u32 = 40;
/// Bit where pg-usdt relation numbers start in a page id.
pub const PG_RELATION_SHIFT: u32 = 32;

fn lines(r: impl Read, path: &Path, mut f: impl FnMut(&str, usize) -> Result<(), String>) -> Result<(), TraceError> {
    let mut r = BufReader::with_capacity(1 << 20, r);
    let mut line = String::new();
    let mut n = 0usize;
    loop {
        line.clear();
        let got = r.read_line(&mut line).map_err(|source| TraceError::Io { path: path.to_path_buf(), source })?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        f(l, n).map_err(|what| TraceError::Corrupted { path: path.to_path_buf(), what, at: format!("line {n}") })?;
    }
}

fn num(s: Option<&str>, what: &str) -> Result<u64, String> {
    let s = s.ok_or_else(|| format!("missing {what}"))?.trim();
    s.parse().map_err(|_| format!("bad {what} {s:?}"))
}

fn source(kind: &str, path: &Path) -> String {
    format!("import {kind} {}", path.display())
}

/// Imports an ARC-paper `.lis` trace.
///
/// # Errors
/// `Io`; `Corrupted` naming the first bad line.
pub fn arc(r: impl Read, path: &Path, opts: ImportOptions) -> Result<Trace, TraceError> {
    let mut records = Vec::new();
    lines(r, path, |l, _| {
        let mut w = l.split_ascii_whitespace();
        let start = num(w.next(), "start block")?;
        let count = num(w.next(), "block count")?;
        if count == 0 || count > REQUEST_PAGES_MAX {
            return Err(format!("block count {count} out of 1..={REQUEST_PAGES_MAX}"));
        }
        let end = start.checked_add(count).ok_or("block range overflows")?;
        records.extend((start..end).map(|p| Record::access(Op::Read, p)));
        Ok(())
    })?;
    Ok(Trace { header: Header { page_size_bytes: opts.page_size_bytes, source: source("arc", path) }, records })
}

/// Imports an MSR-Cambridge CSV trace.
///
/// # Errors
/// `Io`; `Corrupted` naming the first bad line.
pub fn msr(r: impl Read, path: &Path, opts: ImportOptions) -> Result<Trace, TraceError> {
    let ps = u64::from(opts.page_size_bytes.max(1));
    let mut records = Vec::new();
    let mut t0: Option<u64> = None;
    lines(r, path, |l, _| {
        let mut f = l.split(',');
        let ts = num(f.next(), "timestamp")?;
        let _host = f.next().ok_or("missing host")?;
        let disk = num(f.next(), "disk number")?;
        let op = match f.next().map(str::trim) {
            Some(t) if t.eq_ignore_ascii_case("read") => Op::Read,
            Some(t) if t.eq_ignore_ascii_case("write") => Op::Write,
            other => return Err(format!("bad type {other:?} (Read or Write)")),
        };
        let offset = num(f.next(), "offset")?;
        let size = num(f.next(), "size")?.max(1);
        if disk >= 1 << (64 - MSR_DISK_SHIFT) {
            return Err(format!("disk number {disk} too large"));
        }
        let (first, last) = (offset / ps, (offset + size - 1) / ps);
        if last - first >= REQUEST_PAGES_MAX || last >= 1 << MSR_DISK_SHIFT {
            return Err(format!("request of {size} bytes at {offset} out of range"));
        }
        let t = ts.saturating_sub(*t0.get_or_insert(ts)).saturating_mul(100);
        for p in first..=last {
            let mut r = Record::access(op, (disk << MSR_DISK_SHIFT) | p);
            r.time_ns = Some(t);
            records.push(r);
        }
        Ok(())
    })?;
    Ok(Trace { header: Header { page_size_bytes: opts.page_size_bytes, source: source("msr", path) }, records })
}

/// Imports the output of the pg-usdt bpftrace recipe (docs/sim.md).
///
/// # Errors
/// `Io`; `Corrupted` naming the first bad line.
pub fn pg_usdt(r: impl Read, path: &Path, opts: ImportOptions) -> Result<Trace, TraceError> {
    let mut records = Vec::new();
    let mut relations: HashMap<(u64, u64, u64, u64), u64> = HashMap::new();
    let mut threads: HashMap<u64, u32> = HashMap::new();
    let mut t0: Option<u64> = None;
    lines(r, path, |l, _| {
        // bpftrace prints "Attaching N probes..." first.
        if l.starts_with("Attaching") {
            return Ok(());
        }
        let mut w = l.split_ascii_whitespace();
        let op = match w.next() {
            Some("R") => Op::Read,
            Some("W") => Op::Write,
            other => return Err(format!("bad op {other:?} (R or W)")),
        };
        let ns = num(w.next(), "nsecs")?;
        let backend = num(w.next(), "backend pid")?;
        let fork = num(w.next(), "fork")?;
        let block = num(w.next(), "block")?;
        let spc = num(w.next(), "tablespace")?;
        let db = num(w.next(), "database")?;
        let rel = num(w.next(), "relation")?;
        if block >= 1 << PG_RELATION_SHIFT {
            return Err(format!("block {block} out of range"));
        }
        let next = relations.len() as u64;
        let ri = *relations.entry((spc, db, rel, fork)).or_insert(next);
        let next = threads.len() as u32;
        let thread = *threads.entry(backend).or_insert(next);
        let mut r = Record::access(op, (ri << PG_RELATION_SHIFT) | block);
        r.thread = Some(thread);
        r.time_ns = Some(ns.saturating_sub(*t0.get_or_insert(ns)));
        records.push(r);
        Ok(())
    })?;
    Ok(Trace { header: Header { page_size_bytes: opts.page_size_bytes, source: source("pg-usdt", path) }, records })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_lines_expand_to_blocks() {
        let t = arc(&b"5 1 0 0\n10 3 0 1\n"[..], Path::new("x.lis"), ImportOptions::default()).unwrap();
        let pages: Vec<u64> = t.records.iter().map(|r| r.page).collect();
        assert_eq!(pages, [5, 10, 11, 12]);
        let e = arc(&b"5 1 0 0\n7 x 0 0\n"[..], Path::new("x.lis"), ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn msr_requests_split_into_pages_per_disk() {
        let csv = b"128166372003061629,hm,1,Read,8192,8192,100\n128166372003061639,hm,0,Write,4096,1,5\n";
        let t = msr(&csv[..], Path::new("hm_1.csv"), ImportOptions { page_size_bytes: 4096 }).unwrap();
        let got: Vec<(Op, u64, Option<u64>)> = t.records.iter().map(|r| (r.op, r.page, r.time_ns)).collect();
        let d1 = 1u64 << MSR_DISK_SHIFT;
        assert_eq!(got, [(Op::Read, d1 | 2, Some(0)), (Op::Read, d1 | 3, Some(0)), (Op::Write, 1, Some(1000))]);
        assert!(msr(&b"1,h,0,Erase,0,1,1\n"[..], Path::new("m"), ImportOptions::default()).is_err());
    }

    #[test]
    fn pg_usdt_maps_relations_and_backends() {
        let out = b"Attaching 2 probes...\nR 1000 4242 0 7 1663 5 16384\nR 1500 4243 0 7 1663 5 16390\nW 2000 4242 0 7 1663 5 16384\n";
        let t = pg_usdt(&out[..], Path::new("pg.txt"), ImportOptions { page_size_bytes: 8192 }).unwrap();
        let got: Vec<(Op, u64, Option<u32>, Option<u64>)> =
            t.records.iter().map(|r| (r.op, r.page, r.thread, r.time_ns)).collect();
        let r1 = 1u64 << PG_RELATION_SHIFT;
        assert_eq!(
            got,
            [
                (Op::Read, 7, Some(0), Some(0)),
                (Op::Read, r1 | 7, Some(1), Some(500)),
                (Op::Write, 7, Some(0), Some(1000))
            ]
        );
        assert_eq!(t.header.page_size_bytes, 8192);
    }
}
