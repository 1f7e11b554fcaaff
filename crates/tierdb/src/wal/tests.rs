use std::path::Path;
use std::time::Duration;

use super::config::SCAN_CHUNK_BYTES;
use super::*;
use crate::ByteSize;
use crate::device::NvmConfig;
use crate::device::log_file::{LOG_SEGMENT_BYTES_MIN, LOG_STREAM_START};

fn config(dir: &Path, nvm_ring: Option<u64>) -> WalConfig {
    let mut c = WalConfig::new(dir.join("wal"));
    c.file.segment_bytes = LOG_SEGMENT_BYTES_MIN;
    if let Some(bytes) = nvm_ring {
        c.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("log.nvm"), ByteSize(bytes)));
    }
    c
}

/// The payload of the `i`-th test record: its number and a length that varies.
fn payload(i: u64) -> Vec<u8> {
    let mut p = i.to_le_bytes().to_vec();
    p.resize(8 + (i as usize * 37) % 700, (i % 251) as u8);
    p
}

fn head(i: u64) -> RecordHead {
    RecordHead::new(if i % 10 == 9 { Kind::Commit } else { Kind::Update }, 1 + i % 3, Lsn::NONE).page(i)
}

/// Appends records `from..to`, returning their LSNs.
fn append(wal: &Wal, from: u64, to: u64) -> Vec<Lsn> {
    (from..to).map(|i| wal.append(&head(i), &payload(i)).unwrap()).collect()
}

/// The log holds exactly records `0..n` in order.
fn check(wal: &Wal, n: u64) {
    let recs: Vec<Record> = wal.records_from(wal.start_lsn()).map(Result::unwrap).collect();
    assert_eq!(recs.len() as u64, n);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!((r.head, r.payload.as_slice()), (head(i as u64), payload(i as u64).as_slice()), "record {i}");
    }
}

#[test]
fn dram_buffer_survives_close_and_reopen_across_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    let mut lsns = Vec::new();
    for batch in 0..10 {
        // Segments end between flushes: flush in batches so that there are several.
        lsns.extend(append(&wal, batch * 50, batch * 50 + 50));
        if batch < 9 {
            wal.flush_until(wal.next_lsn()).unwrap();
        }
    }
    assert!(lsns.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(wal.read(lsns[7]).unwrap().payload, payload(7), "read from the DRAM buffer");
    wal.commit(wal.next_lsn(), Durability::Sync).unwrap();
    assert_eq!(wal.durable_lsn(), wal.next_lsn());
    assert_eq!(wal.read(lsns[7]).unwrap().payload, payload(7), "read from the file");
    wal.close().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    assert_eq!((wal.recovered().records, wal.recovered().tail.clone()), (500, None));
    assert!(wal.file().segment_paths().len() > 2, "{:?}", wal.file().segment_paths());
    check(&wal, 500);
    // Appending continues after the recovered end; truncation drops whole old segments.
    append(&wal, 500, 600);
    wal.flush_until(wal.next_lsn()).unwrap();
    let cut = wal.read(lsns[300]).unwrap().lsn;
    assert!(wal.truncate_before(cut).unwrap() >= 1);
    assert!(wal.start_lsn() > lsns[0] && wal.start_lsn() <= cut);
    assert!(matches!(wal.read(lsns[0]), Err(WalError::NoRecord { .. })));
}

#[test]
fn a_torn_or_corrupt_tail_is_cut_at_the_last_valid_record() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    let lsns = append(&wal, 0, 40);
    wal.flush_until(wal.next_lsn()).unwrap();
    let end = wal.next_lsn();
    let last = wal.file().segment_paths().pop().unwrap();
    let seg_start = Lsn::new(
        u64::from_str_radix(last.file_name().unwrap().to_str().unwrap().trim_end_matches(".wal"), 16).unwrap(),
    );
    wal.close().unwrap();
    // 1. A torn write: half a record's bytes after the end.
    let mut f = std::fs::OpenOptions::new().append(true).open(&last).unwrap();
    std::io::Write::write_all(&mut f, &[0x41; 100]).unwrap();
    drop(f);
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    let r = wal.recovered().clone();
    assert_eq!((r.end, r.records), (end, 40));
    assert!(r.tail.as_deref().unwrap().contains("cut"), "{r:?}");
    assert_eq!(wal.file().end(), end, "the torn bytes are gone");
    wal.close().unwrap();
    // 2. A flipped bit inside the last record, 39: as a torn write would leave it.
    let mut bytes = std::fs::read(&last).unwrap();
    bytes[(lsns[39].bytes_since(seg_start) + 70) as usize] ^= 0x10;
    std::fs::write(&last, &bytes).unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    assert_eq!((wal.recovered().end, wal.recovered().records), (lsns[39], 39));
    assert!(wal.recovered().tail.as_deref().unwrap().contains("CRC"), "{:?}", wal.recovered());
    check(&wal, 39);
    wal.close().unwrap();
    // 3. A flipped bit inside record 35, with records 36..39 after it: not a torn
    //    tail, so an error naming the file and the byte, and nothing is cut.
    let damaged = (lsns[35].bytes_since(seg_start) + 70) as usize;
    let mut bytes = std::fs::read(&last).unwrap();
    bytes[damaged] ^= 0x10;
    std::fs::write(&last, &bytes).unwrap();
    let e = Wal::open(&config(tmp.path(), None)).unwrap_err();
    let WalError::Corrupted { file, offset, lsn, detail } = &e else { panic!("{e}") };
    assert_eq!((file, *offset, *lsn), (&last, lsns[35].bytes_since(seg_start), lsns[35]), "{e}");
    assert!(detail.contains("CRC") && detail.contains("a valid record follows"), "{e}");
    assert_eq!(std::fs::read(&last).unwrap(), bytes, "nothing cut");
    // 4. Salvage cuts there and moves the next LSN past every byte the log held.
    let mut cfg = config(tmp.path(), None);
    cfg.salvage_damaged_log = true;
    let wal = Wal::open(&cfg).unwrap();
    let r = wal.recovered().clone();
    assert_eq!(r.salvaged, Some(lsns[35]), "{r:?}");
    assert!(r.tail.as_deref().unwrap().contains("salvaged"), "{r:?}");
    assert!(r.end >= lsns[39], "{r:?}");
    let recs: Vec<Record> = wal.records_from(wal.start_lsn()).map(Result::unwrap).collect();
    assert!(recs[35..].iter().all(|r| r.head.kind == Kind::Filler), "{:?}", &recs[35..]);
    assert_eq!(recs.len() - recs.iter().filter(|r| r.head.kind == Kind::Filler).count(), 35);
    wal.close().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    assert_eq!((wal.recovered().end, wal.recovered().tail.clone()), (r.end, None), "the salvaged log is whole");
}

#[test]
fn group_commit_shares_syncs_between_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path(), None);
    cfg.flush_interval = Duration::from_secs(3600); // only commits flush
    let wal = Wal::open(&cfg).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let wal = &wal;
            s.spawn(move || {
                for i in 0..200u64 {
                    let lsn = wal.append(&RecordHead::new(Kind::Commit, t, Lsn::NONE), &i.to_le_bytes()).unwrap();
                    wal.commit(lsn.advance(1), Durability::Sync).unwrap();
                    assert!(wal.durable_lsn() > lsn);
                }
            });
        }
    });
    let st = wal.stats();
    assert_eq!(st.records, 800);
    assert!(st.syncs < 800 && st.syncs > 0, "{st:?}");
}

#[test]
fn nvm_buffer_records_survive_a_crash_before_the_flusher_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path(), Some(256 << 10));
    cfg.flush_interval = Duration::from_secs(3600);
    let wal = Wal::open(&cfg).unwrap();
    assert!(wal.buffer_in_nvm());
    let lsns = append(&wal, 0, 800);
    assert_eq!(wal.durable_lsn(), wal.next_lsn(), "durable at append");
    assert_eq!(wal.read(lsns[3]).unwrap().payload, payload(3), "read from the ring");
    // The ring filled and flushed itself on the way; then "crash": nothing more runs.
    let in_file = wal.file().end();
    assert!(in_file > LOG_STREAM_START && in_file < wal.next_lsn(), "{in_file}");
    std::mem::forget(wal);
    let wal = Wal::open(&cfg).unwrap();
    let r = wal.recovered().clone();
    assert!(r.from_ring > 0 && r.records == 800 && r.tail.is_none(), "{r:?}");
    check(&wal, 800);
    assert_eq!(wal.file().end(), wal.next_lsn(), "the ring's records were copied into the file");
    // Appends go on; a clean close leaves everything in the file.
    append(&wal, 800, 900);
    wal.close().unwrap();
    let wal = Wal::open(&cfg).unwrap();
    assert_eq!((wal.recovered().from_ring, wal.recovered().records), (0, 900));
    check(&wal, 900);
}

/// A flush from the NVM ring that is too long for one write is written in pieces that
/// end between records. A segment begins at a piece, and once the segments before it
/// are truncated, opening the log reads it from that segment's first byte. Before, the
/// pieces were 4 MiB of bytes each: a segment could begin inside a record, and after a
/// checkpoint's truncation the log failed to open, the bytes of that record's tail "not
/// a record" at the segment's start (seen once in `tierdb nvsql-bench`, docs/wal.md).
#[test]
fn a_segment_begun_inside_a_long_ring_flush_starts_with_a_record() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path(), Some(16 << 20));
    cfg.flush_interval = Duration::from_secs(3600);
    let wal = Wal::open(&cfg).unwrap();
    // The flusher fell behind by more than one write (4 MiB), with records whose sizes
    // vary, so that a piece of bytes of that size would end inside one.
    let mut n = 0;
    while wal.next_lsn().bytes_since(LOG_STREAM_START) < 6 << 20 {
        wal.append(&head(n), &payload(n)).unwrap();
        n += 1;
    }
    assert_eq!(wal.file().end(), LOG_STREAM_START, "nothing flushed before the long flush");
    wal.flush_until(Lsn::MAX).unwrap();
    assert_eq!(wal.file().end(), wal.next_lsn());
    let segments = wal.file().segment_paths();
    assert!(segments.len() >= 2, "the long flush began a segment: {segments:?}");
    // Every segment begins with a record that names the segment's first LSN.
    let first_record = |wal: &Wal, path: &Path| {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let start = Lsn::new(u64::from_str_radix(name, 16).unwrap());
        let mut buf = vec![0u8; record::RECORD_BYTES_MAX];
        let got = wal.file().read(start, &mut buf).unwrap();
        record::decode(start, &buf[..got]).map(|r| r.lsn).map_err(|e| format!("{}: {e}", path.display()))
    };
    for path in &segments {
        let start = first_record(&wal, path).unwrap();
        assert!(start > Lsn::NONE, "{}", path.display());
    }
    // A checkpoint's truncation, then a crash: the log opens at the segment's first record.
    assert_eq!(wal.truncate_before(wal.next_lsn()).unwrap(), segments.len() - 1);
    let start = wal.start_lsn();
    assert!(start > LOG_STREAM_START);
    std::mem::forget(wal);
    let wal = Wal::open(&cfg).unwrap();
    assert_eq!((wal.start_lsn(), wal.recovered().tail.clone()), (start, None));
    let recs: Vec<Record> = wal.records_from(start).map(Result::unwrap).collect();
    let first = u64::from_le_bytes(recs[0].payload[..8].try_into().unwrap());
    assert_eq!(first + recs.len() as u64, n, "the records of the last segment, up to the last appended");
    for (k, r) in recs.iter().enumerate() {
        let i = first + k as u64;
        assert_eq!((r.head, r.payload.as_slice()), (head(i), payload(i).as_slice()), "record {i}");
    }
}

/// A ring flush's write ends after the last record wholly in its buffer; a length field
/// no record has is damage, not a boundary.
#[test]
fn a_ring_flush_write_ends_between_records() {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for i in 0..20 {
        let at = bytes.len();
        let len = record::encoded_len(payload(i).len());
        bytes.resize(at + len, 0);
        record::encode_into(LOG_STREAM_START.advance(at as u64), &head(i), &payload(i), &mut bytes[at..]);
        ends.push(at + len);
    }
    for cut in 0..=bytes.len() {
        let want = ends.iter().copied().filter(|&e| e <= cut).max().unwrap_or(0);
        assert_eq!(super::append::whole_records_bytes(&bytes[..cut]), Ok(want), "cut at {cut}");
    }
    bytes[ends[3] + 4..ends[3] + 8].copy_from_slice(&3u32.to_le_bytes());
    assert!(super::append::whole_records_bytes(&bytes).unwrap_err().contains("length field holds 3"));
}

#[test]
fn bad_configurations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path(), None);
    cfg.buffer_bytes = 1000;
    assert!(matches!(Wal::open(&cfg), Err(WalError::Config { .. })));
    let cfg = config(tmp.path(), Some(64 * 1024));
    assert!(Wal::open(&cfg).unwrap_err().to_string().contains("ring needs"));
    assert!("eventually".parse::<Durability>().is_err());
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    let big = vec![0u8; record::PAYLOAD_BYTES_MAX + 1];
    assert!(matches!(wal.append(&head(0), &big), Err(WalError::TooLarge { .. })));
}

/// Several threads append to an NVM ring small enough to wrap and fill many times:
/// every record is in the log once, whole, in LSN order, and durable when its append
/// returns; after a drop without close, recovery finds them all in the ring.
#[test]
fn concurrent_appends_to_an_nvm_ring_keep_every_record() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 3000;
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&config(tmp.path(), Some(256 << 10))).unwrap();
    let appended: Vec<Vec<(Lsn, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let wal = &wal;
                s.spawn(move || {
                    (0..PER_THREAD)
                        .map(|n| {
                            let i = t * PER_THREAD + n;
                            let lsn = wal.append(&head(i), &payload(i)).unwrap();
                            assert!(wal.durable_lsn() > lsn, "record {i} at {lsn} not durable on return");
                            (lsn, i)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<(Lsn, u64)> = appended.into_iter().flatten().collect();
    all.sort_unstable();
    assert!(wal.stats().flushes > 0, "the ring never filled: {:?}", wal.stats());
    let check_all = |wal: &Wal| {
        let recs: Vec<Record> = wal.records_from(wal.start_lsn()).map(Result::unwrap).collect();
        assert_eq!(recs.len(), all.len());
        for (r, &(lsn, i)) in recs.iter().zip(&all) {
            assert_eq!((r.lsn, r.head, r.payload.as_slice()), (lsn, head(i), payload(i).as_slice()), "record {i}");
        }
    };
    check_all(&wal);
    // Lost without a close: the ring's records are recovered into the file.
    drop(wal);
    let wal = Wal::open(&config(tmp.path(), Some(256 << 10))).unwrap();
    assert_eq!(wal.recovered().tail, None);
    check_all(&wal);
}

/// A scan reads the log file in chunks, not a device read per record, and yields the
/// same records as reading each one; records past the file (still in the DRAM buffer)
/// follow those in it, and a scan from the middle starts at that record.
#[test]
fn a_scan_reads_the_file_ahead_in_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    let lsns = append(&wal, 0, 3_000);
    wal.flush_until(wal.next_lsn()).unwrap();
    // 200 more that stay in the DRAM buffer (no flush; the flusher may move some).
    let more = append(&wal, 3_000, 3_200);
    let reads = || wal.file().core().stats().snapshot().reads;
    let before = reads();
    check(&wal, 3_200);
    let bytes = wal.next_lsn().bytes_since(wal.start_lsn());
    let chunked = reads() - before;
    assert!(chunked <= bytes / SCAN_CHUNK_BYTES as u64 + 4, "{chunked} device reads for a {bytes}-byte scan");
    // Record by record: two reads each (header, then the record).
    let before = reads();
    for (i, &l) in lsns.iter().enumerate().take(100) {
        assert_eq!(wal.read(l).unwrap().payload, payload(i as u64));
    }
    assert!(reads() - before >= 100, "reading records one by one reads the file each time");
    let from_middle: Vec<Record> = wal.records_from(lsns[1_234]).map(Result::unwrap).collect();
    assert_eq!(from_middle.len(), 3_200 - 1_234);
    assert_eq!(from_middle[0].lsn, lsns[1_234]);
    assert_eq!(from_middle.last().unwrap().lsn, *more.last().unwrap());
}

/// The ring of an existing log is never made afresh when it may hold records the file
/// lacks: missing, zeroed or foreign, it is an error naming the file; only a clean close
/// that left the file at its end lets a new ring be made.
#[test]
fn a_lost_nvm_ring_of_an_existing_log_is_an_error_unless_the_file_holds_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path(), Some(1 << 20));
    cfg.flush_interval = Duration::from_secs(3600);
    let ring_path = tmp.path().join("log.nvm");
    let wal = Wal::open(&cfg).unwrap();
    append(&wal, 0, 20);
    let in_ring_end = wal.next_lsn();
    drop(wal); // a crash: the records are in the ring only
    cfg.ring_init = RingInit::Existing;
    let ring = std::fs::read(&ring_path).unwrap();
    let damaged: [(&str, Option<Vec<u8>>); 3] = [
        ("the file is missing", None),
        ("all zeros", Some(vec![0u8; ring.len()])),
        ("no ring magic", Some([b"NOTARING".as_slice(), &ring[8..]].concat())),
    ];
    for (why, bytes) in damaged {
        match &bytes {
            None => std::fs::remove_file(&ring_path).unwrap(),
            Some(b) => std::fs::write(&ring_path, b).unwrap(),
        }
        for init in [RingInit::Existing, RingInit::ClosedAt(LOG_STREAM_START.advance(1))] {
            cfg.ring_init = init;
            let e = Wal::open(&cfg).map(|_| ()).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, WalError::RingLost { .. }), "{msg}");
            assert!(msg.contains(&ring_path.display().to_string()) && msg.contains(why), "{init:?}: {msg}");
        }
        assert_eq!(!ring_path.exists(), bytes.is_none(), "{why}: nothing made or formatted");
        std::fs::write(&ring_path, &ring).unwrap();
    }
    cfg.ring_init = RingInit::Existing;
    let wal = Wal::open(&cfg).unwrap();
    assert_eq!((wal.recovered().from_ring, wal.next_lsn()), (20, in_ring_end), "the ring put back: every record");
    wal.close().unwrap();
    // Closed cleanly: every record is in the file, which ends where the close left it.
    std::fs::remove_file(&ring_path).unwrap();
    cfg.ring_init = RingInit::ClosedAt(in_ring_end);
    let wal = Wal::open(&cfg).unwrap();
    assert!(wal.ring_remade().is_some_and(|n| n.contains("made afresh")), "{:?}", wal.ring_remade());
    check(&wal, 20);
    wal.close().unwrap();
}

/// Salvage moves a log past a page's LSN with filler records, durably, and only as far
/// as a log could have reached.
#[test]
fn skip_past_moves_the_log_with_fillers_up_to_a_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&config(tmp.path(), None)).unwrap();
    append(&wal, 0, 3);
    let target = wal.next_lsn().advance(200_000);
    wal.skip_past(target).unwrap();
    assert!(wal.next_lsn() > target && wal.durable_lsn() == wal.next_lsn());
    let recs: Vec<Record> = wal.records_from(wal.start_lsn()).map(Result::unwrap).collect();
    assert!(recs[3..].iter().all(|r| r.head.kind == Kind::Filler), "{}", recs.len());
    let far = wal.next_lsn().advance(SKIP_BYTES_MAX + 1);
    assert!(matches!(wal.skip_past(far), Err(WalError::SkipTooFar { .. })));
    wal.close().unwrap();
}
