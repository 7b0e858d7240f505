//! Ramps inside one run against a real nginx: `--rate-stages` (open loop) sends what the ramp asks window by
//! window, `--stages` (closed loop) adds clients as the target grows, and neither opens connections beyond -c:
//! nginx's own log of connection serial numbers says how many it saw.

use crate::common;

use std::collections::BTreeSet;

use common::{Nginx, hakaru};

/// The distinct connections nginx served `/conn` on.
fn connections_seen(nginx: &Nginx) -> BTreeSet<u64> {
    let log = std::fs::read_to_string(nginx.dir.path().join("conn.log")).unwrap_or_default();
    log.lines().filter_map(|l| l.split(' ').next()?.parse().ok()).collect()
}

#[test]
fn a_rate_ramp_sends_what_each_window_of_the_ramp_asks_on_the_connections_it_opened() {
    let nginx = Nginx::start();
    let out = hakaru(&["run", "-q", "--rate-stages", "2s:100,2s:2000", "-c", "20", &nginx.url("/conn")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(out.doc()["settings"]["ramp"]["of"], "rate");
    let windows = step["windows"].as_array().unwrap();
    assert!(windows.len() >= 4, "{windows:?}");
    // The rate climbs 0 -> 100/s in 2 s, then 100 -> 2000/s in 2 s: each second's integral.
    let expected = [25.0, 75.0, 575.0, 1525.0];
    for (w, want) in windows.iter().zip(expected) {
        // The pacer's count; a send a busy machine delays across a boundary lands in the next second, hence
        // 2 % or 3 requests, whichever is more.
        let sent = w["sent"].as_f64().unwrap();
        assert!((sent - want).abs() <= (want * 0.02).max(3.0), "sent {sent}, the ramp asks {want}: {w}");
        assert!(w["target"].as_f64().is_some(), "{w}");
    }
    assert_eq!(windows[3]["target"], 1525.0);
    // New connections only as the rate grows, never beyond -c, and nginx saw no more than hakaru opened.
    let opened = step["connections"]["opened"].as_u64().unwrap();
    let seen = connections_seen(&nginx);
    assert!(opened <= 20 && seen.len() as u64 <= opened, "opened {opened}, nginx saw {}", seen.len());
    assert_eq!(step["connections"]["reconnects"], 0);
    // The analysis says the knee, or that none was reached, as a ramp's estimate from windows of 1 s.
    assert!(out.stdout.contains("a ramp's estimate") && out.stdout.contains("window(s) of 1 s"), "{}", out.stdout);
    let analysis = &out.doc()["analysis"];
    assert_eq!(analysis["axis"], "rate", "{analysis}");
    assert_eq!(common::schema_errors(out.doc()), Vec::<String>::new());
}

#[test]
fn a_ramp_of_clients_opens_each_connection_once_as_the_target_reaches_it() {
    let nginx = Nginx::start();
    let out = hakaru(&["run", "-q", "--stages", "1s:4,1s:8,1s:8", &nginx.url("/conn")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["load"]["connections"], 8);
    let windows = step["windows"].as_array().unwrap();
    let targets: Vec<f64> = windows.iter().take(3).map(|w| w["target"].as_f64().unwrap()).collect();
    assert_eq!(targets, vec![2.0, 6.0, 8.0]);
    // Clients join as the target passes their number: fewer open in the first second than in the last.
    let open: Vec<u64> = windows.iter().map(|w| w["open_connections"].as_u64().unwrap()).collect();
    assert!(open[0] <= 4 && open[2] == 8, "open connections per window {open:?}");
    let seen = connections_seen(&nginx);
    assert_eq!(step["connections"]["opened"], 8);
    assert_eq!(seen.len(), 8, "nginx saw connections {seen:?}");
}

#[test]
fn a_key_value_run_follows_a_rate_ramp_too() {
    let r = common::redis();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    let url = format!("redis://127.0.0.1:{}", r.port);
    let out =
        hakaru(&["kv", "-q", "--rate-stages", "1s:200,1s:400", "-c", "4", "--json", json.to_str().unwrap(), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    let sent: Vec<f64> = step["windows"].as_array().unwrap().iter().map(|w| w["sent"].as_f64().unwrap()).collect();
    // 0 -> 200/s over the first second (100 requests), 200 -> 400/s over the second (300).
    for (got, want) in sent.iter().zip([100.0, 300.0]) {
        assert!((got - want).abs() <= (want * 0.02).max(3.0), "sent {sent:?}");
    }
    assert!(step["connections"]["opened"].as_u64().unwrap() <= 4, "{}", step["connections"]);
}

#[test]
fn a_bad_stage_is_refused_naming_the_flag_the_stage_and_an_example() {
    for (args, said) in [
        (vec!["--stages", "30s"], "--stages '30s': stage '30s' is not DURATION:TARGET"),
        (vec!["--stages", "1s:1.5"], "a whole number of clients"),
        (vec!["--rate-stages", "1s:0,2s:0"], "every target is 0"),
        (vec!["--rate-stages", "1x:10"], "has a bad duration"),
        (vec!["--stages", "1s:2", "-d", "5s"], "--duration"),
    ] {
        let out = hakaru(&[&["run"][..], &args, &["http://127.0.0.1:9/"]].concat());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "one line: {}", out.stderr);
    }
}

#[test]
fn pipelined_clients_follow_a_ramp_of_clients() {
    let r = common::redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let (code, said, doc) = common::kv_json(&["--pipeline", "8", "--stages", "1s:2,1s:4", &url]);
    assert_eq!(code, 0, "{said}");
    let step = &doc["steps"][0];
    assert_eq!(step["connections"]["opened"], 4, "{}", step["connections"]);
    let windows = step["windows"].as_array().unwrap();
    let targets: Vec<f64> = windows.iter().take(2).map(|w| w["target"].as_f64().unwrap()).collect();
    assert_eq!(targets, vec![1.0, 3.0]);
    // Each client joins as the target passes its number: at most 2 take part in the first second, 4 by the end
    // of the second (throughput need not grow with them: one Redis thread on a busy machine may be the limit).
    let requests: Vec<u64> = windows.iter().map(|w| w["requests"].as_u64().unwrap()).collect();
    assert!(requests[0] > 0 && requests[1] > 0, "answers per second {requests:?}");
    let open: Vec<u64> = windows.iter().map(|w| w["open_connections"].as_u64().unwrap()).collect();
    assert!(open[0] <= 2 && open[1] == 4, "open connections per window {open:?}");
}

#[test]
fn local_agents_split_every_stage_of_a_ramp() {
    let nginx = Nginx::start();
    // The rate: each agent sends half of each second's integral, merged by instant.
    let out = hakaru(&["run", "-q", "--agents", "2", "--rate-stages", "1s:100,1s:300", "-c", "4", &nginx.url("/conn")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(out.doc()["settings"]["ramp"]["of"], "rate", "{}", out.doc()["settings"]);
    let sent: Vec<f64> = step["windows"].as_array().unwrap().iter().map(|w| w["sent"].as_f64().unwrap()).collect();
    for (got, want) in sent.iter().zip([50.0, 200.0]) {
        assert!((got - want).abs() <= (want * 0.02).max(3.0), "sent per second {sent:?}");
    }
    assert!(step["connections"]["opened"].as_u64().unwrap() <= 4, "{}", step["connections"]);
    // The clients: 2 -> 4 over two agents opens 4 connections in all, nginx seeing each once.
    let nginx = Nginx::start();
    let out = hakaru(&["run", "-q", "--agents", "2", "--stages", "1s:2,1s:4", &nginx.url("/conn")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["connections"]["opened"], 4, "{}", out.step()["connections"]);
    assert_eq!(connections_seen(&nginx).len(), 4);
}
