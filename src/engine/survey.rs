//! A look at every key-value server before the load: how much it holds (Redis `DBSIZE`, memcached `curr_items`)
//! and which of the keys the run will write exist already, for [`crate::plan::kv_guard::Guard::judge`]. Blocking,
//! one connection per server, every read under one deadline and a size bound.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ask, greeted, read_by};
use crate::error::UsageError;
use crate::plan::RunPlan;
use crate::plan::kv_guard::{Found, Holding, MAX_CHECKED, Written};
use crate::protocol::{Protocol, memcache, resp};

/// Keys asked about in one command (Redis `EXISTS k1 ... kN`) or one pipelined batch (memcached `mg`).
const BATCH: u64 = 1000;
/// The most bytes one survey or setup reply may take (memcached's `stats` is about 3 kB; a batch of `mg` replies
/// 4 kB; Redis answers DBSIZE, EXISTS, FLUSHDB and SCRIPT LOAD in a line).
pub(super) const MAX_REPLY: usize = 1 << 20;

/// What every server of the plan holds; the keys of `written` are looked up where it holds anything.
pub fn survey(plan: &RunPlan, written: Option<&Written>) -> Result<Vec<Holding>, UsageError> {
    let mut holdings = Vec::new();
    for (i, ep) in plan.endpoints.iter().enumerate() {
        let target = plan
            .settings
            .targets
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("{}://{}:{}", plan.protocol.scheme(), ep.host, ep.port));
        let fail = |why: String| UsageError::new(format!("target {target}: {why}"));
        let deadline = Instant::now() + plan.connect_timeout.max(Duration::from_secs(30));
        let mut s = greeted(ep, plan.greeting.as_ref(), plan.connect_timeout, deadline).map_err(fail)?;
        let items = match plan.protocol {
            Protocol::Resp => redis_dbsize(&mut s, deadline),
            _ => memcached_items(&mut s, deadline),
        }
        .map_err(fail)?;
        let found = match written {
            Some(w) if items > 0 => Some(
                match plan.protocol {
                    Protocol::Resp => look_up(w, |keys| redis_existing(&mut s, keys, deadline)),
                    _ => look_up(w, |keys| memcached_existing(&mut s, keys, deadline)),
                }
                .map_err(fail)?,
            ),
            _ => None,
        };
        holdings.push(Holding { target, items, found });
    }
    Ok(holdings)
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

fn redis_dbsize(s: &mut std::net::TcpStream, deadline: Instant) -> Result<u64, String> {
    let reply = ask(s, Protocol::Resp, &Arc::from(resp::encode(&[b"DBSIZE"])), deadline, "DBSIZE")?;
    if let Some(e) = reply.error {
        return Err(format!("the server refused DBSIZE: {e}"));
    }
    number(&reply.value, "DBSIZE")
}

/// `EXISTS k1 ... kN`: how many of the keys exist.
fn redis_existing(s: &mut std::net::TcpStream, keys: &[Vec<u8>], deadline: Instant) -> Result<Option<u64>, String> {
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
    s: &mut std::net::TcpStream,
    deadline: Instant,
    what: &str,
    done: impl Fn(&[u8]) -> bool,
) -> Result<Vec<u8>, String> {
    let mut got = Vec::new();
    read_by(s, deadline, what, |bytes| {
        got.extend_from_slice(bytes);
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

fn memcached_items(s: &mut std::net::TcpStream, deadline: Instant) -> Result<u64, String> {
    s.write_all(&memcache::encode_line(&[b"stats"])).map_err(|e| format!("sending stats: {e}"))?;
    let got =
        read_until(s, deadline, "stats", |g| g.len() >= 5 && (g == b"END\r\n" || ends_with_line(g, b"\r\nEND\r\n")))?;
    let text = String::from_utf8_lossy(&got);
    text.lines()
        .find_map(|l| l.strip_prefix("STAT curr_items "))
        .ok_or_else(|| format!("its stats name no curr_items: {}", text.lines().next().unwrap_or("")))
        .and_then(|n| number(n.as_bytes(), "stats"))
}

/// memcached's meta get without flags answers `HD` for a key that exists and `EN` for one that does not, without
/// its value; `mn` closes the batch with `MN`. A server without meta commands answers `ERROR`: None.
fn memcached_existing(s: &mut std::net::TcpStream, keys: &[Vec<u8>], deadline: Instant) -> Result<Option<u64>, String> {
    let mut out = Vec::new();
    for key in keys {
        out.extend_from_slice(&memcache::encode_line(&[b"mg", key]));
    }
    out.extend_from_slice(&memcache::encode_line(&[b"mn"]));
    s.write_all(&out).map_err(|e| format!("sending mg: {e}"))?;
    let got = read_until(s, deadline, "mg", |g| g == b"MN\r\n" || ends_with_line(g, b"\r\nMN\r\n"))?;
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
