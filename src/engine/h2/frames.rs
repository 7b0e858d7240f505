//! The server's frames applied to an HTTP/2 connection's state: DATA counted against flow control, header blocks
//! decoded (HPACK, bounded), SETTINGS, PING, WINDOW_UPDATE, RST_STREAM and GOAWAY, each broken rule a connection or
//! stream error of its code (the connection's task in `h2/mod.rs` reads and writes them).

use super::*;

/// A frame larger than the client allows is a connection error (FRAME_SIZE_ERROR); false then.
pub(super) fn frame_fits(st: &mut State, head: &Head) -> bool {
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
pub(super) fn data_start(st: &mut State, head: &Head, have: usize, first: Option<u8>) {
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

pub(super) fn data_end(st: &mut State, id: u32, end_stream: bool) {
    if !end_stream {
        return;
    }
    if let Some(Err(e)) = st.streams.get(&id).and_then(|s| s.events.as_deref()).map(EventReader::body_ended) {
        return st.finish(id, Outcome::Failed(super::super::exchange::decode_failure(e)));
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
        Err(e) => Outcome::Failed(super::super::exchange::decode_failure(e)),
        Ok(true) if head.flags & frame::END_STREAM == 0 => answered(st, head.stream, status),
        Ok(_) => return,
    };
    frame::rst_stream(&mut st.out, head.stream, frame::CANCEL);
    st.finish(head.stream, outcome);
}

/// How a stream that ended with HTTP `status` is counted: gRPC's calls by their grpc-status (their messages
/// counted), else by `status`.
fn answered(st: &mut State, id: u32, status: u16) -> Outcome {
    // A stream already finished (its answer complete before its end) is not counted again when its end comes:
    // `finish` keeps its first outcome, and its messages were counted with it.
    if st.grpc
        && let Some(call) = st.streams.get(&id).filter(|s| s.done.is_none()).map(|s| &s.grpc)
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
pub(super) fn on_frame(metrics: &RefCell<StepMetrics>, st: &mut State, head: &Head, payload: &[u8]) {
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
                // A read of a stream under way: the window's progress (no stall while events come).
                metrics.borrow_mut().window.progress += 1;
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
            metrics.borrow_mut().wire.h2.saw_limit(st.limit as u64);
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
            metrics.borrow_mut().wire.h2.goaways += 1;
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
        m.wire.h2.header_bytes_in += block.len() as u64;
        m.wire.h2.header_bytes_in_decoded += decoded;
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
            return st.finish(id, Outcome::Failed(super::super::exchange::decode_failure(e)));
        }
        let status = s.status;
        let outcome = answered(st, id, status);
        st.finish(id, outcome);
    }
}
