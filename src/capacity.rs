//! `hakaru capacity --slo 'p99<50ms'`: the highest open-loop rate that meets a latency objective, found by
//! doubling the rate until a step fails, then bisecting between the last pass and the first failure.

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::analysis::CapacityAnswer;
use crate::cli::CapacityArgs;
use crate::engine;
use crate::plan::{LoadModel, RunPlan, Stop, UsageError, parse_rate};
use crate::result::{StepResult, SweepSettings};
use crate::runner::{Study, measure_step};
use crate::sweep::{StudyParts, finish, pause, table_header, table_row};
use crate::units::{format_micros, parse_duration};

/// At most this many steps, whatever the precision asked.
const MAX_STEPS: usize = 30;

/// One bound of the objective: a latency statistic below a limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// `p99`, `p99.9`, `mean`, `max`.
    pub stat: String,
    /// The percentile, or None for mean and max.
    pub percentile: Option<f64>,
    pub limit_us: u64,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}

/// A service-level objective: every bound must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    pub text: String,
    pub bounds: Vec<Bound>,
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Slo {
    pub fn parse(text: &str) -> Result<Slo, UsageError> {
        let bad = |why: &str| {
            UsageError::new(format!(
                "--slo '{text}': {why}; write it like 'p99<50ms' or 'p99.9<=200ms,mean<20ms' (p50..p99.99, mean, max)"
            ))
        };
        let mut bounds = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (stat, rest, inclusive) = if let Some((s, r)) = part.split_once("<=") {
                (s, r, true)
            } else if let Some((s, r)) = part.split_once('<') {
                (s, r, false)
            } else {
                return Err(bad(&format!("'{part}' has no < or <=")));
            };
            let stat = stat.trim().to_ascii_lowercase();
            let percentile = match stat.as_str() {
                "mean" | "max" => None,
                p => {
                    let value = p
                        .strip_prefix('p')
                        .and_then(|n| n.parse::<f64>().ok())
                        .filter(|v| *v > 0.0 && *v < 100.0)
                        .ok_or_else(|| bad(&format!("'{stat}' is not a statistic")))?;
                    Some(value)
                }
            };
            let limit = parse_duration(rest.trim()).map_err(|e| bad(&format!("limit '{}': {e}", rest.trim())))?;
            bounds.push(Bound { stat, percentile, limit_us: limit.as_micros() as u64, inclusive });
        }
        if bounds.is_empty() {
            return Err(bad("no objective given"));
        }
        Ok(Slo { text: text.trim().to_string(), bounds })
    }

    /// Why the step fails the objective, or None when it meets it. Latency is the corrected one (from the
    /// intended send time), so a server that stalls cannot pass by making hakaru wait.
    pub fn violation(&self, step: &StepResult) -> Option<String> {
        let l = &step.latency;
        if l.count == 0 {
            return Some("no answers".into());
        }
        for b in &self.bounds {
            let value = match (b.percentile, b.stat.as_str()) {
                (Some(p), _) => percentile_of(step, p),
                (None, "mean") => l.mean as u64,
                _ => l.max,
            };
            let ok = if b.inclusive { value <= b.limit_us } else { value < b.limit_us };
            if !ok {
                return Some(format!(
                    "{} {} > {}",
                    b.stat,
                    format_micros(value as f64),
                    format_micros(b.limit_us as f64)
                ));
            }
        }
        None
    }
}

/// A percentile of the step's latency: from the summary when it holds it, else from the stored histogram.
fn percentile_of(step: &StepResult, p: f64) -> u64 {
    match step.latency.percentiles.get(&crate::result::percentile_key(p)) {
        Some(v) => *v,
        None => {
            crate::metrics::LatencyHistogram::from_base64(&step.histogram.data).map_or(u64::MAX, |h| h.percentile(p))
        }
    }
}

/// Reads `--max-errors 0.1%` (or a fraction `0.001`) as a percentage.
pub fn parse_percent(flag: &str, text: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok(),
        None => t.parse::<f64>().ok().map(|f| f * 100.0),
    };
    value
        .filter(|v| (0.0..=100.0).contains(v))
        .ok_or_else(|| UsageError::new(format!("{flag} '{text}': not a share; write it like 0.1% or 0.001")))
}

/// Whether a step passes: the objective, the error budget, and the rate actually reached.
fn verdict(slo: &Slo, max_errors_percent: f64, step: &StepResult) -> Result<(), String> {
    if let Some(v) = slo.violation(step) {
        return Err(v);
    }
    let errors = 100.0 * step.errors as f64 / step.requests.max(1) as f64;
    if errors > max_errors_percent {
        return Err(format!("errors {errors:.2} % > {max_errors_percent} %"));
    }
    if let Some(s) = &step.schedule {
        // A rate hakaru could not send is not a rate the server was shown to meet.
        if s.achieved_rate < 0.95 * s.target_rate {
            return Err(format!("achieved {:.0}/s of {:.0}/s", s.achieved_rate, s.target_rate));
        }
    }
    Ok(())
}

pub fn capacity(a: &CapacityArgs, interrupt: &AtomicBool) -> Result<ExitCode, UsageError> {
    let slo = Slo::parse(&a.slo)?;
    let max_errors = parse_percent("--max-errors", &a.max_errors)?;
    let precision = parse_percent("--precision", &a.precision)? / 100.0;
    if precision <= 0.0 {
        return Err(UsageError::new(format!("--precision '{}': must be more than 0; try 5%", a.precision)));
    }
    let start = parse_rate("--rate-start", a.rate_start)?;
    let max = parse_rate("--rate-max", a.rate_max)?;
    if max < start {
        return Err(UsageError::new(format!("--rate-max {max} is below --rate-start {start}")));
    }
    let StudyParts { duration, interval, warmup, set, watchers, outputs } =
        StudyParts::from_args(&a.request, &a.watch, &a.study)?;
    let plan_at = |rate: f64| {
        let load = LoadModel::Open { rate, arrival: a.study.arrival };
        let mut plan =
            RunPlan::new(&set, "capacity", a.study.connections, a.study.threads, Stop::Duration(duration), load);
        plan.quiet = a.study.quiet;
        plan
    };
    let first = plan_at(start);
    engine::preflight(&first)?;
    let mut settings = first.settings.clone();
    settings.sweep = Some(SweepSettings {
        kind: "capacity".into(),
        values: vec![start],
        step_duration_s: duration.as_secs_f64(),
        interval_s: interval.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        wait_s: 0.0,
        slo: Some(slo.text.clone()),
        max_errors_percent: Some(max_errors),
    });
    let mut study = Study::new(settings, set.keepalive, outputs);
    study.expected_hit_rate = watchers.expected_hit_rate;
    println!("hakaru capacity  {}  objective {slo}, errors at most {max_errors} %", set.targets.join(" "));
    println!("{}  verdict", table_header(true, &watchers));

    let (mut pass, mut fail): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = start;
    for i in 0..MAX_STEPS {
        if i > 0 {
            pause(interval, interrupt);
        }
        if interrupt.load(Ordering::Relaxed) {
            study.doc.interrupted = true;
            break;
        }
        let plan = plan_at(rate);
        let (step, interrupted) = measure_step(&plan, &format!("rate={rate:.0}"), Some(warmup), &watchers, interrupt);
        if interrupted && step.requests == 0 {
            // Stopped before the step measured anything (during its warm-up): nothing to keep.
            study.doc.interrupted = true;
            break;
        }
        let outcome = verdict(&slo, max_errors, &step);
        println!(
            "{}  {}",
            table_row(&step, true),
            match &outcome {
                Ok(()) => "meets".to_string(),
                Err(why) => format!("fails: {why}"),
            }
        );
        study.push(step, interrupted)?;
        if interrupted {
            break;
        }
        match outcome {
            Ok(()) => pass = Some(pass.map_or(rate, |p: f64| p.max(rate))),
            Err(_) => fail = Some(fail.map_or(rate, |f: f64| f.min(rate))),
        }
        rate = match (pass, fail) {
            (Some(p), None) if p >= max => break,
            (Some(p), None) => (p * 2.0).min(max),
            // Even the first rate failed: halve it until one passes (down to 1 request/s).
            (None, Some(f)) if f / 2.0 < 1.0 => break,
            (None, Some(f)) => f / 2.0,
            (Some(p), Some(f)) if (f - p) / p <= precision => break,
            (Some(p), Some(f)) => (p + f) / 2.0,
            (None, None) => break,
        };
    }
    let answer =
        CapacityAnswer { slo: slo.text.clone(), max_errors_percent: max_errors, rate: pass, first_failing_rate: fail };
    study.doc.analysis = crate::analysis::analyse(&study.doc.steps).map(|mut an| {
        an.capacity = Some(answer.clone());
        an
    });
    println!();
    match (pass, fail) {
        (Some(p), Some(f)) => println!("  capacity: {p:.0} req/s meets {slo}; {f:.0} req/s does not"),
        (Some(p), None) => {
            println!("  capacity: at least {p:.0} req/s meets {slo} (the highest rate tried; raise --rate-max)")
        }
        (None, _) => println!("  capacity: not even {start:.0} req/s meets {slo}; try a lower --rate-start"),
    }
    finish(&mut study)?;
    Ok(if study.doc.interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_with_percentiles_mean_max_and_inclusive_bounds() {
        let s = Slo::parse("p99<50ms, p99.9<=200ms,mean<10ms,max<1s").unwrap();
        assert_eq!(s.bounds.len(), 4);
        assert_eq!(
            s.bounds[0],
            Bound { stat: "p99".into(), percentile: Some(99.0), limit_us: 50_000, inclusive: false }
        );
        assert_eq!(s.bounds[1].percentile, Some(99.9));
        assert!(s.bounds[1].inclusive);
        assert_eq!(s.bounds[3].limit_us, 1_000_000);
    }

    #[test]
    fn objectives_that_do_not_parse_say_how_to_write_them() {
        for bad in ["p99=50ms", "p99<50", "q99<5ms", "p100<5ms", "", "p99<fast"] {
            let e = Slo::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--slo '{bad}'")) && e.contains("p99<50ms"), "{e}");
        }
    }

    #[test]
    fn error_budgets_read_as_percent_or_fraction() {
        assert_eq!(parse_percent("--max-errors", "0.1%").unwrap(), 0.1);
        assert_eq!(parse_percent("--max-errors", "0.001").unwrap(), 0.1);
        assert_eq!(parse_percent("--max-errors", "0").unwrap(), 0.0);
        assert!(parse_percent("--max-errors", "lots").is_err());
        assert!(parse_percent("--max-errors", "150%").is_err());
    }
}
