//! Pipelined batches (`-P`, a workload's pipeline, a script's string of requests): a client's ops sent together on
//! one connection and their replies read in order, each op's latency from its own intended send time to its own
//! reply; the rest of a pipelined string read after its first answer (`read_rest`).

use super::*;

/// What a pipelined client keeps from one batch to the next: its buffers, so that a batch allocates nothing but
/// its ops.
#[derive(Default)]
pub(super) struct Batches {
    /// The client's number, which picks its server.
    pub(super) id: usize,
    /// Replies read but not decoded yet.
    pub(super) pending: Pending,
    pub(super) backoff: Backoff,
    /// The batch's ops with their intended send times and where their bytes start in `wire`, one buffer (one
    /// write).
    pub(super) ops: Vec<(crate::workload::Op, Instant, usize)>,
    pub(super) wire: Vec<u8>,
}

/// Bytes read past a reply (with pipelining, the next replies), decoded from `at` on, and when they arrived.
/// Kept with an offset, not cut off the front after each reply: a read of 16 small replies would otherwise be
/// copied 16 times over.
pub(super) struct Pending {
    pub(super) bytes: Vec<u8>,
    pub(super) at: usize,
    /// When the last read returned: the arrival time of every reply in it.
    pub(super) arrived: Instant,
}

impl Default for Pending {
    fn default() -> Self {
        Pending { bytes: Vec::new(), at: 0, arrived: Instant::now() }
    }
}

impl Pending {
    pub(super) fn unread(&self) -> &[u8] {
        &self.bytes[self.at..]
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.at = 0;
    }
}

/// One pipelined batch of a workload's client (`--pipeline P`): up to P ops, written in one go on the client's
/// connection, their replies read in order. Each op's latency runs from its intended send time to its own reply
/// (redis-benchmark instead gives every reply of a batch the time of the first). In a closed loop every op of the
/// batch is intended at once; in an open loop (`--rate`) the batch is the client's slot plus the slots already due
/// when it is sent, each op timed from its own slot, so a batch in flight delays the slots that wait for it and
/// that delay is counted. A failure fails the ops still waiting, as their connection is gone. Returns false when
/// the client is done.
pub(super) async fn run_batch(
    ctx: &Rc<ThreadCtx>,
    conns: &mut [Slot],
    source: &mut Source,
    decoder: &mut AnyDecoder,
    mut timer: Pin<&mut Sleep>,
    state: &mut Batches,
) -> bool {
    let Batches { id, pending, backoff, ops, wire } = state;
    let id = *id;
    let plan = &ctx.shared.plan;
    // A ramp of clients (`--stages`): the client sends a batch only while the target counts it in, as an
    // unpipelined client sends a request; its batch is timed from when it is sent (below), not from the wait.
    if ctx.ramp_of_clients().is_some() && ctx.take_part(id).await.is_none() {
        return false;
    }
    ops.clear();
    wire.clear();
    let mut more = true;
    // Closed loop: every op of the batch is intended now. Open loop: the first op waits for its slot, the others
    // are the slots due by then.
    let mut first_slot = None;
    let placeholder = Instant::now();
    while ops.len() < plan.pipeline {
        if ctx.shared.halt.load(Ordering::Relaxed) || ctx.stopped.get() || source.exhausted() {
            more = false;
            break;
        }
        // A later op of an open-loop batch needs a slot already due; without one the batch goes as it is.
        let due = match (&ctx.schedule, first_slot) {
            (Some(_), Some(_)) => match ctx.due_slot() {
                Some(slot) => Some(slot),
                None => break,
            },
            _ => None,
        };
        if !ctx.take_ticket() {
            more = false;
            break;
        }
        let intended = match (&ctx.schedule, due) {
            (None, _) => None,
            (Some(_), Some(slot)) => Some(slot),
            (Some(_), None) => {
                let slot = ctx.intended_send_time(Instant::now()).await;
                first_slot = Some(slot);
                Some(slot)
            }
        };
        if ctx.past_the_end(intended) {
            more = false;
            break;
        }
        let start = wire.len();
        let Some(op) = source.next_op_into(wire) else {
            more = false;
            break;
        };
        if let Some(busy) = source.take_busy() {
            ctx.script.add_filled(busy);
        }
        // A closed loop's ops are all intended when the batch is sent (set below).
        ops.push((op, intended.unwrap_or(placeholder), start));
    }
    if ops.is_empty() {
        return false;
    }
    let now = Instant::now();
    // The batch's first op found every connection busy: counted once that op is recorded (as a lone request's).
    let mut starved = false;
    if ctx.schedule.is_none() {
        for (_, intended, _) in ops.iter_mut() {
            *intended = now;
        }
    } else if let Some(schedule) = &ctx.schedule {
        // A slot released early counts from the batch's send, as a lone request's does: one clock read a batch.
        for (_, intended, _) in ops.iter_mut() {
            *intended = (*intended).min(now);
        }
        // As a lone request does: keep one connected client spare, and count a slot -c made late.
        let late = first_slot.is_some_and(|slot| now.saturating_duration_since(slot) > Duration::from_millis(1));
        starved = schedule.idle() == 0 && !ctx.start_client() && late;
    }
    for (_, intended, _) in ops.iter() {
        ctx.count_sent(1, *intended);
    }
    let spec = &plan.requests[ops[0].0.spec];
    let endpoint = spec.endpoints[id % spec.endpoints.len()];
    let mut failure = conns[endpoint].stray.take().map(|what| Failure::new(ErrorKind::Unsolicited, what));
    let slot = &mut conns[endpoint].conn;
    let mut sent = now;
    let opened = match failure.take() {
        Some(f) => Err(f),
        None => open(ctx, slot, endpoint).await,
    };
    if opened.as_ref().is_err_and(|f| f.message == NOT_SENT) {
        // The step ended while the batch waited for its connection: none of it was sent (all stay unfinished).
        return false;
    }
    let mut keep_alive = true;
    match opened {
        Ok(fresh) => {
            if fresh.is_some() {
                sent = Instant::now();
            }
            let conn = slot.as_mut().expect("opened");
            timer.as_mut().reset((sent + spec.timeout).into());
            let write = async {
                conn.write_all(wire).await.map_err(|e| Failure::from_io(&e))?;
                conn.flush().await.map_err(|e| Failure::from_io(&e))
            };
            let written = tokio::select! {
                biased;
                r = write => r,
                _ = timer.as_mut() => Err(timeout_failure(spec.timeout)),
            };
            match written {
                Ok(()) => ctx.metrics.borrow_mut().bytes_out += wire.len() as u64,
                Err(f) => failure = Some(f),
            }
        }
        Err(f) => failure = Some(f),
    }
    pending.clear();
    for (i, (op, intended, _)) in ops.iter().enumerate() {
        let intended = *intended;
        if let Some(f) = &failure {
            source.finished(op);
            if let Some(at) = ctx.record(op.spec, Err(f.clone()), intended, sent, Instant::now(), Verdict::Pass) {
                ctx.name_slow(at, op_bytes(wire, ops, i));
            }
            count_starved(ctx, &mut starved);
            continue;
        }
        let conn = slot.as_mut().expect("open while no failure");
        decoder.start(false);
        let deadline = Deadline { at: sent + spec.timeout, limit: spec.timeout };
        let outcome = tokio::select! {
            biased;
            r = read_answer(ctx, conn, decoder, Some(pending), deadline, None) => r,
            _ = timer.as_mut() => Err(timeout_failure(spec.timeout)),
        };
        // A reply's end is when the read that brought it returned, not when it was decoded: replies that came in
        // one read came at once (and the clock is read once per read, not per reply).
        let end = if outcome.is_ok() { pending.arrived } else { Instant::now() };
        let slow = match outcome {
            Ok(answer) => {
                let verdict = source.observe(op, reply(answer, decoder));
                if let Verdict::Wrong(_) = &verdict
                    && plan.workload.as_ref().is_some_and(|w| w.halts_on_wrong())
                {
                    ctx.shared.halt.store(true, Ordering::Relaxed);
                }
                keep_alive &= answer.keep_alive;
                ctx.keep_error_reply(&answer, Some(decoder));
                ctx.record(op.spec, Ok((answer, sent)), intended, sent, end, verdict)
            }
            Err(f) => {
                close(ctx, slot);
                let slow = ctx.record(op.spec, Err(f.clone()), intended, sent, end, Verdict::Pass);
                failure = Some(f);
                slow
            }
        };
        if let Some(at) = slow {
            ctx.name_slow(at, op_bytes(wire, ops, i));
        }
        count_starved(ctx, &mut starved);
        source.finished(op);
    }
    let rest = pending.unread();
    if failure.is_none() && !rest.is_empty() {
        // Bytes after the batch's last reply answer nothing: the connection cannot carry the next batch, whose
        // first request fails with them (as a lone request's does).
        let what = format!("bytes after the reply: {}", String::from_utf8_lossy(&rest[..rest.len().min(64)]));
        conns[endpoint].stray = Some(what);
        close(ctx, &mut conns[endpoint].conn);
    } else if !keep_alive {
        // The server said it closes (memcached after a SERVER_ERROR): the next batch opens a new connection.
        close(ctx, &mut conns[endpoint].conn);
        ctx.metrics.borrow_mut().reconnects += 1;
    }
    // A failure that came back at once (no descriptor, a refused connect) must not spin: back off as a lone
    // request does, or at least let the thread's deadline and stop signal run.
    match backoff.after(failure.as_ref()) {
        Some(pause) => tokio::time::sleep(pause).await,
        None if failure.is_some() => tokio::task::yield_now().await,
        None => {}
    }
    more
}

/// The first of a script's pipelined requests, as sent.
pub(in crate::engine) struct Pipelined {
    pub(super) spec: usize,
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    pub(super) deadline: Deadline,
}

/// Counts a request -c made late once it is recorded (and clears the mark): see `starved` in the client's loop.
pub(super) fn count_starved(ctx: &ThreadCtx, starved: &mut bool) {
    if std::mem::take(starved) {
        let mut m = ctx.metrics.borrow_mut();
        m.starved += 1;
        m.window.starved += 1;
    }
}

/// The answers to a script's pipelined requests after the first (one string holding several, as wrk's
/// pipeline.lua returns): read in order on the same connection, each given to `response()` and recorded from the
/// same intended time, as wrk times them all from the write. A failure fails the answers still to come.
pub(super) async fn read_rest(
    ctx: &ThreadCtx,
    slot: &mut Slot,
    decoder: &mut AnyDecoder,
    pending: &mut Pending,
    shape: &Shape,
    mut timer: Pin<&mut Sleep>,
    first: Pipelined,
) {
    let Pipelined { spec, intended, sent, deadline } = first;
    let mut failure = None;
    for &head in &shape.heads[1..] {
        let outcome = match (&failure, slot.conn.as_mut()) {
            (Some(f), _) => Err(Clone::clone(f)),
            (None, None) => Err(Failure::new(ErrorKind::Closed, "the connection closed before every pipelined answer")),
            (None, Some(conn)) => {
                decoder.start(head);
                tokio::select! {
                    biased;
                    r = read_answer(ctx, conn, decoder, Some(&mut *pending), deadline, None) => r,
                    _ = timer.as_mut() => Err(timeout_failure(deadline.limit)),
                }
            }
        };
        let end = Instant::now();
        match outcome {
            Ok(answer) => {
                if let Err(why) = ctx.script.response(&answer, decoder.kept()) {
                    ctx.script_failed(why);
                }
                ctx.keep_error_reply(&answer, Some(decoder));
                // An answer that ended at its end event (`--events`) left its body's rest unread: the connection
                // cannot carry the next pipelined answer.
                if !answer.keep_alive || super::super::events::rest(decoder) != Rest::None {
                    close(ctx, &mut slot.conn);
                }
                ctx.record(spec, Ok((answer, sent)), intended, sent, end, Verdict::Pass);
            }
            Err(f) => {
                close(ctx, &mut slot.conn);
                ctx.record(spec, Err(f.clone()), intended, sent, end, Verdict::Pass);
                failure = Some(f);
            }
        }
    }
    let rest = pending.unread();
    if failure.is_none() && !rest.is_empty() {
        slot.stray = Some(format!("bytes after the last pipelined answer: {}", quote_start(rest)));
        close(ctx, &mut slot.conn);
    }
}

pub(super) fn quote_start(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned()
}

/// The bytes of op `i` of a batch: from its start up to the next op's. Cut only for an op that entered the slowest
/// list (a closure made for every op cost 7 instructions an op, measured with cachegrind).
pub(super) fn op_bytes<'a>(wire: &'a [u8], ops: &[(crate::workload::Op, Instant, usize)], i: usize) -> &'a [u8] {
    &wire[ops[i].2..ops.get(i + 1).map_or(wire.len(), |next| next.2)]
}
