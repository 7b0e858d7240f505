//! Framing shared by the line-oriented key-value protocols (RESP, memcached text): a header line ending in CR LF,
//! and a block of announced size ending in CR LF, both read from whatever each read returns.

use super::{Answer, DecodeError, ResponseDecoder};

/// Reads `data` into `line` up to LF. Returns true when the line is complete (its CR LF removed, `data` moved past
/// it); false when it continues in the next read. A line longer than `max` bytes (CR LF included) is an error
/// whether it came in one read or many. `what` names the line in errors.
pub(crate) fn read_line(line: &mut Vec<u8>, data: &mut &[u8], max: usize, what: &str) -> Result<bool, DecodeError> {
    let (piece, complete) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (i, true),
        None => (data.len(), false),
    };
    if line.len() + piece + usize::from(complete) > max {
        return Err(too_long(what, max));
    }
    line.extend_from_slice(&data[..piece]);
    *data = &data[(piece + usize::from(complete))..];
    if complete && line.pop() != Some(b'\r') {
        return Err(DecodeError::Malformed(format!("{what} ends without CR LF")));
    }
    Ok(complete)
}

/// A header or line past the `--max-line` bound.
pub(crate) fn too_long(what: &str, max: usize) -> DecodeError {
    DecodeError::LineTooLong(format!("{what} longer than {max} bytes (--max-line)"))
}

/// Skips up to `left` bytes of a block whose last two bytes are CR LF (checking those that fall in this read);
/// returns the bytes still to come. Data is counted, never kept.
pub(crate) fn skip_block(data: &mut &[u8], left: u64, what: &str) -> Result<u64, DecodeError> {
    let take = (left.min(data.len() as u64)) as usize;
    let first = (left.saturating_sub(2) as usize).min(take);
    for (j, &b) in data.iter().enumerate().take(take).skip(first) {
        if b != b"\r\n"[2 - (left - j as u64) as usize] {
            return Err(DecodeError::Malformed(format!("{what} does not end with CR LF")));
        }
    }
    *data = &data[take..];
    Ok(left - take as u64)
}

/// [`skip_block`], and the block's data bytes (not its CR LF) appended to `keep` when given: a workload that
/// checks values asks for them; every other request keeps nothing.
pub(crate) fn take_block(
    data: &mut &[u8],
    left: u64,
    what: &str,
    keep: Option<&mut Vec<u8>>,
) -> Result<u64, DecodeError> {
    let before = *data;
    let rest = skip_block(data, left, what)?;
    if let Some(keep) = keep {
        let taken = before.len() - data.len();
        keep.extend_from_slice(&before[..taken.min(left.saturating_sub(2) as usize)]);
    }
    Ok(rest)
}

/// The close of a connection before a reply was complete.
pub(crate) fn closed(received: bool) -> DecodeError {
    DecodeError::Truncated(if received {
        "the server closed the connection in the middle of a reply".into()
    } else {
        "the server closed the connection without a reply".into()
    })
}

/// A reply decoder of a line protocol (RESP, memcached text): `R` parses the replies; around it, what both
/// protocols keep about a reply's edges: whether any byte of it has arrived, and what followed it in the read
/// that completed it.
#[derive(Debug, Default)]
pub struct LineDecoder<R> {
    pub(super) replies: R,
    received: bool,
    stray: Stray,
    /// Bytes of the last read that followed the complete reply (the next pipelined reply's start).
    unread: usize,
}

impl<R> From<R> for LineDecoder<R> {
    fn from(replies: R) -> Self {
        Self { replies, received: false, stray: Stray::default(), unread: 0 }
    }
}

/// The parser of one line protocol's replies, one after another on one connection.
pub trait Replies {
    /// Prepares for the next reply.
    fn begin(&mut self);
    /// Consumes `data` from its front, up to the end of the reply at most: the answer once the reply is complete.
    fn parse(&mut self, data: &mut &[u8]) -> Result<Option<Answer>, DecodeError>;
}

impl<R: Replies> ResponseDecoder for LineDecoder<R> {
    fn start(&mut self, _expects_no_body: bool) {
        self.replies.begin();
        self.received = false;
        self.stray.clear();
        self.unread = 0;
    }

    fn feed(&mut self, mut data: &[u8]) -> Result<Option<Answer>, DecodeError> {
        if !data.is_empty() {
            self.received = true;
        }
        let answer = self.replies.parse(&mut data)?;
        if answer.is_some() {
            if !data.is_empty() {
                self.stray.set(data);
            }
            self.unread = data.len();
        }
        Ok(answer)
    }

    fn stray(&self) -> Option<&str> {
        self.stray.get()
    }

    fn unread(&self) -> usize {
        self.unread
    }

    fn eof(&mut self) -> Result<Answer, DecodeError> {
        Err(closed(self.received))
    }

    fn nothing_received(&self) -> bool {
        !self.received
    }
}

/// The first bytes of `data`, printable, for an error sample.
/// Bytes that followed a complete reply, kept raw (at most 64) and described only when asked. With pipelined
/// requests they are the next reply's start, found after nearly every reply: describing them each time took a
/// quarter of a pipelined run's time (perf).
#[derive(Debug, Default)]
pub(crate) struct Stray {
    raw: Vec<u8>,
    text: std::cell::OnceCell<String>,
}

impl Stray {
    pub(crate) fn clear(&mut self) {
        self.raw.clear();
        self.text = std::cell::OnceCell::new();
    }

    pub(crate) fn set(&mut self, data: &[u8]) {
        self.clear();
        self.raw.extend_from_slice(&data[..data.len().min(64)]);
    }

    pub(crate) fn get(&self) -> Option<&str> {
        if self.raw.is_empty() {
            return None;
        }
        Some(self.text.get_or_init(|| format!("bytes after the reply: {}", quote(&self.raw))).as_str())
    }
}

/// The start of `data`, printable, for error samples (every protocol's; HTTP's decoder quotes with it too).
pub(crate) fn quote(data: &[u8]) -> String {
    String::from_utf8_lossy(&data[..data.len().min(40)]).escape_debug().collect()
}

/// A sample as it may be shown on a terminal: a peer's text (a grpc-message, a WebSocket close reason, a
/// reflection error) can hold ESC sequences, CR or LF that would forge output lines or set the terminal's title.
/// Control characters and the bidirectional overrides are escaped (`\u{1b}`, `\r`); the rest stays as it was.
pub fn printable_text(text: String) -> String {
    let unsafe_char = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return text;
    }
    text.chars().map(|c| if unsafe_char(c) { c.escape_default().collect() } else { c.to_string() }).collect()
}

/// A word of a request (a command, a key), printable: at most `max` bytes of it, then `...` when it was longer.
pub(crate) fn printable(word: &[u8], max: usize) -> String {
    let mut shown: String = String::from_utf8_lossy(&word[..word.len().min(max)]).escape_debug().collect();
    if word.len() > max {
        shown.push_str("...");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_bound_is_too_long_in_one_read_or_many_and_never_kept_beyond_it() {
        let mut line = Vec::new();
        let mut data: &[u8] = b"VALUE k 0 12345678901234567890";
        assert!(matches!(read_line(&mut line, &mut data, 16, "a reply line"), Err(DecodeError::LineTooLong(_))));
        line.clear();
        let mut result = Ok(false);
        for _ in 0..100 {
            let mut piece: &[u8] = b"99999";
            result = read_line(&mut line, &mut piece, 16, "a reply line");
            assert!(line.len() <= 16, "{}", line.len());
            if result.is_err() {
                break;
            }
        }
        assert!(
            matches!(result, Err(DecodeError::LineTooLong(m)) if m == "a reply line longer than 16 bytes (--max-line)")
        );
        // Exactly at the bound, CR LF included: taken.
        line.clear();
        let mut data: &[u8] = b"12345678901234\r\nEND";
        assert_eq!(read_line(&mut line, &mut data, 16, "a reply line"), Ok(true));
        assert_eq!((line.as_slice(), data), (&b"12345678901234"[..], &b"END"[..]));
    }
}
