//! What counts as a success (`--ok-status`, default 200-399), and that failed answers never pass for throughput:
//! not in `run`'s headline, not in a sweep's plateau, not in a capacity search's answer (issue 9, part 1.1).

use crate::common;

use common::{hakaru, target};

#[test]
fn a_run_of_503s_counts_them_as_failures_warns_and_exits_non_zero() {
    let t = target();
    let url = format!("http://{}/?status=503", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "40", &url]);
    assert_eq!(out.code, 1, "nothing succeeded: {}", out.stdout);
    let step = out.step();
    assert_eq!((step["ok"].as_u64(), step["failed"].as_u64()), (Some(0), Some(40)));
    assert_eq!(step["responses"], 40, "a 503 is an answer");
    assert_eq!(step["errors"], 0, "a 503 is not a transport error");
    assert_eq!(step["failed_statuses"]["503"], 40);
    assert_eq!(step["latency"]["count"], 0, "the headline latency is of successes only");
    assert_eq!(step["failed_latency"]["count"], 40);
    assert_eq!(step["throughput"]["ok_per_s"], 0.0);
    assert!(out.stdout.contains("requests     ok 0, failed 40 (100.00 %): status 503: 40"), "{}", out.stdout);
    assert!(out.stdout.contains("latency      no successes"), "{}", out.stdout);
    assert!(out.stdout.contains("no request succeeded (status 503: 40)"), "{}", out.stdout);
}

#[test]
fn ok_status_makes_a_503_a_success_when_the_user_says_so() {
    let t = target();
    let url = format!("http://{}/?status=503", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "20", "--ok-status", "200-299,503", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!((out.step()["ok"].as_u64(), out.step()["failed"].as_u64()), (Some(20), Some(0)));
    assert_eq!(out.step()["latency"]["count"], 20);
    assert_eq!(out.doc()["settings"]["ok_status"], "200-299,503");
}

#[test]
fn a_mix_of_successes_and_failures_is_counted_apart_with_a_warning_naming_the_status() {
    let t = target();
    let ok = format!("http://{}/", t.addr());
    let bad = format!("http://{}/?status=500", t.addr());
    // Two URLs are sent round-robin in order: exactly half fail.
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "40", &ok, &bad]);
    assert_eq!(out.code, 0, "some requests succeeded: {}", out.stderr);
    let step = out.step();
    assert_eq!((step["ok"].as_u64(), step["failed"].as_u64()), (Some(20), Some(20)));
    assert_eq!(step["latency"]["count"], 20);
    let warnings = out.doc()["warnings"].to_string();
    assert!(
        warnings.contains(
            "20 of 40 requests failed (50.00 %: status 500: 20); the latency figures are those of the 20 successes"
        ),
        "{warnings}"
    );
    let tput = &step["throughput"];
    let (ok_rate, all_rate) = (tput["ok_per_s"].as_f64().unwrap(), tput["requests_per_s"].as_f64().unwrap());
    assert!((ok_rate * 2.0 - all_rate).abs() < 0.01 * all_rate, "ok {ok_rate} of {all_rate}");
}

#[test]
fn a_sweep_of_503s_finds_no_plateau_and_says_every_step_failed() {
    let t = target();
    let url = format!("http://{}/?status=503", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let out = hakaru(&[
        "sweep",
        "-q",
        "--clients",
        "1,2",
        "-d",
        "1s",
        "--interval",
        "0s",
        "--json",
        json.to_str().unwrap(),
        &url,
    ]);
    // Not one request succeeded: there is no measurement of the service (exit 1, as run's).
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = &doc["analysis"];
    assert_eq!(a["plateau_from"], serde_json::Value::Null, "{a}");
    assert_eq!(a["failing_from"], 1.0, "{a}");
    assert_eq!(a["bottleneck"], "failing", "{a}");
    assert_eq!(a["peak_rps"], 0.0, "{a}");
    assert!(out.stdout.contains("every step failed more than 1 % of its requests"), "{}", out.stdout);
    assert!(!out.stdout.contains("levels off"), "{}", out.stdout);
}

#[test]
fn a_capacity_search_never_passes_a_rate_answered_with_503s() {
    let t = target();
    let url = format!("http://{}/?status=503", t.addr());
    let out = hakaru(&[
        "capacity",
        "-q",
        "--slo",
        "p99<50ms",
        "-d",
        "1s",
        "--interval",
        "0s",
        "--rate-start",
        "50",
        "--rate-max",
        "100",
        &url,
    ]);
    assert_eq!(out.code, 1, "not one request succeeded: {}", out.stderr);
    assert!(out.stdout.contains("fails: failed 100.00 % > 1 % (status 503:"), "{}", out.stdout);
    assert!(out.stdout.contains("capacity: not even 50 req/s meets p99<50ms"), "{}", out.stdout);
    assert!(!out.stdout.contains("meets\n"), "{}", out.stdout);
}

#[test]
fn a_bad_ok_status_is_one_line_naming_the_flag() {
    let out = hakaru(&["run", "--ok-status", "2xx", "http://127.0.0.1:1/"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "hakaru: error: --ok-status '2xx': '2xx' is not a status code (100 to 999); write codes and ranges like 200-299,304"
    );
}

#[test]
fn a_server_that_accepts_and_never_answers_measures_nothing_and_exits_1() {
    // Accepts every connection and holds it, reading nothing and writing nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    // The answers are awaited 1 s after the step's end (its graceful stop; by default the 60 s timeout).
    let args = ["run", "-c", "2", "-d", "1s", "--timeout", "60s", "--graceful-stop", "1s", &format!("http://{addr}/")];
    let out = hakaru(&args);
    assert_eq!(out.code, 1, "nothing was measured: {}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("no request completed (2 still waiting when the step ended)"), "{}", out.stdout);
    let step = out.step();
    assert_eq!((step["requests"].as_u64(), step["unfinished"].as_u64()), (Some(0), Some(2)), "{step}");
}
