//! One request as the engine's links see it (`Exchange`: its bytes, endpoint, timeout, the time the client was ready,
//! the bytes written and the first byte's time) and the failures every link words alike: a timeout, an answer that
//! does not decode. Below the client loop and the links, so that each imports it and none imports the other for it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::conn::Failure;
use crate::metrics::ErrorKind;
use crate::protocol::{DecodeError, PreparedRequest};

/// The bytes of one request and what the loop must know of them: a plan's prepared request, or a workload's op.
pub(in crate::engine) struct Wire<'a> {
    pub(in crate::engine) bytes: &'a [u8],
    pub(in crate::engine) expects_no_body: bool,
    pub(in crate::engine) idempotent: bool,
    /// Built for this request (a workload's op, a script's or a template's request), not the plan's prepared one.
    pub(in crate::engine) built: bool,
}

impl Wire<'_> {
    pub(in crate::engine) fn prepared(r: &PreparedRequest) -> Wire<'_> {
        Wire { bytes: &r.bytes, expects_no_body: r.expects_no_body, idempotent: r.idempotent, built: false }
    }
}

/// One request to send on the client's connection to `endpoint`.
pub(in crate::engine) struct Exchange<'a> {
    pub(in crate::engine) request: Wire<'a>,
    pub(in crate::engine) endpoint: usize,
    pub(in crate::engine) timeout: Duration,
    /// When the client was ready to send (the send time, unless a connection must be opened first).
    pub(in crate::engine) ready: Instant,
    /// Bytes written for this request (twice the request when it was retried on a new connection).
    pub(in crate::engine) written: Cell<u64>,
    /// When the answer's first bytes were read, when they came in a read before the one that ended it (None: the
    /// answer came whole in one read, so its first byte's time is its end's, and no clock was read for it).
    pub(in crate::engine) first_byte: Cell<Option<Instant>>,
    /// When the answer ended, when that was before the exchange did: an answer that ended at its end event
    /// (`--events`) while the rest of its body was still to read (None: the answer ended when the exchange did).
    pub(in crate::engine) ended: Cell<Option<Instant>>,
}

impl Exchange<'_> {
    /// The request's bytes: a WebSocket link frames them as its message.
    pub(in crate::engine) fn bytes(&self) -> &[u8] {
        self.request.bytes
    }

    /// `n` bytes were written for the request (a WebSocket message's frame).
    pub(in crate::engine) fn wrote(&self, n: usize) {
        self.written.set(self.written.get() + n as u64);
    }

    /// The request's bytes when they were built for it (a template's HTTP/2 frames), not the plan's prepared ones.
    pub(in crate::engine) fn built(&self) -> Option<&[u8]> {
        self.request.built.then_some(self.request.bytes)
    }
}

/// The failure of a request whose answer did not come whole within `limit`.
pub(in crate::engine) fn timeout_failure(limit: Duration) -> Failure {
    Failure::new(ErrorKind::Timeout, format!("no complete answer within {}", humantime::format_duration(limit)))
}

/// The failure of an answer that does not decode, by what is wrong with it.
pub(in crate::engine) fn decode_failure(e: DecodeError) -> Failure {
    match e {
        DecodeError::Malformed(m) => Failure::new(ErrorKind::Malformed, m),
        DecodeError::Truncated(m) => Failure::new(ErrorKind::Closed, m),
        DecodeError::LineTooLong(m) => Failure::new(ErrorKind::LineTooLong, m),
        DecodeError::StreamCut(m) => Failure::new(ErrorKind::StreamCut, m),
        DecodeError::StreamTooLong(m) => Failure::new(ErrorKind::StreamTooLong, m),
    }
}
