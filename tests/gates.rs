//! `--threshold` gates against the built-in target: each listed with pass or fail and the value measured in the
//! text, the JSON and the CSV; a broken one exits with 99 after every file is written; bad text exits 2 in one
//! line before any load.

use crate::common;

#[test]
fn thresholds_that_hold_exit_0_and_are_listed_with_their_values() {
    let target = common::target();
    let url = format!("http://{}/?delay=1ms", target.addr());
    let out = common::hakaru(&[
        "run",
        "-q",
        "-c",
        "2",
        "-n",
        "100",
        "--threshold",
        "p99<5s",
        "--threshold",
        "errors<1%",
        "--threshold",
        "qps>=1",
        "--threshold",
        "mean<=5s",
        &url,
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let gates = out.doc()["thresholds"].as_array().unwrap();
    assert_eq!(gates.len(), 4);
    assert!(gates.iter().all(|g| g["pass"] == true && g["judged_on"] == "the run"), "{gates:?}");
    assert_eq!(gates[1]["measured"].as_f64(), Some(0.0));
    assert!(gates[0]["measured"].as_f64().unwrap() >= 1000.0, "p99 of a 1 ms delay, in microseconds");
    assert!(out.stdout.contains("thresholds (judged on the run)"), "{}", out.stdout);
    assert!(out.stdout.contains("✓ pass  p99<5s"), "{}", out.stdout);
}

#[test]
fn a_broken_threshold_exits_99_after_writing_every_file() {
    let target = common::target();
    let url = format!("http://{}/?delay=2ms", target.addr());
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let out = common::hakaru(&[
        "run",
        "-q",
        "-c",
        "1",
        "-n",
        "20",
        "--threshold",
        "p50<1us",
        "--threshold",
        "qps>1000000",
        "--threshold",
        "errors<1%",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(out.code, 99, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let pass: Vec<bool> = doc["thresholds"].as_array().unwrap().iter().map(|g| g["pass"] == true).collect();
    assert_eq!(pass, [false, false, true]);
    let errors = common::schema_errors(&doc);
    assert!(errors.is_empty(), "{errors:?}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with("threshold:errors<1%,threshold:errors<1%:measured"), "{}", lines[0]);
    assert!(lines[1].contains(",fail,") && lines[1].ends_with(",pass,0.000"), "{}", lines[1]);
    assert!(out.stdout.contains("✗ FAIL  p50<1us"), "{}", out.stdout);
    assert!(out.stdout.contains("✓ pass  errors<1%"), "{}", out.stdout);
}

#[test]
fn a_sweep_is_judged_on_every_step_merged() {
    let target = common::target();
    let url = format!("http://{}/?delay=1ms", target.addr());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let csv = dir.path().join("s.csv");
    let gates = [
        "--threshold",
        "p99<10s",
        "--threshold",
        "max<1us",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ];
    let out = common::quick_sweep(&url, &gates);
    assert_eq!(out.code, 99, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let gates = doc["thresholds"].as_array().unwrap();
    assert_eq!(gates[0]["judged_on"], "all 2 steps merged");
    assert_eq!((gates[0]["pass"].as_bool(), gates[1]["pass"].as_bool()), (Some(true), Some(false)));
    // The merged maximum is the larger of the steps' maxima.
    let most =
        doc["steps"].as_array().unwrap().iter().map(|s| s["latency"]["max"].as_f64().unwrap()).fold(0.0, f64::max);
    assert_eq!(gates[1]["measured"].as_f64(), Some(most));
    assert!(out.stdout.contains("thresholds (judged on all 2 steps merged)"), "{}", out.stdout);
    // The wide CSV: the gates' two columns, the same on every step's row.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0]
            .ends_with(",threshold:p99<10s,threshold:p99<10s:measured,threshold:max<1us,threshold:max<1us:measured")
    );
    assert!(
        lines[1].ends_with(&format!(",fail,{most:.3}")) && lines[2].ends_with(&format!(",fail,{most:.3}")),
        "{csv}"
    );
}

#[test]
fn bad_threshold_text_is_one_line_with_the_flag_and_the_fix_and_exit_2() {
    let target = common::target();
    let url = format!("http://{}/", target.addr());
    for (command, bad) in [("run", "p99<50"), ("run", "p99=50ms"), ("sweep", "latency<5ms"), ("kv", "errors<lots")] {
        let target_url = if command == "kv" { "redis://127.0.0.1:9".to_string() } else { url.clone() };
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let out = common::hakaru(&[command, "--threshold", bad, "--json", json.to_str().unwrap(), &target_url]);
        assert_eq!(out.code, 2, "{command} {bad}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.trim().lines().collect();
        assert_eq!(lines.len(), 1, "{command}: {}", out.stderr);
        assert!(lines[0].contains(&format!("--threshold '{bad}'")) && lines[0].contains("'p99<50ms'"), "{}", lines[0]);
        assert!(!json.exists(), "nothing ran");
    }
}
