//! The chart in plotted coordinates ([`Layout`]): wrapped text, estimated text
//! widths, marker labels spread over rows, fonts.

use super::*;

/// Greedy word wrap to `chars_max` characters per line, at most `lines_max` lines; a cut
/// text ends with an ellipsis. Words longer than a line are split.
pub(super) fn wrap(text: &str, chars_max: usize, lines_max: usize) -> Vec<String> {
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
pub(super) fn text_width_px(text: &str, font_px: f64) -> i32 {
    (text.chars().count() as f64 * font_px * CHAR_WIDTH_EM).ceil() as i32
}

/// Assigns each horizontal span `(left, right)` a row below `rows_max` so that spans in
/// one row do not overlap, placing left to right in the first row that has room; when no
/// row has room, the row whose last span ends first. Returns the row per span, in input
/// order.
pub(super) fn label_rows(spans: &[(i32, i32)], rows_max: usize) -> Vec<usize> {
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
pub(super) struct MarkerLabel {
    pub(super) text: String,
    pub(super) center_px: i32,
    pub(super) row: usize,
}

/// Places the marker labels before the plot is built, so that the band above the plot
/// can be sized to the rows used. The plot's horizontal extent follows from the fixed
/// margins and label-area width that `draw` gives plotters.
pub(super) fn marker_labels(chart: &Chart, layout: &Layout) -> Vec<MarkerLabel> {
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
pub(super) struct Layout {
    pub(super) x: Axis,
    pub(super) y: Axis,
    /// Per series: drawable points sorted by x.
    pub(super) series: Vec<Vec<(f64, f64)>>,
    /// Drawable markers: plotted x and label.
    pub(super) markers: Vec<(f64, String)>,
    pub(super) subtitle_lines: Vec<String>,
}

impl Layout {
    pub(super) fn new(chart: &Chart) -> Self {
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

pub(super) fn font(px: f64) -> TextStyle<'static> {
    // The SVG backend writes `font-size` as size / 1.24; scale so the document says `px`.
    TextStyle::from((FONT, px * 1.24).into_font())
}

pub(super) fn bold_font(px: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, px * 1.24).into_font().style(FontStyle::Bold))
}
