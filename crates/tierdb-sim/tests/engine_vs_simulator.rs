//! The simulator against the engine: a B+-tree workload (load, then skewed lookups and
//! updates) runs on a real buffer manager with a trace recorder installed; the
//! recorded trace replayed through the simulator, with the same policy and capacities,
//! must count the engine's DRAM hits, NVM hits, SSD reads and pages written to NVM
//! within 2%, for the policies it models and two seeds. Pages written to SSD are
//! printed, not compared: they differ by 6-64% (docs/sim.md, issue 22).

use std::sync::Arc;

use tierdb::buffer::{BufferConfig, BufferManager};
use tierdb::counters::BufferStats;
use tierdb::device::{NvmConfig, OpenMode, SsdConfig};
use tierdb::{ByteSize, Catalog};
use tierdb_sim::record::TraceRecorder;
use tierdb_sim::{Prepared, SimConfig, Warmup, simulate};

const PS: usize = 4096;
const DRAM_FRAMES: usize = 64;
const NVM_FRAMES: usize = 256;
const RECORDS: u64 = 20_000;
const OPS: u64 = 40_000;
const TOLERANCE: f64 = 0.02;

fn run_engine(policy: &str, seed: u64) -> (BufferStats, Prepared) {
    let dir = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let mut c = BufferConfig::new(ByteSize((DRAM_FRAMES * PS) as u64));
    c.page_size = PS;
    c.policy = policy.into();
    c.policy_seed = seed;
    c.nvm = Some(NvmConfig::new(
        shm.path().join("t.nvm"),
        ByteSize((8192 + NVM_FRAMES as u64 * (PS as u64 + 64) + 4096).next_multiple_of(4096)),
    ));
    c.ssd = Some(SsdConfig::new(dir.path().join("t.db")));
    c.ssd_open_mode = OpenMode::Create;
    let bm = BufferManager::open(&c).unwrap();
    let nvm_frames = bm.info().nvm_frames;
    assert!(nvm_frames >= NVM_FRAMES, "the pool holds {nvm_frames} frames");
    let rec = Arc::new(TraceRecorder::new(PS as u32, format!("engine-vs-simulator {policy}")));
    assert!(bm.set_recorder(rec.clone()));
    let before = bm.stats().buffer;
    let tree = Catalog::create_tree(&bm, "t").unwrap();
    let key = |i: u64| format!("user{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes();
    for i in 0..RECORDS {
        tree.insert(&key(i), &[i as u8; 100]).unwrap();
    }
    // Skewed: key rank from u^3 of a seeded uniform; a fifth are updates.
    let mut x = seed | 1;
    for _ in 0..OPS {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = ((x >> 11) as f64) / (1u64 << 53) as f64;
        let k = key((u * u * u * RECORDS as f64) as u64);
        if (x >> 5).is_multiple_of(5) {
            assert!(tree.update(&k, &[7u8; 100]).unwrap());
        } else {
            assert!(tree.get(&k, |v| v[0]).unwrap().is_some());
        }
    }
    let stats = bm.stats().buffer.since(&before);
    let trace = rec.trace();
    drop(bm);
    (stats, Prepared::new(&trace))
}

fn check(policy: &str, seed: u64) -> String {
    let (engine, trace) = run_engine(policy, seed);
    let mut cfg = SimConfig::new(policy, DRAM_FRAMES, NVM_FRAMES);
    cfg.seed = seed;
    cfg.warmup = Warmup::None;
    let sim = simulate(&trace, &cfg).unwrap().stats;
    let mut report = format!("{policy} (seed {seed}), engine vs simulator:\n");
    let mut worst: f64 = 0.0;
    let written = |s: &BufferStats| s.dram_to_ssd_pages + s.nvm_to_ssd_pages;
    for (name, e, s) in [
        ("DRAM hits", engine.dram_hits, sim.dram_hits),
        ("NVM hits", engine.nvm_hits, sim.nvm_hits),
        ("SSD reads", engine.ssd_reads, sim.ssd_reads),
        ("to NVM", engine.dram_to_nvm_pages, sim.dram_to_nvm_pages),
    ] {
        let d = (s as f64 - e as f64).abs() / (e.max(1) as f64);
        worst = worst.max(d);
        report += &format!("  {name:<10} {e:>8} {s:>8} ({:+.3}%)\n", 100.0 * d);
    }
    // Not held to the 2% yet: they differ by 6-64% by policy (docs/sim.md).
    let (e, s) = (written(&engine), written(&sim));
    report += &format!(
        "  SSD writes {e:>8} {s:>8} ({:+.3}%, not compared)\n",
        100.0 * (s as f64 - e as f64) / e.max(1) as f64
    );
    println!("{report}");
    assert!(engine.nvm_hits > 1000 && engine.ssd_reads > 100, "the workload must use every tier: {engine:?}");
    assert!(worst <= TOLERANCE, "off by {:.2}%:\n{report}", 100.0 * worst);
    report
}

/// The policies whose every counted move the simulator models, two seeds each. Not yet
/// here (issue 22): `nvcache` (NVM hits off by 6-9%) and `se2` (in-place reads counted as
/// NVM hits where the engine counts DRAM hits); `nvsql` the simulator refuses.
#[test]
fn modelled_policies_count_what_the_engine_counts() {
    for policy in ["eager", "hymem", "spitfire"] {
        for seed in [42, 7] {
            check(policy, seed);
        }
    }
}
