//! The plan of `hakaru kv`: key-value servers (redis://, memcache://), a mix of operations over a set of keys,
//! turned into the same [`RunPlan`] as HTTP, so the one engine loop, histograms and result document serve both.

use std::ops::Range;

use super::{RequestSet, RequestSpec, RunPlan, Selection, flag_timeout, random_seed};
use crate::cli::args::KvArgs;
use crate::error::UsageError;
use crate::metrics::StatusSet;
use crate::protocol::{PreparedRequest, Protocol, memcache, resp};
use crate::target::{Endpoint, Scheme, split_host_port};

/// Keys are prepared as requests before the run (as HTTP requests are); more than this many would be memory for
/// nothing that a key generator (a later part of this command) will not need.
const MAX_KEYS: usize = 100_000;
/// A value above memcached's default item limit (1 MB) would only measure refusals.
const MAX_VALUE: usize = 1024 * 1024;

/// One operation of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Get,
    Set,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Get => "GET",
            Op::Set => "SET",
        }
    }
}

/// Reads `--mix get:90,set:10`.
fn parse_mix(text: &str) -> Result<Vec<(Op, f64)>, UsageError> {
    let bad = |why: String| UsageError::new(format!("--mix '{text}': {why}; write it like get:90,set:10"));
    let mut mix = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (op, share) = part.split_once(':').unwrap_or((part, "1"));
        let op = match op.trim().to_ascii_lowercase().as_str() {
            "get" => Op::Get,
            "set" => Op::Set,
            other => return Err(bad(format!("'{other}' is not an operation (get, set)"))),
        };
        let share: f64 = share
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| bad(format!("'{share}' is not a share")))?;
        if mix.iter().any(|(o, _)| *o == op) {
            return Err(bad(format!("{} is given twice", op.name().to_ascii_lowercase())));
        }
        mix.push((op, share));
    }
    if mix.iter().map(|(_, s)| s).sum::<f64>() <= 0.0 {
        return Err(bad("no operation has a share above 0".into()));
    }
    Ok(mix)
}

/// Reads a server URL: its protocol and endpoint.
fn parse_url(url: &str) -> Result<(Protocol, Endpoint), UsageError> {
    let bad = |why: &str| UsageError::new(format!("URL '{url}': {why}"));
    let (protocol, rest, default_port) = if let Some(r) = url.strip_prefix("redis://") {
        (Protocol::Resp, r, 6379)
    } else if let Some(r) = url.strip_prefix("memcache://").or_else(|| url.strip_prefix("memcached://")) {
        (Protocol::Memcache, r, 11211)
    } else {
        return Err(bad("not a key-value server; write redis://HOST:PORT or memcache://HOST:PORT"));
    };
    let rest = rest.trim_end_matches('/');
    if rest.contains('@') {
        // Never echo the password.
        return Err(UsageError::new(format!(
            "URL '{}://***@...': a password is not supported yet (AUTH comes with a later part of `hakaru kv`); \
             use a server without one",
            protocol.name()
        )));
    }
    if rest.contains('/') {
        return Err(bad("a database number is not supported yet (SELECT comes later); use database 0"));
    }
    let (host, port) = split_host_port(rest).map_err(|e| bad(&e))?;
    let ep = Endpoint::resolve(Scheme::Http, &host, port.unwrap_or(default_port)).map_err(|e| bad(&e))?;
    Ok((protocol, ep))
}

impl RunPlan {
    /// The plan of `hakaru kv`: every operation of the mix on every key, prepared once; a group per operation,
    /// drawn by its share, and its keys from an urn.
    pub fn from_kv_args(a: &KvArgs) -> Result<RunPlan, UsageError> {
        let mut endpoints = Vec::new();
        let mut protocol = None;
        for url in &a.urls {
            let (p, ep) = parse_url(url)?;
            if protocol.is_some_and(|q| q != p) {
                return Err(UsageError::new(format!(
                    "URL '{url}': every server of one run speaks the same protocol; run Redis and memcached apart"
                )));
            }
            protocol = Some(p);
            endpoints.push(ep);
        }
        let protocol = protocol.ok_or_else(|| UsageError::new("no server: give redis://HOST:PORT"))?;
        let mix = parse_mix(&a.mix)?;
        if a.keys == 0 || a.keys > MAX_KEYS {
            return Err(UsageError::new(format!(
                "--keys {}: give 1 to {MAX_KEYS} (keys are prepared before the run)",
                a.keys
            )));
        }
        if a.value_size > MAX_VALUE {
            return Err(UsageError::new(format!(
                "--value-size {}: at most {MAX_VALUE} bytes (memcached's default item limit)",
                a.value_size
            )));
        }
        if protocol == Protocol::Memcache
            && (a.key_prefix.len() + 6 > 250 || a.key_prefix.bytes().any(|b| b <= b' ' || b == 0x7f))
        {
            return Err(UsageError::new(format!(
                "--key-prefix '{}': memcached keys hold no spaces or control characters and at most 250 bytes",
                a.key_prefix.escape_debug()
            )));
        }
        super::load_parts(&a.load)?;
        let timeout = flag_timeout("--timeout", &a.timeout)?;
        let connect_timeout = flag_timeout("--connect-timeout", &a.connect_timeout)?;

        let value = vec![b'x'; a.value_size];
        let all: Vec<usize> = (0..endpoints.len()).collect();
        let mut requests = Vec::new();
        let (mut cumulative, mut groups, mut total) = (Vec::new(), Vec::new(), 0.0);
        for (g, &(op, share)) in mix.iter().enumerate() {
            let first = requests.len();
            for k in 0..a.keys {
                let key = format!("{}{k}", a.key_prefix);
                let bytes = match (protocol, op) {
                    (Protocol::Resp, Op::Get) => resp::encode(&[b"GET", key.as_bytes()]),
                    (Protocol::Resp, Op::Set) => resp::encode(&[b"SET", key.as_bytes(), &value]),
                    (Protocol::Memcache, Op::Get) => memcache::encode_get(key.as_bytes()),
                    (Protocol::Memcache, Op::Set) => memcache::encode_set(key.as_bytes(), &value),
                    (Protocol::Http, _) => unreachable!("kv URLs are redis:// or memcache://"),
                };
                let prepared =
                    PreparedRequest { bytes: bytes.into(), expects_no_body: false, idempotent: op == Op::Get };
                requests.push(RequestSpec {
                    endpoints: all.clone(),
                    prepared: vec![prepared; all.len()],
                    timeout,
                    group: g,
                    label: format!("{} {key}", op.name()),
                });
            }
            total += share;
            cumulative.push(total);
            groups.push(Range { start: first, end: requests.len() });
        }
        let set = RequestSet {
            method: a.mix.clone(),
            headers: Vec::new(),
            patterns: None,
            endpoints,
            requests,
            selection: Selection::Weighted { cumulative, groups },
            group_names: mix.iter().map(|(op, _)| op.name().to_string()).collect(),
            keepalive: true,
            connect_timeout,
            seed: a.seed.unwrap_or_else(random_seed),
            insecure: false,
            targets: a.urls.clone(),
            body_bytes: a.value_size,
            // A miss (204) is an answer the workload expects; a value not stored (409) or an error reply (500)
            // is a failure.
            ok_status: StatusSet::parse("200-299").expect("a valid set"),
            warnings: Vec::new(),
            wait: None,
            protocol,
        };
        super::one_step(&set, "kv", &a.load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_read_as_operations_and_shares() {
        assert_eq!(parse_mix("get:90,set:10").unwrap(), [(Op::Get, 90.0), (Op::Set, 10.0)]);
        assert_eq!(parse_mix("SET").unwrap(), [(Op::Set, 1.0)]);
        for bad in ["del:1", "get:x", "get:0", "get:1,get:2", ""] {
            let e = parse_mix(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--mix '{bad}'")), "{e}");
        }
    }

    #[test]
    fn urls_name_the_protocol_and_passwords_are_never_echoed() {
        assert_eq!(parse_url("redis://127.0.0.1:6380").unwrap().0, Protocol::Resp);
        assert_eq!(parse_url("redis://127.0.0.1").unwrap().1.port, 6379);
        assert_eq!(parse_url("memcache://127.0.0.1").unwrap().1.port, 11211);
        let e = parse_url("redis://user:secret@127.0.0.1:6379").unwrap_err().to_string();
        assert!(!e.contains("secret") && e.contains("***"), "{e}");
        assert!(parse_url("http://127.0.0.1/").is_err());
        assert!(parse_url("redis://127.0.0.1:6379/2").unwrap_err().to_string().contains("SELECT"));
    }
}
