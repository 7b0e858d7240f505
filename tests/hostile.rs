//! Hostile servers: each test starts a small misbehaving TCP server on loopback and checks that hakaru counts what
//! it did, by exact kind, and never credits a request with an answer it did not get.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::endless::{FRAMES, on_time, slowest_failure, timeout_kept};
use common::hakaru;
use common::hostile::Hostile;

/// Reads one request head (hakaru sends GETs without a body and never pipelines); false at end of stream.
fn read_request(s: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&byte[..n]),
        }
    }
    true
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const EARLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly";

/// Sends RST instead of FIN when the socket is closed.
fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

fn connections_opened(out: &common::Output) -> u64 {
    out.step()["connections"]["opened"].as_u64().unwrap()
}

#[test]
fn an_answer_that_arrives_before_the_request_is_not_credited_to_it() {
    // Answers each request, then 50 ms later writes an answer to a request not yet sent, while the connection
    // is idle. At 2 requests/s the next request leaves 500 ms after the previous one: the 450 ms between leave
    // room for a busy machine to run the server's thread late.
    let server = Hostile::start(|mut s| {
        while read_request(&mut s) {
            if s.write_all(OK).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
            if s.write_all(EARLY).is_err() {
                return;
            }
        }
    });
    let out =
        hakaru(&["run", "-q", "-t", "1", "-c", "1", "--rate", "2", "-n", "4", "--timeout", "2s", &server.url("http")]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.step()["requests"], 4, "{}", out.step());
    // Requests 1 and 3 get their answer; requests 2 and 4 find the early bytes on the idle connection, which is
    // closed without sending, and the next request opens a new one.
    assert_eq!(out.status_count("200"), 2, "{}", out.step());
    assert_eq!(out.error_count("unsolicited_response"), 2, "{}", out.step()["error_kinds"]);
    assert_eq!(out.step()["errors"], 2);
    assert_eq!(connections_opened(&out), 2);
    let sample = out.step()["error_kinds"][0]["sample"].as_str().unwrap();
    assert!(sample.contains("before the request was written") && sample.contains("Content-Length: 5"), "{sample}");
}

#[test]
fn a_second_response_to_one_request_closes_the_connection_as_a_protocol_error() {
    // Two complete responses in one write: the first answers the request, the second answers nothing.
    let server = Hostile::start(|mut s| {
        let both = [OK, EARLY].concat();
        while read_request(&mut s) {
            if s.write_all(&both).is_err() {
                return;
            }
        }
    });
    let out = hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "4", "--timeout", "2s", &server.url("http")]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.step()["requests"], 4, "{}", out.step());
    // The first request of each connection is a success; the stray response makes the connection unusable, so
    // the next request fails without being sent and the one after opens a new connection.
    assert_eq!(out.status_count("200"), 2, "{}", out.step());
    assert_eq!(out.error_count("unsolicited_response"), 2, "{}", out.step()["error_kinds"]);
    assert_eq!(out.step()["errors"], 2);
    assert_eq!(connections_opened(&out), 2);
}

#[test]
fn garbage_is_a_malformed_response() {
    let server = Hostile::start(|mut s| {
        while read_request(&mut s) {
            if s.write_all(b"\x16\x03\x01 this is no HTTP at all\r\n\r\n").is_err() {
                return;
            }
        }
    });
    let out = hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "3", "--timeout", "2s", &server.url("http")]);
    assert_eq!(out.step()["requests"], 3, "{}", out.step());
    assert_eq!(out.error_count("malformed_response"), 3, "{}", out.step()["error_kinds"]);
    assert_eq!(out.step()["errors"], 3);
    assert_eq!(out.step()["status"].as_object().unwrap().len(), 0, "{}", out.step()["status"]);
    // A connection that carried garbage is never reused.
    assert_eq!(connections_opened(&out), 3);
}

#[test]
fn a_body_slower_than_the_timeout_is_a_timeout() {
    // The head and 10 of 1000 body bytes at once, then one byte every 100 ms.
    let server = Hostile::start(|mut s| {
        if !read_request(&mut s) {
            return;
        }
        let start = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789";
        if s.write_all(start).is_err() {
            return;
        }
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(100));
            if s.write_all(b"x").is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let out = hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "3", "--timeout", "300ms", &server.url("http")]);
    assert_eq!(out.step()["requests"], 3, "{}", out.step());
    assert_eq!(out.error_count("timeout"), 3, "{}", out.step()["error_kinds"]);
    assert_eq!(out.status_count("0"), 3);
    assert_eq!(out.step()["errors"], 3);
    assert_eq!(connections_opened(&out), 3);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_reset_inside_the_body_is_a_reset() {
    let server = Hostile::start(|mut s| {
        if !read_request(&mut s) {
            return;
        }
        let start = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789";
        if s.write_all(start).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(30));
        set_linger_zero(&s);
        drop(s);
    });
    let out = hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "3", "--timeout", "2s", &server.url("http")]);
    assert_eq!(out.step()["requests"], 3, "{}", out.step());
    assert_eq!(out.error_count("reset"), 3, "{}", out.step()["error_kinds"]);
    assert_eq!(out.step()["errors"], 3);
    assert_eq!(connections_opened(&out), 3);
}

#[test]
fn switching_protocols_is_a_failure_and_the_connection_is_not_reused() {
    // Every request is answered with 101; a second request on an upgraded connection would be HTTP sent into
    // another protocol, so the server counts any.
    let reused = Arc::new(AtomicUsize::new(0));
    let server = {
        let reused = Arc::clone(&reused);
        Hostile::start(move |mut s| {
            if !read_request(&mut s) {
                return;
            }
            let upgrade = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
            if s.write_all(upgrade).is_err() {
                return;
            }
            if read_request(&mut s) {
                reused.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let out = hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "3", "--timeout", "2s", &server.url("http")]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.step()["requests"], 3, "{}", out.step());
    assert_eq!(out.error_count("malformed_response"), 3, "{}", out.step()["error_kinds"]);
    assert_eq!(out.step()["errors"], 3);
    assert_eq!(out.status_count("101"), 0, "{}", out.step()["status"]);
    let sample = out.step()["error_kinds"][0]["sample"].as_str().unwrap();
    assert!(sample.contains("101") && sample.contains("not supported"), "{sample}");
    assert_eq!(connections_opened(&out), 3);
    drop(server);
    assert_eq!(reused.load(Ordering::SeqCst), 0, "a request was sent on an upgraded connection");
}

#[test]
fn https_against_a_silent_plain_server_is_a_tls_handshake_error_and_exits_non_zero() {
    // Accepts, reads the TLS hello, never answers.
    let server = Hostile::start(|mut s| {
        let mut buf = [0u8; 4096];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    let started = Instant::now();
    let out =
        hakaru(&["run", "-q", "-t", "1", "-c", "1", "-n", "3", "--connect-timeout", "500ms", &server.url("https")]);
    assert_ne!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    assert!(out.stderr.contains("TLS handshake"), "{}", out.stderr);
    assert!(out.stderr.contains("500ms"), "{}", out.stderr);
    assert!(!out.stdout.contains("0 requests"), "{}", out.stdout);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn endless_frames_at_full_speed_end_every_request_and_the_step_on_time() {
    // Issue 28: -c 2 -d 3s --timeout 1s ran on at 90 % CPU and ended "ok 0, failed 0", exit 0.
    for frame in &FRAMES {
        let (out, took) = frame.run(Duration::ZERO, &["-c", "2", "-t", "2", "-d", "2s", "--timeout", "1s"]);
        assert!(took < on_time(Duration::from_secs(2)), "{}: took {took:?}\n{}", frame.name, out.stderr);
        let what = format!("{}: {}\n{}", frame.name, out.step()["error_kinds"], out.stderr);
        assert_ne!(out.code, 0, "{what}: nothing measured is not a success");
        assert_eq!(out.step()["ok"], 0, "{what}");
        let failed = out.error_count(frame.flooded);
        assert_eq!(out.step()["errors"], failed, "{what}: only {}", frame.flooded);
        if frame.flooded == "timeout" {
            // Each client's first request times out at 1 s, its second by the step's end at 2 s.
            assert!((2..=4).contains(&failed), "{what}");
            // A timeout not kept would end at the step's end, 2 s; a machine with a load of 10 once woke a
            // thread that a flood keeps busy 0.4 s late.
            assert!(slowest_failure(&out) < 1.6, "{what}: {}", out.step()["failed_latency"]);
        } else {
            // A line is refused as soon as it passes 64 KiB: many requests, each at once.
            assert!(failed >= 2, "{what}");
            let sample = out.step()["error_kinds"][0]["sample"].as_str().unwrap().to_string();
            assert!(sample.ends_with("longer than 65536 bytes (--max-line)"), "{sample}");
        }
    }
}

#[test]
fn endless_frames_time_out_each_of_n_requests_on_time() {
    // -n: no step deadline to end the run, only each request's timeout (a 1 s timeout ran 8 to 23 s).
    for frame in FRAMES.iter().filter(|f| f.flooded == "timeout") {
        let (out, took) = frame.run(Duration::ZERO, &["-c", "1", "-t", "1", "-n", "3", "--timeout", "1s"]);
        assert!(took < on_time(Duration::from_secs(3)), "{}: took {took:?}\n{}", frame.name, out.stderr);
        let what = format!("{}: {}\n{}", frame.name, out.step()["error_kinds"], out.stderr);
        assert_eq!(out.error_count("timeout"), 3, "{what}");
        assert_eq!(out.step()["requests"], 3, "{what}");
        assert!(
            slowest_failure(&out) < timeout_kept(Duration::from_secs(1)),
            "{what}: {}",
            out.step()["failed_latency"]
        );
        assert_ne!(out.code, 0, "{what}");
    }
    // Pipelined (kv's own read loop): the batch's first reply never ends, so all four ops time out at once.
    let redis = &FRAMES[0];
    let (out, took) =
        redis.run(Duration::ZERO, &["-c", "1", "-t", "1", "-n", "4", "--pipeline", "4", "--timeout", "1s"]);
    assert!(took < on_time(Duration::from_secs(1)), "pipelined: took {took:?}\n{}", out.stderr);
    assert_eq!(out.error_count("timeout"), 4, "{}", out.step()["error_kinds"]);
    assert!(slowest_failure(&out) < timeout_kept(Duration::from_secs(1)), "{}", out.step()["failed_latency"]);
}

#[test]
fn endless_frames_dripped_a_unit_at_a_time_are_timeouts_on_time() {
    // Slowly, no line reaches --max-line within the timeout: the timer ends each request.
    for frame in &FRAMES {
        let gap = Duration::from_millis(20);
        let (out, took) = frame.run(gap, &["-c", "1", "-t", "1", "-n", "2", "--timeout", "500ms"]);
        assert!(took < on_time(Duration::from_secs(1)), "{}: took {took:?}\n{}", frame.name, out.stderr);
        let what = format!("{}: {}\n{}", frame.name, out.step()["error_kinds"], out.stderr);
        assert_eq!(out.error_count("timeout"), 2, "{what}");
        assert!(
            slowest_failure(&out) < timeout_kept(Duration::from_millis(500)),
            "{what}: {}",
            out.step()["failed_latency"]
        );
        assert_ne!(out.code, 0, "{what}");
    }
}

#[test]
fn max_line_sets_the_bound_of_a_line() {
    let zeros = FRAMES.iter().find(|f| f.unit == b"0").unwrap();
    let (out, _) = zeros.run(Duration::ZERO, &["-c", "1", "-n", "2", "--max-line", "1KiB"]);
    assert_eq!(out.error_count("line_too_long"), 2, "{}", out.step()["error_kinds"]);
    let sample = out.step()["error_kinds"][0]["sample"].as_str().unwrap();
    assert_eq!(sample, "a chunk-size line longer than 1024 bytes (--max-line)");
}

#[test]
fn the_look_before_a_kv_load_reads_an_endless_reply_no_further_than_a_mebibyte() {
    // Issue 28: DBSIZE answered with an endless array held kv for 30 s while its kept elements grew. The PING
    // before it is answered as Redis would.
    let server = Hostile::start(|mut s| {
        let mut buf = [0u8; 1024];
        if !matches!(s.read(&mut buf), Ok(n) if n > 0) {
            return;
        }
        if buf.starts_with(b"*1\r\n$4\r\nPING")
            && (s.write_all(b"+PONG\r\n").is_err() || !matches!(s.read(&mut buf), Ok(n) if n > 0))
        {
            return;
        }
        if s.write_all(b"*2147483647\r\n").is_err() {
            return;
        }
        let burst = b":1\r\n".repeat(256);
        while s.write_all(&burst).is_ok() {}
    });
    let started = Instant::now();
    let out = hakaru(&["kv", "-q", "-n", "5", &format!("redis://{}", server.addr)]);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("the reply to DBSIZE is longer than 1048576 bytes"), "{}", out.stderr);
}
