//! Page-access traces: what the simulator replays.
//!
//! A trace is a header (page size, where it came from) and a sequence of [`Record`]s:
//! a page read or written (optionally with the LSN the write produced, the thread and a
//! time stamp), a page allocated or freed, or a [`Marker`] that splits the trace into
//! phases (the engine's bulk load, warm-up and measured run).
//!
//! Two encodings hold the same information (docs/sim.md has the byte layout):
//! - [`binary`]: versioned, one CRC-32C per block of records, streamable (each block
//!   decodes on its own), with a trailer that counts the records so that truncation is
//!   caught;
//! - [`text`]: one record per line, for small hand-written traces and for reading.
//!
//! Block I/O traces of other systems are converted by [`import`]. [`load`] reads any of
//! them, decompressing zstd on the fly, into a [`Trace`] held in memory.

pub mod binary;
pub mod import;
pub mod text;

use std::io::{BufReader, Read};
use std::path::Path;

use crate::error::TraceError;

/// The magic bytes that open a zstd frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// What a record does to its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A whole-page read (the engine's optimistic or shared fix).
    Read,
    /// A whole-page write (the engine's exclusive fix).
    Write,
    /// The page was allocated (it needs a frame, not a read).
    Alloc,
    /// The page was freed.
    Free,
    /// Not a page access: a [`Marker`] whose code is in the record's `page` field.
    Marker,
    /// A line-grained read (the engine's B+-tree leaf access): a policy may serve it in
    /// place on NVM ([`tierdb::policy::NvmAccess::InPlace`]).
    ReadLines,
    /// A line-grained write, likewise.
    WriteLines,
}

impl Op {
    /// Every op in code order: `ALL[c]` has code `c`.
    pub const ALL: [Op; 7] = [Op::Read, Op::Write, Op::Alloc, Op::Free, Op::Marker, Op::ReadLines, Op::WriteLines];

    /// The op's code (0..=6) in binary records and packed records: three bits.
    pub fn code(self) -> u8 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Alloc => 2,
            Op::Free => 3,
            Op::Marker => 4,
            Op::ReadLines => 5,
            Op::WriteLines => 6,
        }
    }

    /// The op of code `c`; `None` for 7 and up.
    pub fn from_code(c: u8) -> Option<Op> {
        Op::ALL.get(c as usize).copied()
    }

    /// The letter of the text form.
    pub fn letter(self) -> char {
        ['R', 'W', 'A', 'F', 'M', 'r', 'w'][self.code() as usize]
    }

    /// A page read or write, whole or line-grained.
    pub fn is_access(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::ReadLines | Op::WriteLines)
    }

    /// A page write, whole or line-grained.
    pub fn is_write(self) -> bool {
        matches!(self, Op::Write | Op::WriteLines)
    }
}

/// Phase boundaries the engine writes into the traces it records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Marker {
    /// Evicted pages fill free NVM frames from here on (the engine's bulk load).
    BulkLoadOn,
    /// The bulk load is over: evictions go where the policy says again, and dirty DRAM
    /// pages are copied into free NVM frames.
    BulkLoadOff,
    /// The workload's warm-up begins.
    Warmup,
    /// The measured run begins: the simulator counts from here.
    Measure,
}

impl Marker {
    /// Every marker in code order.
    pub const ALL: [Marker; 4] = [Marker::BulkLoadOn, Marker::BulkLoadOff, Marker::Warmup, Marker::Measure];

    /// The code a marker record holds in its `page` field (1..=4).
    pub fn code(self) -> u64 {
        match self {
            Marker::BulkLoadOn => 1,
            Marker::BulkLoadOff => 2,
            Marker::Warmup => 3,
            Marker::Measure => 4,
        }
    }

    /// The marker of code `c`; `None` for an unknown code.
    pub fn from_code(c: u64) -> Option<Marker> {
        Marker::ALL.into_iter().find(|m| m.code() == c)
    }

    /// The marker's name in text traces and in the engine's recorder calls.
    pub fn name(self) -> &'static str {
        match self {
            Marker::BulkLoadOn => "bulk-load-on",
            Marker::BulkLoadOff => "bulk-load-off",
            Marker::Warmup => "warmup",
            Marker::Measure => "measure",
        }
    }

    /// The marker named `s`; `None` for any other name (the recorder drops those).
    pub fn from_name(s: &str) -> Option<Marker> {
        Marker::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// One trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// What the record does to its page.
    pub op: Op,
    /// The page id; for [`Op::Marker`] the marker's code.
    pub page: u64,
    /// The LSN of the change (writes), if recorded.
    pub lsn: Option<u64>,
    /// The thread that made the access, numbered 0, 1, … in order of first
    /// appearance, if recorded.
    pub thread: Option<u32>,
    /// Nanoseconds since the trace began, if recorded.
    pub time_ns: Option<u64>,
}

impl Record {
    /// A record of `op` on `page` with no LSN, thread or time. `op` is not
    /// [`Op::Marker`] (checked in debug builds); use [`Record::marker`] for those.
    pub fn access(op: Op, page: u64) -> Record {
        debug_assert!(op != Op::Marker);
        Record { op, page, lsn: None, thread: None, time_ns: None }
    }

    /// A record of marker `m`, its code in `page`.
    pub fn marker(m: Marker) -> Record {
        Record { op: Op::Marker, page: m.code(), lsn: None, thread: None, time_ns: None }
    }
}

/// A trace's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Bytes per page; never 0 in a trace read or written.
    pub page_size_bytes: u32,
    /// Free text: the command or file the trace came from.
    pub source: String,
}

/// A trace held in memory.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Page size and origin.
    pub header: Header,
    /// The records in trace order.
    pub records: Vec<Record>,
}

impl Trace {
    /// Page accesses (reads and writes), markers and allocation not counted.
    pub fn accesses(&self) -> usize {
        self.records.iter().filter(|r| r.op.is_access()).count()
    }
}

/// The formats [`load`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// tierdb's own, binary or text (told apart by the magic).
    Tierdb,
    /// The ARC paper's traces (`.lis`): start block, block count, ignored, request.
    Arc,
    /// MSR-Cambridge block I/O CSV: timestamp, host, disk, Read/Write, offset, size,
    /// response time.
    Msr,
    /// bpftrace output of the PostgreSQL recipe in docs/sim.md.
    PgUsdt,
}

impl Format {
    /// The names of the formats, as [`Format::name`] gives them.
    pub const NAMES: &[&str] = &["tierdb", "arc", "msr", "pg-usdt"];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tierdb => "tierdb",
            Format::Arc => "arc",
            Format::Msr => "msr",
            Format::PgUsdt => "pg-usdt",
        }
    }

    /// The format named `s` (`lis` also names [`Format::Arc`]); `None` for others.
    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "tierdb" => Some(Format::Tierdb),
            "arc" | "lis" => Some(Format::Arc),
            "msr" => Some(Format::Msr),
            "pg-usdt" => Some(Format::PgUsdt),
            _ => None,
        }
    }
}

/// Options of block-trace import: the page size blocks are grouped into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Bytes per page of the trace made (MSR offsets are in bytes, ARC blocks are pages).
    pub page_size_bytes: u32,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions { page_size_bytes: tierdb::limits::PAGE_SIZE_DEFAULT_BYTES as u32 }
    }
}

/// Opens `path` for reading, decompressing it if it is zstd.
///
/// # Errors
/// `Io` if it cannot be opened; `Corrupted` if the zstd frame header is bad.
pub fn open(path: &Path) -> Result<Box<dyn Read>, TraceError> {
    let io = |source| TraceError::Io { path: path.to_path_buf(), source };
    let mut f = BufReader::with_capacity(1 << 20, std::fs::File::open(path).map_err(io)?);
    let head = std::io::BufRead::fill_buf(&mut f).map_err(io)?;
    if head.starts_with(&ZSTD_MAGIC) {
        let d = ruzstd::decoding::StreamingDecoder::new(f).map_err(|e| TraceError::Corrupted {
            path: path.to_path_buf(),
            what: format!("zstd: {e}"),
            at: "byte 0".into(),
        })?;
        Ok(Box::new(BufReader::with_capacity(1 << 20, d)))
    } else {
        Ok(Box::new(f))
    }
}

/// Reads a whole trace of `format` from `path` (zstd-compressed or not).
///
/// A trace must hold at least one record: an empty file, a text trace that is only its
/// header, or a block trace without a request line is [`TraceError::Empty`], never a
/// trace of zero accesses.
///
/// # Errors
/// I/O errors and undecodable content, naming the file and where; `Empty`; `Invalid`
/// for an import page size of 0.
pub fn load(path: &Path, format: Format, opts: ImportOptions) -> Result<Trace, TraceError> {
    let mut records = Vec::new();
    let header = for_each_chunk(path, format, opts, |_, chunk| {
        records.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(Trace { header, records })
}

/// Records a chunk holds at most when [`for_each_chunk`] splits a trace it had to read
/// whole (text and imported traces).
pub const CHUNK_RECORDS_MAX: usize = 1 << 16;

/// Reads the trace of `format` at `path` in order, handing `f` its records a chunk at
/// a time, and returns its header. A binary tierdb trace (zstd-compressed or not) is
/// streamed block by block, so memory does not grow with its length; text and
/// imported traces are parsed whole first (convert them with `tierdb trace import` to
/// stream them). Refuses what [`load`] refuses, with the same errors; `f`'s error
/// stops the reading and is returned.
///
/// # Errors
/// As [`load`], and `f`'s.
pub fn for_each_chunk(
    path: &Path,
    format: Format,
    opts: ImportOptions,
    mut f: impl FnMut(&Header, &[Record]) -> Result<(), TraceError>,
) -> Result<Header, TraceError> {
    let p = path.to_path_buf();
    if format != Format::Tierdb && opts.page_size_bytes == 0 {
        return Err(TraceError::Invalid { what: format!("{}: page size 0 for an imported trace", path.display()) });
    }
    let mut r = BufReader::new(open(path)?);
    let head = std::io::BufRead::fill_buf(&mut r).map_err(|source| TraceError::Io { path: p.clone(), source })?;
    if head.is_empty() {
        let raw_empty = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let what = if raw_empty { "the file is empty (0 bytes)" } else { "the file decompresses to nothing" };
        return Err(TraceError::Empty { path: p, what: what.into() });
    }
    let mut records = 0u64;
    let header = if format == Format::Tierdb && head.starts_with(&binary::MAGIC) {
        let mut reader = binary::Reader::new(r, p)?;
        let header = reader.header().clone();
        let mut chunk = Vec::new();
        loop {
            chunk.clear();
            if !reader.next_block(&mut chunk)? {
                break;
            }
            records += chunk.len() as u64;
            f(&header, &chunk)?;
        }
        header
    } else {
        let t = match format {
            Format::Tierdb => text::read(r, &p)?,
            Format::Arc => import::arc(r, &p, opts)?,
            Format::Msr => import::msr(r, &p, opts)?,
            Format::PgUsdt => import::pg_usdt(r, &p, opts)?,
        };
        records = t.records.len() as u64;
        if records > 0 {
            for chunk in t.records.chunks(CHUNK_RECORDS_MAX) {
                f(&t.header, chunk)?;
            }
        }
        t.header
    };
    if records == 0 {
        let what = match format {
            Format::Tierdb => "a header and no records".to_string(),
            _ => format!("no request lines for --format {}", format.name()),
        };
        return Err(TraceError::Empty { path: path.to_path_buf(), what });
    }
    Ok(header)
}

/// Writes `trace` to `path`: text if the name ends in `.txt`, else binary.
///
/// # Errors
/// I/O errors; `Invalid` for a header that cannot be written.
pub fn save(trace: &Trace, path: &Path) -> Result<(), TraceError> {
    let io = |source| TraceError::Io { path: path.to_path_buf(), source };
    let f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    if path.extension().is_some_and(|e| e == "txt") {
        text::write(trace, f).map_err(io)
    } else {
        let mut w = binary::Writer::new(f, &trace.header).map_err(|e| e.at(path))?;
        for r in &trace.records {
            w.push(*r).map_err(|e| e.at(path))?;
        }
        w.finish().map_err(|e| e.at(path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zstd frame of no bytes (what `zstd` makes of an empty file).
    const ZSTD_OF_NOTHING: [u8; 13] = [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00, 0x99, 0xe9, 0xd8, 0x51];

    fn load_bytes(bytes: &[u8], format: Format) -> Result<Trace, TraceError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, bytes).unwrap();
        load(&path, format, ImportOptions::default())
    }

    #[test]
    fn an_empty_file_is_no_trace_in_any_format() {
        for name in Format::NAMES {
            let f = Format::from_name(name).unwrap();
            assert_eq!(f.name(), *name);
            for bytes in [&b""[..], &ZSTD_OF_NOTHING[..]] {
                let e = load_bytes(bytes, f).unwrap_err();
                assert!(matches!(e, TraceError::Empty { .. }), "{name}: {e}");
                assert!(e.to_string().contains("empty trace"), "{e}");
            }
        }
        let e = load_bytes(b"", Format::Arc).unwrap_err();
        assert!(e.to_string().contains("0 bytes"), "{e}");
        let e = load_bytes(&ZSTD_OF_NOTHING, Format::Msr).unwrap_err();
        assert!(e.to_string().contains("decompresses to nothing"), "{e}");
    }

    #[test]
    fn a_file_without_records_is_no_trace() {
        let e = load_bytes(b"# tierdb-trace 1\n# page_size 4096\n", Format::Tierdb).unwrap_err();
        assert!(e.to_string().contains("no records"), "{e}");
        let mut binary = Vec::new();
        let h = Header { page_size_bytes: 4096, source: String::new() };
        binary::Writer::new(&mut binary, &h).unwrap().finish().unwrap();
        let e = load_bytes(&binary, Format::Tierdb).unwrap_err();
        assert!(e.to_string().contains("no records"), "{e}");
        for (text, name) in [("# only a comment\n\n", "arc"), ("\n", "msr"), ("Attaching 2 probes...\n", "pg-usdt")] {
            let e = load_bytes(text.as_bytes(), Format::from_name(name).unwrap()).unwrap_err();
            assert!(e.to_string().contains(&format!("no request lines for --format {name}")), "{e}");
        }
        let e = load_bytes(b"  \n\n", Format::Tierdb).unwrap_err();
        assert!(matches!(e, TraceError::Empty { .. }), "{e}");
    }

    #[test]
    fn an_import_page_size_of_zero_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lis");
        std::fs::write(&path, "5 1 0 0\n").unwrap();
        let e = load(&path, Format::Arc, ImportOptions { page_size_bytes: 0 }).unwrap_err();
        assert!(e.to_string().contains("page size 0"), "{e}");
    }
}
