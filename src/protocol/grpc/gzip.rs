//! gRPC's gzip compression (`--grpc-compression gzip`): request messages compressed once, before the load; an
//! answer's compressed messages inflated as they come, to check them and their inflated size against
//! `--max-message` (as gRPC bounds what it decompresses), the inflated bytes thrown away.

use std::io::Write;

use super::{Fault, PREFIX};

/// `message` compressed and framed: the compressed flag, the compressed length, the gzip bytes.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::with_capacity(PREFIX + 32 + message.len() / 2), Default::default());
    gz.get_mut().extend_from_slice(&[1, 0, 0, 0, 0]);
    // Writing to a Vec cannot fail.
    let mut out = gz.write_all(message).and_then(|()| gz.finish()).unwrap_or_default();
    let len = (out.len() - PREFIX) as u32;
    out[1..PREFIX].copy_from_slice(&len.to_be_bytes());
    out
}

/// A compressed message inflated as its bytes come, the inflated bytes counted and thrown away: a call holds the
/// inflater's state (its 32 KiB window and buffer), never the message (4 MiB a call was kept whole until its end:
/// 274 MB with 64 calls in flight).
pub struct Inflating {
    // Multi: a message of several gzip members is one message (grpc-go reads them so).
    gz: flate2::write::MultiGzDecoder<Count>,
}

/// The inflated bytes' count, an error once past the bound.
struct Count {
    total: u64,
    max: u32,
}

impl Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.total += b.len() as u64;
        match self.total > u64::from(self.max) {
            true => Err(std::io::Error::other("past --max-message")),
            false => Ok(b.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::fmt::Debug for Inflating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Inflating({} bytes)", self.gz.get_ref().total)
    }
}

impl Inflating {
    /// A message to inflate to at most `max` bytes.
    pub fn new(max: u32) -> Inflating {
        Inflating { gz: flate2::write::MultiGzDecoder::new(Count { total: 0, max }) }
    }

    /// The message's next compressed bytes.
    pub fn feed(&mut self, gzip: &[u8]) -> Result<(), Fault> {
        self.gz.write_all(gzip).map_err(|e| self.fault(&e))
    }

    /// The message's last byte came: its inflated size, if the gzip stream was whole.
    pub fn end(mut self) -> Result<u64, Fault> {
        self.gz.try_finish().map_err(|e| self.fault(&e))?;
        Ok(self.gz.get_ref().total)
    }

    fn fault(&self, e: &std::io::Error) -> Fault {
        let Count { total, max } = *self.gz.get_ref();
        match total > u64::from(max) {
            true => Fault::TooLarge { len: total, max, inflated: true },
            false => Fault::BadMessage(format!("a gzip message that does not inflate: {e}")),
        }
    }
}

/// Inflates a compressed message's `gzip` bytes without keeping them: its inflated size, at most `max`.
pub fn inflated_len(gzip: &[u8], max: u32) -> Result<u64, Fault> {
    let mut inflating = Inflating::new(max);
    inflating.feed(gzip)?;
    inflating.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_message_inflates_back_to_its_size() {
        let message = [b'x'; 3000];
        let framed = frame(&message);
        assert_eq!(framed[0], 1, "the compressed flag");
        let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
        assert_eq!(len, framed.len() - PREFIX);
        assert!(len < 100, "3000 equal bytes compress: {len}");
        assert_eq!(inflated_len(&framed[PREFIX..], 4096), Ok(3000));
    }

    #[test]
    fn a_message_of_two_gzip_members_is_one_message() {
        let (a, b) = (frame(b"hello"), frame(b"world!"));
        let both = [&a[PREFIX..], &b[PREFIX..]].concat();
        assert_eq!(inflated_len(&both, 4096), Ok(11));
    }

    #[test]
    fn an_inflation_past_the_bound_or_not_gzip_fails() {
        let framed = frame(&[0u8; 100_000]);
        assert!(matches!(inflated_len(&framed[PREFIX..], 1024), Err(Fault::TooLarge { inflated: true, .. })));
        assert!(matches!(inflated_len(b"not gzip at all", 1024), Err(Fault::BadMessage(_))));
        let cut = &framed[PREFIX..framed.len() - 4];
        assert!(matches!(inflated_len(cut, 1 << 20), Err(Fault::BadMessage(_))), "a cut gzip stream");
    }
}
