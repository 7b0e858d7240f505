//! Windows of a step (`--window`): each thread's counts and coarse histograms for the current window
//! (`WindowAccum`), a window's summary (`WindowSummary`), and the coordinator's merge of the threads' windows as
//! they close (`WindowMerger`).

use super::*;

/// One window of a step (one second by default, `--window`) as one thread accumulates it. The engine swaps it out
/// at every boundary, so each request is in exactly one window; the coordinator adds the threads' windows up.
#[derive(Clone, Debug)]
pub struct WindowAccum {
    /// Successes' latency from the intended send time (the step's `latency`, cut by window).
    pub latency: LatencyHistogram,
    /// Successes' latency from the actual send (service time); recorded only when the step tracks it (open loop).
    pub service: LatencyHistogram,
    /// Requests that ended in the window (answered or failed).
    pub requests: u64,
    /// Of those, the failed ones: statuses outside `--ok-status` and errors.
    pub errors: u64,
    /// Requests intended in the window (sent then, or later when late): the offered load, against `requests` the
    /// completed one.
    pub sent: u64,
    /// Requests sent while this window was under way but intended in an earlier one, by that window's index:
    /// corrections of windows already handed over (the merger adds them where they belong).
    pub sent_earlier: BTreeMap<u64, u64>,
    /// Failed requests by error kind, in the order of [`ErrorKind::ALL`].
    pub error_kinds: [u64; ErrorKind::ALL.len()],
    /// Failed answers by status (few distinct codes: a map, allocated only at the first).
    pub failed_statuses: BTreeMap<u16, u64>,
    /// Connections open when the window ended (a gauge; threads' add up).
    pub open: u64,
    /// CPU time the load threads used in the window.
    pub cpu: Duration,
    /// Every answer by status (the live view's status codes), few distinct ones: (status, count) pairs found by a
    /// short scan.
    pub status: Vec<(u16, u64)>,
    /// HTTP answers' time to first byte from the send (coarse: the document keeps only its p99).
    pub waiting: LatencyHistogram,
    /// `--events`: the time to first event (a token stream: first token) of the streamed answers that ended in the
    /// window (coarse: the document keeps only its p99).
    pub first_event: LatencyHistogram,
    /// `--events tokens`: output tokens of the answers that ended in the window; None when none did.
    pub tokens: Option<u64>,
    /// Reads of answers still under way (a stream's events, a long body's bytes): progress that is no ended answer.
    pub progress: u64,
    /// Requests that ended in the window and had left more than 1 ms after their intended time, and of those the
    /// ones every connection `-c` allows was busy for.
    pub late: u64,
    pub starved: u64,
}

impl WindowAccum {
    /// An empty window; `full` histograms have the step's 3 digits (for an HDR log that must agree with the
    /// document), else 2 (about 1 %: windows are many).
    pub fn new(full: bool) -> Self {
        let h = || if full { LatencyHistogram::new() } else { LatencyHistogram::coarse() };
        Self {
            latency: h(),
            service: h(),
            waiting: LatencyHistogram::coarse(),
            first_event: LatencyHistogram::coarse(),
            tokens: None,
            progress: 0,
            late: 0,
            starved: 0,
            requests: 0,
            errors: 0,
            sent: 0,
            sent_earlier: BTreeMap::new(),
            error_kinds: [0; ErrorKind::ALL.len()],
            failed_statuses: BTreeMap::new(),
            open: 0,
            cpu: Duration::ZERO,
            status: Vec::new(),
        }
    }

    /// An empty window of the same precision.
    pub fn fresh(&self) -> Self {
        Self::new(self.latency.digits() == 3)
    }

    pub fn merge(&mut self, other: &WindowAccum) {
        self.latency.merge(&other.latency);
        self.service.merge(&other.service);
        self.waiting.merge(&other.waiting);
        self.first_event.merge(&other.first_event);
        if let Some(n) = other.tokens {
            let tokens = self.tokens.get_or_insert(0);
            *tokens = tokens.saturating_add(n);
        }
        self.requests += other.requests;
        self.errors += other.errors;
        self.sent += other.sent;
        self.progress += other.progress;
        self.late += other.late;
        self.starved += other.starved;
        for (k, n) in &other.sent_earlier {
            *self.sent_earlier.entry(*k).or_default() += n;
        }
        for (a, b) in self.error_kinds.iter_mut().zip(other.error_kinds) {
            *a += b;
        }
        for (s, n) in &other.failed_statuses {
            *self.failed_statuses.entry(*s).or_default() += n;
        }
        self.open += other.open;
        self.cpu += other.cpu;
        for &(s, n) in &other.status {
            self.count_status(s, n);
        }
    }

    pub(super) fn count_status(&mut self, status: u16, n: u64) {
        match self.status.iter_mut().find(|(s, _)| *s == status) {
            Some((_, c)) => *c += n,
            None => self.status.push((status, n)),
        }
    }

    /// Errors of the window by kind, the kinds seen only.
    pub fn kinds_seen(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL.into_iter().zip(self.error_kinds).filter(|(_, n)| *n > 0)
    }

    /// Failures by kind for people and the document: error kinds by their key, failed statuses as `status_503`.
    pub fn failures(&self) -> BTreeMap<String, u64> {
        let kinds = ErrorKind::ALL.into_iter().filter(|k| self.error_kinds[k.index()] > 0);
        kinds
            .map(|k| (k.key().to_string(), self.error_kinds[k.index()]))
            .chain(self.failed_statuses.iter().map(|(s, n)| (format!("status_{s}"), *n)))
            .collect()
    }
}

impl Default for WindowAccum {
    fn default() -> Self {
        Self::new(false)
    }
}

/// The figures of one window once every thread has reported: what the document keeps of it (the histograms are
/// not kept: a 24 h run at 1 s holds 86 400 of these), what charts, the text summary and live readers use.
///
/// Fields added after the first version are read as absent (0, empty, null) from older documents.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowSummary {
    /// Seconds from the start of the step to the start of the window (its instant: windows of agents that
    /// started together line up by it).
    pub t: f64,
    /// Requests that ended in the window (its completed rate is `requests / window_s`).
    pub requests: u64,
    /// Of those, the failed ones (statuses outside `ok_status`, and errors).
    pub errors: u64,
    /// Requests sent in the window (its offered rate is `sent / window_s`).
    #[serde(default)]
    pub sent: u64,
    /// The failures by kind: error kinds (`timeout`, `reset`, ...) and statuses (`status_503`).
    #[serde(default)]
    pub failures: BTreeMap<String, u64>,
    /// Connections open at the end of the window.
    #[serde(default)]
    pub open_connections: u64,
    /// Successes' latency from the intended send time, microseconds (2 significant digits).
    pub p50_us: u64,
    #[serde(default)]
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// A ramp's target at the middle of the window: clients (`--stages`) or requests per second
    /// (`--rate-stages`); null without a ramp.
    #[serde(default)]
    pub target: Option<f64>,
    /// hakaru's load threads' CPU in the window, percent of one core.
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    /// HTTP: the p99 of the window's answers' time to first byte from the send (phases' `waiting`), microseconds
    /// (2 significant digits); absent for the key-value protocols and a window without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_p99_us: Option<u64>,
    /// `--events`: the p99 of the time to first event (a token stream: first token) of the streamed answers that
    /// ended in the window, microseconds (2 significant digits); absent without events or such an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event_p99_us: Option<u64>,
    /// `--events tokens`: output tokens of the answers that ended in the window (counted at their end); absent
    /// without a token stream or such an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Reads of answers still under way in the window (a stream's events, a long body's bytes): the server was
    /// sending, so a window with progress and no ended answer is no stall. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub progress: u64,
    /// Requests that ended in the window and had left more than 1 ms after their intended time (an open loop's
    /// lateness, second by second: beside `cpu_percent` it tells whether hakaru's CPU made them late). Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u64,
    /// Of `late`, those that fell due with every connection `-c` allows busy. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub starved: u64,
    /// The watched server's CPU in the window, percent of one core; null when no server is watched.
    #[serde(default)]
    pub server_cpu_percent: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl WindowSummary {
    /// The figures of `w`, a window starting `t` seconds into the step and lasting `width`.
    pub fn from_accum(t: f64, width: Duration, w: &WindowAccum) -> Self {
        let secs = width.as_secs_f64();
        Self {
            t,
            requests: w.requests,
            errors: w.errors,
            sent: w.sent,
            failures: w.failures(),
            open_connections: w.open,
            p50_us: w.latency.percentile(50.0),
            p90_us: w.latency.percentile(90.0),
            p99_us: w.latency.percentile(99.0),
            max_us: w.latency.max(),
            target: None,
            cpu_percent: (secs > 0.0).then(|| (w.cpu.as_secs_f64() / secs * 1000.0).round() / 10.0),
            ttfb_p99_us: (!w.waiting.is_empty()).then(|| w.waiting.percentile(99.0)),
            first_event_p99_us: (!w.first_event.is_empty()).then(|| w.first_event.percentile(99.0)),
            tokens: w.tokens,
            progress: w.progress,
            late: w.late,
            starved: w.starved,
            server_cpu_percent: None,
        }
    }
}

/// A window every thread has reported (or the last ones, at the end of the step): its summary, which the document
/// keeps, and its merged histograms, which it does not (the HDR log and live readers take them as they come).
#[derive(Clone, Debug)]
pub struct Window {
    pub summary: WindowSummary,
    pub accum: WindowAccum,
    /// How long the window lasted: the width, or less for the last one when the step ended inside it.
    pub length: Duration,
    /// When it began, on the wall clock.
    pub at: std::time::SystemTime,
    /// Requests sent late into windows already handed out (their start in seconds, how many), since the last
    /// window: live readers add them to what they showed, so their count of sent requests misses none.
    pub sent_earlier: Vec<(f64, u64)>,
}

/// Collects the windows the threads send, index by index, and keeps only their summaries (bounded memory: the
/// histograms of a window are dropped once it is complete).
#[derive(Debug)]
pub struct WindowMerger {
    pub(super) width: Duration,
    pub(super) threads: usize,
    pub(super) full: bool,
    pub(crate) started_at: std::time::SystemTime,
    pub(super) pending: BTreeMap<u64, (WindowAccum, usize)>,
    pub(super) done: Vec<WindowSummary>,
    /// Corrections to windows already handed out, for the next window handed out (see [`Window::sent_earlier`]).
    pub(super) sent_earlier: Vec<(f64, u64)>,
}

impl WindowMerger {
    /// Windows of `width` from `threads` threads, of a step that started at `started_at` on the wall clock;
    /// `full`: histograms at 3 digits (see [`WindowAccum::new`]).
    pub fn new(width: Duration, threads: usize, full: bool, started_at: std::time::SystemTime) -> Self {
        Self { width, threads, full, started_at, pending: BTreeMap::new(), done: Vec::new(), sent_earlier: Vec::new() }
    }

    /// Adds one thread's window `index`; returns the window when every thread has reported it. The caller may
    /// add to its summary (a ramp's target, the server's CPU), then hands it back with [`keep`](Self::keep).
    pub fn add(&mut self, index: u64, w: &WindowAccum) -> Option<Window> {
        self.correct(&w.sent_earlier);
        let full = self.full;
        let entry = self.pending.entry(index).or_insert_with(|| (WindowAccum::new(full), 0));
        entry.0.merge(w);
        entry.1 += 1;
        if entry.1 < self.threads {
            return None;
        }
        let (acc, _) = self.pending.remove(&index).expect("entry exists");
        Some(self.window(index, acc, None))
    }

    pub(super) fn window(&mut self, index: u64, accum: WindowAccum, ended: Option<f64>) -> Window {
        let t = index as f64 * self.width.as_secs_f64();
        let length = match ended {
            Some(end) if end > t => self.width.min(Duration::from_secs_f64(end - t)),
            _ => self.width,
        };
        let at = self.started_at + self.width.mul_f64(index as f64);
        let sent_earlier = std::mem::take(&mut self.sent_earlier);
        Window { summary: WindowSummary::from_accum(t, length, &accum), accum, length, at, sent_earlier }
    }

    /// Requests sent late, counted in the window they were intended in: still pending, or already kept (live
    /// readers saw that window without them; the document has them).
    pub(super) fn correct(&mut self, earlier: &BTreeMap<u64, u64>) {
        for (&index, &n) in earlier {
            if let Some((acc, _)) = self.pending.get_mut(&index) {
                acc.sent += n;
                continue;
            }
            let t = index as f64 * self.width.as_secs_f64();
            if let Some(kept) = self.done.iter_mut().rev().find(|s| s.t == t) {
                kept.sent += n;
                self.sent_earlier.push((t, n));
            } else {
                // Not seen yet from any thread (it cannot be complete before this one's): kept pending.
                let full = self.full;
                self.pending.entry(index).or_insert_with(|| (WindowAccum::new(full), 0)).0.sent += n;
            }
        }
    }

    /// Keeps a window's summary in the step's list.
    pub fn keep(&mut self, w: Window) {
        self.done.push(w.summary);
    }

    /// Every window still incomplete (a thread that stopped early sends no more), each handed to `on_window`
    /// first, then every summary in order of time. `elapsed`: seconds the step lasted (the last window's end).
    pub fn finish(mut self, elapsed: f64, mut on_window: impl FnMut(&mut Window)) -> Vec<WindowSummary> {
        for (index, (acc, _)) in std::mem::take(&mut self.pending) {
            let mut w = self.window(index, acc, Some(elapsed));
            on_window(&mut w);
            self.keep(w);
        }
        self.done.sort_by(|a, b| a.t.total_cmp(&b.t));
        self.done
    }
}
