//! A capacity search's objective (`--slo 'p99<50ms'`) and error budget, read from the flags and checked against a
//! measured step.

use std::fmt;

use crate::base::units::{format_micros, parse_duration};
use crate::error::CliError;
use crate::result::StepResult;
use crate::result::events::{Figure, Stat};

/// One bound of the objective: a latency statistic below a limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// A figure of streamed answers (`ttft p99<200ms`), None for the requests' latency.
    pub figure: Option<Figure>,
    /// `p99`, `p99.9`, `mean`, `max` (after the figure's name: `ttft p99`).
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
    /// `goodput>=99%`: the least share of answers, percent, that must meet `--goodput`'s objectives.
    pub goodput_percent: Option<f64>,
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Slo {
    pub fn parse(text: &str) -> Result<Slo, CliError> {
        let bad = |why: &str| {
            CliError::new(format!(
                "--slo '{text}': {why}; write it like 'p99<50ms', 'p99.9<=200ms,mean<20ms' or 'ttft p99<200ms, tpot \
                 p99<40ms' (p50..p99.99, mean, max; a streamed answer's ttft, tpot, itl or e2el before it; \
                 'goodput>=99%' with --goodput)"
            ))
        };
        let mut bounds = Vec::new();
        let mut goodput_percent = None;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            // `goodput>=99%`: DistServe's goodput as an objective (the share of answers meeting --goodput's).
            if let Some(rest) = part.to_ascii_lowercase().strip_prefix("goodput") {
                let share = rest.trim().trim_start_matches(">=").trim_start_matches('>');
                let value =
                    parse_percent("--slo", share.trim()).map_err(|_| bad(&format!("'{part}' needs a share")))?;
                goodput_percent = Some(value);
                continue;
            }
            let (stat, rest, inclusive) = if let Some((s, r)) = part.split_once("<=") {
                (s, r, true)
            } else if let Some((s, r)) = part.split_once('<') {
                (s, r, false)
            } else {
                return Err(bad(&format!("'{part}' has no < or <=")));
            };
            let stat = stat.trim().to_ascii_lowercase();
            // `ttft`, `ttft p99`, `tpot_mean`: a streamed answers' figure, p99 unless a statistic follows.
            let (figure, stat) = match Figure::with_stat(&stat) {
                Some((f, s)) => (Some(f), s.to_string()),
                None => (None, stat.clone()),
            };
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
            let stat = match figure {
                Some(f) => format!("{} {stat}", f.name()),
                None => stat,
            };
            bounds.push(Bound { figure, stat, percentile, limit_us: limit.as_micros() as u64, inclusive });
        }
        if bounds.is_empty() && goodput_percent.is_none() {
            return Err(bad("no objective given"));
        }
        Ok(Slo { text: text.trim().to_string(), bounds, goodput_percent })
    }

    /// Why the step fails the objective, or None when it meets it. Latency is the corrected one (from the
    /// intended send time), so a server that stalls cannot pass by making hakaru wait.
    pub fn violation(&self, step: &StepResult) -> Option<String> {
        let l = &step.latency;
        if l.count == 0 {
            return Some("no successful answers".into());
        }
        if let Some(least) = self.goodput_percent {
            match step.events.as_ref().and_then(|e| e.goodput.as_ref()) {
                None => return Some("no answer judged for goodput".into()),
                // The exact share: a rounded 98.995 % is no 99 %.
                Some(g) if (100.0 * g.answers as f64 / g.requests.max(1) as f64) < least => {
                    return Some(format!(
                        "goodput {:.1} % < {least} % (of answers meeting {})",
                        g.percent, g.objectives
                    ));
                }
                Some(_) => {}
            }
        }
        for b in &self.bounds {
            let value = match (b.figure, b.percentile, b.stat.ends_with("mean")) {
                (Some(f), p, mean) => match f.merged([step]).ok().filter(|h| !h.is_empty()) {
                    None => return Some(format!("no streamed answer to measure {} on", f.name())),
                    Some(h) => match (p, mean) {
                        (Some(p), _) => Stat::Percentile(p),
                        (None, true) => Stat::Mean,
                        (None, false) => Stat::Max,
                    }
                    .of(&h) as u64,
                },
                (None, Some(p), _) => percentile_of(step, p),
                (None, None, true) => l.mean as u64,
                (None, None, false) => l.max,
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
pub fn parse_percent(flag: &str, text: &str) -> Result<f64, CliError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok(),
        None => t.parse::<f64>().ok().map(|f| f * 100.0),
    };
    value
        .filter(|v| (0.0..=100.0).contains(v))
        .ok_or_else(|| CliError::new(format!("{flag} '{text}': not a share; write it like 0.1% or 0.001")))
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
            Bound { figure: None, stat: "p99".into(), percentile: Some(99.0), limit_us: 50_000, inclusive: false }
        );
        assert_eq!(s.bounds[1].percentile, Some(99.9));
        assert!(s.bounds[1].inclusive);
        assert_eq!(s.bounds[3].limit_us, 1_000_000);
    }

    #[test]
    fn an_objective_may_bound_a_streamed_answers_figure() {
        let s = Slo::parse("ttft p99 < 200ms, tpot<40ms, p99<2s").unwrap();
        let b = &s.bounds;
        assert_eq!((b[0].figure, b[0].stat.as_str(), b[0].limit_us), (Some(Figure::Ttft), "ttft p99", 200_000));
        assert_eq!((b[1].figure, b[1].stat.as_str(), b[1].percentile), (Some(Figure::Tpot), "tpot p99", Some(99.0)));
        assert_eq!((b[2].figure, b[2].stat.as_str()), (None, "p99"));
        assert!(Slo::parse("ttft p101<1s").is_err());
        let s = Slo::parse("goodput>=99%, ttft p99<1s").unwrap();
        assert_eq!((s.goodput_percent, s.bounds.len()), (Some(99.0), 1));
        assert_eq!(Slo::parse("goodput>0.95").unwrap().goodput_percent, Some(95.0));
        assert!(Slo::parse("goodput>=lots").unwrap_err().to_string().contains("'goodput>=lots' needs a share"));
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
