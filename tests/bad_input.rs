//! Bad input gets one line naming the flag (or file, line and column), the value and the fix; exit code 2.

mod common;

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
    rejects(&["run", "--frobnicate", "http://127.0.0.1/"], &["--frobnicate", "hakaru help"]);
    rejects(&["run", "-H", "NoColon", "http://127.0.0.1/"], &["--header 'NoColon'", "Name: value"]);
}

#[test]
fn an_output_file_in_a_missing_directory_fails_before_the_load() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    rejects(&["run", "-n", "5", "--csv", "/no/such/dir/r.csv", &url], &["/no/such/dir/r.csv", "writable path"]);
}
