//! gRPC over HTTP/2, the part that is gRPC's own: length-prefixed messages (framed once before the load, read
//! back at any cut of the DATA bytes) and the call's status read from the trailers. HTTP/2 itself is the engine's.
//!
//! A call's answer is judged here ([`Call::verdict`]) and counted by the engine: grpc-status 0 is a success,
//! every other status a failure named by its code (`UNAVAILABLE`), and apart from those what is no gRPC answer
//! at all (an HTTP status other than 200, no grpc-status, a malformed length prefix).

pub mod gzip;
pub mod reflection;

/// The largest message taken unless `--max-message` says otherwise, as gRPC's own default (4 MiB): a length
/// prefix past it fails the call at once instead of waiting for gigabytes.
pub const MAX_MESSAGE: u32 = 4 << 20;

/// What a run's calls need beside their prepared bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `--max-message`: the longest message of an answer taken.
    pub max_message: u32,
    /// `--stream-interval`: the time between a client-streaming call's messages (None: all at once).
    pub interval: Option<std::time::Duration>,
    /// `--grpc-compression gzip`: messages sent compressed, compressed answers taken (and inflated).
    pub gzip: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { max_message: MAX_MESSAGE, interval: None, gzip: false }
    }
}

/// A streaming call's prepared HTTP/2 frames (its HEADERS, then its framed messages as DATA) cut into the parts
/// sent apart at `--stream-interval`: the HEADERS with the first message, then each further message, END_STREAM
/// with the last. Built per call (a `--data` row's frames are the call's own); only spaced calls take the cost.
pub fn spaced_parts(frames: &[u8]) -> Vec<Vec<u8>> {
    use crate::protocol::h2::request::{body_of, body_start, write_data};
    let start = body_start(frames);
    let body = body_of(&frames[start..]);
    let mut parts = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let len = body.get(at + 1..at + PREFIX).map_or(0, |l| u32::from_be_bytes([l[0], l[1], l[2], l[3]]));
        let end = (at + PREFIX).saturating_add(len as usize).min(body.len());
        let mut part = if parts.is_empty() { frames[..start].to_vec() } else { Vec::new() };
        write_data(&mut part, &body[at..end], end == body.len());
        parts.push(part);
        at = end;
    }
    if parts.is_empty() {
        parts.push(frames.to_vec());
    }
    parts
}

/// The 5-byte prefix of a message: the compressed flag, then the length (big-endian).
const PREFIX: usize = 5;

/// One message as sent: uncompressed flag, length, bytes.
pub fn frame_message(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The names of the status codes 0-16, as gRPC spells them (grpc/doc/statuscodes.md).
pub const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A status code's name, or `status N` for a code gRPC does not define.
pub fn status_name(code: u32) -> String {
    STATUS_NAMES.get(code as usize).map_or_else(|| format!("status {code}"), |n| (*n).to_string())
}

/// `grpc-timeout` for a deadline: at most 8 digits and a unit (gRPC's HTTP/2 protocol document), milliseconds
/// while they fit, else seconds (rounded up, so the server's deadline is never the shorter).
pub fn timeout_header(timeout: std::time::Duration) -> String {
    let ms = timeout.as_millis().max(1);
    if ms < 100_000_000 { format!("{ms}m") } else { format!("{}S", timeout.as_secs().clamp(1, 99_999_999)) }
}

/// Why a call's answer is not a gRPC success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// grpc-status other than 0 (with grpc-message, when the server gave one).
    Status(u32, Option<String>),
    /// The answer ended without a grpc-status (or with one that is no number).
    NoStatus,
    /// An HTTP status other than 200.
    HttpStatus(u16),
    /// A message the client cannot take: a compressed one it did not ask for (or one that does not inflate), a
    /// flag other than 0 or 1, or cut short by the end.
    BadMessage(String),
    /// A message of `len` bytes, past the bound (`--max-message`); `inflated`: a compressed one, inflated as far
    /// as `len` bytes when it went past.
    TooLarge { len: u64, max: u32, inflated: bool },
}

impl Fault {
    /// The line kept as the kind's sample.
    pub fn describe(&self) -> String {
        match self {
            Fault::Status(code, Some(m)) => format!("gRPC status {} ({code}): {m}", status_name(*code)),
            Fault::Status(code, None) => format!("gRPC status {} ({code})", status_name(*code)),
            Fault::NoStatus => "the gRPC answer ended without a grpc-status".into(),
            Fault::HttpStatus(s) => format!("a gRPC answer with HTTP status {s} (not 200)"),
            Fault::BadMessage(why) => format!("a malformed gRPC message: {why}"),
            Fault::TooLarge { len, max, inflated: false } => {
                format!("a gRPC message of {len} bytes, past --max-message ({max} bytes)")
            }
            Fault::TooLarge { max, inflated: true, .. } => {
                format!("a compressed gRPC message inflating past --max-message ({max} bytes)")
            }
        }
    }
}

/// The messages of one answer, read from its DATA bytes at whatever cuts they come in.
#[derive(Debug)]
pub struct MessageReader {
    prefix: [u8; PREFIX],
    /// Bytes of the current message's prefix read so far (0 between messages).
    have: u8,
    /// Bytes of the current message's body still to come.
    left: u32,
    /// Whole messages read.
    pub messages: u32,
    /// The longest message taken (`--max-message`), inflated if compressed.
    max: u32,
    /// The call asked for gzip (`--grpc-compression gzip`), and the answer says it is (`grpc-encoding: gzip`).
    accept_gzip: bool,
    encoded_gzip: bool,
    /// The current message inflating as its compressed bytes come (None: an uncompressed one, not kept).
    compressed: Option<Box<gzip::Inflating>>,
}

impl Default for MessageReader {
    fn default() -> MessageReader {
        MessageReader::new(MAX_MESSAGE)
    }
}

impl MessageReader {
    /// A reader taking messages of at most `max` bytes.
    pub fn new(max: u32) -> MessageReader {
        MessageReader {
            prefix: [0; PREFIX],
            have: 0,
            left: 0,
            messages: 0,
            max,
            accept_gzip: false,
            encoded_gzip: false,
            compressed: None,
        }
    }

    /// A message's last byte came: compressed, it must inflate within the bound.
    fn message_end(&mut self) -> Result<(), Fault> {
        if let Some(inflating) = self.compressed.take() {
            inflating.end()?;
        }
        self.messages += 1;
        Ok(())
    }

    /// Reads `data`, the next bytes of the answer's DATA. An error ends the call: the rest is not read.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), Fault> {
        while !data.is_empty() {
            if self.left > 0 {
                let n = (self.left as usize).min(data.len());
                if let Some(inflating) = self.compressed.as_mut() {
                    inflating.feed(&data[..n])?;
                }
                self.left -= n as u32;
                data = &data[n..];
                if self.left == 0 {
                    self.message_end()?;
                }
                continue;
            }
            let have = usize::from(self.have);
            let n = (PREFIX - have).min(data.len());
            self.prefix[have..have + n].copy_from_slice(&data[..n]);
            self.have += n as u8;
            data = &data[n..];
            if usize::from(self.have) < PREFIX {
                break;
            }
            self.have = 0;
            let len = u32::from_be_bytes([self.prefix[1], self.prefix[2], self.prefix[3], self.prefix[4]]);
            let compressed = match self.prefix[0] {
                0 => false,
                1 if self.accept_gzip && self.encoded_gzip => true,
                1 if self.accept_gzip => {
                    return Err(Fault::BadMessage(
                        "a compressed message in an answer without grpc-encoding gzip".into(),
                    ));
                }
                1 => return Err(Fault::BadMessage("a compressed message, though the call asked for none".into())),
                flag => return Err(Fault::BadMessage(format!("a length prefix with flag {flag} (0 or 1 expected)"))),
            };
            if len > self.max {
                return Err(Fault::TooLarge { len: u64::from(len), max: self.max, inflated: false });
            }
            if len == 0 {
                // An empty message, compressed or not (gRPC's own readers take it so).
                self.messages += 1;
            } else if compressed {
                self.compressed = Some(Box::new(gzip::Inflating::new(self.max)));
            }
            self.left = len;
        }
        Ok(())
    }

    /// The answer's bytes ended here: an error when a message is cut short.
    pub fn end(&self) -> Result<(), Fault> {
        if self.have > 0 || self.left > 0 {
            let why = if self.have > 0 {
                format!("the answer ended inside a length prefix ({} of 5 bytes)", self.have)
            } else {
                format!("the answer ended {} bytes short of its message", self.left)
            };
            return Err(Fault::BadMessage(why));
        }
        Ok(())
    }
}

/// The most of a grpc-message kept for the sample.
const MOST_MESSAGE: usize = 200;

/// One call's answer as it comes: its messages, and the status its trailers (or a trailers-only answer's
/// headers) give.
#[derive(Debug, Default)]
pub struct Call {
    pub reader: MessageReader,
    /// grpc-status as read: `None` before it comes, `Some(None)` when it is no number.
    status: Option<Option<u32>>,
    message: Option<String>,
}

impl Call {
    /// A call of a run with `settings`, before its answer.
    pub fn new(settings: &Settings) -> Call {
        let mut reader = MessageReader::new(settings.max_message);
        reader.accept_gzip = settings.gzip;
        Call { reader, ..Call::default() }
    }

    /// A header or trailer field of the answer.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        match name {
            b"grpc-encoding" => self.reader.encoded_gzip = value.eq_ignore_ascii_case(b"gzip"),
            b"grpc-status" => {
                self.status = Some(std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()));
            }
            // Only read for a failed call's sample (a status other than 0), once.
            b"grpc-message" if self.message.is_none() && !value.is_empty() => {
                // Percent-encoded (gRPC's HTTP/2 protocol document).
                let text = crate::base::target::percent_decode(value);
                self.message = Some(crate::base::secrets::scrubbed_start(&text, MOST_MESSAGE));
            }
            _ => {}
        }
    }

    /// The call ended, its HTTP status `http`: a success, or why not.
    pub fn verdict(&self, http: u16) -> Result<(), Fault> {
        if http != 200 {
            return Err(Fault::HttpStatus(http));
        }
        match self.status {
            None | Some(None) => Err(Fault::NoStatus),
            Some(Some(0)) => self.reader.end(),
            Some(Some(code)) => Err(Fault::Status(code, self.message.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` cut at `cut` (and once more at every cut of the rest): the reader's state after all of them.
    fn read_cut(bytes: &[u8], cuts: &[usize]) -> (MessageReader, Result<(), Fault>) {
        let mut r = MessageReader::default();
        let mut at = 0;
        for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
            if let Err(f) = r.feed(&bytes[at..c]) {
                return (r, Err(f));
            }
            at = c;
        }
        let end = r.end();
        (r, end)
    }

    #[test]
    fn messages_are_counted_whole_at_every_cut_of_the_bytes() {
        let mut bytes = frame_message(b"\x0a\x05hello");
        bytes.extend(frame_message(b""));
        bytes.extend(frame_message(&[7u8; 300]));
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let (r, end) = read_cut(&bytes, &[a, b]);
                assert_eq!(end, Ok(()), "cut at {a}, {b}");
                assert_eq!(r.messages, 3, "cut at {a}, {b}");
            }
        }
    }

    #[test]
    fn an_answer_cut_inside_a_prefix_or_a_message_is_malformed_at_its_end() {
        let bytes = frame_message(b"hello");
        for len in 1..bytes.len() {
            let (_, end) = read_cut(&bytes[..len], &[]);
            assert!(matches!(end, Err(Fault::BadMessage(_))), "{len} bytes: {end:?}");
        }
    }

    #[test]
    fn a_length_past_the_bound_or_a_bad_flag_fails_at_the_prefix_whatever_the_cut() {
        type Judge = fn(&Fault) -> bool;
        let cases: [([u8; 5], Judge); 4] = [
            ([0, 0xff, 0xff, 0xff, 0xff], |f| {
                *f == Fault::TooLarge { len: u64::from(u32::MAX), max: MAX_MESSAGE, inflated: false }
            }),
            ([0, 0, 0x40, 0, 1], |f| matches!(f, Fault::TooLarge { len: 0x40_0001, .. })),
            ([1, 0, 0, 0, 1], |f| matches!(f, Fault::BadMessage(_))),
            ([2, 0, 0, 0, 1], |f| matches!(f, Fault::BadMessage(_))),
        ];
        for (prefix, expected) in cases {
            for cut in 0..PREFIX {
                let mut r = MessageReader::default();
                let first = r.feed(&prefix[..cut]);
                assert_eq!(first, Ok(()), "nothing is judged before the prefix is whole");
                let fault = r.feed(&prefix[cut..]).unwrap_err();
                assert!(expected(&fault), "{prefix:?} cut at {cut}: {fault:?}");
            }
        }
        let mut r = MessageReader::default();
        let at_bound = [0, 0, 0x40, 0, 0];
        assert_eq!(r.feed(&at_bound), Ok(()), "4 MiB exactly is taken");
        let mut r = MessageReader::new(1024);
        assert_eq!(r.feed(&[0, 0, 0, 4, 0]), Ok(()), "--max-message 1KiB takes 1024 bytes");
        let mut r = MessageReader::new(1024);
        assert_eq!(r.feed(&[0, 0, 0, 4, 1]), Err(Fault::TooLarge { len: 1025, max: 1024, inflated: false }));
    }

    #[test]
    fn the_verdict_reads_the_status_from_the_trailers() {
        let mut ok = Call::default();
        ok.reader.feed(&frame_message(b"x")).unwrap();
        ok.field(b"grpc-status", b"0");
        assert_eq!(ok.verdict(200), Ok(()));
        assert_eq!(ok.verdict(503), Err(Fault::HttpStatus(503)));

        let mut failed = Call::default();
        failed.field(b"grpc-status", b"14");
        failed.field(b"grpc-message", b"down%20for%20now");
        let f = failed.verdict(200).unwrap_err();
        assert_eq!(f, Fault::Status(14, Some("down for now".into())));
        assert_eq!(f.describe(), "gRPC status UNAVAILABLE (14): down for now");

        assert_eq!(Call::default().verdict(200), Err(Fault::NoStatus));
        let mut garbled = Call::default();
        garbled.field(b"grpc-status", b"x");
        assert_eq!(garbled.verdict(200), Err(Fault::NoStatus));

        let mut cut = Call::default();
        cut.reader.feed(&frame_message(b"hello")[..4]).unwrap();
        cut.field(b"grpc-status", b"0");
        assert!(matches!(cut.verdict(200), Err(Fault::BadMessage(_))));
    }

    #[test]
    fn a_spaced_call_is_cut_at_its_messages_and_ends_with_the_last() {
        use crate::protocol::h2::frame::{DATA, END_STREAM, HEADERS};
        use crate::protocol::h2::request::{body_of, frame_at, write_data};
        let headers = [0u8, 0, 1, HEADERS, 4, 0, 0, 0, 0, 0x83];
        let (a, b) = (frame_message(b"a"), frame_message(&[7u8; 20_000]));
        let mut frames = headers.to_vec();
        write_data(&mut frames, &[a.clone(), b.clone(), a.clone()].concat(), true);
        let parts = spaced_parts(&frames);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0][..headers.len()], headers, "the HEADERS go with the first message");
        assert_eq!(body_of(&parts[0]), a);
        assert_eq!((body_of(&parts[1]), body_of(&parts[2])), (b, a));
        for (i, part) in parts.iter().enumerate() {
            let mut at = if i == 0 { headers.len() } else { 0 };
            let mut flags = Vec::new();
            while let Some(head) = frame_at(part, at) {
                assert_eq!(head.kind, DATA);
                flags.push(head.flags & END_STREAM);
                at += 9 + head.len;
            }
            let last = if i == 2 { END_STREAM } else { 0 };
            assert_eq!(flags.last(), Some(&last), "part {i}: END_STREAM with the last message only");
            assert!(flags[..flags.len() - 1].iter().all(|&f| f == 0), "part {i}");
        }
    }

    #[test]
    fn a_compressed_answer_is_taken_only_when_asked_for_and_encoded_gzip() {
        let answer = [gzip::frame(b"hello"), frame_message(b"plain")].concat();
        let gzip = Settings { gzip: true, ..Settings::default() };
        for cut in 0..=answer.len() {
            let mut call = Call::new(&gzip);
            call.field(b"grpc-encoding", b"gzip");
            assert_eq!(call.reader.feed(&answer[..cut]), Ok(()), "cut at {cut}");
            assert_eq!(call.reader.feed(&answer[cut..]), Ok(()), "cut at {cut}");
            assert_eq!((call.reader.messages, call.reader.end()), (2, Ok(())), "cut at {cut}");
        }
        let mut not_asked = Call::new(&Settings::default());
        not_asked.field(b"grpc-encoding", b"gzip");
        assert!(matches!(not_asked.reader.feed(&answer), Err(Fault::BadMessage(m)) if m.contains("asked for none")));
        let mut not_encoded = Call::new(&gzip);
        assert!(matches!(not_encoded.reader.feed(&answer), Err(Fault::BadMessage(m)) if m.contains("grpc-encoding")));
        let mut garbled = Call::new(&gzip);
        garbled.field(b"grpc-encoding", b"gzip");
        let bad = [1, 0, 0, 0, 4, b'a', b'b', b'c', b'd'];
        assert!(matches!(garbled.reader.feed(&bad), Err(Fault::BadMessage(m)) if m.contains("does not inflate")));
        let mut bomb = Call::new(&Settings { max_message: 1024, ..gzip });
        bomb.field(b"grpc-encoding", b"gzip");
        let fault = bomb.reader.feed(&gzip::frame(&[0u8; 5000])).unwrap_err();
        assert_eq!(fault.describe(), "a compressed gRPC message inflating past --max-message (1024 bytes)");
    }

    #[test]
    fn grpc_timeout_has_at_most_eight_digits() {
        use std::time::Duration;
        assert_eq!(timeout_header(Duration::from_secs(5)), "5000m");
        assert_eq!(timeout_header(Duration::from_micros(10)), "1m");
        assert_eq!(timeout_header(Duration::from_secs(200_000)), "200000S");
        assert_eq!(status_name(14), "UNAVAILABLE");
        assert_eq!(status_name(99), "status 99");
    }
}
