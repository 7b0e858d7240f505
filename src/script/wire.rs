//! What a script's request text holds: how many requests (wrk's pipeline.lua returns three in one string), which
//! of them are HEAD (their answers have no body) and whether all may be sent twice. Read with httparse, so that a
//! string that is not HTTP is refused in words before it reaches the server.

/// The most requests one string may hold: the engine reads that many answers before the next write.
pub const MOST_PIPELINED: usize = 1024;

/// The most headers one request of a script may carry.
const MOST_HEADERS: usize = 128;

/// The requests in one string returned by `request()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Per request, in order: whether it is a HEAD (its answer has no body whatever its headers say).
    pub heads: Vec<bool>,
    /// Every request may be sent again on a new connection (none is a POST or PATCH).
    pub idempotent: bool,
}

impl Shape {
    /// One WebSocket message: one exchange, its answer a message (no HEAD), never sent twice.
    pub fn message() -> Shape {
        Shape { heads: vec![false], idempotent: false }
    }

    /// Reads `bytes` as one or more HTTP/1.1 requests; the error says what is wrong, in words for the user.
    pub fn read(bytes: &[u8]) -> Result<Shape, String> {
        let mut heads = Vec::new();
        let mut idempotent = true;
        let mut at = 0;
        while at < bytes.len() {
            let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            let head = match req.parse(&bytes[at..]) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => {
                    return Err("an incomplete HTTP request (the head must end with an empty line, \\r\\n\\r\\n; \
                                wrk.format() builds one)"
                        .into());
                }
                Err(e) => return Err(format!("not an HTTP request ({e}); build it with wrk.format()")),
            };
            let method = req.method.unwrap_or("");
            let mut length = 0usize;
            for h in req.headers.iter() {
                if h.name.eq_ignore_ascii_case("content-length") {
                    length = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .ok_or("a Content-Length that is not a number")?;
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    return Err("a Transfer-Encoding header: hakaru frames a script's bodies by Content-Length \
                                (wrk.format() sets it)"
                        .into());
                } else if crate::base::secrets::is_secret_header(h.name) {
                    // A token the script made (a login's answer, a signature): hidden wherever a peer echoes it.
                    crate::base::secrets::remember_script_header(&format!(
                        "{}: {}",
                        h.name,
                        String::from_utf8_lossy(h.value)
                    ));
                }
            }
            at += head;
            if bytes.len() - at < length {
                return Err(format!("a body shorter than its Content-Length ({} bytes of {length})", bytes.len() - at));
            }
            at += length;
            heads.push(method == "HEAD");
            idempotent &= matches!(method, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE");
            if heads.len() > MOST_PIPELINED {
                return Err(format!("more than {MOST_PIPELINED} requests in one string"));
            }
        }
        if heads.is_empty() {
            return Err("an empty string".into());
        }
        Ok(Shape { heads, idempotent })
    }
}

/// One request of a script's text (read by [`Shape::read`] already) as HTTP/2 frames for `--http2`, into `out`:
/// its method, target, headers and body, a `Host` header becoming `:authority` (`authority` without one). The
/// text's `Content-Length` is left to the frames, which count the body themselves.
pub fn http2_frames(bytes: &[u8], https: bool, authority: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let mut headers = [httparse::EMPTY_HEADER; MOST_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err("not one whole HTTP request; build it with wrk.format()".into()),
    };
    let fields: Vec<(String, String)> = req
        .headers
        .iter()
        .filter(|h| !h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    let target = req.path.unwrap_or("/");
    if !target.starts_with('/') && target != "*" {
        return Err(format!("a request for '{target}', not a path: over --http2 the target is the :path, from /"));
    }
    let parts = crate::protocol::http::RequestParts {
        method: req.method.unwrap_or("GET"),
        target,
        host: authority,
        headers: &fields,
        body: &bytes[head..],
        close: false,
    };
    out.clear();
    crate::protocol::h2::request::write_request(&parts, https, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Shape;

    #[test]
    fn a_request_text_becomes_the_frames_of_the_same_request() {
        let text = b"POST /f?x=1 HTTP/1.1\r\nHost: example:8080\r\nX-A: 1\r\nContent-Length: 3\r\n\r\nabc";
        let mut got = Vec::new();
        super::http2_frames(text, false, "other:1", &mut got).unwrap();
        let fields = vec![("Host".to_string(), "example:8080".to_string()), ("X-A".to_string(), "1".to_string())];
        let parts = crate::protocol::http::RequestParts {
            method: "POST",
            target: "/f?x=1",
            host: "other:1",
            headers: &fields,
            body: b"abc",
            close: false,
        };
        let mut want = Vec::new();
        crate::protocol::h2::request::write_request(&parts, false, &mut want);
        assert_eq!(got, want);
        assert!(super::http2_frames(b"GET / HTTP/1.1\r\n", false, "h", &mut got).is_err());
        let absolute = b"GET http://h/x HTTP/1.1\r\n\r\n";
        assert!(super::http2_frames(absolute, false, "h", &mut got).unwrap_err().contains("not a path"));
    }

    #[test]
    fn three_requests_in_one_string_are_three() {
        let one = "GET /?foo HTTP/1.1\r\nHost: h\r\n\r\n";
        let s = Shape::read(format!("{one}{one}HEAD / HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes()).unwrap();
        assert_eq!(s.heads, [false, false, true]);
        assert!(s.idempotent);
    }

    #[test]
    fn a_post_body_is_framed_by_its_length() {
        let s = Shape::read(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(s.heads.len(), 2);
        assert!(!s.idempotent);
        assert!(Shape::read(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc").unwrap_err().contains("shorter"));
    }

    #[test]
    fn what_is_not_a_request_is_refused_in_words() {
        assert!(Shape::read(b"").unwrap_err().contains("empty"));
        assert!(Shape::read(b"GET / HTTP/1.1\r\nHost: h\r\n").unwrap_err().contains("incomplete"));
        assert!(Shape::read(b"hello world\r\n\r\n").unwrap_err().contains("not an HTTP request"));
        assert!(Shape::read(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").is_err());
    }
}
