//! The tuners on a synthetic landscape with a known optimum and 2% measurement noise
//! per full epoch (`tune::landscape`; a short epoch is noisier, as 1/√ops): the paper's
//! simulated annealing ends near the optimum, and the coordinate search reaches it in
//! at most half the epochs annealing needs.
//!
//! "Reaches the optimum": the tuner's best configuration has a noise-free throughput
//! within 2% of the peak (the noise of one epoch). With noise, a tuner can miss a 2–3%
//! step by bad luck, so the claims are over ten seeds: how many reach, and the median
//! tuning time they need, in full epochs (the funnel's short screen epochs count for
//! what they ran).
//!
//! It lives in the benchmark crate, beside the experiments, so that it takes its medians
//! from the harness like every report does.

use tierdb::tune::landscape::{Landscape, drive, epochs_to_reach};
use tierdb::tune::{Anneal, Coord, Funnel, Tuner, TunerConfig};
use tierdb_bench::harness::{self, Middle};

/// Epochs annealing may take: the paper's schedule has 153 temperature levels of at
/// least γ = 10 candidates and at most 100.
const ANNEAL_EPOCHS_MAX: u32 = 20_000;
/// Epochs the coordinate search may take before it must be done.
const COORD_EPOCHS_MAX: u32 = 200;
/// Epochs the funnel may take before it must be done.
const FUNNEL_EPOCHS_MAX: u32 = 150;
/// The target: within 10% of the best static policy.
const WITHIN_10PCT: f64 = 0.9;
const NEAR: f64 = 0.98;
const SEEDS: u64 = 10;

/// The median of ten seeds' results (the upper middle), through the one `median` of the
/// benchmark harness.
fn median(v: Vec<f64>) -> f64 {
    harness::median(v, Middle::Upper).expect("a result for every seed")
}

/// Full epochs until the tuner's choice is within `fraction` of the peak; infinity if never.
fn reach(t: &dyn Tuner, land: &Landscape, fraction: f64) -> f64 {
    epochs_to_reach(t, land, fraction).map_or(f64::INFINITY, |(_, e)| e)
}

#[test]
fn annealing_gets_near_the_optimum_and_coord_needs_at_most_half_its_epochs() {
    let (mut anneal_reach, mut coord_reach) = (Vec::new(), Vec::new());
    let mut anneal_near_at_end = 0;
    for seed in 1..=SEEDS {
        let cfg = TunerConfig::new(seed);
        let mut land = Landscape::spitfire_like(seed * 1000);
        let mut anneal = Anneal::new(&cfg).expect("the paper's parameters are valid");
        let mut epochs = 0;
        while !anneal.done() && epochs < ANNEAL_EPOCHS_MAX {
            drive(&mut anneal, &mut land, 1);
            epochs += 1;
        }
        assert!(anneal.done(), "seed {seed}: annealing did not end in {ANNEAL_EPOCHS_MAX} epochs");
        let end = land.throughput(anneal.propose()) / land.peak_ops_per_sec;
        anneal_near_at_end += u32::from(end >= NEAR);
        let a = reach(&anneal, &land, NEAR);

        let mut land = Landscape::spitfire_like(seed * 1000);
        let mut coord = Coord::new(&cfg).expect("defaults are valid");
        while !coord.done() {
            assert!(coord.trajectory().len() < COORD_EPOCHS_MAX as usize, "seed {seed}: coord did not end");
            drive(&mut coord, &mut land, 1);
        }
        let best = coord.best().expect("observed");
        let c_end = land.throughput(best.knobs) / land.peak_ops_per_sec;
        let c = reach(&coord, &land, NEAR);
        println!(
            "seed {seed}: anneal ended after {epochs} epochs at {end:.3} of the peak, first near at {a:?}; \
             coord ended after {} epochs at {c_end:.3} ({}), first near at {c:?}",
            coord.trajectory().len(),
            best.knobs
        );
        anneal_reach.push(a);
        coord_reach.push(c);
        // Whatever the luck, the coordinate search ends within 5% of the peak (the eager
        // start is at 61%).
        assert!(c_end >= 0.95, "seed {seed}: coord ended at {c_end:.3} of the peak");
    }
    let (a, c) = (median(anneal_reach), median(coord_reach.clone()));
    println!("median epochs to within 2% of the optimum: anneal {a}, coord {c}");
    assert!(anneal_near_at_end >= 8, "annealing ended near the optimum for {anneal_near_at_end} of {SEEDS} seeds");
    let coord_reached = coord_reach.iter().filter(|e| e.is_finite()).count();
    assert!(coord_reached >= 7, "coord reached the optimum for {coord_reached} of {SEEDS} seeds");
    assert!(a.is_finite() && c.is_finite(), "medians: anneal {a}, coord {c}");
    assert!(2.0 * c <= a, "coord needs {c} epochs (median), annealing {a}: not at most half");
}

/// The coarse-to-fine search against annealing, by the measure the engine comparison
/// uses: the tuning time (full epochs) until the tuner's chosen policy truly
/// (noise-free) is within 10% — and within 2% — of the optimum; medians over ten seeds.
#[test]
fn funnel_needs_at_most_half_of_annealings_epochs_and_ends_near_the_optimum() {
    let (mut a10, mut f10, mut a2, mut f2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=SEEDS {
        let cfg = TunerConfig::new(seed);
        let mut land = Landscape::spitfire_like(seed * 1000);
        let mut anneal = Anneal::new(&cfg).expect("the paper's parameters are valid");
        // Annealing's first ~12,000 epochs are its hot random walk; 2,000 hold every
        // first arrival we count.
        drive(&mut anneal, &mut land, 2_000);
        a10.push(reach(&anneal, &land, WITHIN_10PCT));
        a2.push(reach(&anneal, &land, NEAR));

        let mut land = Landscape::spitfire_like(seed * 1000);
        let mut funnel = Funnel::new(&cfg).expect("defaults are valid");
        while !funnel.done() {
            assert!(funnel.trajectory().len() < FUNNEL_EPOCHS_MAX as usize, "seed {seed}: funnel did not end");
            drive(&mut funnel, &mut land, 1);
        }
        let best = funnel.best().expect("observed");
        let end = land.throughput(best.knobs) / land.peak_ops_per_sec;
        f10.push(reach(&funnel, &land, WITHIN_10PCT));
        f2.push(reach(&funnel, &land, NEAR));
        println!(
            "seed {seed}: funnel ended after {} epochs at {end:.3} of the peak ({}); within 10% at {}, 2% at {}; \
             anneal within 10% at {}, 2% at {}",
            funnel.trajectory().len(),
            best.knobs,
            f10[f10.len() - 1],
            f2[f2.len() - 1],
            a10[a10.len() - 1],
            a2[a2.len() - 1],
        );
        // It ends within 5% of the peak whatever the noise (the eager start: 61%).
        assert!(end >= 0.95, "seed {seed}: funnel ended at {end:.3} of the peak");
        // Once within 10%, its choice never falls back below: the shortlist confirms.
        let (first, _) = epochs_to_reach(&funnel, &land, WITHIN_10PCT).expect("funnel within 10%");
        for r in &funnel.trajectory()[first..] {
            let t = land.throughput(r.best.knobs) / land.peak_ops_per_sec;
            assert!(t >= WITHIN_10PCT - 0.02, "seed {seed}: epoch {} chose {} at {t:.3}", r.epoch, r.best.knobs);
        }
    }
    // Within 2% is within one epoch's noise: a 2.5% step (Nr 0.316 against 1) is missed
    // on some seeds, and the funnel then ends at 97% instead.
    let f2_reached = f2.iter().filter(|e| e.is_finite()).count();
    let (a10, f10, a2) = (median(a10), median(f10), median(a2));
    println!(
        "median epochs: within 10% anneal {a10}, funnel {f10}; within 2% anneal {a2}; funnel within 2% on {f2_reached} seeds"
    );
    assert!(a10.is_finite() && a2.is_finite(), "annealing reached neither");
    assert!(2.0 * f10 <= a10, "within 10%: funnel {f10} epochs (median), annealing {a10}");
    assert!(f2_reached >= 4, "funnel within 2% on {f2_reached} of {SEEDS} seeds");
}
