//! HTTP/2 request frames, built once per request and endpoint before the run (or per request from a template): a HEADERS frame (with CONTINUATION
//! frames past 16 KiB) whose block holds literals the peer does not index, then the body's DATA frames. The
//! stream identifier is left zero and written in by the engine as the request goes out (`set_stream`).

use super::frame::{self, CONTINUATION, DATA, DEFAULT_MAX_FRAME, END_HEADERS, END_STREAM, HEADERS, Head};
use super::hpack::{STATIC, put_integer};
use crate::protocol::PreparedRequest;
use crate::protocol::http::RequestParts;

/// Headers HTTP/2 forbids (RFC 9113 8.2.2): the connection's business, not a request's.
const CONNECTION_HEADERS: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// The request's frames. `https`: the `:scheme`. A `Host` header given by the user becomes `:authority`.
pub fn build_request(parts: &RequestParts<'_>, https: bool) -> PreparedRequest {
    let mut out = Vec::new();
    write_request(parts, https, &mut out);
    PreparedRequest::new(out.into(), parts.method)
}

/// Appends the request's frames to `out` (templates fill one buffer per request, reused).
pub fn write_request(parts: &RequestParts<'_>, https: bool, out: &mut Vec<u8>) {
    write_headers(parts, https, out);
    write_data(out, parts.body, true);
}

/// Appends the request's HEADERS (and CONTINUATION) frames alone, END_STREAM on them when the body is empty: what
/// a template whose path and headers hold no holes builds once per body length, then sends with each body.
pub fn write_headers(parts: &RequestParts<'_>, https: bool, out: &mut Vec<u8>) {
    let has = |name: &str| parts.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let authority = parts.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")).map_or(parts.host, |(_, v)| v);
    let mut block = Vec::with_capacity(64 + parts.target.len());
    field(&mut block, ":method", parts.method);
    field(&mut block, ":scheme", if https { "https" } else { "http" });
    field(&mut block, ":authority", authority);
    field(&mut block, ":path", parts.target);
    if !has("user-agent") {
        field(&mut block, "user-agent", concat!("hakaru/", env!("CARGO_PKG_VERSION")));
    }
    for (name, value) in parts.headers {
        let name = name.to_ascii_lowercase();
        // TE may only say "trailers" in HTTP/2 (RFC 9113 8.2.2): any other value makes the request malformed.
        let te_not_trailers = name == "te" && !value.trim().eq_ignore_ascii_case("trailers");
        if !CONNECTION_HEADERS.contains(&name.as_str()) && !te_not_trailers {
            field(&mut block, &name, value);
        }
    }
    let method_has_body = matches!(parts.method, "POST" | "PUT" | "PATCH");
    if (!parts.body.is_empty() || method_has_body) && !has("content-length") {
        field(&mut block, "content-length", &parts.body.len().to_string());
    }
    out.reserve(block.len() + parts.body.len() + 4 * frame::HEAD);
    let end_stream = if parts.body.is_empty() { END_STREAM } else { 0 };
    let mut chunks = block.chunks(DEFAULT_MAX_FRAME).peekable();
    let mut kind = HEADERS;
    let mut flags = end_stream;
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        Head { len: chunk.len(), kind, flags: flags | if last { END_HEADERS } else { 0 }, stream: 0 }.write(out);
        out.extend_from_slice(chunk);
        (kind, flags) = (CONTINUATION, 0);
    }
}

/// Appends `body` as DATA frames of at most 16 KiB, the last with END_STREAM when `end_stream`.
pub fn write_data(out: &mut Vec<u8>, body: &[u8], end_stream: bool) {
    let mut data = body.chunks(DEFAULT_MAX_FRAME).peekable();
    while let Some(chunk) = data.next() {
        let last = data.peek().is_none() && end_stream;
        Head { len: chunk.len(), kind: DATA, flags: if last { END_STREAM } else { 0 }, stream: 0 }.write(out);
        out.extend_from_slice(chunk);
    }
}

/// The body of prepared frames: their DATA payloads, joined.
pub fn body_of(frames: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(sizes(frames).body);
    let mut at = 0;
    while let Some(head) = frame_at(frames, at) {
        if head.kind == DATA {
            body.extend_from_slice(&frames[at + frame::HEAD..(at + frame::HEAD + head.len).min(frames.len())]);
        }
        at += frame::HEAD + head.len;
    }
    body
}

/// One header: indexed when the static table holds it whole (`:method GET`), else a literal without indexing,
/// its name indexed when the static table has it. No Huffman coding: the block is built once, and the peer's
/// decoding of raw strings is the cheaper.
fn field(block: &mut Vec<u8>, name: &str, value: &str) {
    if let Some(i) = STATIC.iter().position(|&(n, v)| n == name && v == value && !v.is_empty()) {
        put_integer(block, 0x80, 7, i + 1);
        return;
    }
    match STATIC.iter().position(|&(n, _)| n == name) {
        Some(i) => put_integer(block, 0x00, 4, i + 1),
        None => {
            block.push(0);
            put_integer(block, 0, 7, name.len());
            block.extend_from_slice(name.as_bytes());
        }
    }
    put_integer(block, 0, 7, value.len());
    block.extend_from_slice(value.as_bytes());
}

/// What the engine needs to know of prepared frames: the header block's bytes (HEADERS and CONTINUATION
/// payloads) and the body's (DATA payloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sizes {
    pub header_block: usize,
    pub body: usize,
}

/// The header of the frame at `at`, when a whole header is there.
pub fn frame_at(frames: &[u8], at: usize) -> Option<Head> {
    frames.get(at..at + frame::HEAD).map(Head::read)
}

/// The sizes of prepared frames.
pub fn sizes(frames: &[u8]) -> Sizes {
    let mut sizes = Sizes::default();
    let mut at = 0;
    while let Some(head) = frame_at(frames, at) {
        if head.kind == DATA {
            sizes.body += head.len;
        } else {
            sizes.header_block += head.len;
        }
        at += frame::HEAD + head.len;
    }
    sizes
}

/// Where the body's DATA frames begin in prepared frames (their length when there is no body).
pub fn body_start(frames: &[u8]) -> usize {
    let mut at = 0;
    while let Some(head) = frame_at(frames, at)
        && head.kind != DATA
    {
        at += frame::HEAD + head.len;
    }
    at.min(frames.len())
}

/// Writes `stream` into every frame of `frames` (prepared with stream 0) and returns their sizes.
pub fn set_stream(frames: &mut [u8], stream: u32) -> Sizes {
    let mut at = 0;
    while let Some(head) = frame_at(frames, at) {
        frames[at + 5..at + 9].copy_from_slice(&stream.to_be_bytes());
        at += frame::HEAD + head.len;
    }
    sizes(frames)
}

#[cfg(test)]
mod tests {
    use super::super::hpack::Decoder;
    use super::*;

    fn decoded(frames: &[u8]) -> Vec<(String, String)> {
        let head = Head::read(frames);
        let mut out = Vec::new();
        Decoder::default()
            .decode(&frames[9..9 + head.len], |n, v| {
                out.push((String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap()))
            })
            .unwrap();
        out
    }

    #[test]
    fn a_get_is_one_headers_frame_ending_the_stream() {
        let headers = vec![("Host".to_string(), "virtual".to_string()), ("Connection".into(), "keep-alive".into())];
        let p = build_request(
            &RequestParts { method: "GET", target: "/a?b", host: "h:81", headers: &headers, ..Default::default() },
            false,
        );
        let head = Head::read(&p.bytes);
        assert_eq!((head.kind, head.flags, head.stream), (HEADERS, END_HEADERS | END_STREAM, 0));
        assert_eq!(p.bytes.len(), 9 + head.len);
        let h = decoded(&p.bytes);
        let ua = format!("hakaru/{}", env!("CARGO_PKG_VERSION"));
        let want = [
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "virtual"),
            (":path", "/a?b"),
            ("user-agent", &ua),
        ];
        assert_eq!(h, want.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>());
        assert_eq!(&p.bytes[9..11], [0x82, 0x86], ":method GET and :scheme http indexed whole");
    }

    #[test]
    fn te_goes_only_as_trailers() {
        for (value, kept) in [("trailers", true), ("gzip", false), ("Trailers", true)] {
            let headers = vec![("TE".to_string(), value.to_string())];
            let p = build_request(&RequestParts { headers: &headers, ..Default::default() }, false);
            assert_eq!(decoded(&p.bytes).iter().any(|(n, _)| n == "te"), kept, "TE: {value}");
        }
    }

    #[test]
    fn a_post_body_goes_in_data_frames_cut_to_16_kib_and_the_stream_is_written_in() {
        let body = vec![b'x'; 20_000];
        let p = build_request(
            &RequestParts { method: "POST", target: "/", host: "h", body: &body, ..Default::default() },
            true,
        );
        let mut frames = p.bytes.to_vec();
        let sizes = set_stream(&mut frames, 7);
        assert_eq!(sizes.body, 20_000);
        let first = Head::read(&frames);
        assert_eq!((first.flags & END_STREAM, first.stream), (0, 7));
        assert!(decoded(&frames).contains(&("content-length".into(), "20000".into())));
        let second = Head::read(&frames[9 + first.len..]);
        assert_eq!((second.kind, second.len, second.flags, second.stream), (DATA, 16_384, 0, 7));
        let third = Head::read(&frames[18 + first.len + second.len..]);
        assert_eq!((third.kind, third.len, third.flags), (DATA, 20_000 - 16_384, END_STREAM));
        assert_eq!(sizes.header_block, first.len);
    }
}
