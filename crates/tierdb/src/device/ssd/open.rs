//! Creating and opening the page file: the superblock checks, the format upgrade,
//! and the double-write areas found on open (their copies restored in place before
//! anything else is written).
//!
//! Runs before the handle is shared: no other thread sees the file until `create` or
//! `open` returns, so nothing here takes more than the superblock lock.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64};

use super::{DEVICE, DirectIo, Meta, POISON_DOUBLE_WRITE, POISON_NONE, SsdConfig, SsdFile, SsdInfo};
use crate::device::aligned::AlignedBuf;
use crate::device::double_write::{self, DoubleWrite, DoubleWriteMode, SlotCopy, TornPageRecovery};
use crate::device::page_seal::{self, Sealed};
use crate::device::superblock::{FORMAT_VERSION, MAGIC, SlotError, Superblock};
use crate::device::{DeviceCore, DeviceError, Tier};
use crate::limits::{
    IO_ALIGN_BYTES, PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES, SUPERBLOCK_SLOT_BYTES, SUPERBLOCK_SLOTS,
};

impl SsdFile {
    /// Creates a new page file holding only its superblock, and with
    /// [`SsdConfig::double_write`] its double-write file (replacing a file of that name:
    /// it can only belong to a page file that no longer exists).
    ///
    /// # Errors
    /// `Config` for a bad page size or profile; `AlreadyExists` if the file exists
    /// (it is left untouched); `Create` if it cannot be created; `Unsupported` if
    /// `O_DIRECT` is required but refused; `Io`/`Full` for the first write.
    pub fn create(cfg: &SsdConfig) -> Result<SsdFile, DeviceError> {
        let core = validate(cfg)?;
        OpenOptions::new().write(true).create_new(true).open(&cfg.path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                DeviceError::AlreadyExists { path: cfg.path.clone() }
            } else {
                DeviceError::Create { path: cfg.path.clone(), source: e }
            }
        })?;
        let result = (|| {
            let (file, info) = open_file(cfg)?;
            let now =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let sb = Superblock::new(cfg.page_size as u32, random_id(), now);
            let db_id = sb.db_id;
            let mut slots = [0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
            for slot in slots.chunks_exact_mut(SUPERBLOCK_SLOT_BYTES) {
                slot.copy_from_slice(&sb.encode());
            }
            crate::device::nvm::allocate(&file, cfg.page_size as u64)
                .map_err(|e| DeviceError::io("fallocate", &cfg.path, cfg.page_size as u64, e))?;
            let mut ssd = SsdFile {
                file,
                info,
                page_size: cfg.page_size,
                page_count: AtomicU64::new(1),
                meta: Mutex::new(Meta { sb, slots }),
                poisoned: AtomicU8::new(POISON_NONE),
                core,
                faults: cfg.faults.clone(),
                dwa: None,
                rings: crate::device::uring::Rings::new(),
            };
            {
                let meta = ssd.meta.lock().expect("superblock lock");
                ssd.write_superblock(&meta)?;
            }
            ssd.create_double_write(cfg, db_id)?;
            debug_assert_eq!(ssd.page_count(), 1, "a new page file holds only its superblock");
            Ok(ssd)
        })();
        if result.is_err() {
            // The file is ours, made a moment ago and never acknowledged: remove it
            // (and its double-write file, which belongs to it).
            let faults = cfg.faults.as_deref();
            crate::device::fault::remove_file(faults, &cfg.path);
            match cfg.double_write {
                DoubleWriteMode::Off => {}
                DoubleWriteMode::Ssd => crate::device::fault::remove_file(faults, &double_write::path_for(&cfg.path)),
                DoubleWriteMode::Nvm => crate::device::fault::remove_file(faults, &cfg.nvm_double_write.path),
            }
        }
        result
    }

    /// Opens an existing page file and checks its superblock. If a double-write file
    /// is next to it, the pages it holds copies of are checked in place and restored
    /// where they are torn or older ([`SsdInfo::torn_pages`] says which); then it is
    /// reset for this run (double write on) or removed (off), or created if missing
    /// (on). Nothing else is written, and nothing at all when a check of the page file
    /// fails.
    ///
    /// # Errors
    /// `Io` if it cannot be opened; `BadMagic`, `VersionMismatch`, `PageSizeMismatch`
    /// or `Corrupted` (bad checksum, truncated file) for a file that is not what the
    /// configuration expects; `Io`/`Full` restoring pages or writing the double-write
    /// file.
    pub fn open(cfg: &SsdConfig) -> Result<SsdFile, DeviceError> {
        let core = validate(cfg)?;
        let (file, mut info) = open_file(cfg)?;
        let path = &cfg.path;
        let file_bytes = file.metadata().map_err(|e| DeviceError::io("stat", path, 0, e))?.len();
        if file_bytes < IO_ALIGN_BYTES as u64 {
            return Err(DeviceError::Corrupted {
                what: "superblock",
                location: path.display().to_string(),
                detail: format!("the file has {file_bytes} bytes, fewer than one superblock ({IO_ALIGN_BYTES})"),
            });
        }
        let mut buf = AlignedBuf::new(IO_ALIGN_BYTES);
        file.read_exact_at(&mut buf, 0).map_err(|e| DeviceError::io("read superblock of", path, 0, e))?;
        let (sb, note) = choose_slot(path, &buf)?;
        if sb.page_size as usize != cfg.page_size {
            return Err(DeviceError::PageSizeMismatch {
                path: path.clone(),
                found: sb.page_size,
                expected: cfg.page_size as u32,
            });
        }
        let needed = sb.page_count * cfg.page_size as u64;
        if file_bytes < needed {
            return Err(DeviceError::Corrupted {
                what: "page file",
                location: path.display().to_string(),
                detail: format!(
                    "the superblock counts {} pages ({needed} bytes) but the file has {file_bytes} bytes",
                    sb.page_count
                ),
            });
        }
        info.superblock_note = note;
        let mut slots = [0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
        slots.copy_from_slice(&buf[..SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS]);
        let db_id = sb.db_id;
        let mut ssd = SsdFile {
            file,
            info,
            page_size: cfg.page_size,
            page_count: AtomicU64::new(sb.page_count),
            meta: Mutex::new(Meta { sb, slots }),
            poisoned: AtomicU8::new(POISON_NONE),
            core,
            faults: cfg.faults.clone(),
            dwa: None,
            rings: crate::device::uring::Rings::new(),
        };
        ssd.open_double_write(cfg, db_id)?;
        ssd.upgrade_format()?;
        debug_assert!(ssd.dwa.is_some() == cfg.double_write.is_on(), "double write {:?}", cfg.double_write);
        Ok(ssd)
    }

    /// A file of an older format this build reads (3: seals without last-flush LSN) is
    /// recorded as the current format once opened: its pages written from now on carry
    /// the LSN, which older builds would misread.
    fn upgrade_format(&self) -> Result<(), DeviceError> {
        let mut meta = self.meta.lock().expect("superblock lock");
        if meta.sb.format_version >= FORMAT_VERSION {
            return Ok(());
        }
        let mut sb = meta.sb.clone();
        debug_assert!(sb.format_version < FORMAT_VERSION, "upgrading format {}", sb.format_version);
        sb.format_version = FORMAT_VERSION;
        sb.generation += 1;
        let slot = sb.slot();
        meta.slots[slot * SUPERBLOCK_SLOT_BYTES..(slot + 1) * SUPERBLOCK_SLOT_BYTES].copy_from_slice(&sb.encode());
        meta.sb = sb;
        self.write_superblock(&meta)
    }

    /// Creates the double-write area `cfg.double_write` names, replacing what is there.
    fn create_double_write(&mut self, cfg: &SsdConfig, db_id: u64) -> Result<(), DeviceError> {
        let d = match cfg.double_write {
            DoubleWriteMode::Off => return Ok(()),
            DoubleWriteMode::Ssd => DoubleWrite::create(
                &double_write::path_for(&cfg.path),
                self.page_size,
                db_id,
                self.info.direct_io,
                dwa_core(cfg)?,
                cfg.faults.clone(),
            )?,
            DoubleWriteMode::Nvm => {
                DoubleWrite::create_nvm(&cfg.nvm_double_write, cfg.nvm_double_write_slots, self.page_size, db_id)?
            }
        };
        self.info.double_write = Some(d.path().to_path_buf());
        self.info.double_write_mode = cfg.double_write;
        self.dwa = Some(d);
        Ok(())
    }

    /// Opening, after the superblock checks: restores pages from the double-write areas
    /// it finds (the file, then the NVM region), then sets one up for this run as
    /// `cfg.double_write` says. An area not used this run is emptied durably (its
    /// period ended) before it is removed, so that a removal lost in a crash cannot
    /// bring back copies older than the pages written after it.
    fn open_double_write(&mut self, cfg: &SsdConfig, db_id: u64) -> Result<(), DeviceError> {
        let path = double_write::path_for(&cfg.path);
        let nvm_path = cfg.nvm_double_write.path.clone();
        let direct = self.info.direct_io;
        let mut found: Vec<DoubleWrite> = Vec::new();
        let mut report: Option<TornPageRecovery> = None;
        for mode in [DoubleWriteMode::Ssd, DoubleWriteMode::Nvm] {
            let p = if mode == DoubleWriteMode::Ssd { &path } else { &nvm_path };
            if !p.exists() {
                continue;
            }
            let started = std::time::Instant::now();
            let mut r = TornPageRecovery { path: p.clone(), ..TornPageRecovery::default() };
            let opened = match mode {
                DoubleWriteMode::Ssd => {
                    DoubleWrite::open(p, self.page_size, db_id, direct, dwa_core(cfg)?, cfg.faults.clone())?
                }
                _ => DoubleWrite::open_nvm(&cfg.nvm_double_write, cfg.nvm_double_write_slots, self.page_size, db_id)?,
            };
            match opened {
                Ok((d, copies)) => {
                    r.copies = copies.len();
                    self.restore(&copies, &mut r)?;
                    found.push(d);
                }
                Err(why) => r.unusable = Some(why),
            }
            r.secs = started.elapsed().as_secs_f64();
            report = Some(match report.take() {
                None => r,
                Some(mut a) => {
                    a.copies += r.copies;
                    a.restored_torn.extend(r.restored_torn);
                    a.restored_older.extend(r.restored_older);
                    a.unusable = match (a.unusable, r.unusable) {
                        (Some(x), Some(y)) => Some(format!("{x}; {}: {y}", r.path.display())),
                        (x, y) => x.or(y.map(|y| format!("{}: {y}", r.path.display()))),
                    };
                    a.secs += r.secs;
                    a
                }
            });
        }
        // No area to apply, where this run expects one (or where one was there but
        // unusable): whatever its last period held is gone.
        if found.is_empty() && (cfg.double_write.is_on() || report.as_ref().is_some_and(|r| r.unusable.is_some())) {
            self.info.double_write_lost =
                Some(match report.as_ref().and_then(|r| r.unusable.as_ref().map(|u| (r, u))) {
                    Some((r, why)) => format!("{}: {why}", r.path.display()),
                    None => {
                        let expected = if cfg.double_write == DoubleWriteMode::Nvm { &nvm_path } else { &path };
                        format!("{} is missing", expected.display())
                    }
                });
        }
        self.info.torn_pages = report;
        // The restored pages are synced: the copies are no longer needed.
        for d in found {
            d.end_period(&mut d.lock()).inspect_err(|_| self.poison(POISON_DOUBLE_WRITE))?;
            if d.mode() == cfg.double_write {
                self.info.double_write = Some(d.path().to_path_buf());
                self.info.double_write_mode = cfg.double_write;
                self.dwa = Some(d);
            }
        }
        for (mode, p) in [(DoubleWriteMode::Ssd, &path), (DoubleWriteMode::Nvm, &nvm_path)] {
            if mode != cfg.double_write && p.exists() {
                std::fs::remove_file(p).map_err(|e| DeviceError::io("remove", p, 0, e))?;
            }
        }
        if cfg.double_write.is_on() && self.dwa.is_none() {
            self.create_double_write(cfg, db_id)?;
        }
        Ok(())
    }

    /// Writes the newest copy of each page in `copies` (oldest first) in place where
    /// the page there fails its seal or differs, then syncs.
    fn restore(&self, copies: &[SlotCopy], report: &mut TornPageRecovery) -> Result<(), DeviceError> {
        let mut newest = std::collections::BTreeMap::new();
        for c in copies {
            newest.insert(c.pid, c);
        }
        let mut buf = AlignedBuf::new(self.page_size);
        for (pid, copy) in newest {
            debug_assert_eq!(page_seal::check(&copy.page, pid), Ok(Sealed::Valid), "copies are checked when read");
            if pid.0 >= self.page_count() {
                // Growth is durable before a page past the old end is written: a bug.
                return Err(DeviceError::Corrupted {
                    what: "double-write copy",
                    location: report.path.display().to_string(),
                    detail: format!("a copy of {pid}, past the page file's {} pages", self.page_count()),
                });
            }
            self.read_raw(pid, &mut buf)?;
            match page_seal::check(&buf, pid) {
                Err(_) => report.restored_torn.push(pid),
                Ok(_) if buf[..] != copy.page[..] => report.restored_older.push(pid),
                Ok(_) => continue,
            }
            self.write_raw(pid, &copy.page)?;
        }
        if report.pages_restored() > 0 {
            self.sync_file()?;
        }
        Ok(())
    }

    /// Reads the superblock of the page file at `path` without opening it for use
    /// (read-only; nothing is written). Returns it with a note when one slot was
    /// unreadable and the other was used.
    ///
    /// # Errors
    /// `Io` if it cannot be read; `BadMagic`, `VersionMismatch`, `Corrupted`.
    pub fn read_superblock(path: &Path) -> Result<(Superblock, Option<String>), DeviceError> {
        let file = File::open(path).map_err(|e| DeviceError::io("open", path, 0, e))?;
        let mut page0 = vec![0u8; SUPERBLOCK_SLOT_BYTES * SUPERBLOCK_SLOTS];
        file.read_exact_at(&mut page0, 0).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => DeviceError::Corrupted {
                what: "superblock",
                location: path.display().to_string(),
                detail: "the file is shorter than one superblock".into(),
            },
            _ => DeviceError::io("read superblock of", path, 0, e),
        })?;
        choose_slot(path, &page0)
    }
}

/// The double-write file's device: the same profile and mode as the page file's, its
/// own counters.
fn dwa_core(cfg: &SsdConfig) -> Result<DeviceCore, DeviceError> {
    DeviceCore::new(Tier::Ssd, cfg.profile.clone(), cfg.mode)
        .map_err(|e| DeviceError::Config { device: DEVICE, what: e.to_string() })
}

fn validate(cfg: &SsdConfig) -> Result<DeviceCore, DeviceError> {
    let ps = cfg.page_size;
    if !ps.is_power_of_two() || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&ps) {
        return Err(DeviceError::Config {
            device: DEVICE,
            what: format!(
                "page size {ps} bytes must be a power of two from {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
            ),
        });
    }
    DeviceCore::new(Tier::Ssd, cfg.profile.clone(), cfg.mode)
        .map_err(|e| DeviceError::Config { device: DEVICE, what: e.to_string() })
}

/// Opens the existing file read-write, with `O_DIRECT` per the configuration.
fn open_file(cfg: &SsdConfig) -> Result<(File, SsdInfo), DeviceError> {
    let path = &cfg.path;
    let plain = || OpenOptions::new().read(true).write(true).open(path);
    let file_system = crate::device::fs_type(path);
    let (file, direct_io, note) = match cfg.direct_io {
        DirectIo::Off => (plain(), false, "turned off by configuration".to_string()),
        DirectIo::Auto | DirectIo::On => {
            match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path) {
                Ok(f) => {
                    let note = if file_system == "tmpfs" {
                        "accepted, but tmpfs serves it from RAM (no device underneath)".to_string()
                    } else {
                        "in effect".to_string()
                    };
                    (Ok(f), true, note)
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    if cfg.direct_io == DirectIo::On {
                        return Err(DeviceError::Unsupported {
                            what: format!("O_DIRECT on {}", path.display()),
                            why: format!("the {file_system} file system refuses it"),
                        });
                    }
                    (plain(), false, format!("refused by {file_system}; using buffered I/O"))
                }
                Err(e) => (Err(e), false, String::new()),
            }
        }
    };
    let file = file.map_err(|e| DeviceError::io("open", path, 0, e))?;
    let info = SsdInfo {
        path: path.clone(),
        page_size: cfg.page_size,
        file_system,
        direct_io,
        direct_io_note: note,
        superblock_note: None,
        double_write_mode: DoubleWriteMode::Off,
        double_write: None,
        torn_pages: None,
        double_write_lost: None,
    };
    Ok((file, info))
}

/// Picks the valid slot with the higher generation, or says why none is valid.
fn choose_slot(path: &Path, page0: &[u8]) -> Result<(Superblock, Option<String>), DeviceError> {
    let decoded: Vec<Result<Superblock, SlotError>> =
        page0.chunks_exact(SUPERBLOCK_SLOT_BYTES).take(SUPERBLOCK_SLOTS).map(Superblock::decode).collect();
    let best = decoded
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().ok().map(|sb| (i, sb)))
        .max_by_key(|(_, sb)| sb.generation);
    if let Some((i, sb)) = best {
        let note = decoded.iter().enumerate().find_map(|(j, r)| {
            r.as_ref().err().map(|e| {
                format!("superblock slot {j} unreadable ({e:?}); using slot {i}, generation {}", sb.generation)
            })
        });
        return Ok((sb.clone(), note));
    }
    // No valid slot: report the most specific reason.
    if decoded.iter().all(|r| matches!(r, Err(SlotError::BadMagic(_)))) {
        let found: [u8; 8] = page0[0..8].try_into().expect("8 bytes");
        return Err(DeviceError::BadMagic { path: path.to_path_buf(), found, expected: MAGIC });
    }
    if let Some(found) = decoded.iter().find_map(|r| match r {
        Err(SlotError::Version(v)) => Some(*v),
        _ => None,
    }) {
        return Err(DeviceError::VersionMismatch { path: path.to_path_buf(), found, expected: FORMAT_VERSION });
    }
    let reasons: Vec<String> = decoded
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Err(SlotError::Checksum { stored, computed }) => {
                format!("slot {i}: checksum {stored:#010x} stored, {computed:#010x} computed")
            }
            Err(e) => format!("slot {i}: {e:?}"),
            Ok(_) => unreachable!("no slot is valid here"),
        })
        .collect();
    Err(DeviceError::Corrupted { what: "superblock", location: path.display().to_string(), detail: reasons.join("; ") })
}

fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.write_u32(std::process::id());
    h.finish()
}
