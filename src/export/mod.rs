//! Exporters: each turns the result document into one format. They read the document and nothing else
//! ([`table`] prints a sweep's lines as its steps end).

pub mod csv;
pub mod drnbench;
mod files;
pub mod hdrlog;
pub mod json;
pub mod sweep_csv;
pub mod table;
pub mod text;

use crate::result::{ResultDocument, StepResult};

/// The breakdown rows of a document's steps (pattern groups and requests), in order of first appearance: the
/// CSV exporters give each its own columns.
pub fn breakdown_keys(doc: &ResultDocument) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in doc.steps.iter().flat_map(|s| &s.breakdown) {
        if !keys.iter().any(|(k, n)| *k == r.kind && *n == r.name) {
            keys.push((r.kind.clone(), r.name.clone()));
        }
    }
    keys
}

/// Column names for the `--threshold` gates: `threshold:TEXT` (pass or fail) and `threshold:TEXT:measured`.
pub fn threshold_header(doc: &ResultDocument) -> Vec<String> {
    doc.thresholds
        .iter()
        .flat_map(|t| [format!("threshold:{}", t.threshold), format!("threshold:{}:measured", t.threshold)])
        .collect()
}

/// The cells under [`threshold_header`]: the same on every row, since a gate judges the whole document (every
/// step merged); the measured value in the gate's unit (us, percent, per second), empty when nothing was.
pub fn threshold_cells(doc: &ResultDocument) -> Vec<String> {
    doc.thresholds
        .iter()
        .flat_map(|t| {
            [if t.pass { "pass" } else { "fail" }.to_string(), t.measured.map_or(String::new(), |m| format!("{m:.3}"))]
        })
        .collect()
}

/// Column names for the breakdown rows: `group:NAME:ok_per_s` and the like, times in `unit`.
pub fn breakdown_header(keys: &[(String, String)], unit: &str) -> Vec<String> {
    keys.iter()
        .flat_map(|(kind, name)| {
            ["requests", "ok", "failed", "ok_per_s"]
                .iter()
                .map(|c| c.to_string())
                .chain(["mean", "p50", "p99"].iter().map(|c| format!("{c}_{unit}")))
                .map(move |c| format!("{kind}:{name}:{c}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The cells of one step for those columns; `time` formats microseconds (empty cells where a row has no
/// successes, or the step lacks the row).
pub fn breakdown_cells(step: &StepResult, keys: &[(String, String)], time: impl Fn(f64) -> String) -> Vec<String> {
    let mut cells = Vec::new();
    for (kind, name) in keys {
        match step.breakdown.iter().find(|r| r.kind == *kind && r.name == *name) {
            Some(r) => {
                let t = |us: f64| if r.ok == 0 { String::new() } else { time(us) };
                cells.extend([
                    r.requests.to_string(),
                    r.ok.to_string(),
                    r.failed.to_string(),
                    format!("{:.1}", r.ok_per_s),
                    t(r.mean_us),
                    t(r.p50_us as f64),
                    t(r.p99_us as f64),
                ]);
            }
            None => cells.extend(std::iter::repeat_n(String::new(), 7)),
        }
    }
    cells
}

/// One output format.
pub trait Exporter {
    fn render(&self, doc: &ResultDocument) -> String;
}

pub use files::{
    Destination, OutputId, check_output, destination, is_stdout, output_id, resolve_links, write_atomically,
    write_bytes_atomically, write_shareable_atomically,
};
