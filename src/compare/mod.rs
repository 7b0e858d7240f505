//! `compare`: two or more sides (result files, drnbench CSVs, a study's targets) point by point and metric by
//! metric, each against the baseline (the first, or `--baseline`): the ratio, and where both sides have
//! repeated runs a 95 % interval of the ratio and a verdict (faster, slower, no significant difference, too few
//! runs to tell, or too few answers per run for a percentile). `--fail-if` gates judge the interval, so noise
//! never fails a build.
//!
//! The sample is a run: a step of `--runs`, a case of a study, one file. Percentiles of a side are read from its
//! runs' histograms merged exactly; the interval and the test use one value per run. Verdicts come from
//! `verdict.rs`, judged over every comparison of one call of [`compare_groups`] at once (Holm), and so do the gates.

pub mod input;
pub mod render;
pub mod verdict;

use serde::Serialize;

use crate::base::units::format_count;
use crate::error::CliError;
use crate::metrics::LatencyHistogram;
use crate::metrics::stats;
use verdict::Test;

/// One run of a side at one load point.
#[derive(Clone, Debug)]
pub struct Sample {
    pub ok_per_s: f64,
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub requests: u64,
    pub failed: u64,
    /// Answers whose latency was timed (the successes): what the run's percentiles rest on.
    pub answers: u64,
    /// The latency histogram of the successes, when the input has one (not in drnbench CSV).
    pub histogram: Option<LatencyHistogram>,
    /// `--events`: the mean time to first event (a token stream: first token), microseconds.
    pub first_event_us: Option<f64>,
    /// `--events tokens`: output tokens a second.
    pub tokens_per_s: Option<f64>,
    /// `--events tokens`: the mean time per output token, microseconds.
    pub tpot_us: Option<f64>,
    /// `--goodput`: answers a second that met every objective.
    pub goodput_per_s: Option<f64>,
}

/// What is compared: one input (or one target of a study), its runs per load point.
#[derive(Clone, Debug)]
pub struct Side {
    pub name: String,
    /// Load point (`""` for a fixed load, `c=4`, `rate=1000` in sweeps) -> its runs, in the order first seen.
    pub points: Vec<(String, Vec<Sample>)>,
    /// What the reader should know about this side's inputs.
    pub notes: Vec<String>,
    /// The loads its inputs ran (command, model, connections, rate, length), each once: sides that ran
    /// different loads are compared with a warning.
    pub loads: Vec<String>,
    /// The target URLs its inputs measured, each once: what `--name LABEL=URL` finds it by.
    pub targets: Vec<String>,
    /// The protocols its inputs were measured over (`HTTP/2`, `gRPC` ...), each once: the text says them, as two
    /// results of one URL over HTTP/1.1 and HTTP/2 look alike otherwise.
    pub protocols: Vec<String>,
}

impl Side {
    pub fn new(name: &str) -> Side {
        Side {
            name: name.to_string(),
            points: Vec::new(),
            notes: Vec::new(),
            loads: Vec::new(),
            targets: Vec::new(),
            protocols: Vec::new(),
        }
    }

    pub fn add(&mut self, point: &str, sample: Sample) {
        match self.points.iter_mut().find(|(p, _)| p == point) {
            Some((_, runs)) => runs.push(sample),
            None => self.points.push((point.to_string(), vec![sample])),
        }
    }

    fn runs_at(&self, point: &str) -> Option<&[Sample]> {
        self.points.iter().find(|(p, _)| p == point).map(|(_, r)| r.as_slice())
    }
}

/// Sides compared with each other (a study has one group per workload and phase).
#[derive(Clone, Debug)]
pub struct Group {
    /// Empty for files given on the command line.
    pub title: String,
    pub sides: Vec<Side>,
}

/// The figures compared, in the order printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Successes per second: higher is faster.
    Qps,
    Mean,
    P50,
    P99,
    P999,
    /// Failed requests, percent of the requests.
    Failed,
    /// `--events`: mean time to first event (a token stream: time to first token), microseconds.
    Ttft,
    /// `--events tokens`: output tokens a second: higher is faster.
    TokensPerS,
    /// `--events tokens`: mean time per output token, microseconds.
    Tpot,
    /// `--goodput`: answers a second that met every objective: higher is better.
    Goodput,
}

pub const METRICS: [Metric; 6] = [Metric::Qps, Metric::Mean, Metric::P50, Metric::P99, Metric::P999, Metric::Failed];
/// Compared too where some run of a group read its answers as events (`--events`).
pub const STREAM_METRICS: [Metric; 4] = [Metric::Ttft, Metric::TokensPerS, Metric::Tpot, Metric::Goodput];

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Qps => "ok/s",
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Failed => "failed",
            Metric::Ttft => "ttft",
            Metric::TokensPerS => "tok/s",
            Metric::Tpot => "tpot",
            Metric::Goodput => "goodput",
        }
    }

    fn named(name: &str) -> Option<Metric> {
        Some(match name {
            "qps" | "rps" | "ok/s" => Metric::Qps,
            "mean" | "avg" => Metric::Mean,
            "p50" => Metric::P50,
            "p99" => Metric::P99,
            "p99.9" | "p999" => Metric::P999,
            "errors" | "failed" => Metric::Failed,
            "ttft" | "first_event" => Metric::Ttft,
            "tok/s" | "tokens/s" | "tps" | "tokens_per_s" => Metric::TokensPerS,
            "tpot" => Metric::Tpot,
            "goodput" => Metric::Goodput,
            _ => return None,
        })
    }

    /// One run's value.
    fn of_run(self, s: &Sample) -> Option<f64> {
        match self {
            Metric::Qps => Some(s.ok_per_s),
            Metric::Mean => s.mean_us,
            Metric::P50 => s.p50_us,
            Metric::P99 => s.p99_us,
            Metric::P999 => s.p999_us,
            Metric::Failed => (s.requests > 0).then(|| 100.0 * s.failed as f64 / s.requests as f64),
            Metric::Ttft => s.first_event_us,
            Metric::TokensPerS => s.tokens_per_s,
            Metric::Tpot => s.tpot_us,
            Metric::Goodput => s.goodput_per_s,
        }
    }

    /// The side's value over its runs: throughput averaged, latency from the histograms merged (mean of the
    /// runs' values only when some run has no histogram: then no percentile), failures over all requests.
    fn pooled(self, runs: &[Sample]) -> Option<f64> {
        let merged = || -> Option<LatencyHistogram> {
            let mut h = LatencyHistogram::new();
            for r in runs {
                h.merge(r.histogram.as_ref()?);
            }
            (!h.is_empty()).then_some(h)
        };
        match self {
            Metric::Qps => Some(stats::mean(&runs.iter().map(|r| r.ok_per_s).collect::<Vec<_>>())),
            Metric::Mean => merged().map(|h| h.mean()).or_else(|| {
                let v: Vec<f64> = runs.iter().filter_map(|r| r.mean_us).collect();
                (!v.is_empty()).then(|| stats::mean(&v))
            }),
            Metric::P50 => merged().map(|h| h.percentile(50.0) as f64),
            Metric::P99 => merged().map(|h| h.percentile(99.0) as f64),
            Metric::P999 => merged().map(|h| h.percentile(99.9) as f64),
            Metric::Failed => {
                let requests: u64 = runs.iter().map(|r| r.requests).sum();
                (requests > 0).then(|| 100.0 * runs.iter().map(|r| r.failed).sum::<u64>() as f64 / requests as f64)
            }
            // The runs' own figures averaged, as throughput is: a run is the sample.
            Metric::Ttft | Metric::TokensPerS | Metric::Tpot | Metric::Goodput => {
                let v: Vec<f64> = runs.iter().filter_map(|r| self.of_run(r)).collect();
                (!v.is_empty()).then(|| stats::mean(&v))
            }
        }
    }

    /// The percentile a metric is, e.g. 99.9; None for the others.
    fn percentile(self) -> Option<f64> {
        match self {
            Metric::P50 => Some(50.0),
            Metric::P99 => Some(99.0),
            Metric::P999 => Some(99.9),
            _ => None,
        }
    }

    /// Whether a higher value is better (throughput) rather than worse (latency, failures).
    fn higher_is_better(self) -> bool {
        matches!(self, Metric::Qps | Metric::TokensPerS | Metric::Goodput)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Baseline,
    Faster,
    Slower,
    /// Fewer failed requests (the failure share).
    Fewer,
    More,
    NoSignificantDifference,
    /// Fewer than two runs on a side: no test can tell.
    TooFewRuns,
    /// A percentile from runs too short to estimate it (fewer than 10 answers beyond it in some run).
    TooFewAnswers,
    /// The figure is missing on a side (no successes, no percentiles in a CSV, no such point).
    NotAvailable,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Fewer => "fewer failures",
            Verdict::More => "more failures",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::TooFewRuns => "too few runs to tell",
            Verdict::TooFewAnswers => "too few answers per run",
            Verdict::NotAvailable => "-",
        }
    }
}

/// One side's figure at one point, against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub side: String,
    /// Runs at this point.
    pub n: usize,
    /// The pooled value: microseconds, successes per second, or percent failed.
    pub value: Option<f64>,
    /// value / the baseline's value.
    pub ratio: Option<f64>,
    /// 95 % interval of the ratio of the mean per-run values (Fieller, cut at 0); null without two runs a side,
    /// or when unbounded.
    pub ci95: Option<[f64; 2]>,
    /// Welch's two-sided p-value on the per-run values, this comparison alone.
    pub p: Option<f64>,
    /// `p` adjusted over every comparison made at once (Holm): what the verdict is judged on.
    pub p_adjusted: Option<f64>,
    /// For a percentile: the fewest answers of any run on either side, and how many each run needs.
    pub answers_per_run: Option<u64>,
    pub answers_needed: Option<u64>,
    pub verdict: Verdict,
    /// The per-run values tested (baseline, this side), for the gates.
    #[serde(skip)]
    runs: Option<[Vec<f64>; 2]>,
    /// The comparison, until the family judges it.
    #[serde(skip)]
    test: Option<Test>,
}

impl Cell {
    /// The p-value and its Holm-adjusted value as every table prints them (`compare`'s and the report's):
    /// [`p_text`], empty when not tested.
    pub fn p_texts(&self) -> [String; 2] {
        [self.p.map_or(String::new(), p_text), self.p_adjusted.map_or(String::new(), p_text)]
    }

    /// The verdict in words; a percentile without enough answers says how many it had and needs.
    pub fn verdict_words(&self, metric: Metric) -> String {
        match (self.verdict, self.answers_per_run, self.answers_needed) {
            (Verdict::TooFewAnswers, Some(had), Some(needed)) => format!(
                "too few answers per run for {} ({}; {} needed)",
                metric.name(),
                format_count(had),
                format_count(needed)
            ),
            (v, _, _) => v.words().to_string(),
        }
    }
}

/// One metric at one point: the baseline first, then every other side.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub metric: Metric,
    pub cells: Vec<Cell>,
}

/// One load point of a group.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// `""` for a fixed load, else `c=4`, `rate=1000`.
    pub point: String,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GroupComparison {
    pub title: String,
    pub baseline: String,
    pub points: Vec<Point>,
    pub notes: Vec<String>,
    /// Each side with the protocols it was measured over, for the text (not in `--json`'s schema).
    #[serde(skip)]
    pub protocols: Vec<(String, String)>,
}

/// The whole comparison, as `--json` writes it.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schema: String,
    pub groups: Vec<GroupComparison>,
    pub fail_if: Vec<FailIfResult>,
}

/// Compares every side of every group with its baseline (the side named `baseline`, else the first), and judges
/// all those comparisons as one family: this is what `compare` prints and the report shows.
pub fn compare_groups(groups: &[Group], baseline: Option<&str>) -> Result<Vec<GroupComparison>, CliError> {
    let mut out = groups.iter().map(|g| compare_group(g, baseline)).collect::<Result<Vec<_>, _>>()?;
    let mut cells: Vec<(Metric, &mut Cell)> = Vec::new();
    for row in out.iter_mut().flat_map(|g| &mut g.points).flat_map(|p| &mut p.rows) {
        let metric = row.metric;
        cells.extend(row.cells.iter_mut().skip(1).filter(|c| c.test.is_some()).map(|c| (metric, c)));
    }
    let tests: Vec<Test> = cells.iter_mut().filter_map(|(_, c)| c.test.take()).collect();
    let calls = verdict::judge(&tests.iter().collect::<Vec<_>>());
    for ((metric, c), call) in cells.into_iter().zip(calls) {
        c.p_adjusted = Some(call.p_adjusted);
        c.verdict = verdict_of(metric, call.higher);
    }
    Ok(out)
}

/// Compares every side of `group` with its baseline; the verdicts wait for the family ([`compare_groups`]).
fn compare_group(group: &Group, baseline: Option<&str>) -> Result<GroupComparison, CliError> {
    let bi = match baseline {
        None => 0,
        Some(b) => group.sides.iter().position(|s| s.name == b).ok_or_else(|| {
            let names: Vec<&str> = group.sides.iter().map(|s| s.name.as_str()).collect();
            CliError::new(format!("--baseline '{b}': no such input; give one of: {}", names.join(", ")))
        })?,
    };
    let base = &group.sides[bi];
    let others: Vec<&Side> = group.sides.iter().enumerate().filter(|(i, _)| *i != bi).map(|(_, s)| s).collect();
    let mut notes: Vec<String> = group.sides.iter().flat_map(|s| s.notes.iter().cloned()).collect();
    for s in &others {
        if !s.loads.is_empty() && !base.loads.is_empty() && s.loads != base.loads {
            notes.push(format!(
                "{} ran another load ({}) than the baseline ({}): the comparison may not be fair",
                s.name,
                s.loads.join("; "),
                base.loads.join("; ")
            ));
        }
    }
    // Points in the baseline's order, then those only other sides have.
    let mut points: Vec<String> = base.points.iter().map(|(p, _)| p.clone()).collect();
    for s in &others {
        for (p, _) in &s.points {
            if !points.contains(p) {
                notes.push(format!("{}: point {p} is not in the baseline", s.name));
                points.push(p.clone());
            }
        }
    }
    // A streamed figure is compared where some run of the group has it (tpot: a token stream; goodput: --goodput).
    let runs = || group.sides.iter().flat_map(|s| &s.points).flat_map(|(_, runs)| runs);
    let streamed = runs().any(|r| r.first_event_us.is_some());
    let has = |m: Metric| matches!(m, Metric::Ttft | Metric::TokensPerS) || runs().any(|r| m.of_run(r).is_some());
    let stream = STREAM_METRICS.iter().filter(|m| streamed && has(**m));
    let metrics: Vec<Metric> = METRICS.iter().chain(stream).copied().collect();
    let empty: &[Sample] = &[];
    let points = points
        .into_iter()
        .map(|point| {
            let base_runs = base.runs_at(&point).unwrap_or(empty);
            let rows = metrics
                .iter()
                .map(|&metric| {
                    let base_value = (!base_runs.is_empty()).then(|| metric.pooled(base_runs)).flatten();
                    let mut cells = vec![Cell {
                        side: base.name.clone(),
                        n: base_runs.len(),
                        value: base_value,
                        ratio: None,
                        ci95: None,
                        p: None,
                        p_adjusted: None,
                        answers_per_run: None,
                        answers_needed: None,
                        verdict: Verdict::Baseline,
                        runs: None,
                        test: None,
                    }];
                    for s in &others {
                        let runs = s.runs_at(&point).unwrap_or(empty);
                        cells.push(cell(metric, &s.name, base_runs, base_value, runs));
                    }
                    Row { metric, cells }
                })
                .collect();
            Point { point, rows }
        })
        .collect::<Vec<Point>>();
    // How to get a verdict on a percentile that had none: once per metric, with the fewest answers seen.
    for &metric in &metrics {
        let short = points.iter().flat_map(|p| &p.rows).filter(|r| r.metric == metric).flat_map(|r| &r.cells);
        let short = short.filter(|c| c.verdict == Verdict::TooFewAnswers);
        let Some(needed) = short.clone().filter_map(|c| c.answers_needed).max() else { continue };
        let had = short.filter_map(|c| c.answers_per_run).min().unwrap_or(0);
        notes.push(format!(
            "{} has no verdict: each run needs {} answers (10 beyond it), the shortest had {}; give the runs a \
             longer duration (-d, or duration in a study's [load])",
            metric.name(),
            format_count(needed),
            format_count(had)
        ));
    }
    // One run a side: the ratio is printed, but nothing tells it from run-to-run noise. Say so once, and how to get
    // verdicts.
    let single = points.iter().flat_map(|p| &p.rows).flat_map(|r| &r.cells).any(|c| c.verdict == Verdict::TooFewRuns);
    if single {
        notes.push(
            "one run a side cannot tell a difference from run-to-run noise: the ratios above are measured, not \
             judged; run each side 5 times (--runs 5, or repeat = 5 in a study) for verdicts"
                .to_string(),
        );
    }
    let protocols = group.sides.iter().map(|s| (s.name.clone(), s.protocols.join(" and "))).collect();
    Ok(GroupComparison { title: group.title.clone(), baseline: base.name.clone(), points, notes, protocols })
}

fn cell(metric: Metric, name: &str, base_runs: &[Sample], base_value: Option<f64>, runs: &[Sample]) -> Cell {
    let value = (!runs.is_empty()).then(|| metric.pooled(runs)).flatten();
    let ratio = match (value, base_value) {
        (Some(v), Some(b)) if b != 0.0 => Some(v / b),
        _ => None,
    };
    let mut c = Cell {
        side: name.into(),
        n: runs.len(),
        value,
        ratio,
        ci95: None,
        p: None,
        p_adjusted: None,
        answers_per_run: None,
        answers_needed: None,
        verdict: Verdict::NotAvailable,
        runs: None,
        test: None,
    };
    let per_run = |rs: &[Sample]| -> Option<Vec<f64>> { rs.iter().map(|r| metric.of_run(r)).collect() };
    let (Some(a), Some(b)) = (per_run(base_runs), per_run(runs)) else { return c };
    if value.is_none() || base_value.is_none() || a.is_empty() || b.is_empty() {
        return c;
    }
    if a.len() < 2 || b.len() < 2 {
        c.verdict = Verdict::TooFewRuns;
        return c;
    }
    if let Some(percentile) = metric.percentile() {
        let needed = verdict::answers_needed(percentile);
        let had = base_runs.iter().chain(runs).map(|r| r.answers).min().unwrap_or(0);
        (c.answers_per_run, c.answers_needed) = (Some(had), Some(needed));
        if had < needed {
            c.verdict = Verdict::TooFewAnswers;
            return c;
        }
    }
    let Some(test) = verdict::test(&a, &b, 1.0) else { return c };
    (c.p, c.ci95) = (Some(test.p), test.ci95);
    c.verdict = Verdict::NoSignificantDifference;
    c.test = Some(test);
    c.runs = Some([a, b]);
    c
}

/// The word for a direction the family found (or did not).
fn verdict_of(metric: Metric, higher: Option<bool>) -> Verdict {
    match (higher, metric) {
        (None, _) => Verdict::NoSignificantDifference,
        (Some(true), Metric::Failed) => Verdict::More,
        (Some(false), Metric::Failed) => Verdict::Fewer,
        (Some(h), m) if h == m.higher_is_better() => Verdict::Faster,
        (Some(_), _) => Verdict::Slower,
    }
}

/// `--fail-if 'p99 > 1.10 * baseline'`: a candidate fails only when the whole 95 % interval of its ratio to the
/// baseline lies beyond the factor.
#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    pub text: String,
    pub metric: Metric,
    /// `>` (or `>=`): fail when the ratio is above the factor; `<` (or `<=`): below.
    pub above: bool,
    pub inclusive: bool,
    pub factor: f64,
}

impl FailIf {
    pub fn parse(text: &str) -> Result<FailIf, CliError> {
        let bad = |why: String| {
            CliError::new(format!(
                "--fail-if '{text}': {why}; write it like 'p99 > 1.10 * baseline' or 'qps < 0.95 * baseline' \
                 (qps, mean, p50, p99, p99.9, errors)"
            ))
        };
        let t = text.trim();
        let at = t.find(['<', '>']).ok_or_else(|| bad("no comparison (< <= > >=)".into()))?;
        let (name, rest) = t.split_at(at);
        let above = rest.starts_with('>');
        let inclusive = rest[1..].starts_with('=');
        let right = rest[if inclusive { 2 } else { 1 }..].trim().to_ascii_lowercase();
        let name = name.trim().to_ascii_lowercase();
        let metric = Metric::named(&name).ok_or_else(|| bad(format!("'{name}' is not a metric")))?;
        let factor_text = right
            .strip_suffix("baseline")
            .ok_or_else(|| bad(format!("'{right}' does not end with 'baseline'")))?
            .trim()
            .trim_end_matches('*')
            .trim();
        let factor = if factor_text.is_empty() {
            1.0
        } else {
            factor_text
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0)
                .ok_or_else(|| bad(format!("'{factor_text}' is not a positive factor")))?
        };
        Ok(FailIf { text: t.to_string(), metric, above, inclusive, factor })
    }
}

/// One `--fail-if` judged on one side at one point.
#[derive(Clone, Debug, Serialize)]
pub struct FailIfResult {
    pub fail_if: String,
    pub group: String,
    pub point: String,
    pub side: String,
    pub ratio: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    /// The two-sided p of the ratio against the gate's factor, this judgement alone; null when not judged.
    pub p: Option<f64>,
    /// `p` adjusted over every gate judgement made at once (Holm); null when not judged.
    pub p_adjusted: Option<f64>,
    /// True when the interval lies wholly beyond the bound and the adjusted p is below 0.05: exit code 1.
    pub failed: bool,
    /// Why, in words.
    pub reason: String,
}

/// Judges every `--fail-if` on every candidate side and point. A gate fails when the whole 95 % interval of the
/// ratio lies beyond its factor and, so that several gates, sides and points together raise a false alarm at
/// most 5 % of the time, the test of the ratio against the factor stays below 0.05 after Holm's adjustment over
/// every judgement made (`verdict.rs`). With one judgement the two conditions are the same.
pub fn judge_fail_ifs(groups: &[GroupComparison], gates: &[FailIf]) -> Vec<FailIfResult> {
    let mut out = Vec::new();
    // The judged results (index into `out`, the interval lies beyond, the gate's side) and their tests.
    let mut judged: Vec<(usize, bool, bool, Test)> = Vec::new();
    for gate in gates {
        let bound = format!("{}{}", if gate.above { ">" } else { "<" }, if gate.inclusive { "=" } else { "" });
        for g in groups {
            for p in &g.points {
                let Some(row) = p.rows.iter().find(|r| r.metric == gate.metric) else { continue };
                for c in row.cells.iter().skip(1) {
                    let test = c.runs.as_ref().and_then(|[a, b]| verdict::test(a, b, gate.factor));
                    let reason = match (c.ci95, c.verdict, test) {
                        (Some([lo, hi]), _, Some(test)) => {
                            let beyond = match (gate.above, gate.inclusive) {
                                (true, false) => lo > gate.factor,
                                (true, true) => lo >= gate.factor,
                                (false, false) => hi < gate.factor,
                                (false, true) => hi <= gate.factor,
                            };
                            judged.push((out.len(), beyond, gate.above, test));
                            let words = if beyond { "lies wholly" } else { "does not lie wholly" };
                            format!("the 95 % interval {lo:.3} .. {hi:.3} {words} {bound} {}", gate.factor)
                        }
                        (None, Verdict::TooFewRuns, _) => {
                            "too few runs to tell (at least 2 a side): not judged".to_string()
                        }
                        (None, Verdict::TooFewAnswers, _) => format!("{}: not judged", c.verdict_words(row.metric)),
                        (None, Verdict::NotAvailable, _) => "the figure is missing: not judged".to_string(),
                        _ => "the interval is unbounded (too noisy): not judged".to_string(),
                    };
                    out.push(FailIfResult {
                        fail_if: gate.text.clone(),
                        group: g.title.clone(),
                        point: p.point.clone(),
                        side: c.side.clone(),
                        ratio: c.ratio,
                        ci95: c.ci95,
                        p: None,
                        p_adjusted: None,
                        failed: false,
                        reason,
                    });
                }
            }
        }
    }
    let calls = verdict::judge(&judged.iter().map(|(.., t)| t).collect::<Vec<_>>());
    let m = judged.len();
    for ((i, beyond, above, test), call) in judged.iter().zip(calls) {
        let r = &mut out[*i];
        r.p = Some(test.p);
        r.p_adjusted = Some(call.p_adjusted);
        r.failed = *beyond && call.higher == Some(*above);
        let family = if m == 1 { String::new() } else { format!(" over {m} gate judgements") };
        r.reason.push_str(&format!(" (p {}, Holm-adjusted{family} {})", p_text(test.p), p_text(call.p_adjusted)));
        if *beyond && !r.failed {
            r.reason.push_str(": within chance for so many gates, not failed");
        }
    }
    out
}

/// A p-value as the tables print it: four decimals, or `<0.0001`.
pub fn p_text(p: f64) -> String {
    if p < 0.0001 { "<0.0001".to_string() } else { format!("{p:.4}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ok_per_s: f64, p99_us: f64) -> Sample {
        let mut h = LatencyHistogram::new();
        h.record(p99_us as u64);
        Sample {
            ok_per_s,
            mean_us: Some(p99_us),
            p50_us: Some(p99_us),
            p99_us: Some(p99_us),
            p999_us: Some(p99_us),
            requests: 100,
            failed: 0,
            answers: 10_000,
            histogram: Some(h),
            first_event_us: None,
            tokens_per_s: None,
            tpot_us: None,
            goodput_per_s: None,
        }
    }

    fn side(name: &str, runs: Vec<Sample>) -> Side {
        Side { points: vec![(String::new(), runs)], ..Side::new(name) }
    }

    fn group(a: Vec<Sample>, b: Vec<Sample>) -> GroupComparison {
        let g = Group { title: String::new(), sides: vec![side("a", a), side("b", b)] };
        compare_groups(&[g], None).unwrap().remove(0)
    }

    fn verdict(g: &GroupComparison, m: Metric) -> Verdict {
        g.points[0].rows.iter().find(|r| r.metric == m).unwrap().cells[1].verdict
    }

    #[test]
    fn a_clearly_slower_side_is_called_slower_with_an_interval_above_one() {
        let g = group(
            vec![run(200.0, 5000.0), run(198.0, 5100.0), run(201.0, 4950.0)],
            vec![run(100.0, 10000.0), run(99.0, 10100.0), run(101.0, 9900.0)],
        );
        assert_eq!(verdict(&g, Metric::Qps), Verdict::Slower);
        assert_eq!(verdict(&g, Metric::P99), Verdict::Slower);
        let cell = &g.points[0].rows[3].cells[1];
        let [lo, hi] = cell.ci95.unwrap();
        assert!(lo > 1.8 && hi < 2.2 && cell.p.unwrap() < 0.01, "{cell:?}");
        // No failures on either side: 0 / 0 has no ratio, and Welch finds nothing.
        assert_eq!(verdict(&g, Metric::Failed), Verdict::NoSignificantDifference);
    }

    #[test]
    fn noise_is_no_significant_difference_and_one_run_is_too_few() {
        let g = group(
            vec![run(200.0, 5000.0), run(190.0, 5300.0), run(210.0, 4800.0)],
            vec![run(205.0, 5100.0), run(195.0, 4900.0), run(199.0, 5200.0)],
        );
        assert_eq!(verdict(&g, Metric::Qps), Verdict::NoSignificantDifference);
        assert_eq!(verdict(&g, Metric::P99), Verdict::NoSignificantDifference);
        let g = group(vec![run(200.0, 5000.0)], vec![run(100.0, 10000.0)]);
        assert_eq!(verdict(&g, Metric::Qps), Verdict::TooFewRuns);
        assert_eq!(g.points[0].rows[0].cells[1].ratio, Some(0.5));
    }

    #[test]
    fn fail_if_needs_the_whole_interval_beyond_the_bound() {
        let gate = FailIf::parse("p99 > 1.10 * baseline").unwrap();
        assert_eq!((gate.metric, gate.above, gate.factor), (Metric::P99, true, 1.10));
        let slow = group(
            vec![run(200.0, 5000.0), run(198.0, 5100.0), run(201.0, 4950.0)],
            vec![run(100.0, 10000.0), run(99.0, 10100.0), run(101.0, 9900.0)],
        );
        assert!(judge_fail_ifs(std::slice::from_ref(&slow), std::slice::from_ref(&gate))[0].failed);
        let noisy = group(
            vec![run(200.0, 5000.0), run(190.0, 5300.0), run(210.0, 4800.0)],
            vec![run(205.0, 5600.0), run(195.0, 4900.0), run(199.0, 5900.0)],
        );
        let r = &judge_fail_ifs(&[noisy], &[gate])[0];
        assert!(!r.failed, "{r:?}");
        let qps = FailIf::parse("qps<0.95*baseline").unwrap();
        assert!(!qps.above && qps.factor == 0.95);
        assert!(judge_fail_ifs(&[slow], &[qps])[0].failed);
        assert_eq!(FailIf::parse("mean > baseline").unwrap().factor, 1.0);
        for bad in ["p99 > 1.1", "p42 > 1.1 * baseline", "p99 = baseline", "p99 > -1 * baseline"] {
            let e = FailIf::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--fail-if '{bad}'")) && e.contains("1.10 * baseline"), "{e}");
        }
    }
}
