//! The QUIC connection h3 sees, with a guard on every stream the server writes to (h3 0.0.8 buffers a frame whole
//! and never reads the QPACK streams; see protocol/h3_frames.rs): request streams and the control stream read
//! through [`Frames`] (unknown frames skipped as they come, each frame refused at a length past its bound), the
//! server's QPACK encoder and decoder streams read and dropped here (hakaru allows no dynamic table, so nothing
//! on them can matter), other streams handed to h3 as they are (it stops or drops them). What hakaru keeps of a
//! connection is then bounded by QUIC's windows (engine/h3.rs) and the frames' bounds, whatever the server sends.
//!
//! A breach on a request stream fails that request (HEADERS past `--max-header-list`: `header_list`); one on the
//! control stream, or a frame type HTTP/3 forbids, closes the connection with its HTTP/3 code, as RFC 9114 says.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};

use super::conn::Failure;
use super::h3_failures::Refused;
use crate::metrics::ErrorKind;
use crate::protocol::h3 as proto;
use crate::protocol::h3_frames::{Breach, Frames, varint};

/// HTTP/3's unidirectional stream types (RFC 9114 6.2, RFC 9204 4.2).
const CONTROL: u64 = 0x0;
const QPACK_ENCODER: u64 = 0x2;
const QPACK_DECODER: u64 = 0x3;

/// The most chunks of the QPACK streams dropped in one poll of the connection, so a flood does not hold the
/// thread's loop: the rest waits for the next poll (the task is woken at once).
const DRAIN_BURST: usize = 64;

/// What a connection's guards share: the connection (to close it on a breach) and the breach that closed it.
pub(super) struct Guard {
    quic: quinn::Connection,
    headers_most: u64,
    closed_for: Mutex<Option<Breach>>,
}

impl Guard {
    pub(super) fn new(quic: quinn::Connection, headers_most: u64) -> Arc<Guard> {
        Arc::new(Guard { quic, headers_most, closed_for: Mutex::new(None) })
    }

    /// The failure of the requests the connection's end (`e`) cut: the server's breach that made hakaru close it,
    /// else [`h3_connection_failure`]'s.
    pub(super) fn connection_failure(&self, e: &h3::error::ConnectionError) -> Failure {
        self.closed_for().unwrap_or_else(|| super::h3_failures::h3_connection_failure(Some(&self.quic), e))
    }

    /// The failure of the requests a breach of the server's cut, when one closed the connection.
    pub(super) fn closed_for(&self) -> Option<Failure> {
        let breach = self.closed_for.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()?;
        Some(Failure::new(
            ErrorKind::h3(breach.code()),
            format!(
                "the server broke HTTP/3's rules: {} ({}); hakaru closed the connection",
                proto::code_text(breach.code()),
                breach.text()
            ),
        ))
    }

    /// Closes the connection for `breach`, which the requests it cuts are then failed with.
    fn close(&self, breach: Breach) -> StreamErrorIncoming {
        let code = breach.code();
        self.quic.close(quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX), b"");
        self.closed_for.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(breach);
        StreamErrorIncoming::ConnectionErrorIncoming {
            connection_error: ConnectionErrorIncoming::ApplicationClose { error_code: code },
        }
    }
}

/// Where a stream's breach ends: its request, or the whole connection (the control stream).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Request,
    Connection,
}

/// A stream's bytes on their way to h3.
struct Reader {
    /// None: the stream goes to h3 as it is (a push or unknown stream, which h3 stops or drops).
    frames: Option<Frames>,
    ready: VecDeque<Bytes>,
    ended: bool,
    /// A read of the stream is under way (its last poll was pending): h3-quinn's stream is then inside that read,
    /// and its `stop_sending` would panic (it unwraps the stream). The stream is stopped when dropped instead.
    reading: bool,
    scope: Scope,
    guard: Arc<Guard>,
}

impl Reader {
    fn new(guard: &Arc<Guard>, scope: Scope, framed: bool) -> Reader {
        Reader {
            frames: framed.then(|| Frames::new(guard.headers_most)),
            ready: VecDeque::new(),
            ended: false,
            reading: false,
            scope,
            guard: Arc::clone(guard),
        }
    }

    fn poll<R: quic::RecvStream<Buf = Bytes>>(
        &mut self,
        inner: &mut R,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Poll::Ready(Ok(Some(b)));
            }
            if self.ended {
                return Poll::Ready(Ok(None));
            }
            let polled = inner.poll_data(cx);
            self.reading = polled.is_pending();
            match std::task::ready!(polled)? {
                Some(chunk) => self.feed(chunk, inner)?,
                None => {
                    self.ended = true;
                    if let Some(Err(b)) = self.frames.as_mut().map(|f| f.end(&mut self.ready)) {
                        self.ready.clear();
                        return Poll::Ready(Err(self.guard.close(b)));
                    }
                }
            }
        }
    }

    fn feed<R: quic::RecvStream>(&mut self, chunk: Bytes, inner: &mut R) -> Result<(), StreamErrorIncoming> {
        let Some(frames) = self.frames.as_mut() else {
            self.ready.push_back(chunk);
            return Ok(());
        };
        match frames.feed(chunk, &mut self.ready) {
            Ok(()) => Ok(()),
            Err(b @ Breach::TooLong { .. }) if self.scope == Scope::Request => {
                inner.stop_sending(b.code());
                self.ready.clear();
                Err(StreamErrorIncoming::Unknown(Box::new(Refused(b))))
            }
            Err(b) => {
                self.ready.clear();
                Err(self.guard.close(b))
            }
        }
    }
}

/// A stream the server writes to, as h3 reads it.
pub(super) struct Recv<R> {
    inner: R,
    reader: Reader,
}

impl<R: quic::RecvStream<Buf = Bytes>> quic::RecvStream for Recv<R> {
    type Buf = Bytes;

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.reader.poll(&mut self.inner, cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        if !self.reader.reading {
            self.inner.stop_sending(error_code);
        }
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}

/// A request stream: sent as h3 writes it, its answer read through a [`Reader`].
pub(super) struct Bidi {
    inner: h3_quinn::BidiStream<Bytes>,
    reader: Reader,
}

impl quic::RecvStream for Bidi {
    type Buf = Bytes;

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.reader.poll(&mut self.inner, cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        if !self.reader.reading {
            quic::RecvStream::stop_sending(&mut self.inner, error_code);
        }
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}

impl quic::SendStream<Bytes> for Bidi {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<Bytes>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        self.inner.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.inner.reset(reset_code);
    }

    fn send_id(&self) -> StreamId {
        self.inner.send_id()
    }
}

impl quic::BidiStream<Bytes> for Bidi {
    type SendStream = h3_quinn::SendStream<Bytes>;
    type RecvStream = Recv<h3_quinn::RecvStream>;

    fn split(self) -> (Self::SendStream, Self::RecvStream) {
        let (send, recv) = self.inner.split();
        (send, Recv { inner: recv, reader: self.reader })
    }
}

/// A unidirectional stream of the server's whose type is not read yet.
struct Typing {
    stream: h3_quinn::RecvStream,
    got: Vec<Bytes>,
}

impl Typing {
    /// Its type, once read (None: it ended or failed first, and is dropped, as RFC 9114 6.2 allows).
    fn poll_type(&mut self, cx: &mut Context<'_>) -> Poll<Option<u64>> {
        use quic::RecvStream as _;
        loop {
            let first: Vec<u8> = self.got.iter().flat_map(|b| b.iter().copied()).take(8).collect();
            if let Some((ty, _)) = varint(&first) {
                return Poll::Ready(Some(ty));
            }
            match std::task::ready!(self.stream.poll_data(cx)) {
                Ok(Some(b)) => self.got.push(b),
                Ok(None) | Err(_) => return Poll::Ready(None),
            }
        }
    }
}

/// The connection as h3 sees it.
pub(super) struct Conn {
    inner: h3_quinn::Connection,
    guard: Arc<Guard>,
    typing: Vec<Typing>,
    /// The server's QPACK streams, read and dropped.
    draining: Vec<h3_quinn::RecvStream>,
    /// Opens the streams hakaru writes to.
    opener: Opener,
}

impl Conn {
    pub(super) fn new(quic: &quinn::Connection, guard: &Arc<Guard>) -> Conn {
        let inner = h3_quinn::Connection::new(quic.clone());
        let opener = Opener { inner: quic::Connection::<Bytes>::opener(&inner), guard: Arc::clone(guard) };
        Conn { inner, guard: Arc::clone(guard), typing: Vec::new(), draining: Vec::new(), opener }
    }

    /// Reads what the QPACK streams hold, and drops it.
    fn drain(&mut self, cx: &mut Context<'_>) {
        use quic::RecvStream as _;
        let mut burst = 0;
        self.draining.retain_mut(|s| {
            loop {
                if burst == DRAIN_BURST {
                    cx.waker().wake_by_ref();
                    return true;
                }
                match s.poll_data(cx) {
                    Poll::Ready(Ok(Some(_))) => burst += 1,
                    Poll::Ready(Ok(None) | Err(_)) => return false,
                    Poll::Pending => return true,
                }
            }
        });
    }
}

impl quic::Connection<Bytes> for Conn {
    type RecvStream = Recv<h3_quinn::RecvStream>;
    type OpenStreams = Opener;

    fn poll_accept_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        self.drain(cx);
        while let Poll::Ready(stream) = quic::Connection::<Bytes>::poll_accept_recv(&mut self.inner, cx)? {
            self.typing.push(Typing { stream, got: Vec::new() });
        }
        let mut i = 0;
        while i < self.typing.len() {
            let ty = match self.typing[i].poll_type(cx) {
                Poll::Pending => {
                    i += 1;
                    continue;
                }
                Poll::Ready(ty) => ty,
            };
            let Typing { stream, got } = self.typing.swap_remove(i);
            match ty {
                None => {}
                Some(QPACK_ENCODER | QPACK_DECODER) => {
                    self.draining.push(stream);
                    self.drain(cx);
                }
                Some(ty) => return Poll::Ready(Ok(self.hand_over(stream, got, ty)?)),
            }
        }
        Poll::Pending
    }

    fn poll_accept_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let inner = std::task::ready!(quic::Connection::<Bytes>::poll_accept_bidi(&mut self.inner, cx))?;
        Poll::Ready(Ok(Bidi { inner, reader: Reader::new(&self.guard, Scope::Connection, true) }))
    }

    fn opener(&self) -> Opener {
        self.opener.clone()
    }
}

impl Conn {
    /// A typed stream for h3: its first bytes (the type, and what came with it) ahead of the rest; the control
    /// stream's frames read through [`Frames`] from after its type on.
    fn hand_over(
        &self,
        stream: h3_quinn::RecvStream,
        got: Vec<Bytes>,
        ty: u64,
    ) -> Result<Recv<h3_quinn::RecvStream>, ConnectionErrorIncoming> {
        let mut reader = Reader::new(&self.guard, Scope::Connection, ty == CONTROL);
        let mut got: Bytes = match got.len() {
            1 => got.into_iter().next().unwrap_or_default(),
            _ => got.concat().into(),
        };
        let (_, n) = varint(&got).unwrap_or((ty, 1));
        reader.ready.push_back(got.split_to(n));
        if !got.is_empty() {
            match reader.frames.as_mut() {
                Some(frames) => {
                    if let Err(b) = frames.feed(got, &mut reader.ready) {
                        let error_code = b.code();
                        self.guard.close(b);
                        return Err(ConnectionErrorIncoming::ApplicationClose { error_code });
                    }
                }
                None => reader.ready.push_back(got),
            }
        }
        Ok(Recv { inner: stream, reader })
    }
}

impl quic::OpenStreams<Bytes> for Conn {
    type BidiStream = Bidi;
    type SendStream = h3_quinn::SendStream<Bytes>;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi, StreamErrorIncoming>> {
        self.opener.poll_open_bidi(cx)
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.opener.poll_open_send(cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        self.opener.close(code, reason);
    }
}

/// Opens request streams for h3's senders, each with its guard.
#[derive(Clone)]
pub(super) struct Opener {
    inner: h3_quinn::OpenStreams,
    guard: Arc<Guard>,
}

impl quic::OpenStreams<Bytes> for Opener {
    type BidiStream = Bidi;
    type SendStream = h3_quinn::SendStream<Bytes>;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi, StreamErrorIncoming>> {
        let inner = std::task::ready!(quic::OpenStreams::<Bytes>::poll_open_bidi(&mut self.inner, cx))?;
        Poll::Ready(Ok(Bidi { inner, reader: Reader::new(&self.guard, Scope::Request, true) }))
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        quic::OpenStreams::<Bytes>::poll_open_send(&mut self.inner, cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<Bytes>::close(&mut self.inner, code, reason);
    }
}
