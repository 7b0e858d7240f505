//! The slowest list of a key-value run names each op's command and key (`GET hakaru:17`) as an HTTP run's names
//! the request, in the text and in the result document, against a real redis-server and memcached (started by
//! each test on a free loopback port): mixes (one op at a time and pipelined), YCSB, Kyoto's order and wicked.

use crate::common;

use common::{kv_json, memcached, redis, redis_with, schema_errors};
use serde_json::Value;

/// Every step's slowest entries.
fn slowest(doc: &Value) -> Vec<&Value> {
    doc["steps"].as_array().unwrap().iter().flat_map(|s| s["slowest"].as_array().unwrap()).collect()
}

/// The lines of the text's slowest lists, each as (how it ended, how it is named).
fn slowest_lines(text: &str) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "  slowest" {
            inside = true;
        } else if line.trim().is_empty() {
            inside = false;
        } else if inside {
            let words: Vec<&str> = line.split_whitespace().collect();
            lines.push((words[1].to_string(), words[2..].join(" ")));
        }
    }
    lines
}

/// A key of the mix's keyspace, `hakaru:N` with N below `keys`.
fn in_keyspace(key: &str, keys: u64) -> bool {
    key.strip_prefix("hakaru:").and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n < keys)
}

#[test]
fn a_mixs_slowest_ops_name_their_command_and_key_one_at_a_time_and_pipelined_on_both_servers() {
    let r = redis();
    let m = memcached();
    for url in [format!("redis://127.0.0.1:{}", r.port), format!("memcache://127.0.0.1:{}", m.port)] {
        for pipeline in ["1", "8"] {
            let what = format!("{url} --pipeline {pipeline}");
            let (code, out, doc) = kv_json(&[
                "-c",
                "2",
                "-n",
                "3000",
                "--mix",
                "get:50,set:50",
                "--keys",
                "40",
                "--pipeline",
                pipeline,
                &url,
            ]);
            assert_eq!(code, 0, "{what}: {out}");
            assert!(schema_errors(&doc).is_empty(), "{what}: {:?}", schema_errors(&doc));
            let slow = slowest(&doc);
            assert_eq!(slow.len(), 10, "{what}: {doc}");
            for s in &slow {
                // The command is the op's own: a pipelined batch's bytes are cut per op, not read from the
                // batch's first (half the ops are gets, half sets: a wrong cut would name the other).
                let request = s["request"].as_str().unwrap();
                let command = s["command"].as_str().unwrap();
                assert!(["GET", "SET"].contains(&request) && command.eq_ignore_ascii_case(request), "{what}: {s}");
                assert!(in_keyspace(s["key"].as_str().unwrap(), 40), "{what}: {s}");
            }
            // The text names each as `GET hakaru:17`, in the document's order.
            let lines = slowest_lines(&out);
            let named: Vec<String> =
                slow.iter().map(|s| format!("{} {}", s["request"], s["key"]).replace('"', "")).collect();
            assert_eq!(lines.iter().map(|l| l.1.clone()).collect::<Vec<_>>(), named, "{what}: {out}");
        }
    }
}

#[test]
fn ycsb_names_its_records_and_the_commands_sent_never_a_script() {
    let r = redis();
    let m = memcached();
    let runs = [
        ("ycsb-a", format!("redis://127.0.0.1:{}", r.port)),
        ("ycsb-e", format!("redis://127.0.0.1:{}", r.port)),
        ("ycsb-a", format!("memcache://127.0.0.1:{}", m.port)),
    ];
    for (workload, url) in runs {
        let what = format!("{workload} {url}");
        let (code, out, doc) =
            kv_json(&["--workload", workload, "--flush", "--records", "300", "-n", "1500", "-c", "2", &url]);
        assert_eq!(code, 0, "{what}: {out}");
        assert!(schema_errors(&doc).is_empty(), "{what}: {:?}", schema_errors(&doc));
        let slow = slowest(&doc);
        assert!(slow.len() >= 10, "{what}: {doc}");
        for s in slow {
            let (request, command) = (s["request"].as_str().unwrap(), s["command"].as_str().unwrap());
            let key = s["key"].as_str().unwrap_or_default();
            // A script's first key (the scan's index) or a record; the script itself is never shown.
            assert!(key.starts_with("user") || (command == "EVAL" && !key.is_empty()), "{what}: {s}");
            assert!(!key.contains("redis.call") && !command.contains("redis.call"), "{what}: {s}");
            if url.starts_with("redis") && request == "READ" {
                assert_eq!(command, "HGETALL", "{what}: {s}");
            }
        }
        // The text names the op, then the command it sent when that is another word: `READ: HGETALL user42`.
        let lines = slowest_lines(&out);
        assert!(!lines.is_empty(), "{what}: {out}");
        assert!(lines.iter().all(|(_, name)| name.contains(": ") && name.split(' ').count() == 3), "{what}: {out}");
    }
}

#[test]
fn kyotos_order_and_wicked_name_the_keys_they_touch_on_both_servers() {
    let r = redis();
    let m = memcached();
    for url in [format!("redis://127.0.0.1:{}", r.port), format!("memcache://127.0.0.1:{}", m.port)] {
        let (code, out, doc) = kv_json(&["--workload", "order", "--rnum", "200", "-c", "2", &url]);
        assert_eq!(code, 0, "{url}: {out}");
        // Every step of order touches one key per op.
        for s in slowest(&doc) {
            assert!(s["key"].as_str().is_some_and(|k| k.starts_with("hakaru:")), "{url}: {s}");
        }
        let (code, out, doc) = kv_json(&[
            "--workload",
            "wicked",
            "--rnum",
            "200",
            "--it",
            "1",
            "-c",
            "2",
            "--verify",
            "--seed",
            "3",
            &url,
        ]);
        assert_eq!(code, 0, "{url}: {out}");
        assert!(schema_errors(&doc).is_empty(), "{url}: {:?}", schema_errors(&doc));
        let slow = slowest(&doc);
        assert!(!slow.is_empty(), "{url}: {doc}");
        // Each names its command; a command with a key names one of the workload's keys.
        for s in slow {
            assert!(s["command"].as_str().is_some_and(|c| !c.is_empty()), "{url}: {s}");
            assert!(s["key"].as_str().is_none_or(|k| k.starts_with("hakaru:")), "{url}: {s}");
        }
    }
}

#[test]
fn a_password_in_the_url_stays_out_of_the_slowest_list() {
    let r = redis_with(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}", r.port);
    let (code, out, doc) = kv_json(&["-c", "2", "-n", "500", "--keys", "20", &url]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(slowest(&doc).len(), 10, "{doc}");
    assert!(slowest(&doc).iter().all(|s| in_keyspace(s["key"].as_str().unwrap(), 20)), "{doc}");
    assert!(!out.contains("s3cret-pw") && !doc.to_string().contains("s3cret-pw"), "{out}");
}

#[test]
fn a_password_in_a_command_template_stays_out_of_every_output() {
    let r = redis_with(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}", r.port);
    let (code, out, doc) =
        kv_json(&["-c", "1", "-n", "20", "--command", "AUTH s3cret-pw", "--command", "GET __key__", &url]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("s3cret-pw") && !doc.to_string().contains("s3cret-pw"), "{out}\n{doc}");
    // Without -q the per-op table names each command: the AUTH row without its password.
    let loud = common::hakaru_with(
        &["kv", "-n", "20", "--command", "AUTH s3cret-pw", "--command", "GET __key__", &url],
        std::time::Duration::from_secs(120),
        |_| {},
    );
    let text = format!("{}{}", loud.stdout, loud.stderr);
    assert!(text.contains("AUTH <redacted>") && !text.contains("s3cret-pw"), "{text}");
}
