//! The plan of `hakaru kv`: key-value servers (redis://, memcache://), a mix of operations over a set of keys,
//! turned into the same [`RunPlan`] as HTTP, so the one engine loop, histograms and result document serve both.

use std::ops::Range;

use super::{RequestSet, RequestSpec, RunPlan, Selection, flag_timeout, random_seed};
use crate::cli::args::KvArgs;
use crate::error::UsageError;
use crate::metrics::StatusSet;
use crate::protocol::{Greeting, PreparedRequest, Protocol, memcache, resp};
use crate::target::{Endpoint, Scheme, split_host_port};

/// Keys are prepared as requests before the run (as HTTP requests are); more than this many would be memory for
/// nothing that a key generator (a later part of this command) will not need.
const MAX_KEYS: usize = 100_000;
/// memcached's default item limit is 1 MB including the item's own overhead: a value near it would only
/// measure refusals.
const MAX_VALUE: usize = 1_000_000;

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

/// A server URL, read.
struct KvUrl {
    protocol: Protocol,
    endpoint: Endpoint,
    /// Redis: `AUTH [user] password`, from `redis://[user]:password@host`.
    auth: Option<(Option<String>, String)>,
    /// Redis: `SELECT db`, from `redis://host/db`.
    db: Option<u32>,
}

/// Reads a server URL. A password in it is never echoed in an error.
fn parse_url(url: &str) -> Result<KvUrl, UsageError> {
    let shown = crate::provenance::redact_secret(url);
    let bad = |why: &str| UsageError::new(format!("URL '{shown}': {why}"));
    let (protocol, rest, default_port) = if let Some(r) = url.strip_prefix("redis://") {
        (Protocol::Resp, r, 6379)
    } else if let Some(r) = url.strip_prefix("memcache://").or_else(|| url.strip_prefix("memcached://")) {
        (Protocol::Memcache, r, 11211)
    } else {
        return Err(bad("not a key-value server; write redis://HOST:PORT or memcache://HOST:PORT"));
    };
    // The user and password run to the last '@' (a password may hold '/'); then host, port and database.
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let (hostport, path) = match after.split_once('/') {
        Some((h, p)) => (h, p.trim_end_matches('/')),
        None => (after, ""),
    };
    if protocol == Protocol::Memcache && (userinfo.is_some() || !path.is_empty()) {
        return Err(bad("memcached's text protocol has no password and no database; write memcache://HOST:PORT"));
    }
    // Percent-decoded, as redis-cli and the client libraries read them (`p%2Fss` is `p/ss`).
    let auth = userinfo.map(|u| match u.split_once(':') {
        Some((user, pass)) => (Some(percent_decode(user)).filter(|u| !u.is_empty()), percent_decode(pass)),
        None => (None, percent_decode(u)),
    });
    let db = if path.is_empty() {
        None
    } else {
        Some(
            path.parse::<u32>()
                .map_err(|_| bad("the database after the host must be a number: redis://HOST:PORT/2"))?,
        )
    };
    let (host, port) = split_host_port(hostport).map_err(|e| bad(&e))?;
    let endpoint = Endpoint::resolve(Scheme::Http, &host, port.unwrap_or(default_port)).map_err(|e| bad(&e))?;
    Ok(KvUrl { protocol, endpoint, auth, db })
}

/// `%XX` sequences decoded; anything else kept as it is.
fn percent_decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The AUTH and SELECT a URL asks for, as one greeting.
fn greeting(u: &KvUrl) -> Option<Greeting> {
    let mut commands: Vec<std::sync::Arc<[u8]>> = Vec::new();
    let mut what = Vec::new();
    if let Some((user, pass)) = &u.auth {
        commands.push(
            match user {
                Some(user) => resp::encode(&[b"AUTH", user.as_bytes(), pass.as_bytes()]),
                None => resp::encode(&[b"AUTH", pass.as_bytes()]),
            }
            .into(),
        );
        what.push("AUTH");
    }
    if let Some(db) = u.db {
        commands.push(resp::encode(&[b"SELECT", db.to_string().as_bytes()]).into());
        what.push("SELECT");
    }
    let secrets: Vec<String> = u.auth.iter().map(|(_, pass)| pass.clone()).filter(|p| !p.is_empty()).collect();
    (!commands.is_empty()).then(|| Greeting { commands, what: what.join(" and "), secrets })
}

impl RunPlan {
    /// The plan of `hakaru kv`: every operation of the mix on every key, prepared once; a group per operation,
    /// drawn by its share, and its keys from an urn.
    pub fn from_kv_args(a: &KvArgs) -> Result<RunPlan, UsageError> {
        let mut endpoints = Vec::new();
        let mut protocol = None;
        let mut hello: Option<Option<Greeting>> = None;
        for url in &a.urls {
            let u = parse_url(url)?;
            let shown = crate::provenance::redact_secret(url);
            if protocol.is_some_and(|q| q != u.protocol) {
                return Err(UsageError::new(format!(
                    "URL '{shown}': every server of one run speaks the same protocol; run Redis and memcached apart"
                )));
            }
            let g = greeting(&u);
            if hello.as_ref().is_some_and(|h| h.as_ref().map(|g| &g.commands) != g.as_ref().map(|g| &g.commands)) {
                return Err(UsageError::new(format!(
                    "URL '{shown}': every server of one run takes the same password and database"
                )));
            }
            hello = Some(g);
            protocol = Some(u.protocol);
            endpoints.push(u.endpoint);
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
            targets: a.urls.iter().map(|u| crate::provenance::redact_secret(u)).collect(),
            body_bytes: a.value_size,
            // A miss (204) is an answer the workload expects; a value not stored (409) or an error reply (500)
            // is a failure.
            ok_status: StatusSet::parse("200-299").expect("a valid set"),
            warnings: Vec::new(),
            wait: None,
            protocol,
            greeting: hello.flatten(),
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
