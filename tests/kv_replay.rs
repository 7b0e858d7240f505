//! `kv --replay` (issue 54): a capture made by a real `redis-cli MONITOR` of a real redis-server, replayed to a
//! second one: its reads sent as recorded, its writes only when asked (their values byte for byte, through MONITOR's
//! escaping), connection state and administration never; counted by the target's own INFO commandstats.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{ask, hakaru, redis, wait_for};

/// Sends `commands` (RESP arrays) on one connection and reads their answers.
fn send(port: u16, commands: &[&[&[u8]]]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    for c in commands {
        let mut out = format!("*{}\r\n", c.len()).into_bytes();
        for a in *c {
            out.extend(format!("${}\r\n", a.len()).bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        s.write_all(&out).unwrap();
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf).unwrap();
    }
}

/// How many times the server ran `command` (INFO commandstats; 0 when never).
fn calls(port: u16, command: &str) -> u64 {
    let stats = ask(port, b"INFO commandstats\r\n");
    stats
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{command}:")))
        .map_or(0, |l| l.split(['=', ',']).nth(1).unwrap().parse().unwrap())
}

/// The value written: spaces, quotes, a newline, a character past ASCII and a byte that is no UTF-8.
const VALUE: &[u8] = b"a \"quoted\" value\nwith \xe6\x97\xa5\xff bytes";

/// A capture of `redis-cli MONITOR` while a client selects a database, writes a value with spaces, quotes, a
/// newline and bytes past ASCII, reads 20 keys, deletes one, and flushes.
fn capture(dir: &std::path::Path) -> std::path::PathBuf {
    let source = redis();
    let path = dir.join("monitor.txt");
    let out = std::fs::File::create(&path).unwrap();
    let mut monitor = Command::new("redis-cli")
        .args(["-p", &source.port.to_string(), "MONITOR"])
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-cli is installed with redis-server");
    let text = || std::fs::read_to_string(&path).unwrap_or_default();
    wait_for(Duration::from_secs(30), || text().starts_with("OK"));
    let mut commands: Vec<Vec<&[u8]>> = vec![vec![b"SELECT", b"0"], vec![b"SET", b"k:v", VALUE]];
    let keys: Vec<String> = (0..20).map(|i| format!("k:{i}")).collect();
    commands.extend(keys.iter().map(|k| vec![&b"GET"[..], k.as_bytes()]));
    commands.push(vec![b"DEL", b"k:0"]);
    commands.push(vec![b"FLUSHALL"]);
    let refs: Vec<&[&[u8]]> = commands.iter().map(Vec::as_slice).collect();
    send(source.port, &refs);
    wait_for(Duration::from_secs(30), || text().contains("\"FLUSHALL\""));
    let _ = monitor.kill();
    let _ = monitor.wait();
    path
}

#[test]
fn a_monitor_capture_replays_its_reads_and_its_writes_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let c = cap.to_str().unwrap();
    let target = redis();
    let url = format!("redis://127.0.0.1:{}/", target.port);
    // Reads alone: the 20 GETs, in order on one thread; SET and DEL left out, SELECT and FLUSHALL never sent.
    let out = hakaru(&["kv", "--replay", c, &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!((calls(target.port, "get"), calls(target.port, "set")), (20, 0));
    assert_eq!((calls(target.port, "select"), calls(target.port, "flushall")), (0, 0));
    let summary = out.doc()["settings"]["replay"].as_str().unwrap().to_string();
    assert!(summary.contains("20 commands (monitor: GET)"), "{summary}");
    assert!(summary.contains("2 that write left out") && summary.contains("FLUSHALL 1, SELECT 1"), "{summary}");
    assert_eq!(out.doc()["settings"]["arrival"], "recorded");
    // With the writes: the SET's value arrives byte for byte through MONITOR's quoting; DEL runs; FLUSHALL never.
    let out = hakaru(&["kv", "--replay", c, "--replay-writes", "--replay-only", "command=SET", &url]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!((calls(target.port, "set"), calls(target.port, "flushall")), (1, 0));
    let got = ask(target.port, b"GET k:v\r\n");
    let value = String::from_utf8_lossy(VALUE);
    assert_eq!(got, format!("${}\r\n{value}\r\n", VALUE.len()), "the recorded value, byte for byte");
    // A dry run reads and shows, sends nothing.
    let before = calls(target.port, "get");
    let dry = hakaru(&["kv", "--replay", c, "--dry-run", &url]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("GET k:19") && dry.stdout.starts_with("replay "), "{}", dry.stdout);
    assert_eq!(calls(target.port, "get"), before);
}

#[test]
fn a_bad_capture_or_flags_beside_it_get_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("text.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let writes = dir.path().join("writes.txt");
    std::fs::write(&writes, "1700000000.1 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\n").unwrap();
    let (t, w) = (text.to_str().unwrap(), writes.to_str().unwrap());
    let u = "redis://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["kv", "--replay", t, u], "line 1: no time and [db client]"),
        (&["kv", "--replay", w, u], "give --replay-writes to send them"),
        (&["kv", "--replay", w, "redis://127.0.0.1:10/", u], "give one redis:// URL"),
        (&["kv", "--replay", w, "memcache://127.0.0.1:9"], "give a redis:// URL"),
        (&["kv", "--replay", w, "--workload", "ycsb-a", u], "--replay with --workload"),
        (&["kv", "--replay", w, "--keep-host", u], "--replay with --keep-host"),
        (&["kv", "--replay", w, "--replay-only", "path=/a", u], "filtered by command=NAME"),
        (&["kv", "--speed", "2", u], "--speed shapes a replay: give --replay FILE too"),
    ];
    common::refused_in_one_line(cases);
}
