//! One client: the loop that takes a request, sends it when the load model says, and records the outcome.
//!
//! Closed and open loads run this same loop; only the intended send time differs. Latency is measured from the
//! intended time (so a server stall is not hidden by a client waiting on it) and from the actual send.

mod batch;

use std::cell::Cell;
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::time::Sleep;

use std::sync::atomic::Ordering;

use super::conn::{Conn, Failure, Idle, connect_timed};
use super::exchange::{Exchange, Wire, decode_failure, timeout_failure};
use super::{NOT_SENT, ThreadCtx};
use crate::metrics::{ErrorKind, HakaruClose};
use crate::protocol::http::{Kept, Rest};
use crate::protocol::resp::{self, RespDecoder};
use crate::protocol::{Answer, AnyDecoder, PreparedRequest, ResponseDecoder};
use crate::script::Shape;
use crate::workload::{Reply, Source, Verdict};
use batch::*;

/// What a client's requests go over: connections of its own (HTTP/1.1, Redis, memcached) or streams of its thread's
/// HTTP/2 pool. A type parameter of the one client loop, and the owner of what only its kind needs, so that a
/// client's task holds only its own kind's state and futures: an HTTP/2 stream slot's task leaves out HTTP/1.1's
/// connections, decoder, exchange and connect (10,000 slots at -c 100 --streams 100, each a task).
pub(super) trait Link {
    /// Before the first request; false when the client ends at once (an HTTP/2 slot beyond the server's limit).
    async fn join(&mut self, ctx: &Rc<ThreadCtx>, id: usize) -> bool;
    /// One request, sent and answered: the answer with its send time, or the failure. `pipelined`: the request
    /// holds several (a script's string), whose answers after the first [`read_rest`](Self::read_rest) reads.
    async fn exchange(
        &mut self,
        ctx: &Rc<ThreadCtx>,
        id: usize,
        exchange: &Exchange<'_>,
        prepared: &PreparedRequest,
        timer: Pin<&mut Sleep>,
        pipelined: bool,
    ) -> Result<(Answer, Instant), Failure>;
    /// The decoder of the last answer, for a workload's or a script's look at it and an error's text: HTTP/1.1's,
    /// Redis's, memcached's (HTTP/2's answers are read by their connection's task).
    fn decoder(&self) -> Option<&AnyDecoder> {
        None
    }
    fn decoder_mut(&mut self) -> Option<&mut AnyDecoder> {
        None
    }
    /// The last answer's headers and body, when a script's `response()` wants them.
    fn kept(&self) -> Option<&Kept> {
        self.decoder().and_then(AnyDecoder::kept)
    }
    /// A pipelined client's connections and decoder (`--pipeline`, key-value workloads only).
    fn batch_parts(&mut self) -> Option<(&mut [Slot], &mut AnyDecoder)> {
        None
    }
    /// A script's pipelined answers after the first: HTTP/1.1's only (the plan refuses a script with --http2).
    async fn read_rest(
        &mut self,
        _ctx: &ThreadCtx,
        _endpoint: usize,
        _shape: &Shape,
        _timer: Pin<&mut Sleep>,
        _first: Pipelined,
    ) {
    }
    /// The client is done: its own connections closed (a WebSocket's with its closing handshake).
    async fn close_all(&mut self, _ctx: &ThreadCtx) {}
}

/// The client's own connections, one per endpoint, with the decoder of their answers.
pub(super) struct Own {
    conns: Vec<Slot>,
    decoder: AnyDecoder,
    /// Answers read past a script's first pipelined one.
    pending: Pending,
}

impl Own {
    pub(super) fn new(ctx: &ThreadCtx) -> Own {
        let plan = &ctx.shared.plan;
        let mut decoder = AnyDecoder::new(plan.wire.protocol(), plan.max_line);
        super::events::install(ctx, &mut decoder);
        Own {
            conns: (0..plan.endpoints.len()).map(|_| Slot::default()).collect(),
            decoder,
            pending: Pending::default(),
        }
    }
}

impl Link for Own {
    async fn join(&mut self, ctx: &Rc<ThreadCtx>, _id: usize) -> bool {
        let conns = &mut self.conns;
        if ctx.schedule.is_some() && conns.len() == 1 {
            // Open loop: connect before asking for a slot, so the slot is not late by the connection's setup.
            // (Before the load's clock runs: two reads of it per client are no cost to a request.)
            let start = ctx.connection_turn().await.unwrap_or_else(Instant::now);
            if let Ok((conn, tcp_done)) = connect_timed(
                ctx.endpoint(0),
                ctx.shared.tls.as_ref(),
                ctx.shared.plan.connect_timeout,
                ctx.shared.plan.keepalive,
            )
            .await
            {
                ctx.record_connect(start, tcp_done, Instant::now());
                ctx.metrics.borrow_mut().connection_opened();
                conns[0].conn = Some(conn);
                if greet(ctx, conns[0].conn.as_mut().expect("just set")).await.is_err() {
                    // The first request will open (and greet) a connection again, and count the failure.
                    close(ctx, &mut conns[0].conn);
                }
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
        timer: Pin<&mut Sleep>,
        pipelined: bool,
    ) -> Result<(Answer, Instant), Failure> {
        self.pending.clear();
        let pending = pipelined.then_some(&mut self.pending);
        exchange.run(ctx, &mut self.conns[exchange.endpoint], &mut self.decoder, timer, pending).await
    }

    fn decoder(&self) -> Option<&AnyDecoder> {
        Some(&self.decoder)
    }

    fn decoder_mut(&mut self) -> Option<&mut AnyDecoder> {
        Some(&mut self.decoder)
    }

    fn batch_parts(&mut self) -> Option<(&mut [Slot], &mut AnyDecoder)> {
        Some((&mut self.conns, &mut self.decoder))
    }

    async fn read_rest(
        &mut self,
        ctx: &ThreadCtx,
        endpoint: usize,
        shape: &Shape,
        timer: Pin<&mut Sleep>,
        first: Pipelined,
    ) {
        let Own { conns, decoder, pending } = self;
        if let Some(slot) = conns.get_mut(endpoint) {
            read_rest(ctx, slot, decoder, pending, shape, timer, first).await
        }
    }

    async fn close_all(&mut self, ctx: &ThreadCtx) {
        for slot in &mut self.conns {
            close(ctx, &mut slot.conn);
        }
    }
}

/// Streams of the thread's HTTP/2 pool: the client is a stream slot.
pub(super) struct Streams(pub Rc<super::h2::Pool>);

impl Link for Streams {
    async fn join(&mut self, ctx: &Rc<ThreadCtx>, id: usize) -> bool {
        // The slot's connection opened and its SETTINGS read first; a slot past the server's stream limit ends.
        super::h2::join(ctx, &self.0, id / ctx.threads).await
    }

    /// The stream's future itself, not one wrapping it: the slot's task holds it (see [`super::h2::exchange`]).
    fn exchange(
        &mut self,
        ctx: &Rc<ThreadCtx>,
        id: usize,
        exchange: &Exchange<'_>,
        prepared: &PreparedRequest,
        timer: Pin<&mut Sleep>,
        _pipelined: bool,
    ) -> impl std::future::Future<Output = Result<(Answer, Instant), Failure>> {
        super::h2::exchange(ctx, &self.0, id / ctx.threads, exchange, prepared, timer)
    }
}

/// Runs one client until its thread has no more tickets; the thread cancels it at the deadline.
///
/// An `async move` block rather than an `async fn`: an async fn's future keeps its arguments twice (as given and as
/// locals), and this future is a client's task (10,000 HTTP/2 stream slots at -c 100 --streams 100).
#[allow(clippy::manual_async_fn)] // (see above: an async fn's future would keep its arguments twice)
pub(super) fn run_client<L: Link>(ctx: Rc<ThreadCtx>, id: usize, mut link: L) -> impl std::future::Future<Output = ()> {
    async move {
        let mut backoff = Backoff::default();
        // Clients start at different places in the round-robin so that targets share the load from the start.
        let mut turn = id;
        // One timeout timer per client, reset for each request: tokio only moves a timer in its wheel when it
        // fires early, so resetting it later costs an atomic store, not a new timer per request.
        let timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(timer);
        if !link.join(&ctx, id).await {
            return;
        }
        if let Some(schedule) = &ctx.schedule {
            // Tell the other threads this one is ready, even if it never claims a slot (no ticket left), so that
            // the common start never waits for it.
            schedule.ready();
        }
        let plan = &ctx.shared.plan;
        // A key-value workload makes each request as it goes; its ops are drawn before a ticket is taken, so a client
        // whose part is done (order's keys) leaves its tickets to the others.
        // Boxed, once per client: held inline, a key-value client's state (about 640 bytes) would be in every client's
        // task, HTTP's too (10,000 HTTP/2 stream slots hold 10,000 tasks).
        let mut source =
            plan.workload.as_ref().map(|w| Box::new(w.client(plan.client_offset + id, plan.all_clients, plan.seed)));
        if let Some(decoder) = link.decoder_mut() {
            decoder.keep_values(source.as_ref().is_some_and(|s| s.keeps_values()));
        }
        if let (Some(source), Some((conns, decoder))) =
            (source.as_mut().filter(|_| plan.pipeline > 1), link.batch_parts())
        {
            // Boxed, once per client: a batch's future is the largest of the loop's, and held inline it would be in
            // every client's task (10,000 HTTP/2 stream slots hold 10,000 tasks).
            Box::pin(async {
                let mut state = Batches { id, ..Batches::default() };
                while run_batch(&ctx, conns, source, decoder, timer.as_mut(), &mut state).await {}
            })
            .await;
            link.close_all(&ctx).await;
            return;
        }
        // The intended and actual send times of an op whose second half (read-modify-write's write) comes next: one
        // figure for both.
        let mut chained: Option<(Instant, Instant)> = None;
        let mut ready = Instant::now();
        // The request under way found every connection busy and left late: counted when it is recorded, as the
        // late requests are, so the starved are always among the late (a request cut off by the step's end is
        // in neither).
        let mut starved = false;
        // A workload's op (or a script's request) is written here, one buffer for every op of the client.
        let mut wire = Vec::new();
        // A script's request: what it holds, and the answers read past the first when it holds several.
        let scripted = ctx.script.active();
        let mut shape = Shape::default();
        if let (true, Some(decoder)) = (scripted, link.decoder_mut()) {
            ctx.script.prepare_decoder(decoder);
        }
        loop {
            if ctx.shared.halt.load(Ordering::Relaxed) || (scripted && ctx.script.stopped()) {
                break;
            }
            if source.as_ref().is_some_and(|s| s.exhausted()) {
                break;
            }
            let second_half = chained.is_some();
            if !second_half && ctx.ramp_of_clients().is_some() {
                match ctx.take_part(id).await {
                    None => break,
                    Some(true) => ready = Instant::now(),
                    Some(false) => {}
                }
            }
            if !second_half && !ctx.take_ticket() {
                break;
            }
            if scripted {
                // wrk's delay(): the wait before this request (a closed loop's; an open loop refuses delay()).
                match ctx.script.delay() {
                    Ok(Some(pause)) => {
                        tokio::time::sleep(pause).await;
                        ready = Instant::now();
                    }
                    Ok(None) => {}
                    Err(why) => {
                        ctx.script_failed(why);
                        break;
                    }
                }
            }
            let first_sent = chained.map(|(_, sent)| sent);
            let mut intended = match chained.take() {
                Some((first, _)) => first,
                None => ctx.intended_send_time(ready).await,
            };
            if ctx.past_the_end(Some(intended)) {
                break;
            }
            // Made only now that it will be sent: making an op moves a workload's model of its keys.
            let op = match source.as_mut() {
                Some(s) => match s.next_op_into({
                    wire.clear();
                    &mut wire
                }) {
                    Some(op) => {
                        if let Some(busy) = s.take_busy() {
                            ctx.script.add_filled(busy);
                        }
                        Some(op)
                    }
                    None => break,
                },
                None => None,
            };
            // A script's request() is called now, at the request's due time (the open loop's slot).
            if scripted {
                match ctx.script.next(&mut wire, &mut shape) {
                    Ok(true) => {}
                    // A data file's unique rows ran out: the client is done (the request was not sent).
                    Ok(false) => break,
                    Err(why) => {
                        ctx.script_failed(why);
                        break;
                    }
                }
                // Each request of a pipelined string is a request of the budget, as each answer is one of the figures.
                for _ in 1..shape.heads.len() {
                    ctx.take_ticket();
                }
            }
            if let Some(schedule) = ctx.schedule.as_ref().filter(|_| !second_half) {
                // Open loop: this is when the client may send. Keep one connected client spare, so a burst of
                // slots does not wait for a connection to open.
                ready = Instant::now();
                // A slot released up to half the pace window early: its latency counts from its actual send, never
                // from an instant after the request left.
                intended = intended.min(ready);
                let late = ready.saturating_duration_since(intended) > Duration::from_millis(1);
                // A slot missed because every connection -c allows was busy: counted per slot, so the figure
                // says how many requests -c made late. (A second half keeps its first half's mark.)
                starved = schedule.idle() == 0 && !ctx.start_client() && late;
            }
            if !second_half {
                ctx.count_sent(if scripted { shape.heads.len() as u64 } else { 1 }, intended);
            }
            let (spec_index, k) = match &op {
                // A workload's client keeps to one server, so the keys it owns live on one server.
                Some(op) => (op.spec, id % plan.requests[op.spec].endpoints.len()),
                None => ctx.choose(&mut turn),
            };
            let spec = &plan.requests[spec_index];
            let endpoint = spec.endpoints[k];
            let request = match &op {
                Some(op) => {
                    Wire { bytes: &wire, expects_no_body: false, idempotent: op.request.idempotent, built: true }
                }
                None if scripted => {
                    Wire { bytes: &wire, expects_no_body: shape.heads[0], idempotent: shape.idempotent, built: true }
                }
                None => Wire::prepared(&spec.prepared[k]),
            };
            let exchange = Exchange {
                request,
                endpoint,
                timeout: spec.timeout,
                ready,
                written: Cell::new(0),
                first_byte: Cell::new(None),
                ended: Cell::new(None),
            };
            let pipelined = shape.heads.len() > 1;
            let prepared = &spec.prepared[k];
            let result = link.exchange(&ctx, id, &exchange, prepared, timer.as_mut(), pipelined).await;
            // The answer's end; the client is free again when the exchange is done (after the rest of a body whose
            // answer ended at its end event).
            let done = Instant::now();
            if result.as_ref().is_err_and(|f| f.message == NOT_SENT) {
                // Not sent before the step's end (its connection was still to open): in no figure but unfinished.
                break;
            }
            let end = exchange.ended.get().unwrap_or(done);
            // An HTTP/2 answer's message was left in the thread's context by the exchange that just returned (no
            // other client ran in between: there is no await between its return and here).
            let h2_kept = ctx.h2_kept.take();
            if let (true, Ok((answer, _))) = (scripted, &result)
                && let Err(why) = ctx.script.response(answer, h2_kept.as_deref().or_else(|| link.kept()))
            {
                ctx.script_failed(why);
            }
            // Bytes out count only for requests that ended: one cut off by the end of the step is in no figure.
            ctx.metrics.borrow_mut().bytes_out += exchange.written.get();
            let pause = backoff.after(result.as_ref().err());
            let failed = result.is_err();
            let verdict = match (source.as_mut(), &op, &result, link.decoder()) {
                (Some(s), Some(op), Ok((answer, _)), Some(decoder)) => s.observe(op, reply(*answer, decoder)),
                _ => Verdict::Pass,
            };
            if let (Some(s), Some(op)) = (source.as_mut(), &op) {
                s.finished(op);
            }
            if let (Some(s), Ok((_, sent))) = (source.as_mut(), &result)
                && matches!(verdict, Verdict::Pass | Verdict::Expected)
                && s.continues()
            {
                chained = Some((intended, first_sent.unwrap_or(*sent)));
                ready = done;
                continue;
            }
            if let Some(s) = source.as_mut() {
                // A first half that failed has no second: the figure is the first's.
                s.drop_second_half();
            }
            // A second half's figure runs from its first half's send.
            let result = match (result, first_sent) {
                (Ok((answer, _)), Some(sent)) => Ok((answer, sent)),
                (other, _) => other,
            };
            if matches!(verdict, Verdict::Wrong(_)) && plan.workload.as_ref().is_some_and(|w| w.halts_on_wrong()) {
                ctx.shared.halt.store(true, Ordering::Relaxed);
            }
            if let Ok((answer, _)) = &result {
                ctx.keep_error_reply(answer, link.decoder());
            }
            let sent = result.as_ref().ok().map(|(_, sent)| *sent);
            if let Some(sent) = sent {
                ctx.record_phases(intended, sent, exchange.first_byte.get(), end);
            }
            super::events::record(&ctx, link.decoder_mut(), sent.unwrap_or(ready), end, sent.is_some());
            if let Some(at) = ctx.record(spec_index, result, intended, ready, end, verdict)
                && op.is_some()
            {
                ctx.name_slow(at, &wire);
            }
            count_starved(&ctx, &mut starved);
            ready = done;
            // (Only with connections of its own: a script's pipelined string is HTTP/1.1's.)
            if let (true, Some(sent)) = (pipelined, sent) {
                let deadline = Deadline { at: sent + spec.timeout, limit: spec.timeout };
                let first = Pipelined { spec: spec_index, intended, sent, deadline };
                link.read_rest(&ctx, endpoint, &shape, timer.as_mut(), first).await;
                ready = Instant::now();
            }
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
                ready = Instant::now();
            } else if failed {
                // Some failures (a refused or impossible connect) come back without the loop ever waiting: yield,
                // so the thread's deadline, stop signal and other clients still run.
                tokio::task::yield_now().await;
            }
            if let Some(think) = ctx.think_time() {
                tokio::time::sleep(think).await;
                ready = Instant::now();
            }
        }
        link.close_all(&ctx).await;
    }
}

fn close(ctx: &ThreadCtx, conn: &mut Option<Conn>) {
    if conn.take().is_some() {
        ctx.metrics.borrow_mut().connection_closed();
    }
}

/// A client's connection to one endpoint.
#[derive(Default)]
pub(super) struct Slot {
    conn: Option<Conn>,
    /// The last answer on the (now closed) connection was followed by bytes no request asked for: the next
    /// request to this endpoint fails with this message instead of being sent, so the protocol error is
    /// counted, and counted against a request, as every error is.
    stray: Option<String>,
    /// Answers the open connection has carried (for `--max-requests-per-connection`).
    carried: u64,
}

/// Waiting after a failure that more attempts cannot cure at once: no file descriptor left. The wait doubles
/// from 5 ms to 500 ms while the failures go on, so a client without a descriptor neither spins nor eats the
/// request budget, and it is back within half a second once descriptors are free.
#[derive(Default)]
struct Backoff {
    wait: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MOST: Duration = Duration::from_millis(500);

    /// The wait after a request (or batch) that ended in `failure`, or succeeded (None).
    fn after(&mut self, failure: Option<&Failure>) -> Option<Duration> {
        match failure {
            Some(f) if f.kind == ErrorKind::FileLimit => {
                self.wait = if self.wait.is_zero() { Self::FIRST } else { (self.wait * 2).min(Self::MOST) };
                Some(self.wait)
            }
            _ => {
                self.wait = Duration::ZERO;
                None
            }
        }
    }
}

/// A connection of the client's own (HTTP/1.1, Redis, memcached): the exchange over it.
impl Exchange<'_> {
    /// Sends the request (opening the connection if needed) and reads the answer; returns it with the send time.
    /// A keep-alive connection the server closed while idle is reopened once, as browsers and HTTP clients do.
    async fn run(
        &self,
        ctx: &ThreadCtx,
        slot: &mut Slot,
        decoder: &mut AnyDecoder,
        mut timer: Pin<&mut Sleep>,
        mut pipelined: Option<&mut Pending>,
    ) -> Result<(Answer, Instant), Failure> {
        let plan = &ctx.shared.plan;
        let Slot { conn: slot, stray, carried } = slot;
        if let Some(what) = stray.take() {
            return Err(Failure::new(ErrorKind::Unsolicited, what));
        }
        let mut retried = false;
        // Where a connection opened for this request starts: when the client was ready (no clock read for it).
        let mut start = self.ready;
        loop {
            let opened = open(ctx, slot, self.endpoint).await?;
            // A connection that took until past the step's end to open (a TLS handshake, a greeting): the request
            // is not sent after the end.
            ctx.check_not_over()?;
            let fresh = opened.is_some();
            if fresh {
                *carried = 0;
            }
            let Some(conn) = slot.as_mut() else { unreachable!("the slot was just filled") };
            // Reading the clock costs; it is read again only when connecting took time.
            let sent = if fresh || retried { Instant::now() } else { self.ready };
            if let Some(o) = opened {
                ctx.record_connect(o.turn.unwrap_or(start), o.tls, sent);
            }
            self.first_byte.set(None);
            decoder.start(self.request.expects_no_body);
            let deadline = Deadline { at: sent + self.timeout, limit: self.timeout };
            timer.as_mut().reset(deadline.at.into());
            let attempt = async {
                conn.write_all(self.request.bytes).await.map_err(|e| Failure::from_io(&e))?;
                conn.flush().await.map_err(|e| Failure::from_io(&e))?;
                self.written.set(self.written.get() + self.request.bytes.len() as u64);
                read_answer(ctx, conn, decoder, pipelined.as_deref_mut(), deadline, Some(&self.first_byte)).await
            };
            let outcome = tokio::select! {
                biased;
                result = attempt => Some(result),
                _ = timer.as_mut() => None,
            };
            match outcome {
                Some(Ok(answer)) => {
                    *carried += 1;
                    let rest = super::events::rest(decoder);
                    if plan.max_requests_per_connection.is_some_and(|n| *carried >= n) && slot.is_some() {
                        close(ctx, slot);
                        ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::MaxRequests);
                    } else if rest == Rest::PastEnd {
                        close(ctx, slot);
                        ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::PastEnd);
                    } else if !answer.keep_alive || !plan.keepalive {
                        close(ctx, slot);
                        if plan.keepalive {
                            ctx.metrics.borrow_mut().reconnects += 1;
                        }
                    } else if rest == Rest::ToRead {
                        // The answer ended at its end event; the body's end (the last chunk after `[DONE]`, often
                        // in a write of its own) is read before the connection carries another request, within
                        // the request's timeout and at most MOST_REST_WAIT: a server that holds the connection
                        // after `[DONE]` costs a second at most, not a 300 s timeout every answer.
                        let now = Instant::now();
                        self.ended.set(Some(now));
                        let rest_deadline = Deadline { at: deadline.at.min(now + MOST_REST_WAIT), ..deadline };
                        let Some(conn) = slot.as_mut() else { unreachable!("kept open above") };
                        let read = read_answer(ctx, conn, decoder, None, rest_deadline, None);
                        let outcome = tokio::select! {
                            biased;
                            result = read => Some(result),
                            _ = tokio::time::sleep_until(rest_deadline.at.into()) => None,
                        };
                        match outcome {
                            Some(Ok(_)) => {
                                if let Some(what) = decoder.stray() {
                                    // Bytes after the body's end, as after any answer: the next request fails with
                                    // them, counted as unsolicited.
                                    *stray = Some(what.to_string());
                                    close(ctx, slot);
                                    ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::Unsolicited);
                                }
                            }
                            None => {
                                close(ctx, slot);
                                ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::PastEnd);
                            }
                            Some(Err(f)) => {
                                close(ctx, slot);
                                // The server closed or broke the connection in the body's end: its close, not
                                // hakaru's; a body that went on past its end, or too long in coming, is hakaru's.
                                let m = &mut *ctx.metrics.borrow_mut();
                                match f.kind {
                                    ErrorKind::Closed | ErrorKind::Reset | ErrorKind::Io | ErrorKind::StreamCut => {
                                        m.reconnects += 1
                                    }
                                    _ => m.closed_by_hakaru(HakaruClose::PastEnd),
                                }
                            }
                        }
                    } else if let Some(what) = decoder.stray().filter(|_| pipelined.is_none()) {
                        // The answer is the request's own; what followed it answers nothing and would be read as
                        // the next request's answer. (On a connection that closes anyway it harms no one.)
                        *stray = Some(what.to_string());
                        close(ctx, slot);
                        ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::Unsolicited);
                    }
                    return Ok((answer, sent));
                }
                Some(Err(failure)) => {
                    if failure.kind == ErrorKind::Timeout && slot.is_some() {
                        ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::Timeout);
                    }
                    close(ctx, slot);
                    let stale = !fresh
                        && !retried
                        && self.request.idempotent
                        && decoder.nothing_received()
                        && matches!(failure.kind, ErrorKind::Closed | ErrorKind::Reset);
                    if stale {
                        ctx.metrics.borrow_mut().reconnects += 1;
                        retried = true;
                        start = Instant::now();
                        continue;
                    }
                    return Err(failure);
                }
                None => {
                    if slot.is_some() {
                        ctx.metrics.borrow_mut().closed_by_hakaru(HakaruClose::Timeout);
                    }
                    close(ctx, slot);
                    return Err(timeout_failure(self.timeout));
                }
            }
        }
    }
}

/// The longest wait for a streamed body's end after its end event (see `Exchange::run`).
const MOST_REST_WAIT: Duration = Duration::from_secs(1);

/// Makes the slot's connection ready for a request: opened (and greeted) when there is none. Every connection, a
/// new one included, is looked at before a request is written: bytes already there were not sent in answer to it,
/// and must not be taken for its answer. Returns Some when the connection is new, holding when TCP was established
/// if a TLS handshake followed.
async fn open(ctx: &ThreadCtx, slot: &mut Option<Conn>, endpoint: usize) -> Result<Option<Opened>, Failure> {
    let plan = &ctx.shared.plan;
    match slot.as_mut().map(Conn::idle_state) {
        None | Some(Idle::Open) => {}
        Some(Idle::Closed) => {
            // The server closed this idle keep-alive connection: reopen before sending, not after.
            close(ctx, slot);
            ctx.metrics.borrow_mut().reconnects += 1;
        }
        Some(Idle::Unsolicited(what)) => {
            close(ctx, slot);
            return Err(Failure::new(ErrorKind::Unsolicited, what));
        }
    }
    if slot.is_some() {
        return Ok(None);
    }
    let turn = ctx.connection_turn().await;
    ctx.check_not_over()?;
    let ep = ctx.endpoint(endpoint);
    let (conn, tcp_done) = connect_timed(ep, ctx.shared.tls.as_ref(), plan.connect_timeout, plan.keepalive).await?;
    ctx.metrics.borrow_mut().connection_opened();
    *slot = Some(conn);
    if let Err(f) = greet(ctx, slot.as_mut().expect("just set")).await {
        close(ctx, slot);
        return Err(f);
    }
    Ok(Some(Opened { turn, tls: tcp_done }))
}

/// A connection [`open`] made: when its `--connection-rate` turn came (None without the flag: it started when the
/// client was ready), and the TLS handshake that followed TCP's.
struct Opened {
    turn: Option<Instant>,
    tls: Option<crate::metrics::phases::Handshake>,
}

/// Sends the plan's greeting (Redis AUTH, SELECT) on a new connection, one command at a time, each waiting for
/// its reply within the connect timeout; an error reply fails the connection (the request is not sent).
async fn greet(ctx: &ThreadCtx, conn: &mut Conn) -> Result<(), Failure> {
    let Some(g) = ctx.shared.plan.wire.greeting() else { return Ok(()) };
    let limit = ctx.shared.plan.connect_timeout;
    let deadline = Deadline { at: Instant::now() + limit, limit };
    let missed = || Failure::new(ErrorKind::ConnectTimeout, format!("no reply to {} within {limit:?}", g.what));
    let exchange = async {
        let mut decoder = RespDecoder::default();
        for command in &g.commands {
            conn.write_all(command).await.map_err(|e| Failure::from_io(&e))?;
            ctx.metrics.borrow_mut().bytes_out += command.len() as u64;
            decoder.start(false);
            let mut any = AnyDecoder::Resp(decoder);
            let answer = read_answer(ctx, conn, &mut any, None, deadline, None).await.map_err(|f| match f.kind {
                ErrorKind::Timeout => missed(),
                kind => Failure::new(kind, g.scrub(&f.message)),
            })?;
            let AnyDecoder::Resp(d) = any else { unreachable!("built as Resp") };
            decoder = d;
            if answer.status == resp::STATUS_ERROR {
                let why = g.scrub(decoder.error().unwrap_or("an error reply"));
                return Err(Failure::new(ErrorKind::Connect, format!("the server refused {}: {why}", g.what)));
            }
            if let Some(extra) = decoder.stray() {
                // More than one reply to one command: the next request's answer could not be told apart.
                return Err(Failure::new(ErrorKind::Unsolicited, g.scrub(extra)));
            }
        }
        Ok(())
    };
    tokio::time::timeout(limit, exchange).await.unwrap_or_else(|_| Err(missed()))
}

/// A workload's view of the answer just decoded.
fn reply(answer: Answer, decoder: &AnyDecoder) -> Reply<'_> {
    Reply { answer, value: decoder.value(), ends: decoder.ends(), cas: decoder.cas() }
}

/// When an answer must be complete, and the limit it comes from (for the message).
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    limit: Duration,
}

/// Reads until the decoder has a complete answer. Bytes go through the thread's one read buffer, borrowed only
/// inside `poll`, so a thousand connections do not each hold a large buffer. With `pending` (pipelined replies),
/// bytes after the answer are kept there, as the next reply's start, and bytes already there are read first.
///
/// `deadline` is checked after every read that leaves the answer unfinished. The caller's timer is not enough: a
/// server that never stops sending keeps every read ready, each read spends tokio's task budget, and a timer polled
/// with none left stays pending, so a 1 s timeout ran 30 s and more (issue 28). The clock is read only on those
/// reads: an answer that comes in one read costs nothing more. The first of those reads is the answer's first byte,
/// kept in `first_byte` when given.
async fn read_answer(
    ctx: &ThreadCtx,
    conn: &mut Conn,
    decoder: &mut AnyDecoder,
    mut pending: Option<&mut Pending>,
    deadline: Deadline,
    first_byte: Option<&Cell<Option<Instant>>>,
) -> Result<Answer, Failure> {
    if let Some(p) = pending.as_deref_mut().filter(|p| p.at < p.bytes.len()) {
        match decoder.feed(p.unread()).map_err(decode_failure)? {
            Some(answer) => {
                p.at = p.bytes.len() - decoder.unread();
                return Ok(answer);
            }
            // The decoder keeps what it needs of a reply begun: the rest comes from the connection.
            None => p.clear(),
        }
    }
    poll_fn(|cx| {
        loop {
            let mut scratch = ctx.scratch.borrow_mut();
            let mut buf = ReadBuf::new(&mut scratch[..]);
            match Pin::new(&mut *conn).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(super::events::cut(decoder, Failure::from_io(&e)))),
                Poll::Ready(Ok(())) => {}
            }
            let data = buf.filled();
            if data.is_empty() {
                return Poll::Ready(decoder.eof().map_err(decode_failure));
            }
            let stamped = super::events::stamp(decoder);
            ctx.metrics.borrow_mut().bytes_in += data.len() as u64;
            let arrived = pending.as_deref_mut().map(|p| {
                p.arrived = Instant::now();
                p.arrived
            });
            match decoder.feed(data) {
                Ok(Some(answer)) => {
                    if let Some(p) = pending.as_deref_mut() {
                        p.clear();
                        p.bytes.extend_from_slice(&data[data.len() - decoder.unread()..]);
                    }
                    return Poll::Ready(Ok(answer));
                }
                Ok(None) => {
                    // A read of an answer under way (a stream's events, a long body): the window's progress, so a
                    // window of answers that stream longer than it is no stall.
                    ctx.metrics.borrow_mut().window.progress += 1;
                    let now = stamped.or(arrived).unwrap_or_else(Instant::now);
                    if let Some(first) = first_byte.filter(|f| f.get().is_none()) {
                        first.set(Some(now));
                    }
                    if now >= deadline.at {
                        return Poll::Ready(Err(timeout_failure(deadline.limit)));
                    }
                }
                Err(e) => return Poll::Ready(Err(decode_failure(e))),
            }
        }
    })
    .await
}
