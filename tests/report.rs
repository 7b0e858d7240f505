//! `hakaru report` and `hakaru chart` on fixed inputs (tests/fixtures/report: real sweep and capacity documents and
//! a CSV in drnbench's layout): the charts' SVG compared whole with golden files, the PNG checked for drawn lines,
//! the report's embedded data read back, study directories, and bad input refused with one line.
//!
//! Set HAKARU_UPDATE_GOLDEN=1 to rewrite the golden files in tests/golden/ after a deliberate change; read the
//! diff (and open the SVG) before committing it.

use crate::common;

use std::path::{Path, PathBuf};

use common::hakaru;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report").join(name).to_string_lossy().into_owned()
}

/// Compares with tests/golden/NAME, or rewrites it when HAKARU_UPDATE_GOLDEN is set.
fn check_golden(actual: &str, name: &str) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("HAKARU_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    if actual != expected {
        let line = actual.lines().zip(expected.lines()).position(|(a, e)| a != e).unwrap_or(0);
        panic!(
            "{name} differs from its golden file at line {}:\n  actual:   {:?}\n  expected: {:?}",
            line + 1,
            actual.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}

/// Runs `hakaru chart` into a temporary file and returns the file's bytes; panics with stderr on failure.
fn chart(inputs: &[&str], metric: &str, ext: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("chart.{ext}"));
    let mut args = vec!["chart".to_string()];
    args.extend(inputs.iter().map(|i| fixture(i)));
    args.extend(["--metric".into(), metric.into(), "-o".into(), out.to_string_lossy().into_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = hakaru(&args);
    assert_eq!(o.code, 0, "hakaru chart failed: {}", o.stderr);
    std::fs::read(out).unwrap()
}

/// The texts of an SVG's `<text>` elements (plotters writes each on its own line).
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim().to_string()))
        .collect()
}

/// The SVG drew one polyline per input, and no text fell back to a missing font.
fn assert_lines_drawn(svg: &str, n: usize) {
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    let polylines = svg.matches("<polyline").count();
    // One per input plus one per legend entry (plotters draws the legend's sample as a path).
    assert!(polylines >= n, "{polylines} polylines for {n} inputs");
}

#[test]
fn the_qps_chart_of_two_sweeps_and_a_drnbench_csv_matches_its_golden_svg() {
    let svg = String::from_utf8(chart(&["sweep-2ms.json", "sweep-4ms.json", "drnbench.csv"], "qps", "svg")).unwrap();
    assert_lines_drawn(&svg, 3);
    let t = texts(&svg);
    assert!(t.iter().any(|t| t == "throughput (requests/s)") && t.iter().any(|t| t == "clients"), "{t:?}");
    assert!(t.iter().any(|t| t.starts_with("http://127.0.0.1:")), "the legend names the targets: {t:?}");
    assert!(t.iter().any(|t| t == "drnbench"), "the CSV is named by its file stem: {t:?}");
    check_golden(&svg, "chart_qps.svg");
}

/// An SVG's `<text>` elements with where plotters put them: (x, y, text).
fn placed_texts(svg: &str) -> Vec<(f64, f64, String)> {
    let attr = |tag: &str, name: &str| -> f64 {
        let from = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[from..].split('"').next().unwrap().parse().unwrap()
    };
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (tag, rest) = t.split_once('>')?;
            Some((attr(tag, "x"), attr(tag, "y"), rest.split("</text>").next()?.trim().to_string()))
        })
        .collect()
}

#[test]
fn a_doubling_sweep_is_drawn_on_a_log_axis_with_the_legend_below_the_lines() {
    // sweep-2ms.json steps at 1, 2, 4 and 8 clients: one tick at each, evenly spaced.
    let svg = String::from_utf8(chart(&["sweep-2ms.json", "sweep-4ms.json"], "qps", "svg")).unwrap();
    let placed = placed_texts(&svg);
    let at = |label: &str| placed.iter().filter(|p| p.2 == label).map(|p| (p.0, p.1)).collect::<Vec<_>>();
    let ticks: Vec<(f64, f64)> = ["1", "2", "4", "8"].iter().map(|l| *at(l).last().unwrap()).collect();
    let gaps: Vec<f64> = ticks.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(gaps.iter().all(|g| (g - gaps[0]).abs() <= 2.0 && *g > 100.0), "ticks {ticks:?}: not a log axis");
    assert!(ticks.iter().all(|t| t.1 == ticks[0].1), "one row of ticks: {ticks:?}");
    // The legend sits in a strip of its own, under the x axis's name: no line runs through it.
    let axis_name = at("clients")[0].1;
    let legend: Vec<&(f64, f64, String)> = placed.iter().filter(|p| p.2.starts_with("http://")).collect();
    assert_eq!(legend.len(), 2, "{placed:?}");
    assert!(legend.iter().all(|p| p.1 > axis_name), "legend {legend:?} above the axis name at {axis_name}");
}

#[test]
fn the_p99_chart_of_two_sweeps_matches_its_golden_svg() {
    let svg = String::from_utf8(chart(&["sweep-2ms.json", "sweep-4ms.json"], "p99", "svg")).unwrap();
    assert_lines_drawn(&svg, 2);
    assert!(texts(&svg).iter().any(|t| t == "p99 latency (ms)"));
    check_golden(&svg, "chart_p99.svg");
}

#[test]
fn the_spectrum_chart_matches_its_golden_svg_with_percentile_ticks() {
    let svg = String::from_utf8(chart(&["sweep-2ms.json", "capacity.json"], "spectrum", "svg")).unwrap();
    assert_lines_drawn(&svg, 2);
    let t = texts(&svg);
    for tick in ["90%", "99%", "99.9%"] {
        assert!(t.iter().any(|t| t == tick), "no tick {tick} in {t:?}");
    }
    check_golden(&svg, "chart_spectrum.svg");
}

#[test]
fn a_drnbench_csv_alone_charts_its_throughput_and_mean_latency() {
    for metric in ["qps", "mean"] {
        let svg = String::from_utf8(chart(&["drnbench.csv"], metric, "svg")).unwrap();
        assert_lines_drawn(&svg, 1);
        // Four steps: four dots.
        assert_eq!(svg.matches("<circle").count(), 4, "{metric}");
    }
    let svg = String::from_utf8(chart(&["drnbench.csv"], "mean", "svg")).unwrap();
    check_golden(&svg, "chart_drnbench_mean.svg");
}

#[test]
fn a_png_chart_is_an_image_of_the_chosen_size_with_its_lines_drawn() {
    let png = chart(&["sweep-2ms.json", "sweep-4ms.json"], "qps", "png");
    let img = image::load_from_memory(&png).expect("a PNG").to_rgb8();
    assert_eq!(img.dimensions(), (1000, 600));
    // The first two palette colours (the report's, so a target looks the same in both).
    for (name, rgb) in [("blue", [0x1f, 0x77, 0xb4]), ("red", [0xd6, 0x27, 0x28])] {
        let n = img.pixels().filter(|p| p.0 == rgb).count();
        assert!(n > 500, "only {n} {name} pixels: the line was not drawn");
    }
    // Text was drawn too (dark pixels of the title and labels), not skipped for want of a font.
    let dark = img.pixels().filter(|p| p.0.iter().all(|&c| c < 80)).count();
    assert!(dark > 1000, "only {dark} dark pixels: no text?");
}

#[test]
fn charts_refuse_what_they_cannot_draw_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("x.svg").to_string_lossy().into_owned();
    let cases: [(Vec<String>, &str); 4] = [
        (vec![fixture("drnbench.csv"), "--metric".into(), "p99".into(), "-o".into(), svg.clone()], "--metric p99"),
        (vec![fixture("drnbench.csv"), "--metric".into(), "p95".into(), "-o".into(), svg.clone()], "--metric 'p95'"),
        (vec![fixture("drnbench.csv"), "-o".into(), dir.path().join("x.gif").to_string_lossy().into()], ".svg or .png"),
        (vec!["missing.json".into(), "-o".into(), svg.clone()], "input 'missing.json': no such file"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["chart"];
        all.extend(args.iter().map(String::as_str));
        let o = hakaru(&all);
        assert_eq!(o.code, 2, "{all:?}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.contains(needle), "{needle} not in {}", o.stderr);
    }
    assert!(!Path::new(&svg).exists(), "nothing is written on refusal");
}

/// The report model embedded in a page.
fn embedded(page: &str) -> serde_json::Value {
    let start = page.find(r#"<script type="application/json" id="hakaru-data">"#).expect("embedded data") + 49;
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

fn report(args: &[&str]) -> (String, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let mut all = vec!["report"];
    all.extend(args);
    let out_s = out.to_string_lossy().into_owned();
    all.extend(["-o", &out_s]);
    let o = hakaru(&all);
    assert_eq!(o.code, 0, "hakaru report failed: {}", o.stderr);
    (std::fs::read_to_string(&out).unwrap(), out, dir)
}

#[test]
fn the_report_embeds_every_input_with_its_knee_objective_and_spectrum() {
    let inputs = [fixture("sweep-2ms.json"), fixture("capacity.json"), fixture("drnbench.csv")];
    let args: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let (page, _, _dir) = report(&args);
    assert!(!page.contains("<script src") && !page.contains("<link"), "nothing is loaded from outside");
    let data = embedded(&page);
    let series = data["series"].as_array().unwrap();
    assert_eq!(series.len(), 3);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&inputs[0]).unwrap()).unwrap();
    assert_eq!(series[0]["name"], doc["settings"]["targets"][0]);
    assert_eq!(series[0]["axis"], "clients");
    assert_eq!(series[0]["knee_p99"], doc["analysis"]["knee_p99"]);
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 4);
    assert!(series[0]["spectrum"].as_array().unwrap().len() > 20);
    assert!(!series[0]["windows"].as_array().unwrap().is_empty());
    assert_eq!(series[1]["axis"], "rate");
    assert_eq!(series[1]["objective"]["limit_ms"], 20.0);
    assert_eq!(series[1]["objective"]["capacity_rate"], doc_value(&inputs[1], "/analysis/capacity/rate"));
    assert_eq!(series[2]["name"], "drnbench");
    assert_eq!(series[2]["points"][3]["mean_ms"], 61.2341);
}

fn doc_value(path: &str, pointer: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc.pointer(pointer).cloned().unwrap()
}

#[test]
fn a_study_directory_is_read_through_its_manifest_and_labelled_by_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("cases")).unwrap();
    std::fs::copy(fixture("sweep-2ms.json"), dir.path().join("cases/a-1.json")).unwrap();
    std::fs::copy(fixture("sweep-4ms.json"), dir.path().join("cases/b-1.json")).unwrap();
    let manifest = serde_json::json!({"cases": [
        {"target": "fast", "workload": "get", "phase": "warm", "repetition": 1, "status": "ok", "file": "cases/a-1.json"},
        {"target": "slow", "workload": "get", "phase": "warm", "repetition": 1, "status": "ok", "file": "cases/b-1.json"},
        {"target": "slow", "workload": "get", "phase": "warm", "repetition": 2, "status": "failed", "file": "cases/b-2.json"}
    ]});
    std::fs::write(dir.path().join("study.json"), manifest.to_string()).unwrap();
    let (page, _, _out) = report(&[dir.path().to_str().unwrap()]);
    let data = embedded(&page);
    let names: Vec<&str> = data["series"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fast", "slow"], "the failed case without a result is left out");

    // A manifest that is not one: its file, line and column.
    std::fs::write(dir.path().join("study.json"), "{\"cases\": [{\"file\": 3}]}").unwrap();
    let o = hakaru(&["report", dir.path().to_str().unwrap(), "-o", "/dev/null"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("study.json': line 1 column"), "{}", o.stderr);
}

#[test]
fn files_joined_by_commas_are_read_as_compare_reads_them_each_its_own_series() {
    let list = format!("{},{}", fixture("sweep-2ms.json"), fixture("drnbench.csv"));
    let (page, _, _out) = report(&[&list]);
    let kinds: Vec<String> =
        embedded(&page)["series"].as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap().into()).collect();
    assert_eq!(kinds, ["result", "drnbench"]);
    // One missing from a list is named; a history reference stands alone.
    let list = format!("{},nowhere.json", fixture("sweep-2ms.json"));
    let o = hakaru(&["report", &list, "-o", "/dev/null"]);
    assert_eq!((o.code, o.stderr.trim().lines().count()), (2, 1), "{}", o.stderr);
    assert!(o.stderr.contains("'nowhere.json' is not a file"), "{}", o.stderr);
}

#[test]
fn the_report_refuses_bad_inputs_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "{\n  \"schema\": 1\n}").unwrap();
    let bad_csv = dir.path().join("bad.csv");
    std::fs::write(&bad_csv, std::fs::read_to_string(fixture("drnbench.csv")).unwrap().replace("33.2", "fast"))
        .unwrap();
    let out = dir.path().join("r.html").to_string_lossy().into_owned();
    for (input, needle) in [
        (bad_json.to_string_lossy().into_owned(), "bad.json': line 2 column 13: not a hakaru result document"),
        (bad_csv.to_string_lossy().into_owned(), "line 2 column 3 (queries_per_second): 'fast' is not a number"),
        ("nowhere/x.csv".to_string(), "input 'nowhere/x.csv': no such file or directory"),
    ] {
        let o = hakaru(&["report", &input, "-o", &out]);
        assert_eq!(o.code, 2, "{input}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.contains(needle), "{needle} not in {}", o.stderr);
    }
    assert!(!Path::new(&out).exists());
}

#[test]
fn a_ramps_report_draws_its_target_over_time_and_marks_its_knee_where_the_ramp_asked_that_load() {
    // One worker answering in 10 ms serves 100 requests a second: a rate ramp to 300/s passes its knee.
    let t = common::target_with(hakaru::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: Some(1),
        ..hakaru::serve::ServeOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ramp.json");
    let url = format!("http://{}/?delay=10ms", t.addr());
    let args = ["run", "-q", "--rate-stages", "3s:300", "-c", "40", "--window", "250ms", "--timeout", "20s"];
    let out = hakaru(&[&args[..], &["--json", json.to_str().unwrap(), &url]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (page, _, _dir) = report(&[json.to_str().unwrap()]);
    assert!(page.contains("ramp target") && page.contains("Clients asked by the ramp"), "the page's script draws it");
    let series = &embedded(&page)["series"][0];
    let ramp = &series["ramp"];
    assert_eq!(ramp["of"], "rate", "{ramp}");
    // A target per window drawn, at the windows' instants, rising with the ramp.
    let target: Vec<(f64, f64)> =
        ramp["target"].as_array().unwrap().iter().map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap())).collect();
    let times: Vec<f64> = series["windows"].as_array().unwrap().iter().map(|w| w[0].as_f64().unwrap()).collect();
    assert_eq!(target.iter().map(|p| p.0).collect::<Vec<_>>(), times);
    assert!(target.windows(2).all(|p| p[0].1 < p[1].1), "{target:?}");
    // The knees are the analysis's, each where the drawn target reaches its load.
    let knees = ramp["knees"].as_array().unwrap();
    let analysis = &doc["analysis"];
    assert!(analysis["knee_p99"].is_number(), "latency climbs past 100/s: {analysis}");
    for (stat, key) in [("mean", "knee_mean"), ("p99", "knee_p99")] {
        let Some(value) = analysis[key].as_f64() else { continue };
        let k = knees.iter().find(|k| k["stat"] == stat).unwrap_or_else(|| panic!("{stat}: {knees:?}"));
        assert_eq!(k["value"].as_f64().unwrap(), value);
        let at = k["t"].as_f64().unwrap();
        let pair =
            target.windows(2).find(|p| p[0].0 <= at && at <= p[1].0).unwrap_or_else(|| panic!("{at} {target:?}"));
        let drawn = pair[0].1 + (pair[1].1 - pair[0].1) * (at - pair[0].0) / (pair[1].0 - pair[0].0);
        assert!((drawn - value).abs() < 1.0, "{stat} knee at {at} s: the line is at {drawn}, the knee {value}");
    }
}

#[test]
fn names_given_with_name_title_compare_the_report_and_the_chart() {
    // By a result's target URL, and by the input as typed.
    let (two, four) = (fixture("sweep-2ms.json"), fixture("sweep-4ms.json"));
    let slow = format!("slow={four}");
    let names = ["--name", "fast=http://127.0.0.1:45651/?delay=2ms", "--name", &slow];
    let o = hakaru(&[&["compare"][..], &names, &[&two, &four]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let head: Vec<&str> = o.stdout.lines().take(7).map(str::trim_end).collect();
    assert_eq!(
        head,
        [
            "compare  baseline: fast",
            "  over HTTP/1.1",
            "",
            "point c=1",
            "  metric  side   n       value   ratio  95 % interval           p   Holm p  verdict",
            "  ok/s    fast   1       374.0                                              baseline",
            "          slow   1       219.0   0.586                                      too few runs to tell",
        ],
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("http://") && !o.stdout.contains(".json"), "{}", o.stdout);
    let (page, _, _dir) = report(&[&names[..], &[&two, &four]].concat());
    let series: Vec<String> =
        embedded(&page)["series"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().into()).collect();
    assert_eq!(series, ["fast", "slow"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("named.svg");
    let o = hakaru(&[&["chart"][..], &names, &[&two, &four, "-o", out.to_str().unwrap()]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let t = texts(&std::fs::read_to_string(&out).unwrap());
    assert!(t.contains(&"fast".to_string()) && t.contains(&"slow".to_string()), "the legend: {t:?}");
    assert!(!t.iter().any(|t| t.starts_with("http://")), "{t:?}");
}

#[test]
fn a_name_that_labels_nothing_or_has_no_label_is_one_line_and_exit_2() {
    let two = fixture("sweep-2ms.json");
    let dir = tempfile::tempdir().unwrap();
    let (page, svg) = (dir.path().join("r.html"), dir.path().join("c.svg"));
    for (name, says) in [
        (
            "x=http://elsewhere/",
            "--name 'x=http://elsewhere/': no input is 'http://elsewhere/' or has it as its target",
        ),
        ("fast", "--name 'fast': give LABEL=INPUT"),
    ] {
        for command in ["compare", "report", "chart"] {
            let mut args = vec![command, "--name", name, &two, &two];
            match command {
                "chart" => args.extend(["-o", svg.to_str().unwrap()]),
                "report" => args.extend(["-o", page.to_str().unwrap()]),
                _ => {}
            }
            let o = hakaru(&args);
            assert_eq!(o.code, 2, "{command}: {}", o.stderr);
            assert!(o.stderr.contains(says) && o.stderr.lines().count() == 1, "{command}: {}", o.stderr);
        }
    }
}

/// A run's document for the report: `hakaru run -q ARGS --json FILE URL` into `dir`.
fn run_json(dir: &Path, name: &str, args: &[&str], url: &str) -> String {
    let json = dir.join(name).to_string_lossy().into_owned();
    let out = hakaru(&[&["run", "-q"][..], args, &["--json", &json, url]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    json
}

fn doc_tokens_per_s(file: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    doc["steps"][0]["events"]["tokens"]["tokens_per_s"].clone()
}

#[test]
fn a_token_streams_report_charts_its_first_token_per_second_and_its_gaps_and_a_plain_run_only_its_first_byte() {
    let t = common::target();
    let dir = tempfile::tempdir().unwrap();
    // Each answer's first token 20 ms after the request, then 5 more 3 ms apart; four windows of 500 ms.
    let stream = format!("http://{}/?events=6&gap=3ms&first=20ms&kind=tokens", t.addr());
    let timed = ["-c", "2", "-d", "2s", "--window", "500ms"];
    let tokens = run_json(dir.path(), "tokens.json", &[&["--events", "tokens"][..], &timed].concat(), &stream);
    let plain = run_json(dir.path(), "plain.json", &timed, &format!("http://{}/?delay=2ms", t.addr()));
    let old = fixture("sweep-2ms.json");
    let (page, _, _out) = report(&[&tokens, &plain, &old]);
    let data = embedded(&page);
    let series = data["series"].as_array().unwrap();
    let pairs = |v: &serde_json::Value| -> Vec<(f64, f64)> {
        v.as_array().unwrap().iter().map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap())).collect()
    };
    // The token stream: its windows' p99 of time to first token, at the windows' instants, none before 20 ms.
    let s = &series[0];
    assert_eq!(s["first_of"], "token", "{s}");
    let first = pairs(&s["first"]);
    let times: Vec<f64> = s["windows"].as_array().unwrap().iter().map(|w| w[0].as_f64().unwrap()).collect();
    assert!(first.len() >= 3 && first.iter().all(|(t, _)| times.contains(t)), "{first:?} at {times:?}");
    assert!(first.iter().all(|(_, ms)| *ms >= 19.8), "the first token comes 20 ms after the request: {first:?}");
    // Its gaps by percentile: 5 gaps an answer, 3 ms apart unless read together, rising to their maximum.
    let gaps = pairs(&s["gaps_spectrum"]);
    assert!(gaps.len() > 10 && gaps.windows(2).all(|w| w[0].1 <= w[1].1), "{gaps:?}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    let most = doc["steps"][0]["events"]["gaps"]["max"].as_f64().unwrap() / 1000.0;
    assert!((gaps.last().unwrap().1 - most).abs() <= most * 0.01, "{gaps:?} against the document's {most} ms");
    // Its output tokens a second per window (6 an answer), and per step TTFT p99, TPOT p99 and tokens/s.
    let per_s = pairs(&s["tokens"]);
    assert_eq!(per_s.len(), s["windows"].as_array().unwrap().len(), "{per_s:?}");
    assert!(per_s.iter().filter(|(_, n)| *n > 0.0).count() >= 3, "{per_s:?}");
    let point = &s["points"][0];
    assert!(point["ttft_p99_ms"].as_f64().unwrap() >= 19.8 && point["tpot_p99_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(point["tokens_per_s"], doc_tokens_per_s(&tokens), "{point}");
    // The plain run: its time to first byte per window, no gaps.
    let p = &series[1];
    assert!(p["tokens"].as_array().unwrap().is_empty() && p["points"][0].get("ttft_p99_ms").is_none(), "{p}");
    assert_eq!(p["first_of"], "byte", "{p}");
    assert!(pairs(&p["first"]).iter().all(|(_, ms)| *ms >= 1.98), "the server waits 2 ms: {}", p["first"]);
    assert!(!pairs(&p["first"]).is_empty() && pairs(&p["gaps_spectrum"]).is_empty(), "{p}");
    // A document written before windows kept the first byte has nothing to draw there.
    assert!(
        series[2]["first"].as_array().unwrap().is_empty() && series[2]["gaps_spectrum"].as_array().unwrap().is_empty()
    );
    // The page's script draws one chart per kind of first (byte, token) and the gaps' chart; tests/report_browser.rs
    // counts them drawn in Chromium.
    for title in ["\"Time to first \" + kind + \", p99 per second\"", "\"Inter-token latency\""] {
        assert!(page.contains(title), "{title}");
    }
}
