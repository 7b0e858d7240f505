//! WebSocket runs against a real server no one here wrote (Python's websockets, tests/ws_server.py, on a loopback
//! port its kernel picks), directly and through nginx proxying the upgrade (plain and TLS): exact message counts on
//! both sides. Hostile peers written here (an upgrade never answered or refused, a frame of 2^63 bytes, a message
//! fragmented forever) are counted by kind and bounded in time.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::hakaru;

/// The Python server (tests/ws_server.py in one of its modes): its port, and its counters.
struct Server(common::python::Server);

impl Server {
    fn start(mode: &str) -> Server {
        Server(common::python::Server::start("ws_server.py", &[mode], "websockets"))
    }

    fn port(&self) -> u16 {
        self.0.port
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port())
    }

    fn counts(&mut self) -> serde_json::Value {
        self.0.ask("count")
    }

    /// The counters once the server has seen `n` connections end (a close is counted as its handler returns, a
    /// moment after hakaru has gone).
    fn counts_after_closes(&mut self, n: u64) -> serde_json::Value {
        let mut counts = self.counts();
        let closes = |c: &serde_json::Value| {
            c["closes"].as_object().map_or(0, |m| m.values().map(|v| v.as_u64().unwrap()).sum::<u64>())
        };
        let start = Instant::now();
        while closes(&counts) < n {
            assert!(start.elapsed() < Duration::from_secs(60), "closes seen: {counts}");
            std::thread::sleep(Duration::from_millis(20));
            counts = self.counts();
        }
        counts
    }
}

/// nginx proxying WebSocket upgrades to `server` (tests/nginx/websocket.conf.in), plain and TLS.
fn proxy(server: &Server) -> common::Nginx {
    let conf = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nginx/websocket.conf.in"))
        .unwrap()
        .replace("@BACKEND@", &server.port().to_string());
    common::Nginx::start_text(&conf)
}

fn run(url: &str, extra: &[&str]) -> common::Output {
    let mut args = vec!["run", "--no-monitor", url];
    args.extend_from_slice(extra);
    hakaru(&args)
}

#[test]
fn twenty_thousand_templated_messages_are_counted_exactly_on_both_sides() {
    let mut server = Server::start("echo");
    let out = run(
        &server.url(),
        &["-c", "50", "-n", "20000", "--message", r#"{"n":{{seq}}}"#, "-H", "Authorization: Bearer s3cret"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["requests"], 20000, "{step}");
    assert_eq!(step["ok"], 20000, "{step}");
    assert_eq!(out.status_count("200"), 20000);
    assert_eq!(step["protocol"], "websocket");
    assert_eq!(out.doc()["settings"]["ws_mode"], "exchange");
    let counts = server.counts_after_closes(50);
    assert_eq!(counts["messages"], 20000, "{counts}");
    // {{seq}} filled per message: every message differs.
    assert_eq!(counts["distinct"], 20000, "{counts}");
    assert_eq!(counts["connections"], 50, "{counts}");
    // -H goes on every upgrade request, and no secret of it is shown.
    assert_eq!(counts["with_header"], 50, "{counts}");
    // Every connection ended with the closing handshake, not a dropped socket.
    assert_eq!(counts["closes"]["1000"], 50, "{counts}");
    assert!(!out.stdout.contains("s3cret") && !out.doc().to_string().contains("s3cret"));
    let errors = common::schema_errors(out.doc());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn pings_are_answered_with_pongs_and_a_duration_run_works_in_an_open_loop() {
    let mut server = Server::start("ping");
    // The server pings before each echo and waits for the pong: an unanswered ping would time every message out.
    let out = run(&server.url(), &["-c", "2", "-n", "300", "--message", "hi", "--timeout", "30s"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    let counts = server.counts_after_closes(2);
    assert_eq!(counts["pongs"], 300, "{counts}");
    // Open loop: a rate of messages over the open connections.
    let mut echo = Server::start("echo");
    let out = run(&echo.url(), &["-c", "4", "--rate", "200", "-d", "2s", "--message", "x", "--binary"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let ok = step["ok"].as_u64().unwrap();
    assert!(ok >= 200, "{step}");
    assert_eq!(step["errors"], 0, "{step}");
    let counts = echo.counts();
    assert!(counts["messages"].as_u64().unwrap() >= ok, "{counts}");
}

#[test]
fn through_nginx_proxying_the_upgrade_plain_and_tls() {
    let mut server = Server::start("echo");
    let nginx = proxy(&server);
    let url = format!("ws://127.0.0.1:{}/chat", nginx.port);
    let out = run(&url, &["-c", "10", "-n", "2000", "--message", "m{{seq}}"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 2000, "{}", out.step());
    assert_eq!(server.counts_after_closes(10)["messages"], 2000);
    // wss:// with nginx's self-signed certificate: -k.
    let url = format!("wss://localhost:{}/chat", nginx.tls_port);
    let out = run(&url, &["-c", "4", "-n", "1000", "--message", "t{{seq}}", "-k"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 1000, "{}", out.step());
    let counts = server.counts_after_closes(14);
    assert_eq!(counts["messages"], 3000, "{counts}");
    assert_eq!(counts["closes"]["1000"], 14, "{counts}");
    // Without -k the certificate is refused, counted as tls.
    let out = run(&url, &["-c", "1", "-n", "3", "--message", "t"]);
    assert_eq!(out.error_count("tls"), 3, "{}", out.step());
}

#[test]
fn a_close_with_1011_is_counted_by_its_code() {
    let mut server = Server::start("close");
    let out = run(&server.url(), &["-c", "2", "-n", "10", "--message", "hello"]);
    let step = out.step();
    assert_eq!(step["requests"], 10, "{step}");
    assert_eq!(out.error_count("ws_close_1011"), 10, "{step}");
    assert!(sample(&out, "ws_close_1011").contains("1011 server fault"), "{}", out.step());
    assert_eq!(server.counts_after_closes(10)["messages"], 10);
}

/// The sample message kept for errors of `kind`.
fn sample(out: &common::Output, kind: &str) -> String {
    let kinds = out.step()["error_kinds"].as_array().unwrap();
    let entry = kinds.iter().find(|e| e["kind"] == kind).unwrap_or_else(|| panic!("no {kind}: {}", out.step()));
    entry["sample"].as_str().unwrap().to_string()
}

/// A server written here: each connection handed to `serve` on a thread of its own.
fn hostile(serve: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || serve(stream));
        }
    });
    format!("ws://127.0.0.1:{port}/")
}

/// Reads the upgrade request's head and answers it 101 as RFC 6455 says.
fn upgrade(stream: &mut TcpStream) -> Option<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let key = text.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))?.trim().to_string();
    let accept = hakaru::protocol::ws::handshake::accept_for(&key);
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    stream.write_all(answer.as_bytes()).ok()
}

/// Reads one masked client frame whole (small ones only).
fn read_frame(stream: &mut TcpStream) -> Option<()> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).ok()?;
    let len = (head[1] & 0x7f) as usize;
    assert!(len < 126, "the tests send short messages");
    let mut rest = vec![0u8; 4 + len];
    stream.read_exact(&mut rest).ok()
}

fn ended_on_time(start: Instant, out: &common::Output) {
    assert!(start.elapsed() < Duration::from_secs(45), "took {:?}: {}", start.elapsed(), out.stderr);
    assert_ne!(out.code, -1, "killed by the watchdog");
}

#[test]
fn an_upgrade_never_answered_is_a_connect_timeout_on_time() {
    let url = hostile(|mut s| {
        // Reads the request and says nothing, until the client goes.
        let mut buf = [0u8; 1024];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let start = Instant::now();
    let out = run(&url, &["-c", "1", "-n", "3", "--message", "x", "--connect-timeout", "1s"]);
    ended_on_time(start, &out);
    assert_eq!(out.error_count("connect_timeout"), 3, "{}", out.step());
    assert!(sample(&out, "connect_timeout").contains("WebSocket upgrade"), "{}", out.step());
    // Each attempt gave up at its 1 s, not at the 5 s default nor later: what only the deadline held meets (a
    // busy machine may add a little, never seconds).
    let failed = &out.step()["failed_latency"];
    let (min, max) = (failed["min"].as_u64().unwrap(), failed["max"].as_u64().unwrap());
    assert!(min >= 990_000 && max < 2_500_000, "1 s connect timeouts took {min} to {max} us: {failed}");
}

/// Reads the upgrade request and answers it with `answer` (no 101).
fn refuse(mut s: TcpStream, answer: &[u8]) {
    let mut buf = [0u8; 4096];
    let _ = s.read(&mut buf);
    let _ = s.write_all(answer);
}

#[test]
fn an_upgrade_refused_is_counted_with_its_status() {
    // A status with a kind of its own, and one without (counted together, its status in the sample).
    let forbidden: fn(TcpStream) = |s| refuse(s, b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
    let teapot: fn(TcpStream) = |s| refuse(s, b"HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\n\r\n");
    for (server, kind, shown) in
        [(forbidden, "ws_upgrade_status_403", "403 Forbidden"), (teapot, "ws_upgrade_status", "418")]
    {
        let out = run(&hostile(server), &["-c", "1", "-n", "4", "--message", "x"]);
        assert_eq!(out.error_count(kind), 4, "{}", out.step());
        assert!(sample(&out, kind).contains(shown), "{}", out.step());
    }
}

#[test]
fn a_frame_of_two_to_the_63_bytes_is_refused_at_once() {
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_some() && read_frame(&mut s).is_some() {
            let mut frame = vec![0x82, 127];
            frame.extend_from_slice(&(1u64 << 63).to_be_bytes());
            let _ = s.write_all(&frame);
            // Holds the connection: only the client's bound ends the message.
            let mut buf = [0u8; 1024];
            while s.read(&mut buf).is_ok_and(|n| n > 0) {}
        }
    });
    let start = Instant::now();
    let out = run(&url, &["-c", "2", "-n", "6", "--message", "x", "--timeout", "60s"]);
    ended_on_time(start, &out);
    assert_eq!(out.error_count("ws_message_too_large"), 6, "{}", out.step());
}

#[test]
fn a_message_fragmented_forever_is_cut_at_the_bound() {
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_some() && read_frame(&mut s).is_some() {
            let mut frame = vec![0x01, 126, 0x03, 0xE8];
            frame.extend_from_slice(&[b'a'; 1000]);
            let _ = s.write_all(&frame);
            frame[0] = 0x00;
            // Continuations without end, until the client goes.
            while s.write_all(&frame).is_ok() {}
        }
    });
    let start = Instant::now();
    let out = run(&url, &["-c", "1", "-n", "3", "--message", "x", "--max-message", "64KiB", "--timeout", "60s"]);
    ended_on_time(start, &out);
    assert_eq!(out.error_count("ws_message_too_large"), 3, "{}", out.step());
    // The bytes' bound cut it, long before the fragments' count would have.
    assert!(sample(&out, "ws_message_too_large").contains("past --max-message"), "{}", out.step());
}

#[test]
fn bad_websocket_input_is_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("msg.bin");
    std::fs::write(&binary, [0xff, 0xfe, 0]).unwrap();
    let binary = binary.to_str().unwrap();
    let cases: [(&[&str], &str); 17] = [
        (&["run", "http://127.0.0.1:1/", "--message", "x"], "--message is for WebSocket"),
        (&["run", "http://127.0.0.1:1/", "--expect", "x"], "--expect is for WebSocket"),
        (&["run", "http://127.0.0.1:1/", "--ws-mode", "listen"], "--ws-mode is for WebSocket"),
        (&["run", "ws://127.0.0.1:1/", "--message", "x", "--no-keepalive"], "--no-keepalive with a ws:// URL"),
        (&["run", "ws://127.0.0.1:1/", "-b", "x"], "give the message with --message"),
        (&["run", "ws://127.0.0.1:1/", "--message", "x", "-m", "POST"], "the upgrade request is a GET"),
        (&["run", "ws://127.0.0.1:1/x{{seq}}", "--message", "x"], "{{...}} in a ws:// URL"),
        (&["run", "ws://127.0.0.1:1/"], "--message TEXT"),
        (&["run", "ws://127.0.0.1:1/", "ws://127.0.0.1:2/", "--message", "x"], "one WebSocket target"),
        (&["run", "ws://127.0.0.1:1/", "--message-file", binary], "add --binary"),
        (&["run", "ws://127.0.0.1:1/", "--message", "x", "--max-message", "10"], "--max-message '10'"),
        (&["run", "http://127.0.0.1:1/", "--in-flight", "4"], "--in-flight is for WebSocket"),
        (&["run", "http://127.0.0.1:1/", "--match-field", "/id"], "--match-field is for WebSocket"),
        (&["run", "ws://127.0.0.1:1/", "--message", "x", "--in-flight", "0"], "--in-flight 0: give 1 to 1000"),
        (&["run", "ws://127.0.0.1:1/", "--ws-mode", "listen", "--in-flight", "2"], "exchange mode's"),
        (&["run", "ws://127.0.0.1:1/", "--message", r#"{"id":1}"#, "--match-field", "id"], "not a JSON pointer"),
        (&["run", "ws://127.0.0.1:1/", "--message", r#"{"n":{{seq}}}"#, "--match-field", "/id"], "has no id there"),
    ];
    for (args, says) in cases {
        let out = hakaru(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
    }
}

#[test]
fn listening_counts_each_pushed_message_and_subscribes_once_per_connection() {
    let mut server = Server::start("push");
    let out = run(&server.url(), &["-c", "5", "-n", "1000", "--ws-mode", "listen", "--message", "subscribe"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 1000, "{step}");
    // A message's latency is the gap since the one before it: the server pushes every 10 ms.
    let p50_us = step["latency"]["percentiles"]["p50"].as_u64().unwrap_or_else(|| panic!("{step}"));
    assert!((5_000..50_000).contains(&p50_us), "{step}");
    let counts = server.counts_after_closes(5);
    assert_eq!(out.doc()["settings"]["ws_mode"], "listen");
    assert_eq!(counts["messages"], 5, "one subscription per connection: {counts}");
    // 100 messages a second on each connection (a debug build's own pace may fall behind, never ahead).
    let per_connection = step["websocket"]["messages_per_connection_per_s"].as_f64().unwrap();
    assert!((10.0..=110.0).contains(&per_connection), "{}", step["websocket"]);
    assert!(out.stdout.contains(" messages/s a connection"), "{}", out.stdout);
    assert!(out.stdout.contains("messages/s   (1000 messages in") && !out.stdout.contains("req/s"), "{}", out.stdout);
    assert_eq!(counts["connections"], 5, "{counts}");
}

#[test]
fn listening_with_a_stamp_field_measures_each_messages_fan_out_delay() {
    let server = Server::start("stamped");
    // Each connection's first message is "hello" (no send time), then JSON whose send time is 30 ms before it was
    // sent: every delay is 30 ms or more, whatever the machine, and under a second.
    let out = run(&server.url(), &["-c", "4", "-n", "400", "--ws-mode", "listen", "--stamp-field", "/sent_ms"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 400, "{step}");
    let ws = &step["websocket"];
    assert_eq!(ws["stamp_field"], "/sent_ms", "{ws}");
    assert_eq!(ws["stamps_missing"], 4, "one hello a connection: {ws}");
    assert_eq!(ws["stamps_ahead"], 0, "{ws}");
    let fan_out = &ws["fan_out"];
    assert_eq!(fan_out["count"], 396, "{ws}");
    let (min, max) = (fan_out["min"].as_u64().unwrap(), fan_out["max"].as_u64().unwrap());
    assert!(min >= 30_000 && max < 1_000_000, "fan-out delays {min}..{max} us: {ws}");
    assert!(
        out.stdout.contains("fan-out      p50 ") && out.stdout.contains("from the send time at /sent_ms"),
        "{}",
        out.stdout
    );
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    // Read in listen mode only, at a JSON pointer.
    for (args, says) in [
        (&["--stamp-field", "/t", "--message", "x"][..], "in --ws-mode listen only"),
        (&["--ws-mode", "listen", "--stamp-field", "t"][..], "not a JSON pointer"),
    ] {
        let out = run(&server.url(), &[&["-n", "1"][..], args].concat());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("--stamp-field") && out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_ramp_of_connections_is_charted_over_time_from_the_windows() {
    let server = Server::start("echo");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ramp.json");
    let json_s = json.to_str().unwrap();
    // k6's stages: 0 to 8 clients over 2 s, a connection each, echoing; windows of 250 ms.
    let args = ["--message", "hi", "--stages", "2s:8", "--window", "250ms", "--json", json_s];
    let out = run(&server.url(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let svg = dir.path().join("open.svg");
    let o = hakaru(&["chart", "--over-time", "--metric", "connections", "-o", svg.to_str().unwrap(), json_s]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("open connections") && text.contains("seconds from the start"), "{text}");
    let drawn = text.lines().filter(|l| {
        l.starts_with("<polyline") && l.to_uppercase().contains("#1F77B4") && l.contains("stroke-width=\"2\"")
    });
    assert_eq!(drawn.count(), 1, "the run's line: {text}");
    // The line follows the windows' open connections, which grow with the ramp (the last window's at least the
    // first's: clients are added, never taken away, by a ramp up).
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let windows = doc["steps"][0]["windows"].as_array().unwrap().clone();
    let open: Vec<u64> = windows.iter().map(|w| w["open_connections"].as_u64().unwrap()).collect();
    assert!(open.len() >= 2 && open.last() >= open.first() && open.iter().any(|&n| n > 1), "{open:?}");
    // Per step it is not a figure: one line saying to draw it over time.
    let o = hakaru(&["chart", "--metric", "connections", "-o", svg.to_str().unwrap(), json_s]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("add --over-time"), "{}", o.stderr);
}

#[test]
fn a_lua_script_makes_each_message_and_reads_each_answer() {
    let mut server = Server::start("echo");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("chat.lua");
    // wrk's request() returns each message (no HTTP text), response() gets each answer as its body: the echo
    // must be the message just sent (one client, so no other message comes between), else the run fails.
    std::fs::write(
        &script,
        "local n = 0\nlocal last\n\
         request = function() n = n + 1; last = '{\"n\":' .. n .. '}'; return last end\n\
         response = function(status, headers, body)\n\
           if body ~= last then error('the echo ' .. body .. ' is not ' .. last) end\n\
         end\n",
    )
    .unwrap();
    let out = run(&server.url(), &["-c", "1", "-n", "300", "-s", script.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.step()["ok"], 300, "{}", out.step());
    let counts = server.counts_after_closes(1);
    assert_eq!((counts["messages"].as_u64(), counts["distinct"].as_u64()), (Some(300), Some(300)), "{counts}");
    // A script's check that fails ends the run, saying where.
    std::fs::write(&script, "response = function(status, headers, body) error('not ' .. body) end\n").unwrap();
    let out = run(&server.url(), &["-c", "1", "-n", "10", "--message", "hi", "-s", script.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(format!("{}{}", out.stdout, out.stderr).contains("not hi"), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn connect_mode_opens_upgrades_and_closes_a_connection_per_request() {
    let mut server = Server::start("echo");
    let out = run(&server.url(), &["-c", "4", "-n", "200", "--ws-mode", "connect"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 200, "{}", out.step());
    // A connection's closing handshake runs beside the next one: counted apart, never more than -c open ("8 of 4
    // open at once" before), and no keep-alive said of WebSocket.
    assert!(out.step()["connections"]["max_open"].as_u64() <= Some(4), "{}", out.step()["connections"]);
    assert!(out.stdout.contains("WebSocket, 4 connections") && !out.stdout.contains("keep-alive"), "{}", out.stdout);
    let counts = server.counts_after_closes(200);
    assert_eq!(counts["connections"], 200, "{counts}");
    assert_eq!(counts["closes"]["1000"], 200, "every connection closed with the closing handshake: {counts}");
    assert_eq!(counts["messages"], 0, "{counts}");
    // With a message, one exchange on each connection.
    let out = run(&server.url(), &["-c", "4", "-n", "100", "--ws-mode", "connect", "--message", "one"]);
    assert_eq!(out.step()["ok"], 100, "{}", out.step());
    let counts = server.counts_after_closes(300);
    assert_eq!(counts["messages"], 100, "{counts}");
    // A wrong answer ends its request as a right one does: its connection closed (in a task of its own, so the next
    // one may open before it is gone: two at most, where each one left open made 20).
    let out =
        run(&server.url(), &["-c", "1", "-n", "20", "--ws-mode", "connect", "--message", "one", "--expect", "two"]);
    assert_eq!(out.error_count("wrong_value"), 20, "{}", out.step());
    let max_open = out.step()["connections"]["max_open"].as_u64().unwrap();
    assert!(max_open <= 2, "{}", out.step()["connections"]);
    let counts = server.counts_after_closes(320);
    assert_eq!(counts["closes"]["1000"], 320, "{counts}");
}

#[test]
fn a_sweep_over_clients_measures_each_step_over_websocket() {
    let mut server = Server::start("echo");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let json = json.to_str().unwrap();
    let url = server.url();
    let args = ["sweep", "-q", "--no-monitor", "--clients", "1,4", "-d", "500ms", "--interval", "0s", "--json", json];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--message", "s{{seq}}", &url]);
    let out = hakaru(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{doc}");
    let mut ok = 0;
    for step in steps {
        assert_eq!(step["protocol"], "websocket", "{step}");
        assert_eq!(step["errors"], 0, "{step}");
        assert!(step["ok"].as_u64().unwrap() > 0, "{step}");
        ok += step["ok"].as_u64().unwrap();
    }
    // The server saw every message a step counted (and those of the warm-up, if any, and the unfinished).
    let counts = server.counts_after_closes(5);
    assert!(counts["messages"].as_u64().unwrap() >= ok, "{counts}");
    let errors = common::schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_dropped_connection_is_1006_and_a_masked_frame_a_protocol_error() {
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_some() && read_frame(&mut s).is_some() {
            // Gone without a close frame.
            drop(s);
        }
    });
    let out = run(&url, &["-c", "1", "-n", "3", "--message", "x"]);
    assert_eq!(out.error_count("ws_close_1006"), 3, "{}", out.step());
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_some() && read_frame(&mut s).is_some() {
            // A server never masks (RFC 6455 5.1).
            let _ = s.write_all(&[0x81, 0x81, 1, 2, 3, 4, b'x' ^ 1]);
            let mut buf = [0u8; 1024];
            while s.read(&mut buf).is_ok_and(|n| n > 0) {}
        }
    });
    let out = run(&url, &["-c", "1", "-n", "3", "--message", "x"]);
    assert_eq!(out.error_count("ws_protocol_error"), 3, "{}", out.step());
}

#[test]
fn a_study_compares_the_direct_server_with_the_nginx_proxied_one() {
    let mut server = Server::start("echo");
    let nginx = proxy(&server);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("ws.toml");
    let text = format!(
        r#"
name = "ws-proxy"
[[target]]
name = "direct"
url = "ws://127.0.0.1:{}/"
monitor = ["none"]
[[target]]
name = "nginx"
url = "ws://127.0.0.1:{}/"
monitor = ["none"]
[[workload]]
name = "echo"
message = "m{{{{seq}}}}"
[load]
connections = 2
duration = "300ms"
repeat = 1
pause = "0s"
"#,
        server.port(),
        nginx.port
    );
    std::fs::write(&file, text).unwrap();
    let out_dir = tmp.path().join("out");
    let out = common::hakaru_with(
        &["study", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()],
        Duration::from_secs(120),
        |_| {},
    );
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("study.json")).unwrap()).unwrap();
    let cases = m["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{m}");
    let mut ok = 0;
    for c in cases {
        assert_eq!(c["status"], "ok", "{c}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(c["file"].as_str().unwrap())).unwrap()).unwrap();
        let step = &doc["steps"][0];
        assert_eq!(step["protocol"], "websocket", "{step}");
        assert_eq!(step["errors"], 0, "{step}");
        ok += step["ok"].as_u64().unwrap();
    }
    assert!(ok > 0);
    let counts = server.counts_after_closes(4);
    assert!(counts["messages"].as_u64().unwrap() >= ok, "{counts}");
}

#[test]
fn an_answer_other_than_expect_is_a_wrong_value_on_the_same_connection() {
    let mut server = Server::start("echo");
    let out = run(&server.url(), &["-c", "2", "-n", "100", "--message", "hello", "--expect", "hello"]);
    assert_eq!(out.step()["ok"], 100, "{}", out.step());
    // A longer answer, a shorter one: both differ.
    for expect in ["hell", "hello!"] {
        let out = run(&server.url(), &["-c", "2", "-n", "50", "--message", "hello", "--expect", expect]);
        assert_eq!(out.error_count("wrong_value"), 50, "{}", out.step());
        assert!(sample(&out, "wrong_value").contains("\"hello\""), "{}", out.step());
        assert_eq!(out.step()["connections"]["opened"], 2, "{}", out.step());
    }
    assert_eq!(server.counts_after_closes(6)["messages"], 200);
}

#[test]
fn a_sweep_to_five_thousand_connections_shows_latency_as_they_grow() {
    let mut server = Server::start("echo");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let json = json.to_str().unwrap();
    let url = server.url();
    let clients = [10u64, 100, 1000, 5000];
    // 10 s a step: the Python server answers the first messages of 5,000 new connections after about 3 s on a
    // quiet machine.
    let args = ["sweep", "--no-monitor", "--clients", "10,100,1000,5000", "-d", "10s", "--interval", "0s"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--timeout", "60s", "--connect-timeout", "60s", "--json", json]);
    args.extend_from_slice(&["--message", "s{{seq}}", &url]);
    let out = common::hakaru_with(&args, Duration::from_secs(300), |_| {});
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4, "{doc}");
    let mut ok = 0;
    for (step, clients) in steps.iter().zip(clients) {
        assert_eq!(step["errors"], 0, "{step}");
        // Every client held its connection open: the step measured at that many connections.
        assert_eq!(step["connections"]["max_open"], clients, "{}", step["connections"]);
        assert_eq!(step["connections"]["opened"], clients, "{}", step["connections"]);
        // Each step's latency, where the server answered in it: at 5,000 new connections the Python server may
        // answer none within the step on a loaded machine (its upgrades queue), and then every message is still
        // waiting, none failed.
        let answered = step["ok"].as_u64().unwrap();
        if answered > 0 || clients < 5000 {
            let p50 = &step["latency"]["percentiles"]["p50"];
            assert!(p50.as_u64().is_some_and(|us| us > 0), "{step}");
        } else {
            assert_eq!(step["unfinished"], clients, "{step}");
        }
        // The table shows each step's latency on a line of its own.
        assert!(out.stdout.lines().any(|l| l.trim_start().starts_with(&clients.to_string())), "{}", out.stdout);
        ok += step["ok"].as_u64().unwrap();
    }
    let counts = server.counts_after_closes(clients.iter().sum());
    assert_eq!(counts["connections"], clients.iter().sum::<u64>(), "{counts}");
    assert!(counts["messages"].as_u64().unwrap() >= ok, "{counts}");
}

#[test]
fn messages_in_flight_share_their_connections_and_are_counted_exactly() {
    let mut server = Server::start("echo");
    let out = run(&server.url(), &["-c", "5", "--in-flight", "8", "-n", "4000", "--message", r#"{"n":{{seq}}}"#]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 4000, "{step}");
    // 5 connections, each carrying 8 clients' messages.
    assert_eq!(step["connections"]["opened"], 5, "{}", step["connections"]);
    assert_eq!(step["websocket"]["in_flight"], 8, "{step}");
    assert_eq!(step["websocket"]["unmatched_not_in_flight"], 0, "{step}");
    assert!(out.stdout.contains("in flight    8 messages a connection, answers paired in order"), "{}", out.stdout);
    let counts = server.counts_after_closes(5);
    assert_eq!(counts["messages"], 4000, "{counts}");
    assert_eq!(counts["distinct"], 4000, "{counts}");
    assert_eq!(counts["connections"], 5, "{counts}");
    // The last of each connection's clients closed it with the closing handshake.
    assert_eq!(counts["closes"]["1000"], 5, "{counts}");
    let errors = common::schema_errors(out.doc());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn match_field_pairs_answers_out_of_order_by_id_and_counts_the_unmatched() {
    // The server answers after random delays (out of order), never answers one message in 25, and sends before
    // some answers a message with an id no message had and one without an id.
    let mut server = Server::start("scramble");
    let args = ["-c", "2", "--in-flight", "4", "-n", "400", "--timeout", "5s", "--match-field", "/n"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--message", r#"{"n":{{seq}},"pad":"x"}"#]);
    let out = run(&server.url(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    let counts = server.counts_after_closes(2);
    assert_eq!(counts["messages"], 400, "{counts}");
    assert_eq!(step["requests"], 400, "{step}");
    let (answered, dropped) = (counts["answered"].as_u64().unwrap(), counts["dropped"].as_u64().unwrap());
    assert!(dropped > 0 && counts["unknown"].as_u64().unwrap() > 0, "{counts}");
    // Each answer went to its own message: the unanswered ones timed out, the others were answered, and a
    // timed-out one kept its connection (2 opened).
    assert_eq!(step["ok"], answered, "{step}\n{counts}");
    assert_eq!(out.error_count("timeout"), dropped, "{step}\n{counts}");
    assert_eq!(step["connections"]["opened"], 2, "{}", step["connections"]);
    let ws = &step["websocket"];
    assert_eq!(ws["match_field"], "/n", "{ws}");
    assert_eq!(ws["unmatched_no_id"], counts["no_id"], "{ws}\n{counts}");
    assert_eq!(ws["unmatched_not_in_flight"], counts["unknown"], "{ws}\n{counts}");
    // Four messages in flight on a connection at most, and more than one at some point.
    let pending = counts["max_pending"].as_u64().unwrap();
    assert!((2..=4).contains(&pending), "{counts}");
    let errors = common::schema_errors(out.doc());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_lost_answer_gives_up_its_connection_unless_answers_are_paired_by_id() {
    // A server that upgrades and reads, never answering.
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_some() {
            while read_frame(&mut s).is_some() {}
        }
    });
    // Answers taken in order: a message that timed out takes its connection with it (its late answer would be
    // taken for the next message's), and the others in flight on it.
    let args = ["-c", "1", "--in-flight", "3", "-n", "6", "--timeout", "1s", "--connect-timeout", "2s"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--message", r#"{"n":{{seq}}}"#]);
    let start = Instant::now();
    let out = run(&url, &args);
    ended_on_time(start, &out);
    let step = out.step();
    assert_eq!(out.error_count("timeout"), 2, "{step}");
    assert_eq!(out.error_count("closed"), 4, "{step}");
    assert!(sample(&out, "closed").contains("--match-field"), "{step}");
    assert_eq!(step["connections"]["opened"], 2, "{step}");
    // Paired by id, a message that timed out leaves the others and the connection be.
    args.extend_from_slice(&["--match-field", "/n"]);
    let out = run(&url, &args);
    ended_on_time(start, &out);
    let step = out.step();
    assert_eq!(out.error_count("timeout"), 6, "{step}");
    assert_eq!(step["connections"]["opened"], 1, "{step}");
}

#[test]
fn upgrade_headers_take_templates_filled_by_the_message_that_opens_the_connection() {
    let mut server = Server::start("echo");
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.csv");
    std::fs::write(&rows, "user,token\nalice,s3cret\nbob,s3cret\ncarol,s3cret\n").unwrap();
    let args = ["-c", "3", "-t", "1", "-n", "30", "--data", rows.to_str().unwrap(), "--message", r#"{"u":"{{user}}"}"#];
    let mut args = args.to_vec();
    args.extend_from_slice(&["-H", "Authorization: Bearer {{token}}", "-H", "X-User: {{user}}"]);
    let out = run(&server.url(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 30, "{}", out.step());
    let counts = server.counts_after_closes(3);
    assert_eq!(counts["connections"], 3, "{counts}");
    // Each connection's upgrade carried its own row's values: the three clients' first messages took the rows in
    // turn.
    assert_eq!(counts["with_header"], 3, "{counts}");
    assert_eq!(counts["users"], serde_json::json!({"alice": 1, "bob": 1, "carol": 1}), "{counts}");
    assert_eq!(counts["distinct"], 3, "{counts}");
    assert!(!out.stdout.contains("s3cret") && !out.doc().to_string().contains("s3cret"));
}

#[test]
fn an_open_loop_over_messages_in_flight_says_when_every_slot_was_busy() {
    // Answers after 0-20 ms, two in flight on one connection: fewer than 300 a second get through.
    let server = Server::start("scramble");
    let args = ["-c", "1", "--in-flight", "2", "--rate", "300", "-d", "2s", "--match-field", "/n"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--message", r#"{"n":{{seq}}}"#]);
    let out = run(&server.url(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("messages in flight (1 connections x 2) were busy"), "{}", out.stdout);
    assert!(out.step()["ok"].as_u64().unwrap() > 0, "{}", out.step());
}

/// Issue 50: a close reason holding ESC sequences, CR and LF reached the terminal as it came: a server could forge
/// output lines and set the terminal's title. What a peer sends is escaped before it is shown.
#[test]
fn a_close_reason_with_terminal_sequences_is_shown_escaped() {
    let url = hostile(|mut s| {
        if upgrade(&mut s).is_none() || read_frame(&mut s).is_none() {
            return;
        }
        let reason = b"\x1b]0;pwned\x07\r\n  status       200: 999";
        let mut frame = vec![0x88, (2 + reason.len()) as u8, 0x03, 0xf3];
        frame.extend_from_slice(reason);
        let _ = s.write_all(&frame);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    let out = run(&url, &["-c", "1", "-n", "2", "--message", "x", "--no-tui"]);
    assert_eq!(out.error_count("ws_close_1011"), 2, "{}", out.step());
    assert!(!out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'), "{:?}", out.stdout);
    assert!(!out.stdout.lines().any(|l| l.starts_with("  status       200: 999")), "{}", out.stdout);
    assert!(sample(&out, "ws_close_1011").contains("\\u{1b}]0;pwned\\u{7}\\r\\n"), "{}", out.step());
}
