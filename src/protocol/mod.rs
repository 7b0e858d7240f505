//! The protocol seam: what the engine needs from a wire protocol. One module per protocol.
//!
//! The engine writes prepared request bytes and feeds whatever it reads to a [`ResponseDecoder`] until the
//! decoder says the answer is complete. Framing is the protocol's business; timing and counting are the engine's.

mod framing;
pub mod http;
pub mod memcache;
pub mod resp;

use std::sync::Arc;

/// The wire protocols the engine speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Http,
    /// Redis's RESP2.
    Resp,
    /// memcached's text protocol.
    Memcache,
}

impl Protocol {
    /// How its URLs start: `http` (or https), `redis`, `memcache`.
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Resp => "redis",
            Protocol::Memcache => "memcache",
        }
    }

    /// The name the result document records.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Resp => "redis",
            Protocol::Memcache => "memcached",
        }
    }
}

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
            Protocol::Http => AnyDecoder::Http(http::HttpDecoder::new(max_line)),
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
            AnyDecoder::Http(_) => {
                Some(match ::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
                    Some(reason) => format!("{status} {reason}"),
                    None => format!("status {status}"),
                })
            }
        }
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
    /// The exact bytes sent on the wire.
    pub bytes: Arc<[u8]>,
    /// The answer has no body whatever its headers say (an HTTP HEAD request).
    pub expects_no_body: bool,
    /// Sending it twice does no harm (GET, HEAD, PUT, DELETE, OPTIONS, TRACE), so it may be retried on a new
    /// connection when a reused one turns out closed; a POST is never sent twice.
    pub idempotent: bool,
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
