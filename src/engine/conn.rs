//! Connections: TCP (and TLS through rustls) or a Unix socket to one endpoint, with errors mapped to exact kinds.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

pub use super::failure::Failure;
use super::tls::Tls;
use crate::base::target::{Endpoint, Scheme};
use crate::metrics::ErrorKind;
use crate::metrics::phases::Handshake;

/// An open connection: plain TCP, TLS, or a Unix socket. An enum, so the client loop's reads and writes are
/// direct calls.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    Unix(UnixStream),
}

/// Opens a connection (and completes the TLS handshake) within `timeout`.
/// `reused`: the connection will carry several requests. Only then (or over TLS) is TCP_NODELAY worth its system
/// call: a plain connection that carries one request written at once never meets Nagle's delay.
pub async fn connect(ep: &Endpoint, tls: Option<&Tls>, timeout: Duration, reused: bool) -> Result<Conn, Failure> {
    connect_timed(ep, tls, timeout, reused).await.map(|(conn, _)| conn)
}

/// [`connect`], with the instant TCP was established when a TLS handshake followed (the phase between them is the
/// handshake's) and whether it resumed a session: the clock is read for it on TLS connections only.
pub async fn connect_timed(
    ep: &Endpoint,
    tls: Option<&Tls>,
    timeout: Duration,
    reused: bool,
) -> Result<(Conn, Option<Handshake>), Failure> {
    let deadline = tokio::time::Instant::now() + timeout;
    if let Some(path) = &ep.unix {
        return unix_connect(path, deadline, timeout).await.map(|c| (Conn::Unix(c), None));
    }
    let stream = tcp_connect(ep, deadline, timeout).await?;
    // Requests are small and answered one at a time: Nagle's delay would only add latency. Over TLS even a
    // connection for one request needs it: its request follows the handshake's last flight before the server has
    // acknowledged it, and Nagle held it for the server's delayed ACK (40 ms a request with --no-keepalive).
    let tls_follows = ep.scheme == Scheme::Https && tls.is_some();
    if reused || tls_follows {
        let _ = stream.set_nodelay(true);
    }
    match (ep.scheme, tls) {
        (Scheme::Https, Some(tls)) => {
            let tcp_done = std::time::Instant::now();
            match handshake(ep, tls, stream, deadline).await {
                Ok(stream) => {
                    let resumed = super::tls::resumed(&stream);
                    Ok((Conn::Tls(Box::new(stream)), Some(Handshake { tcp_done, resumed })))
                }
                Err(e) => Err(Failure::new(ErrorKind::Tls, e.describe(ep, timeout))),
            }
        }
        _ => Ok((Conn::Plain(stream), None)),
    }
}

/// A TCP connection to the endpoint, or to its proxy (`--proxy`), with the tunnel asked for when the proxy is to
/// carry one.
async fn tcp_connect(ep: &Endpoint, deadline: tokio::time::Instant, timeout: Duration) -> Result<TcpStream, Failure> {
    let Some(proxy) = &ep.proxy else { return tcp_connect_to(ep.addr, ep, deadline, timeout).await };
    let mut stream = tcp_connect_to(proxy.addr, ep, deadline, timeout).await.map_err(|f| match f.kind {
        ErrorKind::ConnectRefused => {
            Failure::new(ErrorKind::ProxyRefused, format!("the proxy {}: {}", proxy.shown, f.message))
        }
        _ => Failure::new(f.kind, format!("the proxy {}: {}", proxy.shown, f.message)),
    })?;
    if proxy.tunnel {
        super::proxy::tunnel(&mut stream, ep, proxy, deadline).await?;
    }
    Ok(stream)
}

async fn tcp_connect_to(
    addr: std::net::SocketAddr,
    ep: &Endpoint,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<TcpStream, Failure> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(|e| {
        if is_fd_limit(&e) {
            Failure::new(
                ErrorKind::FileLimit,
                format!("socket: {e}; raise the open-file limit (ulimit -n) or lower -c"),
            )
        } else {
            Failure::new(ErrorKind::Connect, format!("socket: {e}"))
        }
    })?;
    if let Some(source) = ep.source {
        socket
            .bind(std::net::SocketAddr::new(source, 0))
            .map_err(|e| Failure::new(ErrorKind::Connect, format!("bind to the source address {source}: {e}")))?;
    }
    match tokio::time::timeout_at(deadline, socket.connect(addr)).await {
        Ok(Ok(stream))
            if crate::base::target::may_connect_to_itself(addr.port())
                && crate::base::target::connected_to_itself(stream.local_addr(), stream.peer_addr()) =>
        {
            Err(Failure::new(
                ErrorKind::ConnectRefused,
                format!("connect to {addr}: connected to itself (nothing listens there)"),
            ))
        }
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => {
            let kind = match e.kind() {
                io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
                _ if is_fd_limit(&e) => ErrorKind::FileLimit,
                _ => ErrorKind::Connect,
            };
            Err(Failure::new(kind, format!("connect to {addr}: {e}")))
        }
        Err(_) => Err(Failure::new(
            ErrorKind::ConnectTimeout,
            format!("no connection to {addr} within {}", humantime::format_duration(timeout)),
        )),
    }
}

/// A Unix socket's connect fails as TCP's would: refused when nothing listens (the file left behind by a server
/// that stopped, or removed since the check), a file limit, a timeout when the server's backlog stays full.
async fn unix_connect(
    path: &std::path::Path,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<UnixStream, Failure> {
    match tokio::time::timeout_at(deadline, UnixStream::connect(path)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => {
            let kind = match e.kind() {
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => ErrorKind::ConnectRefused,
                _ if is_fd_limit(&e) => ErrorKind::FileLimit,
                _ => ErrorKind::Connect,
            };
            Err(Failure::new(kind, format!("connect to unix:{}: {e}", path.display())))
        }
        Err(_) => Err(Failure::new(
            ErrorKind::ConnectTimeout,
            format!("no connection to unix:{} within {}", path.display(), humantime::format_duration(timeout)),
        )),
    }
}

/// EMFILE (the process's open-file limit) or ENFILE (the system's).
pub fn is_fd_limit(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Why a TLS handshake did not complete.
enum HandshakeError {
    /// A server name rustls cannot use.
    Name(String),
    /// No answer before the connect deadline: typically a plain-HTTP server waiting for a request.
    TimedOut,
    Failed(io::Error),
}

impl HandshakeError {
    fn describe(&self, ep: &Endpoint, timeout: Duration) -> String {
        match self {
            HandshakeError::Name(m) => m.clone(),
            HandshakeError::TimedOut => format!(
                "TLS handshake with {}: no answer within {} (is the server speaking TLS on this port?)",
                ep.addr,
                humantime::format_duration(timeout)
            ),
            // An answer that is not a TLS record at all: the port speaks plain HTTP.
            HandshakeError::Failed(e) if self.is_plain_answer() => format!(
                "TLS handshake with {}: the server answered in plain HTTP, not TLS; use http:// for this port",
                ep.addr
            ),
            HandshakeError::Failed(e) => format!("TLS handshake with {}: {e}", ep.addr),
        }
    }

    /// The server's first bytes were not a TLS record (rustls: corrupt message of type InvalidContentType), as when
    /// an `https://` URL names a plain-HTTP port.
    fn is_plain_answer(&self) -> bool {
        match self {
            HandshakeError::Failed(e) => {
                e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some_and(|r| {
                    matches!(r, rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType))
                })
            }
            _ => false,
        }
    }

    /// The server refused the TLS version offered (or offered none rustls was allowed to take).
    fn is_version(&self) -> bool {
        match self {
            HandshakeError::Failed(e) => {
                e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some_and(|r| {
                    matches!(
                        r,
                        rustls::Error::AlertReceived(rustls::AlertDescription::ProtocolVersion)
                            | rustls::Error::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOffered)
                            | rustls::Error::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOfferedOrEnabled)
                            | rustls::Error::PeerIncompatible(
                                rustls::PeerIncompatible::SupportedVersionsExtensionRequired
                            )
                            | rustls::Error::PeerIncompatible(
                                rustls::PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
                            )
                    )
                })
            }
            _ => false,
        }
    }

    /// The server speaks TLS but its certificate is not trusted: a fact to count, not a wrong port.
    fn is_certificate(&self) -> bool {
        match self {
            HandshakeError::Failed(e) => e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .is_some_and(|r| matches!(r, rustls::Error::InvalidCertificate(_))),
            _ => false,
        }
    }
}

async fn handshake(
    ep: &Endpoint,
    tls: &Tls,
    stream: TcpStream,
    deadline: tokio::time::Instant,
) -> Result<TlsStream<TcpStream>, HandshakeError> {
    let name = tls.server_name(&ep.host).map_err(HandshakeError::Name)?;
    match tokio::time::timeout_at(deadline, tls.connector().connect(name, stream)).await {
        Ok(Ok(tls)) => Ok(tls),
        Ok(Err(e)) => Err(HandshakeError::Failed(e)),
        Err(_) => Err(HandshakeError::TimedOut),
    }
}

/// Checks before the load that a TLS endpoint speaks TLS: Err(why) when the handshake gets no answer within
/// `timeout` or fails for a reason other than the certificate. An untrusted certificate is left to the run,
/// which counts it (kind `tls`) as the server's answer to every connection.
pub async fn check_tls(ep: &Endpoint, tls: &Tls, timeout: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let stream = tcp_connect(ep, deadline, timeout).await.map_err(|f| f.message)?;
    match handshake(ep, tls, stream, deadline).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_certificate() => Ok(()),
        Err(e) if e.is_version() && tls.version().is_some() => Err(format!(
            "{}: the server does not speak TLS {}; give the other --tls-version or leave it out",
            e.describe(ep, timeout),
            tls.version().unwrap_or_default()
        )),
        Err(e) if tls.was_asked_for_certificate() && !tls.gives_certificate() => Err(format!(
            "{}; the server asked for a client certificate (mutual TLS) and none was given: give --cert FILE --key FILE",
            e.describe(ep, timeout)
        )),
        Err(e) => Err(e.describe(ep, timeout)),
    }
}

/// What an idle connection holds when the client is about to write a request on it.
#[derive(Debug, PartialEq, Eq)]
pub enum Idle {
    /// Nothing arrived: ready for the request.
    Open,
    /// The server closed (or reset) it while idle: reopen before sending.
    Closed,
    /// The server sent bytes no request asked for; they are quoted. Written now, the request would be
    /// credited with them, so the connection is unusable.
    Unsolicited(String),
}

impl Conn {
    /// Reads what the socket holds now, without waiting and past tokio's readiness: after a read shorter than its
    /// buffer, tokio takes the socket for drained and reads again only after epoll's next event. A server that
    /// answers a batch of HTTP/2 streams one write at a time is read that way one answer a wake-up, and the
    /// streams' next requests go one small write each (66,000 writes for 100,000 requests at -c 4 --streams 16);
    /// reading on to the end, as h2load does, gathers them. Plain sockets only: a TLS connection says WouldBlock.
    pub fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Conn::Plain(s) => s.as_raw_fd(),
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Tls(_) => return Err(io::ErrorKind::WouldBlock.into()),
        };
        // SAFETY: the pointer and length are `buf`'s, alive for the call; the descriptor is the open stream's.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(n as usize);
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Err(io::ErrorKind::WouldBlock.into()),
            e => Err(e),
        }
    }

    /// Looks at an idle connection before a request is written on it. Costs no system call unless the socket
    /// signalled readiness, which an idle keep-alive connection only does when it is closing or the server
    /// misbehaves. Bytes read here are dropped with the connection.
    pub fn idle_state(&mut self) -> Idle {
        let mut buf = [0u8; 64];
        let read = match self {
            Conn::Plain(s) => match s.try_read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Idle::Open,
                other => other,
            },
            Conn::Unix(s) => match s.try_read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Idle::Open,
                other => other,
            },
            Conn::Tls(s) => {
                // rustls decrypts only inside poll_read. Polled with a waker that does nothing, it returns
                // Pending without a system call when the socket has not signalled readiness; post-handshake
                // messages (TLS 1.3 session tickets) are consumed without yielding bytes, as they should be.
                let mut cx = Context::from_waker(std::task::Waker::noop());
                let mut rb = ReadBuf::new(&mut buf);
                match Pin::new(s.as_mut()).poll_read(&mut cx, &mut rb) {
                    Poll::Pending => return Idle::Open,
                    Poll::Ready(result) => result.map(|()| rb.filled().len()),
                }
            }
        };
        match read {
            Ok(0) | Err(_) => Idle::Closed,
            Ok(n) => Idle::Unsolicited(format!(
                "the server sent bytes before the request was written: \"{}\"",
                crate::protocol::http::response::quote(&buf[..n])
            )),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Conn::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Conn::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Conn::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Conn::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn read_now_takes_what_the_socket_holds_says_would_block_when_empty_and_zero_at_the_end() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        rt.block_on(async {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
            let addr = listener.local_addr().expect("bound");
            let conn = Conn::Plain(TcpStream::connect(addr).await.expect("connects"));
            let (mut peer, _) = listener.accept().expect("accepted");
            let mut buf = [0u8; 64];
            assert_eq!(conn.read_now(&mut buf).expect_err("nothing sent yet").kind(), io::ErrorKind::WouldBlock);
            peer.write_all(b"hello").expect("written");
            // Loopback puts the bytes in the receiving queue as the write returns; bounded in case it does not.
            let mut got = Vec::new();
            for _ in 0..100_000 {
                match conn.read_now(&mut buf) {
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock && got.len() == 5 => break,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(got, b"hello");
            drop(peer);
            let mut end = None;
            for _ in 0..100_000 {
                match conn.read_now(&mut buf) {
                    Ok(n) => {
                        end = Some(n);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(end, Some(0), "the peer's close reads as 0 bytes");
        });
    }
}
