//! A seeded-random fuzz harness for every parser of outside input: pattern files (JSON and plain text), the HTTP
//! response decoder, URLs and host:port, durations and sizes, status sets and objectives; and answers that never
//! end: endless frames fed to the decoders, slow-drip and endless-frame servers run against the hakaru binary.
//! Each parser gets a fixed number of cases mutated from valid inputs, so `cargo test` runs it in seconds;
//! `HAKARU_FUZZ_CASES` raises the number and `HAKARU_FUZZ_SEED` repeats a run (scripts/fuzz.sh runs it long). No
//! case may panic; where it is cheap, what parses must round-trip. Inputs that once panicked are kept below as
//! fixed cases.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use common::endless::{FRAMES, on_time, slowest_failure, timeout_kept};

use hakaru::base::target::{ParsedUrl, split_host_port};
use hakaru::base::units::{parse_duration, parse_size};
use hakaru::metrics::StatusSet;
use hakaru::plan::slo::Slo;
use hakaru::protocol::http::HttpDecoder;
use hakaru::protocol::{Answer, DecodeError, ResponseDecoder};
use rand::{RngExt as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Cases per parser: 2,000 in `cargo test`, more with HAKARU_FUZZ_CASES.
fn cases() -> usize {
    std::env::var("HAKARU_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000)
}

/// The seed of the run: fixed in `cargo test` so a failure repeats; scripts/fuzz.sh passes a new one each run.
fn seed() -> u64 {
    std::env::var("HAKARU_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x6861_6b61_7275)
}

/// One random generator per parser, so adding a parser does not change the cases of the others.
fn rng_for(parser: &str) -> ChaCha8Rng {
    let name = parser.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    ChaCha8Rng::seed_from_u64(seed() ^ name)
}

/// Bytes that parsers treat specially, spliced into inputs more often than chance would.
const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\0",
    b"\xEF\xBB\xBF",
    b"\xFF",
    b" ",
    b"\t",
    b",",
    b":",
    b"-",
    b"%",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b"e",
    b"1e300",
    b"-1",
    b"0",
    b"65536",
    b"99999999999999999999",
    b"NaN",
    b"inf",
    b".",
    b"ms",
    b"us",
    b"\xC3\xA9",
    b"\xE6\x9D\xB1",
    b"<=",
    b"<",
    b"p",
    b"chunked",
    b"Content-Length: ",
    b"0\r\n\r\n",
    b"ffffffffffffffffff",
];

/// A random edit of `input`: bytes flipped, inserted, deleted, duplicated, or special tokens spliced in.
fn mutate(rng: &mut ChaCha8Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = if out.is_empty() { 0 } else { rng.random_range(0..=out.len()) };
        match rng.random_range(0..7) {
            0 if at < out.len() => out[at] ^= 1 << rng.random_range(0..8),
            1 => out.insert(at, rng.random::<u8>()),
            2 if at < out.len() => {
                let end = rng.random_range(at..=out.len().min(at + 8));
                out.drain(at..end);
            }
            3 if at < out.len() => {
                let end = rng.random_range(at..=out.len().min(at + 16));
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy);
            }
            4 => out.truncate(at),
            _ => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())];
                out.splice(at..at, token.iter().copied());
            }
        }
    }
    out
}

/// The input as a Rust byte string, to paste into the fixed cases.
fn literal(input: &[u8]) -> String {
    format!("b\"{}\"", input.escape_ascii())
}

/// Runs `check` on `n` inputs mutated from `valid` (and on `valid` itself and the fixed cases), turning a panic
/// into a failure that names the parser, the seed and the input.
fn fuzz(parser: &str, valid: &[&[u8]], fixed: &[&[u8]], check: impl Fn(&[u8])) {
    let mut rng = rng_for(parser);
    let mut inputs: Vec<Vec<u8>> = valid.iter().chain(fixed).map(|v| v.to_vec()).collect();
    inputs.extend((0..cases()).map(|_| {
        let base = valid[rng.random_range(0..valid.len())];
        mutate(&mut rng, base)
    }));
    for (i, input) in inputs.iter().enumerate() {
        if catch_unwind(AssertUnwindSafe(|| check(input))).is_err() {
            panic!(
                "{parser}: case {i} panicked (HAKARU_FUZZ_SEED={} HAKARU_FUZZ_CASES={}); input {}",
                seed(),
                cases(),
                literal(input)
            );
        }
    }
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

#[test]
fn pattern_files_never_panic_and_what_they_give_is_usable() {
    let valid: &[&[u8]] = &[
        b"/a\n/b?q=1\n# comment\nhttp://127.0.0.1:81/c\n",
        b"\xEF\xBB\xBF/only\n",
        br#"{"with-query": {"frequency": 0.9, "method": "get", "patterns": [{"path": "/d/select?q=A"}]},
            "without-query": {"frequency": 0.1, "patterns": ["/d/select?limit=10"]}}"#,
        br#"[{"host": "a", "port": 81, "timeout": 2, "headers": {"X-A": "1"},
              "patterns": [{"path": "/p", "host": "b", "body": {"k": 1}}, "/q"]}, ["/r"]]"#,
        br#"{"pattern": "/only", "timeout": 0.5, "method": "POST", "body": "x=1"}"#,
    ];
    let fixed: &[&[u8]] = &[
        br#"{"timeout": 1e300, "patterns": ["/a"]}"#,
        br#"{"timeout": 1e19, "patterns": ["/a"]}"#,
        br#"{"port": 70000, "patterns": ["/a"]}"#,
        br#"{"a": {"frequency": 1e308, "patterns": ["/a"]}, "b": {"frequency": 1e308, "patterns": ["/b"]}}"#,
    ];
    fuzz("patterns", valid, fixed, |input| {
        let Ok(set) = hakaru::patterns::parse(&text(input)) else { return };
        let total: f64 = set.groups.iter().map(|g| g.frequency).sum();
        assert!(total.is_finite() && total > 0.0, "frequencies {total}");
        for p in set.groups.iter().flat_map(|g| &g.patterns) {
            assert!(!p.path.is_empty());
            if let Some(t) = p.fields().timeout {
                // The plan turns it into a Duration and adds it to a clock: it must fit.
                assert!((0.001..=86_400.0).contains(&t), "timeout {t}");
                let _ = Duration::from_secs_f64(t);
            }
            assert_ne!(p.fields().port, Some(0));
        }
    });
}

/// What decoding one answer gave: the answer, or the kind of error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Answer(Answer, bool),
    Malformed,
    Truncated,
    LineTooLong,
    /// A streamed answer's own faults (`--events`), which a decoder without an events reader never gives.
    Stream,
}

/// The kind of a decoding error.
fn classify(e: DecodeError) -> Outcome {
    match e {
        DecodeError::Malformed(_) => Outcome::Malformed,
        DecodeError::Truncated(_) => Outcome::Truncated,
        DecodeError::LineTooLong(_) => Outcome::LineTooLong,
        DecodeError::StreamCut(_) | DecodeError::StreamTooLong(_) => Outcome::Stream,
    }
}

/// Decodes `response` fed in pieces cut at `cuts`, closing the connection after the last piece.
fn decode(response: &[u8], cuts: &[usize], head: bool) -> Outcome {
    let mut d = HttpDecoder::default();
    d.start(head);
    let mut start = 0;
    for &end in cuts.iter().chain([response.len()].iter()) {
        match d.feed(&response[start..end]) {
            Ok(Some(answer)) => return Outcome::Answer(answer, d.stray().is_some()),
            Ok(None) => {}
            Err(e) => return classify(e),
        }
        start = end;
    }
    match d.eof() {
        Ok(answer) => Outcome::Answer(answer, false),
        Err(e) => classify(e),
    }
}

/// A valid response with random framing: Content-Length, chunked (with extensions and trailers), until close,
/// no body (204, 304, HEAD), with or without an interim 1xx before it.
fn valid_response(rng: &mut ChaCha8Rng) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    if rng.random_range(0..5) == 0 {
        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let status = [200, 201, 204, 301, 304, 404, 500, 503][rng.random_range(0..8)];
    let version = if rng.random_range(0..4) == 0 { "1.0" } else { "1.1" };
    out.extend_from_slice(format!("HTTP/{version} {status} Reason\r\nServer: fuzz\r\n").as_bytes());
    if rng.random_range(0..3) == 0 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    let head = rng.random_range(0..6) == 0;
    let body: Vec<u8> = (0..rng.random_range(0..300)).map(|_| rng.random_range(b'a'..=b'z')).collect();
    match rng.random_range(0..3) {
        _ if status == 204 || status == 304 => out.extend_from_slice(b"\r\n"),
        0 => {
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            if !head {
                out.extend_from_slice(&body);
            }
        }
        1 => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            if !head {
                for piece in body.chunks(rng.random_range(1..64)) {
                    let ext = if rng.random_range(0..4) == 0 { ";x=y" } else { "" };
                    out.extend_from_slice(format!("{:x}{ext}\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(if rng.random_range(0..3) == 0 { b"0\r\nX-T: 1\r\n\r\n" } else { b"0\r\n\r\n" });
            }
        }
        _ => {
            // No length: the body ends when the server closes.
            out.extend_from_slice(b"\r\n");
            if !head {
                out.extend_from_slice(&body);
            }
        }
    }
    (out, head)
}

fn random_cuts(rng: &mut ChaCha8Rng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..rng.random_range(0..6)).map(|_| rng.random_range(0..=len)).collect();
    if rng.random_range(0..4) == 0 {
        // Byte by byte now and then: every state boundary is crossed.
        cuts = (1..len).collect();
    }
    cuts.sort_unstable();
    cuts
}

#[test]
fn the_http_decoder_never_panics_and_a_valid_response_decodes_the_same_split_anywhere() {
    let mut rng = rng_for("http");
    for i in 0..cases() {
        let (response, head) = valid_response(&mut rng);
        let whole = decode(&response, &[], head);
        assert!(matches!(whole, Outcome::Answer(_, false)), "case {i}: {whole:?} for {}", literal(&response));
        let cuts = random_cuts(&mut rng, response.len());
        assert_eq!(decode(&response, &cuts, head), whole, "case {i}: cuts {cuts:?} of {}", literal(&response));
        // Mutated and random bytes: any outcome, no panic.
        let mutated = if rng.random_range(0..8) == 0 {
            (0..rng.random_range(0..200)).map(|_| rng.random::<u8>()).collect()
        } else {
            mutate(&mut rng, &response)
        };
        let cuts = random_cuts(&mut rng, mutated.len());
        if catch_unwind(AssertUnwindSafe(|| decode(&mutated, &cuts, head))).is_err() {
            panic!("http: case {i} panicked (HAKARU_FUZZ_SEED={}); cuts {cuts:?} of {}", seed(), literal(&mutated));
        }
    }
}

#[test]
fn urls_and_host_ports_never_panic_and_ports_are_in_range() {
    let valid: &[&[u8]] = &[
        b"http://127.0.0.1:8080/d/select?q=a",
        b"https://localhost",
        b"http://[::1]:81/",
        b"http://user@example.com:65535/x#frag",
        b"HTTP://EXAMPLE.COM",
    ];
    // http://[]:81/ parsed with an empty host.
    let fixed: &[&[u8]] =
        &[b"http://127.0.0.1:70000/", b"http://127.0.0.1:/", b"http://[::1]:99999/", b"http://[]:81/"];
    fuzz("url", valid, fixed, |input| {
        if let Ok(u) = ParsedUrl::parse(&text(input)) {
            assert!(u.port >= 1 && !u.host.is_empty() && !u.path_and_query.is_empty(), "{u:?}");
        }
    });
    let valid: &[&[u8]] = &[b"node1", b"node2:10041", b"[::1]:8080", b"::1", b"127.0.0.1:80"];
    fuzz("host_port", valid, &[b"a:99999", b"[::1"], |input| {
        if let Ok((_, Some(port))) = split_host_port(&text(input)) {
            assert!(port >= 1);
        }
    });
}

#[test]
fn durations_and_sizes_never_panic_and_whole_units_round_trip() {
    let valid: &[&[u8]] = &[b"30s", b"500ms", b"1.5s", b"250us", b"2m", b"1h", b"10ns", b"0.001s"];
    fuzz("duration", valid, &[b"1e300s", b"99999999999999999999h", b".s", b"1..5s"], |input| {
        let _ = parse_duration(&text(input));
    });
    let valid: &[&[u8]] = &[b"512", b"20kb", b"1.5MB", b"64kib", b"2gib", b"0"];
    fuzz("size", valid, &[b"99999999999999999999gib", b"."], |input| {
        let _ = parse_size(&text(input));
    });
    // A whole number of a unit is exactly that many: `--timeout 123ms` is 123 ms, not 122.999999 ms.
    let mut rng = rng_for("duration_round_trip");
    for _ in 0..cases() {
        let n: u64 = rng.random_range(0..1_000_000);
        assert_eq!(parse_duration(&format!("{n}ms")).unwrap(), Duration::from_millis(n), "{n}ms");
        assert_eq!(parse_duration(&format!("{n}us")).unwrap(), Duration::from_micros(n), "{n}us");
        assert_eq!(parse_duration(&format!("{n}s")).unwrap(), Duration::from_secs(n), "{n}s");
        assert_eq!(parse_size(&format!("{n}kb")).unwrap(), n * 1000, "{n}kb");
    }
}

#[test]
fn status_sets_never_panic_and_round_trip_through_their_text() {
    let valid: &[&[u8]] = &[b"200-399", b"200,204,301-302", b"100-999", b"404", b" 200 - 299 , 304 "];
    fuzz("status_set", valid, &[b"999-100", b"1000", b"200-"], |input| {
        if let Ok(set) = StatusSet::parse(&text(input)) {
            let again = StatusSet::parse(set.text()).expect("its own text parses");
            assert_eq!(again, set);
        }
    });
}

#[test]
fn objectives_never_panic_and_round_trip_through_their_text() {
    let valid: &[&[u8]] = &[b"p99<50ms", b"p99.9<=200ms,mean<20ms", b"max<1s", b"p50<1ms, p99.99<5s"];
    fuzz("slo", valid, &[b"p99<1e300s", b"p<1ms", b"p99<<1ms"], |input| {
        if let Ok(slo) = Slo::parse(&text(input)) {
            assert!(!slo.bounds.is_empty());
            assert_eq!(Slo::parse(&slo.text).expect("its own text parses"), slo);
        }
    });
}

/// Feeds `reply` to a key-value decoder in pieces cut at `cuts`; what it gave.
fn decode_kv(decoder: &mut dyn ResponseDecoder, reply: &[u8], cuts: &[usize]) -> Outcome {
    decoder.start(false);
    let mut start = 0;
    for &end in cuts.iter().chain([reply.len()].iter()) {
        match decoder.feed(&reply[start..end]) {
            Ok(Some(answer)) => return Outcome::Answer(answer, decoder.stray().is_some()),
            Ok(None) => {}
            Err(e) => return classify(e),
        }
        start = end;
    }
    match decoder.eof() {
        Ok(answer) => Outcome::Answer(answer, false),
        Err(e) => classify(e),
    }
}

#[test]
fn the_redis_and_memcached_decoders_never_panic_and_decode_the_same_split_anywhere() {
    use hakaru::protocol::memcache::MemcacheDecoder;
    use hakaru::protocol::resp::RespDecoder;
    let resp: &[&[u8]] = &[
        b"+OK\r\n",
        b"$5\r\nhello\r\n",
        b"$-1\r\n",
        b":1000\r\n",
        b"-ERR wrong type\r\n",
        b"*2\r\n$1\r\n0\r\n*3\r\n$1\r\na\r\n$-1\r\n*0\r\n",
    ];
    let memcache: &[&[u8]] = &[
        b"VALUE key:1 0 3\r\nabc\r\nEND\r\n",
        b"END\r\n",
        b"STORED\r\n",
        b"NOT_STORED\r\n",
        b"VALUE a 0 1 9\r\nx\r\nVALUE b 0 2\r\nEN\r\nEND\r\n",
        b"SERVER_ERROR out of memory\r\n",
    ];
    for (name, valid) in [("resp", resp), ("memcache", memcache)] {
        let fresh = || -> Box<dyn ResponseDecoder> {
            if name == "resp" { Box::new(RespDecoder::default()) } else { Box::new(MemcacheDecoder::default()) }
        };
        // Every valid reply decodes the same whole and split anywhere.
        let mut rng = rng_for(name);
        for reply in valid {
            let whole = decode_kv(&mut *fresh(), reply, &[]);
            assert!(matches!(whole, Outcome::Answer(..)), "{name}: {}", literal(reply));
            for _ in 0..50 {
                let cuts = random_cuts(&mut rng, reply.len());
                assert_eq!(decode_kv(&mut *fresh(), reply, &cuts), whole, "{name}: {} cut at {cuts:?}", literal(reply));
            }
        }
        // Mutations never panic, whole or split.
        // Found by review: an item size near u64::MAX overflowed.
        let fixed: &[&[u8]] = &[b"VALUE k 0 18446744073709551615\r\n", b"$9223372036854775807\r\n"];
        fuzz(&format!("{name} decoder"), valid, fixed, |input| {
            let mut rng = ChaCha8Rng::seed_from_u64(input.len() as u64);
            let cuts = random_cuts(&mut rng, input.len());
            decode_kv(&mut *fresh(), input, &[]);
            decode_kv(&mut *fresh(), input, &cuts);
        });
    }
}

/// A random endless frame: `start` once, then `unit` again and again; `line`: the frame is one line that never
/// ends (so the decoder must refuse it past its bound), else every line ends and the answer does not.
fn endless_frame(rng: &mut ChaCha8Rng) -> (&'static str, Vec<u8>, Vec<u8>, bool) {
    // Bytes of a line that never ends: anything but LF.
    let no_lf = |rng: &mut ChaCha8Rng| -> Vec<u8> {
        (0..rng.random_range(1..=8)).map(|_| rng.random::<u8>()).map(|b| if b == b'\n' { b'x' } else { b }).collect()
    };
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    match rng.random_range(0..8) {
        0 => {
            let n = rng.random_range(1_000_000..=i32::MAX as u64);
            let units = [
                format!(":{}\r\n", rng.random::<i64>()),
                "+OK\r\n".into(),
                "$1\r\nx\r\n".into(),
                "*1\r\n:1\r\n".into(),
            ];
            (
                "resp",
                format!("*{n}\r\n").into_bytes(),
                units[rng.random_range(0..units.len())].clone().into_bytes(),
                false,
            )
        }
        1 => {
            let code = [100, 102, 103][rng.random_range(0..3)];
            let unit = format!("HTTP/1.1 {code} Wait\r\nX-{}: {}\r\n\r\n", rng.random::<u16>(), rng.random::<u32>());
            ("http", Vec::new(), unit.into_bytes(), false)
        }
        2 => ("http", [&chunked[..], format!("{:x};", rng.random_range(1..999)).as_bytes()].concat(), no_lf(rng), true),
        3 => ("http", chunked, b"0".repeat(rng.random_range(1..=8)), true),
        4 => ("http", [&chunked[..], b"0\r\nX-T: "].concat(), no_lf(rng), true),
        5 => {
            // A header value of visible bytes (httparse refuses control bytes in one, rightly, as malformed).
            let value = (0..rng.random_range(1..=8)).map(|_| rng.random_range(0x20..0x7f)).collect();
            ("http", b"HTTP/1.1 200 OK\r\nX-Endless: ".to_vec(), value, true)
        }
        6 => ("memcache", b"VALUE k 0 ".to_vec(), no_lf(rng), true),
        _ => ("resp", [b"+", b"-", b":", b"$", b"*"][rng.random_range(0..5)].to_vec(), no_lf(rng), true),
    }
}

#[test]
fn endless_frames_are_refused_past_the_line_bound_or_left_to_the_deadline() {
    use hakaru::protocol::memcache::MemcacheDecoder;
    use hakaru::protocol::resp::RespDecoder;
    let mut rng = rng_for("endless frames");
    // Each case feeds a few times its bound: a tenth as many cases as the other parsers.
    for i in 0..cases().div_ceil(10) {
        let (protocol, start, unit, line) = endless_frame(&mut rng);
        let max_line = rng.random_range(1024..=8192);
        let mut d: Box<dyn ResponseDecoder> = match protocol {
            "http" => Box::new(HttpDecoder::new(max_line)),
            "resp" => Box::new(RespDecoder::new(max_line)),
            _ => Box::new(MemcacheDecoder::new(max_line)),
        };
        d.start(false);
        let stream: Vec<u8> = [&start[..], &unit.repeat(4 * max_line / unit.len() + 1)].concat();
        let case = || {
            format!(
                "case {i} (HAKARU_FUZZ_SEED={}): max {max_line}, {} then {}",
                seed(),
                literal(&start),
                literal(&unit)
            )
        };
        let mut fed = 0;
        let mut ended = None;
        while fed < stream.len() {
            let piece = rng.random_range(1..=4096).min(stream.len() - fed);
            let result = catch_unwind(AssertUnwindSafe(|| d.feed(&stream[fed..fed + piece])));
            fed += piece;
            match result.unwrap_or_else(|_| panic!("{}: panicked", case())) {
                Ok(None) => {}
                Ok(Some(answer)) => panic!("{}: an answer {answer:?} from an endless frame", case()),
                Err(e) => {
                    ended = Some(e);
                    break;
                }
            }
        }
        match ended {
            // A line that never ends is refused once it passes the bound: within the read that passed it.
            Some(DecodeError::LineTooLong(_)) if line => {
                assert!(fed <= start.len() + max_line + 4096, "{}: refused only after {fed} bytes", case());
            }
            // Lines that end, an answer that does not: only the deadline ends it.
            None if !line => {}
            other => panic!("{}: {other:?} after {fed} bytes", case()),
        }
    }
}

#[test]
fn slow_drip_and_endless_frame_servers_never_keep_a_request_past_its_timeout() {
    // hakaru itself against the servers of tests/common/endless.rs: a frame, a pace and a timeout drawn at random.
    // A few seconds a case: one in `cargo test`, more under scripts/fuzz.sh.
    let mut rng = rng_for("endless servers");
    for i in 0..(cases() / 20_000).max(1) {
        let frame = &FRAMES[rng.random_range(0..FRAMES.len())];
        let gap = Duration::from_millis([0, 0, 1, 5, 20][rng.random_range(0..5)]);
        let timeout = Duration::from_millis(rng.random_range(200..=800));
        let limit = format!("{}ms", timeout.as_millis());
        let (out, took) = frame.run(gap, &["-c", "1", "-t", "1", "-n", "2", "--timeout", &limit]);
        let case = format!("case {i} (HAKARU_FUZZ_SEED={}): {} every {gap:?}, --timeout {limit}", seed(), frame.name);
        assert!(took < on_time(2 * timeout), "{case}: took {took:?}\n{}", out.stderr);
        let kinds = out.error_count("timeout") + out.error_count("line_too_long");
        assert_eq!((out.step()["errors"].as_u64(), kinds), (Some(2), 2), "{case}: {}", out.step()["error_kinds"]);
        assert!(slowest_failure(&out) < timeout_kept(timeout), "{case}: {}", out.step()["failed_latency"]);
        assert_ne!(out.code, 0, "{case}: nothing measured is not a success");
    }
}
