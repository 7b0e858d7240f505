//! The protocol seam: what the engine needs from a wire protocol. One module per protocol.
//!
//! The engine writes prepared request bytes and feeds whatever it reads to a [`ResponseDecoder`] until the
//! decoder says the answer is complete. Framing is the protocol's business; timing and counting are the engine's.

pub mod events;
mod framing;
pub mod grpc;
pub mod h2;
pub mod h3;
pub mod h3_frames;
pub mod http;
pub mod memcache;
pub mod resp;
pub mod ws;

pub use framing::printable_text;

use std::sync::Arc;

/// The wire protocols the engine speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Http,
    /// HTTP/2 (`--http2`): prior knowledge on http://, ALPN h2 on https://.
    Http2,
    /// HTTP/3 (`--http3`): QUIC with TLS 1.3 and ALPN h3, https:// only (engine/h3.rs).
    Http3,
    /// Redis's RESP2.
    Resp,
    /// memcached's text protocol.
    Memcache,
    /// gRPC unary calls (grpc://): HTTP/2 requests whose answers are judged by their grpc-status.
    Grpc,
    /// WebSocket (ws://, wss://): a request is a message sent, its answer the next message received.
    WebSocket,
}

impl Protocol {
    /// How its URLs start: `http` (or https), `redis`, `memcache`.
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::Http | Protocol::Http2 | Protocol::Http3 => "http",
            Protocol::Resp => "redis",
            Protocol::Memcache => "memcache",
            Protocol::Grpc => "grpc",
            Protocol::WebSocket => "ws",
        }
    }

    /// Spoken on the engine's HTTP/2 connections (engine/h2/).
    pub fn over_http2(self) -> bool {
        matches!(self, Protocol::Http2 | Protocol::Grpc)
    }

    /// The name the result document records.
    pub fn name(self) -> &'static str {
        match self {
            // The same requests and statuses: settings.http_version tells the versions apart.
            Protocol::Http | Protocol::Http2 | Protocol::Http3 => "http",
            Protocol::Resp => "redis",
            Protocol::Memcache => "memcached",
            Protocol::Grpc => "grpc",
            Protocol::WebSocket => "websocket",
        }
    }
}

/// The longest key the slowest list shows; a longer one is cut, with `...`.
const SHOWN_KEY: usize = 100;

/// A key-value request's command and key, as the slowest list names it (`GET`, `hakaru:000123`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandKey {
    /// The command as sent (`GET`, `HGETALL`, memcached's `get`).
    pub command: String,
    /// Its key (most commands' first argument), printable and at most [`SHOWN_KEY`] bytes; none for a command
    /// without one (`PING`, `SCAN`'s cursor) and for `AUTH`, whose argument is a password.
    pub key: Option<String>,
}

impl Protocol {
    /// The command and key of one encoded key-value request (the bytes of one op); None for HTTP, whose requests
    /// the plan names already. Read only when a request enters the slowest list, so the hot path never parses.
    pub fn command_and_key(self, request: &[u8]) -> Option<CommandKey> {
        let (command, key) = match self {
            Protocol::Http | Protocol::Http2 | Protocol::Http3 | Protocol::Grpc | Protocol::WebSocket => return None,
            Protocol::Resp => resp::command_and_key(request)?,
            Protocol::Memcache => memcache::command_and_key(request)?,
        };
        let keyed = !NO_KEY.iter().any(|c| command.eq_ignore_ascii_case(c.as_bytes()));
        Some(CommandKey {
            command: framing::printable(command, SHOWN_KEY),
            key: key.filter(|_| keyed).map(|k| crate::base::secrets::scrub_text(&framing::printable(k, SHOWN_KEY))),
        })
    }
}

/// Commands whose first argument is no key: a password (`AUTH`, `HELLO 3 AUTH ...`: never shown), a cursor, a
/// pattern, a subcommand, a number.
const NO_KEY: [&str; 17] = [
    "auth",
    "hello",
    "ping",
    "echo",
    "select",
    "scan",
    "keys",
    "info",
    "config",
    "client",
    "script",
    "function",
    "flushdb",
    "flushall",
    "flush_all",
    "stats",
    "verbosity",
];

/// The decoder of one of the protocols: an enum rather than a trait object, so the engine's hot path makes a
/// direct call.
#[derive(Debug)]
pub enum AnyDecoder {
    Http(http::HttpDecoder),
    Resp(resp::RespDecoder),
    Memcache(memcache::MemcacheDecoder),
}

/// The longest header or line a decoder takes by default (`--max-line`): an HTTP response head, a chunk-size line, a
/// RESP or memcached reply line. A server that sends more without ending it is answering with something else.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024;

impl AnyDecoder {
    /// A decoder of `protocol` whose heads and lines may be at most `max_line` bytes.
    pub fn new(protocol: Protocol, max_line: usize) -> Self {
        match protocol {
            // HTTP/2's answers are read by the engine's connection task (engine/h2/); the HTTP decoder only words
            // an error status for the sample.
            // (A WebSocket client reads its frames itself, engine/ws.rs: this decoder is never fed.)
            Protocol::Http | Protocol::Http2 | Protocol::Http3 | Protocol::Grpc | Protocol::WebSocket => {
                AnyDecoder::Http(http::HttpDecoder::new(max_line))
            }
            Protocol::Resp => AnyDecoder::Resp(resp::RespDecoder::new(max_line)),
            Protocol::Memcache => AnyDecoder::Memcache(memcache::MemcacheDecoder::new(max_line)),
        }
    }

    /// The last answer's text as an error reply, given its `status`: a Redis error (`NOAUTH ...`), memcached's
    /// `SERVER_ERROR ...`; for HTTP, whose failures are statuses, the status and its reason (`503 Service
    /// Unavailable`). `None` when a key-value reply was no error.
    pub fn error_text(&self, status: u16) -> Option<String> {
        match self {
            AnyDecoder::Resp(d) => d.error().map(String::from),
            AnyDecoder::Memcache(d) => d.error().map(String::from),
            AnyDecoder::Http(_) => Some(status_text(status)),
        }
    }
}

/// An HTTP status with its reason (`503 Service Unavailable`): the text kept of a failed HTTP answer, whose body
/// is not kept (HTTP/2's answers, read by their connection's task, have no decoder of their own).
pub fn status_text(status: u16) -> String {
    match ::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => format!("status {status}"),
    }
}

impl ResponseDecoder for AnyDecoder {
    fn start(&mut self, expects_no_body: bool) {
        match self {
            AnyDecoder::Http(d) => d.start(expects_no_body),
            AnyDecoder::Resp(d) => d.start(expects_no_body),
            AnyDecoder::Memcache(d) => d.start(expects_no_body),
        }
    }

    fn feed(&mut self, data: &[u8]) -> Result<Option<Answer>, DecodeError> {
        match self {
            AnyDecoder::Http(d) => d.feed(data),
            AnyDecoder::Resp(d) => d.feed(data),
            AnyDecoder::Memcache(d) => d.feed(data),
        }
    }

    fn stray(&self) -> Option<&str> {
        match self {
            AnyDecoder::Http(d) => d.stray(),
            AnyDecoder::Resp(d) => d.stray(),
            AnyDecoder::Memcache(d) => d.stray(),
        }
    }

    fn eof(&mut self) -> Result<Answer, DecodeError> {
        match self {
            AnyDecoder::Http(d) => d.eof(),
            AnyDecoder::Resp(d) => d.eof(),
            AnyDecoder::Memcache(d) => d.eof(),
        }
    }

    fn nothing_received(&self) -> bool {
        match self {
            AnyDecoder::Http(d) => d.nothing_received(),
            AnyDecoder::Resp(d) => d.nothing_received(),
            AnyDecoder::Memcache(d) => d.nothing_received(),
        }
    }

    fn unread(&self) -> usize {
        match self {
            AnyDecoder::Http(d) => d.unread(),
            AnyDecoder::Resp(d) => d.unread(),
            AnyDecoder::Memcache(d) => d.unread(),
        }
    }
}

impl AnyDecoder {
    /// Keep reply data for [`value`](Self::value) (key-value protocols; HTTP bodies are never kept).
    pub fn keep_values(&mut self, keep: bool) {
        match self {
            AnyDecoder::Http(_) => {}
            AnyDecoder::Resp(d) => d.keep_values(keep),
            AnyDecoder::Memcache(d) => d.keep_values(keep),
        }
    }

    /// Keep each HTTP answer's headers and body (a script's `response()` reads them).
    pub fn keep_message(&mut self, keep: bool) {
        if let AnyDecoder::Http(d) = self {
            d.keep_message(keep);
        }
    }

    /// The last HTTP answer's headers and body, when kept.
    pub fn kept(&self) -> Option<&http::Kept> {
        match self {
            AnyDecoder::Http(d) => d.kept(),
            _ => None,
        }
    }

    /// The last reply's data, when values are kept.
    pub fn value(&self) -> &[u8] {
        match self {
            AnyDecoder::Http(_) => &[],
            AnyDecoder::Resp(d) => d.value(),
            AnyDecoder::Memcache(d) => d.value(),
        }
    }

    /// Where each element of the kept value ends (RESP arrays; one element otherwise).
    pub fn ends(&self) -> &[usize] {
        match self {
            AnyDecoder::Resp(d) => d.ends(),
            _ => &[],
        }
    }

    /// The last reply's cas token (memcached `gets`), when values are kept.
    pub fn cas(&self) -> Option<u64> {
        match self {
            AnyDecoder::Memcache(d) => d.cas(),
            _ => None,
        }
    }
}

/// Commands sent on every new connection before its first request, each answered by one reply (Redis's AUTH and
/// SELECT hold per connection, so a reconnect repeats them).
#[derive(Clone, Debug)]
pub struct Greeting {
    /// The commands, sent one at a time, each waiting for its reply.
    pub commands: Vec<Arc<[u8]>>,
    /// What they are, for messages: `AUTH and SELECT`.
    pub what: String,
    /// Text that must never appear in a message (the password), even when a server echoes it back.
    pub secrets: Vec<String>,
}

impl Greeting {
    /// `text` with every secret replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        // Whole, and cut: Redis quotes at most 128 bytes of an argument in its errors, so a longer password comes
        // back as its first 128 (or 64) bytes, which are hidden too.
        self.secrets.iter().fold(text.to_string(), |t, s| {
            let mut t = t.replace(s.as_str(), "***");
            for cut in [128, 64] {
                if s.len() > cut && s.is_char_boundary(cut) {
                    t = t.replace(&s[..cut], "***");
                }
            }
            t
        })
    }
}

/// A request ready to be written: its bytes are built once, before the run, and shared by every thread.
#[derive(Clone, Debug)]
pub struct PreparedRequest {
    /// The exact bytes sent on the wire (a slice of a block shared with other requests: see [`RequestArena`]).
    pub bytes: bytes::Bytes,
    /// The answer has no body whatever its headers say (an HTTP HEAD request).
    pub expects_no_body: bool,
    /// Sending it twice does no harm (GET, HEAD, PUT, DELETE, OPTIONS, TRACE), so it may be retried on a new
    /// connection when a reused one turns out closed; a POST is never sent twice.
    pub idempotent: bool,
}

impl PreparedRequest {
    pub fn new(bytes: bytes::Bytes, method: &str) -> PreparedRequest {
        let idempotent = matches!(method, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE");
        PreparedRequest { bytes, expects_no_body: method == "HEAD", idempotent }
    }
}

/// Requests' bytes written side by side into shared blocks: a pattern file's 400,000 requests cost their bytes
/// and no allocation each (an `Arc<[u8]>` apiece added about 40 bytes to every one).
#[derive(Default)]
pub struct RequestArena {
    block: bytes::BytesMut,
    scratch: Vec<u8>,
}

impl RequestArena {
    const BLOCK: usize = 64 << 10;

    /// The request `write` appends to an empty buffer, as sent by `method`.
    pub fn prepare(&mut self, method: &str, write: impl FnOnce(&mut Vec<u8>)) -> PreparedRequest {
        self.scratch.clear();
        write(&mut self.scratch);
        if self.block.capacity() < self.scratch.len() {
            // A new block; the old one lives as long as the requests cut from it.
            self.block = bytes::BytesMut::with_capacity(Self::BLOCK.max(self.scratch.len()));
        }
        self.block.extend_from_slice(&self.scratch);
        PreparedRequest::new(self.block.split().freeze(), method)
    }
}

/// A complete answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The protocol's status (the HTTP status code).
    pub status: u16,
    /// The connection may carry the next request.
    pub keep_alive: bool,
}

/// Why bytes could not be decoded as an answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not a valid answer.
    #[error("{0}")]
    Malformed(String),
    /// The peer closed the connection before the answer was complete.
    #[error("{0}")]
    Truncated(String),
    /// A header or line went on past the decoder's bound (`--max-line`) without ending.
    #[error("{0}")]
    LineTooLong(String),
    /// `--events`: the stream ended before its end (the connection closed inside it, or its end text never came).
    #[error("{0}")]
    StreamCut(String),
    /// `--events`: an answer went past its bound of events or bytes.
    #[error("{0}")]
    StreamTooLong(String),
}

/// Feeds `wire` to a fresh decoder whole, then split in two at every point, then byte by byte: the same answer
/// each time, as a decoder is fed whatever each read returns. `head`: the request was a HEAD.
#[cfg(test)]
pub(crate) fn decode_every_split<D: ResponseDecoder + Default>(wire: &[u8], head: bool) -> Result<Answer, DecodeError> {
    let fresh = || {
        let mut d = D::default();
        d.start(head);
        d
    };
    let whole = fresh().feed(wire)?.ok_or_else(|| DecodeError::Malformed("incomplete in one read".into()))?;
    for cut in 1..wire.len() {
        let mut d = fresh();
        assert_eq!(d.feed(&wire[..cut]).unwrap(), None, "complete early at {cut}");
        assert_eq!(d.feed(&wire[cut..]).unwrap(), Some(whole), "split at {cut}");
    }
    let mut d = fresh();
    let mut last = None;
    for b in wire {
        last = d.feed(std::slice::from_ref(b)).unwrap();
    }
    assert_eq!(last, Some(whole), "byte by byte");
    Ok(whole)
}

/// Decodes one answer at a time from a byte stream; reused for every request on a connection.
pub trait ResponseDecoder {
    /// Prepares for the next answer. `expects_no_body`: the request was one whose answer has no body whatever its
    /// headers say (an HTTP HEAD); the key-value protocols have no such request.
    fn start(&mut self, expects_no_body: bool);
    /// Consumes bytes; `Ok(Some(answer))` once the answer is complete. Bytes past the answer belong to no
    /// request unless requests are pipelined (see [`unread`](Self::unread)): they do not spoil the answer, [`stray`](Self::stray) reports them.
    fn feed(&mut self, data: &[u8]) -> Result<Option<Answer>, DecodeError>;
    /// What followed the complete answer in the same read, described for an error sample; None when nothing did.
    /// The connection must not carry another request: those bytes would be taken for its answer.
    fn stray(&self) -> Option<&str>;
    /// The peer closed the connection: completes an answer delimited by the close, or says what is missing.
    fn eof(&mut self) -> Result<Answer, DecodeError>;
    /// No byte of the current answer has arrived yet (a close now means a stale keep-alive connection).
    fn nothing_received(&self) -> bool;
    /// How many bytes at the end of the last [`feed`](Self::feed) that completed an answer were not part of it:
    /// with pipelined requests they start the next answer.
    fn unread(&self) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command and key as the slowest list shows them.
    fn named(protocol: Protocol, request: &[u8]) -> Option<(String, Option<String>)> {
        protocol.command_and_key(request).map(|c| (c.command, c.key))
    }

    fn some(command: &str, key: Option<&str>) -> Option<(String, Option<String>)> {
        Some((command.into(), key.map(String::from)))
    }

    #[test]
    fn a_redis_command_is_named_by_its_command_and_first_argument() {
        let set = resp::encode(&[b"SET", b"hakaru:000123", b"a value never shown"]);
        assert_eq!(named(Protocol::Resp, &set), some("SET", Some("hakaru:000123")));
        assert_eq!(named(Protocol::Resp, &resp::encode(&[b"GET", b"k"])), some("GET", Some("k")));
        assert_eq!(named(Protocol::Resp, &resp::encode(&[b"PING"])), some("PING", None));
        // A cursor is no key.
        assert_eq!(named(Protocol::Resp, &resp::encode(&[b"SCAN", b"0", b"MATCH", b"p*"])), some("SCAN", None));
        // A script's key is its first key, not the script.
        let eval = resp::encode(&[b"EVAL", b"return redis.call('GET', KEYS[1])", b"1", b"user42", b"x"]);
        assert_eq!(named(Protocol::Resp, &eval), some("EVAL", Some("user42")));
        let keyless = resp::encode(&[b"EVALSHA", b"0123abcd", b"0", b"arg"]);
        assert_eq!(named(Protocol::Resp, &keyless), some("EVALSHA", None));
        // Only the bytes of one command are read: a pipelined batch's next command does not matter.
        let two = [resp::encode(&[b"GET", b"a"]), resp::encode(&[b"SET", b"b", b"v"])].concat();
        assert_eq!(named(Protocol::Resp, &two), some("GET", Some("a")));
        // Bytes that are no command give nothing rather than a wrong name.
        assert_eq!(named(Protocol::Resp, b"GET k\r\n"), None);
        assert_eq!(named(Protocol::Resp, b"*2\r\n$3\r\nGET\r\n$9\r\nshort\r\n"), None);
    }

    #[test]
    fn a_memcached_command_is_named_by_its_first_two_words_never_its_data() {
        let set = memcache::encode_set(b"hakaru:7", b"data data");
        assert_eq!(named(Protocol::Memcache, &set), some("set", Some("hakaru:7")));
        assert_eq!(named(Protocol::Memcache, &memcache::encode_get(b"k")), some("get", Some("k")));
        assert_eq!(named(Protocol::Memcache, b"version\r\n"), some("version", None));
        assert_eq!(named(Protocol::Memcache, b"flush_all 10\r\n"), some("flush_all", None));
        // gat's first argument is the expiry time, its key the second.
        assert_eq!(named(Protocol::Memcache, b"gat 60 k1 k2\r\n"), some("gat", Some("k1")));
        assert_eq!(named(Protocol::Memcache, b"no line end"), None);
    }

    #[test]
    fn an_auth_password_is_never_shown_and_a_key_is_printable_and_bounded() {
        let auth = resp::encode(&[b"AUTH", b"hunter2"]);
        assert_eq!(named(Protocol::Resp, &auth), some("AUTH", None));
        let auth = resp::encode(&[b"auth", b"user", b"hunter2"]);
        assert_eq!(named(Protocol::Resp, &auth), some("auth", None));
        let long = vec![b'k'; 300];
        let shown = named(Protocol::Resp, &resp::encode(&[b"GET", &long])).unwrap().1.unwrap();
        assert_eq!(shown, format!("{}...", "k".repeat(SHOWN_KEY)));
        let binary = named(Protocol::Resp, &resp::encode(&[b"GET", b"a\nb\xff"])).unwrap().1.unwrap();
        assert_eq!(binary, "a\\nb\u{fffd}");
        // A key that looks like a URL with a password is scrubbed as any text hakaru prints.
        let url = named(Protocol::Resp, &resp::encode(&[b"GET", b"redis://u:pw@h/"])).unwrap().1.unwrap();
        assert!(!url.contains("pw"), "{url}");
        assert_eq!(named(Protocol::Http, b"GET / HTTP/1.1\r\n\r\n"), None);
    }
}
