//! The plan of `hakaru kv`: key-value servers (redis://, memcache://) and a workload (a mix, commands, Kyoto's
//! order and wicked, YCSB), turned into the same [`RunPlan`]s as HTTP, so the one engine loop, histograms and
//! result document serve both.

mod replay;
mod url;

use std::sync::Arc;
use std::time::Duration;

use super::{RequestSet, RequestSpec, RunPlan, Selection, flag_timeout, random_seed};
use crate::base::target::{Endpoint, Scheme, percent_decode, split_host_port};
use crate::cli::args::{KvArgs, KvSweep, LoadArgs, SweepArgs};
use crate::error::CliError;
use crate::metrics::StatusSet;
use crate::protocol::{Greeting, PreparedRequest, Protocol, memcache, resp};
use crate::workload::Workload;
use crate::workload::command::{Command, Mix, WordKey};
use crate::workload::keys::KeyPattern;
use crate::workload::kyoto::{Order, Phase, WICKED_OPS, Wicked};
use crate::workload::ycsb::{Letter, YCSB_OPS, Ycsb, YcsbPhase};

pub use super::kv_guard::OWN_PREFIX;
use super::kv_guard::{Guard, Template, Written, shown_range};
use url::*;

/// memcached's default item limit is 1 MB including the item's own overhead: a value near it would only
/// measure refusals.
const MAX_VALUE: usize = 1_000_000;

/// Reads `--mix get:90,set:10`.
fn parse_mix(text: &str) -> Result<Vec<(&'static str, f64)>, CliError> {
    let bad = |why: String| CliError::new(format!("--mix '{text}': {why}; write it like get:90,set:10"));
    let mut mix: Vec<(&'static str, f64)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (op, share) = part.split_once(':').unwrap_or((part, "1"));
        let op = match op.trim().to_ascii_lowercase().as_str() {
            "get" => "get",
            "set" => "set",
            other => return Err(bad(format!("'{other}' is not an operation (get, set; others with --command)"))),
        };
        let share: f64 = share
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| bad(format!("'{share}' is not a share")))?;
        if mix.iter().any(|(o, _)| *o == op) {
            return Err(bad(format!("{op} is given twice")));
        }
        mix.push((op, share));
    }
    if mix.iter().map(|(_, s)| s).sum::<f64>() <= 0.0 {
        return Err(bad("no operation has a share above 0".into()));
    }
    Ok(mix)
}

/// The plan of `hakaru kv`: one step for a mix; a step per phase for `order`, per iteration for `wicked`, load
/// and run for YCSB; all into one result document.
pub struct KvPlan {
    /// The steps, in order: a label and its plan.
    pub steps: Vec<(String, RunPlan)>,
    /// Commands every server runs before the load: what they are (for messages) and their bytes.
    pub setup: Vec<(String, Vec<u8>)>,
    /// With `--script`: the SHA1 the templates use, checked against what the server answers to SCRIPT LOAD.
    pub script_sha: Option<String>,
    pub warmup: Option<Duration>,
    /// The workload's name as given (`mix`, `order`, `ycsb-a`...).
    pub workload: String,
    /// Kyoto's workloads print a `time:` line per phase.
    pub kyoto: bool,
    pub verify: bool,
    /// `--clients` or `--rates`: the steps are a sweep (`clients` or `rates`, and the values).
    pub sweep: Option<(String, Vec<f64>)>,
    /// What the run may do to data it did not write, judged on what every server holds before the load.
    pub guard: Guard,
}

/// Whether a URL names a key-value server, which `hakaru sweep` hands to `kv`.
pub fn is_kv_url(url: &str) -> bool {
    ["redis://", "memcache://", "memcached://"].iter().any(|scheme| url.starts_with(scheme)) || unix_url(url).is_some()
}

/// `hakaru sweep` over key-value servers: the sweep `kv --clients` or `--rates` makes, of the default mix (90 %
/// GET, 10 % SET over 1,000 keys), with sweep's step length, pause, error share, warmup and files. None when the
/// URLs are HTTP ones; refused when both kinds are given or a flag only HTTP has is.
pub fn from_sweep(a: &SweepArgs) -> Result<Option<KvArgs>, CliError> {
    let r = &a.request;
    let kv_urls = r.urls.iter().filter(|u| is_kv_url(u)).count();
    if kv_urls == 0 {
        return Ok(None);
    }
    if kv_urls < r.urls.len() || r.hosts.is_some() {
        return Err(CliError::new(
            "URL: a sweep is over HTTP URLs or over key-value servers (redis://, memcache://), not both; sweep them apart",
        ));
    }
    let http_only = [
        ("--port", r.port.is_some()),
        ("--path", r.path.is_some()),
        ("--patterns", r.patterns.is_some()),
        ("--method", r.method != "GET"),
        ("--header", !r.headers.is_empty()),
        ("--body", r.body.is_some()),
        ("--body-file", r.body_file.is_some()),
        ("--no-keepalive", r.no_keepalive),
        ("--insecure", r.insecure),
        ("--unix-socket", r.unix_socket.is_some()),
        ("--proxy", r.proxy.is_some()),
        ("--connect-to", !r.connect_to.is_empty()),
        ("--max-requests-per-connection", r.max_requests_per_connection.is_some()),
        ("--connection-rate", r.connection_rate.is_some()),
        ("--cacert", r.cacert.is_some()),
        ("--cert", r.cert.is_some()),
        ("--tls-version", r.tls_version.is_some()),
        ("--sni", r.sni.is_some()),
        ("--tls-resume", r.tls_resume == crate::cli::args::OnOff::Off),
        ("--http2", r.http2),
        ("--http3", r.http3),
        ("--0rtt", r.zero_rtt),
        ("--streams", r.streams.is_some()),
        ("--ok-status", r.ok_status != "200-399"),
        ("--wait", a.wait.is_some()),
    ];
    if let Some((flag, _)) = http_only.iter().find(|(_, given)| *given) {
        return Err(CliError::new(format!(
            "{flag}: an HTTP flag, and this sweep is over key-value servers; leave it out (`hakaru kv --clients` takes a workload's flags)"
        )));
    }
    let (clients, rates) = match super::steps::sweep_steps(a)? {
        super::steps::Steps::Clients(list) => (Some(joined(&list)), None),
        super::steps::Steps::Rates(list) => (None, Some(joined(&list))),
    };
    let s = &a.steps;
    let interval = super::steps::flag_duration_or_zero("--interval", &s.interval)?;
    let max_error_percent = super::slo::parse_percent("--max-error-rate", &s.max_error_rate)?;
    let warmup = super::steps::flag_duration_or_zero("--warmup", &s.warmup)?;
    super::check_outputs(&[("--output", s.output.as_deref()), ("--csv", s.csv.as_deref())])?;
    super::steps::require_range(a)?;
    // kv's own defaults, from its flag definitions, for everything sweep has no flag for (the mix, keys, value size).
    let mut kv: KvArgs = crate::cli::render::defaults();
    kv.urls = r.urls.clone();
    kv.watch = a.watch.clone();
    kv.timeout = r.timeout.clone();
    kv.connect_timeout = r.connect_timeout.clone();
    kv.max_line = r.max_line.clone();
    kv.seed = r.seed;
    kv.clients = clients;
    kv.rates = rates;
    kv.warmup = (!warmup.is_zero()).then(|| s.warmup.clone());
    let load = &mut kv.load;
    load.connections = s.connections;
    load.arrival = s.arrival;
    load.duration = Some(s.duration.clone());
    load.threads = s.threads;
    load.json = s.json.clone();
    load.hdr_log = s.hdr_log.clone();
    load.window = s.window.clone();
    load.quiet = s.quiet;
    load.live = s.live.clone();
    load.thresholds = a.thresholds.clone();
    load.scale = s.scale.clone();
    load.history = s.history.clone();
    kv.from_sweep = Some(KvSweep { interval, max_error_percent, drnbench_csv: s.output.clone(), csv: s.csv.clone() });
    Ok(Some(kv))
}

/// A sweep's values as `--clients` or `--rates` takes them: 1,2,4.
fn joined<T: std::fmt::Display>(values: &[T]) -> String {
    values.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// The servers of the URLs, their one protocol and greeting.
fn servers(urls: &[String]) -> Result<(Vec<Endpoint>, Protocol, Option<Greeting>), CliError> {
    let mut endpoints = Vec::new();
    let mut protocol = None;
    let mut hello: Option<Option<Greeting>> = None;
    for url in urls {
        let u = parse_url(url)?;
        let shown = crate::base::secrets::redact_secret(url);
        if protocol.is_some_and(|q| q != u.protocol) {
            return Err(CliError::new(format!(
                "URL '{shown}': every server of one run speaks the same protocol; run Redis and memcached apart"
            )));
        }
        let g = greeting(&u);
        if hello.as_ref().is_some_and(|h| h.as_ref().map(|g| &g.commands) != g.as_ref().map(|g| &g.commands)) {
            return Err(CliError::new(format!(
                "URL '{shown}': every server of one run takes the same password and database"
            )));
        }
        hello = Some(g);
        protocol = Some(u.protocol);
        endpoints.push(u.endpoint);
    }
    let protocol = protocol.ok_or_else(|| CliError::new("no server: give redis://HOST:PORT"))?;
    Ok((endpoints, protocol, hello.flatten()))
}

fn pattern_flag(flag: &str, text: &str) -> Result<KeyPattern, CliError> {
    KeyPattern::parse(text).ok_or_else(|| {
        CliError::new(format!("{flag} '{text}': not a key pattern; give R, G, S, P or Z (memtier's letters)"))
    })
}

/// `--value-size-range 32-1024`.
fn value_range(a: &KvArgs) -> Result<(usize, usize), CliError> {
    let (lo, hi) = match &a.value_size_range {
        None => (a.value_size, a.value_size),
        Some(text) => {
            let bad = || CliError::new(format!("--value-size-range '{text}': write MIN-MAX in bytes, like 32-1024"));
            let (l, h) = text.split_once('-').ok_or_else(bad)?;
            let (l, h): (usize, usize) = (l.trim().parse().map_err(|_| bad())?, h.trim().parse().map_err(|_| bad())?);
            if l > h {
                return Err(bad());
            }
            (l, h)
        }
    };
    if hi > MAX_VALUE {
        return Err(CliError::new(format!(
            "value size {hi}: at most {MAX_VALUE} bytes (memcached's default item limit)"
        )));
    }
    Ok((lo, hi))
}

/// Kyoto's rnum is per client: the step's budget is rnum for each of its connections (a segment's too).
fn per_client(mut plan: RunPlan, rnum: u64) -> RunPlan {
    let n = rnum.saturating_mul(plan.connections as u64);
    plan.stop = crate::base::load::Until::Requests(n);
    plan.settings.requests = Some(n);
    // A segment's whole plan is rnum for each of all the agents' clients, so its share is this segment's.
    if let Some(whole) = plan.settings.whole_plan.as_mut() {
        whole.requests = Some(rnum.saturating_mul(whole.connections as u64));
    }
    plan
}

/// `--clients 1,2,4` or `--rates 100,200`: the kind of sweep and its values.
fn sweep_of(a: &KvArgs) -> Result<Option<(String, Vec<f64>)>, CliError> {
    if let Some(text) = &a.clients {
        let list: Vec<usize> = super::steps::parse_list("--clients", text, "1,2,4,8")?;
        if list.contains(&0) {
            return Err(CliError::new(format!("--clients '{text}': every count must be at least 1")));
        }
        return Ok(Some(("clients".into(), list.into_iter().map(|c| c as f64).collect())));
    }
    if let Some(text) = &a.rates {
        let list: Vec<f64> = super::steps::parse_list("--rates", text, "1000,2000,4000")?;
        for r in &list {
            super::parse_rate("--rates", *r)?;
        }
        return Ok(Some(("rates".into(), list)));
    }
    Ok(None)
}

/// `--data`'s rows, for the mix's `--command` templates.
fn data_rows(a: &KvArgs, workload: &str, warmup: bool) -> Result<Option<crate::template::data::Rows>, CliError> {
    let Some(path) = &a.data else { return Ok(None) };
    let flag = format!("--data '{}'", path.display());
    if workload != "mix" || a.command.is_empty() {
        return Err(CliError::new(format!(
            "{flag}: its rows fill --command templates of the mix; give one, e.g. --command 'SET {{{{id}}}} {{{{value}}}}'"
        )));
    }
    if warmup && a.data_order == crate::cli::args::DataOrderArg::Unique {
        return Err(CliError::new(format!(
            "{flag} --data-order unique with --warmup: the warm-up would use rows the measurement needs; leave --warmup out"
        )));
    }
    let segment = super::segment::Scale::from_args(&a.load.scale)?.segment;
    super::data_rows(path, segment).map(Some)
}

/// The rows and counters the templates' holes take, when a `--command` has any; a data file no template reads
/// and a memcached line its rows would break are refused.
fn feed(
    a: &KvArgs,
    protocol: Protocol,
    commands: &[(Command, f64)],
    rows: Option<crate::template::data::Rows>,
) -> Result<Option<crate::template::Feed>, CliError> {
    let (holes, columns) = commands.iter().fold((false, false), |(h, c), (cmd, _)| {
        let (h2, c2) = cmd.holes();
        (h || h2, c || c2)
    });
    if let (Some(rows), Some(path)) = (&rows, &a.data) {
        let flag = format!("--data '{}'", path.display());
        if !columns {
            return Err(CliError::new(format!(
                "{flag}: no --command uses its columns ({}); write them as {{{{{}}}}}",
                rows.columns.join(", "),
                rows.columns[0]
            )));
        }
        for (c, _) in commands {
            c.check_rows(protocol, rows).map_err(|why| CliError::new(format!("{flag}: {why}")))?;
        }
    }
    Ok(holes.then(|| crate::template::Feed::new(rows, super::data_order(a.data_order))))
}

/// What the guard needs of a template that may write: its words filled with samples, and the keys each word names
/// (the server says, before the load, which words are keys it writes).
fn template_guard(c: &Command, a: &KvArgs, rows: Option<&Arc<crate::template::data::Rows>>) -> Template {
    let shown = if a.command.is_empty() { format!("--mix's {}", c.name) } else { format!("--command '{}'", c.name) };
    let row0 = rows.filter(|r| !r.is_empty()).map(|r| r.row(0));
    let sample = c.sample(format!("{}0", a.key_prefix).as_bytes(), b"hakaru-sample-value", row0);
    let unknown = || {
        Written::unknown(
            format!("those {shown} writes"),
            "a key built from __data__, a built-in {{...}} or two __key__s is not known before the run",
        )
    };
    let words = (0..c.words())
        .map(|i| match c.word_key(i) {
            WordKey::Fixed(key) => Written::fixed(key, &shown),
            WordKey::Numbered { before, after } => {
                let prefix = a.key_prefix.clone();
                let key = move |n: u64| [&before[..], format!("{prefix}{n}").as_bytes(), &after[..]].concat();
                Written {
                    first: 0,
                    count: a.keys,
                    shown: shown_range(&key(0), &key(a.keys - 1)),
                    own: a.key_prefix.starts_with("hakaru") && key(0).starts_with(b"hakaru"),
                    key: Arc::new(key),
                    unknowable: None,
                    instead: "choose another --key-prefix",
                }
            }
            WordKey::Row(row_key) => match rows.filter(|r| !r.is_empty()) {
                Some(rows) => {
                    let rows = Arc::clone(rows);
                    let count = rows.len() as u64;
                    let key = move |n: u64| row_key.of(rows.row(n as usize));
                    Written {
                        first: 0,
                        count,
                        shown: shown_range(&key(0), &key(count - 1)),
                        own: (0..count).all(|n| key(n).starts_with(b"hakaru")),
                        key: Arc::new(key),
                        unknowable: None,
                        instead: "write other keys in the data file",
                    }
                }
                None => unknown(),
            },
            WordKey::Unknown => unknown(),
        })
        .collect();
    Template { shown, sample, words }
}

/// Loads a `--script` file and its SHA1 (Redis names a loaded script by the SHA1 of its text).
fn script(a: &KvArgs, protocol: Protocol) -> Result<Option<(String, Vec<u8>)>, CliError> {
    let Some(path) = &a.script else { return Ok(None) };
    if protocol != Protocol::Resp {
        return Err(CliError::new(format!("--script {}: scripts run on Redis; memcached has none", path.display())));
    }
    let text = crate::base::bounded::read(path, crate::base::bounded::SMALL)
        .map_err(|e| CliError::new(format!("--script {}: {e}", path.display())))?;
    let sha = sha1_smol::Sha1::from(&text).digest().to_string();
    Ok(Some((sha, text)))
}

impl KvPlan {
    pub fn from_args(a: &KvArgs) -> Result<KvPlan, CliError> {
        let (endpoints, protocol, greeting) = servers(&a.urls)?;
        super::load_parts(&a.load)?;
        let timeout = flag_timeout("--timeout", &a.timeout)?;
        let connect_timeout = flag_timeout("--connect-timeout", &a.connect_timeout)?;
        let max_line = super::flag_max_line(&a.max_line)?;
        let warmup = a.warmup.as_deref().map(|w| super::steps::flag_duration_or_zero("--warmup", w)).transpose()?;
        if protocol == Protocol::Memcache
            && (a.key_prefix.len() + 20 > 250 || a.key_prefix.bytes().any(|b| b <= b' ' || b == 0x7f))
        {
            return Err(CliError::new(format!(
                "--key-prefix '{}': memcached keys hold no spaces or control characters and at most 250 bytes",
                a.key_prefix.escape_debug()
            )));
        }
        let (value_min, value_max) = value_range(a)?;
        for (flag, n) in [("--keys", a.keys), ("--rnum", a.rnum), ("--records", a.records), ("--it", a.it)] {
            if n == 0 {
                return Err(CliError::new(format!("{flag} 0: give at least 1")));
            }
        }
        let seed = a.seed.unwrap_or_else(random_seed);
        let workload_name = a.workload.trim().to_ascii_lowercase();
        let mut setup = Vec::new();
        let script = script(a, protocol)?;
        if let Some((_, text)) = &script {
            setup.push(("SCRIPT LOAD".to_string(), resp::encode(&[b"SCRIPT", b"LOAD", text])));
        }
        // Nothing is deleted unless asked (see kv_guard): then before any workload, first of the setup.
        if a.flush {
            setup.insert(
                0,
                match protocol {
                    Protocol::Resp => ("FLUSHDB".to_string(), resp::encode(&[b"FLUSHDB"])),
                    _ => ("flush_all".to_string(), memcache::encode_line(&[b"flush_all"])),
                },
            );
        }
        let mut guard = Guard {
            workload: workload_name.clone(),
            protocol,
            needs_empty: false,
            flush: a.flush,
            overwrite: a.overwrite,
            writes: Vec::new(),
            templates: Vec::new(),
        };
        let base = Base {
            endpoints,
            protocol,
            greeting,
            timeout,
            connect_timeout,
            max_line,
            seed,
            body_bytes: value_max,
            targets: a.urls.iter().map(|u| crate::base::secrets::redact_secret(u)).collect(),
            data: a.data.as_ref().map(|p| format!("{} ({})", p.display(), a.data_order.name())),
            pipeline: a.pipeline.max(1),
        };
        if a.replay.replay.is_some() {
            return replay::plan(a, &base, guard);
        }
        super::replay::check_unused(&a.replay)?;
        let set_for = |workload: Workload, names: Vec<String>, method: String| {
            base.set(base.blank_specs(&names), names, method, Some(workload), Selection::RoundRobin)
        };
        let exactly = |n: u64| {
            let mut l = a.load.clone();
            l.requests = Some(n);
            l.duration = None;
            l
        };
        let step = |set: &RequestSet, load: &LoadArgs| super::one_step(set, "kv", load);
        let no_chain = |what: &str| {
            if a.pipeline > 1 {
                Err(CliError::new(format!(
                    "--pipeline {}: {what} reads before it writes, so its requests cannot be pipelined; leave --pipeline out",
                    a.pipeline
                )))
            } else {
                Ok(())
            }
        };
        let mut kyoto = false;
        let mut sweep = None;
        let scale = super::segment::Scale::from_args(&a.load.scale)?;
        if workload_name != "mix" && warmup.is_some() {
            return Err(CliError::new(format!(
                "--warmup with --workload {workload_name}: its phases change the data (a warm-up would append twice, or \
                 move a --verify model); warm the server with a mix run first"
            )));
        }
        if workload_name != "mix" && (a.clients.is_some() || a.rates.is_some()) {
            return Err(CliError::new(format!(
                "--workload {workload_name}: --clients and --rates sweep a mix; run {workload_name} with -c or --rate"
            )));
        }
        let rows = data_rows(a, &workload_name, warmup.is_some())?;
        let steps: Vec<(String, RunPlan)> = match workload_name.as_str() {
            "mix" => {
                let pattern = pattern_flag("--key-pattern", &a.key_pattern)?;
                let columns = rows.as_ref().map(|r| r.columns.clone());
                let mut commands = Vec::new();
                if a.command.is_empty() {
                    for (op, share) in parse_mix(&a.mix)? {
                        commands.push((Command::builtin(op, protocol, pattern), share));
                    }
                } else {
                    let sha = script.as_ref().map(|(s, _)| s.as_str());
                    for (i, t) in a.command.iter().enumerate() {
                        let p = match a.command_key_pattern.get(i) {
                            Some(p) => pattern_flag("--command-key-pattern", p)?,
                            None => pattern,
                        };
                        let share = a.command_ratio.get(i).copied().unwrap_or(1.0);
                        if !share.is_finite() || share < 0.0 {
                            return Err(CliError::new(format!("--command-ratio {share}: give a share of 0 or more")));
                        }
                        let c = Command::parse(t, protocol, p, sha, columns.as_deref())
                            .map_err(|why| CliError::new(format!("--command '{t}': {why}")))?;
                        commands.push((c, share));
                    }
                    if commands.iter().map(|(_, s)| s).sum::<f64>() <= 0.0 {
                        return Err(CliError::new("--command-ratio: every share is 0; give one above 0"));
                    }
                }
                // A template that deletes wholesale deletes what hakaru did not write: only when told.
                if let Some((c, _)) = commands.iter().find(|(c, share)| *share > 0.0 && c.clears())
                    && !a.flush
                {
                    return Err(CliError::new(format!(
                        "--command '{}': deletes everything in the database or server, data hakaru did not write \
                         included; add --flush to allow it",
                        c.name
                    )));
                }
                let feed = feed(a, protocol, &commands, rows)?;
                // Every template that may write: which of its words are keys it writes is asked before the load.
                let rows_of = feed.as_ref().and_then(|f| f.rows.clone());
                for (c, share) in &commands {
                    if *share > 0.0 && c.writes() {
                        guard.templates.push(template_guard(c, a, rows_of.as_ref()));
                    }
                }
                let names: Vec<String> = commands.iter().map(|(c, _)| c.name.clone()).collect();
                // The names, not the templates: a template's password (`AUTH pw`) is already hidden in its name.
                let method = if a.command.is_empty() { a.mix.clone() } else { names.join(" | ") };
                let mix = Mix::new(protocol, commands, a.keys, a.key_prefix.clone(), value_min, value_max, feed);
                let set = set_for(Workload::Commands(Arc::new(mix)), names, method);
                match sweep_of(a)? {
                    None => vec![("kv".to_string(), step(&set, &a.load)?)],
                    Some((kind, values)) => {
                        let mut steps = Vec::new();
                        for &v in &values {
                            let mut load = a.load.clone();
                            let label = if kind == "clients" {
                                load.connections = v as usize;
                                format!("c={v}")
                            } else {
                                load.rate = Some(v);
                                format!("rate={v}")
                            };
                            steps.push((label, step(&set, &load)?));
                        }
                        sweep = Some((kind, values));
                        steps
                    }
                }
            }
            "order" => {
                kyoto = true;
                guard.needs_empty = true;
                let mut steps = Vec::new();
                for phase in Phase::all(a.etc) {
                    if phase == Phase::Walk && protocol == Protocol::Memcache {
                        continue;
                    }
                    let order = Order {
                        protocol,
                        phase,
                        rnum: a.rnum,
                        rnd: a.rnd,
                        etc: a.etc,
                        // Agents set their keys apart, each in its own time, and a walk visits one server.
                        check_walk: scale.segment.is_none() && base.endpoints.len() == 1,
                        key_prefix: a.key_prefix.clone(),
                    };
                    let name = phase.name().to_string();
                    let mut set = set_for(Workload::Order(order), vec![name.clone()], format!("order {name}"));
                    if phase == Phase::Walk {
                        // Each SCAN needs the cursor the last one answered: the walk is never pipelined.
                        set.pipeline = 1;
                    }
                    let clients = a.load.connections.max(1) as u64;
                    steps.push((name, per_client(step(&set, &exactly(a.rnum.saturating_mul(clients)))?, a.rnum)));
                }
                steps
            }
            "wicked" => {
                kyoto = true;
                no_chain("wicked")?;
                guard.needs_empty = true;
                // Kyoto's clear at half way deletes whatever others wrote meanwhile: only when --flush allows it.
                let wicked = Arc::new(Wicked::new(protocol, a.rnum, a.verify, a.flush, a.key_prefix.clone()));
                // The cursor step and transactions are Redis's alone (memcached cannot iterate, its step 8 is a get,
                // and it has no transactions).
                let ops = if protocol == Protocol::Resp { &WICKED_OPS[..] } else { &WICKED_OPS[..12] };
                let names: Vec<String> = ops.iter().map(|s| s.to_string()).collect();
                let clients = a.load.connections.max(1) as u64;
                let mut steps = Vec::new();
                for i in 1..=a.it {
                    let set = set_for(Workload::Wicked(Arc::clone(&wicked)), names.clone(), "wicked".into());
                    let plan = per_client(step(&set, &exactly(a.rnum.saturating_mul(clients)))?, a.rnum);
                    steps.push((format!("iteration {i}"), plan));
                }
                steps
            }
            name if Letter::parse(name).is_some() => {
                let letter = Letter::parse(name).expect("just parsed");
                if letter == Letter::E && protocol == Protocol::Memcache {
                    return Err(CliError::new(
                        "--workload ycsb-e: its scans need ordered keys, and memcached cannot scan; run it on Redis",
                    ));
                }
                if letter == Letter::F {
                    no_chain("ycsb-f's read-modify-write")?;
                }
                let names: Vec<String> = YCSB_OPS.iter().map(|s| s.to_string()).collect();
                let phases: &[YcsbPhase] = match a.ycsb_phase.as_str() {
                    "load" => &[YcsbPhase::Load],
                    "run" => &[YcsbPhase::Run],
                    "both" => &[YcsbPhase::Load, YcsbPhase::Run],
                    other => {
                        return Err(CliError::new(format!("--ycsb-phase '{other}': give load, run or both")));
                    }
                };
                // The load phase writes its records; D's and E's run phase inserts new ones after them, at most one
                // per operation (with -d their count is not known: as many as 10 x the records are looked at).
                let loads = a.ycsb_phase != "run";
                let inserts = if matches!(letter, Letter::D | Letter::E) && a.ycsb_phase != "load" {
                    a.load.requests.unwrap_or(a.records.saturating_mul(10))
                } else {
                    0
                };
                let first = if loads { 0 } else { a.records };
                let count = if loads { a.records } else { 0 } + inserts;
                if count > 0 {
                    let last = Ycsb::key(first + count - 1);
                    guard.writes.push(Written {
                        first,
                        count,
                        key: Arc::new(Ycsb::key),
                        shown: format!("the records {}", shown_range(&Ycsb::key(first), &last)),
                        own: false,
                        unknowable: None,
                        instead: "--ycsb-phase run uses records loaded before",
                    });
                }
                if letter == Letter::E {
                    // E's scan index: its inserts add to it, so it is looked at like the records.
                    let index = format!("{}{}", a.key_prefix, crate::workload::ycsb::INDEX).into_bytes();
                    guard.writes.push(Written::fixed(index, "--workload ycsb-e (its scan index)"));
                }
                let mut steps = Vec::new();
                for &phase in phases {
                    let segment = scale.segment.map(|s| (s.index as u64, s.count as u64));
                    let y = Ycsb::new(protocol, letter, phase, a.records, segment, &a.key_prefix);
                    let set = set_for(Workload::Ycsb(Arc::new(y)), names.clone(), name.to_string());
                    let (label, load) = match phase {
                        YcsbPhase::Load => ("load", exactly(a.records)),
                        YcsbPhase::Run => ("run", a.load.clone()),
                    };
                    steps.push((label.to_string(), step(&set, &load)?));
                }
                steps
            }
            other => {
                return Err(CliError::new(format!(
                    "--workload '{other}': not a workload; give mix, order, wicked or ycsb-a ... ycsb-f"
                )));
            }
        };
        Ok(KvPlan {
            steps,
            setup,
            script_sha: script.map(|(s, _)| s),
            warmup,
            workload: workload_name,
            kyoto,
            verify: a.verify,
            sweep,
            guard,
        })
    }
}

/// What every request set of one `kv` run shares: the servers and how to talk to them.
pub(super) struct Base {
    endpoints: Vec<Endpoint>,
    protocol: Protocol,
    greeting: Option<Greeting>,
    timeout: Duration,
    connect_timeout: Duration,
    max_line: usize,
    seed: u64,
    body_bytes: usize,
    targets: Vec<String>,
    /// `--data`'s file and order, as the document shows them.
    data: Option<String>,
    pipeline: usize,
}

impl Base {
    /// One spec per operation name, on every server: figures go under it; the workload makes the bytes.
    fn blank_specs(&self, names: &[String]) -> Vec<RequestSpec> {
        let all: Arc<[usize]> = (0..self.endpoints.len()).collect();
        let blank = PreparedRequest { bytes: Vec::new().into(), expects_no_body: false, idempotent: true };
        names
            .iter()
            .enumerate()
            .map(|(g, name)| RequestSpec {
                endpoints: Arc::clone(&all),
                prepared: vec![blank.clone(); all.len()].into_iter().collect(),
                timeout: self.timeout,
                group: g,
                label: name.as_str().into(),
            })
            .collect()
    }

    /// The request set of `requests` (their figures under `names`), made by `workload` or sent as prepared.
    fn set(
        &self,
        requests: Vec<RequestSpec>,
        names: Vec<String>,
        method: String,
        workload: Option<Workload>,
        selection: Selection,
    ) -> RequestSet {
        RequestSet {
            method,
            headers: Vec::new(),
            patterns: None,
            endpoints: self.endpoints.clone(),
            requests: Arc::new(requests),
            selection,
            group_names: names,
            keepalive: true,
            connect_timeout: self.connect_timeout,
            graceful_stop: None,
            max_line: self.max_line,
            max_header_list: super::DEFAULT_MAX_HEADER_LIST,
            seed: self.seed,
            insecure: false,
            tls: Default::default(),
            max_requests_per_connection: None,
            connection_rate: None,
            pace_window: super::PACE_WINDOW,
            connect_to: Vec::new(),
            targets: self.targets.clone(),
            body_bytes: self.body_bytes,
            // A miss (204) is an answer; a value not stored (409) or an error reply (500) is a failure unless
            // the workload expected it.
            ok_status: StatusSet::parse("200-299").expect("a valid set"),
            warnings: Vec::new(),
            wait: None,
            wire: super::wire::Wire::Kv { protocol: self.protocol, greeting: self.greeting.clone() },
            workload: workload.map(Arc::new),
            pipeline: self.pipeline,
            script: None,
            template: None,
            data: self.data.clone(),
            events: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_read_as_operations_and_shares() {
        assert_eq!(parse_mix("get:90,set:10").unwrap(), [("get", 90.0), ("set", 10.0)]);
        assert_eq!(parse_mix("SET").unwrap(), [("set", 1.0)]);
        for bad in ["del:1", "get:x", "get:0", "get:1,get:2", ""] {
            let e = parse_mix(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--mix '{bad}'")), "{e}");
        }
    }

    #[test]
    fn a_unix_socket_url_with_a_password_or_options_is_refused_and_never_echoed() {
        for url in ["redis+unix://:s3cret@/tmp/r.sock", "unix:///tmp/r.sock?password=s3cret", "unix:/tmp/r.sock?db=2"] {
            let e = parse_url(url).map(|_| ()).unwrap_err().to_string();
            assert!(!e.contains("s3cret") && !e.contains("/tmp/r.sock"), "{e}");
            assert!(e.contains("path alone"), "{e}");
        }
    }

    #[test]
    fn urls_name_the_protocol_and_passwords_are_never_echoed() {
        assert_eq!(parse_url("redis://127.0.0.1:6380").unwrap().protocol, Protocol::Resp);
        assert_eq!(parse_url("redis://127.0.0.1").unwrap().endpoint.port, 6379);
        assert_eq!(parse_url("memcache://127.0.0.1").unwrap().endpoint.port, 11211);
        let u = parse_url("redis://user:secret@127.0.0.1:6379/2").unwrap();
        assert_eq!((u.auth, u.db), (Some((Some("user".into()), "secret".into())), Some(2)));
        let g = greeting(&parse_url("redis://:pw@127.0.0.1/3").unwrap()).unwrap();
        assert_eq!(&*g.commands[0], &b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"[..]);
        assert_eq!(&*g.commands[1], &b"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"[..]);
        assert_eq!(g.what, "AUTH and SELECT");
        // A server that echoes the password back in its error does not get it printed.
        let echo = "ERR unknown command 'AUTH', with args beginning with: 'pw'";
        assert_eq!(g.scrub(echo), "ERR unknown command 'AUTH', with args beginning with: '***'");
        // A password longer than Redis quotes comes back cut, and is hidden all the same.
        let long = "p".repeat(200);
        let g = greeting(&parse_url(&format!("redis://:{long}@127.0.0.1/3")).unwrap()).unwrap();
        let echo = format!("ERR with args beginning with: '{}'", &long[..128]);
        assert!(!g.scrub(&echo).contains(&long[..64]), "{}", g.scrub(&echo));
        let e = parse_url("redis://user:secret@127.0.0.1:6379/x").err().expect("refused").to_string();
        assert!(!e.contains("secret") && e.contains("user:***"), "{e}");
        assert!(parse_url("http://127.0.0.1/").is_err());
        assert!(parse_url("memcache://u:p@127.0.0.1").is_err());
        // A password with '/' (base64) or percent-escapes; the error for a bad database does not show it.
        let u = parse_url("redis://:ab/cd@127.0.0.1/1").unwrap();
        assert_eq!((u.auth.map(|a| a.1), u.db), (Some("ab/cd".to_string()), Some(1)));
        assert_eq!(parse_url("redis://:p%2Fss@127.0.0.1").unwrap().auth.unwrap().1, "p/ss");
        let e = parse_url("redis://:ab/cd@127.0.0.1/x").err().expect("refused").to_string();
        assert!(!e.contains("ab/cd") && !e.contains("cd@"), "{e}");
    }
}
