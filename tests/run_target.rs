//! `hakaru run` against the built-in target: the figures must match what the target was told to do.

use crate::common;

use common::{hakaru, target, target_status, target_with};
use hakaru::serve::ServeOptions;

#[test]
fn a_delay_of_20ms_gives_a_median_of_20ms_and_not_much_more() {
    let t = target();
    let url = format!("http://{}/?delay=20ms", t.addr());
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "100", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let p50 = out.step()["latency"]["percentiles"]["p50"].as_u64().unwrap();
    // 20 ms and what the target and hakaru take to wake and answer: under 1 ms on an idle machine, a few on a busy
    // 2-core one (4 x 20 ms once ran at 26 ms a request there).
    assert!((20_000..=35_000).contains(&p50), "p50 {p50} us");
    assert!(out.step()["latency"]["min"].as_u64().unwrap() >= 20_000);
}

#[test]
fn a_request_count_records_exactly_that_many_requests() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "-c", "7", "-t", "2", "-n", "1000", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["requests"], 1000);
    assert_eq!(out.status_count("200"), 1000);
    assert_eq!(out.step()["latency"]["count"], 1000);
    let served = target_status(t.addr())["n_requests"].as_u64().unwrap();
    assert_eq!(served, 1000, "the target saw exactly the requests hakaru recorded");
}

#[test]
fn a_status_503_target_gives_only_503s() {
    let t = target();
    let url = format!("http://{}/?status=503", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "50", &url]);
    let status = out.step()["status"].as_object().unwrap();
    assert_eq!(status.len(), 1, "{status:?}");
    assert_eq!(out.status_count("503"), 50);
    assert_eq!(out.step()["errors"], 0, "an HTTP status is an answer, not an error");
}

#[test]
fn keepalive_off_opens_one_connection_per_request() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "-c", "3", "-n", "60", "--no-keepalive", &url]);
    assert_eq!(out.status_count("200"), 60);
    assert_eq!(out.step()["connections"]["opened"], 60);
    // The target counts the connections it accepted: hakaru's preflight check and this /status request add two.
    let accepted = target_status(t.addr())["n_connections"].as_u64().unwrap();
    assert_eq!(accepted, 60 + 2);
    assert!(out.doc()["warnings"].to_string().contains("keep-alive is off"));
}

#[test]
fn keepalive_on_reuses_each_connection() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "-c", "3", "-t", "1", "-n", "60", &url]);
    assert_eq!(out.step()["connections"]["opened"], 3);
    assert_eq!(out.step()["connections"]["max_open"], 3);
    // Plus the preflight check and this /status request.
    assert_eq!(target_status(t.addr())["n_connections"].as_u64().unwrap(), 3 + 2);
}

#[test]
fn a_timeout_is_recorded_as_status_zero_and_counted() {
    let t = target();
    let url = format!("http://{}/?fault=stall", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "4", "--timeout", "300ms", &url]);
    assert_eq!(out.code, 1, "not one request succeeded: {}", out.stderr);
    // Said in the last line, where a study's case log is read for why the run failed.
    let last = out.stderr.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("hakaru: error: not one request succeeded (4 failed, 0 unfinished"), "{}", out.stderr);
    assert_eq!(out.status_count("0"), 4);
    assert_eq!(out.error_count("timeout"), 4);
    assert_eq!(out.step()["responses"], 0);
}

#[test]
fn each_fault_is_counted_as_its_exact_error_kind() {
    let t = target();
    for (fault, kind) in [("reset", "reset"), ("close", "closed"), ("garbage", "malformed_response")] {
        let url = format!("http://{}/?fault={fault}", t.addr());
        let out = hakaru(&["run", "-q", "-c", "2", "-n", "20", "--timeout", "2s", &url]);
        assert_eq!(out.code, 1, "{fault}: not one request succeeded: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{fault}: {}", out.stderr);
        assert_eq!(out.step()["requests"], 20, "{fault}");
        assert_eq!(out.error_count(kind), 20, "{fault}: {}", out.step()["error_kinds"]);
        // Status 0 is a timeout's, as in drnbench; a reset or a parse error is named by its kind, not as 000.
        assert_eq!(out.status_count("0"), 0, "{fault}: {}", out.step()["status"]);
        assert!(out.stdout.contains(kind), "the summary names {kind}");
    }
}

#[test]
fn a_slow_body_is_an_answer_whose_latency_includes_the_body() {
    let t = target();
    let url = format!("http://{}/?fault=slow-body&delay=300ms&size=2kb", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "4", &url]);
    assert_eq!(out.status_count("200"), 4);
    assert!(out.step()["latency"]["min"].as_u64().unwrap() >= 250_000);
    assert!(out.step()["throughput"]["bytes_in"].as_u64().unwrap() >= 4 * 2000);
}

#[test]
fn a_duration_bounds_the_run_and_windows_cover_each_second() {
    let t = target();
    let url = format!("http://{}/?delay=1ms", t.addr());
    let meter = common::StallMeter::start();
    let out = hakaru(&["run", "-q", "-c", "4", "-d", "2500ms", &url]);
    let d = out.step()["duration_s"].as_f64().unwrap();
    assert!(d >= 2.4, "duration {d}");
    let what = format!("a 2500 ms step lasted {d} s");
    common::on_time(&meter, "a_duration_bounds_the_run_and_windows_cover_each_second", d < 2.7, &what);
    let windows = out.step()["windows"].as_array().unwrap();
    assert!((2..=3).contains(&windows.len()), "{windows:?}");
    let in_windows: u64 = windows.iter().map(|w| w["requests"].as_u64().unwrap()).sum();
    assert_eq!(in_windows, out.step()["requests"].as_u64().unwrap());
    assert!(windows[0]["p50_us"].as_u64().unwrap() >= 1000);
}

#[test]
fn several_urls_are_sent_round_robin() {
    let t = target();
    let a = format!("http://{}/?status=201", t.addr());
    let b = format!("http://{}/?status=202", t.addr());
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "40", &a, &b]);
    assert_eq!(out.status_count("201"), 20);
    assert_eq!(out.status_count("202"), 20);
}

#[test]
fn hosts_with_a_port_spread_paths_over_every_host() {
    let t = target();
    let port = t.addr().port().to_string();
    let out = hakaru(&[
        "run",
        "-q",
        "-c",
        "2",
        "-n",
        "40",
        "--hosts",
        "127.0.0.1,localhost",
        "--port",
        &port,
        "/?status=203&delay=25ms",
    ]);
    assert_eq!(out.status_count("203"), 40);
    // One connection per client and host. Each answer takes 25 ms, so the 40 requests last about half a second
    // and both clients take part even when one starts late on a busy machine (without a delay, one client could
    // send all 40 before the other began, opening 2 connections).
    assert_eq!(out.step()["connections"]["opened"], 4);
}

#[test]
fn a_json_pattern_file_is_drawn_by_frequency_with_a_repeatable_seed() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("patterns.json");
    std::fs::write(
        &file,
        r#"{"often": {"frequency": 0.8, "patterns": ["/?status=200"]},
            "rarely": {"frequency": 0.2, "method": "POST", "patterns": [{"path": "/?status=201", "body": "x"}]}}"#,
    )
    .unwrap();
    let url = format!("http://{}", t.addr());
    let run = || {
        hakaru(&[
            "run",
            "-q",
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "1000",
            "--seed",
            "7",
            "--patterns",
            file.to_str().unwrap(),
            &url,
        ])
    };
    let (a, b) = (run(), run());
    let rare = a.status_count("201");
    assert!((150..=250).contains(&rare), "201 count {rare} for a 20 % group");
    assert_eq!(a.status_count("200") + rare, 1000);
    assert_eq!(rare, b.status_count("201"), "the same seed draws the same requests");
}

#[test]
fn a_plain_text_pattern_file_with_cache_keys_shows_the_cache_effect() {
    let t = target_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        cache_size: 100,
        miss_cost: std::time::Duration::from_millis(2),
        ..ServeOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.txt");
    let keys: String = (0..200).map(|k| format!("/cache?key=k{k}\n")).collect();
    std::fs::write(&file, keys).unwrap();
    let url = format!("http://{}", t.addr());
    let out =
        hakaru(&["run", "-q", "-c", "4", "-n", "4000", "--seed", "1", "--patterns", file.to_str().unwrap(), &url]);
    assert_eq!(out.status_count("200"), 4000);
    let rate = target_status(t.addr())["cache_hit_rate"].as_f64().unwrap();
    assert!((0.40..0.60).contains(&rate), "200 keys drawn uniformly into an LRU of 100: hit rate {rate}");
}

#[test]
fn post_bodies_and_headers_are_sent() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "-c", "1", "-n", "10", "-m", "post", "-H", "X-Test: 1", "-b", "hello", &url]);
    assert_eq!(out.status_count("200"), 10);
    let out_bytes = out.step()["throughput"]["bytes_out"].as_u64().unwrap();
    assert!(out_bytes > 10 * (5 + "Content-Length: 5".len() as u64 + "X-Test: 1".len() as u64));
}

#[test]
fn the_text_summary_has_rate_percentiles_histogram_and_statuses() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "200", &url]);
    for needle in ["throughput", "req/s", "p50", "p99.99", "histogram", "200: 200", "errors       none", "2 of 2 open"]
    {
        assert!(out.stdout.contains(needle), "missing {needle:?} in\n{}", out.stdout);
    }
    assert!(out.stderr.is_empty(), "stderr is quiet when not a terminal: {}", out.stderr);
}

#[test]
fn the_csv_has_loadtests_columns_and_one_row() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    let url = format!("http://{}/?delay=2ms", t.addr());
    let out = hakaru(&["run", "-q", "-c", "2", "-n", "50", "--csv", csv.to_str().unwrap(), &url]);
    assert_eq!(out.code, 0);
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("maxRequests,concurrency,rps,meanLatencyMs,maxLatencyMs,minLatencyMs,p50LatencyMs")
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&row[..2], ["50", "2"]);
    let mean_ms: f64 = row[3].parse().unwrap();
    assert!((2.0..10.0).contains(&mean_ms), "mean {mean_ms} ms");
    assert!(lines.next().is_none());
}

#[test]
fn the_demo_runs_a_benchmark_with_nothing_else_installed() {
    // A sweep over a target of known capacity (4 workers x 20 ms): the analysis finds the plateau from 4 clients,
    // and the bottleneck elsewhere than CPU (the worker pool), not hakaru. The demo's own 3 s steps, not 1 s: on a
    // busy machine a stall of some 50 ms in a 1 s step at 4 clients cost a fifth of it (156 of 200 req/s).
    let out = hakaru(&["demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("built-in target"), "{}", out.stdout);
    assert!(out.stdout.contains("levels off at"), "{}", out.stdout);
    // From 4 clients on a quiet machine; on a busy one each request's turnaround at exactly 4 clients (a late
    // wake-up of the client, then of the worker) can cost 5 ms of 20 (seen: 154 req/s at 4, 183 at 8), and the
    // plateau is honestly found at 8. Never at 16 or not at all: that is what a broken sweep would show.
    assert!(out.stdout.contains("from 4 clients") || out.stdout.contains("from 8 clients"), "{}", out.stdout);
    // On a machine whose cores other programs keep full, that is said instead: the pool may not be all of it.
    let elsewhere = out.stdout.contains("the limit is elsewhere");
    assert!(elsewhere || out.stdout.contains("the machine was busy with other work"), "{}", out.stdout);
    if !elsewhere {
        let why = "the machine was busy with other work: the limit not checked to be elsewhere than CPU";
        common::unchecked("the_demo_runs_a_benchmark_with_nothing_else_installed", why);
    }
    assert!(!out.stdout.contains("hakaru itself was at"), "{}", out.stdout);
}

#[test]
fn ctrl_c_stops_the_load_and_keeps_what_was_measured() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://{}/?delay=5ms", t.addr());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "-c", "2", "-d", "30s", "--json", json.to_str().unwrap(), &url])
        .env("HAKARU_DB", dir.path().join("history.db"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once more than 50 requests were answered, however long hakaru took to start on a busy machine.
    common::wait_served(t.addr(), 60, std::time::Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    let requests = doc["steps"][0]["requests"].as_u64().unwrap();
    assert!(requests > 50, "requests measured before Ctrl-C: {requests}");
    // Stopped well before the 30 s asked (the bound leaves room for a slow start on a busy machine).
    assert!(doc["steps"][0]["duration_s"].as_f64().unwrap() < 25.0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped by Ctrl-C (SIGINT)"));
}

#[test]
fn run_reports_the_watched_servers_cpu_and_probes_in_the_summary() {
    let t = target();
    let url = format!("http://{}/cache?key=a", t.addr());
    let probe = format!("http://{}/status#/1/n_queries", t.addr());
    // The built-in target runs inside this test process: watch it.
    let pid = std::process::id().to_string();
    let out = hakaru(&["run", "-q", "-c", "2", "-d", "1500ms", "--monitor-pid", &pid, "--probe", &probe, &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let server = &out.step()["server"];
    assert_eq!(server["pids"][0].as_u64().unwrap().to_string(), pid);
    assert!(server["cpu_percent_mean"].as_f64().unwrap() > 1.0, "{server}");
    assert!(out.stdout.contains("  server       "), "{}", out.stdout);
    assert!(out.stdout.contains("  hakaru       "), "{}", out.stdout);
    let requests = out.step()["requests"].as_f64().unwrap();
    let delta = out.step()["probes"][0]["delta"].as_f64().unwrap();
    assert!(delta >= requests, "n_queries grew by {delta} for {requests} requests");
    assert!(out.stdout.contains("probe        n_queries: "), "{}", out.stdout);
}

#[test]
fn a_request_count_keeps_every_client_busy_when_clients_do_not_divide_among_threads() {
    let t = target();
    let url = format!("http://{}/?delay=100ms", t.addr());
    // 3 clients on 2 threads: a share of requests per thread (30 each) would leave one client working alone at the
    // end, 3 s in all (20 req/s) instead of 2 s (30 req/s). 100 ms answers, not 10: a busy machine's late wake-ups
    // are then a small share of each (at 10 ms they cost a fifth).
    let out = hakaru(&["run", "-q", "-c", "3", "-t", "2", "-n", "60", &url]);
    assert_eq!(out.step()["requests"], 60);
    let rps = out.step()["throughput"]["requests_per_s"].as_f64().unwrap();
    assert!(rps > 25.0, "3 clients at 100 ms each give about 30 req/s, got {rps}");
}

#[test]
fn a_reader_that_goes_away_does_not_turn_the_run_into_a_panic() {
    // `hakaru run ... | head -1`: stdout closes before the summary is printed; the run still ends cleanly and
    // writes its files.
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://{}/", t.addr());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "-n", "500", "--json", json.to_str().unwrap(), &url])
        .env("HAKARU_DB", dir.path().join("history.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(std::fs::read_to_string(&json).unwrap().contains("\"requests\": 500"));
}
