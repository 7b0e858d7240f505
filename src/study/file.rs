//! The study file as written (`[[target]]`, `[[workload]]`, `[load]`, `[[phase]]`, read with serde's
//! `deny_unknown_fields`) and its checks into the plan's targets, workloads and load: a mistake is one line with the
//! file, line, column, key and fix (`Locator`, `serde_error`).

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::locate::Locator;
use super::*;

/// The study file as written: `[[target]]`, `[[workload]]`, `[load]`, `[[phase]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StudyFile {
    pub(super) name: Option<String>,
    /// Free text for the reader of the file; not used.
    #[allow(dead_code)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) target: Vec<TargetSpec>,
    #[serde(default)]
    pub(super) workload: Vec<WorkloadSpec>,
    #[serde(default)]
    pub(super) load: LoadSpec,
    #[serde(default)]
    pub(super) phase: Vec<PhaseSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TargetSpec {
    pub(super) name: String,
    pub(super) url: Option<String>,
    pub(super) urls: Option<Vec<String>>,
    pub(super) start: Option<String>,
    pub(super) stop: Option<String>,
    pub(super) ready: Option<String>,
    pub(super) ready_timeout: Option<String>,
    pub(super) monitor: Option<Vec<String>>,
    #[serde(default)]
    pub(super) probe: Vec<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    #[serde(default)]
    pub(super) insecure: bool,
    #[serde(default)]
    pub(super) http2: bool,
    #[serde(default)]
    pub(super) http3: bool,
    pub(super) streams: Option<usize>,
    pub(super) proxy: Option<String>,
    pub(super) cacert: Option<String>,
    pub(super) cert: Option<String>,
    pub(super) key: Option<String>,
    pub(super) tls_version: Option<String>,
    pub(super) sni: Option<String>,
    pub(super) tls_resume: Option<bool>,
    /// `--0rtt` (with `http3 = true`).
    #[serde(default)]
    pub(super) zero_rtt: bool,
    #[serde(default)]
    pub(super) connect_to: Vec<String>,
    pub(super) max_requests_per_connection: Option<u64>,
    pub(super) connection_rate: Option<f64>,
    /// `--unix-socket`: the HTTP target's connections go to this socket.
    pub(super) unix_socket: Option<String>,
    /// A grpc:// target's types: `--proto`, `--protoset`, `--import-path`.
    pub(super) proto: Option<String>,
    pub(super) protoset: Option<String>,
    #[serde(default)]
    pub(super) import_path: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WorkloadSpec {
    pub(super) name: String,
    /// A gRPC method (`--call package.Service/Method`), for grpc:// targets.
    pub(super) call: Option<String>,
    pub(super) path: Option<String>,
    pub(super) paths: Option<Vec<String>>,
    pub(super) method: Option<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    pub(super) body: Option<String>,
    pub(super) body_file: Option<String>,
    /// A WebSocket target's message (`--message`) and what a request is (`--ws-mode`).
    pub(super) message: Option<String>,
    pub(super) ws_mode: Option<String>,
    pub(super) patterns: Option<String>,
    /// A wrk Lua script (`-s`), and the words its init(args) gets.
    pub(super) script: Option<String>,
    #[serde(default)]
    pub(super) script_args: Vec<String>,
    /// A data file for `{{column}}` templates (`--data`), and how its rows are taken.
    pub(super) data: Option<String>,
    pub(super) data_order: Option<String>,
    /// Streamed answers (`--events`, `--events-until`).
    pub(super) events: Option<String>,
    pub(super) events_until: Option<String>,
    /// A streamed answer's objectives (`--goodput ttft:200ms,tpot:50ms`): the share of answers that met them all.
    pub(super) goodput: Option<String>,
    pub(super) mix: Option<String>,
    pub(super) keys: Option<u64>,
    pub(super) value_size: Option<u64>,
    pub(super) key_prefix: Option<String>,
    /// Key-value command templates (`hakaru kv --command`), their shares (`--command-ratio`), and a Lua script
    /// loaded on Redis for `__sha__` (`kv --script`).
    #[serde(default)]
    pub(super) command: Vec<String>,
    #[serde(default)]
    pub(super) command_ratio: Vec<f64>,
    pub(super) redis_script: Option<String>,
    /// Recorded traffic replayed as the workload: an access log, JSON lines, a HAR file (HTTP targets) or a
    /// Redis MONITOR capture (redis:// targets); its writes sent only when `replay_writes`, `replay_speed` times
    /// faster.
    pub(super) replay: Option<String>,
    #[serde(default)]
    pub(super) replay_writes: bool,
    pub(super) replay_speed: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoadSpec {
    pub(super) connections: Option<u64>,
    pub(super) duration: Option<String>,
    pub(super) requests: Option<u64>,
    pub(super) rate: Option<f64>,
    pub(super) clients: Option<Vec<u64>>,
    pub(super) rates: Option<Vec<f64>>,
    /// A ramp of clients inside each case, as `--stages` takes it: "30s:10,1m:100,30s:0".
    pub(super) stages: Option<String>,
    /// A ramp of the rate inside each case, as `--rate-stages` takes it: "30s:100,2m:5000".
    pub(super) rate_stages: Option<String>,
    pub(super) interval: Option<String>,
    pub(super) warmup: Option<String>,
    pub(super) repeat: Option<u32>,
    pub(super) pause: Option<String>,
    pub(super) threads: Option<u64>,
    pub(super) timeout: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) arrival: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PhaseSpec {
    pub(super) name: String,
    pub(super) before: Option<String>,
    #[serde(default)]
    pub(super) restart: bool,
}

/// The longest name: a case's id joins four of them into a file name, which may have 255 bytes.
const MOST_NAME: usize = 48;

/// A name used in case ids and file names: letters, digits, `.`, `_`, `-`, at most [`MOST_NAME`] of them. The error
/// quotes at most 40 characters of it (a 900 KB name put 900 KB in the line).
pub(super) fn check_name(name: &str) -> Result<String, String> {
    let shown = crate::base::secrets::excerpt(name);
    if name.len() > MOST_NAME {
        return Err(format!(
            "name '{shown}' has {} characters, more than the {MOST_NAME} a name may have (it names files): \
             e.g. name = \"fast-build\"",
            name.chars().count()
        ));
    }
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "name '{shown}' must be letters, digits, '.', '_' or '-' (it names files): e.g. name = \"fast-build\""
        ))
    }
}

pub(super) fn unique<'a>(at: &Locator, kind: &str, names: impl Iterator<Item = &'a str>) -> Result<(), CliError> {
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

pub(super) fn target(at: &Locator, base_dir: &Path, i: usize, t: TargetSpec) -> Result<Target, CliError> {
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
                let parsed = crate::base::target::ParsedUrl::parse(&as_http)
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
            crate::base::target::split_host_port(&r).ok().filter(|(_, p)| p.is_some()).ok_or_else(|| {
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
            Some(("port", v)) => MonitorSpec::Port(crate::base::target::parse_port(v.trim()).map_err(|_| bad())?),
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

pub(super) fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

/// `redis://user:pw@host:port/db` -> `host:port` (the port of the protocol when absent).
pub(super) fn kv_host_port(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let hp = rest.split('/').next().unwrap_or(rest);
    let default = if scheme.eq_ignore_ascii_case("redis") { 6379 } else { 11211 };
    match crate::base::target::split_host_port(hp) {
        Ok((h, p)) => format!("{}:{}", bracket(&h), p.unwrap_or(default)),
        Err(_) => hp.to_string(),
    }
}

pub(super) fn workload(at: &Locator, base_dir: &Path, i: usize, w: WorkloadSpec) -> Result<Workload, CliError> {
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
        || w.goodput.is_some()
        || (w.data.is_some() && w.command.is_empty());
    let file = |k: &'static str, f: &Option<String>| -> Result<Option<PathBuf>, CliError> {
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
                            crate::base::bounded::kind_of(&m.file_type()),
                            crate::base::bounded::WHY_REGULAR
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
    match (&w.goodput, w.events.as_deref().and_then(crate::protocol::events::EventKind::parse)) {
        (Some(_), None) => {
            return Err(at.error(
                &key("goodput"),
                "goodput judges streamed answers: add events = \"tokens\" (or sse, ndjson, chunks)",
            ));
        }
        (Some(g), Some(kind)) => {
            crate::plan::events::check_goodput(g, kind).map_err(|e| {
                let why = e.to_string().replacen("--goodput ", "goodput ", 1);
                at.error(&key("goodput"), &why.replace("give --events tokens", "give events = \"tokens\""))
            })?;
        }
        _ => {}
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
            goodput: w.goodput.clone(),
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
    if w.replay.is_none() && (w.replay_writes || w.replay_speed.is_some()) {
        let k = if w.replay_writes { "replay_writes" } else { "replay_speed" };
        return Err(at.error(&key(k), &format!("{k} shapes a replay: add replay = \"access.log\", or leave {k} out")));
    }
    if let Some(s) = w.replay_speed.filter(|s| !(s.is_finite() && (0.001..=1000.0).contains(s))) {
        return Err(at.error(&key("replay_speed"), &format!("replay_speed {s}: give a factor from 0.001 to 1000")));
    }
    let replay = match file("replay", &w.replay)? {
        Some(file) => Some(ReplayWork { file, writes: w.replay_writes, speed: w.replay_speed }),
        None => None,
    };
    Ok(Workload { name, http, kv, replay })
}

pub(super) fn load(at: &Locator, l: LoadSpec) -> Result<Load, CliError> {
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
        duration_given: l.duration.is_some(),
    })
}

/// `stages` or `rate_stages`: one step whose load moves, checked as `--stages` and `--rate-stages` are, alone
/// with the keys a ramp does not set itself. None without either key.
pub(super) fn ramp(at: &Locator, l: &LoadSpec) -> Result<Option<LoadShape>, CliError> {
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

pub(super) fn duration_key(
    at: &Locator,
    key: &[&str],
    value: Option<&str>,
    default: &str,
) -> Result<Duration, CliError> {
    let text = value.unwrap_or(default);
    parse_flag_duration(text).map_err(|fix| {
        let name = key.last().copied().unwrap_or("duration");
        at.error(key, &format!("{name} \"{text}\": {fix}, e.g. {name} = \"2s\""))
    })
}
