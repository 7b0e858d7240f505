//! The step over time: `--window`, what each window holds, and `--hdr-log` read back by an HdrHistogram
//! implementation that is not hakaru's (the `hdrhistogram` package from PyPI, which scripts/test.sh installs).

mod common;

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
            // Both histograms have 3 digits over the same range: the percentiles are the same value.
            assert_eq!(got[p], figures["percentiles"][p], "{tag} {p}: {got} vs {figures}");
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
    assert!((8..=9).contains(&windows.len()), "2 s in 250 ms windows: {}", windows.len());
    assert_eq!(windows[1]["t"], 0.25);
    let sent: u64 = windows.iter().map(|w| w["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, step["requests"].as_u64().unwrap() + step["unfinished"].as_u64().unwrap());
    // The pacer sends 75 per window, whatever the server does.
    for w in &windows[..windows.len() - 1] {
        let n = w["sent"].as_u64().unwrap();
        assert!((73..=77).contains(&n), "sent {n} in {w}");
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
