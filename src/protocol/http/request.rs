//! HTTP/1.1 request bytes, built once per pattern and endpoint before the run, as wrk and ab do.

use std::sync::Arc;

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

/// Builds the bytes of one request. A Content-Length is sent whenever there is a body or the method usually
/// carries one, so servers never wait for a body that is not coming.
pub fn build_request(parts: &RequestParts<'_>) -> PreparedRequest {
    let has = |name: &str| parts.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = Vec::with_capacity(128 + parts.target.len() + parts.body.len());
    out.extend_from_slice(parts.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(parts.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has("host") {
        push_header(&mut out, "Host", parts.host);
    }
    if !has("user-agent") {
        push_header(&mut out, "User-Agent", concat!("hakaru/", env!("CARGO_PKG_VERSION")));
    }
    for (name, value) in parts.headers {
        push_header(&mut out, name, value);
    }
    if parts.close && !has("connection") {
        push_header(&mut out, "Connection", "close");
    }
    let method_has_body = matches!(parts.method, "POST" | "PUT" | "PATCH");
    if (!parts.body.is_empty() || method_has_body) && !has("content-length") && !has("transfer-encoding") {
        push_header(&mut out, "Content-Length", &parts.body.len().to_string());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(parts.body);
    let idempotent = matches!(parts.method, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE");
    PreparedRequest { bytes: Arc::from(out), expects_no_body: parts.method == "HEAD", idempotent }
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
