//! SVG line charts for benchmark reports.
//!
//! One [`Chart`] is a set of named [`Series`] of `(x, y)` points drawn as lines with
//! point markers, plus vertical dashed [`Marker`] lines (for example the DRAM and NVM
//! capacities on a throughput-versus-data-size sweep), a title, a subtitle that carries
//! the run configuration, axis labels and a legend.
//!
//! Rendering goes through plotters' SVG backend built without any font feature: plotters
//! then only estimates text extents and writes text as `<text>` elements that the viewer
//! lays out, so no system font is needed.
//!
//! Invariants:
//! - Input is never trusted to be finite: NaN and infinite coordinates, values beyond
//!   [`VALUE_ABS_MAX`] and non-positive values on a logarithmic axis are skipped, not
//!   drawn and not used for the axis ranges; on a linear axis, magnitudes below 1e-300
//!   count as zero. Any chart within the limits renders to a
//!   complete document that starts with `<svg` and ends with `</svg>`.
//! - Axis ranges are never empty: an axis without data spans a default unit range and an
//!   axis whose values are all equal is widened around that value.
//! - Tick positions are computed here, not by plotters, so that they land on values a
//!   reader expects (powers of two on a log-2 axis, 1-2-5 steps on a linear axis).
//!
//! Concurrency: none; every call builds its own document.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Image width when the caller does not choose one.
pub const WIDTH_PX_DEFAULT: u32 = 900;
/// Image height when the caller does not choose one.
pub const HEIGHT_PX_DEFAULT: u32 = 560;
/// Smallest accepted image side; below it the axes and legend no longer fit.
const SIZE_PX_MIN: u32 = 300;
/// Largest accepted image side.
const SIZE_PX_MAX: u32 = 8192;
/// Most series in one chart; beyond it the legend covers the plot.
pub const SERIES_MAX: usize = 32;
/// Most vertical markers in one chart.
pub const MARKERS_MAX: usize = 16;
/// Most names on a categorical x axis (one tick each).
pub const CATEGORIES_MAX: usize = 32;
/// Largest coordinate magnitude that is drawn; larger values are skipped like NaN, so
/// that range arithmetic (`max - min`) cannot overflow to infinity.
pub const VALUE_ABS_MAX: f64 = 1e300;
/// Smallest non-zero magnitude on a linear axis; smaller values are drawn as zero, so
/// that tick steps never sink into subnormals (or to zero).
const VALUE_ABS_MIN_LINEAR: f64 = 1e-300;
/// A series with more points than this is drawn as a line without point markers.
const POINT_MARKERS_MAX: usize = 200;
/// Tick count a linear axis aims for.
const TICKS_TARGET: usize = 7;
/// Tick count a log-2 axis allows before it labels only every n-th power of two.
const LOG2_TICKS_MAX: u64 = 12;
/// Tick count a log-10 axis allows before it labels only every n-th decade.
const LOG10_DECADES_MAX: u64 = 8;
/// Upper bound on the ticks of any axis; the tick generators stay far below it.
const TICKS_MAX: usize = 64;
/// Subtitle lines kept after wrapping; the rest is cut with an ellipsis.
const SUBTITLE_LINES_MAX: usize = 3;

const FONT: &str = "sans-serif";
const TITLE_FONT_PX: f64 = 22.0;
const SUBTITLE_FONT_PX: f64 = 14.0;
const AXIS_DESC_FONT_PX: f64 = 16.0;
const TICK_FONT_PX: f64 = 14.0;
const LEGEND_FONT_PX: f64 = 14.0;
const MARKER_FONT_PX: f64 = 13.0;
const SUBTITLE_COLOR: RGBColor = RGBColor(80, 80, 80);
const MARKER_TEXT_COLOR: RGBColor = RGBColor(64, 64, 64);
const HEADER_TOP_PX: i32 = 10;
const LEGEND_MARGIN_PX: i32 = 12;
/// Width of the line-and-marker sample in front of each legend entry.
const LEGEND_GLYPH_PX: i32 = 34;
const LEGEND_ROW_PX: i32 = 22;
const PLOT_MARGIN_PX: i32 = 12;
const PLOT_MARGIN_RIGHT_PX: i32 = 28;
const X_LABEL_AREA_PX: i32 = 52;
const Y_LABEL_AREA_PX: i32 = 76;
/// Rows of marker labels above the plot; more labels than fit side by side overlap.
const MARKER_LABEL_ROWS_MAX: usize = 3;
const MARKER_LABEL_ROW_PX: i32 = 16;
/// Average advance of a sans-serif character in em, generous so that estimates of text
/// width (for wrapping and label placement) err on the wide side.
const CHAR_WIDTH_EM: f64 = 0.62;
const TITLE_LINE_PX: i32 = 28;
const SUBTITLE_LINE_PX: i32 = 17;

const _: () = assert!(SIZE_PX_MIN <= WIDTH_PX_DEFAULT && WIDTH_PX_DEFAULT <= SIZE_PX_MAX);
const _: () = assert!(SIZE_PX_MIN <= HEIGHT_PX_DEFAULT && HEIGHT_PX_DEFAULT <= SIZE_PX_MAX);
const _: () = assert!(TICKS_TARGET as u64 <= LOG2_TICKS_MAX && (LOG2_TICKS_MAX as usize) < TICKS_MAX);
const _: () = assert!(PALETTE.len() >= 6 && SHAPES.len() >= 4);
const _: () = assert!(CATEGORIES_MAX <= TICKS_MAX);

/// Colour-blind-safe line colours (Okabe–Ito, with yellow darkened to read on white),
/// cycled by series index.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(60, 60, 60),
    RGBColor(160, 140, 0),
];

/// Point marker shapes, cycled by series index. Their count (6) and the palette's (8)
/// give 24 distinct colour/shape pairs before one repeats.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Circle,
    Triangle,
    Square,
    Cross,
    Diamond,
    Ring,
}

const SHAPES: [Shape; 6] = [Shape::Circle, Shape::Triangle, Shape::Square, Shape::Cross, Shape::Diamond, Shape::Ring];

/// How tick labels of an axis are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AxisFormat {
    /// Compact decimal with SI suffixes: `350k`, `1.2M`, `3G`, `0.25`.
    #[default]
    Plain,
    /// A byte count with binary prefixes: `512 B`, `128 MiB`, `1.5 GiB`.
    Bytes,
}

/// Corner of the plot area that holds the legend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LegendPosition {
    /// The corner where the legend covers the fewest points and line pieces, preferring
    /// upper right, upper left, lower right, lower left on a tie.
    #[default]
    Auto,
    UpperRight,
    UpperLeft,
    LowerLeft,
    LowerRight,
}

/// One line of the chart. Points need not be sorted; they are drawn in order of `x`,
/// connected by straight lines. A configuration without a value simply has no point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub name: String,
    /// `(x, y)` pairs in data units.
    pub points: Vec<(f64, f64)>,
}

/// A vertical dashed line across the plot at `x` (data units) with `label` near its top.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// Everything drawn in one chart. Start from [`Chart::new`] for the defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    /// One line under the title naming the configuration; wrapped if it is too wide.
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    /// Logarithmic x axis with ticks at powers of two (data sizes that double).
    pub x_log2: bool,
    /// Logarithmic y axis with ticks at 1, 2, 5 × powers of ten.
    pub y_log10: bool,
    /// Extend a linear y axis down (or up) to zero. Ignored when `y_log10` is set.
    pub y_from_zero: bool,
    pub x_format: AxisFormat,
    pub y_format: AxisFormat,
    /// Names for a categorical x axis. When not empty, x values are indices into it
    /// (0, 1, …), each index is a tick labelled with its name, the axis has half a step
    /// of room on each side, and `x_log2` and `x_format` are ignored; points and markers
    /// outside that span are skipped.
    pub x_categories: Vec<String>,
    pub legend: LegendPosition,
    pub width_px: u32,
    pub height_px: u32,
}

impl Chart {
    /// An empty chart: linear axes, y from zero, plain numbers, 900×560 px.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            subtitle: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            series: Vec::new(),
            markers: Vec::new(),
            x_log2: false,
            y_log10: false,
            y_from_zero: true,
            x_format: AxisFormat::Plain,
            y_format: AxisFormat::Plain,
            x_categories: Vec::new(),
            legend: LegendPosition::Auto,
            width_px: WIDTH_PX_DEFAULT,
            height_px: HEIGHT_PX_DEFAULT,
        }
    }
}

impl Default for Chart {
    fn default() -> Self {
        Self::new("")
    }
}

/// Why a chart could not be rendered or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    #[error("chart size {width_px}x{height_px} px is outside {min}..={max} px per side", min = SIZE_PX_MIN, max = SIZE_PX_MAX)]
    Size { width_px: u32, height_px: u32 },
    #[error("chart has {count} {what}, at most {max} are supported")]
    TooMany { what: &'static str, count: usize, max: usize },
    #[error("drawing the chart failed: {0}")]
    Draw(String),
    #[error("cannot write chart to {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Renders `chart` and writes the SVG document to `path`, replacing any existing file.
///
/// # Errors
/// Those of [`render_svg`], and [`PlotError::Io`] when the file cannot be written (for
/// example when its directory does not exist).
pub fn write_svg(chart: &Chart, path: &Path) -> Result<(), PlotError> {
    let svg = render_svg(chart)?;
    fs::write(path, svg).map_err(|source| PlotError::Io { path: path.to_path_buf(), source })
}

/// Renders `chart` to an SVG document.
///
/// # Errors
/// [`PlotError::Size`] when a side is outside 300..=8192 px, [`PlotError::TooMany`] for
/// more than [`SERIES_MAX`] series or [`MARKERS_MAX`] markers, and [`PlotError::Draw`]
/// if plotters reports a failure (not expected for in-memory SVG).
pub fn render_svg(chart: &Chart) -> Result<String, PlotError> {
    check_limits(chart)?;
    let layout = Layout::new(chart);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (chart.width_px, chart.height_px)).into_drawing_area();
        draw(chart, &layout, &root).map_err(|e| PlotError::Draw(e.to_string()))?;
        root.present().map_err(|e| PlotError::Draw(e.to_string()))?;
    }
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "incomplete SVG document");
    Ok(svg)
}

fn check_limits(chart: &Chart) -> Result<(), PlotError> {
    let side_ok = |px: u32| (SIZE_PX_MIN..=SIZE_PX_MAX).contains(&px);
    if !side_ok(chart.width_px) || !side_ok(chart.height_px) {
        return Err(PlotError::Size { width_px: chart.width_px, height_px: chart.height_px });
    }
    if chart.series.len() > SERIES_MAX {
        return Err(PlotError::TooMany { what: "series", count: chart.series.len(), max: SERIES_MAX });
    }
    if chart.markers.len() > MARKERS_MAX {
        return Err(PlotError::TooMany { what: "markers", count: chart.markers.len(), max: MARKERS_MAX });
    }
    if chart.x_categories.len() > CATEGORIES_MAX {
        return Err(PlotError::TooMany { what: "x categories", count: chart.x_categories.len(), max: CATEGORIES_MAX });
    }
    Ok(())
}

/// How data values map to the plotted coordinate of one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scale {
    Linear,
    Log2,
    Log10,
}

impl Scale {
    /// The plotted coordinate of data value `v`, or `None` if it cannot be drawn.
    fn to_plot(self, v: f64) -> Option<f64> {
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
    fn to_data(self, p: f64) -> f64 {
        match self {
            Scale::Linear => p,
            Scale::Log2 => p.exp2(),
            Scale::Log10 => 10f64.powf(p),
        }
    }
}

/// One axis in plotted coordinates: its range and where its labelled ticks are.
#[derive(Clone, Debug)]
struct Axis {
    scale: Scale,
    format: AxisFormat,
    lo: f64,
    hi: f64,
    /// Ascending, within `lo..=hi`.
    ticks: Vec<f64>,
    /// Data-unit distance between neighbouring linear ticks; decides label precision.
    step: f64,
    /// A categorical axis's names, tick `i` at `i`; empty for a numeric axis.
    names: Vec<String>,
}

impl Axis {
    /// An axis covering the plotted `values` (already finite), widened to whole ticks.
    fn new(scale: Scale, format: AxisFormat, values: &[f64], include_zero: bool) -> Self {
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
    fn categorical(names: &[String]) -> Self {
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

    fn check_invariants(&self) {
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
    fn label(&self, p: f64) -> String {
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

    fn coord(&self) -> TickedCoord {
        TickedCoord { lo: self.lo, hi: self.hi, ticks: self.ticks.clone() }
    }
}

/// A linear plotters coordinate over plotted values whose mesh lines and labels sit at
/// exactly our ticks. (plotters' own `WithKeyPoints` over `f64` offers no label
/// formatter hook, so the mesh could not be configured with it.)
struct TickedCoord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
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

fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    values.iter().fold(None, |acc, &v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Linear axis: a 1-2-5 step (a power of two for bytes), range widened to whole steps.
fn linear_axis(format: AxisFormat, mut lo: f64, mut hi: f64) -> Axis {
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
fn nice_step(raw: f64) -> f64 {
    assert!(raw > 0.0 && raw.is_finite(), "step {raw}");
    let magnitude = 10f64.powf(raw.log10().floor());
    let normalized = raw / magnitude;
    let factor = [1.0, 2.0, 5.0, 10.0].into_iter().find(|&f| f >= normalized * (1.0 - 1e-9)).unwrap_or(10.0);
    factor * magnitude
}

/// Log-2 axis: ticks at powers of two (every n-th one over a wide range).
fn log2_axis(format: AxisFormat, lo: f64, hi: f64) -> Axis {
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
fn log10_axis(format: AxisFormat, lo: f64, hi: f64) -> Axis {
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
fn decimals_for(step: f64, unit: f64) -> usize {
    let relative = step / unit;
    if !(relative.is_finite() && relative > 0.0) || relative >= 1.0 {
        return 0;
    }
    ((-relative.log10()).ceil() as usize).min(6)
}

/// `v` with the given decimals, trailing zeros and a trailing point removed.
fn trimmed(v: f64, decimals: usize) -> String {
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        let len = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(len);
    }
    if s == "-0" { "0".to_string() } else { s }
}

/// A compact decimal label: `350k`, `1.2M`, `0.25`.
fn format_si(v: f64, step: f64) -> String {
    const SUFFIXES: [(f64, &str); 5] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    if v == 0.0 {
        return "0".to_string();
    }
    let (unit, suffix) = SUFFIXES.into_iter().find(|&(unit, _)| v.abs() >= unit).unwrap_or((1.0, ""));
    format!("{}{suffix}", trimmed(v / unit, decimals_for(step, unit)))
}

/// A byte-count label with binary prefixes: `128 MiB`, `1.5 GiB`.
fn format_bytes(v: f64, step: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut index = 0;
    while index + 1 < UNITS.len() && v.abs() >= 1024f64.powi(index as i32 + 1) {
        index += 1;
    }
    let unit = 1024f64.powi(index as i32);
    format!("{} {}", trimmed(v / unit, decimals_for(step, unit).min(2)), UNITS[index])
}

/// Greedy word wrap to `chars_max` characters per line, at most `lines_max` lines; a cut
/// text ends with an ellipsis. Words longer than a line are split.
fn wrap(text: &str, chars_max: usize, lines_max: usize) -> Vec<String> {
    assert!(chars_max >= 2 && lines_max >= 1, "wrap {chars_max} x {lines_max}");
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut truncated = false;
    'words: for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let line_len = line.chars().count();
            let needed = if line_len == 0 { word.len() } else { line_len + 1 + word.len() };
            if needed <= chars_max {
                if line_len > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if line_len == 0 {
                // A word longer than a whole line: take what fits.
                let rest = word.split_off(chars_max);
                line.extend(word.iter());
                word = rest;
            }
            if lines.len() + 1 == lines_max {
                truncated = true;
                break 'words;
            }
            lines.push(std::mem::take(&mut line));
        }
    }
    if truncated {
        while line.chars().count() + 1 > chars_max {
            line.pop();
        }
        line.push('…');
    }
    if !line.is_empty() {
        lines.push(line);
    }
    assert!(lines.len() <= lines_max, "{} lines > {lines_max}", lines.len());
    lines
}

/// Estimated width of `text` at `font_px`; the viewer, not us, lays out the glyphs.
fn text_width_px(text: &str, font_px: f64) -> i32 {
    (text.chars().count() as f64 * font_px * CHAR_WIDTH_EM).ceil() as i32
}

/// Assigns each horizontal span `(left, right)` a row below `rows_max` so that spans in
/// one row do not overlap, placing left to right in the first row that has room; when no
/// row has room, the row whose last span ends first. Returns the row per span, in input
/// order.
fn label_rows(spans: &[(i32, i32)], rows_max: usize) -> Vec<usize> {
    assert!(rows_max >= 1, "no rows");
    const GAP_PX: i32 = 6;
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut row_end: Vec<i32> = vec![i32::MIN; rows_max];
    let mut rows = vec![0; spans.len()];
    for i in order {
        let (left, right) = spans[i];
        debug_assert!(left <= right, "span {left}..{right}");
        let row = (0..rows_max)
            .find(|&r| row_end[r].saturating_add(GAP_PX) <= left)
            .unwrap_or_else(|| (0..rows_max).min_by_key(|&r| row_end[r]).expect("rows_max >= 1"));
        row_end[row] = row_end[row].max(right);
        rows[i] = row;
    }
    rows
}

/// Where a marker's label goes: centred at `center_px`, in row `row` above the plot.
struct MarkerLabel {
    text: String,
    center_px: i32,
    row: usize,
}

/// Places the marker labels before the plot is built, so that the band above the plot
/// can be sized to the rows used. The plot's horizontal extent follows from the fixed
/// margins and label-area width that `draw` gives plotters.
fn marker_labels(chart: &Chart, layout: &Layout) -> Vec<MarkerLabel> {
    let width_px = chart.width_px as i32;
    let plot_px = (PLOT_MARGIN_PX + Y_LABEL_AREA_PX, width_px - PLOT_MARGIN_RIGHT_PX);
    let coord = layout.x.coord();
    let spans_px: Vec<(i32, i32)> = layout
        .markers
        .iter()
        .map(|(x, text)| {
            let half_px = text_width_px(text, MARKER_FONT_PX) / 2 + 1;
            // Keep the label inside the image even for a marker at the edge.
            let center_px = coord.map(x, plot_px).clamp(half_px, (width_px - half_px).max(half_px));
            (center_px - half_px, center_px + half_px)
        })
        .collect();
    let rows = label_rows(&spans_px, MARKER_LABEL_ROWS_MAX);
    layout
        .markers
        .iter()
        .zip(spans_px)
        .zip(rows)
        .map(|(((_, text), (left_px, right_px)), row)| MarkerLabel {
            text: text.clone(),
            center_px: (left_px + right_px) / 2,
            row,
        })
        .collect()
}

/// The chart in plotted coordinates, ready to draw.
struct Layout {
    x: Axis,
    y: Axis,
    /// Per series: drawable points sorted by x.
    series: Vec<Vec<(f64, f64)>>,
    /// Drawable markers: plotted x and label.
    markers: Vec<(f64, String)>,
    subtitle_lines: Vec<String>,
}

impl Layout {
    fn new(chart: &Chart) -> Self {
        let categorical = !chart.x_categories.is_empty();
        let x_scale = if chart.x_log2 && !categorical { Scale::Log2 } else { Scale::Linear };
        let y_scale = if chart.y_log10 { Scale::Log10 } else { Scale::Linear };
        let category_span = -0.5..=chart.x_categories.len() as f64 - 0.5;
        let to_x = |x: f64| x_scale.to_plot(x).filter(|p| !categorical || category_span.contains(p));
        let series: Vec<Vec<(f64, f64)>> = chart
            .series
            .iter()
            .map(|s| {
                let mut points: Vec<(f64, f64)> =
                    s.points.iter().filter_map(|&(x, y)| Some((to_x(x)?, y_scale.to_plot(y)?))).collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                points
            })
            .collect();
        let markers: Vec<(f64, String)> =
            chart.markers.iter().filter_map(|m| Some((to_x(m.x)?, m.label.clone()))).collect();
        let xs: Vec<f64> = series.iter().flatten().map(|p| p.0).chain(markers.iter().map(|m| m.0)).collect();
        let ys: Vec<f64> = series.iter().flatten().map(|p| p.1).collect();
        let x = if categorical {
            Axis::categorical(&chart.x_categories)
        } else {
            Axis::new(x_scale, chart.x_format, &xs, false)
        };
        let y = Axis::new(y_scale, chart.y_format, &ys, chart.y_from_zero);
        let chars_max = ((f64::from(chart.width_px) - 40.0) / (SUBTITLE_FONT_PX * CHAR_WIDTH_EM)) as usize;
        let subtitle_lines = wrap(&chart.subtitle, chars_max.max(2), SUBTITLE_LINES_MAX);
        Self { x, y, series, markers, subtitle_lines }
    }
}

fn font(px: f64) -> TextStyle<'static> {
    // The SVG backend writes `font-size` as size / 1.24; scale so the document says `px`.
    TextStyle::from((FONT, px * 1.24).into_font())
}

fn bold_font(px: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, px * 1.24).into_font().style(FontStyle::Bold))
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws header, axes, series, markers and legend onto `root`.
fn draw(chart: &Chart, layout: &Layout, root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult {
    // 1. Background and header: title and wrapped subtitle, centred.
    root.fill(&WHITE)?;
    let center_x = (chart.width_px / 2) as i32;
    let mut header_px = HEADER_TOP_PX;
    if !chart.title.is_empty() {
        let style = bold_font(TITLE_FONT_PX).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(chart.title.clone(), (center_x, header_px), style))?;
        header_px += TITLE_LINE_PX;
    }
    for line in &layout.subtitle_lines {
        let style = font(SUBTITLE_FONT_PX).color(&SUBTITLE_COLOR).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(line.clone(), (center_x, header_px), style))?;
        header_px += SUBTITLE_LINE_PX;
    }
    let marker_labels = marker_labels(chart, layout);
    let label_rows_count = marker_labels.iter().map(|m| m.row + 1).max().unwrap_or(0) as i32;
    let (_, body) = root.split_vertically(header_px + 4 + MARKER_LABEL_ROW_PX * label_rows_count);

    // 2. Axes and grid on our own tick positions.
    let mut plot = ChartBuilder::on(&body)
        .margin(PLOT_MARGIN_PX)
        .margin_right(PLOT_MARGIN_RIGHT_PX)
        .x_label_area_size(X_LABEL_AREA_PX)
        .y_label_area_size(Y_LABEL_AREA_PX)
        .build_cartesian_2d(layout.x.coord(), layout.y.coord())?;
    let x_label = |p: &f64| layout.x.label(*p);
    let y_label = |p: &f64| layout.y.label(*p);
    let mut mesh = plot.configure_mesh();
    mesh.x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(font(TICK_FONT_PX))
        .axis_desc_style(font(AXIS_DESC_FONT_PX))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT);
    // An empty description would still be written as an empty `<text>`.
    if !chart.x_label.is_empty() {
        mesh.x_desc(chart.x_label.as_str());
    }
    if !chart.y_label.is_empty() {
        mesh.y_desc(chart.y_label.as_str());
    }
    mesh.draw()?;

    // 3. Markers first, so that data lines are drawn over them; their labels go in the
    //    band reserved above the plot, where neither data nor legend can cover them.
    let marker_style = BLACK.mix(0.55).stroke_width(1);
    for (x, _) in &layout.markers {
        let line = [(*x, layout.y.lo), (*x, layout.y.hi)];
        plot.draw_series(DashedLineSeries::new(line, 6, 4, marker_style))?;
    }
    let plot_top_px = plot.plotting_area().get_pixel_range().1.start;
    for label in marker_labels {
        let bottom_px = plot_top_px - 3 - MARKER_LABEL_ROW_PX * label.row as i32;
        let style = font(MARKER_FONT_PX).color(&MARKER_TEXT_COLOR).pos(Pos::new(HPos::Center, VPos::Bottom));
        root.draw(&Text::new(label.text, (label.center_px, bottom_px), style))?;
    }

    // 4. Series: line, point markers, legend entry.
    for (index, (series, points)) in chart.series.iter().zip(&layout.series).enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        let shape = SHAPES[index % SHAPES.len()];
        plot.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(series.name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(-12, 0), (12, 0)], color.stroke_width(2))
                    + point_glyph(shape, color)
            });
        if points.len() <= POINT_MARKERS_MAX {
            plot.draw_series(points.iter().map(|&p| EmptyElement::at(p) + point_glyph(shape, color)))?;
        }
    }

    // 5. Legend, only when there is something to name.
    if !chart.series.is_empty() {
        let corner = match chart.legend {
            LegendPosition::Auto => {
                let (x_px, y_px) = plot.plotting_area().get_pixel_range();
                let name_chars = chart.series.iter().map(|s| s.name.chars().count()).max().unwrap_or(0);
                let box_px = (
                    LEGEND_GLYPH_PX + 2 * LEGEND_MARGIN_PX + text_width_px(&"m".repeat(name_chars), LEGEND_FONT_PX),
                    2 * LEGEND_MARGIN_PX + LEGEND_ROW_PX * chart.series.len() as i32,
                );
                let markers: Vec<Vec<(f64, f64)>> =
                    layout.markers.iter().map(|(x, _)| vec![(*x, layout.y.lo), (*x, layout.y.hi)]).collect();
                let lines = layout.series.iter().chain(&markers);
                least_covered_corner(lines, |p| plot.backend_coord(p), (x_px, y_px), box_px)
            }
            fixed => fixed,
        };
        let position = match corner {
            LegendPosition::Auto | LegendPosition::UpperRight => SeriesLabelPosition::UpperRight,
            LegendPosition::UpperLeft => SeriesLabelPosition::UpperLeft,
            LegendPosition::LowerLeft => SeriesLabelPosition::LowerLeft,
            LegendPosition::LowerRight => SeriesLabelPosition::LowerRight,
        };
        plot.configure_series_labels()
            .position(position)
            .margin(LEGEND_MARGIN_PX as u32)
            .legend_area_size(LEGEND_GLYPH_PX as u32)
            .label_font(font(LEGEND_FONT_PX))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()?;
    }
    Ok(())
}

/// The corner of the plot area (pixel ranges `area_px`) where a legend box of `box_px`
/// would cover the fewest vertices of `lines` and samples along their segments.
fn least_covered_corner<'a>(
    lines: impl Iterator<Item = &'a Vec<(f64, f64)>>,
    to_px: impl Fn(&(f64, f64)) -> (i32, i32),
    area_px: (Range<i32>, Range<i32>),
    box_px: (i32, i32),
) -> LegendPosition {
    // Preference order on a tie.
    const CORNERS: [LegendPosition; 4] =
        [LegendPosition::UpperRight, LegendPosition::UpperLeft, LegendPosition::LowerRight, LegendPosition::LowerLeft];
    const SEGMENT_SAMPLES: i32 = 8;
    let (x_px, y_px) = area_px;
    let boxes = CORNERS.map(|corner| {
        let left = matches!(corner, LegendPosition::UpperLeft | LegendPosition::LowerLeft);
        let upper = matches!(corner, LegendPosition::UpperLeft | LegendPosition::UpperRight);
        let xs = if left { x_px.start..x_px.start + box_px.0 } else { x_px.end - box_px.0..x_px.end };
        let ys = if upper { y_px.start..y_px.start + box_px.1 } else { y_px.end - box_px.1..y_px.end };
        (xs, ys)
    });
    let mut hits = [0u64; 4];
    let mut count = |(x, y): (i32, i32)| {
        for (hit, (xs, ys)) in hits.iter_mut().zip(&boxes) {
            if xs.contains(&x) && ys.contains(&y) {
                *hit += 1;
            }
        }
    };
    for line in lines {
        let pixels: Vec<(i32, i32)> = line.iter().map(&to_px).collect();
        pixels.iter().for_each(|&p| count(p));
        for pair in pixels.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            for k in 1..SEGMENT_SAMPLES {
                let at = |a: i32, b: i32| a + ((i64::from(b - a) * i64::from(k)) / i64::from(SEGMENT_SAMPLES)) as i32;
                count((at(x0, x1), at(y0, y1)));
            }
        }
    }
    let best = (0..CORNERS.len()).min_by_key(|&i| (hits[i], i)).expect("four corners");
    CORNERS[best]
}

/// A point marker centred on the origin, in pixels.
fn point_glyph<DB: DrawingBackend>(shape: Shape, color: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
    let filled = color.filled();
    let stroke = color.stroke_width(2);
    match shape {
        Shape::Circle => Circle::new((0, 0), 4, filled).into_dyn(),
        Shape::Triangle => TriangleMarker::new((0, 0), 5, filled).into_dyn(),
        Shape::Square => Rectangle::new([(-4, -4), (4, 4)], filled).into_dyn(),
        Shape::Cross => Cross::new((0, 0), 4, stroke).into_dyn(),
        Shape::Diamond => Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], filled).into_dyn(),
        Shape::Ring => Circle::new((0, 0), 4, stroke).into_dyn(),
    }
}

/// Prints `text` and writes it to `<dir>/<stem>.txt`, `report` to `<dir>/<stem>.json` and
/// each chart to its file name in `dir`; then prints what it wrote.
///
/// # Errors
/// A file that cannot be written (named in the error).
pub fn write_outputs(
    dir: &std::path::Path,
    stem: &str,
    text: &str,
    report: &impl serde::Serialize,
    charts: &[(String, Chart)],
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut written = Vec::new();
    let txt = dir.join(format!("{stem}.txt"));
    std::fs::write(&txt, text).with_context(|| format!("writing {}", txt.display()))?;
    written.push(txt);
    let json = dir.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    written.push(json);
    for (name, chart) in charts {
        let path = dir.join(name);
        write_svg(chart, &path).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    let names = written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    to_stdout(&format!("{text}wrote {names}\n"))
}

/// The y-axis label of a throughput plot: modelled in `model` mode, measured otherwise.
pub fn throughput_label(mode: tierdb::device::EmulationMode) -> String {
    if mode == tierdb::device::EmulationMode::Model { "modelled operations / s" } else { "operations / s" }.into()
}

/// Writes `s` to standard output. A closed pipe (`tierdb ... | head`) is not an error:
/// the outputs are on disk already; any other failure is.
fn to_stdout(s: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::from(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}

/// Appends a "notes:" list to `out` (nothing if there are none).
pub fn write_notes(out: &mut String, notes: &[String]) {
    use std::fmt::Write as _;
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nnotes:");
    for n in notes {
        let _ = writeln!(out, "- {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    /// A chart shaped like Figure 8 of van Renen et al. (SIGMOD 2018): throughput over
    /// data sizes that double, one line per architecture, gaps where a configuration
    /// cannot hold the data, and the DRAM and NVM capacities as markers.
    fn figure_8() -> Chart {
        let sizes: Vec<f64> = (0..9).map(|i| GIB / 8.0 * f64::from(1u32 << i)).collect();
        let series = |name: &str, throughput: &dyn Fn(f64) -> Option<f64>| Series {
            name: name.to_string(),
            points: sizes.iter().filter_map(|&s| Some((s, throughput(s)?))).collect(),
        };
        let mut chart = Chart::new("YCSB-C throughput vs data size");
        chart.subtitle = "mode=emulated profiles=dram,optane-dc,p4800x dram=2GiB nvm=8GiB threads=1 seed=42".into();
        chart.x_label = "data size".into();
        chart.y_label = "throughput [ops/s]".into();
        chart.x_log2 = true;
        chart.x_format = AxisFormat::Bytes;
        chart.series = vec![
            series("Main Memory", &|s| (s <= 2.0 * GIB).then_some(1.45e6)),
            series("Basic NVM BM", &|s| (s <= 8.0 * GIB).then_some(6.0e5)),
            series("3 Tier BM", &|s| Some(if s <= 2.0 * GIB { 1.3e6 } else { 1.2e5 })),
        ];
        chart.markers = vec![
            Marker { x: 2.0 * GIB, label: "DRAM 2 GiB".into() },
            Marker { x: 8.0 * GIB, label: "NVM 8 GiB".into() },
        ];
        chart
    }

    /// Checks that `svg` is one well-formed element tree rooted at `<svg>`: every tag
    /// closed in order, attribute values quoted, no raw `<` or stray `&` in text.
    fn assert_well_formed(svg: &str) {
        assert!(svg.starts_with("<svg "), "does not start with <svg: {:?}", &svg[..svg.len().min(40)]);
        assert!(svg.trim_end().ends_with("</svg>"), "does not end with </svg>");
        let mut open: Vec<&str> = Vec::new();
        let mut roots = 0;
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let text = &rest[..start];
            assert_text_escaped(text);
            let end = rest[start..].find('>').expect("unterminated tag") + start;
            let tag = &rest[start + 1..end];
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop(), Some(name.trim()), "mismatched </{name}>");
            } else {
                let name = tag.split_whitespace().next().expect("empty tag").trim_end_matches('/');
                assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()), "tag name {name:?}");
                if open.is_empty() {
                    roots += 1;
                }
                if !tag.ends_with('/') {
                    open.push(name);
                }
            }
            rest = &rest[end + 1..];
        }
        assert_text_escaped(rest);
        assert!(open.is_empty(), "unclosed tags {open:?}");
        assert_eq!(roots, 1, "more than one root element");
    }

    fn assert_text_escaped(text: &str) {
        assert!(!text.contains('>'), "raw > in text {text:?}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..text[i..].find(';').map_or(text.len(), |j| i + j + 1)];
            assert!(["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"].contains(&entity), "stray & in text {text:?}");
        }
    }

    /// The text content of every `<text>` element, trimmed.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text ")
            .skip(1)
            .map(|part| {
                let body = &part[part.find('>').expect("text tag") + 1..];
                body[..body.find("</text>").expect("closed text")].trim().to_string()
            })
            .collect()
    }

    fn render_ok(chart: &Chart) -> String {
        let svg = render_svg(chart).unwrap_or_else(|e| panic!("render failed: {e}"));
        assert_well_formed(&svg);
        svg
    }

    #[test]
    fn figure_8_names_series_markers_title_and_configuration() {
        let chart = figure_8();
        let svg = render_ok(&chart);
        let texts = texts(&svg);
        let expected = [
            "YCSB-C throughput vs data size",
            "data size",
            "throughput [ops/s]",
            "Main Memory",
            "Basic NVM BM",
            "3 Tier BM",
            "DRAM 2 GiB",
            "NVM 8 GiB",
        ];
        for text in expected.into_iter().chain(std::iter::once(chart.subtitle.as_str())) {
            assert!(texts.iter().any(|t| t == text), "no <text> {text:?} in {texts:?}");
        }
        assert!(svg.starts_with(r#"<svg width="900" height="560""#), "default size");
    }

    #[test]
    fn categorical_x_axis_labels_each_index_and_skips_the_rest() {
        let mut chart = Chart::new("drill-down");
        chart.x_categories = ["basic", "+cl-grained", "+mini-pages"].map(String::from).to_vec();
        chart.x_log2 = true; // ignored on a categorical axis
        chart.series =
            vec![Series { name: "relative".into(), points: vec![(0.0, 1.0), (1.0, 1.4), (2.0, 2.1), (7.0, 9.0)] }];
        let layout = Layout::new(&chart);
        assert_eq!(layout.series[0].len(), 3, "the point at index 7 is outside the categories");
        assert_eq!((layout.x.lo, layout.x.hi), (-0.5, 2.5));
        assert_eq!(layout.x.label(1.0), "+cl-grained");
        assert_eq!(layout.x.label(0.5), "");
        let texts = texts(&render_ok(&chart));
        for name in ["basic", "+cl-grained", "+mini-pages"] {
            assert!(texts.iter().any(|t| t == name), "no tick label {name:?} in {texts:?}");
        }
        chart.x_categories = vec!["x".to_string(); CATEGORIES_MAX + 1];
        assert!(matches!(render_svg(&chart), Err(PlotError::TooMany { what: "x categories", .. })));
    }

    #[test]
    fn tick_labels_are_human_readable() {
        let texts = texts(&render_ok(&figure_8()));
        for label in ["128 MiB", "256 MiB", "512 MiB", "1 GiB", "2 GiB", "32 GiB", "0", "500k", "1M", "1.5M"] {
            assert!(texts.iter().any(|t| t == label), "no tick label {label:?} in {texts:?}");
        }
    }

    #[test]
    fn series_get_distinct_colours_and_a_legend() {
        let svg = render_ok(&figure_8());
        for color in &PALETTE[..3] {
            let hex = format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2);
            assert!(svg.contains(&hex), "colour {hex} not used");
        }
        // Two markers are dashed: many short segments in the marker grey.
        assert!(svg.matches(r##"opacity="0.55" stroke="#000000""##).count() > 10, "no dashed marker lines");
    }

    #[test]
    fn empty_chart_renders() {
        let svg = render_ok(&Chart::default());
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite number in empty chart");
        let mut titled = Chart::new("nothing yet");
        titled.series.push(Series { name: "no points".into(), points: Vec::new() });
        let texts = texts(&render_ok(&titled));
        assert!(texts.iter().any(|t| t == "no points"), "empty series missing from legend: {texts:?}");
    }

    #[test]
    fn non_finite_values_are_skipped() {
        for (x_log2, y_log10) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut chart = Chart::new("nan");
            chart.x_log2 = x_log2;
            chart.y_log10 = y_log10;
            chart.series.push(Series {
                name: "holes".into(),
                points: vec![
                    (f64::NAN, 1.0),
                    (2.0, f64::NAN),
                    (f64::INFINITY, 3.0),
                    (4.0, f64::NEG_INFINITY),
                    (8.0, 1e301),
                    (16.0, 100.0),
                    (32.0, 200.0),
                ],
            });
            chart.markers.push(Marker { x: f64::NAN, label: "nowhere".into() });
            let svg = render_ok(&chart);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite number written (log {x_log2} {y_log10})");
            assert!(!texts(&svg).iter().any(|t| t == "nowhere"), "marker at NaN drawn");
        }
    }

    #[test]
    fn all_nan_series_renders() {
        let mut chart = Chart::new("all nan");
        chart.series.push(Series { name: "nan".into(), points: vec![(f64::NAN, f64::NAN); 5] });
        render_ok(&chart);
    }

    #[test]
    fn single_point_and_equal_values_render_on_every_scale() {
        let cases: [Vec<(f64, f64)>; 4] = [
            vec![(5.0, 7.0)],
            vec![(64.0, 5e5), (64.0, 5e5)],
            vec![(1.0, 0.0), (2.0, 0.0), (3.0, 0.0)],
            vec![(-3.0, -2.0)],
        ];
        for points in cases {
            for (x_log2, y_log10, y_from_zero) in [(false, false, true), (false, false, false), (true, true, false)] {
                let mut chart = Chart::new("one");
                chart.x_log2 = x_log2;
                chart.y_log10 = y_log10;
                chart.y_from_zero = y_from_zero;
                chart.series.push(Series { name: "s".into(), points: points.clone() });
                render_ok(&chart);
            }
        }
    }

    #[test]
    fn non_positive_values_are_skipped_on_log_axes() {
        let mut chart = Chart::new("log");
        chart.x_log2 = true;
        chart.y_log10 = true;
        chart.series.push(Series { name: "s".into(), points: vec![(0.0, 1.0), (-4.0, 2.0), (4.0, 0.0), (8.0, -1.0)] });
        chart.markers.push(Marker { x: 0.0, label: "zero".into() });
        let svg = render_ok(&chart);
        assert!(!texts(&svg).iter().any(|t| t == "zero"), "marker at 0 drawn on a log axis");
    }

    #[test]
    fn markup_in_names_is_escaped() {
        let mut chart = Chart::new("a < b & \"c\"");
        chart.series.push(Series { name: "<script>".into(), points: vec![(1.0, 1.0)] });
        let svg = render_ok(&chart);
        assert!(svg.contains("a &lt; b &amp; &quot;c&quot;") && svg.contains("&lt;script&gt;"), "not escaped");
        assert!(!svg.contains("<script>"), "raw markup written");
    }

    #[test]
    fn long_series_are_drawn_without_point_markers() {
        let mut chart = Chart::new("long");
        let points = (0..5000).map(|i| (f64::from(i), f64::from(i % 97))).collect();
        chart.series.push(Series { name: "long".into(), points });
        let svg = render_ok(&chart);
        // The only circle left is the one in the legend.
        assert_eq!(svg.matches("<circle").count(), 1, "point markers drawn for a long series");
    }

    #[test]
    fn limits_are_errors() {
        let mut chart = Chart::new("small");
        chart.width_px = 10;
        assert!(matches!(render_svg(&chart), Err(PlotError::Size { width_px: 10, .. })));
        let mut chart = Chart::new("crowded");
        chart.series = vec![Series::default(); SERIES_MAX + 1];
        assert!(matches!(render_svg(&chart), Err(PlotError::TooMany { what: "series", .. })));
        let mut chart = Chart::new("crowded");
        chart.markers = vec![Marker::default(); MARKERS_MAX + 1];
        assert!(matches!(render_svg(&chart), Err(PlotError::TooMany { what: "markers", .. })));
    }

    #[test]
    fn write_svg_writes_the_rendered_document() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("figure8.svg");
        let chart = figure_8();
        write_svg(&chart, &path).expect("write");
        let written = fs::read_to_string(&path).expect("read back");
        assert_eq!(written, render_svg(&chart).expect("render"));
    }

    #[test]
    fn write_svg_into_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("no/such/dir/chart.svg");
        match write_svg(&figure_8(), &path) {
            Err(PlotError::Io { path: reported, source }) => {
                assert_eq!(reported, path);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected PlotError::Io, got {other:?}"),
        }
    }

    #[test]
    fn log2_axis_ticks_at_powers_of_two() {
        let axis = Axis::new(Scale::Log2, AxisFormat::Bytes, &[27.0, 35.0], false);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["128 MiB", "256 MiB", "512 MiB", "1 GiB", "2 GiB", "4 GiB", "8 GiB", "16 GiB", "32 GiB"]);
        // A wide range labels every n-th power, at most LOG2_TICKS_MAX + 1 of them.
        let wide = Axis::new(Scale::Log2, AxisFormat::Plain, &[0.0, 40.0], false);
        assert!(wide.ticks.len() <= LOG2_TICKS_MAX as usize + 1 && wide.hi >= 40.0, "{:?}", wide.ticks);
    }

    #[test]
    fn linear_axis_steps_and_zero() {
        let axis = Axis::new(Scale::Linear, AxisFormat::Plain, &[350e3, 1.2e6], true);
        assert_eq!(axis.lo, 0.0);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["0", "200k", "400k", "600k", "800k", "1M", "1.2M"]);
        let axis = Axis::new(Scale::Linear, AxisFormat::Plain, &[1.0e6, 1.3e6], false);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["1M", "1.05M", "1.1M", "1.15M", "1.2M", "1.25M", "1.3M"]);
        let bytes = Axis::new(Scale::Linear, AxisFormat::Bytes, &[0.25 * GIB, 3.0 * GIB], true);
        let labels: Vec<String> = bytes.ticks.iter().map(|&t| bytes.label(t)).collect();
        assert_eq!(labels, ["0 B", "512 MiB", "1 GiB", "1.5 GiB", "2 GiB", "2.5 GiB", "3 GiB"]);
    }

    #[test]
    fn log10_axis_ticks_at_one_two_five() {
        let axis = Axis::new(Scale::Log10, AxisFormat::Plain, &[2.2e5f64.log10(), 3.1e6f64.log10()], false);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["200k", "500k", "1M", "2M", "5M"]);
    }

    /// Axis construction asserts its invariants (finite, non-empty, ascending ticks
    /// inside the range); sweep awkward ranges through it, deterministically.
    #[test]
    fn axes_hold_their_invariants_for_awkward_ranges() {
        let seed: u64 = 0x5eed_0fa7;
        let mut state = seed;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let fixed = [
            (0.0, 0.0),
            (-1.0, -1.0),
            (1e15, 1e15 + 0.125),
            (-VALUE_ABS_MAX, VALUE_ABS_MAX),
            (1e-300, 2e-300),
            (0.0, 5e-324),
            (-1e-310, 0.0),
            (0.1, 0.30000000000000004),
        ];
        for case in 0..2000 {
            let (a, b) = if case < fixed.len() {
                fixed[case]
            } else {
                let value = |bits: u64| {
                    let exponent = (bits % 601) as i32 - 300;
                    let sign = if bits & (1 << 20) == 0 { 1.0 } else { -1.0 };
                    sign * (1.0 + (bits >> 32) as f64 / u32::MAX as f64) * 10f64.powi(exponent).min(VALUE_ABS_MAX / 2.0)
                };
                (value(next()), value(next()))
            };
            for scale in [Scale::Linear, Scale::Log2, Scale::Log10] {
                let plotted: Vec<f64> = [a, b].iter().filter_map(|&v| scale.to_plot(v)).collect();
                for (format, from_zero) in
                    [(AxisFormat::Plain, false), (AxisFormat::Bytes, false), (AxisFormat::Plain, true)]
                {
                    let result = std::panic::catch_unwind(|| {
                        let axis = Axis::new(scale, format, &plotted, from_zero);
                        axis.ticks.iter().for_each(|&t| drop(axis.label(t)));
                    });
                    assert!(
                        result.is_ok(),
                        "seed {seed:#x} case {case}: {scale:?} {format:?} from zero {from_zero} {a:e}..{b:e}"
                    );
                }
            }
        }
    }

    #[test]
    fn numbers_are_formatted_compactly() {
        assert_eq!(format_si(0.0, 1.0), "0");
        assert_eq!(format_si(350e3, 50e3), "350k");
        assert_eq!(format_si(1.2e6, 200e3), "1.2M");
        assert_eq!(format_si(-1500.0, 500.0), "-1.5k");
        assert_eq!(format_si(0.25, 0.05), "0.25");
        assert_eq!(format_si(3e9, 1e9), "3G");
        assert_eq!(format_bytes(512.0, 256.0), "512 B");
        assert_eq!(format_bytes(128.0 * 1024.0 * 1024.0, 64.0 * 1024.0 * 1024.0), "128 MiB");
        assert_eq!(format_bytes(1.5 * GIB, 0.5 * GIB), "1.5 GiB");
        assert_eq!(format_bytes(0.0, 1.0), "0 B");
    }

    #[test]
    fn wrap_keeps_words_and_bounds_lines() {
        assert_eq!(wrap("", 10, 3), Vec::<String>::new());
        assert_eq!(wrap("seed=1 threads=2", 40, 3), ["seed=1 threads=2"]);
        assert_eq!(wrap("aaaa bbbb cccc", 9, 3), ["aaaa bbbb", "cccc"]);
        assert_eq!(wrap("abcdefghij", 4, 3), ["abcd", "efgh", "ij"]);
        let cut = wrap("one two three four five six", 9, 2);
        assert_eq!(cut.len(), 2);
        assert!(cut[1].ends_with('…') && cut[1].chars().count() <= 9, "{cut:?}");
    }

    #[test]
    fn label_rows_separate_overlapping_labels() {
        assert_eq!(label_rows(&[(0, 50), (100, 150)], 3), [0, 0]);
        assert_eq!(label_rows(&[(100, 150), (0, 120)], 3), [1, 0]);
        assert_eq!(label_rows(&[(0, 50), (10, 60), (20, 70), (30, 80)], 3), [0, 1, 2, 0]);
        assert_eq!(label_rows(&[], 2), Vec::<usize>::new());
    }

    #[test]
    fn legend_goes_to_the_emptiest_corner() {
        let area = (0..100, 0..100);
        let to_px = |p: &(f64, f64)| (p.0 as i32, p.1 as i32);
        // Pixel y grows downwards: (90, 5) is in the upper right.
        let upper_right = [vec![(90.0, 5.0), (95.0, 10.0)]];
        assert_eq!(least_covered_corner(upper_right.iter(), to_px, area.clone(), (20, 20)), LegendPosition::UpperLeft);
        let none: Vec<Vec<(f64, f64)>> = Vec::new();
        assert_eq!(least_covered_corner(none.iter(), to_px, area.clone(), (20, 20)), LegendPosition::UpperRight);
        // A segment crossing both upper corners without a vertex in either still counts.
        let across_top = [vec![(0.0, 5.0), (99.0, 5.0)], vec![(95.0, 95.0)]];
        assert_eq!(least_covered_corner(across_top.iter(), to_px, area, (20, 20)), LegendPosition::LowerLeft);
    }
}
