//! Agents run by a real orchestrator: a Docker daemon of the test's own (data under a temporary directory, its own
//! socket), a one-node Swarm on 127.0.0.1, the image scripts/image.sh builds with nothing pulled, and the script
//! `hakaru swarm service` prints, run by sh. Three agents load `hakaru serve` on the host's loopback; the collector
//! merges exactly the requests asked, a third from each, as many as the server counted; an agent made to fail is
//! reported by the collector, which merges the other two with --allow-partial.
//!
//! It needs root, `docker` and `dockerd` (scripts/test.sh installs Debian's docker.io when it runs as root);
//! without them it says why in one line on stderr and passes. Everything it creates is removed when it ends.

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

const TAG: &str = "hakaru:swarm-test";

/// Why this machine cannot run the test, if it cannot.
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid only reads this process's effective user id.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (dockerd needs it)".into());
    }
    for tool in ["docker", "dockerd"] {
        let found = Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !found.is_ok_and(|s| s.success()) {
            return Some(format!("no {tool} (scripts/test.sh installs docker.io when run as root)"));
        }
    }
    None
}

/// A Docker daemon of this test's own, with a one-node Swarm: stopped and its directory removed when dropped.
struct Daemon {
    dir: tempfile::TempDir,
    child: Child,
}

impl Daemon {
    fn start() -> Result<Daemon, String> {
        let dir = tempfile::Builder::new().prefix("hakaru-swarm-test").tempdir().map_err(|e| e.to_string())?;
        let log = std::fs::File::create(dir.path().join("dockerd.log")).map_err(|e| e.to_string())?;
        let child = Command::new("dockerd")
            .arg("--data-root")
            .arg(dir.path().join("data"))
            .arg("--exec-root")
            .arg(dir.path().join("exec"))
            .arg("--pidfile")
            .arg(dir.path().join("dockerd.pid"))
            .arg("--host")
            .arg(format!("unix://{}", dir.path().join("docker.sock").display()))
            // No bridge and no iptables rules: the agents use the host's network, and nothing of the machine's
            // firewall is touched.
            .args(["--bridge", "none", "--iptables=false"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("dockerd does not start: {e}"))?;
        let daemon = Daemon { dir, child };
        let up = (0..600).any(|_| {
            let ok = daemon.docker(&["info"]).status.success();
            if !ok {
                std::thread::sleep(Duration::from_millis(100));
            }
            ok
        });
        if !up {
            return Err(format!("dockerd did not answer within 60 s: {}", daemon.log()));
        }
        let port = common::free_port().to_string();
        let init = daemon.docker(&[
            "swarm",
            "init",
            "--advertise-addr",
            "127.0.0.1",
            "--listen-addr",
            &format!("127.0.0.1:{port}"),
        ]);
        if !init.status.success() {
            return Err(format!("docker swarm init failed: {}", String::from_utf8_lossy(&init.stderr)));
        }
        Ok(daemon)
    }

    fn socket(&self) -> String {
        format!("unix://{}", self.dir.path().join("docker.sock").display())
    }

    fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker").args(args).env("DOCKER_HOST", self.socket()).output().expect("docker runs")
    }

    fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default();
        text.lines().rev().take(5).collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let services = self.docker(&["service", "ls", "-q"]);
        for id in String::from_utf8_lossy(&services.stdout).split_whitespace() {
            self.docker(&["service", "rm", id]);
        }
        self.docker(&["swarm", "leave", "--force"]);
        // SIGTERM: dockerd stops its containerd and unmounts its layers before it exits.
        // SAFETY: kill only sends a signal to the daemon this test started.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
        // dockerd leaves its network namespace's mount (exec/netns/default) behind: detached here, deepest first,
        // so the directory can be removed.
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let dir = self.dir.path().to_string_lossy().to_string();
        let mut ours: Vec<&str> =
            mounts.lines().filter_map(|l| l.split(' ').nth(1)).filter(|m| m.starts_with(&dir)).collect();
        ours.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in ours {
            let c = std::ffi::CString::new(m).unwrap();
            // SAFETY: a NUL-terminated path under this test's own directory.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// Runs `hakaru swarm service` with `args`, then its script with sh against the test's daemon.
fn deploy(daemon: &Daemon, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hakaru")).args(["swarm", "service"]).args(args).output().unwrap();
    assert!(out.status.success(), "swarm service: {}", String::from_utf8_lossy(&out.stderr));
    let script = String::from_utf8(out.stdout).unwrap();
    let mut sh = Command::new("sh")
        .env("DOCKER_HOST", daemon.socket())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sh.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let ran = sh.wait_with_output().unwrap();
    assert!(ran.status.success(), "the script failed: {}\n{script}", String::from_utf8_lossy(&ran.stderr));
    script
}

/// Waits for the collector's merged document (bounded: the start is 20 s ahead, the load is short).
fn merged(daemon: &Daemon, run_dir: &Path, service: &str) -> Value {
    let path = run_dir.join("merged.json");
    let mut found = None;
    common::wait_for(Duration::from_secs(240), || {
        found = std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok());
        found.is_some()
    });
    found.unwrap_or_else(|| {
        let logs = daemon.docker(&["service", "logs", service]);
        panic!("no merged document: {}", String::from_utf8_lossy(&logs.stderr))
    })
}

/// A start 20 s from now in Unix seconds, and the run's directory under `results` that follows from it.
fn start(results: &Path) -> (String, PathBuf) {
    let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 20;
    (at.to_string(), results.join(format!("run-{at}")))
}

#[test]
fn three_swarm_agents_merge_exactly_and_a_failed_one_is_reported() {
    if let Some(why) = cannot_run() {
        common::skip("three_swarm_agents_merge_exactly_and_a_failed_one_is_reported", &why);
        return;
    }
    let daemon = match Daemon::start() {
        Ok(d) => d,
        Err(why) => {
            common::skip("three_swarm_agents_merge_exactly_and_a_failed_one_is_reported", &why);
            return;
        }
    };
    let build = Command::new("scripts/image.sh")
        .arg(TAG)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("DOCKER_HOST", daemon.socket())
        // A quicker build than release (no fat LTO): this test checks the orchestration, not the speed.
        .env("HAKARU_IMAGE_PROFILE", "image-test")
        .output()
        .unwrap();
    assert!(build.status.success(), "scripts/image.sh: {}", String::from_utf8_lossy(&build.stderr));
    let server = common::target();
    let url = format!("http://{}/", server.addr());
    let results = daemon.dir.path().join("results");
    let results_flag = results.to_str().unwrap();

    // Three agents, 300 requests: each runs its third, the collector merges all of them.
    let (at, run_dir) = start(&results);
    let common_flags = ["--agents", "3", "--image", TAG, "--results", results_flag, "--start-at", &at];
    let mut args = common_flags.to_vec();
    // A secret header reaches the agents through a Docker secret (a file under /run/secrets), never an argument.
    args.extend(["--name", "hk", "--", "run", "-n", "300", "-c", "3", "-H", "Authorization: Bearer S3CRET", &url]);
    let script = deploy(&daemon, &args);
    assert_eq!(script.matches("S3CRET").count(), 1, "only the docker secret create line: {script}");
    let doc = merged(&daemon, &run_dir, "hk-merge");
    let inspect = daemon.docker(&["service", "inspect", "hk"]);
    assert!(inspect.status.success());
    assert!(!String::from_utf8_lossy(&inspect.stdout).contains("S3CRET"), "the service's spec holds no secret");
    assert!(!doc.to_string().contains("S3CRET"), "the merged document holds no secret");
    let step = &doc["steps"][0];
    assert_eq!(step["requests"], 300, "{step}");
    assert_eq!(step["ok"], 300);
    let shares: Vec<(String, u64)> = step["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["segment"].as_str().unwrap().to_string(), a["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(shares, [("0/3".into(), 100), ("1/3".into(), 100), ("2/3".into(), 100)]);
    let served = common::target_status(server.addr())["n_requests"].as_u64().unwrap();
    assert_eq!(served, 300, "the server's own count");

    // Agent 1 cannot write its document (a directory stands at its name): it fails at once and says so in its
    // failure file; the collector reports it and merges the other two.
    let (at, run_dir) = start(&results);
    std::fs::create_dir_all(run_dir.join("agent-1.json")).unwrap();
    let mut args = common_flags.to_vec();
    args[7] = &at;
    args.extend(["--name", "hk2", "--allow-partial", "--", "run", "-n", "300", "-c", "3", &url]);
    deploy(&daemon, &args);
    let doc = merged(&daemon, &run_dir, "hk2-merge");
    assert_eq!(doc["steps"][0]["requests"], 200);
    assert_eq!(doc["missing_segments"], serde_json::json!(["1/3"]), "{}", doc["missing_segments"]);
    let failed = std::fs::read_to_string(run_dir.join("agent-1.failed")).unwrap();
    assert!(failed.starts_with("exit code 2:"), "{failed}");
    let mut said = String::new();
    common::wait_for(Duration::from_secs(60), || {
        let logs = daemon.docker(&["service", "logs", "--raw", "hk2-merge"]);
        said = String::from_utf8_lossy(&logs.stdout).to_string() + &String::from_utf8_lossy(&logs.stderr);
        said.contains("agent 1/3 failed: exit code 2:")
    });
    assert_eq!(common::target_status(server.addr())["n_requests"], 500);
}

/// Runs the hakaru binary with `args` and the environment `env`, nothing else of this process's.
fn agent(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hakaru"));
    cmd.args(args).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.envs(env.iter().copied()).output().unwrap()
}

fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn an_agent_without_its_place_in_the_environment_is_refused_in_one_line_naming_both_variables() {
    let dir = tempfile::tempdir().unwrap();
    let failed = dir.path().join("agent-{index}.failed");
    let failed = failed.to_str().unwrap();
    let run = ["run", "-n", "30", "--segment", "auto/3", "http://127.0.0.1:9/"];
    let said = one_line(&agent(&run, &[]));
    assert!(said.contains("JOB_COMPLETION_INDEX") && said.contains("HAKARU_AGENT_SLOT"), "{said}");
    // Slot 4 of 3 replicas: refused, and the failure file follows the index it was given (3, from 1-based slot 4).
    let said = one_line(&agent(&run, &[("HAKARU_AGENT_SLOT", "4"), ("HAKARU_FAILURE_FILE", failed)]));
    assert!(said.contains("HAKARU_AGENT_SLOT=4 (from 1) is agent 4 of only 3"), "{said}");
    let written = std::fs::read_to_string(dir.path().join("agent-3.failed")).unwrap();
    assert!(written.starts_with("exit code 2: --segment 'auto/3'"), "{written}");
    // Swarm's template left unexpanded (given as an argument, or to a plain docker run) is named.
    let said = one_line(&agent(&run, &[("HAKARU_AGENT_SLOT", "{{.Task.Slot}}"), ("HAKARU_FAILURE_FILE", failed)]));
    assert!(said.contains("{{.Task.Slot}}"), "{said}");
    // Its failure file keeps the literal name: the collector says so at once instead of waiting out its timeout.
    assert!(dir.path().join("agent-{index}.failed").is_file());
    let dir_text = dir.path().to_str().unwrap();
    let out = agent(&["collect", dir_text, "--agents", "3", "--timeout", "10m"], &[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("an agent could not learn its index") && said.contains("{{.Task.Slot}}"), "{said}");
    // {index} without a segment has nothing to stand for.
    let said = one_line(&agent(&["run", "-n", "3", "--json", "a-{index}.json", "http://127.0.0.1:9/"], &[]));
    assert!(said.starts_with("hakaru: error: --json 'a-{index}.json'"), "{said}");
}

#[test]
fn each_agent_finds_its_segment_and_file_names_and_the_collector_merges_them() {
    let server = common::target();
    let url = format!("http://{}/", server.addr());
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (json, done, failed) = (at("agent-{index}.json"), at("agent-{index}.done"), at("agent-{index}.failed"));
    // A secret argument from a file, as a Docker secret is mounted: the agent reads it, nothing shows it.
    let secret = dir.path().join("args");
    std::fs::write(&secret, r#"["-H", "Authorization: Bearer S3CRET"]"#).unwrap();
    let run = ["run", "-n", "90", "-c", "3", "-q", "--no-history", "--segment", "auto/3", "--json", &json, &url];
    let secret_file = secret.to_str().unwrap();
    // Kubernetes' index from 0 for the first agent, Swarm's slots from 1 for the others.
    for (var, value) in [("JOB_COMPLETION_INDEX", "0"), ("HAKARU_AGENT_SLOT", "2"), ("HAKARU_AGENT_SLOT", "3")] {
        let env = [
            (var, value),
            ("HAKARU_DONE_FILE", done.as_str()),
            ("HAKARU_FAILURE_FILE", failed.as_str()),
            ("HAKARU_SECRET_ARGS_FILE", secret_file),
        ];
        let out = agent(&run, &env);
        assert!(out.status.success(), "{var}={value}: {}", String::from_utf8_lossy(&out.stderr));
    }
    for i in 0..3 {
        assert_eq!(std::fs::read_to_string(dir.path().join(format!("agent-{i}.done"))).unwrap(), "exit code 0\n");
        let doc = std::fs::read_to_string(dir.path().join(format!("agent-{i}.json"))).unwrap();
        assert!(doc.contains(&format!("\"segment\": \"{i}/3\"")), "agent {i}");
        assert!(!doc.contains("S3CRET"), "agent {i}'s document holds the secret");
        assert!(doc.contains("Authorization: <redacted>"), "agent {i} took the header from the file");
    }
    let out = agent(&["collect", dir.path().to_str().unwrap(), "--agents", "3", "-o", &at("merged.json")], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(at("merged.json")).unwrap()).unwrap();
    assert_eq!(merged["steps"][0]["requests"], 90);
    assert_eq!(merged["missing_segments"], serde_json::json!([]));
    assert_eq!(common::target_status(server.addr())["n_requests"], 90);
    // A fourth agent that never ends: the collector gives up at its timeout, naming it.
    let out = agent(&["collect", dir.path().to_str().unwrap(), "--agents", "4", "--timeout", "1s"], &[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("timed out waiting for agents 3 of 4"), "{said}");
    // A secret file that is not a JSON list: one line naming the variable and the file, never its content.
    std::fs::write(&secret, "Bearer S3CRET").unwrap();
    let said = one_line(&agent(&["run", "-n", "1", &url], &[("HAKARU_SECRET_ARGS_FILE", secret_file)]));
    assert!(said.contains("HAKARU_SECRET_ARGS_FILE") && !said.contains("S3CRET"), "{said}");
}

#[test]
fn bad_service_flags_and_agents_commands_are_refused_in_one_line_before_any_script() {
    let service = |extra: &[&str]| {
        let mut a = vec!["swarm", "service", "--agents", "3", "--image", "hakaru:latest"];
        a.extend_from_slice(extra);
        let out = agent(&a, &[]);
        assert!(out.stdout.is_empty(), "printed a script anyway");
        one_line(&out)
    };
    assert!(service(&["--", "run", "--conections", "3", "http://h/"]).contains("'--connections'"));
    assert!(service(&["--", "run", "-c", "2", "http://h/"]).contains("cannot be split over 3 agents"));
    assert!(service(&["--", "run", "--segment", "0/3", "http://h/"]).contains("sets --segment"));
    assert!(service(&["--name", "a/b", "--", "run", "http://h/"]).contains("--name 'a/b'"));
    assert!(service(&["--results", "rel/dir", "--", "run", "http://h/"]).contains("--results 'rel/dir'"));
    let said = one_line(&agent(&["collect", "/nonexistent-dir", "--agents", "2"], &[]));
    assert!(said.contains("'/nonexistent-dir': not a directory"), "{said}");
}

/// scripts/image.sh's helpers (scripts/lib.sh), run by bash: where cargo builds, and what a missing binary is.
fn lib_sh(script: &str, configure: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &format!(". scripts/lib.sh; {script}")]).current_dir(env!("CARGO_MANIFEST_DIR"));
    configure(&mut cmd);
    cmd.output().unwrap()
}

#[test]
fn the_image_script_looks_where_cargo_builds_and_says_not_found() {
    // A target directory of the user's own (CARGO_TARGET_DIR) is where the image's binary is looked for.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = lib_sh("cargo_target_dir", |c| {
        c.env("CARGO_TARGET_DIR", elsewhere.path());
    });
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), elsewhere.path().to_str().unwrap());
    let out = lib_sh("cargo_target_dir", |c| {
        c.env_remove("CARGO_TARGET_DIR").env_remove("CARGO_BUILD_TARGET_DIR");
    });
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), default.to_str().unwrap());
    // A binary that is not there is "not found", not "not static".
    let missing = elsewhere.path().join("release/hakaru");
    let out = lib_sh(&format!("static_binary scripts/image.sh '{}'", missing.display()), |_| {});
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("release/hakaru not found") && !err.contains("not static"), "{err}");
    // One that is there and dynamic (the test binary itself) is "not static".
    let me = std::env::current_exe().unwrap();
    let out = lib_sh(&format!("static_binary scripts/image.sh '{}'", me.display()), |_| {});
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not static"), "{}", String::from_utf8_lossy(&out.stderr));
}
