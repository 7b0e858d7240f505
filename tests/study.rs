//! `hakaru study`: study files run against the built-in target (started by the study's own start commands or by
//! the test), interleaved, every case on disk; `--dry-run`, `--resume` after a kill, failing start commands,
//! Ctrl-C, one-line errors for bad study files, and the examples.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::{free_port, hakaru_with, target_with};
use hakaru::serve::ServeOptions;

fn serve(workers: Option<usize>) -> hakaru::serve::ServerHandle {
    target_with(ServeOptions { listen: "127.0.0.1:0".parse().unwrap(), threads: 1, workers, ..ServeOptions::default() })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn study(args: &[&str]) -> common::Output {
    let mut all = vec!["study"];
    all.extend(args);
    hakaru_with(&all, Duration::from_secs(120), |_| {})
}

/// The study's manifest, checked against `schema/study.schema.json`.
fn manifest(dir: &Path) -> serde_json::Value {
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("study.json")).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/study.schema.json")).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&m).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the manifest breaks the schema:\n{}", errors.join("\n"));
    m
}

fn ids_with_status(m: &serde_json::Value, status: &str) -> Vec<String> {
    m["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == status)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// Two targets, each started by the study on its own port (5 ms and 50 ms a request), two phases, `repeat`, and
/// `load` (a line of the study's `[load]`: its duration or its requests).
fn two_target_study(fast: u16, slow: u16, repeat: u32, load: &str) -> String {
    format!(
        r#"
name = "delays"
[[target]]
name = "fast"
url = "http://127.0.0.1:{fast}/?delay=5ms"
start = "exec \"$HAKARU\" serve --listen 127.0.0.1:{fast} --threads 1"
monitor = ["started"]
[[target]]
name = "slow"
url = "http://127.0.0.1:{slow}/?delay=50ms"
start = "exec \"$HAKARU\" serve --listen 127.0.0.1:{slow} --threads 1"
monitor = ["none"]
[[phase]]
name = "cold"
before = "echo flushing $HAKARU_TARGET $HAKARU_PORT $HAKARU_PHASE"
[[phase]]
name = "warm"
[load]
connections = 2
{load}
repeat = {repeat}
pause = "0s"
"#
    )
}

const INTERLEAVED: [&str; 12] = [
    "r1-fast-cold",
    "r1-fast-warm",
    "r1-slow-cold",
    "r1-slow-warm",
    "r2-fast-cold",
    "r2-fast-warm",
    "r2-slow-cold",
    "r2-slow-warm",
    "r3-fast-cold",
    "r3-fast-warm",
    "r3-slow-cold",
    "r3-slow-warm",
];

#[test]
fn two_targets_by_two_phases_by_three_repetitions_run_interleaved_with_every_case_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "delays.toml", &two_target_study(free_port(), free_port(), 3, "requests = 20"));
    let out_dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    assert_eq!(m["study"], "delays");
    assert_eq!(m["file"], file.to_str().unwrap());
    let cases = m["cases"].as_array().unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, INTERLEAVED, "repetition outermost, then target, then phase");
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["error"], serde_json::Value::Null);
        assert_eq!(c["repetition"], (i / 4 + 1) as u64);
        assert_eq!(c["phase"], if i % 2 == 0 { "cold" } else { "warm" });
        assert_eq!(c["workload"], "default");
        let rel = c["file"].as_str().unwrap();
        assert_eq!(rel, format!("cases/{}.json", c["id"].as_str().unwrap()));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(rel)).unwrap()).unwrap();
        assert_eq!(doc["schema"], "hakaru.result/1");
        assert!(doc["steps"][0]["ok"].as_u64().unwrap() > 0, "{}", c["id"]);
        let command: Vec<&str> = c["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(command[..2], ["hakaru", "run"]);
        // Kept in the history with labels that tell targets, workloads and phases apart.
        let labels: Vec<&str> = command.windows(2).filter(|w| w[0] == "--label").map(|w| w[1]).collect();
        let want =
            [format!("target={}", c["target"].as_str().unwrap()), format!("phase={}", c["phase"].as_str().unwrap())];
        assert!(want.iter().all(|w| labels.contains(&w.as_str())), "{command:?}");
        assert!(labels.contains(&"workload=default") && labels.contains(&"study=delays"), "{command:?}");
        if c["target"] == "fast" {
            // monitor = ["started"]: the started server's pid, not the placeholder.
            let pid = command[command.iter().position(|a| *a == "--monitor-pid").unwrap() + 1];
            assert!(pid.parse::<u32>().is_ok(), "{command:?}");
        }
    }
    let csv = std::fs::read_to_string(out_dir.join("study.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13, "a header and a row per case:\n{csv}");
    assert!(csv.starts_with(
        "case,target,workload,phase,repetition,step,clients,rate,ok_per_s,mean_ms,p50_ms,p99_ms,failed_percent\n"
    ));
    // The 5 ms target serves about twice what the 10 ms one does with 2 connections.
    let mean_qps = |target: &str| {
        let qps: Vec<f64> = csv
            .lines()
            .skip(1)
            .filter(|l| l.split(',').nth(1) == Some(target))
            .map(|l| l.split(',').nth(8).unwrap().parse().unwrap())
            .collect();
        qps.iter().sum::<f64>() / qps.len() as f64
    };
    assert!(mean_qps("fast") > 1.2 * mean_qps("slow"), "{csv}");
    let summary = std::fs::read_to_string(out_dir.join("summary.txt")).unwrap();
    assert_eq!(summary.lines().count(), 5, "a line per target x phase:\n{summary}");
    assert!(summary.lines().any(|l| l.starts_with("fast ") && l.contains(" 3/3 ")), "{summary}");
    assert!(out.stdout.contains("12 of 12 cases ok"), "{}", out.stdout);
    // What compare and report start from (the one reader, `hakaru::inputs`): the directory read back into sides
    // per workload and phase, one run per repetition.
    let groups = hakaru::compare::input::study(&out_dir).unwrap();
    let keys: Vec<(&str, &str, usize)> = groups
        .iter()
        .flat_map(|g| g.sides.iter().map(move |s| (g.title.as_str(), s.name.as_str(), s.points[0].1.len())))
        .collect();
    let (cold, warm) = ("workload default, phase cold", "workload default, phase warm");
    assert_eq!(keys, [(cold, "fast", 3), (cold, "slow", 3), (warm, "fast", 3), (warm, "slow", 3)]);
    let log = std::fs::read_to_string(out_dir.join("logs/r2-slow-cold.log")).unwrap();
    // The before command ran with the case's target, port and phase in its environment.
    assert!(log.starts_with("flushing slow ") && log.lines().next().unwrap().ends_with(" cold"), "{log}");
}

#[test]
fn dry_run_prints_the_matrix_and_the_time_and_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sentinel = tmp.path().join("started");
    let text = two_target_study(free_port(), free_port(), 3, "duration = \"2s\"")
        .replace("exec \\\"$HAKARU\\\" serve", &format!("touch {} && exec \\\"$HAKARU\\\" serve", sentinel.display()));
    let file = write(tmp.path(), "delays.toml", &text);
    let out_dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("2 targets x 1 workload x 2 phases x 3 repetitions = 12 cases"), "{}", out.stdout);
    let listed: Vec<&str> =
        out.stdout.lines().filter_map(|l| l.split_whitespace().nth(1)).filter(|w| INTERLEAVED.contains(w)).collect();
    assert_eq!(listed[..12], INTERLEAVED, "{}", out.stdout);
    // 12 cases of 2 s and 11 pauses of 0 s.
    assert!(out.stdout.contains("12 to run, about 24s of load and pauses"), "{}", out.stdout);
    assert!(out.stdout.contains("hakaru run --monitor-pid {started-pid} -c 2 -d 2s -q"), "{}", out.stdout);
    assert!(!sentinel.exists(), "a dry run started a target");
    assert!(!out_dir.exists(), "a dry run wrote files");
}

#[test]
fn resume_after_the_study_is_killed_runs_only_the_missing_cases() {
    let server = serve(None);
    let port = free_port();
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
name = "resumable"
[[target]]
name = "a"
url = "http://127.0.0.1:{port}/?delay=5ms"
start = "exec \"$HAKARU\" serve --listen 127.0.0.1:{port} --threads 1"
monitor = ["none"]
[[target]]
name = "b"
url = "http://{addr}/?delay=10ms"
monitor = ["none"]
[[phase]]
name = "cold"
[[phase]]
name = "warm"
[load]
connections = 2
duration = "400ms"
repeat = 3
pause = "0s"
"#,
        addr = server.addr()
    );
    let file = write(tmp.path(), "resumable.toml", &text);
    let out_dir = tmp.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["study", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait until some cases are done, then kill the study's whole process group, as kill -9 would.
    let began = Instant::now();
    let done_before = loop {
        let ok = std::fs::read_to_string(out_dir.join("study.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|m| ids_with_status(&m, "ok"))
            .unwrap_or_default();
        // Killed while a case of the started target runs.
        if ok.len() >= 4 && out_dir.join("logs/r2-a-cold.log").exists() {
            break ok;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "the study did not get going");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(), "the started target is up");
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    // The server the study started (its own process group) ends with it: nothing is left on its port.
    let gone = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(gone.elapsed() < Duration::from_secs(10), "the started server outlived the killed study");
        std::thread::sleep(Duration::from_millis(50));
    }
    let m = manifest(&out_dir);
    let ok_at_kill = ids_with_status(&m, "ok");
    assert!(ok_at_kill.len() < 12, "the kill came too late to test anything: {ok_at_kill:?}");
    assert!(ok_at_kill.len() >= done_before.len());
    let mtime = |id: &str| -> SystemTime {
        std::fs::metadata(out_dir.join(format!("cases/{id}.json"))).unwrap().modified().unwrap()
    };
    let times: Vec<(String, SystemTime)> = ok_at_kill.iter().map(|id| (id.clone(), mtime(id))).collect();
    let out = study(&[file.to_str().unwrap(), "--resume", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    assert_eq!(ids_with_status(&m, "ok").len(), 12, "{m}");
    for (id, t) in &times {
        assert_eq!(mtime(id), *t, "{id} was run again");
        assert!(!out.stdout.contains(&format!("] {id} ")), "{id} was run again:\n{}", out.stdout);
    }
    let ran = out.stdout.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(ran, 12 - ok_at_kill.len(), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("({} kept from the earlier run)", ok_at_kill.len())), "{}", out.stdout);
    let csv = std::fs::read_to_string(out_dir.join("study.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13, "{csv}");
}

#[test]
fn resume_says_which_cases_ran_apart_from_the_kept_cases_they_interleave_with() {
    // "flaky" fails to start the first time only: its repetition 1 is run again on --resume, while "good"'s
    // repetition 1 is kept from the first run. They did not run side by side: the study says so.
    let server = serve(None);
    let port = free_port();
    let tmp = tempfile::tempdir().unwrap();
    let mark = tmp.path().join("started-once");
    let text = format!(
        r#"
[[target]]
name = "flaky"
url = "http://127.0.0.1:{port}/"
start = "test -e '{mark}' || {{ touch '{mark}'; echo first start fails >&2; exit 3; }}; exec \"$HAKARU\" serve --listen 127.0.0.1:{port} --threads 1"
monitor = ["none"]
[[target]]
name = "good"
url = "http://{addr}/"
monitor = ["none"]
[load]
connections = 1
requests = 20
repeat = 2
pause = "0s"
"#,
        mark = mark.display(),
        addr = server.addr()
    );
    let file = write(tmp.path(), "flaky.toml", &text);
    let out_dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(ids_with_status(&manifest(&out_dir), "failed"), ["r1-flaky"]);
    assert!(!out.stdout.contains("not interleaved"), "{}", out.stdout);
    let out = study(&[file.to_str().unwrap(), "--resume", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    assert_eq!(ids_with_status(&manifest(&out_dir), "ok").len(), 4);
    assert!(
        out.stdout.contains(
            "! not interleaved: 1 case(s) ran now while the other targets' cases of their repetition were kept from \
             the earlier run (r1-flaky)"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_failing_start_command_is_recorded_as_failed_and_the_study_goes_on() {
    let server = serve(None);
    let closed = free_port();
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
[[target]]
name = "broken"
url = "http://127.0.0.1:{port}/"
start = "echo no such build >&2; exit 3"
[[target]]
name = "closed"
url = "http://127.0.0.1:{closed}/"
monitor = ["none"]
[[target]]
name = "good"
url = "http://{addr}/"
monitor = ["none"]
[load]
connections = 1
requests = 20
repeat = 2
pause = "0s"
"#,
        port = free_port(),
        addr = server.addr()
    );
    let file = write(tmp.path(), "broken.toml", &text);
    let out_dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 1, "a failed case: exit 1\n{}\n{}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    let cases = m["cases"].as_array().unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r1-broken", "r1-closed", "r1-good", "r2-broken", "r2-closed", "r2-good"]);
    for c in cases {
        if c["target"] == "closed" {
            // The case's own one-line error, from its log.
            assert_eq!(c["status"], "failed");
            let e = c["error"].as_str().unwrap();
            assert!(e.starts_with("exit code 2: ") && e.contains(&format!("127.0.0.1:{closed}")), "{e}");
        } else if c["target"] == "broken" {
            assert_eq!(c["status"], "failed");
            assert_eq!(c["file"], serde_json::Value::Null);
            let e = c["error"].as_str().unwrap();
            assert!(e.contains("did not start") && e.contains("exit code 3") && e.contains("no such build"), "{e}");
        } else {
            assert_eq!(c["status"], "ok", "{c}");
        }
    }
    assert!(out.stdout.contains("2 of 6 cases ok, 4 failed"), "{}", out.stdout);
}

#[test]
fn ctrl_c_keeps_what_finished_skips_the_rest_and_still_runs_the_stop_command() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let stopped = tmp.path().join("stopped");
    let text = format!(
        r#"
[[target]]
name = "t"
url = "http://127.0.0.1:{port}/?delay=5ms"
start = "exec \"$HAKARU\" serve --listen 127.0.0.1:{port} --threads 1"
stop = "touch {stopped}"
[[workload]]
name = "post"
method = "POST"
body_file = "body.json"
[load]
connections = 1
duration = "1s"
repeat = 4
pause = "0s"
"#,
        stopped = stopped.display()
    );
    let file = write(tmp.path(), "long.toml", &text);
    // A relative body file is read from the study file's directory, wherever the study is started from.
    write(tmp.path(), "body.json", "{\"a\": 1}");
    let out_dir = tmp.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .current_dir("/")
        .args(["study", file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while !out_dir.join("cases/r1-t-post.json").exists()
        || std::fs::metadata(out_dir.join("logs/r2-t-post.log")).is_err()
    {
        assert!(began.elapsed() < Duration::from_secs(60), "the study did not get going");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Case 2 is measuring once the target, started afresh for repetition 2, has answered a few requests (its signal
    // handlers are in place by then, so it writes what it measured): not after a fixed time a busy machine outlasts.
    common::wait_served(format!("127.0.0.1:{port}").parse().unwrap(), 5, Duration::from_secs(30));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    let m = manifest(&out_dir);
    let cases = m["cases"].as_array().unwrap();
    assert_eq!(cases[0]["status"], "ok");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("cases/r1-t-post.json")).unwrap()).unwrap();
    assert_eq!((doc["settings"]["method"].as_str(), doc["settings"]["body_bytes"].as_u64()), (Some("POST"), Some(8)));
    // The case running at the signal wrote what it measured, marked as such.
    assert_eq!(cases[1]["status"], "failed", "{}", cases[1]);
    assert!(cases[1]["error"].as_str().unwrap().contains("interrupted"), "{}", cases[1]);
    assert_eq!(cases[1]["file"], "cases/r2-t-post.json");
    for c in &cases[2..] {
        assert_eq!(c["status"], "skipped");
        assert!(c["error"].as_str().unwrap().starts_with("not run: stopped by"), "{c}");
    }
    assert!(stopped.exists(), "the stop command did not run");
    assert!(stdout.contains("--resume"), "{stdout}");
}

#[test]
fn a_study_file_with_an_unknown_key_or_a_wrong_type_is_one_line_with_its_place_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let base = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:9/\"\n[load]\nconnections = 2\n";
    let file = write(tmp.path(), "typo.toml", &format!("{base}duraton = \"1s\"\n"));
    let out = study(&[file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let line = out.stderr.trim();
    assert!(
        line.starts_with(&format!("hakaru: error: {}:6:1: unknown key 'duraton' in [load]", file.display())),
        "{line}"
    );
    assert!(line.ends_with("did you mean 'duration'?"), "{line}");

    let file = write(tmp.path(), "type.toml", &format!("{base}repeat = \"3\"\n"));
    let out = study(&[file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let line = out.stderr.trim();
    assert!(
        line.starts_with(&format!("hakaru: error: {}:6:10: key 'repeat' in [load] has the wrong type", file.display())),
        "{line}"
    );
    assert!(line.ends_with("write it as repeat = 5"), "{line}");

    let file = write(tmp.path(), "value.toml", &format!("{base}duration = \"3x\"\n"));
    let out = study(&[file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.trim().starts_with(&format!("hakaru: error: {}:6:1: duration \"3x\"", file.display())),
        "{}",
        out.stderr
    );
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_study_parses_and_says_what_stands_in_for_what() {
    let files = examples();
    assert_eq!(files.len(), 4, "{files:?}");
    for f in files {
        let out = study(&[f.to_str().unwrap(), "--dry-run"]);
        assert_eq!(out.code, 0, "{}: {}", f.display(), out.stderr);
        assert!(out.stdout.contains(" to run, about "), "{}", out.stdout);
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with('#') && text.contains("Stand-in"), "{} must say what stands in for what", f.display());
    }
}

#[test]
fn the_study_pages_study_file_parses() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/study.md")).unwrap();
    let block =
        page.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block in docs/study.md");
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "readme.toml", block);
    let out = study(&[file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("= 10 cases"), "{}", out.stdout);
}

#[test]
fn the_cache_cold_vs_warm_example_runs_and_shows_the_cold_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cache-cold-vs-warm.toml");
    // The example as a reader runs it, on a free port instead of its 18311, which another program may hold.
    let text = std::fs::read_to_string(&example).unwrap();
    assert_eq!(text.matches("127.0.0.1:18311").count(), 4, "the example's server port, in url, start and probes");
    let f = write(tmp.path(), "cache.toml", &text.replace("127.0.0.1:18311", &format!("127.0.0.1:{}", free_port())));
    let out_dir = tmp.path().join("out");
    let out = study(&[f.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    assert_eq!(ids_with_status(&m, "ok").len(), 12);
    // uniqkey asks 100 keys once each: when cold every one misses (5 ms), when warm every one hits.
    let misses = |id: &str| -> f64 {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(format!("cases/{id}.json"))).unwrap()).unwrap();
        let probe = doc["steps"][0]["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"].as_str().unwrap().contains("cache_misses"))
            .cloned()
            .unwrap();
        probe["delta"].as_f64().unwrap()
    };
    for r in 1..=3 {
        assert_eq!(misses(&format!("r{r}-api-uniqkey-cold")), 100.0);
        assert_eq!(misses(&format!("r{r}-api-uniqkey-warm")), 0.0);
        assert_eq!(misses(&format!("r{r}-api-samekey-cold")), 1.0);
    }
}

#[test]
fn thresholds_judge_every_case_and_the_study_writes_its_report() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "delays.toml", &two_target_study(free_port(), free_port(), 1, "requests = 20"));
    let out_dir = tmp.path().join("out");
    // Every request takes 5 ms or more: a p99 under 1 ms breaks on every case, a p99 under 10 s holds.
    let out = study(&[
        file.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--threshold",
        "p99<1ms",
        "--threshold",
        "p99<10s",
    ]);
    assert_eq!(out.code, 99, "stdout {}\nstderr {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("thresholds, per case"), "{}", out.stdout);
    let m = manifest(&out_dir);
    for c in m["cases"].as_array().unwrap() {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(c["file"].as_str().unwrap())).unwrap()).unwrap();
        let passes: Vec<bool> =
            doc["thresholds"].as_array().unwrap().iter().map(|t| t["pass"].as_bool().unwrap()).collect();
        assert_eq!(passes, [false, true], "{}", doc["thresholds"]);
    }
    let report = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(report.contains("fast") && report.contains("slow"), "the report names both targets");
    // Bad gate text is one line before anything runs.
    let out = study(&[file.to_str().unwrap(), "-o", tmp.path().join("x").to_str().unwrap(), "--threshold", "p99<"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--threshold"), "{}", out.stderr);
}

/// The page's embedded report model.
fn embedded_report(page: &str) -> serde_json::Value {
    let start = page.find("id=\"hakaru-data\">").expect("the page embeds its data") + "id=\"hakaru-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn report_and_compare_give_the_same_verdicts_on_a_study() {
    let tmp = tempfile::tempdir().unwrap();
    // Runs of 60 answers each, whatever the load: a timed run of the slow target on a busy machine got too few
    // answers for a p50 verdict (16 in 1 s at load 8), and a 300 ms one of the fast target sometimes stalled.
    let file = write(tmp.path(), "delays.toml", &two_target_study(free_port(), free_port(), 3, "requests = 60"));
    let dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let json = tmp.path().join("compare.json");
    let out = common::hakaru(&["compare", "--json", json.to_str().unwrap(), dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let compared: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // compare's verdicts, keyed like the report's rows: group, point, target, metric -> (words, Holm p).
    let name = |m: &str| {
        match m {
            "qps" => "ok/s",
            "p999" => "p99.9",
            other => other,
        }
        .to_string()
    };
    let mut from_compare = Vec::new();
    for g in compared["groups"].as_array().unwrap() {
        for p in g["points"].as_array().unwrap() {
            for r in p["rows"].as_array().unwrap() {
                for c in r["cells"].as_array().unwrap().iter().skip(1) {
                    let key = (
                        g["title"].clone(),
                        p["point"].clone(),
                        c["side"].clone(),
                        name(r["metric"].as_str().unwrap()),
                    );
                    from_compare.push((key, c["verdict"].clone(), c["p_adjusted"].clone()));
                }
            }
        }
    }
    // The study's own report and `hakaru report DIR` say the same.
    let page = tmp.path().join("again.html");
    let out = common::hakaru(&["report", dir.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for html in [dir.join("report.html"), page] {
        let report = embedded_report(&std::fs::read_to_string(&html).unwrap());
        let from_report: Vec<_> = report["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let key = (
                    v["group"].clone(),
                    v["point"].clone(),
                    v["target"].clone(),
                    v["metric"].as_str().unwrap().to_string(),
                );
                (key, v["verdict"].clone(), v["p_adjusted"].clone())
            })
            .collect();
        assert_eq!(from_report.len(), from_compare.len(), "{}: {from_report:?}", html.display());
        for ((key, words, p), (ckey, verdict, cp)) in from_report.iter().zip(&from_compare) {
            assert_eq!(key, ckey);
            assert_eq!(p, cp, "{key:?}: the same Holm-adjusted p");
            let words = words.as_str().unwrap();
            let same = match verdict.as_str().unwrap() {
                "no_significant_difference" => words == "no significant difference",
                "too_few_answers" => words.starts_with(&format!("too few answers per run for {}", key.3)),
                "too_few_runs" => words == "too few runs to tell",
                "fewer" => words == "fewer failures",
                "more" => words == "more failures",
                "not_available" => words == "-",
                v => words == v,
            };
            assert!(same, "{key:?}: compare says {verdict}, the report {words}");
        }
        // The 50 ms target against the 5 ms one (25 ms left the warm phase undecided on every figure at load 18,
        // run 1 of d442e03): found slower in each phase (on its throughput, mean or median: with
        // three runs of 1 s on a busy machine, one figure's spread may leave it undecided, never all three); its
        // p99 rests on runs of about 40 answers and gets no verdict.
        for phase in ["cold", "warm"] {
            let verdict = |metric: &str| {
                from_report
                    .iter()
                    .find(|(k, ..)| k.0 == format!("workload default, phase {phase}") && k.3 == metric)
                    .map(|(_, v, _)| v.as_str().unwrap().to_string())
            };
            let slower = ["ok/s", "mean", "p50"].iter().filter(|m| verdict(m).as_deref() == Some("slower")).count();
            assert!(slower >= 1, "{phase}: {from_report:?}");
            for m in ["ok/s", "mean", "p50"] {
                let v = verdict(m).unwrap();
                assert!(v == "slower" || v == "no significant difference", "{phase} {m}: {v}");
            }
            assert!(verdict("p99").unwrap().starts_with("too few answers per run for p99 ("), "{from_report:?}");
        }
    }
}

#[test]
fn a_study_ramps_the_rate_inside_each_case_and_says_where_a_bad_stage_is() {
    let t = serve(None);
    let tmp = tempfile::tempdir().unwrap();
    let study_file = |load: &str| {
        format!(
            "name = \"ramp\"\n[[target]]\nname = \"api\"\nurl = \"http://{}/\"\nmonitor = [\"none\"]\n[load]\n{load}",
            t.addr()
        )
    };
    let file = write(
        tmp.path(),
        "ramp.toml",
        &study_file("rate_stages = \"1s:100,1s:300\"\nconnections = 4\npause = \"0s\"\n"),
    );
    let out_dir = tmp.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    let id = m["cases"][0]["id"].as_str().unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join(format!("cases/{id}.json"))).unwrap()).unwrap();
    assert_eq!(doc["settings"]["ramp"]["of"], "rate", "{}", doc["settings"]);
    let step = &doc["steps"][0];
    assert!(step["connections"]["opened"].as_u64().unwrap() <= 4, "{}", step["connections"]);
    // 0 -> 100/s over the first second (50 requests), 100 -> 300/s over the second (200): the ramp's integral.
    let sent: Vec<f64> = step["windows"].as_array().unwrap().iter().map(|w| w["sent"].as_f64().unwrap()).collect();
    for (got, want) in sent.iter().zip([50.0, 200.0]) {
        assert!((got - want).abs() <= (want * 0.02).max(3.0), "sent per second {sent:?}");
    }

    // A bad stage, and a key the ramp says itself: one line with the place, the value and the fix.
    for (load, at, said) in [
        ("stages = \"1s:2,1x:4\"\n", "7:1", "stages \"1s:2,1x:4\": stage '1x:4' has a bad duration"),
        (
            "rate_stages = \"1s:0\"\n",
            "7:1",
            "every target is 0, so nothing would be sent; e.g. rate_stages = \"30s:100,2m:5000\"",
        ),
        (
            "stages = \"1s:2\"\nduration = \"5s\"\n",
            "8:1",
            "duration with stages: the ramp lasts its stages; remove duration",
        ),
        ("stages = \"1s:2\"\nrate_stages = \"1s:5\"\n", "8:1", "both stages and rate_stages"),
    ] {
        let file = write(tmp.path(), "bad.toml", &study_file(load));
        let out = study(&[file.to_str().unwrap(), "--dry-run"]);
        assert_eq!(out.code, 2, "{load}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(&format!("{}:{at}: ", file.display())), "{load}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{load}: {}", out.stderr);
    }
}

#[test]
fn a_key_value_workload_sends_its_command_template_once_for_each_row_of_its_data_file() {
    let r = common::redis();
    let dir = tempfile::tempdir().unwrap();
    let rows = common::id_name_rows(300);
    write(dir.path(), "rows.csv", &rows);
    // Bounded by time, but the rows run out long before: each is sent once, then the case ends.
    let file = write(
        dir.path(),
        "kv.toml",
        &format!(
            r#"
name = "kv-rows"
[[target]]
name = "redis"
url = "redis://127.0.0.1:{}"
monitor = ["none"]
[[workload]]
name = "users"
command = ["SET user:{{{{id}}}} {{{{name}}}}"]
data = "rows.csv"
data_order = "unique"
[load]
connections = 2
duration = "60s"
"#,
            r.port
        ),
    );
    let out_dir = dir.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(ids_with_status(&manifest(&out_dir), "ok"), ["r1-redis-users"]);
    assert_eq!(common::ask(r.port, b"DBSIZE\r\n"), ":300\r\n");
    assert_eq!(common::ask(r.port, b"GET user:123\r\n"), "$4\r\nn123\r\n");
}

/// Issue 51: `--dry-run`'s commands are quoted as a shell reads them, so a line can be pasted as it is.
#[test]
fn dry_run_commands_are_quoted_for_a_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:9/\"\n[[workload]]\nname = \"post\"\npath = \"/order\"\n\
                method = \"POST\"\nheaders = [\"Content-Type: application/json\"]\nbody = '{\"model\":\"m\"}'\n\
                [load]\nconnections = 2\nduration = \"1s\"\n";
    let file = write(tmp.path(), "quoted.toml", text);
    let out = study(&[file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out.stdout.lines().find(|l| l.contains(": hakaru run")).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(line.contains("-H 'Content-Type: application/json'"), "{line}");
    assert!(line.contains(r#"-b '{"model":"m"}'"#), "{line}");
    let command = line.split_once(": ").unwrap().1;
    let words = hakaru::cli::help::example_words(command).unwrap();
    assert!(words.contains(&"Content-Type: application/json".to_string()), "{words:?}");
}

/// Issue 50: a target named with 900 KB put 900 KB in its error line: a name is quoted at most 40 characters.
#[test]
fn a_huge_name_is_refused_in_a_short_line() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a".repeat(900_000), format!("{}!", "b".repeat(900_000))] {
        let text = format!("[[target]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:9/\"\n[load]\nconnections = 2\n");
        let file = write(tmp.path(), "huge.toml", &text);
        let out = study(&[file.to_str().unwrap(), "--dry-run"]);
        assert_eq!(out.code, 2, "{}", &out.stderr[..out.stderr.len().min(300)]);
        assert_eq!(out.stderr.trim().lines().count(), 1);
        assert!(out.stderr.len() < 600, "{} bytes: {}", out.stderr.len(), &out.stderr[..300.min(out.stderr.len())]);
    }
}

/// Issue 54: a workload that replays a recording, an access log against an HTTP target and a MONITOR capture
/// against a Redis one, each case its recording's requests; a replay with a sweep is refused at its key.
#[test]
fn a_workload_replays_an_access_log_and_a_monitor_capture() {
    let t = serve(None);
    let r = common::redis();
    let dir = tempfile::tempdir().unwrap();
    let log: Vec<String> =
        (0..12).map(|i| format!(r#"127.0.0.1 - - [01/Jan/2026:00:00:00 +0000] "GET /r/{i} HTTP/1.1" 200 5"#)).collect();
    write(dir.path(), "access.log", &log.join("\n"));
    let gets: Vec<String> =
        (0..7).map(|i| format!(r#"1767225600.{:06} [0 127.0.0.1:9] "GET" "k{i}""#, i * 10_000)).collect();
    write(dir.path(), "monitor.txt", &gets.join("\n"));
    let body = |workload: &str, url: &str, load: &str| {
        format!(
            "name = \"replays\"\n[[target]]\nname = \"t\"\nurl = \"{url}\"\nmonitor = [\"none\"]\n[[workload]]\nname = \"rec\"\n{workload}\n[load]\n{load}\n"
        )
    };
    let http = format!("http://{}/", t.addr());
    let redis = format!("redis://127.0.0.1:{}", r.port);
    for (name, workload, url, requests) in [
        ("http.toml", "replay = \"access.log\"\nreplay_speed = 10.0", &http, 12),
        ("redis.toml", "replay = \"monitor.txt\"", &redis, 7),
    ] {
        let file = write(dir.path(), name, &body(workload, url, "connections = 2"));
        let out_dir = dir.path().join(format!("out-{name}"));
        let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        let m = manifest(&out_dir);
        assert_eq!(ids_with_status(&m, "ok"), ["r1-t-rec"], "{m}");
        let case = m["cases"][0]["file"].as_str().unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join(case)).unwrap()).unwrap();
        assert_eq!(doc["steps"][0]["requests"], requests, "{name}");
        assert!(doc["settings"]["replay"].as_str().unwrap().contains("replay "), "{name}: {}", doc["settings"]);
    }
    let swept = write(dir.path(), "swept.toml", &body("replay = \"access.log\"", &http, "clients = [1, 2]"));
    let out = study(&[swept.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("workload.0.replay") || out.stderr.contains("replay"), "{}", out.stderr);
    assert!(out.stderr.contains("give the study a fixed load"), "{}", out.stderr);
}

/// Issue 53: a workload's goodput objectives judged in every case of a token stream; a bad one refused at its key.
#[test]
fn a_workload_judges_its_streams_goodput() {
    let t = serve(None);
    let dir = tempfile::tempdir().unwrap();
    let body = |goodput: &str| {
        format!(
            "name = \"good\"\n[[target]]\nname = \"t\"\nurl = \"http://{}/?events=4&gap=1ms&first=5ms&kind=tokens\"\nmonitor = [\"none\"]\n[[workload]]\nname = \"stream\"\nevents = \"tokens\"\ngoodput = \"{goodput}\"\n[load]\nconnections = 2\nrequests = 20\n",
            t.addr()
        )
    };
    let file = write(dir.path(), "good.toml", &body("ttft:10s"));
    let out_dir = dir.path().join("out");
    let out = study(&[file.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let m = manifest(&out_dir);
    let case = m["cases"][0]["file"].as_str().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join(case)).unwrap()).unwrap();
    let g = &doc["steps"][0]["events"]["goodput"];
    assert_eq!((g["answers"].as_u64(), g["percent"].as_f64()), (Some(20), Some(100.0)), "{g}");
    let bad = write(dir.path(), "bad.toml", &body("ttft:soon"));
    let out = study(&[bad.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("goodput 'ttft:soon'") && out.stderr.lines().count() == 1, "{}", out.stderr);
}
