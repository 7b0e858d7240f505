//! Every pattern-file shape drnbench reads runs in hakaru: one fixture per shape (tests/fixtures/patterns/), each
//! run for 10 requests against the built-in target (issue 10, part 1).

use crate::common;

use common::{hakaru, target};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/patterns/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs 10 requests of the fixture against a fresh target; returns the output.
fn run_fixture(name: &str) -> common::Output {
    let t = target();
    let url = format!("http://{}", t.addr());
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "10", "--seed", "1", "--patterns", &fixture(name), &url]);
    assert_eq!(out.code, 0, "{name}: {}", out.stderr);
    out
}

#[test]
fn every_accepted_shape_runs_ten_requests() {
    for name in [
        "plain.txt",
        "list_of_paths.json",
        "list_of_objects.json",
        "list_of_groups.json",
        "one_group.json",
        "one_group_extra_keys.json",
        "named_groups.json",
        "named_groups_extra_keys.json",
        "single_pattern_key.json",
        "patterns_one_object.json",
    ] {
        let out = run_fixture(name);
        assert_eq!(out.step()["requests"], 10, "{name}");
        assert_eq!(out.status_count("200"), 10, "{name}: {}", out.step()["status"]);
    }
}

#[test]
fn unknown_keys_are_ignored_with_one_warning_naming_them() {
    let out = run_fixture("named_groups_extra_keys.json");
    let warning = "keys ignored, as drnbench ignores them: \"command\", \"comment\", \"name\"";
    assert!(out.stderr.contains(warning), "{}", out.stderr);
    assert_eq!(out.stderr.matches("keys ignored").count(), 1, "{}", out.stderr);
    assert!(out.doc()["warnings"].to_string().contains("keys ignored"), "{}", out.doc()["warnings"]);
}

#[test]
fn a_get_patterns_body_object_is_sent_as_its_query_string() {
    // {"status": 503} as a GET body becomes /?status=503, so the target answers 503.
    let t = target();
    let url = format!("http://{}", t.addr());
    let out = hakaru(&[
        "run",
        "-q",
        "-c",
        "1",
        "-n",
        "10",
        "--ok-status",
        "503",
        "--patterns",
        &fixture("get_body_object.json"),
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("503"), 10, "{}", out.step()["status"]);
    assert_eq!(out.step()["throughput"]["bytes_out"].as_u64().unwrap() % 10, 0);
}

#[test]
fn a_groups_patterns_are_drawn_from_an_urn_as_drnbench_draws_them() {
    // drnbench fills an urn with the group's patterns in equal numbers and shuffles it: three patterns, an urn of
    // 334 each; 1002 requests on one thread empty it, so each path is sent exactly 334 times (a draw with
    // replacement would almost never give three equal counts).
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let counts = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counts = Arc::clone(&counts);
            std::thread::spawn(move || {
                let (mut stream, mut buf, mut pending) = (stream, [0u8; 4096], Vec::new());
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&pending[..end]).to_string();
                        let path = head.split(' ').nth(1).unwrap_or("").to_string();
                        *counts.lock().unwrap().entry(path).or_default() += 1;
                        pending.drain(..end + 4);
                        if stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("three.json");
    std::fs::write(&file, r#"{"g": {"patterns": ["/a", "/b", "/c"]}}"#).unwrap();
    let url = format!("http://{addr}");
    let out = hakaru(&["run", "-q", "-c", "1", "-t", "1", "-n", "1002", "--patterns", file.to_str().unwrap(), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let counts = seen.lock().unwrap().clone();
    assert_eq!(counts, HashMap::from([("/a".into(), 334), ("/b".into(), 334), ("/c".into(), 334)]));
}

#[test]
fn figures_are_given_per_group_and_per_request_with_the_slowest_requests() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.json");
    std::fs::write(
        &file,
        r#"{"fast": {"frequency": 0.5, "patterns": ["/"]}, "slow": {"frequency": 0.5, "patterns": ["/?delay=20ms"]}}"#,
    )
    .unwrap();
    let url = format!("http://{}", t.addr());
    let csv = dir.path().join("run.csv");
    let out = hakaru(&[
        "run",
        "-q",
        "-c",
        "2",
        "-n",
        "100",
        "--seed",
        "4",
        "--patterns",
        file.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let csv = std::fs::read_to_string(csv).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",group:fast:ok_per_s,") && header.ends_with("request:GET /?delay=20ms:p99_ms"),
        "{header}"
    );
    let rows = out.step()["breakdown"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["kind"].as_str().unwrap(), r["name"].as_str().unwrap())).collect();
    assert_eq!(names, [("group", "fast"), ("group", "slow"), ("request", "GET /"), ("request", "GET /?delay=20ms")]);
    let total: u64 = rows[..2].iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert_eq!(total, 100, "every request is in one group");
    let (fast, slow) = (rows[0]["p50_us"].as_u64().unwrap(), rows[1]["p50_us"].as_u64().unwrap());
    assert!(fast < 10_000 && slow >= 20_000, "fast p50 {fast} us, slow p50 {slow} us");
    let slowest = out.step()["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 10);
    // The 20 ms ones, but for a fast one a busy machine held up as long (a thread not woken for 20 ms).
    let slow_ones = slowest.iter().filter(|s| s["request"] == "GET /?delay=20ms").count();
    assert!(slow_ones >= 8, "{slowest:?}");
    // An HTTP request has no command or key of a key-value op, not even as null.
    assert!(slowest.iter().all(|s| s.get("command").is_none() && s.get("key").is_none()), "{slowest:?}");
    assert!(out.stdout.contains("group / request") && out.stdout.contains("slowest"), "{}", out.stdout);
}

#[test]
fn a_post_patterns_body_object_is_sent_as_json_labelled_json() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = std::sync::Arc::clone(&heads);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = std::sync::Arc::clone(&seen);
            std::thread::spawn(move || {
                let (mut stream, mut buf) = (stream, [0u8; 4096]);
                let mut data = Vec::new();
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&data).to_string();
                    if text.ends_with("}") {
                        seen.lock().unwrap().push(text);
                        data.clear();
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("post.json");
    std::fs::write(&file, r#"[{"path": "/d/select", "method": "post", "body": {"table": "Pages"}}]"#).unwrap();
    let out =
        hakaru(&["run", "-q", "-c", "1", "-n", "2", "--patterns", file.to_str().unwrap(), &format!("http://{addr}")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(heads[0].starts_with("POST /d/select HTTP/1.1\r\n"), "{}", heads[0]);
    assert!(heads[0].contains("\r\nContent-Type: application/json\r\n"), "{}", heads[0]);
    assert!(heads[0].ends_with("\r\n\r\n{\"table\":\"Pages\"}"), "{}", heads[0]);
}

#[test]
fn a_wait_in_the_pattern_file_is_each_clients_wait_unless_wait_is_given() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wait.json");
    std::fs::write(&file, r#"{"wait": 0.05, "g": {"patterns": ["/"]}}"#).unwrap();
    let url = format!("http://{}", t.addr());
    let qps = |extra: &[&str]| {
        let json = dir.path().join("s.json");
        let mut args = vec!["sweep", "-q", "--no-monitor", "--clients", "1", "-d", "1s", "--interval", "0s"];
        args.extend_from_slice(extra);
        args.extend(["--patterns", file.to_str().unwrap(), "--json", json.to_str().unwrap(), &url]);
        let out = hakaru(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (
            doc["steps"][0]["throughput"]["ok_per_s"].as_f64().unwrap(),
            doc["settings"]["sweep"]["wait_s"].as_f64().unwrap(),
        )
    };
    let (from_file, wait_s) = qps(&[]);
    assert!(from_file <= 20.5 && wait_s == 0.05, "one client waiting 50 ms: {from_file}/s, wait {wait_s}");
    let (flag, wait_s) = qps(&["--wait", "0"]);
    assert!(flag > 100.0 && wait_s == 0.0, "--wait 0 wins over the file: {flag}/s");
}
