//! Studies (`hakaru study FILE.toml`): the study file's model, its checks, and the plan they give: every target x
//! workload x phase x repetition as one case, in the interleaved order they run (repetition outermost, so drift
//! hits every target alike), each with the `run` / `sweep` / `kv` arguments its child process gets.
//!
//! The file is read with serde (`deny_unknown_fields`); a mistake is one line with the file, line, column, key
//! and fix. [`runner`] runs a plan, [`manifest`] is the `study.json` other commands read, [`summary`] the merged
//! CSV and the table over repetitions.

pub mod connection;
mod file;
mod locate;
pub mod manifest;
pub mod runner;
pub mod summary;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::units::parse_flag_duration;
use crate::cli::args::{
    ArrivalArg, HistoryArgs, KvArgs, LiveArgs, LoadArgs, RequestArgs, RunArgs, SweepArgs, WatchArgs,
};
use crate::cli::render::{defaults, render};
use crate::error::CliError;

use file::*;
use locate::{Locator, serde_error};

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
    /// Recorded traffic replayed as the workload (`run --replay`, `kv --replay` for a MONITOR capture).
    pub replay: Option<ReplayWork>,
}

/// A workload's recording: the file, whether its writes are sent, and how much faster.
#[derive(Clone, Debug)]
pub struct ReplayWork {
    pub file: PathBuf,
    pub writes: bool,
    pub speed: Option<f64>,
}

impl ReplayWork {
    /// Onto a command's replay flags; without `timed` (a duration given, or a warm-up's), the recording runs
    /// whole rather than for the study's default duration.
    fn apply(&self, r: &mut crate::cli::args::ReplayArgs, load: &mut LoadArgs, timed: bool) {
        r.replay = Some(self.file.clone());
        r.replay_writes = self.writes;
        r.speed = self.speed.unwrap_or(r.speed);
        if !timed {
            load.duration = None;
        }
    }
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
    /// `--goodput`'s objectives.
    pub goodput: Option<String>,
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
    /// `duration` was given: a replay is cut to it (else it runs its recording whole, not the default 10 s).
    pub duration_given: bool,
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
    pub fn from_file(path: &Path) -> Result<StudyPlan, CliError> {
        StudyPlan::from_file_pushing(path, LiveArgs::default())
    }

    /// Reads and checks a study file whose cases push to `live`'s `--prometheus-rw` (checked by the caller).
    pub fn from_file_pushing(path: &Path, live: LiveArgs) -> Result<StudyPlan, CliError> {
        let text = crate::base::bounded::read_text(path, crate::base::bounded::SMALL)
            .map_err(|e| CliError::new(format!("study file {}: {e}", path.display())))?;
        StudyPlan::parse_pushing(path, &text, live)
    }

    /// Checks the text of a study file read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<StudyPlan, CliError> {
        StudyPlan::parse_pushing(path, text, LiveArgs::default())
    }

    fn parse_pushing(path: &Path, text: &str, live: LiveArgs) -> Result<StudyPlan, CliError> {
        let file: StudyFile = toml::from_str(text).map_err(|e| serde_error(path, text, &e))?;
        let at = Locator { path, text };
        let base_dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Absolute, because the cases run in this directory and get the files' paths as arguments.
        let base_dir = std::fs::canonicalize(&base_dir).unwrap_or(base_dir);
        let name = match file.name {
            Some(n) => check_name(&n).map_err(|fix| at.error(&["name"], &fix))?,
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
        if let Some((i, w)) = workloads.iter().enumerate().find(|(_, w)| w.replay.is_some())
            && !matches!(load.shape, LoadShape::Fixed { .. })
        {
            return Err(at.error(
                &["workload", &i.to_string(), "replay"],
                &format!(
                    "workload '{}' replays a recording, one step at its recorded pace: give the study a fixed load \
                     (connections, duration or requests), not clients, rates or stages",
                    w.name
                ),
            ));
        }
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
    fn make_cases(&self, at: &Locator, implicit_workload: bool, implicit_phase: bool) -> Result<Vec<Case>, CliError> {
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
    fn case_args(&self, t: &Target, w: &Workload, p: &Phase, warmup: bool) -> Result<Vec<String>, CliError> {
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
            if let Some(r) = &w.replay {
                r.apply(&mut a.replay, &mut a.load, l.duration_given || warmup);
            }
            return render("kv", &a).map_err(CliError::new);
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
        (request.events, request.events_until, request.goodput) = (h.events, h.events_until, h.goodput);
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
                if let Some(r) = &w.replay {
                    r.apply(&mut a.replay, &mut a.load, l.duration_given || warmup);
                }
                a.load.history = history;
                render("run", &a).map_err(CliError::new)
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
                render("sweep", &a).map_err(CliError::new)
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

#[cfg(test)]
mod tests;
