//! Cache-line-grained pages, mini pages and pointer swizzling (three-tier paper
//! §3.1–3.3, A.6) seen from outside the buffer manager: which lines a scripted sequence
//! of accesses makes resident and dirty, what reaches NVM on eviction, promotion of a
//! mini page under a live guard, shared line guards that must not load, the lines a
//! B+-tree lookup loads with and without the techniques, swizzling under eviction
//! pressure, and configurations that cannot work.
//!
//! Every manager here has DRAM and NVM and no SSD, so an evicted page always lands in
//! its NVM frame and the counters of one single-threaded run are exact.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use rand::prelude::*;
use tierdb::buffer::{BufferConfig, BufferError, BufferManager, Entry, Techniques};
use tierdb::counters::BufferStats;
use tierdb::device::NvmConfig;
use tierdb::page::LinePage;
use tierdb::{BTree, ByteSize, ExclusivePage, PageId, PageSource};

const PS: usize = 4096;
const LINE: usize = 64;
const LINES: usize = PS / LINE;

const CL: Techniques = Techniques { cl_grained: true, mini_pages: false, swizzling: false };
const CL_MINI: Techniques = Techniques { cl_grained: true, mini_pages: true, swizzling: false };

/// DRAM of `dram_frames` over NVM of `nvm_frames`, no SSD.
fn config(dir: &tempfile::TempDir, dram_frames: u64, nvm_frames: u64, tech: Techniques, debug: bool) -> BufferConfig {
    let mut c = BufferConfig::new(ByteSize(dram_frames * PS as u64));
    c.page_size = PS;
    c.techniques = tech;
    c.debug_lines = debug;
    c.nvm = Some(NvmConfig::new(
        dir.path().join("t.nvm"),
        ByteSize((8192 + nvm_frames * (PS as u64 + 64) + 4096).next_multiple_of(4096)),
    ));
    c
}

/// Byte `off` of page `pid` as allocated: differs between neighbouring lines and pages,
/// so a line read from the wrong place shows.
fn pattern(pid: PageId, off: usize) -> u8 {
    let x = (off as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ pid.0.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (x >> 56) as u8
}

fn image(pid: PageId) -> Vec<u8> {
    (0..PS).map(|off| pattern(pid, off)).collect()
}

/// The lines of `ranges`, ascending.
fn lines(ranges: &[RangeInclusive<usize>]) -> Vec<usize> {
    let mut v: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Fixes `others` whole, round robin, until `pid` has left DRAM for its NVM frame.
fn evict(bm: &BufferManager, pid: PageId, others: &[PageId]) {
    assert!(!others.contains(&pid));
    for (i, p) in others.iter().cycle().enumerate() {
        if matches!(bm.location(pid).unwrap(), Entry::Nvm(_)) {
            return;
        }
        assert!(i < 16 * others.len(), "{pid} never left DRAM: {:?}", bm.location(pid).unwrap());
        drop(bm.fix_shared(*p).unwrap());
    }
}

/// Allocates `targets` pages and `fillers` pages filled with [`pattern`], then pushes
/// the targets (and the catalog page) out to NVM and cycles the fillers through NVM, so
/// that every page is in NVM or clean in DRAM: later evictions write only what a test
/// dirties. Returns (targets, fillers).
fn populate(bm: &BufferManager, targets: usize, fillers: usize) -> (Vec<PageId>, Vec<PageId>) {
    let alloc = || {
        let mut g = bm.allocate().unwrap();
        let pid = g.page_id();
        g.copy_from_slice(&image(pid));
        pid
    };
    let t: Vec<PageId> = (0..targets).map(|_| alloc()).collect();
    let f: Vec<PageId> = (0..fillers).map(|_| alloc()).collect();
    for pid in t.iter().chain([&PageId::CATALOG]) {
        evict(bm, *pid, &f);
    }
    for (i, pid) in f.iter().enumerate() {
        let others: Vec<PageId> = f.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| *p).collect();
        evict(bm, *pid, &others);
    }
    for pid in &t {
        assert!(matches!(bm.location(*pid).unwrap(), Entry::Nvm(_)), "{pid}: {:?}", bm.location(*pid));
    }
    bm.check_invariants();
    (t, f)
}

/// (resident lines, dirty lines) of a page in DRAM.
fn residency(bm: &BufferManager, pid: PageId) -> (Vec<usize>, Vec<usize>) {
    let r = bm.residency(pid).unwrap().unwrap_or_else(|| panic!("{pid} is not in DRAM: {:?}", bm.location(pid)));
    (r.resident, r.dirty_lines)
}

fn stats(bm: &BufferManager) -> BufferStats {
    bm.stats().buffer
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Read { off: usize, len: usize },
    Write { off: usize, len: usize, byte: u8 },
}

/// One access of a script and what must hold after it.
struct Step {
    op: Op,
    /// Lines loaded from NVM by this access.
    loaded: u64,
    resident: Vec<usize>,
    dirty: Vec<usize>,
}

fn step(op: Op, loaded: u64, resident: &[RangeInclusive<usize>], dirty: &[RangeInclusive<usize>]) -> Step {
    Step { op, loaded, resident: lines(resident), dirty: lines(dirty) }
}

/// Runs `s` through guard `g` (whose page's bytes `want` mirrors) and checks the bytes,
/// the lines loaded and faulted, and the page's residency afterwards.
fn apply(bm: &BufferManager, g: &mut impl LinePage, want: &mut [u8], s: &Step, ctx: &str) {
    let pid = g.page_id();
    let before = stats(bm);
    match s.op {
        Op::Read { off, len } => {
            let got = g.read(off, len).unwrap_or_else(|e| panic!("{ctx}: {:?}: {e}", s.op));
            assert!(got == &want[off..off + len], "{ctx}: {:?} read wrong bytes", s.op);
        }
        Op::Write { off, len, byte } => {
            g.write(off, len).unwrap_or_else(|e| panic!("{ctx}: {:?}: {e}", s.op)).fill(byte);
            want[off..off + len].fill(byte);
            // Read back the whole lines written: the bytes around the write in them are
            // not clobbered.
            let (lo, hi) = (off / LINE * LINE, (off + len).next_multiple_of(LINE));
            assert!(g.read(lo, hi - lo).unwrap() == &want[lo..hi], "{ctx}: {:?} reads back wrong", s.op);
        }
    }
    let d = stats(bm).since(&before);
    assert_eq!(d.nvm_lines_loaded, s.loaded, "{ctx}: {:?}: lines loaded from NVM", s.op);
    assert_eq!(d.line_faults, u64::from(s.loaded > 0), "{ctx}: {:?}: line faults", s.op);
    assert_eq!(d.nvm_to_dram_pages, 0, "{ctx}: {:?}: no whole-page load", s.op);
    let (resident, dirty) = residency(bm, pid);
    assert_eq!(resident, s.resident, "{ctx}: {:?}: resident lines", s.op);
    assert_eq!(dirty, s.dirty, "{ctx}: {:?}: dirty lines", s.op);
}

/// Reads through `g` and checks the bytes, loading nothing.
fn read_resident(bm: &BufferManager, g: &mut impl LinePage, want: &[u8], off: usize, len: usize, ctx: &str) {
    let before = stats(bm);
    assert!(g.read(off, len).unwrap() == &want[off..off + len], "{ctx}: bytes {off}..{}", off + len);
    assert_eq!(stats(bm).since(&before).nvm_lines_loaded, 0, "{ctx}: bytes {off}..{} were resident", off + len);
}

// ----- 1. cache-line-grained full frames ---------------------------------------------

#[test]
fn resident_and_dirty_lines_follow_a_scripted_access_sequence() {
    for debug in [false, true] {
        scripted_full_frame(debug);
    }
}

fn scripted_full_frame(debug: bool) {
    let ctx = format!("cl, debug {debug}");
    let ctx = ctx.as_str();
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, 64, CL, debug)).unwrap();
    let (targets, fillers) = populate(&bm, 2, 16);
    let pid = targets[0];
    let mut want = image(pid);

    // 1. An NVM page fixed line-grained gets a full frame and no bytes yet.
    let before = stats(&bm);
    let mut g = bm.fix_lines(pid, true).unwrap();
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_loaded, d.nvm_hits, d.nvm_to_dram_pages), (0, 1, 0), "{ctx}: {d:?}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Dram(_)), "{ctx}");
    let r = bm.residency(pid).unwrap().unwrap();
    assert!(!r.mini && !r.resident_all && !r.dirty_whole, "{ctx}: {r:?}");
    assert_eq!((r.resident.len(), r.dirty_lines.len()), (0, 0), "{ctx}: {r:?}");

    // 2. The script: each access loads exactly the lines it covers that are missing.
    let script = [
        step(Op::Read { off: 0, len: 64 }, 1, &[0..=0], &[]),
        step(Op::Read { off: 100, len: 100 }, 3, &[0..=3], &[]),
        step(Op::Read { off: 130, len: 10 }, 0, &[0..=3], &[]),
        step(Op::Write { off: 4000, len: 10, byte: 0xA1 }, 1, &[0..=3, 62..=62], &[62..=62]),
        step(Op::Read { off: 4090, len: 6 }, 1, &[0..=3, 62..=63], &[62..=62]),
        step(Op::Write { off: 650, len: 10, byte: 0xA2 }, 1, &[0..=3, 10..=10, 62..=63], &[10..=10, 62..=62]),
        // Lines 8..=11 with 10 resident: two runs loaded, one fault.
        step(Op::Read { off: 512, len: 256 }, 3, &[0..=3, 8..=11, 62..=63], &[10..=10, 62..=62]),
        step(Op::Write { off: 120, len: 20, byte: 0xA3 }, 0, &[0..=3, 8..=11, 62..=63], &[1..=2, 10..=10, 62..=62]),
        step(Op::Read { off: 0, len: 0 }, 0, &[0..=3, 8..=11, 62..=63], &[1..=2, 10..=10, 62..=62]),
    ];
    for s in &script {
        apply(&bm, &mut g, &mut want, s, ctx);
    }
    let (resident, dirty) = residency(&bm, pid);
    // An access past the page fails and changes nothing.
    let e = g.read(4090, 7).unwrap_err();
    assert!(matches!(e, BufferError::OutOfPage { .. }), "{ctx}: {e}");
    assert!(g.write(usize::MAX, 2).is_err(), "{ctx}");
    assert_eq!(residency(&bm, pid), (resident.clone(), dirty.clone()), "{ctx}");
    drop(g);
    assert_eq!(residency(&bm, pid), (resident.clone(), dirty.clone()), "{ctx}: unfix keeps the lines");
    bm.check_invariants();

    // 3. Eviction writes back exactly the dirty lines, and no whole page.
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    let d = stats(&bm).since(&before);
    assert_eq!(d.nvm_lines_written, dirty.len() as u64, "{ctx}: dirty lines {dirty:?}: {d:?}");
    assert_eq!(d.dram_to_nvm_pages, 0, "{ctx}: {d:?}");

    // 4. Back from NVM: the written bytes and the untouched ones around them.
    let mut g = bm.fix_lines(pid, false).unwrap();
    assert_eq!(residency(&bm, pid), (vec![], vec![]), "{ctx}: a reloaded page starts empty");
    let back = [
        step(Op::Read { off: 3990, len: 20 }, 1, &[62..=62], &[]),
        step(Op::Read { off: 576, len: 128 }, 2, &[9..=10, 62..=62], &[]),
        step(Op::Read { off: 64, len: 128 }, 2, &[1..=2, 9..=10, 62..=62], &[]),
        step(Op::Read { off: 4095, len: 1 }, 1, &[1..=2, 9..=10, 62..=63], &[]),
    ];
    for s in &back {
        apply(&bm, &mut g, &mut want, s, ctx);
    }

    // 5. `whole` loads exactly the lines still missing; then the page is fully resident.
    let before = stats(&bm);
    assert!(g.whole().unwrap() == want.as_slice(), "{ctx}: whole page");
    let d = stats(&bm).since(&before);
    assert_eq!(d.nvm_lines_loaded, (LINES - 6) as u64, "{ctx}: {d:?}");
    assert_eq!(d.line_faults, 1, "{ctx}: {d:?}");
    let r = bm.residency(pid).unwrap().unwrap();
    assert!(r.resident_all && !r.dirty_whole, "{ctx}: {r:?}");
    assert_eq!(r.resident, lines(&[0..=LINES - 1]), "{ctx}");
    let before = stats(&bm);
    assert!(g.whole().unwrap() == want.as_slice(), "{ctx}");
    read_resident(&bm, &mut g, &want, 1000, 2000, ctx);
    assert_eq!(stats(&bm).since(&before).line_faults, 0, "{ctx}");
    drop(g);
    let before = stats(&bm);
    assert!(*bm.fix_shared(pid).unwrap() == *want.as_slice(), "{ctx}: whole-page fix");
    assert_eq!(stats(&bm).since(&before).nvm_lines_loaded, 0, "{ctx}");

    // 6. A page written as a whole goes back as a whole.
    let mut g = bm.fix_lines(pid, true).unwrap();
    g.whole_mut().unwrap()[7] = 0xA4;
    want[7] = 0xA4;
    drop(g);
    assert!(bm.residency(pid).unwrap().unwrap().dirty_whole, "{ctx}");
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (LINES as u64, 1), "{ctx}: {d:?}");
    assert!(*bm.fix_shared(pid).unwrap() == *want.as_slice(), "{ctx}: after a whole-page write-back");

    // 7. A checkpoint writes the dirty lines of a page that stays in DRAM, clean.
    let mut g = bm.fix_lines(pid, true).unwrap();
    let s = step(Op::Write { off: 2000, len: 100, byte: 0xA5 }, 0, &[0..=LINES - 1], &[31..=32]);
    apply(&bm, &mut g, &mut want, &s, ctx);
    drop(g);
    let before = stats(&bm);
    bm.checkpoint().unwrap();
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (2, 0), "{ctx}: {d:?}");
    assert_eq!(residency(&bm, pid), (lines(&[0..=LINES - 1]), vec![]), "{ctx}");
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    assert_eq!(stats(&bm).since(&before).nvm_lines_written, 0, "{ctx}: nothing left to write");
    assert!(*bm.fix_shared(pid).unwrap() == *want.as_slice(), "{ctx}: after a checkpoint");
    bm.check_invariants();
}

// ----- 2. mini pages -----------------------------------------------------------------

#[test]
fn a_mini_page_is_promoted_under_its_guard_and_keeps_its_lines() {
    for debug in [false, true] {
        mini_page_promotion(debug);
    }
}

fn mini_page_promotion(debug: bool) {
    let ctx = format!("cl+mini, debug {debug}");
    let ctx = ctx.as_str();
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, 64, CL_MINI, debug)).unwrap();
    let (targets, fillers) = populate(&bm, 2, 16);
    let pid = targets[1];
    let mut want = image(pid);

    // 1. An NVM page fixed line-grained gets an empty mini page.
    let before = stats(&bm);
    let mut g = bm.fix_lines(pid, true).unwrap();
    let d = stats(&bm).since(&before);
    assert_eq!((d.mini_allocations, d.nvm_lines_loaded), (1, 0), "{ctx}: {d:?}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Mini(_)), "{ctx}");
    let r = bm.residency(pid).unwrap().unwrap();
    assert!(r.mini && !r.resident_all && r.resident.is_empty(), "{ctx}: {r:?}");

    // 2. Lines out of order stay sorted in the slot map; ranges come back contiguous;
    //    dirty bits follow their lines when later loads shift the slots.
    let script = [
        step(Op::Read { off: 9 * LINE, len: LINE }, 1, &[9..=9], &[]),
        step(Op::Read { off: 2 * LINE, len: LINE }, 1, &[2..=2, 9..=9], &[]),
        step(Op::Read { off: 5 * LINE + 10, len: LINE }, 2, &[2..=2, 5..=6, 9..=9], &[]),
        // Lines 4..=7 around resident 5..=6: 4 and 7 loaded, one slice returned.
        step(Op::Read { off: 4 * LINE, len: 4 * LINE }, 2, &[2..=2, 4..=7, 9..=9], &[]),
        step(Op::Write { off: 5 * LINE + 3, len: 20, byte: 0xB1 }, 0, &[2..=2, 4..=7, 9..=9], &[5..=5]),
        // A write over resident line 9 and missing line 10.
        step(Op::Write { off: 9 * LINE + 60, len: 8, byte: 0xB2 }, 1, &[2..=2, 4..=7, 9..=10], &[5..=5, 9..=10]),
        // Line 0 goes to slot 0: every slot moves up, with its dirty bit.
        step(Op::Read { off: 0, len: 8 }, 1, &[0..=0, 2..=2, 4..=7, 9..=10], &[5..=5, 9..=10]),
        step(Op::Read { off: 4 * LINE + 32, len: 3 * LINE }, 0, &[0..=0, 2..=2, 4..=7, 9..=10], &[5..=5, 9..=10]),
        // Eight more lines: sixteen, a full mini page.
        step(Op::Read { off: 20 * LINE, len: 8 * LINE }, 8, &[0..=0, 2..=2, 4..=7, 9..=10, 20..=27], &[5..=5, 9..=10]),
    ];
    let before = stats(&bm);
    for s in &script {
        apply(&bm, &mut g, &mut want, s, ctx);
        assert!(bm.residency(pid).unwrap().unwrap().mini, "{ctx}: {:?}: still a mini page", s.op);
    }
    assert_eq!(stats(&bm).since(&before).mini_promotions, 0, "{ctx}: sixteen lines fit");
    let sixteen = lines(&[0..=0, 2..=2, 4..=7, 9..=10, 20..=27]);
    assert_eq!(sixteen.len(), 16);

    // 3. The seventeenth line promotes the page; the guard moves on with it.
    let before = stats(&bm);
    let s = step(
        Op::Read { off: 40 * LINE + 5, len: 3 },
        1,
        &[0..=0, 2..=2, 4..=7, 9..=10, 20..=27, 40..=40],
        &[5..=5, 9..=10],
    );
    apply(&bm, &mut g, &mut want, &s, ctx);
    let d = stats(&bm).since(&before);
    assert_eq!(d.mini_promotions, 1, "{ctx}: {d:?}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Dram(_)), "{ctx}: {:?}", bm.location(pid));
    let r = bm.residency(pid).unwrap().unwrap();
    assert!(!r.mini && !r.resident_all && !r.dirty_whole, "{ctx}: {r:?}");
    // Every line read before the promotion is still there, with the same bytes.
    for l in &sixteen {
        read_resident(&bm, &mut g, &want, l * LINE, LINE, ctx);
    }
    read_resident(&bm, &mut g, &want, 4 * LINE, 4 * LINE, ctx);
    read_resident(&bm, &mut g, &want, 20 * LINE, 8 * LINE, ctx);
    let s = step(
        Op::Write { off: 40 * LINE + 8, len: 8, byte: 0xB3 },
        0,
        &[0..=0, 2..=2, 4..=7, 9..=10, 20..=27, 40..=40],
        &[5..=5, 9..=10, 40..=40],
    );
    apply(&bm, &mut g, &mut want, &s, ctx);
    drop(g);
    bm.check_invariants();

    // 4. Eviction writes the four dirty lines of the promoted page.
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (4, 0), "{ctx}: {d:?}");

    // 5. Reloaded (as a mini page again): the written lines and their neighbours.
    let mut g = bm.fix_lines(pid, false).unwrap();
    let back = [
        step(Op::Read { off: 5 * LINE, len: LINE }, 1, &[5..=5], &[]),
        step(Op::Read { off: 9 * LINE, len: 2 * LINE }, 2, &[5..=5, 9..=10], &[]),
        step(Op::Read { off: 40 * LINE - 4, len: 20 }, 2, &[5..=5, 9..=10, 39..=40], &[]),
        step(Op::Read { off: 4 * LINE, len: LINE }, 1, &[4..=5, 9..=10, 39..=40], &[]),
    ];
    for s in &back {
        apply(&bm, &mut g, &mut want, s, ctx);
    }
    assert!(bm.residency(pid).unwrap().unwrap().mini, "{ctx}");
    // Dirty lines of a mini page reach NVM when the mini page is evicted.
    let s = step(Op::Write { off: 3 * LINE + 60, len: 8, byte: 0xB4 }, 1, &[3..=5, 9..=10, 39..=40], &[3..=4]);
    apply(&bm, &mut g, &mut want, &s, ctx);
    drop(g);
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (2, 0), "{ctx}: {d:?}");

    // 6. A checkpoint writes a mini page's dirty lines and leaves it in DRAM, clean.
    let mut g = bm.fix_lines(pid, true).unwrap();
    let s = step(Op::Write { off: 12 * LINE, len: 2 * LINE, byte: 0xB5 }, 2, &[12..=13], &[12..=13]);
    apply(&bm, &mut g, &mut want, &s, ctx);
    drop(g);
    let before = stats(&bm);
    bm.checkpoint().unwrap();
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (2, 0), "{ctx}: {d:?}");
    assert_eq!(residency(&bm, pid), (lines(&[12..=13]), vec![]), "{ctx}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Mini(_)), "{ctx}");
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    assert_eq!(stats(&bm).since(&before).nvm_lines_written, 0, "{ctx}: nothing left to write");

    // 7. A whole-page fix of a mini page promotes it and loads the rest.
    let mut g = bm.fix_lines(pid, true).unwrap();
    apply(&bm, &mut g, &mut want, &step(Op::Read { off: 3 * LINE, len: 2 * LINE }, 2, &[3..=4], &[]), ctx);
    drop(g);
    assert!(matches!(bm.location(pid).unwrap(), Entry::Mini(_)), "{ctx}");
    let before = stats(&bm);
    let page = bm.fix_shared(pid).unwrap();
    assert!(*page == *want.as_slice(), "{ctx}: whole page after promotion");
    drop(page);
    let d = stats(&bm).since(&before);
    assert_eq!((d.mini_promotions, d.nvm_lines_loaded), (1, (LINES - 2) as u64), "{ctx}: {d:?}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Dram(_)), "{ctx}");
    let r = bm.residency(pid).unwrap().unwrap();
    assert!(!r.mini && r.resident_all && r.dirty_lines.is_empty(), "{ctx}: {r:?}");

    // 8. A write of seventeen lines promotes an empty mini page at once.
    evict(&bm, pid, &fillers);
    let mut g = bm.fix_lines(pid, true).unwrap();
    assert!(matches!(bm.location(pid).unwrap(), Entry::Mini(_)), "{ctx}");
    let before = stats(&bm);
    let s = step(Op::Write { off: 30 * LINE, len: 17 * LINE, byte: 0xB6 }, 17, &[30..=46], &[30..=46]);
    apply(&bm, &mut g, &mut want, &s, ctx);
    drop(g);
    assert_eq!(stats(&bm).since(&before).mini_promotions, 1, "{ctx}");
    assert!(matches!(bm.location(pid).unwrap(), Entry::Dram(_)), "{ctx}");
    let before = stats(&bm);
    evict(&bm, pid, &fillers);
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_written, d.dram_to_nvm_pages), (17, 0), "{ctx}: {d:?}");
    assert!(*bm.fix_shared(pid).unwrap() == *want.as_slice(), "{ctx}: after all writes");
    bm.check_invariants();
}

// ----- 3. shared line guards ---------------------------------------------------------

#[test]
fn shared_line_guards_load_only_when_alone() {
    for tech in [CL, CL_MINI] {
        shared_guards(tech);
    }
}

fn shared_guards(tech: Techniques) {
    let ctx = format!("{tech}");
    let ctx = ctx.as_str();
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, 64, tech, true)).unwrap();
    let (targets, _) = populate(&bm, 1, 16);
    let pid = targets[0];
    let mut want = image(pid);
    let mut g = bm.fix_lines(pid, true).unwrap();
    apply(&bm, &mut g, &mut want, &step(Op::Read { off: 0, len: 2 * LINE }, 2, &[0..=1], &[]), ctx);
    drop(g);

    let before = stats(&bm);
    let mut a = bm.fix_lines(pid, false).unwrap();
    let mut b = bm.fix_lines(pid, false).unwrap();
    // Resident lines read under two shared guards.
    assert!(a.read(10, 100).unwrap() == &want[10..110], "{ctx}");
    assert!(b.read(64, 64).unwrap() == &want[64..128], "{ctx}");
    assert!(a.read(0, 128).unwrap() == &want[..128], "{ctx}");
    // A missing line, a write and the whole page would change the page: refused while
    // the other guard lives.
    let e = a.read(10 * LINE, 10).unwrap_err();
    assert!(e.needs_exclusive(), "{ctx}: {e}");
    assert!(matches!(e, BufferError::NeedsExclusive { pid: p } if p == pid), "{ctx}: {e}");
    let e = b.write(0, 1).unwrap_err();
    assert!(e.needs_exclusive(), "{ctx}: a write of a resident line: {e}");
    let e = b.whole().unwrap_err();
    assert!(e.needs_exclusive(), "{ctx}: {e}");
    let e = a.read(LINE, 2 * LINE).unwrap_err();
    assert!(e.needs_exclusive(), "{ctx}: a range partly resident: {e}");
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_loaded, d.line_faults), (0, 0), "{ctx}: {d:?}");
    assert_eq!(residency(&bm, pid), (lines(&[0..=1]), vec![]), "{ctx}");
    // The refused guards still read.
    assert!(b.read(0, 64).unwrap() == &want[..64], "{ctx}");
    drop(b);

    // Alone, a shared guard upgrades itself and loads.
    let before = stats(&bm);
    assert!(a.read(10 * LINE, 10).unwrap() == &want[10 * LINE..10 * LINE + 10], "{ctx}");
    assert!(a.read(LINE, 2 * LINE).unwrap() == &want[LINE..3 * LINE], "{ctx}");
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_loaded, d.line_faults), (2, 2), "{ctx}: {d:?}");
    assert_eq!(residency(&bm, pid), (lines(&[0..=2, 10..=10]), vec![]), "{ctx}");
    drop(a);
    // The upgraded latch was released: the page can be fixed either way again.
    drop(bm.fix_lines(pid, true).unwrap());
    let mut a = bm.fix_lines(pid, false).unwrap();
    let mut b = bm.fix_lines(pid, false).unwrap();
    assert!(a.read(10 * LINE, LINE).unwrap() == &want[10 * LINE..11 * LINE], "{ctx}");
    assert!(b.read(0, 3 * LINE).unwrap() == &want[..3 * LINE], "{ctx}");
    drop((a, b));
    // Once the page is whole in DRAM, shared guards take all of it side by side.
    drop(bm.fix_shared(pid).unwrap());
    let before = stats(&bm);
    let mut a = bm.fix_lines(pid, false).unwrap();
    let mut b = bm.fix_lines(pid, false).unwrap();
    assert!(a.whole().unwrap() == want.as_slice(), "{ctx}");
    assert!(b.whole().unwrap() == want.as_slice(), "{ctx}");
    assert!(a.read(PS - 1, 1).unwrap() == &want[PS - 1..], "{ctx}");
    assert!(b.write(0, 1).unwrap_err().needs_exclusive(), "{ctx}");
    drop((a, b));
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_loaded, d.line_faults), (0, 0), "{ctx}: {d:?}");
    bm.check_invariants();
}

// ----- 4. lines loaded by B+-tree lookups --------------------------------------------

const TREE_KEYS: u64 = 2000;
const VALUE_BYTES: usize = 100;
const LOOKUPS: usize = 300;
/// The part of the value a lookup reads (one YCSB-like field).
const PART: std::ops::Range<usize> = 40..50;
/// The most lines a leaf lookup on cache-line-grained pages may load: the header, the
/// two or three lines of slots the binary search probes, one line per probed key where
/// the slots' key heads do not decide (the first and last leaves have an open fence,
/// so no prefix, and their 8-byte keys share their first four bytes), and the lines of
/// the entry and of the value part. The run below loads 10 at most.
const LEAF_LINES_MAX: u64 = 10;

fn tree_key(i: u64) -> [u8; 8] {
    (i * 7919).to_be_bytes()
}

fn tree_value(i: u64) -> Vec<u8> {
    (0..VALUE_BYTES).map(|j| (i as usize * 31 + j * 7) as u8).collect()
}

/// Lines loaded and whole pages loaded from NVM, per lookup.
#[derive(Debug, PartialEq, Eq)]
struct LookupCost {
    lines: Vec<u64>,
    pages: Vec<u64>,
}

/// Builds the tree, pushes every page of it out of DRAM, loads the root, and runs a
/// fixed sequence of lookups of one part of the value.
fn lookup_costs(tech: Techniques) -> LookupCost {
    let ctx = format!("{tech}");
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 8, 256, tech, false)).unwrap();
    let t = BTree::create(&bm).unwrap();
    let mut order: Vec<u64> = (0..TREE_KEYS).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(4));
    for i in &order {
        assert!(t.insert(&tree_key(*i), &tree_value(*i)).unwrap(), "{ctx}");
    }
    let st = t.check_invariants().unwrap();
    assert_eq!(st.height, 2, "{ctx}: {st:?}");
    assert!(st.leaves > 40, "{ctx}: {st:?}");

    // Every page of the tree out of DRAM: fill DRAM with pages of no tree.
    let fillers: Vec<PageId> = (0..8).map(|_| bm.allocate().unwrap().page_id()).collect();
    let last = fillers.iter().max().unwrap().0;
    let in_dram =
        |pid: u64| !fillers.contains(&PageId(pid)) && !matches!(bm.location(PageId(pid)).unwrap(), Entry::Nvm(_));
    for round in 0.. {
        if !(1..=last).any(in_dram) {
            break;
        }
        assert!(round < 16, "{ctx}: pages of the tree stay in DRAM");
        for f in &fillers {
            drop(bm.fix_shared(*f).unwrap());
        }
    }
    drop(bm.fix_shared(t.root()).unwrap());

    let mut rng = SmallRng::seed_from_u64(7);
    let mut cost = LookupCost { lines: Vec::new(), pages: Vec::new() };
    for _ in 0..LOOKUPS {
        let i = rng.random_range(0..TREE_KEYS);
        let before = stats(&bm);
        let got = t.get_part(&tree_key(i), PART, <[u8]>::to_vec).unwrap();
        let d = stats(&bm).since(&before);
        assert_eq!(got.as_deref(), Some(&tree_value(i)[PART]), "{ctx}: key {i}");
        cost.lines.push(d.nvm_lines_loaded);
        cost.pages.push(d.nvm_to_dram_pages);
    }
    bm.check_invariants();
    cost
}

#[test]
fn lookups_load_few_lines_on_cache_line_grained_pages() {
    let none = lookup_costs(Techniques::NONE);
    let cl = lookup_costs(CL);
    for (k, (lines, pages)) in none.lines.iter().zip(&none.pages).enumerate() {
        assert_eq!(*lines, *pages * LINES as u64, "basic, lookup {k}: whole pages only");
    }
    let mut leaf_lines = 0;
    for (k, (lines, pages)) in cl.lines.iter().zip(&cl.pages).enumerate() {
        // Inner nodes are still loaded whole; the leaf only as far as it is read.
        let leaf = lines - pages * LINES as u64;
        assert!(leaf <= LEAF_LINES_MAX, "cl, lookup {k}: {leaf} leaf lines");
        leaf_lines += leaf;
    }
    let (n, c): (u64, u64) = (none.lines.iter().sum(), cl.lines.iter().sum());
    let cl_pages: u64 = cl.pages.iter().sum();
    eprintln!(
        "{LOOKUPS} lookups: basic {n} lines ({} pages), cl {c} lines ({cl_pages} whole pages, {leaf_lines} leaf lines)",
        n / LINES as u64
    );
    assert!(leaf_lines > 0 && n >= 5 * c, "basic {n} lines, cl {c} lines: less than 5x apart");
    assert_eq!(lookup_costs(CL), cl, "cl: the same run loads the same lines");
}

// ----- 5. pointer swizzling under eviction pressure ----------------------------------

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("user{:019}", rng.random_range(0..6000u64) * 104_729).into_bytes()
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = if rng.random_bool(0.2) { rng.random_range(300..600) } else { rng.random_range(0..100) };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn check_contents(t: &BTree<'_, BufferManager>, m: &BTreeMap<Vec<u8>, Vec<u8>>, phase: &str) {
    let st = t.check_invariants().unwrap_or_else(|e| panic!("{phase}: {e}"));
    assert_eq!(st.entries, m.len() as u64, "{phase}");
    let mut it = m.iter();
    t.scan(b"", |k, v| {
        let want = it.next().map(|(a, b)| (a.as_slice(), b.as_slice()));
        assert!(
            Some((k, v)) == want,
            "{phase}: {:?} found, {:?} expected",
            String::from_utf8_lossy(k),
            want.map(|w| String::from_utf8_lossy(w.0))
        );
        true
    })
    .unwrap();
    assert!(it.next().is_none(), "{phase}: keys missing from the scan");
}

#[test]
fn swizzling_survives_eviction_pressure() {
    let seed = 21;
    let ctx = format!("all, debug lines, seed {seed}");
    let ctx = ctx.as_str();
    let dir = tempfile::tempdir().unwrap();
    let bm = BufferManager::open(&config(&dir, 16, 1024, Techniques::ALL, true)).unwrap();
    let t = BTree::create(&bm).unwrap();
    let (mut m, mut rng) = (BTreeMap::new(), SmallRng::seed_from_u64(seed));
    for _ in 0..12_000 {
        let k = key(&mut rng);
        match rng.random_range(0..10) {
            0..5 => {
                let v = value(&mut rng);
                assert_eq!(t.insert(&k, &v).unwrap(), !m.contains_key(&k), "{ctx}");
                m.entry(k).or_insert(v);
            }
            5..6 => {
                let v = value(&mut rng);
                t.upsert(&k, &v).unwrap();
                m.insert(k, v);
            }
            6..7 => assert_eq!(t.delete(&k).unwrap(), m.remove(&k).is_some(), "{ctx}"),
            _ => assert_eq!(t.get(&k, <[u8]>::to_vec).unwrap(), m.get(&k).cloned(), "{ctx}"),
        }
    }
    let s = stats(&bm);
    let st = t.check_invariants().unwrap();
    assert!(st.height >= 3, "{ctx}: inner nodes below the root: {st:?}");
    assert!(st.pages() > 8 * 16, "{ctx}: the tree ({} pages) is far larger than DRAM", st.pages());
    assert!(s.dram_evictions > 1000 && s.line_faults > 0 && s.mini_promotions > 0, "{ctx}: {s:?}");
    assert!(s.swizzles > 0 && s.unswizzles > 0, "{ctx}: {s:?}");
    check_contents(&t, &m, ctx);
    bm.check_invariants();

    // A small hot set: after one pass its paths are in DRAM, swizzled from the root
    // down, and a second pass loads nothing from NVM.
    let hot: Vec<&Vec<u8>> = m.keys().step_by(m.len() / 4).take(4).collect();
    let lookup_all = || {
        for k in &hot {
            assert_eq!(t.get(k, <[u8]>::to_vec).unwrap().as_ref(), m.get(*k), "{ctx}");
        }
    };
    lookup_all();
    let before = stats(&bm);
    lookup_all();
    let d = stats(&bm).since(&before);
    assert_eq!((d.nvm_lines_loaded, d.nvm_hits, d.line_faults), (0, 0, 0), "{ctx}: hot pass: {d:?}");
    assert_eq!(d.swizzles, 0, "{ctx}: hot pass: everything swizzled already: {d:?}");
    assert!(d.dram_hits > 0, "{ctx}: hot pass: {d:?}");
    let root = bm.residency(t.root()).unwrap().expect("the root is in DRAM");
    assert!(root.swizzled_children > 0, "{ctx}: the root references no child by frame: {root:?}");
    let last = bm.info().pages_in_use + 64;
    let swizzled = (1..last).filter(|p| bm.residency(PageId(*p)).ok().flatten().is_some_and(|r| r.swizzled)).count();
    assert!(swizzled >= root.swizzled_children, "{ctx}: {swizzled} pages say they are swizzled");
    check_contents(&t, &m, ctx);
    bm.check_invariants();
}

// ----- 6. configurations that cannot work --------------------------------------------

#[test]
fn techniques_need_cache_lines_for_mini_pages_and_nvm_for_all() {
    let e = Techniques::parse("mini").unwrap_err();
    assert!(matches!(e, BufferError::Config { .. }) && e.to_string().contains("cl-grained"), "{e}");
    assert!(Techniques::parse("mini,swizzle").is_err());
    assert_eq!(Techniques::parse("cl,mini").unwrap(), CL_MINI);

    let dir = tempfile::tempdir().unwrap();
    for tech in [CL, CL_MINI, Techniques { swizzling: true, ..Techniques::NONE }, Techniques::ALL] {
        let mut c = config(&dir, 8, 64, tech, false);
        c.nvm = None;
        let Err(e) = BufferManager::open(&c) else { panic!("{tech} without NVM opened") };
        assert!(matches!(e, BufferError::Config { .. }), "{tech}: {e}");
        assert!(e.to_string().contains("NVM"), "{tech}: {e}");
    }
    // Mini pages without cache-line-grained pages are refused even with NVM.
    let c = config(&dir, 8, 64, Techniques { mini_pages: true, ..Techniques::NONE }, false);
    let Err(e) = BufferManager::open(&c) else { panic!("mini pages without cl opened") };
    assert!(matches!(e, BufferError::Config { .. }), "{e}");
    // The basic manager needs no NVM.
    let mut c = config(&dir, 8, 64, Techniques::NONE, false);
    c.nvm = None;
    assert!(BufferManager::open(&c).is_ok());
}
