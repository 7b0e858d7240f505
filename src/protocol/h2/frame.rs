//! HTTP/2 frames (RFC 9113 section 4 and 6): the 9-byte frame header read and written, and the few frames a
//! client writes (SETTINGS, WINDOW_UPDATE, RST_STREAM, PING's answer, GOAWAY).

/// What a client sends first on a connection (RFC 9113 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Bytes in a frame header.
pub const HEAD: usize = 9;

/// The largest frame payload every peer takes (SETTINGS_MAX_FRAME_SIZE's initial value): request frames are cut
/// to it, so they need no knowledge of the peer's setting.
pub const DEFAULT_MAX_FRAME: usize = 16_384;

/// The window every stream and the connection start with (RFC 9113 6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;

/// The largest window (2^31 - 1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// SETTINGS identifiers (RFC 9113 6.5.2).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// Error codes (RFC 9113 7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Payload length (24 bits).
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// Reads a frame header from the first 9 bytes of `b` (the caller checks there are 9).
    pub fn read(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// Appends this header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let len = self.len as u32;
        out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, self.kind, self.flags]);
        out.extend_from_slice(&(self.stream & 0x7fff_ffff).to_be_bytes());
    }
}

/// A SETTINGS frame with these (identifier, value) pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    Head { len: pairs.len() * 6, kind: SETTINGS, flags: 0, stream: 0 }.write(out);
    for (id, value) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// The acknowledgement of the peer's SETTINGS.
pub fn settings_ack(out: &mut Vec<u8>) {
    Head { len: 0, kind: SETTINGS, flags: ACK, stream: 0 }.write(out);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    Head { len: 4, kind: WINDOW_UPDATE, flags: 0, stream }.write(out);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    Head { len: 4, kind: RST_STREAM, flags: 0, stream }.write(out);
    out.extend_from_slice(&code.to_be_bytes());
}

/// The answer to a PING (its 8 bytes sent back with ACK).
pub fn ping_ack(out: &mut Vec<u8>, payload: &[u8; 8]) {
    Head { len: 8, kind: PING, flags: ACK, stream: 0 }.write(out);
    out.extend_from_slice(payload);
}

pub fn goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    Head { len: 8, kind: GOAWAY, flags: 0, stream: 0 }.write(out);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A 32-bit big-endian number at `at` (the caller checks the length).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The payload of a DATA or HEADERS frame without its padding (and, for HEADERS, its priority fields); None when
/// the padding is longer than the payload (a PROTOCOL_ERROR).
pub fn content(head: &Head, payload: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut start = 0;
    let mut end = payload.len();
    if head.flags & PADDED != 0 {
        let pad = usize::from(*payload.first()?);
        start = 1;
        end = end.checked_sub(pad)?;
    }
    if head.kind == HEADERS && head.flags & PRIORITY_FLAG != 0 {
        start += 5;
    }
    (start <= end).then_some(start..end)
}

/// The name of an error code, as RFC 9113 spells it (for messages).
pub fn error_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "an unknown error code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_header_is_nine_bytes_as_rfc_9113_lays_it_out() {
        let mut out = Vec::new();
        Head { len: 0x01_02_03, kind: HEADERS, flags: END_HEADERS | END_STREAM, stream: 0x8000_0005 }.write(&mut out);
        assert_eq!(out, [1, 2, 3, 1, 5, 0, 0, 0, 5], "the reserved bit is never sent");
        let h = Head::read(&[0, 0, 8, 7, 0, 0x80, 0, 0, 1]);
        assert_eq!(h, Head { len: 8, kind: GOAWAY, flags: 0, stream: 1 }, "the reserved bit is ignored");
    }

    #[test]
    fn the_client_frames_have_their_fixed_layouts() {
        let mut out = Vec::new();
        settings(&mut out, &[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)]);
        assert_eq!(out, [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0x40, 0, 0, 0]);
        out.clear();
        window_update(&mut out, 3, 1000);
        assert_eq!(out, [0, 0, 4, 8, 0, 0, 0, 0, 3, 0, 0, 3, 0xe8]);
        out.clear();
        rst_stream(&mut out, 1, CANCEL);
        assert_eq!(out, [0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8]);
        out.clear();
        goaway(&mut out, 7, NO_ERROR);
        assert_eq!(&out[..9], [0, 0, 8, 7, 0, 0, 0, 0, 0]);
        assert_eq!(u32_at(&out, 9), 7);
    }

    #[test]
    fn padding_and_priority_are_taken_off_a_frames_content() {
        let h = Head { len: 10, kind: HEADERS, flags: PADDED | PRIORITY_FLAG, stream: 1 };
        // pad length 2, 5 bytes of priority, 2 bytes of block, 2 bytes of padding.
        let payload = [2, 0, 0, 0, 0, 16, 0x82, 0x84, 0, 0];
        assert_eq!(content(&h, &payload), Some(6..8));
        let h = Head { len: 2, kind: DATA, flags: PADDED, stream: 1 };
        assert_eq!(content(&h, &[5, 0]), None, "padding longer than the frame");
        assert_eq!(content(&Head { len: 0, kind: DATA, flags: PADDED, stream: 1 }, &[]), None);
    }
}
