//! Bad input gets one line naming the flag (or file, line and column), the value and the fix; exit code 2.

use crate::common;

use common::{free_port, hakaru, target};

/// Runs hakaru expecting bad input: exit 2, one line on stderr containing every needle, no panic.
fn rejects(args: &[&str], needles: &[&str]) {
    let out = hakaru(args);
    assert_eq!(out.code, 2, "args {args:?}: stderr {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line for {args:?}, got:\n{}", out.stderr);
    assert!(lines[0].starts_with("hakaru: error: "), "{}", lines[0]);
    for n in needles {
        assert!(lines[0].contains(n), "{args:?}: {:?} not in {}", n, lines[0]);
    }
    assert!(!out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"));
    assert!(out.stdout.is_empty(), "nothing measured, nothing printed: {}", out.stdout);
}

#[test]
fn an_invalid_url_is_named_with_an_example() {
    rejects(&["run", "http://exa mple.com/"], &["URL 'http://exa mple.com/'", "http://127.0.0.1:8080/path"]);
    rejects(&["run", "localhost:8080"], &["URL 'localhost:8080'"]);
}

#[test]
fn an_unknown_scheme_says_which_schemes_work() {
    rejects(&["run", "ftp://127.0.0.1/"], &["scheme 'ftp'", "http:// or https://"]);
}

#[test]
fn a_host_that_does_not_resolve_is_bad_input() {
    rejects(&["run", "http://no-such-host.invalid/"], &["no-such-host.invalid", "does not resolve"]);
}

#[test]
fn a_closed_port_is_bad_input_not_a_million_errors() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    rejects(&["run", "-n", "10", &url], &[&format!("127.0.0.1:{port}"), "connection refused", "start the server"]);
}

#[test]
fn a_duration_with_an_unknown_unit_names_the_flag_and_the_units() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-d", "3x", &url], &["--duration '3x'", "unknown unit 'x'", "30s"]);
    rejects(&["run", "--timeout", "soon", &url], &["--timeout 'soon'"]);
}

#[test]
fn zero_connections_and_zero_threads_are_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-c", "0", &url], &["--connections 0", "at least 1"]);
    rejects(&["run", "-t", "0", &url], &["--threads 0"]);
    rejects(&["run", "-c", "many", &url], &["'many'"]);
}

#[test]
fn requests_and_duration_together_ask_to_choose_one() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "10", "-d", "1s", &url], &["--requests and --duration", "choose one"]);
}

#[test]
fn a_missing_pattern_file_is_named() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "--patterns", "/no/such/file.json", &url], &["/no/such/file.json", "cannot read"]);
}

#[test]
fn a_malformed_pattern_file_names_line_and_column() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.json");
    std::fs::write(&file, "{\n  \"g\": {\"frequency\": 0.5,\n          \"patterns\": [\"/a\" \"/b\"]}\n}\n").unwrap();
    let name = file.to_str().unwrap();
    rejects(&["run", "--patterns", name, &url], &[&format!("{name}:3:"), "expected"]);
    std::fs::write(&file, "/ok\nnot-a-path\n").unwrap();
    rejects(&["run", "--patterns", name, &url], &[&format!("{name}:2:1:"), "start the line with /"]);
}

#[test]
fn an_unreadable_body_file_is_named() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "--body-file", "/no/such/body", &url], &["--body-file '/no/such/body'", "cannot read"]);
}

#[test]
fn no_target_and_unknown_flags_say_what_to_give() {
    rejects(&["run"], &["give a URL"]);
    rejects(&["run", "--frobnicate", "http://127.0.0.1/"], &["--frobnicate", "hakaru run --help"]);
    rejects(&["run", "-H", "NoColon", "http://127.0.0.1/"], &["--header 'NoColon'", "Name: value"]);
}

#[test]
fn an_output_file_in_a_missing_directory_fails_before_the_load() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "5", "--csv", "/no/such/dir/r.csv", &url], &["/no/such/dir/r.csv", "writable path"]);
}

/// Writes `text` to a pattern file in `dir` and returns its path as a string.
fn pattern_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn a_rate_whose_interval_overflows_a_duration_is_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "5", "--rate", "1e-300", &url], &["--rate 1e-300", "0.001", "try --rate 1000"]);
    rejects(&["run", "-n", "5", "--rate", "1e300", &url], &["--rate 1e300", "1e9"]);
    rejects(&["sweep", "--rates", "1e-300", "-d", "1s", &url], &["--rates 1e-300"]);
    rejects(&["capacity", "--slo", "p99<50ms", "--rate-start", "1e-300", &url], &["--rate-start 1e-300"]);
}

#[test]
fn pattern_timeouts_out_of_range_name_the_file_line_and_column() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    // 1e300 panicked converting to a Duration; 1e19 overflowed the deadline and hung the run with -n.
    for value in ["1e300", "1e19", "-1", "0"] {
        let name = pattern_file(&dir, "p.json", &format!("{{\"timeout\": {value},\n \"patterns\": [\"/a\"]}}\n"));
        rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&format!("{name}:1:"), "timeout", "0.001"]);
    }
}

#[test]
fn a_port_above_65535_is_refused_not_taken_for_80() {
    let t = target();
    rejects(
        &["run", "-n", "5", "http://127.0.0.1:70000/"],
        &["URL 'http://127.0.0.1:70000/'", "port '70000'", "65535"],
    );
    rejects(&["run", "-n", "5", "--hosts", "127.0.0.1", "--port", "70000", "/"], &["--port", "70000"]);
    rejects(&["run", "-n", "5", "--hosts", "127.0.0.1", "--port", "0", "/"], &["--port 0", "65535"]);
    rejects(&["run", "-n", "5", "--hosts", "127.0.0.1:70000", "/"], &["--hosts '127.0.0.1:70000'", "port '70000'"]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}/", t.addr());
    let name = pattern_file(&dir, "p.json", "{\"port\": 70000, \"patterns\": [\"/a\"]}");
    rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&format!("{name}:1:"), "port 70000", "65535"]);
    let name = pattern_file(&dir, "p.txt", "http://127.0.0.1:70000/a\n");
    rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&name, "port '70000'"]);
}

#[test]
fn negative_counts_name_the_flag() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "-5", &url], &["'-5'", "--requests", "whole number"]);
    rejects(&["run", "-c", "-5", &url], &["'-5'", "--connections"]);
    rejects(&["run", "-n", "5", "-t", "-1", &url], &["'-1'", "--threads"]);
    rejects(&["sweep", "--end-clients", "-3", &url], &["'-3'", "--end-clients"]);
    rejects(&["run", "-n", "5", "--hosts", "127.0.0.1", "--port", "-1", "/"], &["'-1'", "--port"]);
}

#[test]
fn a_byte_order_mark_at_the_start_of_a_pattern_file_is_skipped() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in [("p.txt", "\u{feff}/a\n/b\n"), ("p.json", "\u{feff}{\"g\": {\"patterns\": [\"/a\"]}}\n")] {
        let name = pattern_file(&dir, file, text);
        let out = hakaru(&["run", "-q", "-n", "5", "--patterns", &name, &url]);
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        assert_eq!(out.status_count("200"), 5, "{file}");
    }
}

#[test]
fn hosts_entries_with_a_port_use_that_port() {
    let t = target();
    let host = format!("127.0.0.1:{}", t.addr().port());
    let out = hakaru(&["run", "-q", "-n", "5", "--hosts", &host, "/"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 5);
    // --port is the default for entries without their own.
    let out = hakaru(&["run", "-q", "-n", "5", "--hosts", "127.0.0.1", "--port", &t.addr().port().to_string(), "/"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn start_clients_with_a_rate_sweep_is_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(
        &["sweep", "--start-clients", "2", "--rate-start", "10", "--rate-end", "20", "-d", "1s", &url],
        &["--start-clients", "rate sweep", "not both"],
    );
    rejects(&["sweep", "--end-clients", "4", "--rates", "10,20", "-d", "1s", &url], &["--end-clients"]);
}

#[test]
fn a_missing_argument_names_the_flag() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["capacity", &url], &["--slo", "p99<50ms"]);
    rejects(&["sweep", "--rate-end", "5", "-d", "1s", &url], &["--rate-end 5", "--rate-start"]);
    rejects(&["sweep", "--rate-start", "5", "-d", "1s", &url], &["--rate-start 5", "--rate-end"]);
    let out = hakaru(&["patterns", "generate", "--terms", "/dev/null"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("hakaru: error: --template"), "{}", out.stderr);
}

#[test]
fn frequencies_that_add_up_to_infinity_are_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let name = pattern_file(
        &dir,
        "p.json",
        r#"{"a": {"frequency": 1e308, "patterns": ["/a"]}, "b": {"frequency": 1e308, "patterns": ["/b"]}}"#,
    );
    rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&name, "frequencies"]);
    let name = pattern_file(&dir, "q.json", r#"{"a": {"frequency": 1e999, "patterns": ["/a"]}}"#);
    rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&format!("{name}:1:")]);
}

#[test]
fn methods_paths_and_headers_that_would_break_the_request_are_refused_before_any_is_sent() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    // Each of these would put a second request (or a broken request line) on the wire.
    rejects(&["run", "-n", "5", "-H", "X-A: 1\r\n\r\nGET /smuggled HTTP/1.1", &url], &["--header", "CR, LF"]);
    rejects(&["run", "-n", "5", "-H", "X A: 1", &url], &["--header 'X A: <redacted>'", "token"]);
    rejects(&["run", "-n", "5", "-m", "GET /x", &url], &["--method 'GET /x'", "token"]);
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("h.json", "{\"headers\": {\"X-A\": \"1\\r\\nX-B: 2\"}, \"patterns\": [\"/a\"]}", "CR, LF"),
        ("n.json", "{\"headers\": {\"X A\": \"1\"}, \"patterns\": [\"/a\"]}", "token"),
        ("m.json", "{\"method\": \"GET /\", \"patterns\": [\"/a\"]}", "token"),
        ("p.json", "{\"patterns\": [\"/a b\"]}", "space"),
        ("p.txt", "/a\n/b HTTP/1.1\n", "2:3: '/b HTTP/1.1' holds a space"),
    ];
    for (file, text, needle) in cases {
        let name = pattern_file(&dir, file, text);
        rejects(&["run", "-n", "5", "--patterns", &name, &url], &[&name, needle]);
    }
    assert_eq!(common::target_status(t.addr())["n_requests"], 0, "no request was sent");
    // M-SEARCH (SSDP) is a token with a dash: accepted.
    let out = hakaru(&["run", "-q", "-n", "5", "-m", "M-SEARCH", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.doc()["settings"]["method"], "M-SEARCH");
}

#[test]
fn sub_millisecond_timeouts_are_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "5", "--timeout", "100us", &url], &["--timeout '100us'", "at least 1ms"]);
    rejects(&["run", "-n", "5", "--connect-timeout", "500ns", &url], &["--connect-timeout '500ns'", "at least 1ms"]);
}

#[test]
fn a_body_file_that_is_not_a_regular_file_or_too_large_is_refused() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    // /dev/zero would be read without end; a FIFO would block before the load forever.
    rejects(
        &["run", "-n", "5", "-m", "POST", "--body-file", "/dev/zero", &url],
        &["--body-file '/dev/zero'", "regular file"],
    );
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    rejects(&["run", "-n", "5", "--body-file", fifo.to_str().unwrap(), &url], &["--body-file", "regular file"]);
    let big = dir.path().join("big");
    std::fs::File::create(&big).unwrap().set_len(64 * 1024 * 1024 + 1).unwrap();
    rejects(&["run", "-n", "5", "--body-file", big.to_str().unwrap(), &url], &["--body-file", "64 MiB"]);
    rejects(&["run", "-n", "5", "--body-file", dir.path().to_str().unwrap(), &url], &["--body-file", "regular file"]);
}

/// `--start-at` as Unix seconds, `secs` from now (negative: in the past).
fn unix_from_now(secs: i64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    (now + secs).to_string()
}

#[test]
fn a_start_far_in_the_past_or_ahead_is_refused_in_one_line_never_a_panic() {
    // Issue 28: 30 days back grew to 2.5 GB, 1970 aborted (exit 134), 99999999999999 panicked (exit 101), the year
    // 9999 slept without a word.
    let t = target();
    let url = format!("http://{}/", t.addr());
    let month_ago = unix_from_now(-30 * 86_400);
    for (at, needles) in [
        (month_ago.as_str(), &["30days", "ago", "more than 5s in the past", "--start-late ok"][..]),
        ("1970-01-01T00:00:00Z", &["ago", "--start-late ok"]),
        ("0", &["ago", "--start-late ok"]),
        ("99999999999999", &["from now, more than a day ahead", "within the next 24h"]),
        ("9999-12-31T23:59:59Z", &["more than a day ahead"]),
        ("1e300", &["beyond any clock"]),
    ] {
        let flag = format!("--start-at '{at}'");
        let mut needles = needles.to_vec();
        needles.push(&flag);
        rejects(&["run", "-n", "5", "--start-at", at, &url], &needles);
        rejects(&["sweep", "--clients", "1", "-d", "1s", "--start-at", at, &url], &needles);
        rejects(&["kv", "-n", "5", "--start-at", at, "redis://127.0.0.1:1"], &needles);
    }
    rejects(&["run", "--start-at", &month_ago, "--start-late", "yes", &url], &["--start-late 'yes'", "ok"]);
}

#[test]
fn start_late_ok_runs_a_past_start_now_and_a_start_a_moment_past_still_counts_from_its_instant() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let started = std::time::Instant::now();
    let out =
        hakaru(&["run", "-n", "5", "-c", "1", "--start-at", &unix_from_now(-30 * 86_400), "--start-late", "ok", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 5, "{}", out.step());
    assert!(out.stdout.contains("--start-late ok: --start-at was 30days"), "{}", out.stdout);
    // Run from now: no start instant recorded, no lateness, and none of a month's empty windows.
    assert!(out.doc()["settings"]["start_at"].is_null(), "{}", out.doc()["settings"]);
    assert!(out.step()["windows"].as_array().is_none_or(|w| w.len() < 10), "{}", out.step()["windows"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    // Two seconds past is an agent started late: kept, its step counting from the instant.
    // -d 10s: on a busy machine hakaru may start seconds after the test asked (seen: more than 5 s late in all).
    let out = hakaru(&["run", "-d", "10s", "-c", "1", "--start-at", &unix_from_now(-2), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let late = out.step()["start_late_s"].as_f64().unwrap();
    assert!((1.0..9.0).contains(&late), "{late}");
}

#[test]
fn max_line_out_of_its_range_is_refused_naming_the_range() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "--max-line", "10", &url], &["--max-line '10'", "1KiB to 1MiB", "--max-line 64KiB"]);
    rejects(&["run", "--max-line", "1gib", &url], &["--max-line '1gib'", "1KiB to 1MiB"]);
    rejects(&["kv", "--max-line", "lots", "redis://127.0.0.1:1"], &["--max-line 'lots'", "not a size"]);
}

#[test]
fn documents_of_another_schema_are_refused_by_every_reader_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let good = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report/sweep-4ms.json");
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (html, svg, db) = (out("r.html"), out("c.svg"), out("history.db"));
    for found in ["hakaru.result/2", "other/1"] {
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(good).unwrap()).unwrap();
        doc["schema"] = found.into();
        // A field this version reads differently: the schema is the reason given, not the field.
        doc["settings"]["connections"] = "all of them".into();
        let file = out(&format!("{}.json", found.replace('/', "-")));
        std::fs::write(&file, doc.to_string()).unwrap();
        let name = format!("schema '{found}'");
        for args in [
            vec!["compare", &file, good],
            vec!["report", &file, "-o", &html],
            vec!["chart", &file, "-o", &svg],
            vec!["import", &file, "--db", &db],
            vec!["merge", &file],
        ] {
            rejects(&args, &[&file, &name, "this hakaru reads hakaru.result/1"]);
        }
    }
    assert!(!std::path::Path::new(&db).exists(), "nothing imported");
}

#[test]
fn https_against_a_plain_http_port_says_to_use_http() {
    let t = target();
    let out = hakaru(&["run", "-n", "1", &format!("https://{}/", t.addr())]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("the server answered in plain HTTP, not TLS; use http:// for this port"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}

#[test]
fn flags_that_would_be_silently_left_out_are_refused_and_no_secret_is_echoed() {
    // A header whose name is no header's: its value (a secret, maybe) is not quoted.
    let out = hakaru(&["run", "-n", "1", "-H", "auth token: s3cret-v", "http://127.0.0.1:1/"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("auth token: <redacted>") && !out.stderr.contains("s3cret-v"), "{}", out.stderr);
    // A proxy password that is not percent-encoded is refused without being shown.
    let out = hakaru(&["run", "-n", "1", "-x", "http://u:pa#ss word@127.0.0.1:3128", "https://127.0.0.1:1/"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("percent-encode") && !out.stderr.contains("ss word"), "{}", out.stderr);
    // The proxy is asked for the URL's host: --connect-to's address would not be reached.
    rejects(
        &["run", "-n", "1", "--connect-to", "a.test:80:127.0.0.1:1", "-x", "http://127.0.0.1:3128", "http://a.test/"],
        &["--connect-to with --proxy"],
    );
    // WebSocket's upgrade goes to the server, its answers are messages, its connection carries them all.
    for (flag, value) in [("-x", "http://127.0.0.1:3128"), ("--events", "sse"), ("--max-requests-per-connection", "5")]
    {
        rejects(&["run", "-n", "1", flag, value, "--message", "hi", "ws://127.0.0.1:1/"], &[flag_name(flag)]);
    }
    // gRPC's reflection call does not use these yet.
    rejects(
        &["run", "-n", "1", "--call", "a.B/C", "--sni", "x.test", "grpcs://127.0.0.1:1"],
        &["--sni with server reflection", "--proto"],
    );
}

fn flag_name(flag: &str) -> &str {
    if flag == "-x" { "--proxy" } else { flag }
}

/// Issue 50: `-c 10000000` took 19 GB and ignored Ctrl-C while it set up. A step larger than hakaru runs, or than
/// the machine's free memory allows, is one line and exit 2 before anything is made for it.
#[test]
fn connections_past_what_hakaru_or_the_machine_can_hold_are_refused_before_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 4] = [
        &["run", "-c", "10000000", "-d", "2s", "http://127.0.0.1:9/"],
        // A sweep's widest step, not only its first.
        &["sweep", "--clients", "10,2000000", "-d", "1s", "http://127.0.0.1:9/"],
        &["run", "--http2", "-c", "20000", "--streams", "100", "-d", "2s", "http://127.0.0.1:9/"],
        &["run", "-c", "5000", "--in-flight", "1000", "--message", "x", "-d", "2s", "ws://127.0.0.1:9/"],
    ];
    for args in cases {
        let os: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let (code, peak_kib) = common::hakaru_peak_rss(&os, &out, &err);
        let stderr = std::fs::read_to_string(&err).unwrap();
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("more than the 1000000 hakaru runs at once; lower -c"), "{stderr}");
        assert!(peak_kib < 100 << 10, "{args:?}: peak RSS {peak_kib} KiB");
    }
}

/// Issue 50: a .proto whose option value nests 5,000 messages overflowed the parser's stack (SIGABRT, exit 134).
#[test]
fn a_proto_nested_thousands_deep_is_one_line_naming_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\nextend google.protobuf.FileOptions \
         {{ Deep deep = 50000; }}\nmessage Deep {{ Deep d = 1; }}\noption (deep) = {}{};\nservice S {{}}\n",
        "{ d: ".repeat(5000),
        "}".repeat(5000)
    );
    let proto = common::write_in(&dir, "deep.proto", &deep);
    let out = common::hakaru(&["run", "-n", "1", "--proto", &proto, "--call", "S/M", "grpc://127.0.0.1:1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("deep.proto") && out.stderr.contains("line 5 column"), "{}", out.stderr);
}
