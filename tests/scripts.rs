//! `-s FILE.lua`: wrk's scripting API. The fixtures in tests/fixtures/scripts/ behave as the nine scripts of wrk's
//! own scripts/ folder; each is sent through the real wrk and through hakaru against one nginx that logs every
//! request (method, target, the headers the scripts set, body length), and what nginx logged is compared.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{LoggedNginx, hakaru, wait_for, wait_listening, write_in};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scripts").join(name).display().to_string()
}

/// The log once it holds `n` lines, then emptied for the next run.
fn take(s: &LoggedNginx, n: usize) -> Vec<String> {
    let lines = s.wait_lines(n);
    s.clear();
    lines
}

/// Runs wrk for 1 s (the shortest it takes) with `script`; returns its output.
fn wrk(threads: &str, connections: &str, script: &str, url: &str) -> String {
    let out = Command::new("wrk")
        .args(["-t", threads, "-c", connections, "-d", "1s", "-s", script, url])
        .output()
        .expect("wrk is installed (scripts/test.sh installs it)");
    assert!(out.status.success(), "wrk: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into()
}

/// Sends `script` through wrk (-t T -c T for 1 s), keeps the first `lines` it logged, then through hakaru with
/// `stop` (-n N or -d D); returns wrk's lines and hakaru's output, checked to have exited 0.
fn through_both(
    s: &LoggedNginx,
    t: &str,
    script: &str,
    path: &str,
    lines: usize,
    stop: &[&str],
) -> (Vec<String>, common::Output) {
    wrk(t, t, &fixture(script), &s.url(path));
    let by_wrk = take(s, lines);
    let script = fixture(script);
    let url = s.url(path);
    let mut args = vec!["run", "-t", t, "-c", t, "-s", &script, &url];
    args.extend_from_slice(stop);
    let out = hakaru(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    (by_wrk, out)
}

/// How many requests hakaru's result says ended.
fn requests(out: &common::Output) -> usize {
    out.step()["requests"].as_u64().unwrap() as usize
}

#[test]
fn counter_pipeline_post_and_auth_send_what_wrk_sends_in_wrks_order() {
    for (script, n) in [("counter.lua", 200), ("pipeline.lua", 30), ("post.lua", 20), ("auth.lua", 20)] {
        // An nginx each: lines wrk's last requests leave in the log must not reach the next script's.
        let s = LoggedNginx::start();
        let (by_wrk, out) = through_both(&s, "1", script, "/x", n, &["-n", &n.to_string()]);
        assert_eq!(requests(&out), n, "{script}");
        assert_eq!(out.status_count("200"), n as u64, "{script}");
        let by_hakaru = take(&s, n);
        assert_eq!(by_hakaru[..], by_wrk[..n], "{script}");
        if script == "counter.lua" {
            // Both called thread 0's request() once before the load: the first path sent is /1.
            assert!(by_hakaru[0].starts_with("GET /1 ") && by_hakaru[0].contains("counter=1 "), "{}", by_hakaru[0]);
        }
    }
}

#[test]
fn over_http2_a_scripts_requests_go_as_streams_and_its_answers_reach_response() {
    let s = LoggedNginx::start();
    wait_listening(([127, 0, 0, 1], s.nginx.h2_port).into(), Duration::from_secs(10));
    // nginx 1.22's `listen ... http2` on a plain port speaks HTTP/2 only: what reaches its log came as frames.
    let h2 = |path: &str| format!("http://127.0.0.1:{}{path}", s.nginx.h2_port);
    // auth.lua reads `headers["X-Token"]`, which HTTP/2 names `x-token`: found all the same.
    for (script, n) in [("counter.lua", 50), ("post.lua", 20), ("auth.lua", 20)] {
        let (file, count) = (fixture(script), n.to_string());
        let h1 = hakaru(&["run", "-t", "1", "-c", "1", "-n", &count, "-s", &file, &s.url("/x")]);
        assert_eq!(h1.code, 0, "{}", h1.stderr);
        let by_h1 = take(&s, n);
        let out = hakaru(&["run", "--http2", "-t", "1", "-c", "1", "-n", &count, "-s", &file, &h2("/x")]);
        assert_eq!(out.code, 0, "{script}: {}", out.stderr);
        assert_eq!(requests(&out), n, "{script}");
        assert_eq!(out.status_count("200"), n as u64, "{script}");
        assert_eq!(out.doc()["settings"]["http_version"], "2");
        // The same requests, the Host header (`:authority`) aside, which names the other port.
        let by_h2: Vec<String> =
            take(&s, n).iter().map(|l| l.replace(&s.nginx.h2_port.to_string(), &s.nginx.port.to_string())).collect();
        assert_eq!(by_h2, by_h1, "{script}");
    }
    // Each answer's status, headers and whole body reach response(); a mismatch would stop the run (exit 2).
    let dir = tempfile::tempdir().unwrap();
    let check = write_in(
        &dir,
        "check.lua",
        "seen = 0\nfunction request()\n  return wrk.format('GET', '/x?seen=' .. seen)\nend\n\
         function response(status, headers, body)\n  if status ~= 200 or body ~= 'hello world\\n' or \
         headers['Content-Type'] ~= 'text/plain' or headers['content-length'] ~= '12' then\n    error('got ' .. \
         status .. ' ' .. tostring(headers['content-type']) .. ' ' .. body)\n  end\n  seen = seen + 1\nend\n",
    );
    let out = hakaru(&["run", "--http2", "-t", "1", "-c", "1", "-n", "40", "-s", &check, &h2("/x")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // One request at a time: each built after the answer before it was seen.
    let paths: Vec<String> = take(&s, 40).iter().map(|l| l.split(' ').nth(1).unwrap_or("").to_string()).collect();
    assert_eq!(paths, (0..40).map(|i| format!("/x?seen={i}")).collect::<Vec<_>>());
    // A 200 kB body comes in many DATA frames, over several reads: whole all the same, on streams side by side.
    let big = write_in(
        &dir,
        "big.lua",
        "function response(status, headers, body)\n  if #body ~= 200000 then error('got ' .. #body .. ' bytes') end\n\
         end\n",
    );
    let out = hakaru(&["run", "--http2", "-c", "1", "--streams", "4", "-n", "12", "-s", &big, &h2("/big")]);
    assert_eq!(out.code, 0, "{}{}", out.stderr, out.stdout);
    assert_eq!(out.status_count("200"), 12);
    take(&s, 12);
    let out = hakaru(&["run", "--http2", "-n", "5", "-s", &fixture("pipeline.lua"), &h2("/x")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("3 requests in one string; with --http2 return one a call"), "{}", out.stderr);
    assert!(s.lines().is_empty(), "a refused run sent nothing");
}

#[test]
fn each_thread_stops_itself_after_its_hundredth_answer_as_in_wrk() {
    let s = LoggedNginx::start();
    // Bounded by time too, but the threads end the step long before.
    let (by_wrk, out) = through_both(&s, "2", "stop.lua", "/", 200, &["-d", "30s"]);
    assert_eq!(requests(&out), 200);
    let by_hakaru = take(&s, 200);
    assert_eq!(by_hakaru.len(), by_wrk.len());
    assert_eq!(by_hakaru, by_wrk);
}

#[test]
fn delay_waits_before_each_request_and_is_refused_with_a_rate() {
    let s = LoggedNginx::start();
    let (by_wrk, out) = through_both(&s, "1", "delay.lua", "/x", 1, &["-d", "1s"]);
    let n = requests(&out);
    let by_hakaru = take(&s, n);
    assert_eq!(by_hakaru[0], by_wrk[0]);
    // At least 10 ms before each request: at most 100 in a second, however fast the machine.
    assert!((1..=101).contains(&n), "{n} requests in 1 s with a delay of 10 ms or more");
    let refused = hakaru(&["run", "--rate", "100", "-n", "10", "-s", &fixture("delay.lua"), &s.url("/x")]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("delay() cannot pace an open loop"), "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert!(s.lines().is_empty(), "a refused run sent nothing");
}

#[test]
fn setup_addr_and_report_print_what_wrk_prints() {
    let s = LoggedNginx::start();
    // Each part has its own path, so that what wrk's last requests leave in the log is told apart.
    let at = |path: &str| s.lines().iter().filter(|l| l.starts_with(&format!("GET {path} "))).count();
    let url = s.url("/addr");
    // addr.lua: each thread says its address, from wrk.lookup and wrk.connect.
    let by_wrk = wrk("2", "2", &fixture("addr.lua"), &url);
    let out = hakaru(&["run", "-q", "-t", "2", "-c", "2", "-n", "50", "-s", &fixture("addr.lua"), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said =
        |text: &str| text.lines().filter(|l| l.starts_with("thread addr: ")).map(String::from).collect::<Vec<_>>();
    assert_eq!(said(&out.stdout), said(&by_wrk));
    assert_eq!(said(&out.stdout), vec![format!("thread addr: 127.0.0.1:{}", s.nginx.port); 2]);

    let url = s.url("/setup");
    // setup.lua: ids set in setup(), counts read back in done() through thread:get(). hakaru first: every
    // request it sent is then in the log before wrk's.
    let out = hakaru(&["run", "-t", "2", "-c", "2", "-n", "100", "-s", &fixture("setup.lua"), &url]);
    wait_for(Duration::from_secs(20), || at("/setup") >= 100);
    assert_eq!(at("/setup"), 100);
    let by_wrk = wrk("2", "2", &fixture("setup.lua"), &url);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for text in [&by_wrk, &out.stdout] {
        assert!(text.contains("thread 1 created\nthread 2 created\n"), "{text}");
    }
    let counts: Vec<(u64, u64)> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("thread ").filter(|l| l.contains(" made ")))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[2].parse().unwrap(), w[6].parse().unwrap())
        })
        .collect();
    assert_eq!(counts.len(), 2, "{}", out.stdout);
    // Thread 1's request() was called once more, before the load, as wrk does; every request was answered.
    assert_eq!(counts.iter().map(|c| c.0).sum::<u64>(), 101, "{counts:?}");
    assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), 100, "{counts:?}");
    wait_for(Duration::from_secs(20), || at("/setup") >= 100);
    let url = s.url("/report");

    // report.lua: percentiles as CSV lines from done().
    let by_wrk = wrk("1", "1", &fixture("report.lua"), &url);
    let out = hakaru(&["run", "-t", "1", "-c", "1", "-n", "100", "-s", &fixture("report.lua"), &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let csv = |text: &str| -> Vec<String> {
        let from = text.find("------------------------------\n").expect("done() ran");
        text[from..].lines().skip(1).take(4).map(|l| l.split(',').next().unwrap().to_string()).collect()
    };
    assert_eq!(csv(&out.stdout), csv(&by_wrk));
    assert_eq!(csv(&out.stdout), ["50%", "90%", "99%", "99.999%"]);
    let p50: u64 = out.stdout.lines().find_map(|l| l.strip_prefix("50%,")).unwrap().parse().unwrap();
    assert!(p50 > 0);
}

#[test]
fn request_is_called_at_each_due_slot_of_an_open_loop() {
    let s = LoggedNginx::start();
    let out = hakaru(&[
        "run",
        "-t",
        "1",
        "-c",
        "4",
        "--rate",
        "400",
        "-n",
        "100",
        "-s",
        &fixture("counter.lua"),
        &s.url("/"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(requests(&out), 100);
    let mut paths: Vec<u64> = take(&s, 100)
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().trim_start_matches('/').parse().unwrap())
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, (1..=100).collect::<Vec<u64>>());
    assert!(out.step()["generator"]["script_percent"].as_f64().is_some());
    assert!(out.doc()["settings"]["script"].as_str().unwrap().ends_with("counter.lua"));
    assert_eq!(common::schema_errors(out.doc()), Vec::<String>::new());
}

#[test]
fn init_gets_the_words_after_the_double_dash() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("args.lua");
    std::fs::write(&script, "function init(args)\n  wrk.path = '/' .. args[1] .. '/' .. #args\nend\n").unwrap();
    let out = hakaru(&["run", "-c", "1", "-n", "3", "-s", script.to_str().unwrap(), &s.url("/"), "--", "abc", "d"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(take(&s, 3).iter().all(|l| l.starts_with("GET /abc/2 ")));
}

#[test]
fn errors_before_the_load_are_one_line_with_file_and_line_and_send_nothing() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax.lua", "x = 1\nfunction request(\n", "syntax.lua line 3:"),
        (
            "init.lua",
            "function init(args)\n  error('no init today')\nend\n",
            "init.lua line 2: no init today (in init())",
        ),
        ("setup.lua", "function setup(t)\n  t:nope()\nend\n", "setup.lua line 2: attempt to call method 'nope'"),
        ("kind.lua", "function request()\n  return 42\nend\n", "kind.lua line 1: request() returned a number"),
        ("http.lua", "function request()\n  return 'hello'\nend\n", "request() returned an incomplete HTTP request"),
    ];
    for (name, text, said) in cases {
        let path = write_in(&dir, name, text);
        let out = hakaru(&["run", "-c", "1", "-n", "10", "-s", &path, &s.url("/")]);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{name}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{name}: {}", out.stderr);
        assert!(out.json.is_none(), "{name}: no load, no result");
    }
    assert!(s.lines().is_empty(), "nothing was sent: {:?}", s.lines());
}

#[test]
fn an_error_during_the_load_stops_the_run_and_keeps_what_was_measured() {
    let s = LoggedNginx::start();
    let dir = tempfile::tempdir().unwrap();
    // The 300th call fails; the first was wrk's check before the load, so 298 requests were sent.
    let path = write_in(
        &dir,
        "late.lua",
        "n = 0\nfunction request()\n  n = n + 1\n  if n == 300 then return nil .. 'x' end\n  return wrk.format()\nend\n",
    );
    let out = hakaru(&["run", "-t", "1", "-c", "1", "-n", "1000", "-s", &path, &s.url("/")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let doc = out.doc();
    assert_eq!(doc["interrupted"], true);
    assert_eq!(requests(&out), 298);
    let warned = doc["warnings"].as_array().unwrap().iter().any(|w| {
        let w = w.as_str().unwrap();
        w.contains("script error") && w.contains("late.lua line 4: attempt to concatenate") && w.contains("request()")
    });
    assert!(warned, "{}", doc["warnings"]);
    assert_eq!(take(&s, 298).len(), 298);
}

#[test]
fn a_sweep_keeps_each_threads_state_from_step_to_step_and_calls_done_after_each() {
    let s = LoggedNginx::start();
    let out = common::quick_sweep(&s.url("/"), &["-t", "1", "-s", &fixture("counter.lua")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = common::quick_sweep(&s.url("/r"), &["-t", "1", "-s", &fixture("report.lua")]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert_eq!(report.stdout.matches("------------------------------\n").count(), 2, "{}", report.stdout);
    // counter.lua's one state went on counting in the second step: no path was sent twice.
    let paths: Vec<String> = s
        .lines()
        .iter()
        .filter(|l| !l.starts_with("GET /r "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = paths.iter().collect();
    assert!(paths.len() > 2, "{paths:?}");
    assert_eq!(unique.len(), paths.len());
}
