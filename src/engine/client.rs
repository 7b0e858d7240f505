//! One client: the loop that takes a request, sends it when the load model says, and records the outcome.
//!
//! Closed and open loads run this same loop; only the intended send time differs. Latency is measured from the
//! intended time (so a server stall is not hidden by a client waiting on it) and from the actual send.

use std::cell::Cell;
use std::future::poll_fn;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::time::Sleep;

use super::ThreadCtx;
use super::conn::{Conn, Failure, Idle, connect};
use crate::metrics::ErrorKind;
use crate::protocol::resp::{self, RespDecoder};
use crate::protocol::{Answer, AnyDecoder, DecodeError, PreparedRequest, ResponseDecoder};

/// Runs one client until its thread has no more tickets; the thread cancels it at the deadline.
pub(super) async fn run_client(ctx: Rc<ThreadCtx>, id: usize) {
    let mut conns: Vec<Slot> = (0..ctx.shared.plan.endpoints.len()).map(|_| Slot::default()).collect();
    let mut backoff = Backoff::default();
    let mut decoder = AnyDecoder::new(ctx.shared.plan.protocol);
    // Clients start at different places in the round-robin so that targets share the load from the start.
    let mut turn = id;
    // One timeout timer per client, reset for each request: tokio only moves a timer in its wheel when it
    // fires early, so resetting it later costs an atomic store, not a new timer per request.
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    if ctx.schedule.is_some() && conns.len() == 1 {
        // Open loop: connect before asking for a slot, so the slot is not late by the connection's setup.
        if let Ok(conn) = connect(
            &ctx.shared.plan.endpoints[0],
            ctx.shared.tls.as_ref(),
            ctx.shared.plan.connect_timeout,
            ctx.shared.plan.keepalive,
        )
        .await
        {
            ctx.metrics.borrow_mut().connection_opened();
            conns[0].conn = Some(conn);
            if greet(&ctx, conns[0].conn.as_mut().expect("just set")).await.is_err() {
                // The first request will open (and greet) a connection again, and count the failure.
                close(&ctx, &mut conns[0].conn);
            }
        }
    }
    if let Some(schedule) = &ctx.schedule {
        // Tell the other threads this one is ready, even if it never claims a slot (no ticket left), so that
        // the common start never waits for it.
        schedule.ready();
    }
    let mut ready = Instant::now();
    while ctx.take_ticket() {
        let intended = ctx.intended_send_time(ready).await;
        if ctx.stopped.get() {
            break;
        }
        if let Some(schedule) = &ctx.schedule {
            // Open loop: this is when the client may send. Keep one connected client spare, so a burst of
            // slots does not wait for a connection to open.
            ready = Instant::now();
            let late = ready.saturating_duration_since(intended) > Duration::from_millis(1);
            if schedule.idle() == 0 && !ctx.start_client() && late {
                // A slot missed because every connection -c allows was busy: counted per slot, so the figure
                // says how many requests -c made late.
                ctx.metrics.borrow_mut().starved += 1;
            }
        }
        ctx.metrics.borrow_mut().sent += 1;
        let (spec_index, k) = ctx.choose(&mut turn);
        let spec = &ctx.shared.plan.requests[spec_index];
        let endpoint = spec.endpoints[k];
        let exchange =
            Exchange { request: &spec.prepared[k], endpoint, timeout: spec.timeout, ready, written: Cell::new(0) };
        let result = exchange.run(&ctx, &mut conns[endpoint], &mut decoder, timer.as_mut()).await;
        let end = Instant::now();
        // Bytes out count only for requests that ended: one cut off by the end of the step is in no figure.
        ctx.metrics.borrow_mut().bytes_out += exchange.written.get();
        let pause = backoff.after(&result);
        let failed = result.is_err();
        ctx.record(spec_index, result, intended, ready, end);
        ready = end;
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
    for slot in &mut conns {
        close(&ctx, &mut slot.conn);
    }
}

fn close(ctx: &ThreadCtx, conn: &mut Option<Conn>) {
    if conn.take().is_some() {
        ctx.metrics.borrow_mut().connection_closed();
    }
}

/// A client's connection to one endpoint.
#[derive(Default)]
struct Slot {
    conn: Option<Conn>,
    /// The last answer on the (now closed) connection was followed by bytes no request asked for: the next
    /// request to this endpoint fails with this message instead of being sent, so the protocol error is
    /// counted, and counted against a request, as every error is.
    stray: Option<String>,
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

    fn after(&mut self, result: &Result<(Answer, Instant), Failure>) -> Option<Duration> {
        match result {
            Err(f) if f.kind == ErrorKind::FileLimit => {
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

/// One request to send on the client's connection to `endpoint`.
struct Exchange<'a> {
    request: &'a PreparedRequest,
    endpoint: usize,
    timeout: Duration,
    /// When the client was ready to send (the send time, unless a connection must be opened first).
    ready: Instant,
    /// Bytes written for this request (twice the request when it was retried on a new connection).
    written: Cell<u64>,
}

impl Exchange<'_> {
    /// Sends the request (opening the connection if needed) and reads the answer; returns it with the send time.
    /// A keep-alive connection the server closed while idle is reopened once, as browsers and HTTP clients do.
    async fn run(
        &self,
        ctx: &ThreadCtx,
        slot: &mut Slot,
        decoder: &mut AnyDecoder,
        mut timer: Pin<&mut Sleep>,
    ) -> Result<(Answer, Instant), Failure> {
        let plan = &ctx.shared.plan;
        let Slot { conn: slot, stray } = slot;
        if let Some(what) = stray.take() {
            return Err(Failure::new(ErrorKind::Unsolicited, what));
        }
        let mut retried = false;
        loop {
            // Every connection, a new one included, is looked at before the request is written: bytes already
            // there were not sent in answer to it, and must not be taken for its answer.
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
            let fresh = slot.is_none();
            if fresh {
                let ep = &plan.endpoints[self.endpoint];
                let conn = connect(ep, ctx.shared.tls.as_ref(), plan.connect_timeout, plan.keepalive).await?;
                ctx.metrics.borrow_mut().connection_opened();
                *slot = Some(conn);
                if let Err(f) = greet(ctx, slot.as_mut().expect("just set")).await {
                    close(ctx, slot);
                    return Err(f);
                }
            }
            let Some(conn) = slot.as_mut() else { unreachable!("the slot was just filled") };
            // Reading the clock costs; it is read again only when connecting took time.
            let sent = if fresh || retried { Instant::now() } else { self.ready };
            decoder.start(self.request);
            timer.as_mut().reset((sent + self.timeout).into());
            let attempt = async {
                conn.write_all(&self.request.bytes).await.map_err(|e| Failure::from_io(&e))?;
                conn.flush().await.map_err(|e| Failure::from_io(&e))?;
                self.written.set(self.written.get() + self.request.bytes.len() as u64);
                read_answer(ctx, conn, decoder).await
            };
            let outcome = tokio::select! {
                biased;
                result = attempt => Some(result),
                _ = timer.as_mut() => None,
            };
            match outcome {
                Some(Ok(answer)) => {
                    if !answer.keep_alive || !plan.keepalive {
                        close(ctx, slot);
                        if plan.keepalive {
                            ctx.metrics.borrow_mut().reconnects += 1;
                        }
                    } else if let Some(what) = decoder.stray() {
                        // The answer is the request's own; what followed it answers nothing and would be read as
                        // the next request's answer. (On a connection that closes anyway it harms no one.)
                        *stray = Some(what.to_string());
                        close(ctx, slot);
                    }
                    return Ok((answer, sent));
                }
                Some(Err(failure)) => {
                    close(ctx, slot);
                    let stale = !fresh
                        && !retried
                        && self.request.idempotent
                        && decoder.nothing_received()
                        && matches!(failure.kind, ErrorKind::Closed | ErrorKind::Reset);
                    if stale {
                        ctx.metrics.borrow_mut().reconnects += 1;
                        retried = true;
                        continue;
                    }
                    return Err(failure);
                }
                None => {
                    close(ctx, slot);
                    return Err(Failure::new(
                        ErrorKind::Timeout,
                        format!("no complete answer within {}", humantime::format_duration(self.timeout)),
                    ));
                }
            }
        }
    }
}

/// Sends the plan's greeting (Redis AUTH, SELECT) on a new connection, one command at a time, each waiting for
/// its reply within the connect timeout; an error reply fails the connection (the request is not sent).
async fn greet(ctx: &ThreadCtx, conn: &mut Conn) -> Result<(), Failure> {
    let Some(g) = &ctx.shared.plan.greeting else { return Ok(()) };
    let limit = ctx.shared.plan.connect_timeout;
    let exchange = async {
        let mut decoder = RespDecoder::default();
        for command in &g.commands {
            conn.write_all(command).await.map_err(|e| Failure::from_io(&e))?;
            ctx.metrics.borrow_mut().bytes_out += command.len() as u64;
            let request = PreparedRequest { bytes: command.clone(), expects_no_body: false, idempotent: true };
            decoder.start(&request);
            let mut any = AnyDecoder::Resp(decoder);
            let answer =
                read_answer(ctx, conn, &mut any).await.map_err(|f| Failure::new(f.kind, g.scrub(&f.message)))?;
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
    tokio::time::timeout(limit, exchange).await.unwrap_or_else(|_| {
        Err(Failure::new(ErrorKind::ConnectTimeout, format!("no reply to {} within {limit:?}", g.what)))
    })
}

/// Reads until the decoder has a complete answer. Bytes go through the thread's one read buffer, borrowed only
/// inside `poll`, so a thousand connections do not each hold a large buffer.
async fn read_answer(ctx: &ThreadCtx, conn: &mut Conn, decoder: &mut AnyDecoder) -> Result<Answer, Failure> {
    poll_fn(|cx| {
        loop {
            let mut scratch = ctx.scratch.borrow_mut();
            let mut buf = ReadBuf::new(&mut scratch[..]);
            match Pin::new(&mut *conn).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(Failure::from_io(&e))),
                Poll::Ready(Ok(())) => {}
            }
            let data = buf.filled();
            if data.is_empty() {
                return Poll::Ready(decoder.eof().map_err(decode_failure));
            }
            ctx.metrics.borrow_mut().bytes_in += data.len() as u64;
            match decoder.feed(data) {
                Ok(Some(answer)) => return Poll::Ready(Ok(answer)),
                Ok(None) => continue,
                Err(e) => return Poll::Ready(Err(decode_failure(e))),
            }
        }
    })
    .await
}

fn decode_failure(e: DecodeError) -> Failure {
    match e {
        DecodeError::Malformed(m) => Failure::new(ErrorKind::Malformed, m),
        DecodeError::Truncated(m) => Failure::new(ErrorKind::Closed, m),
    }
}
