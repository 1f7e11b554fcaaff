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
//!
//! Files: `axis` (data → plotted coordinates, ticks, labels), `layout` (the chart in
//! plotted coordinates, text wrapping and widths), `draw` (plotters), `outputs` (a
//! report's text, JSON and charts written together).

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use axis::*;
use draw::*;
use layout::*;

mod axis;
mod draw;
mod layout;
mod outputs;
#[cfg(test)]
mod tests;

pub use outputs::{throughput_label, write_notes, write_outputs};

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
