//! The result document (`hakaru.result/1`): settings, provenance and one entry per load step, with histograms.
//!
//! Every exporter reads this document and nothing else. Steps are a list from the start so that sweeps and other
//! protocols add entries, not a new format; the schema is `schema/result.schema.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::histogram::REPORTED_PERCENTILES;
use crate::metrics::{StepMetrics, WindowSummary};
use crate::provenance::Provenance;

pub mod events;
pub mod phases;
pub mod quic;
pub use events::EventsReport;
pub use phases::PhasesReport;

pub const SCHEMA: &str = "hakaru.result/1";

/// The settings of a run as the user gave them (after defaults), enough to run it again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The subcommand: run, demo.
    pub command: String,
    pub targets: Vec<String>,
    pub method: String,
    pub headers: Vec<String>,
    pub body_bytes: usize,
    pub connections: usize,
    pub threads: usize,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    /// `closed` (N clients, each waits for its answer) or `open` (a fixed rate).
    pub load_model: String,
    /// Open loop: requests per second asked for in total.
    pub rate: Option<f64>,
    /// Open loop: `uniform` or `poisson`.
    pub arrival: Option<crate::load::Arrival>,
    /// Open loop: `--pace-window` in microseconds: a request left at most half of it before or after its intended
    /// send time (before: from 2026-11-29; until then at most all of it after); absent in a closed loop (and in
    /// documents from before the flag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_window_us: Option<u64>,
    pub keepalive: bool,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    pub seed: u64,
    pub insecure: bool,
    pub patterns: Option<String>,
    /// `-s`: the script that built the requests, with the arguments given to its `init`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// `--data`: the data file whose rows filled the requests' templates, and how they were taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The statuses that count as success (`--ok-status`), e.g. `200-399`.
    pub ok_status: String,
    /// Scale-out: the segment this process ran (`1/3`); null for the whole plan.
    #[serde(default)]
    pub segment: Option<String>,
    /// Scale-out: the plan a segment was split from, so that `merge` can tell segments of different plans apart
    /// (their own connections, requests and rate are their shares). Absent for a whole plan, a complete merge
    /// and documents written before it was recorded (left out rather than null: such documents stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_plan: Option<WholePlan>,
    /// Scale-out: the instant the load was to start (`--start-at`), RFC 3339; null when it started at once.
    #[serde(default)]
    pub start_at: Option<String>,
    /// `--source-address`: the local address connections were opened from (a merged document: each agent's,
    /// comma-separated); null when the system chose.
    #[serde(default)]
    pub source_address: Option<String>,
    /// The Unix socket connections went to (`--unix-socket`, `redis+unix://`; several comma-separated), the URLs'
    /// hosts naming only the Host header; absent over TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,
    /// `--proxy`: the proxies connections went through (their passwords hidden; several comma-separated); absent
    /// without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// `--connect-to`: the rules that pinned URLs' hosts to addresses, as given; left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_to: Vec<String>,
    /// `--max-requests-per-connection`: requests a connection carried before hakaru closed it; absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_connection: Option<u64>,
    /// `--connection-rate`: new connections a second at most; absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_rate: Option<f64>,
    /// The TLS flags given (`--cacert`, `--cert`, `--tls-version`, `--sni`, `--tls-resume`); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSettings>,
    /// Sweeps and capacity searches: what the steps vary and how they run; null for a single run.
    pub sweep: Option<SweepSettings>,
    /// `2` for HTTP/2 (`--http2`); absent for HTTP/1.1 and the key-value protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_version: Option<String>,
    /// HTTP/2: concurrent streams per connection asked for (`--streams`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<usize>,
    /// WebSocket: what a request was (`--ws-mode`: exchange, listen, connect); absent for the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_mode: Option<String>,
    /// A ramp inside the step (`--stages`, `--rate-stages`): what moves and its stages, of the whole plan. Left out
    /// for a fixed load (so the settings of documents without one, and their workload identity, stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<RampSettings>,
    /// `--events`: how answers were read as streams (`sse`, `ndjson`, `chunks`, `tokens`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<String>,
    /// `--events`: the text that ended each answer (`--events-until`; a token stream's `[DONE]`); absent when the
    /// body's end was the answer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_until: Option<String>,
    /// Labels given with `--label key=value` (a bare word is `label=WORD`), to find the result again in the
    /// history; empty when none were given.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// The TLS flags of a run: the files by name (never their contents), the version, the server name, resumption.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsSettings {
    /// `--cacert`: the CA certificates trusted besides the web's roots.
    pub cacert: Option<String>,
    /// `--cert`: the client certificate (mutual TLS).
    pub cert: Option<String>,
    /// `--tls-version`: `1.2` or `1.3`, the one offered; None: both.
    pub version: Option<String>,
    /// `--sni`: the server name sent and checked instead of the URL's host.
    pub sni: Option<String>,
    /// `--tls-resume`: false when every handshake was made full.
    pub resume: bool,
    /// `--0rtt`: HTTP/3 connections that resume a session send their first requests as early data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
}

/// A ramp's stages as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RampSettings {
    /// `clients` (closed loop, `--stages`) or `rate` (open loop, `--rate-stages`).
    pub of: String,
    pub stages: Vec<Stage>,
}

/// One stage of a ramp: the target reached, linearly from the previous stage's (0 before the first), at its end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub duration_s: f64,
    pub target: f64,
}

/// The plan before `--segment I/N` split it: what its N segments add up to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WholePlan {
    pub connections: usize,
    /// `-n`: the requests of every segment together; null for a plan that runs for a time.
    pub requests: Option<u64>,
    /// Open loop: the rate of every segment together; null for a closed loop.
    pub rate: Option<f64>,
}

/// How a sweep (or capacity search) runs its steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepSettings {
    /// `clients`, `rates` or `capacity`.
    pub kind: String,
    /// The client counts or rates of the steps, in order (capacity: the first rate tried).
    pub values: Vec<f64>,
    pub step_duration_s: f64,
    /// Pause between steps.
    pub interval_s: f64,
    /// Load before each step, measured apart and left out of the step's figures.
    pub warmup_s: f64,
    /// Think time of each client after each answer (closed loop), as drnbench's --wait.
    pub wait_s: f64,
    /// Capacity search: the objective, e.g. `p99<50ms`.
    pub slo: Option<String>,
    /// The most failed requests (errors and statuses outside `ok_status`) a step may have and still count,
    /// percent of its requests (`--max-error-rate`).
    pub max_errors_percent: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultDocument {
    pub schema: String,
    pub provenance: Provenance,
    pub settings: Settings,
    /// True when a signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run: the figures cover what ran until then.
    pub interrupted: bool,
    pub steps: Vec<StepResult>,
    /// Everything the reader should know before trusting the numbers.
    pub warnings: Vec<String>,
    /// Sweeps and capacity searches: what the steps show, in figures and in words; null for a single run.
    pub analysis: Option<Analysis>,
    /// `--runs N` (N > 1): the runs (steps `run 1` ...) together; null otherwise. (Read as null from
    /// documents written before it existed.)
    #[serde(default)]
    pub runs: Option<RunsSummary>,
    /// `--threshold`: each gate with the value measured and whether it held; empty without thresholds.
    #[serde(default)]
    pub thresholds: Vec<ThresholdResult>,
    /// `hakaru merge --allow-partial`: the segments (`I/N`) whose documents were missing, so the figures are of the
    /// other agents' load only. Empty when every segment is in, and in every unmerged document (read as empty
    /// from documents written before it existed).
    #[serde(default)]
    pub missing_segments: Vec<String>,
}

/// The same plan run several times back to back (`--runs N`): the spread of the runs' figures and their
/// latency histograms merged exactly (never averaged percentiles).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunsSummary {
    /// Runs asked for.
    pub planned: usize,
    /// Runs that ran to their end: the statistics cover these only.
    pub completed: usize,
    /// The run (1-based) a stop signal cut short: kept as its step, left out of these figures; null otherwise.
    pub partial_run: Option<usize>,
    /// Successes per second, one value per completed run.
    pub ok_per_s: Spread,
    /// p99 latency of the successes, microseconds, one value per completed run.
    pub p99_us: Spread,
    /// Requests, successes and failures of the completed runs together.
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    /// Latency of the successes of every completed run, from their histograms merged.
    pub latency: LatencySummary,
    /// The merged histogram.
    pub histogram: EncodedHistogram,
}

/// The spread of one figure over runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub values: Vec<f64>,
    pub mean: f64,
    /// Sample standard deviation (n - 1); null below two runs.
    pub sd: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// The 95 % confidence interval of the mean (Student's t, n - 1 degrees of freedom); null below two runs.
    pub ci95: Option<[f64; 2]>,
}

impl Spread {
    /// None for no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let s = crate::stats::summarize(values)?;
        Some(Spread {
            values: values.to_vec(),
            mean: s.mean,
            sd: s.sd.is_finite().then_some(s.sd),
            min: s.min,
            max: s.max,
            ci95: crate::stats::mean_ci95(values).map(|(lo, hi)| [lo, hi]),
        })
    }
}

impl RunsSummary {
    /// The summary of `steps` (one per run, in order); `partial_run` is left out of the figures.
    pub fn of(steps: &[StepResult], planned: usize, partial_run: Option<usize>) -> Option<RunsSummary> {
        let done: Vec<&StepResult> =
            steps.iter().enumerate().filter(|(i, _)| Some(i + 1) != partial_run).map(|(_, s)| s).collect();
        let qps: Vec<f64> = done.iter().map(|s| s.throughput.ok_per_s).collect();
        let p99: Vec<f64> = done.iter().map(|s| s.latency.percentile(99.0) as f64).collect();
        let merged = merged_histogram(&done);
        Some(RunsSummary {
            planned,
            completed: done.len(),
            partial_run,
            ok_per_s: Spread::of(&qps)?,
            p99_us: Spread::of(&p99)?,
            requests: done.iter().map(|s| s.requests).sum(),
            ok: done.iter().map(|s| s.ok).sum(),
            failed: done.iter().map(|s| s.failed).sum(),
            latency: LatencySummary::from_histogram(&merged),
            histogram: EncodedHistogram::of(&merged),
        })
    }
}

/// The latency histograms of `steps` added together: exact, whatever their counts.
pub fn merged_histogram(steps: &[&StepResult]) -> crate::metrics::LatencyHistogram {
    let mut merged = crate::metrics::LatencyHistogram::new();
    for s in steps {
        // A document written by hakaru always holds a valid histogram; one that does not adds nothing.
        if let Ok(h) = crate::metrics::LatencyHistogram::from_base64(&s.histogram.data) {
            merged.merge(&h);
        }
    }
    merged
}

/// One `--threshold` as judged on a result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// As given: `p99<50ms`.
    pub threshold: String,
    /// `p99`, `mean`, `max`, `errors`, `qps`.
    pub metric: String,
    /// The value measured, in `unit`; null when there was nothing to measure (no request, no success), which
    /// fails the threshold.
    pub measured: Option<f64>,
    /// The limit, in `unit`.
    pub limit: f64,
    /// `us` (latency), `percent` (errors), `per_s` (qps).
    pub unit: String,
    pub pass: bool,
    /// What it was judged on: `the run`, `3 runs merged`, `all 5 steps merged`.
    pub judged_on: String,
}

/// One load step: a fixed load for a while, and what it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub label: String,
    /// `http` (later `redis`, `memcached`).
    pub protocol: String,
    pub load: StepLoad,
    pub duration_s: f64,
    /// Requests that ended: `ok + failed`.
    pub requests: u64,
    /// Requests answered (any status).
    pub responses: u64,
    /// Requests that ended without an answer (by error kind in `error_kinds`; timeouts are also status 0).
    pub errors: u64,
    /// Answers whose status is in `settings.ok_status`: the successes.
    pub ok: u64,
    /// Requests that failed: answers with another status, and errors.
    pub failed: u64,
    /// Requests still waiting for their answer when the step ended; they are in no other figure.
    pub unfinished: u64,
    pub throughput: Throughput,
    /// Latency of the successes from the intended send time (equal to the send time in a closed loop),
    /// microseconds. Failed requests are in `failed_latency`, not here.
    pub latency: LatencySummary,
    /// Latency of the failed requests (from the intended send time to the failure); null when none failed.
    pub failed_latency: Option<LatencySummary>,
    /// Open loop: latency from the actual send (service time), microseconds; what a closed-loop tool reports.
    pub service: Option<LatencySummary>,
    /// Open loop: the rate asked for and achieved, and the requests sent late.
    pub schedule: Option<ScheduleReport>,
    /// Status code -> count; "0" counts timeouts, as drnbench does.
    pub status: BTreeMap<String, u64>,
    /// The answers counted as failures by their status (codes outside `ok_status`) -> count.
    pub failed_statuses: BTreeMap<String, u64>,
    pub error_kinds: Vec<ErrorCount>,
    pub connections: Connections,
    /// The width of the windows, seconds (`--window`; 1 in documents written before it could change).
    #[serde(default = "one_second")]
    pub window_s: f64,
    /// The step over time, a window after another (the last one may be cut short by the step's end).
    pub windows: Vec<WindowSummary>,
    pub histogram: EncodedHistogram,
    /// hakaru's own CPU during the step.
    pub generator: GeneratorReport,
    /// The watched server processes (`--monitor-pid`, `--monitor-name`); null when none were watched.
    pub server: Option<crate::monitor::ProcessReport>,
    /// `--probe` readings before and after the step.
    pub probes: Vec<crate::monitor::ProbeReading>,
    /// The warm-up before the step, measured apart; null without `--warmup`.
    pub warmup: Option<WarmupSummary>,
    /// Figures per pattern group and per request of the plan (when it has 2 to 20); empty otherwise.
    #[serde(default)]
    pub breakdown: Vec<BreakdownRow>,
    /// The slowest requests of the step, slowest first (at most 10).
    #[serde(default)]
    pub slowest: Vec<SlowRequest>,
    /// The cache hit rate during this step, from the changes of probes of hits and misses (or of hits and
    /// gets/queries); null without such probes. A probed hit rate is the server's since it started.
    #[serde(default)]
    pub hit_rate: Option<f64>,
    /// Scale-out: seconds after `--start-at` this agent's load began (0 when on time); null without it. The step
    /// still counts from that instant, so its windows line up with the other agents'.
    #[serde(default)]
    pub start_late_s: Option<f64>,
    /// A merged document (`hakaru merge`): each agent's share and its own checks; empty otherwise.
    #[serde(default)]
    pub agents: Vec<AgentReport>,
    /// The text of the first failed answer: a Redis or memcached error reply (`NOAUTH Authentication required.`),
    /// an HTTP status and reason (`503 Service Unavailable`), secrets scrubbed; null when none failed so.
    #[serde(default)]
    pub first_error_reply: Option<String>,
    /// HTTP/2's own figures; absent for the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Report>,
    /// gRPC's message figures; absent for the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcReport>,
    /// HTTP/3: QUIC's datagrams, the sends that carried them and the packets lost; absent for the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<quic::QuicReport>,
    /// WebSocket with several messages in flight on a connection or answers paired by id: the answers that
    /// answered no message; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsReport>,
    /// HTTP's phases (connect, TLS handshake, waiting for the first byte, receiving); absent for the key-value
    /// protocols and in documents written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhasesReport>,
    /// `--events`: what the streamed answers held (time to first event, gaps, events per answer, rates; a token
    /// stream's tokens); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsReport>,
    /// The machine's cores during the step and the CPUs the server and hakaru may run on; absent where /proc
    /// could not say (and in documents written before hakaru read them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::monitor::MachineReport>,
}

/// What an HTTP/2 step counts besides requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Http2Report {
    /// `--streams`: concurrent streams per connection asked for.
    pub streams_asked: usize,
    /// The fewest any connection allowed: `streams_asked`, or a server's lower SETTINGS_MAX_CONCURRENT_STREAMS
    /// (0 when no connection got the server's SETTINGS).
    pub streams_used: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server left unprocessed (above a GOAWAY's last stream, REFUSED_STREAM), sent again on another
    /// connection.
    pub retried: u64,
    /// Header blocks (HPACK) written and read, in bytes.
    pub header_bytes_out: u64,
    pub header_bytes_in: u64,
    /// What the header blocks read decode to (names and values, as h2load counts them).
    pub header_bytes_in_decoded: u64,
    /// The share of the decoded response headers HPACK saved on the wire: 1 - in / decoded (h2load's "space
    /// savings"); 0 when nothing was read.
    pub header_savings: f64,
}

impl Http2Report {
    pub fn new(h2: &crate::metrics::H2Counts, streams_asked: usize) -> Http2Report {
        let decoded = h2.header_bytes_in_decoded;
        let savings = if decoded == 0 { 0.0 } else { 1.0 - h2.header_bytes_in as f64 / decoded as f64 };
        Http2Report {
            streams_asked,
            streams_used: h2.streams_used,
            goaways: h2.goaways,
            retried: h2.retried,
            header_bytes_out: h2.header_bytes_out,
            header_bytes_in: h2.header_bytes_in,
            header_bytes_in_decoded: decoded,
            header_savings: (savings * 10_000.0).round() / 10_000.0,
        }
    }

    /// The figures of several agents' parts of one step as one: counts added, the fewest streams any connection
    /// allowed, the header savings of the sums. None when no part has them.
    pub fn merged(parts: &[&Http2Report]) -> Option<Http2Report> {
        let first = parts.first()?;
        let mut h2 = crate::metrics::H2Counts::default();
        for p in parts {
            h2.merge(&crate::metrics::H2Counts {
                header_bytes_out: p.header_bytes_out,
                header_bytes_in: p.header_bytes_in,
                header_bytes_in_decoded: p.header_bytes_in_decoded,
                goaways: p.goaways,
                retried: p.retried,
                streams_used: p.streams_used,
                ..Default::default()
            });
        }
        Some(Http2Report::new(&h2, first.streams_asked))
    }
}

/// What a gRPC step counts besides calls: the messages of streaming calls (1 each way for a unary call).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpcReport {
    /// Messages each call sends: 1, or `--stream-messages` of a client-streaming or bidirectional method.
    pub messages_sent_per_call: u64,
    /// Whole messages read in the answers of the calls that ended (succeeded or failed).
    pub messages_received: u64,
    /// `messages_received` per call that ended.
    pub messages_received_per_call: f64,
    /// `messages_received` per second of the step.
    pub messages_received_per_s: f64,
}

/// WebSocket's figures with `--in-flight` or `--match-field`: the answers no message took, by why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WsReport {
    /// `--in-flight`: messages awaiting their answers on one connection at once.
    pub in_flight: usize,
    /// `--match-field`: the JSON pointer answers were paired by; null when taken in order.
    pub match_field: Option<String>,
    /// Answers without an id at the pointer (not JSON, or nothing there).
    pub unmatched_no_id: u64,
    /// Answers whose id no message in flight had (late after a timeout, or never sent), or, taken in order, that
    /// came while none was in flight.
    pub unmatched_not_in_flight: u64,
    /// Listen mode: the messages each connection got a second (the step's answers a second over the connections
    /// open at once); absent in the other modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_per_connection_per_s: Option<f64>,
    /// `--stamp-field` (listen mode): the JSON pointer of the send time pushed messages carry; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp_field: Option<String>,
    /// Pushed messages' fan-out delays, from the send time they carry to their arrival (microseconds); absent when
    /// no message carried one, or without `--stamp-field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<phases::Phase>,
    /// Messages without a send time at the pointer, and those whose send time was after their arrival (the
    /// sender's clock ahead of this one's): neither is in `fan_out`. Absent without `--stamp-field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamps_missing: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamps_ahead: Option<u64>,
}

impl WsReport {
    /// Several agents' parts of one step as one: the counts added.
    pub fn merged(parts: &[&WsReport]) -> Option<WsReport> {
        let first = parts.first()?;
        let stamped = first.stamp_field.is_some();
        let mut delays = crate::metrics::LatencyHistogram::new();
        for h in parts.iter().filter_map(|p| p.fan_out.as_ref()) {
            // A part's histogram that does not decode was refused when its document was read (`inputs`).
            if let Ok(h) = crate::metrics::LatencyHistogram::from_base64(&h.histogram.data) {
                delays.merge(&h);
            }
        }
        let sum = |f: fn(&WsReport) -> Option<u64>| stamped.then(|| parts.iter().filter_map(|p| f(p)).sum());
        Some(WsReport {
            unmatched_no_id: parts.iter().map(|p| p.unmatched_no_id).sum(),
            unmatched_not_in_flight: parts.iter().map(|p| p.unmatched_not_in_flight).sum(),
            fan_out: phases::Phase::of(&delays),
            stamps_missing: sum(|p| p.stamps_missing),
            stamps_ahead: sum(|p| p.stamps_ahead),
            ..(*first).clone()
        })
    }

    /// `--stamp-field`'s figures of a step: the delays' summary and histogram, the messages without or ahead.
    pub fn with_fan_out(mut self, stamp_field: Option<&str>, f: &crate::metrics::WsFanOut) -> WsReport {
        if let Some(pointer) = stamp_field {
            self.stamp_field = Some(pointer.to_string());
            self.fan_out = phases::Phase::of(&f.delay);
            (self.stamps_missing, self.stamps_ahead) = (Some(f.missing), Some(f.ahead));
        }
        self
    }

    /// The text summary's line of fan-out delays, with `--stamp-field`.
    pub fn fan_out_line(&self) -> Option<String> {
        let pointer = self.stamp_field.as_deref()?;
        let (missing, ahead) = (self.stamps_missing.unwrap_or(0), self.stamps_ahead.unwrap_or(0));
        let figures = match &self.fan_out {
            Some(p) => {
                let l = &p.latency;
                let us = |v: u64| crate::units::format_micros(v as f64);
                let at = |q: &str| l.percentiles.get(q).map_or("-".to_string(), |v| us(*v));
                format!("p50 {}  p99 {}  max {} ({} messages)", at("p50"), at("p99"), us(l.max), l.count)
            }
            None => "no message carried a send time".to_string(),
        };
        Some(format!(
            "fan-out      {figures}; from the send time at {pointer}; {missing} without one, {ahead} stamped ahead of \
             this clock"
        ))
    }
}

impl GrpcReport {
    pub fn new(sent_per_call: u64, received: u64, calls: u64, seconds: f64) -> GrpcReport {
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        GrpcReport {
            messages_sent_per_call: sent_per_call,
            messages_received: received,
            messages_received_per_call: round(if calls == 0 { 0.0 } else { received as f64 / calls as f64 }),
            messages_received_per_s: round(received as f64 / seconds.max(1e-9)),
        }
    }

    /// Several agents' parts of one step as one: messages added, over the merged step's calls and seconds.
    pub fn merged(parts: &[&GrpcReport], calls: u64, seconds: f64) -> Option<GrpcReport> {
        let first = parts.first()?;
        let received = parts.iter().map(|p| p.messages_received).sum();
        Some(GrpcReport::new(first.messages_sent_per_call, received, calls, seconds))
    }
}

/// One agent's part of a merged step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    /// Its segment, `1/3`.
    pub segment: String,
    pub hostname: String,
    pub requests: u64,
    pub ok: u64,
    /// Its own CPU: a saturated agent measured itself as much as the target.
    pub generator: GeneratorReport,
    /// The server it watched, if any.
    pub server: Option<crate::monitor::ProcessReport>,
    pub start_late_s: Option<f64>,
}

/// One pattern group's or one request's figures within a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownRow {
    /// `group` (a pattern group) or `request` (one request of the plan).
    pub kind: String,
    /// The group's name, or the request (`GET /path`).
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    /// Successes per second of the step.
    pub ok_per_s: f64,
    /// Latency of the successes, microseconds (from a coarse histogram: about 1 % precision).
    pub mean_us: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Key-value operations: p99.9, values returned, misses, and answers the workload expected from its random
    /// state (an add on a key that exists), counted among the successes.
    #[serde(default)]
    pub p999_us: Option<u64>,
    #[serde(default)]
    pub hits: Option<u64>,
    #[serde(default)]
    pub misses: Option<u64>,
    #[serde(default)]
    pub expected: Option<u64>,
}

/// One of the slowest requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowRequest {
    /// `GET /path`.
    pub request: String,
    /// The answer's status; 0 when the request ended with an error.
    pub status: u16,
    /// The error's kind, when it ended with one; null otherwise.
    pub error: Option<String>,
    /// Microseconds from its intended send time.
    pub latency_us: u64,
    /// A key-value request's command as sent (`GET`, `HGETALL`, memcached's `get`) and its key (`hakaru:000123`);
    /// absent for HTTP (the request names it) and the key for a command without one (and for `AUTH`). Left out
    /// rather than null, so HTTP documents stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl SlowRequest {
    /// How the text names it: the request (`GET /path`), or a key-value op with its key (`GET hakaru:000123`),
    /// and the command sent when the op's name is another (`READ: HGETALL user6284`).
    pub fn shown(&self) -> String {
        let Some(command) = &self.command else {
            return self.request.clone();
        };
        // A template's name (`SET __key__ __data__`) starts with its command: its first word is enough.
        let name = self.request.split(' ').next().unwrap_or_default();
        let head =
            if name.eq_ignore_ascii_case(command) { name.to_string() } else { format!("{}: {command}", self.request) };
        match &self.key {
            Some(key) => format!("{head} {key}"),
            None => head,
        }
    }
}

/// hakaru's own CPU use during a step: above 90 % of its cores it may be the bottleneck itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorReport {
    /// 100 = one core fully busy.
    pub cpu_percent: f64,
    pub cores: usize,
    pub saturated: bool,
    /// `-s`: the share of the load threads' CPU spent in the script's functions (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_percent: Option<f64>,
}

/// The figures of a warm-up, kept apart from its step's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarmupSummary {
    pub duration_s: f64,
    pub requests: u64,
    pub requests_per_s: f64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepLoad {
    pub model: String,
    pub connections: usize,
    pub threads: usize,
    /// Open loop: requests per second asked for.
    pub rate: Option<f64>,
}

/// How well an open-loop step kept its schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleReport {
    pub target_rate: f64,
    /// Requests whose send began, per second of the step: the rate the server was offered.
    pub achieved_rate: f64,
    /// Requests that ended (answered or failed) per second of the step; below the achieved rate when answers
    /// were still due at the end.
    pub completed_rate: f64,
    /// Requests sent more than 1 ms after their intended time: they could not be sent on time.
    pub late: u64,
    /// The largest delay between intended and actual send, microseconds.
    pub max_lag_us: u64,
    /// Of the `late` requests, those that fell due while every connection was busy and `-c` allowed no more
    /// (counted, as `late`, among the requests that ended: never more than `late`).
    pub starved: u64,
    /// Times the pacers' timers woke a load thread to send (sent / wakeups: requests per wake-up); absent in
    /// documents from before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Requests that ended (successes and failures) per second.
    pub requests_per_s: f64,
    /// Successes per second: the throughput that counts.
    pub ok_per_s: f64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bytes_in_per_s: f64,
    pub bytes_out_per_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub unit: String,
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub max: u64,
    /// "p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99" -> microseconds.
    pub percentiles: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorCount {
    pub kind: String,
    pub count: u64,
    pub sample: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Connections {
    pub asked: usize,
    /// Most connections open at once.
    pub max_open: u64,
    /// TCP connections established in all.
    pub opened: u64,
    /// Connections the server closed (Connection: close, idle close) that hakaru reopened.
    pub reconnects: u64,
    /// Connections hakaru closed: after `--max-requests-per-connection` requests, or after an answer that ended at
    /// its end event before its body did (`--events`) (left out when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub closed_by_hakaru: u64,
    /// HTTP/2: most connections at once that a GOAWAY was ending while they finished their streams, beside the
    /// new ones opened in their place (not in `max_open`, which keeps to `-c`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_handing_over: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistogram {
    /// `hdrhistogram-v2+base64`.
    pub encoding: String,
    pub unit: String,
    pub data: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
/// What a sweep shows (computed by the analysis module), as the document records it.
pub struct Analysis {
    /// What the steps vary: `clients` or `rate`.
    pub axis: String,
    /// The highest throughput of successes of any step that did not fail too often, requests per second.
    pub peak_rps: f64,
    /// The client count (or rate) of that step.
    pub peak_at: f64,
    /// The first client count (or rate) whose throughput is within 10 % of the peak.
    pub plateau_from: Option<f64>,
    /// The last client count (or rate) before mean latency climbs 25 % above the lowest; null when it never does.
    pub knee_mean: Option<f64>,
    /// The same for p99 latency.
    pub knee_p99: Option<f64>,
    /// The first client count (or rate) where more than `max_errors_percent` of the requests failed; null when
    /// none did. Such steps count in no peak, plateau or knee.
    pub failing_from: Option<f64>,
    /// `server` (its CPU, or its busiest thread's, was saturated), `one_core` (it used one core of several: its
    /// limit if single-threaded), `generator` (hakaru's CPU was saturated), `shared_cpu` (neither alone, but the
    /// cores both may run on were full), `busy_machine` (those cores full, a quarter with other programs' work),
    /// `elsewhere` (neither was),
    /// `not_reached` (throughput still grew at the last step: no limit was reached), `unknown` (the server was not
    /// watched, or a sweep of fewer than 3 steps showed neither it nor hakaru CPU-bound), or `failing` (every step
    /// failed too often to analyse).
    pub bottleneck: String,
    /// Capacity search: the highest rate that met the objective.
    pub capacity: Option<CapacityAnswer>,
    /// The findings as sentences.
    pub summary: Vec<String>,
}

/// The answer of a capacity search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityAnswer {
    pub slo: String,
    pub max_errors_percent: f64,
    /// The highest rate tried that met the objective; null when none did.
    pub rate: Option<f64>,
    /// The lowest rate tried that did not; null when every rate met it.
    pub first_failing_rate: Option<f64>,
}

impl EncodedHistogram {
    pub fn of(h: &crate::metrics::LatencyHistogram) -> Self {
        Self { encoding: "hdrhistogram-v2+base64".into(), unit: "us".into(), data: h.to_base64() }
    }
}

/// The key of a percentile: `p50`, `p99.9`.
pub fn percentile_key(p: f64) -> String {
    format!("p{p}")
}

impl LatencySummary {
    pub fn from_histogram(h: &crate::metrics::LatencyHistogram) -> Self {
        Self {
            unit: "us".into(),
            count: h.count(),
            min: h.min(),
            mean: round3(h.mean()),
            stdev: round3(h.stdev()),
            max: h.max(),
            percentiles: REPORTED_PERCENTILES.iter().map(|&p| (percentile_key(p), h.percentile(p))).collect(),
        }
    }

    pub fn percentile(&self, p: f64) -> u64 {
        self.percentiles.get(&percentile_key(p)).copied().unwrap_or(0)
    }
}

fn one_second() -> f64 {
    1.0
}

fn round3(x: f64) -> f64 {
    if x.is_finite() { (x * 1000.0).round() / 1000.0 } else { 0.0 }
}

impl StepResult {
    /// Builds the step entry from merged metrics.
    pub fn from_metrics(
        label: &str,
        load: StepLoad,
        m: &StepMetrics,
        windows: Vec<WindowSummary>,
        duration: std::time::Duration,
    ) -> Self {
        let secs = duration.as_secs_f64().max(1e-9);
        let errors = m.errors.total();
        let failed = m.failed();
        Self {
            label: label.to_string(),
            protocol: "http".into(),
            duration_s: (secs * 1e6).round() / 1e6,
            requests: m.requests,
            responses: m.requests - errors,
            errors,
            ok: m.requests - failed,
            failed,
            unfinished: m.sent.saturating_sub(m.requests),
            throughput: Throughput {
                requests_per_s: round3(m.requests as f64 / secs),
                ok_per_s: round3((m.requests - failed) as f64 / secs),
                bytes_in: m.bytes_in,
                bytes_out: m.bytes_out,
                bytes_in_per_s: round3(m.bytes_in as f64 / secs),
                bytes_out_per_s: round3(m.bytes_out as f64 / secs),
            },
            latency: LatencySummary::from_histogram(&m.latency),
            failed_latency: (failed > 0).then(|| LatencySummary::from_histogram(&m.failed_latency)),
            service: load.rate.map(|_| LatencySummary::from_histogram(&m.service)),
            schedule: load.rate.map(|target_rate| ScheduleReport {
                target_rate,
                achieved_rate: round3(m.sent as f64 / secs),
                completed_rate: round3(m.requests as f64 / secs),
                late: m.late,
                max_lag_us: m.max_lag_us,
                starved: m.starved,
                wakeups: Some(m.pacer_wakeups),
            }),
            status: m.status_counts().into_iter().map(|(s, c)| (s.to_string(), c)).collect(),
            failed_statuses: m.failed_by_status.iter().map(|(s, c)| (s.to_string(), *c)).collect(),
            error_kinds: m
                .errors
                .seen()
                .map(|(k, c, s)| ErrorCount { kind: k.key().into(), count: c, sample: s.into() })
                .collect(),
            connections: Connections {
                asked: load.connections,
                max_open: m.max_open,
                opened: m.connects,
                reconnects: m.reconnects,
                closed_by_hakaru: m.closed_by_hakaru,
                max_handing_over: m.max_handing_over,
            },
            load,
            window_s: 1.0,
            windows,
            histogram: EncodedHistogram::of(&m.latency),
            generator: GeneratorReport::default(),
            server: None,
            probes: Vec::new(),
            warmup: None,
            breakdown: Vec::new(),
            slowest: Vec::new(),
            hit_rate: None,
            start_late_s: None,
            agents: Vec::new(),
            first_error_reply: m.first_error_reply.clone(),
            http2: None,
            grpc: None,
            quic: None,
            websocket: None,
            phases: PhasesReport::of(&m.phases),
            events: EventsReport::of(&m.events, secs),
            machine: None,
        }
    }

    /// The hit rate during the step from its probes' changes: hits / (hits + misses), or hits / gets when the
    /// server counts gets (droonga-http-server's nHits and nGets) or queries. None without both probes, or
    /// when nothing was asked of the cache during the step.
    pub fn hit_rate_from_probes(&self) -> Option<f64> {
        let delta = |words: &[&str]| {
            self.probes
                .iter()
                .find(|p| {
                    let n = p.name.to_ascii_lowercase();
                    words.iter().any(|w| n.ends_with(w)) && !n.contains("rate") && !n.contains("ratio")
                })?
                .delta
        };
        let hits = delta(&["hits", "nhits"])?;
        let total = match delta(&["misses", "nmisses"]) {
            Some(misses) => hits + misses,
            None => delta(&["gets", "ngets", "queries", "n_queries"])?,
        };
        (total > 0.0).then(|| (hits / total).clamp(0.0, 1.0))
    }

    /// Adds the figures per group and per request, and the slowest requests: `labels` names the plan's requests,
    /// `groups` its pattern groups (a key-value workload's operations, with their hits and misses when `kv`).
    /// `label`: what the request of that index is, for people.
    pub fn add_details(&mut self, m: &StepMetrics, label: &dyn Fn(usize) -> String, groups: &[String], kv: bool) {
        let secs = self.duration_s.max(1e-9);
        let row = |kind: &str, name: &str, b: &crate::metrics::Breakdown| BreakdownRow {
            kind: kind.into(),
            name: name.into(),
            requests: b.ok + b.failed,
            ok: b.ok,
            failed: b.failed,
            ok_per_s: round3(b.ok as f64 / secs),
            mean_us: round3(b.latency.mean()),
            p50_us: b.latency.percentile(50.0),
            p99_us: b.latency.percentile(99.0),
            p999_us: kv.then(|| b.latency.percentile(99.9)),
            hits: kv.then_some(b.hits),
            misses: kv.then_some(b.misses),
            expected: kv.then_some(b.expected),
        };
        self.breakdown = groups
            .iter()
            .zip(&m.by_group)
            .map(|(name, b)| row("group", name, b))
            .chain(m.by_request.iter().enumerate().map(|(spec, b)| row("request", &label(spec), b)))
            .collect();
        self.slowest = m
            .slowest
            .iter()
            .map(|s| SlowRequest {
                request: label(s.spec),
                status: s.status,
                error: s.error.map(|k| k.key().to_string()),
                latency_us: s.latency_us,
                command: s.key.as_ref().map(|k| k.command.clone()),
                key: s.key.as_ref().and_then(|k| k.key.clone()),
            })
            .collect();
    }

    /// The step's windows, to be read for what the totals do not say (worst window, drift, stalls).
    pub fn timeline(&self) -> crate::metrics::timeline::Timeline<'_> {
        crate::metrics::timeline::Timeline { windows: &self.windows, width: self.window_s, duration: self.duration_s }
    }

    /// Failed requests, percent of those that ended.
    pub fn failed_percent(&self) -> f64 {
        100.0 * self.failed as f64 / self.requests.max(1) as f64
    }

    /// What the failures were, e.g. `status 503: 10, reset: 2` (statuses outside `ok_status`, then error kinds).
    pub fn failure_mix(&self) -> String {
        let mut parts: Vec<String> =
            self.failed_statuses.iter().map(|(code, n)| format!("status {code}: {n}")).collect();
        parts.extend(self.error_kinds.iter().map(|e| format!("{}: {}", e.kind, e.count)));
        parts.join(", ")
    }

    /// Whether the machine (a core the server and hakaru shared, or other programs' work) limited this step.
    pub fn machine_limit(&self) -> Option<crate::monitor::MachineLimit> {
        self.machine.as_ref()?.limit(self.server.as_ref()?.cpu_percent_mean)
    }

    /// The step's warnings prefixed with its label, for documents with several steps.
    pub fn labelled_warnings(&self, keepalive: bool) -> Vec<String> {
        self.warnings(keepalive).into_iter().map(|w| format!("{}: {w}", self.label)).collect()
    }

    /// Things a reader must know about this step before trusting it (without the step's label).
    pub fn warnings(&self, keepalive: bool) -> Vec<String> {
        let mut w = Vec::new();
        // Only when some connection worked: when none did, the errors say why and this would be noise.
        // An open loop opens only the connections it needs; a closed loop should have had them all.
        let closed = self.schedule.is_none();
        if closed && self.connections.max_open < self.connections.asked as u64 && keepalive && self.responses > 0 {
            w.push(format!(
                "only {} of {} connections were open at once; the load was lower than asked",
                self.connections.max_open, self.connections.asked
            ));
        }
        if let Some(text) = self.first_error_reply.as_ref().filter(|_| self.failed > 0) {
            w.push(format!("the server's first error reply: {text}"));
        }
        if self.failed > 0 && self.ok > 0 {
            w.push(format!(
                "{} of {} requests failed ({:.2} %: {}); the latency figures are those of the {} successes",
                self.failed,
                self.requests,
                self.failed_percent(),
                self.failure_mix(),
                self.ok
            ));
        }
        let timeline = self.timeline();
        w.extend(timeline.stall_warnings());
        w.extend(timeline.drift());
        let g = self.generator;
        let check = crate::monitor::SelfCheck { cpu_percent: g.cpu_percent, cores: g.cores, saturated: g.saturated };
        w.extend(check.warning());
        w.extend(self.machine_limit().map(|l| l.warning()));
        if let Some(share) = g.script_percent.filter(|s| g.saturated && *s >= 50.0) {
            w.push(format!(
                "building requests (the script or the templates) took {share:.0} % of hakaru's CPU, which was \
                 saturated: it limits the rate; give hakaru more threads (-t), or build fixed requests once in init()"
            ));
        }
        for a in self.agents.iter().filter(|a| a.generator.saturated) {
            w.push(format!(
                "agent {} ({}) used {:.0} % of its {} core(s): it may have measured itself as much as the target",
                a.segment, a.hostname, a.generator.cpu_percent, a.generator.cores
            ));
        }
        if let Some(late) = self.start_late_s.filter(|l| *l >= 0.05) {
            w.push(format!(
                "this agent started {late:.3} s after --start-at: its first {late:.3} s are missing from its figures"
            ));
        }
        if let Some(s) = &self.schedule {
            // In an open loop, answers still due at the end are the overload showing: say how many.
            if self.unfinished as f64 > 0.01 * self.requests as f64 {
                w.push(format!(
                    "{} requests were still waiting for an answer when the step ended; they are in no figure \
                     (the server is overloaded at this rate, or the step is too short)",
                    self.unfinished
                ));
            }
            if s.late > 0 {
                let pct = 100.0 * s.late as f64 / self.requests.max(1) as f64;
                // Only when hakaru counted a request due with every connection busy and -c reached: late
                // requests from timer jitter or a slow server with spare connections are not fixed by -c.
                let busy = if let Some(h2) = self.http2.as_ref().filter(|_| s.starved > 0) {
                    // HTTP/2: every stream of every connection was busy.
                    format!(
                        "; {} of those {} because all {} streams ({} connections x {}) were busy when they fell due: \
                         raise -c or --streams",
                        s.starved,
                        s.late,
                        self.connections.asked * h2.streams_asked,
                        self.connections.asked,
                        h2.streams_asked
                    )
                } else if let Some(ws) = self.websocket.as_ref().filter(|_| s.starved > 0) {
                    // WebSocket --in-flight: every message slot of every connection was busy.
                    format!(
                        "; {} of those {} because all {} messages in flight ({} connections x {}) were busy when they \
                         fell due: raise -c or --in-flight",
                        s.starved,
                        s.late,
                        self.connections.asked * ws.in_flight,
                        self.connections.asked,
                        ws.in_flight
                    )
                } else if s.starved > 0 {
                    format!(
                        "; {} of those {} because {} busy when they fell due: raise -c",
                        s.starved,
                        s.late,
                        if self.connections.asked == 1 {
                            "the 1 connection was".to_string()
                        } else {
                            format!("all {} connections were", self.connections.asked)
                        }
                    )
                } else {
                    String::new()
                };
                w.push(format!(
                    "{} of the {} requests that ended ({pct:.2} %) left more than 1 ms after their intended time (worst {} \
                     late){busy}; their latency counts from the intended time",
                    s.late,
                    self.requests,
                    crate::units::format_micros(s.max_lag_us as f64)
                ));
            }
            if s.achieved_rate < 0.99 * s.target_rate {
                w.push(format!(
                    "the rate asked was {:.1} req/s but {:.1} req/s was achieved",
                    s.target_rate, s.achieved_rate
                ));
            }
        }
        if self.requests == 0 && self.unfinished == 0 {
            // Nothing was sent (the rows of `--data-order unique` had run out, or the step was cut before its first
            // request): the target is not to blame.
            w.push("no request was sent in this step; there are no figures".into());
        } else if self.requests == 0 {
            // A server that accepts and never answers: nothing was measured, and the output must say so.
            w.push(format!(
                "no request completed ({} still waiting when the step ended); there are no figures: the target \
                 accepted {} connection(s) and answered nothing in time",
                self.unfinished, self.connections.opened
            ));
        } else if self.responses == 0 {
            w.push("no request got an answer; there are no latency figures".into());
        } else if self.requests > 0 && self.ok == 0 {
            w.push(format!("no request succeeded ({}); there are no latency figures of successes", self.failure_mix()));
        }
        w
    }
}

/// A one-second step of successes: `(count, microseconds)` pairs (for tests of what reads steps).
#[cfg(test)]
pub(crate) fn step_of(latencies: &[(u64, u64)]) -> StepResult {
    let t = std::time::Instant::now();
    let mut m = StepMetrics::new();
    for &(count, us) in latencies {
        for _ in 0..count {
            m.record_response(200, true, t, t, t + std::time::Duration::from_micros(us));
        }
    }
    let load = StepLoad { rate: None, model: "closed".into(), connections: 1, threads: 1 };
    StepResult::from_metrics("run", load, &m, vec![], std::time::Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_step_that_sent_nothing_blames_no_target() {
        let mut step = step_of(&[]);
        step.connections.opened = 2;
        let w = step.warnings(true);
        assert!(w.contains(&"no request was sent in this step; there are no figures".to_string()), "{w:?}");
        assert!(!w.iter().any(|w| w.contains("the target accepted")), "{w:?}");
        step.unfinished = 2;
        let w = step.warnings(true);
        assert!(w.iter().any(|w| w.contains("2 still waiting") && w.contains("accepted 2 connection(s)")), "{w:?}");
    }

    fn reading(name: &str, delta: f64) -> crate::monitor::ProbeReading {
        crate::monitor::ProbeReading {
            name: name.into(),
            spec: String::new(),
            before: None,
            after: None,
            delta: Some(delta),
            error: None,
        }
    }

    #[test]
    fn a_slow_key_value_op_is_shown_with_its_key_and_the_command_when_its_name_is_another() {
        let slow = |request: &str, command: Option<&str>, key: Option<&str>| {
            SlowRequest {
                request: request.into(),
                status: 200,
                error: None,
                latency_us: 1,
                command: command.map(String::from),
                key: key.map(String::from),
            }
            .shown()
        };
        assert_eq!(slow("GET /path", None, None), "GET /path");
        assert_eq!(slow("GET", Some("get"), Some("hakaru:000123")), "GET hakaru:000123");
        assert_eq!(slow("SET __key__ __data__", Some("SET"), Some("k")), "SET k");
        assert_eq!(slow("READ", Some("HGETALL"), Some("user42")), "READ: HGETALL user42");
        assert_eq!(slow("PING", Some("PING"), None), "PING");
        assert_eq!(slow("AUTH __key__", Some("AUTH"), None), "AUTH");
    }

    #[test]
    fn building_requests_is_named_the_limit_only_when_hakaru_was_saturated_and_it_took_half() {
        let load = StepLoad { rate: None, model: "closed".into(), connections: 1, threads: 1 };
        let mut s = StepResult::from_metrics("s", load, &StepMetrics::new(), vec![], Duration::from_secs(1));
        let limit = |s: &StepResult| s.warnings(true).iter().any(|w| w.contains("it limits the rate"));
        s.generator = GeneratorReport { cpu_percent: 99.0, cores: 1, saturated: true, script_percent: Some(62.0) };
        assert!(limit(&s), "{:?}", s.warnings(true));
        s.generator.script_percent = Some(40.0);
        assert!(!limit(&s));
        s.generator = GeneratorReport { cpu_percent: 30.0, cores: 1, saturated: false, script_percent: Some(90.0) };
        assert!(!limit(&s));
    }

    #[test]
    fn a_steps_hit_rate_comes_from_the_changes_of_hits_and_misses_or_gets() {
        let load = StepLoad { rate: None, model: "closed".into(), connections: 1, threads: 1 };
        let mut s = StepResult::from_metrics("s", load, &StepMetrics::new(), vec![], Duration::from_secs(1));
        assert_eq!(s.hit_rate_from_probes(), None);
        // hakaru serve's /status: cache_hits and cache_misses; the cumulative rate probe is not used.
        s.probes =
            vec![reading("cache_hit_rate", 0.02), reading("cache_hits", 2034.0), reading("cache_misses", 2276.0)];
        let r = s.hit_rate_from_probes().unwrap();
        assert!((r - 2034.0 / 4310.0).abs() < 1e-12, "{r}");
        // droonga-http-server's /statistics/cache: nHits and nGets.
        s.probes = vec![reading("hitRatio", 1.0), reading("nHits", 30.0), reading("nGets", 120.0)];
        assert_eq!(s.hit_rate_from_probes(), Some(0.25));
        // Nothing asked of the cache during the step: no rate.
        s.probes = vec![reading("cache_hits", 0.0), reading("cache_misses", 0.0)];
        assert_eq!(s.hit_rate_from_probes(), None);
    }

    #[test]
    fn runs_are_summed_from_merged_histograms_never_averaged_percentiles() {
        // The reference example: run 1 has 1000 answers at 1 ms (p99 1 ms), run 2 has 980 at 1 ms and 20 at
        // 200 ms (p99 200 ms). The mean of the p99s is 100.5 ms; the p99 of all 2000 answers is 1 ms.
        let steps = [step_of(&[(1000, 1000)]), step_of(&[(980, 1000), (20, 200_000)])];
        let r = RunsSummary::of(&steps, 2, None).unwrap();
        let p99s = [&steps[0], &steps[1]].map(|s| s.latency.percentile(99.0) as f64);
        assert_eq!(r.p99_us.values, p99s);
        assert!((p99s[0] - 1000.0).abs() < 2.0 && (p99s[1] - 200_000.0).abs() < 200.0, "{p99s:?}");
        assert!((r.p99_us.mean - 100_500.0).abs() < 100.0, "{}", r.p99_us.mean);
        assert_eq!(r.latency.count, 2000);
        assert_eq!(r.latency.percentile(99.0), steps[0].latency.percentile(99.0), "the pooled p99 is 1 ms");
        assert_eq!(r.requests, 2000);
        assert_eq!(r.ok_per_s.values, [1000.0, 1000.0]);
        assert_eq!(r.ok_per_s.sd, Some(0.0));
        // A run cut short is kept as a step but left out of the figures.
        let r = RunsSummary::of(&steps, 3, Some(2)).unwrap();
        assert_eq!((r.completed, r.requests, r.latency.max), (1, 1000, steps[0].latency.max));
        assert_eq!(r.ok_per_s.ci95, None);
    }

    #[test]
    fn a_step_reports_rates_percentiles_and_status_keys() {
        let mut m = StepMetrics::new();
        let t = Instant::now();
        for i in 1..=100u64 {
            m.record_response(200, true, t, t, t + Duration::from_micros(i * 100));
        }
        m.record_error(crate::metrics::ErrorKind::Timeout, || "timed out".into());
        let load = StepLoad { rate: None, model: "closed".into(), connections: 10, threads: 1 };
        let s = StepResult::from_metrics("run", load, &m, vec![], Duration::from_secs(2));
        assert_eq!(s.requests, 101);
        assert_eq!(s.responses, 100);
        assert_eq!(s.throughput.requests_per_s, 50.5);
        assert_eq!(s.status.get("0"), Some(&1));
        assert_eq!(s.status.get("200"), Some(&100));
        assert!((s.latency.percentile(50.0) as i64 - 5000).abs() < 10);
        assert_eq!(s.error_kinds[0].kind, "timeout");
        let w = s.warnings(true);
        assert!(w.iter().any(|w| w.contains("1 of 101 requests failed (0.99 %: timeout: 1)")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("only 0 of 10 connections")), "{w:?}");
    }
}
