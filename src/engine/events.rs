//! The engine's side of `--events`: the reader put in each client's HTTP/1.1 decoder, the clock read once per read
//! of a streamed answer (its events' timestamp), a stream broken inside counted as `stream_cut`, and each ended
//! answer's figures moved into the thread's metrics.

use std::time::Instant;

use super::ThreadCtx;
use super::conn::Failure;
use crate::metrics::ErrorKind;
use crate::protocol::AnyDecoder;
use crate::protocol::events::{EventKind, EventReader};
use crate::protocol::http::Rest;

/// Gives the decoder its events reader when the plan reads events.
pub(super) fn install(ctx: &ThreadCtx, decoder: &mut AnyDecoder) {
    if let (Some(spec), AnyDecoder::Http(d)) = (&ctx.shared.plan.events, decoder) {
        d.read_events(EventReader::new(spec.clone(), ctx.shared.plan.max_line));
    }
}

/// What is left of the last answer's body after its end event (HTTP/1.1's: other decoders read no events).
pub(super) fn rest(decoder: &AnyDecoder) -> Rest {
    match decoder {
        AnyDecoder::Http(d) => d.rest(),
        _ => Rest::None,
    }
}

fn reader(decoder: &mut AnyDecoder) -> Option<&mut EventReader> {
    match decoder {
        AnyDecoder::Http(d) => d.events_mut(),
        _ => None,
    }
}

/// Before a read's bytes are fed: the read's timestamp, given to the events reader. Only a run reading events
/// reads the clock here (the read loop reuses it for the first byte and the deadline).
pub(super) fn stamp(decoder: &mut AnyDecoder) -> Option<Instant> {
    let r = reader(decoder)?;
    let now = Instant::now();
    r.clock(now);
    Some(now)
}

/// A connection that failed inside a streamed answer (after its head, reading its events) cut the stream; a
/// timeout stays a timeout.
pub(super) fn cut(decoder: &mut AnyDecoder, f: Failure) -> Failure {
    match reader(decoder).is_some_and(|r| r.active()) {
        true => cut_stream(f),
        false => f,
    }
}

/// A failure inside a streamed answer's body: the connection closed or reset, or (HTTP/2) the stream reset or
/// ended by a GOAWAY, or (HTTP/3) the stream reset or the connection closed with an HTTP/3 code, is a cut stream;
/// the others (a timeout, a bound) stay what they are.
pub(super) fn cut_stream(f: Failure) -> Failure {
    let broken = matches!(f.kind, ErrorKind::Reset | ErrorKind::Closed | ErrorKind::Io | ErrorKind::Goaway)
        || f.kind.key().starts_with("rst_stream")
        || f.kind.key().starts_with("h3_");
    match broken {
        true => Failure::new(ErrorKind::StreamCut, format!("the stream was cut: {}", f.message)),
        false => f,
    }
}

/// An answer ended (`ok`: complete, whatever its status): its stream's figures into the thread's metrics.
pub(super) fn record(ctx: &ThreadCtx, decoder: Option<&mut AnyDecoder>, sent: Instant, end: Instant, ok: bool) {
    let Some(r) = decoder.and_then(reader) else { return };
    if !ok || !r.active() {
        return;
    }
    record_reader(ctx, r, sent, end);
}

/// An HTTP/2 stream's answer ended with its events read (its reader taken from the stream).
pub(super) fn record_reader(ctx: &ThreadCtx, r: &mut EventReader, sent: Instant, end: Instant) {
    if !r.active() {
        return;
    }
    let figures = r.figures();
    let tokens = r.spec().kind == EventKind::Tokens;
    let (gaps, goodput) = r.take_gaps_and_goodput();
    ctx.metrics.borrow_mut().record_events(sent, end, &figures, tokens, gaps, goodput);
}
