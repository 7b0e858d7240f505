//! Raw flags turned into a validated plan before any load is sent: every mistake is one line naming the flag.
//! [`RunPlan`] is one step; [`steps`] plans several steps (sweeps, capacity searches); [`slo`] is the objective
//! of a capacity search.

pub mod connect_to;
mod events;
mod grpc;
mod h3;
pub mod kv;
pub mod kv_guard;
pub mod live;
pub mod proxy;
pub mod segment;
pub mod slo;
pub mod steps;
pub mod tls;
mod ws;

use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::args::{ArrivalArg, LoadArgs, RequestArgs, RunArgs, ServeArgs, WatchArgs};
use crate::error::UsageError;
use crate::load::{Arrival, LoadModel, Ramp, Until};
use crate::metrics::StatusSet;
use crate::monitor::{self, Probe, ProcessMonitor, WatchSpec, Watchers, available_cores, is_hit_rate_probe};
use crate::patterns::{self, PatternSet};
use crate::protocol::events::EventsSpec;
use crate::protocol::http::RequestParts;
use crate::protocol::http::request::write_request;
use crate::protocol::http::request::{check_header, check_method, check_target};
use crate::protocol::{Greeting, PreparedRequest, Protocol};
use crate::result::Settings;
use crate::target::{Endpoint, ParsedUrl, Scheme, split_host_port};
use crate::units::parse_flag_duration;
use crate::workload::Workload;

/// The files a run writes, as its flags name them (checked before the load; the session makes the exporters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `--json`: the result document.
    pub json: Option<PathBuf>,
    /// `--csv`: a row per step; with `wide`, a sweep's one row per step with its breakdown (sweep's `--csv`).
    pub csv: Option<PathBuf>,
    pub wide: bool,
    /// `-o`: drnbench's CSV of a sweep.
    pub drnbench: Option<PathBuf>,
    /// `--hdr-log`: HdrHistogram's interval log, a row per window and histogram.
    pub hdr_log: Option<PathBuf>,
}

/// One request as the plan knows it: bytes prepared for every endpoint it may go to.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    /// Indexes into [`RunPlan::endpoints`], taken round-robin (one list shared by every request of a pattern file
    /// that names no host of its own).
    pub endpoints: Arc<[usize]>,
    /// One prepared request per entry of `endpoints` (the Host header differs).
    pub prepared: Prepared,
    pub timeout: Duration,
    /// The pattern group it belongs to (0 without a pattern file).
    pub group: usize,
    /// What it is, for people (`GET /d/select?q=a`): see [`RequestSpec::label`]. Empty for an HTTP/1.1 request,
    /// whose request line says it: a pattern file's 400,000 labels are not kept beside their requests.
    pub label: Box<str>,
}

/// A request's bytes for each of its endpoints: most requests go to one, kept in place (a pattern file's 400,000
/// save an allocation each).
#[derive(Clone, Debug)]
pub enum Prepared {
    One(PreparedRequest),
    Many(Box<[PreparedRequest]>),
}

impl std::ops::Deref for Prepared {
    type Target = [PreparedRequest];

    fn deref(&self) -> &[PreparedRequest] {
        match self {
            Prepared::One(p) => std::slice::from_ref(p),
            Prepared::Many(all) => all,
        }
    }
}

impl std::ops::DerefMut for Prepared {
    fn deref_mut(&mut self) -> &mut [PreparedRequest] {
        match self {
            Prepared::One(p) => std::slice::from_mut(p),
            Prepared::Many(all) => all,
        }
    }
}

impl FromIterator<PreparedRequest> for Prepared {
    fn from_iter<I: IntoIterator<Item = PreparedRequest>>(iter: I) -> Prepared {
        let mut all: Vec<PreparedRequest> = iter.into_iter().collect();
        match all.len() {
            1 => Prepared::One(all.remove(0)),
            _ => Prepared::Many(all.into_boxed_slice()),
        }
    }
}

impl RequestSpec {
    /// What the request is, for people: `GET /d/select?q=a`.
    pub fn label(&self) -> String {
        if !self.label.is_empty() {
            return self.label.to_string();
        }
        // "METHOD TARGET HTTP/1.1\r\n": the label is what comes before " HTTP/1.1".
        let bytes = self.prepared.first().map_or(&[][..], |p| &p.bytes[..]);
        let line = bytes.split(|&b| b == b'\r').next().unwrap_or_default();
        let line = line.strip_suffix(b" HTTP/1.1").unwrap_or(line);
        crate::secrets::redact_secret(&String::from_utf8_lossy(line))
    }
}

/// How the next request is chosen.
#[derive(Clone, Debug)]
pub enum Selection {
    /// Every spec in turn (URLs given on the command line).
    RoundRobin,
    /// A group drawn by frequency, then a spec of the group uniformly (drnbench pattern files).
    Weighted { cumulative: Vec<f64>, groups: Vec<Range<usize>> },
}

/// Everything a step needs, checked.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub endpoints: Vec<Endpoint>,
    /// Shared: every step, thread and warm-up of a plan reads one copy (a pattern file's 400,000 are 50 MB apiece).
    pub requests: Arc<Vec<RequestSpec>>,
    pub selection: Selection,
    /// The pattern groups' names, in order; empty without a pattern file.
    pub group_names: Vec<String>,
    pub connections: usize,
    pub threads: usize,
    pub stop: Until,
    pub load: LoadModel,
    pub keepalive: bool,
    pub connect_timeout: Duration,
    /// `--max-line`: the longest response head or reply line a decoder takes.
    pub max_line: usize,
    /// `--max-header-list`: HTTP/2's bound of an answer's decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list: usize,
    pub seed: u64,
    pub insecure: bool,
    /// The TLS flags, their files read and checked.
    pub tls: Arc<tls::TlsOptions>,
    /// `--max-requests-per-connection`: hakaru closes a connection after this many answers on it.
    pub max_requests_per_connection: Option<u64>,
    /// `--connection-rate`: new connections a second at most, across all threads.
    pub connection_rate: Option<f64>,
    /// Open loop: the pacer wakes at most once per this long (`--pace-window`).
    pub pace_window: Duration,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    /// `--hdr-log`: HdrHistogram's interval log of every window (its windows then keep 3-digit histograms).
    pub hdr_log: Option<PathBuf>,
    /// `--window`: the width of the time-series windows.
    pub window: Duration,
    /// `--stages` (clients, closed loop) or `--rate-stages` (rate, open loop): the load moves inside the step;
    /// None for a fixed load. A segment's ramp is its share of the whole.
    pub ramp: Option<Ramp>,
    pub quiet: bool,
    /// The dashboard and the remote-write push (`--no-tui`, `--prometheus-rw`).
    pub live: live::LiveSettings,
    /// `--ok-status`: which answers are successes.
    pub ok_status: StatusSet,
    /// Warnings found while planning (keys of a pattern file ignored), for the output.
    pub notes: Vec<String>,
    /// The wire protocol of every request.
    pub protocol: Protocol,
    /// Commands every new connection sends first (Redis AUTH, SELECT).
    pub greeting: Option<Greeting>,
    /// Key-value workloads make each request as they go (keys, values, checks); None sends `requests` as built.
    pub workload: Option<Arc<Workload>>,
    /// Requests written together on a connection before their replies are read (1: one at a time).
    pub pipeline: usize,
    /// `-s`: a wrk Lua script builds every request (the `requests` above only label them).
    pub script: Option<Arc<crate::script::Script>>,
    /// `--data` or `{{...}}` in the request: every request filled from its template as the load runs.
    pub template: Option<Arc<crate::template::Template>>,
    /// HTTP/2: concurrent streams per connection (1 otherwise).
    pub streams: usize,
    /// gRPC: messages each call sends (1 but for a client-streaming or bidirectional method).
    pub grpc_messages_out: u32,
    /// gRPC: what the calls need beside their bytes (`--max-message` ...).
    pub grpc: crate::protocol::grpc::Settings,
    /// `--events`: each answer read as a stream of events.
    pub events: Option<Arc<EventsSpec>>,
    /// WebSocket: the upgrade request and the messages' framing.
    pub websocket: Option<Arc<crate::protocol::ws::Settings>>,
    /// The settings as the result document records them.
    pub settings: Settings,
    /// Scale-out: when the load starts (`--start-at`); None: at once.
    pub start_at: Option<std::time::SystemTime>,
    /// Scale-out: this segment's open-loop slots start this long after the common start.
    pub slot_offset: Duration,
    /// Scale-out: clients are numbered from this one, of this many in all the segments.
    pub client_offset: usize,
    pub all_clients: usize,
}

pub fn flag_duration(flag: &str, value: &str) -> Result<Duration, UsageError> {
    let d = parse_flag_duration(value).map_err(|e| UsageError::new(format!("{flag} '{value}': {e}")))?;
    if d.is_zero() {
        return Err(UsageError::new(format!("{flag} '{value}': must be more than zero")));
    }
    Ok(d)
}

/// The width of the time-series windows unless `--window` says otherwise.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);
/// The narrowest `--window`: below it a window holds too few requests to say anything, and the windows' count
/// (kept in the document) grows past what a long run should carry.
pub const MIN_WINDOW: Duration = Duration::from_millis(100);
/// The widest: a window longer than an hour is the step's own figure.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// `--window`: from 100ms to 1h.
pub fn flag_window(value: &str) -> Result<Duration, UsageError> {
    let d = parse_flag_duration(value).map_err(|e| UsageError::new(format!("--window '{value}': {e}")))?;
    if d < MIN_WINDOW {
        return Err(UsageError::new(format!(
            "--window '{value}': must be at least 100ms (a narrower window holds too few requests); try --window 100ms"
        )));
    }
    if d > MAX_WINDOW {
        return Err(UsageError::new(format!("--window '{value}': must be at most 1h; try --window 10s")));
    }
    Ok(d)
}

/// The shortest request or connect timeout: the engine's timers count whole milliseconds (tokio's wheel), so a
/// shorter one would not be enforced as given.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
/// The longest: a deadline far beyond any run would only overflow the clock arithmetic.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// `--timeout` and `--connect-timeout`: from 1ms to 24h.
pub fn flag_timeout(flag: &str, value: &str) -> Result<Duration, UsageError> {
    let d = parse_flag_duration(value).map_err(|e| UsageError::new(format!("{flag} '{value}': {e}")))?;
    if d < MIN_TIMEOUT {
        return Err(UsageError::new(format!(
            "{flag} '{value}': must be at least 1ms (timers count whole milliseconds); try {flag} 1ms"
        )));
    }
    if d > MAX_TIMEOUT {
        return Err(UsageError::new(format!("{flag} '{value}': must be at most 24h; try {flag} 30s")));
    }
    Ok(d)
}

/// The default `--pace-window`, for the plans no flag sets it in (kv).
pub const PACE_WINDOW: Duration = Duration::from_micros(400);

/// `--pace-window` from 0 (a wake-up per request, at its time) to 1 ms: a request leaves at most half a
/// millisecond from its time, half the 1 ms past which it would count as late.
pub fn flag_pace_window(value: &str) -> Result<Duration, UsageError> {
    let d = parse_flag_duration(value).map_err(|e| UsageError::new(format!("--pace-window '{value}': {e}")))?;
    if d > Duration::from_millis(1) {
        return Err(UsageError::new(format!(
            "--pace-window '{value}': must be at most 1ms (a request may leave half the window from its time); \
             try --pace-window 400us"
        )));
    }
    Ok(d)
}

/// `--max-line` from 1 KiB (an ordinary response head fits) to 1 MiB: a decoder holds up to this much per
/// connection while a head or line is incomplete.
pub fn flag_max_line(value: &str) -> Result<usize, UsageError> {
    let bad = |why: String| UsageError::new(format!("--max-line '{value}': {why}"));
    let bytes = crate::units::parse_size(value).map_err(bad)?;
    if !(1024..=1024 * 1024).contains(&bytes) {
        return Err(bad(format!("{bytes} bytes; give 1KiB to 1MiB, e.g. --max-line 64KiB")));
    }
    Ok(bytes as usize)
}

/// `--max-header-list`'s default: 64 KiB, as nghttp2 and Go's HTTP/2 client allow (Go: 10 MiB; curl 100 KiB).
pub const DEFAULT_MAX_HEADER_LIST: usize = 64 * 1024;

/// `--max-header-list` from 1 KiB to 64 MiB: HTTP/2's bound of an answer's decoded header list, as RFC 9113 sizes it
/// (each field's name, value and 32 bytes), advertised in the client's SETTINGS.
pub fn flag_max_header_list(value: &str) -> Result<usize, UsageError> {
    let bad = |why: String| UsageError::new(format!("--max-header-list '{value}': {why}"));
    let bytes = crate::units::parse_size(value).map_err(bad)?;
    if !(1024..=64 * 1024 * 1024).contains(&bytes) {
        return Err(bad(format!("{bytes} bytes; give 1KiB to 64MiB, e.g. --max-header-list 1MiB")));
    }
    Ok(bytes as usize)
}

/// The largest `--body-file` read: the body is held in memory once per request and endpoint.
pub const MAX_BODY_FILE: u64 = 64 * 1024 * 1024;

/// Reads `--body-file` (see [`crate::bounded`]: a regular file of at most 64 MiB).
fn read_body_file(path: &std::path::Path) -> Result<Vec<u8>, UsageError> {
    crate::bounded::read(path, crate::bounded::BODY)
        .map_err(|why| UsageError::new(format!("--body-file '{}': {why}", path.display())))
}

/// Requests and endpoints as built from [`RequestArgs`].
#[derive(Clone, Debug)]
pub struct RequestSet {
    /// The method, and the extra headers with secret values redacted, as the result document records them.
    pub method: String,
    pub headers: Vec<String>,
    pub patterns: Option<String>,
    pub endpoints: Vec<Endpoint>,
    /// Shared: every step, thread and warm-up of a plan reads one copy (a pattern file's 400,000 are 50 MB apiece).
    pub requests: Arc<Vec<RequestSpec>>,
    pub selection: Selection,
    /// The pattern groups' names, in order; empty without a pattern file.
    pub group_names: Vec<String>,
    pub keepalive: bool,
    pub connect_timeout: Duration,
    /// `--max-line`: the longest response head or reply line a decoder takes.
    pub max_line: usize,
    /// `--max-header-list`: HTTP/2's bound of an answer's decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list: usize,
    pub seed: u64,
    pub insecure: bool,
    /// The TLS flags, their files read and checked.
    pub tls: Arc<tls::TlsOptions>,
    /// `--max-requests-per-connection`.
    pub max_requests_per_connection: Option<u64>,
    /// `--connection-rate`.
    pub connection_rate: Option<f64>,
    /// `--pace-window`: an open loop's pacer wakes at most once per this long.
    pub pace_window: Duration,
    /// `--connect-to`'s rules as given.
    pub connect_to: Vec<String>,
    /// Descriptions of the targets for the result document.
    pub targets: Vec<String>,
    pub body_bytes: usize,
    /// `--ok-status`: which answers are successes.
    pub ok_status: StatusSet,
    /// What the reader of the pattern file should know (keys ignored).
    pub warnings: Vec<String>,
    /// The clients' wait after each answer given by the pattern file (`"wait"`, seconds).
    pub wait: Option<f64>,
    /// The wire protocol of every request.
    pub protocol: Protocol,
    /// Commands every new connection sends first (Redis AUTH, SELECT).
    pub greeting: Option<Greeting>,
    /// Key-value workloads make each request as they go (keys, values, checks); None sends `requests` as built.
    pub workload: Option<Arc<Workload>>,
    /// Requests written together on a connection before their replies are read (1: one at a time).
    pub pipeline: usize,
    /// `-s`: a wrk Lua script builds every request.
    pub script: Option<Arc<crate::script::Script>>,
    /// `--data` or `{{...}}` in the request: every request filled from its template.
    pub template: Option<Arc<crate::template::Template>>,
    /// `--data`'s file and order, as the result document records them.
    pub data: Option<String>,
    /// HTTP/2: concurrent streams per connection (1 for the other protocols).
    pub streams: usize,
    /// gRPC: messages each call sends (1 but for a client-streaming or bidirectional method).
    pub grpc_messages_out: u32,
    /// gRPC: what the calls need beside their bytes (`--max-message` ...).
    pub grpc: crate::protocol::grpc::Settings,
    /// `--events`: each answer read as a stream of events.
    pub events: Option<Arc<EventsSpec>>,
    /// WebSocket: the upgrade request and the messages' framing.
    pub websocket: Option<Arc<crate::protocol::ws::Settings>>,
}

/// The most `--streams` takes: more than any server allows (nginx 128, h2o 100 by default).
pub const MAX_STREAMS: usize = 10_000;

/// A method of digits is h2load's habit (`-m 16` is its streams per connection; hakaru's `-m` is the method): a
/// server would answer every request 400, so it is refused with the flag meant.
fn numeric_method(method: &str, http2: bool) -> Result<(), UsageError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    let meant = if http2 { format!("--streams {method}") } else { format!("--http2 --streams {method}") };
    Err(UsageError::new(format!(
        "--method '{method}': a method is a word such as GET or POST (hakaru's -m is the method, h2load's is the \
         streams per connection); did you mean {meant}?"
    )))
}

/// `--http2` and `--streams`, checked: the streams per connection.
fn http2_streams(a: &RequestArgs) -> Result<usize, UsageError> {
    match (a.http2 || a.http3, a.streams) {
        (false, Some(n)) => Err(UsageError::new(format!(
            "--streams {n}: streams are HTTP/2's and HTTP/3's; add --http2 or --http3 (or leave --streams out)"
        ))),
        (true, Some(0)) => Err(UsageError::new("--streams 0: must be at least 1; try --streams 10")),
        (true, Some(n)) if n > MAX_STREAMS => Err(UsageError::new(format!(
            "--streams {n}: at most {MAX_STREAMS} per connection (servers allow about 100); try --streams 100"
        ))),
        (true, _) if a.no_keepalive => Err(UsageError::new(format!(
            "--no-keepalive with {0}: {0} keeps its connections open; leave --no-keepalive out",
            if a.http3 { "--http3" } else { "--http2" }
        ))),
        (_, n) => Ok(n.unwrap_or(1)),
    }
}

impl RequestSet {
    /// `segment`: a scaled-out agent's `--segment`, whose share of `--data`'s rows it takes.
    pub fn from_args(a: &RequestArgs, segment: Option<segment::Segment>) -> Result<RequestSet, UsageError> {
        // A gRPC call is an HTTP/2 request the plan below builds as any other, its message framed already.
        let mut grpc = grpc::prepare(a, segment)?;
        // `--data`'s rows in a gRPC message: read and encoded already, each call sends its row's; with built-ins
        // the template fills the JSON per call, and the call encoder makes it a message.
        let (loaded_rows, row_bodies, per_call) = match grpc.as_mut().and_then(|g| g.messages.take()) {
            Some(grpc::Messages::Rows(r)) => (Some(r.rows), Some(r.bodies), None),
            Some(grpc::Messages::PerCall(p)) => (p.rows, None, Some((p.json, p.encoder))),
            None => (None, None, None),
        };
        let a = grpc.as_ref().map_or(a, |g| &g.args);
        // So is a WebSocket run: its URL's connection and upgrade are HTTP's, its message the request's bytes.
        let ws = ws::prepare(a)?;
        let a = ws.as_ref().map_or(a, |w| &w.args);
        let timeout = flag_timeout("--timeout", &a.timeout)?;
        let connect_timeout = flag_timeout("--connect-timeout", &a.connect_timeout)?;
        let max_line = flag_max_line(&a.max_line)?;
        let method = a.method.trim().to_ascii_uppercase();
        check_method(&method).map_err(|e| UsageError::new(format!("--method '{}': {e}", a.method.escape_debug())))?;
        numeric_method(&method, a.http2)?;
        let headers = a
            .headers
            .iter()
            .map(|h| {
                let (name, value) = h.split_once(':').ok_or_else(|| {
                    // Only the header's first word is quoted: without its ':' its value cannot be told from its name,
                    // and may be a secret (`Authorization Bearer x`).
                    let mut words = h.split_whitespace();
                    let first = words.next().unwrap_or("");
                    let more = if words.next().is_some() { " ..." } else { "" };
                    UsageError::new(format!("--header '{first}{more}': missing ':'; write it as \"Name: value\""))
                })?;
                let (name, value) = (name.trim(), value.trim());
                check_header(name, value).map_err(|e| {
                    // The value is quoted only under a name that is a header's and no secret's (a gRPC
                    // --metadata key such as "auth token" is neither).
                    let shown = match crate::secrets::is_secret_header(name) || check_header(name, "").is_err() {
                        true => format!("{}: <redacted>", name.escape_debug()),
                        false => h.escape_debug().to_string(),
                    };
                    UsageError::new(format!("--header '{shown}': {e}"))
                })?;
                Ok((name.to_string(), value.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ok_status = StatusSet::parse(&a.ok_status).map_err(|why| {
            UsageError::new(format!("--ok-status '{}': {why}; write codes and ranges like 200-299,304", a.ok_status))
        })?;
        let body: Vec<u8> = match (&a.body, &a.body_file) {
            _ if grpc.is_some() => grpc.as_ref().map(|g| g.body.clone()).unwrap_or_default(),
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => read_body_file(path)?,
            (None, None) => Vec::new(),
        };

        // Templates (`{{...}}` in the URL's path) are read apart; the URL is parsed with each hole as `x`.
        let (urls, data) = template_urls(a, segment, loaded_rows, per_call.is_some())?;
        let streams = http2_streams(a)?;
        h3::check_flags(a)?;
        let mut b = Builder {
            endpoints: Vec::new(),
            keepalive: !a.no_keepalive,
            http2: a.http2,
            arena: Default::default(),
            pinned: Vec::new(),
            proxy: Default::default(),
        };
        // The hosts that paths go to: --hosts, else the host of the first URL given.
        let mut default_hosts: Vec<usize> = Vec::new();
        let mut specs = Vec::new();
        let mut targets = Vec::new();
        let mut warnings = Vec::new();
        let defaults = Defaults { method: &method, headers: &headers, body: &body, timeout };

        let pinned = connect_to::ConnectTo::parse_all(&a.connect_to)?;
        if !pinned.is_empty() && a.proxy.is_some() {
            // The proxy is asked for the URL's host: the address --connect-to pins would not be the one reached.
            return Err(UsageError::new(
                "--connect-to with --proxy: the proxy connects to the URL's host itself; leave one of them out",
            ));
        }
        if let Some(n) = a.max_requests_per_connection {
            let why = match () {
                _ if n == 0 => Some("0 requests is no connection; give 1 or more"),
                _ if a.no_keepalive => Some("--no-keepalive already closes every connection after one request"),
                _ => None,
            };
            if let Some(why) = why {
                return Err(UsageError::new(format!("--max-requests-per-connection {n}: {why}")));
            }
        }
        let proxy = proxy::ProxyChoice::from_flag(a.proxy.as_deref(), |name| std::env::var(name).ok())?;
        // Every endpoint, of a URL, --hosts or a pattern file, is made by `Builder::resolve` with these.
        (b.pinned, b.proxy) = (pinned, proxy);
        if let Some(path) = &a.unix_socket
            && a.proxy.is_some()
        {
            return Err(UsageError::new(format!(
                "--unix-socket {}: connections go to the socket, not through --proxy; drop one",
                path.display()
            )));
        }
        if let Some(path) = &a.unix_socket
            && (a.hosts.is_some() || a.patterns.is_some())
        {
            return Err(UsageError::new(format!(
                "--unix-socket {}: one socket takes the URLs given, not --hosts or --patterns; drop one",
                path.display()
            )));
        }
        if let Some(hosts) = &a.hosts {
            if a.port == Some(0) {
                return Err(UsageError::new("--port 0: not a port; give a number from 1 to 65535"));
            }
            let port = a.port.unwrap_or(80);
            for entry in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                let bad = |e: String| UsageError::new(format!("--hosts '{hosts}': {e}; write --hosts a,b:8080"));
                // An entry's own port (`a:8080`) wins over --port, as it would in a URL.
                let (host, own_port) = split_host_port(entry).map_err(bad)?;
                let ep = b.resolve(Scheme::Http, &host, own_port.unwrap_or(port)).map_err(bad)?;
                default_hosts.push(b.endpoint(ep));
            }
            if default_hosts.is_empty() {
                return Err(UsageError::new(format!(
                    "--hosts '{hosts}': no host given; write --hosts 127.0.0.1,127.0.0.2"
                )));
            }
            let paths: Vec<&str> = if a.urls.is_empty() && a.patterns.is_none() {
                vec![a.path.as_deref().unwrap_or("/")]
            } else {
                a.urls.iter().map(String::as_str).collect()
            };
            for path in paths {
                if !path.starts_with('/') {
                    return Err(UsageError::new(format!(
                        "'{path}': with --hosts give paths such as /d/select?q=a, not URLs"
                    )));
                }
                check_target(path).map_err(|e| UsageError::new(format!("'{}': {e}", path.escape_debug())))?;
                targets.push(format!("{{{hosts}}}:{port}{path}"));
                specs.push(b.spec(default_hosts.as_slice().into(), path, &defaults, None));
            }
        } else {
            if a.port.is_some() {
                return Err(UsageError::new("--port: only used with --hosts; put the port in the URL instead"));
            }
            for url in &urls {
                let shown = crate::target::shown(url);
                let u = ParsedUrl::parse(url).map_err(|e| UsageError::new(format!("URL '{shown}': {e}")))?;
                // A socket takes no proxy (refused above with --proxy).
                let ep = match &a.unix_socket {
                    Some(path) => unix_endpoint(&u, path, &shown)?,
                    None => b
                        .resolve(u.scheme, &u.host, u.port)
                        .map_err(|e| UsageError::new(format!("URL '{shown}': {e}")))?,
                };
                let idx = b.endpoint(ep);
                if default_hosts.is_empty() {
                    default_hosts.push(idx);
                }
                targets.push(crate::secrets::redact_secret(url));
                if a.patterns.is_none() {
                    specs.push(b.spec(Arc::new([idx]), &u.path_and_query, &defaults, None));
                }
            }
        }

        let mut group_names = Vec::new();
        let mut wait = None;
        let selection = if let Some(path) = &a.patterns {
            let set = patterns::load(path).map_err(|e| UsageError::new(format!("--patterns {e}")))?;
            group_names = set.groups.iter().map(|g| g.name.clone()).collect();
            wait = set.wait;
            warnings.extend(set.warnings.iter().map(|w| format!("--patterns {}: {w}", path.display())));
            targets.push(format!("patterns:{}", path.display()));
            // The set is spent as its requests are built: its memory goes to them rather than beside them.
            let (pattern_specs, selection) = b.pattern_specs(set, &default_hosts, &defaults, path)?;
            specs = pattern_specs;
            selection
        } else {
            Selection::RoundRobin
        };
        if specs.is_empty() {
            return Err(UsageError::new(
                "no target: give a URL such as http://127.0.0.1:8080/ (or --hosts with paths, or --patterns)",
            ));
        }
        let template = match data {
            None => None,
            Some(data) => {
                targets = a.urls.iter().map(|u| crate::secrets::redact_secret(u)).collect();
                // A gRPC message from rows is its row's, made already: the template fills the headers alone. One
                // with built-ins is its JSON, filled and encoded per call.
                let filled_body = match (&row_bodies, &per_call) {
                    (Some(_), _) => &[][..],
                    (None, Some((json, _))) => json.as_bytes(),
                    (None, None) => &body[..],
                };
                let template = data.template(a, &b.endpoints, &method, &headers, filled_body)?;
                let template = template.map(|t| match (row_bodies, per_call) {
                    (Some(bodies), _) => t.with_row_bodies(bodies),
                    (None, Some((_, encoder))) => t.with_body_encoder(Box::new(encoder)),
                    (None, None) => t,
                });
                // A WebSocket run's template fills the message alone.
                let template = template.map(|t| if ws.is_some() { t.messages_only() } else { t }).map(Arc::new);
                if let (Some(spec), Some(url)) = (specs.first_mut(), a.urls.first()) {
                    // Figures per request are labelled with the template, not the `x` it was checked with.
                    let path = url.find("://").and_then(|i| url[i + 3..].find(['/', '?']).map(|p| &url[i + 3 + p..]));
                    spec.label = crate::secrets::redact_secret(&format!("{method} {}", path.unwrap_or("/"))).into();
                }
                template
            }
        };
        let mut websocket = None;
        if let Some(w) = &ws {
            w.message_specs(&mut specs);
            let path = ParsedUrl::parse(&a.urls[0]).map(|u| u.path_and_query).unwrap_or_else(|_| "/".into());
            websocket = Some(w.settings(&b.endpoints[0], &path, &headers));
        }
        let absolute_form = b.endpoints.iter().any(|e| e.proxy.as_ref().is_some_and(|p| !p.tunnel));
        if absolute_form && (a.script.is_some() || template.is_some()) {
            return Err(UsageError::new(
                "--proxy: requests a script or a template makes as it goes cannot yet be sent to a proxy over plain \
                 http://; use https:// URLs (they go through a CONNECT tunnel) or leave out --proxy",
            ));
        }
        if a.http3 {
            h3::check_endpoints(&b.endpoints)?;
        }
        let https = b.endpoints.iter().any(|e| e.scheme == Scheme::Https);
        let tls = tls::TlsOptions::from_args(a, https)?;
        let script = match &a.script {
            None => None,
            Some(path) => {
                let limits = (connect_timeout, timeout);
                let script = load_script(a, path, &b.endpoints, &defaults, limits, ws.as_ref())?;
                if let Some(spec) = specs.first_mut() {
                    spec.label = format!("script {}", script.file()).into();
                }
                Some(Arc::new(script))
            }
        };
        Ok(RequestSet {
            method: method.clone(),
            headers: a.headers.iter().map(|h| crate::secrets::redact_secret(h)).collect(),
            patterns: a.patterns.as_ref().map(|p| p.display().to_string()),
            endpoints: b.endpoints,
            requests: Arc::new(specs),
            selection,
            group_names,
            keepalive: !a.no_keepalive,
            connect_timeout,
            max_line,
            max_header_list: flag_max_header_list(&a.max_header_list)?,
            seed: a.seed.unwrap_or_else(random_seed),
            insecure: a.insecure,
            tls: Arc::new(tls),
            max_requests_per_connection: a.max_requests_per_connection,
            connection_rate: a.connection_rate,
            pace_window: flag_pace_window(&a.pace_window)?,
            connect_to: a.connect_to.clone(),
            targets: match (&grpc, &ws) {
                (Some(g), _) => g.targets.clone(),
                (_, Some(w)) => w.targets.clone(),
                _ => targets,
            },
            body_bytes: body.len(),
            ok_status,
            warnings,
            wait,
            protocol: match (&grpc, a.http2) {
                _ if ws.is_some() => Protocol::WebSocket,
                _ if a.http3 => Protocol::Http3,
                (Some(_), _) => Protocol::Grpc,
                (None, true) => Protocol::Http2,
                (None, false) => Protocol::Http,
            },
            greeting: None,
            workload: None,
            pipeline: 1,
            script,
            template,
            data: a.data.as_ref().map(|p| format!("{} ({})", p.display(), a.data_order.name())),
            streams,
            grpc_messages_out: grpc.as_ref().map_or(0, |g| g.messages_per_call),
            grpc: grpc.as_ref().map(|g| g.settings).unwrap_or_default(),
            events: events::from_args(a)?,
            websocket,
        })
    }
}

/// What `--data` and the URL's templates give, before the endpoints are known.
struct DataPlan {
    rows: Option<crate::template::data::Rows>,
    path: crate::template::text::Text,
}

/// The URLs as the endpoint builder reads them (each `{{...}}` of a templated path as `x`), and the templates'
/// data when there are any (`--data`, or a built-in in the URL, a header or the body).
/// `loaded`: `--data`'s rows when they were read already (a gRPC run's).
fn template_urls(
    a: &RequestArgs,
    segment: Option<segment::Segment>,
    loaded: Option<crate::template::data::Rows>,
    templated_body: bool,
) -> Result<(Vec<String>, Option<DataPlan>), UsageError> {
    use crate::template::text::Text;
    let rows = match (&a.data, loaded) {
        (_, Some(rows)) => Some(rows),
        (None, None) => None,
        (Some(path), None) => Some(data_rows(path, segment)?),
    };
    let columns = rows.as_ref().map(|r| r.columns.clone());
    let holes_in = |text: &str| Text::parse(text, columns.as_deref()).is_ok_and(|t| t.has_holes());
    let templated = rows.is_some()
        || templated_body
        || a.urls.iter().any(|u| holes_in(u))
        || a.headers.iter().any(|h| holes_in(h))
        || a.body.as_deref().is_some_and(holes_in);
    if !templated {
        return Ok((a.urls.clone(), None));
    }
    let one_url = || {
        UsageError::new(
            "--data and {{...}} templates: give one URL (not --hosts, --patterns or several URLs); its path, -H values \
             and -b may hold templates",
        )
    };
    if a.urls.len() != 1 || a.hosts.is_some() || a.patterns.is_some() || a.script.is_some() {
        return Err(one_url());
    }
    let url = &a.urls[0];
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_at = url[after_scheme..].find(['/', '?']).map_or(url.len(), |i| i + after_scheme);
    if url[..path_at].contains("{{") {
        return Err(UsageError::new(format!(
            "URL '{}': templates go in the path, the headers and the body, not the host or port",
            crate::target::shown(url)
        )));
    }
    let path_text = if path_at == url.len() { "/" } else { &url[path_at..] };
    let path = Text::parse(path_text, columns.as_deref())
        .map_err(|why| UsageError::new(format!("URL '{}': {why}", crate::target::shown(url))))?;
    let masked = format!("{}{}", &url[..path_at], path.sample("x"));
    Ok((vec![masked], Some(DataPlan { rows, path })))
}

impl DataPlan {
    /// The request's template, filled per request by the engine.
    fn template(
        self,
        a: &RequestArgs,
        endpoints: &[Endpoint],
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Option<crate::template::Template>, UsageError> {
        use crate::template::{Template, text::Text};
        let columns = self.rows.as_ref().map(|r| r.columns.clone());
        let headers = headers
            .iter()
            .map(|(n, v)| {
                Text::parse(v, columns.as_deref())
                    .map(|t| (n.clone(), t))
                    .map_err(|why| UsageError::new(format!("--header '{n}': {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let body = match std::str::from_utf8(body) {
            Ok(text) => {
                Text::parse(text, columns.as_deref()).map_err(|why| UsageError::new(format!("--body: {why}")))?
            }
            Err(_) => Text { parts: vec![crate::template::text::Part::Literal(body.to_vec())] },
        };
        let Some(ep) = endpoints.first() else { return Ok(None) };
        let order = data_order(a.data_order);
        let t = Template::new(method, self.path, ep.host_header(), headers, body, a.no_keepalive, self.rows, order);
        Ok(Some(if a.http2 { t.over_http2(ep.scheme == Scheme::Https) } else { t }))
    }
}

/// `--data`'s rows, a scaled-out agent's share of them only.
fn data_rows(
    path: &std::path::Path,
    segment: Option<segment::Segment>,
) -> Result<crate::template::data::Rows, UsageError> {
    let bad = |why: String| UsageError::new(format!("--data '{}': {why}", path.display()));
    let mut rows = crate::template::data::Rows::load(path).map_err(bad)?;
    if let Some(s) = segment {
        rows.keep_share(s.index, s.count).map_err(bad)?;
    }
    Ok(rows)
}

/// `--data-order` as the fillers take it (`run`'s and `kv`'s).
fn data_order(order: crate::cli::args::DataOrderArg) -> crate::template::Order {
    use crate::cli::args::DataOrderArg;
    use crate::template::Order;
    match order {
        DataOrderArg::Sequential => Order::Sequential,
        DataOrderArg::Random => Order::Random,
        DataOrderArg::Unique => Order::Unique,
    }
}

/// `-s FILE.lua`: the script loaded with the target's fields as its `wrk` table shows them (one URL, as wrk takes).
fn load_script(
    a: &RequestArgs,
    path: &std::path::Path,
    endpoints: &[Endpoint],
    d: &Defaults<'_>,
    (connect_timeout, timeout): (Duration, Duration),
    ws: Option<&ws::WsRequest>,
) -> Result<crate::script::Script, UsageError> {
    let one_url = || {
        UsageError::new(format!(
            "--script '{}': give one URL, as wrk takes (the script's wrk.host, wrk.port and wrk.path come from it), not \
         --hosts or --patterns",
            path.display()
        ))
    };
    if a.urls.len() != 1 || a.hosts.is_some() || a.patterns.is_some() {
        return Err(one_url());
    }
    let u = ParsedUrl::parse(&a.urls[0]).map_err(|_| one_url())?;
    let ep = endpoints.first().ok_or_else(one_url)?;
    let target = crate::script::Target {
        scheme: match u.scheme {
            Scheme::Http => "http".into(),
            Scheme::Https => "https".into(),
        },
        host: u.host,
        port: u.port,
        method: d.method.to_string(),
        path: u.path_and_query,
        headers: d.headers.to_vec(),
        body: (!d.body.is_empty()).then(|| d.body.to_vec()),
        addr: ep.addr,
        connect_timeout,
        http2: a.http2.then(|| ep.host_header()),
        http3: a.http3,
        messages: ws.map(|w| w.message.clone()),
    };
    let options = crate::script::Options { sandbox: a.script_sandbox, outside: timeout };
    crate::script::Script::load(path, a.script_args.clone(), target, options)
}

struct Defaults<'a> {
    method: &'a str,
    headers: &'a [(String, String)],
    body: &'a [u8],
    timeout: Duration,
}

struct Builder {
    endpoints: Vec<Endpoint>,
    keepalive: bool,
    /// Requests are HTTP/2 frames.
    http2: bool,
    arena: crate::protocol::RequestArena,
    /// `--connect-to`'s rules and `--proxy`'s choice, for the endpoints a pattern file names.
    pinned: Vec<connect_to::ConnectTo>,
    proxy: proxy::ProxyChoice,
}

impl Builder {
    /// An endpoint (a URL's, a --hosts entry's, a pattern file's): `--connect-to`'s address, `--proxy`'s proxy.
    fn resolve(&self, scheme: Scheme, host: &str, port: u16) -> Result<Endpoint, String> {
        let mut ep = connect_to::resolve(&self.pinned, scheme, host, port)?;
        ep.proxy = self.proxy.for_endpoint(&ep, self.http2);
        Ok(ep)
    }

    fn endpoint(&mut self, ep: Endpoint) -> usize {
        if let Some(i) = self.endpoints.iter().position(|e| *e == ep) {
            return i;
        }
        self.endpoints.push(ep);
        self.endpoints.len() - 1
    }

    fn spec(
        &mut self,
        endpoints: Arc<[usize]>,
        target: &str,
        d: &Defaults<'_>,
        over: Option<&patterns::Pattern>,
    ) -> RequestSpec {
        let over = over.map(patterns::Pattern::fields);
        let method = over.and_then(|p| p.method.as_deref()).unwrap_or(d.method);
        let mut headers = d.headers.to_vec();
        let mut body = over.and_then(|p| p.body.as_deref()).map(str::as_bytes).unwrap_or(d.body);
        // drnbench sends a GET pattern's body object as the query string, form-encoded.
        let with_query;
        let mut target = target;
        if let Some(form) = over.and_then(|p| p.body_form.as_ref()).filter(|_| method.eq_ignore_ascii_case("GET")) {
            with_query = append_form(target, form);
            (target, body) = (with_query.as_str(), &[]);
        }
        if let Some(p) = over {
            for (name, value) in &p.headers {
                headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                headers.push((name.clone(), value.clone()));
            }
        }
        // A body the file gave as a JSON object, sent as JSON (not a GET's query string), says so unless the file
        // or -H names the type.
        let json_body = over.is_some_and(|p| p.body_form.is_some()) && !body.is_empty();
        if json_body && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        let http2 = self.http2;
        let prepared = endpoints
            .iter()
            .map(|&i| {
                let ep = &self.endpoints[i];
                // Plain HTTP/1.1 through a proxy: the request names its whole URL (absolute form), and the proxy's
                // credentials go to the proxy in the request itself.
                let (absolute, proxy_headers);
                let (target, headers) = match ep.proxy.as_deref().filter(|p| !p.tunnel) {
                    Some(p) => {
                        absolute = format!("http://{}{target}", ep.host_header());
                        let mut with = headers.clone();
                        with.extend(p.authorization.iter().map(|v| ("Proxy-Authorization".to_string(), v.clone())));
                        proxy_headers = with;
                        (absolute.as_str(), &proxy_headers)
                    }
                    None => (target, &headers),
                };
                let parts =
                    RequestParts { method, target, host: &ep.host_header(), headers, body, close: !self.keepalive };
                let https = ep.scheme == Scheme::Https;
                self.arena.prepare(method, |out| match http2 {
                    true => crate::protocol::h2::request::write_request(&parts, https, out),
                    false => write_request(&parts, out),
                })
            })
            .collect();
        // Pattern timeouts were bounded when the file was read (patterns::MAX_TIMEOUT_S), so this cannot overflow.
        let timeout = over.and_then(|p| p.timeout).map(Duration::from_secs_f64).unwrap_or(d.timeout);
        // An HTTP/1.1 request's label is its request line's start, read back when asked (RequestSpec::label), unless
        // the line names the whole URL for a proxy.
        let absolute = endpoints.iter().any(|&i| self.endpoints[i].proxy.as_deref().is_some_and(|p| !p.tunnel));
        let label = match http2 || absolute {
            true => crate::secrets::redact_secret(&format!("{method} {target}")).into(),
            false => Box::default(),
        };
        RequestSpec { endpoints, prepared, timeout, group: 0, label }
    }

    fn pattern_specs(
        &mut self,
        set: PatternSet,
        default_hosts: &[usize],
        d: &Defaults<'_>,
        file: &std::path::Path,
    ) -> Result<(Vec<RequestSpec>, Selection), UsageError> {
        let mut specs = Vec::with_capacity(set.groups.iter().map(|g| g.patterns.len()).sum());
        let default_hosts: Arc<[usize]> = default_hosts.into();
        let (mut cumulative, mut groups, mut total) = (Vec::new(), Vec::new(), 0.0);
        for g in set.groups {
            let first = specs.len();
            for p in g.patterns {
                let in_file = |e: String| {
                    UsageError::new(format!(
                        "--patterns {}: pattern '{}': {e}",
                        file.display(),
                        crate::secrets::excerpt(&p.path)
                    ))
                };
                check_pattern(p.fields()).map_err(in_file)?;
                let (endpoints, target): (Arc<[usize]>, _) = if p.path.starts_with('/') {
                    let endpoints = match (&p.fields().host, p.fields().port) {
                        (None, None) => Arc::clone(&default_hosts),
                        (host, port) => {
                            let fallback = default_hosts.first().map(|&i| self.endpoints[i].clone());
                            let host = host.clone().or_else(|| fallback.as_ref().map(|e| e.host.clone()));
                            let Some(host) = host else {
                                return Err(in_file("no host; give a URL, --hosts, or \"host\" in the file".into()));
                            };
                            let port = port.or(fallback.as_ref().map(|e| e.port)).unwrap_or(80);
                            let scheme = fallback.map(|e| e.scheme).unwrap_or(Scheme::Http);
                            Arc::new([self.endpoint(self.resolve(scheme, &host, port).map_err(in_file)?)])
                        }
                    };
                    check_target(&p.path).map_err(in_file)?;
                    (endpoints, p.path.clone())
                } else {
                    let u = ParsedUrl::parse(&p.path).map_err(in_file)?;
                    let ep = self.resolve(u.scheme, &u.host, u.port).map_err(in_file)?;
                    (Arc::new([self.endpoint(ep)]), u.path_and_query)
                };
                if endpoints.is_empty() {
                    return Err(in_file(
                        "paths need a host: give a URL such as http://127.0.0.1:8080 or --hosts".into(),
                    ));
                }
                let mut spec = self.spec(endpoints, &target, d, Some(&p));
                spec.group = groups.len();
                specs.push(spec);
            }
            total += g.frequency;
            cumulative.push(total);
            groups.push(first..specs.len());
        }
        Ok((specs, Selection::Weighted { cumulative, groups }))
    }
}

/// The method and headers a pattern file gives, checked as the flags are: they go into the request bytes as they
/// are.
fn check_pattern(p: &patterns::PatternFields) -> Result<(), String> {
    if let Some(m) = &p.method {
        check_method(m)?;
    }
    for (name, value) in &p.headers {
        check_header(name, value)?;
    }
    Ok(())
}

/// `target` with `form` added to its query string, form-encoded (`a=1&q=x+y`), as Ruby's encode_www_form does.
fn append_form(target: &str, form: &[(String, String)]) -> String {
    let encode = |t: &str| crate::patterns::tools::uri_escape(t).replace("%20", "+");
    let query: Vec<String> = form.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    let joiner = if target.contains('?') { '&' } else { '?' };
    format!("{target}{joiner}{}", query.join("&"))
}

/// A random seed below 2^53, so that JSON readers that hold numbers as doubles keep it exactly.
pub(crate) fn random_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    ((t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)) & ((1 << 53) - 1)
}

/// The engine's arrival model for `--arrival`.
pub fn arrival(a: ArrivalArg) -> Arrival {
    match a {
        ArrivalArg::Uniform => Arrival::Uniform,
        ArrivalArg::Poisson => Arrival::Poisson,
    }
}

/// The lowest rate: one request every 1000 s. Below it the gap between sends (and a thread's share of it)
/// overflows the clock arithmetic of the schedule.
pub const MIN_RATE: f64 = 0.001;
/// The highest rate: one request a nanosecond, the schedule's resolution.
pub const MAX_RATE: f64 = 1e9;

/// Reads `--rate`: requests per second, from [`MIN_RATE`] to [`MAX_RATE`].
pub fn parse_rate(flag: &str, r: f64) -> Result<f64, UsageError> {
    if r.is_finite() && r > 0.0 && !(MIN_RATE..=MAX_RATE).contains(&r) {
        return Err(UsageError::new(format!(
            "{flag} {r:e}: must be from 0.001 (one request every 1000 s) to 1e9 requests per second; try {flag} 1000"
        )));
    }
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        Err(UsageError::new(format!("{flag} {r}: must be more than 0 requests per second; try {flag} 1000")))
    }
}

/// The load flags of `run` and `kv`, checked: when the step stops and how clients send.
pub(crate) fn load_parts(a: &LoadArgs) -> Result<(Until, LoadModel), UsageError> {
    if a.connections == 0 {
        return Err(UsageError::new("--connections 0: must be at least 1; try -c 50"));
    }
    let stop = match (a.requests, &a.duration) {
        (Some(_), Some(_)) => {
            return Err(UsageError::new(
                "--requests and --duration both given: choose one, a count (-n 1000) or a time (-d 30s)",
            ));
        }
        (Some(0), None) => return Err(UsageError::new("--requests 0: must be at least 1")),
        (Some(n), None) => Until::Requests(n),
        (None, Some(d)) => Until::Duration(flag_duration("--duration", d)?),
        (None, None) => Until::Duration(Duration::from_secs(10)),
    };
    check_threads(a.threads)?;
    let load = match a.rate {
        None => LoadModel::Closed { think: Duration::ZERO },
        Some(r) => LoadModel::Open { rate: parse_rate("--rate", r)?, arrival: arrival(a.arrival) },
    };
    match ramp_of(a)? {
        // A ramp lasts its stages; an open one's rate is its peak (each thread's share of the connections).
        Some((ramp, open)) => {
            let stop = Until::Duration(ramp.duration());
            let load = match open {
                true => LoadModel::Open { rate: ramp.peak(), arrival: arrival(a.arrival) },
                false => LoadModel::Closed { think: Duration::ZERO },
            };
            Ok((stop, load))
        }
        None => Ok((stop, load)),
    }
}

/// The most clients a ramp of clients reaches (each is a connection).
const MAX_CLIENTS: usize = 1_000_000;
/// The most stages a ramp takes (a ramp is read by people; thousands of stages would be a script's).
const MOST_STAGES: usize = 100;

/// `--stages` or `--rate-stages` as a ramp, and whether it is of the rate (open loop).
pub(crate) fn ramp_of(a: &LoadArgs) -> Result<Option<(Ramp, bool)>, UsageError> {
    let (flag, text, open) = match (&a.stages, &a.rate_stages) {
        (Some(t), _) => ("--stages", t, false),
        (None, Some(t)) => ("--rate-stages", t, true),
        (None, None) => return Ok(None),
    };
    let ramp = parse_stages(text, open)
        .map_err(|why| UsageError::new(format!("{flag} '{text}': {why}; e.g. {flag} {}", stages_example(open))))?;
    Ok(Some((ramp, open)))
}

/// A ramp's example: of clients (`--stages`, a study's `stages`) or of the rate (`--rate-stages`, `rate_stages`).
pub fn stages_example(open: bool) -> &'static str {
    if open { "30s:100,2m:5000" } else { "30s:10,1m:100,30s:0" }
}

/// A ramp's stages (`30s:10,1m:100`: duration:target, k6's), of the rate (`open`) or of clients, checked as the
/// flags and a study's `[load]` take them; the error says what is wrong, for the caller to put after the name.
pub fn parse_stages(text: &str, open: bool) -> Result<Ramp, String> {
    let what = if open { "a rate" } else { "a client count" };
    let mut stages = Vec::new();
    for part in text.split(',') {
        let bad = |why: String| format!("stage '{part}' {why}");
        let Some((d, target)) = part.trim().split_once(':') else {
            return Err(bad("is not DURATION:TARGET".into()));
        };
        let d = parse_flag_duration(d.trim()).map_err(|e| bad(format!("has a bad duration ({e})")))?;
        if d.is_zero() {
            return Err(bad("lasts no time".into()));
        }
        let target: f64 = target
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(format!("has no {what} (a number from 0) after the colon")))?;
        if open && target > MAX_RATE {
            return Err(bad(format!("asks more than {MAX_RATE:e} requests per second")));
        }
        if !open && (target.fract() != 0.0 || target > MAX_CLIENTS as f64) {
            return Err(bad(format!("needs a whole number of clients up to {MAX_CLIENTS}")));
        }
        stages.push((d, target));
    }
    if stages.len() > MOST_STAGES {
        return Err(format!("{} stages; give at most {MOST_STAGES}", stages.len()));
    }
    let ramp = Ramp::new(&stages).ok_or("no stage")?;
    if ramp.peak() <= 0.0 {
        return Err("every target is 0, so nothing would be sent".into());
    }
    if ramp.duration() > MAX_TIMEOUT {
        return Err("the stages last more than 24h; shorten them".into());
    }
    Ok(ramp)
}

/// The one step of `run` or `kv` over `set`, with its output files checked.
pub(crate) fn one_step(set: &RequestSet, command: &str, a: &LoadArgs) -> Result<RunPlan, UsageError> {
    let (stop, load) = load_parts(a)?;
    check_outputs(&[("--json", a.json.as_deref()), ("--csv", a.csv.as_deref()), ("--hdr-log", a.hdr_log.as_deref())])?;
    let window = flag_window(&a.window)?;
    let scale = segment::Scale::from_args(&a.scale)?;
    let ramp = ramp_of(a)?;
    // A ramp of clients opens as many connections as its peak asks.
    let connections = match &ramp {
        Some((r, false)) => r.peak().ceil() as usize,
        _ => a.connections,
    };
    let mut plan = RunPlan::new(set, command, connections, a.threads, stop, load);
    if let Some((r, open)) = ramp {
        plan.settings.ramp = Some(crate::result::RampSettings {
            of: if open { "rate" } else { "clients" }.into(),
            stages: r.stages().into_iter().map(|(d, v)| crate::result::Stage { duration_s: d, target: v }).collect(),
        });
        plan.ramp = Some(r);
    }
    let mut plan = plan.scaled(&scale)?;
    plan.json = a.json.clone();
    plan.csv = a.csv.clone();
    plan.hdr_log = a.hdr_log.clone();
    plan.window = window;
    plan.quiet = a.quiet;
    plan.live = live::LiveSettings::from_args(&a.live)?;
    Ok(plan)
}

impl RunPlan {
    /// `--data-order unique` has used every row of the data file: no request is left to make.
    pub fn rows_ran_out(&self) -> bool {
        self.template.as_ref().is_some_and(|t| t.feed.exhausted())
            || self.workload.as_ref().is_some_and(|w| w.rows_ran_out())
    }

    pub fn from_args(a: &RunArgs) -> Result<RunPlan, UsageError> {
        // The load flags first: their mistakes are reported before any file is read or name resolved.
        load_parts(&a.load)?;
        let segment = segment::Scale::from_args(&a.load.scale)?.segment;
        let set = RequestSet::from_args(&a.request, segment)?;
        one_step(&set, "run", &a.load)
    }

    /// A plan for one step of `set`: sweeps and capacity searches build one per step.
    pub fn new(
        set: &RequestSet,
        command: &str,
        connections: usize,
        threads: Option<usize>,
        stop: Until,
        load: LoadModel,
    ) -> RunPlan {
        let mut connections = connections.max(1);
        if let Until::Requests(n) = stop {
            // More clients than requests would only open idle connections.
            connections = connections.min(n as usize);
        }
        let threads = threads.unwrap_or_else(|| default_threads(&load, available_cores())).min(connections).max(1);
        let settings = Settings {
            command: command.into(),
            targets: set.targets.clone(),
            method: set.method.clone(),
            headers: set.headers.clone(),
            body_bytes: set.body_bytes,
            connections,
            threads,
            requests: match stop {
                Until::Requests(n) => Some(n),
                Until::Duration(_) => None,
            },
            duration_s: match stop {
                Until::Duration(d) => Some(d.as_secs_f64()),
                Until::Requests(_) => None,
            },
            load_model: match load {
                LoadModel::Closed { .. } => "closed".into(),
                LoadModel::Open { .. } => "open".into(),
            },
            rate: match load {
                LoadModel::Open { rate, .. } => Some(rate),
                LoadModel::Closed { .. } => None,
            },
            arrival: match load {
                LoadModel::Open { arrival, .. } => Some(arrival),
                LoadModel::Closed { .. } => None,
            },
            pace_window_us: match load {
                LoadModel::Open { .. } => Some(set.pace_window.as_micros() as u64),
                LoadModel::Closed { .. } => None,
            },
            keepalive: set.keepalive,
            timeout_s: set.requests.first().map(|r| r.timeout.as_secs_f64()).unwrap_or(0.0),
            connect_timeout_s: set.connect_timeout.as_secs_f64(),
            seed: set.seed,
            insecure: set.insecure,
            tls: set.tls.record.clone(),
            connect_to: set.connect_to.clone(),
            max_requests_per_connection: set.max_requests_per_connection,
            connection_rate: set.connection_rate,
            patterns: set.patterns.clone(),
            script: set.script.as_ref().map(|s| s.file().to_string()),
            data: set.data.clone(),
            ok_status: set.ok_status.text().to_string(),
            segment: None,
            whole_plan: None,
            start_at: None,
            source_address: None,
            unix_socket: unix_sockets(&set.endpoints),
            proxy: proxies(&set.endpoints),
            sweep: None,
            http_version: match set.protocol {
                Protocol::Http3 => Some("3".to_string()),
                p => p.over_http2().then(|| "2".to_string()),
            },
            streams: (set.protocol.over_http2() || set.protocol == Protocol::Http3).then_some(set.streams),
            ws_mode: set.websocket.as_ref().map(|w| w.mode.name().to_string()),
            ramp: None,
            events: set.events.as_ref().map(|e| e.kind.name().to_string()),
            events_until: set.events.as_ref().and_then(|e| e.until().map(String::from)),
            // The command adds the --label flags (they are the history's, not the plan's).
            labels: Default::default(),
        };
        RunPlan {
            endpoints: set.endpoints.clone(),
            requests: set.requests.clone(),
            group_names: set.group_names.clone(),
            selection: set.selection.clone(),
            connections,
            threads,
            stop,
            load,
            keepalive: set.keepalive,
            connect_timeout: set.connect_timeout,
            max_line: set.max_line,
            max_header_list: set.max_header_list,
            seed: set.seed,
            insecure: set.insecure,
            tls: Arc::clone(&set.tls),
            max_requests_per_connection: set.max_requests_per_connection,
            connection_rate: set.connection_rate,
            pace_window: set.pace_window,
            json: None,
            csv: None,
            hdr_log: None,
            window: DEFAULT_WINDOW,
            ramp: None,
            quiet: false,
            live: live::LiveSettings::default(),
            ok_status: set.ok_status.clone(),
            notes: set.warnings.clone(),
            protocol: set.protocol,
            greeting: set.greeting.clone(),
            workload: set.workload.clone(),
            pipeline: set.pipeline,
            script: set.script.clone(),
            template: set.template.clone(),
            streams: set.streams.max(1),
            grpc_messages_out: set.grpc_messages_out,
            grpc: set.grpc,
            events: set.events.clone(),
            websocket: set.websocket.clone(),
            start_at: None,
            slot_offset: Duration::ZERO,
            client_offset: 0,
            all_clients: connections,
            settings,
        }
    }
}

/// The rate one load thread of an open loop is given by default. A thread's pacer sleeps until each slot it is
/// given, so more threads than the rate needs spend more wake-ups per request: on a 16-core machine at 200,000/s,
/// 2 threads spent 9.9 CPU microseconds a request and 4 threads 15.8, and 2 kept the rate (docs/performance.md).
pub const OPEN_RATE_PER_THREAD: f64 = 100_000.0;

/// Threads when `--threads` is not given: every core for a closed loop; for an open loop, one per
/// [`OPEN_RATE_PER_THREAD`] of its (peak) rate, at most every core.
pub fn default_threads(load: &LoadModel, cores: usize) -> usize {
    let cores = cores.max(1);
    match load {
        LoadModel::Closed { .. } => cores,
        LoadModel::Open { rate, .. } => ((rate / OPEN_RATE_PER_THREAD).ceil() as usize).clamp(1, cores),
    }
}

/// `--threads 0` is refused; absent means every core (an open loop: as its rate needs, see [`default_threads`]).
pub fn check_threads(threads: Option<usize>) -> Result<(), UsageError> {
    if threads == Some(0) {
        return Err(UsageError::new("--threads 0: must be at least 1; leave it out to use every core"));
    }
    Ok(())
}

/// Checks an output file before the run, so a bad path fails now and not after the load; nothing is created,
/// so a run that ends early leaves no empty file behind.
pub fn check_writable(path: &std::path::Path) -> Result<(), UsageError> {
    crate::export::check_output(path).map_err(|e| {
        UsageError::new(format!("output file '{}': cannot write it ({e}); pick a writable path", path.display()))
    })
}

/// Checks every output (flag and path) and that no two lead to the same file: each would overwrite the other
/// after every step, and one format would be lost.
pub fn check_outputs(outputs: &[(&str, Option<&std::path::Path>)]) -> Result<(), UsageError> {
    let mut seen: Vec<(&str, &std::path::Path, crate::export::OutputId)> = Vec::new();
    for &(flag, path) in outputs {
        let Some(path) = path else { continue };
        check_writable(path)?;
        let id = crate::export::output_id(path).map_err(|e| {
            UsageError::new(format!("{flag} '{}': cannot write it ({e}); pick a writable path", path.display()))
        })?;
        if let Some((other, other_path, _)) = seen.iter().find(|(_, _, i)| *i == id) {
            return Err(UsageError::new(format!(
                "{other} '{}' and {flag} '{}' are the same file: each output needs its own path",
                other_path.display(),
                path.display()
            )));
        }
        seen.push((flag, path, id));
    }
    Ok(())
}

/// What watches the server, checked now (a pid that does not exist, a probe without a pointer: bad input before
/// any load); the process monitor starts sampling here. Without a `--monitor-*` flag, the processes listening on
/// the ports of targets on this machine (loopback) are watched, so the analysis can name the bottleneck.
pub fn watchers(a: &WatchArgs, endpoints: &[Endpoint]) -> Result<Watchers, UsageError> {
    let spec = WatchSpec { pids: a.monitor_pid.clone(), names: a.monitor_name.clone(), ports: a.monitor_port.clone() };
    let monitor = if !spec.is_empty() {
        Some(ProcessMonitor::start(&spec, Duration::from_secs(1))?)
    } else if a.no_monitor {
        None
    } else {
        local_server(endpoints).and_then(|pids| {
            ProcessMonitor::start(&WatchSpec { pids, ..WatchSpec::default() }, Duration::from_secs(1)).ok()
        })
    };
    let mut probes = a.probe.iter().map(|p| Probe::parse(p)).collect::<Result<Vec<_>, _>>()?;
    monitor::unique_names(&mut probes);
    let expected_hit_rate = a
        .expect_hit_rate
        .as_deref()
        .map(|r| {
            crate::patterns::tools::parse_hit_rate(r)
                .map_err(|_| UsageError::new(format!("--expect-hit-rate '{r}': not a rate; write it like 0.5 or 50%")))
        })
        .transpose()?;
    if expected_hit_rate.is_some() && !probes.iter().any(|p| is_hit_rate_probe(&p.name)) {
        return Err(UsageError::new(
            "--expect-hit-rate needs a probe of the hit rate, e.g. --probe 'http://HOST:10041/d/status#/1/cache_hit_rate'",
        ));
    }
    Ok(Watchers { monitor, probes, expected_hit_rate })
}

/// `--unix-socket PATH` beside an http:// URL: the socket checked now, the URL's host and port kept for the Host
/// header. TLS over a Unix socket is not offered yet.
fn unix_endpoint(u: &ParsedUrl, path: &std::path::Path, shown: &str) -> Result<Endpoint, UsageError> {
    if u.scheme == Scheme::Https {
        return Err(UsageError::new(format!(
            "URL '{shown}': --unix-socket takes http:// URLs (TLS over a Unix socket is not supported); write http://"
        )));
    }
    Endpoint::on_socket(u.scheme, &u.host, u.port, path).map_err(|e| UsageError::new(format!("--unix-socket {e}")))
}

/// The Unix sockets of the endpoints, comma-separated, for the document; None when they are all TCP.
/// The proxies of the endpoints, as the document records them (passwords hidden); None without one.
fn proxies(endpoints: &[Endpoint]) -> Option<String> {
    let mut shown: Vec<&str> = endpoints.iter().filter_map(|e| e.proxy.as_deref()).map(|p| p.shown.as_str()).collect();
    shown.dedup();
    (!shown.is_empty()).then(|| shown.join(","))
}

fn unix_sockets(endpoints: &[Endpoint]) -> Option<String> {
    let mut paths: Vec<String> =
        endpoints.iter().filter_map(|e| Some(e.unix.as_ref()?.display().to_string())).collect();
    paths.dedup();
    (!paths.is_empty()).then(|| paths.join(","))
}

/// The processes (not hakaru itself) listening on the ports of the loopback targets, or on their Unix sockets;
/// None when there are none.
fn local_server(endpoints: &[Endpoint]) -> Option<Vec<u32>> {
    let mut ports: Vec<u16> = endpoints.iter().filter(|e| e.addr.ip().is_loopback()).map(|e| e.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let me = std::process::id();
    let on_sockets = endpoints.iter().filter_map(|e| e.unix.as_deref()).flat_map(monitor::pids_on_unix_socket);
    let mut pids: Vec<u32> =
        ports.into_iter().flat_map(monitor::pids_listening).chain(on_sockets).filter(|&p| p != me).collect();
    pids.sort_unstable();
    pids.dedup();
    (!pids.is_empty()).then_some(pids)
}

pub fn serve_options(a: &ServeArgs) -> Result<crate::serve::ServeOptions, UsageError> {
    let listen: SocketAddr = a.listen.parse().map_err(|_| {
        UsageError::new(format!("--listen '{}': not an address; write it like 127.0.0.1:8080", a.listen))
    })?;
    if a.threads == Some(0) {
        return Err(UsageError::new("--threads 0: must be at least 1"));
    }
    if a.workers == Some(0) {
        return Err(UsageError::new("--workers 0: must be at least 1; leave it out for no limit"));
    }
    let miss_cost = parse_flag_duration(&a.miss_cost)
        .map_err(|e| UsageError::new(format!("--miss-cost '{}': {e}", a.miss_cost)))?;
    Ok(crate::serve::ServeOptions {
        listen,
        threads: a.threads.unwrap_or_else(available_cores),
        workers: a.workers,
        miss_cost,
        cache_size: a.cache_size.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;

    #[test]
    fn an_open_loop_takes_a_thread_per_100k_requests_a_second_and_a_closed_loop_every_core() {
        let open = |rate| LoadModel::Open { rate, arrival: Arrival::Uniform };
        assert_eq!(default_threads(&open(20_000.0), 2), 1, "a low rate: one thread, however many cores");
        assert_eq!(default_threads(&open(100_000.0), 16), 1);
        assert_eq!(default_threads(&open(100_001.0), 16), 2);
        assert_eq!(default_threads(&open(250_000.0), 16), 3);
        assert_eq!(default_threads(&open(250_000.0), 2), 2, "never more than the cores");
        assert_eq!(default_threads(&open(0.5), 0), 1, "at least one");
        assert_eq!(default_threads(&LoadModel::Closed { think: Duration::ZERO }, 8), 8);
    }

    #[test]
    fn a_request_says_what_it_is_from_its_request_line_or_its_label_and_hides_a_token() {
        let (mut arena, headers) =
            (crate::protocol::RequestArena::default(), vec![("X-A".to_string(), "b".to_string())]);
        let parts = RequestParts {
            method: "POST",
            target: "/d/select?q=a&token=abc",
            host: "h:81",
            headers: &headers,
            body: b"{}",
            close: false,
        };
        let spec = |prepared: Prepared, label: &str| RequestSpec {
            endpoints: Arc::new([0]),
            prepared,
            timeout: Duration::from_secs(1),
            group: 0,
            label: label.into(),
        };
        let one = arena.prepare("POST", |out| write_request(&parts, out));
        let http1 = spec(Prepared::One(one.clone()), "");
        assert_eq!(http1.label(), "POST /d/select?q=a&token=***");
        assert_eq!((&http1.prepared[0].bytes[..4], one.idempotent), (&b"POST"[..], false));
        // Requests cut from one block keep their own bytes.
        let two = arena.prepare("GET", |out| write_request(&RequestParts { method: "GET", ..parts }, out));
        assert!(two.bytes.starts_with(b"GET /d/select") && one.bytes.starts_with(b"POST /d/select"));
        assert!(two.idempotent);
        let many = spec([one, two].into_iter().collect(), "GET /h2");
        assert!(matches!(many.prepared, Prepared::Many(_)) && many.prepared.len() == 2);
        assert_eq!(many.label(), "GET /h2", "a label given is the label");
    }
}
