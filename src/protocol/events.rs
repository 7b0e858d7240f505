//! Answers that stream (`--events`): server-sent events, NDJSON lines, HTTP chunks, an OpenAI-style token stream.
//!
//! [`EventReader`] is fed an answer's body bytes (dechunked by the HTTP decoder) as each read returned them, with
//! the read's timestamp given once per read (`clock`): every event found in a read is stamped with it, so events
//! cost no clock read of their own. It keeps one line (bounded by `--max-line`), never the body. The gaps between
//! events wait in `gaps` until the answer ends and the engine moves them into its histogram (the protocol layer
//! holds no metrics; a failed answer's gaps are in no figure): at most `MAX_GAP_RUNS` runs, folded at the
//! histogram's precision past that.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use super::DecodeError;
use super::framing::too_long;

/// How an answer's body is cut into events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Server-sent events: an event is a `data:` field or more, ended by a blank line (comments are not events).
    Sse,
    /// Newline-delimited JSON (or any text): an event is a non-empty line.
    Ndjson,
    /// An event is a chunk of a chunked body (HTTP/2: a DATA frame; another body: whatever each read brought).
    Chunks,
    /// OpenAI-compatible chat or completion chunks over SSE: an event is a chunk whose delta carries text (a token),
    /// the end is `data: [DONE]`.
    Tokens,
}

impl EventKind {
    pub fn parse(text: &str) -> Option<EventKind> {
        Some(match text {
            "sse" => EventKind::Sse,
            "ndjson" => EventKind::Ndjson,
            "chunks" => EventKind::Chunks,
            "tokens" => EventKind::Tokens,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            EventKind::Sse => "sse",
            EventKind::Ndjson => "ndjson",
            EventKind::Chunks => "chunks",
            EventKind::Tokens => "tokens",
        }
    }
}

/// What `--events` and its bounds ask.
#[derive(Clone, Debug, PartialEq)]
pub struct EventsSpec {
    pub kind: EventKind,
    /// `--events-until`: the event holding this text ends the answer (and is not counted). A token stream ends at
    /// `[DONE]` unless told otherwise.
    pub until: Option<String>,
    /// `--events-max`: more events in one answer fail it as `stream_too_long`.
    pub max_events: u64,
    /// `--events-max-bytes`: more body bytes in one answer (or a chunk announcing more) fail it as `stream_too_long`.
    pub max_bytes: u64,
    /// `--goodput`: the objectives each answer is judged by.
    pub goodput: Option<Goodput>,
}

/// Goodput's objectives (DistServe's goodput, vLLM's `--goodput`): an answer is good when it meets every one given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Goodput {
    /// As given, for the result document.
    pub text: String,
    /// Time to first token at most, microseconds.
    pub ttft_us: Option<u64>,
    /// Time per output token at most, microseconds (an answer of one token meets it, as vLLM counts).
    pub tpot_us: Option<u64>,
    /// The whole answer at most, microseconds.
    pub e2el_us: Option<u64>,
}

impl Goodput {
    /// Whether an answer of these figures (microseconds; no first token: None) meets every objective.
    pub fn met(&self, ttft: Option<u64>, tpot: Option<u64>, e2el: u64) -> bool {
        let within = |limit: Option<u64>, v: Option<u64>| limit.is_none_or(|l| v.is_some_and(|v| v <= l));
        within(self.ttft_us, ttft) && within(self.tpot_us, tpot.or(Some(0))) && within(self.e2el_us, Some(e2el))
    }
}

/// The most output tokens one answer's `usage` may claim: more (2^63 from a hostile server, which would wrap a
/// step's total) is implausible for any model, and its chunks are counted instead.
pub const MOST_USAGE_TOKENS: u64 = u32::MAX as u64;

/// The most bytes of a whole (not streamed) token answer read: a million tokens' text, past any model's answer.
const MOST_WHOLE: usize = 8 << 20;

/// The end marker of an OpenAI-compatible stream.
pub const DONE: &str = "[DONE]";

impl EventsSpec {
    /// The text that ends an answer, if any: `--events-until`, else `[DONE]` for a token stream.
    pub fn until(&self) -> Option<&str> {
        match (&self.until, self.kind) {
            (Some(u), _) => Some(u),
            (None, EventKind::Tokens) => Some(DONE),
            (None, _) => None,
        }
    }
}

/// What one answer's stream held.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamFigures {
    /// The read that brought the first event (a token stream: the first token).
    pub first: Option<Instant>,
    pub events: u64,
    /// Body bytes (dechunked) up to the end.
    pub bytes: u64,
    /// A token stream: chunks that carried text, one token each.
    pub chunk_tokens: u64,
    /// A token stream: the `usage.completion_tokens` the server sent, when it did (and it was plausible).
    pub usage_tokens: Option<u64>,
    /// A token stream: the server's `usage.completion_tokens` was more than [`MOST_USAGE_TOKENS`]: not taken (the
    /// chunks are counted instead), and said.
    pub usage_implausible: bool,
    /// A token stream: the prompt's tokens as the server's `usage.prompt_tokens` says them, when it did (and they
    /// were plausible: at most [`MOST_USAGE_TOKENS`]).
    pub input_tokens: Option<u64>,
    /// A token stream: the answer ended for a reason other than its `max_tokens` (a `finish_reason` other than
    /// `length`, such as `stop`): it has fewer output tokens than asked. False when no reason was given.
    pub short: bool,
    /// A token answer that came whole (`"stream": false`): it has no timing between tokens (no TPOT, no gaps).
    pub whole: bool,
    /// The end text (`--events-until`, `[DONE]`) was read.
    pub ended: bool,
}

impl StreamFigures {
    /// Output tokens: the server's own count (`usage`) when it sent one, else the chunks that carried text.
    pub fn tokens(&self) -> u64 {
        self.usage_tokens.unwrap_or(self.chunk_tokens)
    }
}

/// Reads the events of one answer after another (one reader per connection's decoder).
#[derive(Debug)]
pub struct EventReader {
    spec: Arc<EventsSpec>,
    max_line: usize,
    /// The timestamp of the read being fed.
    at: Option<Instant>,
    last: Option<Instant>,
    /// The line read so far (SSE, NDJSON, tokens).
    line: Vec<u8>,
    /// SSE: the event's data lines so far; chunks: the chunk's first `max_line` bytes (for `--events-until`).
    data: Vec<u8>,
    has_data: bool,
    /// Only a 2xx answer's body is read for events: an error's body is whatever the server says.
    active: bool,
    fig: StreamFigures,
    /// Gaps between events (microseconds, count) not yet taken by the engine.
    gaps: Vec<(u64, u64)>,
    /// A token answer that came as one JSON object (`"stream": false`), read whole (within `--events-max-bytes`).
    whole: Option<Vec<u8>>,
}

#[derive(serde::Deserialize)]
struct TokenChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(serde::Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    /// The completions API's shape (`choices[].text`).
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// A token answer that is not streamed: OpenAI's chat (`message`) or completions (`text`) object.
#[derive(serde::Deserialize)]
struct WholeAnswer {
    #[serde(default)]
    choices: Vec<WholeChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(serde::Deserialize)]
struct WholeChoice {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(serde::Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct Usage {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros().min(u64::MAX as u128) as u64
}

impl EventReader {
    pub fn new(spec: Arc<EventsSpec>, max_line: usize) -> Self {
        Self {
            spec,
            max_line,
            at: None,
            last: None,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            active: false,
            fig: StreamFigures::default(),
            gaps: Vec::new(),
            whole: None,
        }
    }

    pub fn spec(&self) -> &EventsSpec {
        &self.spec
    }

    /// A new answer.
    pub fn start(&mut self) {
        self.last = None;
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.active = false;
        self.fig = StreamFigures::default();
        self.gaps.clear();
        self.whole = None;
    }

    /// The answer's head was read: its body is read for events when the status is 2xx.
    pub fn begin(&mut self, status: u16) {
        self.active = (200..300).contains(&status);
    }

    /// Whether this answer's body is read for events.
    pub fn active(&self) -> bool {
        self.active
    }

    /// The timestamp of the read whose bytes are fed next.
    pub fn clock(&mut self, at: Instant) {
        self.at = Some(at);
    }

    pub fn figures(&self) -> StreamFigures {
        self.fig
    }

    /// The end text was read: the rest of the body is not the answer's.
    pub fn ended(&self) -> bool {
        self.fig.ended
    }

    /// The gaps between events read since the last call, as (microseconds, count).
    /// The answer's gaps (taken), with the goodput objectives it is judged by (`--goodput`).
    pub fn take_gaps_and_goodput(&mut self) -> (impl Iterator<Item = (u64, u64)> + '_, Option<&Goodput>) {
        (self.gaps.drain(..), self.spec.goodput.as_ref())
    }

    /// The body ended as its framing says: an error when the stream should have ended with a text it never sent.
    pub fn body_ended(&self) -> Result<(), DecodeError> {
        match self.spec.until() {
            Some(until) if self.active && !self.fig.ended => {
                Err(DecodeError::StreamCut(format!("the answer ended without its end event ({until})")))
            }
            _ => Ok(()),
        }
    }

    /// A chunk of `size` bytes announced (chunked bodies): refused when it would take the answer past its bound.
    pub fn chunk_start(&mut self, size: u64) -> Result<(), DecodeError> {
        if !self.active || self.fig.ended {
            return Ok(());
        }
        if size > self.spec.max_bytes.saturating_sub(self.fig.bytes) {
            return Err(DecodeError::StreamTooLong(format!(
                "a chunk of {size} bytes would take the answer past {} bytes (--events-max-bytes)",
                self.spec.max_bytes
            )));
        }
        if self.spec.kind == EventKind::Chunks {
            // (The other kinds keep their event's data across chunks: a server may send a line a chunk.)
            self.data.clear();
        }
        Ok(())
    }

    /// The chunk begun with [`chunk_start`](Self::chunk_start) is complete: an event of `--events chunks`.
    pub fn chunk_end(&mut self) -> Result<(), DecodeError> {
        if self.active && !self.fig.ended && self.spec.kind == EventKind::Chunks {
            let text = std::mem::take(&mut self.data);
            let r = self.event(&text);
            self.data = text;
            return r;
        }
        Ok(())
    }

    /// Body bytes; `chunked`: they are a chunk's (for `--events chunks`, whose events are the chunks).
    pub fn body(&mut self, mut data: &[u8], chunked: bool) -> Result<(), DecodeError> {
        if !self.active || self.fig.ended || data.is_empty() {
            return Ok(());
        }
        self.fig.bytes += data.len() as u64;
        if self.fig.bytes > self.spec.max_bytes {
            return Err(DecodeError::StreamTooLong(format!(
                "the answer went past {} bytes (--events-max-bytes)",
                self.spec.max_bytes
            )));
        }
        // A token answer that is one JSON object, not a stream (`"stream": false`): read whole, its tokens from its
        // usage, its one event when it ends.
        // Before any line of a stream was read (only blank bytes so far), a `{` starts a whole JSON answer.
        let nothing_yet = self.line.is_empty() && !self.has_data && self.fig.events == 0;
        if self.spec.kind == EventKind::Tokens
            && (self.whole.is_some() || (nothing_yet && data.trim_ascii_start().first() == Some(&b'{')))
        {
            return self.whole_answer(data);
        }
        if self.spec.kind == EventKind::Chunks {
            if chunked {
                let room = self.max_line.saturating_sub(self.data.len());
                self.data.extend_from_slice(&data[..data.len().min(room)]);
                return Ok(());
            }
            return self.event(data);
        }
        while !data.is_empty() && !self.fig.ended {
            let (piece, complete) = match data.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (data.len(), false),
            };
            if self.line.len() + piece > self.max_line {
                return Err(too_long("an event line", self.max_line));
            }
            self.line.extend_from_slice(&data[..piece]);
            data = &data[piece + usize::from(complete)..];
            if complete {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                let r = self.line_read(&line);
                line.clear();
                self.line = line;
                r?;
            }
        }
        Ok(())
    }

    fn line_read(&mut self, line: &[u8]) -> Result<(), DecodeError> {
        if self.spec.kind == EventKind::Ndjson {
            return if line.trim_ascii().is_empty() { Ok(()) } else { self.event(line) };
        }
        if line.is_empty() {
            if !self.has_data {
                return Ok(());
            }
            self.has_data = false;
            let data = std::mem::take(&mut self.data);
            let r = self.event(&data);
            self.data = data;
            self.data.clear();
            return r;
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &b""[..]),
        };
        if name != b"data" {
            return Ok(());
        }
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.data.len() + value.len() + 1 > self.max_line {
            return Err(too_long("an event's data", self.max_line));
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        Ok(())
    }

    /// A whole (not streamed) token answer's bytes: parsed once it closes, its text one event at the read that
    /// completed it, its tokens its usage's (else one), and the answer ended.
    fn whole_answer(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let whole = self.whole.get_or_insert_with(Vec::new);
        if whole.len() + data.len() > MOST_WHOLE {
            return Err(DecodeError::StreamTooLong(format!(
                "a whole token answer went past {} MiB: not read further",
                MOST_WHOLE >> 20
            )));
        }
        whole.extend_from_slice(data);
        if whole.trim_ascii_end().last() != Some(&b'}') {
            return Ok(());
        }
        let answer: WholeAnswer = match serde_json::from_slice(whole) {
            Ok(a) => a,
            Err(e) if e.is_eof() => return Ok(()),
            Err(e) => {
                return Err(DecodeError::Malformed(format!(
                    "a token answer that is not a stream is not one JSON object ({e}): \"{}\"",
                    super::framing::quote(whole)
                )));
            }
        };
        // An object without choices is no answer (an error object sent with a 2xx status, an NDJSON line).
        if answer.choices.is_empty() {
            return Err(DecodeError::Malformed(format!(
                "a token answer that is one JSON object holds no choices: \"{}\"",
                super::framing::quote(whole)
            )));
        }
        let text = answer.choices.iter().any(|c| {
            let t = c.message.as_ref().and_then(|m| m.content.as_deref()).or(c.text.as_deref());
            t.is_some_and(|t| !t.is_empty())
        });
        self.fig.whole = true;
        if let Some(reason) = answer.choices.iter().find_map(|c| c.finish_reason.as_deref()) {
            self.fig.short = reason != "length";
        }
        if text {
            self.fig.first = self.at;
            self.fig.events = 1;
            self.fig.chunk_tokens = 1;
        }
        if let Some(u) = &answer.usage {
            match u.completion_tokens {
                Some(n) if n > MOST_USAGE_TOKENS => self.fig.usage_implausible = true,
                Some(n) => self.fig.usage_tokens = Some(n),
                None => {}
            }
            self.fig.input_tokens = u.prompt_tokens.filter(|n| *n <= MOST_USAGE_TOKENS);
        }
        self.fig.ended = true;
        Ok(())
    }

    /// One event's text read.
    fn event(&mut self, text: &[u8]) -> Result<(), DecodeError> {
        if let Some(until) = self.spec.until()
            && contains(text, until.as_bytes())
        {
            self.fig.ended = true;
            return Ok(());
        }
        if self.spec.kind == EventKind::Tokens {
            let chunk: TokenChunk = serde_json::from_slice(text).map_err(|e| {
                DecodeError::Malformed(format!(
                    "a token stream's event is not a JSON chunk ({e}): \"{}\"",
                    super::framing::quote(text)
                ))
            })?;
            let usage = chunk.usage.as_ref();
            match usage.and_then(|u| u.completion_tokens) {
                Some(n) if n > MOST_USAGE_TOKENS => self.fig.usage_implausible = true,
                Some(n) => self.fig.usage_tokens = Some(n),
                None => {}
            }
            if let Some(n) = usage.and_then(|u| u.prompt_tokens).filter(|n| *n <= MOST_USAGE_TOKENS) {
                self.fig.input_tokens = Some(n);
            }
            if let Some(reason) = chunk.choices.iter().find_map(|c| c.finish_reason.as_deref()) {
                self.fig.short = reason != "length";
            }
            let text = chunk.choices.iter().any(|c| {
                let t = c.delta.as_ref().and_then(|d| d.content.as_deref()).or(c.text.as_deref());
                t.is_some_and(|t| !t.is_empty())
            });
            if !text {
                return Ok(());
            }
            self.fig.chunk_tokens += 1;
        }
        self.fig.events += 1;
        if self.fig.events > self.spec.max_events {
            return Err(DecodeError::StreamTooLong(format!(
                "the answer went past {} events (--events-max)",
                self.spec.max_events
            )));
        }
        let at = *self.at.get_or_insert_with(Instant::now);
        match self.last {
            None => self.fig.first = Some(at),
            Some(last) => {
                let gap = micros(last, at);
                match self.gaps.last_mut() {
                    Some((g, n)) if *g == gap => *n += 1,
                    _ => {
                        if self.gaps.len() >= MAX_GAP_RUNS {
                            coalesce(&mut self.gaps);
                        }
                        self.gaps.push((gap, 1));
                    }
                }
            }
        }
        self.last = Some(at);
        Ok(())
    }
}

/// The most runs of gaps an answer keeps until it ends: past it they are folded by value at the histogram's own
/// precision (3 significant digits: at most some 9,000 values from 1 µs to an hour), so a long stream of small
/// events holds at most 256 KiB of gaps, not 16 bytes an event.
const MAX_GAP_RUNS: usize = 16_384;

/// `gaps` folded: each rounded down to 3 significant digits, equal ones added up.
fn coalesce(gaps: &mut Vec<(u64, u64)>) {
    for (g, _) in gaps.iter_mut() {
        let mut unit = 1;
        while *g / unit >= 1000 {
            unit *= 10;
        }
        *g = *g / unit * unit;
    }
    gaps.sort_unstable_by_key(|&(g, _)| g);
    gaps.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_kept_for_a_long_answer_are_folded_at_three_digits_and_none_is_lost() {
        let mut gaps: Vec<(u64, u64)> = (0..40_000u64).map(|i| (1_000 + i * 7, 1)).collect();
        gaps.push((999, 2));
        coalesce(&mut gaps);
        assert!(gaps.len() < 9_100, "{}", gaps.len());
        assert_eq!(gaps.iter().map(|&(_, n)| n).sum::<u64>(), 40_002, "every gap counted");
        assert_eq!(gaps[0], (999, 2), "below 1000 µs exact");
        assert!(gaps.iter().all(|&(g, _)| g < 1000 || g.to_string().trim_end_matches('0').len() <= 3));
        assert!(gaps.windows(2).all(|w| w[0].0 < w[1].0), "one run per value");
    }
    use std::time::Duration;

    fn reader(kind: EventKind, until: Option<&str>) -> EventReader {
        let spec =
            EventsSpec { kind, until: until.map(String::from), max_events: 100, max_bytes: 10_000, goodput: None };
        let mut r = EventReader::new(Arc::new(spec), 256);
        r.start();
        r.begin(200);
        r
    }

    /// Feeds `wire` split at every point (each part a read at its own time): the same figures each time.
    fn every_split(kind: EventKind, wire: &[u8]) -> StreamFigures {
        let t0 = Instant::now();
        let mut whole = reader(kind, None);
        whole.clock(t0);
        whole.body(wire, false).unwrap();
        for cut in 0..=wire.len() {
            let mut r = reader(kind, None);
            r.clock(t0);
            r.body(&wire[..cut], false).unwrap();
            r.clock(t0 + Duration::from_millis(10));
            r.body(&wire[cut..], false).unwrap();
            let f = r.figures();
            assert_eq!(
                (f.events, f.bytes, f.tokens()),
                (whole.figures().events, wire.len() as u64, whole.figures().tokens())
            );
        }
        whole.figures()
    }

    #[test]
    fn sse_events_are_data_fields_ended_by_a_blank_line_and_comments_are_not_events() {
        let wire = b": keep-alive\n\ndata: one\n\nevent: x\ndata: two\ndata: lines\r\n\r\nid: 3\n\ndata:\n\n";
        assert_eq!(every_split(EventKind::Sse, wire).events, 3);
        assert_eq!(every_split(EventKind::Ndjson, b"{\"a\":1}\n\n{\"a\":2}\r\n{\"a\":3}").events, 2);
    }

    #[test]
    fn token_chunks_count_text_deltas_and_a_usage_object_is_the_servers_own_count() {
        let chunk = |t: &str| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n");
        let mut wire = String::from("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n");
        for t in ["Hel", "lo", "\\\"!"] {
            wire.push_str(&chunk(t));
        }
        let f = every_split(EventKind::Tokens, wire.as_bytes());
        assert_eq!((f.events, f.chunk_tokens, f.usage_tokens, f.ended), (3, 3, None, false));
        wire.push_str(
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n",
        );
        let f = every_split(EventKind::Tokens, wire.as_bytes());
        assert_eq!((f.events, f.tokens(), f.ended), (3, 7, true));
        let mut r = reader(EventKind::Tokens, None);
        assert!(matches!(r.body(b"data: not json\n\n", false), Err(DecodeError::Malformed(_))));
        // A usage of 2^63 (two of them would wrap a step's total to 0) is not taken: the chunks count, and it is said.
        let mut wire = chunk("a");
        wire.push_str("data: {\"choices\":[],\"usage\":{\"completion_tokens\":9223372036854775808}}\n\n");
        let f = every_split(EventKind::Tokens, wire.as_bytes());
        assert_eq!((f.tokens(), f.usage_tokens, f.usage_implausible), (1, None, true));
    }

    #[test]
    fn gaps_are_between_reads_and_events_of_one_read_are_apart_by_nothing() {
        let t0 = Instant::now();
        let mut r = reader(EventKind::Sse, None);
        r.clock(t0);
        r.body(b"data: a\n\ndata: b\n\n", false).unwrap();
        r.clock(t0 + Duration::from_millis(10));
        r.body(b"data: c\n", false).unwrap();
        r.clock(t0 + Duration::from_millis(25));
        r.body(b"\n", false).unwrap();
        assert_eq!(r.take_gaps_and_goodput().0.collect::<Vec<_>>(), vec![(0, 1), (25_000, 1)]);
        assert_eq!(r.figures().first, Some(t0));
    }

    #[test]
    fn bounds_hold_and_the_end_text_ends_the_answer() {
        let mut r = reader(EventKind::Sse, None);
        assert!(matches!(r.body(&[b'x'; 257], false), Err(DecodeError::LineTooLong(_))));
        let mut r = reader(EventKind::Chunks, None);
        assert!(matches!(r.chunk_start(1 << 63), Err(DecodeError::StreamTooLong(_))));
        let mut r = reader(EventKind::Ndjson, None);
        assert!(matches!(r.body(&b"1\n".repeat(101), false), Err(DecodeError::StreamTooLong(_))));
        let mut r = reader(EventKind::Ndjson, Some("\"done\":true"));
        r.body(b"{\"n\":1}\n{\"done\":true}\n{\"n\":2}\n", false).unwrap();
        assert_eq!((r.figures().events, r.ended()), (1, true));
        assert_eq!(r.body_ended(), Ok(()));
        let mut r = reader(EventKind::Tokens, None);
        r.body(b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n", false).unwrap();
        assert!(matches!(r.body_ended(), Err(DecodeError::StreamCut(_))));
        // A token answer that is one JSON object (not streamed), in two reads: one event, the usage's tokens.
        let mut r = reader(EventKind::Tokens, None);
        r.body(b" {\"choices\":[{\"message\":{\"content\":\"hi the", false).unwrap();
        assert!(!r.ended());
        r.body(b"re\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n", false).unwrap();
        let f = r.figures();
        assert_eq!((f.events, f.tokens(), f.input_tokens, r.ended(), f.short), (1, 2, Some(3), true, false));
        let mut r = reader(EventKind::Tokens, None);
        r.body(b"{\"choices\":[{\"text\":\"a\",\"finish_reason\":\"stop\"}]}", false).unwrap();
        assert!(r.figures().short, "ended before max_tokens");
        let mut r = reader(EventKind::Tokens, None);
        let wire = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        r.body(wire.as_bytes(), false).unwrap();
        assert!(!r.figures().short && r.ended());
        assert_eq!(r.body_ended(), Ok(()));
        let mut r = reader(EventKind::Tokens, None);
        assert!(matches!(r.body(b"{\"choices\": 7}", false), Err(DecodeError::Malformed(_))));
        let mut r = reader(EventKind::Tokens, None);
        assert!(matches!(r.body(b"{\"error\": {\"message\": \"x\"}}", false), Err(DecodeError::Malformed(_))));
        // Blank bytes first, then the object: still a whole answer.
        let mut r = reader(EventKind::Tokens, None);
        r.body(b"\n", false).unwrap();
        r.body(b"{\"choices\":[{\"text\":\"a\"}]}", false).unwrap();
        assert!(r.ended() && r.figures().whole);
        let mut r = reader(EventKind::Chunks, Some("END"));
        for part in [&b"ab"[..], b"c", b"END"] {
            r.chunk_start(part.len() as u64).unwrap();
            r.body(part, true).unwrap();
            r.chunk_end().unwrap();
        }
        assert_eq!((r.figures().events, r.figures().bytes, r.ended()), (2, 6, true));
        let mut r = reader(EventKind::Tokens, None);
        for part in [&b"data: {\"choices\":[{\"text\":\"a\"}]}\n"[..], b"\n", b"data: [DONE]\n", b"\n"] {
            r.chunk_start(part.len() as u64).unwrap();
            r.body(part, true).unwrap();
            r.chunk_end().unwrap();
        }
        assert_eq!((r.figures().events, r.ended()), (1, true), "an event's lines in chunks of their own");
        let mut r = reader(EventKind::Sse, None);
        r.begin(500);
        r.body(b"data: x\n\n", false).unwrap();
        assert_eq!(r.figures().events, 0);
    }
}
