//! CI gates (`--threshold 'p99<50ms'`, `'errors<1%'`, `'qps>1000'`): read from the flag, judged on a result
//! document, reported with the value measured. A broken gate makes the command exit with code 99 (k6's
//! convention) after every result is written.
//!
//! A document is judged as a whole, as k6 judges a whole test: every step (every run of `--runs`, every step of
//! a sweep) together, latency percentiles from their histograms merged exactly, errors over all their requests,
//! throughput as all their successes over all their time. A run cut short by a stop signal is left out when the
//! other runs are complete.

use std::fmt;

use crate::base::units::parse_duration;
use crate::error::CliError;
use crate::result::events::{Figure, Stat};
use crate::result::{ResultDocument, StepResult, ThresholdResult, complete_runs, merged_histogram};

/// Exit code when a threshold is broken (k6's).
pub const EXIT_THRESHOLDS: u8 = 99;

/// What a threshold looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A latency percentile of the successes (0 < p < 100).
    Percentile(f64),
    Mean,
    Max,
    /// Failed requests (statuses outside `--ok-status` and errors), percent of the requests.
    Errors,
    /// Successes per second.
    Qps,
    /// A figure of streamed answers (`--events`): `ttft p99`, `tpot mean`; a bare `ttft` is its p99.
    Stream(Figure, Stat),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Lt => measured < limit,
            Op::Le => measured <= limit,
            Op::Gt => measured > limit,
            Op::Ge => measured >= limit,
        }
    }
}

/// One parsed `--threshold`.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As given, trimmed.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    /// Microseconds for latency, percent for errors, per second for qps.
    pub limit: f64,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const HOW: &str = "write it like 'p99<50ms', 'errors<1%', 'qps>1000' or 'ttft p99<200ms' (p50, p90, p99, p99.9, mean, \
                   max, errors, qps; a streamed answer's ttft, tpot, itl or e2el and its statistic; < <= > >=)";

/// Reads every `--threshold` given to `flag`.
pub fn parse_all(flag: &str, texts: &[String]) -> Result<Vec<Threshold>, CliError> {
    texts.iter().map(|t| parse(flag, t)).collect()
}

/// Thresholds on a streamed answers' figure need the answers read as events (`events`, `--events`): refused
/// before the load otherwise, never judged on figures that cannot be there.
pub fn check_events(flag: &str, thresholds: &[Threshold], events: Option<&str>) -> Result<(), CliError> {
    for t in thresholds {
        if let Metric::Stream(figure, _) = t.metric {
            figure.measured_with(events).map_err(|why| CliError::new(format!("{flag} '{}': {why}", t.text)))?;
        }
    }
    Ok(())
}

/// Reads one threshold, e.g. `p99<50ms`; bad text is one line naming `flag`, the text and how to write it.
pub fn parse(flag: &str, text: &str) -> Result<Threshold, CliError> {
    let bad = |why: String| CliError::new(format!("{flag} '{text}': {why}; {HOW}"));
    let t = text.trim();
    let at = t.find(['<', '>']).ok_or_else(|| bad("no comparison (< <= > >=)".into()))?;
    let (name, rest) = t.split_at(at);
    let (op, value) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
        (b'<', Some(b'=')) => (Op::Le, &rest[2..]),
        (b'<', _) => (Op::Lt, &rest[1..]),
        (b'>', Some(b'=')) => (Op::Ge, &rest[2..]),
        _ => (Op::Gt, &rest[1..]),
    };
    let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
    if name.is_empty() {
        return Err(bad("no metric before the comparison".into()));
    }
    if value.is_empty() {
        return Err(bad("no limit after the comparison".into()));
    }
    let metric = metric_named(&name).ok_or_else(|| bad(format!("'{name}' is not a metric")))?;
    let limit = match metric {
        Metric::Errors => percent(value).ok_or_else(|| bad(format!("'{value}' is not a share (1% or 0.01)")))?,
        Metric::Qps => value
            .trim_end_matches("/s")
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(format!("'{value}' is not a number of successes per second")))?,
        _ => parse_duration(value).map_err(|e| bad(format!("limit '{value}': {e}")))?.as_secs_f64() * 1e6,
    };
    Ok(Threshold { text: t.to_string(), metric, op, limit })
}

/// `p99`, `p(99)` (k6's spelling), `p99.9`, `mean` (`avg`), `max`, `errors` (`failed`), `qps` (`rps`).
fn metric_named(name: &str) -> Option<Metric> {
    match name {
        "mean" | "avg" => Some(Metric::Mean),
        "max" => Some(Metric::Max),
        "errors" | "failed" | "error_rate" => Some(Metric::Errors),
        "qps" | "rps" | "ok/s" => Some(Metric::Qps),
        p => percentile_named(p).map(Metric::Percentile).or_else(|| stream_metric(p)),
    }
}

/// `p99`, `p(95)`, `p99.9`: the percentile, between 0 and 100.
fn percentile_named(p: &str) -> Option<f64> {
    let number = p.strip_prefix('p')?;
    let number = number.strip_prefix('(').and_then(|n| n.strip_suffix(')')).unwrap_or(number);
    number.parse::<f64>().ok().filter(|v| *v > 0.0 && *v < 100.0)
}

/// `ttft`, `ttft p99`, `tpot_mean`, `e2el max`: a figure of streamed answers and its statistic (p99 unless given).
fn stream_metric(name: &str) -> Option<Metric> {
    let (figure, stat) = Figure::with_stat(name)?;
    let stat = match stat {
        "mean" | "avg" => Stat::Mean,
        "max" => Stat::Max,
        p => Stat::Percentile(percentile_named(p)?),
    };
    Some(Metric::Stream(figure, stat))
}

/// `1%` -> 1, `0.01` -> 1 (a bare number is a fraction).
fn percent(text: &str) -> Option<f64> {
    let v = match text.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()?,
        None => text.parse::<f64>().ok()? * 100.0,
    };
    (0.0..=100.0).contains(&v).then_some(v)
}

/// The steps a document is judged on: every step, but a run cut short when complete runs exist beside it.
pub fn judged_steps(doc: &ResultDocument) -> (Vec<&StepResult>, String) {
    let steps = complete_runs(&doc.steps, doc.runs.as_ref().and_then(|r| r.partial_run));
    let steps = if steps.is_empty() { doc.steps.iter().collect() } else { steps };
    let on = match (steps.len(), doc.runs.is_some(), doc.settings.sweep.is_some()) {
        (1, _, false) => "the run".to_string(),
        (1, _, true) => "its one step".to_string(),
        (n, true, _) => format!("{n} runs merged"),
        (n, false, _) => format!("all {n} steps merged"),
    };
    (steps, on)
}

/// Judges every threshold on the document (see the module's header for what is measured).
pub fn judge(doc: &ResultDocument, thresholds: &[Threshold]) -> Vec<ThresholdResult> {
    let (steps, on) = judged_steps(doc);
    let requests: u64 = steps.iter().map(|s| s.requests).sum();
    let failed: u64 = steps.iter().map(|s| s.failed).sum();
    let ok: u64 = steps.iter().map(|s| s.ok).sum();
    let seconds: f64 = steps.iter().map(|s| s.duration_s).sum();
    let needs_latency =
        thresholds.iter().any(|t| !matches!(t.metric, Metric::Errors | Metric::Qps | Metric::Stream(..)));
    let merged = needs_latency.then(|| merged_histogram(&steps));
    thresholds
        .iter()
        .map(|t| {
            let latency = |s: Stat| (s.name(), merged.as_ref().filter(|h| !h.is_empty()).map(|h| s.of(h)), "us");
            let (metric, measured, unit) = match t.metric {
                Metric::Percentile(p) => latency(Stat::Percentile(p)),
                Metric::Mean => latency(Stat::Mean),
                Metric::Max => latency(Stat::Max),
                Metric::Errors => {
                    ("errors".into(), (requests > 0).then(|| 100.0 * failed as f64 / requests as f64), "percent")
                }
                Metric::Qps => ("qps".into(), (seconds > 0.0).then(|| ok as f64 / seconds), "per_s"),
                // Merged over the judged steps; no streamed answer (or a histogram that cannot be read) fails.
                Metric::Stream(figure, stat) => {
                    let h = figure.merged(steps.iter().copied()).ok().filter(|h| !h.is_empty());
                    (format!("{} {}", figure.name(), stat.name()), h.map(|h| stat.of(&h)), "us")
                }
            };
            ThresholdResult {
                threshold: t.text.clone(),
                metric,
                measured,
                limit: t.limit,
                unit: unit.into(),
                pass: measured.is_some_and(|m| t.op.holds(m, t.limit)),
                judged_on: on.clone(),
            }
        })
        .collect()
}

/// True when any threshold is broken.
pub fn any_broken(results: &[ThresholdResult]) -> bool {
    results.iter().any(|r| !r.pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_answers_figure_is_a_threshold_with_its_statistic_p99_unless_given() {
        let t = parse("--threshold", "ttft<200ms").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::Stream(Figure::Ttft, Stat::Percentile(99.0)), 200_000.0));
        assert_eq!(
            parse("--threshold", "tpot p50<40ms").unwrap().metric,
            Metric::Stream(Figure::Tpot, Stat::Percentile(50.0))
        );
        assert_eq!(parse("--threshold", "e2el_mean<=10s").unwrap().metric, Metric::Stream(Figure::E2el, Stat::Mean));
        assert_eq!(parse("--threshold", "ITL max<1s").unwrap().metric, Metric::Stream(Figure::Itl, Stat::Max));
        assert!(parse("--threshold", "ttft q9<1s").unwrap_err().to_string().contains("'ttft q9' is not a metric"));
        let needs = check_events("--threshold", &[parse("--threshold", "tpot<40ms").unwrap()], Some("sse"));
        assert!(
            needs.unwrap_err().to_string().contains("'tpot<40ms': tpot is counted in tokens: give --events tokens")
        );
        assert!(check_events("--threshold", &[t], None).unwrap_err().to_string().contains("give --events tokens"));
    }

    #[test]
    fn thresholds_read_latency_errors_and_throughput() {
        let t = parse("--threshold", "p99<50ms").unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Percentile(99.0), Op::Lt, 50_000.0));
        let t = parse("--threshold", " p99.9 <= 1s ").unwrap();
        assert_eq!((t.metric, t.op, t.limit, t.text.as_str()), (Metric::Percentile(99.9), Op::Le, 1e6, "p99.9 <= 1s"));
        assert_eq!(parse("--threshold", "p(95)<200ms").unwrap().metric, Metric::Percentile(95.0));
        assert_eq!(parse("--threshold", "errors<1%").unwrap().limit, 1.0);
        assert_eq!(parse("--threshold", "errors<=0.005").unwrap().limit, 0.5);
        let t = parse("--threshold", "qps>=1000").unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Qps, Op::Ge, 1000.0));
        assert_eq!(parse("--threshold", "mean<500us").unwrap().limit, 500.0);
        assert_eq!(parse("--threshold", "max>2ms").unwrap().op, Op::Gt);
    }

    #[test]
    fn bad_thresholds_name_the_flag_the_text_and_the_fix() {
        for bad in ["p99=50ms", "p99<50", "q99<5ms", "p100<5ms", "", "<5ms", "p99<", "errors<5 percent", "qps>fast"] {
            let e = parse("--threshold", bad).unwrap_err();
            let line = e.to_string();
            assert!(line.starts_with(&format!("--threshold '{bad}'")) && line.contains("'p99<50ms'"), "{line}");
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        }
    }

    #[test]
    fn a_document_is_judged_on_its_runs_merged() {
        // Run 2's p99 is 200 ms, but of all 2000 answers only 1 % took that long: the pooled p99 is 1 ms.
        let steps =
            vec![crate::result::step_of(&[(1000, 1000)]), crate::result::step_of(&[(980, 1000), (20, 200_000)])];
        let doc = ResultDocument {
            schema: crate::result::SCHEMA.into(),
            provenance: crate::result::provenance::Provenance::collect(std::time::SystemTime::now(), 0),
            settings: Default::default(),
            interrupted: false,
            runs: crate::result::RunsSummary::of(&steps, 2, None),
            steps,
            warnings: vec![],
            analysis: None,
            thresholds: vec![],
            missing_segments: Vec::new(),
        };
        let gates = parse_all("--threshold", &["p99<2ms".into(), "max<100ms".into(), "qps>=1000".into()]).unwrap();
        let judged = judge(&doc, &gates);
        assert_eq!(judged.iter().map(|r| r.pass).collect::<Vec<_>>(), [true, false, true], "{judged:?}");
        assert_eq!(judged[0].judged_on, "2 runs merged");
        // All successes over all the runs' time: 2000 in 2 s.
        assert!((judged[2].measured.unwrap() - 1000.0).abs() < 1e-9);
        assert!(any_broken(&judged));
    }

    #[test]
    fn operators_hold_as_written() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Le.holds(2.1, 2.0));
        assert!(Op::Gt.holds(3.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Ge.holds(1.9, 2.0));
    }
}
