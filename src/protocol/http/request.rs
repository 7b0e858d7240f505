//! HTTP/1.1 request bytes, built once per pattern and endpoint before the run, as wrk and ab do.

use crate::protocol::PreparedRequest;

/// What a request is made of, before it becomes bytes.
#[derive(Clone, Debug, Default)]
pub struct RequestParts<'a> {
    pub method: &'a str,
    /// Path and query (the request target).
    pub target: &'a str,
    /// Value of the Host header (the caller's headers may override it).
    pub host: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
    /// Ask the server to close after answering (`--no-keepalive`).
    pub close: bool,
}

/// True for an HTTP token (RFC 9110 `tchar`s): what a method and a header name must be.
pub fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Checks a method: an HTTP token (`GET`, `M-SEARCH`). The error is the fix, without the flag or file name.
pub fn check_method(method: &str) -> Result<(), String> {
    if is_token(method) {
        Ok(())
    } else {
        Err(format!(
            "method '{}' is not an HTTP token; use GET, POST, HEAD... (letters, digits, -)",
            method.escape_debug()
        ))
    }
}

/// Checks a request target: a space, CR, LF or NUL in it would end the request line early or start another
/// request, so the server would read something other than what is measured.
pub fn check_target(target: &str) -> Result<(), String> {
    if target.contains([' ', '\r', '\n', '\0']) {
        return Err(format!("path '{}' holds a space, CR, LF or NUL; percent-encode it (%20)", target.escape_debug()));
    }
    Ok(())
}

/// Checks a header: the name a token, the value free of CR, LF and NUL (which would smuggle a header or a whole
/// second request into the bytes sent).
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    if !is_token(name) {
        return Err(format!(
            "header name '{}' is not an HTTP token (letters, digits, -); write it as \"Name: value\"",
            name.escape_debug()
        ));
    }
    if value.contains(['\r', '\n', '\0']) {
        // The value is not quoted: it may be a secret.
        return Err(format!("header '{name}' has a CR, LF or NUL in its value; give one header per -H"));
    }
    // The message's framing is hakaru's to set: a Content-Length that is not the body's makes every request wait
    // for bytes that never come (or cut the next request), and a connection hakaru thinks is kept alive must be.
    if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding") {
        return Err(format!(
            "header '{name}': hakaru frames every request itself (Content-Length from the body); leave it out and give \
             the body with -b or --body-file"
        ));
    }
    if name.eq_ignore_ascii_case("connection") && !value.trim().eq_ignore_ascii_case("keep-alive") {
        return Err(format!(
            "header '{name}: {value}': hakaru manages connections itself; leave it out (--no-keepalive sends \
             Connection: close and counts a new connection per request)"
        ));
    }
    Ok(())
}

/// Builds the bytes of one request. A Content-Length is sent whenever there is a body or the method usually
/// carries one, so servers never wait for a body that is not coming.
pub fn build_request(parts: &RequestParts<'_>) -> PreparedRequest {
    let mut out = Vec::with_capacity(128 + parts.target.len() + parts.body.len());
    write_request(parts, &mut out);
    PreparedRequest::new(out.into(), parts.method)
}

/// Appends the bytes of one request to `out` (templates fill one buffer per request, reused).
pub fn write_request(parts: &RequestParts<'_>, out: &mut Vec<u8>) {
    let has = |name: &str| parts.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    out.extend_from_slice(parts.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(parts.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has("host") {
        push_header(out, "Host", parts.host);
    }
    if !has("user-agent") {
        push_header(out, "User-Agent", concat!("hakaru/", env!("CARGO_PKG_VERSION")));
    }
    for (name, value) in parts.headers {
        push_header(out, name, value);
    }
    if parts.close && !has("connection") {
        push_header(out, "Connection", "close");
    }
    let method_has_body = matches!(parts.method, "POST" | "PUT" | "PATCH");
    if (!parts.body.is_empty() || method_has_body) && !has("content-length") && !has("transfer-encoding") {
        push_header(out, "Content-Length", itoa::Buffer::new().format(parts.body.len()));
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(parts.body);
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: &PreparedRequest) -> String {
        String::from_utf8(p.bytes.to_vec()).unwrap()
    }

    #[test]
    fn tokens_targets_and_headers_are_checked() {
        assert!(check_method("M-SEARCH").is_ok() && check_method("GET").is_ok());
        assert!(check_method("GET /x HTTP/1.1\r\n").is_err() && check_method("").is_err());
        assert!(check_target("/a?b=1").is_ok());
        for bad in ["/a b", "/a\r\nX: 1", "/a\0"] {
            assert!(check_target(bad).is_err(), "{bad:?}");
        }
        assert!(check_header("X-A", "1, 2").is_ok());
        assert!(check_header("X A", "1").is_err() && check_header("X:", "1").is_err());
        assert!(check_header("X-A", "1\r\n\r\nGET /evil HTTP/1.1").is_err());
    }

    #[test]
    fn a_get_has_host_and_user_agent_and_no_length() {
        let p = build_request(&RequestParts { method: "GET", target: "/a?b=1", host: "h:81", ..Default::default() });
        assert_eq!(
            text(&p),
            format!("GET /a?b=1 HTTP/1.1\r\nHost: h:81\r\nUser-Agent: hakaru/{}\r\n\r\n", env!("CARGO_PKG_VERSION"))
        );
        assert!(!p.expects_no_body);
    }

    #[test]
    fn a_post_with_body_gets_content_length_and_close_when_asked() {
        let headers = vec![("Content-Type".to_string(), "application/json".to_string())];
        let p = build_request(&RequestParts {
            method: "POST",
            target: "/",
            host: "h",
            headers: &headers,
            body: b"{}",
            close: true,
        });
        let t = text(&p);
        assert!(
            t.contains("Content-Type: application/json\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"),
            "{t}"
        );
    }

    #[test]
    fn user_headers_replace_host_and_user_agent() {
        let headers = vec![("host".to_string(), "virtual".to_string()), ("User-Agent".to_string(), "x".to_string())];
        let p = build_request(&RequestParts {
            method: "HEAD",
            target: "/",
            host: "h",
            headers: &headers,
            ..Default::default()
        });
        let t = text(&p);
        assert!(t.starts_with("HEAD / HTTP/1.1\r\nhost: virtual\r\nUser-Agent: x\r\n\r\n"), "{t}");
        assert!(p.expects_no_body);
    }
}
