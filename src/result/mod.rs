//! The result document (`hakaru.result/1`): settings, provenance and one entry per load step, with histograms.
//!
//! Every exporter reads this document and nothing else. Steps are a list from the start so that sweeps and other
//! protocols add entries, not a new format; the schema is `schema/result.schema.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::histogram::REPORTED_PERCENTILES;
use crate::metrics::{StepMetrics, WindowSummary};
use crate::result::provenance::Provenance;
pub use protocols::*;

pub mod events;
pub mod phases;
mod protocols;
pub mod provenance;
pub mod quic;
mod step;
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
    /// Open loop: `uniform`, `poisson` or `gamma`.
    pub arrival: Option<crate::base::load::Arrival>,
    /// A gamma's shape (`--burstiness`): 1 is Poisson, below 1 burstier; absent for the other arrivals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    /// Open loop: `--pace-window` in microseconds: a request left at most half of it before or after its intended
    /// send time (before: from 2026-11-29; until then at most all of it after); absent in a closed loop (and in
    /// documents from before the flag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_window_us: Option<u64>,
    pub keepalive: bool,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    /// `--graceful-stop`, seconds, when given (else a timed step's answers in flight get `timeout_s` after its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_stop_s: Option<f64>,
    pub seed: u64,
    pub insecure: bool,
    pub patterns: Option<String>,
    /// `-s`: the script that built the requests, with the arguments given to its `init`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// `--data`: the data file whose rows filled the requests' templates, and how they were taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// `hakaru llm`: the prompts each request asked with (the dataset, how many, their lengths); the prompts
    /// themselves are in no output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
    /// `hakaru llm --percentile-metrics ttft,tpot --metric-percentiles 90,99` (vLLM's): the figures whose mean,
    /// median and percentiles the summary prints. Absent without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile_metrics: Option<PercentileMetrics>,
    /// `run --replay`: the recording replayed (records, what was left out and why, the pace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
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

/// The protocol a result was measured over, as people name it: `HTTP/1.1`, `HTTP/2`, `HTTP/3`, `gRPC`, `WebSocket`,
/// `Redis`, `memcached`, from a step's `protocol` and `settings.http_version` (`protocol` itself when unknown).
pub fn protocol_label<'a>(protocol: &'a str, http_version: Option<&str>) -> &'a str {
    match (protocol, http_version) {
        ("http", Some("2")) => "HTTP/2",
        ("http", Some("3")) => "HTTP/3",
        ("http", _) => "HTTP/1.1",
        ("grpc", _) => "gRPC",
        ("websocket", _) => "WebSocket",
        ("redis", _) => "Redis",
        (other, _) => other,
    }
}

impl ResultDocument {
    /// The protocol the result was measured over ([`protocol_label`]); empty for a document without steps.
    pub fn protocol_label(&self) -> &str {
        let protocol = self.steps.first().map_or("", |s| s.protocol.as_str());
        protocol_label(protocol, self.settings.http_version.as_deref())
    }
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
        let s = crate::metrics::stats::summarize(values)?;
        Some(Spread {
            values: values.to_vec(),
            mean: s.mean,
            sd: s.sd.is_finite().then_some(s.sd),
            min: s.min,
            max: s.max,
            ci95: crate::metrics::stats::mean_ci95(values).map(|(lo, hi)| [lo, hi]),
        })
    }
}

impl RunsSummary {
    /// The summary of `steps` (one per run, in order); `partial_run` is left out of the figures.
    pub fn of(steps: &[StepResult], planned: usize, partial_run: Option<usize>) -> Option<RunsSummary> {
        let done = complete_runs(steps, partial_run);
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

/// The steps of the runs that ran to their end: all but `partial_run` (1-based), the one a stop signal cut short.
pub fn complete_runs(steps: &[StepResult], partial_run: Option<usize>) -> Vec<&StepResult> {
    steps.iter().enumerate().filter(|(i, _)| Some(i + 1) != partial_run).map(|(_, s)| s).collect()
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
    /// Requests still waiting for their answer when the step ended (after its graceful stop, when it had one);
    /// they are in no other figure.
    pub unfinished: u64,
    /// A timed step's graceful stop: how long, after the step's end, its answers in flight were waited for
    /// (`--graceful-stop`, default the timeout; seconds). The answers that came then are counted as any other,
    /// over the step's duration. Absent when nothing was waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_stop_s: Option<f64>,
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
    /// A fixed rate: how long the connections' setup took before the step began, microseconds. Its time, windows
    /// and slots count from when every load thread had its first connection, so the setup neither makes the
    /// first slots late nor takes their share of the step. Absent in a ramp (it counts from the start, its first
    /// slots late by the setup) and in documents from before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_after_us: Option<u64>,
    /// Requests sent more than 1 ms after their intended time: they could not be sent on time.
    pub late: u64,
    /// The largest delay between intended and actual send, microseconds.
    pub max_lag_us: u64,
    /// Every request's delay between its intended and its actual send, microseconds; absent in documents from
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<phases::Phase>,
    /// Of the `late` requests, those that fell due while every connection was busy and `-c` allowed no more
    /// (counted, as `late`, among the requests that ended: never more than `late`).
    pub starved: u64,
    /// Of the late requests not counted in `starved`, those that ended in a second when hakaru's load threads used
    /// 90 % or more of their cores (its CPU made them late: more threads, cores or agents); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_cpu: u64,
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

/// vLLM's `--percentile-metrics` and `--metric-percentiles`: which streamed figures, at which percentiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PercentileMetrics {
    /// `ttft`, `tpot`, `itl`, `e2el`.
    pub metrics: Vec<String>,
    pub percentiles: Vec<f64>,
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
    /// Connections hakaru closed, not the server (left out when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub closed_by_hakaru: u64,
    /// Why hakaru closed them: `max_requests_per_connection`, `answer_past_end`, `timeout`, `unsolicited`, each with
    /// its count (left out when none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub closed_by_hakaru_why: BTreeMap<String, u64>,
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
mod tests;
