//! The charts' invariants: limits, axes, ticks, labels, wrapping and whole documents.

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
    chart.markers =
        vec![Marker { x: 2.0 * GIB, label: "DRAM 2 GiB".into() }, Marker { x: 8.0 * GIB, label: "NVM 8 GiB".into() }];
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
