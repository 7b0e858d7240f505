//! The trust issue's smaller items: framing headers hakaru sets itself are refused, a huge URL is not echoed, an
//! international host is encoded (not refused), a read-only history still lists, and a sweep step cut short by a
//! signal has drnbench's qps over the time it ran, output on a full disk does not turn an exit code into a
//! panic's, and a socket the kernel connects to itself is not a server.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{hakaru, target};

#[test]
fn headers_that_frame_the_message_are_refused_naming_the_fix() {
    let t = target();
    let url = format!("http://{}/", t.addr());
    for (header, says) in [
        ("Content-Length: 5", "hakaru frames every request itself"),
        ("transfer-encoding: chunked", "hakaru frames every request itself"),
        ("Connection: close", "--no-keepalive"),
    ] {
        let out = hakaru(&["run", "-n", "5", "-H", header, &url]);
        assert_eq!(out.code, 2, "{header}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{header}: {}", out.stderr);
    }
    // Keep-alive said out loud changes nothing and is taken.
    let out = hakaru(&["run", "-n", "5", "-H", "Connection: keep-alive", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_huge_url_is_refused_without_being_echoed_and_an_international_host_is_encoded() {
    let long = format!("http://127.0.0.1:1/{}", "a".repeat(100_000));
    let out = hakaru(&["run", "-n", "1", &long]);
    assert_eq!(out.code, 2, "{}", &out.stderr[..out.stderr.len().min(300)]);
    assert!(out.stderr.len() < 600, "echoed: {} bytes", out.stderr.len());
    assert!(out.stderr.contains("a URL of 100019 bytes, longer than the 65534"), "{}", out.stderr);
    // The host is looked up in its ASCII form: refused only because .invalid never resolves.
    let out = hakaru(&["run", "-n", "1", "http://bücher.invalid/"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("host 'xn--bcher-kva.invalid' does not resolve"), "{}", out.stderr);
}

#[test]
fn a_history_in_a_read_only_directory_still_lists_and_shows() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let run = hakaru(&["run", "-q", "-n", "10", "--db", db.to_str().unwrap(), &format!("http://{}/", t.addr())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The directory made read-only for one command, in a mount namespace of its own (root is not stopped by
    // permission bits, only by a read-only mount).
    let d = dir.path().display();
    let exe = env!("CARGO_BIN_EXE_hakaru");
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,ro,bind {d} && {exe} history --db {db} && {exe} show last --db {db}",
        db = db.display()
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().expect("unshare (util-linux)");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(" 1  ") && stdout.contains("hakaru run"), "{stdout}");
}

#[test]
fn a_sweep_step_cut_short_has_drnbenchs_qps_over_the_time_it_ran() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("d.csv");
    let json = dir.path().join("s.json");
    let wide = dir.path().join("w.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["sweep", "--clients", "1,2", "-d", "20s", "--interval", "0s", "--no-history", "-o"])
        .arg(&csv)
        .arg("--csv")
        .arg(&wide)
        .arg("--json")
        .arg(&json)
        .arg(format!("http://{}/?delay=1ms", t.addr()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The table's header line is printed as the first step starts; a second into it (a 1 ms target answers hundreds
    // of requests by then, even on a busy machine), Ctrl-C.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let header = lines.by_ref().map_while(Result::ok).find(|l| l.contains("ok/s"));
    assert!(header.is_some(), "the sweep began");
    std::thread::sleep(Duration::from_secs(1));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    lines.for_each(drop);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let step = &doc["steps"][0];
    let ran = step["duration_s"].as_f64().unwrap();
    assert!(ran < 20.0, "cut short: {ran}");
    let qps: f64 =
        std::fs::read_to_string(&csv).unwrap().lines().nth(1).unwrap().split(',').nth(2).unwrap().parse().unwrap();
    let measured = step["requests"].as_f64().unwrap() / ran;
    assert!(
        (qps - measured).abs() <= 0.01 * measured + 0.01,
        "drnbench qps {qps}, requests over the time ran {measured}"
    );
    // hakaru's own CSV marks the step cut short (drnbench's keeps drnbench's columns).
    let wide = std::fs::read_to_string(&wide).unwrap();
    assert!(wide.lines().next().unwrap().ends_with(",partial"), "{wide}");
    assert!(wide.lines().nth(1).unwrap().ends_with(",yes"), "{wide}");
    // The rest of the sweep never ran.
    assert_eq!(doc["steps"].as_array().unwrap().len(), 1);
}

#[test]
fn with_stdout_and_stderr_on_a_full_disk_the_exit_code_still_says_what_happened() {
    // /dev/full fails every write with ENOSPC, as a study case's log does on a full disk. eprintln! would panic
    // there, and a refusal (2) or a failure (1) would end as a panic's 101.
    let db = tempfile::tempdir().unwrap();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for (args, want) in [
        (&["run", "-n", "1", "--rate", "abc", "http://127.0.0.1:1/"][..], 2),
        (&["run", "-n", "1", "--no-history", "http://127.0.0.1:1/"][..], 2),
        (&["--version"][..], 0),
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(args)
            .env("HAKARU_DB", db.path().join("h.db"))
            .stdout(full())
            .stderr(full())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(want), "{args:?}");
    }
}

const SELF_CONNECT: &str = "a_port_nothing_listens_on_is_refused_even_when_the_kernel_connects_the_socket_to_itself";

#[test]
fn a_port_nothing_listens_on_is_refused_even_when_the_kernel_connects_the_socket_to_itself() {
    // SAFETY: geteuid only reads this process's effective user id.
    if unsafe { libc::geteuid() } != 0 {
        common::skip(SELF_CONNECT, "creating a network namespace needs root (CI runs the tests as root)");
        return;
    }
    // A network namespace of its own whose ephemeral ports are one port, 40000: a connection to 127.0.0.1:40000,
    // where nothing listens, gets that port as its own, and TCP's simultaneous open connects it to itself. Its
    // requests would come back as answers.
    let script = format!(
        "ip link set lo up && {{ echo '40000 40000' > /proc/sys/net/ipv4/ip_local_port_range || exit 77; }} && \
         exec {} run -n 3 --no-history http://127.0.0.1:40000/",
        env!("CARGO_BIN_EXE_hakaru")
    );
    let out = Command::new("unshare").args(["--net", "sh", "-c", &script]).output().expect("unshare (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Skipped, saying why, where the namespace cannot be made as asked: /proc/sys read-only (77), no `ip` (127),
    // unshare not allowed.
    if matches!(out.status.code(), Some(77 | 127)) || stderr.contains("unshare failed") {
        common::skip(SELF_CONNECT, &format!("this machine cannot make the network namespace asked: {stderr}"));
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot connect to 127.0.0.1:40000 (connection refused)"), "{stderr}");
}
