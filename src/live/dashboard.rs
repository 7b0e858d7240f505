//! The live dashboard on the terminal (ratatui + crossterm, on standard error): the step and its progress, sent and
//! completed requests per second and p50/p99 over the last minute (with the p99 of the time to first byte, and with
//! `--events` to first event or token, and tokens a second), the latency histogram so far, statuses and
//! errors by kind, connections, hakaru's and the server's CPU, warnings as they arise. It runs on a thread of its
//! own and redraws at most ten times a second, when the view changed; `q` or Ctrl-C stops the load as SIGINT does
//! (a second one ends hakaru at once, as a second SIGINT does). Stopped, it gives the terminal back as it was, so
//! the summary that follows stays in the scrollback.

use std::io::Stderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, Gauge, GraphType, Paragraph};

use super::{LiveView, Phase, lock};
use crate::base::units::format_micros;

/// The shortest time between two drawings: ten a second at most.
const FRAME: Duration = Duration::from_millis(100);

/// The dashboard's thread, drawing until stopped.
pub struct Dashboard {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Takes the terminal (raw mode, the alternate screen) and starts drawing `view`; an error leaves the terminal
    /// as it was, and the run shows the progress line instead.
    pub fn start(view: Arc<Mutex<LiveView>>) -> std::io::Result<Dashboard> {
        terminal::enable_raw_mode()?;
        let mut err = std::io::stderr();
        if let Err(e) = execute!(err, terminal::EnterAlternateScreen, cursor::Hide) {
            let _ = terminal::disable_raw_mode();
            return Err(e);
        }
        let mut term = match Terminal::new(CrosstermBackend::new(std::io::stderr())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("hakaru-dashboard".into())
            .spawn(move || draw_until(&mut term, &view, &flag))?;
        Ok(Dashboard { stop, thread: Some(thread) })
    }

    /// Stops drawing and gives the terminal back.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            restore();
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.end();
    }
}

/// The terminal as it was: the main screen, the cursor, cooked mode.
fn restore() {
    let _ = execute!(std::io::stderr(), terminal::LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

/// The thread: keys read, the view drawn when it changed (or the terminal was resized), until `stop`.
fn draw_until(term: &mut Terminal<CrosstermBackend<Stderr>>, view: &Mutex<LiveView>, stop: &AtomicBool) {
    let mut drawn = None;
    let mut last = Instant::now() - FRAME;
    let mut stops = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut force = false;
        if event::poll(FRAME).unwrap_or(false) {
            match event::read() {
                Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if k.code == KeyCode::Char('q') || ctrl_c {
                        stops += 1;
                        if stops > 1 {
                            // The second stop ends the process in the signal handler: the terminal first.
                            restore();
                        }
                        // SIGINT, so the stop is the one a Ctrl-C outside raw mode makes: the same flag, the same
                        // exit code (130), the same warning.
                        // SAFETY: raise only sends a signal to this process.
                        unsafe { libc::raise(libc::SIGINT) };
                        lock(view).warn("stopping: q or Ctrl-C pressed; what was measured is kept".into());
                    }
                }
                Ok(Event::Resize(..)) => force = true,
                _ => {}
            }
        }
        if last.elapsed() < FRAME && !force {
            continue;
        }
        // The version is read under the lock first: an unchanged view is not copied.
        let v = {
            let shared = lock(view);
            if drawn == Some(shared.version) && !force {
                continue;
            }
            shared.clone()
        };
        let _ = term.draw(|f| draw(f, &v));
        drawn = Some(v.version);
        last = Instant::now();
    }
}

/// One frame of the dashboard.
pub fn draw(f: &mut Frame, v: &LiveView) {
    let area = f.area();
    let middle = (area.height / 4).max(8);
    let firsts = firsts(v);
    let rows = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(u16::from(firsts.is_some())),
        Constraint::Min(6),
        Constraint::Length(middle),
        Constraint::Length(4),
        Constraint::Length(1),
    ])
    .split(area);
    f.render_widget(Paragraph::new(header(v)), rows[0]);
    f.render_widget(progress(v), rows[1]);
    if let Some(line) = firsts {
        f.render_widget(Paragraph::new(line), rows[2]);
    }
    // The rows below, indexed as they were before that line had a row of its own.
    let rows = &rows[1..];
    let charts = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).split(rows[2]);
    rate_chart(f, v, charts[0]);
    latency_chart(f, v, charts[1]);
    let parts =
        Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(30), Constraint::Percentage(32)])
            .split(rows[3]);
    histogram(f, v, parts[0]);
    statuses(f, v, parts[1]);
    now(f, v, parts[2]);
    notes(f, v, rows[4]);
    let footer = Line::from(vec![
        Span::styled(" q", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(" or "),
        Span::styled("Ctrl-C", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(": stop the load, keep what was measured"),
    ]);
    f.render_widget(Paragraph::new(footer), rows[5]);
}

fn header(v: &LiveView) -> Line<'static> {
    let phase = match (v.phase, v.done, v.pausing) {
        (_, true, true) => "done, pause before the next step".to_string(),
        (_, true, false) => "done".to_string(),
        (Phase::Warmup, ..) => "warm-up".to_string(),
        (Phase::Measure, ..) => "measuring".to_string(),
    };
    Line::from(vec![
        Span::styled(format!(" hakaru {} ", v.command), Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(format!("{}  ", v.target)),
        Span::styled(format!("step {} {} ", v.step_number, v.step), Style::default().fg(Color::Cyan)),
        Span::raw(format!("({phase})  {}  run {}", v.load, v.run_id)),
    ])
}

fn progress(v: &LiveView) -> Gauge<'static> {
    let of = match v.until {
        crate::base::load::Until::Duration(d) => format!("{:.0} s of {:.0} s", v.elapsed_s, d.as_secs_f64()),
        crate::base::load::Until::Requests(n) => format!("{} of {n} requests", v.completed),
    };
    Gauge::default()
        .gauge_style(Style::default().fg(Color::Green).bg(Color::DarkGray))
        .ratio(v.progress())
        .label(format!("{of}  {:.0} %", v.progress() * 100.0))
}

/// One line of a chart: its name, colour and points.
type Series<'a> = (&'a str, Color, Vec<(f64, f64)>);

/// A chart of the last minute, y from 0 to its top.
fn chart(f: &mut Frame, area: Rect, title: &str, unit: &str, lines: &[Series]) {
    let (x0, x1) = lines
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(x, _)| *x))
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (x0, x1) = if x0 > x1 { (0.0, 60.0) } else { (x0, x1.max(x0 + 60.0)) };
    let top = lines.iter().flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y)).fold(0.0f64, f64::max).max(1.0) * 1.1;
    let sets: Vec<Dataset> = lines
        .iter()
        .map(|(name, color, points)| {
            Dataset::default()
                .name(name.to_string())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(*color))
                .data(points)
        })
        .collect();
    let chart = Chart::new(sets)
        .block(Block::bordered().title(title.to_string()))
        .x_axis(Axis::default().bounds([x0, x1]).labels([format!("{x0:.0}s"), format!("{x1:.0}s")]))
        .y_axis(Axis::default().bounds([0.0, top]).labels(["0".to_string(), format!("{:.0}{unit}", top)]));
    f.render_widget(chart, area);
}

fn rate_chart(f: &mut Frame, v: &LiveView, area: Rect) {
    let sent: Vec<(f64, f64)> = v.recent.iter().map(|p| (p.t, p.sent)).collect();
    let completed: Vec<(f64, f64)> = v.recent.iter().map(|p| (p.t, p.completed)).collect();
    let (s, c) = v.recent.back().map_or((0.0, 0.0), |p| (p.sent, p.completed));
    let title = format!(" requests/s: sent {s:.0}/s, completed {c:.0}/s ");
    chart(f, area, &title, "", &[("sent", Color::Blue, sent), ("completed", Color::Green, completed)]);
}

fn latency_chart(f: &mut Frame, v: &LiveView, area: Rect) {
    let ms = |us: u64| us as f64 / 1000.0;
    let p50: Vec<(f64, f64)> = v.recent.iter().map(|p| (p.t, ms(p.p50_us))).collect();
    let p99: Vec<(f64, f64)> = v.recent.iter().map(|p| (p.t, ms(p.p99_us))).collect();
    let (a, b) = v.recent.back().map_or((0, 0), |p| (p.p50_us, p.p99_us));
    let title = format!(" latency: p50 {}, p99 {} ", format_micros(a as f64), format_micros(b as f64));
    let mut lines = vec![("p50", Color::Green, p50), ("p99", Color::Red, p99)];
    // The time to first byte (the server's part) and, streaming, to the first event: p99 per window where known.
    let some = |get: fn(&super::Point) -> Option<u64>| -> Vec<(f64, f64)> {
        v.recent.iter().filter_map(|p| Some((p.t, ms(get(p)?)))).collect()
    };
    let ttfb = some(|p| p.ttfb_p99_us);
    if !ttfb.is_empty() {
        lines.push(("first byte p99", Color::Yellow, ttfb));
    }
    let first = some(|p| p.first_event_p99_us);
    if !first.is_empty() {
        let name = if v.events == Some("token") { "first token p99" } else { "first event p99" };
        lines.push((name, Color::Magenta, first));
    }
    chart(f, area, &title, "ms", &lines);
}

/// The line under the progress bar: the last window's p99 of the time to first byte and, with `--events`, of the
/// time to first event (token) and the tokens a second. None when the run times no first byte (a key-value run).
fn firsts(v: &LiveView) -> Option<Line<'static>> {
    if v.events.is_none() && !v.recent.iter().any(|p| p.ttfb_p99_us.is_some()) {
        return None;
    }
    let last = v.recent.back();
    let us = |x: Option<u64>| x.map_or("-".to_string(), |us| format_micros(us as f64));
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut spans = vec![Span::raw(" last second: "), Span::styled("first byte p99 ", bold)];
    spans.push(Span::raw(us(last.and_then(|p| p.ttfb_p99_us))));
    if let Some(kind) = v.events {
        spans.push(Span::styled(format!("  first {kind} p99 "), bold));
        spans.push(Span::raw(us(last.and_then(|p| p.first_event_p99_us))));
    }
    if v.events == Some("token") {
        spans.push(Span::styled("  tokens/s ", bold));
        spans.push(Span::raw(last.and_then(|p| p.tokens_per_s).map_or("-".to_string(), |t| format!("{t:.0}"))));
    }
    Some(Line::from(spans))
}

fn histogram(f: &mut Frame, v: &LiveView, area: Rect) {
    let rows = area.height.saturating_sub(3) as usize;
    let bins = v.latency.log_bins(rows.max(1));
    let most = bins.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let width = area.width.saturating_sub(2 + 10 + 9) as u64;
    let head = Line::from(format!(
        "p50 {}  p99 {}  max {}",
        format_micros(v.latency.percentile(50.0) as f64),
        format_micros(v.latency.percentile(99.0) as f64),
        format_micros(v.latency.max() as f64)
    ));
    let lines: Vec<Line> = std::iter::once(head)
        .chain(bins.iter().map(|(upper, n)| {
            let bar = "█".repeat((n * width / most) as usize);
            Line::from(vec![
                Span::raw(format!("{:>9} ", format!("≤{}", format_micros(*upper as f64)))),
                Span::styled(bar, Style::default().fg(Color::Cyan)),
                Span::raw(format!(" {n}")),
            ])
        }))
        .collect();
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" latency so far ")), area);
}

fn statuses(f: &mut Frame, v: &LiveView, area: Rect) {
    let mut lines: Vec<Line> = v.status.iter().map(|(s, n)| Line::from(format!("status {s}: {n}"))).collect();
    for (kind, n) in &v.errors {
        lines.push(Line::styled(format!("{}: {n}", kind.key()), Style::default().fg(Color::Red)));
    }
    if lines.is_empty() {
        lines.push(Line::from("no answer yet"));
    }
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" statuses and errors ")), area);
}

fn now(f: &mut Frame, v: &LiveView, area: Rect) {
    let cpu = |x: Option<f64>| x.map_or("-".to_string(), |c| format!("{c:.0} %"));
    let server = match v.server_cpu {
        Some(c) => format!("{c:.0} %"),
        None => "not watched".to_string(),
    };
    let lines = vec![
        Line::from(format!("sent {}", v.sent)),
        Line::from(format!("completed {}", v.completed)),
        Line::from(format!("failed {}", v.failed)),
        Line::from(format!("connections {}", v.connections)),
        Line::from(format!("hakaru CPU {} ({} cores)", cpu(v.own_cpu), v.cores)),
        Line::from(format!("server CPU {server}")),
    ];
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" requests so far ")), area);
}

fn notes(f: &mut Frame, v: &LiveView, area: Rect) {
    let rows = area.height.saturating_sub(2) as usize;
    let mut lines: Vec<Line> =
        v.warnings.iter().map(|w| Line::styled(format!("warning: {w}"), Style::default().fg(Color::Yellow))).collect();
    lines.extend(v.lines.iter().map(|l| Line::from(l.clone())));
    let skip = lines.len().saturating_sub(rows);
    let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
    f.render_widget(Paragraph::new(shown).block(Block::bordered().title(" warnings and steps ")), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    fn screen(w: u16, h: u16, v: &LiveView) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, v)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_token_streams_first_token_and_tokens_per_second_are_shown_and_a_key_value_run_has_no_such_line() {
        let mut v = LiveView::new("abc".into(), "run".into(), "http://127.0.0.1:8080/".into());
        v.events = Some("token");
        let point = super::super::Point {
            t: 0.0,
            ttfb_p99_us: Some(1500),
            first_event_p99_us: Some(52_000),
            tokens_per_s: Some(340.0),
            ..Default::default()
        };
        v.recent.push_back(point);
        let s = screen(80, 24, &v);
        for want in ["first byte p99 1.50ms", "first token p99 52.00ms", "tokens/s 340"] {
            assert!(s.contains(want), "lacks '{want}':\n{s}");
        }
        v.events = None;
        v.recent[0] = super::super::Point { ttfb_p99_us: None, first_event_p99_us: None, ..point };
        assert!(!screen(80, 24, &v).contains("first byte"));
    }

    #[test]
    fn the_dashboard_fits_a_small_and_a_large_terminal() {
        let mut v = LiveView::new("abc".into(), "run".into(), "http://127.0.0.1:8080/".into());
        v.step = "run".into();
        v.step_number = 1;
        v.completed = 1234;
        v.status.insert(200, 1230);
        v.errors.insert(crate::metrics::ErrorKind::Timeout, 4);
        v.latency.record(1500);
        for t in 0..10 {
            v.recent.push_back(super::super::Point {
                t: t as f64,
                sent: 100.0,
                completed: 99.0,
                p50_us: 800,
                p99_us: 2000,
                ttfb_p99_us: Some(1500),
                first_event_p99_us: Some(52_000),
                tokens_per_s: Some(340.0),
            });
        }
        for (w, h) in [(80, 24), (200, 60)] {
            let s = screen(w, h, &v);
            for want in
                ["completed 1234", "status 200: 1230", "timeout: 4", "requests/s", "latency so far", "q or Ctrl-C"]
            {
                assert!(s.contains(want), "{w}x{h} lacks '{want}':\n{s}");
            }
        }
    }
}
