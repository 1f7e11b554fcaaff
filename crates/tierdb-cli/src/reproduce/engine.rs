//! tierdb's own figures that the documents quote besides the papers': the devices'
//! emulated cost against their profiles (docs/results/devices.md), two threads against
//! one (docs/results/threads.md), and the buffer manager against main memory with all
//! data in DRAM (the three-tier paper's DRAM area, docs/results/drilldown.md). The
//! criterion micro-benchmarks (docs/results/hot-paths.md) need the source tree and run
//! from `scripts/hot-paths`.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use super::sections::{args, read_json};
use super::{Ctx, Row, Section};

/// Rows of `devices bench` set beside their profile in the report.
const DEVICE_ROWS: &[(&str, &str)] = &[
    ("nvm", "line read, random"),
    ("nvm", "line read, sequential"),
    ("nvm", "line write + persist, random"),
    ("ssd", "page read, random"),
    ("ssd", "page write, random"),
];

fn device_row<'a>(r: &'a Value, tier: &str, op: &str) -> Option<&'a Value> {
    r["rows"].as_array()?.iter().find(|x| x["tier"] == tier && x["op"].as_str().is_some_and(|o| o.starts_with(op)))
}

fn devices(ctx: &Ctx) -> Result<Section> {
    let dir = ctx.dir("engine-devices")?;
    let (ops, ssd_ops, runs) = if ctx.quick() { ("20000", "200", "1") } else { ("200000", "2000", "3") };
    let mut s = Section::new("tierdb", "The devices: emulated cost against the profiles");
    let mut reports = Vec::new();
    for mode in ["spin", "off"] {
        let file = dir.join(format!("devices-{mode}.json"));
        let a =
            args(&["devices", "bench", "--mode", mode, "--ops", ops, "--ssd-ops", ssd_ops, "--runs", runs, "--json"]);
        s.ran.push(ctx.tierdb_stdout(&format!("devices-{mode}"), &a, &file)?);
        reports.push(read_json(&file)?);
    }
    s.setup = format!(
        "profiles dram, optane-dcpmm (NVM: a 1 GiB file on /dev/shm), nvme-ssd (a 512 MiB page file in the temp \
         directory, O_DIRECT) · 16 KiB pages · 1 thread · seed 42 · {ops} memory / {ssd_ops} page operations per run, \
         median of {runs} run(s)"
    );
    for (tier, op) in DEVICE_ROWS {
        let what = format!("{tier} {op}: spin ÷ profile");
        let row = Row::new("devices", what.clone()).published(1.0, "the profile").unit("×").why(
            "spin pads each access up to the profile's cost; it cannot make this machine faster, and random \
             accesses add the machine's own cache and TLB misses around the padded window.",
        );
        let spin = device_row(&reports[0], tier, op).and_then(|x| x["ratio"].as_f64());
        s.rows.push(match spin {
            Some(v) => row.ours(v),
            None => row.ours_text("no such row in the report"),
        });
        if let Some(off) = device_row(&reports[1], tier, op) {
            let wall = off["wall_ns_per_op"].as_f64().unwrap_or(f64::NAN);
            let profile = off["profile_ns_per_op"].as_f64().unwrap_or(f64::NAN);
            s.notes.push(format!("{tier} {op}: this machine (off) {wall:.0} ns, the profile {profile:.0} ns."));
        }
    }
    s.artifacts_in(ctx, &dir);
    Ok(s)
}

fn ops_per_sec(file: &Path) -> Result<f64> {
    let r = read_json(file)?;
    r["result"]["throughput_ops_per_sec"].as_f64().with_context(|| format!("{} has no throughput", file.display()))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn threads_and_dram(ctx: &Ctx) -> Result<Vec<Section>> {
    let dir = ctx.dir("engine-threads")?;
    let (pairs, duration) = if ctx.quick() { (1, "1") } else { (5, "3") };
    let archs = ["three-tier", "main-memory"];
    let mut threads = Section::new("tierdb", "Two threads against one, all data in DRAM");
    let mut one: Vec<Vec<f64>> = vec![Vec::new(); archs.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); archs.len()];
    for pair in 0..pairs {
        for (i, arch) in archs.iter().enumerate() {
            let mut got = [0.0; 2];
            for (k, t) in ["1", "2"].iter().enumerate() {
                let file = dir.join(format!("{arch}-{t}t-{pair}.json"));
                let a = args(&[
                    "bench",
                    "ycsb",
                    "--arch",
                    arch,
                    "--mode",
                    "off",
                    "--dram",
                    "256MiB",
                    "--data",
                    "128MiB",
                    "--workload",
                    "ro",
                    "--threads",
                    t,
                    "--warmup",
                    "1",
                    "--duration",
                    duration,
                    "--seed",
                    "42",
                    "--json",
                    "--quiet",
                ]);
                threads.ran.push(ctx.tierdb_stdout(&format!("threads-{arch}-{t}t-{pair}"), &a, &file)?);
                got[k] = ops_per_sec(&file)?;
            }
            one[i].push(got[0]);
            ratios[i].push(got[1] / got[0]);
        }
    }
    threads.setup = format!(
        "mode off (all data in DRAM, the machine's own speed) · DRAM 256MiB · data 128MiB · YCSB-RO (zipfian, z = 1) · seed 42 · \
         1 s warm-up + {duration} s · {pairs} pair(s) of runs (1 thread, then 2) per architecture, interleaved; the \
         ratio is the median over the pairs, the range beside it"
    );
    for (i, arch) in archs.iter().enumerate() {
        let r = &ratios[i];
        let (lo, hi) = r.iter().fold((f64::INFINITY, 0.0_f64), |(l, h), &x| (l.min(x), h.max(x)));
        let row = Row::new("threads", format!("{arch}: 2 threads ÷ 1 thread"))
            .published(2.0, "two cores, no contention")
            .unit("×")
            .why(format!(
                "Range over the pairs {lo:.2}–{hi:.2}×. The two vCPUs are a shared KVM guest's; lookups share no written \
                 line above the leaves (optimistic inner nodes)."
            ));
        threads.rows.push(match median(r.clone()) {
            Some(m) => row.ours(m),
            None => row.ours_text("no pairs"),
        });
    }
    threads.artifacts_in(ctx, &dir);
    // The same one-thread runs: the buffer manager against main memory with everything
    // in DRAM (the three-tier paper's DRAM area).
    let mut dram = Section::new("three-tier", "All data in DRAM: three-tier against main-memory (§5.3's DRAM area)");
    dram.setup = threads.setup.clone();
    dram.ran = threads.ran.iter().filter(|r| r.command.contains("--threads 1 ")).cloned().collect();
    let ratio: Vec<f64> = one[0].iter().zip(&one[1]).map(|(t, m)| t / m).collect();
    let row = Row::new("Figure 8", "three-tier ÷ main-memory, 1 thread, data half of DRAM")
        .published_text("< 1: main memory is best in the DRAM area (3.6M tx/s)")
        .unit("×")
        .why(
            "With swizzled inner nodes a lookup skips the page table, and the leaf is read optimistically; what is \
             left is the swip check per node and the fix of the leaf. The paper's buffer managers stayed below \
             main memory here.",
        );
    dram.rows.push(match median(ratio) {
        Some(m) => row.ours(m),
        None => row.ours_text("no runs"),
    });
    dram.artifacts = threads.artifacts.clone();
    Ok(vec![threads, dram])
}

pub(crate) fn run(ctx: &Ctx) -> Result<Vec<Section>> {
    let mut out = vec![devices(ctx)?];
    out.extend(threads_and_dram(ctx)?);
    Ok(out)
}
