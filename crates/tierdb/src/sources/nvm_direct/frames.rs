//! Pages read and written in place in NVM: the frames and guards of the `nvm-direct`
//! architecture (three-tier paper §2.1), which has no DRAM buffer.
//!
//! Every page lives in one slot of the NVM region for good. A guard latches the slot
//! (a [`DirectMeta`] per slot: latch, version, page LSN) and reads the page where it is:
//! a shared or optimistic guard derefs to the NVM bytes themselves, and a line guard's
//! [`read`](LinePage::read) returns them in place.
//!
//! Writes are staged. A change to NVM is persisted whenever the CPU evicts its cache
//! line, so a page changed in place in several steps could be found half changed after a
//! crash, with no log record yet describing it. An exclusive guard therefore writes to
//! a *shadow*: a DRAM copy of the lines it touches (all of them for a whole-page write),
//! loaded from NVM on first touch. When the guard is dropped, the lines that really
//! changed are
//! 1. logged as one after-image record and made durable ([`WriteBackLog`], when a log
//!    is attached), then
//! 2. copied to NVM and persisted (`clwb` + `sfence`),
//!
//! before the latch is released. Recovery repeats these images in log order, so a
//! write-back cut short by a crash is completed, and no in-place change ever precedes
//! its durable log record. The paper's engine logs the tuple's before and after image
//! and updates it in place; staging the bytes of one latch hold in DRAM is what makes
//! the same rule hold for changes (a node split, a compaction) that span many lines.
//!
//! Reads are charged to the NVM device as they happen: a line guard's `read` as one
//! device read of the lines it covers, a shared fix (scans) as a read of the page, an
//! optimistic fix (an inner node's binary search) as [`search_lines`] dependent line
//! reads — the direct loads of a search cannot be intercepted, so their number is
//! modelled. Loads from NVM go through the CPU caches, so a line read again soon (the
//! root's, a hot leaf's) costs no NVM access on real hardware. A model of the last-level
//! cache decides which reads are charged: a direct-mapped tag array for a cache of
//! the configured size (`DirectConfig::cpu_cache_bytes`, by default the default share
//! of the data, `frame::cpu_cache`; rounded down to whole lines; 0 turns the model off
//! and charges every read); a line whose tag is present is a hit and costs nothing.
//! Without it every load would pay NVM latency and `nvm-direct` would look several
//! times slower than the hardware the paper measured.
//!
//! **Checksums.** Each slot has a CRC entry of one line in the region's CRC table
//! ([`CrcEntry`]): the page's CRC-32C and the one before its last write-back. A
//! write-back computes the new CRC (from the CRC now and the changed lines' old and new
//! bytes, `page_crc`; from the whole page for a page written whole) and writes and
//! persists the entry *before* its log record and lines. So whatever a crash leaves,
//! once redo has repeated the logged images the page is either as the last write-back
//! made it (its record was durable) or as it was before (it was not): it matches one of
//! the entry's two CRCs, and anything else is damage. A slot is checked against its
//! entry before it is first used after a reopen, and, with [`NvmVerify::Every`], at
//! every fix. During redo (from a reopen until the log is attached) a slot that fails
//! its check is not an error yet — the crash may have torn its last write-back, which
//! redo completes — and its entry is left alone; it is checked again when redo ends.
//!
//! [`search_lines`]: crate::page::frame::cpu_cache::search_lines

#![allow(unsafe_code)]

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

use parking_lot::{Mutex, RwLock};

use crate::Result;
use crate::buffer::error::BufferError;
use crate::device::NvmRegion;
use crate::ids::{Lsn, PageId};
use crate::limits::{CACHE_LINE_BYTES, PAGE_SIZE_MAX_BYTES};
use crate::page::crc::{NvmVerify, crc_after_runs};
use crate::page::latch::Latch;
use crate::page::source::{ExclusivePage, LinePage, OptimisticPage, SharedPage};

pub use crate::page::frame::cpu_cache::CPU_CACHE_MODEL_MAX_BYTES;
use crate::page::frame::cpu_cache::CpuCacheModel;

mod guards;

pub use guards::{DirectLines, DirectOptimistic, DirectRead, DirectWrite};

const LINE: usize = CACHE_LINE_BYTES;
/// Words of a line mask: one bit per line of the largest page.
const MASK_WORDS: usize = PAGE_SIZE_MAX_BYTES / LINE / 64;
/// Shadow buffers kept for reuse.
const SHADOWS_KEPT_MAX: usize = 64;

/// Bytes of a slot's CRC entry in the region's CRC table: one line, written and
/// persisted only by the slot's exclusive holder.
pub const CRC_ENTRY_BYTES: usize = CACHE_LINE_BYTES;

/// [`DirectMeta::crc_state`]: found at a reopen, to be checked against the slot's CRC
/// entry before its first use.
const CRC_UNKNOWN: u8 = 0;
const _: () = assert!(CRC_UNKNOWN == 0, "DirectMeta::default starts unknown");
/// [`DirectMeta::crc`] is the page's CRC.
const CRC_KNOWN: u8 = 1;
/// Failed its check during redo: its entry is left alone, and it is checked again when
/// redo ends.
const CRC_DEFERRED: u8 = 2;

/// A slot's CRC entry (one line, little endian):
///
/// ```text
///   0 CRC-32C of the page | 4 CRC-32C before the last write-back | 8 CRC-32C of bytes 0..8 | 12.. zero
/// ```
///
/// All zeros: never written (a slot never allocated since the region was formatted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrcEntry {
    /// CRC-32C of the page as the last write-back left it.
    pub crc: u32,
    /// CRC-32C of the page before that write-back: a crash that cut it short (its log
    /// record not durable) leaves the page matching this one.
    pub prev: u32,
}

impl CrcEntry {
    /// The entry's line as stored: both CRCs and the CRC-32C of those 8 bytes, zeros
    /// after.
    pub fn encode(&self) -> [u8; CRC_ENTRY_BYTES] {
        let mut b = [0u8; CRC_ENTRY_BYTES];
        b[0..4].copy_from_slice(&self.crc.to_le_bytes());
        b[4..8].copy_from_slice(&self.prev.to_le_bytes());
        let check = crc32c::crc32c(&b[0..8]);
        b[8..12].copy_from_slice(&check.to_le_bytes());
        b
    }

    /// `None` for a never-written entry.
    ///
    /// # Errors
    /// A description of the damage when the entry fails its own check.
    pub fn decode(b: &[u8; CRC_ENTRY_BYTES]) -> Result<Option<CrcEntry>, String> {
        if b.iter().all(|&x| x == 0) {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let (stored, computed) = (u32_at(8), crc32c::crc32c(&b[0..8]));
        if stored != computed || b[12..].iter().any(|&x| x != 0) {
            return Err(format!("its CRC entry fails its check (CRC-32C {stored:#010x}, computed {computed:#010x})"));
        }
        Ok(Some(CrcEntry { crc: u32_at(0), prev: u32_at(4) }))
    }
}

/// Where the after-images of written-back lines go before the lines are written in
/// place (the write-ahead rule of an engine without a buffer).
pub trait WriteBackLog: Send + Sync {
    /// Logs the new contents of `runs` — `(first line, bytes of whole lines)` — of page
    /// `pid` as one record, durably; returns its LSN.
    ///
    /// # Errors
    /// The log's errors: the lines are then not written and the pages are poisoned.
    fn log_lines(&self, pid: PageId, runs: &[(usize, &[u8])]) -> Result<Lsn, crate::wal::WalError>;

    /// The LSN the next record will get: a guard that starts changing a page takes it
    /// as a bound below every record its changes will need (see
    /// `DirectPages::oldest_pending`).
    fn next_lsn(&self) -> Lsn;
}

/// Per-slot state. One cache line each.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct DirectMeta {
    /// The slot's latch: guards are made only by taking it.
    pub latch: Latch,
    /// The last LSN a change to the page was logged at.
    pub page_lsn: AtomicU64,
    /// The page's CRC-32C, while `crc_state` is known.
    pub crc: AtomicU32,
    /// Whether `crc` is known (see the module doc).
    pub crc_state: AtomicU8,
}

/// Counters of in-place writing.
#[derive(Debug, Default)]
pub struct DirectCounters {
    /// Exclusive holds whose changed lines were written in place and persisted.
    pub write_backs: AtomicU64,
    /// 64-byte lines written in place by those write-backs (only lines that changed).
    pub lines_written: AtomicU64,
    /// 64-byte lines copied from NVM into a write guard's DRAM shadow.
    pub lines_staged: AtomicU64,
    /// After-image records appended to the attached log, one per write-back.
    pub images_logged: AtomicU64,
}

/// The page slots of an NVM region, with their latches and the write-back path.
pub struct DirectPages {
    nvm: NvmRegion,
    /// The first slot's first byte in the mapping.
    base: NonNull<u8>,
    data_offset: u64,
    /// Where the CRC table starts in the region (slot `s`'s entry at `+ s * 64`).
    crc_offset: u64,
    page_size: usize,
    verify: NvmVerify,
    /// From a reopen until the log is attached: redo may find pages torn by the crash
    /// (see the module doc).
    redo: AtomicBool,
    metas: Box<[DirectMeta]>,
    shadows: Mutex<Vec<Box<[u8]>>>,
    cpu_cache: CpuCacheModel,
    log: RwLock<Option<Arc<dyn WriteBackLog>>>,
    meta_lock: Mutex<()>,
    /// Guards holding changes not yet written back, by the log's next LSN when each
    /// began changing its page → how many began there.
    pending: Mutex<std::collections::BTreeMap<Lsn, u32>>,
    poisoned: AtomicBool,
    poison_why: Mutex<Option<String>>,
    /// Counters of in-place writing, bumped with relaxed atomics.
    pub counters: DirectCounters,
}

// SAFETY: the raw pointer targets the mapping `nvm` owns for the pages' whole life;
// all access to it goes through slot latches (or the seqlock protocol of optimistic
// guards).
unsafe impl Send for DirectPages {}
// SAFETY: as for Send.
unsafe impl Sync for DirectPages {}

impl DirectPages {
    /// Slots of `page_size` bytes from `data_offset` to the end of the region, their
    /// CRC entries from `crc_offset`, reads charged through a CPU-cache model of
    /// `cpu_cache_bytes` and checked as `verify` says. `reopened`: the slots hold pages
    /// from before (checked before first use; redo until [`end_redo`](Self::end_redo)).
    ///
    /// # Panics
    /// If the data area is not page-aligned inside the region, the CRC table does not
    /// fit below it, or `page_size` is not a multiple of the line size up to the
    /// largest page (the source checks first).
    pub fn new(
        nvm: NvmRegion,
        data_offset: u64,
        crc_offset: u64,
        page_size: usize,
        cpu_cache_bytes: u64,
        verify: NvmVerify,
        reopened: bool,
    ) -> DirectPages {
        assert!(page_size.is_multiple_of(LINE) && page_size <= PAGE_SIZE_MAX_BYTES, "page size {page_size}");
        assert!(data_offset.is_multiple_of(LINE as u64) && data_offset <= nvm.size_bytes(), "data offset");
        let slots = ((nvm.size_bytes() - data_offset) / page_size as u64) as usize;
        assert!(
            crc_offset.is_multiple_of(LINE as u64) && crc_offset + (slots * CRC_ENTRY_BYTES) as u64 <= data_offset,
            "CRC table at {crc_offset} for {slots} slots below {data_offset}"
        );
        let base = NonNull::new(nvm.base_ptr().wrapping_add(data_offset as usize)).expect("mapping is not null");
        DirectPages {
            // Every slot starts unknown (`CRC_UNKNOWN` is 0): a reopened one is checked
            // against its entry before first use, a new region's slots are written whole
            // when allocated.
            metas: (0..slots).map(|_| DirectMeta::default()).collect(),
            nvm,
            base,
            data_offset,
            crc_offset,
            page_size,
            verify,
            redo: AtomicBool::new(reopened),
            shadows: Mutex::new(Vec::new()),
            cpu_cache: CpuCacheModel::new(cpu_cache_bytes),
            log: RwLock::new(None),
            meta_lock: Mutex::new(()),
            pending: Mutex::new(std::collections::BTreeMap::new()),
            poisoned: AtomicBool::new(false),
            poison_why: Mutex::new(None),
            counters: DirectCounters::default(),
        }
    }

    /// The NVM region the slots live in.
    pub fn nvm(&self) -> &NvmRegion {
        &self.nvm
    }

    /// Where the slots start in the region: below are the header and allocation map.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Number of page slots (fixed when the region was opened).
    pub fn slots(&self) -> usize {
        self.metas.len()
    }

    /// Bytes per page (and per slot).
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Slot `slot`'s latch, version, page LSN and CRC state.
    ///
    /// # Panics
    /// If `slot` is not below [`slots`](Self::slots).
    pub fn meta(&self, slot: u32) -> &DirectMeta {
        &self.metas[slot as usize]
    }

    /// Attaches (or detaches) the log that write-backs go through.
    pub fn set_log(&self, log: Option<Arc<dyn WriteBackLog>>) {
        *self.log.write() = log;
    }

    /// The lowest LSN that a change not yet written back may need in the log: records
    /// below it describe only changes that are in NVM (the log may be truncated there).
    /// `None` when no guard holds unwritten changes.
    pub fn oldest_pending(&self) -> Option<Lsn> {
        self.pending.lock().keys().next().copied()
    }

    fn pending_begin(&self) -> Option<Lsn> {
        let lsn = self.log.read().as_ref()?.next_lsn();
        *self.pending.lock().entry(lsn).or_insert(0) += 1;
        Some(lsn)
    }

    fn pending_end(&self, lsn: Lsn) {
        let mut p = self.pending.lock();
        if let Some(n) = p.get_mut(&lsn) {
            *n -= 1;
            if *n == 0 {
                p.remove(&lsn);
            }
        }
    }

    /// An error if an earlier write-back failed: the NVM pages may then lack changes
    /// the tree made, so nothing more is served until the database is reopened (and
    /// recovered from the log).
    #[inline]
    pub fn check_poison(&self) -> Result<(), BufferError> {
        if self.poisoned.load(Ordering::Relaxed) {
            let why = self.poison_why.lock().clone().unwrap_or_default();
            return Err(BufferError::Stopped {
                store: "nvm-direct",
                what: format!("a write-back failed ({why}); reopen to recover"),
            });
        }
        Ok(())
    }

    fn poison(&self, why: String) {
        *self.poison_why.lock() = Some(why);
        self.poisoned.store(true, Ordering::Relaxed);
    }

    /// Where slot `slot` starts in the region.
    #[inline]
    pub fn slot_offset(&self, slot: u32) -> u64 {
        self.data_offset + slot as u64 * self.page_size as u64
    }

    /// The slot's bytes.
    ///
    /// # Safety
    /// The caller holds the slot's latch (or reads optimistically and validates).
    #[inline]
    unsafe fn bytes(&self, slot: u32) -> &[u8] {
        debug_assert!((slot as usize) < self.metas.len());
        // SAFETY: the slot lies inside the mapping (checked at construction); writers
        // are excluded per the caller's contract.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(slot as usize * self.page_size), self.page_size) }
    }

    /// Charges a read of `off..off + len` of `slot` through the CPU-cache model.
    #[inline]
    fn charge(&self, slot: u32, off: usize, len: usize) {
        self.cpu_cache.charge(&self.nvm, self.slot_offset(slot) + off as u64, len as u64);
    }

    /// Charges the loads of a binary search of `slot`'s node.
    fn charge_search(&self, slot: u32) {
        self.cpu_cache.charge_search(&self.nvm, self.slot_offset(slot), self.page_size);
    }

    fn take_shadow(&self) -> Box<[u8]> {
        self.shadows.lock().pop().unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice())
    }

    fn give_shadow(&self, b: Box<[u8]>) {
        let mut s = self.shadows.lock();
        if s.len() < SHADOWS_KEPT_MAX {
            s.push(b);
        }
    }

    /// Takes the slot shared, waiting for a writer, and checks the page if due
    /// ([`check_before_read`](Self::check_before_read)); `charge_page` charges a read of
    /// the whole page (a shared fix is a scan's), else each line read is charged as made.
    ///
    /// # Errors
    /// `Corrupted` if the page fails its check.
    pub fn read(&self, slot: u32, pid: PageId, charge_page: bool) -> Result<DirectRead<'_>, BufferError> {
        let latch = &self.meta(slot).latch;
        latch.shared();
        if let Err(e) = self.check_before_read(slot, pid) {
            latch.unlock_shared();
            return Err(e);
        }
        if charge_page {
            self.charge(slot, 0, self.page_size);
        }
        Ok(DirectRead { pages: self, slot, pid })
    }

    /// Reads the slot optimistically, waiting while a writer holds it; charges a node
    /// search. A check that is due is made first, under the shared latch.
    ///
    /// # Errors
    /// `Corrupted` if the page fails its check.
    pub fn optimistic(&self, slot: u32, pid: PageId) -> Result<DirectOptimistic<'_>, BufferError> {
        let meta = self.meta(slot);
        if self.check_due(slot) {
            drop(self.read(slot, pid, false)?);
        }
        let mut spins = 0u32;
        loop {
            if let Some(version) = meta.latch.optimistic() {
                self.charge_search(slot);
                return Ok(DirectOptimistic { pages: self, slot, version });
            }
            crate::page::latch::backoff(&mut spins);
        }
    }

    /// Takes the slot exclusive, waiting for every holder, and checks the page if due.
    ///
    /// # Errors
    /// `Corrupted` if the page fails its check.
    pub fn write(&self, slot: u32, pid: PageId) -> Result<DirectWrite<'_>, BufferError> {
        let g = self.write_unchecked(slot, pid);
        self.check_before_read(slot, pid)?;
        Ok(g)
    }

    /// Whether [`check_before_read`](Self::check_before_read) would check the slot now.
    #[inline]
    fn check_due(&self, slot: u32) -> bool {
        match self.verify {
            NvmVerify::Off => false,
            NvmVerify::Cheap => self.meta(slot).crc_state.load(Ordering::Relaxed) == CRC_UNKNOWN,
            NvmVerify::Every => true,
        }
    }

    /// Checks slot `slot`'s page against its CRC if the verify mode asks for it now:
    /// every time with `Every`, else once, before its first use after a reopen. The
    /// caller holds the slot's latch.
    ///
    /// # Errors
    /// `Corrupted` naming the region file, the slot and the page.
    #[inline]
    pub fn check_before_read(&self, slot: u32, pid: PageId) -> Result<(), BufferError> {
        if self.check_due(slot) { self.check_slot(slot, pid) } else { Ok(()) }
    }

    /// Checks the page in `slot` (charged as a read of the page) against its known CRC
    /// or, the first time after a reopen, against either CRC of its entry. During redo
    /// a failure only defers the slot (see the module doc). The caller holds the slot's
    /// latch.
    ///
    /// # Errors
    /// `Corrupted` naming the region file, the slot and the page.
    #[cold]
    pub fn check_slot(&self, slot: u32, pid: PageId) -> Result<(), BufferError> {
        let m = self.meta(slot);
        let state = m.crc_state.load(Ordering::Relaxed);
        if state == CRC_DEFERRED {
            return Ok(());
        }
        self.charge(slot, 0, self.page_size);
        // SAFETY: the caller holds the slot's latch.
        let crc = crc32c::crc32c(unsafe { self.bytes(slot) });
        if state == CRC_KNOWN {
            let want = m.crc.load(Ordering::Relaxed);
            if crc == want {
                return Ok(());
            }
            return Err(self.corrupted(slot, pid, format!("data CRC-32C {crc:#010x}, expected {want:#010x}")));
        }
        let detail = match self.read_entry(slot) {
            Ok(Some(e)) if crc == e.crc || crc == e.prev => {
                m.crc.store(crc, Ordering::Relaxed);
                m.crc_state.store(CRC_KNOWN, Ordering::Relaxed);
                return Ok(());
            }
            Ok(Some(e)) => format!(
                "data CRC-32C {crc:#010x}, its entry says {:#010x} (before the last write-back {:#010x})",
                e.crc, e.prev
            ),
            Ok(None) => "its CRC entry was never written".to_string(),
            Err(why) => why,
        };
        if self.redo.load(Ordering::Relaxed) {
            m.crc_state.store(CRC_DEFERRED, Ordering::Relaxed);
            return Ok(());
        }
        Err(self.corrupted(slot, pid, detail))
    }

    fn corrupted(&self, slot: u32, pid: PageId, detail: String) -> BufferError {
        BufferError::Corrupted {
            pid,
            location: format!("nvm-direct slot {slot} of {}", self.nvm.info().path.display()),
            detail,
        }
    }

    /// Slot `slot`'s CRC entry.
    ///
    /// # Errors
    /// A description of the damage for an entry that fails its own check; device errors
    /// as text.
    fn read_entry(&self, slot: u32) -> std::result::Result<Option<CrcEntry>, String> {
        let mut b = [0u8; CRC_ENTRY_BYTES];
        self.nvm.read_lines(self.entry_offset(slot), &mut b).map_err(|e| e.to_string())?;
        CrcEntry::decode(&b)
    }

    /// Writes and persists slot `slot`'s CRC entry; the caller holds the slot exclusive.
    fn write_entry(&self, slot: u32, e: CrcEntry) -> Result<(), BufferError> {
        let at = self.entry_offset(slot);
        // SAFETY: a slot's entry line is written only by the slot's exclusive holder,
        // which the caller is; no guard reads it while that latch is held.
        unsafe { self.nvm.write_lines_shared(at, &e.encode()) }?;
        self.nvm.persist(at, CRC_ENTRY_BYTES as u64)?;
        Ok(())
    }

    #[inline]
    fn entry_offset(&self, slot: u32) -> u64 {
        self.crc_offset + slot as u64 * CRC_ENTRY_BYTES as u64
    }

    /// Redo is over (the log is attached): the slots that failed their check during it
    /// are checked again before their next use.
    pub fn end_redo(&self) {
        if self.redo.swap(false, Ordering::Relaxed) {
            for m in self.metas.iter() {
                let _ = m.crc_state.compare_exchange(CRC_DEFERRED, CRC_UNKNOWN, Ordering::Relaxed, Ordering::Relaxed);
            }
        }
    }

    /// What is checked against the pages' CRCs.
    pub fn verify(&self) -> NvmVerify {
        self.verify
    }

    /// Takes the slot exclusive, waiting for every holder, without a check.
    fn write_unchecked(&self, slot: u32, pid: PageId) -> DirectWrite<'_> {
        self.meta(slot).latch.exclusive();
        // The exclusive mark must be visible before the write-back's stores to an
        // optimistic reader who sees one of them.
        fence(Ordering::Release);
        DirectWrite {
            pages: self,
            slot,
            pid,
            shadow: None,
            resident: [0; MASK_WORDS],
            dirty: [0; MASK_WORDS],
            wrote: false,
            lines: self.page_size / LINE,
            pending_since: None,
            image_logged: false,
        }
    }

    /// Takes the slot exclusive for a page being allocated: the guard starts as a zero
    /// page, all lines to be compared with NVM at write-back.
    pub fn write_zeroed(&self, slot: u32, pid: PageId) -> DirectWrite<'_> {
        let mut g = self.write_unchecked(slot, pid);
        let mut shadow = self.take_shadow();
        shadow.fill(0);
        g.shadow = Some(shadow);
        g.set_all(true);
        g.begin_changes();
        g
    }

    /// Sets byte `at` of the region's metadata area (before the first slot) to `value`
    /// and persists its line: a read-modify-write of the line under a lock of its own.
    ///
    /// # Errors
    /// An offset inside the slots; device errors.
    pub fn set_meta_byte(&self, at: u64, value: u8) -> Result<(), BufferError> {
        if at >= self.data_offset {
            return Err(BufferError::Config { what: format!("metadata byte {at} lies in the page slots") });
        }
        let _held = self.meta_lock.lock();
        let line_at = at / LINE as u64 * LINE as u64;
        let mut line = [0u8; LINE];
        self.nvm.copy_out(line_at, &mut line)?;
        line[(at - line_at) as usize] = value;
        // SAFETY: metadata lines are written only here, under `meta_lock`; they are not
        // part of any slot, so no guard touches them.
        unsafe { self.nvm.write_lines_shared(line_at, &line) }?;
        self.nvm.persist(line_at, LINE as u64)?;
        Ok(())
    }
}
