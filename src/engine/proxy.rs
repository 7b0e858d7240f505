//! HTTP forward proxies (`--proxy`): a tunnel asked with CONNECT (for https:// and HTTP/2 by prior knowledge), its
//! answer read head only, and the proxy's own failures counted by kind (`proxy_status_407` ...), apart from the
//! target's.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::failure::Failure;
use crate::base::target::{Endpoint, Proxy};
use crate::metrics::ErrorKind;

/// The longest answer head to CONNECT taken: a proxy's is a status line and a few headers.
const MAX_HEAD: usize = 16 * 1024;

/// The CONNECT request for `ep` (its host as the Host header writes it, with the port always).
fn connect_request(ep: &Endpoint, proxy: &Proxy) -> Vec<u8> {
    let host = if ep.host.contains(':') { format!("[{}]", ep.host) } else { ep.host.clone() };
    let authority = format!("{host}:{}", ep.port);
    let mut out = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    if let Some(value) = &proxy.authorization {
        out.extend_from_slice(b"Proxy-Authorization: ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Asks the proxy on `stream` for a tunnel to `ep`, by `deadline`; Ok once it answered 2xx.
pub async fn tunnel(
    stream: &mut TcpStream,
    ep: &Endpoint,
    proxy: &Proxy,
    deadline: tokio::time::Instant,
) -> Result<(), Failure> {
    let target = format!("{}:{}", ep.host, ep.port);
    let exchange = async {
        stream
            .write_all(&connect_request(ep, proxy))
            .await
            .map_err(|e| Failure::new(ErrorKind::ProxyError, format!("the proxy {}: {e}", proxy.shown)))?;
        let mut head = Vec::with_capacity(512);
        let mut buf = [0u8; 1024];
        loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|e| Failure::new(ErrorKind::ProxyError, format!("the proxy {}: {e}", proxy.shown)))?;
            if n == 0 {
                return Err(Failure::new(
                    ErrorKind::ProxyError,
                    format!("the proxy {} closed the connection without answering CONNECT {target}", proxy.shown),
                ));
            }
            head.extend_from_slice(&buf[..n]);
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut answer = httparse::Response::new(&mut headers);
            match answer.parse(&head) {
                Ok(httparse::Status::Complete(len)) => {
                    let status = answer.code.unwrap_or(0);
                    return judge(status, len < head.len(), proxy, &target);
                }
                Ok(httparse::Status::Partial) if head.len() <= MAX_HEAD => {}
                _ => {
                    return Err(Failure::new(
                        ErrorKind::ProxyError,
                        format!("the proxy {}: its answer to CONNECT {target} is not HTTP", proxy.shown),
                    ));
                }
            }
        }
    };
    match tokio::time::timeout_at(deadline, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Failure::new(
            ErrorKind::ConnectTimeout,
            format!("the proxy {} did not answer CONNECT {target} in time", proxy.shown),
        )),
    }
}

/// The proxy's answer to CONNECT: 2xx opens the tunnel (bytes after its head would be the target's before it was
/// asked anything: not a tunnel to use); anything else is the proxy's failure, by status.
fn judge(status: u16, more: bool, proxy: &Proxy, target: &str) -> Result<(), Failure> {
    let said = crate::protocol::status_text(status);
    if (200..300).contains(&status) && !more {
        return Ok(());
    }
    let kind = match status {
        200..=299 => ErrorKind::ProxyError,
        407 => ErrorKind::ProxyStatus407,
        403 => ErrorKind::ProxyStatus403,
        502 => ErrorKind::ProxyStatus502,
        503 => ErrorKind::ProxyStatus503,
        504 => ErrorKind::ProxyStatus504,
        _ => ErrorKind::ProxyStatusOther,
    };
    let hint = match status {
        407 if proxy.authorization.is_some() => "; check the user and password in the proxy URL",
        407 => "; give the proxy's user and password in --proxy's URL, before its host",
        _ => "",
    };
    Err(Failure::new(kind, format!("the proxy {} answered CONNECT {target} with {said}{hint}", proxy.shown)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(auth: Option<&str>) -> Proxy {
        Proxy {
            addr: "127.0.0.1:3128".parse().unwrap(),
            shown: "http://u:***@127.0.0.1:3128".into(),
            authorization: auth.map(String::from),
            tunnel: true,
        }
    }

    #[test]
    fn connect_names_the_target_with_its_port_and_sends_the_credentials_only_to_the_proxy() {
        let ep = Endpoint::resolve(crate::base::target::Scheme::Https, "::1", 443).unwrap();
        let text = String::from_utf8(connect_request(&ep, &proxy(Some("Basic dTpw")))).unwrap();
        assert_eq!(text, "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n");
    }

    #[test]
    fn the_proxys_answers_are_its_own_kinds_and_never_show_the_password() {
        let p = proxy(None);
        assert!(judge(200, false, &p, "h:443").is_ok());
        let kind = |status| judge(status, false, &p, "h:443").unwrap_err().kind;
        assert_eq!(kind(407), ErrorKind::ProxyStatus407);
        assert_eq!(kind(403), ErrorKind::ProxyStatus403);
        assert_eq!(kind(502), ErrorKind::ProxyStatus502);
        assert_eq!(kind(418), ErrorKind::ProxyStatusOther);
        assert_eq!(judge(200, true, &p, "h:443").unwrap_err().kind, ErrorKind::ProxyError);
        let m = judge(407, false, &p, "h:443").unwrap_err().message;
        assert!(
            m.contains("407 Proxy Authentication Required")
                && m.contains("user and password in --proxy")
                && m.contains("***"),
            "{m}"
        );
    }
}
