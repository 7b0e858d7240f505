//! `--http3` against a real HTTP/3 server on loopback (Debian's Caddy: QUIC on its HTTPS port, HTTP/1.1 and HTTP/2
//! on the same port over TCP): exact request counts against Caddy's own access log, the refusal of a server
//! without HTTP/3 before any load, and the deadlines held when the server stops answering.

use crate::common;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, hakaru, hakaru_with, wait_for, wait_listening};

/// Caddy serving `hello` on a free loopback port with a self-signed certificate, its access log as JSON lines in
/// a file, its admin endpoint off and everything it writes under a temporary directory.
struct Caddy {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Caddy {
    /// `protocols`: Caddy's names, "h1", "h2", "h3".
    fn start(protocols: &[&str]) -> Caddy {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        certificate(p);
        let port = free_port();
        let config = serde_json::json!({
            "admin": {"disabled": true},
            "logging": {"logs": {
                "default": {"exclude": ["http.log.access.access"]},
                "access": {
                    "writer": {"output": "file", "filename": p.join("access.log")},
                    "encoder": {"format": "json"},
                    "include": ["http.log.access.access"]
                }
            }},
            "apps": {
                "http": {
                    "http_port": free_port(),
                    "servers": {"s": {
                        "listen": [format!("127.0.0.1:{port}")],
                        "protocols": protocols,
                        "automatic_https": {"disable": true},
                        "tls_connection_policies": [{"default_sni": "localhost"}],
                        "logs": {"default_logger_name": "access"},
                        "routes": [{"handle": [{"handler": "static_response", "status_code": 200, "body": "hello"}]}]
                    }}
                },
                "tls": {"certificates": {"load_files": [{"certificate": p.join("cert.pem"), "key": p.join("key.pem")}]}}
            }
        });
        let child = common::spawn_caddy(p, &config);
        let caddy = Caddy { child, dir, port };
        wait_listening(caddy.addr(), Duration::from_secs(30));
        // Its QUIC listener opens beside the TCP one: its own line says when.
        wait_for(Duration::from_secs(30), || caddy.said("serving initial configuration"));
        if protocols.contains(&"h3") {
            assert!(caddy.said("enabling HTTP/3 listener"), "{}", caddy.errors());
        }
        caddy
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    fn errors(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("caddy.err")).unwrap_or_default()
    }

    fn said(&self, text: &str) -> bool {
        self.errors().contains(text)
    }

    /// Requests in the access log by protocol: (HTTP/3.0, HTTP/2.0, others).
    fn logged(&self) -> (u64, u64, u64) {
        let log = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        let mut counts = (0, 0, 0);
        for line in log.lines().filter(|l| !l.trim().is_empty()) {
            let entry: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                // A line being written as the log is read: the next read has it whole.
                Err(_) => continue,
            };
            match entry["request"]["proto"].as_str() {
                Some("HTTP/3.0") => counts.0 += 1,
                Some("HTTP/2.0") => counts.1 += 1,
                _ => counts.2 += 1,
            }
        }
        counts
    }

    /// Waits until the access log holds `n` requests in all (Caddy writes each as it ends), for at most a minute.
    fn wait_logged(&self, n: u64) -> (u64, u64, u64) {
        let mut seen = (0, 0, 0);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            seen = self.logged();
            if seen.0 + seen.1 + seen.2 >= n {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // A moment's more reading would show a line past `n`: none may come.
        seen
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill sends a signal to the test's own child.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A self-signed certificate for localhost and 127.0.0.1 (Caddy picks it by the connection's address when the
/// client sends no server name, as a client of an IP address does).
fn certificate(dir: &Path) {
    common::self_signed_certificate_with(dir, &["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]);
}

fn requests(out: &common::Output) -> u64 {
    out.step()["requests"].as_u64().unwrap_or_else(|| panic!("no request count: {}", out.stderr))
}

#[test]
fn every_request_over_four_connections_and_sixteen_streams_is_in_caddys_log_as_http3() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let n = 20_000;
    let out = hakaru_with(
        &["run", "--http3", "-k", "-c", "4", "--streams", "16", "-n", &n.to_string(), &caddy.url()],
        Duration::from_secs(240),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(requests(&out), n);
    assert_eq!(out.status_count("200"), n, "{}", out.stdout);
    assert_eq!(out.doc()["settings"]["http_version"], "3");
    assert_eq!(out.doc()["settings"]["streams"], 16);
    let step = out.step();
    assert_eq!(step["connections"]["opened"], 4, "{}", step["connections"]);
    // The QUIC handshake is the connection's TLS phase.
    assert_eq!(step["phases"]["connections_opened"], 4, "{}", step["phases"]);
    assert!(step["phases"]["tls_handshake"].is_object(), "{}", step["phases"]);
    // QUIC's own figures: at least the four handshakes' datagrams each way, no send without a datagram, a packet
    // in every datagram (the handshake coalesces several into one).
    let quic = &step["quic"];
    let count = |k: &str| quic[k].as_u64().unwrap_or_else(|| panic!("quic.{k}: {quic}"));
    assert!(count("datagrams_sent") >= 4 && count("datagrams_received") >= 4, "{quic}");
    assert!((1..=count("datagrams_sent")).contains(&count("send_calls")), "{quic}");
    assert!(
        count("packets_sent") >= count("datagrams_sent") && count("packets_lost") <= count("packets_sent"),
        "{quic}"
    );
    assert!(quic["datagrams_per_send"].as_f64().is_some_and(|r| r >= 1.0), "{quic}");
    assert!(out.stdout.contains("datagrams sent in"), "{}", out.stdout);
    assert_eq!(caddy.wait_logged(n), (n, 0, 0), "Caddy's log by protocol (HTTP/3, HTTP/2, other)");
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
}

#[test]
fn an_open_loop_sends_its_slots_over_http3() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    // From another loopback address (--source-address binds the QUIC socket), seen as such by Caddy.
    let out = hakaru(&[
        "run",
        "--http3",
        "-k",
        "-c",
        "2",
        "--streams",
        "8",
        "--rate",
        "400",
        "-n",
        "600",
        "--source-address",
        "127.0.0.2",
        &caddy.url(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(requests(&out), 600);
    assert_eq!(out.status_count("200"), 600);
    assert_eq!(caddy.wait_logged(600), (600, 0, 0));
    let log = std::fs::read_to_string(caddy.dir.path().join("access.log")).unwrap();
    assert!(log.lines().all(|l| l.contains(r#""remote_ip":"127.0.0.2""#)), "{}", log.lines().next().unwrap_or(""));
}

#[test]
fn a_server_without_http3_is_refused_in_one_line_before_the_load() {
    // HTTP/1.1 and HTTP/2 on TCP, nothing on UDP.
    let caddy = Caddy::start(&["h1", "h2"]);
    let start = Instant::now();
    let out = hakaru(&["run", "--http3", "-k", "--connect-timeout", "2s", "-n", "100", &caddy.url()]);
    let took = start.elapsed();
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("HTTP/3") && lines[0].contains("--http3"), "{}", lines[0]);
    // The check waits for the connect timeout, not for a QUIC idle timeout (30 s) or the load.
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(caddy.wait_logged(0), (0, 0, 0));
}

#[test]
fn a_udp_port_that_never_answers_is_refused_within_the_connect_timeout() {
    // A socket that takes every datagram and answers none.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let start = Instant::now();
    let out = hakaru(&["run", "--http3", "-k", "--connect-timeout", "1s", "-n", "10", &url]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("no QUIC handshake within 1s"), "{}", out.stderr);
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    let mut buf = [0u8; 2048];
    silent.set_nonblocking(true).unwrap();
    assert!(silent.recv(&mut buf).is_ok(), "hakaru sent no QUIC Initial");
}

#[test]
fn a_server_that_stops_answering_mid_run_meets_every_deadline() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut run = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "--http3", "-k", "-c", "2", "--streams", "4", "-d", "6s", "--timeout", "500ms"])
        .arg("--json")
        .arg(&json)
        .arg(caddy.url())
        .env("HAKARU_DB", dir.path().join("h.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Answered for a while, then stopped dead: no datagram comes back, no connection is closed.
    wait_for(Duration::from_secs(60), || caddy.logged().0 >= 100);
    caddy.signal(libc::SIGSTOP);
    let stopped = Instant::now();
    let limit = Duration::from_secs(60);
    while run.try_wait().unwrap().is_none() {
        assert!(stopped.elapsed() < limit, "hakaru still running {limit:?} after the server stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    let timeouts = step["error_kinds"].as_array().unwrap().iter().find(|e| e["kind"] == "timeout");
    assert!(timeouts.is_some_and(|t| t["count"].as_u64().unwrap() > 0), "{}", step["error_kinds"]);
    assert!(step["status"]["200"].as_u64().unwrap_or(0) >= 100, "{}", step["status"]);
}

#[test]
fn templates_fill_each_http3_request_from_its_row_and_the_built_ins() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.csv");
    std::fs::write(&rows, "id\nann\nbob\ncy\nday\n").unwrap();
    let url = format!("{}item/{{{{id}}}}?n={{{{seq}}}}", caddy.url());
    let args = ["run", "--http3", "-k", "-c", "2", "--streams", "4", "-n", "400", "--data", rows.to_str().unwrap()];
    let out = hakaru(&[&args[..], &["-H", "X-Row: {{id}}", &url]].concat());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 400, "{}", out.stdout);
    assert_eq!(caddy.wait_logged(400), (400, 0, 0));
    // Every request its row's path and header, over HTTP/3, and its own number.
    let log = std::fs::read_to_string(caddy.dir.path().join("access.log")).unwrap();
    let mut per_row = std::collections::BTreeMap::new();
    let mut seqs = Vec::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let uri = entry["request"]["uri"].as_str().unwrap();
        let (path, n) = uri.split_once("?n=").unwrap();
        let row = path.strip_prefix("/item/").unwrap();
        assert_eq!(entry["request"]["headers"]["X-Row"][0], row, "{line}");
        *per_row.entry(row.to_string()).or_insert(0) += 1;
        seqs.push(n.parse::<u64>().unwrap());
    }
    assert_eq!(per_row.values().copied().collect::<Vec<u64>>(), [100; 4], "{per_row:?}");
    seqs.sort();
    assert_eq!(seqs, (1..=400).collect::<Vec<u64>>());
}

#[test]
fn max_requests_per_connection_retires_each_http3_connection_after_its_streams() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let args = ["run", "--http3", "-k", "-c", "1", "--streams", "8", "-n", "1000", "--max-requests-per-connection"];
    let out = hakaru(&[&args[..], &["100", &caddy.url()]].concat());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stdout);
    let c = &out.step()["connections"];
    assert_eq!((c["opened"].as_u64(), c["closed_by_hakaru"].as_u64()), (Some(10), Some(10)), "{c}");
    assert_eq!(c["reconnects"], 0, "a retired connection is no reconnect: {c}");
    assert_eq!(caddy.wait_logged(1000), (1000, 0, 0));
}

#[test]
fn a_wrk_script_drives_http3_requests_and_reads_each_answer() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("paths.lua");
    // request() makes each request (wrk.format, as over HTTP/1.1), response() checks each answer's status, body and
    // a header: a wrong one would end the run, saying where.
    std::fs::write(
        &script,
        "local n = 0\nrequest = function() n = n + 1; return wrk.format('GET', '/p/' .. n) end\n\
         response = function(status, headers, body)\n\
           if status ~= 200 or body ~= 'hello' or headers['Server'] == nil then\n\
             error('got ' .. status .. ' ' .. body)\n\
           end\n\
         end\n",
    )
    .unwrap();
    let args = ["run", "--http3", "-k", "-c", "1", "--streams", "4", "-n", "200", "-s", script.to_str().unwrap()];
    let out = hakaru(&[&args[..], &[&caddy.url()]].concat());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 200, "{}", out.stdout);
    assert_eq!(caddy.wait_logged(200), (200, 0, 0));
    let log = std::fs::read_to_string(caddy.dir.path().join("access.log")).unwrap();
    let paths: std::collections::BTreeSet<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["request"]["uri"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths.len(), 200, "every request its own path");
    // Several requests in one string have no one stream to go in: refused, saying where.
    std::fs::write(&script, "request = function() return wrk.format('GET', '/a') .. wrk.format('GET', '/b') end\n")
        .unwrap();
    let out = hakaru(&[&args[..], &[&caddy.url()]].concat());
    assert_ne!(out.code, 0);
    assert!(format!("{}{}", out.stdout, out.stderr).contains("return one a call"), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn bad_flags_with_http3_are_one_line_each() {
    for (args, names) in [
        (vec!["run", "--http3", "-n", "1", "http://127.0.0.1:9/"], "https://"),
        (vec!["run", "--http3", "--http2", "-n", "1", "https://127.0.0.1:9/"], "--http2"),
        (vec!["run", "--http3", "--tls-version", "1.2", "-n", "1", "https://127.0.0.1:9/"], "--tls-version"),
        (vec!["run", "--http3", "--no-keepalive", "-n", "1", "https://127.0.0.1:9/"], "--no-keepalive"),
        (vec!["run", "--0rtt", "-n", "1", "https://127.0.0.1:9/"], "--0rtt without --http3"),
        (
            vec!["run", "--http3", "--0rtt", "--tls-resume", "off", "-n", "1", "https://127.0.0.1:9/"],
            "--tls-resume off",
        ),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(names), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_study_of_one_server_over_http2_and_http3_is_compared_with_a_verdict() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let dir = tempfile::tempdir().unwrap();
    let study = format!(
        r#"
name = "versions"
[[target]]
name = "h2"
url = "{url}"
insecure = true
http2 = true
streams = 4
[[target]]
name = "h3"
url = "{url}"
insecure = true
http3 = true
streams = 4
[load]
connections = 2
duration = "1s"
repeat = 3
pause = "0s"
"#,
        url = caddy.url()
    );
    let file = dir.path().join("versions.toml");
    std::fs::write(&file, study).unwrap();
    let out_dir = dir.path().join("out");
    let out = hakaru_with(
        &["study", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()],
        Duration::from_secs(180),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // Each side's requests reached Caddy over its own version: the case files' counts are the log's, give or take
    // the requests the step's end cut (`unfinished`: sent, their answers not waited for).
    let (mut sent, mut cut) = ((0, 0), (0, 0));
    for entry in std::fs::read_dir(out_dir.join("cases")).unwrap() {
        let path = entry.unwrap().path();
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let n = doc["steps"][0]["requests"].as_u64().unwrap();
        let unfinished = doc["steps"][0]["unfinished"].as_u64().unwrap();
        match doc["settings"]["http_version"].as_str() {
            Some("3") => (sent.1, cut.1) = (sent.1 + n, cut.1 + unfinished),
            Some("2") => (sent.0, cut.0) = (sent.0 + n, cut.0 + unfinished),
            other => panic!("{}: http_version {other:?}", path.display()),
        }
    }
    assert!(sent.0 > 0 && sent.1 > 0, "{sent:?}");
    let (h3, h2, other) = caddy.wait_logged(sent.0 + sent.1);
    let within = |logged: u64, n: u64, cut: u64| (n..=n + cut).contains(&logged);
    assert!(
        within(h2, sent.0, cut.0) && within(h3, sent.1, cut.1) && other == 0,
        "Caddy's log (HTTP/2 {h2}, HTTP/3 {h3}, other {other}) against the documents' {sent:?} and {cut:?} cut"
    );
    let json = dir.path().join("compare.json");
    let out = hakaru(&["compare", out_dir.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = doc["groups"][0]["points"][0]["rows"].as_array().unwrap();
    let p50 = &rows.iter().find(|r| r["metric"] == "p50").unwrap()["cells"][1];
    let verdict = p50["verdict"].as_str().unwrap_or_default();
    assert!(["faster", "slower", "no_significant_difference"].contains(&verdict), "{p50}\n{}", out.stdout);
    assert_eq!(p50["n"], 3, "{p50}");
}

/// tests/h3_server.py (aioquic) with a self-signed certificate, offering ALPN `alpn`.
fn aioquic(dir: &Path, alpn: &str) -> common::python::Server {
    certificate(dir);
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    common::python::Server::start("h3_server.py", &[cert.to_str().unwrap(), key.to_str().unwrap(), alpn], "aioquic")
}

#[test]
fn zero_rtt_sends_a_resumed_connections_requests_as_early_data_and_counts_what_the_server_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = aioquic(dir.path(), "h3");
    let url = format!("https://127.0.0.1:{}/", server.port);
    // One connection at a time, one request each: a connection can resume the session of one before it.
    let args = |zero_rtt: bool| {
        let mut a = vec!["run", "--http3", "-k", "-t", "1", "-c", "1", "--max-requests-per-connection", "1"];
        a.extend(zero_rtt.then_some("--0rtt"));
        a.extend(["-n", "20", url.as_str()]);
        a
    };
    let out = hakaru(&args(true));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 20, "{}", out.stdout);
    let quic = &out.step()["quic"];
    let count = |k: &str| quic[k].as_u64().unwrap_or_else(|| panic!("quic.{k}: {quic}"));
    // The first connection has no ticket yet: a full handshake.
    assert!((1..=19).contains(&count("zero_rtt_sent")), "{quic}");
    // The server's own count of the handshakes whose early data it accepted is hakaru's, and it accepted them all.
    let early = server.ask("early");
    assert_eq!(early[0].as_u64(), Some(count("zero_rtt_accepted")), "server {early}, hakaru {quic}");
    assert_eq!(count("zero_rtt_accepted"), count("zero_rtt_sent"), "{quic}");
    assert!(early[1].as_u64().unwrap() >= count("zero_rtt_sent"), "early data only on resumed sessions: {early}");
    assert_eq!(out.doc()["settings"]["tls"]["zero_rtt"], true, "{}", out.doc()["settings"]);
    assert!(out.stdout.contains("connections sent early data the server accepted"), "{}", out.stdout);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    // Without --0rtt no connection sends early data.
    let out = hakaru(&args(false));
    assert_eq!(out.status_count("200"), 20, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.step()["quic"]["zero_rtt_sent"], 0, "{}", out.step()["quic"]);
    assert_eq!(server.ask("early")[0], early[0], "no early data without --0rtt");
    drop(server);

    // A server that refuses early data: the requests it threw away are sent again after a full handshake, and the
    // thread makes no more 0-RTT attempts there. Every request succeeds and the server processed each once.
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let mut server = common::python::Server::start("h3_server.py", &[cert, key, "h3", "refuse-early"], "aioquic");
    let url = format!("https://127.0.0.1:{}/", server.port);
    let refusing = args(true).into_iter().map(|a| if a.starts_with("https://") { url.as_str() } else { a });
    let out = hakaru(&refusing.collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 20, "{}\n{}", out.stdout, out.stderr);
    let quic = &out.step()["quic"];
    assert_eq!((quic["zero_rtt_sent"].as_u64(), quic["zero_rtt_accepted"].as_u64()), (Some(1), Some(0)), "{quic}");
    assert_eq!(server.ask("count"), 20, "each request processed once");
    assert_eq!(server.ask("early")[0], 0);
}

#[test]
fn stream_resets_and_a_malformed_answer_are_counted_by_their_http3_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = aioquic(dir.path(), "h3");
    let port = server.port;
    let url = |path: &str| format!("https://127.0.0.1:{port}/{path}");
    let out = hakaru(&["run", "--http3", "-k", "-c", "2", "--streams", "4", "-n", "100", &url("reject")]);
    assert_eq!(out.error_count("h3_request_rejected"), 100, "{}\n{}", out.stdout, out.stderr);
    assert!(out.step()["status"].as_object().is_none_or(|s| s.is_empty()), "{}", out.step()["status"]);
    // A rejected request was not processed: it is sent once more (RFC 9114 8.1), then counted.
    assert_eq!(server.ask("count"), 200);
    // A DATA frame before the answer's HEADERS breaks RFC 9114: its connection is closed with the code, and each
    // request it cut is counted under it.
    let out = hakaru(&["run", "--http3", "-k", "-c", "2", "--streams", "4", "-n", "100", &url("malformed")]);
    assert_eq!(out.error_count("h3_frame_unexpected"), 100, "{}\n{}", out.stdout, out.stderr);
    let answered = hakaru(&["run", "--http3", "-k", "-c", "1", "-n", "50", &url("")]);
    assert_eq!(answered.status_count("200"), 50, "{}", answered.stdout);
}

#[test]
fn server_sent_events_over_http3_are_counted_and_timed_and_a_cut_stream_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = aioquic(dir.path(), "h3");
    let port = server.port;
    let url = |path: &str| format!("https://127.0.0.1:{port}/{path}");
    // Five events an answer: the first 30 ms after the request, then one every 20 ms on the server's schedule
    // (asyncio's timers never fire early, so the first event and the whole answer have lower bounds whatever the
    // machine; a gap may be shorter when the event before it was late).
    let out =
        hakaru(&["run", "--http3", "-k", "-c", "2", "--streams", "2", "-n", "20", "--events", "sse", &url("sse")]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let step = out.step();
    assert_eq!(step["ok"], 20, "{step}");
    let events = &step["events"];
    assert_eq!(events["events"], 100, "{events}");
    let first_min = events["first_event"]["min"].as_u64().unwrap();
    let whole_min = events["answer_time"]["min"].as_u64().unwrap();
    assert_eq!(events["gaps"]["count"], 80, "four gaps an answer: {events}");
    assert!(
        first_min >= 29_000 && whole_min >= 105_000,
        "first event {first_min} us, answers from {whole_min} us: {events}"
    );
    // A stream reset inside its events is a cut stream, not a success.
    let out = hakaru(&["run", "--http3", "-k", "-c", "1", "-n", "5", "--events", "sse", &url("sse-cut")]);
    assert_eq!(out.error_count("stream_cut"), 5, "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn a_quic_server_without_h3_in_its_alpn_is_refused_in_one_line_before_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = aioquic(dir.path(), "hq-interop");
    let url = format!("https://127.0.0.1:{}/", server.port);
    let out = hakaru(&["run", "--http3", "-k", "-n", "100", &url]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("ALPN h3") && out.stderr.contains("leave out --http3"), "{}", out.stderr);
    assert_eq!(server.ask("count"), 0);
}

#[test]
fn a_sweep_and_a_capacity_search_go_over_http3() {
    let caddy = Caddy::start(&["h1", "h2", "h3"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let sweep =
        common::quick_sweep(&caddy.url(), &["--http3", "-k", "--streams", "4", "--json", json.to_str().unwrap()]);
    assert_eq!(sweep.code, 0, "{}\n{}", sweep.stdout, sweep.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["settings"]["http_version"], "3");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let answered: u64 = steps.iter().map(|s| s["status"]["200"].as_u64().unwrap_or(0)).sum();
    assert!(steps.iter().all(|s| s["status"]["200"].as_u64().unwrap_or(0) > 0), "{}", sweep.stdout);
    // A step's end cuts the requests under way (unfinished): the log has the answered ones, and perhaps those.
    let cut: u64 = steps.iter().map(|s| s["unfinished"].as_u64().unwrap()).sum();
    let (h3, h2, other) = caddy.wait_logged(answered);
    assert!((answered..=answered + cut).contains(&h3) && (h2, other) == (0, 0), "{h3} {h2} {other}: {answered}");
    let json = dir.path().join("capacity.json");
    let capacity = hakaru(&[
        "capacity",
        "-q",
        "--http3",
        "-k",
        "-c",
        "2",
        "--streams",
        "4",
        "--slo",
        "p99<500ms",
        "--rate-start",
        "50",
        "--rate-max",
        "200",
        "-d",
        "500ms",
        "--interval",
        "0s",
        "--json",
        json.to_str().unwrap(),
        &caddy.url(),
    ]);
    assert_eq!(capacity.code, 0, "{}\n{}", capacity.stdout, capacity.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["settings"]["http_version"], "3");
    // Some rate met the objective (which one is the busy machine's business: no speed is asserted).
    assert!(doc["analysis"]["capacity"]["rate"].as_f64().unwrap_or(0.0) > 0.0, "{}", capacity.stdout);
}

#[test]
fn a_goaway_ends_a_connection_without_failing_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = aioquic(dir.path(), "h3");
    // GOAWAY after each connection's 20th request: the requests the client had sent past it are rejected unprocessed
    // and go again on a new connection, as the ones after it do.
    let url = format!("https://127.0.0.1:{}/goaway", server.port);
    let out = hakaru(&["run", "--http3", "-k", "-c", "1", "--streams", "4", "-n", "200", &url]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.status_count("200"), 200, "{}", out.stdout);
    assert!(out.step()["error_kinds"].as_array().unwrap().is_empty(), "{}", out.step()["error_kinds"]);
    let reconnects = out.step()["connections"]["reconnects"].as_u64().unwrap();
    assert!(reconnects >= 9, "{reconnects} reconnects for 200 requests at 20 a connection: {}", out.stdout);
    assert!(server.ask("count").as_u64().unwrap() >= 200);
}

#[test]
fn the_connections_are_closed_when_a_timed_step_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = aioquic(dir.path(), "h3");
    let url = format!("https://127.0.0.1:{}/", server.port);
    let out = hakaru(&["run", "--http3", "-k", "-c", "2", "--streams", "2", "-d", "1s", &url]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // The check before the load opened and closed one; the step's two got a CONNECTION_CLOSE at its end, not
    // QUIC's idle timeout 30 s later: the bound (generous for a busy machine) stays well inside those 30 s, so
    // only a close hakaru sent meets it.
    wait_for(Duration::from_secs(15), || server.ask("closed").as_u64().unwrap() >= 3);
}

/// Issue 51: Caddy with `tls internal` chooses its certificate by the server name; a handshake to an IP address
/// names none and Caddy ends it (TLS alert 80). The line says to give the name, and with `--sni localhost` it works.
#[test]
fn an_ip_address_without_a_server_name_is_told_to_give_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let port = free_port();
    let config = serde_json::json!({
        "admin": {"disabled": true},
        "storage": {"module": "file_system", "root": p.join("storage")},
        "apps": {
            "http": {"http_port": free_port(), "servers": {"s": {
                "listen": [format!("127.0.0.1:{port}")],
                "protocols": ["h1", "h2", "h3"],
                "automatic_https": {"disable_redirects": true},
                "routes": [{"match": [{"host": ["localhost"]}],
                            "handle": [{"handler": "static_response", "status_code": 200, "body": "hello"}]}]
            }}},
            "tls": {"automation": {"policies": [{"subjects": ["localhost"], "issuers": [{"module": "internal"}]}]}},
            "pki": {"certificate_authorities": {"local": {"install_trust": false}}}
        }
    });
    let mut child = common::spawn_caddy(p, &config);
    wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(60));
    let said = |text: &str| std::fs::read_to_string(p.join("caddy.err")).unwrap_or_default().contains(text);
    wait_for(Duration::from_secs(60), || said("enabling HTTP/3 listener") && said("certificate obtained"));
    let url = format!("https://127.0.0.1:{port}/");
    let out = hakaru(&["run", "--http3", "-k", "-n", "4", &url]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("give the name it serves (--sni localhost"), "{}", out.stderr);
    let out = hakaru(&["run", "--http3", "-k", "--sni", "localhost", "-n", "4", &url]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(out.status_count("200"), 4, "{}\n{}", out.stdout, out.stderr);
}
