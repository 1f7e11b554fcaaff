//! The double-write area (DWA) of the SSD page file: a file next to it
//! (`<page file>.dwa`) where each batch of page writes is made durable before any of its
//! pages is written in place. A page torn by a crash in the middle of its in-place write
//! is restored from its copy when the page file is opened again.
//!
//! No write larger than a sector is atomic on SSD (`docs/format.md`), and the WAL's
//! redo applies logical changes to a page, which needs the page intact: a torn page can
//! be detected by its seal ([`super::page_seal`]) but not repaired from the log. The DWA
//! repairs it.
//!
//! Layout (little endian; `docs/format.md` has the same tables): block 0 holds two
//! header slots of 512 bytes, written alternately by generation as the superblock's
//! are; then [`slots`](DoubleWrite::slots) slots, slot *i* at
//! `4096 + i × (4096 + page size)`, each a 4 KiB slot header block and a sealed page.
//!
//! ```text
//! header slot                          slot header
//! offset size field                    offset size field
//!      0    8 magic "TIERDBDW"              0    8 magic "TDBDWSLT"
//!      8    4 format version (1)            8    8 page id
//!     12    4 page size                    16    8 sequence number
//!     16    8 generation                   24    8 database id
//!     24    8 slot count                   32   28 reserved, zero
//!     32    8 database id                  60    4 CRC-32C of bytes 0..60
//!     40    8 floor: the sequence number of slot 0 in the current period
//!     48  460 reserved, zero
//!    508    4 CRC-32C of bytes 0..508
//! ```
//!
//! Protocol (driven by `SsdFile` under the lock of [`DoubleWrite::lock`]):
//!
//! 1. A batch of pages goes, sealed, to the consecutive slots from `head`, slot *i*
//!    numbered `floor + i`, in one write, followed by one `fdatasync`.
//! 2. Only then are the pages written in place (not synced).
//! 3. A sync of the page file makes every copy's page durable in place: the slots of the
//!    period are no longer needed. The floor moves on by the slot count (a header
//!    write and `fdatasync`) and `head` returns to 0. A batch that does not fit in the
//!    slots left runs this step first.
//!
//! So the slots of the current period hold, in write order, every page whose in-place
//! write may be torn or missing, and a slot from an earlier period can never pass for
//! one of the current period (its number is below the floor). On open, the slots
//! numbered `floor`, `floor + 1`, … are read up to the first that is not, and the newest
//! copy of each page is compared with the page in place ([`super::SsdFile`]).
//!
//! Concurrency: every protected write and every page-file sync holds the one lock.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use serde::Serialize;

use super::aligned::AlignedBuf;
use super::page_seal::{self, Sealed};
use super::{DeviceCore, DeviceError, FaultPlan, OpKind};
use crate::ids::PageId;
use crate::limits::{DOUBLE_WRITE_SLOT_HEADER_BYTES, DOUBLE_WRITE_SLOTS, IO_ALIGN_BYTES, SUPERBLOCK_SLOT_BYTES};

pub const MAGIC: [u8; 8] = *b"TIERDBDW";
pub const SLOT_MAGIC: [u8; 8] = *b"TDBDWSLT";
pub const FORMAT_VERSION: u32 = 1;
/// Slot counts a file may declare (a bound on a corrupt header).
const SLOTS_MAX: u64 = 1 << 16;
const HEADER_SLOT_BYTES: usize = SUPERBLOCK_SLOT_BYTES;
const HEADER_CRC_AT: usize = HEADER_SLOT_BYTES - 4;
const SLOT_CRC_AT: usize = 60;
/// The first slot's offset: after the header block.
const SLOTS_OFFSET: u64 = IO_ALIGN_BYTES as u64;
/// Bytes per write when a new file is filled with zeros.
const ZERO_FILL_BYTES: usize = 1 << 20;

const _: () = assert!(2 * HEADER_SLOT_BYTES <= IO_ALIGN_BYTES);
const _: () = assert!(SLOT_CRC_AT + 4 <= DOUBLE_WRITE_SLOT_HEADER_BYTES);
const _: () = assert!(DOUBLE_WRITE_SLOTS as u64 <= SLOTS_MAX);
const _: () = assert!(ZERO_FILL_BYTES.is_multiple_of(IO_ALIGN_BYTES));

/// The double-write file of the page file at `page_file`: `<page file>.dwa`.
pub fn path_for(page_file: &Path) -> PathBuf {
    let mut name = page_file.as_os_str().to_owned();
    name.push(".dwa");
    PathBuf::from(name)
}

/// What opening the page file did with the double-write area it found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TornPageRecovery {
    /// The double-write file.
    pub path: PathBuf,
    /// Copies of the current period: pages whose in-place write may not have become
    /// durable (zero after a clean close).
    pub copies: usize,
    /// Pages whose in-place bytes failed their seal (torn or corrupted), restored from
    /// their copy.
    pub restored_torn: Vec<PageId>,
    /// Pages whose in-place bytes were intact but older than their copy (the in-place
    /// write never reached the disk), restored from their copy.
    pub restored_older: Vec<PageId>,
    /// Why the file could not be used, if it could not (its copies were not applied;
    /// a torn page, if any, is then reported when it is read).
    pub unusable: Option<String>,
    /// Time to read the copies, compare them and restore pages.
    pub secs: f64,
}

impl TornPageRecovery {
    /// Pages written back from their copy.
    pub fn pages_restored(&self) -> usize {
        self.restored_torn.len() + self.restored_older.len()
    }
}

/// One copy found in a slot of the current period.
pub(crate) struct SlotCopy {
    pub pid: PageId,
    /// The sealed page, as it goes in place.
    pub page: AlignedBuf,
}

/// The state the lock protects.
pub(crate) struct State {
    /// The next slot to write: slots `0..head` hold the current period's copies.
    head: usize,
    /// The sequence number of slot 0 in the current period.
    floor: u64,
    generation: u64,
    /// Both header slots as they are on disk.
    header: [u8; 2 * HEADER_SLOT_BYTES],
    /// Slot images of the last batch, grown to the largest batch seen.
    buf: Option<AlignedBuf>,
}

/// An open double-write file.
pub struct DoubleWrite {
    file: File,
    path: PathBuf,
    page_size: usize,
    slots: usize,
    db_id: u64,
    core: DeviceCore,
    faults: Option<Arc<FaultPlan>>,
    state: Mutex<State>,
}

struct Header {
    page_size: u32,
    generation: u64,
    slots: u64,
    db_id: u64,
    floor: u64,
}

impl DoubleWrite {
    /// Creates the double-write file at `path` for database `db_id`, replacing any file
    /// there (a double-write file belongs to its page file, and a new page file has no
    /// pages to restore), fills it with zeros, and syncs it and its directory.
    ///
    /// # Errors
    /// `Create`, `Io`, `Full`.
    pub(crate) fn create(
        path: &Path,
        page_size: usize,
        db_id: u64,
        direct_io: bool,
        core: DeviceCore,
        faults: Option<Arc<FaultPlan>>,
    ) -> Result<DoubleWrite, DeviceError> {
        let file = open_file(path, direct_io, true)?;
        let slots = DOUBLE_WRITE_SLOTS;
        let bytes = file_bytes(slots, page_size);
        file.set_len(0).map_err(|e| DeviceError::io("truncate", path, 0, e))?;
        // Zeros written, not only allocated: a slot's first write then changes no file
        // system metadata, so its sync is a plain device flush, never a journal commit.
        let zeros = AlignedBuf::new(ZERO_FILL_BYTES);
        let mut at = 0u64;
        while at < bytes {
            let n = (bytes - at).min(ZERO_FILL_BYTES as u64) as usize;
            file.write_all_at(&zeros[..n], at).map_err(|e| DeviceError::io("write", path, bytes - at, e))?;
            at += n as u64;
        }
        let h = Header { page_size: page_size as u32, generation: 1, slots: slots as u64, db_id, floor: 1 };
        let mut header = [0u8; 2 * HEADER_SLOT_BYTES];
        for slot in header.chunks_exact_mut(HEADER_SLOT_BYTES) {
            slot.copy_from_slice(&encode_header(&h));
        }
        let dwa = DoubleWrite {
            file,
            path: path.to_path_buf(),
            page_size,
            slots,
            db_id,
            core,
            faults,
            state: Mutex::new(State { head: 0, floor: h.floor, generation: h.generation, header, buf: None }),
        };
        dwa.write_header(&dwa.state.lock())?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| DeviceError::io("fsync directory", dir, 0, e))?;
        }
        Ok(dwa)
    }

    /// Opens the double-write file at `path` and reads the copies of its current period,
    /// oldest first. Writes nothing. `Ok(Err(why))` if the file cannot be used for this
    /// page file (another database or page size, no valid header).
    ///
    /// # Errors
    /// `Io` reading it.
    pub(crate) fn open(
        path: &Path,
        page_size: usize,
        db_id: u64,
        direct_io: bool,
        core: DeviceCore,
        faults: Option<Arc<FaultPlan>>,
    ) -> Result<Result<(DoubleWrite, Vec<SlotCopy>), String>, DeviceError> {
        let file = open_file(path, direct_io, false)?;
        let len = file.metadata().map_err(|e| DeviceError::io("stat", path, 0, e))?.len();
        if len < SLOTS_OFFSET {
            return Ok(Err(format!("{len} bytes, shorter than its header")));
        }
        let mut block = AlignedBuf::new(IO_ALIGN_BYTES);
        file.read_exact_at(&mut block, 0).map_err(|e| DeviceError::io("read header of", path, 0, e))?;
        let decoded: Vec<Result<Header, String>> =
            block[..2 * HEADER_SLOT_BYTES].chunks_exact(HEADER_SLOT_BYTES).map(decode_header).collect();
        let Some(h) = decoded.iter().filter_map(|r| r.as_ref().ok()).max_by_key(|h| h.generation) else {
            let why: Vec<String> = decoded
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_ref().err().map(|e| format!("slot {i}: {e}")))
                .collect();
            return Ok(Err(format!("no valid header ({})", why.join("; "))));
        };
        if h.db_id != db_id {
            return Ok(Err(format!("it belongs to database {:#x}, not {db_id:#x}", h.db_id)));
        }
        if h.page_size as usize != page_size {
            return Ok(Err(format!("its pages are {} bytes, not {page_size}", h.page_size)));
        }
        let slots = h.slots as usize;
        if len < file_bytes(slots, page_size) {
            return Ok(Err(format!("{len} bytes, too short for {slots} slots")));
        }
        let mut header = [0u8; 2 * HEADER_SLOT_BYTES];
        header.copy_from_slice(&block[..2 * HEADER_SLOT_BYTES]);
        let (floor, generation) = (h.floor, h.generation);
        let dwa = DoubleWrite {
            file,
            path: path.to_path_buf(),
            page_size,
            slots,
            db_id,
            core,
            faults,
            state: Mutex::new(State { head: 0, floor, generation, header, buf: None }),
        };
        let copies = dwa.read_period(floor)?;
        dwa.state.lock().head = copies.len();
        Ok(Ok((dwa, copies)))
    }

    /// Reads slots 0, 1, … while they hold valid copies numbered `floor + i`.
    fn read_period(&self, floor: u64) -> Result<Vec<SlotCopy>, DeviceError> {
        let hdr = DOUBLE_WRITE_SLOT_HEADER_BYTES;
        let mut copies = Vec::new();
        let mut slot = AlignedBuf::new(hdr + self.page_size);
        for i in 0..self.slots {
            let offset = slot_offset(i, self.page_size);
            self.core.run(OpKind::Read, offset, slot.len() as u64, || {
                self.file.read_exact_at(&mut slot, offset).map_err(|e| DeviceError::io("read", &self.path, 0, e))
            })?;
            let Some(pid) = decode_slot(&slot[..hdr], floor + i as u64, self.db_id) else { break };
            if page_seal::check(&slot[hdr..], pid) != Ok(Sealed::Valid) {
                break; // the batch's write was torn: none of it went in place
            }
            let mut page = AlignedBuf::new(self.page_size);
            page.copy_from_slice(&slot[hdr..]);
            copies.push(SlotCopy { pid, page });
        }
        Ok(copies)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Slots: the most pages one batch holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// The lock every protected write and every page-file sync holds.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Slots left in the current period.
    pub(crate) fn free_slots(&self, st: &State) -> usize {
        self.slots - st.head
    }

    /// Step 1: writes `pages` (at most the free slots), sealed, to the slots from
    /// `head` in one write, and syncs. Their sealed images are then
    /// [`staged`](Self::staged) for the in-place writes.
    ///
    /// # Errors
    /// `Io`, `Full`: the caller poisons the page file.
    ///
    /// # Panics
    /// If a page's seal bytes are not zero (see [`page_seal::seal`]).
    pub(crate) fn write(&self, st: &mut State, pages: &[(PageId, &[u8])]) -> Result<(), DeviceError> {
        let k = pages.len();
        assert!(k >= 1 && k <= self.free_slots(st), "a batch of {k} pages, {} slots free", self.free_slots(st));
        let hdr = DOUBLE_WRITE_SLOT_HEADER_BYTES;
        let slot_bytes = hdr + self.page_size;
        if st.buf.as_ref().is_none_or(|b| b.len() < k * slot_bytes) {
            st.buf = Some(AlignedBuf::new(k * slot_bytes));
        }
        let first = st.head;
        let seq0 = st.floor + first as u64;
        let buf = &mut st.buf.as_mut().expect("allocated above")[..k * slot_bytes];
        for (j, (pid, bytes)) in pages.iter().enumerate() {
            debug_assert_eq!(bytes.len(), self.page_size, "{pid}");
            let s = &mut buf[j * slot_bytes..(j + 1) * slot_bytes];
            s[..hdr].fill(0);
            encode_slot(&mut s[..hdr], *pid, seq0 + j as u64, self.db_id);
            s[hdr..].copy_from_slice(bytes);
            page_seal::seal(&mut s[hdr..], *pid);
        }
        let offset = slot_offset(first, self.page_size);
        let faults = self.faults.as_deref();
        self.core.run(OpKind::Write, offset, buf.len() as u64, || {
            super::fault::write_at(faults, &self.path, &self.file, buf, offset)
                .map_err(|e| DeviceError::io("write", &self.path, buf.len() as u64, e))
        })?;
        self.sync_file()?;
        st.head += k;
        Ok(())
    }

    /// The sealed image of page `j` of the last [`write`](Self::write).
    pub(crate) fn staged<'s>(&self, st: &'s State, j: usize) -> &'s [u8] {
        let hdr = DOUBLE_WRITE_SLOT_HEADER_BYTES;
        let slot_bytes = hdr + self.page_size;
        let buf = st.buf.as_ref().expect("a batch was written");
        &buf[j * slot_bytes + hdr..(j + 1) * slot_bytes]
    }

    /// Step 3, after a sync of the page file: the current period's copies are no longer
    /// needed. Moves the floor on (durably) and starts a new period at slot 0. Nothing
    /// to do if the period has no copies.
    ///
    /// # Errors
    /// `Io`, `Full`: the caller poisons the page file.
    pub(crate) fn end_period(&self, st: &mut State) -> Result<(), DeviceError> {
        if st.head == 0 {
            return Ok(());
        }
        st.floor += self.slots as u64;
        st.generation += 1;
        let h = Header {
            page_size: self.page_size as u32,
            generation: st.generation,
            slots: self.slots as u64,
            db_id: self.db_id,
            floor: st.floor,
        };
        let at = (st.generation % 2) as usize * HEADER_SLOT_BYTES;
        st.header[at..at + HEADER_SLOT_BYTES].copy_from_slice(&encode_header(&h));
        self.write_header(st)?;
        st.head = 0;
        Ok(())
    }

    /// Writes block 0 with both header slots as `st` holds them, and syncs.
    fn write_header(&self, st: &State) -> Result<(), DeviceError> {
        let mut block = AlignedBuf::new(IO_ALIGN_BYTES);
        block[..st.header.len()].copy_from_slice(&st.header);
        let faults = self.faults.as_deref();
        self.core.run(OpKind::Write, 0, block.len() as u64, || {
            super::fault::write_at(faults, &self.path, &self.file, &block, 0)
                .map_err(|e| DeviceError::io("write header of", &self.path, block.len() as u64, e))
        })?;
        self.sync_file()
    }

    fn sync_file(&self) -> Result<(), DeviceError> {
        self.core.run(OpKind::Sync, 0, 0, || {
            super::fault::sync(self.faults.as_deref(), &self.path, &self.file)
                .map_err(|e| DeviceError::io("fdatasync", &self.path, 0, e))
        })
    }
}

/// Bytes of a double-write file with `slots` slots of `page_size` pages.
fn file_bytes(slots: usize, page_size: usize) -> u64 {
    slot_offset(slots, page_size)
}

fn slot_offset(i: usize, page_size: usize) -> u64 {
    SLOTS_OFFSET + (i * (DOUBLE_WRITE_SLOT_HEADER_BYTES + page_size)) as u64
}

/// Opens (`create`: creates or truncates) the file read-write, with `O_DIRECT` if
/// `direct_io` and the file system takes it.
fn open_file(path: &Path, direct_io: bool, create: bool) -> Result<File, DeviceError> {
    let open = |flags: i32| OpenOptions::new().read(true).write(true).create(create).custom_flags(flags).open(path);
    let r = if direct_io {
        match open(libc::O_DIRECT) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => open(0),
            r => r,
        }
    } else {
        open(0)
    };
    r.map_err(|e| {
        if create {
            DeviceError::Create { path: path.to_path_buf(), source: e }
        } else {
            DeviceError::io("open", path, 0, e)
        }
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn encode_header(h: &Header) -> [u8; HEADER_SLOT_BYTES] {
    let mut b = [0u8; HEADER_SLOT_BYTES];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&h.page_size.to_le_bytes());
    b[16..24].copy_from_slice(&h.generation.to_le_bytes());
    b[24..32].copy_from_slice(&h.slots.to_le_bytes());
    b[32..40].copy_from_slice(&h.db_id.to_le_bytes());
    b[40..48].copy_from_slice(&h.floor.to_le_bytes());
    let crc = crc32c::crc32c(&b[..HEADER_CRC_AT]);
    b[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes one header slot; any bytes give a header or a reason, never a panic.
fn decode_header(b: &[u8]) -> Result<Header, String> {
    if b[0..8] != MAGIC {
        return Err(format!("magic {:?}", b[0..8].escape_ascii().to_string()));
    }
    let version = u32_at(b, 8);
    if version != FORMAT_VERSION {
        return Err(format!("format version {version}, this build reads {FORMAT_VERSION}"));
    }
    let (stored, computed) = (u32_at(b, HEADER_CRC_AT), crc32c::crc32c(&b[..HEADER_CRC_AT]));
    if stored != computed {
        return Err(format!("checksum {stored:#010x} stored, {computed:#010x} computed"));
    }
    let h = Header {
        page_size: u32_at(b, 12),
        generation: u64_at(b, 16),
        slots: u64_at(b, 24),
        db_id: u64_at(b, 32),
        floor: u64_at(b, 40),
    };
    if h.slots == 0 || h.slots > SLOTS_MAX {
        return Err(format!("{} slots", h.slots));
    }
    Ok(h)
}

fn encode_slot(b: &mut [u8], pid: PageId, seq: u64, db_id: u64) {
    debug_assert!(b[..SLOT_CRC_AT + 4].iter().all(|&x| x == 0));
    b[0..8].copy_from_slice(&SLOT_MAGIC);
    b[8..16].copy_from_slice(&pid.0.to_le_bytes());
    b[16..24].copy_from_slice(&seq.to_le_bytes());
    b[24..32].copy_from_slice(&db_id.to_le_bytes());
    let crc = crc32c::crc32c(&b[..SLOT_CRC_AT]);
    b[SLOT_CRC_AT..SLOT_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The page id of a slot header that is valid and numbered `seq` of database `db_id`.
fn decode_slot(b: &[u8], seq: u64, db_id: u64) -> Option<PageId> {
    let valid = b[0..8] == SLOT_MAGIC
        && u32_at(b, SLOT_CRC_AT) == crc32c::crc32c(&b[..SLOT_CRC_AT])
        && u64_at(b, 16) == seq
        && u64_at(b, 24) == db_id;
    let pid = u64_at(b, 8);
    (valid && pid != 0).then_some(PageId(pid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DeviceProfile, EmulationMode, Tier};

    const PS: usize = 4096;

    fn core() -> DeviceCore {
        DeviceCore::new(Tier::Ssd, DeviceProfile::preset("nvme-ssd").unwrap(), EmulationMode::Off).unwrap()
    }

    fn page(fill: u8) -> Vec<u8> {
        let mut p = vec![fill; PS];
        page_seal::clear(&mut p);
        p
    }

    fn open(path: &Path, db_id: u64) -> Result<(DoubleWrite, Vec<SlotCopy>), String> {
        DoubleWrite::open(path, PS, db_id, true, core(), None).unwrap()
    }

    #[test]
    fn copies_of_the_current_period_are_found_and_a_new_period_has_none() {
        let d = tempfile::tempdir().unwrap();
        let path = path_for(&d.path().join("x.db"));
        assert!(path.ends_with("x.db.dwa"));
        let dwa = DoubleWrite::create(&path, PS, 7, true, core(), None).unwrap();
        {
            let mut st = dwa.lock();
            let (a, b) = (page(1), page(2));
            dwa.write(&mut st, &[(PageId(3), &a), (PageId(4), &b)]).unwrap();
            assert_eq!(page_seal::check(dwa.staged(&st, 1), PageId(4)), Ok(Sealed::Valid));
            dwa.write(&mut st, &[(PageId(3), &b)]).unwrap();
            assert_eq!(dwa.free_slots(&st), DOUBLE_WRITE_SLOTS - 3);
        }
        drop(dwa);
        let (dwa, copies) = open(&path, 7).unwrap();
        let got: Vec<(u64, u8)> = copies.iter().map(|c| (c.pid.0, c.page[0])).collect();
        assert_eq!(got, [(3, 1), (4, 2), (3, 2)], "in write order");
        dwa.end_period(&mut dwa.lock()).unwrap();
        drop(dwa);
        let (dwa, copies) = open(&path, 7).unwrap();
        assert!(copies.is_empty(), "the old period's slots are below the floor");
        // A new period overwrites slot 0 only: slots 1 and 2 of the old one stay out.
        dwa.write(&mut dwa.lock(), &[(PageId(9), &page(9))]).unwrap();
        drop(dwa);
        let (_, copies) = open(&path, 7).unwrap();
        assert_eq!(copies.iter().map(|c| c.pid.0).collect::<Vec<_>>(), [9]);
    }

    #[test]
    fn another_database_or_a_broken_header_is_unusable() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("y.dwa");
        drop(DoubleWrite::create(&path, PS, 7, true, core(), None).unwrap());
        let why = open(&path, 8).err().unwrap();
        assert!(why.contains("belongs to database"), "{why}");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20] ^= 1;
        bytes[512 + 20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let why = open(&path, 7).err().unwrap();
        assert!(why.contains("checksum"), "{why}");
    }

    #[test]
    fn a_torn_batch_ends_the_period_at_its_first_torn_slot() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("z.dwa");
        let plan = FaultPlan::new();
        let dwa = DoubleWrite::create(&path, PS, 7, true, core(), Some(plan.clone())).unwrap();
        let pages: Vec<Vec<u8>> = (1..=4).map(page).collect();
        let batch: Vec<(PageId, &[u8])> =
            pages.iter().enumerate().map(|(i, p)| (PageId(i as u64 + 1), &p[..])).collect();
        plan.tear_nth_write(1);
        assert!(dwa.write(&mut dwa.lock(), &batch).is_err());
        drop(dwa);
        // Half of 4 slots of 8 KiB: slots 0 and 1 whole, the rest never written.
        let (_, copies) = open(&path, 7).unwrap();
        assert_eq!(copies.iter().map(|c| c.pid.0).collect::<Vec<_>>(), [1, 2]);
    }

    proptest::proptest! {
        #[test]
        fn decoding_is_total(mut b in proptest::collection::vec(proptest::prelude::any::<u8>(), HEADER_SLOT_BYTES), fix: bool) {
            if fix {
                b[0..8].copy_from_slice(&MAGIC);
                b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
                let crc = crc32c::crc32c(&b[..HEADER_CRC_AT]);
                b[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
            }
            let _ = decode_header(&b);
            let _ = decode_slot(&b, u64_at(&b, 16), u64_at(&b, 24));
        }
    }
}
