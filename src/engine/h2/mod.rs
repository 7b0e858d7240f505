//! HTTP/2 on the engine's loop: each thread keeps a pool of connections, each run by one task that writes the
//! frames its streams queue and reads the server's frames; a client of the engine is a stream slot.
//!
//! `-c` connections x `--streams` slots per thread's share; slot k of a thread uses the k / streams-th connection
//! (closed loop) or the least busy connection with a free stream (open loop). A server whose
//! SETTINGS_MAX_CONCURRENT_STREAMS is below `--streams` is used as it allows: the closed loop's extra slots end at
//! once, so no request waits behind the limit. Streams a GOAWAY (or REFUSED_STREAM) left unprocessed go again,
//! once, on a new connection; RST_STREAM is counted by its code. Every read is bounded: frames at most 16 KiB (the
//! size the client allows), a header block at most `--max-line`, the HPACK table 4 KiB.

mod frames;
mod limits;
mod preflight;
mod state;

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::ThreadCtx;
use super::conn::{Conn, Failure, connect, connect_timed};
use super::exchange::{Exchange, timeout_failure};
use super::grid::{Grid, Multiplexed, Spec};
use crate::metrics::{ErrorKind, StepMetrics};
use crate::protocol::events::{EventReader, EventsSpec};
use crate::protocol::grpc;
use crate::protocol::h2::frame::{self, Head};
use crate::protocol::h2::hpack;
use crate::protocol::h2::request::{body_start, frame_at, set_stream};
use crate::protocol::http::Kept;
use crate::protocol::{Answer, PreparedRequest};
use frames::{data_end, data_start, frame_fits, on_frame};
use limits::{HeaderList, MOST_UNSENT_ACKS};
pub(super) use preflight::preflight;
use state::*;

/// The window the client gives the server, per stream and for the connection: large (as h2load and oha set it),
/// so that flow control is not what is measured.
const WINDOW: u32 = 1 << 30;

/// The largest frame the client takes (SETTINGS_MAX_FRAME_SIZE left at its initial value).
const MAX_FRAME: usize = frame::DEFAULT_MAX_FRAME;

/// The most body bytes a connection's streams keep together for a script's `response()` (each stream's at most
/// `MOST_KEPT_BODY`, 16 MiB, as an HTTP/1.1 answer's): 100 streams of 600 kB answers fit.
const KEPT_PER_CONNECTION: usize = 64 << 20;

/// Reads of one wake-up past the first, while the socket still holds bytes: 512 KiB, far more than a batch of
/// answers, and few enough that tests/http2.rs's 4 MiB answers reach the bound.
const DRAIN_READS: usize = 8;

/// The largest stream identifier a client may use.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;

/// The pool of one thread: a connection per (group of `--streams` slots, endpoint).
pub(super) struct Pool {
    grid: Grid<H2Conn>,
}

thread_local! {
    /// The pool of the step this thread runs, keyed by the step's shared state (engine threads run one step each).
    static POOL: RefCell<Option<(usize, Rc<Pool>)>> = const { RefCell::new(None) };
}

/// The thread's pool for this step, made at its first use.
pub(super) fn pool(ctx: &ThreadCtx, spec: &Spec) -> Rc<Pool> {
    super::step_local(&POOL, ctx, || Pool { grid: Grid::new(spec) })
}

impl Pool {
    /// The connection a slot sends on (see [`Grid::pick`]); one the server ended is reopened to go on.
    fn pick(&self, ctx: &Rc<ThreadCtx>, slot: usize, endpoint: usize) -> Rc<H2Conn> {
        self.grid.pick(slot, endpoint, |ended| {
            // Reopened after a pause when the last one ended in an error or failed its streams before answering
            // any, so a peer that breaks every connection is not met with a tight loop of new ones.
            let pause = ended.map_or(Duration::ZERO, |c| {
                let st = c.state.borrow();
                limits::reopen_pause(st.pause, st.failure.is_some() || (st.broke && !st.answered))
            });
            // A connection hakaru retired (--max-requests-per-connection) is no reconnect: it is counted as closed
            // by hakaru.
            if ended.is_some_and(|c| !c.state.borrow().retired) {
                ctx.metrics.borrow_mut().reconnects += 1;
            }
            H2Conn::open(ctx, endpoint, self.grid.streams, pause)
        })
    }
}

impl Multiplexed for H2Conn {
    fn in_flight_if_free(&self, _streams: usize) -> Option<usize> {
        // The connection's own limit: the smaller of --streams and the server's.
        let st = self.state.borrow();
        st.has_room().then_some(st.in_flight)
    }

    fn usable(&self) -> bool {
        self.state.borrow().usable()
    }
}

/// Before a slot's first request: its connection opened and the server's SETTINGS read. Returns false when the
/// slot is beyond the server's stream limit in a closed loop: it ends, and the connection carries as many streams
/// as the server allows.
pub(super) async fn join(ctx: &Rc<ThreadCtx>, pool: &Pool, slot: usize) -> bool {
    if ctx.shared.plan.endpoints.len() != 1 {
        return true;
    }
    let conn = pool.pick(ctx, slot, 0);
    if conn.settled().await.is_err() {
        // The first request opens a connection again and counts the failure.
        return true;
    }
    pool.grid.spread || slot % pool.grid.streams < conn.state.borrow().limit
}

/// How a stream ended.
enum Outcome {
    Answer(Answer),
    Failed(Failure),
    /// The server did not process it (above a GOAWAY's last stream, REFUSED_STREAM): safe to send again.
    Unprocessed(Failure),
}

/// One request on a stream of the pool, sent again once on another connection when the server left it
/// unprocessed. Returns the answer with the time its HEADERS was queued, or the failure.
///
/// An `async move` block rather than an `async fn`: an async fn's future keeps its arguments twice (as given and
/// as locals), and this future is in every stream slot's task (10,000 at -c 100 --streams 100).
#[allow(clippy::manual_async_fn)] // (see above: an async fn's future would keep its arguments twice)
pub(super) fn exchange(
    ctx: &Rc<ThreadCtx>,
    pool: &Pool,
    slot: usize,
    exchange: &Exchange<'_>,
    request: &PreparedRequest,
    mut timer: Pin<&mut Sleep>,
) -> impl std::future::Future<Output = Result<(Answer, Instant), Failure>> {
    async move {
        let mut retried = false;
        loop {
            let conn = pool.pick(ctx, slot, exchange.endpoint);
            // Waiting for a connection or a free stream is bounded by the request's timeout, counted from when the
            // client was ready. (The claim's outcome is taken apart inside the select, so the future does not keep
            // it while the stream is under way.)
            timer.as_mut().reset((exchange.ready + exchange.timeout).into());
            let waited = tokio::select! {
                biased;
                r = conn.claim(ctx) => match r {
                    Ok(waited) => waited,
                    Err(Claim::Gone) => {
                        tokio::task::yield_now().await;
                        continue;
                    }
                    Err(Claim::Failed(f)) => return Err(f),
                },
                _ = timer.as_mut() => return Err(timeout_failure(exchange.timeout)),
            };
            // A stream freed only past the step's end: the request is not sent after it.
            ctx.check_not_over()?;
            let sent = if waited { Instant::now() } else { exchange.ready };
            let interval = ctx.shared.plan.wire.grpc().interval;
            let mut spaced = Vec::new();
            let id = match (interval, exchange.built()) {
                // `--stream-interval`: the HEADERS and the first message now, each further message later.
                (Some(_), built) => {
                    spaced = grpc::spaced_parts(built.unwrap_or(&request.bytes));
                    let first = spaced.remove(0);
                    conn.send(ctx, &first, None)
                }
                // A template's or script's frames, built for this request: a body is copied into a buffer of its
                // own, as it may have to wait for the server's windows.
                (None, Some(frames)) => conn.send(ctx, frames, None),
                (None, None) => conn.send(ctx, &request.bytes, Some(&request.bytes)),
            };
            timer.as_mut().reset((sent + exchange.timeout).into());
            let waiting = async {
                match interval {
                    // Boxed: most calls are not spaced, and this future is in every stream slot's task.
                    Some(every) if !spaced.is_empty() => {
                        Box::pin(conn.spaced(id, std::mem::take(&mut spaced), sent, every)).await
                    }
                    _ => conn.wait(id).await,
                }
            };
            let outcome = tokio::select! {
                biased;
                o = waiting => o,
                _ = timer.as_mut() => {
                    let messages = conn.cancel(id);
                    ctx.metrics.borrow_mut().wire.h2.grpc_messages += messages;
                    return Err(timeout_failure(exchange.timeout));
                }
            };
            match outcome {
                // An answer complete only past the deadline (its connection's task was busy decoding, the timer
                // could not fire before it) is a timeout, never a success.
                (Outcome::Answer(_), ..) if Instant::now() > sent + exchange.timeout => {
                    return Err(timeout_failure(exchange.timeout));
                }
                (Outcome::Answer(a), kept, first_byte, events) => {
                    if let Some(mut r) = events {
                        super::events::record_reader(ctx, &mut r, sent, Instant::now());
                    }
                    // For a script's response(), taken by the client loop as this returns (see client.rs).
                    if kept.is_some() {
                        ctx.h2_kept.set(kept);
                    }
                    exchange.first_byte.set(first_byte);
                    return Ok((a, sent));
                }
                (Outcome::Failed(f), ..) => return Err(f),
                (Outcome::Unprocessed(f), ..) if retried => return Err(f),
                (Outcome::Unprocessed(_), ..) => {
                    retried = true;
                    ctx.metrics.borrow_mut().wire.h2.retried += 1;
                }
            }
        }
    }
}

/// Why a stream could not be had on a connection.
enum Claim {
    /// The connection ended or stopped taking streams (GOAWAY): pick another.
    Gone,
    /// It could not be opened.
    Failed(Failure),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// TCP (and TLS) under way, or the server's SETTINGS not read yet.
    Opening,
    Open,
    /// GOAWAY received (or stream ids used up): the streams under way finish, no new one starts.
    Draining,
    Dead,
}

/// A connection as its streams and its task share it.
struct H2Conn {
    state: RefCell<State>,
}

impl H2Conn {
    /// A new connection: its task connects, sends the preface and SETTINGS, and runs until the connection ends.
    fn open(ctx: &Rc<ThreadCtx>, endpoint: usize, streams: usize, pause: Duration) -> Rc<H2Conn> {
        let plan = &ctx.shared.plan;
        let mut state = State::new(streams, plan.max_line, plan.max_header_list);
        state.keep = ctx.script.wants_message();
        state.grpc = ctx.shared.plan.wire.protocol() == crate::protocol::Protocol::Grpc;
        state.grpc_settings = ctx.shared.plan.wire.grpc();
        state.events = plan.events.clone();
        state.pause = pause;
        state.retire_after = plan.max_requests_per_connection;
        let conn = Rc::new(H2Conn { state: RefCell::new(state) });
        let (task_ctx, task_conn) = (Rc::clone(ctx), Rc::clone(&conn));
        tokio::task::spawn_local(async move { task_conn.run(&task_ctx, endpoint).await });
        conn
    }

    /// Waits until the server's SETTINGS arrived (Ok) or the connection failed.
    async fn settled(&self) -> Result<(), Failure> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            match st.phase {
                Phase::Opening => {
                    st.waiting.push(cx.waker().clone());
                    Poll::Pending
                }
                Phase::Open | Phase::Draining => Poll::Ready(Ok(())),
                Phase::Dead => Poll::Ready(Err(st.failure.clone().unwrap_or_else(|| closed("before its SETTINGS")))),
            }
        })
        .await
    }

    /// Waits for a free stream. Ok(true) when it had to wait. The claim that spends the connection's
    /// `--max-requests-per-connection` retires it: the streams after it go to the one opened in its place.
    async fn claim(&self, ctx: &ThreadCtx) -> Result<bool, Claim> {
        let mut waited = false;
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            match st.phase {
                Phase::Open if st.in_flight < st.limit => {
                    st.in_flight += 1;
                    st.claimed += 1;
                    if st.retire_after.is_some_and(|n| st.claimed >= n) {
                        st.phase = Phase::Draining;
                        st.retired = true;
                        if !st.handing_over {
                            st.handing_over = true;
                            ctx.metrics.borrow_mut().connection_handing_over();
                        }
                        // Slots waiting for a stream here go to the next connection.
                        st.wake_waiting();
                    }
                    Poll::Ready(Ok(waited))
                }
                Phase::Opening | Phase::Open => {
                    waited = true;
                    st.waiting.push(cx.waker().clone());
                    Poll::Pending
                }
                Phase::Draining => Poll::Ready(Err(Claim::Gone)),
                Phase::Dead => Poll::Ready(Err(match st.failure.clone() {
                    Some(f) => Claim::Failed(f),
                    None => Claim::Gone,
                })),
            }
        })
        .await
    }

    /// Queues a claimed stream's frames (a body as far as the server's windows allow; the rest goes as they grow);
    /// returns its stream id.
    fn send(&self, ctx: &ThreadCtx, frames: &[u8], shared: Option<&bytes::Bytes>) -> u32 {
        let mut st = self.state.borrow_mut();
        let (id, header_block) = st.open_stream(frames, shared);
        st.wake_task();
        drop(st);
        ctx.metrics.borrow_mut().wire.h2.header_bytes_out += header_block as u64;
        id
    }

    /// Queues more of stream `id`'s body (`frames`: DATA frames), after what it has still to send.
    fn send_more(&self, id: u32, frames: &[u8]) {
        let mut st = self.state.borrow_mut();
        let Some(s) = st.streams.get_mut(&id).filter(|s| s.done.is_none()) else { return };
        match s.body.take() {
            // Still waiting for the server's windows (and so in `blocked` already): the new frames after the rest.
            Some(rest) => {
                let frames = [&rest.frames[rest.at..], frames].concat();
                s.body = Some(Body { frames: frames.into(), at: 0, sent: rest.sent });
            }
            None => {
                s.body = Some(Body { frames: bytes::Bytes::copy_from_slice(frames), at: 0, sent: 0 });
                if !st.push_body(id) {
                    st.blocked.push_back(id);
                }
            }
        }
        st.wake_task();
    }

    /// `--stream-interval`: sends `parts` (a call's further messages) one every `interval` from `sent`, while
    /// waiting for the stream's end as [`H2Conn::wait`] does. A call its server ends before its last message is
    /// reset (RST_STREAM CANCEL) rather than left half open on the server.
    async fn spaced(
        &self,
        id: u32,
        parts: Vec<Vec<u8>>,
        sent: Instant,
        interval: Duration,
    ) -> (Outcome, Option<Box<Kept>>, Option<Instant>, Option<Box<EventReader>>) {
        let mut due = sent;
        for part in &parts {
            due += interval;
            tokio::select! {
                biased;
                o = self.wait(id) => {
                    self.cancel(id);
                    return o;
                }
                () = tokio::time::sleep_until(due.into()) => self.send_more(id, part),
            }
        }
        self.wait(id).await
    }

    /// Waits for the stream's end, and forgets it; with its headers and body when they were kept, and when its
    /// answer's HEADERS came if that was before its end.
    async fn wait(&self, id: u32) -> (Outcome, Option<Box<Kept>>, Option<Instant>, Option<Box<EventReader>>) {
        let mut first_byte = None;
        let mut events = None;
        let outcome = poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let Some(s) = st.streams.get_mut(&id) else {
                return Poll::Ready(Outcome::Failed(closed("before answering")));
            };
            match s.done.take() {
                Some(o) => {
                    first_byte = s.first_byte;
                    events = s.events.take();
                    Poll::Ready(o)
                }
                None => {
                    if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        s.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
        .await;
        (outcome, self.forget(id), first_byte, events)
    }

    /// A stream whose time ran out: RST_STREAM(CANCEL), and its slot freed. Returns the gRPC messages its call had
    /// received (a streaming call that timed out after many received them; an ended call's are counted as it ends).
    fn cancel(&self, id: u32) -> u64 {
        let mut st = self.state.borrow_mut();
        let messages = match st.streams.get(&id) {
            Some(s) if st.grpc && s.done.is_none() => u64::from(s.grpc.reader.messages),
            _ => 0,
        };
        if st.phase != Phase::Dead {
            frame::rst_stream(&mut st.out, id, frame::CANCEL);
            st.wake_task();
        }
        drop(st);
        self.forget(id);
        messages
    }

    /// Forgets stream `id`; returns the headers and body it kept, their bytes given back to the connection's bound.
    fn forget(&self, id: u32) -> Option<Box<Kept>> {
        let mut st = self.state.borrow_mut();
        let s = st.streams.remove(&id)?;
        if let Some(k) = &s.kept {
            st.kept_bytes = st.kept_bytes.saturating_sub(k.body.len());
        }
        st.in_flight -= 1;
        st.wake_waiting();
        if st.phase == Phase::Draining && st.in_flight == 0 {
            // Nothing left to wait for: the task closes the connection.
            st.wake_task();
        }
        s.kept
    }

    /// The connection's task: connect, then write what the streams queue and read what the server sends until the
    /// connection ends.
    async fn run(&self, ctx: &Rc<ThreadCtx>, endpoint: usize) {
        let plan = &ctx.shared.plan;
        // The script's `thread.addr` when setup() gave one.
        let ep = ctx.endpoint(endpoint);
        let pause = self.state.borrow().pause;
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let start = ctx.connection_turn().await.unwrap_or_else(Instant::now);
        let (mut conn, tcp_done) = match connect_timed(ep, ctx.shared.tls.as_ref(), plan.connect_timeout, true).await {
            Ok(c) => c,
            Err(f) => {
                let mut st = self.state.borrow_mut();
                st.failure = Some(f);
                st.phase = Phase::Dead;
                st.wake_waiting();
                return;
            }
        };
        if let Err(f) = check_alpn(&conn) {
            let mut st = self.state.borrow_mut();
            st.failure = Some(f);
            st.phase = Phase::Dead;
            st.wake_waiting();
            return;
        }
        ctx.record_connect(start, tcp_done, Instant::now());
        ctx.metrics.borrow_mut().connection_opened();
        // The server's SETTINGS must come within the connect timeout.
        let settings_by = tokio::time::sleep(plan.connect_timeout);
        tokio::pin!(settings_by);
        let ended = poll_fn(|cx| {
            if self.state.borrow().phase == Phase::Opening && settings_by.as_mut().poll(cx).is_ready() {
                let mut st = self.state.borrow_mut();
                let why = format!(
                    "no HTTP/2 SETTINGS from {} within {} (does the server speak HTTP/2 on this port?)",
                    ep.addr,
                    humantime::format_duration(plan.connect_timeout)
                );
                st.failure = Some(Failure::new(ErrorKind::ConnectTimeout, why));
                st.phase = Phase::Dead;
                st.wake_waiting();
                return Poll::Ready(());
            }
            self.poll_io(ctx, &mut conn, cx)
        });
        ended.await;
        let mut st = self.state.borrow_mut();
        if st.phase == Phase::Opening && st.failure.is_none() {
            st.failure = Some(closed("before its SETTINGS"));
        }
        st.phase = Phase::Dead;
        st.fail_all(&closed("before answering"));
        st.wake_waiting();
        let (handing_over, retired) = (st.handing_over, st.retired);
        drop(st);
        let mut m = ctx.metrics.borrow_mut();
        if handing_over {
            m.handed_over()
        } else {
            m.connection_closed()
        }
        if retired {
            m.closed_by_hakaru(crate::metrics::HakaruClose::MaxRequests);
        }
    }

    /// One wake-up of the task: writes what is queued, reads what arrived. Ready when the connection is over.
    fn poll_io(&self, ctx: &ThreadCtx, conn: &mut Conn, cx: &mut std::task::Context<'_>) -> Poll<()> {
        loop {
            let mut st = self.state.borrow_mut();
            if !st.task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.task = Some(cx.waker().clone());
            }
            // Write.
            let mut blocked = false;
            while st.written < st.out.len() {
                match Pin::new(&mut *conn).poll_write(cx, &st.out[st.written..]) {
                    Poll::Ready(Ok(0)) => {
                        st.fail_all(&closed("while a request was written"));
                        return Poll::Ready(());
                    }
                    Poll::Ready(Ok(n)) => {
                        st.written += n;
                        ctx.metrics.borrow_mut().bytes_out += n as u64;
                    }
                    Poll::Ready(Err(e)) => {
                        st.fail_all(&Failure::from_io(&e));
                        return Poll::Ready(());
                    }
                    Poll::Pending => {
                        blocked = true;
                        break;
                    }
                }
            }
            if st.written == st.out.len() && st.written > 0 {
                st.out.clear();
                st.written = 0;
                st.unsent_acks = 0;
                if let Poll::Ready(Err(e)) = Pin::new(&mut *conn).poll_flush(cx) {
                    st.fail_all(&Failure::from_io(&e));
                    return Poll::Ready(());
                }
            }
            let all_written = st.out.is_empty();
            // A dead connection's GOAWAY goes if the peer reads it; one that does not read is not waited for.
            if st.phase == Phase::Dead && (all_written || blocked) {
                return Poll::Ready(());
            }
            if st.phase == Phase::Draining && st.in_flight == 0 && all_written {
                if st.retired && !st.goaway_sent {
                    // Retired by hakaru: it says so before it closes (RFC 9113 6.8; no stream of the server's).
                    st.goaway_sent = true;
                    frame::goaway(&mut st.out, 0, frame::NO_ERROR);
                    continue;
                }
                return Poll::Ready(());
            }
            drop(st);
            // Read: once through tokio, which registers the task for the next bytes, then on a plain connection
            // on until the socket is empty, as h2load does (see `Conn::read_now`): the streams woken by all of it
            // then queue their next requests together, and they go in one write.
            let mut scratch = ctx.scratch.borrow_mut();
            let mut buf = ReadBuf::new(&mut scratch[..]);
            let mut got = match Pin::new(&mut *conn).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => r.map(|()| buf.filled().len()),
            };
            // Bounded: a peer that never stops sending gets the task back in the thread's queue after
            // DRAIN_READS reads, behind the thread's other tasks (tokio's budget does not see these reads).
            for drained in 0..=DRAIN_READS {
                let n = match got {
                    Err(e) => {
                        self.state.borrow_mut().fail_all(&Failure::from_io(&e));
                        return Poll::Ready(());
                    }
                    Ok(0) => {
                        self.peer_closed();
                        return Poll::Ready(());
                    }
                    Ok(n) => n,
                };
                ctx.metrics.borrow_mut().bytes_in += n as u64;
                self.on_bytes(&ctx.metrics, &scratch[..n]);
                if self.state.borrow().phase == Phase::Dead {
                    break;
                }
                if drained == DRAIN_READS {
                    // Every byte read so far is taken; the rest waits for the next turn.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                got = match conn.read_now(&mut scratch) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    r => r,
                };
            }
        }
    }

    /// The server closed the connection (a read of 0 bytes): every stream under way fails.
    fn peer_closed(&self) {
        let mut st = self.state.borrow_mut();
        let inside = !st.partial.is_empty() || st.skip > 0;
        let f = if inside {
            // A frame cut short: its header promised more than came before the close (a truncated frame).
            let why = "the server closed the HTTP/2 connection inside a frame (fewer bytes than its header declared)";
            let f = Failure::new(ErrorKind::FrameSize, why);
            st.failure.get_or_insert(f.clone());
            f
        } else if st.phase == Phase::Opening {
            Failure::new(
                ErrorKind::Closed,
                "the server closed the connection before its HTTP/2 SETTINGS (does it speak HTTP/2 on this port?)",
            )
        } else {
            closed("before answering")
        };
        if st.phase == Phase::Opening {
            st.failure = Some(f.clone());
        }
        st.fail_all(&f);
    }

    /// Takes the frames in `data` (a read), keeping an incomplete one for the next read.
    fn on_bytes(&self, metrics: &RefCell<StepMetrics>, data: &[u8]) {
        self.on_frames(metrics, data);
        // The messages of the calls this read ended, counted before their slots record them.
        let messages = std::mem::take(&mut self.state.borrow_mut().grpc_messages);
        if messages > 0 {
            metrics.borrow_mut().wire.h2.grpc_messages += messages;
        }
    }

    fn on_frames(&self, metrics: &RefCell<StepMetrics>, mut data: &[u8]) {
        let mut st = self.state.borrow_mut();
        if st.events.is_some() {
            st.read_at = Some(Instant::now());
        }
        while !data.is_empty() && st.phase != Phase::Dead {
            if st.skip > 0 {
                if let Some(len) = st.pad_unread.take()
                    && usize::from(data[0]) >= len
                {
                    st.connection_error(frame::PROTOCOL_ERROR, "DATA padding longer than the frame".into());
                    break;
                }
                let n = st.skip.min(data.len());
                st.skip -= n;
                data = &data[n..];
                if st.skip == 0 {
                    let (id, end) = st.skip_frame;
                    data_end(&mut st, id, end);
                }
                continue;
            }
            let mut partial = std::mem::take(&mut st.partial);
            if !partial.is_empty() {
                // A frame begun in an earlier read: its header first, then (but for DATA) its payload.
                let want =
                    if partial.len() < frame::HEAD { frame::HEAD } else { frame::HEAD + Head::read(&partial).len };
                let take = (want - partial.len()).min(data.len());
                partial.extend_from_slice(&data[..take]);
                data = &data[take..];
                if partial.len() < frame::HEAD {
                    st.partial = partial;
                    break;
                }
                let head = Head::read(&partial);
                if !frame_fits(&mut st, &head) {
                    break;
                }
                if head.kind == frame::DATA && !st.keep && !st.grpc && st.events.is_none() {
                    let (have, first) = (partial.len() - frame::HEAD, partial.get(frame::HEAD).copied());
                    partial.clear();
                    st.partial = partial;
                    data_start(&mut st, &head, have, first);
                    continue;
                }
                if partial.len() < frame::HEAD + head.len {
                    // Only the header was taken when the frame's header was what was missing: its payload may
                    // follow in this read.
                    st.partial = partial;
                    continue;
                }
                on_frame(metrics, &mut st, &head, &partial[frame::HEAD..]);
                partial.clear();
                st.partial = partial;
                continue;
            }
            st.partial = partial;
            if data.len() < frame::HEAD {
                st.partial.extend_from_slice(data);
                break;
            }
            let head = Head::read(data);
            if !frame_fits(&mut st, &head) {
                break;
            }
            if head.kind == frame::DATA && !st.keep && !st.grpc && st.events.is_none() {
                let have = head.len.min(data.len() - frame::HEAD);
                let first = (have > 0).then(|| data[frame::HEAD]);
                data = &data[frame::HEAD + have..];
                data_start(&mut st, &head, have, first);
                continue;
            }
            if data.len() < frame::HEAD + head.len {
                st.partial.extend_from_slice(data);
                break;
            }
            on_frame(metrics, &mut st, &head, &data[frame::HEAD..frame::HEAD + head.len]);
            data = &data[frame::HEAD + head.len..];
        }
        if !st.out.is_empty() {
            st.wake_task();
        }
    }
}

fn closed(when: &str) -> Failure {
    Failure::new(ErrorKind::Closed, format!("the server closed the HTTP/2 connection {when}"))
}

/// Over TLS the server must have chosen h2 (ALPN): a server that did not speaks HTTP/1.1 only.
fn check_alpn(conn: &Conn) -> Result<(), Failure> {
    match conn {
        Conn::Plain(_) | Conn::Unix(_) => Ok(()),
        Conn::Tls(s) if s.get_ref().1.alpn_protocol() == Some(b"h2") => Ok(()),
        Conn::Tls(_) => Err(Failure::new(
            ErrorKind::Tls,
            "the server did not agree to HTTP/2 over TLS (ALPN h2): it speaks HTTP/1.1 only; leave out --http2",
        )),
    }
}

#[cfg(test)]
mod tests;
