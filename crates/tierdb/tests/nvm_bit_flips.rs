//! Flipped bytes in NVM page data (issue 18, 6): on `three-tier`, `nvsql` and
//! `nvm-direct`, bytes of the pages in NVM — node headers, keys, values — are flipped,
//! one flip per copy of the database, in a closed and in a crashed database, which is
//! then reopened and read whole (every key, and a scan for keys never written). Each
//! read gives the committed value or a typed error naming the NVM file; a flip is
//! reported (an error, or its frame cleared or dropped and the page rebuilt) or harmless:
//! its byte no longer in any live page (a frame dropped as stale, bytes rewritten by
//! recovery). Before the page CRCs were checked at a restart (line-grained loads,
//! in-place reads) and kept (line write-backs, `nvm-direct`), such flips were returned as
//! data: wrong values and keys never written.
//!
//! A third test flips bytes while the database is open, after every page was checked
//! once: with `--nvm-verify every` each read still checks its page, so no flip reaches
//! a reader; the cheap default does not check again (its counts are printed).
//!
//! The flips come from a fixed seed; `TIERDB_SEED=<seed>` reruns another.

use std::collections::BTreeMap;
use std::path::Path;

mod files;
use files::copy_dir;

use tierdb::buffer::{BufferManager, Entry, Techniques};
use tierdb::db::{CheckpointConfig, Db, DbConfig, DbStore};
use tierdb::device::{DoubleWriteMode, DramConfig, NvmConfig, SsdConfig};
use tierdb::ids::NvmSlot;
use tierdb::page::NvmVerify;
use tierdb::sources::DirectConfig;
use tierdb::sources::NvmDirect;
use tierdb::wal::Durability;
use tierdb::{ByteSize, PageId};

const PS: usize = 4096;
const KEYS: u32 = 1500;
/// Flips per database state, architecture and verify mode, each in its own copy.
const FLIPS: usize = 40;
const NVM_FRAMES: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arch {
    ThreeTier,
    Nvsql,
    NvmDirect,
}

impl Arch {
    fn nvm_file(self) -> &'static str {
        if self == Arch::NvmDirect { "data.nvm" } else { "pool.nvm" }
    }
}

fn seed() -> u64 {
    std::env::var("TIERDB_SEED").map_or(0x5eed_f11b, |s| s.parse().expect("TIERDB_SEED is a number"))
}

fn config(arch: Arch, dir: &Path, verify: NvmVerify) -> (DbConfig, Option<DirectConfig>) {
    let mut c = DbConfig::new(dir.join("db"));
    // No background checkpoints: a crashed (forgotten) database writes nothing more, and what recovery finds is asserted.
    c.checkpoint = CheckpointConfig::OFF;
    c.buffer.page_size = PS;
    c.buffer.dram = DramConfig::new(ByteSize(16 * PS as u64));
    c.buffer.nvm_verify = verify;
    c.durability = Durability::Sync;
    let pool = || NvmConfig::new(dir.join("pool.nvm"), ByteSize(NVM_FRAMES * (PS as u64 + 64) + 16384));
    match arch {
        Arch::ThreeTier => {
            c.buffer.nvm = Some(pool());
            c.buffer.techniques = Techniques::ALL;
            c.buffer.policy = "hymem".into();
            (c, None)
        }
        Arch::Nvsql => {
            c.buffer.nvm = Some(pool());
            c.buffer.policy = "nvsql:admit=always".into();
            c.buffer.double_write = DoubleWriteMode::Nvm;
            let mut ssd = SsdConfig::new(dir.join("db").join("data.db"));
            ssd.page_size = PS;
            ssd.nvm_double_write.path = dir.join("pool.nvm.dwa");
            c.buffer.ssd = Some(ssd);
            (c, None)
        }
        Arch::NvmDirect => {
            let mut d = DirectConfig::new(NvmConfig::new(dir.join("data.nvm"), ByteSize(512 * PS as u64)), PS);
            d.nvm_verify = verify;
            (c, Some(d))
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32, version: u32) -> Vec<u8> {
    let mut v = vec![(i.wrapping_mul(31) ^ version) as u8; 90 + (i % 40) as usize];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v[4..8].copy_from_slice(&version.to_le_bytes());
    v
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Inserts every key (scattered, a checkpoint half way), then updates every third one:
/// pages move through every tier and are written back whole and line by line.
fn fill<S: DbStore>(db: &Db<S>) -> Model {
    db.create_tree("t").unwrap();
    let mut model = Model::new();
    for i in 0..KEYS {
        let k = (i * 7919) % KEYS;
        db.put("t", &key(k), &value(k, 0)).unwrap();
        model.insert(key(k), value(k, 0));
        if i == KEYS / 2 {
            db.checkpoint().unwrap();
        }
    }
    for k in (0..KEYS).step_by(3) {
        db.put("t", &key(k), &value(k, 1)).unwrap();
        model.insert(key(k), value(k, 1));
    }
    model
}

/// Where page data lies in the NVM file: `(file offset, frame or slot)` per page.
fn page_ranges(arch: Arch, dir: &Path, direct: &[(u64, u32)]) -> Vec<(u64, u32)> {
    if arch == Arch::NvmDirect {
        return direct.to_vec();
    }
    // The NVM pool's format (docs/format.md): frame count at 16, headers of 64 bytes
    // from 4096, frames from the next 4 KiB boundary after them.
    let b = std::fs::read(dir.join(arch.nvm_file())).unwrap();
    let count = u64::from_le_bytes(b[16..24].try_into().unwrap());
    let data = (4096 + 64 * count).next_multiple_of(4096);
    (0..count)
        .filter(|n| {
            let h = &b[(4096 + 64 * n) as usize..(4096 + 64 * (n + 1)) as usize];
            let flags = u32::from_le_bytes(h[16..20].try_into().unwrap());
            h.iter().any(|&x| x != 0) && flags & 1 != 0 && flags & 4 == 0
        })
        .map(|n| (data + n * PS as u64, n as u32))
        .collect()
}

/// Makes the database in `dir`, closed or abandoned as a kill leaves it; returns what
/// it holds and where its pages are in NVM.
fn make(arch: Arch, dir: &Path, crashed: bool) -> (Model, Vec<(u64, u32)>) {
    let (c, direct) = config(arch, dir, NvmVerify::Cheap);
    let mut slots = Vec::new();
    let model = match direct {
        Some(d) => {
            let db = Db::open_nvm_direct(&c, &d).unwrap();
            let model = fill(&db);
            // Inserts and updates only: pages 1..=in use are allocated.
            let pages = db.store().pages();
            for pid in 1..=db.store().pages_in_use() {
                slots.push((pages.slot_offset(pid as u32 - 1), pid as u32 - 1));
            }
            if crashed {
                std::mem::forget(db)
            } else {
                db.close().unwrap()
            }
            model
        }
        None => {
            let db = Db::open(&c).unwrap();
            let model = fill(&db);
            if crashed {
                std::mem::forget(db)
            } else {
                db.close().unwrap()
            }
            model
        }
    };
    let ranges = page_ranges(arch, dir, &slots);
    assert!(ranges.len() >= 8, "{arch:?}: only {} pages in NVM", ranges.len());
    (model, ranges)
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// `n` flips `(file offset, frame or slot, xor mask)` in the pages: a third in the
/// node header (the first 64 bytes), a third in the first 512 bytes (slots, first
/// keys), a third anywhere in the page.
fn flips(ranges: &[(u64, u32)], n: usize, salt: u64) -> Vec<(u64, u32, u8)> {
    let mut x = seed() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            let (at, frame) = ranges[(xorshift(&mut x) % ranges.len() as u64) as usize];
            let span = [64, 512, PS as u64][i % 3];
            let mask = 1u8 << (xorshift(&mut x) % 8);
            (at + xorshift(&mut x) % span, frame, mask)
        })
        .collect()
}

fn flip(path: &Path, at: u64, mask: u8) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= mask;
    f.write_all_at(&b, at).unwrap();
}

fn byte_at(path: &Path, at: u64) -> u8 {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 1];
    std::fs::File::open(path).unwrap().read_exact_at(&mut b, at).unwrap();
    b[0]
}

/// What reading the whole database gave.
#[derive(Debug, Default)]
struct Reads {
    /// Keys read with a value other than the committed one, or missing.
    wrong: usize,
    /// Keys a scan returned that were never written.
    never_written: usize,
    /// Errors naming the NVM file.
    errors: usize,
    /// Errors that do not name it.
    other_errors: Vec<String>,
}

fn read_all<S: DbStore>(db: &Db<S>, model: &Model, nvm_file: &str) -> Reads {
    let mut r = Reads::default();
    let error = |e: tierdb::Error, r: &mut Reads| {
        let msg = e.to_string();
        if msg.contains(nvm_file) { r.errors += 1 } else { r.other_errors.push(msg) }
    };
    for (k, v) in model {
        match db.get("t", k) {
            Ok(Some(got)) if &got == v => {}
            Ok(_) => r.wrong += 1,
            Err(e) => error(e, &mut r),
        }
    }
    let mut scanned = Vec::new();
    match db.scan("t", b"", |k, _| {
        scanned.push(k.to_vec());
        true
    }) {
        Ok(()) => r.never_written = scanned.iter().filter(|k| !model.contains_key(*k)).count(),
        Err(e) => error(e, &mut r),
    }
    r
}

/// One flipped copy, opened and read.
#[derive(Debug)]
enum Outcome {
    /// Reported: an error naming the NVM file (at open or on a read), or the frame
    /// cleared at the reopen or dropped when read, its page rebuilt (reads right).
    Detected,
    /// Nothing reported, every read right, and the flipped byte is in no live page: its
    /// frame holds no page any more, or the byte was rewritten.
    Harmless,
    /// A read gave a wrong value or a key never written, an error did not name the
    /// file, or a flipped byte still in a live page went unreported.
    Broken(String),
}

/// Opens the copy in `dir` (its byte at `at`, in frame or slot `frame`, flipped), reads
/// it whole and classifies the result.
fn open_and_read(arch: Arch, dir: &Path, verify: NvmVerify, model: &Model, at: u64, frame: u32) -> Outcome {
    let (c, direct) = config(arch, dir, verify);
    let nvm_path = dir.join(arch.nvm_file());
    let flipped = byte_at(&nvm_path, at);
    let judge = |opened: Result<(Reads, usize, bool), String>| -> Outcome {
        let (reads, reported, live) = match opened {
            Err(e) if e.contains(arch.nvm_file()) => return Outcome::Detected,
            Err(e) => return Outcome::Broken(format!("the open failed without naming {}: {e}", arch.nvm_file())),
            Ok(x) => x,
        };
        if reads.wrong > 0 || reads.never_written > 0 || !reads.other_errors.is_empty() {
            return Outcome::Broken(format!("{reads:?}"));
        }
        if reads.errors > 0 || reported > 0 {
            return Outcome::Detected;
        }
        if live && byte_at(&nvm_path, at) == flipped {
            return Outcome::Broken(format!("a flip in a live page went unreported ({reads:?})"));
        }
        Outcome::Harmless
    };
    match direct {
        Some(d) => judge(Db::open_nvm_direct(&c, &d).map_err(|e| e.to_string()).map(|db| {
            let reads = read_all(&db, model, arch.nvm_file());
            (reads, 0, true)
        })),
        None => judge(Db::open(&c).map_err(|e| e.to_string()).map(|db| {
            let reads = read_all(&db, model, arch.nvm_file());
            let bm: &BufferManager = db.buffer();
            let reported = db.recovery().nvm_frames_cleared + bm.stats().buffer.nvm_corrupt_dropped as usize;
            let live = bm.nvm().unwrap().pid(NvmSlot::new(frame)).is_some();
            (reads, reported, live)
        })),
    }
}

/// Flips bytes of `arch`'s pages in NVM, one per copy of a closed or crashed database,
/// under each verify mode; returns a line per broken outcome.
fn campaign(arch: Arch, crashed: bool) -> Vec<String> {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let pristine = base.path().join("pristine");
    let (model, ranges) = make(arch, &pristine, crashed);
    let state = if crashed { "crashed" } else { "closed" };
    let mut broken = Vec::new();
    for (m, verify) in [NvmVerify::Cheap, NvmVerify::Every].into_iter().enumerate() {
        let (mut detected, mut harmless) = (0, 0);
        for (i, (at, frame, mask)) in
            flips(&ranges, FLIPS, m as u64 * 1000 + u64::from(crashed)).into_iter().enumerate()
        {
            let dir = base.path().join(format!("case{m}-{i}"));
            copy_dir(&pristine, &dir);
            flip(&dir.join(arch.nvm_file()), at, mask);
            match open_and_read(arch, &dir, verify, &model, at, frame) {
                Outcome::Detected => detected += 1,
                Outcome::Harmless => harmless += 1,
                Outcome::Broken(why) => broken.push(format!(
                    "{arch:?} {state}, verify {verify}, byte {at} (frame/slot {frame}) ^ {mask:#04x}: {why} (seed {})",
                    seed()
                )),
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
        eprintln!("{arch:?} {state}, verify {verify}: {FLIPS} flips, {detected} detected, {harmless} harmless");
    }
    broken
}

fn check(arch: Arch, crashed: bool) {
    let broken = campaign(arch, crashed);
    assert!(broken.is_empty(), "{} flip(s) broke the rule:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn flipped_nvm_bytes_of_a_closed_database_are_reported_or_harmless() {
    for arch in [Arch::ThreeTier, Arch::Nvsql, Arch::NvmDirect] {
        check(arch, false);
    }
}

#[test]
fn flipped_nvm_bytes_of_a_crashed_database_are_reported_or_harmless() {
    for arch in [Arch::ThreeTier, Arch::Nvsql, Arch::NvmDirect] {
        check(arch, true);
    }
}

/// Frames or slots of pages read in NVM now (not in DRAM): `(file offset, frame/slot)`.
fn pages_in_nvm_now(db: &Db<BufferManager>) -> Vec<(u64, u32)> {
    let bm = db.buffer();
    let nvm = bm.nvm().unwrap();
    nvm.slots()
        .filter(|&n| nvm.pid(n).is_some_and(|p: PageId| bm.location(p).ok() == Some(Entry::Nvm(n))))
        .map(|n| (nvm.frames_offset() + u64::from(n.get()) * PS as u64, n.get()))
        .collect()
}

/// Reopens a closed database, reads it whole (each page is checked once), flips bytes
/// of the pages in NVM while it stays open, and reads it again; returns the second
/// read's counts and the clean frames dropped for failing their check (their pages
/// read from SSD instead).
fn flip_while_open(arch: Arch, verify: NvmVerify, salt: u64) -> (Reads, u64) {
    let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
    let (model, _) = make(arch, tmp.path(), false);
    let (c, direct) = config(arch, tmp.path(), verify);
    let nvm_path = tmp.path().join(arch.nvm_file());
    let run = |ranges: Vec<(u64, u32)>, reread: &dyn Fn() -> Reads| {
        assert!(!ranges.is_empty(), "{arch:?}: no page in NVM");
        for (at, _, mask) in flips(&ranges, FLIPS, salt) {
            flip(&nvm_path, at, mask);
        }
        reread()
    };
    match direct {
        Some(d) => {
            let db: Db<NvmDirect> = Db::open_nvm_direct(&c, &d).unwrap();
            let first = read_all(&db, &model, arch.nvm_file());
            assert!(first.wrong + first.errors == 0, "{arch:?}: {first:?}");
            let pages = db.store().pages();
            let ranges =
                (1..=db.store().pages_in_use()).map(|p| (pages.slot_offset(p as u32 - 1), p as u32 - 1)).collect();
            (run(ranges, &|| read_all(&db, &model, arch.nvm_file())), 0)
        }
        None => {
            let db = Db::open(&c).unwrap();
            let first = read_all(&db, &model, arch.nvm_file());
            assert!(first.wrong + first.errors == 0, "{arch:?}: {first:?}");
            let before = db.buffer().stats().buffer.nvm_corrupt_dropped;
            let reads = run(pages_in_nvm_now(&db), &|| read_all(&db, &model, arch.nvm_file()));
            (reads, db.buffer().stats().buffer.nvm_corrupt_dropped - before)
        }
    }
}

#[test]
fn verify_every_reports_bytes_flipped_while_the_database_is_open() {
    let mut broken = Vec::new();
    for (i, arch) in [Arch::ThreeTier, Arch::Nvsql, Arch::NvmDirect].into_iter().enumerate() {
        let (cheap, cheap_dropped) = flip_while_open(arch, NvmVerify::Cheap, i as u64 + 7);
        let (every, every_dropped) = flip_while_open(arch, NvmVerify::Every, i as u64 + 7);
        eprintln!(
            "{arch:?}, {FLIPS} bytes flipped while open: cheap {} wrong, {} never written, {} errors, {} frames \
             dropped; every {} wrong, {} never written, {} errors, {} frames dropped",
            cheap.wrong,
            cheap.never_written,
            cheap.errors,
            cheap_dropped,
            every.wrong,
            every.never_written,
            every.errors,
            every_dropped
        );
        let reported = every.errors as u64 + every_dropped;
        if every.wrong + every.never_written > 0 || !every.other_errors.is_empty() || reported == 0 {
            broken.push(format!("{arch:?}: {every:?}, {every_dropped} frames dropped (seed {})", seed()));
        }
    }
    assert!(broken.is_empty(), "verify every let flips through:\n{}", broken.join("\n"));
}
