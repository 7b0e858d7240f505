//! Peers' habits against the built-in target: oha's `hakaru URL` runs as `run` with a note, wrk's `--latency` is
//! accepted with a note, ab's `-k` against http:// is warned about; each said once, on stderr.

mod common;

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
