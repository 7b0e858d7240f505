//! Raw flags turned into a validated plan before any load is sent: every mistake is one line naming the flag.
//! [`RunPlan`] is one step; [`steps`] plans several steps (sweeps, capacity searches); [`slo`] is the objective
//! of a capacity search.

mod builder;
mod checks;
pub mod connect_to;
mod data;
pub mod events;
mod flags;
mod grpc;
mod h3;
pub mod kv;
pub mod kv_guard;
pub mod live;
pub mod llm;
mod load;
pub mod proxy;
pub mod replay;
pub mod segment;
pub mod slo;
pub mod steps;
pub mod tls;
pub mod wire;
mod ws;

use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::base::load::{Arrival, LoadModel, Ramp, Until};
use crate::base::target::{Endpoint, ParsedUrl, Scheme, split_host_port};
use crate::base::units::parse_flag_duration;
use crate::cli::args::{ArrivalArg, LoadArgs, RequestArgs, RunArgs, ServeArgs, WatchArgs};
use crate::error::CliError;
use crate::metrics::StatusSet;
use crate::monitor::{self, Probe, ProcessMonitor, WatchSpec, Watchers, available_cores, is_hit_rate_probe};
use crate::patterns::{self, PatternSet};
use crate::protocol::events::EventsSpec;
use crate::protocol::http::RequestParts;
use crate::protocol::http::request::write_request;
use crate::protocol::http::request::{check_header, check_method, check_target};
use crate::protocol::{PreparedRequest, Protocol};
use crate::result::Settings;
use crate::workload::Workload;
use builder::*;
pub use checks::*;
use data::*;
pub use flags::*;
pub use load::*;

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
        crate::base::secrets::redact_secret(&String::from_utf8_lossy(line))
    }
}

/// How the next request is chosen.
#[derive(Clone, Debug)]
pub enum Selection {
    /// Every spec in turn (URLs given on the command line).
    RoundRobin,
    /// Every spec in order, the thread's clients taking turns from one cursor (a replay's records).
    InOrder,
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
    /// `--graceful-stop`: how long a timed step's answers in flight may finish after its end (None: the requests'
    /// timeout; see [`RunPlan::graceful_stop`]).
    pub graceful_stop: Option<Duration>,
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
    /// The wire protocol of every request, with what only it needs (streams, gRPC's, WebSocket's, a greeting).
    pub wire: wire::Wire,
    /// Key-value workloads make each request as they go (keys, values, checks); None sends `requests` as built.
    pub workload: Option<Arc<Workload>>,
    /// Requests written together on a connection before their replies are read (1: one at a time).
    pub pipeline: usize,
    /// `-s`: a wrk Lua script builds every request (the `requests` above only label them).
    pub script: Option<Arc<crate::script::Script>>,
    /// `--data` or `{{...}}` in the request: every request filled from its template as the load runs.
    pub template: Option<Arc<crate::template::Template>>,
    /// `--events`: each answer read as a stream of events.
    pub events: Option<Arc<EventsSpec>>,
    /// `--replay` paced as recorded: the slots' offsets the pacer follows.
    pub replay: Option<replay::ReplaySchedule>,
    /// `--replay --dry-run`: what would be sent, printed in place of the run.
    pub replay_preview: Option<String>,
    /// A replay's requests in all (every record, every pass): a timed step sends no more, whatever its pace (a
    /// closed loop or a rate would otherwise go round the records until the time is up).
    pub most_requests: Option<u64>,
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
    /// `--graceful-stop`, when given.
    pub graceful_stop: Option<Duration>,
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
    /// The wire protocol of every request, with what only it needs (streams, gRPC's, WebSocket's, a greeting).
    pub wire: wire::Wire,
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
    /// `--events`: each answer read as a stream of events.
    pub events: Option<Arc<EventsSpec>>,
}

/// The most `--streams` takes: more than any server allows (nginx 128, h2o 100 by default).
pub const MAX_STREAMS: usize = 10_000;

/// A method of digits is h2load's habit (`-m 16` is its streams per connection; hakaru's `-m` is the method): a
/// server would answer every request 400, so it is refused with the flag meant.
fn numeric_method(method: &str, http2: bool) -> Result<(), CliError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    let meant = if http2 { format!("--streams {method}") } else { format!("--http2 --streams {method}") };
    Err(CliError::new(format!(
        "--method '{method}': a method is a word such as GET or POST (hakaru's -m is the method, h2load's is the \
         streams per connection); did you mean {meant}?"
    )))
}

/// `--http2` and `--streams`, checked: the streams per connection.
fn http2_streams(a: &RequestArgs) -> Result<usize, CliError> {
    match (a.http2 || a.http3, a.streams) {
        (false, Some(n)) => Err(CliError::new(format!(
            "--streams {n}: streams are HTTP/2's and HTTP/3's; add --http2 or --http3 (or leave --streams out)"
        ))),
        (true, Some(0)) => Err(CliError::new("--streams 0: must be at least 1; try --streams 10")),
        (true, Some(n)) if n > MAX_STREAMS => Err(CliError::new(format!(
            "--streams {n}: at most {MAX_STREAMS} per connection (servers allow about 100); try --streams 100"
        ))),
        (true, _) if a.no_keepalive => Err(CliError::new(format!(
            "--no-keepalive with {0}: {0} keeps its connections open; leave --no-keepalive out",
            if a.http3 { "--http3" } else { "--http2" }
        ))),
        (_, n) => Ok(n.unwrap_or(1)),
    }
}

impl RequestSet {
    /// `segment`: a scaled-out agent's `--segment`, whose share of `--data`'s rows it takes.
    pub fn from_args(a: &RequestArgs, segment: Option<segment::Segment>) -> Result<RequestSet, CliError> {
        Self::with_rows(a, segment, None)
    }

    /// As [`from_args`](Self::from_args), the template's rows given (an LLM dataset's, read already): a
    /// scaled-out agent's share of them taken here.
    pub fn with_rows(
        a: &RequestArgs,
        segment: Option<segment::Segment>,
        given: Option<crate::template::data::Rows>,
    ) -> Result<RequestSet, CliError> {
        Self::with_inputs(a, segment, given, None)
    }

    /// As [`with_rows`](Self::with_rows), with a replay's records as the requests (`run --replay`).
    fn with_inputs(
        a: &RequestArgs,
        segment: Option<segment::Segment>,
        given: Option<crate::template::data::Rows>,
        replayed: Option<replay::Replayed>,
    ) -> Result<RequestSet, CliError> {
        let given = match (given, segment) {
            (Some(mut rows), Some(s)) => {
                rows.keep_share(s.index, s.count).map_err(|why| CliError::new(format!("--segment: {why}")))?;
                Some(rows)
            }
            (given, _) => given,
        };
        // A secret header's value (`-H`, `--metadata`) is hidden wherever a peer echoes it back (a grpc-message, an
        // error reply), from the first thing sent on: the server's reflection answer too.
        for h in &a.headers {
            crate::base::secrets::remember_header(h);
        }
        if let Some(m) = a.metadata.as_deref().and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok()) {
            for (k, v) in m.as_object().into_iter().flatten() {
                crate::base::secrets::remember_header(&format!("{k}: {}", v.as_str().unwrap_or_default()));
            }
        }
        // A gRPC call is an HTTP/2 request the plan below builds as any other, its message framed already.
        let mut grpc = grpc::prepare(a, segment)?;
        // `--data`'s rows in a gRPC message: read and encoded already, each call sends its row's; with built-ins
        // the template fills the JSON per call, and the call encoder makes it a message.
        let (loaded_rows, row_bodies, per_call) = match grpc.as_mut().and_then(|g| g.messages.take()) {
            Some(grpc::Messages::Rows(r)) => (Some(r.rows), Some(r.bodies), None),
            Some(grpc::Messages::PerCall(p)) => (p.rows, None, Some((p.json, p.encoder))),
            None => (given, None, None),
        };
        let a = grpc.as_ref().map_or(a, |g| &g.args);
        // So is a WebSocket run: its URL's connection and upgrade are HTTP's, its message the request's bytes.
        let ws = ws::prepare(a)?;
        let a = ws.as_ref().map_or(a, |w| &w.args);
        let timeout = flag_timeout("--timeout", &a.timeout)?;
        let connect_timeout = flag_timeout("--connect-timeout", &a.connect_timeout)?;
        let graceful_stop = a.graceful_stop.as_deref().map(flag_graceful_stop).transpose()?;
        let max_line = flag_max_line(&a.max_line)?;
        let method = a.method.trim().to_ascii_uppercase();
        check_method(&method).map_err(|e| CliError::new(format!("--method '{}': {e}", a.method.escape_debug())))?;
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
                    CliError::new(format!("--header '{first}{more}': missing ':'; write it as \"Name: value\""))
                })?;
                let (name, value) = (name.trim(), value.trim());
                check_header(name, value).map_err(|e| {
                    // The value is quoted only under a name that is a header's and no secret's (a gRPC
                    // --metadata key such as "auth token" is neither).
                    let shown = match crate::base::secrets::is_secret_header(name) || check_header(name, "").is_err() {
                        true => format!("{}: <redacted>", name.escape_debug()),
                        false => h.escape_debug().to_string(),
                    };
                    CliError::new(format!("--header '{shown}': {e}"))
                })?;
                Ok((name.to_string(), value.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ok_status = StatusSet::parse(&a.ok_status).map_err(|why| {
            CliError::new(format!("--ok-status '{}': {why}; write codes and ranges like 200-299,304", a.ok_status))
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
            return Err(CliError::new(
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
                return Err(CliError::new(format!("--max-requests-per-connection {n}: {why}")));
            }
        }
        let proxy = proxy::ProxyChoice::from_flag(a.proxy.as_deref(), |name| std::env::var(name).ok())?;
        // Every endpoint, of a URL, --hosts or a pattern file, is made by `Builder::resolve` with these.
        (b.pinned, b.proxy) = (pinned, proxy);
        if let Some(path) = &a.unix_socket
            && a.proxy.is_some()
        {
            return Err(CliError::new(format!(
                "--unix-socket {}: connections go to the socket, not through --proxy; drop one",
                path.display()
            )));
        }
        if let Some(path) = &a.unix_socket
            && (a.hosts.is_some() || a.patterns.is_some())
        {
            return Err(CliError::new(format!(
                "--unix-socket {}: one socket takes the URLs given, not --hosts or --patterns; drop one",
                path.display()
            )));
        }
        if let Some(hosts) = &a.hosts {
            if a.port == Some(0) {
                return Err(CliError::new("--port 0: not a port; give a number from 1 to 65535"));
            }
            let port = a.port.unwrap_or(80);
            for entry in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                let bad = |e: String| CliError::new(format!("--hosts '{hosts}': {e}; write --hosts a,b:8080"));
                // An entry's own port (`a:8080`) wins over --port, as it would in a URL.
                let (host, own_port) = split_host_port(entry).map_err(bad)?;
                let ep = b.resolve(Scheme::Http, &host, own_port.unwrap_or(port)).map_err(bad)?;
                default_hosts.push(b.endpoint(ep));
            }
            if default_hosts.is_empty() {
                return Err(CliError::new(format!(
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
                    return Err(CliError::new(format!(
                        "'{path}': with --hosts give paths such as /d/select?q=a, not URLs"
                    )));
                }
                check_target(path).map_err(|e| CliError::new(format!("'{}': {e}", path.escape_debug())))?;
                targets.push(format!("{{{hosts}}}:{port}{path}"));
                specs.push(b.spec(default_hosts.as_slice().into(), path, &defaults, None));
            }
        } else {
            if a.port.is_some() {
                return Err(CliError::new("--port: only used with --hosts; put the port in the URL instead"));
            }
            for url in &urls {
                let shown = crate::base::target::shown(url);
                let u = ParsedUrl::parse(url).map_err(|e| CliError::new(format!("URL '{shown}': {e}")))?;
                // A socket takes no proxy (refused above with --proxy).
                let ep = match &a.unix_socket {
                    Some(path) => unix_endpoint(&u, path, &shown)?,
                    None => b
                        .resolve(u.scheme, &u.host, u.port)
                        .map_err(|e| CliError::new(format!("URL '{shown}': {e}")))?,
                };
                let idx = b.endpoint(ep);
                if default_hosts.is_empty() {
                    default_hosts.push(idx);
                }
                targets.push(crate::base::secrets::redact_secret(url));
                if a.patterns.is_none() && replayed.is_none() {
                    specs.push(b.spec(Arc::new([idx]), &u.path_and_query, &defaults, None));
                }
            }
        }

        let mut group_names = Vec::new();
        let mut wait = None;
        let selection = if let Some(path) = &a.patterns {
            let set = patterns::load(path).map_err(|e| CliError::new(format!("--patterns {e}")))?;
            group_names = set.groups.iter().map(|g| g.name.clone()).collect();
            wait = set.wait;
            warnings.extend(set.warnings.iter().map(|w| format!("--patterns {}: {w}", path.display())));
            targets.push(format!("patterns:{}", path.display()));
            // The set is spent as its requests are built: its memory goes to them rather than beside them.
            let (pattern_specs, selection) = b.pattern_specs(set, &default_hosts, &defaults, path)?;
            specs = pattern_specs;
            selection
        } else if let Some(r) = &replayed {
            // Each record a request to the URL's target, its method and body the recorded ones.
            let Some(&idx) = default_hosts.first() else {
                return Err(CliError::new("--replay: give the target's URL, e.g. http://127.0.0.1:8080/"));
            };
            let endpoints: Arc<[usize]> = Arc::new([idx]);
            // Each record's path, method and headers were checked as the file was read (plan/replay.rs: a record no
            // request can be made of is skipped there, and said).
            for rec in &r.records {
                let fields = patterns::PatternFields {
                    method: Some(rec.method.clone()),
                    body: rec.body.clone(),
                    headers: rec.headers.clone(),
                    ..Default::default()
                };
                let pattern = patterns::Pattern::new(rec.path.clone(), fields);
                specs.push(b.spec(Arc::clone(&endpoints), &rec.path, &defaults, Some(&pattern)));
            }
            Selection::InOrder
        } else {
            Selection::RoundRobin
        };
        if specs.is_empty() {
            return Err(CliError::new(
                "no target: give a URL such as http://127.0.0.1:8080/ (or --hosts with paths, or --patterns)",
            ));
        }
        let template = match data {
            None => None,
            Some(data) => {
                targets = a.urls.iter().map(|u| crate::base::secrets::redact_secret(u)).collect();
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
                    spec.label =
                        crate::base::secrets::redact_secret(&format!("{method} {}", path.unwrap_or("/"))).into();
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
            return Err(CliError::new(
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
            headers: a.headers.iter().map(|h| crate::base::secrets::redact_secret(h)).collect(),
            patterns: a.patterns.as_ref().map(|p| p.display().to_string()),
            endpoints: b.endpoints,
            requests: Arc::new(specs),
            selection,
            group_names,
            keepalive: !a.no_keepalive,
            connect_timeout,
            graceful_stop,
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
            wire: match (&grpc, websocket) {
                (_, Some(w)) => wire::Wire::WebSocket(w),
                _ if a.http3 => wire::Wire::Http3 { streams },
                (Some(g), None) => {
                    wire::Wire::Grpc { streams, messages_out: g.messages_per_call, settings: g.settings }
                }
                (None, None) if a.http2 => wire::Wire::Http2 { streams },
                (None, None) => wire::Wire::Http1,
            },
            workload: None,
            pipeline: 1,
            script,
            template,
            data: a.data.as_ref().map(|p| format!("{} ({})", p.display(), a.data_order.name())),
            events: events::from_args(a)?,
        })
    }
}

/// A random seed below 2^53, so that JSON readers that hold numbers as doubles keep it exactly.
pub(crate) fn random_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    ((t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)) & ((1 << 53) - 1)
}

/// The one step of `run` or `kv` over `set`, with its output files checked.
pub(crate) fn one_step(set: &RequestSet, command: &str, a: &LoadArgs) -> Result<RunPlan, CliError> {
    one_step_with(set, command, a, None)
}

/// [`one_step`], its stop and load model given (a replay's) rather than read from `a`.
fn one_step_with(
    set: &RequestSet,
    command: &str,
    a: &LoadArgs,
    given: Option<(Until, LoadModel)>,
) -> Result<RunPlan, CliError> {
    let (stop, load) = match given {
        Some(g) => g,
        None => load_parts(a)?,
    };
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
    /// How long a timed step's answers in flight may finish after its end: `--graceful-stop`, else the longest
    /// request timeout (an answer that takes longer fails anyway). None in WebSocket's listen mode, where a client
    /// awaits the server's next message, not an answer to anything it sent.
    pub fn graceful_stop(&self) -> Option<Duration> {
        if self.wire.websocket().is_some_and(|w| w.mode == crate::protocol::ws::Mode::Listen) {
            return None;
        }
        // Agents started together (`--start-at`) end their steps together: a wait of each one's own would move the
        // steps that follow apart.
        if self.start_at.is_some() {
            return None;
        }
        let longest = self.requests.iter().map(|r| r.timeout).max().unwrap_or_default();
        Some(self.graceful_stop.unwrap_or(longest)).filter(|d| !d.is_zero())
    }

    /// `--data-order unique` has used every row of the data file: no request is left to make.
    pub fn rows_ran_out(&self) -> bool {
        self.template.as_ref().is_some_and(|t| t.feed.exhausted())
            || self.workload.as_ref().is_some_and(|w| w.rows_ran_out())
    }

    pub fn from_args(a: &RunArgs) -> Result<RunPlan, CliError> {
        // The load flags first: their mistakes are reported before any file is read or name resolved.
        load_parts(&a.load)?;
        let segment = segment::Scale::from_args(&a.load.scale)?.segment;
        let replayed = replay::read(&a.replay, &a.request)?;
        let Some(r) = replayed else {
            let set = RequestSet::from_args(&a.request, segment)?;
            return one_step(&set, "run", &a.load);
        };
        if segment.is_some() || a.load.scale.agents.is_some() {
            return Err(CliError::new("--replay: one process replays the file; leave out --agents and --segment"));
        }
        let schedule = r.schedule.clone();
        let summary = r.summary.clone();
        let preview = r.preview.clone();
        let set = RequestSet::with_inputs(&a.request, segment, None, Some(r))?;
        let (stop, load) = load_parts(&a.load)?;
        let (stop, load) = replay::load(&a.replay, &schedule, stop, load, &a.load)?;
        let mut plan = one_step_with(&set, "run", &a.load, Some((stop, load)))?;
        (plan.threads, plan.settings.threads) = (1, 1);
        plan.most_requests = Some(schedule.total);
        if load.is_recorded() {
            plan.replay = Some(schedule);
        }
        plan.settings.replay = Some(summary);
        plan.replay_preview = preview;
        Ok(plan)
    }

    /// The flags a process that only starts agents checks itself (it builds no plan of its own): the load's and the
    /// events', so a mistake is one line here rather than one in every agent.
    pub fn check_for_agents(request: Option<&RequestArgs>, load: &LoadArgs) -> Result<(), CliError> {
        if let Some(r) = request {
            events::from_args(r)?;
        }
        load_parts(load).map(|_| ())
    }

    /// `hakaru llm`'s plan: `run`'s, its requests from the dataset.
    pub fn from_llm(prepared: llm::Prepared) -> Result<RunPlan, CliError> {
        let a = &prepared.args;
        let (stop, load) = load_parts(&a.load)?;
        let segment = segment::Scale::from_args(&a.load.scale)?.segment;
        let set = RequestSet::with_rows(&a.request, segment, prepared.rows)?;
        let mut plan = match prepared.schedule {
            // A trace: each request at its recorded time, on one thread (its rows taken in order).
            Some(schedule) => {
                let n = schedule.total as f64;
                let span = schedule.offset(schedule.total.saturating_sub(1)).max(1) as f64 / 1e6;
                let recorded =
                    LoadModel::Open { rate: (n / span).clamp(MIN_RATE, MAX_RATE), arrival: Arrival::Recorded };
                let mut plan = one_step_with(&set, "llm", &a.load, Some((stop, recorded)))?;
                (plan.threads, plan.settings.threads) = (1, 1);
                plan.replay = Some(schedule);
                plan
            }
            None => one_step_with(&set, "llm", &a.load, Some((stop, load)))?,
        };
        plan.settings.prompts = Some(prepared.note);
        plan.settings.percentile_metrics = prepared.percentile_metrics;
        Ok(plan)
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
            burstiness: match load {
                LoadModel::Open { arrival, .. } => arrival.burstiness(),
                LoadModel::Closed { .. } => None,
            },
            pace_window_us: match load {
                LoadModel::Open { .. } => Some(set.pace_window.as_micros() as u64),
                LoadModel::Closed { .. } => None,
            },
            keepalive: set.keepalive,
            timeout_s: set.requests.first().map(|r| r.timeout.as_secs_f64()).unwrap_or(0.0),
            connect_timeout_s: set.connect_timeout.as_secs_f64(),
            graceful_stop_s: set.graceful_stop.map(|d| d.as_secs_f64()),
            seed: set.seed,
            insecure: set.insecure,
            tls: set.tls.record.clone(),
            connect_to: set.connect_to.clone(),
            max_requests_per_connection: set.max_requests_per_connection,
            connection_rate: set.connection_rate,
            patterns: set.patterns.clone(),
            script: set.script.as_ref().map(|s| s.file().to_string()),
            data: set.data.clone(),
            prompts: None,
            percentile_metrics: None,
            replay: None,
            ok_status: set.ok_status.text().to_string(),
            segment: None,
            whole_plan: None,
            start_at: None,
            source_address: None,
            unix_socket: unix_sockets(&set.endpoints),
            proxy: proxies(&set.endpoints),
            sweep: None,
            http_version: match set.wire.protocol() {
                Protocol::Http3 => Some("3".to_string()),
                p => p.over_http2().then(|| "2".to_string()),
            },
            streams: (set.wire.protocol().over_http2() || set.wire.protocol() == Protocol::Http3)
                .then_some(set.wire.streams()),
            ws_mode: set.wire.websocket().map(|w| w.mode.name().to_string()),
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
            graceful_stop: set.graceful_stop,
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
            wire: set.wire.clone(),
            workload: set.workload.clone(),
            pipeline: set.pipeline,
            script: set.script.clone(),
            template: set.template.clone(),
            events: set.events.clone(),
            replay: None,
            replay_preview: None,
            most_requests: None,
            start_at: None,
            slot_offset: Duration::ZERO,
            client_offset: 0,
            all_clients: connections,
            settings,
        }
    }
}

#[cfg(test)]
mod tests;
