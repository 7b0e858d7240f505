//! Endless frames (issue 28): servers that meet every request with bytes that never finish an answer, at full speed
//! or a unit at a time, for tests/hostile.rs and the fuzz targets of tests/fuzz.rs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::hostile::Hostile;
use super::{Output, hakaru_with};

/// What a run may take beyond its own time: process start, planning, the look before the load (kv), writing the
/// result and exit. About 0.1 s on an idle machine (a debug build); the rest is room for a busy 2-core machine.
/// Before issue 28's fix these runs took 3 to 100 s and more.
pub const PROCESS_SLACK: Duration = Duration::from_millis(1500);

/// The bound of issue 28: a step (or a timeout) of `length` ends within 10 % + 100 ms of it, plus the process's
/// own start and end.
pub fn on_time(length: Duration) -> Duration {
    length.mul_f64(1.1) + Duration::from_millis(100) + PROCESS_SLACK
}

/// The most a request cut by its `timeout` may have lasted, in seconds: 10 % + 100 ms over it (issue 28's bound),
/// and 300 ms more for a busy 2-core machine, where a flood keeps the thread that must wake busy (a load of 10
/// once woke it 0.4 s late). A timeout not kept runs to the step's end or, with -n, for many seconds.
pub fn timeout_kept(timeout: Duration) -> f64 {
    timeout.as_secs_f64() * 1.1 + 0.1 + 0.3
}

/// The slowest failed request of the first step, in seconds.
pub fn slowest_failure(out: &Output) -> f64 {
    out.step()["failed_latency"]["max"].as_f64().unwrap() / 1e6
}

/// An answer that never ends: `start` once, then `unit` again and again.
pub struct Frame {
    /// What it is, for messages.
    pub name: &'static str,
    /// The scheme of the URL hakaru is pointed at it with: http, redis or memcache.
    pub scheme: &'static str,
    pub start: &'static [u8],
    pub unit: &'static [u8],
    /// The error kind hakaru counts when the frame comes at full speed: `line_too_long` when a line grows past
    /// `--max-line`, `timeout` when every line ends but the answer does not.
    pub flooded: &'static str,
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

/// The endless answers of issue 28, for HTTP, Redis and memcached.
pub const FRAMES: [Frame; 5] = [
    Frame {
        name: "a Redis array of 2^31-1 integers",
        scheme: "redis",
        start: b"*2147483647\r\n",
        unit: b":1\r\n",
        flooded: "timeout",
    },
    Frame {
        name: "a flood of 100 Continue",
        scheme: "http",
        start: b"",
        unit: b"HTTP/1.1 100 Continue\r\n\r\n",
        flooded: "timeout",
    },
    Frame {
        name: "a chunk extension that never ends",
        scheme: "http",
        start: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;",
        unit: b"ext=",
        flooded: "line_too_long",
    },
    Frame {
        name: "a chunk-size line of endless zeros",
        scheme: "http",
        start: CHUNKED,
        unit: b"0",
        flooded: "line_too_long",
    },
    Frame {
        name: "an endless memcached VALUE line",
        scheme: "memcache",
        start: b"VALUE k 0 ",
        unit: b"9",
        flooded: "line_too_long",
    },
];

impl Frame {
    /// A server sending this frame to every request: at full speed (`gap` zero), or one unit per `gap`.
    pub fn server(&'static self, gap: Duration) -> Hostile {
        Hostile::start(move |s| self.serve(s, gap))
    }

    /// Runs hakaru (`run` or `kv`, `args`, the URL) against a server of this frame sending at full speed (`gap`
    /// zero) or one unit per `gap`: the output, its result document read, and the hakaru process's wall time.
    pub fn run(&'static self, gap: Duration, args: &[&str]) -> (Output, Duration) {
        let server = self.server(gap);
        let url = self.url(&server);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("result.json");
        let mut all = vec![self.command(), "-q", "--json", json.to_str().unwrap()];
        all.extend_from_slice(args);
        all.push(&url);
        let started = Instant::now();
        // Killed well before the harness's minute: a run this long has already failed.
        let mut out = hakaru_with(&all, Duration::from_secs(20), |_| {});
        let took = started.elapsed();
        // Seen with --nocapture: the margin each run left.
        eprintln!("{} {args:?}: {took:.2?}", self.name);
        out.json = std::fs::read_to_string(&json).ok().map(|s| serde_json::from_str(&s).unwrap());
        (out, took)
    }

    /// The URL of `server` for hakaru.
    pub fn url(&self, server: &Hostile) -> String {
        format!("{}://{}{}", self.scheme, server.addr, if self.scheme == "http" { "/" } else { "" })
    }

    /// `run` for HTTP, `kv` for the key-value protocols.
    pub fn command(&self) -> &'static str {
        if self.scheme == "http" { "run" } else { "kv" }
    }

    /// Answers kv's look before the load as an empty server would (`PING`, `DBSIZE`, `stats`), then meets the first request
    /// with the frame until the client goes away (or a minute has passed, so no handler outlives its test).
    fn serve(&self, mut s: TcpStream, gap: Duration) {
        let mut buf = [0u8; 4096];
        loop {
            let got = match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => &buf[..n],
            };
            let empty: &[u8] = if got.windows(4).any(|w| w == b"PING") {
                b"+PONG\r\n"
            } else if got.windows(6).any(|w| w == b"DBSIZE") {
                b":0\r\n"
            } else if got.starts_with(b"stats") {
                b"STAT curr_items 0\r\nEND\r\n"
            } else {
                break;
            };
            if s.write_all(empty).is_err() {
                return;
            }
        }
        // At full speed the units go in writes of about 1 kB: small writes one after the other keep a client's
        // reads always ready, which is what starved its timeout (issue 28: with writes of 1 kB a 1 s timeout ran
        // 100 s and more; with writes of 1 MB the client drains the socket between them and the timer runs).
        let burst = if gap.is_zero() { self.unit.repeat(1024 / self.unit.len()) } else { self.unit.to_vec() };
        let until = Instant::now() + Duration::from_secs(60);
        if s.write_all(self.start).is_err() {
            return;
        }
        while Instant::now() < until && s.write_all(&burst).is_ok() {
            if !gap.is_zero() {
                // The drip's pace, not a wait for something to happen.
                std::thread::sleep(gap);
            }
        }
    }
}
