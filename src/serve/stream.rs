//! `?events=N`: a streamed answer whose timing is known exactly, for `--events`' checks: the head at once, the
//! first event `first` after the request, then one every `gap` (each sent at its own instant from the start, so
//! gaps do not drift), as SSE `data:` lines, NDJSON lines, or an OpenAI-style token stream, chunked or
//! close-delimited; `cut=K` ends the connection after K events without the body's end (a stream cut), `done=0` ends
//! a token stream without `[DONE]`, `line=N` makes each event's line N bytes longer, `usage=N` ends a token stream
//! with a `usage` object saying N completion tokens, `tail=D` sends the body's last chunk in a write of its own, D
//! after the last event (as uvicorn and aiohttp end a stream: `[DONE]`, then the last chunk).

use std::io::Write;
use std::time::Duration;

/// The longest stream asked for: long enough for a stream that never ends within a test's timeout.
const MOST_EVENTS: u64 = 100_000_000;
/// The widest padding of an event's line (`line=`).
const MOST_PADDING: u64 = 16 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    Sse,
    Ndjson,
    Tokens,
}

/// How a streamed answer is sent.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamPlan {
    /// `events=` was given: without it the other parameters ask for nothing (they may be a client's own).
    pub asked: bool,
    pub events: u64,
    pub first: Duration,
    pub gap: Duration,
    pub kind: StreamKind,
    /// Close-delimited (no length, no chunks) rather than chunked.
    pub close_delimited: bool,
    /// Close the connection after this many events, without the body's end.
    pub cut: Option<u64>,
    /// A token stream ends with `data: [DONE]` (default yes).
    pub done: bool,
    /// A token stream's `usage.completion_tokens`, sent before `[DONE]` when given.
    pub usage: Option<u64>,
    /// Bytes added to each event's line.
    pub padding: u64,
    /// The body's last chunk in a write of its own, this long after the last event (`tail=`).
    pub tail: Option<Duration>,
    /// A token stream of `/v1/completions`: each chunk's text in `choices[0].text`, not in a chat delta.
    pub completions: bool,
    /// `/v1/...` without `"stream": true`: one JSON answer when the last token would have gone out.
    pub whole: bool,
    /// The prompt's tokens, as the usage object says them.
    pub prompt_tokens: u64,
}

impl Default for StreamPlan {
    fn default() -> Self {
        StreamPlan {
            asked: false,
            events: 0,
            first: Duration::ZERO,
            gap: Duration::ZERO,
            kind: StreamKind::Sse,
            close_delimited: false,
            cut: None,
            done: true,
            usage: None,
            padding: 0,
            tail: None,
            completions: false,
            whole: false,
            prompt_tokens: 1,
        }
    }
}

fn count(value: &str, most: u64) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if n <= most => Ok(n),
        _ => Err(format!("use a whole number up to {most}")),
    }
}

/// Applies one query parameter if it is a stream's; None when `name` is not one of them.
pub fn apply(plan: &mut Option<Box<StreamPlan>>, name: &str, value: &str) -> Option<Result<(), String>> {
    let known = ["events", "gap", "first", "kind", "framing", "cut", "done", "usage", "line", "tail"];
    if !known.contains(&name) {
        return None;
    }
    let p = plan.get_or_insert_with(Box::default);
    let d = |v: &str| crate::base::units::parse_duration(v);
    Some(match name {
        "events" => count(value, MOST_EVENTS).map(|n| (p.events, p.asked) = (n, true)),
        "gap" => d(value).map(|v| p.gap = v),
        "first" => d(value).map(|v| p.first = v),
        "kind" => match value {
            "sse" => Ok(StreamKind::Sse),
            "ndjson" => Ok(StreamKind::Ndjson),
            "tokens" => Ok(StreamKind::Tokens),
            _ => Err("use sse, ndjson or tokens".into()),
        }
        .map(|k| p.kind = k),
        "framing" => match value {
            "chunked" => Ok(false),
            "close" => Ok(true),
            _ => Err("use chunked or close".into()),
        }
        .map(|c| p.close_delimited = c),
        "cut" => count(value, MOST_EVENTS).map(|n| p.cut = Some(n)),
        "done" => {
            p.done = value != "0";
            Ok(())
        }
        "usage" => count(value, MOST_EVENTS).map(|n| p.usage = Some(n)),
        "tail" => d(value).map(|v| p.tail = Some(v)),
        _ => count(value, MOST_PADDING).map(|n| p.padding = n),
    })
}

impl StreamPlan {
    /// The answer's head: chunked, or close-delimited with `Connection: close`.
    pub fn head(&self, out: &mut Vec<u8>, keep_alive: bool) {
        let content_type = match self.kind {
            StreamKind::Ndjson => "application/x-ndjson",
            StreamKind::Sse | StreamKind::Tokens => "text/event-stream",
        };
        let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\n");
        if self.close_delimited || !keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        if !self.close_delimited {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// What is sent with the head: a token stream's first chunk names the role and carries no text (as OpenAI's).
    pub fn opening(&self, out: &mut Vec<u8>) {
        if self.kind == StreamKind::Tokens && !self.completions {
            self.framed(out, b"data: {\"id\":\"hakaru\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
        }
    }

    /// Event `i`, framed.
    pub fn event(&self, out: &mut Vec<u8>, i: u64) {
        let pad = "x".repeat(self.padding as usize);
        let text = match self.kind {
            StreamKind::Sse => format!("data: event {i}{pad}\n\n"),
            StreamKind::Ndjson => format!("{{\"n\":{i},\"pad\":\"{pad}\"}}\n"),
            StreamKind::Tokens if self.completions => format!(
                "data: {{\"id\":\"hakaru\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"tok{pad} \"}}]}}\n\n"
            ),
            StreamKind::Tokens => format!(
                "data: {{\"id\":\"hakaru\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{pad} \"}}}}]}}\n\n"
            ),
        };
        self.framed(out, text.as_bytes());
    }

    /// The stream's end after its last event: a token stream's usage and `[DONE]`, then (unless `tail=` sends it
    /// apart) the last chunk.
    pub fn end(&self, out: &mut Vec<u8>) {
        if self.kind == StreamKind::Tokens {
            if self.usage.is_some() {
                let usage = format!("data: {{\"id\":\"hakaru\",\"choices\":[],{}}}\n\n", self.usage_json());
                self.framed(out, usage.as_bytes());
            }
            if self.done {
                self.framed(out, b"data: [DONE]\n\n");
            }
        }
        if self.tail.is_none() {
            self.last_chunk(out);
        }
    }

    /// The `"usage":{...}` member: the prompt's tokens and the answer's (`usage=`, or all of them).
    pub fn usage_json(&self) -> String {
        let (prompt, completion) = (self.prompt_tokens, self.usage.unwrap_or(self.events));
        format!(
            "\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}}}",
            prompt.saturating_add(completion)
        )
    }

    /// The chunked body's last chunk (nothing when close-delimited).
    pub fn last_chunk(&self, out: &mut Vec<u8>) {
        if !self.close_delimited {
            out.extend_from_slice(b"0\r\n\r\n");
        }
    }

    fn framed(&self, out: &mut Vec<u8>, bytes: &[u8]) {
        if self.close_delimited {
            out.extend_from_slice(bytes);
        } else {
            let _ = write!(out, "{:x}\r\n", bytes.len());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_token_stream_is_framed_and_ends_with_usage_and_done() {
        let mut p = None;
        for (n, v) in [("events", "2"), ("kind", "tokens"), ("usage", "9"), ("gap", "10ms")] {
            apply(&mut p, n, v).expect("a stream's").expect("valid");
        }
        assert!(apply(&mut p, "size", "1").is_none());
        assert!(apply(&mut p, "kind", "x").expect("a stream's").is_err());
        let p = p.expect("a plan");
        assert_eq!((p.events, p.gap), (2, Duration::from_millis(10)));
        let mut out = Vec::new();
        p.head(&mut out, true);
        p.event(&mut out, 0);
        p.end(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Transfer-Encoding: chunked\r\n\r\n"), "{text}");
        assert!(text.contains("\"completion_tokens\":9") && text.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"), "{text}");
    }
}
