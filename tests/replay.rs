//! `run --replay` (issue 54): an access log replayed to nginx (a server no one here wrote, logging each request's
//! method, path and arrival), in the recorded order at the recorded offsets (lower bounds exact, upper ones left
//! to a busy machine), writes left out unless asked, filters, passes, a dry run that sends nothing, and bad input
//! in one line each.

use crate::common;

use std::net::SocketAddr;
use std::process::Child;
use std::time::Duration;

use common::{free_port, hakaru, wait_for, wait_listening};

struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let p = dir.path().display();
        let conf = common::nginx_conf(
            dir.path(),
            &format!(
                "  log_format rp '$request_method $request_uri $msec $http_host $http_x_trace $http_authorization';\n  server {{\n    listen 127.0.0.1:{port};\n    \
                 location / {{ access_log {p}/access.log rp; default_type text/plain; return 200 \"hello\\n\"; }}\n  }}\n"
            ),
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = common::spawn_nginx(dir.path());
        wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(30));
        Nginx { child, dir, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// (method, path, arrival in seconds) of each request nginx logged, once it has logged `n`.
    fn log(&self, n: usize) -> Vec<(String, String, f64)> {
        let path = self.dir.path().join("access.log");
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        wait_for(Duration::from_secs(60), || read().lines().count() >= n);
        read()
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w[0].to_string(), w[1].to_string(), w[2].parse().unwrap())
            })
            .collect()
    }

    /// The Host header of each request nginx logged, once it has logged `n`.
    fn hosts(&self, n: usize) -> Vec<String> {
        let path = self.dir.path().join("access.log");
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        wait_for(Duration::from_secs(60), || read().lines().count() >= n);
        read().lines().map(|l| l.split(' ').nth(3).unwrap().to_string()).collect()
    }
}

/// A combined log of `gets` GETs (`/r/0` ...), 20 a second (whole seconds, as the format has them), with a POST
/// and a DELETE among them and a line that is no record.
fn combined_log(dir: &std::path::Path, gets: usize) -> std::path::PathBuf {
    let mut lines = Vec::new();
    for i in 0..gets {
        let s = i / 20;
        lines.push(format!(
            r#"10.0.0.{} - - [01/Jan/2026:00:00:{s:02} +0000] "GET /r/{i}?q=a HTTP/1.1" 200 5 "-" "ua""#,
            i % 7
        ));
        if i == 5 {
            lines.push(r#"10.0.0.1 - - [01/Jan/2026:00:00:00 +0000] "POST /write HTTP/1.1" 201 0 "-" "ua""#.into());
            lines.push("-- a line of no record --".into());
        }
        if i == 30 {
            lines.push(r#"10.0.0.1 - - [01/Jan/2026:00:00:01 +0000] "DELETE /write HTTP/1.1" 204 0 "-" "ua""#.into());
        }
    }
    let path = dir.join("access.log");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn an_access_log_is_replayed_in_its_order_at_its_recorded_offsets_without_its_writes() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let log = combined_log(dir.path(), 40);
    let meter = common::StallMeter::start();
    let out = hakaru(&["run", "--replay", log.to_str().unwrap(), &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = nginx.log(40);
    let paths: Vec<String> = seen.iter().map(|(m, p, _)| format!("{m} {p}")).collect();
    let expected: Vec<String> = (0..40).map(|i| format!("GET /r/{i}?q=a")).collect();
    assert_eq!(paths, expected, "every GET once, in the recorded order, and no write");
    // 20 a second over two seconds: the last leaves 1.95 s after the first (never sooner; later only by a busy
    // machine's lag).
    let span = seen[39].2 - seen[0].2;
    assert!(span >= 1.94, "the recorded span kept: {span} s");
    let test = "an_access_log_is_replayed_in_its_order_at_its_recorded_offsets_without_its_writes";
    common::on_time(&meter, test, span < 2.5, &format!("replayed over {span} s, recorded over 1.95 s"));
    let s = &out.doc()["settings"];
    assert_eq!((s["arrival"].as_str(), s["threads"].as_u64()), (Some("recorded"), Some(1)));
    let summary = s["replay"].as_str().unwrap();
    for says in
        ["40 records (combined)", "2 that change data left out", "1 line not records skipped (the first, line 8"]
    {
        assert!(summary.contains(says), "{says}: {summary}");
    }
    assert!(out.stdout.contains(summary), "{}", out.stdout);
    assert_eq!(out.step()["ok"], 40);
    // How late each request left, as a histogram beside the worst: every record's.
    let lag = &out.step()["schedule"]["lag"];
    assert_eq!(lag["count"].as_u64(), Some(40), "{lag}");
    // The histogram keeps 3 digits: its max is the worst within 0.1 %.
    let worst = out.step()["schedule"]["max_lag_us"].as_f64().unwrap();
    assert!(lag["max"].as_f64().unwrap() <= worst * 1.001 + 1.0, "{lag}");
    assert!(out.stdout.contains("lag p99 "), "{}", out.stdout);
    assert!(common::schema_errors(out.doc()).is_empty(), "{:?}", common::schema_errors(out.doc()));
}

#[test]
fn speed_writes_filters_and_passes_change_what_is_sent() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let log = combined_log(dir.path(), 40);
    let log = log.to_str().unwrap();
    // Four times faster, the writes too: 42 requests over about 0.49 s.
    let out = hakaru(&["run", "--replay", log, "--speed", "4", "--replay-writes", &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = nginx.log(42);
    assert_eq!(seen.len(), 42);
    assert_eq!(seen.iter().filter(|(m, ..)| m == "POST" || m == "DELETE").count(), 2);
    assert!(seen[41].2 - seen[0].2 >= 0.48, "{:?}", seen.last());
    std::fs::write(nginx.dir.path().join("access.log"), "").unwrap();
    // JSON lines: GETs under /api only, twice over.
    let jsonl = dir.path().join("log.jsonl");
    let rows: Vec<String> = (0..10)
        .map(|i| {
            let path = if i % 2 == 0 { format!("/api/{i}") } else { format!("/web/{i}") };
            format!(
                r#"{{"time": {}, "method": "GET", "url": "https://recorded.example{path}", "status": 200}}"#,
                1.0 + i as f64 * 0.01
            )
        })
        .collect();
    std::fs::write(&jsonl, rows.join("\n")).unwrap();
    let out = hakaru(&[
        "run",
        "--replay",
        jsonl.to_str().unwrap(),
        "--replay-only",
        "path=/api",
        "--loop",
        "2",
        &nginx.url(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen: Vec<String> = nginx.log(10).into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(seen, ["/api/0", "/api/2", "/api/4", "/api/6", "/api/8"].repeat(2));
    let summary = out.doc()["settings"]["replay"].as_str().unwrap();
    assert!(
        summary.contains("5 records (jsonl), 5 left out by --replay-only") && summary.contains("2 passes"),
        "{summary}"
    );
}

#[test]
fn a_time_window_of_the_log_is_replayed_and_keep_host_sends_each_records_host() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    // Ten records 100 ms apart, of two sites; the window is 250 ms to 650 ms from the first: records 3 to 6.
    let jsonl = dir.path().join("log.jsonl");
    let rows: Vec<String> = (0..10)
        .map(|i| {
            let site = if i % 2 == 0 { "a.example" } else { "b.example:8080" };
            format!(r#"{{"time": {}, "url": "http://{site}/w/{i}"}}"#, 1_767_225_600.0 + i as f64 * 0.1)
        })
        .collect();
    std::fs::write(&jsonl, rows.join("\n")).unwrap();
    let j = jsonl.to_str().unwrap();
    let window = ["--replay-from", "250ms", "--replay-until", "650ms"];
    let out = hakaru(&[&["run", "--replay", j, "--keep-host"][..], &window, &[&nginx.url()]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen: Vec<String> = nginx.log(4).into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(seen, ["/w/3", "/w/4", "/w/5", "/w/6"]);
    assert_eq!(nginx.hosts(4), ["b.example:8080", "a.example", "b.example:8080", "a.example"]);
    let summary = out.doc()["settings"]["replay"].as_str().unwrap();
    assert!(summary.contains("6 outside --replay-from/--replay-until left out"), "{summary}");
    assert!(summary.contains("each with its recorded host"), "{summary}");
    // The file named with its size and its first and last records' instants (every record's, the window's aside).
    assert!(summary.contains(" B, 2026-01-01T00:00:00.000000Z to 2026-01-01T00:00:00.900000Z)"), "{summary}");
    // An instant of the log as the window's start, and without --keep-host the URL's host.
    std::fs::write(nginx.dir.path().join("access.log"), "").unwrap();
    let out = hakaru(&["run", "--replay", j, "--replay-from", "2026-01-01T00:00:00.85Z", &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(nginx.log(1).into_iter().map(|(_, p, _)| p).collect::<Vec<_>>(), ["/w/9"]);
    assert_eq!(nginx.hosts(1), [nginx.url().trim_start_matches("http://").trim_end_matches('/')]);
}

#[test]
fn a_dry_run_says_what_would_be_sent_and_sends_nothing() {
    let t = common::target();
    let dir = tempfile::tempdir().unwrap();
    let log = combined_log(dir.path(), 30);
    let out = hakaru(&["run", "--replay", log.to_str().unwrap(), "--dry-run", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("replay ") && out.stdout.contains("30 records (combined)"), "{}", out.stdout);
    assert!(out.stdout.contains("GET /r/0?q=a") && out.stdout.contains("... 10 more"), "{}", out.stdout);
    assert_eq!(common::target_status(t.addr())["n_requests"], 0, "nothing was sent");
    // A custom log_format, given as its definition.
    let custom = dir.path().join("custom.log");
    std::fs::write(&custom, "1767225600.000 \"GET /c/1 HTTP/1.1\" 200\n1767225600.250 \"GET /c/2 HTTP/1.1\" 200\n")
        .unwrap();
    let def = r#"$msec "$request" $status"#;
    let c = custom.to_str().unwrap();
    let out = hakaru(&["run", "--replay", c, "--replay-format", def, "--dry-run", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("2 records (log_format)") && out.stdout.contains("+     0.250 s  GET /c/2"),
        "{}",
        out.stdout
    );
}

#[test]
fn bad_replays_get_one_line_naming_the_flag_or_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = combined_log(dir.path(), 5);
    let log = log.to_str().unwrap();
    let none = dir.path().join("none.log");
    std::fs::write(&none, "hello\nworld\n").unwrap();
    let writes = dir.path().join("writes.log");
    std::fs::write(&writes, r#"1 - - [01/Jan/2026:00:00:00 +0000] "PUT /k HTTP/1.1" 200 0"#).unwrap();
    let u = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--replay", log, "--speed", "0", u], "--speed 0: give a factor"),
        (&["run", "--replay", log, "--replay-only", "color=red", u], "--replay-only 'color=red'"),
        (&["run", "--replay", log, "--rate", "5", u], "leave out --rate"),
        (&["run", "--replay", log, "--replay-pace", "rate", u], "--replay-pace rate: give the rate"),
        (&["run", "--replay", log, "-t", "2", u], "in one order"),
        (&["run", "--replay", log, "--replay-pace", "closed", "-t", "2", u], "in one order"),
        (&["run", "--replay", log, "-b", "x", u], "--replay with -b/--body"),
        (&["run", "--replay", log, "-m", "POST", u], "--replay with -m/--method"),
        (&["run", "--replay", log, "-H", "X-Id: {{uuid}}", u], "--replay with {{...}} templates"),
        (&["run", "--replay", log, "ws://127.0.0.1:9/"], "--replay with a ws:// URL"),
        (&["run", "--replay", log, "--loop", "99999999999", u], "--loop 99999999999: give 1 to"),
        (&["run", "--replay", log, "--loop", "0", u], "--loop 0"),
        (&["run", "--replay", log, "--replay-format", "xml", u], "--replay-format 'xml'"),
        (&["run", "--replay", log, "--replay-format", "$remote_addr $status", u], "no time: give $time_local"),
        (&["run", "--replay", "/dev/zero", u], "not a regular file"),
        (&["run", "--replay", none.to_str().unwrap(), u], "line 1: no [time]"),
        (&["run", "--replay", writes.to_str().unwrap(), u], "give --replay-writes"),
        (&["run", "--dry-run", u], "--dry-run shapes a replay: give --replay FILE too"),
        (&["run", "--replay", log, u, u], "several URLs"),
        (&["run", "--replay", log, "--agents", "2", u], "leave out --agents"),
        (&["llm", "--model", "m", "--replay", log, u], "llm does not replay traces yet"),
        (&["run", "--replay", log, "--replay-from", "soon", u], "--replay-from 'soon': give an instant"),
        (&["run", "--replay", log, "--replay-until", "0s", u], "left out all"),
        (&["run", "--replay", log, "--keep-host", u], "--keep-host: no record names its host"),
        (&["run", "--replay", log, "--keep-host", "-H", "Host: x", u], "--keep-host with -H Host"),
        (&["run", "--keep-host", u], "--keep-host shapes a replay"),
    ];
    common::refused_in_one_line(cases);
}

#[test]
fn every_pace_sends_each_record_once_and_a_timed_replay_stops_after_its_passes() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("ten.jsonl");
    let rows: Vec<String> = (0..10)
        .map(|i| format!(r#"{{"time": "2026-01-01T02:00:0{i}.5+02:00", "path": "/r{i}?next=https://x.example/y"}}"#))
        .collect();
    std::fs::write(&jsonl, rows.join("\n")).unwrap();
    let f = jsonl.to_str().unwrap();
    let expected: Vec<String> = (0..10).map(|i| format!("/r{i}?next=https://x.example/y")).collect();
    // Closed: -c clients take the records from one cursor (one thread, whatever the cores).
    let out = hakaru(&["run", "--replay", f, "--replay-pace", "closed", "-c", "4", &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut seen: Vec<String> = nginx.log(10).into_iter().map(|(_, p, _)| p).collect();
    seen.sort_by_key(|p| p[2..p.find('?').unwrap()].parse::<u32>().unwrap());
    assert_eq!(seen, expected, "each record once");
    std::fs::write(nginx.dir.path().join("access.log"), "").unwrap();
    // Ten times faster for 2 s: the one pass (0.9 s) and no more.
    let out = hakaru(&["run", "--replay", f, "--speed", "10", "-d", "2s", &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.step()["ok"], 10, "one pass, not three");
    let seen: Vec<String> = nginx.log(10).into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(seen, expected);
    // A closed loop or a rate for a time: the records once, not round and round until the time is up.
    for pace in [&["--replay-pace", "closed", "-c", "2"][..], &["--replay-pace", "rate", "--rate", "200"]] {
        let out = hakaru(&[&["run", "--replay", f, "-d", "3s"][..], pace, &[&nginx.url()]].concat());
        assert_eq!((out.code, out.step()["requests"].as_u64()), (0, Some(10)), "{pace:?}: {}", out.stderr);
    }
}

#[test]
fn a_record_no_request_can_be_made_of_is_skipped_and_said() {
    let t = common::target();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("odd.jsonl");
    std::fs::write(&jsonl, "{\"time\":1,\"path\":\"/ok\"}\n{\"time\":2,\"path\":\"/a b\"}\n").unwrap();
    let out = hakaru(&["run", "--replay", jsonl.to_str().unwrap(), "--dry-run", &format!("http://{}/", t.addr())]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("1 records (jsonl), 1 that no request can be made of skipped (the first: GET /a b"),
        "{}",
        out.stdout
    );
    assert_eq!(common::target_status(t.addr())["n_requests"], 0, "nothing was sent");
}

#[test]
fn a_har_file_replays_its_entries_with_their_headers_and_its_secrets_reach_no_output() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("session.har");
    let entry = |i: usize, method: &str| {
        format!(
            r#"{{"startedDateTime": "2026-01-01T00:00:0{i}.000Z", "request": {{"method": "{method}",
                "url": "https://shop.example/item/{i}?ref=x", "httpVersion": "HTTP/2",
                "headers": [{{"name": ":authority", "value": "shop.example"}}, {{"name": "X-Trace", "value": "t{i}"}},
                            {{"name": "Authorization", "value": "Bearer HAR-SECRET-{i}"}}]}},
                "response": {{"status": 200}}}}"#
        )
    };
    // A browser's recording holds another site's request too, with its own cookie: left out, never sent.
    let other = r#"{"startedDateTime": "2026-01-01T00:00:01.500Z", "request": {"method": "GET",
        "url": "https://accounts.example/session", "headers": [{"name": "Cookie", "value": "OTHER-SITE-SESSION"}]}}"#;
    let entries = [entry(0, "GET"), entry(1, "POST"), other.to_string(), entry(2, "GET")].join(",");
    std::fs::write(&har, format!(r#"{{"log": {{"version": "1.2", "entries": [{entries}]}}}}"#)).unwrap();
    let h = har.to_str().unwrap();
    let out = hakaru(&["run", "--replay", h, "--speed", "10", &nginx.url()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = {
        let path = nginx.dir.path().join("access.log");
        wait_for(Duration::from_secs(60), || std::fs::read_to_string(&path).unwrap_or_default().lines().count() >= 2);
        std::fs::read_to_string(&path).unwrap()
    };
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "the POST left out: {lines:?}");
    assert!(lines[0].starts_with("GET /item/0?ref=x ") && lines[0].ends_with(" t0 Bearer HAR-SECRET-0"), "{lines:?}");
    assert!(lines[1].starts_with("GET /item/2?ref=x ") && lines[1].ends_with(" t2 Bearer HAR-SECRET-2"), "{lines:?}");
    let summary = out.doc()["settings"]["replay"].as_str().unwrap();
    assert!(summary.contains("2 records (har), 1 that change data left out"), "{summary}");
    assert!(summary.contains("1 of other sites or --replay-only left out (replaying shop.example's"), "{summary}");
    for text in [&out.stdout, &out.stderr, &out.doc().to_string()] {
        assert!(!text.contains("HAR-SECRET"), "a recorded secret in the output: {text}");
    }
    let dry = hakaru(&["run", "--replay", h, "--dry-run", &nginx.url()]);
    assert!(dry.stdout.contains("GET /item/0?ref=x") && !dry.stdout.contains("HAR-SECRET"), "{}", dry.stdout);
}
