//! The checks before a key-value load (the PING, the survey of what a server holds) keep `--timeout` and
//! `--connect-timeout`, and a port that speaks the other protocol is named as such (the trust issue's third pass,
//! item 22), against real servers and a port that accepts and never answers.

use crate::common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::{hakaru_with, memcached, redis};

fn kv(args: &[&str]) -> common::Output {
    let mut all = vec!["kv", "-q", "-n", "10"];
    all.extend_from_slice(args);
    hakaru_with(&all, Duration::from_secs(180), |_| {})
}

#[test]
fn a_server_that_never_answers_is_given_up_on_after_timeout_not_a_wait_of_its_own() {
    // Accepts every connection and never writes a byte.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    // A long --connect-timeout (the connection opens at once) and a 1 s --timeout: the checks wait for a reply
    // as long as --timeout says. Before, they waited --connect-timeout (Redis) or 30 s at least (memcached).
    for (scheme, asked) in [("redis", "PING"), ("memcache", "stats")] {
        let url = format!("{scheme}://127.0.0.1:{port}");
        let start = Instant::now();
        let out = kv(&["--timeout", "1s", "--connect-timeout", "60s", &url]);
        let took = start.elapsed();
        assert_eq!(out.code, 2, "{url}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(&format!("no reply to {asked} within --timeout")), "{url}: {}", out.stderr);
        // The 1 s --timeout with room for a busy machine: below the 30 s (memcached) and 60 s (Redis) the old
        // waits took, so only the fixed wait meets it.
        assert!(took < Duration::from_secs(15), "{url}: {took:?}");
    }
}

#[test]
fn a_port_that_speaks_the_other_protocol_is_named() {
    let (r, m) = (redis(), memcached());
    let out = kv(&["--timeout", "20s", &format!("memcache://127.0.0.1:{}", r.port)]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("this port speaks Redis, not memcached; give redis://HOST:PORT"), "{}", out.stderr);
    let out = kv(&["--timeout", "20s", &format!("redis://127.0.0.1:{}", m.port)]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("this port speaks memcached, not Redis; give memcache://HOST:PORT"), "{}", out.stderr);
    // An HTTP server behind redis:// too.
    let t = common::target();
    let out = kv(&[&format!("redis://{}", t.addr())]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("this port speaks HTTP"), "{}", out.stderr);
}
