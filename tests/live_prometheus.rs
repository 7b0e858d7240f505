//! `--prometheus-rw`: a run pushes to a real Prometheus (Debian's package, with its remote-write receiver) started
//! on a loopback port, and PromQL over Prometheus's HTTP API finds the result document's figures: requests, statuses,
//! errors by kind, and a p99 from the pushed histogram in the bucket of hakaru's own p99.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{free_port, hakaru, target, wait_for};

/// A Prometheus on a free loopback port with an empty storage directory of its own, killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start() -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        // No scrape jobs: the only series are the pushed ones.
        std::fs::write(&config, "global:\n  scrape_interval: 1h\n").unwrap();
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (scripts/test.sh installs Debian's package)");
        let p = Prometheus { child, addr, _dir: dir };
        // Ready when its readiness endpoint says so (the storage is open), not when the port first accepts.
        wait_for(Duration::from_secs(60), || get(addr, "/-/ready").is_some_and(|(status, _)| status == 200));
        p
    }

    /// An instant PromQL query: each result's labels and value.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let (status, body) = get(self.addr, &format!("/api/v1/query?query={}", encode(promql))).expect("an answer");
        assert_eq!(status, 200, "{promql}: {body}");
        let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
        doc["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["metric"].clone(), r["value"][1].as_str().unwrap().parse::<f64>().unwrap()))
            .collect()
    }

    fn value(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        assert!(r.len() <= 1, "{promql}: {r:?}");
        r.first().map(|(_, v)| *v)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.0 GET (no chunked answer), or None when nothing answers yet.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Percent-encoding of a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn prometheus_finds_the_documents_counts_and_a_p99_in_the_bucket_of_hakarus() {
    let prom = Prometheus::start();
    let t = target();
    let base = format!("http://{}", t.addr());
    let urls = [format!("{base}/?delay=1ms"), format!("{base}/?status=503"), format!("{base}/?fault=reset")];
    let push = format!("http://{}/api/v1/write", prom.addr);
    let mut args = vec!["run"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "-n",
        "600",
        "-c",
        "3",
        "--rate",
        "200",
        "--prometheus-rw",
        &push,
        "--prometheus-interval",
        "1s",
        "--label",
        "suite=live",
    ]);
    let out = hakaru(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("push"), "no push failed: {}", out.stderr);
    let doc = out.doc();
    let step = out.step();
    let run_id = doc["settings"]["labels"]["run_id"].as_str().expect("the document names the run's id");
    let sel = format!("run_id=\"{run_id}\",phase=\"measure\",suite=\"live\",step=\"run\"");

    // The last push (at the step's end) is the document's step: wait until Prometheus has ingested it.
    let requests = step["requests"].as_u64().unwrap();
    let completed = format!("hakaru_requests_completed_total{{{sel}}}");
    wait_for(Duration::from_secs(30), || prom.value(&completed) == Some(requests as f64));
    assert_eq!(prom.value(&format!("hakaru_requests_failed_total{{{sel}}}")), step["failed"].as_f64());

    // Statuses and errors by kind, each as the document counts them.
    for (status, n) in step["status"].as_object().unwrap() {
        if status != "0" {
            let q = format!("hakaru_responses_total{{{sel},status=\"{status}\"}}");
            assert_eq!(prom.value(&q), n.as_f64(), "{q}");
        }
    }
    let kinds = step["error_kinds"].as_array().unwrap();
    assert!(!kinds.is_empty(), "the reset URL fails: {step}");
    for e in kinds {
        let q = format!("hakaru_errors_total{{{sel},kind=\"{}\"}}", e["kind"].as_str().unwrap());
        assert_eq!(prom.value(&q), e["count"].as_f64(), "{q}");
    }
    let answered: f64 = prom.query(&format!("hakaru_responses_total{{{sel}}}")).iter().map(|(_, v)| v).sum();
    let errors: f64 = prom.query(&format!("hakaru_errors_total{{{sel}}}")).iter().map(|(_, v)| v).sum();
    assert_eq!(answered + errors, requests as f64);

    // The successes' histogram: its count, and a p99 within the bucket that holds hakaru's p99.
    let ok = step["latency"]["count"].as_f64().unwrap();
    assert_eq!(prom.value(&format!("hakaru_latency_seconds_count{{{sel}}}")), Some(ok));
    let p99_us = step["latency"]["percentiles"]["p99"].as_u64().unwrap();
    let q = prom
        .value(&format!("histogram_quantile(0.99, hakaru_latency_seconds_bucket{{{sel}}})"))
        .expect("a quantile from the pushed buckets");
    let bounds = hakaru::live::prometheus::BUCKETS_US;
    let upper = bounds.iter().copied().find(|b| *b >= p99_us).unwrap_or(u64::MAX);
    let lower = bounds.iter().copied().rev().find(|b| *b < p99_us).unwrap_or(0);
    let q_us = q * 1e6;
    assert!(
        lower as f64 <= q_us + 1e-6 && q_us <= upper as f64 + 1e-6,
        "PromQL's p99 {q_us} us is outside hakaru's p99 bucket ({lower}, {upper}] of {p99_us} us"
    );

    // Every query of the Grafana dashboard in examples/ finds these series.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/grafana-hakaru-live.json")).unwrap(),
    )
    .unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap().replace("$run_id", run_id).replace("$__rate_interval", "1m");
            assert!(!prom.query(&expr).is_empty(), "the dashboard's '{}' finds nothing: {expr}", panel["title"]);
        }
    }

    // The series carry the target as the document shows it, and never a secret.
    let labels = &prom.query(&completed)[0].0;
    assert_eq!(
        labels["target"].as_str().unwrap(),
        doc["settings"]["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    );
}

#[test]
fn a_dead_endpoint_is_counted_and_warned_about_and_the_load_goes_on() {
    let t = target();
    // A port nothing listens on: every push fails, the run does not.
    let dead = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&[
        "run",
        &url,
        "-n",
        "300",
        "-c",
        "2",
        "--rate",
        "200",
        "--prometheus-rw",
        &dead,
        "--prometheus-interval",
        "1s",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["requests"].as_u64(), Some(300));
    assert!(out.stderr.contains("pushes to") && out.stderr.contains("the load went on"), "{}", out.stderr);
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("pushes to") && warnings.contains("failed"), "{warnings}");
}

#[test]
fn a_stalled_endpoint_holds_the_end_of_the_load_at_most_one_push_interval() {
    // Found by a hostile trial: a receiver that accepts and never answers stretched a 3 s run to 21.5 s (each
    // push's three tries waited their whole timeout, and the end waited for every push queued).
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let rw = format!("http://{}/api/v1/write", stalled.local_addr().unwrap());
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&held);
    // Accepts, reads nothing, answers nothing; the connections are held until the test ends.
    std::thread::spawn(move || {
        for conn in stalled.incoming().flatten() {
            keep.lock().unwrap().push(conn);
        }
    });
    let t = target();
    let url = format!("http://{}/", t.addr());
    let started = std::time::Instant::now();
    let out =
        hakaru(&["run", &url, "-q", "-d", "3s", "-c", "2", "--prometheus-rw", &rw, "--prometheus-interval", "1s"]);
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    common::wait_for(std::time::Duration::from_secs(10), || !held.lock().unwrap().is_empty());
    // 3 s of load and at most 1 s for the pushes; the rest is margin for a busy machine (without the bound: 21 s).
    assert!(took < std::time::Duration::from_secs(12), "{took:?}");
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("not waited for") || warnings.contains("failed"), "{warnings}");
}

#[test]
fn a_bad_endpoint_is_refused_before_the_load() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", &url, "-n", "10", "--prometheus-rw", "https://127.0.0.1:9/api/v1/write"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--prometheus-rw") && out.stderr.contains("http://"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn a_studys_cases_push_with_the_studys_labels() {
    let prom = Prometheus::start();
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let text = format!(
        "name = \"pushed\"\n[[target]]\nname = \"builtin\"\nurl = \"http://{}/\"\n[load]\nconnections = 2\nrequests = 300\nrepeat = 2\npause = \"0s\"\n",
        t.addr()
    );
    std::fs::write(&file, text).unwrap();
    let out_dir = dir.path().join("out");
    let push = format!("http://{}/api/v1/write", prom.addr);
    let out = hakaru(&[
        "study",
        file.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--prometheus-rw",
        &push,
        "--prometheus-interval",
        "1s",
    ]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Each repetition is a run of its own: two run ids, each with the case's 300 requests, labelled by the study.
    let q = "hakaru_requests_completed_total{study=\"pushed\",label_target=\"builtin\",phase=\"measure\"}";
    wait_for(Duration::from_secs(30), || {
        let r = prom.query(q);
        r.len() == 2 && r.iter().all(|(_, v)| *v == 300.0)
    });
}

#[test]
fn an_llm_run_pushes_its_time_to_first_token_and_output_tokens_as_its_document_counts_them() {
    let prom = Prometheus::start();
    let t = target();
    let url = format!("http://{}/v1/chat/completions?first=5ms&gap=1ms", t.addr());
    let push = format!("http://{}/api/v1/write", prom.addr);
    let args = ["llm", "--model", "m", "--num-prompts", "40", "-c", "4", "--random-output-len", "8"];
    let out = hakaru(&[&args[..], &["--prometheus-rw", &push, "--prometheus-interval", "1s", &url]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (doc, events) = (out.doc(), &out.step()["events"]);
    let run_id = doc["settings"]["labels"]["run_id"].as_str().unwrap();
    let sel = format!("run_id=\"{run_id}\",phase=\"measure\"");
    // The last push is the document's step: its output tokens (8 an answer) and its first tokens' count.
    let tokens = events["tokens"]["tokens"].as_f64().unwrap();
    assert_eq!(tokens, 320.0, "{events}");
    let total = format!("hakaru_output_tokens_total{{{sel}}}");
    wait_for(Duration::from_secs(30), || prom.value(&total) == Some(tokens));
    let firsts = events["first_event"]["count"].as_f64();
    assert_eq!(prom.value(&format!("hakaru_time_to_first_token_seconds_count{{{sel}}}")), firsts);
    let p50 = prom.value(&format!("histogram_quantile(0.5, hakaru_time_to_first_token_seconds_bucket{{{sel}}})"));
    // The first token comes 5 ms after the request: the median is in a bucket at or above it.
    assert!(p50.is_some_and(|s| s >= 0.005), "{p50:?}");
}
