//! Opening a buffer manager, in numbered steps: the SSD file and its superblock, the
//! NVM pool (reused, or formatted and why), the policy and its shape, the DRAM frames,
//! then the page table rebuilt from what NVM and the free-page list hold. Also bulk-load
//! mode, which changes where evicted pages go while a database is loaded.

use super::free_list::FreePages;
use crate::ByteSize;
use crate::Result;
use crate::buffer::BufferError;
use crate::buffer::nvm_pool::NvmPool;
use crate::buffer::table::Entry;
use crate::buffer::table::PageTable;
use crate::buffer::techniques::Techniques;
use crate::counters::BufferCounters;
use crate::counters::Count;
use crate::device::DramArena;
use crate::device::NvmRegion;
use crate::device::OpenMode;
use crate::device::SsdFile;
use crate::ids::{AtomicLsn, Lsn, NvmSlot, PageId};
use crate::limits::EVICT_BATCH_FRAMES_PER_PAGE;
use crate::limits::PAGE_SIZE_MAX_BYTES;
use crate::limits::PAGE_SIZE_MIN_BYTES;
use crate::page::frame::FrameId;
use crate::page::frame::FramePool;
use crate::page::source::{ExclusivePage, PageSource};
use crate::policy;
use crate::policy::Event;
use crate::policy::Tiers;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use super::{BufferConfig, BufferManager, MIN_DRAM_FRAMES, RestartInfo, provider};

impl BufferManager {
    /// Builds the tiers and, for a new database, allocates the catalog page; for an
    /// existing one (SSD opened with [`OpenMode::Open`]) reads the superblock and the
    /// free-page list.
    ///
    /// # Errors
    /// `Config` for an impossible configuration (bad page size, no lower tier to evict
    /// to is fine, but a DRAM pool of fewer than [`MIN_DRAM_FRAMES`] frames is not);
    /// device errors; `PageSizeMismatch` when the existing file has another page size.
    pub fn open(cfg: &BufferConfig) -> Result<BufferManager, BufferError> {
        let ps = cfg.page_size;
        if !ps.is_power_of_two() || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&ps) {
            return Err(BufferError::Config {
                what: format!(
                    "page size {ps} must be a power of two from {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
                ),
            });
        }
        let mut dram = cfg.dram.clone();
        dram.frame_bytes = ps;
        cfg.techniques.validate()?;
        if cfg.techniques != Techniques::NONE && cfg.nvm.is_none() {
            return Err(BufferError::Config {
                what: format!("techniques {} work between DRAM and NVM, and there is no NVM tier", cfg.techniques),
            });
        }
        let frames = FramePool::with_minis(DramArena::new(&dram)?, cfg.techniques.mini_pages);
        if frames.len() < MIN_DRAM_FRAMES {
            return Err(BufferError::Config {
                what: format!(
                    "DRAM of {} holds {} frames of {ps} bytes; the buffer manager needs at least {MIN_DRAM_FRAMES}",
                    dram.size,
                    frames.len()
                ),
            });
        }
        let ssd = match &cfg.ssd {
            None => None,
            Some(s) => {
                let mut s = s.clone();
                s.page_size = ps;
                s.double_write = cfg.double_write;
                Some(match cfg.ssd_open_mode {
                    OpenMode::Create => SsdFile::create(&s)?,
                    OpenMode::Open => SsdFile::open(&s)?,
                    OpenMode::OpenOrCreate if s.path.exists() => SsdFile::open(&s)?,
                    OpenMode::OpenOrCreate => SsdFile::create(&s)?,
                })
            }
        };
        let db_id = ssd.as_ref().map_or(0, |s| s.superblock().db_id);
        // A policy that keeps clean copies only runs NVM as a volatile cache: it needs
        // SSD below it, no technique that writes NVM in place, and never reuses the pool.
        let probe = policy::by_name(&cfg.policy, 1, &cfg.nvcache, cfg.policy_seed)?;
        let probe = probe.shape();
        let volatile_nvm = probe.nvm_clean_only && cfg.nvm.is_some();
        // A durable NVM cache (`nvsql`) keeps dirty pages in NVM across checkpoints: a
        // pool it cannot reuse may have held the only copy of committed changes.
        let durable_nvm = probe.nvm_durable_cache && cfg.nvm.is_some();
        if volatile_nvm && (ssd.is_none() || cfg.techniques != Techniques::NONE) {
            return Err(BufferError::Config {
                what: format!(
                    "policy {} keeps only clean copies in NVM: it needs an SSD tier and no techniques (got {})",
                    cfg.policy, cfg.techniques
                ),
            });
        }
        let nvm_only = ssd.is_none() && cfg.nvm.is_some() && cfg.reopen_nvm_only;
        let existing = ssd.as_ref().is_some_and(|s| s.superblock().catalog_root != 0) || nvm_only;
        let mut restart = None;
        let mut nvm_pages = Vec::new();
        let nvm = match &cfg.nvm {
            None => None,
            Some(n) => {
                let pool_missing = !n.path.exists();
                if existing && nvm_only && pool_missing {
                    // The pool is the database: a new one would be an empty database.
                    return Err(BufferError::Config {
                        what: format!("cannot reopen the database in {}: the file is missing", n.path.display()),
                    });
                }
                let region = NvmRegion::open(n)?;
                let verify = cfg.nvm_verify;
                // The pool of an existing database formatted: say why, and for a durable
                // cache redo from the oldest record kept, which the last checkpoint kept
                // for the oldest change only NVM held (`docs/wal.md`, "Creation").
                let formatted = |why: String| RestartInfo {
                    formatted_because: Some(format!("{}: {why}", n.path.display())),
                    log_needed_from: durable_nvm.then_some(Lsn::NONE),
                    ..RestartInfo::default()
                };
                if existing && volatile_nvm {
                    restart = Some(RestartInfo {
                        formatted_because: Some(format!("policy {}: the NVM cache is volatile", cfg.policy)),
                        ..RestartInfo::default()
                    });
                    Some(NvmPool::format(region, ps, db_id, verify)?)
                } else if existing && (cfg.reuse_nvm || nvm_only) {
                    match NvmPool::reopen(region, ps, db_id, verify, ssd.is_some())? {
                        Ok(r) => {
                            let frames = r.pool.len();
                            restart = Some(RestartInfo {
                                nvm_frames: frames,
                                pages_reused: 0,
                                frames_cleared: r.cleared.iter().map(|(n, why)| format!("frame {n}: {why}")).collect(),
                                log_needed_from: r.log_needed_from,
                                frames_discarded: 0,
                                page_lsn_max: None,
                                scan_secs: r.scan_secs,
                                frames_gb_per_sec: (frames * ps) as f64 / r.scan_secs.max(1e-9) / 1e9,
                                formatted_because: None,
                            });
                            nvm_pages = r.pages;
                            Some(r.pool)
                        }
                        Err((_, why)) if nvm_only => {
                            // The pool is the database: formatting it would lose it.
                            return Err(BufferError::Config {
                                what: format!("cannot reopen the database in {}: {why}", n.path.display()),
                            });
                        }
                        Err((region, why)) => {
                            let why = if pool_missing { "the file was missing".to_string() } else { why };
                            restart = Some(formatted(why));
                            Some(NvmPool::format(region, ps, db_id, verify)?)
                        }
                    }
                } else {
                    if existing && durable_nvm {
                        restart = Some(formatted("reusing the pool is turned off (reuse_nvm)".into()));
                    }
                    Some(NvmPool::format(region, ps, db_id, verify)?)
                }
            }
        };
        let mut nvm = nvm;
        if volatile_nvm && let Some(pool) = nvm.as_mut() {
            pool.set_volatile();
        }
        let nvm_frames = nvm.as_ref().map_or(0, NvmPool::len);
        let admission = cfg.admission_set_pages.unwrap_or(policy::Hymem::default_capacity(nvm_frames));
        let policy = policy::by_name(&cfg.policy, admission, &cfg.nvcache, cfg.policy_seed)?;
        let shape = policy.shape();
        let in_place_reads = nvm_frames > 0 && shape.in_place;
        if in_place_reads && let Some(nvm) = &nvm {
            if cfg.prefetch_lines > crate::limits::PREFETCH_LINES_MAX {
                return Err(BufferError::Config {
                    what: format!(
                        "prefetch of {} lines after an in-place read is more than {}",
                        cfg.prefetch_lines,
                        crate::limits::PREFETCH_LINES_MAX
                    ),
                });
            }
            if cfg.cpu_cache_model_bytes > crate::page::frame::cpu_cache::CPU_CACHE_MODEL_MAX_BYTES {
                return Err(BufferError::Config {
                    what: format!(
                        "a CPU cache model of {} is larger than {}",
                        ByteSize(cfg.cpu_cache_model_bytes),
                        ByteSize(crate::page::frame::cpu_cache::CPU_CACHE_MODEL_MAX_BYTES)
                    ),
                });
            }
            nvm.set_cpu_cache_model(cfg.cpu_cache_model_bytes);
            nvm.set_prefetch_lines(cfg.prefetch_lines);
        }
        let tiers = Tiers { has_nvm: nvm.is_some(), has_ssd: ssd.is_some(), dram_frames: frames.len(), nvm_frames };
        // Without SSD every page must have a home in NVM; without both, in DRAM.
        let capacity_pages = match (&ssd, &nvm) {
            (Some(_), _) => cfg.max_pages.saturating_sub(1),
            (None, Some(n)) => n.len() as u64,
            (None, None) => frames.len() as u64,
        };
        let (next_pid, pages_allocated) = match &ssd {
            Some(s) if s.superblock().catalog_root != 0 => {
                let sb = s.superblock();
                (sb.pages_allocated, sb.pages_allocated)
            }
            // Without SSD, the pages are those the pool holds.
            None if nvm_only => {
                let high = nvm_pages.iter().map(|(_, h)| h.pid.0).max().unwrap_or(0);
                // A frame a crash tore may have held the catalog: the log rebuilds it
                // (a database on NVM logs a page's image before each write-back).
                let torn = restart.as_ref().is_some_and(|r: &RestartInfo| !r.frames_cleared.is_empty());
                if high < PageId::CATALOG.0 && !torn {
                    return Err(BufferError::Config {
                        what: "the NVM pool holds no page: no database to reopen (it was never closed?)".into(),
                    });
                }
                let high = high.max(PageId::CATALOG.0);
                (high + 1, high + 1)
            }
            _ => (PageId::CATALOG.0, 0),
        };
        if next_pid > cfg.max_pages {
            return Err(BufferError::Config {
                what: format!("the database has {next_pid} pages, more than the page table's {} ", cfg.max_pages),
            });
        }
        if cfg.evict_batch == 0 {
            return Err(BufferError::Config { what: "evict_batch is 0: evict at least 1 page at a time".into() });
        }
        let evict_batch =
            if ssd.is_some() { cfg.evict_batch.min(frames.len() / EVICT_BATCH_FRAMES_PER_PAGE).max(1) } else { 1 };
        let nvm_clean_batch = match (&nvm, &ssd) {
            (Some(n), Some(_)) => cfg.evict_batch.min(n.len() / EVICT_BATCH_FRAMES_PER_PAGE).max(1),
            _ => 1,
        };
        let free_frames = Mutex::new((0..frames.len() as u32).rev().map(FrameId::new).collect());
        let provider_target = provider::target(frames.len(), evict_batch);
        let provider_nvm_target = match (&nvm, &ssd) {
            (Some(n), Some(_)) => provider::target(n.len(), nvm_clean_batch),
            _ => 0,
        };
        let bm = BufferManager {
            page_size: ps,
            frames,
            free_frames,
            hand: AtomicUsize::new(0),
            nvm,
            ssd,
            ssd_grow: Mutex::new(()),
            table: PageTable::new(cfg.max_pages),
            policy,
            shape,
            tiers,
            next_pid: AtomicU64::new(next_pid),
            freed: Mutex::new(FreePages::default()),
            free_list_write: Mutex::new(()),
            capacity_pages,
            counters: BufferCounters::new(),
            bulk_load: std::sync::atomic::AtomicBool::new(false),
            techniques: cfg.techniques,
            debug_lines: cfg.debug_lines,
            swizzled: Mutex::new(std::collections::HashMap::new()),
            restart: Mutex::new(None),
            log: std::sync::OnceLock::new(),
            flush_notes: Mutex::new(Vec::new()),
            checkpoint_starts: Mutex::new(std::collections::VecDeque::new()),
            stopped: std::sync::atomic::AtomicBool::new(false),
            stop_reason: Mutex::new(None),
            in_place_reads,
            recorder: std::sync::OnceLock::new(),
            evict_batch,
            provider: Mutex::new(None),
            provider_on: std::sync::atomic::AtomicBool::new(false),
            provider_target,
            provider_nvm_target,
            nvm_clean_batch,
        };
        if cfg.nvm_file_io
            && let Some(nvm) = &bm.nvm
        {
            nvm.set_file_io(true);
        }
        bm.policy.observe(Event::DatabaseSize(next_pid.saturating_sub(1)));
        if pages_allocated == 0 {
            let catalog = bm.allocate()?.page_id();
            assert_eq!(catalog, PageId::CATALOG, "the first page allocated is the catalog");
        } else if nvm_only {
            // Page ids below the highest that no frame holds were freed.
            let held: std::collections::HashSet<u64> = nvm_pages.iter().map(|(_, h)| h.pid.0).collect();
            let torn = restart.as_ref().is_some_and(|r| !r.frames_cleared.is_empty());
            if !held.contains(&PageId::CATALOG.0) && !torn {
                return Err(BufferError::Corrupted {
                    pid: PageId::CATALOG,
                    location: "the NVM pool".into(),
                    detail: "the catalog page is in no frame".into(),
                });
            }
            let free: Vec<PageId> =
                (PageId::CATALOG.0 + 1..next_pid).rev().filter(|p| !held.contains(p)).map(PageId).collect();
            for &pid in &free {
                bm.table.set_free(pid);
            }
            bm.freed.lock().ready = free;
        } else {
            bm.read_free_list()?;
        }
        if let Some(mut info) = restart {
            info.pages_reused = nvm_pages.len();
            if nvm_only && !info.frames_cleared.is_empty() {
                // The page a cleared frame held has no other copy: redo rebuilds it from
                // its last image in the log (`log_nvm_images`), found by scanning all of it.
                info.log_needed_from = Some(Lsn::NONE);
            }
            let freed: std::collections::HashSet<PageId> = bm.freed.lock().all().collect();
            let limit = bm.next_pid.load(Ordering::Relaxed);
            let nvm = bm.nvm.as_ref().expect("a restart info implies NVM");
            // Of two frames naming one page, only the one written last can be the
            // page's state: the other goes with the frames of pages not in it.
            let mut newest: std::collections::HashMap<u64, (Lsn, NvmSlot)> = std::collections::HashMap::new();
            for (n, h) in &nvm_pages {
                let e = newest.entry(h.pid.0).or_insert((h.written_lsn, *n));
                if h.written_lsn > e.0 {
                    *e = (h.written_lsn, *n);
                }
            }
            for (n, h) in nvm_pages {
                // A page the database no longer has (freed, or past its allocation
                // mark), or an older copy of one: not a page of this database's state.
                if h.pid.0 == 0
                    || h.pid.0 >= limit
                    || freed.contains(&h.pid)
                    || newest.get(&h.pid.0).is_some_and(|&(_, best)| best != n)
                    || bm.table.get(h.pid)? != Entry::Empty
                {
                    nvm.discard(n)?;
                    info.pages_reused -= 1;
                    info.frames_discarded += 1;
                    continue;
                }
                if info.page_lsn_max.is_none_or(|(_, lsn)| h.page_lsn > lsn) {
                    info.page_lsn_max = Some((h.pid, h.page_lsn));
                }
                bm.table.set(h.pid, Entry::Nvm(n));
            }
            *bm.restart.lock() = Some(info);
        }
        Ok(bm)
    }

    /// Bulk-load mode: while on, a DRAM victim the policy sends to SSD goes into a
    /// *free* NVM frame instead, if there is one. A load fills the database in key
    /// order, so without this NVM would start the measured run empty and need a long
    /// warm-up to fill through the admission set; with it, NVM starts as a warmed-up
    /// cache of the most recently loaded pages. No page is ever evicted from NVM on
    /// this account. Off by default; workload drivers turn it on for their load phase
    /// only and say so in their reports.
    ///
    /// Turning it off also copies the dirty DRAM pages that have no NVM frame into free
    /// NVM frames (they stay in DRAM, clean, backed by NVM): the pages a load leaves in
    /// DRAM would otherwise be written to SSD on their first eviction and read back from
    /// there. Call it with no other thread using the buffer manager.
    ///
    /// # Errors
    /// Device errors while copying to NVM (the pages stay dirty in DRAM).
    pub fn set_bulk_load(&self, on: bool) -> Result<(), BufferError> {
        self.record_marker(if on { "bulk-load-on" } else { "bulk-load-off" });
        self.bulk_load.store(on, Ordering::Relaxed);
        let (Some(nvm), Some(_), false) = (&self.nvm, &self.ssd, on) else { return Ok(()) };
        if self.shape.nvm_clean_only {
            return Ok(()); // dirty pages never go to a clean-only NVM cache
        }
        for i in 0..self.frames.len() {
            let f = FrameId::from_index(i);
            let meta = self.frames.meta(f);
            if !meta.holds_page() || meta.nvm_slot().is_some() {
                continue;
            }
            let Some(n) = nvm.pop_free() else { break };
            let g = self.frames.write(f);
            let pid = g.meta().pid();
            if !meta.holds_page() || !meta.dirty.load(Ordering::Relaxed) || meta.nvm_slot().is_some() {
                nvm.detach(n);
                continue;
            }
            let written = self.force_log(meta.page_lsn.load_lsn(Ordering::Relaxed)).and_then(|()| {
                nvm.write_page(
                    n,
                    PageId(pid),
                    &self.stored_image(f, &g),
                    true,
                    meta.page_lsn.load_lsn(Ordering::Relaxed),
                )
            });
            if let Err(e) = written {
                nvm.detach(n);
                return Err(e);
            }
            meta.set_nvm_slot(Some(n));
            meta.dirty.store(false, Ordering::Relaxed);
            self.count_page_to_nvm();
            self.counters.bump(Count::NvmAdmissions);
        }
        Ok(())
    }
}
