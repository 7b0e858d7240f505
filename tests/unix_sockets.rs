//! Unix sockets against real servers: nginx (`listen unix:`), redis-server (`--unixsocket`) and memcached (`-s`),
//! each started by the test on a socket in a temporary directory and counted by the server itself.
use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{hakaru, kv_json, wait_for};

/// A server process on a Unix socket, killed when dropped (its directory goes with it).
struct OnSocket {
    child: Child,
    sock: PathBuf,
    dir: tempfile::TempDir,
}

impl Drop for OnSocket {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OnSocket {
    fn sock(&self) -> &str {
        self.sock.to_str().unwrap()
    }
}

/// Waits until something accepts connections on the socket.
fn wait_socket(path: &Path) {
    wait_for(Duration::from_secs(10), || UnixStream::connect(path).is_ok());
}

/// nginx on `n.sock` (HTTP/1.1) and `h2.sock` (h2c), logging every request of `/` to access.log.
fn nginx() -> OnSocket {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().to_str().unwrap();
    let conf = format!(
        "worker_processes 1;\ndaemon off;\nmaster_process off;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  log_format short '$request $status $host';\n  client_body_temp_path {p}/body;\n\
         proxy_temp_path {p}/proxy;\n  fastcgi_temp_path {p}/fcgi;\n  uwsgi_temp_path {p}/uwsgi;\n  scgi_temp_path {p}/scgi;\n\
         keepalive_requests 1000000;\n\
         server {{\n    listen unix:{p}/n.sock;\n    listen unix:{p}/h2.sock http2;\n\
         location = / {{ access_log {p}/access.log short; default_type text/plain; return 200 \"hello\\n\"; }}\n  }}\n}}\n"
    );
    std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
    let child = common::spawn_nginx(dir.path());
    let sock = dir.path().join("n.sock");
    wait_socket(&sock);
    wait_socket(&dir.path().join("h2.sock"));
    OnSocket { child, sock, dir }
}

fn log_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("access.log")).unwrap_or_default().lines().map(String::from).collect()
}

#[test]
fn http_over_a_unix_socket_reaches_nginx_exactly_n_times_with_the_urls_host() {
    let n = nginx();
    let out = hakaru(&["run", "-q", "-c", "4", "-n", "1000", "--unix-socket", n.sock(), "http://app.internal/"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 1000, "{}", out.stdout);
    wait_for(Duration::from_secs(30), || log_lines(n.dir.path()).len() >= 1000);
    let lines = log_lines(n.dir.path());
    assert_eq!(lines.len(), 1000);
    // The Host header is the URL's: the socket takes the place of the address only.
    assert!(lines.iter().all(|l| l == "GET / HTTP/1.1 200 app.internal"), "{:?}", &lines[..3]);
    assert_eq!(out.doc()["settings"]["unix_socket"], n.sock(), "the document says where connections went");
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
    // The server watcher found the process behind the socket (/proc/net/unix's inode in nginx's descriptors).
    assert_eq!(out.step()["server"]["pids"], serde_json::json!([n.child.id()]), "{}", out.step());
}

#[test]
fn http2_prior_knowledge_goes_over_a_unix_socket_too() {
    let n = nginx();
    let h2 = n.dir.path().join("h2.sock");
    let out = hakaru(&[
        "run",
        "-q",
        "--http2",
        "-c",
        "2",
        "--streams",
        "4",
        "-n",
        "400",
        "--unix-socket",
        h2.to_str().unwrap(),
        "http://localhost/",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.status_count("200"), 400, "{}", out.stdout);
    wait_for(Duration::from_secs(30), || log_lines(n.dir.path()).len() >= 400);
    let lines = log_lines(n.dir.path());
    assert_eq!(lines.len(), 400);
    assert!(lines.iter().all(|l| l == "GET / HTTP/2.0 200 localhost"), "{:?}", &lines[..3]);
}

fn redis_on_socket() -> OnSocket {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("r.sock");
    let child = Command::new("redis-server")
        .args(["--port", "0", "--unixsocket", sock.to_str().unwrap(), "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (scripts/test.sh installs it)");
    wait_socket(&sock);
    OnSocket { child, sock, dir }
}

fn memcached_on_socket() -> OnSocket {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("m.sock");
    let child = Command::new("memcached")
        .args(["-s", sock.to_str().unwrap(), "-u", "root"])
        .stdout(Stdio::null())
        .spawn()
        .expect("memcached is installed (scripts/test.sh installs it)");
    wait_socket(&sock);
    OnSocket { child, sock, dir }
}

/// One command's reply on the socket, read until `end` closes it.
fn ask(sock: &Path, command: &[u8], end: &str) -> String {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(command).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&got).ends_with(end) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before {end:?}");
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A field of Redis's INFO (`cmdstat_set` gives its `calls`), or memcached's `stats`; 0 when absent.
fn stat(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|rest| rest.trim_start_matches("calls=").split([',', '\r']).next().unwrap().trim().parse().unwrap())
        .unwrap_or(0)
}

#[test]
fn kv_over_redis_and_memcached_unix_sockets_agrees_with_their_counts() {
    let r = redis_on_socket();
    for url in [format!("redis+unix://{}", r.sock()), format!("unix:{}", r.sock())] {
        ask(&r.sock, b"CONFIG RESETSTAT\r\n", "\r\n");
        let (code, said, doc) = kv_json(&["-c", "4", "-n", "1000", "--mix", "set:1", &url]);
        assert_eq!(code, 0, "{url}: {said}");
        assert_eq!(doc["steps"][0]["ok"], 1000, "{url}: {said}");
        assert_eq!(doc["settings"]["unix_socket"], r.sock(), "{url}");
        let info = ask(&r.sock, b"INFO commandstats\r\n", "\r\n\r\n");
        assert_eq!(stat(&info, "cmdstat_set:"), 1000, "{url}: redis saw {info}");
    }

    let m = memcached_on_socket();
    let url = format!("memcache+unix://{}", m.sock());
    let (code, said, doc) = kv_json(&["-c", "4", "-n", "1000", "--mix", "set:1", &url]);
    assert_eq!(code, 0, "{said}");
    assert_eq!(doc["steps"][0]["ok"], 1000, "{said}");
    let stats = ask(&m.sock, b"stats\r\n", "END\r\n");
    assert_eq!(stat(&stats, "STAT cmd_set "), 1000, "memcached saw {stats}");
}

#[test]
fn a_redis_socket_that_goes_away_mid_run_is_counted_by_kind() {
    let r = redis_on_socket();
    let url = format!("redis+unix://{}", r.sock());
    let sock = r.sock.clone();
    // Stopped once the load has reached it, however long hakaru took to start.
    let killer = std::thread::spawn(move || {
        let began = std::time::Instant::now();
        while began.elapsed() < Duration::from_secs(60) {
            let info = ask(&sock, b"INFO stats\r\n", "\r\n\r\n");
            if stat(&info, "total_commands_processed:") >= 300 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(r);
    });
    let (code, said, doc) = kv_json(&["-c", "2", "-d", "5s", "--keys", "10", &url]);
    killer.join().unwrap();
    assert!(!said.contains("panicked"), "{said}");
    assert_eq!(code, 0, "some operations succeeded before: {said}");
    let step = &doc["steps"][0];
    assert!(step["ok"].as_u64().unwrap() > 0, "{step}");
    let kinds: Vec<&str> =
        step["error_kinds"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| ["connect_refused", "reset", "closed"].contains(k)),
        "the server's end is counted by kind: {kinds:?}"
    );
}

#[test]
fn a_path_that_is_not_a_socket_is_refused_in_one_line_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.sock");
    let file = dir.path().join("plain.txt");
    std::fs::write(&file, "x").unwrap();
    let sock = dir.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let (missing, file, sock) = (missing.to_str().unwrap(), file.to_str().unwrap(), sock.to_str().unwrap());
    for (args, expect) in [
        (
            vec!["run", "-n", "1", "--unix-socket", missing, "http://localhost/"],
            format!("--unix-socket '{missing}' does not exist"),
        ),
        (
            vec!["run", "-n", "1", "--unix-socket", file, "http://localhost/"],
            format!("--unix-socket '{file}' is not a Unix socket"),
        ),
        (vec!["run", "-n", "1", "--unix-socket", file, "https://localhost/"], "takes http:// URLs".to_string()),
        (
            vec!["run", "-n", "1", "--unix-socket", sock, "--source-address", "127.0.0.1", "http://localhost/"],
            "--source-address 127.0.0.1: connections go to the Unix socket".to_string(),
        ),
        (vec!["run", "-n", "1", "--unix-socket", sock, "--hosts", "a,b", "/"], "not --hosts or --patterns".to_string()),
        (vec!["kv", "-n", "1", &format!("redis+unix://{missing}")], format!("'{missing}' does not exist")),
        (vec!["kv", "-n", "1", &format!("memcache+unix://{file}")], format!("'{file}' is not a Unix socket")),
    ] {
        let out = hakaru(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(&expect), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: one line: {}", out.stderr);
    }
}

#[test]
fn a_sweep_goes_over_the_socket_as_run_does() {
    let n = nginx();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let out = common::quick_sweep("http://localhost/", &["--json", json.to_str().unwrap(), "--unix-socket", n.sock()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{doc}");
    assert!(steps.iter().all(|s| s["ok"].as_u64().unwrap() > 0), "{doc}");
    let ok: u64 = steps.iter().map(|s| s["ok"].as_u64().unwrap()).sum();
    wait_for(Duration::from_secs(30), || log_lines(n.dir.path()).len() as u64 >= ok);
    // A request in flight when a step's time ran out reaches nginx without being counted: at most one a client.
    let logged = log_lines(n.dir.path()).len() as u64;
    assert!((ok..=ok + 3).contains(&logged), "nginx logged {logged}, the steps counted {ok} answers");
}

#[test]
fn a_study_targets_unix_socket_key_sends_each_case_over_the_socket() {
    let n = nginx();
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    // The socket relative to the study file, as every path of a study is.
    std::os::unix::fs::symlink(n.dir.path(), dir.path().join("srv")).unwrap();
    let text = "name = \"sock\"\n[load]\nconnections = 2\nrequests = 300\n[[target]]\nname = \"app\"\n\
                url = \"http://app.internal/\"\nunix_socket = \"srv/n.sock\"\n[[workload]]\nname = \"root\"\n\
                path = \"/\"\n";
    std::fs::write(&study, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = hakaru(&["study", study.to_str().unwrap(), "-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    wait_for(Duration::from_secs(30), || log_lines(n.dir.path()).len() >= 300);
    let lines = log_lines(n.dir.path());
    assert_eq!(lines.len(), 300, "nginx counted the case's requests, over its socket");
    assert!(lines.iter().all(|l| l == "GET / HTTP/1.1 200 app.internal"), "{:?}", &lines[..3]);
}
