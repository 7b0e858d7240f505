//! The HTTP/2 connection's unit tests: frames read as the network cuts them, windows, kept bodies, a hostile
//! peer's garbled frames, floods and header lists.

use crate::protocol::http::response::MOST_KEPT_BODY;
use rand::{RngExt as _, SeedableRng as _};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::protocol::http::RequestParts;

/// An open connection's state with streams 1, 3 and 5 under way.
fn open_conn() -> H2Conn {
    let mut st = State::new(100, 8192, 65_536);
    st.phase = Phase::Open;
    st.out.clear();
    for id in [1, 3, 5] {
        st.streams.insert(id, Stream::default());
        st.in_flight += 1;
    }
    st.next_id = 7;
    H2Conn { state: RefCell::new(st) }
}

/// As [`open_conn`], its streams keeping their answers' headers and bodies (a script's `response()`).
fn keeping_conn() -> H2Conn {
    let conn = open_conn();
    let mut st = conn.state.borrow_mut();
    st.keep = true;
    for s in st.streams.values_mut() {
        s.kept = Some(Box::default());
    }
    drop(st);
    conn
}

/// The bodies a connection's streams keep, and what it counts of them.
fn kept_bodies(conn: &H2Conn) -> (usize, usize) {
    let st = conn.state.borrow();
    (st.streams.values().filter_map(|s| s.kept.as_ref()).map(|k| k.body.len()).sum(), st.kept_bytes)
}

#[test]
fn the_bodies_kept_for_response_are_bounded_together_per_connection() {
    let conn = keeping_conn();
    for id in [7, 9] {
        let mut st = conn.state.borrow_mut();
        st.streams.insert(id, Stream { kept: Some(Box::default()), ..Stream::default() });
        st.in_flight += 1;
    }
    let metrics = RefCell::new(StepMetrics::default());
    let chunk = vec![b'x'; 16_384];
    // Five streams each sent 24 MiB, in pieces as a read cuts them: each keeps 16 MiB at most, and the five
    // 64 MiB together.
    let mut input = Vec::new();
    for _ in 0..1536 {
        for id in [1, 3, 5, 7, 9] {
            input.extend(frame_bytes(frame::DATA, 0, id, &chunk));
        }
    }
    for piece in input.chunks(10_000) {
        conn.on_bytes(&metrics, piece);
    }
    assert_eq!(kept_bodies(&conn), (KEPT_PER_CONNECTION, KEPT_PER_CONNECTION));
    let st = conn.state.borrow();
    assert!(st.streams.values().all(|s| s.kept.as_ref().is_some_and(|k| k.body.len() <= MOST_KEPT_BODY)));
    drop(st);
    // A stream forgotten gives its share back.
    conn.forget(1);
    let (sum, counted) = kept_bodies(&conn);
    assert_eq!(sum, counted);
    assert!(sum < KEPT_PER_CONNECTION);
}

#[test]
fn padding_as_long_as_a_data_frame_is_a_protocol_error_whether_its_body_is_kept_or_skipped() {
    let headers = frame_bytes(frame::HEADERS, frame::END_HEADERS, 1, &[0x88]);
    let flags = frame::PADDED | frame::END_STREAM;
    for (payload, good) in [(&[3u8, b'a', b'b', 0, 0, 0][..], true), (&[6, b'a', b'b', 0, 0, 0][..], false)] {
        let input = [headers.clone(), frame_bytes(frame::DATA, flags, 1, payload)].concat();
        for (keep, cut) in [false, true].into_iter().flat_map(|k| (1..input.len()).map(move |c| (k, c))) {
            let conn = if keep { keeping_conn() } else { open_conn() };
            let metrics = RefCell::new(StepMetrics::default());
            conn.on_bytes(&metrics, &input[..cut]);
            conn.on_bytes(&metrics, &input[cut..]);
            let st = conn.state.borrow();
            let answered = matches!(st.streams.get(&1).and_then(|s| s.done.as_ref()), Some(Outcome::Answer(_)));
            assert_eq!((answered, st.phase == Phase::Dead), (good, !good), "keep {keep}, cut at {cut}");
        }
    }
}

#[test]
fn a_read_that_ends_inside_a_frames_header_loses_nothing_of_the_next_read() {
    // Two answers (HEADERS, `:status 200` indexed, ending their streams), cut inside the first frame's header:
    // the second read holds the rest of that header, its payload and the whole second frame.
    let flags = frame::END_HEADERS | frame::END_STREAM;
    let input = [frame_bytes(frame::HEADERS, flags, 1, &[0x88]), frame_bytes(frame::HEADERS, flags, 3, &[0x88])];
    let input = input.concat();
    for cut in 1..input.len() {
        let conn = open_conn();
        let metrics = RefCell::new(StepMetrics::default());
        conn.on_bytes(&metrics, &input[..cut]);
        conn.on_bytes(&metrics, &input[cut..]);
        let st = conn.state.borrow();
        for id in [1, 3] {
            assert!(
                matches!(st.streams.get(&id).and_then(|s| s.done.as_ref()), Some(Outcome::Answer(a)) if a.status == 200),
                "cut at {cut}: stream {id} not answered"
            );
        }
    }
}

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Head { len: payload.len(), kind, flags, stream }.write(&mut out);
    out.extend_from_slice(payload);
    out
}

/// The frames one stream's body went out in: (length, END_STREAM).
fn data_frames(out: &[u8], stream: u32) -> Vec<(usize, bool)> {
    let mut frames = Vec::new();
    let mut at = 0;
    while let Some(head) = frame_at(out, at) {
        if head.kind == frame::DATA && head.stream == stream {
            frames.push((head.len, head.flags & frame::END_STREAM != 0));
        }
        at += frame::HEAD + head.len;
    }
    frames
}

#[test]
fn a_body_larger_than_the_windows_waits_for_window_update_and_then_goes_on() {
    let body = vec![b'x'; 200_000];
    let parts = RequestParts { method: "POST", target: "/", host: "h", body: &body, ..Default::default() };
    let request = crate::protocol::h2::request::build_request(&parts, false);
    let conn = open_conn();
    let metrics = RefCell::new(StepMetrics::default());
    let id = conn.state.borrow_mut().open_stream(&request.bytes, Some(&request.bytes)).0;
    let sent = |conn: &H2Conn| -> usize {
        data_frames(&std::mem::take(&mut conn.state.borrow_mut().out), id).iter().map(|f| f.0).sum()
    };
    // Both windows start at 65,535: that much goes, cut at the window's edge.
    assert_eq!(sent(&conn), 65_535);
    assert_eq!(conn.state.borrow().blocked, [id]);
    // The connection's window alone does not let more go: the stream's is empty.
    conn.on_bytes(&metrics, &frame_bytes(frame::WINDOW_UPDATE, 0, 0, &(1u32 << 30).to_be_bytes()));
    assert_eq!(sent(&conn), 0);
    // The stream's window grows by 100,000: that much more.
    conn.on_bytes(&metrics, &frame_bytes(frame::WINDOW_UPDATE, 0, id, &100_000u32.to_be_bytes()));
    assert_eq!(sent(&conn), 100_000);
    // A larger initial window (SETTINGS) grows open streams too: the rest goes, the last frame ending the stream.
    let mut settings = Vec::new();
    frame::settings(&mut settings, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)]);
    conn.on_bytes(&metrics, &settings);
    let out = std::mem::take(&mut conn.state.borrow_mut().out);
    let frames = data_frames(&out, id);
    assert_eq!(frames.iter().map(|f| f.0).sum::<usize>(), 200_000 - 165_535);
    // 14,689 bytes finish the frame the window cut, then 16,384, then the last 3,392.
    assert_eq!(frames, [(14_689, false), (16_384, false), (3_392, true)]);
    assert!(conn.state.borrow().blocked.is_empty());
    assert!(conn.state.borrow().streams[&id].done.is_none(), "not a failure");
}

/// A header block's bytes with `:status 200` and a few literals, some Huffman-coded (RFC 7541 C.4.1, C.6.1).
const BLOCKS: [&[u8]; 3] = [
    &[0x88],
    &[0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff],
    &[
        0x48, 0x82, 0x64, 0x02, 0x58, 0x85, 0xae, 0xc3, 0x77, 0x1a, 0x4b, 0x61, 0x96, 0xd0, 0x7a, 0xbe, 0x94, 0x10,
        0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05, 0x95, 0x04, 0x0b, 0x81, 0x66, 0xe0, 0x82, 0xa6, 0x2d, 0x1b, 0xff,
    ],
];

/// A hostile peer's bytes: frames of every type on streams open, closed and 0, with valid, mutated and random
/// payloads, and lengths that sometimes lie.
fn garbled(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.random_range(1..12) {
        // Half are a response's HEADERS on a stream under way, their block whole or mutated.
        let answer = rng.random_range(0..2) == 0;
        let kind = if answer { frame::HEADERS } else { rng.random_range(0..12u8) };
        let stream = [0, 1, 3, 5, 7, rng.random::<u32>()][rng.random_range(if answer { 1..4 } else { 0..6 })];
        let flags = if answer { frame::END_HEADERS | frame::END_STREAM } else { rng.random::<u8>() };
        let mut payload: Vec<u8> = match if answer { 0 } else { rng.random_range(0..3) } {
            0 => BLOCKS[rng.random_range(0..BLOCKS.len())].to_vec(),
            1 => (0..rng.random_range(0..40)).map(|_| rng.random()).collect(),
            _ => vec![0; [0, 4, 6, 8, 12][rng.random_range(0..5)]],
        };
        for _ in 0..rng.random_range(0..3) * usize::from(rng.random_range(0..3) == 0) {
            if !payload.is_empty() {
                let i = rng.random_range(0..payload.len());
                payload[i] ^= 1 << rng.random_range(0..8);
            }
        }
        let at = out.len();
        out.extend_from_slice(&frame_bytes(kind, flags, stream, &payload));
        if rng.random_range(0..8) == 0 {
            // A length that lies: longer, shorter, or past what the client allows.
            out[at..at + 3].copy_from_slice(&rng.random::<[u8; 3]>());
        }
    }
    out
}

#[test]
fn a_hostile_peers_garbled_frames_end_in_an_error_kind_never_a_panic_and_stay_bounded() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let allowed = |k: ErrorKind| {
        matches!(k, ErrorKind::Malformed | ErrorKind::FlowControl | ErrorKind::FrameSize | ErrorKind::Goaway)
            || (0..=0xe).any(|code| ErrorKind::rst_stream(code) == k)
    };
    let (mut dead, mut answered) = (0, 0);
    for i in 0..3000 {
        // Half the connections keep their answers (a script's response()): DATA read whole, not skipped.
        let conn = if i % 2 == 0 { open_conn() } else { keeping_conn() };
        let metrics = RefCell::new(StepMetrics::default());
        let input = garbled(&mut rng);
        // Read as the network cuts it: in random pieces.
        let mut rest = &input[..];
        while !rest.is_empty() {
            let n = rng.random_range(1..=rest.len());
            conn.on_bytes(&metrics, &rest[..n]);
            rest = &rest[n..];
        }
        let st = conn.state.borrow();
        assert!(st.partial.capacity() <= 2 * (frame::HEAD + MAX_FRAME), "a partial frame is bounded");
        assert!(st.block_bytes.len() <= st.max_block + MAX_FRAME, "a header block is bounded");
        assert!(st.decoder.table_size() <= 4096, "the HPACK table is bounded");
        assert!(st.out.len() <= 64 + 2 * input.len(), "answers are bounded by what was read");
        drop(st);
        let (kept, counted) = kept_bodies(&conn);
        assert!(kept == counted && kept <= KEPT_PER_CONNECTION, "kept bodies are counted and bounded");
        let st = conn.state.borrow();
        for s in st.streams.values() {
            match &s.done {
                Some(Outcome::Failed(f) | Outcome::Unprocessed(f)) => {
                    assert!(allowed(f.kind), "{:?}: {}", f.kind, f.message)
                }
                Some(Outcome::Answer(a)) => {
                    assert!((200..=1000).contains(&a.status));
                    answered += 1;
                }
                None => {}
            }
        }
        dead += usize::from(st.phase == Phase::Dead);
    }
    // The inputs reach both ends: connections the garbage ended, and answers that got through it.
    assert!(dead > 1000 && answered > 500, "{dead} connections ended, {answered} answers");
}

/// The failure stream `id` ended with.
fn failed_kind(conn: &H2Conn, id: u32) -> Option<ErrorKind> {
    match conn.state.borrow().streams.get(&id).and_then(|s| s.done.as_ref()) {
        Some(Outcome::Failed(f)) => Some(f.kind),
        _ => None,
    }
}

#[test]
fn a_ping_flood_whose_acks_are_not_written_ends_the_connection_as_flood() {
    let conn = open_conn();
    let metrics = RefCell::new(StepMetrics::default());
    let pings: Vec<u8> = (0..MOST_UNSENT_ACKS).flat_map(|_| frame_bytes(frame::PING, 0, 0, &[1; 8])).collect();
    conn.on_bytes(&metrics, &pings);
    assert_eq!(conn.state.borrow().phase, Phase::Open, "as many as the bound are answered");
    conn.on_bytes(&metrics, &frame_bytes(frame::PING, 0, 0, &[1; 8]));
    let st = conn.state.borrow();
    assert_eq!(st.phase, Phase::Dead);
    assert!(st.out.len() < 20 * (MOST_UNSENT_ACKS + 2), "{} bytes queued", st.out.len());
    drop(st);
    assert_eq!(failed_kind(&conn, 1), Some(ErrorKind::Flood));
}

#[test]
fn acks_written_to_a_peer_that_reads_them_never_count_as_a_flood() {
    let conn = open_conn();
    let metrics = RefCell::new(StepMetrics::default());
    for _ in 0..3 {
        let pings: Vec<u8> = (0..MOST_UNSENT_ACKS).flat_map(|_| frame_bytes(frame::PING, 0, 0, &[1; 8])).collect();
        conn.on_bytes(&metrics, &pings);
        // What the task does once its queue is written whole.
        let mut st = conn.state.borrow_mut();
        st.out.clear();
        st.unsent_acks = 0;
    }
    assert_eq!(conn.state.borrow().phase, Phase::Open);
}

#[test]
fn a_header_list_past_its_bound_fails_its_stream_keeps_nothing_and_the_table_stays_in_step() {
    let conn = keeping_conn();
    let metrics = RefCell::new(StepMetrics::default());
    // :status 200, "x: 4,000 a's" into the table, then that entry (62) 1,000 times: 4 MB from a 5 kB block.
    let mut block = vec![0x88, 0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e];
    block.extend(std::iter::repeat_n(b'a', 4000));
    block.extend(std::iter::repeat_n(0xbe, 1000));
    let flags = frame::END_HEADERS | frame::END_STREAM;
    conn.state.borrow_mut().max_block = 16_384;
    conn.on_bytes(&metrics, &frame_bytes(frame::HEADERS, flags, 1, &block));
    assert_eq!(failed_kind(&conn, 1), Some(ErrorKind::HeaderList));
    assert!(conn.state.borrow().streams[&1].kept.as_ref().is_none_or(|k| k.headers.is_empty()));
    // The next answer indexes the same entry once: decoded, within the bound, answered.
    conn.on_bytes(&metrics, &frame_bytes(frame::HEADERS, flags, 3, &[0x88, 0xbe]));
    let st = conn.state.borrow();
    assert_eq!(st.phase, Phase::Open);
    let s = &st.streams[&3];
    assert!(matches!(s.done, Some(Outcome::Answer(ref a)) if a.status == 200));
    assert_eq!(s.kept.as_ref().unwrap().headers.len(), 1);
}

#[test]
fn a_frame_longer_than_allowed_before_settings_fails_the_connection_as_frame_size() {
    let conn = open_conn();
    conn.state.borrow_mut().phase = Phase::Opening;
    let metrics = RefCell::new(StepMetrics::default());
    let mut lying = vec![0xff, 0xff, 0xff, frame::SETTINGS, 0, 0, 0, 0, 0];
    lying.extend_from_slice(&[0; 60]);
    conn.on_bytes(&metrics, &lying);
    let st = conn.state.borrow();
    assert_eq!(st.phase, Phase::Dead);
    // Kept for the slots waiting for the connection, and for the pause before the next.
    assert_eq!(st.failure.as_ref().map(|f| f.kind), Some(ErrorKind::FrameSize));
}

#[test]
fn a_close_inside_a_frame_is_frame_size_and_a_close_between_frames_is_closed() {
    let metrics = RefCell::new(StepMetrics::default());
    // A HEADERS frame declaring 100 bytes, 3 of them sent, then the close.
    let mut cut = frame_bytes(frame::HEADERS, frame::END_HEADERS, 1, &[0; 100]);
    cut.truncate(frame::HEAD + 3);
    let conn = open_conn();
    conn.on_bytes(&metrics, &cut);
    conn.peer_closed();
    assert_eq!(failed_kind(&conn, 1), Some(ErrorKind::FrameSize));
    assert_eq!(conn.state.borrow().failure.as_ref().map(|f| f.kind), Some(ErrorKind::FrameSize));
    let conn = open_conn();
    conn.peer_closed();
    assert_eq!(failed_kind(&conn, 1), Some(ErrorKind::Closed));
}
