//! Charts drawn with plotters, once as SVG (embedded in the page) and once as PNG (beside it), from the same description.

use crate::data::Series;
use crate::font::FAMILY;
use crate::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Pixel size of every chart.
pub const SIZE: (u32, u32) = (880, 440);

/// What a chart shows.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// Lines (with their points) and scattered points; `crosses` mark
    /// failures along the top edge.
    Xy {
        /// Series drawn as lines.
        lines: Vec<Series>,
        /// Series drawn as dots.
        dots: Vec<Series>,
        /// Series drawn as crosses at the top of the plot (only their x counts).
        crosses: Vec<Series>,
        /// Draw the diagonal y = x (predicted against measured).
        diagonal: bool,
    },
    /// One bar per category.
    Bars(Vec<(String, f64)>),
}

/// A chart: its file stem, texts and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// File stem of the PNG (`curve-1` gives `curve-1.png`).
    pub stem: String,
    /// Title drawn above the plot.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// What is drawn.
    pub body: Body,
}

/// Colours in a fixed order, so the same data gets the same colours.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn draw_error(e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw(e.to_string())
}

/// Range of the values with a margin; a single value gets a unit-wide range.
fn span(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.06
    } else if hi != 0.0 {
        hi.abs() * 0.5
    } else {
        1.0
    };
    (if from_zero && lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
}

/// A number as an axis label: short, with an SI suffix for large and small
/// magnitudes, and no trailing zeros (`25m`, not `25.000m`). Below 1e-15
/// it is 0: a tick meant to be 0 can land a rounding error away from it
/// (`-8.67e-19`), and no axis here has such values.
pub fn axis_number(x: f64) -> String {
    let (scaled, decimals, suffix) = match x.abs() {
        a if a < 1e-15 => return "0".into(),
        a if a >= 1e9 => (x / 1e9, 3, "G"),
        a if a >= 1e6 => (x / 1e6, 3, "M"),
        a if a >= 1e4 => (x / 1e3, 1, "k"),
        a if a >= 1.0 => (x, 4, ""),
        a if a >= 1e-3 => (x * 1e3, 3, "m"),
        a if a >= 1e-6 => (x * 1e6, 3, "u"),
        _ => return format!("{x:.2e}"),
    };
    let text = format!("{scaled:.decimals$}");
    format!("{}{suffix}", text.trim_end_matches('0').trim_end_matches('.'))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), ReportError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(draw_error)?;
    match &chart.body {
        Body::Xy { lines, dots, crosses, diagonal } => draw_xy(root, chart, lines, dots, crosses, *diagonal),
        Body::Bars(bars) => draw_bars(root, chart, bars),
    }?;
    root.present().map_err(draw_error)
}

fn draw_xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    lines: &[Series],
    dots: &[Series],
    crosses: &[Series],
    diagonal: bool,
) -> Result<(), ReportError>
where
    DB::ErrorType: 'static,
{
    let all = || lines.iter().chain(dots).flat_map(|s| s.points.iter());
    let (mut x0, mut x1) =
        span(all().map(|p| p.0).chain(crosses.iter().flat_map(|s| s.points.iter().map(|p| p.0))), false);
    let (mut y0, mut y1) = span(all().map(|p| p.1), false);
    if diagonal {
        (x0, x1) = (x0.min(y0), x1.max(y1));
        (y0, y1) = (x0, x1);
    }
    let top = y1;
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, (FAMILY, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1 + (y1 - y0) * 0.04)
        .map_err(draw_error)?;
    c.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_label_formatter(&|x| axis_number(*x))
        .y_label_formatter(&|y| axis_number(*y))
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 13))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(draw_error)?;
    let mut n = 0;
    if diagonal {
        c.draw_series(LineSeries::new([(x0, x0), (x1, x1)], RGBColor(160, 160, 160)))
            .map_err(draw_error)?
            .label("predicted = measured")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RGBColor(160, 160, 160)));
    }
    for s in lines {
        let col = colour(n);
        n += 1;
        c.draw_series(LineSeries::new(s.points.iter().copied(), col.stroke_width(2)).point_size(2))
            .map_err(draw_error)?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], col.stroke_width(2)));
    }
    for s in dots {
        let col = colour(n);
        n += 1;
        c.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, col.filled())))
            .map_err(draw_error)?
            .label(&s.name)
            .legend(move |(x, y)| Circle::new((x + 8, y), 3, col.filled()));
    }
    for s in crosses {
        let col = colour(n);
        n += 1;
        c.draw_series(s.points.iter().map(|p| Cross::new((p.0, top), 5, col.stroke_width(2))))
            .map_err(draw_error)?
            .label(format!("failed: {}", s.name))
            .legend(move |(x, y)| Cross::new((x + 8, y), 5, col.stroke_width(2)));
    }
    if n > 0 || diagonal {
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font((FAMILY, 12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(draw_error)?;
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    bars: &[(String, f64)],
) -> Result<(), ReportError>
where
    DB::ErrorType: 'static,
{
    let (_, y1) = span(bars.iter().map(|b| b.1), true);
    let n = bars.len().max(1);
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, (FAMILY, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..y1)
        .map_err(draw_error)?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| axis_number(*y))
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 13))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(draw_error)?;
    c.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let x = i as f64;
        Rectangle::new([(x - 0.35, 0.0), (x + 0.35, b.1)], colour(1).filled())
    }))
    .map_err(draw_error)?;
    Ok(())
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, ReportError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, chart)?;
    }
    Ok(out)
}

/// Writes the chart as a PNG file.
pub fn png(chart: &Chart, path: &Path) -> Result<(), ReportError> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw(&root, chart).map_err(|e| match e {
        ReportError::Draw(m) => ReportError::Draw(format!("{}: {m}", path.display())),
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::axis_number;

    #[test]
    fn axis_labels_are_short_and_have_no_trailing_zeros() {
        let cases = [
            (0.0, "0"),
            (0.025, "25m"),
            (0.0025, "2.5m"),
            (0.00065, "650u"),
            (0.000_000_5, "5.00e-7"),
            (-8.67e-19, "0"),
            (3e-12, "3.00e-12"),
            (1.0, "1"),
            (2.125, "2.125"),
            (3.3333333, "3.3333"),
            (12_345.0, "12.3k"),
            (20_000.0, "20k"),
            (1_500_000.0, "1.5M"),
            (2e9, "2G"),
            (-0.025, "-25m"),
        ];
        let got: Vec<(f64, String)> = cases.iter().map(|&(x, _)| (x, axis_number(x))).collect();
        let want: Vec<(f64, String)> = cases.iter().map(|&(x, s)| (x, s.to_string())).collect();
        assert_eq!(got, want);
    }
}
