//! gRPC's gzip compression (`--grpc-compression gzip`): request messages compressed once, before the load; an
//! answer's compressed messages inflated as they end, to check them and their inflated size against
//! `--max-message` (as gRPC bounds what it decompresses), the inflated bytes thrown away.

use std::io::{Read, Write};

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

/// Inflates a compressed message's `gzip` bytes without keeping them: its inflated size, at most `max`.
pub fn inflated_len(gzip: &[u8], max: u32) -> Result<u64, Fault> {
    let mut inflate = flate2::read::GzDecoder::new(gzip);
    let mut buf = [0u8; 8192];
    let mut total = 0u64;
    loop {
        match inflate.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                if total > u64::from(max) {
                    return Err(Fault::TooLarge { len: total, max, inflated: true });
                }
            }
            Err(e) => return Err(Fault::BadMessage(format!("a gzip message that does not inflate: {e}"))),
        }
    }
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
    fn an_inflation_past_the_bound_or_not_gzip_fails() {
        let framed = frame(&[0u8; 100_000]);
        assert!(matches!(inflated_len(&framed[PREFIX..], 1024), Err(Fault::TooLarge { inflated: true, .. })));
        assert!(matches!(inflated_len(b"not gzip at all", 1024), Err(Fault::BadMessage(_))));
        let cut = &framed[PREFIX..framed.len() - 4];
        assert!(matches!(inflated_len(cut, 1 << 20), Err(Fault::BadMessage(_))), "a cut gzip stream");
    }
}
