//! A WebSocket client's link: its connection opened with the upgrade handshake (part of the connection's setup,
//! within `--connect-timeout`), each request one message written masked and the next message read as its answer,
//! pings answered with pongs on the way, and the closing handshake when the client is done.

use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Sleep;

use super::ThreadCtx;
use super::client::Link;
use super::conn::{Conn, Failure, connect_timed};
use super::exchange::{Exchange, timeout_failure};
use crate::metrics::ErrorKind;
use crate::protocol::ws::{self, Event, Fault, FrameDecoder, Mode, handshake};
use crate::protocol::{Answer, PreparedRequest};

/// The status a message's answer is recorded with (text or binary alike): a success under the default
/// `--ok-status`.
const ANSWERED: u16 = 200;

/// One client's WebSocket connection and what reading it needs.
pub(super) struct WsLink {
    conn: Option<Conn>,
    decoder: FrameDecoder,
    /// Bytes read but not decoded yet (after the upgrade's head, or after an answer in the same read), from `at`.
    pending: Vec<u8>,
    at: usize,
    /// A frame being written (a message, a pong, a close), reused.
    out: Vec<u8>,
    /// The masks' and keys' random numbers (xorshift64*: a load generator's masks guard no browser).
    rng: u64,
    /// A script's `response()` wants each answer: the last one, as its body (a message has no status or headers).
    answer: Option<crate::protocol::http::Kept>,
}

/// What a read brought that the exchange must act on.
pub(super) enum Got {
    /// A message: the answer.
    Message,
    /// A control frame or a fault, with the bytes after it kept in `pending`.
    Event(Event),
    Fault(Fault),
}

impl WsLink {
    pub(super) fn new(ctx: &ThreadCtx, id: usize) -> WsLink {
        let plan = &ctx.shared.plan;
        let max = plan.wire.websocket().map_or(u64::MAX, |w| w.max_message);
        let keep = Self::keep(ctx);
        let seed = plan.seed ^ ((plan.client_offset + id) as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        WsLink {
            conn: None,
            decoder: FrameDecoder::new(max).keeping(keep),
            pending: Vec::new(),
            at: 0,
            out: Vec::new(),
            rng: seed | 1,
            answer: None,
        }
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn mask(&mut self) -> [u8; 4] {
        (self.random() as u32).to_ne_bytes()
    }

    /// How much of each message the decoder keeps: the settings' need, or a script's `response()`'s (its body,
    /// as much as an HTTP answer's kept for it).
    fn keep(ctx: &ThreadCtx) -> usize {
        let settings = ctx.shared.plan.wire.websocket().map_or(0, |w| w.keep());
        match ctx.script.wants_message() {
            true => settings.max(crate::protocol::http::response::MOST_KEPT_BODY),
            false => settings,
        }
    }

    pub(super) fn settings(ctx: &ThreadCtx) -> &ws::Settings {
        ctx.shared.plan.wire.websocket().map(|w| &**w).expect("a WebSocket link runs a WebSocket plan")
    }

    pub(super) fn drop_conn(&mut self, ctx: &ThreadCtx) {
        if self.conn.take().is_some() {
            ctx.metrics.borrow_mut().connection_closed();
        }
        self.pending.clear();
        self.at = 0;
    }

    /// Opens the connection and upgrades it; returns the TLS handshake's timing (when TCP was established, and
    /// whether it resumed) if there was one, and when the connection (TLS included) was made, before the upgrade.
    /// `headers`: the upgrade's, filled from templates for the message that opens the connection (None: `-H`'s).
    pub(super) async fn open(
        &mut self,
        ctx: &ThreadCtx,
        endpoint: usize,
        headers: Option<&[(String, String)]>,
    ) -> Result<(Option<crate::metrics::phases::Handshake>, Instant), Failure> {
        let plan = &ctx.shared.plan;
        let limit = plan.connect_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let (conn, tcp_done) = connect_timed(ctx.endpoint(endpoint), ctx.shared.tls.as_ref(), limit, true).await?;
        let connected = Instant::now();
        ctx.metrics.borrow_mut().connection_opened();
        self.conn = Some(conn);
        let mut random = [0u8; 16];
        random[..8].copy_from_slice(&self.random().to_ne_bytes());
        random[8..].copy_from_slice(&self.random().to_ne_bytes());
        let key = handshake::key(random);
        let settings = Self::settings(ctx);
        match headers {
            Some(filled) => handshake::finish_request(&settings.head_with(filled), &key, &mut self.out),
            None => handshake::finish_request(&settings.head, &key, &mut self.out),
        }
        self.pending.clear();
        self.at = 0;
        let upgrade = async {
            let conn = self.conn.as_mut().expect("just opened");
            conn.write_all(&self.out).await.map_err(|e| Failure::from_io(&e))?;
            conn.flush().await.map_err(|e| Failure::from_io(&e))?;
            ctx.metrics.borrow_mut().bytes_out += self.out.len() as u64;
            loop {
                match handshake::read_answer(&self.pending, &key) {
                    handshake::Answer::Upgraded(len) => return Ok(len),
                    handshake::Answer::Refused(status, text) => {
                        return Err(Failure::new(
                            ErrorKind::ws_upgrade(status),
                            format!("the WebSocket upgrade was answered {text}"),
                        ));
                    }
                    handshake::Answer::Invalid(why) => return Err(Failure::new(ErrorKind::WsUpgradeInvalid, why)),
                    handshake::Answer::Partial if self.pending.len() > plan.max_line => {
                        return Err(Failure::new(
                            ErrorKind::WsUpgradeInvalid,
                            format!("an upgrade answer's head longer than --max-line ({} bytes)", plan.max_line),
                        ));
                    }
                    handshake::Answer::Partial => {}
                }
                if read_into(ctx, conn, &mut self.pending).await? == 0 {
                    return Err(Failure::new(ErrorKind::Closed, "the server closed before answering the upgrade"));
                }
            }
        };
        match tokio::time::timeout_at(deadline, upgrade).await {
            Ok(Ok(head)) => {
                self.at = head;
                let settings = Self::settings(ctx);
                self.decoder = FrameDecoder::new(settings.max_message).keeping(Self::keep(ctx));
                Ok((tcp_done, connected))
            }
            Ok(Err(f)) => {
                self.drop_conn(ctx);
                Err(f)
            }
            Err(_) => {
                self.drop_conn(ctx);
                Err(Failure::new(
                    ErrorKind::ConnectTimeout,
                    format!("no answer to the WebSocket upgrade within {}", humantime::format_duration(limit)),
                ))
            }
        }
    }

    /// Writes one frame of `opcode` carrying `payload` (a message, a pong, a close), masked.
    pub(super) async fn send(&mut self, opcode: u8, payload: &[u8]) -> Result<usize, Failure> {
        let mask = self.mask();
        self.out.clear();
        ws::encode(opcode, payload, mask, &mut self.out);
        let conn = self.conn.as_mut().ok_or_else(|| Failure::new(ErrorKind::Closed, "the connection is closed"))?;
        conn.write_all(&self.out).await.map_err(|e| Failure::from_io(&e))?;
        conn.flush().await.map_err(|e| Failure::from_io(&e))?;
        Ok(self.out.len())
    }

    /// Writes one control frame if the socket takes it at once, never waiting: a close after a fault or the
    /// server's own close (a peer that stopped reading must not hold the client), or when the client is dropped.
    fn send_now(&mut self, opcode: u8, payload: &[u8]) {
        let mask = self.mask();
        let Some(conn) = self.conn.as_mut() else { return };
        self.out.clear();
        ws::encode(opcode, payload, mask, &mut self.out);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        if let Poll::Ready(Ok(n)) = Pin::new(&mut *conn).poll_write(&mut cx, &self.out)
            && n == self.out.len()
        {
            let _ = Pin::new(conn).poll_flush(&mut cx);
        }
    }

    /// Reads the next data message whole and judges it against `--expect`.
    async fn answer(&mut self, ctx: &ThreadCtx, deadline: Instant, limit: Duration) -> Result<(), Failure> {
        self.next_message(ctx, deadline, limit).await?;
        self.judge(ctx)
    }

    /// Reads until a data message is complete (its first bytes in [`kept`](Self::kept)), answering pings; a close,
    /// a fault or the connection's end fail.
    async fn next_message(&mut self, ctx: &ThreadCtx, deadline: Instant, limit: Duration) -> Result<(), Failure> {
        loop {
            match self.read_event(ctx, deadline, limit).await? {
                Got::Message => return Ok(()),
                other => self.control(ctx, other).await?,
            }
        }
    }

    /// Reads until a message, a control frame or a fault: only reads, so a caller may drop it at any await (a
    /// connection's reader does when a message is to be written).
    pub(super) async fn read_event(
        &mut self,
        ctx: &ThreadCtx,
        deadline: Instant,
        limit: Duration,
    ) -> Result<Got, Failure> {
        if let Some(got) = self.decode_pending() {
            return Ok(got);
        }
        let WsLink { conn, decoder, pending, at, .. } = self;
        let conn = conn.as_mut().ok_or_else(|| Failure::new(ErrorKind::Closed, "closed"))?;
        read_frames(ctx, conn, decoder, pending, at, deadline, limit).await
    }

    /// What a read other than a message asks of the client: a ping answered with a pong; a close or a fault ends
    /// the connection's use (the close answered, or sent with the fault's code) as the failure returned.
    pub(super) async fn control(&mut self, ctx: &ThreadCtx, got: Got) -> Result<(), Failure> {
        match got {
            Got::Message | Got::Event(Event::Pong | Event::Message { .. }) => Ok(()),
            Got::Event(Event::Ping) => {
                let payload = self.decoder.control().to_vec();
                let n = self.send(ws::PONG, &payload).await?;
                ctx.metrics.borrow_mut().bytes_out += n as u64;
                Ok(())
            }
            Got::Event(Event::Close { code }) => {
                let why = format!(
                    "the server closed the WebSocket with {} {}",
                    code.map_or("no status".to_string(), |c| c.to_string()),
                    crate::base::secrets::scrub_text(&self.decoder.close_reason())
                );
                // The closing handshake answered: the server's code sent back (RFC 6455 5.5.1).
                let payload = code.map(|c| c.to_be_bytes().to_vec()).unwrap_or_default();
                self.send_now(ws::CLOSE, &payload);
                Err(Failure::new(ErrorKind::ws_close(code), why.trim_end().to_string()))
            }
            Got::Fault(fault) => {
                let (kind, code, why) = match fault {
                    Fault::Protocol(why) => (ErrorKind::WsProtocol, 1002, why),
                    Fault::TooLarge(why) => (ErrorKind::WsTooLarge, 1009, why),
                };
                self.send_now(ws::CLOSE, &ws::close_payload(code, ""));
                Err(Failure::new(kind, why))
            }
        }
    }

    /// The first bytes of the answer just read, as many as the settings keep.
    pub(super) fn kept(&self) -> &[u8] {
        self.decoder.kept()
    }

    /// The answer just read against `--expect` (kept: its length and one byte more, so a longer one differs too).
    /// `--stamp-field`: the pushed message just read's fan-out delay, from the send time it carries to now (one
    /// wall-clock read a message, only with the flag).
    fn fan_out(&self, ctx: &ThreadCtx) {
        let Some(pointer) = &Self::settings(ctx).stamp_field else { return };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut m = ctx.metrics.borrow_mut();
        match ws::matching::stamp_at(self.decoder.kept(), pointer) {
            None => m.wire.ws_fan_out.missing += 1,
            Some(sent) if sent > now => m.wire.ws_fan_out.ahead += 1,
            Some(sent) => m.wire.ws_fan_out.delay.record(((now - sent) / 1000) as u64),
        }
    }

    pub(super) fn judge(&self, ctx: &ThreadCtx) -> Result<(), Failure> {
        match &Self::settings(ctx).expect {
            Some(want) if self.decoder.kept() != want.as_slice() => {
                let got = self.decoder.kept();
                let shown = crate::protocol::http::response::quote(&got[..got.len().min(60)]);
                Err(Failure::new(
                    ErrorKind::WrongValue,
                    format!("the answer was not --expect's: \"{}\"", crate::base::secrets::scrub_text(&shown)),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Decodes what is pending; None when it ran out without an event to act on.
    fn decode_pending(&mut self) -> Option<Got> {
        while self.at < self.pending.len() {
            let (n, r) = self.decoder.feed(&self.pending[self.at..]);
            self.at += n;
            match r {
                Ok(None) => {}
                Ok(Some(Event::Message { .. })) => return Some(Got::Message),
                Ok(Some(Event::Pong)) => {}
                Ok(Some(e)) => return Some(Got::Event(e)),
                Err(f) => return Some(Got::Fault(f)),
            }
        }
        self.pending.clear();
        self.at = 0;
        None
    }

    /// The closing handshake of the connection, done by a task of its own: a connect-mode request ends when the
    /// connection is upgraded, and the next one starts at once.
    fn close_later(&mut self, ctx: &Rc<ThreadCtx>) {
        let mut closing = WsLink {
            conn: self.conn.take(),
            decoder: std::mem::replace(&mut self.decoder, FrameDecoder::new(0)),
            pending: std::mem::take(&mut self.pending),
            at: std::mem::take(&mut self.at),
            out: Vec::new(),
            rng: self.random() | 1,
            answer: None,
        };
        // Its closing handshake runs beside the next connection: counted as handing over, not open, so the open
        // connections keep to -c ("8 of 4 open at once" in connect mode before).
        if closing.conn.is_some() {
            ctx.metrics.borrow_mut().connection_handing_over();
        }
        let ctx = Rc::clone(ctx);
        tokio::task::spawn_local(async move {
            closing.handshake_close(&ctx).await;
            if closing.conn.take().is_some() {
                ctx.metrics.borrow_mut().handed_over();
            }
        });
    }

    /// The closing handshake: a close frame (1000), then the server's close (or its end of the connection) waited
    /// for within `--connect-timeout`, messages before it read and dropped.
    pub(super) async fn close(&mut self, ctx: &ThreadCtx) {
        self.handshake_close(ctx).await;
        self.drop_conn(ctx);
    }

    /// [`close`](Self::close)'s handshake, the connection left for the caller to count.
    async fn handshake_close(&mut self, ctx: &ThreadCtx) {
        if self.conn.is_none() {
            return;
        }
        let limit = ctx.shared.plan.connect_timeout;
        let closing = async {
            let n = self.send(ws::CLOSE, &ws::close_payload(1000, "")).await.ok()?;
            ctx.metrics.borrow_mut().bytes_out += n as u64;
            let deadline = Instant::now() + limit;
            loop {
                let got = self.read_event(ctx, deadline, limit).await.ok()?;
                if matches!(got, Got::Event(Event::Close { .. }) | Got::Fault(_)) {
                    return Some(());
                }
            }
        };
        let _ = tokio::time::timeout(limit, closing).await;
    }
}

/// Where a connection's setup phases end: over TLS the handshake's phase ends when the connection is made (the
/// upgrade's round trip is no TLS); on plain TCP the connect phase takes the upgrade too.
pub(super) fn setup_done(tls: bool, connected: Instant, upgraded: Instant) -> Instant {
    if tls { connected } else { upgraded }
}

impl Drop for WsLink {
    /// A client cut off at the step's end still says goodbye: a close frame (1001, going away) written if the
    /// socket takes it at once.
    fn drop(&mut self) {
        self.send_now(ws::CLOSE, &ws::close_payload(1001, ""));
    }
}

impl Link for WsLink {
    fn kept(&self) -> Option<&crate::protocol::http::Kept> {
        self.answer.as_ref()
    }

    async fn join(&mut self, ctx: &Rc<ThreadCtx>, _id: usize) -> bool {
        let settings = Self::settings(ctx);
        if ctx.schedule.is_some() && settings.mode != Mode::Connect && !settings.templated_headers {
            // Open loop: connected and upgraded before asking for a slot, as HTTP's clients are; a failure here is
            // counted by the first request, which opens the connection again. (A connect-mode request opens its
            // own: that is what it measures; templated headers are those of the message that opens it.)
            let start = Instant::now();
            if let Ok((tcp_done, connected)) = self.open(ctx, 0, None).await {
                ctx.record_connect(start, tcp_done, setup_done(tcp_done.is_some(), connected, Instant::now()));
            }
        }
        true
    }

    async fn exchange(
        &mut self,
        ctx: &Rc<ThreadCtx>,
        _id: usize,
        exchange: &Exchange<'_>,
        _prepared: &PreparedRequest,
        mut timer: Pin<&mut Sleep>,
        _pipelined: bool,
    ) -> Result<(Answer, Instant), Failure> {
        let mode = Self::settings(ctx).mode;
        let fresh = self.conn.is_none() || mode == Mode::Connect;
        let sent = if fresh {
            let headers = ctx.script.filled_headers();
            let (tcp_done, connected) = self.open(ctx, exchange.endpoint, headers.as_deref()).await?;
            let now = Instant::now();
            ctx.record_connect(exchange.ready, tcp_done, setup_done(tcp_done.is_some(), connected, now));
            // As HTTP's: the connection's setup is in the latency (from the intended send) and its connect phase,
            // not in the service time.
            now
        } else {
            exchange.ready
        };
        // A connection opened only past the step's end: the message is not sent after it.
        ctx.check_not_over()?;
        let deadline = sent + exchange.timeout;
        timer.as_mut().reset(deadline.into());
        let opcode = Self::settings(ctx).opcode();
        // Listening sends its message (a subscription) once per connection; connecting, one exchange if any.
        let message = match mode {
            Mode::Exchange => Some(exchange.bytes()),
            Mode::Listen | Mode::Connect => Some(exchange.bytes()).filter(|m| fresh && !m.is_empty()),
        };
        let attempt = async {
            if let Some(message) = message {
                let n = self.send(opcode, message).await?;
                exchange.wrote(n);
            } else if mode == Mode::Connect {
                return Ok(());
            }
            self.answer(ctx, deadline, exchange.timeout).await
        };
        let outcome = tokio::select! {
            biased;
            r = attempt => r,
            _ = timer.as_mut() => Err(timeout_failure(exchange.timeout)),
        };
        match outcome {
            Ok(()) => {
                if mode == Mode::Connect {
                    self.close_later(ctx);
                }
                if mode == Mode::Listen {
                    self.fan_out(ctx);
                }
                if ctx.script.wants_message() {
                    let kept = self.answer.get_or_insert_with(Default::default);
                    kept.body.clear();
                    kept.body.extend_from_slice(self.decoder.kept());
                }
                Ok((Answer { status: ANSWERED, keep_alive: true }, sent))
            }
            // A wrong answer was whole: the connection carries the next message (connect mode opens one per request:
            // this one is closed as a right answer's is).
            Err(f) if f.kind == ErrorKind::WrongValue => {
                if mode == Mode::Connect {
                    self.close_later(ctx);
                }
                Err(f)
            }
            Err(f) => {
                // The answer may still come: it would be taken for the next message's.
                self.drop_conn(ctx);
                Err(f)
            }
        }
    }

    async fn close_all(&mut self, ctx: &ThreadCtx) {
        self.close(ctx).await;
    }
}

/// Reads into the thread's buffer and decodes until an event to act on: a message, or a control frame or fault,
/// with what followed it in the same read kept in `pending`. The deadline is checked after every read that ends
/// no message, as HTTP's reads do (a server that never stops sending keeps every read ready).
async fn read_frames(
    ctx: &ThreadCtx,
    conn: &mut Conn,
    decoder: &mut FrameDecoder,
    pending: &mut Vec<u8>,
    at: &mut usize,
    deadline: Instant,
    limit: Duration,
) -> Result<Got, Failure> {
    poll_fn(|cx| {
        loop {
            let read = poll_read(ctx, conn, cx, |data| {
                if data.is_empty() {
                    return Some(Err(Failure::new(
                        ErrorKind::ws_close(Some(1006)),
                        "the connection ended without a WebSocket close frame",
                    )));
                }
                let mut used = 0;
                while used < data.len() {
                    let (n, r) = decoder.feed(&data[used..]);
                    used += n;
                    let got = match r {
                        Ok(None) | Ok(Some(Event::Pong)) => continue,
                        Ok(Some(Event::Message { .. })) => Got::Message,
                        Ok(Some(e)) => Got::Event(e),
                        Err(f) => Got::Fault(f),
                    };
                    pending.clear();
                    pending.extend_from_slice(&data[used..]);
                    *at = 0;
                    return Some(Ok(got));
                }
                None
            });
            match read {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(f)) => return Poll::Ready(Err(f)),
                Poll::Ready(Ok(Some(done))) => return Poll::Ready(done),
                Poll::Ready(Ok(None)) if Instant::now() >= deadline => {
                    return Poll::Ready(Err(timeout_failure(limit)));
                }
                Poll::Ready(Ok(None)) => {}
            }
        }
    })
    .await
}

/// One read appended to `into` (the upgrade's answer); 0 at the connection's end.
async fn read_into(ctx: &ThreadCtx, conn: &mut Conn, into: &mut Vec<u8>) -> Result<usize, Failure> {
    poll_fn(|cx| {
        poll_read(ctx, conn, cx, |data| {
            into.extend_from_slice(data);
            data.len()
        })
    })
    .await
}

/// One read into the thread's buffer (borrowed only here, so connections hold no buffer of their own), its bytes
/// counted and handed to `take`: empty at the connection's end.
fn poll_read<T>(
    ctx: &ThreadCtx,
    conn: &mut Conn,
    cx: &mut Context<'_>,
    take: impl FnOnce(&[u8]) -> T,
) -> Poll<Result<T, Failure>> {
    let mut scratch = ctx.scratch.borrow_mut();
    let mut buf = ReadBuf::new(&mut scratch[..]);
    match Pin::new(&mut *conn).poll_read(cx, &mut buf) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(Err(e)) => Poll::Ready(Err(Failure::from_io(&e))),
        Poll::Ready(Ok(())) => {
            let data = buf.filled();
            ctx.metrics.borrow_mut().bytes_in += data.len() as u64;
            Poll::Ready(Ok(take(data)))
        }
    }
}
