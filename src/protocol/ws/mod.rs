//! WebSocket (RFC 6455) as a client speaks it: the upgrade request and the check of its answer (`handshake.rs`),
//! frames written masked (`encode`), and an incremental decoder of the server's frames fed whatever each read
//! returned (`FrameDecoder`), bounded so that no frame length or fragmented message makes it wait or keep forever.

pub mod handshake;
pub mod matching;

/// A frame's opcode (RFC 6455 5.2).
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// The most frames one message may come in (zero-length fragments make no bytes, so bytes alone do not bound it).
pub const MAX_FRAGMENTS: u32 = 1 << 16;

/// The largest payload of a control frame (ping, pong, close).
const MAX_CONTROL: u64 = 125;

/// What one request of a WebSocket run is (`--ws-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A message sent, the next one received its answer.
    Exchange,
    /// Each message the server pushes, timed from the one before (the connection's first from its subscription).
    Listen,
    /// A connection opened and upgraded (and, with a message, one exchange on it), then closed.
    Connect,
}

impl Mode {
    /// As `--ws-mode` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exchange => "exchange",
            Mode::Listen => "listen",
            Mode::Connect => "connect",
        }
    }
}

/// What a WebSocket run's connections need, built once before the load.
#[derive(Clone)]
pub struct Settings {
    /// The upgrade request up to its key ([`handshake::request_head`]): it may hold `-H`'s secrets.
    pub head: Vec<u8>,
    /// `-H` values hold templates: each connection's upgrade takes the headers as the message that opens it
    /// filled them, after `bare` (the head without `-H`'s headers).
    pub templated_headers: bool,
    pub bare: Vec<u8>,
    /// Messages go as binary frames (`--binary`), else as text.
    pub binary: bool,
    /// `--max-message`: the longest message taken from the server.
    pub max_message: u64,
    pub mode: Mode,
    /// `--expect`: the answer every message must get, byte for byte; None takes any.
    pub expect: Option<Vec<u8>>,
    /// `--in-flight`: messages awaiting their answers on one connection at once (1: the next message answers).
    pub in_flight: usize,
    /// `--match-field`: the JSON pointer of the id an answer is paired with its message by.
    pub match_field: Option<String>,
    /// `--stamp-field` (listen mode): the JSON pointer of a pushed message's send time.
    pub stamp_field: Option<String>,
}

impl std::fmt::Debug for Settings {
    /// Without the upgrade request, whose headers may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("head", &format_args!("({} bytes)", self.head.len()))
            .field("binary", &self.binary)
            .field("max_message", &self.max_message)
            .field("mode", &self.mode)
            .field("expect", &self.expect.as_ref().map(Vec::len))
            .field("in_flight", &self.in_flight)
            .field("match_field", &self.match_field)
            .field("stamp_field", &self.stamp_field)
            .finish()
    }
}

impl Settings {
    /// The opcode of the messages sent.
    pub fn opcode(&self) -> u8 {
        if self.binary { BINARY } else { TEXT }
    }

    /// The upgrade request's head with `headers` (filled from templates) in place of `-H`'s as given.
    pub fn head_with(&self, headers: &[(String, String)]) -> Vec<u8> {
        let mut head = self.bare.clone();
        handshake::append_headers(headers, &mut head);
        head
    }

    /// Several messages share a connection, their answers handed out by its reader (`--in-flight`,
    /// `--match-field`), rather than each client reading its own answer.
    pub fn shared(&self) -> bool {
        self.in_flight > 1 || self.match_field.is_some()
    }

    /// How many bytes of each answer the decoder keeps: `--expect`'s length and one more, and with
    /// `--match-field` the window its id is looked for in.
    pub fn keep(&self) -> usize {
        let expect = self.expect.as_ref().map_or(0, |e| e.len() + 1);
        if self.match_field.is_some() || self.stamp_field.is_some() { expect.max(matching::ID_WINDOW) } else { expect }
    }
}

/// The length of a client frame carrying `payload` bytes (its head, mask and payload).
pub fn frame_len(payload: usize) -> usize {
    let head = if payload < 126 {
        2
    } else if payload <= u16::MAX as usize {
        4
    } else {
        10
    };
    head + 4 + payload
}

/// Appends a client frame (FIN set) of `opcode` carrying `payload` masked with `mask` to `out`.
pub fn encode(opcode: u8, payload: &[u8], mask: [u8; 4], out: &mut Vec<u8>) {
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= u16::MAX as usize {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XORs `data` with the repeating 4-byte `mask` (masking and unmasking are the same).
pub fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let mut chunks = data.chunks_exact_mut(4);
    for c in &mut chunks {
        let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) ^ word;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i];
    }
}

/// A close frame's payload: the status code and a reason (RFC 6455 5.5.1).
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(&reason.as_bytes()[..reason.len().min(MAX_CONTROL as usize - 2)]);
    p
}

/// What a complete frame (or message) told the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A data message ended: its opcode (text or binary) and its payload's length, fragments added up.
    Message { binary: bool, len: u64 },
    /// A ping: its payload is [`FrameDecoder::control`], to be sent back in a pong.
    Ping,
    /// A pong (unasked for or not): nothing to do.
    Pong,
    /// The server closes: its status code (None when the frame carried none: 1005); the reason is in
    /// [`FrameDecoder::control`] after the code's two bytes.
    Close { code: Option<u16> },
}

/// Why the server's bytes cannot be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A frame RFC 6455 forbids a server to send (a masked one, reserved bits or opcodes, a long or fragmented
    /// control frame, a continuation of nothing).
    Protocol(String),
    /// A frame's length or a message's, fragments added up, past the bound (`--max-message`), or a message in more
    /// than [`MAX_FRAGMENTS`] frames: refused at the header, before any of its payload is waited for.
    TooLarge(String),
}

/// The frame being read.
#[derive(Clone, Copy, Debug)]
struct Frame {
    opcode: u8,
    fin: bool,
    /// Payload bytes still to come.
    left: u64,
}

/// A data message whose first frame came without FIN.
#[derive(Clone, Copy, Debug)]
struct Fragmented {
    binary: bool,
    len: u64,
    frames: u32,
}

/// Decodes the server's frames one read at a time: a header may be cut anywhere, payload bytes are counted, not
/// kept (only a control frame's, at most 125 bytes, are kept: a ping's to answer, a close's code and reason).
#[derive(Debug)]
pub struct FrameDecoder {
    max_message: u64,
    head: [u8; 10],
    head_len: usize,
    frame: Option<Frame>,
    message: Option<Fragmented>,
    control: Vec<u8>,
    /// How many bytes of each data message to keep (an expected answer's length and one more), and those kept.
    keep: usize,
    kept: Vec<u8>,
}

impl FrameDecoder {
    /// A decoder that refuses a message longer than `max_message` bytes.
    pub fn new(max_message: u64) -> FrameDecoder {
        FrameDecoder {
            max_message,
            head: [0; 10],
            head_len: 0,
            frame: None,
            message: None,
            control: Vec::new(),
            keep: 0,
            kept: Vec::new(),
        }
    }

    /// Keeps the first `n` bytes of each data message ([`kept`](Self::kept)); others are counted only.
    pub fn keeping(mut self, n: usize) -> FrameDecoder {
        self.keep = n;
        self
    }

    /// The first bytes of the last data message, as many as [`keeping`](Self::keeping) asked for.
    pub fn kept(&self) -> &[u8] {
        &self.kept
    }

    /// The last control frame's payload (a ping's, or a close's code and reason).
    pub fn control(&self) -> &[u8] {
        &self.control
    }

    /// A close frame's reason, as text a sample may quote (at most 123 bytes).
    pub fn close_reason(&self) -> String {
        String::from_utf8_lossy(self.control.get(2..).unwrap_or_default()).into_owned()
    }

    /// No frame is under way: a close of the connection here loses nothing begun.
    pub fn between_frames(&self) -> bool {
        self.head_len == 0 && self.frame.is_none() && self.message.is_none()
    }

    /// Takes bytes from `data` until an event completes or `data` ends: how many it took, and the event (None when
    /// it took them all without one). After a fault the decoder must not be fed again.
    pub fn feed(&mut self, data: &[u8]) -> (usize, Result<Option<Event>, Fault>) {
        let mut at = 0;
        loop {
            let Some(mut frame) = self.frame else {
                match self.read_head(&data[at..]) {
                    (n, Ok(true)) => at += n,
                    (n, Ok(false)) => return (at + n, Ok(None)),
                    (n, Err(f)) => return (at + n, Err(f)),
                }
                let frame = self.frame.expect("a complete head sets the frame");
                if frame.left > 0 {
                    continue;
                }
                // An empty payload ends the frame with its head.
                if let Some(event) = self.frame_ended(frame) {
                    return (at, Ok(Some(event)));
                }
                continue;
            };
            let take = frame.left.min((data.len() - at) as u64) as usize;
            if frame.opcode >= CLOSE {
                self.control.extend_from_slice(&data[at..at + take]);
            } else if self.kept.len() < self.keep {
                let more = take.min(self.keep - self.kept.len());
                self.kept.extend_from_slice(&data[at..at + more]);
            }
            at += take;
            frame.left -= take as u64;
            self.frame = Some(frame);
            if frame.left > 0 {
                return (at, Ok(None));
            }
            if let Some(event) = self.frame_ended(frame) {
                return (at, Ok(Some(event)));
            }
            if at == data.len() {
                return (at, Ok(None));
            }
        }
    }

    /// The frame's last byte was read: its event, if it completes one.
    fn frame_ended(&mut self, frame: Frame) -> Option<Event> {
        self.frame = None;
        match frame.opcode {
            PING => Some(Event::Ping),
            PONG => Some(Event::Pong),
            CLOSE => {
                let code = (self.control.len() >= 2).then(|| u16::from_be_bytes([self.control[0], self.control[1]]));
                Some(Event::Close { code })
            }
            _ if !frame.fin => None,
            _ => self.message.take().map(|m| Event::Message { binary: m.binary, len: m.len }),
        }
    }

    /// Reads a frame's head (2 to 10 bytes: a server's frames carry no mask): Ok(true) once it is complete and
    /// checked, Ok(false) when `data` ended first.
    fn read_head(&mut self, data: &[u8]) -> (usize, Result<bool, Fault>) {
        let mut at = 0;
        while self.head_len < 2 {
            let Some(&b) = data.get(at) else { return (at, Ok(false)) };
            self.head[self.head_len] = b;
            self.head_len += 1;
            at += 1;
        }
        let need = match self.head[1] & 0x7f {
            126 => 4,
            127 => 10,
            _ => 2,
        };
        while self.head_len < need {
            let Some(&b) = data.get(at) else { return (at, Ok(false)) };
            self.head[self.head_len] = b;
            self.head_len += 1;
            at += 1;
        }
        self.head_len = 0;
        (at, self.take_head(need).map(|()| true))
    }

    /// Checks a complete head and starts its frame.
    fn take_head(&mut self, len_bytes: usize) -> Result<(), Fault> {
        let [b0, b1] = [self.head[0], self.head[1]];
        let fin = b0 & 0x80 != 0;
        let opcode = b0 & 0x0f;
        if b0 & 0x70 != 0 {
            return Err(Fault::Protocol(format!("a frame with reserved bits set (0x{b0:02x}) no extension asked for")));
        }
        if b1 & 0x80 != 0 {
            return Err(Fault::Protocol("a masked frame from the server (RFC 6455 5.1: servers never mask)".into()));
        }
        let len = match len_bytes {
            4 => u16::from_be_bytes([self.head[2], self.head[3]]) as u64,
            10 => u64::from_be_bytes(self.head[2..10].try_into().expect("8 bytes")),
            _ => (b1 & 0x7f) as u64,
        };
        match opcode {
            CLOSE | PING | PONG => {
                if !fin || len > MAX_CONTROL {
                    return Err(Fault::Protocol(format!(
                        "a control frame (opcode {opcode}) fragmented or longer than 125 bytes ({len})"
                    )));
                }
                self.control.clear();
            }
            TEXT | BINARY => {
                if self.message.is_some() {
                    return Err(Fault::Protocol("a new message began before the fragmented one ended".into()));
                }
                self.check_size(len)?;
                self.message = Some(Fragmented { binary: opcode == BINARY, len, frames: 1 });
                self.kept.clear();
            }
            CONTINUATION => {
                let Some(mut m) = self.message else {
                    return Err(Fault::Protocol("a continuation frame with no message begun".into()));
                };
                m.frames += 1;
                if m.frames > MAX_FRAGMENTS {
                    return Err(Fault::TooLarge(format!("a message in more than {MAX_FRAGMENTS} fragments")));
                }
                self.check_size(m.len.saturating_add(len))?;
                m.len += len;
                self.message = Some(m);
            }
            other => return Err(Fault::Protocol(format!("a frame of reserved opcode {other}"))),
        }
        self.frame = Some(Frame { opcode, fin, left: len });
        Ok(())
    }

    fn check_size(&self, len: u64) -> Result<(), Fault> {
        if len > self.max_message {
            return Err(Fault::TooLarge(format!(
                "a message of {len} bytes, past --max-message ({} bytes)",
                self.max_message
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's frame (unmasked).
    fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![b0];
        match payload.len() {
            n if n < 126 => out.push(n as u8),
            n if n <= 65535 => {
                out.push(126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        out
    }

    /// Every event in `wire`, fed in pieces of `cut` bytes to a decoder bounded at 1 MiB.
    fn events(wire: &[u8], cut: usize) -> Result<Vec<Event>, Fault> {
        events_within(wire, cut, 1 << 20)
    }

    fn events_within(wire: &[u8], cut: usize, max: u64) -> Result<Vec<Event>, Fault> {
        let mut d = FrameDecoder::new(max);
        let mut out = Vec::new();
        for piece in wire.chunks(cut) {
            let mut at = 0;
            while at < piece.len() {
                let (n, r) = d.feed(&piece[at..]);
                at += n;
                if let Some(e) = r? {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn frames_decode_alike_however_the_reads_cut_them() {
        let mut wire = frame(0x81, b"hello");
        wire.extend(frame(0x89, b"ping!"));
        wire.extend(frame(0x02, &[7; 300]));
        wire.extend(frame(0x00, &[]));
        wire.extend(frame(0x80, &[1; 70_000]));
        wire.extend(frame(0x8A, b""));
        wire.extend(frame(0x88, &close_payload(1011, "oops")));
        let want = vec![
            Event::Message { binary: false, len: 5 },
            Event::Ping,
            Event::Message { binary: true, len: 70_300 },
            Event::Pong,
            Event::Close { code: Some(1011) },
        ];
        for cut in [1, 2, 3, 7, 125, 4096, wire.len()] {
            assert_eq!(events(&wire, cut).unwrap(), want, "cut {cut}");
        }
    }

    #[test]
    fn a_message_keeps_its_first_bytes_across_fragments_when_asked() {
        let mut wire = frame(0x01, b"he");
        wire.extend(frame(0x89, b"p"));
        wire.extend(frame(0x80, b"llo world"));
        let mut d = FrameDecoder::new(100).keeping(6);
        let mut at = 0;
        let mut events = Vec::new();
        while at < wire.len() {
            let (n, r) = d.feed(&wire[at..]);
            at += n;
            events.extend(r.unwrap());
        }
        assert_eq!(events, [Event::Ping, Event::Message { binary: false, len: 11 }]);
        assert_eq!(d.kept(), b"hello ");
        assert_eq!(d.feed(&frame(0x82, b"x")).1, Ok(Some(Event::Message { binary: true, len: 1 })));
        assert_eq!(d.kept(), b"x");
    }

    #[test]
    fn a_ping_keeps_its_payload_and_a_close_its_reason() {
        let mut d = FrameDecoder::new(100);
        let wire = frame(0x89, b"abc");
        assert_eq!(d.feed(&wire), (wire.len(), Ok(Some(Event::Ping))));
        assert_eq!(d.control(), b"abc");
        let wire = frame(0x88, &close_payload(1000, "bye"));
        assert_eq!(d.feed(&wire), (wire.len(), Ok(Some(Event::Close { code: Some(1000) }))));
        assert_eq!(d.close_reason(), "bye");
        let wire = frame(0x88, b"");
        assert_eq!(d.feed(&wire).1, Ok(Some(Event::Close { code: None })));
    }

    #[test]
    fn a_frame_of_two_to_the_63_bytes_is_refused_at_its_head() {
        let mut d = FrameDecoder::new(1 << 20);
        let mut wire = vec![0x82, 127];
        wire.extend_from_slice(&(1u64 << 63).to_be_bytes());
        let (n, r) = d.feed(&wire);
        assert_eq!(n, wire.len());
        assert!(matches!(r, Err(Fault::TooLarge(_))), "{r:?}");
    }

    #[test]
    fn a_message_fragmented_forever_is_refused_at_the_bound() {
        // Bytes: fragments of 1000 bytes past a bound of 10,000.
        let mut wire = frame(0x01, &[b'a'; 1000]);
        for _ in 0..20 {
            wire.extend(frame(0x00, &[b'a'; 1000]));
        }
        assert!(matches!(events_within(&wire, 4096, 10_000), Err(Fault::TooLarge(_))));
        // Empty fragments: the count of frames bounds them.
        let mut d = FrameDecoder::new(1 << 20);
        assert_eq!(d.feed(&frame(0x01, b"")).1, Ok(None));
        let empty = frame(0x00, b"");
        let mut refused = None;
        for i in 0..=MAX_FRAGMENTS {
            if let Err(f) = d.feed(&empty).1 {
                refused = Some((i, f));
                break;
            }
        }
        let (i, f) = refused.expect("refused");
        assert_eq!(i, MAX_FRAGMENTS - 1);
        assert!(matches!(f, Fault::TooLarge(_)));
    }

    #[test]
    fn frames_a_server_may_not_send_are_protocol_faults() {
        let bad = [
            vec![0x81, 0x81, 1, 2, 3, 4, b'x'], // masked
            vec![0xC1, 0],                      // RSV1 without an extension
            vec![0x83, 0],                      // reserved opcode
            vec![0x09, 0],                      // fragmented ping
            frame(0x89, &[0; 126]),             // long ping
            vec![0x80, 0],                      // continuation of nothing
        ];
        for wire in bad {
            assert!(matches!(events(&wire, 1), Err(Fault::Protocol(_))), "{wire:?}");
        }
        let mut two = frame(0x01, b"a");
        two.extend(frame(0x81, b"b"));
        assert!(matches!(events(&two, 3), Err(Fault::Protocol(_))));
    }

    #[test]
    fn a_client_frame_is_masked_and_unmasks_to_its_payload() {
        for len in [0, 5, 125, 126, 65535, 65536] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            encode(TEXT, &payload, [1, 2, 3, 4], &mut out);
            assert_eq!(out[0], 0x81);
            assert_ne!(out[1] & 0x80, 0, "masked");
            let (len_bytes, n) = match out[1] & 0x7f {
                126 => (2, u16::from_be_bytes([out[2], out[3]]) as usize),
                127 => (8, u64::from_be_bytes(out[2..10].try_into().unwrap()) as usize),
                n => (0, n as usize),
            };
            assert_eq!(n, len);
            let mask: [u8; 4] = out[2 + len_bytes..6 + len_bytes].try_into().unwrap();
            let mut body = out[6 + len_bytes..].to_vec();
            apply_mask(&mut body, mask);
            assert_eq!(body, payload);
        }
    }
}
