//! Axes: data → plotted coordinates (linear, log 2, log 10), ranges that are never
//! empty, tick positions a reader expects and their labels.

use super::*;

/// How data values map to the plotted coordinate of one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scale {
    Linear,
    Log2,
    Log10,
}

impl Scale {
    /// The plotted coordinate of data value `v`, or `None` if it cannot be drawn.
    pub(super) fn to_plot(self, v: f64) -> Option<f64> {
        if !v.is_finite() || v.abs() > VALUE_ABS_MAX {
            return None;
        }
        match self {
            Scale::Linear if v.abs() < VALUE_ABS_MIN_LINEAR => Some(0.0),
            Scale::Linear => Some(v),
            Scale::Log2 if v > 0.0 => Some(v.log2()),
            Scale::Log10 if v > 0.0 => Some(v.log10()),
            Scale::Log2 | Scale::Log10 => None,
        }
    }

    /// The data value at plotted coordinate `p`; inverse of [`Scale::to_plot`].
    pub(super) fn to_data(self, p: f64) -> f64 {
        match self {
            Scale::Linear => p,
            Scale::Log2 => p.exp2(),
            Scale::Log10 => 10f64.powf(p),
        }
    }
}

/// One axis in plotted coordinates: its range and where its labelled ticks are.
#[derive(Clone, Debug)]
pub(super) struct Axis {
    pub(super) scale: Scale,
    pub(super) format: AxisFormat,
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// Ascending, within `lo..=hi`.
    pub(super) ticks: Vec<f64>,
    /// Data-unit distance between neighbouring linear ticks; decides label precision.
    pub(super) step: f64,
    /// A categorical axis's names, tick `i` at `i`; empty for a numeric axis.
    pub(super) names: Vec<String>,
}

impl Axis {
    /// An axis covering the plotted `values` (already finite), widened to whole ticks.
    pub(super) fn new(scale: Scale, format: AxisFormat, values: &[f64], include_zero: bool) -> Self {
        let (mut lo, mut hi) = min_max(values).unwrap_or((0.0, 1.0));
        if include_zero && scale == Scale::Linear {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let axis = match scale {
            Scale::Linear => linear_axis(format, lo, hi),
            Scale::Log2 => log2_axis(format, lo, hi),
            Scale::Log10 => log10_axis(format, lo, hi),
        };
        axis.check_invariants();
        axis
    }

    /// A categorical axis: one tick per name at 0, 1, …, half a step of room each side.
    pub(super) fn categorical(names: &[String]) -> Self {
        assert!(!names.is_empty() && names.len() <= CATEGORIES_MAX, "{} categories", names.len());
        let ticks: Vec<f64> = (0..names.len()).map(|i| i as f64).collect();
        let axis = Axis {
            scale: Scale::Linear,
            format: AxisFormat::Plain,
            lo: -0.5,
            hi: names.len() as f64 - 0.5,
            ticks,
            step: 1.0,
            names: names.to_vec(),
        };
        axis.check_invariants();
        axis
    }

    pub(super) fn check_invariants(&self) {
        assert!(self.lo.is_finite() && self.hi.is_finite(), "axis {}..{}", self.lo, self.hi);
        assert!(self.lo < self.hi, "empty axis {}..{}", self.lo, self.hi);
        assert!(!self.ticks.is_empty() && self.ticks.len() <= TICKS_MAX, "{} ticks", self.ticks.len());
        assert!(self.ticks.windows(2).all(|w| w[0] < w[1]), "ticks not ascending: {:?}", self.ticks);
        let slack = (self.hi - self.lo) * 1e-9;
        assert!(
            self.ticks.iter().all(|&t| t >= self.lo - slack && t <= self.hi + slack),
            "ticks {:?} outside {}..{}",
            self.ticks,
            self.lo,
            self.hi
        );
    }

    /// The tick label at plotted coordinate `p`.
    pub(super) fn label(&self, p: f64) -> String {
        if !self.names.is_empty() {
            // Ticks sit on whole indices; anything else is not a category.
            let index = p.round();
            return if (p - index).abs() < 1e-9 && index >= 0.0 {
                self.names.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            };
        }
        let v = self.scale.to_data(p);
        // On a log axis neighbouring ticks differ by at least half the value.
        let step = if self.scale == Scale::Linear { self.step } else { v.abs() / 2.0 };
        match self.format {
            AxisFormat::Plain => format_si(v, step),
            AxisFormat::Bytes => format_bytes(v, step),
        }
    }

    pub(super) fn coord(&self) -> TickedCoord {
        TickedCoord { lo: self.lo, hi: self.hi, ticks: self.ticks.clone() }
    }
}

/// A linear plotters coordinate over plotted values whose mesh lines and labels sit at
/// exactly our ticks. (plotters' own `WithKeyPoints` over `f64` offers no label
/// formatter hook, so the mesh could not be configured with it.)
pub(super) struct TickedCoord {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
}

impl Ranged for TickedCoord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        debug_assert!(self.lo < self.hi, "empty coordinate {}..{}", self.lo, self.hi);
        let fraction = (value - self.lo) / (self.hi - self.lo);
        // `as` saturates, so a value far outside the range cannot wrap around.
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold mesh lines and labels at the ticks; no light lines in between.
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

pub(super) fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    values.iter().fold(None, |acc, &v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Linear axis: a 1-2-5 step (a power of two for bytes), range widened to whole steps.
pub(super) fn linear_axis(format: AxisFormat, mut lo: f64, mut hi: f64) -> Axis {
    // Equal values, or a span too small against the magnitude to step through in f64
    // (`lo / step` must stay exact): widen around the middle, keeping zero at zero.
    if hi - lo <= lo.abs().max(hi.abs()) * 1e-9 {
        let mid = (lo + hi) / 2.0;
        if mid == 0.0 {
            hi = 1.0;
        } else {
            lo = mid - mid.abs() / 2.0;
            hi = mid + mid.abs() / 2.0;
        }
    }
    let raw = (hi - lo) / TICKS_TARGET as f64;
    let step = match format {
        AxisFormat::Plain => nice_step(raw),
        AxisFormat::Bytes => raw.log2().ceil().exp2(),
    };
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let count = (last - first) as usize + 1;
    assert!((2..=TICKS_MAX).contains(&count), "{count} ticks for {lo}..{hi} step {step}");
    let ticks: Vec<f64> = (0..count).map(|i| (first + i as f64) * step).collect();
    Axis { scale: Scale::Linear, format, lo: ticks[0], hi: ticks[count - 1], ticks, step, names: Vec::new() }
}

/// The smallest of 1, 2, 5 × 10^k that is at least `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    assert!(raw > 0.0 && raw.is_finite(), "step {raw}");
    let magnitude = 10f64.powf(raw.log10().floor());
    let normalized = raw / magnitude;
    let factor = [1.0, 2.0, 5.0, 10.0].into_iter().find(|&f| f >= normalized * (1.0 - 1e-9)).unwrap_or(10.0);
    factor * magnitude
}

/// Log-2 axis: ticks at powers of two (every n-th one over a wide range).
pub(super) fn log2_axis(format: AxisFormat, lo: f64, hi: f64) -> Axis {
    let mut first = lo.floor() as i64;
    let mut last = hi.ceil() as i64;
    if first == last {
        first -= 1;
        last += 1;
    }
    let span = (last - first) as u64;
    let stride = span.div_ceil(LOG2_TICKS_MAX).max(1);
    let count = span.div_ceil(stride) + 1;
    let ticks: Vec<f64> = (0..count).map(|i| (first + (i * stride) as i64) as f64).collect();
    let hi = *ticks.last().expect("at least two ticks");
    Axis { scale: Scale::Log2, format, lo: first as f64, hi, ticks, step: 0.0, names: Vec::new() }
}

/// Log-10 axis: ticks at 1, 2, 5 × 10^k over a few decades, at 10^k (every n-th one)
/// over more; range widened to the ticks just outside the data.
pub(super) fn log10_axis(format: AxisFormat, lo: f64, hi: f64) -> Axis {
    // One value (or nearly): centre it in a decade instead of leaving it on an edge.
    let (lo, hi) = if hi - lo < 1e-9 { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
    let first = lo.floor() as i64;
    let mut last = hi.ceil() as i64;
    if first == last {
        last += 1;
    }
    let decades = (last - first) as u64;
    let stride = decades.div_ceil(LOG10_DECADES_MAX).max(1) as i64;
    let mantissas: &[f64] = if decades <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut candidates = Vec::new();
    let mut k = first;
    while k <= last + stride {
        candidates.extend(mantissas.iter().map(|m| k as f64 + m.log10()));
        k += stride;
    }
    // The last candidate at or below `lo` and the first at or above `hi` bound the axis.
    let start = candidates.iter().rposition(|&c| c <= lo + 1e-12).unwrap_or(0);
    let end = candidates.iter().position(|&c| c >= hi - 1e-12).unwrap_or(candidates.len() - 1);
    let end = end.max(start + 1);
    let ticks = candidates[start..=end].to_vec();
    Axis { scale: Scale::Log10, format, lo: ticks[0], hi: ticks[ticks.len() - 1], ticks, step: 0.0, names: Vec::new() }
}

/// Decimal places needed so that labels `step` apart (in units of `unit`) differ.
pub(super) fn decimals_for(step: f64, unit: f64) -> usize {
    let relative = step / unit;
    if !(relative.is_finite() && relative > 0.0) || relative >= 1.0 {
        return 0;
    }
    ((-relative.log10()).ceil() as usize).min(6)
}

/// `v` with the given decimals, trailing zeros and a trailing point removed.
pub(super) fn trimmed(v: f64, decimals: usize) -> String {
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        let len = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(len);
    }
    if s == "-0" { "0".to_string() } else { s }
}

/// A compact decimal label: `350k`, `1.2M`, `0.25`.
pub(super) fn format_si(v: f64, step: f64) -> String {
    const SUFFIXES: [(f64, &str); 5] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    if v == 0.0 {
        return "0".to_string();
    }
    let (unit, suffix) = SUFFIXES.into_iter().find(|&(unit, _)| v.abs() >= unit).unwrap_or((1.0, ""));
    format!("{}{suffix}", trimmed(v / unit, decimals_for(step, unit)))
}

/// A byte-count label with binary prefixes: `128 MiB`, `1.5 GiB`.
pub(super) fn format_bytes(v: f64, step: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut index = 0;
    while index + 1 < UNITS.len() && v.abs() >= 1024f64.powi(index as i32 + 1) {
        index += 1;
    }
    let unit = 1024f64.powi(index as i32);
    format!("{} {}", trimmed(v / unit, decimals_for(step, unit).min(2)), UNITS[index])
}
