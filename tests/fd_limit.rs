//! Open-file limits: `-c` above `ulimit -n` must neither hang nor spin. The soft limit is raised when the hard
//! one allows; connections that still find no descriptor are counted as `fd_limit`, and the run ends on time.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{hakaru_with, target};

/// Runs the command with RLIMIT_NOFILE set to `soft`:`hard`, as `prlimit --nofile=soft:hard` would.
fn nofile(cmd: &mut Command, soft: u64, hard: u64) {
    // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
}

#[test]
fn connections_beyond_the_hard_limit_are_counted_as_fd_limit_and_the_run_ends_on_time() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let started = Instant::now();
    // One thread: before the fix, a client whose socket() failed looped without ever yielding, so the deadline
    // never fired and the run hung at 100 % CPU.
    let out = hakaru_with(&["run", "-q", "-t", "1", "-c", "200", "-d", "2s", &url], Duration::from_secs(30), |cmd| {
        nofile(cmd, 64, 64)
    });
    let took = started.elapsed();
    assert_eq!(out.code, 0, "killed after {took:?} or failed; stderr: {}", out.stderr);
    assert!(took < Duration::from_secs(15), "{took:?}");
    let step = out.step();
    assert!(out.status_count("200") > 0, "the connections that fit carry the load: {step}");
    let max_open = step["connections"]["max_open"].as_u64().unwrap();
    assert!((1..64).contains(&max_open), "max_open {max_open}");
    let fd_errors = out.error_count("fd_limit");
    assert!(fd_errors > 0, "{}", step["error_kinds"]);
    // Clients without a descriptor back off (5 ms doubling to 500 ms): about ten attempts each in 2 s, not
    // the millions of a busy loop.
    assert!(fd_errors < 200 * 20, "{fd_errors} fd_limit errors: the clients spin");
    let kinds: Vec<&str> =
        step["error_kinds"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["fd_limit"], "{}", step["error_kinds"]);
    let sample = step["error_kinds"][0]["sample"].as_str().unwrap();
    assert!(sample.contains("ulimit -n"), "{sample}");
    assert!(out.stdout.contains("fd_limit"), "{}", out.stdout);
    // Said before the load, on stderr and in the document: how many can be open, and why.
    assert!(
        out.stderr.contains("hakaru: warning: 200 connections need about") && out.stderr.contains("ulimit -n"),
        "{}",
        out.stderr
    );
    let warnings = out.doc()["warnings"].to_string();
    assert!(warnings.contains("the limit is 64 (ulimit -n; hard limit 64)"), "{warnings}");
}

#[test]
fn a_soft_limit_below_the_hard_one_is_raised_so_every_connection_opens() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    let out = hakaru_with(&["run", "-q", "-t", "2", "-c", "200", "-n", "2000", &url], Duration::from_secs(30), |cmd| {
        nofile(cmd, 64, 4096)
    });
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let step = out.step();
    assert_eq!(step["errors"], 0, "{}", step["error_kinds"]);
    assert_eq!(out.status_count("200"), 2000);
    assert_eq!(step["connections"]["max_open"], 200, "{}", step["connections"]);
}

#[test]
fn pipelined_clients_without_a_descriptor_back_off_and_the_run_ends_on_time() {
    // Found in review: a pipelined batch whose connect failed at once went round again without waiting.
    let r = common::redis();
    let url = format!("redis://127.0.0.1:{}", r.port);
    let started = Instant::now();
    let out = hakaru_with(
        &["kv", "-q", "-t", "1", "-c", "60", "--pipeline", "4", "-d", "2s", "--keys", "10", &url],
        Duration::from_secs(30),
        |cmd| nofile(cmd, 40, 40),
    );
    let took = started.elapsed();
    assert_eq!(out.code, 0, "killed after {took:?} or failed; stderr: {}", out.stderr);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(out.stdout.contains("fd_limit"), "{}", out.stdout);
}

/// nghttpd serving h2c on a free port, killed when dropped.
struct Nghttpd(std::process::Child, #[allow(dead_code)] tempfile::TempDir, u16);

impl Nghttpd {
    fn start() -> Nghttpd {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "hello\n").unwrap();
        let port = common::free_port();
        let child = Command::new("nghttpd")
            .args(["--no-tls", "-d"])
            .arg(dir.path())
            .arg(port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nghttpd starts");
        common::wait_listening(std::net::SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(10));
        Nghttpd(child, dir, port)
    }
}

impl Drop for Nghttpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_limit_too_low_for_one_connection_is_one_line_and_exit_2_over_http1_http2_and_kv() {
    // Found in review: `ulimit -n 10` with -c 50 panicked a load thread whose event loop found no descriptor.
    let t = target();
    let h2 = Nghttpd::start();
    let r = common::redis();
    let http1 = format!("http://{}/", t.addr());
    let http2 = format!("http://127.0.0.1:{}/index.html", h2.2);
    let kv = format!("redis://127.0.0.1:{}", r.port);
    for args in [
        &["run", "-q", "-t", "4", "-c", "50", "-d", "2s", &http1][..],
        &["run", "-q", "-t", "4", "--http2", "-c", "50", "-d", "2s", &http2][..],
        &["kv", "-q", "-t", "4", "-c", "50", "-d", "2s", "--keys", "10", &kv][..],
    ] {
        let out = hakaru_with(args, Duration::from_secs(30), |cmd| nofile(cmd, 10, 10));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panick"), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("ulimit -n") && out.stderr.contains("-c 50"), "{args:?}: {}", out.stderr);
    }
}
