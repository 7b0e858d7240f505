//! WebSocket messages in flight together on one connection (`--in-flight N`, `--match-field`): the connection is
//! shared by N clients (its slots, as HTTP/2's streams are), one task of its own writes their messages and reads
//! the answers, handing each to the message it answers: the oldest in flight, or the one with the answer's id.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, oneshot};
use tokio::time::Sleep;

use super::ThreadCtx;
use super::client::Link;
use super::conn::Failure;
use super::exchange::{Exchange, timeout_failure};
use super::ws::{Got, WsLink, setup_done};
use crate::metrics::ErrorKind;
use crate::protocol::ws::{self, matching};
use crate::protocol::{Answer, PreparedRequest};

/// The status an answer is recorded with, as a single message's is.
const ANSWERED: u16 = 200;

/// The connections of a thread's slots for one step: slot `s` uses connection `s / in_flight`.
struct Pool {
    in_flight: usize,
    conns: Vec<Rc<Flight>>,
}

thread_local! {
    /// The pool of the step this thread runs, keyed by the step's shared state (engine threads run one step each).
    static POOL: RefCell<Option<(usize, Rc<Pool>)>> = const { RefCell::new(None) };
}

/// The connection slot `id` (a client of this thread) sends its messages on.
fn flight(ctx: &ThreadCtx, id: usize) -> Rc<Flight> {
    let pool = super::step_local(&POOL, ctx, || {
        let in_flight = WsLink::settings(ctx).in_flight.max(1);
        let conns = ctx.max_clients.div_ceil(in_flight).max(1);
        Pool { in_flight, conns: (0..conns).map(|_| Rc::new(Flight::default())).collect() }
    });
    let slot = id / ctx.threads;
    Rc::clone(&pool.conns[(slot / pool.in_flight).min(pool.conns.len() - 1)])
}

/// A slot group's connection, as its slots see it: the one open (if any), or being opened by one of them.
#[derive(Default)]
struct Flight {
    current: RefCell<Option<Rc<Line>>>,
    /// A slot is opening a connection: the others wait.
    opening: Cell<bool>,
    /// Wakes the slots waiting while another opens the connection.
    opened: Notify,
    /// Slots that have joined and not finished: the last to finish closes the connection.
    live: Cell<usize>,
}

/// One open connection: what its slots and its task exchange.
#[derive(Default)]
struct Line {
    /// Messages to write, in the order of `waiting`.
    outgoing: RefCell<VecDeque<Vec<u8>>>,
    /// Messages written or to write that await their answers, oldest first: at most `--in-flight` (a slot's
    /// timed-out one leaves at once with `--match-field`; without, the connection is given up).
    waiting: RefCell<VecDeque<Waiter>>,
    /// Wakes the connection's task: a message to write, or the connection to close.
    wake: Notify,
    /// The connection is to be closed (the last slot is done, or it was given up).
    done: Cell<bool>,
    /// Wakes the last slot once the closing handshake is done.
    closed: Notify,
}

/// A message awaiting its answer.
struct Waiter {
    /// Its id (`--match-field`); None when answers are taken in order.
    id: Option<Box<[u8]>>,
    answer: oneshot::Sender<Result<(), Failure>>,
}

impl Flight {
    /// `line` is no longer the connection new messages go on.
    fn forget(&self, line: &Rc<Line>) {
        let mut current = self.current.borrow_mut();
        if current.as_ref().is_some_and(|c| Rc::ptr_eq(c, line)) {
            *current = None;
        }
    }
}

impl Line {
    /// Every message in flight fails with `failure` (the connection ended under them).
    fn fail_all(&self, failure: &Failure) {
        self.outgoing.borrow_mut().clear();
        for waiter in self.waiting.borrow_mut().drain(..) {
            let _ = waiter.answer.send(Err(failure.clone()));
        }
    }

    /// Hands the answer just read by `link` to the message it answers, or counts it as unmatched.
    fn hand_over(&self, ctx: &ThreadCtx, link: &WsLink) {
        let settings = WsLink::settings(ctx);
        let mut waiting = self.waiting.borrow_mut();
        let at = match &settings.match_field {
            None => (!waiting.is_empty()).then_some(0),
            Some(pointer) => match matching::id_at(link.kept(), pointer) {
                Some(id) => waiting.iter().position(|w| w.id.as_deref() == Some(id.as_slice())),
                None => {
                    ctx.metrics.borrow_mut().wire.ws_unmatched.no_id += 1;
                    return;
                }
            },
        };
        match at.and_then(|i| waiting.remove(i)) {
            Some(waiter) => {
                let _ = waiter.answer.send(link.judge(ctx));
            }
            None => ctx.metrics.borrow_mut().wire.ws_unmatched.not_in_flight += 1,
        }
    }
}

/// The connection's task: writes the slots' messages in order, reads the server's frames (answering pings), and
/// hands the answers over, until the connection fails or is to be closed.
async fn drive(ctx: Rc<ThreadCtx>, flight: Rc<Flight>, line: Rc<Line>, mut link: WsLink) {
    let opcode = WsLink::settings(&ctx).opcode();
    // The slots keep their own deadlines: the reader waits as long as there is a connection.
    let forever = Duration::from_secs(365 * 24 * 3600);
    let write_limit = write_limit(&ctx);
    let failure = loop {
        if line.done.get() {
            link.close(&ctx).await;
            line.fail_all(&Failure::new(ErrorKind::Closed, "the connection was closed"));
            flight.forget(&line);
            line.closed.notify_waiters();
            return;
        }
        let next = line.outgoing.borrow_mut().pop_front();
        if let Some(message) = next {
            // A server that stops reading holds the write: bounded, as a single message's is by its timeout.
            match tokio::time::timeout(write_limit, link.send(opcode, &message)).await {
                Ok(Ok(_)) => continue,
                Ok(Err(f)) => break f,
                Err(_) => break timeout_failure(write_limit),
            }
        }
        // Reading only: dropped when a message is to be written, it loses nothing.
        let got = tokio::select! {
            biased;
            _ = line.wake.notified() => continue,
            got = link.read_event(&ctx, Instant::now() + forever, forever) => got,
        };
        let outcome = match got {
            Ok(Got::Message) => {
                line.hand_over(&ctx, &link);
                Ok(())
            }
            Ok(other) => link.control(&ctx, other).await,
            Err(f) => Err(f),
        };
        if let Err(f) = outcome {
            break f;
        }
    };
    flight.forget(&line);
    link.drop_conn(&ctx);
    line.fail_all(&failure);
    line.closed.notify_waiters();
}

/// The longest a write may take: the longest `--timeout` of the plan's requests.
fn write_limit(ctx: &ThreadCtx) -> Duration {
    ctx.shared.plan.requests.iter().map(|r| r.timeout).max().unwrap_or(Duration::from_secs(30))
}

/// A client of a shared connection: one message in flight of the connection's N.
pub(super) struct Slot {
    flight: Rc<Flight>,
}

impl Slot {
    pub(super) fn new(ctx: &ThreadCtx, id: usize) -> Slot {
        Slot { flight: flight(ctx, id) }
    }

    /// The open connection: opened by this slot if none is (its setup recorded from `ready`, and the time it was
    /// ready returned), waited for while another slot opens it.
    /// `headers`: the upgrade's, filled from templates for the message that opens it.
    async fn connect(
        &self,
        ctx: &Rc<ThreadCtx>,
        id: usize,
        endpoint: usize,
        ready: Instant,
        headers: Option<&[(String, String)]>,
    ) -> Result<(Rc<Line>, Option<Instant>), Failure> {
        loop {
            if let Some(line) = self.flight.current.borrow().as_ref() {
                return Ok((Rc::clone(line), None));
            }
            if !self.flight.opening.get() {
                break;
            }
            self.flight.opened.notified().await;
        }
        self.flight.opening.set(true);
        let mut link = WsLink::new(ctx, id);
        let opened = link.open(ctx, endpoint, headers).await;
        self.flight.opening.set(false);
        // The slots waiting take the connection, or try in turn, each counting its own failure, as single
        // connections do.
        self.flight.opened.notify_waiters();
        let (tcp_done, connected) = opened?;
        let now = Instant::now();
        ctx.record_connect(ready, tcp_done, setup_done(tcp_done.is_some(), connected, now));
        let line = Rc::new(Line::default());
        *self.flight.current.borrow_mut() = Some(Rc::clone(&line));
        tokio::task::spawn_local(drive(Rc::clone(ctx), Rc::clone(&self.flight), Rc::clone(&line), link));
        Ok((line, Some(now)))
    }
}

impl Link for Slot {
    async fn join(&mut self, ctx: &Rc<ThreadCtx>, id: usize) -> bool {
        self.flight.live.set(self.flight.live.get() + 1);
        if ctx.schedule.is_some() && !WsLink::settings(ctx).templated_headers {
            // Open loop: the connection upgraded before asking for a slot; a failure is counted by the first
            // request, which opens it again.
            let _ = self.connect(ctx, id, 0, Instant::now(), None).await;
        }
        true
    }

    async fn exchange(
        &mut self,
        ctx: &Rc<ThreadCtx>,
        id: usize,
        exchange: &Exchange<'_>,
        _prepared: &PreparedRequest,
        mut timer: Pin<&mut Sleep>,
        _pipelined: bool,
    ) -> Result<(Answer, Instant), Failure> {
        let settings = WsLink::settings(ctx);
        let message = exchange.bytes();
        let id_of_message = match &settings.match_field {
            None => None,
            Some(pointer) => match matching::id_at(message, pointer) {
                Some(found) => Some(found.into_boxed_slice()),
                None => {
                    let shown = String::from_utf8_lossy(&message[..message.len().min(60)]).into_owned();
                    return Err(Failure::new(
                        ErrorKind::WsNoId,
                        format!(
                            "the message sent had no id at {pointer}: \"{}\"",
                            crate::base::secrets::scrub_text(&shown).escape_debug()
                        ),
                    ));
                }
            },
        };
        // Taken before any wait: another client's message may fill the headers next.
        let headers = ctx.script.filled_headers();
        let (line, opened) = self.connect(ctx, id, exchange.endpoint, exchange.ready, headers.as_deref()).await?;
        // A connection opened only past the step's end: the message is not sent after it.
        ctx.check_not_over()?;
        // As a single connection's: its setup is in the latency (from the intended send), not in the service time.
        let sent = opened.unwrap_or(exchange.ready);
        let deadline = sent + exchange.timeout;
        timer.as_mut().reset(deadline.into());
        let (answer, answered) = oneshot::channel();
        line.outgoing.borrow_mut().push_back(message.to_vec());
        line.waiting.borrow_mut().push_back(Waiter { id: id_of_message, answer });
        exchange.wrote(ws::frame_len(message.len()));
        line.wake.notify_one();
        let mut answered = answered;
        let outcome = tokio::select! {
            biased;
            r = &mut answered => Some(r),
            _ = timer.as_mut() => None,
        };
        drop(answered);
        match outcome {
            Some(Ok(Ok(()))) => Ok((Answer { status: ANSWERED, keep_alive: true }, sent)),
            Some(Ok(Err(f))) => Err(f),
            Some(Err(_)) => Err(Failure::new(ErrorKind::Closed, "the connection was closed")),
            None => {
                if settings.match_field.is_some() {
                    // Its answer, if it comes, is counted as unmatched (not in flight).
                    line.waiting.borrow_mut().retain(|w| !w.answer.is_closed());
                } else if !line.done.get() {
                    // Answers taken in order: its late answer would be taken for the next message's. The
                    // connection is given up (closed by its task), and the messages in flight with it.
                    line.done.set(true);
                    self.flight.forget(&line);
                    line.fail_all(&Failure::new(
                        ErrorKind::Closed,
                        "closed by hakaru: a message before it timed out, and answers are taken in order \
                         (--match-field pairs them by id)",
                    ));
                    line.wake.notify_one();
                }
                Err(timeout_failure(exchange.timeout))
            }
        }
    }

    async fn close_all(&mut self, ctx: &ThreadCtx) {
        let left = self.flight.live.get().saturating_sub(1);
        self.flight.live.set(left);
        let line = self.flight.current.borrow().clone();
        if let (0, Some(line)) = (left, line) {
            line.done.set(true);
            line.wake.notify_one();
            // The task's write (bounded by the write limit) and its closing handshake (by --connect-timeout).
            let bound = write_limit(ctx) + ctx.shared.plan.connect_timeout;
            let _ = tokio::time::timeout(bound, line.closed.notified()).await;
        }
    }
}
