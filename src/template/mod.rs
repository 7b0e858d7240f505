//! Requests built from templates as the load runs (`--data FILE.csv`, `{{column}}` and the built-ins in the URL,
//! headers and body): for users who do not write Lua. The plan reads the file and the templates once; each load
//! thread fills them per request into the bytes it sends.

pub mod data;
pub mod text;
pub mod words;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{RngExt as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::protocol::http::request::{RequestParts, write_request};
use data::{Row, Rows};
use text::{Hole, Part, Text};

/// How rows are taken (`--data-order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row after row, all clients taking from one cursor, from the first again after the last.
    Sequential,
    /// A row drawn at random for each request.
    Random,
    /// Row after row, each used once: the run ends when they run out.
    Unique,
}

impl Order {
    pub fn parse(text: &str) -> Result<Order, String> {
        match text {
            "sequential" => Ok(Order::Sequential),
            "random" => Ok(Order::Random),
            "unique" => Ok(Order::Unique),
            other => Err(format!("'{other}': give sequential, random or unique")),
        }
    }
}

/// The rows and counters every filler of a run shares: the next row for sequential and unique orders (a unique
/// row is never taken twice in a run, whatever the threads and steps), and the last `{{seq}}` given.
#[derive(Debug)]
pub struct Feed {
    /// Shared with what checks the keys a run will write before it starts.
    pub rows: Option<Arc<Rows>>,
    pub order: Order,
    cursor: AtomicU64,
    seq: AtomicU64,
}

impl Feed {
    pub fn new(rows: Option<Rows>, order: Order) -> Feed {
        Feed { rows: rows.map(Arc::new), order, cursor: AtomicU64::new(0), seq: AtomicU64::new(0) }
    }

    /// The row for the next request; None when a unique order has used every row.
    pub fn row(&self, rng: &mut ChaCha8Rng) -> Option<Row<'_>> {
        let Some(rows) = &self.rows else { return Some(Row::NONE) };
        Some(rows.row(self.index(rng)?))
    }

    /// The index of the next request's row (0 without rows); None when a unique order has used every row.
    pub fn index(&self, rng: &mut ChaCha8Rng) -> Option<usize> {
        let Some(rows) = &self.rows else { return Some(0) };
        let n = rows.len() as u64;
        let i = match self.order {
            Order::Sequential => self.cursor.fetch_add(1, Ordering::Relaxed) % n,
            Order::Unique => Some(self.cursor.fetch_add(1, Ordering::Relaxed)).filter(|i| *i < n)?,
            Order::Random => rng.random_range(0..n),
        };
        Some(i as usize)
    }

    /// A unique order has used every row: no request is left to make.
    pub fn exhausted(&self) -> bool {
        match (&self.rows, self.order) {
            (Some(rows), Order::Unique) => self.cursor.load(Ordering::Relaxed) >= rows.len() as u64,
            _ => false,
        }
    }

    /// The filler of one request, from `row` (taken with [`row`](Self::row)).
    pub fn fill<'a>(&'a self, row: Row<'a>, rng: &'a mut ChaCha8Rng) -> Fill<'a> {
        Fill { row, rng, seq: &self.seq, seq_now: None }
    }
}

/// A request with holes, and the rows that fill them.
#[derive(Debug)]
pub struct Template {
    pub method: String,
    pub target: Text,
    pub host: String,
    /// Header names are fixed; values may hold holes.
    pub headers: Vec<(String, Text)>,
    pub body: Text,
    /// `--no-keepalive`.
    pub close: bool,
    pub feed: Feed,
    /// `--http2`: each request is built as HTTP/2 frames, with `:scheme https` when true.
    pub http2: Option<bool>,
    /// A WebSocket run: each request is the filled body alone, the message its link frames.
    pub messages: bool,
    /// A WebSocket run whose headers hold templates: filled with each message, for the upgrade of the connection
    /// it opens.
    pub header_holes: bool,
    /// Bodies made once per distinct row before the load (a gRPC message, encoded from its filled JSON): each
    /// request sends its row's, in place of the filled `body`.
    pub row_bodies: Option<RowBodies>,
    /// Each request's body made from its filled `body` (a gRPC message encoded from the JSON its built-ins and
    /// row filled); the row's values go into the JSON as a string's characters.
    pub body_encoder: Option<Box<dyn EncodeBody>>,
    /// The path and the headers hold no holes: over HTTP/2 a thread builds the HEADERS once per body length.
    fixed_head: bool,
}

/// Makes a request's body from its filled template text, as the load runs: a load thread's own encoder each.
pub trait EncodeBody: Send + Sync + std::fmt::Debug {
    /// A load thread's encoder (it may keep what it learnt from one request for the next).
    fn thread(&self) -> Box<dyn ThreadEncoder>;
}

/// One load thread's body encoder.
pub trait ThreadEncoder: Send {
    /// The body of `filled` into `out` (all of it replaced); `holes` are where each hole's value lies in `filled`,
    /// in the template's order. An error says why in a line ending the run.
    fn encode(&mut self, filled: &[u8], holes: &[std::ops::Range<usize>], out: &mut Vec<u8>) -> Result<(), String>;
}

/// The body of each row, each distinct one held once.
#[derive(Debug, Default)]
pub struct RowBodies {
    pub bodies: Vec<Vec<u8>>,
    /// For each row, its body's index in `bodies`.
    pub of_row: Vec<u32>,
}

impl Template {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        method: &str,
        target: Text,
        host: String,
        headers: Vec<(String, Text)>,
        body: Text,
        close: bool,
        rows: Option<Rows>,
        order: Order,
    ) -> Template {
        let feed = Feed::new(rows, order);
        let fixed_head = !target.has_holes() && headers.iter().all(|(_, v)| !v.has_holes());
        Template {
            method: method.to_string(),
            target,
            host,
            headers,
            body,
            close,
            feed,
            http2: None,
            messages: false,
            header_holes: false,
            row_bodies: None,
            body_encoder: None,
            fixed_head,
        }
    }

    /// Requests built as WebSocket messages: the body alone (the URL and headers went in the upgrade).
    pub fn messages_only(mut self) -> Template {
        self.messages = true;
        self.header_holes = self.headers.iter().any(|(_, v)| v.has_holes());
        self
    }

    /// Each request's body its row's, made before the load, in place of the filled `body`.
    pub fn with_row_bodies(mut self, bodies: RowBodies) -> Template {
        self.row_bodies = Some(bodies);
        self
    }

    /// Each request's body made by `encoder` from its filled text, whose row values are JSON string characters.
    pub fn with_body_encoder(mut self, encoder: Box<dyn EncodeBody>) -> Template {
        self.body_encoder = Some(encoder);
        self
    }

    /// Requests built as HTTP/2 frames (`--http2`), for an `https` URL or a plain one.
    pub fn over_http2(mut self, https: bool) -> Template {
        self.http2 = Some(https);
        self
    }

    /// A thread's filler, with its own random numbers.
    pub fn thread(self: &Arc<Self>, seed: u64) -> ThreadTemplate {
        ThreadTemplate {
            template: Arc::clone(self),
            rng: ChaCha8Rng::seed_from_u64(seed),
            target: Vec::new(),
            headers: self.headers.iter().map(|(n, _)| (n.clone(), String::new())).collect(),
            body: Vec::new(),
            encoder: self.body_encoder.as_ref().map(|e| e.thread()),
            holes: Vec::new(),
            encoded: Vec::new(),
            head: None,
            busy: Duration::ZERO,
        }
    }
}

/// One load thread's filler: buffers reused from request to request.
pub struct ThreadTemplate {
    template: Arc<Template>,
    rng: ChaCha8Rng,
    target: Vec<u8>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The thread's body encoder, the holes' values in `body` it is given, and the body it made.
    encoder: Option<Box<dyn ThreadEncoder>>,
    holes: Vec<std::ops::Range<usize>>,
    encoded: Vec<u8>,
    /// HTTP/2 with a fixed path and headers: the HEADERS frames built for a body of this length.
    head: Option<(usize, Vec<u8>)>,
    /// Time spent filling templates.
    pub busy: Duration,
}

/// Where a value goes: a request target is percent-encoded where it would end the request line, a header value
/// loses CR, LF and NUL (a second header or request must not be smuggled in), a body takes any byte, and JSON
/// takes it as a string's characters (a quote or a newline escaped: it cannot end the string or the document).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    Target,
    Header,
    Body,
    Json,
}

impl ThreadTemplate {
    /// The next request's bytes into `wire`; false when a unique order has used every row, an error when the body
    /// encoder cannot make the filled body into one (the run ends, saying why).
    pub fn next(&mut self, wire: &mut Vec<u8>) -> Result<bool, String> {
        let t0 = Instant::now();
        let t = &*self.template;
        let Some(index) = t.feed.index(&mut self.rng) else { return Ok(false) };
        let row = t.feed.rows.as_ref().map_or(Row::NONE, |r| r.row(index));
        let mut ctx = t.feed.fill(row, &mut self.rng);
        if t.messages {
            wire.clear();
            ctx.fill(&t.body, Dest::Body, wire);
            // A WebSocket connection's upgrade takes the headers of the message that opens it, from the same row.
            if t.header_holes {
                fill_headers(t, &mut self.headers, &mut ctx);
            }
            self.busy += t0.elapsed();
            return Ok(true);
        }
        // A fixed path and headers are filled once: the HEADERS built from them are kept (HTTP/2).
        let head_kept = t.fixed_head && t.http2.is_some() && self.head.is_some();
        if !head_kept {
            self.target.clear();
            ctx.fill(&t.target, Dest::Target, &mut self.target);
            fill_headers(t, &mut self.headers, &mut ctx);
        }
        let body = match &t.row_bodies {
            Some(b) => &b.bodies[b.of_row[index] as usize],
            None => {
                self.body.clear();
                match &mut self.encoder {
                    None => {
                        ctx.fill(&t.body, Dest::Body, &mut self.body);
                        &self.body
                    }
                    Some(encoder) => {
                        self.holes.clear();
                        ctx.fill_marking(&t.body, Dest::Json, &mut self.body, &mut self.holes);
                        encoder.encode(&self.body, &self.holes, &mut self.encoded)?;
                        &self.encoded
                    }
                }
            }
        };
        let target = String::from_utf8_lossy(&self.target);
        wire.clear();
        let parts = RequestParts {
            method: &t.method,
            target: &target,
            host: &t.host,
            headers: &self.headers,
            body,
            close: t.close,
        };
        match t.http2 {
            Some(https) if t.fixed_head => {
                use crate::protocol::h2::request::{write_data, write_headers};
                if self.head.as_ref().is_none_or(|(len, _)| *len != body.len()) {
                    let mut head = Vec::new();
                    write_headers(&parts, https, &mut head);
                    self.head = Some((body.len(), head));
                }
                wire.extend_from_slice(self.head.as_ref().map_or(&[][..], |(_, h)| h));
                write_data(wire, body, true);
            }
            Some(https) => crate::protocol::h2::request::write_request(&parts, https, wire),
            None => write_request(&parts, wire),
        }
        self.busy += t0.elapsed();
        Ok(true)
    }

    /// A WebSocket run's headers as the last message's row and built-ins filled them, when they hold templates.
    pub fn filled_headers(&self) -> Option<&[(String, String)]> {
        self.template.header_holes.then_some(&self.headers[..])
    }

    pub fn expects_no_body(&self) -> bool {
        self.template.method == "HEAD"
    }

    pub fn idempotent(&self) -> bool {
        matches!(self.template.method.as_str(), "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE")
    }
}

/// The header values of the request being made, into `headers`.
fn fill_headers(template: &Template, headers: &mut [(String, String)], ctx: &mut Fill<'_>) {
    let mut value = Vec::new();
    for ((_, text), (_, out)) in template.headers.iter().zip(headers.iter_mut()) {
        value.clear();
        ctx.fill(text, Dest::Header, &mut value);
        out.clear();
        out.push_str(&String::from_utf8_lossy(&value));
    }
}

/// What one request's holes are filled from.
pub struct Fill<'a> {
    row: Row<'a>,
    rng: &'a mut ChaCha8Rng,
    seq: &'a AtomicU64,
    /// `{{seq}}` is one number per request, however many times it appears.
    seq_now: Option<u64>,
}

impl Fill<'_> {
    fn fill(&mut self, text: &Text, into: Dest, out: &mut Vec<u8>) {
        self.fill_noting(text, into, out, None);
    }

    /// As [`fill`](Self::fill), noting where each hole's value lies in `out`.
    fn fill_marking(&mut self, text: &Text, into: Dest, out: &mut Vec<u8>, holes: &mut Vec<std::ops::Range<usize>>) {
        self.fill_noting(text, into, out, Some(holes));
    }

    fn fill_noting(
        &mut self,
        text: &Text,
        into: Dest,
        out: &mut Vec<u8>,
        mut holes: Option<&mut Vec<std::ops::Range<usize>>>,
    ) {
        for part in &text.parts {
            let start = out.len();
            match part {
                Part::Literal(b) => {
                    out.extend_from_slice(b);
                    continue;
                }
                Part::Hole(Hole::Column(i)) => put(self.row[*i].as_bytes(), into, out),
                Part::Hole(h) => self.hole(h, out),
            }
            if let Some(holes) = holes.as_deref_mut() {
                holes.push(start..out.len());
            }
        }
    }

    /// One hole's value, as it is (a key-value protocol's argument takes any byte; its encoder frames it).
    pub fn hole(&mut self, hole: &Hole, out: &mut Vec<u8>) {
        match hole {
            Hole::Column(i) => out.extend_from_slice(self.row[*i].as_bytes()),
            Hole::Seq => {
                let n = *self.seq_now.get_or_insert_with(|| self.seq.fetch_add(1, Ordering::Relaxed) + 1);
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
            Hole::Rand(lo, hi) => {
                let n = self.rng.random_range(*lo..=*hi);
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
            Hole::Uuid => uuid(self.rng, out),
            Hole::Words(lo, hi) => {
                let n = self.rng.random_range(*lo..=*hi);
                words::push(n, self.rng, out);
            }
            Hole::NowMs => {
                let ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
            }
        }
    }
}

/// A value from a row, made safe for where it goes.
fn put(value: &[u8], into: Dest, out: &mut Vec<u8>) {
    match into {
        Dest::Body => out.extend_from_slice(value),
        Dest::Json => out.extend_from_slice(json_string_chars(&String::from_utf8_lossy(value)).as_bytes()),
        Dest::Header => out.extend(value.iter().filter(|b| !matches!(b, b'\r' | b'\n' | 0))),
        Dest::Target => {
            for &b in value {
                if b.is_ascii_graphic() && b != b'#' {
                    out.push(b);
                } else {
                    out.extend_from_slice(format!("%{b:02X}").as_bytes());
                }
            }
        }
    }
}

/// `value` as the characters of a JSON string (a quote or a newline escaped, without the enclosing quotes): a
/// row's value in a JSON template cannot end its string or the document.
pub fn json_string_chars(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_string()
}

/// A random version 4 UUID, as text.
fn uuid(rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
    let mut b: [u8; 16] = rng.random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(target: &str, rows: Option<Rows>, order: Order) -> Arc<Template> {
        let cols = rows.as_ref().map(|r| r.columns.clone());
        let t = Text::parse(target, cols.as_deref()).unwrap();
        let h = vec![("X-Id".to_string(), Text::parse("{{seq}}", None).unwrap())];
        Arc::new(Template::new("GET", t, "h".into(), h, Text::default(), false, rows, order))
    }

    fn rows(n: usize) -> Rows {
        Rows::new(vec!["id".into()], (0..n).map(|i| vec![format!("r {i}")]).collect())
    }

    #[test]
    fn unique_rows_are_used_once_then_the_filler_stops() {
        let t = template("/{{id}}", Some(rows(3)), Order::Unique);
        let mut f = t.thread(1);
        let mut wire = Vec::new();
        let mut seen = Vec::new();
        while f.next(&mut wire).unwrap() {
            let text = String::from_utf8(wire.clone()).unwrap();
            seen.push(text.lines().next().unwrap().to_string());
        }
        assert_eq!(seen, ["GET /r%200 HTTP/1.1", "GET /r%201 HTTP/1.1", "GET /r%202 HTTP/1.1"]);
    }

    #[test]
    fn builtins_fill_numbers_and_uuids() {
        let t = template("/{{seq}}/{{uuid}}/{{rand 5 5}}", None, Order::Sequential);
        let mut f = t.thread(1);
        let mut wire = Vec::new();
        assert!(f.next(&mut wire).unwrap());
        let text = String::from_utf8(wire.clone()).unwrap();
        let line: Vec<&str> = text.lines().next().unwrap().split('/').collect();
        assert_eq!(line[1], "1");
        assert_eq!(line[2].len(), 36);
        assert_eq!(&line[2][14..15], "4");
        assert!(line[3].starts_with("5 "));
        assert!(text.contains("X-Id: 1\r\n"), "{text}");
        f.next(&mut wire).unwrap();
        assert!(String::from_utf8(wire).unwrap().starts_with("GET /2/"));
    }

    /// Takes the filled JSON as the body, in brackets; refuses "stop".
    #[derive(Debug)]
    struct Bracketed;

    impl EncodeBody for Bracketed {
        fn thread(&self) -> Box<dyn ThreadEncoder> {
            Box::new(Bracketed)
        }
    }

    impl ThreadEncoder for Bracketed {
        fn encode(&mut self, filled: &[u8], holes: &[std::ops::Range<usize>], out: &mut Vec<u8>) -> Result<(), String> {
            if filled.windows(4).any(|w| w == b"stop") {
                return Err("no stop".into());
            }
            assert_eq!(holes.len(), 2, "the row's value and {{seq}}");
            assert_eq!(&filled[holes[0].clone()], br#"say \"hi\"\n"#, "the value as JSON string characters");
            assert_eq!(&filled[holes[1].clone()], b"1");
            *out = [b"[", filled, b"]"].concat();
            Ok(())
        }
    }

    #[test]
    fn an_encoded_body_takes_row_values_as_json_string_characters() {
        let rows = Rows::new(vec!["v".into()], vec![vec!["say \"hi\"\n".into()], vec!["stop".into()]]);
        let body = Text::parse(r#"{"v":"{{v}}","n":{{seq}}}"#, Some(&["v".to_string()])).unwrap();
        let t = Template::new(
            "POST",
            Text::parse("/", None).unwrap(),
            "h".into(),
            vec![],
            body,
            false,
            Some(rows),
            Order::Sequential,
        );
        let t = Arc::new(t.with_body_encoder(Box::new(Bracketed)));
        let mut f = t.thread(1);
        let mut wire = Vec::new();
        assert!(f.next(&mut wire).unwrap());
        let text = String::from_utf8(wire.clone()).unwrap();
        assert_eq!(text.split("\r\n\r\n").nth(1), Some(r#"[{"v":"say \"hi\"\n","n":1}]"#), "{text}");
        assert_eq!(f.next(&mut wire), Err("no stop".to_string()), "an encoder's refusal ends the filler, saying why");
    }

    #[test]
    fn http2_with_a_fixed_path_and_headers_builds_its_headers_once_per_body_length_and_sends_the_same_bytes() {
        let headers = vec![("X-A".to_string(), Text::parse("1", None).unwrap())];
        let body = Text::parse("n={{seq}}", None).unwrap();
        let t = Template::new(
            "POST",
            Text::parse("/x", None).unwrap(),
            "h".into(),
            headers,
            body,
            false,
            None,
            Order::Sequential,
        );
        let t = Arc::new(t.over_http2(false));
        let mut f = t.thread(1);
        let mut wire = Vec::new();
        let fixed = [("X-A".to_string(), "1".to_string())];
        // 9 then 10 digits: the content-length changes, so do the HEADERS.
        for n in 1..=12 {
            assert!(f.next(&mut wire).unwrap());
            let body = format!("n={n}");
            let parts = RequestParts {
                method: "POST",
                target: "/x",
                host: "h",
                headers: &fixed,
                body: body.as_bytes(),
                close: false,
            };
            let mut want = Vec::new();
            crate::protocol::h2::request::write_request(&parts, false, &mut want);
            assert_eq!(wire, want, "request {n}");
        }
    }
}
