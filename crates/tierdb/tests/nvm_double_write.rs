//! The double-write area in NVM (NV-SQL §5.4) and the last-flush LSN in page seals, on
//! real files with the fault injector: a page torn in the middle of its write to SSD is
//! restored from the NVM area after a power loss; each page then costs one SSD write
//! instead of two; switching the area's place keeps what a crash left in the old one;
//! a page's last-flush LSN (the log's LSN at its write to SSD, a checkpoint's included)
//! comes back when the page is read again after a restart.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tierdb::buffer::{BufferConfig, BufferManager};
use tierdb::device::{
    DeviceError, DoubleWriteMode, FaultPlan, OpenMode, SsdConfig, SsdFile, double_write_path, page_seal,
};
use tierdb::wal::{LogForce, Lsn};
use tierdb::{ByteSize, Error, ExclusivePage, PageId, PageSource};

const PS: usize = 4096;

/// A buffer manager over `dir/t.db`, its NVM double-write area in `nvm_dir` (a tmpfs
/// directory, as the emulated NVM's).
fn config(dir: &Path, nvm_dir: &Path, plan: Option<&Arc<FaultPlan>>, mode: DoubleWriteMode) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(8 * PS as u64));
    c.page_size = PS;
    let mut ssd = SsdConfig::new(dir.join("t.db"));
    ssd.faults = plan.cloned();
    ssd.nvm_double_write.path = nvm_dir.join("t.dwa.nvm");
    c.ssd = Some(ssd);
    c.double_write = mode;
    c
}

fn reopen(dir: &Path, nvm_dir: &Path, mode: DoubleWriteMode) -> BufferManager {
    let mut c = config(dir, nvm_dir, None, mode);
    c.ssd_open_mode = OpenMode::Open;
    BufferManager::open(&c).unwrap()
}

fn image(pid: PageId, v: u8) -> Vec<u8> {
    let mut b: Vec<u8> = (0..PS).map(|i| (i as u64 * 31 + pid.0 * 7 + u64::from(v) * 101) as u8).collect();
    b[8] = v;
    page_seal::clear(&mut b);
    b
}

fn populate(bm: &BufferManager, n: usize) -> Vec<PageId> {
    let pages: Vec<PageId> = (0..n)
        .map(|_| {
            let mut g = bm.allocate().unwrap();
            let pid = g.page_id();
            g.copy_from_slice(&image(pid, 1));
            pid
        })
        .collect();
    bm.checkpoint().unwrap();
    pages
}

/// Writes version 2 of `victim` and fixes the others until its eviction fails with the
/// tear the plan injects on the page file's `nth_write`.
fn tear_eviction(bm: &BufferManager, plan: &FaultPlan, pages: &[PageId], victim: PageId, nth_write: u64) {
    bm.fix_exclusive(victim).unwrap().copy_from_slice(&image(victim, 2));
    plan.tear_nth_write(nth_write);
    for (i, p) in pages.iter().filter(|p| **p != victim).cycle().enumerate() {
        assert!(i < 8 * pages.len(), "{victim} was never evicted");
        match bm.fix_shared(*p).map_err(Error::from) {
            Ok(_) => continue,
            Err(Error::Device(DeviceError::Io { op, path, .. })) => {
                assert_eq!((op, path.file_name().unwrap().to_str()), ("write", Some("t.db")));
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn assert_version(bm: &BufferManager, pid: PageId, v: u8) {
    let g = bm.fix_shared(pid).unwrap_or_else(|e| panic!("{pid}: {e}"));
    assert!(g[..] == image(pid, v)[..], "{pid}: not version {v} (byte 8: {})", g[8]);
}

#[test]
fn a_page_torn_on_ssd_is_restored_from_the_nvm_area_after_a_power_loss() {
    let (dir, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
    let plan = FaultPlan::new();
    let nvm_area = shm.path().join("t.dwa.nvm");
    let (victim, pages);
    {
        let bm = BufferManager::open(&config(dir.path(), shm.path(), Some(&plan), DoubleWriteMode::Nvm)).unwrap();
        let info = bm.ssd().unwrap().info().clone();
        assert_eq!((info.double_write_mode, info.double_write.as_deref()), (DoubleWriteMode::Nvm, Some(&*nvm_area)));
        pages = populate(&bm, 24);
        victim = pages[5];
        // The copy goes to NVM (no SSD write), so the eviction's first write to the page
        // file is the page in place: torn.
        tear_eviction(&bm, &plan, &pages, victim, 1);
        // Power loss: the process dies with the handle poisoned, no checkpoint.
    }
    assert!(!double_write_path(&dir.path().join("t.db")).exists(), "nothing double-written on SSD");
    // Without the NVM area the tear shows.
    let scratch = tempfile::tempdir().unwrap();
    std::fs::copy(dir.path().join("t.db"), scratch.path().join("t.db")).unwrap();
    {
        let mut c = config(scratch.path(), scratch.path(), None, DoubleWriteMode::Off);
        c.ssd_open_mode = OpenMode::Open;
        let mut s = c.ssd.clone().unwrap();
        s.page_size = PS;
        let f = SsdFile::open(&s).unwrap();
        let e = f.read_page(victim, &mut vec![0u8; PS]).unwrap_err();
        assert!(matches!(e, DeviceError::Corrupted { what: "page", .. }), "{e}");
    }
    let bm = reopen(dir.path(), shm.path(), DoubleWriteMode::Nvm);
    let torn = bm.torn_pages().expect("the NVM area was there");
    assert_eq!(torn.path, nvm_area);
    assert_eq!((torn.copies, &torn.restored_torn[..], torn.restored_older.len()), (1, &[victim][..], 0), "{torn:?}");
    assert_version(&bm, victim, 2);
    for p in pages.iter().filter(|p| **p != victim) {
        assert_version(&bm, *p, 1);
    }
    bm.check_invariants();
    bm.close().unwrap();
    let bm = reopen(dir.path(), shm.path(), DoubleWriteMode::Nvm);
    assert_eq!(bm.torn_pages().map(|t| (t.copies, t.pages_restored())), Some((0, 0)));
    assert_version(&bm, victim, 2);
}

/// SSD traffic of the same evictions with the area on SSD and in NVM: on SSD every page
/// is written twice (copy with its 4 KiB slot header, then in place) with a sync
/// before the second; in NVM once, the copy going to NVM instead.
#[test]
fn in_nvm_each_page_reaches_ssd_once() {
    let mut per_page = Vec::new();
    for mode in [DoubleWriteMode::Ssd, DoubleWriteMode::Nvm] {
        let (dir, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
        let bm = BufferManager::open(&config(dir.path(), shm.path(), None, mode)).unwrap();
        let pages = populate(&bm, 24);
        let before = bm.stats();
        for round in 0..3u8 {
            for p in &pages {
                bm.fix_exclusive(*p).unwrap().copy_from_slice(&image(*p, 10 + round));
            }
        }
        let s = bm.stats().since(&before);
        let ssd = s.ssd.unwrap();
        let (dwa_ssd_bytes, dwa_ssd_syncs) = s.ssd_double_write.map_or((0, 0), |d| (d.write_bytes, d.syncs));
        assert!(ssd.writes >= 40, "{mode}: {} page writes", ssd.writes);
        assert_eq!(ssd.write_bytes, ssd.writes * PS as u64);
        per_page.push((ssd.write_bytes + dwa_ssd_bytes) as f64 / ssd.writes as f64);
        match mode {
            DoubleWriteMode::Ssd => {
                assert!(s.nvm_double_write.is_none());
                assert!(dwa_ssd_syncs >= ssd.writes, "a sync per protected write");
            }
            _ => {
                assert_eq!(dwa_ssd_bytes, 0);
                let n = s.nvm_double_write.expect("NVM area counters");
                assert!(n.write_bytes >= ssd.writes * PS as u64 && n.persists >= ssd.writes, "{n:?}");
            }
        }
    }
    assert_eq!(per_page[1], PS as f64, "NVM: the page alone");
    assert!(per_page[0] >= (2 * PS + 4096) as f64, "SSD: copy + slot header + page: {per_page:?}");
}

#[test]
fn a_tear_left_in_one_area_is_repaired_when_the_next_run_uses_the_other() {
    for (crashed, next) in [(DoubleWriteMode::Nvm, DoubleWriteMode::Ssd), (DoubleWriteMode::Ssd, DoubleWriteMode::Nvm)]
    {
        let (dir, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
        let plan = FaultPlan::new();
        let (victim, pages);
        {
            let bm = BufferManager::open(&config(dir.path(), shm.path(), Some(&plan), crashed)).unwrap();
            pages = populate(&bm, 24);
            victim = pages[3];
            // On SSD the copy is write 1 of the eviction and the page write 2.
            tear_eviction(&bm, &plan, &pages, victim, if crashed == DoubleWriteMode::Nvm { 1 } else { 2 });
        }
        let bm = reopen(dir.path(), shm.path(), next);
        let torn = bm.torn_pages().unwrap();
        assert_eq!(&torn.restored_torn[..], &[victim][..], "{crashed} then {next}: {torn:?}");
        assert_version(&bm, victim, 2);
        let (ssd_area, nvm_area) = (double_write_path(&dir.path().join("t.db")), shm.path().join("t.dwa.nvm"));
        assert_eq!(ssd_area.exists(), next == DoubleWriteMode::Ssd, "{crashed} then {next}");
        assert_eq!(nvm_area.exists(), next == DoubleWriteMode::Nvm, "{crashed} then {next}");
        bm.close().unwrap();
    }
}

#[test]
fn a_bad_nvm_area_stops_the_open_with_a_typed_error() {
    let (dir, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
    BufferManager::open(&config(dir.path(), shm.path(), None, DoubleWriteMode::Nvm)).unwrap().close().unwrap();
    let area = shm.path().join("t.dwa.nvm");
    let mut bytes = std::fs::read(&area).unwrap();
    bytes[30] ^= 0xff;
    bytes[512 + 30] ^= 0xff;
    std::fs::write(&area, &bytes).unwrap();
    let mut c = config(dir.path(), shm.path(), None, DoubleWriteMode::Nvm);
    c.ssd_open_mode = OpenMode::Open;
    let e = Error::from(BufferManager::open(&c).err().unwrap());
    assert!(
        matches!(&e, Error::Device(DeviceError::Corrupted { what: "NVM double-write area", location, .. }) if location.contains("t.dwa.nvm")),
        "{e}"
    );
    // An area that cannot hold a page: a configuration error naming it.
    std::fs::remove_file(&area).unwrap();
    c.ssd.as_mut().unwrap().nvm_double_write_slots = 0;
    let e = Error::from(BufferManager::open(&c).err().unwrap());
    assert!(matches!(&e, Error::Device(DeviceError::Config { .. })) && e.to_string().contains("t.dwa.nvm"), "{e}");
}

/// A log whose end LSN the test scripts.
struct ScriptedLog(AtomicU64);

impl LogForce for ScriptedLog {
    fn force(&self, _lsn: Lsn) -> Result<(), tierdb::wal::WalError> {
        Ok(())
    }

    fn end_lsn(&self) -> Lsn {
        Lsn::new(self.0.load(Ordering::Relaxed))
    }
}

/// The last-flush LSN is the log's LSN at the write to SSD — by a checkpoint or an
/// eviction — and survives a restart in the page's seal.
#[test]
fn the_last_flush_lsn_of_a_checkpoint_write_comes_back_after_a_restart() {
    let (dir, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
    let (hot, pages);
    {
        let mut c = config(dir.path(), shm.path(), None, DoubleWriteMode::Nvm);
        c.policy = "nvsql".into();
        let bm = BufferManager::open(&c).unwrap();
        let log = Arc::new(ScriptedLog(AtomicU64::new(100)));
        bm.set_log(log.clone()).unwrap();
        pages = populate(&bm, 24); // checkpoint at LSN 100
        hot = pages[0];
        {
            let mut g = bm.fix_exclusive(hot).unwrap();
            g.copy_from_slice(&image(hot, 2));
            g.set_page_lsn(Lsn::new(4_000));
        }
        log.0.store(5_000, Ordering::Relaxed);
        bm.checkpoint().unwrap(); // writes `hot` at LSN 5000; it stays in DRAM
        log.0.store(9_000, Ordering::Relaxed);
        // Evictions write the other pages at 9000.
        for p in &pages[1..] {
            bm.fix_exclusive(*p).unwrap().copy_from_slice(&image(*p, 3));
        }
        bm.checkpoint().unwrap();
        bm.close().unwrap();
    }
    let f = SsdFile::open(&{
        let mut s = SsdConfig::new(dir.path().join("t.db"));
        s.page_size = PS;
        s
    })
    .unwrap();
    let mut buf = vec![0u8; PS];
    assert_eq!(f.read_page_flushed(hot, &mut buf).unwrap(), Lsn::new(5_000), "the checkpoint's write");
    assert_eq!(f.read_page_flushed(pages[1], &mut buf).unwrap(), Lsn::new(9_000));
    drop(f);
    // After the restart the page read from SSD carries it into its frame.
    let bm = reopen(dir.path(), shm.path(), DoubleWriteMode::Nvm);
    assert_eq!(bm.loaded_flush_lsn(hot).unwrap(), None);
    assert_version(&bm, hot, 2);
    assert_eq!(bm.loaded_flush_lsn(hot).unwrap(), Some(Lsn::new(5_000)));
}
