//! The double-write area (DWA) of the SSD page file: where each batch of page writes is
//! made durable before any of its pages is written in place. A page torn by a crash in
//! the middle of its in-place write is restored from its copy when the page file is
//! opened again.
//!
//! The area lives either in a file next to the page file (`<page file>.dwa`, on SSD:
//! [`DoubleWriteMode::Ssd`]) or in a small NVM region ([`DoubleWriteMode::Nvm`], NV-SQL
//! §5.4): there a copy is made durable by cache-line flushes instead of an SSD write
//! and `fdatasync`, so each page reaches SSD once. Both use the layout and protocol
//! below; the NVM area has its own magic (`TIERDBDN`) and 64-byte slot headers (one
//! cache line; the SSD file's are one 4 KiB O_DIRECT block).
//!
//! No write larger than a sector is atomic on SSD (`docs/format.md`), and the WAL's
//! redo applies logical changes to a page, which needs the page intact: a torn page can
//! be detected by its seal ([`super::page_seal`]) but not repaired from the log. The DWA
//! repairs it.
//!
//! Layout (little endian; `docs/format.md` has the same tables): block 0 holds two
//! header slots of 512 bytes, written alternately by generation as the superblock's
//! are; then [`slots`](DoubleWrite::slots) slots, slot *i* at
//! `4096 + i × (h + page size)`, each a slot header of *h* bytes (4096 in the SSD file,
//! 64 in NVM) and a sealed page.
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
//! Protocol (driven by `SsdFile` under the area's one lock, `DoubleWrite::lock`):
//!
//! 1. A batch of pages goes, sealed, to the consecutive slots from `head`, slot *i*
//!    numbered `floor + i`, in one write, followed by one `fdatasync` (NVM: one copy
//!    and one persist of its lines).
//! 2. Only then are the pages written in place (not synced).
//! 3. A sync of the page file makes every copy's page durable in place: the slots of the
//!    period are no longer needed. The floor moves on by the slot count (a header
//!    write and `fdatasync`; NVM: a persist) and `head` returns to 0. A batch that
//!    does not fit in the slots left runs this step first.
//!
//! So the slots of the current period hold, in write order, every page whose in-place
//! write may be torn or missing, and a slot from an earlier period can never pass for
//! one of the current period (its number is below the floor). On open, the slots
//! numbered `floor`, `floor + 1`, … are read up to the first that is not, and the newest
//! copy of each page is compared with the page in place ([`super::SsdFile`]).
//!
//! Concurrency: every protected write and every page-file sync holds the one lock.

#![allow(unsafe_code)] // one block: the copy into the NVM area, under its lock

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use serde::Serialize;

use super::aligned::AlignedBuf;
use super::page_seal::{self, Sealed};
use super::{DeviceCore, DeviceError, FaultPlan, NvmConfig, NvmRegion, OpKind, OpenMode};
use crate::ids::{Lsn, PageId};
use crate::limits::{
    CACHE_LINE_BYTES, DOUBLE_WRITE_SLOT_HEADER_BYTES, DOUBLE_WRITE_SLOTS, IO_ALIGN_BYTES, OS_PAGE_BYTES,
    SUPERBLOCK_SLOT_BYTES,
};
use crate::size::ByteSize;

/// The SSD double-write file's magic, at the start of each header slot.
pub const MAGIC: [u8; 8] = *b"TIERDBDW";
/// The NVM area's magic: its slot headers are smaller, so an SSD file's bytes never
/// pass for it.
pub const MAGIC_NVM: [u8; 8] = *b"TIERDBDN";
/// Slot header bytes in the NVM area: one cache line.
pub const NVM_SLOT_HEADER_BYTES: usize = CACHE_LINE_BYTES;
/// The magic at the start of every slot header, in a file and in NVM.
pub const SLOT_MAGIC: [u8; 8] = *b"TDBDWSLT";
/// The double-write area's format version, in its header slots.
pub const FORMAT_VERSION: u32 = 1;
/// Slot counts a file may declare (a bound on a corrupt header).
const SLOTS_MAX: u64 = crate::limits::DOUBLE_WRITE_SLOTS_MAX as u64;
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
const _: () = assert!(SLOT_CRC_AT + 4 <= NVM_SLOT_HEADER_BYTES);

/// Where SSD page writes are made durable before they go in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DoubleWriteMode {
    /// No double write: a torn page is detected (its seal) but cannot be repaired.
    Off,
    /// A file next to the page file (`<page file>.dwa`): one more SSD write and
    /// `fdatasync` per batch.
    #[default]
    Ssd,
    /// An NVM region (NV-SQL §5.4): the copy costs NVM writes and a persist; each page
    /// is written to SSD once.
    Nvm,
}

impl DoubleWriteMode {
    /// The mode's name as configurations spell it: `off`, `ssd` or `nvm`.
    pub fn name(self) -> &'static str {
        match self {
            DoubleWriteMode::Off => "off",
            DoubleWriteMode::Ssd => "ssd",
            DoubleWriteMode::Nvm => "nvm",
        }
    }

    /// True unless the mode is [`DoubleWriteMode::Off`].
    pub fn is_on(self) -> bool {
        self != DoubleWriteMode::Off
    }
}

impl std::fmt::Display for DoubleWriteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DoubleWriteMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(DoubleWriteMode::Off),
            "ssd" => Ok(DoubleWriteMode::Ssd),
            "nvm" => Ok(DoubleWriteMode::Nvm),
            _ => Err(format!("double write {s:?}: expected off, ssd or nvm")),
        }
    }
}

/// The default NVM double-write area of the page file at `page_file`:
/// `<page file>.dwa.nvm` next to it (architectures put it beside their NVM pool instead).
pub fn nvm_path_for(page_file: &Path) -> PathBuf {
    let mut name = page_file.as_os_str().to_owned();
    name.push(".dwa.nvm");
    PathBuf::from(name)
}

/// Bytes of an NVM double-write area of `slots` slots of `page_size` pages (a whole
/// number of OS pages): 2 MiB at 16 KiB pages and 128 slots, as the paper's DWB.
pub fn nvm_area_bytes(slots: usize, page_size: usize) -> u64 {
    let b = SLOTS_OFFSET + (slots * (NVM_SLOT_HEADER_BYTES + page_size)) as u64;
    b.div_ceil(OS_PAGE_BYTES as u64) * OS_PAGE_BYTES as u64
}

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

/// What holds the area.
enum Medium {
    /// The SSD file, with its own device counters and the page file's faults.
    File { file: File, core: DeviceCore, faults: Option<Arc<FaultPlan>> },
    /// An NVM region (its counters are the region's).
    Nvm(NvmRegion),
}

/// An open double-write area.
pub struct DoubleWrite {
    medium: Medium,
    path: PathBuf,
    page_size: usize,
    slots: usize,
    /// Slot header bytes: [`DOUBLE_WRITE_SLOT_HEADER_BYTES`] in a file,
    /// [`NVM_SLOT_HEADER_BYTES`] in NVM.
    slot_header: usize,
    db_id: u64,
    state: Mutex<State>,
}

#[derive(Clone, Copy)]
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
        let bytes = file_bytes(slots, DOUBLE_WRITE_SLOT_HEADER_BYTES, page_size);
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
        let dwa = DoubleWrite::formatted(
            Medium::File { file, core, faults },
            path,
            page_size,
            slots,
            DOUBLE_WRITE_SLOT_HEADER_BYTES,
            db_id,
        );
        dwa.write_header(&dwa.state.lock())?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| DeviceError::io("fsync directory", dir, 0, e))?;
        }
        Ok(dwa)
    }

    /// Creates the NVM double-write area of `slots` slots in the region `cfg` names
    /// (its size is set here: [`nvm_area_bytes`]), replacing any file there, and
    /// formats it for database `db_id`.
    ///
    /// # Errors
    /// `Config` for no slot (an area that cannot hold one page) or a bad region
    /// configuration; the region's errors (`Create`, `Io`, `Full`).
    pub(crate) fn create_nvm(
        cfg: &NvmConfig,
        slots: usize,
        page_size: usize,
        db_id: u64,
    ) -> Result<DoubleWrite, DeviceError> {
        let region_cfg = nvm_region_config(cfg, slots, page_size, OpenMode::Create)?;
        match std::fs::remove_file(&cfg.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DeviceError::io("remove", &cfg.path, 0, e)),
        }
        let region = NvmRegion::open(&region_cfg)?;
        let dwa =
            DoubleWrite::formatted(Medium::Nvm(region), &cfg.path, page_size, slots, NVM_SLOT_HEADER_BYTES, db_id);
        // A new file is zeros already; the header goes last, so a crash before it leaves
        // an area without a header (not applied, formatted again).
        dwa.write_header(&dwa.state.lock())?;
        Ok(dwa)
    }

    /// A new area's handle: generation 1, floor 1, both header slots alike (written by
    /// the caller).
    fn formatted(
        medium: Medium,
        path: &Path,
        page_size: usize,
        slots: usize,
        slot_header: usize,
        db_id: u64,
    ) -> DoubleWrite {
        let h = Header { page_size: page_size as u32, generation: 1, slots: slots as u64, db_id, floor: 1 };
        let magic = medium.magic();
        let mut header = [0u8; 2 * HEADER_SLOT_BYTES];
        for slot in header.chunks_exact_mut(HEADER_SLOT_BYTES) {
            slot.copy_from_slice(&encode_header(&magic, &h));
        }
        DoubleWrite {
            medium,
            path: path.to_path_buf(),
            page_size,
            slots,
            slot_header,
            db_id,
            state: Mutex::new(State { head: 0, floor: h.floor, generation: h.generation, header, buf: None }),
        }
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
        let h = match choose_header(&MAGIC, &block[..2 * HEADER_SLOT_BYTES]) {
            Ok(h) => h,
            Err(why) => return Ok(Err(why)),
        };
        if let Err(why) = h.belongs(db_id, page_size) {
            return Ok(Err(why));
        }
        let slots = h.slots as usize;
        if len < file_bytes(slots, DOUBLE_WRITE_SLOT_HEADER_BYTES, page_size) {
            return Ok(Err(format!("{len} bytes, too short for {slots} slots")));
        }
        let medium = Medium::File { file, core, faults };
        Ok(Ok(DoubleWrite::opened(medium, path, page_size, DOUBLE_WRITE_SLOT_HEADER_BYTES, db_id, &h, &block)?))
    }

    /// Opens the NVM double-write area `cfg` names (made for `slots` slots) and reads
    /// the copies of its current period, oldest first. Writes nothing. `Ok(Err(why))`
    /// if it is not an area of this page file that was ever formatted (another
    /// database, no header at all): its copies are not applied.
    ///
    /// # Errors
    /// `Config` for no slot; `SizeMismatch` for a file of another size than this page
    /// size and slot count make; `Corrupted` for an area whose header slots both carry
    /// the magic but fail their checks (it may hold copies that cannot be trusted or
    /// found: the database is not opened over it); the region's errors.
    pub(crate) fn open_nvm(
        cfg: &NvmConfig,
        slots: usize,
        page_size: usize,
        db_id: u64,
    ) -> Result<Result<(DoubleWrite, Vec<SlotCopy>), String>, DeviceError> {
        let region = NvmRegion::open(&nvm_region_config(cfg, slots, page_size, OpenMode::Open)?)?;
        let mut block = vec![0u8; 2 * HEADER_SLOT_BYTES];
        region.copy_out(0, &mut block)?;
        let h = match choose_header(&MAGIC_NVM, &block) {
            Ok(h) => h,
            Err(why) if block.chunks_exact(HEADER_SLOT_BYTES).any(|b| b[0..8] == MAGIC_NVM) => {
                return Err(DeviceError::Corrupted {
                    what: "NVM double-write area",
                    location: cfg.path.display().to_string(),
                    detail: why,
                });
            }
            Err(why) => return Ok(Err(why)),
        };
        if let Err(why) = h.belongs(db_id, page_size) {
            return Ok(Err(why));
        }
        if h.slots as usize != slots {
            return Err(DeviceError::Corrupted {
                what: "NVM double-write area",
                location: cfg.path.display().to_string(),
                detail: format!("its header counts {} slots; a region of its size holds {slots}", h.slots),
            });
        }
        Ok(Ok(DoubleWrite::opened(
            Medium::Nvm(region),
            &cfg.path,
            page_size,
            NVM_SLOT_HEADER_BYTES,
            db_id,
            &h,
            &block,
        )?))
    }

    /// An existing area's handle, with the copies of its current period.
    fn opened(
        medium: Medium,
        path: &Path,
        page_size: usize,
        slot_header: usize,
        db_id: u64,
        h: &Header,
        block: &[u8],
    ) -> Result<(DoubleWrite, Vec<SlotCopy>), DeviceError> {
        let mut header = [0u8; 2 * HEADER_SLOT_BYTES];
        header.copy_from_slice(&block[..2 * HEADER_SLOT_BYTES]);
        let (floor, generation) = (h.floor, h.generation);
        let dwa = DoubleWrite {
            medium,
            path: path.to_path_buf(),
            page_size,
            slots: h.slots as usize,
            slot_header,
            db_id,
            state: Mutex::new(State { head: 0, floor, generation, header, buf: None }),
        };
        let copies = dwa.read_period(floor)?;
        dwa.state.lock().head = copies.len();
        Ok((dwa, copies))
    }

    /// Reads slots 0, 1, … while they hold valid copies numbered `floor + i`.
    fn read_period(&self, floor: u64) -> Result<Vec<SlotCopy>, DeviceError> {
        let hdr = self.slot_header;
        let mut copies = Vec::new();
        let mut slot = AlignedBuf::new(hdr + self.page_size);
        for i in 0..self.slots {
            self.read_at(self.slot_offset(i), &mut slot)?;
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

    /// The area's file: `<page file>.dwa` on SSD, the NVM region's file in NVM.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Slots: the most pages one batch holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Where the area lives.
    pub fn mode(&self) -> DoubleWriteMode {
        match self.medium {
            Medium::File { .. } => DoubleWriteMode::Ssd,
            Medium::Nvm(_) => DoubleWriteMode::Nvm,
        }
    }

    /// The area's device (its counters): its own SSD core for a file, the NVM region's.
    pub fn core(&self) -> &DeviceCore {
        match &self.medium {
            Medium::File { core, .. } => core,
            Medium::Nvm(r) => r.core(),
        }
    }

    /// The lock every protected write and every page-file sync holds.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Slots left in the current period.
    pub(crate) fn free_slots(&self, st: &State) -> usize {
        debug_assert!(st.head <= self.slots, "double-write head at slot {} of {}", st.head, self.slots);
        self.slots - st.head
    }

    /// Step 1: writes `pages` (at most the free slots), sealed (with last-flush LSN
    /// `flush_lsn`, [`page_seal`]), to the slots from
    /// `head` in one write, and makes them durable. Their sealed images are then
    /// [`staged`](Self::staged) for the in-place writes.
    ///
    /// # Errors
    /// `Io`, `Full`: the caller poisons the page file.
    ///
    /// # Panics
    /// If a page's seal bytes are not zero (see [`page_seal::seal`]).
    pub(crate) fn write(&self, st: &mut State, pages: &[(PageId, &[u8])], flush_lsn: Lsn) -> Result<(), DeviceError> {
        let k = pages.len();
        assert!(k >= 1 && k <= self.free_slots(st), "a batch of {k} pages, {} slots free", self.free_slots(st));
        let hdr = self.slot_header;
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
            page_seal::seal_flushed(&mut s[hdr..], *pid, flush_lsn);
        }
        self.write_durable(self.slot_offset(first), buf)?;
        st.head += k;
        Ok(())
    }

    /// The sealed image of page `j` of the last [`write`](Self::write).
    pub(crate) fn staged<'s>(&self, st: &'s State, j: usize) -> &'s [u8] {
        let hdr = self.slot_header;
        let slot_bytes = hdr + self.page_size;
        let buf = st.buf.as_ref().expect("a batch was written");
        debug_assert!(j < st.head, "staged page {j} of a period holding {} copies", st.head);
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
        // A period never holds more copies than slots: the floor moves past all of them.
        assert!(st.head <= self.slots, "a period of {} copies in {} slots", st.head, self.slots);
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
        st.header[at..at + HEADER_SLOT_BYTES].copy_from_slice(&encode_header(&self.medium.magic(), &h));
        self.write_header(st)?;
        st.head = 0;
        Ok(())
    }

    /// Writes both header slots as `st` holds them (a file: all of block 0), durably.
    fn write_header(&self, st: &State) -> Result<(), DeviceError> {
        match self.medium {
            Medium::File { .. } => {
                let mut block = AlignedBuf::new(IO_ALIGN_BYTES);
                block[..st.header.len()].copy_from_slice(&st.header);
                self.write_durable(0, &block)
            }
            Medium::Nvm(_) => self.write_durable(0, &st.header),
        }
    }

    fn slot_offset(&self, i: usize) -> u64 {
        debug_assert!(i < self.slots, "double-write slot {i} of {}", self.slots);
        slot_offset(i, self.slot_header, self.page_size)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        match &self.medium {
            Medium::File { file, core, .. } => core.run(OpKind::Read, offset, buf.len() as u64, || {
                file.read_exact_at(buf, offset).map_err(|e| DeviceError::io("read", &self.path, 0, e))
            }),
            Medium::Nvm(r) => r.copy_out(offset, buf),
        }
    }

    /// Writes `buf` at `offset` and makes it durable: a write and `fdatasync` of the
    /// file, or a copy into NVM and a persist of its lines.
    fn write_durable(&self, offset: u64, buf: &[u8]) -> Result<(), DeviceError> {
        match &self.medium {
            Medium::File { file, core, faults } => {
                let faults = faults.as_deref();
                core.run(OpKind::Write, offset, buf.len() as u64, || {
                    super::fault::write_at(faults, &self.path, file, buf, offset)
                        .map_err(|e| DeviceError::io("write", &self.path, buf.len() as u64, e))
                })?;
                core.run(OpKind::Sync, 0, 0, || {
                    super::fault::sync(faults, &self.path, file)
                        .map_err(|e| DeviceError::io("fdatasync", &self.path, 0, e))
                })
            }
            Medium::Nvm(r) => {
                // SAFETY: every write to the area runs under its one lock (`lock`:
                // `write`, `end_period`) or on a handle not yet shared (creation); reads
                // of it happen only while opening, before the handle is shared.
                unsafe { r.copy_in_shared(offset, buf) }?;
                r.persist(offset, buf.len() as u64)
            }
        }
    }
}

impl Medium {
    fn magic(&self) -> [u8; 8] {
        match self {
            Medium::File { .. } => MAGIC,
            Medium::Nvm(_) => MAGIC_NVM,
        }
    }
}

impl Header {
    /// `Err(why)` if the area is another database's or made for another page size.
    fn belongs(&self, db_id: u64, page_size: usize) -> Result<(), String> {
        if self.db_id != db_id {
            return Err(format!("it belongs to database {:#x}, not {db_id:#x}", self.db_id));
        }
        if self.page_size as usize != page_size {
            return Err(format!("its pages are {} bytes, not {page_size}", self.page_size));
        }
        Ok(())
    }
}

/// The valid header slot with the higher generation, or why neither is valid.
fn choose_header(magic: &[u8; 8], slots: &[u8]) -> Result<Header, String> {
    let decoded: Vec<Result<Header, String>> =
        slots.chunks_exact(HEADER_SLOT_BYTES).map(|b| decode_header(magic, b)).collect();
    let mut best: Option<Header> = None;
    for h in decoded.iter().filter_map(|r| r.as_ref().ok()) {
        if best.as_ref().is_none_or(|b| h.generation > b.generation) {
            best = Some(*h);
        }
    }
    best.ok_or_else(|| {
        let why: Vec<String> = decoded
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().err().map(|e| format!("slot {i}: {e}")))
            .collect();
        format!("no valid header ({})", why.join("; "))
    })
}

/// The region configuration of an NVM area of `slots` slots.
fn nvm_region_config(
    cfg: &NvmConfig,
    slots: usize,
    page_size: usize,
    open: OpenMode,
) -> Result<NvmConfig, DeviceError> {
    if slots == 0 || slots as u64 > SLOTS_MAX {
        return Err(DeviceError::Config {
            device: "nvm double-write area",
            what: format!(
                "{} with {slots} slots: it must hold 1 to {SLOTS_MAX} pages of {page_size} bytes",
                cfg.path.display()
            ),
        });
    }
    let mut c = cfg.clone();
    c.size = ByteSize(nvm_area_bytes(slots, page_size));
    c.open_mode = open;
    c.wear_counters = false;
    Ok(c)
}

/// Bytes of a double-write area with `slots` slots of `slot_header` + `page_size` bytes.
fn file_bytes(slots: usize, slot_header: usize, page_size: usize) -> u64 {
    slot_offset(slots, slot_header, page_size)
}

fn slot_offset(i: usize, slot_header: usize, page_size: usize) -> u64 {
    SLOTS_OFFSET + (i * (slot_header + page_size)) as u64
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

fn encode_header(magic: &[u8; 8], h: &Header) -> [u8; HEADER_SLOT_BYTES] {
    let mut b = [0u8; HEADER_SLOT_BYTES];
    b[0..8].copy_from_slice(magic);
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
fn decode_header(magic: &[u8; 8], b: &[u8]) -> Result<Header, String> {
    if b[0..8] != *magic {
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
            dwa.write(&mut st, &[(PageId(3), &a), (PageId(4), &b)], Lsn::NONE).unwrap();
            assert_eq!(page_seal::check(dwa.staged(&st, 1), PageId(4)), Ok(Sealed::Valid));
            dwa.write(&mut st, &[(PageId(3), &b)], Lsn::NONE).unwrap();
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
        dwa.write(&mut dwa.lock(), &[(PageId(9), &page(9))], Lsn::NONE).unwrap();
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
        assert!(dwa.write(&mut dwa.lock(), &batch, Lsn::NONE).is_err());
        drop(dwa);
        // Half of 4 slots of 8 KiB: slots 0 and 1 whole, the rest never written.
        let (_, copies) = open(&path, 7).unwrap();
        assert_eq!(copies.iter().map(|c| c.pid.0).collect::<Vec<_>>(), [1, 2]);
    }

    fn nvm_cfg(d: &tempfile::TempDir) -> NvmConfig {
        NvmConfig::new(d.path().join("x.dwa.nvm"), ByteSize(0))
    }

    #[test]
    fn the_nvm_area_keeps_copies_with_their_flush_lsn_until_the_period_ends() {
        let d = tempfile::tempdir_in("/dev/shm").unwrap();
        let cfg = nvm_cfg(&d);
        let dwa = DoubleWrite::create_nvm(&cfg, 4, PS, 7).unwrap();
        assert_eq!(dwa.mode(), DoubleWriteMode::Nvm);
        assert_eq!(std::fs::metadata(&cfg.path).unwrap().len(), nvm_area_bytes(4, PS));
        {
            let mut st = dwa.lock();
            dwa.write(&mut st, &[(PageId(3), &page(1)), (PageId(4), &page(2))], Lsn::new(900)).unwrap();
            assert_eq!(page_seal::flush_lsn(dwa.staged(&st, 1)), Lsn::new(900));
        }
        let s = dwa.core().stats().snapshot();
        // The header at creation, then the batch: one copy and one persist each.
        assert_eq!((s.writes, s.persists, s.syncs), (2, 2, 0), "{s:?}");
        drop(dwa);
        let (dwa, copies) = DoubleWrite::open_nvm(&cfg, 4, PS, 7).unwrap().unwrap();
        let got: Vec<(u64, u8, u64)> =
            copies.iter().map(|c| (c.pid.0, c.page[0], page_seal::flush_lsn(&c.page).get())).collect();
        assert_eq!(got, [(3, 1, 900), (4, 2, 900)]);
        dwa.end_period(&mut dwa.lock()).unwrap();
        drop(dwa);
        let (_, copies) = DoubleWrite::open_nvm(&cfg, 4, PS, 7).unwrap().unwrap();
        assert!(copies.is_empty());
        // Another database's area is not applied (it is formatted again by the caller).
        let why = DoubleWrite::open_nvm(&cfg, 4, PS, 8).unwrap().err().unwrap();
        assert!(why.contains("belongs to database"), "{why}");
    }

    #[test]
    fn a_full_or_bad_nvm_area_is_a_typed_error() {
        let d = tempfile::tempdir_in("/dev/shm").unwrap();
        let cfg = nvm_cfg(&d);
        // No slot: it cannot hold one page.
        let e = DoubleWrite::create_nvm(&cfg, 0, PS, 7).err().unwrap();
        assert!(matches!(e, DeviceError::Config { .. }) && e.to_string().contains("x.dwa.nvm"), "{e}");
        drop(DoubleWrite::create_nvm(&cfg, 4, PS, 7).unwrap());
        // A file of another size (made for other slots or pages).
        let e = DoubleWrite::open_nvm(&cfg, 8, PS, 7).err().unwrap();
        assert!(matches!(e, DeviceError::SizeMismatch { .. }), "{e}");
        // Both header slots broken: copies may be there, unreadable.
        let mut bytes = std::fs::read(&cfg.path).unwrap();
        bytes[20] ^= 1;
        bytes[512 + 20] ^= 1;
        std::fs::write(&cfg.path, &bytes).unwrap();
        let e = DoubleWrite::open_nvm(&cfg, 4, PS, 7).err().unwrap();
        assert!(
            matches!(e, DeviceError::Corrupted { what: "NVM double-write area", .. })
                && e.to_string().contains("checksum"),
            "{e}"
        );
        // An area never formatted (zeros: a crash inside its creation) is only unusable.
        std::fs::write(&cfg.path, vec![0u8; bytes.len()]).unwrap();
        let why = DoubleWrite::open_nvm(&cfg, 4, PS, 7).unwrap().err().unwrap();
        assert!(why.contains("no valid header"), "{why}");
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
            let _ = decode_header(&MAGIC, &b);
            let _ = decode_slot(&b, u64_at(&b, 16), u64_at(&b, 24));
        }
    }
}
