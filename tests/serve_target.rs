//! Integration tests of `hakaru serve`: a real server in-process, spoken to over loopback with plain sockets.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hakaru::serve::{ServeOptions, ServerHandle, start};

const TIMEOUT: Duration = Duration::from_secs(5);

fn server_with(workers: Option<usize>, miss_cost: Duration) -> ServerHandle {
    start(ServeOptions { listen: "127.0.0.1:0".parse().unwrap(), threads: 2, workers, miss_cost, cache_size: 100 })
        .expect("server starts")
}

fn server() -> ServerHandle {
    server_with(None, Duration::from_millis(50))
}

fn connect(server: &ServerHandle) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(TIMEOUT)).unwrap();
    stream
}

#[derive(Debug)]
struct Response {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One connection, reading answers through a buffer that is kept between them (keep-alive and pipelining).
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn new(server: &ServerHandle) -> Client {
        Client { reader: BufReader::new(connect(server)) }
    }

    fn send(&mut self, raw: &str) {
        self.reader.get_mut().write_all(raw.as_bytes()).unwrap();
    }

    fn get(&mut self, target: &str) -> Response {
        self.send(&format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n"));
        self.response(false)
    }

    fn response(&mut self, head_only: bool) -> Response {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let mut parts = line.trim_end().splitn(3, ' ');
        assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {line:?}");
        let status = parts.next().unwrap().parse().unwrap();
        let reason = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let Some((name, value)) = line.trim_end().split_once(':') else {
                break;
            };
            headers.push((name.to_string(), value.trim().to_string()));
        }
        let mut response = Response { status, reason, headers, body: Vec::new() };
        if !head_only {
            let len: usize = response.header("content-length").expect("content-length").parse().unwrap();
            response.body = vec![0; len];
            self.reader.read_exact(&mut response.body).unwrap();
        }
        response
    }

    /// Everything until the server closes.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest).unwrap();
        rest
    }
}

fn status(server: &ServerHandle) -> serde_json::Value {
    let r = Client::new(server).get("/status");
    assert_eq!(r.header("content-type"), Some("application/json"));
    serde_json::from_slice(&r.body).unwrap()
}

/// Runs `f` on a thread and fails the test if it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(limit).expect("finished in time")
}

#[test]
fn the_default_answer_is_hello_from_hakaru() {
    let s = server();
    let r = Client::new(&s).get("/");
    assert_eq!((r.status, r.reason.as_str()), (200, "OK"));
    assert_eq!(r.text(), "hello from hakaru\n");
    assert_eq!(r.header("content-length"), Some("18"));
    assert_eq!(r.header("connection"), None);
    s.stop();
}

#[test]
fn two_requests_share_one_kept_alive_connection() {
    let s = server();
    let mut c = Client::new(&s);
    assert_eq!(c.get("/a").status, 200);
    assert_eq!(c.get("/b?size=3").text(), "hel");
    let counters: serde_json::Value = serde_json::from_slice(&c.get("/status").body).unwrap();
    assert_eq!(counters[1]["n_connections"], 1);
    s.stop();
}

#[test]
fn connection_close_is_answered_in_kind_and_then_the_server_closes() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.text(), "hello from hakaru\n");
    assert!(c.rest().is_empty());
    s.stop();
}

#[test]
fn http_1_0_closes_unless_the_client_asks_for_keep_alive() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.response(false).header("connection"), Some("keep-alive"));
    c.send("GET / HTTP/1.0\r\n\r\n");
    assert_eq!(c.response(false).header("connection"), Some("close"));
    assert!(c.rest().is_empty());
    s.stop();
}

#[test]
fn head_answers_headers_only() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("HEAD /?size=1000 HTTP/1.1\r\n\r\n");
    let r = c.response(true);
    assert_eq!(r.header("content-length"), Some("1000"));
    // Had a body been sent, this answer would be read from the middle of it.
    assert_eq!(c.get("/").text(), "hello from hakaru\n");
    s.stop();
}

#[test]
fn size_sets_the_body_length_small_or_large() {
    let s = server();
    let mut c = Client::new(&s);
    assert_eq!(c.get("/?size=20kb").body.len(), 20_000);
    let big = c.get("/?size=1mib");
    assert_eq!(big.body.len(), 1 << 20);
    assert!(big.body.starts_with(b"hello from hakaru\nhello"));
    assert!(c.get("/?size=0").body.is_empty());
    s.stop();
}

#[test]
fn status_sets_the_code_with_its_reason_phrase() {
    let s = server();
    let mut c = Client::new(&s);
    let r = c.get("/?status=503");
    assert_eq!((r.status, r.reason.as_str()), (503, "Service Unavailable"));
    assert_eq!(r.text(), "hello from hakaru\n");
    let r = c.get("/?status=404&size=4");
    assert_eq!((r.status, r.reason.as_str(), r.text().as_str()), (404, "Not Found", "hell"));
    s.stop();
}

#[test]
fn bad_query_values_get_a_400_naming_the_parameter() {
    let s = server();
    let mut c = Client::new(&s);
    for (query, name) in
        [("delay=soon", "delay"), ("size=lots", "size"), ("status=42", "status"), ("fault=fire", "fault")]
    {
        let r = c.get(&format!("/?{query}"));
        assert_eq!(r.status, 400, "{query}");
        let text = r.text();
        assert!(text.contains(name) && text.ends_with('\n') && text.lines().count() == 1, "{text:?}");
    }
    assert_eq!(c.get("/cache").status, 400);
    s.stop();
}

#[test]
fn delay_holds_the_answer_at_least_that_long() {
    let s = server();
    let mut c = Client::new(&s);
    let t = Instant::now();
    assert_eq!(c.get("/?delay=150ms&jitter=20ms").status, 200);
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(150), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    s.stop();
}

#[test]
fn the_cache_misses_then_hits_and_status_counts_both() {
    // A miss costs 400 ms; a hit costs none, which a busy machine's scheduling cannot stretch to 400 ms.
    let s = server_with(None, Duration::from_millis(400));
    let mut c = Client::new(&s);
    let t = Instant::now();
    let miss = c.get("/cache?key=k1");
    assert!(t.elapsed() >= Duration::from_millis(400));
    assert_eq!(miss.header("x-cache"), Some("MISS"));
    let t = Instant::now();
    let hit = c.get("/cache?key=k1");
    assert!(t.elapsed() < Duration::from_millis(400));
    assert_eq!(hit.header("x-cache"), Some("HIT"));
    assert_eq!(c.get("/cache?key=k2").header("x-cache"), Some("MISS"));
    assert_eq!(c.get("/cache?key=k1").header("x-cache"), Some("HIT"));
    c.get("/other");
    let v = status(&s);
    assert_eq!(v[0][0], 0);
    assert!(v[0][1].as_f64().unwrap() > 1e9 && v[0][2].as_f64().unwrap() >= 0.0);
    let counters = &v[1];
    assert_eq!(counters["n_queries"], 4);
    assert_eq!(counters["cache_hits"], 2);
    assert_eq!(counters["cache_misses"], 2);
    assert_eq!(counters["cache_hit_rate"], 0.5);
    assert_eq!(counters["n_requests"], 5);
    s.stop();
}

#[test]
fn status_before_any_query_reports_a_zero_hit_rate() {
    let s = server();
    let v = status(&s);
    assert_eq!(v[1]["cache_hit_rate"], 0.0);
    assert_eq!(v[1]["n_requests"], 0);
    s.stop();
}

#[test]
fn a_client_without_keep_alive_opens_one_connection_per_request() {
    let s = server();
    for _ in 0..3 {
        let mut c = Client::new(&s);
        c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert_eq!(c.response(false).status, 200);
        assert!(c.rest().is_empty());
    }
    // The status request brings its own connection.
    assert_eq!(status(&s)[1]["n_connections"], 4);
    s.stop();
}

#[test]
fn the_reset_fault_aborts_the_connection_with_a_rst() {
    let s = server();
    let mut stream = connect(&s);
    stream.write_all(b"GET /?fault=reset HTTP/1.1\r\n\r\n").unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset),
        Ok(n) => {
            assert_eq!(n, 0, "no answer expected");
            // EOF first: the RST then fails the next write.
            std::thread::sleep(Duration::from_millis(50));
            let again = stream.write_all(b"GET / HTTP/1.1\r\n\r\n").and_then(|_| stream.read(&mut buf));
            assert!(again.is_err(), "{again:?}");
        }
    }
    s.stop();
}

#[test]
fn the_close_fault_ends_the_connection_cleanly_without_an_answer() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("GET /?fault=close HTTP/1.1\r\n\r\n");
    assert!(c.rest().is_empty());
    s.stop();
}

#[test]
fn the_garbage_fault_sends_bytes_that_are_not_http() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("GET /?fault=garbage HTTP/1.1\r\n\r\n");
    let rest = c.rest();
    assert!(!rest.is_empty() && !rest.starts_with(b"HTTP/"), "{rest:?}");
    s.stop();
}

#[test]
fn the_stall_fault_never_answers() {
    let s = server();
    let mut stream = connect(&s);
    stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    stream.write_all(b"GET /?fault=stall HTTP/1.1\r\n\r\n").unwrap();
    let err = stream.read(&mut [0u8; 16]).expect_err("no bytes within 300 ms");
    assert!(matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{err:?}");
    s.stop();
}

#[test]
fn the_slow_body_fault_delivers_the_whole_body_over_the_delay() {
    let s = server();
    let mut c = Client::new(&s);
    let t = Instant::now();
    let r = c.get("/?fault=slow-body&delay=300ms&size=100");
    assert!(t.elapsed() >= Duration::from_millis(250), "{:?}", t.elapsed());
    assert_eq!(r.body.len(), 100);
    // The connection stays usable afterwards.
    assert_eq!(c.get("/").status, 200);
    s.stop();
}

#[test]
fn the_slow_body_fault_sends_the_head_before_the_body() {
    let s = server();
    let mut stream = connect(&s);
    stream.write_all(b"GET /?fault=slow-body&delay=2s HTTP/1.1\r\n\r\n").unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut buf = [0u8; 256];
    let n = stream.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 200 OK") && text.ends_with("\r\n\r\n"), "{text:?}");
    s.stop();
}

#[test]
fn a_workers_limit_queues_requests_beyond_it() {
    let s = server_with(Some(1), Duration::from_millis(5));
    let addr = s.addr();
    let t = Instant::now();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(addr).unwrap();
                stream.set_read_timeout(Some(TIMEOUT)).unwrap();
                stream.write_all(b"GET /?delay=200ms HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
                let mut answer = Vec::new();
                stream.read_to_end(&mut answer).unwrap();
                answer
            })
        })
        .collect();
    for c in clients {
        assert!(c.join().unwrap().starts_with(b"HTTP/1.1 200 OK"));
    }
    assert!(t.elapsed() >= Duration::from_millis(400), "{:?}", t.elapsed());
    s.stop();
}

#[test]
fn without_a_workers_limit_delayed_requests_overlap() {
    let s = server();
    let addr = s.addr();
    let t = Instant::now();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(addr).unwrap();
                stream.set_read_timeout(Some(TIMEOUT)).unwrap();
                stream.write_all(b"GET /?delay=1s HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
                stream.read_to_end(&mut Vec::new()).unwrap();
            })
        })
        .collect();
    clients.into_iter().for_each(|c| c.join().unwrap());
    // One after the other they would take 4 s; together about 1 s, with room for a busy machine.
    assert!(t.elapsed() < Duration::from_millis(3000), "{:?}", t.elapsed());
    s.stop();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = server();
    let mut c = Client::new(&s);
    c.send(concat!(
        "GET /?delay=100ms&status=201 HTTP/1.1\r\n\r\n",
        "GET /?status=202 HTTP/1.1\r\n\r\n",
        "HEAD /?status=203 HTTP/1.1\r\n\r\n",
        "GET /?size=2 HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
    ));
    assert_eq!(c.response(false).status, 201);
    assert_eq!(c.response(false).status, 202);
    assert_eq!(c.response(true).status, 203);
    assert_eq!(c.response(false).text(), "he");
    assert_eq!(c.response(false).text(), "hello from hakaru\n");
    s.stop();
}

#[test]
fn a_request_split_over_many_writes_is_still_answered() {
    let s = server();
    let mut c = Client::new(&s);
    let stream = c.reader.get_mut();
    stream.set_nodelay(true).unwrap();
    for piece in ["GE", "T /?sta", "tus=418 HT", "TP/1.1\r", "\nHost: x\r\n", "\r", "\n"] {
        stream.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.response(false).reason, "I'm a teapot");
    s.stop();
}

#[test]
fn request_bodies_are_read_and_discarded_by_length_or_chunks() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("POST /?status=201 HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(c.response(false).status, 201);
    c.send("POST /?status=202 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    assert_eq!(c.response(false).status, 202);
    c.send("PUT /?status=203 HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.response(true).status, 100);
    c.send("abc");
    assert_eq!(c.response(false).status, 203);
    assert_eq!(c.get("/").status, 200);
    s.stop();
}

#[test]
fn a_malformed_request_gets_a_400_and_the_connection_closes() {
    let s = server();
    let mut c = Client::new(&s);
    c.send("BLAH\0 nonsense\r\n\r\n");
    assert_eq!(c.response(false).status, 400);
    assert!(c.rest().is_empty());
    s.stop();
}

#[test]
fn stop_returns_and_ends_stalled_connections() {
    let s = server();
    let mut stream = connect(&s);
    stream.write_all(b"GET /?fault=stall HTTP/1.1\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let addr = s.addr();
    within(Duration::from_secs(5), move || s.stop());
    // The stalled connection ends without an answer, and nobody listens any more.
    let mut rest = Vec::new();
    let ended = stream.read_to_end(&mut rest);
    assert!(rest.is_empty());
    assert!(ended.is_ok() || ended.unwrap_err().kind() == ErrorKind::ConnectionReset);
    assert!(TcpStream::connect(addr).is_err());
}
