//! The three-tier paper's YCSB-RO experiments (van Renen et al., SIGMOD 2018): the
//! architectures over data sizes (Figure 8, §5.3), the techniques added one at a time
//! (Figure 10, §5.4.1) and the DRAM size against a fixed NVM (Figure 13, §5.6.2), through
//! `tierdb compare` and `tierdb drilldown` in `model` mode with the CPU clock (a shared
//! machine inflates neither the modelled device time nor a thread's CPU time much).
//!
//! The in-place reads of `nvm-direct` go through the CPU-cache model at its default
//! share of the data (0.2%, the paper's 20 MB L3 over 10 GB; docs/nvm-direct.md), so
//! that the scaled-down runs give it no more cache than the paper's machine did.
//!
//! Budget, with `mmap.rs`'s section: `--scale quick` about 100 s on two shared cores
//! (measured 2026-11-28), `--scale full` 466 s there (both with other builds running). The paper's sizes
//! (2 GB DRAM, 10 GB NVM, up to 15 GB of data) are scaled by 1/128 (quick) and 1/64
//! (full); the sections' setup lines say so.

use anyhow::Result;
use serde_json::Value;

use super::sections::{args, read_json};
use super::{Ctx, Row, Section};

/// §5.3: at the right edge of Figure 8 (15 GB of data, 1.5× the NVM) `ssd-bm` is this
/// many times slower than three-tier on YCSB-RO.
const PAPER_SSD_AREA_FACTOR: f64 = 4.3;
/// §5.4.1: NVM lines loaded, basic NVM BM ÷ cache-line-grained pages (652.5M → 11.8M).
const PAPER_CL_FACTOR: f64 = 652.5 / 11.8;
/// §5.4.1: NVM lines loaded, cache-line-grained ÷ mini pages (11.8M → 5.6M).
const PAPER_MINI_FACTOR: f64 = 11.8 / 5.6;
/// §5.6.2: the DRAM share of NVM from which three-tier outperforms nvm-direct (%).
const PAPER_THREE_TIER_CROSSING_PCT: f64 = 7.0;
/// §5.6.2: the DRAM share of NVM basic-nvm-bm needs to outperform nvm-direct (%).
const PAPER_BASIC_CROSSING_PCT: f64 = 80.0;

/// The sizes of one scale: (DRAM, NVM, data sizes of Figure 8, runs, warm-up s, run s).
struct Fig8Sizes {
    dram: &'static str,
    nvm: &'static str,
    sizes: &'static str,
    runs: &'static str,
    warmup: &'static str,
    duration: &'static str,
}

/// Sizes of Figures 10 and 13: DRAM, NVM = data, DRAM percentages of Figure 13.
struct DrillSizes {
    dram: &'static str,
    nvm: &'static str,
    percents: &'static str,
    runs: &'static str,
    warmup: &'static str,
    duration: &'static str,
}

/// The paper's 2 GB DRAM, 10 GB NVM, 1–15 GB of data at 1/64 (full) or 1/128 (quick):
/// the same 1 : 5 ratio, points in each of the three areas, the last at 1.5× NVM.
fn fig8_sizes(quick: bool) -> Fig8Sizes {
    if quick {
        Fig8Sizes {
            dram: "16MiB",
            nvm: "80MiB",
            sizes: "12MiB,48MiB,72MiB,120MiB",
            runs: "1",
            warmup: "0.5",
            duration: "1",
        }
    } else {
        Fig8Sizes {
            dram: "32MiB",
            nvm: "160MiB",
            sizes: "16MiB,24MiB,48MiB,96MiB,144MiB,200MiB,240MiB",
            runs: "3",
            warmup: "1",
            duration: "1",
        }
    }
}

fn drill_sizes(quick: bool) -> DrillSizes {
    if quick {
        DrillSizes { dram: "16MiB", nvm: "80MiB", percents: "5,20,60", runs: "1", warmup: "0.5", duration: "1" }
    } else {
        DrillSizes {
            dram: "32MiB",
            nvm: "160MiB",
            percents: "2,5,10,20,40,60,80,100",
            runs: "1",
            warmup: "1",
            duration: "1.5",
        }
    }
}

pub(crate) fn run(ctx: &Ctx) -> Result<Vec<Section>> {
    Ok(vec![fig8(ctx)?, drilldown(ctx)?])
}

/// The median throughput of `arch` at `data_bytes` in a `compare` report.
fn ops(report: &Value, arch: &str, data_bytes: u64) -> Option<f64> {
    report["points"].as_array()?.iter().find_map(|p| {
        (p["arch"] == arch && p["data_bytes"].as_u64() == Some(data_bytes)).then(|| p["ops_per_sec"].as_f64()).flatten()
    })
}

/// `a ÷ b` as a row's value, or why there is none.
fn ratio_row(row: Row, a: Option<f64>, b: Option<f64>) -> Row {
    match (a, b) {
        (Some(x), Some(y)) if y > 0.0 => row.ours(x / y),
        _ => row.ours_text("no point: a run of either failed or its data did not fit"),
    }
}

fn fig8(ctx: &Ctx) -> Result<Section> {
    let dir = ctx.dir("three-tier-fig8")?;
    let z = fig8_sizes(ctx.quick());
    let mut a = args(&[
        "compare",
        "--workload",
        "ro",
        "--mode",
        "model",
        "--model-clock",
        "cpu",
        "--dram",
        z.dram,
        "--nvm",
        z.nvm,
        "--sizes",
        z.sizes,
        "--runs",
        z.runs,
        "--warmup",
        z.warmup,
        "--duration",
        z.duration,
        "--out",
    ]);
    a.push(dir.display().to_string());
    a.extend(ctx.device_dirs());
    a.push("--quiet".into());
    let ran = ctx.tierdb("three-tier-fig8", &a)?;
    let report = read_json(&dir.join("compare.json"))?;
    let sizes: Vec<u64> = report["points"]
        .as_array()
        .map(|ps| ps.iter().filter_map(|p| p["data_bytes"].as_u64()).collect())
        .unwrap_or_default();
    let (dram, nvm) = (report["dram_bytes"].as_u64().unwrap_or(0), report["nvm_bytes"].as_u64().unwrap_or(0));
    let in_dram = sizes.iter().copied().filter(|&s| s <= dram).min();
    let in_nvm = sizes.iter().copied().filter(|&s| s > dram && s <= nvm).max();
    let edge = sizes.iter().copied().max();

    let mut s = Section::new("three-tier", "Figure 8: YCSB-RO over data sizes, every architecture");
    s.setup = format!(
        "mode model (CPU clock) · profiles dram, optane-dcpmm, nvme-ssd · DRAM {}, NVM {} · data {} \
         (B+-tree size after loading) · YCSB-RO, zipf 1.0 · 1 thread · seed 42 · {} s warm-up + {} s run, \
         median of {} run(s) · nvm-direct's in-place reads through the CPU-cache model, 0.2% of each point's \
         data (at least 256 KiB). The paper: DRAM 2 GB, NVM 10 GB, 1–15 GB of data, a 20 MB L3.",
        z.dram, z.nvm, z.sizes, z.warmup, z.duration, z.runs
    );
    s.ran.push(ran);
    let at = |size: Option<u64>, what: &str| match size {
        Some(b) => format!("{what} ({})", tierdb::ByteSize(b)),
        None => format!("{what} (no such point)"),
    };
    let get = |arch: &str, size: Option<u64>| size.and_then(|b| ops(&report, arch, b));

    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(in_dram, "three-tier ÷ main-memory, DRAM area")),
            get("three-tier", in_dram),
            get("main-memory", in_dram),
        )
        .published_text("below 1: main-memory is fastest (3.6M ops/s)")
        .unit("×")
        .why(
            "Fixing and unfixing pages costs the buffer managers a little even when every page is in DRAM; \
             the paper's and ours agree on the order, not on the size of the gap.",
        ),
    );
    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(in_dram, "basic-nvm-bm ÷ three-tier, DRAM area")),
            get("basic-nvm-bm", in_dram),
            get("three-tier", in_dram),
        )
        .published_text("roughly the same (≈ 1)")
        .unit("×")
        .why("In the DRAM area both serve every lookup from DRAM; pointer swizzling against line checks decides."),
    );
    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(in_dram, "nvm-direct ÷ three-tier, DRAM area")),
            get("nvm-direct", in_dram),
            get("three-tier", in_dram),
        )
        .published_text("below 1: nvm-direct is slowest in the DRAM area")
        .unit("×")
        .why("nvm-direct reads every line it misses in the CPU cache from NVM, where the others read DRAM."),
    );
    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(in_nvm, "three-tier ÷ nvm-direct, NVM area")),
            get("three-tier", in_nvm),
            get("nvm-direct", in_nvm),
        )
        .published_text("above 1: three-tier stays above nvm-direct")
        .unit("×")
        .why(
            "Three-tier caches the hot lines in DRAM; nvm-direct only has the CPU cache, scaled to the \
             paper's 0.2% of the data. With a fixed 32 MiB model (4–40% of our data) nvm-direct came out on \
             top instead (docs/results/compare-ycsb-ro.md).",
        ),
    );
    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(in_nvm, "nvm-direct ÷ basic-nvm-bm, NVM area")),
            get("nvm-direct", in_nvm),
            get("basic-nvm-bm", in_nvm),
        )
        .published_text("above 1: basic-nvm-bm drops below nvm-direct")
        .unit("×")
        .why("basic-nvm-bm copies whole 16 KiB pages from NVM on each DRAM miss; nvm-direct reads a few lines."),
    );
    s.rows.push(
        ratio_row(
            Row::new("Figure 8", at(edge, "three-tier ÷ ssd-bm, right edge (1.5× NVM)")),
            get("three-tier", edge),
            get("ssd-bm", edge),
        )
        .published(PAPER_SSD_AREA_FACTOR, "§5.3, at 15 GB of data")
        .unit("×")
        .why(
            "Our runs are seconds long: three-tier's NVM fills through the admission set more slowly than in \
             the paper's longer runs, and the modelled SSD's latency sets ssd-bm's level.",
        ),
    );
    s.notes.push(format!(
        "Points: DRAM area up to {}, NVM area up to {}, SSD area beyond; the table and plot of every \
         architecture are in the artifacts.",
        tierdb::ByteSize(dram),
        tierdb::ByteSize(nvm)
    ));
    s.artifacts_in(ctx, &dir);
    Ok(s)
}

/// The drill-down's DRAM row of `arch` at `percent`.
fn dram_ops(report: &Value, arch: &str, percent: f64) -> Option<f64> {
    report["dram"]["rows"].as_array()?.iter().find_map(|r| {
        (r["arch"] == arch && r["dram_percent"].as_f64() == Some(percent)).then(|| r["ops_per_sec"].as_f64()).flatten()
    })
}

/// The smallest DRAM percentage at which `arch` is at least as fast as nvm-direct, from
/// `percents`; `Err` with the reason when none is (or a point is missing).
fn crossing(report: &Value, arch: &str, percents: &[f64]) -> Result<f64, String> {
    for &p in percents {
        match (dram_ops(report, arch, p), dram_ops(report, "nvm-direct", p)) {
            (Some(a), Some(d)) if a >= d => return Ok(p),
            (Some(_), Some(_)) => {}
            _ => return Err(format!("no point: a run at {p}% failed")),
        }
    }
    Err(format!("never, up to {}%", percents.last().copied().unwrap_or(0.0)))
}

fn drilldown(ctx: &Ctx) -> Result<Section> {
    let dir = ctx.dir("three-tier-fig10-13")?;
    let z = drill_sizes(ctx.quick());
    let mut a = args(&[
        "drilldown",
        "--parts",
        "fig10,dram",
        "--mode",
        "model",
        "--model-clock",
        "cpu",
        "--dram",
        z.dram,
        "--nvm",
        z.nvm,
        "--data",
        z.nvm,
        "--dram-percent",
        z.percents,
        "--runs",
        z.runs,
        "--warmup",
        z.warmup,
        "--duration",
        z.duration,
        "--out",
    ]);
    a.push(dir.display().to_string());
    a.extend(ctx.device_dirs());
    a.push("--quiet".into());
    let ran = ctx.tierdb("three-tier-fig10-13", &a)?;
    let report = read_json(&dir.join("drilldown.json"))?;
    let mut s = Section::new("three-tier", "Figures 10 and 13: the techniques one at a time; DRAM size");
    s.setup = format!(
        "mode model (CPU clock) · profiles dram, optane-dcpmm, nvme-ssd · DRAM {} (Figure 10), NVM {}, data {} \
         · Figure 13: DRAM {}% of NVM · YCSB-RO, zipf 1.0 · 1 thread · seed 42 · {} s warm-up + {} s run, \
         median of {} run(s) · nvm-direct through the CPU-cache model, 0.2% of the data (at least 256 KiB). \
         The paper: DRAM 2 GB, NVM 10 GB, 10 GB of data.",
        z.dram, z.nvm, z.nvm, z.percents, z.warmup, z.duration, z.runs
    );
    s.ran.push(ran);
    let rows = report["fig10"]["rows"].as_array().cloned().unwrap_or_default();
    let lines = |i: usize| rows.get(i).and_then(|r| r["nvm_lines_per_lookup"].as_f64());
    s.rows.push(
        ratio_row(Row::new("Figure 10", "NVM lines loaded, basic ÷ +cache-line-grained"), lines(0), lines(1))
            .published(PAPER_CL_FACTOR, "§5.4.1: 652.5M → 11.8M lines")
            .unit("×")
            .why(
                "Per lookup here, in total there. A DRAM miss costs our slotted leaves more lines than the \
                 paper's 4-byte-key leaves (docs/results/drilldown.md).",
            ),
    );
    s.rows.push(
        ratio_row(Row::new("Figure 10", "NVM lines loaded, +cache-line-grained ÷ +mini pages"), lines(1), lines(2))
            .published(PAPER_MINI_FACTOR, "§5.4.1: 11.8M → 5.6M lines")
            .unit("×")
            .why("Mini pages let more hot records stay in the same DRAM; the gain depends on how skewed the leaves' use is."),
    );
    let all = rows.last().and_then(|r| r["ops_per_sec"].as_f64());
    let direct = report["fig10"]["nvm_direct"]["ops_per_sec"].as_f64();
    s.rows.push(
        ratio_row(Row::new("Figure 10", "three-tier (all techniques) ÷ nvm-direct"), all, direct)
            .published_text("above 1: the optimised buffer manager outperforms NVM Direct (§5.4)")
            .unit("×")
            .why("DRAM is 20% of the NVM here as there; nvm-direct's CPU cache is scaled to 0.2% of the data."),
    );
    let percents: Vec<f64> = z.percents.split(',').map(|p| p.parse().expect("a literal percentage")).collect();
    for (arch, published, what) in [
        ("three-tier", PAPER_THREE_TIER_CROSSING_PCT, "around 7% (§5.6.2)"),
        ("basic-nvm-bm", PAPER_BASIC_CROSSING_PCT, "around 80% of NVM (§5.6.2)"),
    ] {
        let row = Row::new("Figure 13", format!("DRAM % of NVM from which {arch} ≥ nvm-direct"))
            .published(published, what)
            .unit("%")
            .why(format!(
                "Our grid ({}%) gives the first point at or above the crossing, not the crossing itself.",
                z.percents
            ));
        s.rows.push(match crossing(&report, arch, &percents) {
            Ok(p) => row.ours(p),
            Err(why) => row.ours_text(why),
        });
    }
    s.artifacts_in(ctx, &dir);
    Ok(s)
}
