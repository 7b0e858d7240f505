//! The one verdict: whether a side is faster, slower or no different from the baseline on one metric, judged on
//! per-run values and over the whole family of comparisons made at once. `compare`, the report, `--fail-if` and a
//! study's closing summary all come here, so the same runs get the same word everywhere.
//!
//! One comparison is the test behind Fieller's interval of the ratio of the mean per-run values
//! (`stats::ratio_test`, Welch's test at a ratio of 1; the 95 % interval is `stats::ratio_ci`). The family is
//! judged with Holm's step-down adjustment, which keeps the chance of ANY false alarm in the family at or below
//! 5 % (the family-wise error rate). Benjamini–Hochberg would bound only the expected share of false alarms among
//! the alarms raised, which suits screening many candidates; a CI gate fails a build on a single alarm, so it
//! needs the family-wise rate.

use crate::metrics::stats;

/// The family-wise error rate allowed: the chance of any false alarm among all comparisons made at once.
pub const ALPHA: f64 = 0.05;

/// Answers that must lie beyond a percentile in every run before it gets a verdict. With fewer the percentile is
/// one of a run's last few answers and moves with each run's luck: p99.9 of 380 answers is the largest one.
pub const BEYOND: f64 = 10.0;

/// The answers each run needs for a verdict on `percentile` (e.g. 99.9): [`BEYOND`] beyond it, so p50 needs 20,
/// p99 1,000 and p99.9 10,000.
pub fn answers_needed(percentile: f64) -> u64 {
    (BEYOND / (1.0 - percentile / 100.0)).round() as u64
}

/// One comparison of per-run values, before the family is judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// Fieller's 95 % interval of mean(b) / mean(a), cut at 0 (every figure compared is positive, so is their
    /// ratio); None when unbounded or mean(a) is 0.
    pub ci95: Option<[f64; 2]>,
    /// The test's t: above 0 when b lies above `r0` times a.
    pub t: f64,
    /// The two-sided p of this one comparison, before the family.
    pub p: f64,
}

/// Compares the per-run values `b` with `a` at the ratio `r0` (1 for a verdict, the factor of a `--fail-if`
/// gate); None with fewer than two runs a side. The interval excludes `r0` exactly when p is below 0.05.
pub fn test(a: &[f64], b: &[f64], r0: f64) -> Option<Test> {
    let w = stats::ratio_test(a, b, r0)?;
    let ci95 = stats::ratio_ci(a, b, 0.95).and_then(|r| r.interval).map(|(lo, hi)| [lo.max(0.0), hi]);
    Some(Test { ci95, t: w.t, p: w.p })
}

/// What the family says of one of its tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Call {
    /// The p-value adjusted over the family (Holm).
    pub p_adjusted: f64,
    /// Some(true) when b is significantly above, Some(false) below; None for no significant difference.
    pub higher: Option<bool>,
}

/// Judges every test of a family together: a direction only where the Holm-adjusted p is below [`ALPHA`].
pub fn judge(family: &[&Test]) -> Vec<Call> {
    let ps: Vec<f64> = family.iter().map(|t| t.p).collect();
    stats::holm(&ps)
        .into_iter()
        .zip(family)
        .map(|(p_adjusted, t)| Call { p_adjusted, higher: (p_adjusted < ALPHA).then_some(t.t > 0.0) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_need_ten_answers_beyond_them_in_every_run() {
        assert_eq!(answers_needed(50.0), 20);
        assert_eq!(answers_needed(99.0), 1_000);
        assert_eq!(answers_needed(99.9), 10_000);
    }

    #[test]
    fn one_test_alone_is_called_as_its_interval_says_and_a_family_is_stricter() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [103.0, 104.0, 102.0, 103.5, 102.5];
        let t = test(&a, &b, 1.0).unwrap();
        let [lo, _] = t.ci95.unwrap();
        assert!(lo > 1.0 && t.p < ALPHA, "{t:?}");
        assert_eq!(judge(&[&t])[0], Call { p_adjusted: t.p, higher: Some(true) });
        // The same test among 5000 others with nothing to find: Holm multiplies its p by the family's size.
        let nothing = test(&a, &a, 1.0).unwrap();
        let mut family = vec![&nothing; 5000];
        family.push(&t);
        let calls = judge(&family);
        assert!(calls[5000].higher.is_none() && calls[5000].p_adjusted > t.p, "{:?}", calls[5000]);
    }
}
