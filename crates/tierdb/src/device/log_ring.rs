//! The log buffer in NVM: a ring of log-stream bytes with a persistent header.
//!
//! ```text
//!   0     header, one cache line: magic "TDBLOGNV", version u32, reserved u32,
//!         ring bytes u64, flushed LSN u64 (every byte below it is in the log file),
//!         .. CRC-32C of bytes 0..60 at 60
//!   4096  the ring: stream byte at LSN x lies at 4096 + x mod ring bytes
//! ```
//!
//! A record appended here is durable once its lines are persisted: a commit needs no
//! log force. The ring holds the stream from the flushed LSN to the appended end; a
//! flusher copies that part to the log file, syncs it and then moves the flushed LSN
//! on (persisting the header), which frees ring space. Records name their own LSN, so
//! after a crash the bytes past the last record are recognised as stale.
//!
//! Only a new log makes a ring ([`NvmRing::format`], [`NvmRing::open_or_format`]): the
//! ring of an existing log may hold the last acknowledged records and nowhere else, so
//! [`NvmRing::open`] refuses one whose header is missing, zeroed or damaged, naming
//! the file; the WAL decides whether the log file provably holds everything instead.

#![allow(unsafe_code)]

use super::{DeviceError, NvmRegion};
use crate::ids::Lsn;
use crate::limits::{CACHE_LINE_BYTES, IO_ALIGN_BYTES};

const MAGIC: &[u8; 8] = b"TDBLOGNV";
const VERSION: u32 = 1;
const DATA_OFFSET: u64 = IO_ALIGN_BYTES as u64;
const OFF_FLUSHED: usize = 24;
/// The smallest ring.
const RING_BYTES_MIN: u64 = 64 * 1024;

/// The ring over an NVM region.
pub struct NvmRing {
    region: NvmRegion,
    capacity: u64,
}

impl std::fmt::Debug for NvmRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmRing").field("path", &self.region.info().path).field("capacity", &self.capacity).finish()
    }
}

fn corrupted(region: &NvmRegion, detail: String) -> DeviceError {
    DeviceError::Corrupted { what: "NVM log buffer", location: region.info().path.display().to_string(), detail }
}

impl NvmRing {
    /// Opens the ring of an existing log in `region` and checks its header. Never
    /// formats: a ring without its header may have held the last acknowledged records
    /// (only a new log may make one, [`format`](Self::format)).
    ///
    /// # Errors
    /// `Config` for a region too small for a ring; `Corrupted` (naming the file) for a
    /// header that is all zeros, lacks the magic, fails its CRC or has another version
    /// or ring size; device errors.
    pub fn open(region: NvmRegion) -> Result<NvmRing, DeviceError> {
        let ring = Self::over(region)?;
        let mut h = [0u8; CACHE_LINE_BYTES];
        ring.region.read_lines(0, &mut h)?;
        if &h[0..8] != MAGIC {
            let detail = if h.iter().all(|&b| b == 0) {
                "the header is all zeros (never written, or wiped)".to_string()
            } else {
                format!("no ring magic (found \"{}\")", h[0..8].escape_ascii())
            };
            return Err(corrupted(&ring.region, detail));
        }
        let crc = u32::from_le_bytes(h[60..64].try_into().expect("4 bytes"));
        if crc != crc32c::crc32c(&h[..60]) {
            return Err(corrupted(&ring.region, "header CRC mismatch".into()));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        let cap = u64::from_le_bytes(h[16..24].try_into().expect("8 bytes"));
        if version != VERSION || cap != ring.capacity {
            return Err(corrupted(
                &ring.region,
                format!(
                    "version {version} ring of {cap} bytes; this region and build make version {VERSION} of {}",
                    ring.capacity
                ),
            ));
        }
        Ok(ring)
    }

    /// Makes a new, empty ring in `region` whose flushed LSN is `start` (every byte
    /// below it is in the log file), whatever the region held.
    ///
    /// # Errors
    /// `Config` for a region too small for a ring; device errors.
    pub fn format(region: NvmRegion, start: Lsn) -> Result<NvmRing, DeviceError> {
        let ring = Self::over(region)?;
        ring.write_header(start)?;
        Ok(ring)
    }

    /// Opens the ring of a new log: formats it (flushed LSN = `start`) if the region
    /// holds no ring header, else as [`open`](Self::open). Only for a log that holds no
    /// acknowledged record yet (a database being created, a log used alone).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_or_format(region: NvmRegion, start: Lsn) -> Result<NvmRing, DeviceError> {
        let mut magic = [0u8; CACHE_LINE_BYTES];
        region.read_lines(0, &mut magic)?;
        if &magic[0..8] == MAGIC { Self::open(region) } else { Self::format(region, start) }
    }

    /// The ring over `region`, its header not read.
    fn over(region: NvmRegion) -> Result<NvmRing, DeviceError> {
        let size = region.size_bytes();
        if size < DATA_OFFSET + RING_BYTES_MIN {
            return Err(DeviceError::Config {
                device: "NVM log buffer",
                what: format!(
                    "a region of {size} bytes: the ring needs at least {} bytes",
                    DATA_OFFSET + RING_BYTES_MIN
                ),
            });
        }
        let capacity = (size - DATA_OFFSET) / CACHE_LINE_BYTES as u64 * CACHE_LINE_BYTES as u64;
        Ok(NvmRing { region, capacity })
    }

    fn write_header(&self, flushed: Lsn) -> Result<(), DeviceError> {
        let mut h = [0u8; CACHE_LINE_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&self.capacity.to_le_bytes());
        h[OFF_FLUSHED..OFF_FLUSHED + 8].copy_from_slice(&flushed.to_le_bytes());
        let crc = crc32c::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        // SAFETY: the header line is written only by the ring's flusher, under the
        // WAL's flush lock, and read only at open.
        unsafe { self.region.write_lines_shared(0, &h) }?;
        self.region.persist(0, CACHE_LINE_BYTES as u64)
    }

    /// Bytes of stream the ring holds.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The flushed LSN in the header.
    ///
    /// # Errors
    /// Device errors.
    pub fn flushed(&self) -> Result<Lsn, DeviceError> {
        let mut h = [0u8; CACHE_LINE_BYTES];
        self.region.read_lines(0, &mut h)?;
        Ok(Lsn::from_le_bytes(h[OFF_FLUSHED..OFF_FLUSHED + 8].try_into().expect("8 bytes")))
    }

    /// Records durably that every byte below `lsn` is in the log file.
    ///
    /// # Errors
    /// Device errors.
    pub fn set_flushed(&self, lsn: Lsn) -> Result<(), DeviceError> {
        self.write_header(lsn)
    }

    /// The ring's pieces holding stream bytes `at..at + len`: one or two `(region
    /// offset, length)` (two where they wrap).
    fn pieces(&self, at: Lsn, len: usize) -> [(u64, usize); 2] {
        // Longer than the ring, the second piece would wrap onto the first.
        debug_assert!(len as u64 <= self.capacity, "{len} bytes at LSN {at} in a ring of {}", self.capacity);
        let off = at.get() % self.capacity;
        let first = (len as u64).min(self.capacity - off) as usize;
        [(DATA_OFFSET + off, first), (DATA_OFFSET, len - first)]
    }

    /// Writes stream bytes at LSN `at` and persists them. The caller appends in order,
    /// one at a time (the WAL's tail lock), and never past `flushed + capacity`.
    ///
    /// # Errors
    /// Device errors.
    pub fn write(&self, at: Lsn, bytes: &[u8]) -> Result<(), DeviceError> {
        let mut done = 0;
        for (off, len) in self.pieces(at, bytes.len()) {
            if len == 0 {
                continue;
            }
            // SAFETY: ring bytes between the flushed LSN and the appended end belong to
            // the appender holding the WAL's tail lock; the flusher only reads bytes
            // below the published appended end, which this write does not touch.
            unsafe { self.region.copy_in_shared(off, &bytes[done..done + len]) }?;
            self.region.persist(off, len as u64)?;
            done += len;
        }
        debug_assert_eq!(done, bytes.len(), "ring write at LSN {at}: {done} of {} bytes placed", bytes.len());
        Ok(())
    }

    /// Reads stream bytes at LSN `at` into `buf`.
    ///
    /// # Errors
    /// Device errors.
    pub fn read(&self, at: Lsn, buf: &mut [u8]) -> Result<(), DeviceError> {
        let mut done = 0;
        for (off, len) in self.pieces(at, buf.len()) {
            if len > 0 {
                self.region.copy_out(off, &mut buf[done..done + len])?;
                done += len;
            }
        }
        Ok(())
    }

    /// The NVM region the ring lives in (its counters are the ring's device counters).
    pub fn region(&self) -> &NvmRegion {
        &self.region
    }
}
