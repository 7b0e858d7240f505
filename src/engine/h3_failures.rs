//! What ended an HTTP/3 handshake, connection or request stream, as a failure of its exact kind: QUIC's transport
//! errors and resets, HTTP/3's error codes, the idle timeout, a GOAWAY (engine/h3.rs's requests and connections).

use std::time::Duration;

use super::conn::Failure;
use crate::metrics::ErrorKind;
use crate::protocol::h3 as proto;
use crate::protocol::h3_frames::Breach;

/// How long a connection may go without a packet from the server before QUIC ends it (`idle_timeout`, set in
/// engine/h3.rs's transport and named in the failure it gives); each request's own `--timeout` holds apart from it.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP/3's code of a request the server did not process (RFC 9114 8.1): safe to send again.
pub(super) const H3_REQUEST_REJECTED: u64 = 0x10b;

/// The failure of a handshake that did not complete.
pub(super) fn handshake_failure(e: &quinn::ConnectionError) -> Failure {
    match e {
        quinn::ConnectionError::TimedOut => Failure::new(ErrorKind::ConnectTimeout, "no answer to the QUIC handshake"),
        quinn::ConnectionError::TransportError(t) if t.code == quinn::TransportErrorCode::crypto(120) => {
            Failure::new(ErrorKind::HandshakeFailed, "no h3 in the server's ALPN (no_application_protocol)")
        }
        quinn::ConnectionError::ConnectionClosed(c) if c.error_code == quinn::TransportErrorCode::crypto(120) => {
            Failure::new(ErrorKind::HandshakeFailed, "the server refused ALPN h3 (alert no_application_protocol)")
        }
        other => Failure::new(ErrorKind::HandshakeFailed, format!("the QUIC handshake failed: {other}")),
    }
}

/// The failure a connection's end gives the requests it cut, by what ended it.
fn connection_failure(e: &quinn::ConnectionError) -> Failure {
    use quinn::ConnectionError as E;
    match e {
        E::TimedOut => Failure::new(
            ErrorKind::IdleTimeout,
            format!("nothing from the server for {}: QUIC's idle timeout", humantime::format_duration(IDLE_TIMEOUT)),
        ),
        E::ApplicationClosed(c) => {
            let code = c.error_code.into_inner();
            Failure::new(
                ErrorKind::h3(code),
                format!("the server closed the connection with {}{}", proto::code_text(code), reason(&c.reason)),
            )
        }
        E::ConnectionClosed(c) => Failure::new(
            ErrorKind::QuicTransport,
            format!(
                "the server closed the connection with a QUIC transport error: {}{}",
                c.error_code,
                reason(&c.reason)
            ),
        ),
        E::TransportError(t) => Failure::new(ErrorKind::QuicTransport, format!("the server broke QUIC's rules: {t}")),
        E::Reset => Failure::new(ErrorKind::QuicReset, "the server sent a stateless reset: it has no such connection"),
        E::VersionMismatch => Failure::new(ErrorKind::HandshakeFailed, "the server speaks no QUIC version hakaru does"),
        E::LocallyClosed | E::CidsExhausted => Failure::new(ErrorKind::Closed, format!("the connection ended ({e})")),
    }
}

/// A reason phrase the server gave, printable and short, after ": ".
fn reason(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return String::new();
    }
    let shown: String =
        crate::base::secrets::scrubbed_start(&String::from_utf8_lossy(bytes), 100).escape_debug().collect();
    format!(" (\"{shown}\")")
}

/// The failure an HTTP/3 connection's end gives the requests it cut: a rule of HTTP/3's the server broke (hakaru's
/// side closed the connection with that code), else QUIC's own reason when it has one (an idle timeout, the
/// server's CONNECTION_CLOSE and its code), else what h3 said.
pub(super) fn h3_connection_failure(quic: Option<&quinn::Connection>, e: &h3::error::ConnectionError) -> Failure {
    use h3::error::{ConnectionError as C, LocalError};
    if let C::Local { error: LocalError::Application { code, reason, .. }, .. } = e {
        return Failure::new(
            ErrorKind::h3(code.value()),
            format!(
                "the server broke HTTP/3's rules: {} ({}); hakaru closed the connection",
                proto::code_text(code.value()),
                crate::base::secrets::scrub_text(reason)
            ),
        );
    }
    if let Some(reason) = quic.and_then(quinn::Connection::close_reason) {
        return connection_failure(&reason);
    }
    match e {
        C::Timeout { .. } => connection_failure(&quinn::ConnectionError::TimedOut),
        other => Failure::new(ErrorKind::Closed, format!("the HTTP/3 connection ended ({other})")),
    }
}

/// The failure of a request whose stream ended in `e`; the connection's end (`quic`'s reason) is read when the
/// connection's end was it.
pub(super) fn stream_failure(quic: Option<&quinn::Connection>, e: h3::error::StreamError) -> Failure {
    use h3::error::StreamError as S;
    match e {
        S::RemoteTerminate { code, .. } => Failure::new(
            ErrorKind::h3(code.value()),
            format!("the server reset the stream with {}", proto::code_text(code.value())),
        ),
        S::StreamError { code, reason, .. } => Failure::new(
            ErrorKind::h3(code.value()),
            format!("the answer broke HTTP/3's rules: {} ({})", proto::code_text(code.value()), reason),
        ),
        S::ConnectionError { 0: c, .. } => h3_connection_failure(quic, &c),
        S::HeaderTooBig { actual_size, max_size, .. } => Failure::new(
            ErrorKind::HeaderList,
            format!("a header section of {actual_size} bytes, past --max-header-list ({max_size})"),
        ),
        S::RemoteClosing { .. } => goaway(),
        S::Undefined { 0: e, .. } if e.is::<Refused>() => e
            .downcast_ref::<Refused>()
            .map(Refused::failure)
            .unwrap_or_else(|| Failure::new(ErrorKind::Io, e.to_string())),
        other => Failure::new(ErrorKind::Io, other.to_string()),
    }
}

/// The failure of a request a GOAWAY kept from being sent.
pub(super) fn goaway() -> Failure {
    Failure::new(ErrorKind::Goaway, "the server sent GOAWAY: no new request on its connection")
}

/// A request refused by its own stream's breach (a HEADERS frame past `--max-header-list`): h3 hands it back as
/// `StreamError::Undefined`, made by engine/h3_guard.rs, read here.
#[derive(Debug)]
pub(super) struct Refused(pub Breach);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.text())
    }
}

impl std::error::Error for Refused {}

impl Refused {
    pub(super) fn failure(&self) -> Failure {
        match &self.0 {
            Breach::TooLong { frame: "HEADERS", len, most } => Failure::new(
                ErrorKind::HeaderList,
                format!("a HEADERS frame of {len} bytes, past --max-header-list ({most}): not read"),
            ),
            b => Failure::new(ErrorKind::h3(b.code()), format!("{}: not read", b.text())),
        }
    }
}
