//! An incremental HTTP/1.1 response decoder: the head through httparse, the body framed by hand.
//!
//! Body bytes are counted, never stored: memory per connection stays at the size of a response head, whatever
//! the size of the bodies. Heads are parsed straight from the read buffer and copied only when they span reads.

use crate::protocol::events::EventReader;
use crate::protocol::framing::too_long;
use crate::protocol::{Answer, DEFAULT_MAX_LINE, DecodeError, ResponseDecoder};

const MAX_HEADERS: usize = 100;

/// The most body bytes kept for a script's `response()`; beyond, the rest is counted and dropped.
pub const MOST_KEPT_BODY: usize = 16 << 20;

/// The most bytes read after an answer's end event to reach its body's end (`--events`): a token stream's end
/// after `[DONE]` is the rest of its chunk and the 5-byte last chunk, so 64 KiB is room for any trailer, and a body
/// that goes on past it is not an answer's tail.
pub const MOST_REST: u64 = 64 << 10;

/// After an answer that ended at its end event (`--events`), what is left of its body on the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// Nothing: the answer ended with its body (or no events are read).
    None,
    /// The body's end is still to come (the rest of a chunk, the last chunk, the rest of a Content-Length within
    /// [`MOST_REST`]): read it, and the connection carries the next request.
    ToRead,
    /// The body goes on past the end event (another chunk of data, more than [`MOST_REST`] bytes, or a body that
    /// ends only when the server closes): the connection cannot carry another request.
    PastEnd,
}

/// A response's headers and body, kept only when a script's `response()` reads them.
#[derive(Debug, Default)]
pub struct Kept {
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Kept {
    /// Adds `bytes` to the body kept, up to [`MOST_KEPT_BODY`].
    pub fn body(&mut self, bytes: &[u8]) {
        let room = MOST_KEPT_BODY.saturating_sub(self.body.len());
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Chunk {
    /// Reading the hex size; `len` counts the line's bytes so far (0: no digit yet), so that a size of endless
    /// zeros is bounded.
    Size { value: u64, len: usize },
    /// Skipping a chunk extension up to the end of the line, `len` bytes of the line so far.
    Extension { value: u64, len: usize },
    /// Inside chunk data, with this many bytes left.
    Data(u64),
    /// After chunk data: expecting CRLF.
    DataEnd { seen_cr: bool },
    /// After the last chunk: trailer lines until an empty one (nothing but CR before its LF); `line_len` counts
    /// the current line's bytes, CRs too (an endless run of them is bounded as well), `text` says whether any
    /// was not a CR.
    Trailer { line_len: usize, text: bool },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// Decodes one response after another on one connection.
#[derive(Debug)]
pub struct HttpDecoder {
    /// Head bytes kept when the head spans reads; empty otherwise.
    head: Vec<u8>,
    /// The longest head, chunk-size line or trailer line taken (`--max-line`): more is an error rather than a
    /// reason to grow or to read on without end.
    max_line: usize,
    state: State,
    expects_no_body: bool,
    status: u16,
    keep_alive: bool,
    received: bool,
    /// Bytes that followed the complete answer, quoted.
    stray: Option<String>,
    /// Bytes after the complete answer in the last feed (with pipelined requests, the next answer's start).
    unread: usize,
    /// The answer's headers and body, when asked for (see [`HttpDecoder::keep_message`]).
    kept: Option<Box<Kept>>,
    /// `--events`: the reader of each answer's events, fed the body as it comes.
    events: Option<Box<EventReader>>,
    /// The answer ended at its end event before its body's end: what is left of the body.
    rest: Rest,
    /// Bytes of the body still allowed after the end event, while [`Rest::ToRead`].
    rest_budget: u64,
}

impl Default for HttpDecoder {
    fn default() -> Self {
        Self {
            head: Vec::new(),
            max_line: DEFAULT_MAX_LINE,
            state: State::Done,
            expects_no_body: false,
            status: 0,
            keep_alive: true,
            received: false,
            stray: None,
            unread: 0,
            kept: None,
            events: None,
            rest: Rest::None,
            rest_budget: 0,
        }
    }
}

impl HttpDecoder {
    /// A decoder whose heads and chunk lines may be at most `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self { max_line, ..Self::default() }
    }

    /// Keep each answer's headers and body (a script's `response()` reads them); off, bodies are only counted.
    pub fn keep_message(&mut self, keep: bool) {
        self.kept = keep.then(Box::default);
    }

    /// Read each answer's body for events (`--events`).
    pub fn read_events(&mut self, reader: EventReader) {
        self.events = Some(Box::new(reader));
    }

    /// The last answer ended at its end event before its body's end: whether the rest is still to read (the
    /// connection then carries the next request once it is), or goes on past the end (the connection is given up).
    pub fn rest(&self) -> Rest {
        self.rest
    }

    /// The events reader while the answer's events are read; none while the rest after its end event is read.
    fn live_events(&mut self) -> Option<&mut EventReader> {
        match self.rest {
            Rest::None => self.events.as_deref_mut(),
            _ => None,
        }
    }

    /// The events reader, when the run reads events.
    pub fn events_mut(&mut self) -> Option<&mut EventReader> {
        self.events.as_deref_mut()
    }

    /// The last answer's headers and body, when kept.
    pub fn kept(&self) -> Option<&Kept> {
        self.kept.as_deref()
    }

    fn answer(&self) -> Answer {
        Answer { status: self.status, keep_alive: self.keep_alive }
    }

    /// Parses a complete head at the start of `buf`: Ok(Some(head length)), Ok(None) when more bytes are needed.
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let len = match resp.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(malformed(buf, &format!("not an HTTP response ({e})"))),
        };
        let status = resp.code.unwrap_or(0);
        let http11 = resp.version == Some(1);
        let (mut length, mut chunked, mut close, mut keep) = (None::<u64>, false, false, false);
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value).ok().and_then(|s| s.trim().parse::<u64>().ok());
                match (v, length) {
                    (None, _) => return Err(malformed(buf, "Content-Length is not a number")),
                    (Some(a), Some(b)) if a != b => {
                        return Err(malformed(buf, "two different Content-Length values"));
                    }
                    (Some(a), _) => length = Some(a),
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|b| *b == b',') {
                    let token = token.trim_ascii();
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        if status == 101 {
            // The server left HTTP for another protocol on this connection; hakaru cannot measure what follows,
            // and the next request must not be written into that protocol.
            return Err(malformed(buf, "101 Switching Protocols: protocol upgrades are not supported"));
        }
        if let Some(k) = self.kept.as_deref_mut() {
            k.headers.clear();
            k.body.clear();
            k.headers.extend(resp.headers.iter().map(|h| (h.name.to_string(), h.value.to_vec())));
        }
        self.status = status;
        self.keep_alive = !close && (http11 || keep);
        self.state = if (100..200).contains(&status) {
            // An interim answer (100 Continue, 103 Early Hints): the real one follows.
            State::Head
        } else if self.expects_no_body || status == 204 || status == 304 {
            State::Done
        } else if chunked {
            State::Chunked(Chunk::Size { value: 0, len: 0 })
        } else if let Some(n) = length {
            if n == 0 { State::Done } else { State::Length(n) }
        } else {
            // No length: the body ends when the server closes, so the connection cannot be reused.
            self.keep_alive = false;
            State::UntilClose
        };
        if let Some(e) = self.events.as_deref_mut()
            && !matches!(self.state, State::Head | State::Done)
        {
            e.begin(status);
        }
        Ok(Some(len))
    }

    /// Consumes body bytes from `data`, returning how many were used.
    fn consume_body(&mut self, data: &[u8]) -> Result<usize, DecodeError> {
        match self.state {
            State::Length(left) => {
                let take = (left.min(data.len() as u64)) as usize;
                if let Some(k) = self.kept.as_deref_mut() {
                    k.body(&data[..take]);
                }
                if let Some(e) = self.live_events() {
                    e.body(&data[..take], false)?;
                }
                let left = left - take as u64;
                self.state = if left == 0 { State::Done } else { State::Length(left) };
                Ok(take)
            }
            State::UntilClose => {
                if let Some(k) = self.kept.as_deref_mut() {
                    k.body(data);
                }
                if let Some(e) = self.live_events() {
                    e.body(data, false)?;
                }
                Ok(data.len())
            }
            State::Chunked(chunk) => self.consume_chunked(chunk, data),
            State::Head | State::Done => Ok(0),
        }
    }

    fn consume_chunked(&mut self, mut chunk: Chunk, data: &[u8]) -> Result<usize, DecodeError> {
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data(left) = chunk {
                // Chunk data is skipped in bulk; only sizes and line ends are read byte by byte.
                let take = left.min((data.len() - i) as u64);
                if let Some(k) = self.kept.as_deref_mut() {
                    k.body(&data[i..i + take as usize]);
                }
                if let Some(e) = self.live_events() {
                    e.body(&data[i..i + take as usize], true)?;
                    if take == left {
                        e.chunk_end()?;
                    }
                }
                i += take as usize;
                chunk = if take == left { Chunk::DataEnd { seen_cr: false } } else { Chunk::Data(left - take) };
                continue;
            }
            let b = data[i];
            let max = self.max_line;
            chunk = match chunk {
                Chunk::Data(_) => chunk,
                Chunk::Size { len, .. } | Chunk::Extension { len, .. } if len >= max && b != b'\n' => {
                    return Err(too_long("a chunk-size line", max));
                }
                Chunk::Size { value, len } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        let digit = (b as char).to_digit(16).expect("hex digit") as u64;
                        let value = value
                            .checked_mul(16)
                            .and_then(|v| v.checked_add(digit))
                            .ok_or_else(|| DecodeError::Malformed("chunk size too large".into()))?;
                        Chunk::Size { value, len: len + 1 }
                    }
                    b';' | b' ' | b'\t' | b'\r' if len > 0 => Chunk::Extension { value, len: len + 1 },
                    b'\n' if len > 0 => self.chunk_announced(value)?,
                    _ => {
                        return Err(DecodeError::Malformed(format!("bad chunk size byte 0x{b:02x}")));
                    }
                },
                Chunk::Extension { value, len } => {
                    if b == b'\n' {
                        self.chunk_announced(value)?
                    } else {
                        Chunk::Extension { value, len: len + 1 }
                    }
                }
                Chunk::DataEnd { seen_cr } => match b {
                    b'\r' if !seen_cr => Chunk::DataEnd { seen_cr: true },
                    b'\n' => Chunk::Size { value: 0, len: 0 },
                    _ => {
                        return Err(DecodeError::Malformed("chunk data not followed by CRLF".into()));
                    }
                },
                Chunk::Trailer { line_len, text } => match b {
                    b'\n' if !text => {
                        self.state = State::Done;
                        return Ok(i + 1);
                    }
                    b'\n' => Chunk::Trailer { line_len: 0, text: false },
                    _ if line_len >= max => return Err(too_long("a trailer line", max)),
                    _ => Chunk::Trailer { line_len: line_len + 1, text: text || b != b'\r' },
                },
            };
            i += 1;
        }
        self.state = State::Chunked(chunk);
        Ok(i)
    }
}

impl HttpDecoder {
    /// A chunk-size line read: what follows it (the events reader bounds the chunk first).
    fn chunk_announced(&mut self, value: u64) -> Result<Chunk, DecodeError> {
        if value > 0 && self.rest == Rest::ToRead {
            // More data after the end event: the server goes on past the answer's end.
            self.rest = Rest::PastEnd;
            return Err(past_end(&format!("a chunk of {value} bytes")));
        }
        if value > 0 && self.live_events().is_some_and(|e| e.ended()) {
            // The end event and another chunk in one read: the body goes on past the answer's end.
            self.rest = Rest::PastEnd;
        }
        if let Some(e) = self.live_events()
            && value > 0
        {
            e.chunk_start(value)?;
        }
        Ok(next_after_size(value))
    }

    /// After body bytes: the answer ends early when its end event came before its body's end (a server that
    /// writes `[DONE]` and the last chunk apart, as uvicorn and aiohttp do): the rest is read before the connection
    /// carries the next request, or, when the body goes on past the end, the connection is given up. A body that
    /// ended without an end event it should have had is a cut stream.
    fn events_done(&mut self) -> Result<bool, DecodeError> {
        if self.rest == Rest::ToRead {
            return Ok(false);
        }
        let Some(e) = self.events.as_deref() else { return Ok(false) };
        if e.ended() && self.state != State::Done {
            self.rest = match self.state {
                State::Chunked(_) if self.rest == Rest::None => Rest::ToRead,
                State::Length(left) if left <= MOST_REST => Rest::ToRead,
                _ => Rest::PastEnd,
            };
            if self.rest == Rest::ToRead {
                self.rest_budget = MOST_REST;
            } else {
                self.state = State::Done;
                self.keep_alive = false;
            }
            self.unread = 0;
            return Ok(true);
        }
        if self.state == State::Done {
            e.body_ended()?;
        }
        Ok(false)
    }
}

/// The body went on past its answer's end event: `what` came after it.
fn past_end(what: &str) -> DecodeError {
    DecodeError::Malformed(format!("the body went on past the answer's end event: {what}"))
}

fn next_after_size(value: u64) -> Chunk {
    if value == 0 { Chunk::Trailer { line_len: 0, text: false } } else { Chunk::Data(value) }
}

/// A malformed-response error quoting the start of what was received, so the sample tells what the server sent.
fn malformed(buf: &[u8], what: &str) -> DecodeError {
    DecodeError::Malformed(format!("{what}: \"{}\"", quote(buf)))
}

/// The start of `bytes`, printable, for error samples.
pub fn quote(bytes: &[u8]) -> String {
    crate::protocol::framing::quote(bytes)
}

impl ResponseDecoder for HttpDecoder {
    fn start(&mut self, expects_no_body: bool) {
        self.head.clear();
        self.state = State::Head;
        self.expects_no_body = expects_no_body;
        self.status = 0;
        self.keep_alive = true;
        self.received = false;
        self.stray = None;
        self.unread = 0;
        self.rest = Rest::None;
        if let Some(k) = self.kept.as_deref_mut() {
            k.headers.clear();
            k.body.clear();
        }
        if let Some(e) = self.events.as_deref_mut() {
            e.start();
        }
    }

    fn feed(&mut self, mut data: &[u8]) -> Result<Option<Answer>, DecodeError> {
        self.received |= !data.is_empty();
        loop {
            match self.state {
                State::Done => {
                    self.unread = data.len();
                    if !data.is_empty() {
                        let quoted = quote(data);
                        self.stray = Some(format!(
                            "{} bytes followed the answer to the previous request: \"{quoted}\"",
                            data.len()
                        ));
                    }
                    return Ok(Some(self.answer()));
                }
                State::Head => {
                    let parsed = if self.head.is_empty() {
                        match self.parse_head(data)? {
                            Some(len) => Some(len),
                            None => {
                                self.head.extend_from_slice(data);
                                None
                            }
                        }
                    } else {
                        let before = self.head.len();
                        self.head.extend_from_slice(data);
                        let head = std::mem::take(&mut self.head);
                        let result = self.parse_head(&head);
                        self.head = head;
                        match result? {
                            Some(len) => {
                                self.head.clear();
                                Some(len - before)
                            }
                            None => None,
                        }
                    };
                    match parsed {
                        Some(used_from_data) => data = &data[used_from_data..],
                        None => {
                            if self.head.len() > self.max_line {
                                return Err(too_long("a response head", self.max_line));
                            }
                            return Ok(None);
                        }
                    }
                }
                State::Length(_) | State::Chunked(_) | State::UntilClose => {
                    let used = self.consume_body(data)?;
                    data = &data[used..];
                    if self.rest == Rest::ToRead {
                        // The rest after the end event: bounded, and nothing else but the body's end.
                        self.rest_budget = self.rest_budget.saturating_sub(used as u64);
                        if self.rest_budget == 0 && self.state != State::Done {
                            self.rest = Rest::PastEnd;
                            return Err(past_end(&format!("more than {MOST_REST} bytes")));
                        }
                    }
                    if self.events_done()? {
                        return Ok(Some(self.answer()));
                    }
                    if self.state != State::Done {
                        return Ok(None);
                    }
                }
            }
        }
    }

    fn eof(&mut self) -> Result<Answer, DecodeError> {
        match self.state {
            State::Done => Ok(self.answer()),
            State::UntilClose => {
                self.state = State::Done;
                if let Some(e) = self.events.as_deref() {
                    e.body_ended()?;
                }
                Ok(self.answer())
            }
            State::Length(_) | State::Chunked(_) if self.events.as_deref().is_some_and(EventReader::active) => {
                Err(DecodeError::StreamCut("the server closed the connection inside the stream".into()))
            }
            State::Head if !self.received => {
                Err(DecodeError::Truncated("the server closed the connection without answering".into()))
            }
            State::Head => {
                Err(DecodeError::Truncated("the server closed the connection inside the response head".into()))
            }
            State::Length(left) => Err(DecodeError::Truncated(format!(
                "the server closed the connection with {left} body bytes still to come"
            ))),
            State::Chunked(_) => {
                Err(DecodeError::Truncated("the server closed the connection inside a chunked body".into()))
            }
        }
    }

    fn nothing_received(&self) -> bool {
        !self.received
    }

    fn stray(&self) -> Option<&str> {
        self.stray.as_deref()
    }

    fn unread(&self) -> usize {
        self.unread
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all_splits(wire: &[u8], head: bool) -> Answer {
        crate::protocol::decode_every_split::<HttpDecoder>(wire, head).unwrap()
    }

    #[test]
    fn content_length_bodies_complete_at_any_split() {
        let a = decode_all_splits(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
        assert_eq!(a, Answer { status: 200, keep_alive: true });
    }

    #[test]
    fn chunked_bodies_with_extensions_and_trailers_complete_at_any_split() {
        let wire = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
        assert_eq!(decode_all_splits(wire, false).status, 201);
    }

    #[test]
    fn head_204_304_and_interim_answers_have_no_body() {
        assert_eq!(decode_all_splits(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true).status, 200);
        assert_eq!(decode_all_splits(b"HTTP/1.1 204 No Content\r\n\r\n", false).status, 204);
        assert_eq!(decode_all_splits(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false).status, 304);
        let a =
            decode_all_splits(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
        assert_eq!(a.status, 200);
    }

    #[test]
    fn connection_close_and_http10_are_not_kept_alive() {
        let a = decode_all_splits(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false);
        assert!(!a.keep_alive);
        let a = decode_all_splits(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false);
        assert!(!a.keep_alive);
        let a = decode_all_splits(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", false);
        assert!(a.keep_alive);
    }

    #[test]
    fn a_body_without_length_ends_at_close() {
        let mut d = HttpDecoder::default();
        d.start(false);
        assert_eq!(d.feed(b"HTTP/1.0 200 OK\r\n\r\nsome body").unwrap(), None);
        assert_eq!(d.feed(b" more").unwrap(), None);
        assert_eq!(d.eof().unwrap(), Answer { status: 200, keep_alive: false });
    }

    #[test]
    fn a_close_before_or_inside_the_answer_is_truncation() {
        let mut d = HttpDecoder::default();
        d.start(false);
        assert!(d.nothing_received());
        assert!(matches!(d.eof(), Err(DecodeError::Truncated(m)) if m.contains("without answering")));
        d.start(false);
        d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").unwrap();
        assert!(!d.nothing_received());
        assert!(matches!(d.eof(), Err(DecodeError::Truncated(m)) if m.contains("7 body bytes")));
    }

    #[test]
    fn garbage_and_broken_framing_are_malformed() {
        let mut d = HttpDecoder::default();
        d.start(false);
        assert!(
            matches!(d.feed(b"this is not http\r\n\r\n"), Err(DecodeError::Malformed(m)) if m.contains("this is not http"))
        );
        d.start(false);
        assert!(d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        d.start(false);
        assert!(d.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
    }

    #[test]
    fn bytes_after_the_answer_leave_it_complete_and_are_reported_as_stray() {
        let mut d = HttpDecoder::default();
        d.start(false);
        let answer = d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n").unwrap();
        assert_eq!(answer, Some(Answer { status: 200, keep_alive: true }));
        assert!(d.stray().is_some_and(|s| s.contains("17 bytes") && s.contains("HTTP/1.1 200")), "{:?}", d.stray());
        d.start(false);
        assert_eq!(d.stray(), None, "the next answer starts clean");
        d.feed(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert_eq!(d.stray(), None);
    }

    #[test]
    fn switching_protocols_is_refused_and_other_interim_answers_are_skipped() {
        let mut d = HttpDecoder::default();
        d.start(false);
        let upgrade = d.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
        assert!(matches!(upgrade, Err(DecodeError::Malformed(m)) if m.contains("not supported")));
        d.start(false);
        let answer = d.feed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 204 No\r\n\r\n");
        assert_eq!(answer.unwrap(), Some(Answer { status: 204, keep_alive: true }));
    }

    /// Feeds `start`, then `unit` again and again: the error it ends in, with the bytes it took.
    fn endless(d: &mut HttpDecoder, start: &[u8], unit: &[u8]) -> (DecodeError, usize) {
        d.start(false);
        let mut fed = start.len();
        if let Err(e) = d.feed(start) {
            return (e, fed);
        }
        for _ in 0..100_000 {
            fed += unit.len();
            match d.feed(unit) {
                Ok(None) => {}
                Ok(Some(a)) => panic!("an answer {a:?} from an endless frame"),
                Err(e) => return (e, fed),
            }
        }
        panic!("still reading after {fed} bytes");
    }

    #[test]
    fn an_endless_head_chunk_size_extension_or_trailer_is_a_line_too_long() {
        let mut d = HttpDecoder::new(1024);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (start, unit, what) in [
            (
                &b"HTTP/1.1 200 OK\r\n"[..],
                &b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"[..],
                "a response head",
            ),
            (b"HTTP/1.1 200 OK\r\nX-Endless: ", b"a", "a response head"),
            (chunked, b"0", "a chunk-size line"),
            (&[&chunked[..], b"5;"].concat(), b"ext", "a chunk-size line"),
            (&[&chunked[..], b"0\r\n"].concat(), b"X-Trailer-", "a trailer line"),
            (&[&chunked[..], b"0\r\n"].concat(), b"\r", "a trailer line"),
        ] {
            let (e, fed) = endless(&mut d, start, unit);
            assert!(
                matches!(&e, DecodeError::LineTooLong(m) if m == &format!("{what} longer than 1024 bytes (--max-line)")),
                "{e:?}"
            );
            // Refused within a read of the bound: nothing is kept or read on without end.
            assert!(fed <= 1024 + start.len() + 64, "{fed}");
            assert!(d.head.capacity() <= 4096, "{}", d.head.capacity());
        }
        // A long line within the bound is fine, and the bound holds per line, not per body.
        d.start(false);
        let long = [&chunked[..], b"1;", &[b'x'; 1000], b"\r\na\r\n1;", &[b'y'; 1000], b"\r\nb\r\n0\r\n\r\n"].concat();
        assert_eq!(d.feed(&long).unwrap().map(|a| a.status), Some(200));
    }
}

#[cfg(test)]
mod rest_tests {
    use std::sync::Arc;

    use super::*;
    use crate::protocol::events::{EventKind, EventsSpec};

    fn token_decoder() -> HttpDecoder {
        let spec =
            EventsSpec { kind: EventKind::Tokens, until: None, max_events: 100, max_bytes: 1 << 20, goodput: None };
        let mut d = HttpDecoder::default();
        d.read_events(EventReader::new(Arc::new(spec), 256));
        d.start(false);
        d
    }

    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    const TOKEN: &[u8] = b"2f\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\r\n";
    const DONE: &[u8] = b"e\r\ndata: [DONE]\n\n\r\n";

    #[test]
    fn a_last_chunk_apart_from_done_is_read_and_the_connection_kept() {
        let mut d = token_decoder();
        assert_eq!(d.feed(&[HEAD, TOKEN].concat()).unwrap(), None);
        // [DONE] ends the answer; the body's end is still to come.
        let a = d.feed(DONE).unwrap().expect("the answer ends at [DONE]");
        assert!(a.keep_alive);
        assert_eq!(d.rest(), Rest::ToRead);
        // It comes in a read of its own (uvicorn, aiohttp), even split: the body ends, nothing stray.
        assert_eq!(d.feed(b"0\r\n").unwrap(), None);
        assert!(d.feed(b"\r\n").unwrap().is_some());
        assert!(d.stray().is_none());
        // The next answer on the connection reads its events again.
        d.start(false);
        assert_eq!(d.rest(), Rest::None);
        assert_eq!(d.feed(&[HEAD, TOKEN].concat()).unwrap(), None);
        assert!(d.events_mut().unwrap().figures().events > 0);
    }

    #[test]
    fn done_and_the_last_chunk_in_one_read_leave_nothing_to_read() {
        let mut d = token_decoder();
        assert!(d.feed(&[HEAD, TOKEN, DONE, b"0\r\n\r\n"].concat()).unwrap().is_some());
        assert_eq!(d.rest(), Rest::None);
    }

    #[test]
    fn a_body_that_goes_on_past_done_is_past_its_end() {
        // Another chunk of data after [DONE], in the same read or the next.
        let mut d = token_decoder();
        let a = d.feed(&[HEAD, TOKEN, DONE, TOKEN].concat()).unwrap().expect("ends at [DONE]");
        assert_eq!((d.rest(), a.keep_alive), (Rest::PastEnd, false));
        let mut d = token_decoder();
        assert!(d.feed(&[HEAD, TOKEN, DONE].concat()).unwrap().is_some());
        assert_eq!(d.rest(), Rest::ToRead);
        assert!(matches!(d.feed(TOKEN), Err(DecodeError::Malformed(m)) if m.contains("past the answer's end")));
        // A close-delimited body ends only when the server closes: nothing to read for the next request.
        let mut d = token_decoder();
        let wire = [b"HTTP/1.1 200 OK\r\n\r\n" as &[u8], b"data: [DONE]\n\n"].concat();
        assert!(d.feed(&wire).unwrap().is_some());
        assert_eq!(d.rest(), Rest::PastEnd);
    }

    #[test]
    fn the_rest_of_a_content_length_body_is_read_within_its_bound() {
        let body = b"data: [DONE]\n\n";
        let mut d = token_decoder();
        let wire = [format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len() + 4).as_bytes(), body].concat();
        assert!(d.feed(&wire).unwrap().is_some());
        assert_eq!(d.rest(), Rest::ToRead);
        assert!(d.feed(b"\n\n\n\n").unwrap().is_some());
        // More than MOST_REST after the end: given up at once.
        let mut d = token_decoder();
        let len = body.len() as u64 + MOST_REST + 1;
        let wire = [format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").as_bytes(), body].concat();
        assert!(d.feed(&wire).unwrap().is_some());
        assert_eq!(d.rest(), Rest::PastEnd);
    }
}
