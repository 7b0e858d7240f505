//! A server's refusals in its own words, against a real redis-server (one with `--requirepass`, started by the
//! test), memcached and the built-in target: a Redis that wants a password given none is refused before the load
//! (exit 2, the server's text), and the first error reply of a run is kept in the result document and printed once.

use crate::common;

use common::{ask, hakaru, redis, redis_with, target};

#[test]
fn a_redis_that_wants_a_password_given_none_is_refused_before_the_load_in_its_own_words() {
    let r = redis_with(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://127.0.0.1:{}", r.port);
    for args in [vec!["kv", "-q", "-n", "100", &url], vec!["sweep", "-q", "--clients", "1", "-d", "300ms", &url]] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains("NOAUTH Authentication required"), "the server's own text: {}", out.stderr);
        assert!(out.stderr.contains("':PASSWORD@' before the host"), "the fix: {}", out.stderr);
        assert!(out.stdout.is_empty(), "no load ran: {}", out.stdout);
    }
    // Not one command of the load reached the server: it holds nothing.
    assert_eq!(ask(r.port, b"AUTH s3cret-pw\r\nDBSIZE\r\n"), "+OK\r\n:0\r\n");
}

#[test]
fn the_first_redis_error_reply_is_kept_in_the_document_and_printed_once() {
    let r = redis();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kv.json");
    // One key, pushed as a list then incremented: every INCR gets WRONGTYPE.
    let out = hakaru(&[
        "kv",
        "-q",
        "-c",
        "1",
        "-n",
        "20",
        "--keys",
        "1",
        "--command",
        "LPUSH __key__ x",
        "--command",
        "INCR __key__",
        "--json",
        json.to_str().unwrap(),
        &format!("redis://127.0.0.1:{}", r.port),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    assert!(step["status"]["500"].as_u64().unwrap() > 0, "{}", step["status"]);
    let text = step["first_error_reply"].as_str().unwrap_or_else(|| panic!("no first_error_reply: {step}"));
    assert!(text.starts_with("WRONGTYPE"), "{text}");
    assert_eq!(out.stdout.matches("the server's first error reply: WRONGTYPE").count(), 1, "{}", out.stdout);
    assert!(common::schema_errors(&doc).is_empty(), "{:?}", common::schema_errors(&doc));
}

#[test]
fn an_http_failure_status_is_kept_with_its_reason_and_a_clean_run_keeps_none() {
    let t = target();
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "5", &format!("http://{}/?status=503", t.addr())]);
    assert_eq!(out.step()["first_error_reply"], "503 Service Unavailable", "{}", out.step());
    assert_eq!(out.stdout.matches("the server's first error reply: 503 Service Unavailable").count(), 1);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    let clean = hakaru(&["run", "-q", "-c", "1", "-n", "5", &format!("http://{}/", t.addr())]);
    assert!(clean.step()["first_error_reply"].is_null(), "{}", clean.step());
    assert!(!clean.stdout.contains("first error reply"), "{}", clean.stdout);
}
