//! drnbench-request-response's CSV, exactly (`hakaru sweep -o FILE`): its six columns, then one column per
//! status seen in any step (sorted as drnbench sorts its status strings) holding the percentage of the step's
//! requests, with Ruby's number formats, so scripts and spreadsheets made for drnbench read hakaru's file unchanged.

use std::collections::BTreeSet;

use super::Exporter;
use crate::result::{ResultDocument, StepResult};

pub struct DrnbenchCsv;

/// drnbench-request-response's columns, exactly.
pub const DRNBENCH_COLUMNS: [&str; 6] = [
    "n_clients",
    "total_n_requests",
    "queries_per_second",
    "min_elapsed_time",
    "max_elapsed_time",
    "average_elapsed_time",
];

impl Exporter for DrnbenchCsv {
    fn render(&self, doc: &ResultDocument) -> String {
        // drnbench keys its statuses by the response code as a string ("0" for a timeout) and sorts them so.
        let statuses: BTreeSet<&str> = doc.steps.iter().flat_map(|s| s.status.keys().map(String::as_str)).collect();
        let nominal = doc.settings.sweep.as_ref().map(|s| s.step_duration_s);
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let header: Vec<&str> = DRNBENCH_COLUMNS.iter().copied().chain(statuses.iter().copied()).collect();
        w.write_record(&header).expect("writing to memory");
        let last = doc.steps.len().saturating_sub(1);
        for (i, step) in doc.steps.iter().enumerate() {
            // drnbench divides by the duration asked for, not the one measured; a step cut short by a signal ran
            // less than that, and is divided by the time it ran (its rate is the table's, not a fraction of it).
            let cut_short = doc.interrupted && i == last;
            let duration = if cut_short { step.duration_s } else { nominal.unwrap_or(step.duration_s) }.max(1e-9);
            let (min, max, mean) = every_request_times(step);
            let seconds = |us: Option<f64>| us.map(|us| ruby_float(us / 1e6)).unwrap_or_default();
            let mut row = vec![
                step.load.connections.to_string(),
                step.requests.to_string(),
                ruby_float(step.requests as f64 / duration),
                seconds(min),
                seconds(max),
                seconds(mean),
            ];
            let total = step.requests.max(1) as f64;
            for code in &statuses {
                // A status not seen in this step is Ruby's Integer 0, not 0.0.
                row.push(step.status.get(*code).map_or("0".into(), |&n| ruby_float(n as f64 / total * 100.0)));
            }
            w.write_record(&row).expect("writing to memory");
        }
        String::from_utf8(w.into_inner().expect("flushing to memory")).expect("CSV of ASCII fields")
    }
}

/// Min, max and mean time of every request of the step in microseconds, successes and failures together, as
/// drnbench times every request (a timeout included); None without any.
pub fn every_request_times(step: &StepResult) -> (Option<f64>, Option<f64>, Option<f64>) {
    let parts: Vec<_> =
        [Some(&step.latency), step.failed_latency.as_ref()].into_iter().flatten().filter(|l| l.count > 0).collect();
    let count: u64 = parts.iter().map(|l| l.count).sum();
    if count == 0 {
        return (None, None, None);
    }
    let min = parts.iter().map(|l| l.min).min().map(|v| v as f64);
    let max = parts.iter().map(|l| l.max).max().map(|v| v as f64);
    let mean = parts.iter().map(|l| l.mean * l.count as f64).sum::<f64>() / count as f64;
    (min, max, Some(mean))
}

/// A number as Ruby's `Float#to_s` writes it: the shortest digits that read back the same, always with a decimal
/// point (`100.0`), in exponent form below 0.0001 and from 1e16 on (`1.0e-05`, `1.5e+16`).
pub fn ruby_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let a = x.abs();
    if x == 0.0 || (1e-4..1e16).contains(&a) {
        // Rust's Debug form is the shortest round-trip form, with ".0" on whole numbers, as Ruby's.
        return format!("{x:?}");
    }
    let e = format!("{x:e}");
    let (mantissa, exponent) = e.split_once('e').expect("exponent form");
    let mantissa = if mantissa.contains('.') { mantissa.to_string() } else { format!("{mantissa}.0") };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

#[cfg(test)]
mod tests {
    use super::ruby_float;

    #[test]
    fn floats_read_as_ruby_writes_them() {
        // Values from Ruby 3: p 33.2, 100.0, 0.019765581680722916, 1.0e-05, 1.5e+16, 0.0001, 97.02970297029702.
        for (input, want) in [
            (33.2, "33.2"),
            (100.0, "100.0"),
            (0.019765581680722916, "0.019765581680722916"),
            (0.00001, "1.0e-05"),
            (0.0000123, "1.23e-05"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (490.0 / 505.0 * 100.0, "97.02970297029702"),
            (0.0, "0.0"),
        ] {
            assert_eq!(ruby_float(input), want, "ruby_float({input:?})");
        }
    }
}
