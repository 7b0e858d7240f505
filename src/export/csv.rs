//! One CSV row per step with the columns of loadtest's table (seed 002), then percentiles, then the successes and
//! failures, then the figures of each pattern group and request, then each `--threshold` (`--csv FILE`).

use super::{Exporter, breakdown_cells, breakdown_header, breakdown_keys, threshold_cells, threshold_header};
use crate::metrics::histogram::REPORTED_PERCENTILES;
use crate::result::ResultDocument;

pub struct Csv;

/// `p99.9` -> `p999LatencyMs`.
fn percentile_column(p: f64) -> String {
    format!("p{}LatencyMs", p.to_string().replace('.', ""))
}

impl Exporter for Csv {
    fn render(&self, doc: &ResultDocument) -> String {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> =
            ["maxRequests", "concurrency", "rps", "meanLatencyMs", "maxLatencyMs", "minLatencyMs"]
                .map(String::from)
                .to_vec();
        header.extend(REPORTED_PERCENTILES.iter().map(|&p| percentile_column(p)));
        header.extend(["errors", "durationSeconds", "ok", "failed"].map(String::from));
        let keys = breakdown_keys(doc);
        header.extend(breakdown_header(&keys, "ms"));
        header.extend(threshold_header(doc));
        w.write_record(&header).expect("writing to memory");
        for step in &doc.steps {
            let l = &step.latency;
            // No answer, no latency: an empty cell, not a 0 that reads like a measurement.
            let ms = |us: f64| {
                if l.count == 0 { String::new() } else { format!("{:.3}", us / 1000.0) }
            };
            let mut row = vec![
                step.requests.to_string(),
                step.load.connections.to_string(),
                format!("{:.1}", step.throughput.requests_per_s),
                ms(l.mean),
                ms(l.max as f64),
                ms(l.min as f64),
            ];
            row.extend(REPORTED_PERCENTILES.iter().map(|&p| ms(l.percentile(p) as f64)));
            row.extend([
                step.errors.to_string(),
                format!("{:.3}", step.duration_s),
                step.ok.to_string(),
                step.failed.to_string(),
            ]);
            row.extend(breakdown_cells(step, &keys, |us| format!("{:.3}", us / 1000.0)));
            row.extend(threshold_cells(doc));
            w.write_record(&row).expect("writing to memory");
        }
        String::from_utf8(w.into_inner().expect("flushing to memory")).expect("CSV of ASCII fields")
    }
}
