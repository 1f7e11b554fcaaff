//! Tests of the NVM pool: layout, round trips, CRCs, reopen after a crash.

use super::header::{FLAG_DIRTY, FLAG_NO_CRC, FLAG_VALID};
use super::*;
use crate::ByteSize;
use crate::device::NvmConfig;
use crate::ids::{AtomicLsn, Lsn, NvmSlot};

fn pool(dir: &tempfile::TempDir, bytes: u64) -> NvmPool {
    let region = NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(bytes))).unwrap();
    NvmPool::format(region, 4096, 7, NvmVerify::Cheap).unwrap()
}

#[test]
fn layout_fits_the_region() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(&dir, 1 << 20);
    // (1 MiB - 4 KiB) / (4096 + 64) = 251, less the rounding of the header area.
    assert!(p.len() >= 245 && p.len() <= 251, "{}", p.len());
    assert!(p.data_offset(NvmSlot::from_index(p.len() - 1)) + 4096 <= 1 << 20);
    assert!(p.data_offset(NvmSlot::new(0)) >= HEADERS_OFFSET + p.len() as u64 * 64);
}

#[test]
fn a_volatile_pool_frees_frames_without_writing_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = pool(&dir, 1 << 20);
    p.set_volatile();
    let lines = |p: &NvmPool| p.region.core().stats().snapshot().write_lines;
    let n = p.pop_free().unwrap();
    let page = vec![5u8; 4096];
    let before = lines(&p);
    p.write_page(n, PageId(3), &page, false, Lsn::NONE).unwrap();
    // Data and header, nothing more.
    assert_eq!(lines(&p) - before, 4096 / 64 + 1);
    // Rewriting its own page sets no in-update flag first.
    let before = lines(&p);
    p.write_page(n, PageId(3), &page, false, Lsn::NONE).unwrap();
    assert_eq!(lines(&p) - before, 4096 / 64 + 1);
    let before = lines(&p);
    p.release(n).unwrap();
    let m = p.pop_free().unwrap();
    assert_eq!(m, n);
    p.write_page(m, PageId(4), &page, false, Lsn::NONE).unwrap();
    p.clear_owner(m).unwrap();
    assert_eq!(lines(&p) - before, 4096 / 64 + 1, "release and clear_owner wrote NVM");
    assert_eq!((p.pid(n), p.pid(m)), (None, None));
    p.check_invariants();
    // A durable pool clears the header on both.
    let dir2 = tempfile::tempdir().unwrap();
    let q = pool(&dir2, 1 << 20);
    let n = q.pop_free().unwrap();
    q.write_page(n, PageId(3), &page, false, Lsn::NONE).unwrap();
    let before = lines(&q);
    q.release(n).unwrap();
    assert_eq!(lines(&q) - before, 1);
}

#[test]
fn write_read_and_corruption_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(&dir, 1 << 20);
    let n = p.pop_free().unwrap();
    let page: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    p.write_page(n, PageId(9), &page, true, Lsn::NONE).unwrap();
    assert_eq!(p.pid(n), Some(PageId(9)));
    assert!(p.is_dirty(n));
    let h = p.header(n).unwrap().unwrap();
    assert_eq!((h.pid, h.flags), (PageId(9), FLAG_VALID | FLAG_DIRTY));
    let mut back = vec![0u8; 4096];
    p.read_page(n, PageId(9), &mut back).unwrap();
    assert_eq!(back, page);
    // Flip one data byte behind the pool's back.
    let mut bad = page.clone();
    bad[100] ^= 1;
    // SAFETY (test): single-threaded.
    unsafe { p.region.copy_in_shared(p.data_offset(n), &bad) }.unwrap();
    let e = p.read_page(n, PageId(9), &mut back).unwrap_err();
    assert!(matches!(e, BufferError::Corrupted { .. }), "{e}");
    assert!(e.to_string().contains("NVM frame"), "{e}");
    p.release(n).unwrap();
    assert_eq!(p.header(n).unwrap(), None);
    assert_eq!(p.pid(n), None);
}

#[test]
fn reopen_finds_the_pages_and_clears_frames_caught_mid_write() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(&dir, 1 << 20);
    let page = vec![5u8; 4096];
    let frames: Vec<NvmSlot> = (0..4).map(|_| p.pop_free().unwrap()).collect();
    for (i, n) in frames.iter().enumerate() {
        p.write_page(*n, PageId(10 + i as u64), &page, i % 2 == 0, Lsn::NONE).unwrap();
    }
    p.begin_update(frames[1], PageId(11)).unwrap(); // a crash in the middle of a rewrite
    p.release(frames[3]).unwrap();
    let count = p.len();
    drop(p);
    let open = || NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(1 << 20))).unwrap();
    let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
    let pages: Vec<(NvmSlot, u64, bool)> =
        r.pages.iter().map(|(n, h)| (*n, h.pid.0, h.flags & FLAG_DIRTY != 0)).collect();
    assert_eq!(pages, vec![(frames[0], 10, true), (frames[2], 12, true)]);
    assert_eq!(r.cleared.len(), 1);
    assert!(r.cleared[0].1.contains("IN_UPDATE"), "{:?}", r.cleared);
    assert_eq!(r.pool.free_frames(), count - 2, "the others are free");
    r.pool.check_invariants();
    let mut back = vec![0u8; 4096];
    r.pool.read_page(frames[2], PageId(12), &mut back).unwrap();
    assert_eq!(back, page);
    drop(r);
    // The cleared header stays cleared; another database or page size is refused.
    let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
    assert!(r.cleared.is_empty() && r.pages.len() == 2);
    drop(r);
    let why = NvmPool::reopen(open(), 4096, 8, NvmVerify::Cheap, true).unwrap().err().unwrap().1;
    assert!(why.contains("belongs to database"), "{why}");
    let why = NvmPool::reopen(open(), 8192, 7, NvmVerify::Cheap, true).unwrap().err().unwrap().1;
    assert!(why.contains("4096-byte pages"), "{why}");
}

#[test]
fn too_small_a_region_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let region = NvmRegion::open(&NvmConfig::new(dir.path().join("s.nvm"), ByteSize(8192))).unwrap();
    assert!(matches!(NvmPool::format(region, 16384, 1, NvmVerify::Cheap), Err(BufferError::Config { .. })));
}

#[test]
fn header_decoding_rejects_bad_crc() {
    let h = FrameHeader {
        pid: PageId(3),
        page_lsn: Lsn::new(5),
        flags: FLAG_VALID,
        data_crc: 11,
        rec_lsn: Lsn::new(4),
        written_lsn: Lsn::new(9),
    };
    let mut b = h.encode();
    assert_eq!(FrameHeader::decode(&b).unwrap(), Some(h));
    b[3] ^= 0x10;
    assert!(FrameHeader::decode(&b).is_err());
}

/// Flips byte `at` of frame `n`'s data behind the pool's back.
fn flip(p: &NvmPool, n: NvmSlot, at: usize) {
    let mut page = vec![0u8; p.page_size];
    p.region.copy_out(p.data_offset(n), &mut page).unwrap();
    page[at] ^= 0x20;
    // SAFETY (test): single-threaded, the frame is not in use.
    unsafe { p.region.copy_in_shared(p.data_offset(n), &page) }.unwrap();
}

fn frame_bytes(p: &NvmPool, n: NvmSlot) -> Vec<u8> {
    let mut page = vec![0u8; p.page_size];
    p.region.copy_out(p.data_offset(n), &mut page).unwrap();
    page
}

#[test]
fn line_write_backs_keep_the_data_crc() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(&dir, 1 << 20);
    let n = p.pop_free().unwrap();
    let page: Vec<u8> = (0..4096).map(|i| (i * 7 % 253) as u8).collect();
    p.write_page(n, PageId(4), &page, false, Lsn::new(1)).unwrap();
    // Lines read back from the frame for the CRC, then with the caller's old copy.
    let (a, b) = (vec![1u8; 128], vec![2u8; 64]);
    p.write_lines(n, PageId(4), &[(64, &a), (4032, &b)], None, Lsn::new(2)).unwrap();
    let old = frame_bytes(&p, n);
    let c = vec![3u8; 192];
    p.write_lines(n, PageId(4), &[(1024, &c)], Some(&old), Lsn::new(3)).unwrap();
    let h = p.header(n).unwrap().unwrap();
    assert_eq!(h.flags, FLAG_VALID | FLAG_DIRTY, "no NO_CRC flag");
    assert_eq!(h.data_crc, crc32c::crc32c(&frame_bytes(&p, n)));
    let mut back = vec![0u8; 4096];
    p.read_page(n, PageId(4), &mut back).unwrap();
    // A frame of an earlier build without a CRC gets one at its next write-back.
    let mut legacy = h;
    legacy.flags |= FLAG_NO_CRC;
    legacy.data_crc = 0;
    p.write_header(n, &legacy).unwrap();
    p.metas[n.index()].no_crc.store(true, Ordering::Relaxed);
    p.write_lines(n, PageId(4), &[(0, &b)], None, Lsn::new(4)).unwrap();
    let h = p.header(n).unwrap().unwrap();
    assert_eq!((h.flags & FLAG_NO_CRC, h.data_crc), (0, crc32c::crc32c(&frame_bytes(&p, n))));
}

/// A log whose end is set by the test.
struct Clock(AtomicU64);

impl crate::wal::LogForce for Clock {
    fn force(&self, _lsn: Lsn) -> Result<(), crate::wal::WalError> {
        Ok(())
    }
    fn end_lsn(&self) -> Lsn {
        self.0.load_lsn(Ordering::Relaxed)
    }
}

#[test]
fn a_clean_frame_changed_in_place_is_bound_by_when_it_was_last_clean() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(&dir, 1 << 20);
    let clock = std::sync::Arc::new(Clock(AtomicU64::new(1_000)));
    p.set_lsn_clock(clock.clone());
    let n = p.pop_free().unwrap();
    // The page's last change (LSN 7) is on SSD; the frame is written clean when the
    // log is at 1,000 (a checkpoint may delete the log before that).
    p.write_page(n, PageId(4), &vec![5u8; 4096], false, Lsn::new(7)).unwrap();
    clock.0.store(2_000, Ordering::Relaxed);
    p.write_lines(n, PageId(4), &[(64, &[1u8; 64])], None, Lsn::new(1_500)).unwrap();
    let h = p.header(n).unwrap().unwrap();
    assert_eq!((h.flags & FLAG_DIRTY, h.rec_lsn), (FLAG_DIRTY, Lsn::new(1_000)), "not the page LSN 7");
    assert_eq!(p.rec_lsn(n), Lsn::new(1_000));
    // Dirty, it keeps its bound through later changes; clean again, a new one.
    p.write_lines(n, PageId(4), &[(128, &[2u8; 64])], None, Lsn::new(2_100)).unwrap();
    assert_eq!(p.header(n).unwrap().unwrap().rec_lsn, Lsn::new(1_000));
    clock.0.store(3_000, Ordering::Relaxed);
    p.mark_clean(n).unwrap();
    p.write_lines(n, PageId(4), &[(192, &[3u8; 64])], None, Lsn::new(3_100)).unwrap();
    assert_eq!(p.header(n).unwrap().unwrap().rec_lsn, Lsn::new(3_000));
}

#[test]
fn reads_check_once_after_a_reopen_or_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let open = || NvmRegion::open(&NvmConfig::new(dir.path().join("p.nvm"), ByteSize(1 << 20))).unwrap();
    let p = NvmPool::format(open(), 4096, 7, NvmVerify::Cheap).unwrap();
    let page = vec![9u8; 4096];
    let (clean, dirty) = (p.pop_free().unwrap(), p.pop_free().unwrap());
    p.write_page(clean, PageId(5), &page, false, Lsn::NONE).unwrap();
    p.write_page_rec(dirty, PageId(6), &page, true, Lsn::new(40), Lsn::new(33)).unwrap();
    flip(&p, clean, 100);
    flip(&p, dirty, 4000);
    // Written by this process: checked already, so the cheap mode does not look.
    let mut line = vec![0u8; 64];
    p.read_lines(clean, PageId(5), 64, &mut line).unwrap();
    drop(p);
    // Cheap: the dirty frame is cleared at the reopen (its page is rebuilt from its
    // recovery LSN), the clean one fails its first read, once checked.
    let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Cheap, true).unwrap().ok().unwrap();
    assert_eq!(r.pages.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![clean]);
    assert!(r.cleared.len() == 1 && r.cleared[0].1.contains("fails its data CRC"), "{:?}", r.cleared);
    assert_eq!(r.log_needed_from, Some(Lsn::new(33)));
    let e = r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap_err();
    assert!(e.to_string().contains("p.nvm") && e.to_string().contains("NVM frame"), "{e}");
    flip(&r.pool, clean, 100);
    r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap();
    flip(&r.pool, clean, 100);
    r.pool.read_lines(clean, PageId(5), 0, &mut line).unwrap(); // checked: not again
    drop(r);
    // Every: checked at the reopen, and at each read.
    let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Every, true).unwrap().ok().unwrap();
    assert!(r.pages.is_empty() && r.cleared.len() == 1, "{:?}", r.cleared);
    let n = r.pool.pop_free().unwrap();
    r.pool.write_page(n, PageId(5), &page, false, Lsn::NONE).unwrap();
    r.pool.read_lines(n, PageId(5), 0, &mut line).unwrap();
    flip(&r.pool, n, 7);
    assert!(matches!(r.pool.read_lines(n, PageId(5), 0, &mut line), Err(BufferError::Corrupted { .. })));
    drop(r);
    // Without SSD nothing rebuilds a cleared page: the frame stays, and its read fails.
    let r = NvmPool::reopen(open(), 4096, 7, NvmVerify::Every, false).unwrap().ok().unwrap();
    assert!(r.cleared.is_empty() && r.pages.len() == 1, "{:?}", r.cleared);
    assert!(r.pool.check_before_read(n, PageId(5)).is_err());
}
