//! Peers' habits against the built-in target: oha's `hakaru URL` runs as `run` with a note, wrk's `--latency` is
//! accepted with a note, ab's `-k` against http:// is warned about; each said once, on stderr.

use crate::common;

use common::{hakaru, target};

#[test]
fn a_url_with_no_command_runs_as_run_and_says_so_once() {
    let t = target();
    let out = hakaru(&["-q", "-n", "5", "-c", "1", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.matches("no command given: running it as `hakaru run`").count(), 1, "{}", out.stderr);
    assert!(out.stdout.contains("5 requests") || out.stdout.contains("ok 5"), "{}", out.stdout);
    // A misspelled command is not taken for a URL run: clap names it.
    let typo = hakaru(&["ruin", &format!("http://{}/", t.addr())]);
    assert_eq!(typo.code, 2);
    assert!(typo.stderr.contains("'ruin'") && !typo.stderr.contains("no command given"), "{}", typo.stderr);
}

#[test]
fn wrks_latency_flag_is_accepted_and_the_note_says_percentiles_are_always_printed() {
    let t = target();
    let out = hakaru(&["run", "--latency", "-q", "-n", "5", "-c", "1", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.matches("--latency (wrk's) changes nothing").count(), 1, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.doc()["steps"][0]["latency"]["percentiles"]["p99"].is_u64());
}

#[test]
fn abs_k_against_http_warns_that_it_is_insecure_and_keep_alive_is_already_on() {
    let t = target();
    let out = hakaru(&["run", "-k", "-q", "-n", "5", "-c", "1", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warning = "warning: -k is hakaru's --insecure (accept any TLS certificate), not ab's keep-alive";
    assert_eq!(out.stderr.matches(warning).count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("keep-alive is already on"), "{}", out.stderr);
    // Without -k, nothing is said.
    let quiet = hakaru(&["run", "-q", "-n", "5", "-c", "1", &format!("http://{}/", t.addr())]);
    assert!(quiet.stderr.trim().is_empty(), "{}", quiet.stderr);
}

/// Issue 51: each peer's flag that hakaru does not have, or reads otherwise, is one line naming hakaru's flag (exit 2,
/// before anything is sent): oha, wrk2, ab, hey, h2load, ghz, loadtest, nighthawk, vLLM's benchmark and aiperf.
#[test]
fn a_peers_flag_that_means_something_else_here_names_hakarus_flag() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let cases: &[(&[&str], &str)] = &[
        (&["run", "-z", "30s", "-c", "50"], "write -d 30s"),
        (&["run", "-q", "1000"], "is --rate 1000"),
        (&["-z", "30s"], "write -d 30s"),
        (&["run", "-R", "1000"], "--rate"),
        (&["run", "-p", "post.json"], "--body-file FILE"),
        (&["run", "-T", "application/json"], "-H 'Content-Type"),
        (&["run", "-C", "a=b"], "-H 'Cookie"),
        (&["run", "-A", "u:p"], "Authorization: Basic"),
        (&["run", "-a", "u:p"], "Authorization: Basic"),
        (&["run", "-D", "body.json"], "--body-file FILE"),
        (&["run", "-r", "10"], "--connection-rate"),
        (&["run", "-i"], "-m HEAD"),
        (&["run", "-h2"], "--http2"),
        (&["run", "-disable-keepalive"], "--no-keepalive"),
        (&["run", "--disable-keepalive"], "--no-keepalive"),
        (&["run", "-cpus", "2"], "-t 2"),
        (&["run", "--rps", "100"], "--rate"),
        (&["run", "--http-version", "2"], "--http2 or --http3"),
        (&["run", "--latency-correction"], "always corrected"),
        (&["run", "-n", "10", "-d", r#"{"name":"x"}"#], "is -b"),
        (&["run", "--data-file", "m.json"], "--body-file FILE"),
        (&["run", "--concurrency", "50"], "--streams 50"),
        (&["run", "--total", "100"], "-n 10000"),
        (&["run", "-m", r#"{"k":"v"}"#], "--metadata"),
        (&["run", "-s", "30"], "--timeout 30s"),
        (&["run", "--request-rate", "10"], "--rate 10 (or `hakaru llm`"),
        (&["run", "--num-prompts", "100"], "-n 1000"),
        (&["run", "--request-count", "100"], "-n 1000"),
        (&["run", "--max-concurrency", "64"], "-c 64"),
        (&["run", "--base-url", "http://h"], "the URL"),
        (&["run", "--endpoint", "/v1/x"], "the URL's path"),
        (&["run", "--dataset-name", "sharegpt"], "hakaru llm --dataset-name"),
        (&["sweep", "--rps", "100"], "--rate"),
    ];
    for (args, says) in cases {
        let mut all = args.to_vec();
        all.push(&url);
        let out = hakaru(&all);
        assert_eq!(out.code, 2, "{all:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.contains("no command given")).collect();
        assert_eq!(lines.len(), 1, "{all:?}: {}", out.stderr);
        assert!(lines[0].contains(says), "{all:?}: {}", out.stderr);
    }
    assert_eq!(common::target_status(t.addr())["n_requests"], 0, "nothing was sent");
}
