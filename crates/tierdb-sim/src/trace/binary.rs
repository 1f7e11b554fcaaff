//! The binary trace format (version 1). Layout, all integers little-endian:
//!
//! ```text
//! header   0  magic     8 B  "TIERTRC\0"
//!          8  version   u16  1
//!         10  flags     u16  0 (reserved)
//!         12  page size u32
//!         16  src len   u16  bytes of the source text (≤ SOURCE_BYTES_MAX)
//!         18  source    UTF-8
//!       18+n  crc32c    u32  of bytes 0 .. 18+n
//! block       count     u32  records in the block (1 ..= BLOCK_RECORDS_MAX); 0 ends
//!             length    u32  payload bytes
//!             crc32c    u32  of the payload
//!             payload        `count` records, or for count 0 the total records (u64)
//! record      tag       u8   bits 0–2 op, bit 3 LSN, bit 4 thread, bit 5 time follow
//!             page      zigzag varint of page − previous page (markers: the code)
//!             lsn       varint          (if bit 3)
//!             thread    varint          (if bit 4)
//!             time      zigzag varint of time − previous time, ns (if bit 5)
//! ```
//!
//! "Previous" page and time restart at 0 in every block, so a block decodes without
//! the ones before it: a reader holds one block at a time (streaming) and a damaged
//! block is reported by number. A trace without its end block is truncated.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{Header, Op, Record};
use crate::error::TraceError;

/// The first eight bytes of every binary trace (a text trace never starts so).
pub const MAGIC: [u8; 8] = *b"TIERTRC\0";
/// The format version this build writes and the only one it reads.
pub const VERSION: u16 = 1;
/// Records per block: bounds a reader's memory and the loss from one damaged block.
pub const BLOCK_RECORDS_MAX: usize = 1 << 16;
/// The longest record: tag + four 10-byte varints.
pub const RECORD_BYTES_MAX: usize = 1 + 4 * 10;
/// The largest block payload a reader accepts: a full block of longest records.
pub const BLOCK_PAYLOAD_BYTES_MAX: usize = BLOCK_RECORDS_MAX * RECORD_BYTES_MAX;
/// The longest source text a header holds, bytes.
pub const SOURCE_BYTES_MAX: usize = 4096;

const _: () = assert!(BLOCK_PAYLOAD_BYTES_MAX < u32::MAX as usize);
const _: () = assert!(SOURCE_BYTES_MAX <= u16::MAX as usize);

const TAG_OP_MASK: u8 = 0b111;
const TAG_LSN: u8 = 1 << 3;
const TAG_THREAD: u8 = 1 << 4;
const TAG_TIME: u8 = 1 << 5;
const TAG_KNOWN: u8 = TAG_OP_MASK | TAG_LSN | TAG_THREAD | TAG_TIME;

/// An encoding error before a path is known; [`WriteError::at`] names the file.
#[derive(Debug)]
pub enum WriteError {
    /// Writing to the output failed.
    Io(std::io::Error),
    /// A header that cannot be written: page size 0 or a source text over
    /// [`SOURCE_BYTES_MAX`].
    Invalid(String),
}

impl WriteError {
    /// The [`TraceError`] to report, naming `path` where an I/O error needs one.
    pub fn at(self, path: &Path) -> TraceError {
        match self {
            WriteError::Io(source) => TraceError::Io { path: path.to_path_buf(), source },
            WriteError::Invalid(what) => TraceError::Invalid { what },
        }
    }
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> WriteError {
        WriteError::Io(e)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes a binary trace, one block at a time.
pub struct Writer<W: Write> {
    out: W,
    payload: Vec<u8>,
    count: usize,
    prev_page: u64,
    prev_time: u64,
    total: u64,
}

impl<W: Write> Writer<W> {
    /// Writes the header.
    ///
    /// # Errors
    /// I/O; `Invalid` for a page size of 0 or a source text over [`SOURCE_BYTES_MAX`].
    pub fn new(mut out: W, header: &Header) -> Result<Writer<W>, WriteError> {
        if header.page_size_bytes == 0 {
            return Err(WriteError::Invalid("page size 0".into()));
        }
        let src = header.source.as_bytes();
        if src.len() > SOURCE_BYTES_MAX {
            return Err(WriteError::Invalid(format!("source text of {} bytes is over {SOURCE_BYTES_MAX}", src.len())));
        }
        let mut h = Vec::with_capacity(22 + src.len());
        h.extend_from_slice(&MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&header.page_size_bytes.to_le_bytes());
        h.extend_from_slice(&(src.len() as u16).to_le_bytes());
        h.extend_from_slice(src);
        let crc = crc32c::crc32c(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&h)?;
        Ok(Writer { out, payload: Vec::with_capacity(1 << 16), count: 0, prev_page: 0, prev_time: 0, total: 0 })
    }

    /// Appends one record.
    ///
    /// # Errors
    /// I/O errors of the block it completes.
    pub fn push(&mut self, r: Record) -> Result<(), WriteError> {
        let mut tag = r.op.code();
        tag |= if r.lsn.is_some() { TAG_LSN } else { 0 };
        tag |= if r.thread.is_some() { TAG_THREAD } else { 0 };
        tag |= if r.time_ns.is_some() { TAG_TIME } else { 0 };
        self.payload.push(tag);
        put_varint(&mut self.payload, zigzag(r.page.wrapping_sub(self.prev_page) as i64));
        self.prev_page = r.page;
        if let Some(lsn) = r.lsn {
            put_varint(&mut self.payload, lsn);
        }
        if let Some(t) = r.thread {
            put_varint(&mut self.payload, u64::from(t));
        }
        if let Some(t) = r.time_ns {
            put_varint(&mut self.payload, zigzag(t.wrapping_sub(self.prev_time) as i64));
            self.prev_time = t;
        }
        self.count += 1;
        if self.count == BLOCK_RECORDS_MAX {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), WriteError> {
        if self.count == 0 {
            return Ok(());
        }
        debug_assert!(self.payload.len() <= BLOCK_PAYLOAD_BYTES_MAX);
        self.write_block(self.count as u32)?;
        self.total += self.count as u64;
        self.count = 0;
        self.prev_page = 0;
        self.prev_time = 0;
        Ok(())
    }

    fn write_block(&mut self, count: u32) -> Result<(), WriteError> {
        let mut head = [0u8; 12];
        head[0..4].copy_from_slice(&count.to_le_bytes());
        head[4..8].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        head[8..12].copy_from_slice(&crc32c::crc32c(&self.payload).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.payload)?;
        self.payload.clear();
        Ok(())
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.total + self.count as u64
    }

    /// Writes the last block and the end block, and flushes.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<W, WriteError> {
        self.flush_block()?;
        self.payload.extend_from_slice(&self.total.to_le_bytes());
        self.write_block(0)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads a binary trace block by block.
pub struct Reader<R: Read> {
    input: R,
    path: PathBuf,
    header: Header,
    block: u64,
    total: u64,
    done: bool,
    buf: Vec<u8>,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    ///
    /// # Errors
    /// `Io`; `Corrupted` for a bad magic or CRC, or a page size of 0; `Version` for
    /// another version.
    pub fn new(mut input: R, path: PathBuf) -> Result<Reader<R>, TraceError> {
        let mut fixed = [0u8; 18];
        read_exact(&mut input, &mut fixed, &path, "the header")?;
        let corrupted =
            |what: &str| TraceError::Corrupted { path: path.clone(), what: what.into(), at: "the header".into() };
        if fixed[0..8] != MAGIC {
            return Err(corrupted("not a tierdb binary trace (bad magic)"));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(TraceError::Version { path, found: version, supported: VERSION });
        }
        let page_size_bytes = u32::from_le_bytes(fixed[12..16].try_into().expect("4 bytes"));
        if page_size_bytes == 0 {
            return Err(corrupted("page size 0"));
        }
        let len = u16::from_le_bytes([fixed[16], fixed[17]]) as usize;
        if len > SOURCE_BYTES_MAX {
            return Err(corrupted("source text longer than the limit"));
        }
        let mut rest = vec![0u8; len + 4];
        read_exact(&mut input, &mut rest, &path, "the header")?;
        let mut all = fixed.to_vec();
        all.extend_from_slice(&rest[..len]);
        let crc = u32::from_le_bytes(rest[len..].try_into().expect("4 bytes"));
        if crc32c::crc32c(&all) != crc {
            return Err(corrupted("header CRC mismatch"));
        }
        let source = String::from_utf8(rest[..len].to_vec()).map_err(|_| corrupted("source text is not UTF-8"))?;
        Ok(Reader {
            input,
            path,
            header: Header { page_size_bytes, source },
            block: 0,
            total: 0,
            done: false,
            buf: Vec::new(),
        })
    }

    /// The header [`Reader::new`] read and checked.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Appends the next block's records to `out`. Returns false at the end block.
    ///
    /// # Errors
    /// `Io` (a file that ends before its end block is `Corrupted`: truncated);
    /// `Corrupted` for a CRC mismatch or a record that does not decode, naming the
    /// block.
    pub fn next_block(&mut self, out: &mut Vec<Record>) -> Result<bool, TraceError> {
        if self.done {
            return Ok(false);
        }
        let at = format!("block {}", self.block);
        let mut head = [0u8; 12];
        read_exact(&mut self.input, &mut head, &self.path, &at)?;
        let count = u32::from_le_bytes(head[0..4].try_into().expect("4")) as usize;
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4")) as usize;
        let crc = u32::from_le_bytes(head[8..12].try_into().expect("4"));
        let corrupted = |what: String| TraceError::Corrupted { path: self.path.clone(), what, at: at.clone() };
        if count > BLOCK_RECORDS_MAX || len > BLOCK_PAYLOAD_BYTES_MAX || (count == 0 && len != 8) {
            return Err(corrupted(format!("impossible block of {count} records in {len} bytes")));
        }
        self.buf.resize(len, 0);
        read_exact(&mut self.input, &mut self.buf, &self.path, &at)?;
        if crc32c::crc32c(&self.buf) != crc {
            return Err(corrupted("block CRC mismatch".into()));
        }
        if count == 0 {
            let n = u64::from_le_bytes(self.buf[..8].try_into().expect("8"));
            if n != self.total {
                return Err(corrupted(format!("the end block counts {n} records, the blocks held {}", self.total)));
            }
            self.done = true;
            return Ok(false);
        }
        let decoded = decode_block(&self.buf, count, out);
        decoded.map_err(|what| TraceError::Corrupted { path: self.path.clone(), what, at })?;
        self.block += 1;
        self.total += count as u64;
        Ok(true)
    }
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], path: &Path, at: &str) -> Result<(), TraceError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            TraceError::Corrupted { path: path.to_path_buf(), what: "truncated (no end block)".into(), at: at.into() }
        } else {
            TraceError::Io { path: path.to_path_buf(), source: e }
        }
    })
}

fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*pos) else { return Err(format!("varint runs past the payload at byte {pos}")) };
        *pos += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(format!("varint longer than 10 bytes at byte {pos}"))
}

fn decode_block(buf: &[u8], count: usize, out: &mut Vec<Record>) -> Result<(), String> {
    let mut pos = 0;
    let (mut page, mut time) = (0u64, 0u64);
    out.reserve(count);
    for i in 0..count {
        let Some(&tag) = buf.get(pos) else { return Err(format!("record {i} of {count} is missing")) };
        pos += 1;
        if tag & !TAG_KNOWN != 0 {
            return Err(format!("record {i}: unknown tag bits {tag:#04x}"));
        }
        let op =
            Op::from_code(tag & TAG_OP_MASK).ok_or_else(|| format!("record {i}: unknown op {}", tag & TAG_OP_MASK))?;
        page = page.wrapping_add(unzigzag(get_varint(buf, &mut pos)?) as u64);
        let lsn = if tag & TAG_LSN != 0 { Some(get_varint(buf, &mut pos)?) } else { None };
        let thread = if tag & TAG_THREAD != 0 {
            let t = get_varint(buf, &mut pos)?;
            Some(u32::try_from(t).map_err(|_| format!("record {i}: thread {t} out of range"))?)
        } else {
            None
        };
        let time_ns = if tag & TAG_TIME != 0 {
            time = time.wrapping_add(unzigzag(get_varint(buf, &mut pos)?) as u64);
            Some(time)
        } else {
            None
        };
        out.push(Record { op, page, lsn, thread, time_ns });
    }
    if pos != buf.len() {
        return Err(format!("{} bytes after the last record", buf.len() - pos));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Marker;

    fn sample(n: usize) -> Vec<Record> {
        let mut v = vec![Record::marker(Marker::Measure)];
        let mut x = 12345u64;
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = Op::from_code((x >> 60) as u8 % 4).unwrap();
            let mut r = Record::access(op, x >> 20);
            if i % 3 == 0 {
                r.lsn = Some(x >> 7);
            }
            if i % 5 == 0 {
                r.thread = Some((i % 7) as u32);
            }
            if i % 2 == 0 {
                r.time_ns = Some(i as u64 * 1000 + (x >> 58));
            }
            v.push(r);
        }
        v
    }

    fn encode(records: &[Record]) -> Vec<u8> {
        let h = Header { page_size_bytes: 16384, source: "unit test ✓".into() };
        let mut w = Writer::new(Vec::new(), &h).unwrap();
        for r in records {
            w.push(*r).unwrap();
        }
        w.finish().unwrap()
    }

    fn decode(bytes: &[u8]) -> Result<(Header, Vec<Record>), TraceError> {
        let mut r = Reader::new(bytes, PathBuf::from("mem"))?;
        let mut out = Vec::new();
        while r.next_block(&mut out)? {}
        Ok((r.header().clone(), out))
    }

    #[test]
    fn round_trips_across_blocks() {
        let recs = sample(BLOCK_RECORDS_MAX * 2 + 17);
        let (h, back) = decode(&encode(&recs)).unwrap();
        assert_eq!(h.page_size_bytes, 16384);
        assert_eq!(h.source, "unit test ✓");
        assert_eq!(back, recs);
    }

    #[test]
    fn empty_trace_round_trips() {
        let (_, back) = decode(&encode(&[])).unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_an_error_never_a_panic() {
        let bytes = encode(&sample(300));
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert!(decode(&b).is_err(), "flipped byte {i} went unnoticed");
        }
        for cut in 0..bytes.len() {
            let e = decode(&bytes[..cut]).unwrap_err();
            assert!(matches!(e, TraceError::Corrupted { .. }), "cut at {cut}: {e}");
        }
    }

    #[test]
    fn a_page_size_of_zero_is_neither_written_nor_read() {
        let h = Header { page_size_bytes: 0, source: String::new() };
        assert!(matches!(Writer::new(Vec::new(), &h), Err(WriteError::Invalid(_))));
        // A header that says 0 under a valid CRC.
        let mut b = encode(&sample(3));
        b[12..16].fill(0);
        let crc_at = 18 + u16::from_le_bytes([b[16], b[17]]) as usize;
        let crc = crc32c::crc32c(&b[..crc_at]);
        b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let e = decode(&b).unwrap_err();
        assert!(e.to_string().contains("page size 0") && e.to_string().contains("the header"), "{e}");
    }

    #[test]
    fn another_version_is_named() {
        let mut b = encode(&sample(3));
        b[8] = 9;
        assert!(matches!(decode(&b), Err(TraceError::Version { found: 9, .. })));
    }
}
