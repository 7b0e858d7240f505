//! `--http2` against real servers on loopback (Debian's nginx with h2c and TLS + ALPN, nghttpd) and a hostile
//! peer: exact request counts from the servers' own logs, the server's stream limit and GOAWAY honoured, faults
//! counted by kind.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{free_port, hakaru, hakaru_with, wait_for, wait_listening};

/// nginx with HTTP/2 servers, each logging `$server_protocol $connection $status` to its own file.
struct H2Nginx {
    child: Child,
    dir: tempfile::TempDir,
    /// h2c (prior knowledge), default limits.
    plain: u16,
    /// h2c with http2_max_concurrent_streams 4.
    four: u16,
    /// h2c closing each connection (GOAWAY) after 100 requests.
    hundred: u16,
    /// TLS with ALPN h2.
    tls: u16,
    /// TLS without HTTP/2.
    tls_h1: u16,
    /// Plain HTTP/1.1.
    h1: u16,
    /// h2c whose /upload reads each request body whole (proxied to `h1`), logging its length.
    upload: u16,
}

impl H2Nginx {
    fn start() -> H2Nginx {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let ports = [free_port(), free_port(), free_port(), free_port(), free_port(), free_port(), free_port()];
        let [plain, four, hundred, tls, tls_h1, h1, upload] = ports;
        let server = |listen: String, name: &str, extra: &str| {
            format!(
                "  server {{\n    listen 127.0.0.1:{listen};\n    access_log {}/{name}.log h2;\n    {extra}\n    \
                 location = / {{ default_type text/plain; return 200 \"hello world\\n\"; }}\n    \
                 location = /big {{ default_type text/plain; return 200 \"{}\"; }}\n  }}\n",
                p.display(),
                "x".repeat(3000)
            )
        };
        // nginx reads a body it proxies whole, within its default windows (65,535 bytes a stream): a larger body
        // goes only as its WINDOW_UPDATEs come.
        let reads_bodies = format!(
            "client_max_body_size 1m; location = /upload {{ access_log {}/upload.log body; proxy_pass \
             http://127.0.0.1:{h1}/; }}",
            p.display()
        );
        // A 4 MiB file: its answers fill the socket faster than one wake-up's reads take them.
        std::fs::write(p.join("file.bin"), vec![b'x'; FILE_BYTES]).unwrap();
        let file = format!(
            "location = /file {{ alias {}/file.bin; default_type application/octet-stream; }} \
             location = /fail {{ return 503; }}",
            p.display()
        );
        let certs = format!("ssl_certificate {0}/cert.pem; ssl_certificate_key {0}/key.pem;", p.display());
        let conf = format!(
            "worker_processes 1;\ndaemon off;\nmaster_process off;\npid {0}/nginx.pid;\nerror_log {0}/error.log warn;\n\
             events {{ worker_connections 4096; }}\nhttp {{\n  log_format h2 '$server_protocol $connection $msec $status';\n  \
             log_format body '$server_protocol $status $request_method $content_length $request_length';\n  \
             client_body_temp_path {0}/body;\n  proxy_temp_path {0}/proxy;\n  fastcgi_temp_path {0}/fcgi;\n  \
             uwsgi_temp_path {0}/uwsgi;\n  scgi_temp_path {0}/scgi;\n  keepalive_requests 1000000;\n{1}{2}{3}{4}{5}{6}{7}}}\n",
            p.display(),
            server(format!("{plain} http2"), "plain", &file),
            server(format!("{four} http2"), "four", "http2_max_concurrent_streams 4;"),
            server(format!("{hundred} http2"), "hundred", "keepalive_requests 100;"),
            server(format!("{tls} ssl http2"), "tls", &certs),
            server(format!("{tls_h1} ssl"), "tls_h1", &certs),
            server(format!("{h1}"), "h1", ""),
            server(format!("{upload} http2"), "upload_other", &reads_bodies),
        );
        std::fs::write(p.join("nginx.conf"), conf).unwrap();
        common::self_signed_certificate(p);
        let child = common::spawn_nginx(p);
        let n = H2Nginx { child, dir, plain, four, hundred, tls, tls_h1, h1, upload };
        for port in ports {
            wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
        }
        for port in [plain, four, hundred, upload] {
            common::wait_h2c(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(60));
        }
        n
    }

    fn url(&self, port: u16, path: &str) -> String {
        format!("http://127.0.0.1:{port}{path}")
    }

    /// The lines of a server's access log once it holds `n` (nginx writes a line as each request ends).
    fn log(&self, name: &str, n: usize) -> Vec<String> {
        let path = self.dir.path().join(format!("{name}.log"));
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        wait_for(Duration::from_secs(30), || read().lines().count() >= n);
        read().lines().map(String::from).collect()
    }
}

impl Drop for H2Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Distinct `$connection` numbers in log lines `PROTOCOL CONNECTION STATUS`, and whether every line is an HTTP/2.0
/// 200.
fn connections(lines: &[String]) -> (usize, bool) {
    let mut ids: Vec<&str> = lines.iter().filter_map(|l| l.split(' ').nth(1)).collect();
    ids.sort_unstable();
    ids.dedup();
    (ids.len(), lines.iter().all(|l| l.starts_with("HTTP/2.0 ") && l.ends_with(" 200")))
}

#[test]
fn four_connections_by_sixteen_streams_send_exactly_the_requests_asked_as_nginx_logs_them() {
    let n = H2Nginx::start();
    let out = hakaru_with(
        &["run", "-q", "--http2", "-c", "4", "--streams", "16", "-n", "100000", &n.url(n.plain, "/")],
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 100_000, "{}", out.step());
    assert_eq!(out.step()["errors"], 0);
    assert_eq!(out.step()["connections"]["opened"], 4);
    assert_eq!(out.doc()["settings"]["http_version"], "2");
    assert_eq!(out.doc()["settings"]["streams"], 16);
    let h2 = &out.step()["http2"];
    assert_eq!(h2["streams_used"], 16, "{h2}");
    assert!(h2["header_bytes_in_decoded"].as_u64().unwrap() > h2["header_bytes_in"].as_u64().unwrap(), "{h2}");
    let lines = n.log("plain", 100_000);
    assert_eq!(lines.len(), 100_000);
    assert_eq!(connections(&lines), (4, true), "every request an HTTP/2.0 200 over 4 connections");
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    assert!(out.stdout.contains("space savings") || out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn a_failed_http2_answer_is_kept_as_its_status_and_reason() {
    // HTTP/2's answers are read by their connection's task, with no decoder of their own: the status says it.
    let n = H2Nginx::start();
    let args = ["run", "-q", "--http2", "-c", "1", "-n", "5", &n.url(n.plain, "/fail")];
    let out = hakaru_with(&args, Duration::from_secs(60), |_| {});
    assert_eq!(out.status_count("503"), 5, "{}", out.step());
    assert_eq!(out.step()["first_error_reply"], "503 Service Unavailable", "{}", out.step());
}

/// The size of the plain server's /file.
const FILE_BYTES: usize = 4 << 20;

#[test]
fn large_answers_that_fill_the_socket_arrive_whole_every_byte_counted() {
    // 8 streams of 4 MiB answers at once: the connection's task reads up to 9 times a wake-up, then yields;
    // a read left over at that bound must still be taken (it once was dropped, breaking the framing).
    let n = H2Nginx::start();
    let out = hakaru_with(
        &["run", "-q", "--http2", "-c", "1", "--streams", "8", "-n", "48", &n.url(n.plain, "/file")],
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 48, "{}", out.step());
    assert_eq!(out.step()["errors"], 0, "{}", out.step());
    let bytes_in = out.step()["throughput"]["bytes_in"].as_u64().unwrap();
    // Every body byte, plus the frames' headers (nginx cuts DATA at 8 KiB: 9 bytes each, about 0.1 %).
    let data = 48 * FILE_BYTES as u64;
    assert!(bytes_in > data + data / 1000 && bytes_in < data + data / 100, "{bytes_in} bytes in, {data} of bodies");
}

#[test]
fn a_body_larger_than_the_servers_windows_waits_for_window_update_and_every_byte_arrives() {
    let n = H2Nginx::start();
    // 200 kB, as the Cloudant-vs-Redis seed's payloads: a file, as one argument may hold at most 128 KiB.
    let body = n.dir.path().join("body.txt");
    std::fs::write(&body, "b".repeat(200_000)).unwrap();
    let url = n.url(n.upload, "/upload");
    let args = format!("run -q --http2 -c 2 --streams 4 -n 200 -m POST --body-file {} {url}", body.display());
    let out = hakaru(&args.split(' ').collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 200, "{}", out.step());
    assert_eq!(out.step()["errors"], 0, "{}", out.step());
    let lines = n.log("upload", 200);
    assert_eq!(lines.len(), 200);
    for line in &lines {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(&f[..4], ["HTTP/2.0", "200", "POST", "200000"], "{line}");
        // Every byte of the body was read: the request's length is its body and headers.
        let length: usize = f[4].parse().unwrap();
        assert!((200_000..201_000).contains(&length), "{line}");
    }
}

#[test]
fn a_server_allowing_four_streams_is_used_with_four_and_said_not_failed() {
    let n = H2Nginx::start();
    let out = hakaru(&["run", "--http2", "-c", "2", "--streams", "16", "-n", "2000", &n.url(n.four, "/")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 2000, "{}", out.step());
    assert_eq!(out.step()["errors"], 0, "no REFUSED_STREAM: no stream is sent before the server's SETTINGS");
    assert_eq!(out.step()["http2"]["streams_used"], 4);
    assert!(out.stdout.contains("the server allows 4"), "{}", out.stdout);
    assert!(out.stdout.contains("space savings"), "h2load's header compression figure: {}", out.stdout);
    let lines = n.log("four", 2000);
    assert_eq!(lines.len(), 2000);
    assert_eq!(connections(&lines), (2, true));
}

#[test]
fn goaway_after_keepalive_requests_finishes_its_streams_and_reconnects_without_sending_twice() {
    let n = H2Nginx::start();
    let out = hakaru(&["run", "-q", "--http2", "-c", "2", "--streams", "8", "-n", "1000", &n.url(n.hundred, "/")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.step());
    assert_eq!(out.step()["errors"], 0, "{}", out.step());
    let h2 = &out.step()["http2"];
    assert!(h2["goaways"].as_u64().unwrap() >= 9, "{h2}");
    let lines = n.log("hundred", 1000);
    assert_eq!(lines.len(), 1000, "each request processed once: no stream below GOAWAY's last id sent again");
    let (conns, all_ok) = connections(&lines);
    assert!(all_ok);
    assert!(conns >= 10, "100 requests a connection: {conns}");
    assert_eq!(out.step()["connections"]["opened"].as_u64().unwrap() as usize, conns);
}

#[test]
fn connections_a_goaway_hands_over_are_counted_apart_and_open_ones_keep_to_c() {
    // Found by a newcomer: "connections 6 of 4 open at once" while GOAWAYs handed connections over.
    let n = H2Nginx::start();
    let url = n.url(n.hundred, "/");
    let (out, doc) = with_json(&["run", "--http2", "-t", "1", "-c", "4", "--streams", "8", "-n", "3000", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let c = &doc["steps"][0]["connections"];
    assert!(c["max_open"].as_u64().unwrap() <= 4, "{c}");
    assert!(c["max_handing_over"].as_u64().unwrap() >= 1, "each GOAWAY's connection hands over: {c}");
    assert!(out.stdout.contains("handing over after a GOAWAY"), "{}", out.stdout);
    assert!(common::schema_errors(&doc).is_empty(), "{:?}", common::schema_errors(&doc));
}

#[test]
fn an_open_loop_over_http2_keeps_its_rate_on_the_connections_asked() {
    let n = H2Nginx::start();
    let out = hakaru(&[
        "run",
        "-q",
        "--http2",
        "-c",
        "2",
        "--streams",
        "4",
        "--rate",
        "400",
        "-n",
        "400",
        &n.url(n.plain, "/"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 400, "{}", out.step());
    assert!(out.step()["connections"]["opened"].as_u64().unwrap() <= 2, "{}", out.step()["connections"]);
    let lines = n.log("plain", 400);
    assert_eq!(lines.len(), 400);
    // The rate as nginx saw it: 400 requests at 400/s span 997.5 ms from the first slot to the last (a request
    // leaves at most half the 400 us pace window early), never much less; a busy machine may stretch it.
    let times: Vec<f64> = lines.iter().filter_map(|l| l.split(' ').nth(2)?.parse().ok()).collect();
    let span = times.iter().cloned().fold(f64::MIN, f64::max) - times.iter().cloned().fold(f64::MAX, f64::min);
    assert!((0.99..3.0).contains(&span), "400 requests at 400/s over {span:.3} s as nginx logged them");
}

#[test]
fn https_with_alpn_h2_against_nginx_counts_exactly() {
    let n = H2Nginx::start();
    let url = format!("https://localhost:{}/big", n.tls);
    let out = hakaru(&["run", "-q", "--http2", "--insecure", "-c", "2", "--streams", "8", "-n", "1000", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.step());
    assert_eq!(out.step()["connections"]["opened"], 2);
    assert!(out.step()["throughput"]["bytes_in"].as_u64().unwrap() > 1000 * 3000);
    let lines = n.log("tls", 1000);
    assert_eq!(connections(&lines), (2, true));
}

#[test]
fn a_server_without_http2_is_one_clear_line_and_exit_2() {
    let n = H2Nginx::start();
    let url = format!("https://localhost:{}/", n.tls_h1);
    let out = hakaru(&["run", "-q", "--http2", "--insecure", "-n", "10", &url]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("ALPN") && out.stderr.contains("--http2"), "{}", out.stderr);
    let out = hakaru(&["run", "-q", "--http2", "-n", "10", &n.url(n.h1, "/")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("HTTP/2") && out.stderr.contains("--http2"), "{}", out.stderr);
}

#[test]
fn streams_and_http2_are_refused_where_they_do_not_apply() {
    for (args, needle) in [
        (&["run", "--streams", "8", "http://127.0.0.1:1/"][..], "--streams 8"),
        (&["run", "--http2", "--streams", "0", "http://127.0.0.1:1/"][..], "--streams 0"),
        (&["run", "--http2", "--no-keepalive", "http://127.0.0.1:1/"][..], "--no-keepalive"),
        (&["sweep", "--http2", "--clients", "1,2", "redis://127.0.0.1:1"][..], "--http2"),
        // h2load's -m is its streams; hakaru's is the method, and "16" would get 400 from every server.
        (&["run", "--http2", "-m", "16", "http://127.0.0.1:1/"][..], "did you mean --streams 16?"),
        (&["run", "-m", "8", "http://127.0.0.1:1/"][..], "did you mean --http2 --streams 8?"),
    ] {
        let out = hakaru(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn nghttpd_as_a_second_server_answers_every_stream() {
    let Some(nghttpd) = ["/usr/bin/nghttpd", "/usr/sbin/nghttpd"].into_iter().find(|p| Path::new(p).is_file()) else {
        panic!("nghttpd is not installed: run scripts/test.sh, which installs nghttp2-server");
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "hello\n").unwrap();
    let port = free_port();
    let mut child = Command::new(nghttpd)
        .args(["--no-tls", "-d"])
        .arg(dir.path())
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nghttpd starts");
    wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
    let url = format!("http://127.0.0.1:{port}/index.html");
    let out = hakaru(&["run", "-q", "--http2", "-c", "3", "--streams", "10", "-n", "3000", &url]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 3000, "{}", out.step());
    assert_eq!(out.step()["connections"]["opened"], 3);
    // nghttpd indexes its response headers: the dynamic table is used and decoded.
    let h2 = &out.step()["http2"];
    assert!(h2["header_savings"].as_f64().unwrap() > 0.3, "{h2}");
}

/// What the hostile peer does to each request stream.
#[derive(Clone, Copy)]
enum Fault {
    /// RST_STREAM with this code.
    Reset(u32),
    /// A SETTINGS frame of 5 bytes (a FRAME_SIZE_ERROR, counted as frame_size).
    BadFrame,
    /// GOAWAY with last stream 0: nothing processed.
    EarlyGoaway,
}

/// A raw-TCP HTTP/2 peer: SETTINGS, then a fault for every HEADERS frame the client sends.
fn hostile(fault: Fault) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if s.read_exact(&mut preface).is_err() {
                    return;
                }
                let _ = s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
                while let Some(stream) = common::hostile::next_headers(&mut s) {
                    let id = &stream[..];
                    let reply: Vec<u8> = match fault {
                        Fault::Reset(code) => [&[0, 0, 4, 3, 0][..], id, &code.to_be_bytes()].concat(),
                        Fault::BadFrame => vec![0, 0, 5, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5],
                        Fault::EarlyGoaway => [&[0, 0, 8, 7, 0, 0, 0, 0, 0][..], &[0; 8]].concat(),
                    };
                    if s.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_hostile_peers_faults_are_counted_by_kind_never_a_crash_or_a_hang() {
    let url = |port: u16| format!("http://127.0.0.1:{port}/");
    let run = |port: u16| {
        hakaru_with(
            &["run", "-q", "--http2", "-c", "2", "--streams", "4", "-n", "40", "--timeout", "2s", &url(port)],
            Duration::from_secs(60),
            |_| {},
        )
    };
    let out = run(hostile(Fault::Reset(0xb)));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.error_count("rst_stream_enhance_your_calm"), 40, "{}", out.step());
    let out = run(hostile(Fault::Reset(0x42)));
    assert_eq!(out.error_count("rst_stream_other"), 40, "{}", out.step());
    let out = run(hostile(Fault::Reset(0x7)));
    assert_eq!(out.error_count("rst_stream_refused_stream"), 40, "refused twice: {}", out.step());
    assert_eq!(out.step()["http2"]["retried"], 40, "each refused stream sent again once");
    let out = run(hostile(Fault::BadFrame));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.step()["requests"], 40, "{}", out.step());
    assert_eq!(out.error_count("frame_size"), 40, "{}", out.step());
    let out = run(hostile(Fault::EarlyGoaway));
    assert_eq!(out.step()["requests"], 40, "{}", out.step());
    assert_eq!(out.error_count("goaway"), 40, "unprocessed twice: {}", out.step());
    assert_eq!(out.step()["http2"]["retried"], 40, "{}", out.step());
    // One GOAWAY a connection, read by the end of the run: a connection opened for the last retries may end with
    // the run before its GOAWAY is read (seen once on a busy machine), at most one for each of the -c 2.
    let (goaways, opened) = (out.step()["http2"]["goaways"].as_u64(), out.step()["connections"]["opened"].as_u64());
    let (goaways, opened) = (goaways.unwrap(), opened.unwrap());
    assert!(goaways <= opened && goaways + 2 >= opened, "one GOAWAY a connection: {goaways} of {opened}");
}

/// Runs `hakaru ARGS --json FILE` and reads the document.
fn with_json(args: &[&str]) -> (common::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let out = hakaru_with(&all, Duration::from_secs(120), |_| {});
    let doc =
        std::fs::read_to_string(&json).ok().map_or(serde_json::Value::Null, |t| serde_json::from_str(&t).unwrap());
    (out, doc)
}

#[test]
fn sweep_capacity_study_and_compare_work_over_http2_unchanged() {
    let n = H2Nginx::start();
    let url = n.url(n.plain, "/");
    // A sweep: every step has its HTTP/2 figures.
    let sweep = format!("sweep -q --no-monitor --http2 --streams 4 --clients 1,2 -d 1s --interval 0s {url}");
    let (out, doc) = with_json(&sweep.split(' ').collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        assert_eq!(s["http2"]["streams_used"], 4, "{s}");
        assert!(s["http2"]["header_bytes_in"].as_u64().unwrap() > 0, "{s}");
        assert!(s["http2"]["header_savings"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(s["errors"], 0, "{s}");
    }
    assert_eq!(doc["settings"]["http_version"], "2");
    // A capacity search in an open loop over streams: nginx meets the SLO up to the ceiling.
    let capacity = format!(
        "capacity -q --no-monitor --http2 --streams 8 --slo p99<200ms --rate-start 100 --rate-max 400 -d 1s \
         --interval 0s --precision 50% {url}"
    );
    let (out, doc) = with_json(&capacity.split_whitespace().collect::<Vec<_>>());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let steps = doc["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|s| s["http2"]["streams_used"] == 8 && s["errors"] == 0), "{}", out.stdout);
    // A study of the same nginx over HTTP/1.1 and over HTTP/2, then compare: a verdict for each metric.
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("h1-h2.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"h1-h2\"\n[[target]]\nname = \"h1\"\nurl = \"{}\"\nmonitor = [\"none\"]\n[[target]]\nname = \
             \"h2\"\nurl = \"{url}\"\nhttp2 = true\nstreams = 4\nmonitor = [\"none\"]\n[load]\nconnections = 2\n\
             duration = \"500ms\"\nrepeat = 3\npause = \"0s\"\n",
            n.url(n.h1, "/")
        ),
    )
    .unwrap();
    let dir = tmp.path().join("out");
    let out =
        hakaru_with(&["study", study.to_str().unwrap(), "-o", dir.to_str().unwrap()], Duration::from_secs(120), |_| {});
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    // Each HTTP/2 case's document has its HTTP/2 figures.
    for r in 1..=3 {
        let case = dir.join(format!("cases/r{r}-h2.json"));
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&case).unwrap()).unwrap();
        assert_eq!(doc["steps"][0]["http2"]["streams_used"], 4, "{doc}");
    }
    let (out, doc) = with_json(&["compare", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cells: Vec<&serde_json::Value> = doc["groups"][0]["points"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["cells"].as_array().unwrap().iter().skip(1))
        .collect();
    assert!(!cells.is_empty(), "{doc}");
    assert!(cells.iter().all(|c| c["verdict"].is_string() && c["n"] == 3), "{doc}");
}
