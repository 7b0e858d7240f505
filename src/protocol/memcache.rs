//! memcached's text protocol: commands as text lines, and an incremental reply decoder.
//!
//! Written by hand for the same reasons as [`super::resp`]: fed whatever each read returns, values counted and
//! skipped, never stored. The replies are those of memcached's doc/protocol.txt.
//!
//! A reply maps to the engine's status: 200 a value (`VALUE ... END` with at least one item), `STORED`,
//! `DELETED`, `TOUCHED`, `OK` or a number; 204 a miss (`END` alone, `NOT_FOUND`); 409 not done by the item's
//! state (`NOT_STORED`, `EXISTS`); 500 an error (`ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`).

use super::framing::{LineDecoder, Replies, quote, read_line, take_block};
use crate::protocol::{Answer, DEFAULT_MAX_LINE, DecodeError};

pub const STATUS_VALUE: u16 = 200;
pub const STATUS_MISS: u16 = 204;
pub const STATUS_NOT_STORED: u16 = 409;
pub const STATUS_ERROR: u16 = 500;

/// The largest item a `VALUE` line may announce (memcached's `-I` allows at most 1 GB).
const MAX_ITEM: u64 = 1 << 30;

/// `set <key> <flags> <exptime> <bytes>\r\n<data>\r\n`.
pub fn encode_set(key: &[u8], value: &[u8]) -> Vec<u8> {
    encode_store("set", key, value, None)
}

/// A storage command (`set`, `add`, `replace`, `append`, `prepend`; `cas` with its token):
/// `<verb> <key> 0 0 <bytes> [<cas>]\r\n<data>\r\n`.
pub fn encode_store(verb: &str, key: &[u8], value: &[u8], cas: Option<u64>) -> Vec<u8> {
    encode_store_expiring(verb, key, value, 0, cas)
}

/// A storage command whose item expires after `exptime` seconds (0: never).
pub fn encode_store_expiring(verb: &str, key: &[u8], value: &[u8], exptime: u32, cas: Option<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + value.len() + 48);
    out.extend_from_slice(verb.as_bytes());
    out.push(b' ');
    out.extend_from_slice(key);
    out.extend_from_slice(format!(" 0 {exptime} {}", value.len()).as_bytes());
    if let Some(cas) = cas {
        out.extend_from_slice(format!(" {cas}").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    out
}

/// `get <key>\r\n`.
pub fn encode_get(key: &[u8]) -> Vec<u8> {
    encode_line(&[b"get", key])
}

/// Any other command: its words, spaces between, CR LF after (`delete k`, `incr k 5`, `get a b c`).
pub fn encode_line(words: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.iter().map(|w| w.len() + 1).sum::<usize>() + 2);
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(w);
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The command and key of a command line: its first argument (`get k`, `set k 0 0 5`, `incr k 1`), or the second
/// of `gat`/`gats` (`gat <exptime> <key>`). None when the bytes hold no line.
pub fn command_and_key(request: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let line = &request[..request.windows(2).position(|w| w == b"\r\n")?];
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let command = words.next()?;
    if command == b"gat" || command == b"gats" {
        words.next();
    }
    Some((command, words.next()))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Reading a reply line up to CR LF.
    Line,
    /// Inside an item's data: this many bytes left, its CR LF included.
    Data(u64),
    Done,
}

/// Decodes one reply after another on one connection.
pub type MemcacheDecoder = LineDecoder<MemcacheReplies>;

/// The replies on one connection, parsed one after another.
#[derive(Debug)]
pub struct MemcacheReplies {
    state: State,
    line: Vec<u8>,
    /// The longest reply line taken (`--max-line`; a `VALUE` line with a 250-byte key is far shorter).
    max_line: usize,
    /// Items of a retrieval reply seen so far.
    items: u32,
    status: u16,
    /// Keep the items' data and the first one's cas token: set by a workload that checks values (or runs cas).
    keep: bool,
    value: Vec<u8>,
    cas: Option<u64>,
    /// The reply was a SERVER_ERROR, after which memcached may close the connection (ERROR and CLIENT_ERROR
    /// leave it open).
    server_error: bool,
    /// The last reply's text when it was an error (`ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`), for the
    /// result document's first error reply.
    error: Option<String>,
}

impl Default for MemcacheReplies {
    fn default() -> Self {
        Self {
            state: State::Done,
            line: Vec::new(),
            max_line: DEFAULT_MAX_LINE,
            items: 0,
            status: 0,
            keep: false,
            value: Vec::new(),
            cas: None,
            server_error: false,
            error: None,
        }
    }
}

fn malformed(what: impl Into<String>) -> DecodeError {
    DecodeError::Malformed(what.into())
}

impl MemcacheDecoder {
    /// A decoder whose reply lines may be at most `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        LineDecoder::from(MemcacheReplies { max_line, ..MemcacheReplies::default() })
    }

    /// Keep the data of the replies that follow (for [`value`](Self::value)), or not.
    pub fn keep_values(&mut self, keep: bool) {
        self.replies.keep = keep;
    }

    /// When values are kept: the items' data of the last reply, one after the other (or the number an incr
    /// answered).
    pub fn value(&self) -> &[u8] {
        &self.replies.value
    }

    /// The last reply's text when it was an error reply.
    pub fn error(&self) -> Option<&str> {
        self.replies.error.as_deref()
    }

    /// When values are kept: the first item's cas token (`gets`).
    pub fn cas(&self) -> Option<u64> {
        self.replies.cas
    }
}

impl MemcacheReplies {
    /// A complete reply line (without CR LF).
    fn line_done(&mut self) -> Result<(), DecodeError> {
        let line = std::mem::take(&mut self.line);
        let text = std::str::from_utf8(&line).map_err(|_| malformed(format!("not a reply: {}", quote(&line))))?;
        let mut words = text.split(' ');
        let first = words.next().unwrap_or("");
        self.state = State::Done;
        self.status = match first {
            "VALUE" => {
                // VALUE <key> <flags> <bytes> [<cas unique>]
                let bytes =
                    words.nth(2).and_then(|b| b.parse::<u64>().ok()).filter(|&b| b <= MAX_ITEM).ok_or_else(|| {
                        malformed(format!("a VALUE line without a size up to 1 GB: {}", quote(&line)))
                    })?;
                if self.keep && self.items == 0 {
                    self.cas = words.next().and_then(|c| c.parse().ok());
                }
                self.items += 1;
                self.state = State::Data(bytes + 2);
                return Ok(());
            }
            "END" if self.items > 0 => STATUS_VALUE,
            "END" | "NOT_FOUND" => STATUS_MISS,
            "STORED" | "DELETED" | "TOUCHED" | "OK" => STATUS_VALUE,
            "NOT_STORED" | "EXISTS" => STATUS_NOT_STORED,
            "ERROR" | "CLIENT_ERROR" => {
                self.error = Some(text.to_string());
                STATUS_ERROR
            }
            "SERVER_ERROR" => {
                self.server_error = true;
                self.error = Some(text.to_string());
                STATUS_ERROR
            }
            n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && self.items == 0 => {
                if self.keep {
                    self.value.extend_from_slice(n.as_bytes());
                }
                STATUS_VALUE
            }
            _ => return Err(malformed(format!("not a memcached reply: {}", quote(&line)))),
        };
        Ok(())
    }
}

impl Replies for MemcacheReplies {
    fn begin(&mut self) {
        self.state = State::Line;
        self.line.clear();
        self.items = 0;
        self.status = 0;
        self.value.clear();
        self.cas = None;
        self.server_error = false;
        self.error = None;
    }

    fn parse(&mut self, data: &mut &[u8]) -> Result<Option<Answer>, DecodeError> {
        while !data.is_empty() && self.state != State::Done {
            match self.state {
                State::Line => {
                    if read_line(&mut self.line, data, self.max_line, "a reply line")? {
                        self.line_done()?;
                    }
                }
                State::Data(left) => {
                    let keep = self.keep.then_some(&mut self.value);
                    let rest = take_block(data, left, "an item's data", keep)?;
                    self.state = if rest == 0 { State::Line } else { State::Data(rest) };
                }
                State::Done => unreachable!("the loop stops at Done"),
            }
        }
        if self.state != State::Done {
            return Ok(None);
        }
        // memcached closes the connection after some SERVER_ERRORs: do not reuse it after one.
        Ok(Some(Answer { status: self.status, keep_alive: !self.server_error }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ResponseDecoder, decode_every_split};

    fn decode(wire: &[u8]) -> Answer {
        decode_every_split::<MemcacheDecoder>(wire, false).unwrap()
    }

    #[test]
    fn commands_are_text_lines() {
        assert_eq!(encode_set(b"k1", b"abc"), b"set k1 0 0 3\r\nabc\r\n");
        assert_eq!(encode_get(b"k1"), b"get k1\r\n");
    }

    #[test]
    fn replies_map_to_value_miss_not_stored_or_error_split_anywhere() {
        assert_eq!(decode(b"VALUE k1 0 3\r\nabc\r\nEND\r\n").status, STATUS_VALUE);
        // Data holding "END\r\n" is data.
        assert_eq!(decode(b"VALUE k1 0 5\r\nEND\r\n\r\nEND\r\n").status, STATUS_VALUE);
        assert_eq!(decode(b"VALUE a 0 1\r\nx\r\nVALUE b 0 1 77\r\ny\r\nEND\r\n").status, STATUS_VALUE);
        assert_eq!(decode(b"END\r\n").status, STATUS_MISS);
        assert_eq!(decode(b"STORED\r\n").status, STATUS_VALUE);
        assert_eq!(decode(b"NOT_STORED\r\n").status, STATUS_NOT_STORED);
        assert_eq!(decode(b"NOT_FOUND\r\n").status, STATUS_MISS);
        assert_eq!(decode(b"42\r\n").status, STATUS_VALUE);
        let e = decode(b"SERVER_ERROR out of memory storing object\r\n");
        assert_eq!((e.status, e.keep_alive), (STATUS_ERROR, false));
        // A non-numeric incr leaves the connection open.
        let e = decode(b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
        assert_eq!((e.status, e.keep_alive), (STATUS_ERROR, true));
    }

    #[test]
    fn broken_replies_are_malformed() {
        for bad in [
            &b"HELLO\r\n"[..],
            b"VALUE k 0\r\n",
            b"VALUE k 0 2\r\nabcEND\r\n",
            b"STORED\n",
            b"VALUE k 0 18446744073709551615\r\n",
        ] {
            let mut d = MemcacheDecoder::default();
            d.start(false);
            assert!(d.feed(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn an_error_reply_keeps_its_text_until_the_next_reply() {
        let mut d = MemcacheDecoder::default();
        d.start(false);
        let a = d.feed(b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n").unwrap().unwrap();
        assert_eq!(a.status, STATUS_ERROR);
        assert_eq!(d.error(), Some("CLIENT_ERROR cannot increment or decrement non-numeric value"));
        d.start(false);
        d.feed(b"STORED\r\n").unwrap().unwrap();
        assert_eq!(d.error(), None);
    }
}
