//! The opening handshake (RFC 6455 4.1): the upgrade request a client sends, with its `Sec-WebSocket-Key`, and the
//! check of the server's answer: 101 with `Upgrade: websocket`, `Connection: Upgrade` and the key's accept value.

use base64::Engine as _;

/// The GUID the accept value is made with (RFC 6455 1.3).
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Headers an upgrade response may have at most (more is a server answering with something else).
const MAX_HEADERS: usize = 64;

/// The upgrade request's bytes up to its key: request line, Host, the upgrade's own headers and the user's (`-H`).
/// The key and the blank line are added per connection ([`finish_request`]).
pub fn request_head(path: &str, host: &str, headers: &[(String, String)]) -> Vec<u8> {
    let out = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    );
    let mut out = out.into_bytes();
    append_headers(headers, &mut out);
    out
}

/// `headers` as lines of a request head.
pub fn append_headers(headers: &[(String, String)], out: &mut Vec<u8>) {
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// A new key (16 random bytes in base64, RFC 6455 4.1) from `random`.
pub fn key(random: [u8; 16]) -> String {
    base64::engine::general_purpose::STANDARD.encode(random)
}

/// The whole upgrade request: `head` with the connection's `key` and the blank line.
pub fn finish_request(head: &[u8], key: &str, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(head);
    out.extend_from_slice(b"Sec-WebSocket-Key: ");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
}

/// The `Sec-WebSocket-Accept` value a server must answer `key` with.
pub fn accept_for(key: &str) -> String {
    let digest = sha1_smol::Sha1::from(format!("{key}{GUID}")).digest().bytes();
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// How the server answered the upgrade request.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The head is not complete yet.
    Partial,
    /// Upgraded: the head was this many bytes (what follows are frames).
    Upgraded(usize),
    /// Another status than 101: the upgrade was refused (`403 Forbidden`), said in words.
    Refused(u16, String),
    /// 101 without what RFC 6455 4.1 requires of it (the accept value, the Upgrade or Connection header), or no
    /// HTTP answer at all.
    Invalid(String),
}

/// Reads the server's answer to the upgrade request sent with `key` from the bytes received so far.
pub fn read_answer(bytes: &[u8], key: &str) -> Answer {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Partial) => return Answer::Partial,
        Ok(httparse::Status::Complete(len)) => len,
        Err(e) => {
            let start: String =
                crate::base::secrets::scrubbed_start(&String::from_utf8_lossy(bytes), 40).escape_debug().collect();
            return Answer::Invalid(format!("the upgrade's answer is no HTTP response ({e}): \"{start}\""));
        }
    };
    let status = resp.code.unwrap_or(0);
    if status != 101 {
        return Answer::Refused(status, crate::protocol::status_text(status));
    }
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if !header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        return Answer::Invalid("101 without Upgrade: websocket".into());
    }
    if !header("connection").is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade"))) {
        return Answer::Invalid("101 without Connection: Upgrade".into());
    }
    match header("sec-websocket-accept") {
        Some(accept) if accept == accept_for(key) => Answer::Upgraded(len),
        Some(_) => Answer::Invalid("101 with a Sec-WebSocket-Accept that does not match the key sent".into()),
        None => Answer::Invalid("101 without Sec-WebSocket-Accept".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_value_is_rfc_6455s_example() {
        // RFC 6455 1.3's own example.
        assert_eq!(accept_for("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(key(*b"the sample nonce"), "dGhlIHNhbXBsZSBub25jZQ==");
    }

    #[test]
    fn an_answer_is_upgraded_refused_or_invalid() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
                  Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        let mut wire = ok.as_bytes().to_vec();
        assert_eq!(read_answer(&wire[..20], key), Answer::Partial);
        wire.extend_from_slice(&[0x81, 0]);
        assert_eq!(read_answer(&wire, key), Answer::Upgraded(ok.len()));
        let refused = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(read_answer(refused, key), Answer::Refused(403, "403 Forbidden".into()));
        let wrong = ok.replace("s3pP", "AAAA");
        assert!(matches!(read_answer(wrong.as_bytes(), key), Answer::Invalid(_)));
        let no_upgrade = ok.replace("Upgrade: websocket\r\n", "");
        assert!(matches!(read_answer(no_upgrade.as_bytes(), key), Answer::Invalid(_)));
        assert!(matches!(read_answer(b"SSH-2.0-OpenSSH\r\n\r\n", key), Answer::Invalid(_)));
    }

    #[test]
    fn the_request_carries_the_key_and_the_users_headers() {
        let head = request_head("/chat?room=1", "127.0.0.1:9000", &[("Authorization".into(), "Bearer t".into())]);
        let mut out = Vec::new();
        finish_request(&head, "k==", &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("GET /chat?room=1 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n"), "{text}");
        assert!(text.contains("\r\nAuthorization: Bearer t\r\n"), "{text}");
        assert!(text.ends_with("Sec-WebSocket-Key: k==\r\n\r\n"), "{text}");
    }
}
