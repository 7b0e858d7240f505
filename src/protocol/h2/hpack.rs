//! The HPACK decoder (RFC 7541): header blocks into (name, value) pairs, with the dynamic table the peer's
//! encoder keeps in step with. Requests need no encoder at run time: their blocks are built before the run as
//! literals that the peer does not index (see `request.rs`), so the client's table state never changes.
//!
//! Names and values are handed to a callback as slices (of the block, the table, or a Huffman scratch buffer), so
//! a response costs no allocation unless the peer adds to the dynamic table.

use std::collections::VecDeque;

use super::huffman;

/// The static table (RFC 7541 Appendix A), index 1 first.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The dynamic table's size when the client says nothing of it (SETTINGS_HEADER_TABLE_SIZE's initial value).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// Why a header block cannot be decoded: a COMPRESSION_ERROR, fatal to the connection (RFC 9113 4.3).
#[derive(Debug, PartialEq, Eq)]
pub struct HpackError(pub &'static str);

/// One entry of the dynamic table: name and value in one allocation.
#[derive(Debug)]
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    /// Its size as RFC 7541 4.1 counts it.
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

/// A connection's decoder: one per connection, for its whole life.
#[derive(Debug)]
pub struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    size: usize,
    /// The size the peer chose (at most `limit`).
    max_size: usize,
    /// The most the client allows (its SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
    /// Huffman-decoded name and value.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DEFAULT_TABLE_SIZE)
    }
}

/// Where a string of the block lies once read: in the block, or decoded into a scratch buffer.
#[derive(Clone, Copy)]
enum Str {
    Raw(usize, usize),
    Huffman,
    /// A name taken from the static or dynamic table (checked to exist).
    Index(usize),
}

impl Decoder {
    pub fn new(limit: usize) -> Decoder {
        Decoder { table: VecDeque::new(), size: 0, max_size: limit, limit, name: Vec::new(), value: Vec::new() }
    }

    /// The dynamic table's size now (RFC 7541 4.1).
    pub fn table_size(&self) -> usize {
        self.size
    }

    /// Decodes one whole header block, calling `each(name, value)` for every header in order.
    pub fn decode(&mut self, block: &[u8], mut each: impl FnMut(&[u8], &[u8])) -> Result<(), HpackError> {
        let mut at = 0;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                // Indexed header field.
                let index = integer(block, &mut at, 7)?;
                let (name, value) = self.field(index)?;
                each(name, value);
            } else if b & 0xc0 == 0x40 {
                // Literal with incremental indexing.
                let index = integer(block, &mut at, 6)?;
                let (name, value) = self.literal(block, &mut at, index)?;
                let entry = {
                    let name = self.resolve(block, name, true);
                    let value = self.resolve(block, value, false);
                    let mut bytes = Vec::with_capacity(name.len() + value.len());
                    bytes.extend_from_slice(name);
                    bytes.extend_from_slice(value);
                    Entry { bytes: bytes.into_boxed_slice(), name_len: name.len() }
                };
                each(entry.name(), entry.value());
                self.insert(entry);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update.
                let size = integer(block, &mut at, 5)?;
                if size > self.limit {
                    return Err(HpackError("a dynamic table size update above the size allowed"));
                }
                self.max_size = size;
                self.evict(0);
            } else {
                // Literal without indexing (0000) or never indexed (0001).
                let index = integer(block, &mut at, 4)?;
                let (name, value) = self.literal(block, &mut at, index)?;
                let name = self.resolve(block, name, true);
                let value = self.resolve(block, value, false);
                each(name, value);
            }
        }
        Ok(())
    }

    /// The name and value at `index` of the static then dynamic table.
    fn field(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => match self.table.get(index - 62) {
                Some(e) => Ok((e.name(), e.value())),
                None => Err(HpackError("an index past the dynamic table")),
            },
        }
    }

    /// Reads a literal's name (indexed when `index` > 0, else a string) and value. A name from the table is only
    /// looked at before the table changes: an insertion copies it first.
    fn literal(&mut self, block: &[u8], at: &mut usize, index: usize) -> Result<(Str, Str), HpackError> {
        let name = if index == 0 {
            self.string(block, at, true)?
        } else {
            self.field(index)?;
            Str::Index(index)
        };
        let value = self.string(block, at, false)?;
        Ok((name, value))
    }

    /// Reads a string literal: raw (its place in the block) or Huffman-coded (decoded into the name or value
    /// buffer).
    fn string(&mut self, block: &[u8], at: &mut usize, is_name: bool) -> Result<Str, HpackError> {
        let huffman = block.get(*at).ok_or(HpackError("a string past the end of the block"))? & 0x80 != 0;
        let len = integer(block, at, 7)?;
        let end = at.checked_add(len).filter(|&e| e <= block.len()).ok_or(HpackError("a string past the end"))?;
        let start = *at;
        *at = end;
        if !huffman {
            return Ok(Str::Raw(start, end));
        }
        let out = if is_name { &mut self.name } else { &mut self.value };
        out.clear();
        huffman::decode(&block[start..end], out).map_err(|_| HpackError("a bad Huffman string"))?;
        Ok(Str::Huffman)
    }

    fn resolve<'a>(&'a self, block: &'a [u8], s: Str, is_name: bool) -> &'a [u8] {
        match s {
            Str::Raw(a, b) => &block[a..b],
            Str::Huffman if is_name => &self.name,
            Str::Huffman => &self.value,
            Str::Index(i) => self.field(i).map_or(&[][..], |(n, _)| n),
        }
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            // An entry larger than the table empties it and is not added (RFC 7541 4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(entry);
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }
}

/// Reads an integer with an `n`-bit prefix (RFC 7541 5.1) at `at`, moving past it. Bounded at 2^28: no header
/// block of the bounded size has a length or index near it, and a longer run of continuation bytes is hostile.
pub fn integer(block: &[u8], at: &mut usize, n: u8) -> Result<usize, HpackError> {
    let mask = (1usize << n) - 1;
    let first = *block.get(*at).ok_or(HpackError("an integer past the end"))? as usize & mask;
    *at += 1;
    if first < mask {
        return Ok(first);
    }
    let mut value = mask;
    let mut shift = 0;
    loop {
        let b = *block.get(*at).ok_or(HpackError("an integer past the end"))? as usize;
        *at += 1;
        value += (b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 21 {
            return Err(HpackError("an integer too large"));
        }
    }
}

/// Appends an integer with an `n`-bit prefix whose other bits are `flags`.
pub fn put_integer(out: &mut Vec<u8>, flags: u8, n: u8, value: usize) {
    let mask = (1usize << n) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 128 {
        out.push((rest % 128 + 128) as u8);
        rest /= 128;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn headers(d: &mut Decoder, block: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(&hex(block), |n, v| {
            out.push((String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap()))
        })
        .unwrap();
        out
    }

    fn table(d: &Decoder) -> Vec<(String, String)> {
        d.table
            .iter()
            .map(|e| (String::from_utf8(e.name().to_vec()).unwrap(), String::from_utf8(e.value().to_vec()).unwrap()))
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn rfc_7541_c1_integers() {
        let mut out = Vec::new();
        put_integer(&mut out, 0, 5, 10);
        assert_eq!(out, [0x0a]);
        out.clear();
        put_integer(&mut out, 0, 5, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        assert_eq!(integer(&out, &mut 0, 5), Ok(1337));
        assert_eq!(integer(&[0x2a], &mut 0, 8), Ok(42));
        assert!(integer(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f], &mut 0, 5).is_err(), "bounded");
        assert!(integer(&[0x1f, 0x9a], &mut 0, 5).is_err(), "cut short");
    }

    #[test]
    fn rfc_7541_c2_single_fields() {
        let mut d = Decoder::default();
        let h = headers(&mut d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        assert_eq!(h, pairs(&[("custom-key", "custom-header")]));
        assert_eq!(d.table_size(), 55);
        let mut d = Decoder::default();
        assert_eq!(headers(&mut d, "040c 2f73 616d 706c 652f 7061 7468"), pairs(&[(":path", "/sample/path")]));
        assert_eq!(d.table_size(), 0);
        assert_eq!(headers(&mut d, "1008 7061 7373 776f 7264 0673 6563 7265 74"), pairs(&[("password", "secret")]));
        assert_eq!(d.table_size(), 0, "never indexed");
        assert_eq!(headers(&mut d, "82"), pairs(&[(":method", "GET")]));
    }

    /// C.3 (without Huffman) and C.4 (with): three requests on one connection, the table carried over.
    #[test]
    fn rfc_7541_c3_and_c4_requests() {
        for (blocks, name) in [
            (
                [
                    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                    "8286 84be 5808 6e6f 2d63 6163 6865",
                    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                ],
                "C.3",
            ),
            (
                [
                    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                    "8286 84be 5886 a8eb 1064 9cbf",
                    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                ],
                "C.4",
            ),
        ] {
            let mut d = Decoder::default();
            let first = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")];
            assert_eq!(headers(&mut d, blocks[0]), pairs(&first), "{name}");
            assert_eq!(d.table_size(), 57);
            let mut second = first.to_vec();
            second.push(("cache-control", "no-cache"));
            assert_eq!(headers(&mut d, blocks[1]), pairs(&second), "{name}");
            assert_eq!(d.table_size(), 110);
            let third = [
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ];
            assert_eq!(headers(&mut d, blocks[2]), pairs(&third), "{name}");
            assert_eq!(d.table_size(), 164);
            assert_eq!(
                table(&d),
                pairs(&[
                    ("custom-key", "custom-value"),
                    ("cache-control", "no-cache"),
                    (":authority", "www.example.com")
                ])
            );
        }
    }

    /// C.5 (without Huffman) and C.6 (with): three responses in a 256-byte table, entries evicted.
    #[test]
    fn rfc_7541_c5_and_c6_responses_with_eviction() {
        for (blocks, name) in [
            (
                [
                    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 \
                     3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                    "4803 3330 37c1 c0bf",
                    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a \
                     6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d \
                     6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
                ],
                "C.5",
            ),
            (
                [
                    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d \
                     29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                    "4883 640e ffc1 c0bf",
                    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d \
                     d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 \
                     3d50 07",
                ],
                "C.6",
            ),
        ] {
            let mut d = Decoder::new(256);
            let date = "Mon, 21 Oct 2013 20:13:21 GMT";
            let first = [
                (":status", "302"),
                ("cache-control", "private"),
                ("date", date),
                ("location", "https://www.example.com"),
            ];
            assert_eq!(headers(&mut d, blocks[0]), pairs(&first), "{name}");
            assert_eq!(d.table_size(), 222);
            let mut second = first;
            second[0] = (":status", "307");
            assert_eq!(headers(&mut d, blocks[1]), pairs(&second), "{name}");
            assert_eq!(d.table_size(), 222);
            let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
            let third = [
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                ("set-cookie", cookie),
            ];
            assert_eq!(headers(&mut d, blocks[2]), pairs(&third), "{name}");
            assert_eq!(d.table_size(), 215);
            assert_eq!(
                table(&d),
                pairs(&[
                    ("set-cookie", cookie),
                    ("content-encoding", "gzip"),
                    ("date", "Mon, 21 Oct 2013 20:13:22 GMT")
                ])
            );
        }
    }

    #[test]
    fn hostile_blocks_are_errors_not_panics() {
        let mut d = Decoder::default();
        for bad in [&[0x80][..], &[0xff, 0x80], &[0x40, 0x85, 0x61], &[0x3f, 0xe2, 0x1f], &[0x00, 0x7f], &[0xbe]] {
            assert!(d.decode(bad, |_, _| {}).is_err(), "{bad:?}");
        }
        // A size update within the limit empties what no longer fits.
        assert!(d.decode(&[0x20], |_, _| {}).is_ok());
    }

    #[test]
    fn random_and_mutated_blocks_end_ok_or_in_an_error_within_bounds() {
        use rand::{RngExt as _, SeedableRng as _};
        // Valid blocks of RFC 7541 C.3 to C.6 (some Huffman-coded), to mutate.
        let seeds: Vec<Vec<u8>> = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad \
             1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4803 3330 37c1 c0bf",
        ]
        .iter()
        .map(|b| hex(b))
        .collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7541);
        let (mut ok, mut err) = (0, 0);
        for case in 0..20_000 {
            // One decoder for many blocks, as a connection has: the table carries what earlier blocks left.
            let mut d = Decoder::default();
            for _ in 0..4 {
                let mut block = if case % 3 == 0 {
                    (0..rng.random_range(0..48)).map(|_| rng.random()).collect()
                } else {
                    seeds[rng.random_range(0..seeds.len())].clone()
                };
                for _ in 0..rng.random_range(0..4) {
                    if block.is_empty() {
                        break;
                    }
                    let i = rng.random_range(0..block.len());
                    match rng.random_range(0..3) {
                        0 => block[i] ^= 1 << rng.random_range(0..8),
                        1 => block[i] = rng.random(),
                        _ => block.truncate(i),
                    }
                }
                // A field is never larger than the table or what its block can hold (Huffman: 5 bits a byte at best).
                let bound = DEFAULT_TABLE_SIZE.max(block.len() * 8 / 5 + 1);
                let result = d.decode(&block, |name, value| {
                    assert!(name.len() + value.len() <= bound, "{} bytes from {block:?}", name.len() + value.len());
                });
                match result {
                    Ok(()) => ok += 1,
                    Err(HpackError(why)) => {
                        assert!(!why.is_empty());
                        err += 1;
                    }
                }
                assert!(d.table_size() <= DEFAULT_TABLE_SIZE, "the table stays within its size");
                assert!(d.name.capacity() <= bound.max(64) * 2 && d.value.capacity() <= bound.max(64) * 2);
            }
        }
        assert!(ok > 10_000 && err > 10_000, "{ok} blocks decoded, {err} refused");
    }
}
