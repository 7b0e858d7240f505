//! `--probe URL#/json/pointer`: a server-side figure (a cache hit rate, a query count) read over HTTP before and
//! after every step. Probes are never fatal: every failure is a message in the reading.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::base::target::{Endpoint, ParsedUrl, Scheme};
use crate::error::CliError;
use crate::protocol::ResponseDecoder;
use crate::protocol::http::HttpDecoder;

/// A status document larger than this is not a status document.
const MAX_ANSWER: usize = 8 * 1024 * 1024;

const EXAMPLE: &str = "write it like http://127.0.0.1:10041/d/status#/1/cache_hit_rate";

/// `--probe 'URL#/json/pointer'` (repeatable): fetched before and after every step.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// As the user wrote it.
    pub spec: String,
    pub url: ParsedUrl,
    /// An RFC 6901 JSON pointer, starting with '/'.
    pub pointer: String,
    /// A short label for CSV columns; see [`unique_names`].
    pub name: String,
}

impl Probe {
    /// Bad input (CliError, one line naming --probe, the value, and the fix) when the URL does not parse or the
    /// `#/pointer` part is missing or does not start with '/'. `name` is the last pointer segment.
    pub fn parse(spec: &str) -> Result<Probe, CliError> {
        // The spec is kept and shown with its secrets hidden (a password in the URL, a token in its query); the
        // parsed URL keeps them for the request.
        let shown = crate::base::secrets::redact_secret(spec);
        let bad = |why: String| CliError::new(format!("--probe '{shown}': {why}"));
        // A URL cannot hold a raw '#' before its fragment, so the first one starts the pointer.
        let Some((url, pointer)) = spec.split_once('#') else {
            return Err(bad(format!("the '#/json/pointer' to the figure is missing; {EXAMPLE}")));
        };
        if !pointer.starts_with('/') {
            return Err(bad(format!("the JSON pointer after '#' must start with '/'; {EXAMPLE}")));
        }
        let url = ParsedUrl::parse(url).map_err(bad)?;
        Ok(Probe { spec: shown.clone(), url, pointer: pointer.to_string(), name: pointer_name(pointer) })
    }

    /// The URL part of the spec, for messages.
    fn url_text(&self) -> &str {
        self.spec.split_once('#').map_or(&self.spec, |(u, _)| u)
    }

    /// One blocking HTTP/1.1 GET (plain http only) within `timeout`, then the JSON pointer applied.
    /// A failure is Err(message), never a panic.
    pub fn fetch(&self, timeout: Duration) -> Result<serde_json::Value, String> {
        let url = self.url_text();
        if self.url.scheme == Scheme::Https {
            return Err(format!("{url}: https probes are not supported yet; probe the server over http://"));
        }
        let body = http_get(&self.url, timeout).map_err(|e| format!("{url}: {e}"))?;
        let doc: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            let start: String = String::from_utf8_lossy(&body[..body.len().min(40)]).escape_debug().collect();
            format!("{url}: the answer is not JSON ({e}): \"{start}\"")
        })?;
        apply_pointer(&doc, &self.pointer).map_err(|e| format!("{url}: {e}"))
    }
}

/// The last pointer segment, unescaped (`~1` is '/', `~0` is '~'), as a label; `value` when it is empty.
fn pointer_name(pointer: &str) -> String {
    let last = pointer.rsplit('/').next().unwrap_or("");
    let name = last.replace("~1", "/").replace("~0", "~");
    if name.is_empty() { "value".to_string() } else { name }
}

/// Makes the probes' names unique for CSV columns: later duplicates get `_2`, `_3`...
pub fn unique_names(probes: &mut [Probe]) {
    let mut taken: Vec<String> = Vec::with_capacity(probes.len());
    for p in probes.iter_mut() {
        if taken.contains(&p.name) {
            let base = p.name.clone();
            let mut n = 2;
            while taken.contains(&format!("{base}_{n}")) {
                n += 1;
            }
            p.name = format!("{base}_{n}");
        }
        taken.push(p.name.clone());
    }
}

/// The value at `pointer`, or an error naming the pointer and what the document holds there instead.
pub fn apply_pointer(doc: &serde_json::Value, pointer: &str) -> Result<serde_json::Value, String> {
    doc.pointer(pointer).cloned().ok_or_else(|| {
        let what = match doc {
            serde_json::Value::Object(m) => {
                let keys: Vec<&str> = m.keys().take(8).map(String::as_str).collect();
                format!("an object with keys {}", keys.join(", "))
            }
            serde_json::Value::Array(a) => format!("an array of {}", a.len()),
            _ => "a single value".to_string(),
        };
        format!("the JSON pointer '{pointer}' matches nothing in the answer (which is {what})")
    })
}

/// GETs `url` over a fresh connection and returns the body of a 2xx answer.
fn http_get(url: &ParsedUrl, timeout: Duration) -> Result<Vec<u8>, String> {
    let (status, body) = http_exchange(url, "GET", "Accept: application/json\r\n", &[], timeout)?;
    if !(200..300).contains(&status) {
        return Err(format!("HTTP {status} instead of a 2xx answer"));
    }
    Ok(body)
}

/// One HTTP/1.1 request (plain http) over a fresh connection: `head` holds extra header lines, each ending in CR
/// LF, and a body is sent with its length. Returns the status and body of the answer. The whole exchange is bounded
/// by `timeout`; the end of the answer is found by [`HttpDecoder`], so a server that keeps the connection open
/// despite `Connection: close` costs nothing.
pub fn http_exchange(
    url: &ParsedUrl,
    method: &str,
    head: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("no complete answer within {timeout:?}"))
    };
    let endpoint = Endpoint::resolve(url.scheme, &url.host, url.port)?;
    let mut stream = TcpStream::connect_timeout(&endpoint.addr, left()?)
        .map_err(|e| format!("cannot connect to {} ({e})", endpoint.addr))?;
    let length =
        if body.is_empty() && method == "GET" { String::new() } else { format!("Content-Length: {}\r\n", body.len()) };
    let mut request = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\n{head}{length}User-Agent: hakaru/{}\r\nConnection: close\r\n\r\n",
        url.path_and_query,
        endpoint.host_header(),
        env!("CARGO_PKG_VERSION"),
    )
    .into_bytes();
    request.extend_from_slice(body);
    stream
        .set_write_timeout(Some(left()?))
        .and_then(|()| stream.write_all(&request))
        .map_err(|e| format!("cannot send the request ({e})"))?;
    let mut decoder = HttpDecoder::default();
    decoder.start(false);
    let mut wire = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        stream.set_read_timeout(Some(left()?)).map_err(|e| format!("cannot read the answer ({e})"))?;
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!("no complete answer within {timeout:?}"));
            }
            Err(e) => return Err(format!("cannot read the answer ({e})")),
        };
        if n == 0 {
            decoder.eof().map_err(|e| e.to_string())?;
            break;
        }
        wire.extend_from_slice(&buf[..n]);
        if wire.len() > MAX_ANSWER {
            return Err("the answer is larger than 8 MiB".into());
        }
        if decoder.feed(&buf[..n]).map_err(|e| e.to_string())?.is_some() {
            break;
        }
    }
    split_answer(&wire)
}

/// The status and body of one complete answer (interim 1xx heads skipped, chunked bodies joined).
fn split_answer(mut wire: &[u8]) -> Result<(u16, Vec<u8>), String> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut resp = httparse::Response::new(&mut headers);
        let len = match resp.parse(wire) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Err("incomplete response head".into()),
            Err(e) => return Err(format!("not an HTTP response ({e})")),
        };
        let status = resp.code.unwrap_or(0);
        let rest = &wire[len..];
        if (100..200).contains(&status) && status != 101 {
            wire = rest;
            continue;
        }
        let header = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        let body = if header("transfer-encoding").is_some_and(|v| v.ends_with("chunked")) {
            dechunk(rest)?
        } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
            rest.get(..n).ok_or("the body is shorter than its Content-Length")?.to_vec()
        } else {
            rest.to_vec()
        };
        return Ok((status, body));
    }
}

/// Joins the data of a chunked body (extensions and trailers dropped).
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line has no end")?;
        let line = String::from_utf8_lossy(&data[..eol]);
        let hex = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16).map_err(|_| format!("bad chunk size '{hex}'"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).ok_or("a chunk is cut short")?;
        out.extend_from_slice(chunk);
        data = data.get(size + 2..).ok_or("a chunk is cut short")?;
    }
}

/// One probe's figures over a step.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeReading {
    pub name: String,
    pub spec: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    /// after - before when both are numbers.
    pub delta: Option<f64>,
    /// What failed, prefixed `before:` or `after:`; both joined by "; ".
    pub error: Option<String>,
}

/// Fetches every probe at once (used before a step, and after it): the slowest probe bounds the wait, not the sum.
pub fn probe_all(probes: &[Probe], timeout: Duration) -> Vec<Result<serde_json::Value, String>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = probes.iter().map(|p| scope.spawn(move || p.fetch(timeout))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the probe failed unexpectedly".into()))).collect()
    })
}

/// Pairs the fetches before and after a step into readings, one per probe.
pub fn readings(
    probes: &[Probe],
    before: Vec<Result<serde_json::Value, String>>,
    after: Vec<Result<serde_json::Value, String>>,
) -> Vec<ProbeReading> {
    let mut before = before.into_iter();
    let mut after = after.into_iter();
    let missing = || Err("not fetched".to_string());
    probes
        .iter()
        .map(|p| {
            let b = before.next().unwrap_or_else(missing);
            let a = after.next().unwrap_or_else(missing);
            reading(p, b, a)
        })
        .collect()
}

fn reading(
    p: &Probe,
    before: Result<serde_json::Value, String>,
    after: Result<serde_json::Value, String>,
) -> ProbeReading {
    let mut errors = Vec::new();
    let before = before.map_err(|e| errors.push(format!("before: {e}"))).ok();
    let after = after.map_err(|e| errors.push(format!("after: {e}"))).ok();
    let delta = match (&before, &after) {
        (Some(b), Some(a)) => delta(b, a),
        _ => None,
    };
    ProbeReading {
        name: p.name.clone(),
        spec: p.spec.clone(),
        before,
        after,
        delta,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

/// after - before when both are JSON numbers.
pub fn delta(before: &serde_json::Value, after: &serde_json::Value) -> Option<f64> {
    Some(after.as_f64()? - before.as_f64()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_split_into_url_pointer_and_name() {
        let p = Probe::parse("http://127.0.0.1:10041/d/status#/1/cache_hit_rate").unwrap();
        assert_eq!(p.url.port, 10041);
        assert_eq!(p.url.path_and_query, "/d/status");
        assert_eq!(p.pointer, "/1/cache_hit_rate");
        assert_eq!(p.name, "cache_hit_rate");
        let p = Probe::parse("http://localhost:10042/statistics/cache#/hitRatio").unwrap();
        assert_eq!((p.url.port, p.name.as_str()), (10042, "hitRatio"));
        let p = Probe::parse("http://h/s?x=1#/a~1b/c~0d").unwrap();
        assert_eq!(p.url.path_and_query, "/s?x=1");
        assert_eq!(p.name, "c~d");
        assert_eq!(Probe::parse("http://h/#/").unwrap().name, "value");
    }

    #[test]
    fn bad_specs_name_the_flag_the_value_and_the_fix() {
        for (spec, says) in [
            ("http://h:1/status", "pointer"),
            ("http://h:1/status#", "must start with '/'"),
            ("http://h:1/status#1/x", "must start with '/'"),
            ("ftp://h/status#/1", "scheme 'ftp'"),
            ("h:1/status#/1", "write it like"),
        ] {
            let e = Probe::parse(spec).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(&format!("--probe '{spec}'")), "{text}");
            assert!(text.contains(says), "{text}");
            assert!(!text.contains('\n'));
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        }
    }

    #[test]
    fn names_are_made_unique_in_order() {
        let mut ps: Vec<Probe> = ["http://a/#/x", "http://b/#/x", "http://c/#/y", "http://d/#/x"]
            .iter()
            .map(|s| Probe::parse(s).unwrap())
            .collect();
        unique_names(&mut ps);
        let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["x", "x_2", "y", "x_3"]);
    }

    #[test]
    fn pointers_apply_to_groonga_and_droonga_shapes() {
        let groonga = json!([[0, 1.5, 0.1], {"n_queries": 7, "cache_hit_rate": 0.49}]);
        assert_eq!(apply_pointer(&groonga, "/1/cache_hit_rate").unwrap(), json!(0.49));
        assert_eq!(apply_pointer(&groonga, "/0/0").unwrap(), json!(0));
        let droonga = json!({"hitRatio": 49.8, "nGets": 10});
        assert_eq!(apply_pointer(&droonga, "/hitRatio").unwrap(), json!(49.8));
        let e = apply_pointer(&droonga, "/1/cache_hit_rate").unwrap_err();
        assert!(e.contains("'/1/cache_hit_rate'") && e.contains("hitRatio"), "{e}");
        assert!(apply_pointer(&groonga, "/5").unwrap_err().contains("array of 2"));
    }

    #[test]
    fn deltas_only_between_numbers() {
        assert_eq!(delta(&json!(10), &json!(13)), Some(3.0));
        assert_eq!(delta(&json!(0.25), &json!(0.5)), Some(0.25));
        assert_eq!(delta(&json!("a"), &json!(1)), None);
        let p = Probe::parse("http://h/#/n").unwrap();
        let r = readings(std::slice::from_ref(&p), vec![Ok(json!(4))], vec![Ok(json!(9))]);
        assert_eq!(r[0].delta, Some(5.0));
        assert_eq!(r[0].error, None);
        let r = readings(std::slice::from_ref(&p), vec![Err("refused".into())], vec![Ok(json!(9))]);
        assert_eq!(r[0].before, None);
        assert_eq!(r[0].after, Some(json!(9)));
        assert_eq!(r[0].delta, None);
        assert_eq!(r[0].error.as_deref(), Some("before: refused"));
        let r = readings(&[p], vec![], vec![Err("x".into())]);
        assert_eq!(r[0].error.as_deref(), Some("before: not fetched; after: x"));
    }

    #[test]
    fn answers_split_by_length_chunks_or_close() {
        let (s, b) = split_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n[1]\n").unwrap();
        assert_eq!((s, b.as_slice()), (200, &b"[1]\n"[..]));
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nT: 1\r\n\r\n";
        let (s, b) = split_answer(wire).unwrap();
        assert_eq!((s, b.as_slice()), (200, &b"{\"a\":1}"[..]));
        let (s, b) = split_answer(b"HTTP/1.0 503 Busy\r\n\r\noops").unwrap();
        assert_eq!((s, b.as_slice()), (503, &b"oops"[..]));
        assert!(dechunk(b"zz\r\n").is_err());
        assert!(dechunk(b"5\r\nab").is_err());
    }

    #[test]
    fn https_probes_say_they_are_not_supported() {
        let p = Probe::parse("https://127.0.0.1:1/status#/1").unwrap();
        let e = p.fetch(Duration::from_millis(100)).unwrap_err();
        assert!(e.contains("https") && e.contains("not supported"), "{e}");
    }
}
