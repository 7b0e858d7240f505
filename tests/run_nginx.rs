//! `hakaru run` against a real nginx (Debian's package) on loopback: HTTP/1.1 framing and TLS as servers do them.

use crate::common;

use common::{Nginx, hakaru};

#[test]
fn keepalive_load_on_nginx_gets_only_200s_on_the_connections_asked() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "8", "-t", "2", "-n", "5000", &n.url("/")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 5000);
    assert_eq!(out.step()["connections"]["opened"], 8);
    assert_eq!(out.step()["errors"], 0);
    // "HTTP/1.1 200 OK" plus nginx's headers and "hello world\n" come back for every request.
    assert!(out.step()["throughput"]["bytes_in"].as_u64().unwrap() > 5000 * 100);
}

#[test]
fn chunked_gzip_bodies_from_nginx_are_read_to_their_end() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "200", "-H", "Accept-Encoding: gzip", &n.url("/gz/big.txt")]);
    assert_eq!(out.status_count("200"), 200, "{}", out.step());
    assert_eq!(out.step()["connections"]["opened"], 2, "chunked bodies keep the connection usable");
}

#[test]
fn head_204_and_304_answers_have_no_body_and_keep_the_connection() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "50", "-m", "HEAD", &n.url("/static/file.txt")]);
    assert_eq!(out.status_count("200"), 50);
    assert_eq!(out.step()["connections"]["opened"], 1);
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "50", &n.url("/empty")]);
    assert_eq!(out.status_count("204"), 50);
    let later = "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT";
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "50", "-H", later, &n.url("/static/file.txt")]);
    assert_eq!(out.status_count("304"), 50, "{}", out.step());
    assert_eq!(out.step()["connections"]["opened"], 1);
}

#[test]
fn a_server_that_closes_every_tenth_request_is_reconnected_and_counted() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "100", &n.url("/close10")]);
    assert_eq!(out.status_count("200"), 100);
    assert_eq!(out.step()["errors"], 0);
    assert_eq!(out.step()["connections"]["opened"], 10);
    assert_eq!(out.step()["connections"]["reconnects"], 10);
}

#[test]
fn keepalive_off_against_nginx_opens_a_connection_per_request() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "400", "--no-keepalive", &n.url("/")]);
    assert_eq!(out.status_count("200"), 400);
    assert_eq!(out.step()["connections"]["opened"], 400);
    assert_eq!(out.step()["connections"]["reconnects"], 0, "closing is what was asked, not a reconnect");
}

#[test]
fn https_with_insecure_accepts_a_self_signed_certificate() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "100", "--insecure", &n.tls_url("/")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 100, "{}", out.step());
    // Kept alive: a connection per client at most. (One when the second thread started after the first thread's
    // client had taken all 100 requests: seen at load 4 in a fresh clone's run of 79c6d9a.)
    let opened = out.step()["connections"]["opened"].as_u64().unwrap();
    assert!((1..=2).contains(&opened), "{}", out.step()["connections"]);
}

#[test]
fn https_without_insecure_counts_the_untrusted_certificate_as_a_tls_error() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "5", &n.tls_url("/")]);
    assert_eq!(out.code, 1, "not one request succeeded: {}", out.stderr);
    assert_eq!(out.error_count("tls"), 5, "{}", out.step());
    assert!(out.stdout.contains("tls"), "{}", out.stdout);
}

/// nginx's own record of /idle: each of the 4 requests arrived once (never again on a second connection), most on a
/// connection of its own after nginx closed the one before.
fn idle_log_says_each_request_came_once(n: &Nginx, method: &str) {
    let log = n.dir.path().join("idle.log");
    common::wait_for(std::time::Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 4)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines.iter().all(|l| l.ends_with(&format!(" {method}"))), "{text}");
    let connections: std::collections::BTreeSet<&str> = lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert!(connections.len() >= 3, "a new connection after each idle close: {text}");
}

#[test]
fn a_keepalive_connection_nginx_closed_while_idle_is_reopened_not_counted_as_an_error() {
    let n = Nginx::start();
    // Two requests a second on one connection: nginx closes it after 300 ms idle, before each next request.
    let out = hakaru(&["run", "-q", "--rate", "2", "-c", "1", "-n", "4", &n.url("/idle")]);
    assert_eq!(out.status_count("200"), 4, "{}", out.step());
    assert_eq!(out.step()["errors"], 0);
    assert!(out.step()["connections"]["reconnects"].as_u64().unwrap() >= 2, "{}", out.step()["connections"]);
    idle_log_says_each_request_came_once(&n, "GET");
}

#[test]
fn a_200_kb_body_arrives_over_many_reads_and_is_counted_whole() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "200", &n.url("/static/200kb.bin")]);
    assert_eq!(out.status_count("200"), 200, "{}", out.step());
    assert!(out.step()["throughput"]["bytes_in"].as_u64().unwrap() >= 200 * 200_000);
    assert_eq!(out.step()["connections"]["opened"], 4);
}

#[test]
fn a_post_on_a_connection_nginx_closed_while_idle_goes_on_a_new_connection_and_is_sent_once() {
    let n = Nginx::start();
    let out = hakaru(&["run", "-q", "--rate", "2", "-c", "1", "-n", "4", "-m", "POST", "-b", "x", &n.url("/idle")]);
    assert_eq!(out.status_count("200"), 4, "{}", out.step());
    assert_eq!(out.step()["errors"], 0);
    assert!(out.step()["connections"]["reconnects"].as_u64().unwrap() >= 2, "{}", out.step()["connections"]);
    idle_log_says_each_request_came_once(&n, "POST");
}
