//! Agents run by a real orchestrator: a Docker daemon of the test's own (data under a temporary directory, its own
//! socket), a one-node Swarm on 127.0.0.1, the image scripts/image.sh builds with nothing pulled, and the script
//! `hakaru swarm service` prints, run by sh. Three agents load `hakaru serve` on the host's loopback; the collector
//! merges exactly the requests asked, a third from each, as many as the server counted; an agent made to fail is
//! reported by the collector, which merges the other two with --allow-partial.
//!
//! It needs root, `docker` and `dockerd` (scripts/test.sh installs Debian's docker.io when it runs as root);
//! without them it says why in one line on stderr and passes. Everything it creates is removed when it ends.

mod common;

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

/// Says a skip on stderr past the test harness's capture, so it shows without --nocapture.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
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
        say(&format!("tests/swarm.rs: skipped: {why}"));
        return;
    }
    let daemon = match Daemon::start() {
        Ok(d) => d,
        Err(why) => {
            say(&format!("tests/swarm.rs: skipped: {why}"));
            return;
        }
    };
    let build = Command::new("scripts/image.sh")
        .arg(TAG)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("DOCKER_HOST", daemon.socket())
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
    args.extend(["--name", "hk", "--", "run", "-n", "300", "-c", "3", &url]);
    deploy(&daemon, &args);
    let doc = merged(&daemon, &run_dir, "hk-merge");
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
