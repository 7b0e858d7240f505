//! Reads a request head into a `Plan` of how to answer it, and skips request bodies of either framing.

use std::time::Duration;

use crate::base::units::{parse_duration, parse_size};

/// Heads larger than this are refused: a target that buffers without bound is a target one client can sink.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Default,
    Cache,
    Status,
    /// `/v1/chat/completions` or `/v1/completions`: the body is read and shapes a token stream (`openai.rs`).
    Llm(super::openai::Endpoint),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Reset,
    Close,
    Stall,
    Garbage,
    SlowBody,
}

/// Everything the answer depends on, owned, so the input buffer can be refilled while the answer is made.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub route: Route,
    pub head_only: bool,
    pub keep_alive: bool,
    /// An HTTP/1.0 client only keeps the connection if the answer says `Connection: keep-alive`.
    pub http10: bool,
    pub expect_continue: bool,
    pub delay: Option<Duration>,
    pub jitter: Duration,
    /// `?freeze=1s`: the whole server answers nothing (this request included) for that long.
    pub freeze: Option<Duration>,
    pub size: Option<u64>,
    pub status: u16,
    pub fault: Option<Fault>,
    /// A bad query value: answered with 400 and this line.
    pub error: Option<String>,
    /// `?events=N`: a streamed answer (see `stream.rs`).
    pub stream: Option<Box<super::stream::StreamPlan>>,
}

pub enum Head {
    Complete {
        len: usize,
        plan: Plan,
        body: Body,
    },
    Partial,
    /// Not HTTP we can frame: answer with this status and close.
    Invalid(u16),
}

/// Parses one request head from the start of `buf`; the `/cache` key goes to `key` (reused, so no allocation).
pub fn parse_head(buf: &[u8], key: &mut String) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Head::Invalid(431),
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(httparse::Error::TooManyHeaders) => return Head::Invalid(431),
        Err(_) => return Head::Invalid(400),
    };
    let http10 = req.version == Some(0);
    let (mut close, mut keep) = (false, false);
    let (mut length, mut chunked, mut other_coding) = (None::<u64>, false, false);
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("connection") {
            for token in tokens(h.value) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = parse_decimal(h.value) else {
                return Head::Invalid(400);
            };
            // Two different lengths is the classic request-smuggling shape: refuse it.
            if length.is_some_and(|l| l != n) {
                return Head::Invalid(400);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Only the last coding frames the body; it must be chunked or the length is unknowable.
            for token in tokens(h.value) {
                chunked = token.eq_ignore_ascii_case(b"chunked");
                other_coding = !chunked;
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body = match (chunked, other_coding, length) {
        (_, true, _) => return Head::Invalid(400),
        (true, _, _) => Body::Chunked(Chunked::default()),
        (false, _, Some(n)) if n > 0 => Body::Length(n),
        _ => Body::None,
    };
    let mut plan = Plan {
        route: Route::Default,
        head_only: req.method == Some("HEAD"),
        keep_alive: if http10 { keep && !close } else { !close },
        http10,
        expect_continue,
        delay: None,
        freeze: None,
        jitter: Duration::ZERO,
        size: None,
        status: 200,
        fault: None,
        error: None,
        stream: None,
    };
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    plan.route = match origin_path(path) {
        "/cache" => Route::Cache,
        "/status" => Route::Status,
        other => super::openai::endpoint(other).map_or(Route::Default, Route::Llm),
    };
    if let Route::Llm(endpoint) = plan.route {
        plan.stream = Some(Box::new(super::openai::default_plan(endpoint)));
        plan.error = match body {
            Body::Length(n) if n > super::openai::MOST_BODY => {
                Some(format!("the body is {n} bytes: at most {} are read", super::openai::MOST_BODY))
            }
            Body::Length(_) => None,
            _ => Some("send the JSON body with a Content-Length".into()),
        };
    }
    let has_key = apply_query(&mut plan, query, key);
    if plan.stream.as_ref().is_some_and(|s| !s.asked) {
        plan.stream = None;
    }
    if plan.route == Route::Cache && !has_key && plan.error.is_none() {
        plan.error = Some("missing key: use /cache?key=NAME".into());
    }
    Head::Complete { len, plan, body }
}

/// A proxy-style absolute target (`http://host/path`) names the same path as its origin form.
fn origin_path(path: &str) -> &str {
    match path.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => path,
    }
}

/// Applies the query parameters; unknown ones are ignored so clients can add cache-busters. Returns whether `key` was set.
fn apply_query(plan: &mut Plan, query: &str, key: &mut String) -> bool {
    let mut has_key = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let result = match name {
            "delay" => parse_duration(value).map(|d| plan.delay = Some(d)),
            "jitter" => parse_duration(value).map(|d| plan.jitter = d),
            "freeze" => parse_duration(value).map(|d| plan.freeze = Some(d)),
            "size" => parse_size(value).map(|s| plan.size = Some(s)),
            // 1xx would be taken for an interim answer and leave the client waiting.
            "status" => match value.parse::<u16>() {
                Ok(code @ 200..=599) => {
                    plan.status = code;
                    Ok(())
                }
                _ => Err("use a code from 200 to 599".to_string()),
            },
            "fault" => parse_fault(value).map(|f| plan.fault = Some(f)),
            "key" => {
                key.clear();
                key.push_str(value);
                has_key = true;
                Ok(())
            }
            _ => super::stream::apply(&mut plan.stream, name, value).unwrap_or(Ok(())),
        };
        if let Err(why) = result {
            let shown: String = value.chars().take(64).collect();
            plan.error = Some(format!("bad {name} '{shown}': {why}"));
            break;
        }
    }
    has_key
}

fn parse_fault(value: &str) -> Result<Fault, String> {
    Ok(match value {
        "reset" => Fault::Reset,
        "close" => Fault::Close,
        "stall" => Fault::Stall,
        "garbage" => Fault::Garbage,
        "slow-body" => Fault::SlowBody,
        _ => return Err("use reset, close, stall, garbage or slow-body".into()),
    })
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii).filter(|t| !t.is_empty())
}

fn parse_decimal(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The request body still to be skipped.
pub enum Body {
    None,
    Length(u64),
    Chunked(Chunked),
}

impl Body {
    pub fn done(&self) -> bool {
        match self {
            Body::None => true,
            Body::Length(n) => *n == 0,
            Body::Chunked(c) => c.state == ChunkState::Done,
        }
    }

    /// Consumes what it can of `buf` and says how much; `Err` means the chunked framing is broken.
    pub fn skip(&mut self, buf: &[u8]) -> Result<usize, ()> {
        match self {
            Body::None => Ok(0),
            Body::Length(n) => {
                let take = (*n).min(buf.len() as u64);
                *n -= take;
                Ok(take as usize)
            }
            Body::Chunked(c) => c.skip(buf),
        }
    }
}

/// An incremental chunked-body skipper: the body may arrive in any number of reads.
#[derive(Default)]
pub struct Chunked {
    state: ChunkState,
}

#[derive(Debug, PartialEq, Eq)]
enum ChunkState {
    Size { value: u64, digits: u8, in_ext: bool },
    Data(u64),
    DataEnd,
    Trailer { line_empty: bool },
    Done,
}

impl Default for ChunkState {
    fn default() -> Self {
        ChunkState::Size { value: 0, digits: 0, in_ext: false }
    }
}

impl Chunked {
    fn skip(&mut self, buf: &[u8]) -> Result<usize, ()> {
        let mut i = 0;
        while i < buf.len() {
            if let ChunkState::Data(rem) = &mut self.state {
                let take = (*rem).min((buf.len() - i) as u64);
                i += take as usize;
                *rem -= take;
                if *rem == 0 {
                    self.state = ChunkState::DataEnd;
                }
                continue;
            }
            let b = buf[i];
            i += 1;
            match &mut self.state {
                ChunkState::Size { value, digits, in_ext } => match b {
                    b'\n' if *digits == 0 => return Err(()),
                    b'\n' if *value == 0 => self.state = ChunkState::Trailer { line_empty: true },
                    b'\n' => self.state = ChunkState::Data(*value),
                    b'\r' => {}
                    _ if *in_ext => {}
                    b';' | b' ' | b'\t' => *in_ext = true,
                    _ => {
                        let d = (b as char).to_digit(16).ok_or(())?;
                        // 16 hex digits fill a u64 exactly, so this bound also rules out overflow.
                        if *digits == 16 {
                            return Err(());
                        }
                        *value = *value << 4 | u64::from(d);
                        *digits += 1;
                    }
                },
                ChunkState::DataEnd => match b {
                    b'\r' => {}
                    b'\n' => self.state = ChunkState::default(),
                    _ => return Err(()),
                },
                ChunkState::Trailer { line_empty } => match b {
                    b'\n' if *line_empty => {
                        self.state = ChunkState::Done;
                        return Ok(i);
                    }
                    b'\n' => *line_empty = true,
                    b'\r' => {}
                    _ => *line_empty = false,
                },
                ChunkState::Data(_) | ChunkState::Done => return Ok(i - 1),
            }
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(head: &str) -> Plan {
        let mut key = String::new();
        match parse_head(head.as_bytes(), &mut key) {
            Head::Complete { plan, .. } => plan,
            Head::Partial => panic!("partial"),
            Head::Invalid(s) => panic!("invalid {s}"),
        }
    }

    fn invalid(head: &str) -> Option<u16> {
        match parse_head(head.as_bytes(), &mut String::new()) {
            Head::Invalid(s) => Some(s),
            _ => None,
        }
    }

    #[test]
    fn a_plain_get_gets_the_default_answer_on_a_kept_connection() {
        let p = plan("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(p.route, Route::Default);
        assert!(p.keep_alive && !p.head_only && !p.http10);
        assert_eq!((p.status, p.size, p.delay, p.fault), (200, None, None, None));
    }

    #[test]
    fn a_stream_is_asked_by_events_and_its_other_parameters_alone_ask_nothing() {
        let p = plan("GET /?events=3&gap=10ms&first=50ms HTTP/1.1\r\nHost: x\r\n\r\n");
        let s = p.stream.expect("a stream");
        assert_eq!((s.events, s.gap, s.first), (3, Duration::from_millis(10), Duration::from_millis(50)));
        assert_eq!(
            plan("GET /?first=1ms&kind=x2 HTTP/1.1\r\nHost: x\r\n\r\n").error.map(|e| e.contains("kind")),
            Some(true)
        );
        assert!(plan("GET /?first=1ms&gap=2ms HTTP/1.1\r\nHost: x\r\n\r\n").stream.is_none());
    }

    #[test]
    fn query_parameters_combine() {
        let p = plan("GET /x?delay=10ms&jitter=2ms&size=20kb&status=503&fault=slow-body&r=1 HTTP/1.1\r\n\r\n");
        assert_eq!(p.delay, Some(Duration::from_millis(10)));
        assert_eq!(p.jitter, Duration::from_millis(2));
        assert_eq!(p.size, Some(20_000));
        assert_eq!(p.status, 503);
        assert_eq!(p.fault, Some(Fault::SlowBody));
        assert!(p.error.is_none());
    }

    #[test]
    fn a_bad_query_value_names_the_parameter() {
        for (q, name) in
            [("delay=10", "delay"), ("size=3parsecs", "size"), ("status=99", "status"), ("fault=boom", "fault")]
        {
            let p = plan(&format!("GET /?{q} HTTP/1.1\r\n\r\n"));
            let e = p.error.unwrap();
            assert!(e.starts_with(&format!("bad {name} ")), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn the_cache_route_needs_a_key_and_stores_it() {
        let mut key = String::new();
        let Head::Complete { plan: p, .. } = parse_head(b"GET /cache?key=abc HTTP/1.1\r\n\r\n", &mut key) else {
            panic!()
        };
        assert_eq!((p.route, key.as_str()), (Route::Cache, "abc"));
        assert!(plan("GET /cache HTTP/1.1\r\n\r\n").error.unwrap().contains("key"));
        assert_eq!(plan("GET http://h:1/status HTTP/1.1\r\n\r\n").route, Route::Status);
    }

    #[test]
    fn connection_headers_decide_keep_alive_by_version() {
        assert!(!plan("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").keep_alive);
        assert!(!plan("GET / HTTP/1.0\r\n\r\n").keep_alive);
        let p = plan("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert!(p.keep_alive && p.http10);
        assert!(plan("HEAD / HTTP/1.1\r\n\r\n").head_only);
    }

    #[test]
    fn incomplete_heads_wait_and_broken_ones_are_refused() {
        assert!(matches!(parse_head(b"GET / HTTP/1.1\r\nHost:", &mut String::new()), Head::Partial));
        assert_eq!(invalid("\x01\x02 nonsense\r\n\r\n"), Some(400));
        assert_eq!(invalid("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), Some(400));
        assert_eq!(invalid("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), Some(400));
        assert_eq!(invalid("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), Some(400));
        let huge = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(invalid(&huge), Some(431));
    }

    #[test]
    fn a_content_length_body_is_skipped_across_reads() {
        let Head::Complete { mut body, len, .. } =
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", &mut String::new())
        else {
            panic!()
        };
        assert_eq!(body.skip(&b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"[len..]), Ok(2));
        assert!(!body.done());
        assert_eq!(body.skip(b"cdeGET"), Ok(3));
        assert!(body.done());
    }

    #[test]
    fn a_chunked_body_is_skipped_byte_by_byte_or_at_once() {
        let wire = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        let mut c = Chunked::default();
        assert_eq!(c.skip(wire), Ok(wire.len() - 4));
        assert_eq!(c.state, ChunkState::Done);
        let mut c = Chunked::default();
        let mut used = 0;
        for i in 0..wire.len() {
            used += c.skip(&wire[i..i + 1]).unwrap();
        }
        assert_eq!(used, wire.len() - 4);
    }

    #[test]
    fn broken_chunked_framing_is_an_error() {
        assert!(Chunked::default().skip(b"zz\r\n").is_err());
        assert!(Chunked::default().skip(b"\r\n").is_err());
        assert!(Chunked::default().skip(b"11111111111111111\r\n").is_err());
        assert!(Chunked::default().skip(b"1\r\naXX").is_err());
    }
}
