//! The simulator's LRU and ARC reproduce the ARC paper's Table IV hit ratios on its
//! OLTP trace (Megiddo and Modha, FAST 2003) within 0.1 points. The trace ships with the
//! repository in `data/traces/OLTP.lis.zst` (zstd, decompressed on the fly; its source in
//! `data/traces/README.md`).

use std::path::PathBuf;

use tierdb_sim::trace::{self, Format, ImportOptions};
use tierdb_sim::{Prepared, SimConfig, Warmup, simulate};

/// Cache size in pages, published LRU hit %, published ARC hit %.
const TABLE_IV: [(usize, f64, f64); 5] =
    [(1000, 32.83, 38.93), (2000, 42.47, 46.08), (5000, 53.65, 55.25), (10000, 60.70, 61.87), (15000, 64.63, 65.40)];

const TOLERANCE_POINTS: f64 = 0.1;

fn oltp() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/OLTP.lis.zst")
}

#[test]
fn lru_and_arc_match_the_published_oltp_hit_ratios() {
    let path = oltp();
    let t = trace::load(&path, Format::Arc, ImportOptions::default())
        .unwrap_or_else(|e| panic!("the OLTP trace must be readable at {}: {e}", path.display()));
    assert_eq!(t.records.len(), 914_145, "the OLTP trace has 914,145 requests");
    let p = Prepared::new(&t);
    let mut report = String::new();
    let mut worst: f64 = 0.0;
    for (pages, lru, arc) in TABLE_IV {
        for (policy, published) in [("lru", lru), ("arc", arc)] {
            let mut cfg = SimConfig::new(policy, pages, 0);
            cfg.warmup = Warmup::None; // the paper counts cold misses
            let r = simulate(&p, &cfg).unwrap();
            let hit = 100.0 * r.stats.dram_hits as f64 / r.accesses as f64;
            let d = hit - published;
            worst = worst.max(d.abs());
            report += &format!("{policy} {pages:>5}: {hit:.2}% (published {published:.2}%, {d:+.3})\n");
        }
    }
    assert!(worst <= TOLERANCE_POINTS, "off by up to {worst:.3} points:\n{report}");
    println!("{report}");
}
