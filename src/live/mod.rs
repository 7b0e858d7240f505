//! What a run shows and sends while it runs: the dashboard (or the progress line) on the terminal, and the figures
//! pushed to a Prometheus remote-write endpoint. The main thread folds each finished window of the engine into one
//! [`LiveView`], the one place that reads the windows; the dashboard's thread draws it and the pusher's thread
//! sends it, both off the load threads. At the end of a step the view takes the step's own figures from the result
//! document, so what was last shown and pushed is what the document says.

pub mod dashboard;
pub mod progress;
pub mod prometheus;
mod remote_write;

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::base::load::{LoadModel, Until};
use crate::live::progress::Progress;
use crate::metrics::{ErrorKind, LatencyHistogram, Window};
use crate::monitor::ProcessMonitor;
use crate::plan::RunPlan;
use crate::result::StepResult;

/// How many windows the charts keep: the last minute at one window a second.
pub const RECENT: usize = 60;
/// The most warnings and lines the dashboard keeps (the newest).
const KEPT_LINES: usize = 50;

/// Which part of a step the figures belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Warmup,
    Measure,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
        }
    }
}

/// One window, as the charts draw it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    /// Seconds from the start of the step to the start of the window.
    pub t: f64,
    /// Requests sent and completed in the window, per second.
    pub sent: f64,
    pub completed: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// HTTP: the p99 of the window's time to first byte; None for the key-value protocols or without an answer.
    pub ttfb_p99_us: Option<u64>,
    /// `--events`: the p99 of the time to first event (token) of the answers that ended in the window.
    pub first_event_p99_us: Option<u64>,
    /// `--events tokens`: output tokens a second of the answers that ended in the window.
    pub tokens_per_s: Option<f64>,
}

/// What is known of the run now: the snapshot the dashboard draws and the pusher sends.
#[derive(Clone, Debug)]
pub struct LiveView {
    /// The run's id: a label of every pushed series and of the result document.
    pub run_id: String,
    pub command: String,
    /// The targets, as messages show them.
    pub target: String,
    /// The step under way (its label), its number from 1, and its phase.
    pub step: String,
    pub step_number: usize,
    pub phase: Phase,
    /// The load offered: `50 connections`, `1000/s over at most 50 connections`.
    pub load: String,
    /// The open loop's rate, for the warning when it is not kept.
    pub rate: Option<f64>,
    /// `--events`: what the answers' events are called (`event`, or `token` for a token stream); None without.
    pub events: Option<&'static str>,
    /// When the step ends.
    pub until: Until,
    /// Seconds of the step measured so far (the end of its last window).
    pub elapsed_s: f64,
    /// The step ended: its figures are the result document's.
    pub done: bool,
    /// Between steps, before the next one.
    pub pausing: bool,
    /// Requests sent, completed (answered or failed) and failed, so far in the step.
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// Answers by status (timeouts are errors, not status 0, here).
    pub status: BTreeMap<u16, u64>,
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Latency of the successes so far (coarse while the step runs, the step's own at its end).
    pub latency: LatencyHistogram,
    /// `--events`: the time to first event (token) of the streamed answers that ended so far (as `latency`).
    pub first_event: LatencyHistogram,
    /// `--events tokens`: output tokens of the answers that ended so far.
    pub tokens: u64,
    /// The last [`RECENT`] windows.
    pub recent: VecDeque<Point>,
    /// Connections open at the end of the last window.
    pub connections: u64,
    /// hakaru's CPU over the last window (100 = one core) and the cores it may use.
    pub own_cpu: Option<f64>,
    pub cores: usize,
    /// The watched server's CPU over its last sampling interval.
    pub server_cpu: Option<f64>,
    /// Warnings as they arise, newest last.
    pub warnings: Vec<String>,
    /// Lines of the run's text said while the dashboard covers the screen (a sweep's table rows), newest last.
    pub lines: Vec<String>,
    /// Bumped at every change, so the dashboard redraws only when there is something new.
    pub version: u64,
}

impl LiveView {
    fn new(run_id: String, command: String, target: String) -> LiveView {
        LiveView {
            run_id,
            command,
            target,
            step: String::new(),
            step_number: 0,
            phase: Phase::Measure,
            load: String::new(),
            rate: None,
            events: None,
            until: Until::Duration(Duration::ZERO),
            elapsed_s: 0.0,
            done: false,
            pausing: false,
            sent: 0,
            completed: 0,
            failed: 0,
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
            latency: LatencyHistogram::new(),
            first_event: LatencyHistogram::new(),
            tokens: 0,
            recent: VecDeque::new(),
            connections: 0,
            own_cpu: None,
            cores: crate::monitor::own_cores(),
            server_cpu: None,
            warnings: Vec::new(),
            lines: Vec::new(),
            version: 0,
        }
    }

    /// A new step (or its warm-up) begins: its figures start from zero.
    fn begin(&mut self, plan: &RunPlan, label: &str, phase: Phase) {
        if phase == Phase::Warmup || self.phase == Phase::Measure || self.step != label {
            self.step_number += 1;
        }
        self.step = label.to_string();
        self.phase = phase;
        (self.load, self.rate) = match plan.load {
            LoadModel::Closed { .. } => (format!("{} connections", plan.connections), None),
            LoadModel::Open { rate, .. } => {
                (format!("{} req/s over at most {} connections", trim(rate), plan.connections), Some(rate))
            }
        };
        self.events = plan.events.as_ref().map(|e| match e.kind {
            crate::protocol::events::EventKind::Tokens => "token",
            _ => "event",
        });
        self.until = plan.stop;
        (self.elapsed_s, self.done, self.pausing) = (0.0, false, false);
        (self.sent, self.completed, self.failed, self.connections) = (0, 0, 0, 0);
        self.status.clear();
        self.errors.clear();
        self.latency = LatencyHistogram::coarse();
        (self.first_event, self.tokens) = (LatencyHistogram::coarse(), 0);
        self.recent.clear();
        self.version += 1;
    }

    /// Folds in one finished window of the step, and the requests sent late into windows already shown: a
    /// request is counted sent before it can be completed, so `sent` is never below `completed`.
    fn window(&mut self, window: &Window, width: f64) {
        let (s, w) = (&window.summary, &window.accum);
        self.elapsed_s = self.elapsed_s.max(s.t + width);
        self.sent += w.sent;
        for &(t, n) in &window.sent_earlier {
            self.sent += n;
            if let Some(p) = self.recent.iter_mut().find(|p| p.t == t) {
                p.sent += n as f64 / width;
            }
        }
        self.completed += w.requests;
        self.failed += w.errors;
        for &(status, n) in &w.status {
            *self.status.entry(status).or_default() += n;
        }
        for (kind, n) in w.kinds_seen() {
            *self.errors.entry(kind).or_default() += n;
        }
        self.latency.merge(&w.latency);
        self.first_event.merge(&w.first_event);
        self.tokens = self.tokens.saturating_add(w.tokens.unwrap_or(0));
        self.connections = w.open;
        let per_s = |n: u64| n as f64 / width;
        self.recent.push_back(Point {
            t: s.t,
            sent: per_s(w.sent),
            completed: per_s(w.requests),
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            ttfb_p99_us: s.ttfb_p99_us,
            first_event_p99_us: s.first_event_p99_us,
            tokens_per_s: w.tokens.map(per_s).or(self.events.filter(|e| *e == "token").map(|_| 0.0)),
        });
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
        self.version += 1;
    }

    /// The step's own figures, as the result document holds them.
    fn finish(&mut self, step: &StepResult) {
        self.elapsed_s = step.duration_s;
        self.completed = step.requests;
        self.sent = step.requests + step.unfinished;
        self.failed = step.failed;
        let timeouts = step.error_kinds.iter().find(|e| e.kind == ErrorKind::Timeout.key()).map_or(0, |e| e.count);
        self.status = step
            .status
            .iter()
            .filter_map(|(code, n)| {
                let code: u16 = code.parse().ok()?;
                // Status 0 counts timeouts in the document; here they are errors of their kind.
                let n = if code == 0 { n.saturating_sub(timeouts) } else { *n };
                (n > 0).then_some((code, n))
            })
            .collect();
        self.errors = step.error_kinds.iter().filter_map(|e| Some((ErrorKind::from_key(&e.kind)?, e.count))).collect();
        if let Ok(h) = LatencyHistogram::from_base64(&step.histogram.data) {
            self.latency = h;
        }
        if let Some(e) = &step.events {
            let first = e.first_event.as_ref().map(|p| LatencyHistogram::from_base64(&p.histogram.data));
            self.first_event = first.and_then(Result::ok).unwrap_or_default();
            self.tokens = e.tokens.as_ref().map_or(0, |t| t.tokens);
        }
        self.connections = 0;
        self.done = true;
        self.version += 1;
    }

    /// How far the step is, 0 to 1, when its end is known.
    pub fn progress(&self) -> f64 {
        let f = match self.until {
            Until::Duration(d) if !d.is_zero() => self.elapsed_s / d.as_secs_f64(),
            Until::Requests(n) if n > 0 => self.completed as f64 / n as f64,
            _ => 0.0,
        };
        if self.done { 1.0 } else { f.clamp(0.0, 1.0) }
    }

    fn warn(&mut self, text: String) {
        if !self.warnings.contains(&text) {
            self.warnings.push(text);
            keep_last(&mut self.warnings);
            self.version += 1;
        }
    }
}

fn keep_last(v: &mut Vec<String>) {
    if v.len() > KEPT_LINES {
        v.drain(..v.len() - KEPT_LINES);
    }
}

/// A rate without a needless fraction: 1000, 12.5.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x}") }
}

/// A poisoned lock only means a drawing panicked; the view is still usable.
fn lock(v: &Mutex<LiveView>) -> MutexGuard<'_, LiveView> {
    v.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh id for a run: the start time and the process, in hex (unique on one machine, short in a label).
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("{:x}{:04x}", now.as_millis(), std::process::id() & 0xffff)
}

/// The live outputs of one measured run, owned by its session: the view, the dashboard or the progress line, the
/// pusher.
pub struct Live {
    view: Arc<Mutex<LiveView>>,
    quiet: bool,
    line: Option<Progress>,
    dashboard: Option<dashboard::Dashboard>,
    pusher: Option<prometheus::Pusher>,
    /// When the next push is due.
    next_push: Instant,
    /// hakaru's CPU time and the instant it was read, for the CPU of each window.
    cpu_mark: (Instant, Duration),
}

impl Live {
    /// Starts what the first plan asks for: the dashboard when `tui` and standard error is a terminal (not with
    /// `quiet`), the pusher with `--prometheus-rw`. `labels` are the run's `--label`s.
    pub fn start(plan: &RunPlan, labels: &BTreeMap<String, String>, run_id: &str) -> Live {
        let target = crate::base::secrets::scrub_text(&plan.settings.targets.join(" "));
        let view = Arc::new(Mutex::new(LiveView::new(run_id.into(), plan.settings.command.clone(), target)));
        let terminal = std::io::stderr().is_terminal();
        let dashboard = (plan.live.tui && !plan.quiet && terminal)
            .then(|| dashboard::Dashboard::start(Arc::clone(&view)))
            .and_then(Result::ok);
        let pusher = plan.live.push.as_ref().map(|p| prometheus::Pusher::start(p, labels));
        Live {
            view,
            quiet: plan.quiet,
            line: None,
            dashboard,
            pusher,
            next_push: Instant::now(),
            cpu_mark: (Instant::now(), crate::monitor::own_cpu_time()),
        }
    }

    /// Whether the dashboard covers the terminal (lines said now are kept for after it).
    pub fn covers_terminal(&self) -> bool {
        self.dashboard.is_some()
    }

    /// A step (or its warm-up) of `plan` begins.
    pub fn begin(&mut self, plan: &RunPlan, label: &str, phase: Phase) {
        lock(&self.view).begin(plan, label, phase);
        if self.dashboard.is_none() {
            self.line = Some(Progress::new(self.quiet));
        }
        self.cpu_mark = (Instant::now(), crate::monitor::own_cpu_time());
        self.next_push = Instant::now();
    }

    /// A window of the step finished (on the main thread, as the engine merges it).
    pub fn window(&mut self, window: &Window, server: Option<&ProcessMonitor>) {
        let s = &window.summary;
        if let Some(line) = &mut self.line {
            line.window(s);
        }
        let now = Instant::now();
        let cpu = crate::monitor::own_cpu_time();
        let wall = now.duration_since(self.cpu_mark.0).as_secs_f64();
        let own = (wall > 0.0).then(|| cpu.saturating_sub(self.cpu_mark.1).as_secs_f64() / wall * 100.0);
        self.cpu_mark = (now, cpu);
        let width = window.length.as_secs_f64().max(1e-3);
        let mut v = lock(&self.view);
        v.window(window, width);
        v.own_cpu = own;
        v.server_cpu = server.and_then(ProcessMonitor::latest_cpu_percent);
        if let Some(pct) = own
            && crate::monitor::is_saturated(pct, v.cores)
        {
            let text = format!(
                "hakaru is using {pct:.0} % CPU of its {} cores: the generator, not the server, may be the limit",
                v.cores
            );
            v.warn(text);
        }
        // After the first windows (connections opening), a rate kept under 95 % is said once (in a timed step: one
        // bounded by a request count sends less in its last window by design).
        if let Some(rate) = v.rate
            && matches!(v.until, Until::Duration(_))
            && s.t >= 2.0
            && v.recent.back().is_some_and(|p| p.sent < 0.95 * rate)
        {
            let text =
                format!("the rate of {} req/s is not kept: more connections (-c) or threads may help", trim(rate));
            v.warn(text);
        }
        drop(v);
        // A failed push is said as it arises: on the dashboard, or above the progress line.
        for text in self.take_warnings() {
            match (&self.dashboard, &self.line) {
                (Some(_), _) => lock(&self.view).warn(text),
                (None, Some(line)) => line.println(&format!("hakaru: warning: {text}")),
                (None, None) => eprintln!("hakaru: warning: {text}"),
            }
        }
        if now >= self.next_push {
            self.push(false);
        }
    }

    /// The step's warm-up or measurement ended; the progress line goes.
    pub fn end_phase(&mut self) {
        if let Some(line) = self.line.take() {
            line.finish();
        }
    }

    /// A step ended: the view takes the document's figures for it, and they are pushed.
    pub fn step_done(&mut self, step: &StepResult) {
        lock(&self.view).finish(step);
        self.push(true);
    }

    /// The pause between steps.
    pub fn pausing(&self) {
        let mut v = lock(&self.view);
        v.pausing = true;
        v.version += 1;
    }

    /// A warning of the run, shown by the dashboard (the session prints it too, after the dashboard when it covers
    /// the terminal).
    pub fn warn(&self, text: &str) {
        lock(&self.view).warn(text.to_string());
    }

    /// A line of the run's text while the dashboard covers the terminal.
    pub fn line(&self, text: &str) {
        let mut v = lock(&self.view);
        v.lines.push(text.to_string());
        keep_last(&mut v.lines);
        v.version += 1;
    }

    fn push(&mut self, last: bool) {
        if let Some(p) = &self.pusher {
            p.push(&lock(&self.view), last);
            self.next_push = Instant::now() + p.interval();
        }
    }

    /// Ends the live outputs: the dashboard gives the terminal back, the pusher sends what it holds. Returns the
    /// warnings for the document (failed pushes).
    pub fn close(mut self) -> Vec<String> {
        self.end_phase();
        if let Some(d) = self.dashboard.take() {
            d.stop();
        }
        self.pusher.take().map(prometheus::Pusher::finish).unwrap_or_default()
    }

    /// Warnings that arose on other threads (a failed push) since the last call, for the terminal.
    pub fn take_warnings(&self) -> Vec<String> {
        self.pusher.as_ref().map(prometheus::Pusher::take_warnings).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{WindowAccum, WindowMerger};

    #[test]
    fn windows_add_up_and_the_chart_keeps_the_last_minute() {
        let mut v = LiveView::new("id".into(), "run".into(), "http://127.0.0.1/".into());
        let mut w = WindowAccum::new(false);
        w.sent = 10;
        w.requests = 9;
        w.errors = 1;
        w.status = vec![(200, 8), (503, 1)];
        w.latency.record(1000);
        let mut merger = WindowMerger::new(Duration::from_secs(1), 1, false, std::time::SystemTime::now());
        for i in 0..70 {
            let window = merger.add(i, &w).unwrap();
            v.window(&window, 1.0);
            merger.keep(window);
        }
        assert_eq!((v.sent, v.completed, v.failed), (700, 630, 70));
        assert_eq!(v.status, BTreeMap::from([(200, 560), (503, 70)]));
        assert_eq!(v.recent.len(), RECENT);
        assert_eq!(v.recent.back().unwrap().t, 69.0);
        assert_eq!(v.elapsed_s, 70.0);
    }

    #[test]
    fn a_request_sent_late_into_a_window_already_shown_is_counted_sent_before_its_answer() {
        // Window 0: 10 sent, 10 answered. Window 1: 4 more requests intended in window 0 (sent late, after it was
        // shown) and 2 of window 1, all 6 answered.
        let mut v = LiveView::new("id".into(), "run".into(), "t".into());
        let mut merger = WindowMerger::new(Duration::from_secs(1), 1, false, std::time::SystemTime::now());
        let mut w0 = WindowAccum::new(false);
        (w0.sent, w0.requests) = (10, 10);
        let mut w1 = WindowAccum::new(false);
        (w1.sent, w1.requests) = (2, 6);
        w1.sent_earlier.insert(0, 4);
        for (i, w) in [w0, w1].iter().enumerate() {
            let window = merger.add(i as u64, w).unwrap();
            v.window(&window, 1.0);
            merger.keep(window);
        }
        assert_eq!((v.sent, v.completed), (16, 16));
        let chart: Vec<(f64, f64)> = v.recent.iter().map(|p| (p.sent, p.completed)).collect();
        assert_eq!(chart, [(14.0, 10.0), (2.0, 6.0)], "the late requests are drawn where they were due");
    }

    #[test]
    fn a_warning_is_kept_once() {
        let mut v = LiveView::new("id".into(), "run".into(), "t".into());
        v.warn("slow".into());
        v.warn("slow".into());
        assert_eq!(v.warnings.len(), 1);
    }
}
