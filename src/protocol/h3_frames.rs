//! HTTP/3's frames read as they come, in front of the `h3` crate: each frame's type and length are read before its
//! payload, so an unknown frame is skipped as it streams by, a frame past its bound is refused at its length, and
//! only frames of bounded size (or DATA, which h3 streams) reach h3, which buffers every other frame whole.
//!
//! Why a layer and not h3 alone: h3 0.0.8 waits for a frame's whole payload before it looks at its type (an unknown
//! frame announcing 2^61 bytes grew hakaru's memory by the server's trickle, 613 MB in 30 s) and applies
//! `max_field_section_size` only after the HEADERS frame is buffered. The layer passes the bytes h3 wants
//! untouched (slices of QUIC's own chunks), so what h3 decodes is what the server sent, less the frames RFC 9114
//! 9 says to ignore.

use std::collections::VecDeque;

use bytes::Bytes;

/// The most bytes of a control frame's payload (SETTINGS, GOAWAY, CANCEL_PUSH, MAX_PUSH_ID) read: a SETTINGS frame
/// of every known setting and some GREASE ones is under 200 bytes; 16 KiB leaves room for any server's.
pub const CONTROL_FRAME_MOST: u64 = 16 << 10;

/// The longest frame head: a type and a length, each a QUIC variable-length integer of at most 8 bytes.
const HEAD_MOST: usize = 16;

/// A frame the layer refuses, with the HTTP/3 code RFC 9114 gives that case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breach {
    /// A frame longer than hakaru reads (HEADERS or PUSH_PROMISE past `--max-header-list`, a control frame past
    /// [`CONTROL_FRAME_MOST`]): H3_EXCESSIVE_LOAD.
    TooLong { frame: &'static str, len: u64, most: u64 },
    /// One of HTTP/2's frame types HTTP/3 reserves (RFC 9114 7.2.8): H3_FRAME_UNEXPECTED.
    Reserved { ty: u64 },
    /// The stream ended inside a frame the layer was skipping (RFC 9114 7.1): H3_FRAME_ERROR.
    Truncated { left: u64 },
}

impl Breach {
    /// HTTP/3's code for it (RFC 9114 8.1).
    pub fn code(&self) -> u64 {
        match self {
            Breach::TooLong { .. } => 0x107,
            Breach::Reserved { .. } => 0x105,
            Breach::Truncated { .. } => 0x106,
        }
    }

    /// What the server sent, for the failure's text.
    pub fn text(&self) -> String {
        match self {
            Breach::TooLong { frame, len, most } => {
                format!("a {frame} frame of {len} bytes, past the {most} hakaru reads")
            }
            Breach::Reserved { ty } => format!("a frame of HTTP/2's type 0x{ty:x}, which HTTP/3 forbids"),
            Breach::Truncated { left } => format!("the stream ended {left} bytes short of a frame's end"),
        }
    }
}

/// What a frame's head decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// To h3: DATA (streamed by h3) or a frame within its bound.
    Pass,
    /// Unknown or reserved for GREASE: RFC 9114 9 says to ignore it, so its payload is read and dropped.
    Skip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Reading a frame's head (`held` bytes of it kept when it came across two chunks).
    Head,
    /// Inside a frame's payload, this many bytes left.
    Pass(u64),
    Skip(u64),
}

/// One stream's frames read as they come (a request stream's, or the control stream's after its type).
#[derive(Debug)]
pub struct Frames {
    /// The most bytes of a HEADERS or PUSH_PROMISE frame (`--max-header-list`).
    headers_most: u64,
    at: At,
    head: [u8; HEAD_MOST],
    held: usize,
    /// A frame was refused: nothing after it is read as frames (its payload would be read as heads).
    refused: Option<Breach>,
}

impl Frames {
    pub fn new(headers_most: u64) -> Frames {
        Frames { headers_most, at: At::Head, head: [0; HEAD_MOST], held: 0, refused: None }
    }

    /// Reads `chunk`: what h3 is to get of it goes to `out` (slices of it, and a frame head that came across two
    /// chunks as a copy of its own); unknown frames' bytes do not.
    pub fn feed(&mut self, chunk: Bytes, out: &mut VecDeque<Bytes>) -> Result<(), Breach> {
        if let Some(b) = &self.refused {
            return Err(b.clone());
        }
        let fed = self.read(chunk, out);
        if let Err(b) = &fed {
            self.refused = Some(b.clone());
        }
        fed
    }

    fn read(&mut self, chunk: Bytes, out: &mut VecDeque<Bytes>) -> Result<(), Breach> {
        let mut i = 0;
        // chunk[run..i] goes to h3.
        let mut run = 0;
        while i < chunk.len() {
            match self.at {
                At::Pass(left) => {
                    let n = left.min((chunk.len() - i) as u64);
                    i += n as usize;
                    self.at = if n == left { At::Head } else { At::Pass(left - n) };
                }
                At::Skip(left) => {
                    emit(&chunk, run, i, out);
                    let n = left.min((chunk.len() - i) as u64);
                    i += n as usize;
                    run = i;
                    self.at = if n == left { At::Head } else { At::Skip(left - n) };
                }
                At::Head if self.held == 0 => match head(&chunk[i..]) {
                    Some((ty, len, n)) => {
                        let fate = self.fate(ty, len)?;
                        if fate == Fate::Skip {
                            emit(&chunk, run, i, out);
                            run = i + n;
                        }
                        i += n;
                        self.enter(fate, len);
                    }
                    None => {
                        emit(&chunk, run, i, out);
                        let rest = &chunk[i..];
                        self.head[..rest.len()].copy_from_slice(rest);
                        self.held = rest.len();
                        i = chunk.len();
                        run = i;
                    }
                },
                At::Head => {
                    // A head across chunks: the bytes it needs, one at a time (at most 16).
                    self.head[self.held] = chunk[i];
                    self.held += 1;
                    i += 1;
                    run = i;
                    if let Some((ty, len, n)) = head(&self.head[..self.held]) {
                        debug_assert_eq!(n, self.held);
                        let fate = self.fate(ty, len)?;
                        if fate == Fate::Pass {
                            out.push_back(Bytes::copy_from_slice(&self.head[..n]));
                        }
                        self.held = 0;
                        self.enter(fate, len);
                    }
                }
            }
        }
        emit(&chunk, run, i, out);
        Ok(())
    }

    /// The stream ended: a frame head cut short goes to h3 as it came (h3 says the stream ended inside a frame); an
    /// end inside a skipped frame, which h3 never sees, is the layer's to refuse.
    pub fn end(&mut self, out: &mut VecDeque<Bytes>) -> Result<(), Breach> {
        if self.held > 0 {
            out.push_back(Bytes::copy_from_slice(&self.head[..self.held]));
            self.held = 0;
        }
        match self.at {
            At::Skip(left) => Err(Breach::Truncated { left }),
            _ => Ok(()),
        }
    }

    fn enter(&mut self, fate: Fate, len: u64) {
        self.at = match (fate, len) {
            (_, 0) => At::Head,
            (Fate::Pass, n) => At::Pass(n),
            (Fate::Skip, n) => At::Skip(n),
        };
    }

    /// What a frame of type `ty` and `len` bytes does (RFC 9114 7.2).
    fn fate(&self, ty: u64, len: u64) -> Result<Fate, Breach> {
        let bounded = |frame: &'static str, most: u64| match len <= most {
            true => Ok(Fate::Pass),
            false => Err(Breach::TooLong { frame, len, most }),
        };
        match ty {
            0x0 => Ok(Fate::Pass),
            0x1 => bounded("HEADERS", self.headers_most),
            0x5 => bounded("PUSH_PROMISE", self.headers_most),
            0x3 => bounded("CANCEL_PUSH", CONTROL_FRAME_MOST),
            0x4 => bounded("SETTINGS", CONTROL_FRAME_MOST),
            0x7 => bounded("GOAWAY", CONTROL_FRAME_MOST),
            0xd => bounded("MAX_PUSH_ID", CONTROL_FRAME_MOST),
            0x2 | 0x6 | 0x8 | 0x9 => Err(Breach::Reserved { ty }),
            _ => Ok(Fate::Skip),
        }
    }
}

/// `chunk[from..to]` to h3, when not empty.
fn emit(chunk: &Bytes, from: usize, to: usize, out: &mut VecDeque<Bytes>) {
    if to > from {
        out.push_back(chunk.slice(from..to));
    }
}

/// A QUIC variable-length integer at the start of `b` and its length (RFC 9000 16), None when cut short.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let n = 1usize << (first >> 6);
    let bytes = b.get(..n)?;
    let value = bytes[1..].iter().fold(u64::from(first & 0x3f), |v, &x| (v << 8) | u64::from(x));
    Some((value, n))
}

/// A frame head at the start of `b`: its type, its payload's length and the head's own length.
fn head(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (ty, a) = varint(b)?;
    let (len, c) = varint(&b[a..])?;
    Some((ty, len, a + c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(v: u64) -> Vec<u8> {
        match v {
            0..=63 => vec![v as u8],
            64..=16383 => ((v as u16) | 0x4000).to_be_bytes().to_vec(),
            16384..=0x3fff_ffff => ((v as u32) | 0x8000_0000).to_be_bytes().to_vec(),
            _ => (v | 0xc000_0000_0000_0000).to_be_bytes().to_vec(),
        }
    }

    fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
        let mut f = var(ty);
        f.extend(var(payload.len() as u64));
        f.extend_from_slice(payload);
        f
    }

    /// What h3 gets of `bytes` fed in pieces of `size`.
    fn through(bytes: &[u8], size: usize) -> Result<Vec<u8>, Breach> {
        let mut frames = Frames::new(1000);
        let mut out = VecDeque::new();
        for piece in bytes.chunks(size) {
            frames.feed(Bytes::copy_from_slice(piece), &mut out)?;
        }
        frames.end(&mut out)?;
        Ok(out.into_iter().flat_map(|b| b.to_vec()).collect())
    }

    #[test]
    fn known_frames_pass_whole_and_unknown_ones_are_dropped_in_any_pieces() {
        let headers = frame(0x1, b"qpack block");
        let data = frame(0x0, &[7; 300]);
        let unknown = frame(0x21, &[9; 5000]);
        let grease = frame(0x1f * 7 + 0x21, b"");
        let sent = [headers.clone(), unknown, data.clone(), grease, frame(0x0, b"")].concat();
        let wanted = [headers, data, frame(0x0, b"")].concat();
        for size in [1, 2, 3, 7, 64, 1000, sent.len()] {
            assert_eq!(through(&sent, size).unwrap(), wanted, "pieces of {size}");
        }
    }

    #[test]
    fn a_frame_past_its_bound_is_refused_at_its_length_before_its_payload() {
        // 2^61 announced: refused on the head alone.
        let mut head = var(0x1);
        head.extend(var(1 << 61));
        assert_eq!(through(&head, 1), Err(Breach::TooLong { frame: "HEADERS", len: 1 << 61, most: 1000 }));
        let settings = frame(0x4, &vec![0; CONTROL_FRAME_MOST as usize + 1]);
        assert!(matches!(through(&settings, 100), Err(Breach::TooLong { frame: "SETTINGS", .. })));
        assert_eq!(through(&frame(0x2, b""), 1), Err(Breach::Reserved { ty: 2 }));
        assert_eq!(Breach::Reserved { ty: 2 }.code(), 0x105);
        // Within the bound it passes.
        assert_eq!(through(&frame(0x1, &[1; 1000]), 10).unwrap(), frame(0x1, &[1; 1000]));
    }

    #[test]
    fn an_unknown_frame_of_two_to_the_sixty_one_bytes_is_skipped_as_it_streams() {
        let mut frames = Frames::new(1000);
        let mut out = VecDeque::new();
        let mut head = var(0x21);
        head.extend(var(1 << 61));
        frames.feed(Bytes::from(head), &mut out).unwrap();
        for _ in 0..100 {
            frames.feed(Bytes::from(vec![0u8; 1 << 16]), &mut out).unwrap();
        }
        assert!(out.is_empty());
        assert_eq!(frames.at, At::Skip((1 << 61) - 100 * (1 << 16)));
    }

    #[test]
    fn an_end_inside_a_skipped_frame_is_refused_and_a_refusal_holds() {
        let sent = [frame(0x0, b"hi"), var(0x21), var(10), vec![0; 3]].concat();
        assert_eq!(through(&sent, 4), Err(Breach::Truncated { left: 7 }));
        let mut frames = Frames::new(10);
        let mut out = VecDeque::new();
        let big = [var(0x1), var(11)].concat();
        assert!(frames.feed(Bytes::from(big), &mut out).is_err());
        // What follows is the refused frame's payload, never read as frames.
        assert!(frames.feed(Bytes::from(frame(0x0, b"x")), &mut out).is_err());
    }

    #[test]
    fn a_head_cut_by_the_streams_end_reaches_h3_as_it_came() {
        let cut = &var(1 << 20)[..2];
        assert_eq!(through(cut, 1).unwrap(), cut);
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(varint(&[0x80, 0, 0]), None);
    }
}
