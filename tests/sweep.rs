//! `hakaru sweep`, `hakaru capacity` and `hakaru patterns` against the built-in target.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{hakaru, target_with};
use hakaru::serve::ServeOptions;

fn target_opts(workers: Option<usize>) -> ServeOptions {
    ServeOptions { listen: "127.0.0.1:0".parse().unwrap(), threads: 1, workers, ..ServeOptions::default() }
}

/// Runs a hakaru subcommand writing `--json` and the wide `--csv` into a temporary directory; returns (output,
/// json, csv).
fn run_study(args: &[&str]) -> (common::Output, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", json.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    let out = hakaru(&all);
    // 1: not one request succeeded (a sweep of 503s), which still writes every file.
    assert!(out.code == 0 || out.code == 1, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, doc, std::fs::read_to_string(&csv).unwrap())
}

fn a_bottleneck(doc: &serde_json::Value) -> &str {
    doc["analysis"]["bottleneck"].as_str().unwrap_or_default()
}

fn validate(doc: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/result.schema.json")).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the document breaks the schema:\n{}", errors.join("\n"));
}

#[test]
fn a_two_worker_target_plateaus_near_40_qps_from_2_clients_and_the_knee_is_2_clients() {
    let t = target_with(target_opts(Some(2)));
    // 50 ms per answer, not 10: on a busy machine a sleeping worker wakes a few ms late, which is a third of a
    // 10 ms answer (2 clients measured 152 qps instead of 200 under load) but a small share of 50 ms.
    let url = format!("http://{}/?delay=50ms", t.addr());
    // The target runs in this test process, beside other tests: not watched, so the bottleneck is "unknown".
    let (out, doc, csv) =
        run_study(&["sweep", "-q", "--no-monitor", "--clients", "1,2,3,4", "-d", "2s", "--interval", "0s", &url]);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    let qps: Vec<f64> = steps.iter().map(|s| s["throughput"]["requests_per_s"].as_f64().unwrap()).collect();
    let mean_ms: Vec<f64> = steps.iter().map(|s| s["latency"]["mean"].as_f64().unwrap() / 1000.0).collect();
    // What the target controls holds on any machine: two workers of 50 ms answer at most 40 times a second (one
    // client at most 20), and no answer comes sooner than its 50 ms.
    assert!(qps[0] <= 21.0, "1 client: {qps:?}");
    assert!(qps.iter().all(|q| *q <= 41.0), "2 workers of 50 ms: {qps:?}");
    assert!(steps.iter().all(|s| s["latency"]["min"].as_u64().unwrap() >= 50_000), "{mean_ms:?}");
    assert_eq!(a_bottleneck(&doc), "unknown");
    assert_eq!(csv.lines().count(), 5, "a header and one row per step:\n{csv}");
    validate(&doc);
    // The lower bounds need a machine that kept time: each step's mean latency near what two workers of 50 ms
    // give c clients (50 ms up to 2, 25 ms x c beyond). A machine busy with other work (a step of 7.5 qps with
    // load average 66) makes them slower; that is measured here, said, and the plateau is not judged on it.
    let slowest = mean_ms.iter().zip(1..).map(|(m, c)| m / (25.0 * c as f64).max(50.0)).fold(0.0, f64::max);
    if slowest > 1.15 {
        let why = format!(
            "a step's mean latency was {slowest:.2} x what the target gives ({mean_ms:?}): the machine was busy; the \
             plateau's lower bounds and the knee are not checked"
        );
        common::unchecked("a_two_worker_target_plateaus_near_40_qps_from_2_clients_and_the_knee_is_2_clients", &why);
        return;
    }
    assert!((15.0..=21.0).contains(&qps[0]), "1 client: {qps:?}");
    for q in &qps[1..] {
        assert!((33.0..=41.0).contains(q), "2+ clients plateau near 40: {qps:?}");
    }
    let a = &doc["analysis"];
    assert_eq!(a["plateau_from"], 2.0, "{a}");
    assert_eq!(a["knee_mean"], 2.0, "{a}");
    assert!(out.stdout.contains("levels off at"), "{}", out.stdout);
    // The mean's knee is judged above; the p99's may come a client earlier on a loaded machine (one late answer at
    // 2 clients), which words the line "average latency rises above 2 clients, p99 latency above 1 client".
    assert!(out.stdout.contains("above 2 clients"), "{}", out.stdout);
}

#[test]
fn the_sweep_csv_starts_with_drnbenchs_columns_and_ends_with_status_percentages() {
    let t = target_with(target_opts(None));
    let url = format!("http://{}/?status=503", t.addr());
    let (_, _, csv) =
        run_study(&["sweep", "-q", "--start-clients", "1", "--end-clients", "2", "-d", "1s", "--interval", "0s", &url]);
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with(
            "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,"
        ),
        "{header}"
    );
    assert!(header.ends_with(",503"), "{header}");
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row[0], "1");
    assert_eq!(*row.last().unwrap(), "100.0", "the 503 column holds the percentage of requests");
    let avg: f64 = row[5].parse().unwrap();
    assert!(avg > 0.0 && avg < 0.1, "average_elapsed_time in seconds: {avg}");
}

/// Waits until the sweep's CSV at `csv` holds `steps` rows (it is rewritten after every step), 60 s at most.
fn wait_for_steps(csv: &std::path::Path, steps: usize) {
    common::wait_for(Duration::from_secs(60), || std::fs::read_to_string(csv).is_ok_and(|t| t.lines().count() > steps));
}

#[test]
fn ctrl_c_during_a_sweep_leaves_the_finished_steps_on_disk() {
    let t = target_with(target_opts(None));
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let url = format!("http://{}/?delay=1ms", t.addr());
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .env("HAKARU_DB", dir.path().join("history.db"))
        .args(["sweep", "-q", "--clients", "1,2,3,4,5,6", "-d", "1s", "--interval", "0s"])
        .args(["--json", json.to_str().unwrap(), "-o", csv.to_str().unwrap(), &url])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Two steps finished (the CSV is rewritten after each), then the signal, in the third.
    wait_for_steps(&csv, 2);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap().len();
    // The steps finished before the signal, and the one it stopped; never the six planned.
    assert!((2..6).contains(&steps), "steps kept: {steps}");
    assert_eq!(doc["interrupted"], true);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), steps + 1);
    validate(&doc);
}

#[test]
fn probes_read_the_targets_status_and_a_generated_50_percent_pattern_set_hits_about_half() {
    let t = target_with(ServeOptions { miss_cost: Duration::from_millis(1), ..target_opts(None) });
    let dir = tempfile::tempdir().unwrap();
    let terms = dir.path().join("terms.txt");
    std::fs::write(&terms, (0..300).map(|i| format!("term{i}\n")).collect::<String>()).unwrap();
    let patterns = dir.path().join("patterns.json");
    let generated = hakaru(&[
        "patterns",
        "generate",
        "--template",
        "/cache?key={term}",
        "--terms",
        terms.to_str().unwrap(),
        "--hit-rate",
        "50%",
        "--cache-size",
        "100",
        "-o",
        patterns.to_str().unwrap(),
    ]);
    assert_eq!(generated.code, 0, "{}", generated.stderr);
    assert!(generated.stderr.contains("200 unique requests"), "{}", generated.stderr);
    let base = format!("http://{}", t.addr());
    let hits = format!("{base}/status#/1/cache_hits");
    let misses = format!("{base}/status#/1/cache_misses");
    let rate = format!("{base}/status#/1/cache_hit_rate");
    let (out, doc, csv) = run_study(&[
        "sweep",
        "-q",
        "--clients",
        "2",
        "-d",
        "2s",
        "--warmup",
        "1s",
        "--seed",
        "5",
        "--patterns",
        patterns.to_str().unwrap(),
        "--probe",
        &hits,
        "--probe",
        &misses,
        "--probe",
        &rate,
        &base,
    ]);
    let probes = doc["steps"][0]["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 3);
    let (dh, dm) = (probes[0]["delta"].as_f64().unwrap(), probes[1]["delta"].as_f64().unwrap());
    let measured = dh / (dh + dm);
    assert!((0.40..=0.60).contains(&measured), "hit rate over the step {measured} ({dh} hits, {dm} misses)");
    // hakaru computes the same per-step rate itself, and prints it in the table.
    assert_eq!(doc["steps"][0]["hit_rate"].as_f64(), Some(measured));
    assert!(out.stdout.contains("hit rate (step)"), "{}", out.stdout);
    assert!(probes[2]["after"].as_f64().unwrap() > 0.0);
    assert!(csv.lines().next().unwrap().contains("probe_cache_hit_rate"), "{csv}");
    assert!(out.stdout.contains("cache_hits"), "{}", out.stdout);
    let warm = &doc["steps"][0]["warmup"];
    assert!(warm["requests"].as_u64().unwrap() > 0, "the warm-up is measured apart: {warm}");
    validate(&doc);
}

#[test]
fn a_rate_sweep_keeps_each_rate_and_adds_a_target_rate_column() {
    let t = target_with(target_opts(None));
    let url = format!("http://{}/", t.addr());
    let (out, doc, csv) = run_study(&["sweep", "-q", "--rates", "200,400", "-d", "2s", "--interval", "0s", &url]);
    for (step, rate) in doc["steps"].as_array().unwrap().iter().zip([200.0, 400.0]) {
        let achieved = step["schedule"]["achieved_rate"].as_f64().unwrap();
        // Never more than asked; less only when the machine held hakaru back, which its own lag behind the
        // schedule then shows: a rate short by 5 % of a 2 s step ended at least some 50 ms behind.
        let short = (rate - achieved) / rate;
        assert!(short > -0.03, "{achieved} for {rate}");
        if short >= 0.03 {
            let lag_s = step["schedule"]["max_lag_us"].as_f64().unwrap() / 1e6;
            let duration = step["duration_s"].as_f64().unwrap();
            assert!(lag_s >= 0.5 * short * duration, "{achieved} for {rate} with at most {lag_s} s of lag");
            eprintln!("a_rate_sweep: {achieved}/s for {rate}/s on a busy machine, {lag_s} s behind at worst");
        }
    }
    assert!(csv.lines().next().unwrap().contains("target_rate"), "{csv}");
    assert!(out.stdout.contains("achieved"), "{}", out.stdout);
    assert_eq!(doc["analysis"]["axis"], "rate");
    validate(&doc);
}

#[test]
fn capacity_finds_the_rate_a_one_worker_5ms_target_can_serve_under_50ms_p99() {
    let t = target_with(target_opts(Some(1)));
    let url = format!("http://{}/?delay=5ms", t.addr());
    let meter = common::StallMeter::start();
    let (out, doc, _) = run_study(&[
        "capacity",
        "-q",
        "--slo",
        "p99<50ms",
        "--rate-start",
        "50",
        "-d",
        "1s",
        "--interval",
        "1s",
        "--precision",
        "20%",
        &url,
    ]);
    let stalled = meter.worst();
    let cap = &doc["analysis"]["capacity"];
    // One worker answering in 5 ms serves at most 200 requests per second: never more, whatever the machine.
    let rate = cap["rate"].as_f64().unwrap_or(0.0);
    assert!(rate <= 210.0, "capacity {rate}: {}", out.stdout);
    assert!(cap["first_failing_rate"].as_f64().unwrap() > rate);
    // Under 90/s the worker is less than half busy, and a p99 over 50 ms (ten answers' time) can only come from
    // the machine stopping the target or hakaru for that long: seen by the meter, or the search is wrong.
    if rate < 90.0 {
        assert!(stalled >= Duration::from_millis(25), "capacity {rate} on a machine that kept time: {}", out.stdout);
        let why = format!("the machine stalled {stalled:?}; capacity {rate}/s, the 90/s floor not checked");
        common::unchecked("capacity_finds_the_rate_a_one_worker_5ms_target_can_serve_under_50ms_p99", &why);
    }
    assert!(out.stdout.contains("capacity:") && out.stdout.contains("meets p99<50ms"), "{}", out.stdout);
    assert!(out.stdout.contains("fails:"), "the table shows the evidence: {}", out.stdout);
    validate(&doc);
}

#[test]
fn patterns_extract_prints_a_column_of_groonga_select_results() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("select.json");
    std::fs::write(
        &file,
        r#"[[0,1.0,0.1],[[[2],[["_id","UInt32"],["title","ShortText"]],[1,"Tokyo"],[2,"京都 駅"]]]]"#,
    )
    .unwrap();
    let out = hakaru(&["patterns", "extract", "--column", "1", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Tokyo\n京都 駅\n");
    let out = hakaru(&["patterns", "extract", "--column", "1", "--escape", file.to_str().unwrap()]);
    assert_eq!(out.stdout, "Tokyo\n%E4%BA%AC%E9%83%BD%20%E9%A7%85\n");
}

#[test]
fn a_sweep_of_two_steps_asks_for_a_range_and_a_sweep_without_one_is_refused() {
    let t = target_with(target_opts(None));
    let url = format!("http://{}/", t.addr());
    let (out, doc, _) = run_study(&["sweep", "--clients", "1,2", "-d", "300ms", "--interval", "0s", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Two steps cannot show a plateau, a knee or growth: the analysis says what was measured and the range to give.
    let summary: Vec<&str> = doc["analysis"]["summary"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
    assert!(summary[0].contains("a sweep of 2 steps shows no plateau or knee"), "{summary:?}");
    assert!(summary[0].contains("--clients 1,2,4,8,16"), "{summary:?}");
    assert!(!out.stdout.contains("still grows") && !out.stdout.contains("stays flat"), "{}", out.stdout);
    assert!(!out.stdout.contains("1 clients"), "{}", out.stdout);
    // No range at all: refused before any load, with ranges to copy (and `run` for one step).
    for bare in [&["sweep", &url][..], &["sweep", "-d", "1s", &url]] {
        let out = hakaru(bare);
        assert_eq!(out.code, 2, "{bare:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        for needle in ["no range given", "--clients 1,2,4,8,16", "--start-clients 0 --end-clients 20 --step 2"] {
            assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        }
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
    assert_eq!(hakaru(&["sweep", "redis://127.0.0.1:9"]).code, 2, "a key-value sweep needs a range too");
    // drnbench's own flags for one step are a range given on purpose: run, and the analysis asks for more.
    let (out, doc, _) = run_study(&["sweep", "--end-clients", "1", "-d", "200ms", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(doc["analysis"]["summary"][0].as_str().unwrap().contains("at 1 client; a sweep of 1 step"), "{doc}");
}

#[test]
fn bad_sweep_and_capacity_input_is_one_line_naming_the_flag() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["sweep", "--start-clients", "4", "--end-clients", "2", "http://127.0.0.1:9/"],
            "--end-clients 2 is below --start-clients 4",
        ),
        (&["sweep", "--rates", "0", "http://127.0.0.1:9/"], "--rates 0"),
        (&["capacity", "--slo", "p99=50ms", "http://127.0.0.1:9/"], "--slo 'p99=50ms'"),
        (&["sweep", "--probe", "http://127.0.0.1:9/status", "http://127.0.0.1:9/"], "--probe"),
        (&["sweep", "-d", "1s", "--interval", "soon", "http://127.0.0.1:9/"], "--interval 'soon'"),
    ];
    for (args, needle) in cases {
        let out = hakaru(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {needle:?} not in {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
}

#[test]
fn a_hit_rate_far_from_the_plan_is_a_warning_and_one_near_it_is_not() {
    let t = target_with(ServeOptions { miss_cost: Duration::from_micros(100), ..target_opts(None) });
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, (0..200).map(|k| format!("/cache?key=k{k}\n")).collect::<String>()).unwrap();
    let base = format!("http://{}", t.addr());
    let probe = format!("{base}/status#/1/cache_hit_rate");
    let run = |planned: &str| {
        hakaru(&[
            "run",
            "-q",
            "-c",
            "2",
            "-n",
            "4000",
            "--seed",
            "2",
            "--patterns",
            keys.to_str().unwrap(),
            "--probe",
            &probe,
            "--expect-hit-rate",
            planned,
            &base,
        ])
    };
    let far = run("0.9");
    assert!(far.doc()["warnings"].to_string().contains("far from the 0.90 planned"), "{}", far.doc()["warnings"]);
    let near = run("50%");
    assert!(!near.doc()["warnings"].to_string().contains("planned"), "{}", near.doc()["warnings"]);
    let without_probe = hakaru(&["run", "-n", "1", "--expect-hit-rate", "0.5", &base]);
    assert_eq!(without_probe.code, 2);
    assert!(without_probe.stderr.contains("--expect-hit-rate needs a probe"), "{}", without_probe.stderr);
}

#[test]
fn sigterm_during_a_sweep_stops_it_keeps_the_finished_steps_and_says_so() {
    let t = target_with(target_opts(None));
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let url = format!("http://{}/?delay=1ms", t.addr());
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .env("HAKARU_DB", dir.path().join("history.db"))
        .args(["sweep", "-q", "--clients", "1,2,3,4,5,6", "-d", "1s", "--interval", "0s"])
        .args(["--json", json.to_str().unwrap(), "-o", csv.to_str().unwrap(), &url])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_steps(&csv, 2);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "128 + SIGTERM");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stopped by SIGTERM: the figures cover only the time until then"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap().len();
    // The steps finished before the signal, and the one it stopped; never the six planned.
    assert!((2..6).contains(&steps), "steps kept: {steps}");
    assert_eq!(doc["interrupted"], true);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), steps + 1);
}

#[test]
fn sighup_during_a_run_writes_the_result_and_exits_129() {
    let t = target_with(target_opts(None));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://{}/", t.addr());
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .env("HAKARU_DB", dir.path().join("history.db"))
        .args(["run", "-q", "-c", "2", "-d", "20s", "--json", json.to_str().unwrap(), &url])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Once requests flow (the handlers are in place by then), not after a fixed time a busy machine outlasts.
    common::wait_served(t.addr(), 20, Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "128 + SIGHUP");
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped by SIGHUP"));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert!(doc["steps"][0]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn a_drnbench_command_line_runs_as_hakaru_sweep_and_writes_drnbenchs_csv() {
    // drnbench-request-response's own flags and value forms (bare seconds), with only the command replaced.
    let t = target_with(target_opts(None));
    let dir = tempfile::tempdir().unwrap();
    let patterns = dir.path().join("patterns.json");
    std::fs::write(&patterns, r#"{"g": {"frequency": 1.0, "method": "get", "patterns": ["/?delay=1ms", "/"]}}"#)
        .unwrap();
    let out_csv = dir.path().join("result.csv");
    let port = t.addr().port().to_string();
    let out = hakaru(&[
        "sweep",
        "-q",
        "--start-n-clients=0",
        "--end-n-clients=2",
        "--step=1",
        "--duration=1",
        "--interval=0",
        "--wait=0.01",
        &format!("--request-patterns-file={}", patterns.display()),
        "--default-hosts=127.0.0.1",
        &format!("--default-port={port}"),
        "--default-path=/",
        "--default-method=GET",
        "--default-timeout=5.0",
        &format!("--output-path={}", out_csv.display()),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let csv = std::fs::read_to_string(&out_csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,200"
    );
    // 0 and 1 client are one step (drnbench keeps one result per count): steps 1 and 2.
    assert_eq!(lines.len(), 3, "{csv}");
    let row: Vec<&str> = lines[2].split(',').collect();
    assert_eq!((row[0], row[6]), ("2", "100.0"), "{csv}");
    // 2 clients with a 10 ms wait each: under 200 requests a second.
    let qps: f64 = row[2].parse().unwrap();
    assert!((60.0..200.0).contains(&qps), "{qps}");
}
