//! HTTP/3 on the engine's loop: QUIC by `quinn` (one UDP socket per thread and address family, its driver a task
//! of the thread's tokio loop), HTTP/3 framing and QPACK by `h3` over `h3-quinn`. Each thread keeps a pool of
//! connections; a client of the engine is a stream slot, as with HTTP/2 (engine/h2/).
//!
//! `-c` connections x `--streams` slots per thread's share; slot k of a thread uses the k / streams-th connection
//! (closed loop) or the least busy open connection with a free stream (open loop). A connection is opened by a
//! task of its own, which then drives it (the `h3` driver reads the control stream: SETTINGS, GOAWAY) until it ends.
//! A request the server did not process (the connection's GOAWAY came first, or the stream was reset with
//! H3_REQUEST_REJECTED) goes again, once: on a new connection after a GOAWAY.
//! Every wait is under the request's timer: the connection's opening, a stream the server's limit holds back, the
//! answer.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use tokio::sync::watch;
use tokio::time::Sleep;

use crate::metrics::QuicCounts;
use crate::protocol::events::EventReader;
use crate::protocol::http::Kept;

use super::ThreadCtx;
use super::client::Link;
use super::conn::Failure;
use super::exchange::{Exchange, timeout_failure};
use super::grid::{Grid, Multiplexed};
use super::h3_failures::{
    H3_REQUEST_REJECTED, IDLE_TIMEOUT, goaway, h3_connection_failure, handshake_failure, stream_failure,
};
use super::h3_guard::{Guard, Opener};
use crate::metrics::ErrorKind;
use crate::metrics::phases::Handshake;
use crate::protocol::h3::{self as proto, Request};
use crate::protocol::{Answer, PreparedRequest};

/// The window the client gives the server per stream: 16 MiB, 1.3 Gbit/s a stream at 100 ms of round trip, so that
/// flow control is not what is measured on any link a benchmark uses.
const STREAM_WINDOW: u32 = 16 << 20;

/// The connection's window (quinn's default is unbounded): the most a server can have hakaru hold of one
/// connection's data not yet read. Every stream is read as it comes (engine/h3_guard.rs), so this bounds what a
/// server can make a connection keep: docs/counting.md's table.
const CONNECTION_WINDOW: u32 = 2 * STREAM_WINDOW;

/// A pause before a connection is opened again after the last one failed, so a server that refuses every
/// handshake is not met with a tight loop of new ones.
const REOPEN_PAUSE: Duration = Duration::from_millis(100);

/// HTTP/3's code of a connection closed without an error (RFC 9114 8.1).
const H3_NO_ERROR: u32 = 0x100;

type SendRequest = h3::client::SendRequest<Opener, Bytes>;

/// The pool of one thread: a connection per (group of `--streams` slots, endpoint), its QUIC endpoints (one UDP
/// socket per address family) and the requests as HTTP/3 sends them.
pub(super) struct Pool {
    grid: Grid<H3Conn>,
    config: quinn::ClientConfig,
    sockets: RefCell<[Option<quinn::Endpoint>; 2]>,
    /// The plan's requests read as HTTP/3's, by their bytes' place (each request's bytes are a slice of its own).
    requests: RefCell<HashMap<(usize, usize), Rc<Request>>>,
    /// `--0rtt`: a server refused this thread's early data, so its later connections make full handshakes.
    early_refused: Cell<bool>,
}

thread_local! {
    /// The pool of the step this thread runs, keyed by the step's shared state (engine threads run one step each).
    static POOL: RefCell<Option<(usize, Rc<Pool>)>> = const { RefCell::new(None) };
}

/// The QUIC client settings of a run: its TLS (ALPN h3, TLS 1.3) and large windows.
pub(super) fn client_config(plan: &crate::plan::RunPlan) -> Result<quinn::ClientConfig, String> {
    let tls = super::tls::Tls::quic(&plan.tls, plan.insecure);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("cannot set up QUIC's TLS ({e})"))?;
    let mut transport = quinn::TransportConfig::default();
    transport.stream_receive_window(quinn::VarInt::from_u32(STREAM_WINDOW));
    transport.receive_window(quinn::VarInt::from_u32(CONNECTION_WINDOW));
    // A server opens no request stream in HTTP/3 (RFC 9114 6.1): none is allowed, so none holds data.
    transport.max_concurrent_bidi_streams(quinn::VarInt::from_u32(0));
    transport.send_window(u64::from(STREAM_WINDOW) * 4);
    transport.max_idle_timeout(Some(quinn::IdleTimeout::try_from(IDLE_TIMEOUT).expect("30 s is a QUIC idle timeout")));
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// The thread's pool for this step, made at its first use.
pub(super) fn pool(ctx: &ThreadCtx, spec: &super::grid::Spec) -> Rc<Pool> {
    super::step_local(&POOL, ctx, || Pool {
        grid: Grid::new(spec),
        // Checked before the load (preflight made the same settings).
        config: client_config(&ctx.shared.plan).expect("checked before the load"),
        sockets: RefCell::new([None, None]),
        requests: RefCell::new(HashMap::new()),
        early_refused: Cell::new(false),
    })
}

impl Pool {
    /// The connection a slot sends on (see [`Grid::pick`]); one that ended is reopened to go on.
    fn pick(self: &Rc<Self>, ctx: &Rc<ThreadCtx>, slot: usize, endpoint: usize) -> Rc<H3Conn> {
        self.grid.pick(slot, endpoint, |ended| self.reopen(ctx, ended, endpoint))
    }

    /// A new connection in place of `ended` (None at first), after a pause when that one failed or never answered.
    fn reopen(self: &Rc<Self>, ctx: &Rc<ThreadCtx>, ended: Option<&H3Conn>, endpoint: usize) -> Rc<H3Conn> {
        let pause = match ended {
            Some(c) if c.failure.borrow().is_some() || !c.answered.get() => REOPEN_PAUSE,
            _ => Duration::ZERO,
        };
        if ended.is_some_and(|c| !c.retired.get()) {
            ctx.metrics.borrow_mut().reconnects += 1;
        }
        let conn = Rc::new(H3Conn {
            phase: watch::Sender::new(Phase::Opening),
            send: RefCell::new(None),
            quic: RefCell::new(None),
            guard: RefCell::new(None),
            failure: RefCell::new(None),
            in_flight: Cell::new(0),
            answered: Cell::new(false),
            seen: Cell::new((0, 0, QuicCounts::default())),
            early: RefCell::new(None),
            early_refused: Cell::new(false),
            claimed: Cell::new(0),
            retired: Cell::new(false),
        });
        tokio::task::spawn_local(run_connection(Rc::clone(ctx), Rc::clone(self), Rc::clone(&conn), endpoint, pause));
        conn
    }

    /// The thread's QUIC endpoint for the address family of `ep`, bound at its first use.
    fn socket(&self, ep: &crate::base::target::Endpoint) -> Result<quinn::Endpoint, Failure> {
        let i = usize::from(ep.addr.is_ipv6());
        let mut sockets = self.sockets.borrow_mut();
        if let Some(s) = &sockets[i] {
            return Ok(s.clone());
        }
        let mut s = quinn::Endpoint::client(local_address(ep)).map_err(|e| Failure::from_io(&e))?;
        s.set_default_client_config(self.config.clone());
        sockets[i] = Some(s.clone());
        Ok(s)
    }

    /// The plan's request as HTTP/3 sends it, read from its bytes at its first use on this thread.
    fn request(&self, prepared: &PreparedRequest) -> Result<Rc<Request>, Failure> {
        let key = (prepared.bytes.as_ptr() as usize, prepared.bytes.len());
        if let Some(r) = self.requests.borrow().get(&key) {
            return Ok(Rc::clone(r));
        }
        let r = Rc::new(proto::from_http1(&prepared.bytes).map_err(|why| Failure::new(ErrorKind::Io, why))?);
        self.requests.borrow_mut().insert(key, Rc::clone(&r));
        Ok(r)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The QUIC handshake and HTTP/3's SETTINGS under way.
    Opening,
    Open,
    /// The server sent GOAWAY (or the connection ended): no new stream starts on it.
    Draining,
    Dead,
}

impl Multiplexed for H3Conn {
    fn in_flight_if_free(&self, streams: usize) -> Option<usize> {
        (*self.phase.borrow() == Phase::Open && self.in_flight.get() < streams).then(|| self.in_flight.get())
    }

    fn usable(&self) -> bool {
        matches!(*self.phase.borrow(), Phase::Opening | Phase::Open)
    }
}

/// A connection as its streams and its task share it.
struct H3Conn {
    phase: watch::Sender<Phase>,
    send: RefCell<Option<SendRequest>>,
    quic: RefCell<Option<quinn::Connection>>,
    guard: RefCell<Option<Arc<Guard>>>,
    /// Why it could not be opened, or why it ended (the failure of the requests that find it so).
    failure: RefCell<Option<Failure>>,
    in_flight: Cell<usize>,
    /// It carried an answer: a connection that ended before any is reopened after a pause.
    answered: Cell<bool>,
    /// The UDP bytes sent and received and QUIC's counts that are counted already (quinn's statistics are per
    /// connection, from its start).
    seen: Cell<(u64, u64, QuicCounts)>,
    /// `--0rtt`: whether the server accepted the connection's early data, until the handshake ends and it is counted.
    early: RefCell<Option<Pin<Box<quinn::ZeroRttAccepted>>>>,
    /// The server refused its early data: the requests sent in it never reached the server.
    early_refused: Cell<bool>,
    /// Streams claimed on it; `--max-requests-per-connection` retires it at that many (no reconnect: hakaru's
    /// own close, counted in `closed_by_hakaru`).
    claimed: Cell<u64>,
    retired: Cell<bool>,
}

/// Why no stream could be had on a connection.
enum Claim {
    /// It ended or drains (GOAWAY): pick another.
    Gone,
    /// It could not be opened.
    Failed(Failure),
}

impl H3Conn {
    /// Waits until the connection is open and can take a request; returns whether it waited. (A receiver of the
    /// phase only when it has to wait: the last one dropped wakes the sender's waiters, a cost each request paid.)
    async fn claim(&self) -> Result<bool, Claim> {
        let waited = *self.phase.borrow() == Phase::Opening;
        if waited {
            self.phase.subscribe().wait_for(|p| *p != Phase::Opening).await.map_err(|_| Claim::Gone)?;
        }
        let phase = *self.phase.borrow();
        match (phase, self.send.borrow().is_some()) {
            (Phase::Open, true) => Ok(waited),
            _ => match self.failure.borrow().clone() {
                Some(f) if !self.answered.get() => Err(Claim::Failed(f)),
                _ => Err(Claim::Gone),
            },
        }
    }

    /// No new stream starts on it: the server said GOAWAY, or it ended.
    fn drain(&self) {
        self.phase.send_if_modified(|p| {
            let open = *p == Phase::Open;
            if open {
                *p = Phase::Draining;
            }
            open
        });
        self.close_if_drained();
    }

    /// A draining connection whose last stream ended is closed (H3_NO_ERROR): the new one carries the load.
    fn close_if_drained(&self) {
        if *self.phase.borrow() == Phase::Draining && self.in_flight.get() == 0 {
            self.send.borrow_mut().take();
            if let Some(quic) = self.quic.borrow().as_ref() {
                quic.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"");
            }
        }
    }

    /// The failure of a request that the connection's end (`e`) cut: the server's breach that made hakaru close it,
    /// else see [`h3_connection_failure`].
    fn ended(&self, e: &h3::error::ConnectionError) -> Failure {
        match self.guard.borrow().as_ref() {
            Some(g) => g.connection_failure(e),
            None => h3_connection_failure(self.quic.borrow().as_ref(), e),
        }
    }

    /// The failure of a request whose stream ended in `e` (see [`stream_failure`]), the breach that closed the
    /// connection first.
    fn stream_failure(&self, e: h3::error::StreamError) -> Failure {
        match e {
            h3::error::StreamError::ConnectionError { .. } => self.breach(),
            _ => None,
        }
        .unwrap_or_else(|| stream_failure(self.quic.borrow().as_ref(), e))
    }

    fn breach(&self) -> Option<Failure> {
        self.guard.borrow().as_ref().and_then(|g| g.closed_for())
    }

    /// `--0rtt`: whether the server accepted the early data, once the handshake ended (looked at without waiting);
    /// said once, None before and after.
    fn early_said(&self) -> Option<bool> {
        let mut early = self.early.borrow_mut();
        let said = early.as_mut().and_then(|f| match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(accepted) => Some(accepted),
            Poll::Pending => None,
        });
        if said.is_some() {
            early.take();
        }
        if said == Some(false) {
            self.early_refused.set(true);
        }
        said
    }

    /// Adds what the connection did since the last count to the step's figures (the UDP bytes received and QUIC's
    /// counts), and returns the UDP bytes it sent meanwhile (the caller's request takes them).
    fn count(&self, ctx: &ThreadCtx) -> u64 {
        let Some(stats) = self.quic.borrow().as_ref().map(quinn::Connection::stats) else { return 0 };
        let now = QuicCounts::of(&stats);
        let (tx, rx, before) = self.seen.replace((stats.udp_tx.bytes, stats.udp_rx.bytes, now));
        let mut m = ctx.metrics.borrow_mut();
        m.bytes_in += stats.udp_rx.bytes.saturating_sub(rx);
        m.wire.quic.merge(&now.since(&before));
        // The handshake ended before the answer to an early request could be read, so after a request the
        // server's word on the early data is in.
        if let Some(accepted) = self.early_said() {
            m.wire.quic.zero_rtt_accepted += u64::from(accepted);
        }
        stats.udp_tx.bytes.saturating_sub(tx)
    }
}

/// Opens the connection (within `--connect-timeout`: the QUIC handshake and HTTP/3's control streams), then
/// drives it until it ends.
async fn run_connection(ctx: Rc<ThreadCtx>, pool: Rc<Pool>, conn: Rc<H3Conn>, endpoint: usize, pause: Duration) {
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
    let plan = &ctx.shared.plan;
    let start = ctx.connection_turn().await.unwrap_or_else(Instant::now);
    let ep = ctx.endpoint(endpoint);
    let opened = match pool.socket(ep) {
        Ok(socket) => {
            let early = plan.tls.early_data && !pool.early_refused.get();
            open(&socket, ep, &plan.tls, early, plan.connect_timeout, plan.max_header_list).await
        }
        Err(f) => Err(f),
    };
    let Opened { quic, send, mut driver, guard, early } = match opened {
        Ok(parts) => parts,
        Err(f) => {
            *conn.failure.borrow_mut() = Some(f);
            conn.phase.send_replace(Phase::Dead);
            return;
        }
    };
    let done = Instant::now();
    // A 0-RTT connection's handshake phase ends when it can send: at once.
    ctx.record_connect(start, Some(Handshake { tcp_done: start, resumed: early.is_some() }), done);
    if let Some(accepted) = early {
        ctx.metrics.borrow_mut().wire.quic.zero_rtt_sent += 1;
        *conn.early.borrow_mut() = Some(Box::pin(accepted));
        let left = plan.connect_timeout.saturating_sub(done - start);
        tokio::task::spawn_local(handshake_deadline(Rc::clone(&ctx), Rc::clone(&conn), quic.clone(), left));
    }
    ctx.metrics.borrow_mut().connection_opened();
    *conn.quic.borrow_mut() = Some(quic.clone());
    *conn.guard.borrow_mut() = Some(guard);
    *conn.send.borrow_mut() = Some(send);
    conn.phase.send_replace(Phase::Open);
    let ended = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    // The requests under way see the connection's end through their streams; its reason is kept for them.
    if !ended.is_h3_no_error() {
        let f = conn.ended(&ended);
        *conn.failure.borrow_mut() = Some(f);
    }
    conn.phase.send_replace(Phase::Dead);
    conn.send.borrow_mut().take();
    // What it sent after its last request (acknowledgements, its close) belongs to the step too.
    let out = conn.count(&ctx);
    let mut m = ctx.metrics.borrow_mut();
    m.bytes_out += out;
    m.connection_closed();
    if conn.retired.get() {
        m.closed_by_hakaru(crate::metrics::HakaruClose::MaxRequests);
    }
}

/// `--0rtt`: the handshake goes on behind the early requests, still bounded by `--connect-timeout` (`left` of it):
/// one not finished by then ends the connection as a connect timeout, its requests failing so. One that finished
/// before any request ended is counted here. Ends with the connection.
async fn handshake_deadline(ctx: Rc<ThreadCtx>, conn: Rc<H3Conn>, quic: quinn::Connection, left: Duration) {
    let mut phase = conn.phase.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(left) => {}
        _ = phase.wait_for(|p| *p == Phase::Dead) => return,
    }
    if let Some(accepted) = conn.early_said() {
        ctx.metrics.borrow_mut().wire.quic.zero_rtt_accepted += u64::from(accepted);
    } else if conn.early.borrow().is_some() {
        let why = format!("no QUIC handshake within {}", humantime::format_duration(ctx.shared.plan.connect_timeout));
        *conn.failure.borrow_mut() = Some(Failure::new(ErrorKind::ConnectTimeout, why));
        quic.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"handshake timeout");
    }
}

/// An HTTP/3 connection just opened.
struct Opened {
    quic: quinn::Connection,
    /// Sends requests on it.
    send: SendRequest,
    /// Drives its control streams; ends with the connection.
    driver: h3::client::Connection<super::h3_guard::Conn, Bytes>,
    /// The guard of its streams, which knows the server's breach that closed it.
    guard: Arc<Guard>,
    /// `--0rtt` on a resumed session: whether the server accepted the early data, once the handshake ends.
    early: Option<quinn::ZeroRttAccepted>,
}

/// One QUIC connection to `ep` with HTTP/3 set up on it, within `limit`: the connection, a sender of requests and
/// the driver of the connection's control streams.
async fn open(
    socket: &quinn::Endpoint,
    ep: &crate::base::target::Endpoint,
    tls: &crate::plan::tls::TlsOptions,
    early_data: bool,
    limit: Duration,
    max_header_list: usize,
) -> Result<Opened, Failure> {
    let name = match &tls.sni {
        Some(n) => n.to_str().into_owned(),
        None => ep.host.clone(),
    };
    let attempt = async {
        let connecting = socket.connect(ep.addr, &name).map_err(|e| Failure::new(ErrorKind::Connect, e.to_string()))?;
        // `--0rtt`: with a session ticket kept from an earlier connection the connection is usable at once, its
        // first requests going as early data; without one (the first connection) the handshake is made whole.
        let connecting = match early_data {
            true => connecting.into_0rtt(),
            false => Err(connecting),
        };
        let (quic, early) = match connecting {
            Ok((quic, accepted)) => (quic, Some(accepted)),
            Err(connecting) => (connecting.await.map_err(|e| handshake_failure(&e))?, None),
        };
        let alpn = quic
            .handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol);
        // Early data goes under the resumed session's ALPN (h3, checked on the connection that got the ticket).
        if early.is_none() && alpn.as_deref() != Some(b"h3") {
            quic.close(quinn::VarInt::from_u32(0), b"no h3");
            return Err(Failure::new(ErrorKind::HandshakeFailed, "the server did not agree to ALPN h3"));
        }
        // No GREASE: h3 would put a reserved frame on the first request of each sender, so a request's bytes would
        // depend on how often a slot changes connection; every request is the same on the wire without it.
        let guard = Guard::new(quic.clone(), max_header_list as u64);
        let (driver, send) = h3::client::builder()
            .send_grease(false)
            .max_field_section_size(max_header_list as u64)
            .build::<_, _, Bytes>(super::h3_guard::Conn::new(&quic, &guard))
            .await
            .map_err(|e| guard.connection_failure(&e))?;
        Ok(Opened { quic, send, driver, guard, early })
    };
    match tokio::time::timeout(limit, attempt).await {
        Ok(r) => r,
        Err(_) => Err(Failure::new(
            ErrorKind::ConnectTimeout,
            format!("no QUIC handshake within {}", humantime::format_duration(limit)),
        )),
    }
}

/// Where a QUIC endpoint's socket is bound: `--source-address` if given, else any address of `ep`'s family; the
/// port the system's.
fn local_address(ep: &crate::base::target::Endpoint) -> SocketAddr {
    let any = if ep.addr.is_ipv6() {
        std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
    };
    SocketAddr::new(ep.source.unwrap_or(any), 0)
}

/// How a request ended.
enum Outcome {
    /// The status and when the answer's head came, if its body came after it.
    Answer(u16, Option<Instant>),
    Failed(Failure),
    /// The server did not process it (a GOAWAY came before it was sent, or it was reset with H3_REQUEST_REJECTED):
    /// safe to send again.
    Unsent(Failure),
}

/// One request on a stream of `conn`: sent, its body written, its answer read to its end; its answer's status and
/// first byte's time. `events`: its body read as events (`--events`); `kept`: its headers and body kept for a
/// script's `response()` (otherwise the body is counted, not kept).
async fn request(
    conn: &H3Conn,
    send: &mut SendRequest,
    r: &Request,
    mut events: Option<&mut EventReader>,
    mut kept: Option<&mut Kept>,
    metrics: &RefCell<crate::metrics::StepMetrics>,
) -> Outcome {
    let mut stream = match send.send_request(r.head.clone()).await {
        Ok(s) => s,
        Err(h3::error::StreamError::RemoteClosing { .. }) => {
            conn.drain();
            return Outcome::Unsent(goaway());
        }
        Err(e) => return Outcome::Failed(conn.stream_failure(e)),
    };
    let answer = async {
        if !r.body.is_empty() {
            stream.send_data(r.body.clone()).await?;
        }
        stream.finish().await?;
        let head = stream.recv_response().await?;
        let status = head.status().as_u16();
        if let Some(k) = kept.as_deref_mut() {
            k.headers.clear();
            k.body.clear();
            k.headers.extend(head.headers().iter().map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec())));
        }
        if let Some(r) = events.as_deref_mut() {
            r.start();
            r.begin(status);
        }
        let mut first = None;
        while let Some(mut chunk) = stream.recv_data().await? {
            if let Some(k) = kept.as_deref_mut() {
                k.body(chunk.chunk());
            }
            let reading = events.as_deref_mut().filter(|r| r.active());
            if first.is_none() || reading.is_some() {
                let now = Instant::now();
                first.get_or_insert(now);
                if let Some(r) = reading {
                    // `--events`: the chunk's events, stamped with this read's time; a read of a stream under way
                    // is the window's progress (no stall while events come).
                    metrics.borrow_mut().window.progress += 1;
                    r.clock(now);
                    while chunk.has_remaining() {
                        let part = chunk.chunk();
                        let n = part.len();
                        if let Err(e) = r.body(part, false) {
                            return Ok(Err(super::exchange::decode_failure(e)));
                        }
                        chunk.advance(n);
                    }
                    if r.ended() {
                        // The end event came: the answer is whole, the rest of its stream not wanted.
                        stream.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
                        return Ok(Ok((status, first)));
                    }
                }
            }
            chunk.advance(chunk.remaining());
        }
        if let Some(Err(e)) = events.as_deref().filter(|r| r.active()).map(EventReader::body_ended) {
            return Ok(Err(super::exchange::decode_failure(e)));
        }
        Ok::<_, h3::error::StreamError>(Ok((status, first)))
    };
    let result = answer.await;
    // A stream that failed inside a streamed answer's events was cut (a timeout stays a timeout: see `cut_stream`).
    let streamed = events.as_deref().is_some_and(EventReader::active);
    match result {
        Ok(Ok((status, first))) => Outcome::Answer(status, first),
        Ok(Err(f)) => Outcome::Failed(f),
        Err(e) if streamed => Outcome::Failed(super::events::cut_stream(conn.stream_failure(e))),
        Err(e @ h3::error::StreamError::RemoteTerminate { code, .. }) if code.value() == H3_REQUEST_REJECTED => {
            Outcome::Unsent(conn.stream_failure(e))
        }
        Err(e) => Outcome::Failed(conn.stream_failure(e)),
    }
}

/// A stream slot of the thread's pool.
pub(super) struct H3Link {
    pool: Rc<Pool>,
    slot: usize,
    /// The slot's sender of requests on the connection it last used: kept while the slot stays on that connection,
    /// not cloned (and dropped) for each request.
    sender: Option<(Rc<H3Conn>, SendRequest)>,
    /// `--events`: the slot's reader of each answer's body as events.
    events: Option<EventReader>,
    /// A script's `response()` wants each answer: the last one's headers and body.
    kept: Option<Kept>,
}

impl H3Link {
    pub(super) fn new(pool: Rc<Pool>, slot: usize, events: Option<EventReader>) -> H3Link {
        H3Link { pool, slot, sender: None, events, kept: None }
    }

    /// Keeps each answer's headers and body when a script's `response()` wants them.
    pub(super) fn keeping(mut self, answers: bool) -> H3Link {
        self.kept = answers.then(Kept::default);
        self
    }
}

impl Link for H3Link {
    fn kept(&self) -> Option<&Kept> {
        self.kept.as_ref()
    }

    async fn join(&mut self, ctx: &Rc<ThreadCtx>, _id: usize) -> bool {
        // The slot's connection opened first, so an open loop's schedule starts with it; a failure is the first
        // request's to count.
        let conn = self.pool.pick(ctx, self.slot, 0);
        let _ = conn.claim().await;
        true
    }

    async fn exchange(
        &mut self,
        ctx: &Rc<ThreadCtx>,
        _id: usize,
        exchange: &Exchange<'_>,
        prepared: &PreparedRequest,
        mut timer: Pin<&mut Sleep>,
        _pipelined: bool,
    ) -> Result<(Answer, Instant), Failure> {
        // A request a template built as it went (HTTP/1.1 text, as the plan's are) is read for HTTP/3 each time;
        // the plan's own are read once a thread.
        let r = match exchange.built() {
            Some(bytes) => Rc::new(
                proto::from_http1(&Bytes::copy_from_slice(bytes)).map_err(|why| Failure::new(ErrorKind::Io, why))?,
            ),
            None => self.pool.request(prepared)?,
        };
        let mut retried = false;
        loop {
            let conn = self.pool.pick(ctx, self.slot, exchange.endpoint);
            // Waiting for the connection is bounded by the request's timeout, counted from when the client was ready.
            timer.as_mut().reset((exchange.ready + exchange.timeout).into());
            let claimed = tokio::select! {
                biased;
                c = conn.claim() => c,
                _ = timer.as_mut() => return Err(timeout_failure(exchange.timeout)),
            };
            let waited = match claimed {
                Ok(w) => w,
                Err(Claim::Gone) => {
                    tokio::task::yield_now().await;
                    continue;
                }
                Err(Claim::Failed(f)) => return Err(f),
            };
            // A connection or stream had only past the step's end: the request is not sent after it.
            ctx.check_not_over()?;
            let send = match &mut self.sender {
                Some((c, send)) if Rc::ptr_eq(c, &conn) => send,
                cached => {
                    // Claimed open, so its sender is there.
                    let Some(send) = conn.send.borrow().clone() else { continue };
                    &mut cached.insert((Rc::clone(&conn), send)).1
                }
            };
            let sent = if waited { Instant::now() } else { exchange.ready };
            timer.as_mut().reset((sent + exchange.timeout).into());
            conn.in_flight.set(conn.in_flight.get() + 1);
            conn.claimed.set(conn.claimed.get() + 1);
            if ctx.shared.plan.max_requests_per_connection.is_some_and(|n| conn.claimed.get() >= n) {
                // Its last stream: no new one starts on it, and it closes (H3_NO_ERROR) once this one ends.
                conn.retired.set(true);
                conn.drain();
            }
            let outcome = tokio::select! {
                biased;
                o = request(&conn, send, &r, self.events.as_mut(), self.kept.as_mut(), &ctx.metrics) => o,
                _ = timer.as_mut() => Outcome::Failed(timeout_failure(exchange.timeout)),
            };
            conn.in_flight.set(conn.in_flight.get() - 1);
            conn.close_if_drained();
            exchange.wrote(conn.count(ctx) as usize);
            let outcome = match outcome {
                // `--0rtt` refused: the request went in early data the server threw away, so it was never
                // processed. It is sent once more on a connection with a full handshake (this thread makes no more
                // 0-RTT attempts at a server that refuses them); the one refused is closed.
                Outcome::Failed(f) if conn.early_refused.get() => {
                    self.pool.early_refused.set(true);
                    conn.drain();
                    conn.close_if_drained();
                    Outcome::Unsent(f)
                }
                o => o,
            };
            match outcome {
                // An answer complete only past the deadline (the loop was busy, the timer could not fire before it)
                // is a timeout, never a success.
                Outcome::Answer(..) if Instant::now() > sent + exchange.timeout => {
                    return Err(timeout_failure(exchange.timeout));
                }
                Outcome::Answer(status, first) => {
                    conn.answered.set(true);
                    exchange.first_byte.set(first);
                    if let Some(r) = self.events.as_mut() {
                        super::events::record_reader(ctx, r, sent, Instant::now());
                    }
                    return Ok((Answer { status, keep_alive: true }, sent));
                }
                Outcome::Failed(f) => return Err(f),
                Outcome::Unsent(f) if retried => return Err(f),
                Outcome::Unsent(_) => retried = true,
            }
        }
    }
}

/// How long a thread's end waits for its connections' CONNECTION_CLOSE to leave (QUIC's draining period on
/// loopback is a few milliseconds): after the step's end, so in no figure.
const CLOSE_WAIT: Duration = Duration::from_millis(100);

/// The step's end on this thread (its clients gone): its connections are closed (H3_NO_ERROR), so the server frees
/// them at once rather than at its idle timeout, and their CONNECTION_CLOSE frames are given up to [`CLOSE_WAIT`]
/// to leave.
pub(super) async fn close_all() {
    let Some((_, pool)) = POOL.take() else { return };
    for conn in pool.grid.conns.borrow().iter().flatten().flatten() {
        conn.send.borrow_mut().take();
        if let Some(quic) = conn.quic.borrow().as_ref() {
            quic.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"");
        }
    }
    let sockets: Vec<quinn::Endpoint> = pool.sockets.borrow().iter().flatten().cloned().collect();
    for socket in sockets {
        let _ = tokio::time::timeout(CLOSE_WAIT, socket.wait_idle()).await;
    }
}

/// Before the load: every endpoint answers a QUIC handshake offering ALPN h3 within `--connect-timeout`. A server
/// that does not (nothing answers on UDP, no h3 in its ALPN, a certificate refused) is bad input, said in one line.
pub(super) fn preflight(plan: &crate::plan::RunPlan) -> Result<(), crate::error::CliError> {
    use crate::error::CliError;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start an event loop for the HTTP/3 check: {e}")))?;
    let config = client_config(plan).map_err(CliError::new)?;
    for ep in &plan.endpoints {
        let refused = |f: Failure| {
            let fix = match f.kind {
                ErrorKind::ConnectTimeout => {
                    "nothing answered over UDP, so the server offers no HTTP/3 on this port; \
                                              leave out --http3, or give the port it serves HTTP/3 on"
                }
                ErrorKind::HandshakeFailed
                    if f.message.contains("certificate") || f.message.contains("Certificate") =>
                {
                    "give --cacert FILE, or -k for a self-signed certificate"
                }
                ErrorKind::HandshakeFailed if f.message.contains("ALPN") => {
                    "it speaks QUIC, but not HTTP/3, on this port; leave out --http3"
                }
                // A handshake to an IP address carries no server name, and a server choosing its certificate by
                // name (Caddy's `tls internal`) has none to give: it ends the handshake with an internal error.
                _ if ep.host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok() && plan.tls.sni.is_none() => {
                    "a handshake to an IP address names no server, and a server that picks its certificate by name may \
                     have none for it: give the name it serves (--sni localhost, or the host name in the URL)"
                }
                _ => "is it an HTTP/3 server?",
            };
            CliError::new(format!("target {ep}: HTTP/3: {}; {fix}", f.message))
        };
        rt.block_on(async {
            let mut socket = quinn::Endpoint::client(local_address(ep)).map_err(|e| refused(Failure::from_io(&e)))?;
            socket.set_default_client_config(config.clone());
            // A full handshake, never 0-RTT on a ticket another endpoint of the same name left: the check is the
            // handshake.
            let opened = open(&socket, ep, &plan.tls, false, plan.connect_timeout, plan.max_header_list).await;
            match opened {
                Ok(Opened { quic, send, driver, .. }) => {
                    drop((send, driver));
                    quic.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"");
                    // The close is sent by the endpoint's driver: a moment for it, not waited on past the limit.
                    let _ = tokio::time::timeout(Duration::from_millis(100), socket.wait_idle()).await;
                    Ok(())
                }
                Err(f) => Err(refused(f)),
            }
        })?;
    }
    Ok(())
}
