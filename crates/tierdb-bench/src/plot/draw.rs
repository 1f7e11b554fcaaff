//! Drawing a laid-out chart with plotters: title, axes, series with point glyphs,
//! markers and the legend.

use super::*;

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws header, axes, series, markers and legend onto `root`.
pub(super) fn draw(
    chart: &Chart,
    layout: &Layout,
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> DrawResult {
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
pub(super) fn least_covered_corner<'a>(
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
pub(super) fn point_glyph<DB: DrawingBackend>(shape: Shape, color: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
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
