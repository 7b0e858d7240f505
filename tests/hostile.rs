//! Hostile servers: each test starts a small misbehaving TCP server on loopback and checks that hakaru counts what
//! it did, by exact kind, and never credits a request with an answer it did not get.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::hakaru;

/// A server that runs `handle` on a thread of its own for every connection it accepts (hakaru's preflight check
/// included). It stops accepting when dropped; each handler ends when its client closes or after a read timeout.
struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Hostile {
    fn start(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handle = Arc::new(handle);
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    // A handler blocked on a client that vanished still ends, so the test process does not keep it.
                    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let handle = Arc::clone(&handle);
                    std::thread::spawn(move || handle(conn));
                }
            })
        };
        Hostile { addr, stop, acceptor: Some(acceptor) }
    }

    fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocked accept so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

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
    // is idle. At 4 requests/s the next request leaves 250 ms after the previous one.
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
        hakaru(&["run", "-q", "-t", "1", "-c", "1", "--rate", "4", "-n", "4", "--timeout", "2s", &server.url("http")]);
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
