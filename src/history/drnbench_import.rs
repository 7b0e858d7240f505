//! A drnbench-request-response CSV read back into a result document, as far as its columns go: client count,
//! requests, rate, min/max/mean time of every request and the share of each status. What the CSV lacks
//! (percentiles, the histogram, the machine, the run's time) is left out and named in the document's warnings.

use std::collections::BTreeMap;

use crate::export::drnbench::DRNBENCH_COLUMNS;
use crate::inputs::drnbench::{CsvError, DrnbenchRow, parse};
use crate::metrics::{StatusSet, StepMetrics};
use crate::result::provenance::Provenance;
use crate::result::{ResultDocument, SCHEMA, Settings, StepLoad, StepResult, SweepSettings};

/// What a drnbench CSV does not hold, said in every imported document.
pub const ABSENT: &str = "latency percentiles (p50, p99, ...), the latency histogram, the stdev, the split of \
                          successes' and failures' latency, bytes, connection counts, CPU, the machine and the time \
                          of the run";

/// Reads drnbench's CSV (`text`, from `name`; `started_at` is when the file was written, RFC 3339) into a
/// document; the error names the line and column of what does not read.
pub fn from_drnbench_csv(name: &str, text: &str, started_at: &str) -> Result<ResultDocument, String> {
    from_rows(name, parse(text).map_err(|e| csv_error(name, e))?, started_at)
}

/// Why `name` is not drnbench's CSV, as `history import` says it: `file:line:column: what`.
pub fn csv_error(name: &str, e: CsvError) -> String {
    match e {
        CsvError::Header(e) => format!("{name}: the header does not read as CSV: {e}"),
        // The header found is not quoted: a file that is not drnbench's may be anything (`import /etc/shadow`).
        CsvError::NotDrnbench(_) => {
            format!("{name}:1: not a drnbench CSV: its first columns must be {}", DRNBENCH_COLUMNS.join(","))
        }
        e @ CsvError::TooManyRows { line } => format!("{name}:{line}: {e}"),
        e @ CsvError::TooManyStatuses(_) => format!("{name}:1: {e}"),
        CsvError::Row { line, error } => format!("{name}:{line}: {error}"),
        CsvError::NotANumber { line, column, name: col, cell } => {
            format!("{name}:{line}:{}: {col} '{cell}' is not a number", column + 1)
        }
        CsvError::NotWhole { line, column, name: col, cell } => {
            format!("{name}:{line}:{}: {col} '{cell}' is not a whole number", column + 1)
        }
    }
}

/// drnbench's rows (read by `crate::inputs`) from `name` as a document; a header without rows is refused.
pub fn from_rows(name: &str, rows: Vec<DrnbenchRow>, started_at: &str) -> Result<ResultDocument, String> {
    let ok_status = StatusSet::default();
    let mut steps = Vec::new();
    for r in rows {
        let (clients, requests, qps) = (r.clients, r.requests, r.qps);
        // drnbench divides by the duration asked for: requests / rate gives it back (to the microsecond, so that
        // the rate written out again is the rate read).
        let duration = if qps > 0.0 { (requests as f64 / qps * 1e6).round() / 1e6 } else { 0.0 };
        let load = StepLoad { model: "closed".into(), connections: clients, threads: 0, rate: None };
        let secs = std::time::Duration::from_secs_f64(duration);
        let mut step = StepResult::from_metrics(&format!("c={clients}"), load, &StepMetrics::new(), Vec::new(), secs);
        let mut status = BTreeMap::new();
        for (code, share) in &r.status_percent {
            let count = (share / 100.0 * requests as f64).round() as u64;
            if count > 0 {
                status.insert(code.clone(), count);
            }
        }
        let ok: u64 = status
            .iter()
            .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c != 0 && ok_status.contains(c)))
            .map(|(_, n)| n)
            .sum();
        let errors = status.get("0").copied().unwrap_or(0);
        step.requests = requests;
        step.responses = requests.saturating_sub(errors);
        step.errors = errors;
        step.ok = ok.min(requests);
        step.failed = requests - step.ok;
        step.failed_statuses = status
            .iter()
            .filter(|(code, _)| code.parse::<u16>().is_ok_and(|c| c != 0 && !ok_status.contains(c)))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        step.status = status;
        step.duration_s = duration;
        step.throughput.requests_per_s = qps;
        step.throughput.ok_per_s = if duration > 0.0 { step.ok as f64 / duration } else { 0.0 };
        // drnbench times every request, failures and timeouts included: these are those times, in microseconds.
        step.latency.count = if r.mean_s.is_some() { requests } else { 0 };
        step.latency.min = r.min_s.map_or(0, |s| (s * 1e6).round() as u64);
        step.latency.max = r.max_s.map_or(0, |s| (s * 1e6).round() as u64);
        // To the nanosecond, as hakaru rounds its means: the file's figure comes back out unchanged.
        step.latency.mean = r.mean_s.map_or(0.0, |s| (s * 1e9).round() / 1e3);
        step.latency.percentiles.clear();
        step.failed_latency = None;
        step.histogram.data.clear();
        steps.push(step);
    }
    if steps.is_empty() {
        return Err(format!("{name}: a drnbench CSV header without any row: nothing to import"));
    }
    let step_duration = steps[0].duration_s;
    let settings = Settings {
        command: "sweep".into(),
        targets: vec![format!("drnbench-csv:{name}")],
        load_model: "closed".into(),
        connections: steps.iter().map(|s| s.load.connections).max().unwrap_or(0),
        keepalive: true,
        ok_status: "200-399".into(),
        sweep: Some(SweepSettings {
            kind: "clients".into(),
            values: steps.iter().map(|s| s.load.connections as f64).collect(),
            step_duration_s: step_duration,
            ..SweepSettings::default()
        }),
        ..Settings::default()
    };
    let unknown = || "unknown".to_string();
    let provenance = Provenance {
        hakaru_version: unknown(),
        hostname: unknown(),
        cpu_model: unknown(),
        cores: 0,
        kernel: unknown(),
        started_at: started_at.into(),
        command_line: Vec::new(),
        build: unknown(),
        seed: 0,
    };
    let warnings = vec![
        format!(
            "imported from the drnbench CSV '{name}': its latency figures (min, mean, max) are of every request, \
             failures and timeouts included, as drnbench times them; successes are the statuses 200-399"
        ),
        format!("absent from a drnbench CSV, so from this document: {ABSENT}"),
    ];
    Ok(ResultDocument {
        schema: SCHEMA.into(),
        provenance,
        settings,
        interrupted: false,
        steps,
        warnings,
        analysis: None,
        runs: None,
        thresholds: Vec::new(),
        missing_segments: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::Exporter;
    use crate::export::drnbench::DrnbenchCsv;

    const CSV: &str =
        "n_clients,total_n_requests,queries_per_second,min_elapsed_time,max_elapsed_time,average_elapsed_time,0,200,503
1,100,10.0,0.001,0.02,0.005,0,98.0,2.0
4,400,40.0,0.002,0.5,0.01,1.0,99.0,0
";

    #[test]
    fn a_drnbench_csv_becomes_a_sweep_with_its_figures_and_says_what_is_absent() {
        let doc = from_drnbench_csv("r.csv", CSV, "2026-11-23T00:00:00Z").unwrap();
        assert_eq!(doc.steps.len(), 2);
        let s = &doc.steps[1];
        assert_eq!((s.load.connections, s.requests, s.errors, s.ok, s.failed), (4, 400, 4, 396, 4));
        assert_eq!(s.duration_s, 10.0);
        assert_eq!((s.latency.min, s.latency.max, s.latency.mean), (2000, 500_000, 10_000.0));
        assert!(s.latency.percentiles.is_empty());
        assert_eq!(doc.steps[0].failed_statuses.get("503"), Some(&2));
        assert!(doc.warnings.iter().any(|w| w.contains("percentiles")), "{:?}", doc.warnings);
        // Written back as drnbench's CSV, the columns it had come out again.
        let back = DrnbenchCsv.render(&doc);
        assert!(back.starts_with("n_clients,total_n_requests,queries_per_second"), "{back}");
        assert!(back.contains("\n4,400,40.0,0.002,0.5,0.01,1.0,99.0,0\n"), "{back}");
        // The text summary says the percentiles are absent rather than printing zeros.
        let text = crate::export::text::Text.render(&doc);
        assert!(
            text.contains("percentiles  absent from this document") && !text.contains("p99          0us"),
            "{text}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_drnbench_csv_is_refused_with_its_line() {
        let e = from_drnbench_csv("x.csv", "a,b\n1,2\n", "t").unwrap_err();
        assert!(e.starts_with("x.csv:1: not a drnbench CSV"), "{e}");
        let e = from_drnbench_csv("y.csv", &CSV.replace("40.0", "forty"), "t").unwrap_err();
        assert!(e.starts_with("y.csv:3:3: queries_per_second 'forty'"), "{e}");
    }
}
