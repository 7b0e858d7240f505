//! Connections: TCP (and TLS through rustls) to one endpoint, with errors mapped to exact kinds.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::metrics::ErrorKind;
use crate::target::{Endpoint, Scheme};

/// An open connection, plain or TLS.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// A failure with its exact kind and the message to keep as a sample.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    /// Classifies an I/O error that happened after the connection was established.
    pub fn from_io(e: &io::Error) -> Self {
        let kind = match e.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => {
                ErrorKind::Reset
            }
            io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
            // tokio-rustls reports TLS alerts and bad records as InvalidData wrapping a rustls error.
            io::ErrorKind::InvalidData if is_tls_error(e) => ErrorKind::Tls,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Io,
        };
        Self::new(kind, e.to_string())
    }
}

fn is_tls_error(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

/// Opens a connection (and completes the TLS handshake) within `timeout`.
/// `reused`: the connection will carry several requests. Only then is TCP_NODELAY worth its system call: a
/// connection that carries one request written at once never meets Nagle's delay.
pub async fn connect(
    ep: &Endpoint,
    tls: Option<&TlsConnector>,
    timeout: Duration,
    reused: bool,
) -> Result<Conn, Failure> {
    let attempt = async {
        let socket = if ep.addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }
            .map_err(|e| Failure::new(ErrorKind::Connect, format!("socket: {e}")))?;
        let stream = socket.connect(ep.addr).await.map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::ConnectionRefused {
                ErrorKind::ConnectRefused
            } else {
                ErrorKind::Connect
            };
            Failure::new(kind, format!("connect to {}: {e}", ep.addr))
        })?;
        // Requests are small and answered one at a time: Nagle's delay would only add latency.
        if reused {
            let _ = stream.set_nodelay(true);
        }
        match (ep.scheme, tls) {
            (Scheme::Https, Some(connector)) => {
                let name = ServerName::try_from(ep.host.clone())
                    .map_err(|e| Failure::new(ErrorKind::Tls, format!("server name '{}': {e}", ep.host)))?;
                let tls = connector
                    .connect(name, stream)
                    .await
                    .map_err(|e| Failure::new(ErrorKind::Tls, format!("TLS handshake with {}: {e}", ep.addr)))?;
                Ok(Conn::Tls(Box::new(tls)))
            }
            _ => Ok(Conn::Plain(stream)),
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(Failure::new(
            ErrorKind::ConnectTimeout,
            format!("no connection to {} within {}", ep.addr, humantime::format_duration(timeout)),
        )),
    }
}

/// The TLS client settings: the web's root certificates, or none checked with `--insecure`.
pub fn tls_connector(insecure: bool) -> TlsConnector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions");
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TlsConnector::from(Arc::new(config))
}

/// `--insecure`: any certificate is accepted, but handshake signatures are still checked.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl Conn {
    /// Whether the server already closed (or wrote unasked bytes on) this idle connection. Costs no system call
    /// unless the socket signalled readiness, which an idle keep-alive connection only does when it is closing.
    pub fn closed_by_peer(&self) -> bool {
        match self {
            Conn::Plain(s) => s.try_read(&mut [0u8; 1]).is_ok(),
            // A TLS close_notify or FIN cannot be peeked without the TLS state; the retry of idempotent
            // requests covers it.
            Conn::Tls(_) => false,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
