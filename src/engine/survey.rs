//! A look at every key-value server before the load: how much it holds (Redis `DBSIZE`, memcached `curr_items`)
//! and which of the keys the run will write exist already, for [`crate::plan::kv_guard::Guard::judge`]. Blocking,
//! one connection per server, every read under one deadline and a size bound.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ask, greeted, read_by};
use crate::error::CliError;
use crate::plan::RunPlan;
use crate::plan::kv_guard::{Found, Holding, MAX_CHECKED, Template, Written, written_words};
use crate::protocol::{Protocol, memcache, resp};

/// Keys asked about in one command (Redis `EXISTS k1 ... kN`) or one pipelined batch (memcached `mg`).
const BATCH: u64 = 1000;
/// The most bytes one survey or setup reply may take (memcached's `stats` is about 3 kB; a batch of `mg` replies
/// 4 kB; Redis answers DBSIZE, EXISTS, FLUSHDB and SCRIPT LOAD in a line).
pub(super) const MAX_REPLY: usize = 1 << 20;

/// What every server of the plan holds; where it holds anything, the keys the run writes are looked up: `writes`,
/// and the keys each template writes or deletes, as the server names them (or [`written_words`]' table).
pub fn survey(plan: &RunPlan, check: Option<(&[Written], &[Template])>) -> Result<Vec<Holding>, CliError> {
    let mut holdings = Vec::new();
    for (i, ep) in plan.endpoints.iter().enumerate() {
        let target =
            plan.settings.targets.get(i).cloned().unwrap_or_else(|| ep.kv_target(plan.wire.protocol().scheme()));
        let fail = |why: String| CliError::new(format!("target {target}: {why}"));
        let limit = super::reply_limit(plan);
        let mut s = greeted(ep, plan.wire.greeting(), plan.connect_timeout, limit).map_err(fail)?;
        let items = match plan.wire.protocol() {
            Protocol::Resp => redis_dbsize(&mut s, Instant::now() + limit),
            _ => memcached_items(&mut s, Instant::now() + limit),
        }
        .map_err(fail)?;
        let mut found = Vec::new();
        if let Some((writes, templates)) = check.filter(|_| items > 0) {
            let mut sets: Vec<Written> = writes.to_vec();
            for t in templates {
                sets.extend(written_by(&mut s, plan.wire.protocol(), t, limit).map_err(fail)?);
            }
            let mut seen = std::collections::HashSet::new();
            for w in sets.into_iter().filter(|w| seen.insert(w.shown.clone())) {
                let f = match plan.wire.protocol() {
                    Protocol::Resp => look_up(&w, |keys| redis_existing(&mut s, keys, Instant::now() + limit)),
                    _ => look_up(&w, |keys| memcached_existing(&mut s, keys, Instant::now() + limit)),
                }
                .map_err(fail)?;
                found.push((w, f));
            }
        }
        holdings.push(Holding { target, items, found });
    }
    Ok(holdings)
}

/// The keys template `t` writes or deletes: the words the server names as written keys for its sample (Redis),
/// else the table's; keys no one can name count as unknown, which is not hakaru's.
fn written_by(
    s: &mut crate::base::target::Stream,
    protocol: Protocol,
    t: &Template,
    limit: Duration,
) -> Result<Vec<Written>, String> {
    let asked = match protocol {
        Protocol::Resp => redis_written_keys(s, &t.sample, limit)?,
        _ => None,
    };
    let words = match asked {
        // Each key the server names, back to the words that hold it (the sample's values are distinct).
        Some(keys) => keys
            .iter()
            .map(|k| {
                let at: Vec<usize> = (1..t.sample.len()).filter(|&i| &t.sample[i] == k).collect();
                (!at.is_empty()).then_some(at)
            })
            .collect::<Option<Vec<Vec<usize>>>>()
            .map(|at| at.concat()),
        None => written_words(protocol, &t.sample),
    };
    Ok(match words {
        Some(words) => words.into_iter().filter_map(|i| t.words.get(i).cloned()).collect(),
        None => vec![Written::unknown(
            format!("those {} writes", t.shown),
            "the server does not say which keys the command writes, nor does hakaru's table of commands",
        )],
    })
}

/// Redis's own answer: the keys the sample command writes or deletes (`COMMAND GETKEYSANDFLAGS`, Redis 7; else
/// `COMMAND GETKEYS` and the command's `write` flag from `COMMAND INFO`). None when the server cannot say.
fn redis_written_keys(
    s: &mut crate::base::target::Stream,
    sample: &[Vec<u8>],
    limit: Duration,
) -> Result<Option<Vec<Vec<u8>>>, String> {
    let no_keys = |e: &str| e.contains("no key arguments");
    let mut ask_command = |sub: &[u8], words: &[Vec<u8>]| -> Result<Value, String> {
        let mut args: Vec<&[u8]> = vec![b"COMMAND", sub];
        args.extend(words.iter().map(Vec::as_slice));
        s.write_all(&resp::encode(&args)).map_err(|e| format!("sending COMMAND: {e}"))?;
        let got = read_until(s, Protocol::Resp, Instant::now() + limit, "COMMAND", |g| !matches!(parse(g), Ok(None)))?;
        parse(&got).map_err(|_| "the reply to COMMAND is not RESP".to_string()).map(|v| v.expect("whole").0)
    };
    match ask_command(b"GETKEYSANDFLAGS", sample)? {
        Value::Array(keys) => {
            let written = keys.into_iter().filter_map(|k| match k {
                Value::Array(mut kf) if kf.len() == 2 => {
                    let flags = kf.pop()?;
                    let Value::Bytes(key) = kf.pop()? else { return None };
                    let writes = matches!(&flags, Value::Array(f) if f.iter().any(|f| matches!(f,
                        Value::Bytes(b) if [&b"RW"[..], b"OW", b"RM", b"insert", b"update", b"delete"].contains(&b.as_slice()))));
                    writes.then_some(key)
                }
                _ => None,
            });
            return Ok(Some(written.collect()));
        }
        Value::Error(e) if no_keys(&e) => return Ok(Some(Vec::new())),
        _ => {}
    }
    // Before Redis 7: every key of a command flagged `write` counts as written.
    let keys = match ask_command(b"GETKEYS", sample)? {
        Value::Array(keys) => keys,
        Value::Error(e) if no_keys(&e) => return Ok(Some(Vec::new())),
        _ => return Ok(None),
    };
    let info = ask_command(b"INFO", &sample[..1])?;
    let writes = match &info {
        Value::Array(commands) => match commands.first() {
            Some(Value::Array(c)) => match c.get(2) {
                Some(Value::Array(flags)) => flags.iter().any(|f| matches!(f, Value::Bytes(b) if b == b"write")),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    let keys = keys.into_iter().filter_map(|k| if let Value::Bytes(b) = k { Some(b) } else { None });
    Ok(Some(if writes { keys.collect() } else { Vec::new() }))
}

/// A RESP reply, as far as the survey reads one.
#[derive(Debug, PartialEq)]
enum Value {
    Bytes(Vec<u8>),
    Error(String),
    Array(Vec<Value>),
    Nil,
}

/// One whole RESP2 or RESP3 value from the start of `b` and its length; None when more bytes are needed; Err on
/// bytes that are not RESP, or arrays nested deeper than COMMAND's replies are (a hostile server's would
/// overflow the stack).
fn parse(b: &[u8]) -> Result<Option<(Value, usize)>, ()> {
    parse_nested(b, 0)
}

fn parse_nested(b: &[u8], depth: usize) -> Result<Option<(Value, usize)>, ()> {
    if depth > 8 {
        return Err(());
    }
    let Some(end) = b.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let (kind, line, mut at) = (*b.first().ok_or(())?, &b[1..end], end + 2);
    let text = std::str::from_utf8(line).map_err(|_| ())?;
    let count = || text.parse::<i64>().map_err(|_| ());
    Ok(Some(match kind {
        b'+' | b':' | b',' | b'#' | b'(' => (Value::Bytes(line.to_vec()), at),
        b'-' => (Value::Error(text.to_string()), at),
        b'_' => (Value::Nil, at),
        b'$' | b'=' | b'!' => {
            let n = count()?;
            if n < 0 {
                return Ok(Some((Value::Nil, at)));
            }
            let n = n as usize;
            if b.len() < at + n + 2 {
                return Ok(None);
            }
            (Value::Bytes(b[at..at + n].to_vec()), at + n + 2)
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = count()?;
            if n < 0 {
                return Ok(Some((Value::Nil, at)));
            }
            let n = if kind == b'%' { 2 * n } else { n };
            let mut items = Vec::new();
            for _ in 0..n {
                let Some((v, used)) = parse_nested(&b[at..], depth + 1)? else { return Ok(None) };
                items.push(v);
                at += used;
            }
            (Value::Array(items), at)
        }
        _ => return Err(()),
    }))
}

/// The numbers of the keys looked at: all of them, or an evenly spaced sample of [`MAX_CHECKED`].
fn sample(first: u64, count: u64) -> impl Iterator<Item = u64> {
    let checked = count.min(MAX_CHECKED);
    (0..checked).map(move |i| {
        first + if count <= MAX_CHECKED { i } else { (i as u128 * count as u128 / checked as u128) as u64 }
    })
}

/// How many of the keys `w` writes exist, asked a batch at a time (`ask` answers a batch's count, or None when the
/// server cannot say). Not looked up: keys no template names one way, or more than are looked up one by one under
/// a prefix not hakaru's (a sample of them could miss someone's key, which the run would then overwrite).
fn look_up(w: &Written, mut ask: impl FnMut(&[Vec<u8>]) -> Result<Option<u64>, String>) -> Result<Found, String> {
    if let Some(why) = w.unknowable {
        return Ok(Found::Unknown(why));
    }
    if !w.own && w.count > MAX_CHECKED {
        return Ok(Found::Unknown("more than 100,000 keys to look up one by one"));
    }
    let (mut checked, mut existing) = (0, 0);
    let numbers: Vec<u64> = sample(w.first, w.count).collect();
    for batch in numbers.chunks(BATCH as usize) {
        let keys: Vec<Vec<u8>> = batch.iter().map(|&n| (w.key)(n)).collect();
        match ask(&keys)? {
            Some(n) => existing += n,
            None => return Ok(Found::Unknown("memcached answers no meta commands; memcached 1.6 does")),
        }
        checked += batch.len() as u64;
    }
    Ok(Found::Counted { checked, existing })
}

fn number(value: &[u8], what: &str) -> Result<u64, String> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("the reply to {what} is not a count: {}", String::from_utf8_lossy(value)))
}

fn redis_dbsize(s: &mut crate::base::target::Stream, deadline: Instant) -> Result<u64, String> {
    let reply = ask(s, Protocol::Resp, &Arc::from(resp::encode(&[b"DBSIZE"])), deadline, "DBSIZE")?;
    if let Some(e) = reply.error {
        return Err(format!("the server refused DBSIZE: {e}"));
    }
    number(&reply.value, "DBSIZE")
}

/// `EXISTS k1 ... kN`: how many of the keys exist.
fn redis_existing(
    s: &mut crate::base::target::Stream,
    keys: &[Vec<u8>],
    deadline: Instant,
) -> Result<Option<u64>, String> {
    let mut args: Vec<&[u8]> = vec![b"EXISTS"];
    args.extend(keys.iter().map(Vec::as_slice));
    let reply = ask(s, Protocol::Resp, &Arc::from(resp::encode(&args)), deadline, "EXISTS")?;
    if let Some(e) = reply.error {
        return Err(format!("the server refused EXISTS: {e}"));
    }
    number(&reply.value, "EXISTS").map(Some)
}

/// Reads until `done` says the bytes so far are a whole reply, by `deadline`, at most [`MAX_REPLY`] bytes (`read_by`).
fn read_until(
    s: &mut crate::base::target::Stream,
    protocol: Protocol,
    deadline: Instant,
    what: &str,
    done: impl Fn(&[u8]) -> bool,
) -> Result<Vec<u8>, String> {
    let mut got = Vec::new();
    read_by(s, deadline, what, |bytes| {
        got.extend_from_slice(bytes);
        if let Some(other) = super::other_protocol(protocol, &got[..got.len().min(64)]) {
            return Err(other.to_string());
        }
        Ok(done(&got))
    })?;
    Ok(got)
}

/// A reply ends with this line (or is an error line of memcached's).
fn ends_with_line(got: &[u8], last: &[u8]) -> bool {
    got.ends_with(last)
        || got.starts_with(b"ERROR")
        || got.starts_with(b"CLIENT_ERROR")
        || got.starts_with(b"SERVER_ERROR")
}

fn memcached_items(s: &mut crate::base::target::Stream, deadline: Instant) -> Result<u64, String> {
    s.write_all(&memcache::encode_line(&[b"stats"])).map_err(|e| format!("sending stats: {e}"))?;
    let got = read_until(s, Protocol::Memcache, deadline, "stats", |g| {
        g.len() >= 5 && (g == b"END\r\n" || ends_with_line(g, b"\r\nEND\r\n"))
    })?;
    let text = String::from_utf8_lossy(&got);
    text.lines()
        .find_map(|l| l.strip_prefix("STAT curr_items "))
        .ok_or_else(|| format!("its stats name no curr_items: {}", text.lines().next().unwrap_or("")))
        .and_then(|n| number(n.as_bytes(), "stats"))
}

/// memcached's meta get without flags answers `HD` for a key that exists and `EN` for one that does not, without
/// its value; `mn` closes the batch with `MN`. A server without meta commands answers `ERROR`: None.
fn memcached_existing(
    s: &mut crate::base::target::Stream,
    keys: &[Vec<u8>],
    deadline: Instant,
) -> Result<Option<u64>, String> {
    let mut out = Vec::new();
    for key in keys {
        out.extend_from_slice(&memcache::encode_line(&[b"mg", key]));
    }
    out.extend_from_slice(&memcache::encode_line(&[b"mn"]));
    s.write_all(&out).map_err(|e| format!("sending mg: {e}"))?;
    let got =
        read_until(s, Protocol::Memcache, deadline, "mg", |g| g == b"MN\r\n" || ends_with_line(g, b"\r\nMN\r\n"))?;
    if !got.ends_with(b"MN\r\n") {
        return Ok(None);
    }
    Ok(Some(got.split(|&b| b == b'\n').filter(|l| l.starts_with(b"HD")).count() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_key_range_is_sampled_evenly_and_a_small_one_whole() {
        assert_eq!(sample(0, 3).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(sample(5, 2).collect::<Vec<_>>(), [5, 6]);
        let big: Vec<u64> = sample(0, 10 * MAX_CHECKED).collect();
        assert_eq!(big.len() as u64, MAX_CHECKED);
        assert_eq!((big[0], big[1], *big.last().unwrap()), (0, 10, 10 * MAX_CHECKED - 10));
    }

    #[test]
    fn memcached_replies_end_at_their_last_line_or_an_error() {
        assert!(ends_with_line(b"STAT pid 1\r\nEND\r\n", b"\r\nEND\r\n"));
        assert!(!ends_with_line(b"STAT pid 1\r\nEN", b"\r\nEND\r\n"));
        assert!(ends_with_line(b"ERROR\r\n", b"\r\nMN\r\n"));
    }
}
