//! The step over time: `--window`, what each window holds, and `--hdr-log` read back by an HdrHistogram
//! implementation that is not hakaru's (the `hdrhistogram` package from PyPI, which scripts/test.sh installs).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{hakaru, target};

/// The log read by `tests/fixtures/read_hlog.py`: per tag, its rows' counts and the rows added up.
fn read_with_hdrh(log: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/read_hlog.py");
    let out = Command::new("python3").arg(script).arg(log).output().expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'hdrh'"),
        "the PyPI package hdrhistogram is missing: scripts/test.sh installs it (pip install hdrhistogram)"
    );
    assert!(out.status.success(), "read_hlog.py failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_hdr_log_read_by_hdrh_agrees_with_the_result_document() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.hlog");
    let out =
        hakaru(&["run", "-q", "--rate", "400", "-c", "4", "-d", "2500ms", "--hdr-log", log.to_str().unwrap(), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("#[StartTime: ") && text.contains("#[BaseTime: "), "{text}");
    assert!(text.contains("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\""), "{text}");
    let read = read_with_hdrh(&log);
    let step = out.step();
    for (tag, figures) in [("corrected", &step["latency"]), ("service", &step["service"])] {
        let got = &read[tag];
        assert_eq!(got["count"], figures["count"], "{tag}: {got} vs {figures}");
        for p in ["p50", "p99"] {
            // Both histograms have 3 digits over the same range, so their counts are the same; the libraries round
            // a percentile's rank apart, so hdrh's values one sample below and above must hold hakaru's.
            let (lo, hi) = (got[p][0].as_u64().unwrap(), got[p][1].as_u64().unwrap());
            let ours = figures["percentiles"][p].as_u64().unwrap();
            assert!((lo..=hi).contains(&ours), "{tag} {p}: {got} vs {figures}");
        }
        assert_eq!(got["max"], figures["max"], "{tag}: {got} vs {figures}");
    }
    // A row per window and tag, each holding what the document's window counts (all answers are successes).
    let rows: Vec<u64> = read["corrected"]["rows"].as_array().unwrap().iter().map(|r| r.as_u64().unwrap()).collect();
    let windows: Vec<u64> =
        step["windows"].as_array().unwrap().iter().map(|w| w["requests"].as_u64().unwrap()).collect();
    assert_eq!(rows, windows);
}

#[test]
fn windows_carry_the_sent_rate_connections_p90_and_cpu_at_the_width_asked() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru(&["run", "-q", "--rate", "300", "-c", "3", "-d", "2s", "--window", "250ms", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step = out.step();
    assert_eq!(step["window_s"], 0.25);
    let windows = step["windows"].as_array().unwrap();
    // No window begins at the step's end, even when a thread sees that end late.
    assert_eq!(windows.len(), 8, "2 s in 250 ms windows: {windows:?}");
    assert_eq!(windows[1]["t"], 0.25);
    let sent: u64 = windows.iter().map(|w| w["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, step["requests"].as_u64().unwrap() + step["unfinished"].as_u64().unwrap());
    // The pacer sends 75 per window, whatever the server does (the step, its windows with it, begins once the
    // connections are made); a send a busy machine delays past a boundary counts in the next window, and the last
    // may lose a few the step's end caught unsent.
    for w in &windows[1..windows.len() - 1] {
        let n = w["sent"].as_u64().unwrap();
        assert!((70..=80).contains(&n), "sent {n} in {w}");
        assert!(w["open_connections"].as_u64().unwrap() >= 1, "{w}");
        assert!(w["p90_us"].as_u64().unwrap() <= w["p99_us"].as_u64().unwrap(), "{w}");
        assert!(w["cpu_percent"].as_f64().is_some(), "{w}");
    }
}

#[test]
fn a_window_below_100ms_is_refused_naming_the_flag() {
    let out = hakaru(&["run", "--window", "50ms", "-d", "1s", "http://127.0.0.1:9/"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--window '50ms'") && out.stderr.contains("100ms"), "{}", out.stderr);
}

#[test]
fn a_one_second_freeze_of_the_server_is_named_as_a_stall_and_the_worst_window() {
    let served = common::Served::start();
    let (addr, pid) = (served.socket_addr(), served.pid());
    let url = format!("http://{addr}/");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("freeze.hlog");
    // Once 200 requests are answered (about 1 s into the 6 s run, waited for, not timed), the server is stopped
    // for 1 s: at 250 ms windows, three whole windows at least fall inside the freeze.
    let freezer = std::thread::spawn(move || {
        common::wait_served(addr, 200, std::time::Duration::from_secs(30));
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(std::time::Duration::from_secs(1));
        unsafe { libc::kill(pid, libc::SIGCONT) };
    });
    let args = ["run", "--rate", "200", "-c", "20", "-d", "6s", "--window", "250ms", "--hdr-log"];
    let out = hakaru(&[&args[..], &[log.to_str().unwrap(), &url]].concat());
    freezer.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warnings: Vec<&str> = out.doc()["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    let stall = warnings.iter().find(|w| w.contains("stalled from")).unwrap_or_else(|| panic!("{warnings:?}"));
    // "the step stalled from 1.25 s to 2.00 s: ..." lasts most of the second the server was stopped.
    let times: Vec<f64> = stall.split(' ').filter_map(|w| w.parse().ok()).collect();
    assert!(times.len() >= 2 && (0.5..=1.5).contains(&(times[1] - times[0])), "{stall}");
    assert!(out.stdout.contains(stall), "the summary names the stall: {}", out.stdout);
    // The worst window is the one the freeze's backlog was answered in, its p99 near the freeze.
    let worst = out.stdout.lines().find(|l| l.contains("worst window at")).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(worst.contains("ms, sent") || worst.contains("s, sent"), "{worst}");
    let p99_worst = out.step()["windows"].as_array().unwrap().iter().map(|w| w["p99_us"].as_u64().unwrap()).max();
    assert!(p99_worst.unwrap() >= 500_000, "{worst}");
    // The HDR log holds every success of the document, freeze included.
    assert_eq!(read_with_hdrh(&log)["corrected"]["count"], out.step()["latency"]["count"]);
}

/// The windows of a one-step document that a chart over time draws p99 for: whole (at least half the window's
/// length before the step's end) and with at least one answer.
fn drawable_windows(json: &std::path::Path) -> usize {
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    let (duration, width) = (step["duration_s"].as_f64().unwrap(), step["window_s"].as_f64().unwrap());
    let windows = step["windows"].as_array().unwrap();
    windows
        .iter()
        .filter(|w| (duration - w["t"].as_f64().unwrap()).min(width) >= width / 2.0)
        .filter(|w| w["requests"].as_u64().unwrap() > w["errors"].as_u64().unwrap())
        .count()
}

#[test]
fn chart_over_time_draws_the_windows_and_the_first_bytes_and_refuses_a_mean() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let json_s = json.to_str().unwrap();
    let out = hakaru(&["run", "-q", "--rate", "200", "-d", "2s", "--window", "250ms", "--json", json_s, &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for (metric, ext) in [("p99", "svg"), ("qps", "png")] {
        let image = dir.path().join(format!("over.{ext}"));
        let image_s = image.to_str().unwrap();
        let o = hakaru(&["chart", "--over-time", "--metric", metric, "-o", image_s, json_s]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let bytes = std::fs::read(&image).unwrap();
        if ext == "svg" {
            let svg = String::from_utf8(bytes).unwrap();
            // The axis, ticks and legend are polylines too: the series' line is the report's first colour, 2 wide,
            // with a point per whole window that got answers (8 in 2 s at 250 ms on a quiet machine; a busy one
            // may leave a window empty, or cut the last one short): as many as the document holds, not a guess.
            let series = svg.lines().filter(|l| {
                l.starts_with("<polyline") && l.to_uppercase().contains("#1F77B4") && l.contains("stroke-width=\"2\"")
            });
            let points: Vec<usize> = series.map(|l| l.matches(',').count()).collect();
            let drawn = drawable_windows(&json);
            assert!(drawn >= 1, "no window with answers in the run: {}", out.stdout);
            assert!(svg.contains("seconds from the start") && points == [drawn], "{drawn} windows: {svg}");
        } else {
            assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
        }
    }
    // Each window's p99 of the time to first byte (the run read no events): a line of the windows that had it.
    let svg = dir.path().join("ttft.svg");
    let o = hakaru(&["chart", "--over-time", "--metric", "ttft", "-o", svg.to_str().unwrap(), json_s]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("time to first byte, p99 (ms)") && svg.contains("seconds from the start"), "{svg}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    let (duration, width) = (step["duration_s"].as_f64().unwrap(), step["window_s"].as_f64().unwrap());
    // Whole windows (at least half their length before the step's end) that timed a first byte.
    let whole = |w: &&serde_json::Value| (duration - w["t"].as_f64().unwrap()).min(width) >= width / 2.0;
    let with_ttfb =
        step["windows"].as_array().unwrap().iter().filter(whole).filter(|w| w["ttfb_p99_us"].is_u64()).count();
    let series = svg.lines().filter(|l| {
        l.starts_with("<polyline") && l.to_uppercase().contains("#1F77B4") && l.contains("stroke-width=\"2\"")
    });
    let points: Vec<usize> = series.map(|l| l.matches(',').count()).collect();
    assert!(with_ttfb >= 1 && points == [with_ttfb], "{with_ttfb} windows with a first byte: {points:?}");
    let svg = dir.path().join("mean.svg");
    let o = hakaru(&["chart", "--over-time", "--metric", "mean", "-o", svg.to_str().unwrap(), json_s]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("qps, p99, ttft and connections") && o.stderr.lines().count() == 1, "{}", o.stderr);
}

/// The windows of each step of `doc` and what hdrh read under each step's tags agree: a row per window, each
/// holding the window's answers, and per step the count and maximum of its latency.
fn steps_agree_with_their_tags(doc: &serde_json::Value, read: &serde_json::Value, labels: &[&str], window: f64) {
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), labels.len(), "{doc}");
    for (step, label) in steps.iter().zip(labels) {
        assert_eq!(step["window_s"], window, "{label}");
        for (tag, figures) in [("corrected", &step["latency"]), ("service", &step["service"])] {
            let got = &read[format!("{label}.{tag}")];
            assert_eq!(got["count"], figures["count"], "{label}.{tag}: {got} vs {figures}");
            assert_eq!(got["max"], figures["max"], "{label}.{tag}: {got} vs {figures}");
        }
        let rows: Vec<u64> = read[format!("{label}.corrected")]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap())
            .collect();
        let windows: Vec<u64> =
            step["windows"].as_array().unwrap().iter().map(|w| w["requests"].as_u64().unwrap()).collect();
        assert_eq!(rows, windows, "{label}");
    }
    // Nothing under another tag: every row belongs to a step.
    assert_eq!(read.as_object().unwrap().len(), labels.len() * 2, "{read}");
}

#[test]
fn a_sweep_writes_every_step_into_one_hdr_log_tagged_by_step_at_the_window_asked() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let (log, json) = (dir.path().join("sweep.hlog"), dir.path().join("sweep.json"));
    let (log_s, json_s) = (log.to_str().unwrap(), json.to_str().unwrap());
    let args = ["sweep", "-q", "--rates", "200,400", "-c", "4", "-d", "1500ms", "--interval", "0s", "--window"];
    let out = hakaru(&[&args[..], &["500ms", "--hdr-log", log_s, "--json", json_s, &url]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("#[Step: rate=200]") && text.contains("#[Step: rate=400]"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    steps_agree_with_their_tags(&doc, &read_with_hdrh(&log), &["rate=200", "rate=400"], 0.5);
}

#[test]
fn a_capacity_search_writes_its_steps_into_one_hdr_log_tagged_by_step() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let dir = tempfile::tempdir().unwrap();
    let (log, json) = (dir.path().join("capacity.hlog"), dir.path().join("capacity.json"));
    let (log_s, json_s) = (log.to_str().unwrap(), json.to_str().unwrap());
    let args = ["capacity", "-q", "--slo", "p99<1s", "--rate-start", "50", "--rate-max", "100", "-d", "1s"];
    let more = ["--interval", "0s", "--window", "250ms", "--hdr-log", log_s, "--json", json_s, &url];
    let out = hakaru(&[&args[..], &more[..]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Doubling from 50/s meets the objective at the most it may ask, 100/s: two steps.
    steps_agree_with_their_tags(&doc, &read_with_hdrh(&log), &["rate=50", "rate=100"], 0.25);
}
