//! What bounds an HTTP/2 connection against a hostile or broken peer: the control-frame answers queued for a peer
//! that does not read (a PING or SETTINGS flood), an answer's decoded header list (an HPACK bomb), the error kind
//! of a connection error, and the pause before a connection that ended in an error is opened again.

use std::time::Duration;

use crate::metrics::ErrorKind;
use crate::protocol::h2::frame;

/// Answers to the peer's control frames (SETTINGS and PING ACKs) queued and not yet written: past this many the
/// peer is flooding a connection it does not read, and the connection ends (ENHANCE_YOUR_CALM). Go's HTTP/2 and
/// nghttp2 allow 10,000 too; each ACK is 17 bytes, so 170 kB at most wait per connection.
pub(super) const MOST_UNSENT_ACKS: usize = 10_000;

/// The first pause before a connection that ended in an error (one that could not open, a connection error) is
/// opened again, doubled after each such end up to [`MOST_REOPEN_PAUSE`]: a peer that breaks every connection at
/// once is not answered with thousands of connections a second.
const FIRST_REOPEN_PAUSE: Duration = Duration::from_millis(10);
const MOST_REOPEN_PAUSE: Duration = Duration::from_secs(1);

/// The pause before opening a connection in place of one that ended after `last` (the pause it was opened
/// after), `errored` when it ended in an error: none after a clean end (a GOAWAY's hand-over).
pub(super) fn reopen_pause(last: Duration, errored: bool) -> Duration {
    if !errored {
        return Duration::ZERO;
    }
    (last * 2).clamp(FIRST_REOPEN_PAUSE, MOST_REOPEN_PAUSE)
}

/// The kind of a connection error the client found in the server's frames, by the code its GOAWAY carries.
pub(super) fn kind_of(code: u32) -> ErrorKind {
    match code {
        frame::FLOW_CONTROL_ERROR => ErrorKind::FlowControl,
        frame::FRAME_SIZE_ERROR => ErrorKind::FrameSize,
        frame::ENHANCE_YOUR_CALM => ErrorKind::Flood,
        _ => ErrorKind::Malformed,
    }
}

/// An answer's header list as it decodes, sized as SETTINGS_MAX_HEADER_LIST_SIZE sizes it (RFC 9113 6.5.2: each
/// field's name and value and 32 bytes). Past `limit` nothing more is kept: the decoding goes on only so the
/// HPACK table stays in step, and the answer fails.
pub(super) struct HeaderList {
    pub size: u64,
    pub limit: u64,
}

impl HeaderList {
    pub fn new(limit: usize) -> HeaderList {
        HeaderList { size: 0, limit: limit as u64 }
    }

    /// Adds a field; false once the list is past its limit.
    pub fn add(&mut self, name: usize, value: usize) -> bool {
        self.size = self.size.saturating_add((name + value + 32) as u64);
        self.size <= self.limit
    }

    pub fn over(&self) -> bool {
        self.size > self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_that_keeps_failing_is_reopened_after_a_pause_that_doubles_to_a_second() {
        let mut pause = Duration::ZERO;
        let mut pauses = Vec::new();
        for _ in 0..10 {
            pause = reopen_pause(pause, true);
            pauses.push(pause.as_millis());
        }
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        assert_eq!(reopen_pause(pause, false), Duration::ZERO, "a clean end reopens at once");
    }

    #[test]
    fn a_header_list_is_sized_as_rfc_9113_sizes_it() {
        let mut list = HeaderList::new(100);
        assert!(list.add(7, 3), ":status 200 is 42 bytes");
        assert!(list.add(10, 16));
        assert!(!list.over());
        assert!(!list.add(0, 0), "100 bytes are past 100 by 0 + 0 + 32");
        assert!(list.over());
    }
}
