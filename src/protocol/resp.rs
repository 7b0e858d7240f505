//! Redis's RESP2: commands encoded as arrays of bulk strings, and an incremental reply decoder.
//!
//! Written by hand rather than with a crate: the engine needs a decoder that is fed whatever each read returns,
//! keeps no reply bytes (bulk data is counted and skipped, so a 1 MB value costs no memory), and says only how the
//! reply ended; the RESP crates on crates.io build whole values. The framing is small (redis.io's protocol spec).
//!
//! A reply maps to the engine's status: 200 a value, `+OK`, an integer or an array; 204 a nil (a miss: `$-1`,
//! `*-1`); 500 an error reply (`-ERR ...`).

use super::framing::{LineDecoder, Replies, quote, read_line, take_block};
use crate::protocol::{Answer, DEFAULT_MAX_LINE, DecodeError};

/// A reply's outcome, as the engine counts it.
pub const STATUS_VALUE: u16 = 200;
pub const STATUS_MISS: u16 = 204;
pub const STATUS_ERROR: u16 = 500;

/// The largest bulk string Redis allows (proto-max-bulk-len's default).
const MAX_BULK: i64 = 512 * 1024 * 1024;
/// Arrays nested deeper than this are refused rather than tracked without bound.
const MAX_DEPTH: usize = 32;

/// Encodes one command: `*<argc>\r\n` then `$<len>\r\n<arg>\r\n` per argument.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    header(&mut out, b'*', args.len());
    for a in args {
        header(&mut out, b'$', a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The command and key of an encoded command (`*3\r\n$3\r\nSET\r\n$1\r\nk\r\n...`): its first argument, or a
/// script's first key (`EVAL script 1 key ...`: the script is no key). None when the bytes are no command
/// [`encode`] writes.
pub fn command_and_key(request: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let mut rest = request.strip_prefix(b"*")?;
    let count = number(&mut rest)?;
    let mut bulk = || -> Option<&[u8]> {
        rest = rest.strip_prefix(b"$")?;
        let len = number(&mut rest)?;
        let (arg, after) = rest.split_at_checked(len)?;
        rest = after.strip_prefix(b"\r\n")?;
        Some(arg)
    };
    let command = bulk()?;
    let scripted = [&b"eval"[..], b"evalsha", b"eval_ro", b"evalsha_ro", b"fcall", b"fcall_ro"]
        .iter()
        .any(|c| command.eq_ignore_ascii_case(c));
    let key = match count {
        0 | 1 => None,
        _ if scripted => {
            let _script = bulk()?;
            let keys = bulk().and_then(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok());
            match keys {
                Some(1..) if count > 3 => Some(bulk()?),
                _ => None,
            }
        }
        _ => Some(bulk()?),
    };
    Some((command, key))
}

/// The decimal number at the start of `rest` up to its CR LF, which it passes.
fn number(rest: &mut &[u8]) -> Option<usize> {
    let end = rest.iter().position(|&b| b == b'\r')?;
    let n = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    *rest = rest[end..].strip_prefix(b"\r\n")?;
    Some(n)
}

/// Appends `*<n>\r\n` or `$<n>\r\n`, the number by `itoa`: a workload encodes a command per request, and
/// `format!` allocated a string for each header (measured: about a fifth of a pipelined run's time).
pub fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Expecting the type byte of the next element.
    Type,
    /// Reading a header line of this type (`+`, `-`, `:`, `$`, `*`) up to CRLF.
    Line(u8),
    /// Inside bulk data: this many bytes left, CRLF included.
    Bulk(u64),
    Done,
}

/// Decodes one reply after another on one connection.
pub type RespDecoder = LineDecoder<RespReplies>;

/// The replies on one connection, parsed one after another.
#[derive(Debug)]
pub struct RespReplies {
    state: State,
    /// The current header line (without its type byte), kept until its CRLF; bounded by `max_line`.
    line: Vec<u8>,
    /// The longest header line (`$123`, `+OK`, an error message) taken (`--max-line`).
    max_line: usize,
    /// Elements still expected by each open array, innermost last.
    open: Vec<u64>,
    /// The top-level reply's status, once its type is known.
    status: u16,
    /// The top-level error reply's text (`WRONGPASS invalid username-password pair`), for messages.
    error: Option<String>,
    /// Keep the reply's data (bulk strings, integers) in `value`: set by a workload that checks values.
    keep: bool,
    value: Vec<u8>,
    /// Where each kept element ends in `value` (a SCAN reply's cursor, then its keys).
    ends: Vec<usize>,
}

impl Default for RespReplies {
    fn default() -> Self {
        Self {
            state: State::Done,
            line: Vec::new(),
            max_line: DEFAULT_MAX_LINE,
            open: Vec::new(),
            status: 0,
            error: None,
            keep: false,
            value: Vec::new(),
            ends: Vec::new(),
        }
    }
}

fn malformed(what: impl Into<String>) -> DecodeError {
    DecodeError::Malformed(what.into())
}

impl RespDecoder {
    /// A decoder whose header lines may be at most `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        LineDecoder::from(RespReplies { max_line, ..RespReplies::default() })
    }

    /// The last top-level error reply's text, if the reply was one.
    pub fn error(&self) -> Option<&str> {
        self.replies.error.as_deref()
    }

    /// Keep the data of the replies that follow (for [`value`](Self::value)), or not.
    pub fn keep_values(&mut self, keep: bool) {
        self.replies.keep = keep;
    }

    /// The data of the last reply when values are kept: its bulk strings and integers, in order, concatenated.
    pub fn value(&self) -> &[u8] {
        &self.replies.value
    }

    /// Where each kept bulk string or integer ends in [`value`](Self::value).
    pub fn ends(&self) -> &[usize] {
        &self.replies.ends
    }
}

impl RespReplies {
    /// One element ended: close the arrays it completes; the reply is done when none is open. A kept leaf
    /// (`leaf`: not an empty or nil array) marks where its data ends.
    fn element_done(&mut self) {
        self.element_ended(true);
    }

    fn element_ended(&mut self, leaf: bool) {
        if self.keep && leaf {
            self.ends.push(self.value.len());
        }
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                self.state = State::Type;
                return;
            }
            self.open.pop();
        }
        self.state = State::Done;
    }

    /// A complete header line of type `t`.
    fn line_done(&mut self, t: u8) -> Result<(), DecodeError> {
        let top = self.open.is_empty() && self.status == 0;
        let number = || -> Result<i64, DecodeError> {
            std::str::from_utf8(&self.line)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| malformed(format!("not a number after '{}': {}", t as char, quote(&self.line))))
        };
        match t {
            b'+' | b':' => {
                if t == b':' {
                    number()?;
                    if self.keep {
                        self.value.extend_from_slice(&self.line);
                    }
                }
                if top {
                    self.status = STATUS_VALUE;
                }
                self.element_done();
            }
            b'-' => {
                if top {
                    self.status = STATUS_ERROR;
                    self.error = Some(String::from_utf8_lossy(&self.line).into_owned());
                }
                self.element_done();
            }
            b'$' => {
                let n = number()?;
                match n {
                    -1 => {
                        if top {
                            self.status = STATUS_MISS;
                        }
                        self.element_done();
                    }
                    0..=MAX_BULK => {
                        if top {
                            self.status = STATUS_VALUE;
                        }
                        self.state = State::Bulk(n as u64 + 2);
                    }
                    _ => return Err(malformed(format!("bulk length {n} out of range"))),
                }
            }
            b'*' => {
                let n = number()?;
                if top {
                    // Nothing in it is nothing found: an empty array (HGETALL of a missing hash) is a miss too.
                    self.status = if n <= 0 { STATUS_MISS } else { STATUS_VALUE };
                }
                match n {
                    -1 | 0 => self.element_ended(false),
                    1.. if self.open.len() < MAX_DEPTH => {
                        self.open.push(n as u64);
                        self.state = State::Type;
                    }
                    1.. => return Err(malformed("arrays nested too deep")),
                    _ => return Err(malformed(format!("array length {n} out of range"))),
                }
            }
            _ => unreachable!("only the five types reach a line"),
        }
        self.line.clear();
        Ok(())
    }
}

impl Replies for RespReplies {
    fn begin(&mut self) {
        self.state = State::Type;
        self.line.clear();
        self.open.clear();
        self.status = 0;
        self.error = None;
        self.value.clear();
        self.ends.clear();
    }

    fn parse(&mut self, data: &mut &[u8]) -> Result<Option<Answer>, DecodeError> {
        while !data.is_empty() {
            match self.state {
                State::Done => break,
                State::Type => {
                    let t = data[0];
                    if !matches!(t, b'+' | b'-' | b':' | b'$' | b'*') {
                        return Err(malformed(format!("not a RESP reply: {}", quote(data))));
                    }
                    self.state = State::Line(t);
                    *data = &data[1..];
                }
                State::Line(t) => {
                    if read_line(&mut self.line, data, self.max_line, "a RESP line")? {
                        self.line_done(t)?;
                    }
                }
                State::Bulk(left) => {
                    let keep = self.keep.then_some(&mut self.value);
                    let rest = take_block(data, left, "a bulk string", keep)?;
                    if rest == 0 {
                        self.element_done();
                    } else {
                        self.state = State::Bulk(rest);
                    }
                }
            }
        }
        if self.state != State::Done {
            return Ok(None);
        }
        Ok(Some(Answer { status: self.status, keep_alive: true }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ResponseDecoder, decode_every_split};

    fn decode(wire: &[u8]) -> Result<Answer, DecodeError> {
        decode_every_split::<RespDecoder>(wire, false)
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(encode(&[b"SET", b"k", b"v v"]), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv v\r\n");
        assert_eq!(encode(&[b"GET", b""]), b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
    }

    #[test]
    fn replies_map_to_value_miss_or_error_split_anywhere() {
        let status = |w: &[u8]| decode(w).unwrap().status;
        assert_eq!(status(b"+OK\r\n"), STATUS_VALUE);
        assert_eq!(status(b":42\r\n"), STATUS_VALUE);
        assert_eq!(status(b"$5\r\nhello\r\n"), STATUS_VALUE);
        assert_eq!(status(b"$0\r\n\r\n"), STATUS_VALUE);
        assert_eq!(status(b"$-1\r\n"), STATUS_MISS);
        assert_eq!(status(b"*-1\r\n"), STATUS_MISS);
        assert_eq!(status(b"-ERR unknown command\r\n"), STATUS_ERROR);
        // SCAN's reply: a cursor and an array of keys, one of them a nil in a nested array.
        assert_eq!(status(b"*2\r\n$1\r\n0\r\n*3\r\n$1\r\na\r\n$-1\r\n*0\r\n"), STATUS_VALUE);
        // A value holding CR LF is data, not framing.
        assert_eq!(status(b"$4\r\n\r\n\r\n\r\n"), STATUS_VALUE);
    }

    #[test]
    fn broken_replies_are_malformed_and_a_close_is_truncation() {
        for bad in [&b"hello\r\n"[..], b":x\r\n", b"$3\r\nabcXY", b"$-2\r\n", b"+OK\n"] {
            let mut d = RespDecoder::default();
            d.start(false);
            assert!(matches!(d.feed(bad), Err(DecodeError::Malformed(_))), "{}", String::from_utf8_lossy(bad));
        }
        let mut d = RespDecoder::default();
        d.start(false);
        assert_eq!(d.feed(b"$10\r\nabc").unwrap(), None);
        assert!(matches!(d.eof(), Err(DecodeError::Truncated(_))));
    }

    #[test]
    fn bytes_after_the_reply_are_stray() {
        let mut d = RespDecoder::default();
        d.start(false);
        assert!(d.feed(b"+OK\r\n+OK\r\n").unwrap().is_some());
        assert!(d.stray().unwrap().contains("+OK"));
    }
}
