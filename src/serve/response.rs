//! Formats answers: the preformatted default response, response heads, and body bytes of any size.

use std::io::Write;

pub const DEFAULT_BODY: &[u8] = b"hello from hakaru\n";

macro_rules! default_response {
    ($conn:literal) => {
        concat!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n",
            $conn,
            "\r\nhello from hakaru\n"
        )
        .as_bytes()
    };
}

/// The common answer, ready on the wire so the fast path formats nothing.
pub fn default_response(conn: Conn) -> &'static [u8] {
    match conn {
        Conn::Implicit => default_response!(""),
        Conn::KeepAlive => default_response!("Connection: keep-alive\r\n"),
        Conn::Close => default_response!("Connection: close\r\n"),
    }
}

pub const GARBAGE: &[u8] = b"this is not http\r\n\r\n";
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The `Connection` header an answer carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conn {
    /// HTTP/1.1 keeps the connection without saying so.
    Implicit,
    KeepAlive,
    Close,
}

impl Conn {
    /// Whether the connection stays open after the answer.
    pub fn keep_alive(self) -> bool {
        !matches!(self, Conn::Close)
    }

    pub fn new(keep_alive: bool, http10: bool) -> Conn {
        match (keep_alive, http10) {
            (false, _) => Conn::Close,
            (true, true) => Conn::KeepAlive,
            (true, false) => Conn::Implicit,
        }
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "Unknown",
    }
}

/// 204 and 304 answers never have a body, whatever was asked.
pub fn allows_body(status: u16) -> bool {
    status != 204 && status != 304
}

/// Appends a response head. `x_cache` is `Some(hit)` on `/cache` answers.
pub fn write_head(out: &mut Vec<u8>, status: u16, content_type: &str, len: u64, x_cache: Option<bool>, conn: Conn) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\n", reason(status));
    // RFC 9110 forbids Content-Length on a 204; everything else always carries one.
    if status != 204 {
        let _ = write!(out, "Content-Length: {len}\r\n");
    }
    match x_cache {
        Some(true) => out.extend_from_slice(b"X-Cache: HIT\r\n"),
        Some(false) => out.extend_from_slice(b"X-Cache: MISS\r\n"),
        None => {}
    }
    match conn {
        Conn::Implicit => {}
        Conn::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        Conn::Close => out.extend_from_slice(b"Connection: close\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a complete text answer, for errors and `/status`.
pub fn write_text(out: &mut Vec<u8>, status: u16, content_type: &str, body: &str, head_only: bool, conn: Conn) {
    write_head(out, status, content_type, body.len() as u64, None, conn);
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
}

const PERIOD: usize = DEFAULT_BODY.len();

/// Sized bodies repeat the default body, so `size=18` is the default answer and any slice of a big body reads sanely.
/// A whole number of periods long, so consecutive slices continue the text.
static PATTERN: [u8; PERIOD * 3641] = {
    let mut p = [0u8; PERIOD * 3641];
    let mut i = 0;
    while i < p.len() {
        p[i] = DEFAULT_BODY[i % PERIOD];
        i += 1;
    }
    p
};

/// The longest run of body bytes starting at body offset `offset` that can be sent from one static slice.
pub fn body_slice(offset: u64, len: u64) -> &'static [u8] {
    let start = (offset % PERIOD as u64) as usize;
    let n = len.min((PATTERN.len() - start) as u64) as usize;
    &PATTERN[start..start + n]
}

/// Appends `len` body bytes; for bodies small enough to go out with their head in one write.
pub fn append_body(out: &mut Vec<u8>, len: u64) {
    let mut done = 0;
    while done < len {
        let s = body_slice(done, len - done);
        out.extend_from_slice(s);
        done += s.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_response_is_well_formed_for_each_connection_mode() {
        for conn in [Conn::Implicit, Conn::KeepAlive, Conn::Close] {
            let mut built = Vec::new();
            write_head(&mut built, 200, "text/plain", 18, None, conn);
            built.extend_from_slice(DEFAULT_BODY);
            assert_eq!(built, default_response(conn));
        }
    }

    #[test]
    fn heads_carry_reason_length_cache_and_connection() {
        let mut out = Vec::new();
        write_head(&mut out, 503, "text/plain", 7, Some(true), Conn::Close);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(text.contains("Content-Length: 7\r\n"));
        assert!(text.contains("X-Cache: HIT\r\n"));
        assert!(text.ends_with("Connection: close\r\n\r\n"));
        let mut out = Vec::new();
        write_head(&mut out, 204, "text/plain", 0, None, Conn::Implicit);
        assert!(!String::from_utf8(out).unwrap().contains("Content-Length"));
        assert_eq!(reason(599), "Unknown");
    }

    #[test]
    fn sized_bodies_repeat_the_default_body_across_slices() {
        let mut out = Vec::new();
        append_body(&mut out, 18);
        assert_eq!(out, DEFAULT_BODY);
        let big = PATTERN.len() as u64 * 2 + 5;
        let mut out = Vec::new();
        append_body(&mut out, big);
        assert_eq!(out.len() as u64, big);
        assert!(out.chunks(PERIOD).all(|c| c == &DEFAULT_BODY[..c.len()]));
        assert_eq!(body_slice(20, 3), b"llo");
    }
}
