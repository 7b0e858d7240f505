//! `hakaru kv` against a real redis-server and memcached (Debian's, installed by scripts/test.sh), each started
//! by the test on a free loopback port and stopped when it ends.

use crate::common;

use std::time::Duration;

use common::{ask, hakaru, memcached, redis, redis_with};

/// The words of `line`, then the URL.
fn words<'a>(line: &'a str, url: &'a str) -> Vec<&'a str> {
    line.split_whitespace().chain([url]).collect()
}

#[test]
fn redis_sets_then_gets_every_key_and_counts_hits() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    // 100 keys walked in order by one client, 1000 sets: every key is set (ten times).
    let set = hakaru(&words("kv -q -c 1 -t 1 -n 1000 --mix set:1 --keys 100 --key-pattern S", &url));
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert!(set.stdout.contains("ok 1000, failed 0"), "{}", set.stdout);
    assert_eq!(ask(r.port, b"DBSIZE\r\n"), ":100\r\n");
    let json_dir = tempfile::tempdir().unwrap();
    let json = json_dir.path().join("kv.json");
    let get_args = format!("kv -q -c 1 -t 1 -n 2000 --mix get:1 --keys 200 --key-pattern S --json {}", json.display());
    let get = hakaru(&words(&get_args, &url));
    assert_eq!(get.code, 0, "{}", get.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    assert_eq!(step["protocol"], "redis");
    assert_eq!(step["ok"], 2000, "a miss is not a failure");
    // Keys 0..100 exist, 100..200 do not: one client walks the 200 keys ten times: exactly half.
    assert_eq!(step["status"]["200"], 1000, "{}", step["status"]);
    assert_eq!(step["status"]["204"], 1000, "{}", step["status"]);
    assert_eq!(step["breakdown"][0]["name"], "GET");
}

#[test]
fn memcached_answers_a_get_set_mix_with_per_operation_figures() {
    let m = memcached();
    let url = format!("memcache://127.0.0.1:{}", m.port);
    let out = hakaru(&[
        "kv",
        "-q",
        "-c",
        "2",
        "-n",
        "3000",
        "--mix",
        "get:80,set:20",
        "--keys",
        "50",
        "--value-size",
        "100",
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ok 3000, failed 0"), "{}", out.stdout);
    let ops: Vec<(String, u64)> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 12 && (w[0] == "GET" || w[0] == "SET")).then(|| (w[0].to_string(), w[1].parse().unwrap()))
        })
        .collect();
    assert_eq!(ops.len(), 2, "{}", out.stdout);
    let gets = ops.iter().find(|(o, _)| o == "GET").unwrap().1 as f64;
    assert!((0.75..0.85).contains(&(gets / 3000.0)), "get share {gets}/3000");
    // Every value set is 100 bytes: a get of a key that was set returns it whole.
    let stats = ask(m.port, b"get hakaru:0 hakaru:1 hakaru:2\r\n");
    assert!(stats.ends_with("END\r\n"), "{stats}");
    assert!(stats.lines().filter(|l| l.starts_with("VALUE")).all(|l| l.ends_with(" 100")), "{stats}");
}

/// The commands a redis-server has processed so far (INFO's total_commands_processed; 0 when unreadable).
fn commands_processed(port: u16) -> u64 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return 0 };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 8192];
    let n = s.write_all(b"INFO stats\r\n").and_then(|_| s.read(&mut buf)).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_server_that_goes_away_mid_run_is_counted_not_a_crash() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    // The server goes away once hakaru's load has reached it (a few hundred commands), however long hakaru took
    // to start on a busy machine; a fixed delay could kill it before the first connection (then the run is
    // refused, exit 2) or after the run.
    let port = r.port;
    let killer = std::thread::spawn(move || {
        let began = std::time::Instant::now();
        while commands_processed(port) < 300 && began.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(r);
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    let out = hakaru(&["kv", "-q", "-c", "2", "-d", "5s", "--keys", "10", "--json", json.to_str().unwrap(), &url]);
    killer.join().unwrap();
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.code, 0, "some operations succeeded before: {}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    assert!(step["ok"].as_u64().unwrap() > 0, "{step}");
    let kinds: Vec<&str> =
        step["error_kinds"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(
        !kinds.is_empty()
            && kinds
                .iter()
                .all(|k| ["connect_refused", "connect_error", "reset", "closed", "io", "timeout"].contains(k)),
        "the server's end is counted by kind: {kinds:?}"
    );
}

#[test]
fn bad_kv_input_is_one_line_naming_the_flag() {
    for (args, expect) in [
        (vec!["kv", "http://127.0.0.1:1/"], "not a key-value server"),
        (vec!["kv", "--mix", "del:1", "redis://127.0.0.1:1"], "--mix 'del:1'"),
        (vec!["kv", "redis://u:hunter2@127.0.0.1:1/x"], "u:***"),
        (vec!["kv", "redis://127.0.0.1:1"], "target redis://127.0.0.1:1: cannot connect"),
        (vec!["kv", "--keys", "0", "redis://127.0.0.1:1"], "--keys 0"),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expect), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("hunter2"));
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn a_password_and_a_database_in_the_url_are_sent_on_every_connection_and_never_shown() {
    let r = redis_with(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}/2", r.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    // Keep-alive off would be a new connection (and AUTH, SELECT) per request; -c 3 opens three.
    let out = hakaru(&[
        "kv",
        "-q",
        "-c",
        "3",
        "-n",
        "300",
        "--mix",
        "set:1",
        "--keys",
        "30",
        "--json",
        json.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ok 300, failed 0"), "{}", out.stdout);
    // The keys are in database 2, none in 0.
    assert_eq!(ask(r.port, b"AUTH s3cret-pw\r\nSELECT 2\r\nDBSIZE\r\n").lines().last(), Some(":30"));
    assert!(ask(r.port, b"AUTH s3cret-pw\r\nDBSIZE\r\n").ends_with(":0\r\n"));
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains("s3cret-pw"), "the password is in the result document");
    assert!(!out.stdout.contains("s3cret-pw"));
    // A wrong password is bad input, said once, before any load.
    let bad = format!("redis://:wrong-pw@127.0.0.1:{}", r.port);
    let out = hakaru(&["kv", "-q", "-n", "10", &bad]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("the server refused AUTH"), "{}", out.stderr);
    assert!(!out.stderr.contains("wrong-pw"), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}

#[test]
fn kv_runs_five_times_with_a_gate_and_merges_the_runs() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    let (file, runs) = (json.to_str().unwrap(), ["--runs", "5", "--run-interval", "0s"]);
    let gates = ["--threshold", "errors<1%", "--threshold", "p99<1us"];
    let mut args = vec!["kv", "-q", "-c", "2", "-n", "200", "--json", file, &url];
    args.extend(runs);
    args.extend(gates);
    let out = hakaru(&args);
    // The latency gate cannot hold: exit 99, with every run written.
    assert_eq!(out.code, 99, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["steps"].as_array().unwrap().len(), 5);
    assert_eq!(doc["steps"][4]["label"], "run 5");
    assert_eq!(doc["steps"][0]["protocol"], "redis");
    assert_eq!(doc["runs"]["requests"].as_u64(), Some(1000));
    assert_eq!(doc["runs"]["ok_per_s"]["values"].as_array().unwrap().len(), 5);
    assert_eq!(doc["thresholds"][0]["pass"], true);
    assert_eq!(doc["thresholds"][1]["pass"], false);
    assert_eq!(doc["thresholds"][1]["judged_on"], "5 runs merged");
    assert!(out.stdout.contains("over 5 of 5 runs"), "{}", out.stdout);
}

#[test]
fn the_operation_table_lists_what_ran_and_counts_hits_of_reads_alone() {
    let r = redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    let args = format!("kv -q -c 2 --workload ycsb-a --records 100 -n 400 --json {}", json.display());
    let out = hakaru(&words(&args, &url));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // YCSB-A reads and updates: no SCAN, no READ-MODIFY-WRITE rows, and no INSERT in the run phase.
    assert!(!out.stdout.contains("SCAN ") && !out.stdout.contains("READ-MODIFY-WRITE"), "{}", out.stdout);
    assert!(out.stdout.contains("  READ ") && out.stdout.contains("  UPDATE "), "{}", out.stdout);
    assert_eq!(out.stdout.matches("  INSERT ").count(), 1, "the load phase's row alone: {}", out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = &doc["steps"][1];
    let row = |name: &str| run["breakdown"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    // Every record was loaded: each read returns a value; an update's "done" is no hit.
    assert_eq!(row("READ")["hits"], row("READ")["ok"], "{}", run["breakdown"]);
    assert!(row("READ")["ok"].as_u64().unwrap() > 0);
    assert!(row("UPDATE")["hits"].is_null() && row("UPDATE")["misses"].is_null(), "{}", run["breakdown"]);
    assert!(common::schema_errors(&doc).is_empty(), "{:?}", common::schema_errors(&doc));
    // The mix's SET likewise.
    let out = hakaru(&words("kv -q -n 200 --mix get:1,set:1", &url));
    let set = out.stdout.lines().find(|l| l.trim_start().starts_with("SET ")).unwrap_or_default().to_string();
    assert!(
        set.split_whitespace().filter(|w| *w == "-").count() == 2,
        "hits and misses shown as -: {set}\n{}",
        out.stdout
    );
}
