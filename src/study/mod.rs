//! Studies (`hakaru study FILE.toml`): the study file's model, its checks, and the plan they give: every target x
//! workload x phase x repetition as one case, in the interleaved order they run (repetition outermost, so drift
//! hits every target alike), each with the `run` / `sweep` / `kv` arguments its child process gets.
//!
//! The file is read with serde (`deny_unknown_fields`); a mistake is one line with the file, line, column, key
//! and fix. [`runner`] runs a plan, [`manifest`] is the `study.json` other commands read, [`summary`] the merged
//! CSV and the table over repetitions.

pub mod connection;
pub mod manifest;
pub mod runner;
pub mod summary;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::cli::args::{
    ArrivalArg, HistoryArgs, KvArgs, LiveArgs, LoadArgs, RequestArgs, RunArgs, SweepArgs, WatchArgs,
};
use crate::cli::render::{defaults, render};
use crate::error::UsageError;
use crate::units::parse_flag_duration;

/// The study file as written: `[[target]]`, `[[workload]]`, `[load]`, `[[phase]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyFile {
    name: Option<String>,
    /// Free text for the reader of the file; not used.
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    target: Vec<TargetSpec>,
    #[serde(default)]
    workload: Vec<WorkloadSpec>,
    #[serde(default)]
    load: LoadSpec,
    #[serde(default)]
    phase: Vec<PhaseSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetSpec {
    name: String,
    url: Option<String>,
    urls: Option<Vec<String>>,
    start: Option<String>,
    stop: Option<String>,
    ready: Option<String>,
    ready_timeout: Option<String>,
    monitor: Option<Vec<String>>,
    #[serde(default)]
    probe: Vec<String>,
    #[serde(default)]
    headers: Vec<String>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    http2: bool,
    #[serde(default)]
    http3: bool,
    streams: Option<usize>,
    proxy: Option<String>,
    cacert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    tls_version: Option<String>,
    sni: Option<String>,
    tls_resume: Option<bool>,
    /// `--0rtt` (with `http3 = true`).
    #[serde(default)]
    zero_rtt: bool,
    #[serde(default)]
    connect_to: Vec<String>,
    max_requests_per_connection: Option<u64>,
    connection_rate: Option<f64>,
    /// `--unix-socket`: the HTTP target's connections go to this socket.
    unix_socket: Option<String>,
    /// A grpc:// target's types: `--proto`, `--protoset`, `--import-path`.
    proto: Option<String>,
    protoset: Option<String>,
    #[serde(default)]
    import_path: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadSpec {
    name: String,
    /// A gRPC method (`--call package.Service/Method`), for grpc:// targets.
    call: Option<String>,
    path: Option<String>,
    paths: Option<Vec<String>>,
    method: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    body: Option<String>,
    body_file: Option<String>,
    /// A WebSocket target's message (`--message`) and what a request is (`--ws-mode`).
    message: Option<String>,
    ws_mode: Option<String>,
    patterns: Option<String>,
    /// A wrk Lua script (`-s`), and the words its init(args) gets.
    script: Option<String>,
    #[serde(default)]
    script_args: Vec<String>,
    /// A data file for `{{column}}` templates (`--data`), and how its rows are taken.
    data: Option<String>,
    data_order: Option<String>,
    /// Streamed answers (`--events`, `--events-until`).
    events: Option<String>,
    events_until: Option<String>,
    mix: Option<String>,
    keys: Option<u64>,
    value_size: Option<u64>,
    key_prefix: Option<String>,
    /// Key-value command templates (`hakaru kv --command`), their shares (`--command-ratio`), and a Lua script
    /// loaded on Redis for `__sha__` (`kv --script`).
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    command_ratio: Vec<f64>,
    redis_script: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadSpec {
    connections: Option<u64>,
    duration: Option<String>,
    requests: Option<u64>,
    rate: Option<f64>,
    clients: Option<Vec<u64>>,
    rates: Option<Vec<f64>>,
    /// A ramp of clients inside each case, as `--stages` takes it: "30s:10,1m:100,30s:0".
    stages: Option<String>,
    /// A ramp of the rate inside each case, as `--rate-stages` takes it: "30s:100,2m:5000".
    rate_stages: Option<String>,
    interval: Option<String>,
    warmup: Option<String>,
    repeat: Option<u32>,
    pause: Option<String>,
    threads: Option<u64>,
    timeout: Option<String>,
    seed: Option<u64>,
    arrival: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseSpec {
    name: String,
    before: Option<String>,
    #[serde(default)]
    restart: bool,
}

/// How a target is spoken to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    /// Redis or memcached, through `hakaru kv`.
    Kv,
}

/// A system under test, checked.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub protocol: Protocol,
    /// Base URLs (HTTP) or the key-value URL.
    pub urls: Vec<String>,
    /// Started before this target's cases of a repetition (in the background, as its own process group).
    pub start: Option<String>,
    /// Run after them; the started process group is then ended if it is still there.
    pub stop: Option<String>,
    /// `host:port` that must accept a connection before the cases run (a started target: its URL's by default).
    pub ready: Option<String>,
    pub ready_timeout: Duration,
    /// The `--monitor-*` / `--no-monitor` arguments; `started` is resolved to the start command's pid at run time.
    pub monitor: Vec<MonitorSpec>,
    pub probes: Vec<String>,
    /// HTTP headers sent to this target with every workload's own (credentials of one system, say).
    pub headers: Vec<String>,
    /// HTTPS: accept any certificate (`-k`).
    pub insecure: bool,
    /// Speak HTTP/2 (`--http2`) or HTTP/3 (`--http3`), with this many streams per connection (`--streams`).
    pub http2: bool,
    pub http3: bool,
    pub streams: Option<usize>,
    /// Proxy, TLS and connection keys, given to every case as their flags.
    pub connection: connection::TargetConnection,
}

/// What to watch on the server side (`monitor = ["port:8080", "name:redis-server", "started"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MonitorSpec {
    Pid(u32),
    Name(String),
    Port(u16),
    /// The process the target's `start` command started.
    Started,
    /// Watch nothing (`--no-monitor`).
    Off,
}

/// What to send, checked; a workload may hold an HTTP part, a key-value part, or both (the same workload name
/// then runs against both kinds of target).
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub http: Option<HttpWork>,
    pub kv: Option<KvWork>,
}

#[derive(Clone, Debug, Default)]
pub struct HttpWork {
    /// A grpc:// target's method (`--call`).
    pub call: Option<String>,
    /// Paths appended to each base URL of the target (none: the base URL as it is).
    pub paths: Vec<String>,
    pub method: Option<String>,
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub body_file: Option<PathBuf>,
    pub message: Option<String>,
    pub ws_mode: crate::cli::args::WsModeArg,
    pub patterns: Option<PathBuf>,
    pub script: Option<PathBuf>,
    pub script_args: Vec<String>,
    pub data: Option<PathBuf>,
    pub data_order: crate::cli::args::DataOrderArg,
    /// `--events`, `--events-until`.
    pub events: Option<String>,
    pub events_until: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct KvWork {
    pub mix: Option<String>,
    pub keys: Option<u64>,
    pub value_size: Option<u64>,
    pub key_prefix: Option<String>,
    pub command: Vec<String>,
    pub command_ratio: Vec<f64>,
    pub redis_script: Option<PathBuf>,
    /// The workload's data file (`kv --data`): a workload with both parts gives it to both.
    pub data: Option<PathBuf>,
    pub data_order: crate::cli::args::DataOrderArg,
}

#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    /// A shell command run before each case of the phase (e.g. `redis-cli -p $HAKARU_PORT flushall`).
    pub before: Option<String>,
    /// Restart the target (its stop, then its start) before each case of the phase: a cold start.
    pub restart: bool,
}

/// How much load each case offers.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadShape {
    /// One step: `connections` clients (or at most, with a rate) for a duration or a number of requests.
    Fixed { connections: u64, duration: Option<Duration>, requests: Option<u64>, rate: Option<f64> },
    /// A client sweep: one step per client count.
    Clients(Vec<u64>),
    /// A rate sweep: one step per rate, with at most `connections`.
    Rates { rates: Vec<f64>, connections: u64 },
    /// One step whose load moves: a ramp of clients (`stages`) or of the rate (`rate_stages`, `open`, with at most
    /// `connections`), as given and checked; it lasts `duration`.
    Ramp { stages: String, open: bool, connections: u64, duration: Duration },
}

#[derive(Clone, Debug)]
pub struct Load {
    pub shape: LoadShape,
    /// Length of each sweep step.
    pub step_duration: Duration,
    /// Pause between a sweep's steps.
    pub interval: Duration,
    /// Load before each case (fixed loads: a separate run left out of the figures; sweeps: before every step).
    pub warmup: Duration,
    pub repeat: u32,
    /// Pause between cases.
    pub pause: Duration,
    pub threads: Option<u64>,
    pub timeout: Option<String>,
    pub seed: Option<u64>,
    pub arrival: Option<String>,
}

impl Load {
    /// Steps in each case's result document.
    pub fn steps(&self) -> usize {
        match &self.shape {
            LoadShape::Fixed { .. } | LoadShape::Ramp { .. } => 1,
            LoadShape::Clients(c) => c.len(),
            LoadShape::Rates { rates, .. } => rates.len(),
        }
    }

    /// How long one case's load lasts, warm-up and pauses between steps included; `None` for a number of requests.
    pub fn case_time(&self) -> Option<Duration> {
        match &self.shape {
            LoadShape::Fixed { duration, .. } => duration.map(|d| d + self.warmup),
            LoadShape::Ramp { duration, .. } => Some(*duration),
            _ => {
                let n = self.steps() as u32;
                Some((self.step_duration + self.warmup) * n + self.interval * n.saturating_sub(1))
            }
        }
    }
}

/// One measurement: a target under a workload in a phase, in one repetition.
#[derive(Clone, Debug)]
pub struct Case {
    /// `r1-fast-root-cold`: the file name of its result and its key in the manifest.
    pub id: String,
    /// 1-based.
    pub repetition: u32,
    pub target: usize,
    pub workload: usize,
    pub phase: usize,
    /// The child's arguments after the binary, without `--json` (the runner adds the output file).
    pub args: Vec<String>,
    /// A fixed load's warm-up: a separate run before the case, its output dropped.
    pub warmup_args: Option<Vec<String>>,
}

/// A checked study: what runs, in which order.
#[derive(Clone, Debug)]
pub struct StudyPlan {
    pub name: String,
    /// The study file as given.
    pub file: PathBuf,
    /// Where shell commands run and relative paths in the file are read from: the study file's directory.
    pub base_dir: PathBuf,
    pub targets: Vec<Target>,
    pub workloads: Vec<Workload>,
    pub phases: Vec<Phase>,
    pub load: Load,
    /// `hakaru study --prometheus-rw`: every case (not its warm-up) pushes its figures there.
    pub live: LiveArgs,
    /// Every case in the order it runs.
    pub cases: Vec<Case>,
}

impl StudyPlan {
    /// Reads and checks a study file.
    pub fn from_file(path: &Path) -> Result<StudyPlan, UsageError> {
        StudyPlan::from_file_pushing(path, LiveArgs::default())
    }

    /// Reads and checks a study file whose cases push to `live`'s `--prometheus-rw` (checked by the caller).
    pub fn from_file_pushing(path: &Path, live: LiveArgs) -> Result<StudyPlan, UsageError> {
        let text = crate::bounded::read_text(path, crate::bounded::SMALL)
            .map_err(|e| UsageError::new(format!("study file {}: {e}", path.display())))?;
        StudyPlan::parse_pushing(path, &text, live)
    }

    /// Checks the text of a study file read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<StudyPlan, UsageError> {
        StudyPlan::parse_pushing(path, text, LiveArgs::default())
    }

    fn parse_pushing(path: &Path, text: &str, live: LiveArgs) -> Result<StudyPlan, UsageError> {
        let file: StudyFile = toml::from_str(text).map_err(|e| serde_error(path, text, &e))?;
        let at = Locator { path, text };
        let base_dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Absolute, because the cases run in this directory and get the files' paths as arguments.
        let base_dir = std::fs::canonicalize(&base_dir).unwrap_or(base_dir);
        let name = match file.name {
            Some(n) => check_name(&n).map_err(|fix| at.error(&["name"], &format!("name \"{n}\": {fix}")))?,
            None => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "study".into()),
        };
        if file.target.is_empty() {
            return Err(at.error(&[], "no [[target]]: add one with name = \"...\" and url = \"http://127.0.0.1:8080\""));
        }
        let mut targets = Vec::new();
        for (i, t) in file.target.into_iter().enumerate() {
            targets.push(target(&at, &base_dir, i, t)?);
        }
        unique(&at, "target", targets.iter().map(|t| t.name.as_str()))?;
        // A study without workloads or phases has one of each, named "default" in the manifest and left out of
        // the case ids.
        let implicit_workload = file.workload.is_empty();
        let implicit_phase = file.phase.is_empty();
        let specs = if file.workload.is_empty() {
            vec![WorkloadSpec { name: "default".into(), ..WorkloadSpec::default() }]
        } else {
            file.workload
        };
        let mut workloads = Vec::new();
        for (i, w) in specs.into_iter().enumerate() {
            workloads.push(workload(&at, &base_dir, i, w)?);
        }
        unique(&at, "workload", workloads.iter().map(|w| w.name.as_str()))?;
        let specs = if file.phase.is_empty() {
            vec![PhaseSpec { name: "default".into(), before: None, restart: false }]
        } else {
            file.phase
        };
        let mut phases = Vec::new();
        for (i, p) in specs.into_iter().enumerate() {
            let name = check_name(&p.name).map_err(|fix| at.error(&["phase", &i.to_string(), "name"], &fix))?;
            phases.push(Phase { name, before: p.before, restart: p.restart });
        }
        unique(&at, "phase", phases.iter().map(|p| p.name.as_str()))?;
        let load = load(&at, file.load)?;
        let mut plan = StudyPlan {
            name,
            file: path.to_path_buf(),
            base_dir,
            targets,
            workloads,
            phases,
            load,
            live,
            cases: Vec::new(),
        };
        plan.cases = plan.make_cases(&at, implicit_workload, implicit_phase)?;
        Ok(plan)
    }

    /// Every case, repetition outermost, then target, workload and phase in the file's order: A B A B ...
    fn make_cases(&self, at: &Locator, implicit_workload: bool, implicit_phase: bool) -> Result<Vec<Case>, UsageError> {
        for (pi, p) in self.phases.iter().enumerate() {
            if p.restart
                && let Some(t) = self.targets.iter().find(|t| t.start.is_none())
            {
                return Err(at.error(
                    &["phase", &pi.to_string(), "restart"],
                    &format!(
                        "phase '{}' restarts its targets, but target '{}' has no start command: give it start = \"...\" or use before = \"...\"",
                        p.name, t.name
                    ),
                ));
            }
        }
        for (wi, w) in self.workloads.iter().enumerate() {
            if !self.targets.iter().any(|t| applies(w, t)) {
                let kind = if w.http.is_some() { "HTTP" } else { "key-value" };
                return Err(at.error(
                    &["workload", &wi.to_string(), "name"],
                    &format!("workload '{}' is {kind} and no target speaks it: give it the keys of the other kind or add a target", w.name),
                ));
            }
            if w.kv.is_some()
                && !matches!(self.load.shape, LoadShape::Fixed { .. } | LoadShape::Ramp { .. })
                && self.targets.iter().any(|t| t.protocol == Protocol::Kv)
            {
                return Err(at.error(
                    &["load"],
                    "a key-value workload runs as a fixed load only (hakaru kv has no sweep yet): give [load] connections and duration (or a ramp) instead of clients or rates",
                ));
            }
        }
        let per_repetition: usize = self
            .targets
            .iter()
            .map(|t| self.workloads.iter().filter(|w| applies(w, t)).count() * self.phases.len())
            .sum();
        if per_repetition.saturating_mul(self.load.repeat as usize) > MAX_CASES {
            return Err(at.error(
                &["load", "repeat"],
                &format!(
                    "{} cases a repetition x repeat = {} is more than {MAX_CASES} cases: lower repeat or split the study",
                    per_repetition, self.load.repeat
                ),
            ));
        }
        let mut cases = Vec::new();
        for repetition in 1..=self.load.repeat {
            for (ti, t) in self.targets.iter().enumerate() {
                for (wi, w) in self.workloads.iter().enumerate() {
                    if !applies(w, t) {
                        continue;
                    }
                    for (pi, p) in self.phases.iter().enumerate() {
                        let mut id = format!("r{repetition}-{}", t.name);
                        for (implicit, name) in [(implicit_workload, &w.name), (implicit_phase, &p.name)] {
                            if !implicit {
                                id = format!("{id}-{name}");
                            }
                        }
                        if cases.iter().any(|c: &Case| c.id == id) {
                            return Err(at.error(
                                &["target", &ti.to_string(), "name"],
                                &format!("two cases would both be named '{id}' (names joined by '-'): rename a target, workload or phase"),
                            ));
                        }
                        let args = self.case_args(t, w, p, false)?;
                        let warmup_args = match self.load.shape {
                            LoadShape::Fixed { .. } if !self.load.warmup.is_zero() => {
                                Some(self.case_args(t, w, p, true)?)
                            }
                            _ => None,
                        };
                        cases.push(Case { id, repetition, target: ti, workload: wi, phase: pi, args, warmup_args });
                    }
                }
            }
        }
        Ok(cases)
    }

    /// The `run` / `sweep` / `kv` arguments of one case (or of its warm-up run), rendered from the typed flags the
    /// child parses (`cli::render`), so a renamed flag fails a test here rather than a study.
    fn case_args(&self, t: &Target, w: &Workload, p: &Phase, warmup: bool) -> Result<Vec<String>, UsageError> {
        let l = &self.load;
        // Labels, so that `hakaru history` tells the cases of two targets (workloads, phases) apart; a warm-up
        // is thrown away, so it is not kept in the history at all.
        let labels = [("study", &self.name), ("target", &t.name), ("workload", &w.name), ("phase", &p.name)];
        let history = HistoryArgs {
            labels: if warmup { Vec::new() } else { labels.iter().map(|(k, v)| format!("{k}={v}")).collect() },
            no_history: warmup,
            ..defaults()
        };
        let mut watch = WatchArgs::default();
        if warmup {
            watch.no_monitor = true;
        } else {
            for m in &t.monitor {
                match m {
                    MonitorSpec::Pid(p) => watch.monitor_pid.push(*p),
                    MonitorSpec::Name(n) => watch.monitor_name.push(n.clone()),
                    MonitorSpec::Port(p) => watch.monitor_port.push(*p),
                    // The runner puts the started process's pid in place of this marker.
                    MonitorSpec::Started => watch.monitor_pid.push(STARTED_PID),
                    MonitorSpec::Off => watch.no_monitor = true,
                }
            }
            watch.probe = t.probes.clone();
        }
        let arrival = l.arrival.as_deref().filter(|_| l.rates_or_rate()).and_then(arrival_flag);
        // A warm-up is thrown away: it pushes nothing.
        let live = if warmup { LiveArgs::default() } else { self.live.clone() };
        // A fixed load's flags (run's and kv's): clients, length (a warm-up's own), rate.
        let fixed = |load: &mut LoadArgs| {
            load.quiet = true;
            load.live = live.clone();
            load.threads = l.threads.map(|n| n as usize);
            if let LoadShape::Fixed { connections, duration, requests, rate } = &l.shape {
                load.connections = *connections as usize;
                if warmup {
                    load.duration = Some(secs(l.warmup));
                } else {
                    load.duration = duration.map(secs);
                    load.requests = *requests;
                }
                load.rate = *rate;
            }
            if let LoadShape::Ramp { stages, open, connections, .. } = &l.shape {
                match open {
                    true => (load.rate_stages, load.connections) = (Some(stages.clone()), *connections as usize),
                    false => load.stages = Some(stages.clone()),
                }
            }
            if let Some(a) = arrival {
                load.arrival = a;
            }
        };
        let list = |xs: &[String]| Some(xs.join(","));
        let (clients, rates) = match &l.shape {
            LoadShape::Fixed { .. } | LoadShape::Ramp { .. } => (None, None),
            LoadShape::Clients(c) => (list(&c.iter().map(u64::to_string).collect::<Vec<_>>()), None),
            LoadShape::Rates { rates, .. } => (None, list(&rates.iter().map(f64::to_string).collect::<Vec<_>>())),
        };
        if t.protocol == Protocol::Kv {
            let mut a: KvArgs = defaults();
            a.urls = t.urls.clone();
            a.watch = watch;
            fixed(&mut a.load);
            a.load.history = history;
            if clients.is_some() || rates.is_some() {
                // A kv sweep: each step the study's step length, after its warm-up.
                a.load.duration = Some(secs(l.step_duration));
                a.warmup = (!l.warmup.is_zero()).then(|| secs(l.warmup));
                if let LoadShape::Rates { connections, .. } = &l.shape {
                    a.load.connections = *connections as usize;
                }
            }
            (a.clients, a.rates) = (clients, rates);
            a.timeout = l.timeout.clone().unwrap_or(a.timeout);
            a.seed = l.seed;
            let k = w.kv.clone().unwrap_or_default();
            a.mix = k.mix.unwrap_or(a.mix);
            a.keys = k.keys.unwrap_or(a.keys);
            a.value_size = k.value_size.map_or(a.value_size, |n| n as usize);
            a.key_prefix = k.key_prefix.unwrap_or(a.key_prefix);
            (a.command, a.command_ratio, a.script) = (k.command, k.command_ratio, k.redis_script);
            (a.data, a.data_order) = (k.data, k.data_order);
            return render("kv", &a).map_err(UsageError::new);
        }
        let h = w.http.clone().unwrap_or_default();
        let mut request: RequestArgs = defaults();
        request.method = h.method.unwrap_or(request.method);
        request.headers = t.headers.iter().chain(&h.headers).cloned().collect();
        request.insecure = t.insecure;
        request.http2 = t.http2;
        request.http3 = t.http3;
        request.streams = t.streams;
        t.connection.apply(&mut request);
        (request.call, request.body, request.body_file) = (h.call, h.body, h.body_file);
        (request.message, request.ws_mode) = (h.message, h.ws_mode);
        request.patterns = h.patterns;
        request.script = h.script;
        request.script_args = h.script_args;
        request.data = h.data;
        request.data_order = h.data_order;
        (request.events, request.events_until) = (h.events, h.events_until);
        request.timeout = l.timeout.clone().unwrap_or(request.timeout);
        request.seed = l.seed;
        for base in &t.urls {
            if h.paths.is_empty() {
                request.urls.push(base.clone());
            }
            request.urls.extend(h.paths.iter().map(|p| join_url(base, p)));
        }
        match &l.shape {
            LoadShape::Fixed { .. } | LoadShape::Ramp { .. } => {
                let mut a: RunArgs = defaults();
                (a.request, a.watch) = (request, watch);
                fixed(&mut a.load);
                a.load.history = history;
                render("run", &a).map_err(UsageError::new)
            }
            shape => {
                let mut a: SweepArgs = defaults();
                (a.request, a.watch, a.clients, a.rates) = (request, watch, clients, rates);
                let s = &mut a.steps;
                s.history = history;
                s.live = live;
                (s.quiet, s.threads) = (true, l.threads.map(|n| n as usize));
                (s.duration, s.interval, s.warmup) = (secs(l.step_duration), secs(l.interval), secs(l.warmup));
                if let LoadShape::Rates { connections, .. } = shape {
                    s.connections = *connections as usize;
                }
                if let Some(x) = arrival {
                    s.arrival = x;
                }
                render("sweep", &a).map_err(UsageError::new)
            }
        }
    }

    /// The study's load time (cases, warm-ups, pauses), without starting targets or `before` commands, and the
    /// number of cases whose time is not known (those stopping after a number of requests).
    pub fn estimate(&self, cases: &[&Case]) -> (Duration, usize) {
        let per = self.load.case_time();
        let unknown = if per.is_none() { cases.len() } else { 0 };
        let load = per.unwrap_or_default() * cases.len() as u32;
        let pauses = self.load.pause * cases.len().saturating_sub(1) as u32;
        (load + pauses, unknown)
    }

    /// A line saying what the load of each case is.
    pub fn load_summary(&self) -> String {
        let l = &self.load;
        let base = match &l.shape {
            LoadShape::Fixed { connections, duration, requests, rate } => {
                let mut s = format!("{connections} connections");
                if let Some(r) = rate {
                    s += &format!(" at {r} req/s");
                }
                if let Some(d) = duration {
                    s += &format!(" for {}", human(*d));
                }
                if let Some(n) = requests {
                    s += &format!(", {n} requests");
                }
                s
            }
            LoadShape::Ramp { stages, open: false, .. } => format!("a ramp of clients {stages}"),
            LoadShape::Ramp { stages, open: true, connections, .. } => {
                format!("a ramp of the rate {stages} req/s (at most {connections} connections)")
            }
            LoadShape::Clients(c) => {
                format!("client sweep {:?}, {} a step, {} between steps", c, human(l.step_duration), human(l.interval))
            }
            LoadShape::Rates { rates, connections } => format!(
                "rate sweep {:?} req/s (at most {connections} connections), {} a step, {} between steps",
                rates,
                human(l.step_duration),
                human(l.interval)
            ),
        };
        let warm = if l.warmup.is_zero() { String::new() } else { format!(", warm-up {}", human(l.warmup)) };
        format!("{base}{warm}, {} repetition(s), {} pause between cases", l.repeat, human(l.pause))
    }
}

impl Load {
    fn rates_or_rate(&self) -> bool {
        matches!(
            self.shape,
            LoadShape::Rates { .. } | LoadShape::Fixed { rate: Some(_), .. } | LoadShape::Ramp { open: true, .. }
        )
    }
}

/// The most cases a study may plan (each is a process, a result file and a manifest entry).
const MAX_CASES: usize = 10_000;

/// The placeholder in a case's `--monitor-pid` for the pid of its target's started process (`monitor =
/// ["started"]`): a pid no process has (Linux's stay below 2^22).
pub const STARTED_PID: u32 = u32::MAX;

/// A case's arguments with `pid` in place of [`STARTED_PID`] (the runner's real pid, or `{started-pid}` shown by a
/// dry run).
pub fn with_started_pid(args: &[String], pid: &str) -> Vec<String> {
    let mark = STARTED_PID.to_string();
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    for a in args {
        let placeholder = *a == mark && out.last().is_some_and(|f| f == "--monitor-pid");
        out.push(if placeholder { pid.to_string() } else { a.clone() });
    }
    out
}

/// A duration for people: `2s`, `500ms`, `1m 30s`.
fn human(d: Duration) -> String {
    humantime::format_duration(Duration::from_millis(d.as_millis() as u64)).to_string()
}

/// Seconds as the flags read them (`2.5s`).
/// The study file's `arrival` ("uniform" or "poisson", as written) as the flag its cases get; None for any other
/// word. The one reading of the key, shared by the check and the rendering, so the two cannot disagree.
fn arrival_flag(name: &str) -> Option<ArrivalArg> {
    match name {
        "uniform" => Some(ArrivalArg::Uniform),
        "poisson" => Some(ArrivalArg::Poisson),
        _ => None,
    }
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Whether a workload runs against a target: it has the part for the target's protocol.
fn applies(w: &Workload, t: &Target) -> bool {
    match t.protocol {
        Protocol::Http => w.http.is_some(),
        Protocol::Kv => w.kv.is_some(),
    }
}

/// A target's base URL and a workload's path: the paths joined, the workload's query first, then the target's
/// (`http://h/?delay=5ms` + `/cache?key=a` -> `http://h/cache?key=a&delay=5ms`).
pub fn join_url(base: &str, path: &str) -> String {
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let origin_end = base[scheme_end..].find(['/', '?', '#']).map_or(base.len(), |i| scheme_end + i);
    let (origin, rest) = base.split_at(origin_end);
    let rest = rest.split('#').next().unwrap_or("");
    let (bpath, bquery) = rest.split_once('?').unwrap_or((rest, ""));
    let (wpath, wquery) = path.split_once('?').unwrap_or((path, ""));
    let wpath = if wpath.starts_with('/') || wpath.is_empty() { wpath.to_string() } else { format!("/{wpath}") };
    let joined_path = match (bpath.trim_end_matches('/'), wpath.as_str()) {
        ("", "") => "/".to_string(),
        ("", w) => w.to_string(),
        (b, "") => b.to_string(),
        (b, w) => format!("{b}{w}"),
    };
    let queries: Vec<&str> = [wquery, bquery].into_iter().filter(|q| !q.is_empty()).collect();
    if queries.is_empty() {
        format!("{origin}{joined_path}")
    } else {
        format!("{origin}{joined_path}?{}", queries.join("&"))
    }
}

/// A name used in case ids and file names: letters, digits, `.`, `_`, `-`.
fn check_name(name: &str) -> Result<String, String> {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "name '{name}' must be letters, digits, '.', '_' or '-' (it names files): e.g. name = \"fast-build\""
        ))
    }
}

fn unique<'a>(at: &Locator, kind: &str, names: impl Iterator<Item = &'a str>) -> Result<(), UsageError> {
    let mut seen: Vec<&str> = Vec::new();
    for (i, n) in names.enumerate() {
        if seen.contains(&n) {
            return Err(at.error(
                &[kind, &i.to_string(), "name"],
                &format!("a second {kind} named '{n}': give each its own name"),
            ));
        }
        seen.push(n);
    }
    Ok(())
}

fn target(at: &Locator, base_dir: &Path, i: usize, t: TargetSpec) -> Result<Target, UsageError> {
    let index = i.to_string();
    let key = |k: &'static str| ["target", index.as_str(), k];
    let connection = connection::TargetConnection::from_raw(connection::Raw {
        proxy: t.proxy,
        cacert: t.cacert,
        cert: t.cert,
        key: t.key,
        tls_version: t.tls_version,
        sni: t.sni,
        tls_resume: t.tls_resume,
        zero_rtt: t.zero_rtt,
        connect_to: t.connect_to,
        max_requests_per_connection: t.max_requests_per_connection,
        connection_rate: t.connection_rate,
        unix_socket: t.unix_socket,
        proto: t.proto,
        protoset: t.protoset,
        import_path: t.import_path,
        base_dir,
    })
    .map_err(|(k, why)| at.error(&key(k), &why))?;
    let name = check_name(&t.name).map_err(|fix| at.error(&key("name"), &fix))?;
    let url_key = if t.url.is_some() { "url" } else { "urls" };
    let urls = match (t.url, t.urls) {
        (Some(u), None) => vec![u],
        (None, Some(us)) if !us.is_empty() => us,
        (Some(_), Some(_)) => {
            return Err(at.error(&key("urls"), &format!("target '{name}' has both url and urls: keep one")));
        }
        _ => {
            return Err(at.error(
                &key("name"),
                &format!("target '{name}' has no url: add url = \"http://127.0.0.1:8080\" (or redis://, memcache://)"),
            ));
        }
    };
    let mut protocol = None;
    let mut first_host_port = None;
    for u in &urls {
        let scheme = u.split_once("://").map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
        let (p, hp) = match scheme.as_str() {
            // A WebSocket URL is checked as the HTTP URL its connection starts as, a gRPC one as its HTTP/2's.
            "http" | "https" | "ws" | "wss" | "grpc" | "grpcs" => {
                let as_http = match scheme.as_str() {
                    "ws" | "wss" => format!("http{}", u.get(2..).unwrap_or_default()),
                    "grpc" | "grpcs" => format!("http{}", u.get(4..).unwrap_or_default()),
                    _ => u.clone(),
                };
                let parsed = crate::target::ParsedUrl::parse(&as_http)
                    .map_err(|fix| at.error(&key(url_key), &format!("'{u}': {fix}")))?;
                (Protocol::Http, format!("{}:{}", bracket(&parsed.host), parsed.port))
            }
            "redis" | "memcache" | "memcached" => (Protocol::Kv, kv_host_port(u)),
            _ => {
                return Err(at.error(
                    &key(url_key),
                    &format!(
                        "'{u}' is not a URL hakaru loads: write http://HOST:PORT, https://, ws://, wss://, grpc://, \
                         grpcs://, redis:// or memcache://"
                    ),
                ));
            }
        };
        if protocol.is_some_and(|q| q != p) {
            return Err(
                at.error(&key("urls"), &format!("target '{name}' mixes HTTP and key-value URLs: make two targets"))
            );
        }
        protocol = Some(p);
        first_host_port.get_or_insert(hp);
    }
    let ready = match t.ready {
        Some(r) if r == "none" => None,
        Some(r) => {
            crate::target::split_host_port(&r).ok().filter(|(_, p)| p.is_some()).ok_or_else(|| {
                at.error(&key("ready"), &format!("ready \"{r}\" is not host:port: write ready = \"127.0.0.1:8080\""))
            })?;
            Some(r)
        }
        // A started server is ready when its own URL's port accepts connections.
        None if t.start.is_some() => first_host_port,
        None => None,
    };
    let ready_timeout = duration_key(at, &key("ready_timeout"), t.ready_timeout.as_deref(), "10s")?;
    let mut monitor = Vec::new();
    for m in t.monitor.unwrap_or_default() {
        let bad = || {
            at.error(
                &key("monitor"),
                &format!(
                    "monitor \"{m}\": write \"pid:1234\", \"name:redis-server\", \"port:8080\", \"started\" or \"none\""
                ),
            )
        };
        let spec = match m.split_once(':') {
            Some(("pid", v)) => MonitorSpec::Pid(v.trim().parse().map_err(|_| bad())?),
            Some(("name", v)) if !v.trim().is_empty() => MonitorSpec::Name(v.trim().to_string()),
            Some(("port", v)) => MonitorSpec::Port(crate::target::parse_port(v.trim()).map_err(|_| bad())?),
            None if m == "started" => MonitorSpec::Started,
            None if m == "none" => MonitorSpec::Off,
            _ => return Err(bad()),
        };
        if spec == MonitorSpec::Started && t.start.is_none() {
            return Err(at.error(
                &key("monitor"),
                "monitor \"started\" needs a start command: add start = \"...\" or watch a port",
            ));
        }
        monitor.push(spec);
    }
    if protocol == Some(Protocol::Kv) && connection.any() {
        return Err(at.error(
            &key("name"),
            &format!(
                "target '{name}' is a key-value server: proxy, TLS, connection and gRPC keys (proxy, cacert, cert, \
                 key, tls_version, sni, tls_resume, zero_rtt, connect_to, max_requests_per_connection, connection_rate, unix_socket, \
                 proto, protoset, import_path) are for HTTP targets (a key-value server's socket is its URL, \
                 redis+unix:///PATH)"
            ),
        ));
    }
    if protocol == Some(Protocol::Kv)
        && (!t.headers.is_empty() || t.insecure || t.http2 || t.http3 || t.streams.is_some())
    {
        let which = match () {
            _ if t.http3 => "http3",
            _ if t.http2 || t.streams.is_some() => "http2",
            _ => "headers",
        };
        return Err(at.error(
            &key(which),
            &format!(
                "target '{name}' is a key-value server: headers, insecure, http2, http3 and streams are for HTTP \
                 targets"
            ),
        ));
    }
    if t.http2 && t.http3 {
        return Err(at.error(&key("http3"), &format!("target '{name}': http2 and http3 both; give one of them")));
    }
    if let Some(n) = t.streams.filter(|_| !t.http2 && !t.http3) {
        return Err(at.error(
            &key("streams"),
            &format!(
                "target '{name}': streams = {n} is HTTP/2's and HTTP/3's; add http2 = true or http3 = true (or leave \
                 streams out)"
            ),
        ));
    }
    for p in &t.probe {
        if !p.contains('#') {
            return Err(at.error(
                &key("probe"),
                &format!("probe \"{p}\": write URL#/json/pointer, e.g. \"http://127.0.0.1:8080/status#/1/cache_hits\""),
            ));
        }
    }
    Ok(Target {
        name,
        protocol: protocol.unwrap_or(Protocol::Http),
        urls,
        start: t.start,
        stop: t.stop,
        ready,
        ready_timeout,
        monitor,
        probes: t.probe,
        headers: t.headers,
        insecure: t.insecure,
        http2: t.http2,
        http3: t.http3,
        streams: t.streams,
        connection,
    })
}

fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

/// `redis://user:pw@host:port/db` -> `host:port` (the port of the protocol when absent).
fn kv_host_port(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let hp = rest.split('/').next().unwrap_or(rest);
    let default = if scheme.eq_ignore_ascii_case("redis") { 6379 } else { 11211 };
    match crate::target::split_host_port(hp) {
        Ok((h, p)) => format!("{}:{}", bracket(&h), p.unwrap_or(default)),
        Err(_) => hp.to_string(),
    }
}

fn workload(at: &Locator, base_dir: &Path, i: usize, w: WorkloadSpec) -> Result<Workload, UsageError> {
    let index = i.to_string();
    let key = |k: &'static str| ["workload", index.as_str(), k];
    let name = check_name(&w.name).map_err(|fix| at.error(&key("name"), &fix))?;
    let has_kv = w.mix.is_some()
        || w.keys.is_some()
        || w.value_size.is_some()
        || w.key_prefix.is_some()
        || !w.command.is_empty()
        || !w.command_ratio.is_empty()
        || w.redis_script.is_some();
    // `data` is the key-value part's when the workload has command templates to fill, else the HTTP part's (its
    // templates in the target's URL, or beside a mix run against a key-value target), as it was before.
    let has_http = w.path.is_some()
        || w.call.is_some()
        || w.paths.is_some()
        || w.method.is_some()
        || !w.headers.is_empty()
        || w.body.is_some()
        || w.body_file.is_some()
        || w.message.is_some()
        || w.ws_mode.is_some()
        || w.patterns.is_some()
        || w.script.is_some()
        || w.events.is_some()
        || w.events_until.is_some()
        || (w.data.is_some() && w.command.is_empty());
    let file = |k: &'static str, f: &Option<String>| -> Result<Option<PathBuf>, UsageError> {
        match f {
            None => Ok(None),
            Some(f) => {
                let p = base_dir.join(f);
                match std::fs::metadata(&p) {
                    Ok(m) if m.is_file() => Ok(Some(p)),
                    // A device never ends and a FIFO may never open: what it is and why it is refused, as
                    // `--body-file` says it (`bounded`).
                    Ok(m) => Err(at.error(
                        &key(k),
                        &format!(
                            "{k} \"{f}\" is {}, not a regular file: {}; give a regular file",
                            crate::bounded::kind_of(&m.file_type()),
                            crate::bounded::WHY_REGULAR
                        ),
                    )),
                    Err(_) => Err(at.error(
                        &key(k),
                        &format!("{k} \"{f}\": no such file ({}); paths are relative to the study file", p.display()),
                    )),
                }
            }
        }
    };
    let data = file("data", &w.data)?;
    let data_order = match w.data_order.as_deref() {
        None | Some("sequential") => crate::cli::args::DataOrderArg::Sequential,
        Some("random") => crate::cli::args::DataOrderArg::Random,
        Some("unique") => crate::cli::args::DataOrderArg::Unique,
        Some(other) => {
            return Err(at.error(
                &key("data_order"),
                &format!("data_order \"{other}\": give \"sequential\", \"random\" or \"unique\""),
            ));
        }
    };
    if let Some(kind) = &w.events
        && crate::protocol::events::EventKind::parse(kind).is_none()
    {
        return Err(
            at.error(&key("events"), &format!("events \"{kind}\": give \"sse\", \"ndjson\", \"chunks\" or \"tokens\""))
        );
    }
    if w.events_until.is_some() && w.events.is_none() {
        return Err(at.error(
            &key("events_until"),
            "events_until without events: add events = \"sse\" (or ndjson, chunks, tokens)",
        ));
    }
    let ws_mode = match w.ws_mode.as_deref() {
        None | Some("exchange") => crate::cli::args::WsModeArg::Exchange,
        Some("listen") => crate::cli::args::WsModeArg::Listen,
        Some("connect") => crate::cli::args::WsModeArg::Connect,
        Some(other) => {
            return Err(at.error(
                &key("ws_mode"),
                &format!("ws_mode \"{other}\": give \"exchange\", \"listen\" or \"connect\""),
            ));
        }
    };
    let http = if has_http || !has_kv {
        let mut paths = w.paths.clone().unwrap_or_default();
        if w.path.is_some() && w.paths.is_some() {
            return Err(at.error(&key("paths"), &format!("workload '{name}' has both path and paths: keep one")));
        }
        paths.extend(w.path.clone());
        for p in &paths {
            if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(at.error(
                    &key("path"),
                    &format!("path \"{p}\" holds a space or a control character: escape it (%20)"),
                ));
            }
        }
        Some(HttpWork {
            call: w.call.clone(),
            paths,
            method: w.method.clone(),
            headers: w.headers.clone(),
            body: w.body.clone(),
            body_file: file("body_file", &w.body_file)?,
            message: w.message.clone(),
            ws_mode,
            patterns: file("patterns", &w.patterns)?,
            script: file("script", &w.script)?,
            script_args: w.script_args.clone(),
            data: data.clone(),
            data_order,
            events: w.events.clone(),
            events_until: w.events_until.clone(),
        })
    } else {
        None
    };
    let kv = if has_kv || !has_http {
        let kv_data = if w.command.is_empty() { None } else { data };
        Some(KvWork {
            mix: w.mix,
            keys: w.keys,
            value_size: w.value_size,
            key_prefix: w.key_prefix,
            command: w.command,
            command_ratio: w.command_ratio,
            redis_script: file("redis_script", &w.redis_script)?,
            data: kv_data,
            data_order,
        })
    } else {
        None
    };
    Ok(Workload { name, http, kv })
}

fn load(at: &Locator, l: LoadSpec) -> Result<Load, UsageError> {
    let sweep = l.clients.is_some() || l.rates.is_some();
    let step_duration = duration_key(at, &["load", "duration"], l.duration.as_deref(), "10s")?;
    let interval = duration_key(at, &["load", "interval"], l.interval.as_deref(), "1s")?;
    let warmup = duration_key(at, &["load", "warmup"], l.warmup.as_deref(), "0s")?;
    let pause = duration_key(at, &["load", "pause"], l.pause.as_deref(), "1s")?;
    if let Some(t) = &l.timeout {
        parse_flag_duration(t).map_err(|fix| at.error(&["load", "timeout"], &format!("timeout \"{t}\": {fix}")))?;
    }
    if let Some(a) = &l.arrival
        && arrival_flag(a).is_none()
    {
        return Err(at.error(&["load", "arrival"], &format!("arrival \"{a}\": write \"uniform\" or \"poisson\"")));
    }
    let repeat = l.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(at.error(
            &["load", "repeat"],
            "repeat = 0 runs nothing: give 1 or more (5 or more to tell small differences)",
        ));
    }
    if l.connections == Some(0) {
        return Err(at.error(&["load", "connections"], "connections = 0: give 1 or more"));
    }
    // A ramp has refused the other shapes' keys.
    let shape = match (ramp(at, &l)?, l.clients, l.rates) {
        (Some(ramp), _, _) => ramp,
        (None, Some(_), Some(_)) => {
            return Err(at.error(&["load", "rates"], "[load] has both clients and rates: a study sweeps one of them"));
        }
        (None, Some(c), None) => {
            if c.is_empty() || c.contains(&0) {
                return Err(
                    at.error(&["load", "clients"], "clients must list counts of 1 or more: clients = [1, 2, 4]")
                );
            }
            if l.rate.is_some() || l.requests.is_some() {
                return Err(at.error(
                    &["load", "clients"],
                    "a client sweep runs each step for duration: remove rate and requests",
                ));
            }
            LoadShape::Clients(c)
        }
        (None, None, Some(r)) => {
            if r.is_empty() || r.iter().any(|x| !(0.001..=1e9).contains(x)) {
                return Err(at.error(
                    &["load", "rates"],
                    "rates must list requests per second from 0.001 to 1e9: rates = [100, 200, 400]",
                ));
            }
            if l.rate.is_some() || l.requests.is_some() {
                return Err(
                    at.error(&["load", "rates"], "a rate sweep runs each step for duration: remove rate and requests")
                );
            }
            LoadShape::Rates { rates: r, connections: l.connections.unwrap_or(50) }
        }
        (None, None, None) => {
            if let Some(r) = l.rate
                && !(0.001..=1e9).contains(&r)
            {
                return Err(at.error(&["load", "rate"], "rate must be requests per second from 0.001 to 1e9"));
            }
            if l.requests == Some(0) {
                return Err(at.error(&["load", "requests"], "requests = 0 measures nothing: give 1 or more"));
            }
            let duration = match (l.duration.is_some(), l.requests) {
                (false, Some(_)) => None,
                _ => Some(step_duration),
            };
            LoadShape::Fixed { connections: l.connections.unwrap_or(10), duration, requests: l.requests, rate: l.rate }
        }
    };
    if l.interval.is_some() && !sweep {
        return Err(at.error(
            &["load", "interval"],
            "interval is the pause between a sweep's steps: use pause for the pause between cases",
        ));
    }
    Ok(Load {
        shape,
        step_duration,
        interval,
        warmup,
        repeat,
        pause,
        threads: l.threads,
        timeout: l.timeout,
        seed: l.seed,
        arrival: l.arrival,
    })
}

/// `stages` or `rate_stages`: one step whose load moves, checked as `--stages` and `--rate-stages` are, alone
/// with the keys a ramp does not set itself. None without either key.
fn ramp(at: &Locator, l: &LoadSpec) -> Result<Option<LoadShape>, UsageError> {
    let (key, text, open) = match (&l.stages, &l.rate_stages) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(at.error(
                &["load", "rate_stages"],
                "[load] has both stages and rate_stages: a ramp moves the clients or the rate, not both",
            ));
        }
        (Some(t), None) => ("stages", t, false),
        (None, Some(t)) => ("rate_stages", t, true),
    };
    let example = crate::plan::stages_example(open);
    let ramp = crate::plan::parse_stages(text, open)
        .map_err(|why| at.error(&["load", key], &format!("{key} \"{text}\": {why}; e.g. {key} = \"{example}\"")))?;
    // Keys that would say a second time what the ramp says (its length, its load), or that it has no use for.
    let clash = [
        ("duration", l.duration.is_some(), "the ramp lasts its stages"),
        ("requests", l.requests.is_some(), "the ramp lasts its stages"),
        ("rate", l.rate.is_some(), "the ramp sets the load"),
        ("clients", l.clients.is_some(), "the ramp sets the load"),
        ("rates", l.rates.is_some(), "the ramp sets the load"),
        ("interval", l.interval.is_some(), "a ramp is one step, with no pause inside"),
        ("warmup", l.warmup.is_some(), "a ramp climbs from 0, so its first stage is its warm-up"),
    ];
    if let Some((other, _, why)) = clash.iter().find(|c| c.1) {
        return Err(at.error(&["load", other], &format!("{other} with {key}: {why}; remove {other}")));
    }
    if !open && l.connections.is_some() {
        return Err(at.error(
            &["load", "connections"],
            "connections with stages: a ramp of clients opens one connection per client at its peak; remove connections",
        ));
    }
    Ok(Some(LoadShape::Ramp {
        stages: text.trim().to_string(),
        open,
        connections: l.connections.unwrap_or(50),
        duration: ramp.duration(),
    }))
}

fn duration_key(at: &Locator, key: &[&str], value: Option<&str>, default: &str) -> Result<Duration, UsageError> {
    let text = value.unwrap_or(default);
    parse_flag_duration(text).map_err(|fix| {
        let name = key.last().copied().unwrap_or("duration");
        at.error(key, &format!("{name} \"{text}\": {fix}, e.g. {name} = \"2s\""))
    })
}

/// Finds keys in the study file's text, so that a check made after parsing still names the line and column.
struct Locator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Locator<'_> {
    /// `FILE:LINE:COL: what` where the key at `key_path` (`["target", "1", "url"]`) is written; the file alone
    /// when the key is not found (a default value).
    fn error(&self, key_path: &[&str], what: &str) -> UsageError {
        let place = self.offset(key_path).map(|o| {
            let (l, c) = line_col(self.text, o);
            format!(":{l}:{c}")
        });
        UsageError::new(format!("{}{}: {what}", self.path.display(), place.unwrap_or_default()))
    }

    fn offset(&self, key_path: &[&str]) -> Option<usize> {
        let root = toml::de::DeTable::parse(self.text).ok()?;
        let mut table = root.get_ref();
        let mut best = None;
        let mut segs = key_path.iter().peekable();
        while let Some(seg) = segs.next() {
            let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *seg)?;
            best = Some(k.span().start);
            let mut value = v;
            // An array of tables: the next segment is its index.
            if let Some(arr) = value.get_ref().as_array() {
                let i: usize = segs.peek()?.parse().ok()?;
                segs.next();
                value = arr.get(i)?;
                best = Some(value.span().start);
            }
            match value.get_ref().as_table() {
                Some(t) => table = t,
                None => break,
            }
        }
        best
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The header (`[load]`, `[[target]]`) of the table the byte offset is in.
fn table_at(text: &str, offset: usize) -> String {
    // The lines before the one that holds the offset: a table header there (`[[workloads]]`) is a key of the top
    // level, not the table it names.
    let line_start = text[..offset.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    if text[line_start..].trim_start().starts_with('[') {
        return "the top level".into();
    }
    let before = &text[..line_start];
    before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.contains('='))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_string())
        .unwrap_or_else(|| "the top level".into())
}

/// Levenshtein's distance between two keys (short ASCII words: the plain table is enough).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// An example of each key, for the fix of a wrong type.
fn example(key: &str) -> &'static str {
    match key {
        "name" => "name = \"fast\"",
        "description" => "description = \"what this study compares\"",
        "url" => "url = \"http://127.0.0.1:8080\"",
        "urls" => "urls = [\"http://127.0.0.1:8080\", \"http://127.0.0.1:8081\"]",
        "start" => "start = \"$HAKARU serve --listen 127.0.0.1:8080\"",
        "stop" => "stop = \"pkill -f my-server\"",
        "ready" => "ready = \"127.0.0.1:8080\"",
        "ready_timeout" => "ready_timeout = \"10s\"",
        "monitor" => "monitor = [\"port:8080\"]",
        "probe" => "probe = [\"http://127.0.0.1:8080/status#/1/cache_hits\"]",
        "path" => "path = \"/api?key=1\"",
        "paths" => "paths = [\"/a\", \"/b\"]",
        "method" => "method = \"POST\"",
        "headers" => "headers = [\"Accept: application/json\"]",
        "insecure" => "insecure = true",
        "http2" => "http2 = true",
        "http3" => "http3 = true",
        "streams" => "streams = 16",
        "proxy" => "proxy = \"http://127.0.0.1:3128\"",
        "cacert" => "cacert = \"ca.pem\"",
        "cert" => "cert = \"client.pem\"",
        "key" => "key = \"client.key\"",
        "tls_version" => "tls_version = \"1.3\"",
        "sni" => "sni = \"api.example.com\"",
        "tls_resume" => "tls_resume = false",
        "zero_rtt" => "zero_rtt = true",
        "connect_to" => "connect_to = [\"api.example.com:443:127.0.0.1:8443\"]",
        "max_requests_per_connection" => "max_requests_per_connection = 100",
        "connection_rate" => "connection_rate = 100",
        "unix_socket" => "unix_socket = \"/run/app.sock\"",
        "proto" => "proto = \"hello.proto\"",
        "protoset" => "protoset = \"hello.protoset\"",
        "import_path" => "import_path = [\"protos\"]",
        "call" => "call = \"helloworld.Greeter/SayHello\"",
        "body" => "body = \"{}\"",
        "body_file" => "body_file = \"body.json\"",
        "message" => "message = \"{\\\"n\\\":{{seq}}}\"",
        "ws_mode" => "ws_mode = \"listen\"",
        "patterns" => "patterns = \"patterns.json\"",
        "script" => "script = \"counter.lua\"",
        "script_args" => "script_args = [\"user1\"]",
        "data" => "data = \"users.csv\"",
        "data_order" => "data_order = \"unique\"",
        "events" => "events = \"tokens\"",
        "events_until" => "events_until = \"[DONE]\"",
        "mix" => "mix = \"get:90,set:10\"",
        "keys" => "keys = 1000",
        "value_size" => "value_size = 20480",
        "key_prefix" => "key_prefix = \"key:\"",
        "command" => "command = [\"SET user:{{id}} {{name}}\"]",
        "command_ratio" => "command_ratio = [9.0, 1.0]",
        "redis_script" => "redis_script = \"busy.lua\"",
        "connections" => "connections = 10",
        "duration" => "duration = \"2s\"",
        "requests" => "requests = 1000",
        "rate" => "rate = 500",
        "clients" => "clients = [1, 2, 4]",
        "rates" => "rates = [100, 200, 400]",
        "interval" => "interval = \"1s\"",
        "stages" => "stages = \"30s:10,1m:100,30s:0\"",
        "rate_stages" => "rate_stages = \"30s:100,2m:5000\"",
        "warmup" => "warmup = \"1s\"",
        "repeat" => "repeat = 5",
        "pause" => "pause = \"1s\"",
        "threads" => "threads = 2",
        "timeout" => "timeout = \"5s\"",
        "seed" => "seed = 42",
        "arrival" => "arrival = \"poisson\"",
        "before" => "before = \"redis-cli -p 6379 flushall\"",
        "restart" => "restart = true",
        "target" => "[[target]] (a table per target)",
        "workload" => "[[workload]] (a table per workload)",
        "phase" => "[[phase]] (a table per phase)",
        "load" => "[load] (one table)",
        _ => "",
    }
}

/// toml's and serde's error as one line: file, line, column, the key, and the fix.
fn serde_error(path: &Path, text: &str, e: &toml::de::Error) -> UsageError {
    let message = e.message().trim().replace('\n', " ");
    let offset = e.span().map(|s| s.start).unwrap_or(0);
    let (line, col) = line_col(text, offset);
    let place = format!("{}:{line}:{col}", path.display());
    let table = table_at(text, offset);
    // serde names the key between backticks in "unknown field `x`" and "missing field `x`".
    let quoted = message.split('`').nth(1).map(str::to_string);
    if let Some(rest) = message.strip_prefix("unknown field") {
        let key = quoted.unwrap_or_default();
        let expected = rest.split_once("expected").map(|(_, e)| e.replace('`', "").trim().to_string());
        let known: Vec<String> = expected
            .as_deref()
            .map(|e| e.trim_start_matches("one of ").split(',').map(|k| k.trim().to_string()).collect())
            .unwrap_or_default();
        let keys = expected
            .map(|e| format!(" (the keys of {table}: {})", e.trim_start_matches("one of ").trim()))
            .unwrap_or_default();
        // The nearest known key, when one is a slip away (`workloads` -> `workload`).
        let fix = match known.iter().map(|k| (edit_distance(&key, k), k)).filter(|(d, _)| *d <= 2).min() {
            Some((_, k)) => format!("did you mean '{k}'?"),
            None => "remove it or correct its spelling".to_string(),
        };
        let at = if table == "the top level" { "at the top level".to_string() } else { format!("in {table}") };
        return UsageError::new(format!("{place}: unknown key '{key}' {at}{keys}: {fix}"));
    }
    if message.starts_with("missing field") {
        let key = quoted.unwrap_or_default();
        let fix = match example(&key) {
            "" => format!("add {key}"),
            ex => format!("add {ex}"),
        };
        return UsageError::new(format!("{place}: key '{key}' is missing in {table}: {fix}"));
    }
    if ["invalid type", "invalid value", "invalid length"].iter().any(|p| message.starts_with(p)) {
        // The key is what stands before '=' on the line of the wrong value.
        let line_text = text.lines().nth(line - 1).unwrap_or("");
        let key = line_text.split_once('=').map(|(k, _)| k.trim().trim_matches('"').to_string()).unwrap_or_default();
        let key = key.rsplit('.').next().unwrap_or(&key).to_string();
        let fix = match example(&key) {
            "" => "give it the type the message names".to_string(),
            ex => format!("write it as {ex}"),
        };
        return UsageError::new(format!("{place}: key '{key}' in {table} has the wrong type ({message}): {fix}"));
    }
    UsageError::new(format!("{place}: {message}: fix the TOML syntax there"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<StudyPlan, String> {
        StudyPlan::parse(Path::new("s.toml"), text).map_err(|e| e.to_string())
    }

    const TWO: &str = r#"
name = "t"
[[target]]
name = "a"
url = "http://127.0.0.1:1/?delay=5ms"
[[target]]
name = "b"
url = "http://127.0.0.1:2/"
[load]
connections = 2
duration = "1s"
repeat = 2
[[phase]]
name = "cold"
[[phase]]
name = "warm"
"#;

    #[test]
    fn cases_run_repetition_first_then_target_then_phase() {
        let p = plan(TWO).unwrap();
        let ids: Vec<&str> = p.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            ["r1-a-cold", "r1-a-warm", "r1-b-cold", "r1-b-warm", "r2-a-cold", "r2-a-warm", "r2-b-cold", "r2-b-warm"]
        );
        let labels =
            ["--label", "study=t", "--label", "target=a", "--label", "workload=default", "--label", "phase=cold"];
        let expected =
            [&["run", "-c", "2", "-d", "1s", "-q"][..], &labels, &["http://127.0.0.1:1/?delay=5ms"]].concat();
        assert_eq!(p.cases[0].args, expected);
        let (t, unknown) = p.estimate(&p.cases.iter().collect::<Vec<_>>());
        assert_eq!((t, unknown), (Duration::from_secs(8 + 7), 0));
    }

    #[test]
    fn an_unknown_key_names_its_line_column_table_and_fix() {
        let e = plan(&TWO.replace("repeat = 2", "repeat = 2\nrepeats = 3")).unwrap_err();
        assert!(e.starts_with("s.toml:13:1: unknown key 'repeats' in [load]"), "{e}");
        assert!(e.ends_with("did you mean 'repeat'?"), "{e}");
        assert_eq!(e.lines().count(), 1);
        // A table of the top level misspelled is a key of the top level, not of the table above it.
        let e = plan(&(TWO.to_string() + "[[workloads]]\nname = \"w\"\n")).unwrap_err();
        assert!(e.contains("unknown key 'workloads' at the top level"), "{e}");
        assert!(e.ends_with("did you mean 'workload'?"), "{e}");
        // Nothing near: the fix is to remove it.
        let e = plan(&TWO.replace("repeat = 2", "repeat = 2\nzzzzzz = 3")).unwrap_err();
        assert!(e.ends_with("remove it or correct its spelling"), "{e}");
    }

    #[test]
    fn arrival_reaches_an_open_loops_cases_and_a_wrong_word_names_the_key() {
        let open = TWO.replace("duration = \"1s\"", "duration = \"1s\"\nrate = 50\narrival = \"poisson\"");
        let p = plan(&open).unwrap();
        let args = &p.cases[0].args;
        let at = args.iter().position(|a| a == "--arrival").expect("--arrival in the case's flags");
        assert_eq!(args[at + 1], "poisson", "{args:?}");
        // The default (uniform) is left out of the command line, as the flag's default.
        let p = plan(&open.replace("poisson", "uniform")).unwrap();
        assert!(!p.cases[0].args.contains(&"--arrival".to_string()), "{:?}", p.cases[0].args);
        let e = plan(&open.replace("poisson", "Poisson")).unwrap_err();
        assert!(e.contains("arrival \"Poisson\": write \"uniform\" or \"poisson\""), "{e}");
    }

    #[test]
    fn a_wrong_type_names_the_key_and_an_example() {
        let e = plan(&TWO.replace("repeat = 2", "repeat = \"2\"")).unwrap_err();
        assert!(e.starts_with("s.toml:12:10: key 'repeat' in [load] has the wrong type"), "{e}");
        assert!(e.ends_with("write it as repeat = 5"), "{e}");
    }

    #[test]
    fn a_bad_value_found_after_parsing_still_names_its_place() {
        let e = plan(&TWO.replace("duration = \"1s\"", "duration = \"3x\"")).unwrap_err();
        assert!(e.starts_with("s.toml:11:1: duration \"3x\""), "{e}");
        let e = plan(&TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"ftp://x\"")).unwrap_err();
        assert!(e.starts_with("s.toml:8:1: 'ftp://x'"), "{e}");
    }

    #[test]
    fn a_targets_headers_go_before_the_workloads_and_insecure_is_k() {
        let text = TWO.replace(
            "url = \"http://127.0.0.1:2/\"",
            "url = \"https://127.0.0.1:2/\"\nheaders = [\"Authorization: Bearer x\"]\ninsecure = true",
        ) + "[[workload]]\nname = \"w\"\nheaders = [\"Accept: text/plain\"]\n";
        let p = plan(&text).unwrap();
        let b = p.cases.iter().find(|c| c.target == 1).unwrap();
        assert_eq!(b.args[..6], ["run", "-H", "Authorization: Bearer x", "-H", "Accept: text/plain", "-k"]);
        assert_eq!(b.args.last().unwrap(), "https://127.0.0.1:2/");
        let bad = TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"redis://127.0.0.1:2\"\ninsecure = true");
        assert!(plan(&bad).unwrap_err().contains("key-value server"));
    }

    #[test]
    fn a_workloads_script_and_data_file_become_run_flags() {
        let text = TWO.to_string()
            + "[[workload]]\nname = \"lua\"\nscript = \"tests/fixtures/scripts/counter.lua\"\nscript_args = [\"a b\"]\n\
               [[workload]]\nname = \"rows\"\npath = \"/u/{{id}}\"\ndata = \"tests/fixtures/data/ids.csv\"\n\
               data_order = \"unique\"\n";
        let p = plan(&text).unwrap();
        let args = |w: &str| p.cases.iter().find(|c| p.workloads[c.workload].name == w).unwrap().args.join(" ");
        let lua = args("lua");
        assert!(
            lua.contains("-s ") && lua.contains("tests/fixtures/scripts/counter.lua ") && lua.ends_with(" -- a b"),
            "{lua}"
        );
        let rows = args("rows");
        assert!(rows.contains("tests/fixtures/data/ids.csv --data-order unique"), "{rows}");
        let bad = text.replace("data_order = \"unique\"", "data_order = \"shuffled\"");
        assert!(plan(&bad).unwrap_err().contains("give \"sequential\""));
    }

    #[test]
    fn an_http2_target_runs_its_cases_with_http2_and_its_streams() {
        let text =
            TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"http://127.0.0.1:2/\"\nhttp2 = true\nstreams = 8");
        let p = plan(&text).unwrap();
        let b = p.cases.iter().find(|c| c.target == 1).unwrap();
        let at = b.args.iter().position(|a| a == "--http2").unwrap_or_else(|| panic!("{:?}", b.args));
        assert_eq!(b.args[at + 1..at + 3], ["--streams", "8"], "{:?}", b.args);
        let a = p.cases.iter().find(|c| c.target == 0).unwrap();
        assert!(!a.args.contains(&"--http2".to_string()), "{:?}", a.args);
        let bad = TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"http://127.0.0.1:2/\"\nstreams = 8");
        assert!(plan(&bad).unwrap_err().contains("add http2 = true"));
    }

    #[test]
    fn an_http3_target_runs_its_cases_with_http3_and_its_streams() {
        let text =
            TWO.replace("url = \"http://127.0.0.1:2/\"", "url = \"https://127.0.0.1:2/\"\nhttp3 = true\nstreams = 8");
        let p = plan(&text).unwrap();
        let b = p.cases.iter().find(|c| c.target == 1).unwrap();
        let at = b.args.iter().position(|a| a == "--http3").unwrap_or_else(|| panic!("{:?}", b.args));
        assert!(b.args.contains(&"--streams".to_string()), "{:?}", b.args);
        assert!(!b.args.contains(&"--http2".to_string()), "{:?} ({at})", b.args);
        let both = text.replace("http3 = true", "http3 = true\nhttp2 = true");
        assert!(plan(&both).unwrap_err().contains("http2 and http3 both"));
    }

    #[test]
    fn too_many_cases_are_refused_before_any_is_planned() {
        let e = plan(&TWO.replace("repeat = 2", "repeat = 4000000000")).unwrap_err();
        assert!(e.starts_with("s.toml:12:1: 4 cases a repetition x repeat = 4000000000 is more than 10000"), "{e}");
    }

    #[test]
    fn urls_join_paths_and_keep_the_targets_query() {
        assert_eq!(join_url("http://h:1", "/a?x=1"), "http://h:1/a?x=1");
        assert_eq!(join_url("http://h:1/?delay=5ms", "/cache?key=a"), "http://h:1/cache?key=a&delay=5ms");
        assert_eq!(join_url("http://h:1/api/", "v1"), "http://h:1/api/v1");
        assert_eq!(join_url("http://h:1/api", ""), "http://h:1/api");
    }

    #[test]
    fn sweeps_and_kv_workloads_get_their_commands() {
        let text = r#"
[[target]]
name = "web"
url = "http://127.0.0.1:1"
[[target]]
name = "redis"
url = "redis://127.0.0.1:6379"
[[workload]]
name = "small"
path = "/?size=10"
value_size = 10
[load]
connections = 4
duration = "1s"
warmup = "500ms"
"#;
        let p = plan(text).unwrap();
        assert_eq!(p.cases.len(), 2);
        // A flag and its value side by side.
        let has = |args: &[String], pair: [&str; 2]| args.windows(2).any(|w| w == pair);
        let kv = &p.cases[1].args;
        assert_eq!((kv[0].as_str(), kv.last().unwrap().as_str()), ("kv", "redis://127.0.0.1:6379"), "{kv:?}");
        assert!(has(kv, ["--value-size", "10"]) && has(kv, ["-c", "4"]) && has(kv, ["-d", "1s"]), "{kv:?}");
        let warm = p.cases[0].warmup_args.as_ref().unwrap();
        assert_eq!(warm[..5], ["run", "--no-monitor", "-c", "4", "-d"], "{warm:?}");
        assert!(has(warm, ["-d", "0.5s"]) && warm.contains(&"-q".to_string()), "{warm:?}");
        // Each case is labelled in the history with its study, target, workload and phase; a warm-up is not kept.
        for label in ["study=", "target=redis", "workload=small", "phase=default"] {
            assert!(kv.windows(2).any(|w| w[0] == "--label" && w[1].starts_with(label)), "{label}: {kv:?}");
        }
        assert!(warm.contains(&"--no-history".to_string()) && !warm.contains(&"--label".to_string()), "{warm:?}");
        // A key-value workload of command templates: its commands, shares and data file go to `kv`, and the
        // data file alone does not make it an HTTP workload.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rows.csv"), "id\n1\n").unwrap();
        let text = "[[target]]\nname = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n[[workload]]\nname = \"w\"\n\
             command = [\"SET u:{{id}} x\", \"GET u:{{id}}\"]\ncommand_ratio = [1.0, 3.0]\ndata = \"rows.csv\"\n\
             data_order = \"random\"\n[load]\nconnections = 1\nduration = \"1s\"\n";
        let file = dir.path().join("kv.toml");
        std::fs::write(&file, text).unwrap();
        let p = StudyPlan::from_file(&file).unwrap();
        assert!(p.workloads[0].http.is_none());
        let kv = &p.cases[0].args;
        let data = dir.path().join("rows.csv").display().to_string();
        for pair in [["--command", "SET u:{{id}} x"], ["--command", "GET u:{{id}}"], ["--data", &data]] {
            assert!(has(kv, pair), "{pair:?}: {kv:?}");
        }
        for pair in [["--command-ratio", "1"], ["--command-ratio", "3"], ["--data-order", "random"]] {
            assert!(has(kv, pair), "{pair:?}: {kv:?}");
        }
        // Without command templates the data file stays the HTTP part's, beside a mix for key-value targets.
        let text = "[[target]]\nname = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n[[workload]]\nname = \"w\"\n\
                    mix = \"get:1\"\ndata = \"rows.csv\"\n[load]\nconnections = 1\nduration = \"1s\"\n";
        std::fs::write(&file, text).unwrap();
        let p = StudyPlan::from_file(&file).unwrap();
        let w = &p.workloads[0];
        assert!(w.http.as_ref().is_some_and(|h| h.data.is_some()) && w.kv.as_ref().is_some_and(|k| k.data.is_none()));
        assert!(!p.cases[0].args.contains(&"--data".to_string()), "{:?}", p.cases[0].args);
        let sweep = TWO.replace("connections = 2", "clients = [1, 2]");
        let p = plan(&sweep).unwrap();
        let args = &p.cases[0].args;
        assert_eq!(args[0], "sweep");
        assert!(has(args, ["--clients", "1,2"]) && has(args, ["-d", "1s"]), "{args:?}");
        assert_eq!(p.load.case_time(), Some(Duration::from_secs(3)));
    }
}
