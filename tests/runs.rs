//! `--runs N`: the same load N times back to back against the built-in target, one step per run, the spread
//! and 95 % interval of throughput and p99, percentiles from the runs' histograms merged; Ctrl-C in run 3 keeps
//! runs 1 and 2 and marks run 3.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use hakaru::metrics::LatencyHistogram;
use serde_json::Value;

fn read(path: &Path) -> Option<Value> {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok())
}

#[test]
fn three_runs_give_a_step_each_and_a_summary_from_merged_histograms() {
    let target = common::target();
    let url = format!("http://{}/?delay=2ms", target.addr());
    let out = common::hakaru(&["run", "-q", "-c", "2", "-n", "60", "--runs", "3", "--run-interval", "50ms", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = out.doc();
    let steps = doc["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["run 1", "run 2", "run 3"]);
    let runs = &doc["runs"];
    assert_eq!((runs["planned"].as_u64(), runs["completed"].as_u64()), (Some(3), Some(3)));
    assert!(runs["partial_run"].is_null());
    assert_eq!(runs["requests"].as_u64(), Some(180));
    // The spread is of the runs' own figures.
    let qps: Vec<f64> = steps.iter().map(|s| s["throughput"]["ok_per_s"].as_f64().unwrap()).collect();
    assert_eq!(runs["ok_per_s"]["values"].as_array().unwrap().len(), 3);
    let mean = qps.iter().sum::<f64>() / 3.0;
    assert!((runs["ok_per_s"]["mean"].as_f64().unwrap() - mean).abs() < 1e-6);
    let ci = runs["ok_per_s"]["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= mean && mean <= ci[1].as_f64().unwrap());
    // The aggregate percentiles are those of the histograms added together, not averaged percentiles.
    let mut merged = LatencyHistogram::new();
    for s in steps {
        merged.merge(&LatencyHistogram::from_base64(s["histogram"]["data"].as_str().unwrap()).unwrap());
    }
    assert_eq!(runs["latency"]["count"].as_u64(), Some(merged.count()));
    assert_eq!(runs["latency"]["percentiles"]["p99"].as_u64(), Some(merged.percentile(99.0)));
    assert_eq!(runs["latency"]["percentiles"]["p50"].as_u64(), Some(merged.percentile(50.0)));
    let errors = common::schema_errors(doc);
    assert!(errors.is_empty(), "{errors:?}");
    // The text: one row per run, then the spread and interval.
    for needle in ["run 1", "run 2", "run 3", "over 3 of 3 runs", "95 % interval of the mean", "latency (merged)"] {
        assert!(out.stdout.contains(needle), "no '{needle}' in:\n{}", out.stdout);
    }
}

#[test]
fn ctrl_c_during_run_3_keeps_runs_1_and_2_on_disk_and_marks_run_3() {
    let target = common::target();
    let url = format!("http://{}/?delay=1ms", target.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("runs.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["run", "-q", "-c", "2", "-d", "1s", "--runs", "5", "--run-interval", "100ms", "--json"])
        .arg(&json)
        .arg(&url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The file is rewritten after every run: wait until it holds two, then stop the third in its middle.
    let start = Instant::now();
    while read(&json).is_none_or(|d| d["steps"].as_array().unwrap().len() < 2) {
        assert!(start.elapsed() < Duration::from_secs(30), "two runs never reached the file");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Run 3 is under way once the target has answered more requests than runs 1 and 2 counted (plus the at most
    // 2 in flight when run 2 ended): the signal then stops it in its middle, however slow the machine.
    let done =
        read(&json).unwrap()["steps"].as_array().unwrap().iter().map(|s| s["requests"].as_u64().unwrap()).sum::<u64>();
    common::wait_served(target.addr(), done + 2 + 20, Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let doc = read(&json).unwrap();
    assert_eq!(doc["interrupted"], true);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "runs 1, 2 and the partial 3");
    assert_eq!(doc["runs"]["completed"].as_u64(), Some(2));
    assert_eq!(doc["runs"]["partial_run"].as_u64(), Some(3));
    let whole: u64 = steps[..2].iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(doc["runs"]["requests"].as_u64(), Some(whole), "the partial run is not in the figures");
    assert!(steps[2]["requests"].as_u64().unwrap() > 0, "run 3 measured something before the signal");
}

#[test]
fn runs_out_of_range_are_refused_in_one_line() {
    for bad in ["0", "1001"] {
        let out = common::hakaru(&["run", "--runs", bad, "http://127.0.0.1:9/"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(&format!("--runs {bad}")) && out.stderr.contains("--runs 5"), "{}", out.stderr);
    }
    let out = common::hakaru(&["run", "--runs", "2", "--run-interval", "soon", "http://127.0.0.1:9/"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--run-interval 'soon'"), "{}", out.stderr);
}
