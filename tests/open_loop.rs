//! `hakaru run --rate`: a fixed rate kept, and latency measured from the intended send time.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{hakaru, target};

#[test]
fn the_achieved_rate_at_2000_per_second_is_within_one_percent() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "2000", "-d", "3s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.step()["schedule"];
    let achieved = s["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 2000.0).abs() / 2000.0 < 0.01, "achieved {achieved}/s");
    assert_eq!(s["target_rate"], 2000.0);
    assert_eq!(out.doc()["settings"]["load_model"], "open");
    assert!(out.stdout.contains("asked 2000.0/s"), "{}", out.stdout);
}

#[test]
fn a_server_freeze_shows_in_the_corrected_p99_and_not_in_the_service_time_p99() {
    let t = target();
    let addr = t.addr();
    let url = format!("http://{addr}/");
    // One second into a 4 s run at 500/s on one connection, the whole target freezes for 1 s.
    let freezer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1000));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /?freeze=1s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    });
    let out = hakaru(&["run", "-q", "--rate", "500", "-c", "1", "-d", "4s", &url]);
    freezer.join().unwrap();
    let corrected = out.step()["latency"]["percentiles"]["p99"].as_u64().unwrap();
    let service = out.step()["service"]["percentiles"]["p99"].as_u64().unwrap();
    assert!(corrected >= 300_000, "corrected p99 {corrected} us should show the 1 s freeze");
    assert!(service < 100_000, "service p99 {service} us: one request waited, the rest were merely sent late");
    let late = out.step()["schedule"]["late"].as_u64().unwrap();
    assert!(late >= 300, "about 500 requests fell due during the freeze: {late} late");
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("the 1 connection was busy"), "{warnings}");
}

#[test]
fn poisson_arrivals_keep_the_mean_rate() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "1000", "--arrival", "poisson", "--seed", "3", "-d", "3s", &url]);
    let achieved = out.step()["schedule"]["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 1000.0).abs() / 1000.0 < 0.05, "achieved {achieved}/s");
    assert_eq!(out.doc()["settings"]["arrival"], "poisson");
}

#[test]
fn an_open_loop_opens_only_the_connections_it_needs() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "200", "-c", "50", "-d", "2s", &url]);
    let opened = out.step()["connections"]["opened"].as_u64().unwrap();
    assert!(opened <= 10, "a fast target at 200/s needs a few connections, not 50: {opened}");
    let warnings = out.doc()["warnings"].to_string();
    assert!(!warnings.contains("connections were open"), "fewer connections is not a fault here: {warnings}");
}

#[test]
fn a_request_count_at_a_rate_takes_the_time_the_rate_implies() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "500", "-n", "500", &url]);
    assert_eq!(out.step()["requests"], 500);
    let d = out.step()["duration_s"].as_f64().unwrap();
    assert!((0.9..1.3).contains(&d), "500 requests at 500/s took {d} s");
}

#[test]
fn a_zero_or_negative_rate_is_bad_input() {
    for rate in ["0", "-5"] {
        let out = hakaru(&["run", "--rate", rate, "http://127.0.0.1:9/"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("--rate"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}
