//! An HTTP/2 connection's state as its task keeps it: the streams under way (a slab found through a map of ids),
//! the flow-control windows, the header block being read, the queued writes and the answers handed back to the
//! stream slots (the frames that change it are `frames.rs`'s).

use super::*;

pub(super) struct State {
    pub(super) phase: Phase,
    /// Why the connection could not be opened (the failure of the requests waiting for it).
    pub(super) failure: Option<Failure>,
    /// Whether any of its streams was answered, and whether it ended failing streams under way: one that failed
    /// its streams before answering any is reopened after a pause, as one that could not open is.
    pub(super) answered: bool,
    pub(super) broke: bool,
    /// Frames to write, and how much of them is written.
    pub(super) out: Vec<u8>,
    pub(super) written: usize,
    /// The connection task, woken when frames are queued.
    pub(super) task: Option<Waker>,
    /// Slots waiting for the connection to open or for a free stream.
    pub(super) waiting: Vec<Waker>,
    pub(super) streams: StreamTable,
    pub(super) in_flight: usize,
    /// Streams at once: `--streams`, or the server's lower limit.
    pub(super) limit: usize,
    pub(super) asked: usize,
    pub(super) next_id: u32,
    /// The connection's window for what the client sends (request bodies).
    pub(super) send_window: i64,
    /// Streams whose body waits for room in a window (WINDOW_UPDATE, a larger SETTINGS_INITIAL_WINDOW_SIZE).
    pub(super) blocked: VecDeque<u32>,
    /// The window of a new stream for what the client sends (the server's SETTINGS_INITIAL_WINDOW_SIZE).
    pub(super) stream_window: i64,
    /// Bytes of DATA read since the last connection WINDOW_UPDATE.
    pub(super) unacked: u32,
    /// A header block whose CONTINUATION frames are still to come: its stream, END_STREAM, the bytes so far.
    pub(super) block: Option<(u32, bool)>,
    pub(super) block_bytes: Vec<u8>,
    /// An incomplete frame at the end of a read (at most a header and 16 KiB).
    pub(super) partial: Vec<u8>,
    /// DATA payload bytes still to come for (stream, END_STREAM) before the frame ends: skipped, not kept.
    pub(super) skip: usize,
    pub(super) skip_frame: (u32, bool),
    pub(super) decoder: hpack::Decoder,
    /// The bound of a header block (`--max-line`).
    pub(super) max_block: usize,
    /// A GOAWAY's last stream and code.
    pub(super) goaway: Option<(u32, u32)>,
    /// Answers' headers and bodies are kept (a script's `response()` wants them): DATA frames are then read
    /// whole instead of skipped.
    pub(super) keep: bool,
    /// A padded DATA frame being skipped whose padding length (its first payload byte) is still to be read: the
    /// frame's length, to check it against.
    pub(super) pad_unread: Option<usize>,
    /// Bytes of body kept in the streams under way, at most [`KEPT_PER_CONNECTION`] together.
    pub(super) kept_bytes: usize,
    /// gRPC calls: DATA read whole into each stream's message reader, the answer judged by its grpc-status.
    pub(super) grpc: bool,
    /// gRPC: messages of the calls that ended since the last read, added to the step's count after it.
    pub(super) grpc_messages: u64,
    /// gRPC: what each call's answer is read with (`--max-message`).
    pub(super) grpc_settings: grpc::Settings,
    /// SETTINGS and PING ACKs queued since the queue was last written whole: at most [`MOST_UNSENT_ACKS`].
    pub(super) unsent_acks: usize,
    /// `--max-header-list`: an answer's decoded header list, at most.
    pub(super) max_header_list: usize,
    /// How long the task waited before connecting (a connection reopened after one that ended in an error).
    pub(super) pause: Duration,
    /// A GOAWAY came: the connection finishes its streams beside the one opened in its place, counted apart.
    pub(super) handing_over: bool,
    /// `--max-requests-per-connection`: streams this connection carries before hakaru retires it, and how many
    /// were claimed so far.
    pub(super) retire_after: Option<u64>,
    pub(super) claimed: u64,
    /// hakaru retired the connection: it takes no new stream, finishes those under way beside the one opened in
    /// its place (handing over, as after a GOAWAY), then says GOAWAY(NO_ERROR) itself and closes.
    pub(super) retired: bool,
    pub(super) goaway_sent: bool,
    /// `--events`: each answer's body read as events (DATA then read whole), each read's bytes stamped with one
    /// clock read, `read_at`.
    pub(super) events: Option<Arc<EventsSpec>>,
    pub(super) read_at: Option<Instant>,
}

/// A stream under way.
#[derive(Default)]
pub(super) struct Stream {
    pub(super) status: u16,
    /// Its answer's headers and body, kept for a script's `response()` only.
    pub(super) kept: Option<Box<Kept>>,
    pub(super) done: Option<Outcome>,
    pub(super) waker: Option<Waker>,
    /// The server's window for this stream's body.
    pub(super) window: i64,
    /// The body still to send, when it did not fit the windows.
    pub(super) body: Option<Body>,
    /// A gRPC call's messages and status as they come.
    pub(super) grpc: grpc::Call,
    /// When its answer's HEADERS came, if its end came in a later frame (else its first byte is its end).
    pub(super) first_byte: Option<Instant>,
    /// `--events`: its answer's body read as events.
    pub(super) events: Option<Box<EventReader>>,
}

/// The streams under way on a connection, by id. Their states sit in a slab whose places are reused (a connection
/// has at most its stream limit under way), found through a map of ids to places. A map holding the states
/// themselves (112-byte entries, one stream inserted and removed a request) grew to twice the limit's worth: 29 KB
/// a connection at `--streams 100`, 2.9 MB at `-c 100`.
#[derive(Default)]
pub(super) struct StreamTable {
    pub(super) places: HashMap<u32, u32>,
    /// A stream's id and state; id 0 (never a stream's) marks a free place.
    pub(super) slab: Vec<(u32, Stream)>,
    pub(super) free: Vec<u32>,
}

impl StreamTable {
    pub(super) fn get(&self, id: &u32) -> Option<&Stream> {
        self.places.get(id).map(|&i| &self.slab[i as usize].1)
    }

    pub(super) fn get_mut(&mut self, id: &u32) -> Option<&mut Stream> {
        self.places.get(id).map(|&i| &mut self.slab[i as usize].1)
    }

    pub(super) fn contains_key(&self, id: &u32) -> bool {
        self.places.contains_key(id)
    }

    pub(super) fn insert(&mut self, id: u32, stream: Stream) {
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

    pub(super) fn remove(&mut self, id: &u32) -> Option<Stream> {
        let i = self.places.remove(id)?;
        self.free.push(i);
        Some(std::mem::take(&mut self.slab[i as usize]).1)
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &u32> {
        self.places.keys()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&u32, &Stream)> {
        self.slab.iter().filter(|(id, _)| *id != 0).map(|(id, s)| (id, s))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Stream> {
        self.iter().map(|(_, s)| s)
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Stream> {
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
pub(super) struct Body {
    pub(super) frames: bytes::Bytes,
    pub(super) at: usize,
    pub(super) sent: usize,
}

impl State {
    /// A connection's state before it opens: the preface and the client's SETTINGS queued.
    pub(super) fn new(streams: usize, max_line: usize, max_header_list: usize) -> State {
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
    pub(super) fn push_body(&mut self, id: u32) -> bool {
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
    pub(super) fn open_stream(&mut self, frames: &[u8], shared: Option<&bytes::Bytes>) -> (u32, usize) {
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
    pub(super) fn resume_blocked(&mut self) {
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

    pub(super) fn has_room(&self) -> bool {
        self.phase == Phase::Open && self.in_flight < self.limit
    }

    pub(super) fn usable(&self) -> bool {
        matches!(self.phase, Phase::Opening | Phase::Open)
    }

    pub(super) fn wake_task(&mut self) {
        if let Some(w) = &self.task {
            w.wake_by_ref();
        }
    }

    pub(super) fn wake_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    /// Ends a stream with `outcome`, waking its slot.
    pub(super) fn finish(&mut self, id: u32, outcome: Outcome) {
        if let Some(s) = self.streams.get_mut(&id)
            && s.done.is_none()
        {
            let outcome = match outcome {
                Outcome::Failed(f) if s.events.as_ref().is_some_and(|r| r.active()) => {
                    Outcome::Failed(super::super::events::cut_stream(f))
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
    pub(super) fn fail_all(&mut self, failure: &Failure) {
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
    pub(super) fn connection_error(&mut self, code: u32, why: String) {
        if self.phase == Phase::Dead {
            return;
        }
        let last = self.streams.keys().max().copied().unwrap_or(0);
        frame::goaway(&mut self.out, last, code);
        self.phase = Phase::Dead;
        let failure = Failure::new(limits::kind_of(code), format!("HTTP/2 {}: {why}", frame::error_name(code)));
        self.fail_all(&failure);
        // Kept for the slots waiting for it (a connection that failed before its SETTINGS was read fails their
        // requests, instead of sending them to open another at once), and to pause before the next.
        self.failure.get_or_insert(failure);
        self.wake_waiting();
    }
}

pub(super) fn unprocessed(id: u32, last: u32) -> Failure {
    Failure::new(
        ErrorKind::Goaway,
        format!("the server's GOAWAY left stream {id} unprocessed (last stream {last}), and so did its retry"),
    )
}
