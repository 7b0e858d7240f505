//! A request's or a connection's failure: its exact kind (what the document counts it under) and a message kept as a
//! sample; an I/O error classified (a reset, a close, a TLS alert, a timeout).

use std::io;

use crate::metrics::ErrorKind;

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
