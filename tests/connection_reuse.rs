//! Connections as real clients use them, against a real nginx whose access log records each request's
//! `$connection`: `--max-requests-per-connection` (nighthawk's) bounds what a connection carries, and
//! `--connect-to` (curl's) pins a URL's host to an address without DNS, the Host header and SNI staying the URL's;
//! `--connection-rate` (h2load's `-r`) spaces new connections.
use crate::common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use common::{free_port, hakaru, wait_for, wait_listening};

struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    plain: u16,
    tls: u16,
    /// HTTP/2 without TLS (prior knowledge).
    h2: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx on a plain, a TLS (self-signed) and an h2c port, logging `$connection $host $ssl_server_name $status`.
fn nginx() -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let (plain, tls, h2) = (free_port(), free_port(), free_port());
    let p = dir.path().display();
    let conf = common::nginx_conf(
        dir.path(),
        &format!(
            "  log_format conn '$connection $host $ssl_server_name $status';\n  \
             server {{\n    listen 127.0.0.1:{plain};\n    listen 127.0.0.1:{tls} ssl;\n    \
             listen 127.0.0.1:{h2} http2;\n    \
             ssl_certificate {p}/cert.pem;\n    ssl_certificate_key {p}/key.pem;\n    \
             location = / {{ access_log {p}/access.log conn; default_type text/plain; return 200 \"hello\\n\"; }}\n  }}\n"
        ),
    );
    std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
    common::self_signed_certificate(dir.path());
    let child = common::spawn_nginx(dir.path());
    let n = Nginx { child, dir, plain, tls, h2 };
    for port in [plain, tls, h2] {
        wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
    }
    n
}

/// The access log's lines once it holds `n`, and then from an empty log again.
fn take_log(dir: &Path, n: usize) -> Vec<String> {
    let path = dir.join("access.log");
    let read = || std::fs::read_to_string(&path).unwrap_or_default();
    wait_for(Duration::from_secs(60), || read().lines().count() >= n);
    let lines: Vec<String> = read().lines().map(String::from).collect();
    std::fs::write(&path, "").unwrap();
    lines
}

/// Requests per connection as nginx counted them.
fn per_connection(lines: &[String]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for l in lines {
        *m.entry(l.split(' ').next().unwrap().to_string()).or_insert(0) += 1;
    }
    m
}

#[test]
fn max_requests_per_connection_opens_exactly_the_connections_nginx_counts() {
    let n = nginx();
    let url = format!("http://127.0.0.1:{}/", n.plain);
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "10000", "--max-requests-per-connection", "100", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 10000, "{}", out.stdout);
    let c = &out.step()["connections"];
    assert_eq!((c["opened"].as_u64(), c["closed_by_hakaru"].as_u64()), (Some(100), Some(100)), "{c}");
    let conns = per_connection(&take_log(n.dir.path(), 10000));
    assert_eq!(conns.len(), 100, "nginx's $connection agrees");
    assert!(conns.values().all(|&k| k == 100), "{conns:?}");
    assert_eq!(out.doc()["settings"]["max_requests_per_connection"], 100);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));

    // Four clients sharing the budget: no connection carries more, and nginx saw every one hakaru opened.
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "1000", "--max-requests-per-connection", "10", &url]);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stderr);
    let conns = per_connection(&take_log(n.dir.path(), 1000));
    assert_eq!(conns.len() as u64, out.step()["connections"]["opened"].as_u64().unwrap());
    assert!(conns.values().all(|&k| k <= 10) && conns.len() >= 100, "{conns:?}");

    // Over TLS too; and a bound that means nothing is refused in one line.
    let tls = format!("https://localhost:{}/", n.tls);
    let out = hakaru(&["run", "-q", "-k", "-c", "1", "-n", "200", "--max-requests-per-connection", "50", &tls]);
    assert_eq!(out.step()["connections"]["opened"], 4, "{}{}", out.stdout, out.step()["connections"]);
    assert_eq!(per_connection(&take_log(n.dir.path(), 200)).len(), 4, "nginx saw 4 TLS connections");

    // Over HTTP/2: each connection carries 100 streams, then hakaru retires it (its streams finish beside the next
    // one's, counted apart from the open connections) and says GOAWAY before it closes.
    let h2 = format!("http://127.0.0.1:{}/", n.h2);
    let args = ["run", "-q", "--http2", "-c", "1", "--streams", "8", "-n", "1000", "--max-requests-per-connection"];
    let out = hakaru(&[&args[..], &["100", &h2]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stdout);
    let c = &out.step()["connections"];
    assert_eq!((c["opened"].as_u64(), c["closed_by_hakaru"].as_u64()), (Some(10), Some(10)), "{c}");
    assert_eq!(c["reconnects"], 0, "a retired connection is no reconnect: {c}");
    let conns = per_connection(&take_log(n.dir.path(), 1000));
    assert_eq!(conns.len(), 10, "nginx's $connection agrees");
    assert!(conns.values().all(|&k| k == 100), "{conns:?}");
    // Two connections at once: each group of streams retires its own; none carries more, none beyond -c is open.
    let args = ["run", "-q", "--http2", "-c", "2", "--streams", "4", "-n", "1000", "--max-requests-per-connection"];
    let out = hakaru(&[&args[..], &["100", &h2]].concat());
    assert_eq!(out.status_count("200"), 1000, "{}", out.stderr);
    let c = &out.step()["connections"];
    assert!(c["max_open"].as_u64() <= Some(2), "{c}");
    let conns = per_connection(&take_log(n.dir.path(), 1000));
    assert_eq!(Some(conns.len() as u64), c["opened"].as_u64(), "{c}");
    assert!(conns.values().all(|&k| k <= 100), "{conns:?}");

    let out = hakaru(&["run", "-q", "-n", "1", "--no-keepalive", "--max-requests-per-connection", "5", &url]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--max-requests-per-connection 5: --no-keepalive"), "{}", out.stderr);
}

#[test]
fn connect_to_pins_a_name_to_an_address_and_the_host_header_and_sni_stay_the_urls() {
    let n = nginx();
    let rule = format!("app.invalid:80:127.0.0.1:{}", n.plain);
    let out = hakaru(&["run", "-q", "-n", "100", "--connect-to", &rule, "http://app.invalid/"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 100, "{}", out.stdout);
    let lines = take_log(n.dir.path(), 100);
    assert!(lines.iter().all(|l| l.ends_with(" app.invalid - 200")), "{:?}", &lines[..2]);
    assert_eq!(out.doc()["settings"]["connect_to"], serde_json::json!([rule]));

    let rule = format!("secure.invalid:443:127.0.0.1:{}", n.tls);
    let out = hakaru(&["run", "-q", "-k", "-n", "100", "--connect-to", &rule, "https://secure.invalid/"]);
    assert_eq!(out.status_count("200"), 100, "{}", out.stderr);
    let lines = take_log(n.dir.path(), 100);
    assert!(lines.iter().all(|l| l.ends_with(" secure.invalid secure.invalid 200")), "{:?}", &lines[..2]);

    // A rule that does not take the URL leaves it to DNS, which does not know the name.
    let out = hakaru(&["run", "-q", "-n", "1", "--connect-to", "other.invalid:80:127.0.0.1:1", "http://app.invalid/"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("'app.invalid' does not resolve"), "{}", out.stderr);
    let out = hakaru(&["run", "-q", "-n", "1", "--connect-to", "app.invalid:80:127.0.0.1", "http://app.invalid/"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--connect-to 'app.invalid:80:127.0.0.1': not four parts"), "{}", out.stderr);
}

#[test]
fn connection_rate_spaces_new_connections_and_nginx_sees_each_one() {
    let n = nginx();
    let url = format!("http://127.0.0.1:{}/", n.plain);
    // 20 connections at 10 a second, one request each: the turns are 100 ms apart, so the last opens no sooner
    // than 1.9 s after the first, however fast the machine (the bound holds from below, whatever the load).
    let args = ["run", "-q", "-c", "20", "-n", "20", "--no-keepalive", "--connection-rate", "10", &url];
    let out = hakaru(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 20, "{}", out.stdout);
    let step = out.step();
    assert_eq!(step["connections"]["opened"], 20, "{}", step["connections"]);
    let took = step["duration_s"].as_f64().unwrap();
    assert!(took >= 1.85, "20 connections at 10/s took {took} s");
    assert_eq!(per_connection(&take_log(n.dir.path(), 20)).len(), 20, "nginx saw 20 connections");
    assert_eq!(out.doc()["settings"]["connection_rate"], 10.0);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));

    // A timed run never opens more than the rate allows (one turn at 0 s, then one each 200 ms): an upper bound.
    let out = hakaru(&["run", "-q", "-c", "8", "-d", "2s", "--no-keepalive", "--connection-rate", "5", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let opened = out.step()["connections"]["opened"].as_u64().unwrap();
    assert!((1..=11).contains(&opened), "{opened} connections in 2 s at 5/s");
    let lines = take_log(n.dir.path(), out.status_count("200") as usize);
    assert!(per_connection(&lines).len() as u64 <= opened, "nginx saw no more connections than hakaru opened");

    // HTTP/2's connections open through the same turns: 4 at 4 a second, the last at 0.75 s, each then carrying
    // requests to the end of the 2 s run.
    let h2 = format!("http://127.0.0.1:{}/", n.h2);
    let out = hakaru(&["run", "-q", "--http2", "-c", "4", "-d", "2s", "--connection-rate", "4", &h2]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["connections"]["opened"], 4, "{}", step["connections"]);
    let lines = take_log(n.dir.path(), out.status_count("200") as usize);
    assert_eq!(per_connection(&lines).len(), 4, "nginx saw 4 connections");
    let phases = &step["phases"];
    // The connect phase starts at the turn, not the wait for it (the last waited 750 ms; a loopback connect takes
    // far less even on a busy machine).
    let connect = &phases["connect"];
    assert_eq!(connect["count"], 4, "{phases}");
    assert!(connect["max"].as_f64().unwrap() < 600_000.0, "the wait for a turn is not the connect phase: {connect}");
    // Bad rates are one line naming the flag.
    for bad in ["0", "-3", "fast"] {
        let out = hakaru(&["run", "-q", "-n", "1", "--connection-rate", bad, &url]);
        assert_eq!(out.code, 2, "{bad}");
        assert!(out.stderr.contains("--connection-rate") && out.stderr.contains("not a rate"), "{}", out.stderr);
    }
}
