//! Reports and charts: result documents, drnbench CSVs and study directories read into one model (a series of
//! points per target), which the HTML report (`html.rs`) and the one-chart images (`chart.rs`) draw.
//!
//! The files are read by `crate::inputs`; [`load_input`] makes a file or a study directory into inputs, and
//! `commands::report` gives the documents of history references to [`input_from_document`].

pub mod chart;
pub mod html;
mod inputs;
mod views;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::CliError;
use crate::inputs::drnbench::CsvError;
use crate::inputs::json_reason;
use crate::inputs::result::{Contents, ReadError, read_file};
use crate::inputs::study::{MANIFEST, ManifestError, StudyCase, read_cases};
use crate::metrics::LatencyHistogram;
use crate::plan::slo::Slo;
use crate::result::{ResultDocument, StepResult};
pub use inputs::*;
pub use views::spectrum;
use views::{first_per_window, open_per_window, pooled_gaps, ramp_view, tokens_per_window, windows};

/// What the report and the charts draw: one series per input.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub title: String,
    /// `hakaru VERSION`.
    pub generator: String,
    pub series: Vec<Series>,
    /// What the reader should know about the inputs (e.g. histograms that could not be read).
    pub notes: Vec<String>,
    /// Every target with repeated runs against the first one, as `hakaru compare` judges them.
    pub verdicts: Vec<VerdictRow>,
    /// A study's answer, what the page leads with: per target, workload and phase (and sweep step), the mean over
    /// the repetitions and its 95 % interval; empty for other inputs.
    pub answer: Vec<AnswerRow>,
    /// The answer in sentences, the page's first lines: which target served more and by how much (with its
    /// interval, as `compare` judges it), where each sweep's latency rises, and what one run served.
    pub headline: Vec<String>,
}

/// One target's figures in one place of a study (a workload and phase, a sweep's step) over its repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerRow {
    /// The workload and phase (`compare::input::study_group_title`), as the verdicts name it.
    pub group: String,
    /// A sweep's load point (`c=4`); empty for a fixed load.
    pub point: String,
    pub target: String,
    /// The repetitions that ran to the end: the samples.
    pub n: usize,
    pub ok_per_s: Bar,
    pub mean_ms: Option<Bar>,
    pub p99_ms: Option<Bar>,
}

/// One input's figures: its steps as points, and what its analysis found.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub name: String,
    pub origin: String,
    /// `result` or `drnbench`.
    pub kind: String,
    /// What the steps vary: `clients`, `rate`, or `none` for a single run.
    pub axis: String,
    /// Request body bytes (`settings.body_bytes`); null for drnbench.
    pub payload_bytes: Option<usize>,
    pub points: Vec<Point>,
    pub knee_mean: Option<f64>,
    pub knee_p99: Option<f64>,
    pub objective: Option<Objective>,
    /// The percentile spectrum of every step's successes pooled: (1 / (1 - p), latency ms).
    pub spectrum: Vec<[f64; 2]>,
    /// Per second, every step one after another: (seconds from the first step's start, requests/s, p50 ms,
    /// p99 ms, failures/s); the latencies are the successes', null in a second without one.
    pub windows: Vec<[f64; 5]>,
    /// Per second, as `windows` (the same instants): (seconds from the start, p99 ms) of the time to first byte, or
    /// of the first event (a token stream: first token) when the run read its answers as events; empty when the
    /// documents have none (key-value runs, documents written before windows kept it).
    pub first: Vec<[f64; 2]>,
    /// What `first` times: `byte`, `event` or `token`.
    pub first_of: String,
    /// `--events tokens`, per second as `windows`: (seconds from the start, output tokens/s); empty otherwise.
    pub tokens: Vec<[f64; 2]>,
    /// Per second, as `windows`: (seconds from the start, connections open at the window's end); empty when the
    /// documents have no windows.
    pub open: Vec<[f64; 2]>,
    /// Where each step after the first begins on `windows`' clock (seconds): the lines over time break there, so a
    /// sweep's steps are not joined into one line.
    pub step_starts: Vec<f64>,
    /// `--events`: the percentile spectrum of the gaps between events (a token stream: inter-token latency), every
    /// step's gaps pooled, as `spectrum`; empty without events.
    pub gaps_spectrum: Vec<[f64; 2]>,
    /// Status -> requests, every step together.
    pub status: BTreeMap<String, u64>,
    /// Error kind -> requests, every step together.
    pub errors: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    pub interrupted: bool,
    /// Repeated runs (`--runs`): the mean of each figure over the complete runs and its 95 % interval.
    pub runs: Option<RunsView>,
    /// A ramp inside the run (`--stages`, `--rate-stages`): its target per window and its knees as instants, for
    /// the over-time charts. Null without a ramp.
    pub ramp: Option<RampView>,
    /// A study case's target: the page draws the repetitions of one target in shades of one colour. Null for
    /// other inputs (each its own colour).
    pub target: Option<String>,
}

/// A ramp over time: what the page draws beside the windows.
#[derive(Clone, Debug, Serialize)]
pub struct RampView {
    /// `rate` (requests per second, drawn on the throughput chart) or `clients` (a chart of its own).
    pub of: String,
    /// Per window (as `windows` keeps them): (seconds from the start, the ramp's target at the window's middle).
    pub target: Vec<[f64; 2]>,
    /// The knees the analysis found (a ramp's estimate), each at the instant the ramp asked that load.
    pub knees: Vec<RampKnee>,
}

/// A ramp's knee on the time axis.
#[derive(Clone, Debug, Serialize)]
pub struct RampKnee {
    /// `mean` or `p99`: the latency that climbed.
    pub stat: String,
    /// The load at the knee: clients or requests per second.
    pub value: f64,
    /// Seconds from the start at which the rising ramp asked `value`.
    pub t: f64,
}

/// A result of repeated runs, for the bars with intervals.
#[derive(Clone, Debug, Serialize)]
pub struct RunsView {
    pub n: usize,
    pub ok_per_s: Bar,
    pub p99_ms: Bar,
}

/// A mean and its 95 % confidence interval (the runs' range when there are too few for one).
#[derive(Clone, Debug, Serialize)]
pub struct Bar {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A target against the baseline on one figure, as `hakaru compare` gives it (one cell of its table).
#[derive(Clone, Debug, Serialize)]
pub struct VerdictRow {
    /// A study's `workload W, phase P`; empty for inputs with repeated runs.
    pub group: String,
    /// A sweep's load point (`c=4`); empty for a fixed load.
    pub point: String,
    pub target: String,
    pub baseline: String,
    /// `ok/s`, `mean`, `p50`, `p99`, `p99.9` or `failed`.
    pub metric: String,
    /// The target's value over the baseline's; null when either is missing or the baseline's is 0.
    pub ratio: Option<f64>,
    /// Fieller's 95 % interval of the ratio of the mean per-run values; null when unbounded or not tested.
    pub interval: Option<[f64; 2]>,
    /// Welch's two-sided p-value, this comparison alone; null when not tested.
    pub p: Option<f64>,
    /// `p` adjusted over every comparison of the report (Holm), what the verdict is judged on.
    pub p_adjusted: Option<f64>,
    /// `p` and `p_adjusted` as `compare` prints them (`0.0123`, `<0.0001`; empty when not tested): the page
    /// shows these, so both say the same.
    pub p_text: String,
    pub p_adjusted_text: String,
    /// compare's words: `faster`, `slower`, `no significant difference`, `too few runs to tell`, ...
    pub verdict: String,
}

/// One step.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub label: String,
    pub clients: f64,
    /// Open loop: requests per second asked for.
    pub rate: Option<f64>,
    /// The value on the series' axis: clients or rate.
    pub x: f64,
    pub requests: u64,
    /// Requests ended per second (drnbench's queries_per_second).
    pub qps: f64,
    /// Successes per second; null for drnbench, which does not tell.
    pub ok_per_s: Option<f64>,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Every reported percentile of the successes (`p50` ... `p99.99`), for an objective on any of them.
    pub percentiles_ms: BTreeMap<String, f64>,
    pub failed: u64,
    pub failed_percent: f64,
    /// Average answer bytes per response.
    pub answer_bytes: Option<f64>,
    pub server_cpu: Option<f64>,
    pub generator_cpu: Option<f64>,
    /// Probe name -> change during the step.
    pub probes: BTreeMap<String, f64>,
    /// `--events`: the median time to first event (a token stream: first token) and the median gap between events,
    /// milliseconds; absent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_event_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_ms: Option<f64>,
    /// `--events`: the p99 of the time to first event (token), milliseconds; `--events tokens`: TPOT's p99,
    /// output tokens a second, and with `--goodput` the share of requests that met every objective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_percent: Option<f64>,
}

/// A capacity search's objective: the latency bound drawn as a line, and the rate found.
#[derive(Clone, Debug, Serialize)]
pub struct Objective {
    pub text: String,
    /// `p99`, `mean`, `max`.
    pub stat: String,
    pub limit_ms: f64,
    pub capacity_rate: Option<f64>,
}

impl Report {
    pub fn build(title: &str, inputs: &[Input]) -> Report {
        let mut notes = Vec::new();
        let mut series: Vec<Series> = inputs.iter().map(|i| series_of(i, &mut notes)).collect();
        // Two inputs with one name (the same target measured twice) are told apart by their file.
        let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
        for (s, input) in series.iter_mut().zip(inputs) {
            if names.iter().filter(|n| **n == s.name).count() > 1 {
                let file = Path::new(&input.origin).file_stem().map(|f| f.to_string_lossy().into_owned());
                s.name = format!("{} ({})", s.name, file.unwrap_or_else(|| input.origin.clone()));
            }
        }
        let verdicts = verdicts(&series, inputs);
        let answer = answer(&series, inputs);
        let headline = headline(&series, &verdicts);
        Report {
            title: title.into(),
            generator: format!("hakaru {}", env!("CARGO_PKG_VERSION")),
            series,
            notes,
            verdicts,
            answer,
            headline,
        }
    }
}

/// A series' step with the most successes a second, with that figure.
fn best(s: &Series) -> Option<(f64, &Point)> {
    s.points.iter().filter_map(|p| Some((p.ok_per_s?, p))).max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The most sentences the page leads with: more is a table's work.
const HEADLINE_SENTENCES: usize = 6;

/// The report's answer in sentences ([`Report::headline`]): compare's ok/s verdicts first (each target against the
/// baseline, its ratio and interval), else the inputs' best throughput side by side; then each sweep's knee.
fn headline(series: &[Series], verdicts: &[VerdictRow]) -> Vec<String> {
    let mut said = Vec::new();
    for v in verdicts.iter().filter(|v| v.metric == "ok/s") {
        let Some(ratio) = v.ratio else { continue };
        let place = [v.group.as_str(), v.point.as_str()].iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>();
        let place = if place.is_empty() { String::new() } else { format!(" ({})", place.join(", ")) };
        let interval = v.interval.map(|[a, b]| format!(", 95 % interval {a:.2} to {b:.2}")).unwrap_or_default();
        said.push(format!(
            "{} served {ratio:.2} times the successes a second of {}{place}{interval}: {}.",
            v.target, v.baseline, v.verdict
        ));
    }
    if said.is_empty() {
        let mut ranked: Vec<(f64, &Series, &Point)> =
            series.iter().filter_map(|s| best(s).map(|(q, p)| (q, s, p))).collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        match ranked.as_slice() {
            [] => {}
            [(q, s, p)] => said.push(format!(
                "{} served {q:.1} successes a second{}{}.",
                s.name,
                p.p99_ms.map(|ms| format!(" with p99 {ms:.2} ms")).unwrap_or_default(),
                if s.points.len() > 1 { format!(" at its best step ({})", p.label) } else { String::new() }
            )),
            [(q, s, _), rest @ ..] => {
                let others: Vec<String> =
                    rest.iter().map(|(r, o, _)| format!("{} {r:.1} ({:.2} times)", o.name, r / q.max(1e-9))).collect();
                said.push(format!(
                    "{} served the most successes a second, {q:.1}; {}. One run each: give --runs 5 for an interval.",
                    s.name,
                    others.join(", ")
                ));
            }
        }
    }
    for s in series.iter().filter(|s| s.axis != "none") {
        let unit = if s.axis == "rate" { "req/s" } else { "clients" };
        if let Some(knee) = s.knee_mean {
            let peak = best(s).map(|(q, _)| format!(", at most {q:.1} successes a second")).unwrap_or_default();
            said.push(format!("{}: latency rises above {knee} {unit}{peak}.", s.name));
        }
    }
    said.truncate(HEADLINE_SENTENCES);
    said
}

/// The verdicts `hakaru compare` gives on the same inputs, from the same code (`compare::compare_groups`, one
/// family): a study's targets per workload and phase, the first target the baseline; other inputs with repeated
/// runs (`--runs`) against the first of them.
fn verdicts(series: &[Series], inputs: &[Input]) -> Vec<VerdictRow> {
    use crate::compare::input::{add_document, side_in};
    use crate::compare::{Group, Side, compare_groups};
    let mut groups: Vec<Group> = Vec::new();
    let mut repeated = Group { title: String::new(), sides: Vec::new() };
    for (s, input) in series.iter().zip(inputs) {
        let Source::Result(doc) = &input.source else { continue };
        match &input.case {
            Some(case) => {
                for t in &case.targets {
                    side_in(&mut groups, &case.group, t);
                }
                if case.ok {
                    add_document(side_in(&mut groups, &case.group, &case.target), doc, &input.origin);
                }
            }
            None if doc.runs.is_some() => {
                let mut side = Side::new(&s.name);
                add_document(&mut side, doc, &input.origin);
                repeated.sides.push(side);
            }
            None => {}
        }
    }
    if repeated.sides.len() > 1 {
        groups.push(repeated);
    }
    groups.retain(|g| g.sides.len() > 1);
    // Sides of a study are unique by construction, and a report's inputs by name: no baseline to look up fails.
    let Ok(compared) = compare_groups(&groups, None) else { return Vec::new() };
    verdict_rows(&compared)
}

/// compare's cells as the report's rows, one for each target against the baseline.
fn verdict_rows(compared: &[crate::compare::GroupComparison]) -> Vec<VerdictRow> {
    let mut rows = Vec::new();
    for g in compared {
        for p in &g.points {
            for r in &p.rows {
                for c in r.cells.iter().skip(1) {
                    let [p_text, p_adjusted_text] = c.p_texts();
                    rows.push(VerdictRow {
                        group: g.title.clone(),
                        point: p.point.clone(),
                        target: c.side.clone(),
                        baseline: g.baseline.clone(),
                        metric: r.metric.name().into(),
                        ratio: c.ratio,
                        interval: c.ci95,
                        p: c.p,
                        p_adjusted: c.p_adjusted,
                        p_text,
                        p_adjusted_text,
                        verdict: c.verdict_words(r.metric),
                    });
                }
            }
        }
    }
    rows
}

/// A study's answer: the cases that ran to the end, per group, target (in the study's order) and step, their
/// mean and its 95 % interval over the repetitions (each repetition one sample, as `compare` takes them).
fn answer(series: &[Series], inputs: &[Input]) -> Vec<AnswerRow> {
    // (group, target, point) -> the repetitions' points, in the order first met.
    type Place<'a> = ((String, String, String), Vec<&'a Point>);
    let mut places: Vec<Place> = Vec::new();
    for (s, input) in series.iter().zip(inputs) {
        let Some(case) = input.case.as_ref().filter(|c| c.ok) else { continue };
        for p in &s.points {
            let point = if s.axis == "none" { String::new() } else { p.label.clone() };
            let key = (case.group.clone(), case.target.clone(), point);
            match places.iter_mut().find(|(k, _)| *k == key) {
                Some((_, runs)) => runs.push(p),
                None => places.push((key, vec![p])),
            }
        }
    }
    // Targets in the study's order within each group, as the verdicts put them.
    let order = |group: &str, target: &str| {
        inputs
            .iter()
            .filter_map(|i| i.case.as_ref())
            .find(|c| c.group == group)
            .and_then(|c| c.targets.iter().position(|t| t == target))
    };
    let groups: Vec<String> = places.iter().map(|((g, _, _), _)| g.clone()).fold(Vec::new(), |mut all, g| {
        if !all.contains(&g) {
            all.push(g);
        }
        all
    });
    places.sort_by_key(|((g, t, _), _)| (groups.iter().position(|x| x == g), order(g, t)));
    places
        .into_iter()
        .map(|((group, target, point), runs)| {
            let of = |f: &dyn Fn(&Point) -> Option<f64>| {
                let values: Vec<f64> = runs.iter().filter_map(|p| f(p)).collect();
                (values.len() == runs.len()).then(|| crate::result::Spread::of(&values)).flatten().map(|s| bar(&s, 1.0))
            };
            AnswerRow {
                group,
                point,
                target,
                n: runs.len(),
                ok_per_s: of(&|p| p.ok_per_s.or(Some(p.qps))).expect("every point has a throughput"),
                mean_ms: of(&|p| p.mean_ms),
                p99_ms: of(&|p| p.p99_ms),
            }
        })
        .collect()
}

/// A spread as a bar: its mean and 95 % interval (the values' range when there are too few for one), scaled.
fn bar(s: &crate::result::Spread, scale: f64) -> Bar {
    let (lo, hi) = s.ci95.map_or((s.min, s.max), |c| (c[0], c[1]));
    Bar { mean: s.mean * scale, lo: lo * scale, hi: hi * scale }
}

/// The runs of a document with `--runs`, as bars.
fn runs_view(doc: &ResultDocument) -> Option<RunsView> {
    let r = doc.runs.as_ref()?;
    Some(RunsView { n: r.ok_per_s.values.len(), ok_per_s: bar(&r.ok_per_s, 1.0), p99_ms: bar(&r.p99_us, 0.001) })
}

fn ms(us: f64) -> f64 {
    (us / 1000.0 * 1e4).round() / 1e4
}

fn series_of(input: &Input, notes: &mut Vec<String>) -> Series {
    match &input.source {
        Source::Result(doc) => series_of_doc(input, doc, notes),
        Source::Drnbench(rows) => series_of_drnbench(input, rows),
    }
}

fn series_of_drnbench(input: &Input, rows: &[DrnbenchRow]) -> Series {
    let mut status = BTreeMap::new();
    let points = rows
        .iter()
        .map(|r| {
            // drnbench keeps percentages; counts come back from the request total.
            let failed_percent: f64 = r
                .status_percent
                .iter()
                .filter(|(code, _)| code.parse::<u16>().map_or(true, |c| !(200..400).contains(&c)))
                .map(|(_, p)| p)
                .sum();
            for (code, pct) in &r.status_percent {
                *status.entry(code.clone()).or_insert(0) += (pct / 100.0 * r.requests as f64).round() as u64;
            }
            Point {
                label: format!("c={}", r.clients),
                clients: r.clients as f64,
                rate: None,
                x: r.clients as f64,
                requests: r.requests,
                qps: r.qps,
                ok_per_s: None,
                mean_ms: r.mean_s.map(|s| ms(s * 1e6)),
                p50_ms: None,
                p99_ms: None,
                max_ms: r.max_s.map(|s| ms(s * 1e6)),
                percentiles_ms: BTreeMap::new(),
                failed: (failed_percent / 100.0 * r.requests as f64).round() as u64,
                failed_percent,
                answer_bytes: None,
                server_cpu: None,
                generator_cpu: None,
                probes: BTreeMap::new(),
                first_event_ms: None,
                gap_ms: None,
                ttft_p99_ms: None,
                tpot_p99_ms: None,
                tokens_per_s: None,
                goodput_percent: None,
            }
        })
        .collect();
    Series {
        name: input.label.clone(),
        origin: input.origin.clone(),
        kind: "drnbench".into(),
        axis: "clients".into(),
        payload_bytes: None,
        points,
        knee_mean: None,
        knee_p99: None,
        objective: None,
        spectrum: Vec::new(),
        windows: Vec::new(),
        first: Vec::new(),
        tokens: Vec::new(),
        first_of: "byte".into(),
        open: Vec::new(),
        step_starts: Vec::new(),
        gaps_spectrum: Vec::new(),
        status,
        errors: BTreeMap::new(),
        warnings: vec!["drnbench's CSV has no percentiles: only the mean latency is drawn".into()],
        interrupted: false,
        runs: None,
        ramp: None,
        target: input.case.as_ref().map(|c| c.target.clone()),
    }
}

fn series_of_doc(input: &Input, doc: &ResultDocument, notes: &mut Vec<String>) -> Series {
    let axis = match doc.settings.sweep.as_ref().map(|s| s.kind.as_str()) {
        Some("clients") => "clients",
        Some(_) => "rate",
        None => "none",
    };
    let points: Vec<Point> = doc.steps.iter().map(|s| point_of(s, axis)).collect();
    let mut pooled = LatencyHistogram::new();
    let mut unreadable = 0;
    for s in &doc.steps {
        match LatencyHistogram::from_base64(&s.histogram.data) {
            Ok(h) => pooled.merge(&h),
            Err(_) => unreadable += 1,
        }
    }
    if unreadable > 0 {
        notes.push(format!(
            "{}: {unreadable} step histogram(s) could not be decoded; the spectrum leaves them out",
            input.origin
        ));
    }
    let first_of = match doc.settings.events.as_deref() {
        Some("tokens") => "token",
        Some(_) => "event",
        None => "byte",
    };
    let gaps = pooled_gaps(input, doc, notes);
    let mut status = BTreeMap::new();
    let mut errors = BTreeMap::new();
    for s in &doc.steps {
        for (code, n) in &s.status {
            *status.entry(code.clone()).or_insert(0) += n;
        }
        for e in &s.error_kinds {
            *errors.entry(e.kind.clone()).or_insert(0) += e.count;
        }
    }
    let analysis = doc.analysis.as_ref();
    let objective = doc.settings.sweep.as_ref().and_then(|s| s.slo.as_deref()).and_then(|text| {
        // The first bound is the one drawn; a document's objective was checked when it was written.
        let slo = Slo::parse(text).ok()?;
        let bound = slo.bounds.first()?;
        Some(Objective {
            text: text.into(),
            // The percentile as the summaries key it (`p99.90` -> `p99.9`), so the page finds its values.
            stat: bound.percentile.map_or_else(|| bound.stat.clone(), crate::result::percentile_key),
            limit_ms: ms(bound.limit_us as f64),
            capacity_rate: analysis.and_then(|a| a.capacity.as_ref()).and_then(|c| c.rate),
        })
    });
    Series {
        name: input.label.clone(),
        origin: input.origin.clone(),
        kind: "result".into(),
        axis: axis.into(),
        payload_bytes: Some(doc.settings.body_bytes),
        points,
        knee_mean: analysis.and_then(|a| a.knee_mean),
        knee_p99: analysis.and_then(|a| a.knee_p99),
        objective,
        spectrum: spectrum(&pooled),
        windows: windows(&doc.steps),
        first: first_per_window(&doc.steps, first_of != "byte"),
        tokens: tokens_per_window(&doc.steps, first_of == "token"),
        first_of: first_of.into(),
        open: open_per_window(&doc.steps),
        step_starts: views::step_starts(&doc.steps),
        gaps_spectrum: spectrum(&gaps),
        status,
        errors,
        warnings: doc.warnings.clone(),
        interrupted: doc.interrupted,
        runs: runs_view(doc),
        ramp: ramp_view(doc),
        target: input.case.as_ref().map(|c| c.target.clone()),
    }
}

fn point_of(s: &StepResult, axis: &str) -> Point {
    let rate = s.load.rate;
    let clients = s.load.connections as f64;
    let have_latency = s.latency.count > 0;
    let tokens = s.events.as_ref().and_then(|e| e.tokens.as_ref());
    let lat = |us: f64| have_latency.then(|| ms(us));
    Point {
        label: s.label.clone(),
        clients,
        rate,
        x: if axis == "rate" { rate.unwrap_or(clients) } else { clients },
        requests: s.requests,
        qps: s.throughput.requests_per_s,
        ok_per_s: Some(s.throughput.ok_per_s),
        mean_ms: lat(s.latency.mean),
        p50_ms: lat(s.latency.percentile(50.0) as f64),
        p99_ms: lat(s.latency.percentile(99.0) as f64),
        max_ms: lat(s.latency.max as f64),
        percentiles_ms: if have_latency {
            s.latency.percentiles.iter().map(|(k, &us)| (k.clone(), ms(us as f64))).collect()
        } else {
            BTreeMap::new()
        },
        failed: s.failed,
        failed_percent: (s.failed_percent() * 100.0).round() / 100.0,
        answer_bytes: (s.responses > 0).then(|| (s.throughput.bytes_in as f64 / s.responses as f64).round()),
        server_cpu: s.server.as_ref().map(|p| p.cpu_percent_mean),
        generator_cpu: (s.generator.cores > 0).then_some(s.generator.cpu_percent),
        probes: s.probes.iter().filter_map(|p| Some((p.name.clone(), p.delta?))).collect(),
        first_event_ms: events_p50(s.events.as_ref().and_then(|e| e.first_event.as_ref())),
        gap_ms: events_p50(s.events.as_ref().and_then(|e| e.gaps.as_ref())),
        ttft_p99_ms: events_at(s.events.as_ref().and_then(|e| e.first_event.as_ref()), 99.0),
        tpot_p99_ms: events_at(tokens.and_then(|t| t.tpot.as_ref()), 99.0),
        tokens_per_s: tokens.map(|t| t.tokens_per_s),
        goodput_percent: s.events.as_ref().and_then(|e| e.goodput.as_ref()).map(|g| g.percent),
    }
}

fn events_p50(p: Option<&crate::result::phases::Phase>) -> Option<f64> {
    events_at(p, 50.0)
}

fn events_at(p: Option<&crate::result::phases::Phase>, q: f64) -> Option<f64> {
    p.map(|p| ms(p.latency.percentile(q) as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRNBENCH: &str = "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,\
average_elapsed_time,0,200\n1,996,33.2,0.001773766,0.238031643,0.019765581680722916,0,100.0\n\
2,1800,60.0,0.002,0.5,0.03,1.0,99.0\n";

    /// A file's text read as the report reads the file.
    fn load_text(origin: &str, stem: &str, text: &str) -> Result<Vec<Input>, CliError> {
        let contents = crate::inputs::result::read_text(Path::new(origin), text).map_err(|e| read_error(origin, e))?;
        Ok(vec![input_of(origin, stem, contents)])
    }

    #[test]
    fn a_drnbench_csv_reads_as_a_clients_series_with_counts_from_percentages() {
        let inputs = load_text("x.csv", "x", DRNBENCH).unwrap();
        let r = Report::build("t", &inputs);
        let s = &r.series[0];
        assert_eq!(s.axis, "clients");
        assert_eq!(s.points.len(), 2);
        assert_eq!(s.points[0].qps, 33.2);
        assert_eq!(s.points[0].mean_ms, Some(19.7656));
        assert_eq!(s.points[1].failed, 18);
        assert_eq!(s.status.get("0"), Some(&18));
        assert_eq!(s.status.get("200"), Some(&(996 + 1782)));
    }

    #[test]
    fn a_bad_drnbench_cell_names_its_line_and_column() {
        let bad = DRNBENCH.replace("33.2", "fast");
        let e = load_text("x.csv", "x", &bad).unwrap_err().to_string();
        assert!(e.contains("line 2 column 3 (queries_per_second): 'fast' is not a number"), "{e}");
        let e = load_text("y.csv", "y", "a,b\n1,2\n").unwrap_err().to_string();
        assert!(e.contains("input 'y.csv': line 1: the header is not drnbench's"), "{e}");
    }

    #[test]
    fn the_verdict_table_shows_p_as_compare_prints_it() {
        use crate::compare::{Group, Sample, Side, compare_groups};
        let run = |ok_per_s: f64| Sample {
            ok_per_s,
            mean_us: Some(1e6 / ok_per_s),
            p50_us: Some(1e6 / ok_per_s),
            p99_us: None,
            p999_us: None,
            requests: 1000,
            failed: 0,
            answers: 1000,
            histogram: None,
            first_event_us: None,
            tokens_per_s: None,
            tpot_us: None,
            goodput_per_s: None,
        };
        let side = |name: &str, values: [f64; 3]| Side {
            points: vec![(String::new(), values.map(run).to_vec())],
            ..Side::new(name)
        };
        let g = Group {
            title: String::new(),
            sides: vec![side("a", [200.0, 198.0, 201.0]), side("b", [100.0, 99.0, 101.0])],
        };
        let compared = compare_groups(&[g], None).unwrap();
        let rows = verdict_rows(&compared);
        let qps = rows.iter().find(|r| r.metric == "ok/s").unwrap();
        assert!(qps.p.unwrap() < 1e-4, "{qps:?}");
        assert_eq!((qps.p_text.as_str(), qps.p_adjusted_text.as_str()), ("<0.0001", "<0.0001"));
        // compare's own table prints the same cell the same way.
        assert_eq!(compared[0].points[0].rows[0].cells[1].p_texts(), [qps.p_text.clone(), qps.p_adjusted_text.clone()]);
        // The page shows these texts, not the numbers again.
        assert!(html::REPORT_JS.contains("v.p_text || \"–\", v.p_adjusted_text || \"–\""));
    }

    #[test]
    fn study_cases_of_one_target_are_told_apart_only_as_far_as_needed() {
        let input =
            |l: &str| Input { label: l.into(), origin: String::new(), source: Source::Drnbench(vec![]), case: None };
        let case = |t: &str, w: &str, p: &str, r: u64| StudyCase {
            target: t.into(),
            workload: Some(w.into()),
            phase: Some(p.into()),
            repetition: Some(r),
            status: None,
            file: None,
        };
        let cases = vec![
            (input("a"), case("a", "w", "cold", 1)),
            (input("a"), case("a", "w", "warm", 1)),
            (input("b"), case("b", "w", "cold", 1)),
        ];
        let labels: Vec<String> = disambiguate(cases).into_iter().map(|i| i.label).collect();
        assert_eq!(labels, ["a cold", "a warm", "b"]);
    }
}
