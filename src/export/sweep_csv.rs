//! hakaru's wide sweep CSV (`hakaru sweep --csv FILE`): drnbench's six columns first, with their meaning and
//! units, then hakaru's own (percentiles, failures, CPU, rates, probes, each pattern group's and request's figures),
//! then one column per status code holding the percentage of the step's requests (`0` = timeout). drnbench's
//! exact file is [`super::drnbench`].

use std::collections::BTreeSet;

use super::drnbench::{DRNBENCH_COLUMNS, every_request_times};
use super::{Exporter, breakdown_cells, breakdown_header, breakdown_keys, threshold_cells, threshold_header};
use crate::metrics::ErrorKind;
use crate::result::{ResultDocument, StepResult};

pub struct SweepCsv;

/// hakaru's columns after drnbench's (times in seconds, like drnbench's).
const HAKARU_COLUMNS: [&str; 10] = [
    "p50_elapsed_time",
    "p90_elapsed_time",
    "p99_elapsed_time",
    "p999_elapsed_time",
    "n_errors",
    "n_failed",
    "failed_percent",
    "client_cpu_percent",
    "server_cpu_percent",
    "achieved_rate",
];

/// Streamed answers' columns (`--events`), present when a step read events: times in seconds as the others.
const STREAM_COLUMNS: [&str; 6] =
    ["ttft_p50_s", "ttft_p99_s", "tpot_p99_s", "itl_p99_s", "output_tokens_per_s", "goodput_per_s"];

fn seconds(us: f64) -> String {
    // drnbench prints full float precision; microseconds need six decimals.
    format!("{:.6}", us / 1e6)
}

impl Exporter for SweepCsv {
    fn render(&self, doc: &ResultDocument) -> String {
        let rates = doc.steps.iter().any(|s| s.load.rate.is_some());
        let statuses: BTreeSet<u16> =
            doc.steps.iter().flat_map(|s| s.status.keys().filter_map(|k| k.parse::<u16>().ok())).collect();
        let probe_names: Vec<String> =
            doc.steps.first().map(|s| s.probes.iter().map(|p| p.name.clone()).collect()).unwrap_or_default();

        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> = DRNBENCH_COLUMNS.map(String::from).to_vec();
        header.extend(HAKARU_COLUMNS.map(String::from));
        if rates {
            header.push("target_rate".into());
        }
        let streamed = doc.steps.iter().any(|s| s.events.is_some());
        if streamed {
            header.extend(STREAM_COLUMNS.map(String::from));
        }
        for name in &probe_names {
            header.push(format!("probe_{name}"));
            header.push(format!("probe_{name}_delta"));
        }
        // One column per error kind seen in any step, in the engine's order.
        let kinds: Vec<&str> = ErrorKind::ALL
            .iter()
            .map(|k| k.key())
            .filter(|k| doc.steps.iter().any(|s| s.error_kinds.iter().any(|e| e.kind == *k)))
            .collect();
        header.extend(kinds.iter().map(|k| format!("errors_{k}")));
        let keys = breakdown_keys(doc);
        header.extend(breakdown_header(&keys, "s"));
        header.extend(statuses.iter().map(u16::to_string));
        header.extend(threshold_header(doc));
        // A run stopped by a signal marks the step it cut short (a column only then, so a whole run's file is as
        // it always was): its figures cover only the time until the signal.
        if doc.interrupted {
            header.push("partial".into());
        }
        w.write_record(&header).expect("writing to memory");
        let last = doc.steps.len().saturating_sub(1);
        for (i, step) in doc.steps.iter().enumerate() {
            let mut r = row(step, rates, streamed, &probe_names, &keys, &statuses);
            // The error kinds go before the breakdown and status columns.
            let at = r.len() - statuses.len() - breakdown_header(&keys, "s").len();
            let counts =
                kinds.iter().map(|k| step.error_kinds.iter().find(|e| e.kind == *k).map_or(0, |e| e.count).to_string());
            r.splice(at..at, counts);
            r.extend(threshold_cells(doc));
            if doc.interrupted {
                r.push(if i == last { "yes" } else { "" }.into());
            }
            w.write_record(r).expect("writing to memory");
        }
        String::from_utf8(w.into_inner().expect("flushing to memory")).expect("CSV of ASCII fields")
    }
}

fn row(
    step: &StepResult,
    rates: bool,
    streamed: bool,
    probe_names: &[String],
    keys: &[(String, String)],
    statuses: &BTreeSet<u16>,
) -> Vec<String> {
    let l = &step.latency;
    // No answer, no latency: empty cells rather than zeros that read like measurements.
    let time = |us: f64| if l.count > 0 { seconds(us) } else { String::new() };
    // drnbench times every request, failed ones included: its three columns cover successes and failures.
    let (min, max, mean) = every_request_times(step);
    let every = |us: Option<f64>| us.map(seconds).unwrap_or_default();
    let mut r = vec![
        step.load.connections.to_string(),
        step.requests.to_string(),
        // `{:?}` prints 100.0 rather than 100, as drnbench's Ruby floats do.
        format!("{:?}", (step.throughput.requests_per_s * 1000.0).round() / 1000.0),
        every(min),
        every(max),
        every(mean),
        time(l.percentile(50.0) as f64),
        time(l.percentile(90.0) as f64),
        time(l.percentile(99.0) as f64),
        time(l.percentile(99.9) as f64),
        step.errors.to_string(),
        step.failed.to_string(),
        format!("{:.2}", step.failed_percent()),
        format!("{:.1}", step.generator.cpu_percent),
        step.server.as_ref().map(|s| format!("{:.1}", s.cpu_percent_mean)).unwrap_or_default(),
        step.schedule.as_ref().map(|s| format!("{:.1}", s.achieved_rate)).unwrap_or_default(),
    ];
    if rates {
        r.push(step.load.rate.map(|x| format!("{x}")).unwrap_or_default());
    }
    if streamed {
        r.extend(stream_cells(step));
    }
    for name in probe_names {
        let reading = step.probes.iter().find(|p| &p.name == name);
        r.push(reading.and_then(|p| p.after.as_ref()).map(value_cell).unwrap_or_default());
        r.push(reading.and_then(|p| p.delta).map(|d| format!("{d}")).unwrap_or_default());
    }
    r.extend(breakdown_cells(step, keys, seconds));
    let total = step.requests.max(1) as f64;
    for code in statuses {
        let n = step.status.get(&code.to_string()).copied().unwrap_or(0);
        r.push(format!("{:?}", (n as f64 * 100.0 / total * 1000.0).round() / 1000.0));
    }
    r
}

/// A step's [`STREAM_COLUMNS`]: empty cells where it has no such figure.
fn stream_cells(step: &StepResult) -> Vec<String> {
    let e = step.events.as_ref();
    let t = e.and_then(|e| e.tokens.as_ref());
    let at = |p: Option<&crate::result::phases::Phase>, q: f64| {
        p.map(|p| seconds(p.latency.percentile(q) as f64)).unwrap_or_default()
    };
    let first = e.and_then(|e| e.first_event.as_ref());
    vec![
        at(first, 50.0),
        at(first, 99.0),
        at(t.and_then(|t| t.tpot.as_ref()), 99.0),
        at(e.and_then(|e| e.gaps.as_ref()), 99.0),
        t.map(|t| format!("{:.1}", t.tokens_per_s)).unwrap_or_default(),
        e.and_then(|e| e.goodput.as_ref()).map(|g| format!("{:.1}", g.per_s)).unwrap_or_default(),
    ]
}

fn value_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
