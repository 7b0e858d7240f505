//! One chart as an image (`hakaru chart`): a metric of every series against clients or rate, over time (from the
//! windows, `--over-time`), or the percentile spectrum, drawn with plotters as SVG or PNG.
//!
//! Text is laid out (and, in PNG, drawn) with a subset of DejaVu Sans carried in the binary, so a chart looks
//! the same on every machine and needs no system fonts.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Report, Series};

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-subset.ttf");
const SIZE: (u32, u32) = (1000, 600);
/// The report's palette, so a target has the same colour in the page and in the image.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
];

/// What `--metric` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Qps,
    P99,
    Mean,
    Spectrum,
    /// `--events`: the median time to first event (token), and the median gap between events, per step.
    Ttft,
    Gaps,
    /// Over time only: the connections open at each window's end (a ramp of `--stages`, WebSocket's thousands).
    Connections,
}

impl Metric {
    pub fn parse(text: &str) -> Option<Metric> {
        Some(match text {
            "qps" => Metric::Qps,
            "p99" => Metric::P99,
            "mean" => Metric::Mean,
            "spectrum" => Metric::Spectrum,
            "ttft" => Metric::Ttft,
            "gaps" => Metric::Gaps,
            "connections" => Metric::Connections,
            _ => return None,
        })
    }

    fn y_label(self) -> &'static str {
        match self {
            Metric::Qps => "throughput (requests/s)",
            Metric::P99 => "p99 latency (ms)",
            Metric::Mean => "mean latency (ms)",
            Metric::Spectrum => "latency (ms)",
            Metric::Ttft => "time to first event, p50 (ms)",
            Metric::Gaps => "gap between events, p50 (ms)",
            Metric::Connections => "open connections",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Metric::Qps => "Throughput",
            Metric::P99 => "p99 latency",
            Metric::Mean => "Mean latency",
            Metric::Spectrum => "Latency by percentile",
            Metric::Ttft => "Time to first event (token)",
            Metric::Gaps => "Gaps between events (inter-token latency)",
            Metric::Connections => "Open connections over time",
        }
    }

    fn value(self, p: &super::Point) -> Option<f64> {
        match self {
            Metric::Qps => Some(p.qps),
            Metric::P99 => p.p99_ms,
            Metric::Mean => p.mean_ms,
            Metric::Spectrum => None,
            Metric::Ttft => p.first_event_ms,
            Metric::Gaps => p.gap_ms,
            Metric::Connections => None,
        }
    }
}

/// The image format, from the output file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// One line to draw: its name, colour and points in order of x.
struct Line {
    name: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// The lines of qps, p99 or the time to first byte (event, token) over time, one per series: its windows, every
/// step one after another.
fn lines_over_time(report: &Report, metric: Metric) -> Result<Vec<Line>, String> {
    // A window is (seconds from the start, requests/s, p50 ms, p99 ms, failures/s); `first` is (seconds, p99 ms).
    let column = match metric {
        Metric::Qps => 1,
        Metric::P99 => 3,
        Metric::Ttft | Metric::Connections => 1,
        Metric::Mean | Metric::Spectrum | Metric::Gaps => {
            return Err(
                "over time, the windows give qps, p99, ttft and connections (they keep no mean, spectrum or gaps)"
                    .into(),
            );
        }
    };
    let lines = report.series.iter().enumerate().filter_map(|(i, s)| {
        let points: Vec<(f64, f64)> = match metric {
            Metric::Ttft => s.first.iter().map(|w| (w[0], w[column])).collect(),
            Metric::Connections => s.open.iter().map(|w| (w[0], w[column])).collect(),
            _ => s.windows.iter().map(|w| (w[0], w[column])).collect(),
        };
        let points: Vec<(f64, f64)> = points.into_iter().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        (!points.is_empty()).then(|| Line { name: s.name.clone(), color: PALETTE[i % PALETTE.len()], points })
    });
    Ok(lines.collect())
}

/// The y axis of `metric` over time: ttft is each window's p99 of the time to first byte, or to the first event
/// (token) when the runs read their answers as events.
fn y_label_over_time(report: &Report, metric: Metric) -> String {
    if metric != Metric::Ttft {
        return metric.y_label().to_string();
    }
    let mut of: Vec<&str> = report.series.iter().filter(|s| !s.first.is_empty()).map(|s| s.first_of.as_str()).collect();
    of.sort();
    of.dedup();
    format!("time to first {}, p99 (ms)", of.join(" or "))
}

/// The lines of the metric, one per series that has it; the x axis label.
fn lines(report: &Report, metric: Metric) -> (Vec<Line>, String) {
    let with_points = |i: usize, s: &Series, points: Vec<(f64, f64)>| Line {
        name: s.name.clone(),
        color: PALETTE[i % PALETTE.len()],
        points,
    };
    let mut out = Vec::new();
    for (i, s) in report.series.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = if metric == Metric::Spectrum {
            s.spectrum.iter().map(|p| (p[0], p[1])).collect()
        } else {
            s.points.iter().filter_map(|p| Some((p.x, metric.value(p)?))).collect()
        };
        points.retain(|(x, y)| x.is_finite() && y.is_finite());
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !points.is_empty() {
            out.push(with_points(i, s, points));
        }
    }
    let axes: std::collections::BTreeSet<&str> = report.series.iter().map(|s| s.axis.as_str()).collect();
    let x_label = match (metric, axes.iter().copied().collect::<Vec<_>>().as_slice()) {
        (Metric::Spectrum, _) => "percentile",
        (_, ["rate"]) => "rate asked (requests/s)",
        (_, ["clients"]) => "clients",
        (_, ["none"]) => "clients",
        _ => "clients or rate",
    };
    (out, x_label.to_string())
}

/// Draws the chart (`over_time`: against seconds from the start, from the windows); Err says in words why it
/// cannot be drawn (no data for the metric).
pub fn render(report: &Report, metric: Metric, format: Format, over_time: bool) -> Result<Vec<u8>, String> {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The font is a fixed file inside the binary: a failure here is a build mistake, caught by the tests.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    if metric == Metric::Connections && !over_time {
        return Err("open connections are drawn over time, from the windows: add --over-time".into());
    }
    let (lines, x_label) = match over_time {
        true => (lines_over_time(report, metric)?, "seconds from the start".to_string()),
        false => lines(report, metric),
    };
    let y_label = if over_time { y_label_over_time(report, metric) } else { metric.y_label().to_string() };
    if lines.is_empty() && over_time && metric == Metric::Ttft {
        return Err("no input has a time to first byte per window (key-value runs and drnbench CSVs have none)".into());
    }
    if lines.is_empty() && over_time {
        return Err("no input has windows (drnbench CSVs have none)".into());
    }
    if lines.is_empty() {
        return Err(match metric {
            Metric::Spectrum => "no input has a latency histogram (drnbench CSVs have none)".into(),
            Metric::Qps => "no input has a step".into(),
            Metric::Ttft | Metric::Gaps => "no input read its answers as events (run --events)".into(),
            _ => "no input has this latency figure (drnbench CSVs have only the mean)".into(),
        });
    }
    let title = match (report.title.is_empty(), over_time && metric == Metric::Ttft) {
        (false, _) => report.title.clone(),
        (true, true) => "Time to first byte (event, token) over time".to_string(),
        (true, false) => metric.title().to_string(),
    };
    match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                draw(&root, &lines, metric, &title, (&x_label, &y_label), !over_time)
                    .map_err(|e| format!("drawing failed: {e}"))?;
            }
            Ok(svg.into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
                draw(&root, &lines, metric, &title, (&x_label, &y_label), !over_time)
                    .map_err(|e| format!("drawing failed: {e}"))?;
            }
            encode_png(&rgb, SIZE)
        }
    }
}

/// PNG bytes of an RGB buffer, through plotters' own image encoder.
fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, String> {
    let img = image::RgbImage::from_raw(w, h, rgb.to_vec()).ok_or("the image buffer has the wrong size")?;
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).map_err(|e| format!("PNG encoding failed: {e}"))?;
    Ok(out.into_inner())
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lines: &[Line],
    metric: Metric,
    title: &str,
    (x_label, y_label): (&str, &str),
    markers: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    // The legend has a strip of its own below the chart, one row a line: it never covers a line.
    let (root, legend_area) = root.split_vertically(SIZE.1 as i32 - legend_height(lines.len()));
    legend(&legend_area, lines)?;
    let root = &root;
    let x_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(f64::MIN, f64::max);
    let x_min = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(f64::MAX, f64::min);
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let y_top = if y_max > 0.0 { y_max * 1.08 } else { 1.0 };
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, ("sans-serif", 24)).margin(16).x_label_area_size(56).y_label_area_size(80);
    if metric == Metric::Spectrum {
        let x_top = x_max.max(10.0);
        let chart = builder.build_cartesian_2d((1.0..x_top).log_scale(), 0.0..y_top)?;
        plot(chart, lines, (x_label, y_label), &|x| percent_label(*x), false)?;
    } else if let Some(xs) = geometric_steps(lines) {
        // A sweep of doubling steps (1, 2, 4 ... 64 clients) is drawn on a log axis with a tick at each step, so
        // its first steps are not crowded into the left edge.
        let (lo, hi) = (x_min / 1.15, x_max * 1.15);
        let chart = builder.build_cartesian_2d((lo..hi).log_scale().with_key_points(xs), 0.0..y_top)?;
        plot(chart, lines, (x_label, y_label), &|x| short_number(*x), markers)?;
    } else {
        let span = (x_max - x_min).max(1.0);
        let (lo, hi) = ((x_min - span * 0.03).max(0.0), x_max + span * 0.03);
        let chart = builder.build_cartesian_2d(lo..hi, 0.0..y_top)?;
        plot(chart, lines, (x_label, y_label), &|x| short_number(*x), markers)?;
    }
    root.present()?;
    Ok(())
}

/// The x values of the steps when they grow by a factor (at least 1.5 each time, 8 times over at least): a
/// sweep of doubling clients or rates. None for evenly spaced steps or too few of them.
fn geometric_steps(lines: &[Line]) -> Option<Vec<f64>> {
    let mut xs: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let doubling =
        xs.len() >= 3 && xs[0] > 0.0 && xs.windows(2).all(|w| w[1] >= 1.5 * w[0]) && xs[xs.len() - 1] >= 8.0 * xs[0];
    doubling.then_some(xs)
}

/// Pixels of the legend's strip: a row a line, and a margin.
fn legend_height(lines: usize) -> i32 {
    16 + 24 * lines as i32
}

/// The legend, one row a line (its colour and name), in its own strip.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, lines: &[Line]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for (i, l) in lines.iter().enumerate() {
        let y = 8 + 24 * i as i32 + 12;
        area.draw(&PathElement::new(vec![(96, y), (124, y)], l.color.stroke_width(3)))?;
        let style = ("sans-serif", 15).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(l.name.as_str(), (132, y), style))?;
    }
    Ok(())
}

/// The grid and the lines (with a dot per step when `markers`), on any kind of x axis.
fn plot<'a, DB, X, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<X, Y>>,
    lines: &'a [Line],
    (x_label, y_label): (&str, &str),
    x_format: &dyn Fn(&f64) -> String,
    markers: bool,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .x_label_formatter(x_format)
        .y_label_formatter(&|y| short_number(*y))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .light_line_style(TRANSPARENT)
        .draw()?;
    for l in lines {
        chart.draw_series(LineSeries::new(l.points.iter().copied(), l.color.stroke_width(2)))?;
        if markers {
            chart.draw_series(l.points.iter().map(|&p| Circle::new(p, 4, l.color.filled())))?;
        }
    }
    Ok(())
}

/// `1/(1-p)` as the percentile it stands for: 10 -> `90%`, 1000 -> `99.9%`.
fn percent_label(x: f64) -> String {
    if x < 1.5 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 1.0 / x);
    format!("{}%", (p * 1000.0).round() / 1000.0)
}

/// Tick labels without float noise: `0.5`, `12`, `1500`.
fn short_number(v: f64) -> String {
    let r = (v * 1000.0).round() / 1000.0;
    if r == r.trunc() { format!("{}", r as i64) } else { format!("{r}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels_read_as_percentiles() {
        for (input, want) in [(1.0, "0%"), (10.0, "90%"), (100.0, "99%"), (10000.0, "99.99%")] {
            assert_eq!(percent_label(input), want, "percent_label({input:?})");
        }
        assert_eq!(short_number(0.30000000000000004), "0.3");
        assert_eq!(short_number(1500.0), "1500");
    }

    #[test]
    fn only_steps_that_grow_by_a_factor_get_a_log_axis() {
        let line = |xs: &[f64]| Line {
            name: String::new(),
            color: PALETTE[0],
            points: xs.iter().map(|&x| (x, 1.0)).collect(),
        };
        assert_eq!(geometric_steps(&[line(&[1.0, 2.0, 4.0, 8.0])]), Some(vec![1.0, 2.0, 4.0, 8.0]));
        assert_eq!(geometric_steps(&[line(&[100.0, 200.0]), line(&[400.0, 800.0, 1600.0])]).map(|x| x.len()), Some(5));
        for linear in [&[1.0, 2.0, 3.0, 4.0][..], &[1.0, 2.0][..], &[0.0, 1.0, 2.0, 4.0, 8.0][..], &[1.0, 2.0, 4.0][..]]
        {
            assert_eq!(geometric_steps(&[line(linear)]), None, "{linear:?}");
        }
    }
}
