//! `--prometheus-rw URL`: the run's figures pushed to a Prometheus remote-write 1.0 endpoint every interval and at
//! the end of every step, from a thread of its own (a slow or dead receiver never holds the load or the main
//! thread: a push still queued when the next is due is skipped, counters being cumulative; each push, retries
//! included, has its own timeout, and a step's end waits for the pushes at most one interval).
//!
//! Series (each labelled `run_id`, `target`, `step`, `phase` and every `--label`): `hakaru_requests_sent_total`,
//! `hakaru_requests_completed_total`, `hakaru_requests_failed_total`, `hakaru_responses_total{status}`,
//! `hakaru_errors_total{kind}`, the gauges `hakaru_sent_per_second`, `hakaru_completed_per_second`,
//! `hakaru_connections_open`, `hakaru_cpu_percent{process}`, and the successes' latency as a classic histogram
//! `hakaru_latency_seconds{_bucket,_sum,_count}`; with `--events` the time to first event as another
//! (`hakaru_time_to_first_token_seconds` for a token stream, else `hakaru_time_to_first_event_seconds`), and for a
//! token stream `hakaru_output_tokens_total` and the gauge `hakaru_output_tokens_per_second`. Classic buckets rather than native histograms: remote-write 1.0
//! receivers all take them (Prometheus takes native ones only behind a feature flag, and Debian's 2.42 not in
//! remote write by default), and `histogram_quantile` reads them everywhere.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::LiveView;
use super::remote_write::{Series, body};
use crate::metrics::LatencyHistogram;
use crate::plan::live::PushPlan;

/// The latency buckets' upper bounds, microseconds (then +Inf): 100 µs to a minute, 1-2.5-5 a decade.
pub const BUCKETS_US: [u64; 18] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Label names hakaru gives itself; a `--label` of one of these names is pushed as `label_NAME`.
const OWN_LABELS: [&str; 9] = ["run_id", "target", "step", "phase", "status", "kind", "le", "process", "job"];

/// Tries of one push (the first and two retries), the wait before the first retry (doubled after).
const TRIES: u32 = 3;
const RETRY_WAIT: Duration = Duration::from_millis(250);
/// The longest a push may take, whatever the interval.
const MOST_PUSH_TIME: Duration = Duration::from_secs(10);
/// The longest part of a receiver's refusal quoted in a warning.
const QUOTED: usize = 160;

/// One push: its series and instant.
struct Batch {
    series: Vec<Series>,
    timestamp_ms: i64,
}

/// What the pushes came to, kept up to date by the pushing thread: a push still being retried when the run ends
/// does not take the failures counted before it (or its own failed tries) with it.
#[derive(Clone, Default)]
struct Tally {
    pushes: u64,
    failed: u64,
    last_error: Option<String>,
    /// The push under way has failed a try (the error): it is still being retried.
    retrying: Option<String>,
}

/// The queue between the run and the pushing thread: one batch waits at most (the counters are cumulative, so a
/// newer push carries what a skipped one held).
#[derive(Default)]
struct Queue {
    slot: Mutex<(Option<Batch>, bool)>,
    /// Signalled when a batch is put in or taken out, and when the queue closes.
    changed: Condvar,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<Batch>, bool)> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts `batch` in when the slot is free by `until` (at once when None); false when it was not.
    fn put(&self, batch: Batch, until: Option<Instant>) -> bool {
        let mut slot = self.lock();
        while slot.0.is_some() {
            let Some(left) = until.and_then(|u| u.checked_duration_since(Instant::now())) else { return false };
            slot = self.changed.wait_timeout(slot, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        slot.0 = Some(batch);
        self.changed.notify_all();
        true
    }

    /// The next batch, None once the queue is closed and empty.
    fn take(&self) -> Option<Batch> {
        let mut slot = self.lock();
        loop {
            if let Some(b) = slot.0.take() {
                self.changed.notify_all();
                return Some(b);
            }
            if slot.1 {
                return None;
            }
            slot = self.changed.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn close(&self) {
        self.lock().1 = true;
        self.changed.notify_all();
    }
}

/// The pushing thread and its queue.
pub struct Pusher {
    queue: Arc<Queue>,
    /// Sent when the thread ends (received with a bound, so a stalled push is not waited for).
    done: Option<Receiver<()>>,
    /// The pushes so far.
    tally: Arc<Mutex<Tally>>,
    interval: Duration,
    shown: String,
    /// The `--label`s, as label names Prometheus takes, secrets left out.
    labels: Vec<(String, String)>,
    /// Pushes left out because the previous one was still under way.
    skipped: std::sync::atomic::AtomicU64,
    /// The instant of the last push, Unix milliseconds: each push is at least a millisecond later, as a series
    /// takes one sample per instant.
    last_ms: std::sync::atomic::AtomicI64,
    /// When the last step's end began waiting to queue its push: the end of the run waits for the pushes at most
    /// one interval from then, whatever the receiver does.
    ending: Mutex<Option<Instant>>,
    /// Warnings for the terminal, taken by the main thread.
    warnings: Arc<Mutex<Vec<String>>>,
}

impl Pusher {
    pub fn start(plan: &PushPlan, labels: &BTreeMap<String, String>) -> Pusher {
        let queue = Arc::new(Queue::default());
        let (done_tx, done) = std::sync::mpsc::channel();
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let (url, shown, shared) = (plan.url.clone(), plan.shown.clone(), Arc::clone(&warnings));
        let timeout = push_timeout(plan.interval);
        let q = Arc::clone(&queue);
        let tally = Arc::new(Mutex::new(Tally::default()));
        let t = Arc::clone(&tally);
        let started = std::thread::Builder::new()
            .name("hakaru-push".into())
            .spawn(move || {
                send_all(&q, &url, &shown, timeout, &shared, &t);
                let _ = done_tx.send(());
            })
            .is_ok();
        Pusher {
            queue,
            done: started.then_some(done),
            tally,
            interval: plan.interval,
            shown: plan.shown.clone(),
            labels: user_labels(labels),
            skipped: Default::default(),
            last_ms: Default::default(),
            ending: Mutex::new(None),
            warnings,
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Queues the view's series; `last` (a step's end) waits for room, at most one interval, rather than being
    /// skipped at once.
    pub fn push(&self, view: &LiveView, last: bool) {
        if self.done.is_none() {
            return;
        }
        let at = now_ms().max(self.last_ms.load(std::sync::atomic::Ordering::Relaxed) + 1);
        self.last_ms.store(at, std::sync::atomic::Ordering::Relaxed);
        let batch = Batch { series: series(view, &self.labels), timestamp_ms: at };
        let until = last.then(|| {
            let now = Instant::now();
            *self.ending.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
            now + self.interval
        });
        if !self.queue.put(batch, until) {
            self.skipped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Sends what is queued and ends the thread, waiting at most one interval from the last step's end (a
    /// receiver that does not answer never holds the run's end longer); the document's warnings about the pushes.
    pub fn finish(self) -> Vec<String> {
        self.queue.close();
        let since = self.ending.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or_else(Instant::now);
        let left = (since + self.interval).saturating_duration_since(Instant::now());
        let mut out = Vec::new();
        // A thread still sending is left to end with the process (its push has its own timeout).
        let ended = self.done.as_ref().map(|d| d.recv_timeout(left));
        let mut tally = self.tally.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(Err(_)) = ended {
            let why = match &tally.retrying {
                Some(e) => format!("still being retried (last: {e})"),
                None => "the receiver does not answer".to_string(),
            };
            out.push(format!(
                "a push to {} was still under way {} after the load ended ({why}): not waited for; the figures \
                 are all in this document",
                self.shown,
                humantime::format_duration(self.interval)
            ));
            // Its failed tries count as its failure: it has not succeeded by the end.
            if let Some(e) = tally.retrying.take() {
                tally.failed += 1;
                tally.last_error = Some(e);
            }
        }
        if tally.failed > 0 {
            out.push(format!(
                "{} of {} pushes to {} failed (last: {}); the load went on, the figures are all in this document",
                tally.failed,
                tally.pushes,
                self.shown,
                tally.last_error.unwrap_or_default()
            ));
        }
        let skipped = self.skipped.into_inner();
        if skipped > 0 {
            out.push(format!(
                "{skipped} pushes to {} were skipped while the one before was still being sent (the counters \
                 are cumulative: the next push carried them)",
                self.shown
            ));
        }
        out
    }
}

/// The time one push may take, its retries included: the interval, from 2 s (a push across a slow link) to 10 s.
fn push_timeout(interval: Duration) -> Duration {
    interval.clamp(Duration::from_secs(2), MOST_PUSH_TIME)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The pushing thread: each batch sent, retried on a failure that a retry may cure while its time lasts, counted
/// and warned about.
fn send_all(
    queue: &Queue,
    url: &crate::base::target::ParsedUrl,
    shown: &str,
    timeout: Duration,
    warnings: &Mutex<Vec<String>>,
    tally: &Mutex<Tally>,
) {
    let lock = || tally.lock().unwrap_or_else(|p| p.into_inner());
    let head = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n\
                X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
    while let Some(batch) = queue.take() {
        lock().pushes += 1;
        let data = body(&batch.series, batch.timestamp_ms);
        let deadline = Instant::now() + timeout;
        let mut wait = RETRY_WAIT;
        let mut outcome = Err(String::new());
        let mut tries = 0;
        while tries < TRIES {
            tries += 1;
            // Each try within what is left of the push's time: a receiver that never answers costs one timeout.
            let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else { break };
            // A refusal of the data itself (a 4xx but 429) is the same at every try; the rest may pass later.
            let retry;
            (outcome, retry) = match crate::monitor::http_exchange(url, "POST", head, &data, left) {
                Ok((status, _)) if (200..300).contains(&status) => (Ok(()), false),
                Ok((status, answer)) => {
                    (Err(format!("HTTP {status}: {}", quote(&answer))), status >= 500 || status == 429)
                }
                Err(e) => (Err(e), true),
            };
            if let Err(e) = &outcome {
                lock().retrying = Some(crate::base::secrets::scrub_text(e));
            }
            if !retry || tries == TRIES || Instant::now() + wait >= deadline {
                break;
            }
            std::thread::sleep(wait);
            wait *= 2;
        }
        lock().retrying = None;
        if let Err(e) = outcome {
            let e = crate::base::secrets::scrub_text(&e);
            {
                let mut t = lock();
                t.failed += 1;
                t.last_error = Some(e.clone());
            }
            let tried = if tries == 1 { "1 try".to_string() } else { format!("{tries} tries") };
            warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("pushing to {shown} failed after {tried} ({e}); the load goes on"));
        }
    }
}

/// The start of a receiver's answer, on one line.
fn quote(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(answer);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// The `--label`s as Prometheus labels: names made of letters, digits and `_` (others become `_`), a name hakaru
/// gives itself prefixed `label_`, and no label that names a secret (a header or parameter of secrets.rs) or whose
/// value holds one.
fn user_labels(labels: &BTreeMap<String, String>) -> Vec<(String, String)> {
    labels
        .iter()
        .filter(|(k, v)| !crate::base::secrets::is_secret_label(k, v))
        .map(|(k, v)| {
            let mut name: String = k.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || name.starts_with("__") {
                name = format!("label_{name}");
            }
            if OWN_LABELS.contains(&name.as_str()) {
                name = format!("label_{name}");
            }
            (name, v.clone())
        })
        .collect()
}

/// The series of the view now.
fn series(v: &LiveView, user: &[(String, String)]) -> Vec<Series> {
    let mut common: Vec<(String, String)> = user.to_vec();
    for (k, val) in [("run_id", &v.run_id), ("target", &v.target), ("step", &v.step)] {
        common.push((k.into(), crate::base::secrets::scrub_text(val)));
    }
    common.push(("phase".into(), v.phase.name().into()));
    let one = |name: &str, extra: &[(&str, String)], value: f64| {
        let mut labels = common.clone();
        labels.push(("__name__".into(), name.into()));
        labels.extend(extra.iter().map(|(k, x)| (k.to_string(), x.clone())));
        Series { labels, value }
    };
    let mut out = vec![
        one("hakaru_requests_sent_total", &[], v.sent as f64),
        one("hakaru_requests_completed_total", &[], v.completed as f64),
        one("hakaru_requests_failed_total", &[], v.failed as f64),
        one("hakaru_connections_open", &[], v.connections as f64),
    ];
    for (status, n) in &v.status {
        out.push(one("hakaru_responses_total", &[("status", status.to_string())], *n as f64));
    }
    for (kind, n) in &v.errors {
        out.push(one("hakaru_errors_total", &[("kind", kind.key().into())], *n as f64));
    }
    if let Some(p) = v.recent.back() {
        out.push(one("hakaru_sent_per_second", &[], p.sent));
        out.push(one("hakaru_completed_per_second", &[], p.completed));
    }
    for (process, cpu) in [("hakaru", v.own_cpu), ("server", v.server_cpu)] {
        if let Some(cpu) = cpu {
            out.push(one("hakaru_cpu_percent", &[("process", process.into())], cpu));
        }
    }
    let mut histogram = |name: &str, h: &LatencyHistogram| {
        let counts = h.cumulative_counts(&BUCKETS_US);
        for (us, n) in BUCKETS_US.iter().zip(&counts) {
            out.push(one(&format!("{name}_bucket"), &[("le", (*us as f64 / 1e6).to_string())], *n as f64));
        }
        let total = h.count();
        out.push(one(&format!("{name}_bucket"), &[("le", "+Inf".into())], total as f64));
        out.push(one(&format!("{name}_count"), &[], total as f64));
        out.push(one(&format!("{name}_sum"), &[], h.mean() * total as f64 / 1e6));
    };
    histogram("hakaru_latency_seconds", &v.latency);
    match v.events {
        Some("token") => histogram("hakaru_time_to_first_token_seconds", &v.first_event),
        Some(_) => histogram("hakaru_time_to_first_event_seconds", &v.first_event),
        None => {}
    }
    if v.events == Some("token") {
        out.push(one("hakaru_output_tokens_total", &[], v.tokens as f64));
        if let Some(t) = v.recent.back().and_then(|p| p.tokens_per_s) {
            out.push(one("hakaru_output_tokens_per_second", &[], t));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label<'a>(s: &'a Series, name: &str) -> Option<&'a str> {
        s.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn labels_keep_to_prometheus_names_and_leave_secrets_out() {
        let labels = BTreeMap::from([
            ("branch".to_string(), "main".to_string()),
            ("my-label".to_string(), "x".to_string()),
            ("phase".to_string(), "cold".to_string()),
            ("token".to_string(), "abc".to_string()),
            ("authorization".to_string(), "Bearer abc".to_string()),
        ]);
        let got = user_labels(&labels);
        assert_eq!(
            got,
            vec![
                ("branch".to_string(), "main".to_string()),
                ("my_label".to_string(), "x".to_string()),
                ("label_phase".to_string(), "cold".to_string()),
            ]
        );
    }

    #[test]
    fn the_series_carry_the_counts_and_a_cumulative_histogram() {
        let mut v = LiveView::new("r1".into(), "run".into(), "http://127.0.0.1:1/".into());
        v.step = "run".into();
        v.completed = 10;
        v.status.insert(200, 9);
        v.errors.insert(crate::metrics::ErrorKind::Timeout, 1);
        for us in [90, 300, 300, 2_000_000] {
            v.latency.record(us);
        }
        let s = series(&v, &[]);
        let find = |name: &str, extra: Option<(&str, &str)>| {
            s.iter()
                .find(|x| label(x, "__name__") == Some(name) && extra.is_none_or(|(k, val)| label(x, k) == Some(val)))
                .map(|x| x.value)
        };
        assert_eq!(find("hakaru_requests_completed_total", None), Some(10.0));
        assert_eq!(find("hakaru_responses_total", Some(("status", "200"))), Some(9.0));
        assert_eq!(find("hakaru_errors_total", Some(("kind", "timeout"))), Some(1.0));
        assert_eq!(find("hakaru_latency_seconds_bucket", Some(("le", "0.0001"))), Some(1.0));
        assert_eq!(find("hakaru_latency_seconds_bucket", Some(("le", "0.0005"))), Some(3.0));
        assert_eq!(find("hakaru_latency_seconds_bucket", Some(("le", "2.5"))), Some(4.0));
        assert_eq!(find("hakaru_latency_seconds_bucket", Some(("le", "+Inf"))), Some(4.0));
        assert_eq!(find("hakaru_time_to_first_event_seconds_count", None), None, "no events, no such series");
        let one = s.iter().find(|x| label(x, "__name__") == Some("hakaru_latency_seconds_count")).unwrap();
        for (k, want) in [("run_id", "r1"), ("step", "run"), ("phase", "measure"), ("target", "http://127.0.0.1:1/")] {
            assert_eq!(label(one, k), Some(want), "{k}");
        }
    }

    #[test]
    fn a_token_stream_pushes_its_time_to_first_token_and_its_tokens() {
        let mut v = LiveView::new("r1".into(), "run".into(), "http://127.0.0.1:1/".into());
        v.events = Some("token");
        (v.tokens, v.first_event) = (120, LatencyHistogram::new());
        for us in [40_000, 60_000] {
            v.first_event.record(us);
        }
        v.recent.push_back(super::super::Point { tokens_per_s: Some(60.0), ..Default::default() });
        let s = series(&v, &[]);
        let find = |name: &str, le: Option<&str>| {
            s.iter()
                .find(|x| label(x, "__name__") == Some(name) && le.is_none_or(|le| label(x, "le") == Some(le)))
                .map(|x| x.value)
        };
        assert_eq!(find("hakaru_output_tokens_total", None), Some(120.0));
        assert_eq!(find("hakaru_output_tokens_per_second", None), Some(60.0));
        assert_eq!(find("hakaru_time_to_first_token_seconds_bucket", Some("0.05")), Some(1.0));
        assert_eq!(find("hakaru_time_to_first_token_seconds_count", None), Some(2.0));
        assert_eq!(find("hakaru_time_to_first_event_seconds_count", None), None);
    }
}
