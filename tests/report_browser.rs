//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by scripts/test.sh) opens
//! the report of a study-like directory of three targets' sweeps, measured here with `hakaru sweep` against three
//! `hakaru serve` processes with different delays (loopback, 3 steps of 1 s each, so bounded).
//!
//! How each claim is checked, and why this way:
//! - Every chart drew: the page's script records on `<body>` the charts it made (`data-charts`) and those whose
//!   canvas holds pixels of their lines' colours (`data-charts-drawn`, read from the canvas itself after drawing);
//!   `chromium --headless --dump-dom --virtual-time-budget=...` prints the DOM after the scripts ran. A canvas is
//!   empty in a DOM dump, so screenshots are checked too, in the light and the dark scheme
//!   (`--force-dark-mode`): each target's colour covers many pixels, and the background follows the scheme.
//! - No console errors: the page counts `error` and `unhandledrejection` events into `data-errors`, and Chromium's
//!   `--enable-logging=stderr --v=0` echoes every console message as a `CONSOLE` line on stderr: there must be none.
//! - Offline: Chromium runs with every host name unresolvable (`--host-resolver-rules`) and a proxy on a closed
//!   loopback port, so nothing can leave the machine; the page's content security policy forbids every fetch
//!   (`default-src 'none'`) and counts attempts into `data-blocked`; and Chromium's net log is searched for any
//!   request made for the page (its network isolation key is the `file://` site; Chromium's own background
//!   requests have other keys). A control page that does fetch, log and throw proves each detector can fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Served, hakaru};

/// The palette's first three colours: the report draws target i in colour i.
const COLOURS: [[u8; 3]; 3] = [[0x1f, 0x77, 0xb4], [0xd6, 0x27, 0x28], [0x2c, 0xa0, 0x2c]];

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromium is not installed: run the README's test command (scripts/test.sh), which installs it")
}

/// Runs Chromium headless on a file, offline, with its own profile; returns (stdout, stderr, net log text).
fn open_in_chromium(page: &Path, extra: &[&str], work: &Path) -> (String, String, String) {
    let profile = tempfile::tempdir_in(work).unwrap();
    let netlog = work.join(format!("netlog-{}.json", extra.len()));
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
    ])
    // Port 9 (discard) on loopback: nothing listens, so any proxied request is refused on this machine.
    .arg("--proxy-server=127.0.0.1:9")
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--log-net-log={}", netlog.display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().expect("chromium starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(90)).is_err() {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    let log = std::fs::read_to_string(&netlog).unwrap_or_default();
    (String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into(), log)
}

/// The value of a `data-` attribute of `<body>` in a DOM dump.
fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = &dom[dom.find("<body")?..];
    let tag = &body[..body.find('>')?];
    let at = tag.find(&format!("data-{name}=\""))? + name.len() + 7;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

/// Requests the net log shows were made for a `file://` page (not Chromium's own background requests).
fn page_requests(netlog: &str) -> Vec<String> {
    // Chromium may leave the log's closing brackets off when killed; the events before are still whole lines.
    let value: serde_json::Value = serde_json::from_str(netlog)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", netlog.trim_end().trim_end_matches(','))))
        .expect("the net log is JSON");
    value["events"]
        .as_array()
        .expect("the net log has events")
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let key = p["network_isolation_key"].as_str()?;
            let url = p["url"].as_str()?;
            (key.contains("file://") && !url.starts_with("file:")).then(|| url.to_string())
        })
        .collect()
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn a_study_report_of_three_targets_draws_every_chart_offline_without_errors() {
    let work = tempfile::tempdir().unwrap();
    let study = work.path().join("study");
    std::fs::create_dir_all(study.join("cases")).unwrap();

    // Three targets, each with its own delay, each swept over 1, 4 and 16 clients for 1 s a step (a factor of 16:
    // drawn on a log axis).
    let mut cases = Vec::new();
    for (name, delay) in [("fast", "1ms"), ("medium", "3ms"), ("slow", "6ms")] {
        let served = Served::start();
        let file = format!("cases/{name}-1.json");
        let url = format!("http://{}/?delay={delay}", served.addr);
        let probe = format!("http://{}/status#/1/n_requests", served.addr);
        let port = served.addr.rsplit(':').next().unwrap().to_string();
        let json = study.join(&file).to_string_lossy().into_owned();
        let o = hakaru(&[
            "sweep",
            &url,
            "--clients",
            "1,4,16",
            "-d",
            "1s",
            "--interval",
            "0s",
            "--monitor-port",
            &port,
            "--probe",
            &probe,
            "--json",
            &json,
            "-q",
        ]);
        assert_eq!(o.code, 0, "sweep of {name}: {}", o.stderr);
        cases.push(serde_json::json!({"target": name, "workload": "get", "phase": "main", "repetition": 1,
            "status": "ok", "file": file}));
    }
    std::fs::write(study.join("study.json"), serde_json::json!({ "cases": cases }).to_string()).unwrap();
    let report = work.path().join("report.html");
    let o = hakaru(&["report", study.to_str().unwrap(), "-o", report.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);

    // The detectors themselves: a page that fetches, logs and throws is caught by each of them.
    let control = work.path().join("control.html");
    std::fs::write(
        &control,
        "<html><body><img src=\"http://report-test.invalid/a.png\">\
         <script>console.error('control'); fetch('http://report-test.invalid/b').catch(() => {}); nothing();</script>\
         </body></html>",
    )
    .unwrap();
    let (_, stderr, netlog) = open_in_chromium(&control, &["--dump-dom"], work.path());
    assert!(console_lines(&stderr).len() >= 2, "console messages are not seen on stderr: {stderr}");
    let asked = page_requests(&netlog);
    assert!(asked.iter().any(|u| u.contains("report-test.invalid")), "requests are not seen in the net log: {asked:?}");

    // The report.
    let (dom, stderr, netlog) = open_in_chromium(&report, &["--dump-dom"], work.path());
    assert_eq!(body_attr(&dom, "ready").as_deref(), Some("1"), "the page's script did not finish; stderr: {stderr}");
    assert_eq!(body_attr(&dom, "errors").as_deref(), Some("0"), "script errors");
    assert_eq!(body_attr(&dom, "blocked").as_deref(), Some("0"), "the page tried to fetch something");
    assert_eq!(console_lines(&stderr), Vec::<&str>::new(), "console messages");
    assert_eq!(page_requests(&netlog), Vec::<String>::new(), "the page made requests");
    let charts: usize = body_attr(&dom, "charts").unwrap().parse().unwrap();
    let drawn: usize = body_attr(&dom, "charts-drawn").unwrap_or_default().parse().unwrap_or(0);
    // qps, mean and p99 vs clients; the spectrum; throughput, p99 and p50 per second; CPU per step.
    assert!(charts >= 8, "only {charts} charts");
    assert_eq!(body_attr(&dom, "clients-log").as_deref(), Some("true"), "1, 4, 16 clients on a log axis");
    // Over time, each sweep's three steps are three pieces of line, not one: 2 breaks for each of the 3 targets.
    assert_eq!(body_attr(&dom, "step-breaks").as_deref(), Some("6"), "the lines over time break between steps");
    assert_eq!(drawn, charts, "{drawn} of {charts} charts drew their lines");
    for section in [
        "Summary",
        "Throughput and latency vs clients",
        "Percentile spectrum",
        "Over time",
        "Server CPU and probes",
        "Status and failure mix",
    ] {
        assert!(dom.contains(&format!("<h2>{section}</h2>")), "no section {section}");
    }
    for name in ["fast", "medium", "slow"] {
        assert!(dom.contains(&format!("</span>{name}</span>")), "{name} is not named");
    }

    // Screenshots at the width the report is made for, light and dark: every target's colour is drawn, and the
    // page's background follows the reader's scheme.
    for (scheme, flags) in [("light", vec![]), ("dark", vec!["--force-dark-mode"])] {
        let shot = work.path().join(format!("shot-{scheme}.png"));
        let arg = format!("--screenshot={}", shot.display());
        let mut extra = vec!["--hide-scrollbars", "--window-size=1200,7000", arg.as_str()];
        extra.extend(flags);
        open_in_chromium(&report, &extra, work.path());
        let img = image::open(&shot).expect("a screenshot").to_rgb8();
        for (i, rgb) in COLOURS.iter().enumerate() {
            let n = img.pixels().filter(|p| p.0.iter().zip(rgb).all(|(a, b)| a.abs_diff(*b) < 12)).count();
            assert!(n > 2000, "{scheme}: target {i}'s colour covers only {n} pixels of the screenshot");
        }
        let corner = img.get_pixel(2, 2).0;
        let light = corner.iter().all(|&c| c > 200);
        assert_eq!(light, scheme == "light", "{scheme}: the background is {corner:?}");
    }
}

#[test]
fn repeated_runs_are_drawn_as_bars_with_intervals_beside_the_verdicts() {
    // Two targets of the built-in server (2 ms and 50 ms a request), three runs each. (2 against 20 ms in runs of
    // 400 ms gave no verdict at load 18 in run 1 of d442e03: the fast side's runs spread too far.)
    let work = tempfile::tempdir().unwrap();
    let target = hakaru::serve::start(hakaru::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let mut files = Vec::new();
    for delay in ["2ms", "50ms"] {
        let json = work.path().join(format!("runs-{delay}.json"));
        let url = format!("http://{}/?delay={delay}", target.addr());
        let status = Command::new(env!("CARGO_BIN_EXE_hakaru"))
            .args(["run", "-q", "--no-history", "-c", "1", "-d", "1s", "--runs", "3", "--run-interval", "50ms"])
            .args(["--json", json.to_str().unwrap(), &url])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        files.push(json);
    }
    let page = work.path().join("runs.html");
    let out = Command::new(env!("CARGO_BIN_EXE_hakaru"))
        .args(["report", files[0].to_str().unwrap(), files[1].to_str().unwrap(), "-o", page.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("\"verdicts\":[{"), "the page carries the verdicts");
    let (dom, stderr, _) = open_in_chromium(&page, &["--dump-dom"], work.path());
    assert_eq!(body_attr(&dom, "errors").as_deref(), Some("0"), "{}", console_lines(&stderr).join("\n"));
    assert!(dom.contains("Repeated runs"), "the section is there");
    let charts: usize = body_attr(&dom, "charts").unwrap().parse().unwrap();
    let drawn: usize = body_attr(&dom, "charts-drawn").unwrap().parse().unwrap();
    assert_eq!(drawn, charts, "every chart drew, the two bar charts of the runs included");
    // The 50 ms target against the 2 ms one (a gap load cannot hide): slower on the median in the verdict table (its
    // p99 rests on about 20 answers a run and gets no verdict).
    assert!(dom.contains("slower"), "a verdict in the table");
    // The first screen states the answer in a sentence, before any table: the ratio, its interval, the verdict.
    let headline = dom.find("class=\"headline\"").expect("a headline section");
    assert!(headline < dom.find("<table").unwrap(), "the answer comes before the tables");
    let sentence = &dom[headline..headline + dom[headline..].find("</section>").unwrap()];
    assert!(sentence.contains("times the successes a second of") && sentence.contains("95 % interval"), "{sentence}");
}

/// The hue (0-360) and lightness (0-1) of a `#rrggbb` colour.
fn hue_lightness(hex: &str) -> (f64, f64) {
    let c: Vec<f64> =
        (0..3).map(|i| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap() as f64 / 255.0).collect();
    let (max, min) = (c.iter().cloned().fold(0.0, f64::max), c.iter().cloned().fold(1.0, f64::min));
    let d = max - min;
    let hue = if d == 0.0 {
        0.0
    } else if max == c[0] {
        60.0 * ((c[1] - c[2]) / d).rem_euclid(6.0)
    } else if max == c[1] {
        60.0 * ((c[2] - c[0]) / d + 2.0)
    } else {
        60.0 * ((c[0] - c[1]) / d + 4.0)
    };
    (hue, (max + min) / 2.0)
}

#[test]
fn a_study_report_leads_with_its_answer_and_draws_repetitions_in_shades_and_short_cases_as_points() {
    // Two targets of the built-in server (1 ms and 20 ms a request: a gap a busy machine cannot hide), three repetitions each, interleaved as a study
    // runs them; each case 1 s long, so its over-time figures are one or two per-second windows.
    let work = tempfile::tempdir().unwrap();
    let study = work.path().join("study");
    std::fs::create_dir_all(study.join("cases")).unwrap();
    let target = hakaru::serve::start(hakaru::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let mut cases = Vec::new();
    for repetition in 1..=3 {
        for (name, delay) in [("quick", "1ms"), ("lazy", "20ms")] {
            let file = format!("cases/r{repetition}-{name}.json");
            let url = format!("http://{}/?delay={delay}", target.addr());
            let json = study.join(&file);
            let o =
                hakaru(&["run", "-q", "--no-history", "-c", "1", "-d", "1s", "--json", json.to_str().unwrap(), &url]);
            assert_eq!(o.code, 0, "{name} #{repetition}: {}", o.stderr);
            cases.push(serde_json::json!({"target": name, "workload": "get", "phase": "main",
                "repetition": repetition, "status": "ok", "file": file}));
        }
    }
    std::fs::write(study.join("study.json"), serde_json::json!({ "cases": cases }).to_string()).unwrap();
    let page = work.path().join("report.html");
    let o = hakaru(&["report", study.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);

    // The model: per target the mean of its three repetitions and an interval around it, the study's order kept.
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find("id=\"hakaru-data\">").unwrap() + "id=\"hakaru-data\">".len();
    let data: serde_json::Value = serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()])
        .expect("the embedded model is JSON");
    let answer = data["answer"].as_array().unwrap();
    assert_eq!(answer.iter().map(|a| a["target"].as_str().unwrap()).collect::<Vec<_>>(), ["quick", "lazy"]);
    for a in answer {
        assert_eq!(a["n"], 3, "{a}");
        for key in ["ok_per_s", "mean_ms", "p99_ms"] {
            let b = &a[key];
            let (lo, mean, hi) = (b["lo"].as_f64().unwrap(), b["mean"].as_f64().unwrap(), b["hi"].as_f64().unwrap());
            assert!(lo <= mean && mean <= hi, "{key}: {a}");
        }
    }
    let mean = |i: usize| answer[i]["mean_ms"]["mean"].as_f64().unwrap();
    assert!(mean(1) > mean(0) * 2.0, "4 ms against 1 ms: {answer:?}");

    let (dom, stderr, _) = open_in_chromium(&page, &["--dump-dom"], work.path());
    assert_eq!(body_attr(&dom, "ready").as_deref(), Some("1"), "{stderr}");
    assert_eq!(body_attr(&dom, "errors").as_deref(), Some("0"), "{}", console_lines(&stderr).join("\n"));
    let charts: usize = body_attr(&dom, "charts").unwrap().parse().unwrap();
    let drawn: usize = body_attr(&dom, "charts-drawn").unwrap_or_default().parse().unwrap_or(0);
    assert_eq!(drawn, charts, "{drawn} of {charts} charts drew, the answer's bars and the points over time included");
    // The answer, then the verdicts, then the detail.
    let at = |h: &str| dom.find(&format!("<h2>{h}</h2>")).unwrap_or_else(|| panic!("no section {h}"));
    assert!(at("Answer") < at("Verdicts") && at("Verdicts") < at("Summary") && at("Summary") < at("Over time"));
    let verdicts = &dom[at("Verdicts")..at("Summary")];
    assert!(verdicts.contains("slower"), "lazy is slower than quick: {verdicts}");
    // Six series in two families: one hue per target, three lightnesses within it.
    let colours: Vec<String> = body_attr(&dom, "series-colors").unwrap().split(',').map(String::from).collect();
    assert_eq!(colours.len(), 6, "{colours:?}");
    let hl: Vec<(f64, f64)> = colours.iter().map(|c| hue_lightness(c)).collect();
    // The series come in the manifest's order: quick, lazy, quick, lazy...
    let quick: Vec<(f64, f64)> = hl.iter().step_by(2).cloned().collect();
    let lazy: Vec<(f64, f64)> = hl.iter().skip(1).step_by(2).cloned().collect();
    // Hues on a circle: 359.7 and 0 are neighbours.
    let apart = |a: f64, b: f64| (a - b).abs().min(360.0 - (a - b).abs());
    for family in [&quick, &lazy] {
        assert!(family.iter().all(|(h, _)| apart(*h, family[0].0) < 3.0), "one hue: {colours:?}");
        assert!(family[0].1 < family[1].1 && family[1].1 < family[2].1, "lighter with each repetition: {colours:?}");
    }
    assert!(apart(quick[0].0, lazy[0].0) > 30.0, "two targets, two hues: {colours:?}");
    // Every case is one or two seconds: its per-second figures are points, not a line.
    assert_eq!(body_attr(&dom, "points-only").as_deref(), Some("6"), "short cases drawn as points");
}

#[test]
fn a_token_streams_report_draws_its_first_token_and_gaps_charts_and_a_plain_runs_only_its_first_byte() {
    let work = tempfile::tempdir().unwrap();
    let target = common::target();
    let run = |name: &str, how: &[&str], extra: &[&str], query: &str| {
        let json = work.path().join(name).to_string_lossy().into_owned();
        let url = format!("http://{}/?{query}", target.addr());
        let args = [how, &["-q", "-d", "2s", "--window", "500ms"][..], extra, &["--json", &json, &url]];
        let o = hakaru(&args.concat());
        assert_eq!(o.code, 0, "{}", o.stderr);
        json
    };
    // The token stream swept over 1 and 2 clients, with an objective: its TTFT, TPOT, tokens/s and goodput columns
    // and its charts against the clients.
    let sweep = ["sweep", "--clients", "1,2", "--interval", "0s"];
    let stream = ["--events", "tokens", "--goodput", "ttft:1s"];
    let tokens = run("tokens.json", &sweep, &stream, "events=6&gap=3ms&first=20ms&kind=tokens");
    let plain = run("plain.json", &["run", "-c", "2"], &[], "delay=2ms");
    for (inputs, firsts, gaps) in [(vec![&tokens, &plain], "2", "1"), (vec![&plain], "1", "0")] {
        let page = work.path().join(format!("r{}.html", inputs.len()));
        let mut args = vec!["report"];
        args.extend(inputs.iter().map(|s| s.as_str()));
        args.extend(["-o", page.to_str().unwrap()]);
        let o = hakaru(&args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let (dom, stderr, _) = open_in_chromium(&page, &["--dump-dom"], work.path());
        assert_eq!(body_attr(&dom, "errors").as_deref(), Some("0"), "{}", console_lines(&stderr).join("\n"));
        // One chart of the first byte (the plain run) and one of the first token (the stream), and the gaps'.
        assert_eq!(body_attr(&dom, "first-charts").as_deref(), Some(firsts), "{inputs:?}");
        assert_eq!(body_attr(&dom, "gap-charts").as_deref(), Some(gaps), "{inputs:?}");
        let charts: usize = body_attr(&dom, "charts").unwrap().parse().unwrap();
        let drawn: usize = body_attr(&dom, "charts-drawn").unwrap_or_default().parse().unwrap_or(0);
        assert_eq!(drawn, charts, "{drawn} of {charts} charts drew their lines");
        assert_eq!(dom.contains("Time to first token, p99 per second"), gaps == "1");
        assert!(dom.contains("Time to first byte, p99 per second"));
        // The summary's ttft, tpot, output tok/s and goodput columns, the stream's tokens/s over time and its
        // TTFT p99, TPOT p99 and tokens/s against the clients; none for the plain run alone.
        let (columns, over_time, against_load) = if gaps == "1" { ("4", "1", "3") } else { ("0", "0", "0") };
        assert_eq!(body_attr(&dom, "token-columns").as_deref(), Some(columns), "{inputs:?}");
        assert_eq!(body_attr(&dom, "token-time-charts").as_deref(), Some(over_time), "{inputs:?}");
        assert_eq!(body_attr(&dom, "token-load-charts").as_deref().unwrap_or("0"), against_load, "{inputs:?}");
    }
}
