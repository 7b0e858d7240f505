//! HTTP/3's own part of a request (RFC 9114): the plan's HTTP/1.1 request read once into the fields an HTTP/3
//! request carries (method, `:authority` from its Host, path, headers without the connection-specific ones, body),
//! and the names of HTTP/3's error codes. The framing and QPACK are the `h3` crate's (engine/h3.rs).

use bytes::Bytes;

/// One request as HTTP/3 sends it: its head (cloned for each request) and its body (shared).
#[derive(Clone, Debug)]
pub struct Request {
    pub head: http::Request<()>,
    pub body: Bytes,
}

/// Headers HTTP/3 forbids in a request (RFC 9114 4.2: connection-specific fields), and Host, which becomes
/// `:authority`.
const LEFT_OUT: [&str; 7] =
    ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"];

/// The most header lines a request the plan built may have (the plan checks headers; this only bounds the parse).
const MOST_HEADERS: usize = 256;

/// Reads an HTTP/1.1 request the plan built (`bytes`) as an HTTP/3 request to `https://AUTHORITY`. Fails only on
/// bytes the plan would not build: the message names what is wrong.
pub fn from_http1(bytes: &Bytes) -> Result<Request, String> {
    let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("a request head cut short".into()),
        Err(e) => return Err(format!("a request head that does not parse ({e})")),
    };
    let (Some(method), Some(path)) = (parsed.method, parsed.path) else {
        return Err("a request without a method or a path".into());
    };
    let authority = parsed
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .ok_or("a request without a Host header")?;
    let uri = format!("https://{authority}{path}");
    let mut builder = http::Request::builder().method(method).uri(uri.as_str());
    for h in parsed.headers.iter() {
        if LEFT_OUT.iter().any(|n| h.name.eq_ignore_ascii_case(n)) {
            continue;
        }
        builder = builder.header(h.name, h.value);
    }
    let head = builder.body(()).map_err(|e| format!("a request HTTP/3 cannot carry ({e})"))?;
    Ok(Request { head, body: bytes.slice(head_len..) })
}

/// The name of an HTTP/3 error code (RFC 9114 8.1) or a QPACK one (RFC 9204 6); None for another code (a
/// reserved one for greasing, a QUIC transport code).
pub fn code_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return None,
    })
}

/// A code in words: its name, or its number in hex.
pub fn code_text(code: u64) -> String {
    match code_name(code) {
        Some(name) => name.to_string(),
        None => format!("code 0x{code:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_becomes_an_http3_one_without_connection_headers() {
        let wire = Bytes::from_static(
            b"POST /a?b=1 HTTP/1.1\r\nHost: example.com:8443\r\nUser-Agent: hakaru\r\nConnection: close\r\n\
              Content-Length: 2\r\nX-One: 1\r\n\r\nhi",
        );
        let r = from_http1(&wire).unwrap();
        assert_eq!(r.head.method(), "POST");
        assert_eq!(r.head.uri().to_string(), "https://example.com:8443/a?b=1");
        assert_eq!(r.head.uri().authority().unwrap().as_str(), "example.com:8443");
        assert!(r.head.headers().get("host").is_none());
        assert!(r.head.headers().get("connection").is_none());
        assert_eq!(r.head.headers()["x-one"], "1");
        assert_eq!(r.head.headers()["content-length"], "2");
        assert_eq!(&r.body[..], b"hi");
    }

    #[test]
    fn a_request_without_a_host_is_refused() {
        assert!(from_http1(&Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n")).is_err());
    }

    #[test]
    fn codes_are_named_by_the_rfcs() {
        assert_eq!(code_text(0x10b), "H3_REQUEST_REJECTED");
        assert_eq!(code_text(0x201), "QPACK_ENCODER_STREAM_ERROR");
        assert_eq!(code_text(0x21), "code 0x21");
    }
}
