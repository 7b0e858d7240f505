//! HPACK's Huffman code (RFC 7541 Appendix B), decoded. The code is canonical (codes of a length are consecutive
//! and follow the shorter ones), so the code lengths alone give it: a table of limits per length, built at compile
//! time, finds each symbol's length in a few comparisons of a 32-bit window, with no tree and no allocation.

/// Bits in the code of each symbol 0..=255 and of EOS (256), from RFC 7541 Appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
    28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
    10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
    5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
    22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
    22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
    27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
    27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;
const LONGEST: usize = 30;

/// The canonical code's tables: for each length, its first code, where its symbols start in `symbols`, and the
/// first 32-bit window (code left-aligned) that is not a code of this length or shorter.
struct Canon {
    first: [u32; LONGEST + 1],
    offset: [u16; LONGEST + 1],
    limit: [u64; LONGEST + 1],
    symbols: [u16; 257],
}

const fn build() -> Canon {
    let mut count = [0u16; LONGEST + 1];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut c = Canon { first: [0; LONGEST + 1], offset: [0; LONGEST + 1], limit: [0; LONGEST + 1], symbols: [0; 257] };
    let mut code = 0u32;
    let mut at = 0u16;
    let mut len = 1;
    while len <= LONGEST {
        c.first[len] = code;
        c.offset[len] = at;
        c.limit[len] = ((code + count[len] as u32) as u64) << (32 - len);
        // Symbols of this length in symbol order: the canonical order.
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                c.symbols[at as usize] = s as u16;
                at += 1;
            }
            s += 1;
        }
        code = (code + count[len] as u32) << 1;
        len += 1;
    }
    c
}

static CANON: Canon = build();

/// Why a Huffman string is not valid (RFC 7541 5.2): each is a COMPRESSION_ERROR.
#[derive(Debug, PartialEq, Eq)]
pub enum HuffmanError {
    /// The string holds the EOS symbol.
    Eos,
    /// The padding is longer than 7 bits or not the most significant bits of EOS (all ones).
    Padding,
}

/// Appends the decoded bytes of `input` to `out`.
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let c = &CANON;
    // Bits not yet decoded, the oldest in the highest places of the low `bits` bits.
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut next = 0;
    loop {
        while bits <= 56 && next < input.len() {
            acc = (acc << 8) | u64::from(input[next]);
            bits += 8;
            next += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        // The next 32 bits, left-aligned (zeros after the end of the input).
        let window = if bits >= 32 { (acc >> (bits - 32)) & 0xffff_ffff } else { (acc << (32 - bits)) & 0xffff_ffff };
        let mut len = 5;
        while len < LONGEST && window >= c.limit[len] {
            len += 1;
        }
        if len as u32 > bits {
            // Not a whole symbol left: what remains must be padding, at most 7 one bits.
            let mask = (1u64 << bits) - 1;
            return if bits <= 7 && acc & mask == mask { Ok(()) } else { Err(HuffmanError::Padding) };
        }
        let code = (window >> (32 - len)) as u32;
        let symbol = c.symbols[(c.offset[len] as u32 + code - c.first[len]) as usize];
        if symbol == EOS {
            return Err(HuffmanError::Eos);
        }
        out.push(symbol as u8);
        bits -= len as u32;
        acc &= (1u64 << bits) - 1;
    }
}

#[cfg(test)]
pub(super) fn encode(input: &[u8]) -> Vec<u8> {
    // Test-only encoder: codes from the canonical tables, to round-trip every byte.
    let c = &CANON;
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u64, 0u32);
    for &b in input {
        let len = LENGTHS[b as usize] as usize;
        let rank = c.symbols[c.offset[len] as usize..].iter().position(|&s| s == u16::from(b)).unwrap() as u32;
        acc = (acc << len) | u64::from(c.first[len] + rank);
        bits += len as u32;
        while bits >= 8 {
            out.push((acc >> (bits - 8)) as u8);
            bits -= 8;
            acc &= (1u64 << bits) - 1;
        }
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | ((1u64 << (8 - bits)) - 1)) as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn text(input: &[u8]) -> String {
        let mut out = Vec::new();
        decode(input, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rfc_7541_appendix_c4_and_c6_strings_decode() {
        assert_eq!(text(&hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff")), "www.example.com");
        assert_eq!(text(&hex("a8eb 1064 9cbf")), "no-cache");
        assert_eq!(text(&hex("25a8 49e9 5ba9 7d7f")), "custom-key");
        assert_eq!(text(&hex("25a8 49e9 5bb8 e8b4 bf")), "custom-value");
        assert_eq!(text(&hex("6402")), "302");
        assert_eq!(text(&hex("aec3 771a 4b")), "private");
        assert_eq!(
            text(&hex("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff")),
            "Mon, 21 Oct 2013 20:13:21 GMT"
        );
        assert_eq!(text(&hex("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3")), "https://www.example.com");
    }

    #[test]
    fn every_byte_round_trips_and_the_canonical_code_matches_the_rfc() {
        // ' ' is 0x14 in 6 bits and 'a' 0x3 in 5 bits (RFC 7541 Appendix B).
        assert_eq!(encode(b" "), [0x53]);
        assert_eq!(encode(b"a"), [0x1f]);
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        decode(&encode(&all), &mut out).unwrap();
        assert_eq!(out, all);
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        let mut out = Vec::new();
        // 'a' (00011) then 3 zero bits: padding must be ones.
        assert_eq!(decode(&[0x18], &mut out), Err(HuffmanError::Padding));
        // A whole byte of ones after a symbol is 8 bits of padding: too long.
        assert_eq!(decode(&[0x1f, 0xff], &mut out), Err(HuffmanError::Padding));
        // EOS itself: 30 one bits.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut out), Err(HuffmanError::Eos));
    }
}
