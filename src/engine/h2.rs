//! HTTP/2 on the engine's loop: each thread keeps a pool of connections, each run by one task that writes the
//! frames its streams queue and reads the server's frames; a client of the engine is a stream slot.
//!
//! `-c` connections x `--streams` slots per thread's share; slot k of a thread uses the k / streams-th connection
//! (closed loop) or the least busy connection with a free stream (open loop). A server whose
//! SETTINGS_MAX_CONCURRENT_STREAMS is below `--streams` is used as it allows: the closed loop's extra slots end at
//! once, so no request waits behind the limit. Streams a GOAWAY (or REFUSED_STREAM) left unprocessed go again,
//! once, on a new connection; RST_STREAM is counted by its code. Every read is bounded: frames at most 16 KiB (the
//! size the client allows), a header block at most `--max-line`, the HPACK table 4 KiB.

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
use super::client::Exchange;
use super::conn::{Conn, Failure, connect, connect_timed};
use super::h2_limits::{self, HeaderList, MOST_UNSENT_ACKS};
use crate::metrics::{ErrorKind, StepMetrics};
use crate::protocol::events::{EventReader, EventsSpec};
use crate::protocol::grpc;
use crate::protocol::h2::frame::{self, Head};
use crate::protocol::h2::hpack;
use crate::protocol::h2::request::{body_start, frame_at, set_stream};
use crate::protocol::http::Kept;
use crate::protocol::{Answer, PreparedRequest};

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

/// The shape of a thread's pool, made before the thread starts (the pool itself holds `Rc`s, made on the thread).
pub(super) struct Spec {
    /// The thread's share of `-c`.
    pub connections: usize,
    pub endpoints: usize,
    pub streams: usize,
    /// Open loop: a due slot takes any connection with a free stream.
    pub spread: bool,
}

/// The pool of one thread: a connection per (group of `--streams` slots, endpoint).
pub(super) struct Pool {
    streams: usize,
    /// Closed loop: a slot keeps to its group's connection. Open loop: any connection with a free stream.
    spread: bool,
    conns: RefCell<Vec<Vec<Option<Rc<H2Conn>>>>>,
}

thread_local! {
    /// The pool of the step this thread runs, keyed by the step's shared state (engine threads run one step each).
    static POOL: RefCell<Option<(usize, Rc<Pool>)>> = const { RefCell::new(None) };
}

/// The thread's pool for this step, made at its first use.
pub(super) fn pool(ctx: &ThreadCtx, spec: &Spec) -> Rc<Pool> {
    super::step_local(&POOL, ctx, || Pool {
        streams: spec.streams.max(1),
        spread: spec.spread,
        conns: RefCell::new((0..spec.connections.max(1)).map(|_| vec![None; spec.endpoints]).collect()),
    })
}

impl Pool {
    fn group(&self, slot: usize) -> usize {
        (slot / self.streams).min(self.conns.borrow().len() - 1)
    }

    /// The connection a slot sends on: its group's (opened when there is none or it can take no more streams),
    /// or in an open loop the least busy open one with a free stream.
    fn pick(&self, ctx: &Rc<ThreadCtx>, slot: usize, endpoint: usize) -> Rc<H2Conn> {
        let group = self.group(slot);
        let mut conns = self.conns.borrow_mut();
        if self.spread {
            let best = conns
                .iter()
                .filter_map(|g| g[endpoint].as_ref())
                .filter(|c| c.state.borrow().has_room())
                .min_by_key(|c| c.state.borrow().in_flight);
            if let Some(c) = best {
                return Rc::clone(c);
            }
        }
        let cell = &mut conns[group][endpoint];
        if let Some(c) = cell.as_ref().filter(|c| c.state.borrow().usable()) {
            return Rc::clone(c);
        }
        // The server ended the last one (GOAWAY, a close): reopened to go on, after a pause when it ended in an
        // error or failed its streams before answering any, so a peer that breaks every connection is not met
        // with a tight loop of new ones.
        let pause = cell.as_ref().map_or(Duration::ZERO, |c| {
            let st = c.state.borrow();
            h2_limits::reopen_pause(st.pause, st.failure.is_some() || (st.broke && !st.answered))
        });
        // A connection hakaru retired (--max-requests-per-connection) is no reconnect: it is counted as closed by hakaru.
        if cell.as_ref().is_some_and(|c| !c.state.borrow().retired) {
            ctx.metrics.borrow_mut().reconnects += 1;
        }
        let conn = H2Conn::open(ctx, endpoint, self.streams, pause);
        *cell = Some(Rc::clone(&conn));
        conn
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
    pool.spread || slot % pool.streams < conn.state.borrow().limit
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
                _ = timer.as_mut() => return Err(super::client::timeout_failure(exchange.timeout)),
            };
            let sent = if waited { Instant::now() } else { exchange.ready };
            let interval = ctx.shared.plan.grpc.interval;
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
                    conn.cancel(id);
                    return Err(super::client::timeout_failure(exchange.timeout));
                }
            };
            match outcome {
                // An answer complete only past the deadline (its connection's task was busy decoding, the timer
                // could not fire before it) is a timeout, never a success.
                (Outcome::Answer(_), ..) if Instant::now() > sent + exchange.timeout => {
                    return Err(super::client::timeout_failure(exchange.timeout));
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
                    ctx.metrics.borrow_mut().h2.retried += 1;
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

struct State {
    phase: Phase,
    /// Why the connection could not be opened (the failure of the requests waiting for it).
    failure: Option<Failure>,
    /// Whether any of its streams was answered, and whether it ended failing streams under way: one that failed
    /// its streams before answering any is reopened after a pause, as one that could not open is.
    answered: bool,
    broke: bool,
    /// Frames to write, and how much of them is written.
    out: Vec<u8>,
    written: usize,
    /// The connection task, woken when frames are queued.
    task: Option<Waker>,
    /// Slots waiting for the connection to open or for a free stream.
    waiting: Vec<Waker>,
    streams: StreamTable,
    in_flight: usize,
    /// Streams at once: `--streams`, or the server's lower limit.
    limit: usize,
    asked: usize,
    next_id: u32,
    /// The connection's window for what the client sends (request bodies).
    send_window: i64,
    /// Streams whose body waits for room in a window (WINDOW_UPDATE, a larger SETTINGS_INITIAL_WINDOW_SIZE).
    blocked: VecDeque<u32>,
    /// The window of a new stream for what the client sends (the server's SETTINGS_INITIAL_WINDOW_SIZE).
    stream_window: i64,
    /// Bytes of DATA read since the last connection WINDOW_UPDATE.
    unacked: u32,
    /// A header block whose CONTINUATION frames are still to come: its stream, END_STREAM, the bytes so far.
    block: Option<(u32, bool)>,
    block_bytes: Vec<u8>,
    /// An incomplete frame at the end of a read (at most a header and 16 KiB).
    partial: Vec<u8>,
    /// DATA payload bytes still to come for (stream, END_STREAM) before the frame ends: skipped, not kept.
    skip: usize,
    skip_frame: (u32, bool),
    decoder: hpack::Decoder,
    /// The bound of a header block (`--max-line`).
    max_block: usize,
    /// A GOAWAY's last stream and code.
    goaway: Option<(u32, u32)>,
    /// Answers' headers and bodies are kept (a script's `response()` wants them): DATA frames are then read
    /// whole instead of skipped.
    keep: bool,
    /// A padded DATA frame being skipped whose padding length (its first payload byte) is still to be read: the
    /// frame's length, to check it against.
    pad_unread: Option<usize>,
    /// Bytes of body kept in the streams under way, at most [`KEPT_PER_CONNECTION`] together.
    kept_bytes: usize,
    /// gRPC calls: DATA read whole into each stream's message reader, the answer judged by its grpc-status.
    grpc: bool,
    /// gRPC: messages of the calls that ended since the last read, added to the step's count after it.
    grpc_messages: u64,
    /// gRPC: what each call's answer is read with (`--max-message`).
    grpc_settings: grpc::Settings,
    /// SETTINGS and PING ACKs queued since the queue was last written whole: at most [`MOST_UNSENT_ACKS`].
    unsent_acks: usize,
    /// `--max-header-list`: an answer's decoded header list, at most.
    max_header_list: usize,
    /// How long the task waited before connecting (a connection reopened after one that ended in an error).
    pause: Duration,
    /// A GOAWAY came: the connection finishes its streams beside the one opened in its place, counted apart.
    handing_over: bool,
    /// `--max-requests-per-connection`: streams this connection carries before hakaru retires it, and how many
    /// were claimed so far.
    retire_after: Option<u64>,
    claimed: u64,
    /// hakaru retired the connection: it takes no new stream, finishes those under way beside the one opened in
    /// its place (handing over, as after a GOAWAY), then says GOAWAY(NO_ERROR) itself and closes.
    retired: bool,
    goaway_sent: bool,
    /// `--events`: each answer's body read as events (DATA then read whole), each read's bytes stamped with one
    /// clock read, `read_at`.
    events: Option<Arc<EventsSpec>>,
    read_at: Option<Instant>,
}

/// A stream under way.
#[derive(Default)]
struct Stream {
    status: u16,
    /// Its answer's headers and body, kept for a script's `response()` only.
    kept: Option<Box<Kept>>,
    done: Option<Outcome>,
    waker: Option<Waker>,
    /// The server's window for this stream's body.
    window: i64,
    /// The body still to send, when it did not fit the windows.
    body: Option<Body>,
    /// A gRPC call's messages and status as they come.
    grpc: grpc::Call,
    /// When its answer's HEADERS came, if its end came in a later frame (else its first byte is its end).
    first_byte: Option<Instant>,
    /// `--events`: its answer's body read as events.
    events: Option<Box<EventReader>>,
}

/// The streams under way on a connection, by id. Their states sit in a slab whose places are reused (a connection
/// has at most its stream limit under way), found through a map of ids to places. A map holding the states
/// themselves (112-byte entries, one stream inserted and removed a request) grew to twice the limit's worth: 29 KB
/// a connection at `--streams 100`, 2.9 MB at `-c 100`.
#[derive(Default)]
struct StreamTable {
    places: HashMap<u32, u32>,
    /// A stream's id and state; id 0 (never a stream's) marks a free place.
    slab: Vec<(u32, Stream)>,
    free: Vec<u32>,
}

impl StreamTable {
    fn get(&self, id: &u32) -> Option<&Stream> {
        self.places.get(id).map(|&i| &self.slab[i as usize].1)
    }

    fn get_mut(&mut self, id: &u32) -> Option<&mut Stream> {
        self.places.get(id).map(|&i| &mut self.slab[i as usize].1)
    }

    fn contains_key(&self, id: &u32) -> bool {
        self.places.contains_key(id)
    }

    fn insert(&mut self, id: u32, stream: Stream) {
        if let Some(s) = self.get_mut(&id) {
            *s = stream;
            return;
        }
        let place = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = (id, stream);
                i
            }
            None => {
                self.slab.push((id, stream));
                (self.slab.len() - 1) as u32
            }
        };
        self.places.insert(id, place);
    }

    fn remove(&mut self, id: &u32) -> Option<Stream> {
        let i = self.places.remove(id)?;
        self.free.push(i);
        Some(std::mem::take(&mut self.slab[i as usize]).1)
    }

    fn keys(&self) -> impl Iterator<Item = &u32> {
        self.places.keys()
    }

    fn iter(&self) -> impl Iterator<Item = (&u32, &Stream)> {
        self.slab.iter().filter(|(id, _)| *id != 0).map(|(id, s)| (id, s))
    }

    fn values(&self) -> impl Iterator<Item = &Stream> {
        self.iter().map(|(_, s)| s)
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut Stream> {
        self.slab.iter_mut().filter(|(id, _)| *id != 0).map(|(_, s)| s)
    }
}

#[cfg(test)]
impl std::ops::Index<&u32> for StreamTable {
    type Output = Stream;

    fn index(&self, id: &u32) -> &Stream {
        self.get(id).expect("a stream under way")
    }
}

/// The rest of a request body: its prepared frames, the DATA frame under way and how much of its payload is sent.
struct Body {
    frames: bytes::Bytes,
    at: usize,
    sent: usize,
}

impl State {
    /// A connection's state before it opens: the preface and the client's SETTINGS queued.
    fn new(streams: usize, max_line: usize, max_header_list: usize) -> State {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_MAX_CONCURRENT_STREAMS, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, WINDOW),
                (frame::SETTINGS_MAX_HEADER_LIST_SIZE, max_header_list as u32),
            ],
        );
        frame::window_update(&mut out, 0, WINDOW - frame::DEFAULT_WINDOW);
        State {
            phase: Phase::Opening,
            failure: None,
            answered: false,
            broke: false,
            out,
            written: 0,
            task: None,
            waiting: Vec::new(),
            streams: StreamTable::default(),
            in_flight: 0,
            limit: streams,
            asked: streams,
            next_id: 1,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            blocked: VecDeque::new(),
            stream_window: i64::from(frame::DEFAULT_WINDOW),
            unacked: 0,
            block: None,
            block_bytes: Vec::new(),
            partial: Vec::new(),
            skip: 0,
            skip_frame: (0, false),
            decoder: hpack::Decoder::default(),
            max_block: max_line,
            goaway: None,
            keep: false,
            kept_bytes: 0,
            pad_unread: None,
            grpc: false,
            grpc_messages: 0,
            grpc_settings: grpc::Settings::default(),
            unsent_acks: 0,
            max_header_list,
            pause: Duration::ZERO,
            handing_over: false,
            retire_after: None,
            claimed: 0,
            retired: false,
            goaway_sent: false,
            events: None,
            read_at: None,
        }
    }

    /// Queues as much of stream `id`'s body as both windows allow, cutting a DATA frame at the window's edge.
    /// True when nothing is left to send (or the stream is gone or ended).
    fn push_body(&mut self, id: u32) -> bool {
        let Some(s) = self.streams.get_mut(&id) else { return true };
        if s.done.is_some() {
            s.body = None;
        }
        let Some(body) = s.body.as_mut() else { return true };
        while let Some(head) = frame_at(&body.frames, body.at) {
            let left = head.len - body.sent;
            let n = (left as i64).min(self.send_window).min(s.window).max(0) as usize;
            if n == 0 && left > 0 {
                return false;
            }
            let flags = if n == left { head.flags & frame::END_STREAM } else { 0 };
            Head { len: n, kind: frame::DATA, flags, stream: id }.write(&mut self.out);
            let from = body.at + frame::HEAD + body.sent;
            self.out.extend_from_slice(&body.frames[from..from + n]);
            body.sent += n;
            self.send_window -= n as i64;
            s.window -= n as i64;
            if body.sent == head.len {
                body.at += frame::HEAD + head.len;
                body.sent = 0;
            }
        }
        s.body = None;
        true
    }

    /// Queues a new stream's prepared `frames`: its headers, and its body as far as the windows allow (the rest
    /// waits in `blocked`). Returns the stream id and the header block's size.
    /// `shared`: `frames` shared already (the plan's prepared requests), kept by a body that must wait.
    fn open_stream(&mut self, frames: &[u8], shared: Option<&bytes::Bytes>) -> (u32, usize) {
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > LAST_STREAM_ID {
            // Identifiers used up: this stream is the connection's last (RFC 9113 5.1.1).
            self.phase = Phase::Draining;
        }
        let at = self.out.len();
        let headers = body_start(frames);
        self.out.extend_from_slice(&frames[..headers]);
        let header_block = set_stream(&mut self.out[at..], id).header_block;
        let body = (headers < frames.len()).then(|| Body {
            frames: shared.map_or_else(|| bytes::Bytes::copy_from_slice(frames), bytes::Bytes::clone),
            at: headers,
            sent: 0,
        });
        let kept = self.keep.then(Box::default);
        let events = self.events.as_ref().map(|spec| {
            let mut r = EventReader::new(Arc::clone(spec), self.max_block);
            r.start();
            Box::new(r)
        });
        let grpc = grpc::Call::new(&self.grpc_settings);
        self.streams.insert(id, Stream { window: self.stream_window, body, kept, events, grpc, ..Stream::default() });
        if !self.push_body(id) {
            self.blocked.push_back(id);
        }
        (id, header_block)
    }

    /// After a window grew: the blocked bodies go on, in the order they were blocked.
    fn resume_blocked(&mut self) {
        for _ in 0..self.blocked.len() {
            let Some(id) = self.blocked.pop_front() else { break };
            if !self.push_body(id) {
                self.blocked.push_back(id);
            }
        }
        if !self.out.is_empty() {
            self.wake_task();
        }
    }

    fn has_room(&self) -> bool {
        self.phase == Phase::Open && self.in_flight < self.limit
    }

    fn usable(&self) -> bool {
        matches!(self.phase, Phase::Opening | Phase::Open)
    }

    fn wake_task(&mut self) {
        if let Some(w) = &self.task {
            w.wake_by_ref();
        }
    }

    fn wake_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    /// Ends a stream with `outcome`, waking its slot.
    fn finish(&mut self, id: u32, outcome: Outcome) {
        if let Some(s) = self.streams.get_mut(&id)
            && s.done.is_none()
        {
            let outcome = match outcome {
                Outcome::Failed(f) if s.events.as_ref().is_some_and(|r| r.active()) => {
                    Outcome::Failed(super::events::cut_stream(f))
                }
                o => o,
            };
            self.answered |= matches!(outcome, Outcome::Answer(..));
            s.done = Some(outcome);
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        }
    }

    /// Ends every stream still waiting: those the server did not process (above a GOAWAY's last stream) may go
    /// again, the others failed with `failure`.
    fn fail_all(&mut self, failure: &Failure) {
        let ids: Vec<u32> = self.streams.iter().filter(|(_, s)| s.done.is_none()).map(|(id, _)| *id).collect();
        for id in ids {
            let outcome = match self.goaway {
                Some((last, _)) if id > last => Outcome::Unprocessed(unprocessed(id, last)),
                Some((_, code)) if code != frame::NO_ERROR => Outcome::Failed(Failure::new(
                    ErrorKind::Goaway,
                    format!("the server sent GOAWAY ({}) and closed before answering", frame::error_name(code)),
                )),
                _ => Outcome::Failed(failure.clone()),
            };
            self.broke |= matches!(outcome, Outcome::Failed(_));
            self.finish(id, outcome);
        }
    }

    /// A connection error found in the server's frames (RFC 9113 5.4.1): GOAWAY with `code`, every stream failed
    /// as malformed, the connection closed once the GOAWAY is written.
    fn connection_error(&mut self, code: u32, why: String) {
        if self.phase == Phase::Dead {
            return;
        }
        let last = self.streams.keys().max().copied().unwrap_or(0);
        frame::goaway(&mut self.out, last, code);
        self.phase = Phase::Dead;
        let failure = Failure::new(h2_limits::kind_of(code), format!("HTTP/2 {}: {why}", frame::error_name(code)));
        self.fail_all(&failure);
        // Kept for the slots waiting for it (a connection that failed before its SETTINGS was read fails their
        // requests, instead of sending them to open another at once), and to pause before the next.
        self.failure.get_or_insert(failure);
        self.wake_waiting();
    }
}

fn unprocessed(id: u32, last: u32) -> Failure {
    Failure::new(
        ErrorKind::Goaway,
        format!("the server's GOAWAY left stream {id} unprocessed (last stream {last}), and so did its retry"),
    )
}

impl H2Conn {
    /// A new connection: its task connects, sends the preface and SETTINGS, and runs until the connection ends.
    fn open(ctx: &Rc<ThreadCtx>, endpoint: usize, streams: usize, pause: Duration) -> Rc<H2Conn> {
        let plan = &ctx.shared.plan;
        let mut state = State::new(streams, plan.max_line, plan.max_header_list);
        state.keep = ctx.script.wants_message();
        state.grpc = ctx.shared.plan.protocol == crate::protocol::Protocol::Grpc;
        state.grpc_settings = ctx.shared.plan.grpc;
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
        ctx.metrics.borrow_mut().h2.header_bytes_out += header_block as u64;
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

    /// A stream whose time ran out: RST_STREAM(CANCEL), and its slot freed.
    fn cancel(&self, id: u32) {
        let mut st = self.state.borrow_mut();
        if st.phase != Phase::Dead {
            frame::rst_stream(&mut st.out, id, frame::CANCEL);
            st.wake_task();
        }
        drop(st);
        self.forget(id);
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
            m.closed_by_hakaru += 1;
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
            metrics.borrow_mut().h2.grpc_messages += messages;
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

/// A frame larger than the client allows is a connection error (FRAME_SIZE_ERROR); false then.
fn frame_fits(st: &mut State, head: &Head) -> bool {
    if head.len > MAX_FRAME {
        st.connection_error(frame::FRAME_SIZE_ERROR, format!("a frame of {} bytes (at most {MAX_FRAME})", head.len));
        return false;
    }
    if st.block.is_some() && head.kind != frame::CONTINUATION {
        st.connection_error(frame::PROTOCOL_ERROR, "a frame inside a header block".into());
        return false;
    }
    true
}

/// A DATA frame's header read, `have` bytes of its payload with it: flow control counted, the rest skipped.
/// `first`: the payload's first byte when it came with the header (a padded frame's padding length).
fn data_start(st: &mut State, head: &Head, have: usize, first: Option<u8>) {
    if head.stream == 0 {
        st.connection_error(frame::PROTOCOL_ERROR, "DATA on stream 0".into());
        return;
    }
    // Padding as long as the frame is a PROTOCOL_ERROR whether the payload is kept or skipped: checked now, or
    // on the next read when the padding length has not come yet.
    if head.flags & frame::PADDED != 0 {
        match first {
            Some(pad) if usize::from(pad) < head.len => {}
            None if head.len > 0 => st.pad_unread = Some(head.len),
            _ => return st.connection_error(frame::PROTOCOL_ERROR, "DATA padding longer than the frame".into()),
        }
    }
    // The whole payload counts against the windows, padding included; the client gives it back at once.
    st.unacked += head.len as u32;
    if st.unacked >= WINDOW / 2 {
        let n = std::mem::take(&mut st.unacked);
        frame::window_update(&mut st.out, 0, n);
        // Each stream's window is as large as the connection's: a stream that reads half of it gets it back too.
        if st.streams.contains_key(&head.stream) {
            frame::window_update(&mut st.out, head.stream, n);
        }
    }
    let end = head.flags & frame::END_STREAM != 0;
    st.skip = head.len - have;
    st.skip_frame = (head.stream, end);
    if st.skip == 0 {
        data_end(st, head.stream, end);
    }
}

fn data_end(st: &mut State, id: u32, end_stream: bool) {
    if !end_stream {
        return;
    }
    if let Some(Err(e)) = st.streams.get(&id).and_then(|s| s.events.as_deref()).map(EventReader::body_ended) {
        return st.finish(id, Outcome::Failed(super::client::decode_failure(e)));
    }
    let status = st.streams.get(&id).map_or(0, |s| s.status);
    if status == 0 {
        if st.streams.contains_key(&id) {
            st.finish(
                id,
                Outcome::Failed(Failure::new(ErrorKind::Malformed, "HTTP/2 DATA before the response's HEADERS")),
            );
        }
        return;
    }
    let outcome = answered(st, id, status);
    st.finish(id, outcome);
}

/// `--events`: a DATA frame's `body` read as events; an answer past its bounds fails, one whose end event came ends
/// (the rest of its stream cancelled).
fn stream_events(st: &mut State, head: &Head, body: &[u8]) {
    let at = st.read_at.unwrap_or_else(Instant::now);
    let Some(s) = st.streams.get_mut(&head.stream) else { return };
    let status = s.status;
    let Some(r) = s.events.as_deref_mut() else { return };
    r.clock(at);
    let outcome = match r.body(body, false).map(|()| r.ended()) {
        Err(e) => Outcome::Failed(super::client::decode_failure(e)),
        Ok(true) if head.flags & frame::END_STREAM == 0 => answered(st, head.stream, status),
        Ok(_) => return,
    };
    frame::rst_stream(&mut st.out, head.stream, frame::CANCEL);
    st.finish(head.stream, outcome);
}

/// How a stream that ended with HTTP `status` is counted: gRPC's calls by their grpc-status (their messages
/// counted), else by `status`.
fn answered(st: &mut State, id: u32, status: u16) -> Outcome {
    if st.grpc
        && let Some(call) = st.streams.get(&id).map(|s| &s.grpc)
    {
        let verdict = call.verdict(status);
        st.grpc_messages += u64::from(call.reader.messages);
        if let Err(f) = verdict {
            return Outcome::Failed(Failure::new(ErrorKind::grpc(&f), f.describe()));
        }
    }
    Outcome::Answer(Answer { status, keep_alive: true })
}

/// Any frame but DATA, whole.
fn on_frame(metrics: &RefCell<StepMetrics>, st: &mut State, head: &Head, payload: &[u8]) {
    match head.kind {
        // Whole only when answers are kept (else skipped as they come, see `data_start`).
        frame::DATA => {
            let Some(range) = frame::content(head, payload) else {
                return st.connection_error(frame::PROTOCOL_ERROR, "DATA padding longer than the frame".into());
            };
            // Each body is kept up to MOST_KEPT_BODY as an HTTP/1.1 answer's is, and a connection's together up to
            // KEPT_PER_CONNECTION: its streams are read side by side, and a server may answer each with gigabytes.
            let body = &payload[range.clone()];
            let events_range = range.clone();
            let body = &body[..body.len().min(KEPT_PER_CONNECTION.saturating_sub(st.kept_bytes))];
            if let Some(k) = st.streams.get_mut(&head.stream).and_then(|s| s.kept.as_mut()) {
                let before = k.body.len();
                k.body(body);
                st.kept_bytes += k.body.len() - before;
            }
            if st.grpc
                && let Some(s) = st.streams.get_mut(&head.stream)
            {
                let before = s.grpc.reader.messages;
                let fed = s.grpc.reader.feed(&payload[range]);
                // A gRPC answer's first byte is its first whole message (its HEADERS carry none): the phases'
                // waiting is the time to first message, which a streaming call's latency does not say.
                if before == 0 && s.grpc.reader.messages > 0 {
                    s.first_byte = Some(Instant::now());
                }
                if let Err(f) = fed {
                    // A message the client cannot take ends the call now, rather than waiting for what it announced.
                    frame::rst_stream(&mut st.out, head.stream, frame::CANCEL);
                    st.finish(head.stream, Outcome::Failed(Failure::new(ErrorKind::grpc(&f), f.describe())));
                }
            }
            if st.events.is_some() {
                stream_events(st, head, &payload[events_range]);
            }
            data_start(st, head, head.len, payload.first().copied());
        }
        frame::HEADERS => {
            if head.stream == 0 {
                return st.connection_error(frame::PROTOCOL_ERROR, "HEADERS on stream 0".into());
            }
            let Some(range) = frame::content(head, payload) else {
                return st.connection_error(frame::PROTOCOL_ERROR, "HEADERS padding longer than the frame".into());
            };
            st.block_bytes.clear();
            st.block_bytes.extend_from_slice(&payload[range]);
            let end_stream = head.flags & frame::END_STREAM != 0;
            if head.flags & frame::END_HEADERS == 0 {
                st.block = Some((head.stream, end_stream));
                check_block_size(st);
            } else {
                header_block(metrics, st, head.stream, end_stream);
            }
        }
        frame::CONTINUATION => {
            let Some((id, end_stream)) = st.block else {
                return st.connection_error(frame::PROTOCOL_ERROR, "CONTINUATION without HEADERS".into());
            };
            if head.stream != id {
                return st.connection_error(frame::PROTOCOL_ERROR, "CONTINUATION on another stream".into());
            }
            st.block_bytes.extend_from_slice(payload);
            if check_block_size(st) && head.flags & frame::END_HEADERS != 0 {
                st.block = None;
                header_block(metrics, st, id, end_stream);
            }
        }
        frame::RST_STREAM => {
            if head.len != 4 || head.stream == 0 {
                return st.connection_error(frame::PROTOCOL_ERROR, "a bad RST_STREAM".into());
            }
            let code = frame::u32_at(payload, 0);
            let f = Failure::new(
                ErrorKind::rst_stream(code),
                format!("the server reset the stream: RST_STREAM({} = {code:#x})", frame::error_name(code)),
            );
            let outcome = if code == frame::REFUSED_STREAM { Outcome::Unprocessed(f) } else { Outcome::Failed(f) };
            st.finish(head.stream, outcome);
        }
        frame::SETTINGS => {
            if head.stream != 0 || !head.len.is_multiple_of(6) {
                return st.connection_error(frame::FRAME_SIZE_ERROR, "a bad SETTINGS frame".into());
            }
            if head.flags & frame::ACK != 0 {
                return;
            }
            for pair in payload.chunks_exact(6) {
                let value = frame::u32_at(pair, 2);
                match u16::from_be_bytes([pair[0], pair[1]]) {
                    frame::SETTINGS_MAX_CONCURRENT_STREAMS => st.limit = st.asked.min(value as usize),
                    frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                        if value > frame::MAX_WINDOW {
                            return st
                                .connection_error(frame::FLOW_CONTROL_ERROR, "an initial window over 2^31-1".into());
                        }
                        // The change applies to every stream's window, open ones included (RFC 9113 6.9.2).
                        let delta = i64::from(value) - st.stream_window;
                        st.stream_window = i64::from(value);
                        for s in st.streams.values_mut() {
                            s.window += delta;
                        }
                        if st.streams.values().any(|s| s.window > i64::from(frame::MAX_WINDOW)) {
                            return st
                                .connection_error(frame::FLOW_CONTROL_ERROR, "a stream window over 2^31-1".into());
                        }
                    }
                    _ => {}
                }
            }
            frame::settings_ack(&mut st.out);
            if !queued_ack(st) {
                return;
            }
            st.resume_blocked();
            if st.phase == Phase::Opening {
                st.phase = Phase::Open;
            }
            // A later SETTINGS may lower the limit: the step reports the fewest streams any connection allowed.
            metrics.borrow_mut().h2.saw_limit(st.limit as u64);
            st.wake_waiting();
        }
        frame::PING => {
            if head.len != 8 || head.stream != 0 {
                return st.connection_error(frame::FRAME_SIZE_ERROR, "a bad PING".into());
            }
            if head.flags & frame::ACK == 0 {
                let mut p = [0u8; 8];
                p.copy_from_slice(payload);
                frame::ping_ack(&mut st.out, &p);
                queued_ack(st);
            }
        }
        frame::GOAWAY => {
            if head.len < 8 || head.stream != 0 {
                return st.connection_error(frame::FRAME_SIZE_ERROR, "a bad GOAWAY".into());
            }
            let (last, code) = (frame::u32_at(payload, 0) & 0x7fff_ffff, frame::u32_at(payload, 4));
            metrics.borrow_mut().h2.goaways += 1;
            st.goaway = Some((last, code));
            if matches!(st.phase, Phase::Opening | Phase::Open) && !st.handing_over {
                // Out of the open connections (its replacement is one of them), counted apart until it closes.
                st.handing_over = true;
                metrics.borrow_mut().connection_handing_over();
            }
            if st.phase != Phase::Dead {
                st.phase = Phase::Draining;
            }
            // Streams above the last were not processed: they go again elsewhere now.
            let above: Vec<u32> = st.streams.keys().copied().filter(|&id| id > last).collect();
            for id in above {
                st.finish(id, Outcome::Unprocessed(unprocessed(id, last)));
            }
            st.wake_waiting();
            st.wake_task();
        }
        frame::WINDOW_UPDATE => {
            if head.len != 4 {
                return st.connection_error(frame::FRAME_SIZE_ERROR, "a bad WINDOW_UPDATE".into());
            }
            let inc = frame::u32_at(payload, 0) & 0x7fff_ffff;
            if head.stream == 0 {
                if inc == 0 {
                    return st.connection_error(frame::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0".into());
                }
                st.send_window += i64::from(inc);
                if st.send_window > i64::from(frame::MAX_WINDOW) {
                    return st.connection_error(frame::FLOW_CONTROL_ERROR, "the window went over 2^31-1".into());
                }
            } else if let Some(s) = st.streams.get_mut(&head.stream) {
                // A stream error (RFC 9113 6.9, 6.9.1): that stream reset and failed, the connection goes on.
                let why = if inc == 0 {
                    Some((frame::PROTOCOL_ERROR, ErrorKind::Malformed, "a stream WINDOW_UPDATE of 0"))
                } else {
                    s.window += i64::from(inc);
                    (s.window > i64::from(frame::MAX_WINDOW)).then_some((
                        frame::FLOW_CONTROL_ERROR,
                        ErrorKind::FlowControl,
                        "a stream window over 2^31-1",
                    ))
                };
                if let Some((code, kind, why)) = why {
                    frame::rst_stream(&mut st.out, head.stream, code);
                    st.finish(head.stream, Outcome::Failed(Failure::new(kind, format!("HTTP/2: {why}"))));
                }
            }
            st.resume_blocked();
        }
        frame::PUSH_PROMISE => {
            st.connection_error(frame::PROTOCOL_ERROR, "PUSH_PROMISE though the client disabled push".into());
        }
        // PRIORITY and unknown types are ignored (RFC 9113 4.1, 5.5).
        _ => {}
    }
}

/// Counts an ACK just queued. False (and a connection error, `flood`) when the peer sent more control frames than
/// it read answers to: a peer that floods PING or SETTINGS and never reads would have them queued without end.
fn queued_ack(st: &mut State) -> bool {
    st.unsent_acks += 1;
    if st.unsent_acks > MOST_UNSENT_ACKS {
        let why = format!("{MOST_UNSENT_ACKS} PING or SETTINGS frames answered and the answers not read (a flood)");
        st.connection_error(frame::ENHANCE_YOUR_CALM, why);
        return false;
    }
    true
}

/// False (and a connection error) when a header block grows past `--max-line`.
fn check_block_size(st: &mut State) -> bool {
    if st.block_bytes.len() > st.max_block {
        let why = format!("a header block over {} bytes (--max-line)", st.max_block);
        st.connection_error(frame::PROTOCOL_ERROR, why);
        return false;
    }
    true
}

/// A whole header block for stream `id`: decoded (always, so the HPACK table stays in step), its status kept.
fn header_block(metrics: &RefCell<StepMetrics>, st: &mut State, id: u32, end_stream: bool) {
    let block = std::mem::take(&mut st.block_bytes);
    let mut status = 0u16;
    let mut decoded = 0u64;
    let mut fields = Vec::new();
    let keep = st.keep;
    let mut list = HeaderList::new(st.max_header_list);
    let mut call = st.grpc.then(|| st.streams.get_mut(&id).map(|s| &mut s.grpc)).flatten();
    let result = st.decoder.decode(&block, |name, value| {
        decoded += (name.len() + value.len()) as u64;
        // Past the bound nothing is kept (a block of a few kB may decode to gigabytes: an HPACK bomb indexes one
        // large entry again and again); the block is still decoded, without copies, so the table stays in step.
        if !list.add(name.len(), value.len()) {
            fields = Vec::new();
            return;
        }
        if let Some(c) = call.as_mut() {
            c.field(name, value);
        }
        if keep && !name.starts_with(b":") {
            fields.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
        }
        if name == b":status" {
            status = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|s| (100..1000).contains(s))
                .unwrap_or(1000);
        }
    });
    {
        let mut m = metrics.borrow_mut();
        m.h2.header_bytes_in += block.len() as u64;
        m.h2.header_bytes_in_decoded += decoded;
    }
    st.block_bytes = block;
    if let Err(e) = result {
        return st.connection_error(frame::COMPRESSION_ERROR, e.0.to_string());
    }
    let Some(s) = st.streams.get_mut(&id) else { return };
    if list.over() {
        // A stream error: this stream reset (its answer is not wanted), the connection goes on.
        frame::rst_stream(&mut st.out, id, frame::CANCEL);
        let why = format!(
            "HTTP/2: an answer's header list of {} bytes or more (--max-header-list {})",
            list.size, list.limit
        );
        st.finish(id, Outcome::Failed(Failure::new(ErrorKind::HeaderList, why)));
        return;
    }
    if s.status == 0 {
        if status == 1000 || status == 0 {
            st.finish(
                id,
                Outcome::Failed(Failure::new(ErrorKind::Malformed, "HTTP/2 response HEADERS without a valid :status")),
            );
            return;
        }
        if status < 200 {
            // An informational answer (100 Continue, 103 Early Hints): the final one follows.
            return;
        }
        s.status = status;
        if !end_stream && !st.grpc {
            // A clock read only for an answer whose body follows: its first byte is not its end.
            s.first_byte = Some(Instant::now());
            if let Some(r) = s.events.as_deref_mut() {
                r.begin(status);
            }
        }
        if let Some(k) = s.kept.as_mut() {
            k.headers = fields;
        }
    }
    if end_stream {
        // Trailers end a streamed body as its last DATA frame would: an end event that never came is a stream_cut.
        if let Some(Err(e)) = s.events.as_deref().map(EventReader::body_ended) {
            return st.finish(id, Outcome::Failed(super::client::decode_failure(e)));
        }
        let status = s.status;
        let outcome = answered(st, id, status);
        st.finish(id, outcome);
    }
}

/// Before the load: every endpoint speaks HTTP/2, by prior knowledge on http:// (the answer to the preface is
/// SETTINGS) or over TLS with ALPN h2. A server that does not is bad input, said in one line.
pub(super) fn preflight(plan: &crate::plan::RunPlan) -> Result<(), crate::error::UsageError> {
    use crate::target::Scheme;
    let mut rt = None;
    for ep in &plan.endpoints {
        let refused = |why: String| crate::error::UsageError::new(format!("target {ep}: {why}"));
        if ep.scheme == Scheme::Https {
            if rt.is_none() {
                rt = Some(tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                    crate::error::UsageError::runtime(format!("cannot start an event loop for the TLS check: {e}"))
                })?);
            }
            let tls = super::tls::Tls::new(&plan.tls, plan.insecure, true);
            let rt = rt.as_ref().expect("made above");
            rt.block_on(super::conn::check_tls(ep, &tls, plan.connect_timeout)).map_err(refused)?;
            let conn = rt.block_on(connect(ep, Some(&tls), plan.connect_timeout, false));
            // A certificate the run will count as `tls` is not this check's business.
            if let Ok(conn) = conn {
                check_alpn(&conn).map_err(|_| {
                    refused(
                        "the server does not offer HTTP/2 over TLS (ALPN h2), only HTTP/1.1; leave out --http2".into(),
                    )
                })?;
            }
        } else if ep.proxy.is_some() {
            // Through a proxy: the tunnel is what can be checked before the load (a 407 is bad input).
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                crate::error::UsageError::runtime(format!("cannot start an event loop for the proxy check: {e}"))
            })?;
            rt.block_on(connect(ep, None, plan.connect_timeout, false)).map_err(|f| refused(f.message))?;
        } else {
            prior_knowledge(ep, plan.connect_timeout).map_err(refused)?;
        }
    }
    Ok(())
}

/// Sends the preface and an empty SETTINGS, and reads the first frame header: SETTINGS is HTTP/2.
fn prior_knowledge(ep: &crate::target::Endpoint, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let mut s = ep.connect_blocking(limit).map_err(|e| format!("cannot connect ({e})"))?;
    let mut hello = frame::PREFACE.to_vec();
    frame::settings(&mut hello, &[]);
    std::io::Write::write_all(&mut s, &hello).map_err(|e| format!("cannot send the HTTP/2 preface ({e})"))?;
    let mut got = Vec::with_capacity(64);
    let mut buf = [0u8; 64];
    while got.len() < frame::HEAD {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let _ = s.set_read_timeout(Some(left));
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n.min(64 - got.len().min(64))]),
        }
        if got.len() >= 64 {
            break;
        }
    }
    if got.len() >= frame::HEAD {
        let head = Head::read(&got);
        if head.kind == frame::SETTINGS && head.stream == 0 && head.flags & frame::ACK == 0 {
            return Ok(());
        }
    }
    let answer = if got.is_empty() {
        format!("no answer within {}", humantime::format_duration(limit))
    } else {
        let first_line = got.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(&got);
        format!("it answered \"{}\"", crate::protocol::http::response::quote(first_line))
    };
    Err(format!(
        "the server does not speak HTTP/2 with prior knowledge (h2c) on this port ({answer}); leave out --http2, or \
         use https:// where it offers HTTP/2 over TLS"
    ))
}

#[cfg(test)]
#[path = "h2_tests.rs"]
mod tests;
