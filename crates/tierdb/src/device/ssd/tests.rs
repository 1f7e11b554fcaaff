//! Tests of the page file: round trips, seals, the double-write area, superblock checks.

use std::path::Path;

use super::*;
use crate::device::page_seal;
use crate::device::superblock::FORMAT_VERSION;
use crate::ids::Lsn;
use crate::limits::DOUBLE_WRITE_SLOTS;
use crate::limits::SSD_WRITE_RUN_BYTES_MAX;

fn dir() -> tempfile::TempDir {
    // The root file system takes O_DIRECT (PLATFORM.md); /tmp is on it here.
    tempfile::tempdir().unwrap()
}

fn cfg(d: &tempfile::TempDir) -> SsdConfig {
    let mut c = SsdConfig::new(d.path().join("pages.db"));
    c.page_size = 4096;
    c
}

#[test]
fn superblock_and_pages_round_trip() {
    let d = dir();
    let c = cfg(&d);
    let db_id;
    {
        let f = SsdFile::create(&c).unwrap();
        db_id = f.superblock().db_id;
        assert_eq!(f.page_count(), 1);
        let first = f.grow(3).unwrap();
        assert_eq!(first, PageId(1));
        let mut page = AlignedBuf::new(4096);
        page.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        page_seal::clear(&mut page);
        f.write_page(PageId(2), &page).unwrap();
        let mut unaligned = vec![0xabu8; 4096];
        page_seal::clear(&mut unaligned);
        f.write_page(PageId(3), &unaligned).unwrap();
        f.sync().unwrap();
        let s = f.core().stats().snapshot();
        assert_eq!((s.writes, s.syncs, s.write_bytes), (2, 1, 8192));
    }
    let f = SsdFile::open(&c).unwrap();
    assert_eq!(f.page_count(), 4);
    let sb = f.superblock();
    assert_eq!((sb.db_id, sb.page_size, sb.generation), (db_id, 4096, 2));
    assert!(f.info().superblock_note.is_none());
    let mut back = vec![0u8; 4096];
    f.read_page(PageId(2), &mut back).unwrap();
    assert!(back.iter().enumerate().all(|(i, &b)| b == if page_seal::SEAL_RANGE.contains(&i) { 0 } else { i as u8 }));
    f.read_page(PageId(3), &mut back).unwrap();
    assert_eq!(back, unaligned_page(0xab));
    f.read_page(PageId(1), &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0), "a page never written reads as zeros");
}

/// A page of `fill` bytes with the seal's bytes zero, as page formats leave them.
fn unaligned_page(fill: u8) -> Vec<u8> {
    let mut p = vec![fill; 4096];
    page_seal::clear(&mut p);
    p
}

#[test]
fn a_corrupted_or_misplaced_page_is_an_error_naming_it() {
    let d = dir();
    let c = cfg(&d);
    {
        let f = SsdFile::create(&c).unwrap();
        f.grow(3).unwrap();
        f.write_page(PageId(1), &unaligned_page(1)).unwrap();
        f.write_page(PageId(2), &unaligned_page(2)).unwrap();
        f.sync().unwrap();
    }
    let all = std::fs::read(&c.path).unwrap();
    patch(&c.path, 4096 + 3000, &[all[4096 + 3000] ^ 0x10]); // page 1
    patch(&c.path, 3 * 4096, &all[2 * 4096..3 * 4096]); // page 2's bytes at page 3
    let f = SsdFile::open(&c).unwrap();
    let mut buf = vec![0u8; 4096];
    for (pid, what) in [(1, "checksum"), (3, "sealed as page 2")] {
        let e = f.read_page(PageId(pid), &mut buf).unwrap_err();
        assert!(matches!(e, DeviceError::Corrupted { what: "page", .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("page {pid} of")) && msg.contains("pages.db") && msg.contains(what), "{msg}");
    }
    f.read_page(PageId(2), &mut buf).unwrap();
    assert_eq!(buf, unaligned_page(2));
}

fn dwa_cfg(d: &tempfile::TempDir, plan: Option<&std::sync::Arc<crate::device::FaultPlan>>) -> SsdConfig {
    let mut c = cfg(d);
    c.double_write = DoubleWriteMode::Ssd;
    c.faults = plan.cloned();
    c
}

#[test]
fn a_page_torn_in_place_is_restored_from_its_copy_on_open() {
    let d = dir();
    let plan = crate::device::FaultPlan::new();
    let c = dwa_cfg(&d, Some(&plan));
    {
        let f = SsdFile::create(&c).unwrap();
        assert_eq!(f.info().double_write.as_deref(), Some(double_write::path_for(&c.path).as_path()));
        f.grow(4).unwrap();
        let old: Vec<Vec<u8>> = (1..=3).map(unaligned_page).collect();
        f.write_pages(&[(PageId(1), &old[0]), (PageId(2), &old[1]), (PageId(3), &old[2])]).unwrap();
        f.sync().unwrap();
        let new: Vec<Vec<u8>> = (11..=13).map(unaligned_page).collect();
        // Writes: the batch's copies (1), then pages 1, 2, 3 in place in one write
        // (2): torn halfway, page 1 is new, page 2 torn, page 3 old.
        plan.tear_nth_write(2);
        let e = f.write_pages(&[(PageId(1), &new[0]), (PageId(2), &new[1]), (PageId(3), &new[2])]).unwrap_err();
        assert!(matches!(e, DeviceError::Io { .. }), "{e}");
        assert!(matches!(f.write_page(PageId(4), &new[0]), Err(DeviceError::Poisoned { .. })));
    }
    let mut plain = c.clone();
    plain.double_write = DoubleWriteMode::Off;
    plain.faults = None;
    // Without the copies the tear shows: a scratch copy of the files opened with the
    // double-write file left out.
    let scratch = dir();
    let sp = scratch.path().join("pages.db");
    std::fs::copy(&c.path, &sp).unwrap();
    let mut sc = plain.clone();
    sc.path = sp;
    let f = SsdFile::open(&sc).unwrap();
    assert!(f.info().torn_pages.is_none());
    let mut buf = vec![0u8; 4096];
    let e = f.read_page(PageId(2), &mut buf).unwrap_err();
    assert!(e.to_string().contains("page 2 of"), "{e}");
    drop(f);
    // With them, page 2 is restored, and page 3 (never written in place) too.
    let f = SsdFile::open(&dwa_cfg(&d, None)).unwrap();
    let r = f.info().torn_pages.clone().unwrap();
    assert_eq!(
        (r.copies, r.restored_torn.clone(), r.restored_older.clone()),
        (3, vec![PageId(2)], vec![PageId(3)]),
        "{r:?}"
    );
    for pid in 1..=3u8 {
        f.read_page(PageId(u64::from(pid)), &mut buf).unwrap();
        assert_eq!(buf, unaligned_page(10 + pid), "page {pid}");
    }
    drop(f);
    // The copies are spent: the next open finds none; opened without double write,
    // the file is removed.
    let f = SsdFile::open(&plain).unwrap();
    let r = f.info().torn_pages.clone().unwrap();
    assert_eq!((r.copies, r.pages_restored()), (0, 0), "{r:?}");
    assert!(!double_write::path_for(&c.path).exists());
    assert!(f.info().double_write.is_none());
}

#[test]
fn a_double_write_file_of_another_database_is_not_applied() {
    let d = dir();
    let c = dwa_cfg(&d, None);
    SsdFile::create(&c).unwrap().grow(1).unwrap();
    let other = dir();
    let mut oc = dwa_cfg(&other, None);
    oc.path = other.path().join("pages.db");
    {
        let f = SsdFile::create(&oc).unwrap();
        f.grow(1).unwrap();
        f.write_page(PageId(1), &unaligned_page(9)).unwrap();
    }
    std::fs::copy(double_write::path_for(&oc.path), double_write::path_for(&c.path)).unwrap();
    let f = SsdFile::open(&c).unwrap();
    let r = f.info().torn_pages.clone().unwrap();
    assert!(r.unusable.as_deref().is_some_and(|w| w.contains("belongs to database")), "{r:?}");
    let mut buf = vec![0u8; 4096];
    f.read_page(PageId(1), &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "nothing of the other database was restored");
    drop(f);
    let f = SsdFile::open(&c).unwrap();
    assert!(f.info().torn_pages.as_ref().unwrap().unusable.is_none(), "formatted for this database");
}

#[test]
fn a_full_batch_ends_the_period_and_syncs_first() {
    let d = dir();
    let c = dwa_cfg(&d, None);
    let f = SsdFile::create(&c).unwrap();
    let n = DOUBLE_WRITE_SLOTS as u64 + 5;
    f.grow(n).unwrap();
    let page = unaligned_page(3);
    let batch: Vec<(PageId, &[u8])> = (1..=n).map(|p| (PageId(p), &page[..])).collect();
    let before = f.core().stats().snapshot();
    f.write_pages(&batch).unwrap();
    let s = f.core().stats().snapshot().since(&before);
    // Each piece's pages are consecutive: one write each.
    assert_eq!((s.writes, s.syncs), (2, 1), "one page-file sync before the second piece");
    let w = f.double_write_core().unwrap().stats().snapshot();
    // Creation: header write + sync; two pieces: two writes and syncs; one period
    // ended: a header write and sync.
    assert_eq!((w.writes, w.syncs), (4, 4), "{w:?}");
}

/// A batch goes out in page order, each run of consecutive pages in one write (at
/// most `SSD_WRITE_RUN_BYTES_MAX` bytes); a page given twice ends with its last
/// image; every page reads back as given.
#[test]
fn a_batch_is_written_in_runs_of_consecutive_pages() {
    for dwa in [false, true] {
        let d = dir();
        let c = if dwa { dwa_cfg(&d, None) } else { cfg(&d) };
        let f = SsdFile::create(&c).unwrap();
        let run_max = (SSD_WRITE_RUN_BYTES_MAX / 4096) as u64;
        f.grow(run_max + 20).unwrap();
        // Pages 10..=12, 5, 7, 6 (a run of 5..=7 given out of order), 12 again, and
        // 1..=run_max + 1 (one run too long for one write).
        let ids: Vec<u64> = [10, 11, 12, 5, 7, 6, 12].into_iter().chain(1..=run_max + 1).collect();
        let images: Vec<Vec<u8>> = ids.iter().enumerate().map(|(j, _)| unaligned_page(j as u8)).collect();
        let pages: Vec<(PageId, &[u8])> = ids.iter().zip(&images).map(|(&p, b)| (PageId(p), &b[..])).collect();
        for chunk in pages.chunks(if dwa { DOUBLE_WRITE_SLOTS } else { pages.len() }) {
            let before = f.core().stats().snapshot();
            f.write_pages(chunk).unwrap();
            let writes = f.core().stats().snapshot().since(&before).writes;
            let mut sorted: Vec<u64> = chunk.iter().map(|(p, _)| p.0).collect();
            sorted.sort_unstable();
            // A repeated page is written once; a new run where a page does not
            // follow the one before, or where the run is full.
            sorted.dedup();
            let (mut runs, mut len) = (0u64, 0u64);
            for (i, p) in sorted.iter().enumerate() {
                if i == 0 || *p != sorted[i - 1] + 1 || len == run_max {
                    runs += 1;
                    len = 0;
                }
                len += 1;
            }
            assert_eq!(writes, runs, "dwa {dwa}: {sorted:?}");
        }
        let mut buf = vec![0u8; 4096];
        let mut last = std::collections::HashMap::new();
        for (j, p) in ids.iter().enumerate() {
            last.insert(*p, j);
        }
        for (p, j) in last {
            f.read_page(PageId(p), &mut buf).unwrap();
            assert!(buf == images[j], "dwa {dwa}: page {p} does not hold image {j}");
        }
    }
}

#[test]
fn superblock_page_and_pages_past_the_end_are_refused() {
    let d = dir();
    let f = SsdFile::create(&cfg(&d)).unwrap();
    f.grow(1).unwrap();
    let mut buf = vec![0u8; 4096];
    assert!(matches!(f.read_page(PageId(0), &mut buf), Err(DeviceError::OutOfRange { .. })));
    assert!(matches!(f.write_page(PageId(2), &buf), Err(DeviceError::OutOfRange { .. })));
    assert!(matches!(f.read_page(PageId(1), &mut buf[..100]), Err(DeviceError::Config { .. })));
}

#[test]
fn create_never_overwrites() {
    let d = dir();
    let c = cfg(&d);
    std::fs::write(&c.path, b"precious").unwrap();
    assert!(matches!(SsdFile::create(&c), Err(DeviceError::AlreadyExists { .. })));
    assert_eq!(std::fs::read(&c.path).unwrap(), b"precious");
}

/// Opens `c` expecting an error; checks the file's bytes did not change.
fn open_fails(c: &SsdConfig) -> DeviceError {
    let before = std::fs::read(&c.path).unwrap();
    let e = SsdFile::open(c).err().expect("open should fail");
    assert_eq!(std::fs::read(&c.path).unwrap(), before, "failed open changed the file");
    e
}

fn make(d: &tempfile::TempDir) -> SsdConfig {
    let c = cfg(d);
    SsdFile::create(&c).unwrap().grow(2).unwrap();
    c
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut all = std::fs::read(path).unwrap();
    all[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, all).unwrap();
}

#[test]
fn another_magic_is_not_a_tierdb_file() {
    let d = dir();
    let c = make(&d);
    patch(&c.path, 0, b"SQLite f");
    patch(&c.path, 512, b"SQLite f");
    let e = open_fails(&c);
    assert!(matches!(e, DeviceError::BadMagic { .. }), "{e}");
    assert!(e.to_string().contains("pages.db"), "{e}");
}

#[test]
fn another_version_is_reported_as_such() {
    let d = dir();
    let c = make(&d);
    for slot in 0..2 {
        let mut sb = Superblock::new(4096, 1, 1);
        sb.format_version = FORMAT_VERSION + 1;
        patch(&c.path, slot * 512, &sb.encode());
    }
    let e = open_fails(&c);
    assert!(
        matches!(e, DeviceError::VersionMismatch { found, expected: FORMAT_VERSION, .. } if found == FORMAT_VERSION + 1),
        "{e}"
    );
}

/// A format-3 file (seals without last-flush LSN) opens; its pages read with LSN
/// 0, and the file is recorded as format 4 from then on.
#[test]
fn a_format_3_file_is_read_and_upgraded() {
    let d = dir();
    let c = make(&d);
    let mut old = unaligned_page(5);
    old[48..56].copy_from_slice(&1u64.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&old[..56]), &old[60..]);
    old[56..60].copy_from_slice(&crc.to_le_bytes());
    patch(&c.path, 4096, &old);
    let sb = SsdFile::read_superblock(&c.path).unwrap().0;
    for slot in 0..2 {
        let mut v3 = sb.clone();
        v3.format_version = 3;
        v3.generation = sb.generation - 1 + slot as u64;
        patch(&c.path, v3.slot() * 512, &v3.encode());
    }
    let f = SsdFile::open(&c).unwrap();
    assert_eq!(f.superblock().format_version, FORMAT_VERSION);
    let mut buf = vec![0u8; 4096];
    assert_eq!(f.read_page_flushed(PageId(1), &mut buf).unwrap(), Lsn::NONE);
    assert_eq!(buf, unaligned_page(5));
    f.write_pages_flushed(&[(PageId(2), &unaligned_page(6))], Lsn::new(1 << 40)).unwrap();
    assert_eq!(f.read_page_flushed(PageId(2), &mut buf).unwrap(), Lsn::new(1 << 40));
    drop(f);
    assert_eq!(SsdFile::read_superblock(&c.path).unwrap().0.format_version, FORMAT_VERSION);
}

#[test]
fn another_page_size_is_refused() {
    let d = dir();
    let mut c = make(&d);
    c.page_size = 8192;
    let e = open_fails(&c);
    assert!(matches!(e, DeviceError::PageSizeMismatch { found: 4096, expected: 8192, .. }), "{e}");
}

#[test]
fn bad_checksums_in_both_slots_are_corruption() {
    let d = dir();
    let c = make(&d);
    // Byte 40 is the random database id's: flip it, as a fixed value may be there.
    let all = std::fs::read(&c.path).unwrap();
    patch(&c.path, 40, &[!all[40]]);
    patch(&c.path, 512 + 40, &[!all[512 + 40]]);
    let e = open_fails(&c);
    assert!(matches!(e, DeviceError::Corrupted { what: "superblock", .. }), "{e}");
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn a_torn_newest_slot_falls_back_to_the_older() {
    let d = dir();
    let c = make(&d); // generation 2 in slot 0, generation 1 in slot 1
    patch(&c.path, 20, &[0x55]);
    let f = SsdFile::open(&c).unwrap();
    assert_eq!(f.superblock().generation, 1);
    assert_eq!(f.page_count(), 1);
    assert!(f.info().superblock_note.as_deref().unwrap().contains("slot 0"));
}

#[test]
fn truncated_files_are_corruption() {
    let d = dir();
    let c = make(&d);
    let all = std::fs::read(&c.path).unwrap();
    std::fs::write(&c.path, &all[..4096 * 2]).unwrap();
    let e = open_fails(&c);
    assert!(matches!(e, DeviceError::Corrupted { what: "page file", .. }), "{e}");
    std::fs::write(&c.path, &all[..100]).unwrap();
    let e = open_fails(&c);
    assert!(matches!(e, DeviceError::Corrupted { what: "superblock", .. }), "{e}");
}

#[test]
fn read_superblock_needs_no_page_size() {
    let d = dir();
    let c = make(&d);
    let (sb, note) = SsdFile::read_superblock(&c.path).unwrap();
    assert_eq!((sb.page_size, sb.page_count, note), (4096, 3, None));
    patch(&c.path, 0, b"XXXXXXXX");
    patch(&c.path, 512, b"XXXXXXXX");
    assert!(matches!(SsdFile::read_superblock(&c.path), Err(DeviceError::BadMagic { .. })));
}

#[test]
fn bad_configs_and_paths() {
    let d = dir();
    let mut c = cfg(&d);
    c.page_size = 3000;
    assert!(matches!(SsdFile::create(&c), Err(DeviceError::Config { .. })));
    let c = SsdConfig::new("/nonexistent-dir/y/pages.db");
    let e = SsdFile::create(&c).err().unwrap();
    assert!(matches!(e, DeviceError::Create { .. }) && e.to_string().contains("/nonexistent-dir/y"), "{e}");
    assert!(matches!(SsdFile::open(&c), Err(DeviceError::Io { .. })));
}

#[test]
fn direct_io_is_used_on_the_root_file_system() {
    let d = dir();
    let f = SsdFile::create(&cfg(&d)).unwrap();
    if f.info().file_system != "tmpfs" {
        assert!(f.info().direct_io, "{:?}", f.info());
    }
    let d2 = tempfile::tempdir_in("/dev/shm").unwrap();
    let mut c = cfg(&d2);
    c.direct_io = DirectIo::Off;
    let f = SsdFile::create(&c).unwrap();
    assert!(!f.info().direct_io);
}
