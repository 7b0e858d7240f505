//! The bottleneck verdict sees the whole machine: `hakaru serve` and hakaru pinned with taskset to one core share
//! it, full, and the sweep names that core as the limit (neither is CPU-bound alone), each step warning that the
//! figures measure the sharing. Skipped, saying why, where taskset is missing.

use crate::common;

use std::process::Command;
use std::time::Duration;

/// The first CPU this process may run on: one the tests' own affinity allows.
fn first_cpu() -> usize {
    let cpus = hakaru::monitor::cpus_allowed(0).expect("sched_getaffinity answers");
    cpus[0]
}

/// Why taskset cannot pin here, if it cannot.
fn cannot_pin() -> Option<String> {
    let out = Command::new("taskset").args(["-c", &first_cpu().to_string(), "true"]).output();
    match out {
        Err(e) => Some(format!("no taskset ({e}); util-linux has it")),
        Ok(o) if !o.status.success() => Some(format!("taskset fails: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Ok(_) => None,
    }
}

/// `hakaru serve` pinned to `cpu` by taskset, killed when dropped.
fn pinned_server(cpu: usize) -> common::Served {
    let mut taskset = Command::new("taskset");
    taskset.args(["-c", &cpu.to_string(), env!("CARGO_BIN_EXE_hakaru")]);
    common::Served::start_by(taskset)
}

#[test]
fn a_core_shared_by_the_server_and_hakaru_is_named_as_the_limit() {
    if let Some(why) = cannot_pin() {
        common::skip("a_core_shared_by_the_server_and_hakaru_is_named_as_the_limit", &why);
        return;
    }
    let cpu = first_cpu();
    let server = pinned_server(cpu);
    common::wait_listening(server.addr.parse().unwrap(), Duration::from_secs(30));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let url = format!("http://{}/", server.addr);
    let pid = server.pid().to_string();
    let out = Command::new("taskset")
        .args(["-c", &cpu.to_string(), env!("CARGO_BIN_EXE_hakaru"), "sweep", "-q", "--clients", "1,2,4"])
        .args(["-d", "1s", "--interval", "0s", "--monitor-pid", &pid, "--json", json.to_str().unwrap(), &url])
        .env("HAKARU_DB", dir.path().join("history.db"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = &doc["analysis"];
    // One core, both of them on it, and answers as fast as it allows: the core is full of the two's work. On a
    // machine busy with other work that same core is shared with that work too, and said so: either way the
    // machine is the limit, never "no limit was reached yet" or "a worker pool, a lock".
    let bottleneck = a["bottleneck"].as_str().unwrap();
    assert!(matches!(bottleneck, "shared_cpu" | "busy_machine"), "{a}");
    let step = doc["steps"].as_array().unwrap().last().unwrap();
    let machine = &step["machine"];
    assert_eq!(machine["generator_cpus"], serde_json::json!([cpu]), "{machine}");
    assert_eq!(machine["server_cpus"], serde_json::json!([cpu]), "{machine}");
    let summary = a["summary"].to_string();
    let warnings = doc["warnings"].to_string();
    if bottleneck == "shared_cpu" {
        assert!(summary.contains(&format!("the server and hakaru share 1 core (CPU {cpu})")), "{summary}");
        assert!(warnings.contains("the figures measure the two sharing it"), "{warnings}");
    } else {
        eprintln!("tests/machine.rs: the core was busy with other work too: {summary}");
        assert!(summary.contains("the machine was busy with other work"), "{summary}");
        assert!(warnings.contains("the figures measure the sharing with that work"), "{warnings}");
    }
    assert!(stdout.contains("that is the limit") || stdout.contains("that may be the limit"), "{stdout}");
    let errors = common::schema_errors(&doc);
    assert!(errors.is_empty(), "the document breaks the schema: {errors:?}");
}
